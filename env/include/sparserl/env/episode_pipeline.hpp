// EpisodePipeline: the one path by which an episode of this environment is made, whoever drives it.
// Tasks go in and prompts come out; completions go in and finished episodes come out:
//
//   start(EpisodeStart)        loads the task's matrix, samples its observation with the episode
//                              seed (the prompt the agent writes for) and stamps the episode's ids.
//   submit(prompt, completion) decodes the tokens and applies the truncation rule: a completion
//   that
//                              ends with <eos> is sent to the EvaluationBackend; one cut at
//                              max_tokens is not evaluated and gets EnvConfig's truncation reward.
//   finish(pending)            waits for the evaluation and fills the episode: the EvalResult, the
//                              HierarchicalReward and its breakdown, the timings.
//   run(prompts, completions)  a batch: every completion submitted before any is waited for (the
//                              evaluator overlaps them), episodes in order.
//   final_info(episode)        the info dictionary step() returns with an episode's last step.
//
// The tokens are those of a ProgramTokenizer (program_tokenizer.hpp): the closed vocabulary's
// Tokenizer, which SparseCudaEnv's pipeline has, or a Hugging Face model's BpeTokenizer, whose
// policy finishes its completions through a pipeline of its own over the env's parts
// (with_tokenizer()): decode, truncation, evaluation and reward are the same for both.
//
// SparseCudaEnv::step() plays one completion token by token and hands it to submit()/finish();
// VectorEnv drives many environments through the same halves; the RL trainer, the policy evaluation
// and the bench sample whole completions and call run(). So an episode, its reward and its
// breakdown are the same whichever of them produced it (tests/env/episode_paths_test.cpp feeds the
// same completions through all of them).
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sparserl/datasets/features.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/env/action_mask.hpp"
#include "sparserl/env/episode.hpp"
#include "sparserl/env/evaluation.hpp"
#include "sparserl/env/info.hpp"
#include "sparserl/env/observation.hpp"
#include "sparserl/env/program_tokenizer.hpp"
#include "sparserl/reward/reward.hpp"

namespace sparserl::env {

struct EnvConfig {
  int max_tokens = 4096;  // tokens per episode, <eos> included (design-space programs: <= 2259)
  MaskMode mask = MaskMode::syntax;
  ObservationConfig observation;
  reward::RewardConfig reward;
  std::uint64_t seed = 0;  // used by the first reset() that names no seed
  // The reward of a truncated episode; default reward.compile_fail, clipped like any reward.
  std::optional<double> truncation_reward;

  [[nodiscard]] std::optional<std::string> validate() const;
  [[nodiscard]] double resolved_truncation_reward() const;
};

// Which episode: the task and the numbers its record carries. The caller chooses the numbering
// (SparseCudaEnv: per env seed; the trainer: per update and task), seeds come from seeding.hpp.
struct EpisodeStart {
  datasets::Task task;
  int env_id = 0;
  std::uint64_t env_seed = 0;
  std::uint64_t episode_index = 0;
  std::uint64_t episode_seed = 0;  // what the observation is sampled with
};

// The observation of a task as every episode shows it: the matrix from the store, its features
// (computed once per URI), sampled with the episode seed. Thread-safe. EpisodePipeline::start uses
// it, and so does SFT (agents' store_observer), so that its examples look as RL's episodes do.
class TaskObserver {
 public:
  // std::invalid_argument naming the observation field that is invalid.
  TaskObserver(std::shared_ptr<datasets::MatrixStore> store, ObservationConfig config);
  struct Observed {
    std::shared_ptr<const datasets::SparseMatrix> matrix;
    std::shared_ptr<const MatrixObservation> observation;
  };
  [[nodiscard]] Observed observe(const datasets::Task& task, std::uint64_t seed) const;

 private:
  std::shared_ptr<datasets::MatrixStore> store_;
  ObservationConfig config_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::string, datasets::MatrixFeatures> features_;
};

// A started episode: what the agent sees before its first token.
struct Prompt {
  EpisodeStart start;
  std::shared_ptr<const MatrixObservation> matrix;
  std::string observation_digest;
  std::int64_t rows = 0, cols = 0, nnz = 0;  // the matrix's shape
  std::chrono::steady_clock::time_point started;
};

// What an agent wrote for a prompt.
struct Completion {
  std::vector<TokenId> tokens;   // <eos> last when the program ended
  std::vector<float> log_probs;  // per token (empty: not reported)
  std::vector<float> values;     // per token (empty: no critic)
  // tokens x vocabulary masks the tokens were sampled under (empty: replay them from the tokens);
  // handed through to the episode for the agent's update, never recorded.
  std::vector<std::uint8_t> action_masks;
  bool terminated = false;  // ended with <eos>; otherwise cut at max_tokens
};

// An episode between submit() and finish().
struct PendingEpisode {
  Episode episode;
  std::optional<std::future<reward::EvalResult>> evaluation;  // absent when truncated
  std::chrono::steady_clock::time_point submitted;
};

class EpisodePipeline {
 public:
  // std::invalid_argument naming the EnvConfig field that is invalid, or a missing part.
  EpisodePipeline(EnvConfig config, std::shared_ptr<const ProgramTokenizer> tokenizer,
                  std::shared_ptr<datasets::MatrixStore> store,
                  std::shared_ptr<EvaluationBackend> backend);
  // A pipeline of this one's config, store and backend over another tokenizer (a policy of another
  // vocabulary finishing its episodes in the same environment).
  [[nodiscard]] std::unique_ptr<EpisodePipeline> with_tokenizer(
      std::shared_ptr<const ProgramTokenizer> tokenizer) const;

  // Thread-safe.
  [[nodiscard]] Prompt start(const EpisodeStart& start) const;
  [[nodiscard]] std::vector<Prompt> start(std::span<const EpisodeStart> starts) const;

  // std::invalid_argument for a completion that neither ends with <eos> nor fills max_tokens, is
  // longer than max_tokens, says `terminated` against its tokens, or carries a token outside the
  // action space. A backend that throws is answered internal_error (no exception).
  [[nodiscard]] PendingEpisode submit(const Prompt& prompt, Completion completion) const;
  [[nodiscard]] static bool ready(const PendingEpisode& pending);
  static bool wait(const PendingEpisode& pending, std::chrono::microseconds timeout);
  [[nodiscard]] Episode finish(PendingEpisode pending) const;

  // `completions` holds completions.size() / prompts.size() samples per prompt, prompt-major.
  // Episode k of prompt p: group p, episode_index = p's episode_index * samples + k.
  [[nodiscard]] std::vector<Episode> run(std::span<const Prompt> prompts,
                                         std::vector<Completion> completions) const;

  // The info of the first observation and of the last step (every EvalResult field as "eval.*",
  // the breakdown as "reward.*", "truncated.reason" when cut).
  [[nodiscard]] Info start_info(const Prompt& prompt) const;
  [[nodiscard]] static Info final_info(const Episode& episode);

  [[nodiscard]] const EnvConfig& config() const { return config_; }
  [[nodiscard]] const ProgramTokenizer& tokenizer() const { return *tokenizer_; }
  [[nodiscard]] const std::shared_ptr<datasets::MatrixStore>& store() const { return store_; }
  [[nodiscard]] const std::shared_ptr<EvaluationBackend>& backend() const { return backend_; }
  [[nodiscard]] const reward::HierarchicalReward& reward_function() const { return reward_; }

 private:
  EnvConfig config_;
  std::shared_ptr<const ProgramTokenizer> tokenizer_;
  std::shared_ptr<datasets::MatrixStore> store_;
  std::shared_ptr<EvaluationBackend> backend_;
  reward::HierarchicalReward reward_;
  TaskObserver observer_;
};

// The info keys every episode carries ("task", "env.id", "episode.seed", ...).
Info episode_ids_info(const Episode& episode);

// SHA-256 of a matrix observation's sampled indices (rows and cols), for replay validation.
std::string observation_digest(const MatrixObservation& observation);

}  // namespace sparserl::env
