// `sparserl quickstart`: the README's main job - `sparserl train
// experiments/configs/quickstart.toml` from the project root - ending with where its report is. On
// a CPU it takes minutes with a tiny policy and the compile-only reward; on a GPU the same config
// gets the full reward.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "options.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/run_info.hpp"
#include "sparserl/experiments/runner.hpp"

namespace sparserl::tools {
namespace {

namespace fs = std::filesystem;

Run declare_quickstart(CLI::App& app) {
  app.description(
      "Trains and evaluates a tiny policy end to end: `sparserl train\n"
      "ROOT/experiments/configs/quickstart.toml --root ROOT`. The corpus and the SFT pairs are\n"
      "built in-process from the kernel design space for a few matrices of the shared split; then\n"
      "a short pretraining, a short SFT, a few GRPO updates and a greedy evaluation. Prints where\n"
      "the run directory and its report.md are. About 3 minutes on a 2-core CPU, where the reward\n"
      "is the compile stage alone.");
  app.footer(kRunExitStatus);
  auto a = std::make_shared<RunArgs>();
  add_run_options(app, *a, "train.rl_updates=2");
  app.get_option("--root")->description(
      "the project root (default: the source tree this build came from, else "
      "the working "
      "directory); matrices come from ROOT/../shared/matrices");
  app.get_option("--runs-dir")->description("where the run directory goes (default: ROOT/runs)");
  app.get_option("--set")->description("override a key of quickstart.toml (repeatable)");
  return [a](const std::vector<std::string>& argv) {
    experiments::RunnerOptions options = a->runner_options("quickstart", argv);
    if (!options.root) {
      options.root = experiments::project_source_dir();
      if (options.root->empty()) options.root = fs::current_path();
    }
    const fs::path config_file = *options.root / "experiments" / "configs" / "quickstart.toml";
    std::error_code ec;
    if (!fs::is_regular_file(config_file, ec)) {
      throw UsageError(config_file.string() + " not found: give the project root with --root DIR");
    }
    const experiments::RunOutcome outcome =
        experiments::run_training(a->config(config_file), options);
    const int status = report_outcome(outcome, true);
    if (outcome.status == experiments::RunStatus::completed && !outcome.report.empty()) {
      std::cout << "\nThe quickstart's report: " << outcome.report.string() << "\n";
    }
    return status;
  };
}

const CommandRegistration kRegistration(
    "quickstart", "train and evaluate a tiny policy end to end; prints where the report is",
    declare_quickstart);

}  // namespace
}  // namespace sparserl::tools
