// generate()'s overlapped steps on the CPU (SamplingConfig::overlap_steps): each decode step is
// enqueued from the draws on the device before the host reads them back, and the next masks are
// filled meanwhile; the same operations in the same order as the read-back steps, so two agents of
// the same seed draw the same completions either way - greedy and sampled, under the syntax mask
// and without one (rows cut at max_tokens), with a data-parallel row window - and leave their
// generators at the same counter. A timing lane turns the overlap off. A policy gone NaN stops
// either way, greedy or sampled, with the row and its tokens in the message. On CUDA (page-locked
// buffers, an event, the decode graphs) the same comparison is in decode_graphs_torch_gpu_test.cpp.
#include <torch/torch.h>

#include "agents_torch_test_support.hpp"
#include "catch.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/torch/decode_graphs.hpp"
#include "sparserl/agents/torch/learner.hpp"
#include "sparserl/reward/timing_lane.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::agents;
using namespace sparserl::agents::testing;

}  // namespace

TEST_CASE("overlapped generation steps draw what the read-back steps draw", "[agents][generate]") {
  for (const env::MaskMode mode : {env::MaskMode::syntax, env::MaskMode::none}) {
    // Without a mask rows rarely draw <eos>: 12 tokens cut most of them at the budget.
    const int max_tokens = mode == env::MaskMode::syntax ? 200 : 12;
    const AgentConfig config = tiny_config(mode, max_tokens);
    PolicyAgent overlapped(config, vocabulary()), read_back(config, vocabulary());
    SamplingConfig with, without;
    REQUIRE(with.overlap_steps);  // the default
    without.overlap_steps = false;
    for (const bool greedy : {false, true}) {
      for (const double temperature : {1.0, 0.7}) {
        if (greedy && temperature != 1.0) continue;
        INFO("mask " << static_cast<int>(mode) << ", greedy " << greedy << ", temperature "
                     << temperature);
        with.greedy = without.greedy = greedy;
        with.temperature = without.temperature = temperature;
        with.top_k = without.top_k = temperature == 1.0 ? 0 : 20;
        const std::vector<Completion> a = overlapped.generate(synthetic_prompts(3), 3, with);
        CHECK(overlapped.last_generation().overlapped);
        const std::vector<Completion> b = read_back.generate(synthetic_prompts(3), 3, without);
        CHECK_FALSE(read_back.last_generation().overlapped);
        require_same_completions(a, b);
        CHECK(overlapped.last_generation().steps == read_back.last_generation().steps);
        CHECK(overlapped.learner().rng.counter == read_back.learner().rng.counter);
        std::size_t tokens = 0;
        for (const Completion& c : a) {
          tokens += c.tokens.size();
          if (mode != env::MaskMode::syntax) continue;
          REQUIRE(allowed_by_syntax_mask(c.tokens, max_tokens));
          CHECK(c.terminated);
        }
        CHECK(tokens > a.size());
      }
    }
    CHECK(overlapped.counters().generated_tokens == read_back.counters().generated_tokens);
  }
}

TEST_CASE("overlapped steps keep the data-parallel row window's draws", "[agents][generate]") {
  const AgentConfig config = tiny_config(env::MaskMode::syntax, 150);
  PolicyAgent overlapped(config, vocabulary()), read_back(config, vocabulary());
  SamplingConfig with, without;
  with.overlap_steps = true;
  without.overlap_steps = false;
  // Rows 4..9 of 16, as the second of three ranks might hold them.
  const RowWindow window{4, 16};
  const std::vector<Completion> a = overlapped.generate(synthetic_prompts(2), 3, with, window);
  const std::vector<Completion> b = read_back.generate(synthetic_prompts(2), 3, without, window);
  require_same_completions(a, b);
  CHECK(overlapped.learner().rng.counter == read_back.learner().rng.counter);
}

TEST_CASE("the step transfers on the CPU are the tensors the step reads", "[agents][generate]") {
  StepTransfers link(torch::Device(torch::kCPU), 2, 3);
  CHECK_FALSE(link.asynchronous());
  REQUIRE(link.mask_bytes().size() == 6);
  REQUIRE(link.uniforms().size() == 2);
  link.mask_bytes()[4] = 1;
  link.uniforms()[1] = 0.25;
  const torch::Tensor masks = link.upload_masks();
  CHECK(masks.scalar_type() == torch::kBool);
  CHECK(masks.sizes() == torch::IntArrayRef({2, 3}));
  CHECK(masks.sum().item<std::int64_t>() == 1);
  CHECK(masks[1][1].item<bool>());
  CHECK(link.upload_uniforms()[1].item<double>() == 0.25);
  link.read_back(torch::arange(6, torch::kFloat).view({3, 2}));
  const float* drawn = link.draws();
  CHECK(drawn[0] == 0.0f);
  CHECK(drawn[5] == 5.0f);
}

TEST_CASE("a generation with a timing lane reads each step back first", "[agents][generate]") {
  const auto dir = sparserl::testing::scratch_dir("overlapped_steps_lane");
  PolicyAgent agent(tiny_config(env::MaskMode::syntax, 100), vocabulary());
  agent.set_timing_lane(std::make_shared<reward::TimingLaneLock>(dir / "lane.lock"));
  SamplingConfig overlap;
  overlap.overlap_steps = true;  // asked for, and refused while a timing lane is held
  const std::vector<Completion> out = agent.generate(synthetic_prompts(1), 2, overlap);
  CHECK(out.size() == 2);
  CHECK_FALSE(agent.last_generation().overlapped);
}

TEST_CASE("a DrawGraph without a graph calls its draw at every run and carries the state",
          "[agents][generate]") {
  int calls = 0;
  const DrawGraph::Draw draw = [&calls](const torch::Tensor& logits, const torch::Tensor& values,
                                        const torch::Tensor& going) -> std::vector<torch::Tensor> {
    ++calls;
    const torch::Tensor chosen = logits.argmax(-1);
    return {chosen + values.to(torch::kLong), going.logical_and(chosen.ne(0))};
  };
  // Asked for a graph on the CPU: none is possible, the draws are issued.
  DrawGraph draws(draw, torch::ones({3}, torch::kBool), true);
  const torch::Tensor values = torch::tensor({10, 20, 30}, torch::kLong);
  auto out = draws.run(torch::tensor({{0.f, 1.f}, {1.f, 0.f}, {0.f, 1.f}}), values);
  REQUIRE(out.size() == 2);
  CHECK_FALSE(draws.replayed());
  CHECK(torch::equal(out[0], torch::tensor({11, 20, 31}, torch::kLong)));
  CHECK(torch::equal(out[1], torch::tensor({true, false, true})));
  // Row 1 ended at the first step and stays ended; row 2 ends now.
  out = draws.run(torch::tensor({{0.f, 1.f}, {0.f, 1.f}, {1.f, 0.f}}), values);
  CHECK(torch::equal(out[1], torch::tensor({true, false, false})));
  CHECK(calls == 2);
  // A draw that returns no state is refused by name.
  DrawGraph broken([](const torch::Tensor&, const torch::Tensor&,
                      const torch::Tensor&) { return std::vector<torch::Tensor>{}; },
                   torch::ones({1}, torch::kBool), false);
  CHECK_THROWS_WITH(broken.run(torch::zeros({1, 2}), torch::zeros({1})),
                    sparserl::testing::has_substring("DrawGraph: the draw returned no state"));
}

TEST_CASE("draw_graphs changes nothing on the CPU: the same completions either way",
          "[agents][generate]") {
  const AgentConfig config = tiny_config(env::MaskMode::syntax, 120);
  PolicyAgent a(config, vocabulary()), b(config, vocabulary());
  SamplingConfig with, without;
  REQUIRE(with.draw_graphs);  // the default
  without.draw_graphs = false;
  const std::vector<Completion> x = a.generate(synthetic_prompts(2), 3, with);
  const std::vector<Completion> y = b.generate(synthetic_prompts(2), 3, without);
  CHECK_FALSE(a.last_generation().draw_graphs);  // no graph on the CPU
  require_same_completions(x, y);
}

TEST_CASE("a policy whose logits are not finite stops generate(), naming the row and where",
          "[agents][generate]") {
  const AgentConfig config = tiny_config(env::MaskMode::syntax, 200);
  for (const bool overlap : {true, false}) {
    INFO("overlapped steps: " << overlap);
    PolicyAgent agent(config, vocabulary());
    {
      torch::NoGradGuard no_grad;
      for (torch::Tensor& p : agent.learner().policy->parameters()) {
        p.fill_(std::numeric_limits<float>::quiet_NaN());
      }
    }
    SamplingConfig sampling;
    sampling.overlap_steps = overlap;
    for (const bool greedy : {false, true}) {
      sampling.greedy = greedy;
      // Sampled: no finite probability to draw by, the draw lands outside the mask; greedy:
      // argmax takes the first NaN, an allowed token, with a log-probability that is NaN.
      CHECK_THROWS_WITH(
          agent.generate(synthetic_prompts(2), 2, sampling),
          sparserl::testing::has_substring(greedy ? "with a log-probability that is not finite"
                                                  : "which its mask forbids") &&
              sparserl::testing::has_substring(
                  "at row 0 after 0 tokens (last: none): its logits there are not "
                  "finite"));
    }
  }
}
