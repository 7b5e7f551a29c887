// Real NVRTC compiles: every reference program for every (op, format, dtype) compiles with ptxas'
// figures for each launched kernel; broken programs give compile_error with the compiler's message
// at the program's own line; a __device__ variable hidden behind a macro is caught by the gmem
// backstop. Plus the ptxas report parser on recorded logs and the result encoding.
#include "sparserl/reward/compiler.hpp"

#include <algorithm>

#include "abi_fixtures.hpp"
#include "catch.hpp"
#include "sparserl/reward/static_checks.hpp"
#include "test_support.hpp"

using namespace sparserl::reward;
using sparserl::reward::testing::program_name;
using sparserl::reward::testing::reference_program;
using sparserl::reward::testing::small_matrix;
using sparserl::testing::has_substring;

namespace {

struct Pipeline {
  StaticCheckResult checked;
  CompileResult compiled;
};

// Static checks, constants of the small matrix (K = 3 for SpMM), prelude, NVRTC.
Pipeline run(const std::string& text, Op op, DType dtype) {
  Pipeline p;
  p.checked = check_program(text, op);
  if (!p.checked.ok()) {
    INFO(p.checked.failure->str());
    REQUIRE(p.checked.ok());
  }
  const Constants constants = compute_constants(small_matrix(), op, 3, p.checked.program->format);
  CompileRequest request;
  request.source = compile_source(dtype, constants, text);
  p.compiled = compile(request);
  return p;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

int line_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  REQUIRE(at != std::string::npos);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

}  // namespace

TEST_CASE("every reference program compiles for f32 and f64", "[reward][compiler]") {
  for (Op op : kOps) {
    for (Format f : kFormats) {
      for (DType dtype : kDTypes) {
        INFO(program_name(op, f) << " " << sparserl::datasets::to_string(dtype));
        const std::string text = reference_program(op, f);
        const Pipeline p = run(text, op, dtype);
        INFO(p.compiled.log);
        REQUIRE(p.compiled.ok);
        CHECK_FALSE(p.compiled.internal_error);
        CHECK(p.compiled.cubin.size() > 1000);
        CHECK(p.compiled.cubin.substr(0, 4) ==
              "\x7f"
              "ELF");
        CHECK(p.compiled.arch == "sm_90");
        CHECK(p.compiled.nvrtc_version == nvrtc_version());
        CHECK(p.compiled.compile_ms > 0);
        CHECK(p.compiled.global_bytes == 0);
        CHECK(p.compiled.log.find("error") == std::string::npos);
        for (const std::string& kernel : p.checked.program->kernel_names()) {
          const KernelFigures* k = p.compiled.kernel(kernel);
          REQUIRE(k != nullptr);
          CHECK(k->registers > 0);
          CHECK(k->registers <= 255);
          CHECK(k->spill_store_bytes == 0);
        }
        const GeometryResult g =
            resolve_launches(*p.checked.program,
                             compute_constants(small_matrix(), op, 3, p.checked.program->format));
        REQUIRE(g.ok());
        CHECK_FALSE(check_resources(g.launches, p.compiled).has_value());
      }
    }
  }
}

TEST_CASE("broken programs give the compiler's message at the program line", "[reward][compiler]") {
  struct Case {
    Op op;
    Format format;
    DType dtype;
    std::string from, to;  // the edit that breaks the reference program
    std::string message;   // in NVRTC's log
  };
  const Case cases[] = {
      {Op::spmv, Format::csr, DType::f32, "value_t sum = 0;", "value_t sum = 0",
       "expected a \";\""},
      {Op::spmm, Format::coo, DType::f32, "Y[i] = 0;", "Y[i] = row_idx;", "error"},
      {Op::spmv, Format::sell, DType::f64, "const int width", "const in width", "error"},
  };
  for (const Case& c : cases) {
    const std::string text = replaced(reference_program(c.op, c.format), c.from, c.to);
    INFO(program_name(c.op, c.format) << ": " << c.to);
    const Pipeline p = run(text, c.op, c.dtype);
    INFO(p.compiled.log);
    CHECK_FALSE(p.compiled.ok);
    CHECK_FALSE(p.compiled.internal_error);
    CHECK(p.compiled.cubin.empty());
    CHECK(p.compiled.kernels.empty());
    CHECK_THAT(p.compiled.log, has_substring(c.message));
    // The #line reset makes the message point at the program's own line (or the one after it, for
    // a missing semicolon).
    const int line = line_of(text, c.to);
    const bool here =
        p.compiled.log.find("program.cu(" + std::to_string(line) + ")") != std::string::npos;
    const bool next =
        p.compiled.log.find("program.cu(" + std::to_string(line + 1) + ")") != std::string::npos;
    CHECK((here || next));
  }
}

TEST_CASE("every (op, format, dtype) has broken variants with their verdicts",
          "[reward][compiler]") {
  for (Op op : kOps) {
    for (Format f : kFormats) {
      const std::string good = reference_program(op, f);
      // Refused before compiling: the last parameter (the output) of the first kernel dropped.
      const Signature& sig = signature(op, f);
      const std::string last(sig.args.back().name);  // y or Y, as the reference programs name it
      const std::string dropped = replaced(good, ", value_t* __restrict__ " + last + ")", ")");
      const StaticCheckResult r = check_program(dropped, op);
      INFO(program_name(op, f));
      REQUIRE_FALSE(r.ok());
      CHECK(r.failure->reason == StaticCheckReason::signature_mismatch);
      for (DType dtype : kDTypes) {
        // Passes the checks, fails in NVRTC: an undefined name in a helper appended at the end.
        const std::string broken = good +
                                   "__device__ value_t broken_helper() { return undefined_in_" +
                                   program_name(op, f) + "; }\n";
        const int line = line_of(broken, "broken_helper");
        INFO(sparserl::datasets::to_string(dtype));
        const Pipeline p = run(broken, op, dtype);
        CHECK_FALSE(p.compiled.ok);
        CHECK_FALSE(p.compiled.internal_error);
        CHECK_THAT(p.compiled.log, has_substring("program.cu(" + std::to_string(line) +
                                                 "): error: identifier \"undefined_in_" +
                                                 program_name(op, f) + "\" is undefined"));
      }
    }
  }
}

TEST_CASE("a __device__ variable behind a macro is caught after compiling", "[reward][compiler]") {
  // The token scan cannot tell what DEV declares; ptxas' "bytes gmem" can.
  const std::string text = replaced(reference_program(Op::spmv, Format::ell), "extern \"C\"",
                                    "#define DEV __device__\nDEV value_t saved[64];\n"
                                    "extern \"C\"");
  const Pipeline p = run(text, Op::spmv, DType::f32);
  REQUIRE(p.compiled.ok);
  CHECK(p.compiled.global_bytes == 256);
  const auto f = check_resources({{"spmv_ell", 1, 256, 0, 3}}, p.compiled);
  REQUIRE(f);
  CHECK(f->reason == StaticCheckReason::global_state);
}

TEST_CASE("namespace-scope constexpr lands in global memory, a local one does not",
          "[reward][compiler]") {
  // Measured with NVRTC 13.0: documented in the global_state reason, so a policy learns #define,
  // local constexpr or __constant__ for its constants.
  const std::string base = reference_program(Op::spmv, Format::ell);
  const std::string global =
      replaced(base, "extern \"C\"", "constexpr int kUnroll = 4;\nextern \"C\"");
  const std::string global_use = replaced(global, "for (int k = 0;", "for (int k = kUnroll - 4;");
  Pipeline p = run(global_use, Op::spmv, DType::f32);
  REQUIRE(p.compiled.ok);
  CHECK(p.compiled.global_bytes > 0);
  const std::string local =
      replaced(base, "for (int k = 0;",
               "constexpr int kStart[2] = {0, 0};\n  for (int k = kStart[row % 2];");
  p = run(local, Op::spmv, DType::f32);
  REQUIRE(p.compiled.ok);
  CHECK(p.compiled.global_bytes == 0);
}

TEST_CASE("an unknown architecture is an internal error, not the program's", "[reward][compiler]") {
  CompileRequest request;
  request.source = "extern \"C\" __global__ void k(float* y) { y[0] = 1; }\n";
  request.arch = "sm_1";
  const CompileResult r = compile(request);
  CHECK_FALSE(r.ok);
  CHECK(r.internal_error);
  CHECK_THAT(r.log, has_substring("NVRTC failed"));
}

TEST_CASE("the ptxas report is parsed per entry function", "[reward][compiler]") {
  // Recorded from NVRTC 13.0 (sm_90): a device function's properties must not be taken for a
  // kernel's.
  const std::string log =
      "ptxas info    : 4 bytes gmem\n"
      "ptxas info    : Function properties for _Z6helperi\n"
      "ptxas         .     24 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'zero' for 'sm_90'\n"
      "ptxas info    : Function properties for zero\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 8 registers, used 0 barriers\n"
      "ptxas info    : Compile time = 6.762 ms\n"
      "ptxas info    : Compiling entry function 'spmv' for 'sm_90'\n"
      "ptxas info    : Function properties for spmv\n"
      "ptxas         .     1168 bytes stack frame, 1272 bytes spill stores, 2012 bytes spill "
      "loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 256 bytes cumulative stack size, 1024 "
      "bytes smem\n"
      "ptxas info    : Compile time = 37.349 ms\n";
  const PtxasReport report = parse_ptxas_report(log);
  CHECK(report.global_bytes == 4);
  REQUIRE(report.kernels.size() == 2);
  CHECK(report.kernels[0] == KernelFigures{"zero", 8, 0, 0, 0, 0, 0});
  CHECK(report.kernels[1] == KernelFigures{"spmv", 40, 1024, 1168, 1272, 2012, 0});
  // The older format (CUDA 11/12) with constant banks.
  const PtxasReport old = parse_ptxas_report(
      "ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
      "ptxas info    : Function properties for k\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 10 registers, 2048 bytes smem, 380 bytes cmem[0], 8 bytes cmem[2]\n");
  REQUIRE(old.kernels.size() == 1);
  CHECK(old.kernels[0].registers == 10);
  CHECK(old.kernels[0].static_smem_bytes == 2048);
  CHECK(old.kernels[0].const_bytes == 388);
  CHECK(parse_ptxas_report("program.cu(3): error: something").kernels.empty());
}

TEST_CASE("compile results survive their encoding byte for byte", "[reward][compiler]") {
  CompileResult r;
  r.ok = true;
  r.log = "ptxas info: ...\n";
  r.cubin = std::string(
      "\x7f"
      "ELF\0\0\1\2",
      8);
  r.kernels = {{"a", 1, 2, 3, 4, 5, 6}, {"b", 7, 8, 9, 10, 11, 12}};
  r.global_bytes = 0;
  r.compile_ms = 12.5;
  r.arch = "sm_90";
  r.nvrtc_version = "13.0";
  const std::string bytes = serialize(r);
  const auto back = deserialize_compile_result(bytes);
  REQUIRE(back.has_value());
  CHECK(*back == r);
  CHECK_FALSE(deserialize_compile_result(bytes.substr(0, bytes.size() - 1)).has_value());
  CHECK_FALSE(deserialize_compile_result(bytes + "x").has_value());
  CHECK_FALSE(deserialize_compile_result("").has_value());
  std::string other_version = bytes;
  other_version[20] = 'X';  // inside the magic string
  CHECK_FALSE(deserialize_compile_result(other_version).has_value());

  const CompileFigures f = r.figures();
  CHECK(f.max_registers == 7);
  CHECK(f.static_smem_bytes == 8);
  CHECK(f.local_bytes == 9);
  CHECK(f.spill_bytes == 4 + 5 + 10 + 11);
  CHECK(f.compile_ms == 12.5);
  CHECK(f.arch == "sm_90");
}
