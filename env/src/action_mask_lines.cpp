// The automata between the directive lines and the code words: a number under way in code
// (kNumberRules: well-formed C literals - no octal, suffixes u / l / ll / f in order - at most
// kMaxNumberChars characters), then the line it stands on - a preprocessor line (kLineRules:
// #define NAME[(params)] body, #undef, #if / #ifdef / #ifndef / #elif / #else / #endif nested,
// #pragma unroll [N] | nounroll, each ended by <eol>) or, in code, the kernel declaration
// automaton (action_mask_declaration.cpp). What these rules pass on, the code-token rules judge (a
// line body's part of their checks, line_role_checks, is here too).
#include "action_mask_internal.hpp"

namespace sparserl::env::detail {
namespace {

// --- numbers ---

constexpr std::uint32_t kAcceptingNumbers =
    on(Num::zero, Num::dec, Num::frac, Num::exp, Num::hex, Num::int_suffix, Num::float_suffix);

bool is_hex(char c) { return is_dec(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// A number after one more character: its state (Num::off when the character cannot follow) and
// its integer suffix. Integer suffixes: u once; l or ll (the two l's adjacent and of one case); in
// either order. l: 0 none, 1 one l just read, 2 one l earlier, 3 ll.
struct NumberStep {
  Num num;
  bool u;
  std::uint8_t l;
  char lcase;
};
NumberStep num_next(const State& s, char c) {
  NumberStep next{Num::off, s.num_u, s.num_l, s.num_lcase};
  const auto int_suffix = [&]() -> Num {
    if (c == 'u' || c == 'U') {
      if (next.u) return Num::off;
      next.u = true;
      if (next.l == 1) next.l = 2;
      return Num::int_suffix;
    }
    if (c == 'l' || c == 'L') {
      if (next.l == 0) {
        next.l = 1;
        next.lcase = c;
        return Num::int_suffix;
      }
      if (next.l == 1 && next.lcase == c) {
        next.l = 3;
        return Num::int_suffix;
      }
    }
    return Num::off;
  };
  next.num = [&] {
    const bool exponent = c == 'e' || c == 'E';
    const bool float_suffix = c == 'f' || c == 'F' || c == 'l' || c == 'L';
    switch (s.num) {
      case Num::start_nonzero:
        return c >= '1' && c <= '9' ? Num::dec : Num::off;
      case Num::start_shift:  // one digit, then a suffix at most
        return is_dec(c) ? Num::int_suffix : Num::off;
      case Num::start_null:  // `0`, then a suffix at most
        return c == '0' ? Num::int_suffix : Num::off;
      case Num::start:
        if (c == '0') return Num::zero;
        if (is_dec(c)) return Num::dec;
        if (c == '.') return Num::dot_start;
        return Num::off;
      case Num::zero:
        if (c == 'x' || c == 'X') return Num::hex_start;
        if (c == '.') return Num::frac;
        if (exponent) return Num::exp_start;
        return int_suffix();
      case Num::dec:
        if (is_dec(c)) return Num::dec;
        if (c == '.') return Num::frac;
        if (exponent) return Num::exp_start;
        return int_suffix();
      case Num::dot_start:
        return is_dec(c) ? Num::frac : Num::off;
      case Num::frac:
        if (is_dec(c)) return Num::frac;
        if (exponent) return Num::exp_start;
        return float_suffix ? Num::float_suffix : Num::off;
      case Num::exp_start:
        if (c == '+' || c == '-') return Num::exp_sign;
        return is_dec(c) ? Num::exp : Num::off;
      case Num::exp_sign:
        return is_dec(c) ? Num::exp : Num::off;
      case Num::exp:
        if (is_dec(c)) return Num::exp;
        return float_suffix ? Num::float_suffix : Num::off;
      case Num::hex_start:
        return is_hex(c) ? Num::hex : Num::off;
      case Num::hex:
        if (is_hex(c)) return Num::hex;
        return int_suffix();
      case Num::int_suffix:
        return int_suffix();
      default:
        return Num::off;
    }
  }();
  return next;
}

// A digit token may go on with the number if it keeps the literal completable within the cap.
Verdict number_digit(const Tables&, const State& s, const TokenInfo& k) {
  if (s.num_len + 1 > kMaxNumberChars) return Verdict::refuse;
  // __launch_bounds__ takes integers: decimal digits alone there.
  const bool bounds = s.decl == Decl::bounds_first || s.decl == Decl::bounds;
  if (bounds && !is_dec(static_cast<char>(k.param))) return Verdict::refuse;
  const Num next = num_next(s, static_cast<char>(k.param)).num;
  if (next == Num::off) return Verdict::refuse;
  // #if / #elif take integers (NVRTC: "expression must have integral or enum type" of `.5`, `6.`).
  const bool floating = next == Num::dot_start || next == Num::frac || next == Num::exp_start ||
                        next == Num::exp_sign || next == Num::exp || next == Num::float_suffix;
  if (floating && on_line(s) && s.line_ctx == line_if_operand) return Verdict::refuse;
  if (floating && s.num_integral) return Verdict::refuse;  // an operand of % << & ...
  // A floating overload's first argument: no hexadecimal or integer suffix, and its `.` to come.
  const bool integral = next == Num::hex_start || next == Num::hex || next == Num::int_suffix;
  if (integral && s.num_floating) return Verdict::refuse;
  const bool complete = num_accepting(next) && (floating || !s.num_floating);
  return allow_if(s.num_len + 1 + (complete ? 0 : 1) <= kMaxNumberChars);
}
// A number ends at a token that is no digit where it is complete (a floating one where it must be).
Verdict number_end(const Tables&, const State& s, const TokenInfo&) {
  return number_complete(s) ? Verdict::pass : Verdict::refuse;
}
void take_number_digit(const Tables&, State& s, const TokenInfo& k) {
  const NumberStep next = num_next(s, static_cast<char>(k.param));
  s.num = next.num;
  s.num_u = next.u;
  s.num_l = next.l;
  s.num_lcase = next.lcase;
  ++s.num_len;
}
void end_number(State& s) {
  // A number is an operand: floating with a fraction, an exponent or an f suffix.
  const bool floating = s.num == Num::frac || s.num == Num::exp || s.num == Num::float_suffix;
  if (!on_line(s)) s.operand_kind = floating ? operand_floating : operand_other;
  s.num_integral = false;
  s.num_floating = false;
  s.num = Num::off;
  s.last = Last::other;
}
void take_after_number(const Tables& t, State& s, const TokenInfo& k) {
  end_number(s);
  take_line_token(t, s, k);
}

constexpr Rule kNumberRules[] = {
    // at                 categories          judge          take
    {~on(Num::off), cats(Cat::digit), number_digit, take_number_digit},
    // A complete number ends at any other token, which the line's rules judge.
    {kAcceptingNumbers, kAnyCat, number_end, take_after_number},
};

// --- preprocessor lines ---

// The directives after `#`: whether one needs an #if open, how it moves the #if depth, and what
// the line goes on with.
struct Directive {
  std::uint8_t role;
  bool needs_if;
  int if_change;
  Pp next;
};
constexpr Directive kDirectives[] = {
    {pp_define, false, 0, Pp::define_name}, {pp_undef, false, 0, Pp::undef_name},
    {pp_if, false, 1, Pp::if_expr_start},   {pp_ifdef, false, 1, Pp::ifdef_name},
    {pp_ifndef, false, 1, Pp::ifdef_name},  {pp_elif, true, 0, Pp::if_expr_start},
    {pp_else, true, 0, Pp::eol_only},       {pp_endif, true, -1, Pp::eol_only},
    {pp_pragma, false, 0, Pp::pragma},
};
const Directive* directive(const TokenInfo& k) {
  for (const Directive& d : kDirectives) {
    if (d.role == k.param) return &d;
  }
  return nullptr;
}

// The innermost open #if's bit in State::else_seen (none past the 64th level: not tracked there).
std::uint64_t innermost_if_bit(const State& s) {
  return s.if_depth > 0 && s.if_depth <= 64 ? std::uint64_t{1} << (s.if_depth - 1u) : 0;
}
// #else and #elif only before the innermost #if's #else (NVRTC: "an #else has already appeared").
Verdict directive_word(const Tables&, const State& s, const TokenInfo& k) {
  const Directive* d = directive(k);
  const bool after_else = (k.param == pp_else || k.param == pp_elif) &&
                          (s.else_seen & innermost_if_bit(s)) != 0;
  // A group ends where the code's brackets are as they were at its #if; at most kMaxIfDepth open.
  const bool misplaced = (d != nullptr && d->needs_if && !if_closable(s)) ||
                         (d != nullptr && d->if_change > 0 && s.if_depth >= kMaxIfDepth);
  return allow_if(d != nullptr && (!d->needs_if || s.if_depth > 0) && !after_else && !misplaced);
}
void start_directive(const Tables&, State& s, const TokenInfo& k) {
  const Directive* d = directive(k);
  if (k.param == pp_else) s.else_seen |= innermost_if_bit(s);
  if (d->if_change < 0) s.else_seen &= ~innermost_if_bit(s);  // an #endif: its #if closes
  s.if_depth = static_cast<std::uint8_t>(s.if_depth + d->if_change);
  if (d->if_change > 0) s.else_seen &= ~innermost_if_bit(s);  // a new #if opens
  if (d->if_change > 0) s.if_base[s.if_depth - 1u] = s.depth;
  s.pp = d->next;
  if (d->next == Pp::if_expr_start) s.line_ctx = line_if_due;
}

// A local up to the next new one.
Verdict new_name(const Tables& t, const State& s, const TokenInfo& k) {
  return allow_if(k.local <= s.locals_used && k.local < t.locals);
}
// #define / #undef never name a launched kernel (the static check's macro_abuse); the next new
// local is never one, so a name always remains.
Verdict macro_name(const Tables& t, const State& s, const TokenInfo& k) {
  return allow_if(new_name(t, s, k) == Verdict::allow &&
                  (k.local >= kMaxKernelLocal || ((s.launched >> k.local) & 1u) == 0));
}
void name_macro(const Tables&, State& s, const TokenInfo& k) {
  set_scope(s, k.local, kScopeMacro);
  s.pp = Pp::after_macro_name;
  s.macro_local = static_cast<std::uint8_t>(k.local);
  set_local_bit(s.function_macros, k.local, false);
}
// A macro's parameter list opens: it is function-like.
void open_macro_params(const Tables&, State& s, const TokenInfo&) {
  s.pp = Pp::macro_param_first;
  set_local_bit(s.function_macros, s.macro_local, true);
}
// #ifdef / #ifndef NAME: the name's scope stays as it was (an unknown name is no macro: NVRTC's
// "identifier is undefined" where code named it after `#ifdef X`); #undef NAME: a macro's name
// leaves scope.
void name_tested(const Tables&, State& s, const TokenInfo& k) {
  if (k.cat == Cat::local && s.pp == Pp::undef_name && is_macro(s, k.local)) {
    set_scope(s, k.local, kScopeDead);
  }
  s.pp = Pp::eol_only;
}

template <Pp kNext>
void line_goes_on(const Tables&, State& s, const TokenInfo&) {
  s.pp = kNext;
}
// Macro parameters: names, `,` between them, `)` to the body (which may be empty).
template <Pp kNext>
void macro_params_go_on(const Tables&, State& s, const TokenInfo&) {
  s.pp = kNext;
  s.last = Last::other;
  if (kNext == Pp::body) s.line_ctx = line_start;
}
void into_body(const Tables&, State& s, const TokenInfo& k) {
  s.pp = Pp::body;
  const bool divisor = s.line_ctx == line_if_divisor, shift = s.line_ctx == line_if_shift;
  take_code_word(s, k);
  if (divisor && k.cat == Cat::num) s.num = Num::start_nonzero;
  if (shift && k.cat == Cat::num) s.num = Num::start_shift;
  // The body's expression: after an operand, a name or builtin function, or an operator.
  const bool callable = k.cat == Cat::local || k.role == role_function;
  const bool vector = k.role == role_vector;  // (`.` may follow it: line_vector)
  const bool operand =
      k.role == role_operand || vector || k.cat == Cat::close_paren || k.cat == Cat::close_bracket;
  // A conditional operator's `?` is a bracket on the line's stack that its `:` closes.
  if (k.ternary == 1) s.pp_stack[s.pp_depth++] = kTernary;
  if (k.ternary == 2 && s.pp_depth > 0 && s.pp_stack[s.pp_depth - 1u] == kTernary) --s.pp_depth;
  if (s.line_ctx == line_defined) {
    s.line_ctx = k.cat == Cat::open_paren ? line_defined_paren : line_if_operand;
  } else if (s.line_ctx == line_defined_paren || s.line_ctx == line_defined_close) {
    s.line_ctx = s.line_ctx == line_defined_paren ? line_defined_close : line_if_operand;
  } else if (k.pp_operator) {
    s.line_ctx = line_defined;
  } else if (s.line_ctx == line_if_due || s.line_ctx == line_if_operand ||
             s.line_ctx == line_if_divisor || s.line_ctx == line_if_shift) {
    s.line_ctx = callable || operand ? line_if_operand
                 : k.divides         ? line_if_divisor
                 : k.shifts          ? line_if_shift
                                     : line_if_due;
  } else {
    s.line_ctx = callable  ? line_callable
                 : vector  ? line_vector
                 : operand ? line_operand
                           : line_due;
  }
}
void end_line(const Tables&, State& s, const TokenInfo&) {
  s.pp = Pp::none;
  s.pp_depth = 0;
  s.digits = 0;
  // The line stands between tokens of the code: where a statement had ended, one may start (and
  // the completion path go on with `extern` or <eos>); elsewhere the code goes on as before it.
  const bool ended = statement_ended(s.line_last);
  s.last = ended ? Last::pp_eol : s.line_last;
  if (ended && due_tokens(s.ctx) == 0) {
    s.ctx = ctx_start;
    s.run = 0;
  }
}

Verdict unroll_word(const Tables&, const State&, const TokenInfo& k) {
  return allow_if(k.param == pp_unroll || k.param == pp_nounroll);
}
void start_unroll(const Tables&, State& s, const TokenInfo& k) {
  s.pp = k.param == pp_unroll ? Pp::unroll : Pp::eol_only;
}
void start_unroll_count(const Tables&, State& s, const TokenInfo&) {
  s.pp = Pp::unroll_num_start;
  s.digits = 0;
}
Verdict leading_digit(const Tables&, const State&, const TokenInfo& k) {
  return allow_if(k.param >= '1' && k.param <= '9');
}
void first_unroll_digit(const Tables&, State& s, const TokenInfo&) {
  s.pp = Pp::unroll_num;
  s.digits = 1;
}
Verdict unroll_digit(const Tables&, const State& s, const TokenInfo& k) {
  return allow_if(is_dec(static_cast<char>(k.param)) && s.digits < kMaxUnrollDigits);
}
void next_unroll_digit(const Tables&, State& s, const TokenInfo&) { ++s.digits; }

constexpr Rule kLineRules[] = {
    // at, categories, judge, take
    {on(Pp::hash), cats(Cat::keyword), directive_word, start_directive},
    {on(Pp::define_name), cats(Cat::local), macro_name, name_macro},
    {on(Pp::after_macro_name), cats(Cat::macro_open), allow, open_macro_params},
    {on(Pp::after_macro_name, Pp::eol_only, Pp::unroll, Pp::unroll_num), cats(Cat::eol), allow,
     end_line},
    // In a body <eol> passes to the code-token rules, which want its brackets closed.
    {on(Pp::body), cats(Cat::eol), pass, end_line},
    {on(Pp::after_macro_name, Pp::body), kAnyCat, pass, into_body},
    {on(Pp::if_expr_start), ~cats(Cat::eol), pass, into_body},  // #if / #elif: not empty
    {on(Pp::macro_param_first, Pp::macro_param_next), cats(Cat::local), new_name,
     macro_params_go_on<Pp::macro_param_sep>},
    {on(Pp::macro_param_first, Pp::macro_param_sep), cats(Cat::close_paren), allow,
     macro_params_go_on<Pp::body>},
    {on(Pp::macro_param_sep), cats(Cat::comma), allow, macro_params_go_on<Pp::macro_param_next>},
    {on(Pp::undef_name), cats(Cat::local), macro_name, name_tested},
    {on(Pp::ifdef_name), cats(Cat::local), new_name, name_tested},
    {on(Pp::ifdef_name), cats(Cat::constant), allow, name_tested},
    {on(Pp::pragma), cats(Cat::keyword), unroll_word, start_unroll},
    {on(Pp::unroll), cats(Cat::num), allow, start_unroll_count},
    {on(Pp::unroll_num_start), cats(Cat::digit), leading_digit, first_unroll_digit},
    {on(Pp::unroll_num), cats(Cat::digit), unroll_digit, next_unroll_digit},
};

}  // namespace

std::span<const Rule> number_rules() { return kNumberRules; }
std::span<const Rule> line_rules() { return kLineRules; }

namespace {

// A preprocessor line body's expression (see LineCtx): where an operand is due what may start one
// (no type, cast or statement keyword; `defined` on #if lines), after an operand what may follow
// one (`(` only after a name or a builtin function) and <eol>.
std::uint8_t line_expression_checks(const TokenInfo& k, int line_ctx) {
  if (k.cat == Cat::semi || k.cat == Cat::open_brace || k.cat == Cat::close_brace) return kRefused;
  if (k.cat == Cat::keyword && k.role != role_operand && !k.pp_operator) return kRefused;
  if (k.role == role_type || k.role == role_qual || k.role == role_cast_kw) return kRefused;
  const bool defined = line_ctx == line_defined || line_ctx == line_defined_paren ||
                       line_ctx == line_defined_close;
  if (k.cat == Cat::eol) {
    const bool due = line_ctx == line_due || line_ctx == line_if_due ||
                     line_ctx == line_if_divisor || line_ctx == line_if_shift;
    return due || defined ? kRefused : 0;
  }
  // A divisor on an #if line (NVRTC: "division by zero" of `/ EMPTY_ROWS`, `/ warpSize`, `% 0`).
  if (line_ctx == line_if_shift) return k.cat == Cat::num ? 0 : kRefused;
  if (line_ctx == line_if_divisor) {
    if (k.cat == Cat::num) return 0;
    if (k.cat == Cat::local) return kCheckLocal;
    return k.cat == Cat::constant && k.least == 1 ? kCheckFormat : kRefused;
  }
  // `defined NAME` or `defined ( NAME )` (NVRTC: `expected a ")"` after `defined(M %`).
  if (line_ctx == line_defined_close) return k.cat == Cat::close_paren ? 0 : kRefused;
  if (defined) {
    const bool name = k.cat == Cat::local || k.cat == Cat::constant;
    return name || (k.cat == Cat::open_paren && line_ctx == line_defined) ? 0 : kRefused;
  }
  if (line_ctx == line_if_due || line_ctx == line_if_operand) {
    if (k.cat == Cat::keyword && !k.pp_operator) return kRefused;  // (nullptr, true, ...)
    const bool refused = k.role == role_function || k.role == role_vector ||
                         k.role == role_incdec || k.cat == Cat::access || k.cat == Cat::comma ||
                         (k.role == role_ptr && line_ctx == line_if_due) ||
                         k.cat == Cat::open_bracket || k.cat == Cat::close_bracket ||
                         (k.role == role_operator && k.assigns);
    if (refused) return kRefused;
    if (k.pp_operator) return line_ctx == line_if_due ? 0 : kRefused;
    return line_expression_checks(k, line_ctx == line_if_due ? line_due : line_operand);
  }
  if (k.pp_operator) return kRefused;  // `defined` on #if lines alone
  switch (line_ctx) {
    case line_due:
    case line_start: {
      const bool closer = k.cat == Cat::close_paren || k.cat == Cat::close_bracket;
      return !closer && (k.pp_operator || ((k.follows >> ctx_operand_due) & 1u) != 0) ? 0
                                                                                     : kRefused;
    }
    case line_operand:  // (no `.`: see line_vector)
      return k.cat != Cat::access && ((k.follows >> ctx_operand) & 1u) != 0 ? 0 : kRefused;
    case line_vector:
      return ((k.follows >> ctx_operand) & 1u) != 0 ? 0 : kRefused;
    default:
      return ((k.follows >> ctx_callable) & 1u) != 0 ? 0 : kRefused;
  }
}

}  // namespace

// A preprocessor line body's part of a token's checks: its expression's, and in a #define's body
// a prelude constant of the program's format alone (kCheckFormat, as in code). The prelude defines
// only its format's constants (reward::compute_constants), and a macro's body is code wherever the
// macro is expanded (NVRTC: "identifier \"SELL_STORED\" is undefined" of `#define A SELL_STORED`
// expanded in a csr or ell program). #if lines keep every constant: there an undefined name is 0
// (and a divisor is checked already), `defined` and #ifdef test any name.
// A #define's body names no builtin function either: the grammar does not know that a call's `(`
// follows it, and uncalled it is a function's address wherever the macro is expanded (NVRTC:
// "operand types are incompatible (\"__nv_bool\" and \"float (*)(float)\")" of `true < G` after
// `#define G expf < 1`). `#define F(a) sqrtf(a)` goes with it; no corpus macro calls a builtin.
std::uint8_t line_role_checks(const TokenInfo& k, int line_ctx) {
  const std::uint8_t checks = line_expression_checks(k, line_ctx);
  const bool define_body = line_ctx == line_due || line_ctx == line_operand ||
                           line_ctx == line_callable || line_ctx == line_start ||
                           line_ctx == line_vector;
  if (k.role == role_function && define_body) return kRefused;
  if (k.cat == Cat::constant && define_body && (checks & kRefused) == 0) {
    return static_cast<std::uint8_t>(checks | kCheckFormat);
  }
  return checks;
}

bool num_accepting(Num n) { return ((kAcceptingNumbers >> static_cast<unsigned>(n)) & 1u) != 0; }
bool number_complete(const State& s) {
  const bool floating = s.num == Num::frac || s.num == Num::exp || s.num == Num::float_suffix;
  return num_accepting(s.num) && (floating || !s.num_floating);
}
// `0` (or a fraction's or an exponent's digit), `.` after an integer that must be floating; from
// the start of a floating one `0 .`.
int number_close(const State& s) {
  if (s.num == Num::off || number_complete(s)) return 0;
  return s.num == Num::start && s.num_floating ? 2 : 1;
}

bool code_allowed(const Tables& t, const State& s, const TokenInfo& k) {
  if (s.num == Num::off) return line_allowed(t, s, k);
  const Verdict verdict = t.numbers.judge(static_cast<int>(s.num), t, s, k);
  if (verdict != Verdict::pass) return verdict == Verdict::allow;
  State after = s;
  end_number(after);
  return line_allowed(t, after, k);
}

void take_code(const Tables& t, State& s, const TokenInfo& k) {
  if (s.num == Num::off) return take_line_token(t, s, k);
  t.numbers.take(static_cast<int>(s.num), t, s, k);
}

bool line_allowed(const Tables& t, const State& s, const TokenInfo& k) {
  Verdict verdict = on_line(s) ? t.lines.judge(static_cast<int>(s.pp), t, s, k)
                               : t.declarations.judge(static_cast<int>(s.decl), t, s, k);
  if (verdict == Verdict::pass && !on_line(s)) {
    verdict = t.files.judge(static_cast<int>(s.top), t, s, k);
  }
  if (verdict != Verdict::pass) return verdict == Verdict::allow;
  return code_word_allowed(t, s, k);
}

void take_line_token(const Tables& t, State& s, const TokenInfo& k) {
  if (!on_line(s)) return take_code_token(t, s, k);
  count_local(s, k);
  t.lines.take(static_cast<int>(s.pp), t, s, k);
}

}  // namespace sparserl::env::detail
