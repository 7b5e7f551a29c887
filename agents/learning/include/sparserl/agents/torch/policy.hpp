// The policy network (LibTorch; include only inside agents/ and its torch tests): a decoder-only,
// pre-norm transformer in the style of GPT-2 / nanoGPT, written out so it runs on LibTorch 1.13 and
// 2.x alike (attention by hand; scaled_dot_product_attention only for decode steps where asked,
// on LibTorch 2).
//
// Slots of one sequence (PolicyConfig::prefix_length() = K + 1):
//   0 .. K-1     the matrix: Linear(D -> d_model) of the observation's [PE(r) | PE(c)] rows
//   K            the features: Linear(F -> d_model) of the (already normalised) feature vector
//   K+1          <bos>
//   K+2 ...      code tokens
// plus a learned position embedding per slot. Padding slots (sampled nonzeros past `count`, the
// whole prefix when there is no matrix, right-padding of shorter sequences) are masked as keys;
// every query may attend to itself so no softmax row is empty. The hidden state at slot K+1+t
// predicts code token t (logits) and estimates the value of the state before it (value head).
//
// The key-value cache holds, per layer, keys and values [B, H, capacity, d_head], which key slots
// are valid, and how many slots each row has filled; rows advance independently (decode_step with
// an `active` mask), and the capacity grows by doubling.
#pragma once

#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/types.h>

#include <vector>

#include "sparserl/agents/config.hpp"
#include "sparserl/agents/torch/policy_network.hpp"

namespace sparserl::agents {

class TransformerBlockImpl : public torch::nn::Module {
 public:
  TransformerBlockImpl(const PolicyConfig& config, int layer);
  // x: [B, T, d]; masked_out: [B, 1, T, Tk] bool (true = may not attend; the caller complements
  // its mask once for every layer). Without `keys_out`, keys / values come from x alone (Tk = T).
  // With a cache layer, the new keys are written at `write_at` ([B] slots for one new position)
  // or at slots 0..T-1 (prefill), and attention runs over the cache's first Tk slots. `bias`
  // (LibTorch 2; float [B, 1, T, Tk], 0 or -inf as masked_out says): attention through
  // scaled_dot_product_attention with it instead of the written-out products.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& masked_out,
                        torch::Tensor* cache_keys, torch::Tensor* cache_values,
                        const torch::Tensor& write_at, std::int64_t span,
                        const torch::Tensor& bias = {});

 private:
  int heads_;
  int d_head_;
  torch::nn::LayerNorm ln_attention_{nullptr}, ln_mlp_{nullptr};
  torch::nn::Linear qkv_{nullptr}, projection_{nullptr}, fc_in_{nullptr}, fc_out_{nullptr};
  torch::nn::Dropout attention_dropout_{nullptr}, residual_dropout_{nullptr};
};
TORCH_MODULE(TransformerBlock);

class TransformerPolicyImpl : public PolicyNetworkImpl {
 public:
  explicit TransformerPolicyImpl(const PolicyConfig& config);

  // Every position of B sequences: tokens [B, T] int64 starting with <bos>, token_valid [B, T] bool
  // (right padding false). Logits [B, T, V] and values [B, T] of the token slots.
  PolicyOutput forward(const PrefixBatch& prefix, const torch::Tensor& tokens,
                       const torch::Tensor& token_valid) override;
  PolicyOutput forward_from(const PrefixBatch& prefix, const torch::Tensor& tokens,
                            const torch::Tensor& token_valid, std::int64_t first) override;
  // forward()'s values [B, T] alone: the trunk and the value head, without the [B, T, V] logits
  // (what a critic is asked for).
  torch::Tensor values(const PrefixBatch& prefix, const torch::Tensor& tokens,
                       const torch::Tensor& token_valid) override;
  // The same, filling a fresh cache; returns the logits [B, V] and values [B] at each row's last
  // valid token (what predicts its next token).
  PolicyOutput prefill(const PrefixBatch& prefix, const torch::Tensor& tokens,
                       const torch::Tensor& token_valid, KvCache& cache) override;
  // One new token per row ([B] int64) at slot cache.lengths; rows with active = false are computed
  // but neither advance nor become visible. Returns logits [B, V] and values [B].
  PolicyOutput decode_step(const torch::Tensor& tokens, const torch::Tensor& active,
                           KvCache& cache) override;

  // A cache of `batch` empty rows (nothing valid, lengths 0) with room for `capacity` slots.
  [[nodiscard]] KvCache empty_cache(std::int64_t batch, std::int64_t capacity,
                                    const torch::Device& device) const override;

  // Decode steps attend through scaled_dot_product_attention (one fused kernel a layer where
  // LibTorch picks one) instead of the written-out products; the logits agree to rounding. Off by
  // default; for comparisons (sparserl-agents-bench --sdpa-decode). LibTorch 1.13 has no such
  // function: there it stays off. Returns whether it is on.
  bool set_sdpa_decode(bool on);
  [[nodiscard]] bool sdpa_decode() const { return sdpa_decode_; }

  [[nodiscard]] const PolicyConfig& config() const { return config_; }
  [[nodiscard]] std::int64_t parameter_count() const override;
  [[nodiscard]] std::int64_t output_size() const override { return config_.vocab_size; }
  // clone_policy(): a copy with every parameter frozen, or (the critic) every one trainable.
  [[nodiscard]] std::shared_ptr<PolicyNetworkImpl> frozen_copy() const override;
  [[nodiscard]] std::shared_ptr<PolicyNetworkImpl> trainable_copy() const override;

 private:
  torch::Tensor embed(const PrefixBatch& prefix, const torch::Tensor& tokens,
                      torch::Tensor& prefix_valid);
  PolicyOutput head(const torch::Tensor& hidden);
  // The final-norm hidden states [B, T, d] of the token slots (forward's trunk).
  torch::Tensor token_hidden(const PrefixBatch& prefix, const torch::Tensor& tokens,
                             const torch::Tensor& token_valid);

  PolicyConfig config_;
  torch::nn::Embedding token_embedding_{nullptr}, position_embedding_{nullptr};
  torch::nn::Linear matrix_projection_{nullptr}, feature_projection_{nullptr};
  torch::nn::ModuleList blocks_{nullptr};
  torch::nn::LayerNorm final_norm_{nullptr};
  torch::nn::Linear lm_head_{nullptr};  // absent when tied to the token embedding
  torch::nn::Linear value_head_{nullptr};
  torch::nn::Dropout embedding_dropout_{nullptr};
  bool sdpa_decode_ = false;
};
TORCH_MODULE(TransformerPolicy);

// A deep copy of a policy (same config, same weights, same device), frozen and in eval mode: the
// frozen KL reference.
TransformerPolicy clone_policy(const TransformerPolicyImpl& policy);

// Forbidden tokens to -inf. mask: bool (or uint8) broadcastable to logits; undefined: no mask.
torch::Tensor apply_action_mask(const torch::Tensor& logits, const torch::Tensor& mask);
// Temperature, then top-k, then top-p (nucleus) on already-masked logits [B, V]; removed tokens get
// -inf, at least one token always survives.
torch::Tensor filter_logits(const torch::Tensor& logits, const SamplingConfig& sampling);
// Inverse-CDF sampling: one token per row of processed logits [B, V], from uniforms [B] in (0, 1)
// (float64, drawn by the caller's seeded generator, so draws are reproducible on any device). A
// token of probability 0 (masked, filtered) is never chosen.
torch::Tensor sample_from_logits(const torch::Tensor& logits, const torch::Tensor& uniforms);

}  // namespace sparserl::agents
