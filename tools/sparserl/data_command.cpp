// `sparserl data`: the datasets library on the command line. Inspect a matrix (info), convert
// between Matrix Market files (convert), write a generated matrix (generate), make a versioned
// split or report on one (split), download collection archives (fetch), and print one table line
// per matrix of a folder or index (summary). Inputs are files or task URIs; URIs are resolved
// through a MatrixStore over --data-dir and the --index folders. This file holds the usage text,
// the dispatch and the shared helpers (data_command.hpp); the benchmark split and the split report
// are in data_split_command.cpp, fetching in data_fetch_command.cpp.
#include "data_command.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "options.hpp"
#include "sparserl/datasets/features.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/datasets/matrix_market.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/datasets/suitesparse_index.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/experiments/json.hpp"

namespace sparserl::tools::data {

namespace fs = std::filesystem;

// ---- shared helpers (data_command.hpp)
// ------------------------------------------------------------------

ds::MatrixUri parse_uri_argument(const std::string& text) {
  try {
    return ds::MatrixUri::parse(text);
  } catch (const ds::InvalidUri& e) {
    throw UsageError(e.what());
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

ds::StoreOptions store_options(const DataArgs& args) {
  ds::StoreOptions options;
  options.indexes = args.where.index_paths();
  options.read = ds::ReadOptions();
  options.read.allow_non_finite = args.allow_non_finite;
  options.read.archive_member = args.member;
  return options;
}

fs::path data_dir(const DataArgs& args) { return args.where.data_dir_or_default(); }

ds::SplitSpec split_spec(const DataArgs& args) {
  ds::SplitSpec spec;
  if (args.name.empty()) throw UsageError("--name is required");
  if (!args.seed) throw UsageError("--seed is required");
  spec.name = args.name;
  spec.seed = *args.seed;
  try {
    spec.ratios = ds::parse_ratios(args.ratios);
  } catch (const ds::SplitError& e) {
    throw UsageError(std::string("--ratios: ") + e.what());
  }
  return spec;
}

bool present(const ds::MatrixStore& store, const ds::SplitEntry& entry) {
  const ds::MatrixUri uri = ds::MatrixUri::parse(entry.uri);
  if (uri.scheme != ds::MatrixUri::Scheme::generated) return store.find(uri).has_value();
  // TODO(generators.hpp): ask the generator which collection matrices it loads
  // (loaded_matrices(spec), coming with the kron family) instead of reading its keys here.
  const auto group = uri.params.find("group");
  const auto name = uri.params.find("name");
  if (group == uri.params.end() || name == uri.params.end()) return true;
  ds::MatrixUri base;
  try {
    base = ds::MatrixUri::parse("suitesparse-v1/" + group->second + "/" + name->second);
  } catch (const ds::InvalidUri&) {
    return false;  // no collection matrix has that name
  }
  return store.find(base).has_value();
}

namespace {

// ---- small output helpers
// -----------------------------------------------------------------------------

std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  return {buf, std::to_chars(buf, buf + sizeof buf, v).ptr};
}

bool looks_like_uri(std::string_view text) {
  return text.rfind("suitesparse-", 0) == 0 || text.rfind("gen-", 0) == 0 ||
         text.rfind("file:", 0) == 0;
}

// ---- inputs
// ----------------------------------------------------------------------------------------

struct Input {
  std::string label;               // the argument as given
  std::optional<std::string> uri;  // canonical, when given a URI
  std::shared_ptr<const ds::SparseMatrix> matrix;
  fs::path file;
  std::optional<ds::ReadReport> report;
  double read_seconds = 0.0;
};

Input load_input(const std::string& what, const DataArgs& args) {
  Input in;
  in.label = what;
  const auto start = std::chrono::steady_clock::now();
  if (looks_like_uri(what)) {
    const ds::MatrixUri uri = parse_uri_argument(what);
    ds::MatrixStore store(data_dir(args), store_options(args));
    ds::LoadedMatrix loaded = store.load_with_report(uri);
    in.uri = loaded.uri;
    in.matrix = std::move(loaded.matrix);
    in.file = loaded.file;
    in.report = std::move(loaded.report);
  } else {
    ds::MatrixMarketFile file = ds::read_matrix_market(what, store_options(args).read);
    in.matrix = std::make_shared<const ds::SparseMatrix>(std::move(file.matrix));
    in.file = what;
    in.report = std::move(file.report);
  }
  in.read_seconds = seconds_since(start);
  return in;
}

// ---- info
// ------------------------------------------------------------------------------------------

int run_info(const DataArgs& args) {
  const Input in = load_input(*args.input, args);
  const ds::SparseMatrix& a = *in.matrix;
  const ds::MatrixFeatures features = ds::compute_features(a);
  const auto names = ds::feature_names();
  const auto values = features.to_vector();
  if (args.json) {
    std::ostringstream out;
    out << "{\n  \"input\": " << experiments::json_quote(in.label) << ",\n";
    if (in.uri) out << "  \"uri\": " << experiments::json_quote(*in.uri) << ",\n";
    if (!in.file.empty()) {
      out << "  \"file\": " << experiments::json_quote(in.file.string()) << ",\n";
    }
    out << "  \"rows\": " << a.rows() << ",\n  \"cols\": " << a.cols()
        << ",\n  \"nnz\": " << a.nnz() << ",\n  \"digest\": " << experiments::json_quote(a.digest())
        << ",\n  \"read_seconds\": " << number(in.read_seconds) << ",\n";
    if (in.report) {
      const ds::ReadReport& r = *in.report;
      out << "  \"report\": {\"source\": " << experiments::json_quote(r.source)
          << ", \"format\": " << experiments::json_quote(ds::to_string(r.format))
          << ", \"field\": " << experiments::json_quote(ds::to_string(r.field))
          << ", \"symmetry\": " << experiments::json_quote(ds::to_string(r.symmetry))
          << ", \"stored_entries\": " << r.stored_entries
          << ", \"expanded_entries\": " << r.expanded_entries
          << ", \"duplicates_summed\": " << r.duplicates_summed
          << ", \"explicit_zeros\": " << r.explicit_zeros << ", \"lines\": " << r.lines
          << ", \"bytes\": " << r.bytes << "},\n";
    }
    out << "  \"features\": {";
    for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) {
      out << (i ? ", " : "") << experiments::json_quote(names[i]) << ": " << number(values[i]);
    }
    out << "}\n}\n";
    std::cout << out.str();
    return 0;
  }
  std::ostringstream out;
  auto row = [&out](std::string_view key, const std::string& value) {
    out << key;
    for (std::size_t pad = key.size(); pad < 20; ++pad) out << ' ';
    out << value << "\n";
  };
  row("input", in.label);
  if (in.uri) row("uri", *in.uri);
  if (!in.file.empty() && in.file.string() != in.label) row("file", in.file.string());
  row("rows", std::to_string(a.rows()));
  row("cols", std::to_string(a.cols()));
  row("nnz", std::to_string(a.nnz()));
  row("digest", a.digest());
  row("read", fixed(in.read_seconds * 1e3, 2) + " ms");
  if (in.report) {
    const ds::ReadReport& r = *in.report;
    row("source", r.source);
    row("banner", std::string(ds::to_string(r.format)) + " " + std::string(ds::to_string(r.field)) +
                      " " + std::string(ds::to_string(r.symmetry)));
    row("stored entries", std::to_string(r.stored_entries));
    row("expanded entries", std::to_string(r.expanded_entries));
    row("duplicates summed", std::to_string(r.duplicates_summed));
    row("explicit zeros", std::to_string(r.explicit_zeros));
    row("text", std::to_string(r.lines) + " lines, " + std::to_string(r.bytes) + " bytes");
  }
  out << "features:\n";
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) {
    const double v = values[i];
    const bool integral = std::isfinite(v) && std::floor(v) == v && std::fabs(v) < 1e15;
    row("  " + names[i], integral ? std::to_string(static_cast<long long>(v)) : number(v));
  }
  std::cout << out.str();
  return 0;
}

// ---- convert and generate
// --------------------------------------------------------------------------

void write_output(const fs::path& out, const ds::SparseMatrix& a, const ds::WriteOptions& options) {
  const std::string name = out.filename().string();
  if (name.ends_with(".tar.gz") || name.ends_with(".tgz")) {
    ds::write_matrix_market_archive(out, a, options);
  } else {
    ds::write_matrix_market(out, a, options);
  }
}

int run_convert(const DataArgs& args) {
  std::optional<ds::MmField> field;
  if (args.field == "real") field = ds::MmField::real;
  if (args.field == "integer") field = ds::MmField::integer;
  if (args.field == "pattern") field = ds::MmField::pattern;
  const Input in = load_input(*args.input, args);
  const fs::path out = args.output;
  ds::WriteOptions options;
  options.field = field.value_or(in.report ? in.report->field : ds::MmField::real);
  if (args.symmetric) {
    options.symmetric = true;
  } else if (!args.general && in.report) {
    const auto sym = in.report->symmetry;
    options.symmetric = (sym == ds::MmSymmetry::symmetric || sym == ds::MmSymmetry::hermitian) &&
                        ds::is_symmetric(*in.matrix);
  }
  if (in.report) options.comments = in.report->comments;
  options.comments.push_back("converted from " + in.label + " by sparserl data convert");
  for (const std::string& c : args.comments) options.comments.push_back(c);
  try {
    write_output(out, *in.matrix, options);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(out.string() + ": " + e.what());
  }
  std::cout << "wrote " << out.string() << ": " << in.matrix->rows() << " x " << in.matrix->cols()
            << ", " << in.matrix->nnz() << " entries (" << ds::to_string(options.field)
            << (options.symmetric ? " symmetric" : " general") << ")\n";
  return 0;
}

int run_generate(const DataArgs& args) {
  const ds::MatrixUri uri = parse_uri_argument(*args.input);
  if (uri.scheme != ds::MatrixUri::Scheme::generated) {
    throw UsageError("generate takes a gen-v1 URI; for '" + uri.str() +
                     "' use `sparserl data convert`");
  }
  const fs::path out = *args.out;
  const auto start = std::chrono::steady_clock::now();
  // The store is the loader of the real matrix a generator builds on (kron).
  ds::MatrixStore store(data_dir(args), store_options(args));
  const ds::MatrixLoader loader = [&store](const std::string& base) { return store.load(base); };
  const ds::SparseMatrix a = ds::generate(uri, loader);
  const double took = seconds_since(start);
  ds::WriteOptions options;
  options.comments = {"generated by sparserl data generate", "uri: " + uri.str(),
                      "digest: " + a.digest()};
  for (const std::string& c : args.comments) options.comments.push_back(c);
  write_output(out, a, options);
  std::cout << "wrote " << out.string() << ": " << uri.str() << ", " << a.rows() << " x "
            << a.cols() << ", " << a.nnz() << " entries, digest " << a.digest() << " (generated in "
            << fixed(took * 1e3, 1) << " ms)\n";
  return 0;
}

// ---- split
// -----------------------------------------------------------------------------------------

// data split --index INDEX.csv ... --out FILE: the version-1 split of one index.
int run_split(const DataArgs& args) {
  const std::vector<std::string>& indexes = args.where.indexes;
  if (indexes.size() != 1) throw UsageError("split needs exactly one --index INDEX.csv");
  const ds::SplitSpec spec = split_spec(args);
  if (!args.out) throw UsageError("--out is required");
  const fs::path out = *args.out;
  const ds::SuiteSparseIndex index = ds::SuiteSparseIndex::read(ds::index_csv_path(indexes[0]));
  const ds::Split split = ds::make_split(index, spec);
  ds::write_split(out, split);
  std::cout << "wrote " << out.string() << ": split " << split.name << " of " << split.index_size
            << " matrices (index digest " << split.index_digest << "): train "
            << split.keys(ds::SplitPart::train).size() << ", val "
            << split.keys(ds::SplitPart::val).size() << ", test "
            << split.keys(ds::SplitPart::test).size() << "\n";
  return 0;
}

// ---- summary
// ---------------------------------------------------------------------------------------

struct SummaryRow {
  std::string name;
  fs::path file;
  const ds::IndexEntry* entry = nullptr;
  bool ok = false;
  std::string status;  // "ok", "differs from index: ...", or the error message
  std::int64_t rows = 0, cols = 0, nnz = 0;
  ds::MatrixFeatures features;
  double read_ms = 0.0;
  std::int64_t bytes = 0;
};

bool is_matrix_file(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.ends_with(".mtx") || name.ends_with(".mtx.gz") || name.ends_with(".tar.gz") ||
         name.ends_with(".tgz");
}

void summarise(SummaryRow& row, const ds::ReadOptions& read) {
  const auto start = std::chrono::steady_clock::now();
  try {
    ds::ReadOptions options = read;
    const std::string fname = row.file.filename().string();
    if (row.entry != nullptr && options.archive_member.empty() &&
        fname == row.entry->name + ".tar.gz") {
      options.archive_member = row.entry->name + "/" + row.entry->name + ".mtx";
    }
    const ds::MatrixMarketFile f = ds::read_matrix_market(row.file, options);
    row.read_ms = seconds_since(start) * 1e3;
    row.rows = f.matrix.rows();
    row.cols = f.matrix.cols();
    row.nnz = f.matrix.nnz();
    row.bytes = f.report.bytes;
    row.features = ds::compute_features(f.matrix);
    row.ok = true;
    row.status = "ok";
    if (row.entry != nullptr) {
      std::string diff;
      auto check = [&diff](const char* what, const std::optional<std::int64_t>& want,
                           std::int64_t got) {
        if (want && *want != got) {
          diff += std::string(diff.empty() ? "" : ", ") + what + " " + std::to_string(got) +
                  " (index: " + std::to_string(*want) + ")";
        }
      };
      check("rows", row.entry->rows, row.rows);
      check("cols", row.entry->cols, row.cols);
      check("stored", row.entry->stored_entries, f.report.stored_entries);
      if (!diff.empty()) row.status = "differs from index: " + diff;
    }
  } catch (const std::exception& e) {
    row.read_ms = seconds_since(start) * 1e3;
    row.status = e.what();
  }
}

int run_summary(const DataArgs& args) {
  std::vector<SummaryRow> rows;
  std::optional<ds::SuiteSparseIndex> index;
  std::string what;
  if (args.summary_index) {
    index = ds::SuiteSparseIndex::read(ds::index_csv_path(*args.summary_index));
    what = index->source();
    for (const ds::IndexEntry& e : index->entries()) {
      SummaryRow row;
      row.name = e.key();
      row.file = index->file_path(e);
      row.entry = &e;
      rows.push_back(std::move(row));
    }
  } else {
    const fs::path dir = args.input ? fs::path(*args.input) : data_dir(args);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      throw std::runtime_error(dir.string() +
                               ": no such folder (summary reads every matrix file "
                               "under a folder, or the matrices of --index)");
    }
    what = dir.string();
    std::vector<fs::path> files;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      if (it->is_regular_file(ec) && is_matrix_file(it->path())) files.push_back(it->path());
    }
    if (ec) throw std::runtime_error(dir.string() + ": cannot list the folder: " + ec.message());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      SummaryRow row;
      row.name = fs::relative(f, dir, ec).string();
      if (ec || row.name.empty()) row.name = f.string();
      row.file = f;
      rows.push_back(std::move(row));
    }
  }
  const ds::ReadOptions read = store_options(args).read;
  std::size_t failed = 0;
  std::size_t differs = 0;
  double total_ms = 0.0;
  std::int64_t total_bytes = 0;
  std::int64_t total_nnz = 0;
  for (SummaryRow& row : rows) {
    summarise(row, read);
    if (!row.ok) ++failed;
    if (row.ok && row.status != "ok") ++differs;
    total_ms += row.read_ms;
    total_bytes += row.bytes;
    total_nnz += row.nnz;
  }
  if (args.json) {
    std::ostringstream out;
    out << "[\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const SummaryRow& r = rows[i];
      out << "  {\"matrix\": " << experiments::json_quote(r.name)
          << ", \"file\": " << experiments::json_quote(r.file.string())
          << ", \"ok\": " << (r.ok ? "true" : "false")
          << ", \"status\": " << experiments::json_quote(r.status);
      if (r.ok) {
        out << ", \"rows\": " << r.rows << ", \"cols\": " << r.cols << ", \"nnz\": " << r.nnz
            << ", \"read_ms\": " << number(r.read_ms) << ", \"features\": {";
        const auto names = ds::feature_names();
        const auto values = r.features.to_vector();
        for (std::size_t k = 0; k < names.size() && k < values.size(); ++k) {
          out << (k ? ", " : "") << experiments::json_quote(names[k]) << ": " << number(values[k]);
        }
        out << "}";
      }
      out << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    out << "]\n";
    std::cout << out.str();
  } else {
    std::size_t width = 6;
    for (const SummaryRow& r : rows) width = std::max(width, r.name.size());
    width = std::min<std::size_t>(width, 48);
    std::ostringstream out;
    char line[512];
    std::snprintf(line, sizeof line, "%-*s %9s %9s %11s %8s %8s %6s %9s %6s %6s %9s  %s\n",
                  static_cast<int>(width), "matrix", "rows", "cols", "nnz", "row_mean", "row_max",
                  "gini", "bandwidth", "diag", "dense", "read_ms", "status");
    out << line;
    for (const SummaryRow& r : rows) {
      if (r.ok) {
        const ds::MatrixFeatures& f = r.features;
        std::snprintf(line, sizeof line,
                      "%-*s %9lld %9lld %11lld %8.2f %8lld %6.3f %9lld %6.3f %6.3f %9.2f  %s\n",
                      static_cast<int>(width), r.name.c_str(), static_cast<long long>(r.rows),
                      static_cast<long long>(r.cols), static_cast<long long>(r.nnz), f.row_nnz_mean,
                      static_cast<long long>(f.row_nnz_max), f.row_nnz_gini,
                      static_cast<long long>(f.bandwidth), f.diagonal_share, f.dense_block_share,
                      r.read_ms, r.status.c_str());
      } else {
        std::snprintf(line, sizeof line, "%-*s %9s %9s %11s %8s %8s %6s %9s %6s %6s %9.2f  ",
                      static_cast<int>(width), r.name.c_str(), "-", "-", "-", "-", "-", "-", "-",
                      "-", "-", r.read_ms);
        out << line << "error: " << r.status << "\n";
        continue;
      }
      out << line;
    }
    out << rows.size() << " matrices from " << what << ": " << (rows.size() - failed) << " read, "
        << failed << " failed";
    if (index) out << ", " << differs << " differ from the index";
    out << "; " << total_nnz << " nonzeros in " << fixed(total_ms, 1) << " ms";
    if (total_ms > 0) {
      out << " (" << fixed(static_cast<double>(total_bytes) / 1e6 / (total_ms / 1e3), 1)
          << " MB/s of text)";
    }
    out << "\n";
    std::cout << out.str();
  }
  if (args.strict && (failed > 0 || differs > 0)) return 1;
  return 0;
}

// ---- dispatch
// --------------------------------------------------------------------------------------

// --member NAME and --allow-non-finite: how a Matrix Market file is read.
void add_read_options(CLI::App& sub, DataArgs& a) {
  sub.add_option("--member", a.member, "the member of a .tar.gz archive to read")
      ->type_name("NAME");
  sub.add_flag("--allow-non-finite", a.allow_non_finite, "accept inf and nan values");
}

CLI::Option* add_comments(CLI::App& sub, DataArgs& a) {
  return repeatable(
             sub.add_option("--comment", a.comments, "a comment line for the output (repeatable)"))
      ->type_name("TEXT");
}

Run declare_info(CLI::App& sub, const std::shared_ptr<DataArgs>& a) {
  sub.add_option("FILE|URI", a->input, "a Matrix Market file or a matrix URI")->required();
  sub.add_flag("--json", a->json, "print it as JSON");
  add_read_options(sub, *a);
  add_matrix_locations(sub, a->where);
  return [a](const std::vector<std::string>&) { return run_info(*a); };
}

Run declare_convert(CLI::App& sub, const std::shared_ptr<DataArgs>& a) {
  sub.add_option("IN", a->input, "a Matrix Market file or a matrix URI")->required();
  sub.add_option("OUT", a->output,
                 "the file to write: .gz is compressed, .tar.gz a collection-style archive")
      ->required();
  one_of(sub.add_option("--field", a->field, "the output's field (default: IN's)"),
         {"real", "integer", "pattern"});
  CLI::Option* symmetric =
      sub.add_flag("--symmetric", a->symmetric, "write the lower triangle of a symmetric matrix");
  sub.add_flag("--general", a->general, "write every entry (default: IN's symmetry)")
      ->excludes(symmetric);
  add_comments(sub, *a);
  add_read_options(sub, *a);
  add_matrix_locations(sub, a->where);
  return [a](const std::vector<std::string>&) { return run_convert(*a); };
}

Run declare_generate(CLI::App& sub, const std::shared_ptr<DataArgs>& a) {
  sub.add_option("URI", a->input, "a gen-v1 URI")->required();
  sub.add_option("--out", a->out, "the Matrix Market file to write")->type_name("FILE")->required();
  add_comments(sub, *a);
  add_matrix_locations(sub, a->where);
  return [a](const std::vector<std::string>&) { return run_generate(*a); };
}

// One subcommand, three forms: a split FILE to report on, --benchmark to make a version-2 split,
// else a version-1 split of one index.
Run declare_split(CLI::App& sub, const std::shared_ptr<DataArgs>& a) {
  CLI::Option* file = sub.add_option("FILE", a->input, "a split file to report on");
  CLI::Option* benchmark =
      sub.add_flag("--benchmark", a->benchmark, "make a version-2 benchmark split");
  repeatable(sub.add_option("--index", a->where.indexes,
                            "a SuiteSparse index (INDEX.csv, or its folder): the one index of a "
                            "version-1 split; with --benchmark one or more (source shared); with "
                            "FILE where matrices are also looked up"))
      ->type_name("PATH");
  CLI::Option* catalogue = sub.add_option("--catalogue", a->catalogue,
                                          "with --benchmark: the SuiteSparse catalogue CSV "
                                          "(id,group,name,rows,cols,nnz; source catalogue)")
                               ->type_name("CSV")
                               ->multi_option_policy(CLI::MultiOptionPolicy::Throw)
                               ->needs(benchmark);
  CLI::Option* name = sub.add_option("--name", a->name, "the split's name")->type_name("NAME");
  CLI::Option* seed = non_negative(sub.add_option("--seed", a->seed, "the seed of the assignment"))
                          ->type_name("SEED");
  CLI::Option* ratios =
      sub.add_option("--ratios", a->ratios, "the parts' shares")->type_name("TRAIN,VAL,TEST");
  CLI::Option* out = sub.add_option("--out", a->out, "the split file to write (never overwritten)")
                         ->type_name("FILE");
  sub.add_flag("--json", a->json, "with FILE: print the report as JSON")->needs(file);
  add_data_dir(sub, a->where)->needs(file);
  for (CLI::Option* making : {benchmark, catalogue, name, seed, ratios, out})
    file->excludes(making);
  return [a](const std::vector<std::string>&) {
    if (a->benchmark) return run_benchmark_split(*a);
    if (a->input) return run_split_report(*a);
    return run_split(*a);
  };
}

Run declare_fetch(CLI::App& sub, const std::shared_ptr<DataArgs>& a) {
  CLI::Option* uri = sub.add_option("URI", a->input, "a suitesparse-v1 URI to download");
  CLI::Option* split =
      sub.add_option("--split", a->split, "download the missing matrices of a split's part")
          ->type_name("FILE")
          ->excludes(uri);
  one_of(sub.add_option("--part", a->part, "the part of --split"), {"train", "val", "test"})
      ->needs(split);
  split->needs("--part");
  one_of(repeatable(sub.add_option("--regime", a->regimes,
                                   "only the matrices of this regime (repeatable)")),
         {"small", "medium", "large"})
      ->needs(split);
  sub.add_option("--source", a->source,
                 "which collection matrices: catalogue (default; every matrix of a version-1 "
                 "split), shared or all")
      ->type_name("catalogue|shared|all")
      ->check(
          [](const std::string& source) {
            if (source == "generated") {
              return std::string("generated matrices are made where they are used, not downloaded");
            }
            return source == "catalogue" || source == "shared" || source == "all"
                       ? std::string()
                       : source + " not in {catalogue,shared,all}";
          },
          "", "choice")
      ->needs(split);
  sub.add_option("--base-url", a->base_url, "where the collection's archives are")
      ->type_name("URL");
  sub.add_option("--max", a->max, "fetch at most N matrices")
      ->type_name("N")
      ->check(CLI::Range(0LL, std::numeric_limits<long long>::max()))
      ->needs(split);
  sub.add_flag("--dry-run", a->dry_run, "say what would be fetched, fetch nothing")->needs(split);
  sub.add_flag("--overwrite", a->overwrite, "download URI again when it is present")
      ->excludes(split);
  add_data_dir(sub, a->where);
  add_indexes(sub, a->where)->needs(split);
  return [a](const std::vector<std::string>&) { return run_fetch(*a); };
}

Run declare_summary(CLI::App& sub, const std::shared_ptr<DataArgs>& a) {
  CLI::Option* dir = sub.add_option(
      "DIR", a->input, "a folder: every .mtx, .mtx.gz and .tar.gz under it (default: DATA_DIR)");
  sub.add_option("--index", a->summary_index, "the matrices of a SuiteSparse index instead")
      ->type_name("INDEX.csv")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw)
      ->excludes(dir);
  sub.add_flag("--json", a->json, "print the table as JSON");
  sub.add_flag("--strict", a->strict, "exit 1 if any matrix fails or differs from the index");
  add_read_options(sub, *a);
  add_data_dir(sub, a->where);
  return [a](const std::vector<std::string>&) { return run_summary(*a); };
}

Run declare_data(CLI::App& app) {
  app.description(
      "Matrices, task URIs and splits. FILE is a Matrix Market file (.mtx, .mtx.gz, or a "
      "SuiteSparse\n"
      ".tar.gz archive); URI is suitesparse-v1/GROUP/NAME, gen-v1/KIND?key=value&... or "
      "file:PATH.");
  app.footer("exit status: 0 done, 1 an input could not be read or written, 2 bad arguments");
  auto a = std::make_shared<DataArgs>();
  Subcommands subcommands(app);
  const auto with = [a](Run (*declare)(CLI::App&, const std::shared_ptr<DataArgs>&)) {
    return [a, declare](CLI::App& sub) { return declare(sub, a); };
  };
  subcommands.add("info",
                  "rows, cols, nnz, digest, the pattern features and (for files) what the reader "
                  "saw",
                  with(declare_info));
  subcommands.add("convert",
                  "Matrix Market to Matrix Market; IN is a FILE or URI; OUT ending in .gz is\n"
                  "compressed, OUT ending in .tar.gz is a collection-style archive. Field and\n"
                  "symmetry default to IN's.",
                  with(declare_convert));
  subcommands.add("generate",
                  "write the matrix of a gen-v1 URI as a Matrix Market file (kron finds its base\n"
                  "matrix through --data-dir and --index)",
                  with(declare_generate));
  subcommands.add(
      "split",
      "With FILE: a split file's name, version, digest and sources; per part and regime its\n"
      "matrices, families and how many are present here (in DATA_DIR or an --index); the large\n"
      "regime's families per part. With --benchmark: makes a version-2 benchmark split of every\n"
      "matrix of each --index (source shared), of the --catalogue CSV (source catalogue) and of\n"
      "the generated large regime (large_regime_v1, source generated), collection groups\n"
      "assigned whole to one part (datasets/splits/bench-v2.split is made so). Otherwise: makes\n"
      "a version-1 split of one --index. A split file is never overwritten.",
      with(declare_split));
  subcommands.add(
      "fetch",
      "With URI: downloads a suitesparse-v1 matrix into DATA_DIR/suitesparse/GROUP/NAME.tar.gz.\n"
      "With --split FILE --part P: downloads the part's collection matrices that are not present\n"
      "(source catalogue by default; every matrix of a version-1 split); a failure is reported\n"
      "and the run goes on; exit 1 if any failed.",
      with(declare_fetch));
  subcommands.add(
      "summary",
      "one line per matrix of a folder (every .mtx, .mtx.gz, .tar.gz under it) or of an index:\n"
      "size, row lengths, bandwidth, diagonal share, read time, and whether it matches the index.\n"
      "Without DIR or --index: the data directory. --strict: exit 1 if any matrix fails.",
      with(declare_summary));
  return subcommands.run();
}

const CommandRegistration kData("data", "matrices: info, convert, generate, split, fetch, summary",
                                declare_data);

}  // namespace
}  // namespace sparserl::tools::data
