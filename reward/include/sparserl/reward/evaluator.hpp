// Evaluator: one call from a program text and a task to an EvalResult, the way the trainer, the
// environment and `sparserl check` see the evaluator. It owns the worker pool (worker_pool.hpp),
// the compile cache (compile_cache.hpp), a result cache and the matrix store. The flow of one
// evaluation:
//
//   parse + static checks (in-process)        -> bad_program / static_check
//   the task's matrix (MatrixStore, cached)   -> prelude constants of the program's format
//   launch geometry and padded size           -> static_check (bad_geometry) / resource_limit
//   compile cache, else a compile worker      -> compile_error / timeout / crash
//   resources of the compiled kernels         -> resource_limit
//   stop here when compile_only or without a GPU (gpu_available = false; the log says so once)
//   result cache, else a GPU worker           -> run, check and time (launch_error, wrong_answer,
//   ...)
//
// Every failure is an EvalResult with its stage, ErrorKind and message; nothing throws into the
// caller except bad configuration (std::invalid_argument from the constructor). The result cache is
// keyed by the cubin's digest, the matrix digest, the task (op, dtype, K), the format, the
// evaluated launches, the GPU and the check/timing protocol; only verdicts that belong to the
// program are cached (not timeouts, crashes or internal errors). Random inputs are seeded per
// evaluation from the protocol's seed, the cubin and the matrix, so a repeated evaluation is
// reproducible and a cached result is the result a fresh one would give. Identical evaluations
// submitted together (a policy's G completions that agree) are coalesced (in_flight.hpp): one
// compile, one GPU run, the same verdict and figures for each copy.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/datasets/task.hpp"
#include "sparserl/reward/compile_cache.hpp"
#include "sparserl/reward/eval_result.hpp"
#include "sparserl/reward/protocol.hpp"
#include "sparserl/reward/sandbox.hpp"
#include "sparserl/reward/static_checks.hpp"
#include "sparserl/reward/worker_pool.hpp"

namespace sparserl::reward {

struct EvaluatorConfig {
  // The sparserl-worker executable. Empty: find_worker_executable().
  std::filesystem::path worker_path;
  // The architecture compiled for when no GPU is present; with a GPU, the GPU's own wins.
  std::string arch{kDefaultArch};
  std::vector<std::string> nvrtc_options;  // extra NVRTC options (part of the compile cache key)

  int compile_workers = 0;  // 0: one per core
  int gpu_workers = -1;  // -1: one per visible GPU; 0: none (every evaluation stops after compile)
  std::chrono::milliseconds compile_deadline{60'000};
  std::chrono::milliseconds gpu_deadline{300'000};
  // The adaptive GPU deadline: once a task (matrix, op, dtype, K, protocol) has had GPU requests
  // that ended with the worker's answer, a later request on it gets
  // min(gpu_deadline, max(gpu_deadline_floor, gpu_deadline_factor x the slowest such answer)).
  // A hung kernel then costs seconds instead of minutes - one RL update stalled for gpu_deadline
  // is the cost it avoids. A kernel 20x slower than every answer so far is a timeout, which the
  // reward scores like any other failed run. factor <= 0: gpu_deadline always.
  // The same factor and floor also bound each wait of the GPU worker for a candidate's kernels
  // (GpuRequest::wait_deadline_ms): max(floor, factor x the longest such wait among the task's
  // answers, longest_candidate_wait_ms()). That limit leaves out the matrix's load and conversion
  // and cuSPARSE's set-up, which a cold answer on a large matrix spends seconds in, so a hung
  // kernel there costs about the floor (the whole-request deadline alone let it run ~100 s).
  double gpu_deadline_factor = 20;
  std::chrono::milliseconds gpu_deadline_floor{10'000};
  // A task without answers yet (matrix load, conversion, cuSPARSE all still to come) is first
  // calibrated: the evaluator runs its own plain CSR kernel on it under gpu_deadline, and that
  // answer starts the adaptive deadline, so a hung kernel costs the adaptive deadline on a new
  // matrix too (RL on generated matrices meets a new one every task: there, without calibration,
  // a hung kernel stalled an update for the full 300 s). Concurrent first requests share one
  // calibration. Off (or when the calibration run fails) the first request gets gpu_deadline.
  bool gpu_deadline_calibration = true;
  // A GPU request that ends in a timeout while GPU workers share a device (gpu_workers above the
  // number of visible GPUs) is run once more, and the second answer is the verdict. A fault (a trap,
  // an out-of-bounds access) on a GPU where another worker's kernel hangs is reported only once
  // that kernel is ended - at the hang's own limit, which is the faulting program's too - so the
  // faulting program's wait can end first, in a timeout that belongs to its neighbour (the 10,000-
  // evaluation soak, 8 workers on 2 H200s: 8 traps and out-of-bounds reads, each run beside one of
  // the soak's hangs; with one worker a GPU, none in 1,914). A real hang then costs two limits.
  // The second runs go one at a time, so that a hang's second run does not hold another fault.
  bool gpu_timeout_rerun = true;
  // A GPU worker that has not yet chosen cuSPARSE's path for a task takes the one an earlier
  // worker chose (GpuRequest::baseline_hint), after running it once and checking its output,
  // instead of timing every path again: a worker replaced after a faulting candidate meets its
  // tasks cold (about 45 ms a small task, 2 x H200 soak). Only where every GPU is the same model.
  bool gpu_baseline_hints = true;
  std::chrono::milliseconds startup_deadline{60'000};
  int recycle_after = 500;  // requests per worker
  SandboxLimits sandbox;

  std::size_t compile_cache_entries = 4096;  // in memory; 0 disables
  std::size_t result_cache_entries = 4096;   // in memory; 0 disables
  // On-disk store shared by runs: DIR/compile (one file per compile) and DIR/results.
  std::optional<std::filesystem::path> cache_dir;

  GpuProtocol protocol;  // seed, random inputs, warm-up, repetitions, L2 flush, check only or timed

  // Where matrices are found (datasets/matrix_store.hpp): a data directory and index folders.
  std::filesystem::path data_dir;  // empty: datasets::default_data_dir()
  std::vector<std::filesystem::path> index_dirs;
  std::size_t matrix_cache_entries = 8;  // loaded matrices kept in memory
  // What each GPU worker keeps between requests: its resident formats' and baselines' share of the
  // device, its matrix store's entries and bytes (protocol.hpp GpuCacheLimits).
  GpuCacheLimits gpu_caches;

  ProgramLimits limits;  // program size, geometry, shared memory, registers, spills, padded size

  int evaluation_threads = 0;  // threads behind submit(); 0: 2 x the workers, at least 4
  // Notices (no GPU, sandbox table, worker failures), one line each. Empty: standard error.
  std::function<void(std::string_view)> log;
};

// The program of a deadline calibration (EvaluatorConfig::gpu_deadline_calibration), for either op:
// the reference program reward/programs/spmm_csr.cu, compiled in under the kernel name
// calibrate_csr (a cubin of its own: identical cubins share GPU runs and results). Plain CSR, one
// thread per output element (per row on SpMV, where K is 1) - slow on skewed rows, which only
// makes the deadline it starts more lenient.
std::string_view deadline_calibration_program();

struct EvaluateOptions {
  bool compile_only = false;  // stop after the compile stage even where a GPU is present
  // This evaluation's check and timing protocol instead of EvaluatorConfig::protocol (the template
  // search screens with few repetitions, then re-measures finalists with the full protocol).
  std::optional<GpuProtocol> protocol;
};

struct EvaluatorStats {
  std::uint64_t evaluations = 0;
  std::uint64_t result_cache_hits = 0;
  std::uint64_t result_cache_misses = 0;
  std::uint64_t gpu_requests = 0;          // calibration runs included
  std::uint64_t deadline_calibrations = 0;  // tasks calibrated (gpu_deadline_calibration)
  // GPU timeouts run once more (gpu_timeout_rerun), and those whose second run answered otherwise.
  std::uint64_t gpu_timeouts_rerun = 0;
  std::uint64_t gpu_timeouts_overturned = 0;
  // Evaluations answered by an identical one in flight at the same time (in_flight.hpp): at the
  // compile stage (same compile cache key) and at the GPU stage (same result key).
  std::uint64_t compiles_coalesced = 0;
  std::uint64_t gpu_runs_coalesced = 0;
  // Evaluations that found their matrix being loaded (read or generated, and hashed) by another
  // evaluation and waited for it instead of loading it again.
  std::uint64_t matrix_loads_coalesced = 0;
  // Times an evaluation took its matrix from the store (read or generated, or from the store's
  // cache), coalesced waiters not counted: once per matrix first seen, and again only for a format,
  // op or K not seen before on it (its constants need the matrix) - a task seen before reads
  // neither the matrix nor the store.
  std::uint64_t matrix_loads = 0;
  CompileCacheStats compile_cache;
  WorkerPoolStats pool;
};

class Evaluator {
 public:
  // Starts the worker pool. Throws std::invalid_argument for a bad configuration (no worker
  // executable, bad counts or deadlines, an invalid sandbox) and datasets::IndexError for a broken
  // index folder.
  explicit Evaluator(EvaluatorConfig config);
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  // Evaluates one program on one task. Never throws (std::bad_alloc aside).
  EvalResult evaluate(const datasets::Task& task, std::string_view program,
                      const EvaluateOptions& options = {});
  // The same, on the evaluator's threads: finished evaluations do not wait for slow ones.
  std::future<EvalResult> submit(datasets::Task task, std::string program,
                                 EvaluateOptions options = {});

  // The architecture programs are compiled for (the GPU's when one is present; waits for the pool's
  // GPU probe the first time).
  std::string arch();
  GpuInfo gpu_info();
  [[nodiscard]] EvaluatorStats stats() const;
  [[nodiscard]] const EvaluatorConfig& config() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// How the message of an evaluation whose task's matrix could not be loaded begins (internal_error):
// `sparserl check` turns it into "unreadable input".
inline constexpr std::string_view kMatrixLoadFailure = "the task's matrix ";

// The sparserl-worker to use when none is configured: $SPARSERL_WORKER, else beside the running
// executable, else the one this build produced. Throws std::invalid_argument naming every place
// tried.
std::filesystem::path find_worker_executable();

}  // namespace sparserl::reward
