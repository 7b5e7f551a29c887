// How much memory of a CUDA device LibTorch's caching allocator used: the peak of the bytes its
// tensors held and the peak of what it reserved from the driver (the tensors plus its cache: what
// the process holds of the device, less the CUDA context), since the last reading. The training
// loops read it once a logged step or update, so each record's figures are that interval's. Free
// of LibTorch; src/device_memory.cpp reads the allocator where LibTorch was built with CUDA.
#pragma once

#include <optional>
#include <string>

namespace sparserl::agents {

struct DeviceMemoryPeak {
  double allocated_mib = 0;  // the tensors' bytes at their peak since the last reading
  double reserved_mib = 0;   // the allocator's reserved bytes at their peak since the last reading
};

// The peaks on `device` ("cuda", "cuda:1"; PolicyAgent::device()'s form) since the last call for it
// (or since the process began), then the peaks reset to the current figures. Nothing for a device
// that is no CUDA device, or where LibTorch has no CUDA.
std::optional<DeviceMemoryPeak> take_device_memory_peak(const std::string& device);

}  // namespace sparserl::agents
