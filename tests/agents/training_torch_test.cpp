// Checkpoints and the training stages: a checkpoint round-trips every piece of state (the next step
// after loading equals the next step without saving), refuses another policy shape, and a run cut
// in two and resumed reproduces the uninterrupted run's numbers - for SFT and for RL against an env
// whose evaluator only parses (a PPO run with a separate critic too). The RL algorithms (PPO's
// critic warm-up, value-head and separate-critic variants), the env::Agent path (VectorEnv
// episodes into update()) and the evaluation report the statistics they promise.
#include <torch/torch.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <sstream>

#include "agents_torch_test_support.hpp"
#include "catch.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/torch/learner.hpp"
#include "sparserl/agents/training.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/env/sparse_cuda_env.hpp"
#include "sparserl/env/vector_env.hpp"
#include "sparserl/reward/timing_lane.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::agents;
using namespace sparserl::agents::testing;

std::vector<SftExample> examples(std::size_t n) {
  const auto programs = agents::testing::reference_programs();
  std::vector<SftExample> out;
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(
        {synthetic_observation(i), tokenizer()->encode(programs[i % programs.size()].text).tokens});
  }
  return out;
}

std::vector<SftPair> pairs(std::size_t n) {
  const auto programs = agents::testing::reference_programs();
  std::vector<SftPair> out;
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(
        {datasets::Task::parse("gen-v1/diagonal?n=" + std::to_string(10 + i) + " spmv f32"),
         programs[i % programs.size()].text});
  }
  return out;
}

// A made-up observation per (task, seed): no matrix store needed.
std::shared_ptr<const env::MatrixObservation> observe(const datasets::Task& task,
                                                      std::uint64_t seed) {
  return synthetic_observation(std::hash<std::string>{}(task.uri) ^ seed);
}

const std::vector<std::string> kUris = {"gen-v1/banded?bandwidth=3&n=300", "gen-v1/diagonal?n=50",
                                        "gen-v1/stencil2d?nx=12"};

std::shared_ptr<datasets::MatrixStore> store() {
  static const auto s = std::make_shared<datasets::MatrixStore>(
      sparserl::testing::scratch_dir("agents_store"), datasets::StoreOptions{.cache_capacity = 16});
  return s;
}

env::EnvConfig env_config(int max_tokens) {
  env::EnvConfig c;
  c.max_tokens = max_tokens;
  c.mask = env::MaskMode::syntax;
  c.observation.nnz_samples = 8;
  c.observation.embedding_dim = 16;
  return c;
}

// The tests' env over kUris; its evaluations by `backend` (default: the parsing backend).
std::unique_ptr<env::SparseCudaEnv> make_env(
    int max_tokens, int env_id = 0, std::shared_ptr<env::EvaluationBackend> backend = nullptr) {
  if (!backend) backend = std::make_shared<agents::testing::ParsingBackend>();
  return std::make_unique<env::SparseCudaEnv>(
      env_config(max_tokens), tokenizer(),
      env::TaskSource::from_uris(kUris, {}, env::TaskOrder::shuffled), store(), std::move(backend),
      env_id);
}

// Every logged value of a run, keyed by "step name".
using Trajectory = std::map<std::string, double>;

StatisticsCallback recorder(Trajectory& into, const std::vector<std::string>& names) {
  return [&into, names](std::string_view, std::int64_t step, const env::Statistics& stats) {
    for (const auto& name : names)
      into[std::to_string(step) + " " + name] = find_statistic(stats, name);
  };
}

}  // namespace

TEST_CASE("a checkpoint round-trips weights, optimiser, counters and generator",
          "[agents][checkpoint]") {
  const auto dir = sparserl::testing::scratch_dir("agents_checkpoint_round_trip");
  AgentConfig config = tiny_config(env::MaskMode::syntax, 400);
  config.policy.dropout = 0.1;  // the CPU generator's state matters
  PolicyAgent agent(config, vocabulary());
  const auto batch = examples(3);
  for (int i = 0; i < 3; ++i) (void)agent.sft_step(batch);
  (void)agent.generate(
      std::vector<std::shared_ptr<const env::MatrixObservation>>{synthetic_observation(9)}, 2,
      SamplingConfig{});
  agent.set_reference_to_current();
  agent.save(dir);
  // The step after saving, without loading: the reference numbers.
  const double expected_loss = find_statistic(agent.sft_step(batch), "loss");
  const std::string expected_weights = agent.weights_digest();
  const std::vector<std::shared_ptr<const env::MatrixObservation>> prompt = {
      synthetic_observation(4)};
  const std::vector<env::TokenId> expected_tokens =
      agent.generate(prompt, 3, SamplingConfig{})[2].tokens;

  // Loading restores LibTorch's generator too, so the same step follows.
  const auto loaded = PolicyAgent::from_checkpoint(dir);
  CHECK(loaded->counters().optimizer_steps == 3);
  CHECK(loaded->has_reference());
  CHECK(loaded->vocabulary().digest() == vocabulary()->digest());
  AgentConfig saved = agent.config();
  CHECK(to_key_values(loaded->config()) == to_key_values(saved));
  // The next step (AdamW moments, the schedule, dropout draws) and the next samples agree.
  CHECK(find_statistic(loaded->sft_step(batch), "loss") == expected_loss);
  CHECK(loaded->weights_digest() == expected_weights);
  CHECK(loaded->generate(prompt, 3, SamplingConfig{})[2].tokens == expected_tokens);
}

TEST_CASE("a policy kept without its optimiser and generator state loads for inference only",
          "[agents][checkpoint]") {
  // docs/examples keeps SFT seed 1's policy as model.pt, checkpoint.txt and the vocabulary (the
  // optimiser's state is twice the weights): bench, eval and export read it; resuming refuses it.
  const auto full = sparserl::testing::scratch_dir("agents_checkpoint_inference_full");
  const auto kept = sparserl::testing::scratch_dir("agents_checkpoint_inference_kept");
  PolicyAgent agent(tiny_config(env::MaskMode::syntax, 400), vocabulary());
  for (int i = 0; i < 2; ++i) (void)agent.sft_step(examples(3));
  agent.save(full);
  std::filesystem::copy(full, kept, std::filesystem::copy_options::recursive);
  std::filesystem::remove(kept / "optimizer.pt");
  std::filesystem::remove(kept / "rng.pt");
  CHECK_THROWS_WITH(PolicyAgent::from_checkpoint(kept),
                    sparserl::testing::has_substring("optimizer.pt: missing from the checkpoint"));
  const auto inference = PolicyAgent::CheckpointUse::inference;
  const auto whole = PolicyAgent::from_checkpoint(full, {}, inference);
  const auto policy = PolicyAgent::from_checkpoint(kept, {}, inference);
  CHECK(policy->weights_digest() == agent.weights_digest());
  CHECK(policy->counters().optimizer_steps == 2);
  // The sampling state is the checkpoint's (checkpoint.txt), so the draws are the whole one's.
  const std::vector<std::shared_ptr<const env::MatrixObservation>> prompt = {
      synthetic_observation(4)};
  CHECK(policy->generate(prompt, 3, SamplingConfig{})[2].tokens ==
        whole->generate(prompt, 3, SamplingConfig{})[2].tokens);
  // The weights are never optional.
  std::filesystem::remove(kept / "model.pt");
  CHECK_THROWS_WITH(PolicyAgent::from_checkpoint(kept, {}, inference),
                    sparserl::testing::has_substring("model.pt: missing from the checkpoint"));
}

TEST_CASE("loading refuses a checkpoint of another shape and names the key",
          "[agents][checkpoint]") {
  const auto dir = sparserl::testing::scratch_dir("agents_checkpoint_shape");
  PolicyAgent small(tiny_config(), vocabulary());
  small.save(dir);
  AgentConfig wider = tiny_config();
  wider.policy.d_model = 48;
  PolicyAgent other(wider, vocabulary());
  CHECK_THROWS_WITH(other.load(dir), sparserl::testing::has_substring("policy.d_model = 32"));
  CHECK_THROWS_WITH(other.load_weights(dir), sparserl::testing::has_substring("policy.d_model"));
  CHECK_THROWS_WITH(PolicyAgent::from_checkpoint(dir / "missing"),
                    sparserl::testing::has_substring("checkpoint.txt"));
  // The same shapes trained to read other inputs (the study's ablations) are refused too.
  AgentConfig ablated = tiny_config();
  ablated.policy.matrix_input = MatrixInput::features;
  PolicyAgent features_only(ablated, vocabulary());
  CHECK_THROWS_WITH(features_only.load_weights(dir),
                    sparserl::testing::has_substring("policy.matrix_input = full"));
}

TEST_CASE("a resumed SFT run repeats the uninterrupted run's numbers", "[agents][checkpoint]") {
  const auto root = sparserl::testing::scratch_dir("agents_sft_resume");
  SftConfig config;
  config.agent = tiny_config(env::MaskMode::syntax, 400);
  config.steps = 6;
  config.batch_size = 2;
  config.log_every = 1;
  config.output_dir = root / "whole";
  const auto data = pairs(3);
  Trajectory whole, parts;
  const StageResult a =
      run_sft(config, data, observe, *tokenizer(), recorder(whole, {"loss", "grad_norm"}));
  CHECK(a.steps == 6);
  CHECK_FALSE(a.resumed);

  config.output_dir = root / "parts";
  config.steps = 3;
  (void)run_sft(config, data, observe, *tokenizer(), recorder(parts, {"loss", "grad_norm"}));
  config.steps = 6;
  const StageResult b =
      run_sft(config, data, observe, *tokenizer(), recorder(parts, {"loss", "grad_norm"}));
  CHECK(b.resumed);
  CHECK(b.steps == 6);
  CHECK(parts == whole);
  CHECK(PolicyAgent::from_checkpoint(a.checkpoint)->weights_digest() ==
        PolicyAgent::from_checkpoint(b.checkpoint)->weights_digest());
}

TEST_CASE("SFT steps report their wall time and the part spent observing matrices",
          "[agents][sft]") {
  SftConfig config;
  config.agent = tiny_config(env::MaskMode::syntax, 400);
  config.steps = 3;
  config.batch_size = 2;
  config.log_every = 1;
  config.output_dir = sparserl::testing::scratch_dir("agents_sft_perf");
  int logged = 0;
  (void)run_sft(config, pairs(3), observe, *tokenizer(),
                [&](std::string_view, std::int64_t, const env::Statistics& stats) {
                  const auto value = [&](const std::string& name) -> std::optional<double> {
                    for (const auto& [key, v] : stats)
                      if (key == name) return v;
                    return std::nullopt;
                  };
                  const auto observing = value("perf/observation_seconds");
                  const auto step = value("perf/step_seconds");
                  if (!value("loss")) return;  // not a step's statistics
                  ++logged;
                  REQUIRE(observing);
                  REQUIRE(step);
                  CHECK(*observing >= 0);
                  CHECK(*step >= *observing);
                });
  CHECK(logged == 3);
}

namespace {

// Runs `config` for 3 updates in one go and as 1 + 2 (resumed from OUTPUT_DIR/latest), recording
// `names` (and the uninterrupted run's episodes); checks that both runs logged the same numbers.
// Returns the resumed run's result.
StageResult check_rl_resume(RlConfig config, const std::filesystem::path& root,
                            const std::vector<std::string>& names,
                            const EpisodeCallback& on_episode = {}) {
  config.updates = 3;
  config.tasks_per_update = 2;
  config.samples_per_task = 3;
  config.checkpoint_every = 1;
  config.seed = 4;
  Trajectory whole, parts;
  config.output_dir = root / "whole";
  auto env_a = make_env(48);
  const StageResult a = run_rl(config, *env_a, recorder(whole, names), on_episode);
  CHECK(a.steps == 3);
  CHECK_FALSE(a.resumed);
  config.output_dir = root / "parts";
  config.updates = 1;
  auto env_b = make_env(48);
  (void)run_rl(config, *env_b, recorder(parts, names));
  config.updates = 3;
  auto env_c = make_env(48);
  const StageResult b = run_rl(config, *env_c, recorder(parts, names));
  CHECK(b.resumed);
  CHECK(whole.size() == 3 * names.size());
  CHECK(parts == whole);
  return b;
}

}  // namespace

TEST_CASE("a resumed RL run repeats the uninterrupted run's numbers", "[agents][checkpoint][rl]") {
  RlConfig config;
  config.agent = tiny_config(env::MaskMode::syntax, 48);
  config.agent.algorithm = "grpo";
  config.agent.settings.get<GrpoConfig>().epochs = 2;
  int episodes = 0;
  const StageResult b = check_rl_resume(
      config, sparserl::testing::scratch_dir("agents_rl_resume"),
      {"loss", "reward/mean", "completions/mean_length", "kl"}, [&](const env::Episode& e) {
        ++episodes;
        CHECK(!e.tokens.empty());
        CHECK(e.terminated);
      });
  CHECK(episodes == 3 * 2 * 3);  // the uninterrupted run's: 3 updates x 2 tasks x 3 samples
  CHECK_FALSE(std::filesystem::exists(b.checkpoint / "critic.pt"));  // GRPO has no critic
}

TEST_CASE("the RL stage refuses an algorithm that learns from examples, naming the registered RL ones",
          "[agents][rl]") {
  RlConfig config;
  config.agent = tiny_config(env::MaskMode::syntax, 48);
  config.agent.algorithm = "sft";
  config.output_dir = sparserl::testing::scratch_dir("agents_rl_sft_refused");
  auto env = make_env(48);
  CHECK_THROWS_WITH(run_rl(config, *env),
                    sparserl::testing::has_substring(
                        "rl: agent.algorithm = sft learns from examples, not rollouts: expected "
                        "one of reinforce, ppo, grpo"));
}

TEST_CASE("overlap_generation samples each batch after the first with the policy before the last update",
          "[agents][rl]") {
  RlConfig config;
  config.agent = tiny_config(env::MaskMode::syntax, 48);
  config.agent.algorithm = "grpo";
  config.agent.settings.get<GrpoConfig>().epochs = 2;  // two optimiser steps an update
  config.updates = 4;
  config.tasks_per_update = 2;
  config.samples_per_task = 3;
  config.seed = 4;
  config.overlap_generation = true;
  config.output_dir = sparserl::testing::scratch_dir("agents_rl_overlap");
  std::vector<std::string> policies;  // the policy of each episode, in order
  std::vector<double> waits;
  auto env = make_env(48);
  const StageResult r = run_rl(
      config, *env,
      [&](std::string_view, std::int64_t, const env::Statistics& stats) {
        waits.push_back(find_statistic(stats, "perf/evaluation_wait_seconds"));
        // The generation's own split is logged beside it (the overlapped batch's).
        const double steps = find_statistic(stats, "perf/generation_steps");
        CHECK(steps >= 1);
        CHECK(steps <= 48);
        CHECK(find_statistic(stats, "perf/generation_mask_seconds") <=
              find_statistic(stats, "perf/generation_seconds"));
      },
      [&](const env::Episode& e) { policies.push_back(e.policy_id); });
  CHECK(r.steps == 4);
  REQUIRE(policies.size() == 4 * 2 * 3);
  CHECK(waits.size() == 4);
  std::vector<std::string> per_update;
  for (std::size_t u = 0; u < 4; ++u) {
    for (std::size_t i = 1; i < 6; ++i) CHECK(policies[u * 6 + i] == policies[u * 6]);
    per_update.push_back(policies[u * 6]);
  }
  // Update 0's batch and update 1's both come from the starting policy (update 1's was sampled
  // while update 0's was evaluated); update u's from the policy after update u - 2.
  CHECK(per_update[0].ends_with(":step=0"));
  CHECK(per_update[1].ends_with(":step=0"));
  CHECK(per_update[2].ends_with(":step=2"));
  CHECK(per_update[3].ends_with(":step=4"));
}

TEST_CASE("generate() holds the timing lane it is given while it samples, and lets it go",
          "[agents][rl]") {
  // What keeps the evaluator's timed runs off the GPU while overlap_generation samples on it: with
  // the lane held elsewhere generate() waits; afterwards the lane is free again.
  const auto path = sparserl::testing::scratch_dir("agents_timing_lane") / "lane.lock";
  PolicyAgent agent(tiny_config(env::MaskMode::syntax, 48), tokenizer()->vocabulary_ptr());
  agent.set_timing_lane(std::make_shared<reward::TimingLaneLock>(path));
  reward::TimingLaneLock timer(path);  // an evaluator's GPU worker, timing
  timer.lock();
  std::vector<std::shared_ptr<const env::MatrixObservation>> prompts = {synthetic_observation(3)};
  auto sampled = std::async(std::launch::async,
                            [&] { return agent.generate(prompts, 2, agent.config().sampling); });
  CHECK(sampled.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);
  timer.unlock();
  CHECK(sampled.get().size() == 2);
  CHECK(timer.try_lock());  // generate() let it go
  timer.unlock();
}

TEST_CASE("generate() reports where its time went: steps, masked rows, mask and read-back seconds",
          "[agents][rl]") {
  PolicyAgent agent(tiny_config(env::MaskMode::syntax, 48), tokenizer()->vocabulary_ptr());
  std::vector<std::shared_ptr<const env::MatrixObservation>> prompts = {synthetic_observation(3),
                                                                        synthetic_observation(5)};
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Completion> sampled = agent.generate(prompts, 3, agent.config().sampling);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const GenerationProfile& p = agent.last_generation();
  std::int64_t longest = 0, tokens = 0;
  for (const Completion& c : sampled) {
    longest = std::max<std::int64_t>(longest, static_cast<std::int64_t>(c.tokens.size()));
    tokens += static_cast<std::int64_t>(c.tokens.size());
  }
  CHECK(p.steps == longest);    // one decode step per token of the longest row
  CHECK(p.row_steps == tokens);  // a mask filled for each token drawn
  CHECK(p.mask_seconds > 0);
  CHECK(p.readback_seconds >= 0);
  CHECK(p.upload_seconds >= 0);
  CHECK(p.decode_seconds > 0);  // steps after the first run the network
  CHECK(p.mask_seconds + p.readback_seconds + p.upload_seconds + p.decode_seconds <= p.seconds);
  CHECK(p.seconds <= wall);
}

TEST_CASE("overlap_generation is refused for an algorithm that does not correct stale samples",
          "[agents][rl]") {
  RlConfig config;
  config.agent = tiny_config(env::MaskMode::syntax, 48);
  config.agent.algorithm = "reinforce";
  config.overlap_generation = true;
  config.output_dir = sparserl::testing::scratch_dir("agents_rl_overlap_refused");
  auto env = make_env(48);
  CHECK_THROWS_WITH(run_rl(config, *env),
                    sparserl::testing::has_substring(
                        "rl: train.overlap_generation samples each batch with the policy of one "
                        "update before, which agent.algorithm = reinforce does not correct for: "
                        "expected one of ppo, grpo"));
}

TEST_CASE("the log-probabilities recorded at sampling are the ones the learner scores",
          "[agents][rl]") {
  // What overlap_generation's ratio rests on: Completion::log_probs (masked, tempered, from the
  // key-value cache) equal score()'s full forward pass of the same policy.
  AgentConfig c = tiny_config(env::MaskMode::syntax, 48);
  c.sampling.temperature = 0.7;
  PolicyAgent agent(c, tokenizer()->vocabulary_ptr());
  std::vector<std::shared_ptr<const env::MatrixObservation>> prompts = {synthetic_observation(1),
                                                                         synthetic_observation(2)};
  std::vector<Rollout> rollouts =
      sampled_rollouts(agent, prompts, 3, [](std::size_t, const Completion&) { return 0.0; });
  Learner& learner = agent.learner();
  torch::NoGradGuard no_grad;
  learner.policy->eval();
  const SequenceBatch batch = rollout_batch(learner, rollouts);
  const torch::Tensor recorded = recorded_log_probs(learner, rollouts, batch);
  const torch::Tensor scored = learner.score(learner.policy, batch, false).log_probs;
  REQUIRE(recorded.sizes() == scored.sizes());
  CHECK((recorded - scored).abs().max().item<double>() < 1e-4);
  CHECK(recorded.masked_select(batch.valid).abs().sum().item<double>() > 0);
  // A completion whose log-probabilities do not match its tokens is refused.
  rollouts[1].completion.log_probs.pop_back();
  CHECK_THROWS_WITH(recorded_log_probs(learner, rollouts, batch),
                    sparserl::testing::has_substring("rollout 1: "));
}

namespace {

// A backend whose evaluations end, in turn, in a timeout, a worker crash and a compiled verdict
// (at the run stage, as the evaluator reports a hung kernel and a dead worker).
class FailingBackend : public env::EvaluationBackend {
 public:
  std::future<reward::EvalResult> submit(const datasets::Task&, std::string) override {
    reward::EvalResult r;
    switch (calls_++ % 3) {
      case 0:
        r.stage = reward::Stage::run;
        r.error = reward::ErrorKind::timeout;
        break;
      case 1:
        r.stage = reward::Stage::run;
        r.error = reward::ErrorKind::crash;
        break;
      default:
        r.stage = reward::Stage::compile;
        r.compiled = true;
    }
    std::promise<reward::EvalResult> promise;
    promise.set_value(std::move(r));
    return promise.get_future();
  }
  [[nodiscard]] std::string describe() const override { return "failing backend (tests)"; }

 private:
  std::atomic<int> calls_{0};
};

}  // namespace

TEST_CASE("an RL update's record counts its evaluations' timeouts and worker crashes",
          "[agents][rl]") {
  RlConfig config;
  config.agent = tiny_config(env::MaskMode::syntax, 48);
  config.agent.algorithm = "grpo";
  config.updates = 2;
  config.tasks_per_update = 2;
  config.samples_per_task = 3;
  config.output_dir = sparserl::testing::scratch_dir("agents_rl_failures");
  const auto failing = make_env(48, 0, std::make_shared<FailingBackend>());
  // update -> (timeouts, crashes) of its episodes
  std::map<std::int64_t, std::pair<int, int>> seen;
  std::map<std::int64_t, env::Statistics> records;
  std::int64_t update = 1;
  const StageResult result = run_rl(
      config, *failing,
      [&](std::string_view, std::int64_t step, const env::Statistics& s) {
        records[step] = s;
        update = step + 1;
      },
      [&](const env::Episode& e) {
        REQUIRE(e.eval.has_value());  // the syntax mask closes every program within its budget
        seen[update].first += e.eval->error == reward::ErrorKind::timeout ? 1 : 0;
        seen[update].second += e.eval->error == reward::ErrorKind::crash ? 1 : 0;
      });
  REQUIRE(result.steps == 2);
  for (const std::int64_t step : {1, 2}) {
    INFO("update " << step);
    CHECK(find_statistic(records.at(step), "env/timeouts") == seen[step].first);
    CHECK(find_statistic(records.at(step), "env/worker_crashes") == seen[step].second);
  }
  // 12 evaluations in turn: 4 timeouts and 4 crashes over the two updates.
  CHECK(seen[1].first + seen[2].first == 4);
  CHECK(seen[1].second + seen[2].second == 4);
}

TEST_CASE("REINFORCE, PPO and GRPO updates report their statistics", "[agents][rl]") {
  struct Expect {
    std::string algorithm;
    std::vector<std::string> names;
  };
  const std::vector<Expect> cases = {
      {"reinforce", {"loss", "kl", "entropy", "advantages/mean", "objective/rlhf_reward"}},
      {"ppo",
       {"loss/policy", "loss/value", "policy/clip_fraction", "policy/approx_kl",
        "value/explained_variance", "value/clip_fraction", "kl", "policy/entropy"}},
      {"grpo", {"loss", "kl", "entropy", "clip_ratio/region_mean"}},
  };
  const std::vector<std::string> common = {
      "reward/mean",      "reward/std",       "reward/frac_zero_std", "completions/mean_length",
      "env/compile_rate", "env/correct_rate", "env/speedup_geomean",  "perf/tokens_per_second",
      "grad_norm"};
  // Each update's wall time, phase by phase; the step holds them all.
  const std::vector<std::string> phases = {"perf/start_seconds", "perf/generation_seconds",
                                           "perf/evaluation_seconds", "perf/update_seconds"};
  for (const Expect& e : cases) {
    DYNAMIC_SECTION(e.algorithm) {
      RlConfig config;
      config.agent = tiny_config(env::MaskMode::syntax, 48);
      config.agent.algorithm = e.algorithm;
      config.agent.settings.get<PpoConfig>().minibatches = 2;
      config.updates = 2;
      config.tasks_per_update = 2;
      config.samples_per_task = 2;
      config.output_dir = sparserl::testing::scratch_dir(std::string("agents_rl_") +
                                                         e.algorithm);
      auto env = make_env(48);
      env::Statistics last;
      const StageResult result =
          run_rl(config, *env, [&](std::string_view stage, std::int64_t, const env::Statistics& s) {
            CHECK(stage == "rl");
            last = s;
          });
      CHECK(result.steps == 2);
      for (const auto& name : e.names) {
        INFO(name);
        CHECK(std::isfinite(find_statistic(last, name)));
      }
      for (const auto& name : common) {
        INFO(name);
        CHECK(std::isfinite(find_statistic(last, name)));
      }
      double phase_sum = 0;
      for (const auto& name : phases) {
        INFO(name);
        CHECK(find_statistic(last, name) >= 0.0);
        phase_sum += find_statistic(last, name);
      }
      CHECK(find_statistic(last, "perf/step_seconds") >= phase_sum);
      // A policy on the CPU has no device memory figures (CUDA's: policy_torch_gpu_test.cpp).
      CHECK_THROWS_AS(find_statistic(last, "perf/cuda_peak_allocated_mib"), std::out_of_range);
      // The parsing backend compiles whatever parses; the syntax mask makes every program parse.
      CHECK(find_statistic(last, "env/compile_rate") == 1.0);
    }
  }
}

namespace {

// PPO agents whose updates can be compared bit for bit: 2 epochs x 2 minibatches at lr 1e-3, no
// gradient clipping, no dropout (LibTorch's CPU generator is process-wide: no draws to differ).
AgentConfig exact_ppo_config() {
  AgentConfig config = tiny_config(env::MaskMode::syntax, 48);
  config.algorithm = "ppo";
  config.settings.get<PpoConfig>().epochs = 2;
  config.settings.get<PpoConfig>().minibatches = 2;
  config.optimizer.lr = 1e-3;
  config.optimizer.max_grad_norm = 0;
  config.policy.dropout = 0;
  return config;
}

}  // namespace

TEST_CASE("PPO's critic warm-up trains the value head alone, then the policy too",
          "[agents][rl]") {
  AgentConfig config = tiny_config(env::MaskMode::syntax, 48);
  config.algorithm = "ppo";
  config.settings.get<PpoConfig>().critic_warmup_updates = 1;
  config.settings.get<PpoConfig>().epochs = 2;
  config.settings.get<PpoConfig>().minibatches = 2;
  config.optimizer.lr = 1e-3;
  PolicyAgent agent(config, vocabulary());
  const std::vector<std::shared_ptr<const env::MatrixObservation>> prompts = {
      synthetic_observation(1), synthetic_observation(2)};
  auto rollouts = [&] {
    return sampled_rollouts(agent, prompts, 4, [](std::size_t, const Completion& c) {
      return static_cast<double>(c.tokens.size() % 5);
    });
  };
  // The policy's loss on a few of its own completions: a function of the logits alone.
  std::vector<SftExample> probe;
  for (const Rollout& r : rollouts()) probe.push_back({r.matrix, r.completion.tokens});
  const double before = agent.sft_loss(probe);
  const std::string weights_before = agent.weights_digest();
  const env::Statistics warm = agent.update_rollouts(rollouts());
  CHECK(find_statistic(warm, "value/critic_warmup") == 1.0);
  CHECK(find_statistic(warm, "value/mean") == 0.0);  // the value head starts at zero
  CHECK(agent.sft_loss(probe) == before);             // policy untouched, bit for bit
  CHECK(agent.weights_digest() != weights_before);    // the value head moved
  const env::Statistics joint = agent.update_rollouts(rollouts());
  CHECK(find_statistic(joint, "value/critic_warmup") == 0.0);
  CHECK(find_statistic(joint, "value/mean") != 0.0);  // the warmed critic's estimates
  CHECK(agent.sft_loss(probe) != before);             // now the policy learns too
}

TEST_CASE("PPO's value_lr_scale steps the value head at lr x scale", "[agents][rl]") {
  // Two agents alike but for the scale; one warm-up update each (one AdamW step, the value head
  // alone). AdamW's first step moves every parameter by ~lr whatever the gradient's size, and the
  // value is linear in the head: the second update's value estimates are ~scale times apart.
  auto warmed_value_mean = [](double scale) {
    AgentConfig config = tiny_config(env::MaskMode::syntax, 48);
    config.algorithm = "ppo";
    config.settings.get<PpoConfig>().critic_warmup_updates = 2;
    config.settings.get<PpoConfig>().epochs = 1;
    config.settings.get<PpoConfig>().minibatches = 1;
    config.settings.get<PpoConfig>().value_lr_scale = scale;
    config.optimizer.lr = 1e-4;
    PolicyAgent agent(config, vocabulary());
    const std::vector<std::shared_ptr<const env::MatrixObservation>> prompts = {
        synthetic_observation(1), synthetic_observation(2)};
    double value_mean = 0;
    for (int update = 0; update < 2; ++update) {
      const std::vector<Rollout> rollouts = sampled_rollouts(
          agent, prompts, 4,
          [](std::size_t k, const Completion&) { return 1.0 + static_cast<double>(k % 3); });
      value_mean = find_statistic(agent.update_rollouts(rollouts), "value/mean");
    }
    return value_mean;
  };
  const double plain = warmed_value_mean(1.0);
  const double scaled = warmed_value_mean(10.0);
  REQUIRE(plain > 0.0);  // the head moved towards the positive returns
  CHECK(scaled / plain == Approx(10.0).epsilon(0.05));
  CHECK_THROWS_AS(
      [] {
        AgentConfig bad = tiny_config(env::MaskMode::syntax, 48);
        bad.settings.get<PpoConfig>().value_lr_scale = 0.0;
        PolicyAgent agent(bad, vocabulary());
      }(),
      std::invalid_argument);
}

TEST_CASE("PPO without value gradients in the trunk updates the policy as with vf_coef 0",
          "[agents][rl]") {
  // Three agents alike (same seed, so the same initial weights) take one PPO update (2 epochs x 2
  // minibatches, no gradient clipping) on the same rollouts (a second one would differ anyway:
  // its advantages come from the value head). With value_trunk_gradients = false
  // the value loss moves the value head alone: the policy's logits end bit for bit where vf_coef
  // = 0 leaves them, while the head has learned; with the shared trunk they end elsewhere.
  auto make = [](double vf_coef, bool trunk) {
    AgentConfig config = exact_ppo_config();
    config.settings.get<PpoConfig>().vf_coef = vf_coef;
    config.settings.get<PpoConfig>().value_trunk_gradients = trunk;
    return std::make_unique<PolicyAgent>(config, vocabulary());
  };
  auto shared = make(0.5, true), head_only = make(0.5, false), no_value = make(0.0, true);
  REQUIRE(shared->weights_digest() == no_value->weights_digest());
  const std::vector<std::shared_ptr<const env::MatrixObservation>> prompts = {
      synthetic_observation(1), synthetic_observation(2)};
  // Sampled by a fourth agent: sampling draws from the sampler's RNG, which the three's
  // minibatch shuffles must not see advanced.
  const std::vector<Rollout> rollouts =
      sampled_rollouts(*make(0.0, true), prompts, 4, [](std::size_t k, const Completion&) {
        return 1.0 + static_cast<double>(k % 3);
      });
  std::vector<SftExample> probe;
  for (const Rollout& r : rollouts) probe.push_back({r.matrix, r.completion.tokens});
  double loss[3] = {0, 0, 0}, value_mean[3] = {0, 0, 0};
  int i = 0;
  for (PolicyAgent* agent : {shared.get(), head_only.get(), no_value.get()}) {
    (void)agent->update_rollouts(rollouts);
    loss[i] = agent->sft_loss(probe);
    // A second update's value/mean is the estimate of the head after the first.
    value_mean[i++] = find_statistic(agent->update_rollouts(rollouts), "value/mean");
  }
  CHECK(loss[1] == loss[2]);
  CHECK(loss[0] != loss[2]);
  CHECK(value_mean[1] != 0.0);  // the head learned from the first update's value loss
  CHECK(value_mean[2] == 0.0);  // vf_coef 0: the head never moved from its zeros
  AgentConfig config = tiny_config(env::MaskMode::syntax, 48);
  // The default: TRL's shared trunk.
  CHECK(config.settings.get<PpoConfig>().value_trunk_gradients);
  apply_key_value(config, "ppo.value_trunk_gradients", "false");
  CHECK_FALSE(config.settings.get<PpoConfig>().value_trunk_gradients);
}

TEST_CASE("PPO with a separate critic: the policy steps as with vf_coef 0, the critic learns",
          "[agents][rl]") {
  // Same seed, so the same initial weights; the critic is copied from the policy at the first
  // update, so both agents' first advantages agree. The separate critic's value loss reaches
  // only the critic: the policy's logits end bit for bit where the shared trunk's vf_coef = 0
  // leaves them, while the critic's estimates have moved off the SFT model's zero value head.
  auto make = [](PpoCritic critic, double vf_coef, int warmup) {
    AgentConfig config = exact_ppo_config();
    config.settings.get<PpoConfig>().critic = critic;
    config.settings.get<PpoConfig>().vf_coef = vf_coef;
    config.settings.get<PpoConfig>().critic_warmup_updates = warmup;
    return std::make_unique<PolicyAgent>(config, vocabulary());
  };
  const std::vector<std::shared_ptr<const env::MatrixObservation>> prompts = {
      synthetic_observation(1), synthetic_observation(2)};
  const std::vector<Rollout> rollouts = sampled_rollouts(
      *make(PpoCritic::shared, 0.0, 0), prompts, 4,
      [](std::size_t k, const Completion&) { return 1.0 + static_cast<double>(k % 3); });
  std::vector<SftExample> probe;
  for (const Rollout& r : rollouts) probe.push_back({r.matrix, r.completion.tokens});

  SECTION("the policy's update is the one without a value loss") {
    auto separate = make(PpoCritic::separate, 0.5, 0), no_value = make(PpoCritic::shared, 0.0, 0);
    REQUIRE(separate->weights_digest() == no_value->weights_digest());
    const env::Statistics first = separate->update_rollouts(rollouts);
    (void)no_value->update_rollouts(rollouts);
    CHECK(find_statistic(first, "value/mean") == 0.0);  // the SFT model's head: zeros
    CHECK(find_statistic(first, "value/grad_norm") > 0.0);
    CHECK(separate->sft_loss(probe) == no_value->sft_loss(probe));
    CHECK(separate->weights_digest() == no_value->weights_digest());
    const env::Statistics second = separate->update_rollouts(rollouts);
    CHECK(find_statistic(second, "value/mean") > 0.0);  // towards the positive returns
    CHECK(find_statistic(no_value->update_rollouts(rollouts), "value/mean") == 0.0);
  }
  SECTION("the warm-up steps the critic alone") {
    auto agent = make(PpoCritic::separate, 0.1, 1);
    const double before = agent->sft_loss(probe);
    const std::string weights_before = agent->weights_digest();
    const env::Statistics warm = agent->update_rollouts(rollouts);
    CHECK(find_statistic(warm, "value/critic_warmup") == 1.0);
    CHECK(find_statistic(warm, "grad_norm") == 0.0);  // no policy step
    CHECK(agent->weights_digest() == weights_before);  // the whole policy, value head included
    CHECK(agent->sft_loss(probe) == before);
    const env::Statistics joint = agent->update_rollouts(rollouts);
    CHECK(find_statistic(joint, "value/critic_warmup") == 0.0);
    CHECK(find_statistic(joint, "value/mean") != 0.0);  // the warmed critic's estimates
    CHECK(agent->sft_loss(probe) != before);
  }
  SECTION("the key") {
    AgentConfig config = tiny_config(env::MaskMode::syntax, 48);
    CHECK(config.settings.get<PpoConfig>().critic == PpoCritic::shared);
    apply_key_value(config, "ppo.critic", "separate");
    CHECK(config.settings.get<PpoConfig>().critic == PpoCritic::separate);
    CHECK(to_key_values(config).at("ppo.critic") == "separate");
    CHECK_THROWS_WITH(apply_key_value(config, "ppo.critic", "twin"),
                      sparserl::testing::has_substring("ppo.critic"));
  }
}

TEST_CASE("a resumed PPO run with a separate critic repeats the uninterrupted run's numbers",
          "[agents][checkpoint][rl]") {
  const auto root = sparserl::testing::scratch_dir("agents_rl_resume_critic");
  RlConfig config;
  config.agent = tiny_config(env::MaskMode::syntax, 48);
  config.agent.algorithm = "ppo";
  config.agent.settings.get<PpoConfig>().critic = PpoCritic::separate;
  config.agent.settings.get<PpoConfig>().minibatches = 2;
  config.agent.settings.get<PpoConfig>().value_lr_scale = 10;
  // value/mean of update 2 and 3 is the critic's estimate after the update before: a critic
  // lost or restarted from the policy on resume would change it.
  const StageResult b = check_rl_resume(
      config, root, {"loss/policy", "loss/value", "value/mean", "value/grad_norm", "reward/mean"});
  CHECK(std::filesystem::exists(b.checkpoint / "critic.pt"));
  CHECK(std::filesystem::exists(b.checkpoint / "critic_optimizer.pt"));
  std::ifstream text(b.checkpoint / "checkpoint.txt");
  std::stringstream contents;
  contents << text.rdbuf();
  CHECK(contents.str().find("\ncritic = true\n") != std::string::npos);

  // A checkpoint written before the separate critic existed has no critic line: it loads, without
  // a critic (the next PPO update makes one).
  std::string old = contents.str();
  old.erase(old.find("critic = true\n"), std::string("critic = true\n").size());
  std::filesystem::remove(b.checkpoint / "critic.pt");
  std::ofstream(b.checkpoint / "checkpoint.txt", std::ios::trunc) << old;
  CHECK_NOTHROW(PolicyAgent::from_checkpoint(b.checkpoint));
}

TEST_CASE("episodes from a VectorEnv driven by act() feed update()", "[agents][rl]") {
  AgentConfig config = tiny_config(env::MaskMode::syntax, 48);
  config.algorithm = "ppo";
  PolicyAgent agent(config, vocabulary());
  env::VectorEnvConfig vconfig;
  vconfig.num_envs = 3;
  vconfig.seed = 2;
  env::VectorEnv envs(vconfig, [](int id) { return make_env(48, id); });
  std::vector<env::Episode> episodes;
  envs.on_episode([&](const env::Episode& e) { episodes.push_back(e); });
  env::VectorStep step = envs.reset();
  for (int t = 0; t < 200 && episodes.size() < 6; ++t) {
    const env::ActionBatch actions = agent.act(step.observations);
    std::vector<env::StepAnnotation> notes;
    for (std::size_t i = 0; i < actions.size(); ++i) notes.push_back(actions.annotation(i));
    step = envs.step(actions.tokens, notes);
  }
  REQUIRE(episodes.size() >= 6);
  for (const env::Episode& e : episodes) {
    REQUIRE(e.log_probs.size() == e.tokens.size());
    for (float lp : e.log_probs) CHECK(lp <= 0.0f);
  }
  const env::Statistics stats = agent.update(episodes);
  CHECK(std::isfinite(find_statistic(stats, "loss/policy")));
  // Every token of an episode is a PPO step: the final reward reaches its first at
  // (gamma lambda)^(length - 1).
  double weight = 0;
  const PpoConfig& ppo = config.settings.get<PpoConfig>();
  for (const env::Episode& e : episodes) {
    weight += std::pow(ppo.gamma * ppo.lambda, static_cast<double>(e.tokens.size()) - 1.0) /
              static_cast<double>(episodes.size());
  }
  CHECK(find_statistic(stats, "advantages/first_token_outcome_weight") ==
        Approx(weight).epsilon(1e-9));
  CHECK(find_statistic(stats, "env/compile_rate") == 1.0);

  // An episode that does not carry its prompt must be of an observation act() saw.
  env::Episode stranger = episodes.front();
  stranger.matrix = nullptr;
  stranger.observation_digest = "0000";
  CHECK_THROWS_WITH(agent.update(std::vector<env::Episode>{stranger}),
                    sparserl::testing::has_substring("not acted on"));
}

TEST_CASE("the evaluation reports greedy and pass@k rates", "[agents][rl]") {
  PolicyAgent agent(tiny_config(env::MaskMode::syntax, 48), vocabulary());
  auto env = make_env(48);
  std::vector<datasets::Task> tasks;
  for (const auto& uri : kUris) tasks.push_back(datasets::Task::parse(uri + " spmv f32"));
  EvaluationConfig config;
  config.samples = 3;
  std::vector<env::Episode> episodes;
  const EvaluationSummary summary = run_evaluation(
      agent, *env, tasks, config, [&](const env::Episode& e) { episodes.push_back(e); });
  REQUIRE(summary.tasks.size() == 3);
  // Every scored completion as an episode: per task the greedy one, then the 3 samples.
  REQUIRE(episodes.size() == 12);
  for (std::size_t i = 0; i < episodes.size(); ++i) {
    const env::Episode& e = episodes[i];
    CHECK(e.episode_index == i);
    CHECK(e.task.str() == tasks[i / 4].str());
    CHECK(e.policy_id == agent.policy_id() + (i % 4 == 0 ? ":greedy" : ":sampled"));
    CHECK(e.terminated);
    CHECK(e.log_probs.size() == e.tokens.size());
    REQUIRE(e.eval.has_value());
    CHECK(e.eval->compiled);
    CHECK(!e.source.empty());
  }
  CHECK(episodes[0].episode_seed == episodes[3].episode_seed);  // one observation per task
  CHECK(episodes[0].episode_seed != episodes[4].episode_seed);
  CHECK(find_statistic(summary.statistics, "eval/greedy_compile_rate") == 1.0);
  CHECK(find_statistic(summary.statistics, "eval/pass@3_compile") == 1.0);
  CHECK(find_statistic(summary.statistics, "eval/pass@3_correct") ==
        0.0);  // nothing runs without a GPU
  CHECK(summary.tokens_per_second > 0);
}

TEST_CASE("every RL algorithm learns a toy preference", "[agents][rl]") {
  // Reward 1 when the first token is in the lower half of the vocabulary: about half the samples
  // earn it at first, so every group has variance; each algorithm must push the share up.
  const auto half = static_cast<env::TokenId>(vocabulary()->size() / 2);
  const std::vector<std::shared_ptr<const env::MatrixObservation>> prompts = {
      synthetic_observation(1), synthetic_observation(2), synthetic_observation(3),
      synthetic_observation(4)};
  struct Case {
    std::string algorithm;
    PpoCritic critic;
    double lambda;
  };
  for (const Case& c : {Case{"reinforce", PpoCritic::shared, 0.95},
                       Case{"ppo", PpoCritic::shared, 0.95},
                       Case{"ppo", PpoCritic::separate, 0.95},
                       Case{"ppo", PpoCritic::separate, 1.0},
                       Case{"grpo", PpoCritic::shared, 0.95}}) {
    std::ostringstream name;
    name << c.algorithm;
    if (c.algorithm == "ppo") {
      name << (c.critic == PpoCritic::separate ? ", separate critic" : ", shared value head")
           << ", lambda " << c.lambda;
    }
    DYNAMIC_SECTION(name.str()) {
      AgentConfig config = tiny_config(env::MaskMode::none, 4);
      config.algorithm = c.algorithm;
      config.optimizer.lr = 1e-2;
      config.settings.get<PpoConfig>().epochs = 2;
      config.settings.get<PpoConfig>().minibatches = 2;
      config.settings.get<PpoConfig>().critic = c.critic;
      config.settings.get<PpoConfig>().lambda = c.lambda;
      PolicyAgent agent(config, vocabulary());
      // The share of the first batch, and the mean share of the last five of 30 updates.
      double first = -1, last = 0;
      for (int update = 0; update < 30; ++update) {
        std::vector<Completion> completions = agent.generate(prompts, 8, agent.config().sampling);
        std::vector<Rollout> rollouts;
        double reward = 0;
        for (std::size_t k = 0; k < completions.size(); ++k) {
          Rollout r;
          r.matrix = prompts[k / 8];
          r.group = static_cast<int>(k / 8);
          r.reward = completions[k].tokens.front() < half ? 1.0 : 0.0;
          reward += r.reward;
          r.completion = std::move(completions[k]);
          rollouts.push_back(std::move(r));
        }
        reward /= static_cast<double>(rollouts.size());
        if (first < 0) first = reward;
        if (update >= 25) last += reward / 5;
        (void)agent.update_rollouts(rollouts);
      }
      INFO("share rewarded: first batch " << first << ", last five " << last);
      CHECK(first < 0.7);
      CHECK(last > 0.75);
    }
  }
}
