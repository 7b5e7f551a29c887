// gnuplot scripts and data files for the run's plots, run with a deadline (plots.hpp).
#include "sparserl/experiments/plots.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "sparserl/experiments/json.hpp"
#include "sparserl/experiments/run_info.hpp"
#include "subprocess.hpp"

namespace fs = std::filesystem;

namespace sparserl::experiments {
namespace {

constexpr auto kGnuplotTimeout = std::chrono::seconds(60);
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A gnuplot single-quoted string: only the quote itself needs doubling.
std::string gp_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    if (c == '\n') {
      out += ' ';
      continue;
    }
    out += c;
  }
  return out + "'";
}

std::string gp_number(double v) { return std::isfinite(v) ? json_number(v) : std::string("NaN"); }

// A label safe inside a whitespace-separated data file.
std::string data_label(std::string s) {
  for (char& c : s) {
    if (c == ' ' || c == '\t' || c == '"' || c == '\n' || c == '\r') c = '_';
  }
  return s.empty() ? std::string("_") : s;
}

// The last path component of a matrix URI: "suitesparse-v1/HB/west0067" -> "west0067".
std::string short_name(const std::string& uri) {
  const auto slash = uri.find_last_of('/');
  return slash == std::string::npos ? uri : uri.substr(slash + 1);
}

// Line colours that stay apart in print and for colour-blind readers (the 8 of Okabe-Ito, then
// grey): a bench of SFT, the template search and two seeds of each RL algorithm needs 8.
const char* colour(std::size_t i) {
  static const char* kColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
                                   "#56B4E9", "#000000", "#F0E442", "#999999"};
  return kColours[i % (sizeof kColours / sizeof kColours[0])];
}

std::string terminal_line(const Gnuplot& gp, int width, int height) {
  std::ostringstream s;
  if (gp.terminal == "pngcairo") {
    s << "set terminal pngcairo noenhanced size " << width << "," << height << " font 'sans,10'\n";
  } else {
    s << "set terminal png noenhanced size " << width << "," << height << "\n";
  }
  return s.str();
}

void write_text(const fs::path& file, const std::string& text) {
  try {
    write_file_atomically(file, text);
  } catch (const std::runtime_error& e) {
    throw PlotError(e.what());
  }
}

bool is_png(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  return in.gcount() == 8 && std::string(magic, 8) == std::string("\x89PNG\r\n\x1a\n", 8);
}

// Writes NAME.gp, runs it and checks that NAME.png is a PNG.
void run_script(const Gnuplot& gp, const std::string& script, const fs::path& png) {
  const fs::path gp_file = fs::path(png).replace_extension(".gp");
  write_text(gp_file, script);
  std::error_code ec;
  fs::remove(png, ec);
  const detail::ProcessOutcome o =
      detail::run_process({gp.program, gp_file.string()},
                          std::chrono::duration_cast<std::chrono::milliseconds>(kGnuplotTimeout));
  if (!o.started) throw PlotError(png.string() + ": " + o.error);
  if (o.timed_out || o.exit_code != 0) {
    std::string msg = o.output;
    if (msg.size() > 600) msg = msg.substr(0, 600) + "...";
    throw PlotError(png.string() + ": gnuplot " + gp_file.string() + " failed (" +
                    (o.timed_out ? o.error : "exit " + std::to_string(o.exit_code)) + "): " + msg);
  }
  if (!is_png(png)) throw PlotError(png.string() + ": gnuplot finished but wrote no PNG");
}

// A log axis over a small range gets almost no labels by default: the usual speedups between lo
// and hi, as a gnuplot tics list "('0.5x' 0.5, '1x' 1, ...)".
std::string speedup_tics(double lo, double hi) {
  std::string out = "(";
  bool first = true;
  for (const double t : {0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0,
                         20.0, 50.0, 100.0}) {
    if (t < lo || t > hi) continue;
    char label[32];
    std::snprintf(label, sizeof label, "%gx", t);
    out += std::string(first ? "" : ", ") + "'" + label + "' " + gp_number(t);
    first = false;
  }
  return out + ")";
}

fs::path absolute_of(const fs::path& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec);
  return ec ? p : a;
}

}  // namespace

std::string plot_file_stem(const std::string& statistic) {
  std::string s = statistic;
  for (char& c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.';
    if (!ok) c = '_';
  }
  if (s.empty() || s.front() == '.') s.insert(s.begin(), '_');
  return s;
}

GnuplotProbe find_gnuplot(const std::string& program) {
  GnuplotProbe probe;
  const std::string path = detail::find_program(program);
  if (path.empty()) {
    probe.reason = "'" + program + "' not found" +
                   (program.find('/') == std::string::npos ? " on PATH" : "") +
                   " (Debian / Ubuntu: apt-get install gnuplot-nox; tools/setup.sh installs it)";
    return probe;
  }
  const auto timeout = std::chrono::milliseconds(15000);
  for (const char* terminal : {"pngcairo", "png"}) {
    const detail::ProcessOutcome o =
        detail::run_process({path, "-e", std::string("set terminal ") + terminal}, timeout);
    if (o.started && !o.timed_out && o.exit_code == 0) {
      Gnuplot g;
      g.program = path;
      g.terminal = terminal;
      const detail::ProcessOutcome v = detail::run_process({path, "--version"}, timeout);
      g.version = v.exit_code == 0 ? v.output : std::string("gnuplot");
      while (!g.version.empty() && (g.version.back() == '\n' || g.version.back() == '\r'))
        g.version.pop_back();
      probe.gnuplot = g;
      return probe;
    }
  }
  probe.reason = path + " has neither the pngcairo nor the png terminal";
  return probe;
}

void draw_line_plot(const Gnuplot& gp, const LinePlot& plot, const fs::path& png_in) {
  const fs::path png = absolute_of(png_in);
  const fs::path dat = fs::path(png).replace_extension(".dat");
  std::ostringstream data;
  std::vector<std::size_t> drawn;  // series with at least one finite point
  std::size_t block = 0;
  std::vector<std::size_t> block_of(plot.series.size(), 0);
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const PlotSeries& s = plot.series[i];
    const bool any = std::any_of(s.points.begin(), s.points.end(), [&](const auto& p) {
      return std::isfinite(p.first) && std::isfinite(p.second) && (!plot.log_y || p.second > 0);
    });
    if (!any) continue;
    data << "# " << data_label(s.title) << "\n";
    for (const auto& [x, y] : s.points) {
      data << gp_number(x) << ' ' << (plot.log_y && y <= 0 ? std::string("NaN") : gp_number(y))
           << '\n';
    }
    data << "\n\n";
    block_of[i] = block++;
    drawn.push_back(i);
  }
  if (drawn.empty())
    throw PlotError(png.string() + ": '" + plot.title + "' has no finite values to draw");
  write_text(dat, data.str());

  std::ostringstream gp_script;
  gp_script << "# " << plot.title << ": written by sparserl; run `gnuplot "
            << fs::path(png).replace_extension(".gp").filename().string() << "` to redraw.\n";
  gp_script << terminal_line(gp, 900, 520);
  gp_script << "set output " << gp_quote(png.string()) << "\n";
  gp_script << "set title " << gp_quote(plot.title) << "\n";
  gp_script << "set xlabel " << gp_quote(plot.xlabel) << "\nset ylabel " << gp_quote(plot.ylabel)
            << "\n";
  gp_script << "set grid\nset key outside right top\nset datafile missing 'NaN'\n";
  if (plot.log_y) gp_script << "set logscale y\n";
  gp_script << "plot ";
  for (std::size_t k = 0; k < drawn.size(); ++k) {
    const std::size_t i = drawn[k];
    const bool few = plot.series[i].points.size() <= 40;
    gp_script << (k ? ", \\\n     " : "") << gp_quote(dat.string()) << " index " << block_of[i]
              << " using 1:2 with " << (few ? "linespoints pt 7 ps 0.6" : "lines")
              << " lw 2 lc rgb '" << colour(k) << "' title " << gp_quote(plot.series[i].title);
  }
  if (plot.reference_y) {
    gp_script << ", \\\n     " << gp_number(*plot.reference_y)
              << " with lines dt 2 lc rgb '#777777' title "
              << gp_quote("reference " + gp_number(*plot.reference_y));
  }
  gp_script << "\n";
  run_script(gp, gp_script.str(), png);
}

std::size_t draw_speedup_bars(const Gnuplot& gp, const std::vector<MatrixResult>& rows,
                              std::size_t max_matrices, const fs::path& png_in) {
  const fs::path png = absolute_of(png_in);
  const fs::path dat = fs::path(png).replace_extension(".dat");
  std::vector<std::string> agents, matrices;
  std::map<std::pair<std::string, std::string>, double> speedup;  // (matrix, agent)
  for (const MatrixResult& r : rows) {
    if (std::find(agents.begin(), agents.end(), r.agent) == agents.end()) agents.push_back(r.agent);
    if (std::find(matrices.begin(), matrices.end(), r.matrix) == matrices.end())
      matrices.push_back(r.matrix);
    if (r.correct && std::isfinite(r.speedup) && r.speedup > 0)
      speedup[{r.matrix, r.agent}] = r.speedup;
  }
  if (speedup.empty()) throw PlotError(png.string() + ": no correct kernel with a speedup to draw");
  // Sort by the first agent's speedup (missing ones first), so the chart reads slow -> fast.
  auto key = [&](const std::string& m) {
    const auto it = speedup.find({m, agents.front()});
    return it == speedup.end() ? -1.0 : it->second;
  };
  std::stable_sort(matrices.begin(), matrices.end(),
                   [&](const auto& a, const auto& b) { return key(a) < key(b); });
  if (max_matrices >= 2 && matrices.size() > max_matrices) {
    const std::size_t low = max_matrices / 2;
    const std::size_t high = max_matrices - low;
    std::vector<std::string> kept(matrices.begin(),
                                  matrices.begin() + static_cast<std::ptrdiff_t>(low));
    kept.insert(kept.end(), matrices.end() - static_cast<std::ptrdiff_t>(high), matrices.end());
    matrices = std::move(kept);
  }

  const double n_agents = static_cast<double>(agents.size());
  const double width = 0.8 / n_agents;
  std::ostringstream data;
  double lo = 1, hi = 1;
  for (std::size_t a = 0; a < agents.size(); ++a) {
    data << "# " << data_label(agents[a]) << ": x speedup x_low x_high\n";
    for (std::size_t i = 0; i < matrices.size(); ++i) {
      const auto it = speedup.find({matrices[i], agents[a]});
      if (it == speedup.end()) continue;
      const double x =
          static_cast<double>(i) + (static_cast<double>(a) - (n_agents - 1) / 2) * width;
      data << gp_number(x) << ' ' << gp_number(it->second) << ' ' << gp_number(x - width / 2) << ' '
           << gp_number(x + width / 2) << '\n';
      lo = std::min(lo, it->second);
      hi = std::max(hi, it->second);
    }
    data << "# end\n\n\n";
  }
  write_text(dat, data.str());

  const int img_width = std::max(900, static_cast<int>(matrices.size() * agents.size()) * 14 + 200);
  std::ostringstream s;
  s << "# Speedup over cuSPARSE per matrix: written by sparserl; run `gnuplot "
    << fs::path(png).replace_extension(".gp").filename().string() << "` to redraw.\n";
  s << terminal_line(gp, img_width, 560);
  s << "set output " << gp_quote(png.string()) << "\n";
  s << "set title 'Speedup over cuSPARSE per matrix (above 1: faster; no bar: no correct "
       "kernel)'\n";
  s << "set ylabel 'speedup (cuSPARSE time / kernel time)'\nset logscale y\n";
  const double y_lo = std::min(lo, 1.0) / 1.5;
  const double y_hi = std::max(hi, 1.0) * 1.5;
  s << "set yrange [" << gp_number(y_lo) << ":" << gp_number(y_hi) << "]\n";
  s << "set ytics " << speedup_tics(y_lo, y_hi) << "\n";
  s << "set xrange [-1:" << matrices.size() << "]\n";
  s << "set grid ytics\nset key outside right top\nset style fill solid 0.85 border -1\n";
  s << "set bmargin 10\nset xtics rotate by 60 right font ',8' (";
  for (std::size_t i = 0; i < matrices.size(); ++i) {
    s << (i ? ", " : "") << gp_quote(short_name(matrices[i])) << " " << i;
  }
  s << ")\n";
  s << "plot ";
  for (std::size_t a = 0; a < agents.size(); ++a) {
    s << (a ? ", \\\n     " : "") << gp_quote(dat.string()) << " index " << a
      << " using 1:2:3:4:(1):2 with boxxyerror lc rgb '" << colour(a) << "' title "
      << gp_quote(agents[a]);
  }
  s << ", \\\n     1 with lines dt 2 lc rgb '#444444' title 'cuSPARSE'\n";
  run_script(gp, s.str(), png);
  return matrices.size();
}

void draw_time_vs_nnz(const Gnuplot& gp, const std::vector<MatrixResult>& rows,
                      const fs::path& png_in) {
  const fs::path png = absolute_of(png_in);
  const fs::path dat = fs::path(png).replace_extension(".dat");
  std::vector<std::string> agents;
  std::map<std::string, std::pair<double, double>> baseline;  // matrix -> (nnz, cusparse_us)
  for (const MatrixResult& r : rows) {
    if (std::find(agents.begin(), agents.end(), r.agent) == agents.end()) agents.push_back(r.agent);
    if (r.nnz > 0 && std::isfinite(r.cusparse_us) && r.cusparse_us > 0 &&
        baseline.count(r.matrix) == 0) {
      baseline[r.matrix] = {static_cast<double>(r.nnz), r.cusparse_us};
    }
  }
  std::ostringstream data;
  std::vector<std::string> titles;
  std::size_t points = 0;
  data << "# cuSPARSE: nnz time_us\n";
  for (const auto& [m, p] : baseline)
    data << gp_number(p.first) << ' ' << gp_number(p.second) << '\n';
  points += baseline.size();
  data << "\n\n";
  titles.push_back("cuSPARSE");
  for (const std::string& agent : agents) {
    data << "# " << data_label(agent) << ": nnz time_us (correct kernels)\n";
    std::size_t n = 0;
    for (const MatrixResult& r : rows) {
      if (r.agent != agent || !r.correct || r.nnz <= 0 || !std::isfinite(r.candidate_us) ||
          r.candidate_us <= 0)
        continue;
      data << r.nnz << ' ' << gp_number(r.candidate_us) << '\n';
      ++n;
    }
    if (n == 0) data << "NaN NaN\n";
    points += n;
    data << "\n\n";
    titles.push_back(agent);
  }
  if (points == 0) throw PlotError(png.string() + ": no kernel time with a positive nnz to draw");
  write_text(dat, data.str());

  std::ostringstream s;
  s << "# Kernel time against nnz: written by sparserl; run `gnuplot "
    << fs::path(png).replace_extension(".gp").filename().string() << "` to redraw.\n";
  s << terminal_line(gp, 900, 560);
  s << "set output " << gp_quote(png.string()) << "\n";
  s << "set title 'Kernel time against nnz (median per run)'\n";
  s << "set xlabel 'nonzeros'\nset ylabel 'time (us)'\nset logscale xy\nset grid\n";
  s << "set key outside right top\nset datafile missing 'NaN'\n";
  s << "plot ";
  for (std::size_t i = 0; i < titles.size(); ++i) {
    s << (i ? ", \\\n     " : "") << gp_quote(dat.string()) << " index " << i
      << " using 1:2 with points pt " << (i == 0 ? 6 : 7) << " ps " << (i == 0 ? "1.2" : "0.8")
      << " lc rgb '" << (i == 0 ? "#444444" : colour(i - 1)) << "' title " << gp_quote(titles[i]);
  }
  s << "\n";
  run_script(gp, s.str(), png);
}

void draw_interval_plot(const Gnuplot& gp, const IntervalPlot& plot, const fs::path& png_in) {
  const fs::path png = absolute_of(png_in);
  const fs::path dat = fs::path(png).replace_extension(".dat");
  std::vector<std::string> labels;  // colour by label, the same in every panel
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  auto usable = [&](double v) { return std::isfinite(v) && (!plot.log_x || v > 0); };
  std::ostringstream data;
  for (const IntervalPanel& panel : plot.panels) {
    data << "# " << data_label(panel.title) << ": row point low high colour\n";
    for (std::size_t i = 0; i < panel.rows.size(); ++i) {
      const IntervalRow& r = panel.rows[i];
      auto it = std::find(labels.begin(), labels.end(), r.label);
      if (it == labels.end()) it = labels.insert(labels.end(), r.label);
      const bool drawn = usable(r.point) && usable(r.low) && usable(r.high);
      data << i << ' ' << gp_number(drawn ? r.point : kNaN) << ' '
           << gp_number(drawn ? r.low : kNaN) << ' ' << gp_number(drawn ? r.high : kNaN) << ' '
           << (it - labels.begin()) + 1 << '\n';
      if (!drawn) continue;
      lo = std::min({lo, r.low, r.point});
      hi = std::max({hi, r.high, r.point});
    }
    data << "\n\n";
  }
  if (!(lo <= hi)) throw PlotError(png.string() + ": '" + plot.title + "' has no interval to draw");
  if (plot.reference_x && usable(*plot.reference_x)) {
    lo = std::min(lo, *plot.reference_x);
    hi = std::max(hi, *plot.reference_x);
  }
  // Some room on both sides, on the axis's own scale.
  const double x_lo = plot.log_x ? lo / 1.15 : lo - 0.05 * std::max(hi - lo, 1e-9);
  const double x_hi = plot.log_x ? hi * 1.15 : hi + 0.05 * std::max(hi - lo, 1e-9);
  write_text(dat, data.str());

  int height = 60;
  for (const IntervalPanel& panel : plot.panels)
    height += 70 + 26 * static_cast<int>(std::max<std::size_t>(panel.rows.size(), 1));
  std::ostringstream s;
  s << "# " << plot.title << ": written by sparserl; run `gnuplot "
    << fs::path(png).replace_extension(".gp").filename().string() << "` to redraw.\n";
  s << terminal_line(gp, 900, height);
  s << "set output " << gp_quote(png.string()) << "\n";
  for (std::size_t i = 0; i < labels.size(); ++i)
    s << "set linetype " << i + 1 << " lc rgb '" << colour(i) << "' lw 2 pt 7 ps 1.1\n";
  s << "set datafile missing 'NaN'\nset grid xtics\nunset key\n";
  s << "set xrange [" << gp_number(x_lo) << ":" << gp_number(x_hi) << "]\n";
  if (plot.log_x) s << "set logscale x\nset xtics " << speedup_tics(x_lo, x_hi) << "\n";
  if (plot.reference_x) {
    s << "set arrow from " << gp_number(*plot.reference_x) << ", graph 0 to "
      << gp_number(*plot.reference_x) << ", graph 1 nohead dt 2 lc rgb '#777777'\n";
  }
  s << "set multiplot layout " << plot.panels.size() << ",1 title " << gp_quote(plot.title) << "\n";
  for (std::size_t p = 0; p < plot.panels.size(); ++p) {
    const IntervalPanel& panel = plot.panels[p];
    s << "set title " << gp_quote(panel.title) << "\n";
    s << "set xlabel " << gp_quote(p + 1 == plot.panels.size() ? plot.xlabel : std::string())
      << "\n";
    s << "set yrange [" << static_cast<double>(panel.rows.size()) - 0.5 << ":-0.5]\n";
    s << "set ytics (";
    for (std::size_t i = 0; i < panel.rows.size(); ++i) {
      const IntervalRow& r = panel.rows[i];
      const bool drawn = usable(r.point) && usable(r.low) && usable(r.high);
      s << (i ? ", " : "") << gp_quote(drawn ? r.label : r.label + " (n/a)") << " " << i;
    }
    s << ")\n";
    // A panel whose rows are all n/a still needs a plottable expression: an invisible point.
    s << "plot " << gp_quote(dat.string()) << " index " << p
      << " using 2:1:3:4:5 with xerrorbars lc variable, NaN notitle\n";
  }
  s << "unset multiplot\n";
  run_script(gp, s.str(), png);
}

}  // namespace sparserl::experiments
