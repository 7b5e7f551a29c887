// HierarchicalReward on a table of evaluations: every error kind at the stage it happens, the three
// speed shapes, the penalty, the clip, the compile-only case without a GPU (and its one notice), and
// config validation.
#include "sparserl/reward/reward.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "test_support.hpp"

using namespace sparserl::reward;
using sparserl::testing::has_substring;

namespace {

EvalResult result(ErrorKind error, Stage stage, bool compiled, bool gpu = true) {
  EvalResult r;
  r.error = error;
  r.stage = stage;
  r.compiled = compiled;
  r.gpu_available = gpu;
  return r;
}

EvalResult timed(double speedup) {
  EvalResult r = result(ErrorKind::none, Stage::time, true);
  r.correct = true;
  r.timed = true;
  r.timing.speedup = speedup;
  return r;
}

}  // namespace

TEST_CASE("the reward table with the default config", "[reward][reward_formula]") {
  struct Row {
    const char* what;
    EvalResult result;
    double total;
    bool compiled, tested, correct;
  };
  EvalResult compile_only = result(ErrorKind::none, Stage::compile, true);  // --compile-only
  EvalResult correct_untimed = result(ErrorKind::none, Stage::check, true);
  correct_untimed.correct = true;
  const Row rows[] = {
      {"unreadable directives", result(ErrorKind::bad_program, Stage::parse, false), -0.5, false,
       false, false},
      {"static check", result(ErrorKind::static_check, Stage::static_check, false), -0.5, false,
       false, false},
      {"compile error", result(ErrorKind::compile_error, Stage::compile, false), -0.5, false, false,
       false},
      {"compile worker timeout", result(ErrorKind::timeout, Stage::compile, false), -0.5, false,
       false, false},
      {"compile worker crash", result(ErrorKind::crash, Stage::compile, false), -0.5, false, false,
       false},
      {"smem over the limit before compiling",
       result(ErrorKind::resource_limit, Stage::static_check, false), -0.7, false, false, false},
      {"registers over the limit after compiling",
       result(ErrorKind::resource_limit, Stage::compile, true), 0.3, true, false, false},
      {"launch error", result(ErrorKind::launch_error, Stage::compile, true), 0.0, true, true,
       false},
      {"illegal address", result(ErrorKind::illegal_address, Stage::compile, true), 0.0, true, true,
       false},
      {"GPU worker timeout", result(ErrorKind::timeout, Stage::run, true), 0.0, true, true, false},
      {"GPU worker crash", result(ErrorKind::crash, Stage::run, true), 0.0, true, true, false},
      {"wrong answer", result(ErrorKind::wrong_answer, Stage::run, true), 0.0, true, true, false},
      {"unwritten output", result(ErrorKind::unwritten_output, Stage::run, true), 0.0, true, true,
       false},
      {"input mutated", result(ErrorKind::input_mutated, Stage::run, true), 0.0, true, true, false},
      {"compiled, not tested (--compile-only)", compile_only, 0.5, true, false, false},
      {"correct, not timed", correct_untimed, 1.0, true, true, true},
      {"correct, as fast as cuSPARSE", timed(1.0), 1.0, true, true, true},
      {"correct, 1.5x", timed(1.5), 1.1, true, true, true},
      {"correct, 0.5x", timed(0.5), 0.9, true, true, true},
      {"correct, 100x (clipped)", timed(100.0), 3.0, true, true, true},
      {"correct, bogus speedup 0", timed(0.0), 1.0, true, true, true},
      {"correct, bogus speedup NaN", timed(std::nan("")), 1.0, true, true, true},
  };
  const HierarchicalReward reward;
  for (const Row& row : rows) {
    INFO(row.what);
    const RewardBreakdown b = reward.breakdown(row.result);
    INFO(b.str());
    CHECK(b.total == Approx(row.total).margin(1e-12));
    CHECK(reward(row.result) == b.total);
    CHECK(b.compiled == row.compiled);
    CHECK(b.tested == row.tested);
    CHECK(b.correct == row.correct);
    CHECK(b.unclipped == Approx(b.compile + b.test + b.efficiency - b.penalty));
  }
}

TEST_CASE("the breakdown names each term", "[reward][reward_formula]") {
  const RewardBreakdown b = HierarchicalReward().breakdown(timed(1.5));
  CHECK(b.compile == 0.5);
  CHECK(b.test == 0.5);
  CHECK(b.efficiency == Approx(0.1));
  CHECK(b.penalty == 0);
  CHECK(b.speedup == 1.5);
  CHECK_THAT(b.str(), has_substring("total=1.1 compile=0.5 test=0.5 efficiency=0.1"));
  const RewardBreakdown clipped = HierarchicalReward().breakdown(timed(100.0));
  CHECK(clipped.unclipped == Approx(1.0 + 0.2 * 99));
  CHECK_THAT(clipped.str(), has_substring("clipped from"));
}

TEST_CASE("the speed shapes", "[reward][reward_formula]") {
  RewardConfig log2;
  log2.shape = SpeedShape::log2;
  CHECK(HierarchicalReward(log2)(timed(4.0)) == Approx(1.0 + 0.2 * 2));
  CHECK(HierarchicalReward(log2)(timed(0.5)) == Approx(1.0 - 0.2));
  CHECK(HierarchicalReward(log2).shape(1.0) == 0);

  RewardConfig tiers;
  tiers.shape = SpeedShape::tiers;
  const HierarchicalReward tiered(tiers);
  CHECK(tiered.shape(0.9) == 0);
  CHECK(tiered.shape(1.0) == 1);
  CHECK(tiered.shape(1.49) == 1);
  CHECK(tiered.shape(1.5) == 2);
  CHECK(tiered.shape(7.0) == 3);
  CHECK(tiered(timed(1.6)) == Approx(1.0 + 0.2 * 2));

  // CUDA Agent's scale: -1 wrong, 1 correct, 2 faster than one baseline, 3 faster than both.
  RewardConfig agent;
  agent.compile_pass = 0;
  agent.compile_fail = -1;
  agent.test_pass = 1;
  agent.test_fail = -1;
  agent.r_eff = 1;
  agent.r_pen = 0;
  agent.shape = SpeedShape::tiers;
  agent.tiers = {{1.0, 1.0}, {1.3, 2.0}};
  agent.clip_min = -1;
  agent.clip_max = 3;
  const HierarchicalReward ca(agent);
  CHECK(ca(result(ErrorKind::wrong_answer, Stage::run, true)) == -1);
  CHECK(ca(timed(0.8)) == 1);
  CHECK(ca(timed(1.1)) == 2);
  CHECK(ca(timed(1.4)) == 3);
  CHECK(parse_speed_shape("log2") == SpeedShape::log2);
  CHECK_FALSE(parse_speed_shape("sqrt").has_value());
}

TEST_CASE("without a GPU the reward is the compile stage alone", "[reward][reward_formula]") {
  const HierarchicalReward reward;
  const EvalResult compiled = result(ErrorKind::no_gpu, Stage::compile, true, false);
  const RewardBreakdown b = reward.breakdown(compiled);
  CHECK(b.compile_only);
  CHECK(b.total == 0.5);
  CHECK(b.test == 0);
  CHECK(reward(result(ErrorKind::none, Stage::compile, true, false)) == 0.5);
  CHECK(reward(result(ErrorKind::compile_error, Stage::compile, false, false)) == -0.5);
  CHECK(reward(result(ErrorKind::resource_limit, Stage::compile, true, false)) == Approx(0.3));
  // A result claiming correctness without a GPU earns nothing beyond the compile stage.
  EvalResult claims = timed(5.0);
  claims.gpu_available = false;
  CHECK(reward(claims) == 0.5);
}

TEST_CASE("reward configs are validated", "[reward][reward_formula]") {
  RewardConfig bad;
  bad.clip_min = 2;
  bad.clip_max = 1;
  CHECK_THROWS_WITH(HierarchicalReward(bad), has_substring("clip_min"));
  RewardConfig tiers;
  tiers.shape = SpeedShape::tiers;
  tiers.tiers = {{1.5, 1}, {1.2, 2}};
  CHECK_THROWS_WITH(HierarchicalReward(tiers), has_substring("ascending"));
  tiers.tiers.clear();
  CHECK_THROWS_WITH(HierarchicalReward(tiers), has_substring("at least one tier"));
  RewardConfig nan;
  nan.r_eff = std::nan("");
  CHECK_THROWS_WITH(HierarchicalReward(nan), has_substring("finite"));
  CHECK_FALSE(RewardConfig{}.validate().has_value());
}

namespace {

// The child's work for compile_only_stderr: score two results without a GPU, after calling
// compile_only_notice_given() first when SPARSERL_NOTICE_TOLD=1. Hidden: it runs only when asked
// for by name, in a process of its own.
void score_without_gpu_twice() {
  const char* told = std::getenv("SPARSERL_NOTICE_TOLD");
  if (told != nullptr && std::string(told) == "1") sparserl::reward::compile_only_notice_given();
  sparserl::reward::EvalResult r;
  r.stage = sparserl::reward::Stage::compile;
  r.compiled = true;
  r.gpu_available = false;
  const sparserl::reward::HierarchicalReward reward;
  (void)reward.breakdown(r);
  (void)reward.breakdown(r);
  std::fflush(stderr);
}

// What a fresh process writes on stderr while scoring two results without a GPU, after calling
// compile_only_notice_given() first when `told`. The notice's once-flag is per process, and this
// process may have given it already (other test cases): the child is this test executable
// started anew (exec, not only fork), running the hidden case below.
std::string compile_only_stderr(bool told) {
  char path[] = "/tmp/sparserl-reward-notice-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(fd, 2);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, 1);
    ::setenv("SPARSERL_NOTICE_TOLD", told ? "1" : "0", 1);
    const char* argv[] = {"reward_tests", "[.compile_only_notice_child]", nullptr};
    ::execv("/proc/self/exe", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(fd);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  ::unlink(path);
  return text.str();
}

}  // namespace

TEST_CASE("the child process of the compile-only notice test", "[.compile_only_notice_child]") {
  score_without_gpu_twice();
}

TEST_CASE("without a GPU the reward says so once, or not at all when the caller already did",
          "[reward]") {
  const std::string first = compile_only_stderr(false);
  CHECK(first.find("no GPU available") != std::string::npos);
  CHECK(first.find("no GPU available") == first.rfind("no GPU available"));  // once
  CHECK(compile_only_stderr(true).empty());
}
