// policy.matrix_input, the ablations of the observation (issue 26): with `features` the policy's
// logits do not move when the sampled nonzeros change but do when the features change; with `none`
// neither moves them; with `full` (the method) both do. The logits are read through the SFT loss of
// one fixed program, a function of every logit of its tokens.
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "agents_torch_test_support.hpp"
#include "catch.hpp"
#include "sparserl/agents/policy_agent.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::agents;
using namespace sparserl::agents::testing;

// The loss of `program` after `matrix` under a fresh tiny policy reading `input` of it (the same
// seed, so the same weights for every call).
double program_loss(MatrixInput input, const std::shared_ptr<const env::MatrixObservation>& matrix,
                    const std::vector<env::TokenId>& program) {
  AgentConfig config = tiny_config(env::MaskMode::none, 400);
  config.policy.matrix_input = input;
  PolicyAgent agent(config, vocabulary());
  const std::vector<SftExample> example = {{matrix, program}};
  return agent.sft_loss(example);
}

}  // namespace

TEST_CASE("policy.matrix_input leaves out the nonzeros, or the whole matrix", "[agents][policy]") {
  const std::vector<env::TokenId> program =
      tokenizer()->encode(reference_programs().front().text).tokens;
  const auto base = synthetic_observation(1);
  // Other nonzeros, the same features.
  auto other_nonzeros = std::make_shared<env::MatrixObservation>(*synthetic_observation(2));
  other_nonzeros->features = base->features;
  // The same nonzeros, other features.
  auto other_features = std::make_shared<env::MatrixObservation>(*base);
  other_features->features = synthetic_observation(2)->features;
  REQUIRE(other_nonzeros->embedding != base->embedding);
  REQUIRE(other_features->features != base->features);

  const auto loss = [&](MatrixInput input, const std::shared_ptr<const env::MatrixObservation>& m) {
    return program_loss(input, m, program);
  };
  SECTION("full: the nonzeros and the features both count") {
    CHECK(loss(MatrixInput::full, other_nonzeros) != loss(MatrixInput::full, base));
    CHECK(loss(MatrixInput::full, other_features) != loss(MatrixInput::full, base));
  }
  SECTION("features: the nonzeros do not count, the features do") {
    CHECK(loss(MatrixInput::features, other_nonzeros) == loss(MatrixInput::features, base));
    CHECK(loss(MatrixInput::features, other_features) != loss(MatrixInput::features, base));
  }
  SECTION("none: the matrix does not count at all") {
    const double none = loss(MatrixInput::none, base);
    CHECK(loss(MatrixInput::none, other_nonzeros) == none);
    CHECK(loss(MatrixInput::none, other_features) == none);
    CHECK(loss(MatrixInput::full, base) != none);
    CHECK(loss(MatrixInput::features, base) != none);
  }
  SECTION("the knob by its key, in a checkpoint's words") {
    AgentConfig config = tiny_config();
    apply_key_value(config, "policy.matrix_input", "features");
    CHECK(config.policy.matrix_input == MatrixInput::features);
    CHECK(to_key_values(config).at("policy.matrix_input") == "features");
    CHECK_THROWS(apply_key_value(config, "policy.matrix_input", "nonzeros"));
  }
}
