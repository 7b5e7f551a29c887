// `sparserl bench`: agents x the matrices of a split part -> per-matrix and summary tables (compile
// rate, pass@1, pass@k, geomean speedup over cuSPARSE, share faster than cuSPARSE, GFLOP/s,
// bandwidth fraction) in a new run directory (experiments/runner.hpp does the work).
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/runner.hpp"

namespace sparserl::tools {
namespace {

constexpr const char* kUsage =
    "usage: sparserl bench CONFIG [--part train|val|test] [--set section.key=value]... [--root "
    "DIR]\n"
    "                      [--runs-dir DIR]\n"
    "\n"
    "Every agent of bench.agents answers for every matrix of bench.part of data.split (narrowed "
    "by\n"
    "data.regimes, data.sources, data.families; catalogue matrices not on this machine skipped):\n"
    "  template   the template search's best program (bench.template_budget measurements)\n"
    "  random     uniform tokens under the action mask (bench.samples episodes)\n"
    "  sft, reinforce, ppo, grpo\n"
    "             the policy of bench.<agent>_checkpoint: its greedy program, plus bench.samples\n"
    "             sampled ones for pass@k\n"
    "and the evaluator checks and times each answer against cuSPARSE, the roofline and the oracle\n"
    "(the template search's best program under bench.oracle_budget, cached per split digest and\n"
    "GPU in DATA_DIR/oracle/; bench.oracle = cache | compute | off), and its program against the\n"
    "corpus the agent was trained on (novel, corpus_distance). Writes a new run directory\n"
    "with results.csv (one row per matrix and agent, tagged with its regime and family),\n"
    "summary.csv (one row per regime and agent) and report.md (the large regime's table first,\n"
    "speedup bars and time against nnz). Without a GPU only the compile stage runs:\n"
    "correctness, pass@k and every speed figure are n/a, not numbers.\n"
    "\n"
    "  --part PART       the part of data.split to benchmark (over bench.part); the test part is\n"
    "                    read only this way: a config or --set asking for it is refused\n"
    "  --set KEY=VALUE   override one key (repeatable): --set bench.agents='[\"template\"]'\n"
    "  --root DIR        the folder relative paths of the config start from\n"
    "  --runs-dir DIR    where the run directory goes (default: experiment.output_dir)\n"
    "\n"
    "exit status: 0 completed, 130 interrupted, 1 failed (the error is named), 2 bad arguments\n";

int run_bench(const std::vector<std::string>& argv) {
  const Args args(argv, {});
  args.allow_only({"set", "root", "runs-dir", "part"});
  if (args.positional().size() != 1) throw UsageError("expected one CONFIG file");
  experiments::RunnerOptions options;
  if (auto root = args.option("root")) options.root = *root;
  if (auto runs = args.option("runs-dir")) options.runs_dir = *runs;
  if (auto part = args.option("part")) {
    if (*part != "train" && *part != "val" && *part != "test") {
      throw UsageError("--part takes train, val or test, not '" + *part + "'");
    }
    options.part = *part;
  }
  options.command = "sparserl bench";
  for (const std::string& a : argv) options.command += " " + a;
  experiments::Config config =
      experiments::Config::load(args.positional(0, "CONFIG"), args.all("set"));
  const experiments::RunOutcome outcome = experiments::run_bench(std::move(config), options);
  std::cout << experiments::describe_outcome(outcome, false);
  return experiments::exit_status(outcome);
}

const CommandRegistration kRegistration(Command{
    "bench", "compare agents on a split: per-matrix and summary tables in a run directory", kUsage,
    run_bench});

}  // namespace
}  // namespace sparserl::tools
