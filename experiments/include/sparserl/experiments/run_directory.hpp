// A run directory holds everything needed to trust and reproduce one run:
//
//   <output_dir>/<experiment>__<seed>__<UTC time>/     e.g. runs/quickstart__0__20250314T153012Z/
//     config.resolved.toml   every key with the value the run used (Config::to_toml())
//     run.json               host, GPU, versions, git commit, seeds, start / end, status
//     (run_info.hpp) metrics.jsonl          one line of statistics per logged step (metrics.hpp)
//     trajectories.h5        episodes, written by env's TrajectoryWriter (docs/trajectories.md)
//     results.csv            per-matrix results of an evaluation or benchmark (results.hpp)
//     checkpoints/           step-NNNNNN/ folders, last N and best (checkpoints.hpp)
//     report.md, plots/      tables and PNG plots (report.hpp, `sparserl plot RUN_DIR`)
//
// create() builds the folder under a hidden temporary name and renames it into place with
// RENAME_NOREPLACE, so a run directory is never seen half-made and two runs started in the same
// second never share one (the second gets a "-2" suffix). open() takes an existing directory back
// for resume: its resolved config, its run.json and its latest checkpoint. run() executes a
// training loop under StopSignals and records how it ended in run.json.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sparserl/experiments/checkpoints.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/run_info.hpp"
#include "sparserl/experiments/stop_signals.hpp"

namespace sparserl::reward {
struct GpuInfo;
}

namespace sparserl::experiments {

class RunDirectoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What the caller knows when a run starts, beyond the config.
struct RunStart {
  std::string command;  // the command line, for run.json
  const reward::GpuInfo* gpu =
      nullptr;                   // the evaluator's GpuInfo; nullptr: no GPU queried ("none")
  std::string libtorch_version;  // from the agents library; empty: "none"
  // Seeds beyond experiment.seed (which is always recorded first), e.g. {"env", 17}.
  std::vector<std::pair<std::string, std::uint64_t>> seeds;
  // The project tree whose git commit is recorded; empty: the tree this build came from.
  std::filesystem::path project_dir;
  // The split the run reads (run.json "split"); nullopt: none recorded.
  std::optional<SplitRecord> split;
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
};

// "<name>__<seed>__<YYYYMMDDTHHMMSSZ>", with characters outside [A-Za-z0-9._-] in the name replaced
// by '_' (the name becomes a folder name).
std::string run_directory_name(const std::string& experiment, std::uint64_t seed,
                               std::chrono::system_clock::time_point time);

class RunDirectory {
 public:
  // Creates a new run directory under the config's experiment.output_dir (created if needed) with
  // config.resolved.toml, run.json (status running), an empty metrics.jsonl, checkpoints/ and
  // plots/.
  static RunDirectory create(const Config& config, const RunStart& start = {});
  // An existing run directory (RunDirectoryError naming it when config.resolved.toml or run.json is
  // missing).
  static RunDirectory open(const std::filesystem::path& dir);

  [[nodiscard]] const std::filesystem::path& root() const { return root_; }
  [[nodiscard]] std::string run_id() const { return root_.filename().string(); }
  [[nodiscard]] std::filesystem::path config_path() const { return root_ / "config.resolved.toml"; }
  [[nodiscard]] std::filesystem::path run_info_path() const { return root_ / "run.json"; }
  [[nodiscard]] std::filesystem::path metrics_path() const { return root_ / "metrics.jsonl"; }
  [[nodiscard]] std::filesystem::path trajectories_path() const {
    return root_ / "trajectories.h5";
  }
  [[nodiscard]] std::filesystem::path results_path() const { return root_ / "results.csv"; }
  [[nodiscard]] std::filesystem::path checkpoints_dir() const { return root_ / "checkpoints"; }
  [[nodiscard]] std::filesystem::path report_path() const { return root_ / "report.md"; }
  [[nodiscard]] std::filesystem::path plots_dir() const { return root_ / "plots"; }
  // The SFT stage's pairs from the in-process template search (train.sft_pairs = "design-space"),
  // saved once computed: a resumed run trains on them instead of searching again.
  [[nodiscard]] std::filesystem::path sft_pairs_path() const { return root_ / "sft-pairs.json"; }

  // The resolved config read back (overrides applied on top, e.g. a longer budget for a resume).
  [[nodiscard]] Config config(const std::vector<std::string>& overrides = {}) const;
  [[nodiscard]] RunInfo info() const;
  // Replaces run.json atomically.
  void write_info(const RunInfo& info) const;
  // Sets the status (and, unless running, the end time) in run.json; `error` for failed.
  void mark(RunStatus status, const std::string& error = {}) const;
  // Before continuing a run: status running again, the end time cleared, the resume time appended.
  void mark_resumed() const;

  // The checkpoint store with the config's [checkpoints] policy.
  [[nodiscard]] CheckpointStore checkpoints(const CheckpointPolicy& policy) const;
  [[nodiscard]] CheckpointStore checkpoints() const;  // policy from config.resolved.toml
  [[nodiscard]] std::optional<CheckpointInfo> latest_checkpoint() const;

  // Runs `body` with SIGINT / SIGTERM turned into a stop request (body polls stop.requested()
  // between steps and returns early), then records the outcome: interrupted if a stop was
  // requested, completed if body returned otherwise, failed (with the message) if it threw - the
  // exception is rethrown after run.json says so.
  RunStatus run(const std::function<void(const StopSignals& stop)>& body) const;

 private:
  explicit RunDirectory(std::filesystem::path root) : root_(std::move(root)) {}
  std::filesystem::path root_;
};

// The [checkpoints] section of a config as a CheckpointPolicy.
CheckpointPolicy checkpoint_policy(const Config& config);

}  // namespace sparserl::experiments
