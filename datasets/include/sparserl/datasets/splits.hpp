// Versioned splits of a SuiteSparse index into train / val / test. A split is made once, by a pure
// function of (index, name, seed, ratios), written to a text file that is never edited in place (a
// changed split is a new file with a new name), and read back as the URIs of each part. Benchmarks
// name a split file, so two runs on "shared-v1" always see the same matrices.
//
// Assignment: each matrix gets the key splitmix64(FNV-1a("GROUP/NAME") ^ splitmix64(seed));
// matrices are ordered by (key, GROUP/NAME) and the first n_train go to train, the next n_val to
// val, the rest to test. The counts come from the ratios by the largest-remainder rule (ties to the
// earlier part), so they sum to the index size exactly. Nothing depends on the index's row order or
// other columns.
//
// File format (text, '\n' line ends):
//   # split NAME
//   # version 1                       (of this file format)
//   # seed SEED
//   # ratios TRAIN,VAL,TEST           (shortest round-trip decimals, summing to 1)
//   # index FILE MATRICES DIGEST      (the index's file name, size and SuiteSparseIndex::digest())
//   # counts train N val N test N
//   # ...                             (other '#' lines are comments)
//   train GROUP/NAME                  (one line per matrix: train lines, then val, then test, each
//   ...                                sorted by GROUP/NAME)
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/datasets/suitesparse_index.hpp"

namespace sparserl::datasets {

// A malformed split file or spec; what() names the file and line (or the spec's field).
class SplitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class SplitPart { train, val, test };
inline constexpr std::array<SplitPart, 3> kSplitParts = {SplitPart::train, SplitPart::val,
                                                         SplitPart::test};
std::string_view to_string(SplitPart part);
std::optional<SplitPart> parse_split_part(std::string_view text);

struct SplitSpec {
  // Letters, digits, '_', '-', '.'; by convention it ends in a version: "shared-v1".
  std::string name;
  std::uint64_t seed = 0;
  std::array<double, 3> ratios = {0.6, 0.2, 0.2};  // train, val, test
};

// "0.6,0.2,0.2" -> {0.6, 0.2, 0.2}; three non-negative numbers summing to 1 (within 1e-9), else
// SplitError naming the text.
std::array<double, 3> parse_ratios(std::string_view text);

struct Split {
  static constexpr int kFormatVersion = 1;

  std::string name;
  int version = kFormatVersion;
  std::uint64_t seed = 0;
  std::array<double, 3> ratios = {0.0, 0.0, 0.0};
  std::string index_file;  // file name only, e.g. "INDEX.csv"
  std::size_t index_size = 0;
  std::string index_digest;                       // SuiteSparseIndex::digest()
  std::array<std::vector<std::string>, 3> parts;  // GROUP/NAME keys, sorted, per SplitPart

  [[nodiscard]] const std::vector<std::string>& keys(SplitPart part) const {
    return parts[static_cast<std::size_t>(part)];
  }
  // "suitesparse-v1/GROUP/NAME" task URIs of a part, sorted.
  [[nodiscard]] std::vector<std::string> uris(SplitPart part) const;
  [[nodiscard]] std::size_t size() const;
};

// The split of an index (SplitError for a bad name or ratios, or an empty index).
Split make_split(const SuiteSparseIndex& index, const SplitSpec& spec);

// The file's text; parse_split(format_split(s)) == s.
std::string format_split(const Split& split);
// Throws SplitError "SOURCE:LINE: ..." for a malformed file: a missing or unknown header line, an
// unknown part, a key that is not GROUP/NAME, a matrix listed twice, counts that disagree.
Split parse_split(std::string_view text, const std::string& source);
Split read_split(const std::filesystem::path& file);
// Creates FILE; refuses (SplitError) when it exists: a split is never edited in place.
void write_split(const std::filesystem::path& file, const Split& split);

bool operator==(const Split& a, const Split& b);

}  // namespace sparserl::datasets
