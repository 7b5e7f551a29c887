// The code-token rules: what each category of token may do in code and on a preprocessor line
// (kCodeRules, one row per category: its checks and how taking it moves brackets and lines), the
// type-word rules per context (role_checks), the names a scope holds (new_local_allowed,
// known_local_allowed) and the checks that look at the state (passes). The lexicon turns the rows
// into per-token Check bits per row; code_word_allowed() judges a token by them, and fill()'s fast
// path (fill_code_tokens) copies a row's mask of unchecked tokens and runs the checks of the rest.
// After `.` / `->` a field alone may come (kFieldRules). What the operand's type refuses, and how a
// token moves it, is action_mask_operands.cpp's (and the casts' rules action_mask_types.cpp's).
#include <algorithm>
#include <cstring>

#include "action_mask_internal.hpp"

namespace sparserl::env::detail {
namespace {

// --- type-specifier runs ---

// May a type word of part `bits` join the run `run` (0: a run starts)? `unsigned long long int`
// and `signed char` may; `long long long`, `int int`, `value_t float` may not.
bool type_run_takes(std::uint8_t run, std::uint8_t bits) {
  if (run == 0) return true;
  const int longs = run & 3;
  if ((run & kRunSingle) != 0) return false;
  switch (bits) {
    case kRunLong:
      return longs < 2 && (run & (kRunShort | kRunChar)) == 0;
    case kRunShort:
      return longs == 0 && (run & (kRunShort | kRunChar)) == 0;
    case kRunInt:
      return (run & (kRunInt | kRunChar)) == 0;
    case kRunChar:
      return longs == 0 && (run & (kRunInt | kRunChar | kRunShort)) == 0;
    case kRunSign:
      return (run & kRunSign) == 0;
    default:
      return false;  // float, value_t, ...: a run of one
  }
}
std::uint8_t type_run_join(std::uint8_t run, std::uint8_t bits) {
  return static_cast<std::uint8_t>(bits == kRunLong ? run + 1 : run | bits);
}

// The type-word rules' part of a token's checks in context `ctx`. After a macro's name what follows
// a qualifier (the macro may name a type or one) or a callable operand (a value, a function).
std::uint8_t role_checks(const TokenInfo& k, int ctx) {
  if (ctx == ctx_macro) {
    return std::min(role_checks(k, ctx_qual), role_checks(k, ctx_callable));
  }
  if (k.role == role_type) {
    // void names no value: in an expression it would be `void()` (no argument, no operand). Nor
    // a vector type: CUDA's have no operators and no constructor but dim3's (NVRTC: "no operator
    // ... matches these operands" of `dim3() - 1`, "no suitable constructor exists" of `int4(1)`);
    // a vector's value comes from a variable or make_int4 & co.
    const bool expression = ctx == ctx_expr || ctx == ctx_operand_due || ctx == ctx_args;
    if ((k.word == w_void || k.type_cat == type_vector) && expression) return kRefused;
    switch (ctx) {
      case ctx_start:  // (a for statement's later clause: see misplaced_declaration)
      case ctx_paren:  // (a loop's or an if's one statement: see misplaced_declaration)
        return kCheckRun;
      case ctx_expr:
      case ctx_operand_due:
      case ctx_args:
      case ctx_cast_type:
        return 0;
      case ctx_group:  // (a vector type's cast: see vector_cast)
        return k.type_cat == type_vector && !k.constructed ? kCheckRun : 0;
      case ctx_qual:
      case ctx_type:
        return kCheckRun;
      default:
        return kRefused;
    }
  }
  if (k.role == role_qual && ctx == ctx_paren && ((k.follows >> ctx) & 1u) != 0) return kCheckRun;
  return ((k.follows >> ctx) & 1u) != 0 ? 0 : kRefused;
}

// The context after `(` `,` `;` `{` `}` `)` `:` else (the bracket already on the stack; `closed`
// the one a `)` closed): a
// condition's operand after if ( / while (, a call's arguments, a group's operand or cast, a
// declaration after for ( or a declarator's `(`; after `,` in a call an argument; after `)` a
// cast's operand, a statement or an operator.
std::uint8_t after_start(const State& s, const TokenInfo& k, std::uint8_t closed) {
  const std::uint8_t open = innermost(s);
  if (k.ternary == 2 && closed == kTernary) return ctx_operand_due;  // `a ? b :` an operand
  switch (k.cat) {
    case Cat::close_paren:
      // A cast's operand; after a group or a call an operand (no call of it); a statement after
      // a condition, a for statement's or a declarator's parameters.
      if (closed == kCastParen) return ctx_operand_due;
      // (sizeof's value takes no assignment, no ++ / --: NVRTC "expression must be a modifiable
      // lvalue" of `sizeof(int)++`.)
      if (closed == kCallParen || closed == kSizeofParen) return ctx_call_result;
      if (closed == '(' || closed == kDerefParen) {
        return ctx_result;  // (`*reinterpret_cast<T*>(p) = ...`, `(p + i)[0]`)
      }
      return ctx_paren;
    case Cat::close_brace:
      // A declarator's initializer: the declaration goes on with `,` or ends with `;` (no operator,
      // no `}`: NVRTC's `expected a ";"`); a functional cast's braces: a value.
      return closed == kInitBrace ? ctx_initialized : closed == kCastBrace ? ctx_value : ctx_start;
    case Cat::open_brace:
      // An initializer's or a functional cast's braces hold expressions (no statement).
      return open == kInitBrace || open == kCastBrace ? ctx_args : ctx_start;
    case Cat::open_paren:
      if (s.ctx == ctx_call_args && s.reference_cast) return ctx_group;  // an lvalue's group
      if (s.ctx == ctx_cond || s.ctx == ctx_call_args) return ctx_operand_due;
      return open == kCallParen ? ctx_args
             : open == '(' || open == kSizeofParen || open == kDerefParen ? ctx_group
                                                                          : ctx_start;
    case Cat::comma:
      // A parameter or template parameter follows (a type first); else an operand, or a name a
      // declaration list declares.
      return open == kParamParen || s.top == Top::tmpl_params ? ctx_start : ctx_operand_due;
    default:
      return ctx_start;
  }
}

// What taking a code token found before the state moved (take_code_token).
struct Taken {
  bool declares = false;     // a local a declaration declares
  bool macro = false;        // a local #defined
  bool cast_closed = false;  // a `>` that closes a cast's angle
  std::uint8_t closing = 0;  // the bracket a closer closes
};

// The context after a variable's name: a pointer or array, a const, another variable; after a
// unary `*` the element the pointer points at.
Ctx after_variable(const State& s, int local) {
  // A const variable is read as a const element (no assignment; `.x` of a const float4).
  const bool constant = local_bit(s.consts, local);
  if (s.ctx == ctx_deref) return constant ? ctx_const_element : ctx_operand;
  // (A floating overload's first argument takes no pointer: NVRTC "no instance of overloaded
  // function" of `ceil(x)`; the pointer there is subscripted - `p ? a : b` is refused with it.)
  const bool floating_first = s.floating_due && innermost(s) == kCallParen && !on_line(s);
  if (local_bit(s.pointers, local)) {
    return s.value_due || floating_first ? ctx_subscript_due : ctx_pointer;
  }
  return constant ? ctx_const_element : ctx_operand;
}

// The context after a known name that no declaration declares and no macro is: a file-scope name
// (a device function's) may be called, a template's parameter is a value, a launched kernel's
// name is no device code's to call; a block's names are variables.
Ctx named_ctx(const State& s, int local) {
  const bool kernel = local < kMaxKernelLocal && ((s.launched >> local) & 1u) != 0;
  if (scope_of(s, local) != block_scope(0, false) || kernel) return after_variable(s, local);
  return local_bit(s.template_names, local) ? ctx_value : ctx_callable;
}

// Whether a known name (no macro) must open a bracket next: a device function's `(`, a pointer's
// `[` where a value is due or as a floating call's first argument (pointer_argument()).
bool bracket_follows(const State& s, int local) {
  if (local >= s.locals_used || is_macro(s, local)) return false;
  const Ctx named = named_ctx(s, local);
  return named == ctx_callable || named == ctx_subscript_due ||
         (named == ctx_pointer && lone_floating_argument(s));
}

void advance_role(State& s, const TokenInfo& k, const Taken& taken) {
  const bool declares = taken.declares, macro = taken.macro, cast_closed = taken.cast_closed;
  const bool reference = s.reference;  // (the type's last `*` / `&` was `&`)
  const bool in_type = s.ctx == ctx_type || s.ctx == ctx_ptr ||
                       ((s.ctx == ctx_qual || s.ctx == ctx_macro) && s.run != 0);
  // Specifiers count within a run of them and type words; a `*` / `&` in a type starts the
  // pointer's own (`const int* const`), anything else a new declaration or cast's.
  if (k.role != role_qual && k.role != role_type) s.specifiers = 0;
  if (k.role != role_qual) s.reference = in_type && k.role == role_ptr && k.cat != Cat::star;
  if (in_type && k.role == role_ptr && k.cat == Cat::star) s.starred = true;
  if (k.role == role_start) s.starred = false;
  switch (k.role) {
    case role_type:
      if (s.ctx == ctx_expr || s.ctx == ctx_operand_due || s.ctx == ctx_args) {
        s.ctx = ctx_cast_call;
        s.run = k.type_bits;
      } else {
        if (s.ctx == ctx_group && innermost(s) == '(') {
          s.stack[s.depth - 1u] = kCastParen;  // `(int`: a cast
        }
        // A declaration's type (not a cast's, nor sizeof's): its names' type.
        const std::uint8_t open = innermost(s);
        if (at_statement(s) || open == kForParen || open == kParamParen) {
          s.decl_type = k.type_cat;
          s.decl_void = k.word == w_void;
          s.list_depth = -1;  // a new declaration: its list starts at its first name
        }
        if (k.constructed) s.decl_constructed = true;
        s.run = type_run_join(in_type ? s.run : 0, k.type_bits);
        s.ctx = ctx_type;
      }
      return;
    case role_qual:
      if (s.ctx == ctx_group && innermost(s) == '(') {
        s.stack[s.depth - 1u] = kCastParen;  // `(const`: a cast (its operand follows its `)`)
      }
      if (!in_type) s.run = 0;
      s.specifiers |= k.specifier;
      if (k.word == w_const && s.ctx != ctx_ptr && !in_declarator_list(s)) s.decl_const = true;
      if (k.word == w_extern) s.decl_extern = true;
      if (k.shared) s.decl_shared = true;
      if (s.ctx != ctx_ptr) s.ctx = k.word == w_extern && in_function(s) ? ctx_extern : ctx_qual;
      return;
    case role_ptr:  // in a type, a binary operator, or a unary `*` / `&`
      s.ctx = in_type                ? ctx_ptr
              : after_operand(s.ctx) ? ctx_operand_due
              : k.cat == Cat::star   ? ctx_deref
                                     : ctx_address;
      return;
    case role_cast_kw:
      s.ctx = ctx_cast_kw;
      return;
    case role_lt:
      s.ctx = s.ctx != ctx_cast_kw ? ctx_operand_due : s.top == Top::tmpl_params ? ctx_start
                                                                                 : ctx_cast_type;
      return;
    case role_start:
      // A declaration list goes on after `,` (`const int a = 0, b;`) but in parameters and calls;
      // its constness and type through its initializers' brackets too (in_declarator_list).
      if (k.cat != Cat::comma || innermost(s) == kParamParen || innermost(s) == kCallParen) {
        const bool closer = k.cat == Cat::close_paren || k.cat == Cat::close_brace;
        if (!in_declarator_list(s, closer ? taken.closing : 0)) {
          s.decl_const = false;
          s.decl_type = type_unknown;
        }
        s.decl_extern = false;
        s.decl_shared = false;
        s.decl_constructed = false;
      }
      s.ctx = after_start(s, k, taken.closing);
      // A cast to a reference takes an lvalue: a variable or `(` (NVRTC: "expression must be an
      // lvalue or xvalue" of `(double&)1`, `(int& volatile)N`); the completion path writes `(
      // <num> 0 )` as after a unary `&` (statement_closers counts it inside the parenthesis).
      if (k.cat == Cat::close_paren && taken.closing == kCastParen && reference) {
        s.ctx = ctx_address;
      }
      s.run = 0;
      return;
    case role_operand:
      // `]` of an element, a member of a variable (a value of threadIdx & co), a value; `]` of a
      // declarator's bound: the declarator goes on (NVRTC: "expression must be a modifiable
      // lvalue" of `long i[N] --;`, `expected a ";"` of `int a[4] + 1;`).
      s.ctx = k.cat == Cat::close_bracket && ((s.bounds >> s.depth) & 1u) != 0 ? ctx_declared
              : k.cat == Cat::close_bracket
                  ? (taken.closing == kConstSubscript ? ctx_const_element : ctx_element)
              : k.cat == Cat::member && s.ctx != ctx_member_dot ? ctx_operand
                                                                 : ctx_value;
      return;
    case role_function:
      s.ctx = k.nullary ? ctx_call : ctx_call_args;
      return;
    case role_vector:
      s.ctx = ctx_member;
      return;
    case role_incdec:  // postfix after an operand, else prefix: a variable or `(` (an lvalue)
      s.ctx = after_operand(s.ctx) ? ctx_value : ctx_address;
      return;
    case role_operator:
      // The `>` closing a template's parameters at file scope: __device__ follows; a cast's: its
      // parenthesised operand (for a cast to a reference an lvalue's group: State::reference_cast).
      s.ctx = k.word == w_angle_close && s.top == Top::tmpl_done ? ctx_start
              : k.word == w_angle_close && cast_closed           ? ctx_call_args
              : k.cat == Cat::keyword                            ? ctx_sizeof
                                                                 : ctx_operand_due;
      return;
    default:
      break;
  }
  if (k.cat == Cat::access && s.ctx == ctx_member) {
    s.ctx = ctx_member_dot;
  } else if (k.cat == Cat::local && macro) {
    if (!in_type) s.run = 0;
    s.ctx = ctx_macro;
  } else if (k.cat == Cat::local) {
    s.operand_const = local_bit(s.consts, k.local);
    s.ctx = declares ? ctx_declared : named_ctx(s, k.local);
  } else if (k.condition) {
    s.ctx = ctx_cond;
    s.while_cond = k.loop;
  } else if (k.for_loop) {
    s.ctx = ctx_for;
  } else if (k.cat == Cat::open_bracket && s.ctx != ctx_declared) {
    s.ctx = ctx_operand_due;  // a subscript (an array's declarator alone may be empty: `s[]`)
  } else {
    s.ctx = ctx_expr;
  }
}

// --- the checks ---

// A prelude constant in code: one the program's format defines (BSR_C in a CSR program would be an
// undeclared identifier; M, N, NNZ, value_t, ... are every format's). Preprocessor lines may name
// any (`#if BSR_C > 2` is 0 where it is undefined; a macro body counts only where expanded).
bool constant_in_format(const State& s, const TokenInfo& k) {
  return k.param == 0 || ((k.param >> s.format) & 1u) != 0;
}

// Locals in canonical order (the next new one is v<locals_used>); in code a new one only where a
// name is declared, a known one where it is in scope; a preprocessor line may name any of them.
bool local_allowed(const Tables& t, const State& s, const TokenInfo& k) {
  if (k.local >= t.locals || k.local > s.locals_used) return false;
  // A line's body names what is known (a macro, a macro's parameter, a function, a variable): a
  // new name there is undeclared wherever the macro is expanded, or a call of nothing on #if.
  if (on_line(s)) {
    return k.local < s.locals_used && (s.line_ctx != line_if_divisor || is_macro(s, k.local));
  }
  if (innermost(s) == kCastAngle) return false;  // a type alone between a cast's < >
  // No function-like macro: the grammar does not make its `(` due, and its name without one is
  // no macro (NVRTC: "identifier \"G\" is undefined" of `G x ^= 1;` after `#define G(a) ...`).
  // `G(x)` goes with it; a line may name one (a macro body, expanded where it is named).
  if (is_macro(s, k.local) && local_bit(s.function_macros, k.local)) return false;
  // No launched kernel's name in a function's code (its declaration is the declaration rules'):
  // a function is no operand (NVRTC: "operand types are incompatible" of `&spmv >= true`,
  // "expression must have class type" of `spmv.z`).
  if (k.local < kMaxKernelLocal && ((s.launched >> k.local) & 1u) != 0 && s.top == Top::body &&
      s.decl == Decl::none) {
    return false;
  }
  // After a unary `*` a pointer (or an array).
  if (s.ctx == ctx_deref && (k.local == s.locals_used || !local_bit(s.pointers, k.local))) {
    return false;
  }
  // After a type word, a qualifier or a type's `*` a name is declared - where a declaration
  // stands - or a macro: `(int v` and `const v` with v a variable declare nothing (NVRTC:
  // `expected a ")"`, "explicit type is missing").
  const bool typed = s.ctx == ctx_type || s.ctx == ctx_ptr || s.ctx == ctx_qual;
  if (typed && !is_macro(s, k.local) && !new_local_allowed(s)) return false;
  if ((shared_const_unnamed(s) || untyped_qualifiers(s)) && !is_macro(s, k.local)) return false;
  // No variable of type void in a function (NVRTC: "incomplete type is not allowed" of `void v;`);
  // a device function's result may be void (at file scope).
  const bool run = s.ctx == ctx_type || (s.ctx == ctx_qual && s.run != 0);
  if (run && s.void_type && in_function(s) && !is_macro(s, k.local)) return false;
  // Where a name is declared, no template parameter of the declaration under way.
  if (new_local_allowed(s) && local_bit(s.template_names, k.local)) return false;
  // An operand of % << & ... or ~: no floating variable, no pointer.
  if (s.integral_due && !is_macro(s, k.local) && k.local < s.locals_used &&
      (local_type(s, k.local) == type_floating || local_bit(s.pointers, k.local))) {
    return false;
  }
  // In an array's bound: a macro, a template parameter, a const variable that is no pointer; no
  // other variable.
  if (in_array_bound(s) && k.local < s.locals_used && !is_macro(s, k.local) &&
      scope_of(s, k.local) != kScopeTag && !local_bit(s.template_names, k.local) &&
      (!local_bit(s.consts, k.local) || local_bit(s.pointers, k.local))) {
    return false;
  }
  // After a cast to a pointer, a pointer's `+` / `-`: no floating value (`(double*)-a[0]` too).
  if ((s.pointer_cast_due || s.offset_due) && !is_macro(s, k.local) && k.local < s.locals_used &&
      local_type(s, k.local) == type_floating &&
      (!local_bit(s.pointers, k.local) || s.value_due)) {
    return false;
  }
  // A floating overload's first argument: no integer or vector variable (a macro may be anything).
  if (s.floating_due && !is_macro(s, k.local) && k.local < s.locals_used) {
    const std::uint8_t type = local_type(s, k.local);
    if (type == type_integral || type == type_vector) return false;
  }
  // At a full code stack no name whose bracket is due next: it could not open (a dead end met on
  // the GPU host by a policy's 2,431-token program 48 brackets deep).
  if (s.depth >= kMaxCodeDepth && bracket_follows(s, k.local)) return false;
  return k.local == s.locals_used ? new_local_allowed(s) : known_local_allowed(s, k.local);
}

// A parenthesis that holds a type-id (a cast's, sizeof's; a group's after `(const`): its type's
// words, const / volatile / __restrict__ and `*` / `&`, nothing else.
bool holds_type_id(std::uint8_t open) {
  return open == '(' || open == kCastParen || open == kSizeofParen || open == kDerefParen ||
         open == kCastAngle;
}
// After a type in such a parenthesis only the type goes on or `)` closes it (NVRTC: `expected a
// ")"` of `(const char(`, `(int const short {`, `sizeof(size_t ,`).
bool in_type_id(const State& s) {
  const bool typed = s.ctx == ctx_type || s.ctx == ctx_ptr || (s.ctx == ctx_qual && s.run != 0);
  return typed && holds_type_id(innermost(s)) && !on_line(s);
}
// A specifier a type-id takes: const, volatile, __restrict__ (NVRTC: `expected a ")"` of
// `(float *__shared__`, `(__shared__)`).
constexpr std::uint16_t kTypeIdSpecifiers = 7;
bool specifier_refused(const State& s, const TokenInfo& k) {
  if (on_line(s)) return false;
  return (k.specifier & s.specifiers) != 0 ||
         ((k.specifier & ~kTypeIdSpecifiers) != 0 && holds_type_id(innermost(s)));
}

std::uint8_t closer_for(std::uint8_t open) {
  return open == kTernary                   ? ':'
         : open == '{' || open == kInitBrace || open == kCastBrace ? '}'
         : open == '[' || open == kConstSubscript ? ']'
         : open == kCastAngle              ? '>'
                                           : ')';
}
std::uint8_t close_char(Cat c) {
  return c == Cat::close_paren ? ')' : c == Cat::close_bracket ? ']' : '}';
}
std::uint8_t opener(Cat c) {
  return c == Cat::open_paren ? '(' : c == Cat::open_bracket ? '[' : '{';
}

// A closer (or `;`) in its place: `;` where a statement ends or between a for statement's
// clauses, `)` of a for statement after its two `;`, `}` of a block after a statement's end.
bool closes_innermost(const State& s, const TokenInfo& k) {
  if (on_line(s)) {
    if (s.pp_depth == 0) return false;
    const std::uint8_t top = s.pp_stack[s.pp_depth - 1u];
    return k.ternary == 2 ? top == kTernary : closer_for(top) == close_char(k.cat);
  }
  const std::uint8_t open = innermost(s);
  if ((k.cat == Cat::semi || k.cat == Cat::comma) && const_uninitialized(s)) return false;
  if (k.cat == Cat::close_paren && void_cast_due(s)) return false;
  if ((k.cat == Cat::semi || k.cat == Cat::comma) && untyped_qualifiers(s)) return false;
  // No bracket open before the innermost #if closes inside its group.
  const bool pops = k.cat == Cat::close_paren || k.cat == Cat::close_bracket ||
                    k.cat == Cat::close_brace || k.ternary == 2 ||
                    (k.word == w_angle_close && open == kCastAngle);
  if (pops && s.if_depth > 0 && s.depth <= s.if_base[s.if_depth - 1u]) return false;
  if (k.ternary == 2) return open == kTernary;  // `:` closes a `?`, no other
  if (k.cat == Cat::semi) return at_statement(s) || open == kForParen || open == kForParen + 1;
  // A cast's angle holds one type; a `?` takes its `:` first.
  // A call's arguments: no `,` past its last, no `)` before it.
  const std::uint8_t args = s.depth > 0 ? s.args[s.depth - 1u] : 0;
  if (k.cat == Cat::comma && open == kCallParen && call_room(args) == 0) return false;
  // An array's bound is a constant expression, no comma expression (NVRTC: `expected a "]"` of
  // `short a[N, M]`).
  if (k.cat == Cat::comma && open == '[' && ((s.bounds >> (s.depth - 1u)) & 1u) != 0) return false;
  // A void declaration's list goes on with no `,`: after it a name would be void, and a `*` is
  // read as a unary one (NVRTC: "incomplete type is not allowed" of `void *p{}, q;`). No list in
  // a block or a for clause has `,` before its first name (NVRTC "expected an identifier" of
  // `char, M;`, `int *, p;`; a device function's parameters may).
  const bool unnamed = s.list_depth < 0 && (s.ctx == ctx_type || s.ctx == ctx_ptr) &&
                       (open == '{' || open == kForParen);
  const bool void_list =
      s.decl_void && s.list_depth == static_cast<int>(s.depth) && open != kParamParen;
  if (k.cat == Cat::comma && (unnamed || void_list) && in_function(s)) return false;
  if (k.cat == Cat::close_paren && open == kCallParen && call_need(args) != 0) return false;
  // Where no operand, type or declarator ends (after a qualifier, `(`, ...) `,` only as the
  // completion path writes it, before a builtin's last argument (`max(v const`: `, <num> 0)`).
  const bool unended = s.ctx == ctx_start || s.ctx == ctx_qual || s.ctx == ctx_expr ||
                       s.ctx == ctx_args;
  if (k.cat == Cat::comma && unended) return open == kCallParen && call_need(args) != 0;
  if (k.cat == Cat::comma) return open != kCastAngle && open != kTernary && !in_type_id(s);
  // `>`: a cast's closes its angle after a type (`const` may end it); elsewhere no qualifier
  // comes before it.
  if (k.word == w_angle_close) {
    const bool typed = s.ctx == ctx_type || s.ctx == ctx_ptr || (s.ctx == ctx_qual && s.run != 0);
    if (open == kCastAngle) return typed && !reinterpret_to_value(s);
    // Elsewhere a comparison after an operand, or a template's parameters closing (not after a
    // type or a declared name: NVRTC's `expected a ";"` of `long v >`, `(float >`).
    const bool declaring_type = typed || s.ctx == ctx_qual || s.ctx == ctx_declared;
    return !declaring_type || (s.top == Top::tmpl_params && s.ctx != ctx_qual);
  }
  if (s.depth == 0 || closer_for(open) != close_char(k.cat)) return false;
  if (is_for_paren(open)) return open == kForParen + 2;
  return open != '{' || statement_ended(s.last);
}

// `{` opens an initializer after a type or a declared name, else a block, which stands where a
// statement does.
bool opens_block(const State& s) {
  return s.ctx != ctx_type && s.ctx != ctx_cast_call && s.ctx != ctx_declared;
}

// <eos>: every bracket and #if closed, every launched kernel declared, the code ending well.
bool program_complete(const State& s) {
  return s.depth == 0 && s.if_depth == 0 && pending_kernel_bits(s) == 0 &&
         (s.last == Last::brace_close || s.last == Last::semi || s.last == Last::pp_eol);
}

// Whether the state passes a token's checks (Check bits of its row).
bool passes(std::uint8_t checks, const Tables& t, const State& s, const TokenInfo& k) {
  if (checks == 0) return true;
  if ((checks & kRefused) != 0) return false;
  // (`;` `,` `)` are checked tokens in every row: closes_innermost judges them.)
  if ((k.cat == Cat::semi || k.cat == Cat::comma) && !on_line(s) && unnamed_declarator(t, s)) {
    return false;
  }
  if ((k.cat == Cat::close_paren || k.cat == Cat::comma) && !on_line(s) && pointer_argument(s)) {
    return false;
  }
  const bool starts = s.ctx == ctx_start || s.ctx == ctx_paren;  // (a run starts there)
  if ((checks & kCheckRun) != 0 && !starts && !type_run_takes(s.run, k.type_bits)) return false;
  if ((checks & kCheckRun) != 0 && (vector_cast(s, k) || misplaced_declaration(s, k))) return false;
  if ((checks & kCheckFormat) != 0 && !constant_in_format(s, k)) return false;
  if ((checks & kCheckLocal) != 0 && !local_allowed(t, s, k)) return false;
  if ((checks & kCheckOpen) != 0 &&
      (on_line(s) ? s.pp_depth >= kMaxPpDepth : s.depth >= kMaxCodeDepth)) {
    return false;
  }
  if ((checks & kCheckOpen) != 0 && !on_line(s)) {
    if (k.cat == Cat::open_brace && opens_block(s) && !at_statement(s)) return false;
    // A functional cast's `{` after a type with a specifier or qualifier is no expression, nor
    // void's (NVRTC: "expected an identifier" of `const long {`, `int const {`; "list-
    // initialization of an object type \"void\" is not allowed" of `void {`).
    if (k.cat == Cat::open_brace && s.ctx == ctx_type && (s.specifiers != 0 || s.void_type)) {
      return false;
    }
    // Nor its `(` (a declarator's parenthesis after a qualifier: NVRTC "expected an identifier" of
    // `volatile const size_t(false)`, `const ulonglong2(M)`), nor a vector type's but dim3's at a
    // statement (no constructor: NVRTC "no suitable constructor exists to convert from \"int\" to
    // \"uint3\"" of `uint3(abs(i))`; in an expression role_checks refuses the type word itself).
    if (k.cat == Cat::open_paren && s.ctx == ctx_type &&
        (s.specifiers != 0 || (s.last_type == type_vector && !s.decl_constructed))) {
      return false;
    }
    // No const local array: it would need an initializer, which no local array takes here (NVRTC:
    // "const variable \"i\" requires an initializer" of `const long i[N];`).
    if (k.cat == Cat::open_bracket && const_uninitialized(s)) return false;
    // `int f(` in a function declares a host function (NVRTC refuses it).
    if (k.cat == Cat::open_paren && s.ctx == ctx_declared && in_function(s) &&
        s.decl == Decl::none) {
      return false;
    }
    if (innermost(s) == kCastAngle) return false;  // a type alone between a cast's < >
    if (in_type_id(s)) return false;
    if (k.cat == Cat::open_bracket && s.value_result && s.ctx == ctx_call_result) return false;
    if (k.role == role_cast_kw && s.depth + 2 > kMaxCodeDepth) return false;  // < and (
    if (k.ternary == 1 && declaring(s)) return false;  // none in __launch_bounds__
  }
  if ((checks & kCheckClose) != 0 && !closes_innermost(s, k)) return false;
  if ((checks & kCheckLineEnd) != 0 && (s.pp_depth != 0 || s.pp != Pp::body)) return false;
  if ((checks & kCheckEnd) != 0 && !program_complete(s)) return false;
  return true;
}

// The row of the code-token rules the state stands in.
std::size_t code_row(const State& s) {
  // __launch_bounds__'s expression alternates operands and operators as code does.
  const bool bounds = s.decl == Decl::bounds_first || s.decl == Decl::bounds;
  return static_cast<std::size_t>(on_line(s)                ? kLineRow + s.line_ctx
                                  : declaring(s) && !bounds ? kDeclarationRow
                                                            : s.ctx);
}

// --- taking a code word (in code, or in a preprocessor line's body) ---

void take_other(State& s, const TokenInfo&) { s.last = Last::other; }
// What a bracket opens in code, from the context before it (see kCallParen).
std::uint8_t code_opener(const State& s, Cat c) {
  if (c == Cat::open_brace) {
    return opens_block(s) ? '{' : s.ctx == ctx_declared ? kInitBrace : kCastBrace;
  }
  if (c == Cat::open_bracket) {
    const bool pointer = s.ctx == ctx_pointer || s.ctx == ctx_subscript_due;
    return s.ctx == ctx_const_element || (pointer && s.operand_const)
               ? kConstSubscript
               : '[';
  }
  if (s.decl == Decl::params) return kParamParen;  // a kernel's
  switch (s.ctx) {
    case ctx_cond:
      return s.while_cond ? kLoopCondParen : kCondParen;
    case ctx_deref:
    case ctx_address:
      return kDerefParen;
    case ctx_sizeof:
      return kSizeofParen;
    case ctx_for:
      return kForParen;
    case ctx_declared:
      return kParamParen;
    case ctx_call_args:
      // `*reinterpret_cast<T*>(p)`: what the cast's pointer points at is a variable;
      // `reinterpret_cast<T&>(x)`: x is an lvalue (State::reference_cast).
      return s.deref_cast || s.reference_cast ? kDerefParen : kCallParen;
    case ctx_callable:
    case ctx_call:
    case ctx_cast_call:
    case ctx_macro:
      return kCallParen;
    default:
      return '(';
  }
}
void take_open(State& s, const TokenInfo& k) {
  s.last = Last::other;
  if (on_line(s)) {
    s.pp_stack[s.pp_depth++] = opener(k.cat);
    return;
  }
  s.stack[s.depth++] = code_opener(s, k.cat);
  s.deref_cast = false;
  // A block (not an initializer's braces, which no scope or loop body has).
  if (innermost(s) == '{') {
    ++s.braces;
    // A loop's body: continue and break may stand in it (and in the blocks inside).
    if (s.loop_pending) s.loop_braces |= std::uint64_t{1} << (s.depth - 1u);
    if (s.if_pending) s.if_braces |= std::uint64_t{1} << (s.depth - 1u);
    s.loop_pending = false;
    s.if_pending = false;
  }
  if (innermost(s) == '{') s.last = Last::brace_open;
}
void take_close(State& s, const TokenInfo& k) {
  const bool line = on_line(s);
  const std::uint8_t open = line ? 0 : innermost(s);
  if (line) {
    --s.pp_depth;
  } else {
    --s.depth;
    s.loop_braces &= ~(std::uint64_t{1} << s.depth);
    // An if's block closes: its `else` may follow.
    if (open == '{' && ((s.if_braces >> s.depth) & 1u) != 0) s.else_ok = true;
    s.if_braces &= ~(std::uint64_t{1} << s.depth);
    if (open == kCondParen) s.if_pending = true;  // an if's `)`: its statement follows
    if (open == '{') close_block(s);
    // A for's or a while's `)`: its body follows.
    if (open == kForParen + 2 || open == kLoopCondParen) s.loop_pending = true;
  }
  // A block's `}` ends a statement; an initializer's does not (its `;` is still due).
  s.last = k.cat == Cat::close_brace && open == '{' ? Last::brace_close : Last::other;
}
void take_semi(State& s, const TokenInfo&) {
  s.last = on_line(s) ? Last::other : Last::semi;
  if (!on_line(s) && is_for_paren(innermost(s))) ++s.stack[s.depth - 1u];  // the next clause
  if (!on_line(s) && at_statement(s)) s.loop_pending = false;  // a loop's one-statement body ends
  if (!on_line(s) && at_statement(s) && s.if_pending) {  // an if's one statement ends
    s.if_pending = false;
    s.else_ok = true;
  }
}
void take_access(State& s, const TokenInfo&) { s.last = Last::access; }
void take_number(State& s, const TokenInfo&) {
  s.num = Num::start;
  s.num_len = 0;
  s.num_u = false;
  s.num_l = 0;
  s.num_lcase = 0;
  s.last = Last::other;
}
void take_hash(State& s, const TokenInfo&) {
  s.pp = Pp::hash;
  s.line_ctx = line_due;
  s.line_last = s.last;
  s.pp_depth = 0;
  s.last = Last::other;
}

// What each category of token may do as a code word: its checks in code and on a preprocessor
// line (kNoCheck: none; categories without a row are refused), and how taking it moves the state.
struct CodeRule {
  Cat cat;
  std::uint8_t in_code;
  std::uint8_t on_line;
  void (*take)(State&, const TokenInfo&);
};
constexpr std::uint8_t kNoCheck = 0;
// clang-format off
constexpr CodeRule kCodeRules[] = {
    // category          in code        on a # line     taken
    {Cat::keyword,       kNoCheck,      kNoCheck,       take_other},
    {Cat::builtin,       kNoCheck,      kNoCheck,       take_other},
    {Cat::literal,       kNoCheck,      kNoCheck,       take_other},
    {Cat::constant,      kCheckFormat,  kNoCheck,       take_other},
    {Cat::local,         kCheckLocal,   kCheckLocal,    take_other},
    {Cat::num,           kNoCheck,      kNoCheck,       take_number},
    {Cat::open_paren,    kCheckOpen,    kCheckOpen,     take_open},
    {Cat::open_bracket,  kCheckOpen,    kCheckOpen,     take_open},
    {Cat::open_brace,    kCheckOpen,    kCheckOpen,     take_open},
    {Cat::close_paren,   kCheckClose,   kCheckClose,    take_close},
    {Cat::close_bracket, kCheckClose,   kCheckClose,    take_close},
    {Cat::close_brace,   kCheckClose,   kCheckClose,    take_close},
    {Cat::semi,          kCheckClose,   kNoCheck,       take_semi},
    {Cat::comma,         kCheckClose,   kNoCheck,       take_other},
    {Cat::access,        kNoCheck,      kNoCheck,       take_access},
    {Cat::plus,          kNoCheck,      kNoCheck,       take_other},
    {Cat::minus,         kNoCheck,      kNoCheck,       take_other},
    {Cat::star,          kNoCheck,      kNoCheck,       take_other},
    {Cat::slash,         kNoCheck,      kNoCheck,       take_other},
    {Cat::punct_other,   kNoCheck,      kNoCheck,       take_other},
    {Cat::hash,          kNoCheck,      kRefused,       take_hash},
    {Cat::eol,           kRefused,      kCheckLineEnd,  take_other},  // taken by the line's rules
    {Cat::eos,           kCheckEnd,     kRefused,       take_other},  // taken as the program's end
};
// clang-format on
constexpr std::array<const CodeRule*, kCats> kCodeRuleOf = [] {
  std::array<const CodeRule*, kCats> of{};
  for (const CodeRule& rule : kCodeRules) of[static_cast<std::size_t>(rule.cat)] = &rule;
  return of;
}();
const CodeRule* code_rule(Cat c) { return kCodeRuleOf[static_cast<std::size_t>(c)]; }

// After `.` / `->` a field: a member, or a known local (a new name there would be undeclared; a
// preprocessor line may name the next new one); after threadIdx & co `.` x, y or z alone (a uint3,
// a dim3). Judged only: a field is taken as a code word.
bool of_vector(const State& s) { return s.ctx == ctx_member_dot && !on_line(s); }
Verdict member_field(const Tables&, const State& s, const TokenInfo& k) {
  return allow_if(!of_vector(s) || k.param != 'w');
}
Verdict known_field(const Tables& t, const State& s, const TokenInfo& k) {
  const bool known = k.local < s.locals_used || (on_line(s) && k.local == s.locals_used);
  return allow_if(k.local < t.locals && known && !of_vector(s));
}
constexpr Rule kFieldRules[] = {
    {on(0), cats(Cat::member), member_field, nullptr},
    {on(0), cats(Cat::local), known_field, nullptr},
};

}  // namespace

std::span<const Rule> field_rules() { return kFieldRules; }

// The next new local (the canonical v<locals_used>) in code: only where C++ declares a name -
// after a type word or an earlier local (a user type or macro), through `const`, `*`, `&`,
// `__restrict__`, ..., or after `,` in a declaration list - never inside an expression, where it
// would be an undeclared identifier (the commonest compile error of sampled programs). Preprocessor
// lines keep every local: a macro may name what the code declares later.
// A declaration stands at a statement, in a for statement's first clause or a declarator's
// parameters (not in a call's arguments, a group, a subscript or an initializer).
bool new_local_allowed(const State& s) {
  const std::uint8_t open = innermost(s);
  return s.declarator != 0 && s.last != Last::access &&
         (at_statement(s) || open == kForParen || open == kParamParen);
}

std::uint8_t code_checks(const TokenInfo& k, int row) {
  const CodeRule* rule = code_rule(k.cat);
  const bool line = row >= kLineRow;
  if (rule == nullptr) return kRefused;
  // The kernel-declaration words ("C", __global__, __launch_bounds__) only where a declaration's
  // rules take them, before these; no extern on a preprocessor line (the static check's
  // macro_abuse). Preprocessor-only words (define, endif, pragma, unroll, ...) are no C++
  // keywords: in code they would be undeclared names.
  if (k.word == w_linkage || k.word == w_global || k.word == w_bounds ||
      (line && k.word == w_extern)) {
    return kRefused;
  }
  if (!line && pp_only_word(k)) return kRefused;
  if (k.unmodelled || (!line && k.pp_operator)) return kRefused;
  std::uint8_t checks = line ? rule->on_line : rule->in_code;
  if (row < kContexts) checks |= role_checks(k, row);
  if (line) checks |= line_role_checks(k, row - kLineRow);
  if ((checks & kRefused) != 0) return kRefused;
  if (k.word == w_angle_close && !line && (checks & kRefused) == 0) checks |= kCheckClose;
  // The conditional operator's `?` opens (the nesting limit), its `:` closes (in code and on a
  // preprocessor line).
  if (k.ternary == 1 && (checks & kRefused) == 0) checks |= kCheckOpen;
  if (k.ternary == 2 && (checks & kRefused) == 0) checks |= kCheckClose;
  // if / while, a builtin function, a functional cast's type: the completion path opens their
  // `(`, which must fit the nesting limit.
  const bool unary = (k.role == role_ptr || k.role == role_incdec) &&
                     (row == ctx_start || row == ctx_expr ||
                                            row == ctx_operand_due || row == ctx_args ||
                                            row == ctx_group || row == ctx_sizeof);
  const bool opens = k.condition || k.role == role_function || k.role == role_cast_kw || unary ||
                     (k.role == role_type &&
                      (row == ctx_expr || row == ctx_operand_due || row == ctx_args));
  if (opens && !line && (checks & kRefused) == 0) checks |= kCheckOpen;
  return checks;
}

// After a type's `&` no `*` or `&` (no pointer or reference to a reference).
bool reference_ends(const State& s) { return s.reference && s.ctx == ctx_ptr && !on_line(s); }
// Right after void, no `&` (NVRTC: "reference to void is not allowed" of `void &r {}`).
bool void_reference(const State& s, const TokenInfo& k) {
  return k.role == role_ptr && k.cat != Cat::star && s.ctx == ctx_type && s.void_type &&
         !on_line(s);
}

// In an array's bound, where its value is computed: under a declarator's `[` (State::bounds) at
// any depth, neither in sizeof's parenthesis nor after a prefix (the rule leaves `sizeof x`, a
// cast's operand, `!x` alone: the first two are constant whatever x is).
bool in_array_bound(const State& s) {
  if (on_line(s) || s.bounds == 0) return false;
  for (int i = s.depth - 1; i >= 0; --i) {
    const std::uint8_t open = s.stack[static_cast<std::size_t>(i)];
    if (open == kSizeofParen || ((s.prefixed >> (i + 1)) & 1u) != 0) return false;
    if (open == '[' && ((s.bounds >> i) & 1u) != 0) return true;
  }
  return false;
}

// Right after the `(` of `*(`, `&(`, `++(` (kDerefParen): no type or qualifier. `*(int*)p` is
// refused at p already (the parenthesis is a group, not a cast), and what else follows `*(int*)`
// is no expression (NVRTC: "expected an expression" of `*(float)`, `&(double) )`, `**(int),`).
bool deref_group_start(const State& s) {
  return s.ctx == ctx_group && innermost(s) == kDerefParen && !on_line(s);
}

bool code_word_allowed(const Tables& t, const State& s, const TokenInfo& k) {
  if (void_return_refuses(s, k)) return false;
  if (s.last == Last::access) return t.fields.judge(0, t, s, k) == Verdict::allow;
  if (k.file_only && in_function(s)) return false;
  if (k.jump && !in_loop(s)) return false;
  if (k.is_else && !s.else_ok) return false;
  if (!on_line(s) && !floating_allowed(s, k)) return false;
  if (k.role == role_ptr && (reference_ends(s) || void_reference(s, k))) return false;
  if (block_reference(s, k)) return false;
  if (reinterpret_type_refused(s, k) || void_cast_refuses(s, k)) return false;
  if (vector_value_refused(s, k)) return false;
  if (pointer_init_refuses(s, k) || pointer_value_refuses(s, k)) return false;
  if (!operator_allowed(s, k) || !floating_value_allowed(s, k)) return false;
  if (specifier_refused(s, k)) return false;  // once in a declaration, in a type-id cv alone
  // No builtin in an array's bound: none is constexpr (NVRTC: "expression must have a constant
  // value" of `float a[warpSize]`, `[threadIdx.x]`, `[min(4, M)]`).
  if (k.cat == Cat::builtin && in_array_bound(s)) return false;
  if ((k.role == role_type || k.role == role_qual) && deref_group_start(s)) return false;
  if (k.arrow && value_result_after(s)) return false;
  if (callable_refuses(s, k)) return false;
  if (pointer_cast_refused(s, k)) return false;
  if (k.cat == Cat::close_bracket && bound_due(s) && !on_line(s)) return false;
  if (one_value_comma(s, k)) return false;
  if (rvalue_assignment(s, k)) return false;
  if (k.cat == Cat::access && s.no_member && !on_line(s)) return false;
  if (lvalue_group_refuses(s, k)) return false;
  if (list_declarator_refuses(t, s, k)) return false;
  if (vector_operand_refuses(s, k)) return false;
  if ((s.decl_shared || s.decl_const || s.decl_constructed) && shared_refuses(s, k)) return false;
  if (type_refuses(t, s, k)) return false;
  return passes(k.checks[code_row(s)], t, s, k);
}

void take_code_word(State& s, const TokenInfo& k) {
  count_local(s, k);
  const CodeRule* rule = code_rule(k.cat);
  (rule != nullptr ? rule->take : take_other)(s, k);
}

// A code token outside a preprocessor line: scopes, brackets and locals, the kernel declaration,
// the declarator, the type-word context; the operands' types and calls' arguments
// (action_mask_operands.cpp).
void take_code_token(const Tables& t, State& s, const TokenInfo& k) {
  if (s.pp == Pp::none) s.else_ok = false;  // an `else` right after an if's statement alone
  const bool macro = k.cat == Cat::local && scope_of(s, k.local) == kScopeMacro;
  const bool declares =
      k.cat == Cat::local && new_local_allowed(s) && s.declarator == kTypeDeclarator && !macro;
  // A cast's `<` opens an angle on the stack (template's `<` at file scope does not); its `>`
  // closes it.
  const bool cast_open = k.role == role_lt && s.ctx == ctx_cast_kw && s.top != Top::tmpl;
  const bool cast_closed = k.word == w_angle_close && innermost(s) == kCastAngle;
  const Taken taken{declares, macro, cast_closed, innermost(s)};
  const OperandStep operand = begin_operand_step(s, k, declares, macro);
  if (s.pp == Pp::none && declares) {
    // What the declared name is: a pointer (after `*`), const (`const` in its specifiers).
    // (A reference to a value is none: `int& c` names an int.)
    set_local_bit(s.pointers, k.local, s.ctx == ctx_ptr && (!s.reference || s.starred));
    set_local_bit(s.consts, k.local, s.decl_const);
    set_local_type(s, k.local, s.decl_type);
    if (s.top == Top::tmpl_params) set_local_bit(s.template_names, k.local, true);
    s.last_declared = static_cast<std::uint8_t>(k.local);
  }
  const bool bound_open = s.pp == Pp::none && k.cat == Cat::open_bracket && s.ctx == ctx_declared;
  const bool bound_closed = bound_closes(s, k);
  const bool lvalue_open = s.pp == Pp::none && k.cat == Cat::open_paren &&
                           (s.ctx == ctx_address || (s.ctx == ctx_call_args && s.reference_cast));
  const bool reference_closed = cast_closed && s.reference;
  const bool one_value = s.pp == Pp::none && k.cat == Cat::open_brace && one_value_opens(s);
  const bool pointer_init = pointer_starts(s);
  const bool inits_pointer = (k.plain_assign || k.cat == Cat::open_brace) &&
                             s.ctx == ctx_declared && s.top == Top::body &&
                             local_bit(s.pointers, s.last_declared);
  if (s.pp == Pp::none && k.cat == Cat::open_bracket && s.ctx == ctx_declared) {
    set_local_bit(s.pointers, s.last_declared, true);  // an array
  }
  if (!declaring(s)) advance_scopes(s, k);
  const Top top = s.top;
  take_code_word(s, k);
  t.declarations.take(static_cast<int>(s.decl), t, s, k);
  if (const Rule* rule = t.files.find(static_cast<int>(top), k.cat)) rule->take(t, s, k);
  if (s.pp == Pp::none) {
    advance_declarator(s, k);
    if (cast_open) s.stack[s.depth++] = kCastAngle;
    // `*static_cast<...>`: its `(` will be a kDerefParen (advance_role moves ctx below).
    if (k.role == role_cast_kw) s.deref_cast = s.ctx == ctx_deref;
    if (k.role == role_cast_kw) s.reinterpret_angle = k.reinterpret;
    if (cast_closed) --s.depth;
    if (k.ternary == 1) s.stack[s.depth++] = kTernary;
    if (k.ternary == 2 && taken.closing == kTernary) --s.depth;
    advance_role(s, k, taken);
    take_operand_step(s, k, operand);
    const std::uint64_t level = std::uint64_t{1} << s.depth;
    s.bounds &= level - 1u;  // closed brackets' bits go
    if (bound_open) s.bounds |= level >> 1u;
    s.single_braces &= level - 1u;
    if (one_value && (innermost(s) == kInitBrace || innermost(s) == kCastBrace)) {
      s.single_braces |= level >> 1u;
    }
    s.bound_opened = bound_open;
    s.bound_taken = bound_closed || (s.bound_taken && !declares);
    s.lvalue_groups &= level - 1u;
    if (lvalue_open) s.lvalue_groups |= level >> 1u;
    // A cast keyword's angle to a reference: its `(` opens an lvalue's group (NVRTC: "expression
    // must be an lvalue or xvalue" of `reinterpret_cast<long*&>(__double_as_longlong(x))`).
    s.reference_cast = reference_closed;
    // A pointer's initializer (a pointer argument's: operands) starts with `0` where with a number.
    s.pointer_init = inits_pointer || operand.pointer_compared;
    if (pointer_init && k.cat == Cat::num) s.num = Num::start_null;
    // (A `return` where no statement stands - a for statement's clause - is no return statement.)
    s.void_return = k.is_return && s.void_function && s.top == Top::body && innermost(s) == '{';
  }
}

// Clears every token `mask` allows that `refuses` (a predicate on its TokenInfo) refuses.
template <typename Refuses>
void refuse_where(const Tables& t, std::span<std::uint8_t> mask, Refuses refuses) {
  for (std::size_t i = 0; i < mask.size(); ++i) {
    if (mask[i] != 0 && refuses(t.info[i])) mask[i] = 0;
  }
}

void fill_code_tokens(const Tables& t, const State& s, std::span<std::uint8_t> mask) {
  const std::size_t row = code_row(s);
  std::memcpy(mask.data(), t.unchecked[row].data(), mask.size());
  for (TokenId id : t.checked[row]) {
    const TokenInfo& k = t.info[static_cast<std::size_t>(id)];
    mask[static_cast<std::size_t>(id)] = passes(k.checks[row], t, s, k) ? 1 : 0;
  }
  if (in_function(s)) {
    for (TokenId id : t.file_only_ids) mask[static_cast<std::size_t>(id)] = 0;
  }
  if (!in_loop(s)) {
    for (TokenId id : t.jump_ids) mask[static_cast<std::size_t>(id)] = 0;
  }
  if (!s.else_ok) {
    for (TokenId id : t.else_ids) mask[static_cast<std::size_t>(id)] = 0;
  }
  if (reference_ends(s)) {
    for (TokenId id : t.pointer_ids) mask[static_cast<std::size_t>(id)] = 0;
  }
  for (TokenId id : t.pointer_ids) {
    const TokenInfo& k = t.info[static_cast<std::size_t>(id)];
    if (pointer_cast_refused(s, k) || void_reference(s, k) || block_reference(s, k)) {
      mask[static_cast<std::size_t>(id)] = 0;
    }
  }
  if (after_operand(s.ctx) && operand_type(s) != operand_other) {
    for (TokenId id : t.operator_ids) {
      if (!operator_allowed(s, t.info[static_cast<std::size_t>(id)])) {
        mask[static_cast<std::size_t>(id)] = 0;
      }
    }
  }
  if ((s.integral_due || s.pointer_cast_due || s.offset_due) && !on_line(s)) {
    for (TokenId id : t.floating_value_ids) mask[static_cast<std::size_t>(id)] = 0;
  }
  if ((s.specifiers != 0 || holds_type_id(innermost(s))) && !on_line(s)) {
    for (TokenId id : t.specifier_ids) {
      if (specifier_refused(s, t.info[static_cast<std::size_t>(id)])) {
        mask[static_cast<std::size_t>(id)] = 0;
      }
    }
  }
  if (in_array_bound(s)) {
    for (TokenId id : t.builtin_ids) mask[static_cast<std::size_t>(id)] = 0;
  }
  if (deref_group_start(s)) {
    for (TokenId id : t.type_ids) mask[static_cast<std::size_t>(id)] = 0;
  }
  if (value_result_after(s)) {
    for (TokenId id : t.arrow_ids) mask[static_cast<std::size_t>(id)] = 0;
  }
  if (((s.rvalued >> s.depth) & 1u) != 0 && after_operand(s.ctx) && !on_line(s)) {
    for (TokenId id : t.assign_ids) mask[static_cast<std::size_t>(id)] = 0;
  }
  if (s.no_member && !on_line(s)) {
    for (TokenId id : t.access_ids) mask[static_cast<std::size_t>(id)] = 0;
  }
  if (s.lvalue_groups != 0 && !on_line(s)) {
    refuse_where(t, mask, [&](const TokenInfo& k) { return lvalue_group_refuses(s, k); });
  }
  if (s.floating_due && !on_line(s)) {
    for (TokenId id : t.no_floating_ids) mask[static_cast<std::size_t>(id)] = 0;
  }
  if (in_floating_argument(s) && !on_line(s)) {
    for (TokenId id : t.compare_ids) {
      const TokenInfo& k = t.info[static_cast<std::size_t>(id)];
      if (!floating_allowed(s, k)) mask[static_cast<std::size_t>(id)] = 0;
    }
  }
  // Locals come in canonical order: those past the next new one are refused (their 0 stays).
  const int last = std::min<int>(s.locals_used, t.locals - 1);
  for (int i = 0; i <= last; ++i) {
    const TokenId id = t.local_ids[static_cast<std::size_t>(i)];
    const TokenInfo& k = t.info[static_cast<std::size_t>(id)];
    mask[static_cast<std::size_t>(id)] = passes(k.checks[row], t, s, k) ? 1 : 0;
  }
  if (s.void_return && !on_line(s)) {
    refuse_where(t, mask, [&](const TokenInfo& k) { return void_return_refuses(s, k); });
  }
  if (s.ctx == ctx_callable && !on_line(s)) {
    refuse_where(t, mask, [&](const TokenInfo& k) { return callable_refuses(s, k); });
  }
  if (s.depth > 0 && ((s.single_braces >> (s.depth - 1u)) & 1u) != 0 && !on_line(s)) {
    refuse_where(t, mask, [](const TokenInfo& k) { return k.cat == Cat::comma; });
  }
  if ((s.decl_shared || s.decl_const || s.decl_constructed) && in_function(s)) {
    refuse_where(t, mask, [&](const TokenInfo& k) { return shared_refuses(s, k); });
  }
  if (bound_due(s) && !on_line(s)) {
    refuse_where(t, mask, [](const TokenInfo& k) { return k.cat == Cat::close_bracket; });
  }
  if ((s.ctx == ctx_operand_due && s.declarator == kTypeDeclarator) || s.vector_operand) {
    refuse_where(t, mask, [&](const TokenInfo& k) {
      return list_declarator_refuses(t, s, k) || vector_operand_refuses(s, k);
    });
  }
  refuse_cast_values(t, s, mask);
  refuse_ill_typed(t, s, mask);
}

}  // namespace sparserl::env::detail
