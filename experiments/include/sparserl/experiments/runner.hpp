// The experiment runner: what `sparserl train`, `eval`, `bench` and `quickstart` do with a config.
// It turns a resolved Config into the project's own structs (reward::EvaluatorConfig with its
// SandboxLimits and GpuProtocol, reward::RewardConfig, env::EnvConfig, agents::AgentConfig and the
// stage configs), builds the matrix store, the task list, the evaluator (compile-only without a
// GPU, said once on stderr) and the environment, and runs the configured stages into a run
// directory (run_directory.hpp):
//
//   pretrain -> sft -> rl -> eval      each optional (train.stages); rl runs agent.algorithm
//
// Steps count through the stages (pretraining's steps, then SFT's, then RL's updates), so
// metrics.jsonl and checkpoints/ read as one run. The stages' own loops (agents/training.hpp)
// do the work; the runner's hooks stop them at a step boundary on SIGINT / SIGTERM (a checkpoint
// is saved first) and file every checkpoint into checkpoints/ (last N and the best kept) with a
// stage.json saying which stage and step it belongs to. Each finished stage's policy is kept
// apart, unpruned, in policies/<stage>/. RL episodes go to trajectories.h5. At the end, or on a
// stop or a failure, report.md and its plots are written and run.json records the outcome.
//
// Resume (`sparserl train --resume RUN_DIR`) reads config.resolved.toml, takes the latest
// checkpoint, drops the metrics lines and trajectory rows logged after it, and continues: on the
// CPU the resumed run ends with the same numbers as an uninterrupted one (the stages' data order,
// samples and task stream are functions of the seed and the step).
//
// Paths: relative paths of a config resolve against the root (resolve_root); the root and the
// runs folder end up absolute in config.resolved.toml, so a run directory resumes from anywhere.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/datasets/task.hpp"
#include "sparserl/env/sparse_cuda_env.hpp"
#include "sparserl/env/task_source.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/run_info.hpp"
#include "sparserl/reward/evaluator.hpp"
#include "sparserl/reward/reward.hpp"
#include "sparserl/reward/sandbox.hpp"
#if defined(SPARSERL_HAVE_AGENTS)
#include "sparserl/agents/config.hpp"
#endif

namespace sparserl::experiments {

// A config that names something that does not exist or does not fit together (a missing split
// file, stages out of order, a policy the env cannot feed); the message names the key path.
class RunnerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---- From a config to the project's structs -----------------------------------------------------

// The folder relative paths start from: `root_override` (--root) when given, else experiment.root
// relative to the config file's folder (Config::file(); the working directory for a config that
// was not read from a file). Absolute.
std::filesystem::path resolve_root(const Config& config,
                                   const std::optional<std::filesystem::path>& root_override);
// `path` against `root` ("" stays "", absolute paths stay as they are).
std::filesystem::path resolve_path(const std::filesystem::path& root, const std::string& path);

reward::SandboxLimits sandbox_limits(const Config& config);  // through reward::sandbox_knobs()
reward::GpuProtocol gpu_protocol(const Config& config);      // [check], [timing]
reward::RewardConfig reward_config(const Config& config);    // [reward]; RunnerError if invalid
// [evaluator], [sandbox], [check], [timing], and where matrices are (data.data_dir, index_dirs).
reward::EvaluatorConfig evaluator_config(const Config& config, const std::filesystem::path& root);
// [env] and [reward]; the seed is experiment.seed.
env::EnvConfig env_config(const Config& config);
env::TaskTemplate task_template(const Config& config);  // data.op, dtype, k
// The tasks of a part of data.split (or data.uris when the split is empty), selected by
// data.regimes / sources / families, catalogue matrices absent from this machine skipped, at most
// `max_tasks` (0: all), in file order (split_tasks.hpp: part_tasks, which also says what was
// skipped). RunnerError naming the key when there are none.
std::vector<datasets::Task> config_tasks(const Config& config, const std::filesystem::path& root,
                                         std::string_view part, std::int64_t max_tasks);

#if defined(SPARSERL_HAVE_AGENTS)
// The AgentConfig of one stage ("pretrain", "sft" or "rl"): [policy] (preset, then the shape keys
// that are not 0), the env's max_tokens / mask / K / D, [agent], [agent.optimizer] with the
// stage's lr and schedule, [agent.sampling] and the algorithms' sections. RunnerError naming the
// key when AgentConfig::validate() refuses it.
agents::AgentConfig agent_config(const Config& config, std::string_view stage);
#endif

// Whether this build has the learned agents (LibTorch).
bool have_learned_agents();

// ---- Runs ---------------------------------------------------------------------------------------

struct RunnerOptions {
  std::optional<std::filesystem::path> root;      // --root
  std::optional<std::filesystem::path> runs_dir;  // --runs-dir (relative to the working directory)
  std::string command;                            // the command line, for run.json
  // --part of `sparserl bench` / `eval`: the part to read, over bench.part / eval.part. Only this
  // way may a run read the test part (split_tasks.hpp).
  std::optional<std::string> part;
  std::ostream* log = nullptr;                    // notices and progress; nullptr: std::cerr
  // --backend of `sparserl train` started as one rank of several: auto, gloo or nccl
  // (agents/distributed.hpp: choose_backend).
  std::string backend = "auto";
};

struct RunOutcome {
  std::filesystem::path run_dir;
  RunStatus status = RunStatus::running;
  std::filesystem::path report;    // RUN_DIR/report.md
  std::vector<std::string> notes;  // what the report left out (plots without gnuplot, ...)
};

// What a command prints when a run ends: its status, the run directory, the report and the notes
// of the report (plots left out and why), one per line; for an interrupted `resumable` run (train)
// also the command that continues it.
std::string describe_outcome(const RunOutcome& outcome, bool resumable);
// The exit status of a command whose run ended so: 0 completed, 130 interrupted (as a shell
// reports a process stopped by SIGINT), 1 otherwise.
int exit_status(const RunOutcome& outcome);

// `sparserl train CONFIG`: a new run directory, the stages of train.stages, the report. Errors in
// the config or its inputs throw before the run directory is made; a failure during the run is
// recorded (status failed, report written) and rethrown. When the environment describes several
// ranks (WORLD_SIZE > 1, agents/distributed.hpp) this process joins them: rank 0 makes and writes
// the run directory, every rank trains its share of each batch (train.pretrain_batch_size,
// train.sft_batch_size and train.tasks_per_update must divide by the world size), and the others
// return their status without a report. resume_training joins the same way.
RunOutcome run_training(Config config, const RunnerOptions& options);
// `sparserl train --resume RUN_DIR`: continues from the latest checkpoint. RunnerError for a run
// that already completed.
RunOutcome resume_training(const std::filesystem::path& run_dir, const RunnerOptions& options);
// `sparserl eval CONFIG --checkpoint DIR`: the eval stage alone on a policy checkpoint, into a new
// run directory (results.csv, metrics.jsonl with the eval/ statistics, report.md).
RunOutcome run_checkpoint_evaluation(Config config, const std::filesystem::path& checkpoint,
                                     const RunnerOptions& options);
// `sparserl bench CONFIG`: bench.agents x the matrices of bench.part -> results.csv (per matrix
// and agent, with the pass@k columns), summary.csv (per agent) and report.md in a new run
// directory. Without a GPU the correctness and speed columns are n/a (empty in the CSVs).
RunOutcome run_bench(Config config, const RunnerOptions& options);

}  // namespace sparserl::experiments
