// Progress of long work (tune, bench, train) on stderr: what is being done, done / total, the rate
// and the time left, e.g.
//
//   bench  120/400  30.0%  12.3/s  left 0:22  suitesparse-v1/HB/west0067
//
// On a terminal one line is redrawn in place, at most a few times per second. Anywhere else (a log
// file, CI) a full line is printed every `log_interval_s` seconds and once at the end, so logs show
// progress without thousands of lines. The rate is taken over the whole run so far (items of long
// work are uneven; a short window jumps about). Thread-safe: workers may call advance().
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <mutex>
#include <optional>
#include <string>

namespace sparserl::experiments {

struct ProgressOptions {
  // A terminal (redraw in place) or not; nullopt: a terminal when writing to std::cerr / std::clog
  // and stderr is a TTY.
  std::optional<bool> interactive;
  double redraw_interval_s = 0.25;  // terminal: at most 4 redraws per second
  double log_interval_s = 10;       // elsewhere: a line every 10 s
  std::string unit;  // "matrices", "episodes": printed after the rate ("12.3 episodes/s")
  // Seconds on a monotonic clock; tests substitute their own.
  std::function<double()> clock;
};

class Progress {
 public:
  // total <= 0: unknown (no percentage and no time left).
  Progress(std::string label, std::int64_t total, std::ostream& out, ProgressOptions options = {});
  Progress(std::string label, std::int64_t total);  // to std::cerr
  ~Progress();                                      // finish()
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void advance(std::int64_t n = 1, const std::string& note = {});
  void set(std::int64_t done, const std::string& note = {});
  // Prints the final line (a newline ends the redrawn one); later calls do nothing.
  void finish();

  // The current line, without a newline.
  [[nodiscard]] std::string line() const;
  [[nodiscard]] std::int64_t done() const;

 private:
  void maybe_print(bool force);
  std::string line_locked(double now) const;

  std::string label_;
  std::int64_t total_;
  std::ostream& out_;
  ProgressOptions options_;
  bool interactive_;
  mutable std::mutex mutex_;
  std::int64_t done_ = 0;
  std::string note_;
  double start_ = 0;
  double last_print_ = -1e300;
  std::int64_t printed_done_ = -1;  // what the last line said
  std::string printed_note_;
  bool finished_ = false;
};

class Config;
// The [progress] section of a config (interval_s between lines when stderr is not a terminal).
ProgressOptions progress_options(const Config& config);

// "0:07", "12:03", "1:02:03", "3d 4:05:06"; "--" for a negative or non-finite time.
std::string format_duration(double seconds);

}  // namespace sparserl::experiments
