// Parity with transformers (label cpu): the fixtures tests/fixtures/hf/make_fixtures.py makes on
// the GPU host - tiny random Qwen2 and Llama models saved by save_pretrained and the fp32 logits
// transformers computed for several prompts and a left-padded batch - loaded through
// load_causal_lm and compared within 1e-4, the full forward pass and the key-value cache alike;
// then a model saved by save_causal_lm is loaded back by transformers when this machine has it
// (skipped otherwise). Built only when the fixtures exist (tests/agents/CMakeLists.txt).
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "hf_fixtures.hpp"
#include "sparserl/agents/safetensors.hpp"
#include "sparserl/agents/torch/causal_lm.hpp"
#include "test_support.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::agents;
using nlohmann::json;
namespace fs = std::filesystem;

constexpr double kTolerance = 1e-4;

fs::path fixtures() { return sparserl::testing::hf_fixtures_dir(); }

json read_json(const fs::path& file) { return sparserl::testing::read_json_file(file); }

std::vector<std::string> model_names() { return sparserl::testing::hf_fixture_models(); }

// A model's expected outputs: the prompts' ids and transformers' logits by tensor name.
struct Expected {
  json spec;
  std::map<std::string, torch::Tensor> logits;
};

Expected expected_of(const std::string& name) {
  Expected e;
  e.spec = read_json(fixtures() / "expected" / (name + ".json"));
  const SafetensorsFile file(fixtures() / "expected" / e.spec["logits"].get<std::string>());
  for (const TensorEntry& t : file.tensors()) {
    const std::vector<float> values = to_floats(t.dtype, file.data(t));
    e.logits[t.name] = torch::tensor(values).view(t.shape);
  }
  return e;
}

torch::Tensor ids_tensor(const json& rows) {
  std::vector<std::int64_t> flat;
  for (const json& r : rows) {
    for (const json& id : r) flat.push_back(id.get<std::int64_t>());
  }
  return torch::tensor(flat, torch::kLong).view({static_cast<std::int64_t>(rows.size()), -1});
}

CausalLmPolicy load_fixture(const std::string& name) {
  CausalLmOptions options;
  options.soft_prompt = false;
  CausalLmPolicy policy = load_causal_lm(fixtures() / name, options, 1);
  policy->eval();
  return policy;
}

double largest_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

}  // namespace

TEST_CASE("HF parity: logits equal transformers' on every prompt", "[agents][hf][parity]") {
  for (const std::string& name : model_names()) {
    INFO(name);
    const Expected e = expected_of(name);
    CausalLmPolicy policy = load_fixture(name);
    CHECK(policy->config().vocab_size == e.spec["vocab_size"].get<std::int64_t>());
    torch::NoGradGuard no_grad;
    std::size_t i = 0;
    for (const json& prompt : e.spec["prompts"]) {
      const torch::Tensor ids = ids_tensor(json::array({prompt["input_ids"]}));
      const torch::Tensor logits = policy->lm_logits(ids, torch::ones_like(ids))[0];
      const torch::Tensor& expected = e.logits.at("prompt." + std::to_string(i++));
      REQUIRE(logits.sizes() == expected.sizes());
      CHECK(largest_difference(logits, expected) <= kTolerance);
    }
    // The left-padded batch, with transformers' position ids; padding slots are not compared.
    const json& batch = e.spec["batch"];
    const torch::Tensor mask = ids_tensor(batch["attention_mask"]);
    const torch::Tensor logits =
        policy->lm_logits(ids_tensor(batch["input_ids"]), mask, ids_tensor(batch["position_ids"]));
    CHECK(largest_difference(logits * mask.unsqueeze(-1), e.logits.at("batch")) <= kTolerance);
  }
}

TEST_CASE("HF parity: the key-value cache reproduces transformers' logits",
          "[agents][hf][parity]") {
  for (const std::string& name : model_names()) {
    INFO(name);
    const Expected e = expected_of(name);
    CausalLmPolicy policy = load_fixture(name);
    torch::NoGradGuard no_grad;
    std::size_t i = 0;
    for (const json& prompt : e.spec["prompts"]) {
      const torch::Tensor ids = ids_tensor(json::array({prompt["input_ids"]}))[0];
      const torch::Tensor& expected = e.logits.at("prompt." + std::to_string(i++));
      KvCache cache;
      PolicyOutput step = policy->prefill({}, ids.narrow(0, 0, 1).unsqueeze(0),
                                          torch::ones({1, 1}, torch::kBool), cache);
      for (std::int64_t t = 0; t < ids.size(0); ++t) {
        INFO("token " << t);
        CHECK(largest_difference(step.logits[0], expected[t]) <= kTolerance);
        if (t + 1 < ids.size(0)) {
          step =
              policy->decode_step(ids.narrow(0, t + 1, 1), torch::ones({1}, torch::kBool), cache);
        }
      }
    }
  }
}

TEST_CASE("HF parity: a saved model loads in transformers with the same logits",
          "[agents][hf][parity]") {
  std::vector<std::pair<std::string, fs::path>> exports;
  for (const std::string& name : model_names()) {
    INFO(name);
    CausalLmPolicy policy = load_fixture(name);
    const fs::path out = sparserl::testing::scratch_dir("hf_parity_export_" + name);
    save_causal_lm(*policy, out, 50'000, fixtures() / name);  // sharded, as large ones are
    // The C++ side reads its own export back first.
    CausalLmPolicy reloaded = load_causal_lm(out, policy->options(), 1);
    reloaded->eval();
    const torch::Tensor ids = torch::arange(1, 9, torch::kLong).unsqueeze(0);
    torch::NoGradGuard no_grad;
    CHECK(torch::equal(reloaded->lm_logits(ids, torch::ones_like(ids)),
                       policy->lm_logits(ids, torch::ones_like(ids))));
    exports.emplace_back(name, out);
  }
  if (sparserl::testing::run_shell("python3 -c 'import transformers, torch'").status != 0) {
    sparserl::testing::skip("python3 with transformers is not installed");
  }
  for (const auto& [name, out] : exports) {
    const auto check = sparserl::testing::run_shell(
        "python3 " + sparserl::testing::quoted(fixtures() / "make_fixtures.py") +
        " --verify-export " + sparserl::testing::quoted(out) + " --model " + name);
    INFO(name << ": " << check.output);
    CHECK(check.status == 0);
  }
}
