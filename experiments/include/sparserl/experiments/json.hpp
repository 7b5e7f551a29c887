// The JSON the run directory speaks (run.json, metrics.jsonl lines, checkpoints' meta.json and
// stage.json, `--json` reports) is nlohmann::ordered_json: members keep the order they were added
// in, so files read the way they were written. This header adds only what the project wants the
// same everywhere and nlohmann leaves open:
//   - parse_json: errors name the input and the place, "metrics.jsonl:17:5: <what nlohmann found>"
//     (nlohmann gives a byte offset; the line counts from where the text starts in its file), and
//     nesting deeper than 256 levels is refused (copying and writing a value recurse).
//   - dump_json: bytes that are not UTF-8 become U+FFFD instead of an exception mid-write.
//   - typed reads that say what they found ("expected an integer, found a string"), for readers
//     that prefix the file and the key path (run_info.cpp, metrics.cpp).
// Doubles print as nlohmann prints them: a form that reads back to the same bits, always with a '.'
// or an exponent (so a number stays a number), NaN and infinities as null.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sparserl::experiments {

using Json = nlohmann::ordered_json;

class JsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses one JSON text (RFC 8259; white space around it, nothing else). `source` and `first_line`
// name the input in messages: "metrics.jsonl:17:11: syntax error while parsing object key -
// unexpected ','; expected string literal". The column is the byte, counted from 1, where the
// reader stopped.
Json parse_json(std::string_view text, const std::string& source, std::size_t first_line = 1);

// indent < 0: one line without spaces; otherwise pretty-printed with that many spaces per level.
std::string dump_json(const Json& value, int indent = -1);

// A JSON string literal with quotes ("a\"b"): '"', '\' and control characters escaped, UTF-8 as is.
std::string json_quote(std::string_view text);
// A double as dump_json writes it ("0.1", "1e+300", "3.0"); "null" when not finite.
std::string json_number(double value);

// "null", "a boolean", "an integer" (signed or unsigned), "a number", "a string", "an array", ...
std::string_view kind_name(const Json& value);

// Typed reads: JsonError "expected an integer, found a string" when the value is of another kind.
bool as_bool(const Json& value);
std::int64_t as_integer(const Json& value);    // an integer, or a number with an integral value
std::uint64_t as_unsigned(const Json& value);  // the same, >= 0 (seeds use all 64 bits)
double as_number(const Json& value);           // an integer or a number; null reads as NaN
const std::string& as_string(const Json& value);
const Json::array_t& as_array(const Json& value);
const Json::object_t& as_object(const Json& value);  // iterates as (name, value) pairs, in order

// The member `key` of an object; nullptr when absent or when `value` is not an object.
const Json* find_member(const Json& value, std::string_view key);

}  // namespace sparserl::experiments
