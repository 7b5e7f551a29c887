// The summary behind `sparserl inspect FILE.h5`: what a trajectory file (docs/trajectories.md)
// holds - episodes, tasks, policies, compile / correct rates, reward statistics, speedups and error
// kinds, overall and per task. It reads the file with the HDF5 C API directly rather than through
// env's reader, and tolerates what that reader would refuse: only /episodes/reward is required,
// every other column is used when present and listed as missing otherwise, so files of older or
// newer format versions, or written by other tools in the same layout, can still be inspected. Rows
// are the `rows` attribute (the complete rows of an interrupted run), capped by the shortest column
// read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparserl/experiments/json.hpp"

namespace sparserl::experiments {

class TrajectoryFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ValueStats {
  std::int64_t count = 0;  // finite values
  double mean = 0, std = 0, min = 0,
         max = 0;  // std: population standard deviation; NaN when count = 0
};

struct TaskTrajectorySummary {
  std::string task;  // the `task` column ("URI op dtype"), else `task_uri`
  std::int64_t episodes = 0, evaluated = 0, compiled = 0, correct = 0, timed = 0;
  ValueStats reward;
  double best_speedup = 0;  // over correct, timed episodes (NaN: none)
};

struct TrajectorySummary {
  std::filesystem::path file;
  std::string format;  // the `format` attribute ("sparserl-trajectories"), "" if absent
  std::int64_t format_version = 0;
  std::string run_id, vocabulary_name, created_by;
  std::int64_t rows_attribute = -1;  // the `rows` attribute, -1 when absent
  std::int64_t episodes = 0;         // rows summarised
  std::int64_t truncated = 0;        // cut at max_tokens
  std::int64_t evaluated = 0, compiled = 0, correct = 0, timed = 0;
  bool gpu = false;         // some evaluated episode ran the GPU stages
  double compile_rate = 0;  // compiled / evaluated (NaN when nothing was evaluated)
  double correct_rate = 0;  // correct / evaluated (NaN without GPU stages)
  ValueStats reward, length, speedup;
  double speedup_geomean = 0;                    // over correct, timed episodes (NaN: none)
  double faster_share = 0;                       // of timed episodes, speedup > 1
  std::map<std::string, std::int64_t> errors;    // evaluated episodes by `error` kind
  std::map<std::string, std::int64_t> policies;  // episodes by `policy_id`
  std::vector<TaskTrajectorySummary> tasks;      // by task name
  std::vector<std::string> missing_columns;      // optional columns the file does not have
  std::vector<std::string> notes;                // e.g. a partial row past `rows` was ignored

  [[nodiscard]] Json to_json(bool per_task) const;
  [[nodiscard]] std::string to_text(bool per_task) const;
};

// TrajectoryFileError naming the file when it cannot be opened as HDF5 or has no /episodes/reward.
TrajectorySummary summarize_trajectories(const std::filesystem::path& file);

}  // namespace sparserl::experiments
