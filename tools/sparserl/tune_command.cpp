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
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "options.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/datasets/text.hpp"
#include "sparserl/kernels/design_space.hpp"
#include "sparserl/kernels/evaluator_backend.hpp"
#include "sparserl/kernels/learned_cost_model.hpp"
#include "sparserl/kernels/measurement_store.hpp"
#include "sparserl/kernels/template_search.hpp"
#include "sparserl/kernels/tuning_output.hpp"
#include "sparserl/reward/evaluator.hpp"

namespace sparserl::tools {
namespace {

namespace fs = std::filesystem;

struct TuneArgs {
  std::optional<std::string> split;
  datasets::SplitPart part = datasets::SplitPart::train;
  std::vector<std::string> regimes, sources, families;  // narrow the split's part
  std::vector<std::string> matrices;
  std::vector<std::string> ops = {"spmv"};
  std::vector<std::string> dtypes = {"f32"};
  std::vector<datasets::Index> ks;  // empty: 32
  std::string out;
  int budget = 16;
  int finalists = 4;
  std::optional<int> sft_per_task;
  std::optional<double> sft_within;
  int limit = 0;
  MatrixLocations where;
  int compile_workers = 0;
  bool compile_only = false;
  bool verbose = false;
  bool list = false;
  std::optional<std::string> show;
  // The measurement store (docs/design-space.md): fit the learned cost model on it, append every
  // candidate to it (unless no_record), skip the tasks it has searched (resume).
  std::optional<std::string> measurements;
  bool no_record = false;
  bool resume = false;
  bool fixed_budget = false;
  bool halving = false;
  int refine = 0;
};

// The values of --op and --dtype, checked by the parser.
std::vector<datasets::Op> ops_of(const TuneArgs& a) {
  std::vector<datasets::Op> out;
  for (const std::string& op : a.ops) out.push_back(*datasets::parse_op(op));
  return out;
}

std::vector<datasets::DType> dtypes_of(const TuneArgs& a) {
  std::vector<datasets::DType> out;
  for (const std::string& dtype : a.dtypes) out.push_back(*datasets::parse_dtype(dtype));
  return out;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write '" + path.string() + "'");
}

int list_space(const TuneArgs& a) {
  const auto ops = ops_of(a);
  const auto dtypes = dtypes_of(a);
  if (a.show && !a.list) {
    const std::string& id = *a.show;
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

// The tasks of the run, grouped by matrix (the GPU worker keeps one matrix loaded at a time), and
// where their matrices come from (for the log).
std::vector<datasets::Task> tune_tasks(const TuneArgs& a, std::string& source) {
  std::vector<std::string> uris;
  if (a.split) {
    const datasets::Split split = datasets::read_split(*a.split);
    datasets::SplitSelection selection;
    for (const std::string& r : a.regimes) selection.regimes.push_back(*datasets::parse_regime(r));
    for (const std::string& m : a.sources) {
      selection.sources.push_back(*datasets::parse_matrix_source(m));
    }
    selection.families = a.families;
    if (!selection.regimes.empty() && split.version < datasets::Split::kBenchmarkFormatVersion) {
      throw UsageError("--regime needs a benchmark split (version 2); " + *a.split +
                       " is version " + std::to_string(split.version));
    }
    for (const datasets::SplitEntry& e : split.select(a.part, selection)) uris.push_back(e.uri);
    source = "split " + split.name + " part " + std::string(datasets::to_string(a.part)) +
             (selection.empty() ? std::string() : ", " + selection.describe());
  } else {
    if (a.matrices.empty())
      throw UsageError("give either --split FILE or one or more --matrix URI");
    uris = a.matrices;  // canonical URIs (matrix_argument)
    source = std::to_string(uris.size()) + " matrices";
  }
  if (a.limit > 0 && static_cast<std::size_t>(a.limit) < uris.size()) uris.resize(a.limit);

  const auto ops = ops_of(a);
  const auto dtypes = dtypes_of(a);
  const std::vector<datasets::Index> ks = a.ks.empty() ? std::vector<datasets::Index>{32} : a.ks;
  if (!a.ks.empty() && std::find(ops.begin(), ops.end(), datasets::Op::spmm) == ops.end()) {
    throw UsageError("--k applies to spmm only");
  }
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
  return tasks;
}

int run_tune(const TuneArgs& a, const std::vector<std::string>& argv) {
  if (a.list || a.show) return list_space(a);
  std::string source;
  const std::vector<datasets::Task> tasks = tune_tasks(a, source);
  const fs::path out_dir = a.out;
  if (out_dir.empty()) throw UsageError("--out DIR is required");
  kernels::SearchOptions options;
  options.budget = a.budget;
  options.finalists = a.finalists;
  kernels::SftSelection selection;
  selection.per_task = a.sft_per_task.value_or(1);
  selection.within = a.sft_within.value_or(0.9);
  if (!(selection.within > 0 && selection.within <= 1)) {
    std::ostringstream message;
    message << "--sft-within must be in (0, 1], got " << selection.within;
    throw UsageError(message.str());
  }

  reward::EvaluatorConfig config;
  if (a.where.data_dir) config.data_dir = *a.where.data_dir;
  config.index_dirs = a.where.index_paths();
  config.compile_workers = a.compile_workers;
  if (a.compile_only) config.gpu_workers = 0;
  const bool verbose = a.verbose;
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
  const std::string device = backend.gpu_available() ? backend.device() : std::string();
  std::unique_ptr<kernels::MeasurementStore> measurements;
  if (a.measurements) {
    if (const fs::path parent = fs::path(*a.measurements).parent_path(); !parent.empty()) {
      fs::create_directories(parent);
    }
    measurements =
        std::make_unique<kernels::MeasurementStore>(*a.measurements, true, "sparserl tune");
    std::cerr << "sparserl tune: measurement store " << *a.measurements << ": "
              << measurements->measurements().size() << " candidates, "
              << measurements->searches().size() << " searches\n";
  }
  options.adaptive_budget = !a.fixed_budget;
  options.halving = a.halving;
  options.refine = a.refine;
  kernels::TemplateSearch search(backend, store, options);
  // The learned model, fitted on the store (refitted after every task this run adds to it);
  // without any usable measurement of this device the analytic model alone chooses.
  const auto fit = [&] {
    if (!measurements) return;
    auto model =
        std::make_shared<const kernels::LearnedCostModel>(measurements->measurements(), device);
    search.set_model(model->size() > 0 ? model : nullptr);
  };
  fit();
  if (measurements) {
    std::cerr << "sparserl tune: candidates chosen by "
              << (search.options().model ? search.options().model->describe()
                                         : std::string("the analytic model (no usable "
                                                       "measurement of this device yet)"))
              << "\n";
  }

  kernels::TuningRunInfo info;
  info.command = command_line("tune", argv);
  info.device = backend.gpu_available() ? backend.device() : std::string();
  info.started_utc = datasets::utc_text(std::chrono::system_clock::now());
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
  std::size_t resumed = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const datasets::Task& task = tasks[i];
    if (a.resume && measurements && measurements->searched(task, device)) {
      ++resumed;
      continue;
    }
    kernels::SearchResult result;
    try {
      result = search.search(task);
    } catch (const std::exception& e) {
      std::cerr << "sparserl tune: skipping " << task.str() << ": " << e.what() << "\n";
      failed.push_back(task.str());
      continue;
    }
    if (measurements && !a.no_record) {
      measurements->append(result);
      fit();
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
    std::cerr << "[" << (i + 1) << "/" << tasks.size() << " " << datasets::minutes_seconds(elapsed)
              << " elapsed, ~" << datasets::minutes_seconds(left) << " left] " << task.str() << ": "
              << (s.best_design.empty() ? "no candidate compiled" : s.best_design)
              << (s.timed ? "  " + datasets::fixed(s.best_us, 2) + " us vs cuSPARSE " +
                                datasets::fixed(s.baseline_us, 2) +
                                " us = " + datasets::fixed(s.speedup, 2) + "x"
                          : "")
              << "  (" << s.correct_candidates << "/" << s.evaluations << " correct, search "
              << datasets::fixed(s.search_seconds, 1) << " s)\n";
  }
  if (resumed > 0) {
    std::cerr << "sparserl tune: " << resumed << " task(s) skipped: the measurement store has "
              << "their searches on this device (--resume)\n";
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

Run declare_tune(CLI::App& app) {
  app.description(
      "Searches the kernel design space for the fastest correct program of every task with the\n"
      "evaluator (sandboxed workers, cuSPARSE as the baseline) and writes, under DIR:\n"
      "  best/NAME.cu      the best program of each task\n"
      "  candidates.csv    every evaluated candidate: design, verdict, times, speedup, bandwidth\n"
      "  summary.md        per task: cuSPARSE time, best time, speedup, bandwidth fraction, "
      "design;\n"
      "                    geomean speedups of small (< 200k nonzeros) and large matrices\n"
      "  dataset.h5        HDF5: /candidates (every evaluation), /sft (SFT pairs: the best "
      "program\n"
      "                    per task, and with --sft-per-task more near-best ones),\n"
      "                    /corpus (every distinct correct program)\n"
      "Without a GPU every candidate is only checked and compiled, nothing is ranked by time.\n"
      "`sparserl tune --list` and `sparserl tune --show ID` (with --op and --dtype) print the\n"
      "design space and one point's program instead.");
  app.footer(
      "The corpus and SFT pairs of the shared train split:\n"
      "  sparserl tune --split datasets/splits/shared-v1.split --part train --op spmv,spmm \\\n"
      "      --dtype f32,f64 --k 8,32 --index ../shared/matrices --out runs/tune-shared-v1-train\n"
      "Measurements of bench-v2's large train matrices for the learned cost model, one family\n"
      "per call, resumable:\n"
      "  sparserl tune --split datasets/splits/bench-v2.split --part train --regime large \\\n"
      "      --source generated --family rmat --measurements runs/measurements.jsonl --resume \\\n"
      "      --halving --index ../shared/matrices --index ../shared/matrices/real \\\n"
      "      --out runs/tune-bench-v2-train-rmat\n"
      "\n"
      "Exit status: 0 when every task was searched, 1 when a matrix could not be loaded (the "
      "other\n"
      "tasks are still searched and written), 2 for bad arguments.");
  auto a = std::make_shared<TuneArgs>();
  CLI::Option* split = app.add_option("--split", a->split,
                                      "a split file (datasets/splits/*.split); its SuiteSparse "
                                      "matrices")
                           ->type_name("FILE");
  add_non_test_part(app, a->part, "tune")->needs(split);
  one_of(app.add_option("--regime", a->regimes,
                        "only the part's matrices of these regimes (benchmark splits), "
                        "comma-separated"),
         {"small", "medium", "large"})
      ->delimiter(',')
      ->needs(split);
  one_of(app.add_option("--source", a->sources,
                        "only the part's matrices of these sources, comma-separated"),
         {"shared", "catalogue", "generated"})
      ->delimiter(',')
      ->needs(split);
  app.add_option("--family", a->families,
                 "only the part's matrices of these families (generated family or collection "
                 "group), comma-separated: splits a long run into calls that fit a time limit")
      ->delimiter(',')
      ->type_name("NAME")
      ->needs(split);
  matrix_argument(repeatable(app.add_option("--matrix", a->matrices,
                                            "a Matrix Market file or a matrix URI (repeatable)")))
      ->excludes(split);
  one_of(app.add_option("--op", a->ops, "spmv (default), spmm, or both comma-separated"),
         {"spmv", "spmm"})
      ->delimiter(',');
  one_of(app.add_option("--dtype", a->dtypes, "f32 (default), f64, or both comma-separated"),
         {"f32", "f64"})
      ->delimiter(',');
  app.add_option("--k", a->ks, "dense columns of SpMM (default 32), comma-separated for several")
      ->type_name("K")
      ->delimiter(',')
      ->check(CLI::Range(datasets::Index{1}, datasets::Index{4096}));
  app.add_option("--out", a->out, "the output folder (created; files in it are replaced)")
      ->type_name("DIR");
  app.add_option("--budget", a->budget,
                 "programs measured per task in the first round; spaces pruned to N or fewer "
                 "are measured exhaustively with the full protocol")
      ->type_name("N")
      ->check(CLI::Range(1, 10000));
  app.add_option("--finalists", a->finalists, "re-measured with the full protocol after screening")
      ->type_name("N")
      ->check(CLI::Range(1, 1000));
  CLI::Option* per_task =
      app.add_option("--sft-per-task", a->sft_per_task,
                     "SFT pairs per task (default 1: the best); the others are the next fastest "
                     "distinct correct programs timed like the best, within F")
          ->type_name("N")
          ->check(CLI::Range(1, 1000));
  app.add_option("--sft-within", a->sft_within,
                 "of the best's speedup (default 0.9: at most best time / 0.9)")
      ->type_name("F")
      ->needs(per_task);
  app.add_option("--limit", a->limit, "only the first N matrices (default 0: all)")
      ->type_name("N")
      ->check(CLI::Range(0, 1'000'000));
  add_matrix_locations(app, a->where);
  app.add_option("--compile-workers", a->compile_workers,
                 "compile workers (default 0: one per core)")
      ->type_name("N")
      ->check(CLI::Range(0, 1024));
  app.add_flag("--compile-only", a->compile_only, "stop every evaluation after the compile stage");
  CLI::Option* measurements =
      app.add_option("--measurements", a->measurements,
                     "the measurement store (JSON lines, created if absent): the learned cost "
                     "model is fitted on it and chooses the candidates, and every evaluation of "
                     "this run is appended to it")
          ->type_name("FILE");
  app.add_flag("--no-record", a->no_record,
               "use the --measurements store without appending this run's evaluations")
      ->needs(measurements);
  app.add_flag("--resume", a->resume,
               "skip the tasks whose search the --measurements store holds for this device "
               "(a run cut by a time limit goes on where it stopped)")
      ->needs(measurements);
  app.add_flag("--fixed-budget", a->fixed_budget,
               "with --measurements: measure --budget programs per task whatever the model "
               "knows (default: fewer where it is confident, 1.5x where the matrix is novel)")
      ->needs(measurements);
  app.add_flag("--halving", a->halving,
               "successive halving: screen the faster half again with twice the repetitions "
               "until at most 2 x --finalists remain, then the finalists in full");
  app.add_option("--refine", a->refine,
                 "after screening, screen up to N more points of the two fastest design families "
                 "(their next points by prediction, in turn; default 0)")
      ->check(CLI::Range(0, 100000))
      ->type_name("N");
  app.add_flag("--verbose", a->verbose, "print the evaluator's log to stderr");
  app.add_flag("--list", a->list, "print the design space's points (of --op and --dtype)");
  app.add_option("--show", a->show, "print the program of design point ID (of --op and --dtype)")
      ->type_name("ID");
  return [a](const std::vector<std::string>& argv) { return run_tune(*a, argv); };
}

const CommandRegistration kTune("tune",
                                "search the kernel design space per matrix (template search)",
                                declare_tune);

}  // namespace
}  // namespace sparserl::tools
