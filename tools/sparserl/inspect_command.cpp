// `sparserl inspect FILE.h5`: a summary of a trajectory file (docs/trajectories.md) - episodes,
// tasks, compile and correct rates, reward statistics, speedups, error kinds; per task with
// --per-task; as JSON with --json. It reads the file with the HDF5 C API and needs only
// /episodes/reward.
#include <iostream>

#include "cli.hpp"
#include "sparserl/experiments/trajectory_summary.hpp"

namespace sparserl::tools {
namespace {

int run_inspect(const std::vector<std::string>& argv) {
  Args args(argv, {"per-task", "json"});
  args.allow_only({});
  if (args.positional().size() != 1) throw UsageError("expected one trajectory file (FILE.h5)");
  const experiments::TrajectorySummary summary =
      experiments::summarize_trajectories(args.positional(0, "FILE.h5"));
  if (args.flag("json")) {
    std::cout << summary.to_json(args.flag("per-task")).dump(2) << "\n";
  } else {
    std::cout << summary.to_text(args.flag("per-task"));
  }
  return 0;
}

const CommandRegistration kInspect(
    {"inspect", "summarise a trajectory file (episodes, rates, rewards)",
     "usage: sparserl inspect FILE.h5 [--per-task] [--json]\n\n"
     "Summarises a trajectory file written by `sparserl rollout --out` or a run\n"
     "(RUN_DIR/trajectories.h5): episodes, tasks, policies, compile and correct\n"
     "rates (of evaluated episodes), reward mean / std / min / max, token lengths,\n"
     "geomean speedup over cuSPARSE and error kinds. Only /episodes/reward is\n"
     "required; other columns are used when present. Rows are the file's `rows`\n"
     "attribute, so a file left by a killed run reads cleanly.\n\n"
     "  --per-task   one line per task as well\n"
     "  --json       print the summary as JSON\n",
     run_inspect});

}  // namespace
}  // namespace sparserl::tools
