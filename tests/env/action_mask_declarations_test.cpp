// The syntax mask's declaration rules, case by case: what may stand at file scope and in a
// function, template parameters not redeclared, each specifier once, no reference to a reference,
// distinct parameter names - each refused where NVRTC would refuse it, and what the design space
// writes accepted. (The mask's episode-level properties are action_mask_test.cpp's.)
#include <string>

#include "catch.hpp"
#include "env_test_support.hpp"

namespace {

using sparserl::env::fixtures::first_refused;

}  // namespace

TEST_CASE("at file scope only declarations stand, and no static or __device__ in a function",
          "[env][mask]") {
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  // Refused where they start: a variable, text that is no declaration, a device variable.
  CHECK(first_refused(head + "int x;\n") == "int");
  CHECK(first_refused(head + "threadIdx.x;\n") == "threadIdx");
  CHECK(first_refused(head + "__device__ int x;\n") == ";");
  CHECK(first_refused(head + "__device__ int x = 0;\n") == "=");
  CHECK(first_refused(head + "extern __shared__ float s[];\n") == "__shared__");
  CHECK(first_refused(head + "__device__ int f(int a) int\n") == "int");  // { must follow
  CHECK(first_refused(head + "template <float G> __device__ int f() { return 0; }\n") == "float");
  CHECK(first_refused(head + "__device__ __shared__ int f() { return 0; }\n") == "__shared__");
  // ... and inside a function, static (but for __shared__, which needs none) and __device__.
  CHECK(first_refused(head + "__device__ void f() { static int x; }\n") == "static");
  CHECK(first_refused(head + "__device__ void f() { __device__ int x; }\n") == "__device__");
  CHECK(first_refused(head + "__device__ void f(static int a) { }\n") == "static");
  CHECK(first_refused(head + "__device__ value_t f(value_t a) { return a; }\n") == "");
  // Accepted: what the design space writes.
  CHECK(first_refused(head + ";\n#define W 4\ntemplate <int G>\n__device__ __forceinline__ int "
                             "f(const int* __restrict__ p, long long d) { return p[d] + G; }\n"
                             "__device__ static inline unsigned g(unsigned m) { __shared__ float "
                             "t[32]; return m; }\n") == "");
}

TEST_CASE("a template parameter is not redeclared in its declaration", "[env][mask]") {
  // (NVRTC: "template parameter ... may not be redeclared in this scope" - in the list, as the
  // function's name, as a parameter or as a name in the body.) The tokenizer names the kernel v0,
  // the template's first parameter v1.
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  CHECK(first_refused(head + "template <int G, int G> __device__ int f() { return 0; }\n") == "v1");
  CHECK(first_refused(head + "template <int G> __device__ int G() { return 0; }\n") == "v1");
  CHECK(first_refused(head + "template <int G> __device__ int f(long G) { return 0; }\n") == "v1");
  CHECK(first_refused(head + "template <int G> __device__ int f() { { int G = 0; } }\n") == "v1");
  // Used, and declared again in the next declaration (its own scope).
  CHECK(first_refused(head + "template <int G, int H>\n__device__ int f(int a) { return a + G * H; "
                             "}\n__device__ int g(int G) { return G; }\n") == "");
}

TEST_CASE("a declaration's specifiers stand once, a pointer's qualifiers after its `*`",
          "[env][mask]") {
  // (NVRTC: "duplicate specifier in declaration" of `const const`, "more than one storage class"
  // of `static static`, "expected an identifier" of `int* inline`, `long& __device__`.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  CHECK(first_refused(head + "__device__ const int const f() { return 0; }\n") == "const");
  CHECK(first_refused(head + "__device__ static float static f() { return 0; }\n") == "static");
  CHECK(first_refused(head + "__device__ __device__ int f() { return 0; }\n") == "__device__");
  CHECK(first_refused(head + "__device__ __forceinline__ inline int f() { return 0; }\n") ==
        "inline");  // __forceinline__ is an inline
  CHECK(first_refused(head + "__device__ int* inline f() { return 0; }\n") == "inline");
  CHECK(first_refused(head + "__device__ long& __device__ f() { return 0; }\n") == "__device__");
  CHECK(first_refused(head + "__device__ void f(const int* const const p) { }\n") == "const");
  CHECK(first_refused(head + "__device__ void f() { volatile volatile int i; }\n") == "volatile");
  // Once per declaration, once per pointer level.
  CHECK(first_refused(head + "__device__ static inline const int* const f(const int* const p, "
                             "const int q) { const int i = 0, j = 1; const volatile int* const "
                             "volatile r = p; return p; }\n") == "");
}

TEST_CASE("no pointer or reference to a reference", "[env][mask]") {
  // (NVRTC: "reference to reference is not allowed", "pointer to reference is not allowed".)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  CHECK(first_refused(head + "__device__ void f(int& & a) { }\n") == "&");
  CHECK(first_refused(head + "__device__ void f(int& const * a) { }\n") == "*");
  CHECK(first_refused(head + "__device__ long& * f() { return 0; }\n") == "*");
  // A reference to a pointer is one; `&` after an operand an operator.
  CHECK(first_refused(head +
                      "__device__ int f(const int*& p, int& b) { const int& c = b; return c & "
                      "*p & 1; }\n") == "");
}

TEST_CASE("a function's parameters have distinct names", "[env][mask]") {
  // (NVRTC: "duplicate parameter name".) The kernel is v0, f v1, its first parameter v2.
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  CHECK(first_refused(head + "__device__ void f(int a, long a) { }\n") == "v2");
  CHECK(first_refused(head + "__device__ void f(int a, int b, int* a) { }\n") == "v2");
  // The next function's parameters, and the function's own name, may be named alike.
  CHECK(first_refused(head + "__device__ int f(int a, int b) { return a + b; }\n"
                             "__device__ int g(int a, int g) { return a * g; }\n") == "");
}

TEST_CASE("a const variable declared in a block takes an initializer", "[env][mask]") {
  // (NVRTC: "const variable requires an initializer" of `const int v;`.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  CHECK(first_refused(head + "__device__ void f() { const int v; }\n") == ";");
  CHECK(first_refused(head + "__device__ void f() { const float v, w = 1; }\n") == ",");
  CHECK(first_refused(head + "__device__ void f() { int u; const int v = 0, w; }\n") == ";");
  CHECK(first_refused(head + "__device__ void f() { for (const int i; ;) {} }\n") == ";");
  // (A const array too: no local array takes an initializer here.)
  CHECK(first_refused(head + "__device__ void f() { const int a[2]; }\n") == "[");
  CHECK(first_refused(head + "__device__ int f(const int p) { const int v = 1; const int w{}; "
                             "const int* q; const int* a[2]; return v + w + p + q[0] + a[0][0]; "
                             "}\n") == "");
}

TEST_CASE("a void function's return takes no value", "[env][mask]") {
  // (NVRTC: "return value type does not match the function type" of `return 1;` in a kernel.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  const std::string kernel =
      "extern \"C\" __global__ void k(const int* __restrict__ a, const int* __restrict__ b, const "
      "value_t* __restrict__ c, const value_t* __restrict__ d, value_t* __restrict__ e) {";
  CHECK(first_refused(head + kernel + " return 1; }\n") == "<num>");
  CHECK(first_refused(head + "__device__ void f() { return f(); }\n") == "v1");  // f
  CHECK(first_refused(head + "__device__ inline void g() { if (1) return M; }\n") == "M");
  CHECK(first_refused(head + "__device__ int f() { return 1; }\n__device__ void* g() { return 0; }"
                             "\n__device__ void h() { return; }\n" +
                      kernel + " if (M) return;\n#if 1\n return\n#endif\n ; }\n") == "");
}

TEST_CASE("no variable of type void", "[env][mask]") {
  // (NVRTC: "incomplete type is not allowed" of `void v;`.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  CHECK(first_refused(head + "__device__ void f() { void v; }\n") == "v2");
  CHECK(first_refused(head + "__device__ void f() { const void v; }\n") == "v2");
  CHECK(first_refused(head + "__device__ void f() { void* q = 0; const void* r = q; }\n") == "");
  // (Nor a second declarator of a void declaration list: its `,` is refused, a `*` after it
  // being read as a unary one.)
  CHECK(first_refused(head + "__device__ void f() { void *p{}, q; }\n") == ",");
  CHECK(first_refused(head + "__device__ void f() { for (void *r = 0, *s; ;) {} }\n") == ",");
  CHECK(first_refused(head + "__device__ void g(int q) { void *r{}; void *s = (r); int a = q, b; "
                             "for (void *t = s; ;) {} }\n") == "");
}

TEST_CASE("an extern array leaves its first dimension alone unsized", "[env][mask]") {
  // (NVRTC: "an array may not have elements of this type" of `extern __shared__ unsigned s[][];`,
  // `s[2][]`.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  CHECK(first_refused(head + "__device__ void f() { extern __shared__ int s[][]; }\n") == "]");
  CHECK(first_refused(head + "__device__ void f() { extern __shared__ float s[2][]; }\n") == "]");
  CHECK(first_refused(head + "__device__ void f() { extern __shared__ float s[][4][2];\n"
                             "  extern __shared__ int t[], u[][2]; }\n") == "");
}

TEST_CASE("an array's bound names no variable but a const one", "[env][mask]") {
  // (NVRTC: "expression must have a constant value" of `float a[n];`.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  CHECK(first_refused(head + "__device__ void f() { int n = 4; float a[n]; }\n") == "v2");
  CHECK(first_refused(head + "__device__ void f(int n) { float a[1 + n]; }\n") == "v2");
  CHECK(first_refused(head + "__device__ void f(const int* p) { float a[p[0]]; }\n") == "v2");
  CHECK(first_refused(head + "#define B 4\n__device__ void f(int n) { const int w = 8;"
                             " float a[w * B], c[sizeof(n)]; a[n] = c[n]; }\n"
                             "template <int G> __device__ void g() { float a[G]; }\n") == "");
}

TEST_CASE("an array's bound names no builtin, and no variable under a group either",
          "[env][mask]") {
  // (NVRTC: "expression must have a constant value" of `float a[warpSize]`, `[threadIdx.x]`,
  // `[min(4, M)]` - no builtin is constexpr - and of `[(n)]`.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  CHECK(first_refused(head + "__device__ void f() { float a[warpSize]; }\n") == "warpSize");
  CHECK(first_refused(head + "__device__ void f() { float a[(threadIdx.x)]; }\n") == "threadIdx");
  CHECK(first_refused(head + "__device__ void f() { float a[1 + (2 * blockDim.x)]; }\n") ==
        "blockDim");
  CHECK(first_refused(head + "__device__ void f() { __shared__ float a[min(4, K)]; }\n") == "min");
  CHECK(first_refused(head + "__device__ void f(int n) { float a[(n)]; }\n") == "v2");
  CHECK(first_refused(head + "__device__ void f(int n) { float a[(1 + n) * 2]; }\n") == "v2");
  // Accepted: constants, sizeof's operands, builtins outside a bound. (A cast in a bound is
  // refused: action_mask_operand_types_test.cpp.)
  CHECK(first_refused(head + "__device__ void f(int n) { const int w = 8;\n"
                             "  float a[(w + 1) * K], b[sizeof n + sizeof(warpSize)],"
                             " c[sizeof -warpSize], d[(2)];\n"
                             "  a[threadIdx.x] = b[min(1, 2)] + c[warpSize] + d[0]; }\n") == "");
}

TEST_CASE("a declaration list's comma takes a declarator", "[env][mask]") {
  // (NVRTC: "expected an identifier" of `int a = 1, 5;`, `int a, M;`.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  CHECK(first_refused(head + "__device__ void f() { int a = 1, 5; }\n") == "<num>");
  CHECK(first_refused(head + "__device__ void f() { int a, M; }\n") == "M");
  CHECK(first_refused(head + "__device__ void f() { for (int i = 0, true; ;) {} }\n") == "true");
  // (A comma in a call or an expression statement is left alone; a declarator's `*`, `&` too.)
  CHECK(first_refused(head + "__device__ int g(int x, int y) { return x; }\n"
                             "__device__ void f() { int a = g(1, 5), &r = a, b; a = 1, 5; "
                             "for (int i = 0, j = 1; i < j;) {} }\n") == "");
}

TEST_CASE("a vector variable takes no operator but `=`", "[env][mask]") {
  // (NVRTC: "no operator \">\" matches these operands" of `d > warpSize` with d a dim3; CUDA's
  // vector types have no operators.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  CHECK(first_refused(head + "__device__ void f() { dim3 d; int i = d > warpSize; }\n") == ">");
  CHECK(first_refused(head + "__device__ void f(float4 v) { v += v; }\n") == "+=");
  CHECK(first_refused(head + "__device__ void f(const int2 v) { int i = 1 + v->x; }\n") == "->");
  // (Its members, `=`, `?`'s branches, an array of vectors are left alone.)
  CHECK(first_refused(head + "__device__ void f(float4 v, int i) { dim3 d; d = d; int j = d.x > 2 "
                             "? 1 : 0; float4 w = v; w = i ? w : v; w.x = 1; float4 a[2]; a[0].y "
                             "= 1; }\n") == "");
}

TEST_CASE("a qualified type or a vector type at a statement takes no `(`", "[env][mask]") {
  // (NVRTC: "expected an identifier" of `volatile const size_t(false)`, `volatile const
  // ulonglong2(M)`: a qualifier makes a declaration, whose parenthesis holds a declarator; "no
  // suitable constructor exists to convert from \"int\" to \"uint3\"" of `uint3(abs(i))`.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  const std::string f = "__device__ void f(int i) { ";
  CHECK(first_refused(head + f + "volatile const size_t(false); }\n") == "(");
  CHECK(first_refused(head + f + "const int(M); }\n") == "(");
  CHECK(first_refused(head + f + "uint3(abs(i)); }\n") == "(");
  // (A functional cast at a statement or in an expression, dim3's, a qualified declaration are
  // accepted.)
  CHECK(first_refused(head + f +
                      "size_t(i) + 1; dim3(2); const int j = int(i); volatile int m "
                      "= 1; }\n") == "");
}

TEST_CASE("a for statement's condition and step start with no type word", "[env][mask]") {
  // (NVRTC: "declaration does not declare anything" of `for (unsigned i; long; size_t)`.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  const std::string f = "__device__ void f(int i) { ";
  CHECK(first_refused(head + f + "for (unsigned j; long; ) {} }\n") == "long");
  CHECK(first_refused(head + f + "for (; i < 2; size_t) {} }\n") == "size_t");
  // (A declaration in the first clause, a functional cast inside an expression are accepted.)
  CHECK(first_refused(head + f + "for (int j = 0; j < int(i); j += size_t(1)) {} }\n") == "");
}

TEST_CASE("a loop's or an if's one statement is no declaration", "[env][mask]") {
  // (NVRTC: "identifier \"s\" is undefined" of `for (;;) const short s {}; s - 1;`: the
  // declaration's scope is the loop's statement alone, which the grammar does not know.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  const std::string f = "__device__ void f(int i) { ";
  CHECK(first_refused(head + f + "for (;;) const") == "const");
  CHECK(first_refused(head + f + "while (i) int") == "int");
  CHECK(first_refused(head + f + "if (i) unsigned") == "unsigned");
  // (A block, an expression statement, a declaration after the loop are accepted.)
  CHECK(first_refused(head + f +
                      "for (;;) { const short s {}; } while (i) i--; if (i) i = 1; int "
                      "j = 0; }\n") == "");
}

TEST_CASE("a block declares no reference but to a const value", "[env][mask]") {
  // (NVRTC: "reference variable \"r\" requires an initializer" of `void *&r;`; a reference to a
  // variable or a pointer binds an lvalue of its type alone - "initial value of reference to
  // non-const must be an lvalue" of `int& r = 1;` - which the grammar does not know.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  const std::string f = "__device__ void f(int i) { ";
  CHECK(first_refused(head + f + "void *&r; }\n") == "&");
  CHECK(first_refused(head + f + "int& r = i; }\n") == "&");
  CHECK(first_refused(head + f + "const int *&p = 0; }\n") == "&");
  CHECK(first_refused(head + f + "for (long &j = i;;) {} }\n") == "&");
  // (A const value's reference, a parameter's, a reference cast, a unary or binary `&` are
  // accepted.)
  CHECK(first_refused(head + "__device__ void f(int& i, const int*& p) { const int& r = i; }\n") ==
        "");
  CHECK(first_refused(head + f + "const int& s = 1; }\n") == "");
  CHECK(first_refused(head + f + "int j = (int&)i & 1; const int* q = &i; }\n") == "");
}

TEST_CASE("a const declaration's list stays const through its initializers' brackets",
          "[env][mask]") {
  // (NVRTC: "const variable \"b\" requires an initializer" of `const uint2 a{f(1)}, b;`: a `(`, a
  // `{` or its `}` in the first initializer no longer end the declaration's constness.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  const std::string f = "__device__ void f(int i) { ";
  CHECK(first_refused(head + f + "const int a{1}, b; }\n") == ";");
  CHECK(first_refused(head + f + "const int a = (i), b; }\n") == ";");
  CHECK(first_refused(head + f + "const uint2 a{(unsigned)i, 2}, b, c; }\n") == ",");
  // (Their initializers, a cast's const in another declaration's initializer are accepted.)
  CHECK(first_refused(head + f + "const int a{1}, b = (i); int c = (const int)i, d; d = 1; }\n") ==
        "");
}

TEST_CASE("a block's pointer starts its initializer with what may be a pointer", "[env][mask]") {
  // (NVRTC: "a value of type \"int\" cannot be used to initialize an entity of type \"void **\""
  // of `void **q {K};`, `int* q = 5;`.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  const std::string f = "__device__ void f(int i, const int* p) { ";
  CHECK(first_refused(head + f + "void **q{K}; }\n") == "K");
  CHECK(first_refused(head + f + "int *q = 5; }\n") == "5");
  CHECK(first_refused(head + f + "const int* q = true; }\n") == "true");
  CHECK(first_refused(head + f + "const int* q{-p}; }\n") == "-");
  CHECK(first_refused(head + f + "const int* q = int(i); }\n") == "int");
  // (The null pointer, a pointer's sum, an address, casts are accepted.)
  CHECK(first_refused(head + f +
                      "const int* q = 0; const int* r{p}; const int* s = p - 1; "
                      "const int* t{}; const int* u = &i; int* w = (int*)p + i; const "
                      "int* z = reinterpret_cast<const int*>(p) + 1; }\n") == "");
}

TEST_CASE("a const declaration list's comma takes a declarator", "[env][mask]") {
  // (NVRTC: "expected an identifier" of `const bool* q{}, M;`; the completion path writes the
  // name and its initializer.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  const std::string f = "__device__ void f(int i) { ";
  CHECK(first_refused(head + f + "const int* q{}, M; }\n") == "M");
  CHECK(first_refused(head + f + "const int a = 1, 5; }\n") == "<num>");
  CHECK(first_refused(head + f + "const int a = 1, b = 2; for (const int c = 0, d = 1;;) {} }\n") ==
        "");
}
