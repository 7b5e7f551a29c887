// The decode step's fixed span on the CPU (decode_paths.hpp): a step that attends a fixed number
// of slots (KvCache::fixed_span, what a CUDA graph's replays need) gives the logits of one that
// attends max(lengths) + 1, for the small transformer and both HF families, with rows dropping out
// on the way, and it advances the lengths in place. DecodeGraphs itself is refused on the CPU and
// generate() there takes no graphs. The small transformer's decode steps through
// scaled_dot_product_attention (LibTorch 2 only; off on 1.13) give the written-out steps' logits.
// The graphs are tested on CUDA in decode_graphs_torch_gpu_test.cpp.
#include <torch/torch.h>
#include <torch/version.h>

#include "agents_torch_test_support.hpp"
#include "catch.hpp"
#include "decode_paths.hpp"
#include "hf_test_models.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/torch/causal_lm.hpp"
#include "sparserl/agents/torch/learner.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::agents;
using namespace sparserl::agents::testing;

}  // namespace

TEST_CASE("a decode step over a fixed span gives the logits of the read-back span",
          "[agents][decode]") {
  SECTION("the small transformer") {
    PolicyAgent agent(tiny_config(), vocabulary());
    Learner& l = agent.learner();
    const DecodeComparison c =
        compare_decode_paths(*l.policy, small_prefix(l, 4), l.policy->output_size(), 40, false);
    CHECK(c.max_difference <= 1e-5 * std::max(1.0, c.scale));
    CHECK(c.scale > 0);
    CHECK(c.same_lengths);
    CHECK(c.lengths_in_place);
  }
  for (const HfFamily family : {HfFamily::qwen2, HfFamily::llama}) {
    DYNAMIC_SECTION("an HF decoder, family " << static_cast<int>(family)) {
      CausalLmPolicy policy =
          tiny_hf_decoder("decode_fixed_span", family, torch::kCPU, torch::kFloat);
      const DecodeComparison c =
          compare_decode_paths(*policy, hf_prefix(torch::kCPU), policy->output_size(), 30, false);
      CHECK(c.max_difference <= 1e-5 * std::max(1.0, c.scale));
      CHECK(c.same_lengths);
      CHECK(c.lengths_in_place);
    }
  }
}

TEST_CASE("CUDA graphs of the decode step are not taken on the CPU", "[agents][decode]") {
  CHECK_FALSE(DecodeGraphs::available(torch::Device(torch::kCPU)));
  PolicyAgent agent(tiny_config(env::MaskMode::syntax, 64), vocabulary());
  Learner& l = agent.learner();
  KvCache cache = l.policy->empty_cache(2, 8, torch::Device(torch::kCPU));
  CHECK_THROWS_AS(DecodeGraphs(*l.policy, cache, 8), std::logic_error);
  SamplingConfig sampling;
  REQUIRE(sampling.decode_graphs);  // the default
  const std::vector<std::shared_ptr<const env::MatrixObservation>> prompts = {
      synthetic_observation(1)};
  const auto out = agent.generate(prompts, 2, sampling);
  CHECK(out.size() == 2);
  CHECK(agent.last_generation().graphs == 0);
  CHECK(agent.last_generation().capture_seconds == 0);
}

TEST_CASE("the small transformer's decode steps through scaled_dot_product_attention",
          "[agents][decode]") {
  PolicyAgent agent(tiny_config(), vocabulary());
  Learner& l = agent.learner();
  auto* transformer = dynamic_cast<TransformerPolicyImpl*>(l.policy.get());
  REQUIRE(transformer != nullptr);
  CHECK_FALSE(transformer->sdpa_decode());  // the default
  // LibTorch 1.13 has no scaled_dot_product_attention: the switch stays off there.
  const bool available = transformer->set_sdpa_decode(true);
  CHECK(available == (TORCH_VERSION_MAJOR >= 2));
  if (!available) return;
  double scale = 0;
  const double difference = sdpa_decode_difference(*transformer, small_prefix(l, 4), 30, scale);
  CHECK(scale > 0);
  CHECK(difference <= 1e-5 * std::max(1.0, scale));
}
