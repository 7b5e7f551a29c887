// Matrix features: hand-computed values on small matrices (the Gini limits, the dense-block
// threshold at the matrix edge, empty matrices), and the linear-pass implementation against a
// brute-force evaluation of the definitions in features.hpp on generated matrices with empty rows
// and a huge row.
#include "sparserl/datasets/features.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "catch.hpp"
#include "sparserl/datasets/generators.hpp"

namespace ds = sparserl::datasets;
using ds::Index;
using ds::SparseMatrix;

namespace {

SparseMatrix pattern(Index rows, Index cols, const std::vector<std::pair<Index, Index>>& entries) {
  std::vector<ds::Triplet> t;
  for (const auto& [i, j] : entries) t.push_back({i, j, 1.0});
  return SparseMatrix::from_triplets(rows, cols, std::move(t));
}

// The definitions of features.hpp evaluated the slow, obvious way.
ds::MatrixFeatures brute_force(const SparseMatrix& a) {
  ds::MatrixFeatures f;
  f.rows = a.rows();
  f.cols = a.cols();
  f.nnz = a.nnz();
  const double m = static_cast<double>(a.rows());
  if (a.rows() > 0 && a.cols() > 0) f.density = static_cast<double>(a.nnz()) / (m * a.cols());
  if (a.rows() == 0) return f;
  std::vector<double> len;
  for (Index i = 0; i < a.rows(); ++i) len.push_back(a.row_length(i));
  f.row_nnz_min = static_cast<std::int64_t>(*std::min_element(len.begin(), len.end()));
  f.row_nnz_max = static_cast<std::int64_t>(*std::max_element(len.begin(), len.end()));
  f.row_nnz_mean = static_cast<double>(a.nnz()) / m;
  double var = 0.0, pair_sum = 0.0;
  for (double x : len) var += (x - f.row_nnz_mean) * (x - f.row_nnz_mean);
  for (double x : len) {
    for (double y : len) pair_sum += std::abs(x - y);
  }
  f.row_nnz_std = std::sqrt(var / m);
  if (a.nnz() > 0) f.row_nnz_gini = pair_sum / (2 * m * m * f.row_nnz_mean);
  f.empty_rows = std::count(len.begin(), len.end(), 0.0);
  f.empty_row_share = static_cast<double>(f.empty_rows) / m;
  if (a.nnz() == 0) return f;
  std::map<std::pair<Index, Index>, int> blocks;
  double offsets = 0.0, diagonal = 0.0;
  for (const auto& t : a.to_triplets()) {
    const std::int64_t d = std::abs(std::int64_t{t.row} - t.col);
    f.bandwidth = std::max(f.bandwidth, d);
    offsets += static_cast<double>(d);
    diagonal += d == 0 ? 1 : 0;
    ++blocks[{t.row / 4, t.col / 4}];
  }
  double dense = 0.0;
  for (const auto& [block, count] : blocks) dense += count >= 8 ? count : 0;
  const double nnz = static_cast<double>(a.nnz());
  f.profile = offsets / nnz;
  f.diagonal_share = diagonal / nnz;
  f.dense_block_share = dense / nnz;
  return f;
}

void check_same(const ds::MatrixFeatures& got, const ds::MatrixFeatures& want) {
  const auto g = got.to_vector();
  const auto w = want.to_vector();
  REQUIRE(g.size() == w.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO(ds::feature_names()[i]);
    CHECK(g[i] == Approx(w[i]).epsilon(1e-12).margin(1e-12));
  }
}

}  // namespace

TEST_CASE("features of a small matrix, computed by hand", "[datasets][features]") {
  //   [1 . 2 .]
  //   [. 3 . .]
  //   [4 5 . 6]
  const auto a = pattern(3, 4, {{0, 0}, {0, 2}, {1, 1}, {2, 0}, {2, 1}, {2, 3}});
  const auto f = ds::compute_features(a);
  CHECK(f.rows == 3);
  CHECK(f.cols == 4);
  CHECK(f.nnz == 6);
  CHECK(f.density == Approx(0.5));
  CHECK(f.row_nnz_min == 1);
  CHECK(f.row_nnz_max == 3);
  CHECK(f.row_nnz_mean == Approx(2.0));
  CHECK(f.row_nnz_std == Approx(std::sqrt(2.0 / 3.0)));
  CHECK(f.row_nnz_gini == Approx(2.0 / 9.0));  // (|2-1| + |2-3| + |1-3|) * 2 / (2 * 9 * 2)
  CHECK(f.empty_rows == 0);
  CHECK(f.bandwidth == 2);
  CHECK(f.profile == Approx(1.0));  // (0 + 2 + 0 + 2 + 1 + 1) / 6
  CHECK(f.diagonal_share == Approx(2.0 / 6.0));
  CHECK(f.dense_block_share == 0.0);  // one 4 x 4 block holding 6 < 8 entries
}

TEST_CASE("Gini: equal rows give 0, one nonempty row among n gives (n-1)/n",
          "[datasets][features]") {
  CHECK(ds::compute_features(ds::generate(ds::GeneratorSpec{"diagonal", {{"n", "10"}}}))
            .row_nnz_gini == 0.0);
  CHECK(ds::compute_features(ds::generate(ds::GeneratorSpec{"blockdiag", {}})).row_nnz_gini == 0.0);
  const auto one_row = pattern(5, 5, {{2, 0}, {2, 3}, {2, 4}});
  const auto f = ds::compute_features(one_row);
  CHECK(f.row_nnz_gini == Approx(4.0 / 5.0));
  CHECK(f.empty_rows == 4);
  CHECK(f.empty_row_share == Approx(0.8));
  CHECK(f.row_nnz_min == 0);
  CHECK(f.row_nnz_std == Approx(std::sqrt((4 * 0.36 + 2.4 * 2.4) / 5)));  // mean 0.6
}

TEST_CASE("dense-block share: at least 8 of a 4 x 4 block, cut blocks at the edge",
          "[datasets][features]") {
  std::vector<std::pair<Index, Index>> entries;
  for (Index i = 0; i < 4; ++i) {
    for (Index j = 0; j < 4; ++j) entries.push_back({i, j});  // block (0, 0): 16, dense
  }
  for (Index k = 0; k < 8; ++k)
    entries.push_back({4 + k / 4, 4 + k % 4});                          // block (1, 1): 8, dense
  for (Index k = 0; k < 7; ++k) entries.push_back({k / 4, 4 + k % 4});  // block (0, 1): 7, not
  const auto f = ds::compute_features(pattern(8, 8, entries));
  CHECK(f.dense_block_share == Approx(24.0 / 31.0));

  // A full 5 x 5: block (0, 0) holds 16; the cut blocks hold 4, 4 and 1, under the threshold of 8.
  std::vector<std::pair<Index, Index>> full;
  for (Index i = 0; i < 5; ++i) {
    for (Index j = 0; j < 5; ++j) full.push_back({i, j});
  }
  CHECK(ds::compute_features(pattern(5, 5, full)).dense_block_share == Approx(16.0 / 25.0));
  // Blocks are aligned: a dense 4 x 4 at offset (2, 2) spreads 4 entries over each of four blocks.
  std::vector<std::pair<Index, Index>> shifted;
  for (Index i = 2; i < 6; ++i) {
    for (Index j = 2; j < 6; ++j) shifted.push_back({i, j});
  }
  CHECK(ds::compute_features(pattern(8, 8, shifted)).dense_block_share == 0.0);
}

TEST_CASE("features of empty matrices are all zero where undefined", "[datasets][features]") {
  const auto zero = ds::compute_features(SparseMatrix());
  for (double v : zero.to_vector()) CHECK(v == 0.0);
  const auto f = ds::compute_features(pattern(3, 7, {}));
  CHECK(f.rows == 3);
  CHECK(f.cols == 7);
  CHECK(f.empty_rows == 3);
  CHECK(f.empty_row_share == 1.0);
  CHECK(f.row_nnz_gini == 0.0);
  CHECK(f.density == 0.0);
  CHECK(f.diagonal_share == 0.0);
  const auto no_cols = ds::compute_features(pattern(4, 0, {}));
  CHECK(no_cols.density == 0.0);
  CHECK(no_cols.empty_rows == 4);
}

TEST_CASE("the feature vector has a fixed order with names", "[datasets][features]") {
  const auto& names = ds::feature_names();
  REQUIRE(names.size() == 15);
  CHECK(names.front() == "rows");
  CHECK(names[8] == "row_nnz_gini");
  CHECK(names.back() == "dense_block_share");
  const auto f = ds::compute_features(pattern(3, 4, {{0, 0}, {2, 3}}));
  const auto v = f.to_vector();
  REQUIRE(v.size() == names.size());
  CHECK(v[0] == 3);
  CHECK(v[1] == 4);
  CHECK(v[2] == 2);
  CHECK(v[11] == 1);  // bandwidth
  CHECK(v[9] == 1);   // empty_rows
}

TEST_CASE("the linear passes agree with the definitions on generated matrices",
          "[datasets][features]") {
  const std::vector<ds::GeneratorSpec> specs = {
      {"uniform",
       {{"rows", "300"},
        {"cols", "120"},
        {"nnz_per_row", "6"},
        {"empty_rows", "0.2"},
        {"huge_row", "100"},
        {"seed", "1"}}},
      {"rmat", {{"scale", "8"}, {"edge_factor", "6"}, {"seed", "2"}}},
      {"banded", {{"n", "200"}, {"bandwidth", "5"}, {"fill", "0.6"}}},
      {"blockdiag", {{"blocks", "7"}, {"block_size", "3"}}},
      {"arrow", {{"n", "90"}, {"width", "3"}, {"empty_rows", "0.5"}}},
      {"stencil3d", {{"nx", "5"}, {"points", "27"}}},
      {"column", {{"n", "33"}}},
      {"uniform", {{"rows", "1"}, {"cols", "50"}, {"nnz_per_row", "20"}}},
  };
  for (const auto& spec : specs) {
    INFO(spec.uri());
    const auto a = ds::generate(spec);
    check_same(ds::compute_features(a), brute_force(a));
  }
}
