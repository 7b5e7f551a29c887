// `sparserl train CONFIG --gpus N`: N processes of this program on this host, one per GPU, started
// the way torchrun starts them - each with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR=127.0.0.1 and a free MASTER_PORT, and with NVLink multicast off whatever the caller's
// environment says (agents::multicast_off_environment). The launcher forwards SIGINT and SIGTERM to
// every rank once (each stops at a step boundary, as one process does), waits for them all, and
// when one fails stops the others (SIGTERM, then SIGKILL after a grace period) and says which rank
// failed, how, and how its log ends. Rank 0 writes to the launcher's stdout and stderr; rank R > 0
// to LOG_DIR/rank<R>.log.
#pragma once

#include <chrono>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace sparserl::tools {

// The environment ("NAME=VALUE" entries) of rank `rank` of `ranks` on this host: `caller`'s with
// the world's variables and the multicast-off ones set over any the caller had, and OMP_NUM_THREADS
// = max(1, cores / ranks) unless the caller set it (LibTorch's threads of N ranks would otherwise
// each take every core).
std::vector<std::string> rank_environment(const std::vector<std::string>& caller, int rank,
                                          int ranks, int port, int cores);

// A TCP port of 127.0.0.1 that is free now (bound, read back and released).
int free_port();

// `argv` without `option` and its value ("--gpus 2" or "--gpus=2").
std::vector<std::string> without_option(const std::vector<std::string>& argv,
                                        const std::string& option);

struct LaunchPlan {
  std::vector<std::string> argv;  // the program (a path) and its arguments, the same for each rank
  int ranks = 1;
  std::filesystem::path log_dir;  // rank R > 0 writes LOG_DIR/rank<R>.log (made if absent)
  std::chrono::milliseconds grace{15'000};  // after a failure: SIGTERM to the others, then SIGKILL
  std::ostream* notices = nullptr;          // the launcher's own lines (std::cerr when null)
};

// Runs the plan and returns its exit status: rank 0's when every rank ended without failing (an
// interrupted run's 130 included), else the first failing rank's (128 + signal when a signal killed
// it). A rank fails when it ends with another status than 0 (or, after a forwarded stop, than 0,
// 130 and 143).
int launch_ranks(const LaunchPlan& plan);

}  // namespace sparserl::tools
