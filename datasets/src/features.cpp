// Pattern features of features.hpp in two linear passes: one over the row lengths (a histogram of
// them gives min, max, standard deviation and the Gini coefficient without sorting), one over the
// entries (offsets from the diagonal and the 4 x 4 block counts, one block row at a time).
#include "sparserl/datasets/features.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace sparserl::datasets {

std::vector<double> MatrixFeatures::to_vector() const {
  return {static_cast<double>(rows),
          static_cast<double>(cols),
          static_cast<double>(nnz),
          density,
          static_cast<double>(row_nnz_min),
          row_nnz_mean,
          static_cast<double>(row_nnz_max),
          row_nnz_std,
          row_nnz_gini,
          static_cast<double>(empty_rows),
          empty_row_share,
          static_cast<double>(bandwidth),
          profile,
          diagonal_share,
          dense_block_share};
}

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = {"rows",
                                                 "cols",
                                                 "nnz",
                                                 "density",
                                                 "row_nnz_min",
                                                 "row_nnz_mean",
                                                 "row_nnz_max",
                                                 "row_nnz_std",
                                                 "row_nnz_gini",
                                                 "empty_rows",
                                                 "empty_row_share",
                                                 "bandwidth",
                                                 "profile",
                                                 "diagonal_share",
                                                 "dense_block_share"};
  return names;
}

MatrixFeatures compute_features(const SparseMatrix& a) {
  MatrixFeatures f;
  f.rows = a.rows();
  f.cols = a.cols();
  f.nnz = a.nnz();
  if (f.rows > 0 && f.cols > 0) {
    f.density =
        static_cast<double>(f.nnz) / (static_cast<double>(f.rows) * static_cast<double>(f.cols));
  }
  const auto row_ptr = a.row_ptr();
  const auto col_idx = a.col_idx();
  if (f.rows == 0) return f;

  // Pass 1: row lengths. max <= nnz, so the histogram is never larger than the matrix.
  std::int64_t max_length = 0;
  for (Index i = 0; i < a.rows(); ++i)
    max_length = std::max<std::int64_t>(max_length, row_ptr[i + 1] - row_ptr[i]);
  std::vector<std::int64_t> histogram(static_cast<std::size_t>(max_length) + 1, 0);
  for (Index i = 0; i < a.rows(); ++i) ++histogram[row_ptr[i + 1] - row_ptr[i]];
  f.row_nnz_max = max_length;
  f.row_nnz_min = 0;
  while (histogram[f.row_nnz_min] == 0) ++f.row_nnz_min;
  f.empty_rows = histogram[0];
  f.empty_row_share = static_cast<double>(f.empty_rows) / static_cast<double>(f.rows);
  f.row_nnz_mean = static_cast<double>(f.nnz) / static_cast<double>(f.rows);
  // Gini = sum_r (2r - M - 1) l_(r) / (M * nnz) over the lengths sorted ascending (rank r from 1).
  // A run of c rows of length v starting after rank R contributes v * c * (2R + c - M): integers
  // whose sum stays below nnz * M <= 2^62, so equal rows give exactly 0.
  std::int64_t gini_numerator = 0;
  double squares = 0.0;
  std::int64_t rank = 0;
  for (std::int64_t v = 0; v <= max_length; ++v) {
    const std::int64_t c = histogram[v];
    if (c == 0) continue;
    gini_numerator += v * c * (2 * rank + c - f.rows);
    const double deviation = static_cast<double>(v) - f.row_nnz_mean;
    squares += static_cast<double>(c) * deviation * deviation;
    rank += c;
  }
  f.row_nnz_std = std::sqrt(squares / static_cast<double>(f.rows));
  if (f.nnz > 0) {
    f.row_nnz_gini = static_cast<double>(gini_numerator) /
                     (static_cast<double>(f.rows) * static_cast<double>(f.nnz));
  }
  if (f.nnz == 0) return f;

  // Pass 2: entries, one block row of kDenseBlockSize rows at a time.
  const std::int64_t block_cols = (f.cols + kDenseBlockSize - 1) / kDenseBlockSize;
  std::vector<std::uint8_t> block_count(static_cast<std::size_t>(block_cols), 0);
  std::vector<Index> touched;
  std::int64_t offset_sum = 0, diagonal = 0, in_dense_blocks = 0, bandwidth = 0;
  for (Index row0 = 0; row0 < a.rows(); row0 += kDenseBlockSize) {
    const Index row_end =
        static_cast<Index>(std::min<std::int64_t>(std::int64_t{row0} + kDenseBlockSize, a.rows()));
    for (Index i = row0; i < row_end; ++i) {
      for (Index p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
        const Index j = col_idx[p];
        const std::int64_t offset = std::abs(std::int64_t{i} - j);
        offset_sum += offset;
        bandwidth = std::max(bandwidth, offset);
        diagonal += offset == 0 ? 1 : 0;
        const Index bc = j / kDenseBlockSize;
        if (block_count[bc]++ == 0) touched.push_back(bc);
      }
    }
    for (Index bc : touched) {
      if (block_count[bc] >= kDenseBlockMinEntries) in_dense_blocks += block_count[bc];
      block_count[bc] = 0;
    }
    touched.clear();
  }
  const double nnz = static_cast<double>(f.nnz);
  f.bandwidth = bandwidth;
  f.profile = static_cast<double>(offset_sum) / nnz;
  f.diagonal_share = static_cast<double>(diagonal) / nnz;
  f.dense_block_share = static_cast<double>(in_dense_blocks) / nnz;
  return f;
}

}  // namespace sparserl::datasets
