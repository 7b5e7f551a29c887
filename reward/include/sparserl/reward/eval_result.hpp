// EvalResult: everything the evaluator learned about one program on one task, and the closed set of
// ways an evaluation can fail. A failed evaluation is a value, never an exception in the training loop:
// the stage it reached, one ErrorKind, a message a researcher can act on, and every figure measured
// on the way (compile figures, the correctness check, the timing against cuSPARSE). The reward
// (reward.hpp) is a pure function of an EvalResult; the environment copies every field into `info`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sparserl::reward {

// How far an evaluation got. Each stage is reached only if the one before it succeeded.
enum class Stage {
  parse,         // directives and launch lines read
  static_check,  // forbidden constructs, kernel/launch consistency, geometry
  compile,       // NVRTC produced a cubin
  run,           // loaded and launched on the GPU, finished without a CUDA error
  check,         // output compared with the fp64 reference on fresh inputs
  time,          // timed against cuSPARSE
};

// The closed set of failures. `none` means the evaluation went as far as it was asked to.
enum class ErrorKind {
  none,
  bad_program,       // unreadable directives: missing //@format, malformed //@launch, bad expression
  static_check,      // a forbidden construct or an inconsistent program (reason in StaticCheckReason)
  compile_error,     // NVRTC rejected the source; message holds the compiler log
  resource_limit,    // over a configured limit: registers, shared memory, padded format size, spills
  launch_error,      // the launch itself failed (bad geometry at run time, too many resources)
  illegal_address,   // the kernel faulted (out-of-bounds access, misaligned address, __trap)
  timeout,           // a stage overran its deadline; the worker was killed
  crash,             // the worker process died (signal or unexpected exit)
  wrong_answer,      // some output element is outside the tolerance of the fp64 reference
  unwritten_output,  // some output element still holds the NaN it was filled with
  input_mutated,     // an input array's checksum changed during the run
  no_gpu,            // a GPU stage was asked for where no GPU is present
  internal_error,    // the evaluator's own fault (protocol error, missing matrix): not the program's
};

std::string_view to_string(Stage stage);
std::string_view to_string(ErrorKind kind);
std::optional<ErrorKind> parse_error_kind(std::string_view text);
std::optional<Stage> parse_stage(std::string_view text);

// Figures from the compile stage, per program (summed or maxed over its kernels as noted).
struct CompileFigures {
  double compile_ms = 0;          // wall time of NVRTC in the worker
  int max_registers = 0;          // the largest per-thread register count among the kernels
  int static_smem_bytes = 0;      // the largest static shared memory among the kernels
  int spill_bytes = 0;            // spill stores + loads, summed over kernels
  int local_bytes = 0;            // the largest per-thread local memory (stack frame)
  std::string arch;               // "sm_90"
  std::string log;                // the compiler log (warnings; the error text on failure)
  bool cached = false;            // answered from the compile cache or an identical compile in flight
};

// Figures from the correctness stage.
struct CheckFigures {
  int inputs = 0;                 // number of fresh random inputs checked (plus the timed run's output)
  double max_error_ratio = 0;     // max over outputs of |y - ref| / tolerance (<= 1 passes)
  std::int64_t bad_outputs = 0;   // elements outside tolerance (or unwritten) on the failing input
  std::int64_t first_bad_row = -1;
  // Elements left unchecked because their row's exact value is outside the dtype's finite range
  // (a matrix entry or sum_j |a_ij x_j| beyond FLT_MAX in f32): any answer there is inf or NaN.
  std::int64_t unchecked_outputs = 0;
};

// Figures from the timing stage, in microseconds of summed kernel time per run (CUPTI activity).
struct TimingFigures {
  double median_us = 0, p10_us = 0, p90_us = 0;  // candidate
  int launches_per_run = 0;                      // kernels the candidate's run launched
  int repetitions = 0;
  double baseline_median_us = 0, baseline_p10_us = 0, baseline_p90_us = 0;
  std::string baseline_algorithm;                // the winning path: "CSR_ALG2", "SELL_ALG1", ...
  // Every path the baseline tried with its median (us) when it was chosen, in the worker's order:
  // "CSR_ALG1=12.3 CSR_ALG2=11.9 COO_ALG2=14.1 SELL_ALG1=wrong ..." ("wrong": its output failed the
  // check, "failed": cuSPARSE refused to run it; either way it cannot win).
  std::string baseline_paths;
  double speedup = 0;                            // baseline median / candidate median
  double gflops = 0;                             // 2 * nnz * k / candidate median
  double bandwidth_gbs = 0;                      // compulsory bytes / candidate median
  double bandwidth_fraction = 0;                 // of the device's measured copy bandwidth
  double baseline_gflops = 0, baseline_bandwidth_fraction = 0;
};

// One step of an evaluation and its wall time: where wall_ms went, for profiling (never part of a
// verdict or of the result cache's key). Names: the evaluator's own steps (checks, compile,
// gpu_request) and the GPU worker's, prefixed "gpu." (gpu.load, gpu.prepare, gpu.module, gpu.check,
// gpu.baseline, gpu.timed, gpu.final_check).
struct PhaseTime {
  std::string name;
  double ms = 0;
};

struct EvalResult {
  Stage stage = Stage::parse;     // the last stage that completed successfully (or was entered)
  ErrorKind error = ErrorKind::none;
  std::string message;            // empty on success
  std::string static_reason;      // StaticCheckReason name when error == static_check
  bool compiled = false;
  bool correct = false;
  bool timed = false;
  bool gpu_available = false;     // false: only the compile stage could run
  CompileFigures compile;
  CheckFigures check;
  TimingFigures timing;
  double conversion_ms = 0;       // format conversion + upload, reported apart from kernel time
  double wall_ms = 0;             // the whole evaluation as the caller saw it
  std::string device;             // GPU name, empty without one
  // The PCI bus id of the GPU that checked and timed it ("0000:18:00.0"): which of a host's GPUs
  // did (their names are alike), empty without one.
  std::string device_pci_bus_id;
  std::string program_digest;     // content digest of the program text
  std::string matrix_digest;
  bool result_cached = false;     // answered from the result cache or an identical evaluation in flight
  std::vector<PhaseTime> phases;  // in the order they ran

  [[nodiscard]] double phase_ms(std::string_view name) const;  // 0 when it did not run

  [[nodiscard]] bool ok() const { return error == ErrorKind::none; }
  // One JSON object with every field (stable key names; used by --json, info and logs).
  [[nodiscard]] std::string to_json() const;
};

// The longest the GPU worker waited on a candidate's kernels in `r` (its phases gpu.run - the
// checked runs -, gpu.timed and gpu.timed_batch_mismatch; 0 without them): what the evaluator's
// limit on such waits (GpuRequest::wait_deadline_ms) is scaled from. The matrix's load and
// conversion and cuSPARSE's set-up are not in it.
[[nodiscard]] double longest_candidate_wait_ms(const EvalResult& r);

}  // namespace sparserl::reward
