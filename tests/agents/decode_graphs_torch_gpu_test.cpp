// Decode steps replayed from CUDA graphs (DecodeGraphs; label gpu, every case skips itself where
// LibTorch sees no CUDA device or was built without it): over 250 steps - three span buckets,
// rows dropping out on the way - the replayed steps' logits equal the uncaptured steps' to
// rounding, for the small transformer and both HF families (fp32; bf16 for one), the lengths
// advance alike; and generate() with graphs draws what it draws without them, under the syntax
// mask, with the graphs it captured reported; and generate()'s overlapped steps (each decode step
// enqueued from the draws on the device before their read-back through page-locked memory and an
// event; SamplingConfig::overlap_steps) draw exactly what the read-back steps draw, with decode
// graphs and without, with the draws replayed from a graph (DrawGraph, SamplingConfig::draw_graphs)
// and without, valid programs under the mask; a DrawGraph's replays give what its draw gives
// uncaptured, step after step, its state carried, and an HF policy (qwen2-tiny, fp32 and bf16,
// the BPE grammar mask) draws the same with them and without; the small transformer's decode steps through
// scaled_dot_product_attention (set_sdpa_decode, sparserl-agents-bench --sdpa-decode) give the
// written-out steps' logits, replayed from graphs too, and generate() with them draws valid
// programs. The lead runs these on the GPU host:
//   ctest --test-dir BUILD -L gpu -R agents_torch_gpu --output-on-failure
#include <torch/torch.h>

#include <filesystem>
#include <string>

#include "agents_torch_test_support.hpp"
#include "catch.hpp"
#include "decode_paths.hpp"
#include "hf_test_models.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/torch/causal_lm.hpp"
#include "sparserl/agents/torch/decode_graphs.hpp"
#include "sparserl/agents/torch/learner.hpp"
#include "sparserl/agents/torch/policy.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::agents;
using namespace sparserl::agents::testing;

void require_graphs() {
  if (!torch::cuda::is_available()) sparserl::testing::skip("LibTorch sees no CUDA device");
  if (!DecodeGraphs::available(torch::Device(torch::kCUDA)))
    sparserl::testing::skip("this LibTorch was built without CUDA graphs");
}

constexpr int kSteps = 250;

}  // namespace

TEST_CASE("decode steps replayed from CUDA graphs give the uncaptured steps' logits",
          "[agents][decode][gpu]") {
  require_graphs();
  SECTION("the small transformer") {
    PolicyAgent agent(cuda_config(env::MaskMode::none, 400), vocabulary());
    Learner& l = agent.learner();
    const DecodeComparison c =
        compare_decode_paths(*l.policy, small_prefix(l, 4), l.policy->output_size(), kSteps, true);
    CHECK(c.max_difference <= 1e-4 * std::max(1.0, c.scale));
    CHECK(c.same_lengths);
    CHECK(c.lengths_in_place);
    CHECK(c.graphs >= 2);
  }
  for (const auto& [family, dtype] :
       {std::pair{HfFamily::qwen2, torch::kFloat}, std::pair{HfFamily::llama, torch::kFloat},
        std::pair{HfFamily::qwen2, torch::kBFloat16}}) {
    DYNAMIC_SECTION("an HF decoder, family " << static_cast<int>(family) << ", dtype "
                                             << c10::toString(dtype)) {
      CausalLmPolicy policy = tiny_hf_decoder("decode_graphs_hf", family, torch::kCUDA, dtype);
      policy->begin_inference();  // as generate() decodes
      const PrefixBatch prefix = hf_prefix(torch::kCUDA);
      const DecodeComparison c =
          compare_decode_paths(*policy, prefix, policy->output_size(), kSteps, true);
      policy->end_inference();
      // bf16: the two paths' matrix products may block differently over their spans.
      const double tolerance = dtype == torch::kFloat ? 1e-4 : 2e-2;
      CHECK(c.max_difference <= tolerance * std::max(1.0, c.scale));
      CHECK(c.same_lengths);
      CHECK(c.graphs >= 2);
    }
  }
}

TEST_CASE("generate() with decode graphs draws what it draws without them",
          "[agents][decode][gpu]") {
  require_graphs();
  const AgentConfig config = cuda_config(env::MaskMode::syntax, 300);
  PolicyAgent graphs(config, vocabulary()), issued(config, vocabulary());
  const auto prompts = synthetic_prompts(8);
  SamplingConfig with, without;
  without.decode_graphs = false;
  for (const bool greedy : {true, false}) {
    INFO("greedy " << greedy);
    with.greedy = without.greedy = greedy;
    const std::vector<Completion> a = graphs.generate(prompts, 4, with);
    CHECK(graphs.last_generation().graphs >= 1);
    CHECK(graphs.last_generation().capture_seconds > 0);
    const std::vector<Completion> b = issued.generate(prompts, 4, without);
    CHECK(issued.last_generation().graphs == 0);
    REQUIRE(a.size() == b.size());
    // The logits agree to rounding, so a draw may differ only where two tokens' cumulative
    // probabilities (or greedy logits) tie to ~1e-6: rare, and a row differs from there on.
    std::size_t same = 0;
    for (std::size_t r = 0; r < a.size(); ++r) {
      REQUIRE(allowed_by_syntax_mask(a[r].tokens, 300));
      CHECK(a[r].terminated);
      if (a[r].tokens == b[r].tokens) ++same;
    }
    CHECK(same >= a.size() * 9 / 10);
  }
}

TEST_CASE("overlapped generate() steps on CUDA draw what the read-back steps draw",
          "[agents][decode][gpu]") {
  require_graphs();
  const AgentConfig config = cuda_config(env::MaskMode::syntax, 300);
  const auto prompts = synthetic_prompts(8);
  for (const auto& [graphs, draw_graphs] :
       {std::pair{true, true}, std::pair{true, false}, std::pair{false, true},
        std::pair{false, false}}) {
    PolicyAgent overlapped(config, vocabulary()), read_back(config, vocabulary());
    SamplingConfig with, without;
    with.decode_graphs = without.decode_graphs = graphs;
    with.draw_graphs = draw_graphs;
    with.overlap_steps = true;
    without.overlap_steps = false;
    for (const bool greedy : {false, true}) {
      INFO("decode graphs " << graphs << ", draw graphs " << draw_graphs << ", greedy " << greedy);
      with.greedy = without.greedy = greedy;
      const std::vector<Completion> a = overlapped.generate(prompts, 4, with);
      CHECK(overlapped.last_generation().overlapped);
      CHECK((overlapped.last_generation().graphs >= 1) == graphs);
      CHECK(overlapped.last_generation().draw_graphs == draw_graphs);
      const std::vector<Completion> b = read_back.generate(prompts, 4, without);
      CHECK_FALSE(read_back.last_generation().overlapped);
      REQUIRE(a.size() == b.size());
      // The same kernels on the same inputs in the same order (the same graphs where taken): the
      // same draws, row for row.
      std::size_t same = 0, tokens = 0;
      for (std::size_t r = 0; r < a.size(); ++r) {
        REQUIRE(allowed_by_syntax_mask(a[r].tokens, 300));
        CHECK(a[r].terminated);
        tokens += a[r].tokens.size();
        if (a[r].tokens == b[r].tokens && a[r].log_probs == b[r].log_probs &&
            a[r].values == b[r].values && a[r].action_masks == b[r].action_masks) {
          ++same;
        }
      }
      CHECK(same == a.size());
      CHECK(tokens > a.size());
      CHECK(overlapped.learner().rng.counter == read_back.learner().rng.counter);
    }
  }
}

TEST_CASE("the small transformer's decode steps through scaled_dot_product_attention on CUDA",
          "[agents][decode][gpu]") {
  require_graphs();
  PolicyAgent agent(cuda_config(env::MaskMode::syntax, 300), vocabulary());
  Learner& l = agent.learner();
  auto* transformer = dynamic_cast<TransformerPolicyImpl*>(l.policy.get());
  REQUIRE(transformer != nullptr);
  if (!transformer->set_sdpa_decode(true))
    sparserl::testing::skip("this LibTorch has no scaled_dot_product_attention");
  double scale = 0;
  const double difference = sdpa_decode_difference(*transformer, small_prefix(l, 4), 200, scale);
  CHECK(scale > 0);
  CHECK(difference <= 1e-4 * std::max(1.0, scale));
  // Replayed from graphs (three span buckets, rows dropping out) as issued, both fused.
  const DecodeComparison c =
      compare_decode_paths(*l.policy, small_prefix(l, 4), l.policy->output_size(), kSteps, true);
  CHECK(c.max_difference <= 1e-4 * std::max(1.0, c.scale));
  CHECK(c.same_lengths);
  CHECK(c.graphs >= 2);
  REQUIRE(transformer->sdpa_decode());
  const auto prompts = synthetic_prompts(4);
  const std::vector<Completion> out = agent.generate(prompts, 4, SamplingConfig{});
  CHECK(agent.last_generation().graphs >= 1);
  for (const Completion& completion : out) {
    REQUIRE(allowed_by_syntax_mask(completion.tokens, 300));
    CHECK(completion.terminated);
  }
}

TEST_CASE("a step's draws replayed from a CUDA graph give the uncaptured draws, state carried",
          "[agents][decode][gpu]") {
  require_graphs();
  const auto on = torch::TensorOptions().device(torch::kCUDA);
  const std::int64_t rows = 16, vocab = 40;
  // Static inputs as StepTransfers' device buffers are: written in place before each run.
  torch::Tensor mask = torch::ones({rows, vocab}, on.dtype(torch::kBool));
  torch::Tensor uniforms = torch::zeros({rows}, on.dtype(torch::kDouble));
  const DrawGraph::Draw draw = [&](const torch::Tensor& logits, const torch::Tensor& values,
                                   const torch::Tensor& going) -> std::vector<torch::Tensor> {
    const torch::Tensor chosen = sample_from_logits(apply_action_mask(logits, mask), uniforms);
    const torch::Tensor still = going.logical_and(chosen.ne(3));
    return {torch::stack({chosen.to(torch::kFloat), values}), still};
  };
  DrawGraph replayed(draw, torch::ones({rows}, on.dtype(torch::kBool)), true);
  DrawGraph issued(draw, torch::ones({rows}, on.dtype(torch::kBool)), false);
  torch::manual_seed(7);
  for (int step = 0; step < 6; ++step) {
    INFO("step " << step);
    mask.copy_(torch::rand({rows, vocab}, on) < 0.6);
    mask.select(1, 3).fill_(true);  // <eos> stays allowed, so rows end on the way
    uniforms.copy_(torch::rand({rows}, on.dtype(torch::kDouble)));
    torch::Tensor logits = torch::randn({rows, vocab}, on);
    logits.select(1, 3).add_(1.0);
    const torch::Tensor values = torch::randn({rows}, on);
    const std::vector<torch::Tensor> a = replayed.run(logits, values);
    const std::vector<torch::Tensor> b = issued.run(logits, values);
    REQUIRE(a.size() == 2);
    REQUIRE(b.size() == 2);
    CHECK(replayed.replayed());
    CHECK_FALSE(issued.replayed());
    CHECK(torch::equal(a[0].cpu(), b[0].cpu()));
    CHECK(torch::equal(a[1].cpu(), b[1].cpu()));
    // The draws obey the mask that step.
    const torch::Tensor chosen = a[0][0].to(torch::kLong);
    CHECK(mask.gather(1, chosen.unsqueeze(1)).all().item<bool>());
  }
  // Rows ended on the way (drew token 3) and stay ended.
  CHECK_FALSE(replayed.run(torch::randn({rows, vocab}, on), torch::randn({rows}, on))
                  .back()
                  .all()
                  .item<bool>());
}

TEST_CASE("an HF policy's generate() on CUDA draws the same with the draws from a CUDA graph",
          "[agents][decode][hf][gpu]") {
  // The qwen2-tiny fixture under the BPE grammar mask, fp32 and bf16: generate()'s overlapped
  // steps with the draws replayed from a graph and issued one by one, two agents of one seed.
  require_graphs();
  const std::filesystem::path model =
      std::filesystem::path(SPARSERL_TEST_SOURCE_DIR) / "tests/fixtures/hf/qwen2-tiny";
  if (!std::filesystem::exists(model / "config.json"))
    sparserl::testing::skip("no tests/fixtures/hf/qwen2-tiny");
  for (const std::string dtype : {"float32", "bfloat16"}) {
    INFO("dtype " << dtype);
    AgentConfig config = cuda_config(env::MaskMode::syntax, 640);
    config.model.kind = ModelKind::hf;
    config.model.path = model.string();
    config.model.dtype = dtype;
    PolicyAgent replayed(config, vocabulary()), issued(config, vocabulary());
    SamplingConfig with, without;
    without.draw_graphs = false;
    const auto prompts = synthetic_prompts(3);
    const std::vector<Completion> a = replayed.generate(prompts, 2, with);
    const std::vector<Completion> b = issued.generate(prompts, 2, without);
    CHECK(replayed.last_generation().draw_graphs);
    CHECK_FALSE(issued.last_generation().draw_graphs);
    require_same_completions(a, b);
    for (const Completion& c : a) CHECK_FALSE(c.tokens.empty());
  }
}
