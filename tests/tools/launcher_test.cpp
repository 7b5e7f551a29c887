// The rank launcher of `sparserl train --gpus N` (tools/sparserl/launcher.hpp), with shell scripts
// for ranks: each rank's environment (the world's variables, NVLink multicast forced off whatever
// the caller set), a failing rank named with its exit status and the end of its log while the
// others are stopped, SIGINT forwarded to every rank exactly once and a hang-up as SIGTERM. Needs
// the learned agents (the multicast variables are theirs).
#include "launcher.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace sparserl::tools;
using sparserl::testing::has_substring;
using sparserl::testing::read_bytes;

namespace {

bool has_entry(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

LaunchPlan shell_plan(const std::string& script, int ranks, const fs::path& dir,
                      std::ostream& notices) {
  LaunchPlan plan;
  plan.argv = {"/bin/sh", "-c", script};
  plan.ranks = ranks;
  plan.log_dir = dir / "logs";
  plan.grace = std::chrono::milliseconds(2000);
  plan.notices = &notices;
  return plan;
}

// The launcher's rank variables (NVLink multicast off) are the learned agents'.
void require_agents() {
#if !SPARSERL_TOOLS_TESTS_HAVE_AGENTS
  sparserl::testing::skip("this build has no learned agents");
#endif
}

}  // namespace

TEST_CASE("each rank's environment is the caller's with its world and multicast off",
          "[tools][launcher]") {
  require_agents();
  const std::vector<std::string> caller = {"PATH=/usr/bin", "NCCL_NVLS_ENABLE=1", "RANK=7",
                                           "TORCH_SYMM_MEM_DISABLE_MULTICAST=0"};
  const std::vector<std::string> env = rank_environment(caller, 1, 4, 29600, 16);
  for (const char* entry :
       {"PATH=/usr/bin", "RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=4",
        "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29600", "NCCL_NVLS_ENABLE=0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST=1", "NVSHMEM_DISABLE_NVLS=1", "OMP_NUM_THREADS=4"}) {
    INFO(entry);
    CHECK(has_entry(env, entry));
  }
  CHECK_FALSE(has_entry(env, "RANK=7"));
  CHECK_FALSE(has_entry(env, "NCCL_NVLS_ENABLE=1"));
  // The caller's own thread count stays; a host with fewer cores than ranks still gets one each.
  CHECK(has_entry(rank_environment({"OMP_NUM_THREADS=2"}, 0, 4, 1, 16), "OMP_NUM_THREADS=2"));
  CHECK(has_entry(rank_environment({}, 0, 4, 1, 2), "OMP_NUM_THREADS=1"));
  CHECK(without_option({"c.toml", "--gpus", "2", "--backend", "gloo"}, "--gpus") ==
        std::vector<std::string>{"c.toml", "--backend", "gloo"});
  CHECK(without_option({"--gpus=4", "c.toml"}, "--gpus") == std::vector<std::string>{"c.toml"});
  CHECK(free_port() > 0);
}

TEST_CASE(
    "every rank starts with its world, and the launcher returns rank 0's "
    "status",
    "[tools][launcher]") {
  require_agents();
  const fs::path dir = sparserl::testing::scratch_dir("launcher_world");
  std::ostringstream notices;
  const std::string script =
      "echo \"$RANK $WORLD_SIZE $LOCAL_RANK $MASTER_ADDR $NCCL_NVLS_ENABLE "
      "$NVSHMEM_DISABLE_NVLS\" > " +
      dir.string() + "/out$RANK; echo log$RANK";
  CHECK(launch_ranks(shell_plan(script, 3, dir, notices)) == 0);
  for (int r = 0; r < 3; ++r) {
    const std::string r_ = std::to_string(r);
    CHECK(read_bytes(dir / ("out" + r_)) == r_ + " 3 " + r_ + " 127.0.0.1 0 1\n");
  }
  // Ranks other than 0 write to their logs; rank 0 to the launcher's own output.
  CHECK(read_bytes(dir / "logs" / "rank2.log") == "log2\n");
  CHECK_FALSE(fs::exists(dir / "logs" / "rank0.log"));
}

TEST_CASE(
    "a failing rank is named with its status and log, and the others are "
    "stopped",
    "[tools][launcher]") {
  require_agents();
  const fs::path dir = sparserl::testing::scratch_dir("launcher_failure");
  std::ostringstream notices;
  // Rank 1 fails at once; rank 0 would run for a minute (and ignores SIGTERM: SIGKILL ends it).
  const std::string script =
      "if [ \"$RANK\" = 1 ]; then echo 'step 3: boom' "
      ">&2; exit 3; fi; trap '' TERM; sleep 60";
  const auto start = std::chrono::steady_clock::now();
  CHECK(launch_ranks(shell_plan(script, 2, dir, notices)) == 3);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  CHECK_THAT(notices.str(), has_substring("rank 1 of 2 failed (exited with status 3)"));
  CHECK_THAT(notices.str(), has_substring("step 3: boom"));
  CHECK_THAT(notices.str(), has_substring((dir / "logs" / "rank1.log").string()));
}

namespace {

// Sends `sent` to the launcher once both ranks are up; each rank traps `trapped` (a shell signal
// name), writes `word` to its file on each one, and stops at its next "step" (a tenth of a second)
// with `exit_code`. Returns the launcher's status; checks that each rank got it once.
int stop_two_ranks(const std::string& name, int sent, const std::string& trapped,
                   const std::string& word, int exit_code) {
  const fs::path dir = sparserl::testing::scratch_dir(name);
  std::ostringstream notices;
  const std::string file = dir.string() + "/got$RANK";
  const std::string script = "stop=0; trap 'echo " + word + " >> " + file + "; stop=1' " + trapped +
                             "; touch " + dir.string() +
                             "/up$RANK; while [ $stop = 0 ]; do sleep 0.1; done; exit " +
                             std::to_string(exit_code);
  const pthread_t launcher = ::pthread_self();
  std::thread send([&] {
    for (int i = 0; i < 200 && !(fs::exists(dir / "up0") && fs::exists(dir / "up1")); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::pthread_kill(launcher, sent);  // taken by the launcher, which blocks it while it runs
  });
  const int status = launch_ranks(shell_plan(script, 2, dir, notices));
  send.join();
  CHECK(read_bytes(dir / "got0") == word + "\n");
  CHECK(read_bytes(dir / "got1") == word + "\n");
  return status;
}

}  // namespace

TEST_CASE("SIGINT reaches every rank once and the run ends with their status",
          "[tools][launcher]") {
  require_agents();
  CHECK(stop_two_ranks("launcher_sigint", SIGINT, "INT", "int", 130) == 130);
}

TEST_CASE("a hang-up stops every rank as SIGTERM does", "[tools][launcher]") {
  require_agents();
  // The terminal or ssh session went away: the ranks, in process groups of their own, get SIGTERM
  // from the launcher once. SIGHUP at its default first, not ignored as under nohup.
  struct sigaction before {};
  struct sigaction deflt {};
  deflt.sa_handler = SIG_DFL;
  sigemptyset(&deflt.sa_mask);
  ::sigaction(SIGHUP, &deflt, &before);
  const int status = stop_two_ranks("launcher_sighup", SIGHUP, "TERM", "term", 143);
  ::sigaction(SIGHUP, &before, nullptr);
  CHECK(status == 143);
}
