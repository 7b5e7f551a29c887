// checkpoints/: one folder per saved step, step-000123/, holding the policy's files as the agents
// library writes them (opaque here) and meta.json (step, time, the statistics at that step). A
// checkpoint appears whole or not at all: it is written into a hidden temporary folder and renamed
// into place, so a run killed while saving leaves only a temporary folder, which the next save
// removes. After each save the store keeps the last N checkpoints and the best one by a chosen
// statistic (say eval/greedy_speedup_geomean), and deletes the rest. Resume takes latest().
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/experiments/metrics.hpp"

namespace sparserl::experiments {

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CheckpointPolicy {
  int keep_last = 3;             // the newest N are kept (0: only the best)
  std::string best_metric;       // empty: no best is kept beyond the last N
  bool higher_is_better = true;  // false: the smallest value is best (a loss)
};

struct CheckpointInfo {
  std::filesystem::path dir;
  std::int64_t step = 0;
  double time = 0;  // seconds since the UNIX epoch
  Statistics metrics;

  [[nodiscard]] std::optional<double> metric(std::string_view name) const;
};

// "step-000123" (at least six digits; more when the step needs them).
std::string checkpoint_folder_name(std::int64_t step);

// Reads DIR/meta.json (CheckpointError naming the file when missing or malformed).
CheckpointInfo read_checkpoint(const std::filesystem::path& dir);

class CheckpointStore {
 public:
  // The folder is created on the first save.
  explicit CheckpointStore(std::filesystem::path dir, CheckpointPolicy policy = {});

  // Writes checkpoint `step`: `write_files` fills an empty temporary folder with the policy's
  // files, meta.json is added, the folder is renamed to step-NNNNNN (replacing an older save of the
  // same step), and the store is pruned. Exceptions from `write_files` propagate after the
  // temporary folder is removed.
  CheckpointInfo save(std::int64_t step, const Statistics& metrics,
                      const std::function<void(const std::filesystem::path& dir)>& write_files);

  // Every complete checkpoint, by ascending step (temporary folders and folders without meta.json
  // are not checkpoints).
  [[nodiscard]] std::vector<CheckpointInfo> list() const;
  [[nodiscard]] std::optional<CheckpointInfo> latest() const;
  // The checkpoint with the best value of the policy's metric (ties: the earlier step); nullopt
  // when no metric is chosen or no checkpoint has a finite value of it.
  [[nodiscard]] std::optional<CheckpointInfo> best() const;
  // Deletes checkpoints beyond the last N and the best, and leftover temporary folders.
  void prune();

  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }
  [[nodiscard]] const CheckpointPolicy& policy() const { return policy_; }

 private:
  std::filesystem::path dir_;
  CheckpointPolicy policy_;
};

}  // namespace sparserl::experiments
