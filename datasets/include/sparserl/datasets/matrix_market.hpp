// Matrix Market I/O: the reader that turns a .mtx file (plain, gzip-compressed, or inside a
// SuiteSparse .tar.gz archive) into a canonical SparseMatrix, and the writer that produces files
// the reader reads back bit for bit. The reader takes coordinate and array files with real, integer
// and pattern fields and general, symmetric, skew-symmetric and (real) hermitian symmetry; the
// stored triangle of a symmetric file is mirrored, duplicates are summed and counted, explicit
// zeros stay entries. Every malformed file, and every complex one, throws MatrixMarketError whose
// message starts "FILE:LINE: " and says what was expected and what was found, so a user can open
// the file at that line.
//
// The reader is built for large files: it reads big blocks (decompressing them when needed) and
// parses with std::from_chars, never through iostreams (tests/bench/mtx_reader_bench.cpp measures
// it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/datasets/sparse_matrix.hpp"

namespace sparserl::datasets {

// Everything that goes wrong while reading or writing a Matrix Market file. For problems inside the
// text, what() starts "FILE:LINE: " (FILE is "ARCHIVE(MEMBER)" for a file inside a tar archive);
// problems with the file as a whole (cannot open, no such archive member) start "FILE: ".
class MatrixMarketError : public std::runtime_error {
 public:
  MatrixMarketError(std::string file, std::int64_t line, const std::string& what);

  [[nodiscard]] const std::string& file() const { return file_; }
  // 1-based line of the problem; 0 when the problem is not tied to a line.
  [[nodiscard]] std::int64_t line() const { return line_; }

 private:
  std::string file_;
  std::int64_t line_;
};

enum class MmFormat { coordinate, array };
enum class MmField { real, integer, pattern };  // complex is rejected
enum class MmSymmetry { general, symmetric, skew_symmetric, hermitian };

std::string_view to_string(MmFormat format);
std::string_view to_string(MmField field);
std::string_view to_string(MmSymmetry symmetry);  // "skew-symmetric" as in the banner

struct ReadOptions {
  // NaN and infinities are rejected by default: a task whose matrix holds NaN cannot be checked.
  bool allow_non_finite = false;
  // For tar archives: the member to read (e.g. "west0067/west0067_b.mtx"). Empty: NAME/NAME.mtx for
  // an archive named NAME.tar.gz (NAME.tgz, NAME.tar), else the first member ending in .mtx.
  std::string archive_member;
};

// What the reader saw, for `sparserl data info` and for checking counts against an index.
struct ReadReport {
  std::string source;  // the file as named in error messages ("ARCHIVE(MEMBER)" for archives)
  MmFormat format = MmFormat::coordinate;
  MmField field = MmField::real;
  MmSymmetry symmetry = MmSymmetry::general;
  std::int64_t stored_entries = 0;    // entries written in the file (array: values written)
  std::int64_t expanded_entries = 0;  // after mirroring the symmetric triangle: stored*2 - diagonal
  std::int64_t duplicates_summed = 0;  // entries folded into an earlier one at the same (row, col)
  std::int64_t explicit_zeros = 0;     // stored entries whose value is 0 (kept as entries)
  // Values found on the entry lines of a `pattern` file and ignored: some collection files
  // (Pajek/Ragusa16) declare `pattern` yet carry a value on every line, which the collection's own
  // tools read as a pattern too.
  std::int64_t ignored_values = 0;
  std::int64_t lines = 0;              // lines of text read
  std::int64_t bytes = 0;              // bytes of Matrix Market text (after decompression)
  // The first comment lines after the banner (at most 64), without their '%'.
  std::vector<std::string> comments;
};

struct MatrixMarketFile {
  SparseMatrix matrix;
  ReadReport report;
};

// Reads FILE: plain text, gzip (detected from its first bytes, not its name), or a tar archive
// (optionally gzip-compressed) holding the matrix as a member.
MatrixMarketFile read_matrix_market(const std::filesystem::path& path,
                                    const ReadOptions& options = {});

// The entries of FILE after mirroring and before duplicates are summed, in file order (the first
// half of read_matrix_market, which then builds the SparseMatrix with from_triplets): for streaming
// tools and for timing the parser alone. report.duplicates_summed is 0 here.
struct MatrixMarketEntries {
  Index rows = 0;
  Index cols = 0;
  std::vector<Triplet> entries;
  ReadReport report;
};
MatrixMarketEntries read_matrix_market_entries(const std::filesystem::path& path,
                                               const ReadOptions& options = {});
// Parses Matrix Market text held in memory; `source` names it in error messages.
MatrixMarketFile parse_matrix_market(std::string_view text, std::string_view source = "<text>",
                                     const ReadOptions& options = {});

// The regular-file members of a tar archive (optionally gzip-compressed), in archive order.
std::vector<std::string> list_archive_members(const std::filesystem::path& archive);

struct WriteOptions {
  // integer: every value must be an integer below 2^53 in magnitude (std::invalid_argument
  // otherwise); pattern: values are dropped (they read back as 1).
  MmField field = MmField::real;
  // Write only the lower triangle under a `symmetric` banner. The matrix must be square and
  // symmetric in pattern and values (std::invalid_argument otherwise; see is_symmetric).
  bool symmetric = false;
  // Comment lines written after the banner; "% " is prepended, embedded newlines start new lines.
  std::vector<std::string> comments;
};

// True when a == transpose(a) exactly (pattern and values).
bool is_symmetric(const SparseMatrix& a);

// The file's text: coordinate format, values in the shortest form that parses back to the same
// double.
std::string format_matrix_market(const SparseMatrix& a, const WriteOptions& options = {});

// Writes FILE atomically (a temporary file beside it, then rename): a reader never sees half a
// file. A name ending in ".gz" is written gzip-compressed. read(write(a)) == a exactly.
void write_matrix_market(const std::filesystem::path& path, const SparseMatrix& a,
                         const WriteOptions& options = {});

// Writes a gzip-compressed tar archive holding one member, laid out like the SuiteSparse
// collection's archives (member "NAME/NAME.mtx" for NAME.tar.gz unless `member` names another),
// atomically.
void write_matrix_market_archive(const std::filesystem::path& archive, const SparseMatrix& a,
                                 const WriteOptions& options = {}, std::string member = {});

}  // namespace sparserl::datasets
