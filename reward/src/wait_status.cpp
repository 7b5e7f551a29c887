// describe_wait_status (worker_pool.hpp): how a worker's end reads in the pool's messages -
// "killed by signal 11 (SIGSEGV)", "exited with status 3" - with every signal named from glibc's
// table (2.32+), not only the usual ones.
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include <string>

#include "sparserl/reward/worker_pool.hpp"

namespace sparserl::reward {

namespace {

// "SIGSEGV" for 11; "" for a number that names no signal.
std::string signal_name(int sig) {
  const char* abbreviation = ::sigabbrev_np(sig);
  return abbreviation == nullptr ? std::string() : "SIG" + std::string(abbreviation);
}

}  // namespace

std::string describe_wait_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    std::string out = "killed by signal " + std::to_string(sig);
    if (auto name = signal_name(sig); !name.empty()) out += " (" + std::string(name) + ")";
    return out;
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "wait status " + std::to_string(status);
}

}  // namespace sparserl::reward
