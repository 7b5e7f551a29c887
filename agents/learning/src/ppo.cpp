// PPO for a token-level policy (Schulman et al. 2017; Ziegler et al. 2019; TRL's PPOTrainer and
// verl), the RL stage of the method. Actor and critic both start from the SFT model: they share the
// transformer trunk (a value head on it; ppo.critic = shared) or the critic is a network of its
// own, a copy of the policy made at the first update (ppo.critic = separate). Per update:
//   1. score the rollouts with the policy before the update (log pi_old), the critic (V_old) and
//      the frozen reference (log pi_ref);
//   2. per-token rewards r_t = -kl_coef * KL_t, plus the episode's reward at its last token;
//   3. GAE: delta_t = r_t + gamma V_{t+1} - V_t, A_t = delta_t + gamma lambda A_{t+1}, the value
//      after the last token 0; returns = A + V_old; advantages whitened over the batch's tokens;
//   4. several epochs over shuffled minibatches of sequences of
//        L = max(-A r, -A clip(r, 1 - e, 1 + e)) + vf_coef * 0.5 max((V - R)^2, (clip_V - R)^2)
//            - entropy_coef * H,
//      r = pi / pi_old, clip_V = V_old + clip(V - V_old, -e_v, e_v), masked means over tokens;
//   during the first ppo.critic_warmup_updates updates only the value term, and only the value
//   head's parameters step (the trunk, shared with the policy, keeps its weights); with
//   ppo.value_trunk_gradients = false the value term's gradient reaches the value head alone.
//   A separate critic takes the value term alone (no vf_coef) and steps its own AdamW at lr x
//   ppo.value_lr_scale; during the warm-up only the critic steps, and the policy keeps its weights.
// Its knobs (PpoConfig, config.hpp) are declared here: [agent.ppo] in a config, "ppo.KEY" in a
// checkpoint.
#include <torch/torch.h>

#include <stdexcept>

#include "sparserl/agents/torch/learner.hpp"

namespace sparserl::agents {

GaeResult compute_gae(const torch::Tensor& rewards, const torch::Tensor& values,
                      const torch::Tensor& valid, double gamma, double lambda) {
  const torch::Tensor mask = valid.to(values.dtype());
  const std::int64_t length = rewards.size(1);
  torch::Tensor advantages = torch::zeros_like(values);
  torch::Tensor running = torch::zeros({rewards.size(0)}, values.options());
  for (std::int64_t t = length - 1; t >= 0; --t) {
    const torch::Tensor next_value = t + 1 < length
                                         ? values.select(1, t + 1) * mask.select(1, t + 1)
                                         : torch::zeros_like(running);
    const torch::Tensor delta = rewards.select(1, t) + gamma * next_value - values.select(1, t);
    // Past a sequence's end the mask is 0, which also restarts the recursion at its last token.
    running = (delta + gamma * lambda * running) * mask.select(1, t);
    advantages.select(1, t).copy_(running);
  }
  return {advantages, (advantages + values) * mask};
}

double first_token_outcome_weight(const torch::Tensor& valid, double gamma, double lambda) {
  // On the CPU whatever the learner's device: [B] lengths, one number out.
  const torch::Tensor lengths = valid.to(torch::kCPU).to(torch::kDouble).sum(1);
  const torch::Tensor present = lengths > 0;
  if (!present.any().item<bool>()) return 0.0;
  const torch::Tensor weights = torch::pow(gamma * lambda, lengths.masked_select(present) - 1.0);
  return weights.mean().item<double>();
}

PolicyLoss ppo_policy_loss(const torch::Tensor& log_probs, const torch::Tensor& old_log_probs,
                           const torch::Tensor& advantages, const torch::Tensor& valid,
                           double clip) {
  const torch::Tensor log_ratio = log_probs - old_log_probs;
  const torch::Tensor ratio = torch::exp(log_ratio);
  const torch::Tensor unclipped = -advantages * ratio;
  const torch::Tensor clipped = -advantages * torch::clamp(ratio, 1.0 - clip, 1.0 + clip);
  PolicyLoss out;
  out.loss = masked_mean(torch::max(unclipped, clipped), valid);
  torch::NoGradGuard no_grad;
  out.clip_fraction = masked_mean((clipped > unclipped).to(torch::kFloat), valid).item<double>();
  out.approx_kl = 0.5 * masked_mean(log_ratio * log_ratio, valid).item<double>();
  return out;
}

ValueLoss clipped_value_loss(const torch::Tensor& values, const torch::Tensor& old_values,
                             const torch::Tensor& returns, const torch::Tensor& valid,
                             double clip) {
  const torch::Tensor unclipped = (values - returns).pow(2);
  ValueLoss out;
  if (clip <= 0) {
    out.loss = 0.5 * masked_mean(unclipped, valid);
    return out;
  }
  const torch::Tensor clipped_values = old_values + torch::clamp(values - old_values, -clip, clip);
  const torch::Tensor clipped = (clipped_values - returns).pow(2);
  out.loss = 0.5 * masked_mean(torch::max(unclipped, clipped), valid);
  torch::NoGradGuard no_grad;
  out.clip_fraction = masked_mean((clipped > unclipped).to(torch::kFloat), valid).item<double>();
  return out;
}

torch::Tensor ppo_token_rewards(const torch::Tensor& scores, const torch::Tensor& kl,
                                const torch::Tensor& valid, double kl_coef) {
  const torch::Tensor mask = valid.to(kl.dtype());
  torch::Tensor rewards = -kl_coef * kl * mask;
  const torch::Tensor last = (valid.to(torch::kLong).sum(1) - 1).clamp_min(0);
  return rewards.scatter_add(1, last.unsqueeze(1), scores.to(kl.dtype()).unsqueeze(1));
}

namespace {

// Drops every gradient but the value head's: AdamW and the gradient clipping skip parameters
// without one, so the trunk and the language-model head keep their weights exactly.
void keep_value_head_gradients_only(Learner& learner) {
  for (auto& item : learner.policy->named_parameters()) {
    if (item.key().rfind("value_head.", 0) != 0) item.value().mutable_grad() = torch::Tensor();
  }
}

// The value loss's gradient for the value head alone (PpoConfig::value_trunk_gradients = false),
// added to what the head already holds; the graph up to the head is kept for the caller's backward.
void add_value_head_gradients(Learner& learner, const torch::Tensor& value_loss) {
  std::vector<torch::Tensor> head;
  for (auto& item : learner.policy->named_parameters()) {
    if (item.key().rfind("value_head.", 0) == 0) head.push_back(item.value());
  }
  const std::vector<torch::Tensor> grads =
      torch::autograd::grad({value_loss}, head, {}, /*retain_graph=*/true);
  for (std::size_t i = 0; i < head.size(); ++i) {
    torch::Tensor& g = head[i].mutable_grad();
    g = g.defined() ? g + grads[i] : grads[i].clone();
  }
}

class Ppo final : public Algorithm {
 public:
  [[nodiscard]] std::string_view name() const override { return "ppo"; }
  [[nodiscard]] std::string_view summary() const override {
    return "PPO for language models (TRL's PPOTrainer, verl): value head, GAE, clipped ratio and "
           "value, per-token KL penalty.";
  }
  [[nodiscard]] bool corrects_stale_samples() const override { return true; }
  [[nodiscard]] datasets::Knobs<AgentConfig> knobs() const override;
  [[nodiscard]] bool wants_reference(const AgentConfig& config) const override {
    return config.settings.get<PpoConfig>().kl_coef > 0;
  }
  [[nodiscard]] double value_head_lr_scale(const AgentConfig& config) const override {
    const PpoConfig& ppo = config.settings.get<PpoConfig>();
    return ppo.critic == PpoCritic::shared ? ppo.value_lr_scale : 1.0;
  }
  env::Statistics update(Learner& learner, std::span<const Rollout> rollouts) override;
};

datasets::Knobs<AgentConfig> Ppo::knobs() const {
  using C = PpoConfig;
  return settings_knobs(
      datasets::Knobs<C>()
          .real("gamma", &C::gamma, "discount", 0, 1)
          .real("lambda", &C::lambda, "GAE lambda", 0, 1)
          .real("clip_ratio", &C::clip_ratio, "epsilon of the ratio", 1e-9, 1e6)
          .real("value_clip", &C::value_clip, "epsilon of the value (<= 0: no clipping)", -1e6, 1e6)
          .real("vf_coef", &C::vf_coef, "weight of the value loss", 0, 1e6)
          .real("entropy_coef", &C::entropy_coef, "weight of the entropy bonus", -1e6, 1e6)
          .real("kl_coef", &C::kl_coef, "per-token KL penalty in the reward", 0, 1e6)
          .choice("kl_estimator", &C::kl_estimator, "per-token KL estimator",
                  {KlEstimator::k1, KlEstimator::k2, KlEstimator::k3})
          .boolean("whiten_advantages", &C::whiten_advantages, "whiten advantages over the batch")
          .integer("epochs", &C::epochs, "passes over each batch of rollouts", 1, 1e6)
          .integer("minibatches", &C::minibatches, "minibatches per pass", 1, 1e6)
          .integer("critic_warmup_updates", &C::critic_warmup_updates,
                   "the first N updates train the value head alone (trunk and policy frozen)", 0,
                   1e9)
          .real("value_lr_scale", &C::value_lr_scale,
                "the value head's learning rate as a multiple of optimizer.lr (a separate critic "
                "lr)",
                1e-6, 1e6)
          .boolean("value_trunk_gradients", &C::value_trunk_gradients,
                   "the value loss trains the shared trunk too (false: the value head alone, so "
                   "the policy's update is the same as with vf_coef = 0)")
          .choice("critic", &C::critic,
                  "shared: the value head on the policy's trunk; separate: a critic network of its "
                  "own, a copy of the policy when RL starts, trained by the value loss alone at "
                  "lr x value_lr_scale (vf_coef and value_trunk_gradients do not apply)",
                  {PpoCritic::shared, PpoCritic::separate}));
}

// What the minibatches of one update are scored against: the policy and the critic before it, the
// advantages (whitened when asked) and the returns, [B, T] each.
struct PpoTargets {
  const torch::Tensor& old_log_probs;
  const torch::Tensor& old_values;
  const torch::Tensor& advantages;
  const torch::Tensor& returns;
};

// One minibatch's means on this rank, over its `tokens` (all 0 when it holds none of the rows).
struct PpoStep {
  double policy_loss = 0, value_loss = 0, total_loss = 0, clip_fraction = 0,
         value_clip_fraction = 0, approx_kl = 0, entropy = 0, tokens = 0;
};

// The losses of minibatch `rows`, their gradients and the optimiser steps (which every rank takes,
// with or without rows of its own: they average the ranks' gradients).
PpoStep ppo_minibatch(Learner& learner, const PpoConfig& config, const SequenceBatch& batch,
                      const torch::Tensor& rows, const PpoTargets& targets, bool critic_warmup,
                      double& grad_norm, double& critic_grad_norm) {
  const bool separate = config.critic == PpoCritic::separate;
  const bool has_rows = rows.numel() > 0;
  PolicyLoss pl;
  ValueLoss vl;
  torch::Tensor mean_entropy, policy_term, loss;
  PpoStep out;
  if (has_rows) {
    const SequenceBatch part = batch.select(rows);
    const TokenScores now = learner.score(learner.policy, part, true);
    pl = ppo_policy_loss(now.log_probs, targets.old_log_probs.index_select(0, rows),
                         targets.advantages.index_select(0, rows), part.valid, config.clip_ratio);
    const torch::Tensor values = separate ? learner.score_values(learner.critic, part) : now.values;
    vl = clipped_value_loss(values, targets.old_values.index_select(0, rows),
                            targets.returns.index_select(0, rows), part.valid, config.value_clip);
    mean_entropy = masked_mean(now.entropy, part.valid);
    policy_term = pl.loss - config.entropy_coef * mean_entropy;
    out.tokens = part.valid.sum().item<double>();
  }
  if (separate) {
    // Two networks, two losses, two optimisers: the policy's step is the one vf_coef = 0
    // would give, and the critic learns the value term alone.
    if (has_rows) {
      loss = critic_warmup ? vl.loss : policy_term + vl.loss;
      vl.loss.backward();
    }
    critic_grad_norm += learner.critic_step(config.value_lr_scale, out.tokens);
    if (!critic_warmup) {
      if (has_rows) policy_term.backward();
      grad_norm += learner.optimizer_step(out.tokens);
    }
  } else {
    if (has_rows) {
      loss = critic_warmup ? config.vf_coef * vl.loss : policy_term + config.vf_coef * vl.loss;
      if (critic_warmup || config.value_trunk_gradients) {
        loss.backward();
        if (critic_warmup) keep_value_head_gradients_only(learner);
      } else {
        add_value_head_gradients(learner, config.vf_coef * vl.loss);
        policy_term.backward();
      }
    }
    grad_norm += learner.optimizer_step(out.tokens);
  }
  if (has_rows) {
    out.policy_loss = pl.loss.item<double>();
    out.value_loss = vl.loss.item<double>();
    out.total_loss = loss.item<double>();
    out.clip_fraction = pl.clip_fraction;
    out.value_clip_fraction = vl.clip_fraction;
    out.approx_kl = pl.approx_kl;
    out.entropy = mean_entropy.item<double>();
  }
  return out;
}

}  // namespace

env::Statistics Ppo::update(Learner& learner, std::span<const Rollout> rollouts) {
  const PpoConfig& config = learner.config.settings.get<PpoConfig>();
  const SequenceBatch batch = rollout_batch(learner, rollouts);
  const std::int64_t n = batch.size();
  const torch::Tensor scores = rollout_rewards(learner, rollouts);
  const torch::Tensor valid = batch.valid;

  const bool separate = config.critic == PpoCritic::separate;
  if (separate && learner.critic.is_empty()) learner.make_critic();
  torch::Tensor old_log_probs, old_values, kl, advantages, returns, raw_advantages;
  {
    torch::NoGradGuard no_grad;
    learner.policy->eval();
    const TokenScores old = learner.score(learner.policy, batch, false);
    // Samples that may predate the last update: the sampling policy's log-probabilities.
    old_log_probs =
        learner.old_log_probs_recorded ? recorded_log_probs(learner, rollouts, batch) : old.log_probs;
    if (separate) {
      learner.critic->eval();
      old_values = learner.score_values(learner.critic, batch);
    } else {
      old_values = old.values;
    }
    kl = torch::zeros_like(old_log_probs);
    if (config.kl_coef > 0 && !learner.reference.is_empty()) {
      const torch::Tensor ref_log_probs = learner.score(learner.reference, batch, false).log_probs;
      kl = kl_estimate(old_log_probs, ref_log_probs, config.kl_estimator) * valid.to(kl.dtype());
    }
    const torch::Tensor token_rewards = ppo_token_rewards(scores, kl, valid, config.kl_coef);
    const GaeResult gae =
        compute_gae(token_rewards, old_values, valid, config.gamma, config.lambda);
    raw_advantages = gae.advantages;
    returns = gae.returns;
    advantages = config.whiten_advantages ? global_masked_whiten(learner, gae.advantages, valid)
                                          : gae.advantages;
  }

  learner.policy->train();
  if (separate) learner.critic->train();
  const double lr = learner.current_lr();
  const bool critic_warmup = learner.counters.updates < config.critic_warmup_updates;
  double policy_loss = 0, value_loss = 0, total_loss = 0, clip_fraction = 0,
         value_clip_fraction = 0;
  double approx_kl = 0, entropy = 0, grad_norm = 0, critic_grad_norm = 0;
  int steps = 0;
  const PpoTargets targets{old_log_probs, old_values, advantages, returns};
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    for (const torch::Tensor& rows : minibatch_indices(learner, n, config.minibatches)) {
      const PpoStep local = ppo_minibatch(learner, config, batch, rows, targets, critic_warmup,
                                          grad_norm, critic_grad_norm);
      const std::vector<double> step =
          learner.shard_means({{local.policy_loss, local.tokens},
                               {local.value_loss, local.tokens},
                               {local.total_loss, local.tokens},
                               {local.clip_fraction, local.tokens},
                               {local.value_clip_fraction, local.tokens},
                               {local.approx_kl, local.tokens},
                               {local.entropy, local.tokens}});
      policy_loss += step[0];
      value_loss += step[1];
      total_loss += step[2];
      clip_fraction += step[3];
      value_clip_fraction += step[4];
      approx_kl += step[5];
      entropy += step[6];
      ++steps;
    }
  }
  const double s = std::max(1, steps);
  torch::NoGradGuard no_grad;
  const torch::Tensor non_score = (-config.kl_coef * kl).sum(1);
  return {
      {"loss/policy", policy_loss / s},
      {"loss/value", value_loss / s},
      {"loss/total", total_loss / s},
      {"policy/clip_fraction", clip_fraction / s},
      {"policy/approx_kl", approx_kl / s},
      {"policy/entropy", entropy / s},
      {"value/clip_fraction", value_clip_fraction / s},
      {"value/explained_variance", global_explained_variance(learner, old_values, returns, valid)},
      {"value/mean", global_masked_mean(learner, old_values, valid)},
      {"returns/mean", global_masked_mean(learner, returns, valid)},
      {"kl", global_masked_mean(learner, kl, valid)},
      {"objective/non_score_reward", global_mean(learner, non_score)},
      {"objective/rlhf_reward", global_mean(learner, scores + non_score)},
      {"advantages/mean", global_masked_mean(learner, raw_advantages, valid)},
      {"advantages/std",
       std::sqrt(std::max(0.0, global_masked_var(learner, raw_advantages, valid)))},
      {"advantages/first_token_outcome_weight",
       learner.shard_means({{first_token_outcome_weight(valid, config.gamma, config.lambda),
                             valid.any(1).sum().item<double>()}})[0]},
      {"grad_norm", grad_norm / s},
      {"value/grad_norm", critic_grad_norm / s},
      {"learning_rate", lr},
      {"optimizer_steps", static_cast<double>(steps)},
      {"value/critic_warmup", critic_warmup ? 1.0 : 0.0}};
}

std::unique_ptr<Algorithm> make_ppo_algorithm() { return std::make_unique<Ppo>(); }

}  // namespace sparserl::agents
