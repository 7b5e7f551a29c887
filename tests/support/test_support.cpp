// Implements the test helpers declared in test_support.hpp.
#include "test_support.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "sparserl/datasets/file_tree.hpp"

namespace sparserl::testing {

void skip(std::string_view why) {
  std::cout << "SKIPPED: " << why << std::endl;
  std::fflush(nullptr);
  std::_Exit(kSkipExitCode);
}

std::filesystem::path shared_dir() {
  std::filesystem::path dir = SPARSERL_TEST_SHARED_DIR;
  if (const char* env = std::getenv("SPARSERL_SHARED_DIR"); env != nullptr && *env != '\0') {
    dir = env;
  }
  if (!std::filesystem::is_directory(dir / "matrices")) {
    skip("the shared folder with matrices is absent: " + dir.string());
  }
  return dir;
}

std::filesystem::path shared_matrices_dir() { return shared_dir() / "matrices"; }

namespace {

// A scratch folder is one process's at a time: the same test binary run twice at once (a run by
// hand beside CTest's) emptied each other's folders mid-test, and the cases failed with messages
// about missing files; CTest's cases of one source file share a store's folder (env_store) and
// emptied it under each other at -j2. The folder's lock file (NAME.lock beside it, flock'd for
// the process's life, kept across a case's sections) makes a second process wait for it, up to
// 300 s (SPARSERL_SCRATCH_WAIT_S), and then fail naming the folder (no two processes wait on
// each other for ever).
std::chrono::seconds scratch_wait() {
  const char* env = std::getenv("SPARSERL_SCRATCH_WAIT_S");
  return std::chrono::seconds(env != nullptr && *env != '\0' ? std::atoi(env) : 300);
}

void hold_scratch(const std::filesystem::path& dir) {
  static std::mutex mutex;
  static std::map<std::string, int> held;
  const std::lock_guard<std::mutex> lock(mutex);
  const std::string key = dir.string();
  if (held.count(key) != 0) return;
  const std::string lock_path = key + ".lock";
  const int fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::system_error(errno, std::generic_category(), "cannot open " + lock_path);
  }
  const std::chrono::seconds wait = scratch_wait();
  const auto give_up = std::chrono::steady_clock::now() + wait;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (std::chrono::steady_clock::now() >= give_up) {
      ::close(fd);
      throw std::runtime_error("scratch folder " + key + " is in use by another process for " +
                               std::to_string(wait.count()) +
                               " s (the same test run twice at once?): run one at a time");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  held[key] = fd;
}

}  // namespace

std::filesystem::path scratch_dir(std::string_view test_name) {
  std::string name(test_name);
  for (char& c : name) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!plain) c = '_';
  }
  std::filesystem::path dir = std::filesystem::path(SPARSERL_TEST_BINARY_DIR) / "scratch" / name;
  std::filesystem::create_directories(dir.parent_path());
  hold_scratch(dir);
  sparserl::datasets::remove_tree(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::filesystem::path source_dir() { return SPARSERL_TEST_SOURCE_DIR; }
std::filesystem::path binary_dir() { return SPARSERL_TEST_BINARY_DIR; }

std::string run_command(const std::string& command, int& status) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot start a shell for: " + command);
  std::string output;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  status = ::pclose(pipe);
  return output;
}

CommandResult run_shell(const std::string& command) {
  CommandResult r;
  int status = 0;
  r.output = run_command(command, status);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string quoted(const std::filesystem::path& p) { return shell_quote(p.string()); }

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace sparserl::testing
