// A recursive-descent parser that emits a postfix program, and a checked int64 evaluator for it.
// Postfix keeps LaunchExpr a plain copyable value and makes evaluation a loop over a small stack.
#include "sparserl/reward/launch_expr.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

namespace sparserl::reward {
namespace {

using Step = LaunchExpr::Step;
using Kind = LaunchExpr::Step::Kind;

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Parser {
 public:
  Parser(std::string_view text, const std::vector<std::string_view>* allowed)
      : text_(text), allowed_(allowed) {}

  bool run(std::vector<Step>& steps, ExprError& error) {
    skip_space();
    if (pos_ >= text_.size()) fail("empty expression: expected an integer expression");
    if (failed_ || !expression(0)) {
      error = error_;
      return false;
    }
    skip_space();
    if (pos_ < text_.size()) {
      fail("unexpected '" + std::string(1, text_[pos_]) +
           "' after the expression: expected + - * / or the end");
      error = error_;
      return false;
    }
    steps = std::move(steps_);
    return true;
  }

 private:
  int column() const { return static_cast<int>(pos_) + 1; }

  bool fail(std::string message) { return fail_at(std::move(message), column()); }
  bool fail_at(std::string message, int column) {
    if (!failed_) {
      error_ = {std::move(message), column};
      failed_ = true;
    }
    return false;
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }

  bool expression(int depth) {
    if (depth > kMaxLaunchExprDepth) {
      return fail("expression nested deeper than " + std::to_string(kMaxLaunchExprDepth));
    }
    return binary(depth, '+', Kind::add, '-', Kind::sub, &Parser::term);
  }

  bool term(int depth) { return binary(depth, '*', Kind::mul, '/', Kind::div, &Parser::unary); }

  // One level of left-associative binary operators: operands parsed by `operand`, joined by `a`
  // (step a_kind) or `b` (step b_kind).
  bool binary(int depth, char a, Kind a_kind, char b, Kind b_kind, bool (Parser::*operand)(int)) {
    if (!(this->*operand)(depth)) return false;
    for (;;) {
      skip_space();
      if (pos_ >= text_.size() || (text_[pos_] != a && text_[pos_] != b)) return true;
      const Kind kind = text_[pos_] == a ? a_kind : b_kind;
      const int col = column();
      ++pos_;
      if (!(this->*operand)(depth)) return false;
      steps_.push_back({kind, 0, {}, col});
    }
  }

  bool unary(int depth) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '-') {
      const int col = column();
      ++pos_;
      if (depth + 1 > kMaxLaunchExprDepth) {
        return fail("expression nested deeper than " + std::to_string(kMaxLaunchExprDepth));
      }
      if (!unary(depth + 1)) return false;
      steps_.push_back({Kind::neg, 0, {}, col});
      return true;
    }
    return primary(depth);
  }

  bool primary(int depth) {
    skip_space();
    if (pos_ >= text_.size()) return fail("unexpected end: expected a number, a name or '('");
    const char c = text_[pos_];
    const int col = column();
    if (std::isdigit(static_cast<unsigned char>(c))) {
      std::int64_t value = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        const int digit = text_[pos_] - '0';
        if (value > (std::numeric_limits<std::int64_t>::max() - digit) / 10) {
          return fail_at("integer literal does not fit in 64 bits", col);
        }
        value = value * 10 + digit;
        ++pos_;
      }
      if (pos_ < text_.size() && is_name_char(text_[pos_])) {
        return fail("unexpected '" + std::string(1, text_[pos_]) +
                    "' in a number: only decimal integer literals are allowed");
      }
      steps_.push_back({Kind::literal, value, {}, col});
      return true;
    }
    if (c == '(') {
      ++pos_;
      if (!expression(depth + 1)) return false;
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != ')')
        return fail("expected ')' to close '(' at column " + std::to_string(col));
      ++pos_;
      return true;
    }
    if (is_name_start(c)) {
      const std::size_t start = pos_;
      while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
      const std::string name(text_.substr(start, pos_ - start));
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == '(') {
        Kind kind;
        if (name == "ceil_div") {
          kind = Kind::ceil_div;
        } else if (name == "min") {
          kind = Kind::min;
        } else if (name == "max") {
          kind = Kind::max;
        } else {
          return fail_at("unknown function '" + name + "': expected ceil_div, min or max", col);
        }
        ++pos_;
        if (!expression(depth + 1)) return false;
        skip_space();
        if (pos_ >= text_.size() || text_[pos_] != ',') {
          return fail("expected ',': " + name + " takes two arguments");
        }
        ++pos_;
        if (!expression(depth + 1)) return false;
        skip_space();
        if (pos_ >= text_.size() || text_[pos_] != ')') {
          return fail("expected ')': " + name + " takes two arguments");
        }
        ++pos_;
        steps_.push_back({kind, 0, {}, col});
        return true;
      }
      if (name == "ceil_div" || name == "min" || name == "max") {
        return fail_at("'" + name + "' is a function: write " + name + "(a, b)", col);
      }
      if (allowed_ != nullptr &&
          std::find(allowed_->begin(), allowed_->end(), name) == allowed_->end()) {
        return fail_at("unknown name '" + name + "': expected a prelude constant of this format",
                       col);
      }
      steps_.push_back({Kind::name, 0, name, col});
      return true;
    }
    return fail("unexpected '" + std::string(1, c) + "': expected a number, a name or '('");
  }

  std::string_view text_;
  const std::vector<std::string_view>* allowed_;
  std::size_t pos_ = 0;
  std::vector<Step> steps_;
  ExprError error_;
  bool failed_ = false;
};

}  // namespace

LaunchExpr::LaunchExpr() : text_("0"), steps_{{Kind::literal, 0, {}, 1}} {}

LaunchExprParse LaunchExpr::parse(std::string_view text,
                                  const std::vector<std::string_view>* allowed) {
  LaunchExprParse result;
  if (text.size() > kMaxLaunchExprLength) {
    result.error = {
        "expression longer than " + std::to_string(kMaxLaunchExprLength) + " characters",
        static_cast<int>(kMaxLaunchExprLength) + 1};
    return result;
  }
  std::vector<Step> steps;
  Parser parser(text, allowed);
  if (!parser.run(steps, result.error)) return result;
  LaunchExpr expr;
  expr.text_ = std::string(text);
  expr.steps_ = std::move(steps);
  result.expr = std::move(expr);
  return result;
}

LaunchExprValue LaunchExpr::evaluate(const Constants& constants) const {
  LaunchExprValue result;
  std::vector<std::int64_t> stack;
  stack.reserve(steps_.size());
  auto fail = [&](std::string message, int column) {
    result.error = ExprError{std::move(message), column};
    return result;
  };
  for (const Step& step : steps_) {
    if (step.kind == Kind::literal) {
      stack.push_back(step.literal);
      continue;
    }
    if (step.kind == Kind::name) {
      const auto value = constants.find(step.name);
      if (!value) return fail("unknown name '" + step.name + "'", step.column);
      stack.push_back(*value);
      continue;
    }
    if (step.kind == Kind::neg) {
      if (stack.back() == std::numeric_limits<std::int64_t>::min()) {
        return fail("overflow in unary minus", step.column);
      }
      stack.back() = -stack.back();
      continue;
    }
    const std::int64_t b = stack.back();
    stack.pop_back();
    const std::int64_t a = stack.back();
    std::int64_t r = 0;
    switch (step.kind) {
      case Kind::add:
        if (__builtin_add_overflow(a, b, &r)) return fail("overflow in '+'", step.column);
        break;
      case Kind::sub:
        if (__builtin_sub_overflow(a, b, &r)) return fail("overflow in '-'", step.column);
        break;
      case Kind::mul:
        if (__builtin_mul_overflow(a, b, &r)) return fail("overflow in '*'", step.column);
        break;
      case Kind::div:
      case Kind::ceil_div: {
        const char* what = step.kind == Kind::div ? "'/'" : "ceil_div";
        if (b == 0) return fail(std::string("division by zero in ") + what, step.column);
        if (a == std::numeric_limits<std::int64_t>::min() && b == -1) {
          return fail(std::string("overflow in ") + what, step.column);
        }
        r = a / b;
        // Ceiling: round up when there is a remainder and the exact quotient is positive.
        if (step.kind == Kind::ceil_div && a % b != 0 && ((a < 0) == (b < 0))) ++r;
        break;
      }
      case Kind::min:
        r = std::min(a, b);
        break;
      case Kind::max:
        r = std::max(a, b);
        break;
      default:
        break;
    }
    stack.back() = r;
  }
  result.value = stack.empty() ? 0 : stack.back();
  return result;
}

std::vector<std::string> LaunchExpr::names() const {
  std::vector<std::string> names;
  for (const Step& step : steps_) {
    if (step.kind == Kind::name &&
        std::find(names.begin(), names.end(), step.name) == names.end()) {
      names.push_back(step.name);
    }
  }
  return names;
}

}  // namespace sparserl::reward
