// `sparserl data split` for benchmark splits (split file version 2, splits.hpp): `split FILE`
// reports on a split file of either version (its sources, and per part and regime how many
// matrices and families it holds and how many are present on this machine), and `split
// --benchmark` makes a version-2 split from the real matrices of shared indexes, a catalogue of
// the SuiteSparse collection and (once large_regime.hpp lands) the generated large regime.
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "data_command.hpp"
#include "sparserl/datasets/large_regime.hpp"
#include "sparserl/datasets/matrix_market.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/datasets/suitesparse_index.hpp"
#include "sparserl/experiments/json.hpp"
#include "sparserl/experiments/progress.hpp"

namespace sparserl::tools::data {
namespace {

namespace fs = std::filesystem;
using experiments::Json;

// "0.6,0.2,0.2": the shortest decimals, as the split file writes them.
std::string ratios_text(const std::array<double, 3>& r) {
  std::string out;
  for (double v : r) {
    char buf[32];
    out += (out.empty() ? "" : ",") + std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  }
  return out;
}

std::string pad(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string right(const std::string& text, std::size_t width) {
  return text.size() < width ? std::string(width - text.size(), ' ') + text : text;
}

// ---- data split FILE
// ----------------------------------------------------------------------------

// Matrices, families and present matrices of one slice of a part.
struct Tally {
  std::size_t matrices = 0, present = 0;
  std::set<std::string> families;
  void add(const ds::SplitEntry& e, bool here) {
    ++matrices;
    present += here ? 1 : 0;
    families.insert(e.family);
  }
};

// Slots of PartReport::regimes: the three regimes, then "?" (a version-1 entry has none).
constexpr std::size_t kUnknownRegime = 3;
std::string regime_label(std::size_t slot) {
  return slot == kUnknownRegime ? "?" : std::string(ds::to_string(ds::kRegimes[slot]));
}

struct PartReport {
  ds::SplitPart part = ds::SplitPart::train;
  Tally all;
  std::array<Tally, 4> regimes;
  std::map<std::string, std::size_t> large_families;
};

std::vector<PartReport> tally_split(const ds::Split& split, const ds::MatrixStore& store) {
  std::vector<PartReport> out;
  for (ds::SplitPart part : ds::kSplitParts) {
    PartReport r;
    r.part = part;
    for (const ds::SplitEntry& e : split.part_entries(part)) {
      const bool here = present(store, e);
      r.all.add(e, here);
      const std::size_t slot = e.regime ? static_cast<std::size_t>(*e.regime) : kUnknownRegime;
      r.regimes[slot].add(e, here);
      if (e.regime == ds::Regime::large) ++r.large_families[e.family];
    }
    out.push_back(std::move(r));
  }
  return out;
}

// The regime slots a report shows: the three regimes (version 2) or "?" (version 1).
std::vector<std::size_t> regime_slots(const ds::Split& split) {
  if (split.version == ds::Split::kFormatVersion) return {kUnknownRegime};
  return {0, 1, 2};
}

// Families by count, largest first, then by name.
std::vector<std::pair<std::string, std::size_t>> by_count(
    const std::map<std::string, std::size_t>& families) {
  std::vector<std::pair<std::string, std::size_t>> out(families.begin(), families.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

// {"KEY": VALUE, "matrices": .., "families": .., "present": ..}
Json tally_json(std::string_view key, Json value, const Tally& t) {
  Json j = Json::object();
  j[key] = std::move(value);
  j["matrices"] = t.matrices;
  j["families"] = t.families.size();
  j["present"] = t.present;
  return j;
}

std::string report_json(const fs::path& file, const ds::Split& split,
                        const std::vector<PartReport>& parts, const ds::MatrixStore& store) {
  Json j = Json::object();
  j["file"] = file.string();
  j["split"] = split.name;
  j["version"] = split.version;
  j["digest"] = split.digest();
  j["seed"] = split.seed;
  j["ratios"] = Json::array({split.ratios[0], split.ratios[1], split.ratios[2]});
  if (split.version == ds::Split::kFormatVersion) {
    Json index = Json::object();
    index["file"] = split.index_file;
    index["matrices"] = split.index_size;
    index["digest"] = split.index_digest;
    j["index"] = index;
  }
  Json sources = Json::array();
  for (const ds::SplitSource& s : split.sources) {
    Json src = Json::object();
    src["source"] = ds::to_string(s.source);
    src["name"] = s.name;
    src["matrices"] = s.size;
    src["digest"] = s.digest;
    sources.push_back(src);
  }
  j["sources"] = sources;
  j["data_dir"] = store.data_dir().string();
  Json indexes = Json::array();
  for (const ds::SuiteSparseIndex& index : store.indexes()) indexes.push_back(index.source());
  j["indexes"] = indexes;
  Json part_list = Json::array();
  Tally total;
  for (const PartReport& r : parts) {
    Json p = tally_json("part", ds::to_string(r.part), r.all);
    Json regimes = Json::array();
    for (std::size_t slot : regime_slots(split)) {
      // A version-1 entry has no regime: null.
      regimes.push_back(tally_json(
          "regime", slot == kUnknownRegime ? Json() : Json(regime_label(slot)), r.regimes[slot]));
    }
    p["regimes"] = regimes;
    Json large = Json::array();
    for (const auto& [family, n] : by_count(r.large_families)) {
      Json f = Json::object();
      f["family"] = family;
      f["matrices"] = n;
      large.push_back(f);
    }
    p["large_families"] = large;
    part_list.push_back(p);
    total.matrices += r.all.matrices;
    total.present += r.all.present;
    total.families.insert(r.all.families.begin(), r.all.families.end());
  }
  j["parts"] = part_list;
  j["total"] = tally_json("part", "all", total);
  return experiments::dump_json(j, 2) + "\n";
}

std::string report_text(const fs::path& file, const ds::Split& split,
                        const std::vector<PartReport>& parts, const ds::MatrixStore& store) {
  std::ostringstream out;
  out << "split    " << split.name << " (" << file.string() << ")\n";
  out << "version  " << split.version
      << (split.version == ds::Split::kBenchmarkFormatVersion ? " (benchmark split)" : "") << "\n";
  out << "digest   " << split.digest() << "\n";
  out << "seed     " << split.seed << ", ratios " << ratios_text(split.ratios) << "\n";
  if (split.version == ds::Split::kFormatVersion) {
    out << "index    " << split.index_file << ": " << split.index_size << " matrices, digest "
        << split.index_digest << "\n";
  }
  for (std::size_t i = 0; i < split.sources.size(); ++i) {
    const ds::SplitSource& s = split.sources[i];
    out << (i == 0 ? "sources  " : "         ") << pad(std::string(ds::to_string(s.source)), 10)
        << pad(s.name, 32) << right(std::to_string(s.size), 7) << "  " << s.digest << "\n";
  }
  out << "present  files the matrix store finds (not loaded) in " << store.data_dir().string();
  for (const ds::SuiteSparseIndex& index : store.indexes()) out << ", " << index.source();
  out << "; gen-v1 matrices are generated here\n";
  if (split.version == ds::Split::kFormatVersion) {
    out << "regimes  not recorded in version-1 files (regime ?)\n";
  }
  out << "\npart   regime   matrices  families   present\n";
  auto row = [&out](const std::string& part, const std::string& regime, const Tally& t,
                    std::size_t families) {
    out << pad(part, 7) << pad(regime, 7) << right(std::to_string(t.matrices), 10)
        << right(std::to_string(families), 10) << right(std::to_string(t.present), 10) << "\n";
  };
  Tally total;
  for (const PartReport& r : parts) {
    for (std::size_t slot : regime_slots(split)) {
      row(std::string(ds::to_string(r.part)), regime_label(slot), r.regimes[slot],
          r.regimes[slot].families.size());
    }
    if (split.version == ds::Split::kBenchmarkFormatVersion) {
      row(std::string(ds::to_string(r.part)), "all", r.all, r.all.families.size());
    }
    total.matrices += r.all.matrices;
    total.present += r.all.present;
    total.families.insert(r.all.families.begin(), r.all.families.end());
  }
  row("total", "all", total, total.families.size());
  if (split.version == ds::Split::kFormatVersion) return out.str();
  out << "\nlarge regime, matrices per family:\n";
  for (const PartReport& r : parts) {
    std::string line = "  " + pad(std::string(ds::to_string(r.part)), 6);
    if (r.large_families.empty()) line += "(none)";
    bool first = true;
    for (const auto& [family, n] : by_count(r.large_families)) {
      const std::string item = family + " " + std::to_string(n);
      if (!first && line.size() + item.size() + 2 > 100) {  // wrap under the first family
        out << line << ",\n";
        line = std::string(8, ' ');
      } else if (!first) {
        line += ", ";
      }
      line += item;
      first = false;
    }
    out << line << "\n";
  }
  return out.str();
}

}  // namespace

int run_split_report(const DataArgs& args) {
  const fs::path file = *args.input;
  const ds::Split split = ds::read_split(file);
  const ds::MatrixStore store(data_dir(args), store_options(args));
  const std::vector<PartReport> parts = tally_split(split, store);
  std::cout << (args.json ? report_json(file, split, parts, store)
                          : report_text(file, split, parts, store));
  return 0;
}

namespace {

// ---- data split --benchmark
// ---------------------------------------------------------------------

// The candidates of a benchmark split and the `# source` lines that describe where they came from.
struct BenchmarkInputs {
  std::vector<ds::SplitCandidate> candidates;
  std::vector<ds::SplitSource> sources;
  std::vector<ds::SuiteSparseIndex> shared_indexes;
  std::set<std::string> shared_keys;    // GROUP/NAME of every shared matrix
  std::size_t catalogue_as_shared = 0;  // catalogue entries that are shared matrices too
  std::vector<std::string> notes;       // printed with the summary
};

// "matrices/INDEX.csv": the index's folder and file name, so two INDEX.csv files are told apart.
// White space becomes '_' (a split file's header line is split at white space).
std::string source_name(const fs::path& csv) {
  fs::path folder = csv.parent_path();
  if (folder.empty() || folder.filename().empty() || folder.filename() == "." ||
      folder.filename() == "..") {
    folder = fs::weakly_canonical(fs::absolute(csv)).parent_path();
  }
  std::string name = folder.filename().string() + "/" + csv.filename().string();
  for (char& c : name) {
    if (c == ' ' || c == '\t') c = '_';
  }
  return name;
}

// The matrix of an index entry as the store loads it from the index (an archive named NAME.tar.gz
// is read at its member NAME/NAME.mtx); its nnz is counted after symmetric expansion.
std::int64_t loaded_nnz(const ds::SuiteSparseIndex& index, const ds::IndexEntry& e) {
  const fs::path file = index.file_path(e);
  ds::ReadOptions read;
  if (file.filename() == e.name + ".tar.gz") read.archive_member = e.name + "/" + e.name + ".mtx";
  return ds::read_matrix_market(file, read).matrix.nnz();
}

// Reads each --index (not yet its matrices): the source lines and the shared keys. A GROUP/NAME
// listed by two indexes is an error naming both lines.
void read_shared_indexes(const std::vector<std::string>& paths, BenchmarkInputs& in) {
  std::map<std::string, std::string> listed_at;  // GROUP/NAME -> "INDEX.csv:LINE"
  for (const std::string& path : paths) {
    const ds::SuiteSparseIndex& index =
        in.shared_indexes.emplace_back(ds::SuiteSparseIndex::read(ds::index_csv_path(path)));
    for (const ds::IndexEntry& e : index.entries()) {
      const std::string at = index.source() + ":" + std::to_string(e.line);
      if (auto [it, fresh] = listed_at.emplace(e.key(), at); !fresh) {
        throw std::runtime_error(at + ": " + e.key() + " is also listed at " + it->second +
                                 " (a shared matrix may come from one index only)");
      }
      in.shared_keys.insert(e.key());
    }
    in.sources.push_back({ds::MatrixSource::shared, source_name(fs::path(index.source())),
                          index.size(), index.digest()});
  }
}

// Every matrix of the shared indexes, loaded for its nonzeros (source shared).
void load_shared(BenchmarkInputs& in) {
  experiments::ProgressOptions options;
  options.unit = "matrices";
  const auto total = static_cast<std::int64_t>(in.shared_keys.size());
  experiments::Progress progress("reading shared matrices", total, std::cerr, options);
  std::int64_t nonzeros = 0;
  for (const ds::SuiteSparseIndex& index : in.shared_indexes) {
    for (const ds::IndexEntry& e : index.entries()) {
      ds::SplitCandidate c;
      c.uri = e.uri();
      c.family = e.group;
      c.nnz = loaded_nnz(index, e);
      c.source = ds::MatrixSource::shared;
      nonzeros += c.nnz;
      in.candidates.push_back(std::move(c));
      progress.advance(1, e.key());
    }
  }
  progress.finish();
  std::cerr << "read " << total << " shared matrices from " << in.shared_indexes.size() << " index"
            << (in.shared_indexes.size() == 1 ? "" : "es") << ": " << nonzeros << " nonzeros\n";
}

// The catalogue CSV (id,group,name,rows,cols,nnz), read with SuiteSparseIndex's reader; its `nnz`
// column (the full matrix's nonzeros, as the collection counts them) lands in stored_entries and is
// taken as the entry's nnz. A header without an `nnz` column is refused: a `stored_entries` column
// would count a symmetric matrix's triangle only.
void add_catalogue(const fs::path& csv, BenchmarkInputs& in) {
  const ds::SuiteSparseIndex catalogue = ds::SuiteSparseIndex::read(csv);
  {
    std::ifstream header_in(csv);
    std::string header;
    std::getline(header_in, header);
    std::string lower;
    for (char c : header) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::set<std::string> columns;
    std::istringstream fields(lower);
    for (std::string f; std::getline(fields, f, ',');) {
      f.erase(std::remove_if(f.begin(), f.end(),
                             [](char c) { return c == '"' || c == ' ' || c == '\r'; }),
              f.end());
      columns.insert(f);
    }
    if (columns.count("nnz") == 0) {
      throw std::runtime_error(csv.string() +
                               ":1: a catalogue needs an 'nnz' column (the full "
                               "matrix's nonzeros), e.g. 'id,group,name,rows,cols,nnz'");
    }
  }
  for (const ds::IndexEntry& e : catalogue.entries()) {
    if (!e.stored_entries) {
      throw std::runtime_error(catalogue.source() + ":" + std::to_string(e.line) + ": " + e.key() +
                               " has no nnz");
    }
    ds::SplitCandidate c;
    c.uri = e.uri();
    c.family = e.group;
    c.nnz = *e.stored_entries;
    c.source = ds::MatrixSource::catalogue;
    in.catalogue_as_shared += in.shared_keys.count(e.key());
    in.candidates.push_back(std::move(c));
  }
  in.sources.push_back(
      {ds::MatrixSource::catalogue, csv.filename().string(), catalogue.size(), catalogue.digest()});
  std::cerr << "read the catalogue " << catalogue.source() << ": " << catalogue.size()
            << " matrices, " << in.catalogue_as_shared << " of them shared ones\n";
}

// The generated large regime: its candidates (each with its part, family and gen-v1 URI) and its
// source line.
struct GeneratedRegime {
  std::vector<ds::SplitCandidate> candidates;
  ds::SplitSource source;
};

// The generated large regime (large_regime.hpp): its matrices with their part and pinned nnz, and
// the source line {generated, large-v1, size, FNV-1a of the sorted URIs}.
std::optional<GeneratedRegime> generated_regime() {
  GeneratedRegime g;
  std::vector<std::string> uris;
  for (const ds::LargeRegimeMatrix& m : ds::large_regime_v1()) {
    ds::SplitCandidate c;
    c.uri = m.uri;
    c.family = m.family;
    c.nnz = m.nnz;
    c.source = ds::MatrixSource::generated;
    c.part = m.part;
    g.candidates.push_back(std::move(c));
    uris.push_back(m.uri);
  }
  g.source = {ds::MatrixSource::generated, "large-v1", uris.size(), ds::uri_set_digest(uris)};
  return g;
}

void add_generated(BenchmarkInputs& in) {
  std::optional<GeneratedRegime> generated = generated_regime();
  if (!generated) {
    in.notes.push_back(
        "generated: none - the generated large regime (large_regime.hpp) is not in this build yet; "
        "this split holds the shared and catalogue matrices only");
    return;
  }
  for (ds::SplitCandidate& c : generated->candidates) in.candidates.push_back(std::move(c));
  in.sources.push_back(generated->source);
}

std::string benchmark_summary(const fs::path& out_file, const ds::Split& split,
                              const BenchmarkInputs& in) {
  std::ostringstream out;
  out << "wrote " << out_file.string() << ": benchmark split " << split.name << " (version "
      << split.version << ", digest " << split.digest() << ", seed " << split.seed << ", ratios "
      << ratios_text(split.ratios) << ") of " << split.size() << " matrices\n";
  out << "sources:\n";
  for (const ds::SplitSource& s : split.sources) {
    out << "  " << pad(std::string(ds::to_string(s.source)), 10) << pad(s.name, 32)
        << right(std::to_string(s.size), 7) << "  " << s.digest << "\n";
  }
  if (in.catalogue_as_shared > 0) {
    out << "  (" << in.catalogue_as_shared
        << " catalogue matrices are shared ones: listed once, as shared)\n";
  }
  for (const std::string& note : in.notes) out << note << "\n";
  out << "\npart     matrices    groups    shared catalogue generated     small    medium     "
         "large\n";
  std::array<std::size_t, 7> total{};
  std::set<std::string> all_groups;
  for (ds::SplitPart part : ds::kSplitParts) {
    std::array<std::size_t, 7> n{};  // matrices, shared, catalogue, generated, small, medium, large
    std::set<std::string> groups;
    for (const ds::SplitEntry& e : split.part_entries(part)) {
      ++n[0];
      ++n[1 + static_cast<std::size_t>(e.source)];
      ++n[4 + static_cast<std::size_t>(*e.regime)];
      if (e.source != ds::MatrixSource::generated) groups.insert(e.family);
    }
    out << pad(std::string(ds::to_string(part)), 5) << right(std::to_string(n[0]), 12)
        << right(std::to_string(groups.size()), 10);
    for (std::size_t i = 1; i < n.size(); ++i) out << right(std::to_string(n[i]), 10);
    out << "\n";
    for (std::size_t i = 0; i < n.size(); ++i) total[i] += n[i];
    all_groups.insert(groups.begin(), groups.end());
  }
  out << pad("all", 5) << right(std::to_string(total[0]), 12)
      << right(std::to_string(all_groups.size()), 10);
  for (std::size_t i = 1; i < total.size(); ++i) out << right(std::to_string(total[i]), 10);
  out << "\n";
  return out.str();
}

}  // namespace

int run_benchmark_split(const DataArgs& args) {
  const ds::SplitSpec spec = split_spec(args);
  if (!args.out) throw UsageError("--out is required");
  const fs::path out = *args.out;
  const std::vector<std::string>& indexes = args.where.indexes;
  if (indexes.empty()) throw UsageError("split --benchmark needs at least one --index");
  std::error_code ec;
  if (fs::exists(out, ec)) {  // before minutes of reading; write_split checks again atomically
    throw ds::SplitError(out.string() +
                         ": already exists; a split file is never edited in place "
                         "(write a new split under a new name)");
  }
  BenchmarkInputs in;
  // The cheap checks of every input first, then the minutes of reading.
  read_shared_indexes(indexes, in);
  if (args.catalogue) add_catalogue(*args.catalogue, in);
  load_shared(in);
  add_generated(in);
  std::vector<ds::SplitSource> sources = in.sources;
  const ds::Split split = ds::make_benchmark_split(spec, in.candidates, std::move(sources));
  ds::write_split(out, split);
  std::cout << benchmark_summary(out, split, in);
  return 0;
}

}  // namespace sparserl::tools::data
