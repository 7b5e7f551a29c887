// The learning algorithms behind PolicyAgent::update, and the registry that names them. An
// algorithm is a class in a file of its own (sft.cpp, reinforce.cpp, ppo.cpp, grpo.cpp; a test's
// toy in tests/agents/) with a name, its knobs - declared in that file, bound to its own struct in
// AgentConfig::settings - and one update over a batch of rollouts through the Learner
// (torch/learner.hpp). Registering it is one line, AlgorithmRegistry::add("name", factory); from
// then on `agent.algorithm = "name"` selects it, its knobs are keys of the experiment config
// ([agent.name]) and of checkpoint.txt ("name.key"), and docs/config.md lists them. No LibTorch in
// this header: the Learner is only named here.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sparserl/agents/config.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/datasets/knobs.hpp"
#include "sparserl/env/agent.hpp"

namespace sparserl::agents {

struct Learner;  // torch/learner.hpp

class Algorithm {
 public:
  virtual ~Algorithm() = default;

  // The name agent.algorithm selects it by ("grpo"), and one paragraph on what it is: the doc of
  // its config section [agent.NAME].
  [[nodiscard]] virtual std::string_view name() const = 0;
  [[nodiscard]] virtual std::string_view summary() const = 0;
  // Its knobs, bound to the AgentConfig (its own struct in AgentConfig::settings), paths relative
  // to its name ("epsilon_high" is "grpo.epsilon_high" in a checkpoint). None unless declared.
  [[nodiscard]] virtual datasets::Knobs<AgentConfig> knobs() const { return {}; }
  // False for an algorithm that learns from examples rather than rollouts (SFT): the RL stage
  // refuses it.
  [[nodiscard]] virtual bool learns_from_rollouts() const { return true; }
  // Whether update() can learn from rollouts sampled by the policy as it was one update before: it
  // weighs them by an importance ratio against the old policy, and with
  // Learner::old_log_probs_recorded takes the old policy's log-probabilities from the completions
  // (recorded at sampling) instead of scoring them with the current weights. What lets the RL stage
  // sample the next batch while the last one is evaluated (train.overlap_generation).
  [[nodiscard]] virtual bool corrects_stale_samples() const { return false; }
  // Whether update() reads the frozen reference policy (a KL term): the first update freezes the
  // policy as it is then, unless a stage set a reference before.
  [[nodiscard]] virtual bool wants_reference(const AgentConfig& /*config*/) const { return false; }
  // The value head's learning rate as a multiple of the policy's; anything but 1 gives the value
  // head an AdamW group of its own (PPO's separate critic learning rate).
  [[nodiscard]] virtual double value_head_lr_scale(const AgentConfig& /*config*/) const {
    return 1.0;
  }
  // One update of the policy from finished rollouts (samples of one task share Rollout::group):
  // the algorithm's statistics. PolicyAgent adds the rollouts' own (reward, completions, env).
  virtual env::Statistics update(Learner& learner, std::span<const Rollout> rollouts) = 0;
};

// An algorithm's knobs declared over its own struct (Knobs<GrpoConfig>), bound to that struct in
// AgentConfig::settings: what Algorithm::knobs() returns.
template <typename Settings>
datasets::Knobs<AgentConfig> settings_knobs(const datasets::Knobs<Settings>& knobs) {
  datasets::Knobs<AgentConfig> out;
  out.nest(
      "", [](auto& config) -> auto& { return config.settings.template get<Settings>(); }, knobs);
  return out;
}

using AlgorithmFactory = std::function<std::unique_ptr<Algorithm>()>;

// The algorithms agent.algorithm can name: this library's (sft, reinforce, ppo, grpo, in that
// order, registered on first use) and any added since, in the order they were added.
class AlgorithmRegistry {
 public:
  // Registers `make` under `name`, which must be the name its algorithms give; std::logic_error
  // when the name is taken or differs.
  static void add(const std::string& name, AlgorithmFactory make);
  // A new instance of a registered algorithm; std::invalid_argument naming the key and listing
  // the registered names for any other.
  static std::unique_ptr<Algorithm> make(std::string_view name);
  // The registered algorithm of that name (for its knobs and summary), or nullptr.
  static const Algorithm* find(std::string_view name);
  static std::vector<std::string> names();
  // The names of those that learn from rollouts (what the RL stage accepts), in names() order.
  static std::vector<std::string> rollout_learners();
};

// Registers an algorithm during static initialisation, one line in the file that defines it:
//   const AlgorithmRegistration kToy("toy", [] { return std::make_unique<Toy>(); });
// That file must be linked into the executable itself: a static library drops objects that
// nothing refers to (this library's own algorithms are listed in algorithm_registry.cpp instead).
struct AlgorithmRegistration {
  AlgorithmRegistration(const std::string& name, AlgorithmFactory make) {
    AlgorithmRegistry::add(name, std::move(make));
  }
};

}  // namespace sparserl::agents
