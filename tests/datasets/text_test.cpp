// Numbers and times as the project spells them (sparserl/datasets/text.hpp): fixed decimals with
// printf's rounding, m:ss durations, and UTC timestamps in the ISO and the compact form.
#include "sparserl/datasets/text.hpp"

#include <chrono>
#include <limits>

#include "catch.hpp"

namespace ds = sparserl::datasets;

TEST_CASE("fixed decimals", "[datasets][text]") {
  CHECK(ds::fixed(12.345, 2) == "12.35");
  CHECK(ds::fixed(-0.5, 0) == "-0");
  CHECK(ds::fixed(3, 3) == "3.000");
  CHECK(ds::fixed(std::numeric_limits<double>::infinity(), 1) == "inf");
}

TEST_CASE("minutes and seconds", "[datasets][text]") {
  CHECK(ds::minutes_seconds(0) == "0:00");
  CHECK(ds::minutes_seconds(75.4) == "1:15");
  CHECK(ds::minutes_seconds(59.6) == "1:00");
  CHECK(ds::minutes_seconds(3700) == "61:40");
}

TEST_CASE("UTC timestamps", "[datasets][text]") {
  // 2025-01-31 12:34:56 UTC.
  const auto t = std::chrono::system_clock::from_time_t(1738326896);
  CHECK(ds::utc_text(t) == "2025-01-31T12:34:56Z");
  CHECK(ds::utc_text(t, ds::kCompactUtc) == "20250131T123456Z");
}
