// PNG plots of a run, drawn by gnuplot (Debian's gnuplot-nox): training curves from metrics.jsonl,
// per-matrix speedup bars over cuSPARSE and kernel time against nnz from results.csv, and the
// confidence intervals of `sparserl compare` (one horizontal interval per agent, a panel per
// regime). Each plot
// leaves three files in plots/: NAME.png, the data NAME.dat and the script NAME.gp, so a figure can
// be restyled by editing the script and running `gnuplot NAME.gp`. The pngcairo terminal is used
// where it exists (anti-aliased), else the libgd png terminal. The GPU hosts have no gnuplot:
// find_gnuplot says so and the report renders its tables without plots (`sparserl plot RUN_DIR`
// draws them later).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sparserl/experiments/results.hpp"

namespace sparserl::experiments {

class PlotError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Gnuplot {
  std::string program;   // the executable's path
  std::string terminal;  // "pngcairo" or "png"
  std::string version;   // "gnuplot 5.4 patchlevel 4"
};

struct GnuplotProbe {
  std::optional<Gnuplot> gnuplot;
  std::string reason;  // why there is none ("gnuplot not found on PATH ...")
};

// Finds `program` (a name on PATH or a path) and a PNG terminal it supports.
GnuplotProbe find_gnuplot(const std::string& program = "gnuplot");

struct PlotSeries {
  std::string title;
  std::vector<std::pair<double, double>> points;  // (x, y); NaN y values are gaps
};

struct LinePlot {
  std::string title;
  std::string xlabel = "step";
  std::string ylabel;
  std::vector<PlotSeries> series;
  bool log_y = false;
  std::optional<double> reference_y;  // a dashed horizontal line (speedup 1 = cuSPARSE)
};

// Draws `plot` to PNG (plus .dat and .gp beside it). PlotError with gnuplot's message on failure,
// or when no series has a finite point.
void draw_line_plot(const Gnuplot& gnuplot, const LinePlot& plot, const std::filesystem::path& png);

// Speedup over cuSPARSE per matrix, one bar per agent, on a log axis around 1 (up: faster).
// Matrices are sorted by the first agent's speedup; beyond `max_matrices` the slowest and the
// fastest halves are kept. Rows without a correct kernel have no bar. Returns the number of
// matrices drawn.
std::size_t draw_speedup_bars(const Gnuplot& gnuplot, const std::vector<MatrixResult>& rows,
                              std::size_t max_matrices, const std::filesystem::path& png);

// Kernel time against nnz, log-log: cuSPARSE and each agent's correct kernels.
void draw_time_vs_nnz(const Gnuplot& gnuplot, const std::vector<MatrixResult>& rows,
                      const std::filesystem::path& png);

// Point estimates with confidence intervals, one row per label, in panels stacked top to bottom
// (`sparserl compare`: one panel per regime, one row per agent, the IQM speedup and its 95%
// interval). A row's colour follows its label across panels.
struct IntervalRow {
  std::string label;
  double point = 0, low = 0, high = 0;  // NaN: no estimate (the row is listed, nothing drawn)
};
struct IntervalPanel {
  std::string title;  // "large (12 matrices)"
  std::vector<IntervalRow> rows;
};
struct IntervalPlot {
  std::string title;
  std::string xlabel;
  std::vector<IntervalPanel> panels;
  bool log_x = false;
  std::optional<double> reference_x;  // a dashed vertical line (speedup 1 = cuSPARSE)
};

// Draws `plot` to PNG (plus .dat and .gp beside it); every panel shares one x range. PlotError when
// no row of any panel has a finite point (nothing to draw: e.g. nothing was timed).
void draw_interval_plot(const Gnuplot& gnuplot, const IntervalPlot& plot,
                        const std::filesystem::path& png);

// A file name for a statistic: "reward/mean" -> "reward_mean".
std::string plot_file_stem(const std::string& statistic);

}  // namespace sparserl::experiments
