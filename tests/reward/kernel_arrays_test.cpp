// The arrays handed to kernels agree with the ABI registry: the same names in the same order, and
// element counts equal to the registry's length expressions evaluated on the matrix's constants.
#include "catch.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/reward/abi.hpp"
#include "sparserl/reward/kernel_arrays.hpp"
#include "sparserl/reward/launch_expr.hpp"

using namespace sparserl;
using reward::Format;
using reward::FormatSpec;

namespace {

datasets::SparseMatrix irregular_matrix() {
  // Rows of very different length, an empty row, a dense-ish block, explicit zero.
  std::vector<datasets::Triplet> t;
  for (int j = 0; j < 37; ++j) t.push_back({0, j, 0.5 + j});
  for (int i = 2; i < 23; ++i) t.push_back({i, (i * 7) % 41, -1.0 * i});
  for (int i = 30; i < 34; ++i)
    for (int j = 30; j < 34; ++j) t.push_back({i, j, 0.25});
  t.push_back({40, 40, 0.0});
  return datasets::SparseMatrix::from_triplets(41, 43, t);
}

std::vector<FormatSpec> specs() {
  std::vector<FormatSpec> out;
  out.push_back({Format::csr, {}});
  out.push_back({Format::coo, {}});
  out.push_back({Format::ell, {}});
  FormatSpec sell{Format::sell, {}};
  sell.params.sell_c = 4;
  sell.params.sell_sigma = 16;
  out.push_back(sell);
  FormatSpec bsr{Format::bsr, {}};
  bsr.params.bsr_r = 3;
  bsr.params.bsr_c = 2;
  out.push_back(bsr);
  return out;
}

}  // namespace

TEST_CASE("kernel arrays follow the registry's names, order and lengths", "[reward][abi]") {
  const datasets::SparseMatrix m = irregular_matrix();
  for (const FormatSpec& spec : specs()) {
    for (reward::DType dtype : reward::kDTypes) {
      INFO(spec.str() << " " << datasets::to_string(dtype));
      const reward::KernelArrays arrays = reward::build_kernel_arrays(m, spec, dtype);
      const reward::Signature& sig = reward::signature(reward::Op::spmv, spec.format);
      REQUIRE(arrays.matrix_args.size() + 2 == sig.args.size());
      const reward::Constants constants = reward::compute_constants(m, reward::Op::spmv, 1, spec);
      for (std::size_t i = 0; i < arrays.matrix_args.size(); ++i) {
        const reward::HostArray& a = arrays.matrix_args[i];
        CHECK(a.name == sig.args[i].name);
        CHECK(a.kind == sig.args[i].kind);
        const auto length = reward::LaunchExpr::parse(sig.args[i].length);
        REQUIRE(length.ok());
        const auto expected = length.expr->evaluate(constants);
        REQUIRE(expected.ok());
        CHECK(a.elements == expected.value);
        const std::size_t width = a.kind == reward::ArgKind::index_array ? 4 : datasets::dtype_bytes(dtype);
        CHECK(a.bytes.size() == static_cast<std::size_t>(a.elements) * width);
      }
      CHECK(arrays.stored_entries == reward::stored_entries(constants, spec.format));
    }
  }
}

TEST_CASE("f32 arrays hold the values the rounded reference uses", "[reward][abi]") {
  const datasets::SparseMatrix m = datasets::SparseMatrix::from_triplets(2, 2, {{0, 0, 0.1}, {1, 1, 1.0 / 3.0}});
  const auto arrays = reward::build_kernel_arrays(m, {Format::csr, {}}, reward::DType::f32);
  CHECK(arrays.rounded.values()[0] == static_cast<double>(0.1f));
  CHECK(arrays.rounded.values()[1] == static_cast<double>(1.0f / 3.0f));
  const auto* vals = reinterpret_cast<const float*>(arrays.matrix_args[2].bytes.data());
  CHECK(vals[0] == 0.1f);
  const auto f64 = reward::build_kernel_arrays(m, {Format::csr, {}}, reward::DType::f64);
  CHECK(f64.rounded == m);
}

TEST_CASE("a padded format over its limit is refused", "[reward][abi]") {
  std::vector<datasets::Triplet> t;
  for (int j = 0; j < 1000; ++j) t.push_back({0, j, 1.0});
  for (int i = 1; i < 1000; ++i) t.push_back({i, i, 1.0});
  const auto m = datasets::SparseMatrix::from_triplets(1000, 1000, t);
  CHECK_THROWS_AS(reward::build_kernel_arrays(m, {Format::ell, {}}, reward::DType::f32, 100000),
                  datasets::FormatTooLarge);
}
