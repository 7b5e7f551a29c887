// The grammar mask over BPE tokens refuses what NVRTC refuses of random walks' programs, at the
// byte where it goes wrong, beside programs the corpus writes that it takes whole: one section per
// rule of the compile-stage work (docs/bpe.md, "The compile stage of random programs") - keywords
// the grammar does not model, operands and operators, builtins' calls and members, preprocessor
// lines' expressions, statements and blocks, casts, lvalues and pointers, array bounds, types.
#include <string>

#include "bpe_grammar_mask_test_support.hpp"
#include "catch.hpp"

namespace {

using namespace sparserl::testing::bpe_mask;

}  // namespace

TEST_CASE("the BPE grammar mask refuses what NVRTC refuses where it goes wrong",
          "[env][bpe][mask]") {
  SECTION("keywords the grammar does not model") {
    // Refused at the first byte no allowed word or name starts with: `str`, `sw`, `thi` (`th`
    // may be threadIdx), `de`, `t` after `.` (a member: x y z w).
    CHECK(first_refused(kHead, "  struct s;") == 4);
    CHECK(first_refused(kHead, "  switch (M) {") == 3);
    CHECK(first_refused(kHead, "  int i = this;") == 12);
    CHECK(first_refused(kHead, "  if (defined(M)) {}") == 7);
    CHECK(first_refused(kHead, "  float4 i; i.template") == 14);  // (an int takes no `.`)
    CHECK(first_refused(kHead, "  typedef int T;") == 3);
    CHECK(first_refused(kHead, "#define A typedef\n") == 11);  // `ty`: no known name either
    // What kernels write: loops, branches, casts, `defined` on an #if line.
    CHECK(first_refused(kHead,
                        "  for (int i = 0; i < 4; ++i) { if (i > 2) break; else continue; }\n"
                        "  bool b = static_cast<long long>(M) > 0 && true;\n"
                        "#if defined(M)\n#endif\n") == -1);
  }
  SECTION("operands and operators alternate") {
    CHECK(first_refused(kHead, "  y[0] = x[0] + ;") == 16);  // an operand is due
    CHECK(first_refused(kHead, "  y[0] = * / 2;") == 11);
    CHECK(first_refused(kHead, "  int i = 2 3;") == 12);  // no operand after an operand
    CHECK(first_refused(kHead, "  int i = M M;") == 12);
    CHECK(first_refused(kHead, "  if M") == 5);  // `(` after if
    CHECK(first_refused(kHead, "  while (") == -1);
    CHECK(first_refused(kHead, "  while ()") == 9);  // ... and a condition
    CHECK(first_refused(kHead,
                        "  int i = (1) + -2 * !0 - ~1, j = i++ + ++i;\n"
                        "  if (M > 0 && i <= 2) y[0] = x[i] * 0.5f + (value_t)1 + value_t(2);\n"
                        "  int k = static_cast<int>(-x[0]) ? 1 : 2;\n") == -1);
  }
  SECTION("builtin functions are called, threadIdx & co name a member, a block's names no call") {
    CHECK(first_refused(kHead, "  int i = sqrtf;") == 15);
    CHECK(first_refused(kHead, "  int i = threadIdx;") == 19);
    CHECK(first_refused(kHead, "  int i = 0; i(") == 14);
    CHECK(first_refused(kHead, "  int i = threadIdx.x + sqrtf(2.0f) + min(1, 2) + warpSize;\n") ==
          -1);
  }
  SECTION("a preprocessor line's body is an expression of known names") {
    CHECK(first_refused(kHead, "#define A 1 +\n") == 13);
    // A new name; B starts no csr constant (BSR_C & co are bsr's, refused in a #define's body).
    CHECK(first_refused(kHead, "#define A B\n") == 10);
    CHECK(first_refused(kHead, "#if M(") == 5);          // no call on #if
    CHECK(first_refused(kHead, "#if M = 1") == 7);       // nor an assignment
    CHECK(first_refused(kHead,
                        "#define W (M > 0 ? NNZ / M : 0)\n#define F(a) (a + W)\n#define E()\n"
                        "#if K % 2 == 0 && defined(W)\n#endif\n  y[0] = W;\n") == -1);
    CHECK(first_refused(kHead, "#define F(a) (a + 1)\n  y[0] = F(2);\n") == 30);  // code names no F
  }
  SECTION("statements end with `;`, for statements have their clauses, blocks stand alone") {
    CHECK(first_refused(kHead, "  int i = 0 }") == 12);                   // `;` first
    CHECK(first_refused(kHead, "  int i = 0\n#pragma unroll\n}") == 27);  // also after a line
    CHECK(first_refused(kHead, "  y[0 ;") == 6);                          // no `;` inside brackets
    CHECK(first_refused(kHead, "  for (int i = 0; i < 4)") == 23);
    CHECK(first_refused(kHead, "  int i = (int j") == 15);   // no declaration in a group
    CHECK(first_refused(kHead, "  int i = sqrtf({") == 16);  // nor a block in a call
    CHECK(first_refused(kHead,
                        "  { }\n  if (M) { y[0] = 1; } else { int i = (int)x[0]; }\n"
                        "  for (;;) break;\n  for (int i = 0, j = 1; i < j; ++i) {\n"
                        "#pragma unroll\n  }\n") == -1);
  }
  SECTION("casts, builtins' arguments and members, launch bounds") {
    CHECK(first_refused(kHead, "  int i = static_cast(1);") == 21);
    CHECK(first_refused(kHead, "  int i = static_cast<int, long>(1);") == 25);
    CHECK(first_refused(kHead, "  int i = static_cast<int>1;") == 26);
    CHECK(first_refused(kHead, "  int i = threadIdx.w;") == 20);
    CHECK(first_refused(kHead, "  int i = threadIdx->x;") == 19);
    CHECK(first_refused(kHead, "  int i = sqrtf();") == 16);
    CHECK(first_refused(kHead, "  y[0] = sqrtf(void") == 16);  // `vo`: nor volatile
    CHECK(first_refused(kHead, "  uint i;") == 6);
    CHECK(first_refused(kHead, "#if value_t\n") == 7);  // `valu`: val is a name
    CHECK(first_refused(kHead,
                        "  __syncthreads();\n  int i = static_cast<const int>(blockIdx.x) + "
                        "reinterpret_cast<const int4*>(row_ptr)[0].w;\n") == -1);
    const std::string head =
        "//@format csr\n//@launch k grid=K block=128\n#define B 128\n"
        "extern \"C\" __global__ void __launch_bounds__(";
    CHECK(first_refused(head, "threadIdx") == 0);  // no variable: a constant expression
    CHECK(first_refused(head, "B * 2) k(") == -1);
    CHECK(first_refused(head, "B < 2") == 2);  // arithmetic alone
    CHECK(first_refused(head, "1.5") == 1);    // an integer
    CHECK(first_refused(head, "(B, 2") == 2);  // `,` between its arguments alone
    CHECK(first_refused(head, "B, 2) k(") == -1);
  }
  SECTION("no function declared in a function, defined names a name") {
    CHECK(first_refused(kHead, "  int f();") == 7);
    CHECK(first_refused(kHead, "  int i = (1)(2);") == 13);       // a group is no function
    CHECK(first_refused(kHead, "  int i = sqrtf(1)(2);") == 18);  // nor is a call's value
    CHECK(first_refused(kHead, "  if (M) (y)[0] = *(y + 1);\n  (y + 1)[0] = 2;\n") == -1);
    CHECK(first_refused(kHead, "#if defined 5") == 12);
    CHECK(first_refused(kHead, "#if defined nullptr") == 12);
    CHECK(first_refused(kHead, "#if defined M && defined(K)\n#endif\n") == -1);
  }
  SECTION("assignments to variables and elements, * of pointers, members of variables") {
    // (`=` is refused at the blank after it: it might have grown into `==`.)
    CHECK(first_refused(kHead, "  M = 1;") == 5);                  // a constant
    CHECK(first_refused(kHead, "  x[0] = 1;") == 8);               // an element of a const pointer
    CHECK(first_refused(kHead, "  const int i = 0; i++;") == 21);  // a const variable
    CHECK(first_refused(kHead, "  int i = 0; y[*i] = 1;") == 16);  // * takes a pointer
    CHECK(first_refused(kHead, "  int i = 0; i[0] = 1;") == 14);   // [ ] too
    CHECK(first_refused(kHead, "  y[0] = M.x;") == 10);            // no member of a constant
    CHECK(first_refused(kHead,
                        "  int i = 0; i = i + *y + y[0];\n  y[i]++;\n  *y = 1;\n"
                        "  const float4 v = *reinterpret_cast<const float4*>(x);\n"
                        "  y[0] += v.x + x[0];\n") == -1);
  }
  SECTION("a device function's parameters are declarations") {
    const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
    CHECK(first_refused(head, "__device__ int f(M") == 17);
    CHECK(first_refused(head, "__device__ int f(int a, )") == 24);
    CHECK(first_refused(head, "__device__ int f(int (") == 21);
    CHECK(first_refused(head, "__device__ int f(void") == 18);
    CHECK(first_refused(head, "__device__ int f(static int a)") == 18);
    CHECK(first_refused(head, "__device__ int f(int a = 1)") == 23);
    CHECK(first_refused(head,
                        "__device__ int f() { return 0; }\n"
                        "__device__ value_t g(const value_t* __restrict__ p, int, long long n) {\n"
                        "  return p[n];\n}\n") == -1);
  }
  SECTION("casts take an operand, __restrict__ a pointer, <cstdint> names none") {
    CHECK(first_refused(kHead, "  int i = (int);") == 15);
    CHECK(first_refused(kHead, "  int i = sizeof;") == 16);
    // `,`: a declarator, no second declaration (nor an operand: `long` ends at its space).
    CHECK(first_refused(kHead, "  int i = 1, long j;") == 17);
    CHECK(first_refused(kHead, "  __restrict__ int i;") == 6);  // `__res`: no pointer before
    CHECK(first_refused(kHead, "  uint8_t i;") == 6);           // `uint8` (uint4 is CUDA's)
    CHECK(first_refused(kHead, "  int i = 1, j = (int)x[0] + sizeof(value_t) + sizeof i;\n") == -1);
  }
  SECTION("a launched kernel is declared outside #if") {
    const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
    CHECK(first_refused(head, "#if M\nextern") == 6);
    CHECK(first_refused(head, "#if M\n#endif\nextern \"C\" __global__ void k(") == -1);
  }
  SECTION("a template declares its parameters") {
    const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
    CHECK(first_refused(head, "template <>") == 10);
    CHECK(first_refused(head, "template <int G, >") == 17);
    CHECK(first_refused(head, "template <int G, int H>\n__device__ int f() { return G + H; }\n") ==
          -1);
  }
}

// Continued (the case above at its size limit): statements and directives in their places.
TEST_CASE("the BPE grammar mask refuses what NVRTC refuses where it goes wrong, continued",
          "[env][bpe][mask]") {
  SECTION("continue and break only in a loop's body") {
    // (NVRTC: "a continue statement may only be used within a loop"; no switch, so break too.)
    CHECK(first_refused(kHead, "  continue;") == 5);  // `cont`: const goes no further
    CHECK(first_refused(kHead, "  if (M) break;") == 10);
    CHECK(first_refused(kHead, "  for (;;) { }\n  break;") == 18);  // after the loop's body
    CHECK(first_refused(kHead, "  for (;;) y[0] = 1;\n  continue;") == 26);
    CHECK(first_refused(kHead,
                        "  for (int i = 0; i < 4; ++i) { if (i > 2) { break; } continue; }\n"
                        "  for (;;) if (M) continue;\n  while (M) break;\n"
                        "  while (M) { for (int i = 0; i < 2; ++i) y[i] = 0; break; }\n") == -1);
  }
  SECTION("no #else or #elif after an #if's #else") {
    // (NVRTC: "directive is not allowed -- an #else has already appeared".)
    CHECK(first_refused(kHead, "#if M\n#else\n#else") == 14);  // `#el`: elif too
    CHECK(first_refused(kHead, "#ifdef M\n#else\n#elif") == 17);
    CHECK(first_refused(kHead, "#if M\n#else\n#if K\n#else\n#endif\n#else") == 33);
    CHECK(first_refused(kHead,
                        "#if M\n#elif K\n#else\n#if K\n#elif M\n#else\n#endif\n#endif\n"
                        "#if M\n#else\n#endif\n#ifdef K\n#else\n#endif\n") == -1);
  }
  SECTION("a conditional operator's `?` takes its `:` before the expression closes") {
    // (NVRTC: `expected a ":"`; a `:` with no `?` open: `expected a ";"`.)
    CHECK(first_refused(kHead, "  int i = M ? 1;") == 15);
    CHECK(first_refused(kHead, "  y[M ? 1] = 0;") == 9);
    CHECK(first_refused(kHead, "  y[0] = sqrtf(M ? 1, 2);") == 20);
    CHECK(first_refused(kHead, "  int i = M : 1;") == 12);
    CHECK(first_refused(kHead, "  int i = M ? 1 : 2 : 3;") == 20);
    CHECK(first_refused(kHead,
                        "  int i = M > 0 ? (K ? 1 : 2) : M ? 3 : 4, j = i ? y[i ? 0 : 1] : 0;\n"
                        "  y[0] = sqrtf(i ? 1.0f : 2.0f) + (j > 1 ? 1 : 0);\n") == -1);
  }
}

// Continued again (the case above at its size limit): preprocessor lines, declarations, operands.
TEST_CASE("the BPE grammar mask refuses what NVRTC refuses where it goes wrong, continued again",
          "[env][bpe][mask]") {
  SECTION("on #if lines `defined ( NAME )` and a `?` with its `:`") {
    // (NVRTC: `expected a ")"` after `defined(M %`, `expected a ":"` at a line's end.)
    CHECK(first_refused(kHead, "#if defined(M % 2\n") == 14);
    CHECK(first_refused(kHead, "#if defined(M\n") == 13);
    CHECK(first_refused(kHead, "#if defined\n") == 11);
    CHECK(first_refused(kHead, "#if defined((M))\n") == 12);
    CHECK(first_refused(kHead, "#if M ? K\n") == 9);
    CHECK(first_refused(kHead, "#if (M ? K)\n") == 10);
    CHECK(first_refused(kHead, "#if M : K\n") == 6);
    CHECK(first_refused(kHead, "#define A (M > 0 ? 1\n") == 20);
    CHECK(first_refused(kHead,
                        "#if defined(M) && (defined K || M > 0 ? (K ? 1 : 2) : 0)\n#endif\n"
                        "#define A (M > 0 ? NNZ / M : 0)\n") == -1);
  }
  SECTION("a prefix ++ / -- takes a variable or a parenthesis") {
    // (NVRTC: "expression must be a modifiable lvalue" of `--M`, `++2`, `--int(1)`.)
    CHECK(first_refused(kHead, "  int i = ++2;") == 12);
    CHECK(first_refused(kHead, "  int i = --M;") == 12);
    CHECK(first_refused(kHead, "  y[0] = ++value_t(1);") == 14);  // `valu`: val is a pointer
    CHECK(first_refused(kHead, "  int i = 0; i = ----i;") == 19);
    CHECK(first_refused(kHead, "  int i = 0; ++i; --y[i]; ++(i); y[++i] = i-- + -(--i);\n") == -1);
  }
  SECTION("no member of a call's or a group's value") {
    // (NVRTC: "expression must have class type but it has type "int"".)
    CHECK(first_refused(kHead, "  int i = int(1).x;") == 16);
    CHECK(first_refused(kHead, "  int i = (M).x;") == 13);
    CHECK(first_refused(kHead, "  if (M).x") == 9);  // `.` may start `.5`
    CHECK(first_refused(kHead,
                        "  float4 v = reinterpret_cast<const float4*>(x)[0];\n"
                        "  y[0] = v.x + reinterpret_cast<const float4*>(x)->y + threadIdx.x;\n") ==
          -1);
  }
  SECTION("no division by what may be 0 on #if lines, none in __launch_bounds__") {
    // (NVRTC: "division by zero" - an unknown name on #if is 0, EMPTY_ROWS is on some matrix.)
    CHECK(first_refused(kHead, "#if M / EMPTY_ROWS\n") == 8);
    CHECK(first_refused(kHead, "#if M % 0\n") == 8);
    CHECK(first_refused(kHead, "#if M / warpSize\n") == 8);
    CHECK(first_refused(kHead, "#if M / (K)\n") == 8);
    CHECK(first_refused(kHead, "#define C 4\n#if M % C == 0 && K / 2 > 1 && M / K\n#endif\n") ==
          -1);
    const std::string head =
        "//@format csr\n//@launch k grid=K block=128\n#define B 128\n"
        "extern \"C\" __global__ void __launch_bounds__(";
    CHECK(first_refused(head, "B / 2") == 2);
    CHECK(first_refused(head, "B * 2 - 1) k(") == -1);
    CHECK(first_refused(head, "B, 2, 1) k(") == 4);  // at most two arguments
    CHECK(first_refused(head, "B, (2)) k(") == -1);
  }
  SECTION("extern in a function: where a statement starts, then __shared__") {
    // (NVRTC: a host variable at namespace scope of `extern int v;`, "a storage class may not be
    // specified here" of `const extern`.)
    CHECK(first_refused(kHead, "  extern int v;") == 9);
    CHECK(first_refused(kHead, "  int i = 0; const extern") == 19);
    CHECK(first_refused(kHead, "  y[0] = (extern") == 12);  // `ext`: exp goes no further
    CHECK(first_refused(kHead, "  extern __shared__ value_t s[];\n  s[0] = 1;\n") == -1);
  }
  SECTION("an #if group keeps the code's brackets as they were at its #if") {
    // (NVRTC: `expected a ")"` after an #endif whose dropped branch held the `)`.)
    CHECK(first_refused(kHead, "  int i = (1\n#if M\n)") == 19);
    CHECK(first_refused(kHead, "#if M\n  y[0] = (1\n#endif") == 19);  // `#e`: #else, #elif too
    CHECK(first_refused(kHead, "#if M\n  {\n#else") == 11);
    CHECK(first_refused(kHead,
                        "  int i = 0;\n#if M\n  i = (1 + 2);\n#elif K\n  { i = 1; }\n#else\n"
                        "  i = 2;\n#endif\n  y[0] = i\n#if M\n  + 1\n#endif\n  ;\n") == -1);
  }
  SECTION("`>` after an operand, a cast's type or a template's parameter") {
    // (NVRTC: `expected a ";"` of `long v >`, `expected an identifier` of `double >`.)
    CHECK(first_refused(kHead, "  long v >") == 9);
    CHECK(first_refused(kHead, "  int i = (float >") == 17);
    CHECK(first_refused(kHead, "  double >") == 9);
    CHECK(first_refused(
              kHead, "  int i = M > 1 && reinterpret_cast<const int*>(row_ptr)[0] >= 0;\n") == -1);
    CHECK(first_refused("//@format csr\n//@launch k grid=K block=32\n",
                        "template <int G, int H>\n__device__ int f() { return G > H; }\n") == -1);
  }
  SECTION("a subscript holds an expression") {
    // (NVRTC: "expected an expression" of `y[]`, `y<::>` - a digraph's `]`.)
    CHECK(first_refused(kHead, "  y[] = 1;") == 4);
    CHECK(first_refused(kHead, "  int i = y[:>;") == 12);  // `:>` is `]`
    CHECK(first_refused(kHead, "  extern __shared__ value_t s[];\n  s[0] = y[0];\n") == -1);
  }
  SECTION("integers on #if lines") {
    // (NVRTC: "expression must have integral or enum type" of `#if M > .5`.)
    CHECK(first_refused(kHead, "#if M > .5\n") == 8);
    CHECK(first_refused(kHead, "#if M > 6.\n") == 9);
    CHECK(first_refused(kHead, "#if M > 1e3\n") == 9);
    CHECK(first_refused(kHead, "#if M > 0x1f && K < 10u\n#endif\n#define A 1.5f\n") == -1);
  }
  SECTION("no nullptr") {
    // (NVRTC: "expression must have arithmetic or unscoped enum type" of `nullptr / 2`.)
    CHECK(first_refused(kHead, "  int i = nullptr / 2;") == 10);  // `n`: no name starts so
    CHECK(first_refused(kHead, "  int i = NNZ / 2;\n") == -1);
  }
  SECTION("after a type or a qualifier a name is declared where a declaration stands") {
    // (NVRTC: `expected a ")"` of `(int i`, "explicit type is missing" of `const y`.)
    CHECK(first_refused(kHead, "  int i = 0; y[0] = (int i") == 25);
    CHECK(first_refused(kHead, "  const y") == 8);
    CHECK(first_refused(kHead, "  int i = 0; i = sizeof(const int* i") == 35);
    CHECK(first_refused(kHead,
                        "  int i = (int)M + sizeof(int);\n  const int j = i;\n"
                        "  for (int k = 0; k < j; ++k) { value_t* const p = y; p[k] = 0; }\n") ==
          -1);
  }
  SECTION("#ifdef, #ifndef and #undef define no name") {
    // (NVRTC: "identifier is undefined" of a name #undef or #ifdef named and nothing defined.)
    CHECK(first_refused(kHead, "#undef A\n  y[0] = A;") == 18);
    CHECK(first_refused(kHead, "#define A 1\n#undef A\n  y[0] = A;") == 30);
    CHECK(first_refused(kHead, "#ifdef A\n#endif\n  y[0] = A;") == 25);
    CHECK(first_refused(kHead,
                        "#ifndef A\n#define A 2\n#endif\n  y[0] = A;\n#undef A\n  int A = 1;\n") ==
          -1);
  }
  SECTION("else right after an if's statement") {
    // (NVRTC: "expected a statement" of an `else` after anything else.)
    CHECK(first_refused(kHead, "  else") == 3);  // `el`: no word goes on so
    CHECK(first_refused(kHead, "  if (M) y[0] = 1;\n  y[0] = 2;\n  else") == 34);
    CHECK(first_refused(kHead, "  for (;;) { }\n  else") == 18);
    CHECK(first_refused(kHead,
                        "  if (M) y[0] = 1; else y[0] = 2;\n  if (M) { } else if (K) { y[0] = 1; }"
                        " else { }\n  if (M) for (;;) { } else while (K) { }\n"
                        "  if (M) if (K) y[0] = 1; else y[0] = 2;\n") == -1);
  }
  SECTION("no assignment to a call's value") {
    // (NVRTC: "expression must be a modifiable lvalue" of `int(M) = 1`, `min(1, 2)++`.)
    CHECK(first_refused(kHead, "  y[int(M) = 0] = 1;") == 12);  // at the blank: `==` may follow
    CHECK(first_refused(kHead, "  int i = min(1, 2)++;") == 20);
    CHECK(first_refused(
              kHead,
              "  *reinterpret_cast<value_t*>(y) = 1;\n  reinterpret_cast<value_t*>(y)[0] = 2;"
              "\n  *(y + 1) += min(1, 2);\n") == -1);
  }
  SECTION("a brace initializer ends its declarator; a functional cast's braces are a value") {
    // (NVRTC: `expected a ";"` after `int i {}` and a `}`, an operand or a second initializer.)
    CHECK(first_refused(kHead, "  int i {}\n}") == 11);
    CHECK(first_refused(kHead, "  int i {} + 1;") == 11);
    CHECK(first_refused(kHead, "  int i {} {") == 11);
    CHECK(first_refused(kHead, "  int i {0} M") == 12);
    CHECK(first_refused(kHead, "  int i {return") == 11);  // `ret`: expressions in the braces
    CHECK(first_refused(kHead, "  int i = value_t{} M;") == 20);  // a value: no operand after
    CHECK(first_refused(kHead,
                        "  int i {}, j{M + 1};\n  for (int k{0}; k < j; ++k) y[k] = value_t{} + "
                        "value_t{1};\n") == -1);
  }
}

// Types: what the grammar knows of a value's type (a declared name's, a type word's, a few
// builtins' results) against what NVRTC checks.
TEST_CASE("the BPE grammar mask refuses what NVRTC refuses of types", "[env][bpe][mask]") {
  SECTION("a __shared__ variable takes no initializer and is no dim3") {
    // (NVRTC: "initializer not allowed for __shared__ variable" of `__shared__ bool v {};`,
    // `__shared__ int v = 0;`, `__shared__ dim3 v;`.)
    CHECK(first_refused(kHead, "  __shared__ bool v {};") == 20);
    CHECK(first_refused(kHead, "  __shared__ int v = 0;") == 19);
    CHECK(first_refused(kHead, "  __shared__ dim3 v;") == 14);  // `d`: double
    CHECK(first_refused(kHead, "  dim3 __shared__ v;") == 17);  // where the word ends
    CHECK(first_refused(kHead, "  const int __shared__ v;") == 22);
    CHECK(first_refused(kHead,
                        "  __shared__ int a, b[4];\n  __shared__ const value_t* p;\n"
                        "  dim3 d;\n  const int c = 1;\n  int e{1};\n") == -1);
  }
  SECTION("a brace that initializes one scalar takes one value") {
    // (NVRTC: "too many initializer values" of `int{M, 1}`, `float f{1.5, 2}`.)
    CHECK(first_refused(kHead, "  int i = int{1, 2};") == 15);
    CHECK(first_refused(kHead, "  float f{1.5, 2};") == 13);
    CHECK(first_refused(kHead, "  value_t* p{y, y};") == 14);
    CHECK(first_refused(kHead, "  int j = value_t{M, 1};") == 19);
    CHECK(first_refused(kHead,
                        "  dim3 d{1, 2};\n  int i{1}, j = int{(1, 2)} + max(int{2}, 3);\n"
                        "  float f{};\n  value_t* p{y};\n") == -1);
  }
  SECTION("a cast's parenthesis holds its type alone") {
    // (NVRTC: `expected a ")"` of `(const char(`, `sizeof(size_t ,`, `(float *__shared__`.)
    CHECK(first_refused(kHead, "  y[0] = (const char(1));") == 20);
    CHECK(first_refused(kHead, "  int i = sizeof(size_t, 1);") == 23);
    CHECK(first_refused(kHead, "  int i = (int const short {}) + 1;") == 27);
    CHECK(first_refused(kHead, "  y[0] = (float *__shared__) 1;") == 19);  // `__s`
    CHECK(first_refused(kHead, "  y[0] = (static int) 1;") == 16);         // `static`: static_cast
    CHECK(first_refused(kHead,
                        "  int i = (const int)M + sizeof(const volatile unsigned long*) + (int)(M);"
                        "\n  y[0] = ((const value_t* __restrict__)x)[0] + (value_t)i;\n") == -1);
  }
  SECTION("% << & | ^ take integers, * / no pointer") {
    // (NVRTC: "expression must have integral or unscoped enum type" of `x[0] % 2`, `1 << 2.5`;
    // "arithmetic or unscoped enum type" of `x * 2` with x a pointer.)
    CHECK(first_refused(kHead, "  y[0] = x[0] % 2;") == 14);   // at the blank: `%>` is `}`
    CHECK(first_refused(kHead, "  int i = 1.5 << 2;") == 15);  // `<`: a comparison
    CHECK(first_refused(kHead, "  int i = 0; i = i % x[0];") == 21);
    CHECK(first_refused(kHead, "  int i = 0; i = i ^ 2.5;") == 22);
    CHECK(first_refused(kHead, "  int i = 0; i = i & value_t(1);") == 21);
    CHECK(first_refused(kHead, "  int i = ~x[0];") == 11);
    CHECK(first_refused(kHead, "  int i = x * 2;") == 12);
    CHECK(first_refused(kHead, "  int i = 0; i = (1.5 + i) % 2;") == 27);  // a floating group
    CHECK(first_refused(kHead, "  int i = (x[0]) << 1;") == 18);
    CHECK(first_refused(kHead, "  int i = (double)M % 2;") == 20);   // a floating cast's value
    CHECK(first_refused(kHead, "  int i = (float*)y << 1;") == 21);  // a pointer cast's (`<:`)
    CHECK(first_refused(kHead, "  int i = 5 % (double)M;") == 16);   // no (double4) cast either
    CHECK(first_refused(kHead, "  int i = 5 % (sin(1.));") == 17);
    CHECK(first_refused(kHead, "  return 1;") == 9);  // a kernel returns void
    CHECK(first_refused(kHead, "  int i = row_ptr / 2;") == 18);
    CHECK(
        first_refused(kHead,
                      "  int i = 1 % 2 << 3 & ~4;\n"
                      "  i = (int)x[0] % 2 + !x[1] % 2 + (int)(1.5f) % 2 + x[i] * 2 + i++ % 2;\n"
                      "  float f = 0.5f;\n  i = i % (int)f + sizeof f % 2 + -i % 3 + 5 % (i + 1);\n"
                      "  value_t* p = y + 1;\n  p[0] = p[1] * 2;\n") == -1);
  }
  SECTION("no pointer where a value is due, no < > <= >= after one") {
    // (NVRTC: "expression must have arithmetic or unscoped enum type" of `2 * x`, `-x`; "operand
    // types are incompatible" of `1 < row_ptr`, `row_ptr < 1`, `M == col_idx`.)
    CHECK(first_refused(kHead, "  y[0] = 2 * x;") == 14);
    CHECK(first_refused(kHead, "  int i = 1 < row_ptr;") == 21);
    CHECK(first_refused(kHead, "  int i = row_ptr < 1;") == 19);  // `<:` is `[`
    CHECK(first_refused(kHead, "  y[0] = -x;") == 11);
    CHECK(first_refused(kHead, "  int i = M == col_idx;") == 22);
    // ... nor after a floating value's `+` / `-` (`1.5 - y`: "arithmetic or unscoped enum type").
    CHECK(first_refused(kHead, "  y[0] = 1.5 - y;") == 16);
    CHECK(first_refused(kHead, "  y[0] = x[0] + y;") == 17);
    CHECK(first_refused(kHead, "  float f = 1; y[0] = f - x;") == 27);
    CHECK(first_refused(kHead,
                        "  float f = 1; y[0] = 1.5 - y[0] + x[1] - *x + f + x[f > 0];\n"
                        "  const value_t* p = x + 1 - 1;\n  int d = y - x + 1;\n") == -1);
    CHECK(first_refused(
              kHead,
              "  y[0] = 2 * x[0] + val[1] / x[2] - -x[0];\n  int i = row_ptr[1] < col_idx[0];"
              "\n  bool b = x == y;\n  const value_t* p = x + 1;\n  int d = y - x;\n"
              "  if (x != y && i < M) y[0] = M * *x;\n") == -1);
  }
  SECTION("no cast of a pointer to a floating type, of a floating value to a pointer") {
    // (NVRTC: "invalid type conversion" of `(float)x`, `(value_t*)f`, `(int*)1.5`.)
    CHECK(first_refused(kHead, "  y[0] = (float)x;") == 17);
    CHECK(first_refused(kHead, "  y[0] = (value_t)val + 1;") == 22);
    CHECK(first_refused(kHead, "  value_t f = 1; y = (value_t*)f;") == 32);
    CHECK(first_refused(kHead, "  value_t f = 1; y = (value_t* const)f;") == 38);
    CHECK(first_refused(kHead, "  y = (int*)1.5;") == 13);
    CHECK(first_refused(kHead, "  y = (value_t*)sqrtf(1.f);") == 17);  // `sq`: sqrt too
    CHECK(first_refused(kHead,
                        "  value_t f = (value_t)x[0] + (float)M + (double)-f + (float)*x;\n"
                        "  const value_t* p = (const value_t*)x + (int)f;\n"
                        "  const value_t& r = (value_t&)row_ptr[0];\n  const int& q = (int&)f;\n"
                        "  p = (value_t* const)y + (size_t)(int*)0;\n"
                        "  f = ((const value_t* __restrict__)x)[0] + (float)(x - y);\n") == -1);
  }
}

TEST_CASE("the BPE grammar mask refuses what NVRTC refuses of groups, statements and casts",
          "[env][bpe][mask]") {
  SECTION("no type right after the parenthesis of `*(`, `&(`, `++(`") {
    // (NVRTC: "expected an expression" of `*(float)`, `&(double) )`, `**(int),`; `*(int*)p` was
    // refused at p already.)
    CHECK(first_refused(kHead, "  y[0] = *(float);") == 11);  // (no builtin there: floor)
    CHECK(first_refused(kHead, "  y[0] = *(const value_t*)x;") == 13);  // `co`: col_idx, cos
    CHECK(first_refused(kHead, "  int i = 0; ++(unsigned)i;") == 16);
    CHECK(first_refused(kHead, "  int* p = &(int);") == 13);  // (isinf & co are no lvalues)
    CHECK(first_refused(kHead,
                        "  int i = *(row_ptr + 1) + *(col_idx) + sizeof(int) + (int)1.5;"
                        "\n  ++(i);\n  int* p = &(i);\n") == -1);
  }
  SECTION("after a condition's or a for statement's `)` a statement: no binary operator") {
    // (NVRTC: "expected an expression" of `if (M) = 1`, `while (M) [0]`; `*` `&` `-` `++` there
    // are unary: `if (M) *y = 1` was refused at its `=`.)
    CHECK(first_refused(kHead, "  if (M) = 1;") == 9);
    CHECK(first_refused(kHead, "  while (M) [0] = 1;") == 12);
    CHECK(first_refused(kHead, "  for (;;) % 2;") == 11);
    CHECK(first_refused(kHead, "  if (M) += 1;") == 10);  // `+=`: a unary `+` alone
    CHECK(first_refused(kHead,
                        "  if (M) *y = 1;\n  for (;;) -*y;\n  while (M) ++y[0];\n"
                        "  if (M) (*y)++;\n") == -1);
  }
  SECTION("no assignment or ++ / -- to a group whose value is no lvalue") {
    // (NVRTC: "expression must be a modifiable lvalue" of `(M)--`, `(warpSize) = 1`, `(i, 1) = 2`.)
    CHECK(first_refused(kHead, "  (M)--;") == 6);  // `(M)-` a subtraction
    CHECK(first_refused(kHead, "  int i = 0; (i + 1)++;") == 21);
    CHECK(first_refused(kHead, "  (warpSize) = 1;") == 14);  // at the blank: `==`
    CHECK(first_refused(kHead, "  (x[0]) = 1;") == 10);      // x points to const
    CHECK(first_refused(kHead, "  int i = 0; (i, 1) = 2;") == 21);
    CHECK(first_refused(kHead,
                        "  int i = 0; (i) = 1; (i)++; (i, i) = 2; (i = 2) = 3; (*y)++;\n"
                        "  (y[0]) += 1; (i ? i : i) = 1; ((i)) = 2; (i = 1 + 2) = 3;\n") == -1);
  }
  SECTION("a declarator's `*` / `&` in a block takes its name before `;` or `,`") {
    // (NVRTC: "expected an identifier" of `int *;`, `void* , p;`.)
    CHECK(first_refused(kHead, "  int *;") == 7);
    CHECK(first_refused(kHead, "  int*, b;") == 6);
    CHECK(first_refused(kHead, "  value_t* const;") == 16);
    CHECK(first_refused(kHead, "  for (int* ;;) {}") == 12);
    CHECK(first_refused(kHead,
                        "  int* p; const int& r = *p; for (int* q = 0;;) {}\n"
                        "  int i = sizeof(int*) + (long)(int*)0;\n") == -1);
  }
  SECTION("an array's bound takes integer numbers") {
    // (NVRTC: "expression must have integral or unscoped enum type" of `float a[1.5]`.)
    CHECK(first_refused(kHead, "  float a[1.5];") == 11);
    CHECK(first_refused(kHead, "  float a[6e8 / 2];") == 11);
    CHECK(first_refused(kHead, "  float a[2 * (1.5)];") == 16);
    // (No cast in a bound: NVRTC takes `(int)1.5` there, the mask does not.)
    CHECK(first_refused(kHead, "  float a[(int)1.5];") == 11);
    CHECK(first_refused(kHead,
                        "  float a[sizeof 2.5 + 0x1e + 2u], b[2];\n"
                        "  b[1] = 2.5;\n") == -1);
  }
  SECTION("an array declared in a block has a bound, but `extern __shared__`") {
    // (NVRTC: "incomplete type \"int []\" is not allowed" of `int a[];`, `bool b[] ++;`; a
    // local array takes no initializer here, so no bound is deduced.)
    CHECK(first_refused(kHead, "  int a[];") == 8);
    CHECK(first_refused(kHead, "  bool b[] ++;") == 9);
    CHECK(first_refused(kHead, "  long c[]--;") == 9);
    CHECK(first_refused(kHead, "  int d<::>, e;") == 9);  // `:>` is `]`
    CHECK(first_refused(kHead, "  __shared__ float s[];") == 21);
    CHECK(first_refused(kHead, "  for (int a[];;) {}") == 13);
    CHECK(first_refused(kHead,
                        "  int b[4], c[2][M];\n  extern __shared__ float s[];\n"
                        "  extern __shared__ int t<::>, u[];\n  b[0] = c[1][0];\n") == -1);
  }
  SECTION("reinterpret_cast to a floating or vector type takes a `*` or `&`") {
    // (NVRTC: "invalid type conversion" of `reinterpret_cast<float>(x[0])`.)
    CHECK(first_refused(kHead, "  y[0] = reinterpret_cast<float>(x[0]);") == 31);
    CHECK(first_refused(kHead, "  y[0] = reinterpret_cast<const value_t>(1);") == 39);
    CHECK(first_refused(kHead, "  y[0] = reinterpret_cast<value_t const>(1);") == 34);  // const
    CHECK(first_refused(kHead, "  int4 v = reinterpret_cast<int4>(y);") == 32);
    CHECK(first_refused(kHead,
                        "  y[0] = *reinterpret_cast<const float*>(x) + static_cast<float>(1) +\n"
                        "         reinterpret_cast<long>(x);\n"
                        "  const float& f = reinterpret_cast<float&>(y[0]);\n") == -1);
  }
  SECTION("no pointer right of a value's `-`") {
    // (NVRTC: "expression must have arithmetic or unscoped enum type" of `M - x`, `1 - y`.)
    CHECK(first_refused(kHead, "  int i = M - x;") == 15);
    CHECK(first_refused(kHead, "  int i = 0; i = threadIdx.z - x;") == 32);
    CHECK(first_refused(kHead, "  int i = 1 - y;") == 15);
    CHECK(
        first_refused(kHead,
                      "  const value_t* p = x;\n  int i = (p++ - x) + (3 + x - x) + (M - x[0]) +\n"
                      "      (x + M - x) + (x - M - x);\n") == -1);
  }
  SECTION("a cast where an integer operand is due is to no pointer") {
    // (NVRTC: "expression must have integral or unscoped enum type" of `i % (int*)y`.)
    CHECK(first_refused(kHead, "  int i = 0; i = i % (int*)y;") == 25);
    CHECK(first_refused(kHead, "  int i = 0; i = i ^ (long**)x;") == 26);
    CHECK(first_refused(kHead, "  int i = 0; i = ~(const int*)x;") == 28);
    CHECK(first_refused(kHead,
                        "  int i = 0; i = i % (int)x[0] + (i & (int&)y[0]) + (i | (2 * 3)) +\n"
                        "      (i << (int)(long)y) + (i % ((int*)y)[0]);\n") == -1);
  }
  SECTION("a shift count on an #if line is one digit") {
    // (NVRTC: "shift count is too large" of `#if M << NNZ` on a matrix of 64 nonzeros or more,
    // "shift count is negative" of `>> -1`.)
    CHECK(first_refused(kHead, "#if M << NNZ\n") == 9);
    CHECK(first_refused(kHead, "#if M >> -1\n") == 9);
    CHECK(first_refused(kHead, "#if M << 12\n") == 10);
    CHECK(first_refused(kHead, "#if M << (1)\n") == 9);
    CHECK(first_refused(kHead, "#if M << 5u && K >> 0\n#endif\n  int i = M << 40;\n") == -1);
  }
}

TEST_CASE("the BPE grammar mask refuses what NVRTC refuses of builtin calls", "[env][bpe][mask]") {
  SECTION("a builtin takes at most its arguments, a functional cast one") {
    // (NVRTC: "too many arguments in function call" of `sqrt(a, b)`, `expected a ")"` of
    // `int(1, 2)`.)
    CHECK(first_refused(kHead, "  y[0] = sqrt(x[0], 1);") == 18);
    CHECK(first_refused(kHead, "  int i = int(1, 2);") == 15);
    CHECK(first_refused(kHead, "  int i = min(1, 2, 3);") == 18);
    CHECK(first_refused(kHead, "  int i = __activemask(1);") == 23);
    CHECK(first_refused(kHead,
                        "  int i = min(1, max(2, 3)) + __shfl_down_sync(0xffffffffu, 1, 1, 32);\n"
                        "  y[0] = fma(x[0], 2, 1) + (value_t)(1, 2) + int(i);\n") == -1);
  }
  SECTION("a builtin takes its arguments at least") {
    // (NVRTC: "too few arguments in function call", "no instance of overloaded function" of
    // `max(1)`, `atomicAdd(y)`.)
    CHECK(first_refused(kHead, "  int i = max(1);") == 15);
    CHECK(first_refused(kHead, "  atomicAdd(y);") == 13);
    CHECK(first_refused(kHead, "  y[0] = fma(x[0], 2.f);") == 22);
    CHECK(first_refused(kHead, "  int i = __shfl_down_sync(0xffffffffu, 1);") == 41);
    CHECK(first_refused(kHead, "  atomicAdd(y, max(1, 2));\n  __syncwarp();\n") == -1);
  }
  SECTION("no subscript of a builtin's or a functional cast's value, no `->`") {
    // (NVRTC: "expression must have pointer-to-object type" of `value_t()[0]`, `__popc(1)[0]`;
    // "operator -> or ->* applied to \"float\" instead of to a pointer type" of `ceil(x[0])->`.)
    CHECK(first_refused(kHead, "  y[0] = value_t(1)[0];") == 19);
    CHECK(first_refused(kHead, "  int i = __popc(1)[0];") == 19);
    CHECK(first_refused(kHead, "  int i = ceil(x[0])->x;") == 21);  // `-` a subtraction
    CHECK(first_refused(kHead, "  int i = int()->x;") == 16);
    CHECK(first_refused(kHead, "  y[0] = reinterpret_cast<const value_t*>(x)[0] + (x + 1)[0];\n") ==
          -1);
  }
  SECTION("a device function's name is called") {
    // (NVRTC: "expression must have arithmetic or unscoped enum type" of `4 / f`, `f - 1`; a
    // function is no value. A template's parameter is one.)
    const std::string head =
        "//@format csr\n//@launch spmv grid=ceil_div(max(M, 1), 4) block=128\n"
        "__device__ int f(int a) { return a; }\n";
    CHECK(first_refused(head, "__device__ int g() { return 4 / f; }") == 33);
    CHECK(first_refused(head, "__device__ int g() { return f - 1; }") == 30);
    CHECK(first_refused(head, "__device__ int g() { return f; }") == 29);
    CHECK(first_refused(head,
                        "template <int G> __device__ int h(int a) { return a / G + G; }\n"
                        "__device__ int g() { return f(1) - h<2>(1); }\n") == -1);
  }
  SECTION("a floating overload's first argument is no integer, vector or bool") {
    // (NVRTC: "more than one instance of overloaded function" of `ceil(M)`, "no instance" of
    // `round(int2{})`, `pow(true, 2)`; a comparison makes a bool of its argument.)
    CHECK(first_refused(kHead, "  y[0] = ceil(M);") == 14);
    CHECK(first_refused(kHead, "  int i = 0; y[0] = sqrt(i);") == 25);
    CHECK(first_refused(kHead, "  y[0] = round(int(2));") == 15);
    CHECK(first_refused(kHead, "  y[0] = log(-threadIdx.x);") == 15);  // `t`: trunc
    CHECK(first_refused(kHead, "  y[0] = pow(!x[0], 2);") == 13);
    CHECK(first_refused(kHead, "  y[0] = sqrt(x[0] < 1);") == 20);   // `<`: `<<`
    CHECK(first_refused(kHead, "  y[0] = exp(col_idx[0]);") == 15);  // `co`: cos
    CHECK(first_refused(kHead,
                        "  int i = 0; float f = i;\n"
                        "  y[i] = sqrt(x[0]) + ceil(value_t(M) / 2) + pow(-x[1], 2) + log(f) +\n"
                        "         fmax(*x, i < 1) + sqrt(static_cast<float>(M)) + floor(f) +\n"
                        "         exp(float(threadIdx.x)) + sqrtf(M < 2) + ceil((x[0]));\n") == -1);
  }
  SECTION(
      "a floating overload's first argument starts with no integer literal, in a group neither") {
    // (NVRTC: "more than one instance of overloaded function" of `ceil(2)`, `pow(2, x)`,
    // `sqrt((M))`, `sqrt((int)x)`; the completion path writes `0.` where such a number is due.)
    CHECK(first_refused(kHead, "  y[0] = ceil(2);") == 15);
    CHECK(first_refused(kHead, "  y[0] = pow(2, x[0]);") == 14);
    CHECK(first_refused(kHead, "  y[0] = ceil(0x10);") == 15);
    CHECK(first_refused(kHead, "  y[0] = sqrt(-1u);") == 16);
    CHECK(first_refused(kHead, "  y[0] = sqrt((M));") == 15);
    CHECK(first_refused(kHead, "  y[0] = sqrt((int)x[0]);") == 15);
    CHECK(first_refused(
              kHead,
              "  y[0] = ceil(2.0) + sqrt(2.f * x[0]) + pow(2e3, 1) + sqrt((x[0])) +\n"
              "         sqrt((float)M) + floor(-.5) + exp(-(1.5 + M)) + sqrtf(2) + 2;\n") == -1);
  }
  SECTION("no subscript or `->` of a group of one value") {
    // (NVRTC: "expression must have pointer-to-object type" of `(M)[0]`, `(true)[0]`.)
    CHECK(first_refused(kHead, "  int i = (M)[0];") == 13);
    CHECK(first_refused(kHead, "  int i = (true)[0];") == 16);
    CHECK(first_refused(kHead, "  int i = (-1)[0];") == 14);
    CHECK(first_refused(kHead, "  int i = (threadIdx.x)->x;") == 24);  // `-` a subtraction
    CHECK(first_refused(kHead,
                        "  const value_t* p = x;\n  int i = (p++)[0] + (x + 1)[0] + ((y))[1] +\n"
                        "      (p)[2] + (M ? x : y)[0];\n") == -1);
  }
  SECTION("a floating overload's first argument is no pointer") {
    // (NVRTC: "no instance of overloaded function" of `ceil(x)`, `sqrt((float*)x)`.)
    CHECK(first_refused(kHead, "  y[0] = ceil(x);") == 15);
    CHECK(first_refused(kHead, "  y[0] = cos(y + 1);") == 15);
    CHECK(first_refused(kHead, "  y[0] = sqrt((float*)x);") == 20);
    CHECK(first_refused(kHead, "  y[0] = floor(-(const char**)x);") == 27);
    CHECK(first_refused(kHead,
                        "  y[0] = ceil(x[0]) + cos(*y) + sqrt(((const float*)x)[1]) +\n"
                        "         pow(x[0], 2) + fmax(x[1], y[0]) + sqrt((float)M);\n") == -1);
  }
  SECTION("a floating functional cast's or builtin's first argument is no lone pointer") {
    // (NVRTC: "invalid type conversion" of `double(x)`, "argument ... is incompatible" of
    // `sqrtf(y)`.)
    CHECK(first_refused(kHead, "  y[0] = value_t(x);") == 18);
    CHECK(first_refused(kHead, "  y[0] = sqrtf(y);") == 16);
    CHECK(first_refused(kHead, "  y[0] = fmaxf(y, 1);") == 16);
    CHECK(first_refused(kHead,
                        "  y[0] = value_t(x[0]) + double(x - y) + sqrtf(*x) + float(M) +\n"
                        "         value_t(x[1] > 0) + fmaxf(x[0], 1);\n") == -1);
  }
  SECTION("a load's or an atomic's pointer argument stays a pointer, in its groups too") {
    // (NVRTC: "no instance of overloaded function" of `atomicAdd((M), 1)`, `__ldcv(x && 1)`,
    // `atomicSub((x == y), 1)`.)
    CHECK(first_refused(kHead, "  atomicAdd((M), 1);") == 13);
    CHECK(first_refused(kHead, "  atomicAdd(((1)), 1);") == 14);
    CHECK(first_refused(kHead, "  y[0] = __ldcv(x && 1);") == 18);
    CHECK(first_refused(kHead, "  atomicAdd((y == y), 1);") == 16);
    CHECK(first_refused(kHead,
                        "  atomicAdd((y) + 1, x[0] > 0);\n  atomicAdd((int*)y, 1);\n"
                        "  y[0] = __ldg((x + 1) - 1) * 2 > 0;\n") == -1);
  }
  SECTION("a builtin of no result is a statement") {
    // (NVRTC: "expression must have arithmetic or unscoped enum type" of `__syncthreads() * 2`.)
    CHECK(first_refused(kHead, "  y[0] = __syncthreads();") == 22);       // `(`: __syncthreads_or
    CHECK(first_refused(kHead, "  int i = 1 + __threadfence();") == 16);  // `__t`: no value
    CHECK(first_refused(kHead, "  __syncthreads() + 1;") == 18);
    CHECK(first_refused(kHead, "  __syncwarp() y") == 15);
    CHECK(first_refused(kHead,
                        "  if (M) __threadfence();\n  __syncthreads();\n  __syncwarp(), y[0] = 1;\n"
                        "  for (__syncthreads();;) break;\n  int i = __syncthreads_count(1);\n") ==
          -1);
  }
  SECTION("no vector type's functional cast in an expression") {
    // (NVRTC: "no operator ... matches these operands" of `dim3() - 1`, "no suitable constructor
    // exists" of `int4(1)`.)
    CHECK(first_refused(kHead, "  int i = dim3().x;") == 11);       // `di`: no other word
    CHECK(first_refused(kHead, "  y[0] = 1 + float4{}.x;") == 18);  // `float4`: float, then `4`
    CHECK(first_refused(kHead, "  y[0] = max(1, int2{1, 2}.x);") == 19);
    CHECK(first_refused(
              kHead,
              "  float4 v = make_float4(1, 2, 3, 4);\n  dim3 d;\n  int2 w = make_int2(1, 2);"
              "\n  y[0] = v.x + d.y + w.x + float(1);\n") == -1);
  }
}
