// Progress lines on a clock the test controls: the rate and time left, throttled redraws on a
// terminal, periodic lines elsewhere, one final line.
#include "sparserl/experiments/progress.hpp"

#include <limits>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "sparserl/experiments/config.hpp"
#include "test_support.hpp"

using namespace sparserl::experiments;
using sparserl::testing::has_substring;

namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size()))
    ++n;
  return n;
}

}  // namespace

TEST_CASE("durations are formatted for people", "[experiments][progress]") {
  CHECK(format_duration(0) == "0:00");
  CHECK(format_duration(7.4) == "0:07");
  CHECK(format_duration(723) == "12:03");
  CHECK(format_duration(3723) == "1:02:03");
  CHECK(format_duration(3 * 86400 + 4 * 3600 + 5 * 60 + 6) == "3d 4:05:06");
  CHECK(format_duration(-1) == "--");
  Config config;
  config.set("progress.interval_s=2.5");
  CHECK(progress_options(config).log_interval_s == 2.5);
  CHECK(format_duration(std::numeric_limits<double>::infinity()) == "--");
}

TEST_CASE("a log gets a line per interval and a final line", "[experiments][progress]") {
  double now = 100;
  std::ostringstream out;
  ProgressOptions options;
  options.interactive = false;
  options.log_interval_s = 10;
  options.unit = "matrices";
  options.clock = [&] { return now; };
  {
    Progress p("bench", 400, out, options);
    for (int i = 0; i < 400; ++i) {
      now += 0.125;  // 8 items per second (a step exact in binary), 50 s in all
      p.advance(1, "matrix-" + std::to_string(i));
      if (i == 119) {
        CHECK(p.line() ==
              "bench  120/400  30.0%  8.0 matrices/s  left 0:35  elapsed 0:15  matrix-119");
      }
    }
    CHECK(p.done() == 400);
  }  // the destructor prints the final line
  const std::string text = out.str();
  // Lines at 0.125 s, 10.125, 20.125, 30.125 and 40.125 s, then the final one at 50 s.
  CHECK(count(text, "\n") == 6);
  CHECK(count(text, "\r") == 0);
  CHECK_THAT(text,
             has_substring(
                 "bench  400/400  100.0%  8.0 matrices/s  left 0:00  elapsed 0:50  matrix-399\n"));
}

TEST_CASE("a terminal gets one line redrawn at most a few times per second",
          "[experiments][progress]") {
  double now = 0;
  std::ostringstream out;
  ProgressOptions options;
  options.interactive = true;
  options.redraw_interval_s = 0.25;
  options.clock = [&] { return now; };
  Progress p("tune", 0, out, options);  // total unknown
  for (int i = 0; i < 1024; ++i) {
    now += 1.0 / 1024;  // 1024 items in one second (exact in binary)
    p.advance();
  }
  p.finish();
  p.advance();  // after finish: nothing more
  const std::string text = out.str();
  // Redraws after items 1, 257, 513 and 769 (every 0.25 s), then the final one.
  CHECK(count(text, "\r") == 5);
  CHECK(count(text, "\n") == 1);
  CHECK(text.find("\r") == 0);
  CHECK_THAT(text, has_substring("\rtune  1024  1024/s  elapsed 0:01\x1b[K\n"));
  CHECK(text.find("%") == std::string::npos);
  CHECK(text.find("left") == std::string::npos);
}
