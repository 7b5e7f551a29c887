// The transformer policy: embedding of the matrix prefix and the code tokens, pre-norm blocks with
// hand-written causal attention (a decode step's through scaled_dot_product_attention where asked,
// on LibTorch 2), the language-model and value heads, the key-value cache for
// incremental decoding, and the logit processing of sampling (mask, temperature, top-k, top-p,
// inverse-CDF draw). One forward path serves training (forward), the first step of generation
// (prefill) and every later step (decode_step); tests check that the three agree.
#include "sparserl/agents/torch/policy.hpp"

#include <torch/nn/init.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace sparserl::agents {

namespace {

constexpr double kInitStd = 0.02;  // GPT-2's initialisation

}  // namespace

torch::Tensor causal_prefix_mask(const torch::Tensor& key_valid) {
  const std::int64_t length = key_valid.size(1);
  const auto options = torch::TensorOptions().dtype(torch::kBool).device(key_valid.device());
  const torch::Tensor causal = torch::ones({length, length}, options).tril();
  const torch::Tensor self = torch::eye(length, options);
  return ((causal.unsqueeze(0) & key_valid.unsqueeze(1)) | self.unsqueeze(0)).unsqueeze(1);
}

torch::Tensor at_slots(const torch::Tensor& hidden, const torch::Tensor& slots) {
  const std::int64_t batch = hidden.size(0);
  return hidden.gather(1, slots.view({batch, 1, 1}).expand({batch, 1, hidden.size(2)})).squeeze(1);
}

PrefixBatch PrefixBatch::to(const torch::Device& device) const {
  return {embedding.to(device), valid.to(device), features.to(device), feature_valid.to(device)};
}

PrefixBatch PrefixBatch::index_select(const torch::Tensor& rows) const {
  const torch::Tensor r = rows.to(embedding.device());
  return {embedding.index_select(0, r), valid.index_select(0, r), features.index_select(0, r),
          feature_valid.index_select(0, r)};
}

void KvCache::reserve(std::int64_t needed) {
  const std::int64_t have = capacity();
  if (needed <= have) return;
  const std::int64_t grown = std::max(needed, 2 * have);
  auto widen = [&](torch::Tensor& t) {
    std::vector<std::int64_t> shape = t.sizes().vec();
    const std::size_t dim = shape.size() == 2 ? 1 : 2;
    shape[dim] = grown - have;
    t = torch::cat({t, torch::zeros(shape, t.options())}, static_cast<std::int64_t>(dim));
  };
  for (auto& k : keys) widen(k);
  for (auto& v : values) widen(v);
  widen(key_valid);
}

KvCache KvCache::zeros(std::int64_t layers, std::int64_t batch, std::int64_t heads,
                       std::int64_t capacity, std::int64_t head_dim,
                       const torch::TensorOptions& options) {
  KvCache cache;
  for (std::int64_t l = 0; l < layers; ++l) {
    cache.keys.push_back(torch::zeros({batch, heads, capacity, head_dim}, options));
    cache.values.push_back(torch::zeros({batch, heads, capacity, head_dim}, options));
  }
  cache.key_valid = torch::zeros({batch, capacity}, options.dtype(torch::kBool));
  cache.lengths = torch::zeros({batch}, options.dtype(torch::kLong));
  return cache;
}

std::int64_t KvCache::step_longest() const {
  return fixed_span > 0 ? fixed_span - 1 : lengths.max().item<std::int64_t>();
}

KvCache::Step KvCache::open_step(const torch::Tensor& active, std::int64_t longest) {
  reserve(longest + 1);
  Step step;
  step.at = lengths;
  step.span = longest + 1;
  key_valid.scatter_(1, step.at.unsqueeze(1), active.to(torch::kBool).unsqueeze(1));
  const torch::Tensor slots =
      torch::arange(step.span,
                    torch::TensorOptions().dtype(torch::kLong).device(key_valid.device()))
          .unsqueeze(0);
  const torch::Tensor at = step.at.unsqueeze(1);
  step.mask = ((key_valid.narrow(1, 0, step.span) & (slots <= at)) | (slots == at))
                  .view({key_valid.size(0), 1, 1, step.span});
  return step;
}

void KvCache::assign_rows(const torch::Tensor& rows, KvCache& other) {
  const std::int64_t needed = std::max(capacity(), other.capacity());
  reserve(needed);
  other.reserve(needed);
  const torch::Tensor r = rows.to(key_valid.device());
  for (std::size_t l = 0; l < keys.size(); ++l) {
    keys[l].index_copy_(0, r, other.keys[l]);
    values[l].index_copy_(0, r, other.values[l]);
  }
  key_valid.index_copy_(0, r, other.key_valid);
  lengths.index_copy_(0, r, other.lengths);
}

TransformerBlockImpl::TransformerBlockImpl(const PolicyConfig& config, int layer)
    : heads_(config.heads), d_head_(config.d_model / config.heads) {
  (void)layer;
  const std::int64_t d = config.d_model;
  ln_attention_ =
      register_module("ln_attention", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  qkv_ = register_module("qkv", torch::nn::Linear(d, 3 * d));
  projection_ = register_module("projection", torch::nn::Linear(d, d));
  ln_mlp_ = register_module("ln_mlp", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  fc_in_ = register_module("fc_in", torch::nn::Linear(d, config.d_ff));
  fc_out_ = register_module("fc_out", torch::nn::Linear(config.d_ff, d));
  attention_dropout_ = register_module("attention_dropout", torch::nn::Dropout(config.dropout));
  residual_dropout_ = register_module("residual_dropout", torch::nn::Dropout(config.dropout));

  // GPT-2: residual projections scaled by 1/sqrt(2 * layers) so the residual stream's variance does
  // not grow with depth.
  torch::NoGradGuard no_grad;
  const double residual_std = kInitStd / std::sqrt(2.0 * config.layers);
  for (auto* linear : {&qkv_, &fc_in_}) {
    torch::nn::init::normal_((*linear)->weight, 0.0, kInitStd);
    torch::nn::init::zeros_((*linear)->bias);
  }
  for (auto* linear : {&projection_, &fc_out_}) {
    torch::nn::init::normal_((*linear)->weight, 0.0, residual_std);
    torch::nn::init::zeros_((*linear)->bias);
  }
}

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& masked_out,
                                            torch::Tensor* cache_keys, torch::Tensor* cache_values,
                                            const torch::Tensor& write_at, std::int64_t span,
                                            const torch::Tensor& bias) {
  const std::int64_t batch = x.size(0), length = x.size(1), width = x.size(2);
  const torch::Tensor qkv =
      qkv_(ln_attention_(x)).view({batch, length, 3, heads_, d_head_}).permute({2, 0, 3, 1, 4});
  const torch::Tensor q = qkv[0], k = qkv[1], v = qkv[2];  // [B, H, T, dh]
  torch::Tensor keys = k, values = v;
  if (cache_keys != nullptr) {
    if (write_at.defined()) {
      const torch::Tensor index =
          write_at.view({batch, 1, 1, 1}).expand({batch, heads_, 1, d_head_});
      cache_keys->scatter_(2, index, k);
      cache_values->scatter_(2, index, v);
    } else {
      cache_keys->narrow(2, 0, length).copy_(k);
      cache_values->narrow(2, 0, length).copy_(v);
    }
    keys = cache_keys->narrow(2, 0, span);
    values = cache_values->narrow(2, 0, span);
  }
  torch::Tensor attended;
#if TORCH_VERSION_MAJOR >= 2
  if (bias.defined()) {
    // A decode step through the fused kernel (TransformerPolicyImpl::set_sdpa_decode); its scale
    // is 1 / sqrt(d_head) as below.
    attended = at::scaled_dot_product_attention(q, keys, values, bias, 0.0, false);
  }
#else
  (void)bias;  // set only on LibTorch 2
#endif
  if (!attended.defined()) {
    torch::Tensor scores = torch::matmul(q, keys.transpose(-2, -1)) / std::sqrt(double(d_head_));
    scores = scores.masked_fill(masked_out, -std::numeric_limits<float>::infinity());
    attended = torch::matmul(attention_dropout_(torch::softmax(scores, -1)), values);
  }
  const torch::Tensor mixed = attended.transpose(1, 2).contiguous().view({batch, length, width});
  const torch::Tensor h = x + residual_dropout_(projection_(mixed));
  return h + residual_dropout_(fc_out_(torch::gelu(fc_in_(ln_mlp_(h)))));
}

TransformerPolicyImpl::TransformerPolicyImpl(const PolicyConfig& config) : config_(config) {
  if (auto error = config.validate()) throw std::invalid_argument(*error);
  if (config.vocab_size <= 0 || config.feature_dim <= 0) {
    throw std::invalid_argument(
        "TransformerPolicy: vocab_size and feature_dim must be resolved (> 0)");
  }
  const std::int64_t d = config.d_model;
  token_embedding_ = register_module("token_embedding", torch::nn::Embedding(config.vocab_size, d));
  position_embedding_ =
      register_module("position_embedding", torch::nn::Embedding(config.max_sequence_length(), d));
  matrix_projection_ =
      register_module("matrix_projection", torch::nn::Linear(config.embedding_dim, d));
  feature_projection_ =
      register_module("feature_projection", torch::nn::Linear(config.feature_dim, d));
  embedding_dropout_ = register_module("embedding_dropout", torch::nn::Dropout(config.dropout));
  blocks_ = register_module("blocks", torch::nn::ModuleList());
  for (int layer = 0; layer < config.layers; ++layer)
    blocks_->push_back(TransformerBlock(config, layer));
  final_norm_ =
      register_module("final_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  if (!config.tie_embeddings) {
    lm_head_ = register_module(
        "lm_head", torch::nn::Linear(torch::nn::LinearOptions(d, config.vocab_size).bias(false)));
  }
  value_head_ = register_module("value_head", torch::nn::Linear(d, 1));

  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(token_embedding_->weight, 0.0, kInitStd);
  torch::nn::init::normal_(position_embedding_->weight, 0.0, kInitStd);
  for (auto* linear : {&matrix_projection_, &feature_projection_}) {
    torch::nn::init::normal_((*linear)->weight, 0.0, kInitStd);
    torch::nn::init::zeros_((*linear)->bias);
  }
  if (lm_head_) torch::nn::init::normal_(lm_head_->weight, 0.0, kInitStd);
  // The critic starts at 0 (no opinion), as value heads initialised from a language model do in
  // practice after the first few updates anyway.
  torch::nn::init::zeros_(value_head_->weight);
  torch::nn::init::zeros_(value_head_->bias);
}

std::int64_t TransformerPolicyImpl::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

torch::Tensor TransformerPolicyImpl::embed(const PrefixBatch& prefix, const torch::Tensor& tokens,
                                           torch::Tensor& prefix_valid) {
  const std::int64_t length = config_.prefix_length() + tokens.size(1);
  if (length > config_.max_sequence_length()) {
    throw std::invalid_argument(
        "TransformerPolicy: " + std::to_string(tokens.size(1)) +
        " tokens exceed max_tokens + 1 = " + std::to_string(config_.max_tokens + 1));
  }
  const torch::Tensor x =
      torch::cat({matrix_projection_(prefix.embedding),
                  feature_projection_(prefix.features).unsqueeze(1), token_embedding_(tokens)},
                 1);
  const torch::Tensor positions =
      torch::arange(length, torch::TensorOptions().dtype(torch::kLong).device(tokens.device()));
  prefix_valid = torch::cat(
      {prefix.valid.to(torch::kBool), prefix.feature_valid.to(torch::kBool).unsqueeze(1)}, 1);
  return embedding_dropout_(x + position_embedding_(positions).unsqueeze(0));
}

PolicyOutput TransformerPolicyImpl::head(const torch::Tensor& hidden) {
  torch::Tensor logits =
      lm_head_ ? lm_head_(hidden) : torch::matmul(hidden, token_embedding_->weight.t());
  return {logits, value_head_(hidden).squeeze(-1)};
}

torch::Tensor TransformerPolicyImpl::token_hidden(const PrefixBatch& prefix,
                                                  const torch::Tensor& tokens,
                                                  const torch::Tensor& token_valid) {
  torch::Tensor key_valid;
  torch::Tensor x = embed(prefix, tokens, key_valid);
  key_valid = torch::cat({key_valid, token_valid.to(torch::kBool)}, 1);
  // The mask's complement once for every layer.
  const torch::Tensor masked_out = causal_prefix_mask(key_valid).logical_not();
  for (const auto& block : *blocks_) {
    x = block->as<TransformerBlock>()->forward(x, masked_out, nullptr, nullptr, {}, 0);
  }
  return final_norm_(x).narrow(1, config_.prefix_length(), tokens.size(1));
}

PolicyOutput TransformerPolicyImpl::forward(const PrefixBatch& prefix, const torch::Tensor& tokens,
                                            const torch::Tensor& token_valid) {
  return head(token_hidden(prefix, tokens, token_valid));
}

PolicyOutput TransformerPolicyImpl::forward_from(const PrefixBatch& prefix,
                                                 const torch::Tensor& tokens,
                                                 const torch::Tensor& token_valid,
                                                 std::int64_t first) {
  const PolicyOutput all = forward(prefix, tokens, token_valid);
  if (first == 0) return all;
  const std::int64_t kept = tokens.size(1) - first;
  return {all.logits.narrow(1, first, kept), all.values.narrow(1, first, kept)};
}

torch::Tensor TransformerPolicyImpl::values(const PrefixBatch& prefix, const torch::Tensor& tokens,
                                            const torch::Tensor& token_valid) {
  return value_head_(token_hidden(prefix, tokens, token_valid)).squeeze(-1);
}

KvCache TransformerPolicyImpl::empty_cache(std::int64_t batch, std::int64_t capacity,
                                           const torch::Device& device) const {
  return KvCache::zeros(config_.layers, batch, config_.heads, capacity,
                        config_.d_model / config_.heads,
                        torch::TensorOptions().dtype(torch::kFloat).device(device));
}

PolicyOutput TransformerPolicyImpl::prefill(const PrefixBatch& prefix, const torch::Tensor& tokens,
                                            const torch::Tensor& token_valid, KvCache& cache) {
  torch::Tensor key_valid;
  torch::Tensor x = embed(prefix, tokens, key_valid);
  key_valid = torch::cat({key_valid, token_valid.to(torch::kBool)}, 1);
  const std::int64_t batch = tokens.size(0), length = key_valid.size(1);
  const std::int64_t capacity = std::min<std::int64_t>(length + 64, config_.max_sequence_length());
  cache = empty_cache(batch, capacity, x.device());
  cache.key_valid.narrow(1, 0, length).copy_(key_valid);
  cache.lengths = token_valid.sum(1).to(torch::kLong) + config_.prefix_length();

  const torch::Tensor masked_out = causal_prefix_mask(key_valid).logical_not();
  int l = 0;
  for (const auto& block : *blocks_) {
    x = block->as<TransformerBlock>()->forward(x, masked_out, &cache.keys[l], &cache.values[l], {},
                                               length);
    ++l;
  }
  return head(at_slots(final_norm_(x), cache.lengths - 1));
}

PolicyOutput TransformerPolicyImpl::decode_step(const torch::Tensor& tokens,
                                                const torch::Tensor& active, KvCache& cache) {
  const std::int64_t longest = cache.step_longest();
  if (longest >= config_.max_sequence_length()) {
    throw std::invalid_argument("TransformerPolicy: decoding past max_tokens = " +
                                std::to_string(config_.max_tokens));
  }
  const KvCache::Step step = cache.open_step(active, longest);
  torch::Tensor x = (token_embedding_(tokens) + position_embedding_(step.at)).unsqueeze(1);
  x = embedding_dropout_(x);
  // The mask's complement once for every layer, or (sdpa_decode) the additive bias the fused
  // kernel reads: 0 where a slot may be attended, -inf elsewhere.
  const torch::Tensor masked_out = step.mask.logical_not();
  torch::Tensor bias;
#if TORCH_VERSION_MAJOR >= 2
  if (sdpa_decode_) {
    bias = torch::zeros(step.mask.sizes(), x.options())
               .masked_fill_(masked_out, -std::numeric_limits<float>::infinity());
  }
#endif
  int l = 0;
  for (const auto& block : *blocks_) {
    x = block->as<TransformerBlock>()->forward(x, masked_out, &cache.keys[l], &cache.values[l],
                                               step.at, step.span, bias);
    ++l;
  }
  cache.close_step(active);
  return head(final_norm_(x).squeeze(1));
}

bool TransformerPolicyImpl::set_sdpa_decode(bool on) {
#if TORCH_VERSION_MAJOR >= 2
  sdpa_decode_ = on;
#else
  sdpa_decode_ = false;
  (void)on;
#endif
  return sdpa_decode_;
}

TransformerPolicy clone_policy(const TransformerPolicyImpl& policy) {
  // Construction draws initial weights from LibTorch's default generator; keep its state so that a
  // clone does not shift the dropout stream of the run.
  auto generator = at::detail::getDefaultCPUGenerator();
  const torch::Tensor state = generator.get_state();
  TransformerPolicy copy(policy.config());
  generator.set_state(state);
  const auto device = policy.parameters().front().device();
  copy->to(device);
  torch::NoGradGuard no_grad;
  const auto source = policy.named_parameters();
  for (auto& item : copy->named_parameters()) item.value().copy_(source[item.key()]);
  const auto source_buffers = policy.named_buffers();
  for (auto& item : copy->named_buffers()) item.value().copy_(source_buffers[item.key()]);
  copy->eval();
  for (auto& p : copy->parameters()) p.set_requires_grad(false);
  return copy;
}

std::shared_ptr<PolicyNetworkImpl> TransformerPolicyImpl::frozen_copy() const {
  return clone_policy(*this).ptr();
}

std::shared_ptr<PolicyNetworkImpl> TransformerPolicyImpl::trainable_copy() const {
  TransformerPolicy copy = clone_policy(*this);
  for (auto& p : copy->parameters()) p.set_requires_grad(true);
  copy->train();
  return copy.ptr();
}

torch::Tensor apply_action_mask(const torch::Tensor& logits, const torch::Tensor& mask) {
  if (!mask.defined()) return logits;
  return logits.masked_fill(mask.to(torch::kBool).logical_not(),
                            -std::numeric_limits<float>::infinity());
}

torch::Tensor filter_logits(const torch::Tensor& logits, const SamplingConfig& sampling) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  torch::Tensor out = logits;
  if (sampling.temperature != 1.0) out = out / sampling.temperature;
  const std::int64_t vocab = out.size(-1);
  if (sampling.top_k > 0 && sampling.top_k < vocab) {
    const torch::Tensor kth =
        std::get<0>(out.topk(sampling.top_k, -1)).narrow(-1, sampling.top_k - 1, 1);
    out = out.masked_fill(out < kth, minus_inf);
  }
  if (sampling.top_p < 1.0) {
    auto [sorted, order] = out.sort(-1, /*descending=*/true);
    const torch::Tensor probs = torch::softmax(sorted.to(torch::kDouble), -1);
    // Keep the smallest prefix whose mass reaches top_p: drop a token when the mass before it does.
    const torch::Tensor drop = (probs.cumsum(-1) - probs) > sampling.top_p;
    out = torch::empty_like(out).scatter_(-1, order, sorted.masked_fill(drop, minus_inf));
  }
  return out;
}

torch::Tensor sample_from_logits(const torch::Tensor& logits, const torch::Tensor& uniforms) {
  const torch::Tensor cdf = torch::softmax(logits.to(torch::kDouble), -1).cumsum(-1);
  const std::int64_t vocab = logits.size(-1);
  // u in (0, 1) times the row's total: the first index whose CDF reaches it has positive mass.
  const torch::Tensor target =
      uniforms.to(cdf.device()).unsqueeze(-1) * cdf.narrow(-1, vocab - 1, 1);
  return (cdf < target).sum(-1).clamp_max(vocab - 1).to(torch::kLong);
}

}  // namespace sparserl::agents
