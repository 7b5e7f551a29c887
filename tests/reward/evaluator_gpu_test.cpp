// The evaluator on a real GPU (label gpu; each case skips itself where no GPU is present): every
// reference program is correct in every (op, format, dtype) on the shared SuiteSparse matrices and
// on generated matrices of at least 10M nonzeros; each adversarial program
// (adversarial_programs.hpp: tests/reward/programs/adversarial and its twists) gets its verdict and
// the pool recovers; a hung kernel on a task that has answered before, or on a new task (calibrated
// first), times out at the adaptive deadline; a timed evaluation reports sane figures; identical
// programs submitted together share one GPU run; 1000 mixed evaluations in a row give the right
// verdicts, leave no process behind and do not grow the GPU's memory. One case talks to a GPU
// worker through the pool alone: the digest check of the worker's matrix on every request.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "adversarial_programs.hpp"
#include "catch.hpp"
#include "child_processes.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/datasets/suitesparse_index.hpp"
#include "sparserl/reward/compiler.hpp"
#include "sparserl/reward/evaluator.hpp"
#include "sparserl/reward/gpu_memory.hpp"
#include "sparserl/reward/static_checks.hpp"
#include "sparserl/reward/worker_pool.hpp"
#include "test_support.hpp"

namespace rw = sparserl::reward;
namespace ds = sparserl::datasets;
using sparserl::reward::testing::adversarial_program;
using sparserl::reward::testing::children_of_self;
using namespace sparserl::testing;

namespace {

std::filesystem::path program_path(const std::string& name) {
  return sparserl::testing::source_dir() / "reward" / "programs" / name;
}

rw::EvaluatorConfig gpu_config(std::chrono::milliseconds gpu_deadline = std::chrono::milliseconds(120'000)) {
  rw::EvaluatorConfig c;
  c.worker_path = SPARSERL_WORKER_PATH;
  c.data_dir = sparserl::testing::scratch_dir("evaluator_gpu_data");
  c.index_dirs = {sparserl::testing::shared_matrices_dir()};
  c.gpu_deadline = gpu_deadline;
  c.protocol.seed = 7;
  c.protocol.random_inputs = 3;
  c.protocol.warmup_runs = 2;
  c.protocol.timed_runs = 10;
  c.protocol.time = false;  // check only, unless a case asks for timing
  c.log = [](std::string_view) {};
  return c;
}

// One evaluator for the whole test process, created on first use; skips without a GPU.
rw::Evaluator& shared_evaluator() {
  static std::unique_ptr<rw::Evaluator> evaluator;
  if (!evaluator) {
    evaluator = std::make_unique<rw::Evaluator>(gpu_config());
    if (evaluator->gpu_info().devices.empty()) {
      sparserl::testing::skip("no GPU: " + evaluator->gpu_info().error);
    }
  }
  return *evaluator;
}

std::vector<std::string> shared_uris() {
  const auto index = ds::SuiteSparseIndex::read(sparserl::testing::shared_matrices_dir() / "INDEX.csv");
  std::vector<std::string> uris;
  for (const auto& entry : index.entries()) uris.push_back("suitesparse-v1/" + entry.group + "/" + entry.name);
  return uris;
}

const std::array<std::string, 5> kFormats = {"csr", "coo", "ell", "sell", "bsr"};

ds::Task task(const std::string& uri, ds::Op op, ds::DType dtype, int k = 8) {
  ds::Task t;
  t.uri = uri;
  t.op = op;
  t.dtype = dtype;
  t.k = op == ds::Op::spmm ? k : 1;
  return t;
}

// Whether the GPU worker recorded a profiling phase of that name (EvalResult::phases).
bool has_phase(const rw::EvalResult& r, const std::string& name) {
  return std::any_of(r.phases.begin(), r.phases.end(),
                     [&](const rw::PhaseTime& p) { return p.name == name; });
}

std::string describe(const rw::EvalResult& r) {
  return std::string(rw::to_string(r.error)) + " at " + std::string(rw::to_string(r.stage)) + ": " + r.message;
}

// gpu_config with the adaptive deadline on: once a task has answered (or been calibrated), a
// request on it may take at most max(floor, 20 x its slowest answer).
rw::EvaluatorConfig adaptive_deadline_config(std::chrono::milliseconds gpu_deadline,
                                             std::chrono::milliseconds floor) {
  rw::EvaluatorConfig config = gpu_config(gpu_deadline);
  config.gpu_deadline_factor = 20;
  config.gpu_deadline_floor = floor;
  return config;
}

// The hung kernel (adversarial/infinite_loop.cu) on `t`, and the seconds its answer took.
std::pair<rw::EvalResult, double> evaluate_hung_kernel(rw::Evaluator& ev, const ds::Task& t) {
  const auto start = std::chrono::steady_clock::now();
  rw::EvalResult hung = ev.evaluate(t, adversarial_program("infinite_loop"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {std::move(hung), seconds};
}

// A correct program's answer on `t` (required), then the hung kernel on it.
struct HangAfterAnswer {
  rw::EvalResult good, hung;
  double seconds = 0;  // the hung kernel's answer
};
HangAfterAnswer hang_after_an_answer(rw::Evaluator& ev, const ds::Task& t) {
  HangAfterAnswer h;
  h.good = ev.evaluate(t, read_bytes(program_path("spmv_csr.cu")));
  INFO(describe(h.good));
  REQUIRE(h.good.ok());
  std::tie(h.hung, h.seconds) = evaluate_hung_kernel(ev, t);
  return h;
}

}  // namespace

TEST_CASE("every reference program is correct on every shared SuiteSparse matrix", "[reward][gpu]") {
  rw::Evaluator& ev = shared_evaluator();
  const auto uris = shared_uris();
  REQUIRE(uris.size() >= 50);
  int evaluations = 0;
  for (ds::Op op : {ds::Op::spmv, ds::Op::spmm}) {
    for (const std::string& format : kFormats) {
      const std::string name = std::string(ds::to_string(op)) + "_" + format + ".cu";
      const std::string program = read_bytes(program_path(name));
      for (ds::DType dtype : {ds::DType::f32, ds::DType::f64}) {
        std::vector<std::future<rw::EvalResult>> pending;
        for (const std::string& uri : uris) pending.push_back(ev.submit(task(uri, op, dtype), program));
        for (std::size_t i = 0; i < uris.size(); ++i) {
          const rw::EvalResult r = pending[i].get();
          INFO(name << " " << ds::to_string(dtype) << " on " << uris[i] << ": " << describe(r));
          CHECK(r.ok());
          CHECK(r.correct);
          CHECK(r.check.inputs == 3);
          ++evaluations;
        }
      }
    }
  }
  CHECK(evaluations == static_cast<int>(uris.size()) * 20);
}

TEST_CASE("every reference program is correct on generated matrices of at least 10M nonzeros",
          "[reward][gpu]") {
  rw::Evaluator& ev = shared_evaluator();
  // 10M uniform random entries; a 2D 9-point stencil with 10.9M entries; an R-MAT power-law matrix
  // (CSR, COO and SELL only: its longest row makes ELL and BSR padding refuse, tested below).
  const std::vector<std::string> large = {"gen-v1/uniform?nnz_per_row=10&rows=1000000&seed=1",
                                          "gen-v1/stencil2d?nx=1100&ny=1100&points=9"};
  const std::string rmat = "gen-v1/rmat?edge_factor=10&scale=20&seed=2";
  for (ds::Op op : {ds::Op::spmv, ds::Op::spmm}) {
    for (const std::string& format : kFormats) {
      const std::string name = std::string(ds::to_string(op)) + "_" + format + ".cu";
      const std::string program = read_bytes(program_path(name));
      for (ds::DType dtype : {ds::DType::f32, ds::DType::f64}) {
        std::vector<std::string> uris = large;
        if (format == "csr" || format == "coo" || format == "sell") uris.push_back(rmat);
        for (const std::string& uri : uris) {
          const rw::EvalResult r = ev.evaluate(task(uri, op, dtype, 8), program);
          INFO(name << " " << ds::to_string(dtype) << " on " << uri << ": " << describe(r));
          CHECK(r.ok());
          CHECK(r.correct);
        }
      }
    }
  }
  const rw::EvalResult ell = ev.evaluate(task(rmat, ds::Op::spmv, ds::DType::f32),
                                         read_bytes(program_path("spmv_ell.cu")));
  INFO(describe(ell));
  CHECK(ell.error == rw::ErrorKind::resource_limit);
}

TEST_CASE("adversarial programs get their verdicts and the pool recovers", "[reward][gpu]") {
  rw::Evaluator& ev = shared_evaluator();
  const ds::Task t = task("gen-v1/uniform?nnz_per_row=8&rows=20000&seed=5", ds::Op::spmv, ds::DType::f32);
  const std::string good = read_bytes(program_path("spmv_csr.cu"));
  for (const rw::testing::AdversarialCase& c : rw::testing::adversarial_cases()) {
    if (c.verdict == rw::ErrorKind::timeout) continue;  // the hang has cases of its own below
    const rw::EvalResult bad = ev.evaluate(t, adversarial_program(c.name));
    INFO(c.name << ": " << describe(bad));
    CHECK(bad.error == c.verdict);
    CHECK_FALSE(bad.correct);
    CHECK_THAT(bad.message, has_substring(std::string(c.message)));
    // A verdict of the program's run is the run's (or its check's), never the compile's: a fault
    // that the launch's wait throws was labelled "compile" before (session 4's benches).
    if (c.verdict != rw::ErrorKind::static_check) CHECK(bad.stage >= rw::Stage::run);
    // Where the bad outputs are known exactly, their count and the first row (the check compares
    // rows in parallel chunks; the first bad row of half_y lies in a later chunk than the first).
    if (c.name == "skip_rows") {  // rows 3, 10, ..., 19996 of 20000
      CHECK(bad.check.first_bad_row == 3);
      CHECK(bad.check.bad_outputs == 2857);
    } else if (c.name == "half_y") {
      CHECK(bad.check.first_bad_row == 10000);
      CHECK(bad.check.bad_outputs == 10000);
    } else if (c.name == "skip_rows_zero") {
      CHECK(bad.check.first_bad_row == 3);
    }
    // The next evaluation in the same pool works.
    const rw::EvalResult after = ev.evaluate(t, good);
    INFO("good program after " << c.name << ": " << describe(after));
    CHECK(after.ok());
    CHECK(after.correct);
  }
}

TEST_CASE("a kernel that never finishes times out and a fresh worker serves the next request",
          "[reward][gpu]") {
  shared_evaluator();  // skips without a GPU
  rw::Evaluator ev(gpu_config(std::chrono::milliseconds(8'000)));
  const ds::Task t = task("gen-v1/uniform?nnz_per_row=8&rows=20000&seed=5", ds::Op::spmv, ds::DType::f32);
  const rw::EvalResult hung = ev.evaluate(t, adversarial_program("infinite_loop"));
  INFO(describe(hung));
  CHECK(hung.error == rw::ErrorKind::timeout);
  CHECK(hung.stage == rw::Stage::run);
  const rw::EvalResult after = ev.evaluate(t, read_bytes(program_path("spmv_csr.cu")));
  INFO(describe(after));
  CHECK(after.ok());
  CHECK(after.correct);
}

TEST_CASE("after a task's first answers, a hung kernel on it times out at the adaptive deadline",
          "[reward][gpu]") {
  // gpu_deadline is 120 s, but once the task has answered, a request on it may take at most
  // max(floor 2 s, 20 x the slowest answer): the infinite loop costs seconds, not two minutes.
  shared_evaluator();  // skips without a GPU
  rw::Evaluator ev(adaptive_deadline_config(std::chrono::milliseconds(120'000),
                                            std::chrono::milliseconds(2'000)));
  const ds::Task t = task("gen-v1/uniform?nnz_per_row=8&rows=20000&seed=6", ds::Op::spmv, ds::DType::f32);
  const auto [good, hung, seconds] = hang_after_an_answer(ev, t);
  INFO(describe(hung) << " after " << seconds << " s");
  CHECK(hung.error == rw::ErrorKind::timeout);
  CHECK(seconds < 60);  // far below gpu_deadline (120 s); the bound itself is a few seconds
  CHECK_THAT(hung.message, !has_substring("120000 ms"));
  // Another task has no answers yet: it is calibrated first, and the pool still serves it.
  const rw::EvalResult other = ev.evaluate(
      task("gen-v1/uniform?nnz_per_row=4&rows=5000&seed=6", ds::Op::spmv, ds::DType::f64),
      read_bytes(program_path("spmv_csr.cu")));
  INFO(describe(other));
  CHECK(other.ok());
}

TEST_CASE("a hung kernel on a large matrix is ended by the worker's own wait limit", "[reward][gpu]") {
  // The pool's deadline on a whole request is 20 x the task's slowest answer, and a cold answer on
  // a large matrix (load, conversion, cuSPARSE set-up) takes seconds: about 100 s for a hang in the
  // soak. The worker's own limit on each wait for the candidate's kernels scales from those waits
  // alone (GpuRequest::wait_deadline_ms): here max(floor 1 s, 20 x a few ms).
  shared_evaluator();  // skips without a GPU
  rw::Evaluator ev(adaptive_deadline_config(std::chrono::milliseconds(120'000),
                                            std::chrono::milliseconds(1'000)));
  const ds::Task t = task("gen-v1/uniform?nnz_per_row=10&rows=1000000&seed=12", ds::Op::spmv, ds::DType::f32);
  const auto [good, hung, seconds] = hang_after_an_answer(ev, t);
  INFO("the good answer's longest wait: " << rw::longest_candidate_wait_ms(good) << " ms");
  INFO(describe(hung) << " after " << seconds << " s");
  CHECK(hung.error == rw::ErrorKind::timeout);
  CHECK_THAT(hung.message, has_substring("the GPU worker's limit on a wait"));
  CHECK(seconds < 20);
  // The worker that ended itself is replaced: the task is served again.
  const rw::EvalResult after = ev.evaluate(t, read_bytes(program_path("spmv_csr.cu")));
  INFO(describe(after));
  CHECK(after.ok());
  CHECK(after.correct);
}

TEST_CASE("a trap beside another worker's hung kernel on the same GPU gets its own verdict",
          "[reward][gpu]") {
  // Two GPU workers a device. A fault is reported only once a hung kernel of another context on
  // the GPU is ended - at the hang's limit, the trap's limit too - so the trap's wait could end in a
  // timeout first (the 10,000-evaluation soak: 8 of them). Each timeout is run once more
  // (gpu_timeout_rerun) and the second answer is the verdict: the hang's is a timeout again.
  const std::size_t devices = shared_evaluator().gpu_info().devices.size();  // skips without a GPU
  rw::EvaluatorConfig config = adaptive_deadline_config(std::chrono::milliseconds(120'000),
                                                        std::chrono::milliseconds(2'000));
  config.gpu_workers = static_cast<int>(2 * devices);
  rw::Evaluator ev(config);
  const ds::Task large = task("gen-v1/uniform?nnz_per_row=10&rows=1000000&seed=12", ds::Op::spmv, ds::DType::f32);
  const ds::Task small = task("suitesparse-v1/HB/west0479", ds::Op::spmv, ds::DType::f32);
  for (const ds::Task& t : {large, small}) {
    const rw::EvalResult good = ev.evaluate(t, read_bytes(program_path("spmv_csr.cu")));
    INFO(describe(good));
    REQUIRE(good.ok());
  }
  constexpr int kRounds = 3;
  for (int round = 0; round < kRounds; ++round) {
    std::future<rw::EvalResult> hang = ev.submit(large, adversarial_program("infinite_loop"));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the hang is on its way
    std::vector<std::future<rw::EvalResult>> traps;
    for (std::size_t d = 0; d < devices; ++d) traps.push_back(ev.submit(small, adversarial_program("trap")));
    for (auto& f : traps) {
      const rw::EvalResult trapped = f.get();
      INFO("round " << round << ": " << describe(trapped));
      CHECK(trapped.error == rw::ErrorKind::illegal_address);
    }
    const rw::EvalResult hung = hang.get();
    INFO("round " << round << ": " << describe(hung));
    CHECK(hung.error == rw::ErrorKind::timeout);
  }
  const rw::EvaluatorStats s = ev.stats();
  INFO("timeouts run again " << s.gpu_timeouts_rerun << ", answered otherwise " << s.gpu_timeouts_overturned);
  CHECK(s.gpu_timeouts_rerun >= kRounds);  // every hang, and any trap that met one
  CHECK(s.gpu_timeouts_overturned == s.gpu_timeouts_rerun - kRounds);
}

TEST_CASE("a hung kernel as a new task's first request times out at the calibrated deadline",
          "[reward][gpu]") {
  // RL on generated matrices meets a new matrix every task, so the hung kernel may well be the
  // task's first request. Calibration (the evaluator's own CSR kernel on the task, under the full
  // 120 s) starts the adaptive deadline first: the hang costs max(2 s, 20 x that answer).
  shared_evaluator();  // skips without a GPU
  rw::Evaluator ev(adaptive_deadline_config(std::chrono::milliseconds(120'000),
                                            std::chrono::milliseconds(2'000)));
  const ds::Task t = task("gen-v1/uniform?nnz_per_row=8&rows=20000&seed=7", ds::Op::spmv, ds::DType::f32);
  const auto [hung, seconds] = evaluate_hung_kernel(ev, t);
  INFO(describe(hung) << " after " << seconds << " s");
  CHECK(hung.error == rw::ErrorKind::timeout);
  CHECK(seconds < 60);  // far below gpu_deadline (120 s)
  CHECK_THAT(hung.message, !has_substring("120000 ms"));
  // The SpMM calibration kernel: a good SpMM program on a new task is calibrated, then answered.
  const ds::Task spmm = task("gen-v1/banded?n=3000&bandwidth=3&seed=8", ds::Op::spmm, ds::DType::f64, 8);
  const rw::EvalResult good = ev.evaluate(spmm, read_bytes(program_path("spmm_csr.cu")));
  INFO(describe(good));
  CHECK(good.ok());
  CHECK(good.correct);
  const rw::EvaluatorStats s = ev.stats();
  CHECK(s.deadline_calibrations == 2);  // the SpMV task and the SpMM task
  CHECK(s.gpu_requests == 4);           // two calibrations, the hung kernel, the SpMM program
}

TEST_CASE("a task whose calibration fails is not calibrated again", "[reward][gpu]") {
  // A 1 ms deadline: no GPU request can answer in time (a fresh worker creates its CUDA context
  // first), so the calibration times out. The task stays on the full deadline, and the next
  // requests on it do not pay for another calibration (a worker replaced each time).
  shared_evaluator();  // skips without a GPU
  rw::Evaluator ev(
      adaptive_deadline_config(std::chrono::milliseconds(1), std::chrono::milliseconds(1)));
  const ds::Task t = task("gen-v1/uniform?nnz_per_row=8&rows=20000&seed=9", ds::Op::spmv, ds::DType::f32);
  for (int i = 0; i < 3; ++i) {
    const rw::EvalResult r = ev.evaluate(t, read_bytes(program_path("spmv_csr.cu")));
    INFO(describe(r));
    CHECK(r.error == rw::ErrorKind::timeout);
  }
  const rw::EvaluatorStats s = ev.stats();
  CHECK(s.deadline_calibrations == 1);
  CHECK(s.gpu_requests == 1 + 3);  // one calibration, three candidates
}

TEST_CASE("a timed evaluation reports figures against cuSPARSE", "[reward][gpu]") {
  rw::Evaluator& ev = shared_evaluator();
  rw::EvaluateOptions timed;
  timed.protocol = ev.config().protocol;
  timed.protocol->time = true;
  timed.protocol->timed_runs = 20;
  const ds::Task t = task("gen-v1/stencil2d?nx=1000&ny=1000&points=5", ds::Op::spmv, ds::DType::f32);
  const rw::EvalResult r = ev.evaluate(t, read_bytes(program_path("spmv_csr.cu")), timed);
  INFO(describe(r) << "\n" << r.to_json());
  REQUIRE(r.ok());
  CHECK(r.timed);
  CHECK(r.stage == rw::Stage::time);
  CHECK(r.timing.repetitions == 20);
  CHECK(r.timing.launches_per_run == 1);
  CHECK(r.timing.median_us > 0);
  CHECK(r.timing.p10_us <= r.timing.median_us);
  CHECK(r.timing.median_us <= r.timing.p90_us);
  CHECK(r.timing.baseline_median_us > 0);
  // The default baseline is the fastest correct cuSPARSE path: one of those it tried.
  CHECK_FALSE(r.timing.baseline_algorithm.empty());
  CHECK_THAT(r.timing.baseline_paths, has_substring(r.timing.baseline_algorithm + "="));
  CHECK(r.timing.speedup == Approx(r.timing.baseline_median_us / r.timing.median_us));
  CHECK(r.timing.bandwidth_fraction > 0.05);
  CHECK(r.timing.bandwidth_fraction < 1.5);
  CHECK(r.conversion_ms >= 0);
  // COO launches its zeroing kernel and its product kernel: two kernels per run, both timed.
  const rw::EvalResult coo = ev.evaluate(t, read_bytes(program_path("spmv_coo.cu")), timed);
  INFO(describe(coo));
  REQUIRE(coo.ok());
  CHECK(coo.timing.launches_per_run == 2);
  // SpMM against cuSPARSE's SpMM.
  const rw::EvalResult spmm =
      ev.evaluate(task("gen-v1/stencil2d?nx=500&ny=500&points=5", ds::Op::spmm, ds::DType::f64, 8),
                  read_bytes(program_path("spmm_csr.cu")), timed);
  INFO(describe(spmm));
  REQUIRE(spmm.ok());
  CHECK(spmm.timed);
  CHECK(spmm.timing.speedup > 0);
}

namespace {

// "CSR_ALG1=12.30 SELL_ALG1=wrong ..." -> {"CSR_ALG1": "12.30", "SELL_ALG1": "wrong", ...}
std::map<std::string, std::string> baseline_paths(const rw::EvalResult& r) {
  std::map<std::string, std::string> out;
  std::istringstream in(r.timing.baseline_paths);
  for (std::string word; in >> word;) {
    const auto eq = word.find('=');
    REQUIRE(eq != std::string::npos);
    out[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return out;
}

}  // namespace

TEST_CASE("the baseline is the fastest correct cuSPARSE path of every format the matrix suits",
          "[reward][gpu]") {
  rw::Evaluator& ev = shared_evaluator();
  rw::EvaluateOptions timed;
  timed.protocol = ev.config().protocol;
  timed.protocol->time = true;
  timed.protocol->timed_runs = 10;
  struct Case {
    std::string uri;
    ds::Op op;
    ds::DType dtype;
    int k;
    std::vector<std::string> paths;  // each must be tried and compute the right answer
    std::vector<std::string> absent;   // prefixes no path may have (fill above 2x)
  };
  const std::vector<Case> cases = {
      {"gen-v1/blockdiag?blocks=4000&block_size=8", ds::Op::spmv, ds::DType::f32, 1,
       {"CSR_ALG1", "CSR_ALG2", "COO_ALG1", "COO_ALG2", "SELL_ALG1", "BSR_ALG1(2x2)", "BSR_ALG1(4x4)",
        "BSR_ALG1(8x8)"}, {}},
      // 1001 rows: the BSR path pads the last block row (and x and y).
      {"gen-v1/banded?n=1001&bandwidth=3", ds::Op::spmv, ds::DType::f64, 1,
       {"CSR_ALG1", "CSR_ALG2", "COO_ALG1", "COO_ALG2", "SELL_ALG1", "BSR_ALG1(2x2)"}, {}},
      // Random columns: every block format would store more than twice the nonzeros.
      {"gen-v1/uniform?nnz_per_row=8&rows=20000&seed=3", ds::Op::spmv, ds::DType::f32, 1,
       {"CSR_ALG1", "CSR_ALG2", "COO_ALG1", "COO_ALG2", "SELL_ALG1"}, {"BSR"}},
      // One long row: sliced ELL would pad every other row of its slice.
      {"gen-v1/uniform?huge_row=5000&nnz_per_row=4&rows=20000&seed=4", ds::Op::spmv, ds::DType::f32, 1,
       {"CSR_ALG1", "COO_ALG2"}, {"SELL", "BSR"}},
      {"gen-v1/blockdiag?blocks=1000&block_size=8", ds::Op::spmm, ds::DType::f32, 8,
       {"CSR_ALG1", "CSR_ALG2", "CSR_ALG3", "COO_ALG1", "COO_ALG2", "COO_ALG3", "COO_ALG4", "BSR_ALG1(8x8)"}, {}},
      {"gen-v1/banded?n=3000&bandwidth=2", ds::Op::spmm, ds::DType::f64, 32, {"CSR_ALG2"}, {}},
  };
  for (const Case& c : cases) {
    const ds::Task t = task(c.uri, c.op, c.dtype, c.k);
    const std::string program = c.op == ds::Op::spmv ? "spmv_csr.cu" : "spmm_csr.cu";
    const rw::EvalResult r = ev.evaluate(t, read_bytes(program_path(program)), timed);
    INFO(t.str() << ": " << describe(r) << "\npaths: " << r.timing.baseline_paths);
    REQUIRE(r.ok());
    const auto paths = baseline_paths(r);
    // No path may compute a wrong answer: that would mean a conversion here is broken.
    for (const auto& [name, median] : paths) CHECK(median != "wrong");
    for (const std::string& name : c.paths) {
      INFO("path " << name);
      REQUIRE(paths.count(name) == 1);
      CHECK(paths.at(name) != "failed");
    }
    for (const std::string& prefix : c.absent) {
      for (const auto& [name, median] : paths) CHECK(name.rfind(prefix, 0) != 0);
    }
    // The winner is the fastest timed path, and the baseline's median is of the same kernel.
    REQUIRE(paths.count(r.timing.baseline_algorithm) == 1);
    double fastest = 1e300;
    for (const auto& [name, median] : paths) {
      if (median != "wrong" && median != "failed") fastest = std::min(fastest, std::stod(median));
    }
    CHECK(std::stod(paths.at(r.timing.baseline_algorithm)) == Approx(fastest).epsilon(1e-9).margin(0.006));

    // baseline = csr: the CSR algorithms alone, as before bench-v2.
    rw::EvaluateOptions csr = timed;
    csr.protocol->baseline = rw::BaselineMode::csr;
    const rw::EvalResult rc = ev.evaluate(t, read_bytes(program_path(program)), csr);
    INFO("csr: " << rc.timing.baseline_paths);
    REQUIRE(rc.ok());
    for (const auto& [name, median] : baseline_paths(rc)) CHECK(name.rfind("CSR_ALG", 0) == 0);
    CHECK_THAT(rc.timing.baseline_algorithm, has_substring("CSR_ALG"));
  }
}

TEST_CASE("a worker that replaced a faulting one takes the cuSPARSE path its predecessor chose",
          "[reward][gpu]") {
  shared_evaluator();  // skips without a GPU
  const ds::Task t = task("gen-v1/uniform?nnz_per_row=8&rows=20000&seed=5", ds::Op::spmv, ds::DType::f32);
  const std::string good = read_bytes(program_path("spmv_csr.cu"));
  for (const bool hints : {true, false}) {
    INFO("gpu_baseline_hints " << hints);
    rw::EvaluatorConfig config = gpu_config();
    config.gpu_workers = 1;
    config.gpu_baseline_hints = hints;
    rw::Evaluator ev(config);
    rw::EvaluateOptions timed;
    timed.protocol = ev.config().protocol;
    timed.protocol->time = true;
    const rw::EvalResult first = ev.evaluate(t, good, timed);
    INFO("first: " << describe(first) << "; paths " << first.timing.baseline_paths);
    REQUIRE(first.ok());
    REQUIRE(first.timed);
    CHECK_FALSE(has_phase(first, "gpu.baseline_hint"));
    // The trap ends its worker: the next request meets a fresh one, without the task's baseline.
    const rw::EvalResult trap = ev.evaluate(t, adversarial_program("trap"), timed);
    INFO("trap: " << describe(trap));
    CHECK(trap.error == rw::ErrorKind::illegal_address);
    timed.protocol->seed = 8;  // another evaluation, not the result cache's answer
    const rw::EvalResult second = ev.evaluate(t, good, timed);
    INFO("second: " << describe(second) << "; paths " << second.timing.baseline_paths);
    REQUIRE(second.ok());
    REQUIRE(second.timed);
    CHECK(ev.stats().pool.gpu_started == 2);
    CHECK(has_phase(second, "gpu.baseline_hint") == hints);
    CHECK(has_phase(second, "gpu.baseline_choice") == !hints);
    CHECK(second.timing.baseline_median_us > 0);
    CHECK(second.timing.speedup > 0);
    if (hints) {
      // The path and every path's figures are the first worker's; the medians are this run's.
      CHECK(second.timing.baseline_algorithm == first.timing.baseline_algorithm);
      CHECK(second.timing.baseline_paths == first.timing.baseline_paths);
    }
  }
}

TEST_CASE("identical programs submitted together get one GPU run and the same figures",
          "[reward][gpu]") {
  // A fresh evaluator (empty caches) with timing on: a group of 8 copies of one program, as a
  // confident policy writes them, is compiled, checked and timed once; every copy gets that
  // measurement, so identical programs never differ by timing noise.
  rw::EvaluatorConfig config = gpu_config();
  config.protocol.time = true;
  rw::Evaluator ev(config);
  if (ev.gpu_info().devices.empty()) sparserl::testing::skip("no GPU: " + ev.gpu_info().error);
  const ds::Task t = task("gen-v1/stencil2d?nx=700&ny=700&points=5", ds::Op::spmv, ds::DType::f32);
  const std::string program = read_bytes(program_path("spmv_csr.cu"));
  std::vector<std::future<rw::EvalResult>> group;
  for (int i = 0; i < 8; ++i) group.push_back(ev.submit(t, program));
  int measured = 0;
  std::vector<std::string> figures;
  for (auto& f : group) {
    rw::EvalResult r = f.get();
    INFO(describe(r));
    REQUIRE(r.ok());
    REQUIRE(r.timed);
    if (!r.result_cached) ++measured;
    r.wall_ms = 0;
    r.phases.clear();  // wall times, like wall_ms
    r.result_cached = false;
    r.compile.cached = false;
    figures.push_back(r.to_json());
  }
  CHECK(measured == 1);
  for (const auto& f : figures) CHECK(f == figures.front());
  const rw::EvaluatorStats s = ev.stats();
  CHECK(s.deadline_calibrations == 1);  // the new task's one calibration, shared by the group
  CHECK(s.gpu_requests == 1 + 1);
  CHECK(s.gpu_runs_coalesced + s.result_cache_hits == 7);
}

TEST_CASE("the GPU worker checks its matrix's digest on every request", "[reward][gpu]") {
  // The worker computes the digest of a matrix it loaded once (its store keeps it beside the
  // matrix) but compares it with the request's on every request: a request naming another digest
  // is refused, and the right digest is answered before and after it, on the same loaded matrix.
  rw::WorkerPoolConfig pc;
  pc.worker_path = SPARSERL_WORKER_PATH;
  pc.compile_workers = 1;
  pc.gpu_workers = 1;
  pc.log = [](std::string_view) {};
  rw::WorkerPool pool(pc);
  const rw::GpuInfo gpu = pool.gpu_info();
  if (gpu.devices.empty()) sparserl::testing::skip("no GPU: " + gpu.error);
  const ds::Task t =
      task("gen-v1/uniform?rows=2000&nnz_per_row=8&seed=3", ds::Op::spmv, ds::DType::f32);
  const std::string digest = ds::generate(ds::MatrixUri::parse(t.uri)).digest();
  const rw::StaticCheckResult checked =
      rw::check_program(read_bytes(program_path("spmv_csr.cu")), t.op);
  REQUIRE(checked.ok());
  const rw::Constants constants = rw::compute_constants(ds::generate(ds::MatrixUri::parse(t.uri)),
                                                        t.op, t.k, checked.program->format);
  const rw::GeometryResult geometry = rw::resolve_launches(*checked.program, constants);
  REQUIRE(geometry.ok());
  rw::CompileRequest c;
  c.source = rw::compile_source(t.dtype, constants, checked.program->text);
  c.arch = gpu.devices.front().arch;
  const rw::CompileResult compiled = rw::compile(c);
  REQUIRE(compiled.ok);

  rw::GpuRequest g;
  g.task = t;
  g.data_dir = sparserl::testing::scratch_dir("worker_digest_data").string();
  g.format = checked.program->format;
  g.launches = geometry.launches;
  g.cubin = compiled.cubin;
  g.protocol.seed = 5;
  g.protocol.random_inputs = 1;
  g.protocol.time = false;
  const auto run = [&](const std::string& expected) {
    rw::GpuRequest request = g;
    request.matrix_digest = expected;
    const rw::WorkerReply reply = pool.submit(rw::WorkerRole::gpu, request).get();
    INFO(reply.message);
    REQUIRE(reply.error == rw::ErrorKind::none);
    REQUIRE(std::holds_alternative<rw::GpuResponse>(*reply.response));
    return std::get<rw::GpuResponse>(*reply.response).result;
  };
  const rw::EvalResult first = run(digest);
  INFO(describe(first));
  CHECK(first.ok());
  const rw::EvalResult wrong = run("0123456789abcdef");
  CHECK(wrong.error == rw::ErrorKind::internal_error);
  CHECK_THAT(wrong.message, has_substring("has digest " + digest + " in the GPU worker"));
  CHECK_THAT(wrong.message, has_substring("the evaluator expected 0123456789abcdef"));
  CHECK(run(digest).ok());
}

TEST_CASE("a format resident for the request's digest answers without the worker's store",
          "[reward][gpu]") {
  // The second request on a task finds its format resident under the task's digest and never
  // asks the worker's store for the matrix (no gpu.load phase): an RL run that cycles through more
  // matrices than the store holds would otherwise generate each of them again on every visit. A
  // request naming another digest still misses the resident format and is refused by the load.
  rw::EvaluatorConfig config = gpu_config();
  config.gpu_workers = 1;
  config.gpu_deadline_calibration = false;  // its run would load the matrix before `first`
  rw::Evaluator ev(config);
  if (ev.gpu_info().devices.empty()) sparserl::testing::skip("no GPU: " + ev.gpu_info().error);
  const ds::Task t =
      task("gen-v1/uniform?nnz_per_row=6&rows=3000&seed=11", ds::Op::spmv, ds::DType::f32);
  const std::string program = read_bytes(program_path("spmv_csr.cu"));
  rw::EvaluateOptions options;
  options.protocol = ev.config().protocol;
  options.protocol->time = true;
  const rw::EvalResult first = ev.evaluate(t, program, options);
  INFO("first: " << describe(first));
  REQUIRE(first.ok());
  CHECK(has_phase(first, "gpu.load"));
  options.protocol->seed = 9;  // another evaluation, not the result cache's answer
  const rw::EvalResult second = ev.evaluate(t, program, options);
  INFO("second: " << describe(second));
  REQUIRE(second.ok());
  REQUIRE(second.timed);
  CHECK_FALSE(has_phase(second, "gpu.load"));
  CHECK(has_phase(second, "gpu.prepare"));
  CHECK(second.matrix_digest == first.matrix_digest);
}

TEST_CASE("the GPU worker keeps as many formats and matrices as its cache limits say",
          "[reward][gpu]") {
  // Tasks A, B, then A again (evaluator.gpu_resident_fraction): with the default share of the
  // device A's format is still resident and A's third request asks the worker's store for
  // nothing; with a share too small for two formats (the newest always stays) it is converted
  // again from the store (gpu.load: a store hit records the phase too, so the store's own entries,
  // gpu_matrix_entries, are seen by the CPU test of the workers' --gpu-caches alone).
  const ds::Task a =
      task("gen-v1/uniform?nnz_per_row=6&rows=20000&seed=21", ds::Op::spmv, ds::DType::f32);
  const ds::Task b =
      task("gen-v1/uniform?nnz_per_row=6&rows=20000&seed=22", ds::Op::spmv, ds::DType::f32);
  const std::string program = read_bytes(program_path("spmv_csr.cu"));
  const auto third_loads = [&](double fraction, std::uint32_t entries) {
    rw::EvaluatorConfig config = gpu_config();
    config.gpu_workers = 1;
    config.gpu_deadline_calibration = false;  // its runs would load the matrices too
    config.gpu_caches.resident_fraction = fraction;
    config.gpu_caches.matrix_entries = entries;
    rw::Evaluator ev(config);
    if (ev.gpu_info().devices.empty()) sparserl::testing::skip("no GPU: " + ev.gpu_info().error);
    rw::EvaluateOptions options;
    options.protocol = ev.config().protocol;
    options.protocol->time = true;
    REQUIRE(ev.evaluate(a, program, options).ok());
    REQUIRE(ev.evaluate(b, program, options).ok());
    options.protocol->seed = 9;  // another evaluation, not the result cache's answer
    const rw::EvalResult third = ev.evaluate(a, program, options);
    INFO("fraction " << fraction << ", entries " << entries << ": " << describe(third));
    REQUIRE(third.ok());
    return has_phase(third, "gpu.load");
  };
  CHECK_FALSE(third_loads(rw::GpuCacheLimits{}.resident_fraction, 1));
  CHECK(third_loads(1e-6, 1));
}

TEST_CASE("1000 mixed evaluations: right verdicts, no leaked process, no GPU memory growth",
          "[reward][gpu]") {
  shared_evaluator();  // skips without a GPU
  rw::EvaluatorConfig config = gpu_config();
  config.gpu_workers = 1;
  config.recycle_after = 100;
  const std::size_t children_before = children_of_self().size();
  long memory_at_100 = -1, memory_at_end = -1;
  {
    rw::Evaluator ev(config);
    const std::vector<std::string> uris = {"gen-v1/uniform?nnz_per_row=8&rows=20000&seed=5",
                                           "suitesparse-v1/HB/west0479", "suitesparse-v1/Bai/cryg2500"};
    struct Kind {
      std::string name;  // a reference program's file, or an adversarial case
      std::string text;
      rw::ErrorKind expected;
    };
    const auto reference = [](const std::string& file) -> Kind {
      return {file, read_bytes(program_path(file)), rw::ErrorKind::none};
    };
    const auto adversarial = [](const std::string& name) -> Kind {
      return {name, adversarial_program(name), rw::testing::adversarial_case(name).verdict};
    };
    const std::vector<Kind> kinds = {
        reference("spmv_csr.cu"),
        reference("spmv_sell.cu"),
        reference("spmv_coo.cu"),
        adversarial("half_y"),
        reference("spmv_ell.cu"),
        adversarial("writes_input"),
        reference("spmv_bsr.cu"),
        adversarial("oob_read"),
        adversarial("skip_rows_zero"),
        adversarial("decoy_unlaunched"),
    };
    int wrong_verdicts = 0;
    for (int i = 0; i < 1000; ++i) {
      const std::size_t which = static_cast<std::size_t>(i) % kinds.size();
      rw::EvaluateOptions options;
      options.protocol = config.protocol;
      options.protocol->seed = static_cast<std::uint64_t>(1000 + i);  // no result-cache hits
      const std::string& uri = uris[static_cast<std::size_t>(i / 10) % uris.size()];
      const rw::EvalResult r = ev.evaluate(task(uri, ds::Op::spmv, ds::DType::f32), kinds[which].text, options);
      const bool right = r.error == kinds[which].expected ||
                         // skipping row 3 mod 7 is invisible where those rows are empty
                         (kinds[which].expected == rw::ErrorKind::wrong_answer && r.ok());
      if (!right) {
        ++wrong_verdicts;
        UNSCOPED_INFO("evaluation " << i << " " << kinds[which].name << " on " << uri << ": "
                                    << describe(r));
      }
      if (i == 99) memory_at_100 = sparserl::reward::gpu_memory_used_mib();
    }
    memory_at_end = sparserl::reward::gpu_memory_used_mib();
    CHECK(wrong_verdicts == 0);
    const auto stats = ev.stats();
    CHECK(stats.evaluations >= 1000);
  }
  // The evaluator is gone: every worker it started has been reaped. (At most as many as before:
  // the shared evaluator may have been replacing one of its own workers when they were counted.)
  CHECK(children_of_self().size() <= children_before);
  if (memory_at_100 >= 0 && memory_at_end >= 0) {
    INFO("GPU memory used: " << memory_at_100 << " MiB after 100 evaluations, " << memory_at_end
                             << " MiB after 1000");
    CHECK(memory_at_end <= memory_at_100 + 64);
  } else {
    WARN("nvidia-smi is not available: GPU memory growth not checked");
  }
}
