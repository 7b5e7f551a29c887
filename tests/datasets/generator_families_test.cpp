// The generator families of the large regime (road, circuit, lp, lognormal, blocksparse, kron) and
// the common permute modifier: pinned digests, the structure each family promises (checked in ways
// that a broken generator would fail: symmetry and degrees, dense row and column lengths, the
// Pareto tail, log-normal moments, BSR fill, the Kronecker definition, a true symmetric
// permutation), determinism, and the messages of bad specs.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "datasets_test_support.hpp"
#include "sparserl/datasets/features.hpp"
#include "sparserl/datasets/formats.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "test_support.hpp"

namespace ds = sparserl::datasets;
using ds::GeneratorSpec;
using ds::Index;
using ds::SparseMatrix;
using namespace sparserl::testing;

namespace {

using Params = std::map<std::string, std::string>;

// A small base for kron, known entry by entry: 3 x 4 with an empty row.
//   [x . x .]
//   [. . . .]
//   [x x . x]
std::shared_ptr<const SparseMatrix> small_base() {
  return std::make_shared<const SparseMatrix>(SparseMatrix::from_triplets(
      3, 4, {{0, 0, 1.0}, {0, 2, 2.0}, {2, 0, 3.0}, {2, 1, 4.0}, {2, 3, 5.0}}));
}

// A loader that serves small_base() for one URI and refuses every other.
ds::MatrixLoader small_loader(std::vector<std::string>* asked = nullptr) {
  return [asked](const std::string& uri) -> std::shared_ptr<const SparseMatrix> {
    if (asked != nullptr) asked->push_back(uri);
    if (uri != "suitesparse-v1/Test/small") throw std::runtime_error("no matrix " + uri);
    return small_base();
  };
}

std::set<std::pair<Index, Index>> entries_of(const SparseMatrix& a) {
  std::set<std::pair<Index, Index>> out;
  for (const auto& t : a.to_triplets()) out.insert({t.row, t.col});
  return out;
}

std::vector<Index> row_lengths(const SparseMatrix& a) {
  std::vector<Index> out(static_cast<std::size_t>(a.rows()));
  for (Index i = 0; i < a.rows(); ++i) out[i] = a.row_length(i);
  return out;
}

std::vector<Index> column_lengths(const SparseMatrix& a) {
  std::vector<Index> out(static_cast<std::size_t>(a.cols()), 0);
  for (Index c : a.col_idx()) ++out[c];
  return out;
}

std::vector<Index> sorted(std::vector<Index> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// The lengths above `threshold` (circuit's dense rows or columns), longest first.
std::vector<Index> longest(const std::vector<Index>& lengths, Index threshold) {
  std::vector<Index> out;
  for (Index len : lengths) {
    if (len > threshold) out.push_back(len);
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

// Entries (i, j) of `a` moved back by the inverse of a relabelling: (i, j) -> (from_row, from_col).
std::set<std::pair<Index, Index>> relabelled_back(const SparseMatrix& a, const ds::Relabelling& r) {
  std::vector<Index> row_from(r.rows_to.size()), col_from(r.cols_to.size());
  for (std::size_t i = 0; i < r.rows_to.size(); ++i) row_from[r.rows_to[i]] = static_cast<Index>(i);
  for (std::size_t j = 0; j < r.cols_to.size(); ++j) col_from[r.cols_to[j]] = static_cast<Index>(j);
  std::set<std::pair<Index, Index>> out;
  for (const auto& t : a.to_triplets()) out.insert({row_from[t.row], col_from[t.col]});
  return out;
}

}  // namespace

TEST_CASE("family generators give fixed digests", "[datasets][generators]") {
  // Pinned from this implementation: a change to a family's output or draw order shows here.
  const ds::MatrixLoader loader = small_loader();
  const sparserl::testing::PinnedDigests pins = {
      {{"road", {{"nx", "6"}, {"ny", "5"}, {"long_range", "0.1"}, {"seed", "2"}}},
       "16b1306d6bc0c932"},
      {{"circuit", {{"n", "40"}, {"dense_len", "0.5"}, {"seed", "3"}}}, "95348ca2db382bb7"},
      {{"lp", {{"rows", "12"}, {"alpha", "1.1"}, {"seed", "4"}}}, "fa599526acaa23b1"},
      {{"lognormal", {{"rows", "12"}, {"cols", "40"}, {"median", "5"}, {"seed", "5"}}},
       "085c80688c116ece"},
      {{"blocksparse", {{"block", "3"}, {"block_rows", "4"}, {"blocks_per_row", "2"}}},
       "bfc9873556ff1558"},
      {{"blocksparse",
        {{"block", "3"}, {"block_rows", "4"}, {"align", "0"}, {"fill", "0.5"}, {"seed", "6"}}},
       "1b0e3c2ad6e48d50"},
      {{"kron", {{"group", "Test"}, {"name", "small"}, {"n", "5"}, {"per_row", "2"}}},
       "a6ecdb3bdde6fc3e"},
      {{"kron",
        {{"group", "Test"}, {"name", "small"}, {"n", "5"}, {"per_row", "2"}, {"outer", "random"}}},
       "d3bb026be865beba"},
      {{"stencil2d", {{"nx", "4"}, {"ny", "3"}, {"permute", "1"}}}, "d89c65e103c828ab"},
      {{"lp", {{"rows", "12"}, {"seed", "4"}, {"permute", "1"}, {"empty_rows", "0.25"}}},
       "45ff4d4c47a3c7e0"},
  };
  sparserl::testing::check_pinned_digests(pins, loader);
}

TEST_CASE("family generators: different seeds, different patterns", "[datasets][generators]") {
  const ds::MatrixLoader loader = small_loader();
  const std::vector<std::pair<std::string, Params>> specs = {
      {"road", {}},
      {"circuit", {{"n", "500"}}},
      {"lp", {}},
      {"lognormal", {}},
      {"blocksparse", {}},
      {"blocksparse", {{"align", "0"}}},
      {"kron", {{"group", "Test"}, {"name", "small"}}},
      {"stencil3d", {{"nx", "5"}, {"permute", "1"}}},
  };
  for (const auto& [kind, params] : specs) {
    INFO(kind);
    Params one = params, two = params;
    one["seed"] = "1";
    two["seed"] = "2";
    CHECK(generated(kind, one, loader).pattern_digest() !=
          generated(kind, two, loader).pattern_digest());
  }
}

TEST_CASE("road is a symmetric grid-like graph with the diagonal", "[datasets][generators]") {
  const Index nx = 300, ny = 200, n = nx * ny;
  const auto a = generated("road", {{"nx", "300"}, {"ny", "200"}, {"seed", "7"}});
  REQUIRE(a.rows() == n);
  REQUIRE(a.cols() == n);
  const auto entries = entries_of(a);
  for (const auto& [i, j] : entries) CHECK(entries.count({j, i}) == 1);
  for (Index i = 0; i < n; ++i) CHECK(entries.count({i, i}) == 1);
  // keep = 0.7: 2 (nx ny) - nx - ny grid edges, each kept with 0.7, two entries each; plus the
  // 60 long-range edges (0.001 per vertex).
  const double grid_edges = 2.0 * n - nx - ny;
  const double mean_degree = static_cast<double>(a.nnz() - n) / n;
  CHECK(mean_degree == Approx(2 * 0.7 * grid_edges / n).margin(0.03));
  CHECK(mean_degree > 2.0);
  CHECK(mean_degree < 4.0);
  std::int64_t long_range = 0, degree_max = 0;
  for (Index i = 0; i < n; ++i)
    degree_max = std::max<std::int64_t>(degree_max, a.row_length(i) - 1);
  for (const auto& [i, j] : entries) {
    const Index d = std::abs(i - j);
    if (d != 0 && d != 1 && d != nx) ++long_range;
  }
  CHECK(long_range <= 2 * 60);
  CHECK(long_range >= 2 * 50);  // only a rare pair lands on a grid neighbour
  CHECK(degree_max <= 6);       // 4 grid edges, long-range edges rarely meet
  // keep = 1 and no long-range edges: exactly the 5-point stencil.
  CHECK(entries_of(
            generated("road", {{"nx", "9"}, {"ny", "4"}, {"keep", "1"}, {"long_range", "0"}})) ==
        entries_of(generated("stencil2d", {{"nx", "9"}, {"ny", "4"}})));
  // keep = 0: the diagonal and the long-range edges alone.
  CHECK(generated("road", {{"nx", "30"}, {"keep", "0"}, {"long_range", "0"}}).nnz() == 900);
}

TEST_CASE("circuit has its dense rows and columns over a near-diagonal bulk",
          "[datasets][generators]") {
  const Index n = 20000;
  const auto a = generated("circuit", {{"n", "20000"},
                                       {"dense_rows", "3"},
                                       {"dense_cols", "2"},
                                       {"dense_len", "0.2"},
                                       {"seed", "11"}});
  // Dense row or column k holds floor(0.2 * 20000 / (k + 1)) entries of its own.
  const std::vector<Index> expected = {4000, 2000, 1333};
  // A dense row also keeps its bulk (at most 1 + near + far = 4) and meets the dense columns (2).
  const std::vector<Index> long_rows = longest(row_lengths(a), 100);
  REQUIRE(long_rows.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) {
    CHECK(long_rows[k] >= expected[k]);
    CHECK(long_rows[k] <= expected[k] + 4 + 2);
  }
  // A dense column also holds the bulk entries that land in it (a few) and the dense rows' (3).
  const std::vector<Index> long_cols = longest(column_lengths(a), 100);
  REQUIRE(long_cols.size() == 2);
  for (std::size_t k = 0; k < 2; ++k) {
    CHECK(long_cols[k] >= expected[k]);
    CHECK(long_cols[k] <= expected[k] + 40);
  }
  // The bulk: every other row holds the diagonal, at most near + far more, and the dense columns.
  std::int64_t near_entries = 0, bulk = 0;
  for (Index i = 0; i < n; ++i) {
    if (a.row_length(i) > 100) continue;
    CHECK(a.row_length(i) >= 1);
    CHECK(a.row_length(i) <= 1 + 2 + 1 + 2);
    for (Index e = a.row_ptr()[i]; e < a.row_ptr()[i + 1]; ++e) {
      ++bulk;
      if (std::abs(a.col_idx()[e] - i) <= 8) ++near_entries;
    }
  }
  // Diagonal and near entries: about 3 of the 4.3 entries of a bulk row.
  CHECK(static_cast<double>(near_entries) / static_cast<double>(bulk) > 0.6);
  const auto f = ds::compute_features(a);
  CHECK(f.row_nnz_max > 100 * f.row_nnz_mean);
}

TEST_CASE("lp is wide with Pareto row lengths", "[datasets][generators]") {
  const Index rows = 40000;
  const auto a =
      generated("lp", {{"rows", "40000"}, {"min_len", "2"}, {"alpha", "1.2"}, {"seed", "13"}});
  CHECK(a.rows() == rows);
  CHECK(a.cols() == 4 * rows);
  CHECK(a.rows() < a.cols());
  const auto f = ds::compute_features(a);
  CHECK(f.row_nnz_min >= 2);
  CHECK(f.row_nnz_max > 20 * f.row_nnz_mean);  // heavy-tailed: a wide spread of lengths
  // P(L >= 2 t) = P(U^(-1/alpha) >= t) = t^-alpha for integer t (L = floor(2 U^(-1/alpha))).
  for (const double t : {2.0, 10.0, 50.0}) {
    INFO(t);
    std::int64_t at_least = 0;
    for (Index i = 0; i < rows; ++i) at_least += a.row_length(i) >= 2 * t ? 1 : 0;
    const double share = static_cast<double>(at_least) / rows;
    const double expected = std::pow(t, -1.2);
    CHECK(share == Approx(expected).margin(4 * std::sqrt(expected / rows) + 1e-4));
  }
  // Columns are distinct within a row (a canonical matrix) and spread over the width.
  CHECK(*std::max_element(a.col_idx().begin(), a.col_idx().end()) > 4 * rows - 100);
  // max_len caps the longest rows.
  const auto capped = generated("lp", {{"rows", "5000"}, {"alpha", "0.5"}, {"max_len", "300"}});
  CHECK(ds::compute_features(capped).row_nnz_max == 300);
  CHECK(generated("lp", {{"rows", "10"}, {"cols", "7"}}).cols() == 7);
}

TEST_CASE("lognormal rows have log-normal lengths", "[datasets][generators]") {
  const auto a = generated(
      "lognormal",
      {{"rows", "50000"}, {"cols", "200000"}, {"median", "40"}, {"sigma", "0.8"}, {"seed", "17"}});
  double sum = 0.0, sum_sq = 0.0;
  for (Index len : row_lengths(a)) {
    const double l = std::log(static_cast<double>(len));
    sum += l;
    sum_sq += l * l;
  }
  const double mean = sum / a.rows();
  const double std_dev = std::sqrt(sum_sq / a.rows() - mean * mean);
  CHECK(mean == Approx(std::log(40.0)).margin(0.02));
  CHECK(std_dev == Approx(0.8).margin(0.02));
  // The median row length.
  auto lengths = row_lengths(a);
  std::nth_element(lengths.begin(), lengths.begin() + lengths.size() / 2, lengths.end());
  CHECK(lengths[lengths.size() / 2] == Approx(40).margin(2));
  // sigma = 0: every row holds round(median); lengths are at least 1 and at most max_len.
  CHECK(sorted(row_lengths(generated("lognormal", {{"median", "6.5"}, {"sigma", "0"}}))).front() ==
        7);
  const auto clipped =
      generated("lognormal", {{"median", "0.01"}, {"sigma", "3"}, {"max_len", "20"}});
  CHECK(ds::compute_features(clipped).row_nnz_min == 1);
  CHECK(ds::compute_features(generated("lognormal", {{"median", "1000"}, {"max_len", "20"}}))
            .row_nnz_min == 20);
}

TEST_CASE("blocksparse: aligned blocks convert to BSR without fill, shifted ones with fill",
          "[datasets][generators]") {
  const Params base = {{"block", "4"}, {"block_rows", "300"}, {"blocks_per_row", "6"}};
  const auto aligned = generated("blocksparse", base);
  CHECK(aligned.rows() == 1200);
  CHECK(aligned.cols() == 1200);
  CHECK(aligned.nnz() == 300 * 6 * 16);
  for (Index i = 0; i < aligned.rows(); ++i) CHECK(aligned.row_length(i) == 24);
  const auto bsr = ds::to_bsr(aligned, 4, 4);
  CHECK(bsr.nnzb() * 16 == aligned.nnz());  // every block full: no fill
  CHECK(ds::compute_features(aligned).dense_block_share == 1.0);

  Params shifted_params = base;
  shifted_params["align"] = "0";
  const auto shifted = generated("blocksparse", shifted_params);
  CHECK(shifted.rows() == 1200);
  CHECK(shifted.nnz() <= 300 * 6 * 16);
  CHECK(shifted.nnz() > 300 * 6 * 16 * 8 / 10);  // cut at the edges and folded overlaps only
  const double fill = static_cast<double>(ds::to_bsr(shifted, 4, 4).nnzb() * 16) /
                      static_cast<double>(shifted.nnz());
  CHECK(fill > 2.0);  // a shifted block covers up to 4 grid blocks: (1 + 3/4)^2 = 3.06 expected
  CHECK(fill < 4.0);

  Params half = base;
  half["fill"] = "0.5";
  const auto sparse_blocks = generated("blocksparse", half);
  CHECK(static_cast<double>(sparse_blocks.nnz()) / (300 * 6 * 16) == Approx(0.5).margin(0.02));
  CHECK(ds::to_bsr(sparse_blocks, 4, 4).nnzb() <= 300 * 6);
  // Rectangular: block_cols.
  const auto wide =
      generated("blocksparse", {{"block", "2"}, {"block_rows", "3"}, {"block_cols", "10"}});
  CHECK(wide.cols() == 20);
  CHECK(wide.nnz() == 3 * 4 * 4);
}

TEST_CASE("kron is the Kronecker product of the real pattern and a random one",
          "[datasets][generators]") {
  std::vector<std::string> asked;
  const ds::MatrixLoader loader = small_loader(&asked);
  const Params params = {
      {"group", "Test"}, {"name", "small"}, {"n", "7"}, {"per_row", "3"}, {"seed", "19"}};
  const auto a = small_base();
  const auto k = generated("kron", params, loader);
  CHECK(asked == std::vector<std::string>{"suitesparse-v1/Test/small"});
  CHECK(k.rows() == 3 * 7);
  CHECK(k.cols() == 4 * 7);
  CHECK(k.nnz() == a->nnz() * 7 * 3);
  // The random factor B, read from the block of A's first entry (0, 0): rows 0..6, columns 0..6.
  std::set<std::pair<Index, Index>> b;
  for (const auto& [i, j] : entries_of(k)) {
    if (i < 7 && j < 7) b.insert({i, j});
  }
  CHECK(b.size() == 7 * 3);
  for (Index r = 0; r < 7; ++r) {
    CHECK(std::count_if(b.begin(), b.end(), [r](const auto& e) { return e.first == r; }) == 3);
  }
  // Definition: (i, j) in A and (p, q) in B <=> (i * 7 + p, j * 7 + q) in A (x) B.
  std::set<std::pair<Index, Index>> expected;
  for (const auto& [i, j] : entries_of(*a)) {
    for (const auto& [p, q] : b) expected.insert({i * 7 + p, j * 7 + q});
  }
  CHECK(entries_of(k) == expected);
  // outer = random: B (x) A with the same B (the same draws).
  Params random_outer = params;
  random_outer["outer"] = "random";
  const auto kr = generated("kron", random_outer, loader);
  CHECK(kr.rows() == 7 * 3);
  CHECK(kr.cols() == 7 * 4);
  std::set<std::pair<Index, Index>> expected_r;
  for (const auto& [p, q] : b) {
    for (const auto& [i, j] : entries_of(*a)) expected_r.insert({p * 3 + i, q * 4 + j});
  }
  CHECK(entries_of(kr) == expected_r);

  // Without a loader: a clear error; validation and loaded_matrices load nothing.
  CHECK_THROWS_WITH(
      generated("kron", params),
      has_substring("gen-v1/kron?group=Test&n=7&name=small&per_row=3&seed=19: kind 'kron' "
                    "builds on suitesparse-v1/Test/small and needs a matrix loader"));
  CHECK_NOTHROW(ds::validate(GeneratorSpec{"kron", {{"group", "Nowhere"}, {"name", "none"}}}));
  CHECK(ds::loaded_matrices(GeneratorSpec{"kron", params}) ==
        std::vector<std::string>{"suitesparse-v1/Test/small"});
  CHECK(ds::loaded_matrices(GeneratorSpec{"kron", {}}) ==
        std::vector<std::string>{"suitesparse-v1/HB/west0067"});
  CHECK(ds::loaded_matrices(GeneratorSpec{"road", {}}).empty());
  // A loader's failure goes through.
  CHECK_THROWS_WITH(generated("kron", {{"group", "HB"}, {"name", "west0067"}}, loader),
                    has_substring("no matrix suitesparse-v1/HB/west0067"));
}

TEST_CASE("kron loads its base through the matrix store", "[datasets][generators][shared]") {
  const auto shared = sparserl::testing::shared_matrices_dir();
  ds::StoreOptions options;
  options.indexes = {shared};
  ds::MatrixStore store(sparserl::testing::scratch_dir("kron_store"), options);
  const auto base = store.load("suitesparse-v1/HB/west0067");
  const auto k = store.load("gen-v1/kron?group=HB&name=west0067&n=10&per_row=2&seed=1");
  CHECK(k->rows() == base->rows() * 10);
  CHECK(k->nnz() == base->nnz() * 20);
  // The same matrix as generate() with the store's load as the loader.
  const ds::MatrixLoader loader = [&store](const std::string& uri) { return store.load(uri); };
  CHECK(*k ==
        generated(
            "kron",
            {{"group", "HB"}, {"name", "west0067"}, {"n", "10"}, {"per_row", "2"}, {"seed", "1"}},
            loader));
  // A base that no index lists: the store's MatrixNotFound names it.
  CHECK_THROWS_AS(store.load("gen-v1/kron?group=HB&name=nothere"), ds::MatrixNotFound);
}

TEST_CASE("permute is a symmetric permutation applied after the modifiers",
          "[datasets][generators]") {
  const Params grid = {{"nx", "7"}, {"ny", "5"}, {"seed", "23"}};
  Params permuted_params = grid;
  permuted_params["permute"] = "1";
  const auto a = generated("stencil2d", grid);
  const auto p = generated("stencil2d", permuted_params);
  CHECK(p.nnz() == a.nnz());
  CHECK(p.pattern_digest() != a.pattern_digest());
  CHECK(sorted(row_lengths(p)) == sorted(row_lengths(a)));
  // P A P^T keeps the diagonal on the diagonal and a symmetric pattern symmetric.
  const auto entries = entries_of(p);
  for (Index i = 0; i < p.rows(); ++i) CHECK(entries.count({i, i}) == 1);
  for (const auto& [i, j] : entries) CHECK(entries.count({j, i}) == 1);
  // The documented relabelling, undone, gives the unpermuted pattern back.
  const auto r = ds::permute_relabelling(23, 35, 35);
  CHECK(r.rows_to == r.cols_to);
  std::vector<Index> identity(35);
  std::iota(identity.begin(), identity.end(), 0);
  CHECK(sorted(r.rows_to) == identity);
  CHECK(r.rows_to != identity);
  CHECK(relabelled_back(p, r) == entries_of(a));
  // Values are drawn last, in row-major order of the final pattern: the same stream as unpermuted.
  CHECK(std::vector<double>(p.values().begin(), p.values().end()) ==
        std::vector<double>(a.values().begin(), a.values().end()));

  // After empty_rows: the emptied rows move with their labels.
  const Params lp = {{"rows", "300"}, {"cols", "500"}, {"empty_rows", "0.2"}, {"seed", "29"}};
  Params lp_permuted = lp;
  lp_permuted["permute"] = "1";
  const auto b = generated("lp", lp);
  const auto q = generated("lp", lp_permuted);
  CHECK(ds::compute_features(q).empty_rows == 60);
  // Rectangular: independent row and column permutations.
  const auto rr = ds::permute_relabelling(29, 300, 500);
  CHECK(rr.cols_to.size() == 500);
  CHECK(relabelled_back(q, rr) == entries_of(b));
  CHECK(sorted(column_lengths(q)) == sorted(column_lengths(b)));

  // rmat's own permute key is unchanged (its digests are pinned in generators_test.cpp); permute=0
  // is the default everywhere.
  CHECK(generated("road", {{"permute", "0"}}) == generated("road", {}));
}

TEST_CASE("family specs: messages naming the URI and the key", "[datasets][generators]") {
  CHECK_THAT(spec_error("road", {{"keep", "1.5"}}),
             has_substring("gen-v1/road?keep=1.5: key 'keep' must be a number in [0, 1]"));
  CHECK_THAT(spec_error("road", {{"nx", "100000"}, {"ny", "100000"}}),
             has_substring("key 'ny' gives rows = 10000000000"));
  CHECK_THAT(spec_error("road", {{"long_range", "11"}}), has_substring("key 'long_range'"));
  CHECK_THAT(spec_error("circuit", {{"n", "10"}, {"dense_rows", "11"}}),
             has_substring("key 'dense_rows' is 11, more than n = 10"));
  CHECK_THAT(spec_error("circuit", {{"n", "10"}, {"dense_cols", "12"}}),
             has_substring("key 'dense_cols' is 12, more than n = 10"));
  CHECK_THAT(spec_error("circuit", {{"dense_len", "2"}}), has_substring("key 'dense_len'"));
  CHECK_THAT(spec_error("circuit", {{"n", "1000000000"}, {"near", "5"}}),
             has_substring("key 'n' gives up to nnz"));
  CHECK_THAT(spec_error("lp", {{"alpha", "0"}}),
             has_substring("key 'alpha' must be a number in [0.05, 100]"));
  CHECK_THAT(spec_error("lp", {{"min_len", "0.5"}}), has_substring("key 'min_len'"));
  CHECK_THAT(spec_error("lp", {{"rows", "10"}, {"max_len", "41"}}),
             has_substring("key 'max_len' must be an integer in [0, 40]"));
  CHECK_THAT(spec_error("lp", {{"rows", "1000000"}, {"cols", "2000000000"}, {"min_len", "3000"}}),
             has_substring("key 'min_len' gives at least nnz = 3000000000"));
  CHECK_THAT(spec_error("lp", {{"rows", "1000000000"}}), has_substring("key 'rows' gives cols"));
  CHECK_THAT(spec_error("lognormal", {{"sigma", "-1"}}), has_substring("key 'sigma'"));
  CHECK_THAT(spec_error("lognormal", {{"median", "x"}}), has_substring("key 'median'"));
  CHECK_THAT(spec_error("blocksparse", {{"block_rows", "5"}, {"blocks_per_row", "6"}}),
             has_substring("key 'blocks_per_row' is 6, more than block_cols = 5"));
  CHECK_THAT(spec_error("blocksparse", {{"block", "0"}}),
             has_substring("key 'block' must be an integer in [1, 4096]"));
  CHECK_THAT(spec_error("blocksparse", {{"align", "2"}}),
             has_substring("key 'align' must be 0 or 1"));
  CHECK_THAT(spec_error("blocksparse", {{"block", "64"}, {"block_rows", "100000000"}}),
             has_substring("key 'block_rows' gives rows"));
  CHECK_THAT(spec_error("blocksparse",
                        {{"block", "64"}, {"block_rows", "1000000"}, {"blocks_per_row", "100"}}),
             has_substring("key 'blocks_per_row' gives up to nnz"));
  CHECK_THAT(spec_error("kron", {{"outer", "middle"}}),
             has_substring("key 'outer' must be real or random, not 'middle'"));
  CHECK_THAT(spec_error("kron", {{"n", "3"}, {"per_row", "4"}}),
             has_substring("key 'per_row' is 4, more than n = 3"));
  CHECK_THAT(spec_error("kron", {{"group", "H/B"}}), has_substring("key 'group' does not name"));
  CHECK_THAT(spec_error("kron", {{"name", "a b"}}), has_substring("key 'name' does not name"));
  CHECK_THAT(spec_error("kron", {{"scale", "2"}}),
             has_substring("key 'scale' is not a key of kind 'kron' (keys: group, name, n, "
                           "per_row, outer, seed, huge_row, empty_rows, permute)"));
  CHECK_THAT(spec_error("stencil2d", {{"permute", "2"}}),
             has_substring("gen-v1/stencil2d?permute=2: key 'permute' must be 0 or 1"));
  // Kron's sizes are checked once the base is loaded, before the product is allocated.
  CHECK_THROWS_WITH(
      generated("kron",
                {{"group", "Test"}, {"name", "small"}, {"n", "1000000000"}, {"per_row", "1"}},
                small_loader()),
      has_substring("key 'n' gives rows = 3000000000"));
}
