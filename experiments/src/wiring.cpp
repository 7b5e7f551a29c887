// From a resolved Config to the project's own structs (runner.hpp): one function per struct. Where
// a library declares its knobs (datasets/knobs.hpp: the env's, the agents' and their algorithms',
// the reward's, the GPU protocol's, the evaluator's and the sandbox's), each config key fills its
// field through that declaration - the same one that gave the schema the key and that writes the
// agent's checkpoints - and the rest are mapped here key by key (relative paths resolve against
// the root). No value is parsed twice in two ways.
#include <utility>

#include "agent_sections.hpp"
#include "session.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/env/env_knobs.hpp"
#include "sparserl/experiments/runner.hpp"
#include "sparserl/experiments/stage_knobs.hpp"
#include "sparserl/reward/reward_knobs.hpp"

namespace fs = std::filesystem;

namespace sparserl::experiments {
namespace {

// Sets the knobs of `target` from the config's keys SECTION.PATH (the schema took those keys from
// the same declarations, so the values fit them).
template <typename Owner>
void read_knobs(const Config& config, const std::string& section,
                const datasets::Knobs<Owner>& knobs, Owner& target) {
  for (const datasets::KnobBinding<Owner>& b : knobs.bindings()) {
    try {
      knobs.set(target, b.spec.path, config.value(section + "." + b.spec.path));
    } catch (const std::invalid_argument& e) {
      throw RunnerError(section + "." + e.what());
    }
  }
}

// lexically_normal() without the trailing separator it leaves after "..": "/a/b/.." is "/a".
fs::path normal(const fs::path& p) {
  fs::path n = p.lexically_normal();
  if (n.has_relative_path() && n.filename().empty()) n = n.parent_path();
  return n;
}

}  // namespace

TrainConfig train_config(const Config& config) {
  TrainConfig t;
  read_knobs(config, "train", train_knobs(), t);
  return t;
}

EvalConfig eval_config(const Config& config) {
  EvalConfig e;
  read_knobs(config, "eval", eval_knobs(), e);
  return e;
}

CheckpointConfig checkpoint_config(const Config& config) {
  CheckpointConfig c;
  read_knobs(config, "checkpoints", checkpoint_knobs(), c);
  return c;
}

bool have_learned_agents() {
#if defined(SPARSERL_HAVE_AGENTS)
  return true;
#else
  return false;
#endif
}

fs::path resolve_path(const fs::path& root, const std::string& path) {
  if (path.empty()) return {};
  const fs::path p(path);
  return normal(p.is_absolute() ? p : root / p);
}

fs::path resolve_root(const Config& config, const std::optional<fs::path>& root_override) {
  if (root_override) return normal(fs::absolute(*root_override));
  const fs::path base =
      config.file().empty() ? fs::current_path() : fs::absolute(config.file()).parent_path();
  const std::string& root = config.string("experiment.root");
  return root.empty() ? normal(base) : resolve_path(base, root);
}

reward::SandboxLimits sandbox_limits(const Config& config) {
  reward::SandboxLimits limits;
  read_knobs(config, "sandbox", reward::sandbox_knobs(), limits);
  return limits;
}

reward::GpuProtocol gpu_protocol(const Config& config) {
  reward::GpuProtocol p;
  const datasets::Knobs<reward::GpuProtocol>& knobs = reward::gpu_protocol_knobs();
  read_knobs(config, "check", knobs.section("check"), p);
  read_knobs(config, "timing", knobs.section("timing"), p);
  read_knobs(config, "reward", knobs.section("", {"baseline"}), p);
  return p;
}

reward::RewardConfig reward_config(const Config& config) {
  const auto& speedups = config.real_list("reward.tier_speedups");
  const auto& values = config.real_list("reward.tier_values");
  if (speedups.size() != values.size()) {
    throw RunnerError("reward.tier_values: " + std::to_string(values.size()) + " values for " +
                      std::to_string(speedups.size()) +
                      " reward.tier_speedups (expected one value per threshold)");
  }
  reward::RewardConfig r;
  read_knobs(config, "reward", reward::reward_knobs(), r);
  if (auto problem = r.validate()) throw RunnerError("[reward]: " + *problem);
  return r;
}

reward::EvaluatorConfig evaluator_config(const Config& config, const fs::path& root) {
  reward::EvaluatorConfig c;
  read_knobs(config, "evaluator", reward::evaluator_knobs(), c);
  // compile_only starts no GPU worker at all (as env's make_evaluator_backend does).
  if (config.boolean("evaluator.compile_only")) c.gpu_workers = 0;
  c.worker_path = resolve_path(root, c.worker_path.string());
  if (c.cache_dir) c.cache_dir = resolve_path(root, c.cache_dir->string());
  c.sandbox = sandbox_limits(config);
  c.protocol = gpu_protocol(config);
  c.data_dir = data_dir(config, root);
  c.index_dirs = index_dirs(config, root);
  return c;
}

env::EnvConfig env_config(const Config& config) {
  env::EnvConfig e;
  read_knobs(config, "env", env::env_knobs(), e);
  e.reward = reward_config(config);
  e.seed = static_cast<std::uint64_t>(config.integer("experiment.seed"));
  if (auto problem = e.validate()) throw RunnerError("[env]: " + *problem);
  return e;
}

env::TaskTemplate task_template(const Config& config) {
  env::TaskTemplate what;
  what.op = *datasets::parse_op(config.string("data.op"));
  what.dtype = *datasets::parse_dtype(config.string("data.dtype"));
  what.k =
      what.op == datasets::Op::spmm ? static_cast<datasets::Index>(config.integer("data.k")) : 1;
  return what;
}

#if defined(SPARSERL_HAVE_AGENTS)
agents::AgentConfig agent_config(const Config& config, std::string_view stage) {
  if (stage != "pretrain" && stage != "sft" && stage != "rl") {
    throw std::invalid_argument("agent_config: unknown stage '" + std::string(stage) + "'");
  }
  agents::AgentConfig a;
  a.policy = agents::PolicyConfig::preset(config.string("policy.preset"));
  const datasets::Knobs<agents::AgentConfig> knobs = agents::agent_knobs();
  // agent knob <- config key: the preset's shape where the config gives one, and what the env
  // shows, which the policy reads.
  std::vector<std::pair<std::string, std::string>> keys = {
      {"policy.max_tokens", "env.max_tokens"},
      {"policy.nnz_samples", "env.nnz_samples"},
      {"policy.embedding_dim", "env.embedding_dim"},
      {"agent.mask", "env.mask"},
  };
  for (const char* shape : {"layers", "heads", "d_model", "d_ff"}) {
    if (config.integer(std::string("policy.") + shape) > 0) {
      keys.emplace_back(std::string("policy.") + shape, std::string("policy.") + shape);
    }
  }
  for (const auto& [agent_key, config_key] : keys) {
    try {
      knobs.set(a, agent_key, config.value(config_key));
    } catch (const std::invalid_argument& e) {
      throw RunnerError(config_key + ": " + e.what());
    }
  }
  for (const AgentKnobSection& section : agent_knob_sections()) {
    if (section.stage.empty() || section.stage == stage) {
      read_knobs(config, section.name, section.knobs, a);
    }
  }
  a.algorithm = stage == "rl" ? config.string("agent.algorithm") : "sft";
  const std::int64_t seed = config.integer("agent.seed");
  a.seed = static_cast<std::uint64_t>(seed < 0 ? config.integer("experiment.seed") : seed);
  if (auto problem = a.validate()) {
    throw RunnerError("the agent of stage " + std::string(stage) + ": " + *problem +
                      " (policy.* and env.* keys of the config)");
  }
  return a;
}
#endif

}  // namespace sparserl::experiments
