// What the decode-path tests share (decode_graphs_torch_test.cpp on the CPU,
// decode_graphs_torch_gpu_test.cpp on CUDA): one network decodes the same random tokens into two
// caches made by the same prefill - the first as generation always did (each step attends
// max(lengths) + 1 slots, read back), the second with a fixed span (KvCache::fixed_span, the
// capacity) or through DecodeGraphs (CUDA graphs, one per span bucket) - with rows dropping out on
// the way (row r stops after steps - 5r steps), and reports how far their logits came apart. Also
// the inputs both tests decode from: the small transformer's prefix of made-up observations, and
// a tiny HF decoder (hf_test_models.hpp) with its soft prompt; and the small transformer's decode
// steps with their attention written out against the same through scaled_dot_product_attention.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "agents_torch_test_support.hpp"
#include "hf_test_models.hpp"
#include "sparserl/agents/torch/causal_lm.hpp"
#include "sparserl/agents/torch/decode_graphs.hpp"
#include "sparserl/agents/torch/learner.hpp"
#include "sparserl/agents/torch/policy.hpp"
#include "sparserl/agents/torch/policy_network.hpp"

namespace sparserl::agents::testing {

// The small transformer's prefix of `rows` made-up observations (each with a different count).
inline PrefixBatch small_prefix(const Learner& l, int rows) {
  std::vector<std::shared_ptr<const env::MatrixObservation>> kept;
  std::vector<const env::MatrixObservation*> matrices;
  for (int r = 0; r < rows; ++r) {
    kept.push_back(synthetic_observation(static_cast<std::uint64_t>(r), 3 + r));
    matrices.push_back(kept.back().get());
  }
  return l.prefix_batch(matrices);
}

// A tiny decoder of `family` (written to a fresh folder `name`, loaded with seed 1) on `device`
// in `dtype`, reading a soft prompt of K 4, D 8, F 5; and such a prompt of 3 rows.
inline CausalLmPolicy tiny_hf_decoder(const std::string& name, HfFamily family,
                                      torch::Device device, torch::ScalarType dtype) {
  const auto dir = sparserl::testing::scratch_dir(name);
  TinyModel m = tiny_model(family);
  write_model(m, dir, TensorDtype::f32);
  CausalLmOptions o;
  o.device = device;
  o.dtype = dtype;
  o.nnz_samples = 4, o.embedding_dim = 8, o.feature_dim = 5;
  return load_causal_lm(dir, o, 1);
}
inline PrefixBatch hf_prefix(torch::Device device) {
  torch::manual_seed(3);
  return PrefixBatch{torch::randn({3, 4, 8}), torch::ones({3, 4}, torch::kBool),
                     torch::rand({3, 5}), torch::ones({3}, torch::kBool)}
      .to(device);
}

struct DecodeComparison {
  double max_difference = 0;      // the largest |logit a - logit b| over every step
  double scale = 0;               // the largest |logit a|
  bool same_lengths = false;      // the caches' lengths agree at the end
  bool lengths_in_place = false;  // the second cache's lengths tensor was written in place
  int graphs = 0;                 // graphs captured (0 with a fixed span)
};

// Two caches from the same prefill of `prefix` and one start token (0) a row, every row valid; the
// caller holds a NoGradGuard.
inline void prefill_twice(PolicyNetworkImpl& network, const PrefixBatch& prefix, KvCache& a, KvCache& b) {
  network.eval();
  const std::int64_t batch = prefix.embedding.size(0);
  const auto on = torch::TensorOptions().device(prefix.embedding.device());
  const torch::Tensor start = torch::zeros({batch, 1}, on.dtype(torch::kLong));
  const torch::Tensor start_valid = torch::ones({batch, 1}, on.dtype(torch::kBool));
  network.prefill(prefix, start, start_valid, a);
  network.prefill(prefix, start, start_valid, b);
}

inline DecodeComparison compare_decode_paths(PolicyNetworkImpl& network, const PrefixBatch& prefix,
                                             std::int64_t vocab, int steps, bool graphs) {
  torch::NoGradGuard no_grad;
  const torch::Device device = prefix.embedding.device();
  const std::int64_t batch = prefix.embedding.size(0);
  KvCache a, b;
  prefill_twice(network, prefix, a, b);
  std::int64_t longest = b.lengths.max().item<std::int64_t>();
  b.reserve(longest + steps);
  std::unique_ptr<DecodeGraphs> captured;
  if (graphs) {
    captured = std::make_unique<DecodeGraphs>(network, b, longest + steps);
  } else {
    b.fixed_span = b.capacity();
  }
  const void* lengths_memory = b.lengths.data_ptr();
  DecodeComparison c;
  torch::manual_seed(7);
  for (int t = 0; t < steps; ++t) {
    const torch::Tensor tokens = torch::randint(vocab, {batch}, torch::kLong).to(device);
    torch::Tensor active = torch::zeros({batch}, torch::kBool);
    for (std::int64_t r = 0; r < batch; ++r) active[r] = t < steps - 5 * r;
    active = active.to(device);
    const PolicyOutput out_a = network.decode_step(tokens, active, a);
    const PolicyOutput out_b = captured ? captured->step(tokens, active, longest++)
                                        : network.decode_step(tokens, active, b);
    c.max_difference =
        std::max(c.max_difference, (out_a.logits - out_b.logits).abs().max().item<double>());
    c.scale = std::max(c.scale, out_a.logits.abs().max().item<double>());
  }
  c.same_lengths = torch::equal(a.lengths.to(torch::kCPU), b.lengths.to(torch::kCPU));
  c.lengths_in_place = b.lengths.data_ptr() == lengths_memory;
  c.graphs = captured ? captured->captured() : 0;
  return c;
}

// The largest |logit| difference over `steps` decode steps of the same random tokens (every row
// active) from one prefill, the small transformer's attention written out against it through
// scaled_dot_product_attention (TransformerPolicyImpl::set_sdpa_decode, which must be available);
// and the largest |logit|, in `scale`.
inline double sdpa_decode_difference(TransformerPolicyImpl& network, const PrefixBatch& prefix,
                                     int steps, double& scale) {
  torch::NoGradGuard no_grad;
  const torch::Device device = prefix.embedding.device();
  const std::int64_t batch = prefix.embedding.size(0);
  const torch::Tensor active = torch::ones({batch}, torch::TensorOptions().device(device).dtype(torch::kBool));
  KvCache a, b;
  prefill_twice(network, prefix, a, b);
  torch::manual_seed(11);
  double difference = 0;
  scale = 0;
  for (int t = 0; t < steps; ++t) {
    const torch::Tensor tokens =
        torch::randint(network.output_size(), {batch}, torch::kLong).to(device);
    network.set_sdpa_decode(false);
    const torch::Tensor written = network.decode_step(tokens, active, a).logits;
    network.set_sdpa_decode(true);
    const torch::Tensor fused = network.decode_step(tokens, active, b).logits;
    difference = std::max(difference, (written - fused).abs().max().item<double>());
    scale = std::max(scale, written.abs().max().item<double>());
  }
  return difference;
}

}  // namespace sparserl::agents::testing
