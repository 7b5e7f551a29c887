// The Evaluator facade on this GPU-less machine: every stage that can run without a GPU, with real
// compile workers and real NVRTC, and each way an evaluation can stop before the GPU (parse, static
// check, geometry, compile error, compile deadline, resources, a missing matrix) ends as a result
// with the right stage, error kind and message. The compile cache answers repeated programs, in
// memory and from a shared disk folder, and identical programs submitted together are compiled once.
#include "sparserl/reward/evaluator.hpp"

#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "adversarial_programs.hpp"
#include "catch.hpp"
#include "test_support.hpp"

using namespace sparserl::reward;
using sparserl::datasets::DType;
using sparserl::datasets::Op;
using sparserl::datasets::Task;
using sparserl::reward::testing::adversarial_program;
using sparserl::testing::has_substring;
using std::chrono::milliseconds;

namespace {

const std::string kMatrix = "gen-v1/uniform?rows=300&nnz_per_row=6&seed=1";

EvaluatorConfig test_config(std::vector<std::string>* log = nullptr) {
  EvaluatorConfig c;
  c.worker_path = SPARSERL_WORKER_PATH;
  c.compile_workers = 2;
  c.gpu_workers = 0;
  // Each test case its own data folder: CTest runs the cases as parallel processes, and
  // scratch_dir() empties the folder it returns.
  c.data_dir = sparserl::testing::scratch_dir("evaluator_data_" + Catch::getResultCapture().getCurrentTestName());
  c.evaluation_threads = 4;
  c.log = [log](std::string_view line) {
    if (log != nullptr) log->emplace_back(line);
  };
  return c;
}

std::string read_program(const std::string& name) {
  std::ifstream in(sparserl::testing::source_dir() / "reward" / "programs" / name);
  REQUIRE(in.good());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Task task(Op op = Op::spmv, DType dtype = DType::f32, int k = 1) {
  Task t;
  t.uri = kMatrix;
  t.op = op;
  t.dtype = dtype;
  t.k = op == Op::spmm ? k : 1;
  return t;
}

// A CSR SpMV program of one kernel, spmv, with `body` ("{ ... }", the signature on line 3), launched
// with `launch`.
std::string csr_program(const std::string& body,
                        const std::string& launch = "grid=ceil_div(M, 128) block=128") {
  return "//@format csr\n//@launch spmv " + launch +
         "\nextern \"C\" __global__ void spmv(const int* __restrict__ row_ptr, "
         "const int* __restrict__ col_idx, const value_t* __restrict__ val, "
         "const value_t* __restrict__ x, value_t* __restrict__ y) " +
         body + "\n";
}

EvaluateOptions compile_only() {
  EvaluateOptions o;
  o.compile_only = true;
  return o;
}

}  // namespace

TEST_CASE("Every reference program compiles through the evaluator", "[reward][evaluator]") {
  Evaluator evaluator(test_config());
  std::vector<std::pair<std::string, std::future<EvalResult>>> futures;
  for (const char* op : {"spmv", "spmm"}) {
    for (const char* format : {"csr", "coo", "ell", "sell", "bsr"}) {
      const std::string name = std::string(op) + "_" + format + ".cu";
      const Op o = std::string(op) == "spmv" ? Op::spmv : Op::spmm;
      for (DType d : {DType::f32, DType::f64}) {
        futures.emplace_back(name + (d == DType::f32 ? " f32" : " f64"),
                             evaluator.submit(task(o, d, 8), read_program(name), compile_only()));
      }
    }
    // The deadline calibration's own program (run on the GPU before a new task's first request)
    // must pass the same checks and compile for this op.
    const Op o = std::string(op) == "spmv" ? Op::spmv : Op::spmm;
    for (DType d : {DType::f32, DType::f64}) {
      futures.emplace_back(std::string("calibration ") + op,
                           evaluator.submit(task(o, d, 8),
                                            std::string(deadline_calibration_program()),
                                            compile_only()));
    }
  }
  for (auto& [name, future] : futures) {
    const EvalResult r = future.get();
    INFO(name << ": " << r.message);
    REQUIRE(r.error == ErrorKind::none);
    REQUIRE(r.stage == Stage::compile);
    REQUIRE(r.compiled);
    REQUIRE_FALSE(r.gpu_available);
    REQUIRE(r.compile.arch == "sm_90");
    REQUIRE(r.compile.max_registers > 0);
    REQUIRE(r.program_digest.size() == 64);
    REQUIRE(r.matrix_digest.size() == 16);
  }
  REQUIRE(evaluator.stats().evaluations == 24);
  REQUIRE(evaluator.stats().deadline_calibrations == 0);  // no GPU: nothing to calibrate
}

TEST_CASE("Every adversarial program is refused by the static checks or compiles, as its case says",
          "[reward][evaluator]") {
  // reward_gpu_tests run them for their verdicts; here every twist must still make a program that
  // compiles, and the static refusals must be the ones expected, for the reason named.
  Evaluator evaluator(test_config());
  REQUIRE(sparserl::reward::testing::adversarial_cases().size() == 14);
  for (const auto& c : sparserl::reward::testing::adversarial_cases()) {
    const EvalResult r = evaluator.evaluate(task(), adversarial_program(c.name), compile_only());
    INFO(c.name << ": " << r.message);
    if (c.verdict == ErrorKind::static_check) {
      CHECK(r.error == ErrorKind::static_check);
      CHECK(r.static_reason == c.message);
      CHECK_THAT(r.message, has_substring(std::string(c.message)));
    } else {
      CHECK(r.error == ErrorKind::none);
      CHECK(r.compiled);
    }
  }
  const EvalResult plain = evaluator.evaluate(
      task(), sparserl::testing::read_bytes(sparserl::reward::testing::adversarial_path("plain_spmv.cu")),
      compile_only());
  CHECK(plain.error == ErrorKind::none);
}

TEST_CASE("the deadline calibration is the reference CSR SpMM under a kernel name of its own",
          "[reward][evaluator]") {
  // Identical cubins share GPU runs and results: the reference program submitted as a task's first
  // request must not be answered from the calibration's run (reward_gpu_tests counts the requests).
  const std::string calibration(deadline_calibration_program());
  std::string renamed = read_program("spmm_csr.cu");
  for (std::size_t at; (at = renamed.find("spmm_csr")) != std::string::npos;) {
    renamed.replace(at, 8, "calibrate_csr");
  }
  REQUIRE_THAT(calibration, has_substring(renamed));
  REQUIRE_THAT(calibration, !has_substring("spmm_csr("));
  REQUIRE_THAT(calibration, has_substring("//@launch calibrate_csr "));
}

TEST_CASE("Refusals before the compiler carry stage, kind, reason and line",
          "[reward][evaluator]") {
  Evaluator evaluator(test_config());
  SECTION("a program without //@format is a bad program at the parse stage") {
    const EvalResult r = evaluator.evaluate(task(), "extern \"C\" __global__ void k() {}");
    REQUIRE(r.error == ErrorKind::bad_program);
    REQUIRE(r.stage == Stage::parse);
    REQUIRE(r.static_reason == "bad_directive");
    REQUIRE_FALSE(r.compiled);
  }
  SECTION("a timer read is a static check at its line") {
    const EvalResult r =
        evaluator.evaluate(task(), csr_program("{\n  long long t = clock64();\n  y[0] = t;\n}"));
    REQUIRE(r.error == ErrorKind::static_check);
    REQUIRE(r.stage == Stage::static_check);
    REQUIRE(r.static_reason == "timer_read");
    REQUIRE_THAT(r.message, has_substring("line 4"));
  }
  SECTION("a grid that overflows on this matrix is bad geometry") {
    const EvalResult r =
        evaluator.evaluate(task(), csr_program("{ }", "grid=M*M*M*M*M*M*M*M block=128"));
    REQUIRE(r.error == ErrorKind::static_check);
    REQUIRE(r.static_reason == "bad_geometry");
    REQUIRE(r.matrix_digest.size() == 16);  // the matrix was loaded: geometry needs it
  }
  SECTION("too much shared memory is a resource limit") {
    const EvalResult r =
        evaluator.evaluate(task(), csr_program("{ }", "grid=1 block=128 smem=100000"));
    REQUIRE(r.error == ErrorKind::resource_limit);
    REQUIRE(r.static_reason == "resource_limit");
  }
}

TEST_CASE("A compile error is a result with the compiler's message", "[reward][evaluator]") {
  Evaluator evaluator(test_config());
  const EvalResult r = evaluator.evaluate(task(), csr_program("{\n  y[0] = undeclared_name;\n}"));
  REQUIRE(r.error == ErrorKind::compile_error);
  REQUIRE(r.stage == Stage::compile);
  REQUIRE_FALSE(r.compiled);
  REQUIRE_THAT(r.message, has_substring("undeclared_name"));
  REQUIRE_THAT(r.message, has_substring("program.cu(4)"));
  REQUIRE_THAT(r.compile.log, has_substring("undeclared_name"));
}

TEST_CASE("The compile cache answers a repeated program with the same result",
          "[reward][evaluator]") {
  Evaluator evaluator(test_config());
  const std::string program = read_program("spmv_csr.cu");
  const EvalResult first = evaluator.evaluate(task(), program);
  const EvalResult second = evaluator.evaluate(task(), program);
  REQUIRE(first.error == ErrorKind::none);
  REQUIRE_FALSE(first.compile.cached);
  REQUIRE(second.compile.cached);
  EvalResult a = first, b = second;
  a.wall_ms = b.wall_ms = 0;
  a.phases.clear();  // wall times, like wall_ms
  b.phases.clear();
  a.compile.cached = b.compile.cached = false;
  REQUIRE(a.to_json() == b.to_json());

  // Another dtype is another translation unit: compiled anew.
  const EvalResult f64 = evaluator.evaluate(task(Op::spmv, DType::f64), program);
  REQUIRE_FALSE(f64.compile.cached);
  const EvaluatorStats s = evaluator.stats();
  REQUIRE(s.compile_cache.hits == 1);
  REQUIRE(s.pool.answered == 2);
}

TEST_CASE("An evaluation says where its wall time went", "[reward][evaluator]") {
  // Without a GPU an evaluation has the evaluator's own phases; their sum fits in the wall time.
  Evaluator evaluator(test_config());
  const EvalResult r = evaluator.evaluate(task(), read_program("spmv_csr.cu"));
  REQUIRE(r.compiled);
  std::vector<std::string> names;
  double sum = 0;
  for (const PhaseTime& p : r.phases) {
    names.push_back(p.name);
    CHECK(p.ms >= 0);
    sum += p.ms;
  }
  CHECK(names == std::vector<std::string>{"checks", "compile"});
  CHECK(sum <= r.wall_ms);
  CHECK(r.phase_ms("compile") > 0);
  CHECK(r.phase_ms("gpu.timed") == 0);
  // A program refused by the static checks stops before any phase ends.
  const EvalResult refused = evaluator.evaluate(task(), "not a program");
  CHECK(refused.phases.empty());
}

TEST_CASE("The worker's wait limit scales from the candidate's waits, not the set-up", "[reward][evaluator]") {
  // longest_candidate_wait_ms(): what GpuRequest::wait_deadline_ms is scaled from - the checked
  // runs or the timed schedule, whichever took longer; a cold answer's load, conversion and
  // cuSPARSE set-up (seconds on a large matrix) are left out.
  EvalResult r;
  CHECK(longest_candidate_wait_ms(r) == 0);
  r.phases = {{"gpu.load", 900}, {"gpu.prepare", 2500}, {"gpu.run", 3.5}, {"gpu.memory", 6},
              {"gpu.baseline_setup", 800}, {"gpu.lane_wait", 40}, {"gpu.timed", 48}};
  CHECK(longest_candidate_wait_ms(r) == 48);
  r.phases.push_back({"gpu.timed_batch_mismatch", 120});
  CHECK(longest_candidate_wait_ms(r) == 120);
  r.phases = {{"gpu.load", 900}, {"gpu.run", 7}, {"gpu.run", 8}};  // a check-only request
  CHECK(longest_candidate_wait_ms(r) == 15);
}

TEST_CASE("Identical programs submitted together are compiled once", "[reward][evaluator]") {
  // A policy's group of completions often repeats one program: every copy gets the same verdict
  // from one compile (coalesced while in flight, or the compile cache after it).
  auto config = test_config();
  config.evaluation_threads = 8;
  Evaluator evaluator(config);
  const std::string program = read_program("spmv_csr.cu");
  std::vector<std::future<EvalResult>> futures;
  for (int i = 0; i < 8; ++i) futures.push_back(evaluator.submit(task(), program));
  const EvalResult other = evaluator.evaluate(task(), read_program("spmv_ell.cu"));
  int fresh = 0;
  std::set<std::string> verdicts;
  for (auto& f : futures) {
    EvalResult r = f.get();
    REQUIRE(r.error == ErrorKind::none);
    REQUIRE(r.compiled);
    if (!r.compile.cached) ++fresh;
    r.wall_ms = 0;
    r.phases.clear();  // wall times, like wall_ms
    r.compile.cached = false;
    verdicts.insert(r.to_json());
  }
  REQUIRE(fresh == 1);
  REQUIRE(verdicts.size() == 1);
  REQUIRE_FALSE(other.compile.cached);
  const EvaluatorStats s = evaluator.stats();
  REQUIRE(s.pool.answered == 2);  // one compile of the 8 copies, one of the other program
  REQUIRE(s.compiles_coalesced + s.compile_cache.hits == 7);
}

TEST_CASE("A new matrix asked for by a group at once is loaded and hashed once",
          "[reward][evaluator]") {
  // Eight candidates on a task the evaluator has not seen: one of them generates the 4M-nonzero
  // matrix and computes its digest (hundreds of milliseconds) while the others wait for it.
  auto config = test_config();
  config.evaluation_threads = 8;
  Evaluator evaluator(config);
  Task t = task();
  t.uri = "gen-v1/uniform?nnz_per_row=10&rows=400000&seed=77";
  std::vector<std::future<EvalResult>> futures;
  for (const char* format : {"csr", "coo", "ell", "sell"}) {
    for (int copy = 0; copy < 2; ++copy) {
      futures.push_back(evaluator.submit(t, read_program(std::string("spmv_") + format + ".cu"),
                                         compile_only()));
    }
  }
  std::set<std::string> digests;
  for (auto& f : futures) {
    const EvalResult r = f.get();
    INFO(r.message);
    REQUIRE(r.error == ErrorKind::none);
    digests.insert(r.matrix_digest);
  }
  CHECK(digests.size() == 1);
  const EvaluatorStats s = evaluator.stats();
  CHECK(s.matrix_loads_coalesced >= 1);
  CHECK(s.matrix_loads_coalesced <= 7);
  // Later requests find the digest and the store's copy: nothing is coalesced or loaded again.
  REQUIRE(evaluator.evaluate(t, read_program("spmv_csr.cu"), compile_only()).matrix_digest ==
          *digests.begin());
  CHECK(evaluator.stats().matrix_loads_coalesced == s.matrix_loads_coalesced);
}

TEST_CASE("A task seen before needs neither its matrix nor the store", "[reward][evaluator]") {
  // The digest and the constants of a (matrix, op, k, format) are kept once computed: an
  // evaluation on a task seen before does not load the matrix again, even after the store's LRU
  // dropped it (before, a large matrix was read or generated again for figures already known).
  auto config = test_config();
  config.matrix_cache_entries = 1;
  config.cache_dir = sparserl::testing::scratch_dir("evaluator_seen_task_cache");
  Evaluator evaluator(config);
  Task a = task(), b = task();
  b.uri = "gen-v1/banded?n=500&bandwidth=3&seed=2";
  const std::string csr = read_program("spmv_csr.cu");
  const auto comparable = [](EvalResult r) {
    r.wall_ms = 0;
    r.phases.clear();  // wall times, like wall_ms
    r.compile.cached = false;
    return r.to_json();
  };
  const EvalResult first = evaluator.evaluate(a, csr, compile_only());
  REQUIRE(first.error == ErrorKind::none);
  CHECK(evaluator.stats().matrix_loads == 1);
  REQUIRE(evaluator.evaluate(b, csr, compile_only()).error == ErrorKind::none);
  CHECK(evaluator.stats().matrix_loads == 2);  // b's load dropped a's matrix from the store

  // a again: the same verdict, digest and prelude (the compile cache answers), no load.
  const EvalResult again = evaluator.evaluate(a, csr, compile_only());
  CHECK(again.compile.cached);
  CHECK(comparable(again) == comparable(first));
  CHECK(evaluator.stats().matrix_loads == 2);
  // The checks still run on the kept constants: a grid that overflows on a's M is refused.
  const EvalResult overflow =
      evaluator.evaluate(a, csr_program("{ }", "grid=M*M*M*M*M*M*M*M block=128"), compile_only());
  CHECK(overflow.static_reason == "bad_geometry");
  CHECK(overflow.matrix_digest == first.matrix_digest);
  const EvalResult hostile = evaluator.evaluate(
      a, csr_program("{\n  long long t = clock64();\n  y[0] = t;\n}"), compile_only());
  CHECK(hostile.static_reason == "timer_read");
  CHECK(evaluator.stats().matrix_loads == 2);

  // A format, or an op and K, not seen on a before needs the matrix for its constants.
  const EvalResult ell = evaluator.evaluate(a, read_program("spmv_ell.cu"), compile_only());
  REQUIRE(ell.error == ErrorKind::none);
  CHECK(ell.matrix_digest == first.matrix_digest);
  CHECK(evaluator.stats().matrix_loads == 3);
  const EvalResult spmm = evaluator.evaluate(task(Op::spmm, DType::f32, 8),
                                             read_program("spmm_csr.cu"), compile_only());
  REQUIRE(spmm.error == ErrorKind::none);
  CHECK(evaluator.stats().matrix_loads == 4);
  // ... and gives the constants a fresh evaluator computes: its prelude, and so its compile key,
  // is the one in the shared disk cache.
  Evaluator fresh(config);
  const EvalResult fresh_ell = fresh.evaluate(a, read_program("spmv_ell.cu"), compile_only());
  CHECK(fresh_ell.compile.cached);
  CHECK(comparable(fresh_ell) == comparable(ell));
}

TEST_CASE("A disk cache folder is shared by evaluators", "[reward][evaluator]") {
  const auto dir = sparserl::testing::scratch_dir("evaluator_disk_cache");
  const std::string program = read_program("spmv_ell.cu");
  auto config = test_config();
  config.cache_dir = dir;
  {
    Evaluator first(config);
    REQUIRE_FALSE(first.evaluate(task(), program).compile.cached);
  }
  REQUIRE(std::filesystem::is_directory(dir / "compile"));
  Evaluator second(config);
  const EvalResult r = second.evaluate(task(), program);
  REQUIRE(r.error == ErrorKind::none);
  REQUIRE(r.compile.cached);
  REQUIRE(second.stats().pool.answered == 0);
}

TEST_CASE("A compile that overruns its deadline is a timeout at the compile stage",
          "[reward][evaluator]") {
  auto config = test_config();
  config.compile_deadline = milliseconds(1);
  Evaluator evaluator(config);
  const EvalResult r = evaluator.evaluate(task(), read_program("spmv_coo.cu"));
  REQUIRE(r.error == ErrorKind::timeout);
  REQUIRE(r.stage == Stage::compile);
  REQUIRE_FALSE(r.compiled);
  REQUIRE_THAT(r.message, has_substring("compile worker: CompileRequest exceeded its deadline"));
}

TEST_CASE("A missing matrix is an internal error naming the URI", "[reward][evaluator]") {
  Evaluator evaluator(test_config());
  Task t = task();
  t.uri = "suitesparse-v1/NoGroup/no_such_matrix";
  const EvalResult r = evaluator.evaluate(t, read_program("spmv_csr.cu"));
  REQUIRE(r.error == ErrorKind::internal_error);
  REQUIRE_THAT(r.message, has_substring("suitesparse-v1/NoGroup/no_such_matrix"));
  REQUIRE_FALSE(r.compiled);
}

TEST_CASE("Without a GPU an evaluation stops after the compile stage and says so once",
          "[reward][evaluator]") {
  std::vector<std::string> log;
  auto config = test_config(&log);
  config.gpu_workers = -1;  // probe: this machine has none
  config.compile_workers = 1;
  Evaluator evaluator(config);
  if (!evaluator.gpu_info().devices.empty()) {
    sparserl::testing::skip("a GPU is present: the GPU tier covers full evaluations");
  }
  const std::string program = read_program("spmv_csr.cu");
  const EvalResult a = evaluator.evaluate(task(), program);
  const EvalResult b = evaluator.evaluate(task(Op::spmv, DType::f64), program);
  for (const EvalResult& r : {a, b}) {
    REQUIRE(r.error == ErrorKind::none);
    REQUIRE(r.stage == Stage::compile);
    REQUIRE(r.compiled);
    REQUIRE_FALSE(r.gpu_available);
    REQUIRE_FALSE(r.timed);
  }
  int notices = 0;
  for (const auto& line : log) {
    if (line.find("evaluations stop after the compile stage") != std::string::npos) ++notices;
  }
  REQUIRE(notices == 1);
  REQUIRE(evaluator.arch() == "sm_90");  // the configured fallback
  REQUIRE(evaluator.stats().gpu_requests == 0);
}

TEST_CASE("The fallback arch is the one compiled for", "[reward][evaluator]") {
  auto config = test_config();
  config.arch = "sm_80";
  Evaluator evaluator(config);
  const EvalResult r = evaluator.evaluate(task(), read_program("spmv_csr.cu"));
  REQUIRE(r.error == ErrorKind::none);
  REQUIRE(r.compile.arch == "sm_80");
}

TEST_CASE("Bad evaluator configurations throw, naming the field", "[reward][evaluator]") {
  auto config = test_config();
  config.arch = "gfx90a";
  REQUIRE_THROWS_WITH(Evaluator(config), has_substring("EvaluatorConfig.arch"));
  config = test_config();
  config.protocol.timed_runs = 0;
  REQUIRE_THROWS_WITH(Evaluator(config), has_substring("EvaluatorConfig.protocol"));
  config = test_config();
  config.worker_path = "/nonexistent";
  REQUIRE_THROWS_WITH(Evaluator(config), has_substring("worker_path"));
}
