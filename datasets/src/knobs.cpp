// The parts of the knob declarations (knobs.hpp) that do not depend on the struct: the type names,
// the check of a value against a declaration, and the text forms of values.
#include "sparserl/datasets/knobs.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sparserl/datasets/enum_names.hpp"

namespace sparserl::datasets {

std::string_view to_string(KnobType type) {
  static constexpr auto kNames = enum_names<KnobType::integer, KnobType::real_list>(
      {"integer", "number", "boolean", "string", "list of strings", "list of integers",
       "list of numbers"});
  return kNames.name(type);
}

std::string format_real(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::abs(v) < 1e15) {
    std::ostringstream out;
    out << static_cast<long long>(v) << ".0";
    return out.str();
  }
  std::ostringstream out;
  out.precision(17);
  out << v;
  std::string s = out.str();
  // Shortest form that round-trips.
  for (int p = 1; p <= 17; ++p) {
    std::ostringstream o;
    o.precision(p);
    o << v;
    if (std::stod(o.str()) == v) {
      s = o.str();
      break;
    }
  }
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

namespace {

std::optional<std::string> check_type_and_range(const KnobSpec& key, const KnobValue& value) {
  const bool integral = key.type == KnobType::integer || key.type == KnobType::integer_list;
  auto number = [&](double v) {
    return integral ? std::to_string(static_cast<long long>(v)) : format_real(v);
  };
  auto in_range = [&](double v) -> std::optional<std::string> {
    if (!std::isfinite(v)) return "expected a finite number, got " + format_real(v);
    if ((key.min && v < *key.min) || (key.max && v > *key.max)) {
      std::string range = "[" + (key.min ? number(*key.min) : std::string("-inf")) + ", " +
                          (key.max ? number(*key.max) : std::string("inf")) + "]";
      return "value " + number(v) + " is outside " + range;
    }
    return std::nullopt;
  };
  auto allowed = [&](const std::string& s) -> std::optional<std::string> {
    if (key.choices.empty() ||
        std::find(key.choices.begin(), key.choices.end(), s) != key.choices.end()) {
      return std::nullopt;
    }
    return "'" + s + "' is not one of: " + knob_text::one_of(key.choices);
  };
  switch (key.type) {
    case KnobType::integer:
      if (!std::holds_alternative<std::int64_t>(value)) return "expected an integer";
      return in_range(static_cast<double>(std::get<std::int64_t>(value)));
    case KnobType::real:
      if (std::holds_alternative<std::int64_t>(value)) {
        return in_range(static_cast<double>(std::get<std::int64_t>(value)));
      }
      if (!std::holds_alternative<double>(value)) return "expected a number";
      return in_range(std::get<double>(value));
    case KnobType::boolean:
      if (!std::holds_alternative<bool>(value)) return "expected a boolean";
      return std::nullopt;
    case KnobType::string:
      if (!std::holds_alternative<std::string>(value)) return "expected a string";
      return allowed(std::get<std::string>(value));
    case KnobType::string_list:
      if (!std::holds_alternative<std::vector<std::string>>(value)) {
        return "expected a list of strings";
      }
      for (const auto& s : std::get<std::vector<std::string>>(value)) {
        if (auto bad = allowed(s)) return bad;
      }
      return std::nullopt;
    case KnobType::integer_list:
      if (!std::holds_alternative<std::vector<std::int64_t>>(value)) {
        return "expected a list of integers";
      }
      for (auto v : std::get<std::vector<std::int64_t>>(value)) {
        if (auto bad = in_range(static_cast<double>(v))) return bad;
      }
      return std::nullopt;
    case KnobType::real_list:
      if (!std::holds_alternative<std::vector<double>>(value)) return "expected a list of numbers";
      for (auto v : std::get<std::vector<double>>(value)) {
        if (auto bad = in_range(v)) return bad;
      }
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_knob(const KnobSpec& spec, const KnobValue& value) {
  if (auto bad = check_type_and_range(spec, value)) return bad;
  if (spec.validator) return spec.validator(value);
  return std::nullopt;
}

namespace knob_text {

std::string real(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

double parse_real(std::string_view text) {
  try {
    std::size_t used = 0;
    const double v = std::stod(std::string(text), &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument("expected a number, got '" + std::string(text) + "'");
}

bool parse_boolean(std::string_view text) {
  if (text == "true") return true;
  if (text == "false") return false;
  throw std::invalid_argument("expected true or false, got '" + std::string(text) + "'");
}

std::string one_of(const std::vector<std::string>& choices) {
  std::string list;
  for (std::size_t i = 0; i < choices.size(); ++i) list += (i ? ", " : "") + choices[i];
  return list;
}

std::size_t parse_choice(std::string_view text, const std::vector<std::string>& choices) {
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (choices[i] == text) return i;
  }
  throw std::invalid_argument("expected one of " + one_of(choices) + ", got '" + std::string(text) +
                              "'");
}

std::string join_list(const std::vector<std::string>& items) {
  std::string text;
  for (std::size_t i = 0; i < items.size(); ++i) text += (i ? "," : "") + items[i];
  return text;
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> items;
  if (text.empty()) return items;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    items.emplace_back(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) return items;
    start = comma + 1;
  }
}

}  // namespace knob_text

}  // namespace sparserl::datasets
