// The pieces the algorithms share (torch/learner.hpp): masked means and whitening, KL estimators,
// explained variance, groups and batches of rollouts, minibatches and the seeded data order of
// pretraining and SFT, the same statistics over every rank's rows of a data-parallel update, and
// the statistics every RL update reports about its rollouts.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

#include "sparserl/agents/torch/learner.hpp"
#include "sparserl/agents/training.hpp"
#include "sparserl/datasets/random.hpp"

namespace sparserl::agents {

// ---- Shared math --------------------------------------------------------------------------------

torch::Tensor masked_sum(const torch::Tensor& x, const torch::Tensor& mask) {
  return (x * mask.to(x.dtype())).sum();
}

torch::Tensor masked_mean(const torch::Tensor& x, const torch::Tensor& mask) {
  return masked_sum(x, mask) / mask.to(x.dtype()).sum().clamp_min(1.0);
}

torch::Tensor masked_var(const torch::Tensor& x, const torch::Tensor& mask) {
  const torch::Tensor mean = masked_mean(x, mask);
  const torch::Tensor count = mask.to(x.dtype()).sum();
  const torch::Tensor centered = (x - mean) * mask.to(x.dtype());
  return (centered * centered).sum() / (count - 1.0).clamp_min(1.0);
}

torch::Tensor masked_whiten(const torch::Tensor& x, const torch::Tensor& mask, bool shift_mean) {
  const torch::Tensor mean = masked_mean(x, mask);
  torch::Tensor out = (x - mean) * torch::rsqrt(masked_var(x, mask) + 1e-8);
  if (!shift_mean) out = out + mean;
  return out * mask.to(x.dtype());
}

torch::Tensor kl_estimate(const torch::Tensor& log_probs, const torch::Tensor& ref_log_probs,
                          KlEstimator estimator) {
  const torch::Tensor d = log_probs - ref_log_probs;
  switch (estimator) {
    case KlEstimator::k1:
      return d;
    case KlEstimator::k2:
      return 0.5 * d * d;
    case KlEstimator::k3:
      return (torch::exp(-d) - 1.0 + d).clamp(-10.0, 10.0);
  }
  return d;
}

double explained_variance(const torch::Tensor& values, const torch::Tensor& returns,
                          const torch::Tensor& mask) {
  const double var_returns = masked_var(returns, mask).item<double>();
  if (var_returns <= 0) return 0.0;
  return 1.0 - masked_var(returns - values, mask).item<double>() / var_returns;
}

torch::Tensor group_index(std::span<const Rollout> rollouts) {
  std::map<int, std::int64_t> renumber;
  std::vector<std::int64_t> out;
  out.reserve(rollouts.size());
  for (const Rollout& r : rollouts) {
    out.push_back(
        renumber.try_emplace(r.group, static_cast<std::int64_t>(renumber.size())).first->second);
  }
  return torch::tensor(out, torch::kLong);
}

SequenceBatch rollout_batch(Learner& learner, std::span<const Rollout> rollouts) {
  std::vector<const env::MatrixObservation*> matrices;
  std::vector<const std::vector<env::TokenId>*> sequences;
  std::vector<const std::vector<std::uint8_t>*> masks;
  for (const Rollout& r : rollouts) {
    if (r.completion.tokens.empty()) throw std::invalid_argument("a rollout with no tokens");
    matrices.push_back(r.matrix.get());
    sequences.push_back(&r.completion.tokens);
    masks.push_back(&r.completion.action_masks);
  }
  return learner.sequence_batch(matrices, sequences, masks);
}

torch::Tensor rollout_rewards(const Learner& learner, std::span<const Rollout> rollouts) {
  std::vector<float> rewards;
  rewards.reserve(rollouts.size());
  for (const Rollout& r : rollouts) rewards.push_back(static_cast<float>(r.reward));
  return torch::tensor(rewards, torch::kFloat).to(learner.device);
}

torch::Tensor recorded_log_probs(const Learner& learner, std::span<const Rollout> rollouts,
                                 const SequenceBatch& batch) {
  const auto rows = static_cast<std::int64_t>(rollouts.size());
  const std::int64_t width = batch.targets.size(1);
  std::vector<float> values(static_cast<std::size_t>(rows * width), 0.0f);
  for (std::int64_t b = 0; b < rows; ++b) {
    const Completion& c = rollouts[static_cast<std::size_t>(b)].completion;
    if (c.log_probs.size() != c.tokens.size() || static_cast<std::int64_t>(c.tokens.size()) > width) {
      throw std::invalid_argument("rollout " + std::to_string(b) + ": " +
                                  std::to_string(c.log_probs.size()) +
                                  " recorded log-probabilities for " +
                                  std::to_string(c.tokens.size()) + " tokens");
    }
    std::copy(c.log_probs.begin(), c.log_probs.end(), values.begin() + b * width);
  }
  return torch::tensor(values, torch::kFloat).reshape({rows, width}).to(learner.device);
}

std::vector<torch::Tensor> minibatch_indices(Learner& learner, std::int64_t n_local,
                                             int minibatches) {
  // Data parallel: the permutation of every rank's rows, drawn as one process draws it.
  const RowWindow window = learner.rows;
  if (window.total > 0 && window.offset + n_local > window.total) {
    throw std::logic_error("minibatch_indices: " + std::to_string(n_local) + " rows at " +
                           std::to_string(window.offset) + " of " + std::to_string(window.total));
  }
  const std::int64_t n = window.total > 0 ? window.total : n_local;
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (std::int64_t i = n - 1; i > 0; --i) {
    std::swap(
        order[static_cast<std::size_t>(i)],
        order[static_cast<std::size_t>(learner.rng.below(static_cast<std::uint64_t>(i + 1)))]);
  }
  const std::int64_t parts = std::max<std::int64_t>(1, std::min<std::int64_t>(minibatches, n));
  std::vector<torch::Tensor> out;
  for (std::int64_t p = 0; p < parts; ++p) {
    const std::int64_t begin = p * n / parts, end = (p + 1) * n / parts;
    std::vector<std::int64_t> part(order.begin() + begin, order.begin() + end);
    if (window.total > 0) {
      std::vector<std::int64_t> mine;
      for (std::int64_t row : part) {
        if (row >= window.offset && row < window.offset + n_local)
          mine.push_back(row - window.offset);
      }
      part = std::move(mine);
    }
    out.push_back(torch::tensor(part, torch::kLong).to(learner.device));
  }
  return out;
}

// ---- Data parallel ------------------------------------------------------------------------------

double global_masked_mean(Learner& learner, const torch::Tensor& x, const torch::Tensor& mask) {
  if (!learner.distributed()) return masked_mean(x, mask).item<double>();
  const std::vector<double> s = learner.ranks->sum(
      {masked_sum(x, mask).item<double>(), mask.to(torch::kDouble).sum().item<double>()});
  return s[0] / std::max(1.0, s[1]);
}

double global_masked_var(Learner& learner, const torch::Tensor& x, const torch::Tensor& mask) {
  if (!learner.distributed()) return masked_var(x, mask).item<double>();
  const double mean = global_masked_mean(learner, x, mask);
  const torch::Tensor centered = (x.to(torch::kDouble) - mean) * mask.to(torch::kDouble);
  const std::vector<double> s = learner.ranks->sum(
      {(centered * centered).sum().item<double>(), mask.to(torch::kDouble).sum().item<double>()});
  return s[0] / std::max(1.0, s[1] - 1.0);
}

torch::Tensor global_masked_whiten(Learner& learner, const torch::Tensor& x,
                                   const torch::Tensor& mask) {
  if (!learner.distributed()) return masked_whiten(x, mask);
  const double mean = global_masked_mean(learner, x, mask);
  const double var = global_masked_var(learner, x, mask);
  return (x - mean) * (1.0 / std::sqrt(var + 1e-8)) * mask.to(x.dtype());
}

double global_explained_variance(Learner& learner, const torch::Tensor& values,
                                 const torch::Tensor& returns, const torch::Tensor& mask) {
  if (!learner.distributed()) return explained_variance(values, returns, mask);
  const double var_returns = global_masked_var(learner, returns, mask);
  const double var_residual = global_masked_var(learner, returns - values, mask);
  return var_returns <= 0 ? 0.0 : 1.0 - var_residual / var_returns;
}

double global_mean(Learner& learner, const torch::Tensor& x) {
  if (!learner.distributed()) return x.mean().item<double>();
  return global_masked_mean(learner, x, torch::ones_like(x, torch::kBool));
}

MeanStd global_mean_std(Learner& learner, const torch::Tensor& x) {
  if (!learner.distributed()) {
    return {x.mean().item<double>(), x.numel() > 1 ? x.std().item<double>() : 0.0};
  }
  const torch::Tensor all = torch::ones_like(x, torch::kBool);
  const std::vector<double> n = learner.ranks->sum({static_cast<double>(x.numel())});
  return {global_masked_mean(learner, x, all),
          n[0] > 1 ? std::sqrt(global_masked_var(learner, x, all)) : 0.0};
}

RowWindow rank_window(Learner& learner, std::int64_t count) {
  const auto rank = static_cast<std::size_t>(learner.ranks->rank());
  std::vector<double> counts(static_cast<std::size_t>(learner.ranks->size()), 0.0);
  counts[rank] = static_cast<double>(count);
  counts = learner.ranks->sum(std::move(counts));
  RowWindow window;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (r < rank) window.offset += static_cast<std::int64_t>(counts[r]);
    window.total += static_cast<std::int64_t>(counts[r]);
  }
  return window;
}

std::vector<Rollout> share_rollout_outcomes(Learner& learner, std::span<const Rollout> mine) {
  const int size = learner.ranks->size();
  const auto rank = static_cast<std::size_t>(learner.ranks->rank());
  int groups = 0;
  for (const Rollout& r : mine) groups = std::max(groups, r.group + 1);
  // Rows and groups of every rank: this rank's place among them.
  std::vector<double> counts(2 * static_cast<std::size_t>(size), 0.0);
  counts[rank] = static_cast<double>(mine.size());
  counts[static_cast<std::size_t>(size) + rank] = groups;
  counts = learner.ranks->sum(std::move(counts));
  std::int64_t offset = 0, total = 0, group_offset = 0;
  for (std::size_t r = 0; r < static_cast<std::size_t>(size); ++r) {
    if (r < rank) {
      offset += static_cast<std::int64_t>(counts[r]);
      group_offset += static_cast<std::int64_t>(counts[static_cast<std::size_t>(size) + r]);
    }
    total += static_cast<std::int64_t>(counts[r]);
  }
  learner.rows = {offset, total};
  // Every rank's outcomes: each writes its rows into zeros and the sum is their concatenation.
  constexpr std::size_t kFields = 7;
  std::vector<double> table(static_cast<std::size_t>(total) * kFields, 0.0);
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const Rollout& r = mine[i];
    double* row = table.data() + (static_cast<std::size_t>(offset) + i) * kFields;
    row[0] = r.reward;
    row[1] = static_cast<double>(r.group + group_offset);
    row[2] = static_cast<double>(r.completion.tokens.size());
    row[3] = r.completion.terminated ? 1.0 : 0.0;
    row[4] = r.compiled ? 1.0 : 0.0;
    row[5] = r.correct ? 1.0 : 0.0;
    row[6] = r.speedup;
  }
  table = learner.ranks->sum(std::move(table));
  std::vector<Rollout> all(static_cast<std::size_t>(total));
  for (std::size_t i = 0; i < all.size(); ++i) {
    const double* row = table.data() + i * kFields;
    Rollout& r = all[i];
    r.reward = row[0];
    r.group = static_cast<int>(row[1]);
    r.completion.tokens.resize(static_cast<std::size_t>(row[2]));
    r.completion.terminated = row[3] > 0;
    r.compiled = row[4] > 0;
    r.correct = row[5] > 0;
    r.speedup = row[6];
  }
  return all;
}

namespace {

std::vector<std::size_t> permutation(std::uint64_t seed, std::size_t n, std::int64_t epoch) {
  std::uint64_t mix = static_cast<std::uint64_t>(epoch);
  CounterRng rng{seed ^ datasets::splitmix64(mix), 0};
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

}  // namespace

std::vector<BatchItem> epoch_batch(std::uint64_t seed, std::size_t n, std::int64_t step,
                                   int batch_size) {
  std::vector<BatchItem> out;
  if (n == 0) return out;
  std::int64_t cached_epoch = -1;
  std::vector<std::size_t> order;
  for (std::int64_t j = step * batch_size; j < (step + 1) * batch_size; ++j) {
    const std::int64_t epoch = j / static_cast<std::int64_t>(n);
    if (epoch != cached_epoch) {
      order = permutation(seed, n, epoch);
      cached_epoch = epoch;
    }
    out.push_back({order[static_cast<std::size_t>(j % static_cast<std::int64_t>(n))], epoch});
  }
  return out;
}

Shard batch_share(int batch_size, const std::shared_ptr<ProcessGroup>& group,
                  std::string_view key) {
  const auto n = static_cast<std::size_t>(std::max(0, batch_size));
  if (!group || group->size() < 2) return {0, n};
  require_divisible(key, batch_size, group->size());
  return shard_of(n, group->rank(), group->size());
}

// ---- Rollout statistics -------------------------------------------------------------------------

env::Statistics rollout_statistics(std::span<const Rollout> rollouts) {
  env::Statistics stats;
  if (rollouts.empty()) return stats;
  const double n = static_cast<double>(rollouts.size());
  double sum = 0, lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const Rollout& r : rollouts) {
    sum += r.reward;
    lo = std::min(lo, r.reward);
    hi = std::max(hi, r.reward);
  }
  const double mean = sum / n;
  double squares = 0;
  for (const Rollout& r : rollouts) squares += (r.reward - mean) * (r.reward - mean);
  std::map<int, std::vector<double>> groups;
  for (const Rollout& r : rollouts) groups[r.group].push_back(r.reward);
  int multi = 0, flat = 0;
  for (const auto& [id, rewards] : groups) {
    if (rewards.size() < 2) continue;
    ++multi;
    const auto [mn, mx] = std::minmax_element(rewards.begin(), rewards.end());
    if (*mx - *mn < 1e-9) ++flat;
  }
  double length = 0, min_length = std::numeric_limits<double>::infinity(), max_length = 0;
  int truncated = 0, compiled = 0, correct = 0, timed = 0, faster = 0;
  double log_speedup = 0, speedup_sum = 0;
  for (const Rollout& r : rollouts) {
    const double l = static_cast<double>(r.completion.tokens.size());
    length += l;
    min_length = std::min(min_length, l);
    max_length = std::max(max_length, l);
    truncated += r.completion.terminated ? 0 : 1;
    compiled += r.compiled ? 1 : 0;
    correct += r.correct ? 1 : 0;
    if (r.correct && r.speedup > 0) {
      ++timed;
      log_speedup += std::log(r.speedup);
      speedup_sum += r.speedup;
      faster += r.speedup > 1.0 ? 1 : 0;
    }
  }
  stats.emplace_back("reward/mean", mean);
  stats.emplace_back("reward/std", n > 1 ? std::sqrt(squares / (n - 1)) : 0.0);
  stats.emplace_back("reward/min", lo);
  stats.emplace_back("reward/max", hi);
  stats.emplace_back("reward/frac_zero_std", multi > 0 ? double(flat) / multi : 0.0);
  stats.emplace_back("completions/mean_length", length / n);
  stats.emplace_back("completions/min_length", min_length);
  stats.emplace_back("completions/max_length", max_length);
  stats.emplace_back("completions/clipped_ratio", truncated / n);
  stats.emplace_back("env/compile_rate", compiled / n);
  stats.emplace_back("env/correct_rate", correct / n);
  stats.emplace_back("env/faster_rate", faster / n);
  stats.emplace_back("env/speedup_mean", timed > 0 ? speedup_sum / timed : 0.0);
  stats.emplace_back("env/speedup_geomean", timed > 0 ? std::exp(log_speedup / timed) : 0.0);
  return stats;
}

}  // namespace sparserl::agents
