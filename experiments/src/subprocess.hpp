// Running a helper program (git, gnuplot) with a deadline, internal to sparserl::experiments. The
// child is started with posix_spawnp (safe in a process that already runs threads, unlike fork +
// exec of arbitrary code), gets /dev/null as stdin, its own process group (so a timeout kills
// whatever it started too) and inherits no descriptors beyond stdout and stderr, which come back
// merged.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace sparserl::experiments::detail {

struct ProcessOutcome {
  bool started = false;    // false: the program could not be started (see `error`)
  bool timed_out = false;  // killed at the deadline
  int exit_code = -1;      // the exit status; -1 when killed by a signal or not started
  std::string output;      // stdout and stderr together (at most 1 MiB kept)
  std::string error;       // why it did not start, or which signal ended it
};

ProcessOutcome run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

// The program's path when `name` is found on PATH (or is a path to an executable file), else "".
std::string find_program(const std::string& name);

}  // namespace sparserl::experiments::detail
