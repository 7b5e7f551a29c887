// The runner's wiring: a config at its defaults fills the project's structs with their own
// defaults (so the schema and the code cannot drift apart), every agent key is reachable from the
// config, relative paths resolve against the root, and configs that cannot run are refused - naming
// the key - before a run directory is made.
#include "sparserl/experiments/runner.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "catch.hpp"
#include "sparserl/experiments/config.hpp"
#include "test_support.hpp"

#if defined(SPARSERL_HAVE_AGENTS)
#include "sparserl/agents/config.hpp"
#endif

namespace fs = std::filesystem;
using sparserl::experiments::Config;
using sparserl::experiments::RunnerError;
using sparserl::testing::has_substring;
namespace ex = sparserl::experiments;

TEST_CASE("a default config fills the structs with their own defaults", "[experiments][runner]") {
  const Config c;
  CHECK(ex::sandbox_limits(c) == sparserl::reward::SandboxLimits{});
  CHECK(ex::gpu_protocol(c) == sparserl::reward::GpuProtocol{});

  const sparserl::reward::RewardConfig r = ex::reward_config(c);
  const sparserl::reward::RewardConfig d;
  CHECK(r.compile_pass == d.compile_pass);
  CHECK(r.compile_fail == d.compile_fail);
  CHECK(r.test_pass == d.test_pass);
  CHECK(r.test_fail == d.test_fail);
  CHECK(r.r_eff == d.r_eff);
  CHECK(r.r_pen == d.r_pen);
  CHECK(r.shape == d.shape);
  REQUIRE(r.tiers.size() == d.tiers.size());
  for (std::size_t i = 0; i < r.tiers.size(); ++i) {
    CHECK(r.tiers[i].min_speedup == d.tiers[i].min_speedup);
    CHECK(r.tiers[i].value == d.tiers[i].value);
  }
  CHECK(r.clip_min == d.clip_min);
  CHECK(r.clip_max == d.clip_max);

  const sparserl::reward::EvaluatorConfig e = ex::evaluator_config(c, "/project");
  const sparserl::reward::EvaluatorConfig de;
  CHECK(e.worker_path == de.worker_path);
  CHECK(e.arch == de.arch);
  CHECK(e.nvrtc_options == de.nvrtc_options);
  CHECK(e.compile_workers == de.compile_workers);
  CHECK(e.gpu_workers == -1);  // one per visible GPU, as EvaluatorConfig means it
  CHECK(e.gpu_workers == de.gpu_workers);
  CHECK(e.compile_deadline == de.compile_deadline);
  CHECK(e.gpu_deadline == de.gpu_deadline);
  CHECK(e.gpu_deadline_factor == de.gpu_deadline_factor);
  CHECK(e.gpu_deadline_floor == de.gpu_deadline_floor);
  CHECK(e.gpu_deadline_calibration == de.gpu_deadline_calibration);
  CHECK(e.startup_deadline == de.startup_deadline);
  CHECK(e.recycle_after == de.recycle_after);
  CHECK(e.sandbox == de.sandbox);
  CHECK(e.compile_cache_entries == de.compile_cache_entries);
  CHECK(e.result_cache_entries == de.result_cache_entries);
  CHECK(e.cache_dir == de.cache_dir);
  CHECK(e.protocol == de.protocol);
  CHECK(e.matrix_cache_entries == de.matrix_cache_entries);
  CHECK(e.evaluation_threads == de.evaluation_threads);
  const sparserl::reward::ProgramLimits dl;
  CHECK(e.limits.max_program_bytes == dl.max_program_bytes);
  CHECK(e.limits.max_block == dl.max_block);
  CHECK(e.limits.max_shared_bytes == dl.max_shared_bytes);
  CHECK(e.limits.max_registers_per_thread == dl.max_registers_per_thread);
  CHECK(e.limits.max_spill_bytes == dl.max_spill_bytes);
  CHECK(e.limits.max_stored_entries == dl.max_stored_entries);

  const sparserl::env::EnvConfig env = ex::env_config(c);
  const sparserl::env::EnvConfig denv;
  CHECK(env.max_tokens == denv.max_tokens);
  CHECK(env.mask == denv.mask);
  CHECK(env.observation.nnz_samples == denv.observation.nnz_samples);
  CHECK(env.observation.embedding_dim == denv.observation.embedding_dim);
  CHECK(env.observation.scaling == denv.observation.scaling);
  CHECK(env.observation.scale == denv.observation.scale);
  CHECK(env.observation.stratification == denv.observation.stratification);
  CHECK(env.seed == denv.seed);
  CHECK(env.resolved_truncation_reward() == denv.resolved_truncation_reward());
}

TEST_CASE("sandbox and evaluator keys reach the structs", "[experiments][runner]") {
  const Config c = Config::parse(
      "[sandbox]\ncpu_seconds = -1\naddress_space_bytes = 1024\ncpu_affinity = \"0,2-3\"\n"
      "close_descriptors = false\n[evaluator]\ngpu_workers = 0\ncompile_timeout_s = 1.5\n"
      "cache_dir = \"cache\"\nworker = \"/opt/w\"\ngpu_timeout_calibrate = false\n"
      "[data]\nindex_dirs = [\".\", \"absent\"]\n",
      "s.toml");
  const sparserl::reward::SandboxLimits s = ex::sandbox_limits(c);
  CHECK(s.cpu_seconds == sparserl::reward::SandboxLimits::kUnlimited);
  CHECK(s.address_space_bytes == 1024);
  CHECK(s.cpu_affinity == std::vector<int>{0, 2, 3});
  CHECK_FALSE(s.close_descriptors);
  const fs::path root = sparserl::testing::source_dir();
  const sparserl::reward::EvaluatorConfig e = ex::evaluator_config(c, root);
  CHECK(e.gpu_workers == 0);
  CHECK(e.compile_deadline == std::chrono::milliseconds(1500));
  CHECK_FALSE(e.gpu_deadline_calibration);
  CHECK(e.cache_dir == root / "cache");
  CHECK(e.worker_path == "/opt/w");
  CHECK(e.index_dirs == std::vector<fs::path>{root.lexically_normal()});  // "absent" is skipped
  CHECK(ex::evaluator_config(Config::parse("[evaluator]\ncompile_only = true\n", "c.toml"), root)
            .gpu_workers == 0);
}

TEST_CASE("relative paths resolve against the root", "[experiments][runner]") {
  const fs::path dir = sparserl::testing::scratch_dir("runner_root");
  fs::create_directories(dir / "a" / "b");
  std::ofstream(dir / "a" / "b" / "x.toml") << "[experiment]\nroot = \"../..\"\n";
  std::ofstream(dir / "a" / "y.toml") << "[experiment]\nname = \"y\"\n";
  const Config x = Config::load(dir / "a" / "b" / "x.toml");
  CHECK(ex::resolve_root(x, std::nullopt) == dir.lexically_normal());
  CHECK(ex::resolve_root(x, fs::path("/elsewhere")) == "/elsewhere");
  CHECK(ex::resolve_root(Config::load(dir / "a" / "y.toml"), std::nullopt) == dir / "a");
  CHECK(ex::resolve_path("/r", "datasets/s.split") == "/r/datasets/s.split");
  CHECK(ex::resolve_path("/r/p", "../shared/matrices") == "/r/shared/matrices");
  CHECK(ex::resolve_path("/r", "/abs/x") == "/abs/x");
  CHECK(ex::resolve_path("/r", "").empty());
}

TEST_CASE("tasks come from a split part or a URI list", "[experiments][runner]") {
  const fs::path root = sparserl::testing::source_dir();
  const Config split = Config::parse(
      "[data]\nsplit = \"datasets/splits/shared-v1.split\"\nmax_tasks = 3\n", "s.toml");
  const auto train = ex::config_tasks(split, root, "train", 3);
  REQUIRE(train.size() == 3);
  CHECK(train[0].uri == "suitesparse-v1/Bai/cryg2500");
  CHECK(ex::config_tasks(split, root, "val", 0).size() == 11);
  const Config uris =
      Config::parse("[data]\nuris = [\"gen-v1/diagonal?n=4\"]\nop = \"spmm\"\nk = 16\n", "u.toml");
  const auto tasks = ex::config_tasks(uris, root, "train", 0);
  REQUIRE(tasks.size() == 1);
  CHECK(tasks[0].str() == "gen-v1/diagonal?n=4 spmm f32 k=16");
  CHECK_THROWS_WITH(ex::config_tasks(Config(), root, "train", 0),
                    has_substring("data.split and data.uris are both empty"));
  CHECK_THROWS_WITH(
      ex::config_tasks(Config::parse("[data]\nsplit = \"nope.split\"\n", "n.toml"), root, "val", 0),
      has_substring("data.split: " + (root / "nope.split").string() + " is not a file"));
  CHECK_THROWS_WITH(ex::reward_config(Config::parse("[reward]\ntier_values = [1.0]\n", "r.toml")),
                    has_substring("reward.tier_values: 1 values for 3 reward.tier_speedups"));
}

TEST_CASE("configs that cannot run are refused before a run directory exists",
          "[experiments][runner]") {
  const fs::path out = sparserl::testing::scratch_dir("runner_refused");
  ex::RunnerOptions options;
  options.runs_dir = out / "runs";
  options.root = sparserl::testing::source_dir();
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"[train]\nstages = [\"sft\", \"pretrain\"]\n",
       "train.stages: 'pretrain' after 'sft' (expected the order pretrain, sft, rl, eval"},
      {"[train]\nstages = [\"eval\"]\n[data]\nuris = [\"gen-v1/diagonal?n=4\"]\n",
       "train.stages: eval needs a policy"},
      {"[train]\nstages = [\"rl\"]\n", "data.split and data.uris are both empty"},
      {"[train]\nstages = [\"pretrain\"]\ncorpus = \"no/such/dataset.h5\"\n", "train.corpus: "},
      {"[train]\nstages = [\"pretrain\"]\n[policy]\nheads = 3\n", "must be a multiple of heads"},
      {"[train]\nstages = [\"pretrain\"]\n[env]\nmax_tokens = 4\n", "max_tokens"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    if (!ex::have_learned_agents()) {  // refused too, the stage order first, then for LibTorch
      if (std::string(c.text).find("[policy]") != std::string::npos) {
        // The policy's keys are the agents' declarations, absent from such a build.
        CHECK_THROWS_WITH(Config::parse(c.text, "bad.toml"),
                          has_substring("this build has no LibTorch"));
        continue;
      }
      CHECK_THROWS_AS(ex::run_training(Config::parse(c.text, "bad.toml"), options), RunnerError);
      continue;
    }
    CHECK_THROWS_WITH(ex::run_training(Config::parse(c.text, "bad.toml"), options),
                      has_substring(c.expected));
  }
  const Config bench = Config::parse(
      "[bench]\nagents = [\"template\", \"sft\"]\n[data]\nuris = [\"gen-v1/diagonal?n=4\"]\n",
      "b.toml");
  CHECK_THROWS_WITH(
      ex::run_bench(bench, options),
      has_substring(ex::have_learned_agents() ? "bench.sft_checkpoint: empty" : "no LibTorch"));
  // A measurement store that is not there (issue 25's learned template search).
  const Config missing_store = Config::parse(
      "[bench]\nagents = [\"template\"]\ntemplate_measurements = \"no/such/store.jsonl\"\n"
      "[data]\nuris = [\"gen-v1/diagonal?n=4\"]\n",
      "m.toml");
  CHECK_THROWS_WITH(ex::run_bench(missing_store, options),
                    has_substring("bench.template_measurements: ") &&
                        has_substring("no/such/store.jsonl does not exist"));
  CHECK_FALSE(fs::exists(out / "runs"));
}

#if defined(SPARSERL_HAVE_AGENTS)
TEST_CASE("every agent key is set from the config, defaults equal", "[experiments][runner]") {
  namespace ag = sparserl::agents;
  const Config c;
  const auto mapped = ag::to_key_values(ex::agent_config(c, "rl"));
  const auto defaults = ag::to_key_values(ag::AgentConfig{});
  // Where the runner's defaults differ from the bare struct's, on purpose.
  const std::set<std::string> differ = {
      "policy.layers",     "policy.heads", "policy.d_model", "policy.d_ff",  // preset "small"
      "policy.max_tokens",  // env.max_tokens (EnvConfig's 4096)
      "optimizer.lr",       // agent.rl.lr = 1e-5
      "agent.algorithm",    // grpo
  };
  for (const auto& [key, value] : defaults) {
    INFO(key);
    if (differ.count(key) != 0) continue;
    CHECK(mapped.at(key) == value);
  }
  CHECK(mapped.at("agent.algorithm") == "grpo");
  CHECK(mapped.at("policy.d_model") == "256");
  CHECK(mapped.at("policy.max_tokens") == "4096");
  CHECK(ag::to_key_values(ex::agent_config(c, "pretrain")).at("optimizer.lr") ==
        defaults.at("optimizer.lr"));
  CHECK(ag::to_key_values(ex::agent_config(c, "sft")).at("agent.algorithm") == "sft");

  // Every agent key has its config key (the derived ones aside), and a value set there arrives.
  const std::set<std::string> derived = {
      "policy.feature_dim", "policy.vocab_size",  "sampling.greedy",
      "agent.algorithm",    "agent.seed",         "agent.mask",
      "policy.max_tokens",  "policy.nnz_samples", "policy.embedding_dim"};
  for (const auto& [key, value] : defaults) {
    if (derived.count(key) != 0) continue;
    INFO(key);
    const std::string section = key.substr(0, key.find('.'));
    const std::string name = key.substr(key.find('.') + 1);
    std::string config_key = section == "policy" ? key : "agent." + key;
    if (section == "optimizer" && c.schema().find(config_key) == nullptr) {
      config_key = "agent.rl." + name;
    }
    if (section == "agent") config_key = key;
    CHECK(c.schema().find(config_key) != nullptr);
  }
  const Config set = Config::parse(
      "[experiment]\nseed = 9\n[agent]\nseed = -1\nalgorithm = \"ppo\"\n[agent.ppo]\nlambda = "
      "0.9\n[agent.grpo]\naggregation = \"seq_mean_token_sum\"\n[agent.reinforce]\nkl_estimator "
      "= \"k3\"\n[agent.optimizer]\nbeta2 = 0.99\n[agent.sampling]\ntop_k = 7\n[agent.rl]\nlr = "
      "2e-6\nschedule = \"cosine\"\n[env]\nmask = \"none\"\nnnz_samples = 16\n[policy]\npreset "
      "= \"tiny\"\nd_model = 128\n[agent.model]\nlora_rank = 8\nlora_targets = [\"q_proj\", "
      "\"v_proj\"]\nprompt = \"text\"\n",
      "set.toml");
  const auto a = ag::to_key_values(ex::agent_config(set, "rl"));
  CHECK(a.at("agent.seed") == "9");
  CHECK(a.at("agent.algorithm") == "ppo");
  CHECK(a.at("ppo.lambda") == "0.90000000000000002");
  CHECK(a.at("grpo.aggregation") == "seq_mean_token_sum");
  CHECK(a.at("model.lora_rank") == "8");
  CHECK(a.at("model.lora_targets") == "q_proj,v_proj");
  CHECK(a.at("model.prompt") == "text");
  CHECK(a.at("reinforce.kl_estimator") == "k3");
  CHECK(a.at("optimizer.beta2") == "0.98999999999999999");
  CHECK(a.at("sampling.top_k") == "7");
  CHECK(a.at("optimizer.schedule") == "cosine");
  CHECK(a.at("agent.mask") == "none");
  CHECK(a.at("policy.nnz_samples") == "16");
  CHECK(a.at("policy.d_model") == "128");
  CHECK(a.at("policy.layers") == "2");  // the tiny preset's
}
#endif
