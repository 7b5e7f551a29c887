// Soak (not a test) of the evaluator on the GPU host: N consecutive evaluations (default 10,000)
// mixing the correct reference programs of every format and both operations (reward/programs) with
// the adversarial ones (tests/reward/adversarial_programs.hpp: out-of-bounds reads and writes, a hang, a
// trap, stale and cached output, input writes, skipped rows, unlaunched and device-launched
// decoys) on small shared matrices and (one in 20) on generated ones of 10M+ nonzeros, f32 and f64,
// up to 16 evaluations in flight (a sliding window: the oldest is answered before the next goes in,
// so a hang or a large matrix holds up one worker, not a whole window), every evaluation with a
// fresh seed (no result cache). It checks every verdict against the program's expected one and
// measures, instead of assuming, what is left behind: the processes, file descriptors and GPU
// memory before the evaluator starts and after it is gone, and the workers' descriptors while it
// runs. Prints Markdown; exits 1 on a wrong verdict or a leak.
//
// SIGTERM or SIGINT (a device call's `timeout`, Ctrl-C, `kill` of a soak left running in the
// background) does what --seconds does: no more submissions, those in flight answered, every table
// printed. --seconds S stops submitting after S seconds (those in flight are answered) and reports what
// ran, the leak table included: a soak that fits a call's time limit still measures what is left
// behind (its summary says how many of the N evaluations ran).
//
// Where the time went: the mean of every phase (EvalResult::phases) on small and on large matrices,
// and the worker pool's counts (workers spawned, crashes, timeouts, recycled), at the end and in the
// progress lines on stderr.
//
// --workers W: GPU workers (default one per visible GPU, the evaluator's default: workers sharing a
// GPU while hung kernels were ended twice left the GPU needing a reset, docs/evaluator.md).
//
// --no-baseline-hints: every fresh GPU worker times every cuSPARSE path again
// (EvaluatorConfig::gpu_baseline_hints off).
//
//   evaluator_soak [--shared DIR] [--evaluations N] [--workers W] [--hang-every K] [--seconds S]
//                  [--in-flight F] [--no-baseline-hints]
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "adversarial_programs.hpp"
#include "sparserl/reward/evaluator.hpp"
#include "sparserl/reward/gpu_memory.hpp"

namespace rw = sparserl::reward;
namespace ds = sparserl::datasets;
namespace fs = std::filesystem;

namespace {

// Entries of a /proc/PID/fd folder (-1 when it cannot be read).
int descriptors(const std::string& pid) {
  std::error_code ec;
  int n = 0;
  for (fs::directory_iterator it("/proc/" + pid + "/fd", ec), end; !ec && it != end; it.increment(ec)) ++n;
  return ec ? -1 : n;
}

// The live (not zombie) child processes of this process.
std::vector<std::string> children() {
  std::vector<std::string> out;
  const std::string me = std::to_string(getpid());
  for (const fs::directory_entry& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos || close + 4 >= line.size()) continue;
    std::string state, parent;
    std::istringstream fields(line.substr(close + 2));
    fields >> state >> parent;
    if (parent == me && state != "Z") out.push_back(name);
  }
  return out;
}

// Set by SIGTERM / SIGINT: the soak stops submitting and reports what ran.
std::atomic<bool> stop_requested{false};
extern "C" void request_stop(int) { stop_requested = true; }

struct Program {
  std::string file;
  std::string text;
  ds::Op op;
  rw::ErrorKind expected;
  bool large_ok = true;  // also run on the large matrices
};

// The correct reference programs of every format and both operations, then the GPU tier's
// adversarial catalogue with each case's expected verdict (the hang is played apart).
std::vector<Program> soak_programs(const fs::path& source) {
  std::vector<Program> programs;
  for (const char* format : {"csr", "coo", "ell", "sell", "bsr"}) {
    for (ds::Op op : {ds::Op::spmv, ds::Op::spmm}) {
      const std::string file = std::string(ds::to_string(op)) + "_" + format + ".cu";
      programs.push_back({file, sparserl::testing::read_bytes(source / "reward" / "programs" / file), op, rw::ErrorKind::none});
    }
  }
  for (const rw::testing::AdversarialCase& c : rw::testing::adversarial_cases()) {
    if (c.verdict == rw::ErrorKind::timeout) continue;
    programs.push_back({std::string(c.name), rw::testing::adversarial_program(c.name), ds::Op::spmv, c.verdict});
  }
  return programs;
}

// The verdicts seen and the phases' summed times, per matrix size (0 small, 1 large).
struct Tally {
  std::map<std::string, int> verdicts;  // "program -> verdict" -> evaluations
  int wrong = 0;
  std::vector<std::string> phase_names;  // first-seen order
  std::map<std::string, double> phase_ms[2];
  int evaluations_of[2] = {0, 0};

  void record(int index, const Program& p, const ds::Task& task, const rw::EvalResult& r, int size) {
    const bool right = r.error == p.expected ||
                       // skipping every seventh row is invisible where those rows are empty
                       (p.expected == rw::ErrorKind::wrong_answer && r.ok()) ||
                       // a read 4 GiB past x faults only where nothing is mapped there; once
                       // the worker holds large matrices it can land in one, and the output
                       // is wrong instead (seen once in 1,100 evaluations on an H100)
                       (p.file == "oob_read" && r.error == rw::ErrorKind::wrong_answer);
    ++verdicts[p.file + " -> " + std::string(rw::to_string(r.error))];
    if (!right && ++wrong <= 20) {
      std::printf("- WRONG: evaluation %d, %s on %s (%s): %s: %s\n", index, p.file.c_str(), task.uri.c_str(),
                  std::string(ds::to_string(task.dtype)).c_str(), std::string(rw::to_string(r.error)).c_str(),
                  r.message.c_str());
    }
    ++evaluations_of[size];
    for (const rw::PhaseTime& phase : r.phases) {
      if (std::find(phase_names.begin(), phase_names.end(), phase.name) == phase_names.end()) {
        phase_names.push_back(phase.name);
      }
      phase_ms[size][phase.name] += phase.ms;
    }
  }

  void print_phases() {
    std::printf("\n| phase | mean ms, small matrices (%d evaluations) | mean ms, large (%d) |\n|---|---|---|\n",
                evaluations_of[0], evaluations_of[1]);
    for (const std::string& name : phase_names) {
      std::printf("| %s | %.2f | %.2f |\n", name.c_str(),
                  evaluations_of[0] ? phase_ms[0][name] / evaluations_of[0] : 0.0,
                  evaluations_of[1] ? phase_ms[1][name] / evaluations_of[1] : 0.0);
    }
  }
};

// The command line (the usage above).
struct SoakOptions {
  fs::path shared = fs::path(SPARSERL_BENCH_SOURCE_DIR) / ".." / "shared" / "matrices";
  int evaluations = 10000, workers = -1, hang_every = 100, in_flight = 16;
  double seconds_limit = 0;  // 0: none
  bool baseline_hints = true;
};

std::optional<SoakOptions> parse_options(int argc, char** argv) {
  SoakOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--shared" && i + 1 < argc) o.shared = argv[++i];
    else if (a == "--evaluations" && i + 1 < argc) o.evaluations = std::stoi(argv[++i]);
    else if (a == "--workers" && i + 1 < argc) o.workers = std::stoi(argv[++i]);
    else if (a == "--hang-every" && i + 1 < argc) o.hang_every = std::stoi(argv[++i]);
    else if (a == "--seconds" && i + 1 < argc) o.seconds_limit = std::stod(argv[++i]);
    else if (a == "--in-flight" && i + 1 < argc) o.in_flight = std::max(1, std::stoi(argv[++i]));
    else if (a == "--no-baseline-hints") o.baseline_hints = false;
    else {
      std::cerr << "usage: evaluator_soak [--shared DIR] [--evaluations N] [--workers W] [--hang-every K] "
                   "[--seconds S] [--in-flight F] [--no-baseline-hints]\n";
      return std::nullopt;
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<SoakOptions> soak = parse_options(argc, argv);
  if (!soak) return 2;
  const fs::path shared = soak->shared;
  const int evaluations = soak->evaluations, hang_every = soak->hang_every, in_flight = soak->in_flight;
  const double seconds_limit = soak->seconds_limit;
  const bool baseline_hints = soak->baseline_hints;
  int workers = soak->workers;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a soak cut short keeps what it printed
  std::signal(SIGTERM, request_stop);
  std::signal(SIGINT, request_stop);
  const std::vector<Program> programs = soak_programs(fs::path(SPARSERL_BENCH_SOURCE_DIR));
  const Program hang{"infinite_loop", rw::testing::adversarial_program("infinite_loop"), ds::Op::spmv,
                     rw::ErrorKind::timeout};
  const std::vector<std::string> small = {"suitesparse-v1/HB/west0479", "suitesparse-v1/Bai/cryg2500",
                                          "gen-v1/uniform?nnz_per_row=8&rows=20000&seed=5"};
  const std::vector<std::string> large = {"gen-v1/uniform?nnz_per_row=10&rows=1000000&seed=1",
                                          "gen-v1/stencil2d?nx=1100&ny=1100&points=9"};

  rw::EvaluatorConfig config;
  config.data_dir = fs::temp_directory_path() / "sparserl-evaluator-bench";
  if (fs::is_directory(shared)) config.index_dirs = {shared};
  config.gpu_workers = workers;
  config.gpu_baseline_hints = baseline_hints;
  config.gpu_deadline_floor = std::chrono::milliseconds(2000);  // a hang costs seconds, not 10
  config.protocol.time = true;

  const std::string me = std::to_string(getpid());
  const int fds_before = descriptors(me);
  const std::size_t children_before = children().size();
  const long memory_before = sparserl::reward::gpu_memory_used_mib();
  Tally tally;
  int hangs = 0, ran = 0, max_worker_fds = 0, worker_fds_at_1000 = -1;
  long memory_at_1000 = -1, memory_at_end = -1;
  const auto start = std::chrono::steady_clock::now();
  {
    rw::Evaluator ev(config);
    if (ev.gpu_info().devices.empty()) {
      std::cerr << "evaluator_soak: no GPU (" << ev.gpu_info().error << ")\n";
      return 1;
    }
    const int gpus = static_cast<int>(ev.gpu_info().devices.size());
    if (workers < 0) workers = gpus;
    std::printf("# Evaluator soak\n\ndevice: %s x %d; %d evaluations, %d GPU workers, %d in flight, a hang every %d; "
                "default protocol (3 inputs, 5 warm-ups, 50 timed repetitions, L2 flushed); baseline hints %s\n\n",
                ev.gpu_info().devices[0].name.c_str(), gpus, evaluations, workers, in_flight, hang_every,
                baseline_hints ? "on" : "off");
    // Up to in_flight evaluations are submitted ahead, so that the GPU workers overlap; when the
    // window is full the oldest is answered before the next goes in.
    struct Pending {
      int index;
      const Program* program;
      ds::Task task;
      std::future<rw::EvalResult> result;
    };
    std::deque<Pending> window;
    std::size_t next = 0;
    auto settle_oldest = [&] {
      Pending& w = window.front();
      const bool on_large = std::find(large.begin(), large.end(), w.task.uri) != large.end();
      tally.record(w.index, *w.program, w.task, w.result.get(), on_large ? 1 : 0);
      window.pop_front();
    };
    const auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    for (int i = 0; i < evaluations; ++i) {
      // --seconds: stop submitting; every evaluation submitted is answered below
      if (stop_requested || (seconds_limit > 0 && elapsed() >= seconds_limit)) break;
      ran = i + 1;
      const bool hung = hang_every > 0 && i % hang_every == hang_every - 1;
      const Program& p = hung ? hang : programs[next++ % programs.size()];
      const bool on_large = i % 20 == 19 && p.large_ok;
      const std::vector<std::string>& uris = on_large ? large : small;
      ds::Task task;
      task.uri = uris[static_cast<std::size_t>(i / 5) % uris.size()];
      task.op = p.op;
      task.dtype = i % 3 == 2 ? ds::DType::f64 : ds::DType::f32;
      task.k = p.op == ds::Op::spmm ? 8 : 1;
      rw::EvaluateOptions options;
      options.protocol = config.protocol;
      options.protocol->seed = static_cast<std::uint64_t>(i) + 1;
      hangs += hung ? 1 : 0;
      window.push_back({i, &p, task, ev.submit(task, p.text, options)});
      if (static_cast<int>(window.size()) >= in_flight) settle_oldest();
      if ((i + 1) % 1000 == 0) {
        for (const std::string& pid : children()) max_worker_fds = std::max(max_worker_fds, descriptors(pid));
        if (i + 1 == 1000) {
          memory_at_1000 = sparserl::reward::gpu_memory_used_mib();
          worker_fds_at_1000 = max_worker_fds;
        }
      }
      if ((i + 1) % 100 == 0) {
        const rw::WorkerPoolStats pool = ev.stats().pool;
        std::fprintf(stderr,
                     "%d evaluations, %d wrong, %.0f s; workers spawned %llu, crashes %llu, timeouts %llu, "
                     "GPU startup %.0f ms mean\n",
                     i + 1, tally.wrong, elapsed(), static_cast<unsigned long long>(pool.spawned),
                     static_cast<unsigned long long>(pool.crashes), static_cast<unsigned long long>(pool.timeouts),
                     pool.gpu_started > 0 ? pool.gpu_startup_ms / static_cast<double>(pool.gpu_started) : 0.0);
      }
    }
    while (!window.empty()) settle_oldest();
    memory_at_end = sparserl::reward::gpu_memory_used_mib();
    const rw::EvaluatorStats stats = ev.stats();
    const rw::WorkerPoolStats& pool = stats.pool;
    std::printf("\nworker pool: %llu workers spawned (%llu started), %llu crashes, %llu timeouts, %llu recycled\n",
                static_cast<unsigned long long>(pool.spawned), static_cast<unsigned long long>(pool.started),
                static_cast<unsigned long long>(pool.crashes), static_cast<unsigned long long>(pool.timeouts),
                static_cast<unsigned long long>(pool.recycled));
    std::printf("GPU workers started: %llu, mean %.0f ms from spawn to Hello (a replaced worker's GPU idles "
                "that long with one worker per GPU)\n",
                static_cast<unsigned long long>(pool.gpu_started),
                pool.gpu_started > 0 ? pool.gpu_startup_ms / static_cast<double>(pool.gpu_started) : 0.0);
    std::printf("GPU timeouts run again (gpu_timeout_rerun): %llu, of which answered otherwise: %llu\n",
                static_cast<unsigned long long>(stats.gpu_timeouts_rerun),
                static_cast<unsigned long long>(stats.gpu_timeouts_overturned));
    tally.print_phases();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int fds_after = descriptors(me);
  const std::size_t children_after = children().size();
  const long memory_after = sparserl::reward::gpu_memory_used_mib();

  std::printf("\n| program -> verdict | evaluations |\n|---|---|\n");
  for (const auto& [key, n] : tally.verdicts) std::printf("| %s | %d |\n", key.c_str(), n);
  std::printf("\n%d of %d evaluations (%d hangs) in %.0f s%s: %d wrong verdicts\n\n", ran, evaluations, hangs,
              seconds, ran >= evaluations     ? ""
              : stop_requested ? " (stopped by a signal)"
                               : " (stopped by --seconds)", tally.wrong);
  std::printf("| measured | before | during | after |\n|---|---|---|---|\n");
  std::printf("| this process's descriptors | %d | | %d |\n", fds_before, fds_after);
  std::printf("| child processes | %zu | | %zu |\n", children_before, children_after);
  std::printf("| most descriptors of a worker | | %d at 1000 evaluations, %d at most | |\n", worker_fds_at_1000,
              max_worker_fds);
  std::printf("| GPU memory used (MiB, nvidia-smi) | %ld | %ld at 1000, %ld at the end | %ld |\n", memory_before,
              memory_at_1000, memory_at_end, memory_after);
  const bool leaked = fds_after > fds_before || children_after > children_before ||
                      (memory_before >= 0 && memory_after > memory_before + 64);
  std::printf("\n%s\n", tally.wrong == 0 && !leaked ? "PASS: every verdict right, nothing left behind"
                                              : "FAIL: see above");
  return tally.wrong == 0 && !leaked ? 0 : 1;
}
