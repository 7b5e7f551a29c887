// take_device_memory_peak (device_memory.hpp): the CUDA caching allocator's statistics of one
// device. The allocator's part compiles only where LibTorch was built with CUDA
// (SPARSERL_HAVE_TORCH_CUDA, set by agents/learning/CMakeLists.txt for this file and
// decode_graphs.cpp); elsewhere there is nothing to read and the function answers nothing.
#include "sparserl/agents/device_memory.hpp"

#include <torch/torch.h>

#if SPARSERL_HAVE_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/cuda.h>
#endif

namespace sparserl::agents {

std::optional<DeviceMemoryPeak> take_device_memory_peak(const std::string& device) {
#if SPARSERL_HAVE_TORCH_CUDA
  const torch::Device d(device);
  if (!d.is_cuda() || !torch::cuda::is_available()) return std::nullopt;
  const auto index = d.has_index() ? d.index() : static_cast<c10::DeviceIndex>(0);
  namespace allocator = c10::cuda::CUDACachingAllocator;
  constexpr std::size_t aggregate = 0;  // StatType::AGGREGATE: every pool together
  constexpr double mib = 1024.0 * 1024.0;
  try {
    const auto stats = allocator::getDeviceStats(index);
    DeviceMemoryPeak peak{static_cast<double>(stats.allocated_bytes[aggregate].peak) / mib,
                          static_cast<double>(stats.reserved_bytes[aggregate].peak) / mib};
    allocator::resetPeakStats(index);
    return peak;
  } catch (const c10::Error&) {
    // Before LibTorch's first CUDA allocation the allocator holds no device and refuses the
    // index: nothing was allocated.
    return DeviceMemoryPeak{};
  }
#else
  (void)device;
  return std::nullopt;
#endif
}

}  // namespace sparserl::agents
