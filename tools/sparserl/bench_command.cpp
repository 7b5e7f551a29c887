// `sparserl bench`: agents x the matrices of a split part -> per-matrix and summary tables (compile
// rate, pass@1, pass@k, geomean speedup over cuSPARSE, share faster than cuSPARSE, GFLOP/s,
// bandwidth fraction) in a new run directory (experiments/runner.hpp does the work).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "options.hpp"
#include "sparserl/datasets/knobs.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/runner.hpp"
#if defined(SPARSERL_HAVE_AGENTS)
#include "sparserl/agents/algorithm.hpp"
#endif

namespace sparserl::tools {
namespace {

struct BenchArgs : RunArgs {
  std::string config_file;
};

// The learned agents of bench.agents, one per registered algorithm (its policy checkpoint).
std::string learned_agents() {
#if defined(SPARSERL_HAVE_AGENTS)
  return datasets::knob_text::one_of(agents::AlgorithmRegistry::names());
#else
  return "(none: this build has no LibTorch)";
#endif
}

Run declare_bench(CLI::App& app) {
  app.description(
      "Every agent of bench.agents answers for every matrix of bench.part of data.split (narrowed "
      "by\n"
      "data.regimes, data.sources, data.families; catalogue matrices not on this machine "
      "skipped):\n"
      "  template   the template search's best program (bench.template_budget measurements)\n"
      "  random     uniform tokens under the action mask (bench.samples episodes)\n"
      "  " +
      learned_agents() +
      "\n"
      "             the policy of bench.<agent>_checkpoint: its greedy program, plus "
      "bench.samples\n"
      "             sampled ones for pass@k\n"
      "and the evaluator checks and times each answer against cuSPARSE, the roofline and the "
      "oracle\n"
      "(the template search's best program under bench.oracle_budget, cached per split digest and\n"
      "GPU in DATA_DIR/oracle/; bench.oracle = cache | compute | off), and its program against "
      "the\n"
      "corpus the agent was trained on (novel, corpus_distance). Writes a new run directory\n"
      "with results.csv (one row per matrix and agent, tagged with its regime and family),\n"
      "summary.csv (one row per regime and agent) and report.md (the large regime's table first,\n"
      "speedup bars and time against nnz). Without a GPU only the compile stage runs:\n"
      "correctness, pass@k and every speed figure are n/a, not numbers.");
  app.footer(kRunExitStatus);
  auto a = std::make_shared<BenchArgs>();
  app.add_option("CONFIG", a->config_file, "the experiment config")->required();
  add_part_with_test(app, a->options.part, "benchmark", "bench.part");
  add_run_options(app, *a, "bench.agents='[\"template\"]'");
  return [a](const std::vector<std::string>& argv) {
    return report_outcome(
        experiments::run_bench(a->config(a->config_file), a->runner_options("bench", argv)), false);
  };
}

const CommandRegistration kRegistration(
    "bench", "compare agents on a split: per-matrix and summary tables in a run directory",
    declare_bench);

}  // namespace
}  // namespace sparserl::tools
