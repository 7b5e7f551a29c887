// The HDF5 trajectory recorder: a file written by a run reads back row for row (with the HDF5 API
// and with h5dump, whose row count must match the episodes written); a writer SIGKILLed mid-run
// leaves a readable file; appending continues a file; the docs name every column.
#include "sparserl/env/trajectory.hpp"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <thread>

#include "catch.hpp"
#include "env_test_support.hpp"
#include "sparserl/env/agent.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::env;
using sparserl::testing::run_command;

using fixtures::tokenizer;

TrajectoryFileInfo file_info(const std::string& run_id) {
  TrajectoryFileInfo info;
  info.run_id = run_id;
  info.config = "[env]\nmax_tokens = 64\n# a \"quoted\" config line\n";
  info.vocabulary_name = tokenizer()->vocabulary().name();
  info.vocabulary_digest = tokenizer()->vocabulary().digest();
  info.created_by = "env_tests";
  return info;
}

// A synthetic episode: row i has i % 7 + 1 tokens and a recognisable source text.
Episode synthetic(int i) {
  Episode e;
  e.task.uri = "gen-v1/diagonal?n=" + std::to_string(10 + i);
  e.env_id = i % 3;
  e.env_seed = 1000 + static_cast<std::uint64_t>(i);
  e.episode_index = static_cast<std::uint64_t>(i);
  e.episode_seed = 0xfeedface00000000ULL + static_cast<std::uint64_t>(i);
  for (int t = 0; t <= i % 7; ++t) {
    e.tokens.push_back(t + i);
    e.log_probs.push_back(-0.25f * static_cast<float>(t));
    e.values.push_back(0.5f * static_cast<float>(t));
  }
  e.source = "episode " + std::to_string(i) + "\nline two";
  e.terminated = i % 4 != 3;
  e.truncated = !e.terminated;
  e.reward = e.terminated ? 0.5 : -0.5;
  e.breakdown.total = e.reward;
  e.breakdown.compile = e.reward;
  if (e.terminated) {
    reward::EvalResult r;
    r.stage = reward::Stage::compile;
    r.compiled = true;
    r.compile.max_registers = 40 + i;
    r.compile.arch = "sm_90";
    r.message = "ok " + std::to_string(i);
    r.timing.speedup = 1.25;
    e.eval = r;
  }
  e.episode_seconds = 0.001 * i;
  return e;
}

bool have_h5dump() {
  return std::string(SPARSERL_H5DUMP_PATH).find("NOTFOUND") == std::string::npos &&
         !std::string(SPARSERL_H5DUMP_PATH).empty();
}

// h5dump's view of a 1-D dataset's length, or -1.
long long h5dump_rows(const std::filesystem::path& file, const std::string& dataset) {
  int status = 0;
  const std::string out = run_command(
      std::string(SPARSERL_H5DUMP_PATH) + " -H -d " + dataset + " '" + file.string() + "'", status);
  INFO(out);
  REQUIRE(status == 0);
  std::smatch m;
  const std::regex dims(
      R"(DATASPACE\s+SIMPLE\s+\{\s*\(\s*(\d+)\s*\)\s*/\s*\(\s*H5S_UNLIMITED\s*\))");
  if (!std::regex_search(out, m, dims)) return -1;
  return std::stoll(m[1].str());
}

}  // namespace

TEST_CASE("a trajectory file reads back row for row", "[env][trajectory]") {
  const auto dir = sparserl::testing::scratch_dir("trajectory_roundtrip");
  const auto path = dir / "run.h5";
  std::vector<Episode> written;
  {
    TrajectoryWriter writer(path, file_info("run-1"));
    for (int i = 0; i < 23; ++i) {
      written.push_back(synthetic(i));
      writer.append(written.back(), "policy-" + std::to_string(i % 2));
      CHECK(writer.rows() == i + 1);
    }
  }
  const TrajectoryFile file = read_trajectories(path);
  CHECK(file.format_version == kTrajectoryFormatVersion);
  CHECK(file.rows == 23);
  CHECK(file.info.run_id == "run-1");
  CHECK(file.info.config == file_info("x").config);
  CHECK(file.info.vocabulary_digest == tokenizer()->vocabulary().digest());
  REQUIRE(file.episodes.size() == 23);
  for (std::size_t i = 0; i < written.size(); ++i) {
    INFO("row " << i);
    const Episode& a = written[i];
    const Episode& b = file.episodes[i];
    fixtures::check_same_record(a, b);
    CHECK(b.policy_id == "policy-" + std::to_string(i % 2));
    CHECK(file.run_ids[i] == "run-1");
    REQUIRE(b.eval.has_value() == a.eval.has_value());
    if (a.eval) {
      CHECK(b.eval->compile.max_registers == a.eval->compile.max_registers);
      CHECK(b.eval->message == a.eval->message);
      CHECK(b.eval->stage == a.eval->stage);
      CHECK(b.eval->timing.speedup == a.eval->timing.speedup);
    }
  }
  if (!have_h5dump()) {
    WARN("h5dump is not installed: the h5dump half of this test was skipped");
    return;
  }
  CHECK(h5dump_rows(path, "/episodes/tokens") == 23);
  CHECK(h5dump_rows(path, "/episodes/reward") == 23);
  int status = 0;
  const std::string dump = run_command(
      std::string(SPARSERL_H5DUMP_PATH) + " -d /episodes/source '" + path.string() + "'", status);
  CHECK(status == 0);
  CHECK_THAT(dump, sparserl::testing::has_substring("episode 22"));
  const std::string attrs =
      run_command(std::string(SPARSERL_H5DUMP_PATH) + " -a /rows '" + path.string() + "'", status);
  CHECK(status == 0);
  CHECK_THAT(attrs, sparserl::testing::has_substring("23"));
}

TEST_CASE("the file of a recorded run has one row per episode, readable by h5dump",
          "[env][trajectory]") {
  const auto dir = sparserl::testing::scratch_dir("trajectory_run");
  const auto path = dir / "trajectories.h5";
  auto backend = std::make_shared<fixtures::FakeBackend>();
  auto store = std::make_shared<datasets::MatrixStore>(dir, datasets::StoreOptions{});
  EnvConfig config;
  config.max_tokens = 48;
  config.observation.nnz_samples = 16;
  config.observation.embedding_dim = 8;
  SparseCudaEnv env(config, tokenizer(),
                    TaskSource::from_uris({"gen-v1/banded?n=100", "gen-v1/stencil2d?nx=8"}, {},
                                          TaskOrder::sequential),
                    store, backend);
  RandomAgent agent(11, tokenizer()->vocabulary_ptr());
  TrajectoryWriter writer(path, file_info("run-2"));
  RecordingEnv recording(env, writer, agent.policy_id());
  const int episodes = 9;
  for (int e = 0; e < episodes; ++e) {
    ResetResult r = recording.reset(e == 0 ? std::optional<std::uint64_t>(5) : std::nullopt);
    Observation o = r.observation;
    while (true) {
      const ActionBatch a = agent.act(std::span<const Observation>(&o, 1));
      StepResult s = recording.step(a.tokens[0], a.annotation(0));
      if (s.done()) break;
      o = std::move(s.observation);
    }
  }
  CHECK(writer.rows() == episodes);
  writer.close();
  const TrajectoryFile file = read_trajectories(path);
  REQUIRE(file.episodes.size() == static_cast<std::size_t>(episodes));
  CHECK(file.episodes[0].policy_id == "random:seed=11");
  CHECK(file.episodes[0].log_probs.front() == 0.0f);  // <format> is the only choice at first
  CHECK(*std::min_element(file.episodes[0].log_probs.begin(), file.episodes[0].log_probs.end()) <
        -1.0f);
  // Every recorded episode replays: same observation, same tokens allowed, same reward.
  for (const Episode& e : file.episodes) {
    const ReplayReport report = env.replay(e);
    INFO((report.ok() ? "" : report.mismatches.front()));
    CHECK(report.ok());
  }
  if (!have_h5dump()) {
    WARN("h5dump is not installed: the h5dump half of this test was skipped");
    return;
  }
  CHECK(h5dump_rows(path, "/episodes/tokens") == episodes);
  CHECK(h5dump_rows(path, "/episodes/eval_json") == episodes);
}

TEST_CASE("a writer killed mid-run leaves a readable file", "[env][trajectory]") {
  const auto dir = sparserl::testing::scratch_dir("trajectory_killed");
  for (int attempt = 0; attempt < 3; ++attempt) {
    const auto path = dir / ("killed" + std::to_string(attempt) + ".h5");
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // The writer: appends forever, one byte on the pipe per flushed row.
      close(ready[0]);
      try {
        TrajectoryWriter writer(path, file_info("killed-run"));
        for (int i = 0;; ++i) {
          writer.append(synthetic(i));
          const char byte = 1;
          if (write(ready[1], &byte, 1) != 1) _exit(3);
        }
      } catch (...) {
        _exit(2);
      }
    }
    close(ready[1]);
    // Let it write some rows, then kill it at a moment that varies between attempts.
    int rows_seen = 0;
    char byte = 0;
    while (rows_seen < 30 + 17 * attempt && read(ready[0], &byte, 1) == 1) ++rows_seen;
    std::this_thread::sleep_for(std::chrono::microseconds(300 * attempt));
    REQUIRE(kill(child, SIGKILL) == 0);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    while (read(ready[0], &byte, 1) == 1) ++rows_seen;  // rows flushed before the kill landed
    close(ready[0]);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);

    INFO("attempt " << attempt << ": " << rows_seen << " rows reported flushed");
    const TrajectoryFile file = read_trajectories(path);
    CHECK(file.rows >= rows_seen);
    REQUIRE(static_cast<std::int64_t>(file.episodes.size()) == file.rows);
    for (std::size_t i = 0; i < file.episodes.size(); ++i) {
      const Episode expected = synthetic(static_cast<int>(i));
      if (file.episodes[i].tokens != expected.tokens ||
          file.episodes[i].source != expected.source) {
        FAIL("row " << i << " of " << file.episodes.size() << " is damaged");
      }
    }
    if (have_h5dump()) {
      const long long rows = h5dump_rows(path, "/episodes/tokens");
      CHECK(rows >= file.rows);
      int dump_status = 0;
      const std::string dump = run_command(
          std::string(SPARSERL_H5DUMP_PATH) + " -d /episodes/source '" + path.string() + "'",
          dump_status);
      CHECK(dump_status == 0);
      CHECK_THAT(dump,
                 sparserl::testing::has_substring("episode " + std::to_string(file.rows - 1)));
    }
  }
}

TEST_CASE("appending continues a trajectory file of the same vocabulary", "[env][trajectory]") {
  const auto dir = sparserl::testing::scratch_dir("trajectory_append");
  const auto path = dir / "run.h5";
  {
    TrajectoryWriter writer(path, file_info("first"));
    for (int i = 0; i < 5; ++i) writer.append(synthetic(i));
  }
  {
    TrajectoryWriter writer(path, file_info("second"), true);
    CHECK(writer.rows() == 5);
    for (int i = 5; i < 8; ++i) writer.append(synthetic(i));
    CHECK(writer.rows() == 8);
  }
  const TrajectoryFile file = read_trajectories(path);
  REQUIRE(file.episodes.size() == 8);
  CHECK(file.run_ids[4] == "first");
  CHECK(file.run_ids[5] == "second");
  CHECK(file.episodes[7].source == "episode 7\nline two");
  TrajectoryFileInfo other = file_info("third");
  other.vocabulary_digest = std::string(64, 'a');
  CHECK_THROWS_WITH(TrajectoryWriter(path, other, true),
                    sparserl::testing::has_substring("refusing to append"));
  CHECK_THROWS_AS(read_trajectories(dir / "missing.h5"), TrajectoryError);
}

TEST_CASE("docs/trajectories.md documents every column", "[env][trajectory][docs]") {
  const std::string doc =
      fixtures::read_bytes(sparserl::testing::source_dir() / "docs" / "trajectories.md");
  for (const ColumnInfo& c : trajectory_columns()) {
    INFO(c.name);
    CHECK_THAT(doc, sparserl::testing::has_substring("`" + c.name + "`"));
  }
}
