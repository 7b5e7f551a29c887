// NVRTC compilation of one translation unit (prelude + program) to a cubin for one GPU
// architecture, with the figures the reward and the resource checks need per kernel: registers,
// static shared memory, local (stack) bytes read from the cubin itself (cubin_info.hpp), spill stores
// and loads from ptxas' verbose report where NVRTC returns one. This runs inside a compile worker process (NVRTC can crash or run away on hostile input,
// and the worker is sandboxed for it); a compile error is a result carrying the compiler's message,
// never an exception. The library links NVRTC only: no CUDA driver, no context.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/reward/eval_result.hpp"

namespace sparserl::reward {

inline constexpr std::string_view kDefaultArch = "sm_90";  // H100 / H200

struct CompileRequest {
  std::string source;                // the whole translation unit: render_prelude() + program text
  std::string arch{kDefaultArch};    // "sm_90", "sm_80", ...: --gpu-architecture
  std::vector<std::string> options;  // extra NVRTC options (part of the cache key)
  std::string name{"program.cu"};    // the translation unit's name in messages
};

// The figures of one kernel (registers, shared memory, stack from the cubin; spills and constant bytes
// from ptxas' report, 0 where NVRTC gave none).
struct KernelFigures {
  std::string name;
  int registers = 0;
  int static_smem_bytes = 0;
  int local_bytes = 0;  // stack frame per thread
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int const_bytes = 0;  // constant bank 0 (parameters) and user __constant__ data
  friend bool operator==(const KernelFigures&, const KernelFigures&) = default;
};

struct CompileResult {
  bool ok = false;              // a cubin was produced
  bool internal_error = false;  // NVRTC itself failed (not the program): never cached
  std::string log;    // NVRTC's log: the error text on failure, warnings and ptxas' report
  std::string cubin;  // the ELF image (bytes) when ok
  std::vector<KernelFigures> kernels;
  int global_bytes = 0;  // module-scope device memory ("N bytes gmem"): state that outlives
                         // a launch; check_resources() refuses it (global_state)
  double compile_ms = 0;
  std::string arch;
  std::string nvrtc_version;  // "13.0"
  bool cached = false;        // answered from the compile cache

  [[nodiscard]] const KernelFigures* kernel(std::string_view name) const;
  // The summary EvalResult carries (max registers, max static smem, summed spills, max local).
  [[nodiscard]] CompileFigures figures() const;
  friend bool operator==(const CompileResult&, const CompileResult&) = default;
};

// The NVRTC options compile() uses for this request: the arch, -std=c++17, the ptxas verbose
// report, then request.options. Part of the cache key.
std::vector<std::string> nvrtc_options(const CompileRequest& request);

// "13.0": the NVRTC this process links (the cache key includes it).
std::string nvrtc_version();

// Compiles. Never throws for anything the source does; throws std::bad_alloc only.
CompileResult compile(const CompileRequest& request);

// Reads ptxas' `-v` report ("Compiling entry function 'X'", "Function properties for X",
// "N bytes stack frame, S bytes spill stores, L bytes spill loads", "Used R registers, ...,
// M bytes smem") into per-kernel figures, in order of appearance, and the module's "N bytes gmem".
// Public so that its parsing is tested on recorded logs.
struct PtxasReport {
  std::vector<KernelFigures> kernels;
  int global_bytes = 0;
};
PtxasReport parse_ptxas_report(std::string_view log);

// A byte-exact, versioned encoding of a CompileResult (for the disk cache and the worker protocol).
// deserialize returns nullopt for anything malformed or of another version.
std::string serialize(const CompileResult& result);
std::optional<CompileResult> deserialize_compile_result(std::string_view bytes);

}  // namespace sparserl::reward
