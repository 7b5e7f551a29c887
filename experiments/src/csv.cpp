// CSV quoting and record splitting (csv.hpp).
#include "csv.hpp"

#include <cmath>
#include <stdexcept>

#include "sparserl/experiments/json.hpp"

namespace sparserl::experiments::detail {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_number(double v) { return std::isfinite(v) ? json_number(v) : std::string(); }

std::vector<std::string> next_csv_record(const std::string& text, std::size_t& pos,
                                         std::size_t& line, const std::string& file) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  const std::size_t start_line = line;
  while (pos < text.size()) {
    const char c = text[pos++];
    if (quoted) {
      if (c == '"') {
        if (pos < text.size() && text[pos] == '"') {
          fields.back() += '"';
          ++pos;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        fields.back() += c;
      }
    } else if (c == '"') {
      if (!fields.back().empty()) {
        throw std::runtime_error(file + ":" + std::to_string(line) +
                                 ": a quote inside an unquoted field");
      }
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c == '\n') {
      ++line;
      break;
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  if (quoted) {
    throw std::runtime_error(file + ":" + std::to_string(start_line) +
                             ": unterminated quoted field");
  }
  return fields;
}

}  // namespace sparserl::experiments::detail
