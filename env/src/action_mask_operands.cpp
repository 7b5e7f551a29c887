// The operand rules of code tokens: what the grammar knows of the operand just read (a floating
// value, a pointer, a call of no result, a builtin's arguments still to come) and the operators,
// numbers and names that its type refuses after it - no `%` of a floating value, no `*` of a
// pointer, a floating overload's first argument no integer, a builtin's arguments within its
// count, an integer operator's right operand integer terms alone; what follows a call's value or
// a device function's name, and a void function's return. A code token's step is read in two
// halves around the state's move (take_code_token): begin_operand_step() before,
// take_operand_step() after; code_word_allowed() and fill_code_tokens() ask the checks here.
#include "action_mask_internal.hpp"

namespace sparserl::env::detail {
namespace {

// A call's arguments at a token, before the state moves: a call's `(` (a builtin's arguments as
// named - State::args - a functional cast's one; others unknown), a `,` between them.
struct CallStep {
  bool open = false;
  std::uint8_t args = kArgsUnknown;
  bool comma = false;
};
CallStep call_step(const State& s, const TokenInfo& k) {
  CallStep c;
  c.open = k.cat == Cat::open_paren &&
           (s.ctx == ctx_call || s.ctx == ctx_call_args || s.ctx == ctx_cast_call);
  if (s.ctx == ctx_cast_call || s.callee_max == 0) {
    c.args = 0;
  } else if (s.callee_max != kArgsUnknown) {
    const int need = s.callee_least > 1 ? s.callee_least - 1 : 0;
    c.args = static_cast<std::uint8_t>((s.callee_max - 1) | (need << 4));
  }
  c.comma = k.cat == Cat::comma && innermost(s) == kCallParen;
  return c;
}
// ... and after it moved.
void take_call_step(State& s, const TokenInfo& k, const CallStep& c) {
  if (c.open && innermost(s) == kCallParen) {
    s.args[s.depth - 1u] = c.args;
  } else if (k.cat == Cat::open_paren || k.cat == Cat::open_bracket || k.cat == Cat::open_brace ||
             k.ternary == 1) {
    if (s.depth > 0) s.args[s.depth - 1u] = kArgsUnknown;  // no count (not a builtin's call)
  }
  if (c.comma) {
    std::uint8_t& args = s.args[s.depth - 1u];
    const std::uint8_t room = call_room(args), need = call_need(args);
    if (room != kArgsUnknown) {
      args = static_cast<std::uint8_t>((room - 1) | ((need > 0 ? need - 1 : 0) << 4));
    }
  }
  // A builtin of no argument: its `)` next (ctx_initialized takes `)`; `,` has no room).
  if (c.open && s.callee_max == 0) s.ctx = ctx_initialized;
  s.callee_max = k.role == role_function ? k.max_args : kArgsUnknown;
  s.callee_least = k.role == role_function ? k.min_args : 0;
}

// State::rvalued and lvalue_led after a code token (`level`: the bit of the depth it leaves).
void take_lvalue_step(State& s, const TokenInfo& k, const OperandStep& o, std::uint64_t level) {
  s.rvalued &= (level << 1u) - 1u;  // closed brackets' bits go
  s.lvalue_led &= (level << 1u) - 1u;
  // A new operand: in a bracket, after an assignment, `,`, `;`, `?` or `:`.
  const bool restart = opens_bracket(k) || k.ternary != 0 || k.cat == Cat::comma ||
                       k.cat == Cat::semi || (k.assigns && k.role == role_operator);
  if (restart) {
    s.rvalued &= ~level;
    s.lvalue_led &= ~level;
    return;
  }
  const bool led = ((s.lvalue_led | s.rvalued) & level) != 0;
  if (o.binary || (o.rvalue_prefix && !led)) s.rvalued |= level;
  if (o.lvalue_prefix && !led) s.lvalue_led |= level;
}

}  // namespace

// An assignment after an operand that is no lvalue (State::rvalued). In code, not on a line.
bool rvalue_assignment(const State& s, const TokenInfo& k) {
  return k.assigns && k.role == role_operator && !on_line(s) && after_operand(s.ctx) &&
         ((s.rvalued >> s.depth) & 1u) != 0;
}

// Directly in a group after a unary `&`, a prefix ++ / -- or a reference cast (ctx_address's `(`,
// State::lvalue_groups), whose value must be an lvalue: its operand starts with a variable, `*`,
// ++ / -- or a number (the completion path writes `<num> 0` there; NVRTC refuses it, the one
// value left), and no binary operator or `?` follows it at the group's depth (NVRTC: "expression
// must be a modifiable lvalue" of `--(blockIdx.x)`, "bool type is not allowed" of `--(N > i)`,
// "lvalue or a function designator" of `&(blockDim.x)`). No group nested in it either: the rule
// would not judge the inner one (`--((M)) ->`: "`->` applied to int", `&((38))`).
bool lvalue_group_refuses(const State& s, const TokenInfo& k) {
  if (on_line(s) || s.depth == 0 || innermost(s) != kDerefParen ||
      ((s.lvalue_groups >> (s.depth - 1u)) & 1u) == 0) {
    return false;
  }
  if (s.ctx == ctx_group) {
    return k.cat != Cat::local && k.cat != Cat::num && k.cat != Cat::star && k.role != role_incdec && k.cat != Cat::hash;
  }
  if (!after_operand(s.ctx)) return false;
  return (k.role == role_operator && !k.assigns) || k.role == role_ptr || k.role == role_lt ||
         k.ternary == 1;
}

// After an operand (a binary operator, a postfix ++ / --, ... may follow). Not after a
// condition's, a for statement's or a declarator's `)` (ctx_paren): a statement or a declaration
// goes on there, so `*` `&` `-` `++` are unary.
bool after_operand(std::uint8_t ctx) {
  switch (ctx) {
    case ctx_operand:
    case ctx_callable:
    case ctx_value:
    case ctx_pointer:
    case ctx_element:
    case ctx_const_element:
    case ctx_macro:
    case ctx_result:
    case ctx_call_result:
      return true;
    default:
      return false;
  }
}

// A builtin overloaded for floating arguments alone (sqrt, ceil, pow, ...): its first argument
// starts with no integer or vector (nor bool: `!`, true), and no comparison or logical operator
// makes it a bool at its depth (`<` after static_cast opens a cast). In code, not on a line.
bool floating_allowed(const State& s, const TokenInfo& k) {
  if (s.floating_due && k.starts_no_floating) return false;
  return !k.compares || !in_floating_argument(s) || (k.role == role_lt && s.ctx == ctx_cast_kw);
}

// An operator after an operand whose type the grammar knows (no `!`, `~`, sizeof or cast to an
// integer before it at its depth): no % << & | ^ of a floating value or a pointer, no * / < > <=
// >= of a pointer.
// The kind of the operand just read, a cast before it deciding (other where another prefix does).
std::uint8_t operand_type(const State& s) {
  if (((s.prefixed >> s.depth) & 1u) == 0) return s.operand_kind;
  if (((s.floating_casts >> s.depth) & 1u) != 0) return operand_floating;
  return ((s.pointer_casts >> s.depth) & 1u) != 0 ? operand_pointer : operand_other;
}
bool operator_allowed(const State& s, const TokenInfo& k) {
  if (on_line(s) || !after_operand(s.ctx)) return true;
  const std::uint8_t kind = operand_type(s);
  if (kind == operand_other) return true;
  const bool pointer = kind >= operand_pointer;
  return !(k.integral_operator || ((k.arithmetic_operator || k.relational) && pointer));
}
// After * / % a comparison or a unary `-` a value is due (State::value_due; after `==` / `!=`
// where the left operand is no pointer; after `+` / `-` where it is a floating value, after `-`
// where it is a number, a constant, threadIdx.x, true (ctx_value) and no pointer: NVRTC
// "expression must have arithmetic or unscoped enum type" of `1.5 - p`, `x[0] + y`, `M - p`).
bool makes_value_due(const State& s, const TokenInfo& k, bool binary, bool prefix_sign) {
  if (on_line(s)) return false;
  if (prefix_sign) return k.cat == Cat::minus;
  if (!binary) return false;
  const bool pointer = s.operand_kind >= operand_pointer && ((s.prefixed >> s.depth) & 1u) == 0;
  const bool sign = k.cat == Cat::plus || k.cat == Cat::minus;
  const bool value = s.ctx == ctx_value && operand_type(s) < operand_pointer &&
                     ((s.additive >> s.depth) & 1u) == 0;
  return k.arithmetic_operator || k.relational || (k.equality && !pointer) ||
         (sign && operand_type(s) == operand_floating) || (k.cat == Cat::minus && value);
}
// In a cast's type whose parenthesis opened where an integer operand or a floating overload's
// first argument was due: no `*` (the cast would give % << & | ^ ~ or sqrt & co a pointer;
// `(int&)f` reinterprets f, `(int)p` is one).
bool pointer_cast_refused(const State& s, const TokenInfo& k) {
  if (k.cat != Cat::star || k.role != role_ptr || on_line(s) || s.depth == 0) return false;
  const bool in_type = s.ctx == ctx_type || s.ctx == ctx_ptr || (s.ctx == ctx_qual && s.run != 0);
  const std::uint8_t open = innermost(s);
  return in_type && (open == kCastParen || open == '(') &&
         ((s.value_parens >> (s.depth - 1u)) & 1u) != 0;
}
// Where an integer operand is due, a pointer cast's operand or a pointer's offset: no floating
// type word or builtin.
bool floating_value_allowed(const State& s, const TokenInfo& k) {
  const bool due = s.integral_due || s.pointer_cast_due || s.offset_due;
  return !k.floating_value || !due || on_line(s);
}

OperandStep begin_operand_step(State& s, const TokenInfo& k, bool declares, bool macro) {
  OperandStep o;
  // A floating overload's `(`, its first argument's unary operators and parentheses (which keep
  // it due: `sqrt((M))` is `sqrt(M)`); a number there must be floating.
  o.floating_open = k.cat == Cat::open_paren && s.ctx == ctx_call_args && s.floating_call;
  o.floating_unary =
      s.floating_due && (k.cat == Cat::plus || k.cat == Cat::minus || k.cat == Cat::star ||
                         k.role == role_incdec || k.cat == Cat::open_paren);
  o.floating_number = k.cat == Cat::num && s.floating_due;
  o.pointer_open =
      k.cat == Cat::open_paren && s.ctx == ctx_call_args && s.pointer_named && !on_line(s);
  // A reinterpret_cast to a pointer (`<T*>`, `<T* const>`; not to a reference) converts a pointer
  // or an integer: its `(` starts a pointer as a load's does (NVRTC: "invalid type conversion" of
  // `reinterpret_cast<unsigned** const>(value_t(...))`). State::pointer_named carries its `>`.
  o.reinterpret_pointer = k.word == w_angle_close && !on_line(s) && s.depth > 0 &&
                          innermost(s) == kCastAngle && s.reinterpret_angle && !s.reference &&
                          (s.ctx == ctx_ptr || (s.ctx == ctx_qual && s.starred));
  // (A group opened where a pointer starts starts one too: `atomicAdd((int*)p, 1)`, and not
  // `atomicSub((NNZ) / M > .18, 1)`; so does one at a `*(` group's start, `*((NNZ > .8))`, but
  // where a floating argument is due, whose rules (a floating number) own it.)
  const bool deref_start = s.ctx == ctx_group && s.depth > 0 && innermost(s) == kDerefParen &&
                           ((s.lvalue_groups >> (s.depth - 1u)) & 1u) == 0 && !s.floating_due;
  o.pointer_group_open = k.cat == Cat::open_paren && !o.pointer_open && !on_line(s) &&
                         (pointer_starts(s) || deref_start);
  o.floating_comma = k.cat == Cat::comma && in_floating_argument(s);
  // A call of no result: its `(`, its `)`.
  o.void_open =
      k.cat == Cat::open_paren && (s.ctx == ctx_call || s.ctx == ctx_call_args) && s.void_named;
  o.void_close = k.cat == Cat::close_paren && s.void_call >= 0 && s.depth == s.void_call + 1;
  // Types of operands (operator_allowed): what the token makes of the operand, before it moves.
  o.operand_before = after_operand(s.ctx);
  o.unary_sign = !o.operand_before && (k.cat == Cat::plus || k.cat == Cat::minus);
  o.binary =
      o.operand_before && (k.role == role_operator || k.role == role_ptr || k.role == role_lt ||
                           k.cat == Cat::comma || k.cat == Cat::semi || k.ternary != 0);
  o.prefix = !o.operand_before && k.type_prefix;
  o.integral_next = (o.binary || o.prefix) && k.integral_operator;  // `i % `, `~`
  // (What a `*(` group over a floating pointer names is a floating value: no << >> & | ^ after
  // it, NVRTC "expression must have integral or unscoped enum type" of `*(p++) >> 2` with p a
  // value_t*. Not after a `*reinterpret_cast<T*>(`, whose T decides.)
  o.floating_deref = k.cat == Cat::close_paren && innermost(s) == kDerefParen && s.depth > 0 &&
                     ((s.lvalue_groups >> (s.depth - 1u)) & 1u) == 0 && !s.deref_cast &&
                     after_operand(s.ctx) && operand_type(s) == operand_floating_pointer;
  o.value_next = makes_value_due(s, k, o.binary, o.unary_sign);
  o.kind_before = s.operand_kind;
  o.opens_floating = (k.cat == Cat::open_bracket && o.kind_before == operand_floating_pointer) ||
                     ((k.cat == Cat::open_paren || k.cat == Cat::open_brace) && s.floating_named &&
                      (s.ctx == ctx_cast_call || s.ctx == ctx_call || s.ctx == ctx_call_args));
  o.cast_ends = k.cat == Cat::close_paren && innermost(s) == kCastParen;
  o.pointer_cast = o.cast_ends && s.ctx == ctx_ptr && !s.reference;
  o.floating_cast = o.cast_ends && s.ctx != ctx_ptr && s.last_type == type_floating;
  // A cast to a pointer type (`(float* const)` too), to a floating type; not to a reference
  // (`(int&)f` reinterprets f).
  o.to_pointer = o.cast_ends && s.starred && !s.reference;
  o.pointer_offset = o.binary && (k.cat == Cat::plus || k.cat == Cat::minus) &&
                     (o.kind_before == operand_pointer || o.kind_before == operand_floating_pointer);
  const bool type_run = s.ctx == ctx_type || (s.ctx == ctx_qual && s.run != 0);
  o.to_floating = o.cast_ends && type_run && !s.starred && s.last_type == type_floating;
  // (A cast to an integer type narrower than a pointer - no long, size_t, ptrdiff_t or bool in
  // its run - takes no pointer either: NVRTC "invalid type conversion" of `(signed char
  // const)(void***)x`, `(int)p`; `(long)p`, `(size_t)p`, `(bool)p` compile.)
  o.to_integral = o.cast_ends && type_run && !s.starred && s.last_type == type_integral &&
                  (s.run & (3u | kRunSingle)) == 0;  // (bits 0-1: longs)
  const CallStep call = call_step(s, k);
  o.call_open = call.open;
  o.call_args = call.args;
  o.call_comma = call.comma;
  o.value_call = k.cat == Cat::open_paren &&
                 (s.ctx == ctx_cast_call ||
                  (s.builtin_named && (s.ctx == ctx_call || s.ctx == ctx_call_args)));
  o.deref = s.ctx == ctx_deref;
  o.in_bound = in_array_bound(s);
  // (Right after the operator, the call's `(` or a sign, not inside a group: `i % ((int*)p)[0]` is
  // an integer.)
  // (Or where a value is due, after * / a comparison ...: NVRTC "expression must have arithmetic
  // or unscoped enum type" of `i * (char**)p`.)
  o.value_open = k.cat == Cat::open_paren && (s.integral_due || s.floating_due || s.value_due) &&
                 s.ctx == ctx_operand_due && !on_line(s);
  o.variable = k.cat == Cat::local && !declares && !macro;
  // A group whose value is no lvalue: its last operand a value (a number, a constant, threadIdx.x,
  // a postfix ++) or a const element, no assignment at its depth (`(i = 1) = 2` assigns i). After
  // its `)` what follows a call's value: no assignment, no ++ / -- (NVRTC: "expression must be a
  // modifiable lvalue" of `(M)--`, `(warpSize) = 1`, `(i + 1)++`).
  // (Or, of any operand, a group whose operand at its depth is no lvalue: `(-i)`, `(i + 1)`.)
  const bool rvalued = after_operand(s.ctx) && ((s.rvalued >> s.depth) & 1u) != 0;
  // (A group after `&` / `--` too: `&(.6)[0]`, NVRTC "pointer-to-object type".)
  const bool lvalue_group = innermost(s) == kDerefParen && s.depth > 0 &&
                            ((s.lvalue_groups >> (s.depth - 1u)) & 1u) != 0;
  o.rvalue_group = k.cat == Cat::close_paren && (innermost(s) == '(' || lvalue_group) &&
                   !on_line(s) &&
                   (s.ctx == ctx_value || s.ctx == ctx_const_element || rvalued) &&
                   ((s.assigned >> s.depth) & 1u) == 0;
  // The first prefix of an operand (State::rvalued): `*`, ++ / -- keep an lvalue; `-` `+` `!`
  // `~` `&` sizeof and a cast to no reference make a value. Not a type's `*` / `&`.
  const bool in_type = s.ctx == ctx_type || s.ctx == ctx_ptr ||
                       ((s.ctx == ctx_qual || s.ctx == ctx_macro) && s.run != 0);
  const bool unary = !o.operand_before && !in_type && !on_line(s);
  o.lvalue_prefix = unary && ((k.role == role_ptr && k.cat == Cat::star) || k.role == role_incdec);
  o.rvalue_prefix = (unary && (o.unary_sign || k.type_prefix ||
                               (k.role == role_ptr && k.cat != Cat::star))) ||
                    (o.cast_ends && !s.reference);
  // ... and of those, a group whose last operand is a number, a constant, threadIdx.x, true, a
  // postfix ++ of no pointer: no pointer either - no `[` or `->` after it, as after a builtin's
  // value (NVRTC: "expression must have pointer-to-object type" of `(M)[0]`, `(x == 1)[0]`).
  o.value_group = o.rvalue_group && s.ctx == ctx_value && s.operand_kind < operand_pointer &&
                  ((s.combined >> s.depth) & 1u) == 0;
  // A group over one operand (no binary operator or assignment at its depth) has its type: a
  // pointer's stays a pointer (`(p)`, `--(p)`, `((int*)x)`; NVRTC: "expression must have
  // arithmetic or unscoped enum type" of `--(p) / 2`). Not a `*(` group's (its element).
  const bool single = after_operand(s.ctx) && (((s.combined | s.assigned) >> s.depth) & 1u) == 0;
  if (k.cat == Cat::close_paren && (innermost(s) == '(' || lvalue_group) && single &&
      !on_line(s) && operand_type(s) >= operand_pointer) {
    o.group_kind = operand_type(s);
  }
  begin_type_step(s, k, o);
  // A floating operand directly in a group makes the group's value floating (NVRTC: "expression
  // must have integral or unscoped enum type" of `(1.5 + i) % 2`, `(x[0]) << 1`).
  if (s.pp == Pp::none && o.kind_before == operand_floating && o.operand_before &&
      innermost(s) == '(') {
    s.floating_closers |= std::uint64_t{1} << (s.depth - 1u);
  }
  return o;
}

void take_operand_step(State& s, const TokenInfo& k, const OperandStep& o) {
  // The floating overloads' first arguments: open at their `(`, done at `,` or `)`.
  s.floating_args &= (std::uint64_t{1} << s.depth) - 1u;
  if (o.floating_comma) s.floating_args &= ~(std::uint64_t{1} << (s.depth - 1u));
  if (o.floating_open) s.floating_args |= std::uint64_t{1} << (s.depth - 1u);
  s.floating_due = o.floating_open || o.floating_unary;
  s.floating_call = k.floating_overload;
  if (o.void_open) s.void_call = static_cast<std::int8_t>(s.depth - 1);
  if (o.void_close) {
    s.void_call = -1;
    s.ctx = ctx_initialized;  // `,` or `;` (no operator: the call has no value)
  }
  s.void_named = k.void_result;
  // The operand's type.
  const std::uint64_t level = std::uint64_t{1} << s.depth;
  if (o.rvalue_group) s.ctx = ctx_call_result;
  s.assigned &= (level << 1u) - 1u;
  if (k.cat == Cat::open_paren || k.cat == Cat::open_bracket || k.cat == Cat::open_brace ||
      k.ternary == 1) {
    s.assigned &= ~level;
  }
  if (k.assigns && k.role == role_operator) s.assigned |= level;
  s.combined &= (level << 1u) - 1u;
  if (k.cat == Cat::open_paren || k.cat == Cat::open_bracket || k.cat == Cat::open_brace ||
      k.ternary == 1) {
    s.combined &= ~level;
  }
  if (o.binary || k.ternary != 0) s.combined |= level;
  s.additive &= (level << 1u) - 1u;
  if (k.cat == Cat::open_paren || k.cat == Cat::open_bracket || k.cat == Cat::open_brace ||
      k.ternary == 1) {
    s.additive &= ~level;
  }
  if (o.binary && (k.cat == Cat::plus || k.cat == Cat::minus)) s.additive |= level;
  take_lvalue_step(s, k, o, level);
  std::uint8_t kind = operand_other;
  if (o.variable) {
    const bool floating = local_type(s, k.local) == type_floating;
    if (o.deref || !local_bit(s.pointers, k.local)) {
      kind = floating ? operand_floating : operand_other;
    } else {
      kind = floating ? operand_floating_pointer : operand_pointer;
    }
  } else if (k.role == role_incdec && o.operand_before) {
    kind = o.kind_before;  // postfix: the operand's type
  } else if (k.cat == Cat::close_paren || k.cat == Cat::close_bracket ||
             k.cat == Cat::close_brace) {
    kind = ((s.floating_closers >> s.depth) & 1u) != 0 || o.floating_deref ? operand_floating
                                                                           : operand_other;
    if (o.group_kind != 0) kind = o.group_kind;
  }
  s.operand_kind = kind;
  if (o.variable) {
    const std::uint8_t type = local_type(s, k.local);
    s.no_member = type == type_integral || type == type_floating ||
                  (o.deref && local_bit(s.pointers, k.local));
    s.vector_operand = type == type_vector && !o.deref && !local_bit(s.pointers, k.local);
  } else {
    s.no_member = k.cat == Cat::close_bracket && kind == operand_floating;
    s.vector_operand = false;
  }
  s.value_result =
      (k.cat == Cat::close_paren && ((s.value_calls >> s.depth) & 1u) != 0) || o.value_group;
  s.value_calls &= level - 1u;
  if (o.value_call) s.value_calls |= level >> 1u;
  s.builtin_named = k.role == role_function;
  s.floating_closers &= level - 1u;  // closed brackets' bits go
  if (o.opens_floating) s.floating_closers |= level >> 1u;
  s.prefixed &= (level << 1u) - 1u;  // the levels above the current one
  if (opens_bracket(k)) s.prefixed &= ~level;
  if (o.binary || k.ternary != 0) s.prefixed &= ~level;
  if (o.prefix || o.cast_ends) s.prefixed |= level;
  if (o.prefix || o.cast_ends) {
    s.floating_casts = o.floating_cast ? s.floating_casts | level : s.floating_casts & ~level;
    s.pointer_casts = o.pointer_cast ? s.pointer_casts | level : s.pointer_casts & ~level;
  }
  s.floating_casts &= s.prefixed;
  s.pointer_casts &= s.prefixed;
  if (k.role == role_type) s.last_type = k.type_cat;
  if (k.role == role_type) s.void_type = k.word == w_void;
  s.floating_named = k.floating_value;
  s.pointer_named = k.pointer_first || o.reinterpret_pointer;
  s.pointer_group = o.pointer_group_open;
  s.pointer_values &= level - 1u;  // closed brackets' bits go; a load's first argument ends at `,`
  if (k.cat == Cat::comma) s.pointer_values &= ~(level >> 1u);
  if (o.pointer_open || o.pointer_group_open) s.pointer_values |= level >> 1u;
  s.pointer_arg = o.pointer_open;  // (a load's / store's / atomic's first argument)
  take_call_step(s, k, CallStep{o.call_open, o.call_args, o.call_comma});
  // (An array's bound is an integer: NVRTC "expression must have integral or unscoped enum type"
  // of `float a[1.5]`, `[6e8 / 2]`.)
  s.num_integral =
      k.cat == Cat::num && (s.integral_due || s.pointer_cast_due || s.offset_due || o.in_bound);
  s.value_parens &= level - 1u;  // closed brackets' bits go
  if (o.value_open) s.value_parens |= level >> 1u;
  s.num_floating = o.floating_number;
  // (A parenthesis keeps it due: `i % (double)x`, `i % (sin(x))`; and so do + - * / after an
  // integer operator's right operand, whose terms are all integers: NVRTC "expression must have
  // integral or unscoped enum type" of `b ^ (w)/7e8`, `i << i + x`, `i & 2 * x` with x a float.)
  const bool chain_term =
      o.binary && !k.assigns &&
      (k.arithmetic_operator || k.cat == Cat::plus || k.cat == Cat::minus || k.divides);
  s.integral_chains &= (level << 1u) - 1u;  // closed brackets' bits go
  if (k.cat == Cat::open_paren && s.integral_due) s.integral_chains |= level;
  if (o.binary && !chain_term) {
    const bool chains = k.integral_operator && !k.divides && !k.assigns;
    s.integral_chains = chains ? s.integral_chains | level : s.integral_chains & ~level;
  }
  const bool chained = chain_term && ((s.integral_chains >> s.depth) & 1u) != 0;
  s.integral_due =
      o.integral_next || chained || (s.integral_due && (o.unary_sign || k.cat == Cat::open_paren));
  // (After a cast to a floating type a value is due: `(float)p` is no conversion, `(float)p[0]`
  // is; after a cast to a pointer an operand that is no floating value.)
  // (A sign or a prefix ++ / -- keeps it due: `i < +p`, `1 != --p`.)
  const bool prefix_incdec = k.role == role_incdec && !o.operand_before;
  s.value_due = o.value_next || o.to_floating || o.to_integral ||
                (s.value_due && (o.unary_sign || prefix_incdec));
  // (A sign keeps it due: `(double*)-a[0]`, whose pointer a is subscripted - a value due.)
  s.pointer_cast_due = o.to_pointer || (s.pointer_cast_due && o.unary_sign);
  s.offset_due = o.pointer_offset || (s.offset_due && o.unary_sign);
  take_type_step(s, k, o);
}

// What follows a call's value or a function's name, a void function's return (code_word_allowed()
// and fill_code_tokens() ask them). After a void function's `return`: `;` (or a preprocessor line).
bool void_return_refuses(const State& s, const TokenInfo& k) {
  return s.void_return && !on_line(s) && k.cat != Cat::semi && k.cat != Cat::hash;
}

// Right after a builtin's or a functional cast's value (State::value_result): no `->` (no
// builtin returns a pointer; NVRTC: "operator -> or ->* applied to \"float\" instead of to a
// pointer type" of `ceil(x[0])->`, `int()->`). (`[` is refused there by its open check.)
bool value_result_after(const State& s) {
  return s.value_result && s.ctx == ctx_call_result && !on_line(s);
}

// After a device function's name (ctx_callable) its call: `(`, or `<` of its template arguments
// (NVRTC: "expression must have arithmetic or unscoped enum type" of `4 / f`, `f - 1`; a function
// is no value). The completion path writes `( )`.
bool callable_refuses(const State& s, const TokenInfo& k) {
  return s.ctx == ctx_callable && !on_line(s) && k.cat != Cat::open_paren && k.role != role_lt &&
         k.cat != Cat::hash;
}

}  // namespace sparserl::env::detail
