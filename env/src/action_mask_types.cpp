// The operand-type rules that need more of an operand's type than its last token: what an
// additive expression is (a pointer plus or minus integers is a pointer: no `<` after `p - 1`),
// whose operand a postfix ++ / -- would be (no `&x--`), what a group's value is (`(p)` is p, so
// `--(p) / 2` divides a pointer), which builtins take values alone (no `abs(i + p)`), what a `*(`
// group must hold (no `*(-x)`), what a static_cast to a pointer takes (no `!x`), what a divisor
// is (no bool), what a group after `&` or a prefix ++ / -- holds (a variable, not `--(1)`) and
// what a declared array's bound holds (no bool, no cast); since grammar-compile-15 also what a
// shift's count holds (no `-`), what a group after a prefix ++ / -- takes (no `[`), what a `*(`
// group holds (a pointer's sum: no `&&`, no `,`), what a group over an assignment to a pointer or
// over a comparison is (a pointer; no array), what a floating sum takes (no << >> & | ^) and that
// a static_cast to a pointer converts `0` alone; since grammar-compile-16 the casts' and
// initializers' values: no reinterpret_cast to bool or to a qualified value, a vector's value
// (make_*) where a scalar is due, what a block's pointer initializer starts with (no `K`), and
// their pass over fill()'s mask (refuse_cast_values, with action_mask_context.hpp's void casts).
// Each refuses a token that would make an ill-typed expression (NVRTC's "operand types are
// incompatible", "expression must be an lvalue", ...); none refuses a token the completion path
// writes (a closer, `;`, the number `0`) but that number in such a group, where the path writes
// a variable instead (lvalue_variable_due: the BPE budget counts its name). begin_type_step()
// and take_type_step() run inside the operand step of action_mask_operands.cpp; type_refuses()
// is asked by code_word_allowed() and fill().
#include <algorithm>

#include "action_mask_internal.hpp"

namespace sparserl::env::detail {
namespace {

bool bit(std::uint64_t bits, int i) { return i >= 0 && ((bits >> i) & 1u) != 0; }

// Directly in a group after a unary `*` (not a `&`'s, a prefix ++ / --'s or a reference cast's:
// State::lvalue_groups), at its start.
bool deref_group_start(const State& s) {
  return s.ctx == ctx_group && s.depth > 0 && innermost(s) == kDerefParen &&
         !bit(s.lvalue_groups, s.depth - 1);
}
// Directly in a group after a unary `*` or a `*reinterpret_cast<T*>(` (not an lvalue group).
bool in_deref_group(const State& s) {
  return s.depth > 0 && innermost(s) == kDerefParen && !bit(s.lvalue_groups, s.depth - 1);
}
// Directly in a group opened where a divisor was due, after an operand.
bool in_divisor_group(const State& s) {
  return s.depth > 0 && innermost(s) == '(' && bit(s.divisor_groups, s.depth - 1);
}
// At the start of a group that must be an lvalue (after `&`, a prefix ++ / --, a reference cast:
// lvalue_group_refuses).
bool lvalue_group_start(const State& s) {
  return s.ctx == ctx_group && s.depth > 0 && innermost(s) == kDerefParen &&
         bit(s.lvalue_groups, s.depth - 1);
}
// A local such a group may hold whatever the operand's context: in scope, no macro, tag,
// file-scope name (a function), launched kernel, const, template parameter or vector variable
// (`--(d)` of a dim3 matches no operator).
bool lvalue_candidate(const State& s, int i) {
  const std::uint8_t scope = scope_of(s, i);
  if (scope == kScopeMacro || scope == kScopeTag || scope == block_scope(0, false)) return false;
  if (i < kMaxKernelLocal && ((s.launched >> i) & 1u) != 0) return false;
  if (local_bit(s.consts, i) || local_bit(s.template_names, i)) return false;
  if (local_type(s, i) == type_vector && !local_bit(s.pointers, i)) return false;
  return known_local_allowed(s, i);
}
int lvalue_candidates_end(const Tables& t, const State& s) {
  return std::min({static_cast<int>(s.locals_used), t.locals, kScopedLocals});
}
// A number at such a group's start where a candidate may stand there (see type_refuses).
bool lvalue_number_refused(const Tables& t, const State& s) {
  if (on_line(s) || !lvalue_group_start(s)) return false;
  for (int i = 0; i < lvalue_candidates_end(t, s); ++i) {
    const TokenId id = t.local_ids[static_cast<std::size_t>(i)];
    if (lvalue_candidate(s, i) && code_word_allowed(t, s, t.info[static_cast<std::size_t>(id)])) {
      return true;
    }
  }
  return false;
}

// Directly in a static_cast to a pointer's parenthesis, after an operand.
bool in_static_paren(const State& s) {
  return s.depth > 0 && innermost(s) == kCallParen && bit(s.static_parens, s.depth - 1);
}
// Right after the `(` of a static_cast to a pointer (State::static_pointer).
bool static_pointer_start(const State& s) { return s.static_pointer && s.ctx == ctx_operand_due; }

// Under a declarator's `[` (State::bounds) at any depth, where the bound's value is computed: not
// in sizeof's parenthesis (a type or a bool there is no value of the bound). Unlike
// in_array_bound(), after a prefix too (`[~(N < 1)]` makes a bool's complement).
bool in_bound_value(const State& s) {
  if (on_line(s) || s.bounds == 0) return false;
  for (int i = s.depth - 1; i >= 0; --i) {
    const std::uint8_t open = s.stack[static_cast<std::size_t>(i)];
    if (open == kSizeofParen) return false;
    if (open == '[' && bit(s.bounds, i)) return true;
  }
  return false;
}
// What an array's bound holds no more of: it is built from integer literals, prelude constants,
// template parameters, const variables, + - * / % << >> & | ^ ~ and groups. No comparison,
// logical operator, `!` or `?` (NVRTC: "the size of an array must be greater than zero" of
// `short a[N < true]`, `[int(9) / true < 2]`: a bool's 0), no true / false / nullptr, and no
// cast - a type word, a qualifier or a cast keyword (NVRTC: "expression must have a constant
// value" of `[(long int long*** const) W == 2]`, `[(unsigned const int) ...`; `int(M)` and
// `static_cast<int>(M)` go with them). sizeof's parenthesis is left alone.
bool bound_refuses(const TokenInfo& k) {
  const bool logical_not = k.type_prefix && !k.integral_operator && k.cat != Cat::keyword;
  return k.compares || logical_not || k.ternary == 1 ||
         (k.cat == Cat::keyword && k.role == role_operand) || k.role == role_type ||
         k.role == role_qual || k.role == role_cast_kw;
}

}  // namespace

// Whether any of the rules below may refuse a token in this state (fill() asks them only then).
bool type_rules_apply(const State& s) {
  if (on_line(s)) return false;
  if (lvalue_group_start(s) || in_bound_value(s)) return true;
  if (bit(s.shift_counts, s.depth)) return true;
  if (after_operand(s.ctx)) {
    return bit(s.address_led, s.depth) || bit(s.pointer_sums, s.depth) || in_divisor_group(s) ||
           in_static_paren(s) || in_deref_group(s) || bit(s.floating_sums, s.depth);
  }
  return deref_group_start(s) || static_pointer_start(s) || s.divisor_due;
}

bool type_refuses(const Tables& t, const State& s, const TokenInfo& k) {
  if (!type_rules_apply(s)) return false;
  // In an array's bound no bool and no cast (bound_refuses).
  if (in_bound_value(s) && bound_refuses(k)) return true;
  // A number at the start of a group that must be an lvalue, where a variable may stand instead
  // (NVRTC: "expression must be a modifiable lvalue" of `--(1)`, "lvalue or a function
  // designator" of `&(29.f)`). The completion path writes that variable (one closed token where
  // two are counted; the BPE budget adds lvalue_variable_due's bytes for its name).
  if (lvalue_group_start(s)) return k.cat == Cat::num && lvalue_number_refused(t, s);
  // In a shift's count no `-`, binary or unary: where its operands are constants the count may be
  // negative (NVRTC: "shift count is negative" of `M >> EMPTY_ROWS - ELL_WIDTH % 9`, `i << -1`).
  // `i >> j - 1` goes with them; a group's difference stays (`x >> (31 - lane)`).
  if (k.cat == Cat::minus && !k.assigns && k.role != role_incdec && bit(s.shift_counts, s.depth)) {
    return true;
  }
  if (after_operand(s.ctx)) {
    // A postfix ++ / -- of a unary `&`'s, a prefix ++ / --'s or a reference cast's operand: that
    // operator would take its value (NVRTC: "expression must be an lvalue or a function
    // designator" of `&x--`, "modifiable lvalue" of `++i--`, `&p[0]++`, `--(i)++`).
    if (k.role == role_incdec && bit(s.address_led, s.depth)) return true;
    // An integer operator of lower precedence than `+` (<< >> & | ^) after a sum or product with
    // a floating operand: its value is floating whatever its last operand (NVRTC: "expression
    // must have integral or unscoped enum type" of `trunc(x) - threadIdx.x >> 2`). (`%` binds
    // tighter: `x + i % 2` is valid; `x * i % 2` is not judged.)
    if (k.integral_operator && !k.divides && !k.assigns && bit(s.floating_sums, s.depth)) {
      return true;
    }
    // A subscript of a group after a prefix ++ / --: the operator would take the element, which
    // the group's `)` does not know to be const (NVRTC: "expression must be a modifiable lvalue"
    // of `--(p)[i]` with p a pointer to const). `++(q)[0]` of a writable q goes with it.
    if (k.cat == Cat::open_bracket && s.ctx == ctx_result && bit(s.address_led, s.depth) &&
        bit(s.incdec_led, s.depth)) {
      return true;
    }
    // A relational operator after a pointer's sum or difference with integers (NVRTC: "operand
    // types are incompatible" of `p - true < true`, `i + p >= 1`; `p - q < 1` is an integer's).
    const bool pointer = operand_type(s) >= operand_pointer;
    if (k.relational && bit(s.pointer_sums, s.depth) != pointer) return true;
    // In a divisor's group no comparison, logical operator or `?`: a bool divisor is 0 where it
    // is false (NVRTC: "division by zero" of `x / (true == 8LL)`; `x / (i < 2)` goes with it).
    if (k.compares && in_divisor_group(s)) return true;
    // In a static_cast to a pointer's parenthesis no binary operator but `+`, `-`, an assignment
    // or `?` / `:`: the others make no pointer (NVRTC: "invalid type conversion" of
    // `static_cast<double3*>((void*)p && x)`, `static_cast<int*>(p < q)`).
    const bool binary = k.role == role_ptr || k.role == role_lt ||
                        (k.role == role_operator && !k.assigns && k.ternary == 0 &&
                         k.cat != Cat::plus && k.cat != Cat::minus);
    // Nor `+` / `-` after an operand that is no pointer, the sum so far none either: an integer's
    // sum is no pointer (NVRTC: "invalid type conversion" of `static_cast<double3***>(3 -
    // char())`). `static_cast<int*>(i + q)` goes with it.
    const bool sign = (k.cat == Cat::plus || k.cat == Cat::minus) && !k.assigns;
    const bool integer_sum = sign && !pointer && !bit(s.pointer_sums, s.depth);
    // In a `*(` group (a unary `*`'s, `*reinterpret_cast<T*>(`'s) likewise no binary operator but
    // `+`, `-`, an assignment or `?` / `:`, and no `,`: what it makes is no pointer (NVRTC:
    // "operand of \"*\" must be a pointer" of `*(p && x)`, `*(p + 1, -true)`).
    if (in_deref_group(s) && (binary || k.cat == Cat::comma)) return true;
    return (binary || integer_sum) && in_static_paren(s);
  }
  // Where a divisor is due no `false` or `!` (NVRTC: "division by zero" of `x / false`, `x % !1`;
  // `x / !i` goes with them).
  const bool logical_not = k.type_prefix && !k.integral_operator && k.cat != Cat::keyword;
  if (s.divisor_due && (k.is_false || logical_not)) return true;
  // At the start of a `*(` group no sign, `!`, `~` or sizeof: what it makes is no pointer
  // (NVRTC: "operand of \"*\" must be a pointer" of `*(-unsigned())`, `*(!p)`).
  const bool sign = k.cat == Cat::plus || k.cat == Cat::minus || k.type_prefix;
  // Nor a builtin (none gives a pointer), a prelude constant, true or false (NVRTC: "operand of
  // \"*\" must be a pointer" of `*(warpSize - 1)`; `*(M + p)` goes with them).
  if (deref_group_start(s)) {
    return sign || k.cat == Cat::builtin || k.cat == Cat::constant ||
           (k.cat == Cat::keyword && k.role == role_operand);
  }
  if (!static_pointer_start(s)) return false;
  // A static_cast to a pointer converts here only the null pointer constant: its operand starts
  // with a number (Num::start_null makes it `0`, which the completion path writes) or a
  // directive line's `#`, nothing else - no sign, `!`, `~`, sizeof, type word, builtin, prelude
  // constant or true / false (NVRTC: "invalid type conversion" of `static_cast<double3**>(!x)`,
  // `static_cast<int*>(M)`), no group (a cast in it converts from another pointer type:
  // `static_cast<double3*>((void**)p)`), no variable, `&`, `*`, ++ / -- or cast (no pointer to an
  // unrelated pointer type: `static_cast<double3***>(p - blockDim.z)` with p a `const int*`).
  // `(q)` and `static_cast<int*>(q)` of an int* q go with them.
  return k.cat != Cat::num && k.cat != Cat::hash;
}

// Clears what `mask` allows and type_refuses() refuses (fill()'s pass).
void refuse_ill_typed(const Tables& t, const State& s, std::span<std::uint8_t> mask) {
  if (!type_rules_apply(s)) return;
  if (lvalue_group_start(s)) {
    if (!lvalue_number_refused(t, s)) return;
    for (std::size_t i = 0; i < mask.size(); ++i) {
      if (t.info[i].cat == Cat::num) mask[i] = 0;
    }
    return;
  }
  for (std::size_t i = 0; i < mask.size(); ++i) {
    if (mask[i] != 0 && type_refuses(t, s, t.info[i])) mask[i] = 0;
  }
}

// Where the completion path goes through a group that must be an lvalue - after `&`, a prefix
// ++ / --, in a reference cast's parenthesis, at the group's start - and a candidate local is in
// scope: the group may refuse the number the closed count writes there, and the variable the
// path writes instead may be a long name (the BPE budget's kLvalueNameBytes). Not judged on a
// preprocessor line but counted through it, as the code's context stays.
bool lvalue_variable_due(const Tables& t, const State& s) {
  // (A cast keyword's angle after its type's `&`, and right after it: its operand will be an
  // lvalue's group too.)
  const bool angle_reference = (s.reference && s.depth > 0 && innermost(s) == kCastAngle &&
                                (s.ctx == ctx_ptr || s.ctx == ctx_qual)) ||
                               (s.reference_cast && s.ctx == ctx_call_args);
  if (s.ctx != ctx_address && !in_cast_reference(s) && !angle_reference && !lvalue_group_start(s)) {
    return false;
  }
  for (int i = 0; i < lvalue_candidates_end(t, s); ++i) {
    if (lvalue_candidate(s, i)) return true;
  }
  return false;
}

// Before the state moves: what the token makes of the operand before it.
void begin_type_step(const State& s, const TokenInfo& k, OperandStep& o) {
  if (on_line(s)) return;
  o.static_pointer = (k.word == w_angle_close && innermost(s) == kCastAngle &&
                      !s.reinterpret_angle && s.ctx == ctx_ptr && !s.reference) ||
                     (s.static_pointer && k.cat == Cat::open_paren);
  o.pointer_before = o.operand_before && operand_type(s) >= operand_pointer;
  // `==` / `!=` after a pointer: its right operand starts a pointer as an initializer's does
  // (State::pointer_init; NVRTC "operand types are incompatible (\"value_t *\" and \"int\")" of
  // `p != ELL_WIDTH`, and of `y == warpSize < ...` with a bool).
  o.pointer_compared = o.binary && k.equality && o.pointer_before;
  o.floating_before = o.operand_before && operand_type(s) == operand_floating;
  o.pointer_sum = bit(s.pointer_sums, s.depth) != o.pointer_before;
  o.address = s.ctx == ctx_address && (k.cat == Cat::local || k.cat == Cat::open_paren);
  o.static_start = static_pointer_start(s);
  // A group over such an operator's value is no array, as one over a number is (value_group:
  // NVRTC "expression must have pointer-to-object type" of `(false / true > .9)[N]`).
  if (k.cat == Cat::close_paren && o.rvalue_group && innermost(s) == '(' &&
      bit(s.valued, s.depth)) {
    o.value_group = true;
  }
  // A group over an assignment to a pointer is a pointer, as one over the pointer alone is
  // (begin_operand_step's group_kind; NVRTC: "operand types are incompatible (\"value_t *\" and
  // \"double\")" of `(p += x)++ > .0`).
  if (k.cat == Cat::close_paren && o.group_kind == 0 && o.operand_before &&
      bit(s.pointer_assigned, s.depth) && innermost(s) == '(') {
    o.group_kind = operand_pointer;
  }
  o.value_args_open = o.call_open && s.value_named;
  // (A declared pointer's brace takes one: `float* q{p}`.)
  o.value_brace = k.cat == Cat::open_brace && one_value_opens(s) &&
                  !(s.ctx == ctx_declared && local_bit(s.pointers, s.last_declared));
}

void take_type_step(State& s, const TokenInfo& k, const OperandStep& o) {
  const std::uint64_t level = std::uint64_t{1} << s.depth;
  s.value_named = k.value_arguments;
  s.static_pointer = o.static_pointer;
  // A number that starts a static_cast to a pointer's operand is the null pointer constant `0`
  // (NVRTC: "invalid type conversion" of `static_cast<double3***>(3)`); the completion path
  // writes that `0`.
  if (k.cat == Cat::num && o.static_start) s.num = Num::start_null;
  // Its parenthesis holds one operand, no comma expression (NVRTC: "invalid type conversion" of
  // `static_cast<double3*>((void*)p, x < 1)`, whose value is a bool): no `,` has room there.
  s.static_parens &= level - 1u;  // closed brackets' bits go
  if (o.static_pointer && k.cat == Cat::open_paren && innermost(s) == kCallParen) {
    s.args[s.depth - 1u] = 0;
    s.static_parens |= level >> 1u;
  }
  s.divisor_groups &= level - 1u;  // closed brackets' bits go
  if (s.divisor_due && k.cat == Cat::open_paren && !on_line(s)) s.divisor_groups |= level >> 1u;
  s.divisor_due = !on_line(s) && ((o.binary && k.divides) ||
                                  (s.divisor_due && (o.unary_sign || k.cat == Cat::open_paren)));
  s.pointer_sums &= (level << 1u) - 1u;  // closed brackets' bits go
  s.address_led &= (level << 1u) - 1u;
  s.incdec_led &= (level << 1u) - 1u;
  s.shift_counts &= (level << 1u) - 1u;
  s.pointer_assigned &= (level << 1u) - 1u;
  s.floating_sums &= (level << 1u) - 1u;
  s.valued &= (level << 1u) - 1u;
  s.value_args &= level - 1u;
  if (on_line(s)) return;
  if (opens_bracket(k)) {
    s.pointer_sums &= ~level;
    s.address_led &= ~level;
    s.incdec_led &= ~level;
    s.shift_counts &= ~level;
    s.pointer_assigned &= ~level;
    s.floating_sums &= ~level;
    s.valued &= ~level;
  } else if (o.binary) {
    // A sum or difference is a pointer where exactly one side is; `*` `/` `%` go on with a term
    // of the sum (no pointer in it); any other operator starts a new expression. A shift's count
    // goes on through `+` `-` `*` `/` `%` and ends at any other operator (a shift starts one).
    const bool additive = (k.cat == Cat::plus || k.cat == Cat::minus) && !k.assigns;
    const bool term = (k.cat == Cat::star || k.divides) && !k.assigns;
    if (additive) {
      s.pointer_sums = o.pointer_sum ? s.pointer_sums | level : s.pointer_sums & ~level;
    } else if (!term) {
      s.pointer_sums &= ~level;
    }
    // An assignment's value is its left operand's (its type: a pointer's or not); `,` `?` `:`
    // start a new one.
    if (k.assigns && k.role == role_operator) {
      s.pointer_assigned =
          o.pointer_before ? s.pointer_assigned | level : s.pointer_assigned & ~level;
    } else if (k.cat == Cat::comma || k.ternary != 0 || k.cat == Cat::semi) {
      s.pointer_assigned &= ~level;
    }
    // A comparison, a logical, shift or bitwise operator makes no pointer; an assignment, `,`,
    // `?` `:` start a new value.
    if (k.ternary == 0 && !k.assigns && (k.compares || (k.integral_operator && !k.divides))) {
      s.valued |= level;
    } else if (k.assigns || k.cat == Cat::comma || k.ternary != 0 || k.cat == Cat::semi) {
      s.valued &= ~level;
    }
    // A sum or product goes on floating through `+ - * / %` once an operand of it was.
    if (additive || term) {
      if (o.floating_before) s.floating_sums |= level;
    } else {
      s.floating_sums &= ~level;
    }
    if (k.shifts || k.shift_assigns) {
      s.shift_counts |= level;
    } else if (!additive && !term) {
      s.shift_counts &= ~level;
    }
    s.address_led &= ~level;
    s.incdec_led &= ~level;
  }
  if (k.role == role_incdec && !o.operand_before) s.incdec_led |= level;
  if (o.address) s.address_led |= k.cat == Cat::open_paren ? level >> 1u : level;
  if (o.value_args_open) s.value_args |= level >> 1u;
  // In a value builtin's call, at its `(`, a `,` and a `+` / `-` there: a value is due (a pointer
  // variable is subscripted, a cast in a group is to no pointer; NVRTC: "no instance of
  // overloaded function \"abs\"" of `abs(N + (bool*)p)`). The brace of one value that is no
  // pointer likewise (NVRTC: "a value of type \"const int *\" cannot be used to initialize an
  // entity of type \"long\"" of `long{p}`, `int v{p}`).
  const bool in_call = s.depth > 0 && innermost(s) == kCallParen && bit(s.value_args, s.depth - 1);
  const bool sign = o.binary && (k.cat == Cat::plus || k.cat == Cat::minus) && !k.assigns;
  if ((in_call && (o.value_args_open || o.call_comma || sign)) || o.value_brace) {
    s.value_due = true;
  }
}

// The cast rules the code-token rules ask (passes(), closes_innermost(), min_completion): a
// reinterpret_cast to a value (or to bool), a floating call's lone pointer argument, a C cast to
// a vector type.

// In reinterpret_cast's angle, right after a floating or vector type word: no `>` yet (NVRTC:
// "invalid type conversion" of `reinterpret_cast<float>(b)`; no such type is a reinterpret_cast's
// result but a pointer's or a reference's). The completion path writes `*`, also through a
// preprocessor line (the count may not grow at its <eol>). After a qualifier (`float const`) the
// rule stands aside: no `*` may follow one there.
bool reinterpret_to_value(const State& s) {
  return innermost(s) == kCastAngle && s.reinterpret_angle && s.ctx == ctx_type &&
         (s.last_type == type_floating || s.last_type == type_vector);
}

// In reinterpret_cast's angle no bool (no pointer converts to it, nor anything else but a bool;
// NVRTC: "invalid type conversion" of `reinterpret_cast<bool volatile>(__cosf(x))`), and no
// qualifier where reinterpret_to_value() holds: `*` must come, and none may after a qualifier
// there (`reinterpret_cast<float const>(i)`). `reinterpret_cast<bool*>(p)` goes with them. The
// completion path writes neither.
bool reinterpret_type_refused(const State& s, const TokenInfo& k) {
  if (on_line(s) || !s.reinterpret_angle || innermost(s) != kCastAngle) return false;
  return k.boolean || (k.role == role_qual && reinterpret_to_value(s));
}

// A CUDA vector's value where a scalar is due (NVRTC: "no suitable conversion function from
// \"uint2\" to \"ptrdiff_t\"" of `ptrdiff_t(make_uint2(...))`; "no suitable constructor exists to
// convert from \"value_t\" to \"uint4\"" of `uint4 v = value_t();`): a make_* builtin (the vector
// results the grammar names) where a value, an integer, a floating value, a pointer cast's operand
// or a pointer's offset is due (`2 * make_int2(`), or as a builtin's or a functional cast's first
// argument (a vector type's functional cast is refused already); and a functional cast to a type
// that is no vector at the top of a vector variable's initializer (`float4 v = float(x)`; dim3,
// which converts from an integer, and pointers aside). `uint4 v = int(x) ? a : b;` goes with it;
// the number the completion path writes there is left alone (`uint4 v = 0;` stays possible).
namespace {
bool scalar_due(const State& s) {
  return s.value_due || s.integral_due || s.floating_due || s.pointer_cast_due || s.offset_due;
}
}  // namespace

bool vector_value_refused(const State& s, const TokenInfo& k) {
  if (on_line(s)) return false;
  if (k.vector_result) {
    if (scalar_due(s)) return true;
    return s.ctx == ctx_args && s.depth > 0 && innermost(s) == kCallParen &&
           bit(s.value_calls, s.depth - 1);
  }
  return k.role == role_type && k.type_cat != type_vector && s.decl_type == type_vector &&
         !s.decl_constructed && s.ctx == ctx_operand_due && s.top == Top::body &&
         s.list_depth == static_cast<int>(s.depth) && !local_bit(s.pointers, s.last_declared);
}

// Right after a block's pointer declarator's `=` or `{` or a pointer's `==` / `!=`
// (State::pointer_init), or a load's, a
// store's or an atomic's `(` (State::pointer_arg: its first argument is a pointer; NVRTC "no
// instance of overloaded function" of `atomicSub(threadIdx.x, 1)`, `__ldcv(max(a, b))`): what
// starts no pointer - a number but `0` (Num::start_null, which the completion path writes), a
// prelude constant, a builtin (none gives a pointer), true / false, a literal, a type word (a
// functional cast's value), a sign, `!`, `~` or sizeof (NVRTC: "a value of type \"int\" cannot be
// used to initialize an entity of type \"void **\"" of `void **q {K};`). `int* q = 1 + p;` goes
// with them; a variable, `&`, `*`, a group and a cast keyword start one. A group's first token
// there is judged the same (State::pointer_group; NVRTC "no instance of overloaded function" of
// `atomicAdd((M), 1)`), but a type word or qualifier, which starts a C cast (`(int*)p`).
bool pointer_init_refuses(const State& s, const TokenInfo& k) {
  if (!pointer_starts(s) || on_line(s)) return false;
  if (s.pointer_group && (k.role == role_type || k.role == role_qual)) return false;
  const bool sign = (k.cat == Cat::plus || k.cat == Cat::minus) && !k.assigns;
  return k.cat == Cat::constant || k.cat == Cat::builtin || k.cat == Cat::literal ||
         (k.cat == Cat::keyword && k.role == role_operand) || k.role == role_type ||
         k.role == role_qual || sign || k.type_prefix;
}

// After an operand directly in a bracket that holds a pointer's value (State::pointer_values: a
// load's, a store's or an atomic's first argument, a group opened where a pointer starts): no
// binary operator but + - and the assignments, which keep a pointer (NVRTC "no instance of
// overloaded function" of `__ldcv(*p && i)`, `atomicAdd((p) > q, 1)`; `atomicAdd(c ? p : q, 1)`
// goes with them). `[`, `->`, `.`, ++ / -- and the closers are no operators here.
bool in_pointer_value(const State& s) {
  return !on_line(s) && s.depth > 0 && bit(s.pointer_values, static_cast<int>(s.depth) - 1) &&
         after_operand(s.ctx);
}
// A C cast opened where a pointer starts (`atomicAdd((int*)p, 1)`) is no cast to a value's
// reference: no `&` before its type's first `*` (NVRTC "operand types are incompatible (\"const
// value_t *\" and \"int\")" of `p == (int & volatile) ...`; `(int*&)` goes with them). Its `)`
// before a `*` is left alone: a cast's type takes no `*` after a trailing qualifier (`(int
// const`), so refusing it meets dead ends.
bool in_pointer_cast(const State& s) {
  return !on_line(s) && s.depth > 0 && innermost(s) == kCastParen && !s.starred &&
         bit(s.pointer_values, static_cast<int>(s.depth) - 1);
}
bool pointer_value_refuses(const State& s, const TokenInfo& k) {
  if (in_pointer_cast(s)) return k.role == role_ptr && k.cat != Cat::star;
  if (!in_pointer_value(s)) return false;
  if (k.assigns || k.cat == Cat::plus || k.cat == Cat::minus) return false;
  return k.role == role_operator || k.role == role_ptr || k.role == role_lt;
}

// A floating functional cast's or builtin's first argument that is a pointer variable alone
// (`value_t(p`, `sqrtf(p`: no binary operator at its depth): it takes `[` or `->` before its `)`
// or `,` (NVRTC: "invalid type conversion" of `double(p)`, "argument of type \"float *\" is
// incompatible" of `sqrtf(y)`; `double(p - q)` is one). The completion path writes `[ <num> 0 ]`,
// also through a preprocessor line.
bool pointer_argument(const State& s) { return s.ctx == ctx_pointer && lone_floating_argument(s); }
// Whether the operand under way is a floating call's first argument alone (whatever it is).
bool lone_floating_argument(const State& s) {
  return s.depth > 0 && innermost(s) == kCallParen &&
         ((s.floating_closers >> (s.depth - 1u)) & 1u) != 0 && ((s.combined >> s.depth) & 1u) == 0;
}

// A C cast to a vector type but dim3: its type word at a group's start or after a cast's qualifier
// (CUDA's vector types have no constructor but dim3's: NVRTC "no suitable constructor exists to
// convert from \"double\" to \"float3\"" of `(float3).8`). A cast to a vector's pointer goes with
// it (`(float4*)p`; the corpus writes reinterpret_cast<float4*>); sizeof's parenthesis keeps them.
bool vector_cast(const State& s, const TokenInfo& k) {
  if (k.role != role_type || k.type_cat != type_vector || k.constructed || on_line(s)) return false;
  const std::uint8_t open = innermost(s);
  return (s.ctx == ctx_group && open == '(') || (s.ctx == ctx_qual && open == kCastParen);
}

// fill()'s pass of reinterpret_type_refused(), void_cast_refuses(), vector_value_refused() and
// pointer_init_refuses(): clears what `mask` allows and they refuse, looking only where they may.
void refuse_cast_values(const Tables& t, const State& s, std::span<std::uint8_t> mask) {
  if (on_line(s)) return;
  const auto clear = [&](const std::vector<TokenId>& ids, auto refuses) {
    for (TokenId id : ids) {
      if (refuses(t.info[static_cast<std::size_t>(id)])) mask[static_cast<std::size_t>(id)] = 0;
    }
  };
  if (s.reinterpret_angle && innermost(s) == kCastAngle) {
    clear(t.type_ids, [&](const TokenInfo& k) { return reinterpret_type_refused(s, k); });
  }
  if (void_cast_due(s) || value_paren(s)) {
    clear(t.type_ids, [&](const TokenInfo& k) { return void_cast_refuses(s, k); });
  }
  if (scalar_due(s) || s.ctx == ctx_args ||
      (s.ctx == ctx_operand_due && s.decl_type == type_vector)) {
    const auto vector_value = [&](const TokenInfo& k) { return vector_value_refused(s, k); };
    clear(t.builtin_ids, vector_value);
    clear(t.type_ids, vector_value);
  }
  if (pointer_starts(s)) {
    for (std::size_t i = 0; i < mask.size(); ++i) {
      if (mask[i] != 0 && pointer_init_refuses(s, t.info[i])) mask[i] = 0;
    }
  }
  if (s.pointer_values != 0 && (in_pointer_value(s) || in_pointer_cast(s))) {
    for (std::size_t i = 0; i < mask.size(); ++i) {
      if (mask[i] != 0 && pointer_value_refuses(s, t.info[i])) mask[i] = 0;
    }
  }
}

}  // namespace sparserl::env::detail
