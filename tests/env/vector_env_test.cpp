// VectorEnv: per-env seeds seed + env_id, synchronous stepping with the random agent, the declared
// auto-reset modes, and the asynchronous mode's promise - an evaluation held back in the pool does
// not stop the other environments from stepping. Also the random agent's own contract.
#include "sparserl/env/vector_env.hpp"

#include <condition_variable>
#include <thread>

#include "catch.hpp"
#include "env_test_support.hpp"
#include "sparserl/env/agent.hpp"
#include "sparserl/env/seeding.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::env;

const std::vector<std::string> kUris = {"gen-v1/banded?n=200", "gen-v1/diagonal?n=40",
                                        "gen-v1/uniform?rows=120&nnz_per_row=3"};

using fixtures::tokenizer;

std::shared_ptr<datasets::MatrixStore> store() {
  static const auto s = fixtures::scratch_store("vector_env_store", 8);
  return s;
}

EnvConfig small_config(int max_tokens = 64) {
  EnvConfig c;
  c.max_tokens = max_tokens;
  c.observation.nnz_samples = 16;
  c.observation.embedding_dim = 8;
  return c;
}

VectorEnv::EnvFactory factory(std::shared_ptr<EvaluationBackend> backend, EnvConfig config,
                              int num_envs) {
  return [=](int id) {
    TaskSource tasks = TaskSource::from_uris(kUris, {}, TaskOrder::shuffled);
    tasks.shard(id, num_envs);
    return std::make_unique<SparseCudaEnv>(config, tokenizer(), tasks, store(), backend, id);
  };
}

// Holds back the evaluations of programs whose task is `held_uri` until release().
class GateBackend : public EvaluationBackend {
 public:
  explicit GateBackend(std::string held_uri) : held_uri_(std::move(held_uri)) {}
  ~GateBackend() override { release(); }
  std::future<reward::EvalResult> submit(const datasets::Task& task, std::string program) override {
    ++submitted;
    const bool hold = task.uri == held_uri_;
    return std::async(std::launch::async, [this, hold, program = std::move(program)] {
      if (hold) {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return released_; });
      }
      reward::EvalResult r;
      r.stage = reward::Stage::compile;
      r.compiled = reward::parse_program(program).ok();
      return r;
    });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    released_ = true;
    cv_.notify_all();
  }
  [[nodiscard]] std::string describe() const override { return "gate"; }
  std::atomic<int> submitted{0};

 private:
  std::string held_uri_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool released_ = false;
};

}  // namespace

TEST_CASE("environment i of a VectorEnv is seeded with seed + i", "[env][vector]") {
  auto backend = std::make_shared<fixtures::FakeBackend>();
  VectorEnv venv({4, 0, AutoReset::next_step, 0}, factory(backend, small_config(), 4));
  const VectorStep first = venv.reset(100);
  REQUIRE(first.size() == 4);
  for (int i = 0; i < 4; ++i) {
    CHECK(first.env_ids[static_cast<std::size_t>(i)] == i);
    CHECK(first.infos[static_cast<std::size_t>(i)].get_int("env.seed") == 100 + i);
    // The same as a single environment made the same way and reset with seed + i.
    auto single = factory(backend, small_config(), 4)(i);
    const ResetResult r = single->reset(env_seed(100, i));
    CHECK(r.observation.matrix->rows ==
          first.observations[static_cast<std::size_t>(i)].matrix->rows);
    CHECK(r.observation.task.str() == first.observations[static_cast<std::size_t>(i)].task.str());
  }
}

TEST_CASE("synchronous stepping with the random agent finishes episodes", "[env][vector]") {
  auto backend = std::make_shared<fixtures::FakeBackend>();
  VectorEnv venv({3, 0, AutoReset::next_step, 0},
                 factory(backend, small_config(kMinSyntaxTokens), 3));
  int callbacks = 0;
  venv.on_episode([&](const Episode& e) {
    ++callbacks;
    CHECK(e.terminated);  // the syntax mask's budget always ends with <eos>
  });
  RandomAgent agent(3, tokenizer()->vocabulary_ptr());
  VectorStep s = venv.reset(1);
  int ended = 0;
  for (int step = 0; step < 400 && ended < 12; ++step) {
    const ActionBatch a = agent.act(s.observations);
    std::vector<StepAnnotation> notes;
    for (std::size_t i = 0; i < a.size(); ++i) notes.push_back(a.annotation(i));
    // next_step: an ended env's next action is ignored; feed it any token.
    std::vector<TokenId> actions = a.tokens;
    s = venv.step(actions, notes);
    REQUIRE(s.size() == 3);
    for (std::size_t i = 0; i < s.size(); ++i) {
      CHECK(s.env_ids[i] == static_cast<int>(i));
      if (s.terminated[i] != 0 || s.truncated[i] != 0) ++ended;
    }
    // After an end, the ended observation masks nothing; the agent needs a live one to act on.
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s.step_types[i] == StepType::last) {
        s.observations[i].action_mask.assign(tokenizer()->vocabulary().size(), 1);
      }
    }
  }
  CHECK(ended >= 12);
  CHECK(callbacks == static_cast<int>(venv.stats().episodes));
  CHECK(venv.stats().evaluations == venv.stats().episodes);
  CHECK(backend->calls == static_cast<int>(venv.stats().evaluations));
}

TEST_CASE("auto-reset modes: next_step resets on the next action, same_step at once",
          "[env][vector]") {
  auto backend = std::make_shared<fixtures::FakeBackend>();
  const std::vector<TokenId> program =
      tokenizer()->encode(fixtures::reference_corpus()[5].text).tokens;
  for (AutoReset mode : {AutoReset::next_step, AutoReset::same_step}) {
    INFO(to_string(mode));
    VectorEnv venv({1, 0, mode, 0}, factory(backend, small_config(1024), 1));
    (void)venv.reset(9);
    VectorStep s;
    for (TokenId t : program) {
      s = venv.step(std::vector<TokenId>{t});
    }
    REQUIRE(s.terminated[0] == 1);
    CHECK(s.rewards[0] == Approx(0.5));
    CHECK(s.step_types[0] == StepType::last);
    if (mode == AutoReset::next_step) {
      CHECK(s.observations[0].tokens.size() == program.size());
      CHECK_FALSE(s.final_observations[0].has_value());
      const VectorStep next = venv.step(std::vector<TokenId>{12345});  // ignored
      CHECK(next.step_types[0] == StepType::first);
      CHECK(next.observations[0].tokens.empty());
      CHECK(next.rewards[0] == 0.0);
      CHECK(next.infos[0].get_int("episode.index") == 1);
    } else {
      CHECK(s.observations[0].tokens.empty());  // the next episode's first observation
      REQUIRE(s.final_observations[0].has_value());
      CHECK(s.final_observations[0]->tokens.size() == program.size());
      CHECK(s.final_infos[0]->get_double("reward.total") == Approx(0.5));
      CHECK(s.infos[0].get_int("episode.index") == 1);
    }
  }
  CHECK(parse_autoreset("same_step") == AutoReset::same_step);
}

TEST_CASE("a held-back evaluation does not stall the other environments", "[env][vector]") {
  // Environment 0 gets the held task; the others run freely.
  const std::string held = datasets::MatrixUri::parse(kUris[0]).str();
  auto backend = std::make_shared<GateBackend>(held);
  const EnvConfig config = small_config(1024);
  VectorEnv venv({3, 1, AutoReset::same_step, 0}, [&](int id) {
    TaskSource tasks =
        TaskSource::from_uris({kUris[static_cast<std::size_t>(id)]}, {}, TaskOrder::sequential);
    return std::make_unique<SparseCudaEnv>(config, tokenizer(), tasks, store(), backend, id);
  });
  const std::vector<TokenId> program =
      tokenizer()->encode(fixtures::reference_corpus()[6].text).tokens;
  (void)venv.reset(4);
  std::vector<std::size_t> position(3, 0);
  // Env 0 writes its whole program: its last step waits in the gate.
  for (TokenId t : program) {
    const std::vector<int> ids = {0};
    venv.send(std::vector<TokenId>{t}, ids);
    if (position[0] + 1 < program.size()) {
      const VectorStep r = venv.recv();
      REQUIRE(r.env_ids == std::vector<int>{0});
    }
    ++position[0];
  }
  // Envs 1 and 2 now finish several episodes each while env 0 is held.
  for (int id : {1, 2}) venv.send(std::vector<TokenId>{program[0]}, std::vector<int>{id});
  position[1] = position[2] = 1;
  int finished = 0;
  for (int round = 0; round < 6 * static_cast<int>(program.size()) && finished < 4; ++round) {
    const VectorStep r = venv.recv();
    REQUIRE(r.size() >= 1);
    for (std::size_t i = 0; i < r.size(); ++i) {
      const int id = r.env_ids[i];
      REQUIRE(id != 0);  // env 0 is still held
      std::size_t& p = position[static_cast<std::size_t>(id)];
      if (r.terminated[i] != 0) {
        ++finished;
        p = 0;
      }
      venv.send(std::vector<TokenId>{program[p]}, std::vector<int>{id});
      ++p;
    }
  }
  CHECK(finished >= 4);
  CHECK(venv.stats().max_in_flight >= 1);
  // Release env 0: its result arrives with the reward of its program. The others are not sent
  // anything more, so recv() soon has only env 0 in flight and waits for it (no timing involved).
  backend->release();
  bool got_env0 = false;
  for (int round = 0; round < 10 && !got_env0; ++round) {
    const VectorStep r = venv.recv();
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (r.env_ids[i] != 0) continue;
      got_env0 = true;
      CHECK(r.terminated[i] == 1);
      CHECK(r.final_infos[i]->get_string("task.uri") == held);
    }
  }
  CHECK(got_env0);
  // Sending to an environment whose result was not received yet is a usage error.
  venv.send(std::vector<TokenId>{program[0]}, std::vector<int>{0});
  CHECK_THROWS_AS(venv.send(std::vector<TokenId>{program[1]}, std::vector<int>{0}),
                  std::logic_error);
  (void)venv.reset();  // drains what is in flight
}

TEST_CASE("the random agent acts uniformly over the mask and resumes from a save", "[env][agent]") {
  const auto vocab = tokenizer()->vocabulary_ptr();
  RandomAgent agent(77, vocab);
  Observation o;
  o.action_mask.assign(vocab->size(), 0);
  o.action_mask[5] = o.action_mask[9] = o.action_mask[11] = o.action_mask[200] = 1;
  std::map<TokenId, int> counts;
  for (int i = 0; i < 4000; ++i) {
    const ActionBatch a = agent.act(std::span<const Observation>(&o, 1));
    ++counts[a.tokens[0]];
    CHECK(a.log_probs[0] == Approx(-std::log(4.0)));
    CHECK(a.values[0] == 0.0f);
  }
  REQUIRE(counts.size() == 4);
  for (const auto& [token, n] : counts) CHECK(n > 850);

  const auto dir = sparserl::testing::scratch_dir("random_agent_save");
  agent.save(dir);
  std::vector<TokenId> expected;
  for (int i = 0; i < 20; ++i)
    expected.push_back(agent.act(std::span<const Observation>(&o, 1)).tokens[0]);
  RandomAgent resumed(1, vocab);
  resumed.load(dir);
  for (int i = 0; i < 20; ++i) {
    CHECK(resumed.act(std::span<const Observation>(&o, 1)).tokens[0] ==
          expected[static_cast<std::size_t>(i)]);
  }
  CHECK(std::filesystem::exists(dir / "cuda-c-v1.vocab"));
  RandomAgent other(1, std::make_shared<const Vocabulary>(Vocabulary::build({"other", 8, {}})));
  CHECK_THROWS_AS(other.load(dir), VocabularyError);
  Observation ended;
  ended.action_mask.assign(vocab->size(), 0);
  CHECK_THROWS_AS(agent.act(std::span<const Observation>(&ended, 1)), std::logic_error);
}
