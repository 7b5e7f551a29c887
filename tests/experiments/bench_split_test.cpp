// `sparserl bench` as a user runs it on a tiny version-2 split (bench_split_fixture.hpp), with the
// template search and random tokens, compile stage only (no GPU here): the absent catalogue matrix
// skipped with the fetch command, rows tagged by regime and family, the oracle and novelty columns
// (n/a or empty where the GPU stage is missing, a corpus distance wherever there is a program),
// summary.csv per regime, run.json's split, and the report's large-first tables.
#include <sys/wait.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench_split_fixture.hpp"
#include "catch.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/experiments/results.hpp"
#include "sparserl/experiments/run_info.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace sparserl::experiments;
using sparserl::testing::has_substring;

namespace {

fs::path only_run(const fs::path& runs) {
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(runs)) found.push_back(e.path());
  REQUIRE(found.size() == 1);
  return found.front();
}

}  // namespace

TEST_CASE("sparserl bench on a version-2 split: regimes, oracle and novelty columns",
          "[experiments][bench][bench_v2]") {
  const fs::path shared = sparserl::testing::shared_matrices_dir();
  const auto f = sparserl::testing::write_bench_split(sparserl::testing::scratch_dir("bench_v2"));
  const fs::path config = f.root / "bench.toml";
  std::ofstream(config) << sparserl::testing::bench_split_config(
      f, shared.string(),
      "[bench]\nagents = [\"template\", \"random\"]\nsamples = 2\ntemplate_budget = 1\n"
      "[env]\nmax_tokens = 300\n");
  int status = 0;
  const std::string output =
      sparserl::testing::run_command(std::string(SPARSERL_CLI_PATH) + " bench " + config.string() +
                                         " --runs-dir " + (f.root / "runs").string(),
                                     status);
  INFO(output);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  CHECK_THAT(output, has_substring("1 of the 6 selected matrices are catalogue matrices not on "
                                   "this machine: skipped. Fetch them: sparserl data fetch "
                                   "--split " +
                                   f.split.string() + " --part val"));
  CHECK_THAT(output, has_substring("bench: 2 agents x 5 matrices (val part of bench-t2, "
                                   "selection all)"));
  CHECK_THAT(output, has_substring("oracle: no GPU"));
  const fs::path run = only_run(f.root / "runs");

  const std::vector<MatrixResult> rows = read_results_csv(run / "results.csv");
  REQUIRE(rows.size() == 2 * 5);
  std::set<std::string> families;
  for (const MatrixResult& r : rows) {
    INFO(r.agent << " " << r.matrix);
    CHECK_FALSE(r.tested);
    const std::string expected_regime = r.matrix == "gen-v1/diagonal?n=1000001"  ? "large"
                                        : r.matrix == "gen-v1/diagonal?n=300000" ? "medium"
                                                                                 : "small";
    CHECK(r.regime == expected_regime);
    families.insert(r.family);
    CHECK(std::isnan(r.oracle_speedup));   // no GPU: no device to key the oracle by
    CHECK(std::isnan(r.oracle_fraction));  // and nothing tested
    CHECK_FALSE(r.novel.has_value());      // novelty is of correct answers
    if (r.agent == "template") {
      // The template search answers with a design-space program: in the corpus, distance 0.
      REQUIRE_FALSE(r.program.empty());
      CHECK(r.corpus_distance == 0);
    } else if (!r.program.empty()) {
      CHECK(r.corpus_distance > 0);  // random tokens are no design-space program
    } else {
      CHECK(std::isnan(r.corpus_distance));  // cut at max_tokens: no program
    }
  }
  CHECK(families == std::set<std::string>{"diagonal", "uniform", "Pajek", "Cat"});
  const std::string csv = sparserl::testing::read_bytes(run / "results.csv");
  CHECK_THAT(csv, has_substring(",regime,family,oracle_speedup,oracle_fraction,novel,"
                                "corpus_distance,cusparse_path,cusparse_paths,search_seconds,design\n"));

  const std::string summary = sparserl::testing::read_bytes(run / "summary.csv");
  std::vector<std::string> lines;
  for (std::istringstream in(summary); std::getline(in, lines.emplace_back());) {
  }
  lines.pop_back();
  REQUIRE(lines.size() == 1 + 4 * 2);
  CHECK(lines[1].rfind("all,template,5,0,", 0) == 0);
  CHECK(lines[3].rfind("large,template,1,0,", 0) == 0);
  CHECK(lines[5].rfind("medium,template,1,0,", 0) == 0);
  CHECK(lines[7].rfind("small,template,3,0,", 0) == 0);
  CHECK(lines[8].rfind("small,random,3,0,", 0) == 0);

  const RunInfo info = read_run_info(run / "run.json");
  REQUIRE(info.split);
  CHECK(info.split->name == "bench-t2");
  CHECK(info.split->digest == sparserl::datasets::read_split(f.split).digest());
  CHECK(info.split->part == "val");
  CHECK(info.split->selection == "all");
  CHECK_FALSE(info.split->test_touched);
  CHECK(info.split->matrices == 5);
  CHECK(info.split->absent == 1);
  REQUIRE(info.extra.contains("novelty"));
  CHECK_THAT(info.extra.at("novelty").at("template").get<std::string>(),
             has_substring("the design space of spmv f32 ("));
  REQUIRE(info.extra.contains("oracle"));
  CHECK(info.extra.at("oracle").at("mode") == "cache");

  const std::string report = sparserl::testing::read_bytes(run / "report.md");
  CHECK_THAT(report, has_substring("Test part: not touched."));
  CHECK_THAT(report, has_substring("| split | bench-t2, digest `" + info.split->digest + "`"));
  CHECK_THAT(report, has_substring("(1 catalogue matrix not on this machine skipped)"));
  CHECK_THAT(report, has_substring("Oracle: no GPU, so no device to key DATA_DIR/oracle by"));
  CHECK_THAT(report, has_substring("Novelty is measured against the training corpus of each "
                                   "agent:\n- template: the design space of spmv f32"));
  CHECK_THAT(report, has_substring("| roofline fraction (bandwidth) |"));
  const auto large = report.find("### Large matrices");
  const auto medium = report.find("### Medium matrices");
  const auto small = report.find("### Small matrices");
  const auto all = report.find("### All matrices");
  REQUIRE(large != std::string::npos);
  CHECK(large < medium);
  CHECK(medium < small);
  CHECK(small < all);
  CHECK_THAT(report, has_substring("| `gen-v1/diagonal?n=1000001` | large | diagonal | 1000001 | "
                                   "template | yes | n/a |"));
}

TEST_CASE("bench then compare: three seeds of two agents on bench-v2's small real val matrices",
          "[experiments][bench][bench_v2][compare]") {
  // The path a researcher takes, as shipped: experiments/configs/bench-v2-small.toml on the
  // committed bench-v2 split, one bench per seed, then `sparserl compare` over the runs. Shortened
  // (3 matrices, one template program, two random samples) and compile stage only here.
  const fs::path shared = sparserl::testing::shared_matrices_dir();
  if (!fs::exists(shared / "real" / "INDEX.csv")) sparserl::testing::skip("no shared real matrices");
  const fs::path root = sparserl::testing::scratch_dir("bench_then_compare");
  const fs::path config = sparserl::testing::source_dir() / "experiments" / "configs" /
                          "bench-v2-small.toml";
  const std::string common =
      " --root " + sparserl::testing::source_dir().string() + " --runs-dir " +
      (root / "runs").string() + " --set 'data.index_dirs=[\"" + shared.string() + "\",\"" +
      (shared / "real").string() + "\"]' --set bench.max_tasks=3 --set bench.template_budget=1" +
      " --set bench.samples=2 --set env.max_tokens=300";
  for (int seed = 1; seed <= 3; ++seed) {
    int status = 0;
    const std::string output = sparserl::testing::run_command(
        std::string(SPARSERL_CLI_PATH) + " bench " + config.string() + common +
            " --set experiment.seed=" + std::to_string(seed),
        status);
    INFO(output);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    CHECK_THAT(output, has_substring("val part of bench-v2, selection regime small; source shared"));
  }
  std::vector<fs::path> runs;
  for (const auto& e : fs::directory_iterator(root / "runs")) runs.push_back(e.path());
  REQUIRE(runs.size() == 3);
  std::string command = std::string(SPARSERL_CLI_PATH) + " compare";
  for (const fs::path& r : runs) command += " " + r.string();
  command += " --out " + (root / "compare").string() + " --reps 200 --no-plots";
  int status = 0;
  const std::string output = sparserl::testing::run_command(command, status);
  INFO(output);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  CHECK_THAT(output, has_substring("compared 2 agents over 3 run directories on 3 matrices"));
  const std::string md = sparserl::testing::read_bytes(root / "compare" / "compare.md");
  // Each run names the split by digest; every agent has three runs; without a GPU the speed
  // figures are n/a and the compile rate has an interval over the seeds.
  const auto split = sparserl::datasets::read_split(sparserl::testing::source_dir() / "datasets" /
                                                    "splits" / "bench-v2.split");
  CHECK_THAT(md, has_substring("| bench-v2 " + split.digest().substr(0, 12) + " |"));
  CHECK_THAT(md, has_substring("| template | 3 | n/a |"));
  CHECK_THAT(md, has_substring("| random | 3 | n/a |"));
  const std::string csv = sparserl::testing::read_bytes(root / "compare" / "compare.csv");
  CHECK_THAT(csv, has_substring("random"));
  CHECK_THAT(csv, has_substring("compile_rate"));
}
