// The training stages as plain functions of a config struct, for the experiment runner (`sparserl
// train CONFIG`) and scripted GPU runs: pretraining on the kernel corpus, SFT on (matrix -> best
// kernel) pairs, RL with REINFORCE / PPO / GRPO against the environment, and the evaluation of a
// policy (greedy and pass@k) that fills the results tables. No LibTorch in this header.
//
// Every stage writes checkpoints to OUTPUT_DIR/latest (replaced atomically) and OUTPUT_DIR/final,
// and resumes from OUTPUT_DIR/latest when it exists: the resumed run continues the same trajectory
// of numbers (data order, samples and updates are functions of the seed and the step). Statistics
// go to the callback every log_every steps; names are in docs/agents.md.
//
// Data parallel (a stage config's `group` of several ranks, docs/distributed.md): every rank runs
// the stage with the same config and OUTPUT_DIR; each takes its share of every batch (SFT and
// pretraining examples, RL tasks), gradients and statistics are averaged over all ranks, so the
// statistics every rank reports are those of the whole batch. Rank 0 alone writes checkpoints and
// calls on_checkpoint; every rank starts a stage after rank 0 reached it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/agents/config.hpp"
#include "sparserl/agents/distributed.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/env/agent.hpp"
#include "sparserl/env/observation.hpp"
#include "sparserl/env/sparse_cuda_env.hpp"
#include "sparserl/env/tokenizer.hpp"

namespace sparserl::agents {

// stage ("pretrain", "sft", "rl", "eval"), its step, the statistics of that step.
using StatisticsCallback = std::function<void(std::string_view stage, std::int64_t step,
                                              const env::Statistics& statistics)>;
// Every episode an RL stage or an evaluation produced (for the trajectory recorder).
using EpisodeCallback = std::function<void(const env::Episode& episode)>;

struct StageResult {
  std::filesystem::path checkpoint;  // OUTPUT_DIR/final (OUTPUT_DIR/latest when stopped)
  std::int64_t steps = 0;            // steps (updates) done in total, resumed ones included
  bool resumed = false;
  bool stopped = false;  // StageHooks::stop_requested ended the stage early
  env::Statistics last;  // the statistics of the last step
};

// How the experiment runner follows a stage (both optional): it stops the loop at a step boundary
// on SIGINT / SIGTERM, and files every saved checkpoint into its run directory.
struct StageHooks {
  // Polled after every step; true saves OUTPUT_DIR/latest and ends the stage there (stopped).
  std::function<bool()> stop_requested;
  // After every save of OUTPUT_DIR/latest (periodic, on a stop, at the end of the stage): the
  // folder, the steps done and the statistics of the last step.
  std::function<void(const std::filesystem::path& checkpoint, std::int64_t steps,
                     const env::Statistics& statistics)>
      on_checkpoint;
};

// The LibTorch version this library was built with ("1.13.0"), for run.json.
std::string libtorch_version();

// The value of a named statistic; std::out_of_range naming it when absent.
double find_statistic(const env::Statistics& statistics, std::string_view name);

// Where checkpoints go: OUTPUT_DIR/latest and OUTPUT_DIR/final.
std::filesystem::path latest_checkpoint(const std::filesystem::path& output_dir);
std::filesystem::path final_checkpoint(const std::filesystem::path& output_dir);
// Saves to OUTPUT_DIR/NAME through a temporary folder and a rename.
void save_checkpoint(const PolicyAgent& agent, const std::filesystem::path& output_dir,
                     const std::string& name);
// The end of step `done` of `total`: saves OUTPUT_DIR/latest when `checkpoint_every` says so or a
// stop was requested, tells the hooks, and returns true when the stage is to end here.
bool end_of_step(const PolicyAgent& agent, const std::filesystem::path& output_dir,
                 const StageHooks& hooks, std::int64_t done, std::int64_t total,
                 int checkpoint_every, const env::Statistics& statistics);
// The end of a stage: OUTPUT_DIR/latest and OUTPUT_DIR/final saved (only latest, already saved,
// when stopped), the hooks told, result.checkpoint and result.steps filled in.
StageResult finish_stage(const PolicyAgent& agent, const std::filesystem::path& output_dir,
                         const StageHooks& hooks, StageResult result);

// A stage's loop as its config sets it: the stage's name in the statistics, its length in steps
// (updates), when it logs and checkpoints, where and to whom.
struct StageLoop {
  std::string_view stage;
  std::int64_t steps = 0;
  int log_every = 1;
  int checkpoint_every = 0;
  std::filesystem::path output_dir;
  StageHooks hooks;
};

// The loop of a stage config (PretrainConfig, SftConfig, RlConfig) of `steps` steps.
template <typename StageConfig>
StageLoop stage_loop(std::string_view stage, std::int64_t steps, const StageConfig& config) {
  return {.stage = stage,
          .steps = steps,
          .log_every = config.log_every,
          .checkpoint_every = config.checkpoint_every,
          .output_dir = config.output_dir,
          .hooks = config.hooks};
}

// The agent a stage trains: the one saved at OUTPUT_DIR/latest when there is one (result.resumed
// set), else a new one of `config` over `vocabulary`, with the weights of `init_checkpoint` when
// given. With a group of several ranks: opened once every rank has arrived, and joined to the
// group (rank 0's weights on every rank).
std::unique_ptr<PolicyAgent> open_stage_agent(
    const std::filesystem::path& output_dir, const AgentConfig& config,
    std::shared_ptr<const env::Vocabulary> vocabulary,
    const std::optional<std::filesystem::path>& init_checkpoint, StageResult& result,
    const std::shared_ptr<ProcessGroup>& group = nullptr);

// One step of a stage (its index, from 0): the step's statistics.
using StageStep = std::function<env::Statistics(std::int64_t step)>;
// What a stage adds to the statistics of a step it logs (`done` steps so far).
using StageLogAddition = std::function<void(std::int64_t done, env::Statistics& statistics)>;

// A stage's steps from agent.counters().updates on: each step's statistics go to on_statistics
// every log_every steps and at the last (after `on_log` added to them), end_of_step follows every
// step, finish_stage the last.
StageResult run_stage_steps(PolicyAgent& agent, const StageLoop& loop, StageResult result,
                            const StageStep& step, const StageLogAddition& on_log,
                            const StatisticsCallback& on_statistics);

// The steps of a supervised stage (pretraining, SFT) over `examples` items, batch_size a step, as
// run_stage_steps: a logged step gets "epoch", then what `on_log` adds, then
// "perf/tokens_per_second" (the steps' "tokens" since the loop began, over its time).
StageResult run_supervised_steps(PolicyAgent& agent, const StageLoop& loop, int batch_size,
                                 std::size_t examples, StageResult result, const StageStep& step,
                                 const std::function<void(env::Statistics&)>& on_log,
                                 const StatisticsCallback& on_statistics);

// The tokens of a program when the tokenizer takes it and they are at most max_tokens; nullopt
// otherwise (a supervised stage skips and counts it).
std::optional<std::vector<env::TokenId>> tokens_within(const env::Tokenizer& tokenizer,
                                                       const std::string& program, int max_tokens);

// The episode pipeline that finishes `agent`'s completions in `env`: the env's own when the agent
// writes the env's closed vocabulary; else one over the agent's tokenizer with the env's config,
// matrix store and evaluator (held by `own`), so an HF policy's tokens are decoded by the
// tokenizer that wrote them.
const env::EpisodePipeline& agent_pipeline(const PolicyAgent& agent, const env::SparseCudaEnv& env,
                                           std::unique_ptr<env::EpisodePipeline>& own);

// ---- Pretraining -------------------------------------------------------------------------------

struct PretrainConfig {
  AgentConfig agent;  // shape, optimiser, seed, device
  int steps = 1000;
  int batch_size = 32;
  int log_every = 10;
  int checkpoint_every = 0;                              // 0: at the end only
  std::filesystem::path output_dir;                      // required
  std::optional<std::filesystem::path> init_checkpoint;  // weights to start from
  StageHooks hooks;
  std::shared_ptr<ProcessGroup> group;  // data parallel: batch_size must divide by its size
};

// Next-token loss on the corpus programs without a matrix prefix. Programs the agent's tokens
// (TokenSpace::program_tokens) refuse or longer than policy.max_tokens are skipped (counted in the
// statistics as corpus/skipped); none usable is an error. `texts` are plain text (source files
// of a CUDA corpus) for an HF model: each cut into sequences of policy.max_tokens tokens
// (corpus/text_sequences); the closed vocabulary reads each as a program. The batch at step s is
// a slice of seeded per-epoch permutations.
StageResult run_pretraining(const PretrainConfig& config, const std::vector<std::string>& corpus,
                            const env::Tokenizer& tokenizer,
                            const StatisticsCallback& on_statistics = {},
                            const std::vector<std::string>& texts = {});

// ---- SFT ---------------------------------------------------------------------------------------

struct SftPair {
  datasets::Task task;
  std::string program;  // the best program of the template search for the task
};

// The matrix observation of a task, sampled with a seed (the env's sampling and embedding).
using ObservationFn = std::function<std::shared_ptr<const env::MatrixObservation>(
    const datasets::Task& task, std::uint64_t seed)>;
// Observations from a matrix store (features cached per URI): what SparseCudaEnv would show.
ObservationFn store_observer(std::shared_ptr<datasets::MatrixStore> store,
                             env::ObservationConfig config);

struct SftConfig {
  AgentConfig agent;
  int steps = 1000;
  int batch_size = 32;
  int log_every = 10;
  int checkpoint_every = 0;
  std::filesystem::path output_dir;
  std::optional<std::filesystem::path> init_checkpoint;  // usually the pretraining's final
  // A fresh sample of K nonzeros per epoch (augmentation), else one fixed observation per pair.
  bool resample_observations = true;
  std::uint64_t observation_seed = 0;
  StageHooks hooks;
  std::shared_ptr<ProcessGroup> group;  // data parallel: batch_size must divide by its size
};

// The SFT stage's own knobs (resample_observations), paths relative to the stage.
const datasets::Knobs<SftConfig>& sft_stage_knobs();

// Loss on the code tokens only, the matrix observation as the prompt. `validation` pairs (optional)
// give sft/val_loss at every log step.
StageResult run_sft(const SftConfig& config, const std::vector<SftPair>& pairs,
                    const ObservationFn& observe, const env::Tokenizer& tokenizer,
                    const StatisticsCallback& on_statistics = {},
                    const std::vector<SftPair>& validation = {});

// ---- RL ----------------------------------------------------------------------------------------

// The RL stage's default learning rate: RL fine-tunes the SFT policy, far below pretraining's.
inline constexpr double kRlLearningRate = 1e-5;

struct RlConfig {
  AgentConfig agent;  // agent.algorithm: one that learns from rollouts, with its knobs
  int updates = 100;
  int tasks_per_update = 8;
  int samples_per_task = 8;  // G: completions per task (one group)
  int log_every = 1;
  int checkpoint_every = 10;
  std::filesystem::path output_dir;
  std::optional<std::filesystem::path> init_checkpoint;  // the SFT checkpoint: policy and reference
  std::uint64_t seed = 0;                                // task order and episode seeds
  // Sample update u + 1's batch while update u's is evaluated (train.overlap_generation): the batch
  // then comes from the policy before update u, one update stale, and the algorithm must correct
  // for that (Algorithm::corrects_stale_samples: PPO and GRPO, through the log-probabilities
  // recorded at sampling); others are refused. See docs/agents.md (measured on one GPU: slower).
  bool overlap_generation = false;
  StageHooks hooks;
  // Data parallel: tasks_per_update must divide by its size; each rank takes consecutive tasks.
  std::shared_ptr<ProcessGroup> group;
};

// Each update, CleanRL's loop over the env's EpisodePipeline: start the next tasks_per_update
// tasks of a copy of the env's task source (seeded with config.seed; episode seeds from
// config.seed and the episode's index) -> prompts; generate samples_per_task completions each
// (batched, under the env's mask) -> finish them through the pipeline (decoded, evaluated,
// rewarded; a completion without <eos> gets the env's truncation reward) -> episodes, one group per
// prompt -> agent.update(episodes). The env's mask mode and max_tokens must match the agent's.
// With several ranks every rank passes on_episode or none; rank 0's receives every rank's episodes
// in the order of one process.
StageResult run_rl(const RlConfig& config, env::SparseCudaEnv& env,
                   const StatisticsCallback& on_statistics = {},
                   const EpisodeCallback& on_episode = {});

// The statistics every RL update reports about its rollouts (reward, completions, env outcomes).
env::Statistics rollout_statistics(std::span<const Rollout> rollouts);

// ---- Evaluation --------------------------------------------------------------------------------

struct EvaluationConfig {
  bool greedy = true;       // one greedy completion per task
  int samples = 8;          // k sampled completions per task (pass@k); 0: none
  SamplingConfig sampling;  // of the k samples
  int tasks_per_batch = 8;  // tasks generated together
  std::uint64_t seed = 0;   // episode seeds of the observations
};

struct TaskEvaluation {
  datasets::Task task;
  bool greedy_compiled = false, greedy_correct = false;
  double greedy_speedup = 0;  // 0 unless correct and timed
  int sampled = 0, sampled_compiled = 0, sampled_correct = 0;
  double best_speedup = 0;  // over correct samples (greedy included)
};

struct EvaluationSummary {
  std::vector<TaskEvaluation> tasks;
  env::Statistics statistics;    // eval/greedy_compile_rate, eval/pass@k_correct, ... (docs)
  double tokens_per_second = 0;  // sampling throughput over the whole evaluation
};

// Greedy and pass@k evaluation of a policy on a list of tasks through the env's evaluator.
// on_episode (optional) receives every scored completion, the policy id suffixed ":greedy" or
// ":sampled"; episode index = task index x (greedy + samples) + position (greedy first).
EvaluationSummary run_evaluation(PolicyAgent& agent, env::SparseCudaEnv& env,
                                 const std::vector<datasets::Task>& tasks,
                                 const EvaluationConfig& config,
                                 const EpisodeCallback& on_episode = {});

}  // namespace sparserl::agents
