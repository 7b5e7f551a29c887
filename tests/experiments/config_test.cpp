// The experiment config: every default passes its own checks, bad files are rejected with the key
// path and the line, overrides go through the same checks, a resolved config reads back equal, and
// docs/config.md is what the schema renders. The learned agent's sections come from the agents'
// knob declarations, so a build without LibTorch lacks them and says so.
#include "sparserl/experiments/config.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "sparserl/experiments/runner.hpp"
#include "test_support.hpp"

using namespace sparserl::experiments;
using sparserl::testing::has_substring;

TEST_CASE("defaults are complete and every key is readable", "[experiments][config]") {
  Config c;
  for (const auto& key : experiment_schema().keys()) {
    CHECK_NOTHROW(c.value(key.path));
    CHECK_FALSE(c.is_set(key.path));
  }
  CHECK(c.string("data.op") == "spmv");
  CHECK(c.real("reward.r_eff") == 0.2);
  CHECK_THROWS_WITH(c.integer("data.nope"), has_substring("unknown config key 'data.nope'"));
}

TEST_CASE("a file sets values; every documented key is accepted", "[experiments][config]") {
  // A file that sets every key to its default, spelled out: the whole schema is accepted.
  const std::string resolved = Config().to_toml();
  Config all = Config::parse(resolved, "all.toml");
  CHECK(all == Config());
  for (const auto& key : experiment_schema().keys()) CHECK(all.is_set(key.path));

  Config c = Config::parse("[data]\nop = \"spmm\"\nk = 32\n[reward]\nr_eff = 1\n", "a.toml");
  CHECK(c.string("data.op") == "spmm");
  CHECK(c.integer("data.k") == 32);
  CHECK(c.real("reward.r_eff") == 1.0);  // an integer where a number is expected is fine
  CHECK(c.is_set("data.k"));
  CHECK_FALSE(c.is_set("data.dtype"));
}

TEST_CASE("bad configs are rejected with the key path and the line", "[experiments][config]") {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"[data]\nopp = \"spmv\"\n", "bad.toml:2: unknown key 'data.opp' (did you mean 'data.op'?)"},
      {"[dta]\nop = \"spmv\"\n", "bad.toml:1: unknown section 'dta'"},
      {"[data]\nk = \"eight\"\n", "bad.toml:2: key 'data.k': expected integer, got a string"},
      {"[data]\nk = 0\n", "bad.toml:2: key 'data.k': value 0 is outside [1, 1024]"},
      {"[data]\nop = \"spmx\"\n", "bad.toml:2: key 'data.op': 'spmx' is not one of: spmv, spmm"},
      {"\n\n[timing]\nenabled = 1\n",
       "bad.toml:4: key 'timing.enabled': expected boolean, got an integer"},
      {"[data]\nuris = [\"a\", 3]\n", "bad.toml:2: key 'data.uris': an element is an integer"},
      {"[reward]\ntier_speedups = [1.0, -2.0]\n",
       "key 'reward.tier_speedups': value -2.0 is outside"},
      {"[data]\nk = 3.5\n", "key 'data.k': expected integer, got a float"},
      {"[data\nk = 3\n", "bad.toml:1: "},
      {"seed = 3\n", "bad.toml:1: unknown key 'seed' (did you mean"},
      {"[evaluator]\ncompile_timeout_s = inf\n",
       "key 'evaluator.compile_timeout_s': expected a finite number"},
      // The runner's sections.
      {"[env]\nembedding_dim = 30\n",
       "bad.toml:2: key 'env.embedding_dim': value 30 is not a multiple of 4"},
      {"[data]\ngenerators = [\"gen-v1/banded?n=50\", \"suitesparse-v1/HB/west0067\"]\n",
       "bad.toml:2: key 'data.generators': element 1 'suitesparse-v1/HB/west0067': not a gen-v1 "
       "URI"},
      {"[data]\ngenerators = [\"gen-v1/banded?n=50&colour=red\"]\n",
       "key 'data.generators': element 0 'gen-v1/banded?n=50&colour=red': "},
      {"[data]\ngenerated_share = 0.0\n", "key 'data.generated_share': value 0.0 is outside"},
      {"[env]\nmask = \"grammar\"\n", "key 'env.mask': 'grammar' is not one of: none, syntax"},
      {"[train]\nstages = [\"pretrain\", \"ppo\"]\n",
       "bad.toml:2: key 'train.stages': 'ppo' is not one of: pretrain, sft, rl, eval"},
      {"[train]\nrl_updates = 0\n", "key 'train.rl_updates': value 0 is outside"},
      {"[eval]\nsamples = -1\n", "key 'eval.samples': value -1 is outside"},
      {"[bench]\nagents = [\"template\", \"oracle\"]\n",
       "key 'bench.agents': 'oracle' is not one of"},
      {"[evaluator]\ngpu_workers = -2\n",
       "key 'evaluator.gpu_workers': value -2 is outside [-1, 64]"},
      {"[sandbox]\ncpu_affinity = \"0,x\"\n",
       "bad.toml:2: key 'sandbox.cpu_affinity': sandbox.cpu_affinity"},
      {"[sandbox]\nopen_files = 4\n", "key 'sandbox.open_files': value 4 is outside [8, 1048576]"},
      {"[sandbox]\ncpu_seconds = 0\n",
       "bad.toml:2: key 'sandbox.cpu_seconds': sandbox.cpu_seconds"},
      {"[check]\ntolerance_factor = 8\n", "unknown key 'check.tolerance_factor'"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK_THROWS_WITH(Config::parse(c.text, "bad.toml"), has_substring(c.expected));
  }
  // The learned agent's sections; without LibTorch each is refused saying why.
  const Case agent_cases[] = {
      {"[agent.ppo]\nepochs = 0\n",
       "bad.toml:2: key 'agent.ppo.epochs': value 0 is outside [1, 1000000]"},
      {"[agent.grpo]\naggregation = \"mean\"\n",
       "key 'agent.grpo.aggregation': 'mean' is not one of"},
      {"[agent.ppo]\nclip_ration = 0.2\n",
       "bad.toml:2: unknown key 'agent.ppo.clip_ration' (did you mean 'agent.ppo.clip_ratio'?)"},
      {"[agent.dpo]\nbeta = 0.1\n", "bad.toml:1: unknown section 'agent.dpo'"},
      {"[agent]\ndevice = \"gpu\"\n",
       "bad.toml:2: key 'agent.device': 'gpu': expected auto, cpu, cuda or cuda:N"},
      {"[policy]\npreset = \"huge\"\n",
       "key 'policy.preset': 'huge' is not one of: tiny, small, medium"},
      {"[agent.model]\nlora_targets = [\"qkv\"]\n",
       "bad.toml:2: key 'agent.model.lora_targets': 'qkv' is not one of: q_proj, k_proj"},
  };
  for (const Case& c : agent_cases) {
    INFO(c.text);
    CHECK_THROWS_WITH(
        Config::parse(c.text, "bad.toml"),
        has_substring(have_learned_agents() ? c.expected : "this build has no LibTorch"));
  }
  // agent.algorithm names a registered algorithm (a build without LibTorch has none to name, and
  // refuses to run any).
  if (have_learned_agents()) {
    CHECK_THROWS_WITH(Config::parse("[agent]\nalgorithm = \"dqn\"\n", "bad.toml"),
                      has_substring("bad.toml:2: key 'agent.algorithm': 'dqn' is not one of: sft, "
                                    "reinforce, ppo, grpo"));
  }
}

TEST_CASE("overrides are checked like the file and win over it", "[experiments][config]") {
  Config c = Config::parse("[data]\nk = 16\n", "a.toml",
                           {"data.k=64", "data.op=spmm", "reward.shape=\"log2\"",
                            "data.uris=[\"gen-v1/diagonal?n=4\"]"});
  CHECK(c.integer("data.k") == 64);
  CHECK(c.string("data.op") == "spmm");  // a bare word is a string
  CHECK(c.string("reward.shape") == "log2");
  CHECK(c.string_list("data.uris") == std::vector<std::string>{"gen-v1/diagonal?n=4"});
  CHECK_THROWS_WITH(c.set("data.k=big"), has_substring("override 'data.k=big'"));
  CHECK_THROWS_WITH(c.set("data.kk=3"), has_substring("unknown key 'data.kk'"));
  CHECK_THROWS_WITH(c.set("data.k"), has_substring("expected section.key=value"));
  CHECK_THROWS_WITH(c.set("data.k=5000"), has_substring("outside [1, 1024]"));
}

TEST_CASE("the resolved config round-trips", "[experiments][config]") {
  Config c = Config::parse("[experiment]\nname = \"x \\\"quoted\\\"\"\n[reward]\nclip_max = 2.75\n",
                           "a.toml", {"data.index_dirs=[]", "timing.repetitions=7"});
  Config back = Config::parse(c.to_toml(), "resolved.toml");
  CHECK(back == c);
  CHECK(back.string("experiment.name") == "x \"quoted\"");
}

TEST_CASE("docs/config.md is what the schema renders", "[experiments][config]") {
  if (!have_learned_agents()) {
    sparserl::testing::skip("docs/config.md documents a build with the learned agents (LibTorch)");
  }
  std::ifstream in(sparserl::testing::source_dir() / "docs" / "config.md");
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  INFO("regenerate with: build/tools/sparserl config --markdown > docs/config.md");
  CHECK(text.str() == experiment_schema().render_markdown());
}

TEST_CASE("every config in experiments/configs is accepted", "[experiments][config]") {
  namespace fs = std::filesystem;
  const fs::path dir = sparserl::testing::source_dir() / "experiments" / "configs";
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().extension() != ".toml") continue;
    const fs::path name = e.path().lexically_relative(dir);
    names.push_back(name.generic_string());
    INFO(e.path().string());
    if (!have_learned_agents() &&
        sparserl::testing::read_bytes(e.path()).find("\n[agent") != std::string::npos) {
      CHECK_THROWS_WITH(Config::load(e.path()), has_substring("this build has no LibTorch"));
      continue;
    }
    const Config c = Config::load(e.path());
    CHECK(c.file() == e.path());
    // Shipped configs keep their paths relative: the project root, then paths below it.
    // (experiments/configs/study/ is one folder deeper)
    std::string root = "../..";
    const fs::path folder = name.parent_path();
    for ([[maybe_unused]] const fs::path& part : folder) root += "/..";
    CHECK(c.string("experiment.root") == root);
    if (!c.string("data.split").empty()) {
      CHECK(fs::is_regular_file(e.path().parent_path() / c.string("experiment.root") /
                                c.string("data.split")));
    }
    CHECK(Config::parse(c.to_toml(), "resolved.toml") == c);
  }
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"bench-spmm.toml",
                                          "bench-spmv.toml",
                                          "bench-v2-large-learned.toml",
                                          "bench-v2-large.toml",
                                          "bench-v2-small.toml",
                                          "grpo.toml",
                                          "hf-grpo-pilot.toml",
                                          "hf-grpo.toml",
                                          "ppo.toml",
                                          "quickstart.toml",
                                          "reinforce.toml",
                                          "sft.toml",
                                          "study/bench.toml",
                                          "study/grpo-dr.toml",
                                          "study/grpo-dynamic.toml",
                                          "study/grpo-seq-mean.toml",
                                          "study/grpo-symmetric.toml",
                                          "study/grpo.toml",
                                          "study/ppo.toml",
                                          "study/reinforce.toml",
                                          "study/sft.toml"});
}
