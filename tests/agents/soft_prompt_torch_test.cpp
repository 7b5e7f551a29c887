// The HF policy reads the matrix through its soft prompt (trained projections of the sampled
// nonzeros' embedding and of the features, before the text): fine-tuned on three matrices, each
// with a program of its own, greedy decoding answers each matrix with its program - what the
// small policy's overfitting test (policy_torch_test.cpp) checks of its prefix. The three targets
// differ, so a policy that ignores the matrix (one program for every matrix, as the 42M model of
// the study's HF rows answered) cannot pass. The qwen2-tiny fixture on the CPU, seconds.
#include <torch/torch.h>

#include <filesystem>
#include <set>

#include "agents_torch_test_support.hpp"
#include "catch.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/token_space.hpp"
#include "sparserl/agents/training.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::agents;

}  // namespace

TEST_CASE("an HF policy fine-tuned on three matrices answers each with its own program",
          "[agents][hf]") {
  const std::filesystem::path model =
      std::filesystem::path(SPARSERL_TEST_SOURCE_DIR) / "tests/fixtures/hf/qwen2-tiny";
  if (!std::filesystem::exists(model / "config.json"))
    sparserl::testing::skip("no tests/fixtures/hf/qwen2-tiny");
  constexpr std::size_t kLength = 24;  // each target: its program's first tokens, then <eos>
  AgentConfig config = agents::testing::tiny_config(env::MaskMode::none, 2048);
  config.model.kind = ModelKind::hf;
  config.model.path = model.string();
  config.model.prompt = PromptForm::soft;
  config.optimizer.lr = 1e-2;
  config.optimizer.weight_decay = 0.0;
  PolicyAgent agent(config, agents::testing::vocabulary());
  const TokenSpace& space = agent.tokens();

  // Programs whose first tokens differ from every other's (the reference programs share their
  // opening lines, so the shortest three of those that differ within kLength tokens).
  std::vector<SftExample> examples;
  std::set<std::vector<env::TokenId>> targets;
  for (const auto& program : agents::testing::reference_programs()) {
    auto tokens = space.program_tokens(program.text, 4096);
    REQUIRE(tokens);
    tokens->resize(std::min(tokens->size() - 1, kLength));
    tokens->push_back(space.eos());
    if (!targets.insert(*tokens).second) continue;
    examples.push_back(
        {agents::testing::synthetic_observation(200 + examples.size()), std::move(*tokens)});
    if (examples.size() == 3) break;
  }
  REQUIRE(examples.size() == 3);

  const auto [steps, loss, accuracy, out] =
      agents::testing::overfit_then_answer(agent, examples, 400);
  INFO("steps " << steps << ", loss " << loss << ", accuracy " << accuracy);
  REQUIRE(accuracy == 1.0);
  REQUIRE(out.size() == examples.size());
  for (std::size_t i = 0; i < examples.size(); ++i) {
    INFO("matrix " << i);
    CHECK(out[i].tokens == examples[i].tokens);
  }
}
