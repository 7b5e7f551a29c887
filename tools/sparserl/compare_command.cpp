// `sparserl compare RUN_DIR...`: agents of several bench or eval run directories compared over
// their seeds with rliable's statistics - interquartile means with stratified bootstrap intervals,
// the probability of improvement over a reference agent, unbiased pass@k - per regime, into
// compare.md, compare.csv and intervals.png (agent_comparison.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "options.hpp"
#include "sparserl/datasets/text.hpp"
#include "sparserl/experiments/agent_comparison.hpp"

namespace fs = std::filesystem;

namespace sparserl::tools {
namespace {

// ./compare-<UTC time>, with -2, -3 ... when that folder exists already.
fs::path default_out_dir() {
  const fs::path base = fs::path(
      "compare-" + datasets::utc_text(std::chrono::system_clock::now(), datasets::kCompactUtc));
  fs::path out = base;
  std::error_code ec;
  for (int i = 2; fs::exists(out, ec); ++i) out = base.string() + "-" + std::to_string(i);
  return out;
}

std::string interval_text(const experiments::MetricEstimate& m, int digits) {
  auto f = [&](double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    return std::string(buf);
  };
  if (!std::isfinite(m.value.point)) return "n/a";
  return f(m.value.point) + " [" + f(m.value.low) + ", " + f(m.value.high) + "]";
}

struct CompareArgs {
  std::vector<std::string> dirs;
  std::optional<std::string> out;
  std::optional<std::string> regime;
  std::string gnuplot = "gnuplot";
  bool no_plots = false;
  bool quiet = false;
  experiments::CompareOptions options;
};

int run_compare(const CompareArgs& a) {
  experiments::CompareOptions options = a.options;
  if (a.regime) options.regime = experiments::parse_regime(*a.regime);
  const std::vector<fs::path> dirs(a.dirs.begin(), a.dirs.end());
  const experiments::Comparison c = experiments::compare_agents(dirs, options);
  const fs::path out = a.out ? fs::path(*a.out) : default_out_dir();
  const experiments::ComparisonOutcome o =
      experiments::write_comparison(c, out, a.gnuplot, !a.no_plots);
  if (a.quiet) return 0;
  std::cout << "compared " << c.agents.size() << " agent" << (c.agents.size() == 1 ? "" : "s")
            << " over " << c.runs.size() << " run director" << (c.runs.size() == 1 ? "y" : "ies")
            << " on " << c.matrices.size() << " matri" << (c.matrices.size() == 1 ? "x" : "ces");
  if (!c.dropped.empty()) std::cout << " (" << c.dropped.size() << " left out)";
  std::cout << ", reference " << c.reference << "\n";
  for (const experiments::RegimeSection& s : c.sections) {
    // A regime that holds every matrix repeats the section of all matrices.
    const bool repeats = s.regime != experiments::RegimeScope::all &&
                         s.matrices == c.matrices.size() &&
                         c.sections.front().regime == experiments::RegimeScope::all;
    if (s.agents.empty() || repeats) continue;
    std::cout << "\n"
              << experiments::to_string(s.regime) << " (" << s.matrices
              << " matrices): IQM speedup [95% CI], P(agent > " << c.reference << ")\n";
    std::size_t width = 0;
    for (const experiments::AgentEstimates& e : s.agents) width = std::max(width, e.agent.size());
    for (const experiments::AgentEstimates& e : s.agents) {
      std::cout << "  " << e.agent;
      for (std::size_t pad = e.agent.size(); pad < width + 2; ++pad) std::cout << ' ';
      std::cout << interval_text(e.metrics.front(), 4);
      if (e.improvement) std::cout << "   " << interval_text(*e.improvement, 3);
      std::cout << "\n";
    }
  }
  std::cout << "\nwrote " << o.report.string() << "\nwrote " << o.csv.string() << "\n";
  if (o.plot)
    std::cout << "drew  " << o.plot->string() << "\n";
  else
    std::cout << "skipped plot intervals.png: " << o.plot_skipped << "\n";
  return 0;
}

Run declare_compare(CLI::App& app) {
  app.description(
      "Compares the agents of several `sparserl bench` or `sparserl eval` run\n"
      "directories with rliable's statistics. An agent's rows from different run\n"
      "directories are its runs (seeds); the matrices every run answered are the\n"
      "tasks. When runs of different experiments hold an agent of one name, each is\n"
      "labelled EXPERIMENT/AGENT. Per agent and regime (all matrices, then large,\n"
      "medium, small; large is the headline): the interquartile mean of the speedup\n"
      "over cuSPARSE (failures as 1) and of the oracle fraction (failures as 0, when\n"
      "results.csv has it), the geomean speedup, unbiased pass@1 and pass@k, the\n"
      "compile rate, the share of novel correct answers (when results.csv has a\n"
      "`novel` column), each with a stratified bootstrap 95% interval, and the\n"
      "probability that the agent beats the reference on a random matrix. Without a\n"
      "GPU (tested = 0) everything but the compile rate is n/a.\n"
      "\n"
      "Writes DIR/compare.md (tables, notes, method, the runs read), DIR/compare.csv\n"
      "(agent,regime,metric,point,low,high,...) and DIR/intervals.png (with gnuplot).");
  auto a = std::make_shared<CompareArgs>();
  app.add_option("RUN_DIR", a->dirs, "the bench or eval run directories")->required();
  app.add_option("--out", a->out, "the output folder (default: ./compare-<UTC time>)")
      ->type_name("DIR");
  app.add_option("--reference", a->options.reference,
                 "the agent others are compared with (default: the first)")
      ->type_name("AGENT");
  app.add_option("--reps", a->options.bootstrap.replicates, "bootstrap replicates")
      ->type_name("N")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{10'000'000}));
  non_negative(app.add_option("--seed", a->options.bootstrap.seed, "the bootstrap's seed"))
      ->type_name("S");
  one_of(app.add_option("--regime", a->regime,
                        "report only this section: all (every matrix), small, "
                        "medium or large "
                        "(default: all four sections)"),
         {"all", "small", "medium", "large"});
  app.add_flag("--seeds-in-names", a->options.seeds_in_names,
               "an agent named NAME-sN is run N of NAME (seeds benched side by "
               "side through "
               "bench.policies, e.g. grpo-s1, grpo-s2)");
  app.add_option("--gnuplot", a->gnuplot, "the gnuplot to use (default: gnuplot on PATH)")
      ->type_name("PROGRAM");
  app.add_flag("--no-plots", a->no_plots, "write compare.md and compare.csv only");
  app.add_flag("--quiet", a->quiet, "print nothing on success");
  return [a](const std::vector<std::string>&) { return run_compare(*a); };
}

const CommandRegistration kCompare(
    "compare", "compare agents over seeds (IQM, bootstrap intervals, P(improvement))",
    declare_compare);

}  // namespace
}  // namespace sparserl::tools
