// The policy network and its sampling: incremental decoding with the key-value cache gives the full
// forward pass's logits and values (mixed lengths, padding, a row without a matrix, rows resumed
// from a prefix), and so does the values-only pass a critic uses; the action mask is never violated; top-k / top-p / temperature keep the right
// tokens; act() reports the log-probabilities a full forward pass assigns; a tiny policy overfits a
// handful of programs and greedy decoding reproduces them; the same seed gives the same update.
#include <torch/torch.h>

#include <cmath>
#include <set>

#include "agents_torch_test_support.hpp"
#include "catch.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/torch/learner.hpp"
#include "sparserl/agents/training.hpp"
#include "sparserl/env/action_mask.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::agents;
using namespace sparserl::agents::testing;

std::vector<env::TokenId> random_tokens(std::size_t n, std::uint64_t seed) {
  std::vector<env::TokenId> out;
  std::uint64_t s = seed;
  const auto v = vocabulary();
  while (out.size() < n) {
    const auto t = static_cast<env::TokenId>(datasets::splitmix64(s) % v->size());
    if (t != v->pad() && t != v->bos() && t != v->eos()) out.push_back(t);
  }
  return out;
}

}  // namespace

TEST_CASE("decoding with the key-value cache equals the full forward pass", "[agents][policy]") {
  PolicyAgent agent(tiny_config(), vocabulary());
  Learner& l = agent.learner();
  // Larger weights than the initialisation so that a mistake in masking or positions shows.
  {
    torch::NoGradGuard no_grad;
    for (auto& p : l.policy->parameters()) p.normal_(0.0, 0.3);
  }
  l.policy->eval();
  torch::NoGradGuard no_grad;
  const auto m0 = synthetic_observation(1, 8), m2 = synthetic_observation(2, 3);
  const std::vector<const env::MatrixObservation*> matrices = {m0.get(), nullptr, m2.get()};
  const std::vector<std::vector<env::TokenId>> sequences = {
      random_tokens(9, 1), random_tokens(5, 2), random_tokens(2, 3)};
  std::vector<const std::vector<env::TokenId>*> pointers;
  for (const auto& s : sequences) pointers.push_back(&s);
  const SequenceBatch batch = l.sequence_batch(matrices, pointers, {});
  const PolicyOutput full = l.policy->forward(batch.prefix, batch.inputs, batch.valid);
  // The critic's values-only pass is the same trunk and value head; the learner's scores are 0
  // past each sequence's end.
  CHECK(torch::equal(l.policy->values(batch.prefix, batch.inputs, batch.valid), full.values));
  CHECK(torch::equal(l.score_values(l.policy, batch), l.score(l.policy, batch, false).values));
  CHECK(l.score_values(l.policy, batch)[2].slice(0, 2).abs().sum().item<float>() == 0.0F);
  CHECK(full.values[2].slice(0, 2).abs().sum().item<float>() > 0.0F);

  // From <bos> alone, one token at a time; a row stops being active after its last token.
  const auto start = torch::full({3, 1}, vocabulary()->bos(), torch::kLong);
  KvCache cache;
  PolicyOutput step =
      l.policy->prefill(batch.prefix, start, torch::ones({3, 1}, torch::kBool), cache);
  for (std::int64_t t = 0; t < 9; ++t) {
    for (std::int64_t r = 0; r < 3; ++r) {
      if (t >= static_cast<std::int64_t>(sequences[static_cast<std::size_t>(r)].size())) continue;
      INFO("row " << r << " token " << t);
      CHECK(torch::allclose(step.logits[r], full.logits[r][t], 1e-4, 1e-4));
      CHECK(step.values[r].item<float>() == Approx(full.values[r][t].item<float>()).margin(1e-4));
    }
    std::vector<std::int64_t> next(3, vocabulary()->pad());
    std::vector<std::int64_t> active(3, 0);
    for (std::size_t r = 0; r < 3; ++r) {
      if (t < static_cast<std::int64_t>(sequences[r].size())) {
        next[r] = sequences[r][static_cast<std::size_t>(t)];
        active[r] = t + 1 < static_cast<std::int64_t>(sequences[r].size()) ? 1 : 0;
      }
    }
    step = l.policy->decode_step(torch::tensor(next, torch::kLong),
                                 torch::tensor(active, torch::kLong).to(torch::kBool), cache);
  }

  // Prefill of rows that already hold different numbers of tokens (right padding), then one step.
  std::vector<std::vector<env::TokenId>> prefixes = {
      {sequences[0].begin(), sequences[0].begin() + 4},
      {sequences[1].begin(), sequences[1].begin() + 1}};
  for (auto& p : prefixes) p.push_back(vocabulary()->pad());  // inputs = <bos> + the tokens
  std::vector<const std::vector<env::TokenId>*> prefix_pointers = {&prefixes[0], &prefixes[1]};
  const std::vector<const env::MatrixObservation*> two = {m0.get(), nullptr};
  const SequenceBatch resumed = l.sequence_batch(two, prefix_pointers, {});
  KvCache resumed_cache;
  const PolicyOutput first =
      l.policy->prefill(resumed.prefix, resumed.inputs, resumed.valid, resumed_cache);
  CHECK(torch::allclose(first.logits[0], full.logits[0][4], 1e-4, 1e-4));
  CHECK(torch::allclose(first.logits[1], full.logits[1][1], 1e-4, 1e-4));
  const PolicyOutput second = l.policy->decode_step(
      torch::tensor(std::vector<std::int64_t>{sequences[0][4], sequences[1][1]}, torch::kLong),
      torch::ones({2}, torch::kBool), resumed_cache);
  CHECK(torch::allclose(second.logits[0], full.logits[0][5], 1e-4, 1e-4));
  CHECK(torch::allclose(second.logits[1], full.logits[1][2], 1e-4, 1e-4));
}

TEST_CASE("sampling never draws a masked token", "[agents][policy]") {
  torch::manual_seed(3);
  const std::int64_t vocab = 50;
  torch::Tensor logits = torch::randn({4, vocab}) * 3;
  torch::Tensor mask = torch::rand({4, vocab}) < 0.1;
  mask.index_put_({torch::indexing::Slice(), 0}, true);  // at least one allowed token per row
  // The forbidden tokens are made the most likely ones: masking must still exclude them.
  logits = torch::where(mask, logits, torch::full_like(logits, 50.0));
  CounterRng rng{11, 0};
  const torch::Tensor masked = apply_action_mask(logits, mask);
  std::vector<int> counts(static_cast<std::size_t>(vocab), 0);
  for (int draw = 0; draw < 2000; ++draw) {
    std::vector<double> u(4);
    for (double& x : u) x = rng.uniform_open();
    const torch::Tensor chosen = sample_from_logits(masked, torch::tensor(u, torch::kDouble));
    for (std::int64_t r = 0; r < 4; ++r) {
      const std::int64_t token = chosen[r].item<std::int64_t>();
      REQUIRE(mask[r][token].item<bool>());
      if (r == 0) ++counts[static_cast<std::size_t>(token)];
    }
  }
  // Row 0's draws follow its masked softmax.
  const torch::Tensor p = torch::softmax(masked[0], -1);
  for (std::int64_t t = 0; t < vocab; ++t) {
    if (p[t].item<double>() > 0.2)
      CHECK(counts[static_cast<std::size_t>(t)] / 2000.0 ==
            Approx(p[t].item<double>()).margin(0.05));
  }

  // Through the agent under the syntax mask: every completion is accepted token by token.
  PolicyAgent agent(tiny_config(env::MaskMode::syntax, 64), vocabulary());
  const std::vector<std::shared_ptr<const env::MatrixObservation>> prompts = {
      synthetic_observation(1), synthetic_observation(2)};
  const std::vector<Completion> completions = agent.generate(prompts, 8, SamplingConfig{});
  REQUIRE(completions.size() == 16);
  for (const Completion& c : completions) {
    env::ActionMask replay(vocabulary(), env::MaskMode::syntax, 64);
    for (env::TokenId t : c.tokens) {
      REQUIRE(replay.allows(t));
      replay.advance(t);
    }
    CHECK(c.terminated);  // the syntax mask's budget always leaves room for <eos>
    CHECK(c.tokens.back() == vocabulary()->eos());
    CHECK(c.action_masks.size() == c.tokens.size() * vocabulary()->size());
  }
}

TEST_CASE("temperature, top-k and top-p keep the intended tokens", "[agents][policy]") {
  const torch::Tensor logits =
      torch::log(torch::tensor(std::vector<float>{0.5f, 0.3f, 0.15f, 0.05f})).unsqueeze(0);
  auto kept = [&](const SamplingConfig& s) {
    const torch::Tensor out = filter_logits(logits, s);
    std::set<int> tokens;
    for (int t = 0; t < 4; ++t) {
      if (std::isfinite(out[0][t].item<float>())) tokens.insert(t);
    }
    return tokens;
  };
  SamplingConfig s;
  CHECK(kept(s) == std::set<int>{0, 1, 2, 3});
  s.top_k = 2;
  CHECK(kept(s) == std::set<int>{0, 1});
  s.top_k = 0;
  s.top_p = 0.7;  // 0.5 < 0.7 keeps token 1; 0.8 before token 2 drops it
  CHECK(kept(s) == std::set<int>{0, 1});
  s.top_p = 0.85;
  CHECK(kept(s) == std::set<int>{0, 1, 2});
  s.top_p = 0.1;
  CHECK(kept(s) == std::set<int>{0});
  s = SamplingConfig{};
  s.temperature = 2.0;
  CHECK(filter_logits(logits, s)[0][1].item<float>() == Approx(std::log(0.3) / 2));
}

TEST_CASE("act() reports what a full forward pass assigns, through its cache", "[agents][policy]") {
  AgentConfig config = tiny_config(env::MaskMode::syntax, 48);
  PolicyAgent agent(config, vocabulary());
  // Two episodes stepped together, as a synchronous vector env would; when one ends the batch
  // shrinks and the other continues from a recomputed prefix.
  std::vector<env::Observation> obs(2);
  std::vector<env::ActionMask> masks;
  for (int i = 0; i < 2; ++i) {
    obs[static_cast<std::size_t>(i)].matrix =
        synthetic_observation(static_cast<std::uint64_t>(10 + i));
    masks.emplace_back(vocabulary(), env::MaskMode::syntax, 48);
  }
  std::vector<std::vector<float>> reported(2);
  std::vector<bool> done(2, false);
  int steps = 0;
  while (!(done[0] && done[1]) && steps < 40) {
    std::vector<env::Observation> live;
    std::vector<int> which;
    for (int i = 0; i < 2; ++i) {
      if (done[static_cast<std::size_t>(i)]) continue;
      auto& o = obs[static_cast<std::size_t>(i)];
      o.action_mask.assign(vocabulary()->size(), 0);
      masks[static_cast<std::size_t>(i)].fill(o.action_mask);
      live.push_back(o);
      which.push_back(i);
    }
    const env::ActionBatch actions = agent.act(live);
    REQUIRE(actions.size() == live.size());
    for (std::size_t k = 0; k < which.size(); ++k) {
      const auto i = static_cast<std::size_t>(which[k]);
      REQUIRE(live[k].action_mask[static_cast<std::size_t>(actions.tokens[k])] == 1);
      obs[i].tokens.push_back(actions.tokens[k]);
      reported[i].push_back(actions.log_probs[k]);
      masks[i].advance(actions.tokens[k]);
      if (actions.tokens[k] == vocabulary()->eos()) done[i] = true;
    }
    ++steps;
  }
  // Score the finished sequences in one forward pass under the same masks.
  Learner& l = agent.learner();
  torch::NoGradGuard no_grad;
  l.policy->eval();
  const std::vector<const env::MatrixObservation*> matrices = {obs[0].matrix.get(),
                                                               obs[1].matrix.get()};
  const std::vector<const std::vector<env::TokenId>*> sequences = {&obs[0].tokens, &obs[1].tokens};
  const std::vector<const std::vector<std::uint8_t>*> no_masks = {nullptr, nullptr};
  const SequenceBatch batch = l.sequence_batch(matrices, sequences, no_masks);
  const TokenScores scores = l.score(l.policy, batch, false);
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t t = 0; t < reported[i].size(); ++t) {
      INFO("episode " << i << " token " << t);
      CHECK(reported[i][t] ==
            Approx(scores.log_probs[static_cast<std::int64_t>(i)][static_cast<std::int64_t>(t)]
                       .item<float>())
                .margin(1e-4));
    }
  }
}

TEST_CASE("a tiny policy overfits a handful of programs and greedy decoding reproduces them",
          "[agents][policy]") {
  const auto programs = agents::testing::reference_programs();
  const auto tokenizer = agents::testing::tokenizer();
  std::vector<SftExample> examples;
  std::size_t longest = 0;
  // The first 80 tokens of three programs (their directives, where the matrix-dependent choices
  // are, and the kernel's signature), then <eos>: long enough to need the matrix and positions,
  // short enough to train in seconds on a loaded CI machine.
  for (std::size_t i = 0; i < 3; ++i) {
    std::vector<env::TokenId> tokens = tokenizer->encode(programs[i].text).tokens;
    tokens.resize(std::min<std::size_t>(tokens.size() - 1, 80));
    tokens.push_back(vocabulary()->eos());
    longest = std::max(longest, tokens.size());
    examples.push_back({synthetic_observation(100 + i), std::move(tokens)});
  }
  AgentConfig config = tiny_config(env::MaskMode::none, static_cast<int>(longest) + 8);
  config.policy.d_model = 64;
  config.policy.d_ff = 128;
  config.optimizer.lr = 1e-2;
  config.optimizer.weight_decay = 0.0;
  PolicyAgent agent(config, vocabulary());
  // The format token is the one that depends on the matrix.
  const auto [steps, loss, accuracy, out] =
      agents::testing::overfit_then_answer(agent, examples, 300);
  INFO("steps " << steps << ", loss " << loss << ", accuracy " << accuracy);
  REQUIRE(loss < 0.02);
  REQUIRE(accuracy == 1.0);
  for (std::size_t i = 0; i < examples.size(); ++i) {
    INFO(programs[i].name);
    CHECK(out[i].tokens == examples[i].tokens);
    CHECK(out[i].terminated);
  }
}

TEST_CASE("the same seed gives the same update", "[agents][policy]") {
  AgentConfig config = tiny_config(env::MaskMode::syntax, 48);
  config.algorithm = "grpo";
  config.settings.get<GrpoConfig>().epochs = 2;
  // Two minibatches draw their permutations from the seeded generator.
  config.settings.get<GrpoConfig>().minibatches = 2;
  auto run = [&](std::uint64_t seed) {
    AgentConfig c = config;
    c.seed = seed;
    PolicyAgent agent(c, vocabulary());
    const std::vector<std::shared_ptr<const env::MatrixObservation>> prompts = {
        synthetic_observation(1), synthetic_observation(2)};
    const std::vector<Rollout> rollouts =
        sampled_rollouts(agent, prompts, 4, [](std::size_t, const Completion& completion) {
          return static_cast<double>(completion.tokens.size() % 5);
        });
    const env::Statistics stats = agent.update_rollouts(rollouts);
    return std::make_pair(agent.weights_digest(), find_statistic(stats, "loss"));
  };
  const auto a = run(5), b = run(5), c = run(6);
  CHECK(a.first == b.first);
  CHECK(a.second == b.second);
  CHECK(a.first != c.first);
}
