// How sparserl::experiments spells numbers and text in the files it writes, internal to the
// library: Markdown tables (report.md, compare.md) and CSV (results.csv, compare.csv). One home, so
// a figure reads the same in every report and an n/a is never a made-up 0.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

#include "sparserl/experiments/json.hpp"

namespace sparserl::experiments::detail {

// `significant` significant digits ("%g"); "n/a" when not finite.
inline std::string num(double v, int significant = 4) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", significant, v);
  return buf;
}

// A share as a percentage with one decimal ("12.5%"); "n/a" when not finite.
inline std::string percent(double v) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * v);
  return buf;
}

// A Markdown table cell: a '|' would end the cell, a newline the row.
inline std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

// Inline code in a table cell (empty stays empty).
inline std::string code(const std::string& s) {
  return s.empty() ? std::string() : "`" + cell(s) + "`";
}

// An RFC 4180 field: quoted when it holds a comma, a quote or a line break.
inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// The shortest text that reads back to the same double; empty (a missing value) when not finite.
inline std::string csv_number(double v) {
  return std::isfinite(v) ? json_number(v) : std::string();
}

}  // namespace sparserl::experiments::detail
