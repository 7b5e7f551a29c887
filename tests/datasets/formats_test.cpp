// The kernel ABI's storage formats: exact array layouts on a hand-worked matrix, exact round trips
// and reference SpMV / SpMM agreement (1e-12, scaled by sum_j |a_ij x_j|) on every shared
// SuiteSparse matrix and on awkward generated shapes, padding limits, and the messages of bad
// parameters.
#include "sparserl/datasets/formats.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/datasets/random.hpp"
#include "test_support.hpp"

namespace ds = sparserl::datasets;
using ds::Index;
using ds::SparseMatrix;
using sparserl::testing::has_substring;

namespace {

// Padded formats in these tests stay below this; larger ones must be refused, and that is checked.
constexpr std::int64_t kTestMaxStored = std::int64_t{1} << 22;

std::vector<double> random_vector(std::int64_t n, std::uint64_t seed) {
  ds::Rng rng(seed, 99);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = rng.uniform_pm1();
  return v;
}

// |got - want| <= 1e-12 * scale elementwise (scale = sum_j |a_ij x_j|), reporting the first miss.
void check_close(const std::vector<double>& got, const std::vector<double>& want,
                 const std::vector<double>& scale, const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(std::abs(got[i] - want[i]) <= 1e-12 * scale[i])) {
      INFO(what << ": output " << i << " is " << got[i] << ", reference " << want[i] << ", scale "
                << scale[i]);
      CHECK(false);
      return;
    }
  }
}

// The reference products of one format against CSR's, for SpMV and SpMM with K = 1, 3, 8.
template <typename Format>
void check_products(const SparseMatrix& a, const Format& f, const std::string& what) {
  const auto x = random_vector(a.cols(), 7);
  std::vector<double> want(static_cast<std::size_t>(a.rows())), scale(want.size());
  std::vector<double> got(want.size(), std::nan(""));
  ds::spmv(a, x, want);
  ds::spmv_abs(a, x, scale);
  ds::spmv(f, x, got);
  check_close(got, want, scale, what + " spmv");
  for (Index k : {1, 3, 8}) {
    const auto xk = random_vector(std::int64_t{a.cols()} * k, 11 + static_cast<std::uint64_t>(k));
    std::vector<double> want_k(static_cast<std::size_t>(a.rows()) * static_cast<std::size_t>(k));
    std::vector<double> scale_k(want_k.size()), got_k(want_k.size(), std::nan(""));
    ds::spmm(a, xk, k, want_k);
    ds::spmm_abs(a, xk, k, scale_k);
    ds::spmm(f, xk, k, got_k);
    check_close(got_k, want_k, scale_k, what + " spmm k=" + std::to_string(k));
  }
}

std::int64_t max_row_length(const SparseMatrix& a) {
  std::int64_t longest = 0;
  for (Index i = 0; i < a.rows(); ++i) longest = std::max<std::int64_t>(longest, a.row_length(i));
  return longest;
}

// Every conversion with the parameter choices of the brief round-trips exactly and multiplies like
// CSR; ELL may be refused by the test limit, but only where its padded size truly exceeds it.
void check_all_formats(const SparseMatrix& a, const std::string& name) {
  INFO("matrix " << name << " (" << a.rows() << " x " << a.cols() << ", nnz " << a.nnz() << ")");
  {
    const auto coo = ds::to_coo(a);
    CHECK(ds::to_csr(coo) == a);
    check_products(a, coo, name + " COO");
  }
  try {
    const auto ell = ds::to_ell(a, kTestMaxStored);
    CHECK(ell.width == max_row_length(a));
    CHECK(ds::to_csr(ell) == a);
    check_products(a, ell, name + " ELL");
  } catch (const ds::FormatTooLarge&) {
    CHECK(max_row_length(a) * a.rows() > kTestMaxStored);
  }
  for (Index c : {1, 4, 32}) {
    for (Index sigma : {1, c, 8 * c}) {
      const std::string what =
          name + " SELL C=" + std::to_string(c) + " sigma=" + std::to_string(sigma);
      INFO(what);
      const auto sell = ds::to_sell(a, c, sigma, kTestMaxStored);
      CHECK(sell.num_slices() == (a.rows() + c - 1) / c);
      CHECK(ds::to_csr(sell) == a);
      check_products(a, sell, what);
    }
  }
  for (auto [r, c] : {std::pair<Index, Index>{1, 1}, {2, 3}, {4, 4}, {8, 1}}) {
    const std::string what = name + " BSR " + std::to_string(r) + "x" + std::to_string(c);
    INFO(what);
    const auto bsr = ds::to_bsr(a, r, c, kTestMaxStored);
    CHECK(ds::to_csr(bsr) == a);
    check_products(a, bsr, what);
  }
}

// A deliberately tiny coordinate-format reader, so these tests depend on the formats alone and not
// on the Matrix Market reader's policies (Ragusa16, say, is a "pattern" file that carries values
// anyway: the third number is ignored here). Symmetric files are mirrored; skew-symmetric ones with
// a sign.
SparseMatrix read_coordinate(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string banner;
  std::getline(in, banner);
  const bool pattern = banner.find("pattern") != std::string::npos;
  const bool skew = banner.find("skew-symmetric") != std::string::npos;
  const bool symmetric = skew || banner.find(" symmetric") != std::string::npos ||
                         banner.find("hermitian") != std::string::npos;
  std::string line;
  while (std::getline(in, line) && (line.empty() || line[0] == '%')) {
  }
  std::istringstream size_line(line);
  std::int64_t rows = 0, cols = 0, entries = 0;
  size_line >> rows >> cols >> entries;
  std::vector<ds::Triplet> triplets;
  for (std::int64_t e = 0; e < entries && std::getline(in, line);) {
    if (line.empty() || line[0] == '%') continue;
    std::istringstream fields(line);
    std::int64_t r = 0, c = 0;
    double v = 1.0;
    fields >> r >> c;
    if (!pattern) fields >> v;
    triplets.push_back({static_cast<Index>(r - 1), static_cast<Index>(c - 1), v});
    if (symmetric && r != c)
      triplets.push_back({static_cast<Index>(c - 1), static_cast<Index>(r - 1), skew ? -v : v});
    ++e;
  }
  return SparseMatrix::from_triplets(static_cast<Index>(rows), static_cast<Index>(cols),
                                     std::move(triplets));
}

ds::GeneratorSpec spec(std::string kind, std::map<std::string, std::string> params) {
  return ds::GeneratorSpec{std::move(kind), std::move(params)};
}

// The 3 x 4 example worked by hand in the layout tests:
//   [1 . 2 .]
//   [. 3 . .]
//   [4 5 . 6]
SparseMatrix small() {
  return SparseMatrix::from_triplets(
      3, 4, {{0, 0, 1.0}, {0, 2, 2.0}, {1, 1, 3.0}, {2, 0, 4.0}, {2, 1, 5.0}, {2, 3, 6.0}});
}

}  // namespace

TEST_CASE("COO layout is row-sorted triplets", "[datasets][formats]") {
  const auto coo = ds::to_coo(small());
  CHECK(coo.row_idx == std::vector<Index>{0, 0, 1, 2, 2, 2});
  CHECK(coo.col_idx == std::vector<Index>{0, 2, 1, 0, 1, 3});
  CHECK(coo.val == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(coo.nnz() == 6);
}

TEST_CASE("ELL layout is column-major with -1 / 0 padding", "[datasets][formats]") {
  const auto ell = ds::to_ell(small());
  CHECK(ell.width == 3);
  CHECK(ell.col_idx == std::vector<Index>{0, 1, 0, 2, -1, 1, -1, -1, 3});
  CHECK(ell.val == std::vector<double>{1, 3, 4, 2, 0, 5, 0, 0, 6});
}

TEST_CASE("SELL layout: slices of C lanes, rows sorted by length within sigma",
          "[datasets][formats]") {
  SECTION("sigma = 1 keeps the row order; the last slice is padded past M") {
    const auto sell = ds::to_sell(small(), 2, 1);
    CHECK(sell.sigma == 1);
    CHECK(sell.row_perm == std::vector<Index>{0, 1, 2});
    CHECK(sell.slice_ptr == std::vector<Index>{0, 4, 10});
    CHECK(sell.col_idx == std::vector<Index>{0, 1, 2, -1, 0, -1, 1, -1, 3, -1});
    CHECK(sell.val == std::vector<double>{1, 3, 2, 0, 4, 0, 5, 0, 6, 0});
  }
  SECTION("sigma = 3 rounds up to 4 = 2C and sorts all three rows by decreasing length") {
    const auto sell = ds::to_sell(small(), 2, 3);
    CHECK(sell.sigma == 4);
    CHECK(sell.row_perm == std::vector<Index>{2, 0, 1});
    CHECK(sell.slice_ptr == std::vector<Index>{0, 6, 8});
    CHECK(sell.col_idx == std::vector<Index>{0, 0, 1, 2, 3, -1, 1, -1});
    CHECK(sell.val == std::vector<double>{4, 1, 5, 2, 6, 0, 3, 0});
  }
  SECTION("equal lengths keep their original order (stable)") {
    const auto d = ds::generate(spec("diagonal", {{"n", "5"}}));
    CHECK(ds::to_sell(d, 2, 4).row_perm == std::vector<Index>{0, 1, 2, 3, 4});
  }
}

TEST_CASE("BSR layout: sorted block columns, row-major blocks, edge blocks cut by the guard",
          "[datasets][formats]") {
  const auto bsr = ds::to_bsr(small(), 2, 3);
  CHECK(bsr.mb() == 2);
  CHECK(bsr.block_row_ptr == std::vector<Index>{0, 1, 3});
  CHECK(bsr.block_col_idx == std::vector<Index>{0, 0, 1});
  CHECK(bsr.val == std::vector<double>{1, 0, 2, 0, 3, 0, 4, 5, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0});
  CHECK(bsr.stored ==
        std::vector<std::uint8_t>{1, 0, 1, 0, 1, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0});
  CHECK(bsr.nnzb() == 3);
}

TEST_CASE("explicit zeros survive every round trip", "[datasets][formats]") {
  auto a = small();
  a.mutable_values()[1] = 0.0;   // (0, 2)
  a.mutable_values()[4] = -0.0;  // (2, 1)
  check_all_formats(a, "small with explicit zeros");
  const auto back = ds::to_csr(ds::to_bsr(a, 4, 4));
  CHECK(back.nnz() == 6);
  CHECK(std::signbit(back.values()[4]));
}

TEST_CASE("formats round-trip and match CSR's products on every shared SuiteSparse matrix",
          "[datasets][formats][shared]") {
  const auto dir = sparserl::testing::shared_matrices_dir();
  std::ifstream index(dir / "INDEX.csv");
  REQUIRE(index.good());
  std::string line;
  std::getline(index, line);  // header
  int matrices = 0;
  while (std::getline(index, line)) {
    if (line.empty()) continue;
    const std::string file = line.substr(0, line.find(','));
    const auto path = dir / "suitesparse" / file;
    if (!std::filesystem::exists(path)) continue;
    check_all_formats(read_coordinate(path), file);
    ++matrices;
  }
  CHECK(matrices >= 50);
}

TEST_CASE("formats round-trip on awkward generated shapes", "[datasets][formats]") {
  const std::vector<ds::GeneratorSpec> specs = {
      spec("diagonal", {{"n", "0"}}),                                            // 0 x 0
      spec("uniform", {{"rows", "1"}, {"cols", "300"}, {"nnz_per_row", "97"}}),  // 1 x N
      spec("column", {{"n", "301"}}),                                            // N x 1
      spec("column", {{"n", "257"}, {"empty_rows", "0.4"}, {"seed", "2"}}),
      spec("uniform", {{"rows", "7"}, {"cols", "5"}, {"nnz_per_row", "0"}}),  // no entries
      spec("uniform", {{"rows", "4"}, {"cols", "0"}, {"nnz_per_row", "0"}}),  // 4 x 0
      spec("uniform", {{"rows", "0"}, {"cols", "5"}}),                        // 0 x 5
      spec("uniform",
           {{"rows", "500"}, {"cols", "333"}, {"nnz_per_row", "5"}, {"empty_rows", "0.3"}}),
      spec("uniform", {{"rows", "300"},
                       {"cols", "2000"},
                       {"nnz_per_row", "3"},
                       {"huge_row", "2000"},
                       {"seed", "4"}}),
      spec("stencil2d", {{"nx", "13"}, {"ny", "11"}, {"points", "9"}}),
      spec("stencil3d", {{"nx", "5"}, {"ny", "6"}, {"nz", "7"}, {"points", "27"}}),
      spec("banded", {{"n", "101"}, {"bandwidth", "6"}, {"fill", "0.5"}}),
      spec("rmat", {{"scale", "9"}, {"edge_factor", "8"}, {"seed", "3"}}),
      spec("blockdiag", {{"blocks", "9"}, {"block_size", "5"}}),
      spec("arrow", {{"n", "150"}, {"width", "3"}}),
  };
  for (const auto& s : specs) check_all_formats(ds::generate(s), s.uri());
}

TEST_CASE("padded formats refuse beyond max_stored, naming the padded size and the limit",
          "[datasets][formats]") {
  const auto arrow = ds::generate(spec("arrow", {{"n", "1000"}, {"width", "1"}}));
  CHECK_THROWS_AS(ds::to_ell(arrow, 999'999), ds::FormatTooLarge);
  CHECK_THROWS_WITH(ds::to_ell(arrow, 999'999), has_substring("store 1000000 entries"));
  CHECK_THROWS_WITH(ds::to_ell(arrow, 999'999), has_substring("limit of 999999"));
  CHECK(ds::to_ell(arrow, 1'000'000).width == 1000);
  // SELL with C = 1 stores no padding at all; with C = 32 the first slice is 1000 wide.
  CHECK_NOTHROW(ds::to_sell(arrow, 1, 1, arrow.nnz()));
  CHECK_THROWS_WITH(ds::to_sell(arrow, 32, 1, 32'000), has_substring("limit of 32000"));
  CHECK_THROWS_AS(ds::to_bsr(arrow, 8, 8, 1000), ds::FormatTooLarge);
  CHECK_THROWS_WITH(ds::to_bsr(arrow, 8, 8, 1000), has_substring("blocks of 8 x 8"));
}

TEST_CASE("bad format parameters and operand sizes are refused with clear messages",
          "[datasets][formats]") {
  const auto a = small();
  CHECK_THROWS_WITH(ds::to_sell(a, 0, 1), has_substring("slice height C is 0, expected >= 1"));
  CHECK_THROWS_WITH(ds::to_sell(a, 4, 0), has_substring("sigma is 0, expected >= 1"));
  CHECK_THROWS_WITH(ds::to_bsr(a, 0, 2), has_substring("block dimensions are 0 x 2"));
  CHECK_THROWS_WITH(ds::to_bsr(a, 2, -1), has_substring("expected both >= 1"));
  std::vector<double> x(4), y(3), y_short(2);
  CHECK_THROWS_WITH(ds::spmv(a, std::vector<double>(3), y),
                    has_substring("x has 3 entries, expected cols = 4"));
  CHECK_THROWS_WITH(ds::spmv(ds::to_ell(a), x, y_short),
                    has_substring("y has 2 entries, expected rows = 3"));
  CHECK_THROWS_WITH(ds::spmm(ds::to_coo(a), x, 2, y), has_substring("expected cols * k = 8"));
  CHECK_THROWS_WITH(ds::spmm(a, x, 0, y), has_substring("k is 0"));
  CHECK_THROWS_AS(ds::spmm_abs(a, x, 1, y_short), std::invalid_argument);
}

TEST_CASE("conversions back to CSR reject inconsistent arrays", "[datasets][formats]") {
  const auto a = small();
  auto ell = ds::to_ell(a);
  ell.col_idx.pop_back();
  CHECK_THROWS_WITH(ds::to_csr(ell),
                    has_substring("ELL col_idx has 8 entries, expected width * rows = 9"));
  auto ell_bad_col = ds::to_ell(a);
  ell_bad_col.col_idx[0] = 4;
  CHECK_THROWS_AS(ds::to_csr(ell_bad_col), ds::InvalidMatrix);
  auto sell = ds::to_sell(a, 2, 4);
  sell.row_perm[1] = 2;
  CHECK_THROWS_WITH(ds::to_csr(sell), has_substring("row_perm is not a permutation"));
  auto bsr = ds::to_bsr(a, 2, 3);
  bsr.stored[17] = 1;  // row 3 of a 3-row matrix
  CHECK_THROWS_WITH(ds::to_csr(bsr), has_substring("outside the 3 x 4 matrix"));
  auto bsr_order = ds::to_bsr(a, 2, 3);
  std::swap(bsr_order.block_col_idx[1], bsr_order.block_col_idx[2]);
  CHECK_THROWS_WITH(ds::to_csr(bsr_order), has_substring("must be strictly increasing"));
}

TEST_CASE("COO in another order and BSR without its stored mask still convert",
          "[datasets][formats]") {
  ds::CooMatrix coo{2, 2, {1, 0, 1}, {0, 1, 0}, {1.0, 2.0, 3.0}};
  CHECK(ds::to_csr(coo) == SparseMatrix::from_triplets(2, 2, {{0, 1, 2.0}, {1, 0, 4.0}}));
  auto bsr = ds::to_bsr(small(), 2, 2);
  bsr.stored.clear();
  CHECK(ds::to_csr(bsr) == small());  // small() holds no explicit zeros
}
