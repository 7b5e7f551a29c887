// How the GPU role reads CUDA's errors. A candidate kernel's failure is data (an ErrorKind and a
// message for its EvalResult); the worker's own CUDA calls failing is a CudaFailure exception. Sticky
// errors (a fault inside a kernel) poison the whole CUDA context: the worker answers and then exits,
// because only a fresh process recovers (SPARSERL.md, "a bad kernel's illegal memory access").
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "sparserl/reward/eval_result.hpp"

namespace sparserl::reward::gpu {

// "cudaErrorIllegalAddress (an illegal memory access was encountered)"
std::string describe(cudaError_t error);

// The ErrorKind of a candidate's launch or run failing with `error`.
ErrorKind classify(cudaError_t error);

// True when the error leaves the context unusable (every later CUDA call fails).
bool is_sticky(cudaError_t error);

class CudaFailure : public std::runtime_error {
 public:
  CudaFailure(cudaError_t error, const std::string& where)
      : std::runtime_error(where + ": " + describe(error)), error_(error) {}
  [[nodiscard]] cudaError_t error() const { return error_; }

 private:
  cudaError_t error_;
};

// For the worker's own calls (allocation, copies, cuSPARSE setup): throws CudaFailure.
inline void check_cuda(cudaError_t error, const char* where) {
  if (error != cudaSuccess) throw CudaFailure(error, where);
}

}  // namespace sparserl::reward::gpu
