// posix_spawnp with a pipe, a poll loop and a deadline (subprocess.hpp).
#include "subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>

extern char** environ;

namespace sparserl::experiments::detail {
namespace {

constexpr std::size_t kMaxOutput = 1 << 20;

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string find_program(const std::string& name) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return is_executable_file(name) ? name : std::string();
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (is_executable_file(candidate)) return candidate;
  }
  return {};
}

ProcessOutcome run_process(const std::vector<std::string>& argv,
                           std::chrono::milliseconds timeout) {
  ProcessOutcome outcome;
  if (argv.empty()) {
    outcome.error = "no program given";
    return outcome;
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    outcome.error = std::string("pipe: ") + std::strerror(errno);
    return outcome;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so a timeout can kill everything it started; default signal handling, so
  // a parent's SIG_IGN or handlers do not leak into it.
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGPIPE);
  sigset_t no_mask;
  sigemptyset(&no_mask);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setsigmask(&attr, &no_mask);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    outcome.error = "cannot start " + argv[0] + ": " + std::strerror(rc);
    return outcome;
  }
  outcome.started = true;

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  bool open = true;
  while (open) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      outcome.timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got > 0) {
      if (outcome.output.size() < kMaxOutput)
        outcome.output.append(buf, static_cast<std::size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      open = false;
    }
  }
  ::close(fds[0]);
  if (outcome.timed_out) ::kill(-pid, SIGKILL);

  int status = 0;
  while (true) {
    const pid_t w = ::waitpid(pid, &status, outcome.timed_out ? 0 : WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      outcome.error = std::string("waitpid: ") + std::strerror(errno);
      return outcome;
    }
    if (w == 0) {
      // The output closed but the child has not exited yet: wait for it until the deadline.
      if (std::chrono::steady_clock::now() >= deadline) {
        outcome.timed_out = true;
        ::kill(-pid, SIGKILL);
      } else {
        ::usleep(2000);
      }
    }
  }
  if (WIFEXITED(status)) {
    outcome.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    outcome.error = std::string("killed by signal ") + std::to_string(WTERMSIG(status));
  }
  if (outcome.timed_out)
    outcome.error = "timed out after " + std::to_string(timeout.count()) + " ms";
  return outcome;
}

}  // namespace sparserl::experiments::detail
