// GuardedBuffer: device memory for one kernel argument, fenced. Each array sits between two guard
// zones filled with 0xFF bytes (a NaN for float and double, -1 for int), so a kernel that writes past
// an array's end is caught when the guards are checked, and one that reads past it picks up a NaN or
// a -1 index and fails the check instead of passing on leftover data. An input's expected contents
// are kept as its SHA-256 tree digest (device_checks.hpp), taken on the device right after the
// upload and held on the host, out of a kernel's reach: after a run the evaluator digests the array
// again and compares (a kernel may not write its inputs). HostStaging is page-locked read-back memory.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sparserl::reward::gpu {

// Page-locked host memory for read-backs, kept by a worker across evaluations: a device-to-host copy
// into pageable memory runs at a fraction of the bus's speed, and a fresh vector per read-back is
// allocated and zeroed each time (on a matrix of 8M nonzeros, tens of megabytes several times an
// evaluation). Grows to the largest size asked for; where page-locked memory cannot be had, ordinary
// memory serves instead.
class HostStaging {
 public:
  HostStaging() = default;
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // `bytes` of staging memory, valid until the next call.
  std::span<std::uint8_t> get(std::size_t bytes);

 private:
  std::uint8_t* pinned_ = nullptr;
  std::size_t capacity_ = 0;
  std::vector<std::uint8_t> fallback_;
};

class GuardedBuffer {
 public:
  // Guard zone on each side; 0xFF-filled. Large enough to catch the usual off-by-a-block errors.
  static constexpr std::size_t kGuardBytes = 64 * 1024;

  GuardedBuffer() = default;
  GuardedBuffer(std::string name, std::size_t bytes);
  ~GuardedBuffer();
  GuardedBuffer(GuardedBuffer&& other) noexcept;
  GuardedBuffer& operator=(GuardedBuffer&& other) noexcept;
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  [[nodiscard]] void* data() const { return data_; }
  [[nodiscard]] std::size_t bytes() const { return bytes_; }
  [[nodiscard]] const std::string& name() const { return name_; }

  // Copies host bytes in (bytes() of them; zeros past the end of a shorter span) and waits.
  void upload(std::span<const std::uint8_t> host, cudaStream_t stream);
  // Fills the array (not the guards) with 0xFF bytes: NaN for floating point.
  void fill_nan(cudaStream_t stream);

  // The two guard zones, kGuardBytes each.
  [[nodiscard]] const void* guard_before() const { return base_; }
  [[nodiscard]] const void* guard_after() const { return base_ + kGuardBytes + bytes_; }

  // The digest of the contents an input is expected to keep (set after its upload).
  void set_expected_digest(const std::array<std::uint8_t, 32>& digest) { expected_digest_ = digest; }
  [[nodiscard]] const std::array<std::uint8_t, 32>& expected_digest() const { return expected_digest_; }

 private:
  void release() noexcept;

  std::string name_;
  std::uint8_t* base_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::array<std::uint8_t, 32> expected_digest_{};
};

}  // namespace sparserl::reward::gpu
