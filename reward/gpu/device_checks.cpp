// The GPU worker's device-side checks (device_checks.hpp): NVRTC compile and load of the check
// kernels, the digest tree, the guard checks and the output comparison.
#include "gpu/device_checks.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "gpu/cuda_errors.hpp"
#include "sparserl/reward/compiler.hpp"

namespace sparserl::reward::gpu {
namespace {

constexpr std::size_t kChunk = 1024;  // bytes a thread digests (a multiple of 64)
constexpr unsigned kThreads = 256;    // compare_* assume 256
constexpr std::size_t kMaxCompareBlocks = 1024;

std::size_t chunks_of(std::size_t bytes) { return std::max<std::size_t>(1, (bytes + kChunk - 1) / kChunk); }

// Scratch a digest of `bytes` needs: the first level's digests, then the second's (the later
// levels reuse the two halves in turn, each smaller than the one before).
std::size_t scratch_for(std::size_t bytes) {
  const std::size_t first = chunks_of(bytes) * 32;
  return first + chunks_of(first) * 32;
}

std::size_t align_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// `area` (device memory of `capacity` bytes, or null) replaced by a fresh allocation of `bytes` when
// it is smaller; its contents are not kept. Returns the area.
std::uint8_t* grown(std::uint8_t*& area, std::size_t& capacity, std::size_t bytes, const char* what) {
  if (bytes > capacity) {
    if (area != nullptr) cudaFree(area);
    area = nullptr;
    capacity = 0;
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, bytes), what);
    area = static_cast<std::uint8_t*>(p);
    capacity = bytes;
  }
  return area;
}

}  // namespace

std::string DeviceChecks::compile_kernels(int device) {
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  CompileRequest request;
  request.source = std::string(device_checks_source());
  request.arch = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
  request.options = device_checks_options();
  request.name = "sparserl_device_checks.cu";
  CompileResult compiled = compile(request);
  if (!compiled.ok) throw std::runtime_error("compiling the device checks for " + request.arch + ": " + compiled.log);
  return std::move(compiled.cubin);
}

DeviceChecks::DeviceChecks(std::string cubin) : cubin_(std::move(cubin)) { load(); }

void DeviceChecks::load() {
  if (library_ != nullptr) check_cuda(cudaLibraryUnload(library_), "unloading the device checks");
  library_ = nullptr;
  check_cuda(cudaLibraryLoadData(&library_, cubin_.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
             "loading the device checks");
  check_cuda(cudaLibraryGetKernel(&sha256_, library_, "sha256_chunks"), "sha256_chunks");
  check_cuda(cudaLibraryGetKernel(&guards_, library_, "guards_intact"), "guards_intact");
  check_cuda(cudaLibraryGetKernel(&compare_f32_, library_, "compare_f32"), "compare_f32");
  check_cuda(cudaLibraryGetKernel(&compare_f64_, library_, "compare_f64"), "compare_f64");
  stale_ = false;
}

DeviceChecks::~DeviceChecks() {
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (results_ != nullptr) cudaFree(results_);
  if (library_ != nullptr) cudaLibraryUnload(library_);
}

void DeviceChecks::launch(cudaKernel_t kernel, unsigned grid, unsigned block, void** args, cudaStream_t stream) {
  check_cuda(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(grid), dim3(block), args, 0, stream),
             "device check launch");
  ++launches_;
}

std::uint8_t* DeviceChecks::results(std::size_t bytes) {
  return grown(results_, results_bytes_, bytes, "cudaMalloc (device check results)");
}

void DeviceChecks::digest_async(const Region& region, std::uint8_t* out, cudaStream_t stream) {
  if (reinterpret_cast<std::uintptr_t>(region.data) % 16 != 0) {
    throw std::logic_error("DeviceChecks: a digested array must be 16-byte aligned");
  }
  const std::uint8_t* in = static_cast<const std::uint8_t*>(region.data);
  std::uint64_t bytes = region.bytes;
  std::uint8_t* halves[2] = {scratch_, scratch_ + chunks_of(region.bytes) * 32};
  for (int level = 0;; ++level) {
    std::uint64_t chunks = chunks_of(bytes);
    std::uint64_t chunk = kChunk;
    std::uint8_t* target = chunks == 1 ? out : halves[level % 2];
    void* args[] = {&in, &bytes, &chunk, &chunks, &target};
    launch(sha256_, static_cast<unsigned>((chunks + 127) / 128), 128, args, stream);
    if (chunks == 1) return;
    in = target;
    bytes = chunks * 32;
  }
}

void DeviceChecks::inspect(std::span<const Region> regions, std::span<const Guards> guards, cudaStream_t stream,
                           std::vector<Digest>& digests, std::vector<bool>& intact) {
  if (stale_) load();
  std::size_t scratch = 0;
  for (const Region& r : regions) scratch = std::max(scratch, scratch_for(r.bytes));
  grown(scratch_, scratch_bytes_, scratch, "cudaMalloc (digest scratch)");
  const std::size_t flags_at = regions.size() * 32;
  const std::size_t total = align_up(flags_at + guards.size() * sizeof(unsigned), 16) + 16;
  std::uint8_t* out = results(total);
  if (!guards.empty()) {
    check_cuda(cudaMemsetAsync(out + flags_at, 0, guards.size() * sizeof(unsigned), stream), "guard flags");
  }
  for (std::size_t i = 0; i < regions.size(); ++i) digest_async(regions[i], out + 32 * i, stream);
  for (std::size_t j = 0; j < guards.size(); ++j) {
    const void* before = guards[j].before;
    const void* after = guards[j].after;
    std::uint64_t bytes = guards[j].bytes;
    unsigned* flag = reinterpret_cast<unsigned*>(out + flags_at) + j;
    void* args[] = {&before, &after, &bytes, &flag};
    launch(guards_, static_cast<unsigned>(std::clamp<std::uint64_t>((bytes + 255) / 256, 1, 256)), 256, args,
           stream);
  }
  const std::span<std::uint8_t> host = host_.get(std::max<std::size_t>(1, flags_at + guards.size() * sizeof(unsigned)));
  check_cuda(cudaMemcpyAsync(host.data(), out, flags_at + guards.size() * sizeof(unsigned), cudaMemcpyDeviceToHost,
                             stream),
             "device check results");
  check_cuda(cudaStreamSynchronize(stream), "device checks");
  digests.resize(regions.size());
  for (std::size_t i = 0; i < regions.size(); ++i) std::memcpy(digests[i].data(), host.data() + 32 * i, 32);
  intact.resize(guards.size());
  for (std::size_t j = 0; j < guards.size(); ++j) {
    unsigned broken = 0;
    std::memcpy(&broken, host.data() + flags_at + j * sizeof(unsigned), sizeof(unsigned));
    intact[j] = broken == 0;
  }
}

Digest DeviceChecks::digest(const Region& region, cudaStream_t stream) {
  std::vector<Digest> digests;
  std::vector<bool> intact;
  inspect({&region, 1}, {}, stream, digests, intact);
  return digests.front();
}

OutputTally DeviceChecks::compare(const Csr& csr, const void* x, const void* y, DType dtype, int k, double factor,
                                  cudaStream_t stream) {
  if (stale_) load();
  const std::size_t blocks =
      std::clamp<std::size_t>((static_cast<std::size_t>(csr.rows) + kThreads / 32 - 1) / (kThreads / 32), 1,
                              kMaxCompareBlocks);
  std::uint8_t* out = results(blocks * sizeof(OutputTally));
  const void* row_ptr = csr.row_ptr;
  const void* col_idx = csr.col_idx;
  const void* val = csr.val;
  std::int64_t rows = csr.rows, cols = csr.cols, nnz = csr.nnz;
  double scale0 = factor * dtype_epsilon(dtype);  // the host's factor * eps, rounded once
  double largest = dtype_largest(dtype);
  void* tallies = out;
  void* args[] = {&row_ptr, &col_idx, &val, &x, &y, &rows, &cols, &nnz, &k, &scale0, &largest, &tallies};
  launch(dtype == DType::f32 ? compare_f32_ : compare_f64_, static_cast<unsigned>(blocks), kThreads, args, stream);
  const std::span<std::uint8_t> host = host_.get(blocks * sizeof(OutputTally));
  check_cuda(cudaMemcpyAsync(host.data(), out, host.size(), cudaMemcpyDeviceToHost, stream), "output tallies");
  check_cuda(cudaStreamSynchronize(stream), "output check");
  OutputTally total;
  for (std::size_t b = 0; b < blocks; ++b) {
    OutputTally t;
    std::memcpy(&t, host.data() + b * sizeof(OutputTally), sizeof(OutputTally));
    total = merge(total, t);
  }
  return total;
}

}  // namespace sparserl::reward::gpu
