// Versioned splits into train / val / test. A split is made once, written to a text file that is
// never edited in place (a changed split is a new file with a new name), and read back as the task
// URIs of each part. Benchmarks name a split file, so two runs on "bench-v2" always see the same
// matrices; the split's digest (of its canonical text) goes into every run.json and report.
//
// Two file formats, told apart by their `# version` line:
//
// Version 1 (shared-v1): one SuiteSparse index divided by a pure function of (index, name, seed,
// ratios). Each matrix gets the key splitmix64(FNV-1a("GROUP/NAME") ^ splitmix64(seed)); matrices
// are ordered by (key, GROUP/NAME) and the first n_train go to train, the next n_val to val, the
// rest to test; the counts come from the ratios by the largest-remainder rule (ties to the earlier
// part), so they sum to the index size exactly.
//   # split NAME
//   # version 1
//   # seed SEED
//   # ratios TRAIN,VAL,TEST           (shortest round-trip decimals, summing to 1)
//   # index FILE MATRICES DIGEST      (the index's file name, size and SuiteSparseIndex::digest())
//   # counts train N val N test N
//   train GROUP/NAME                  (train lines, then val, then test, each sorted)
//
// Version 2 (bench-v2): a benchmark over several sources - the real matrices of shared indexes, a
// catalogue of the SuiteSparse collection (present where downloaded or mirrored), and generated
// matrices - every entry tagged with its regime (by nonzeros), its family (the collection group, or
// the generator family) and its source. Collection matrices are assigned to parts by GROUP, so no
// group spans two parts (make_benchmark_split); generated matrices come with their part (their
// parameters differ between parts, large_regime.hpp).
//   # split NAME
//   # version 2
//   # seed SEED
//   # ratios TRAIN,VAL,TEST
//   # source SOURCE NAME MATRICES DIGEST   (one line per input: shared, catalogue or generated)
//   # counts train N val N test N
//   PART URI REGIME FAMILY NNZ SOURCE      (train, then val, then test, each sorted by URI)
// Other '#' lines are comments in both versions.
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

// Matrices by size: small < 200,000 <= medium < 1,000,000 <= large nonzeros. Results are reported
// per regime, large first: small matrices are launch-bound and say little about kernel quality.
enum class Regime { small, medium, large };
inline constexpr std::array<Regime, 3> kRegimes = {Regime::small, Regime::medium, Regime::large};
inline constexpr std::int64_t kMediumRegimeMinNnz = 200'000;
inline constexpr std::int64_t kLargeRegimeMinNnz = 1'000'000;
Regime regime_of(std::int64_t nnz);
std::string_view to_string(Regime regime);
std::optional<Regime> parse_regime(std::string_view text);

// Where a benchmark split's matrix comes from: a shared index (real matrices on this machine), the
// collection's catalogue (present where downloaded or mirrored), or a generator.
enum class MatrixSource { shared, catalogue, generated };
std::string_view to_string(MatrixSource source);
std::optional<MatrixSource> parse_matrix_source(std::string_view text);

// One matrix of a split. A version-1 file gives only the URI and the group (nnz -1, no regime).
struct SplitEntry {
  std::string uri;     // canonical task URI (suitesparse-v1/... or gen-v1/...)
  std::string family;  // the collection group, or the generated family ("rmat", "stencil", ...)
  std::int64_t nnz = -1;
  std::optional<Regime> regime;
  MatrixSource source = MatrixSource::shared;
  friend bool operator==(const SplitEntry&, const SplitEntry&) = default;
};

// One input of a benchmark split, as the `# source` line records it.
struct SplitSource {
  MatrixSource source = MatrixSource::shared;
  std::string name;  // "matrices/INDEX.csv", "suitesparse-catalogue.csv", "large-v1"
  std::size_t size = 0;
  std::string digest;  // 16 hex digits over the input's GROUP/NAME keys or URIs
  friend bool operator==(const SplitSource&, const SplitSource&) = default;
};

// Which entries of a part a run takes: empty lists take everything.
struct SplitSelection {
  std::vector<Regime> regimes;
  std::vector<MatrixSource> sources;
  std::vector<std::string> families;
  [[nodiscard]] bool accepts(const SplitEntry& entry) const;
  [[nodiscard]] bool empty() const { return regimes.empty() && sources.empty() && families.empty(); }
  // "large; generated" / "all"
  [[nodiscard]] std::string describe() const;
};

struct Split {
  static constexpr int kFormatVersion = 1;
  static constexpr int kBenchmarkFormatVersion = 2;

  std::string name;
  int version = kFormatVersion;
  std::uint64_t seed = 0;
  std::array<double, 3> ratios = {0.0, 0.0, 0.0};
  // Version 1: the one index.
  std::string index_file;  // file name only, e.g. "INDEX.csv"
  std::size_t index_size = 0;
  std::string index_digest;                       // SuiteSparseIndex::digest()
  std::array<std::vector<std::string>, 3> parts;  // GROUP/NAME keys, sorted, per SplitPart
  // Version 2: its inputs.
  std::vector<SplitSource> sources;
  // Both versions: the entries of each part, sorted by URI (for version 1 made from `parts`).
  std::array<std::vector<SplitEntry>, 3> entries;

  [[nodiscard]] const std::vector<std::string>& keys(SplitPart part) const {
    return parts[static_cast<std::size_t>(part)];
  }
  [[nodiscard]] const std::vector<SplitEntry>& part_entries(SplitPart part) const {
    return entries[static_cast<std::size_t>(part)];
  }
  // The task URIs of a part, sorted.
  [[nodiscard]] std::vector<std::string> uris(SplitPart part) const;
  // The entries of a part that `selection` accepts, in file order.
  [[nodiscard]] std::vector<SplitEntry> select(SplitPart part, const SplitSelection& selection) const;
  // The part holding `uri` (canonicalised first) and its entry; nullopt when the split lacks it.
  [[nodiscard]] std::optional<std::pair<SplitPart, SplitEntry>> find(std::string_view uri) const;
  [[nodiscard]] std::size_t size() const;
  // 16 hex digits (FNV-1a) of format_split(*this): identifies the split's content, not its comments.
  [[nodiscard]] std::string digest() const;
};

// The version-1 split of an index (SplitError for a bad name or ratios, or an empty index).
Split make_split(const SuiteSparseIndex& index, const SplitSpec& spec);

// 16 hex digits (FNV-1a) over the sorted URIs, each followed by '\n' (as SuiteSparseIndex::digest
// over GROUP/NAME keys): the `# source` digest of a generated list.
std::string uri_set_digest(std::vector<std::string> uris);

// A matrix offered to make_benchmark_split. Collection matrices (suitesparse-v1 URIs) come without
// a part: they are assigned by group. Generated ones come with theirs.
struct SplitCandidate {
  std::string uri;
  std::string family;  // for collection matrices the group (taken from the URI when empty)
  std::int64_t nnz = 0;
  MatrixSource source = MatrixSource::shared;
  std::optional<SplitPart> part;
};

// A version-2 split. Collection matrices are assigned whole groups at a time, so train, val and
// test share no group: groups are visited in the order of splitmix64(FNV-1a(GROUP) ^
// splitmix64(seed)) and each goes to the part furthest below its quota (ratio x total; ties to the
// earlier part). Groups holding shared matrices are placed first, balanced by their shared
// matrices (so the real matrices at hand follow the ratios), then the other groups, balanced by
// all their matrices. A catalogue candidate with the URI of a shared one is the same matrix: the
// shared entry is kept. SplitError for a bad name or ratios, no candidates, a generated candidate
// without a part, a collection candidate with one, an nnz below 0, or a URI given twice by one
// source.
Split make_benchmark_split(const SplitSpec& spec, std::vector<SplitCandidate> candidates,
                           std::vector<SplitSource> sources);

// The file's text; parse_split(format_split(s)) == s.
std::string format_split(const Split& split);
// Throws SplitError "SOURCE:LINE: ..." for a malformed file: a missing or unknown header line, an
// unknown part, a key that is not GROUP/NAME (version 1), a URI that is not canonical, a regime that
// disagrees with the nonzeros, an unknown source (version 2), a matrix listed twice, counts that
// disagree.
Split parse_split(std::string_view text, const std::string& source);
Split read_split(const std::filesystem::path& file);
// Creates FILE; refuses (SplitError) when it exists: a split is never edited in place.
void write_split(const std::filesystem::path& file, const Split& split);

bool operator==(const Split& a, const Split& b);

}  // namespace sparserl::datasets
