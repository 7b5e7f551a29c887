// `sparserl rollout` end to end on this machine (compile-only evaluator, real sandboxed workers):
// the summary's counts, the trajectory file's rows through h5dump and the HDF5 API, and argument
// errors.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include "catch.hpp"
#include "env_test_support.hpp"
#include "sparserl/env/trajectory.hpp"

namespace {

using sparserl::env::fixtures::run;

std::string cli() {
  return std::string(SPARSERL_CLI_PATH) + " rollout --worker " + SPARSERL_WORKER_PATH;
}

}  // namespace

TEST_CASE("sparserl rollout records one row per episode, readable by h5dump", "[env][rollout]") {
  const auto dir = sparserl::testing::scratch_dir("rollout_cli");
  const auto out = dir / "trajectories.h5";
  int status = 0;
  const std::string output =
      run(cli() +
              " --agent random --matrix 'gen-v1/banded?n=300' --matrix 'gen-v1/diagonal?n=64'"
              " --episodes 7 --envs 3 --max-tokens 96 --compile-only --compile-workers 1 --json"
              " --seed 4 --data-dir '" +
              dir.string() + "' --out '" + out.string() + "'",
          status);
  INFO(output);
  REQUIRE(status == 0);
  CHECK_THAT(output, sparserl::testing::has_substring("\"episodes\":7,"));
  CHECK_THAT(output, sparserl::testing::has_substring("\"evaluated\":7,"));
  CHECK_THAT(output, sparserl::testing::has_substring("\"rows\":7}"));
  CHECK_THAT(output, sparserl::testing::has_substring("\"gpu\":false"));
  const sparserl::env::TrajectoryFile file = sparserl::env::read_trajectories(out);
  CHECK(file.rows == 7);
  REQUIRE(file.episodes.size() == 7);
  CHECK(file.info.created_by == "sparserl rollout");
  CHECK_THAT(file.info.config, sparserl::testing::has_substring("--episodes 7"));
  for (const auto& e : file.episodes) {
    CHECK(e.terminated);
    CHECK(e.tokens.size() <= 96u);
    REQUIRE(e.eval.has_value());
    CHECK_FALSE(e.eval->gpu_available);
    CHECK(e.policy_id == "random:seed=4");
  }
  const std::string h5dump = SPARSERL_H5DUMP_PATH;
  if (h5dump.empty() || h5dump.find("NOTFOUND") != std::string::npos) {
    WARN("h5dump is not installed: the h5dump half of this test was skipped");
    return;
  }
  const std::string dump = run(h5dump + " -H -d /episodes/reward '" + out.string() + "'", status);
  INFO(dump);
  CHECK(status == 0);
  CHECK(std::regex_search(dump, std::regex(R"(SIMPLE \{ \( 7 \) / \( H5S_UNLIMITED \) \})")));
}

TEST_CASE("sparserl rollout takes a matrix as a path, a file: URI or a matrix URI alike",
          "[env][rollout]") {
  const auto dir = sparserl::testing::scratch_dir("rollout_cli_paths");
  const auto matrix = dir / "small.mtx";
  {
    std::ofstream out(matrix);
    out << "%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 1.0\n2 2 2.0\n3 1 0.5\n"
           "3 3 3.0\n";
  }
  for (const std::string& given :
       {matrix.string(), "file:" + matrix.string(), std::string("gen-v1/diagonal?n=16")}) {
    INFO(given);
    const auto out = dir / "trajectories.h5";
    std::filesystem::remove(out);
    int status = 0;
    const std::string output =
        run(cli() + " --agent random --matrix '" + given +
                "' --episodes 2 --max-tokens 96 --compile-only --compile-workers 1 --json"
                " --data-dir '" +
                dir.string() + "' --out '" + out.string() + "'",
            status);
    INFO(output);
    REQUIRE(status == 0);
    const sparserl::env::TrajectoryFile file = sparserl::env::read_trajectories(out);
    REQUIRE(file.episodes.size() == 2);
    const std::string expected = given.rfind("gen-v1", 0) == 0 ? given : "file:" + matrix.string();
    CHECK(file.episodes.front().task.uri == expected);
  }
  int status = 0;
  const std::string output =
      run(cli() + " --agent random --matrix '" + (dir / "absent.mtx").string() + "' --episodes 1",
          status);
  CHECK(status == 2);
  CHECK_THAT(output, sparserl::testing::has_substring("neither a file nor a matrix URI"));
}

TEST_CASE("sparserl rollout refuses bad arguments with exit status 2", "[env][rollout]") {
  int status = 0;
  std::string output = run(cli() + " --agent random --episodes 3", status);
  CHECK(status == 2);
  CHECK_THAT(output, sparserl::testing::has_substring("--split FILE or --matrix URI"));
  output = run(cli() + " --agent clever --matrix gen-v1/diagonal --episodes 3", status);
  CHECK(status == 2);
  CHECK_THAT(output, sparserl::testing::has_substring("--agent: clever not in {random,template}"));
  output =
      run(cli() + " --agent random --matrix gen-v1/diagonal --episodes 3 --mask grammar", status);
  CHECK(status == 2);
  output =
      run(cli() + " --agent random --matrix gen-v1/diagonal --episodes 3 --max-tokens 5", status);
  CHECK(status == 2);
  CHECK_THAT(output, sparserl::testing::has_substring("max_tokens = 5"));
}
