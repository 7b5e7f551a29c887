// GRPO's dynamic sampling (DAPO, as a filter): a group whose rewards are all equal leaves the
// update - the update on a batch with such a group is, bit for bit, the update on the batch without
// it, the statistics count the skipped groups, and a batch with nothing left takes no step. Without
// the knob the same group changes the update (its tokens count in the token mean, its KL term pulls
// towards the reference), which is what makes the first check able to fail.
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "agents_torch_test_support.hpp"
#include "catch.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/torch/learner.hpp"
#include "sparserl/agents/training.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::agents;
using namespace sparserl::agents::testing;

AgentConfig grpo_config(bool dynamic_sampling) {
  AgentConfig config = tiny_config(env::MaskMode::syntax, 48);
  config.algorithm = "grpo";
  config.optimizer.lr = 1e-3;
  config.policy.dropout = 0;
  config.settings.get<GrpoConfig>().beta = 0.04;
  config.settings.get<GrpoConfig>().aggregation = LossAggregation::token_mean;
  config.settings.get<GrpoConfig>().dynamic_sampling = dynamic_sampling;
  return config;
}

// Three groups of four completions: group 1's rewards are all 0.5, the others' vary.
std::vector<Rollout> rollouts_with_a_flat_group() {
  PolicyAgent sampler(grpo_config(false), vocabulary());
  const std::vector<std::shared_ptr<const env::MatrixObservation>> prompts = {
      synthetic_observation(1), synthetic_observation(2), synthetic_observation(3)};
  return sampled_rollouts(sampler, prompts, 4, [](std::size_t k, const Completion&) {
    return k / 4 == 1 ? 0.5 : static_cast<double>(k % 3);
  });
}

}  // namespace

TEST_CASE("GRPO's dynamic sampling leaves out the groups without reward variance",
          "[agents][rl][grpo]") {
  const std::vector<Rollout> all = rollouts_with_a_flat_group();
  std::vector<Rollout> without_flat;
  for (const Rollout& r : all) {
    if (r.group != 1) without_flat.push_back(r);
  }
  REQUIRE(without_flat.size() == 8);

  SECTION("the rows kept: those of groups whose rewards differ; a group of one is flat") {
    CHECK(varied_group_rows(all) == std::vector<std::size_t>{0, 1, 2, 3, 8, 9, 10, 11});
    std::vector<Rollout> one = {all[0], all[4]};
    one[1].group = 7;
    CHECK(varied_group_rows(one).empty());
  }

  SECTION("with a flat group the update is the update without it") {
    // Same seed, so the same initial weights; two updates each, so that the KL term (zero
    // gradient while the policy is its reference) acts in the second.
    PolicyAgent filtered(grpo_config(true), vocabulary());
    PolicyAgent reference_batch(grpo_config(true), vocabulary());
    PolicyAgent unfiltered(grpo_config(false), vocabulary());
    REQUIRE(filtered.weights_digest() == unfiltered.weights_digest());
    for (int update = 0; update < 2; ++update) {
      const env::Statistics a = filtered.update_rollouts(all);
      const env::Statistics b = reference_batch.update_rollouts(without_flat);
      const env::Statistics c = unfiltered.update_rollouts(all);
      CHECK(find_statistic(a, "dynamic_sampling/skipped_groups") == 1.0);
      CHECK(find_statistic(a, "dynamic_sampling/kept_rows") == 8.0);
      CHECK(find_statistic(b, "dynamic_sampling/skipped_groups") == 0.0);
      CHECK(find_statistic(a, "loss") == find_statistic(b, "loss"));
      CHECK(find_statistic(a, "loss") != find_statistic(c, "loss"));
      // The batch's own statistics still describe every sampled program.
      CHECK(find_statistic(a, "reward/frac_zero_std") == find_statistic(c, "reward/frac_zero_std"));
      CHECK(find_statistic(a, "reward/frac_zero_std") > 0.3);
    }
    CHECK(filtered.weights_digest() == reference_batch.weights_digest());
    CHECK(filtered.weights_digest() != unfiltered.weights_digest());
  }

  SECTION("a batch of flat groups takes no step") {
    PolicyAgent agent(grpo_config(true), vocabulary());
    std::vector<Rollout> flat = all;
    for (Rollout& r : flat) r.reward = 1.0;
    const std::string before = agent.weights_digest();
    const env::Statistics stats = agent.update_rollouts(flat);
    CHECK(find_statistic(stats, "dynamic_sampling/skipped_groups") == 3.0);
    CHECK(find_statistic(stats, "dynamic_sampling/kept_rows") == 0.0);
    CHECK(find_statistic(stats, "optimizer_steps") == 0.0);
    CHECK(agent.weights_digest() == before);
  }

  SECTION("the knob by its key") {
    AgentConfig config = grpo_config(false);
    apply_key_value(config, "grpo.dynamic_sampling", "true");
    CHECK(config.settings.get<GrpoConfig>().dynamic_sampling);
  }
}
