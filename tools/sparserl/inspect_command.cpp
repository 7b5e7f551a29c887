// `sparserl inspect FILE.h5`: a summary of a trajectory file (docs/trajectories.md) - episodes,
// tasks, compile and correct rates, reward statistics, speedups, error kinds; per task with
// --per-task; as JSON with --json. It reads the file with the HDF5 C API and needs only
// /episodes/reward. With --compare A B: two policies of the file task by task instead
// (policy_comparison.hpp), with --sources the diff of each pair of differing programs.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "options.hpp"
#include "sparserl/experiments/policy_comparison.hpp"
#include "sparserl/experiments/trajectory_summary.hpp"

namespace sparserl::tools {
namespace {

struct InspectArgs {
  std::string file;
  std::vector<std::string> compare;  // policies A and B
  bool per_task = false;
  bool json = false;
  bool sources = false;
};

int run_inspect(const InspectArgs& a) {
  if (!a.compare.empty()) {
    if (a.compare.size() != 2)
      throw UsageError(
          "--compare needs two policies: sparserl inspect FILE.h5 "
          "--compare A B");
    const experiments::PolicyComparison c =
        experiments::compare_policies(a.file, a.compare[0], a.compare[1]);
    std::cout << c.to_text(a.sources);
    return 0;
  }
  const experiments::TrajectorySummary summary = experiments::summarize_trajectories(a.file);
  if (a.json) {
    std::cout << experiments::dump_json(summary.to_json(a.per_task), 2) << "\n";
  } else {
    std::cout << summary.to_text(a.per_task);
  }
  return 0;
}

Run declare_inspect(CLI::App& app) {
  app.description(
      "Summarises a trajectory file written by `sparserl rollout --out` or a run\n"
      "(RUN_DIR/trajectories.h5): episodes, tasks, policies, compile and correct\n"
      "rates (of evaluated episodes), reward mean / std / min / max, token lengths,\n"
      "geomean speedup over cuSPARSE and error kinds. Only /episodes/reward is\n"
      "required; other columns are used when present. Rows are the file's `rows`\n"
      "attribute, so a file left by a killed run reads cleanly.");
  auto a = std::make_shared<InspectArgs>();
  app.add_option("FILE.h5", a->file, "the trajectory file")->required();
  // Up to two values, so that one policy is our message (two needed), not CLI11's.
  CLI::Option* compare = app.add_option("--compare", a->compare,
                                        "policies A and B of the file task by task (each one's "
                                        "first episode per "
                                        "task; A may name a bench agent, for its AGENT:greedy "
                                        "answers): their "
                                        "programs and speedups, and the geometric mean of B / A")
                             ->type_name("A B")
                             ->expected(1, 2);
  app.add_flag("--sources", a->sources,
               "with --compare: the line diff of every pair of differing programs")
      ->needs(compare);
  app.add_flag("--per-task", a->per_task, "one line per task as well")->excludes(compare);
  app.add_flag("--json", a->json, "print the summary as JSON")->excludes(compare);
  return [a](const std::vector<std::string>&) { return run_inspect(*a); };
}

const CommandRegistration kInspect("inspect",
                                   "summarise a trajectory file (episodes, rates, rewards)",
                                   declare_inspect);

}  // namespace
}  // namespace sparserl::tools
