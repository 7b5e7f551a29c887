// `sparserl tune`: the template search over a split or a list of matrices. For every task it writes
// the best design-space program, and for the run the table of every candidate, a summary with the
// geomean speedups of the two regimes, and the HDF5 dataset that holds the SFT pairs (best program
// per task) and the pretraining corpus (every correct program); docs/design-space.md describes the
// files. `--list` and `--show ID` print the design space and one point's program instead.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/kernels/design_space.hpp"
#include "sparserl/kernels/evaluator_backend.hpp"
#include "sparserl/kernels/template_search.hpp"
#include "sparserl/kernels/tuning_output.hpp"
#include "sparserl/reward/evaluator.hpp"

namespace sparserl::tools {
namespace {

namespace fs = std::filesystem;

const char* const kUsage =
    "usage: sparserl tune (--split FILE [--part train|val|test] | --matrix URI...)\n"
    "                     [--op spmv|spmm[,..]] [--dtype f32|f64[,..]] [--k K[,..]] --out DIR\n"
    "                     [--budget N] [--finalists N] [--sft-per-task N [--sft-within F]]\n"
    "                     [--limit N] [--data-dir DIR] [--index DIR]...\n"
    "                     [--compile-workers N] [--compile-only] [--verbose]\n"
    "       sparserl tune --list [--op spmv|spmm] [--dtype f32|f64]\n"
    "       sparserl tune --show ID [--op spmv|spmm] [--dtype f32|f64]\n"
    "\n"
    "Searches the kernel design space for the fastest correct program of every task with the\n"
    "evaluator (sandboxed workers, cuSPARSE as the baseline) and writes, under DIR:\n"
    "  best/NAME.cu      the best program of each task\n"
    "  candidates.csv    every evaluated candidate: design, verdict, times, speedup, bandwidth\n"
    "  summary.md        per task: cuSPARSE time, best time, speedup, bandwidth fraction, design;\n"
    "                    geomean speedups of small (< 200k nonzeros) and large matrices\n"
    "  dataset.h5        HDF5: /candidates (every evaluation), /sft (SFT pairs: the best program\n"
    "                    per task, and with --sft-per-task more near-best ones),\n"
    "                    /corpus (every distinct correct program)\n"
    "Without a GPU every candidate is only checked and compiled, nothing is ranked by time.\n"
    "\n"
    "  --split FILE      a split file (datasets/splits/*.split); its SuiteSparse matrices\n"
    "  --part P          train (default) or val (the test part: sparserl bench --part test)\n"
    "  --matrix URI      a matrix URI or Matrix Market file (repeatable)\n"
    "  --op OPS          spmv (default), spmm, or both comma-separated\n"
    "  --dtype TYPES     f32 (default), f64, or both comma-separated\n"
    "  --k KS            dense columns of SpMM (default 32), comma-separated for several\n"
    "  --out DIR         the output folder (created; files in it are replaced)\n"
    "  --budget N        programs measured per task in the first round (default 16); spaces\n"
    "                    pruned to N or fewer are measured exhaustively with the full protocol\n"
    "  --finalists N     re-measured with the full protocol after screening (default 4)\n"
    "  --sft-per-task N  SFT pairs per task (default 1: the best); the others are the next\n"
    "                    fastest distinct correct programs timed like the best, within F\n"
    "  --sft-within F    of the best's speedup (default 0.9: at most best time / 0.9)\n"
    "  --limit N         only the first N matrices\n"
    "  --data-dir DIR    where suitesparse-v1 matrices are found (default $SPARSERL_DATA_DIR or\n"
    "                    ./data)\n"
    "  --index DIR       a folder with an INDEX.csv of SuiteSparse matrices (repeatable), e.g.\n"
    "                    ../shared/matrices\n"
    "  --compile-workers N  compile workers (default one per core)\n"
    "  --compile-only    stop every evaluation after the compile stage\n"
    "  --verbose         print the evaluator's log to stderr\n"
    "\n"
    "The corpus and SFT pairs of the shared train split:\n"
    "  sparserl tune --split datasets/splits/shared-v1.split --part train --op spmv,spmm \\\n"
    "      --dtype f32,f64 --k 8,32 --index ../shared/matrices --out runs/tune-shared-v1-train\n"
    "\n"
    "Exit status: 0 when every task was searched, 1 when a matrix could not be loaded (the other\n"
    "tasks are still searched and written), 2 for bad arguments.\n";

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::vector<datasets::Op> parse_ops(const std::string& text) {
  std::vector<datasets::Op> out;
  for (const std::string& item : split_commas(text)) {
    auto op = datasets::parse_op(item);
    if (!op)
      throw UsageError("--op must be spmv, spmm or both comma-separated, got '" + text + "'");
    out.push_back(*op);
  }
  if (out.empty()) throw UsageError("--op is empty");
  return out;
}

std::vector<datasets::DType> parse_dtypes(const std::string& text) {
  std::vector<datasets::DType> out;
  for (const std::string& item : split_commas(text)) {
    auto d = datasets::parse_dtype(item);
    if (!d)
      throw UsageError("--dtype must be f32, f64 or both comma-separated, got '" + text + "'");
    out.push_back(*d);
  }
  if (out.empty()) throw UsageError("--dtype is empty");
  return out;
}

std::vector<datasets::Index> parse_ks(const std::string& text) {
  std::vector<datasets::Index> out;
  for (const std::string& item : split_commas(text)) {
    try {
      std::size_t used = 0;
      const long long k = std::stoll(item, &used);
      if (used != item.size() || k < 1 || k > 4096) throw std::out_of_range(item);
      out.push_back(static_cast<datasets::Index>(k));
    } catch (const std::exception&) {
      throw UsageError("--k must be integers in 1..4096, comma-separated, got '" + text + "'");
    }
  }
  if (out.empty()) throw UsageError("--k is empty");
  return out;
}

std::string matrix_uri(const std::string& text) {
  std::error_code ec;
  if (fs::is_regular_file(text, ec)) return "file:" + fs::absolute(text).string();
  try {
    return datasets::MatrixUri::parse(text).str();
  } catch (const datasets::InvalidUri& e) {
    throw UsageError("--matrix '" + text + "' is neither a file nor a matrix URI (" + e.what() +
                     ")");
  }
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string duration(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write '" + path.string() + "'");
}

int list_space(const Args& args, bool show) {
  const auto ops = parse_ops(args.option_or("op", "spmv"));
  const auto dtypes = parse_dtypes(args.option_or("dtype", "f32"));
  if (show) {
    const std::string id = *args.option("show");
    std::cout << kernels::render_program(kernels::DesignPoint::parse(ops[0], dtypes[0], id));
    return 0;
  }
  for (auto op : ops) {
    for (auto dtype : dtypes) {
      const kernels::DesignSpace space(op, dtype);
      std::cout << "# " << to_string(op) << " " << to_string(dtype) << ": " << space.size()
                << " points\n";
      for (const auto& p : space.points()) std::cout << p.id() << "\n";
    }
  }
  return 0;
}

int run_tune(const std::vector<std::string>& argv) {
  const Args args(argv, {"compile-only", "verbose", "list"});
  args.allow_only({"split", "part", "matrix", "op", "dtype", "k", "out", "budget", "finalists",
                   "sft-per-task", "sft-within", "limit", "data-dir", "index", "compile-workers",
                   "show"});
  if (args.flag("list") || args.option("show")) return list_space(args, !args.flag("list"));
  if (!args.positional().empty()) {
    throw UsageError("unexpected argument '" + args.positional()[0] + "'");
  }

  // The matrices.
  std::vector<std::string> uris;
  const auto split_file = args.option("split");
  const auto matrices = args.all("matrix");
  if (split_file.has_value() == !matrices.empty()) {
    throw UsageError("give either --split FILE or one or more --matrix URI");
  }
  std::string source;
  if (split_file) {
    const std::string part_text = args.option_or("part", "train");
    const auto part = non_test_part(args, "tune");
    const datasets::Split split = datasets::read_split(*split_file);
    uris = split.uris(part);
    source = "split " + split.name + " part " + part_text;
  } else {
    if (args.option("part")) throw UsageError("--part applies to --split only");
    for (const std::string& m : matrices) uris.push_back(matrix_uri(m));
    source = std::to_string(uris.size()) + " matrices";
  }
  const long long limit = args.integer("limit", 0, 0, 1'000'000);
  if (limit > 0 && static_cast<std::size_t>(limit) < uris.size()) uris.resize(limit);

  const auto ops = parse_ops(args.option_or("op", "spmv"));
  const auto dtypes = parse_dtypes(args.option_or("dtype", "f32"));
  const auto ks = parse_ks(args.option_or("k", "32"));
  if (args.option("k") && std::find(ops.begin(), ops.end(), datasets::Op::spmm) == ops.end()) {
    throw UsageError("--k applies to spmm only");
  }
  // Tasks grouped by matrix: the GPU worker keeps one matrix loaded at a time.
  std::vector<datasets::Task> tasks;
  for (const std::string& uri : uris) {
    for (auto op : ops) {
      for (auto dtype : dtypes) {
        if (op == datasets::Op::spmv) {
          tasks.push_back({uri, op, dtype, 1});
        } else {
          for (auto k : ks) tasks.push_back({uri, op, dtype, k});
        }
      }
    }
  }

  const fs::path out_dir = args.required("out");
  kernels::SearchOptions options;
  options.budget = static_cast<int>(args.integer("budget", 16, 1, 10000));
  options.finalists = static_cast<int>(args.integer("finalists", 4, 1, 1000));
  kernels::SftSelection selection;
  selection.per_task = static_cast<int>(args.integer("sft-per-task", 1, 1, 1000));
  selection.within = args.real("sft-within", 0.9);
  if (!(selection.within > 0 && selection.within <= 1)) {
    throw UsageError("--sft-within must be in (0, 1], got " + *args.option("sft-within"));
  }
  if (args.option("sft-within") && !args.option("sft-per-task")) {
    throw UsageError("--sft-within applies with --sft-per-task N (N > 1)");
  }

  reward::EvaluatorConfig config;
  if (auto dir = args.option("data-dir")) config.data_dir = *dir;
  for (const std::string& index : args.all("index")) config.index_dirs.emplace_back(index);
  config.compile_workers = static_cast<int>(args.integer("compile-workers", 0, 0, 1024));
  const bool compile_only = args.flag("compile-only");
  if (compile_only) config.gpu_workers = 0;
  const bool verbose = args.flag("verbose");
  config.log = [verbose](std::string_view line) {
    if (verbose) std::cerr << "sparserl tune: " << line << '\n';
  };
  datasets::StoreOptions store_options;
  store_options.indexes = config.index_dirs;
  store_options.cache_capacity = 2;
  datasets::MatrixStore store(
      config.data_dir.empty() ? datasets::default_data_dir() : config.data_dir, store_options);

  fs::create_directories(out_dir / "best");
  reward::Evaluator evaluator(config);
  kernels::EvaluatorBackend backend(evaluator);
  kernels::TemplateSearch search(backend, store, options);

  std::string command = "sparserl tune";
  for (const std::string& a : argv) command += " " + a;
  kernels::TuningRunInfo info;
  info.command = command;
  info.device = backend.gpu_available() ? backend.device() : std::string();
  info.started_utc = utc_now();
  info.protocol = "screen (" + options.screen.str() + "), full (" + options.full.str() + ")";
  info.budget = options.budget;

  std::cerr << "sparserl tune: " << tasks.size() << " tasks (" << source << "), "
            << (info.device.empty() ? "no GPU: compile-only" : info.device) << ", budget "
            << options.budget << "\n";
  std::ofstream csv(out_dir / "candidates.csv", std::ios::binary | std::ios::trunc);
  if (!csv)
    throw std::runtime_error("cannot write '" + (out_dir / "candidates.csv").string() + "'");
  csv << kernels::candidates_csv_header();
  kernels::TuningDataset dataset(out_dir / "dataset.h5", info, selection);

  std::vector<kernels::TaskSummary> summaries;
  std::vector<std::string> failed;
  const auto started = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const datasets::Task& task = tasks[i];
    kernels::SearchResult result;
    try {
      result = search.search(task);
    } catch (const std::exception& e) {
      std::cerr << "sparserl tune: skipping " << task.str() << ": " << e.what() << "\n";
      failed.push_back(task.str());
      continue;
    }
    csv << kernels::candidates_csv_rows(result);
    csv.flush();
    dataset.append(result);
    if (!result.best_program().empty()) {
      write_text(out_dir / "best" / kernels::best_program_file_name(task), result.best_program());
    }
    const kernels::TaskSummary s = kernels::summarize(result);
    summaries.push_back(s);
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const double left =
        elapsed / static_cast<double>(i + 1) * static_cast<double>(tasks.size() - i - 1);
    std::cerr << "[" << (i + 1) << "/" << tasks.size() << " " << duration(elapsed) << " elapsed, ~"
              << duration(left) << " left] " << task.str() << ": "
              << (s.best_design.empty() ? "no candidate compiled" : s.best_design)
              << (s.timed ? "  " + fixed(s.best_us, 2) + " us vs cuSPARSE " +
                                fixed(s.baseline_us, 2) + " us = " + fixed(s.speedup, 2) + "x"
                          : "")
              << "  (" << s.correct_candidates << "/" << s.evaluations << " correct)\n";
  }
  dataset.close();
  const std::string summary = kernels::summary_markdown(summaries, info);
  write_text(out_dir / "summary.md", summary);
  std::cout << summary;
  std::cerr << "sparserl tune: wrote " << (out_dir / "summary.md").string() << ", "
            << (out_dir / "candidates.csv").string() << " and " << (out_dir / "dataset.h5").string()
            << " (" << dataset.candidate_rows() << " candidates, " << dataset.sft_rows()
            << " SFT pairs, " << dataset.corpus_rows() << " corpus programs)\n";
  if (!failed.empty()) {
    std::cerr << "sparserl tune: " << failed.size() << " task(s) could not be searched:\n";
    for (const std::string& f : failed) std::cerr << "  " << f << "\n";
    return 1;
  }
  return 0;
}

const CommandRegistration kTune{
    {"tune", "search the kernel design space per matrix (template search)", kUsage, run_tune}};

}  // namespace
}  // namespace sparserl::tools
