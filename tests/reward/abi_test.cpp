// The kernel ABI registry: every (op, format) has its signature, the constants computed from a
// matrix match hand counts and the datasets converters, the prelude renders them, and
// docs/kernel-abi.md is exactly what the registry renders.
#include "sparserl/reward/abi.hpp"

#include <fstream>
#include <random>
#include <sstream>

#include "abi_fixtures.hpp"
#include "catch.hpp"
#include "sparserl/datasets/formats.hpp"
#include "sparserl/reward/launch_expr.hpp"
#include "test_support.hpp"

using namespace sparserl::reward;
using sparserl::datasets::SparseMatrix;
using sparserl::reward::testing::small_matrix;
using sparserl::testing::has_substring;

namespace {

FormatSpec sell(int c, std::int64_t sigma) {
  FormatSpec s;
  s.format = Format::sell;
  s.params.sell_c = c;
  s.params.sell_sigma = sigma;
  return s;
}

FormatSpec bsr(int r, int c) {
  FormatSpec s;
  s.format = Format::bsr;
  s.params.bsr_r = r;
  s.params.bsr_c = c;
  return s;
}

FormatSpec plain(Format f) {
  FormatSpec s;
  s.format = f;
  return s;
}

SparseMatrix random_matrix(int rows, int cols, int nnz, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<sparserl::datasets::Triplet> t;
  // Skewed row choice so that row lengths differ a lot (what SELL sorting and BSR blocking see).
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int i = 0; i < nnz; ++i) {
    const double r = u(rng);
    t.push_back({static_cast<int>(r * r * rows) % rows, static_cast<int>(rng() % cols), 1.0});
  }
  return SparseMatrix::from_triplets(rows, cols, std::move(t));
}

}  // namespace

TEST_CASE("formats print and parse", "[reward][abi]") {
  for (Format f : kFormats) CHECK(parse_format(to_string(f)) == f);
  CHECK_FALSE(parse_format("CSR").has_value());
  CHECK_FALSE(parse_format("").has_value());
  CHECK(sell(32, 256).str() == "sell C=32 sigma=256");
  CHECK(bsr(4, 2).str() == "bsr R=4 C=2");
  CHECK(plain(Format::coo).str() == "coo");
}

TEST_CASE("format parameters are validated", "[reward][abi]") {
  CHECK_FALSE(sell(32, 1).validate().has_value());
  CHECK_FALSE(sell(1024, 1 << 30).validate().has_value());
  CHECK_THAT(*sell(0, 1).validate(), has_substring("C must be in 1..1024"));
  CHECK_THAT(*sell(1025, 1).validate(), has_substring("C must be in 1..1024"));
  CHECK_THAT(*sell(32, 0).validate(), has_substring("sigma must be in"));
  CHECK_FALSE(bsr(1, 32).validate().has_value());
  CHECK_THAT(*bsr(33, 4).validate(), has_substring("R and C must be in 1..32"));
  CHECK_THAT(*bsr(4, 0).validate(), has_substring("R and C must be in 1..32"));
  FormatSpec csr_with_params = plain(Format::csr);
  csr_with_params.params.bsr_r = 2;
  CHECK_THAT(*csr_with_params.validate(), has_substring("takes no parameters"));
  CHECK(sell(32, 1).effective_sigma() == 1);
  CHECK(sell(32, 33).effective_sigma() == 64);
  CHECK(sell(32, 256).effective_sigma() == 256);
}

TEST_CASE("every (op, format) has a signature ending in its dense operands", "[reward][abi]") {
  for (Op op : kOps) {
    for (Format f : kFormats) {
      const Signature& s = signature(op, f);
      CHECK(s.op == op);
      CHECK(s.format == f);
      REQUIRE(s.args.size() >= 4);
      const KernelArg& x = s.args[s.args.size() - 2];
      const KernelArg& y = s.args.back();
      CHECK(x.kind == ArgKind::value_array);
      CHECK(y.kind == ArgKind::output_array);
      CHECK(x.name == (op == Op::spmv ? "x" : "X"));
      CHECK(y.length == (op == Op::spmv ? "M" : "M * K"));
      // Exactly one output, and every length is a valid launch expression of the format.
      int outputs = 0;
      const auto names = constant_names(f);
      for (const KernelArg& a : s.args) {
        outputs += a.kind == ArgKind::output_array;
        INFO(to_string(f) << " " << a.name << " length " << a.length);
        CHECK(LaunchExpr::parse(a.length, &names).ok());
      }
      CHECK(outputs == 1);
    }
  }
  CHECK(signature(Op::spmv, Format::csr).declaration("k") ==
        "extern \"C\" __global__ void k(const int* __restrict__ row_ptr, const int* __restrict__ "
        "col_idx, const value_t* __restrict__ val, const value_t* __restrict__ x, value_t* "
        "__restrict__ y)");
  CHECK(signature(Op::spmm, Format::sell).args.size() == 6);
}

TEST_CASE("constants of the small matrix match hand counts", "[reward][abi]") {
  const SparseMatrix a = small_matrix();
  const Constants c = compute_constants(a, Op::spmv, 99, plain(Format::csr));
  CHECK(c.at("M") == 7);
  CHECK(c.at("N") == 6);
  CHECK(c.at("NNZ") == 17);
  CHECK(c.at("MAX_ROW_NNZ") == 6);
  CHECK(c.at("MIN_ROW_NNZ") == 0);
  CHECK(c.at("EMPTY_ROWS") == 1);
  CHECK(c.at("K") == 1);  // SpMV ignores k
  CHECK_FALSE(c.find("ELL_WIDTH").has_value());
  CHECK_THROWS_WITH(c.at("BSR_R"), has_substring("BSR_R"));

  CHECK(compute_constants(a, Op::spmm, 8, plain(Format::coo)).at("K") == 8);
  const Constants ell = compute_constants(a, Op::spmv, 1, plain(Format::ell));
  CHECK(ell.at("ELL_WIDTH") == 6);
  CHECK(stored_entries(ell, Format::ell) == 42);

  // C=2, sigma=1: slice widths 3, 6, 2, 4.
  const Constants s1 = compute_constants(a, Op::spmv, 1, sell(2, 1));
  CHECK(s1.at("SELL_C") == 2);
  CHECK(s1.at("SELL_SIGMA") == 1);
  CHECK(s1.at("SELL_SLICES") == 4);
  CHECK(s1.at("SELL_STORED") == 30);
  // C=2, sigma=3 -> 4: windows sorted to (6 3 1 0)(4 2 1): widths 6, 1, 4, 1.
  const Constants s4 = compute_constants(a, Op::spmv, 1, sell(2, 3));
  CHECK(s4.at("SELL_SIGMA") == 4);
  CHECK(s4.at("SELL_STORED") == 24);

  const Constants b = compute_constants(a, Op::spmv, 1, bsr(2, 2));
  CHECK(b.at("BSR_MB") == 4);
  CHECK(b.at("BSR_NB") == 3);
  CHECK(b.at("BSR_NNZB") == 11);
  CHECK(stored_entries(b, Format::bsr) == 44);

  CHECK_THROWS_WITH(compute_constants(a, Op::spmm, 0, plain(Format::csr)), has_substring("K >= 1"));
  CHECK_THROWS_WITH(compute_constants(a, Op::spmv, 1, bsr(0, 2)), has_substring("R and C"));
}

TEST_CASE("SELL_STORED and BSR_NNZB match the datasets converters", "[reward][abi]") {
  for (unsigned seed = 1; seed <= 4; ++seed) {
    const SparseMatrix a = random_matrix(203, 157, 1500, seed);
    const std::pair<int, int> sell_cases[] = {{1, 1},   {4, 1},  {32, 1},
                                              {32, 64}, {8, 13}, {3, 1000}};
    for (auto [c, sigma] : sell_cases) {
      const auto m = sparserl::datasets::to_sell(a, c, sigma);
      const Constants k = compute_constants(a, Op::spmv, 1, sell(c, sigma));
      INFO("seed " << seed << " C " << c << " sigma " << sigma);
      CHECK(k.at("SELL_STORED") == static_cast<std::int64_t>(m.val.size()));
      CHECK(k.at("SELL_SLICES") == m.num_slices());
      CHECK(k.at("SELL_SIGMA") == m.sigma);
    }
    const std::pair<int, int> bsr_cases[] = {{1, 1}, {2, 2}, {4, 4}, {3, 7}, {32, 32}};
    for (auto [r, c] : bsr_cases) {
      const auto m = sparserl::datasets::to_bsr(a, r, c);
      const Constants k = compute_constants(a, Op::spmv, 1, bsr(r, c));
      INFO("seed " << seed << " R " << r << " C " << c);
      CHECK(k.at("BSR_NNZB") == m.nnzb());
      CHECK(k.at("BSR_MB") == m.mb());
      CHECK(stored_entries(k, Format::bsr) == static_cast<std::int64_t>(m.val.size()));
    }
    const auto e = sparserl::datasets::to_ell(a);
    CHECK(stored_entries(compute_constants(a, Op::spmv, 1, plain(Format::ell)), Format::ell) ==
          static_cast<std::int64_t>(e.val.size()));
  }
}

TEST_CASE("the prelude defines value_t, every constant and the #line reset", "[reward][abi]") {
  const Constants c = compute_constants(small_matrix(), Op::spmm, 4, bsr(2, 3));
  const std::string f32 = render_prelude(DType::f32, c);
  CHECK_THAT(f32, has_substring("typedef float value_t;\n"));
  CHECK_THAT(render_prelude(DType::f64, c), has_substring("typedef double value_t;\n"));
  for (const Constants::Entry& e : c.entries()) {
    CHECK_THAT(f32, has_substring("#define " + e.name + " " + std::to_string(e.value) + "\n"));
  }
  const std::string last_line = "\n#line 1 \"program.cu\"\n";
  REQUIRE(f32.size() > last_line.size());
  CHECK(f32.substr(f32.size() - last_line.size()) == last_line);
  const Constants big({{"NNZ", std::int64_t{3} << 31}});
  CHECK_THAT(render_prelude(DType::f32, big), has_substring("#define NNZ 6442450944LL\n"));
}

TEST_CASE("constant names follow the format", "[reward][abi]") {
  const auto csr = constant_names(Format::csr);
  CHECK(csr.size() == 7);
  const auto sell_names = constant_names(Format::sell);
  CHECK(std::find(sell_names.begin(), sell_names.end(), "SELL_STORED") != sell_names.end());
  CHECK(std::find(sell_names.begin(), sell_names.end(), "BSR_R") == sell_names.end());
  // Every computed constant is documented, in the documented order.
  for (Format f : kFormats) {
    FormatSpec spec = f == Format::sell ? sell(4, 8) : f == Format::bsr ? bsr(2, 2) : plain(f);
    const Constants c = compute_constants(small_matrix(), Op::spmm, 3, spec);
    const auto names = constant_names(f);
    REQUIRE(c.entries().size() == names.size());
    for (std::size_t i = 0; i < names.size(); ++i) CHECK(c.entries()[i].name == names[i]);
  }
}

TEST_CASE("docs/kernel-abi.md is what the registry renders", "[reward][abi]") {
  const auto path = sparserl::testing::source_dir() / "docs" / "kernel-abi.md";
  std::ifstream in(path);
  std::ostringstream committed;
  if (in) committed << in.rdbuf();
  const std::string rendered = render_abi_markdown();
  // Name the first line that differs rather than printing two pages.
  std::istringstream a(committed.str()), b(rendered);
  std::string line_a, line_b;
  int line = 0;
  bool more_a = true, more_b = true;
  while (more_a || more_b) {
    ++line;
    more_a = static_cast<bool>(std::getline(a, line_a));
    more_b = static_cast<bool>(std::getline(b, line_b));
    if (!more_a) line_a = "<end of file>";
    if (!more_b) line_b = "<end of rendering>";
    if (line_a != line_b) break;
  }
  INFO("docs/kernel-abi.md differs from the kernel ABI registry at line "
       << line << ":\n  committed: " << line_a << "\n  registry:  " << line_b
       << "\nRegenerate it: <build>/tools/sparserl abi --markdown > docs/kernel-abi.md "
          "(from the source tree), and review the diff.");
  const bool same = committed.str() == rendered;
  CHECK(same);
  CHECK_THAT(render_abi_text(), has_substring("spmm bsr:"));
}
