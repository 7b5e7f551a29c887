// The Llama / Qwen2 decoder as a policy (causal_lm.hpp): the layers (RMSNorm, rotary attention with
// grouped key/value heads, SwiGLU), the LoRA-capable projections, the soft prompt, the value head,
// and the three passes the sampler and the learners use - forward (every position), prefill (fill
// the key-value cache) and decode_step (one token per row) - over one trunk, so they agree.
#include "sparserl/agents/torch/causal_lm.hpp"

#include <torch/nn/functional/linear.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <stdexcept>

namespace sparserl::agents {

namespace {

namespace F = torch::nn::functional;

torch::Tensor cast(const torch::Tensor& t, torch::ScalarType dtype) {
  return t.scalar_type() == dtype ? t : t.to(dtype);
}

// HF's rotate_half: [x1, x2] -> [-x2, x1] over the last dimension.
torch::Tensor rotate_half(const torch::Tensor& x) {
  const std::int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

// HF's repeat_kv: [B, Hkv, T, d] -> [B, Hkv * groups, T, d], query head h reading kv head h /
// groups.
torch::Tensor repeat_kv(const torch::Tensor& x, std::int64_t groups) {
  if (groups == 1) return x;
  const auto s = x.sizes();
  return x.unsqueeze(2)
      .expand({s[0], s[1], groups, s[2], s[3]})
      .reshape({s[0], s[1] * groups, s[2], s[3]});
}

// The position of each slot: how many valid slots precede it.
torch::Tensor positions_of(const torch::Tensor& valid) {
  return (valid.to(torch::kLong).cumsum(1) - 1).clamp_min(0);
}

torch::ScalarType storage_dtype(const CausalLmOptions& o, bool trainable) {
  return trainable ? torch::kFloat : o.dtype;
}

}  // namespace

const char* attention_backend() {
#if TORCH_VERSION_MAJOR >= 2
  return "sdpa";
#else
  return "manual";
#endif
}

HfLinearImpl::HfLinearImpl(std::int64_t in, std::int64_t out, bool with_bias,
                           const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty({out, in}, options));
  if (with_bias) bias = register_parameter("bias", torch::empty({out}, options));
}

void HfLinearImpl::cast_for_inference(torch::ScalarType dtype) {
  if (has_lora() || weight.scalar_type() == dtype) return;
  inference_weight_ = weight.detach().to(dtype);
  if (bias.defined()) inference_bias_ = bias.detach().to(dtype);
}

void HfLinearImpl::reset_inference() { inference_weight_ = inference_bias_ = torch::Tensor(); }

torch::Tensor HfLinearImpl::forward(const torch::Tensor& x) {
  const auto dtype = x.scalar_type();
  if (inference_weight_.defined() && inference_weight_.scalar_type() == dtype) {
    return F::linear(x, inference_weight_, inference_bias_);
  }
  torch::Tensor y = F::linear(x, cast(weight, dtype), bias.defined() ? cast(bias, dtype) : bias);
  if (lora_A_) {
    const torch::Tensor in =
        lora_dropout_ > 0 && is_training() ? torch::dropout(x, lora_dropout_, true) : x;
    const torch::Tensor low = F::linear(in, cast(lora_A_->weight, dtype));
    y = y + F::linear(low, cast(lora_B_->weight, dtype)) * lora_scale_;
  }
  return y;
}

void HfLinearImpl::add_lora(int rank, double alpha, double dropout) {
  const auto options = torch::TensorOptions().dtype(torch::kFloat).device(weight.device());
  lora_A_ = register_module(
      "lora_A", torch::nn::Linear(torch::nn::LinearOptions(weight.size(1), rank).bias(false)));
  lora_B_ = register_module(
      "lora_B", torch::nn::Linear(torch::nn::LinearOptions(rank, weight.size(0)).bias(false)));
  lora_A_->to(options.device(), options.dtype().toScalarType());
  lora_B_->to(options.device(), options.dtype().toScalarType());
  lora_scale_ = alpha / rank;
  lora_dropout_ = dropout;
}

torch::Tensor HfLinearImpl::merged_weight() const {
  torch::NoGradGuard no_grad;
  torch::Tensor w = weight.to(torch::kFloat);
  if (!lora_A_) return w;
  return w + torch::matmul(lora_B_->weight.to(torch::kFloat), lora_A_->weight.to(torch::kFloat)) *
                 lora_scale_;
}

RmsNormImpl::RmsNormImpl(std::int64_t width, double eps, const torch::TensorOptions& options)
    : eps_(eps) {
  weight = register_parameter("weight", torch::empty({width}, options));
}

void RmsNormImpl::cast_for_inference(torch::ScalarType dtype) {
  if (weight.scalar_type() != dtype) inference_weight_ = weight.detach().to(dtype);
}

void RmsNormImpl::reset_inference() { inference_weight_ = torch::Tensor(); }

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) {
  const auto dtype = x.scalar_type();
  const torch::Tensor h = x.to(torch::kFloat);
  const torch::Tensor normed = h * torch::rsqrt(h.pow(2).mean(-1, true) + eps_);
  const bool cached = inference_weight_.defined() && inference_weight_.scalar_type() == dtype;
  return (cached ? inference_weight_ : cast(weight, dtype)) * normed.to(dtype);
}

HfEmbeddingImpl::HfEmbeddingImpl(std::int64_t vocab, std::int64_t width,
                                 const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty({vocab, width}, options));
}

torch::Tensor HfEmbeddingImpl::forward(const torch::Tensor& tokens, torch::ScalarType dtype) {
  std::vector<std::int64_t> shape = tokens.sizes().vec();
  shape.push_back(weight.size(1));
  return cast(weight.index_select(0, tokens.reshape(-1)), dtype).view(shape);
}

DecoderLayerImpl::DecoderLayerImpl(const HfModelConfig& c, const torch::TensorOptions& options)
    : heads_(c.num_attention_heads), kv_heads_(c.num_key_value_heads), head_dim_(c.head_dim) {
  const std::int64_t d = c.hidden_size, q = heads_ * head_dim_, kv = kv_heads_ * head_dim_;
  input_layernorm_ = register_module("input_layernorm", RmsNorm(d, c.rms_norm_eps, options));
  // Registered under HF's nesting: self_attn.q_proj, mlp.gate_proj.
  auto self_attn = register_module("self_attn", std::make_shared<torch::nn::Module>());
  q_proj_ = self_attn->register_module("q_proj", HfLinear(d, q, c.qkv_bias(), options));
  k_proj_ = self_attn->register_module("k_proj", HfLinear(d, kv, c.qkv_bias(), options));
  v_proj_ = self_attn->register_module("v_proj", HfLinear(d, kv, c.qkv_bias(), options));
  o_proj_ = self_attn->register_module("o_proj", HfLinear(q, d, c.o_proj_bias(), options));
  post_attention_layernorm_ =
      register_module("post_attention_layernorm", RmsNorm(d, c.rms_norm_eps, options));
  auto mlp = register_module("mlp", std::make_shared<torch::nn::Module>());
  const std::int64_t f = c.intermediate_size;
  gate_proj_ = mlp->register_module("gate_proj", HfLinear(d, f, c.mlp_bias, options));
  up_proj_ = mlp->register_module("up_proj", HfLinear(d, f, c.mlp_bias, options));
  down_proj_ = mlp->register_module("down_proj", HfLinear(f, d, c.mlp_bias, options));
}

HfLinear DecoderLayerImpl::projection(const std::string& name) const {
  if (name == "q_proj") return q_proj_;
  if (name == "k_proj") return k_proj_;
  if (name == "v_proj") return v_proj_;
  if (name == "o_proj") return o_proj_;
  if (name == "gate_proj") return gate_proj_;
  if (name == "up_proj") return up_proj_;
  if (name == "down_proj") return down_proj_;
  throw std::invalid_argument("no projection named '" + name + "' (" + [] {
    std::string all;
    for (const auto& n : lora_target_names()) all += (all.empty() ? "" : ", ") + n;
    return all;
  }() + ")");
}

torch::Tensor DecoderLayerImpl::attention(const torch::Tensor& x, const LayerInputs& in) {
  const std::int64_t batch = x.size(0), length = x.size(1);
  torch::Tensor q = q_proj_(x).view({batch, length, heads_, head_dim_}).transpose(1, 2);
  torch::Tensor k = k_proj_(x).view({batch, length, kv_heads_, head_dim_}).transpose(1, 2);
  torch::Tensor v = v_proj_(x).view({batch, length, kv_heads_, head_dim_}).transpose(1, 2);
  const torch::Tensor cos = in.cos.unsqueeze(1), sin = in.sin.unsqueeze(1);
  q = q * cos + rotate_half(q) * sin;
  k = k * cos + rotate_half(k) * sin;
  torch::Tensor keys = k, values = v;
  if (in.cache_keys != nullptr) {
    if (in.write_at.defined()) {
      const torch::Tensor index =
          in.write_at.view({batch, 1, 1, 1}).expand({batch, kv_heads_, 1, head_dim_});
      in.cache_keys->scatter_(2, index, k);
      in.cache_values->scatter_(2, index, v);
    } else {
      in.cache_keys->narrow(2, 0, length).copy_(k);
      in.cache_values->narrow(2, 0, length).copy_(v);
    }
    keys = in.cache_keys->narrow(2, 0, in.span);
    values = in.cache_values->narrow(2, 0, in.span);
  }
  if (in.masked_out.defined()) {
    // A decode step: one query a row against the cache. Each key-value head's query heads read it
    // together ([B, Hkv, groups, d] x [B, Hkv, d, span]), so the cache is not copied per query
    // head (repeat_kv).
    const std::int64_t groups = heads_ / kv_heads_;
    const torch::Tensor grouped = q.reshape({batch, kv_heads_, groups, head_dim_});
    torch::Tensor scores = torch::matmul(grouped, keys.transpose(-2, -1))
                               .to(torch::kFloat)
                               .mul_(1.0 / std::sqrt(static_cast<double>(head_dim_)));
    // in.masked_out [B, 1, 1, span] broadcasts over the heads and groups.
    scores.masked_fill_(in.masked_out, -std::numeric_limits<float>::infinity());
    const torch::Tensor weights = torch::softmax(scores, -1).to(q.scalar_type());
    const torch::Tensor mixed = torch::matmul(weights, values);  // [B, Hkv, groups, d]
    return o_proj_(mixed.reshape({batch, length, heads_ * head_dim_}));
  }
  keys = repeat_kv(keys, heads_ / kv_heads_);
  values = repeat_kv(values, heads_ / kv_heads_);
#if TORCH_VERSION_MAJOR >= 2
  const torch::Tensor mixed =
      at::scaled_dot_product_attention(q, keys, values, in.mask, 0.0, false);
#else
  torch::Tensor scores =
      torch::matmul(q, keys.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(head_dim_)));
  scores = scores.masked_fill(in.mask.logical_not(), -std::numeric_limits<float>::infinity());
  const torch::Tensor weights = torch::softmax(scores, -1, torch::kFloat).to(q.scalar_type());
  const torch::Tensor mixed = torch::matmul(weights, values);
#endif
  return o_proj_(mixed.transpose(1, 2).reshape({batch, length, heads_ * head_dim_}));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const LayerInputs& in) {
  const torch::Tensor h = x + attention(input_layernorm_(x), in);
  const torch::Tensor m = post_attention_layernorm_(h);
  return h + down_proj_(torch::silu(gate_proj_(m)) * up_proj_(m));
}

DecoderStackImpl::DecoderStackImpl(const HfModelConfig& c, const torch::TensorOptions& options) {
  embed_tokens = register_module("embed_tokens", HfEmbedding(c.vocab_size, c.hidden_size, options));
  layers = register_module("layers", torch::nn::ModuleList());
  for (std::int64_t l = 0; l < c.num_hidden_layers; ++l)
    layers->push_back(DecoderLayer(c, options));
  norm = register_module("norm", RmsNorm(c.hidden_size, c.rms_norm_eps, options));
}

torch::Tensor rotary_inverse_frequencies(const HfModelConfig& c) {
  const std::int64_t d = c.head_dim;
  std::vector<float> out;
  for (std::int64_t i = 0; i < d; i += 2) {
    double f = 1.0 / std::pow(c.rope_theta, static_cast<double>(i) / static_cast<double>(d));
    const RopeScaling& s = c.rope_scaling;
    if (s.type == "linear") f /= s.factor;
    if (s.type == "llama3") {
      // Wavelengths above the original context are slowed by `factor`, those below
      // context / high_freq_factor kept, and the band between interpolated smoothly.
      const double context = static_cast<double>(s.original_max_position_embeddings);
      const double wavelength = 2 * std::numbers::pi / f;
      if (wavelength > context / s.low_freq_factor) {
        f /= s.factor;
      } else if (wavelength >= context / s.high_freq_factor) {
        const double smooth =
            (context / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1 - smooth) * f / s.factor + smooth * f;
      }
    }
    out.push_back(static_cast<float>(f));
  }
  return torch::tensor(out, torch::kFloat);
}

CausalLmPolicyImpl::CausalLmPolicyImpl(HfModelConfig config, CausalLmOptions options)
    : config_(std::move(config)), options_(std::move(options)) {
  if (auto problem = config_.validate()) throw std::invalid_argument("config.json: " + *problem);
  if (options_.dtype != torch::kFloat && options_.dtype != torch::kBFloat16) {
    throw std::invalid_argument("CausalLmPolicy: the compute dtype must be float32 or bfloat16");
  }
  if (options_.soft_prompt &&
      (options_.nnz_samples <= 0 || options_.embedding_dim <= 0 || options_.feature_dim <= 0)) {
    throw std::invalid_argument(
        "CausalLmPolicy: the soft prompt needs nnz_samples, embedding_dim and feature_dim > 0");
  }
  // torch::nn::Linear draws its initial weights from LibTorch's default generator; keep that
  // stream where it was (our own draws come from seeded generators, initialize_*).
  auto default_generator = at::detail::getDefaultCPUGenerator();
  const torch::Tensor generator_state = default_generator.get_state();
  const bool lora = options_.lora_rank > 0;
  const bool base_trains = !options_.frozen && !lora;
  const auto base = torch::TensorOptions()
                        .device(options_.device)
                        .dtype(storage_dtype(options_, base_trains))
                        .requires_grad(false);
  inv_freq_ = rotary_inverse_frequencies(config_).to(options_.device);
  model_ = register_module("model", DecoderStack(config_, base));
  for (const auto& layer : *model_->layers) {
    decoder_layers_.emplace_back(std::dynamic_pointer_cast<DecoderLayerImpl>(layer));
  }
  if (!config_.tie_word_embeddings) {
    lm_head_ =
        register_module("lm_head", HfLinear(config_.hidden_size, config_.vocab_size, false, base));
  }
  const auto heads = torch::TensorOptions().device(options_.device).dtype(torch::kFloat);
  if (options_.soft_prompt) {
    matrix_projection_ = register_module(
        "matrix_projection", torch::nn::Linear(options_.embedding_dim, config_.hidden_size));
    feature_projection_ = register_module(
        "feature_projection", torch::nn::Linear(options_.feature_dim, config_.hidden_size));
    matrix_projection_->to(heads.device(), torch::kFloat);
    feature_projection_->to(heads.device(), torch::kFloat);
  }
  value_head_ = register_module("value_head", torch::nn::Linear(config_.hidden_size, 1));
  value_head_->to(heads.device(), torch::kFloat);
  if (lora) {
    for (const std::string& target : options_.lora_targets) {
      for (auto& layer : decoder_layers_) {
        layer->projection(target)->add_lora(options_.lora_rank, options_.lora_alpha,
                                            options_.lora_dropout);
      }
    }
  }
  for (auto& item : named_parameters()) {
    const bool adapter = item.key().find(".lora_") != std::string::npos;
    const bool hf = item.key().rfind("model.", 0) == 0 || item.key().rfind("lm_head.", 0) == 0;
    item.value().set_requires_grad(!options_.frozen && (base_trains || adapter || !hf));
  }
  default_generator.set_state(generator_state);
}

void CausalLmPolicyImpl::initialize_weights(std::uint64_t seed, double std) {
  torch::NoGradGuard no_grad;
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    if (name.find(".lora_") != std::string::npos) continue;
    if (name.rfind("model.", 0) != 0 && name.rfind("lm_head.", 0) != 0) continue;
    torch::Tensor& p = item.value();
    torch::Tensor values;
    if (name.find("norm.weight") != std::string::npos) {
      values = torch::ones(p.sizes(), torch::kFloat);
    } else if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0) {
      values = torch::zeros(p.sizes(), torch::kFloat);
    } else {
      values = torch::empty(p.sizes(), torch::kFloat).normal_(0.0, std, generator);
    }
    p.copy_(values);
  }
  initialize_policy_parts(seed + 1);
}

void CausalLmPolicyImpl::initialize_policy_parts(std::uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto fill = [&](torch::Tensor& p, const torch::Tensor& values) { p.copy_(values); };
  if (options_.soft_prompt) {
    // Sinusoidal rows have RMS ~0.7 per entry: a projection of std s / sqrt(D) gives outputs of
    // RMS ~0.7 s, s the token embeddings' RMS - the scale the first layer expects.
    const double rms =
        model_->embed_tokens->weight.to(torch::kFloat).pow(2).mean().sqrt().item<double>();
    for (auto* linear : {&matrix_projection_, &feature_projection_}) {
      const double fan_in = static_cast<double>((*linear)->weight.size(1));
      fill((*linear)->weight, torch::empty((*linear)->weight.sizes(), torch::kFloat)
                                  .normal_(0.0, rms / std::sqrt(fan_in), generator));
      (*linear)->bias.zero_();
    }
  }
  value_head_->weight.zero_();
  value_head_->bias.zero_();
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    if (name.find(".lora_A.") != std::string::npos) {
      // PEFT: kaiming_uniform_(a = sqrt(5)), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
      const double bound = 1.0 / std::sqrt(static_cast<double>(item.value().size(1)));
      fill(item.value(),
           torch::empty(item.value().sizes(), torch::kFloat).uniform_(-bound, bound, generator));
    } else if (name.find(".lora_B.") != std::string::npos) {
      item.value().zero_();
    }
  }
}

std::int64_t CausalLmPolicyImpl::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

std::int64_t CausalLmPolicyImpl::trainable_parameter_count() const {
  std::int64_t n = 0;
  for (const auto& p : parameters()) n += p.requires_grad() ? p.numel() : 0;
  return n;
}

torch::Tensor CausalLmPolicyImpl::embed(const PrefixBatch& prefix, const torch::Tensor& tokens,
                                        const torch::Tensor& token_valid, torch::Tensor& valid) {
  const torch::Tensor text = model_->embed_tokens(tokens, options_.dtype);
  if (!options_.soft_prompt) {
    valid = token_valid.to(torch::kBool);
    return text;
  }
  if (!prefix.embedding.defined() || prefix.embedding.size(1) != options_.nnz_samples ||
      prefix.embedding.size(2) != options_.embedding_dim ||
      prefix.features.size(1) != options_.feature_dim) {
    throw std::invalid_argument("CausalLmPolicy: the soft prompt expects embeddings [B, " +
                                std::to_string(options_.nnz_samples) + ", " +
                                std::to_string(options_.embedding_dim) + "] and features [B, " +
                                std::to_string(options_.feature_dim) + "]");
  }
  const torch::Tensor matrix = matrix_projection_(prefix.embedding.to(torch::kFloat));
  const torch::Tensor features = feature_projection_(prefix.features.to(torch::kFloat));
  valid =
      torch::cat({prefix.valid.to(torch::kBool), prefix.feature_valid.to(torch::kBool).unsqueeze(1),
                  token_valid.to(torch::kBool)},
                 1);
  return torch::cat({matrix.to(options_.dtype), features.unsqueeze(1).to(options_.dtype), text}, 1);
}

std::pair<torch::Tensor, torch::Tensor> CausalLmPolicyImpl::rotary(
    const torch::Tensor& positions) const {
  // As transformers: angles in fp32 whatever the compute dtype, then cast.
  const torch::Tensor freqs =
      positions.to(torch::kFloat).unsqueeze(-1) * inv_freq_.to(positions.device()).view({1, 1, -1});
  const torch::Tensor angles = torch::cat({freqs, freqs}, -1);
  return {angles.cos().to(options_.dtype), angles.sin().to(options_.dtype)};
}

torch::Tensor CausalLmPolicyImpl::trunk(torch::Tensor x, const torch::Tensor& valid,
                                        const torch::Tensor& positions, KvCache* cache) {
  auto [cos, sin] = rotary(positions);
  LayerInputs in(cos, sin, causal_prefix_mask(valid));
  const std::int64_t batch = x.size(0), length = x.size(1);
  if (cache != nullptr) {
    *cache = empty_cache(batch, length + 64);
    cache->key_valid.narrow(1, 0, length).copy_(valid);
    const torch::Tensor slot =
        torch::arange(1, length + 1, torch::TensorOptions().dtype(torch::kLong).device(x.device()));
    cache->lengths = (valid.to(torch::kLong) * slot.unsqueeze(0)).amax(1).clamp_min(1);
    in.span = length;
  }
  const bool checkpoint = options_.gradient_checkpointing && is_training() &&
                          torch::GradMode::is_enabled() && cache == nullptr;
  for (std::size_t l = 0; l < decoder_layers_.size(); ++l) {
    if (cache != nullptr) {
      in.cache_keys = &cache->keys[l];
      in.cache_values = &cache->values[l];
    }
    x = checkpoint ? checkpointed_layer(*decoder_layers_[l], x, in)
                   : decoder_layers_[l]->forward(x, in);
  }
  return model_->norm(x);
}

torch::Tensor CausalLmPolicyImpl::logits_of(const torch::Tensor& hidden) {
  if (lm_head_) return lm_head_(hidden).to(torch::kFloat);
  const bool cached =
      inference_head_.defined() && inference_head_.scalar_type() == hidden.scalar_type();
  const torch::Tensor head =
      cached ? inference_head_ : cast(model_->embed_tokens->weight, hidden.scalar_type());
  return F::linear(hidden, head).to(torch::kFloat);
}

void CausalLmPolicyImpl::begin_inference() {
  for (const auto& item : named_modules()) {
    if (auto* linear = item.value()->as<HfLinearImpl>()) linear->cast_for_inference(options_.dtype);
    if (auto* norm = item.value()->as<RmsNormImpl>()) norm->cast_for_inference(options_.dtype);
  }
  const torch::Tensor& embedding = model_->embed_tokens->weight;
  if (!lm_head_ && embedding.scalar_type() != options_.dtype) {
    inference_head_ = embedding.detach().to(options_.dtype);
  }
}

void CausalLmPolicyImpl::end_inference() {
  for (const auto& item : named_modules()) {
    if (auto* linear = item.value()->as<HfLinearImpl>()) linear->reset_inference();
    if (auto* norm = item.value()->as<RmsNormImpl>()) norm->reset_inference();
  }
  inference_head_ = torch::Tensor();
}

torch::Tensor CausalLmPolicyImpl::values_of(const torch::Tensor& hidden) {
  return value_head_(hidden.to(torch::kFloat)).squeeze(-1);
}

torch::Tensor CausalLmPolicyImpl::token_hidden(const PrefixBatch& prefix,
                                               const torch::Tensor& tokens,
                                               const torch::Tensor& token_valid) {
  torch::Tensor valid;
  const torch::Tensor x = embed(prefix, tokens, token_valid, valid);
  return trunk(x, valid, positions_of(valid), nullptr)
      .narrow(1, options_.prefix_length(), tokens.size(1));
}

PolicyOutput CausalLmPolicyImpl::forward(const PrefixBatch& prefix, const torch::Tensor& tokens,
                                         const torch::Tensor& token_valid) {
  const torch::Tensor hidden = token_hidden(prefix, tokens, token_valid);
  return {logits_of(hidden), values_of(hidden)};
}

PolicyOutput CausalLmPolicyImpl::forward_from(const PrefixBatch& prefix,
                                              const torch::Tensor& tokens,
                                              const torch::Tensor& token_valid,
                                              std::int64_t first) {
  const torch::Tensor hidden =
      token_hidden(prefix, tokens, token_valid).narrow(1, first, tokens.size(1) - first);
  return {logits_of(hidden), values_of(hidden)};
}

torch::Tensor CausalLmPolicyImpl::values(const PrefixBatch& prefix, const torch::Tensor& tokens,
                                         const torch::Tensor& token_valid) {
  return values_of(token_hidden(prefix, tokens, token_valid));
}

torch::Tensor CausalLmPolicyImpl::lm_logits(const torch::Tensor& input_ids,
                                            const torch::Tensor& attention_mask,
                                            const torch::Tensor& position_ids) {
  const torch::Tensor valid = attention_mask.to(torch::kBool);
  const torch::Tensor x = model_->embed_tokens(input_ids, options_.dtype);
  const torch::Tensor positions = position_ids.defined() ? position_ids : positions_of(valid);
  return logits_of(trunk(x, valid, positions, nullptr));
}

KvCache CausalLmPolicyImpl::empty_cache(std::int64_t batch, std::int64_t capacity) const {
  return KvCache::zeros(config_.num_hidden_layers, batch, config_.num_key_value_heads, capacity,
                        config_.head_dim,
                        torch::TensorOptions().dtype(options_.dtype).device(options_.device));
}

KvCache CausalLmPolicyImpl::empty_cache(std::int64_t batch, std::int64_t capacity,
                                        const torch::Device& device) const {
  return KvCache::zeros(config_.num_hidden_layers, batch, config_.num_key_value_heads, capacity,
                        config_.head_dim,
                        torch::TensorOptions().dtype(options_.dtype).device(device));
}

PolicyOutput CausalLmPolicyImpl::prefill(const PrefixBatch& prefix, const torch::Tensor& tokens,
                                         const torch::Tensor& token_valid, KvCache& cache) {
  torch::Tensor valid;
  const torch::Tensor x = embed(prefix, tokens, token_valid, valid);
  const torch::Tensor hidden = trunk(x, valid, positions_of(valid), &cache);
  const torch::Tensor last = at_slots(hidden, cache.lengths - 1);
  return {logits_of(last), values_of(last)};
}

PolicyOutput CausalLmPolicyImpl::decode_step(const torch::Tensor& tokens,
                                             const torch::Tensor& active, KvCache& cache) {
  // Slots at or past `lengths` are never valid, so the count of valid slots is the new position.
  const torch::Tensor positions = cache.key_valid.to(torch::kLong).sum(1).unsqueeze(1);
  const KvCache::Step step = cache.open_step(active, cache.step_longest());
  torch::Tensor x = model_->embed_tokens(tokens.unsqueeze(1), options_.dtype);
  auto [cos, sin] = rotary(positions);
  LayerInputs in(cos, sin, step.mask);
  if (!options_.sdpa_decode) in.masked_out = step.mask.logical_not();
  in.write_at = step.at;
  in.span = step.span;
  for (std::size_t l = 0; l < decoder_layers_.size(); ++l) {
    in.cache_keys = &cache.keys[l];
    in.cache_values = &cache.values[l];
    x = decoder_layers_[l]->forward(x, in);
  }
  cache.close_step(active);
  const torch::Tensor hidden = model_->norm(x).squeeze(1);
  return {logits_of(hidden), values_of(hidden)};
}

std::vector<std::pair<std::string, torch::Tensor>> CausalLmPolicyImpl::hf_tensors() const {
  torch::NoGradGuard no_grad;
  std::map<std::string, const HfLinearImpl*> linears;
  for (const auto& item : named_modules()) {
    if (const auto* linear = item.value()->as<HfLinearImpl>()) linears[item.key()] = linear;
  }
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : named_parameters()) {
    const std::string& name = item.key();
    if (name.find(".lora_") != std::string::npos) continue;
    if (name.rfind("model.", 0) != 0 && name.rfind("lm_head.", 0) != 0) continue;
    const std::string owner = name.substr(0, name.rfind('.'));
    const auto linear = linears.find(owner);
    const bool merge = linear != linears.end() && linear->second->has_lora() &&
                       name.compare(name.size() - 7, 7, ".weight") == 0;
    out.emplace_back(name, merge ? linear->second->merged_weight() : item.value().detach());
  }
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>> CausalLmPolicyImpl::policy_tensors() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : named_parameters()) {
    const std::string& name = item.key();
    if (name.rfind("model.", 0) == 0 || name.rfind("lm_head.", 0) == 0) continue;
    out.emplace_back(name, item.value().detach());
  }
  return out;
}

}  // namespace sparserl::agents
