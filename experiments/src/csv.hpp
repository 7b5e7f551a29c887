// The RFC 4180 pieces results.csv, summary.csv and the oracle cache share: quoting a field,
// splitting one record (quoted fields may hold commas, quotes and newlines), and numbers as the
// tables spell them (shortest round trip, empty for NaN). Internal to experiments/.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace sparserl::experiments::detail {

// The field as written: quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& s);
// A finite number in its shortest round-trip form; "" for NaN and infinities.
std::string csv_number(double v);
// The record starting at `pos` (advanced past it); `line` counts the lines read. A malformed
// record is a std::runtime_error "FILE:LINE: ...".
std::vector<std::string> next_csv_record(const std::string& text, std::size_t& pos,
                                         std::size_t& line, const std::string& file);

}  // namespace sparserl::experiments::detail
