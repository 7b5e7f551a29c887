// CusparseBaseline: the reference every candidate is timed against, on the same GPU, in the same
// process, under the same protocol. It sets up every cuSPARSE path the matrix suits - one "path" is
// a storage format and an algorithm - and the evaluator keeps the fastest one that computes the
// right answer (gpu_session.cpp checks each path's output against the reference when it chooses):
//
//   SpMV  CSR_ALG1, CSR_ALG2, COO_ALG1, COO_ALG2 (row-sorted COO), SELL_ALG1 (sliced ELL, slices of
//         32 rows) and BSR_ALG1 (one path per square block size of 2, 4 and 8)
//   SpMM  CSR_ALG1/2/3, COO_ALG1..4 and BSR_ALG1 (blocks of 2, 4, 8), row-major dense operands as
//         the kernel ABI
//
// A padded format (SELL, BSR) is set up only where it stores at most twice the matrix's nonzeros
// (kMaxBaselineFill). Blocked ELL (CUSPARSE_SPMM_BLOCKED_ELL_ALG1) is not among them: with the
// ABI's row-major dense operands it computed wrong answers on an H100 (CUDA 13.0; caught by the
// check below), and its column-major form would need a transpose of every input. BaselineMode::csr keeps the CSR paths alone - the baseline before
// bench-v2, so that figures measured against it stay reproducible. A path cuSPARSE refuses (buffer
// size or preprocessing not supported for this shape or type) is left out. Every array, descriptor,
// work buffer and preprocessing step is set up in the constructor, outside any timed region;
// enqueue() is the only thing a timed repetition runs. The baseline owns its own x and y (padded
// where a blocked format covers more rows or columns than the matrix), so a candidate never touches
// them.
#pragma once

#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <cstddef>
#include <span>
#include <utility>
#include <string>
#include <vector>

#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/reward/protocol.hpp"

namespace sparserl::reward::gpu {

// The most a padded baseline format may store, as a multiple of the matrix's nonzeros.
inline constexpr double kMaxBaselineFill = 2.0;

class CusparseBaseline {
 public:
  CusparseBaseline(const datasets::SparseMatrix& a, datasets::Op op, datasets::DType dtype, int k,
                   BaselineMode mode, cudaStream_t stream);
  ~CusparseBaseline();
  CusparseBaseline(const CusparseBaseline&) = delete;
  CusparseBaseline& operator=(const CusparseBaseline&) = delete;

  // The paths this matrix and operation support ("CSR_ALG1", "SELL_ALG1", "BSR_ALG1(4x4)", ...),
  // in a fixed order.
  [[nodiscard]] const std::vector<std::string>& algorithms() const { return names_; }

  // Device operands in the task's dtype: x holds cols * k elements (and zero padding), y rows * k
  // (and padding that the output check never reads).
  [[nodiscard]] void* x() const { return d_x_; }
  [[nodiscard]] void* y() const { return d_y_; }
  [[nodiscard]] std::size_t y_bytes() const { return y_bytes_; }

  // Enqueues y = A x with path `index` on the stream (asynchronous); std::runtime_error when
  // cuSPARSE refuses the call.
  void enqueue(std::size_t index);

  // Device bytes held (formats, operands, buffers), for logs.
  [[nodiscard]] std::size_t device_bytes() const { return device_bytes_; }

 private:
  struct Path {
    cusparseSpMatDescr_t mat = nullptr;
    int alg = 0;  // cusparseSpMVAlg_t / cusparseSpMMAlg_t
    void* buffer = nullptr;
    // The dense operands as this path's matrix shape sees them (padded for blocked formats).
    cusparseDnVecDescr_t vec_x = nullptr, vec_y = nullptr;
    cusparseDnMatDescr_t mat_x = nullptr, mat_y = nullptr;
  };

  void* alloc(std::size_t bytes);
  void* upload_indices(const std::vector<datasets::Index>& host);
  void* upload_values(std::span<const double> host);
  // Registers every algorithm of `algs` that cuSPARSE accepts for `mat` (whose padded shape is
  // rows x cols); takes ownership of `mat`.
  void add_paths(cusparseSpMatDescr_t mat, std::int64_t rows, std::int64_t cols,
                 const std::vector<std::pair<std::string, int>>& algs);
  void add_csr_and_coo(const datasets::SparseMatrix& a, BaselineMode mode);
  void add_sell(const datasets::SparseMatrix& a);
  void add_bsr(const datasets::SparseMatrix& a, datasets::Index block);

  datasets::Op op_;
  datasets::DType dtype_;
  int k_ = 1;
  cudaStream_t stream_;
  cusparseHandle_t handle_ = nullptr;
  std::vector<cusparseSpMatDescr_t> mats_;
  std::vector<void*> allocations_;
  void* d_x_ = nullptr;
  void* d_y_ = nullptr;
  std::int64_t x_rows_ = 0, y_rows_ = 0;  // allocated (padded) rows of x and y
  std::size_t y_bytes_ = 0;
  std::size_t device_bytes_ = 0;
  std::vector<std::string> names_;
  std::vector<Path> paths_;
};

}  // namespace sparserl::reward::gpu
