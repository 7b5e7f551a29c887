// The Matrix Market reader of matrix_market.hpp (the writer is matrix_market_writer.cpp). It pulls
// 4 MiB blocks from a byte source (compressed_input.hpp), cuts them into lines with memchr and
// parses numbers with std::from_chars; the entry loop is specialised per field so the common path
// is a handful of branches per line. A line that fails the fast path is re-examined by a slow
// diagnostic that names exactly what was expected and what was found.
#include "sparserl/datasets/matrix_market.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "compressed_input.hpp"
#include "compressed_output.hpp"
#include "sparserl/datasets/enum_names.hpp"

namespace sparserl::datasets {

MatrixMarketError::MatrixMarketError(std::string file, std::int64_t line, const std::string& what)
    : std::runtime_error(line > 0 ? file + ":" + std::to_string(line) + ": " + what
                                  : file + ": " + what),
      file_(std::move(file)),
      line_(line) {}

namespace {

constexpr auto kMmFormatNames =
    enum_names<MmFormat::coordinate, MmFormat::array>({"coordinate", "array"});
constexpr auto kMmFieldNames =
    enum_names<MmField::real, MmField::pattern>({"real", "integer", "pattern"});
constexpr auto kMmSymmetryNames = enum_names<MmSymmetry::general, MmSymmetry::hermitian>(
    {"general", "symmetric", "skew-symmetric", "hermitian"});

}  // namespace

std::string_view to_string(MmFormat format) { return kMmFormatNames.name(format); }
std::string_view to_string(MmField field) { return kMmFieldNames.name(field); }
std::string_view to_string(MmSymmetry symmetry) { return kMmSymmetryNames.name(symmetry); }

namespace {

using detail::ByteSource;
using detail::InputError;

constexpr std::size_t kBlockBytes = std::size_t{1} << 22;
constexpr std::size_t kMaxLineBytes = std::size_t{1} << 26;
constexpr std::size_t kMaxComments = 64;

// Splits a byte source into lines ("\n" or "\r\n"; the '\r' is left for the parser's whitespace).
class LineReader {
 public:
  // The buffer keeps kSlack bytes past its capacity so that fast paths may load 8 bytes at any
  // position before the end of the data.
  static constexpr std::size_t kSlack = 16;

  // A small file gets a buffer of its size (allocating and clearing 4 MiB would cost more than
  // reading it); anything else reads in kBlockBytes blocks.
  LineReader(ByteSource& src, std::optional<std::uint64_t> size_hint)
      : src_(src),
        buf_(std::clamp<std::uint64_t>(size_hint.value_or(kBlockBytes) + 1, 4096, kBlockBytes) +
             kSlack) {}

  bool next(std::string_view& line) {
    for (;;) {
      const char* begin = buf_.data() + pos_;
      const auto* nl = static_cast<const char*>(std::memchr(begin, '\n', end_ - pos_));
      if (nl != nullptr) {
        line = std::string_view(begin, static_cast<std::size_t>(nl - begin));
        pos_ += line.size() + 1;
        ++number_;
        return true;
      }
      if (eof_) {
        if (pos_ == end_) return false;
        line = std::string_view(begin, end_ - pos_);
        pos_ = end_;
        ++number_;
        return true;
      }
      fill();
    }
  }

  // The unread complete lines in the buffer: [begin, end) ends just past a '\n', or at the end of
  // the stream. False when nothing is left. The caller reports what it used through consume().
  bool complete_lines(const char*& begin, const char*& end) {
    for (;;) {
      if (complete_ > pos_) {
        begin = buf_.data() + pos_;
        end = buf_.data() + complete_;
        return true;
      }
      if (eof_) {
        if (pos_ == end_) return false;
        complete_ = end_;
        continue;
      }
      fill();
    }
  }

  // Marks everything before `at` (inside the last complete_lines span) as read: `lines` lines.
  void consume(const char* at, std::int64_t lines) {
    pos_ = static_cast<std::size_t>(at - buf_.data());
    number_ += lines;
  }

  [[nodiscard]] std::int64_t number() const { return number_; }
  [[nodiscard]] std::int64_t bytes() const { return bytes_; }

 private:
  void fill() {
    const std::size_t carry = end_ - pos_;
    if (carry > 0 && pos_ > 0) std::memmove(buf_.data(), buf_.data() + pos_, carry);
    pos_ = 0;
    end_ = carry;
    const std::size_t capacity = buf_.size() - kSlack;
    if (end_ == capacity) {
      if (capacity >= kMaxLineBytes) {
        throw InputError("a line longer than " + std::to_string(kMaxLineBytes >> 20) +
                         " MiB (is this a Matrix Market text file?)");
      }
      buf_.resize(capacity * 2 + kSlack);
    }
    const std::size_t got = src_.read(buf_.data() + end_, buf_.size() - kSlack - end_);
    if (got == 0) eof_ = true;
    end_ += got;
    bytes_ += static_cast<std::int64_t>(got);
    complete_ = 0;
    for (std::size_t i = end_; i > 0; --i) {
      if (buf_[i - 1] == '\n') {
        complete_ = i;
        break;
      }
    }
  }

  ByteSource& src_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;
  std::size_t complete_ = 0;  // just past the last '\n' in the buffer (0: none)
  bool eof_ = false;
  std::int64_t number_ = 0;
  std::int64_t bytes_ = 0;
};

inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

// Where a number token may end: whitespace, or the '\n' that the block parser leaves in place.
inline bool is_token_end(char c) { return is_space(c) || c == '\n'; }

inline const char* skip_space(const char* p, const char* e) {
  while (p < e && is_space(*p)) ++p;
  return p;
}

// A blank or comment line: nothing but whitespace, or '%' as its first visible character.
inline bool is_skippable(std::string_view line) {
  const char* p = skip_space(line.data(), line.data() + line.size());
  return p == line.data() + line.size() || *p == '%';
}

inline bool is_digit(char c) { return static_cast<unsigned char>(c) - unsigned{'0'} <= 9U; }

// Parses a decimal integer token ending at whitespace or the end; nullptr if it is not one. Plain
// digit strings (every index in practice) take an inline loop: libstdc++'s from_chars for integers
// cost as much as the double parsing in profiles; signs and very long tokens take from_chars.
inline const char* parse_integer(const char* p, const char* e, std::int64_t& v) {
  if (p < e && is_digit(*p)) {
    std::int64_t x = 0;
    const char* q = p;
    for (; q < e && is_digit(*q) && q - p < 18; ++q) x = x * 10 + (*q - '0');
    if (q == e || is_token_end(*q)) {
      v = x;
      return q;
    }
    if (q - p < 18) return nullptr;
  }
  auto [q, ec] = std::from_chars(p, e, v);
  if (ec != std::errc() || (q < e && !is_token_end(*q))) return nullptr;
  return q;
}

// Reads an index of 1 to 7 digits that ends inside [p, e) at whitespace without a loop over its
// digits (the bytes are checked and converted eight at a time, as fast_float does): the branch at
// the end of a per-digit loop mispredicts on every index of random length. Loads 8 bytes at p, so
// the buffer must extend 8 bytes past e. Anything else goes to parse_integer.
inline const char* parse_index(const char* p, const char* e, std::int64_t& v) {
  if constexpr (std::endian::native == std::endian::little) {
    std::uint64_t x = 0;
    std::memcpy(&x, p, 8);
    const std::uint64_t high = 0xF0F0F0F0F0F0F0F0ULL;
    const std::uint64_t threes = 0x3030303030303030ULL;
    const std::uint64_t not_digit =
        ((x & high) ^ threes) | (((x + 0x0606060606060606ULL) & high) ^ threes);
    if (not_digit != 0) {
      const int len = std::countr_zero(not_digit) >> 3;
      const char* q = p + len;
      if (len > 0 && q < e && is_token_end(*q)) {
        std::uint64_t d = (x - threes) << (64 - 8 * len);
        d = d * 10 + (d >> 8);
        d = (((d & 0x000000FF000000FFULL) * 0x000F424000000064ULL) +
             (((d >> 16) & 0x000000FF000000FFULL) * 0x0000271000000001ULL)) >>
            32;
        v = static_cast<std::int64_t>(static_cast<std::uint32_t>(d));
        return q;
      }
    }
  }
  return parse_integer(p, e, v);
}

// Parses a real token (from_chars syntax plus a leading '+'); nullptr if it is not one. Magnitudes
// beyond double's range become +-inf or +-0 as strtod would round them.
inline const char* parse_real(const char* p, const char* e, double& v) {
  const char* s = p;
  if (s < e && *s == '+' && s + 1 < e && s[1] != '-' && s[1] != '+') ++s;
  auto [q, ec] = std::from_chars(s, e, v, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    const std::string token(s, static_cast<std::size_t>(q - s));
    v = std::strtod(token.c_str(), nullptr);
    ec = std::errc();
  }
  if (ec != std::errc() || (q < e && !is_token_end(*q))) return nullptr;
  return q;
}

// An integer field's value: an integer token; integers beyond int64 are taken as reals.
inline const char* parse_integer_value(const char* p, const char* e, double& v) {
  if (p < e && *p == '+' && p + 1 < e && is_digit(p[1])) ++p;
  std::int64_t i = 0;
  if (const char* q = parse_integer(p, e, i)) {
    v = static_cast<double>(i);
    return q;
  }
  std::int64_t ignored = 0;
  if (std::from_chars(p, e, ignored).ec == std::errc::result_out_of_range) {
    const char* s = p + (*p == '-' ? 1 : 0);
    bool digits = s < e;
    const char* t = s;
    for (; t < e && !is_token_end(*t); ++t) digits = digits && *t >= '0' && *t <= '9';
    if (digits) return parse_real(p, e, v);
  }
  return nullptr;
}

std::vector<std::string_view> tokens_of(std::string_view line) {
  std::vector<std::string_view> out;
  const char* p = line.data();
  const char* e = p + line.size();
  for (;;) {
    p = skip_space(p, e);
    if (p == e) break;
    const char* s = p;
    while (p < e && !is_space(*p)) ++p;
    out.emplace_back(s, static_cast<std::size_t>(p - s));
  }
  return out;
}

std::string quoted(std::string_view text) {
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  std::string out = "'";
  if (text.size() > 72) {
    out.append(text.substr(0, 72));
    out += "...";
  } else {
    out.append(text);
  }
  return out + "'";
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) {
      return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string plural(std::int64_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

constexpr std::string_view kBannerShape =
    "'%%MatrixMarket matrix coordinate|array real|integer|pattern "
    "general|symmetric|skew-symmetric|hermitian'";

class Parser {
 public:
  Parser(ByteSource& src, std::string source, const ReadOptions& options,
         std::optional<std::uint64_t> size_hint)
      : lines_(src, size_hint), source_(std::move(source)), options_(options) {
    report_.source = source_;
  }

  MatrixMarketEntries run(std::optional<std::uint64_t> size_hint) {
    try {
      return parse(size_hint);
    } catch (const InputError& e) {
      throw MatrixMarketError(source_, lines_.number() + 1, e.what());
    }
  }

 private:
  [[noreturn]] void fail(std::int64_t line, const std::string& what) const {
    throw MatrixMarketError(source_, std::max<std::int64_t>(line, 1), what);
  }

  // The value that a banner word names in `names`, matched regardless of case (the format's
  // keywords are case-insensitive); anything else fails, quoting every accepted spelling.
  template <class Names>
  typename Names::Enum banner_word(std::int64_t at, const char* what, const Names& names,
                                   std::string_view word) const {
    std::string accepted;
    for (std::size_t i = 0; i < names.names.size(); ++i) {
      if (iequals(word, names.names[i])) return *names.parse(names.names[i]);
      if (i > 0) accepted += i + 1 == names.names.size() ? " or " : ", ";
      accepted += quoted(names.names[i]);
    }
    fail(at, "expected the " + std::string(what) + " " + accepted + " in the banner, found " +
                 quoted(word));
  }

  void parse_banner() {
    std::string_view line;
    bool found = false;
    while (lines_.next(line)) {
      if (lines_.number() == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
      if (skip_space(line.data(), line.data() + line.size()) != line.data() + line.size()) {
        found = true;
        break;
      }
    }
    if (!found) {
      fail(lines_.number() + 1,
           "expected the banner " + std::string(kBannerShape) + ", found an empty file");
    }
    const std::int64_t at = lines_.number();
    const auto words = tokens_of(line);
    if (!iequals(words[0], "%%MatrixMarket")) {
      fail(at, "expected the banner " + std::string(kBannerShape) + ", found " + quoted(line));
    }
    if (words.size() != 5) {
      fail(at, "expected the banner " + std::string(kBannerShape) + " (5 words), found " +
                   plural(static_cast<std::int64_t>(words.size()), "word") + ": " + quoted(line));
    }
    if (!iequals(words[1], "matrix")) {
      fail(at, "expected the object 'matrix' in the banner, found " + quoted(words[1]));
    }
    report_.format = banner_word(at, "format", kMmFormatNames, words[2]);
    if (iequals(words[3], "complex")) {
      fail(at,
           "complex matrices are not supported (expected the field real, integer or pattern, "
           "found 'complex')");
    }
    report_.field = banner_word(at, "field", kMmFieldNames, words[3]);
    report_.symmetry = banner_word(at, "symmetry", kMmSymmetryNames, words[4]);
    if (report_.format == MmFormat::array && report_.field == MmField::pattern) {
      fail(at,
           "'array pattern' is not a valid combination (an array stores every value; "
           "expected the field real or integer)");
    }
    if (report_.field == MmField::pattern && report_.symmetry == MmSymmetry::skew_symmetric) {
      fail(at, "'pattern skew-symmetric' is not a valid combination (a pattern has no sign)");
    }
    if (report_.symmetry == MmSymmetry::hermitian && report_.field == MmField::pattern) {
      fail(at,
           "'hermitian' needs values (real or integer, read as symmetric), found the field "
           "'pattern'");
    }
  }

  // Reads the size line (skipping comments, keeping the first few); returns its numbers.
  std::vector<std::int64_t> parse_size_line() {
    const bool coordinate = report_.format == MmFormat::coordinate;
    const std::string shape = coordinate ? "'ROWS COLS ENTRIES'" : "'ROWS COLS'";
    const std::size_t want = coordinate ? 3 : 2;
    std::string_view line;
    for (;;) {
      if (!lines_.next(line)) {
        fail(lines_.number(),
             "expected the size line " + shape + " after the banner, found the end of the file");
      }
      const char* p = skip_space(line.data(), line.data() + line.size());
      if (p == line.data() + line.size()) continue;
      if (*p == '%') {
        if (report_.comments.size() < kMaxComments) {
          std::string_view c(p + 1, static_cast<std::size_t>(line.data() + line.size() - p - 1));
          if (!c.empty() && c.front() == ' ') c.remove_prefix(1);
          while (!c.empty() && is_space(c.back())) c.remove_suffix(1);
          report_.comments.emplace_back(c);
        }
        continue;
      }
      break;
    }
    size_line_ = lines_.number();
    const auto words = tokens_of(line);
    std::vector<std::int64_t> numbers;
    for (std::string_view w : words) {
      std::int64_t v = 0;
      if (parse_integer(w.data(), w.data() + w.size(), v) == nullptr) {
        fail(size_line_, "expected the size line " + shape + " (" +
                             plural(int64_t(want), "integer") + "), found " + quoted(w) + " in " +
                             quoted(line));
      }
      if (v < 0) {
        fail(size_line_,
             "negative size " + std::to_string(v) + " in the size line " + quoted(line));
      }
      numbers.push_back(v);
    }
    if (numbers.size() != want) {
      fail(size_line_, "expected the size line " + shape + " (" + plural(int64_t(want), "integer") +
                           "), found " + plural(int64_t(numbers.size()), "number") + ": " +
                           quoted(line));
    }
    if (numbers[0] > kMaxIndex || numbers[1] > kMaxIndex) {
      fail(size_line_, "a " + std::to_string(numbers[0]) + " x " + std::to_string(numbers[1]) +
                           " matrix exceeds the kernel ABI's 32-bit index limit (" +
                           std::to_string(kMaxIndex) + ")");
    }
    if (report_.symmetry != MmSymmetry::general && numbers[0] != numbers[1]) {
      fail(size_line_, "a " + std::string(to_string(report_.symmetry)) +
                           " matrix must be square, found " + std::to_string(numbers[0]) + " x " +
                           std::to_string(numbers[1]));
    }
    return numbers;
  }

  // Explains why an entry line failed the fast path; never returns.
  [[noreturn]] void bad_entry(std::string_view line) const {
    const std::int64_t at = lines_.number();
    const bool array = report_.format == MmFormat::array;
    const bool pattern = report_.field == MmField::pattern;
    const std::size_t want = array ? 1 : (pattern ? 2 : 3);
    const std::string shape = array ? "'VALUE'" : (pattern ? "'ROW COL'" : "'ROW COL VALUE'");
    const auto words = tokens_of(line);
    if (words.size() != want) {
      fail(at, "expected an entry " + shape + " (" + plural(int64_t(want), "number") + " for " +
                   std::string(array ? "an array" : "a coordinate") + " " +
                   std::string(to_string(report_.field)) + " matrix), found " +
                   plural(int64_t(words.size()), "number") + ": " + quoted(line));
    }
    if (!array) {
      const char* names[] = {"row index", "column index"};
      for (int k = 0; k < 2; ++k) {
        std::int64_t v = 0;
        if (parse_integer(words[k].data(), words[k].data() + words[k].size(), v) == nullptr) {
          fail(at, std::string("expected an integer ") + names[k] + ", found " + quoted(words[k]));
        }
      }
    }
    const std::string_view value = words.back();
    if (report_.field == MmField::integer) {
      fail(at, "expected an integer value (the banner says 'integer'), found " + quoted(value));
    }
    fail(at, "expected a real value, found " + quoted(value));
  }

  [[noreturn]] void bad_index(const char* which, std::int64_t value, std::int64_t limit) const {
    fail(lines_.number(), std::string(which) + " index " + std::to_string(value) +
                              " is out of range [1, " + std::to_string(limit) + "]" +
                              (value == 0 ? " (Matrix Market indices are 1-based)" : ""));
  }

  [[noreturn]] void too_many(std::string_view line, std::int64_t declared) const {
    fail(lines_.number(), "more entries than the " + std::to_string(declared) +
                              " declared by the size line (line " + std::to_string(size_line_) +
                              "): found " + quoted(line));
  }

  void check_value(double v, std::string_view line) {
    if (!std::isfinite(v) && !options_.allow_non_finite) {
      const auto words = tokens_of(line);
      fail(lines_.number(), "value " + quoted(words.back()) +
                                " is not finite (NaN and infinities are rejected unless "
                                "ReadOptions::allow_non_finite is set)");
    }
  }

  // One coordinate entry line through the general path: blank and comment lines, any whitespace,
  // every check with its message. Returns false for a line that holds no entry.
  template <MmField Field>
  bool coordinate_line(std::string_view line, std::int64_t& r, std::int64_t& c, double& v) {
    const char* p = line.data();
    const char* e = p + line.size();
    p = skip_space(p, e);
    if (p == e || *p == '%') return false;
    if (coordinate_.stored == coordinate_.declared) too_many(line, coordinate_.declared);
    p = parse_integer(p, e, r);
    if (p == nullptr) bad_entry(line);
    p = skip_space(p, e);
    p = parse_integer(p, e, c);
    if (p == nullptr) bad_entry(line);
    v = 1.0;
    if constexpr (Field != MmField::pattern) {
      p = skip_space(p, e);
      p = Field == MmField::integer ? parse_integer_value(p, e, v) : parse_real(p, e, v);
      if (p == nullptr) bad_entry(line);
    } else {
      // One trailing number on a pattern line is a value the banner disowns: ignored and counted.
      const char* q = skip_space(p, e);
      double ignored = 0;
      const char* after = q != e ? parse_real(q, e, ignored) : nullptr;
      if (after != nullptr && skip_space(after, e) == e) {
        ++report_.ignored_values;
        p = after;
      }
    }
    if (skip_space(p, e) != e) bad_entry(line);
    if (r < 1 || r > coordinate_.rows) bad_index("row", r, coordinate_.rows);
    if (c < 1 || c > coordinate_.cols) bad_index("column", c, coordinate_.cols);
    if (!std::isfinite(v)) check_value(v, line);
    if (report_.symmetry == MmSymmetry::skew_symmetric && r == c) {
      fail(lines_.number(),
           "a skew-symmetric matrix has a zero diagonal that is not stored, found "
           "the diagonal entry (" +
               std::to_string(r) + ", " + std::to_string(c) + ")");
    }
    return true;
  }

  // The common line "ROW COL VALUE\n" (whitespace anywhere allowed) parsed in place, without first
  // finding the line's end. Returns the position after the '\n', or nullptr when the line needs the
  // general path (a comment, a blank line, anything malformed or out of range, one entry too many):
  // the fast path only ever accepts what the general path accepts, and never reports errors itself.
  template <MmField Field>
  const char* fast_entry(const char* p, const char* e, std::int64_t& r, std::int64_t& c,
                         double& v) {
    p = skip_space(p, e);
    if (p == e || !is_digit(*p) || coordinate_.stored == coordinate_.declared) return nullptr;
    p = parse_index(p, e, r);
    if (p == nullptr) return nullptr;
    p = skip_space(p, e);
    if (p == e) return nullptr;
    p = parse_index(p, e, c);
    if (p == nullptr) return nullptr;
    v = 1.0;
    if constexpr (Field != MmField::pattern) {
      p = skip_space(p, e);
      if (p == e || *p == '\n') return nullptr;
      p = Field == MmField::integer ? parse_integer_value(p, e, v) : parse_real(p, e, v);
      if (p == nullptr) return nullptr;
    }
    p = skip_space(p, e);
    if (p < e && *p != '\n') return nullptr;
    if (r < 1 || r > coordinate_.rows || c < 1 || c > coordinate_.cols || !std::isfinite(v)) {
      return nullptr;
    }
    if (report_.symmetry == MmSymmetry::skew_symmetric && r == c) return nullptr;
    return p < e ? p + 1 : p;
  }

  // Entry loop of a coordinate file; `Field` fixes how values are parsed. Whole blocks of complete
  // lines go through fast_entry; a line it declines goes through coordinate_line, whose errors then
  // name the exact line.
  template <MmField Field>
  void read_coordinate(std::int64_t rows, std::int64_t cols, std::int64_t declared,
                       std::vector<Triplet>& out) {
    coordinate_ = {rows, cols, declared, 0};
    const bool mirror = report_.symmetry != MmSymmetry::general;
    const bool skew = report_.symmetry == MmSymmetry::skew_symmetric;
    std::int64_t zeros = 0;
    auto add = [&](std::int64_t r, std::int64_t c, double v) {
      if (v == 0.0) ++zeros;
      ++coordinate_.stored;
      const auto row = static_cast<Index>(r - 1);
      const auto col = static_cast<Index>(c - 1);
      out.push_back({row, col, v});
      if (mirror && row != col) out.push_back({col, row, skew ? -v : v});
    };
    const char* p = nullptr;
    const char* e = nullptr;
    while (lines_.complete_lines(p, e)) {
      std::int64_t r = 0;
      std::int64_t c = 0;
      double v = 1.0;
      std::int64_t lines = 0;
      while (p < e) {
        const char* next = fast_entry<Field>(p, e, r, c, v);
        if (next == nullptr) break;
        add(r, c, v);
        ++lines;
        p = next;
      }
      lines_.consume(p, lines);
      if (p == e) continue;
      std::string_view line;
      lines_.next(line);
      if (coordinate_line<Field>(line, r, c, v)) add(r, c, v);
    }
    const std::int64_t stored = coordinate_.stored;
    if (stored < declared) {
      fail(lines_.number(), "the file ends after " + std::to_string(stored) +
                                (stored == 1 ? " entry" : " entries") + " of the " +
                                std::to_string(declared) + " declared by the size line (line " +
                                std::to_string(size_line_) + ")");
    }
    report_.stored_entries = stored;
    report_.explicit_zeros = Field == MmField::pattern ? 0 : zeros;
  }

  // Entry loop of an array file: column-major values; symmetric arrays hold the lower triangle
  // (diagonal included) column by column, skew-symmetric ones the strict lower triangle.
  void read_array(std::int64_t rows, std::int64_t cols, std::int64_t reserve_cap,
                  std::vector<Triplet>& out) {
    const MmSymmetry sym = report_.symmetry;
    const bool mirror = sym != MmSymmetry::general;
    const bool skew = sym == MmSymmetry::skew_symmetric;
    std::int64_t declared = rows * cols;
    if (sym == MmSymmetry::symmetric || sym == MmSymmetry::hermitian) {
      declared = rows * (rows + 1) / 2;
    }
    if (skew) declared = rows > 0 ? rows * (rows - 1) / 2 : 0;
    if (declared > kMaxIndex) {
      fail(size_line_, "an array of " + std::to_string(declared) +
                           " values exceeds the kernel ABI's 32-bit index limit (" +
                           std::to_string(kMaxIndex) + ")");
    }
    out.reserve(static_cast<std::size_t>(std::min(mirror ? 2 * declared : declared, reserve_cap)));
    std::int64_t i = skew ? 1 : 0;  // next position: row i of column j
    std::int64_t j = 0;
    std::int64_t stored = 0;
    std::int64_t zeros = 0;
    std::string_view line;
    while (lines_.next(line)) {
      const char* p = line.data();
      const char* e = p + line.size();
      p = skip_space(p, e);
      if (p == e || *p == '%') continue;
      if (stored == declared) {
        fail(lines_.number(), "more values than the " + std::to_string(declared) + " of a " +
                                  std::string(to_string(sym)) + " " + std::to_string(rows) + " x " +
                                  std::to_string(cols) + " array (size line " +
                                  std::to_string(size_line_) + "): found " + quoted(line));
      }
      double v = 0.0;
      p = report_.field == MmField::integer ? parse_integer_value(p, e, v) : parse_real(p, e, v);
      if (p == nullptr || skip_space(p, e) != e) bad_entry(line);
      if (!std::isfinite(v)) check_value(v, line);
      if (v == 0.0) ++zeros;
      ++stored;
      const auto row = static_cast<Index>(i);
      const auto col = static_cast<Index>(j);
      out.push_back({row, col, v});
      if (mirror && row != col) out.push_back({col, row, skew ? -v : v});
      if (++i == rows) {
        ++j;
        i = mirror ? j + (skew ? 1 : 0) : 0;
      }
    }
    if (stored < declared) {
      fail(lines_.number(),
           "the file ends after " + std::to_string(stored) + " of the " + std::to_string(declared) +
               " values of a " + std::string(to_string(sym)) + " " + std::to_string(rows) + " x " +
               std::to_string(cols) + " array (size line " + std::to_string(size_line_) + ")");
    }
    report_.stored_entries = stored;
    report_.explicit_zeros = zeros;
  }

  MatrixMarketEntries parse(std::optional<std::uint64_t> size_hint) {
    parse_banner();
    const auto size = parse_size_line();
    const std::int64_t rows = size[0];
    const std::int64_t cols = size[1];
    // Reserve what the size line promises, but no more than the text could hold (an entry line
    // takes at least 4 bytes, an array value 2, and each gives at most 2 entries after mirroring),
    // so a lying size line cannot demand terabytes up front.
    const bool coordinate = report_.format == MmFormat::coordinate;
    const std::int64_t cap =
        size_hint ? static_cast<std::int64_t>(*size_hint / (coordinate ? 2 : 1)) : (1 << 22);
    std::vector<Triplet> triplets;
    if (coordinate) {
      const std::int64_t declared = size[2];
      if (declared > kMaxIndex) {
        fail(size_line_, std::to_string(declared) +
                             " entries exceed the kernel ABI's 32-bit index limit (" +
                             std::to_string(kMaxIndex) + ")");
      }
      const std::int64_t expect = declared * (report_.symmetry == MmSymmetry::general ? 1 : 2);
      triplets.reserve(static_cast<std::size_t>(std::min(expect, cap)));
      switch (report_.field) {
        case MmField::real:
          read_coordinate<MmField::real>(rows, cols, declared, triplets);
          break;
        case MmField::integer:
          read_coordinate<MmField::integer>(rows, cols, declared, triplets);
          break;
        case MmField::pattern:
          read_coordinate<MmField::pattern>(rows, cols, declared, triplets);
          break;
      }
    } else {
      read_array(rows, cols, cap, triplets);
    }
    report_.expanded_entries = static_cast<std::int64_t>(triplets.size());
    if (report_.expanded_entries > kMaxIndex) {
      fail(size_line_, std::to_string(report_.expanded_entries) +
                           " entries after mirroring exceed the kernel ABI's 32-bit index limit (" +
                           std::to_string(kMaxIndex) + ")");
    }
    report_.lines = lines_.number();
    report_.bytes = lines_.bytes();
    MatrixMarketEntries out;
    out.rows = static_cast<Index>(rows);
    out.cols = static_cast<Index>(cols);
    out.entries = std::move(triplets);
    out.report = std::move(report_);
    return out;
  }

  struct CoordinateState {
    std::int64_t rows = 0, cols = 0, declared = 0, stored = 0;
  };

  LineReader lines_;
  std::string source_;
  const ReadOptions& options_;
  ReadReport report_;
  std::int64_t size_line_ = 0;
  CoordinateState coordinate_;
};

std::string join(const std::vector<std::string>& items, std::size_t limit = 12) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < limit; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > limit) out += ", ... (" + std::to_string(items.size()) + " in all)";
  return out.empty() ? "none" : out;
}

// An opened input: the raw file, an optional gzip layer, and the first 512 bytes of what they
// produce (sniffed to tell a tar archive from Matrix Market text).
struct OpenedInput {
  std::unique_ptr<detail::FileSource> file;
  std::unique_ptr<detail::ReplaySource> raw;
  std::unique_ptr<detail::GzipSource> gzip;
  std::unique_ptr<detail::ReplaySource> stream;
  bool compressed = false;
  bool tar = false;
};

OpenedInput open_input(const std::filesystem::path& path, const std::string& display) {
  OpenedInput in;
  try {
    in.file = std::make_unique<detail::FileSource>(path);
    std::string magic(2, '\0');
    magic.resize(detail::read_fully(*in.file, magic.data(), magic.size()));
    in.compressed = detail::is_gzip_magic(magic.data(), magic.size());
    in.raw = std::make_unique<detail::ReplaySource>(std::move(magic), *in.file);
    ByteSource* text = in.raw.get();
    if (in.compressed) {
      in.gzip = std::make_unique<detail::GzipSource>(*in.raw);
      text = in.gzip.get();
    }
    std::string head(512, '\0');
    head.resize(detail::read_fully(*text, head.data(), head.size()));
    in.tar = head.size() == 512 && detail::is_tar_header(head.data());
    in.stream = std::make_unique<detail::ReplaySource>(std::move(head), *text);
  } catch (const InputError& e) {
    throw MatrixMarketError(display, in.file ? 1 : 0, e.what());
  }
  return in;
}

}  // namespace

namespace {

MatrixMarketFile to_matrix(MatrixMarketEntries&& in) {
  MatrixMarketFile out;
  out.report = std::move(in.report);
  out.matrix = SparseMatrix::from_triplets(in.rows, in.cols, std::move(in.entries),
                                           &out.report.duplicates_summed);
  return out;
}

}  // namespace

MatrixMarketFile parse_matrix_market(std::string_view text, std::string_view source,
                                     const ReadOptions& options) {
  detail::MemorySource src(text);
  return to_matrix(Parser(src, std::string(source), options, text.size()).run(text.size()));
}

MatrixMarketFile read_matrix_market(const std::filesystem::path& path, const ReadOptions& options) {
  return to_matrix(read_matrix_market_entries(path, options));
}

MatrixMarketEntries read_matrix_market_entries(const std::filesystem::path& path,
                                               const ReadOptions& options) {
  const std::string display = path.string();
  OpenedInput in = open_input(path, display);
  if (!in.tar) {
    if (!options.archive_member.empty()) {
      throw MatrixMarketError(
          display, 0, "is not a tar archive, so it has no member '" + options.archive_member + "'");
    }
    const auto hint = in.compressed ? std::nullopt : in.file->size_hint();
    return Parser(*in.stream, display, options, hint).run(hint);
  }
  const std::string wanted = options.archive_member.empty() ? detail::default_archive_member(path)
                                                            : options.archive_member;
  std::vector<std::string> members;
  try {
    detail::TarReader tar(*in.stream);
    while (auto member = tar.next()) {
      if (!member->regular) continue;
      if (member->name == wanted) {
        return Parser(tar, display + "(" + member->name + ")", options, member->size)
            .run(member->size);
      }
      members.push_back(member->name);
    }
  } catch (const InputError& e) {
    throw MatrixMarketError(display, 0, e.what());
  }
  if (!options.archive_member.empty()) {
    throw MatrixMarketError(
        display, 0, "the archive has no member '" + wanted + "' (members: " + join(members) + ")");
  }
  // No NAME/NAME.mtx: fall back to the first .mtx member (a second pass over the archive).
  for (const std::string& m : members) {
    if (m.ends_with(".mtx")) {
      ReadOptions again = options;
      again.archive_member = m;
      return read_matrix_market_entries(path, again);
    }
  }
  throw MatrixMarketError(display, 0,
                          "the archive holds no .mtx member (expected '" + wanted +
                              "'; members: " + join(members) + ")");
}

std::vector<std::string> list_archive_members(const std::filesystem::path& archive) {
  const std::string display = archive.string();
  OpenedInput in = open_input(archive, display);
  if (!in.tar) throw MatrixMarketError(display, 0, "is not a tar archive");
  std::vector<std::string> members;
  try {
    detail::TarReader tar(*in.stream);
    while (auto member = tar.next()) {
      if (member->regular) members.push_back(member->name);
    }
  } catch (const InputError& e) {
    throw MatrixMarketError(display, 0, e.what());
  }
  return members;
}

}  // namespace sparserl::datasets
