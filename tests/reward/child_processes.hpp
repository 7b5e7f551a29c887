// The processes of this test process as /proc shows them, for the tests that check that workers
// (and what they spawned) are gone: a process's state and parent from /proc/PID/stat, and the
// children of this process, zombies included.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "catch.hpp"

namespace sparserl::reward::testing {

struct ProcessStat {
  char state = 0;  // 'R', 'S', 'Z' (a zombie: exited, not yet waited for), ...
  pid_t parent = 0;
};

// nullopt when the process does not exist (any more).
inline std::optional<ProcessStat> process_stat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return std::nullopt;
  // "PID (COMMAND) STATE PPID ...": the command may hold spaces and parentheses.
  const auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return std::nullopt;
  std::istringstream rest(stat.substr(close + 2));
  ProcessStat out;
  if (!(rest >> out.state >> out.parent)) return std::nullopt;
  return out;
}

// The processes whose parent is this process, zombies included.
inline std::set<pid_t> children_of_self() {
  std::set<pid_t> out;
  const pid_t self = ::getpid();
  DIR* dir = ::opendir("/proc");
  REQUIRE(dir != nullptr);
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::stol(name));
    if (const auto stat = process_stat(pid); stat && stat->parent == self) out.insert(pid);
  }
  ::closedir(dir);
  return out;
}

}  // namespace sparserl::reward::testing
