// What `sparserl tune` and the tuning benchmark write from search results (docs/design-space.md
// describes every file and column):
//
//   candidates.csv   one row per evaluation (every round of every task): the design, its verdict
//                    and its figures
//   summary.md       one row per task (cuSPARSE time, best template time, speedup, bandwidth
//                    fraction, winning design, the search's wall time, cuSPARSE's winning path)
//                    and the geomean speedups of the two regimes: small
//                    matrices (< 200k nonzeros, launch-bound) and large ones
//   best/NAME.cu     the best program of each task
//   dataset.h5       HDF5 (C API; h5py reads it without project code):
//                      /candidates  one row per evaluation, program text included
//                      /sft         (task, program) pairs for supervised fine-tuning: per task the
//                                   correct best program (rank 0), and with SftSelection::per_task
//                                   > 1 the next fastest programs near it (rank 1, 2, ...)
//                      /corpus      every distinct correct program (deduplicated by text), with the
//                                   number of tasks it was correct on: the pretraining corpus
//                    each group holds 1-D chunked, resizable datasets (one per column, same length)
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sparserl/kernels/measurement_store.hpp"
#include "sparserl/kernels/template_search.hpp"

namespace sparserl::kernels {

// The matrices below this many nonzeros form the "small" (launch-bound) regime of the summary.
inline constexpr std::int64_t kSmallMatrixNnz = 200'000;

// Facts about the run written into summary.md and the HDF5 attributes.
struct TuningRunInfo {
  std::string command;      // the command line
  std::string device;       // GPU name, or "" (compile-only)
  std::string started_utc;  // ISO 8601
  std::string protocol;     // the protocols' text
  int budget = 0;
};

// The file name of a task's best program: the matrix name with characters outside [A-Za-z0-9._-]
// replaced by '_', then the op, dtype and k: "west0067.spmv.f32.cu",
// "rmat_scale_20...spmm.f32.k32.cu".
std::string best_program_file_name(const datasets::Task& task);

// One line per task for summary tables and logs.
struct TaskSummary {
  datasets::Task task;
  std::int64_t nnz = 0;
  std::string best_design;
  bool correct = false;
  bool timed = false;
  double best_us = 0;
  double baseline_us = 0;
  std::string baseline_algorithm;
  double speedup = 0;
  double bandwidth_fraction = 0;
  int evaluations = 0;
  int compiled = 0;
  int correct_candidates = 0;
  double search_seconds = 0;  // the search's wall time (SearchResult::wall_seconds)
  int budget = 0;             // its first round's budget
  std::string strategy;       // how its candidates were chosen
};
TaskSummary summarize(const SearchResult& result);

// Geometric mean of the speedups of timed tasks whose nnz is below (small = true) or at least
// kSmallMatrixNnz; 0 when there are none. `count` receives how many entered it.
double geomean_speedup(const std::vector<TaskSummary>& tasks, bool small, int* count = nullptr);

// The candidates.csv header and rows (RFC 4180 quoting).
std::string candidates_csv_header();
std::string candidates_csv_rows(const SearchResult& result);

// The whole summary.md text.
std::string summary_markdown(const std::vector<TaskSummary>& tasks, const TuningRunInfo& info);

// Which programs of a task become SFT pairs. The best (when correct) always; with per_task > 1 also
// the next fastest distinct correct programs timed with the best's protocol (the finalists of a
// successive-halving search, every point of an exhaustive one) whose median time is at most the
// best's / within - a spread of near-best programs for the policy to choose among, which RL can
// then sharpen. Without timings (compile-only) only the best.
struct SftSelection {
  int per_task = 1;
  double within = 0.9;  // in (0, 1]
};
// Indices into r.candidates, best first; empty when the task has no correct best program.
std::vector<std::size_t> sft_candidates(const SearchResult& r, const SftSelection& selection);

// The same choice made from a measurement store instead of a live search: the store's records of
// one task's search stand in for it - the best design of the task's last search record (on
// `device`, or on the device of the task's last record when device is ""), and with per_task > 1
// the fastest other correct designs measured with the best's protocol within `within` of it. So a
// training run on another host (or with no GPU) takes the teacher's pairs a GPU session measured,
// without searching again (train.teacher_store).
struct StoredTeacherPairs {
  std::string device;                 // the GPU the store's search ran on
  std::vector<std::string> designs;   // DesignPoint ids, best first; empty: its best was incorrect
  std::vector<std::string> programs;  // their programs, rendered by this build's design space
  std::vector<double> median_us;      // as measured
};
// nullopt when the store has no search of the task (on that device). MeasurementStoreError naming
// the store and the design when a chosen design is not in this build's design space (a store made
// by another version of the space).
std::optional<StoredTeacherPairs> stored_sft_pairs(const MeasurementStore& store,
                                                   const datasets::Task& task,
                                                   const SftSelection& selection,
                                                   const std::string& device = "");

// The HDF5 dataset, written incrementally: rows are appended task by task (and flushed), so an
// interrupted run leaves a readable file; /corpus is written by close().
class TuningDataset {
 public:
  // Creates (truncates) the file. Throws std::runtime_error naming the file on failure.
  // std::invalid_argument for a selection out of range.
  TuningDataset(const std::filesystem::path& file, const TuningRunInfo& info,
                SftSelection selection = {});
  ~TuningDataset();
  TuningDataset(const TuningDataset&) = delete;
  TuningDataset& operator=(const TuningDataset&) = delete;

  void append(const SearchResult& result);
  // Writes /corpus and the final row counts, and closes the file (the destructor calls it).
  void close();

  [[nodiscard]] std::int64_t candidate_rows() const { return candidate_rows_; }
  [[nodiscard]] std::int64_t sft_rows() const { return sft_rows_; }
  [[nodiscard]] std::int64_t corpus_rows() const { return corpus_rows_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::int64_t candidate_rows_ = 0;
  std::int64_t sft_rows_ = 0;
  std::int64_t corpus_rows_ = 0;
};

// The column names of each group, in file order (docs/design-space.md lists them; a test checks).
const std::vector<std::string>& candidate_columns();
const std::vector<std::string>& sft_columns();
const std::vector<std::string>& corpus_columns();

}  // namespace sparserl::kernels
