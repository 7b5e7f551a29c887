// The storage formats of the kernel ABI, derived from a canonical SparseMatrix, each with the exact
// array layout a generated kernel sees on the GPU (reward/'s ABI registry names these arrays), a lossless
// conversion back to CSR, and a plain fp64 reference SpMV and SpMM that everything else is tested
// against. Layouts (M = rows, N = cols, all indices 0-based `int`):
//
//  COO   row_idx[nnz], col_idx[nnz], val[nnz], sorted by (row, col).
//  ELL   width W = longest row (ELL_WIDTH). col_idx[W*M], val[W*M], column-major: entry k of row i is at
//        k*M + i. Padding: col_idx = -1, val = 0 (kernels must skip col < 0).
//  SELL  SELL-C-sigma. Rows are sorted by decreasing length inside each window of sigma consecutive rows
//        (sigma = 1: no sorting); sorted position p holds original row row_perm[p]. Positions are cut into
//        slices of C (SELL_C); slice s covers positions s*C .. s*C+C-1 (the last may run past M: those
//        lanes are padding). Slice s stores its width w_s = longest row in it; its entries start at
//        slice_ptr[s] and entry k of lane r is at slice_ptr[s] + k*C + r. Padding: col_idx = -1, val = 0.
//  BSR   R x C blocks (BSR_R, BSR_C); MB = ceil(M/R) block rows, NB = ceil(N/C) block columns.
//        block_row_ptr[MB+1], block_col_idx[nnzb] (sorted within a block row), val[nnzb*R*C], each block
//        row-major: element (i, j) of block b is at b*R*C + i*C + j. Cells that hold no entry are 0;
//        at the matrix edge a block reaches past M rows or N columns, so kernels must guard
//        row < M and col < N.
//
// Dense operands of SpMM are row-major: X is N x K, Y is M x K.
//
// ELL, SELL and BSR pad. Their converters refuse (FormatTooLarge) when the padded size would exceed
// a limit, so a power-law matrix never silently becomes a 50 GB ELL array.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "sparserl/datasets/sparse_matrix.hpp"

namespace sparserl::datasets {

class FormatTooLarge : public std::length_error {
 public:
  using std::length_error::length_error;
};

// Default cap on stored (padded) entries of a derived format: 2^29 (4 GiB of fp64 values).
inline constexpr std::int64_t kDefaultMaxStoredEntries = std::int64_t{1} << 29;

struct CooMatrix {
  Index rows = 0, cols = 0;
  std::vector<Index> row_idx, col_idx;
  std::vector<double> val;
  [[nodiscard]] std::int64_t nnz() const { return static_cast<std::int64_t>(val.size()); }
};

struct EllMatrix {
  Index rows = 0, cols = 0;
  Index width = 0;  // ELL_WIDTH
  std::vector<Index> col_idx;  // width * rows, column-major, -1 = padding
  std::vector<double> val;     // width * rows
};

struct SellMatrix {
  Index rows = 0, cols = 0;
  Index slice_height = 0;  // SELL_C
  Index sigma = 0;         // SELL_SIGMA (window of rows sorted by length)
  std::vector<Index> slice_ptr;  // num_slices + 1 offsets into col_idx / val
  std::vector<Index> row_perm;   // rows entries: sorted position -> original row
  std::vector<Index> col_idx;    // -1 = padding
  std::vector<double> val;
  [[nodiscard]] Index num_slices() const { return static_cast<Index>(slice_ptr.size()) - 1; }
};

struct BsrMatrix {
  Index rows = 0, cols = 0;
  Index block_rows = 0, block_cols = 0;  // BSR_R, BSR_C
  std::vector<Index> block_row_ptr;      // ceil(rows / R) + 1
  std::vector<Index> block_col_idx;      // nnzb
  std::vector<double> val;               // nnzb * R * C, row-major blocks
  // Host-side only (never uploaded): 1 where a block cell holds a stored entry, so that explicit
  // zeros survive the round trip to CSR.
  std::vector<std::uint8_t> stored;
  [[nodiscard]] Index mb() const { return static_cast<Index>(block_row_ptr.size()) - 1; }
  [[nodiscard]] std::int64_t nnzb() const { return static_cast<std::int64_t>(block_col_idx.size()); }
};

CooMatrix to_coo(const SparseMatrix& a);
EllMatrix to_ell(const SparseMatrix& a, std::int64_t max_stored = kDefaultMaxStoredEntries);
// slice_height >= 1, sigma >= 1 (sigma is rounded up to a multiple of slice_height when > 1).
SellMatrix to_sell(const SparseMatrix& a, Index slice_height, Index sigma,
                   std::int64_t max_stored = kDefaultMaxStoredEntries);
BsrMatrix to_bsr(const SparseMatrix& a, Index block_rows, Index block_cols,
                 std::int64_t max_stored = kDefaultMaxStoredEntries);

// Exact inverses: to_csr(to_X(a)) == a, explicit zeros included.
SparseMatrix to_csr(const CooMatrix& m);
SparseMatrix to_csr(const EllMatrix& m);
SparseMatrix to_csr(const SellMatrix& m);
SparseMatrix to_csr(const BsrMatrix& m);

// Reference products in fp64, sequential, in each format's natural order. y = A x (x: cols, y: rows);
// Y = A X with X cols x k and Y rows x k, both row-major. Sizes are checked (std::invalid_argument).
void spmv(const SparseMatrix& a, std::span<const double> x, std::span<double> y);
void spmv(const CooMatrix& a, std::span<const double> x, std::span<double> y);
void spmv(const EllMatrix& a, std::span<const double> x, std::span<double> y);
void spmv(const SellMatrix& a, std::span<const double> x, std::span<double> y);
void spmv(const BsrMatrix& a, std::span<const double> x, std::span<double> y);

void spmm(const SparseMatrix& a, std::span<const double> x, Index k, std::span<double> y);
void spmm(const CooMatrix& a, std::span<const double> x, Index k, std::span<double> y);
void spmm(const EllMatrix& a, std::span<const double> x, Index k, std::span<double> y);
void spmm(const SellMatrix& a, std::span<const double> x, Index k, std::span<double> y);
void spmm(const BsrMatrix& a, std::span<const double> x, Index k, std::span<double> y);

// Per-row sum_j |a_ij x_j| (SpMV) and per-element sum_j |a_ij X_jc| (SpMM): the scale of each output's
// rounding error, from which the evaluator's tolerance is derived.
void spmv_abs(const SparseMatrix& a, std::span<const double> x, std::span<double> y_abs);
void spmm_abs(const SparseMatrix& a, std::span<const double> x, Index k, std::span<double> y_abs);

}  // namespace sparserl::datasets
