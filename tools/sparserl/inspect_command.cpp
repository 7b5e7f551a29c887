// `sparserl inspect FILE.h5`: a summary of a trajectory file (docs/trajectories.md) - episodes,
// tasks, compile and correct rates, reward statistics, speedups, error kinds; per task with
// --per-task; as JSON with --json. It reads the file with the HDF5 C API and needs only
// /episodes/reward. With --compare A B: two policies of the file task by task instead
// (policy_comparison.hpp), with --sources the diff of each pair of differing programs.
#include <iostream>

#include "cli.hpp"
#include "sparserl/experiments/policy_comparison.hpp"
#include "sparserl/experiments/trajectory_summary.hpp"

namespace sparserl::tools {
namespace {

int run_inspect(const std::vector<std::string>& argv) {
  Args args(argv, {"per-task", "json", "sources", "compare"});
  args.allow_only({});
  if (args.flag("compare")) {
    // --compare A B: the file and the two policies are the positional arguments.
    if (args.positional().size() != 3)
      throw UsageError("--compare needs two policies: sparserl inspect FILE.h5 --compare A B");
    if (args.flag("json") || args.flag("per-task"))
      throw UsageError("--compare prints its own table (no --json / --per-task)");
    const experiments::PolicyComparison c = experiments::compare_policies(
        args.positional(0, "FILE.h5"), args.positional(1, "A"), args.positional(2, "B"));
    std::cout << c.to_text(args.flag("sources"));
    return 0;
  }
  if (args.flag("sources")) throw UsageError("--sources goes with --compare A B");
  if (args.positional().size() != 1) throw UsageError("expected one trajectory file (FILE.h5)");
  const experiments::TrajectorySummary summary =
      experiments::summarize_trajectories(args.positional(0, "FILE.h5"));
  if (args.flag("json")) {
    std::cout << experiments::dump_json(summary.to_json(args.flag("per-task")), 2) << "\n";
  } else {
    std::cout << summary.to_text(args.flag("per-task"));
  }
  return 0;
}

const CommandRegistration kInspect(
    {"inspect", "summarise a trajectory file (episodes, rates, rewards)",
     "usage: sparserl inspect FILE.h5 [--per-task] [--json]\n"
     "       sparserl inspect FILE.h5 --compare A B [--sources]\n\n"
     "Summarises a trajectory file written by `sparserl rollout --out` or a run\n"
     "(RUN_DIR/trajectories.h5): episodes, tasks, policies, compile and correct\n"
     "rates (of evaluated episodes), reward mean / std / min / max, token lengths,\n"
     "geomean speedup over cuSPARSE and error kinds. Only /episodes/reward is\n"
     "required; other columns are used when present. Rows are the file's `rows`\n"
     "attribute, so a file left by a killed run reads cleanly.\n\n"
     "  --per-task   one line per task as well\n"
     "  --json       print the summary as JSON\n"
     "  --compare A B\n"
     "               policies A and B of the file task by task (each one's first episode\n"
     "               per task; A may name a bench agent, for its AGENT:greedy answers):\n"
     "               their programs and speedups, and the geometric mean of B / A\n"
     "  --sources    with --compare: the line diff of every pair of differing programs\n",
     run_inspect});

}  // namespace
}  // namespace sparserl::tools
