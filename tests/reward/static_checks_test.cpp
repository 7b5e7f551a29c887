// Static checks, attacker first: for every reason a program that tries the trick, checked to be
// refused with that reason at the right line; the near misses that must stay legal; the reference
// programs; and the geometry and resource checks that need a matrix or a compile result.
#include "sparserl/reward/static_checks.hpp"

#include <algorithm>

#include "abi_fixtures.hpp"
#include "catch.hpp"
#include "test_support.hpp"

using namespace sparserl::reward;
using sparserl::reward::testing::reference_program;
using sparserl::reward::testing::small_matrix;
using sparserl::testing::has_substring;

namespace {

const std::string kParams =
    "const int* __restrict__ row_ptr, const int* __restrict__ col_idx, "
    "const value_t* __restrict__ val, const value_t* __restrict__ x, value_t* __restrict__ y";

// A correct CSR SpMV with places to inject code: TOP (line 3) before the kernel, BODY (line 10)
// inside it, EXTRA after it.
std::string program(const std::string& top = "", const std::string& body = "",
                    const std::string& extra = "", const std::string& params = kParams) {
  return "//@format csr\n"
         "//@launch spmv grid=ceil_div(M, 128) block=128\n" +
         top + "\n" + "extern \"C\" __global__ void spmv(" + params +
         ") {\n"
         "  int row = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (row >= M) return;\n"
         "  value_t s = 0;\n"
         "  for (int k = row_ptr[row]; k < row_ptr[row + 1]; ++k) s += val[k] * x[col_idx[k]];\n"
         "  // a comment that mentions clock(), printf and #include <cstdio> is fine\n" +
         body + "\n" +
         "  y[row] = s;\n"
         "}\n" +
         extra;
}

struct Refusal {
  StaticCheckReason reason;
  int line;
  std::string message;
};

std::optional<Refusal> refusal(const std::string& text, Op op = Op::spmv,
                               const ProgramLimits& limits = {}) {
  const StaticCheckResult r = check_program(text, op, limits);
  if (r.ok()) return std::nullopt;
  return Refusal{r.failure->reason, r.failure->line, r.failure->message};
}

void expect_refused(const std::string& text, StaticCheckReason reason, int line = -1) {
  const auto r = refusal(text);
  INFO("program:\n" << text);
  REQUIRE(r.has_value());
  INFO("refused with " << to_string(r->reason) << " at line " << r->line << ": " << r->message);
  CHECK(r->reason == reason);
  if (line >= 0) CHECK(r->line == line);
}

void expect_accepted(const std::string& text, Op op = Op::spmv) {
  const auto r = refusal(text, op);
  INFO("program:\n" << text);
  if (r)
    INFO("refused with " << to_string(r->reason) << " at line " << r->line << ": " << r->message);
  CHECK_FALSE(r.has_value());
}

}  // namespace

TEST_CASE("reasons print, parse and map to error kinds", "[reward][static_checks]") {
  for (std::size_t i = 0; i < kStaticCheckReasonCount; ++i) {
    const auto reason = static_cast<StaticCheckReason>(i);
    CHECK(parse_static_check_reason(to_string(reason)) == reason);
    CHECK(describe(reason).size() > 10);
  }
  CHECK_FALSE(parse_static_check_reason("clock").has_value());
  CHECK(error_kind(StaticCheckReason::bad_directive) == ErrorKind::bad_program);
  CHECK(error_kind(StaticCheckReason::resource_limit) == ErrorKind::resource_limit);
  CHECK(error_kind(StaticCheckReason::timer_read) == ErrorKind::static_check);
  CHECK(StaticCheckFailure{StaticCheckReason::timer_read, "clock64 is not allowed", 12, 5}.str() ==
        "timer_read at line 12, column 5: clock64 is not allowed");
}

TEST_CASE("the base program and legal near misses pass", "[reward][static_checks]") {
  expect_accepted(program());
  expect_accepted(program("#define BLOCK 128\n#if BLOCK > 64\n#else\n#endif\n#undef BLOCK",
                          "#pragma unroll 4\n  for (int i = 0; i < 4; ++i) s += 0;"));
  expect_accepted(
      program("__device__ __forceinline__ value_t twice(value_t a) { return 2 * a; }\n"
              "__constant__ int kTable[4] = {1, 2, 3, 4};\n"
              "static __device__ inline int clamp_row(int r) { return r; }",
              "  static __shared__ value_t tile[128];\n  extern __shared__ value_t dyn[];\n"
              "  static_assert(sizeof(value_t) >= 4, \"clock printf asm\");\n"
              "  int clock_rate = 1, newton = 2, cuda_sum = 3; s += clock_rate;"));
  // Parameter spellings the registry allows: names free or absent, const after the type, const
  // pointers, __restrict.
  expect_accepted(program("", "", "",
                          "int const* rp, const int* __restrict ci, const value_t* const v, "
                          "value_t const* __restrict__ const xs, value_t* __restrict__ out"));
  // An unused prototype of an unlaunched kernel is harmless.
  expect_accepted(program("extern \"C\" __global__ void helper(int);"));
}

TEST_CASE("every reference program passes the static checks", "[reward][static_checks]") {
  for (Op op : kOps) {
    for (Format f : kFormats) {
      INFO(sparserl::reward::testing::program_name(op, f));
      const StaticCheckResult r = check_program(reference_program(op, f), op);
      if (!r.ok()) INFO(r.failure->str());
      CHECK(r.ok());
      REQUIRE(r.program.has_value());
      CHECK(r.program->format.format == f);
    }
  }
}

TEST_CASE("static_check include: every directive but the allowed few", "[reward][static_checks]") {
  expect_refused(program("#include <cstdio>"), StaticCheckReason::include, 3);
  expect_refused(program("%:include \"x.h\""), StaticCheckReason::include, 3);
  expect_refused(program("  #  include <cuda_runtime.h>"), StaticCheckReason::include, 3);
  expect_refused(program("#pragma nv_diag_suppress 177"), StaticCheckReason::include, 3);
  expect_refused(program("#line 100 \"other.cu\""), StaticCheckReason::include, 3);
  expect_refused(program("#error stop"), StaticCheckReason::include, 3);
  expect_refused(program("#warning flood"), StaticCheckReason::include, 3);
  expect_refused(program("", "#pragma"), StaticCheckReason::include, 10);
}

TEST_CASE("static_check token_pasting: ##, # and _Pragma", "[reward][static_checks]") {
  expect_refused(program("#define CAT(a, b) a##b\n"), StaticCheckReason::token_pasting, 3);
  expect_refused(program("#define CAT(a, b) a %:%: b\n"), StaticCheckReason::token_pasting, 3);
  expect_refused(program("#define STR(a) #a\n"), StaticCheckReason::token_pasting, 3);
  expect_refused(program("", "_Pragma(\"unroll\")"), StaticCheckReason::token_pasting, 10);
}

TEST_CASE("static_check inline_asm", "[reward][static_checks]") {
  expect_refused(program("", "  unsigned t; asm volatile(\"mov.u32 %0, %%clock;\" : \"=r\"(t));"),
                 StaticCheckReason::inline_asm, 10);
  expect_refused(program("", "  __asm__(\"exit;\");"), StaticCheckReason::inline_asm, 10);
  expect_refused(program("#define A asm"), StaticCheckReason::inline_asm, 3);
}

TEST_CASE("static_check timer_read, also spliced across lines", "[reward][static_checks]") {
  expect_refused(program("", "  long long t = clock64();"), StaticCheckReason::timer_read, 10);
  expect_refused(program("", "  s += clock();"), StaticCheckReason::timer_read, 10);
  expect_refused(program("", "  __nanosleep(1000);"), StaticCheckReason::timer_read, 10);
  expect_refused(program("", "  s += __globaltimer();"), StaticCheckReason::timer_read, 10);
  expect_refused(program("", "  s += sizeof(__TIME__);"), StaticCheckReason::timer_read, 10);
  // The compiler splices backslash-newline before it tokenizes: so does the checker.
  expect_refused(program("", "  s += clo\\\nck64();"), StaticCheckReason::timer_read, 10);
}

TEST_CASE("static_check stream_api, graph_api and device_launch", "[reward][static_checks]") {
  expect_refused(program("", "  cudaDeviceSynchronize();"), StaticCheckReason::stream_api, 10);
  expect_refused(program("", "  cudaStream_t st; cudaStreamCreate(&st);"),
                 StaticCheckReason::stream_api, 10);
  expect_refused(program("", "  cudaMemcpyAsync(y, x, 4, cudaMemcpyDeviceToDevice);"),
                 StaticCheckReason::stream_api, 10);
  expect_refused(program("", "  if (cudaGetLastError()) return;"), StaticCheckReason::stream_api,
                 10);
  expect_refused(program("", "  cooperative_groups::this_grid().sync();"),
                 StaticCheckReason::stream_api, 10);
  expect_refused(program("", "  cudaGraphLaunch(0, 0);"), StaticCheckReason::graph_api, 10);
  expect_refused(program("", "  spmv<<<1, 1>>>(row_ptr, col_idx, val, x, y);"),
                 StaticCheckReason::device_launch, 10);
  expect_refused(program("", "  cudaLaunchDevice(0, 0, 0, 0, 0);"),
                 StaticCheckReason::device_launch, 10);
}

TEST_CASE("static_check device_malloc and device_io", "[reward][static_checks]") {
  expect_refused(program("", "  value_t* p = (value_t*)malloc(8); free(p);"),
                 StaticCheckReason::device_malloc, 10);
  expect_refused(program("", "  value_t* p = new value_t[4];"), StaticCheckReason::device_malloc,
                 10);
  expect_refused(program("", "  void* p; cudaMalloc(&p, 8);"), StaticCheckReason::device_malloc,
                 10);
  expect_refused(program("", "  value_t* p = (value_t*)alloca(64);"),
                 StaticCheckReason::device_malloc, 10);
  expect_refused(program("", "  printf(\"%d\\n\", row);"), StaticCheckReason::device_io, 10);
  expect_refused(program("", "  assert(row < M);"), StaticCheckReason::device_io, 10);
}

TEST_CASE("forbidden_name() is the checks' verdict on a name, and its prefix queries",
          "[reward][static_checks]") {
  // The verdict agrees with check_program() on a local of that name.
  for (const std::string name : {"malloc",
                                 "free",
                                 "new",
                                 "printf",
                                 "assert",
                                 "clock",
                                 "asm",
                                 "cudaMalloc",
                                 "cudaMallocX",
                                 "cudaGetLastError",
                                 "cudaX",
                                 "__cudaX",
                                 "__cuda",
                                 "cudaGraphX",
                                 "__nvvm_read_ptx_sreg_x",
                                 "cuda",
                                 "cudax",
                                 "cuda_x",
                                 "cuda0",
                                 "mallocs",
                                 "malloc_",
                                 "freeze",
                                 "printfs",
                                 "__cud",
                                 "news",
                                 "clocks",
                                 "__nvvm_read_ptx_sreg"}) {
    INFO(name);
    const auto r = refusal(program("", "  int " + name + " = 0;"));
    const auto verdict = forbidden_name(name);
    CHECK(verdict.has_value() == r.has_value());
    if (verdict && r) CHECK(*verdict == r->reason);
  }
  CHECK(forbidden_name("cudaStreamCreate") == StaticCheckReason::stream_api);
  CHECK(forbidden_name("malloc") == StaticCheckReason::device_malloc);
  CHECK(forbidden_name("printf") == StaticCheckReason::device_io);
  // Families: every extension is forbidden.
  CHECK(forbidden_family("cudaM"));
  CHECK(forbidden_family("cudaGraph"));
  CHECK(forbidden_family("__cuda"));
  CHECK(forbidden_family("__nvvm_read_ptx_sreg_"));
  CHECK_FALSE(forbidden_family("cuda"));
  CHECK_FALSE(forbidden_family("cuda_"));
  CHECK_FALSE(forbidden_family("malloc"));  // malloc_ is a name
  CHECK_FALSE(forbidden_family("__cud"));
  // Below: some extension is forbidden.
  for (const char* prefix : {"c", "cu", "cud", "cuda", "cudaM", "m", "mal", "malloc", "pri", "n",
                             "__", "__cud", "_", "a", "v"}) {
    INFO(prefix);
    CHECK(forbidden_below(prefix));
  }
  for (const char* prefix : {"vo", "cuda_", "cudax", "mallocs", "x", "row", "__v", "freez"}) {
    INFO(prefix);
    CHECK_FALSE(forbidden_below(prefix));
  }
}

TEST_CASE("static_check global_state: memory that outlives a launch", "[reward][static_checks]") {
  // The caching hack: keep y from the first run and copy it on later timed runs.
  expect_refused(program("__device__ value_t cache[1 << 20];\n__device__ int calls = 0;"),
                 StaticCheckReason::global_state, 3);
  expect_refused(program("__device__ int calls;"), StaticCheckReason::global_state, 3);
  expect_refused(program("static __device__ unsigned long long runs{0};"),
                 StaticCheckReason::global_state, 3);
  expect_refused(program("__managed__ int m;"), StaticCheckReason::global_state, 3);
  expect_refused(program("", "  static int counter = 0; counter++;"),
                 StaticCheckReason::global_state, 10);
  expect_refused(program("__device__ int bump() { static int c; return ++c; }"),
                 StaticCheckReason::global_state, 3);
}

TEST_CASE("static_check bad_token: characters that could spell names", "[reward][static_checks]") {
  expect_refused(program("", "  s += \\u0063lock64();"), StaticCheckReason::bad_token, 10);
  expect_refused(program("", "  int $x = 0;"), StaticCheckReason::bad_token, 10);
  expect_refused(program("", "  s += 1; @"), StaticCheckReason::bad_token, 10);
  expect_refused(program("", "  s += 1; /* never closed"), StaticCheckReason::bad_token, 10);
  expect_refused(program("", "  int a = 0; # define X"), StaticCheckReason::bad_token, 10);
  std::string with_nul = program();
  with_nul.insert(with_nul.find("y[row]"), std::string("\0", 1));
  expect_refused(with_nul, StaticCheckReason::bad_token, 11);
  expect_refused(program("", "  s += 1; \xc3\xa9"), StaticCheckReason::bad_token, 10);
}

TEST_CASE("static_check macro_abuse: macros that hide kernels or redefine the ABI",
          "[reward][static_checks]") {
  expect_refused(program("#define KERNEL extern \"C\" __global__"), StaticCheckReason::macro_abuse,
                 3);
  expect_refused(program("#define G __global__"), StaticCheckReason::macro_abuse, 3);
  expect_refused(program("#undef M\n#define M 1"), StaticCheckReason::macro_abuse, 3);
  expect_refused(program("#define value_t float"), StaticCheckReason::macro_abuse, 3);
  expect_refused(program("#define const"), StaticCheckReason::macro_abuse, 3);
  expect_refused(program("#define spmv decoy"), StaticCheckReason::macro_abuse, 3);
  expect_refused(program("#define NNZ 0"), StaticCheckReason::macro_abuse, 3);
  // CUDA's own spelling of __global__ would declare a kernel the scan does not see.
  expect_refused(
      program("", "", "extern \"C\" __attribute__((global)) void fast(" + kParams + ") {}"),
      StaticCheckReason::macro_abuse, 13);
  expect_refused(program("__location__(device) int cache[64];"), StaticCheckReason::macro_abuse, 3);
  expect_refused(program("__tile_global__ void t() {}"), StaticCheckReason::macro_abuse, 3);
  expect_accepted(program("struct __attribute__((aligned(16))) Pair { value_t a, b; };"));
}

TEST_CASE("static_check undefined_kernel and unlaunched_kernel (decoys)",
          "[reward][static_checks]") {
  const std::string prototype_only =
      "//@format csr\n//@launch spmv grid=1 block=32\nextern \"C\" __global__ void spmv(" +
      kParams + ");\n";
  expect_refused(prototype_only, StaticCheckReason::undefined_kernel, 2);
  std::string typo = program();
  typo.replace(typo.find("//@launch spmv"), 14, "//@launch spmv2");
  expect_refused(typo, StaticCheckReason::undefined_kernel, 2);
  // The decoy: a second kernel that the launches never run.
  expect_refused(program("", "", "extern \"C\" __global__ void fast(" + kParams + ") {}\n"),
                 StaticCheckReason::unlaunched_kernel, 13);
  expect_refused(program("template <int B> __global__ void tiled(const int* a) {}"),
                 StaticCheckReason::unlaunched_kernel, 3);
}

TEST_CASE("static_check signature_mismatch: the registry's list and nothing else",
          "[reward][static_checks]") {
  const auto mismatch = [](const std::string& params) {
    return refusal(program("", "", "", params));
  };
  auto r = mismatch("const int* a, const int* b, const float* v, const value_t* xs, value_t* ys");
  REQUIRE(r);
  CHECK(r->reason == StaticCheckReason::signature_mismatch);
  CHECK_THAT(r->message, has_substring("parameter 3"));
  CHECK_THAT(r->message, has_substring("value_t"));
  r = mismatch("const int* a, const int* b, const value_t* v, value_t* ys");
  REQUIRE(r);
  CHECK_THAT(r->message, has_substring("takes 4 parameters"));
  r = mismatch(kParams + ", int extra");
  REQUIRE(r);
  CHECK_THAT(r->message, has_substring("takes 6 parameters"));
  r = mismatch("int* a, const int* b, const value_t* v, const value_t* xs, value_t* ys");
  REQUIRE(r);
  CHECK_THAT(r->message, has_substring("pointers to const"));
  r = mismatch(
      "const int* a, const int* b, const value_t* v, const value_t* xs, const value_t* ys");
  REQUIRE(r);
  CHECK_THAT(r->message, has_substring("cannot be const"));
  r = mismatch("const value_t* v, const int* b, const int* a, const value_t* xs, value_t* ys");
  REQUIRE(r);
  CHECK_THAT(r->message, has_substring("parameter 1"));
  r = mismatch("const int** a, const int* b, const value_t* v, const value_t* xs, value_t* ys");
  REQUIRE(r);
  CHECK_THAT(r->message, has_substring("one pointer level"));
  r = mismatch("const int* a, const int* b, const value_t* v, const value_t* xs, value_t* ys, ...");
  REQUIRE(r);
  CHECK(r->reason == StaticCheckReason::signature_mismatch);

  std::string not_extern_c = program();
  not_extern_c.erase(not_extern_c.find("extern \"C\" "), 11);
  r = refusal(not_extern_c);
  REQUIRE(r);
  CHECK(r->reason == StaticCheckReason::signature_mismatch);
  CHECK_THAT(r->message, has_substring("extern \"C\""));
  std::string returns_int = program();
  returns_int.replace(returns_int.find("void spmv"), 4, "int");
  r = refusal(returns_int);
  REQUIRE(r);
  CHECK(r->reason == StaticCheckReason::signature_mismatch);
  // The SpMV program checked as SpMM has the right count and types: names are free.
  CHECK_FALSE(refusal(program(), Op::spmm).has_value());
  // SELL's list is longer: the CSR kernel does not fit it.
  std::string as_sell = program();
  as_sell.replace(as_sell.find("csr"), 3, "sell C=32 sigma=1");
  CHECK(refusal(as_sell)->reason == StaticCheckReason::signature_mismatch);
}

TEST_CASE("static_check bad_directive and program_too_large", "[reward][static_checks]") {
  std::string no_format = program();
  no_format.erase(0, std::string("//@format csr\n").size());
  const StaticCheckResult r = check_program(no_format, Op::spmv);
  REQUIRE_FALSE(r.ok());
  CHECK(r.failure->reason == StaticCheckReason::bad_directive);
  CHECK(error_kind(r.failure->reason) == ErrorKind::bad_program);
  CHECK_FALSE(r.program.has_value());

  std::string big = program("", std::string(70 * 1024, ' '));
  expect_refused(big, StaticCheckReason::program_too_large, 0);
  ProgramLimits small;
  small.max_program_bytes = 200;
  CHECK(refusal(program(), Op::spmv, small)->reason == StaticCheckReason::program_too_large);
}

TEST_CASE("launch geometry is evaluated on the matrix and checked", "[reward][static_checks]") {
  const auto a = small_matrix();  // M = 7, EMPTY_ROWS = 1
  const auto geometry = [&](const std::string& launch, const ProgramLimits& limits = {},
                            Format format = Format::csr) {
    std::string text = program();
    text.replace(text.find("//@launch spmv grid=ceil_div(M, 128) block=128"), 46, launch);
    if (format == Format::ell) text.replace(text.find("csr"), 3, "ell");
    const ParseResult p = parse_program(text);
    INFO(p.error.message);
    REQUIRE(p.ok());
    FormatSpec spec;
    spec.format = format;
    return resolve_launches(*p.program, compute_constants(a, Op::spmv, 1, spec), limits);
  };
  GeometryResult g = geometry("//@launch spmv grid=ceil_div(M, 2) block=64 smem=M * 8");
  REQUIRE(g.ok());
  REQUIRE(g.launches.size() == 1);
  CHECK(g.launches[0] == ResolvedLaunch{"spmv", 4, 64, 56, 2});

  g = geometry("//@launch spmv grid=M / (EMPTY_ROWS - 1) block=64");
  REQUIRE_FALSE(g.ok());
  CHECK(g.failure->reason == StaticCheckReason::bad_geometry);
  CHECK_THAT(g.failure->message, has_substring("division by zero"));
  CHECK(g.failure->line == 2);
  CHECK(g.failure->column == 23);  // the '/'

  CHECK(geometry("//@launch spmv grid=M - M block=64").failure->reason ==
        StaticCheckReason::bad_geometry);
  CHECK_THAT(geometry("//@launch spmv grid=M block=2048").failure->message,
             has_substring("is 2048 on this matrix: expected 1 .. 1024"));
  CHECK(geometry("//@launch spmv grid=M block=0").failure->reason ==
        StaticCheckReason::bad_geometry);
  CHECK(geometry("//@launch spmv grid=M * 9223372036854775807 block=1").failure->reason ==
        StaticCheckReason::bad_geometry);
  CHECK(geometry("//@launch spmv grid=2147483648 block=1").failure->reason ==
        StaticCheckReason::bad_geometry);
  CHECK(geometry("//@launch spmv grid=1 block=1 smem=0 - 1").failure->reason ==
        StaticCheckReason::bad_geometry);
  CHECK(geometry("//@launch spmv grid=1 block=1 smem=49153").failure->reason ==
        StaticCheckReason::resource_limit);
  CHECK(geometry("//@launch spmv grid=1 block=1 smem=49152").ok());

  ProgramLimits tight;
  tight.max_stored_entries = 41;  // ELL of the small matrix stores 6 x 7 = 42
  g = geometry("//@launch spmv grid=1 block=32", tight, Format::ell);
  REQUIRE_FALSE(g.ok());
  CHECK(g.failure->reason == StaticCheckReason::resource_limit);
  CHECK_THAT(g.failure->message, has_substring("42 entries"));
}

TEST_CASE("resources are checked against the compile figures", "[reward][static_checks]") {
  CompileResult compiled;
  compiled.ok = true;
  compiled.kernels = {{"spmv", 32, 40000, 0, 0, 0, 0}, {"zero", 255, 0, 0, 8, 8, 0}};
  const std::vector<ResolvedLaunch> fits = {{"spmv", 10, 256, 8000, 2}, {"zero", 1, 256, 0, 3}};
  CHECK_FALSE(check_resources(fits, compiled).has_value());

  auto f = check_resources({{"spmv", 10, 256, 9500, 2}}, compiled);
  REQUIRE(f);
  CHECK(f->reason == StaticCheckReason::resource_limit);
  CHECK_THAT(f->message, has_substring("40000 bytes of static + 9500 bytes of dynamic"));

  f = check_resources({{"zero", 1, 512, 0, 3}}, compiled);  // 255 x 512 > 65536
  REQUIRE(f);
  CHECK(f->reason == StaticCheckReason::resource_limit);
  CHECK_THAT(f->message, has_substring("255 registers"));

  f = check_resources({{"gone", 1, 32, 0, 4}}, compiled);
  REQUIRE(f);
  CHECK(f->reason == StaticCheckReason::undefined_kernel);

  ProgramLimits no_spills;
  no_spills.max_spill_bytes = 0;
  f = check_resources(fits, compiled, no_spills);
  REQUIRE(f);
  CHECK_THAT(f->message, has_substring("spill 16 bytes"));

  compiled.global_bytes = 4;
  f = check_resources(fits, compiled);
  REQUIRE(f);
  CHECK(f->reason == StaticCheckReason::global_state);
}

TEST_CASE("the compile source is the prelude then the program", "[reward][static_checks]") {
  const Constants c = compute_constants(small_matrix(), Op::spmv, 1, FormatSpec{});
  const std::string source = compile_source(DType::f64, c, "int a;");
  CHECK(source == render_prelude(DType::f64, c) + "int a;\n");
}
