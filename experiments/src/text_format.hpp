// How sparserl::experiments spells numbers and text in the files it writes, internal to the
// library: Markdown tables (report.md, compare.md); CSV fields and numbers come from csv.hpp. One
// home, so a figure reads the same in every report and an n/a is never a made-up 0.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

#include "csv.hpp"  // csv_field, csv_number: the CSV side
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

}  // namespace sparserl::experiments::detail
