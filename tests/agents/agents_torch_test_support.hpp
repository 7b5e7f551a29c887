// Fixtures of the LibTorch agent tests: a tiny policy configuration (CPU, a few thousand parameters
// per layer, a short prefix) so every case runs in seconds, synthetic matrix observations, the
// reference programs of reward/programs as a corpus, and an evaluation backend that answers without
// a compiler (a program "compiles" when it parses), so the RL loop runs anywhere.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sparserl/agents/config.hpp"
#include "catch.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/training.hpp"
#include "sparserl/env/action_mask.hpp"
#include "sparserl/env/evaluation.hpp"
#include "sparserl/env/observation.hpp"
#include "sparserl/env/tokenizer.hpp"
#include "sparserl/env/vocabulary.hpp"
#include "sparserl/reward/program.hpp"
#include "test_support.hpp"

namespace sparserl::agents::testing {

inline std::shared_ptr<const env::Vocabulary> vocabulary() {
  static const auto v = std::make_shared<const env::Vocabulary>(env::Vocabulary::standard());
  return v;
}

inline std::shared_ptr<const env::Tokenizer> tokenizer() {
  static const auto t = std::make_shared<const env::Tokenizer>(vocabulary());
  return t;
}

inline AgentConfig tiny_config(env::MaskMode mask = env::MaskMode::none, int max_tokens = 400) {
  AgentConfig c;
  c.policy.layers = 2;
  c.policy.heads = 2;
  c.policy.d_model = 32;
  c.policy.d_ff = 64;
  c.policy.nnz_samples = 8;
  c.policy.embedding_dim = 16;
  c.policy.max_tokens = max_tokens;
  c.device = "cpu";
  c.mask = mask;
  c.seed = 7;
  return c;
}

// tiny_config on the first CUDA device (the GPU tests).
inline AgentConfig cuda_config(env::MaskMode mask = env::MaskMode::none, int max_tokens = 400) {
  AgentConfig c = tiny_config(mask, max_tokens);
  c.device = "cuda";
  return c;
}

// K = 8, D = 16 observation of `count` made-up nonzeros, different for each seed.
inline std::shared_ptr<const env::MatrixObservation> synthetic_observation(std::uint64_t seed,
                                                                           int count = 8, int k = 8,
                                                                           int d = 16) {
  auto m = std::make_shared<env::MatrixObservation>();
  m->nnz_samples = k;
  m->embedding_dim = d;
  m->count = std::min(count, k);
  m->rows.assign(static_cast<std::size_t>(k), -1);
  m->cols.assign(static_cast<std::size_t>(k), -1);
  m->embedding.assign(static_cast<std::size_t>(k * d), 0.0f);
  for (int i = 0; i < m->count; ++i) {
    m->rows[static_cast<std::size_t>(i)] =
        static_cast<std::int32_t>(seed * 31 + static_cast<std::uint64_t>(i) * 5);
    m->cols[static_cast<std::size_t>(i)] =
        static_cast<std::int32_t>((seed * 17 + static_cast<std::uint64_t>(i) * 11) % 97);
    env::positional_encoding(m->rows[static_cast<std::size_t>(i)], d / 2,
                             m->embedding.data() + i * d);
    env::positional_encoding(m->cols[static_cast<std::size_t>(i)], d / 2,
                             m->embedding.data() + i * d + d / 2);
  }
  m->features.assign(env::feature_names().size(), 0.0f);
  for (std::size_t f = 0; f < m->features.size(); ++f) {
    m->features[f] = static_cast<float>((seed * 7 + f * 3) % 10) / 10.0f;
  }
  return m;
}

// synthetic_observation(0) .. synthetic_observation(n - 1), as generate() takes its prompts.
inline std::vector<std::shared_ptr<const env::MatrixObservation>> synthetic_prompts(int n) {
  std::vector<std::shared_ptr<const env::MatrixObservation>> out;
  for (int i = 0; i < n; ++i) out.push_back(synthetic_observation(static_cast<std::uint64_t>(i)));
  return out;
}

// Whether a fresh syntax mask of `max_tokens` allows every token of `tokens` as they are replayed.
inline bool allowed_by_syntax_mask(const std::vector<env::TokenId>& tokens, int max_tokens) {
  env::ActionMask replay(vocabulary(), env::MaskMode::syntax, max_tokens);
  for (env::TokenId t : tokens) {
    if (!replay.allows(t)) return false;
    replay.advance(t);
  }
  return true;
}

// G completions per prompt from the agent as rollouts, grouped by prompt (group p for prompt p),
// rewarded by reward(index, completion).
inline std::vector<Rollout> sampled_rollouts(
    PolicyAgent& agent, const std::vector<std::shared_ptr<const env::MatrixObservation>>& prompts,
    int samples, const std::function<double(std::size_t, const Completion&)>& reward) {
  std::vector<Completion> completions = agent.generate(prompts, samples, agent.config().sampling);
  std::vector<Rollout> out;
  const auto g = static_cast<std::size_t>(samples);
  for (std::size_t k = 0; k < completions.size(); ++k) {
    Rollout r;
    r.matrix = prompts[k / g];
    r.group = static_cast<int>(k / g);
    r.reward = reward(k, completions[k]);
    r.completion = std::move(completions[k]);
    out.push_back(std::move(r));
  }
  return out;
}

struct NamedProgram {
  std::string name;
  std::string text;
};

// reward/programs/*.cu, shortest first.
inline std::vector<NamedProgram> reference_programs() {
  std::vector<NamedProgram> out;
  for (const auto& entry : std::filesystem::directory_iterator(sparserl::testing::source_dir() /
                                                               "reward" / "programs")) {
    if (entry.path().extension() != ".cu") continue;
    std::ifstream in(entry.path());
    std::ostringstream text;
    text << in.rdbuf();
    out.push_back({entry.path().stem().string(), text.str()});
  }
  std::sort(out.begin(), out.end(), [](const NamedProgram& a, const NamedProgram& b) {
    return a.text.size() != b.text.size() ? a.text.size() < b.text.size() : a.name < b.name;
  });
  return out;
}

// "Compiles" every program that parses; never runs anything (compile-only, as without a GPU).
class ParsingBackend : public env::EvaluationBackend {
 public:
  std::future<reward::EvalResult> submit(const datasets::Task&, std::string program) override {
    reward::EvalResult r;
    const reward::ParseResult parsed = reward::parse_program(program);
    if (parsed.ok()) {
      r.stage = reward::Stage::compile;
      r.compiled = true;
    } else {
      r.stage = reward::Stage::parse;
      r.error = reward::ErrorKind::bad_program;
      r.message = parsed.error.message;
    }
    std::promise<reward::EvalResult> promise;
    promise.set_value(std::move(r));
    return promise.get_future();
  }
  [[nodiscard]] std::string describe() const override { return "parsing backend (tests)"; }
};

// Every field of two generations' completions agrees, row for row.
inline void require_same_completions(const std::vector<Completion>& a,
                                     const std::vector<Completion>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t r = 0; r < a.size(); ++r) {
    INFO("row " << r);
    CHECK(a[r].tokens == b[r].tokens);
    CHECK(a[r].log_probs == b[r].log_probs);
    CHECK(a[r].values == b[r].values);
    CHECK(a[r].action_masks == b[r].action_masks);
    CHECK(a[r].terminated == b[r].terminated);
  }
}

// SFT steps on `examples` until every next token is the argmax under teacher forcing and the loss
// is below 0.02 (the loss alone can hide one uncertain token: the one that depends on the matrix),
// at most `max_steps`; then each example's matrix answered by greedy decoding. The overfitting
// tests of the small policy (policy_torch_test.cpp) and of the HF soft prompt
// (soft_prompt_torch_test.cpp).
struct Overfit {
  int steps = 0;
  double loss = 1e9, accuracy = 0;
  std::vector<Completion> greedy;  // one per example, in order
};
inline Overfit overfit_then_answer(PolicyAgent& agent, const std::vector<SftExample>& examples,
                                   int max_steps) {
  Overfit o;
  for (; o.steps < max_steps && (o.loss > 0.02 || o.accuracy < 1.0); ++o.steps) {
    const env::Statistics stats = agent.sft_step(examples);
    o.loss = find_statistic(stats, "loss");
    o.accuracy = find_statistic(stats, "mean_token_accuracy");
  }
  std::vector<std::shared_ptr<const env::MatrixObservation>> prompts;
  for (const auto& e : examples) prompts.push_back(e.matrix);
  SamplingConfig greedy;
  greedy.greedy = true;
  o.greedy = agent.generate(prompts, 1, greedy);
  return o;
}

}  // namespace sparserl::agents::testing
