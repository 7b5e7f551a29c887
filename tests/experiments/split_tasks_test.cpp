// A run's matrices from a version-2 benchmark split: selection by regime, source and family;
// catalogue matrices that are not on this machine skipped with the fetch command; the test part
// read only by `sparserl bench` / `eval` with --part test; `sparserl train` refusing test matrices
// each way it could meet one; the split recorded in run.json and named in the report.
#include "sparserl/experiments/split_tasks.hpp"

#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_split_fixture.hpp"
#include "catch.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/run_info.hpp"
#include "sparserl/experiments/runner.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
namespace ex = sparserl::experiments;
using sparserl::experiments::Config;
using sparserl::experiments::RunnerError;
using sparserl::testing::has_substring;

namespace {

std::vector<std::string> uris_of(const ex::PartTasks& tasks) {
  std::vector<std::string> out;
  for (const auto& t : tasks.tasks) out.push_back(t.uri);
  return out;
}

// The fixture's config with `overrides` ("a.b=value").
Config fixture_config(const sparserl::testing::BenchSplitFixture& f,
                      const std::vector<std::string>& overrides = {}) {
  return Config::parse(sparserl::testing::bench_split_config(f, "/nonexistent/matrices"), "t2.toml",
                       overrides);
}

}  // namespace

TEST_CASE("a version-2 split part is selected by regime, source and family",
          "[experiments][split_tasks]") {
  const auto f = sparserl::testing::write_bench_split(sparserl::testing::scratch_dir("select"));
  const ex::PartTasks all = ex::part_tasks(fixture_config(f), f.root, "val", 0);
  CHECK(all.selected == 6);
  CHECK(all.tasks.size() == 5);  // Cat/absent is not on this machine
  CHECK(all.absent == 1);
  REQUIRE(all.split);
  CHECK(all.split->name == "bench-t2");
  REQUIRE(all.entry("gen-v1/diagonal?n=300000") != nullptr);
  CHECK(all.entry("gen-v1/diagonal?n=300000")->regime == sparserl::datasets::Regime::medium);

  const ex::PartTasks large =
      ex::part_tasks(fixture_config(f, {"data.regimes=[\"large\"]"}), f.root, "val", 0);
  CHECK(uris_of(large) == std::vector<std::string>{"gen-v1/diagonal?n=1000001"});
  CHECK(large.selection.describe() == "regime large");
  CHECK(large.note.empty());

  const ex::PartTasks mixed = ex::part_tasks(
      fixture_config(f, {"data.regimes=[\"small\", \"medium\"]", "data.sources=[\"generated\"]"}),
      f.root, "val", 0);
  CHECK(uris_of(mixed) == std::vector<std::string>{"gen-v1/diagonal?n=300000",
                                                   "gen-v1/uniform?nnz_per_row=3&rows=32"});
  const ex::PartTasks shared =
      ex::part_tasks(fixture_config(f, {"data.sources=[\"shared\"]"}), f.root, "val", 0);
  CHECK(uris_of(shared) == std::vector<std::string>{"suitesparse-v1/Pajek/Erdos971"});
  const ex::PartTasks family =
      ex::part_tasks(fixture_config(f, {"data.families=[\"diagonal\"]"}), f.root, "val", 1);
  CHECK(uris_of(family) == std::vector<std::string>{"gen-v1/diagonal?n=1000001"});  // max_tasks 1
  CHECK(ex::config_tasks(fixture_config(f, {"data.families=[\"diagonal\"]"}), f.root, "val", 0)
            .size() == 2);

  // Values outside the known ones are config errors naming the key; families are the split's.
  CHECK_THROWS_WITH(fixture_config(f, {"data.regimes=[\"huge\"]"}), has_substring("data.regimes"));
  CHECK_THROWS_WITH(fixture_config(f, {"data.sources=[\"web\"]"}), has_substring("data.sources"));
  CHECK_THROWS_WITH(
      ex::part_tasks(fixture_config(f, {"data.families=[\"rmat\"]"}), f.root, "val", 0),
      has_substring("data.families: 'rmat' is not a family of split bench-t2"));
  CHECK_THROWS_WITH(
      ex::part_tasks(fixture_config(f, {"data.families=[\"stencil\"]"}), f.root, "val", 0),
      has_substring("no matrix of bench-t2 val is of the selection (family stencil)"));
  CHECK_THROWS_WITH(
      ex::part_tasks(Config::parse("[data]\nuris = [\"gen-v1/diagonal?n=4\"]\nsources = "
                                   "[\"generated\"]\n",
                                   "u.toml"),
                     f.root, "val", 0),
      has_substring("data.sources: a selection takes matrices of data.split"));
}

TEST_CASE("version-1 splits read as before and refuse a regime filter",
          "[experiments][split_tasks]") {
  const fs::path root = sparserl::testing::source_dir();
  const Config v1 = Config::parse("[data]\nsplit = \"datasets/splits/shared-v1.split\"\n", "v1");
  const ex::PartTasks val = ex::part_tasks(v1, root, "val", 0);
  CHECK(val.tasks.size() == 11);
  CHECK(val.absent == 0);
  REQUIRE(val.entries[0]);
  CHECK(val.entries[0]->family == val.tasks[0].uri.substr(15, val.entries[0]->family.size()));
  CHECK_FALSE(val.entries[0]->regime);
  CHECK_THROWS_WITH(
      ex::part_tasks(Config::parse("[data]\nsplit = \"datasets/splits/shared-v1.split\"\nregimes = "
                                   "[\"large\"]\n",
                                   "v1"),
                     root, "val", 0),
      has_substring("data.regimes: " + (root / "datasets/splits/shared-v1.split").string() +
                    " is a version-1 split (shared-v1): version-1 files have no regimes"));
  // A family of a version-1 split is its collection group.
  const Config hb = Config::parse(
      "[data]\nsplit = \"datasets/splits/shared-v1.split\"\nfamilies = [\"HB\"]\n", "v1");
  for (const auto& t : ex::config_tasks(hb, root, "train", 0)) {
    CHECK(t.uri.rfind("suitesparse-v1/HB/", 0) == 0);
  }
}

TEST_CASE("catalogue matrices that are not on this machine are skipped with the fetch command",
          "[experiments][split_tasks]") {
  const auto f = sparserl::testing::write_bench_split(sparserl::testing::scratch_dir("absent"));
  const ex::PartTasks cat =
      ex::part_tasks(fixture_config(f, {"data.sources=[\"catalogue\"]"}), f.root, "val", 0);
  CHECK(uris_of(cat) == std::vector<std::string>{"suitesparse-v1/Cat/present"});
  CHECK(cat.selected == 2);
  CHECK(cat.absent == 1);
  CHECK(cat.note ==
        "data.split bench-t2, part val: 1 of the 2 selected matrices are catalogue "
        "matrices not on this machine: skipped. Fetch them: sparserl data fetch "
        "--split " +
            f.split.string() + " --part val --data-dir " + f.data_dir.string());
  fs::remove(f.data_dir / "suitesparse" / "Cat" / "present.mtx");
  CHECK_THROWS_WITH(
      ex::part_tasks(fixture_config(f, {"data.sources=[\"catalogue\"]"}), f.root, "val", 0),
      has_substring("2 of the 2 selected matrices are catalogue matrices not on this machine - "
                    "all of them, so there is nothing to run. Fetch them: sparserl data fetch "
                    "--split " +
                    f.split.string() + " --part val"));
}

TEST_CASE("bench and eval read the test part only with --part test on the command line",
          "[experiments][split_tasks]") {
  const auto f = sparserl::testing::write_bench_split(sparserl::testing::scratch_dir("test_part"));
  ex::RunnerOptions options;
  options.runs_dir = f.root / "runs";
  std::ostringstream log;
  options.log = &log;
  const std::string refused = "the test part is read only when the command line says so";
  const Config file = Config::parse(
      sparserl::testing::bench_split_config(f, "/nonexistent", "[bench]\npart = \"test\"\n"),
      "t2.toml");
  CHECK_THROWS_WITH(ex::run_bench(file, options),
                    has_substring("bench.part = \"test\": " + refused +
                                  " - `sparserl bench "
                                  "CONFIG --part test`; a config file or --set cannot ask for it"));
  CHECK_THROWS_WITH(ex::run_bench(fixture_config(f, {"bench.part=test"}), options),
                    has_substring("bench.part = \"test\": " + refused));
  if (ex::have_learned_agents()) {
    CHECK_THROWS_WITH(
        ex::run_checkpoint_evaluation(fixture_config(f, {"eval.part=test"}), f.root, options),
        has_substring("eval.part = \"test\": " + refused +
                      " - `sparserl eval CONFIG --part test`"));
  }
  // A data.uris list holding a test matrix of a project split is the test part too.
  const Config uris = Config::parse(
      "[experiment]\nroot = \"" + f.root.string() +
          "\"\n[data]\nuris = [\"gen-v1/diagonal?n=5\", \"gen-v1/stencil2d?ny=6&nx=6\"]\n"
          "index_dirs = []\n[bench]\nagents = [\"template\"]\n",
      "u.toml");
  CHECK_THROWS_WITH(ex::run_bench(uris, options),
                    has_substring("data.uris: gen-v1/stencil2d?nx=6&ny=6 is a test matrix of split "
                                  "bench-t2 (" +
                                  f.split.string() + "): " + refused));
  CHECK_FALSE(fs::exists(f.root / "runs"));
  // --part train / val override the config's part; only --part test opens the test part.
  ex::PartTasks part = ex::part_tasks(fixture_config(f), f.root, "test", 0);
  ex::check_test_matrices(part, fixture_config(f), f.root, true, "sparserl bench");
  CHECK(part.test_matrices == 3);
  const ex::SplitRecord record = ex::split_record(part);
  CHECK(record.test_touched);
  CHECK(ex::test_part_line(record) == "Test part: 3 matrices of bench-t2 test read (--part test)");
  ex::PartTasks val = ex::part_tasks(fixture_config(f), f.root, "val", 0);
  ex::check_test_matrices(val, fixture_config(f), f.root, false, "sparserl bench");
  CHECK(ex::test_part_line(ex::split_record(val)) == "Test part: not touched");
}

TEST_CASE("sparserl train refuses test matrices, naming the matrix and the split",
          "[experiments][split_tasks]") {
  if (!ex::have_learned_agents()) return;  // without LibTorch train refuses every config earlier
  const auto f = sparserl::testing::write_bench_split(sparserl::testing::scratch_dir("train_test"));
  ex::RunnerOptions options;
  options.runs_dir = f.root / "runs";
  std::ostringstream log;
  options.log = &log;
  const std::string split = "bench-t2 (" + f.split.string() + ")";
  CHECK_THROWS_WITH(ex::run_training(fixture_config(f, {"data.part=test"}), options),
                    has_substring("data.part = \"test\": training never reads the test part of " +
                                  f.split.string()));
  CHECK_THROWS_WITH(
      ex::run_training(fixture_config(f, {"eval.part=test"}), options),
      has_substring("eval.part = \"test\": the eval stage of `sparserl train` never reads the "
                    "test part"));
  const auto uris = [&](const std::string& list, const std::vector<std::string>& more = {}) {
    std::vector<std::string> overrides = {"data.split=\"\"", "data.uris=" + list};
    overrides.insert(overrides.end(), more.begin(), more.end());
    return fixture_config(f, overrides);
  };
  CHECK_THROWS_WITH(
      ex::run_training(uris(R"(["gen-v1/diagonal?n=7", "suitesparse-v1/Gset/G51"])"), options),
      has_substring("data.uris[1]: suitesparse-v1/Gset/G51 is a test matrix of split " + split +
                    ": training never reads test matrices"));
  CHECK_THROWS_WITH(
      ex::run_training(uris(R"(["gen-v1/diagonal?n=7"])",
                            {R"(data.generators=["gen-v1/arrow?width=2&n=30&seed=77"])"}),
                       options),
      has_substring("data.generators[0]: 'gen-v1/arrow?width=2&n=30&seed=77' generates the test "
                    "matrix gen-v1/arrow?n=30&width=2 of split " +
                    split + " (seed= aside)"));
  // The same with data.split set: its own test part counts, and data.uris are checked anyway.
  CHECK_THROWS_WITH(
      ex::run_training(fixture_config(f, {R"(data.generators=["gen-v1/stencil2d?nx=6&ny=6"])"}),
                       options),
      has_substring("generates the test matrix gen-v1/stencil2d?nx=6&ny=6 of split " + split));
  CHECK_FALSE(fs::exists(f.root / "runs"));
}

TEST_CASE("run.json records the split; an older run.json reads without one",
          "[experiments][split_tasks]") {
  ex::RunInfo info;
  info.run_id = "r";
  ex::SplitRecord s;
  s.name = "bench-v2";
  s.file = "/p/datasets/splits/bench-v2.split";
  s.digest = "0123456789abcdef";
  s.part = "test";
  s.selection = "regime large";
  s.test_touched = true;
  s.test_matrices = 12;
  s.test_split = "bench-v2";
  s.matrices = 12;
  s.absent = 3;
  info.split = s;
  const ex::Json json = info.to_json();
  REQUIRE(json.contains("split"));
  CHECK(json.at("split").at("name") == "bench-v2");
  CHECK(json.at("split").at("digest") == "0123456789abcdef");
  CHECK(json.at("split").at("test_touched") == true);
  const ex::RunInfo back = ex::RunInfo::from_json(json, "run.json");
  REQUIRE(back.split);
  CHECK(*back.split == s);
  info.split.reset();
  const ex::Json old = info.to_json();
  CHECK_FALSE(old.contains("split"));
  CHECK_FALSE(ex::RunInfo::from_json(old, "run.json").split);
}

TEST_CASE("a bench given --part test reads it and says so in run.json and the report",
          "[experiments][split_tasks]") {
  const fs::path shared = sparserl::testing::shared_matrices_dir();
  const auto f = sparserl::testing::write_bench_split(sparserl::testing::scratch_dir("bench_test"));
  ex::RunnerOptions options;
  options.runs_dir = f.root / "runs";
  options.part = "test";
  std::ostringstream log;
  options.log = &log;
  const Config config = Config::parse(
      sparserl::testing::bench_split_config(
          f, shared.string(), "[bench]\nagents = [\"template\"]\ntemplate_budget = 1\n"),
      "t2.toml", {"data.regimes=[\"small\"]"});
  const ex::RunOutcome outcome = ex::run_bench(config, options);
  INFO(log.str());
  REQUIRE(outcome.status == ex::RunStatus::completed);
  const ex::RunInfo info = ex::read_run_info(outcome.run_dir / "run.json");
  REQUIRE(info.split);
  CHECK(info.split->name == "bench-t2");
  CHECK(info.split->part == "test");
  CHECK(info.split->selection == "regime small");
  CHECK(info.split->digest == sparserl::datasets::read_split(f.split).digest());
  CHECK(info.split->test_touched);
  CHECK(info.split->test_matrices == 3);
  const std::string report = sparserl::testing::read_bytes(outcome.report);
  CHECK_THAT(report, has_substring("Test part: 3 matrices of bench-t2 test read (--part test)."));
  CHECK_THAT(report, has_substring("| split | bench-t2, digest `" + info.split->digest + "`"));
  CHECK_THAT(report, has_substring("| part | test, selection regime small: 3 matrices |"));
  CHECK(ex::Config::load(outcome.run_dir / "config.resolved.toml").string("bench.part") == "test");

  // The same bench on val: the test part is not touched.
  options.part.reset();
  const ex::RunOutcome val = ex::run_bench(config, options);
  REQUIRE(val.status == ex::RunStatus::completed);
  CHECK_FALSE(ex::read_run_info(val.run_dir / "run.json").split->test_touched);
  CHECK_THAT(sparserl::testing::read_bytes(val.report), has_substring("Test part: not touched."));
  CHECK_THAT(log.str(), has_substring("1 of the 4 selected matrices are catalogue matrices not on "
                                      "this machine: skipped"));
}

TEST_CASE("tune, agent and rollout never read the test part", "[experiments][split_tasks]") {
  const fs::path split =
      sparserl::testing::source_dir() / "datasets" / "splits" / "bench-v2.split";
  const std::string refused = "does not read the test part: only `sparserl bench` and `sparserl "
                              "eval` given --part test do";
  std::vector<std::string> commands = {
      "tune --split " + split.string() + " --part test",
      "rollout --agent random --episodes 1 --split " + split.string() + " --part test"};
  if (ex::have_learned_agents()) {
    commands.push_back("agent eval --checkpoint /nonexistent --split " + split.string() +
                       " --part test");
  }
  for (const std::string& command : commands) {
    int status = 0;
    const std::string output =
        sparserl::testing::run_command(std::string(SPARSERL_CLI_PATH) + " " + command, status);
    INFO(command << "\n" << output);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);
    CHECK_THAT(output, has_substring(refused));
  }
}
