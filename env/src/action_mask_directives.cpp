// The directive lines that open a program (kDirectiveRules): the //@format line first - a format
// name, then its keys in order with values in range (sell C=1..1024 sigma=1..2^30, bsr R=1..32
// C=1..32) - then 1..8 //@launch lines, each a canonical local as the kernel name and grid=EXPR
// block=EXPR [smem=EXPR]; after a launch line the code may start. Each EXPR (kExpressionRules) is
// a well-formed launch expression over the constants the format defines, numbers, + - * /,
// ceil_div / min / max calls and parentheses, at most 256 characters as decode() renders it. What
// reward's geometry check (resolve_launches, bad_geometry) evaluates them to is kept in range:
// block= and smem= are a literal in range (1..1024 threads, 0..48 KiB; what the design space
// writes), and grid= is judged by interval arithmetic over every matrix's constants (Range): no
// division by a divisor that may be zero, and the value at least 1 where the completion path
// (min_completion's) would close the expression - so a token is refused where the expression
// could only be closed that way into a grid that is not. Literals in grid= are at most 65536. Not
// bounded: a grid too large for gridDim (the constants have no upper bound here; the design
// space's own grids would exceed it on matrices wide enough).
#include <algorithm>

#include "action_mask_internal.hpp"
#include "sparserl/reward/abi.hpp"
#include "sparserl/reward/launch_expr.hpp"
#include "sparserl/reward/program.hpp"

namespace sparserl::env::detail {
namespace {

// --- the //@format line ---

// The format's keys in order: sell C= sigma=, bsr R= C=.
Cat format_key(int format, int key) {
  const bool sell = format == static_cast<int>(reward::Format::sell);
  if (key == 0) return sell ? Cat::key_c : Cat::key_r;
  return sell ? Cat::key_sigma : Cat::key_c;
}
std::int64_t format_key_max(int format, int key) {
  if (format == static_cast<int>(reward::Format::sell)) {
    return key == 0 ? reward::kMaxSellC : reward::kMaxSellSigma;
  }
  return reward::kMaxBsrBlock;
}

template <Phase kNext>
void goes_on(const Tables&, State& s, const TokenInfo&) {
  s.phase = kNext;
}
void take_format(const Tables&, State& s, const TokenInfo& k) {
  s.format = k.param;
  s.key = 0;
  s.phase = is_param_format(s.format) ? Phase::format_key : Phase::format_eol;
}
Verdict next_key(const Tables&, const State& s, const TokenInfo& k) {
  return allow_if(k.cat == format_key(s.format, s.key));
}
void start_key_value(const Tables&, State& s, const TokenInfo&) {
  s.phase = Phase::format_num;
  s.digits = 0;
  s.value = 0;
}
// A key's value: decimal, no leading zero, within the key's range.
Verdict key_digit(const Tables&, const State& s, const TokenInfo& k) {
  const char c = static_cast<char>(k.param);
  if (!is_dec(c) || (s.digits == 0 && c == '0')) return Verdict::refuse;
  return allow_if(s.value * 10 + (c - '0') <= format_key_max(s.format, s.key));
}
void take_key_digit(const Tables&, State& s, const TokenInfo& k) {
  s.value = s.value * 10 + (static_cast<char>(k.param) - '0');
  ++s.digits;
}
Verdict second_key(const Tables&, const State& s, const TokenInfo& k) {
  return allow_if(s.digits > 0 && s.key == 0 && k.cat == format_key(s.format, 1));
}
void take_second_key(const Tables&, State& s, const TokenInfo&) {
  s.key = 1;
  s.phase = Phase::format_num_start;
}
Verdict keys_complete(const Tables&, const State& s, const TokenInfo&) {
  return allow_if(s.digits > 0 && s.key == 1);
}

// --- the //@launch lines ---

Verdict launch_fits(const Tables&, const State& s, const TokenInfo&) {
  return allow_if(s.launches < reward::kMaxLaunches);
}
void start_launch(const Tables&, State& s, const TokenInfo&) {
  ++s.launches;
  s.phase = Phase::launch_name;
}
// After the first launch line the code may start: its tokens pass to the code rules.
Verdict code_after_launch(const Tables&, const State& s, const TokenInfo&) {
  return s.launches > 0 ? Verdict::pass : Verdict::refuse;
}
void start_code(const Tables& t, State& s, const TokenInfo& k) {
  s.phase = Phase::code;
  take_code_token(t, s, k);
}
// A kernel name is one of the first kMaxKernelLocal locals (a bit of launched / defined).
Verdict kernel_name(const Tables& t, const State& s, const TokenInfo& k) {
  return allow_if(k.local <= s.locals_used && k.local < t.locals && k.local < kMaxKernelLocal);
}
void take_kernel_name(const Tables&, State& s, const TokenInfo& k) {
  count_local(s, k);
  s.launched = static_cast<std::uint16_t>(s.launched | (1u << k.local));
  s.phase = Phase::launch_key;
}
// grid='s values are kept while it is written (and cleared after it, so that states of equal
// code do not differ by their grid= - the BPE mask caches masks by state).
void clear_values(State& s) {
  s.sums = {};
  s.terms = {};
  s.firsts = {};
  s.evals = {};
  s.negate = false;
  s.divides_by_zero = false;
  s.function = 0;
}
void start_expression(const Tables&, State& s, const TokenInfo&) {
  clear_values(s);
  s.phase = Phase::expr;
  s.which = 0;
  s.es = Expr::operand;
  s.nframes = 0;
  s.unary = 0;
  s.chars = 0;
}

constexpr CatSet kKeys = cats(Cat::key_c, Cat::key_sigma, Cat::key_r);

constexpr Rule kDirectiveRules[] = {
    // at, categories, judge, take
    {on(Phase::start), cats(Cat::format), allow, goes_on<Phase::format_name>},
    {on(Phase::format_name), cats(Cat::format_name), allow, take_format},
    {on(Phase::format_key), kKeys, next_key, goes_on<Phase::format_num_start>},
    {on(Phase::format_num_start), cats(Cat::num), allow, start_key_value},
    {on(Phase::format_num), cats(Cat::digit), key_digit, take_key_digit},
    {on(Phase::format_num), kKeys, second_key, take_second_key},
    {on(Phase::format_num), cats(Cat::eol), keys_complete, goes_on<Phase::launch_start>},
    {on(Phase::format_eol), cats(Cat::eol), allow, goes_on<Phase::launch_start>},
    {on(Phase::launch_start), cats(Cat::launch), launch_fits, start_launch},
    {on(Phase::launch_start), kAnyCat, code_after_launch, start_code},
    {on(Phase::launch_name), cats(Cat::local), kernel_name, take_kernel_name},
    {on(Phase::launch_key), cats(Cat::key_grid), allow, start_expression},
};

// --- grid='s possible values ---
// Interval arithmetic in int64 where kInf stands for an unbounded bound; a Range keeps int32
// bounds, lower bounds beyond it clamped (still a lower bound), upper bounds beyond it unbounded.
// Finite bounds are at most 2^31 in magnitude, so products fit.

using Wide = std::int64_t;
constexpr Wide kInf = Wide{1} << 40, kBig = kPosInf - 1;

Wide low(const Range& r) { return r.lo == kNegInf ? -kInf : r.lo; }
Wide high(const Range& r) { return r.hi == kPosInf ? kInf : r.hi; }
Range narrow(Wide lo, Wide hi) {
  return {lo <= -kBig ? kNegInf : static_cast<std::int32_t>(std::min(lo, kBig)),
          hi >= kBig ? kPosInf : static_cast<std::int32_t>(std::max(hi, -kBig))};
}
bool unbounded(Wide v) { return v >= kInf || v <= -kInf; }
Wide times(Wide a, Wide b) {
  if (a == 0 || b == 0) return 0;
  if (unbounded(a) || unbounded(b)) return (a < 0) != (b < 0) ? -kInf : kInf;
  return a * b;
}
// a / b truncated, or its ceiling (reward's ceil_div), b != 0; the limits where a bound is
// unbounded (both: the bound of the quotients' side of 0 nearest to it - 1 for a positive
// ceiling, else 0 - which with the other corners' values bounds every quotient).
Wide quotient(Wide a, Wide b, bool ceiling) {
  if (unbounded(a) && unbounded(b)) return ceiling && (a < 0) == (b < 0) ? 1 : 0;
  if (unbounded(b)) return ceiling && a != 0 && (a < 0) == (b < 0) ? 1 : 0;
  if (unbounded(a)) return (a < 0) != (b < 0) ? -kInf : kInf;
  Wide r = a / b;
  if (ceiling && a % b != 0 && (a < 0) == (b < 0)) ++r;
  return r;
}
// The hull of f over the corners (f monotone in each argument on either side of 0).
template <class F>
Range corners(const Range& a, const Range& b, F f) {
  Wide lo = kInf, hi = -kInf;
  for (Wide x : {low(a), high(a)}) {
    for (Wide y : {low(b), high(b)}) {
      lo = std::min(lo, f(x, y));
      hi = std::max(hi, f(x, y));
    }
  }
  return narrow(lo, hi);
}
Range negated(const Range& r) { return narrow(-high(r), -low(r)); }
Range divided(const Range& a, const Range& b, bool ceiling, bool& by_zero) {
  if (low(b) <= 0 && high(b) >= 0) {
    by_zero = true;
    return a;
  }
  return corners(a, b, [ceiling](Wide x, Wide y) { return quotient(x, y, ceiling); });
}
Range called(int function, const Range& a, const Range& b, bool& by_zero) {
  switch (function) {
    case fn_ceil_div:
      return divided(a, b, true, by_zero);
    case fn_min:
      return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    default:
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
  }
}

// The value of frame i so far: its sum joined with its term.
Range frame_value(const State& s, int i) {
  const auto f = static_cast<std::size_t>(i);
  switch (s.evals[f] & kSumMask) {
    case kSumPlus:
      return narrow(low(s.sums[f]) + low(s.terms[f]), high(s.sums[f]) + high(s.terms[f]));
    case kSumMinus:
      return narrow(low(s.sums[f]) - high(s.terms[f]), high(s.sums[f]) - low(s.terms[f]));
    default:
      return s.terms[f];
  }
}
// An operand's value (after its unary minus signs) joins the term of the frame under way.
void join_operand(State& s, Range v) {
  if (s.negate) v = negated(v);
  s.negate = false;
  const std::size_t f = s.nframes;
  switch (s.evals[f] & kTermMask) {
    case kTermMul:
      s.terms[f] = corners(s.terms[f], v, times);
      break;
    case kTermDiv:
      s.terms[f] = divided(s.terms[f], v, false, s.divides_by_zero);
      break;
    default:
      s.terms[f] = v;
  }
  s.evals[f] = static_cast<std::uint8_t>((s.evals[f] & ~kTermMask) | kTermDone);
}
// A literal ends at the token after its last digit.
void end_literal(State& s) {
  if (s.es == Expr::number) join_operand(s, narrow(s.value, s.value));
}
// Opens frame nframes + 1 (a parenthesis, or a call of `function`), taking the pending negation.
void open_frame(State& s, int function) {
  s.evals[s.nframes + 1u] =
      static_cast<std::uint8_t>((s.negate ? kNegateFrame : 0) | (function << kFnShift));
  s.negate = false;
}
// The innermost frame closes: its value (a call's result) is an operand of the frame below.
void close_value(State& s) {
  const std::size_t f = s.nframes;
  Range v = frame_value(s, s.nframes);
  const int function = s.evals[f] >> kFnShift;
  if (function != fn_none) v = called(function, s.firsts[f], v, s.divides_by_zero);
  if ((s.evals[f] & kNegateFrame) != 0) v = negated(v);
  --s.nframes;
  join_operand(s, v);
}

// --- launch expressions ---
// Each take adds the characters decode() renders for the token (State::chars) and moves grid='s
// possible values.

void grow(State& s, int chars) { s.chars = static_cast<std::uint16_t>(s.chars + chars); }

// grid= is an expression; block= and smem= a literal alone.
bool in_grid(const State& s) { return s.which == 0; }

Verdict format_constant(const Tables&, const State& s, const TokenInfo& k) {
  return allow_if(in_grid(s) && (k.param & (1u << s.format)) != 0);
}
void take_constant(const Tables&, State& s, const TokenInfo& k) {
  grow(s, k.width);
  join_operand(s, {k.least, kPosInf});
  s.es = Expr::after_operand;
}
// ceil_div, min, max: their `(` must still fit.
Verdict function(const Tables&, const State& s, const TokenInfo& k) {
  return allow_if(in_grid(s) && k.param != fn_none && s.nframes < kMaxExprFrames);
}
void take_function(const Tables&, State& s, const TokenInfo& k) {
  grow(s, k.width);
  s.function = k.param;
  s.es = Expr::after_func;
}
void start_literal(const Tables&, State& s, const TokenInfo&) {
  s.es = Expr::number_start;
  s.digits = 0;
}
Verdict frame_fits(const Tables&, const State& s, const TokenInfo&) {
  return allow_if(in_grid(s) && s.nframes < kMaxExprFrames);
}
void open_group(const Tables&, State& s, const TokenInfo&) {
  grow(s, 1);
  open_frame(s, fn_none);
  s.frames[s.nframes++] = kGroupFrame;
}
void open_call(const Tables&, State& s, const TokenInfo&) {
  grow(s, 1);
  open_frame(s, s.function);
  s.frames[s.nframes++] = kFuncFrame0;
  s.es = Expr::operand;
}
Verdict unary_fits(const Tables&, const State& s, const TokenInfo&) {
  return allow_if(in_grid(s) && s.unary < kMaxExprUnary);
}
void take_unary(const Tables&, State& s, const TokenInfo&) {
  grow(s, 1);
  ++s.unary;
  s.negate = !s.negate;
}
// A literal's largest value where it stands (no leading zero: 0 is a literal of its own).
std::int64_t literal_max(const State& s) {
  return s.which == 0 ? kMaxGridLiteral : s.which == 1 ? kMaxBlockLiteral : kMaxSmemLiteral;
}
Verdict decimal(const Tables&, const State& s, const TokenInfo& k) {
  const char c = static_cast<char>(k.param);
  return allow_if(is_dec(c) && (c != '0' || s.which != 1));  // a block of 0 threads
}
void first_digit(const Tables&, State& s, const TokenInfo& k) {
  grow(s, 1);
  s.es = Expr::number;
  s.digits = 1;
  s.value = static_cast<char>(k.param) - '0';
}
Verdict literal_digit(const Tables&, const State& s, const TokenInfo& k) {
  const char c = static_cast<char>(k.param);
  return allow_if(is_dec(c) && s.value != 0 && s.value * 10 + (c - '0') <= literal_max(s));
}
void next_digit(const Tables&, State& s, const TokenInfo& k) {
  grow(s, 1);
  ++s.digits;
  s.value = s.value * 10 + (static_cast<char>(k.param) - '0');
}
Verdict grid_operator(const Tables&, const State& s, const TokenInfo&) {
  return allow_if(in_grid(s));
}
void take_operator(const Tables&, State& s, const TokenInfo& k) {
  grow(s, 3);  // " + "
  end_literal(s);
  const std::size_t f = s.nframes;
  const auto e = static_cast<std::uint8_t>(s.evals[f]);
  if (k.cat == Cat::plus || k.cat == Cat::minus) {
    s.sums[f] = frame_value(s, s.nframes);
    s.evals[f] = static_cast<std::uint8_t>((e & ~(kSumMask | kTermMask)) |
                                           (k.cat == Cat::plus ? kSumPlus : kSumMinus));
  } else {
    s.evals[f] =
        static_cast<std::uint8_t>((e & ~kTermMask) | (k.cat == Cat::star ? kTermMul : kTermDiv));
  }
  s.es = Expr::operand;
}
std::uint8_t top_frame(const State& s) { return s.nframes > 0 ? s.frames[s.nframes - 1u] : 255; }
Verdict closes_frame(const Tables&, const State& s, const TokenInfo&) {
  return allow_if(top_frame(s) == kGroupFrame || top_frame(s) == kFuncFrame1);
}
void close_frame(const Tables&, State& s, const TokenInfo&) {
  grow(s, 1);
  end_literal(s);
  close_value(s);
  s.es = Expr::after_operand;
}
Verdict second_argument(const Tables&, const State& s, const TokenInfo&) {
  return allow_if(top_frame(s) == kFuncFrame0);
}
void take_comma(const Tables&, State& s, const TokenInfo&) {
  grow(s, 2);  // ", "
  end_literal(s);
  s.firsts[s.nframes] = frame_value(s, s.nframes);
  s.evals[s.nframes] = static_cast<std::uint8_t>(s.evals[s.nframes] & ~(kSumMask | kTermMask));
  s.frames[s.nframes - 1u] = kFuncFrame1;
  s.es = Expr::operand;
}
// block= after grid's expression, smem= after block's; <eol> after block's or smem's.
template <int kWhich>
Verdict key_after(const Tables&, const State& s, const TokenInfo&) {
  return allow_if(s.nframes == 0 && s.which == kWhich);
}
void next_expression(const Tables&, State& s, const TokenInfo& k) {
  s.which = k.cat == Cat::key_block ? 1 : 2;
  clear_values(s);
  s.es = Expr::operand;
  s.chars = 0;
  s.unary = 0;
}

Verdict launch_complete(const Tables&, const State& s, const TokenInfo&) {
  return allow_if(s.nframes == 0 && s.which >= 1);
}

constexpr std::uint32_t kAfterOperand = on(Expr::number, Expr::after_operand);

constexpr Rule kExpressionRules[] = {
    // at, categories, judge, take
    {on(Expr::operand), cats(Cat::constant), format_constant, take_constant},
    {on(Expr::operand), cats(Cat::builtin), function, take_function},
    {on(Expr::operand), cats(Cat::num), allow, start_literal},
    {on(Expr::operand), cats(Cat::open_paren), frame_fits, open_group},
    {on(Expr::operand), cats(Cat::minus), unary_fits, take_unary},
    {on(Expr::after_func), cats(Cat::open_paren), frame_fits, open_call},
    {on(Expr::number_start), cats(Cat::digit), decimal, first_digit},
    {on(Expr::number), cats(Cat::digit), literal_digit, next_digit},
    {kAfterOperand, cats(Cat::plus, Cat::minus, Cat::star, Cat::slash), grid_operator,
     take_operator},
    {kAfterOperand, cats(Cat::close_paren), closes_frame, close_frame},
    {kAfterOperand, cats(Cat::comma), second_argument, take_comma},
    {kAfterOperand, cats(Cat::key_block), key_after<0>, next_expression},
    {kAfterOperand, cats(Cat::key_smem), key_after<1>, next_expression},
    {kAfterOperand, cats(Cat::eol), launch_complete, goes_on<Phase::launch_start>},
};

}  // namespace

std::span<const Rule> directive_rules() { return kDirectiveRules; }
std::span<const Rule> expression_rules() { return kExpressionRules; }

ExprClose expr_close(const State& s) {
  ExprClose close;
  if (s.es == Expr::operand) close = {2, 1};       // <num> 1
  if (s.es == Expr::number_start) close = {1, 1};  // 1
  if (s.es == Expr::after_func) close = {7, 6};    // ( <num> 1 , <num> 1 )
  for (int i = 0; i < s.nframes; ++i) {
    const bool first_argument = s.frames[static_cast<std::size_t>(i)] == kFuncFrame0;
    close.tokens += first_argument ? 4 : 1;  // , <num> 1 )   or   )
    close.chars += first_argument ? 4 : 1;
  }
  return close;
}

namespace {

// grid= closed along expr_close()'s path, taken token by token on a copy: at least 1, and no
// division by a divisor that may be zero on the way.
bool grid_closes_in_range(const Tables& t, State c) {
  static constexpr TokenInfo kNum{.cat = Cat::num}, kOne{.cat = Cat::digit, .param = '1'},
      kOpen{.cat = Cat::open_paren}, kComma{.cat = Cat::comma}, kClose{.cat = Cat::close_paren};
  const auto take = [&](const TokenInfo& k) {
    t.expressions.take(static_cast<int>(c.es), t, c, k);
  };
  if (c.es == Expr::operand) take(kNum);
  if (c.es == Expr::number_start) take(kOne);
  if (c.es == Expr::after_func) {
    for (const TokenInfo* k : {&kOpen, &kNum, &kOne, &kComma, &kNum, &kOne, &kClose}) take(*k);
  }
  while (c.nframes > 0) {
    if (c.frames[c.nframes - 1u] == kFuncFrame0) {
      for (const TokenInfo* k : {&kComma, &kNum, &kOne}) take(*k);
    }
    take(kClose);
  }
  end_literal(c);
  return !c.divides_by_zero && frame_value(c, 0).lo >= 1;
}

}  // namespace

// An expression token is allowed if its rule allows it and the expression can still be closed
// within reward::kMaxLaunchExprLength characters after it - for grid=, into a value in range.
bool expression_allowed(const Tables& t, const State& s, const TokenInfo& k) {
  if (t.expressions.judge(static_cast<int>(s.es), t, s, k) != Verdict::allow) return false;
  State after = s;
  t.expressions.take(static_cast<int>(s.es), t, after, k);
  if (after.chars + expr_close(after).chars > static_cast<int>(reward::kMaxLaunchExprLength)) {
    return false;
  }
  return !in_grid(after) || grid_closes_in_range(t, after);
}

}  // namespace sparserl::env::detail
