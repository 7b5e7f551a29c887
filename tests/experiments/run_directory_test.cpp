// Run directories: the layout and name, distinct directories for runs started in the same second,
// run.json's facts and its round trip, the config read back for resume, the outcome of a run
// (completed, failed), and a child process stopped by a real SIGINT, SIGTERM or SIGHUP that leaves
// run.json saying "interrupted", a readable metrics.jsonl and a checkpoint to resume from.
#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/experiments/run_directory.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "catch.hpp"
#include "sparserl/experiments/metrics.hpp"
#include "sparserl/reward/protocol.hpp"
#include "test_support.hpp"

using namespace sparserl::experiments;
using namespace sparserl::testing;
namespace fs = std::filesystem;

namespace {

Config config_for(const fs::path& output_dir, const std::string& name = "unit test",
                  std::int64_t seed = 42) {
  Config c;
  c.set("experiment.output_dir", Value(output_dir.string()));
  c.set("experiment.name", Value(name));
  c.set("experiment.seed", Value(seed));
  c.set("experiment.description", Value(std::string("a run made by run_directory_test")));
  c.set("checkpoints.keep_last", Value(std::int64_t{2}));
  return c;
}

std::chrono::system_clock::time_point fixed_time() {
  return std::chrono::system_clock::from_time_t(1710430212) +
         std::chrono::milliseconds(345);  // 2024-03-14T15:30:12.345Z
}

bool wait_for(const std::function<bool()>& condition,
              std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

int wait_child(pid_t pid) {
  int status = 0;
  const bool done = wait_for([&] { return ::waitpid(pid, &status, WNOHANG) == pid; });
  if (!done) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL("the child did not exit in time");
  }
  return status;
}

// The training loop a runner would have: log a step, checkpoint every other step, until stopped.
void training_loop(const RunDirectory& run, const StopSignals& stop) {
  MetricsWriter metrics(run.metrics_path());
  CheckpointStore checkpoints = run.checkpoints();
  for (std::int64_t step = 1; !stop.requested(); ++step) {
    metrics.append(step, "rl", {{"reward/mean", 0.01 * static_cast<double>(step)}});
    if (step % 2 == 0) {
      checkpoints.save(step, {{"reward/mean", 0.01 * static_cast<double>(step)}},
                       [](const fs::path& d) { std::ofstream(d / "policy.pt") << "weights"; });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

TEST_CASE("a run directory is created whole, with a unique name", "[experiments][run]") {
  const fs::path out = scratch_dir("run_create") / "runs";
  const Config config = config_for(out, "unit test/x");
  RunStart start;
  start.command = "sparserl train quickstart.toml --set experiment.seed=42";
  start.seeds = {{"env", 43}};
  start.libtorch_version = "1.13.1";
  start.now = fixed_time();
  const RunDirectory a = RunDirectory::create(config, start);
  const RunDirectory b = RunDirectory::create(config, start);  // the same second

  CHECK(run_directory_name("unit test/x", 42, fixed_time()) == "unit_test_x__42__20240314T153012Z");
  CHECK(run_directory_name(".hidden", 0, fixed_time()) == "_hidden__0__20240314T153012Z");
  CHECK(a.root() == out / "unit_test_x__42__20240314T153012Z");
  CHECK(b.root() == out / "unit_test_x__42__20240314T153012Z-2");
  for (const fs::path& p :
       {a.config_path(), a.run_info_path(), a.metrics_path(), a.checkpoints_dir(), a.plots_dir()}) {
    CHECK(fs::exists(p));
  }
  CHECK_FALSE(fs::exists(a.trajectories_path()));  // reserved for env's recorder
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(out)) names.insert(e.path().filename().string());
  CHECK(names.size() == 2);  // no temporary folders left behind

  // The resolved config reads back equal.
  CHECK(a.config() == config);
  CHECK(a.config({"experiment.seed=7"}).integer("experiment.seed") == 7);

  const RunInfo info = a.info();
  CHECK(info.run_id == a.run_id());
  CHECK(info.experiment == "unit test/x");
  CHECK(info.description == "a run made by run_directory_test");
  CHECK(info.command == start.command);
  CHECK(info.status == RunStatus::running);
  CHECK(info.start_time == "2024-03-14T15:30:12.345Z");
  CHECK(info.end_time.empty());
  CHECK(info.seeds ==
        std::vector<std::pair<std::string, std::uint64_t>>{{"experiment", 42}, {"env", 43}});
  CHECK(info.gpu.name == "none");
  CHECK(info.gpu.driver_version == "none");
  CHECK(info.versions.libtorch == "1.13.1");
  CHECK(std::regex_match(info.versions.cuda_toolkit, std::regex(R"(\d+\.\d+)")));
  CHECK(std::regex_match(info.versions.nvrtc, std::regex(R"(\d+\.\d+)")));
  CHECK(std::regex_match(info.versions.cusparse, std::regex(R"(\d+\.\d+\.\d+)")));
  CHECK(info.host.cpu_cores > 0);
  CHECK(info.host.host_name != "unknown");
  CHECK(info.host.os.find("Linux") != std::string::npos);
}

TEST_CASE("run.json round-trips and records the GPU the evaluator saw", "[experiments][run]") {
  const fs::path dir = scratch_dir("run_info_json");
  sparserl::reward::GpuInfo gpu;
  sparserl::reward::GpuDevice device;
  device.name = "NVIDIA H100 80GB HBM3";
  device.arch = "sm_90";
  gpu.devices = {device, device};
  gpu.driver_version = 12080;
  gpu.runtime_version = 13000;
  const GpuSummary s = summarize_gpu(gpu);
  CHECK(s.name == "NVIDIA H100 80GB HBM3");
  CHECK(s.count == 2);
  CHECK(s.arch == "sm_90");
  CHECK(s.driver_version == "12.8");
  CHECK(s.runtime_version == "13.0");

  RunInfo info;
  info.run_id = "x__1__20240314T153012Z";
  info.gpu = s;
  // Seeds use all 64 bits: one above INT64_MAX stays exact (nlohmann keeps uint64).
  info.seeds = {{"experiment", 9200000000000000000ULL}, {"agent", 18446744073709551615ULL}};
  info.start_time = iso_utc(fixed_time());
  info.end_time = iso_utc(fixed_time() + std::chrono::seconds(90));
  info.status = RunStatus::failed;
  info.error = "out of memory \"here\"\n";
  info.git.commit = std::string(40, 'a');
  info.git.dirty = true;
  info.extra["steps"] = 12;
  info.resumed_at = {"2024-03-14T16:00:00.000Z"};
  write_run_info(dir / "run.json", info);
  const RunInfo back = read_run_info(dir / "run.json");
  CHECK(back.to_json() == info.to_json());
  CHECK(back.git.dirty == std::optional<bool>(true));
  CHECK(back.seeds[0].second == 9200000000000000000ULL);
  CHECK(back.seeds[1].second == 18446744073709551615ULL);
  CHECK(parse_iso_utc(back.end_time) - parse_iso_utc(back.start_time) == std::chrono::seconds(90));

  std::ofstream(dir / "bad.json")
      << "{\"format\": \"sparserl-run\", \"format_version\": 1, \"status\": \"paused\"}";
  CHECK_THROWS_WITH(read_run_info(dir / "bad.json"),
                    has_substring("bad.json: member 'status': unknown run status 'paused'"));
  std::ofstream(dir / "bad.json") << "{\"format\": \"sparserl-run\", \"format_version\": 1, "
                                     "\"status\": \"running\", \"host\": {\"cpu_cores\": \"8\"}}";
  CHECK_THROWS_WITH(read_run_info(dir / "bad.json"),
                    has_substring("member 'host.cpu_cores': expected an integer"));
  std::ofstream(dir / "bad.json") << "{\"status\": \"running\"}";
  CHECK_THROWS_WITH(read_run_info(dir / "bad.json"),
                    has_substring("bad.json: missing member 'format'"));
  std::ofstream(dir / "bad.json") << "{\"format\": \"sparserl-run\",";
  CHECK_THROWS_WITH(read_run_info(dir / "bad.json"), has_substring("bad.json:1:"));
  CHECK_THROWS_WITH(parse_iso_utc("yesterday"), has_substring("'yesterday' is not a UTC time"));
}

TEST_CASE("git commit and dirty flag, or unknown outside a checkout", "[experiments][run]") {
  char tmpl[] = "/tmp/sparserl-not-git-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const GitState none = query_git(tmpl);
  sparserl::datasets::remove_tree(tmpl);
  CHECK(none.commit == "unknown");
  CHECK_FALSE(none.dirty.has_value());
  CHECK(query_git("").commit == "unknown");

  const fs::path source = sparserl::testing::source_dir();
  if (fs::exists(source / ".git") && std::system("git --version > /dev/null 2>&1") == 0) {
    const GitState g = query_git(source);
    CHECK(std::regex_match(g.commit, std::regex("[0-9a-f]{40}")));
    CHECK(g.dirty.has_value());
    CHECK(g.describe.size() >= 7);
  }
}

TEST_CASE("a run that returns is completed, one that throws is failed", "[experiments][run]") {
  const fs::path out = scratch_dir("run_outcome");
  const RunDirectory run = RunDirectory::create(config_for(out));
  CHECK(run.run([](const StopSignals&) {}) == RunStatus::completed);
  RunInfo info = run.info();
  CHECK(info.status == RunStatus::completed);
  CHECK_FALSE(info.end_time.empty());
  CHECK(parse_iso_utc(info.end_time) >= parse_iso_utc(info.start_time));

  run.mark_resumed();
  CHECK(run.info().status == RunStatus::running);
  CHECK(run.info().end_time.empty());
  CHECK(run.info().resumed_at.size() == 1);
  CHECK_THROWS_WITH(
      run.run([](const StopSignals&) { throw std::runtime_error("matrix file vanished"); }),
      has_substring("matrix file vanished"));
  info = run.info();
  CHECK(info.status == RunStatus::failed);
  CHECK(info.error == "matrix file vanished");

  CHECK_THROWS_WITH(RunDirectory::open(out / "absent"), has_substring("absent: not a folder"));
  fs::create_directories(out / "empty");
  CHECK_THROWS_WITH(RunDirectory::open(out / "empty"),
                    has_substring("empty: not a run directory (no config.resolved.toml)"));
  StopSignals first;
  CHECK_FALSE(first.requested());
  first.request();
  CHECK(first.requested());
  CHECK(first.signal() == 0);
  CHECK_THROWS_WITH(StopSignals(), has_substring("already installed"));
}

TEST_CASE("SIGINT, SIGTERM or SIGHUP stops a run cleanly and it resumes", "[experiments][run]") {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    INFO("signal " << sig);
    const fs::path out = scratch_dir(sig == SIGINT    ? "run_sigint"
                                     : sig == SIGTERM ? "run_sigterm"
                                                      : "run_sighup");
    const RunDirectory run = RunDirectory::create(config_for(out));
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int code = 0;
      try {
        const RunDirectory mine = RunDirectory::open(run.root());
        code = mine.run([&](const StopSignals& stop) { training_loop(mine, stop); }) ==
                       RunStatus::interrupted
                   ? 0
                   : 4;
      } catch (...) {
        code = 5;
      }
      ::_exit(code);
    }
    // Let it log and checkpoint a few steps, then send the signal.
    REQUIRE(wait_for([&] { return read_metrics(run.metrics_path()).records.size() >= 6; }));
    ::kill(pid, sig);
    const int status = wait_child(pid);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);

    const RunInfo info = run.info();
    CHECK(info.status == RunStatus::interrupted);
    CHECK(info.error == (sig == SIGINT    ? "stopped by SIGINT"
                         : sig == SIGTERM ? "stopped by SIGTERM"
                                          : "stopped by SIGHUP (its terminal went away)"));
    CHECK_FALSE(info.end_time.empty());
    const MetricsLog log = read_metrics(run.metrics_path());
    CHECK_FALSE(log.truncated_last_line);  // the loop finished its step before stopping
    REQUIRE(log.records.size() >= 6);

    // Resume: reopen, read the config back, continue from the latest checkpoint.
    const RunDirectory again = RunDirectory::open(run.root());
    CHECK(again.config() == config_for(out));
    const auto latest = again.latest_checkpoint();
    REQUIRE(latest);
    CHECK(latest->step % 2 == 0);
    CHECK(latest->step >= 6);
    CHECK(again.checkpoints().list().size() == 2);  // keep_last = 2 from the resolved config
    rewind_metrics(again.metrics_path(), latest->step);
    CHECK(read_metrics(again.metrics_path()).records.back().step == latest->step);
    again.mark_resumed();
    CHECK(again.info().status == RunStatus::running);
  }
}

TEST_CASE("SIGHUP ignored by nohup stays ignored while a run takes the other stops",
          "[experiments][run]") {
  const auto hup_handler = [] {
    struct sigaction now {};
    ::sigaction(SIGHUP, nullptr, &now);
    return now.sa_handler;
  };
  struct sigaction before {};
  ::sigaction(SIGHUP, nullptr, &before);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGHUP, &ignore, nullptr);  // as `nohup` starts a program
  {
    StopSignals stop;
    CHECK(hup_handler() == SIG_IGN);
    struct sigaction term {};
    ::sigaction(SIGTERM, nullptr, &term);
    CHECK(term.sa_handler != SIG_DFL);  // SIGTERM is taken all the same
  }
  struct sigaction deflt {};
  deflt.sa_handler = SIG_DFL;
  sigemptyset(&deflt.sa_mask);
  ::sigaction(SIGHUP, &deflt, nullptr);
  {
    StopSignals stop;
    CHECK(hup_handler() != SIG_DFL);  // a terminal's hang-up is a stop
    CHECK(hup_handler() != SIG_IGN);
  }
  CHECK(hup_handler() == SIG_DFL);  // restored
  ::sigaction(SIGHUP, &before, nullptr);
}

TEST_CASE("a second signal kills a run that does not stop", "[experiments][run]") {
  const fs::path out = scratch_dir("run_second_signal");
  const RunDirectory run = RunDirectory::create(config_for(out));
  const fs::path noticed = out / "noticed";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    try {
      run.run([&](const StopSignals& stop) {
        std::ofstream(out / "started") << "yes";
        bool told = false;
        while (true) {  // a loop that never checks for the stop... except to tell the test it came
          if (stop.requested() && !told) {
            std::ofstream(noticed) << "yes";
            told = true;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
      });
    } catch (...) {
    }
    ::_exit(6);
  }
  REQUIRE(wait_for([&] { return fs::exists(out / "started"); }));
  ::kill(pid, SIGINT);
  REQUIRE(wait_for([&] { return fs::exists(noticed); }));
  ::kill(pid, SIGINT);
  const int status = wait_child(pid);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
  CHECK(run.info().status ==
        RunStatus::running);  // nothing could record it: the process was killed
}
