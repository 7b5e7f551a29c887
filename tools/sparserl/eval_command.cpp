// `sparserl eval`: the eval stage of an experiment config alone, on a policy checkpoint - greedy
// and pass@k on eval.part of the config's split - into a new run directory with results.csv, the
// eval/ statistics in metrics.jsonl and report.md (experiments/runner.hpp does the work).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "options.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/runner.hpp"

namespace sparserl::tools {
namespace {

struct EvalArgs : RunArgs {
  std::string config_file;
  std::string checkpoint;
};

Run declare_eval(CLI::App& app) {
  app.description(
      "Evaluates the policy checkpoint DIR (a run's policies/<stage>/ or checkpoints/step-N/) on\n"
      "eval.part of data.split (or data.uris): one greedy program and eval.samples sampled ones\n"
      "per matrix, all through the evaluator. Writes a new run directory with results.csv (one\n"
      "row per matrix), metrics.jsonl (eval/greedy_compile_rate, eval/pass@k_correct, ...) and\n"
      "report.md. The env is shaped after the checkpoint (max_tokens, mask, K, D).");
  app.footer(kRunExitStatus);
  auto a = std::make_shared<EvalArgs>();
  app.add_option("CONFIG", a->config_file, "the experiment config")->required();
  app.add_option("--checkpoint", a->checkpoint, "the policy to evaluate")
      ->type_name("DIR")
      ->required();
  add_part_with_test(app, a->options.part, "evaluate", "eval.part");
  add_run_options(app, *a, "eval.samples=16");
  return [a](const std::vector<std::string>& argv) {
    return report_outcome(
        experiments::run_checkpoint_evaluation(a->config(a->config_file), a->checkpoint,
                                               a->runner_options("eval", argv)),
        false);
  };
}

const CommandRegistration kRegistration(
    "eval", "evaluate a policy checkpoint (greedy, pass@k) on a split into a run directory",
    declare_eval);

}  // namespace
}  // namespace sparserl::tools
