// PolicyAgent and its Learner: building batches from observations and token sequences, scoring
// them, AdamW with the schedule, act() with a per-row key-value cache, batched generation under the
// action mask, dispatch of update() to the configured algorithm, the statistics every RL update
// reports, and checkpoints (see policy_agent.hpp for the folder layout). The algorithms themselves
// are in pretrain.cpp, sft.cpp, reinforce.cpp, ppo.cpp and grpo.cpp.
#include "sparserl/agents/policy_agent.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "sparserl/agents/torch/learner.hpp"
#include "sparserl/agents/training.hpp"
#include "sparserl/env/sparse_cuda_env.hpp"

namespace sparserl::agents {

namespace {

constexpr int kCheckpointVersion = 1;
constexpr std::size_t kObservedCapacity = 65536;

torch::Device resolve_device(const std::string& name) {
  if (name == "auto")
    return torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  if (name.rfind("cuda", 0) == 0 && !torch::cuda::is_available()) {
    throw std::invalid_argument("agent.device = '" + name + "': LibTorch sees no CUDA device here");
  }
  return torch::Device(name);
}

AgentConfig resolved(AgentConfig config, const env::Vocabulary& vocabulary) {
  if (auto error = config.validate()) throw std::invalid_argument(*error);
  const int vocab = static_cast<int>(vocabulary.size());
  if (config.policy.vocab_size != 0 && config.policy.vocab_size != vocab) {
    throw std::invalid_argument("policy.vocab_size = " + std::to_string(config.policy.vocab_size) +
                                ": the vocabulary '" + vocabulary.name() + "' has " +
                                std::to_string(vocab));
  }
  config.policy.vocab_size = vocab;
  const int features = static_cast<int>(env::feature_names().size());
  if (config.policy.feature_dim != 0 && config.policy.feature_dim != features) {
    throw std::invalid_argument(
        "policy.feature_dim = " + std::to_string(config.policy.feature_dim) +
        ": the observation has " + std::to_string(features) + " features");
  }
  config.policy.feature_dim = features;
  return config;
}

torch::Tensor uniforms(CounterRng& rng, std::int64_t n) {
  std::vector<double> u(static_cast<std::size_t>(n));
  for (double& x : u) x = rng.uniform_open();
  return torch::tensor(u, torch::kDouble);
}

// The policy's shape: what two checkpoints must share for weights to move between them.
const std::vector<std::string>& shape_keys() {
  static const std::vector<std::string> keys = {
      "policy.layers",     "policy.heads",         "policy.d_model",       "policy.d_ff",
      "policy.max_tokens", "policy.nnz_samples",   "policy.embedding_dim", "policy.feature_dim",
      "policy.vocab_size", "policy.tie_embeddings"};
  return keys;
}

struct CheckpointFile {
  std::map<std::string, std::string> values;
  std::filesystem::path path;
  [[nodiscard]] const std::string& get(const std::string& key) const {
    auto found = values.find(key);
    if (found == values.end()) {
      throw std::runtime_error(path.string() + ": missing key '" + key + "'");
    }
    return found->second;
  }
  [[nodiscard]] std::int64_t integer(const std::string& key) const {
    try {
      return std::stoll(get(key));
    } catch (const std::logic_error&) {
      throw std::runtime_error(path.string() + ": key '" + key + "' is not an integer: '" +
                               get(key) + "'");
    }
  }
  [[nodiscard]] std::uint64_t unsigned_integer(const std::string& key) const {
    try {
      return std::stoull(get(key));
    } catch (const std::logic_error&) {
      throw std::runtime_error(path.string() + ": key '" + key + "' is not an integer: '" +
                               get(key) + "'");
    }
  }
};

CheckpointFile read_checkpoint_file(const std::filesystem::path& dir) {
  CheckpointFile file;
  file.path = dir / "checkpoint.txt";
  std::ifstream in(file.path);
  if (!in)
    throw std::runtime_error(file.path.string() + ": cannot read (not a checkpoint folder?)");
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find(" = ");
    if (eq == std::string::npos) {
      throw std::runtime_error(file.path.string() + ":" + std::to_string(number) +
                               ": expected 'key = value', got '" + line + "'");
    }
    file.values[line.substr(0, eq)] = line.substr(eq + 3);
  }
  const std::string& format = file.get("format");
  if (format != "sparserl-agent-checkpoint " + std::to_string(kCheckpointVersion)) {
    throw std::runtime_error(file.path.string() + ": format '" + format +
                             "', expected sparserl-agent-checkpoint " +
                             std::to_string(kCheckpointVersion));
  }
  return file;
}

AgentConfig config_from(const CheckpointFile& file) {
  AgentConfig config;
  for (const auto& [key, value] : file.values) {
    if (key.rfind("config.", 0) != 0) continue;
    try {
      apply_key_value(config, key.substr(7), value);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(file.path.string() + ": " + e.what());
    }
  }
  return config;
}

void require_file(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path))
    throw std::runtime_error(path.string() + ": missing from the checkpoint");
}

void fnv1a(const torch::Tensor& flat_bytes, std::uint64_t& hash) {
  const auto* data = flat_bytes.data_ptr<std::uint8_t>();
  for (std::int64_t i = 0; i < flat_bytes.numel(); ++i) {
    hash ^= data[i];
    hash *= 0x100000001b3ULL;
  }
}

}  // namespace

// ---- CounterRng ---------------------------------------------------------------------------------

std::uint64_t CounterRng::next() {
  std::uint64_t state = seed ^ (0x9e3779b97f4a7c15ULL * ++counter);
  datasets::splitmix64(state);
  return datasets::splitmix64(state);
}

double CounterRng::uniform_open() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }

std::uint64_t CounterRng::below(std::uint64_t n) {
  if (n <= 1) return 0;
  // Rejection keeps it unbiased; n is small (batch sizes), so a retry is rare.
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  std::uint64_t x = next();
  while (x >= limit) x = next();
  return x % n;
}

// ---- SequenceBatch ------------------------------------------------------------------------------

SequenceBatch SequenceBatch::select(const torch::Tensor& rows) const {
  const torch::Tensor r = rows.to(inputs.device());
  SequenceBatch out;
  out.prefix = prefix.index_select(r);
  out.inputs = inputs.index_select(0, r);
  out.targets = targets.index_select(0, r);
  out.valid = valid.index_select(0, r);
  if (action_masks.defined()) out.action_masks = action_masks.index_select(0, r);
  return out;
}

// ---- Learner ------------------------------------------------------------------------------------

Learner::Learner(AgentConfig config_in, std::shared_ptr<const env::Vocabulary> vocabulary_in)
    : config(resolved(std::move(config_in), *vocabulary_in)),
      vocabulary(std::move(vocabulary_in)),
      device(resolve_device(config.device)) {
  torch::manual_seed(config.seed);
  policy = TransformerPolicy(config.policy);
  policy->to(device);
  rng.seed = config.seed ^ 0x706f6c6963792121ULL;  // "policy!!": apart from the env's streams
  make_optimizer();
}

namespace {

// AdamW over `model`: matrices of Linear layers are decayed; biases, norms and embeddings are not
// (GPT-2, nanoGPT). With `value_head_group`, the value head is a third group (no weight decay).
std::unique_ptr<torch::optim::AdamW> make_adamw(TransformerPolicy& model,
                                                const OptimizerConfig& o, bool value_head_group) {
  std::vector<torch::Tensor> decay, no_decay, value_head;
  for (const auto& item : model->named_parameters()) {
    const bool embedding = item.key().find("embedding") != std::string::npos;
    if (value_head_group && item.key().rfind("value_head.", 0) == 0) {
      value_head.push_back(item.value());
      continue;
    }
    (item.value().dim() >= 2 && !embedding ? decay : no_decay).push_back(item.value());
  }
  auto options = [&](double weight_decay) {
    return std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(o.lr)
                                                            .betas({o.beta1, o.beta2})
                                                            .eps(o.eps)
                                                            .weight_decay(weight_decay));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, options(o.weight_decay));
  groups.emplace_back(no_decay, options(0.0));
  if (value_head_group) groups.emplace_back(value_head, options(0.0));
  return std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(o.lr));
}

double clip_gradients(TransformerPolicy& model, double max_grad_norm) {
  const double max_norm =
      max_grad_norm > 0 ? max_grad_norm : std::numeric_limits<double>::infinity();
  return torch::nn::utils::clip_grad_norm_(model->parameters(), max_norm);
}

}  // namespace

void Learner::make_optimizer() {
  // Under PPO with a shared critic and ppo.value_lr_scale != 1 the value head is a third group,
  // stepped at lr x scale.
  const bool value_head_group = config.algorithm == Algorithm::ppo &&
                                config.ppo.critic == PpoCritic::shared &&
                                config.ppo.value_lr_scale != 1.0;
  optimizer = make_adamw(policy, config.optimizer, value_head_group);
}

void Learner::make_critic() {
  critic = clone_policy(policy);
  for (auto& p : critic->parameters()) p.set_requires_grad(true);
  critic->train();
  critic_optimizer = make_adamw(critic, config.optimizer, false);
}

double Learner::critic_step() {
  const double norm = clip_gradients(critic, config.optimizer.max_grad_norm);
  for (auto& group : critic_optimizer->param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options())
        .lr(current_lr() * config.ppo.value_lr_scale);
  }
  critic_optimizer->step();
  critic_optimizer->zero_grad();
  return norm;
}

double Learner::current_lr() const { return config.optimizer.lr_at(counters.optimizer_steps); }

double Learner::optimizer_step() {
  const double norm = clip_gradients(policy, config.optimizer.max_grad_norm);
  const double lr = current_lr();
  auto& groups = optimizer->param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    // The third group, when there is one, is PPO's value head (make_optimizer).
    const double scale = g == 2 ? config.ppo.value_lr_scale : 1.0;
    static_cast<torch::optim::AdamWOptions&>(groups[g].options()).lr(lr * scale);
  }
  optimizer->step();
  optimizer->zero_grad();
  ++counters.optimizer_steps;
  return norm;
}

PrefixBatch Learner::prefix_batch(std::span<const env::MatrixObservation* const> matrices) const {
  const PolicyConfig& p = config.policy;
  const auto batch = static_cast<std::int64_t>(matrices.size());
  std::vector<float> embedding(static_cast<std::size_t>(batch * p.nnz_samples * p.embedding_dim),
                               0.0f);
  std::vector<std::uint8_t> valid(static_cast<std::size_t>(batch * p.nnz_samples), 0);
  std::vector<float> features(static_cast<std::size_t>(batch * p.feature_dim), 0.0f);
  std::vector<std::uint8_t> feature_valid(static_cast<std::size_t>(batch), 0);
  for (std::int64_t b = 0; b < batch; ++b) {
    const env::MatrixObservation* m = matrices[static_cast<std::size_t>(b)];
    if (m == nullptr) continue;
    if (m->nnz_samples != p.nnz_samples || m->embedding_dim != p.embedding_dim ||
        static_cast<int>(m->features.size()) != p.feature_dim) {
      throw std::invalid_argument(
          "observation of shape K = " + std::to_string(m->nnz_samples) + ", D = " +
          std::to_string(m->embedding_dim) + ", F = " + std::to_string(m->features.size()) +
          " does not fit the policy (nnz_samples = " + std::to_string(p.nnz_samples) +
          ", embedding_dim = " + std::to_string(p.embedding_dim) +
          ", feature_dim = " + std::to_string(p.feature_dim) + ")");
    }
    std::copy(m->embedding.begin(), m->embedding.end(),
              embedding.begin() + b * p.nnz_samples * p.embedding_dim);
    for (int k = 0; k < std::min(m->count, p.nnz_samples); ++k)
      valid[static_cast<std::size_t>(b * p.nnz_samples + k)] = 1;
    std::copy(m->features.begin(), m->features.end(), features.begin() + b * p.feature_dim);
    feature_valid[static_cast<std::size_t>(b)] = 1;
  }
  PrefixBatch out;
  out.embedding =
      torch::from_blob(embedding.data(), {batch, p.nnz_samples, p.embedding_dim}, torch::kFloat)
          .clone();
  out.valid =
      torch::from_blob(valid.data(), {batch, p.nnz_samples}, torch::kUInt8).to(torch::kBool);
  out.features = torch::from_blob(features.data(), {batch, p.feature_dim}, torch::kFloat).clone();
  out.feature_valid =
      torch::from_blob(feature_valid.data(), {batch}, torch::kUInt8).to(torch::kBool);
  return out.to(device);
}

SequenceBatch Learner::sequence_batch(
    std::span<const env::MatrixObservation* const> matrices,
    std::span<const std::vector<env::TokenId>* const> sequences,
    std::span<const std::vector<std::uint8_t>* const> masks) const {
  const auto batch = static_cast<std::int64_t>(sequences.size());
  std::int64_t longest = 1;
  for (const auto* s : sequences)
    longest = std::max<std::int64_t>(longest, static_cast<std::int64_t>(s->size()));
  if (longest > config.policy.max_tokens) {
    throw std::invalid_argument(
        "a sequence of " + std::to_string(longest) +
        " tokens exceeds policy.max_tokens = " + std::to_string(config.policy.max_tokens));
  }
  const env::TokenId pad = vocabulary->pad();
  std::vector<std::int64_t> inputs(static_cast<std::size_t>(batch * longest), pad);
  std::vector<std::int64_t> targets(static_cast<std::size_t>(batch * longest), pad);
  std::vector<std::uint8_t> valid(static_cast<std::size_t>(batch * longest), 0);
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto& s = *sequences[static_cast<std::size_t>(b)];
    const std::int64_t row = b * longest;
    inputs[static_cast<std::size_t>(row)] = vocabulary->bos();
    for (std::size_t t = 0; t < s.size(); ++t) {
      targets[static_cast<std::size_t>(row) + t] = s[t];
      valid[static_cast<std::size_t>(row) + t] = 1;
      if (t + 1 < static_cast<std::size_t>(longest))
        inputs[static_cast<std::size_t>(row) + t + 1] = s[t];
    }
  }
  SequenceBatch out;
  out.prefix = prefix_batch(matrices);
  out.inputs = torch::tensor(inputs, torch::kLong).view({batch, longest}).to(device);
  out.targets = torch::tensor(targets, torch::kLong).view({batch, longest}).to(device);
  out.valid =
      torch::from_blob(valid.data(), {batch, longest}, torch::kUInt8).to(torch::kBool).to(device);
  if (masks.empty()) return out;  // no masks asked for (pretraining, SFT)

  const auto vocab = static_cast<std::int64_t>(vocabulary->size());
  if (config.mask == env::MaskMode::none) {
    // Mode none forbids only <pad> and <bos>: one row, broadcast.
    torch::Tensor row = torch::ones({vocab}, torch::kBool);
    row[vocabulary->pad()] = false;
    row[vocabulary->bos()] = false;
    out.action_masks = row.view({1, 1, vocab}).expand({batch, longest, vocab}).to(device);
    return out;
  }
  // Padding positions allow everything, so their log-softmax stays finite.
  std::vector<std::uint8_t> all(static_cast<std::size_t>(batch * longest * vocab), 1);
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto& s = *sequences[static_cast<std::size_t>(b)];
    std::uint8_t* base = all.data() + b * longest * vocab;
    const auto* given = masks[static_cast<std::size_t>(b)];
    if (given != nullptr && !given->empty()) {
      if (given->size() != s.size() * static_cast<std::size_t>(vocab)) {
        throw std::invalid_argument("sequence " + std::to_string(b) + ": " +
                                    std::to_string(given->size()) + " mask bytes for " +
                                    std::to_string(s.size()) + " tokens");
      }
      std::copy(given->begin(), given->end(), base);
      continue;
    }
    env::ActionMask replay(vocabulary, config.mask, config.policy.max_tokens);
    for (std::size_t t = 0; t < s.size(); ++t) {
      replay.fill(std::span<std::uint8_t>(base + t * vocab, static_cast<std::size_t>(vocab)));
      if (!replay.allows(s[t])) {
        throw std::invalid_argument("sequence " + std::to_string(b) + ": token " +
                                    std::to_string(t) + " (" + vocabulary->describe(s[t]) +
                                    ") is not allowed by the " +
                                    std::string(env::to_string(config.mask)) + " mask");
      }
      replay.advance(s[t]);
    }
  }
  out.action_masks = torch::from_blob(all.data(), {batch, longest, vocab}, torch::kUInt8)
                         .to(torch::kBool)
                         .to(device);
  return out;
}

TokenScores Learner::score(TransformerPolicy& model, const SequenceBatch& batch, bool entropy) {
  const PolicyOutput out = model->forward(batch.prefix, batch.inputs, batch.valid);
  torch::Tensor logits = apply_action_mask(out.logits, batch.action_masks);
  if (config.sampling.temperature != 1.0) logits = logits / config.sampling.temperature;
  const torch::Tensor log_softmax = torch::log_softmax(logits, -1);
  TokenScores scores;
  scores.log_probs = log_softmax.gather(-1, batch.targets.unsqueeze(-1))
                         .squeeze(-1)
                         .masked_fill(batch.valid.logical_not(), 0.0);
  if (entropy) {
    // Forbidden tokens have log p = -inf and p = 0: their term is 0, and replacing -inf by 0 before
    // the product keeps 0 * -inf (NaN) out of the forward pass and out of the gradient.
    const torch::Tensor finite_log = log_softmax.masked_fill(torch::isinf(log_softmax), 0.0);
    scores.entropy =
        -(log_softmax.exp() * finite_log).sum(-1).masked_fill(batch.valid.logical_not(), 0.0);
  }
  scores.values = out.values.masked_fill(batch.valid.logical_not(), 0.0);
  return scores;
}

torch::Tensor Learner::score_values(TransformerPolicy& model, const SequenceBatch& batch) {
  return model->values(batch.prefix, batch.inputs, batch.valid)
      .masked_fill(batch.valid.logical_not(), 0.0);
}

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

std::vector<torch::Tensor> minibatch_indices(Learner& learner, std::int64_t n, int minibatches) {
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
    out.push_back(torch::tensor(part, torch::kLong).to(learner.device));
  }
  return out;
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

// ---- PolicyAgent --------------------------------------------------------------------------------

PolicyAgent::PolicyAgent(AgentConfig config, std::shared_ptr<const env::Vocabulary> vocabulary)
    : learner_(std::make_unique<Learner>(std::move(config), std::move(vocabulary))) {}

PolicyAgent::PolicyAgent(std::unique_ptr<Learner> learner) : learner_(std::move(learner)) {}

PolicyAgent::~PolicyAgent() = default;

std::unique_ptr<PolicyAgent> PolicyAgent::from_checkpoint(const std::filesystem::path& dir,
                                                          std::optional<std::string> device) {
  const CheckpointFile file = read_checkpoint_file(dir);
  AgentConfig config = config_from(file);
  if (device) config.device = *device;
  require_file(dir / "vocabulary.vocab");
  auto vocabulary =
      std::make_shared<const env::Vocabulary>(env::Vocabulary::load(dir / "vocabulary.vocab"));
  std::unique_ptr<PolicyAgent> agent(
      new PolicyAgent(std::make_unique<Learner>(config, vocabulary)));
  agent->load(dir);
  return agent;
}

AgentConfig PolicyAgent::checkpoint_config(const std::filesystem::path& dir) {
  return config_from(read_checkpoint_file(dir));
}

std::string PolicyAgent::name() const { return std::string(to_string(learner_->config.algorithm)); }

std::string PolicyAgent::policy_id() const {
  return name() + ":step=" + std::to_string(learner_->counters.optimizer_steps);
}

const AgentConfig& PolicyAgent::config() const { return learner_->config; }
const env::Vocabulary& PolicyAgent::vocabulary() const { return *learner_->vocabulary; }
const std::shared_ptr<const env::Vocabulary>& PolicyAgent::vocabulary_ptr() const {
  return learner_->vocabulary;
}
const AgentCounters& PolicyAgent::counters() const { return learner_->counters; }
std::int64_t PolicyAgent::parameter_count() const { return learner_->policy->parameter_count(); }
std::string PolicyAgent::device() const { return learner_->device.str(); }
bool PolicyAgent::has_reference() const { return !learner_->reference.is_empty(); }

void PolicyAgent::set_reference_to_current() {
  learner_->reference = clone_policy(learner_->policy);
}

void PolicyAgent::set_algorithm(Algorithm algorithm) { learner_->config.algorithm = algorithm; }

void PolicyAgent::set_optimizer(const OptimizerConfig& optimizer) {
  if (auto error = optimizer.validate()) throw std::invalid_argument(*error);
  learner_->config.optimizer = optimizer;
  learner_->make_optimizer();
}

std::string PolicyAgent::weights_digest() const {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const auto& item : learner_->policy->named_parameters()) {
    fnv1a(item.value().detach().to(torch::kCPU).contiguous().view(torch::kUInt8).flatten(), hash);
  }
  std::ostringstream out;
  out << std::hex << std::setw(16) << std::setfill('0') << hash;
  return out.str();
}

env::ActionBatch PolicyAgent::act(std::span<const env::Observation> observations) {
  Learner& l = *learner_;
  torch::NoGradGuard no_grad;
  l.policy->eval();
  const auto batch = static_cast<std::int64_t>(observations.size());
  env::ActionBatch actions;
  if (batch == 0) return actions;
  const auto vocab = static_cast<std::int64_t>(l.vocabulary->size());
  if (static_cast<std::int64_t>(l.act_rows.size()) != batch || l.act_cache.batch() != batch) {
    l.act_rows.assign(static_cast<std::size_t>(batch), ActRow{});
    l.act_cache = KvCache{};
  }

  // Which rows continue their cached episode by one token, and which start over.
  std::vector<std::int64_t> advance, restart;
  std::vector<std::int64_t> step_tokens(static_cast<std::size_t>(batch), l.vocabulary->pad());
  std::vector<std::uint8_t> masks(static_cast<std::size_t>(batch * vocab));
  std::vector<std::uint8_t> idle(static_cast<std::size_t>(batch), 0);
  for (std::int64_t b = 0; b < batch; ++b) {
    const env::Observation& o = observations[static_cast<std::size_t>(b)];
    if (o.action_mask.size() != static_cast<std::size_t>(vocab)) {
      throw std::invalid_argument("act: observation " + std::to_string(b) + " has a mask of " +
                                  std::to_string(o.action_mask.size()) +
                                  " tokens, the vocabulary " + std::to_string(vocab));
    }
    ActRow& row = l.act_rows[static_cast<std::size_t>(b)];
    if (std::none_of(o.action_mask.begin(), o.action_mask.end(),
                     [](std::uint8_t m) { return m != 0; })) {
      // An ended episode (VectorEnv's next_step auto-reset ignores the action): answer <pad>.
      idle[static_cast<std::size_t>(b)] = 1;
      std::fill(masks.begin() + b * vocab, masks.begin() + (b + 1) * vocab, std::uint8_t{1});
      row = ActRow{};
      continue;
    }
    if (!o.matrix)
      throw std::invalid_argument("act: observation " + std::to_string(b) + " has no matrix");
    std::copy(o.action_mask.begin(), o.action_mask.end(), masks.begin() + b * vocab);
    const bool continues = !l.act_cache.empty() && row.matrix == o.matrix &&
                           o.tokens.size() == row.tokens.size() + 1 &&
                           std::equal(row.tokens.begin(), row.tokens.end(), o.tokens.begin());
    if (continues) {
      advance.push_back(b);
      step_tokens[static_cast<std::size_t>(b)] = o.tokens.back();
    } else {
      restart.push_back(b);
      if (o.tokens.empty()) {
        const std::string digest = env::observation_digest(*o.matrix);
        if (l.observed.emplace(digest, o.matrix).second) {
          l.observed_order.push_back(digest);
          if (l.observed_order.size() > kObservedCapacity) {
            l.observed.erase(l.observed_order.front());
            l.observed_order.pop_front();
          }
        }
      }
    }
    row.matrix = o.matrix;
    row.tokens = o.tokens;
  }

  if (advance.empty() && restart.empty()) {  // every row idle
    for (std::int64_t b = 0; b < batch; ++b) {
      actions.tokens.push_back(l.vocabulary->pad());
      actions.log_probs.push_back(0.0f);
      actions.values.push_back(0.0f);
    }
    return actions;
  }
  torch::Tensor logits, values;
  if (!advance.empty()) {
    torch::Tensor active = torch::zeros({batch}, torch::kBool);
    for (auto b : advance) active[b] = true;
    const PolicyOutput out = l.policy->decode_step(
        torch::tensor(step_tokens, torch::kLong).to(l.device), active.to(l.device), l.act_cache);
    logits = out.logits;
    values = out.values;
  }
  if (!restart.empty()) {
    std::vector<const env::MatrixObservation*> matrices;
    std::vector<const std::vector<env::TokenId>*> sequences;
    for (auto b : restart) {
      matrices.push_back(observations[static_cast<std::size_t>(b)].matrix.get());
      sequences.push_back(&observations[static_cast<std::size_t>(b)].tokens);
    }
    // sequence_batch's inputs are <bos> + tokens[:-1]; the cache must see every token, so feed
    // <bos> + tokens: collate tokens plus one dummy and use the inputs.
    std::vector<std::vector<env::TokenId>> extended;
    for (const auto* s : sequences) {
      extended.push_back(*s);
      extended.back().push_back(l.vocabulary->pad());
    }
    std::vector<const std::vector<env::TokenId>*> pointers;
    for (const auto& s : extended) pointers.push_back(&s);
    const SequenceBatch seq = l.sequence_batch(matrices, pointers, {});
    KvCache fresh;
    const PolicyOutput out = l.policy->prefill(seq.prefix, seq.inputs, seq.valid, fresh);
    const torch::Tensor rows = torch::tensor(restart, torch::kLong).to(l.device);
    if (l.act_cache.empty() && static_cast<std::int64_t>(restart.size()) == batch) {
      l.act_cache = std::move(fresh);
      logits = out.logits;
      values = out.values;
    } else {
      if (l.act_cache.empty())
        l.act_cache = l.policy->empty_cache(batch, fresh.capacity(), l.device);
      if (!logits.defined()) {
        logits = torch::zeros({batch, vocab}, out.logits.options());
        values = torch::zeros({batch}, out.values.options());
      }
      l.act_cache.assign_rows(rows, fresh);
      logits.index_copy_(0, rows, out.logits);
      values.index_copy_(0, rows, out.values);
    }
  }

  const torch::Tensor mask =
      torch::from_blob(masks.data(), {batch, vocab}, torch::kUInt8).to(torch::kBool).to(l.device);
  const SamplingConfig& sampling = l.config.sampling;
  const torch::Tensor masked = apply_action_mask(logits, mask);
  torch::Tensor chosen;
  double temperature = sampling.temperature;
  if (sampling.greedy) {
    chosen = masked.argmax(-1);
    temperature = 1.0;
  } else {
    chosen = sample_from_logits(filter_logits(masked, sampling), uniforms(l.rng, batch));
  }
  const torch::Tensor log_probs =
      torch::log_softmax(masked / temperature, -1).gather(-1, chosen.unsqueeze(-1)).squeeze(-1);
  const torch::Tensor chosen_cpu = chosen.to(torch::kCPU);
  const torch::Tensor log_probs_cpu = log_probs.to(torch::kCPU).to(torch::kFloat);
  const torch::Tensor values_cpu = values.to(torch::kCPU).to(torch::kFloat);
  for (std::int64_t b = 0; b < batch; ++b) {
    if (idle[static_cast<std::size_t>(b)]) {
      actions.tokens.push_back(l.vocabulary->pad());
      actions.log_probs.push_back(0.0f);
      actions.values.push_back(0.0f);
      continue;
    }
    const auto token = static_cast<env::TokenId>(chosen_cpu[b].item<std::int64_t>());
    if (observations[static_cast<std::size_t>(b)].action_mask[static_cast<std::size_t>(token)] ==
        0) {
      throw std::runtime_error("act: the policy's logits are not finite (sampled the forbidden " +
                               l.vocabulary->describe(token) + "); training has diverged");
    }
    actions.tokens.push_back(token);
    actions.log_probs.push_back(log_probs_cpu[b].item<float>());
    actions.values.push_back(values_cpu[b].item<float>());
    ++l.counters.generated_tokens;
  }
  return actions;
}

std::vector<Completion> PolicyAgent::generate(
    std::span<const std::shared_ptr<const env::MatrixObservation>> prompts, int samples,
    const SamplingConfig& sampling) {
  if (auto error = sampling.validate()) throw std::invalid_argument(*error);
  if (samples < 1)
    throw std::invalid_argument("generate: samples = " + std::to_string(samples) +
                                ", expected >= 1");
  Learner& l = *learner_;
  torch::NoGradGuard no_grad;
  l.policy->eval();
  const auto rows = static_cast<std::int64_t>(prompts.size()) * samples;
  std::vector<Completion> out(static_cast<std::size_t>(rows));
  if (rows == 0) return out;
  const auto vocab = static_cast<std::int64_t>(l.vocabulary->size());
  const int max_tokens = l.config.policy.max_tokens;
  const bool keep_masks = l.config.mask != env::MaskMode::none;

  std::vector<const env::MatrixObservation*> matrices;
  for (const auto& p : prompts) {
    for (int s = 0; s < samples; ++s) matrices.push_back(p.get());
  }
  std::vector<env::ActionMask> action_masks;
  action_masks.reserve(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r)
    action_masks.emplace_back(l.vocabulary, l.config.mask, max_tokens);

  const PrefixBatch prefix = l.prefix_batch(matrices);
  const torch::Tensor start = torch::full(
      {rows, 1}, l.vocabulary->bos(), torch::TensorOptions().dtype(torch::kLong).device(l.device));
  const torch::Tensor start_valid =
      torch::ones({rows, 1}, torch::TensorOptions().dtype(torch::kBool).device(l.device));
  KvCache cache;
  PolicyOutput step = l.policy->prefill(prefix, start, start_valid, cache);

  std::vector<std::uint8_t> active(static_cast<std::size_t>(rows), 1);
  std::vector<std::uint8_t> mask_bytes(static_cast<std::size_t>(rows * vocab), 0);
  const double temperature = sampling.greedy ? 1.0 : sampling.temperature;
  for (int t = 0; t < max_tokens; ++t) {
    for (std::int64_t r = 0; r < rows; ++r) {
      std::span<std::uint8_t> row(mask_bytes.data() + r * vocab, static_cast<std::size_t>(vocab));
      if (active[static_cast<std::size_t>(r)]) {
        action_masks[static_cast<std::size_t>(r)].fill(row);
      } else {
        std::fill(row.begin(), row.end(), 1);  // finished rows draw anything; the draw is discarded
      }
    }
    const torch::Tensor mask = torch::from_blob(mask_bytes.data(), {rows, vocab}, torch::kUInt8)
                                   .to(torch::kBool)
                                   .to(l.device);
    const torch::Tensor masked = apply_action_mask(step.logits, mask);
    const torch::Tensor chosen =
        sampling.greedy
            ? masked.argmax(-1)
            : sample_from_logits(filter_logits(masked, sampling), uniforms(l.rng, rows));
    const torch::Tensor log_probs =
        torch::log_softmax(masked / temperature, -1).gather(-1, chosen.unsqueeze(-1)).squeeze(-1);
    const torch::Tensor chosen_cpu = chosen.to(torch::kCPU).contiguous();
    const torch::Tensor log_probs_cpu = log_probs.to(torch::kCPU).to(torch::kFloat).contiguous();
    const torch::Tensor values_cpu = step.values.to(torch::kCPU).to(torch::kFloat).contiguous();
    const auto* chosen_data = chosen_cpu.data_ptr<std::int64_t>();
    const auto* lp_data = log_probs_cpu.data_ptr<float>();
    const auto* v_data = values_cpu.data_ptr<float>();
    bool any = false;
    std::vector<std::int64_t> next(static_cast<std::size_t>(rows), l.vocabulary->pad());
    for (std::int64_t r = 0; r < rows; ++r) {
      if (!active[static_cast<std::size_t>(r)]) continue;
      Completion& c = out[static_cast<std::size_t>(r)];
      const auto token = static_cast<env::TokenId>(chosen_data[r]);
      if (!action_masks[static_cast<std::size_t>(r)].allows(token)) {
        throw std::runtime_error(
            "generate: the policy's logits are not finite (sampled the forbidden " +
            l.vocabulary->describe(token) + "); training has diverged");
      }
      c.tokens.push_back(token);
      c.log_probs.push_back(lp_data[r]);
      c.values.push_back(v_data[r]);
      if (keep_masks) {
        c.action_masks.insert(c.action_masks.end(), mask_bytes.begin() + r * vocab,
                              mask_bytes.begin() + (r + 1) * vocab);
      }
      action_masks[static_cast<std::size_t>(r)].advance(token);
      ++l.counters.generated_tokens;
      if (token == l.vocabulary->eos()) {
        c.terminated = true;
        active[static_cast<std::size_t>(r)] = 0;
      } else {
        next[static_cast<std::size_t>(r)] = token;
        any = true;
      }
    }
    if (!any || t + 1 == max_tokens) break;
    std::vector<std::uint8_t> still(active);
    const torch::Tensor active_t =
        torch::from_blob(still.data(), {rows}, torch::kUInt8).to(torch::kBool).to(l.device);
    step = l.policy->decode_step(torch::tensor(next, torch::kLong).to(l.device), active_t, cache);
  }
  return out;
}

env::Statistics PolicyAgent::update_rollouts(std::span<const Rollout> rollouts) {
  Learner& l = *learner_;
  if (rollouts.empty()) throw std::invalid_argument("update: no rollouts");
  const auto start = std::chrono::steady_clock::now();
  const bool wants_reference =
      (l.config.algorithm == Algorithm::ppo && l.config.ppo.kl_coef > 0) ||
      (l.config.algorithm == Algorithm::grpo && l.config.grpo.beta > 0) ||
      (l.config.algorithm == Algorithm::reinforce && l.config.reinforce.kl_coef > 0);
  // The reference is the policy as RL found it, unless a stage set one before.
  if (wants_reference && l.reference.is_empty()) set_reference_to_current();
  env::Statistics stats;
  switch (l.config.algorithm) {
    case Algorithm::reinforce:
      stats = reinforce_update(l, rollouts);
      break;
    case Algorithm::ppo:
      stats = ppo_update(l, rollouts);
      break;
    case Algorithm::grpo:
      stats = grpo_update(l, rollouts);
      break;
    case Algorithm::sft:
      throw std::logic_error(
          "update: the sft agent learns from examples (sft_step), not from rollouts");
  }
  std::int64_t tokens = 0;
  for (const Rollout& r : rollouts) tokens += static_cast<std::int64_t>(r.completion.tokens.size());
  ++l.counters.updates;
  l.counters.samples += static_cast<std::int64_t>(rollouts.size());
  l.counters.tokens += tokens;
  const env::Statistics rollout = rollout_statistics(rollouts);
  stats.insert(stats.end(), rollout.begin(), rollout.end());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats.emplace_back("perf/update_seconds", seconds);
  stats.emplace_back("global_step", static_cast<double>(l.counters.optimizer_steps));
  return stats;
}

env::Statistics PolicyAgent::update(std::span<const env::Episode> episodes) {
  Learner& l = *learner_;
  std::vector<Rollout> rollouts;
  std::map<std::string, int> groups;
  for (const env::Episode& e : episodes) {
    std::shared_ptr<const env::MatrixObservation> matrix = e.matrix;
    if (!matrix) {
      auto found = l.observed.find(e.observation_digest);
      if (found == l.observed.end()) {
        throw std::invalid_argument(
            "update: episode " + std::to_string(e.episode_index) + " of " + e.task.str() +
            " (env " + std::to_string(e.env_id) +
            ") was not acted on by this agent: its matrix observation is unknown");
      }
      matrix = found->second;
    }
    if (e.tokens.empty()) continue;
    const std::string group_key =
        e.group >= 0 ? "#" + std::to_string(e.group) : "task " + e.task.str();
    Rollout r;
    r.task = e.task;
    r.matrix = std::move(matrix);
    r.group = groups.try_emplace(group_key, static_cast<int>(groups.size())).first->second;
    r.completion.tokens = e.tokens;
    r.completion.log_probs = e.log_probs;
    r.completion.values = e.values;
    r.completion.action_masks = e.action_masks;
    r.completion.terminated = e.terminated;
    r.reward = e.reward;
    r.evaluated = e.eval.has_value();
    if (e.eval) {
      r.compiled = e.eval->compiled;
      r.correct = e.eval->correct;
      r.speedup = e.eval->correct && e.eval->timed ? e.eval->timing.speedup : 0.0;
    }
    rollouts.push_back(std::move(r));
  }
  return update_rollouts(rollouts);
}

env::Statistics PolicyAgent::pretrain_step(std::span<const std::vector<env::TokenId>> programs) {
  return agents::pretrain_step(*learner_, programs);
}

env::Statistics PolicyAgent::sft_step(std::span<const SftExample> examples) {
  return agents::sft_step(*learner_, examples);
}

double PolicyAgent::sft_loss(std::span<const SftExample> examples) {
  return agents::sft_loss(*learner_, examples);
}

void PolicyAgent::save(const std::filesystem::path& dir) const {
  const Learner& l = *learner_;
  std::filesystem::create_directories(dir);
  // checkpoint.txt goes last and is replaced atomically: its presence marks a complete checkpoint.
  std::filesystem::remove(dir / "checkpoint.txt");
  {
    torch::serialize::OutputArchive archive;
    l.policy->save(archive);
    archive.save_to((dir / "model.pt").string());
  }
  if (!l.reference.is_empty()) {
    torch::serialize::OutputArchive archive;
    l.reference->save(archive);
    archive.save_to((dir / "reference.pt").string());
  } else {
    std::filesystem::remove(dir / "reference.pt");
  }
  if (!l.critic.is_empty()) {
    torch::serialize::OutputArchive model, optimizer;
    l.critic->save(model);
    model.save_to((dir / "critic.pt").string());
    l.critic_optimizer->save(optimizer);
    optimizer.save_to((dir / "critic_optimizer.pt").string());
  } else {
    std::filesystem::remove(dir / "critic.pt");
    std::filesystem::remove(dir / "critic_optimizer.pt");
  }
  {
    torch::serialize::OutputArchive archive;
    l.optimizer->save(archive);
    archive.save_to((dir / "optimizer.pt").string());
  }
  {
    torch::serialize::OutputArchive archive;
    archive.write("cpu_generator", at::detail::getDefaultCPUGenerator().get_state());
    archive.save_to((dir / "rng.pt").string());
  }
  l.vocabulary->save(dir / "vocabulary.vocab");

  std::ostringstream text;
  text << "# SparseRL Gym agent checkpoint "
          "(agents/learning/include/sparserl/agents/policy_agent.hpp)\n";
  text << "format = sparserl-agent-checkpoint " << kCheckpointVersion << "\n";
  text << "vocabulary.name = " << l.vocabulary->name() << "\n";
  text << "vocabulary.digest = " << l.vocabulary->digest() << "\n";
  text << "counters.optimizer_steps = " << l.counters.optimizer_steps << "\n";
  text << "counters.updates = " << l.counters.updates << "\n";
  text << "counters.samples = " << l.counters.samples << "\n";
  text << "counters.tokens = " << l.counters.tokens << "\n";
  text << "counters.generated_tokens = " << l.counters.generated_tokens << "\n";
  text << "rng.seed = " << l.rng.seed << "\n";
  text << "rng.counter = " << l.rng.counter << "\n";
  text << "reference = " << (l.reference.is_empty() ? "false" : "true") << "\n";
  text << "critic = " << (l.critic.is_empty() ? "false" : "true") << "\n";
  text << "parameters = " << l.policy->parameter_count() << "\n";
  for (const auto& [key, value] : to_key_values(l.config))
    text << "config." << key << " = " << value << "\n";
  const auto temporary = dir / "checkpoint.txt.tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text.str();
    if (!out) throw std::runtime_error(temporary.string() + ": cannot write");
  }
  std::filesystem::rename(temporary, dir / "checkpoint.txt");
}

void PolicyAgent::load(const std::filesystem::path& dir) {
  Learner& l = *learner_;
  const CheckpointFile file = read_checkpoint_file(dir);
  l.vocabulary->require_digest(file.get("vocabulary.digest"), (dir / "checkpoint.txt").string());
  AgentConfig saved = config_from(file);
  const auto mine = to_key_values(l.config);
  const auto theirs = to_key_values(saved);
  for (const std::string& key : shape_keys()) {
    if (mine.at(key) != theirs.at(key)) {
      throw std::invalid_argument(file.path.string() + ": " + key + " = " + theirs.at(key) +
                                  ", but this agent has " + mine.at(key));
    }
  }
  for (const char* name : {"model.pt", "optimizer.pt", "rng.pt"}) require_file(dir / name);
  saved.device = l.config.device;
  l.config = saved;
  {
    torch::serialize::InputArchive archive;
    archive.load_from((dir / "model.pt").string(), l.device);
    l.policy->load(archive);
  }
  if (file.get("reference") == "true") {
    require_file(dir / "reference.pt");
    if (l.reference.is_empty()) l.reference = clone_policy(l.policy);
    torch::serialize::InputArchive archive;
    archive.load_from((dir / "reference.pt").string(), l.device);
    l.reference->load(archive);
    for (auto& p : l.reference->parameters()) p.set_requires_grad(false);
  } else {
    l.reference = TransformerPolicy{nullptr};
  }
  // Checkpoints from before the separate critic have no "critic" line: none was kept then.
  const auto critic_line = file.values.find("critic");
  if (critic_line != file.values.end() && critic_line->second == "true") {
    require_file(dir / "critic.pt");
    require_file(dir / "critic_optimizer.pt");
    l.make_critic();
    torch::serialize::InputArchive model, optimizer;
    model.load_from((dir / "critic.pt").string(), l.device);
    l.critic->load(model);
    optimizer.load_from((dir / "critic_optimizer.pt").string(), l.device);
    l.critic_optimizer->load(optimizer);
  } else {
    l.critic = TransformerPolicy{nullptr};
    l.critic_optimizer.reset();
  }
  l.make_optimizer();  // with the saved optimiser settings, then its saved state
  {
    torch::serialize::InputArchive archive;
    archive.load_from((dir / "optimizer.pt").string(), l.device);
    l.optimizer->load(archive);
  }
  {
    torch::serialize::InputArchive archive;
    archive.load_from((dir / "rng.pt").string());
    torch::Tensor state;
    archive.read("cpu_generator", state);
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    generator.set_state(state);
  }
  l.counters.optimizer_steps = file.integer("counters.optimizer_steps");
  l.counters.updates = file.integer("counters.updates");
  l.counters.samples = file.integer("counters.samples");
  l.counters.tokens = file.integer("counters.tokens");
  l.counters.generated_tokens = file.integer("counters.generated_tokens");
  l.rng.seed = file.unsigned_integer("rng.seed");
  l.rng.counter = file.unsigned_integer("rng.counter");
  l.act_rows.clear();
  l.act_cache = KvCache{};
}

void PolicyAgent::load_weights(const std::filesystem::path& dir) {
  Learner& l = *learner_;
  const CheckpointFile file = read_checkpoint_file(dir);
  l.vocabulary->require_digest(file.get("vocabulary.digest"), (dir / "checkpoint.txt").string());
  const auto mine = to_key_values(l.config);
  const auto theirs = to_key_values(config_from(file));
  for (const std::string& key : shape_keys()) {
    if (mine.at(key) != theirs.at(key)) {
      throw std::invalid_argument(file.path.string() + ": " + key + " = " + theirs.at(key) +
                                  ", but this agent has " + mine.at(key));
    }
  }
  require_file(dir / "model.pt");
  torch::serialize::InputArchive archive;
  archive.load_from((dir / "model.pt").string(), l.device);
  l.policy->load(archive);
  l.act_rows.clear();
  l.act_cache = KvCache{};
}

}  // namespace sparserl::agents
