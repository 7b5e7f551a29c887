// The measurement store: every candidate the template search has timed, kept on disk across runs
// so that a cost model can be fitted on them (learned_cost_model.hpp) - the search's memory of what
// each design did on each matrix. A JSON-lines file (docs/design-space.md, "The measurement
// store"):
//
//   line 1     {"format": "sparserl-measurements", "format_version": 1, "created_by": "...",
//               "created_utc": "..."}
//   then       one JSON object per line, "kind" first:
//              "candidate"  one evaluation of one design on one task: the matrix URI and its
//                           features, op, dtype, k, design id and generator, round and protocol,
//                           device, verdict (compiled, correct, timed, error), median / p10 / p90
//                           time, cuSPARSE's time and path, the analytic model's prediction
//              "search"     one finished search of one task: device, budget, evaluations, the best
//                           design and its time, cuSPARSE's, the speedup, the search's wall time
//                           and how the candidates were chosen
//
// Records are appended one search at a time (every candidate, then the search line) and flushed,
// so an interrupted run loses at most the search in flight; a task whose "search" line is present
// for the device is done, which is how `sparserl tune --resume` skips it. One writer at a time.
// Reading is strict: a file that is not a store, a format_version this build does not know, a
// malformed line or a record missing a field is a MeasurementStoreError naming the file and line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparserl/datasets/features.hpp"
#include "sparserl/datasets/task.hpp"

namespace sparserl::kernels {

using datasets::DType;
using datasets::Op;
struct SearchResult;  // template_search.hpp

class MeasurementStoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What every record names: the task and the GPU it ran on.
struct MeasuredTask {
  std::string uri;
  Op op = Op::spmv;
  DType dtype = DType::f32;
  std::int64_t k = 1;  // 1 for SpMV
  std::string device;  // "" without a GPU

  // "URI op dtype[ k=K]", as datasets::Task::str().
  [[nodiscard]] std::string task_key() const;
};

// One candidate evaluation as the store keeps it.
struct Measurement : MeasuredTask {
  datasets::MatrixFeatures features;
  std::string design;  // DesignPoint::id()
  std::string generator;
  int round = 1;
  std::string protocol;  // screen, full, compile
  bool compiled = false;
  bool correct = false;
  bool timed = false;
  std::string error;  // reward::ErrorKind's name
  double median_us = 0, p10_us = 0, p90_us = 0;
  double baseline_us = 0;
  std::string baseline_algorithm;
  double predicted_us = 0;  // the analytic cost model's estimate when it was measured

  // Correct, timed, with a positive median: usable for fitting.
  [[nodiscard]] bool usable() const { return correct && timed && median_us > 0; }
};

// One finished search.
struct SearchRecord : MeasuredTask {
  int budget = 0;
  int evaluations = 0;
  std::string best_design;  // "" when no candidate was usable
  double best_us = 0;
  double baseline_us = 0;
  double speedup = 0;
  double wall_seconds = 0;
  std::string strategy;  // SearchResult::strategy
};

// The candidate records of a search result, one per evaluation, in evaluation order.
std::vector<Measurement> measurements_of(const SearchResult& result);
// The search record of a result.
SearchRecord search_record_of(const SearchResult& result);

class MeasurementStore {
 public:
  static constexpr int kFormatVersion = 1;
  static constexpr const char* kFormatName = "sparserl-measurements";

  // Reads the file; with `create`, a missing file is created with its header line (its folder
  // must exist). MeasurementStoreError naming the file (and line) for anything it cannot read.
  MeasurementStore(std::filesystem::path path, bool create, std::string created_by = "sparserl");

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] const std::vector<Measurement>& measurements() const { return measurements_; }
  [[nodiscard]] const std::vector<SearchRecord>& searches() const { return searches_; }

  // Whether a search of the task on this device is recorded (a resumed run skips it).
  [[nodiscard]] bool searched(const datasets::Task& task, const std::string& device) const;

  // Appends the result's candidates and its search record to the file and to this object.
  // MeasurementStoreError naming the file when it cannot be written.
  void append(const SearchResult& result);

 private:
  void read();

  std::filesystem::path path_;
  std::vector<Measurement> measurements_;
  std::vector<SearchRecord> searches_;
  std::set<std::string> searched_;  // task_key + "\n" + device
};

}  // namespace sparserl::kernels
