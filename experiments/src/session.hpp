// What every runner command (train, eval, bench) builds from a config before it runs anything: the
// matrix store, the evaluator behind the environment (its notices filtered so that the absence of
// a GPU is said once, in one sentence), the tokenizer, and environments on demand. Internal to
// experiments/ (runner.cpp, bench.cpp).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/env/evaluator_backend.hpp"
#include "sparserl/env/sparse_cuda_env.hpp"
#include "sparserl/env/task_source.hpp"
#include "sparserl/env/tokenizer.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/progress.hpp"
#include "sparserl/experiments/run_directory.hpp"
#include "sparserl/experiments/runner.hpp"
#include "sparserl/experiments/split_tasks.hpp"
#include "sparserl/reward/evaluator.hpp"

namespace sparserl::experiments {

// Lines from any thread: to the user's stream (say), or to the run directory's evaluator.log
// (record: the worker pool's sandbox tables and worker events, kept until the file is known).
class Notices {
 public:
  explicit Notices(std::ostream& out) : out_(out) {}
  void say(const std::string& line);
  void record(const std::string& line);
  // From now on record() appends to FILE; what was recorded before is written first.
  void record_to(const std::filesystem::path& file);
  [[nodiscard]] std::ostream& stream() { return out_; }

 private:
  std::ostream& out_;
  std::mutex mutex_;
  std::vector<std::string> pending_;
  std::filesystem::path file_;
};

// The sentence a run without GPU stages prints once.
inline constexpr const char* kNoGpuNotice = "no GPU: only the compile stage of the reward runs";

struct Session {
  Config config;
  std::filesystem::path root;
  std::shared_ptr<Notices> notices;
  std::shared_ptr<datasets::MatrixStore> store;
  std::shared_ptr<reward::Evaluator> evaluator;
  std::shared_ptr<env::EvaluatorBackend> backend;
  reward::GpuInfo gpu_info;
  bool gpu = false;  // the GPU stages run (a GPU is present and evaluator.compile_only is off)
  std::shared_ptr<const env::Tokenizer> tokenizer;

  // Starts the evaluator, waits for its GPU probe and says once what the reward will measure.
  static std::unique_ptr<Session> open(Config config, std::filesystem::path root,
                                       std::ostream& log);

  // An environment over `tasks` with `env_config`, sharing this session's store and evaluator.
  [[nodiscard]] std::unique_ptr<env::SparseCudaEnv> make_env(const env::EnvConfig& env_config,
                                                             env::TaskSource tasks) const;
  [[nodiscard]] ProgressOptions progress() const;
  void say(const std::string& line) const { notices->say(line); }
  // Sends the evaluator's notices to RUN_DIR/evaluator.log.
  void record_to(const std::filesystem::path& run_dir) const {
    notices->record_to(run_dir / "evaluator.log");
  }
};

// How many template searches run at once (TemplateSearch::search_all) for a knob's value:
// `configured` when positive, else the evaluator's GPU workers, at least 2 and at most 4 (a GPU
// worker keeps the matrices of its last 16 tasks within 8 GiB).
int parallel_searches(const Session& s, std::int64_t configured);

// The data directory: data.data_dir against the root, or $SPARSERL_DATA_DIR when the config does
// not set the key.
std::filesystem::path data_dir(const Config& config, const std::filesystem::path& root);
// data.index_dirs against the root; folders that do not exist are left out (and named in
// `missing`).
std::vector<std::filesystem::path> index_dirs(const Config& config,
                                              const std::filesystem::path& root,
                                              std::vector<std::string>* missing = nullptr);

// Copies every entry of folder `from` into the existing folder `to` (recursively), except the
// names in `except`.
void copy_folder_contents(const std::filesystem::path& from, const std::filesystem::path& to,
                          const std::vector<std::string>& except = {});

// options.log, or std::cerr.
std::ostream& log_stream(const RunnerOptions& options);

// Pins what a run resolved (the root, the runs folder, the data directory) into the config as
// absolute paths, so config.resolved.toml reads the same from anywhere.
void pin_paths(Config& config, const std::filesystem::path& root, const RunnerOptions& options);

// How a command that reads one part of the split (`sparserl bench`, `sparserl eval`) starts: the
// root and the pinned paths, --part over SECTION.part (the test part only when --part names it),
// then `check` (the command's own checks, told before any matrix is read), then the part's tasks,
// at most SECTION.max_tasks, with the test matrices refused and the part's note on the log.
struct PartCommand {
  std::ostream& log;
  std::filesystem::path root;
  PartTasks part;
};
PartCommand start_part_command(Config& config, const RunnerOptions& options,
                               const std::string& section, std::string_view command,
                               const std::function<void(const std::filesystem::path&)>& check);

// run.json's facts from the session: the command, the GPU, LibTorch's version, the seeds.
RunStart run_start(const Session& session, const RunnerOptions& options);

// Writes the report of a run that ended with `status` (a report that cannot be written is said on
// `log`, never thrown over the run's own outcome).
RunOutcome finish_run(const RunDirectory& run, const Config& config, RunStatus status,
                      std::ostream& log);

}  // namespace sparserl::experiments
