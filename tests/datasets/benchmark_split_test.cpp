// Benchmark splits (split file version 2): regimes by nonzeros, collection matrices assigned to
// parts whole groups at a time (no group in two parts, shared matrices balanced by the ratios),
// generated matrices kept in their part, a catalogue copy of a shared matrix dropped, selections by
// regime / source / family, the file's round trip and its malformed lines failing at their line;
// the committed bench-v2 split's promises (a large regime with headroom in every part, every real
// matrix, no group in two parts, scaled real patterns from their own part).
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "catch.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/datasets/suitesparse_index.hpp"
#include "sparserl/datasets/task.hpp"
#include "test_support.hpp"

namespace ds = sparserl::datasets;
namespace fs = std::filesystem;
using sparserl::testing::has_substring;

namespace {

ds::SplitSpec bench_spec(std::uint64_t seed = 1) {
  ds::SplitSpec s;
  s.name = "bench-t1";
  s.seed = seed;
  s.ratios = {0.6, 0.2, 0.2};
  return s;
}

ds::SplitCandidate collection(const std::string& key, std::int64_t nnz, ds::MatrixSource source) {
  ds::SplitCandidate c;
  c.uri = "suitesparse-v1/" + key;
  c.nnz = nnz;
  c.source = source;
  return c;
}

ds::SplitCandidate generated(const std::string& uri, const std::string& family, std::int64_t nnz,
                             ds::SplitPart part) {
  ds::SplitCandidate c;
  c.uri = uri;
  c.family = family;
  c.nnz = nnz;
  c.source = ds::MatrixSource::generated;
  c.part = part;
  return c;
}

// 40 groups of 1-12 catalogue matrices; groups G0..G9 also hold 3 shared matrices each.
std::vector<ds::SplitCandidate> synthetic_candidates() {
  std::vector<ds::SplitCandidate> out;
  for (int g = 0; g < 40; ++g) {
    const int n = 1 + (g * 7) % 12;
    for (int i = 0; i < n; ++i) {
      out.push_back(collection("G" + std::to_string(g) + "/c" + std::to_string(i),
                               100 + 97'000 * i * (g % 5), ds::MatrixSource::catalogue));
    }
    if (g < 10) {
      for (int i = 0; i < 3; ++i) {
        out.push_back(collection("G" + std::to_string(g) + "/s" + std::to_string(i), 1000 + i,
                                 ds::MatrixSource::shared));
      }
    }
  }
  out.push_back(generated("gen-v1/stencil2d?nx=2000", "stencil", 19'992'000, ds::SplitPart::train));
  out.push_back(generated("gen-v1/stencil2d?nx=1500", "stencil", 11'244'000, ds::SplitPart::val));
  out.push_back(generated("gen-v1/stencil2d?nx=1200", "stencil", 7'195'200, ds::SplitPart::test));
  return out;
}

std::vector<ds::SplitSource> synthetic_sources() {
  return {{ds::MatrixSource::shared, "INDEX.csv", 30, "0123456789abcdef"},
          {ds::MatrixSource::catalogue, "catalogue.csv", 262, "fedcba9876543210"},
          {ds::MatrixSource::generated, "large-t1", 3, "00000000000000ff"}};
}

}  // namespace

TEST_CASE("regimes are cut at 200,000 and 1,000,000 nonzeros", "[datasets][splits][bench_split]") {
  CHECK(ds::regime_of(0) == ds::Regime::small);
  CHECK(ds::regime_of(199'999) == ds::Regime::small);
  CHECK(ds::regime_of(200'000) == ds::Regime::medium);
  CHECK(ds::regime_of(999'999) == ds::Regime::medium);
  CHECK(ds::regime_of(1'000'000) == ds::Regime::large);
  for (ds::Regime r : ds::kRegimes) CHECK(ds::parse_regime(ds::to_string(r)) == r);
  CHECK_FALSE(ds::parse_regime("huge"));
  CHECK(ds::parse_matrix_source("catalogue") == ds::MatrixSource::catalogue);
  CHECK_FALSE(ds::parse_matrix_source("web"));
}

TEST_CASE("a benchmark split assigns collection matrices by group", "[datasets][splits][bench_split]") {
  const ds::Split s = ds::make_benchmark_split(bench_spec(), synthetic_candidates(), synthetic_sources());
  CHECK(s.version == 2);
  CHECK(s.size() == synthetic_candidates().size());

  // No group in two parts.
  std::map<std::string, std::set<ds::SplitPart>> parts_of_group;
  std::array<std::size_t, 3> shared{}, all{};
  for (ds::SplitPart part : ds::kSplitParts) {
    const auto& list = s.part_entries(part);
    CHECK(std::is_sorted(list.begin(), list.end(),
                         [](const auto& a, const auto& b) { return a.uri < b.uri; }));
    for (const ds::SplitEntry& e : list) {
      REQUIRE(e.regime);
      CHECK(*e.regime == ds::regime_of(e.nnz));
      if (e.source == ds::MatrixSource::generated) continue;
      parts_of_group[e.family].insert(part);
      shared[static_cast<std::size_t>(part)] += e.source == ds::MatrixSource::shared ? 1 : 0;
      ++all[static_cast<std::size_t>(part)];
    }
  }
  CHECK(parts_of_group.size() == 40);
  for (const auto& [group, parts] : parts_of_group) {
    INFO(group);
    CHECK(parts.size() == 1);
  }
  // The 30 shared matrices come in groups of 3: 18 / 6 / 6 is the only split by the ratios.
  CHECK(shared == std::array<std::size_t, 3>{18, 6, 6});
  // All matrices near the ratios (groups are indivisible: within the largest group's size).
  const double total = static_cast<double>(all[0] + all[1] + all[2]);
  CHECK(std::abs(static_cast<double>(all[0]) - 0.6 * total) <= 15);
  CHECK(std::abs(static_cast<double>(all[1]) - 0.2 * total) <= 15);

  // Generated matrices stay in their part.
  CHECK(s.find("gen-v1/stencil2d?nx=1500")->first == ds::SplitPart::val);
  CHECK(s.find("gen-v1/stencil2d?nx=1200")->second.family == "stencil");
  CHECK(s.find("gen-v1/stencil2d?nx=1200")->second.regime == ds::Regime::large);
  CHECK_FALSE(s.find("gen-v1/stencil2d?nx=999"));

  // Another seed, another assignment; the same seed, the same split whatever the input order.
  auto shuffled = synthetic_candidates();
  std::reverse(shuffled.begin(), shuffled.end());
  CHECK(ds::make_benchmark_split(bench_spec(), shuffled, synthetic_sources()) == s);
  CHECK_FALSE(ds::make_benchmark_split(bench_spec(2), synthetic_candidates(), synthetic_sources()) == s);
}

TEST_CASE("a catalogue copy of a shared matrix is the shared one", "[datasets][splits][bench_split]") {
  std::vector<ds::SplitCandidate> c = {collection("HB/west0067", 294, ds::MatrixSource::catalogue),
                                       collection("HB/west0067", 294, ds::MatrixSource::shared),
                                       collection("HB/bcspwr01", 131, ds::MatrixSource::catalogue)};
  const ds::Split s = ds::make_benchmark_split(bench_spec(), c, synthetic_sources());
  CHECK(s.size() == 2);
  CHECK(s.find("suitesparse-v1/HB/west0067")->second.source == ds::MatrixSource::shared);
  CHECK(s.find("suitesparse-v1/HB/bcspwr01")->second.source == ds::MatrixSource::catalogue);

  c.push_back(collection("HB/bcspwr01", 131, ds::MatrixSource::catalogue));
  CHECK_THROWS_WITH(ds::make_benchmark_split(bench_spec(), c, synthetic_sources()),
                    has_substring("HB/bcspwr01 is given twice by the catalogue source"));
  c.pop_back();
  auto no_part = generated("gen-v1/diagonal?n=5", "diag", 5, ds::SplitPart::val);
  no_part.part.reset();
  c.push_back(no_part);
  CHECK_THROWS_WITH(ds::make_benchmark_split(bench_spec(), c, synthetic_sources()),
                    has_substring("gen-v1/diagonal?n=5 is generated but has no part"));
  c.pop_back();
  auto with_part = collection("HB/ash219", 438, ds::MatrixSource::shared);
  with_part.part = ds::SplitPart::test;
  c.push_back(with_part);
  CHECK_THROWS_WITH(ds::make_benchmark_split(bench_spec(), c, synthetic_sources()),
                    has_substring("its part comes from its group"));
  CHECK_THROWS_WITH(ds::make_benchmark_split(bench_spec(), {}, synthetic_sources()),
                    has_substring("no matrices"));
}

TEST_CASE("selections take a part's entries by regime, source and family",
          "[datasets][splits][bench_split]") {
  const ds::Split s = ds::make_benchmark_split(bench_spec(), synthetic_candidates(), synthetic_sources());
  ds::SplitSelection large;
  large.regimes = {ds::Regime::large};
  const auto val_large = s.select(ds::SplitPart::val, large);
  REQUIRE_FALSE(val_large.empty());
  for (const auto& e : val_large) CHECK(e.nnz >= 1'000'000);
  ds::SplitSelection gen;
  gen.sources = {ds::MatrixSource::generated};
  const auto val_gen = s.select(ds::SplitPart::val, gen);
  REQUIRE(val_gen.size() == 1);
  CHECK(val_gen[0].uri == "gen-v1/stencil2d?nx=1500");
  ds::SplitSelection fam;
  fam.families = {"stencil"};
  fam.regimes = {ds::Regime::small};
  CHECK(s.select(ds::SplitPart::train, fam).empty());
  CHECK(ds::SplitSelection{}.describe() == "all");
  CHECK(fam.describe() == "regime small; family stencil");
  CHECK(s.select(ds::SplitPart::test, ds::SplitSelection{}).size() == s.part_entries(ds::SplitPart::test).size());
}

TEST_CASE("benchmark split files round-trip and malformed lines fail at their line",
          "[datasets][splits][bench_split]") {
  const ds::Split s = ds::make_benchmark_split(bench_spec(), synthetic_candidates(), synthetic_sources());
  const std::string text = ds::format_split(s);
  CHECK(text.rfind("# split bench-t1\n# version 2\n# seed 1\n# ratios 0.6,0.2,0.2\n"
                   "# source shared INDEX.csv 30 0123456789abcdef\n",
                   0) == 0);
  const ds::Split back = ds::parse_split(text, "b.split");
  CHECK(back == s);
  CHECK(back.digest() == s.digest());
  CHECK(back.digest().size() == 16);
  CHECK(ds::parse_split("# a comment\n" + text, "b.split").digest() == s.digest());

  auto replace = [&text](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    REQUIRE(at != std::string::npos);
    return t.replace(at, from.size(), to);
  };
  const std::string val_line = "val gen-v1/stencil2d?nx=1500 large stencil 11244000 generated";
  REQUIRE(text.find(val_line) != std::string::npos);
  std::size_t line_no = 1;
  for (std::size_t i = 0; i < text.find(val_line); ++i) line_no += text[i] == '\n' ? 1 : 0;
  const std::string at = "b.split:" + std::to_string(line_no) + ": ";
  CHECK_THROWS_WITH(
      ds::parse_split(replace(val_line, "val gen-v1/stencil2d?nx=1500 medium stencil 11244000 generated"),
                      "b.split"),
      has_substring(at + "gen-v1/stencil2d?nx=1500 has 11244000 nonzeros, which is the large regime, not medium"));
  CHECK_THROWS_WITH(
      ds::parse_split(replace(val_line, "val gen-v1/stencil2d?nx=1500 large stencil 11244000 web"), "b.split"),
      has_substring(at + "unknown source 'web'"));
  CHECK_THROWS_WITH(
      ds::parse_split(replace(val_line, "val gen-v1/stencil2d?nx=1500 large stencil many generated"), "b.split"),
      has_substring(at + "expected the number of nonzeros, found 'many'"));
  CHECK_THROWS_WITH(
      ds::parse_split(replace(val_line, "val gen-v1/stencil2d?seed=0&nx=1500 large stencil 11244000 generated"),
                      "b.split"),
      has_substring(at + "the URI 'gen-v1/stencil2d?seed=0&nx=1500' is not canonical"));
  CHECK_THROWS_WITH(ds::parse_split(replace(val_line, "val gen-v1/stencil2d?nx=1500 large stencil"), "b.split"),
                    has_substring(at + "expected 'PART URI REGIME FAMILY NNZ SOURCE'"));
  CHECK_THROWS_WITH(ds::parse_split(text + val_line + "\n", "b.split"), has_substring("is listed twice"));
  CHECK_THROWS_WITH(ds::parse_split(replace(val_line + "\n", ""), "b.split"),
                    has_substring("val matrices, the file lists"));
  CHECK_THROWS_WITH(ds::parse_split(replace("# source shared INDEX.csv 30 0123456789abcdef\n", "# source web x 1 y\n"),
                                    "b.split"),
                    has_substring("b.split:5: unknown source 'web'"));
  std::string no_sources = text;
  while (no_sources.find("# source ") != std::string::npos) {
    const auto a = no_sources.find("# source ");
    no_sources.erase(a, no_sources.find('\n', a) - a + 1);
  }
  CHECK_THROWS_WITH(ds::parse_split(no_sources, "b.split"),
                    has_substring("b.split: not a version-2 split file: the header line '# source' is missing"));
  CHECK_THROWS_WITH(ds::parse_split(replace("# version 2\n", "# version 2\n# index I.csv 1 x\n"), "b.split"),
                    has_substring("a version-2 split file has no '# index' line"));
}

TEST_CASE("the committed bench-v2 split holds every real matrix and a large regime with headroom",
          "[datasets][splits][bench_split]") {
  const ds::Split s =
      ds::read_split(sparserl::testing::source_dir() / "datasets" / "splits" / "bench-v2.split");
  CHECK(s.name == "bench-v2");
  CHECK(s.version == 2);

  // At least 64 generated large matrices in at least 8 families; val and test at least 16 each.
  std::map<ds::SplitPart, std::size_t> large_generated;
  std::set<std::string> families;
  std::map<std::string, std::set<ds::SplitPart>> parts_of_group;
  for (ds::SplitPart part : ds::kSplitParts) {
    for (const ds::SplitEntry& e : s.part_entries(part)) {
      if (e.source == ds::MatrixSource::generated) {
        CHECK(e.regime == ds::Regime::large);
        ++large_generated[part];
        families.insert(e.family);
      } else {
        parts_of_group[e.family].insert(part);
      }
    }
  }
  CHECK(large_generated[ds::SplitPart::train] + large_generated[ds::SplitPart::val] +
            large_generated[ds::SplitPart::test] >= 64);
  CHECK(large_generated[ds::SplitPart::val] >= 16);
  CHECK(large_generated[ds::SplitPart::test] >= 16);
  CHECK(families.size() >= 8);
  // No collection group in two parts.
  for (const auto& [group, parts] : parts_of_group) {
    INFO(group);
    CHECK(parts.size() == 1);
  }
  // Every real matrix of ../shared/matrices (both indexes) is in some part, as a shared entry.
  const auto shared = sparserl::testing::shared_matrices_dir();
  for (const fs::path& csv : {shared / "INDEX.csv", shared / "real" / "INDEX.csv"}) {
    if (!fs::exists(csv)) continue;
    const ds::SuiteSparseIndex index = ds::SuiteSparseIndex::read(csv);
    for (const ds::IndexEntry& e : index.entries()) {
      INFO(e.uri());
      const auto found = s.find(e.uri());
      REQUIRE(found);
      CHECK(found->second.source == ds::MatrixSource::shared);
    }
  }
  // A scaled-real (kron) matrix grows a real pattern of its own part: no val or test matrix is a
  // scaled copy of a train matrix.
  std::size_t krons = 0;
  for (ds::SplitPart part : ds::kSplitParts) {
    for (const ds::SplitEntry& e : s.part_entries(part)) {
      const ds::MatrixUri u = ds::MatrixUri::parse(e.uri);
      if (u.scheme != ds::MatrixUri::Scheme::generated || u.kind != "kron") continue;
      ++krons;
      const std::string base = "suitesparse-v1/" + u.params.at("group") + "/" + u.params.at("name");
      INFO(e.uri << " on " << base);
      const auto found = s.find(base);
      REQUIRE(found);
      CHECK(found->first == part);
    }
  }
  CHECK(krons >= 6);
}
