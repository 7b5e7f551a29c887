// The one network interface of the learned agents (LibTorch; include only inside agents/ and its
// torch tests): what the Learner, the sampler and every algorithm ask of a policy network,
// whichever it is - the transformer trained from scratch over the closed vocabulary (policy.hpp,
// [agent.model] kind = "small") or a Llama / Qwen2 decoder from a Hugging Face folder over its BPE
// tokens (causal_lm.hpp, kind = "hf"):
//
//   forward / forward_from   logits and values of every token slot (scoring given tokens)
//   values                   the values alone (a separate critic's pass)
//   prefill / decode_step    generation with a key-value cache, one token per row and step
//   frozen_copy              the frozen KL reference; trainable_copy: PPO's separate critic
//   save_state / load_state  what an agent checkpoint keeps of the network (the transformer: every
//                            parameter; a LoRA decoder: its adapters and heads, the base being the
//                            model folder's)
//   optimizer parameters     the parameters with requires_grad (LoRA: adapters, the soft-prompt
//                            projections and the value head; a frozen base has none)
//
// A sequence is [prefix][tokens]: the prefix holds the matrix observation (the K sampled nonzeros'
// embedding and the features; masked where there is none), the tokens start with what precedes the
// first code token (<bos>, or a text prompt) - PolicyNetwork holds either network behind
// LibTorch's ModuleHolder, so `policy->forward(...)` and `reference.is_empty()` read as before.
//
// Also here, shared by both networks: PrefixBatch, the key-value cache (KvCache) and the masks
// and gathers of their attention.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace sparserl::agents {

// The prefix inputs of a batch of B sequences.
struct PrefixBatch {
  torch::Tensor embedding;      // [B, K, D] float
  torch::Tensor valid;          // [B, K] bool: sampled entries
  torch::Tensor features;       // [B, F] float
  torch::Tensor feature_valid;  // [B] bool: false when there is no matrix
  [[nodiscard]] PrefixBatch to(const torch::Device& device) const;
  [[nodiscard]] PrefixBatch index_select(const torch::Tensor& rows) const;
};

struct KvCache {
  std::vector<torch::Tensor> keys, values;  // per layer [B, H, capacity, d_head]
  torch::Tensor key_valid;                  // [B, capacity] bool
  torch::Tensor lengths;                    // [B] int64: filled slots (the next write position)
  // 0: a decode step attends the first max(lengths) + 1 slots, read back from the device. > 0:
  // it attends the first fixed_span slots and reads nothing back; the caller keeps every row's
  // length below fixed_span and the capacity at least that (generate() counts each row's steps
  // on the host), and the step's shapes then stay the same from step to step, as a CUDA graph's
  // replays need (decode_graphs.hpp). Attending more slots than filled changes nothing: slots
  // past a row's own are masked out.
  std::int64_t fixed_span = 0;
  [[nodiscard]] bool empty() const { return keys.empty(); }
  [[nodiscard]] std::int64_t capacity() const {
    return key_valid.defined() ? key_valid.size(1) : 0;
  }
  [[nodiscard]] std::int64_t batch() const { return key_valid.defined() ? key_valid.size(0) : 0; }
  // Makes room for at least `needed` slots (doubling), keeping the contents.
  void reserve(std::int64_t needed);
  // Copies rows of `other` into rows `rows` of this cache (capacities are reconciled).
  void assign_rows(const torch::Tensor& rows, KvCache& other);

  // `layers` layers of `batch` empty rows (nothing valid, lengths 0): keys and values [batch,
  // heads, capacity, head_dim] of `options`.
  static KvCache zeros(std::int64_t layers, std::int64_t batch, std::int64_t heads,
                       std::int64_t capacity, std::int64_t head_dim,
                       const torch::TensorOptions& options);
  // The slots of one decode step. open_step makes room for slot `longest` (the largest of
  // `lengths`, read and checked by the caller), marks each row's slot `lengths` valid where
  // `active`, and returns those slots [B] and the attention mask [B, 1, 1, longest + 1]: valid
  // slots up to each row's own, which always sees itself. close_step advances the active rows,
  // in place (a captured decode step must write where the next replay reads).
  struct Step {
    torch::Tensor at, mask;
    std::int64_t span = 0;
  };
  Step open_step(const torch::Tensor& active, std::int64_t longest);
  void close_step(const torch::Tensor& active) { lengths.add_(active.to(torch::kLong)); }
  // The slots a decode step attends: fixed_span, else the longest row's next slot (a read-back).
  [[nodiscard]] std::int64_t step_longest() const;
};

// [B, L] valid keys -> [B, 1, L, L]: query i sees valid keys j <= i, and always itself (so no
// softmax row is empty).
torch::Tensor causal_prefix_mask(const torch::Tensor& key_valid);
// hidden [B, L, d] at one slot per row ([B] int64) -> [B, d].
torch::Tensor at_slots(const torch::Tensor& hidden, const torch::Tensor& slots);

struct PolicyOutput {
  torch::Tensor logits;  // [B, T, V] (forward) or [B, V] (prefill, decode_step)
  torch::Tensor values;  // [B, T] or [B]
};

class PolicyNetworkImpl : public torch::nn::Module {
 public:
  // Every position of B sequences: tokens [B, T] int64, token_valid [B, T] bool. Logits [B, T, V]
  // (fp32) and values [B, T] of the token slots.
  virtual PolicyOutput forward(const PrefixBatch& prefix, const torch::Tensor& tokens,
                               const torch::Tensor& token_valid) = 0;
  // forward()'s outputs of the token slots from `first` on: logits [B, T - first, V] and values
  // [B, T - first] (a text prompt's slots before its last predict nothing a learner scores, and
  // their logits are the largest tensor of a pass).
  virtual PolicyOutput forward_from(const PrefixBatch& prefix, const torch::Tensor& tokens,
                                    const torch::Tensor& token_valid, std::int64_t first) = 0;
  // forward()'s values [B, T] alone: the trunk and the value head, without the logits.
  virtual torch::Tensor values(const PrefixBatch& prefix, const torch::Tensor& tokens,
                               const torch::Tensor& token_valid) = 0;
  // forward() filling a fresh cache; logits [B, V] and values [B] at each row's last valid slot.
  virtual PolicyOutput prefill(const PrefixBatch& prefix, const torch::Tensor& tokens,
                               const torch::Tensor& token_valid, KvCache& cache) = 0;
  // One new token per row ([B] int64) at slot cache.lengths; rows with active = false are computed
  // but neither advance nor become visible. Logits [B, V] and values [B].
  virtual PolicyOutput decode_step(const torch::Tensor& tokens, const torch::Tensor& active,
                                   KvCache& cache) = 0;
  // A cache of `batch` empty rows (nothing valid, lengths 0) with room for `capacity` slots.
  [[nodiscard]] virtual KvCache empty_cache(std::int64_t batch, std::int64_t capacity,
                                            const torch::Device& device) const = 0;
  [[nodiscard]] virtual std::int64_t parameter_count() const = 0;
  // V: the width of the logits (an HF model's embedding rows, which may exceed its tokenizer).
  [[nodiscard]] virtual std::int64_t output_size() const = 0;

  // The frozen KL reference: the network as it is now, every parameter without gradients, in eval
  // mode, on the same device.
  [[nodiscard]] virtual std::shared_ptr<PolicyNetworkImpl> frozen_copy() const = 0;
  // PPO's separate critic: a copy of the network as it is now whose trainable parameters are
  // trainable (the same ones as this network's), in training mode.
  [[nodiscard]] virtual std::shared_ptr<PolicyNetworkImpl> trainable_copy() const = 0;

  // What an agent checkpoint holds of the network, and its restoration into a network built the
  // same way (same config, same model folder). The default is every parameter and buffer
  // (torch::nn::Module::save / load).
  virtual void save_state(torch::serialize::OutputArchive& archive) const { save(archive); }
  virtual void load_state(torch::serialize::InputArchive& archive) { load(archive); }

  // Between begin_inference() and end_inference() the weights do not change (generate() holds
  // them so), and a network may keep copies made for that time - an HF decoder its fp32 master
  // weights cast to the compute dtype once, instead of at every projection of every step. The
  // default keeps nothing.
  virtual void begin_inference() {}
  virtual void end_inference() {}
};

class PolicyNetwork : public torch::nn::ModuleHolder<PolicyNetworkImpl> {
 public:
  using torch::nn::ModuleHolder<PolicyNetworkImpl>::ModuleHolder;
  using Impl = PolicyNetworkImpl;
  // Either network, held through the interface.
  template <typename Network>
  static PolicyNetwork of(std::shared_ptr<Network> network) {
    return PolicyNetwork(std::shared_ptr<PolicyNetworkImpl>(std::move(network)));
  }
};

}  // namespace sparserl::agents
