// results.csv: rows round-trip (quoting, missing times), columns are found by name, bad fields are
// named by file, line and column, and the per-agent summary matches hand-computed figures.
#include "sparserl/experiments/results.hpp"

#include <cmath>
#include <fstream>
#include <optional>
#include <string>

#include "catch.hpp"
#include "test_support.hpp"

using namespace sparserl::experiments;
using namespace sparserl::testing;

namespace {

MatrixResult row(const char* matrix, std::int64_t nnz, const char* agent, bool compiled,
                 bool correct, double cand, double base) {
  MatrixResult r;
  r.matrix = matrix;
  r.nnz = nnz;
  r.agent = agent;
  r.compiled = compiled;
  r.correct = correct;
  r.candidate_us = cand;
  r.cusparse_us = base;
  r.speedup = correct ? base / cand : std::nan("");
  r.gflops = correct ? 2.0 * static_cast<double>(nnz) / (cand * 1e3) : std::nan("");
  r.bandwidth_fraction = correct ? 0.5 : std::nan("");
  return r;
}

}  // namespace

TEST_CASE("results.csv round-trips", "[experiments][results]") {
  const auto file = scratch_dir("results_round_trip") / "results.csv";
  std::vector<MatrixResult> rows = {
      row("suitesparse-v1/HB/west0067", 294, "template", true, true, 2.0, 4.0),
      row("file:/data/a,b \"odd\".mtx", 10, "grpo", true, false, std::nan(""), 3.0),
      row("gen-v1/banded?n=100", 298, "grpo", false, false, std::nan(""), std::nan("")),
  };
  rows[0].best_speedup = 2.5;
  rows[0].program = "3a07ff";
  write_results_csv(file, rows);
  std::ifstream in(file);
  std::string header, first;
  std::getline(in, header);
  std::getline(in, first);
  CHECK(header ==
        "matrix,nnz,agent,compiled,correct,candidate_us,cusparse_us,speedup,gflops,bandwidth_"
        "fraction,tested,samples,samples_compiled,samples_correct,best_speedup,program,regime,"
        "family,oracle_speedup,oracle_fraction,novel,corpus_distance,cusparse_path,cusparse_paths,"
        "search_seconds,design");
  CHECK(first ==
        "suitesparse-v1/HB/west0067,294,template,1,1,2.0,4.0,2.0,0.294,0.5,1,0,0,0,2.5,3a07ff,"
        ",,,,,,,,,");

  const auto back = read_results_csv(file);
  REQUIRE(back.size() == 3);
  CHECK(back[1].matrix == "file:/data/a,b \"odd\".mtx");
  CHECK(back[0].speedup == 2.0);
  CHECK(back[0].gflops == 0.294);
  CHECK_FALSE(back[1].correct);
  CHECK(back[1].compiled);
  CHECK(std::isnan(back[1].candidate_us));
  CHECK(back[1].cusparse_us == 3.0);
  CHECK(std::isnan(back[2].cusparse_us));
  CHECK(back[2].nnz == 298);
  CHECK(back[0].best_speedup == 2.5);
  CHECK(back[0].program == "3a07ff");
  CHECK(std::isnan(back[1].best_speedup));  // the default: no correct program
  CHECK(back[1].program.empty());
}

TEST_CASE("results.csv columns are found by name; bad fields are named", "[experiments][results]") {
  const auto file = scratch_dir("results_errors") / "results.csv";
  std::ofstream(file)
      << "agent,speedup,matrix,correct,pass@8\r\nsft,1.5,m1,true,1\r\n\r\nsft,,m2,0,0\r\n";
  const auto rows = read_results_csv(file);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].matrix == "m1");
  CHECK(rows[0].correct);
  CHECK(rows[0].speedup == 1.5);
  CHECK(std::isnan(rows[0].gflops));  // no such column
  CHECK(std::isnan(rows[1].speedup));

  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"", ":1: empty file"},
      {"nnz,agent\n1,a\n", ":1: the header has no 'matrix' column"},
      {"matrix,agent,nnz\nm,a,12x\n", ":2: column 'nnz': '12x' is not a number"},
      {"matrix,agent,nnz\nm,a,-3\n", ":2: column 'nnz': '-3' is not a count"},
      {"matrix,agent,correct\nm,a,yes\n", ":2: column 'correct': 'yes' is not a boolean"},
      {"matrix,agent\nm,a\nm,a,b\n", ":3: 3 fields, the header has 2"},
      {"matrix,agent\n\"m,a\n", ":2: unterminated quoted field"},
      {"matrix,agent\nm\"x,a\n", ":2: a quote inside an unquoted field"},
      {"matrix,agent\n,a\n", ":2: column 'matrix': empty"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    std::ofstream(file) << c.text;
    CHECK_THROWS_WITH(read_results_csv(file), has_substring(file.string() + c.message));
  }
  CHECK_THROWS_WITH(read_results_csv(file.parent_path() / "absent.csv"),
                    has_substring("absent.csv: cannot open"));
}

TEST_CASE("the per-agent summary", "[experiments][results]") {
  const std::vector<MatrixResult> rows = {
      row("m1", 100, "a", true, true, 1.0, 2.0),   // speedup 2
      row("m2", 100, "a", true, true, 4.0, 2.0),   // 0.5
      row("m3", 100, "a", true, true, 1.0, 8.0),   // 8
      row("m4", 100, "a", true, false, 1.0, 8.0),  // wrong answer
      row("m1", 100, "b", false, false, 1.0, 2.0),
  };
  const auto s = summarize_results(rows);
  REQUIRE(s.size() == 2);
  CHECK(s[0].agent == "a");
  CHECK(s[0].matrices == 4);
  CHECK(s[0].compile_rate == 1.0);
  CHECK(s[0].correct_rate == 0.75);
  CHECK(s[0].geomean_speedup == Approx(2.0));                           // (2 * 0.5 * 8)^(1/3)
  CHECK(s[0].geomean_speedup_fallback == Approx(std::pow(8.0, 0.25)));  // the failure counts as 1
  CHECK(s[0].faster_share == 0.5);
  CHECK(s[0].median_gflops == Approx(0.2));  // 0.2, 0.05, 0.2
  CHECK(s[0].mean_bandwidth_fraction == 0.5);
  CHECK(s[1].agent == "b");
  CHECK(s[1].compile_rate == 0.0);
  CHECK(std::isnan(s[1].geomean_speedup));
  CHECK(s[1].geomean_speedup_fallback == 1.0);
  CHECK(std::isnan(s[1].median_gflops));
}

TEST_CASE("pass@k and untested rows in the summary", "[experiments][results]") {
  const auto file = scratch_dir("results_pass_k") / "results.csv";
  std::vector<MatrixResult> rows = {
      row("m1", 10, "sft", true, true, 2.0, 4.0), row("m2", 10, "sft", true, false, 2.0, 4.0),
      row("m3", 10, "sft", false, false, 2.0, 4.0), row("m4", 10, "sft", true, false, 2.0, 4.0)};
  for (MatrixResult& r : rows) r.samples = 8;
  rows[1].samples_compiled = 5;
  rows[1].samples_correct = 2;  // the greedy answer failed, a sample did not
  rows[0].best_speedup = 4.0;   // a sample twice as fast as the answer
  rows[1].best_speedup = 3.0;   // a correct sample where the answer failed
  rows.push_back(row("m1", 10, "cpu", true, false, 2.0, 4.0));
  rows.back().tested = false;  // no GPU: correctness and speed unknown
  write_results_csv(file, rows);
  const auto back = read_results_csv(file);
  REQUIRE(back.size() == 5);
  CHECK(back[1].samples == 8);
  CHECK(back[1].samples_compiled == 5);
  CHECK(back[1].samples_correct == 2);
  CHECK_FALSE(back[4].tested);
  const auto s = summarize_results(back);
  REQUIRE(s.size() == 2);
  CHECK(s[0].tested);
  CHECK(s[0].k == 8);
  // The unbiased estimator over each row's 9 programs (answer + 8 samples): m1 holds 1 correct,
  // m2 2, m3 and m4 none. pass@1 = mean c/n; pass@8 = mean of 1 - C(9-c, 8) / C(9, 8).
  CHECK(s[0].correct_rate == 0.25);  // the answers alone
  CHECK(s[0].pass_at_1 == Approx((1.0 / 9 + 2.0 / 9) / 4));
  CHECK(s[0].pass_at_k == Approx((8.0 / 9 + 1.0) / 4));
  CHECK(row_pass_at_k(back[0], 8) == Approx(8.0 / 9));
  CHECK(row_pass_at_k(back[0], 100) == 1.0);  // k above n: all nine programs
  CHECK(row_pass_at_k(back[2], 1) == 0.0);
  CHECK(s[0].compile_rate == 0.75);
  CHECK(s[0].sample_compile_rate == Approx(5.0 / 32));
  CHECK(s[0].geomean_best_speedup == Approx(std::pow(4.0 * 3.0, 0.25)));  // m3, m4 count as 1
  CHECK_FALSE(s[1].tested);
  CHECK(s[1].compile_rate == 1.0);
  for (double v : {s[1].correct_rate, s[1].pass_at_1, s[1].pass_at_k, s[1].geomean_speedup,
                   s[1].geomean_speedup_fallback, s[1].faster_share, s[1].median_gflops,
                   s[1].mean_bandwidth_fraction, s[1].geomean_best_speedup}) {
    CHECK(std::isnan(v));  // n/a, never a made-up number
  }
  // An older file without the new columns reads as tested, without samples.
  std::ofstream(file) << "matrix,agent,correct\nm1,a,1\n";
  const auto old = read_results_csv(file);
  REQUIRE(old.size() == 1);
  CHECK(old[0].tested);
  CHECK(old[0].samples == 0);
  CHECK(std::isnan(summarize_results(old)[0].pass_at_k));
  CHECK(std::isnan(summarize_results(old)[0].sample_compile_rate));
  CHECK(std::isnan(old[0].best_speedup));
}

TEST_CASE("agents compared with a reference agent, matrix by matrix", "[experiments][results]") {
  std::vector<MatrixResult> rows = {
      row("m1", 10, "sft", true, true, 2.0, 4.0),    // 2
      row("m2", 10, "sft", true, true, 1.0, 3.0),    // 3
      row("m3", 10, "sft", true, false, 1.0, 3.0),   // failed: counts as 1
      row("m1", 10, "rl", true, true, 2.0, 4.0),     // the same program: 2
      row("m2", 10, "rl", true, true, 1.0, 4.0),     // another program: 4 (x 4/3)
      row("m3", 10, "rl", true, true, 2.0, 3.0),     // another, correct: 1.5 (x 1.5)
      row("m9", 10, "other", true, true, 1.0, 2.0),  // no matrix in common with sft
  };
  const char* programs[] = {"a", "b", "c", "a", "d", "e", "f"};
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i].program = programs[i];
  const auto p = compare_with_reference(rows, "sft");
  REQUIRE(p.size() == 1);
  CHECK(p[0].agent == "rl");
  CHECK(p[0].matrices == 3);
  CHECK(p[0].different_programs == 2);
  CHECK(p[0].faster == 2);
  CHECK(p[0].slower == 0);
  CHECK(p[0].speedup_ratio == Approx(std::cbrt(4.0 / 3.0 * 1.5)));
  CHECK(compare_with_reference(rows, "").empty());
  CHECK(compare_with_reference(rows, "grpo").empty());  // not an agent of these rows
  rows[4].tested = false;  // no GPU for one row: no ratio, no faster / slower
  const auto untested = compare_with_reference(rows, "sft");
  REQUIRE(untested.size() == 1);
  CHECK(std::isnan(untested[0].speedup_ratio));
  CHECK(untested[0].faster == 0);
  CHECK(untested[0].different_programs == 2);
}

TEST_CASE("the benchmark's columns: regime, family, oracle, novelty", "[experiments][results]") {
  const auto file = scratch_dir("results_bench_columns") / "results.csv";
  std::vector<MatrixResult> rows = {row("m1", 10, "sft", true, true, 2.0, 4.0),
                                    row("m2", 2'000'000, "sft", true, false, 2.0, 4.0)};
  rows[0].regime = "small";
  rows[0].family = "HB";
  rows[0].oracle_speedup = 2.5;
  rows[0].oracle_fraction = 0.8;
  rows[0].novel = true;
  rows[0].corpus_distance = 3;
  rows[0].cusparse_path = "BSR_ALG1(4x4)";
  rows[0].cusparse_paths = "CSR_ALG1=5.5 BSR_ALG1(4x4)=4 SELL_ALG1=wrong";
  rows[0].search_seconds = 12.5;
  rows[0].design = "csr_split lanes=1 split=2048";
  rows[1].oracle_speedup = 1.25;
  rows[1].oracle_fraction = 0;  // failed
  rows[1].corpus_distance = 0;
  write_results_csv(file, rows);
  const auto back = read_results_csv(file);
  REQUIRE(back.size() == 2);
  CHECK(back[0].regime == "small");
  CHECK(back[0].family == "HB");
  CHECK(back[0].oracle_speedup == 2.5);
  CHECK(back[0].oracle_fraction == 0.8);
  CHECK(back[0].novel == std::optional<bool>(true));
  CHECK(back[0].corpus_distance == 3);
  CHECK(back[0].cusparse_path == "BSR_ALG1(4x4)");
  CHECK(back[0].cusparse_paths == "CSR_ALG1=5.5 BSR_ALG1(4x4)=4 SELL_ALG1=wrong");
  CHECK(back[0].search_seconds == 12.5);
  CHECK(std::isnan(back[1].search_seconds));  // not the template agent
  CHECK(back[0].design == "csr_split lanes=1 split=2048");
  CHECK(back[1].design.empty());
  CHECK(back[1].cusparse_path.empty());
  CHECK(back[1].regime.empty());
  CHECK(regime_name(back[1]) == "large");  // from its nonzeros
  CHECK(back[1].oracle_fraction == 0);
  CHECK_FALSE(back[1].novel.has_value());  // an incorrect answer: empty
  // The table form keeps the header and each row's line (for errors that name them).
  const ResultsTable table = read_results_table(file);
  CHECK(table.columns == results_columns());
  CHECK(table.has_column("oracle_fraction"));
  CHECK(table.lines == std::vector<std::size_t>{2, 3});
  // A file of an older build: no such columns, no tags, no oracle, no novelty.
  std::ofstream(file) << "matrix,nnz,agent,correct,speedup\nm,300000,a,1,2\n";
  const auto old = read_results_csv(file);
  REQUIRE(old.size() == 1);
  CHECK(old[0].regime.empty());
  CHECK(regime_name(old[0]) == "medium");
  CHECK(std::isnan(old[0].oracle_speedup));
  CHECK(std::isnan(old[0].oracle_fraction));
  CHECK_FALSE(old[0].novel.has_value());
  CHECK(std::isnan(old[0].corpus_distance));
  std::ofstream(file) << "matrix,agent,regime\nm,a,huge\n";
  CHECK_THROWS_WITH(read_results_csv(file),
                    has_substring(":2: column 'regime': 'huge' is not small, medium or large"));
  std::ofstream(file) << "matrix,agent,novel\nm,a,maybe\n";
  CHECK_THROWS_WITH(read_results_csv(file),
                    has_substring(":2: column 'novel': 'maybe' is not a boolean"));
}

TEST_CASE("summaries per regime: all, then large, medium, small where they have matrices",
          "[experiments][results]") {
  std::vector<MatrixResult> rows;
  // Agent a: correct everywhere (speedups 2, 4, 1); b: fails on the large matrix.
  const struct {
    const char* matrix;
    std::int64_t nnz;
    const char* regime;
  } matrices[] = {{"big", 5'000'000, "large"}, {"mid", 10, "medium"}, {"tiny", 10, ""}};
  const double speed[] = {2.0, 4.0, 1.0};
  for (const char* agent : {"a", "b"}) {
    for (int i = 0; i < 3; ++i) {
      const bool ok = !(std::string(agent) == "b" && i == 0);
      MatrixResult r = row(matrices[i].matrix, matrices[i].nnz, agent, true, ok,
                           ok ? 4.0 / speed[i] : std::nan(""), 4.0);
      r.regime = matrices[i].regime;
      r.oracle_speedup = 4.0;
      r.oracle_fraction = ok ? speed[i] / 4.0 : 0.0;
      if (ok) r.novel = i == 1;
      rows.push_back(r);
    }
  }
  const std::vector<RegimeSummary> regimes = summarize_by_regime(rows);
  REQUIRE(regimes.size() == 4);
  CHECK(regimes[0].regime == "all");
  CHECK(regimes[1].regime == "large");
  CHECK(regimes[2].regime == "medium");
  CHECK(regimes[3].regime == "small");  // "tiny" has no tag: by its nonzeros
  REQUIRE(regimes[1].agents.size() == 2);
  CHECK(regimes[1].agents[0].matrices == 1);
  CHECK(regimes[1].agents[0].geomean_speedup == Approx(2.0));
  CHECK(regimes[1].agents[1].pass_at_1 == 0.0);
  CHECK(std::isnan(regimes[1].agents[1].geomean_oracle_fraction));  // no correct answer
  CHECK(std::isnan(regimes[1].agents[1].novel_share));
  CHECK(regimes[0].agents[0].geomean_oracle_fraction == Approx(std::cbrt(0.5 * 1.0 * 0.25)));
  CHECK(regimes[0].agents[0].novel_share == Approx(1.0 / 3));
  CHECK(regimes[0].agents[1].novel_share == Approx(0.5));
  CHECK(rows_of_regime(rows, "medium").size() == 2);
  CHECK(summarize_by_regime({row("x", 10, "a", true, true, 1.0, 1.0)}).size() == 2);  // all, small

  const auto file = scratch_dir("summary_regimes") / "summary.csv";
  write_summary_csv(file, rows, "a");
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  REQUIRE(lines.size() == 1 + 4 * 2);
  CHECK(lines[0].rfind("regime,agent,matrices,tested,compile_rate,pass@1,", 0) == 0);
  CHECK(lines[0].find(",speedup_vs_reference,answers_differing,geomean_oracle_fraction,"
                      "novel_share") != std::string::npos);
  CHECK(lines[1].rfind("all,a,3,1,", 0) == 0);
  CHECK(lines[3].rfind("large,a,1,1,1.0,1.0,", 0) == 0);
  CHECK(lines[4].rfind("large,b,1,1,1.0,0.0,", 0) == 0);
  // b against a on the large matrix: b failed (1) where a reached 2: ratio 0.5.
  CHECK(lines[4].ends_with(",0.5,0,,"));
  CHECK(lines[7].rfind("small,a,1,", 0) == 0);
}
