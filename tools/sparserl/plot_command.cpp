// `sparserl plot RUN_DIR`: re-renders a run directory's report.md and its PNG plots from run.json,
// metrics.jsonl, results.csv and checkpoints/ - for a run made on a GPU host without gnuplot, or
// after a run was interrupted. Options come from the run's config.resolved.toml ([report],
// [checkpoints]); flags override them.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "options.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/report.hpp"

namespace sparserl::tools {
namespace {

struct PlotArgs {
  std::string dir;
  std::optional<std::string> gnuplot;
  std::vector<std::string> curves;
  std::vector<std::string> overrides;
  bool no_plots = false;
  bool quiet = false;
};

int run_plot(const PlotArgs& a) {
  const std::filesystem::path dir = a.dir;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw std::runtime_error(dir.string() + ": not a folder");

  const std::filesystem::path resolved = dir / "config.resolved.toml";
  experiments::ReportOptions options;
  if (std::filesystem::exists(resolved, ec)) {
    options = experiments::report_options(experiments::Config::load(resolved, a.overrides));
  } else {
    experiments::Config config;
    for (const std::string& o : a.overrides) config.set(o);
    options = experiments::report_options(config);
  }
  if (a.gnuplot) options.gnuplot = *a.gnuplot;
  if (!a.curves.empty()) options.curves = a.curves;
  if (a.no_plots) options.plots = false;

  const experiments::ReportOutcome outcome = experiments::write_report(dir, options);
  if (!a.quiet) {
    std::cout << "wrote " << outcome.report.string() << "\n";
    for (const auto& png : outcome.plots) std::cout << "drew  " << png.string() << "\n";
    for (const auto& s : outcome.skipped) std::cout << "skipped " << s << "\n";
  }
  return 0;
}

Run declare_plot(CLI::App& app) {
  app.description(
      "Writes RUN_DIR/report.md (run facts from run.json, training curves from\n"
      "metrics.jsonl, per-agent and per-matrix tables from results.csv, checkpoints)\n"
      "and draws RUN_DIR/plots/*.png with gnuplot (each with its .dat and .gp).\n"
      "Without gnuplot the report is written with its tables and says the plots\n"
      "were skipped. Options default to the run's config.resolved.toml ([report],\n"
      "[checkpoints]).");
  auto a = std::make_shared<PlotArgs>();
  app.add_option("RUN_DIR", a->dir, "the run directory")->required();
  app.add_option("--gnuplot", a->gnuplot, "the gnuplot to use (default: report.gnuplot)")
      ->type_name("PROGRAM");
  repeatable(app.add_option("--curve", a->curves,
                            "a statistic of metrics.jsonl to plot (repeatable; replaces "
                            "report.curves)"))
      ->type_name("NAME");
  app.add_flag("--no-plots", a->no_plots, "write report.md only");
  repeatable(app.add_option("--set", a->overrides,
                            "override a key of the run's config for the report (repeatable)"))
      ->type_name("KEY=VALUE");
  app.add_flag("--quiet", a->quiet, "print nothing on success");
  return [a](const std::vector<std::string>&) { return run_plot(*a); };
}

const CommandRegistration kPlot("plot", "re-render a run directory's report.md and plots",
                                declare_plot);

}  // namespace
}  // namespace sparserl::tools
