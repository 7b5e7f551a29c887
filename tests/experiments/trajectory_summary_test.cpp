// `sparserl inspect`: the summary of a file written by env's TrajectoryWriter matches figures the
// test computes from the episodes it wrote; a file in the same layout with columns missing,
// fixed-length strings or a partial extra row is still summarised; files that are not trajectories
// are named.
#include "sparserl/experiments/trajectory_summary.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "catch.hpp"
#include "sparserl/experiments/json.hpp"
#include "command_checks.hpp"
#include "test_support.hpp"

#if __has_include("sparserl/env/trajectory.hpp")
#include "sparserl/env/trajectory.hpp"
#define SPARSERL_TEST_HAVE_ENV 1
#endif

using namespace sparserl::experiments;
using namespace sparserl::testing;
namespace fs = std::filesystem;

namespace {

// Writes a 1-D dataset in the trajectory layout (chunked, unlimited) with HDF5's C API.
void write_column(hid_t file, const char* name, hid_t file_type, hid_t mem_type, hsize_t n,
                  const void* data) {
  const hsize_t dims[1] = {n};
  const hsize_t max_dims[1] = {H5S_UNLIMITED};
  const hsize_t chunk[1] = {64};
  const hid_t space = H5Screate_simple(1, dims, max_dims);
  const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(plist, 1, chunk);
  const hid_t ds = H5Dcreate2(file, name, file_type, space, H5P_DEFAULT, plist, H5P_DEFAULT);
  REQUIRE(ds >= 0);
  if (n > 0) REQUIRE(H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  H5Dclose(ds);
  H5Pclose(plist);
  H5Sclose(space);
}

void write_int_attribute(hid_t file, const char* name, std::int64_t value) {
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(file, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attr, H5T_NATIVE_INT64, &value);
  H5Aclose(attr);
  H5Sclose(space);
}

// A hand-made file: reward (5 rows), compiled (uint8, 6 rows: one partial extra), task as
// fixed-length strings, no format attributes; `rows` only when given.
void write_minimal(const fs::path& path, std::int64_t rows_attribute) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(file >= 0);
  const hid_t group = H5Gcreate2(file, "/episodes", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(group);
  const double reward[5] = {0.5, -0.5, 1.0, 0.0, 0.5};
  write_column(file, "/episodes/reward", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 5, reward);
  const std::uint8_t compiled[6] = {1, 0, 1, 0, 1, 1};
  write_column(file, "/episodes/compiled", H5T_STD_U8LE, H5T_NATIVE_UINT8, 6, compiled);
  const hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, 8);
  const char tasks[5][8] = {"m/a", "m/b", "m/a", "m/a", "m/b"};
  write_column(file, "/episodes/task", str, str, 5, tasks);
  H5Tclose(str);
  if (rows_attribute >= 0) write_int_attribute(file, "rows", rows_attribute);
  H5Fclose(file);
}

}  // namespace

#ifdef SPARSERL_TEST_HAVE_ENV
TEST_CASE("inspect summarises a file written by env's recorder", "[experiments][inspect]") {
  using namespace sparserl;
  const fs::path path = scratch_dir("inspect_env_file") / "trajectories.h5";
  env::TrajectoryFileInfo info;
  info.run_id = "inspect-test";
  info.config = "[experiment]\nname = \"inspect\"\n";
  info.vocabulary_name = "cuda-c-v1";
  info.vocabulary_digest = std::string(64, '0');
  info.created_by = "experiments_tests";

  // The figures the summary must reproduce, computed here from the episodes written.
  std::int64_t evaluated = 0, compiled = 0, correct = 0, truncated = 0;
  double reward_sum = 0, log_speedup_sum = 0;
  int timed = 0;
  std::map<std::string, int> per_task;
  {
    env::TrajectoryWriter writer(path, info);
    for (int i = 0; i < 20; ++i) {
      env::Episode e;
      e.task.uri = i % 2 == 0 ? "gen-v1/diagonal?n=10" : "gen-v1/banded?n=20&b=2";
      e.tokens = {1, 2, 3};
      e.tokens.resize(static_cast<std::size_t>(3 + i % 4), 5);
      e.source = "program " + std::to_string(i);
      e.truncated = i % 5 == 4;
      e.terminated = !e.truncated;
      e.reward = e.truncated ? -1.0 : 0.1 * i - 0.5;
      reward_sum += e.reward;
      ++per_task[e.task.str()];
      if (!e.truncated) {
        reward::EvalResult r;
        r.compiled = i % 3 != 0;
        r.gpu_available = true;
        r.correct = r.compiled && i % 2 == 0;
        r.timed = r.correct;
        r.error = r.compiled
                      ? (r.correct ? reward::ErrorKind::none : reward::ErrorKind::wrong_answer)
                      : reward::ErrorKind::compile_error;
        if (r.timed) {
          r.timing.speedup = 0.5 + 0.25 * i;
          log_speedup_sum += std::log(r.timing.speedup);
          ++timed;
        }
        e.eval = r;
        ++evaluated;
        compiled += r.compiled ? 1 : 0;
        correct += r.correct ? 1 : 0;
      } else {
        ++truncated;
      }
      writer.append(e, i < 10 ? "random:seed=1" : "template");
    }
  }
  const TrajectorySummary s = summarize_trajectories(path);
  CHECK(s.format == "sparserl-trajectories");
  CHECK(s.format_version == 1);
  CHECK(s.run_id == "inspect-test");
  CHECK(s.vocabulary_name == "cuda-c-v1");
  CHECK(s.rows_attribute == 20);
  CHECK(s.episodes == 20);
  CHECK(s.truncated == truncated);
  CHECK(s.evaluated == evaluated);
  CHECK(s.compiled == compiled);
  CHECK(s.correct == correct);
  CHECK(s.gpu);
  CHECK(s.compile_rate == Approx(static_cast<double>(compiled) / static_cast<double>(evaluated)));
  CHECK(s.correct_rate == Approx(static_cast<double>(correct) / static_cast<double>(evaluated)));
  CHECK(s.reward.mean == Approx(reward_sum / 20));
  CHECK(s.reward.min == -1.0);
  CHECK(s.reward.max == Approx(0.1 * 18 - 0.5));
  CHECK(s.length.min == 3);
  CHECK(s.length.max == 6);
  CHECK(s.speedup.count == timed);
  CHECK(s.speedup_geomean == Approx(std::exp(log_speedup_sum / timed)));
  CHECK(s.missing_columns.empty());
  CHECK(s.notes.empty());
  CHECK(s.policies.at("random:seed=1") == 10);
  CHECK(s.policies.at("template") == 10);
  CHECK(s.errors.at("compile_error") + s.errors.at("wrong_answer") + s.errors.at("none") ==
        evaluated);
  REQUIRE(s.tasks.size() == 2);
  for (const auto& t : s.tasks) CHECK(t.episodes == per_task.at(t.task));

  // The command line: text, per task, JSON.
  int status = 0;
  const std::string cli = std::string(SPARSERL_CLI_PATH) + " inspect ";
  std::string out = run_command(cli + "'" + path.string() + "' --per-task", status);
  INFO(out);
  CHECK(status == 0);
  CHECK_THAT(out, has_substring("episodes        20 (" + std::to_string(evaluated) +
                                " evaluated, " + std::to_string(truncated) + " truncated)"));
  for (const auto& [task, n] : per_task) CHECK_THAT(out, has_substring(task));
  CHECK_THAT(out, has_substring("compile rate    "));
  out = run_command(cli + "'" + path.string() + "' --json --per-task", status);
  CHECK(status == 0);
  const Json json = parse_json(out, "inspect --json");
  CHECK(json.at("episodes") == 20);
  CHECK(json.at("correct") == correct);
  CHECK(json.at("per_task").size() == 2);
  CHECK(json.at("reward").at("mean").get<double>() == Approx(reward_sum / 20));
}
#endif

TEST_CASE("inspect tolerates missing columns, fixed strings and a partial row",
          "[experiments][inspect]") {
  const fs::path dir = scratch_dir("inspect_minimal");
  write_minimal(dir / "no_rows.h5", -1);
  TrajectorySummary s = summarize_trajectories(dir / "no_rows.h5");
  CHECK(s.episodes == 5);  // the shortest column
  CHECK(s.format.empty());
  CHECK(s.rows_attribute == -1);
  CHECK(s.evaluated == 5);  // without `evaluated` and `truncated`, every row counts as evaluated
  CHECK(s.compiled == 3);
  CHECK_FALSE(s.gpu);
  CHECK(std::isnan(s.correct_rate));
  CHECK(s.reward.mean == Approx(0.3));
  CHECK(s.reward.std == Approx(std::sqrt((0.04 + 0.64 + 0.49 + 0.09 + 0.04) / 5)));
  REQUIRE(s.tasks.size() == 2);
  CHECK(s.tasks[0].task == "m/a");
  CHECK(s.tasks[0].episodes == 3);
  CHECK(s.tasks[0].compiled == 2);
  CHECK(s.tasks[0].reward.max == 1.0);
  CHECK(std::find(s.missing_columns.begin(), s.missing_columns.end(), "evaluated") !=
        s.missing_columns.end());
  REQUIRE(s.notes.size() == 1);
  CHECK_THAT(s.notes[0], has_substring("no `rows` attribute"));
  CHECK_THAT(s.to_text(true), has_substring("correct rate    n/a (no GPU stages: compile only)"));
  CHECK_THAT(s.to_text(true), has_substring("missing columns"));

  write_minimal(dir / "rows4.h5", 4);
  s = summarize_trajectories(dir / "rows4.h5");
  CHECK(s.episodes == 4);
  CHECK(s.compiled == 2);
  REQUIRE(s.notes.size() == 1);
  CHECK_THAT(s.notes[0], has_substring("1 row(s) past the `rows` attribute ignored"));
}

TEST_CASE("inspect names files that are not trajectories", "[experiments][inspect]") {
  const fs::path dir = scratch_dir("inspect_errors");
  CHECK_THROWS_WITH(summarize_trajectories(dir / "absent.h5"),
                    has_substring("absent.h5: no such file"));
  std::ofstream(dir / "text.h5") << "not hdf5";
  CHECK_THROWS_WITH(summarize_trajectories(dir / "text.h5"),
                    has_substring("text.h5: not an HDF5 file"));

  hid_t file = H5Fcreate((dir / "empty.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose(file);
  CHECK_THROWS_WITH(summarize_trajectories(dir / "empty.h5"),
                    has_substring("empty.h5: not a trajectory file (no /episodes group"));

  file = H5Fcreate((dir / "text_reward.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(H5Gcreate2(file, "/episodes", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  const hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, 4);
  const char words[2][4] = {"abc", "def"};
  write_column(file, "/episodes/reward", str, str, 2, words);
  H5Tclose(str);
  H5Fclose(file);
  CHECK_THROWS_WITH(summarize_trajectories(dir / "text_reward.h5"),
                    has_substring("no numeric /episodes/reward"));

  int status = 0;
  const std::string out = run_command(
      std::string(SPARSERL_CLI_PATH) + " inspect '" + (dir / "text.h5").string() + "'", status);
  CHECK(WEXITSTATUS(status) == 1);
  CHECK_THAT(out, has_substring("sparserl inspect: error: " + (dir / "text.h5").string() +
                                ": not an HDF5 file"));
  check_command(std::string(SPARSERL_CLI_PATH) + " inspect --help", 0,
                {"usage: sparserl inspect FILE.h5"});
  run_command(std::string(SPARSERL_CLI_PATH) + " inspect", status);
  CHECK(WEXITSTATUS(status) == 2);
}

TEST_CASE("inspect lists policies in natural order, and an RL file's many by their ends",
          "[experiments][inspect]") {
  TrajectorySummary few;
  for (int step : {10, 9, 100}) few.policies["grpo:step=" + std::to_string(step)] = 32;
  CHECK_THAT(few.to_text(false), has_substring("policies        grpo:step=9 (32) grpo:step=10 (32) "
                                               "grpo:step=100 (32)\n"));

  TrajectorySummary many;
  for (int step = 0; step < 150; ++step) many.policies["grpo:step=" + std::to_string(step)] = 32;
  const std::string text = many.to_text(false);
  CHECK_THAT(text, has_substring("policies        150: grpo:step=0 (32) grpo:step=1 (32) "
                                 "grpo:step=2 (32) ... grpo:step=148 (32) grpo:step=149 (32) "
                                 "(--json lists all)\n"));
  CHECK(text.find("grpo:step=75 ") == std::string::npos);
}
