// Rendering report.md and drawing its plots from a run directory's files (report.hpp).
#include "sparserl/experiments/report.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>

#include "sparserl/experiments/metrics.hpp"
#include "sparserl/experiments/plots.hpp"
#include "sparserl/experiments/progress.hpp"
#include "sparserl/experiments/results.hpp"
#include "sparserl/experiments/run_directory.hpp"
#include "sparserl/experiments/run_info.hpp"
#include "sparserl/experiments/split_tasks.hpp"
#include "text_format.hpp"

namespace fs = std::filesystem;

namespace sparserl::experiments {
namespace {

using detail::cell;
using detail::code;
using detail::num;
using detail::percent;

double seconds_between(const std::string& from, const std::string& to) {
  try {
    return std::chrono::duration<double>(parse_iso_utc(to) - parse_iso_utc(from)).count();
  } catch (const RunInfoError&) {
    return std::nan("");
  }
}

// The split the run read: its name and digest (two runs compare only on equal digests), the part
// and selection, and what was skipped.
void split_rows(std::ostringstream& md, const SplitRecord& split) {
  if (split.name.empty()) {
    md << "| split | none"
       << (split.matrices > 0
               ? ": the matrices of data.uris (" + std::to_string(split.matrices) + ")"
               : std::string())
       << " |\n";
    return;
  }
  md << "| split | " << cell(split.name) << ", digest " << code(split.digest) << " ("
     << code(split.file) << ") |\n";
  md << "| part | " << cell(split.part) << ", selection " << cell(split.selection) << ": "
     << split.matrices << (split.matrices == 1 ? " matrix" : " matrices");
  if (split.absent > 0) {
    md << " (" << split.absent << (split.absent == 1 ? " catalogue matrix" : " catalogue matrices")
       << " not on this machine skipped)";
  }
  md << " |\n";
}

void run_section(std::ostringstream& md, const RunInfo& info) {
  md << "**" << to_string(info.status) << "**";
  if (!info.start_time.empty()) md << " · started " << info.start_time;
  if (!info.end_time.empty()) {
    md << " · ended " << info.end_time;
    const double d = seconds_between(info.start_time, info.end_time);
    if (std::isfinite(d)) md << " (" << format_duration(d) << ")";
  }
  if (!info.resumed_at.empty()) md << " · resumed " << info.resumed_at.size() << "x";
  md << "\n\n";
  if (!info.description.empty()) md << info.description << "\n\n";
  if (info.split) {
    md << test_part_line(*info.split) << ".\n\n";
  } else {
    md << "Test part: not recorded (this run.json has no \"split\").\n\n";
  }
  if (const Json* oracle = find_member(info.extra, "oracle");
      oracle != nullptr && oracle->is_object()) {
    if (const Json* summary = find_member(*oracle, "summary");
        summary != nullptr && summary->is_string()) {
      md << "Oracle: " << as_string(*summary) << ".\n\n";
    }
  }
  if (const Json* novelty = find_member(info.extra, "novelty");
      novelty != nullptr && novelty->is_object()) {
    md << "Novelty is measured against the training corpus of each agent:";
    for (const auto& [agent, corpus] : as_object(*novelty)) {
      md << "\n- " << cell(agent) << ": " << (corpus.is_string() ? cell(as_string(corpus)) : "?");
    }
    md << "\n\n";
  }
  md << "| | |\n|---|---|\n";
  md << "| experiment | " << cell(info.experiment) << " |\n";
  if (info.split) split_rows(md, *info.split);
  if (!info.command.empty()) md << "| command | " << code(info.command) << " |\n";
  std::string seeds;
  for (const auto& [name, seed] : info.seeds)
    seeds += (seeds.empty() ? "" : ", ") + name + " = " + std::to_string(seed);
  md << "| seeds | " << cell(seeds) << " |\n";
  md << "| host | " << cell(info.host.host_name) << ", " << info.host.cpu_cores << " x "
     << cell(info.host.cpu_model) << " |\n";
  md << "| OS | " << cell(info.host.os) << " |\n";
  md << "| GPU | " << cell(info.gpu.name);
  if (!info.gpu.arch.empty()) md << " (" << cell(info.gpu.arch) << ")";
  if (info.gpu.count > 1) md << " x " << info.gpu.count;
  if (info.gpu.name == "none" && !info.gpu.note.empty()) md << ": " << cell(info.gpu.note);
  md << " |\n";
  md << "| CUDA driver / runtime | " << cell(info.gpu.driver_version) << " / "
     << cell(info.gpu.runtime_version) << " |\n";
  md << "| CUDA toolkit / NVRTC / cuSPARSE (build) | " << cell(info.versions.cuda_toolkit) << " / "
     << cell(info.versions.nvrtc) << " / " << cell(info.versions.cusparse) << " |\n";
  md << "| LibTorch | " << cell(info.versions.libtorch) << " |\n";
  md << "| sparserl | " << cell(info.versions.sparserl) << ", " << cell(info.versions.compiler)
     << " |\n";
  md << "| git | " << code(info.git.commit);
  if (info.git.dirty) md << (*info.git.dirty ? " (with local changes)" : " (clean)");
  md << " |\n";
  if (!info.error.empty())
    md << "| " << (info.status == RunStatus::failed ? "error" : "note") << " | " << cell(info.error)
       << " |\n";
  md << "\n";
}

struct PlotContext {
  const std::optional<Gnuplot>& gnuplot;
  fs::path plots_dir;
  ReportOutcome& outcome;
};

// Draws with `draw`, returning the Markdown image line or a note of why there is none.
template <typename Draw>
std::string try_plot(const PlotContext& ctx, const std::string& stem, const std::string& alt,
                     Draw draw) {
  if (!ctx.gnuplot) return {};
  const fs::path png = ctx.plots_dir / (stem + ".png");
  try {
    draw(*ctx.gnuplot, png);
    ctx.outcome.plots.push_back(png);
    return "![" + alt + "](plots/" + stem + ".png)\n\n";
  } catch (const PlotError& e) {
    ctx.outcome.skipped.push_back("plot " + stem + ": " + e.what());
    return "(plot " + stem + " not drawn: " + cell(e.what()) + ")\n\n";
  }
}

void metrics_section(std::ostringstream& md, const fs::path& file, const ReportOptions& options,
                     const PlotContext& ctx) {
  md << "## Training curves\n\n";
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    md << "No metrics.jsonl in this run directory.\n\n";
    return;
  }
  const MetricsLog log = read_metrics(file);
  if (log.records.empty()) {
    md << "metrics.jsonl holds no records yet.\n\n";
    if (log.truncated_last_line)
      md << "(Its only line was cut short, as a killed run leaves it.)\n\n";
    return;
  }
  std::set<std::string> stages;
  for (const MetricsRecord& r : log.records) stages.insert(r.stage.empty() ? "-" : r.stage);
  std::string stage_list;
  for (const std::string& s : stages) stage_list += (stage_list.empty() ? "" : ", ") + s;
  md << log.records.size() << " records in metrics.jsonl, steps " << log.records.front().step
     << " to " << log.records.back().step << " (stages: " << stage_list << ").";
  if (log.truncated_last_line) md << " The last line was cut short (a killed run) and is left out.";
  md << "\n\n";

  // Records without a stage are listed as stage "-".
  auto series_of = [&](const std::string& name, const std::string& stage) {
    std::vector<std::pair<std::int64_t, double>> out;
    for (const MetricsRecord& r : log.records) {
      if ((r.stage.empty() ? std::string("-") : r.stage) != stage) continue;
      if (const auto v = r.get(name)) out.emplace_back(r.step, *v);
    }
    return out;
  };
  md << "| statistic | stage | records | first | last | min | max "
        "|\n|---|---|---|---|---|---|---|\n";
  std::vector<std::string> absent;
  for (const std::string& name : options.curves) {
    bool found = false;
    for (const std::string& stage : stages) {
      const auto series = series_of(name, stage);
      if (series.empty()) continue;
      found = true;
      std::vector<double> finite;
      for (const auto& p : series) {
        if (std::isfinite(p.second)) finite.push_back(p.second);
      }
      const double lo = finite.empty() ? NAN : *std::min_element(finite.begin(), finite.end());
      const double hi = finite.empty() ? NAN : *std::max_element(finite.begin(), finite.end());
      md << "| " << code(name) << " | " << cell(stage) << " | " << series.size() << " | "
         << num(series.front().second) << " | " << num(series.back().second) << " | " << num(lo)
         << " | " << num(hi) << " |\n";
    }
    if (!found) absent.push_back(name);
  }
  md << "\n";
  if (!absent.empty()) {
    std::string list;
    for (const std::string& a : absent) list += (list.empty() ? "" : ", ") + code(a);
    md << "Not logged by this run: " << list << ".\n\n";
    for (const std::string& a : absent)
      ctx.outcome.skipped.push_back("curve " + a + ": not in metrics.jsonl");
  }
  for (const std::string& name : options.curves) {
    if (std::find(absent.begin(), absent.end(), name) != absent.end()) continue;
    LinePlot plot;
    plot.title = name;
    plot.ylabel = name;
    for (const std::string& stage : stages) {
      PlotSeries s;
      s.title = stage == "-" ? name : stage;
      for (const auto& [step, v] : series_of(name, stage))
        s.points.emplace_back(static_cast<double>(step), v);
      if (!s.points.empty()) plot.series.push_back(std::move(s));
    }
    if (name.find("speedup") != std::string::npos) plot.reference_y = 1.0;
    md << try_plot(ctx, plot_file_stem(name), name,
                   [&](const Gnuplot& g, const fs::path& png) { draw_line_plot(g, plot, png); });
  }
}

// The heading of a regime's tables; the large regime is the headline (small matrices are
// launch-bound and say little about kernel quality).
std::string regime_heading(const std::string& regime) {
  if (regime == "large") return "### Large matrices (>= 1,000,000 nonzeros): the headline";
  if (regime == "medium") return "### Medium matrices (200,000 to 999,999 nonzeros)";
  if (regime == "small") return "### Small matrices (< 200,000 nonzeros, launch-bound)";
  return "### All matrices";
}

// The per-agent table of one regime's rows, and their comparison with the reference agent.
void summary_tables(std::ostringstream& md, const std::vector<MatrixResult>& rows,
                    const ReportOptions& options) {
  const std::vector<AgentSummary> summaries = summarize_results(rows);
  std::int64_t k = 0;
  for (const AgentSummary& s : summaries) k = std::max(k, s.k);
  const std::string pass_k = k > 0 ? "pass@" + std::to_string(k) : std::string("pass@k");
  const std::string best_k = k > 0 ? "best of " + std::to_string(k + 1) : std::string("best of k");
  md << "| agent | matrices | compile rate | correct rate (answers) | pass@1 | " << pass_k
     << " | sample compile rate | geomean speedup (correct) | geomean speedup (failures as 1) | "
     << best_k
     << " (failures as 1) | faster than cuSPARSE | median GFLOP/s | mean roofline fraction "
        "(bandwidth) | geomean oracle fraction (correct) | novel (of correct) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const AgentSummary& s : summaries) {
    md << "| " << cell(s.agent) << " | " << s.matrices << " | " << percent(s.compile_rate) << " | "
       << percent(s.correct_rate) << " | " << percent(s.pass_at_1) << " | "
       << percent(s.pass_at_k) << " | "
       << percent(s.sample_compile_rate) << " | " << num(s.geomean_speedup) << " | "
       << num(s.geomean_speedup_fallback) << " | " << num(s.geomean_best_speedup) << " | "
       << percent(s.faster_share) << " | " << num(s.median_gflops) << " | "
       << percent(s.mean_bandwidth_fraction) << " | " << percent(s.geomean_oracle_fraction) << " | "
       << percent(s.novel_share) << " |\n";
  }
  md << "\n";
  const std::vector<PairedComparison> paired = compare_with_reference(rows, options.reference);
  if (paired.empty()) return;
  md << "Against " << cell(options.reference)
     << ", matrix by matrix (in one `sparserl bench` an answer that is the reference's program "
        "has the reference's measurement, so only the matrices answered differently move the "
        "ratio):\n\n"
        "| agent | matrices | answered with another program | faster / slower than "
     << cell(options.reference) << " | speedup vs " << cell(options.reference)
     << " (geomean of ratios, failures as 1) |\n|---|---|---|---|---|\n";
  for (const PairedComparison& p : paired) {
    md << "| " << cell(p.agent) << " | " << p.matrices << " | " << p.different_programs << " | "
       << p.faster << " / " << p.slower << " | " << num(p.speedup_ratio) << " |\n";
  }
  md << "\n";
}

std::string novelty_cell(const MatrixResult& r) {
  if (!r.novel) return "-";
  return *r.novel ? "yes" : "no";
}

void matrix_table(std::ostringstream& md, const std::vector<MatrixResult>& rows,
                  const ReportOptions& options) {
  md << "| matrix | regime | family | nnz | agent | compiled | correct | kernel (us) | cuSPARSE "
        "(us) | cuSPARSE path | speedup | GFLOP/s | roofline fraction (bandwidth) | oracle speedup "
        "| oracle fraction | novel | corpus distance | program |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  const std::size_t shown = std::min(rows.size(), options.table_rows);
  for (std::size_t i = 0; i < shown; ++i) {
    const MatrixResult& r = rows[i];
    const char* correct = !r.tested ? "n/a" : r.correct ? "yes" : "no";
    md << "| " << code(r.matrix) << " | " << cell(regime_name(r)) << " | "
       << cell(r.family.empty() ? std::string("-") : r.family) << " | " << r.nnz << " | "
       << cell(r.agent) << " | " << (r.compiled ? "yes" : "no") << " | " << correct << " | "
       << num(r.candidate_us) << " | " << num(r.cusparse_us) << " | "
       << cell(r.cusparse_path.empty() ? std::string("-") : r.cusparse_path) << " | "
       << num(r.speedup) << " | "
       << num(r.gflops) << " | " << percent(r.bandwidth_fraction) << " | " << num(r.oracle_speedup)
       << " | " << percent(r.oracle_fraction) << " | " << novelty_cell(r) << " | "
       << num(r.corpus_distance) << " | "
       << (r.program.empty() ? std::string("-") : code(r.program.substr(0, 12))) << " |\n";
  }
  if (shown < rows.size()) md << "\n" << rows.size() - shown << " more rows in results.csv.\n";
  md << "\n";
}

void results_section(std::ostringstream& md, const fs::path& file, const ReportOptions& options,
                     const PlotContext& ctx) {
  md << "## Results per matrix\n\n";
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    md << "No results.csv in this run directory (an evaluation or `sparserl bench` writes "
          "one).\n\n";
    return;
  }
  const std::vector<MatrixResult> rows = read_results_csv(file);
  if (rows.empty()) {
    md << "results.csv has a header and no rows.\n\n";
    return;
  }
  md << "Every answer is measured three ways. Speedup = cuSPARSE median time / kernel median "
        "time, both timed by the evaluator's protocol in the same GPU worker (docs/reward.md). "
        "Roofline fraction = the kernel's effective bandwidth (compulsory bytes / time) over the "
        "device's measured copy bandwidth. Oracle fraction = speedup / the oracle's speedup, the "
        "oracle being the template search's best program for the matrix (a failed answer counts "
        "0 in results.csv; the tables take the geometric mean over correct answers). Novel = a "
        "correct answer whose normalised program is not in the training corpus; corpus distance "
        "= token edit distance to the nearest corpus program. Regimes by nonzeros; the large "
        "regime is the headline.\n\n";
  const std::vector<RegimeSummary> regimes = summarize_by_regime(rows);
  for (const char* regime : {"large", "medium", "small", "all"}) {
    const bool present = std::any_of(regimes.begin(), regimes.end(),
                                     [&](const RegimeSummary& r) { return r.regime == regime; });
    if (!present) continue;
    md << regime_heading(regime) << "\n\n";
    summary_tables(md, rows_of_regime(rows, regime), options);
  }
  const std::vector<AgentSummary> summaries = summarize_results(rows);
  const bool any_tested = std::any_of(summaries.begin(), summaries.end(),
                                      [](const AgentSummary& s) { return s.tested; });
  if (!any_tested) {
    md << "No GPU stages ran (no GPU, or compile only): correctness, pass@k and every speed "
          "figure are n/a, not zero. Only the compile rate was measured.\n\n";
    ctx.outcome.skipped.push_back("plots speedup_bars, time_vs_nnz: no GPU timings");
  } else {
    md << try_plot(ctx, "speedup_bars", "speedup over cuSPARSE per matrix",
                   [&](const Gnuplot& g, const fs::path& png) {
                     draw_speedup_bars(g, rows, options.bar_matrices, png);
                   });
    md << try_plot(ctx, "time_vs_nnz", "kernel time against nnz",
                   [&](const Gnuplot& g, const fs::path& png) { draw_time_vs_nnz(g, rows, png); });
  }
  md << "### Per matrix\n\n";
  matrix_table(md, rows, options);
}

void checkpoints_section(std::ostringstream& md, const fs::path& dir,
                         const ReportOptions& options) {
  md << "## Checkpoints\n\n";
  const CheckpointStore store(dir, options.checkpoints);
  const std::vector<CheckpointInfo> all = store.list();
  if (all.empty()) {
    md << "None saved.\n\n";
    return;
  }
  const std::string& metric = options.checkpoints.best_metric;
  const auto best = store.best();
  md << "| checkpoint | step |" << (metric.empty() ? "" : " " + code(metric) + " |")
     << "\n|---|---|" << (metric.empty() ? "" : "---|") << "\n";
  for (const CheckpointInfo& c : all) {
    md << "| checkpoints/" << c.dir.filename().string()
       << (best && best->step == c.step ? " (best)" : "") << " | " << c.step << " |";
    if (!metric.empty()) {
      const auto v = c.metric(metric);
      md << " " << (v ? num(*v) : std::string("n/a")) << " |";
    }
    md << "\n";
  }
  md << "\n";
}

}  // namespace

ReportOptions report_options(const Config& config) {
  ReportOptions o;
  o.plots = config.boolean("report.plots");
  o.gnuplot = config.string("report.gnuplot");
  o.curves = config.string_list("report.curves");
  o.bar_matrices = static_cast<std::size_t>(config.integer("report.bar_matrices"));
  o.reference = config.string("report.reference");
  o.checkpoints = checkpoint_policy(config);
  return o;
}

ReportOutcome write_report(const fs::path& run_dir, const ReportOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) throw RunDirectoryError(run_dir.string() + ": not a folder");
  ReportOutcome outcome;
  outcome.report = run_dir / "report.md";
  const fs::path plots_dir = run_dir / "plots";

  std::optional<Gnuplot> gnuplot;
  std::string plots_note;
  if (options.plots) {
    GnuplotProbe probe = find_gnuplot(options.gnuplot);
    if (probe.gnuplot) {
      fs::create_directories(plots_dir, ec);
      if (ec) throw PlotError(plots_dir.string() + ": cannot create (" + ec.message() + ")");
      gnuplot = probe.gnuplot;
      plots_note = "Plots drawn with " + gnuplot->version + " (" + gnuplot->terminal +
                   " terminal); each has its data (.dat) and script (.gp) beside it in plots/.";
    } else {
      plots_note = "Plots skipped: " + probe.reason +
                   ". Redraw them on a machine with gnuplot: `sparserl plot " + run_dir.string() +
                   "`.";
      outcome.skipped.push_back("plots: " + probe.reason);
    }
  } else {
    plots_note = "Plots skipped (report.plots = false). `sparserl plot " + run_dir.string() +
                 "` draws them.";
    outcome.skipped.push_back("plots: disabled");
  }
  const PlotContext ctx{gnuplot, plots_dir, outcome};

  std::ostringstream md;
  const fs::path run_json = run_dir / "run.json";
  std::string title = run_dir.filename().string();
  std::optional<RunInfo> info;
  if (fs::exists(run_json, ec)) {
    info = read_run_info(run_json);
    if (!info->run_id.empty()) title = info->run_id;
  }
  md << "# Run " << title << "\n\n";
  if (info) {
    run_section(md, *info);
  } else {
    md << "No run.json in this folder: host, versions and status are unknown.\n\n";
  }
  metrics_section(md, run_dir / "metrics.jsonl", options, ctx);
  results_section(md, run_dir / "results.csv", options, ctx);
  checkpoints_section(md, run_dir / "checkpoints", options);
  md << "## About this report\n\n" << plots_note << "\n\n";
  md << "Written from run.json, metrics.jsonl, results.csv and checkpoints/ on "
     << iso_utc(std::chrono::system_clock::now()) << "; `sparserl plot " << run_dir.string()
     << "` writes it again.";
  std::error_code tec;
  if (fs::exists(run_dir / "trajectories.h5", tec)) {
    md << " Episodes: `sparserl inspect " << (run_dir / "trajectories.h5").string() << "`.";
  }
  md << "\n";
  write_file_atomically(outcome.report, md.str());
  return outcome;
}

}  // namespace sparserl::experiments
