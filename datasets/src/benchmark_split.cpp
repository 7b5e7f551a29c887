// Benchmark splits (split file version 2, splits.hpp): regimes and sources, selecting a part's
// entries, making a split whose collection matrices are assigned to parts whole groups at a time,
// and the entry lines of the file.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>

#include "fnv1a.hpp"
#include "sparserl/datasets/enum_names.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/datasets/task.hpp"
#include "split_format.hpp"

namespace sparserl::datasets {

Regime regime_of(std::int64_t nnz) {
  if (nnz >= kLargeRegimeMinNnz) return Regime::large;
  if (nnz >= kMediumRegimeMinNnz) return Regime::medium;
  return Regime::small;
}

namespace {

constexpr auto kRegimeNames =
    enum_names<Regime::small, Regime::large>({"small", "medium", "large"});
constexpr auto kMatrixSourceNames =
    enum_names<MatrixSource::shared, MatrixSource::generated>({"shared", "catalogue", "generated"});

}  // namespace

std::string_view to_string(Regime regime) { return kRegimeNames.name(regime); }
std::optional<Regime> parse_regime(std::string_view text) { return kRegimeNames.parse(text); }
std::string_view to_string(MatrixSource source) { return kMatrixSourceNames.name(source); }
std::optional<MatrixSource> parse_matrix_source(std::string_view text) {
  return kMatrixSourceNames.parse(text);
}

bool SplitSelection::accepts(const SplitEntry& e) const {
  if (!regimes.empty()) {
    // A version-1 entry has no regime: a regime filter cannot take it.
    if (!e.regime || std::find(regimes.begin(), regimes.end(), *e.regime) == regimes.end()) {
      return false;
    }
  }
  if (!sources.empty() && std::find(sources.begin(), sources.end(), e.source) == sources.end()) {
    return false;
  }
  return families.empty() || std::find(families.begin(), families.end(), e.family) != families.end();
}

std::string SplitSelection::describe() const {
  std::vector<std::string> pieces;
  auto join = [](const auto& items, auto name) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ",") + std::string(name(item));
    return out;
  };
  if (!regimes.empty()) pieces.push_back("regime " + join(regimes, [](Regime r) { return to_string(r); }));
  if (!sources.empty()) {
    pieces.push_back("source " + join(sources, [](MatrixSource s) { return to_string(s); }));
  }
  if (!families.empty()) {
    pieces.push_back("family " + join(families, [](const std::string& f) { return f; }));
  }
  if (pieces.empty()) return "all";
  std::string out;
  for (const auto& p : pieces) out += (out.empty() ? "" : "; ") + p;
  return out;
}

std::vector<SplitEntry> Split::select(SplitPart part, const SplitSelection& selection) const {
  std::vector<SplitEntry> out;
  for (const SplitEntry& e : part_entries(part)) {
    if (selection.accepts(e)) out.push_back(e);
  }
  return out;
}

std::optional<std::pair<SplitPart, SplitEntry>> Split::find(std::string_view uri) const {
  std::string canonical;
  try {
    canonical = MatrixUri::parse(uri).str();
  } catch (const InvalidUri&) {
    return std::nullopt;
  }
  for (SplitPart part : kSplitParts) {
    const auto& list = part_entries(part);
    auto it = std::lower_bound(list.begin(), list.end(), canonical,
                               [](const SplitEntry& e, const std::string& u) { return e.uri < u; });
    if (it != list.end() && it->uri == canonical) return std::make_pair(part, *it);
  }
  return std::nullopt;
}

std::string uri_set_digest(std::vector<std::string> uris) {
  std::sort(uris.begin(), uris.end());
  std::uint64_t h = detail::kFnvOffset;
  for (const std::string& u : uris) h = detail::fnv1a64(u + "\n", h);
  return detail::hex16(h);
}

namespace {

// The quota of each part of `total` items, as doubles (ratio x total).
std::array<double, 3> quotas(const std::array<double, 3>& ratios, double total) {
  return {ratios[0] * total, ratios[1] * total, ratios[2] * total};
}

// The part furthest below its quota; ties to the earlier part.
std::size_t neediest(const std::array<double, 3>& quota, const std::array<double, 3>& filled) {
  std::size_t best = 0;
  for (std::size_t p = 1; p < 3; ++p) {
    if (quota[p] - filled[p] > quota[best] - filled[best]) best = p;
  }
  return best;
}

std::string group_of(const std::string& uri) {
  const MatrixUri u = MatrixUri::parse(uri);
  if (u.scheme != MatrixUri::Scheme::suitesparse) {
    throw SplitError("benchmark split: '" + uri +
                     "' needs a part (only suitesparse-v1 matrices are assigned by group)");
  }
  return u.group;
}

struct GroupTally {
  std::size_t shared = 0, all = 0;
  std::uint64_t key = 0;
};

// Assigns every group to a part (make_benchmark_split's rule).
std::map<std::string, std::size_t> assign_groups(const std::map<std::string, GroupTally>& groups,
                                                 const std::array<double, 3>& ratios) {
  std::vector<std::pair<std::uint64_t, std::string>> order;
  std::size_t shared_total = 0, all_total = 0;
  for (const auto& [group, tally] : groups) {
    order.emplace_back(tally.key, group);
    shared_total += tally.shared;
    all_total += tally.all;
  }
  std::sort(order.begin(), order.end());
  const auto shared_quota = quotas(ratios, static_cast<double>(shared_total));
  const auto all_quota = quotas(ratios, static_cast<double>(all_total));
  std::array<double, 3> shared_filled{}, all_filled{};
  std::map<std::string, std::size_t> part_of;
  for (int stratum = 0; stratum < 2; ++stratum) {
    for (const auto& [key, group] : order) {
      const GroupTally& t = groups.at(group);
      if ((t.shared > 0) != (stratum == 0)) continue;
      const std::size_t p = stratum == 0 ? neediest(shared_quota, shared_filled)
                                         : neediest(all_quota, all_filled);
      part_of[group] = p;
      shared_filled[p] += static_cast<double>(t.shared);
      all_filled[p] += static_cast<double>(t.all);
    }
  }
  return part_of;
}

}  // namespace

Split make_benchmark_split(const SplitSpec& spec, std::vector<SplitCandidate> candidates,
                           std::vector<SplitSource> sources) {
  if (!detail::valid_name(spec.name)) {
    throw SplitError("invalid split name '" + spec.name +
                     "': expected letters, digits, '_', '-', '.' (e.g. bench-v2)");
  }
  (void)parse_ratios(detail::shortest(spec.ratios[0]) + "," + detail::shortest(spec.ratios[1]) +
                     "," + detail::shortest(spec.ratios[2]));
  if (candidates.empty()) throw SplitError("benchmark split " + spec.name + ": no matrices");
  Split s;
  s.name = spec.name;
  s.version = Split::kBenchmarkFormatVersion;
  s.seed = spec.seed;
  s.ratios = spec.ratios;
  s.sources = std::move(sources);

  // Canonical URIs; duplicates within a source are errors, a catalogue copy of a shared matrix is
  // dropped (the shared entry stays).
  std::map<std::string, SplitCandidate> by_uri;
  for (SplitCandidate& c : candidates) {
    c.uri = MatrixUri::parse(c.uri).str();
    if (c.nnz < 0) throw SplitError("benchmark split: " + c.uri + " has nnz " + std::to_string(c.nnz));
    const bool generated = c.source == MatrixSource::generated;
    if (generated != c.part.has_value()) {
      throw SplitError("benchmark split: " + c.uri +
                       (generated ? " is generated but has no part"
                                  : " is a collection matrix: its part comes from its group"));
    }
    if (!generated && c.family.empty()) c.family = group_of(c.uri);
    auto [it, inserted] = by_uri.emplace(c.uri, c);
    if (inserted) continue;
    if (it->second.source == c.source) {
      throw SplitError("benchmark split: " + c.uri + " is given twice by the " +
                       std::string(to_string(c.source)) + " source");
    }
    if (it->second.source == MatrixSource::catalogue && c.source == MatrixSource::shared) it->second = c;
  }

  const std::uint64_t salt = detail::splitmix64(spec.seed);
  std::map<std::string, GroupTally> groups;
  for (const auto& [uri, c] : by_uri) {
    if (c.part) continue;
    GroupTally& t = groups[group_of(uri)];
    t.key = detail::splitmix64(detail::fnv1a64(group_of(uri)) ^ salt);
    t.shared += c.source == MatrixSource::shared ? 1 : 0;
    ++t.all;
  }
  const auto part_of = assign_groups(groups, spec.ratios);
  for (const auto& [uri, c] : by_uri) {
    SplitEntry e;
    e.uri = uri;
    e.family = c.family;
    e.nnz = c.nnz;
    e.regime = regime_of(c.nnz);
    e.source = c.source;
    const std::size_t part = c.part ? static_cast<std::size_t>(*c.part) : part_of.at(group_of(uri));
    s.entries[part].push_back(std::move(e));  // by_uri is ordered: each part stays sorted
  }
  return s;
}

namespace detail {

std::string format_benchmark_split(const Split& s) {
  std::ostringstream out;
  write_split_preamble(out, s);
  for (const SplitSource& src : s.sources) {
    out << "# source " << to_string(src.source) << " " << src.name << " " << src.size << " "
        << src.digest << "\n";
  }
  out << "# counts train " << s.entries[0].size() << " val " << s.entries[1].size() << " test "
      << s.entries[2].size() << "\n";
  out << "# regimes: small < " << kMediumRegimeMinNnz << " <= medium < " << kLargeRegimeMinNnz
      << " <= large (nonzeros)\n";
  out << "# Columns: PART URI REGIME FAMILY NNZ SOURCE. Made by `sparserl data split --benchmark`.\n";
  out << "# Never edit this file: make a new split under a new name.\n";
  for (SplitPart part : kSplitParts) {
    for (const SplitEntry& e : s.part_entries(part)) {
      out << to_string(part) << " " << e.uri << " " << (e.regime ? to_string(*e.regime) : "?") << " "
          << e.family << " " << e.nnz << " " << to_string(e.source) << "\n";
    }
  }
  return out.str();
}

void parse_benchmark_entry(const std::vector<std::string>& words, std::string_view line, Split& s,
                           std::set<std::string>& seen,
                           const std::function<void(const std::string&)>& fail) {
  if (words.size() != 6) {
    fail("expected 'PART URI REGIME FAMILY NNZ SOURCE', found '" + std::string(line) + "'");
  }
  const auto part = parse_split_part(words[0]);
  if (!part) fail("unknown part '" + words[0] + "' (expected train, val or test)");
  SplitEntry e;
  try {
    e.uri = MatrixUri::parse(words[1]).str();
  } catch (const InvalidUri& ex) {
    fail(ex.what());
  }
  if (e.uri != words[1]) fail("the URI '" + words[1] + "' is not canonical (expected '" + e.uri + "')");
  e.regime = parse_regime(words[2]);
  if (!e.regime) fail("unknown regime '" + words[2] + "' (expected small, medium or large)");
  e.family = words[3];
  auto [p, ec] = std::from_chars(words[4].data(), words[4].data() + words[4].size(), e.nnz);
  if (ec != std::errc() || p != words[4].data() + words[4].size() || e.nnz < 0) {
    fail("expected the number of nonzeros, found '" + words[4] + "'");
  }
  if (regime_of(e.nnz) != *e.regime) {
    fail(e.uri + " has " + words[4] + " nonzeros, which is the " +
         std::string(to_string(regime_of(e.nnz))) + " regime, not " + words[2]);
  }
  const auto source = parse_matrix_source(words[5]);
  if (!source) fail("unknown source '" + words[5] + "' (expected shared, catalogue or generated)");
  e.source = *source;
  if (!seen.insert(e.uri).second) fail("the matrix " + e.uri + " is listed twice");
  s.entries[static_cast<std::size_t>(*part)].push_back(std::move(e));
}

}  // namespace detail
}  // namespace sparserl::datasets
