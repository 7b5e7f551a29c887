// report.md and its plots from a run directory: tables from run.json, metrics.jsonl, results.csv
// and checkpoints/; PNGs drawn by gnuplot where it is installed, and a report that says the plots
// were skipped where it is not; `sparserl plot RUN_DIR` as a user runs it.
#include "sparserl/experiments/report.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <set>
#include <string>

#include "catch.hpp"
#include "sparserl/experiments/metrics.hpp"
#include "sparserl/experiments/plots.hpp"
#include "sparserl/experiments/results.hpp"
#include "sparserl/experiments/run_directory.hpp"
#include "command_checks.hpp"
#include "test_support.hpp"

using namespace sparserl::experiments;
using namespace sparserl::testing;
namespace fs = std::filesystem;

namespace {

bool is_png(const fs::path& file) {
  const std::string head = sparserl::testing::read_bytes(file).substr(0, 8);
  return head == std::string("\x89PNG\r\n\x1a\n", 8);
}

// A completed run with SFT and RL statistics, two agents' per-matrix results and two checkpoints.
RunDirectory make_run(const fs::path& out) {
  Config config;
  config.set("experiment.output_dir", Value(out.string()));
  config.set("experiment.name", Value(std::string("report")));
  config.set("checkpoints.best_metric", Value(std::string("reward/mean")));
  RunStart start;
  start.command = "sparserl train report.toml";
  const RunDirectory run = RunDirectory::create(config, start);
  {
    MetricsWriter m(run.metrics_path());
    for (int step = 1; step <= 30; ++step) {
      m.append(step, "sft", {{"loss", 3.0 / step}});
    }
    for (int step = 31; step <= 120; ++step) {
      const double t = (step - 30) / 90.0;
      m.append(step, "rl",
               {{"reward/mean", -0.5 + 1.2 * t + 0.05 * std::sin(step)},
                {"env/compile_rate", 0.6 + 0.38 * t},
                {"env/correct_rate", 0.3 + 0.5 * t},
                {"env/speedup_geomean", step == 40 ? std::nan("") : 0.7 + 0.6 * t}});
    }
  }
  std::vector<MatrixResult> rows;
  const char* agents[] = {"template", "grpo"};
  for (int a = 0; a < 2; ++a) {
    for (int i = 0; i < 12; ++i) {
      MatrixResult r;
      r.matrix = "suitesparse-v1/Group/matrix_" + std::to_string(i);
      r.nnz = 1000 * (i + 1) * (i + 1);
      r.agent = agents[a];
      r.compiled = !(a == 1 && i == 3);
      r.correct = r.compiled && !(a == 1 && i == 5);
      r.cusparse_us = 2.0 + 0.01 * static_cast<double>(r.nnz) / 100;
      r.candidate_us = r.cusparse_us / (0.6 + 0.08 * i + 0.1 * a);
      r.speedup = r.correct ? r.cusparse_us / r.candidate_us : std::nan("");
      r.gflops = 2.0 * static_cast<double>(r.nnz) / (r.candidate_us * 1e3);
      r.bandwidth_fraction = 0.3 + 0.02 * i;
      if (i >= 10) r.regime = "large";  // as a benchmark split tags them
      r.family = "Group";
      r.oracle_speedup = 2.0;
      r.oracle_fraction = r.correct ? r.speedup / 2.0 : 0.0;
      if (r.correct) r.novel = a == 1 && i % 2 == 0;
      rows.push_back(r);
    }
  }
  write_results_csv(run.results_path(), rows);
  CheckpointStore store = run.checkpoints();
  store.save(60, {{"reward/mean", 0.2}},
             [](const fs::path& d) { std::ofstream(d / "policy.pt") << "w"; });
  store.save(120, {{"reward/mean", 0.7}},
             [](const fs::path& d) { std::ofstream(d / "policy.pt") << "w"; });
  run.mark(RunStatus::completed);
  return run;
}

}  // namespace

TEST_CASE("the report has its tables, and plots where gnuplot exists", "[experiments][report]") {
  const RunDirectory run = make_run(scratch_dir("report_full"));
  ReportOptions options = report_options(run.config());
  options.curves.push_back("never/logged");
  const ReportOutcome outcome = write_report(run.root(), options);
  const std::string md = sparserl::testing::read_bytes(run.report_path());
  INFO(md);
  CHECK(outcome.report == run.report_path());
  CHECK_THAT(md, has_substring("# Run " + run.run_id()));
  CHECK_THAT(md, has_substring("**completed**"));
  CHECK_THAT(md, has_substring("| command | `sparserl train report.toml` |"));
  CHECK_THAT(md, has_substring("| `reward/mean` | rl | 90 |"));
  CHECK_THAT(md, has_substring("| `loss` | sft | 30 | 3 | 0.1 | 0.1 | 3 |"));
  CHECK_THAT(md, has_substring("Not logged by this run: `never/logged`."));
  CHECK_THAT(md, has_substring("| template | 12 | 100.0% | 100.0% |"));
  CHECK_THAT(md, has_substring("| grpo | 12 | 91.7% | 83.3% |"));
  CHECK_THAT(md, has_substring("| `suitesparse-v1/Group/matrix_3` | small | Group | 16000 | grpo "
                               "| no | no |"));
  // Per regime, the large regime first (the headline), then small, then all matrices.
  const auto large = md.find("### Large matrices (>= 1,000,000 nonzeros): the headline");
  const auto small = md.find("### Small matrices (< 200,000 nonzeros, launch-bound)");
  const auto all = md.find("### All matrices");
  REQUIRE(large != std::string::npos);
  REQUIRE(small != std::string::npos);
  REQUIRE(all != std::string::npos);
  CHECK(large < small);
  CHECK(small < all);
  CHECK(md.find("### Medium matrices") == std::string::npos);  // no medium rows
  CHECK(md.find("| template | 2 | 100.0% | 100.0% |", large) < small);
  CHECK(md.find("| template | 10 | 100.0% | 100.0% |", small) < all);
  CHECK_THAT(md, has_substring("mean roofline fraction (bandwidth) | geomean oracle fraction "
                               "(correct) | novel (of correct) |"));
  // grpo over all matrices: 10 correct answers (3 did not compile, 5 failed), 6 of them novel
  // (the even ones); the template search's answers are never novel.
  CHECK(md.find(" | 60.0% |\n", all) != std::string::npos);
  CHECK(md.find(" | 0.0% |\n", all) != std::string::npos);
  CHECK_THAT(md, has_substring("| checkpoints/step-000120 (best) | 120 | 0.7 |"));
  // No sft agent in these results: no comparison table; with template as the reference, one.
  CHECK(md.find("Against ") == std::string::npos);
  options.reference = "template";
  (void)write_report(run.root(), options);
  const std::string against = sparserl::testing::read_bytes(run.report_path());
  CHECK_THAT(against, has_substring("Against template, matrix by matrix"));
  CHECK_THAT(against, has_substring("| grpo | 12 | "));

  const GnuplotProbe probe = find_gnuplot();
  if (probe.gnuplot) {
    for (const char* stem : {"reward_mean", "env_compile_rate", "env_correct_rate",
                             "env_speedup_geomean", "loss", "speedup_bars", "time_vs_nnz"}) {
      INFO(stem);
      const fs::path png = run.plots_dir() / (std::string(stem) + ".png");
      CHECK(is_png(png));
      CHECK(fs::file_size(png) > 5000);
      CHECK(fs::exists(run.plots_dir() / (std::string(stem) + ".gp")));
      CHECK(fs::exists(run.plots_dir() / (std::string(stem) + ".dat")));
    }
    CHECK(outcome.plots.size() == 7);
    CHECK_THAT(md, has_substring("![reward/mean](plots/reward_mean.png)"));
    CHECK_THAT(md, has_substring("![speedup over cuSPARSE per matrix](plots/speedup_bars.png)"));
    CHECK_THAT(md, has_substring("Plots drawn with gnuplot"));
  } else {
    CHECK_THAT(md, has_substring("Plots skipped: "));
  }
  if (probe.gnuplot) {
    CHECK(outcome.skipped == std::vector<std::string>{"curve never/logged: not in metrics.jsonl"});
  }
}

TEST_CASE("without gnuplot the report keeps its tables and says why plots are missing",
          "[experiments][report]") {
  const RunDirectory run = make_run(scratch_dir("report_no_gnuplot"));
  ReportOptions options = report_options(run.config());
  options.gnuplot = "/nonexistent/gnuplot";
  const ReportOutcome outcome = write_report(run.root(), options);
  const std::string md = sparserl::testing::read_bytes(run.report_path());
  CHECK(outcome.plots.empty());
  CHECK_THAT(md, has_substring("Plots skipped: '/nonexistent/gnuplot' not found (Debian / Ubuntu: "
                               "apt-get install gnuplot-nox"));
  CHECK_THAT(md, has_substring("`sparserl plot " + run.root().string() + "`"));
  CHECK_THAT(md, has_substring("| template | 12 |"));
  CHECK(md.find("![") == std::string::npos);
  CHECK_FALSE(fs::exists(run.plots_dir() / "reward_mean.png"));
}

TEST_CASE("a bare run directory and bad inputs", "[experiments][report]") {
  const fs::path out = scratch_dir("report_bare");
  Config config;
  config.set("experiment.output_dir", Value(out.string()));
  const RunDirectory run = RunDirectory::create(config);
  ReportOptions options;
  options.plots = false;
  write_report(run.root(), options);
  std::string md = sparserl::testing::read_bytes(run.report_path());
  CHECK_THAT(md, has_substring("**running**"));
  CHECK_THAT(md, has_substring("metrics.jsonl holds no records yet."));
  CHECK_THAT(md, has_substring("No results.csv in this run directory"));
  CHECK_THAT(md, has_substring("## Checkpoints\n\nNone saved."));
  CHECK_THAT(md, has_substring("Plots skipped (report.plots = false)"));

  std::ofstream(run.metrics_path()) << "{\"step\":1}\n{\"step\":\n{\"step\":3}\n";
  CHECK_THROWS_WITH(write_report(run.root(), options),
                    has_substring(run.metrics_path().string() + ":2:"));
  std::ofstream(run.metrics_path()) << "";
  std::ofstream(run.results_path()) << "matrix,agent,speedup\nm,a,fast\n";
  CHECK_THROWS_WITH(write_report(run.root(), options),
                    has_substring(run.results_path().string() + ":2: column 'speedup'"));
  CHECK_THROWS_WITH(write_report(out / "absent", options), has_substring("absent: not a folder"));
}

TEST_CASE("plot helpers reject what they cannot draw", "[experiments][report]") {
  const GnuplotProbe probe = find_gnuplot();
  const GnuplotProbe absent = find_gnuplot("/nonexistent/gnuplot");
  CHECK_FALSE(absent.gnuplot);
  CHECK_THAT(absent.reason, has_substring("'/nonexistent/gnuplot' not found"));
  CHECK(plot_file_stem("eval/pass@8") == "eval_pass_8");
  CHECK(plot_file_stem(".x") == "_.x");
  if (!probe.gnuplot) return;
  const fs::path dir = scratch_dir("report_plot_errors");
  LinePlot empty;
  empty.title = "nothing";
  empty.series.push_back({"s", {{1, std::nan("")}}});
  CHECK_THROWS_WITH(draw_line_plot(*probe.gnuplot, empty, dir / "nothing.png"),
                    has_substring("no finite values"));
  MatrixResult failed;
  failed.matrix = "m";
  failed.agent = "a";
  CHECK_THROWS_WITH(draw_speedup_bars(*probe.gnuplot, {failed}, 10, dir / "bars.png"),
                    has_substring("no correct kernel"));
  // More matrices than the limit: the slowest and the fastest halves are drawn.
  std::vector<MatrixResult> many;
  for (int i = 0; i < 50; ++i) {
    MatrixResult r;
    r.matrix = "m" + std::to_string(i);
    r.agent = "a";
    r.compiled = r.correct = true;
    r.speedup = 0.5 + i / 16.0;  // exact in binary, so the data file's text is predictable
    many.push_back(r);
  }
  CHECK(draw_speedup_bars(*probe.gnuplot, many, 10, dir / "bars.png") == 10);
  CHECK(is_png(dir / "bars.png"));
  const std::string data = sparserl::testing::read_bytes(dir / "bars.dat");
  CHECK_THAT(data, has_substring(" 0.5 "));         // the slowest
  CHECK_THAT(data, has_substring(" 3.5625 "));      // the fastest
  CHECK(data.find(" 1.75 ") == std::string::npos);  // a middle one left out
  // Eight agents (a bench of SFT, the template search and two seeds of three algorithms): eight
  // distinct bar colours.
  std::vector<MatrixResult> agents;
  for (int a = 0; a < 8; ++a) {
    MatrixResult r;
    r.matrix = "m";
    r.agent = "agent" + std::to_string(a);
    r.compiled = r.correct = true;
    r.speedup = 1.0 + a;
    agents.push_back(r);
  }
  CHECK(draw_speedup_bars(*probe.gnuplot, agents, 10, dir / "agents.png") == 1);
  const std::string script = sparserl::testing::read_bytes(dir / "agents.gp");
  std::set<std::string> colours;
  for (int a = 0; a < 8; ++a) {
    const std::size_t title = script.find("title 'agent" + std::to_string(a) + "'");
    REQUIRE(title != std::string::npos);
    const std::size_t hash = script.rfind('#', title);
    REQUIRE(hash != std::string::npos);
    colours.insert(script.substr(hash, 7));
  }
  CHECK(colours.size() == 8);
}

TEST_CASE("a gnuplot without pngcairo falls back to the png terminal", "[experiments][report]") {
  const GnuplotProbe real = find_gnuplot();
  if (!real.gnuplot) sparserl::testing::skip("gnuplot is not installed here");
  const fs::path dir = scratch_dir("report_png_fallback");
  // A gnuplot that refuses the cairo terminal, as a build without cairo would.
  const fs::path fake = dir / "gnuplot-no-cairo";
  std::ofstream(fake)
      << "#!/bin/sh\ncase \"$*\" in *pngcairo*) echo 'unknown terminal' >&2; exit 1;; esac\nexec '"
      << real.gnuplot->program << "' \"$@\"\n";
  fs::permissions(fake, fs::perms::owner_all);
  const GnuplotProbe probe = find_gnuplot(fake.string());
  REQUIRE(probe.gnuplot);
  CHECK(probe.gnuplot->terminal == "png");
  LinePlot plot;
  plot.title = "reward/mean";
  plot.series.push_back({"rl", {{1, 0.5}, {2, 0.75}, {3, 0.625}}});
  draw_line_plot(*probe.gnuplot, plot, dir / "curve.png");
  CHECK(is_png(dir / "curve.png"));
  CHECK_THAT(sparserl::testing::read_bytes(dir / "curve.gp"), has_substring("set terminal png noenhanced"));

  std::ofstream(fake) << "#!/bin/sh\nexit 1\n";
  CHECK_THAT(find_gnuplot(fake.string()).reason,
             has_substring("has neither the pngcairo nor the png terminal"));
}

TEST_CASE("sparserl plot re-renders a run directory", "[experiments][report]") {
  const RunDirectory run = make_run(scratch_dir("report_cli"));
  const std::string cli = std::string(SPARSERL_CLI_PATH) + " plot ";
  check_command(cli + "'" + run.root().string() + "' --no-plots", 0,
                {"wrote " + run.report_path().string()});
  CHECK_THAT(sparserl::testing::read_bytes(run.report_path()), has_substring("| grpo | 12 |"));

  check_command(cli + "'" + run.root().string() + "' --gnuplot /nonexistent/gnuplot --curve loss",
                0, {"skipped plots: '/nonexistent/gnuplot' not found"});
  CHECK_THAT(sparserl::testing::read_bytes(run.report_path()), has_substring("| `loss` | sft |"));

  check_command(cli + "--help", 0, {"usage: sparserl plot RUN_DIR"});
  check_command(cli + "/nonexistent/run", 1,
                {"sparserl plot: error: /nonexistent/run: not a folder"});
  check_command(cli + "'" + run.root().string() + "' --set report.nope=1", 1, {"report.nope"});
  CHECK(run_shell(cli).status == 2);
}
