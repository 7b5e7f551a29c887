// Progress lines, throttled, redrawn on a terminal and periodic elsewhere (progress.hpp).
#include "sparserl/experiments/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "sparserl/datasets/text.hpp"
#include "sparserl/experiments/config.hpp"

namespace sparserl::experiments {
namespace {

using datasets::fixed;

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ProgressOptions progress_options(const Config& config) {
  ProgressOptions o;
  o.log_interval_s = config.real("progress.interval_s");
  return o;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--";
  auto s = static_cast<long long>(std::llround(seconds));
  const long long days = s / 86400;
  s %= 86400;
  char buf[64];
  if (days > 0) {
    std::snprintf(buf, sizeof buf, "%lldd %lld:%02lld:%02lld", days, s / 3600, (s / 60) % 60,
                  s % 60);
  } else if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  }
  return buf;
}

Progress::Progress(std::string label, std::int64_t total, std::ostream& out,
                   ProgressOptions options)
    : label_(std::move(label)), total_(total), out_(out), options_(std::move(options)) {
  if (!options_.clock) options_.clock = steady_seconds;
  interactive_ = options_.interactive.value_or((&out_ == &std::cerr || &out_ == &std::clog) &&
                                               ::isatty(STDERR_FILENO) == 1);
  start_ = options_.clock();
}

Progress::Progress(std::string label, std::int64_t total)
    : Progress(std::move(label), total, std::cerr) {}

Progress::~Progress() { finish(); }

void Progress::advance(std::int64_t n, const std::string& note) {
  {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    done_ += n;
    if (!note.empty()) note_ = note;
  }
  maybe_print(false);
}

void Progress::set(std::int64_t done, const std::string& note) {
  {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    done_ = done;
    if (!note.empty()) note_ = note;
  }
  maybe_print(false);
}

void Progress::finish() { maybe_print(true); }

std::int64_t Progress::done() const {
  std::lock_guard lock(mutex_);
  return done_;
}

std::string Progress::line() const {
  std::lock_guard lock(mutex_);
  return line_locked(options_.clock());
}

std::string Progress::line_locked(double now) const {
  const double elapsed = now - start_;
  std::string s = label_ + "  " + std::to_string(done_);
  if (total_ > 0) {
    s += "/" + std::to_string(total_) + "  " +
         fixed(100.0 * static_cast<double>(done_) / static_cast<double>(total_), 1) + "%";
  }
  const std::string unit = options_.unit.empty() ? "/s" : " " + options_.unit + "/s";
  if (elapsed > 0 && done_ > 0) {
    const double rate = static_cast<double>(done_) / elapsed;
    s += "  " + (rate >= 100 ? fixed(rate, 0) : rate >= 1 ? fixed(rate, 1) : fixed(rate, 3)) + unit;
    if (total_ > 0) {
      const auto left = static_cast<double>(std::max<std::int64_t>(total_ - done_, 0)) / rate;
      s += "  left " + format_duration(left);
    }
  } else {
    s += "  --" + unit;
  }
  s += "  elapsed " + format_duration(elapsed);
  if (!note_.empty()) s += "  " + note_;
  return s;
}

void Progress::maybe_print(bool force) {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  const double now = options_.clock();
  const double interval = interactive_ ? options_.redraw_interval_s : options_.log_interval_s;
  if (!force && now - last_print_ < interval) return;
  if (force && !interactive_ && done_ == printed_done_ && note_ == printed_note_) {
    finished_ = true;  // the last line said it all: a log gets no repeat
    return;
  }
  last_print_ = now;
  printed_done_ = done_;
  printed_note_ = note_;
  const std::string text = line_locked(now);
  if (interactive_) {
    // Carriage return and erase-to-end-of-line redraw the same line.
    out_ << '\r' << text << "\x1b[K";
    if (force) out_ << '\n';
  } else {
    out_ << text << '\n';
  }
  out_.flush();
  if (force) finished_ = true;
}

}  // namespace sparserl::experiments
