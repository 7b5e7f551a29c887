// Internal to sparserl::datasets: what the two generator sources share. generators.cpp holds the
// original kinds, the modifiers and generate(); generator_families.cpp the families of the large
// benchmark regime (road, circuit, lp, lognormal, blocksparse, kron) and the common permute
// modifier. Both read keys through SpecReader (one message format: "URI: key 'K' ..."), build a
// Pattern (CSR without values), and draw from the streams below, so that what one consumer draws
// never shifts another's numbers.
#pragma once

#include <charconv>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "sparserl/datasets/generators.hpp"
#include "sparserl/datasets/random.hpp"
#include "sparserl/datasets/sparse_matrix.hpp"

namespace sparserl::datasets::detail {

// Independent streams of one seed (random.hpp).
inline constexpr std::uint64_t kPatternStream = 1;
inline constexpr std::uint64_t kModifierStream = 2;
inline constexpr std::uint64_t kValueStream = 3;
inline constexpr std::uint64_t kPermuteStream = 4;  // rmat's own vertex relabelling
inline constexpr std::uint64_t kRelabelStream = 5;  // the common `permute` modifier

// Every key of a spec, read once, typed and range-checked; failures name the URI and the key.
class SpecReader {
 public:
  explicit SpecReader(const GeneratorSpec& spec) : spec_(spec), uri_(spec.uri()) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw std::invalid_argument(uri_ + ": key '" + key + "' " + what);
  }

  [[nodiscard]] bool has(const std::string& key) const { return spec_.params.count(key) != 0; }

  [[nodiscard]] std::int64_t integer(const std::string& key, std::int64_t fallback,
                                     std::int64_t min, std::int64_t max) const {
    const auto it = spec_.params.find(key);
    if (it == spec_.params.end()) return fallback;
    const std::string& text = it->second;
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < min || v > max) {
      fail(key, "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                    "], not '" + text + "'");
    }
    return v;
  }

  [[nodiscard]] std::uint64_t unsigned64(const std::string& key, std::uint64_t fallback) const {
    const auto it = spec_.params.find(key);
    if (it == spec_.params.end()) return fallback;
    const std::string& text = it->second;
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) {
      fail(key, "must be an unsigned 64-bit integer, not '" + text + "'");
    }
    return v;
  }

  [[nodiscard]] double real(const std::string& key, double fallback, double min, double max) const {
    const auto it = spec_.params.find(key);
    if (it == spec_.params.end()) return fallback;
    const std::string& text = it->second;
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || !(v >= min && v <= max)) {
      fail(key,
           "must be a number in [" + format(min) + ", " + format(max) + "], not '" + text + "'");
    }
    return v;
  }

  [[nodiscard]] bool boolean(const std::string& key, bool fallback) const {
    const auto it = spec_.params.find(key);
    if (it == spec_.params.end()) return fallback;
    if (it->second == "0" || it->second == "false") return false;
    if (it->second == "1" || it->second == "true") return true;
    fail(key, "must be 0 or 1, not '" + it->second + "'");
  }

  // The value as written, or `fallback` when the key is absent.
  [[nodiscard]] std::string text(const std::string& key, const std::string& fallback) const {
    const auto it = spec_.params.find(key);
    return it == spec_.params.end() ? fallback : it->second;
  }

  [[nodiscard]] const std::string& uri() const { return uri_; }

 private:
  static std::string format(double v) {
    std::string s = std::to_string(v);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }

  const GeneratorSpec& spec_;
  std::string uri_;
};

// Refuses a matrix beyond the ABI's 32-bit indices, naming the key that made it so.
inline void check_size(const SpecReader& in, const std::string& key, const char* what,
                       std::int64_t value) {
  if (value > kMaxIndex) {
    in.fail(key, std::string("gives ") + what + " = " + std::to_string(value) +
                     ", beyond the 32-bit index range (" + std::to_string(kMaxIndex) + ")");
  }
}

// Saturating product and sum of non-negative sizes, enough for size bounds.
inline std::int64_t times(std::int64_t x, std::int64_t y) {
  if (x == 0 || y == 0) return 0;
  if (x > INT64_MAX / y) return INT64_MAX;
  return x * y;
}

inline std::int64_t plus(std::int64_t x, std::int64_t y) {
  return x > INT64_MAX - y ? INT64_MAX : x + y;
}

// A matrix's pattern under construction: CSR without values.
struct Pattern {
  Index rows = 0, cols = 0;
  std::vector<Index> row_ptr{0};
  std::vector<Index> col_idx;

  void end_row() { row_ptr.push_back(static_cast<Index>(col_idx.size())); }
};

// k distinct integers of [0, n), sorted, uniformly among all k-subsets.
void sample_distinct(Rng& rng, std::int64_t n, std::int64_t k, std::vector<Index>& out);

// Entries given as (row, col) pairs in any order, duplicates allowed, as a canonical pattern: a
// counting sort by row, then fold_rows. The pairs' storage is released once they are sorted.
Pattern pattern_from_pairs(Index rows, Index cols, std::vector<Index> pair_row,
                           std::vector<Index> pair_col);
// Rows given as segments [start[i], start[i+1]) of `entries`, in any order with duplicates: each
// sorted, its duplicates folded, and all packed into a canonical pattern.
Pattern fold_rows(Index rows, Index cols, const std::vector<std::int64_t>& start,
                  std::vector<Index> entries);

// The families of generator_families.cpp: their typed parameters, made at validation time without
// allocating or loading anything.
struct FamilyPlan {
  std::string kind;
  std::int64_t rows = 0, cols = 0;  // -1: known once kron's base is loaded
  std::int64_t nnz_bound = 0;       // -1: known once drawn (lp, lognormal) or loaded (kron)
  std::int64_t nx = 0, ny = 0;      // road
  double keep = 0.0, long_range = 0.0;
  std::int64_t near = 0, spread = 0, far = 0;  // circuit
  std::int64_t dense_rows = 0, dense_cols = 0;
  double dense_len = 0.0;
  double min_len = 0.0, alpha = 0.0;  // lp
  double median = 0.0, sigma = 0.0;   // lognormal
  std::int64_t max_len = 0;           // lp, lognormal
  // blocksparse
  std::int64_t block = 0, block_rows = 0, block_cols = 0, blocks_per_row = 0;
  bool align = true;
  double fill = 1.0;
  std::string base_uri;  // kron: suitesparse-v1/GROUP/NAME
  std::int64_t n = 0, per_row = 0;
  bool real_outer = true;
};

const std::vector<GeneratorKind>& family_kinds();
bool is_family_kind(const std::string& kind);
// Reads and checks the family's own keys (generators.cpp reads the common ones).
FamilyPlan make_family_plan(const SpecReader& in, const std::string& kind);
// The family's pattern, drawn from the pattern stream `rng`; kron loads its base through `loader`.
Pattern build_family(const FamilyPlan& p, const SpecReader& in, Rng& rng,
                     const MatrixLoader& loader);
// The common permute modifier: rows and columns relabelled by permute_relabelling(seed, ...).
void relabel(Pattern& m, std::uint64_t seed);

}  // namespace sparserl::datasets::detail
