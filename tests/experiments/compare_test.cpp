// `sparserl compare`: synthetic bench run directories written here (two agents x three seeds with
// known speedups) against the figures worked out by hand; the label rule for one agent name in two
// experiments; the note on matrices some run lacks; n/a without a GPU; seeds named in agent names;
// the interval plot; and every bad input named by its run directory and file.
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "sparserl/experiments/agent_comparison.hpp"
#include "sparserl/experiments/plots.hpp"
#include "sparserl/experiments/run_info.hpp"
#include "command_checks.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace sparserl::experiments;
using namespace sparserl::testing;

namespace {

bool is_png(const fs::path& file) {
  return sparserl::testing::read_bytes(file).substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8);
}

// One answer: correct with `speedup` (> 0), or a compile error (0).
MatrixResult answer(const std::string& matrix, std::int64_t nnz, const std::string& agent,
                    double speedup) {
  MatrixResult r;
  r.matrix = matrix;
  r.nnz = nnz;
  r.agent = agent;
  r.compiled = speedup > 0;
  r.correct = speedup > 0;
  r.cusparse_us = 10;
  r.candidate_us = speedup > 0 ? 10 / speedup : std::nan("");
  r.speedup = speedup > 0 ? speedup : std::nan("");
  return r;
}

// A bench run directory: results.csv and run.json (experiment, seed, commit, device, and a split
// object when `split` is given).
void write_run(const fs::path& dir, const std::string& experiment, std::uint64_t seed,
               const std::vector<MatrixResult>& rows, const std::string& split = "",
               const std::string& device = "NVIDIA H100 80GB HBM3") {
  fs::create_directories(dir);
  write_results_csv(dir / "results.csv", rows);
  RunInfo info;
  info.run_id = dir.filename().string();
  info.experiment = experiment;
  info.seeds = {{"experiment", seed}};
  info.git.commit = "0123456789abcdef0123456789abcdef01234567";
  info.git.dirty = false;
  info.gpu.name = device;
  info.status = RunStatus::completed;
  Json json = info.to_json();
  if (!split.empty()) {
    Json s = Json::object();
    s["name"] = split;
    s["digest"] = std::string("feedface") + std::string(56, '0');
    json["split"] = s;
  }
  write_file_atomically(dir / "run.json", dump_json(json, 2));
}

// The matrices: m1, m2 small, m3 medium, m4 large (by nnz).
const std::vector<std::pair<std::string, std::int64_t>> kMatrices = {
    {"gen-v1/m1", 1000}, {"gen-v1/m2", 2000}, {"gen-v1/m3", 500000}, {"gen-v1/m4", 2000000}};

// grpo's speedups per seed (0: a compile error, counting 1.0); sft answers 2.0 everywhere.
const double kGrpo[3][4] = {{0, 3, 4, 6}, {2, 3, 4, 6}, {2, 3, 5, 6}};

// Three seeds of a bench of sft and grpo, with 4 samples (pass@4), the oracle fraction and novelty.
std::vector<fs::path> write_seeds(const fs::path& root) {
  std::vector<fs::path> dirs;
  for (int seed = 0; seed < 3; ++seed) {
    std::vector<MatrixResult> rows;
    for (int m = 0; m < 4; ++m) {
      const auto& [matrix, nnz] = kMatrices[m];
      MatrixResult sft = answer(matrix, nnz, "sft", 2.0);
      sft.samples = 4;
      sft.samples_compiled = 4;
      sft.samples_correct = 2;  // n = 5, c = 3: pass@1 = 0.6, pass@4 = 1
      sft.oracle_fraction = 0.5;
      rows.push_back(sft);
      MatrixResult grpo = answer(matrix, nnz, "grpo", kGrpo[seed][m]);
      grpo.samples = 4;
      grpo.samples_compiled = grpo.correct ? 4 : 0;
      grpo.samples_correct = grpo.correct ? 4 : 0;  // c = 5 or 0
      if (grpo.correct) grpo.oracle_fraction = 0.9;
      grpo.novel = m == 1;  // novel (and correct) on m2 only
      rows.push_back(grpo);
    }
    const fs::path dir = root / ("bench__" + std::to_string(seed));
    write_run(dir, "bench", static_cast<std::uint64_t>(seed), rows, seed == 0 ? "bench-v2" : "");
    dirs.push_back(dir);
  }
  return dirs;
}

// compare.csv as (agent, regime, metric) -> its fields.
std::map<std::string, std::vector<std::string>> read_csv(const fs::path& file) {
  std::map<std::string, std::vector<std::string>> out;
  std::istringstream in(sparserl::testing::read_bytes(file));
  std::string line;
  std::getline(in, line);
  REQUIRE(line == "agent,regime,metric,point,low,high,runs,matrices,versus,paired");
  while (std::getline(in, line)) {
    std::vector<std::string> f(1);
    for (char c : line) {
      if (c == ',')
        f.emplace_back();
      else
        f.back() += c;
    }
    REQUIRE(f.size() == 10);
    out[f[0] + " " + f[1] + " " + f[2]] = f;
  }
  return out;
}

std::string cli() { return std::string(SPARSERL_CLI_PATH) + " compare "; }

std::string quoted(const std::vector<fs::path>& dirs) {
  std::string s;
  for (const fs::path& d : dirs) s += "'" + d.string() + "' ";
  return s;
}

}  // namespace

TEST_CASE("compare: the share of answers slower than half cuSPARSE's time", "[compare]") {
  // Seed 0 answers 0.001x (correct but catastrophic), fails, 0.49x and 0.5x; seed 1 answers 1x
  // everywhere: 2 of 8 answers are slow (a failure falls back to cuSPARSE, 0.5x is not below).
  const fs::path root = scratch_dir("compare_slow");
  const double speedups[2][4] = {{0.001, 0, 0.49, 0.5}, {1, 1, 1, 1}};
  std::vector<fs::path> dirs;
  for (int seed = 0; seed < 2; ++seed) {
    std::vector<MatrixResult> rows;
    for (int m = 0; m < 4; ++m) {
      rows.push_back(answer(kMatrices[m].first, kMatrices[m].second, "sft", 2.0));
      rows.push_back(answer(kMatrices[m].first, kMatrices[m].second, "ppo", speedups[seed][m]));
    }
    dirs.push_back(root / ("bench__" + std::to_string(seed)));
    write_run(dirs.back(), "bench", static_cast<std::uint64_t>(seed), rows);
  }
  CompareOptions options;
  options.bootstrap.replicates = 200;
  const Comparison c = compare_agents(dirs, options);
  const RegimeSection& all = c.sections.front();
  REQUIRE(all.agents.size() == 2);
  const auto slow = [](const AgentEstimates& e) {
    for (const MetricEstimate& m : e.metrics)
      if (m.metric == "slow_share") return m.value;
    FAIL("no slow_share");
    return Interval{};
  };
  CHECK(slow(all.agents[0]).point == 0.0);  // sft
  CHECK(slow(all.agents[1]).point == Approx(2.0 / 8));
  CHECK(slow(all.agents[1]).low <= 0.25);
  CHECK(slow(all.agents[1]).high >= 0.25);
  const std::string md = c.to_markdown("");
  CHECK_THAT(md, has_substring("| geomean speedup (failures as 1) | answers < 0.5x |"));
  CHECK_THAT(md, has_substring("| ppo | 2 |"));
  CHECK_THAT(md, has_substring("25.0% ["));
  CHECK_THAT(md, has_substring("**Answers < 0.5x**"));
}

TEST_CASE("compare: two agents x three seeds against hand-computed figures", "[compare]") {
  const fs::path root = scratch_dir("compare_seeds");
  const std::vector<fs::path> dirs = write_seeds(root);
  CompareOptions options;
  options.bootstrap.replicates = 500;
  const Comparison c = compare_agents(dirs, options);
  REQUIRE(c.agents.size() == 2);
  CHECK(c.agents[0].label == "sft");
  CHECK(c.agents[1].label == "grpo");
  CHECK(c.agents[1].runs.size() == 3);
  CHECK(c.reference == "sft");
  CHECK(c.matrices.size() == 4);
  CHECK(c.dropped.empty());
  CHECK(c.k == 4);  // the samples of a row: pass@4 over its n = 5 programs
  CHECK(c.oracle_fraction);
  CHECK(c.novel);
  REQUIRE(c.sections.size() == 4);  // all, large, medium, small
  CHECK(c.sections[1].regime == RegimeScope::large);
  CHECK(c.sections[1].matrices == 1);

  int status = 0;
  const fs::path out = root / "out";
  const std::string text = run_command(cli() + quoted(dirs) + "--reps 500 --out '" + out.string() +
                                           "' --gnuplot /nonexistent/gnuplot",
                                       status);
  INFO(text);
  REQUIRE(WEXITSTATUS(status) == 0);
  CHECK_THAT(text, has_substring("compared 2 agents over 3 run directories on 4 matrices, "
                                 "reference sft"));
  CHECK_THAT(text, has_substring("skipped plot intervals.png: '/nonexistent/gnuplot' not found"));
  const auto csv = read_csv(out / "compare.csv");
  auto point = [&](const std::string& key) {
    INFO(key);
    REQUIRE(csv.count(key) == 1);
    const auto& f = csv.at(key);
    const double p = std::stod(f[3]), lo = std::stod(f[4]), hi = std::stod(f[5]);
    CHECK(lo <= p);
    CHECK(p <= hi);
    return p;
  };
  // grpo's 12 speedups 1 (the failure), 2, 2, 3, 3, 3, 4, 4, 5, 6, 6, 6: the IQM drops three
  // from each end and averages 3, 3, 3, 4, 4, 5.
  CHECK(point("grpo all speedup_iqm") == Approx(22.0 / 6));
  CHECK(point("grpo all speedup_geomean") ==
        Approx(std::pow(1.0 * 2 * 2 * 3 * 3 * 3 * 4 * 4 * 5 * 6 * 6 * 6, 1.0 / 12)));
  CHECK(point("sft all speedup_iqm") == 2.0);
  CHECK(csv.at("sft all speedup_iqm")[4] == "2.0");  // no spread over seeds: a point interval
  // P(grpo > sft): m1 {1, 2, 2} against {2, 2, 2}: 6 ties of 9 -> 1/3; m2..m4 always: 1.
  CHECK(point("grpo all probability_of_improvement") == Approx((1.0 / 3 + 3) / 4));
  CHECK(csv.at("grpo all probability_of_improvement")[8] == "sft");
  CHECK(csv.at("grpo all probability_of_improvement")[9] == "yes");  // paired: same directories
  CHECK(csv.count("sft all probability_of_improvement") == 0);       // the reference
  // Regimes: large = m4 (6, 6, 6), medium = m3 (4, 4, 5), small = m1, m2 (1, 2, 2, 3, 3, 3: drop
  // one from each end).
  CHECK(point("grpo large speedup_iqm") == 6.0);
  CHECK(point("grpo large probability_of_improvement") == 1.0);
  CHECK(point("grpo medium speedup_iqm") == Approx(13.0 / 3));
  CHECK(point("grpo small speedup_iqm") == 2.5);
  CHECK(csv.at("grpo small speedup_iqm")[7] == "2");  // matrices
  CHECK(csv.at("grpo small speedup_iqm")[6] == "3");  // runs
  // The oracle fraction: the failure counts 0, the other 11 are 0.9.
  CHECK(point("grpo all oracle_fraction_iqm") == Approx(0.9));
  CHECK(point("sft all oracle_fraction_iqm") == 0.5);
  // pass@k with n = 5 programs (answer + 4 samples), k = 4: sft c = 3 everywhere (1 - C(2, 4) /
  // C(5, 4) = 1); grpo c = 5 on 11 rows, 0 on the failure.
  CHECK(point("sft all pass@1") == Approx(0.6));
  CHECK(point("sft all pass@4") == 1.0);
  CHECK(point("grpo all pass@1") == Approx(11.0 / 12));
  CHECK(point("grpo all pass@4") == Approx(11.0 / 12));
  CHECK(point("grpo all compile_rate") == Approx(11.0 / 12));
  CHECK(point("grpo all correct_rate") == Approx(11.0 / 12));  // the answers alone
  CHECK(point("sft all correct_rate") == 1.0);
  CHECK(point("grpo all novel_correct_share") == Approx(3.0 / 12));
  CHECK(csv.at("sft all novel_correct_share")[3].empty());  // no novel value: n/a

  const std::string md = sparserl::testing::read_bytes(out / "compare.md");
  CHECK_THAT(md, has_substring("2 agents, 3 run directories, 4 matrices answered in every run; "
                               "reference agent **sft**"));
  CHECK_THAT(md, has_substring("## Headline: Large matrices (>= 1,000,000 nonzeros)"));
  CHECK_THAT(md, has_substring("| grpo | 3 | 6 [6, 6] | 1 [1, 1] | yes |"));
  CHECK_THAT(md, has_substring("| grpo | 3 | 3.667 ["));
  CHECK_THAT(md, has_substring("| sft | 3 | 2 [2, 2] | 0.5 [0.5, 0.5] | 2 [2, 2] | 0.0% [0.0%, "
                               "0.0%] | (reference) | |"));
  CHECK(point("grpo all slow_share") == 0.0);  // the failure counts 1.0: no slow answer
  CHECK_THAT(md, has_substring("| agent | runs | pass@1 | pass@4 | compile rate | correct answers "
                               "| novel correct answers |"));
  CHECK_THAT(md, has_substring("| sft | 3 | 60.0% [60.0%, 60.0%] | 100.0% [100.0%, 100.0%] | "
                               "100.0% [100.0%, 100.0%] | 100.0% [100.0%, 100.0%] | n/a |"));
  CHECK_THAT(md, has_substring("(intervals.png not drawn: '/nonexistent/gnuplot' not found"));
  CHECK_THAT(md, has_substring("500 replicates"));
  CHECK_THAT(md, has_substring("counts 1.0: the user falls back to cuSPARSE"));
  CHECK_THAT(md, has_substring("| bench | 0 | `0123456789ab` | NVIDIA H100 80GB HBM3 | bench-v2 "
                               "feedface0000 | sft, grpo | 8 |"));
  CHECK_THAT(md, has_substring("| bench | 1 | `0123456789ab` | NVIDIA H100 80GB HBM3 | not "
                               "recorded | sft, grpo | 8 |"));

  // The same seed gives the same file; --regime keeps one section.
  const fs::path again = root / "again";
  run_command(cli() + quoted(dirs) + "--reps 500 --no-plots --quiet --out '" + again.string() + "'",
              status);
  CHECK(sparserl::testing::read_bytes(again / "compare.csv") == sparserl::testing::read_bytes(out / "compare.csv"));
  const fs::path large = root / "large";
  const std::string large_text = run_command(
      cli() + quoted(dirs) + "--regime large --reps 200 --no-plots --out '" + large.string() + "'",
      status);
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(read_csv(large / "compare.csv").count("grpo all speedup_iqm") == 0);
  CHECK(read_csv(large / "compare.csv").count("grpo large speedup_iqm") == 1);
}

TEST_CASE("compare: one agent name in two experiments is labelled EXPERIMENT/AGENT", "[compare]") {
  const fs::path root = scratch_dir("compare_labels");
  std::vector<MatrixResult> a = {answer("m1", 10, "sft", 2), answer("m1", 10, "grpo", 3)};
  std::vector<MatrixResult> b = {answer("m1", 10, "sft", 1.5)};
  write_run(root / "a", "exp-a", 1, a);
  write_run(root / "b", "exp-b", 1, b);
  const Comparison c = compare_agents({root / "a", root / "b"}, {});
  REQUIRE(c.agents.size() == 3);
  CHECK(c.agents[0].label == "exp-a/sft");
  CHECK(c.agents[1].label == "grpo");  // only one experiment has it: its plain name
  CHECK(c.agents[2].label == "exp-b/sft");
  CHECK(c.reference == "exp-a/sft");
  CompareOptions o;
  o.reference = "exp-b/sft";
  CHECK(compare_agents({root / "a", root / "b"}, o).reference == "exp-b/sft");
  o.reference = "grpo";
  const Comparison g = compare_agents({root / "a", root / "b"}, o);
  CHECK(g.reference == "grpo");
  // exp-b/sft ran in another directory: not paired with grpo.
  CHECK_FALSE(g.sections[0].agents[2].paired);
  CHECK(g.sections[0].agents[0].paired);

  int status = 0;
  const std::string out =
      run_command(cli() + "'" + (root / "a").string() + "' '" + (root / "b").string() +
                      "' --reference sft --out '" + (root / "out").string() + "'",
                  status);
  CHECK(WEXITSTATUS(status) == 1);
  CHECK_THAT(out, has_substring("--reference 'sft' is ambiguous: runs of several experiments hold "
                                "an agent of that name (exp-a/sft, exp-b/sft)"));
}

TEST_CASE("compare: matrices some run lacks are left out, and said so", "[compare]") {
  const fs::path root = scratch_dir("compare_dropped");
  write_run(root / "s1", "bench", 1,
            {answer("m1", 10, "sft", 2), answer("m2", 10, "sft", 2), answer("m3", 10, "sft", 2)});
  write_run(root / "s2", "bench", 2, {answer("m1", 10, "sft", 3), answer("m3", 10, "sft", 1)});
  const Comparison c = compare_agents({root / "s1", root / "s2"}, {});
  CHECK(c.matrices == std::vector<std::string>{"m1", "m3"});
  CHECK(c.dropped == std::vector<std::string>{"m2"});
  int status = 0;
  run_command(cli() + "'" + (root / "s1").string() + "' '" + (root / "s2").string() +
                  "' --no-plots --quiet --out '" + (root / "out").string() + "'",
              status);
  CHECK(WEXITSTATUS(status) == 0);
  const std::string md = sparserl::testing::read_bytes(root / "out" / "compare.md");
  CHECK_THAT(md,
             has_substring("2 matrices answered in every run (1 others left out: see the notes)"));
  CHECK_THAT(md, has_substring("1 of 3 matrices are not answered in every run of every agent and "
                               "were left out: m2."));
  CHECK_THAT(md, has_substring("None of the 2 compared matrices is large"));
}

TEST_CASE("compare: without a GPU everything but the compile rate is n/a", "[compare]") {
  const fs::path root = scratch_dir("compare_no_gpu");
  std::vector<MatrixResult> rows = {answer("m1", 10, "sft", 0), answer("m2", 10, "sft", 0),
                                    answer("m1", 10, "grpo", 0), answer("m2", 10, "grpo", 0)};
  for (MatrixResult& r : rows) {
    r.tested = false;
    r.compiled = r.matrix == "m1";
  }
  write_run(root / "cpu", "bench", 0, rows, "", "none");
  const fs::path out = root / "out";
  int status = 0;
  const std::string text = check_command(
      cli() + "'" + (root / "cpu").string() + "' --reps 100 --out '" + out.string() + "'", 0,
      {"skipped plot intervals.png: no agent has a timed speedup", "grpo  n/a   n/a"});
  const auto csv = read_csv(out / "compare.csv");
  for (const char* metric : {"speedup_iqm", "speedup_geomean", "slow_share", "pass@1",
                             "correct_rate", "probability_of_improvement"}) {
    INFO(metric);
    CHECK(csv.at(std::string("grpo all ") + metric)[3].empty());  // n/a, never 0
  }
  CHECK(csv.at("grpo all compile_rate")[3] == "0.5");
  const std::string md = sparserl::testing::read_bytes(out / "compare.md");
  CHECK_THAT(md, has_substring("| grpo | 1 | n/a | n/a | n/a | n/a | yes |"));
  CHECK_THAT(md, has_substring("| grpo | 1 | n/a | 50.0% [50.0%, 50.0%] |"));
  CHECK_THAT(md, has_substring("sft, grpo: rows not tested on a GPU (tested = 0), so everything "
                               "but the compile rate is n/a."));
  CHECK_FALSE(fs::exists(out / "intervals.png"));
}

TEST_CASE("compare: seeds benched side by side, named NAME-sN", "[compare]") {
  const fs::path root = scratch_dir("compare_seed_names");
  std::vector<MatrixResult> rows;
  for (const char* m : {"m1", "m2"}) {
    rows.push_back(answer(m, 10, "sft", 2));
    rows.push_back(answer(m, 10, "grpo-s1", 3));
    rows.push_back(answer(m, 10, "grpo-s2", 1));
    rows.push_back(answer(m, 10, "grpo-s3", 3));
  }
  write_run(root / "bench", "bench", 0, rows);
  CompareOptions o;
  o.seeds_in_names = true;
  o.bootstrap.replicates = 200;
  const Comparison c = compare_agents({root / "bench"}, o);
  REQUIRE(c.agents.size() == 2);
  CHECK(c.agents[1].label == "grpo");
  REQUIRE(c.agents[1].runs.size() == 3);
  CHECK(c.agents[1].runs[1].agent == "grpo-s2");
  const AgentEstimates& grpo = c.sections[0].agents[1];
  CHECK(grpo.runs == 3);
  CHECK(grpo.improvement->value.point == Approx(2.0 / 3));  // 3 > 2, 1 < 2, 3 > 2 on each matrix
  CHECK_FALSE(grpo.paired);                                 // three runs against one
  CHECK(grpo.same_run_dirs);
  CHECK(grpo.pairing() == "same run dirs");
  CHECK(agent_of_seed_name("grpo-s12") == "grpo");
  CHECK(agent_of_seed_name("ppo-c-s1") == "ppo-c");
  CHECK(agent_of_seed_name("grpo-s") == "grpo-s");
  CHECK(agent_of_seed_name("tests") == "tests");
  CHECK(agent_of_seed_name("-s1") == "-s1");
  const std::string md = c.to_markdown("");
  CHECK_THAT(md, has_substring("| sft, grpo (grpo-s1, grpo-s2, grpo-s3) | 8 |"));
  // Without the option they are three agents of one run each.
  CHECK(compare_agents({root / "bench"}, {}).agents.size() == 4);
}

TEST_CASE("compare: the interval plot", "[compare]") {
  const GnuplotProbe probe = find_gnuplot();
  if (!probe.gnuplot) {
    WARN("gnuplot absent: " << probe.reason);
    return;
  }
  const fs::path root = scratch_dir("compare_plot");
  IntervalPlot plot;
  plot.title = "IQM speedup";
  plot.xlabel = "speedup";
  plot.log_x = true;
  plot.reference_x = 1.0;
  plot.panels.push_back({"all (4 matrices)", {{"sft", 2, 1.8, 2.2}, {"grpo", 3.6, 3.1, 4.2}}});
  plot.panels.push_back({"large (1 matrix)", {{"sft", NAN, NAN, NAN}, {"grpo", NAN, NAN, NAN}}});
  draw_interval_plot(*probe.gnuplot, plot, root / "intervals.png");
  CHECK(is_png(root / "intervals.png"));
  CHECK_THAT(sparserl::testing::read_bytes(root / "intervals.gp"), has_substring("'grpo (n/a)' 1"));
  plot.panels.erase(plot.panels.begin());
  CHECK_THROWS_WITH(draw_interval_plot(*probe.gnuplot, plot, root / "none.png"),
                    has_substring("has no interval to draw"));

  const std::vector<fs::path> dirs = write_seeds(root / "runs");
  int status = 0;
  const std::string text =
      check_command(cli() + quoted(dirs) + "--reps 100 --out '" + (root / "out").string() + "'", 0,
                    {"drew  " + (root / "out" / "intervals.png").string()});
  CHECK(is_png(root / "out" / "intervals.png"));
  CHECK_THAT(sparserl::testing::read_bytes(root / "out" / "compare.md"), has_substring("](intervals.png)"));
}

TEST_CASE("compare: bad input names the run directory and the file", "[compare]") {
  const fs::path root = scratch_dir("compare_errors");
  write_run(root / "good", "bench", 0, {answer("m1", 10, "sft", 2), answer("m1", 10, "grpo", 3)});
  fs::create_directories(root / "empty");
  const std::string good = "'" + (root / "good").string() + "' ";
  auto fails = [&](const std::string& args, int code, const std::string& message,
                   const std::string& also = "") {
    int status = 0;
    const std::string out =
        run_command(cli() + args + " --no-plots --out '" + (root / "out").string() + "'", status);
    INFO(args << "\n" << out);
    CHECK(WEXITSTATUS(status) == code);
    CHECK_THAT(out, has_substring(message));
    CHECK_THAT(out, has_substring(also));
  };
  // Bad arguments are CLI11's messages (the option, the value and what is accepted).
  fails("", 2, "RUN_DIR is required");
  fails(good + "--regime huge", 2, "--regime: huge not in {all,small,medium,large}");
  fails(good + "--reps 0", 2, "--reps: Value 0 not in range", "10000000");
  fails(good + "'" + (root / "absent").string() + "'", 1,
        (root / "absent").string() + ": not a run directory (no such folder)");
  fails(good + "'" + (root / "empty").string() + "'", 1,
        (root / "empty").string() + ": no results.csv");
  fails(good + "--reference nobody", 1,
        "--reference 'nobody': no such agent in the runs read (agents: sft, grpo)");

  fs::create_directories(root / "malformed");
  std::ofstream(root / "malformed" / "results.csv") << "matrix,agent,speedup\nm1,sft,2\nm1,grpo\n";
  fails(good + "'" + (root / "malformed").string() + "'", 1,
        (root / "malformed" / "results.csv").string() + ":3: 2 fields, the header has 3");
  std::ofstream(root / "malformed" / "results.csv") << "matrix,agent\nm1,sft\nm1,sft\n";
  fails("'" + (root / "malformed").string() + "'", 1,
        (root / "malformed" / "results.csv").string() +
            ":3: a second row for matrix 'm1' and agent 'sft' (the first is on line 2)");
  std::ofstream(root / "malformed" / "results.csv")
      << "matrix,agent,samples,samples_correct\nm1,sft,2,3\n";
  fails("'" + (root / "malformed").string() + "'", 1, ":2: samples_correct (3)");
  std::ofstream(root / "malformed" / "results.csv") << "matrix,agent\nm1,sft\n";
  std::ofstream(root / "malformed" / "run.json") << "{\"format\": \"sparserl-run\",";
  fails("'" + (root / "malformed").string() + "'", 1,
        (root / "malformed" / "run.json").string() + ":1:");

  write_run(root / "other", "bench", 1, {answer("m9", 10, "sft", 2), answer("m9", 10, "grpo", 3)});
  fails(good + "'" + (root / "other").string() + "'", 1,
        "no matrix is answered by every agent in every run directory");
  CHECK_THROWS_WITH(compare_agents({}, {}), has_substring("no run directory to compare"));

  int status = 0;
  const std::string help =
      check_command(cli() + "--help", 0, {"usage: sparserl compare RUN_DIR... [--out DIR]"});
}
