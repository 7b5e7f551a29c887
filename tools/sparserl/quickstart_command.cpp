// `sparserl quickstart`: the README's main job - `sparserl train
// experiments/configs/quickstart.toml` from the project root - ending with where its report is. On
// a CPU it takes minutes with a tiny policy and the compile-only reward; on a GPU the same config
// gets the full reward.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/run_info.hpp"
#include "sparserl/experiments/runner.hpp"

namespace sparserl::tools {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: sparserl quickstart [--root DIR] [--runs-dir DIR] [--set section.key=value]...\n"
    "\n"
    "Trains and evaluates a tiny policy end to end: `sparserl train\n"
    "ROOT/experiments/configs/quickstart.toml --root ROOT`. The corpus and the SFT pairs are\n"
    "built in-process from the kernel design space for a few matrices of the shared split; then\n"
    "a short pretraining, a short SFT, a few GRPO updates and a greedy evaluation. Prints where\n"
    "the run directory and its report.md are. About 3 minutes on a 2-core CPU, where the reward\n"
    "is the compile stage alone.\n"
    "\n"
    "  --root DIR        the project root (default: the source tree this build came from, else\n"
    "                    the working directory); matrices come from ROOT/../shared/matrices\n"
    "  --runs-dir DIR    where the run directory goes (default: ROOT/runs)\n"
    "  --set KEY=VALUE   override a key of quickstart.toml (repeatable)\n"
    "\n"
    "exit status: 0 completed, 130 interrupted, 1 failed (the error is named), 2 bad arguments\n";

int run_quickstart(const std::vector<std::string>& argv) {
  const Args args(argv, {});
  args.allow_only({"set", "root", "runs-dir"});
  if (!args.positional().empty()) {
    throw UsageError("unexpected argument '" + args.positional().front() + "'");
  }
  fs::path root;
  if (auto given = args.option("root")) {
    root = *given;
  } else {
    root = experiments::project_source_dir();
    if (root.empty()) root = fs::current_path();
  }
  const fs::path config_file = root / "experiments" / "configs" / "quickstart.toml";
  std::error_code ec;
  if (!fs::is_regular_file(config_file, ec)) {
    throw UsageError(config_file.string() + " not found: give the project root with --root DIR");
  }
  experiments::RunnerOptions options;
  options.root = root;
  if (auto runs = args.option("runs-dir")) options.runs_dir = *runs;
  options.command = "sparserl quickstart";
  for (const std::string& a : argv) options.command += " " + a;
  experiments::Config config = experiments::Config::load(config_file, args.all("set"));
  const experiments::RunOutcome outcome = experiments::run_training(std::move(config), options);
  std::cout << experiments::describe_outcome(outcome, true);
  if (outcome.status == experiments::RunStatus::completed && !outcome.report.empty()) {
    std::cout << "\nThe quickstart's report: " << outcome.report.string() << "\n";
  }
  return experiments::exit_status(outcome);
}

const CommandRegistration kRegistration(Command{
    "quickstart", "train and evaluate a tiny policy end to end; prints where the report is", kUsage,
    run_quickstart});

}  // namespace
}  // namespace sparserl::tools
