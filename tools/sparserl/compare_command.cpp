// `sparserl compare RUN_DIR...`: agents of several bench or eval run directories compared over
// their seeds with rliable's statistics - interquartile means with stratified bootstrap intervals,
// the probability of improvement over a reference agent, unbiased pass@k - per regime, into
// compare.md, compare.csv and intervals.png (agent_comparison.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <limits>

#include "cli.hpp"
#include "sparserl/experiments/agent_comparison.hpp"

namespace fs = std::filesystem;

namespace sparserl::tools {
namespace {

// ./compare-<UTC time>, with -2, -3 ... when that folder exists already.
fs::path default_out_dir() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  const fs::path base = fs::path("compare-" + std::string(stamp));
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

int run_compare(const std::vector<std::string>& argv) {
  Args args(argv, {"no-plots", "quiet", "seeds-in-names"});
  args.allow_only({"out", "reference", "reps", "seed", "regime", "gnuplot"});
  if (args.positional().empty()) throw UsageError("expected at least one run directory (RUN_DIR)");
  experiments::CompareOptions options;
  options.reference = args.option_or("reference", "");
  options.seeds_in_names = args.flag("seeds-in-names");
  options.bootstrap.replicates = args.integer("reps", 2000, 1, 10'000'000);
  options.bootstrap.seed =
      static_cast<std::uint64_t>(args.integer("seed", 0, 0, std::numeric_limits<long long>::max()));
  if (const auto r = args.option("regime")) {
    try {
      options.regime = experiments::parse_regime(*r);
    } catch (const experiments::ComparisonError& e) {
      throw UsageError(std::string("--regime: ") + e.what());
    }
  }
  std::vector<fs::path> dirs(args.positional().begin(), args.positional().end());
  const experiments::Comparison c = experiments::compare_agents(dirs, options);
  const fs::path out = args.option("out") ? fs::path(*args.option("out")) : default_out_dir();
  const experiments::ComparisonOutcome o = experiments::write_comparison(
      c, out, args.option_or("gnuplot", "gnuplot"), !args.flag("no-plots"));
  if (args.flag("quiet")) return 0;
  std::cout << "compared " << c.agents.size() << " agent" << (c.agents.size() == 1 ? "" : "s")
            << " over " << c.runs.size() << " run director" << (c.runs.size() == 1 ? "y" : "ies")
            << " on " << c.matrices.size() << " matri" << (c.matrices.size() == 1 ? "x" : "ces");
  if (!c.dropped.empty()) std::cout << " (" << c.dropped.size() << " left out)";
  std::cout << ", reference " << c.reference << "\n";
  for (const experiments::RegimeSection& s : c.sections) {
    // A regime that holds every matrix repeats the section of all matrices.
    const bool repeats = s.regime != experiments::RegimeScope::all && s.matrices == c.matrices.size() &&
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

const CommandRegistration kCompare(
    {"compare", "compare agents over seeds (IQM, bootstrap intervals, P(improvement))",
     "usage: sparserl compare RUN_DIR... [--out DIR] [--reference AGENT] [--reps N] [--seed S]\n"
     "                        [--regime all|small|medium|large] [--seeds-in-names]\n"
     "                        [--gnuplot PROGRAM] [--no-plots] [--quiet]\n\n"
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
     "GPU (tested = 0) everything but the compile rate is n/a.\n\n"
     "Writes DIR/compare.md (tables, notes, method, the runs read), DIR/compare.csv\n"
     "(agent,regime,metric,point,low,high,...) and DIR/intervals.png (with gnuplot).\n\n"
     "  --out DIR            the output folder (default: ./compare-<UTC time>)\n"
     "  --reference AGENT    the agent others are compared with (default: the first)\n"
     "  --reps N             bootstrap replicates (default 2000)\n"
     "  --seed S             the bootstrap's seed (default 0)\n"
     "  --regime R           report only this section: all (every matrix), small,\n"
     "                       medium or large (default: all four sections)\n"
     "  --seeds-in-names     an agent named NAME-sN is run N of NAME (seeds benched\n"
     "                       side by side through bench.policies, e.g. grpo-s1, grpo-s2)\n"
     "  --gnuplot PROGRAM    the gnuplot to use (default: gnuplot on PATH)\n"
     "  --no-plots           write compare.md and compare.csv only\n"
     "  --quiet              print nothing on success\n",
     run_compare});

}  // namespace
}  // namespace sparserl::tools
