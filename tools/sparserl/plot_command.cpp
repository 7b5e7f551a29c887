// `sparserl plot RUN_DIR`: re-renders a run directory's report.md and its PNG plots from run.json,
// metrics.jsonl, results.csv and checkpoints/ - for a run made on a GPU host without gnuplot, or
// after a run was interrupted. Options come from the run's config.resolved.toml ([report],
// [checkpoints]); flags override them.
#include <iostream>

#include "cli.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/report.hpp"

namespace sparserl::tools {
namespace {

int run_plot(const std::vector<std::string>& argv) {
  Args args(argv, {"no-plots", "quiet"});
  args.allow_only({"gnuplot", "curve", "set"});
  if (args.positional().size() != 1) throw UsageError("expected one run directory (RUN_DIR)");
  const std::filesystem::path dir = args.positional(0, "RUN_DIR");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw std::runtime_error(dir.string() + ": not a folder");

  const std::filesystem::path resolved = dir / "config.resolved.toml";
  experiments::ReportOptions options;
  const std::vector<std::string> overrides = args.all("set");
  if (std::filesystem::exists(resolved, ec)) {
    options = experiments::report_options(experiments::Config::load(resolved, overrides));
  } else {
    experiments::Config config;
    for (const std::string& o : overrides) config.set(o);
    options = experiments::report_options(config);
  }
  if (const auto g = args.option("gnuplot")) options.gnuplot = *g;
  if (const auto curves = args.all("curve"); !curves.empty()) options.curves = curves;
  if (args.flag("no-plots")) options.plots = false;

  const experiments::ReportOutcome outcome = experiments::write_report(dir, options);
  if (!args.flag("quiet")) {
    std::cout << "wrote " << outcome.report.string() << "\n";
    for (const auto& png : outcome.plots) std::cout << "drew  " << png.string() << "\n";
    for (const auto& s : outcome.skipped) std::cout << "skipped " << s << "\n";
  }
  return 0;
}

const CommandRegistration kPlot(
    {"plot", "re-render a run directory's report.md and plots",
     "usage: sparserl plot RUN_DIR [--gnuplot PROGRAM] [--curve NAME ...] [--no-plots]\n"
     "                    [--set section.key=value ...] [--quiet]\n\n"
     "Writes RUN_DIR/report.md (run facts from run.json, training curves from\n"
     "metrics.jsonl, per-agent and per-matrix tables from results.csv, checkpoints)\n"
     "and draws RUN_DIR/plots/*.png with gnuplot (each with its .dat and .gp).\n"
     "Without gnuplot the report is written with its tables and says the plots\n"
     "were skipped. Options default to the run's config.resolved.toml ([report],\n"
     "[checkpoints]).\n\n"
     "  --gnuplot PROGRAM   the gnuplot to use (default: report.gnuplot)\n"
     "  --curve NAME        a statistic of metrics.jsonl to plot (repeatable;\n"
     "                      replaces report.curves)\n"
     "  --no-plots          write report.md only\n"
     "  --set KEY=VALUE     override a key of the run's config for the report\n"
     "  --quiet             print nothing on success\n",
     run_plot});

}  // namespace
}  // namespace sparserl::tools
