// One episode, four drivers: the same completions played token by token through
// SparseCudaEnv::step(), through VectorEnv's asynchronous send/recv, and handed whole to the
// EpisodePipeline as the RL trainer (a batch of prompts, G samples each) and the bench (one prompt,
// its greedy answer and samples) hand them. Every path must give the same episode - ids, tokens,
// annotations, program text, termination, EvalResult, reward and its breakdown, and the final info
// - for a correct program, a failing one and one cut at max_tokens (truncated: no evaluation, the
// truncation reward standing in for R_compile).
#include <algorithm>
#include <utility>

#include "catch.hpp"
#include "env_test_support.hpp"
#include "sparserl/env/episode_pipeline.hpp"
#include "sparserl/env/seeding.hpp"
#include "sparserl/env/sparse_cuda_env.hpp"
#include "sparserl/env/vector_env.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::env;

constexpr std::uint64_t kSeed = 41;
constexpr int kMaxTokens = 600;
const std::string kUri = "gen-v1/banded?bandwidth=3&n=300";

using fixtures::tokenizer;

std::shared_ptr<datasets::MatrixStore> store() {
  static const auto s = fixtures::scratch_store("episode_paths_store", 16);
  return s;
}

datasets::Task task() {
  datasets::Task t;
  t.uri = kUri;
  return t;
}

EnvConfig config() {
  EnvConfig c;
  c.max_tokens = kMaxTokens;
  c.mask = MaskMode::none;  // the failing and the cut completions are not syntax-mask programs
  c.observation.nnz_samples = 32;
  c.observation.embedding_dim = 16;
  c.truncation_reward = -0.75;
  return c;
}

std::unique_ptr<SparseCudaEnv> make_env(const std::shared_ptr<EvaluationBackend>& backend,
                                        int env_id) {
  return std::make_unique<SparseCudaEnv>(config(), tokenizer(),
                                         TaskSource::from_tasks({task()}, TaskOrder::sequential),
                                         store(), backend, env_id);
}

Completion annotated(std::vector<TokenId> tokens, float offset) {
  Completion c;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    c.log_probs.push_back(-0.01f * static_cast<float>(i) - offset);
    c.values.push_back(0.5f + offset);
  }
  c.terminated = !tokens.empty() && tokens.back() == tokenizer()->vocabulary().eos();
  c.tokens = std::move(tokens);
  return c;
}

// A correct program (the fake backend compiles what parses), a failing one (<eos> alone does not
// parse) and one cut at max_tokens (program tokens repeated, no <eos>).
std::vector<Completion> completions() {
  const std::vector<TokenId> program =
      tokenizer()->encode(fixtures::reference_corpus().back().text).tokens;
  std::vector<TokenId> cut;
  while (static_cast<int>(cut.size()) < kMaxTokens) {
    for (TokenId t : program) {
      if (t != tokenizer()->vocabulary().eos() && static_cast<int>(cut.size()) < kMaxTokens) {
        cut.push_back(t);
      }
    }
  }
  return {annotated(program, 0.0f), annotated({tokenizer()->vocabulary().eos()}, 0.25f),
          annotated(cut, 0.5f)};
}

// Environment i plays completion i: its seeds as VectorEnv derives them for environment i.
EpisodeStart start_of(int env_id) {
  EpisodeStart s;
  s.task = task();
  s.env_id = env_id;
  s.env_seed = env_seed(kSeed, env_id);
  s.episode_index = 0;
  s.episode_seed = episode_seed(s.env_seed, 0);
  return s;
}

struct Played {
  Episode episode;
  Info info;  // the final info
};

Played by_step(const Completion& c, int env_id) {
  auto backend = std::make_shared<fixtures::FakeBackend>();
  auto env = make_env(backend, env_id);
  (void)env->reset(env_seed(kSeed, env_id));
  StepResult last;
  for (std::size_t i = 0; i < c.tokens.size(); ++i) {
    last = env->step(c.tokens[i], {c.log_probs[i], c.values[i]});
    REQUIRE(last.done() == (i + 1 == c.tokens.size()));
  }
  REQUIRE(env->last_episode() != nullptr);
  return {*env->last_episode(), last.info};
}

std::vector<Played> by_vector_env(const std::vector<Completion>& cs) {
  auto backend = std::make_shared<fixtures::FakeBackend>();
  VectorEnvConfig vc;
  vc.num_envs = static_cast<int>(cs.size());
  vc.batch_size = 1;  // asynchronous: results as they come
  VectorEnv envs(vc, [&](int id) { return make_env(backend, id); });
  std::vector<Played> out(cs.size());
  std::vector<std::size_t> next(cs.size(), 0);
  envs.on_episode([&](const Episode& e) { out[static_cast<std::size_t>(e.env_id)].episode = e; });
  (void)envs.reset(kSeed);
  std::vector<int> active;
  for (int i = 0; i < envs.num_envs(); ++i) active.push_back(i);
  while (!active.empty()) {
    std::vector<TokenId> actions;
    std::vector<StepAnnotation> annotations;
    for (int id : active) {
      const Completion& c = cs[static_cast<std::size_t>(id)];
      const std::size_t t = next[static_cast<std::size_t>(id)]++;
      actions.push_back(c.tokens[t]);
      annotations.push_back({c.log_probs[t], c.values[t]});
    }
    envs.send(actions, active, annotations);
    active.clear();
    while (active.empty()) {
      VectorStep got = envs.recv();
      for (std::size_t j = 0; j < got.size(); ++j) {
        const int id = got.env_ids[j];
        if (got.step_types[j] == StepType::last) {
          out[static_cast<std::size_t>(id)].info = got.infos[j];
        } else {
          active.push_back(id);
        }
      }
      if (got.size() == 0) break;
    }
  }
  return out;
}

// The trainer's batch: one prompt per environment's start, every completion its own group of one
// sample; and the bench's group: one prompt, all completions as its greedy answer and samples.
std::vector<Played> by_pipeline(const std::vector<Completion>& cs) {
  auto backend = std::make_shared<fixtures::FakeBackend>();
  auto env = make_env(backend, 0);
  std::vector<EpisodeStart> starts;
  for (std::size_t i = 0; i < cs.size(); ++i) starts.push_back(start_of(static_cast<int>(i)));
  const std::vector<Prompt> prompts = env->pipeline().start(starts);
  std::vector<Played> out;
  for (Episode& e : env->pipeline().run(prompts, cs)) {
    Info info = EpisodePipeline::final_info(e);
    out.push_back({std::move(e), std::move(info)});
  }
  return out;
}

// The info entries in order, wall-clock figures left out (they differ by nature).
std::vector<std::pair<std::string, InfoValue>> untimed(const Info& info) {
  std::vector<std::pair<std::string, InfoValue>> out;
  for (const auto& entry : info.entries()) {
    if (entry.first.find("seconds") == std::string::npos) out.push_back(entry);
  }
  return out;
}

void check_same_info(const Info& a, const Info& b) {
  CHECK(untimed(a) == untimed(b));
  CHECK(a.size() == b.size());
}

void check_same(const Played& a, const Played& b) {
  const Episode& x = a.episode;
  const Episode& y = b.episode;
  fixtures::check_same_record(x, y);
  CHECK(x.observation_digest == y.observation_digest);
  CHECK(x.breakdown.str() == y.breakdown.str());
  CHECK(x.breakdown.unclipped == y.breakdown.unclipped);
  REQUIRE(x.eval.has_value() == y.eval.has_value());
  if (x.eval) CHECK(x.eval->to_json() == y.eval->to_json());
  check_same_info(a.info, b.info);
}

}  // namespace

TEST_CASE("step(), VectorEnv, the trainer's batch and the bench's group make the same episodes",
          "[env][episode]") {
  const std::vector<Completion> cs = completions();
  std::vector<Played> stepped;
  for (std::size_t i = 0; i < cs.size(); ++i)
    stepped.push_back(by_step(cs[i], static_cast<int>(i)));
  const std::vector<Played> vectored = by_vector_env(cs);
  const std::vector<Played> trained = by_pipeline(cs);
  REQUIRE(vectored.size() == cs.size());
  REQUIRE(trained.size() == cs.size());
  for (std::size_t i = 0; i < cs.size(); ++i) {
    INFO("completion " << i);
    check_same(stepped[i], vectored[i]);
    check_same(stepped[i], trained[i]);
  }

  // What each completion came to.
  REQUIRE(stepped[0].episode.eval);
  CHECK(stepped[0].episode.eval->compiled);
  CHECK(stepped[0].episode.breakdown.total == Approx(0.5));
  REQUIRE(stepped[1].episode.eval);
  CHECK(stepped[1].episode.eval->error == reward::ErrorKind::bad_program);
  const Episode& cut = stepped[2].episode;
  CHECK(cut.truncated);
  CHECK_FALSE(cut.eval.has_value());
  CHECK(cut.reward == Approx(-0.75));
  CHECK(cut.breakdown.compile == Approx(-0.75));  // the truncation reward is R_compile's stand-in
  CHECK(stepped[2].info.get_string("truncated.reason") == "max_tokens");

  // The bench's group: one prompt, the three completions as answer and samples.
  auto backend = std::make_shared<fixtures::FakeBackend>();
  auto env = make_env(backend, 0);
  const std::vector<Prompt> prompt = {env->pipeline().start(start_of(0))};
  const std::vector<Episode> group = env->pipeline().run(prompt, cs);
  REQUIRE(group.size() == cs.size());
  for (std::size_t i = 0; i < cs.size(); ++i) {
    INFO("sample " << i);
    CHECK(group[i].group == 0);
    CHECK(group[i].episode_index == i);  // prompt index 0 x 3 samples + i
    CHECK(group[i].observation_digest == stepped[0].episode.observation_digest);
    CHECK(group[i].reward == stepped[i].episode.reward);
    CHECK(group[i].breakdown.str() == stepped[i].episode.breakdown.str());
    CHECK(group[i].source == stepped[i].episode.source);
  }
  CHECK(backend->calls == 2);  // the cut completion is never evaluated
}

TEST_CASE("the pipeline refuses a completion that neither ended nor was cut", "[env][episode]") {
  auto backend = std::make_shared<fixtures::FakeBackend>();
  auto env = make_env(backend, 0);
  const Prompt prompt = env->pipeline().start(start_of(0));
  const std::vector<Completion> cs = completions();
  Completion half = cs[0];
  half.tokens.resize(10);
  half.terminated = false;
  CHECK_THROWS_WITH(env->pipeline().submit(prompt, half),
                    sparserl::testing::has_substring("neither ended nor cut at max_tokens"));
  Completion lying = cs[0];
  lying.terminated = false;
  CHECK_THROWS_WITH(env->pipeline().submit(prompt, lying),
                    sparserl::testing::has_substring("terminated = 0"));
  Completion outside = cs[0];
  outside.tokens.front() = -3;
  CHECK_THROWS_WITH(env->pipeline().submit(prompt, outside),
                    sparserl::testing::has_substring("outside Discrete"));
  CHECK(backend->calls == 0);
  CHECK_THROWS_WITH(env->pipeline().run(std::vector<Prompt>{prompt, prompt}, {cs[0]}),
                    sparserl::testing::has_substring("expected a multiple"));
}
