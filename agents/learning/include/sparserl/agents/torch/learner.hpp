// What every learning algorithm works on (LibTorch; include only inside agents/ and its torch
// tests): the Learner - the policy, the frozen reference, AdamW, the seeded draws, the counters,
// the algorithm update() runs - and the batch of sequences the algorithms score. Each algorithm
// file (pretrain.cpp, sft.cpp, reinforce.cpp, ppo.cpp, grpo.cpp) holds its Algorithm class
// (algorithm.hpp) and the tensor functions of its section below, and reads alone; the pieces they
// share (masked means, KL estimators, scoring a batch) are here, in learner.cpp and in
// learning_math.cpp.
//
// Conventions of every [B, T] tensor: row b is one completion, column t its t-th code token;
// `valid` marks real tokens (right padding is false); log-probabilities are those of the masked,
// temperature-scaled policy (what the sampler drew from). The network is either kind
// (torch/policy_network.hpp) and the tokens are those of the agent's TokenSpace (token_space.hpp):
// the algorithms see neither.
#pragma once

#include <torch/optim/adamw.h>
#include <torch/types.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sparserl/agents/algorithm.hpp"
#include "sparserl/agents/config.hpp"
#include "sparserl/agents/distributed.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/token_space.hpp"
#include "sparserl/agents/torch/policy.hpp"
#include "sparserl/agents/torch/policy_network.hpp"
#include "sparserl/env/agent.hpp"

namespace sparserl::agents {

// Counter-based uniform draws: draw n of seed s is a pure function of (s, n), so the generator's
// whole state is two integers and a checkpoint restores it exactly.
struct CounterRng {
  std::uint64_t seed = 0;
  std::uint64_t counter = 0;
  std::uint64_t next();
  double uniform_open();  // in (0, 1): (k + 0.5) * 2^-53
  std::uint64_t below(std::uint64_t n);
};

// B sequences ready for a forward pass: inputs are each row's prompt (TokenSpace::prompt: <bos>
// alone for the closed vocabulary, so P = 1; a text prompt is left-padded to the longest, P) then
// the tokens but the last, so the logits at input column P - 1 + t predict targets[t].
struct SequenceBatch {
  PrefixBatch prefix;
  torch::Tensor inputs;            // [B, P + T - 1] int64
  torch::Tensor input_valid;       // [B, P + T - 1] bool (the same tensor as `valid` when P = 1)
  std::int64_t prompt_length = 1;  // P
  torch::Tensor targets;           // [B, T] int64 (<pad> past the end)
  torch::Tensor valid;             // [B, T] bool
  torch::Tensor action_masks;      // [B, T, V] bool, or undefined when the mask is none
  [[nodiscard]] std::int64_t size() const { return inputs.size(0); }
  [[nodiscard]] SequenceBatch select(const torch::Tensor& rows) const;
};

struct TokenScores {
  torch::Tensor log_probs;  // [B, T] of the targets
  torch::Tensor entropy;    // [B, T] of the masked distribution (undefined unless asked)
  torch::Tensor values;     // [B, T]
};

// A mean over `weight` items of this rank's share of a batch (a token mean: weight = its tokens).
struct ShardMean {
  double value = 0;
  double weight = 0;
};

// act()'s per-row state: which episode the row of the key-value cache holds.
struct ActRow {
  std::shared_ptr<const env::MatrixObservation> matrix;
  std::vector<env::TokenId> tokens;  // what the cache has consumed after <bos>
};

// Threads for per-row action-mask work (generate()'s fills, an update's replay; a RowPool's size):
// one for the closed vocabulary's masks (about a microsecond a row and step), for a BPE
// vocabulary's grammar mask (tens of microseconds to milliseconds: docs/bpe.md) as many as
// LibTorch's intra-op setting (OMP_NUM_THREADS), at most `rows`.
int mask_threads(const TokenSpace& space, std::int64_t rows);

struct Learner {
  // The network of config.model.kind: the transformer of config.policy over `vocabulary`, or the
  // decoder of config.model.path (its weights, its tokenizer; the soft-prompt projections, the
  // value head and LoRA adapters drawn from config.seed).
  Learner(AgentConfig config, std::shared_ptr<const env::Vocabulary> vocabulary);

  AgentConfig config;
  // The environment's closed vocabulary, and the tokens the policy reads and writes (that
  // vocabulary's, or the model folder's BPE tokenizer's).
  std::shared_ptr<const env::Vocabulary> vocabulary;
  std::shared_ptr<const TokenSpace> tokens;
  // kind = hf: the model folder's SafetensorsCheckpoint::weights_digest() (what a checkpoint of
  // adapters was trained on).
  std::string base_digest;
  torch::Device device;
  PolicyNetwork policy{nullptr};
  PolicyNetwork reference{nullptr};  // frozen; null until set_reference_to_current()
  std::unique_ptr<torch::optim::AdamW> optimizer;
  // PPO with ppo.critic = separate: the critic network (null until make_critic()) and its AdamW.
  PolicyNetwork critic{nullptr};
  std::unique_ptr<torch::optim::AdamW> critic_optimizer;
  CounterRng rng;
  AgentCounters counters;
  GenerationProfile last_generation;     // generate()'s last call
  std::unique_ptr<Algorithm> algorithm;  // config.algorithm's, from the registry
  // Set by the RL stage when a batch may have been sampled before the last update
  // (train.overlap_generation): the algorithms that correct stale samples then take the old
  // policy's log-probabilities from the completions (Completion::log_probs, the sampling policy's:
  // masked and tempered as score() computes them) instead of re-scoring with the current weights.
  bool old_log_probs_recorded = false;
  // The value head's learning rate as a multiple of the policy's, as make_optimizer() found it
  // (the algorithm's value_head_lr_scale): not 1, the value head is AdamW's third group.
  double value_head_lr_scale = 1.0;

  // Data parallel (docs/distributed.md): the ranks (null: one process) and, during an update, where
  // this rank's rollouts sit among every rank's (total 0 outside an update and in one process).
  std::shared_ptr<ProcessGroup> ranks;
  RowWindow rows;
  [[nodiscard]] bool distributed() const { return ranks && ranks->size() > 1; }

  // act() state.
  KvCache act_cache;
  std::vector<ActRow> act_rows;
  // Matrix observations seen by act(), by observation digest, for update(episodes); bounded.
  std::unordered_map<std::string, std::shared_ptr<const env::MatrixObservation>> observed;
  std::deque<std::string> observed_order;

  void make_optimizer();
  // The prefix of each observation (nullptr: no matrix), on the device.
  [[nodiscard]] PrefixBatch prefix_batch(
      std::span<const env::MatrixObservation* const> matrices) const;
  // Sequences of tokens (without <bos>) with their observations; masks: per sequence T x V bytes,
  // or empty to replay them from the tokens under config.mask (none: no mask tensor).
  [[nodiscard]] SequenceBatch sequence_batch(
      std::span<const env::MatrixObservation* const> matrices,
      std::span<const std::vector<env::TokenId>* const> sequences,
      std::span<const std::vector<std::uint8_t>* const> masks) const;
  // The prompts of `matrices` (TokenSpace::prompt) left-padded into tokens [B, P] and their valid
  // slots, on the device: what generation prefills.
  [[nodiscard]] std::pair<torch::Tensor, torch::Tensor> prompt_batch(
      std::span<const env::MatrixObservation* const> matrices) const;
  // `model`'s logits [B, T, V] and values [B, T] at the slots that predict a batch's targets.
  PolicyOutput outputs(PolicyNetwork& model, const SequenceBatch& batch);
  // Log-probabilities (and entropy, values) of a batch's targets under `model`.
  TokenScores score(PolicyNetwork& model, const SequenceBatch& batch, bool entropy);
  // The value estimates [B, T] of a batch's token slots under `model` (0 past each sequence's end),
  // without its logits: the separate critic's forward pass.
  torch::Tensor score_values(PolicyNetwork& model, const SequenceBatch& batch);
  // Clips the gradients, sets the scheduled learning rate, steps AdamW and clears the gradients.
  // Returns the gradient norm before clipping. Several ranks: first every rank's gradients become
  // their mean weighted by `shard_weight` - the count of items (tokens, sequences) this rank's loss
  // is a mean over - which is the gradient of the mean over every rank's items.
  double optimizer_step(double shard_weight = 1.0);
  [[nodiscard]] double current_lr() const;
  // The critic: a trainable copy of the policy as it is now (trunk and value head), with an AdamW
  // of its own (the policy's settings, decay on matrices only).
  void make_critic();
  // Clips the critic's gradients, steps its AdamW at current_lr() x lr_scale and clears them (the
  // schedule follows the policy's optimiser steps). Returns the norm before clipping.
  double critic_step(double lr_scale, double shard_weight = 1.0);
  // One process: the values as they are. Several ranks: the mean over every rank's items of each
  // (the sum of value x weight over the sum of weights; 0 where no rank has items).
  std::vector<double> shard_means(const std::vector<ShardMean>& values);
  // Several ranks: rank 0's policy, reference and critic weights on every rank.
  void broadcast_weights();
};

// ---- Shared math (learning_math.cpp) ------------------------------------------------------------

torch::Tensor masked_sum(const torch::Tensor& x, const torch::Tensor& mask);
torch::Tensor masked_mean(const torch::Tensor& x, const torch::Tensor& mask);
// Unbiased variance over the masked elements (as TRL's masked_var).
torch::Tensor masked_var(const torch::Tensor& x, const torch::Tensor& mask);
// (x - mean) / sqrt(var + 1e-8) over the masked elements; shift_mean = false adds the mean back.
torch::Tensor masked_whiten(const torch::Tensor& x, const torch::Tensor& mask,
                            bool shift_mean = true);
// Per-token KL(pi || pi_ref) estimates from log pi and log pi_ref of the sampled tokens.
torch::Tensor kl_estimate(const torch::Tensor& log_probs, const torch::Tensor& ref_log_probs,
                          KlEstimator estimator);
// 1 - Var[returns - values] / Var[returns] over the masked elements.
double explained_variance(const torch::Tensor& values, const torch::Tensor& returns,
                          const torch::Tensor& mask);
// The number of each rollout's group, renumbered 0..G-1 in order of first appearance, [N] int64.
torch::Tensor group_index(std::span<const Rollout> rollouts);
// The SequenceBatch of rollouts.
SequenceBatch rollout_batch(Learner& learner, std::span<const Rollout> rollouts);
// The rollouts' rewards [N], float32 on the learner's device.
torch::Tensor rollout_rewards(const Learner& learner, std::span<const Rollout> rollouts);
// The log-probabilities the sampling policy gave the rollouts' tokens (Completion::log_probs) as
// [B, T] on the learner's device, T = batch.targets' width, 0 past each completion; throws when a
// completion's log-probabilities do not match its tokens.
torch::Tensor recorded_log_probs(const Learner& learner, std::span<const Rollout> rollouts,
                                 const SequenceBatch& batch);
// Contiguous minibatches of a permutation of 0..n-1 drawn from the learner's generator. During a
// data-parallel update (learner.rows set) the permutation is of every rank's rows, as one process
// would draw it, and each minibatch keeps this rank's rows of it (renumbered from 0; maybe none).
std::vector<torch::Tensor> minibatch_indices(Learner& learner, std::int64_t n, int minibatches);

// ---- Data parallel (learning_math.cpp): every rank's rows; one process: the local numbers ----

// masked_mean, masked_var, masked_whiten and explained_variance over every rank's elements.
double global_masked_mean(Learner& learner, const torch::Tensor& x, const torch::Tensor& mask);
double global_masked_var(Learner& learner, const torch::Tensor& x, const torch::Tensor& mask);
torch::Tensor global_masked_whiten(Learner& learner, const torch::Tensor& x,
                                   const torch::Tensor& mask);
double global_explained_variance(Learner& learner, const torch::Tensor& values,
                                 const torch::Tensor& returns, const torch::Tensor& mask);
// The mean of every rank's elements of x.
double global_mean(Learner& learner, const torch::Tensor& x);
// The mean and the unbiased standard deviation (0 for one element) of every rank's elements of x.
struct MeanStd {
  double mean = 0;
  double std = 0;
};
MeanStd global_mean_std(Learner& learner, const torch::Tensor& x);
// Several ranks, each with `count` rows: where this rank's sit among every rank's (ranks in order).
RowWindow rank_window(Learner& learner, std::int64_t count);
// Several ranks: sets learner.rows (where `mine` sit among every rank's rollouts, ranks in order)
// and returns every rank's rollouts with what rollout_statistics reads (rewards, groups renumbered
// apart, lengths, outcomes; no tokens, prompts or masks).
std::vector<Rollout> share_rollout_outcomes(Learner& learner, std::span<const Rollout> mine);
// Items of training step `step` over a dataset of n items: positions step * batch_size ... of the
// endless sequence of per-epoch permutations, permutation e a pure function of (seed, e), so a
// resumed run draws the same batches without saved state.
struct BatchItem {
  std::size_t index;
  std::int64_t epoch;
};
std::vector<BatchItem> epoch_batch(std::uint64_t seed, std::size_t n, std::int64_t step,
                                   int batch_size);
// The items of each epoch_batch this rank of `group` trains on (all of them without a group);
// std::invalid_argument naming `key` unless batch_size divides by the group's size.
Shard batch_share(int batch_size, const std::shared_ptr<ProcessGroup>& group, std::string_view key);

// ---- Pretraining and SFT (pretrain.cpp, sft.cpp) ------------------------------------------------

// Mean next-token cross-entropy over the valid targets (code tokens only).
torch::Tensor next_token_loss(Learner& learner, const SequenceBatch& batch);
// One optimiser step on next_token_loss (the policy in training mode): the statistics loss,
// perplexity, mean_token_accuracy (with `token_accuracy`), grad_norm, learning_rate, tokens and
// global_step.
env::Statistics next_token_step(Learner& learner, const SequenceBatch& batch, bool token_accuracy);
env::Statistics pretrain_step(Learner& learner,
                              std::span<const std::vector<env::TokenId>> programs);
env::Statistics sft_step(Learner& learner, std::span<const SftExample> examples);
double sft_loss(Learner& learner, std::span<const SftExample> examples);

// ---- REINFORCE with leave-one-out baseline (reinforce.cpp) --------------------------------------

// A_i = r_i - mean of the other rewards of i's group (r_i itself when the group has one member).
torch::Tensor rloo_advantages(const torch::Tensor& rewards, const torch::Tensor& groups);

// ---- PPO (ppo.cpp) ------------------------------------------------------------------------------

struct GaeResult {
  torch::Tensor advantages;  // [B, T], 0 where not valid
  torch::Tensor returns;     // advantages + values
};
// Generalised advantage estimation over right-padded sequences; the value after the last valid
// token is 0 (the episode ends there).
GaeResult compute_gae(const torch::Tensor& rewards, const torch::Tensor& values,
                      const torch::Tensor& valid, double gamma, double lambda);
// How much of an episode's final reward GAE hands its first token: the mean over sequences of
// (gamma lambda)^(length - 1), the rest of that token's advantage being the critic's differences.
// Completions of ~320 tokens at lambda 0.95 give ~8e-8: the program's first line (format, launch
// geometry) is then credited by the critic alone.
double first_token_outcome_weight(const torch::Tensor& valid, double gamma, double lambda);

struct PolicyLoss {
  torch::Tensor loss;  // scalar: masked mean of max(-A r, -A clip(r, 1 - e, 1 + e))
  double clip_fraction = 0;
  double approx_kl = 0;  // 0.5 * mean((log pi - log pi_old)^2), as TRL
};
PolicyLoss ppo_policy_loss(const torch::Tensor& log_probs, const torch::Tensor& old_log_probs,
                           const torch::Tensor& advantages, const torch::Tensor& valid,
                           double clip);

struct ValueLoss {
  torch::Tensor loss;  // scalar: 0.5 * masked mean of max((v - R)^2, (clip(v) - R)^2)
  double clip_fraction = 0;
};
ValueLoss clipped_value_loss(const torch::Tensor& values, const torch::Tensor& old_values,
                             const torch::Tensor& returns, const torch::Tensor& valid, double clip);

// Per-token rewards of PPO: -kl_coef * KL_t, plus each sequence's reward at its last valid token.
torch::Tensor ppo_token_rewards(const torch::Tensor& scores, const torch::Tensor& kl,
                                const torch::Tensor& valid, double kl_coef);

// ---- GRPO (grpo.cpp) ----------------------------------------------------------------------------

// (r - mean_g) / (std_g + eps) with scale, else r - mean_g; std unbiased (0 for a group of one).
torch::Tensor grpo_advantages(const torch::Tensor& rewards, const torch::Tensor& groups, bool scale,
                              double eps);
// One number from a per-token loss [B, T].
torch::Tensor aggregate_loss(const torch::Tensor& per_token, const torch::Tensor& valid,
                             LossAggregation mode);
struct GrpoLoss {
  torch::Tensor loss;
  double clip_low = 0, clip_high = 0;  // share of tokens clipped below (A < 0) / above (A > 0)
  double kl = 0;                       // mean k3 per token (0 when beta = 0)
};
// Dynamic sampling: the indices of the rollouts whose group's rewards are not all equal (a group
// of one is all equal), in order.
std::vector<std::size_t> varied_group_rows(std::span<const Rollout> rollouts);
// advantages: [B] per sequence; ref_log_probs may be undefined when beta = 0.
GrpoLoss grpo_loss(const torch::Tensor& log_probs, const torch::Tensor& old_log_probs,
                   const torch::Tensor& ref_log_probs, const torch::Tensor& advantages,
                   const torch::Tensor& valid, const GrpoConfig& config);

}  // namespace sparserl::agents
