// `sparserl eval`: the eval stage of an experiment config alone, on a policy checkpoint - greedy
// and pass@k on eval.part of the config's split - into a new run directory with results.csv, the
// eval/ statistics in metrics.jsonl and report.md (experiments/runner.hpp does the work).
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/runner.hpp"

namespace sparserl::tools {
namespace {

constexpr const char* kUsage =
    "usage: sparserl eval CONFIG --checkpoint DIR [--part train|val|test]\n"
    "                     [--set section.key=value]... [--root DIR] [--runs-dir DIR]\n"
    "\n"
    "Evaluates the policy checkpoint DIR (a run's policies/<stage>/ or checkpoints/step-N/) on\n"
    "eval.part of data.split (or data.uris): one greedy program and eval.samples sampled ones\n"
    "per matrix, all through the evaluator. Writes a new run directory with results.csv (one\n"
    "row per matrix), metrics.jsonl (eval/greedy_compile_rate, eval/pass@k_correct, ...) and\n"
    "report.md. The env is shaped after the checkpoint (max_tokens, mask, K, D).\n"
    "\n"
    "  --checkpoint DIR  the policy to evaluate (required)\n"
    "  --part PART       the part of data.split to evaluate (over eval.part); the test part is\n"
    "                    read only this way: a config or --set asking for it is refused\n"
    "  --set KEY=VALUE   override one key (repeatable): --set eval.samples=16\n"
    "  --root DIR        the folder relative paths of the config start from\n"
    "  --runs-dir DIR    where the run directory goes (default: experiment.output_dir)\n"
    "\n"
    "exit status: 0 completed, 130 interrupted, 1 failed (the error is named), 2 bad arguments\n";

int run_eval(const std::vector<std::string>& argv) {
  const Args args(argv, {});
  args.allow_only({"set", "root", "runs-dir", "checkpoint", "part"});
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
  options.command = "sparserl eval";
  for (const std::string& a : argv) options.command += " " + a;
  const std::string checkpoint = args.required("checkpoint");
  experiments::Config config =
      experiments::Config::load(args.positional(0, "CONFIG"), args.all("set"));
  const experiments::RunOutcome outcome =
      experiments::run_checkpoint_evaluation(std::move(config), checkpoint, options);
  std::cout << experiments::describe_outcome(outcome, false);
  return experiments::exit_status(outcome);
}

const CommandRegistration kRegistration(Command{
    "eval", "evaluate a policy checkpoint (greedy, pass@k) on a split into a run directory", kUsage,
    run_eval});

}  // namespace
}  // namespace sparserl::tools
