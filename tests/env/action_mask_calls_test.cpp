// The syntax mask's rules of builtin calls, case by case and under stress: a builtin takes its
// arguments at least (no `)` before the last: NVRTC's "too few arguments in function call" and
// "no instance of overloaded function" of `max(a)`, `atomicAdd(p)`), and where a rule makes more of
// a call due, the completion path still writes it - random episodes steered into builtin calls,
// their `)`, preprocessor lines, qualifiers and numbers (where the path must write `, <num> 0`
// before a `)`, or `0.` in a floating overload's argument) never meet an empty mask and end with
// <eos> within their budget. (The mask's other episode-level properties are action_mask_test.cpp's.)
#include <memory>
#include <string>
#include <vector>

#include "catch.hpp"
#include "env_test_support.hpp"
#include "sparserl/datasets/random.hpp"
#include "sparserl/env/action_mask.hpp"
#include "sparserl/env/tokenizer.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::env;
using fixtures::first_refused;

const std::string kHead =
    "//@format csr\n//@launch spmv grid=ceil_div(max(M, 1), 4) block=128\n"
    "extern \"C\" __global__ void spmv(const int* __restrict__ row_ptr, const int* __restrict__ "
    "col_idx, const value_t* __restrict__ val, const value_t* __restrict__ x, value_t* "
    "__restrict__ y) {\n";

std::string program(const std::string& body) { return kHead + body + "\n}\n"; }

}  // namespace

TEST_CASE("a builtin takes its arguments at least", "[env][mask]") {
  CHECK(first_refused(program("  int i = max(1);")) == ")");
  CHECK(first_refused(program("  int i = min(max(1, 2));")) == ")");
  CHECK(first_refused(program("  atomicAdd(y);")) == ")");
  CHECK(first_refused(program("  y[0] = fma(x[0], 2.f);")) == ")");
  CHECK(first_refused(program("  int i = __shfl_down_sync(0xffffffffu, 1);")) == ")");
  CHECK(first_refused(program("  int i = ceil_div(M);")) == ")");
  CHECK(first_refused(program("  float4 v = make_float4(1, 2, 3);")) == ")");
  CHECK(first_refused(program("  y[0] = __ddiv_rn(x[0]);")) == ")");
  CHECK(first_refused(program("  int i = __reduce_or_sync(0xffffffffu);")) == ")");
  CHECK(first_refused(program("  int i = __funnelshift_l(1, 2);")) == ")");
  CHECK(first_refused(program("  int i = max(1, 2) + min(M, max(N, 3));\n"
                              "  atomicAdd(y, x[0]);\n  y[0] = fma(x[0], 2.f, 1.f);\n"
                              "  i = __shfl_down_sync(0xffffffffu, i, 1) + "
                              "__shfl_down_sync(0xffffffffu, i, 1, 32);\n"
                              "  __syncwarp();\n  __syncwarp(0xffffffffu);\n"
                              "  i = ceil_div(M, 2) + __popc(i) + i;\n"
                              "  float4 v = make_float4(1, 2, 3, 4);\n  y[0] = __ddiv_rn(x[0], 2.0);\n"
                              "  i = __reduce_or_sync(0xffffffffu, i) + __funnelshift_l(1, 2, 3);")) ==
        "");
}

TEST_CASE("a load's, a store's or an atomic's first argument starts as a pointer may",
          "[env][mask]") {
  // (NVRTC: "no instance of overloaded function" of `atomicSub(threadIdx.x, 1)`, `__ldcv(max(a,
  // b))`, `__ldg(!p)`, `atomicAdd(double(i), 1)`; the null pointer constant `0` is the completion
  // path's.)
  CHECK(first_refused(program("  atomicSub(threadIdx.x, 1);")) == "threadIdx");
  CHECK(first_refused(program("  y[0] = __ldcv(max(1, 2));")) == "max");
  CHECK(first_refused(program("  y[0] = __ldg(!x);")) == "!");
  CHECK(first_refused(program("  atomicAdd(double(M), 1.0);")) == "double");
  CHECK(first_refused(program("  atomicAdd(1, 1);")) == "1");
  CHECK(first_refused(program("  atomicAdd(M, 1);")) == "M");
  CHECK(first_refused(program("  atomicMax(-y, 1);")) == "-");
  // A group there starts a pointer too (`atomicSub((NNZ) / M > .18, 1)`, `atomicAdd((M), 1)`),
  // nested groups alike; a C cast's type word or qualifier starts one.
  CHECK(first_refused(program("  atomicSub((NNZ / M > 1), 1);")) == "NNZ");
  CHECK(first_refused(program("  atomicAdd(((M)), 1);")) == "M");
  CHECK(first_refused(program("  y[0] = __ldg((threadIdx.x + x));")) == "threadIdx");
  CHECK(first_refused(program("  float* q = (1 + x);")) == "1");
  CHECK(first_refused(program("  atomicAdd(((int*)y), 1);\n  atomicAdd((const int*)y, 1);\n"
                              "  float* q = ((x));\n  atomicAdd((&y[0]), 1.0f);")) == "");
  // Its value stays a pointer: after an operand there, no binary operator but + - and the
  // assignments (`__ldcv(*p && i)` is a bool's), in its groups alike; inside its brackets any.
  CHECK(first_refused(program("  y[0] = __ldcv(x && 1);")) == "&&");
  CHECK(first_refused(program("  atomicAdd((y) == x, 1.0f);")) == "==");
  CHECK(first_refused(program("  atomicAdd((y || x), 1.0f);")) == "||");
  CHECK(first_refused(program("  y[0] = __ldg(x != 0);")) == "!=");
  CHECK(first_refused(program("  atomicAdd(y + 1 < x, 1.0f);")) == "<");  // (a pointer's type)
  CHECK(first_refused(program("  atomicAdd(y + (M > 1) - 1, x[M * 2] / 2);\n"
                              "  y[0] = __ldg((x + 1) - 1) * __ldg(&x[1]) > 0;")) == "");
  CHECK(first_refused(program("  atomicAdd(&y[0], x[0]);\n  atomicAdd(y + 1, __ldg(x + 2));\n"
                              "  y[0] = __ldcv(&x[1]) + __ldg((x));\n  __stcg(y, x[0]);\n"
                              "  atomicCAS((int*)y, 0, 1);\n  atomicExch(&y[1], *x);")) == "");
}

TEST_CASE("random episodes steered into builtin calls never meet an empty mask", "[env][mask]") {
  // A random agent that, when the mask offers them, often names a builtin of two or more
  // arguments or a floating overload, closes a parenthesis, starts a preprocessor line, writes a
  // qualifier, a type, a cast, a `?`, a sign, a digit ...: the states where `)` is refused before
  // a call's last argument and the completion path writes `, <num> 0`, where a floating
  // overload's number must be floating and it writes `0.`, where a void function's `return` takes
  // `;` alone (100,000 episodes of this and of narrower steerings passed when the rules were
  // written; one found the `return` of a for statement's clause, which is no return statement),
  // where a cast to a floating type makes a pointer's `[ <num> 0 ]` due.
  const auto vocab = std::make_shared<const Vocabulary>(Vocabulary::standard());
  const Tokenizer tokenizer(vocab);
  std::vector<TokenId> steer;
  for (const char* name : {"max", "min", "fma", "atomicAdd", "atomicCAS", "__shfl_down_sync",
                           "pow", "ceil_div", "fmaxf", "sqrt", "ceil", "fmin", "sqrtf"}) {
    steer.push_back(vocab->id(TokenClass::builtin, name));
  }
  for (const char* p :
       {")", "#", ",", "?", ":", "(", "{", "}", "[", "*", "&", "<", "-", "++", ";", "=", "%", "<<"}) {
    steer.push_back(vocab->id(TokenClass::punct, p));
  }
  for (const char* d : {"0", "1", ".", "x", "u", "e", "f"}) {
    steer.push_back(vocab->id(TokenClass::digit, d));
  }
  for (const char* w : {"const", "__shared__", "define", "if", "endif", "return", "sizeof",
                        "static_cast", "else", "elif", "int", "float", "for", "while", "extern",
                        "double", "return", "void"}) {
    steer.push_back(vocab->id(TokenClass::keyword, w));
  }
  const int budgets[] = {kMinSyntaxTokens, kMinSyntaxTokens + 3, 60, 90, 140, 260};
  datasets::Rng rng(20261128);
  std::vector<std::uint8_t> m(vocab->size());
  std::vector<TokenId> allowed, steered;
  int calls = 0;
  for (int e = 0; e < 4000; ++e) {
    ActionMask mask(vocab, MaskMode::syntax, budgets[e % 6]);
    std::vector<TokenId> tokens;
    while (true) {
      mask.fill(m);
      allowed.clear();
      steered.clear();
      for (std::size_t i = 0; i < m.size(); ++i) {
        if (m[i] != 0) allowed.push_back(static_cast<TokenId>(i));
      }
      for (TokenId t : steer) {
        if (m[static_cast<std::size_t>(t)] != 0) steered.push_back(t);
      }
      if (allowed.empty()) {
        FAIL("episode " << e << ": empty mask after " << tokens.size()
                        << " tokens: " << tokenizer.decode(tokens));
      }
      const TokenId t = !steered.empty() && rng.below(2) == 0 ? steered[rng.below(steered.size())]
                                                              : allowed[rng.below(allowed.size())];
      if (t == steer[0] || t == steer[2]) ++calls;
      mask.advance(t);
      tokens.push_back(t);
      if (t == vocab->eos()) break;
    }
    REQUIRE(static_cast<int>(tokens.size()) <= mask.max_tokens());
    const std::string text = tokenizer.decode(tokens);
    INFO("episode " << e << ":\n" << text);
    CHECK(fixtures::brackets_balance(text));
  }
  CHECK(calls > 1000);
}

TEST_CASE("a #define's body names no builtin function", "[env][mask]") {
  // (NVRTC: "operand types are incompatible (\"__nv_bool\" and \"float (*)(float)\")" of `true <
  // G` after `#define G expf < 1`: the body names the function uncalled.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  CHECK(first_refused(head + "#define G expf < 1\n") == "expf");
  CHECK(first_refused(head + "#define F(a) sqrtf(a)\n") == "sqrtf");
  // (Builtins that are values, an #if line's names, a call in code are accepted.)
  CHECK(first_refused(head + "#define W warpSize\n#define T (threadIdx.x % 32)\n#if M > 1\n#endif\n"
                             "__device__ float f(float a) { return sqrtf(a) + expf(a); }\n") == "");
}

TEST_CASE("code names no function-like macro", "[env][mask]") {
  // (NVRTC: "identifier \"G\" is undefined" of `G x ^= 1;` after `#define G(a) ...`: a
  // function-like macro's name without its `(` is no macro. The grammar does not make its `(`
  // due, so code names none.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  CHECK(first_refused(head + "#define G(a) (a + 1)\n__device__ void f(int i) { G") == "v1");
  CHECK(first_refused(head + "#define G(a) (a + 1)\n__device__ void f(int i) { int j = G") == "v1");
  // (Object-like macros in code, a function-like one named on a line, one #defined again
  // object-like are accepted.)
  CHECK(first_refused(head + "#define G 2\n#define H(a) (a + G)\n#define J H(1)\n__device__ void "
                             "f() { int j = G + J; }\n#undef H\n#define H 3\n__device__ int g() "
                             "{ return H; }\n") == "");
}

TEST_CASE("a #define's body takes `.` after threadIdx & co alone", "[env][mask]") {
  // (NVRTC: "expression must have class type but it has type \"__nv_bool\"" of `true < A` after
  // `#define A (false .x)`, "... \"int\"" of `#define T NNZ.x`: where the macro is expanded its
  // body is code, and a number, a constant, true / false or a group is no class.)
  const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
  CHECK(first_refused(head + "#define A (false.x)\n") == ".");
  CHECK(first_refused(head + "#define T NNZ.x\n") == ".");
  CHECK(first_refused(head + "#define T (M).x\n") == ".");
  CHECK(first_refused(head + "#define T threadIdx.x.y\n") == ".");
  // (threadIdx & co's members are accepted.)
  CHECK(first_refused(head + "#define T (threadIdx.x + blockDim.y * 2)\n#define U gridDim.z\n") ==
        "");
}

TEST_CASE("a declaration in a block has no `,` before its first name", "[env][mask]") {
  // (NVRTC: "expected an identifier" of `char, M;`, `int *, p;`; a device function's parameters
  // may go unnamed.)
  CHECK(first_refused(program("  char, M;")) == ",");
  CHECK(first_refused(program("  bool a;\n  int*, b;")) == ",");
  CHECK(first_refused(program("  for (int, i = 0; ;) {}")) == ",");
  CHECK(first_refused(program("  int a = 1, b;\n  for (int i = 0, j = 1; i < j; ++i) {}\n"
                              "  value_t* p = y;\n  p[0] = a + b;")) == "");
}
