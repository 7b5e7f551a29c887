// metrics.jsonl: the statistics of a run, one JSON object per line, in the order they were logged:
//
//   {"step":120,"time":1710430212.345,"stage":"rl","reward/mean":0.61,"env/compile_rate":0.93}
//
// `step` (integer), `time` (seconds since the UNIX epoch, UTC) and `stage` ("pretrain", "sft",
// "rl", "eval", or absent) come first; every other member is a named statistic (the agents' names,
// e.g. reward/mean), a number or null (NaN and infinities, which JSON cannot spell). Each line is
// written with one write() and handed to the kernel before append() returns, so a run killed at any
// moment leaves whole lines plus at most one truncated last line, which the reader tolerates (and
// reports). A malformed line anywhere else is an error naming the file and line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sparserl::experiments {

class MetricsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Named statistics in the order they were produced (the same shape as env::Statistics).
using Statistics = std::vector<std::pair<std::string, double>>;

struct MetricsRecord {
  std::int64_t step = 0;
  double time = 0;    // seconds since the UNIX epoch
  std::string stage;  // empty: none
  Statistics values;

  // The statistic `name`, or nullopt when absent (a NaN value is returned as NaN).
  [[nodiscard]] std::optional<double> get(std::string_view name) const;
};

// The JSON text of one record, without the newline. Statistics named step, time or stage are left
// out (the record's own members carry those); of two statistics with one name the first is kept.
std::string metrics_line(const MetricsRecord& record);

class MetricsWriter {
 public:
  // Opens FILE for appending, creating it (MetricsError naming the file on failure).
  explicit MetricsWriter(std::filesystem::path file);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  void append(const MetricsRecord& record);
  // The same with time = now.
  void append(std::int64_t step, std::string_view stage, const Statistics& values);

  [[nodiscard]] const std::filesystem::path& path() const { return file_; }
  [[nodiscard]] std::int64_t lines_written() const { return lines_; }

 private:
  std::filesystem::path file_;
  int fd_ = -1;
  std::int64_t lines_ = 0;
};

struct MetricsLog {
  std::vector<MetricsRecord> records;
  std::size_t lines = 0;             // lines read (blank lines included)
  bool truncated_last_line = false;  // the file ended inside a line (a killed run): it was skipped

  // Every statistic name in order of first appearance.
  [[nodiscard]] std::vector<std::string> names() const;
  // (step, value) of every record that has the statistic (and, if given, the stage); NaN values are
  // kept so a plot can show a gap.
  [[nodiscard]] std::vector<std::pair<std::int64_t, double>> series(
      std::string_view name, std::string_view stage = {}) const;
  // The last record holding `name`, if any.
  [[nodiscard]] const MetricsRecord* last_with(std::string_view name) const;
};

// Reads FILE. Non-numeric statistics (strings, arrays) are ignored; booleans read as 0 / 1. A
// missing file is an empty log only when `missing_ok`.
MetricsLog read_metrics(const std::filesystem::path& file, bool missing_ok = false);

// For resume: keeps the lines whose step is <= `step` (what the checkpoint being resumed had seen)
// and drops the rest and any truncated last line, rewriting FILE atomically; lines of
// `drop_stage` (when given) go too, whatever their step (an evaluation that is to be redone).
// Returns the lines dropped.
std::size_t rewind_metrics(const std::filesystem::path& file, std::int64_t step,
                           std::string_view drop_stage = {});

}  // namespace sparserl::experiments
