// parse_json's messages and depth limit, dump_json's UTF-8 policy and the typed reads (json.hpp).
#include "sparserl/experiments/json.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sparserl::experiments {
namespace {

constexpr int kMaxDepth = 256;  // deeper input is hostile, not a run file

struct TooDeep {};

// "SOURCE:LINE:COLUMN: what" for the byte at `offset` (0-based) of `text`.
JsonError error_at(std::string_view text, std::size_t offset, const std::string& source,
                   std::size_t first_line, const std::string& what) {
  offset = std::min(offset, text.size());
  const std::string_view before = text.substr(0, offset);
  const std::size_t line =
      first_line + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
  const std::size_t last_newline = before.rfind('\n');
  const std::size_t line_start = last_newline == std::string_view::npos ? 0 : last_newline + 1;
  return JsonError(source + ":" + std::to_string(line) + ":" +
                   std::to_string(offset - line_start + 1) + ": " + what);
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1, column
// 6: " prefix: the place is ours to say.
std::string reason(std::string what) {
  if (what.rfind("[json.exception.", 0) == 0) {
    if (const auto end = what.find("] "); end != std::string::npos) what.erase(0, end + 2);
  }
  if (what.rfind("parse error", 0) == 0) {
    if (const auto end = what.find(": "); end != std::string::npos) what.erase(0, end + 2);
  }
  return what;
}

// nlohmann's DOM reader reports a number beyond double ("1e400") without its place; its SAX reader
// passes the place to parse_error. This handler only listens for that.
class ErrorPlace : public nlohmann::json_sax<Json> {
 public:
  std::size_t position = 0;  // bytes read, counted from 1 (as parse_error::byte)

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t at, const std::string&, const Json::exception&) override {
    position = at;
    return false;
  }
};

// The offset of the first '[' or '{' that opens level `depth` (0: the outermost), outside strings.
std::size_t opening_at_depth(std::string_view text, int depth) {
  int level = -1;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++level == depth) return i;
    } else if (c == ']' || c == '}') {
      --level;
    }
  }
  return text.size();
}

[[noreturn]] void wrong_kind(const char* wanted, const Json& found) {
  throw JsonError(std::string("expected ") + wanted + ", found " + std::string(kind_name(found)));
}

}  // namespace

Json parse_json(std::string_view text, const std::string& source, std::size_t first_line) {
  const Json::parser_callback_t limit_depth = [](int depth, Json::parse_event_t event, Json&) {
    if (depth > kMaxDepth &&
        (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start))
      throw TooDeep{};
    return true;
  };
  try {
    return Json::parse(text, limit_depth);
  } catch (const Json::parse_error& e) {
    throw error_at(text, e.byte - 1, source, first_line, reason(e.what()));
  } catch (const Json::out_of_range& e) {
    ErrorPlace place;
    (void)Json::sax_parse(text, &place);
    throw error_at(text, place.position - 1, source, first_line, reason(e.what()));
  } catch (const TooDeep&) {
    throw error_at(text, opening_at_depth(text, kMaxDepth + 1), source, first_line,
                   "nesting deeper than " + std::to_string(kMaxDepth) + " levels");
  }
}

std::string dump_json(const Json& value, int indent) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

std::string json_quote(std::string_view text) { return dump_json(Json(text)); }

std::string json_number(double value) { return dump_json(Json(value)); }

std::string_view kind_name(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::binary:
      return "binary data";
    case Json::value_t::discarded:
      break;
  }
  return "nothing";
}

bool as_bool(const Json& value) {
  if (!value.is_boolean()) wrong_kind("a boolean", value);
  return value.get<bool>();
}

std::int64_t as_integer(const Json& value) {
  if (value.is_number_integer() && !value.is_number_unsigned()) return value.get<std::int64_t>();
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      throw JsonError("expected an integer, found " + std::to_string(u) + " (beyond int64)");
    return static_cast<std::int64_t>(u);
  }
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::abs(d) < 9.2e18)
      return static_cast<std::int64_t>(d);
    throw JsonError("expected an integer, found the number " + json_number(d));
  }
  wrong_kind("an integer", value);
}

std::uint64_t as_unsigned(const Json& value) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer()) {
    const auto i = value.get<std::int64_t>();
    if (i < 0) throw JsonError("expected an integer >= 0, found " + std::to_string(i));
    return static_cast<std::uint64_t>(i);
  }
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && d >= 0 && d < 1.8e19)
      return static_cast<std::uint64_t>(d);
    throw JsonError("expected an integer >= 0, found the number " + json_number(d));
  }
  wrong_kind("an integer", value);
}

double as_number(const Json& value) {
  if (value.is_number()) return value.get<double>();
  if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
  wrong_kind("a number", value);
}

const std::string& as_string(const Json& value) {
  if (!value.is_string()) wrong_kind("a string", value);
  return value.get_ref<const std::string&>();
}

const Json::array_t& as_array(const Json& value) {
  if (!value.is_array()) wrong_kind("an array", value);
  return value.get_ref<const Json::array_t&>();
}

const Json::object_t& as_object(const Json& value) {
  if (!value.is_object()) wrong_kind("an object", value);
  return value.get_ref<const Json::object_t&>();
}

const Json* find_member(const Json& value, std::string_view key) {
  if (!value.is_object()) return nullptr;
  const auto it = value.find(key);
  return it != value.end() ? &*it : nullptr;
}

}  // namespace sparserl::experiments
