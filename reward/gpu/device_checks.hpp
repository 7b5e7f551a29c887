// DeviceChecks: the GPU worker's checks of a candidate's run, done on the device so that only a few
// bytes cross the bus (before: every input array and y read back and compared on the host, about
// 80 ms of a warm evaluation on a 10M-nonzero matrix). The kernels (output_check.hpp:
// device_checks_source()) are compiled by NVRTC for the device when the session starts and run only
// after a candidate's kernels have finished:
//   - inspect(): the SHA-256 tree digest of each input array (compared by the caller with the digest
//     taken right after its upload and held on the host) and whether each array's guard zones still
//     hold 0xFF only;
//   - compare(): the fp64 reference and the tolerance rule of output_check.hpp over an output, from
//     a CSR copy of the matrix whose digest the caller has just checked, returning the merged tally;
//   - check(): both in one batch on the stream and one wait, the comparisons gated on the device on
//     the CSR copy's digests taken in the same batch (a changed copy is never read).
// The launches do not grow with the number of arrays: one sha256_regions launch per level of the
// deepest tree (digest_tree.hpp plans them; arrays of up to 1 KiB: 1 level, 32 KiB: 2, 1 MiB: 3,
// 32 MiB: 4, 1 GiB: 5) for up to 32 arrays, one guards_intact launch for up to 32 guard pairs, one
// compare launch per output; larger tables go in groups of 32, one after the other. (Before: one
// launch per level per array and one per guard pair, about 40 for a small CSR task's check, and a
// second wait for the comparison.)
// What a hostile kernel can reach is everything in the worker's device memory while it runs; what
// decides a verdict here is either written after it ran (scratch, results, reference sums) or
// checked against the host's digests after it ran (the inputs, the CSR copy). That includes the
// check kernels' own code and constants: once a candidate's kernels have run (untrusted()), the next
// check loads the module afresh from the host's cubin before it launches anything. The kernels'
// tables are kernel parameters, written by the host at each launch.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
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

  // compare()'s arguments, and its gate: when `gate_at` is set, regions gate_at, gate_at + 1 and
  // gate_at + 2 of the same check() are the CSR copy's row_ptr, col_idx and val, and the comparison
  // runs only if their digests just taken are `gate_digests` (those of the copy's upload); else each
  // of its blocks' tallies says bad_index = 1 and nothing of the copy was read. A comparison in the
  // same check() as regions must be gated: the copy was within a candidate's reach.
  struct Comparison {
    Csr csr;
    const void* x;
    const void* y;
    DType dtype;
    int k;
    double factor = kDefaultToleranceFactor;
    std::optional<std::size_t> gate_at;
    std::array<Digest, 3> gate_digests{};
  };
  struct Findings {
    std::vector<Digest> digests;     // per region
    std::vector<bool> intact;        // per guard pair
    std::vector<OutputTally> tallies;  // per comparison, merged
  };

  // The digests of `regions` (in order), per entry of `guards` whether both zones are intact, and
  // the tally of each comparison: enqueued on `stream` in that order and waited for once. Regions
  // must be 16-byte aligned; std::logic_error for a misaligned region or a malformed gate.
  void check(std::span<const Region> regions, std::span<const Guards> guards,
             std::span<const Comparison> comparisons, cudaStream_t stream, Findings& findings);

  // check() without comparisons.
  void inspect(std::span<const Region> regions, std::span<const Guards> guards, cudaStream_t stream,
               std::vector<Digest>& digests, std::vector<bool>& intact);
  Digest digest(const Region& region, cudaStream_t stream);

  // The reference of `x` on `csr` compared with `y` (rows x k, row-major, in `dtype`): the tally of
  // every element, as tally_output() would give it. Ungated (the copy must be trusted: uploaded or
  // digest-checked since a candidate last ran). Waits for the stream.
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
  // Enqueue: the digest trees of `regions` (region i's digest into slots + 32 i), the guard flags
  // (one unsigned per pair from `flags` on), one comparison's per-block tallies (returns the blocks).
  void enqueue_digests(std::span<const Region> regions, std::uint8_t* slots, cudaStream_t stream);
  void enqueue_guards(std::span<const Guards> guards, unsigned* flags, cudaStream_t stream);
  std::size_t enqueue_compare(const Comparison& c, const std::uint8_t* slots, void* tallies, cudaStream_t stream);
  std::uint8_t* results(std::size_t bytes);  // device result area of at least `bytes`

  std::string cubin_;
  cudaLibrary_t library_ = nullptr;
  bool stale_ = false;
  cudaKernel_t sha256_ = nullptr, guards_ = nullptr, compare_f32_ = nullptr, compare_f64_ = nullptr;
  std::uint8_t* scratch_ = nullptr;  // the digest trees' inner levels (DigestPlan::scratch_bytes)
  std::size_t scratch_bytes_ = 0;
  std::uint8_t* results_ = nullptr;
  std::size_t results_bytes_ = 0;
  HostStaging host_;  // page-locked: the results read back
  std::uint64_t launches_ = 0;
};

}  // namespace sparserl::reward::gpu
