// `sparserl` as a child process, for the tests that run the command line as a user does
// (train_test.cpp, hf_train_test.cpp): start it with its output to a log, wait for it with a time
// limit or stop it as Ctrl-C does, read the log.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "sparserl/experiments/checkpoints.hpp"
#include "test_support.hpp"

namespace sparserl::testing {

inline bool wait_for(const std::function<bool()>& condition, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

// Starts `sparserl ARGS...` with stdout and stderr to LOG.
inline pid_t start_cli(const std::vector<std::string>& args, const std::filesystem::path& log) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::close(fd);
  }
  std::vector<std::string> argv = {SPARSERL_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (std::string& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  ::execv(raw[0], raw.data());
  ::_exit(127);
}

// The exit status of a child, or -1 (after killing it) when it outlives `limit`.
inline int finish(pid_t pid, std::chrono::seconds limit) {
  int status = 0;
  if (!wait_for([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, limit)) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Waits (up to two minutes) until `reached` holds for the running `sparserl` child, then stops it
// as Ctrl-C does; its exit code (130 for a clean stop). The test fails when it is never reached.
inline int interrupt_when(pid_t pid, const std::function<bool()>& reached) {
  const bool ready = wait_for(reached, std::chrono::seconds(120));
  if (!ready) ::kill(pid, SIGKILL);
  REQUIRE(ready);
  ::kill(pid, SIGINT);
  return finish(pid, std::chrono::seconds(60));
}

// A log's text, or "" while the child has not written it (INFO lines print what there is).
inline std::string read_if_present(const std::filesystem::path& file) {
  return std::filesystem::exists(file) ? sparserl::testing::read_bytes(file) : std::string();
}

// Stops the running `sparserl train` child as Ctrl-C does once its run under RUNS has saved a
// checkpoint of the rl stage; its exit code (130 for a clean stop), and that run's folder in `run`.
inline int interrupt_in_rl(pid_t pid, const std::filesystem::path& runs,
                           std::filesystem::path& run) {
  namespace fs = std::filesystem;
  return interrupt_when(pid, [&] {
    std::error_code ec;
    if (!fs::exists(runs, ec)) return false;
    for (const fs::directory_entry& e : fs::directory_iterator(runs, ec)) {
      if (e.path().filename().string().front() == '.') continue;
      run = e.path();
      for (const experiments::CheckpointInfo& c :
           experiments::CheckpointStore(run / "checkpoints").list()) {
        if (read_if_present(c.dir / "stage.json").find("\"rl\"") != std::string::npos) return true;
      }
    }
    return false;
  });
}

}  // namespace sparserl::testing
