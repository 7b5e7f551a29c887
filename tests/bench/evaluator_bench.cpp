// Benchmark (not a test) of the evaluator's GPU stages, for the GPU host. It prints, as Markdown:
//   0. where an evaluation's wall time goes: RL-shaped groups (8 evaluations of one matrix - 4
//      formats x 2 seeds, submitted together) on small shared matrices and on large generated ones
//      (1M-50M nonzeros, the benchmark's large regime), evaluations per second with the default
//      protocol and one GPU worker, and the mean wall time of each phase (EvalResult::phases);
//   1. full evaluations (compile cached, check on 3 inputs, timed against cuSPARSE) per second on warm
//      tasks, small, large and one mid-sized matrix, against the number of GPU workers sharing the
//      device (their timed runs take turns on the device's timing lane);
//   2. the spread of one kernel's median over 10 evaluations (fresh seeds, no result cache) on matrices
//      over 1M nonzeros - the protocol's repeatability, with cuSPARSE's spread beside it;
//   3. cuSPARSE's best CSR algorithm and a simple CSR kernel (reward/programs/spmv_csr.cu): time,
//      GFLOP/s and fraction of the measured copy bandwidth, on the shared matrices and on large
//      generated ones;
//   4. (--only devices, on a host of several GPUs) section 1's workload over the first 1, 2, 4 GPUs
//      (--gpus), one GPU worker per GPU: evaluations per second, scaling efficiency, and how many
//      evaluations each GPU timed;
//   5. (--only warm) section 1's warm workload with one GPU worker, and the mean wall time of each
//      phase of the timed pass's evaluations: where a warm evaluation's time goes (section 0's
//      groups are cold: every task new).
//
//   evaluator_bench [--shared DIR] [--reps N] [--quick] [--gpus 1,2,4] [--seeds 2]
//                   [--only profile|throughput|spread|kernels|devices|warm]
//   (run from the build folder or anywhere)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/datasets/large_regime.hpp"
#include "sparserl/datasets/suitesparse_index.hpp"
#include "sparserl/reward/evaluator.hpp"

namespace rw = sparserl::reward;
namespace ds = sparserl::datasets;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  std::optional<std::string> text = ds::read_file_bytes(path);
  if (!text) throw std::runtime_error("cannot read " + path.string());
  return std::move(*text);
}

ds::Task spmv_task(const std::string& uri, ds::DType dtype = ds::DType::f32) {
  ds::Task t;
  t.uri = uri;
  t.op = ds::Op::spmv;
  t.dtype = dtype;
  return t;
}

rw::EvaluatorConfig config(const fs::path& shared, int gpu_workers, int reps) {
  rw::EvaluatorConfig c;
  c.data_dir = fs::temp_directory_path() / "sparserl-evaluator-bench";
  if (fs::is_directory(shared)) c.index_dirs = {shared};
  c.gpu_workers = gpu_workers;
  c.protocol.seed = 1;
  c.protocol.random_inputs = 3;
  c.protocol.warmup_runs = 5;
  c.protocol.timed_runs = reps;
  c.protocol.time = true;
  c.log = [](std::string_view line) { std::cerr << "  [evaluator] " << line << "\n"; };
  return c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

rw::EvaluateOptions with_seed(const rw::Evaluator& ev, std::uint64_t seed) {
  rw::EvaluateOptions o;
  o.protocol = ev.config().protocol;
  o.protocol->seed = seed;
  return o;
}

// Groups of evaluations as RL makes them: per matrix, every program with `seeds` seeds, submitted
// together; prints evaluations/s and the mean of every phase over the evaluations.
void profile_groups(const std::string& title, const fs::path& shared, int reps,
                    const std::vector<std::string>& uris, const std::vector<std::string>& programs, int seeds) {
  rw::Evaluator ev(config(shared, 1, reps));
  std::vector<std::string> names;  // phase names in first-seen order
  std::vector<double> sums;
  auto add = [&](const rw::EvalResult& r) {
    for (const rw::PhaseTime& p : r.phases) {
      const auto it = std::find(names.begin(), names.end(), p.name);
      if (it == names.end()) {
        names.push_back(p.name);
        sums.push_back(p.ms);
      } else {
        sums[static_cast<std::size_t>(it - names.begin())] += p.ms;
      }
    }
  };
  int evaluations = 0, ok = 0, timed = 0;
  double wall_sum = 0;
  std::string failures;
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t seed = 1000;
  for (const std::string& uri : uris) {
    std::vector<std::future<rw::EvalResult>> pending;
    for (int s = 0; s < seeds; ++s) {
      for (const std::string& program : programs) pending.push_back(ev.submit(spmv_task(uri), program, with_seed(ev, ++seed)));
    }
    for (auto& f : pending) {
      const rw::EvalResult r = f.get();
      ++evaluations;
      ok += r.ok() ? 1 : 0;
      timed += r.timed ? 1 : 0;
      wall_sum += r.wall_ms;
      add(r);
      if (!r.ok() && failures.size() < 400) failures += " " + uri + ": " + r.message + ";";
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("### %s\n\n%d evaluations on %zu matrices (%d ok, %d timed) in %.2f s: **%.1f evaluations/s**; "
              "mean evaluation wall time %.1f ms (evaluations overlap)\n\n| phase | mean ms per evaluation |\n|---|---|\n",
              title.c_str(), evaluations, uris.size(), ok, timed, s, evaluations / s,
              evaluations ? wall_sum / evaluations : 0.0);
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::printf("| %s | %.2f |\n", names[i].c_str(), evaluations ? sums[i] / evaluations : 0.0);
  }
  if (!failures.empty()) std::printf("\nfailures:%s\n", failures.c_str());
  std::printf("\n");
  std::fflush(stdout);
}

std::vector<std::string> small_matrices(const fs::path& shared, std::size_t count) {
  std::vector<std::string> uris;
  if (!fs::is_directory(shared)) return uris;
  const auto index = ds::SuiteSparseIndex::read(shared / "INDEX.csv");
  for (const auto& e : index.entries()) {
    if (uris.size() < count) uris.push_back("suitesparse-v1/" + e.group + "/" + e.name);
  }
  return uris;
}

// The large regime's train matrices up to `max_nnz` nonzeros, one per family.
std::vector<std::string> large_matrices(std::int64_t max_nnz) {
  std::vector<std::string> uris, families;
  for (const ds::LargeRegimeMatrix& m : ds::large_regime_v1()) {
    if (m.part != ds::SplitPart::train || m.nnz > max_nnz) continue;
    if (std::find(families.begin(), families.end(), m.family) != families.end()) continue;
    families.push_back(m.family);
    uris.push_back(m.uri);
  }
  return uris;
}

// One warm workload on `ev` (section 1 and 4): two passes warm the compile cache, calibrations,
// baselines and resident formats; then every matrix gets 4 x `seeds` new evaluations (4 formats x
// fresh seeds: no result cache; --seeds, default 2), all submitted at once and timed.
struct TimedPass {
  int evaluations = 0, ok = 0;
  double seconds = 0;
  std::map<std::string, int> by_device;  // evaluations per GPU (EvalResult::device_pci_bus_id)
  std::vector<std::pair<std::string, double>> phase_ms;  // summed over the evaluations, first-seen order
  std::string failures;
};

TimedPass timed_pass(rw::Evaluator& ev, const std::vector<std::string>& uris,
                     const std::vector<std::string>& pool_programs, int seeds) {
  std::uint64_t seed = 1;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<std::future<rw::EvalResult>> warm;
    for (const std::string& uri : uris) {
      for (const std::string& program : pool_programs) warm.push_back(ev.submit(spmv_task(uri), program, with_seed(ev, ++seed)));
    }
    for (auto& f : warm) f.get();
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::future<rw::EvalResult>> pending;
  for (const std::string& uri : uris) {
    for (int s = 0; s < seeds; ++s) {
      for (const std::string& program : pool_programs) pending.push_back(ev.submit(spmv_task(uri), program, with_seed(ev, ++seed)));
    }
  }
  TimedPass out;
  for (auto& f : pending) {
    const rw::EvalResult r = f.get();
    out.ok += r.ok() ? 1 : 0;
    ++out.by_device[r.device_pci_bus_id.empty() ? "(none)" : r.device_pci_bus_id];
    for (const rw::PhaseTime& p : r.phases) {
      const auto it = std::find_if(out.phase_ms.begin(), out.phase_ms.end(),
                                   [&](const auto& seen) { return seen.first == p.name; });
      if (it == out.phase_ms.end()) out.phase_ms.emplace_back(p.name, p.ms);
      else it->second += p.ms;
    }
    if (!r.ok() && out.failures.size() < 400) out.failures += " " + r.message + ";";
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.evaluations = static_cast<int>(pending.size());
  return out;
}

std::vector<std::pair<std::string, std::vector<std::string>>> workloads(const fs::path& shared,
                                                                        bool quick) {
  return {{"small (shared SuiteSparse)", small_matrices(shared, 8)},
          {"large (large regime, 1M-50M nnz)", large_matrices(quick ? 8'000'000 : 50'000'000)},
          {"mid (uniform, 3.2M nnz; the figure before this issue)", {"gen-v1/uniform?nnz_per_row=16&rows=200000&seed=3"}}};
}

// Full evaluations per second on warm tasks (section 1).
void throughput_section(const fs::path& shared, int reps, bool quick, const std::vector<std::string>& pool_programs,
                        int seeds) {
  std::printf("## Full evaluations per second, warm tasks\n\nCompile cache, calibrations, baselines and "
              "resident formats warmed by two passes; then every matrix gets %d new evaluations (4 formats x %d "
              "fresh seeds: no result cache), all submitted at once.\n\n"
              "| matrices | GPU workers | evaluations | seconds | evaluations/s |\n|---|---|---|---|---|\n",
              4 * seeds, seeds);
  for (const auto& [name, uris] : workloads(shared, quick)) {
    for (int workers : {1, 2, 4}) {
      rw::Evaluator ev(config(shared, workers, reps));
      const TimedPass t = timed_pass(ev, uris, pool_programs, seeds);
      std::printf("| %s | %d | %d (%d ok) | %.2f | %.1f |\n", name.c_str(), workers, t.evaluations, t.ok,
                  t.seconds, t.evaluations / t.seconds);
      std::fflush(stdout);
    }
  }
}

// Section 1's warm workload, one GPU worker, with the mean phases of the timed pass (section 5).
void warm_section(const fs::path& shared, int reps, bool quick, const std::vector<std::string>& pool_programs,
                  int seeds) {
  std::printf("\n## Where a warm evaluation's time goes (1 GPU worker)\n\nSection 1's workload: two passes warm "
              "the caches, then %d new evaluations a matrix (4 formats x %d fresh seeds), submitted at once; the "
              "phases are the means over those evaluations (their GPU phases do not overlap: one worker).\n",
              4 * seeds, seeds);
  for (const auto& [name, uris] : workloads(shared, quick)) {
    rw::Evaluator ev(config(shared, 1, reps));
    const TimedPass t = timed_pass(ev, uris, pool_programs, seeds);
    std::printf("\n### %s\n\n%d evaluations (%d ok) in %.2f s: **%.1f evaluations/s**\n\n"
                "| phase | mean ms per evaluation |\n|---|---|\n",
                name.c_str(), t.evaluations, t.ok, t.seconds, t.evaluations / t.seconds);
    for (const auto& [phase, ms] : t.phase_ms) {
      std::printf("| %s | %.2f |\n", phase.c_str(), t.evaluations ? ms / t.evaluations : 0.0);
    }
    if (!t.failures.empty()) std::printf("\nfailures:%s\n", t.failures.c_str());
    std::fflush(stdout);
  }
}

// The same workload over the first N GPUs of the host, one GPU worker each (section 4): N comes
// from `counts` (those above the visible devices are left out); CUDA_VISIBLE_DEVICES limits what
// the evaluator's probe and workers see. Scaling efficiency = rate at N / (N x rate at 1).
void devices_section(const fs::path& shared, int reps, bool quick,
                     const std::vector<std::string>& pool_programs, int seeds, const std::vector<int>& counts,
                     int visible) {
  std::vector<std::string> ids;  // the caller's device list, or 0 .. visible-1
  if (const char* given = std::getenv("CUDA_VISIBLE_DEVICES"); given != nullptr && *given) {
    std::stringstream list(given);
    for (std::string id; std::getline(list, id, ',');) ids.push_back(id);
  }
  for (int d = static_cast<int>(ids.size()); d < visible; ++d) ids.push_back(std::to_string(d));
  std::printf("\n## Full evaluations per second over several GPUs (one GPU worker per GPU)\n\n"
              "Section 1's warm workload; the evaluator sees the first N GPUs. Per device: the evaluations "
              "it timed (EvalResult::device_pci_bus_id).\n\n"
              "| matrices | GPUs | evaluations | seconds | evaluations/s | scaling efficiency | per device |\n"
              "|---|---|---|---|---|---|---|\n");
  for (const auto& [name, uris] : workloads(shared, quick)) {
    double one = 0;
    for (int n : counts) {
      if (n > visible) continue;
      std::string list;
      for (int d = 0; d < n; ++d) list += (d ? "," : "") + ids[static_cast<std::size_t>(d)];
      ::setenv("CUDA_VISIBLE_DEVICES", list.c_str(), 1);
      rw::Evaluator ev(config(shared, -1, reps));
      const TimedPass t = timed_pass(ev, uris, pool_programs, seeds);
      const double rate = t.evaluations / t.seconds;
      if (n == counts.front()) one = rate / n;
      std::string per_device;
      for (const auto& [bus, count] : t.by_device) {
        per_device += (per_device.empty() ? "" : ", ") + bus + ": " + std::to_string(count);
      }
      std::printf("| %s | %d | %d (%d ok) | %.2f | %.1f | %.0f%% | %s |\n", name.c_str(), n, t.evaluations, t.ok,
                  t.seconds, rate, one > 0 ? 100.0 * rate / (n * one) : 0.0, per_device.c_str());
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  fs::path shared = fs::path(SPARSERL_BENCH_SOURCE_DIR) / ".." / "shared" / "matrices";
  int reps = 50;
  int seeds = 2;  // fresh seeds per matrix and program in a timed pass
  bool quick = false;
  std::string only;
  std::vector<int> gpu_counts = {1, 2, 4};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--shared" && i + 1 < argc) shared = argv[++i];
    else if (a == "--reps" && i + 1 < argc) reps = std::stoi(argv[++i]);
    else if (a == "--quick") quick = true;
    else if (a == "--seeds" && i + 1 < argc) seeds = std::max(1, std::stoi(argv[++i]));
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else if (a == "--gpus" && i + 1 < argc) {
      gpu_counts.clear();
      std::stringstream list(argv[++i]);
      for (std::string n; std::getline(list, n, ',');) gpu_counts.push_back(std::stoi(n));
    } else {
      std::cerr << "usage: evaluator_bench [--shared DIR] [--reps N] [--quick] [--gpus 1,2,4] [--seeds 2] "
                   "[--only profile|throughput|spread|kernels|devices|warm]\n";
      return 2;
    }
  }
  // The devices section runs only when asked for (it needs a host of several GPUs), and so does warm.
  const auto wanted = [&](const std::string& section) {
    return only == section || (only.empty() && section != "devices" && section != "warm");
  };
  const fs::path programs = fs::path(SPARSERL_BENCH_SOURCE_DIR) / "reward" / "programs";
  const std::string csr = read_text(programs / "spmv_csr.cu");
  std::vector<std::string> pool_programs;
  for (const char* f : {"spmv_csr.cu", "spmv_sell.cu", "spmv_coo.cu", "spmv_ell.cu"}) {
    pool_programs.push_back(read_text(programs / f));
  }

  rw::Evaluator probe(config(shared, 1, reps));
  const rw::GpuInfo gpu = probe.gpu_info();
  if (gpu.devices.empty()) {
    std::cerr << "evaluator_bench: no GPU (" << gpu.error << ")\n";
    return 1;
  }
  std::printf("# Evaluator benchmark\n\ndevice: %s (%d visible), driver %d, runtime %d; protocol: 3 random inputs, "
              "5 warm-up runs, %d timed repetitions each of candidate and cuSPARSE (interleaved, L2 flushed), "
              "CUPTI kernel time\n\n",
              gpu.devices[0].name.c_str(), static_cast<int>(gpu.devices.size()), gpu.driver_version,
              gpu.runtime_version, reps);

  // --- 0. where the time goes -----------------------------------------------------------------------
  if (wanted("profile")) {
    std::printf("## Where an evaluation's time goes (groups of 8: 4 formats x 2 seeds per matrix, 1 GPU worker)\n\n");
    profile_groups("small: shared SuiteSparse matrices", shared, reps, small_matrices(shared, quick ? 8 : 24),
                   pool_programs, 2);
    std::vector<std::string> large = large_matrices(quick ? 8'000'000 : 50'000'000);
    if (quick && large.size() > 4) large.resize(4);
    profile_groups("large: the benchmark's large regime (train part, one matrix per family)", shared, reps, large,
                   pool_programs, 2);
  }

  // --- 1. throughput against GPU workers --------------------------------------------------------
  if (wanted("throughput")) throughput_section(shared, reps, quick, pool_programs, seeds);

  // --- 5. a warm evaluation's phases (asked for alone) ---------------------------------------------
  if (wanted("warm")) return warm_section(shared, reps, quick, pool_programs, seeds), 0;

  // --- 4. several GPUs --------------------------------------------------------------------------
  if (wanted("devices")) {
    devices_section(shared, reps, quick, pool_programs, seeds, gpu_counts,
                    static_cast<int>(gpu.devices.size()));
    return 0;
  }

  // --- 2. repeatability ---------------------------------------------------------------------------
  if (wanted("spread")) {
    std::printf("\n## Spread of one kernel's median over 10 evaluations (spmv_csr.cu, f32)\n\n"
                "| matrix | nnz | candidate median of medians (us) | candidate spread (max-min)/median | "
                "cuSPARSE median (us) | cuSPARSE spread |\n|---|---|---|---|---|---|\n");
    const std::vector<std::string> big = {"gen-v1/stencil2d?nx=1000&ny=1000&points=5",
                                          "gen-v1/uniform?nnz_per_row=8&rows=2000000&seed=1",
                                          "gen-v1/banded?bandwidth=8&n=2000000",
                                          "gen-v1/rmat?edge_factor=8&scale=20&seed=1"};
    for (const std::string& uri : big) {
      std::vector<double> cand, base;
      double nnz = 0;
      for (int i = 0; i < 10; ++i) {
        const rw::EvalResult r = probe.evaluate(spmv_task(uri), csr, with_seed(probe, 500 + static_cast<std::uint64_t>(i)));
        if (!r.ok()) {
          std::printf("| %s | - | %s: %s | | | |\n", uri.c_str(), std::string(rw::to_string(r.error)).c_str(),
                      r.message.c_str());
          break;
        }
        cand.push_back(r.timing.median_us);
        base.push_back(r.timing.baseline_median_us);
        nnz = r.timing.gflops * r.timing.median_us * 1e3 / 2;  // flops = 2 nnz
      }
      if (cand.size() < 10) continue;
      const auto spread = [](const std::vector<double>& v) {
        return (*std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end())) / median(v);
      };
      std::printf("| %s | %.0f | %.2f | %.1f%% | %.2f | %.1f%% |\n", uri.c_str(), nnz, median(cand), 100 * spread(cand),
                  median(base), 100 * spread(base));
      std::fflush(stdout);
    }
  }
  if (!wanted("kernels")) return 0;

  // --- 3. cuSPARSE and a simple CSR kernel ----------------------------------------------------------
  std::printf("\n## cuSPARSE (best CSR algorithm) and a simple CSR kernel, SpMV\n\n"
              "| matrix | dtype | nnz | cuSPARSE alg | cuSPARSE us | cuSPARSE GFLOP/s | cuSPARSE bw frac | "
              "simple us | simple GFLOP/s | simple bw frac | speedup |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<std::string> uris;
  if (fs::is_directory(shared)) {
    const auto index = ds::SuiteSparseIndex::read(shared / "INDEX.csv");
    for (const auto& e : index.entries()) uris.push_back("suitesparse-v1/" + e.group + "/" + e.name);
  }
  if (quick && uris.size() > 8) uris.resize(8);
  const std::vector<std::string> large = {"gen-v1/stencil2d?nx=3000&ny=3000&points=5",
                                          "gen-v1/uniform?nnz_per_row=16&rows=2000000&seed=1",
                                          "gen-v1/banded?bandwidth=16&n=1000000",
                                          "gen-v1/rmat?edge_factor=16&scale=21&seed=1",
                                          "gen-v1/uniform?huge_row=50000&nnz_per_row=16&rows=2000000&seed=2"};
  uris.insert(uris.end(), large.begin(), large.end());
  std::vector<double> small_speedups, large_speedups;
  for (ds::DType dtype : {ds::DType::f32, ds::DType::f64}) {
    for (const std::string& uri : uris) {
      const rw::EvalResult r = probe.evaluate(spmv_task(uri, dtype), csr);
      if (!r.ok()) {
        std::printf("| %s | %s | | %s | | | | | | | |\n", uri.c_str(), std::string(ds::to_string(dtype)).c_str(),
                    (std::string(rw::to_string(r.error)) + ": " + r.message).c_str());
        continue;
      }
      const rw::TimingFigures& t = r.timing;
      std::printf("| %s | %s | %.0f | %s | %.2f | %.1f | %.2f | %.2f | %.1f | %.2f | %.2f |\n", uri.c_str(),
                  std::string(ds::to_string(dtype)).c_str(), t.gflops * t.median_us * 1e3 / 2, t.baseline_algorithm.c_str(),
                  t.baseline_median_us, t.baseline_gflops, t.baseline_bandwidth_fraction, t.median_us, t.gflops,
                  t.bandwidth_fraction, t.speedup);
      std::fflush(stdout);
      (uri.rfind("gen-v1/", 0) == 0 ? large_speedups : small_speedups).push_back(std::log(t.speedup));
    }
  }
  auto geomean = [](const std::vector<double>& logs) {
    double s = 0;
    for (double v : logs) s += v;
    return logs.empty() ? 0.0 : std::exp(s / static_cast<double>(logs.size()));
  };
  std::printf("\ngeomean speedup of the simple CSR kernel over cuSPARSE: shared matrices %.2fx (%zu), large "
              "generated %.2fx (%zu)\n",
              geomean(small_speedups), small_speedups.size(), geomean(large_speedups), large_speedups.size());
  return 0;
}
