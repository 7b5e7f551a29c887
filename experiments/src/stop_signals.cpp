// Signal handlers that only set a flag (stop_signals.hpp). The flag is a lock-free atomic, which a
// handler may touch; everything else happens in the loop that polls it.
#include "sparserl/experiments/stop_signals.hpp"

#include <signal.h>

#include <atomic>
#include <stdexcept>

namespace sparserl::experiments {
namespace {

std::atomic<int> g_stop_signal{0};  // the signal number, or -1 for request()
std::atomic<bool> g_installed{false};
struct sigaction g_previous_int {};
struct sigaction g_previous_term {};
struct sigaction g_previous_hup {};
bool g_hup_taken = false;  // SIGHUP was not ignored (nohup) when the handlers were installed

static_assert(std::atomic<int>::is_always_lock_free, "a signal handler needs a lock-free flag");

extern "C" void on_stop_signal(int sig) {
  int expected = 0;
  if (!g_stop_signal.compare_exchange_strong(expected, sig) && expected == sig) {
    // The same signal again: the user insists. Die the default way (async-signal-safe calls only).
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
    ::raise(sig);
  }
}

}  // namespace

StopSignals::StopSignals() {
  bool expected = false;
  if (!g_installed.compare_exchange_strong(expected, true)) {
    throw std::logic_error("StopSignals: another instance is already installed");
  }
  g_stop_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags =
      SA_RESTART;  // blocking reads and writes resume; the loop checks the flag between steps
  ::sigaction(SIGINT, &sa, &g_previous_int);
  ::sigaction(SIGTERM, &sa, &g_previous_term);
  ::sigaction(SIGHUP, nullptr, &g_previous_hup);
  g_hup_taken = g_previous_hup.sa_handler != SIG_IGN;
  if (g_hup_taken) ::sigaction(SIGHUP, &sa, nullptr);
}

StopSignals::~StopSignals() {
  ::sigaction(SIGINT, &g_previous_int, nullptr);
  ::sigaction(SIGTERM, &g_previous_term, nullptr);
  if (g_hup_taken) ::sigaction(SIGHUP, &g_previous_hup, nullptr);
  g_installed.store(false);
}

bool StopSignals::requested() const { return g_stop_signal.load() != 0; }

int StopSignals::signal() const {
  const int s = g_stop_signal.load();
  return s > 0 ? s : 0;
}

const char* stop_signal_name(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : nullptr;
}

void StopSignals::request() {
  int expected = 0;
  g_stop_signal.compare_exchange_strong(expected, -1);
}

}  // namespace sparserl::experiments
