// SparseMatrix: the one in-memory form of a matrix in the project. Canonical CSR (rows sorted by
// construction, column indices strictly increasing within a row, no duplicates), fp64 values, 32-bit
// indices because the kernel ABI passes `int` arrays to the GPU. Every other format (COO, ELL,
// SELL-C-sigma, BSR; formats.hpp) is derived from it and converts back to it exactly.
//
// Construction validates everything and throws InvalidMatrix naming the first broken invariant, so a
// SparseMatrix that exists is always safe to hand to a kernel: row_ptr is monotone from 0 to nnz and
// every column index lies in [0, cols).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace sparserl::datasets {

using Index = std::int32_t;  // row and column indices, row_ptr offsets (the ABI's `int`)

// Largest nnz and dimension the ABI's 32-bit indices can hold.
inline constexpr std::int64_t kMaxIndex = 2147483647;

class InvalidMatrix : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// One stored entry of a matrix, 0-based.
struct Triplet {
  Index row = 0;
  Index col = 0;
  double value = 0.0;
};

class SparseMatrix {
 public:
  SparseMatrix() = default;  // the 0 x 0 matrix

  // Takes CSR arrays that must already be canonical; throws InvalidMatrix otherwise.
  static SparseMatrix from_csr(Index rows, Index cols, std::vector<Index> row_ptr,
                               std::vector<Index> col_idx, std::vector<double> values);

  // Builds from entries in any order. Entries at the same (row, col) are summed; the number of entries
  // folded into another is returned through duplicates_summed. Explicit zeros are kept as entries.
  static SparseMatrix from_triplets(Index rows, Index cols, std::vector<Triplet> entries,
                                    std::int64_t* duplicates_summed = nullptr);

  [[nodiscard]] Index rows() const { return rows_; }
  [[nodiscard]] Index cols() const { return cols_; }
  [[nodiscard]] std::int64_t nnz() const { return static_cast<std::int64_t>(col_idx_.size()); }
  [[nodiscard]] std::span<const Index> row_ptr() const { return row_ptr_; }
  [[nodiscard]] std::span<const Index> col_idx() const { return col_idx_; }
  [[nodiscard]] std::span<const double> values() const { return values_; }
  [[nodiscard]] Index row_length(Index row) const { return row_ptr_[row + 1] - row_ptr_[row]; }

  // Values may be changed in place (the pattern may not): generators and tests refill them.
  [[nodiscard]] std::span<double> mutable_values() { return values_; }

  // Content digest (64-bit FNV-1a over dimensions, row_ptr, col_idx and the values' IEEE bits, all
  // little-endian) as 16 hex digits: the same on every platform, used in cache keys and test pins.
  [[nodiscard]] std::string digest() const;
  // Digest of the pattern alone (dimensions, row_ptr, col_idx).
  [[nodiscard]] std::string pattern_digest() const;

  // Entries in row-major order.
  [[nodiscard]] std::vector<Triplet> to_triplets() const;

  friend bool operator==(const SparseMatrix&, const SparseMatrix&) = default;

 private:
  // Takes arrays already checked (from_csr) or built canonical (from_triplets).
  SparseMatrix(Index rows, Index cols, std::vector<Index> row_ptr, std::vector<Index> col_idx,
               std::vector<double> values)
      : rows_(rows),
        cols_(cols),
        row_ptr_(std::move(row_ptr)),
        col_idx_(std::move(col_idx)),
        values_(std::move(values)) {}

  Index rows_ = 0;
  Index cols_ = 0;
  std::vector<Index> row_ptr_ = {0};
  std::vector<Index> col_idx_;
  std::vector<double> values_;
};

// The bytes a matrix holds in memory: its row pointers, column indices and values.
[[nodiscard]] std::size_t resident_bytes(const SparseMatrix& m);

}  // namespace sparserl::datasets
