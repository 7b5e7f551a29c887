// A decoder of the Llama / Qwen2 family as a policy (LibTorch; include only inside agents/ and its
// torch tests), with Hugging Face's parameter names so a model folder's safetensors load by name:
//   model.embed_tokens, model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj,
//   post_attention_layernorm, mlp.{gate,up,down}_proj}, model.norm, lm_head (absent when tied)
// and beside them what the policy adds: matrix_projection and feature_projection (the soft prompt)
// and value_head. Computation follows transformers' modeling_llama / modeling_qwen2: RMSNorm in
// fp32, rotary positions with rotate_half and inv_freq = 1 / theta^(2i/d), grouped-query attention
// (each key/value head serves num_attention_heads / num_key_value_heads query heads), softmax in
// fp32, SwiGLU. Attention is written out (LibTorch 1.13 has no scaled_dot_product_attention); a
// LibTorch 2 build uses it (attention_backend()).
//
// One sequence: [soft prompt][tokens], the soft prompt being the K sampled nonzeros' sinusoidal
// embedding [K, D] and the feature vector [F], each through a trained Linear into the hidden size
// (the transformer policy's PrefixBatch); in the text-only form (soft_prompt = false) there is no
// soft prompt and the prompt is text among the tokens. Positions are counted over valid slots only
// (position = number of valid slots before it), so left padding, right padding and unsampled
// soft-prompt entries shift nothing; a query sees valid keys at or before it, and itself.
//
// Precision: `dtype` is the compute dtype (activations, key-value cache). Trainable parameters are
// stored in fp32 - the master copy AdamW updates - and cast to the compute dtype as they are used
// (what torch.autocast does); frozen ones (the base weights under LoRA, a reference policy) are
// stored in the compute dtype. Logits and values are returned in fp32.
//
// LoRA (Hu et al.; PEFT's conventions): on the named projections, W x + (alpha / r) B A dropout(x)
// with A Kaiming-uniform and B zero, so a fresh adapter changes nothing; the base weights are
// frozen and only the adapters, the soft-prompt projections and the value head train. Export merges
// W + (alpha / r) B A. Gradient checkpointing keeps only each decoder layer's input in training and
// recomputes the layer in the backward pass (replaying the dropout draws).
#pragma once

#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sparserl/agents/hf_config.hpp"
#include "sparserl/agents/torch/policy.hpp"

namespace sparserl::agents {

struct CausalLmOptions {
  torch::ScalarType dtype = torch::kFloat;  // compute dtype: kFloat or kBFloat16
  torch::Device device = torch::kCPU;
  // LoRA: rank 0 trains every weight (full fine-tuning).
  int lora_rank = 0;
  double lora_alpha = 16.0;
  double lora_dropout = 0.0;
  std::vector<std::string> lora_targets = {"q_proj", "k_proj", "v_proj", "o_proj"};
  bool gradient_checkpointing = false;
  // The soft prompt: K nonzeros of width D and F features (the observation's shapes); false: the
  // text-only prompt form.
  bool soft_prompt = true;
  int nnz_samples = 0, embedding_dim = 0, feature_dim = 0;
  // Every parameter frozen, the decoder's stored in the compute dtype (a KL reference, an
  // evaluation; the soft-prompt projections and the value head stay fp32).
  bool frozen = false;
  // Decode steps (one new token a row, against the key-value cache) attend through
  // scaled_dot_product_attention over a repeat_kv copy of the cache, as before, instead of grouped
  // matrix products (no copy; a query's heads read their key-value head together). Off by default;
  // for comparisons (sparserl-agents-bench --sdpa-decode): on an H100 in bf16 the two decoded the
  // 42M model at the same rate up to 386 cache slots (docs/agents.md).
  bool sdpa_decode = false;
  [[nodiscard]] int prefix_length() const { return soft_prompt ? nnz_samples + 1 : 0; }
};

// "sdpa" when built against LibTorch 2 (scaled_dot_product_attention), else "manual".
const char* attention_backend();

// A bias-optional linear layer holding HF's "weight" / "bias", with an optional LoRA adapter
// registered as submodules lora_A and lora_B (PEFT's names: q_proj.lora_A.weight).
class HfLinearImpl : public torch::nn::Module {
 public:
  HfLinearImpl(std::int64_t in, std::int64_t out, bool with_bias,
               const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x);
  void add_lora(int rank, double alpha, double dropout);
  [[nodiscard]] bool has_lora() const { return static_cast<bool>(lora_A_); }
  // W + (alpha / r) B A in fp32 (W itself without an adapter).
  [[nodiscard]] torch::Tensor merged_weight() const;
  // Inference in `dtype` from now until reset_inference(): the weight and bias cast once instead
  // of at every call (fp32 master weights, bf16 compute), where there is no adapter. The caller
  // guarantees the weights do not change meanwhile (CausalLmPolicyImpl::begin_inference).
  void cast_for_inference(torch::ScalarType dtype);
  void reset_inference();

  torch::Tensor weight, bias;

 private:
  torch::Tensor inference_weight_, inference_bias_;
  torch::nn::Linear lora_A_{nullptr}, lora_B_{nullptr};
  double lora_scale_ = 0.0;
  double lora_dropout_ = 0.0;
};
TORCH_MODULE(HfLinear);

// HF's LlamaRMSNorm / Qwen2RMSNorm: x / sqrt(mean(x^2) + eps) in fp32, then weight * x in x's
// dtype.
class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(std::int64_t width, double eps, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x);
  // As HfLinearImpl's.
  void cast_for_inference(torch::ScalarType dtype);
  void reset_inference();
  torch::Tensor weight;

 private:
  torch::Tensor inference_weight_;
  double eps_;
};
TORCH_MODULE(RmsNorm);

// What every decoder layer of one pass shares: rotary tables, the attention mask and, when
// decoding, the cache layer to write.
struct LayerInputs {
  LayerInputs(torch::Tensor cos_table, torch::Tensor sin_table, torch::Tensor attention_mask)
      : cos(std::move(cos_table)), sin(std::move(sin_table)), mask(std::move(attention_mask)) {}
  torch::Tensor cos, sin;  // [B, T, head_dim], compute dtype
  torch::Tensor mask;      // [B, 1, T, Tk] bool: true = may attend
  // Decode steps by grouped products: mask's complement, made once a step for every layer
  // (undefined: attention through scaled_dot_product_attention over `mask`).
  torch::Tensor masked_out;
  torch::Tensor* cache_keys = nullptr;    // [B, Hkv, capacity, head_dim]
  torch::Tensor* cache_values = nullptr;  // same
  torch::Tensor write_at;  // [B] slots for one new position; undefined: slots 0..T-1 (prefill)
  std::int64_t span = 0;   // cache slots attended to
};

class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl(const HfModelConfig& config, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x, const LayerInputs& in);
  // The LoRA-capable projections by HF name ("q_proj", ..., "down_proj").
  [[nodiscard]] HfLinear projection(const std::string& name) const;

 private:
  torch::Tensor attention(const torch::Tensor& x, const LayerInputs& in);
  std::int64_t heads_, kv_heads_, head_dim_;
  RmsNorm input_layernorm_{nullptr}, post_attention_layernorm_{nullptr};
  HfLinear q_proj_{nullptr}, k_proj_{nullptr}, v_proj_{nullptr}, o_proj_{nullptr};
  HfLinear gate_proj_{nullptr}, up_proj_{nullptr}, down_proj_{nullptr};
};
TORCH_MODULE(DecoderLayer);

// The token embedding [vocab, hidden] ("weight"), allocated without initialisation (a 7B model's
// embedding is 2 GB: torch::nn::Embedding would fill it with draws first).
class HfEmbeddingImpl : public torch::nn::Module {
 public:
  HfEmbeddingImpl(std::int64_t vocab, std::int64_t width, const torch::TensorOptions& options);
  // The rows of `tokens` [B, T] as [B, T, width] in `dtype` (only those rows are cast).
  torch::Tensor forward(const torch::Tensor& tokens, torch::ScalarType dtype);
  torch::Tensor weight;
};
TORCH_MODULE(HfEmbedding);

// HF's LlamaModel / Qwen2Model: the registered name "model" holds embed_tokens, layers and norm.
class DecoderStackImpl : public torch::nn::Module {
 public:
  DecoderStackImpl(const HfModelConfig& config, const torch::TensorOptions& options);
  HfEmbedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  RmsNorm norm{nullptr};
};
TORCH_MODULE(DecoderStack);

class CausalLmPolicyImpl : public PolicyNetworkImpl {
 public:
  // Parameters are allocated uninitialised on options.device: load weights (load_hf_weights) or
  // call initialize_weights().
  CausalLmPolicyImpl(HfModelConfig config, CausalLmOptions options);

  // transformers' initialisation of the base (normal(0, std) weights, zero biases, unit norms),
  // then initialize_policy_parts(seed). For models trained from scratch, tests and benchmarks.
  void initialize_weights(std::uint64_t seed, double std = 0.02);
  // What a pretrained checkpoint does not hold: the soft-prompt projections (normal, scaled so a
  // projected row has the token embeddings' RMS), the value head (zero) and the LoRA adapters (A
  // Kaiming-uniform, B zero). Draws come from a CPU generator seeded with `seed`, so they do not
  // depend on the device.
  void initialize_policy_parts(std::uint64_t seed);

  // Every position of B sequences: tokens [B, T] int64, token_valid [B, T] bool (left or right
  // padding false). Logits [B, T, V] and values [B, T] (fp32) of the token slots.
  PolicyOutput forward(const PrefixBatch& prefix, const torch::Tensor& tokens,
                       const torch::Tensor& token_valid) override;
  // The same from token slot `first` on (the logits of the slots before are never computed).
  PolicyOutput forward_from(const PrefixBatch& prefix, const torch::Tensor& tokens,
                            const torch::Tensor& token_valid, std::int64_t first) override;
  torch::Tensor values(const PrefixBatch& prefix, const torch::Tensor& tokens,
                       const torch::Tensor& token_valid) override;
  // The plain language model (no soft prompt, no value head) as transformers' forward computes it:
  // attention_mask [B, T] (1 = token), position_ids [B, T] or undefined (then counted over valid
  // tokens). Logits [B, T, V] fp32.
  torch::Tensor lm_logits(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                          const torch::Tensor& position_ids = {});
  // forward() filling a fresh cache; logits [B, V] and values [B] at each row's last valid slot.
  PolicyOutput prefill(const PrefixBatch& prefix, const torch::Tensor& tokens,
                       const torch::Tensor& token_valid, KvCache& cache) override;
  // One token per row at slot cache.lengths; rows with active = false are computed but neither
  // advance nor become visible. Logits [B, V] and values [B].
  PolicyOutput decode_step(const torch::Tensor& tokens, const torch::Tensor& active,
                           KvCache& cache) override;
  [[nodiscard]] KvCache empty_cache(std::int64_t batch, std::int64_t capacity) const;
  [[nodiscard]] KvCache empty_cache(std::int64_t batch, std::int64_t capacity,
                                    const torch::Device& device) const override;

  // Tensors under their Hugging Face names, LoRA merged, in the model's dtype for export.
  [[nodiscard]] std::vector<std::pair<std::string, torch::Tensor>> hf_tensors() const;
  // The policy's own parameters (soft-prompt projections, value head) by name.
  [[nodiscard]] std::vector<std::pair<std::string, torch::Tensor>> policy_tensors() const;
  [[nodiscard]] const HfModelConfig& config() const { return config_; }
  [[nodiscard]] const CausalLmOptions& options() const { return options_; }
  [[nodiscard]] std::int64_t parameter_count() const override;
  [[nodiscard]] std::int64_t output_size() const override { return config_.vocab_size; }
  // agents::frozen_copy(*this), and a trainable copy (the same parameters trainable; under LoRA
  // the frozen base is shared, not copied).
  [[nodiscard]] std::shared_ptr<PolicyNetworkImpl> frozen_copy() const override;
  [[nodiscard]] std::shared_ptr<PolicyNetworkImpl> trainable_copy() const override;
  // Under LoRA what a checkpoint needs beside the model folder: every parameter but the frozen
  // base (the adapters, unmerged, the soft-prompt projections, the value head); in full
  // fine-tuning, every parameter.
  void save_state(torch::serialize::OutputArchive& archive) const override;
  void load_state(torch::serialize::InputArchive& archive) override;
  [[nodiscard]] std::int64_t trainable_parameter_count() const;
  [[nodiscard]] const std::vector<DecoderLayer>& decoder_layers() const { return decoder_layers_; }
  // Every projection and norm of the decoder cast to the compute dtype once (those without an
  // adapter whose weights are stored in another dtype), until end_inference().
  void begin_inference() override;
  void end_inference() override;

 private:
  // The input embeddings [B, P + T, d] and which slots are valid [B, P + T].
  torch::Tensor embed(const PrefixBatch& prefix, const torch::Tensor& tokens,
                      const torch::Tensor& token_valid, torch::Tensor& valid);
  // Rotary cos / sin [B, T, head_dim] in the compute dtype for positions [B, T].
  std::pair<torch::Tensor, torch::Tensor> rotary(const torch::Tensor& positions) const;
  // The final-norm hidden states of every slot; `cache` filled when given (prefill).
  torch::Tensor trunk(torch::Tensor x, const torch::Tensor& valid, const torch::Tensor& positions,
                      KvCache* cache);
  torch::Tensor logits_of(const torch::Tensor& hidden);
  torch::Tensor values_of(const torch::Tensor& hidden);
  torch::Tensor token_hidden(const PrefixBatch& prefix, const torch::Tensor& tokens,
                             const torch::Tensor& token_valid);

  HfModelConfig config_;
  CausalLmOptions options_;
  torch::Tensor inv_freq_;        // [head_dim / 2] fp32
  torch::Tensor inference_head_;  // a tied head's weight in the compute dtype (begin_inference)
  DecoderStack model_{nullptr};
  std::vector<DecoderLayer> decoder_layers_;
  HfLinear lm_head_{nullptr};  // absent when tied to model.embed_tokens
  torch::nn::Linear matrix_projection_{nullptr}, feature_projection_{nullptr};
  torch::nn::Linear value_head_{nullptr};
};
TORCH_MODULE(CausalLmPolicy);

// Rotary inverse frequencies [head_dim / 2] (fp32) of a config: 1 / theta^(2i/d), then the
// config's scaling (linear: / factor; llama3: Llama 3.1's wavelength-banded scaling).
torch::Tensor rotary_inverse_frequencies(const HfModelConfig& config);

// ---- Model folders (hf_checkpoint.cpp) ----------------------------------------------------------

// The decoder's options from an agent's knobs ([agent.model], the observation's shapes of
// [policy]) and the folder's config.json: dtype auto is bfloat16 unless config.json says float32.
CausalLmOptions causal_lm_options(const AgentConfig& config, const HfModelConfig& model,
                                  torch::Device device);

// The file beside a saved model folder's weights that holds the policy's own tensors (soft-prompt
// projections, value head), which transformers ignores.
inline constexpr const char* kPolicyTensorsFile = "sparserl_policy.safetensors";

// A policy from a Hugging Face folder: config.json, the weights (model.safetensors or sharded),
// converted to the storage dtypes; the policy's own tensors from kPolicyTensorsFile when the folder
// has it (a folder save_causal_lm wrote), else freshly drawn from `seed`. Throws std::runtime_error
// naming the folder, the file and the tensor (missing, unexpected, wrong shape).
CausalLmPolicy load_causal_lm(const std::filesystem::path& folder, const CausalLmOptions& options,
                              std::uint64_t seed);
// Copies the folder's weights into `policy` by Hugging Face name (what load_causal_lm does after
// building it).
void load_hf_weights(CausalLmPolicyImpl& policy, const std::filesystem::path& folder);
// config.json (the source file's keys kept, dtype set) and the weights under their HF names, LoRA
// merged, in config().torch_dtype, sharded above max_shard_bytes (0: one file): what transformers
// needs of a folder.
void write_hf_weights(const CausalLmPolicyImpl& policy, const std::filesystem::path& folder,
                      std::uint64_t max_shard_bytes);
// Writes a folder transformers loads: config.json (the source file's keys kept, dtype set) and the
// weights under their HF names, LoRA merged, in config().torch_dtype (bf16 / f16 / f32), sharded
// above max_shard_bytes (0: one file); plus kPolicyTensorsFile. With `files_from` (the folder the
// model came from), its tokenizer and generation files are copied beside them, so the folder is
// complete.
void save_causal_lm(const CausalLmPolicyImpl& policy, const std::filesystem::path& folder,
                    std::uint64_t max_shard_bytes = 0,
                    const std::filesystem::path& files_from = {});
// A frozen copy (every parameter without gradients, the decoder's in the compute dtype, eval
// mode): the KL reference of RL. Under LoRA it shares the frozen base tensors with `policy` and
// holds frozen copies of the adapters, unmerged - so it computes exactly what the policy computed
// (no bf16 rounding of a merged weight) and adds only the adapters' memory (its construction
// allocates a base it then drops: a transient peak of one base); in full fine-tuning it is a copy
// of every weight.
CausalLmPolicy frozen_copy(const CausalLmPolicyImpl& policy);

// Gradient checkpointing of one decoder layer (layer_checkpoint.cpp): the layer's output, keeping
// only x for the backward pass, which recomputes the layer with the dropout draws replayed.
torch::Tensor checkpointed_layer(DecoderLayerImpl& layer, const torch::Tensor& x,
                                 const LayerInputs& in);

}  // namespace sparserl::agents
