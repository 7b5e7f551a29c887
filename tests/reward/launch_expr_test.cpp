// Launch expressions: the grammar, int64 evaluation, and every error with its column.
#include "sparserl/reward/launch_expr.hpp"

#include <limits>

#include "catch.hpp"
#include "test_support.hpp"

using namespace sparserl::reward;
using sparserl::testing::has_substring;

namespace {

const Constants kConstants(
    {{"M", 1000}, {"N", 800}, {"NNZ", 12345}, {"K", 8}, {"Z", 0}, {"BIG", std::int64_t{1} << 62}});

std::int64_t value(const std::string& text) {
  const LaunchExprParse p = LaunchExpr::parse(text);
  INFO(text << ": " << p.error.message);
  REQUIRE(p.ok());
  const LaunchExprValue v = p.expr->evaluate(kConstants);
  INFO(text << ": " << (v.error ? v.error->message : ""));
  REQUIRE(v.ok());
  return v.value;
}

ExprError parse_error(const std::string& text,
                      const std::vector<std::string_view>* names = nullptr) {
  const LaunchExprParse p = LaunchExpr::parse(text, names);
  INFO(text);
  REQUIRE_FALSE(p.ok());
  return p.error;
}

ExprError eval_error(const std::string& text) {
  const LaunchExprParse p = LaunchExpr::parse(text);
  REQUIRE(p.ok());
  const LaunchExprValue v = p.expr->evaluate(kConstants);
  INFO(text);
  REQUIRE_FALSE(v.ok());
  return *v.error;
}

// The error is at `column` (0: the column is not checked) and its message says `part` (nullptr: the
// message is not checked).
void check_error(const ExprError& e, int column, const char* part) {
  INFO("column " << e.column << ": " << e.message);
  if (column != 0) CHECK(e.column == column);
  if (part != nullptr) CHECK_THAT(e.message, has_substring(part));
}

}  // namespace

TEST_CASE("launch expressions evaluate in int64 with C precedence", "[reward][launch_expr]") {
  CHECK(value("128") == 128);
  CHECK(value("M") == 1000);
  CHECK(value("M + 1") == 1001);
  CHECK(value("2 + 3 * 4") == 14);
  CHECK(value("(2 + 3) * 4") == 20);
  CHECK(value("10 - 4 - 3") == 3);  // left associative
  CHECK(value("100 / 10 / 5") == 2);
  CHECK(value("7 / 2") == 3);
  CHECK(value("-7 / 2") == -3);  // truncation toward zero, as in C
  CHECK(value("- -5") == 5);
  CHECK(value("ceil_div(M, 128)") == 8);
  CHECK(value("ceil_div(1024, 128)") == 8);
  CHECK(value("ceil_div(0, 128)") == 0);
  CHECK(value("ceil_div(-7, 2)") == -3);
  CHECK(value("min(M, N)") == 800);
  CHECK(value("max(M, N)") == 1000);
  CHECK(value("ceil_div(M * K, max(32, min(256, NNZ / M * 32)))") == 32);
  CHECK(value("  ceil_div ( NNZ , 256 )  ") == 49);
  CHECK(value("BIG - 1 + BIG") == std::numeric_limits<std::int64_t>::max());
  CHECK(value("9223372036854775807") == std::numeric_limits<std::int64_t>::max());
}

TEST_CASE("launch expressions report the names they use", "[reward][launch_expr]") {
  const auto p = LaunchExpr::parse("ceil_div(M * K, 256) + M + N");
  REQUIRE(p.ok());
  CHECK(p.expr->names() == std::vector<std::string>{"M", "K", "N"});
  CHECK(p.expr->text() == "ceil_div(M * K, 256) + M + N");
  const LaunchExpr zero;
  CHECK(zero.evaluate(kConstants).value == 0);
  CHECK(zero.text() == "0");
}

TEST_CASE("launch expression syntax errors carry their column", "[reward][launch_expr]") {
  check_error(parse_error("M +"), 4, "unexpected end");
  check_error(parse_error("ceil_div(M, 4) 7"), 16, "after the expression");
  check_error(parse_error("M % 4"), 3, nullptr);
  check_error(parse_error("(M + 1"), 0, "expected ')'");
  check_error(parse_error("ceil_div(M)"), 0, "two arguments");
  check_error(parse_error("pow(M, 2)"), 1, "unknown function 'pow'");
  check_error(parse_error("min + 1"), 0, "is a function");
  check_error(parse_error("0x10"), 0, "decimal integer");
  check_error(parse_error("99999999999999999999"), 0, "64 bits");
  check_error(parse_error(""), 0, "empty");
  check_error(parse_error(std::string(300, '1')), 0, "longer than");

  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "(";
  deep += "1";
  for (int i = 0; i < 40; ++i) deep += ")";
  CHECK_THAT(parse_error(deep).message, has_substring("nested deeper"));
}

TEST_CASE("unknown names fail at parse time when the names are given", "[reward][launch_expr]") {
  const std::vector<std::string_view> names = {"M", "N", "NNZ"};
  CHECK(LaunchExpr::parse("ceil_div(NNZ, M)", &names).ok());
  check_error(parse_error("M + ELL_WIDTH", &names), 5, "unknown name 'ELL_WIDTH'");
  // Without a name list the same text parses and fails at evaluation.
  check_error(eval_error("M + ELL_WIDTH"), 5, "unknown name");
}

TEST_CASE("division by zero and overflow are evaluation errors", "[reward][launch_expr]") {
  check_error(eval_error("M / Z"), 3, "division by zero");
  check_error(eval_error("ceil_div(M, Z)"), 1, "division by zero in ceil_div");
  check_error(eval_error("BIG * 4"), 5, "overflow");
  CHECK_THAT(eval_error("BIG + BIG + BIG").message, has_substring("overflow in '+'"));
  CHECK_THAT(eval_error("-BIG - BIG - BIG").message, has_substring("overflow in '-'"));
  CHECK_THAT(eval_error("(-9223372036854775807 - 1) / -1").message, has_substring("overflow"));
  CHECK_THAT(eval_error("-(-9223372036854775807 - 1)").message, has_substring("overflow"));
}
