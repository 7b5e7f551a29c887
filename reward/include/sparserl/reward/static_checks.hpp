// Static checks: everything the evaluator can refuse before a program reaches the compiler or the
// GPU, each refusal with a named reason and the program line. They read real tokens (lex() in
// program.hpp), so a forbidden name in a comment or a string is harmless, and the backslash-newline
// splice cannot hide one. The checks assume an attacker: forbidden names are matched as whole
// identifiers and by family (any `cuda*` runtime call, any `cudaGraph*`), macro tricks that could
// assemble or hide a name are refused outright, and mutable device state that outlives a launch (a
// kernel could cache its answer across timed runs) is refused.
//
// Three steps, in evaluation order:
//   check_program()     text + op: parse, lex, forbidden constructs, kernels, signatures
//   resolve_launches()  + the matrix's constants: launch geometry, the padded format size
//   check_resources()   + the compile result: shared memory, registers, spills, gmem
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/reward/abi.hpp"
#include "sparserl/reward/compiler.hpp"
#include "sparserl/reward/eval_result.hpp"
#include "sparserl/reward/program.hpp"

namespace sparserl::reward {

enum class StaticCheckReason {
  include,             // #include or any preprocessor directive but #define/#undef/#if*/#else/
                       // #elif/#endif/#pragma unroll|nounroll
  token_pasting,       // ## or # (stringizing) in a macro, _Pragma, __pragma
  inline_asm,          // asm, __asm__, __asm
  timer_read,          // clock, clock64, __globaltimer, %clock, __nanosleep, chrono clocks ...
  stream_api,          // cudaStream*, cudaEvent*, cudaDeviceSynchronize, cudaMemcpy*, any other
                       // cuda* runtime call, cooperative grid sync
  graph_api,           // cudaGraph*
  device_launch,       // <<<, cudaLaunch*, dynamic parallelism
  device_malloc,       // malloc, free, new, delete, alloca, cudaMalloc*, cudaFree*
  device_io,           // printf and relatives, assert (they flood the worker's output)
  global_state,        // __device__ / __managed__ variables, static locals, and (after
                       // compiling) any module-scope memory ptxas reports as gmem: memory that
                       // outlives a launch, where a kernel could keep results between timed runs
  bad_token,           // a character outside C++'s basic set outside literals (a stray backslash
                       // could spell \u0063lock), or an unterminated comment or literal
  macro_abuse,         // a spelling that hides what the checker must see: __global__ or extern
                       // in a macro body, #define/#undef of a prelude name, value_t, a signature
                       // keyword or a launched kernel's name, __attribute__((global)) and CUDA's
                       // other internal space spellings (__location__, __annotate__), tile kernels
  undefined_kernel,    // launched but not defined as extern "C" __global__ void NAME(...) { ... }
  unlaunched_kernel,   // a __global__ function that no //@launch runs (a decoy)
  signature_mismatch,  // a launched kernel's parameters differ from the registry's list
  bad_geometry,        // grid outside [1, 2^31-1], block outside [1, 1024], smem < 0, or an
                       // expression that divides by zero or overflows on this matrix
  resource_limit,      // shared memory, registers or spills over the limit, or the format's padded
                       // size over its cap
  bad_directive,       // missing or repeated //@format, malformed //@launch, unknown //@ directive
  program_too_large,   // over the byte limit
};

inline constexpr std::size_t kStaticCheckReasonCount = 19;

std::string_view to_string(StaticCheckReason reason);
std::optional<StaticCheckReason> parse_static_check_reason(std::string_view text);
// One line on what the reason means (docs and `sparserl abi`).
std::string_view describe(StaticCheckReason reason);
// The EvalResult error a refusal becomes: bad_directive -> bad_program, resource_limit ->
// resource_limit, everything else -> static_check.
ErrorKind error_kind(StaticCheckReason reason);

// The names the static checks refuse wherever they stand as an identifier (the forbidden-constructs
// table: `malloc`, `printf`, `clock`, ..., the families `cudaGraph*`, `__cuda*`, ..., and any
// `cudaX...` with X upper case, a runtime call): the reason, or nullopt for a name they let through
// (context-dependent refusals - `__managed__`, `__device__` variables, macro bodies - are not
// included). The grammar mask over BPE tokens refuses such names as new names with this.
std::optional<StaticCheckReason> forbidden_name(std::string_view identifier);
// Every identifier that starts with `prefix` (itself included) is a forbidden name: it lies in a
// family (`cudaM`, `__cudaX`).
bool forbidden_family(std::string_view prefix);
// Some identifier that starts with `prefix` (itself included) is a forbidden name (`mal` of
// `malloc`, `cu` of any `cudaX...`).
bool forbidden_below(std::string_view prefix);

// Device limits and the evaluator's resource limits. Defaults: an sm_90 device and the method's
// 48 KiB shared-memory limit.
struct ProgramLimits {
  std::size_t max_program_bytes = 64 * 1024;
  std::int64_t max_grid = 2147483647;         // gridDim.x
  int max_block = 1024;                       // blockDim.x
  std::int64_t max_shared_bytes = 48 * 1024;  // static + dynamic per block
  int max_registers_per_block = 65536;        // registers x threads (rounded to warps)
  int max_registers_per_thread = 255;
  std::int64_t max_spill_bytes = -1;  // stores + loads summed over kernels; -1: none
  std::int64_t max_stored_entries = std::int64_t{1} << 29;  // the format's padded entries
};

struct StaticCheckFailure {
  StaticCheckReason reason = StaticCheckReason::bad_directive;
  std::string message;  // what was found and why it is refused
  int line = 0;         // 1-based program line; 0 when not tied to a line
  int column = 0;

  // "timer_read at line 12, column 5: clock64 reads a timer ..." (the EvalResult message).
  [[nodiscard]] std::string str() const;
};

struct StaticCheckResult {
  std::optional<Program> program;             // set when parsing succeeded (even if a check failed)
  std::optional<StaticCheckFailure> failure;  // the first refusal, in source order within a check
  [[nodiscard]] bool ok() const { return !failure.has_value(); }
};

// Parses and checks a program for `op`. The first failure found is reported; checks run in the
// order: size, lexing, directives, forbidden constructs (in source order), kernels and signatures.
StaticCheckResult check_program(std::string_view text, Op op, const ProgramLimits& limits = {});

// One launch with its geometry evaluated on a matrix: what the GPU runner executes.
struct ResolvedLaunch {
  std::string kernel;
  std::int64_t grid = 0;
  int block = 0;
  std::int64_t smem_bytes = 0;  // dynamic shared memory
  int line = 0;
  friend bool operator==(const ResolvedLaunch&, const ResolvedLaunch&) = default;
};

struct GeometryResult {
  std::vector<ResolvedLaunch> launches;
  std::optional<StaticCheckFailure> failure;  // bad_geometry or resource_limit
  [[nodiscard]] bool ok() const { return !failure.has_value(); }
};

// Evaluates every launch's expressions on the constants and checks them against the limits, and the
// format's padded size against max_stored_entries.
GeometryResult resolve_launches(const Program& program, const Constants& constants,
                                const ProgramLimits& limits = {});

// After compilation: each launch's static + dynamic shared memory, registers x block and the spills
// against the limits (resource_limit), and that every launched kernel is in the cubin
// (undefined_kernel).
std::optional<StaticCheckFailure> check_resources(const std::vector<ResolvedLaunch>& launches,
                                                  const CompileResult& compiled,
                                                  const ProgramLimits& limits = {});

// The translation unit NVRTC compiles: the prelude, then the program text.
std::string compile_source(DType dtype, const Constants& constants, std::string_view program_text);

}  // namespace sparserl::reward
