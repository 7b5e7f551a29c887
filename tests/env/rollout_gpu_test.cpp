// On a GPU host: `sparserl rollout --agent template` over shared SuiteSparse matrices writes
// correct kernels, and the reward of every recorded episode is the reward the evaluator gives the
// same program when it is evaluated again on its own. Skips itself without a GPU or without
// ../shared.
#include <cstdio>
#include <filesystem>

#include "catch.hpp"
#include "env_test_support.hpp"
#include "sparserl/env/evaluator_backend.hpp"
#include "sparserl/env/trajectory.hpp"
#include "sparserl/reward/reward.hpp"

namespace {

using sparserl::env::fixtures::run;

}  // namespace

namespace {

struct TemplateRun {
  std::filesystem::path matrices;
  sparserl::env::EvaluatorBackendOptions options;
  sparserl::env::TrajectoryFile file;
};

// Runs `sparserl rollout --agent template` on four shared matrices once per test process.
const TemplateRun& template_run() {
  using namespace sparserl;
  static const TemplateRun run_result = [] {
    TemplateRun t;
    t.matrices = sparserl::testing::shared_matrices_dir();
    const auto dir = sparserl::testing::scratch_dir("rollout_gpu");
    t.options.worker = SPARSERL_WORKER_PATH;
    t.options.data_dir = dir;
    t.options.indexes = {t.matrices};
    {
      auto probe = env::make_evaluator_backend(t.options);
      if (!probe->gpu_available()) sparserl::testing::skip("no GPU: " + probe->describe());
    }
    const std::vector<std::string> uris = {
        "suitesparse-v1/HB/494_bus", "suitesparse-v1/Pajek/Erdos971", "suitesparse-v1/Gset/G51",
        "suitesparse-v1/JGD_Franz/Franz6_id1959_aug"};
    std::string command =
        std::string(SPARSERL_CLI_PATH) + " rollout --worker " + SPARSERL_WORKER_PATH +
        " --agent template --episodes 4 --envs 4 --template-budget 6 --json --seed 1" +
        " --index '" + t.matrices.string() + "' --data-dir '" + dir.string() + "' --out '" +
        (dir / "template.h5").string() + "'";
    for (const std::string& uri : uris) command += " --matrix " + uri;
    int status = 0;
    const std::string output = run(command, status);
    INFO(output);
    REQUIRE(status == 0);
    REQUIRE_THAT(output, sparserl::testing::has_substring("\"gpu\":true"));
    t.file = env::read_trajectories(dir / "template.h5");
    return t;
  }();
  return run_result;
}

}  // namespace

TEST_CASE("template rollouts on the GPU give correct kernels rewarded by their EvalResult",
          "[env][gpu][rollout]") {
  using namespace sparserl;
  const TemplateRun& run_result = template_run();
  REQUIRE(run_result.file.episodes.size() == 4);
  const reward::HierarchicalReward rewarder;
  for (const env::Episode& e : run_result.file.episodes) {
    INFO(e.task.str() << "\n" << e.source);
    REQUIRE(e.eval.has_value());
    INFO(e.eval->to_json());
    CHECK(e.eval->error == reward::ErrorKind::none);
    CHECK(e.eval->correct);
    CHECK(e.eval->timed);
    CHECK(e.eval->timing.speedup > 0);
    // The recorded reward is the hierarchical reward of the recorded evaluation.
    CHECK(e.reward == Approx(rewarder(*e.eval)));
  }
}

TEST_CASE("the evaluator asked again about a recorded template program agrees",
          "[env][gpu][rollout]") {
  using namespace sparserl;
  const TemplateRun& run_result = template_run();
  const reward::HierarchicalReward rewarder;
  // The evaluator on its own, in this process: same verdict, a speed term within timing noise.
  auto backend = env::make_evaluator_backend(run_result.options);
  for (const env::Episode& e : run_result.file.episodes) {
    INFO(e.task.str() << "\n" << e.source);
    REQUIRE(e.eval.has_value());
    auto future = backend->submit(e.task, e.source);
    const reward::EvalResult again = env::take_result(future);
    INFO(again.to_json());
    CHECK(again.correct);
    CHECK(again.timed);
    const reward::RewardBreakdown a = rewarder.breakdown(*e.eval), b = rewarder.breakdown(again);
    CHECK(a.compile == b.compile);
    CHECK(a.test == b.test);
    CHECK(b.speedup == Approx(a.speedup).epsilon(0.5));
  }
}
