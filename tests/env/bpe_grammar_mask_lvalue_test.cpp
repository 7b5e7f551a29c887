// The grammar mask over BPE tokens refuses what NVRTC refuses of lvalues and of declarations that
// would need an initializer, at the byte where it goes wrong, beside near forms it still takes: one
// section per rule of branch grammar-compile-9 (docs/bpe.md, "The compile stage of random
// programs"), aimed at the random-weight model's failures - an assignment to an operand that is no
// lvalue, sizeof's value, a cast to a reference, a `__shared__` const or reference, a functional
// cast's brace after a qualifier.
#include <string>

#include "bpe_grammar_mask_test_support.hpp"
#include "catch.hpp"

namespace {

using namespace sparserl::testing::bpe_mask;

}  // namespace

TEST_CASE("the BPE grammar mask refuses what NVRTC refuses of lvalues", "[env][bpe][mask]") {
  SECTION("no assignment to an operand that a binary operator or a value's prefix made") {
    // (NVRTC: "expression must be a modifiable lvalue" of `-i = 1`, `i + i = 1`, `(-cos(x)) = 1`,
    // `(int)i = 1`, `sizeof(i) &= 1`.) Refused at the byte after `=`: `==` may still come.
    CHECK(first_refused(kHead, "  int i = 0; -i = 1;") == 17);
    CHECK(first_refused(kHead, "  int i = 0; !i = 1;") == 17);
    CHECK(first_refused(kHead, "  int i = 0; i + i = 1;") == 20);
    CHECK(first_refused(kHead, "  int i = 0; (i < i) = 1;") == 22);
    CHECK(first_refused(kHead, "  int i = 0; (-i) = 1;") == 19);
    CHECK(first_refused(kHead, "  int i = 0; (-cos(1.0)) = 1;") == 26);
    CHECK(first_refused(kHead, "  int i = 0; (int)i = 1;") == 21);
    CHECK(first_refused(kHead, "  int i = 0; sizeof(i) &= 1;") == 24);
    CHECK(first_refused(kHead, "  int i = 0; i = sizeof i = 1;") == 27);
    // An lvalue's: a variable, an element, `*` or ++ / -- first (`*-p`,
    // `*reinterpret_cast<int*>(p)` stay lvalues), an assignment's or a comma's right side, a
    // reference cast, a group of these.
    CHECK(first_refused(kHead,
                        "  int i = 0; i = -i; i = i + 1 - -i; ++i = 1; *y = -*y; y[0] += 1;\n"
                        "  *reinterpret_cast<int*>(y) = 1; (i) = 1; (i, i) = 2; (i = 1 + 2) = 3;\n"
                        "  (i ? i : i) = 1; i = i = i + 1; (int&)i = 1; i > 0 ? i = 1 : i = 2;\n"
                        "  -i++;\n") == -1);
  }
  SECTION("a group after `&`, a prefix ++ / -- or a reference cast holds an lvalue") {
    // (NVRTC: "expression must be a modifiable lvalue" of `--(blockIdx.x)`, "bool type is not
    // allowed" of `--(N > i)`, "lvalue or a function designator" of `&(blockDim.x)`.)
    CHECK(first_refused(kHead, "  --(blockIdx.x);") == 5);
    CHECK(first_refused(kHead, "  int i = 0; --(N > i);") == 16);
    CHECK(first_refused(kHead, "  int* p = &(blockDim.x);") == 13);
    CHECK(first_refused(kHead, "  int i = 0; ++(i + 1);") == 19);  // `+` may be `++`
    CHECK(first_refused(kHead, "  int i = 0; i = (int&)(-i);") == 25);  // `-` may be `--`
    // No group nested in it: the rule would not judge it (`--((M)) ->`: "`->` applied to int").
    CHECK(first_refused(kHead, "  --((M)) ->x;") == 5);
    CHECK(first_refused(kHead, "  int i = 0; &((i));") == 15);
    CHECK(first_refused(kHead, "  int* p = &((38));") == 13);
    CHECK(first_refused(kHead,
                        "  int i = 0; ++(i); --(*y); int* p = &(i); ++(i = 2); &(i);\n"
                        "  ++(y[0]); (int&)(i) = 1; ++(++i);\n") == -1);
    // Nor a number where a variable may stand (NVRTC: "expression must be a modifiable lvalue" of
    // `--(1)`, "lvalue or a function designator" of `&(29.f)`); the completion path writes one.
    CHECK(first_refused(kHead, "  int i = 0; --(0);") == 16);
    CHECK(first_refused(kHead, "  int* p = &(29.f);") == 13);
  }
  SECTION("sizeof's value takes no ++ / --") {
    // (NVRTC: "expression must be a modifiable lvalue" of `sizeof(int)++`.)
    CHECK(first_refused(kHead, "  int i = 0; i = sizeof(int)++;") == 29);
    CHECK(first_refused(kHead, "  int i = 0; i = sizeof(i)--;") == 27);
    CHECK(first_refused(kHead, "  int i = 0; i = sizeof(i) + 1 - sizeof(int) * sizeof i;\n") == -1);
  }
  SECTION("a cast to a reference takes a variable or a group") {
    // (NVRTC: "expression must be an lvalue or xvalue" of `(int&)1`, `(int& volatile)M`.)
    CHECK(first_refused(kHead, "  int i = 0; i = (int&)1;") == 23);
    CHECK(first_refused(kHead, "  int i = 0; i = (int&)M;") == 23);
    CHECK(first_refused(kHead, "  int i = 0; i = (int& volatile)M;") == 32);
    CHECK(first_refused(kHead,
                        "  int i = 0; i = (int&)i + (int&)(i) + (int&)row_ptr[0] + (const int&)i;\n"
                        "  i = (int)M + sizeof(int&);\n") == -1);
  }
}

TEST_CASE("the BPE grammar mask refuses declarations that would need an initializer",
          "[env][bpe][mask]") {
  SECTION("a block's declaration has no `,` before its first name") {
    // (NVRTC: "expected an identifier" of `char, M;`.)
    CHECK(first_refused(kHead, "  char, M;") == 6);
    CHECK(first_refused(kHead, "  int a = 1, b;\n  for (int i = 0, j = 1; i < j; ++i) {}\n") == -1);
  }
  SECTION("a __shared__ const takes no name, a __shared__ variable no `&`") {
    // (NVRTC: "const variable \"v\" requires an initializer" of `__shared__ const int v;`; a
    // `__shared__` variable takes none. A reference needs one too: `__shared__ int& r`.)
    CHECK(first_refused(kHead, "  __shared__ const int v;") == 24);  // `v` may start value_t
    CHECK(first_refused(kHead, "  __shared__ const int w[4];") == 23);
    CHECK(first_refused(kHead, "  __shared__ int& r = M;") == 16);
    CHECK(first_refused(kHead, "  int __shared__ const& r;") == 22);
    CHECK(first_refused(kHead,
                        "  __shared__ int a, b[4];\n  __shared__ const value_t* p;\n"
                        "  extern __shared__ const int s[];\n  const int c = 1;\n"
                        "  const int& r = a;\n") == -1);
  }
  SECTION("a block's qualifiers take a type before the name, `;` or `,`") {
    // (NVRTC: "attribute \"__shared__\" does not apply here" of `__shared__;`, "a storage class
    // may not be specified here" of `extern __shared__;`, "explicit type is missing" of `const
    // v = 1;`.)
    CHECK(first_refused(kHead, "  __shared__;") == 12);
    CHECK(first_refused(kHead, "  extern __shared__;") == 19);
    CHECK(first_refused(kHead, "  const volatile v = 1;") == 18);  // `v`: value_t
    CHECK(first_refused(kHead, "  for (const;;) {}") == 12);
    CHECK(first_refused(kHead,
                        "  __shared__ int a;\n  extern __shared__ float s[];\n"
                        "  const volatile int v = 1;\n  for (const int i = 0;;) {}\n") == -1);
  }
  SECTION("no const local array, no reference to void") {
    // (NVRTC: "const variable \"i\" requires an initializer" of `const long i[N];` - no local
    // array takes an initializer here; "reference to void is not allowed" of `void &r {}`.)
    CHECK(first_refused(kHead, "  const long i[N];") == 14);
    CHECK(first_refused(kHead, "  void &r {};") == 7);
    CHECK(first_refused(kHead,
                        "  const int* p[4];\n  int* const q = 0;\n  long a[N];\n  void* v = 0;\n"
                        "  const long c = 1;\n") == -1);
  }
  SECTION("no functional cast's brace after a specifier or qualifier, nor void's") {
    // (NVRTC: "expected an identifier" of `const long {`, `int const {`, `__shared__ long {`;
    // "list-initialization of an object type \"void\" is not allowed" of `void {`.)
    CHECK(first_refused(kHead, "  const long {") == 13);
    CHECK(first_refused(kHead, "  int const {") == 12);
    CHECK(first_refused(kHead, "  __shared__ long {") == 18);
    CHECK(first_refused(kHead, "  void {") == 7);
    CHECK(first_refused(kHead, "  long{1};\n  const int c = long{1} + int{2};\n") == -1);
  }
}

TEST_CASE(
    "the BPE grammar mask refuses a declared array's operators, a kernel's name, a pointer "
    "cast where a value is due",
    "[env][bpe][mask]") {
  SECTION("after a declarator's bound the declarator goes on") {
    // (NVRTC: "expression must be a modifiable lvalue" of `long i[N] --;`, `expected a ";"` of
    // `int a[4] + 1;`.)
    CHECK(first_refused(kHead, "  long i[N] --;") == 12);
    CHECK(first_refused(kHead, "  int a[4] + 1;") == 11);
    CHECK(first_refused(kHead, "  __shared__ float s[4] = {};") == 24);
    CHECK(first_refused(kHead, "  short a[N, M];") == 11);  // a bound holds no comma
    // No bound of `false` (NVRTC: "the size of an array must be greater than zero"); no word
    // of a bound starts with `f` (no false, float, floor, ...: no bool, cast or builtin there).
    CHECK(first_refused(kHead, "  dim3 d[false];") == 9);
    CHECK(first_refused(kHead, "  int a[fals") == 8);
    CHECK(first_refused(kHead,
                        "  int a[4], b[2][M], c;\n  __shared__ float s[32][33];\n"
                        "  a[0] = b[1][0] + 1;\n  a[1]++;\n  s[0][1] = 2;\n  int c2[(1, 2)];\n"
                        "  int c3[2 + 1]; c3[false] = 1; bool t = false;\n") ==
          -1);
  }
  SECTION("no launched kernel's name in a function's code") {
    // (NVRTC: "operand types are incompatible" of `&spmv >= true`, "expression must have class
    // type" of `spmv.z`: a function is no operand.)
    // (Refused where no other name goes on: `s` after `&`, `sp` at a statement - sqrt, sizeof.)
    CHECK(first_refused(kHead, "  int i = &spmv >= 1;") == 12);
    CHECK(first_refused(kHead, "  spmv.z;") == 3);
    CHECK(first_refused(kHead, "  int spmv2 = 1;\n  spmv2++;\n") == -1);  // another name
  }
  SECTION("no `.` or `->` after a scalar") {
    // (NVRTC: "expression must have class type" of `i.x`, `s.w` with s an unsigned, `*p.x`;
    // "expression must have pointer-to-class type" of `x->x` with x a `const value_t*`.)
    CHECK(first_refused(kHead, "  int i = 0; int j = i.x;") == 22);
    CHECK(first_refused(kHead, "  volatile unsigned s; int j = s.w;") == 32);
    CHECK(first_refused(kHead, "  int j = x->x;") == 12);  // `x-` a subtraction
    CHECK(first_refused(kHead, "  float4* p; int j = *p.x;") == 23);
    CHECK(first_refused(kHead, "  int j = x[0].x;") == 14);
    CHECK(first_refused(
              kHead,
              "  float4 f; float4* p; f.x = 1; p->y = 2; p[0].z = p[1].w + threadIdx.x;\n") == -1);
  }
  SECTION("no cast to a pointer right where a value is due") {
    // (NVRTC: "expression must have arithmetic or unscoped enum type" of `i * (char**)p`.)
    CHECK(first_refused(kHead, "  int i = 2 * (char**)y;") == 19);
    CHECK(first_refused(kHead, "  bool b = 1 < (int*)y;") == 19);
    CHECK(first_refused(kHead,
                        "  int i = 2 * (int)M + 2 * ((int*)y)[0] + (int)(2 < (long)M);\n"
                        "  int* p = (int*)y;\n") == -1);
  }
}
