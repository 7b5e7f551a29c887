// Numbers and times as the project spells them (text.hpp).
#include "sparserl/datasets/text.hpp"

#include <cstdio>
#include <ctime>

namespace sparserl::datasets {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string minutes_seconds(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

std::string utc_text(std::chrono::system_clock::time_point time, const char* format) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(time);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

}  // namespace sparserl::datasets
