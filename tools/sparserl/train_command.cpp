// `sparserl train`: runs the stages of an experiment config (pretrain, SFT, RL, evaluation) into a
// new run directory, or continues a stopped run from its last checkpoint. The work is the
// experiment runner's (experiments/include/sparserl/experiments/runner.hpp); this file reads the
// arguments and prints where the run and its report are.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "options.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/runner.hpp"

namespace sparserl::tools {
namespace {

struct TrainArgs : RunArgs {
  std::optional<std::string> config_file;
  std::optional<std::string> resume;
};

Run declare_train(CLI::App& app) {
  app.description(
      "Runs the stages of train.stages (pretrain -> sft -> rl -> eval) as CONFIG describes them\n"
      "(docs/config.md lists every key) into a new run directory\n"
      "<experiment.output_dir>/<experiment.name>__<seed>__<UTC time>/ holding "
      "config.resolved.toml,\n"
      "run.json, metrics.jsonl, trajectories.h5 (RL episodes), checkpoints/, policies/<stage>/,\n"
      "results.csv (eval), report.md and plots/ (docs/experiments.md). With --resume RUN_DIR\n"
      "instead of CONFIG (and no --set or --runs-dir): continues that run as it was configured.");
  app.footer(
      "Ctrl-C (SIGINT) or SIGTERM stops the run at the next step "
      "boundary: a checkpoint is saved,\n"
      "run.json says interrupted and the report is written. A second "
      "Ctrl-C kills at once.\n"
      "Without a GPU the reward is the compile stage alone (said once "
      "on stderr).\n"
      "\n" +
      std::string(kRunExitStatus));
  auto a = std::make_shared<TrainArgs>();
  CLI::Option* config_file = app.add_option("CONFIG", a->config_file, "the experiment config");
  add_run_options(app, *a, "train.rl_updates=10 --set agent.algorithm=ppo");
  app.get_option("--root")->description(
      "the folder relative paths of the config start from (default: "
      "experiment.root, "
      "relative to the config file's folder)");
  CLI::Option* resume = app.add_option("--resume", a->resume,
                                       "continue a stopped run from its latest checkpoint; "
                                       "metrics and trajectories logged after it are dropped first")
                            ->type_name("RUN_DIR");
  resume->excludes(config_file)->excludes("--set")->excludes("--runs-dir");
  return [a](const std::vector<std::string>& argv) {
    const experiments::RunnerOptions options = a->runner_options("train", argv);
    if (a->resume) return report_outcome(experiments::resume_training(*a->resume, options), true);
    if (!a->config_file) throw UsageError("expected one CONFIG file (or --resume RUN_DIR)");
    return report_outcome(experiments::run_training(a->config(*a->config_file), options), true);
  };
}

const CommandRegistration kRegistration(
    "train", "run an experiment config (pretrain, SFT, RL, eval) into a run directory",
    declare_train);

}  // namespace
}  // namespace sparserl::tools
