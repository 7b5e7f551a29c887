// The tuning benchmark of issue 5, for the GPU host: the template search against cuSPARSE on
//   - fp32 and fp64 SpMV over the shared SuiteSparse matrices (small, launch-bound regime),
//   - fp32 and fp64 SpMV over generated matrices of 5M to 45M nonzeros (stencils, banded, uniform,
//     R-MAT power-law, block, one huge row: the bandwidth-bound regime, the headline),
//   - fp32 SpMM with K = 8 and 32 over generated matrices of a few million nonzeros,
// through the evaluator (sandboxed workers, CUPTI kernel time, L2 flushed, cuSPARSE's best
// algorithm in the same worker). It prints progress per task and, at the end, the tables: per
// matrix cuSPARSE time, best template time, speedup, bandwidth fraction and design, and the geomean
// speedup of each regime. The budgets are sized so the whole run takes about five minutes on an
// H100; every result also goes to --out (candidates.csv, summary.md, dataset.h5, best/).
//
//   design_space_bench [--shared DIR] [--out DIR] [--quick] [--only small|large|spmm|unseen]
//                      [--budget-small N] [--budget-large N] [--budget-spmm N]
//                      [--measurements FILE] [--halving] [--refine N]
//
// `--only unseen` runs issue 25's weak structures instead (not part of the default run): an arrow
// (two dense rows and columns), one 500k-entry row among 1M rows, two R-MAT graphs, uniform random
// columns, a log-normal and an LP-like power law, f32 and f64 SpMV. `--measurements FILE` lets the
// search's learned cost model fit on a measurement store (read only) and `--halving` turns on its
// successive halving rounds, `--refine N` its refinement (N more points of the two fastest screened
// families); the progress lines give each search's wall time.
//
// Without a GPU it runs compile-only and says so (no times).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/text.hpp"
#include "sparserl/kernels/evaluator_backend.hpp"
#include "sparserl/kernels/learned_cost_model.hpp"
#include "sparserl/kernels/measurement_store.hpp"
#include "sparserl/kernels/template_search.hpp"
#include "sparserl/kernels/tuning_output.hpp"
#include "sparserl/reward/evaluator.hpp"

using namespace sparserl;
namespace fs = std::filesystem;

namespace {

// Generated matrices of the bandwidth-bound regime (5M to 45M nonzeros).
const std::vector<std::string> kLargeSpmv = {
    "gen-v1/stencil2d?nx=1000",                                     //  5.0M, 5-point
    "gen-v1/stencil2d?nx=3000",                                     // 45.0M, 5-point
    "gen-v1/stencil3d?nx=150",                                      // 23.5M, 7-point
    "gen-v1/banded?n=2000000&bandwidth=4",                          // 18.0M
    "gen-v1/uniform?rows=2000000&nnz_per_row=8",                    // 16.0M, random columns
    "gen-v1/rmat?scale=20&edge_factor=16&seed=1",                   // 16.1M, power law
    "gen-v1/blockdiag?blocks=500000&block_size=6",                  // 18.0M, dense 6x6 blocks
    "gen-v1/uniform?rows=1000000&nnz_per_row=16&huge_row=1000000",  // 17.0M, one 1M-entry row
};
const std::vector<std::string> kQuickLarge = {
    "gen-v1/stencil2d?nx=1000", "gen-v1/uniform?rows=2000000&nnz_per_row=8",
    "gen-v1/rmat?scale=20&edge_factor=16&seed=1",
    "gen-v1/uniform?rows=1000000&nnz_per_row=16&huge_row=1000000"};
// SpMM: the CPU reference costs K times an SpMV, so these stay at a few million nonzeros.
const std::vector<std::string> kSpmm = {
    "gen-v1/stencil2d?nx=1000",                    // 5.0M
    "gen-v1/uniform?rows=500000&nnz_per_row=8",    // 4.0M
    "gen-v1/rmat?scale=18&edge_factor=16&seed=1",  // ~4M, power law
};

// Issue 25's weak structures, 10M-30M nonzeros, none of them in bench-v2's train part.
const std::vector<std::string> kUnseen = {
    "gen-v1/arrow?n=4000000&width=2",                                     // ~20M, dense rows+cols
    "gen-v1/uniform?rows=1000000&nnz_per_row=16&huge_row=500000&seed=9",  // 16.5M, one long row
    "gen-v1/rmat?scale=21&edge_factor=8&seed=7",                          // ~16M, power law
    "gen-v1/rmat?a=0.6&b=0.17&c=0.17&edge_factor=16&permute=1&scale=20&seed=8",  // ~16M
    "gen-v1/uniform?rows=2000000&nnz_per_row=10&seed=9",  // 20M, random columns
    "gen-v1/lognormal?cols=2000000&median=8&rows=1500000&seed=911&sigma=1.2",
    "gen-v1/lp?alpha=1.5&cols=6000000&min_len=3&rows=1500000&seed=811",
};

using datasets::fixed;
using datasets::minutes_seconds;

struct Phase {
  std::string name;
  std::vector<datasets::Task> tasks;
  kernels::SearchOptions options;
};

void print_table(const std::string& title, const std::vector<kernels::TaskSummary>& rows) {
  std::printf("\n%s\n", title.c_str());
  std::printf("%-58s %-5s %4s %10s %12s %10s %8s %6s  %s\n", "matrix", "dtype", "k", "nnz",
              "cuSPARSE us", "best us", "speedup", "bw", "design");
  for (const auto& t : rows) {
    std::string uri = t.task.uri;
    if (uri.size() > 58) uri = uri.substr(0, 55) + "...";
    std::printf("%-58s %-5s %4d %10lld %12s %10s %8s %6s  %s\n", uri.c_str(),
                std::string(to_string(t.task.dtype)).c_str(),
                t.task.op == datasets::Op::spmm ? t.task.k : 1, static_cast<long long>(t.nnz),
                t.timed ? fixed(t.baseline_us, 2).c_str() : "-",
                t.timed ? fixed(t.best_us, 2).c_str() : "-",
                t.timed ? (fixed(t.speedup, 2) + "x").c_str() : "-",
                t.timed ? (fixed(100 * t.bandwidth_fraction, 0) + "%").c_str() : "-",
                t.best_design.c_str());
  }
}

void print_geomean(const std::string& label, const std::vector<kernels::TaskSummary>& rows) {
  double log_sum = 0, worst = 1e300;
  int n = 0, wins = 0;
  for (const auto& t : rows) {
    if (!t.timed || t.speedup <= 0) continue;
    log_sum += std::log(t.speedup);
    worst = std::min(worst, t.speedup);
    wins += t.speedup > 1 ? 1 : 0;
    ++n;
  }
  if (n == 0) {
    std::printf("  %-34s no timed tasks\n", label.c_str());
    return;
  }
  std::printf("  %-34s geomean %6.3fx over %3d tasks, %3d faster than cuSPARSE, slowest %.3fx\n",
              label.c_str(), std::exp(log_sum / n), n, wins, worst);
}

struct Budgets {
  int small, large, spmm;
};

// The regimes to run (all, or the one --only names), with their tasks and search budgets; the small
// regime needs the shared matrices (store is null without them).
std::vector<Phase> make_phases(const std::string& only, bool quick, datasets::MatrixStore* store,
                               const fs::path& shared, Budgets budgets) {
  std::vector<Phase> phases;
  if (only.empty() || only == "small") {
    Phase p{"small", {}, {}};
    p.options.budget = budgets.small;
    p.options.finalists = 1;
    if (store != nullptr) {
      std::vector<std::string> uris = store->indexed_uris();
      if (quick && uris.size() > 12) uris.resize(12);
      for (const auto& uri : uris) {
        for (auto d : {datasets::DType::f32, datasets::DType::f64}) {
          p.tasks.push_back({uri, datasets::Op::spmv, d, 1});
        }
      }
    } else {
      std::fprintf(stderr, "design_space_bench: no shared matrices at %s: small regime skipped\n",
                   shared.string().c_str());
    }
    phases.push_back(p);
  }
  if (only.empty() || only == "large") {
    Phase p{"large", {}, {}};
    p.options.budget = budgets.large;
    p.options.finalists = 2;
    for (const auto& uri : quick ? kQuickLarge : kLargeSpmv) {
      for (auto d : {datasets::DType::f32, datasets::DType::f64}) {
        p.tasks.push_back({uri, datasets::Op::spmv, d, 1});
      }
    }
    phases.push_back(p);
  }
  if (only == "unseen") {
    Phase p{"unseen", {}, {}};
    p.options.budget = budgets.large;
    p.options.finalists = 2;
    for (const auto& uri : quick ? std::vector<std::string>{kUnseen[0], kUnseen[1]} : kUnseen) {
      for (auto d : {datasets::DType::f32, datasets::DType::f64}) {
        p.tasks.push_back({uri, datasets::Op::spmv, d, 1});
      }
    }
    phases.push_back(p);
  }
  if (only.empty() || only == "spmm") {
    Phase p{"spmm", {}, {}};
    p.options.budget = budgets.spmm;
    p.options.finalists = 2;
    for (const auto& uri : quick ? std::vector<std::string>{kSpmm[0]} : kSpmm) {
      for (datasets::Index k : {8, 32})
        p.tasks.push_back({uri, datasets::Op::spmm, datasets::DType::f32, k});
    }
    phases.push_back(p);
  }
  return phases;
}

// The console tables: per matrix of the large and SpMM regimes, then the geomean speedup of every
// regime and dtype.
void print_report(const std::vector<Phase>& phases,
                  const std::vector<std::vector<kernels::TaskSummary>>& results,
                  const std::string& device, const std::string& started_utc, double elapsed,
                  const fs::path& summary) {
  std::printf("\nTemplate search vs cuSPARSE on %s, %s (wall %s)\n",
              device.empty() ? "no GPU (compile-only)" : device.c_str(), started_utc.c_str(),
              minutes_seconds(elapsed).c_str());
  for (std::size_t pi = 0; pi < phases.size(); ++pi) {
    if (phases[pi].name == "small") continue;  // too long for the console: see summary.md
    print_table(phases[pi].name == "large"    ? "SpMV, generated 1M-50M nonzeros (bandwidth-bound)"
                : phases[pi].name == "unseen" ? "SpMV, issue 25's unseen structures"
                                              : "SpMM, K = 8 and 32 (fp32)",
                results[pi]);
  }
  std::printf("\nGeomean speedup over cuSPARSE (per-matrix table of every regime: %s)\n",
              summary.string().c_str());
  for (std::size_t pi = 0; pi < phases.size(); ++pi) {
    for (auto d : {datasets::DType::f32, datasets::DType::f64}) {
      std::vector<kernels::TaskSummary> part;
      for (const auto& t : results[pi]) {
        if (t.task.dtype == d) part.push_back(t);
      }
      if (part.empty()) continue;
      const std::string label = phases[pi].name == "small"    ? "small (SuiteSparse, launch-bound)"
                                : phases[pi].name == "large"  ? "large SpMV"
                                : phases[pi].name == "unseen" ? "unseen SpMV"
                                                              : "SpMM";
      print_geomean(label + " " + std::string(to_string(d)), part);
    }
  }
}

// The learned cost model fitted on a measurement store (read only), or nullptr (no store, or no
// usable measurement of this device).
std::shared_ptr<const kernels::LearnedCostModel> learned_model(const std::string& file,
                                                               const std::string& device) {
  if (file.empty()) return nullptr;
  const kernels::MeasurementStore measurements(file, false);
  auto model =
      std::make_shared<const kernels::LearnedCostModel>(measurements.measurements(), device);
  std::fprintf(stderr, "design_space_bench: %s from %s%s\n", model->describe().c_str(),
               file.c_str(), model->size() == 0 ? ": none usable, the analytic model chooses" : "");
  return model->size() > 0 ? model : nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path shared = fs::path(SPARSERL_BENCH_SOURCE_DIR) / ".." / "shared" / "matrices";
  if (const char* env = std::getenv("SPARSERL_SHARED_DIR"); env != nullptr && *env != '\0') {
    shared = fs::path(env) / "matrices";
  }
  fs::path out_dir = "design_space_bench_out";
  bool quick = false;
  std::string only;
  int budget_small = 4, budget_large = 8, budget_spmm = 6;
  std::string measurements;
  bool halving = false;
  int refine = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "design_space_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--shared")
      shared = value();
    else if (a == "--out")
      out_dir = value();
    else if (a == "--quick")
      quick = true;
    else if (a == "--only")
      only = value();
    else if (a == "--budget-small")
      budget_small = std::stoi(value());
    else if (a == "--budget-large")
      budget_large = std::stoi(value());
    else if (a == "--budget-spmm")
      budget_spmm = std::stoi(value());
    else if (a == "--measurements")
      measurements = value();
    else if (a == "--halving")
      halving = true;
    else if (a == "--refine")
      refine = std::stoi(value());
    else {
      std::fprintf(stderr,
                   "usage: design_space_bench [--shared DIR] [--out DIR] [--quick] "
                   "[--only small|large|spmm|unseen] [--budget-small N] [--budget-large N] "
                   "[--budget-spmm N] [--measurements FILE] [--halving] [--refine N]\n");
      return 2;
    }
  }

  reward::EvaluatorConfig config;
  config.data_dir = out_dir / "data";
  const bool have_shared = fs::exists(shared / "INDEX.csv");
  if (have_shared) config.index_dirs.push_back(shared);
  config.result_cache_entries = 0;  // every figure measured in this run
  config.log = [](std::string_view line) {
    std::fprintf(stderr, "evaluator: %.*s\n", static_cast<int>(line.size()), line.data());
  };
  fs::create_directories(out_dir / "best");
  reward::Evaluator evaluator(config);
  kernels::EvaluatorBackend backend(evaluator);
  datasets::StoreOptions store_options;
  store_options.indexes = config.index_dirs;
  store_options.cache_capacity = 2;
  datasets::MatrixStore store(config.data_dir, store_options);

  std::vector<Phase> phases = make_phases(only, quick, have_shared ? &store : nullptr, shared,
                                          {budget_small, budget_large, budget_spmm});
  std::size_t total = 0;
  for (const Phase& p : phases) total += p.tasks.size();
  const std::string device = backend.gpu_available() ? backend.device() : std::string();
  const auto model = learned_model(measurements, device);
  for (Phase& p : phases) {
    p.options.model = model;
    p.options.halving = halving;
    p.options.refine = refine;
  }
  std::fprintf(stderr, "design_space_bench: %zu tasks on %s, writing %s\n", total,
               device.empty() ? "no GPU (compile-only: no times)" : device.c_str(),
               out_dir.string().c_str());

  kernels::TuningRunInfo info;
  info.command = "design_space_bench";
  for (int i = 1; i < argc; ++i) info.command += std::string(" ") + argv[i];
  info.device = device;
  info.started_utc = datasets::utc_text(std::chrono::system_clock::now());
  info.protocol = "screen (" + kernels::SearchOptions{}.screen.str() + "), full (" +
                  kernels::SearchOptions{}.full.str() + ")";
  info.budget = budget_large;
  std::ofstream csv(out_dir / "candidates.csv", std::ios::trunc);
  csv << kernels::candidates_csv_header();
  kernels::TuningDataset dataset(out_dir / "dataset.h5", info);

  std::vector<std::vector<kernels::TaskSummary>> results(phases.size());
  std::vector<kernels::TaskSummary> all;
  const auto started = std::chrono::steady_clock::now();
  std::size_t done = 0;
  for (std::size_t pi = 0; pi < phases.size(); ++pi) {
    kernels::TemplateSearch search(backend, store, phases[pi].options);
    for (const datasets::Task& task : phases[pi].tasks) {
      kernels::SearchResult r;
      try {
        r = search.search(task);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "design_space_bench: skipping %s: %s\n", task.str().c_str(), e.what());
        ++done;
        continue;
      }
      csv << kernels::candidates_csv_rows(r);
      csv.flush();
      dataset.append(r);
      if (!r.best_program().empty()) {
        std::ofstream(out_dir / "best" / kernels::best_program_file_name(task)) << r.best_program();
      }
      const kernels::TaskSummary s = kernels::summarize(r);
      results[pi].push_back(s);
      all.push_back(s);
      ++done;
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      std::fprintf(stderr, "[%zu/%zu %s elapsed, ~%s left] %s: %s %s (search %.1f s)\n", done,
                   total, minutes_seconds(elapsed).c_str(),
                   minutes_seconds(elapsed / done * (total - done)).c_str(), task.str().c_str(),
                   s.best_design.empty() ? "none" : s.best_design.c_str(),
                   s.timed ? (fixed(s.best_us, 2) + " us vs " + fixed(s.baseline_us, 2) +
                              " us = " + fixed(s.speedup, 2) + "x")
                                 .c_str()
                           : "",
                   s.search_seconds);
    }
  }
  dataset.close();
  std::ofstream(out_dir / "summary.md") << kernels::summary_markdown(all, info);

  print_report(phases, results, device, info.started_utc,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
               out_dir / "summary.md");
  return 0;
}
