// GpuSession: everything a GPU worker keeps on its device between requests, and the evaluation of one
// request - the run, the correctness check and the timing against cuSPARSE - designed against the
// reward hacks other kernel-generation systems fell to (SPARSERL.md):
//
//   - every argument array sits between NaN-filled guard zones (device_buffer.hpp); y is filled with
//     NaN before every run, so an element the kernel does not write stays NaN (unwritten_output) and a
//     kernel that accumulates into y without zeroing it first computes NaN;
//   - several fresh random inputs x (values in [-1, 1], seeded per evaluation) are checked against an
//     fp64 reference computed from exactly the values the kernel sees, with a per-output tolerance
//     scaled by sum_j |a_ij x_j|; after the runs the inputs' SHA-256 tree digests are compared with
//     those taken at upload (input_mutated) and the guard zones checked. All three checks run on the
//     device after the candidate's kernels (device_checks.hpp), in one batch and one wait, the
//     reference from a CSR copy of the matrix whose digest is checked first (on the device: the
//     comparison is gated on it; on the host: before the tally is used): only digests, flags and
//     tallies cross the bus;
//   - timed repetitions draw x from the checked inputs in a seeded order and refill y with NaN, and the
//     output of the last timed repetition is checked again: no result survives from one run to the next;
//   - the time of a repetition is the sum of the CUPTI durations of every kernel it launched, the L2
//     cache is flushed before each repetition, and candidate and cuSPARSE repetitions alternate.
//
// Caches, so that a group of candidates on one task re-does nothing: the loaded matrices (a few,
// each with its digest, which every request checks), their converted and uploaded formats (checked
// against their digests before each use, and dropped when a candidate changed them) and the
// cuSPARSE baselines with their chosen paths, each of the last two kept least-recently-used first
// within GpuCacheLimits::resident_fraction of the device's memory (ResidentCache); the matrix
// store's entries and bytes are the same limits'; the reference's CSR copy of the last (matrix,
// dtype).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "gpu/cusparse_baseline.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/device_checks.hpp"
#include "gpu/kernel_activity.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/reward/eval_result.hpp"
#include "sparserl/reward/kernel_arrays.hpp"
#include "sparserl/reward/output_check.hpp"
#include "sparserl/reward/protocol.hpp"
#include "sparserl/reward/timing_lane.hpp"

namespace sparserl::reward::gpu {

// Entries (with `key` and `device_bytes()`) kept most recently used first while their bytes fit a
// budget; the newest entry always stays, whatever its size. References stay valid until the next
// insert().
template <typename Entry>
class ResidentCache {
 public:
  Entry* find(const std::string& key) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if ((*it)->key == key) {
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front().get();
      }
    }
    return nullptr;
  }
  Entry& insert(std::unique_ptr<Entry> entry, std::size_t budget_bytes) {
    entries_.push_front(std::move(entry));
    std::size_t total = 0;
    for (const auto& e : entries_) total += e->device_bytes();
    while (entries_.size() > 1 && total > budget_bytes) {
      total -= entries_.back()->device_bytes();
      entries_.pop_back();
    }
    return *entries_.front();
  }
  void erase(const std::string& key) {
    entries_.remove_if([&](const std::unique_ptr<Entry>& e) { return e->key == key; });
  }
  void clear() { entries_.clear(); }
  [[nodiscard]] std::size_t size() const { return entries_.size(); }

 private:
  std::list<std::unique_ptr<Entry>> entries_;
};

class GpuSession {
 public:
  explicit GpuSession(int device = 0, const GpuCacheLimits& limits = {});
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
  struct ReferenceCsr;  // the CSR copy of a (matrix, dtype) the device reference is computed from

  // The request's matrix from the worker's store, with its digest (computed once per load).
  datasets::DigestedMatrix load_matrix(const GpuRequest& request);
  // The resident format of the request's (digest, format, dtype), its arrays checked unchanged on
  // the device; null when there is none or it was changed (then dropped).
  Prepared* resident_format(const GpuRequest& request);
  // Converts and uploads the request's format of `matrix` (the worker's copy of the request's).
  Prepared& prepare(const GpuRequest& request, const datasets::SparseMatrix& matrix);
  static std::string prepared_key(const GpuRequest& request);
  ReferenceCsr& reference_csr(const GpuRequest& request, const datasets::SparseMatrix& rounded);
  Baseline& baseline(const GpuRequest& request, const Prepared& prepared);
  // The timed runs, candidate and cuSPARSE alternating, and the final checks: fills r.timing.
  // `phase(name)` closes a profiling phase (EvalResult::phases).
  void time_against_baseline(Candidate& candidate, Prepared& prepared,
                             const std::function<void(const char*)>& phase);
  // Returns whether it took GpuRequest::baseline_hint's path instead of timing every path.
  bool choose_baseline_path(Candidate& candidate, Baseline& base,
                            const std::function<double(std::size_t, int, std::size_t&)>& time_baseline);

  int device_ = 0;
  std::string device_name_;
  std::string pci_bus_id_;  // EvalResult::device_pci_bus_id (empty when CUDA does not say)
  std::size_t l2_bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<KernelActivity> activity_;
  double copy_bandwidth_gbs_ = 0;
  void* flush_buffer_ = nullptr;
  std::size_t flush_bytes_ = 0;
  unsigned flush_value_ = 0;

  std::string store_key_;
  std::unique_ptr<datasets::MatrixStore> store_;
  // The device's timing lane (sparserl/reward/timing_lane.hpp), opened once and held for the timed
  // runs of an evaluation, so that the GPU workers of every evaluator on this host overlap their
  // untimed stages (loading, conversion, checks) but never time two kernels at once. Null when its
  // file could not be opened (said once on stderr): the timing is then unserialised.
  std::unique_ptr<TimingLaneLock> timing_lane_;
  GpuCacheLimits limits_;
  std::size_t resident_budget_bytes_ = 0;  // per cache: limits_.resident_fraction of the device's
  ResidentCache<Prepared> prepared_;
  ResidentCache<Baseline> baselines_;
  std::unique_ptr<DeviceChecks> checks_;  // the input, guard and output checks, on the device
  std::unique_ptr<ReferenceCsr> reference_csr_;  // the last (matrix, dtype)'s
  HostStaging input_staging_;  // page-locked: the random inputs are generated into it and uploaded
};

}  // namespace sparserl::reward::gpu
