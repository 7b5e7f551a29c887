// PolicyAgent: the LibTorch policy - the transformer of [policy], or a Llama / Qwen2 decoder of a
// Hugging Face folder ([agent.model] kind = "hf") - behind the environment's Agent interface (act
// on a batch of observations, update from finished episodes, save / load), plus the calls the
// training stages need that the interface has no room for: whole-sequence generation with a
// key-value cache, one optimiser step of pretraining / SFT / RL, and loading weights from another
// stage's checkpoint. No LibTorch in this header (experiments/ and tools/ include it); the network
// and the algorithms are behind a pointer (sparserl/agents/torch/learner.hpp), the tokens behind
// TokenSpace (token_space.hpp). An HF policy acts through generate() only: act() and the env's
// step() are the closed vocabulary's.
//
// act() keeps a key-value cache per row of the batch: when row i continues the episode it held on
// the previous call (the same matrix observation object and one token more), only the new token is
// run; any other row is recomputed from its prefix. A synchronous VectorEnv keeps rows stable; an
// asynchronous one that reorders them stays correct, only slower. act() also remembers each
// episode's matrix observation (by its digest) so that update(episodes) can score them again.
//
// Checkpoints are folders:
//   checkpoint.txt   format version, every AgentConfig key, step counters, RNG state, vocabulary
//                    name and digest ("key = value" lines); kind = hf: the tokenizer's name and
//                    digest and the digest of the model folder's weights (model.base_digest)
//   model.pt         the policy's parameters (torch::serialize archive); under LoRA the adapters
//                    (unmerged), the soft-prompt projections and the value head only - the base
//                    is model.path's, checked against model.base_digest
//   reference.pt     the frozen KL reference policy (when one is set; the same subset)
//   critic.pt, critic_optimizer.pt   PPO's separate critic (when there is one)
//   optimizer.pt     AdamW's state
//   rng.pt           LibTorch's CPU generator state (dropout)
//   vocabulary.vocab the vocabulary (env::Vocabulary file, digest-checked on load)
//   tokenizer.json   kind = hf: the model folder's tokenizer, as it was
// export_model() writes the merged Hugging Face folder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sparserl/agents/config.hpp"
#include "sparserl/agents/token_space.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/env/agent.hpp"
#include "sparserl/env/episode_pipeline.hpp"
#include "sparserl/env/observation.hpp"
#include "sparserl/env/vocabulary.hpp"

namespace sparserl::reward {
class TimingLaneLock;  // reward/timing_lane.hpp
}

namespace sparserl::agents {

struct Learner;      // torch/learner.hpp
class ProcessGroup;  // distributed.hpp

// Data parallel: the rows of one batch that this rank holds, [offset, offset + its count), out of
// `total` rows over every rank. total 0: one process, every row its own.
struct RowWindow {
  std::int64_t offset = 0;
  std::int64_t total = 0;
};

// One generated program: tokens (with <eos> when it ended), the log-probability and value estimate
// of each, and the action masks it was sampled under - the env's Completion, which its
// EpisodePipeline turns into an episode.
using Completion = env::Completion;

// What an RL update learns from: one completion of one task with its reward and outcome.
struct Rollout {
  datasets::Task task;
  std::shared_ptr<const env::MatrixObservation> matrix;
  int group = 0;  // samples of one task share a group (GRPO, RLOO)
  Completion completion;
  double reward = 0;
  bool evaluated = false;  // false: truncated, never evaluated
  bool compiled = false, correct = false;
  double speedup = 0;  // when timed
};

// An SFT example: a matrix observation and the program the policy should write for it.
struct SftExample {
  std::shared_ptr<const env::MatrixObservation> matrix;
  std::vector<env::TokenId> tokens;  // the program's encoding, <eos> last
};

// Step counters, saved with checkpoints.
struct AgentCounters {
  std::int64_t optimizer_steps = 0;   // AdamW steps (the learning-rate schedule's clock)
  std::int64_t updates = 0;           // calls of an update / training step
  std::int64_t samples = 0;           // sequences trained on
  std::int64_t tokens = 0;            // tokens trained on
  std::int64_t generated_tokens = 0;  // tokens sampled by act() and generate()
};

// Where the last generate() call's wall time went (not saved with checkpoints): the action masks
// on the CPU (their fill() for the next step, advance() past each draw), the masks' upload (which
// waits for the decode step the masks were filled beside), the waits for the device's draws (the
// step's read-back: the sampling not yet finished when the host asks), the decode steps' calls
// (issuing the network's kernels) and the steps taken. The rest is host work around them.
struct GenerationProfile {
  double seconds = 0, mask_seconds = 0, upload_seconds = 0, readback_seconds = 0,
         decode_seconds = 0;
  std::int64_t steps = 0, row_steps = 0;  // row_steps: masks filled for rows still writing
  // Decode steps replayed from CUDA graphs (SamplingConfig::decode_graphs): graphs captured and
  // the seconds their captures took (part of decode_seconds); 0 where the steps were issued.
  int graphs = 0;
  double capture_seconds = 0;
  // The steps overlapped (SamplingConfig::overlap_steps, no timing lane): each decode step enqueued
  // before the host waited for the draws, whose wait then holds the decode step's device time.
  bool overlapped = false;
  // The overlapped steps' draws replayed from a CUDA graph (SamplingConfig::draw_graphs).
  bool draw_graphs = false;
};

class PolicyAgent final : public env::Agent {
 public:
  // A freshly initialised policy (weights from config.seed). The vocabulary fixes the action space.
  // std::invalid_argument naming the field of an invalid config.
  PolicyAgent(AgentConfig config, std::shared_ptr<const env::Vocabulary> vocabulary);
  // What a checkpoint is read for: `resume` training needs its whole state (the optimiser's and the
  // CPU generator's files too); `inference` (evaluation, bench, export) needs the policy and its
  // sampling state, and reads the optimiser's and generator's files only where they are there (a
  // policy kept without them, as docs/examples keeps SFT seed 1's, is evaluated as it is).
  enum class CheckpointUse { resume, inference };
  // The agent a checkpoint folder holds; `device` overrides the saved one.
  static std::unique_ptr<PolicyAgent> from_checkpoint(const std::filesystem::path& dir,
                                                      std::optional<std::string> device = {},
                                                      CheckpointUse use = CheckpointUse::resume);
  // The AgentConfig a checkpoint folder records (for building a compatible agent before loading).
  static AgentConfig checkpoint_config(const std::filesystem::path& dir);
  ~PolicyAgent() override;
  PolicyAgent(const PolicyAgent&) = delete;
  PolicyAgent& operator=(const PolicyAgent&) = delete;

  // env::Agent.
  [[nodiscard]] std::string name() const override;       // the algorithm: "sft", "ppo", ...
  [[nodiscard]] std::string policy_id() const override;  // "ppo:step=120"
  env::ActionBatch act(std::span<const env::Observation> observations) override;
  // One update of the configured algorithm (std::logic_error for sft, which learns from
  // examples). Episodes of one prompt form a group (Episode::group; episodes without one, as
  // step() plays them, are grouped by task). An episode without its prompt (Episode::matrix) must
  // be of a matrix observation act() saw.
  env::Statistics update(std::span<const env::Episode> episodes) override;
  void save(const std::filesystem::path& dir) const override;
  // Restores everything save() wrote. std::runtime_error naming the file for a missing or malformed
  // checkpoint, env::VocabularyError for another vocabulary, std::invalid_argument for a policy of
  // another shape.
  void load(const std::filesystem::path& dir) override;

  // Copies only the policy weights of a checkpoint (pretraining -> SFT -> RL). The vocabulary and
  // the policy shape must match. Optimiser, counters and RNG stay as they are.
  void load_weights(const std::filesystem::path& dir);

  // `samples` completions of each matrix observation (nullptr: no matrix, as in pretraining), in
  // order prompt-major, sampled together in one batch with the key-value cache, under the action
  // mask of the configured mode and the policy's max_tokens. With a `rows` window (data parallel:
  // these are rows [offset, offset + prompts x samples) of `total` over every rank) each row draws
  // what it would draw were one process generating all `total` rows, and the generator ends where
  // that process's would: ranks together sample what one process samples.
  std::vector<Completion> generate(
      std::span<const std::shared_ptr<const env::MatrixObservation>> prompts, int samples,
      const SamplingConfig& sampling, RowWindow rows = {});

  // One update of the configured algorithm on a batch of rollouts (groups by Rollout::group).
  env::Statistics update_rollouts(std::span<const Rollout> rollouts);
  // One optimiser step of next-token loss on programs without a matrix (pretraining) or on SFT
  // examples (loss on the code tokens only). Statistics: loss, perplexity, tokens, grad_norm, lr.
  env::Statistics pretrain_step(std::span<const std::vector<env::TokenId>> programs);
  env::Statistics sft_step(std::span<const SftExample> examples);
  // The same losses without a step (no gradients; dropout off), for validation.
  double sft_loss(std::span<const SftExample> examples);

  // Freezes a copy of the current weights as the KL reference of PPO / GRPO / REINFORCE.
  void set_reference_to_current();
  [[nodiscard]] bool has_reference() const;
  // Changes the algorithm that update() runs, by its registered name (stage changes: SFT -> PPO);
  // std::invalid_argument listing the registered names for another.
  void set_algorithm(const std::string& algorithm);
  void set_optimizer(const OptimizerConfig& optimizer);  // a fresh AdamW with these settings
  // Data parallel: trains as one rank of `group` from now on (its updates average gradients and
  // reduce statistics over the ranks); rank 0's weights are copied to every rank first. A group of
  // one, or null, leaves the agent a process of its own.
  void join(std::shared_ptr<ProcessGroup> group);
  [[nodiscard]] const std::shared_ptr<ProcessGroup>& process_group() const;
  // True where this process writes files (checkpoints): one process, or rank 0.
  [[nodiscard]] bool main_rank() const;

  [[nodiscard]] const AgentConfig& config() const;
  // The environment's closed vocabulary the agent was built with (checked against the env's).
  [[nodiscard]] const env::Vocabulary& vocabulary() const;
  [[nodiscard]] const std::shared_ptr<const env::Vocabulary>& vocabulary_ptr() const;
  // The tokens the policy reads and writes: that vocabulary's, or an HF model's BPE tokenizer's.
  [[nodiscard]] const TokenSpace& tokens() const;
  [[nodiscard]] const std::shared_ptr<const TokenSpace>& tokens_ptr() const;

  // model.kind = hf: the policy as a Hugging Face folder transformers loads (config.json and the
  // weights with LoRA merged, sharded above max_shard_bytes, 0: one file), the model folder's
  // tokenizer and generation files copied, the soft-prompt projections and the value head beside
  // (sparserl_policy.safetensors: a later model.path reads them back). std::logic_error for small.
  void export_model(const std::filesystem::path& folder, std::uint64_t max_shard_bytes = 0) const;
  [[nodiscard]] const AgentCounters& counters() const;
  [[nodiscard]] const GenerationProfile& last_generation() const;
  [[nodiscard]] std::int64_t parameter_count() const;
  [[nodiscard]] std::string device() const;  // "cpu", "cuda:0"
  // A digest of every parameter's bytes (tests compare two agents' weights with it).
  [[nodiscard]] std::string weights_digest() const;

  // Learner::old_log_probs_recorded: batches may predate the last update (the RL stage's
  // train.overlap_generation).
  void set_old_log_probs_recorded(bool recorded);
  // The timing lane of the GPU this agent samples on, when the evaluator times candidates there
  // while generate() runs (train.overlap_generation): generate() then holds it while its kernels
  // run - the prefill, and each step from the mask's upload to the next decode step's end - and
  // lets it go while it fills the next step's masks on the CPU. Null: no lane (the default).
  void set_timing_lane(std::shared_ptr<reward::TimingLaneLock> lane);

  [[nodiscard]] Learner& learner() { return *learner_; }  // for agents/ and its tests

 private:
  explicit PolicyAgent(std::unique_ptr<Learner> learner);
  // load() for `use`: with CheckpointUse::inference a missing optimizer.pt, critic_optimizer.pt or
  // rng.pt leaves that state as it is.
  void restore(const std::filesystem::path& dir, CheckpointUse use);
  std::unique_ptr<Learner> learner_;
  std::shared_ptr<reward::TimingLaneLock> timing_lane_;
};

}  // namespace sparserl::agents
