// The directive lines that open a program (kDirectiveRules): the //@format line first - a format
// name, then its keys in order with values in range (sell C=1..1024 sigma=1..2^30, bsr R=1..32
// C=1..32) - then 1..8 //@launch lines, each a canonical local as the kernel name and grid=EXPR
// block=EXPR [smem=EXPR]; after a launch line the code may start. Each EXPR (kExpressionRules) is
// a well-formed launch expression over the constants the format defines, numbers, + - * /,
// ceil_div / min / max calls and parentheses, at most 256 characters as decode() renders it.
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
void start_expression(const Tables&, State& s, const TokenInfo&) {
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

// --- launch expressions ---
// Each take adds the characters decode() renders for the token (State::chars).

void grow(State& s, int chars) { s.chars = static_cast<std::uint16_t>(s.chars + chars); }

Verdict format_constant(const Tables&, const State& s, const TokenInfo& k) {
  return allow_if((k.param & (1u << s.format)) != 0);
}
void take_constant(const Tables&, State& s, const TokenInfo& k) {
  grow(s, k.width);
  s.es = Expr::after_operand;
}
// ceil_div, min, max: their `(` must still fit.
Verdict function(const Tables&, const State& s, const TokenInfo& k) {
  return allow_if(k.param != fn_none && s.nframes < kMaxExprFrames);
}
void take_function(const Tables&, State& s, const TokenInfo& k) {
  grow(s, k.width);
  s.es = Expr::after_func;
}
void start_literal(const Tables&, State& s, const TokenInfo&) {
  s.es = Expr::number_start;
  s.digits = 0;
}
Verdict frame_fits(const Tables&, const State& s, const TokenInfo&) {
  return allow_if(s.nframes < kMaxExprFrames);
}
void open_group(const Tables&, State& s, const TokenInfo&) {
  grow(s, 1);
  s.frames[s.nframes++] = kGroupFrame;
}
void open_call(const Tables&, State& s, const TokenInfo&) {
  grow(s, 1);
  s.frames[s.nframes++] = kFuncFrame0;
  s.es = Expr::operand;
}
Verdict unary_fits(const Tables&, const State& s, const TokenInfo&) {
  return allow_if(s.unary < kMaxExprUnary);
}
void take_unary(const Tables&, State& s, const TokenInfo&) {
  grow(s, 1);
  ++s.unary;
}
Verdict decimal(const Tables&, const State&, const TokenInfo& k) {
  return allow_if(is_dec(static_cast<char>(k.param)));
}
void first_digit(const Tables&, State& s, const TokenInfo&) {
  grow(s, 1);
  s.es = Expr::number;
  s.digits = 1;
}
Verdict literal_digit(const Tables&, const State& s, const TokenInfo& k) {
  return allow_if(is_dec(static_cast<char>(k.param)) && s.digits < kMaxExprDigits);
}
void next_digit(const Tables&, State& s, const TokenInfo&) {
  grow(s, 1);
  ++s.digits;
}
void take_operator(const Tables&, State& s, const TokenInfo&) {
  grow(s, 3);  // " + "
  s.es = Expr::operand;
}
std::uint8_t top_frame(const State& s) { return s.nframes > 0 ? s.frames[s.nframes - 1u] : 255; }
Verdict closes_frame(const Tables&, const State& s, const TokenInfo&) {
  return allow_if(top_frame(s) == kGroupFrame || top_frame(s) == kFuncFrame1);
}
void close_frame(const Tables&, State& s, const TokenInfo&) {
  grow(s, 1);
  --s.nframes;
  s.es = Expr::after_operand;
}
Verdict second_argument(const Tables&, const State& s, const TokenInfo&) {
  return allow_if(top_frame(s) == kFuncFrame0);
}
void take_comma(const Tables&, State& s, const TokenInfo&) {
  grow(s, 2);  // ", "
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
    {kAfterOperand, cats(Cat::plus, Cat::minus, Cat::star, Cat::slash), allow, take_operator},
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
  if (s.es == Expr::operand || s.es == Expr::number_start) close = {1, 1};  // M
  if (s.es == Expr::after_func) close = {5, 6};                             // (M, M)
  for (int i = 0; i < s.nframes; ++i) {
    const bool first_argument = s.frames[static_cast<std::size_t>(i)] == kFuncFrame0;
    close.tokens += first_argument ? 3 : 1;  // , M)   or   )
    close.chars += first_argument ? 4 : 1;
  }
  return close;
}

// An expression token is allowed if its rule allows it and the expression can still be closed
// within reward::kMaxLaunchExprLength characters after it.
bool expression_allowed(const Tables& t, const State& s, const TokenInfo& k) {
  if (t.expressions.judge(static_cast<int>(s.es), t, s, k) != Verdict::allow) return false;
  State after = s;
  t.expressions.take(static_cast<int>(s.es), t, after, k);
  return after.chars + expr_close(after).chars <= static_cast<int>(reward::kMaxLaunchExprLength);
}

}  // namespace sparserl::env::detail
