// The sandbox on its own: SandboxLimits' key-value form (every key, suffixes, `unlimited`, errors
// that name the key), the per-role plan, the child-side setup applied for real in a forked child,
// and the pool's check of a Hello against the limits it asked for.
#include "sparserl/reward/sandbox.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <string>
#include <utility>

#include "catch.hpp"
#include "test_support.hpp"

using namespace sparserl::reward;
using sparserl::testing::has_substring;

TEST_CASE("SandboxLimits reads every key of the [sandbox] table", "[reward][sandbox]") {
  const SandboxLimits d;
  REQUIRE(d.core_bytes == 0);
  REQUIRE(d.die_with_parent);
  REQUIRE(d.close_descriptors);
  REQUIRE(SandboxLimits::from_key_values({}) == d);

  const SandboxLimits s = SandboxLimits::from_key_values({{"core_bytes", "0"},
                                                          {"cpu_seconds", "120"},
                                                          {"file_size_bytes", "16M"},
                                                          {"open_files", "1K"},
                                                          {"address_space_bytes", "unlimited"},
                                                          {"die_with_parent", "false"},
                                                          {"close_descriptors", "true"},
                                                          {"cpu_affinity", "0,2,4-6"}});
  REQUIRE(s.cpu_seconds == 120);
  REQUIRE(s.file_size_bytes == 16u << 20);
  REQUIRE(s.open_files == 1024);
  REQUIRE(s.address_space_bytes == SandboxLimits::kUnlimited);
  REQUIRE_FALSE(s.die_with_parent);
  REQUIRE(s.cpu_affinity == std::vector<int>{0, 2, 4, 5, 6});
  REQUIRE(SandboxLimits::from_key_values(s.to_key_values()) == s);
  REQUIRE(s.to_key_values().at("address_space_bytes") == "unlimited");
  REQUIRE(s.to_key_values().size() == 8);
}

TEST_CASE("Bad [sandbox] entries name the key and what was expected", "[reward][sandbox]") {
  using Table = std::map<std::string, std::string>;
  const std::pair<Table, const char*> kBad[] = {
      {{{"cpu_secs", "1"}}, "sandbox.cpu_secs: unknown key"},
      {{{"open_files", "many"}}, "sandbox.open_files: expected a non-negative integer"},
      {{{"file_size_bytes", "12X"}}, "sandbox.file_size_bytes"},
      {{{"file_size_bytes", "-1"}}, "got \"-1\""},
      {{{"core_bytes", "99999999999T"}}, "below 2^64"},
      {{{"die_with_parent", "yes"}}, "true or false"},
      {{{"cpu_affinity", "3-1"}}, "sandbox.cpu_affinity"},
      {{{"cpu_seconds", "0"}}, "at least 1"},
  };
  for (const auto& [table, message] : kBad) {
    INFO(table.begin()->first << " = " << table.begin()->second);
    REQUIRE_THROWS_WITH(SandboxLimits::from_key_values(table), has_substring(message));
  }
  REQUIRE_THROWS_WITH(
      SandboxLimits::from_key_values(Table{{"open_files", "4"}}, "evaluator.sandbox"),
      has_substring("evaluator.sandbox.open_files"));
}

TEST_CASE("Only compile workers get an address-space limit; pinning follows the worker index",
          "[reward][sandbox]") {
  SandboxLimits limits;
  limits.cpu_affinity = {3, 5};
  const ChildSandbox compile = plan_child_sandbox(limits, WorkerRole::compile, 1);
  const ChildSandbox gpu = plan_child_sandbox(limits, WorkerRole::gpu, 2);
  REQUIRE(compile.limit_count == 5);
  REQUIRE(gpu.limit_count == 4);
  for (int i = 0; i < gpu.limit_count; ++i) {
    REQUIRE(gpu.limits[static_cast<std::size_t>(i)].resource != RLIMIT_AS);
  }
  REQUIRE(compile.pin_cpu);
  REQUIRE(CPU_ISSET(5, &compile.cpus));
  REQUIRE(CPU_COUNT(&compile.cpus) == 1);
  REQUIRE(CPU_ISSET(3, &gpu.cpus));
  REQUIRE(compile.parent_pid == ::getpid());
  REQUIRE_FALSE(plan_child_sandbox(SandboxLimits{}, WorkerRole::gpu, 0).pin_cpu);
}

TEST_CASE("The child-side setup applies every limit for real", "[reward][sandbox]") {
  SandboxLimits limits;
  limits.cpu_seconds = 33;
  limits.file_size_bytes = 1 << 20;
  limits.open_files = 48;
  limits.address_space_bytes = std::uint64_t{4} << 30;
  const ChildSandbox plan = plan_child_sandbox(limits, WorkerRole::compile, 0);

  // A descriptor without close-on-exec, as a careless host process would leak it.
  const int leaked = ::open("/dev/null", O_RDONLY);
  REQUIRE(leaked > 2);
  ::signal(SIGXFSZ, SIG_IGN);  // an ignored signal must not survive into the worker
  int report[2];
  REQUIRE(::pipe(report) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const char* step = "";
    std::int64_t out[9] = {};
    out[0] = apply_child_sandbox(plan, &step);
    struct rlimit l {};
    ::getrlimit(RLIMIT_CPU, &l);
    out[1] = static_cast<std::int64_t>(l.rlim_cur);
    out[2] = static_cast<std::int64_t>(l.rlim_max);
    ::getrlimit(RLIMIT_FSIZE, &l);
    out[3] = static_cast<std::int64_t>(l.rlim_cur);
    ::getrlimit(RLIMIT_NOFILE, &l);
    out[4] = static_cast<std::int64_t>(l.rlim_cur);
    ::getrlimit(RLIMIT_AS, &l);
    out[5] = static_cast<std::int64_t>(l.rlim_cur);
    out[6] = ::getpgrp() == ::getpid() ? 1 : 0;
    int sig = 0;
    ::prctl(PR_GET_PDEATHSIG, &sig);
    out[7] = sig;
    out[8] = (::fcntl(leaked, F_GETFD) & FD_CLOEXEC) != 0 ? 1 : 0;
    struct sigaction now {};
    ::sigaction(SIGXFSZ, nullptr, &now);
    out[8] += now.sa_handler == SIG_DFL ? 10 : 0;
    (void)!::write(report[1], out, sizeof(out));
    ::_exit(0);
  }
  ::signal(SIGXFSZ, SIG_DFL);
  ::close(leaked);
  ::close(report[1]);
  std::int64_t got[9] = {};
  REQUIRE(::read(report[0], got, sizeof(got)) == static_cast<ssize_t>(sizeof(got)));
  ::close(report[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);

  REQUIRE(got[0] == 0);
  REQUIRE(got[1] == 33);
  REQUIRE(got[2] == 34);  // SIGXCPU first, SIGKILL a second later
  REQUIRE(got[3] == 1 << 20);
  REQUIRE(got[4] == 48);
  REQUIRE(got[5] == std::int64_t{4} << 30);
  REQUIRE(got[6] == 1);        // its own process group
  REQUIRE(got[7] == SIGKILL);  // dies with its parent
  REQUIRE(got[8] == 11);       // the leaked descriptor closes at exec; SIGXFSZ is back to default
}

TEST_CASE("The pool's check of a Hello finds every deviation", "[reward][sandbox]") {
  const SandboxLimits limits;
  Hello good;
  good.role = WorkerRole::compile;
  good.pid = good.pgid = 4242;
  good.parent_death_signal = SIGKILL;
  good.limits = {{"core", 0, 0},
                 {"cpu", limits.cpu_seconds, limits.cpu_seconds + 1},
                 {"fsize", limits.file_size_bytes, limits.file_size_bytes},
                 {"nofile", limits.open_files, limits.open_files},
                 {"as", limits.address_space_bytes, limits.address_space_bytes}};
  good.descriptors = {{0, "socket:[1]"}, {1, "socket:[1]"}, {2, "pipe:[2]"}};
  const SandboxCheck ok = check_sandbox(limits, good);
  REQUIRE(ok.problems.empty());
  REQUIRE(ok.lines.size() >= 7);
  REQUIRE_THAT(ok.lines[0], has_substring("core_bytes 0 -> RLIMIT_CORE 0 ok"));

  Hello bad = good;
  bad.pgid = 1;
  bad.parent_death_signal = 0;
  bad.limits[3].soft = 100000;  // looser than asked
  bad.limits[1].soft = 10;      // stricter: capped, not a problem
  bad.descriptors.push_back({7, "/secret/file"});
  const SandboxCheck found = check_sandbox(limits, bad);
  REQUIRE(found.problems.size() == 4);
  std::string all;
  for (const auto& p : found.problems) all += p + "\n";
  REQUIRE_THAT(all, has_substring("RLIMIT_NOFILE 100000 LOOSER THAN ASKED"));
  REQUIRE_THAT(all, has_substring("own process group"));
  REQUIRE_THAT(all, has_substring("parent-death signal"));
  REQUIRE_THAT(all, has_substring("inherited descriptor 7 -> /secret/file"));

  Hello gpu = good;
  gpu.role = WorkerRole::gpu;
  gpu.limits.pop_back();  // no RLIMIT_AS for GPU workers: not a problem
  REQUIRE(check_sandbox(limits, gpu).problems.empty());
}

TEST_CASE("A worker reads its own limits and descriptors", "[reward][sandbox]") {
  const auto limits = current_limits();
  REQUIRE(limits.size() == 5);
  REQUIRE(limits[0].name == "core");
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  bool listed = false;
  for (const auto& d : open_descriptors())
    listed = listed || (d.fd == fd && d.target == "/dev/null");
  ::close(fd);
  REQUIRE(listed);
  REQUIRE_FALSE(allowed_cpus().empty());
}
