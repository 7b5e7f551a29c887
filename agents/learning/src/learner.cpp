// The Learner (torch/learner.hpp): the policy on its device, AdamW with the learning-rate
// schedule and the separate critic, the counter-based generator, and the batches every algorithm
// scores - observation prefixes, token sequences with their replayed action masks - with the
// log-probabilities, entropies and values of their tokens. With several ranks it also averages the
// gradients before each step and reduces the means the algorithms report.
#include "sparserl/agents/torch/learner.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "sparserl/agents/row_pool.hpp"
#include "sparserl/agents/safetensors.hpp"
#include "sparserl/agents/torch/causal_lm.hpp"
#include "sparserl/agents/torch/collectives.hpp"
#include "sparserl/datasets/random.hpp"
#include "sparserl/env/sparse_cuda_env.hpp"

namespace sparserl::agents {

namespace {

namespace fs = std::filesystem;

torch::Device resolve_device(const std::string& name) {
  if (name == "auto")
    return torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  if (name.rfind("cuda", 0) == 0 && !torch::cuda::is_available()) {
    throw std::invalid_argument("agent.device = '" + name + "': LibTorch sees no CUDA device here");
  }
  return torch::Device(name);
}

// The config with what it leaves to the vocabulary and the observation filled in: the logits'
// width (the closed vocabulary's size, or an HF model's embedding rows) and the feature count.
AgentConfig resolved(AgentConfig config, const env::Vocabulary& vocabulary) {
  if (auto error = config.validate()) throw std::invalid_argument(*error);
  const bool hf = config.model.kind == ModelKind::hf;
  const int vocab =
      hf ? static_cast<int>(read_hf_config(fs::path(config.model.path) / "config.json").vocab_size)
         : static_cast<int>(vocabulary.size());
  if (config.policy.vocab_size != 0 && config.policy.vocab_size != vocab) {
    throw std::invalid_argument("policy.vocab_size = " + std::to_string(config.policy.vocab_size) +
                                ": " +
                                (hf ? "the model " + config.model.path + " has "
                                    : "the vocabulary '" + vocabulary.name() + "' has ") +
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
  out.prompt_length = prompt_length;
  out.input_valid = input_valid.is_same(valid) ? torch::Tensor() : input_valid.index_select(0, r);
  out.targets = targets.index_select(0, r);
  out.valid = valid.index_select(0, r);
  if (!out.input_valid.defined()) out.input_valid = out.valid;
  if (action_masks.defined()) out.action_masks = action_masks.index_select(0, r);
  return out;
}

// ---- Learner ------------------------------------------------------------------------------------

Learner::Learner(AgentConfig config_in, std::shared_ptr<const env::Vocabulary> vocabulary_in)
    : config(resolved(std::move(config_in), *vocabulary_in)),
      vocabulary(std::move(vocabulary_in)),
      tokens(make_token_space(config, vocabulary)),
      device(resolve_device(config.device)),
      algorithm(AlgorithmRegistry::make(config.algorithm)) {
  // A budget the grammar cannot complete a program in is refused now, not at the first sample.
  (void)tokens->mask(config.mask, config.policy.max_tokens);
  torch::manual_seed(config.seed);
  if (config.model.kind == ModelKind::hf) {
    const fs::path folder = config.model.path;
    base_digest = SafetensorsCheckpoint(folder).weights_digest();
    policy = PolicyNetwork::of(
        load_causal_lm(folder,
                       causal_lm_options(config, read_hf_config(folder / "config.json"), device),
                       config.seed)
            .ptr());
  } else {
    policy = PolicyNetwork::of(TransformerPolicy(config.policy).ptr());
    policy->to(device);
  }
  rng.seed = config.seed ^ 0x706f6c6963792121ULL;  // "policy!!": apart from the env's streams
  make_optimizer();
}

namespace {

// AdamW over `model`'s trainable parameters (a frozen base under LoRA has none): matrices of
// Linear layers are decayed; biases, norms and embeddings are not (GPT-2, nanoGPT). With
// `value_head_group`, the value head is a third group (no weight decay).
std::unique_ptr<torch::optim::AdamW> make_adamw(PolicyNetwork& model, const OptimizerConfig& o,
                                                bool value_head_group) {
  std::vector<torch::Tensor> decay, no_decay, value_head;
  for (const auto& item : model->named_parameters()) {
    if (!item.value().requires_grad()) continue;
    const bool embedding = item.key().find("embedding") != std::string::npos ||
                           item.key().find("embed_tokens") != std::string::npos;
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

double clip_gradients(PolicyNetwork& model, double max_grad_norm) {
  const double max_norm =
      max_grad_norm > 0 ? max_grad_norm : std::numeric_limits<double>::infinity();
  return torch::nn::utils::clip_grad_norm_(model->parameters(), max_norm);
}

// Several ranks: each rank's gradients are those of the mean loss over its `weight` items; after
// this every rank holds sum(weight x gradient) / sum(weight), the gradient of the mean over all
// ranks' items (one all-reduce of [weight, has-gradient flags, weight x gradients]). A parameter
// that no rank with items gave a gradient keeps none, so AdamW skips it on every rank as one
// process would. Only trainable parameters take part (a frozen LoRA base has no gradient).
void average_gradients(ProcessGroup& group, PolicyNetwork& model, double weight) {
  std::vector<torch::Tensor> parameters;
  for (const torch::Tensor& p : model->parameters()) {
    if (p.requires_grad()) parameters.push_back(p);
  }
  const auto count = static_cast<std::int64_t>(parameters.size());
  std::int64_t elements = 0;
  for (const auto& p : parameters) elements += p.numel();
  torch::Tensor buffer =
      torch::zeros({1 + count + elements},
                   torch::TensorOptions().dtype(torch::kFloat).device(parameters[0].device()));
  buffer[0] = weight;
  std::int64_t at = 1 + count;
  for (std::int64_t i = 0; i < count; ++i) {
    const torch::Tensor& p = parameters[static_cast<std::size_t>(i)];
    if (weight > 0 && p.grad().defined()) {
      buffer[1 + i] = 1.0;
      buffer.narrow(0, at, p.numel()).copy_(p.grad().reshape(-1).to(torch::kFloat) * weight);
    }
    at += p.numel();
  }
  all_reduce_sum(group, buffer);
  const double total = buffer[0].item<double>();
  const torch::Tensor flags = buffer.narrow(0, 1, count).to(torch::kCPU);
  at = 1 + count;
  for (std::int64_t i = 0; i < count; ++i) {
    torch::Tensor p = parameters[static_cast<std::size_t>(i)];
    if (flags[i].item<float>() > 0 && total > 0) {
      p.mutable_grad() = (buffer.narrow(0, at, p.numel()) / total).view_as(p).to(p.dtype()).clone();
    } else {
      p.mutable_grad() = torch::Tensor();
    }
    at += p.numel();
  }
}

void broadcast_module(ProcessGroup& group, const torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (torch::Tensor t : module.parameters()) broadcast_from_main(group, t);
  for (torch::Tensor t : module.buffers()) broadcast_from_main(group, t);
}

}  // namespace

void Learner::make_optimizer() {
  // The value head is a third group, stepped at lr x scale, when the algorithm asks for a scale
  // (PPO with a shared critic and ppo.value_lr_scale != 1).
  value_head_lr_scale = algorithm->value_head_lr_scale(config);
  optimizer = make_adamw(policy, config.optimizer, value_head_lr_scale != 1.0);
}

void Learner::make_critic() {
  critic = PolicyNetwork(policy->trainable_copy());
  critic_optimizer = make_adamw(critic, config.optimizer, false);
}

double Learner::critic_step(double lr_scale, double shard_weight) {
  if (distributed()) average_gradients(*ranks, critic, shard_weight);
  const double norm = clip_gradients(critic, config.optimizer.max_grad_norm);
  for (auto& group : critic_optimizer->param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(current_lr() * lr_scale);
  }
  critic_optimizer->step();
  critic_optimizer->zero_grad();
  return norm;
}

double Learner::current_lr() const { return config.optimizer.lr_at(counters.optimizer_steps); }

double Learner::optimizer_step(double shard_weight) {
  if (distributed()) average_gradients(*ranks, policy, shard_weight);
  const double norm = clip_gradients(policy, config.optimizer.max_grad_norm);
  const double lr = current_lr();
  auto& groups = optimizer->param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    // The third group, when there is one, is the value head (make_optimizer).
    const double scale = g == 2 ? value_head_lr_scale : 1.0;
    static_cast<torch::optim::AdamWOptions&>(groups[g].options()).lr(lr * scale);
  }
  optimizer->step();
  optimizer->zero_grad();
  ++counters.optimizer_steps;
  return norm;
}

std::vector<double> Learner::shard_means(const std::vector<ShardMean>& values) {
  std::vector<double> out;
  out.reserve(values.size());
  if (!distributed()) {
    for (const ShardMean& v : values) out.push_back(v.value);
    return out;
  }
  std::vector<double> sums;
  for (const ShardMean& v : values) {
    sums.push_back(v.value * v.weight);
    sums.push_back(v.weight);
  }
  sums = ranks->sum(std::move(sums));
  for (std::size_t i = 0; i < values.size(); ++i)
    out.push_back(sums[2 * i + 1] > 0 ? sums[2 * i] / sums[2 * i + 1] : 0.0);
  return out;
}

void Learner::broadcast_weights() {
  if (!distributed()) return;
  broadcast_module(*ranks, *policy);
  // Every rank has a reference (or a critic) when rank 0 has one: they were made by the same steps.
  if (!reference.is_empty()) broadcast_module(*ranks, *reference);
  if (!critic.is_empty()) broadcast_module(*ranks, *critic);
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
    // policy.matrix_input: what is left out reads as the padding of a matrix without it.
    if (p.matrix_input == MatrixInput::none) continue;
    if (p.matrix_input == MatrixInput::full) {
      std::copy(m->embedding.begin(), m->embedding.end(),
                embedding.begin() + b * p.nnz_samples * p.embedding_dim);
      for (int k = 0; k < std::min(m->count, p.nnz_samples); ++k)
        valid[static_cast<std::size_t>(b * p.nnz_samples + k)] = 1;
    }
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

std::pair<torch::Tensor, torch::Tensor> Learner::prompt_batch(
    std::span<const env::MatrixObservation* const> matrices) const {
  std::vector<std::vector<env::TokenId>> prompts;
  std::size_t longest = 1;
  for (const env::MatrixObservation* m : matrices) {
    prompts.push_back(tokens->prompt(m));
    longest = std::max(longest, prompts.back().size());
  }
  const auto batch = static_cast<std::int64_t>(matrices.size());
  const auto width = static_cast<std::int64_t>(longest);
  std::vector<std::int64_t> ids(static_cast<std::size_t>(batch * width), tokens->pad());
  std::vector<std::uint8_t> valid(static_cast<std::size_t>(batch * width), 0);
  for (std::size_t b = 0; b < prompts.size(); ++b) {
    const std::size_t offset = b * longest + longest - prompts[b].size();  // left padding
    std::copy(prompts[b].begin(), prompts[b].end(),
              ids.begin() + static_cast<std::ptrdiff_t>(offset));
    std::fill_n(valid.begin() + static_cast<std::ptrdiff_t>(offset), prompts[b].size(), 1);
  }
  return {
      torch::tensor(ids, torch::kLong).view({batch, width}).to(device),
      torch::from_blob(valid.data(), {batch, width}, torch::kUInt8).to(torch::kBool).to(device)};
}

int mask_threads(const TokenSpace& space, std::int64_t rows) {
  if (space.kind() == "closed") return 1;
  return static_cast<int>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(at::get_num_threads(), rows)));
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
  // Each row: its prompt, left-padded to the longest (P columns), then its tokens but the last.
  const auto [prompt, prompt_valid] = prompt_batch(matrices);
  const std::int64_t p = prompt.size(1);
  const env::TokenId pad = tokens->pad();
  std::vector<std::int64_t> inputs(static_cast<std::size_t>(batch * longest), pad);
  std::vector<std::int64_t> targets(static_cast<std::size_t>(batch * longest), pad);
  std::vector<std::uint8_t> valid(static_cast<std::size_t>(batch * longest), 0);
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto& s = *sequences[static_cast<std::size_t>(b)];
    const std::int64_t row = b * longest;
    for (std::size_t t = 0; t < s.size(); ++t) {
      targets[static_cast<std::size_t>(row) + t] = s[t];
      valid[static_cast<std::size_t>(row) + t] = 1;
      if (t + 1 < static_cast<std::size_t>(longest))
        inputs[static_cast<std::size_t>(row) + t + 1] = s[t];
    }
  }
  SequenceBatch out;
  out.prefix = prefix_batch(matrices);
  out.prompt_length = p;
  // Column 0 of `inputs` is where the prompt's last token goes.
  const torch::Tensor code = torch::tensor(inputs, torch::kLong).view({batch, longest}).to(device);
  out.targets = torch::tensor(targets, torch::kLong).view({batch, longest}).to(device);
  out.valid =
      torch::from_blob(valid.data(), {batch, longest}, torch::kUInt8).to(torch::kBool).to(device);
  if (p == 1) {
    out.inputs = code.clone();
    out.inputs.select(1, 0).copy_(prompt.select(1, 0));
    out.input_valid = out.valid;
  } else {
    out.inputs = torch::cat({prompt, code.narrow(1, 1, longest - 1)}, 1);
    out.input_valid = torch::cat({prompt_valid, out.valid.narrow(1, 1, longest - 1)}, 1);
  }
  if (masks.empty()) return out;  // no masks asked for (pretraining, SFT)

  const auto vocab = static_cast<std::int64_t>(tokens->size());
  if (config.mask == env::MaskMode::none) {
    // Mode none allows the same tokens at every step: one row, broadcast.
    std::vector<std::uint8_t> allowed(static_cast<std::size_t>(vocab));
    tokens->mask(config.mask, config.policy.max_tokens)->fill(allowed);
    const torch::Tensor row =
        torch::from_blob(allowed.data(), {vocab}, torch::kUInt8).to(torch::kBool);
    out.action_masks = row.view({1, 1, vocab}).expand({batch, longest, vocab}).to(device);
    return out;
  }
  // Padding positions allow everything, so their log-softmax stays finite. The masks not given
  // (a BPE vocabulary's: generate() keeps none) are replayed from the tokens, a row per thread
  // (mask_threads); the first bad row's error is the one thrown.
  std::vector<std::uint8_t> all(static_cast<std::size_t>(batch * longest * vocab), 1);
  const bool replays = std::any_of(masks.begin(), masks.end(), [](const auto* given) {
    return given == nullptr || given->empty();
  });
  RowPool replay_threads(replays ? mask_threads(*tokens, batch) : 1);
  replay_threads.run(batch, [&](std::int64_t b) {
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
      return;
    }
    const std::unique_ptr<CompletionMask> replay =
        tokens->mask(config.mask, config.policy.max_tokens);
    for (std::size_t t = 0; t < s.size(); ++t) {
      replay->fill(std::span<std::uint8_t>(base + t * vocab, static_cast<std::size_t>(vocab)));
      if (!replay->allows(s[t])) {
        throw std::invalid_argument("sequence " + std::to_string(b) + ": token " +
                                    std::to_string(t) + " (" + tokens->describe(s[t]) +
                                    ") is not allowed by the " +
                                    std::string(env::to_string(config.mask)) + " mask");
      }
      replay->advance(s[t]);
    }
  });
  // The bytes travel as they are and become booleans on the device (B x T x V of them: a GPU's
  // conversion instead of the CPU's).
  out.action_masks = torch::from_blob(all.data(), {batch, longest, vocab}, torch::kUInt8)
                         .to(device)
                         .to(torch::kBool);
  return out;
}

PolicyOutput Learner::outputs(PolicyNetwork& model, const SequenceBatch& batch) {
  return model->forward_from(batch.prefix, batch.inputs, batch.input_valid,
                             batch.prompt_length - 1);
}

TokenScores Learner::score(PolicyNetwork& model, const SequenceBatch& batch, bool entropy) {
  const PolicyOutput out = outputs(model, batch);
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

torch::Tensor Learner::score_values(PolicyNetwork& model, const SequenceBatch& batch) {
  torch::Tensor values = model->values(batch.prefix, batch.inputs, batch.input_valid);
  if (batch.prompt_length > 1) {
    values = values.narrow(1, batch.prompt_length - 1, batch.targets.size(1));
  }
  return values.masked_fill(batch.valid.logical_not(), 0.0);
}

}  // namespace sparserl::agents
