// The Matrix Market reader and writer on small hand-written inputs: every field, symmetry and
// format, comments and blank lines, duplicates and explicit zeros, number syntax, one test per kind
// of malformed file (each pinned to its line and message), exact write/read round trips, and the
// gzip and tar containers built here by hand (not by the library's own writer).
#include "sparserl/datasets/matrix_market.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "datasets_test_support.hpp"
#include "test_support.hpp"

namespace ds = sparserl::datasets;
using ds::MatrixMarketError;
using ds::SparseMatrix;
using sparserl::testing::has_substring;

namespace {

ds::MatrixMarketFile parse(const std::string& text, const ds::ReadOptions& options = {}) {
  return ds::parse_matrix_market(text, "t.mtx", options);
}

// The message of the MatrixMarketError that parsing `text` throws ("no error" if none).
std::string error_of(const std::string& text, const ds::ReadOptions& options = {}) {
  try {
    (void)parse(text, options);
  } catch (const MatrixMarketError& e) {
    return e.what();
  }
  return "no error";
}

std::vector<ds::Triplet> entries(const SparseMatrix& a) { return a.to_triplets(); }

bool same_entries(const std::vector<ds::Triplet>& a, const std::vector<ds::Triplet>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].row != b[i].row || a[i].col != b[i].col ||
        std::bit_cast<std::uint64_t>(a[i].value) != std::bit_cast<std::uint64_t>(b[i].value)) {
      return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("coordinate real general: 1-based entries in any order, report counts",
          "[datasets][mtx]") {
  const auto f = parse(
      "%%MatrixMarket matrix coordinate real general\n"
      "% a comment\n"
      "3 4 4\n"
      "3 2 1.5\n"
      "1 1 -2\n"
      "1 4 0.25\n"
      "2 3 1e3\n");
  CHECK(f.matrix.rows() == 3);
  CHECK(f.matrix.cols() == 4);
  CHECK(same_entries(entries(f.matrix), {{0, 0, -2.0}, {0, 3, 0.25}, {1, 2, 1000.0}, {2, 1, 1.5}}));
  CHECK(f.report.format == ds::MmFormat::coordinate);
  CHECK(f.report.field == ds::MmField::real);
  CHECK(f.report.symmetry == ds::MmSymmetry::general);
  CHECK(f.report.stored_entries == 4);
  CHECK(f.report.expanded_entries == 4);
  CHECK(f.report.duplicates_summed == 0);
  CHECK(f.report.explicit_zeros == 0);
  CHECK(f.report.lines == 7);
  CHECK(f.report.source == "t.mtx");
  CHECK(f.report.comments == std::vector<std::string>{"a comment"});
}

TEST_CASE("comments, blank lines, CRLF, tabs and a missing final newline are accepted",
          "[datasets][mtx]") {
  const auto f = parse(
      "\n\n%%MatrixMarket Matrix Coordinate REAL General  \r\n"
      "%%GraphBLAS type double\r\n"
      "\r\n"
      "   % indented comment\n"
      "2 2 3\r\n"
      "\n"
      "% between entries\n"
      "1\t1\t  1.0  \r\n"
      "  2 2 2.0\n"
      "\t\n"
      "2 1 3.0");
  CHECK(same_entries(entries(f.matrix), {{0, 0, 1.0}, {1, 0, 3.0}, {1, 1, 2.0}}));
  CHECK(f.report.comments ==
        std::vector<std::string>{"%GraphBLAS type double", "indented comment"});
}

TEST_CASE("symmetric files mirror the stored triangle; the report counts the expansion",
          "[datasets][mtx]") {
  const auto f = parse(
      "%%MatrixMarket matrix coordinate real symmetric\n"
      "3 3 4\n"
      "1 1 4\n"
      "2 1 -1\n"
      "3 2 -2\n"
      "3 3 5\n");
  CHECK(same_entries(
      entries(f.matrix),
      {{0, 0, 4.0}, {0, 1, -1.0}, {1, 0, -1.0}, {1, 2, -2.0}, {2, 1, -2.0}, {2, 2, 5.0}}));
  CHECK(f.report.stored_entries == 4);
  CHECK(f.report.expanded_entries == 6);  // 2 * 4 stored - 2 diagonal
  CHECK(ds::is_symmetric(f.matrix));
}

TEST_CASE("skew-symmetric files mirror with the sign negated and may not store a diagonal",
          "[datasets][mtx]") {
  const auto f = parse(
      "%%MatrixMarket matrix coordinate integer skew-symmetric\n"
      "3 3 2\n"
      "2 1 7\n"
      "3 1 -4\n");
  CHECK(same_entries(entries(f.matrix), {{0, 1, -7.0}, {0, 2, 4.0}, {1, 0, 7.0}, {2, 0, -4.0}}));
  CHECK(f.report.expanded_entries == 4);
  const std::string e =
      error_of("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n2 2 0\n");
  CHECK_THAT(e, has_substring("t.mtx:4: "));
  CHECK_THAT(e, has_substring("diagonal entry (2, 2)"));
}

TEST_CASE("hermitian with a real field reads as symmetric; hermitian pattern is refused",
          "[datasets][mtx]") {
  const auto f = parse("%%MatrixMarket matrix coordinate real hermitian\n2 2 2\n1 1 1\n2 1 3\n");
  CHECK(same_entries(entries(f.matrix), {{0, 0, 1.0}, {0, 1, 3.0}, {1, 0, 3.0}}));
  CHECK(f.report.symmetry == ds::MmSymmetry::hermitian);
  CHECK_THAT(error_of("%%MatrixMarket matrix coordinate pattern hermitian\n1 1 1\n1 1\n"),
             has_substring("t.mtx:1: 'hermitian' needs values"));
}

TEST_CASE("pattern entries read as 1; integer values must be integers", "[datasets][mtx]") {
  const auto f = parse("%%MatrixMarket matrix coordinate pattern general\n2 3 2\n1 3\n2 1\n");
  CHECK(same_entries(entries(f.matrix), {{0, 2, 1.0}, {1, 0, 1.0}}));
  const auto g = parse(
      "%%MatrixMarket matrix coordinate integer general\n1 3 3\n1 1 -12\n1 2 +5\n"
      "1 3 123456789012345678901234\n");
  CHECK(same_entries(
      entries(g.matrix),
      {{0, 0, -12.0}, {0, 1, 5.0}, {0, 2, std::strtod("123456789012345678901234", nullptr)}}));
  CHECK_THAT(
      error_of("%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 3.0\n"),
      has_substring("t.mtx:3: expected an integer value (the banner says 'integer'), found '3.0'"));
}

TEST_CASE("duplicates are summed and counted; explicit zeros stay entries", "[datasets][mtx]") {
  const auto f = parse(
      "%%MatrixMarket matrix coordinate real general\n2 2 5\n1 1 1\n2 2 0\n1 1 2.5\n1 2 -0\n1 1 "
      "1\n");
  CHECK(same_entries(entries(f.matrix), {{0, 0, 4.5}, {0, 1, -0.0}, {1, 1, 0.0}}));
  CHECK(f.report.duplicates_summed == 2);
  CHECK(f.report.explicit_zeros == 2);
  CHECK(f.report.expanded_entries == 5);
  // In a symmetric file an entry given on both sides of the diagonal is a duplicate after
  // mirroring.
  const auto s = parse("%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n2 1 1\n1 2 2\n");
  CHECK(same_entries(entries(s.matrix), {{0, 1, 3.0}, {1, 0, 3.0}}));
  CHECK(s.report.duplicates_summed == 2);
}

TEST_CASE("array files: column-major; symmetric and skew store the lower triangle",
          "[datasets][mtx]") {
  const auto g = parse("%%MatrixMarket matrix array real general\n2 3\n1\n2\n3\n0\n5\n6\n");
  // Column-major: column 0 = (1, 2), column 1 = (3, 0), column 2 = (5, 6); the zero stays an entry.
  CHECK(
      same_entries(entries(g.matrix),
                   {{0, 0, 1.0}, {0, 1, 3.0}, {0, 2, 5.0}, {1, 0, 2.0}, {1, 1, 0.0}, {1, 2, 6.0}}));
  CHECK(g.report.stored_entries == 6);
  CHECK(g.report.explicit_zeros == 1);

  const auto s = parse("%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n");
  // Lower triangle by columns: (0,0)=1 (1,0)=2 (2,0)=3 (1,1)=4 (2,1)=5 (2,2)=6.
  CHECK(same_entries(entries(s.matrix), {{0, 0, 1.0},
                                         {0, 1, 2.0},
                                         {0, 2, 3.0},
                                         {1, 0, 2.0},
                                         {1, 1, 4.0},
                                         {1, 2, 5.0},
                                         {2, 0, 3.0},
                                         {2, 1, 5.0},
                                         {2, 2, 6.0}}));
  CHECK(s.report.stored_entries == 6);
  CHECK(s.report.expanded_entries == 9);

  const auto k = parse("%%MatrixMarket matrix array integer skew-symmetric\n3 3\n1\n2\n3\n");
  // Strict lower triangle by columns: (1,0)=1 (2,0)=2 (2,1)=3.
  CHECK(same_entries(
      entries(k.matrix),
      {{0, 1, -1.0}, {0, 2, -2.0}, {1, 0, 1.0}, {1, 2, -3.0}, {2, 0, 2.0}, {2, 1, 3.0}}));

  CHECK_THAT(error_of("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n"),
             has_substring("t.mtx:5: the file ends after 3 of the 4 values"));
  CHECK_THAT(error_of("%%MatrixMarket matrix array real general\n1 2\n1\n2\n3\n"),
             has_substring("t.mtx:5: more values than the 2"));
  CHECK_THAT(
      error_of("%%MatrixMarket matrix array real general\n2 2 4\n1\n2\n3\n4\n"),
      has_substring("t.mtx:2: expected the size line 'ROWS COLS' (2 integers), found 3 numbers"));
  CHECK_THAT(error_of("%%MatrixMarket matrix array pattern general\n2 2\n"),
             has_substring("t.mtx:1: 'array pattern' is not a valid combination"));
}

TEST_CASE("number syntax: signs, exponents, subnormals; non-finite values are refused by default",
          "[datasets][mtx]") {
  const auto f = parse(
      "%%MatrixMarket matrix coordinate real general\n1 7 7\n"
      "1 1 +1.5\n1 2 .5\n1 3 -2.E+2\n1 4 4.9e-324\n1 5 1e-400\n1 6 0.1\n1 7 "
      "1.7976931348623157e308\n");
  const auto v = f.matrix.values();
  CHECK(v[0] == 1.5);
  CHECK(v[1] == 0.5);
  CHECK(v[2] == -200.0);
  CHECK(v[3] == std::numeric_limits<double>::denorm_min());
  CHECK(v[4] == 0.0);  // underflows to an explicit zero, as strtod rounds it
  CHECK(v[5] == 0.1);
  CHECK(v[6] == std::numeric_limits<double>::max());
  CHECK(f.report.explicit_zeros == 1);

  const std::string nan_file =
      "%%MatrixMarket matrix coordinate real general\n1 2 2\n1 1 1\n1 2 nan\n";
  CHECK_THAT(error_of(nan_file), has_substring("t.mtx:4: value 'nan' is not finite"));
  CHECK_THAT(error_of("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1e400\n"),
             has_substring("t.mtx:3: value '1e400' is not finite"));
  CHECK_THAT(error_of("%%MatrixMarket matrix array real general\n1 1\n-inf\n"),
             has_substring("t.mtx:3: value '-inf' is not finite"));
  ds::ReadOptions allow;
  allow.allow_non_finite = true;
  const auto n = parse(nan_file, allow);
  CHECK(std::isnan(n.matrix.values()[1]));
  CHECK_THAT(error_of("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1.0D+00\n"),
             has_substring("t.mtx:3: expected a real value, found '1.0D+00'"));
}

TEST_CASE("malformed files fail at their line with what was expected and found",
          "[datasets][mtx]") {
  struct Case {
    std::string text;
    std::string message;  // the whole message must start with "t.mtx:LINE: " and contain this
  };
  const std::string banner = "%%MatrixMarket matrix coordinate real general\n";
  const std::vector<Case> cases = {
      {"", "t.mtx:1: expected the banner"},
      {"\n\n", "t.mtx:3: expected the banner"},
      {"3 3 1\n1 1 1\n", "t.mtx:1: expected the banner '%%MatrixMarket matrix coordinate|array"},
      {"%MatrixMarket matrix coordinate real general\n", "t.mtx:1: expected the banner"},
      {"%%MatrixMarket matrix coordinate real\n", "t.mtx:1: expected the banner"},
      {"%%MatrixMarket matrix coordinate real general extra\n", "(5 words), found 6 words"},
      {"%%MatrixMarket vector coordinate real general\n", "t.mtx:1: expected the object 'matrix'"},
      {"%%MatrixMarket matrix sparse real general\n", "t.mtx:1: expected the format"},
      {"%%MatrixMarket matrix coordinate double general\n", "found 'double'"},
      {"%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n",
       "t.mtx:1: complex matrices are not supported"},
      {"%%MatrixMarket matrix coordinate real upper\n", "t.mtx:1: expected the symmetry"},
      {"%%MatrixMarket matrix coordinate pattern skew-symmetric\n",
       "t.mtx:1: 'pattern skew-symmetric'"},
      {banner,
       "t.mtx:1: expected the size line 'ROWS COLS ENTRIES' after the banner, found the end"},
      {banner + "% only comments\n", "t.mtx:2: expected the size line"},
      {banner + "3 3\n",
       "t.mtx:2: expected the size line 'ROWS COLS ENTRIES' (3 integers), found 2"},
      {banner + "3 x 1\n",
       "t.mtx:2: expected the size line 'ROWS COLS ENTRIES' (3 integers), found 'x'"},
      {banner + "3 -3 1\n", "t.mtx:2: negative size -3"},
      {banner + "3000000000 1 0\n", "t.mtx:2: a 3000000000 x 1 matrix exceeds"},
      {banner + "2 2 3000000000\n", "t.mtx:2: 3000000000 entries exceed"},
      {banner + "2 2 2\n1 1 1\n", "t.mtx:3: the file ends after 1 entry of the 2 declared"},
      {banner + "2 2 0\n", "no error"},
      {banner + "2 2 1\n1 1 1\n2 2 2\n", "t.mtx:4: more entries than the 1 declared"},
      {banner + "2 2 1\n0 1 1\n",
       "t.mtx:3: row index 0 is out of range [1, 2] (Matrix Market indices are 1-based)"},
      {banner + "2 2 1\n1 3 1\n", "t.mtx:3: column index 3 is out of range [1, 2]"},
      {banner + "2 2 1\n-1 1 1\n", "t.mtx:3: row index -1 is out of range"},
      {banner + "2 2 1\n1 1\n",
       "t.mtx:3: expected an entry 'ROW COL VALUE' (3 numbers for a coordinate real matrix), found "
       "2 numbers: '1 1'"},
      {banner + "2 2 1\n1 1 1 1\n", "found 4 numbers"},
      {banner + "2 2 1\n1 1 2.0x\n", "t.mtx:3: expected a real value, found '2.0x'"},
      {banner + "2 2 1\n1.0 1 2\n", "t.mtx:3: expected an integer row index, found '1.0'"},
      {banner + "2 2 1\n1 b 2\n", "t.mtx:3: expected an integer column index, found 'b'"},
      {"%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 1 1\n",
       "t.mtx:3: expected an entry 'ROW COL' (2 numbers for a coordinate pattern matrix), found 4"},
      {"%%MatrixMarket matrix coordinate real symmetric\n2 3 0\n",
       "t.mtx:2: a symmetric matrix must be square, found 2 x 3"},
      {"%%MatrixMarket matrix array real skew-symmetric\n3 2\n",
       "t.mtx:2: a skew-symmetric matrix must be square"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK_THAT(error_of(c.text), has_substring(c.message));
  }
  // The exception carries the line apart from the message.
  try {
    (void)parse(banner + "2 2 1\n\n% x\n1 9 1\n");
    FAIL("no exception");
  } catch (const MatrixMarketError& e) {
    CHECK(e.file() == "t.mtx");
    CHECK(e.line() == 5);
    CHECK(std::string(e.what()).rfind("t.mtx:5: ", 0) == 0);
  }
}

TEST_CASE("the writer round-trips values exactly, explicit zeros included", "[datasets][mtx]") {
  const std::vector<double> special = {
      0.1,  1.0 / 3.0,         -0.0, 0.0,         1e-310, 5e-324, 1.7976931348623157e308,
      -2.5, 3.141592653589793, 1e22, 123456789.0, -7e-5};
  std::vector<ds::Triplet> t;
  for (std::size_t i = 0; i < special.size(); ++i) {
    t.push_back({static_cast<ds::Index>(i % 5), static_cast<ds::Index>((i * 7) % 9), special[i]});
  }
  const SparseMatrix a = SparseMatrix::from_triplets(5, 9, t);
  const std::string text = ds::format_matrix_market(a);
  const auto back = parse(text);
  CHECK(back.matrix == a);
  CHECK(same_entries(entries(back.matrix), entries(a)));  // bitwise, so -0.0 stays -0.0
  CHECK(back.report.explicit_zeros == 2);

  SECTION("the text is the documented coordinate form") {
    const SparseMatrix small = SparseMatrix::from_triplets(2, 3, {{0, 2, 0.5}, {1, 0, -3.0}});
    ds::WriteOptions options;
    options.comments = {"two\nlines", ""};
    CHECK(ds::format_matrix_market(small, options) ==
          "%%MatrixMarket matrix coordinate real general\n% two\n% lines\n%\n2 3 2\n1 3 0.5\n2 1 "
          "-3\n");
  }
  SECTION("integer and pattern fields") {
    const SparseMatrix ints = SparseMatrix::from_triplets(2, 2, {{0, 0, 3.0}, {1, 1, -4e15}});
    ds::WriteOptions as_int;
    as_int.field = ds::MmField::integer;
    const std::string s = ds::format_matrix_market(ints, as_int);
    CHECK_THAT(s, has_substring("coordinate integer general"));
    CHECK_THAT(s, has_substring("2 2 -4000000000000000\n"));
    CHECK(parse(s).matrix == ints);
    CHECK_THROWS_WITH(ds::format_matrix_market(a, as_int), has_substring("is not an integer"));
    ds::WriteOptions as_pattern;
    as_pattern.field = ds::MmField::pattern;
    const auto p = parse(ds::format_matrix_market(a, as_pattern));
    CHECK(p.matrix.pattern_digest() == a.pattern_digest());
    CHECK(p.report.field == ds::MmField::pattern);
  }
  SECTION("symmetric output stores the lower triangle and is refused for unsymmetric matrices") {
    const SparseMatrix sym = SparseMatrix::from_triplets(
        3, 3, {{0, 0, 1.0}, {1, 0, 2.0}, {0, 1, 2.0}, {2, 1, -0.5}, {1, 2, -0.5}, {2, 2, 0.0}});
    ds::WriteOptions options;
    options.symmetric = true;
    const auto back_sym = parse(ds::format_matrix_market(sym, options));
    CHECK(back_sym.report.symmetry == ds::MmSymmetry::symmetric);
    CHECK(back_sym.report.stored_entries == 4);
    CHECK(back_sym.matrix == sym);
    CHECK_THROWS_WITH(ds::format_matrix_market(a, options), has_substring("is not symmetric"));
    CHECK_FALSE(ds::is_symmetric(SparseMatrix::from_triplets(2, 2, {{1, 0, 1.0}})));
    CHECK_FALSE(ds::is_symmetric(SparseMatrix::from_triplets(2, 2, {{1, 0, 1.0}, {0, 1, 1.5}})));
    CHECK(ds::is_symmetric(SparseMatrix()));
  }
}

TEST_CASE("files: plain, gzip (also concatenated members), atomic writes", "[datasets][mtx]") {
  const auto dir = sparserl::testing::scratch_dir("mtx_files");
  const SparseMatrix a =
      SparseMatrix::from_triplets(4, 3, {{0, 0, 1.25}, {3, 2, -1.0}, {2, 1, 0.0}});
  ds::write_matrix_market(dir / "a.mtx", a);
  ds::write_matrix_market(dir / "a.mtx.gz", a);
  CHECK(ds::read_matrix_market(dir / "a.mtx").matrix == a);
  CHECK(ds::read_matrix_market(dir / "a.mtx.gz").matrix == a);
  CHECK(sparserl::testing::read_bytes(dir / "a.mtx.gz").substr(0, 2) == "\x1f\x8b");
  // Nothing but the two files: the temporary files were renamed away.
  CHECK(std::distance(std::filesystem::directory_iterator(dir),
                      std::filesystem::directory_iterator()) == 2);

  // Compression is detected from the bytes, not the name; several gzip members read as one stream.
  const std::string text = ds::format_matrix_market(a);
  const std::size_t cut = text.size() / 2;
  sparserl::testing::write_bytes(
      dir / "two_members.mtx",
      sparserl::testing::gzip(text.substr(0, cut)) + sparserl::testing::gzip(text.substr(cut)));
  CHECK(ds::read_matrix_market(dir / "two_members.mtx").matrix == a);

  // A corrupt or truncated stream names the file.
  std::string gz = sparserl::testing::gzip(text);
  std::string corrupt = gz;
  for (std::size_t i = 12; i < corrupt.size() - 8; ++i)
    corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  sparserl::testing::write_bytes(dir / "corrupt.mtx.gz", corrupt);
  CHECK_THROWS_WITH(
      ds::read_matrix_market(dir / "corrupt.mtx.gz"),
      has_substring((dir / "corrupt.mtx.gz").string() + ":") && has_substring("gzip"));
  sparserl::testing::write_bytes(dir / "truncated.mtx.gz", gz.substr(0, gz.size() / 2));
  CHECK_THROWS_WITH(ds::read_matrix_market(dir / "truncated.mtx.gz"),
                    has_substring("truncated gzip"));

  CHECK_THROWS_WITH(ds::read_matrix_market(dir / "missing.mtx"),
                    has_substring((dir / "missing.mtx").string() + ": cannot open"));
  CHECK_THROWS_WITH(ds::read_matrix_market(dir), has_substring("is a directory"));
}

TEST_CASE("tar archives: NAME/NAME.mtx first, a named member, or the first .mtx",
          "[datasets][mtx]") {
  const auto dir = sparserl::testing::scratch_dir("mtx_tar");
  const SparseMatrix a = SparseMatrix::from_triplets(2, 2, {{0, 0, 1.0}, {1, 1, 2.0}});
  const SparseMatrix b = SparseMatrix::from_triplets(2, 1, {{1, 0, 5.0}});
  const std::string ta = ds::format_matrix_market(a);
  const std::string tb = ds::format_matrix_market(b);
  // The collection's layout: NAME/NAME.mtx plus extra members (here placed before it).
  const std::string tar = sparserl::testing::make_tar(
      {{"mat/README.txt", "hello"}, {"mat/mat_b.mtx", tb}, {"./mat/mat.mtx", ta}});
  sparserl::testing::write_bytes(dir / "mat.tar.gz", sparserl::testing::gzip(tar));
  sparserl::testing::write_bytes(dir / "mat.tar", tar);
  sparserl::testing::write_bytes(dir / "other.tar.gz", sparserl::testing::gzip(tar));

  CHECK(ds::read_matrix_market(dir / "mat.tar.gz").matrix == a);
  CHECK(ds::read_matrix_market(dir / "mat.tar").matrix == a);
  CHECK(ds::read_matrix_market(dir / "mat.tar.gz").report.source ==
        (dir / "mat.tar.gz").string() + "(mat/mat.mtx)");
  // Named "other": no other/other.mtx, so the first .mtx member is read.
  CHECK(ds::read_matrix_market(dir / "other.tar.gz").matrix == b);
  ds::ReadOptions member;
  member.archive_member = "mat/mat_b.mtx";
  CHECK(ds::read_matrix_market(dir / "mat.tar.gz", member).matrix == b);
  member.archive_member = "mat/none.mtx";
  CHECK_THROWS_WITH(
      ds::read_matrix_market(dir / "mat.tar.gz", member),
      has_substring(
          "no member 'mat/none.mtx' (members: mat/README.txt, mat/mat_b.mtx, mat/mat.mtx)"));
  CHECK(ds::list_archive_members(dir / "mat.tar.gz") ==
        std::vector<std::string>{"mat/README.txt", "mat/mat_b.mtx", "mat/mat.mtx"});

  // Errors inside a member name the archive, the member and the line.
  const std::string bad = sparserl::testing::make_tar(
      {{"bad/bad.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n"}});
  sparserl::testing::write_bytes(dir / "bad.tar.gz", sparserl::testing::gzip(bad));
  CHECK_THROWS_WITH(ds::read_matrix_market(dir / "bad.tar.gz"),
                    has_substring((dir / "bad.tar.gz").string() + "(bad/bad.mtx):3: row index 3"));

  // GNU long names (over 100 bytes) are followed.
  const std::string long_dir(120, 'd');
  const std::string long_tar = sparserl::testing::make_tar({{long_dir + "/x.mtx", ta}});
  sparserl::testing::write_bytes(dir / "long.tar.gz", sparserl::testing::gzip(long_tar));
  CHECK(ds::list_archive_members(dir / "long.tar.gz") ==
        std::vector<std::string>{long_dir + "/x.mtx"});
  CHECK(ds::read_matrix_market(dir / "long.tar.gz").matrix == a);

  // No .mtx member, a broken header, a truncated member.
  sparserl::testing::write_bytes(
      dir / "empty.tar.gz",
      sparserl::testing::gzip(sparserl::testing::make_tar({{"x/y.txt", "z"}})));
  CHECK_THROWS_WITH(ds::read_matrix_market(dir / "empty.tar.gz"),
                    has_substring("holds no .mtx member"));
  std::string broken = tar;
  broken[512 + 5 + 512 + 3] ^= 0x10;  // inside the second header's name
  sparserl::testing::write_bytes(dir / "broken.tar", broken);
  CHECK_THROWS_WITH(ds::read_matrix_market(dir / "broken.tar"),
                    has_substring("bad header checksum"));
  sparserl::testing::write_bytes(dir / "cut.tar", tar.substr(0, 512 * 5 + 30));
  CHECK_THROWS_WITH(ds::read_matrix_market(dir / "cut.tar"), has_substring("truncated tar"));

  // The library's own single-member archive writer.
  ds::write_matrix_market_archive(dir / "own.tar.gz", a);
  CHECK(ds::list_archive_members(dir / "own.tar.gz") == std::vector<std::string>{"own/own.mtx"});
  CHECK(ds::read_matrix_market(dir / "own.tar.gz").matrix == a);
  // A plain file is not an archive.
  ds::write_matrix_market(dir / "plain.mtx", a);
  member.archive_member = "x.mtx";
  CHECK_THROWS_WITH(ds::read_matrix_market(dir / "plain.mtx", member),
                    has_substring("is not a tar archive"));
}

TEST_CASE("archives made by the system's tar (GNU and pax headers) read", "[datasets][mtx]") {
  if (sparserl::testing::run_shell("tar --version").status != 0) {
    sparserl::testing::skip("no tar command on this machine");
  }
  const auto dir = sparserl::testing::scratch_dir("mtx_system_tar");
  const SparseMatrix a = SparseMatrix::from_triplets(3, 3, {{0, 1, 1.5}, {2, 2, -1.0}});
  const std::string long_name(110, 'n');
  ds::write_matrix_market(dir / "src" / "mat" / "mat.mtx", a);
  ds::write_matrix_market(dir / "src" / "mat" / (long_name + ".mtx"), a);
  ds::write_matrix_market(dir / "src" / "mat" / "mat_b.mtx", SparseMatrix::from_triplets(1, 1, {}));
  for (const char* format : {"gnu", "pax", "ustar"}) {
    INFO(format);
    const std::string archive = (dir / (std::string(format) + ".tar.gz")).string();
    const std::string members = std::string(format) == "ustar"
                                    ? "mat/mat_b.mtx mat/mat.mtx"
                                    : "mat/mat_b.mtx mat/" + long_name + ".mtx mat/mat.mtx";
    const auto made = sparserl::testing::run_shell(
        "tar --format=" + std::string(format) + " -czf " + sparserl::testing::shell_quote(archive) +
        " -C " + sparserl::testing::shell_quote((dir / "src").string()) + " " + members);
    REQUIRE(made.status == 0);
    ds::ReadOptions options;
    options.archive_member = "mat/mat.mtx";
    CHECK(ds::read_matrix_market(archive, options).matrix == a);
    if (std::string(format) != "ustar") {
      options.archive_member = "mat/" + long_name + ".mtx";
      CHECK(ds::read_matrix_market(archive, options).matrix == a);
    }
  }
}

TEST_CASE("indices of every length and any whitespace parse alike", "[datasets][mtx]") {
  // Column indices of 1 to 10 digits (the eight-byte fast path takes up to 7), separated by spaces,
  // tabs and runs of both, with and without a final newline.
  const auto dir = sparserl::testing::scratch_dir("mtx_index_lengths");
  std::string text = "%%MatrixMarket matrix coordinate real general\n1000000 2147483647 12\n";
  const std::vector<std::int64_t> cols = {
      1, 12, 123, 1234, 12345, 123456, 1234567, 12345678, 123456789, 2147483647, 9, 10000000};
  const std::vector<std::string> seps = {" ", "\t",  "  \t ", " ", "\t\t", " ",
                                         " ", "   ", " ",     " ", " ",    " "};
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const std::int64_t row = static_cast<std::int64_t>(i * 90907 % 1000000) + 1;
    text += std::to_string(row) + seps[i] + std::to_string(cols[i]) + seps[(i + 3) % seps.size()] +
            std::to_string(static_cast<double>(i) + 0.5) + (i % 2 == 0 ? " \r\n" : "\n");
  }
  text.pop_back();  // no final newline
  sparserl::testing::write_bytes(dir / "lengths.mtx", text);
  const auto got = ds::read_matrix_market_entries(dir / "lengths.mtx");
  REQUIRE(got.entries.size() == cols.size());
  CHECK(got.rows == 1000000);
  CHECK(got.cols == 2147483647);
  for (std::size_t i = 0; i < cols.size(); ++i) {
    INFO(i);
    CHECK(got.entries[i].row == static_cast<ds::Index>(i * 90907 % 1000000));
    CHECK(got.entries[i].col == cols[i] - 1);
    CHECK(got.entries[i].value == static_cast<double>(i) + 0.5);
  }
  CHECK_THAT(error_of("%%MatrixMarket matrix coordinate real general\n2 2 1\n12345678901 1 1\n"),
             has_substring("t.mtx:3: row index 12345678901 is out of range [1, 2]"));
  CHECK_THAT(
      error_of("%%MatrixMarket matrix coordinate real general\n2 2 1\n99999999999999999999 1 1\n"),
      has_substring("t.mtx:3: expected an integer row index, found '99999999999999999999'"));
}

TEST_CASE("files larger than the read block keep exact line numbers", "[datasets][mtx]") {
  // About 10 MB: lines cross the 4 MiB block boundaries; comments and blank lines are interleaved.
  const auto dir = sparserl::testing::scratch_dir("mtx_blocks");
  const int n = 400000;
  std::string head =
      "%%MatrixMarket matrix coordinate real symmetric\n1000 1000 " + std::to_string(n) + "\n";
  std::string body;
  std::vector<ds::Triplet> expected;
  std::int64_t line = 2;
  std::uint64_t state = 12345;
  for (int i = 0; i < n; ++i) {
    if (i % 997 == 0) {
      body += "% comment " + std::to_string(i) + "\n\n";
      line += 2;
    }
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const auto r = static_cast<ds::Index>((state >> 33) % 1000);
    const auto c = static_cast<ds::Index>((state >> 13) % 1000);
    const double v = static_cast<double>(state >> 11) * 0x1.0p-53;
    const auto lo = std::max(r, c);
    const auto hi = std::min(r, c);
    char buf[64];
    const int len = std::snprintf(buf, sizeof buf, "%d %d %.17g\n", lo + 1, hi + 1, v);
    body.append(buf, static_cast<std::size_t>(len));
    ++line;
    expected.push_back({lo, hi, v});
    if (lo != hi) expected.push_back({hi, lo, v});
  }
  REQUIRE(body.size() > 9'000'000);
  sparserl::testing::write_bytes(dir / "big.mtx", head + body);
  const auto got = ds::read_matrix_market_entries(dir / "big.mtx");
  CHECK(got.report.lines == line);
  CHECK(got.report.stored_entries == n);
  REQUIRE(got.entries.size() == expected.size());
  bool same = true;
  for (std::size_t i = 0; i < expected.size() && same; ++i) {
    same = got.entries[i].row == expected[i].row && got.entries[i].col == expected[i].col &&
           got.entries[i].value == expected[i].value;
  }
  CHECK(same);
  CHECK(ds::read_matrix_market(dir / "big.mtx").matrix ==
        ds::SparseMatrix::from_triplets(1000, 1000, expected));

  // Break one line far past the first block: the message names exactly that line.
  std::string broken = head + body;
  std::size_t at = broken.size() * 3 / 4;
  at = broken.find('\n', at) + 1;
  const auto line_of =
      1 + std::count(broken.begin(), broken.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  broken.insert(at, "x");  // "x933 92 0.73..."
  sparserl::testing::write_bytes(dir / "broken.mtx", broken);
  try {
    (void)ds::read_matrix_market(dir / "broken.mtx");
    FAIL("no exception");
  } catch (const MatrixMarketError& e) {
    CHECK(e.line() == line_of);
    CHECK_THAT(e.what(), has_substring(":" + std::to_string(line_of) +
                                       ": expected an integer row index, found 'x"));
  }
}
