// Pretraining: next-token prediction on the kernel corpus (the design space's programs), the first
// stage of the method ("continued pretraining on CUDA code"). The matrix prefix is present but
// empty - every matrix and feature slot masked - so the code positions and their learned position
// embeddings are the ones SFT and RL use later. The loss is the mean cross-entropy over the code
// tokens of the batch, <eos> included.
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <stdexcept>

#include "sparserl/agents/torch/learner.hpp"
#include "sparserl/agents/training.hpp"

namespace sparserl::agents {

namespace {

// The mean cross-entropy of the targets under the policy's log-probabilities `log_softmax`.
torch::Tensor mean_cross_entropy(const torch::Tensor& log_softmax, const SequenceBatch& batch) {
  return -masked_mean(log_softmax.gather(-1, batch.targets.unsqueeze(-1)).squeeze(-1), batch.valid);
}

}  // namespace

torch::Tensor next_token_loss(Learner& learner, const SequenceBatch& batch) {
  const PolicyOutput out = learner.outputs(learner.policy, batch);
  return mean_cross_entropy(torch::log_softmax(out.logits, -1), batch);
}

env::Statistics next_token_step(Learner& learner, const SequenceBatch& batch, bool token_accuracy) {
  learner.policy->train();
  const double lr = learner.current_lr();
  const PolicyOutput out = learner.outputs(learner.policy, batch);
  const torch::Tensor log_softmax = torch::log_softmax(out.logits, -1);
  const torch::Tensor loss = mean_cross_entropy(log_softmax, batch);
  loss.backward();
  auto tokens = batch.valid.sum().item<std::int64_t>();
  // The loss is a mean over this rank's tokens: so is its gradient, weighted by them.
  const double grad_norm = learner.optimizer_step(static_cast<double>(tokens));
  std::int64_t samples = batch.size();
  double value = loss.item<double>();
  double accuracy = 0;
  if (token_accuracy) {
    accuracy = masked_mean((log_softmax.argmax(-1) == batch.targets).to(torch::kFloat), batch.valid)
                   .item<double>();
  }
  if (learner.distributed()) {
    // The statistics of every rank's batch: token means weighted by tokens, counts summed.
    const std::vector<double> means = learner.shard_means(
        {{value, static_cast<double>(tokens)}, {accuracy, static_cast<double>(tokens)}});
    const std::vector<double> counts =
        learner.ranks->sum({static_cast<double>(tokens), static_cast<double>(samples)});
    value = means[0];
    accuracy = means[1];
    tokens = static_cast<std::int64_t>(counts[0]);
    samples = static_cast<std::int64_t>(counts[1]);
  }
  ++learner.counters.updates;
  learner.counters.samples += samples;
  learner.counters.tokens += tokens;
  env::Statistics stats = {{"loss", value}, {"perplexity", std::exp(value)}};
  if (token_accuracy) stats.emplace_back("mean_token_accuracy", accuracy);
  stats.insert(stats.end(),
               {{"grad_norm", grad_norm},
                {"learning_rate", lr},
                {"tokens", static_cast<double>(tokens)},
                {"global_step", static_cast<double>(learner.counters.optimizer_steps)}});
  return stats;
}

env::Statistics pretrain_step(Learner& learner,
                              std::span<const std::vector<env::TokenId>> programs) {
  if (programs.empty()) throw std::invalid_argument("pretrain_step: an empty batch");
  std::vector<const env::MatrixObservation*> matrices(programs.size(), nullptr);
  std::vector<const std::vector<env::TokenId>*> sequences;
  for (const auto& p : programs) sequences.push_back(&p);
  return next_token_step(learner, learner.sequence_batch(matrices, sequences, {}), false);
}

std::string libtorch_version() { return TORCH_VERSION; }

StageResult run_pretraining(const PretrainConfig& config, const std::vector<std::string>& corpus,
                            const env::Tokenizer& tokenizer,
                            const StatisticsCallback& on_statistics,
                            const std::vector<std::string>& texts) {
  if (config.output_dir.empty()) throw std::invalid_argument("pretraining: output_dir is required");
  if (config.steps < 1 || config.batch_size < 1) {
    throw std::invalid_argument("pretraining: steps and batch_size must be positive");
  }
  const Shard share = batch_share(config.batch_size, config.group, "pretraining: batch_size");
  StageResult result;
  std::unique_ptr<PolicyAgent> agent =
      open_stage_agent(config.output_dir, config.agent, tokenizer.vocabulary_ptr(),
                       config.init_checkpoint, result, config.group);
  tokenizer.vocabulary().require_digest(agent->vocabulary().digest(),
                                        "the tokenizer of pretraining");

  // The corpus as token sequences of the agent's tokens; what cannot be generated within
  // max_tokens is left out. Plain texts are cut into sequences.
  const TokenSpace& space = agent->tokens();
  const int max_tokens = config.agent.policy.max_tokens;
  std::vector<std::vector<env::TokenId>> programs;
  std::size_t skipped = 0;
  for (const std::string& text : corpus) {
    if (auto tokens = space.program_tokens(text, max_tokens)) {
      programs.push_back(std::move(*tokens));
    } else {
      ++skipped;
    }
  }
  const std::size_t from_programs = programs.size();
  for (const std::string& text : texts) {
    std::vector<std::vector<env::TokenId>> pieces = space.text_tokens(text, max_tokens);
    if (pieces.empty()) ++skipped;
    for (auto& piece : pieces) programs.push_back(std::move(piece));
  }
  if (programs.empty()) {
    throw std::invalid_argument(
        "pretraining: none of the " + std::to_string(corpus.size() + texts.size()) +
        " corpus programs tokenizes within policy.max_tokens = " + std::to_string(max_tokens));
  }

  const auto pretrain_batch = [&](std::int64_t step) {
    std::vector<std::vector<env::TokenId>> batch;
    const std::vector<BatchItem> items =
        epoch_batch(agent->config().seed, programs.size(), step, config.batch_size);
    for (std::size_t i = share.begin; i < share.end; ++i) batch.push_back(programs[items[i].index]);
    return agent->pretrain_step(batch);
  };
  const auto corpus_statistics = [&](env::Statistics& stats) {
    stats.emplace_back("corpus/programs", static_cast<double>(from_programs));
    stats.emplace_back("corpus/skipped", static_cast<double>(skipped));
    if (!texts.empty()) {
      stats.emplace_back("corpus/text_sequences",
                         static_cast<double>(programs.size() - from_programs));
    }
  };
  return run_supervised_steps(*agent, stage_loop("pretrain", config.steps, config),
                              config.batch_size, programs.size(), std::move(result), pretrain_batch,
                              corpus_statistics, on_statistics);
}

}  // namespace sparserl::agents
