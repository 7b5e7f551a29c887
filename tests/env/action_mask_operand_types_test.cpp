// The syntax mask's rules of operand types, case by case: a pointer's offset (the operand after
// `p +` / `p -`) is no floating value - each refused where NVRTC would refuse it, and the near
// forms the design space writes accepted. (The mask's episode-level properties are
// action_mask_test.cpp's.)
#include <string>

#include "catch.hpp"
#include "env_test_support.hpp"

namespace {

using sparserl::env::fixtures::first_refused;

}  // namespace

TEST_CASE("a pointer's offset is no floating value", "[env][mask]") {
  // (NVRTC: "expression must have integral or unscoped enum type" of `p + 1.5`, `p - x` with x a
  // float, `p + sqrtf(x)`.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  const std::string f = "__device__ void f(float* p, float x) { float* q = ";
  CHECK(first_refused(head + f + "p + 1.5; }\n") == ".");
  CHECK(first_refused(head + f + "p - x; }\n") == "v3");
  CHECK(first_refused(head + f + "p++ + -x; }\n") == "v3");
  CHECK(first_refused(head + f + "p + sqrtf(x); }\n") == "sqrtf");
  // (An integer offset, a pointer's difference, a floating sum, a cast's group are accepted.)
  CHECK(first_refused(head + f + "p + 1; int d = q - p; float y = x + 1.5; q = p + -1; q = p + "
                                 "(int)x; q = p + d * 2; y = *p + 1.5 + p[0]; }\n") == "");
}
