// Benchmark (not a test) of the cuSPARSE baseline, for the GPU host: for every matrix of a split
// selection (or the URIs given), every cuSPARSE path the baseline tries, the one that wins, and how
// far the new baseline ("best": every format) moves the old one ("csr": CSR algorithms only). Each
// matrix is evaluated twice with the reference CSR program of reward/programs under the full
// protocol (3 inputs, 5 warm-ups, --reps timed repetitions, L2 flushed), once per baseline mode, in
// the same GPU worker; a speedup measured against the CSR baseline converts to one against the best
// path by dividing by the ratio printed here (csr_us / best_us). Output: a Markdown table per dtype
// and a summary per regime (geometric mean of the ratio; which paths win).
//
//   baseline_bench [--split FILE --part train|val|test [--regime R]... [--source S]...]
//                  [--uri URI]... [--index DIR]... [--op spmv|spmm] [--k K] [--dtype f32|f64]...
//                  [--reps N] [--max N]
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/reward/evaluator.hpp"

namespace rw = sparserl::reward;
namespace ds = sparserl::datasets;
namespace fs = std::filesystem;

namespace {

constexpr const char* kUsage =
    "usage: baseline_bench [--split FILE --part P [--regime R]... [--source S]...] [--uri URI]...\n"
    "                      [--index DIR]... [--op spmv|spmm] [--k K] [--dtype f32|f64]... [--reps N]"
    " [--max N]\n";

std::string read_text(const fs::path& path) {
  std::optional<std::string> text = ds::read_file_bytes(path);
  if (!text) throw std::runtime_error("cannot read " + path.string());
  return std::move(*text);
}

struct Options {
  std::optional<fs::path> split;
  std::optional<ds::SplitPart> part;
  ds::SplitSelection selection;
  std::vector<std::string> uris;
  std::vector<fs::path> index_dirs;
  ds::Op op = ds::Op::spmv;
  int k = 32;
  std::vector<ds::DType> dtypes;
  int reps = 50;
  std::size_t max = 0;
};

Options parse(int argc, char** argv) {
  Options o;
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) throw std::invalid_argument(std::string(argv[i]) + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--split") o.split = value(i);
    else if (a == "--part") o.part = ds::parse_split_part(value(i));
    else if (a == "--regime") o.selection.regimes.push_back(ds::parse_regime(value(i)).value());
    else if (a == "--source") o.selection.sources.push_back(ds::parse_matrix_source(value(i)).value());
    else if (a == "--uri") o.uris.push_back(value(i));
    else if (a == "--index") o.index_dirs.push_back(value(i));
    else if (a == "--op") o.op = ds::parse_op(value(i)).value();
    else if (a == "--k") o.k = std::stoi(value(i));
    else if (a == "--dtype") o.dtypes.push_back(ds::parse_dtype(value(i)).value());
    else if (a == "--reps") o.reps = std::stoi(value(i));
    else if (a == "--max") o.max = std::stoul(value(i));
    else throw std::invalid_argument("unknown option " + a);
  }
  if (o.dtypes.empty()) o.dtypes = {ds::DType::f32};
  if (o.split && !o.part) throw std::invalid_argument("--split needs --part");
  return o;
}

struct Row {
  std::string uri, family;
  std::string regime;
  std::int64_t nnz = 0;
};

}  // namespace

int main(int argc, char** argv) try {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "baseline_bench: " << e.what() << "\n" << kUsage;
    return 2;
  }
  std::vector<Row> rows;
  if (o.split) {
    const ds::Split split = ds::read_split(*o.split);
    for (const ds::SplitEntry& e : split.select(*o.part, o.selection)) {
      rows.push_back({e.uri, e.family, e.regime ? std::string(ds::to_string(*e.regime)) : "?", e.nnz});
    }
  }
  for (const std::string& uri : o.uris) rows.push_back({uri, "", "?", -1});
  if (o.max > 0 && rows.size() > o.max) rows.resize(o.max);
  if (rows.empty()) {
    std::cerr << "baseline_bench: no matrices (give --split/--part or --uri)\n" << kUsage;
    return 2;
  }

  rw::EvaluatorConfig c;
  c.data_dir = fs::temp_directory_path() / "sparserl-baseline-bench";
  c.index_dirs = o.index_dirs;
  c.protocol.seed = 1;
  c.protocol.random_inputs = 3;
  c.protocol.warmup_runs = 5;
  c.protocol.timed_runs = o.reps;
  c.protocol.time = true;
  c.gpu_deadline = std::chrono::milliseconds(600'000);
  c.log = [](std::string_view line) { std::cerr << "  [evaluator] " << line << "\n"; };
  rw::Evaluator ev(c);
  if (ev.gpu_info().devices.empty()) {
    std::cerr << "baseline_bench: no GPU (" << ev.gpu_info().error << ")\n";
    return 1;
  }
  const fs::path programs = fs::path(SPARSERL_BENCH_SOURCE_DIR) / "reward" / "programs";
  const std::string program = read_text(programs / (o.op == ds::Op::spmv ? "spmv_csr.cu" : "spmm_csr.cu"));
  std::printf("# cuSPARSE paths per matrix\n\ndevice: %s; op %s%s; protocol: 3 inputs, 5 warm-ups, %d timed "
              "repetitions, L2 flushed, CUPTI kernel time; each path's median from the baseline's "
              "selection pass (max(5, reps/4) repetitions)\n\n",
              ev.gpu_info().devices[0].name.c_str(), std::string(ds::to_string(o.op)).c_str(),
              o.op == ds::Op::spmm ? (" k=" + std::to_string(o.k)).c_str() : "", o.reps);

  for (ds::DType dtype : o.dtypes) {
    std::printf("## %s\n\n| matrix | family | regime | nnz | best path | best us | CSR best us | csr/best | "
                "every path (us) |\n|---|---|---|---|---|---|---|---|---|\n",
                std::string(ds::to_string(dtype)).c_str());
    std::map<std::string, std::vector<double>> log_ratios;       // regime -> log(csr/best)
    std::map<std::string, std::map<std::string, int>> winners;   // regime -> path family -> count
    int failures = 0;
    for (const Row& r : rows) {
      ds::Task t;
      t.uri = r.uri;
      t.op = o.op;
      t.dtype = dtype;
      t.k = o.op == ds::Op::spmm ? o.k : 1;
      rw::EvaluateOptions best, csr;
      best.protocol = csr.protocol = c.protocol;
      csr.protocol->baseline = rw::BaselineMode::csr;
      const rw::EvalResult rb = ev.evaluate(t, program, best);
      const rw::EvalResult rc = ev.evaluate(t, program, csr);
      if (!rb.timed || !rc.timed) {
        ++failures;
        std::printf("| %s | %s | %s | %lld | (%s) | | | | %s |\n", r.uri.c_str(), r.family.c_str(),
                    r.regime.c_str(), static_cast<long long>(r.nnz),
                    std::string(rw::to_string(rb.timed ? rc.error : rb.error)).c_str(),
                    (rb.timed ? rc.message : rb.message).substr(0, 120).c_str());
        continue;
      }
      const double ratio = rc.timing.baseline_median_us / rb.timing.baseline_median_us;
      const std::string regime = r.regime != "?" ? r.regime : "?";
      log_ratios[regime].push_back(std::log(ratio));
      log_ratios["all"].push_back(std::log(ratio));
      const std::string path = rb.timing.baseline_algorithm.substr(0, rb.timing.baseline_algorithm.find('_'));
      ++winners[regime][path];
      ++winners["all"][path];
      std::printf("| %s | %s | %s | %lld | %s | %.2f | %.2f | %.3f | %s |\n", r.uri.c_str(), r.family.c_str(),
                  regime.c_str(), static_cast<long long>(r.nnz), rb.timing.baseline_algorithm.c_str(),
                  rb.timing.baseline_median_us, rc.timing.baseline_median_us, ratio, rb.timing.baseline_paths.c_str());
      std::fflush(stdout);
    }
    std::printf("\n%s summary (csr/best > 1: the best path is faster than CSR; divide an old speedup by it):\n\n"
                "| regime | matrices | geomean csr/best | max csr/best | winning formats |\n|---|---|---|---|---|\n",
                std::string(ds::to_string(dtype)).c_str());
    for (const auto& [regime, logs] : log_ratios) {
      double sum = 0, mx = 0;
      for (double l : logs) {
        sum += l;
        mx = std::max(mx, l);
      }
      std::string wins;
      for (const auto& [path, n] : winners[regime]) wins += (wins.empty() ? "" : ", ") + path + " " + std::to_string(n);
      std::printf("| %s | %zu | %.3f | %.3f | %s |\n", regime.c_str(), logs.size(),
                  std::exp(sum / static_cast<double>(logs.size())), std::exp(mx), wins.c_str());
    }
    std::printf("\n%d matrices could not be timed.\n\n", failures);
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "baseline_bench: " << e.what() << "\n";
  return 1;
}
