// A learning algorithm that lives in the test folder, to show (and check) that a new algorithm is
// one file and one registration line: "toy" imitates the best completion of each group - the
// log-likelihood of the highest-reward sample of every task, times its one knob, toy.weight - an
// expert-iteration step (RAFT, ReST) without a baseline or a reference. Linked into
// experiments_torch_tests, which trains it through `sparserl train`.
#include <torch/torch.h>

#include <map>
#include <memory>
#include <vector>

#include "sparserl/agents/algorithm.hpp"
#include "sparserl/agents/torch/learner.hpp"

namespace {

using namespace sparserl::agents;

struct ToySettings {
  double weight = 1.0;  // scales the best samples' log-likelihood
};

class Toy final : public Algorithm {
 public:
  [[nodiscard]] std::string_view name() const override { return "toy"; }
  [[nodiscard]] std::string_view summary() const override {
    return "A test's algorithm (tests/agents/toy_algorithm.cpp): imitate the best sample of each "
           "group.";
  }
  [[nodiscard]] sparserl::datasets::Knobs<AgentConfig> knobs() const override {
    return settings_knobs(sparserl::datasets::Knobs<ToySettings>().real(
        "weight", &ToySettings::weight, "weight of the best samples' log-likelihood", 0, 10));
  }

  sparserl::env::Statistics update(Learner& learner, std::span<const Rollout> rollouts) override {
    const ToySettings& settings = learner.config.settings.get<ToySettings>();
    std::map<int, const Rollout*> best;  // by group
    for (const Rollout& r : rollouts) {
      auto [found, fresh] = best.try_emplace(r.group, &r);
      if (!fresh && r.reward > found->second->reward) found->second = &r;
    }
    std::vector<Rollout> chosen;
    double best_reward = 0;
    for (const auto& [group, r] : best) {
      chosen.push_back(*r);
      best_reward += r->reward / static_cast<double>(best.size());
    }
    const SequenceBatch batch = rollout_batch(learner, chosen);
    learner.policy->train();
    const double lr = learner.current_lr();
    const TokenScores scores = learner.score(learner.policy, batch, false);
    const torch::Tensor loss = -settings.weight * masked_mean(scores.log_probs, batch.valid);
    loss.backward();
    const double grad_norm = learner.optimizer_step();
    return {{"toy/loss", loss.item<double>()},
            {"toy/best_reward", best_reward},
            {"toy/weight", settings.weight},
            {"grad_norm", grad_norm},
            {"learning_rate", lr}};
  }
};

const AlgorithmRegistration kToy("toy", [] { return std::make_unique<Toy>(); });

}  // namespace
