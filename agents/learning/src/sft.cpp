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
  learner.policy->train();
  const SequenceBatch batch = example_batch(learner, examples);
  const double lr = learner.current_lr();
  const PolicyOutput out = learner.policy->forward(batch.prefix, batch.inputs, batch.valid);
  const torch::Tensor log_softmax = torch::log_softmax(out.logits, -1);
  const torch::Tensor loss =
      -masked_mean(log_softmax.gather(-1, batch.targets.unsqueeze(-1)).squeeze(-1), batch.valid);
  loss.backward();
  const double grad_norm = learner.optimizer_step();
  const double accuracy =
      masked_mean((log_softmax.argmax(-1) == batch.targets).to(torch::kFloat), batch.valid)
          .item<double>();
  const auto tokens = batch.valid.sum().item<std::int64_t>();
  ++learner.counters.updates;
  learner.counters.samples += batch.size();
  learner.counters.tokens += tokens;
  const double value = loss.item<double>();
  return {{"loss", value},
          {"perplexity", std::exp(value)},
          {"mean_token_accuracy", accuracy},
          {"grad_norm", grad_norm},
          {"learning_rate", lr},
          {"tokens", static_cast<double>(tokens)},
          {"global_step", static_cast<double>(learner.counters.optimizer_steps)}};
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

  struct Target {
    datasets::Task task;
    std::vector<env::TokenId> tokens;
  };
  std::size_t skipped = 0;
  auto encode_all = [&](const std::vector<SftPair>& list) {
    std::vector<Target> out;
    for (const SftPair& pair : list) {
      try {
        env::EncodedProgram encoded = tokenizer.encode(pair.program);
        if (static_cast<int>(encoded.tokens.size()) <= config.agent.policy.max_tokens) {
          out.push_back({pair.task, std::move(encoded.tokens)});
          continue;
        }
      } catch (const env::TokenizeError&) {
      }
      ++skipped;
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

  StageResult result;
  std::unique_ptr<PolicyAgent> agent;
  if (std::filesystem::exists(latest_checkpoint(config.output_dir) / "checkpoint.txt")) {
    agent = PolicyAgent::from_checkpoint(latest_checkpoint(config.output_dir), config.agent.device);
    result.resumed = true;
  } else {
    AgentConfig agent_config = config.agent;
    agent_config.algorithm = "sft";
    agent = std::make_unique<PolicyAgent>(agent_config, tokenizer.vocabulary_ptr());
    if (config.init_checkpoint) agent->load_weights(*config.init_checkpoint);
  }
  tokenizer.vocabulary().require_digest(agent->vocabulary().digest(), "the tokenizer of SFT");

  // Without resampling each pair keeps one observation for the whole run.
  std::map<std::size_t, std::shared_ptr<const env::MatrixObservation>> fixed;
  const auto start = std::chrono::steady_clock::now();
  std::int64_t tokens_since = 0;
  for (std::int64_t step = agent->counters().updates; step < config.steps; ++step) {
    std::vector<SftExample> batch;
    for (const BatchItem& item :
         epoch_batch(agent->config().seed, targets.size(), step, config.batch_size)) {
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
    env::Statistics stats = agent->sft_step(batch);
    tokens_since += static_cast<std::int64_t>(find_statistic(stats, "tokens"));
    const std::int64_t done = step + 1;
    if (on_statistics && (done % std::max(1, config.log_every) == 0 || done == config.steps)) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      stats.emplace_back("epoch", static_cast<double>(done * config.batch_size) /
                                      static_cast<double>(targets.size()));
      if (!validation_examples.empty())
        stats.emplace_back("val_loss", agent->sft_loss(validation_examples));
      stats.emplace_back("data/pairs", static_cast<double>(targets.size()));
      stats.emplace_back("data/skipped", static_cast<double>(skipped));
      stats.emplace_back("perf/tokens_per_second",
                         seconds > 0 ? static_cast<double>(tokens_since) / seconds : 0.0);
      on_statistics("sft", done, stats);
    }
    result.last = std::move(stats);
    if (end_of_step(*agent, config.output_dir, config.hooks, done, config.steps,
                    config.checkpoint_every, result.last)) {
      result.stopped = true;
      break;
    }
  }
  return finish_stage(*agent, config.output_dir, config.hooks, std::move(result));
}

}  // namespace sparserl::agents
