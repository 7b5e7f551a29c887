// The small JSON the run directory speaks: run.json, metrics.jsonl lines and checkpoints'
// meta.json. A Json value is null, a boolean, an integer (int64, kept exact: seeds and steps), a
// number (double), a string, an array or an object whose members keep the order they were added in
// (so files read the way they were written). dump() escapes strings per RFC 8259 and prints doubles
// in the shortest form that reads back to the same bits (always with a '.' or an exponent, so a
// number stays a number); NaN and infinities, which JSON cannot spell, become null. parse() reads
// any RFC 8259 text and throws JsonError "SOURCE:LINE:COLUMN: what was expected". No third-party
// JSON library: the GPU hosts and the CI image would both have to carry it, and this is all the
// project needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace sparserl::experiments {

class JsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Json {
 public:
  enum class Kind { null, boolean, integer, number, string, array, object };
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() = default;  // null
  Json(std::nullptr_t) {}
  Json(bool b) : value_(b) {}
  Json(int i) : value_(static_cast<std::int64_t>(i)) {}
  Json(long i) : value_(static_cast<std::int64_t>(i)) {}
  Json(long long i) : value_(static_cast<std::int64_t>(i)) {}
  Json(unsigned i) : value_(static_cast<std::int64_t>(i)) {}
  // Values above INT64_MAX are kept as a (rounded) number.
  Json(unsigned long i);
  Json(unsigned long long i);
  Json(double d) : value_(d) {}
  Json(const char* s) : value_(std::string(s)) {}
  Json(std::string s) : value_(std::move(s)) {}
  Json(std::string_view s) : value_(std::string(s)) {}
  Json(Array a) : value_(std::move(a)) {}
  Json(Object o) : value_(std::move(o)) {}

  static Json array() { return Json(Array{}); }
  static Json object() { return Json(Object{}); }

  [[nodiscard]] Kind kind() const { return static_cast<Kind>(value_.index()); }
  [[nodiscard]] bool is_null() const { return kind() == Kind::null; }
  [[nodiscard]] bool is_number() const { return kind() == Kind::integer || kind() == Kind::number; }
  [[nodiscard]] bool is_string() const { return kind() == Kind::string; }
  [[nodiscard]] bool is_object() const { return kind() == Kind::object; }
  [[nodiscard]] bool is_array() const { return kind() == Kind::array; }

  // Accessors throw JsonError naming the kind found when the value is of another kind.
  [[nodiscard]] bool as_bool() const;
  [[nodiscard]] std::int64_t as_integer() const;  // an integer, or a number with an integral value
  [[nodiscard]] double as_number() const;         // an integer or a number; null reads as NaN
  [[nodiscard]] const std::string& as_string() const;
  [[nodiscard]] const Array& as_array() const;
  [[nodiscard]] const Object& as_object() const;

  // Object members: find returns nullptr when absent (or when this is not an object).
  [[nodiscard]] const Json* find(std::string_view key) const;
  // Replaces the member `key` or appends it; turns a null into an object.
  Json& set(std::string_view key, Json value);
  // Appends to an array; turns a null into an array.
  void push_back(Json value);

  // indent < 0: one line; otherwise pretty-printed with that many spaces per level.
  [[nodiscard]] std::string dump(int indent = -1) const;

  // Parses one JSON text (surrounding white space allowed, nothing else). `source` and `first_line`
  // name the input in messages: "metrics.jsonl:17:5: expected ':' after an object key".
  static Json parse(std::string_view text, const std::string& source, std::size_t first_line = 1);

  friend bool operator==(const Json& a, const Json& b) { return a.value_ == b.value_; }

 private:
  std::variant<std::nullptr_t, bool, std::int64_t, double, std::string, Array, Object> value_;
};

std::string_view to_string(Json::Kind kind);  // "null", "a boolean", "an integer", ...

// A JSON string literal with quotes; control characters, '"' and '\' escaped, UTF-8 passed through.
std::string json_quote(std::string_view text);
// The shortest text that reads back to the same double ("0.1", "1e+300", "3.0"); "null" when not
// finite.
std::string json_number(double value);

}  // namespace sparserl::experiments
