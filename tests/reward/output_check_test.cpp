// The output check's rule on the host (output_check.hpp): the reference, the tolerance's edge, NaN
// as unwritten, rows the dtype cannot represent, the order-free merge of tallies, the verdict's
// wording; and that the device kernels' source compiles with NVRTC for the A100 and the H100, with
// every kernel the worker looks up and none with a stack frame (the GPU tier,
// reward_device_checks_gpu_tests, compares what they compute with these functions).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "catch.hpp"
#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/reward/compiler.hpp"
#include "sparserl/reward/cubin_info.hpp"
#include "sparserl/reward/output_check.hpp"
#include "test_support.hpp"

namespace rw = sparserl::reward;
namespace ds = sparserl::datasets;
using namespace sparserl::testing;

namespace {

// 3 x 3: row 0 = [2, 0, 1], row 1 empty, row 2 = [0, 4, 0].
ds::SparseMatrix small_matrix(double row2_value = 4.0) {
  return ds::SparseMatrix::from_triplets(3, 3, {{0, 0, 2.0}, {0, 2, 1.0}, {2, 1, row2_value}});
}

std::vector<std::uint8_t> f64_bytes(const std::vector<double>& v) {
  std::vector<std::uint8_t> out(v.size() * 8);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

}  // namespace

TEST_CASE("the reference sums each row in storage order with |A||x| beside it", "[reward][output_check]") {
  const ds::SparseMatrix a = small_matrix();
  std::vector<double> y, y_abs;
  rw::reference_output(a, std::vector<double>{1.0, -0.5, -3.0}, 1, y, y_abs);
  CHECK(y == std::vector<double>{2.0 - 3.0, 0.0, -2.0});
  CHECK(y_abs == std::vector<double>{5.0, 0.0, 2.0});
}

TEST_CASE("an output at the tolerance passes and the next double above it does not", "[reward][output_check]") {
  const ds::SparseMatrix a = small_matrix();
  const std::vector<double> x = {0.3, -0.7, 0.9};
  std::vector<double> ref, ref_abs;
  rw::reference_output(a, x, 1, ref, ref_abs);
  const double eps = std::numeric_limits<double>::epsilon();
  const double tol0 = 8.0 * eps * (std::sqrt(2.0) + 2.0) * ref_abs[0];
  // The largest output whose difference is within the tolerance, then one ulp above it.
  double inside = ref[0] + tol0;
  while (!(std::abs(inside - ref[0]) <= tol0)) inside = std::nextafter(inside, -1e300);
  while (std::abs(std::nextafter(inside, 1e300) - ref[0]) <= tol0) inside = std::nextafter(inside, 1e300);
  const double outside = std::nextafter(inside, 1e300);

  std::vector<double> got = ref;
  got[0] = inside;
  rw::OutputTally t = rw::tally_output(f64_bytes(got), ds::DType::f64, a, 1, ref, ref_abs);
  CHECK(t.wrong == 0);
  CHECK(t.max_ratio <= 1.0);
  CHECK(rw::output_verdict(t, 3).error == rw::ErrorKind::none);

  got[0] = outside;
  t = rw::tally_output(f64_bytes(got), ds::DType::f64, a, 1, ref, ref_abs);
  CHECK(t.wrong == 1);
  CHECK(t.first_wrong == 0);
  CHECK(t.worst_index == 0);
  CHECK(t.worst_got == outside);
  const rw::OutputVerdict v = rw::output_verdict(t, 3);
  CHECK(v.error == rw::ErrorKind::wrong_answer);
  CHECK(v.bad == 1);
  CHECK(v.first_bad_row == 0);
  CHECK_THAT(v.detail, has_substring("1 of 3 output elements are outside the tolerance, first in row 0; worst got "));
  CHECK_THAT(v.detail, has_substring("x the tolerance)"));
}

TEST_CASE("NaN is unwritten and judged before wrong values; the first row is the smallest",
          "[reward][output_check]") {
  const ds::SparseMatrix a = small_matrix();
  std::vector<double> ref, ref_abs;
  rw::reference_output(a, std::vector<double>{1.0, 1.0, 1.0}, 1, ref, ref_abs);
  std::vector<double> got = ref;
  got[0] = 100.0;  // wrong
  got[2] = std::numeric_limits<double>::quiet_NaN();
  const rw::OutputTally t = rw::tally_output(f64_bytes(got), ds::DType::f64, a, 1, ref, ref_abs);
  CHECK(t.unwritten == 1);
  CHECK(t.first_unwritten == 2);
  CHECK(t.wrong == 1);
  const rw::OutputVerdict v = rw::output_verdict(t, 3);
  CHECK(v.error == rw::ErrorKind::unwritten_output);
  CHECK(v.detail == "1 of 3 output elements were never written (still NaN), first in row 2");
}

TEST_CASE("rows the dtype cannot represent are counted and not judged", "[reward][output_check]") {
  const ds::SparseMatrix a = small_matrix(1e39);  // above FLT_MAX: no right f32 answer in row 2
  std::vector<double> ref, ref_abs;
  rw::reference_output(a, std::vector<double>(6, 1.0), 2, ref, ref_abs);  // k = 2: X is 3 x 2
  std::vector<float> got(6, std::numeric_limits<float>::quiet_NaN());
  for (int e = 0; e < 4; ++e) got[static_cast<std::size_t>(e)] = static_cast<float>(ref[static_cast<std::size_t>(e)]);
  std::vector<std::uint8_t> bytes(got.size() * 4);
  std::memcpy(bytes.data(), got.data(), bytes.size());
  const rw::OutputTally t = rw::tally_output(bytes, ds::DType::f32, a, 2, ref, ref_abs);
  CHECK(t.unchecked == 2);
  CHECK(t.unwritten == 0);
  CHECK(rw::output_verdict(t, 6).error == rw::ErrorKind::none);
}

TEST_CASE("merging tallies in any order gives the first of the largest ratio", "[reward][output_check]") {
  rw::OutputTally a, b, c;
  a.wrong = 2; a.first_wrong = 7; a.max_ratio = 3.0; a.worst_index = 9; a.worst_got = 1; a.worst_ref = 2;
  b.wrong = 1; b.first_wrong = 4; b.max_ratio = 3.0; b.worst_index = 5; b.worst_got = 3; b.worst_ref = 4;
  c.unwritten = 1; c.first_unwritten = 11; c.max_ratio = 0.5; c.worst_index = 1;
  const rw::OutputTally abc = rw::merge(rw::merge(a, b), c);
  CHECK(abc == rw::merge(rw::merge(c, b), a));
  CHECK(abc == rw::merge(a, rw::merge(c, b)));
  CHECK(abc.wrong == 3);
  CHECK(abc.first_wrong == 4);
  CHECK(abc.first_unwritten == 11);
  CHECK(abc.worst_index == 5);
  CHECK(abc.worst_got == 3);
  CHECK(rw::merge(rw::OutputTally{}, rw::OutputTally{}) == rw::OutputTally{});
}

TEST_CASE("the device checks' source compiles for the A100 and the H100 with the kernels the worker launches",
          "[reward][output_check]") {
  for (const char* arch : {"sm_80", "sm_90"}) {
    INFO(arch);
    rw::CompileRequest request;
    request.source = std::string(rw::device_checks_source());
    request.arch = arch;
    request.options = rw::device_checks_options();
    request.name = "sparserl_device_checks.cu";
    const rw::CompileResult r = rw::compile(request);
    INFO(r.log);
    REQUIRE(r.ok);
    std::string error;
    const std::optional<rw::CubinInfo> info = rw::read_cubin_info(r.cubin, &error);
    INFO(error);
    REQUIRE(info.has_value());
    CHECK(info->global_bytes == 0);
    // Every kernel DeviceChecks::load() looks up, in the cubin itself; none with a stack frame: the
    // by-value tables (__grid_constant__) are read in place, not copied into local memory per thread.
    for (const char* kernel : {"sha256_regions", "guards_intact", "compare_f32", "compare_f64"}) {
      INFO(kernel);
      const auto found = std::find_if(info->kernels.begin(), info->kernels.end(),
                                      [&](const rw::CubinKernel& k) { return k.name == kernel; });
      REQUIRE(found != info->kernels.end());
      CHECK(found->frame_bytes == 0);
      CHECK(r.kernel(kernel) != nullptr);
    }
    CHECK(info->kernels.size() == 4);
    CHECK(r.global_bytes == 0);
  }
}
