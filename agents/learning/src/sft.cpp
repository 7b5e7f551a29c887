// Supervised fine-tuning: the matrix observation is the prompt (no natural-language prompt, as in
// the method), the template search's best program for the task is the target, and the loss is the
// mean cross-entropy over the program's tokens only - the prefix slots are inputs, never targets.
// Each epoch may draw a fresh sample of K nonzeros per matrix (the same matrix seen through
// different samples), which is cheap augmentation for a small set of pairs. The SFT-only policy is
// the baseline every RL algorithm is compared with. As an Algorithm (algorithm.hpp) SFT has no
// update from rollouts: it learns from examples (sft_step); its stage's knob is declared here.
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <map>
#include <stdexcept>

#include "sparserl/agents/torch/learner.hpp"
#include "sparserl/agents/training.hpp"

namespace sparserl::agents {

namespace {

SequenceBatch example_batch(Learner& learner, std::span<const SftExample> examples) {
  std::vector<const env::MatrixObservation*> matrices;
  std::vector<const std::vector<env::TokenId>*> sequences;
  for (const SftExample& e : examples) {
    if (!e.matrix) throw std::invalid_argument("sft: an example without a matrix observation");
    matrices.push_back(e.matrix.get());
    sequences.push_back(&e.tokens);
  }
  return learner.sequence_batch(matrices, sequences, {});
}

class Sft final : public Algorithm {
 public:
  [[nodiscard]] std::string_view name() const override { return "sft"; }
  [[nodiscard]] std::string_view summary() const override {
    return "SFT: the matrix observation as the prompt, the teacher's program as the target.";
  }
  [[nodiscard]] bool learns_from_rollouts() const override { return false; }
  env::Statistics update(Learner& /*learner*/, std::span<const Rollout> /*rollouts*/) override {
    throw std::logic_error(
        "update: the sft agent learns from examples (sft_step), not from rollouts");
  }
};

// The seed of pair i's observation in an epoch (0 when observations are not resampled).
std::uint64_t observation_seed(std::uint64_t base, std::size_t index, std::int64_t epoch) {
  std::uint64_t state = base ^ (0x9e3779b97f4a7c15ULL * (static_cast<std::uint64_t>(index) + 1));
  state ^= datasets::splitmix64(state) + static_cast<std::uint64_t>(epoch);
  return datasets::splitmix64(state);
}

}  // namespace

std::unique_ptr<Algorithm> make_sft_algorithm() { return std::make_unique<Sft>(); }

const datasets::Knobs<SftConfig>& sft_stage_knobs() {
  static const datasets::Knobs<SftConfig> knobs = datasets::Knobs<SftConfig>().boolean(
      "resample_observations", &SftConfig::resample_observations,
      "draw a fresh sample of K nonzeros per epoch (augmentation), else one per pair");
  return knobs;
}

env::Statistics sft_step(Learner& learner, std::span<const SftExample> examples) {
  if (examples.empty()) throw std::invalid_argument("sft_step: an empty batch");
  return next_token_step(learner, example_batch(learner, examples), true);
}

double sft_loss(Learner& learner, std::span<const SftExample> examples) {
  if (examples.empty()) return 0.0;
  torch::NoGradGuard no_grad;
  learner.policy->eval();
  return next_token_loss(learner, example_batch(learner, examples)).item<double>();
}

StageResult run_sft(const SftConfig& config, const std::vector<SftPair>& pairs,
                    const ObservationFn& observe, const env::Tokenizer& tokenizer,
                    const StatisticsCallback& on_statistics,
                    const std::vector<SftPair>& validation) {
  if (config.output_dir.empty()) throw std::invalid_argument("sft: output_dir is required");
  if (config.steps < 1 || config.batch_size < 1)
    throw std::invalid_argument("sft: steps and batch_size must be positive");
  if (!observe) throw std::invalid_argument("sft: no observation function");

  const Shard share = batch_share(config.batch_size, config.group, "sft: batch_size");
  StageResult result;
  AgentConfig agent_config = config.agent;
  agent_config.algorithm = "sft";
  std::unique_ptr<PolicyAgent> agent =
      open_stage_agent(config.output_dir, agent_config, tokenizer.vocabulary_ptr(),
                       config.init_checkpoint, result, config.group);
  tokenizer.vocabulary().require_digest(agent->vocabulary().digest(), "the tokenizer of SFT");

  // The programs as the agent's tokens (the closed vocabulary's, or an HF model's BPE tokens of
  // the program's grammar form).
  struct Target {
    datasets::Task task;
    std::vector<env::TokenId> tokens;
  };
  std::size_t skipped = 0;
  auto encode_all = [&](const std::vector<SftPair>& list) {
    std::vector<Target> out;
    for (const SftPair& pair : list) {
      if (auto tokens =
              agent->tokens().program_tokens(pair.program, config.agent.policy.max_tokens)) {
        out.push_back({pair.task, std::move(*tokens)});
      } else {
        ++skipped;
      }
    }
    return out;
  };
  const std::vector<Target> targets = encode_all(pairs);
  const std::vector<Target> held_out = encode_all(validation);
  if (targets.empty()) {
    throw std::invalid_argument("sft: none of the " + std::to_string(pairs.size()) +
                                " pairs tokenizes within policy.max_tokens = " +
                                std::to_string(config.agent.policy.max_tokens));
  }
  std::vector<SftExample> validation_examples;
  for (std::size_t i = 0; i < held_out.size(); ++i) {
    validation_examples.push_back(
        {observe(held_out[i].task, observation_seed(~config.observation_seed, i, 0)),
         held_out[i].tokens});
  }

  // Without resampling each pair keeps one observation for the whole run.
  std::map<std::size_t, std::shared_ptr<const env::MatrixObservation>> fixed;
  // Each step reports its wall time and the part of it spent observing its matrices (sampling
  // the nonzeros, and reading or generating a matrix the run's store no longer holds: 17 s of a
  // step on the large regime before the store was bounded by bytes).
  const auto sft_batch = [&](std::int64_t step) {
    const auto step_start = std::chrono::steady_clock::now();
    std::vector<SftExample> batch;
    const std::vector<BatchItem> items =
        epoch_batch(agent->config().seed, targets.size(), step, config.batch_size);
    for (std::size_t i = share.begin; i < share.end; ++i) {
      const BatchItem& item = items[i];
      const Target& target = targets[item.index];
      std::shared_ptr<const env::MatrixObservation> matrix;
      if (config.resample_observations) {
        matrix =
            observe(target.task, observation_seed(config.observation_seed, item.index, item.epoch));
      } else {
        auto found = fixed.find(item.index);
        if (found == fixed.end()) {
          found = fixed
                      .emplace(item.index,
                               observe(target.task,
                                       observation_seed(config.observation_seed, item.index, 0)))
                      .first;
        }
        matrix = found->second;
      }
      batch.push_back({std::move(matrix), target.tokens});
    }
    const std::chrono::duration<double> observing = std::chrono::steady_clock::now() - step_start;
    env::Statistics stats = agent->sft_step(batch);
    stats.emplace_back("perf/observation_seconds", observing.count());
    stats.emplace_back("perf/step_seconds",
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count());
    return stats;
  };
  const auto data_statistics = [&](env::Statistics& stats) {
    if (!validation_examples.empty())
      stats.emplace_back("val_loss", agent->sft_loss(validation_examples));
    stats.emplace_back("data/pairs", static_cast<double>(targets.size()));
    stats.emplace_back("data/skipped", static_cast<double>(skipped));
  };
  return run_supervised_steps(*agent, stage_loop("sft", config.steps, config), config.batch_size,
                              targets.size(), std::move(result), sft_batch, data_statistics,
                              on_statistics);
}

}  // namespace sparserl::agents
