// Every file in ../shared/matrices/edge (test files of CHOLMOD, LAGraph, Mongoose, ParU and SPQR)
// has one documented expectation here: it loads with these dimensions and entry counts, or it fails
// with a message naming this line and containing this text. docs/datasets.md carries the same
// table. A file added to the folder without a row here fails the test.
#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "catch.hpp"
#include "sparserl/datasets/matrix_market.hpp"
#include "test_support.hpp"

namespace ds = sparserl::datasets;
using sparserl::testing::has_substring;

namespace {

struct EdgeExpectation {
  const char* file;
  // Loads: dimensions, final nnz, entries stored in the file. Fails: line 0 here.
  std::int64_t rows, cols, nnz, stored;
  // Fails: the line the message names and text it contains.
  std::int64_t line;
  const char* message;
};

constexpr std::int64_t kFails = -1;

// clang-format off
const std::vector<EdgeExpectation> kEdgeFiles = {
    {"CHOLMOD_3by0.mtx",               3,    0,   0,   0,  0, nullptr},
    {"CHOLMOD_c.mtx",                  kFails, 0, 0,   0,  1, "complex matrices are not supported"},
    {"CHOLMOD_fullcrud1.mtx",          kFails, 0, 0,   0,  1, "expected the banner"},
    {"CHOLMOD_fullrsa.mtx",            2,    2,   4,   3,  0, nullptr},
    {"CHOLMOD_fullrza.mtx",            2,    2,   2,   1,  0, nullptr},
    {"CHOLMOD_mangle1.mtx",            kFails, 0, 0,   0,  1, "expected the object 'matrix' in the banner, found 'junk'"},
    {"CHOLMOD_mangle2.mtx",            kFails, 0, 0,   0,  1, "expected the format 'coordinate' or 'array' in the banner, found 'junk'"},
    {"CHOLMOD_mangle3.mtx",            kFails, 0, 0,   0,  1, "expected the field 'real', 'integer' or 'pattern' in the banner, found 'junk'"},
    {"CHOLMOD_mangle4.mtx",            kFails, 0, 0,   0,  1, "in the banner, found 'junk'"},
    {"CHOLMOD_rza.mtx",                3,    3,   6,   3,  0, nullptr},
    {"LAGraph_LFAT5_hypersparse.mtx",  2000, 2000, 46, 30, 0, nullptr},
    {"LAGraph_comments_full.mtx",      3,    3,   9,   9,  0, nullptr},
    {"LAGraph_comments_west0067.mtx",  kFails, 0, 0,   0,  6, "value 'nan' is not finite"},
    {"LAGraph_complex.mtx",            kFails, 0, 0,   0,  1, "complex matrices are not supported"},
    {"LAGraph_empty.mtx",              3,    4,   0,   0,  0, nullptr},
    {"LAGraph_full.mtx",               3,    3,   9,   9,  0, nullptr},
    {"LAGraph_full_noheader.mtx",      kFails, 0, 0,   0,  1, "expected the banner"},
    {"LAGraph_full_symmetric.mtx",     4,    4,  16,  10,  0, nullptr},
    {"LAGraph_mangled1.mtx",           kFails, 0, 0,   0,  1, "expected the object 'matrix' in the banner, found 'mangled'"},
    {"LAGraph_mangled10.mtx",          kFails, 0, 0,   0,  6, "the file ends after 2 entries of the 3 declared"},
    {"LAGraph_mangled11.mtx",          kFails, 0, 0,   0,  5, "expected an integer column index, found 'zero'"},
    {"LAGraph_mangled12.mtx",          kFails, 0, 0,   0,  5, "found 2 numbers: '1 1'"},
    {"LAGraph_mangled13.mtx",          kFails, 0, 0,   0,  7, "column index 9999 is out of range [1, 4]"},
    {"LAGraph_mangled14.mtx",          3,    4,   2,   3,  0, nullptr},
    {"LAGraph_mangled15.mtx",          kFails, 0, 0,   0,  5, "expected an entry 'VALUE' (1 number for an array real matrix), found 2 numbers"},
    {"LAGraph_mangled16.mtx",          kFails, 0, 0,   0,  5, "expected an entry 'VALUE' (1 number for an array real matrix), found 2 numbers"},
    {"LAGraph_mangled2.mtx",           kFails, 0, 0,   0,  1, "expected the format 'coordinate' or 'array' in the banner, found 'mangled'"},
    {"LAGraph_mangled3.mtx",           kFails, 0, 0,   0,  1, "expected the field 'real', 'integer' or 'pattern' in the banner, found 'mangled'"},
    {"LAGraph_mangled4.mtx",           kFails, 0, 0,   0,  1, "in the banner, found 'mangled'"},
    {"LAGraph_mangled5.mtx",           kFails, 0, 0,   0,  1, "'hermitian' needs values"},
    {"LAGraph_mangled6.mtx",           kFails, 0, 0,   0,  5, "found 4 numbers: '2 2 1 1'"},
    {"LAGraph_mangled7.mtx",           kFails, 0, 0,   0,  5, "found 2 numbers: '1 1'"},
    {"LAGraph_mangled8.mtx",           kFails, 0, 0,   0,  4, "expected the size line 'ROWS COLS ENTRIES' (3 integers), found 1 number: '3'"},
    {"LAGraph_mangled9.mtx",           kFails, 0, 0,   0,  4, "a symmetric matrix must be square, found 3 x 4"},
    {"LAGraph_mangled_format.mtx",     kFails, 0, 0,   0,  1, "'array pattern' is not a valid combination"},
    {"LAGraph_mangled_skew.mtx",       6,    6,  20,  10,  0, nullptr},
    {"LAGraph_skew_fp64.mtx",          kFails, 0, 0,   0,  4, "value 'inf' is not finite"},
    {"LAGraph_skew_int32.mtx",         6,    6,  20,  10,  0, nullptr},
    {"LAGraph_sources_7.mtx",          64,   1,  64,  64,  0, nullptr},
    {"LAGraph_west0067_jumbled.mtx",   67,  67, 294, 294,  0, nullptr},
    {"LAGraph_west0067_noheader.mtx",  kFails, 0, 0,   0,  1, "expected the banner"},
    {"Mongoose_Trec4.mtx",             2,    3,   3,   3,  0, nullptr},
    {"Mongoose_bad_dimensions.mtx",    kFails, 0, 0,   0,  3, "expected the size line 'ROWS COLS ENTRIES' after the banner, found the end of the file"},
    {"Mongoose_bad_header.mtx",        kFails, 0, 0,   0,  1, "in the banner, found 'bogus'"},
    {"Mongoose_bad_matrix_type.mtx",   kFails, 0, 0,   0,  1, "complex matrices are not supported"},
    {"ParU_a0.mtx",                    0,    0,   0,   0,  0, nullptr},
    {"ParU_a04.mtx",                   0,    4,   0,   0,  0, nullptr},
    {"ParU_row0.mtx",                  kFails, 0, 0,   0, 12, "row index 0 is out of range [1, 4] (Matrix Market indices are 1-based)"},
    {"SPQR_a01.mtx",                   0,    1,   0,   0,  0, nullptr},
    {"SPQR_a10.mtx",                   1,    0,   0,   0,  0, nullptr},
};
// clang-format on

std::filesystem::path edge_dir() { return sparserl::testing::shared_matrices_dir() / "edge"; }

ds::SparseMatrix load(const std::string& name, const ds::ReadOptions& options = {}) {
  return ds::read_matrix_market(edge_dir() / name, options).matrix;
}

}  // namespace

TEST_CASE("every edge file loads or fails exactly as documented", "[datasets][edge]") {
  const auto dir = edge_dir();
  std::set<std::string> on_disk;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    on_disk.insert(e.path().filename().string());
  std::set<std::string> documented;
  for (const auto& x : kEdgeFiles) documented.insert(x.file);
  CHECK(on_disk == documented);

  for (const EdgeExpectation& x : kEdgeFiles) {
    INFO(x.file);
    const auto path = dir / x.file;
    if (x.rows != kFails) {
      ds::MatrixMarketFile f;
      REQUIRE_NOTHROW(f = ds::read_matrix_market(path));
      CHECK(f.matrix.rows() == x.rows);
      CHECK(f.matrix.cols() == x.cols);
      CHECK(f.matrix.nnz() == x.nnz);
      CHECK(f.report.stored_entries == x.stored);
      CHECK(f.report.expanded_entries - f.report.duplicates_summed == x.nnz);
      continue;
    }
    try {
      (void)ds::read_matrix_market(path);
      FAIL_CHECK("loaded, but is documented to fail");
    } catch (const ds::MatrixMarketError& e) {
      const std::string prefix = path.string() + ":" + std::to_string(x.line) + ": ";
      CHECK(std::string(e.what()).rfind(prefix, 0) == 0);
      CHECK(e.line() == x.line);
      CHECK_THAT(e.what(), has_substring(x.message));
    }
  }
}

TEST_CASE("edge files that load have the documented values", "[datasets][edge]") {
  // CHOLMOD_fullrsa: symmetric array, lower triangle 1.3, 3.4, 7.7 between blank and comment lines.
  CHECK(
      load("CHOLMOD_fullrsa.mtx") ==
      ds::SparseMatrix::from_triplets(2, 2, {{0, 0, 1.3}, {1, 0, 3.4}, {0, 1, 3.4}, {1, 1, 7.7}}));
  // CHOLMOD_fullrza: skew array, the strict lower triangle holds one value.
  CHECK(load("CHOLMOD_fullrza.mtx") ==
        ds::SparseMatrix::from_triplets(2, 2, {{1, 0, 3.4}, {0, 1, -3.4}}));
  // CHOLMOD_rza: integer skew.
  CHECK(load("CHOLMOD_rza.mtx") ==
        ds::SparseMatrix::from_triplets(
            3, 3, {{1, 0, -13}, {2, 0, -32}, {2, 1, -17}, {0, 1, 13}, {0, 2, 32}, {1, 2, 17}}));
  // LAGraph_mangled14: the duplicate (2, 2) is summed: 3.4 + 7.1.
  const auto m14 = ds::read_matrix_market(edge_dir() / "LAGraph_mangled14.mtx");
  CHECK(m14.report.duplicates_summed == 1);
  CHECK(m14.matrix == ds::SparseMatrix::from_triplets(3, 4, {{0, 0, 3.0}, {1, 1, 3.4 + 7.1}}));
  // The skew files keep their explicit zero (4, 3) and its mirror.
  const auto skew = ds::read_matrix_market(edge_dir() / "LAGraph_skew_int32.mtx");
  CHECK(skew.report.explicit_zeros == 1);
  CHECK(skew.matrix.values()[0] == 12.0);  // (1, 4) = -(-12)
  // Column-major array order.
  CHECK(load("LAGraph_full.mtx").values()[1] == 0.276);  // (1, 2) is the fourth value
  // The files rejected for non-finite values load with allow_non_finite.
  ds::ReadOptions allow;
  allow.allow_non_finite = true;
  CHECK(load("LAGraph_comments_west0067.mtx", allow).nnz() == 295);
  CHECK(load("LAGraph_skew_fp64.mtx", allow).nnz() == 20);
}

TEST_CASE("the jumbled and hypersparse copies equal their SuiteSparse originals",
          "[datasets][edge]") {
  const auto shared = sparserl::testing::shared_matrices_dir();
  CHECK(load("LAGraph_west0067_jumbled.mtx") ==
        ds::read_matrix_market(shared / "suitesparse" / "west0067.mtx").matrix);
  // LFAT5_hypersparse is Oberwolfach/LFAT5 placed in the corner of a 2000 x 2000 matrix.
  const auto lfat5 = ds::read_matrix_market(shared / "suitesparse" / "LFAT5.mtx").matrix;
  const auto hyper = load("LAGraph_LFAT5_hypersparse.mtx");
  CHECK(ds::SparseMatrix::from_triplets(2000, 2000, lfat5.to_triplets()) == hyper);
}
