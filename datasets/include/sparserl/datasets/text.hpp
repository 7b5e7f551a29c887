// How the project spells numbers and times in logs, tables and file metadata, in one home (the
// bottom library, beside random.hpp) instead of a private formatter in every file: fixed-point
// decimals, m:ss durations and UTC timestamps. printf's formatting, in the C locale.
#pragma once

#include <chrono>
#include <string>

namespace sparserl::datasets {

// `digits` decimals: fixed(12.345, 2) is "12.35" ("inf" and "nan" as printf spells them).
std::string fixed(double v, int digits);

// Whole minutes and seconds, rounded: minutes_seconds(75.4) is "1:15", 3,700 s "61:40".
std::string minutes_seconds(double seconds);

// A time in UTC, strftime's `format`: utc_text(t) is "2025-01-31T12:00:00Z", with
// kCompactUtc "20250131T120000Z" (run directory and output folder names).
inline constexpr const char* kIsoUtc = "%Y-%m-%dT%H:%M:%SZ";
inline constexpr const char* kCompactUtc = "%Y%m%dT%H%M%SZ";
std::string utc_text(std::chrono::system_clock::time_point time, const char* format = kIsoUtc);

}  // namespace sparserl::datasets
