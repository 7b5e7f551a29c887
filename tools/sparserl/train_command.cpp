// `sparserl train`: runs the stages of an experiment config (pretrain, SFT, RL, evaluation) into a
// new run directory, or continues a stopped run from its last checkpoint. The work is the
// experiment runner's (experiments/include/sparserl/experiments/runner.hpp); this file reads the
// arguments and prints where the run and its report are. With --gpus N it starts N ranks of itself
// instead (launcher.hpp) and waits for them; started by torchrun or Slurm it joins their world.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "cli.hpp"
#include "launcher.hpp"
#include "options.hpp"
#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/runner.hpp"

namespace sparserl::tools {
namespace {

struct TrainArgs : RunArgs {
  std::optional<std::string> config_file;
  std::optional<std::string> resume;
  int gpus = 1;
};

// `sparserl train ... --gpus N`: the same command line without --gpus, once per rank.
int launch(const std::vector<std::string>& argv, int gpus) {
  if (std::getenv("WORLD_SIZE") != nullptr) {
    throw UsageError(
        "--gpus: this process is already one rank of WORLD_SIZE = " +
        std::string(std::getenv("WORLD_SIZE")) +
        " (torchrun or Slurm started it); drop --gpus and let the launcher start the ranks");
  }
  LaunchPlan plan;
  plan.argv = {std::filesystem::read_symlink("/proc/self/exe").string(), "train"};
  for (const std::string& a : without_option(argv, "--gpus")) plan.argv.push_back(a);
  plan.ranks = gpus;
  plan.log_dir =
      std::filesystem::temp_directory_path() / ("sparserl-train-" + std::to_string(::getpid()));
  const int status = launch_ranks(plan);
  if (status == 0) {
    std::error_code ignored;  // the ranks' logs are only kept when a rank failed
    datasets::remove_tree(plan.log_dir, ignored);
  }
  return status;
}

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
      "Several GPUs: --gpus N starts N ranks (rank R > 0 logs to $TMPDIR/sparserl-train-PID/);\n"
      "torchrun or Slurm may start the ranks instead (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,\n"
      "MASTER_PORT set). Rank 0 writes the run directory.\n"
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
  app.add_option("--gpus", a->gpus,
                 "start N ranks of this command on this host, one per GPU (cuda:0 .. cuda:N-1), "
                 "as torchrun would (docs/distributed.md); under torchrun or Slurm leave it out")
      ->check(at_least(1))
      ->type_name("N");
  one_of(app.add_option("--backend", a->options.backend,
                        "how the ranks reduce gradients: nccl between GPUs, gloo between CPU "
                        "processes; auto takes nccl when the ranks train on CUDA"),
         {"auto", "gloo", "nccl"});
  return [a](const std::vector<std::string>& argv) {
    if (a->gpus > 1) return launch(argv, a->gpus);
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
