// SparseMatrix construction: canonical form, duplicate folding, validation messages, digests.
#include <string>

#include "catch.hpp"
#include "sparserl/datasets/sparse_matrix.hpp"

using sparserl::datasets::InvalidMatrix;
using sparserl::datasets::SparseMatrix;
using sparserl::datasets::Triplet;
using sparserl::testing::has_substring;

TEST_CASE("from_triplets sorts, folds duplicates and keeps explicit zeros", "[datasets]") {
  std::int64_t folded = -1;
  auto m = SparseMatrix::from_triplets(3, 4, {{2, 1, 1.0}, {0, 3, 2.0}, {0, 1, 0.0}, {2, 1, 4.0}, {1, 0, -1.0}},
                                       &folded);
  CHECK(folded == 1);
  CHECK(m.rows() == 3);
  CHECK(m.cols() == 4);
  CHECK(m.nnz() == 4);
  CHECK(std::vector<int>(m.row_ptr().begin(), m.row_ptr().end()) == std::vector<int>{0, 2, 3, 4});
  CHECK(std::vector<int>(m.col_idx().begin(), m.col_idx().end()) == std::vector<int>{1, 3, 0, 1});
  CHECK(std::vector<double>(m.values().begin(), m.values().end()) == std::vector<double>{0.0, 2.0, -1.0, 5.0});
}

TEST_CASE("from_csr rejects non-canonical arrays with the broken invariant named", "[datasets]") {
  CHECK_THROWS_WITH(SparseMatrix::from_csr(2, 2, {0, 1}, {0}, {1.0}),
                    has_substring("row_ptr has 2 entries"));
  CHECK_THROWS_WITH(SparseMatrix::from_csr(2, 2, {0, 2, 2}, {1, 0}, {1.0, 1.0}),
                    has_substring("strictly increasing"));
  CHECK_THROWS_WITH(SparseMatrix::from_csr(2, 2, {0, 1, 1}, {2}, {1.0}),
                    has_substring("outside [0, 2)"));
  CHECK_THROWS_AS(SparseMatrix::from_triplets(2, 2, {{2, 0, 1.0}}), InvalidMatrix);
}

TEST_CASE("digests are fixed for a fixed matrix and see values and pattern", "[datasets]") {
  auto a = SparseMatrix::from_triplets(2, 2, {{0, 0, 1.0}, {1, 1, 2.0}});
  auto b = SparseMatrix::from_triplets(2, 2, {{0, 0, 1.0}, {1, 1, 3.0}});
  CHECK(a.digest().size() == 16);
  CHECK(a.digest() != b.digest());
  CHECK(a.pattern_digest() == b.pattern_digest());
  CHECK(SparseMatrix().digest() == SparseMatrix().digest());
}
