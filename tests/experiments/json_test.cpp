// The run directory's JSON: strings are escaped so any reader takes them back, doubles print in the
// shortest text that reads back to the same bits, NaN and infinities become null, integers stay
// exact, and malformed input names the source, line and column.
#include "sparserl/experiments/json.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "catch.hpp"
#include "test_support.hpp"

using sparserl::experiments::Json;
using sparserl::experiments::json_number;
using sparserl::experiments::json_quote;
using sparserl::experiments::JsonError;
using sparserl::testing::has_substring;

TEST_CASE("strings are escaped and read back", "[experiments][json]") {
  CHECK(json_quote("plain") == "\"plain\"");
  CHECK(json_quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(json_quote("line\nnext\ttab\r") == "\"line\\nnext\\ttab\\r\"");
  CHECK(json_quote(std::string("nul\0x", 5)) == "\"nul\\u0000x\"");
  CHECK(json_quote("\x1f\x7f") == "\"\\u001f\\u007f\"");
  CHECK(json_quote("Grüße, 東京") == "\"Grüße, 東京\"");  // UTF-8 passes through

  const std::string nasty =
      std::string("q\"b\\s/\b\f\n\r\t\x01 ü", 16) + std::string(1, '\0') + "end";
  const Json back = Json::parse(json_quote(nasty), "test");
  CHECK(back.as_string() == nasty);
  // Escapes other writers use.
  CHECK(Json::parse(R"("\u00fc\/\u6771\ud83d\ude00")", "t").as_string() == "ü/東😀");
}

TEST_CASE("doubles print shortest and round-trip; NaN and infinities are null",
          "[experiments][json]") {
  CHECK(json_number(0.1) == "0.1");
  CHECK(json_number(3.0) == "3.0");
  CHECK(json_number(-0.0) == "-0.0");
  CHECK(json_number(1e300) == "1e+300");
  CHECK(json_number(5e-324) == "5e-324");
  CHECK(json_number(std::nan("")) == "null");
  CHECK(json_number(std::numeric_limits<double>::infinity()) == "null");
  CHECK(json_number(-std::numeric_limits<double>::infinity()) == "null");

  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::uint64_t> bits;
  int checked = 0;
  for (int i = 0; i < 20000; ++i) {
    std::uint64_t b = bits(rng);
    double d = 0;
    std::memcpy(&d, &b, sizeof d);
    if (!std::isfinite(d)) continue;
    const Json back = Json::parse(json_number(d), "t");
    REQUIRE(back.kind() == Json::Kind::number);  // stays a number, never turns into an integer
    const double read = back.as_number();
    REQUIRE(std::memcmp(&d, &read, sizeof d) == 0);
    ++checked;
  }
  CHECK(checked > 19000);
  const Json with_nan = Json::parse(Json(Json::Object{{"x", std::nan("")}}).dump(), "t");
  CHECK(with_nan.find("x")->is_null());
  CHECK(std::isnan(with_nan.find("x")->as_number()));
}

TEST_CASE("integers stay exact; objects keep their order", "[experiments][json]") {
  Json o = Json::object();
  o.set("seed", std::uint64_t{9200000000000000000ULL});
  o.set("step", -3);
  o.set("name", "run");
  o.set("flags", Json(Json::Array{true, false, nullptr}));
  o.set("step", 12);  // replaces in place
  CHECK(o.dump() ==
        R"({"seed":9200000000000000000,"step":12,"name":"run","flags":[true,false,null]})");
  const Json back = Json::parse(o.dump(2), "t");
  CHECK(back == o);
  CHECK(back.find("seed")->as_integer() == 9200000000000000000LL);
  CHECK(back.find("absent") == nullptr);
  CHECK(Json::parse("12345678901234567890", "t").kind() == Json::Kind::number);  // beyond int64
  CHECK(Json::parse("  {\"a\" : [1, 2.5, {\"b\": {}}]}\n", "t").find("a")->as_array().size() == 3);
  CHECK(Json::parse("1e400", "t").as_number() == std::numeric_limits<double>::infinity());
}

TEST_CASE("wrong kinds and malformed text are errors that say where", "[experiments][json]") {
  CHECK_THROWS_WITH(Json("x").as_integer(), has_substring("expected an integer, found a string"));
  CHECK_THROWS_WITH(Json(2.5).as_integer(), has_substring("found the number 2.5"));
  CHECK(Json(4.0).as_integer() == 4);

  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"{\"a\" 1}", "f.json:1:6: expected ':' after an object key"},
      {"{\"a\": 1,\n  \"b\": }", "f.json:2:8: expected a JSON value"},
      {"[1, 2", "f.json:1:6: unexpected end of input inside an array"},
      {"\"abc", "f.json:1:5: unterminated string"},
      {"\"a\nb\"", "control character inside a string"},
      {"01", "f.json:1:1: a number may not start with 0"},
      {"1.", "expected digits after '.'"},
      {"tru", "f.json:1:1: expected a JSON value"},
      {"{} x", "f.json:1:4: unexpected text after the JSON value"},
      {"\"\\q\"", "unknown escape '\\q'"},
      {"\"\\ud800x\"", "a high surrogate must be followed by a low one"},
      {"", "unexpected end of input"},
      {"{'a': 1}", "expected '\"' to start an object key"},
      {"NaN", "expected a JSON value"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK_THROWS_WITH(Json::parse(c.text, "f.json"), has_substring(c.message));
  }
  // Line numbers continue from where the text starts in its file (metrics.jsonl line 17).
  CHECK_THROWS_WITH(Json::parse("{\"a\":}", "m.jsonl", 17), has_substring("m.jsonl:17:6:"));
  std::string deep(300, '[');
  CHECK_THROWS_WITH(Json::parse(deep, "deep"), has_substring("nesting deeper than 256"));
}
