// SIGINT, SIGTERM and SIGHUP as a request to stop, so a run that is interrupted (Ctrl-C, `kill`, a
// batch scheduler's TERM, the terminal or ssh session it ran in going away) finishes its current
// step, writes what it has, and leaves run.json saying "interrupted" instead of dying mid-write.
// The handler does the only thing a signal handler may safely do, setting a flag; the training loop
// polls requested() and returns. A second signal of the same kind while the first is still pending
// restores the default action and re-raises it, so a user who presses Ctrl-C twice gets the process
// killed at once. The previous handlers come back when the StopSignals is destroyed. One
// StopSignals at a time per process. SIGHUP is left alone where it was ignored when the StopSignals
// was made: `nohup` asked the run to outlive its terminal.
#pragma once

namespace sparserl::experiments {

class StopSignals {
 public:
  StopSignals();   // installs the handlers; std::logic_error if another StopSignals is alive
  ~StopSignals();  // restores the handlers that were there before
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // True once SIGINT, SIGTERM or SIGHUP arrived (or request() was called).
  [[nodiscard]] bool requested() const;
  // The signal that asked to stop (SIGINT, SIGTERM, SIGHUP), 0 for request() or none.
  [[nodiscard]] int signal() const;
  // Asks to stop from inside the program (a budget ran out, a test).
  void request();
};

// The name of a stop signal ("SIGINT", "SIGTERM", "SIGHUP"); nullptr for any other number.
const char* stop_signal_name(int sig);

}  // namespace sparserl::experiments
