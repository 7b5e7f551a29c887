// GRPO (Shao et al. 2024, DeepSeekMath; TRL's GRPOTrainer, verl): no critic - G completions of one
// task are compared with each other. Per update:
//   A_i = (R_i - mean_g R) / (std_g R + eps)   (or R_i - mean_g R without scaling, Dr. GRPO),
//   the same A_i for every token of completion i;
//   per token: -min(r A, clip(r, 1 - eps_low, 1 + eps_high) A) + beta * k3(pi, pi_ref),
//   r = pi / pi_old, aggregated over the batch by token mean, sequence mean of token means, or
//   sequence mean of token sums.
// With one epoch and one minibatch pi_old is pi itself (detached), so r = 1 and the clip never
// acts, as in TRL's default num_iterations = 1; more epochs make the ratio and the clip matter, and
// so do samples drawn before the last update (Learner::old_log_probs_recorded): pi_old is then the
// sampling policy, its log-probabilities those recorded at sampling.
// Dynamic sampling (DAPO) is the filter form: groups whose rewards are all equal leave the batch
// before anything is scored, and none is sampled again to refill it.
// Its knobs (GrpoConfig, config.hpp) are declared here: [agent.grpo] in a config, "grpo.KEY" in a
// checkpoint.
#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "sparserl/agents/torch/learner.hpp"

namespace sparserl::agents {

namespace {

class Grpo final : public Algorithm {
 public:
  [[nodiscard]] std::string_view name() const override { return "grpo"; }
  [[nodiscard]] std::string_view summary() const override {
    return "GRPO (TRL's GRPOTrainer, verl): group-normalised advantages, clipped ratio, k3 KL to "
           "the reference in the loss.";
  }
  [[nodiscard]] bool corrects_stale_samples() const override { return true; }
  [[nodiscard]] datasets::Knobs<AgentConfig> knobs() const override {
    using C = GrpoConfig;
    return settings_knobs(
        datasets::Knobs<C>()
            .real("epsilon_low", &C::epsilon_low, "lower clip of the ratio", 1e-9, 1e6)
            .real("epsilon_high", &C::epsilon_high,
                  "upper clip of the ratio (DAPO's clip-higher when larger)", 1e-9, 1e6)
            .real("beta", &C::beta, "KL weight (0: no reference policy)", 0, 1e6)
            .boolean("scale_rewards", &C::scale_rewards, "divide by the group's standard deviation")
            .real("std_eps", &C::std_eps, "added to the group's standard deviation", 1e-12, 1e6)
            .choice("aggregation", &C::aggregation, "how per-token losses become one number (verl)",
                    {LossAggregation::token_mean, LossAggregation::seq_mean_token_mean,
                     LossAggregation::seq_mean_token_sum})
            .integer("epochs", &C::epochs, "passes over each batch (TRL num_iterations)", 1, 1e6)
            .integer("minibatches", &C::minibatches, "minibatches per pass", 1, 1e6)
            .boolean("dynamic_sampling", &C::dynamic_sampling,
                     "DAPO's dynamic sampling as a filter (verl algorithm.filter_groups): skip the "
                     "groups whose rewards are all equal (advantage 0 for every member); nothing is "
                     "resampled, so the update has fewer rows (statistics "
                     "dynamic_sampling/skipped_groups, /kept_rows)"));
  }
  [[nodiscard]] bool wants_reference(const AgentConfig& config) const override {
    return config.settings.get<GrpoConfig>().beta > 0;
  }
  env::Statistics update(Learner& learner, std::span<const Rollout> rollouts) override;

 private:
  // The update proper, on the rollouts dynamic sampling kept (maybe none on this rank).
  static env::Statistics update_rows(Learner& learner, std::span<const Rollout> rollouts,
                                     const GrpoConfig& config);
};

}  // namespace

torch::Tensor grpo_advantages(const torch::Tensor& rewards, const torch::Tensor& groups, bool scale,
                              double eps) {
  const torch::Tensor g = groups.to(rewards.device()).to(torch::kLong);
  const std::int64_t count = g.max().item<std::int64_t>() + 1;
  const torch::Tensor sizes =
      torch::zeros({count}, rewards.options()).index_add_(0, g, torch::ones_like(rewards));
  const torch::Tensor means =
      torch::zeros({count}, rewards.options()).index_add_(0, g, rewards) / sizes.clamp_min(1.0);
  const torch::Tensor centered = rewards - means.index_select(0, g);
  if (!scale) return centered;
  // Unbiased, as torch.std (TRL, verl); a group of one has std 0 and advantage 0 anyway.
  const torch::Tensor squares =
      torch::zeros({count}, rewards.options()).index_add_(0, g, centered * centered);
  const torch::Tensor stds = torch::sqrt(squares / (sizes - 1.0).clamp_min(1.0));
  return centered / (stds.index_select(0, g) + eps);
}

torch::Tensor aggregate_loss(const torch::Tensor& per_token, const torch::Tensor& valid,
                             LossAggregation mode) {
  const torch::Tensor mask = valid.to(per_token.dtype());
  switch (mode) {
    case LossAggregation::token_mean:
      return masked_mean(per_token, valid);
    case LossAggregation::seq_mean_token_mean:
      return ((per_token * mask).sum(1) / mask.sum(1).clamp_min(1.0)).mean();
    case LossAggregation::seq_mean_token_sum:
      return (per_token * mask).sum(1).mean();
  }
  return masked_mean(per_token, valid);
}

GrpoLoss grpo_loss(const torch::Tensor& log_probs, const torch::Tensor& old_log_probs,
                   const torch::Tensor& ref_log_probs, const torch::Tensor& advantages,
                   const torch::Tensor& valid, const GrpoConfig& config) {
  const torch::Tensor ratio = torch::exp(log_probs - old_log_probs);
  const torch::Tensor a = advantages.unsqueeze(1);
  const torch::Tensor clipped_ratio =
      torch::clamp(ratio, 1.0 - config.epsilon_low, 1.0 + config.epsilon_high);
  torch::Tensor per_token = -torch::min(ratio * a, clipped_ratio * a);
  torch::Tensor kl;
  if (config.beta > 0) {
    kl = kl_estimate(log_probs, ref_log_probs, KlEstimator::k3);
    per_token = per_token + config.beta * kl;
  }
  GrpoLoss out;
  out.loss = aggregate_loss(per_token, valid, config.aggregation);
  torch::NoGradGuard no_grad;
  const torch::Tensor low = (ratio < 1.0 - config.epsilon_low) & (a < 0);
  const torch::Tensor high = (ratio > 1.0 + config.epsilon_high) & (a > 0);
  out.clip_low = masked_mean(low.to(torch::kFloat), valid).item<double>();
  out.clip_high = masked_mean(high.to(torch::kFloat), valid).item<double>();
  if (kl.defined()) out.kl = masked_mean(kl, valid).item<double>();
  return out;
}

std::vector<std::size_t> varied_group_rows(std::span<const Rollout> rollouts) {
  std::map<int, std::pair<double, double>> range;  // group -> lowest and highest reward
  for (const Rollout& r : rollouts) {
    auto [it, fresh] = range.try_emplace(r.group, r.reward, r.reward);
    if (fresh) continue;
    it->second.first = std::min(it->second.first, r.reward);
    it->second.second = std::max(it->second.second, r.reward);
  }
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < rollouts.size(); ++i) {
    const auto& [low, high] = range.at(rollouts[i].group);
    if (low != high) rows.push_back(i);
  }
  return rows;
}

namespace {

std::size_t group_count(std::span<const Rollout> rollouts) {
  std::set<int> groups;
  for (const Rollout& r : rollouts) groups.insert(r.group);
  return groups.size();
}

}  // namespace

env::Statistics Grpo::update(Learner& learner, std::span<const Rollout> all_rollouts) {
  const GrpoConfig& config = learner.config.settings.get<GrpoConfig>();
  std::span<const Rollout> rollouts = all_rollouts;
  std::vector<Rollout> varied;
  env::Statistics filtered;
  if (config.dynamic_sampling) {
    const std::vector<std::size_t> rows = varied_group_rows(all_rollouts);
    if (rows.size() < all_rollouts.size()) {
      // A copy of the kept rollouts, so that the batch is the one those rollouts alone make.
      varied.reserve(rows.size());
      for (std::size_t i : rows) varied.push_back(all_rollouts[i]);
      rollouts = varied;
    }
    // Counts over every rank (whole groups sit on one rank); this rank's rows among the kept ones.
    double skipped = static_cast<double>(group_count(all_rollouts) - group_count(rollouts));
    double total_kept = static_cast<double>(rollouts.size());
    if (learner.distributed()) {
      learner.rows = rank_window(learner, static_cast<std::int64_t>(rollouts.size()));
      total_kept = static_cast<double>(learner.rows.total);
      skipped = learner.ranks->sum({skipped})[0];
    }
    filtered = {{"dynamic_sampling/skipped_groups", skipped},
                {"dynamic_sampling/kept_rows", total_kept}};
    // Nothing varied anywhere: no step (the learning-rate schedule follows the steps taken).
    if (total_kept == 0) {
      filtered.emplace_back("learning_rate", learner.current_lr());
      filtered.emplace_back("optimizer_steps", 0.0);
      return filtered;
    }
  }
  env::Statistics stats = update_rows(learner, rollouts, config);
  stats.insert(stats.end(), filtered.begin(), filtered.end());
  return stats;
}

env::Statistics Grpo::update_rows(Learner& learner, std::span<const Rollout> rollouts,
                                  const GrpoConfig& config) {
  // A rank that dynamic sampling left without rows scores nothing but still takes part in every
  // step's reductions (its minibatches are empty).
  const auto n = static_cast<std::int64_t>(rollouts.size());
  SequenceBatch batch;
  torch::Tensor advantages = torch::zeros({0}, torch::TensorOptions().device(learner.device));
  if (n > 0) {
    batch = rollout_batch(learner, rollouts);
    advantages = grpo_advantages(rollout_rewards(learner, rollouts), group_index(rollouts),
                                 config.scale_rewards, config.std_eps);
  }

  // One pass over fresh samples: the old policy is the current one (its log-probabilities
  // detached). Samples that may predate the last update bring the sampling policy's.
  const bool recorded = learner.old_log_probs_recorded;
  const bool single_pass = config.epochs == 1 && config.minibatches == 1 && !recorded;
  torch::Tensor old_log_probs, ref_log_probs;
  if (n > 0) {
    torch::NoGradGuard no_grad;
    learner.policy->eval();
    if (recorded) {
      old_log_probs = recorded_log_probs(learner, rollouts, batch);
    } else if (!single_pass) {
      old_log_probs = learner.score(learner.policy, batch, false).log_probs;
    }
    if (config.beta > 0 && !learner.reference.is_empty()) {
      ref_log_probs = learner.score(learner.reference, batch, false).log_probs;
    }
  }
  GrpoConfig effective = config;
  if (!ref_log_probs.defined()) effective.beta = 0;

  learner.policy->train();
  const double lr = learner.current_lr();
  double loss_sum = 0, clip_low = 0, clip_high = 0, kl = 0, entropy = 0, grad_norm = 0;
  int steps = 0;
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    for (const torch::Tensor& rows : minibatch_indices(learner, n, config.minibatches)) {
      // A rank may hold none of a data-parallel minibatch's rows: it adds nothing but still takes
      // part in the step's reductions.
      double tokens = 0, loss_weight = 0;
      GrpoLoss gl;
      torch::Tensor mean_entropy = torch::zeros({});
      if (rows.numel() > 0) {
        const SequenceBatch part = batch.select(rows);
        const TokenScores now = learner.score(learner.policy, part, true);
        const torch::Tensor old =
            single_pass ? now.log_probs.detach() : old_log_probs.index_select(0, rows);
        const torch::Tensor ref =
            ref_log_probs.defined() ? ref_log_probs.index_select(0, rows) : torch::Tensor();
        gl = grpo_loss(now.log_probs, old, ref, advantages.index_select(0, rows), part.valid,
                       effective);
        gl.loss.backward();
        mean_entropy = masked_mean(now.entropy, part.valid);
        tokens = part.valid.sum().item<double>();
        loss_weight = config.aggregation == LossAggregation::token_mean
                          ? tokens
                          : static_cast<double>(rows.numel());
      } else {
        gl.loss = torch::zeros({});
      }
      grad_norm += learner.optimizer_step(loss_weight);
      const std::vector<double> step = learner.shard_means({{gl.loss.item<double>(), loss_weight},
                                                            {gl.clip_low, tokens},
                                                            {gl.clip_high, tokens},
                                                            {gl.kl, tokens},
                                                            {mean_entropy.item<double>(), tokens}});
      loss_sum += step[0];
      clip_low += step[1];
      clip_high += step[2];
      kl += step[3];
      entropy += step[4];
      ++steps;
    }
  }
  const double s = std::max(1, steps);
  const MeanStd advantage = global_mean_std(learner, advantages);
  return {{"loss", loss_sum / s},
          {"kl", kl / s},
          {"entropy", entropy / s},
          {"clip_ratio/low_mean", clip_low / s},
          {"clip_ratio/high_mean", clip_high / s},
          {"clip_ratio/region_mean", (clip_low + clip_high) / s},
          {"advantages/mean", advantage.mean},
          {"advantages/std", advantage.std},
          {"grad_norm", grad_norm / s},
          {"learning_rate", lr},
          {"optimizer_steps", static_cast<double>(steps)}};
}

std::unique_ptr<Algorithm> make_grpo_algorithm() { return std::make_unique<Grpo>(); }

}  // namespace sparserl::agents
