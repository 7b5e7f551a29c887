// The run directory's JSON (nlohmann::ordered_json and json.hpp's layer over it): strings are
// escaped so any reader takes them back, doubles print in a form that reads back to the same bits,
// NaN and infinities become null, integers stay exact, members keep their order, and malformed
// input names the source, line and column.
#include "sparserl/experiments/json.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "catch.hpp"
#include "test_support.hpp"

using namespace sparserl::experiments;
using sparserl::testing::has_substring;

TEST_CASE("strings are escaped and read back", "[experiments][json]") {
  CHECK(json_quote("plain") == "\"plain\"");
  CHECK(json_quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(json_quote("line\nnext\ttab\r") == "\"line\\nnext\\ttab\\r\"");
  CHECK(json_quote(std::string("nul\0x", 5)) == "\"nul\\u0000x\"");
  // RFC 8259 escapes U+0000..U+001F only; nlohmann writes DEL (0x7F) as it is (the hand-written
  // writer escaped it as \u007f). Either reads back the same.
  CHECK(json_quote("\x1f\x7f") == "\"\\u001f\x7f\"");
  CHECK(json_quote("Grüße, 東京") == "\"Grüße, 東京\"");  // UTF-8 passes through
  // Bytes that are not UTF-8 (a compiler log, a path) become U+FFFD rather than an exception.
  CHECK(json_quote(std::string("a\xff") + "z") == "\"a\xef\xbf\xbdz\"");

  const std::string nasty =
      std::string("q\"b\\s/\b\f\n\r\t\x01\x7f ü", 17) + std::string(1, '\0') + "end";
  const Json back = parse_json(json_quote(nasty), "test");
  CHECK(as_string(back) == nasty);
  // Escapes other writers use.
  CHECK(as_string(parse_json(R"("\u00fc\/\u6771\ud83d\ude00")", "t")) == "ü/東😀");
}

TEST_CASE("doubles print in a form that reads back to the same bits; NaN and infinities are null",
          "[experiments][json]") {
  CHECK(json_number(0.1) == "0.1");
  CHECK(json_number(3.0) == "3.0");
  CHECK(json_number(-0.0) == "-0.0");
  CHECK(json_number(1e300) == "1e+300");
  CHECK(json_number(5e-324) == "5e-324");
  CHECK(json_number(1.0 / 3.0) == "0.3333333333333333");
  // nlohmann's choice between fixed and exponent form (printf's %g rule: fixed for decimal
  // exponents -4..15), where std::to_chars took the shorter text: 1e+06 and 1e-04 before.
  CHECK(json_number(1e6) == "1000000.0");
  CHECK(json_number(1e-4) == "0.0001");
  CHECK(json_number(1e-5) == "1e-05");
  CHECK(json_number(1e16) == "1e+16");
  CHECK(json_number(std::nan("")) == "null");
  CHECK(json_number(std::numeric_limits<double>::infinity()) == "null");
  CHECK(json_number(-std::numeric_limits<double>::infinity()) == "null");

  // nlohmann's Grisu2 is not always the shortest text (a digit or two more for about 1 in 1,000
  // random bit patterns), but always the same bits back.
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::uint64_t> bits;
  int checked = 0;
  for (int i = 0; i < 20000; ++i) {
    std::uint64_t b = bits(rng);
    double d = 0;
    std::memcpy(&d, &b, sizeof d);
    if (!std::isfinite(d)) continue;
    const Json back = parse_json(json_number(d), "t");
    REQUIRE(back.is_number_float());  // stays a number, never turns into an integer
    const double read = as_number(back);
    REQUIRE(std::memcmp(&d, &read, sizeof d) == 0);
    ++checked;
  }
  CHECK(checked > 19000);
  const Json with_nan = parse_json(dump_json(Json{{"x", std::nan("")}}), "t");
  CHECK(with_nan.at("x").is_null());
  CHECK(std::isnan(as_number(with_nan.at("x"))));
}

TEST_CASE("integers stay exact; objects keep their order", "[experiments][json]") {
  Json o = Json::object();
  o["seed"] = std::uint64_t{9200000000000000000ULL};
  o["step"] = -3;
  o["name"] = "run";
  o["flags"] = Json::array({true, false, nullptr});
  o["empty"] = Json::object();
  o["none"] = Json::array();
  o["step"] = 12;  // replaces in place
  CHECK(dump_json(o) ==
        R"({"seed":9200000000000000000,"step":12,"name":"run","flags":[true,false,null],)"
        R"("empty":{},"none":[]})");
  // run.json's layout: two spaces, "key": value, empty containers on one line.
  CHECK(
      dump_json(o, 2) ==
      "{\n  \"seed\": 9200000000000000000,\n  \"step\": 12,\n  \"name\": \"run\",\n"
      "  \"flags\": [\n    true,\n    false,\n    null\n  ],\n  \"empty\": {},\n  \"none\": []\n}");
  const Json back = parse_json(dump_json(o, 2), "t");
  CHECK(back == o);
  CHECK(as_integer(back.at("seed")) == 9200000000000000000LL);
  CHECK(find_member(back, "absent") == nullptr);
  CHECK(find_member(Json("not an object"), "seed") == nullptr);
  // Duplicate keys: the last value wins, in the place of the first (as the hand-written reader).
  CHECK(dump_json(parse_json(R"({"a":1,"b":2,"a":3})", "t")) == R"({"a":3,"b":2})");
  // Beyond int64 but within uint64 stays exact (the hand-written reader rounded it to a double):
  // seeds use all 64 bits.
  const Json big = parse_json("18446744073709551615", "t");
  CHECK(as_unsigned(big) == 18446744073709551615ULL);
  CHECK_THROWS_WITH(as_integer(big), has_substring("18446744073709551615 (beyond int64)"));
  CHECK(dump_json(Json(std::uint64_t{18446744073709551615ULL})) == "18446744073709551615");
  CHECK(parse_json("123456789012345678901234", "t").is_number_float());  // beyond uint64
  CHECK(parse_json("  {\"a\" : [1, 2.5, {\"b\": {}}]}\n", "t").at("a").size() == 3);
  // A number beyond double was read as infinity; nlohmann refuses it, and the message says where.
  CHECK_THROWS_WITH(parse_json("[1,\n 1e400]", "f.json"),
                    has_substring("f.json:2:6: number overflow parsing '1e400'"));
}

TEST_CASE("wrong kinds and malformed text are errors that say where", "[experiments][json]") {
  CHECK_THROWS_WITH(as_integer(Json("x")), has_substring("expected an integer, found a string"));
  CHECK_THROWS_WITH(as_integer(Json(2.5)), has_substring("found the number 2.5"));
  CHECK(as_integer(Json(4.0)) == 4);
  CHECK_THROWS_WITH(as_unsigned(Json(-3)), has_substring("expected an integer >= 0, found -3"));
  CHECK_THROWS_WITH(as_string(Json::array()), has_substring("expected a string, found an array"));

  // The place is where nlohmann's reader stopped: the byte it could not take, or the last byte of a
  // token that does not belong there. The words are nlohmann's (the hand-written reader's were
  // shorter, and put "01", "tru" and "NaN" at their first byte).
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"{\"a\" 1}",
       "f.json:1:6: syntax error while parsing object separator - unexpected number "
       "literal; expected ':'"},
      {"{\"a\": 1,\n  \"b\": }", "f.json:2:8: syntax error while parsing value - unexpected '}'"},
      {"[1, 2",
       "f.json:1:6: syntax error while parsing array - unexpected end of input; "
       "expected ']'"},
      {"\"abc",
       "f.json:1:5: syntax error while parsing value - invalid string: missing closing "
       "quote"},
      {"\"a\nb\"",
       "f.json:1:3: syntax error while parsing value - invalid string: control "
       "character U+000A (LF) must be escaped"},
      {"01",
       "f.json:1:2: syntax error while parsing value - unexpected number literal; expected "
       "end of input"},
      {"1.",
       "f.json:1:3: syntax error while parsing value - invalid number; expected digit "
       "after '.'"},
      {"tru", "f.json:1:4: syntax error while parsing value - invalid literal"},
      {"{} x", "f.json:1:4: syntax error while parsing value - invalid literal"},
      {"\"\\q\"",
       "f.json:1:3: syntax error while parsing value - invalid string: forbidden "
       "character after backslash"},
      {"\"\\ud800x\"",
       "f.json:1:8: syntax error while parsing value - invalid string: surrogate "
       "U+D800..U+DBFF must be followed by U+DC00..U+DFFF"},
      {"", "f.json:1:1: syntax error while parsing value - unexpected end of input"},
      {"{'a': 1}", "f.json:1:2: syntax error while parsing object key - invalid literal"},
      {"NaN", "f.json:1:1: syntax error while parsing value - invalid literal"},
      {"[1,\n  2,\n  x]", "f.json:3:3: syntax error while parsing value - invalid literal"},
      {"\"a\xff\"",
       "f.json:1:3: syntax error while parsing value - invalid string: ill-formed "
       "UTF-8 byte"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK_THROWS_AS(parse_json(c.text, "f.json"), JsonError);
    CHECK_THROWS_WITH(parse_json(c.text, "f.json"), has_substring(c.message));
  }
  // Line numbers continue from where the text starts in its file (metrics.jsonl line 17).
  CHECK_THROWS_WITH(parse_json("{\"a\":}", "m.jsonl", 17), has_substring("m.jsonl:17:6: "));
  CHECK_THROWS_WITH(parse_json("{\n\"a\":}", "m.jsonl", 17), has_substring("m.jsonl:18:5: "));
  // nlohmann's reader does not recurse, but copying and writing a value do: 257 levels (0..256)
  // are read, the 258th opening bracket is refused where it stands.
  CHECK_NOTHROW(parse_json(std::string(257, '[') + std::string(257, ']'), "deep"));
  std::string deep = "{\"a\": \"[[[\",\n \"b\": " + std::string(300, '[');
  CHECK_THROWS_WITH(parse_json(deep, "deep"),
                    has_substring("deep:2:263: nesting deeper than 256 levels"));
}
