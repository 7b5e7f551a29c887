// JSON values, the writer and a strict RFC 8259 reader (json.hpp).
#include "sparserl/experiments/json.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

namespace sparserl::experiments {
namespace {

[[noreturn]] void wrong_kind(const char* wanted, Json::Kind found) {
  throw JsonError(std::string("expected ") + wanted + ", found " + std::string(to_string(found)));
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

void dump_to(const Json& v, std::string& out, int indent, int depth) {
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<std::size_t>(indent * d), ' ');
  };
  switch (v.kind()) {
    case Json::Kind::null:
      out += "null";
      return;
    case Json::Kind::boolean:
      out += v.as_bool() ? "true" : "false";
      return;
    case Json::Kind::integer:
      out += std::to_string(v.as_integer());
      return;
    case Json::Kind::number:
      out += json_number(v.as_number());
      return;
    case Json::Kind::string:
      out += json_quote(v.as_string());
      return;
    case Json::Kind::array: {
      const auto& a = v.as_array();
      if (a.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (i > 0) out += ',';
        newline(depth + 1);
        dump_to(a[i], out, indent, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Json::Kind::object: {
      const auto& o = v.as_object();
      if (o.empty()) {
        out += "{}";
        return;
      }
      out += '{';
      for (std::size_t i = 0; i < o.size(); ++i) {
        if (i > 0) out += ',';
        newline(depth + 1);
        out += json_quote(o[i].first);
        out += indent < 0 ? ":" : ": ";
        dump_to(o[i].second, out, indent, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
  }
}

// A recursive-descent reader that tracks line and column for its messages.
class Reader {
 public:
  Reader(std::string_view text, const std::string& source, std::size_t first_line)
      : text_(text), source_(source), line_(first_line) {}

  Json document() {
    skip_space();
    Json v = value(0);
    skip_space();
    if (pos_ < text_.size()) fail("unexpected text after the JSON value");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 256;  // deeper input is hostile, not a run file

  [[noreturn]] void fail(const std::string& what) const {
    throw JsonError(source_ + ":" + std::to_string(line_) + ":" +
                    std::to_string(pos_ - line_start_ + 1) + ": " + what);
  }

  [[nodiscard]] bool at_end() const { return pos_ >= text_.size(); }
  [[nodiscard]] char peek() const { return text_[pos_]; }

  void skip_space() {
    while (!at_end()) {
      const char c = peek();
      if (c == '\n') {
        ++line_;
        line_start_ = pos_ + 1;
      } else if (c != ' ' && c != '\t' && c != '\r') {
        return;
      }
      ++pos_;
    }
  }

  void expect_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) fail("expected a JSON value");
    pos_ += word.size();
  }

  Json value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than 256 levels");
    if (at_end()) fail("unexpected end of input, expected a JSON value");
    switch (peek()) {
      case '{':
        return object(depth);
      case '[':
        return array(depth);
      case '"':
        return Json(string());
      case 't':
        expect_word("true");
        return Json(true);
      case 'f':
        expect_word("false");
        return Json(false);
      case 'n':
        expect_word("null");
        return Json(nullptr);
      default:
        return number();
    }
  }

  Json object(int depth) {
    ++pos_;  // '{'
    Json::Object members;
    skip_space();
    if (!at_end() && peek() == '}') {
      ++pos_;
      return Json(std::move(members));
    }
    while (true) {
      skip_space();
      if (at_end() || peek() != '"')
        fail(at_end() ? "unexpected end of input inside an object"
                      : "expected '\"' to start an object key");
      std::string key = string();
      skip_space();
      if (at_end() || peek() != ':') fail("expected ':' after an object key");
      ++pos_;
      skip_space();
      Json v = value(depth + 1);
      bool replaced = false;
      for (auto& [k, old] : members) {
        if (k == key) {  // RFC 8259 leaves duplicates open; the last one wins, as in most readers
          old = std::move(v);
          replaced = true;
          break;
        }
      }
      if (!replaced) members.emplace_back(std::move(key), std::move(v));
      skip_space();
      if (at_end()) fail("unexpected end of input inside an object");
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return Json(std::move(members));
      }
      fail("expected ',' or '}' in an object");
    }
  }

  Json array(int depth) {
    ++pos_;  // '['
    Json::Array items;
    skip_space();
    if (!at_end() && peek() == ']') {
      ++pos_;
      return Json(std::move(items));
    }
    while (true) {
      skip_space();
      items.push_back(value(depth + 1));
      skip_space();
      if (at_end()) fail("unexpected end of input inside an array");
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return Json(std::move(items));
      }
      fail("expected ',' or ']' in an array");
    }
  }

  std::uint32_t hex4() {
    if (pos_ + 4 > text_.size()) fail("expected four hex digits after \\u");
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<std::uint32_t>(c - 'A' + 10);
      else
        fail("expected four hex digits after \\u");
    }
    return v;
  }

  std::string string() {
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated string");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        fail("control character inside a string (escape it)");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      if (at_end()) fail("unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (text_.substr(pos_, 2) != "\\u")
              fail("a high surrogate must be followed by a low one");
            pos_ += 2;
            const std::uint32_t lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("a high surrogate must be followed by a low one");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("a lone low surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default:
          --pos_;
          fail(std::string("unknown escape '\\") + e + "'");
      }
    }
  }

  Json number() {
    const std::size_t start = pos_;
    if (!at_end() && peek() == '-') ++pos_;
    auto digits = [&] {
      const std::size_t from = pos_;
      while (!at_end() && peek() >= '0' && peek() <= '9') ++pos_;
      return pos_ - from;
    };
    const std::size_t int_start = pos_;
    if (digits() == 0) {
      pos_ = start;
      fail("expected a JSON value");
    }
    if (pos_ - int_start > 1 && text_[int_start] == '0') {
      pos_ = int_start;
      fail("a number may not start with 0");
    }
    bool integral = true;
    if (!at_end() && peek() == '.') {
      ++pos_;
      integral = false;
      if (digits() == 0) fail("expected digits after '.'");
    }
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      ++pos_;
      integral = false;
      if (!at_end() && (peek() == '+' || peek() == '-')) ++pos_;
      if (digits() == 0) fail("expected digits in the exponent");
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (integral) {
      std::int64_t i = 0;
      const auto [p, ec] = std::from_chars(first, last, i);
      if (ec == std::errc() && p == last) return Json(i);
      // Too large for int64: keep it as a double, as other readers do.
    }
    double d = 0;
    const auto [p, ec] = std::from_chars(first, last, d);
    if (ec == std::errc::result_out_of_range) {
      // from_chars leaves d untouched on overflow and underflow; strtod gives +-inf or 0 as JSON
      // readers conventionally do (the text is plain JSON digits, so the locale does not matter).
      d = std::strtod(std::string(first, last).c_str(), nullptr);
    } else if (ec != std::errc() || p != last) {
      pos_ = start;
      fail("malformed number");
    }
    return Json(d);
  }

  std::string_view text_;
  const std::string& source_;
  std::size_t line_;
  std::size_t pos_ = 0;
  std::size_t line_start_ = 0;
};

}  // namespace

Json::Json(unsigned long i) {
  if (i <= static_cast<unsigned long>(std::numeric_limits<std::int64_t>::max())) {
    value_ = static_cast<std::int64_t>(i);
  } else {
    value_ = static_cast<double>(i);
  }
}

Json::Json(unsigned long long i) {
  if (i <= static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max())) {
    value_ = static_cast<std::int64_t>(i);
  } else {
    value_ = static_cast<double>(i);
  }
}

std::string_view to_string(Json::Kind kind) {
  switch (kind) {
    case Json::Kind::null:
      return "null";
    case Json::Kind::boolean:
      return "a boolean";
    case Json::Kind::integer:
      return "an integer";
    case Json::Kind::number:
      return "a number";
    case Json::Kind::string:
      return "a string";
    case Json::Kind::array:
      return "an array";
    case Json::Kind::object:
      return "an object";
  }
  return "?";
}

bool Json::as_bool() const {
  if (const bool* b = std::get_if<bool>(&value_)) return *b;
  wrong_kind("a boolean", kind());
}

std::int64_t Json::as_integer() const {
  if (const auto* i = std::get_if<std::int64_t>(&value_)) return *i;
  if (const auto* d = std::get_if<double>(&value_)) {
    if (std::isfinite(*d) && *d == std::floor(*d) && std::abs(*d) < 9.2e18) {
      return static_cast<std::int64_t>(*d);
    }
    throw JsonError("expected an integer, found the number " + json_number(*d));
  }
  wrong_kind("an integer", kind());
}

double Json::as_number() const {
  if (const auto* d = std::get_if<double>(&value_)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&value_)) return static_cast<double>(*i);
  if (is_null()) return std::numeric_limits<double>::quiet_NaN();
  wrong_kind("a number", kind());
}

const std::string& Json::as_string() const {
  if (const auto* s = std::get_if<std::string>(&value_)) return *s;
  wrong_kind("a string", kind());
}

const Json::Array& Json::as_array() const {
  if (const auto* a = std::get_if<Array>(&value_)) return *a;
  wrong_kind("an array", kind());
}

const Json::Object& Json::as_object() const {
  if (const auto* o = std::get_if<Object>(&value_)) return *o;
  wrong_kind("an object", kind());
}

const Json* Json::find(std::string_view key) const {
  const auto* o = std::get_if<Object>(&value_);
  if (o == nullptr) return nullptr;
  for (const auto& [k, v] : *o) {
    if (k == key) return &v;
  }
  return nullptr;
}

Json& Json::set(std::string_view key, Json value) {
  if (is_null()) value_ = Object{};
  auto* o = std::get_if<Object>(&value_);
  if (o == nullptr) wrong_kind("an object", kind());
  for (auto& [k, v] : *o) {
    if (k == key) {
      v = std::move(value);
      return v;
    }
  }
  o->emplace_back(std::string(key), std::move(value));
  return o->back().second;
}

void Json::push_back(Json value) {
  if (is_null()) value_ = Array{};
  auto* a = std::get_if<Array>(&value_);
  if (a == nullptr) wrong_kind("an array", kind());
  a->push_back(std::move(value));
}

std::string Json::dump(int indent) const {
  std::string out;
  dump_to(*this, out, indent, 0);
  return out;
}

Json Json::parse(std::string_view text, const std::string& source, std::size_t first_line) {
  return Reader(text, source, first_line).document();
}

std::string json_quote(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (u < 0x20 || u == 0x7F) {
          out += "\\u00";
          out += kHex[u >> 4];
          out += kHex[u & 0xF];
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  std::string s(buf, ec == std::errc() ? end : buf);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace sparserl::experiments
