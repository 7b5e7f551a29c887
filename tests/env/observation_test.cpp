// Matrix observations: the sinusoidal embedding against hand-computed values, stratified sampling
// that represents every row block, all entries when nnz <= K, seeded determinism, and the feature
// vector.
#include "sparserl/env/observation.hpp"

#include <cmath>
#include <set>

#include "catch.hpp"
#include "env_test_support.hpp"
#include "sparserl/datasets/features.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::env;

// 10 dense rows of 1000 entries on top, then 10,000 rows of 1 entry: half the entries in 0.1% of
// the rows.
datasets::SparseMatrix top_heavy() {
  std::vector<datasets::Triplet> t;
  for (int r = 0; r < 10; ++r) {
    for (int c = 0; c < 1000; ++c) t.push_back({r, c * 10, 1.0});
  }
  for (int r = 10; r < 10010; ++r) t.push_back({r, r % 10000, 1.0});
  return datasets::SparseMatrix::from_triplets(10010, 10000, std::move(t));
}

datasets::Task task_of(datasets::Op op = datasets::Op::spmv) {
  datasets::Task t;
  t.uri = "gen-v1/diagonal?n=4";
  t.op = op;
  t.k = op == datasets::Op::spmm ? 32 : 1;
  return t;
}

}  // namespace

TEST_CASE("the sinusoidal embedding matches a hand-computed case", "[env][observation]") {
  // D = 8: each half has 4 values, PE(p) = [sin(p), cos(p), sin(p / 100), cos(p / 100)]
  // (10000^(2j/4) for j = 0, 1 is 1 and 100).
  std::vector<datasets::Triplet> t = {{3, 250, 1.0}};
  const auto a = datasets::SparseMatrix::from_triplets(10, 1000, std::move(t));
  ObservationConfig config;
  config.nnz_samples = 2;
  config.embedding_dim = 8;
  const MatrixObservation obs =
      observe_matrix(a, datasets::compute_features(a), task_of(), config, 1);
  REQUIRE(obs.count == 1);
  CHECK(obs.rows == std::vector<std::int32_t>{3, -1});
  CHECK(obs.cols == std::vector<std::int32_t>{250, -1});
  REQUIRE(obs.embedding.size() == 16);
  const float expected[8] = {0.14112000806f, -0.98999249660f, 0.02999550020f,
                             0.99955003374f, -0.97052801954f, 0.24098830529f,  // sin(250), cos(250)
                             0.59847214410f, -0.80114361555f};                 // sin(2.5), cos(2.5)
  for (int i = 0; i < 8; ++i) {
    INFO("component " << i);
    CHECK(obs.embedding[static_cast<std::size_t>(i)] == Approx(expected[i]).margin(1e-6));
  }
  for (int i = 8; i < 16; ++i)
    CHECK(obs.embedding[static_cast<std::size_t>(i)] == 0.0f);  // padding

  // Normalised: p = index / extent * scale = 3 / 10 * 100 = 30 and 250 / 1000 * 100 = 25.
  config.scaling = IndexScaling::normalized;
  config.scale = 100.0;
  const MatrixObservation norm =
      observe_matrix(a, datasets::compute_features(a), task_of(), config, 1);
  CHECK(norm.embedding[0] == Approx(std::sin(30.0)).margin(1e-6));
  CHECK(norm.embedding[2] == Approx(std::sin(0.3)).margin(1e-6));
  CHECK(norm.embedding[4] == Approx(std::sin(25.0)).margin(1e-6));
  CHECK(norm.embedding[7] == Approx(std::cos(0.25)).margin(1e-6));
}

TEST_CASE("stratified sampling represents every row block", "[env][observation]") {
  const auto a = top_heavy();
  const int k = 64;
  const auto row_ptr = a.row_ptr();
  SECTION("nonzeros: one draw in each stratum of nnz / K consecutive entries") {
    const SampledNonzeros s = sample_nonzeros(a, k, 5, Stratification::nonzeros);
    REQUIRE(s.rows.size() == static_cast<std::size_t>(k));
    // Map each sample back to its entry index and check the strata.
    std::vector<int> per_stratum(static_cast<std::size_t>(k), 0);
    for (std::size_t i = 0; i < s.rows.size(); ++i) {
      const auto r = s.rows[i];
      const auto cols =
          a.col_idx().subspan(static_cast<std::size_t>(row_ptr[static_cast<std::size_t>(r)]),
                              static_cast<std::size_t>(a.row_length(r)));
      const auto it = std::find(cols.begin(), cols.end(), s.cols[i]);
      REQUIRE(it != cols.end());  // a real entry
      const std::int64_t e = row_ptr[static_cast<std::size_t>(r)] + (it - cols.begin());
      const std::int64_t stratum = e * k / a.nnz();
      ++per_stratum[static_cast<std::size_t>(std::min<std::int64_t>(stratum, k - 1))];
    }
    for (int s2 = 0; s2 < k; ++s2) CHECK(per_stratum[static_cast<std::size_t>(s2)] == 1);
    // Half of the entries are in the 10 dense rows: about half of the samples, and the sparse
    // 10,000 rows get the other half.
    const auto top =
        std::count_if(s.rows.begin(), s.rows.end(), [](std::int32_t r) { return r < 10; });
    CHECK(top == 32);
    CHECK(std::is_sorted(s.rows.begin(), s.rows.end()));
  }
  SECTION("rows: every block of M / K rows with entries gets a draw") {
    const SampledNonzeros s = sample_nonzeros(a, k, 5, Stratification::rows);
    REQUIRE(s.rows.size() == static_cast<std::size_t>(k));
    std::set<std::int64_t> blocks;
    for (std::int32_t r : s.rows) blocks.insert(static_cast<std::int64_t>(r) * k / a.rows());
    CHECK(blocks.size() == static_cast<std::size_t>(k));
    std::set<std::pair<int, int>> distinct;
    for (std::size_t i = 0; i < s.rows.size(); ++i) distinct.insert({s.rows[i], s.cols[i]});
    CHECK(distinct.size() == s.rows.size());  // without replacement
  }
  SECTION("the same seed gives the same sample, another seed another") {
    const auto s1 = sample_nonzeros(a, k, 11, Stratification::nonzeros);
    const auto s2 = sample_nonzeros(a, k, 11, Stratification::nonzeros);
    const auto s3 = sample_nonzeros(a, k, 12, Stratification::nonzeros);
    CHECK(s1.rows == s2.rows);
    CHECK(s1.cols == s2.cols);
    CHECK((s1.rows != s3.rows || s1.cols != s3.cols));
  }
}

TEST_CASE("all entries are observed when nnz <= K", "[env][observation]") {
  const auto a = fixtures::small_matrix();
  ObservationConfig config;
  config.nnz_samples = 16;
  config.embedding_dim = 4;
  const MatrixObservation obs =
      observe_matrix(a, datasets::compute_features(a), task_of(), config, 3);
  REQUIRE(obs.count == a.nnz());
  const auto triplets = a.to_triplets();
  for (std::size_t i = 0; i < triplets.size(); ++i) {
    CHECK(obs.rows[i] == triplets[i].row);
    CHECK(obs.cols[i] == triplets[i].col);
  }
  for (std::size_t i = triplets.size(); i < 16; ++i) CHECK(obs.rows[i] == -1);
  CHECK(obs.embedding.size() == 16u * 4u);
  // An empty matrix observes nothing.
  const datasets::SparseMatrix empty;
  const MatrixObservation none =
      observe_matrix(empty, datasets::compute_features(empty), task_of(), config, 3);
  CHECK(none.count == 0);
}

TEST_CASE("the feature vector describes the pattern and the task", "[env][observation]") {
  const auto a = fixtures::small_matrix();
  const datasets::MatrixFeatures f = datasets::compute_features(a);
  const std::vector<float> spmv = feature_vector(f, task_of());
  const std::vector<float> spmm = feature_vector(f, task_of(datasets::Op::spmm));
  REQUIRE(spmv.size() == feature_names().size());
  CHECK(spmv[0] == Approx(std::log1p(6.0)));   // rows
  CHECK(spmv[2] == Approx(std::log1p(12.0)));  // nnz
  CHECK(spmv[9] == Approx(std::log1p(1.0)));   // one empty row
  CHECK(spmv[15] == 0.0f);
  CHECK(spmm[15] == 1.0f);
  CHECK(spmm[17] == Approx(std::log1p(32.0)));
  CHECK(feature_names()[8] == "row_nnz_gini");
}

TEST_CASE("invalid observation configs are refused", "[env][observation]") {
  ObservationConfig c;
  c.embedding_dim = 6;
  CHECK_THAT(*c.validate(), sparserl::testing::has_substring("multiple of 4"));
  c = {};
  c.nnz_samples = 0;
  CHECK(c.validate().has_value());
  c = {};
  c.scale = -1;
  CHECK(c.validate().has_value());
  CHECK(ObservationConfig{}.validate() == std::nullopt);
  CHECK(parse_index_scaling("normalized") == IndexScaling::normalized);
  CHECK(parse_stratification("rows") == Stratification::rows);
}
