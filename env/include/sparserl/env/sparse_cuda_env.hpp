// SparseCudaEnv: one environment in which an agent writes a CUDA kernel for a sparse matrix, token
// by token, with Gymnasium's semantics in C++. This comment is the contract.
//
//   reset(seed, options) -> {observation, info}
//     Picks the next task from the TaskSource (or options.task), samples the matrix observation
//     with the episode seed, and starts an empty token sequence. A seed reseeds (env seed = seed,
//     episode index and task order restart); no seed does not reseed (the episode index and the
//     task order continue); the very first reset without a seed uses EnvConfig::seed. Seeds are
//     derived in seeding.hpp only.
//   step(token, annotation) -> {observation, reward, terminated, truncated, info}
//     Appends the token. The reward is 0 until the episode ends:
//       <eos>             terminated = true: the tokens are decoded, the program is evaluated by
//       the
//                         EvaluationBackend, the reward is HierarchicalReward(EvalResult), and info
//                         carries every EvalResult field ("eval.*") and the breakdown ("reward.*");
//       max_tokens reached without <eos>
//                         truncated = true: no evaluation; the reward is
//                         EnvConfig::truncation_reward (default: R_compile's failure value, -0.5 -
//                         as if it had not compiled), info "truncated.reason" = "max_tokens".
//     An evaluator failure is a result (its error kind in "eval.error"), never an exception. A
//     token outside the vocabulary, one the syntax mask forbids, or a step after the episode ended
//     is the caller's bug: std::invalid_argument / std::logic_error.
//   observation: the matrix view (shared for the whole episode), the token prefix, the action mask
//   for
//     the next token (all zero once the episode ended), the task and the tokens left.
//   spaces(): Discrete(vocabulary size) actions and the observation's shapes.
//   state() / replay(): an episode is (task, episode seed, tokens); replay() runs a recorded
//   episode
//     again on a fresh environment and reports every difference (observation digest, mask,
//     termination, program text, evaluation outcome and reward).
//   pipeline(): the EpisodePipeline that reset() and the last step() go through - the same one the
//     trainer and the bench hand whole completions to (episode_pipeline.hpp).
//   begin_step() / step_ready() / finish_step(): step() in two halves, so that VectorEnv can keep
//     stepping the other environments while an evaluation is in flight.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/env/action_mask.hpp"
#include "sparserl/env/episode.hpp"
#include "sparserl/env/episode_pipeline.hpp"
#include "sparserl/env/evaluation.hpp"
#include "sparserl/env/info.hpp"
#include "sparserl/env/observation.hpp"
#include "sparserl/env/task_source.hpp"
#include "sparserl/env/tokenizer.hpp"

namespace sparserl::env {

struct ResetOptions {
  std::optional<datasets::Task> task;         // instead of the task source's next task
  std::optional<std::uint64_t> episode_seed;  // instead of the derived one (replay)
};

struct Observation {
  std::shared_ptr<const MatrixObservation> matrix;  // the same object for the whole episode
  std::vector<TokenId> tokens;                      // the actions so far
  std::vector<std::uint8_t> action_mask;            // vocabulary size; 1 = allowed next
  datasets::Task task;
  int remaining_tokens = 0;  // max_tokens - tokens.size()
};

// dm_env's step types, for agents written against that convention.
enum class StepType { first, mid, last };

struct ResetResult {
  Observation observation;
  Info info;
};

struct StepResult {
  Observation observation;
  double reward = 0;
  bool terminated = false;
  bool truncated = false;
  Info info;
  StepType step_type = StepType::mid;
  [[nodiscard]] bool done() const { return terminated || truncated; }
};

// What the agent reports with its action; the env records it in the Episode.
struct StepAnnotation {
  float log_prob = 0;
  float value = 0;
};

struct Spaces {
  std::int64_t actions = 0;          // Discrete(actions): token ids 0 .. actions-1
  int nnz_samples = 0;               // observation.matrix rows / cols: [K] int32
  int embedding_dim = 0;             // observation.matrix embedding: [K, D] float32
  int feature_dim = 0;               // observation.matrix features: [F] float32
  int max_tokens = 0;                // observation.tokens: [<= max_tokens] int32
  MaskMode mask = MaskMode::syntax;  // observation.action_mask: [actions] uint8
  [[nodiscard]] std::string describe() const;
};

struct EnvState {
  datasets::Task task;
  int env_id = 0;
  std::uint64_t env_seed = 0, episode_index = 0, episode_seed = 0;
  std::vector<TokenId> tokens;
  bool active = false;  // reset and not yet ended
};

struct ReplayReport {
  std::vector<std::string> mismatches;  // empty: the episode replays exactly
  double reward = 0;                    // the replayed reward
  [[nodiscard]] bool ok() const { return mismatches.empty(); }
};

class SparseCudaEnv {
 public:
  // Throws std::invalid_argument naming the EnvConfig field that is invalid.
  SparseCudaEnv(EnvConfig config, std::shared_ptr<const Tokenizer> tokenizer, TaskSource tasks,
                std::shared_ptr<datasets::MatrixStore> store,
                std::shared_ptr<EvaluationBackend> backend, int env_id = 0);
  ~SparseCudaEnv();
  SparseCudaEnv(const SparseCudaEnv&) = delete;
  SparseCudaEnv& operator=(const SparseCudaEnv&) = delete;

  ResetResult reset(std::optional<std::uint64_t> seed = std::nullopt,
                    const ResetOptions& options = {});
  StepResult step(TokenId token, StepAnnotation annotation = {});

  void begin_step(TokenId token, StepAnnotation annotation = {});
  [[nodiscard]] bool step_ready() const;  // finish_step() will not block
  // Waits at most `timeout` for the pending step's evaluation; returns step_ready().
  bool wait_step(std::chrono::microseconds timeout) const;
  StepResult finish_step();  // blocks until the evaluation (if any) is done

  [[nodiscard]] Spaces spaces() const;
  [[nodiscard]] EnvState state() const;
  // The episode that ended with the last step, until the next reset (nullptr otherwise).
  [[nodiscard]] const Episode* last_episode() const;

  ReplayReport replay(const Episode& recorded);

  [[nodiscard]] const EnvConfig& config() const { return pipeline_->config(); }
  [[nodiscard]] const Tokenizer& tokenizer() const { return *tokenizer_; }
  [[nodiscard]] const EpisodePipeline& pipeline() const { return *pipeline_; }
  [[nodiscard]] const TaskSource& task_source() const { return tasks_; }
  [[nodiscard]] int env_id() const { return env_id_; }
  [[nodiscard]] const reward::HierarchicalReward& reward_function() const {
    return pipeline_->reward_function();
  }

 private:
  Observation observe();
  void end_episode(StepResult& result);

  // The closed vocabulary's: step() and its mask are the closed vocabulary's, and so is the
  // pipeline's (a policy of another vocabulary has a pipeline of its own: with_tokenizer()).
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::shared_ptr<EpisodePipeline> pipeline_;
  TaskSource tasks_;
  ActionMask mask_;
  int env_id_ = 0;

  bool seeded_ = false;
  std::uint64_t env_seed_ = 0;
  std::uint64_t next_episode_index_ = 0;

  // The current episode: its prompt and the tokens so far.
  bool active_ = false;
  Prompt prompt_;
  Completion completion_;
  // The last step, between begin_step() and finish_step(); an ended episode's evaluation.
  bool step_pending_ = false;
  std::optional<StepResult> pending_result_;
  std::optional<PendingEpisode> pending_episode_;
  // The episode that ended with the last step.
  std::optional<Episode> last_episode_;
};

}  // namespace sparserl::env
