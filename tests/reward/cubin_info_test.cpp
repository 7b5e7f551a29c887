// Kernel figures read from the cubin's ELF image agree with ptxas' own report (NVRTC here returns it),
// so the compiler can rely on the cubin where an installation returns no report; malformed images are
// refused without reading out of bounds.
#include <string>

#include "catch.hpp"
#include "sparserl/reward/compiler.hpp"
#include "sparserl/reward/cubin_info.hpp"

namespace rw = sparserl::reward;

namespace {

rw::CompileResult compile_text(const std::string& source) {
  rw::CompileRequest request;
  request.source = source;
  return rw::compile(request);
}

}  // namespace

TEST_CASE("cubin figures match ptxas' report", "[reward][compiler]") {
  const std::string source = R"(typedef float value_t;
#define M 100
__device__ int counter;
__device__ float table[8];
extern "C" __global__ void big(const int* row_ptr, value_t* y) {
  __shared__ float tile[96];
  __shared__ int flags[4];
  tile[threadIdx.x % 96] = row_ptr[threadIdx.x] * 2.0f;
  flags[threadIdx.x % 4] = counter;
  __syncthreads();
  if (threadIdx.x < M) y[threadIdx.x] = tile[(threadIdx.x + 1) % 96] + flags[1] + table[threadIdx.x % 8];
}
extern "C" __global__ void small(const int* row_ptr, value_t* y) {
  if (threadIdx.x < M) y[threadIdx.x] = 0;
}
)";
  const rw::CompileResult r = compile_text(source);
  REQUIRE(r.ok);
  const rw::PtxasReport report = rw::parse_ptxas_report(r.log);
  REQUIRE(report.kernels.size() == 2);  // NVRTC here returns ptxas' report
  const auto info = rw::read_cubin_info(r.cubin);
  REQUIRE(info.has_value());
  REQUIRE(info->kernels.size() == 2);
  for (const rw::KernelFigures& logged : report.kernels) {
    const rw::KernelFigures* k = r.kernel(logged.name);
    REQUIRE(k != nullptr);
    CHECK(k->registers == logged.registers);
    CHECK(k->static_smem_bytes == logged.static_smem_bytes);
    CHECK(k->local_bytes == logged.local_bytes);
  }
  CHECK(r.kernel("big")->static_smem_bytes == 96 * 4 + 4 * 4);
  CHECK(r.kernel("small")->static_smem_bytes == 0);
  CHECK(info->global_bytes == 4 + 8 * 4);
  CHECK(r.global_bytes == report.global_bytes);
}

TEST_CASE("a kernel with a stack frame reports it from the cubin", "[reward][compiler]") {
  const std::string source = R"(
extern "C" __global__ void deep(const int* idx, float* y) {
  float local[256];
  for (int i = 0; i < 256; ++i) local[i] = idx[i * 7 % 64];
  y[threadIdx.x] = local[idx[threadIdx.x] & 255];
}
)";
  const rw::CompileResult r = compile_text(source);
  REQUIRE(r.ok);
  const rw::PtxasReport report = rw::parse_ptxas_report(r.log);
  REQUIRE(report.kernels.size() == 1);
  REQUIRE(r.kernels.size() == 1);
  CHECK(r.kernels[0].local_bytes == report.kernels[0].local_bytes);
  CHECK(r.kernels[0].local_bytes >= 1024);
}

TEST_CASE("malformed cubins are refused", "[reward][compiler]") {
  std::string error;
  CHECK_FALSE(rw::read_cubin_info("", &error).has_value());
  CHECK(error == "not a 64-bit little-endian ELF image");
  std::string fake(64, '\0');
  fake[0] = 0x7f;
  fake[1] = 'E';
  fake[2] = 'L';
  fake[3] = 'F';
  fake[4] = 2;
  fake[5] = 1;
  fake[0x28] = 0x7f;  // section headers far outside the image
  fake[0x3a] = 64;
  fake[0x3c] = 3;
  CHECK_FALSE(rw::read_cubin_info(fake, &error).has_value());
  CHECK(error == "the section header table lies outside the image");
  // A real cubin cut short is refused, not read past its end.
  const rw::CompileResult r = compile_text("extern \"C\" __global__ void k(float* y) { y[0] = 1; }");
  REQUIRE(r.ok);
  for (std::size_t cut : {r.cubin.size() / 2, r.cubin.size() - 1, std::size_t{100}}) {
    const auto info = rw::read_cubin_info(std::string_view(r.cubin).substr(0, cut));
    if (info) CHECK(info->kernels.size() <= 1);
  }
}
