// Internal to sparserl::datasets: 64-bit FNV-1a over bytes and its 16-hex-digit spelling, the one
// platform-independent hash behind index digests and the seeded order of split assignment.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sparserl::datasets::detail {

inline constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;

inline std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t hash = kFnvOffset) {
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

inline std::string hex16(std::uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 0; i < 16; ++i) out[15 - i] = kDigits[(v >> (4 * i)) & 0xfU];
  return out;
}

}  // namespace sparserl::datasets::detail
