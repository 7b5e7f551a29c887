// Features of a matrix's sparsity pattern: what observations feed the policy next to the sampled
// nonzeros, what `sparserl data info` prints and what reports group results by. They describe the
// pattern only (values are ignored; explicit zeros count as entries) and are computed in two linear
// passes, so they cost little next to reading the matrix. Definitions (M rows, N cols, nnz entries,
// l_i the length of row i; every share of nnz or M is 0 when nnz or M is 0):
//
//   density            nnz / (M * N)
//   row_nnz_min/max    min_i l_i, max_i l_i
//   row_nnz_mean       nnz / M
//   row_nnz_std        population standard deviation of l_i
//   row_nnz_gini       Gini coefficient of the row lengths, sum_i sum_j |l_i - l_j| / (2 M^2 mean):
//                      0 when all rows are equally long, (M-1)/M when one row holds every entry
//   empty_rows         number of rows with l_i = 0; empty_row_share = empty_rows / M
//   bandwidth          max |i - j| over the entries (i, j)
//   profile            mean |i - j| over the entries
//   diagonal_share     entries with i = j, divided by nnz
//   dense_block_share  the matrix is tiled into aligned 4 x 4 blocks (rows 4I..4I+3, columns
//                      4J..4J+3); a block is dense when it holds at least 8 of its 16 cells as
//                      entries; the share is the number of entries in dense blocks divided by nnz.
//                      At the matrix edge the blocks are cut off but the threshold stays 8.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sparserl/datasets/sparse_matrix.hpp"

namespace sparserl::datasets {

struct MatrixFeatures {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t nnz = 0;
  double density = 0.0;
  std::int64_t row_nnz_min = 0;
  double row_nnz_mean = 0.0;
  std::int64_t row_nnz_max = 0;
  double row_nnz_std = 0.0;
  double row_nnz_gini = 0.0;
  std::int64_t empty_rows = 0;
  double empty_row_share = 0.0;
  std::int64_t bandwidth = 0;
  double profile = 0.0;
  double diagonal_share = 0.0;
  double dense_block_share = 0.0;

  // The fields above in declaration order, as doubles (raw, not normalised: an observation encoder
  // scales them, e.g. log1p of the counts), with feature_names() naming each position.
  [[nodiscard]] std::vector<double> to_vector() const;
};

// The names of to_vector()'s positions: "rows", "cols", "nnz", ..., "dense_block_share".
const std::vector<std::string>& feature_names();

// Dense-block share parameters (see the definition above).
inline constexpr int kDenseBlockSize = 4;
inline constexpr int kDenseBlockMinEntries = 8;

MatrixFeatures compute_features(const SparseMatrix& a);

}  // namespace sparserl::datasets
