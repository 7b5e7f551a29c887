// DeviceChecks: the GPU worker's checks of a candidate's run, done on the device so that only a few
// bytes cross the bus (before: every input array and y read back and compared on the host, about
// 80 ms of a warm evaluation on a 10M-nonzero matrix). The kernels (output_check.hpp:
// device_checks_source()) are compiled by NVRTC for the device when the session starts and run only
// after a candidate's kernels have finished:
//   - inspect(): the SHA-256 tree digest of each input array (compared by the caller with the digest
//     taken right after its upload and held on the host) and whether each array's guard zones still
//     hold 0xFF only;
//   - compare(): the fp64 reference and the tolerance rule of output_check.hpp over an output, from
//     a CSR copy of the matrix whose digest the caller has just checked, returning the merged tally.
// What a hostile kernel can reach is everything in the worker's device memory while it runs; what
// decides a verdict here is either written after it ran (scratch, results, reference sums) or
// checked against the host's digests after it ran (the inputs, the CSR copy). That includes the
// check kernels' own code and constants: once a candidate's kernels have run (untrusted()), the next
// check loads the module afresh from the host's cubin before it launches anything.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpu/device_buffer.hpp"
#include "sparserl/reward/abi.hpp"
#include "sparserl/reward/output_check.hpp"

namespace sparserl::reward::gpu {

using Digest = std::array<std::uint8_t, 32>;

class DeviceChecks {
 public:
  struct Region {  // an array to digest; 16-byte aligned
    const void* data;
    std::size_t bytes;
  };
  struct Guards {  // an array's two guard zones
    const void* before;
    const void* after;
    std::size_t bytes;
  };
  struct Csr {  // the matrix as compare() reads it: int32 row_ptr and col_idx, values in the dtype
    const void* row_ptr;
    const void* col_idx;
    const void* val;
    std::int64_t rows, cols, nnz;
  };

  // The kernels compiled by NVRTC for `device`'s architecture (the cubin); std::runtime_error with
  // NVRTC's log. Needs no CUDA context: the session runs it while it sets its device up.
  static std::string compile_kernels(int device);
  // Loads `cubin` (compile_kernels()'s); CudaFailure when it cannot.
  explicit DeviceChecks(std::string cubin);
  ~DeviceChecks();
  DeviceChecks(const DeviceChecks&) = delete;
  DeviceChecks& operator=(const DeviceChecks&) = delete;

  // The digests of `regions` (in order) and, per entry of `guards`, whether both zones are intact.
  // Enqueued on `stream` and waited for once.
  void inspect(std::span<const Region> regions, std::span<const Guards> guards, cudaStream_t stream,
               std::vector<Digest>& digests, std::vector<bool>& intact);
  Digest digest(const Region& region, cudaStream_t stream);

  // The reference of `x` on `csr` compared with `y` (rows x k, row-major, in `dtype`): the tally of
  // every element, as tally_output() would give it. Waits for the stream.
  OutputTally compare(const Csr& csr, const void* x, const void* y, DType dtype, int k, double factor,
                      cudaStream_t stream);

  // A candidate's kernels were launched: the module loaded now may have been written, and the next
  // check loads a fresh one.
  void untrusted() { stale_ = true; }

  // Kernels launched so far: CUPTI records them with the candidate's, and the session takes them
  // out of the count of the candidate's launches.
  [[nodiscard]] std::uint64_t launches() const { return launches_; }

 private:
  void load();  // (re)loads the module from cubin_ and looks its kernels up
  void launch(cudaKernel_t kernel, unsigned grid, unsigned block, void** args, cudaStream_t stream);
  void digest_async(const Region& region, std::uint8_t* out, cudaStream_t stream);
  std::uint8_t* results(std::size_t bytes);  // device result area of at least `bytes`

  std::string cubin_;
  cudaLibrary_t library_ = nullptr;
  bool stale_ = false;
  cudaKernel_t sha256_ = nullptr, guards_ = nullptr, compare_f32_ = nullptr, compare_f64_ = nullptr;
  std::uint8_t* scratch_ = nullptr;  // chunk digests, two halves used in turn
  std::size_t scratch_bytes_ = 0;
  std::uint8_t* results_ = nullptr;
  std::size_t results_bytes_ = 0;
  HostStaging host_;  // page-locked: the results read back
  std::uint64_t launches_ = 0;
};

}  // namespace sparserl::reward::gpu
