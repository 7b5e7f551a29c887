// SHA-256 (FIPS 180-4) for content addressing: compile-cache keys, program digests, result-cache
// keys. Written here so the library needs no crypto dependency; tested against the FIPS vectors.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sparserl::reward {

class Sha256 {
 public:
  Sha256();
  Sha256& update(std::string_view bytes);
  // Appends the length as 8 little-endian bytes, then the bytes: fields hashed this way cannot run
  // into each other ("ab"+"c" and "a"+"bc" differ).
  Sha256& update_field(std::string_view bytes);
  // The digest; the object must not be updated afterwards.
  std::array<std::uint8_t, 32> finish();
  std::string finish_hex();  // 64 lowercase hex digits

 private:
  void compress(const std::uint8_t* block);
  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t length_ = 0;
};

std::string sha256_hex(std::string_view bytes);

}  // namespace sparserl::reward
