// GpuSession: everything a GPU worker keeps on its device between requests, and the evaluation of one
// request - the run, the correctness check and the timing against cuSPARSE - designed against the
// reward hacks other kernel-generation systems fell to (SPARSERL.md):
//
//   - every argument array sits between NaN-filled guard zones (device_buffer.hpp); y is filled with
//     NaN before every run, so an element the kernel does not write stays NaN (unwritten_output) and a
//     kernel that accumulates into y without zeroing it first computes NaN;
//   - several fresh random inputs x (values in [-1, 1], seeded per evaluation) are checked against an
//     fp64 reference computed from exactly the values the kernel sees, with a per-output tolerance
//     scaled by sum_j |a_ij x_j|; the inputs are compared with their uploaded bytes after the runs
//     (input_mutated) and the guard zones read back;
//   - timed repetitions draw x from the checked inputs in a seeded order and refill y with NaN, and the
//     output of the last timed repetition is checked again: no result survives from one run to the next;
//   - the time of a repetition is the sum of the CUPTI durations of every kernel it launched, the L2
//     cache is flushed before each repetition, and candidate and cuSPARSE repetitions alternate.
//
// Caches (one entry each, GPU memory is the limit): the loaded matrix, its converted and uploaded
// format, and the cuSPARSE baseline with its chosen algorithm.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpu/cusparse_baseline.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/kernel_activity.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/reward/eval_result.hpp"
#include "sparserl/reward/kernel_arrays.hpp"
#include "sparserl/reward/protocol.hpp"

namespace sparserl::reward::gpu {

// Per-output tolerance: factor * eps(dtype) * (sqrt(row length) + 2) * sum_j |a_ij x_j|. Eight
// standard deviations of the rounding error of any summation order.
inline constexpr double kDefaultToleranceFactor = 8.0;

class GpuSession {
 public:
  explicit GpuSession(int device = 0);
  ~GpuSession();
  GpuSession(const GpuSession&) = delete;
  GpuSession& operator=(const GpuSession&) = delete;

  // Never throws: failures are results. must_exit is set when the context may be poisoned.
  EvalResult evaluate(const GpuRequest& request, bool& must_exit);

  [[nodiscard]] const std::string& device_name() const { return device_name_; }
  // Device-to-device copy bandwidth (bytes read + written per second), measured once.
  double copy_bandwidth_gbs();

 private:
  struct Prepared;  // a matrix's format arrays on the device, keyed by matrix, format and dtype
  struct Baseline;  // cuSPARSE for a (matrix, op, dtype, k)
  struct Candidate;  // one evaluation's kernels, operands and checks

  std::shared_ptr<const datasets::SparseMatrix> load_matrix(const GpuRequest& request);
  Prepared& prepare(const GpuRequest& request, const datasets::SparseMatrix& matrix);
  Baseline& baseline(const GpuRequest& request, const Prepared& prepared);
  // The timed runs, candidate and cuSPARSE alternating, and the final checks: fills r.timing.
  void time_against_baseline(Candidate& candidate, Prepared& prepared);
  void choose_baseline_path(Candidate& candidate, Baseline& base,
                            const std::function<double(std::size_t, int, std::size_t&)>& time_baseline);

  int device_ = 0;
  std::string device_name_;
  std::size_t l2_bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<KernelActivity> activity_;
  double copy_bandwidth_gbs_ = 0;
  void* flush_buffer_ = nullptr;
  std::size_t flush_bytes_ = 0;
  unsigned flush_value_ = 0;

  std::string store_key_;
  std::unique_ptr<datasets::MatrixStore> store_;
  std::unique_ptr<Prepared> prepared_;
  std::unique_ptr<Baseline> baseline_;
};

}  // namespace sparserl::reward::gpu
