// compile_bench: evaluations per second of the compile stage against the number of compile workers,
// without and with the compile cache. The programs are the reference programs of reward/programs/
// (every op and format) in f32 and f64, each on several generated matrices: the prelude constants
// differ per matrix, so every (program, dtype, matrix) is a distinct translation unit and the
// uncached pass really compiles each one. The flow is the Evaluator's (`compile_only`): static
// checks, the matrix's constants, the compile cache, the sandboxed compile workers.
//
//   compile_bench [--workers 1,2] [--matrices 6] [--repeat 1] [--full]
//
// --full (a GPU host) runs the same jobs through the whole evaluation (compile, run, check, time
// against cuSPARSE; the default protocol, one GPU worker per visible GPU), with the compile and
// result caches both off for "uncached" and both on for "cached": the C++ figure beside
// python/bench/evaluator_throughput.py --full, whose workload and passes are these.
//
// For each worker count: a warm-up (worker start, NVRTC's first call, matrix generation) is not
// timed; then "uncached" evaluates every program with the memory cache off, and "cached" evaluates
// the same set twice with the cache on and times the second pass (every answer a cache hit). All
// evaluations of a pass are submitted at once and the pass is timed until the last one is answered.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sparserl/reward/evaluator.hpp"

using namespace sparserl::reward;
using sparserl::datasets::DType;
using sparserl::datasets::Op;
using sparserl::datasets::Task;
using Clock = std::chrono::steady_clock;

namespace {

struct Job {
  Task task;
  std::string program;
};

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) out.push_back(std::stoi(item));
  return out;
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "compile_bench: cannot read " << path << "\n";
    std::exit(1);
  }
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

// Runs every job at once; returns the seconds until the last answer and the mean in-worker compile
// time of the non-cached answers. Exits on any evaluation that is not `none`.
std::pair<double, double> run_pass(Evaluator& evaluator, const std::vector<Job>& jobs, bool full) {
  const auto start = Clock::now();
  std::vector<std::future<EvalResult>> futures;
  futures.reserve(jobs.size());
  EvaluateOptions options;
  options.compile_only = !full;
  for (const Job& j : jobs) futures.push_back(evaluator.submit(j.task, j.program, options));
  double compile_ms = 0;
  int compiled = 0;
  for (std::size_t i = 0; i < futures.size(); ++i) {
    const EvalResult r = futures[i].get();
    if (!r.ok()) {
      std::cerr << "compile_bench: " << jobs[i].task.str() << ": " << to_string(r.error) << ": "
                << r.message << "\n";
      std::exit(1);
    }
    if (!r.compile.cached) {
      compile_ms += r.compile.compile_ms;
      ++compiled;
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return {seconds, compiled > 0 ? compile_ms / compiled : 0.0};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> worker_counts = {1, 2};
  int matrices = 6;
  int repeat = 1;
  bool full = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--full")
      full = true;
    else if (a == "--workers" && i + 1 < argc)
      worker_counts = parse_list(argv[++i]);
    else if (a == "--matrices" && i + 1 < argc)
      matrices = std::stoi(argv[++i]);
    else if (a == "--repeat" && i + 1 < argc)
      repeat = std::stoi(argv[++i]);
    else {
      std::cerr << "usage: compile_bench [--workers 1,2] [--matrices 6] [--repeat 1] [--full]\n";
      return 2;
    }
  }

  const std::filesystem::path programs =
      std::filesystem::path(SPARSERL_BENCH_SOURCE_DIR) / "reward" / "programs";
  std::vector<Job> jobs;
  std::vector<Job> warmup;
  for (const char* op : {"spmv", "spmm"}) {
    for (const char* format : {"csr", "coo", "ell", "sell", "bsr"}) {
      const std::string text = read(programs / (std::string(op) + "_" + format + ".cu"));
      for (DType dtype : {DType::f32, DType::f64}) {
        for (int m = 0; m <= matrices; ++m) {
          Task t;
          // Different sizes give different prelude constants: distinct translation units.
          t.uri = "gen-v1/uniform?rows=" + std::to_string(1000 + 37 * m) +
                  "&nnz_per_row=" + std::to_string(4 + m) + "&seed=" + std::to_string(m);
          t.op = std::string(op) == "spmv" ? Op::spmv : Op::spmm;
          t.dtype = dtype;
          t.k = t.op == Op::spmm ? 8 : 1;
          // Matrix 0 only warms up (worker start, NVRTC's first call); every other matrix is
          // generated in the warm-up by one program (the uncached evaluator compiles it again).
          if (m == 0 || (t.op == Op::spmv && std::string(format) == "csr" && dtype == DType::f32)) {
            warmup.push_back({t, text});
          }
          if (m > 0) jobs.push_back({t, text});
        }
      }
    }
  }

  std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::cout << "compile_bench: " << jobs.size() << " distinct programs (10 reference programs x "
            << "f32/f64 x " << matrices << " matrices), "
            << (full ? "full evaluation" : "compile_only") << ", arch " << kDefaultArch
            << "\nmachine: " << cpu_model() << ", " << std::thread::hardware_concurrency()
            << " hardware threads; " << date << "\n\n";
  std::cout << "workers  uncached evals/s  mean NVRTC ms  cached evals/s\n";

  for (int workers : worker_counts) {
    for (int rep = 0; rep < repeat; ++rep) {
      EvaluatorConfig config;
      config.compile_workers = workers;
      config.gpu_workers = full ? -1 : 0;
      config.evaluation_threads = std::max(4, 4 * workers);
      config.matrix_cache_entries = static_cast<std::size_t>(matrices) + 2;
      config.log = [](std::string_view) {};

      EvaluatorConfig uncached_config = config;
      uncached_config.compile_cache_entries = 0;
      uncached_config.result_cache_entries = 0;
      Evaluator uncached(uncached_config);
      if (full && uncached.gpu_info().devices.empty()) {
        std::cerr << "compile_bench: --full needs a GPU: " << uncached.gpu_info().error << "\n";
        return 1;
      }
      run_pass(uncached, warmup, full);
      const auto [uncached_s, nvrtc_ms] = run_pass(uncached, jobs, full);

      Evaluator cached(config);
      run_pass(cached, warmup, full);
      run_pass(cached, jobs, full);  // fills the caches
      const auto [cached_s, unused] = run_pass(cached, jobs, full);
      (void)unused;

      char line[160];
      std::snprintf(line, sizeof(line), "%7d  %16.1f  %13.1f  %14.0f\n", workers,
                    static_cast<double>(jobs.size()) / uncached_s, nvrtc_ms,
                    static_cast<double>(jobs.size()) / cached_s);
      std::cout << line << std::flush;
    }
  }
  return 0;
}
