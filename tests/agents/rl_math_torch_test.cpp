// The algorithms' arithmetic against numbers worked out by hand on tiny tensors: GAE, PPO's clipped
// policy and value losses and its per-token rewards, GRPO's group advantages, loss aggregation and
// clipped loss, the RLOO baseline, and the k1 / k2 / k3 KL estimators. Padding positions carry
// deliberately wild values: they must not leak into any result.
#include <torch/torch.h>

#include <cmath>

#include "agents_torch_test_support.hpp"
#include "catch.hpp"
#include "sparserl/agents/torch/learner.hpp"

namespace {

using namespace sparserl::agents;

torch::Tensor f(std::vector<float> v, std::vector<std::int64_t> shape) {
  return torch::tensor(v, torch::kFloat).view(shape);
}

torch::Tensor b(std::vector<std::uint8_t> v, std::vector<std::int64_t> shape) {
  return torch::tensor(std::vector<std::int64_t>(v.begin(), v.end()), torch::kLong)
      .view(shape)
      .to(torch::kBool);
}

float value_at(const torch::Tensor& t, std::int64_t i, std::int64_t j) {
  return t[i][j].item<float>();
}

}  // namespace

TEST_CASE("GAE matches a hand computation over padded sequences", "[agents][math]") {
  const torch::Tensor rewards = f({0, 0, 1, 0, 2, 5}, {2, 3});  // row 1: the 5 is padding
  const torch::Tensor values = f({0.5, 0.4, 0.3, 0.1, 0.2, 0.7}, {2, 3});
  const torch::Tensor valid = b({1, 1, 1, 1, 1, 0}, {2, 3});
  const GaeResult gae = compute_gae(rewards, values, valid, 0.9, 0.95);
  // Row 0: d2 = 1 - 0.3 = 0.7; d1 = 0.9 * 0.3 - 0.4 = -0.13, A1 = -0.13 + 0.855 * 0.7 = 0.4685;
  //        d0 = 0.9 * 0.4 - 0.5 = -0.14, A0 = -0.14 + 0.855 * 0.4685 = 0.2605675.
  CHECK(value_at(gae.advantages, 0, 2) == Approx(0.7).epsilon(1e-5));
  CHECK(value_at(gae.advantages, 0, 1) == Approx(0.4685).epsilon(1e-5));
  CHECK(value_at(gae.advantages, 0, 0) == Approx(0.2605675).epsilon(1e-5));
  // Row 1 ends at t = 1: d1 = 2 - 0.2 = 1.8 (no value after the end); d0 = 0.9 * 0.2 - 0.1 = 0.08,
  //        A0 = 0.08 + 0.855 * 1.8 = 1.619.
  CHECK(value_at(gae.advantages, 1, 2) == 0.0f);
  CHECK(value_at(gae.advantages, 1, 1) == Approx(1.8).epsilon(1e-5));
  CHECK(value_at(gae.advantages, 1, 0) == Approx(1.619).epsilon(1e-5));
  CHECK(value_at(gae.returns, 0, 0) == Approx(0.7605675).epsilon(1e-5));
  CHECK(value_at(gae.returns, 1, 1) == Approx(2.0).epsilon(1e-5));
  CHECK(value_at(gae.returns, 1, 2) == 0.0f);

  // gamma = 1, lambda = 1: the advantage is the return-to-go minus the value.
  const GaeResult mc = compute_gae(rewards, values, valid, 1.0, 1.0);
  CHECK(value_at(mc.advantages, 0, 0) == Approx(1.0 - 0.5).epsilon(1e-5));
  CHECK(value_at(mc.advantages, 1, 0) == Approx(2.0 - 0.1).epsilon(1e-5));

  // The final reward's share of the first token's advantage: lengths 3 and 2 at gamma lambda =
  // 0.855 give (0.855^2 + 0.855) / 2; it is A0 when the values are 0 and only the last token pays 1.
  CHECK(first_token_outcome_weight(valid, 0.9, 0.95) ==
        Approx((0.855 * 0.855 + 0.855) / 2).epsilon(1e-9));
  const torch::Tensor last = f({0, 0, 1, 0, 1, 0}, {2, 3});
  const GaeResult outcome = compute_gae(last, torch::zeros({2, 3}), valid, 0.9, 0.95);
  CHECK(value_at(outcome.advantages, 0, 0) == Approx(0.855 * 0.855).epsilon(1e-5));
  CHECK(value_at(outcome.advantages, 1, 0) == Approx(0.855).epsilon(1e-5));
  CHECK(first_token_outcome_weight(valid, 1.0, 1.0) == 1.0);
  CHECK(first_token_outcome_weight(b({0, 0, 0}, {1, 3}), 1.0, 0.95) == 0.0);
}

TEST_CASE("PPO's clipped policy loss, clip fraction and approximate KL", "[agents][math]") {
  // Ratios 1.5, 0.5, 0.5, 1.1 (and a padded token) with advantages +1, +1, -2, -1.
  const std::vector<double> ratios = {1.5, 0.5, 0.5, 1.1, 9.0};
  std::vector<float> log_probs, old;
  for (double r : ratios) {
    log_probs.push_back(static_cast<float>(std::log(r)));
    old.push_back(0.0f);
  }
  const torch::Tensor advantages = f({1, 1, -2, -1, 100}, {1, 5});
  const torch::Tensor valid = b({1, 1, 1, 1, 0}, {1, 5});
  const PolicyLoss loss =
      ppo_policy_loss(f(log_probs, {1, 5}), f(old, {1, 5}), advantages, valid, 0.2);
  // max(-A r, -A clip(r)): -1.2 (clipped), -0.5, 1.6 (clipped), 1.1 -> mean 0.25.
  CHECK(loss.loss.item<double>() == Approx(0.25).epsilon(1e-5));
  CHECK(loss.clip_fraction == Approx(0.5));
  const double l15 = std::log(1.5), l05 = std::log(0.5), l11 = std::log(1.1);
  CHECK(loss.approx_kl == Approx(0.5 * (l15 * l15 + 2 * l05 * l05 + l11 * l11) / 4).epsilon(1e-5));
}

TEST_CASE("PPO's clipped value loss", "[agents][math]") {
  const torch::Tensor values = f({1.0, 0.6, -0.5, 50}, {1, 4});
  const torch::Tensor old_values = f({0.5, 0.5, 0.0, 0}, {1, 4});
  const torch::Tensor returns = f({1.0, 0.0, 1.0, -50}, {1, 4});
  const torch::Tensor valid = b({1, 1, 1, 0}, {1, 4});
  const ValueLoss loss = clipped_value_loss(values, old_values, returns, valid, 0.2);
  // Token 0: (1 - 1)^2 = 0 vs (0.7 - 1)^2 = 0.09 -> 0.09 (clipped); token 1: 0.36 both; token 2:
  // (-0.5 - 1)^2 = 2.25 vs (-0.2 - 1)^2 = 1.44 -> 2.25. 0.5 * mean = 0.45.
  CHECK(loss.loss.item<double>() == Approx(0.45).epsilon(1e-5));
  CHECK(loss.clip_fraction == Approx(1.0 / 3.0));
  const ValueLoss plain = clipped_value_loss(values, old_values, returns, valid, 0.0);
  CHECK(plain.loss.item<double>() == Approx(0.5 * (0 + 0.36 + 2.25) / 3).epsilon(1e-5));
}

TEST_CASE("PPO's per-token rewards put the score on the last token", "[agents][math]") {
  const torch::Tensor kl = f({0.1, 0.2, 0.3, 0.5, 0.5, 9}, {2, 3});
  const torch::Tensor valid = b({1, 1, 1, 1, 1, 0}, {2, 3});
  const torch::Tensor r = ppo_token_rewards(f({1, 2}, {2}), kl, valid, 0.1);
  CHECK(value_at(r, 0, 0) == Approx(-0.01));
  CHECK(value_at(r, 0, 2) == Approx(1.0 - 0.03));
  CHECK(value_at(r, 1, 1) == Approx(2.0 - 0.05));
  CHECK(value_at(r, 1, 2) == 0.0f);
}

TEST_CASE("GRPO advantages are normalised within each group", "[agents][math]") {
  const torch::Tensor rewards = f({1, 0, 0, 1, 2, 2, 3}, {7});
  const torch::Tensor groups =
      torch::tensor(std::vector<std::int64_t>{0, 0, 0, 0, 1, 1, 2}, torch::kLong);
  const torch::Tensor scaled = grpo_advantages(rewards, groups, true, 1e-4);
  // Group 0: mean 0.5, unbiased std sqrt(4 * 0.25 / 3) = 0.57735; group 1 flat; group 2 alone.
  const double a = 0.5 / (std::sqrt(1.0 / 3.0) + 1e-4);
  CHECK(scaled[0].item<double>() == Approx(a).epsilon(1e-5));
  CHECK(scaled[1].item<double>() == Approx(-a).epsilon(1e-5));
  CHECK(scaled[4].item<double>() == 0.0);
  CHECK(scaled[6].item<double>() == 0.0);
  const torch::Tensor centred = grpo_advantages(rewards, groups, false, 1e-4);
  CHECK(centred[0].item<double>() == Approx(0.5));
  CHECK(centred[2].item<double>() == Approx(-0.5));
  CHECK(centred[5].item<double>() == 0.0);
}

TEST_CASE("GRPO loss aggregation modes", "[agents][math]") {
  const torch::Tensor per_token = f({1, 2, 3, 4, 7, 7}, {2, 3});
  const torch::Tensor valid = b({1, 1, 1, 1, 0, 0}, {2, 3});
  CHECK(aggregate_loss(per_token, valid, LossAggregation::token_mean).item<double>() ==
        Approx(2.5));
  CHECK(aggregate_loss(per_token, valid, LossAggregation::seq_mean_token_mean).item<double>() ==
        Approx(3.0));
  CHECK(aggregate_loss(per_token, valid, LossAggregation::seq_mean_token_sum).item<double>() ==
        Approx(5.0));
}

TEST_CASE("GRPO's clipped loss clips low and high separately", "[agents][math]") {
  GrpoConfig config;
  config.epsilon_low = 0.2;
  config.epsilon_high = 0.28;
  config.beta = 0.0;
  // Row 0: ratio 1.5, A = +1 -> -min(1.5, 1.28) = -1.28 (clipped high).
  // Row 1: ratio 0.5, A = -1 -> -min(-0.5, -0.8) = 0.8 (clipped low).
  const torch::Tensor log_probs =
      f({static_cast<float>(std::log(1.5)), static_cast<float>(std::log(0.5))}, {2, 1});
  const torch::Tensor old = torch::zeros({2, 1});
  const torch::Tensor adv = f({1, -1}, {2});
  const torch::Tensor valid = b({1, 1}, {2, 1});
  const GrpoLoss loss = grpo_loss(log_probs, old, torch::Tensor(), adv, valid, config);
  CHECK(loss.loss.item<double>() == Approx((-1.28 + 0.8) / 2).epsilon(1e-5));
  CHECK(loss.clip_high == Approx(0.5));
  CHECK(loss.clip_low == Approx(0.5));

  // With beta, the k3 KL to the reference is added per token: reference log-probs log 0.75, log 1.
  config.beta = 0.1;
  const torch::Tensor ref = f({static_cast<float>(std::log(0.75)), 0.0f}, {2, 1});
  const GrpoLoss with_kl = grpo_loss(log_probs, old, ref, adv, valid, config);
  const double d0 = std::log(1.5) - std::log(0.75), d1 = std::log(0.5);
  const double k3_0 = std::exp(-d0) - 1 + d0, k3_1 = std::exp(-d1) - 1 + d1;
  CHECK(with_kl.kl == Approx((k3_0 + k3_1) / 2).epsilon(1e-5));
  CHECK(with_kl.loss.item<double>() ==
        Approx((-1.28 + 0.1 * k3_0 + 0.8 + 0.1 * k3_1) / 2).epsilon(1e-5));
}

TEST_CASE("RLOO subtracts the mean of the other samples of the group", "[agents][math]") {
  const torch::Tensor rewards = f({1, 2, 6, 4, 0, 5}, {6});
  const torch::Tensor groups =
      torch::tensor(std::vector<std::int64_t>{0, 0, 0, 1, 1, 2}, torch::kLong);
  const torch::Tensor a = rloo_advantages(rewards, groups);
  CHECK(a[0].item<double>() == Approx(1 - 4.0));
  CHECK(a[1].item<double>() == Approx(2 - 3.5));
  CHECK(a[2].item<double>() == Approx(6 - 1.5));
  CHECK(a[3].item<double>() == Approx(4.0));
  CHECK(a[4].item<double>() == Approx(-4.0));
  CHECK(a[5].item<double>() == Approx(5.0));  // alone: no baseline
}

TEST_CASE("KL estimators k1, k2 and k3", "[agents][math]") {
  const torch::Tensor log_probs =
      f({static_cast<float>(std::log(0.5)), static_cast<float>(std::log(0.2))}, {2});
  const torch::Tensor ref =
      f({static_cast<float>(std::log(0.25)), static_cast<float>(std::log(0.4))}, {2});
  const double l2 = std::log(2.0);
  const torch::Tensor k1 = kl_estimate(log_probs, ref, KlEstimator::k1);
  const torch::Tensor k2 = kl_estimate(log_probs, ref, KlEstimator::k2);
  const torch::Tensor k3 = kl_estimate(log_probs, ref, KlEstimator::k3);
  CHECK(k1[0].item<double>() == Approx(l2).epsilon(1e-5));
  CHECK(k1[1].item<double>() == Approx(-l2).epsilon(1e-5));
  CHECK(k2[0].item<double>() == Approx(0.5 * l2 * l2).epsilon(1e-5));
  CHECK(k2[1].item<double>() == Approx(0.5 * l2 * l2).epsilon(1e-5));
  CHECK(k3[0].item<double>() == Approx(0.5 - 1 + l2).epsilon(1e-5));  // pi_ref / pi = 0.5
  CHECK(k3[1].item<double>() == Approx(2.0 - 1 - l2).epsilon(1e-5));  // pi_ref / pi = 2
  // Equal distributions: every estimator is 0.
  CHECK(kl_estimate(log_probs, log_probs, KlEstimator::k3).abs().max().item<double>() == 0.0);
}

TEST_CASE("masked whitening and explained variance ignore padding", "[agents][math]") {
  const torch::Tensor x = f({1, 2, 3, 1000}, {1, 4});
  const torch::Tensor valid = b({1, 1, 1, 0}, {1, 4});
  const torch::Tensor w = masked_whiten(x, valid);
  // mean 2, unbiased variance 1.
  CHECK(value_at(w, 0, 0) == Approx(-1.0).epsilon(1e-4));
  CHECK(value_at(w, 0, 2) == Approx(1.0).epsilon(1e-4));
  CHECK(value_at(w, 0, 3) == 0.0f);
  CHECK(explained_variance(x, x, valid) == Approx(1.0));
  CHECK(explained_variance(torch::zeros_like(x), x, valid) == Approx(0.0).margin(1e-6));
}
