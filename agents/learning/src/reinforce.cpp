// REINFORCE with the leave-one-out baseline (RLOO; Kool et al. 2019, Ahmadian et al. 2024, TRL's
// RLOOTrainer). For G completions of one task, each completion's baseline is the mean reward of the
// other G - 1, which is unbiased (it does not depend on the completion itself) and needs no critic.
// As in TRL, the KL to the reference enters the reward of the whole sequence:
//   R_i = reward_i - kl_coef * sum_t KL_t,   A_i = R_i - mean_{j != i} R_j,
//   loss = -mean_i( A_i * sum_t log pi(a_it) )   (the sum divided by the length when asked).
// One optimiser step per update (minibatches accumulate gradients): the estimator is on-policy.
// Its knobs (ReinforceConfig, config.hpp) are declared here: [agent.reinforce] in a config,
// "reinforce.KEY" in a checkpoint.
#include <torch/torch.h>

#include <stdexcept>

#include "sparserl/agents/torch/learner.hpp"

namespace sparserl::agents {

namespace {

class Reinforce final : public Algorithm {
 public:
  [[nodiscard]] std::string_view name() const override { return "reinforce"; }
  [[nodiscard]] std::string_view summary() const override {
    return "REINFORCE with the leave-one-out baseline (RLOO; TRL's RLOOTrainer).";
  }
  [[nodiscard]] datasets::Knobs<AgentConfig> knobs() const override {
    using C = ReinforceConfig;
    return settings_knobs(
        datasets::Knobs<C>()
            .real("kl_coef", &C::kl_coef, "weight of the KL to the reference in the reward", 0, 1e6)
            .choice("kl_estimator", &C::kl_estimator, "per-token KL estimator",
                    {KlEstimator::k1, KlEstimator::k2, KlEstimator::k3})
            .boolean("normalize_advantages", &C::normalize_advantages,
                     "whiten the advantages over the batch")
            .boolean("normalize_by_length", &C::normalize_by_length,
                     "divide each sequence's log-probability by its length")
            .integer("minibatches", &C::minibatches,
                     "gradient accumulation; one optimiser step per update", 1, 1e6));
  }
  [[nodiscard]] bool wants_reference(const AgentConfig& config) const override {
    return config.settings.get<ReinforceConfig>().kl_coef > 0;
  }
  env::Statistics update(Learner& learner, std::span<const Rollout> rollouts) override;
};

}  // namespace

torch::Tensor rloo_advantages(const torch::Tensor& rewards, const torch::Tensor& groups) {
  const torch::Tensor g = groups.to(rewards.device()).to(torch::kLong);
  const std::int64_t count = g.max().item<std::int64_t>() + 1;
  const torch::Tensor sums = torch::zeros({count}, rewards.options()).index_add_(0, g, rewards);
  const torch::Tensor sizes =
      torch::zeros({count}, rewards.options()).index_add_(0, g, torch::ones_like(rewards));
  const torch::Tensor n = sizes.index_select(0, g);
  const torch::Tensor others = (sums.index_select(0, g) - rewards) / (n - 1.0).clamp_min(1.0);
  // A group of one has no other member: its baseline is 0 (plain REINFORCE).
  const torch::Tensor baseline = torch::where(n > 1.0, others, torch::zeros_like(rewards));
  return rewards - baseline;
}

env::Statistics Reinforce::update(Learner& learner, std::span<const Rollout> rollouts) {
  const ReinforceConfig& config = learner.config.settings.get<ReinforceConfig>();
  const SequenceBatch batch = rollout_batch(learner, rollouts);
  const std::int64_t n = batch.size();
  const torch::Tensor rewards = rollout_rewards(learner, rollouts);
  const torch::Tensor valid = batch.valid.to(torch::kFloat);

  // The KL penalty of each sequence, from the policy before this update and the reference.
  torch::Tensor kl_tokens = torch::zeros_like(valid);
  if (config.kl_coef > 0 && !learner.reference.is_empty()) {
    torch::NoGradGuard no_grad;
    learner.policy->eval();
    const torch::Tensor old_log_probs = learner.score(learner.policy, batch, false).log_probs;
    const torch::Tensor ref_log_probs = learner.score(learner.reference, batch, false).log_probs;
    kl_tokens = kl_estimate(old_log_probs, ref_log_probs, config.kl_estimator) * valid;
  }
  const torch::Tensor kl_sequence = kl_tokens.sum(1);
  const torch::Tensor shaped = rewards - config.kl_coef * kl_sequence;
  torch::Tensor advantages = rloo_advantages(shaped, group_index(rollouts));
  if (config.normalize_advantages) {
    if (!learner.distributed()) {
      if (n > 1) advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8);
    } else if (learner.rows.total > 1) {
      const MeanStd whole = global_mean_std(learner, advantages);
      advantages = (advantages - whole.mean) / (whole.std + 1e-8);
    }
  }

  learner.policy->train();
  double loss_sum = 0, entropy_sum = 0;
  const double lr = learner.current_lr();
  for (const torch::Tensor& rows : minibatch_indices(learner, n, config.minibatches)) {
    if (rows.numel() == 0) continue;  // none of this data-parallel minibatch's rows is this rank's
    const SequenceBatch part = batch.select(rows);
    const TokenScores scores = learner.score(learner.policy, part, true);
    const torch::Tensor part_valid = part.valid.to(torch::kFloat);
    torch::Tensor sequence_log_prob = (scores.log_probs * part_valid).sum(1);
    if (config.normalize_by_length)
      sequence_log_prob = sequence_log_prob / part_valid.sum(1).clamp_min(1.0);
    // Divided by the whole batch's size so that accumulated minibatches give the batch mean.
    const torch::Tensor loss =
        -(advantages.index_select(0, rows) * sequence_log_prob).sum() / double(n);
    loss.backward();
    loss_sum += loss.item<double>();
    entropy_sum += masked_sum(scores.entropy, part.valid).item<double>();
  }
  // The loss is a mean over this rank's n sequences: so is its gradient, weighted by n.
  const double grad_norm = learner.optimizer_step(static_cast<double>(n));
  const double tokens = valid.sum().item<double>();
  const std::vector<double> means =
      learner.shard_means({{loss_sum, static_cast<double>(n)},
                           {tokens > 0 ? kl_tokens.sum().item<double>() / tokens : 0.0, tokens},
                           {tokens > 0 ? entropy_sum / tokens : 0.0, tokens}});
  const MeanStd advantage = global_mean_std(learner, advantages);
  return {{"loss", means[0]},
          {"kl", means[1]},
          {"kl/sequence_mean", global_mean(learner, kl_sequence)},
          {"entropy", means[2]},
          {"objective/rlhf_reward", global_mean(learner, shaped)},
          {"advantages/mean", advantage.mean},
          {"advantages/std", advantage.std},
          {"grad_norm", grad_norm},
          {"learning_rate", lr}};
}

std::unique_ptr<Algorithm> make_reinforce_algorithm() { return std::make_unique<Reinforce>(); }

}  // namespace sparserl::agents
