// Pretraining: next-token prediction on the kernel corpus (the design space's programs), the first
// stage of the method ("continued pretraining on CUDA code"). The matrix prefix is present but
// empty - every matrix and feature slot masked - so the code positions and their learned position
// embeddings are the ones SFT and RL use later. The loss is the mean cross-entropy over the code
// tokens of the batch, <eos> included.
#include <torch/torch.h>
#include <torch/version.h>

#include <chrono>
#include <cmath>
#include <stdexcept>

#include "sparserl/agents/torch/learner.hpp"
#include "sparserl/agents/training.hpp"

namespace sparserl::agents {

torch::Tensor next_token_loss(Learner& learner, const SequenceBatch& batch) {
  const PolicyOutput out = learner.policy->forward(batch.prefix, batch.inputs, batch.valid);
  const torch::Tensor log_probs =
      torch::log_softmax(out.logits, -1).gather(-1, batch.targets.unsqueeze(-1)).squeeze(-1);
  return -masked_mean(log_probs, batch.valid);
}

env::Statistics pretrain_step(Learner& learner,
                              std::span<const std::vector<env::TokenId>> programs) {
  if (programs.empty()) throw std::invalid_argument("pretrain_step: an empty batch");
  learner.policy->train();
  std::vector<const env::MatrixObservation*> matrices(programs.size(), nullptr);
  std::vector<const std::vector<env::TokenId>*> sequences;
  for (const auto& p : programs) sequences.push_back(&p);
  const SequenceBatch batch = learner.sequence_batch(matrices, sequences, {});
  const double lr = learner.current_lr();
  const torch::Tensor loss = next_token_loss(learner, batch);
  loss.backward();
  const double grad_norm = learner.optimizer_step();
  const auto tokens = batch.valid.sum().item<std::int64_t>();
  ++learner.counters.updates;
  learner.counters.samples += batch.size();
  learner.counters.tokens += tokens;
  const double value = loss.item<double>();
  return {{"loss", value},
          {"perplexity", std::exp(value)},
          {"grad_norm", grad_norm},
          {"learning_rate", lr},
          {"tokens", static_cast<double>(tokens)},
          {"global_step", static_cast<double>(learner.counters.optimizer_steps)}};
}

std::string libtorch_version() { return TORCH_VERSION; }

StageResult run_pretraining(const PretrainConfig& config, const std::vector<std::string>& corpus,
                            const env::Tokenizer& tokenizer,
                            const StatisticsCallback& on_statistics) {
  if (config.output_dir.empty()) throw std::invalid_argument("pretraining: output_dir is required");
  if (config.steps < 1 || config.batch_size < 1) {
    throw std::invalid_argument("pretraining: steps and batch_size must be positive");
  }
  // The corpus as token sequences; what cannot be generated within max_tokens is left out.
  std::vector<std::vector<env::TokenId>> programs;
  std::size_t skipped = 0;
  for (const std::string& text : corpus) {
    try {
      env::EncodedProgram encoded = tokenizer.encode(text);
      if (static_cast<int>(encoded.tokens.size()) > config.agent.policy.max_tokens) {
        ++skipped;
        continue;
      }
      programs.push_back(std::move(encoded.tokens));
    } catch (const env::TokenizeError&) {
      ++skipped;
    }
  }
  if (programs.empty()) {
    throw std::invalid_argument("pretraining: none of the " + std::to_string(corpus.size()) +
                                " corpus programs tokenizes within policy.max_tokens = " +
                                std::to_string(config.agent.policy.max_tokens));
  }

  StageResult result;
  std::unique_ptr<PolicyAgent> agent;
  if (std::filesystem::exists(latest_checkpoint(config.output_dir) / "checkpoint.txt")) {
    agent = PolicyAgent::from_checkpoint(latest_checkpoint(config.output_dir), config.agent.device);
    result.resumed = true;
  } else {
    agent = std::make_unique<PolicyAgent>(config.agent, tokenizer.vocabulary_ptr());
    if (config.init_checkpoint) agent->load_weights(*config.init_checkpoint);
  }
  tokenizer.vocabulary().require_digest(agent->vocabulary().digest(),
                                        "the tokenizer of pretraining");

  const auto start = std::chrono::steady_clock::now();
  std::int64_t tokens_since = 0;
  for (std::int64_t step = agent->counters().updates; step < config.steps; ++step) {
    std::vector<std::vector<env::TokenId>> batch;
    for (const BatchItem& item :
         epoch_batch(agent->config().seed, programs.size(), step, config.batch_size)) {
      batch.push_back(programs[item.index]);
    }
    env::Statistics stats = agent->pretrain_step(batch);
    tokens_since += static_cast<std::int64_t>(find_statistic(stats, "tokens"));
    const std::int64_t done = step + 1;
    if (on_statistics && (done % std::max(1, config.log_every) == 0 || done == config.steps)) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      stats.emplace_back("epoch", static_cast<double>(done * config.batch_size) /
                                      static_cast<double>(programs.size()));
      stats.emplace_back("corpus/programs", static_cast<double>(programs.size()));
      stats.emplace_back("corpus/skipped", static_cast<double>(skipped));
      stats.emplace_back("perf/tokens_per_second",
                         seconds > 0 ? static_cast<double>(tokens_since) / seconds : 0.0);
      on_statistics("pretrain", done, stats);
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
