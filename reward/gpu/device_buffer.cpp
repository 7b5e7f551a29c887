// Guarded device arrays (device_buffer.hpp).
#include "gpu/device_buffer.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "gpu/cuda_errors.hpp"

namespace sparserl::reward::gpu {

HostStaging::~HostStaging() {
  if (pinned_ != nullptr) cudaFreeHost(pinned_);
}

std::span<std::uint8_t> HostStaging::get(std::size_t bytes) {
  if (bytes <= capacity_) return {pinned_, bytes};
  if (bytes <= fallback_.size()) return {fallback_.data(), bytes};
  if (pinned_ != nullptr) cudaFreeHost(pinned_);
  pinned_ = nullptr;
  capacity_ = 0;
  // A quarter more than asked, so that slightly larger arrays do not reallocate each time.
  const std::size_t want = bytes + bytes / 4;
  void* p = nullptr;
  if (cudaMallocHost(&p, want) == cudaSuccess) {
    pinned_ = static_cast<std::uint8_t*>(p);
    capacity_ = want;
    fallback_ = {};
    return {pinned_, bytes};
  }
  (void)cudaGetLastError();  // a failed allocation is not sticky; clear it for the next check
  fallback_.resize(bytes);
  return {fallback_.data(), bytes};
}

GuardedBuffer::GuardedBuffer(std::string name, std::size_t bytes) : name_(std::move(name)), bytes_(bytes) {
  const std::size_t total = bytes + 2 * kGuardBytes;
  void* base = nullptr;
  check_cuda(cudaMalloc(&base, total), ("cudaMalloc " + name_).c_str());
  base_ = static_cast<std::uint8_t*>(base);
  data_ = base_ + kGuardBytes;
  check_cuda(cudaMemset(base_, 0xFF, total), ("fill " + name_).c_str());
  // cudaMemset runs on the legacy stream, which the session's non-blocking stream does not wait
  // for: without this the fill could land after upload() and corrupt an input (seen on the H100
  // as a spurious input_mutated verdict).
  check_cuda(cudaDeviceSynchronize(), ("fill " + name_).c_str());
}

GuardedBuffer::~GuardedBuffer() { release(); }

GuardedBuffer::GuardedBuffer(GuardedBuffer&& other) noexcept { *this = std::move(other); }

GuardedBuffer& GuardedBuffer::operator=(GuardedBuffer&& other) noexcept {
  if (this != &other) {
    release();
    name_ = std::move(other.name_);
    base_ = std::exchange(other.base_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    expected_digest_ = other.expected_digest_;
  }
  return *this;
}

void GuardedBuffer::release() noexcept {
  if (base_ != nullptr) cudaFree(base_);
  base_ = nullptr;
  data_ = nullptr;
}

void GuardedBuffer::upload(std::span<const std::uint8_t> host, cudaStream_t stream) {
  const std::size_t n = std::min(host.size(), bytes_);
  if (n > 0) {
    check_cuda(cudaMemcpyAsync(data_, host.data(), n, cudaMemcpyHostToDevice, stream), ("upload " + name_).c_str());
  }
  if (n < bytes_) {
    check_cuda(cudaMemsetAsync(static_cast<std::uint8_t*>(data_) + n, 0, bytes_ - n, stream),
               ("upload " + name_).c_str());
  }
  check_cuda(cudaStreamSynchronize(stream), ("upload " + name_).c_str());
}

void GuardedBuffer::fill_nan(cudaStream_t stream) {
  check_cuda(cudaMemsetAsync(data_, 0xFF, bytes_, stream), ("NaN-fill " + name_).c_str());
}

}  // namespace sparserl::reward::gpu
