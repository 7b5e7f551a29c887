// The project's deterministic random numbers: one seed gives the same stream on every compiler,
// standard library and CPU. The std:: distributions are implementation-defined (libstdc++ and
// libc++ turn the same engine output into different doubles), so generated matrices, sampled
// nonzeros and evaluation inputs draw from this instead: SplitMix64 expands (seed, stream) into the
// state of a xoshiro256** generator; doubles take the top 53 bits of one draw (exact, no rounding);
// integer ranges use Lemire's multiply-and-reject method, which is unbiased and needs one draw
// almost always.
#pragma once

#include <cstdint>

namespace sparserl::datasets {

// SplitMix64 (Steele, Lea, Flood 2014): advances `state` and returns the next well-mixed word.
inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// xoshiro256** 1.0 (Blackman, Vigna 2018). `stream` separates independent streams of one seed (the
// pattern of a generated matrix and its values, say) so that changing how many numbers one consumer
// draws never shifts another's.
class Rng {
 public:
  explicit Rng(std::uint64_t seed, std::uint64_t stream = 0) {
    // The stream goes through SplitMix first so that nearby (seed, stream) pairs stay apart.
    std::uint64_t mix = stream;
    std::uint64_t sm = seed ^ splitmix64(mix);
    for (std::uint64_t& word : s_) word = splitmix64(sm);
  }

  // A generator in a given state (not all zero): for checking against the reference implementation.
  static Rng from_state(std::uint64_t s0, std::uint64_t s1, std::uint64_t s2, std::uint64_t s3) {
    Rng rng(0);
    rng.s_[0] = s0;
    rng.s_[1] = s1;
    rng.s_[2] = s2;
    rng.s_[3] = s3;
    return rng;
  }

  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1): k * 2^-53 for k uniform in [0, 2^53); every value exactly representable.
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Uniform in [-1, 1): k * 2^-52 - 1 for k uniform in [0, 2^53); exact as well.
  double uniform_pm1() { return static_cast<double>(next() >> 11) * 0x1.0p-52 - 1.0; }

  // Uniform integer in [0, n), unbiased (Lemire 2019). n = 0 returns 0.
  std::uint64_t below(std::uint64_t n) {
    if (n == 0) return 0;
    std::uint64_t lo = 0;
    std::uint64_t hi = mul_wide(next(), n, lo);
    if (lo < n) {
      const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
      while (lo < threshold) hi = mul_wide(next(), n, lo);
    }
    return hi;
  }

  // Uniform integer in [lo, hi] (inclusive, hi >= lo).
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
    if (span == UINT64_MAX) return static_cast<std::int64_t>(next());
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + below(span + 1));
  }

  // True with probability p (p <= 0: never, p >= 1: always).
  bool bernoulli(double p) { return uniform01() < p; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  // The full 128-bit product, without __int128 (which -Wpedantic rejects): high word returned.
  static std::uint64_t mul_wide(std::uint64_t a, std::uint64_t b, std::uint64_t& low) {
    const std::uint64_t a_lo = a & 0xffffffffULL, a_hi = a >> 32;
    const std::uint64_t b_lo = b & 0xffffffffULL, b_hi = b >> 32;
    const std::uint64_t ll = a_lo * b_lo;
    const std::uint64_t lh = a_lo * b_hi;
    const std::uint64_t hl = a_hi * b_lo;
    const std::uint64_t hh = a_hi * b_hi;
    const std::uint64_t mid = (ll >> 32) + (lh & 0xffffffffULL) + (hl & 0xffffffffULL);
    low = (mid << 32) | (ll & 0xffffffffULL);
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
  }

  std::uint64_t s_[4] = {};
};

}  // namespace sparserl::datasets
