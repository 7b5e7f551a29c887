// Generators and the random numbers under them: reference vectors of SplitMix64 and xoshiro256**,
// pinned digests (the same on every platform, so any change to a generator's output shows here),
// seeds that differ, the structure each kind promises, the modifiers, and the messages of bad
// specs.
#include "sparserl/datasets/generators.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "catch.hpp"
#include "datasets_test_support.hpp"
#include "sparserl/datasets/features.hpp"
#include "sparserl/datasets/random.hpp"

namespace ds = sparserl::datasets;
using ds::GeneratorSpec;
using ds::Index;
using ds::SparseMatrix;
using namespace sparserl::testing;

namespace {

std::map<Index, Index> row_length_counts(const SparseMatrix& a) {
  std::map<Index, Index> counts;
  for (Index i = 0; i < a.rows(); ++i) ++counts[a.row_length(i)];
  return counts;
}

}  // namespace

TEST_CASE("random numbers follow the reference SplitMix64 and xoshiro256**", "[datasets][random]") {
  std::uint64_t state = 0;
  CHECK(ds::splitmix64(state) == 0xe220a8397b1dcdafULL);  // SplitMix64 from 0 (Vigna's reference)
  auto rng = ds::Rng::from_state(1, 2, 3, 4);             // xoshiro256** reference outputs
  CHECK(rng.next() == 11520ULL);
  CHECK(rng.next() == 0ULL);
  CHECK(rng.next() == 1509978240ULL);
  CHECK(rng.next() == 1215971899390074240ULL);
  // The project's seeding, pinned: a change here changes every generated matrix.
  ds::Rng seeded(42);
  CHECK(seeded.next() == 2303456275738999573ULL);
  CHECK(seeded.next() == 5438210688795116325ULL);
  CHECK(ds::Rng(42, 1).next() != ds::Rng(42, 0).next());
}

TEST_CASE("uniform doubles and integer ranges stay in range and cover it", "[datasets][random]") {
  ds::Rng rng(7);
  double lo = 1.0, hi = -1.0, sum = 0.0;
  for (int i = 0; i < 100000; ++i) {
    const double v = rng.uniform_pm1();
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  CHECK(lo >= -1.0);
  CHECK(lo < -0.999);
  CHECK(hi < 1.0);
  CHECK(hi > 0.999);
  CHECK(std::abs(sum / 100000) < 0.01);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 70000; ++i) ++counts[rng.below(7)];
  for (int c : counts) CHECK(std::abs(c - 10000) < 500);
  CHECK(rng.below(1) == 0);
  CHECK(rng.below(0) == 0);
  for (int i = 0; i < 1000; ++i) {
    const auto v = rng.between(-3, 3);
    CHECK((v >= -3 && v <= 3));
  }
  // A range just above 2^63 rejects about half the draws: still in range.
  for (int i = 0; i < 100; ++i) CHECK(rng.below((1ULL << 63) + 1) <= (1ULL << 63));
}

TEST_CASE("a fixed seed gives a fixed digest on every platform", "[datasets][generators]") {
  // Pinned from this implementation; SparseMatrix::digest() is platform-independent. A change
  // here is a change of a generator's output: raise kGeneratedFileRevision (generated_files.hpp),
  // or stores keep reading the old matrices from DATA_DIR/generated/.
  const sparserl::testing::PinnedDigests pins = {
      {{"stencil2d", {{"nx", "4"}, {"ny", "3"}}}, "1f7d79d9586c91fb"},
      {{"stencil2d", {{"nx", "5"}, {"points", "9"}, {"seed", "1"}}}, "3ceaa16eecbe30e9"},
      {{"stencil3d", {{"nx", "3"}, {"points", "27"}}}, "b50fab5586e605a2"},
      {{"banded", {{"n", "12"}, {"bandwidth", "2"}, {"fill", "0.5"}, {"seed", "7"}}},
       "8a53b2447b51099e"},
      {{"uniform", {{"rows", "20"}, {"cols", "30"}, {"nnz_per_row", "3"}, {"seed", "5"}}},
       "9a0a3140719f6369"},
      {{"uniform", {{"rows", "10"}, {"nnz", "25"}, {"seed", "5"}}}, "57200cc1196e916d"},
      {{"rmat", {{"scale", "5"}, {"edge_factor", "4"}, {"seed", "3"}}}, "3986e9a5a1448c13"},
      {{"rmat", {{"scale", "5"}, {"edge_factor", "4"}, {"seed", "3"}, {"permute", "1"}}},
       "a6518f3e9859d284"},
      {{"blockdiag", {{"blocks", "3"}, {"block_size", "2"}}}, "b658fdfbfa5f9a12"},
      {{"arrow", {{"n", "6"}, {"width", "2"}}}, "8b863cf872c8ddd4"},
      {{"diagonal", {{"n", "5"}}}, "2ca047f2d0e1f111"},
      {{"column", {{"n", "4"}}}, "ec01cc3645a74fb0"},
      {{"uniform",
        {{"rows", "16"},
         {"cols", "16"},
         {"nnz_per_row", "2"},
         {"empty_rows", "0.25"},
         {"huge_row", "10"},
         {"seed", "9"}}},
       "6f4d9c07e37e2068"},
  };
  sparserl::testing::check_pinned_digests(pins);
}

TEST_CASE("different seeds give different matrices", "[datasets][generators]") {
  for (const std::string kind : {"uniform", "rmat", "stencil2d", "banded", "arrow"}) {
    INFO(kind);
    const auto a = generated(kind, {{"seed", "1"}});
    const auto b = generated(kind, {{"seed", "2"}});
    CHECK(a.digest() != b.digest());
    if (kind == "uniform" || kind == "rmat") CHECK(a.pattern_digest() != b.pattern_digest());
    if (kind == "stencil2d" || kind == "arrow") CHECK(a.pattern_digest() == b.pattern_digest());
  }
  // Seed 0 is the default.
  CHECK(generated("uniform", {}) == generated("uniform", {{"seed", "0"}}));
}

TEST_CASE("values are uniform between -1 and 1", "[datasets][generators]") {
  const auto a = generated("stencil2d", {{"nx", "200"}, {"seed", "5"}});
  const auto v = a.values();
  CHECK(*std::min_element(v.begin(), v.end()) >= -1.0);
  CHECK(*std::max_element(v.begin(), v.end()) < 1.0);
  double sum = 0.0;
  for (double x : v) sum += x;
  CHECK(std::abs(sum / static_cast<double>(v.size())) < 0.01);
  CHECK(std::count_if(v.begin(), v.end(), [](double x) { return x < -0.5; }) >
        static_cast<std::ptrdiff_t>(v.size() / 5));
}

TEST_CASE("stencils have the row lengths of their grids", "[datasets][generators]") {
  const auto five = generated("stencil2d", {{"nx", "6"}, {"ny", "4"}});
  CHECK(five.rows() == 24);
  CHECK(five.nnz() == 5 * 24 - 2 * 6 - 2 * 4);
  CHECK(row_length_counts(five) == std::map<Index, Index>{{3, 4}, {4, 2 * 4 + 2 * 2}, {5, 4 * 2}});
  CHECK(ds::compute_features(five).bandwidth == 6);
  const auto nine = generated("stencil2d", {{"nx", "6"}, {"ny", "4"}, {"points", "9"}});
  CHECK(nine.nnz() == (3 * 6 - 2) * (3 * 4 - 2));
  CHECK(row_length_counts(nine) == std::map<Index, Index>{{4, 4}, {6, 12}, {9, 8}});
  const auto seven = generated("stencil3d", {{"nx", "4"}, {"ny", "5"}, {"nz", "3"}});
  CHECK(seven.rows() == 60);
  CHECK(seven.nnz() == 7 * 60 - 2 * (4 * 5 + 5 * 3 + 4 * 3));
  CHECK(ds::compute_features(seven).bandwidth == 20);
  const auto cube =
      generated("stencil3d", {{"nx", "4"}, {"ny", "5"}, {"nz", "3"}, {"points", "27"}});
  CHECK(cube.nnz() == (3 * 4 - 2) * (3 * 5 - 2) * (3 * 3 - 2));
  CHECK(row_length_counts(cube).rbegin()->first == 27);
  CHECK(row_length_counts(cube).begin()->first == 8);  // a corner
  // Symmetric pattern: (i, j) stored iff (j, i) stored.
  std::set<std::pair<Index, Index>> entries;
  for (const auto& t : cube.to_triplets()) entries.insert({t.row, t.col});
  for (const auto& [i, j] : entries) CHECK(entries.count({j, i}) == 1);
}

TEST_CASE("banded, blockdiag, arrow, diagonal and column have their shapes",
          "[datasets][generators]") {
  const auto band = generated("banded", {{"n", "50"}, {"bandwidth", "3"}});
  CHECK(band.nnz() == 50 * 7 - 3 * 4);
  CHECK(ds::compute_features(band).bandwidth == 3);
  const auto sparse_band =
      generated("banded", {{"n", "400"}, {"bandwidth", "10"}, {"fill", "0.25"}});
  const auto f = ds::compute_features(sparse_band);
  CHECK(f.bandwidth <= 10);
  CHECK(f.diagonal_share * static_cast<double>(f.nnz) == Approx(400));
  const double off = static_cast<double>(sparse_band.nnz() - 400);
  CHECK(off / (400.0 * 20 - 110) == Approx(0.25).margin(0.03));

  const auto blocks = generated("blockdiag", {{"blocks", "5"}, {"block_size", "4"}});
  CHECK(blocks.nnz() == 5 * 16);
  CHECK(ds::compute_features(blocks).dense_block_share == 1.0);
  CHECK(ds::compute_features(blocks).bandwidth == 3);

  const auto arrow = generated("arrow", {{"n", "10"}, {"width", "2"}});
  CHECK(arrow.nnz() == 2 * 10 + 8 * 3);
  CHECK(arrow.row_length(0) == 10);
  CHECK(arrow.row_length(5) == 3);

  const auto diag = generated("diagonal", {{"n", "9"}});
  CHECK(ds::compute_features(diag).diagonal_share == 1.0);
  CHECK(generated("diagonal", {{"n", "0"}}) == SparseMatrix());

  const auto column = generated("column", {{"n", "12"}});
  CHECK(column.rows() == 12);
  CHECK(column.cols() == 1);
  CHECK(column.nnz() == 12);
}

TEST_CASE("uniform holds exactly the requested entries, distinct and in range",
          "[datasets][generators]") {
  const auto per_row =
      generated("uniform", {{"rows", "300"}, {"cols", "40"}, {"nnz_per_row", "12"}});
  CHECK(row_length_counts(per_row) == std::map<Index, Index>{{12, 300}});
  const auto dense = generated("uniform", {{"rows", "5"}, {"cols", "7"}, {"nnz_per_row", "7"}});
  CHECK(dense.nnz() == 35);
  const auto total =
      generated("uniform", {{"rows", "100"}, {"cols", "3"}, {"nnz", "290"}, {"seed", "4"}});
  CHECK(total.nnz() == 290);
  CHECK(ds::compute_features(total).row_nnz_max == 3);
  const auto wide =
      generated("uniform", {{"rows", "1"}, {"cols", "100000"}, {"nnz_per_row", "1000"}});
  CHECK(wide.nnz() == 1000);
  CHECK(wide.col_idx().back() > 90000);  // spread over the row, not bunched at its start
}

TEST_CASE("rmat folds duplicates and is skewed", "[datasets][generators]") {
  const auto a = generated("rmat", {{"scale", "12"}, {"edge_factor", "8"}, {"seed", "1"}});
  CHECK(a.rows() == 4096);
  CHECK(a.cols() == 4096);
  CHECK(a.nnz() < 8 * 4096);
  CHECK(a.nnz() > 4 * 4096);
  const auto f = ds::compute_features(a);
  CHECK(f.row_nnz_gini > 0.5);
  CHECK(f.row_nnz_max > 20 * f.row_nnz_mean);
  CHECK(a.row_length(0) == f.row_nnz_max);  // unpermuted: quadrant a keeps the heaviest row first
  const auto permuted =
      generated("rmat", {{"scale", "12"}, {"edge_factor", "8"}, {"seed", "1"}, {"permute", "1"}});
  CHECK(permuted.nnz() == a.nnz());  // a relabelling keeps the edge set's size
  CHECK(ds::compute_features(permuted).row_nnz_max == f.row_nnz_max);
  // a = 1 puts every edge at (0, 0).
  CHECK(generated("rmat", {{"scale", "6"}, {"a", "1"}, {"b", "0"}, {"c", "0"}}).nnz() == 1);
  // d is derived as 1 - a - b - c when absent.
  CHECK_NOTHROW(generated("rmat", {{"scale", "4"}, {"a", "0.25"}, {"b", "0.25"}, {"c", "0.25"}}));
}

TEST_CASE("modifiers: empty rows, one huge row", "[datasets][generators]") {
  const auto a = generated(
      "stencil2d",
      {{"nx", "40"}, {"ny", "25"}, {"empty_rows", "0.3"}, {"huge_row", "600"}, {"seed", "3"}});
  const auto f = ds::compute_features(a);
  CHECK(f.empty_rows == 300);
  CHECK(f.empty_row_share == Approx(0.3));
  CHECK(f.row_nnz_max == 600);
  CHECK(row_length_counts(a)[600] == 1);
  // The huge row spreads over the columns: first column 0, then about cols / 600 apart.
  Index huge = 0;
  while (a.row_length(huge) != 600) ++huge;
  const auto cols = a.col_idx().subspan(a.row_ptr()[huge], 600);
  CHECK(cols.front() == 0);
  CHECK(cols.back() == 998);  // floor(599 * 1000 / 600)
  // A huge row longer than the matrix is wide is the whole row.
  const auto full = generated(
      "uniform", {{"rows", "20"}, {"cols", "50"}, {"nnz_per_row", "2"}, {"huge_row", "1000"}});
  CHECK(ds::compute_features(full).row_nnz_max == 50);
  // Every row emptied, and rounding of the share.
  CHECK(generated("diagonal", {{"n", "8"}, {"empty_rows", "1"}}).nnz() == 0);
  CHECK(ds::compute_features(generated("diagonal", {{"n", "10"}, {"empty_rows", "0.25"}}))
            .empty_rows == 3);
  // The huge row is never the one emptied.
  const auto both = generated("column", {{"n", "5"}, {"empty_rows", "1"}, {"huge_row", "1"}});
  CHECK(both.nnz() == 1);
}

TEST_CASE("specs: canonical URI, validation and messages naming the URI and the key",
          "[datasets][generators]") {
  const GeneratorSpec spec{"rmat", {{"seed", "3"}, {"scale", "16"}, {"edge_factor", "8"}}};
  CHECK(spec.uri() == "gen-v1/rmat?edge_factor=8&scale=16&seed=3");
  CHECK(GeneratorSpec{"diagonal", {}}.uri() == "gen-v1/diagonal");

  CHECK_THAT(spec_error("spiral", {}),
             has_substring("gen-v1/spiral: unknown generator kind 'spiral'"));
  CHECK_THAT(spec_error("rmat", {{"scale", "4"}, {"size", "3"}}),
             has_substring("gen-v1/rmat?scale=4&size=3: key 'size' is not a key of kind 'rmat'"));
  CHECK_THAT(spec_error("stencil2d", {{"nx", "ten"}}),
             has_substring("gen-v1/stencil2d?nx=ten: key 'nx' must be an integer"));
  CHECK_THAT(spec_error("stencil2d", {{"nx", "10x"}}), has_substring("key 'nx'"));
  CHECK_THAT(spec_error("stencil2d", {{"nx", "-1"}}),
             has_substring("key 'nx' must be an integer in [0, "));
  CHECK_THAT(spec_error("stencil2d", {{"points", "7"}}),
             has_substring("key 'points' must be 5 or 9, not 7"));
  CHECK_THAT(spec_error("stencil3d", {{"points", "9"}}),
             has_substring("key 'points' must be 7 or 27"));
  CHECK_THAT(spec_error("banded", {{"fill", "1.5"}}),
             has_substring("key 'fill' must be a number in [0, 1]"));
  CHECK_THAT(spec_error("banded", {{"fill", "nan"}}), has_substring("key 'fill'"));
  CHECK_THAT(spec_error("uniform", {{"nnz", "5"}, {"nnz_per_row", "2"}}),
             has_substring("key 'nnz' excludes"));
  CHECK_THAT(spec_error("uniform", {{"rows", "3"}, {"cols", "2"}, {"nnz", "7"}}),
             has_substring("more than rows * cols = 6"));
  CHECK_THAT(spec_error("uniform", {{"cols", "5"}}),
             has_substring("key 'nnz_per_row' is 8, more than cols = 5"));
  CHECK_THAT(spec_error("rmat", {{"scale", "31"}}),
             has_substring("key 'scale' must be an integer in [0, 30]"));
  CHECK_THAT(spec_error("rmat", {{"a", "0.9"}, {"b", "0.2"}}),
             has_substring("key 'b' makes a + b + c"));
  CHECK_THAT(spec_error("rmat", {{"d", "0.2"}}), has_substring("key 'd' makes a + b + c + d"));
  CHECK_THAT(spec_error("rmat", {{"permute", "yes"}}),
             has_substring("key 'permute' must be 0 or 1"));
  CHECK_THAT(spec_error("arrow", {{"n", "5"}, {"width", "6"}}),
             has_substring("key 'width' is 6, more than n = 5"));
  CHECK_THAT(spec_error("diagonal", {{"empty_rows", "-0.1"}}), has_substring("key 'empty_rows'"));
  CHECK_THAT(spec_error("diagonal", {{"seed", "-1"}}),
             has_substring("key 'seed' must be an unsigned"));
  // Too large for 32-bit indices: refused before allocating, naming the key that made it so.
  CHECK_THAT(spec_error("stencil2d", {{"nx", "100000"}, {"ny", "100000"}}),
             has_substring("key 'ny' gives rows = 10000000000"));
  CHECK_THAT(
      spec_error("uniform", {{"rows", "100000000"}, {"cols", "100000000"}, {"nnz_per_row", "100"}}),
      has_substring("key 'nnz_per_row' gives up to nnz"));
  CHECK_THAT(spec_error("rmat", {{"scale", "30"}, {"edge_factor", "16"}}),
             has_substring("key 'edge_factor'"));
  CHECK_NOTHROW(ds::validate(spec));
}

TEST_CASE("generate(MatrixUri) takes gen-v1 URIs and refuses others", "[datasets][generators]") {
  ds::MatrixUri uri;
  uri.scheme = ds::MatrixUri::Scheme::generated;
  uri.version = "v1";
  uri.kind = "stencil2d";
  uri.params = {{"nx", "4"}, {"ny", "3"}};
  CHECK(ds::generate(uri).digest() == "1f7d79d9586c91fb");
  CHECK(ds::GeneratorSpec::from_uri(uri).uri() == "gen-v1/stencil2d?nx=4&ny=3");
  uri.version = "v2";
  CHECK_THROWS_WITH(ds::generate(uri), has_substring("unsupported generator version 'v2'"));
  ds::MatrixUri suitesparse;
  suitesparse.group = "HB";
  suitesparse.name = "west0067";
  suitesparse.version = "v1";
  CHECK_THROWS_WITH(ds::generate(suitesparse),
                    has_substring("suitesparse-v1/HB/west0067: not a generated-matrix URI"));
  uri.version = "v1";
  uri.params["bogus"] = "1";
  CHECK_THROWS_WITH(ds::GeneratorSpec::from_uri(uri), has_substring("key 'bogus'"));
  // Through the URI parser of task.hpp: the spec's canonical spelling is the URI's.
  const auto parsed = ds::MatrixUri::parse("gen-v1/rmat?seed=3&scale=6&edge_factor=8");
  CHECK(ds::GeneratorSpec::from_uri(parsed).uri() == parsed.str());
  CHECK(ds::generate(parsed) ==
        generated("rmat", {{"scale", "6"}, {"edge_factor", "8"}, {"seed", "3"}}));
}

TEST_CASE("every documented kind and key is accepted", "[datasets][generators]") {
  CHECK(ds::generator_kinds().size() == 15);
  // kron's base, served from memory.
  const ds::MatrixLoader loader = [](const std::string&) {
    return std::make_shared<const SparseMatrix>(generated("diagonal", {{"n", "3"}}));
  };
  for (const auto& kind : ds::generator_kinds()) {
    INFO(kind.name);
    CHECK_FALSE(kind.summary.empty());
    // Every key with a literal default, given its default explicitly, gives the default matrix.
    std::map<std::string, std::string> small_dims;
    for (const auto& key : kind.keys) {
      if (key.name == "n" || key.name == "rows" || key.name == "nx") small_dims[key.name] = "6";
      if (key.name == "scale" || key.name == "blocks") small_dims[key.name] = "3";
    }
    std::map<std::string, std::string> with_defaults = small_dims;
    for (const auto& key : kind.keys) {
      if (!key.default_value.empty() && small_dims.count(key.name) == 0) {
        with_defaults[key.name] = key.default_value;
      }
    }
    for (const auto& key : ds::common_generator_keys()) with_defaults[key.name] = key.default_value;
    if (kind.name == "uniform") small_dims["cols"] = with_defaults["cols"] = "10";
    CHECK(generated(kind.name, small_dims, loader) == generated(kind.name, with_defaults, loader));
  }
}
