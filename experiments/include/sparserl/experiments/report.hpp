// report.md of a run directory: what ran where (from run.json), the training curves (the last and
// best value of each chosen statistic, and a PNG per curve), the per-agent summary and per-matrix
// table of results.csv with the speedup-bar and time-vs-nnz plots, and the checkpoints. Every part
// is optional: a run that logged no metrics or wrote no results.csv gets a report that says so.
// Without gnuplot the tables are still written and the report says the plots were skipped and why;
// `sparserl plot RUN_DIR` redraws everything later on a machine that has gnuplot. Malformed inputs
// are errors naming the file (and line).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "sparserl/experiments/checkpoints.hpp"
#include "sparserl/experiments/config.hpp"

namespace sparserl::experiments {

struct ReportOptions {
  bool plots = true;
  std::string gnuplot = "gnuplot";
  std::vector<std::string> curves = {"loss", "reward/mean", "env/compile_rate",
                                     "env/correct_rate", "env/speedup_geomean"};
  std::size_t bar_matrices = 60;
  std::size_t table_rows =
      500;  // per-matrix table rows shown in report.md (results.csv has them all)
  CheckpointPolicy checkpoints;  // which statistic marks the best checkpoint in the table
  // The agent every other agent of results.csv is compared with (compare_with_reference); empty:
  // no comparison.
  std::string reference = "sft";
};

// The [report] and [checkpoints] sections of a config.
ReportOptions report_options(const Config& config);

struct ReportOutcome {
  std::filesystem::path report;              // RUN_DIR/report.md
  std::vector<std::filesystem::path> plots;  // PNGs drawn
  std::vector<std::string> skipped;          // "plots: gnuplot not found ...", "curve x: absent"
};

// Writes RUN_DIR/report.md (atomically) and RUN_DIR/plots/*.png.
ReportOutcome write_report(const std::filesystem::path& run_dir, const ReportOptions& options);

}  // namespace sparserl::experiments
