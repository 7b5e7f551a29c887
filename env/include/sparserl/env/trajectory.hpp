// Trajectories in HDF5: one row per finished episode, appended as episodes end, in a file that
// Python's h5py (or h5dump) reads without project code. docs/trajectories.md describes the layout;
// trajectory_columns() is its source of truth (a test checks that the page names every column).
//
// Layout: group /episodes holds one 1-D dataset per column, all of the same length (the row count),
// chunked and resizable (maxdims unlimited). Scalars are native integers and doubles, booleans
// uint8, text is variable-length UTF-8 strings, and tokens / log-probs / values are variable-length
// arrays (int32, float32, float32), one per row. File attributes: format = "sparserl-trajectories",
// format_version, run_id, config (the run's resolved config text), vocabulary_name,
// vocabulary_digest, created_by, and rows (the number of complete rows).
//
// Durability: every append() extends all columns, writes the row, updates `rows` and flushes the
// file (H5Fflush), so a run killed at any moment leaves a file whose first `rows` rows are complete
// and readable (tests/env/trajectory_test.cpp SIGKILLs a writer and reads the file back with the
// HDF5 API and h5dump). The file is written with HDF5's default (1.8-compatible) format and no SWMR
// flags, so a reader needs no recovery tool after a crash.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/env/episode.hpp"
#include "sparserl/env/sparse_cuda_env.hpp"

namespace sparserl::env {

class TrajectoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::string_view kTrajectoryFormat = "sparserl-trajectories";
inline constexpr int kTrajectoryFormatVersion = 1;

struct TrajectoryFileInfo {
  std::string run_id;
  std::string config;  // the resolved config text (or the command line)
  std::string vocabulary_name;
  std::string vocabulary_digest;
  std::string created_by;  // "sparserl rollout", ...
};

enum class ColumnType { i32, i64, u64, u8, f64, str, vlen_i32, vlen_f32 };
std::string_view to_string(ColumnType type);  // "int32", ..., "vlen string", "vlen int32"

struct ColumnInfo {
  std::string name;
  ColumnType type;
  std::string doc;
};
// Every column of /episodes, in file order.
const std::vector<ColumnInfo>& trajectory_columns();

class TrajectoryWriter {
 public:
  // Creates FILE (replacing it), or with `append` adds rows to an existing trajectory file (its
  // format version and vocabulary digest must match: TrajectoryError otherwise).
  TrajectoryWriter(const std::filesystem::path& file, TrajectoryFileInfo info, bool append = false);
  ~TrajectoryWriter();
  TrajectoryWriter(const TrajectoryWriter&) = delete;
  TrajectoryWriter& operator=(const TrajectoryWriter&) = delete;

  // One row; the episode's policy_id is used unless `policy_id` is given. Flushed before returning.
  void append(const Episode& episode, std::string_view policy_id = {});
  [[nodiscard]] std::int64_t rows() const;
  [[nodiscard]] const std::filesystem::path& path() const;
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct TrajectoryFile {
  TrajectoryFileInfo info;
  int format_version = 0;
  std::int64_t rows = 0;  // the `rows` attribute
  std::vector<Episode> episodes;
  std::vector<std::string> run_ids;  // per row
};

// Reads every complete row (TrajectoryError naming the file when it is not a trajectory file).
TrajectoryFile read_trajectories(const std::filesystem::path& file);

// SparseCudaEnv with every finished episode appended to a TrajectoryWriter.
class RecordingEnv {
 public:
  RecordingEnv(SparseCudaEnv& env, TrajectoryWriter& writer, std::string policy_id);
  ResetResult reset(std::optional<std::uint64_t> seed = std::nullopt,
                    const ResetOptions& options = {});
  StepResult step(TokenId token, StepAnnotation annotation = {});
  [[nodiscard]] SparseCudaEnv& env() { return env_; }

 private:
  SparseCudaEnv& env_;
  TrajectoryWriter& writer_;
  std::string policy_id_;
};

}  // namespace sparserl::env
