// The large regime's list (large_regime.hpp): its families and part counts, canonical URIs that
// validate, families made of the kinds they mirror, parameters that differ across parts in more
// than the seed, and listed sizes in range; then a deterministic subset - the smallest entry of
// each family in each part - generated to check its nonzeros against the list and the range.
#include "sparserl/datasets/large_regime.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "test_support.hpp"

namespace ds = sparserl::datasets;

namespace {

ds::GeneratorSpec spec_of(const ds::LargeRegimeMatrix& m) {
  return ds::GeneratorSpec::from_uri(ds::MatrixUri::parse(m.uri));
}

// The keys (other than the seed) whose values differ between two specs, a key absent from one
// counting as different.
int differing_keys(const ds::GeneratorSpec& a, const ds::GeneratorSpec& b) {
  std::set<std::string> keys;
  for (const auto& [k, v] : a.params) keys.insert(k);
  for (const auto& [k, v] : b.params) keys.insert(k);
  int differ = a.kind != b.kind ? 1 : 0;
  for (const std::string& k : keys) {
    if (k == "seed") continue;
    const auto ia = a.params.find(k), ib = b.params.find(k);
    if (ia == a.params.end() || ib == b.params.end() || ia->second != ib->second) ++differ;
  }
  return differ;
}

// The entry of each (family, part) with the fewest listed nonzeros.
std::vector<ds::LargeRegimeMatrix> smallest_per_family_and_part() {
  std::map<std::pair<std::string, ds::SplitPart>, ds::LargeRegimeMatrix> best;
  for (const auto& m : ds::large_regime_v1()) {
    const auto key = std::make_pair(m.family, m.part);
    const auto it = best.find(key);
    if (it == best.end() || m.nnz < it->second.nnz) best[key] = m;
  }
  std::vector<ds::LargeRegimeMatrix> out;
  for (const auto& [key, m] : best) out.push_back(m);
  return out;
}

void check_generated(const ds::LargeRegimeMatrix& m, const ds::MatrixLoader& loader) {
  INFO(m.uri);
  const auto a = ds::generate(ds::MatrixUri::parse(m.uri), loader);
  CHECK(a.nnz() == m.nnz);
  CHECK(a.nnz() >= ds::kLargeRegimeMinNnz);
  CHECK(a.nnz() <= ds::kLargeRegimeMaxNnz);
}

}  // namespace

TEST_CASE("the large regime lists its families, parts and canonical URIs",
          "[datasets][large_regime]") {
  const auto& families = ds::large_regime_families();
  CHECK(families == std::vector<std::string>{"stencil", "banded", "block-aligned",
                                             "block-unaligned", "rmat", "road", "circuit", "lp",
                                             "lognormal", "scaled-real"});
  const auto& list = ds::large_regime_v1();
  CHECK(list.size() >= 80);
  std::map<std::string, std::map<ds::SplitPart, int>> counts;
  std::map<ds::SplitPart, int> per_part;
  std::set<std::string> uris;
  // The kinds each family is made of.
  const std::map<std::string, std::set<std::string>> kinds = {
      {"stencil", {"stencil2d", "stencil3d"}},
      {"banded", {"banded"}},
      {"block-aligned", {"blocksparse"}},
      {"block-unaligned", {"blocksparse"}},
      {"rmat", {"rmat"}},
      {"road", {"road"}},
      {"circuit", {"circuit"}},
      {"lp", {"lp"}},
      {"lognormal", {"lognormal"}},
      {"scaled-real", {"kron"}}};
  std::map<std::string, std::set<std::string>> permuted;  // family -> parts with a permuted entry
  for (const auto& m : list) {
    INFO(m.uri);
    ++counts[m.family][m.part];
    ++per_part[m.part];
    CHECK(uris.insert(m.uri).second);  // no URI twice
    CHECK(std::find(families.begin(), families.end(), m.family) != families.end());
    // Canonical (sorted keys) and valid.
    const auto parsed = ds::MatrixUri::parse(m.uri);
    CHECK(parsed.str() == m.uri);
    const ds::GeneratorSpec spec = ds::GeneratorSpec::from_uri(parsed);
    CHECK(spec.uri() == m.uri);
    CHECK(spec.params.count("seed") == 1);
    REQUIRE(kinds.count(m.family) == 1);
    CHECK(kinds.at(m.family).count(spec.kind) == 1);
    if (m.family == "block-aligned") CHECK(spec.params.count("align") == 0);
    if (m.family == "block-unaligned") CHECK(spec.params.at("align") == "0");
    if (spec.params.count("permute") != 0 && spec.params.at("permute") == "1") {
      permuted[m.family].insert(std::string(ds::to_string(m.part)));
    }
    // Listed sizes: within the regime; val and test at most 16M (GPU time is scarce).
    CHECK(m.nnz >= ds::kLargeRegimeMinNnz);
    CHECK(m.nnz <= ds::kLargeRegimeMaxNnz);
    if (m.part != ds::SplitPart::train) CHECK(m.nnz <= 16'000'000);
  }
  CHECK(per_part[ds::SplitPart::val] >= 18);
  CHECK(per_part[ds::SplitPart::test] >= 18);
  for (const std::string& family : families) {
    INFO(family);
    CHECK(counts[family][ds::SplitPart::train] >= 4);
    CHECK(counts[family][ds::SplitPart::val] >= 2);
    CHECK(counts[family][ds::SplitPart::test] >= 2);
  }
  // Randomly numbered stencils and permuted R-MAT graphs in every part.
  CHECK(permuted["stencil"] == std::set<std::string>{"train", "val", "test"});
  CHECK(permuted["rmat"] == std::set<std::string>{"train", "val", "test"});
}

TEST_CASE("the large regime's parts differ in more than the seed", "[datasets][large_regime]") {
  const auto& list = ds::large_regime_v1();
  for (std::size_t i = 0; i < list.size(); ++i) {
    for (std::size_t j = i + 1; j < list.size(); ++j) {
      if (list[i].family != list[j].family || list[i].part == list[j].part) continue;
      INFO(list[i].uri << " vs " << list[j].uri);
      // At least two parameters besides the seed differ: a re-seeded copy, or one that changes a
      // single knob of a matrix in another part, is refused.
      CHECK(differing_keys(spec_of(list[i]), spec_of(list[j])) >= 2);
    }
  }
  // The sizes of the parts differ too: no listed nonzero count of one part recurs in another part
  // of the same family.
  std::map<std::string, std::map<std::int64_t, ds::SplitPart>> sizes;
  for (const auto& m : list) {
    INFO(m.uri);
    const auto [it, fresh] = sizes[m.family].emplace(m.nnz, m.part);
    if (!fresh) CHECK(it->second == m.part);
  }
  // R-MAT: several skews in every part.
  std::map<ds::SplitPart, std::set<std::string>> skews;
  for (const auto& m : list) {
    if (m.family != "rmat") continue;
    const auto spec = spec_of(m);
    skews[m.part].insert(spec.params.count("a") != 0 ? spec.params.at("a") : "0.57");
  }
  for (const auto& [part, values] : skews) CHECK(values.size() >= 2);
  // Scaled-real: the base matrices of the parts are disjoint.
  std::map<std::string, ds::SplitPart> bases;
  for (const auto& m : list) {
    if (m.family != "scaled-real") continue;
    const auto loaded = ds::loaded_matrices(spec_of(m));
    REQUIRE(loaded.size() == 1);
    const auto [it, fresh] = bases.emplace(loaded.front(), m.part);
    if (!fresh) CHECK(it->second == m.part);
  }
}

TEST_CASE("the smallest large-regime matrix of each family and part has its listed size",
          "[datasets][large_regime]") {
  // About 25 matrices of 2.5M-13M nonzeros; scaled-real needs the shared matrices (next test).
  for (const auto& m : smallest_per_family_and_part()) {
    if (m.family != "scaled-real") check_generated(m, {});
  }
}

TEST_CASE("the scaled-real family builds on matrices of the shared index",
          "[datasets][large_regime][shared]") {
  const auto shared = sparserl::testing::shared_matrices_dir();
  ds::StoreOptions options;
  options.indexes = {shared};
  options.cache_capacity = 8;
  ds::MatrixStore store(sparserl::testing::scratch_dir("large_regime"), options);
  for (const auto& m : ds::large_regime_v1()) {
    if (m.family != "scaled-real") continue;
    for (const std::string& base : ds::loaded_matrices(spec_of(m))) {
      INFO(m.uri << " loads " << base);
      CHECK(store.find(ds::MatrixUri::parse(base)).has_value());
    }
  }
  const ds::MatrixLoader loader = [&store](const std::string& uri) { return store.load(uri); };
  for (const auto& m : smallest_per_family_and_part()) {
    if (m.family == "scaled-real") check_generated(m, loader);
  }
}
