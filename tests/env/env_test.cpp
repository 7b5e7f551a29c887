// SparseCudaEnv's Gym semantics with a backend that answers without compiling: seeded resets
// reproduce, a reset without a seed does not reseed, truncation at max_tokens (with its reward and
// no evaluation), every EvalResult field in info, the mask in the observation, spaces, replay,
// whole- sequence evaluation, and task sources.
#include <cmath>
#include <map>
#include <set>

#include "catch.hpp"
#include "env_test_support.hpp"
#include "sparserl/env/seeding.hpp"
#include "sparserl/env/sparse_cuda_env.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::env;

const std::vector<std::string> kUris = {"gen-v1/banded?bandwidth=3&n=300", "gen-v1/diagonal?n=50",
                                        "gen-v1/rmat?scale=8&edge_factor=4&seed=2",
                                        "gen-v1/stencil2d?nx=12"};

using fixtures::tokenizer;

std::shared_ptr<datasets::MatrixStore> store() {
  static const auto s = fixtures::scratch_store("env_store", 16);
  return s;
}

struct Fixture {
  std::shared_ptr<fixtures::FakeBackend> backend = std::make_shared<fixtures::FakeBackend>();
  EnvConfig config;
  Fixture() {
    config.max_tokens = 600;
    config.observation.nnz_samples = 32;
    config.observation.embedding_dim = 16;
  }
  SparseCudaEnv make(TaskOrder order = TaskOrder::shuffled) {
    return SparseCudaEnv(config, tokenizer(), TaskSource::from_uris(kUris, {}, order), store(),
                         backend);
  }
};

std::vector<TokenId> program_tokens() {
  return tokenizer()->encode(fixtures::reference_corpus().back().text).tokens;  // spmv_sell
}

bool same(const Observation& a, const Observation& b) {
  return a.task.str() == b.task.str() && a.matrix->rows == b.matrix->rows &&
         a.matrix->cols == b.matrix->cols && a.matrix->embedding == b.matrix->embedding &&
         a.matrix->features == b.matrix->features && a.tokens == b.tokens &&
         a.action_mask == b.action_mask;
}

// The flattened key names of a JSON object ("compile.log" for {"compile": {"log": ...}}).
std::set<std::string> json_keys(const std::string& json) {
  std::set<std::string> keys;
  std::vector<std::string> path;
  std::string last_key;
  bool expect_key = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '"') {
      std::string s;
      for (++i; i < json.size() && json[i] != '"'; ++i) {
        if (json[i] == '\\') ++i;
        s += json[i];
      }
      std::size_t j = i + 1;
      while (j < json.size() && json[j] == ' ') ++j;
      if (expect_key && j < json.size() && json[j] == ':') {
        last_key = s;
        std::string full;
        for (const std::string& p : path) full += p + ".";
        keys.insert(full + s);
      }
      continue;
    }
    if (c == '{') {
      if (!last_key.empty()) {
        path.push_back(last_key);
        keys.erase([&] {
          std::string full;
          for (const std::string& p : path) full += (full.empty() ? "" : ".") + p;
          return full;
        }());
      }
      expect_key = true;
    } else if (c == '}') {
      if (!path.empty()) path.pop_back();
    } else if (c == ',') {
      expect_key = true;
    } else if (c == ':') {
      expect_key = false;
    }
  }
  return keys;
}

}  // namespace

TEST_CASE("seeded resets reproduce the same observations", "[env][gym]") {
  Fixture f;
  SparseCudaEnv a = f.make();
  SparseCudaEnv b = f.make();
  const ResetResult ra = a.reset(42);
  const ResetResult rb = b.reset(42);
  CHECK(same(ra.observation, rb.observation));
  CHECK(ra.info.get_int("episode.seed") == rb.info.get_int("episode.seed"));
  // Several episodes in a row reproduce too (the task order and the episode seeds).
  for (int i = 0; i < 6; ++i) {
    const ResetResult xa = a.reset();
    const ResetResult xb = b.reset();
    CHECK(same(xa.observation, xb.observation));
  }
  // Reseeding restarts the sequence.
  CHECK(same(a.reset(42).observation, ra.observation));
  // Another seed gives other observations.
  const ResetResult other = a.reset(43);
  CHECK_FALSE(same(other.observation, ra.observation));
}

TEST_CASE("a reset without a seed does not reseed", "[env][gym]") {
  Fixture f;
  SparseCudaEnv env = f.make();
  const ResetResult first = env.reset(7);
  const ResetResult second = env.reset();
  CHECK(second.info.get_int("episode.index") == 1);
  CHECK(second.info.get_int("env.seed") == 7);
  CHECK(second.info.get_int("episode.seed") != first.info.get_int("episode.seed"));
  CHECK(static_cast<std::uint64_t>(second.info.get_int("episode.seed")) == episode_seed(7, 1));
  // The first reset without any seed uses EnvConfig::seed.
  f.config.seed = 7;
  SparseCudaEnv unseeded = f.make();
  CHECK(same(unseeded.reset().observation, first.observation));
  // ResetOptions override the task and the episode seed.
  ResetOptions options;
  datasets::Task t;
  t.uri = "gen-v1/diagonal?n=50";
  options.task = t;
  options.episode_seed = 123;
  const ResetResult forced = env.reset(std::nullopt, options);
  CHECK(forced.observation.task.uri == "gen-v1/diagonal?n=50");
  CHECK(forced.info.get_int("episode.seed") == 123);
  CHECK(forced.info.get_int("episode.index") == 2);
}

TEST_CASE("an episode ending with <eos> is evaluated and info carries every EvalResult field",
          "[env][gym]") {
  Fixture f;
  SparseCudaEnv env = f.make();
  const ResetResult reset = env.reset(1);
  CHECK(reset.observation.tokens.empty());
  CHECK(reset.observation.remaining_tokens == 600);
  const std::vector<TokenId> tokens = program_tokens();
  StepResult r;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    r = env.step(tokens[i], {static_cast<float>(-0.5 * i), static_cast<float>(i)});
    if (i + 1 < tokens.size()) {
      REQUIRE_FALSE(r.done());
      CHECK(r.reward == 0.0);
      CHECK(r.observation.tokens.size() == i + 1);
      CHECK(r.step_type == (i == 0 ? StepType::first : StepType::mid));
    }
  }
  REQUIRE(r.terminated);
  CHECK_FALSE(r.truncated);
  CHECK(r.step_type == StepType::last);
  CHECK(f.backend->calls == 1);
  // The fake compiles what parses, without a GPU: the reward is the compile stage alone.
  CHECK(r.reward == Approx(0.5));
  CHECK(r.info.get_double("reward.total") == Approx(0.5));
  CHECK(r.info.get_bool("reward.compile_only"));
  CHECK(r.info.get_string("eval.error") == "none");
  CHECK(r.info.get_int("episode.length") == static_cast<std::int64_t>(tokens.size()));
  CHECK(r.info.get_string("episode.source") == tokenizer()->decode(tokens));
  CHECK(f.backend->programs.at(0) == r.info.get_string("episode.source"));
  // Every field of EvalResult::to_json() is in info under "eval.".
  const std::set<std::string> keys = json_keys(env.last_episode()->eval->to_json());
  REQUIRE(keys.size() >= 40);
  for (const std::string& key : keys) {
    INFO(key);
    CHECK(r.info.contains("eval." + key));
  }
  for (const char* key : {"reward.compile", "reward.test", "reward.efficiency", "reward.penalty",
                          "reward.unclipped", "task", "task.uri", "episode.seed", "env.seed"}) {
    INFO(key);
    CHECK(r.info.contains(key));
  }
  // The episode record.
  const Episode* e = env.last_episode();
  REQUIRE(e != nullptr);
  CHECK(e->tokens == tokens);
  CHECK(e->log_probs.size() == tokens.size());
  CHECK(e->values.back() == static_cast<float>(tokens.size() - 1));
  CHECK(e->terminated);
  // The observation after the end masks everything; a further step is a usage error.
  CHECK(std::count(r.observation.action_mask.begin(), r.observation.action_mask.end(), 1) == 0);
  CHECK_THROWS_AS(env.step(tokens[0]), std::logic_error);
  // info as JSON is one object.
  CHECK(r.info.to_json().front() == '{');
}

TEST_CASE("info as JSON is one flat object, keys in insertion order", "[env][gym]") {
  Info info;
  info.set("eval.ok", true);
  info.set("episode.length", 12);
  info.set("reward.total", 0.5);
  info.set("eval.timing.median_us", 12.0);  // a double keeps its '.0' (nlohmann; "12" before)
  info.set("eval.timing.p90_us", std::nan(""));
  info.set("eval.message", std::string("a \"b\"\n\x01 \xff"));
  info.set("episode.length", 13);  // replaces in place
  CHECK(info.to_json() ==
        R"({"eval.ok":true,"episode.length":13,"reward.total":0.5,"eval.timing.median_us":12.0,)"
        R"("eval.timing.p90_us":null,"eval.message":"a \"b\"\n\u0001 )"
        "\xef\xbf\xbd\"}");
}

TEST_CASE("max_tokens truncates without an evaluation and with the documented reward",
          "[env][gym]") {
  Fixture f;
  f.config.max_tokens = 12;
  f.config.mask = MaskMode::none;
  SparseCudaEnv env = f.make();
  (void)env.reset(3);
  const TokenId word = tokenizer()->vocabulary().id(TokenClass::keyword, "int");
  StepResult r;
  for (int i = 0; i < 12; ++i) {
    r = env.step(word);
    if (i < 11) REQUIRE_FALSE(r.done());
  }
  CHECK(r.truncated);
  CHECK_FALSE(r.terminated);
  CHECK(r.reward == Approx(-0.5));
  CHECK(r.info.get_string("truncated.reason") == "max_tokens");
  CHECK_FALSE(r.info.contains("eval.stage"));
  CHECK(f.backend->calls == 0);
  CHECK(env.last_episode()->truncated);
  CHECK_FALSE(env.last_episode()->eval.has_value());
  // A configured truncation reward, clipped like every reward.
  f.config.truncation_reward = -7.0;
  SparseCudaEnv clipped = f.make();
  (void)clipped.reset(3);
  for (int i = 0; i < 12; ++i) r = clipped.step(word);
  CHECK(r.reward == Approx(-1.0));
}

TEST_CASE("the syntax mask travels with the observation and is enforced", "[env][gym][mask]") {
  Fixture f;
  SparseCudaEnv env = f.make();
  const ResetResult reset = env.reset(5);
  const Vocabulary& v = tokenizer()->vocabulary();
  REQUIRE(reset.observation.action_mask.size() == v.size());
  const TokenId format = v.id(TokenClass::directive, "<format>");
  CHECK(std::count(reset.observation.action_mask.begin(), reset.observation.action_mask.end(), 1) ==
        1);
  CHECK(reset.observation.action_mask[static_cast<std::size_t>(format)] == 1);
  CHECK_THROWS_WITH(env.step(v.eos()),
                    sparserl::testing::has_substring("not allowed by the syntax mask"));
  CHECK_THROWS_WITH(env.step(static_cast<TokenId>(v.size())),
                    sparserl::testing::has_substring("Discrete"));
  const StepResult r = env.step(format);
  CHECK(r.observation.action_mask[static_cast<std::size_t>(v.id(TokenClass::directive, "csr"))] ==
        1);
  CHECK(r.observation.action_mask[static_cast<std::size_t>(format)] == 0);
}

TEST_CASE("spaces describe the observation's shapes", "[env][gym]") {
  Fixture f;
  SparseCudaEnv env = f.make();
  const Spaces s = env.spaces();
  CHECK(s.actions == static_cast<std::int64_t>(tokenizer()->vocabulary().size()));
  CHECK(s.nnz_samples == 32);
  CHECK(s.embedding_dim == 16);
  CHECK(s.feature_dim == 18);
  CHECK(s.max_tokens == 600);
  const Observation o = env.reset(1).observation;
  CHECK(o.matrix->rows.size() == 32u);
  CHECK(o.matrix->embedding.size() == 32u * 16u);
  CHECK(o.matrix->features.size() == 18u);
  CHECK_THAT(s.describe(), sparserl::testing::has_substring("matrix.embedding [32, 16] float32"));
}

TEST_CASE("a recorded episode replays and validates; a tampered one does not", "[env][gym]") {
  Fixture f;
  SparseCudaEnv env = f.make();
  (void)env.reset(9);
  for (TokenId t : program_tokens()) (void)env.step(t);
  const Episode recorded = *env.last_episode();
  const ReplayReport ok = env.replay(recorded);
  INFO((ok.mismatches.empty() ? "" : ok.mismatches.front()));
  CHECK(ok.ok());
  CHECK(ok.reward == recorded.reward);

  Episode other_seed = recorded;
  other_seed.episode_seed += 1;
  const ReplayReport bad_seed = env.replay(other_seed);
  REQUIRE_FALSE(bad_seed.ok());
  CHECK_THAT(bad_seed.mismatches.front(), sparserl::testing::has_substring("observation digest"));

  Episode cut = recorded;
  cut.tokens.erase(cut.tokens.begin() + 3);
  CHECK_FALSE(env.replay(cut).ok());

  Episode other_reward = recorded;
  other_reward.reward = 1.0;
  CHECK_FALSE(env.replay(other_reward).ok());
}

TEST_CASE("the episode pipeline scores whole completions with the same reward", "[env][gym]") {
  Fixture f;
  SparseCudaEnv env = f.make();
  const std::vector<TokenId> tokens = program_tokens();
  EpisodeStart start;
  start.task.uri = kUris[0];
  const std::vector<Prompt> prompts = {env.pipeline().start(start)};
  auto completion = [](std::vector<TokenId> t) {
    Completion c;
    c.tokens = std::move(t);
    c.terminated = true;
    return c;
  };
  const std::vector<Episode> one = env.pipeline().run(prompts, {completion(tokens)});
  REQUIRE(one.size() == 1);
  CHECK(one[0].breakdown.total == Approx(0.5));
  CHECK(one[0].source == tokenizer()->decode(tokens));
  const std::vector<Episode> group = env.pipeline().run(
      prompts,
      {completion(tokens), completion({tokenizer()->vocabulary().eos()}), completion(tokens)});
  REQUIRE(group.size() == 3);
  CHECK(group[0].breakdown.total == Approx(0.5));
  REQUIRE(group[1].eval);
  CHECK(group[1].eval->error == reward::ErrorKind::bad_program);
  CHECK(group[1].breakdown.total == Approx(-0.5));
  CHECK(f.backend->calls == 4);
}

TEST_CASE("a failing backend becomes an internal_error result, not an exception", "[env][gym]") {
  class Throwing : public EvaluationBackend {
   public:
    std::future<reward::EvalResult> submit(const datasets::Task&, std::string) override {
      std::promise<reward::EvalResult> p;
      p.set_exception(std::make_exception_ptr(std::runtime_error("worker pool gone")));
      return p.get_future();
    }
    [[nodiscard]] std::string describe() const override { return "throwing"; }
  };
  EnvConfig config;
  config.observation.nnz_samples = 8;
  config.observation.embedding_dim = 8;
  SparseCudaEnv env(config, tokenizer(), TaskSource::from_uris(kUris, {}, TaskOrder::sequential),
                    store(), std::make_shared<Throwing>());
  (void)env.reset(1);
  StepResult r;
  for (TokenId t : program_tokens()) r = env.step(t);
  CHECK(r.terminated);
  CHECK(r.info.get_string("eval.error") == "internal_error");
  CHECK_THAT(r.info.get_string("eval.message"),
             sparserl::testing::has_substring("worker pool gone"));
}

TEST_CASE("invalid env configs are refused naming the field", "[env][gym]") {
  Fixture f;
  f.config.max_tokens = 5;
  CHECK_THROWS_WITH(f.make(), sparserl::testing::has_substring("max_tokens = 5"));
  f.config.max_tokens = 100;
  f.config.observation.embedding_dim = 10;
  CHECK_THROWS_WITH(f.make(), sparserl::testing::has_substring("observation.embedding_dim"));
}

TEST_CASE("task sources visit their tasks in the declared order", "[env][tasks]") {
  std::vector<datasets::Task> tasks;
  for (const std::string& uri : kUris) {
    datasets::Task t;
    t.uri = datasets::MatrixUri::parse(uri).str();
    tasks.push_back(t);
  }
  SECTION("sequential cycles; shards split the list") {
    TaskSource s = TaskSource::from_tasks(tasks, TaskOrder::sequential);
    for (int i = 0; i < 8; ++i) CHECK(s.next().uri == tasks[static_cast<std::size_t>(i % 4)].uri);
    TaskSource a = TaskSource::from_tasks(tasks, TaskOrder::sequential);
    TaskSource b = a;
    a.shard(0, 2);
    b.shard(1, 2);
    CHECK(a.next().uri == tasks[0].uri);
    CHECK(a.next().uri == tasks[2].uri);
    CHECK(b.next().uri == tasks[1].uri);
    CHECK(b.next().uri == tasks[3].uri);
  }
  SECTION("shuffled visits every task once per pass, in a seeded order") {
    TaskSource s = TaskSource::from_tasks(tasks, TaskOrder::shuffled);
    s.seed(1);
    std::vector<std::string> pass1, pass2;
    for (int i = 0; i < 4; ++i) pass1.push_back(s.next().uri);
    for (int i = 0; i < 4; ++i) pass2.push_back(s.next().uri);
    CHECK(std::set<std::string>(pass1.begin(), pass1.end()).size() == 4);
    CHECK(std::set<std::string>(pass2.begin(), pass2.end()).size() == 4);
    TaskSource again = TaskSource::from_tasks(tasks, TaskOrder::shuffled);
    again.seed(1);
    for (int i = 0; i < 4; ++i) CHECK(again.next().uri == pass1[static_cast<std::size_t>(i)]);
  }
  SECTION("weighted draws in proportion to the weights") {
    TaskSource s = TaskSource::from_tasks(tasks, TaskOrder::weighted, {0, 3, 1, 0});
    s.seed(2);
    std::map<std::string, int> counts;
    for (int i = 0; i < 4000; ++i) ++counts[s.next().uri];
    CHECK(counts.count(tasks[0].uri) == 0);
    CHECK(counts.count(tasks[3].uri) == 0);
    CHECK(counts[tasks[1].uri] > 2700);
    CHECK(counts[tasks[2].uri] > 800);
  }
  SECTION("generated sources make a new matrix per task") {
    TaskSource s = TaskSource::generated({"gen-v1/uniform?rows=100&nnz_per_row=4"}, {});
    s.seed(3);
    std::set<std::string> uris;
    for (int i = 0; i < 20; ++i) uris.insert(s.next().uri);
    CHECK(uris.size() == 20);
    CHECK_THAT(*uris.begin(), sparserl::testing::has_substring("seed="));
    CHECK_THROWS_AS(TaskSource::generated({"suitesparse-v1/HB/west0067"}, {}),
                    std::invalid_argument);
    CHECK_THROWS_AS(TaskSource::generated({"gen-v1/nosuchkind"}, {}), std::invalid_argument);
  }
  SECTION("mixed sources hand out generated matrices at the set share") {
    const std::vector<std::string> generators = {"gen-v1/uniform?rows=100&nnz_per_row=4",
                                                 "gen-v1/banded?n=50&bandwidth=2"};
    TaskSource fixed = TaskSource::from_tasks(tasks, TaskOrder::shuffled);
    TaskSource s = TaskSource::mixed(fixed, generators, {}, 0.25);
    CHECK(s.describe() == "4 tasks, shuffled; 25% generated from 2 generators");
    CHECK(s.generated_share() == 0.25);
    CHECK_FALSE(s.is_generated());
    s.seed(5);
    fixed.seed(5);
    std::set<std::string> listed;
    for (const datasets::Task& t : tasks) listed.insert(t.uri);
    std::vector<std::string> first;
    int generated = 0;
    std::set<std::string> kinds;
    for (int i = 0; i < 4000; ++i) {
      const datasets::Task t = s.next();
      if (listed.count(t.uri) == 0) {
        ++generated;
        kinds.insert(t.uri.substr(0, t.uri.find('?')));
        CHECK_THAT(t.uri, sparserl::testing::has_substring("seed="));
      } else {
        // The fixed order advances only on its own draws: the same shuffled passes as alone.
        CHECK(t.uri == fixed.next().uri);
      }
      if (i < 50) first.push_back(t.uri);
    }
    CHECK(generated > 850);
    CHECK(generated < 1150);
    CHECK(kinds == std::set<std::string>{"gen-v1/banded", "gen-v1/uniform"});
    s.seed(5);
    for (const std::string& uri : first) CHECK(s.next().uri == uri);

    TaskSource all = TaskSource::mixed(fixed, generators, {}, 1.0);
    for (int i = 0; i < 20; ++i) CHECK(listed.count(all.next().uri) == 0);
    for (double share : {0.0, -0.5, 1.5}) {
      CHECK_THROWS_WITH(TaskSource::mixed(fixed, generators, {}, share),
                        sparserl::testing::has_substring("0 < share <= 1"));
    }
    CHECK_THROWS_WITH(TaskSource::mixed(fixed, {"suitesparse-v1/HB/west0067"}, {}, 0.5),
                      sparserl::testing::has_substring("'suitesparse-v1/HB/west0067'"));
    CHECK_THROWS_WITH(TaskSource::mixed(fixed, {"gen-v1/uniform?rows=10&colour=red"}, {}, 0.5),
                      sparserl::testing::has_substring("colour"));
    CHECK_THROWS_AS(TaskSource::mixed(TaskSource::generated(generators, {}), generators, {}, 0.5),
                    std::invalid_argument);
  }
  SECTION("bad lists and weights are refused") {
    CHECK_THROWS_AS(TaskSource::from_tasks({}, TaskOrder::sequential), std::invalid_argument);
    CHECK_THROWS_AS(TaskSource::from_tasks(tasks, TaskOrder::weighted, {1, 2}),
                    std::invalid_argument);
    CHECK_THROWS_AS(TaskSource::from_tasks(tasks, TaskOrder::weighted, {0, 0, 0, 0}),
                    std::invalid_argument);
    CHECK_THROWS_AS(TaskSource::from_tasks(tasks, TaskOrder::shuffled, {1, 1, 1, 1}),
                    std::invalid_argument);
    CHECK_THROWS_AS(TaskSource::from_uris({"not a uri"}, {}, TaskOrder::sequential),
                    datasets::InvalidUri);
  }
}

TEST_CASE("a task source reads a split file", "[env][tasks]") {
  const auto split = sparserl::testing::source_dir() / "datasets" / "splits" / "shared-v1.split";
  if (!std::filesystem::exists(split))
    sparserl::testing::skip("no datasets/splits/shared-v1.split");
  TaskSource s =
      TaskSource::from_split(split, datasets::SplitPart::train, {}, TaskOrder::sequential);
  CHECK(s.tasks().size() > 10);
  CHECK(s.next().uri.rfind("suitesparse-v1/", 0) == 0);
}
