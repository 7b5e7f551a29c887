// Launch expressions: the tiny language of `//@launch NAME grid=EXPR block=EXPR smem=EXPR`. An
// expression is integer literals, prelude constants (abi.hpp), + - * / (integer division truncating
// toward zero, as in C), unary minus, parentheses, ceil_div(a, b), min(a, b) and max(a, b),
// evaluated in int64. Parsing needs only the text (and the names allowed for the program's format);
// evaluation needs the matrix's constants, so errors that depend on the matrix (division by zero,
// overflow) come from evaluate(). Every error carries the 1-based column in the expression text, so
// a directive error can point at the character.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/reward/abi.hpp"

namespace sparserl::reward {

struct ExprError {
  std::string message;
  int column = 0;  // 1-based, within the expression text
};

struct LaunchExprParse;
struct LaunchExprValue;

class LaunchExpr {
 public:
  LaunchExpr();  // the literal 0 (a launch without smem=)

  // Parses `text`. With `allowed`, a name outside it is an error at parse time; without, any
  // identifier parses and an unknown one fails at evaluation. Longer than 256 characters or nested
  // deeper than 32 is an error.
  static LaunchExprParse parse(std::string_view text,
                               const std::vector<std::string_view>* allowed = nullptr);

  [[nodiscard]] LaunchExprValue evaluate(const Constants& constants) const;
  [[nodiscard]] const std::string& text() const { return text_; }
  // The distinct constant names the expression uses, in order of first use.
  [[nodiscard]] std::vector<std::string> names() const;

  // One step of the postfix program the parser emits (public for the tests' sake only).
  struct Step {
    enum class Kind { literal, name, add, sub, mul, div, neg, ceil_div, min, max };
    Kind kind = Kind::literal;
    std::int64_t literal = 0;
    std::string name;
    int column = 0;
  };

 private:
  std::string text_;
  std::vector<Step> steps_;
};

struct LaunchExprParse {
  std::optional<LaunchExpr> expr;
  ExprError error;  // meaningful when !ok()
  [[nodiscard]] bool ok() const { return expr.has_value(); }
};

struct LaunchExprValue {
  std::int64_t value = 0;
  std::optional<ExprError> error;
  [[nodiscard]] bool ok() const { return !error.has_value(); }
};

inline constexpr std::size_t kMaxLaunchExprLength = 256;
inline constexpr int kMaxLaunchExprDepth = 32;

}  // namespace sparserl::reward
