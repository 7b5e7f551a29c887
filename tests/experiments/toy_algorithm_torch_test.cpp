// A learning algorithm from outside the library, trained end to end: tests/agents/toy_algorithm.cpp
// defines "toy" with a knob of its own (toy.weight) and registers it with one line; this executable
// links it beside the command line's commands and runs `sparserl train` in-process through
// run_sparserl, as main() does, on the tests' tiny CPU config (the reward's compile stage runs
// through NVRTC). The run completes, metrics.jsonl has the toy's statistics, the knob is in
// config.resolved.toml and in the checkpoint, and an unknown algorithm is refused naming the key
// and listing the registered names, the toy among them.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cli.hpp"
#include "sparserl/agents/algorithm.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/env/vocabulary.hpp"
#include "sparserl/experiments/metrics.hpp"
#include "sparserl/experiments/run_info.hpp"
#include "test_support.hpp"
#include "tiny_train_config.hpp"

namespace fs = std::filesystem;
namespace ex = sparserl::experiments;
using sparserl::testing::has_substring;

namespace {

// The tests' tiny config (every stage in seconds on a core), its rl stage given to the toy.
const std::vector<std::string> kToy = {"--set", "agent.algorithm=toy", "--set",
                                       "agent.toy.weight=0.5", "--set", "train.rl_updates=3"};

struct Result {
  int status = -1;
  std::string err;  // stderr
};

// `sparserl ARGS...` in this process, stderr captured.
Result sparserl_cli(const std::vector<std::string>& args) {
  std::ostringstream err;
  std::streambuf* const old_err = std::cerr.rdbuf(err.rdbuf());
  Result r;
  try {
    r.status = sparserl::tools::run_sparserl(args);
  } catch (...) {
    std::cerr.rdbuf(old_err);
    throw;
  }
  std::cerr.rdbuf(old_err);
  r.err = err.str();
  return r;
}


}  // namespace

TEST_CASE("an algorithm registered from the test folder trains through sparserl train",
          "[experiments][train][agents]") {
  const fs::path dir = sparserl::testing::scratch_dir("toy_algorithm_train");
  std::ofstream(dir / "tiny.toml") << sparserl::testing::kTinyConfig;
  std::vector<std::string> args = {"train", (dir / "tiny.toml").string(), "--runs-dir",
                                   (dir / "runs").string()};
  args.insert(args.end(), kToy.begin(), kToy.end());
  const Result r = sparserl_cli(args);
  INFO(r.err);
  REQUIRE(r.status == 0);
  const fs::path run = sparserl::testing::only_run(dir / "runs");
  CHECK(ex::read_run_info(run / "run.json").status == ex::RunStatus::completed);

  int updates = 0;
  for (const ex::MetricsRecord& record : ex::read_metrics(run / "metrics.jsonl").records) {
    if (record.stage != "rl") continue;
    ++updates;
    INFO("step " << record.step);
    REQUIRE(record.get("toy/loss").has_value());
    CHECK(std::isfinite(*record.get("toy/loss")));
    CHECK(record.get("toy/best_reward").has_value());
    CHECK(record.get("toy/weight") == 0.5);
    CHECK(record.get("reward/mean").has_value());  // PolicyAgent's rollout statistics, as for all
  }
  CHECK(updates == 3);

  const std::string resolved = sparserl::testing::read_bytes(run / "config.resolved.toml");
  CHECK_THAT(resolved, has_substring("algorithm = \"toy\""));
  CHECK_THAT(resolved, has_substring("\n[agent.toy]\nweight = 0.5\n"));
  const std::string checkpoint =
      sparserl::testing::read_bytes(run / "policies" / "rl" / "checkpoint.txt");
  CHECK_THAT(checkpoint, has_substring("config.agent.algorithm = toy\n"));
  CHECK_THAT(checkpoint, has_substring("config.toy.weight = 0.5\n"));
  const auto agent = sparserl::agents::PolicyAgent::from_checkpoint(run / "policies" / "rl");
  CHECK(agent->name() == "toy");
}

TEST_CASE("an unknown algorithm is refused naming the key and the registered algorithms",
          "[experiments][agents]") {
  const fs::path dir = sparserl::testing::scratch_dir("toy_algorithm_unknown");
  std::string text = sparserl::testing::kTinyConfig;
  text.replace(text.find("algorithm = \"grpo\""), 18, "algorithm = \"dqn\"");
  std::ofstream(dir / "dqn.toml") << text;
  const Result r =
      sparserl_cli({"train", (dir / "dqn.toml").string(), "--runs-dir", (dir / "runs").string()});
  CHECK(r.status != 0);
  CHECK_THAT(r.err, has_substring("dqn.toml:27: key 'agent.algorithm': 'dqn' is not one of: sft, "
                                  "reinforce, ppo, grpo, toy"));
  CHECK_FALSE(fs::exists(dir / "runs"));

  // The agent refuses it the same way, and so does the registry.
  sparserl::agents::AgentConfig config;
  config.algorithm = "dqn";
  REQUIRE(config.validate().has_value());
  CHECK_THAT(*config.validate(),
             has_substring("agent.algorithm: 'dqn' is not one of: sft, reinforce, ppo, grpo, toy"));
  CHECK_THROWS_WITH(sparserl::agents::AlgorithmRegistry::make("dqn"),
                    has_substring("agent.algorithm = 'dqn': expected one of sft, reinforce, ppo, "
                                  "grpo, toy"));
  CHECK_THROWS_WITH(sparserl::agents::AlgorithmRegistry::add(
                        "toy", [] { return sparserl::agents::AlgorithmRegistry::make("toy"); }),
                    has_substring("registered twice"));
}
