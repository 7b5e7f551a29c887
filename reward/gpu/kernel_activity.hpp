// KernelActivity: the timing instrument of the GPU role. CUPTI's activity API records the start and
// end of every kernel the process runs, measured by the GPU itself, so a repetition's time is the sum
// of the kernels it launched - host clocks around asynchronous launches never enter a figure. The
// evaluator synchronises after each repetition and drains the records completed so far; memsets (the
// L2 flush, the NaN fill) are separate activity kinds and never counted as kernels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sparserl::reward::gpu {

struct KernelRecord {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t stream_id = 0;
  std::uint32_t correlation_id = 0;
  std::string name;
  [[nodiscard]] double duration_us() const { return static_cast<double>(end_ns - start_ns) * 1e-3; }
};

// One per process (CUPTI's callbacks are process-wide). Construct after the CUDA context exists.
class KernelActivity {
 public:
  KernelActivity();
  ~KernelActivity();
  KernelActivity(const KernelActivity&) = delete;
  KernelActivity& operator=(const KernelActivity&) = delete;

  // Flushes CUPTI's buffers and returns every kernel record completed since the last drain, in
  // completion order. Call after synchronising the streams whose kernels should be included.
  std::vector<KernelRecord> drain();

  // Records dropped by CUPTI for lack of buffer space (a timing made while this grows is void).
  [[nodiscard]] std::uint64_t dropped() const;
};

}  // namespace sparserl::reward::gpu
