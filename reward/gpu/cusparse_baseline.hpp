// CusparseBaseline: the reference every candidate is timed against, on the same GPU, in the same
// process, under the same protocol. SpMV runs cuSPARSE's CSR_ALG1 and CSR_ALG2, SpMM CSR_ALG1/2/3 (row-
// major dense operands, as the kernel ABI); the evaluator keeps the fastest. The CSR arrays, the dense
// operands, the descriptors, the work buffers and cuSPARSE's preprocessing are all set up in the
// constructor, outside any timed region; enqueue() is the only thing a timed repetition runs. The
// baseline owns its own x and y, so a candidate can never touch them.
#pragma once

#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <cstddef>
#include <string>
#include <vector>

#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/datasets/task.hpp"

namespace sparserl::reward::gpu {

class CusparseBaseline {
 public:
  CusparseBaseline(const datasets::SparseMatrix& a, datasets::Op op, datasets::DType dtype, int k,
                   cudaStream_t stream);
  ~CusparseBaseline();
  CusparseBaseline(const CusparseBaseline&) = delete;
  CusparseBaseline& operator=(const CusparseBaseline&) = delete;

  // The algorithms this matrix and operation support ("CSR_ALG1", ...), in a fixed order.
  [[nodiscard]] const std::vector<std::string>& algorithms() const { return names_; }

  // Device operands in the task's dtype: x has cols * k elements, y rows * k.
  [[nodiscard]] void* x() const { return d_x_; }
  [[nodiscard]] void* y() const { return d_y_; }
  [[nodiscard]] std::size_t y_bytes() const { return y_bytes_; }

  // Enqueues y = A x with algorithm `index` on the stream (asynchronous).
  void enqueue(std::size_t index);

  // Device bytes held (CSR, operands, buffers), for logs.
  [[nodiscard]] std::size_t device_bytes() const { return device_bytes_; }

 private:
  void* alloc(std::size_t bytes);

  datasets::Op op_;
  datasets::DType dtype_;
  cudaStream_t stream_;
  cusparseHandle_t handle_ = nullptr;
  cusparseSpMatDescr_t mat_ = nullptr;
  cusparseDnVecDescr_t vec_x_ = nullptr, vec_y_ = nullptr;
  cusparseDnMatDescr_t mat_x_ = nullptr, mat_y_ = nullptr;
  std::vector<void*> allocations_;
  void* d_x_ = nullptr;
  void* d_y_ = nullptr;
  std::size_t y_bytes_ = 0;
  std::size_t device_bytes_ = 0;
  std::vector<std::string> names_;
  std::vector<int> algs_;         // cusparseSpMVAlg_t / cusparseSpMMAlg_t values
  std::vector<void*> buffers_;    // one work buffer per algorithm
};

}  // namespace sparserl::reward::gpu
