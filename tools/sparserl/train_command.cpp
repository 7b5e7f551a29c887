// `sparserl train`: runs the stages of an experiment config (pretrain, SFT, RL, evaluation) into a
// new run directory, or continues a stopped run from its last checkpoint. The work is the
// experiment runner's (experiments/include/sparserl/experiments/runner.hpp); this file reads the
// arguments and prints where the run and its report are.
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/runner.hpp"

namespace sparserl::tools {
namespace {

constexpr const char* kUsage =
    "usage: sparserl train CONFIG [--set section.key=value]... [--root DIR] [--runs-dir DIR]\n"
    "       sparserl train --resume RUN_DIR [--root DIR]\n"
    "\n"
    "Runs the stages of train.stages (pretrain -> sft -> rl -> eval) as CONFIG describes them\n"
    "(docs/config.md lists every key) into a new run directory\n"
    "<experiment.output_dir>/<experiment.name>__<seed>__<UTC time>/ holding config.resolved.toml,\n"
    "run.json, metrics.jsonl, trajectories.h5 (RL episodes), checkpoints/, policies/<stage>/,\n"
    "results.csv (eval), report.md and plots/ (docs/experiments.md).\n"
    "\n"
    "  --set KEY=VALUE   override one key (repeatable), checked like the file: --set\n"
    "                    train.rl_updates=10 --set agent.algorithm=ppo\n"
    "  --root DIR        the folder relative paths of the config start from (default:\n"
    "                    experiment.root, relative to the config file's folder)\n"
    "  --runs-dir DIR    where the run directory goes (default: experiment.output_dir)\n"
    "  --resume RUN_DIR  continue a stopped run from its latest checkpoint; metrics and\n"
    "                    trajectories logged after it are dropped first\n"
    "\n"
    "Ctrl-C (SIGINT) or SIGTERM stops the run at the next step boundary: a checkpoint is saved,\n"
    "run.json says interrupted and the report is written. A second Ctrl-C kills at once.\n"
    "Without a GPU the reward is the compile stage alone (said once on stderr).\n"
    "\n"
    "exit status: 0 completed, 130 interrupted, 1 failed (the error is named), 2 bad arguments\n";

int run_train(const std::vector<std::string>& argv) {
  const Args args(argv, {});
  args.allow_only({"set", "root", "runs-dir", "resume"});
  experiments::RunnerOptions options;
  if (auto root = args.option("root")) options.root = *root;
  if (auto runs = args.option("runs-dir")) options.runs_dir = *runs;
  options.command = "sparserl train";
  for (const std::string& a : argv) options.command += " " + a;
  if (auto resume = args.option("resume")) {
    if (!args.positional().empty()) throw UsageError("--resume takes no CONFIG");
    if (!args.all("set").empty() || options.runs_dir) {
      throw UsageError("--resume continues the run as configured: no --set or --runs-dir");
    }
    const experiments::RunOutcome outcome = experiments::resume_training(*resume, options);
    std::cout << experiments::describe_outcome(outcome, true);
    return experiments::exit_status(outcome);
  }
  if (args.positional().size() != 1) throw UsageError("expected one CONFIG file");
  experiments::Config config =
      experiments::Config::load(args.positional(0, "CONFIG"), args.all("set"));
  const experiments::RunOutcome outcome = experiments::run_training(std::move(config), options);
  std::cout << experiments::describe_outcome(outcome, true);
  return experiments::exit_status(outcome);
}

const CommandRegistration kRegistration(Command{
    "train", "run an experiment config (pretrain, SFT, RL, eval) into a run directory", kUsage,
    run_train});

}  // namespace
}  // namespace sparserl::tools
