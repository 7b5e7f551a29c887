// The GPU role's entry points (gpu_runner.hpp): the device probe for the worker's Hello, and one
// GpuSession per worker process (created at the first request) that loads, checks and times
// kernels.
#include "gpu/gpu_runner.hpp"

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "gpu/gpu_session.hpp"

namespace sparserl::reward::gpu {

namespace {

GpuInfo& probed() {
  static GpuInfo info = [] {
    GpuInfo out;
    int runtime = 0;
    if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) out.runtime_version = runtime;
    int driver = 0;
    if (cudaDriverGetVersion(&driver) == cudaSuccess) out.driver_version = driver;
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      out.error = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err) + ": " +
                  cudaGetErrorString(err);
      cudaGetLastError();  // clear it: it is not sticky, and later calls must not see it
      return out;
    }
    for (int d = 0; d < count; ++d) {
      cudaDeviceProp p{};
      if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
      GpuDevice dev;
      dev.ordinal = d;
      dev.name = p.name;
      dev.arch = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
      dev.cc_major = p.major;
      dev.cc_minor = p.minor;
      dev.total_memory_bytes = p.totalGlobalMem;
      dev.multiprocessors = p.multiProcessorCount;
      dev.max_threads_per_block = p.maxThreadsPerBlock;
      dev.max_grid_x = p.maxGridSize[0];
      dev.shared_memory_per_block = static_cast<std::int64_t>(p.sharedMemPerBlock);
      dev.shared_memory_per_block_optin = static_cast<std::int64_t>(p.sharedMemPerBlockOptin);
      dev.l2_cache_bytes = p.l2CacheSize;
      char bus[32] = {};
      if (cudaDeviceGetPCIBusId(bus, sizeof(bus), d) == cudaSuccess) dev.pci_bus_id = bus;
      out.devices.push_back(std::move(dev));
    }
    if (out.devices.empty()) out.error = "no CUDA device is visible";
    return out;
  }();
  return info;
}

}  // namespace

GpuInfo probe_gpus() { return probed(); }

namespace {
GpuCacheLimits& process_cache_limits() {
  static GpuCacheLimits limits;
  return limits;
}
}  // namespace

void set_cache_limits(const GpuCacheLimits& limits) { process_cache_limits() = limits; }
const GpuCacheLimits& cache_limits() { return process_cache_limits(); }

GpuRunOutcome run_gpu_request(const GpuRequest& request) {
  GpuRunOutcome out;
  EvalResult& r = out.result;
  r.stage = Stage::compile;
  r.compiled = true;
  r.matrix_digest = request.matrix_digest;
  const GpuInfo& info = probed();
  if (info.devices.empty()) {
    r.error = ErrorKind::no_gpu;
    r.gpu_available = false;
    r.message = "no GPU in this worker: " + info.error;
    return out;
  }
  static std::unique_ptr<GpuSession> session;
  try {
    if (!session) session = std::make_unique<GpuSession>(0, cache_limits());
  } catch (const std::exception& e) {
    r.gpu_available = true;
    r.device = info.devices.front().name;
    r.device_pci_bus_id = info.devices.front().pci_bus_id;
    r.error = ErrorKind::internal_error;
    r.message = std::string("the GPU worker could not set up its device: ") + e.what();
    out.must_exit = true;
    return out;
  }
  out.result = session->evaluate(request, out.must_exit);
  return out;
}

}  // namespace sparserl::reward::gpu
