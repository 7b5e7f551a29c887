// Where the code stands, asked of the syntax mask's State: the small inline questions its rules
// share (on a preprocessor line, at a statement, in a function, in a loop, in a floating
// overload's argument), what the grammar knows of a local (its type, whether it is a pointer or a
// const), and the tokens the completion path owes in a context (due_tokens). Each is a read of a
// few State fields with no table behind it; the rule tables and the State itself are in
// action_mask_internal.hpp, which includes this header at its end.
#pragma once

#include <array>
#include <cstdint>

#include "action_mask_internal.hpp"

namespace sparserl::env::detail {

// Formats whose //@format line has keys (sell C= sigma=, bsr R= C=).
inline bool is_param_format(int format) {
  return format == static_cast<int>(reward::Format::sell) ||
         format == static_cast<int>(reward::Format::bsr);
}
inline bool is_dec(char c) { return c >= '0' && c <= '9'; }
// A local named where a name is declared or used (not a field) counts as used.
inline void count_local(State& s, const TokenInfo& k) {
  if (k.cat == Cat::local && k.local == s.locals_used) ++s.locals_used;
}
inline bool declaring(const State& s) { return s.decl != Decl::none && s.decl != Decl::external; }
inline bool on_line(const State& s) { return s.pp != Pp::none; }
// A keyword of preprocessor lines alone (`if` and `else` are C++'s too).
inline bool pp_only_word(const TokenInfo& k) {
  return k.cat == Cat::keyword && k.param != pp_none && k.param != pp_if && k.param != pp_else;
}
inline std::uint8_t scope_of(const State& s, int local) {
  return local < kScopedLocals ? s.scope[static_cast<std::size_t>(local)] : kScopeMacro;
}
inline bool is_macro(const State& s, int local) {
  return local < kScopedLocals && s.scope[static_cast<std::size_t>(local)] == kScopeMacro;
}
inline void set_scope(State& s, int local, std::uint8_t scope) {
  if (local >= 0 && local < kScopedLocals) s.scope[static_cast<std::size_t>(local)] = scope;
}
inline std::uint8_t block_scope(int level, bool soft) {
  return static_cast<std::uint8_t>((level + 1) | (soft ? kScopeSoft : 0));
}
// The innermost bracket in code (0 where none is open).
inline std::uint8_t innermost(const State& s) { return s.depth > 0 ? s.stack[s.depth - 1u] : 0; }
inline bool is_for_paren(std::uint8_t open) { return open >= kForParen && open <= kForParen + 2; }
// Where a statement stands: at file scope or directly in a block (not inside parentheses, brackets
// or an initializer).
inline bool at_statement(const State& s) { return s.depth == 0 || innermost(s) == '{'; }
// The code before ends a statement (a `;`, a block, an empty block's `{`, a line after those).
inline bool statement_ended(Last last) {
  return last == Last::semi || last == Last::brace_close || last == Last::brace_open ||
         last == Last::pp_eol || last == Last::none;
}

// What the grammar knows of a value's type (TokenInfo::type_cat, State::local_types): nothing, an
// integer (bool, char, int, size_t, ...), a floating value (float, double, value_t), a vector
// (int4, float2, dim3, ...).
enum TypeCat : std::uint8_t { type_unknown, type_integral, type_floating, type_vector };
inline std::uint8_t local_type(const State& s, int local) {
  if (local < 0 || local >= kScopedLocals) return type_unknown;
  return (s.local_types[static_cast<std::size_t>(local / 4)] >> (2 * (local % 4))) & 3u;
}
inline void set_local_type(State& s, int local, std::uint8_t type) {
  if (local < 0 || local >= kScopedLocals) return;
  auto& byte = s.local_types[static_cast<std::size_t>(local / 4)];
  const int shift = 2 * (local % 4);
  byte = static_cast<std::uint8_t>((byte & ~(3u << shift)) | ((type & 3u) << shift));
}
// What an operand just read is, for the operators after it (State::operand_kind): anything else,
// a floating value, a pointer (or array) to anything else, a pointer to floating values.
enum Operand : std::uint8_t {
  operand_other,
  operand_floating,
  operand_pointer,
  operand_floating_pointer
};

// Inside the first argument of a builtin overloaded for floating arguments alone, at its depth.
inline bool in_floating_argument(const State& s) {
  return s.depth > 0 && ((s.floating_args >> (s.depth - 1u)) & 1u) != 0;
}

// A local's bit in State::pointers / State::consts.
inline bool local_bit(const std::array<std::uint8_t, kScopedLocals / 8>& bits, int local) {
  return local >= 0 && local < kScopedLocals &&
         ((bits[static_cast<std::size_t>(local / 8)] >> (local % 8)) & 1u) != 0;
}
inline void set_local_bit(std::array<std::uint8_t, kScopedLocals / 8>& bits, int local, bool on) {
  if (local < 0 || local >= kScopedLocals) return;
  const auto bit = static_cast<std::uint8_t>(1u << (local % 8));
  auto& byte = bits[static_cast<std::size_t>(local / 8)];
  byte = static_cast<std::uint8_t>(on ? byte | bit : byte & ~bit);
}

// Code inside a function (its parameter list or body; a kernel's from "C" on), not on a
// preprocessor line. There `static`, `__device__`, `template`, `inline` & co are refused
// (TokenInfo::file_only; NVRTC: "inline" is not allowed): a local `__device__` variable, and a
// static one but `static __shared__` or `static const`, outlive a launch (the static checks'
// global_state) - and `__shared__` and `const` need no `static` (so those two, which pass, are
// refused too: the rule looks at one token).
inline bool in_function(const State& s) {
  return (s.top == Top::body || s.top == Top::params || s.top == Top::params_open) && !on_line(s);
}

// Right after the name of a const variable declared in a block or a for statement's first clause,
// neither a pointer nor an array yet: it takes an initializer - `=`, `{` or `[` come, not `;` or
// `,` (NVRTC: "const variable requires an initializer" of `const int v;`); the completion path
// writes `= <num> 0`. Not judged on a preprocessor line, but counted through it (the count may not
// grow at its <eol>).
inline bool const_uninitialized(const State& s) {
  return s.ctx == ctx_declared && s.top == Top::body && s.decl == Decl::none && !s.decl_shared &&
         (innermost(s) == '{' || innermost(s) == kForParen) &&
         local_bit(s.consts, s.last_declared) && !local_bit(s.pointers, s.last_declared);
}
constexpr int kConstInitializer = 3;

// Right after a const declaration list's `,` in a block or a for statement's first clause, a new
// name left: list_declarator_refuses makes a name due there, which then owes an initializer -
// the completion path writes `NAME = <num> 0`, two tokens more than the operand counted (the
// count holds through a preprocessor line: neither State::last nor the line is looked at).
inline bool const_declarator_due(const State& s, int locals) {
  return s.ctx == ctx_operand_due && s.decl_const && s.declarator == kTypeDeclarator &&
         s.list_depth == static_cast<int>(s.depth) && s.top == Top::body && s.decl == Decl::none &&
         (innermost(s) == '{' || innermost(s) == kForParen) && s.locals_used < locals;
}

// In a C cast's parenthesis right after `void`: `*` comes before its `)`, and no qualifier (after
// which no `*` may come) - a `(void)` cast's value is none, which no operator takes and no
// operand is (NVRTC: "expression must have arithmetic, unscoped enum, or pointer type but has type
// \"void\"" of `(void const)E < 1`, "... arithmetic ..." of `x / (void)int{}`). `(void)x;` and
// `(void const*)p` go with it (the corpus has none); the completion path writes the `*`, also
// through a preprocessor line.
inline bool void_cast_due(const State& s) {
  return s.depth > 0 && innermost(s) == kCastParen && s.void_type && !s.starred &&
         (s.ctx == ctx_type || (s.ctx == ctx_qual && s.run != 0));
}
// (Nor `void` at all where no `*` may follow it: in a group opened where a value was due,
// State::value_parens - `x * (void` would end there.)
inline bool value_paren(const State& s) {
  return s.depth > 0 && (innermost(s) == '(' || innermost(s) == kCastParen) &&
         ((s.value_parens >> (s.depth - 1u)) & 1u) != 0;
}
inline bool void_cast_refuses(const State& s, const TokenInfo& k) {
  if (on_line(s)) return false;
  return (k.role == role_qual && void_cast_due(s)) ||
         (k.role == role_type && k.word == w_void && value_paren(s));
}

// After a block's qualifiers with no type yet (`__shared__`, `extern __shared__`, `const
// volatile`): a type word (or a macro, or more qualifiers) comes before the name, `;` or `,`
// (NVRTC: "attribute \"__shared__\" does not apply here" of `__shared__;`, "a storage class may
// not be specified here" of `extern __shared__;`, "explicit type is missing" of `const v = 1;`).
// The completion path writes `int` (kQualifiedType tokens; after `extern` too, where it writes
// `__shared__` first); counted through a preprocessor line.
inline bool untyped_qualifiers(const State& s) {
  return (s.ctx == ctx_qual || s.ctx == ctx_extern) && s.run == 0 && s.top == Top::body &&
         s.decl == Decl::none && (innermost(s) == '{' || innermost(s) == kForParen);
}
constexpr int kQualifiedType = 1;

// Right after a declarator's `[` in a block or a for statement's first clause (State::bound_opened),
// the declaration not extern: its bound, no `]` (NVRTC: "incomplete type \"int []\" is not
// allowed" of `int a[];`, `bool b[] ++;`). A local array takes no initializer in the grammar
// (`int a[] = {1}` and `int a[]{1}` are refused at their `{`), so its bound is never deduced;
// `extern __shared__ float s[];` alone leaves it to the launch - its first dimension alone (NVRTC
// "an array may not have elements of this type" of `extern __shared__ int s[][];`, `s[2][]`;
// State::bound_taken). Parameters (`float a[]`) and file scope are left alone. The completion
// path writes `<num> 1` (kBoundNumber tokens) before the `]`.
// (What a bound holds - no bool, no cast - is bound_refuses()'s, action_mask_types.cpp.)
inline bool bound_due(const State& s) {
  return s.bound_opened && (!s.decl_extern || s.bound_taken) && s.top == Top::body &&
         s.depth >= 2 && (s.stack[s.depth - 2u] == '{' || s.stack[s.depth - 2u] == kForParen);
}
constexpr int kBoundNumber = 2;
// A declarator's bound's `]` (its bracket's State::bounds bit), before it is taken.
inline bool bound_closes(const State& s, const TokenInfo& k) {
  return s.pp == Pp::none && k.cat == Cat::close_bracket && s.depth > 0 &&
         ((s.bounds >> (s.depth - 1u)) & 1u) != 0;
}

// A `__shared__` variable in a function takes no initializer and is of no type with a constructor
// (NVRTC: "initializer not allowed for __shared__ variable" of `__shared__ int v = 0;`, `__shared__
// bool v {};`, `__shared__ dim3 v;`): after its name no `=` or `{`, no dim3 in its declaration,
// no `__shared__` after const or dim3 (`const int __shared__ v` would need an initializer:
// const_uninitialized leaves a shared one alone; `extern __shared__` is left alone). No token is
// due.
inline bool shared_refuses(const State& s, const TokenInfo& k) {
  if (!in_function(s)) return false;
  if (k.shared) return (s.decl_const || s.decl_constructed) && !s.decl_extern;
  // (A `__shared__` reference: `__shared__ int& r`.)
  const bool typed = s.ctx == ctx_type || s.ctx == ctx_ptr || (s.ctx == ctx_qual && s.run != 0);
  if (k.role == role_ptr && k.cat != Cat::star && typed) return s.decl_shared && !s.decl_extern;
  if (k.constructed && k.role == role_type) return s.decl_shared && !s.decl_extern;
  const bool initializer =
      k.cat == Cat::open_brace || (k.assigns && ((k.follows >> ctx_declared) & 1u) != 0);
  return initializer && s.decl_shared && s.ctx == ctx_declared;
}

// In a cast's parenthesis after its type's `&` (and qualifiers): its operand will be an lvalue.
inline bool in_cast_reference(const State& s) {
  return s.reference && s.depth > 0 && innermost(s) == kCastParen &&
         (s.ctx == ctx_ptr || s.ctx == ctx_qual);
}

// Where a block's declaration is `__shared__` and const, no `*` after its type: no name, which
// would need an initializer that `__shared__` refuses (NVRTC: "const variable \"v\" requires an
// initializer" of `__shared__ const int v;`; a `__shared__` reference, `__shared__ int& r`, is
// refused at its `&` by shared_refuses). `extern __shared__` is left alone; `__shared__ const
// value_t* p` is taken. No name is due there (unnamed_declarator leaves const declarations alone).
inline bool shared_const_unnamed(const State& s) {
  return s.decl_shared && s.decl_const && !s.decl_extern && in_function(s) && !on_line(s) &&
         (s.ctx == ctx_type || s.ctx == ctx_qual);
}

// A `{` about to open that initializes one scalar: a functional cast's to an integer or floating
// type word (`int{`, `value_t{`), a declared variable's of such a type or a pointer's (`int v{`,
// `float* p{`). In it no `,` (State::single_braces; NVRTC: "too many initializer values" of
// `int{M, 1}`, `float f{1.5, 2}`); `dim3 d{1, 2}`, a macro's or an unknown type's brace and a `,`
// inside a group there (`int{(1, 2)}`) are left alone. No token is due: the completion path
// writes none.
inline bool one_value_opens(const State& s) {
  if (s.ctx == ctx_cast_call) return s.last_type == type_integral || s.last_type == type_floating;
  if (s.ctx != ctx_declared) return false;
  const std::uint8_t type = local_type(s, s.last_declared);
  return local_bit(s.pointers, s.last_declared) || type == type_integral || type == type_floating;
}
inline bool one_value_comma(const State& s, const TokenInfo& k) {
  return k.cat == Cat::comma && !on_line(s) && s.depth > 0 &&
         ((s.single_braces >> (s.depth - 1u)) & 1u) != 0;
}

// Tokens the completion path writes first where an operand is due (`<num> 0`), a condition
// (`( <num> 0 )` after if / while), a call's or a functional cast's parentheses (`( )`), a member
// (`. x`).
inline int due_tokens(std::uint8_t ctx) {
  switch (ctx) {
    case ctx_operand_due:
    case ctx_call:
    case ctx_cast_call:
    case ctx_member:
    case ctx_callable:  // ( )
      return 2;
    case ctx_cond:
    case ctx_for:        // ( ; ; )
    case ctx_call_args:  // ( <num> 0 )
    case ctx_deref:      // ( <num> 0 )
    case ctx_address:
    case ctx_subscript_due:  // [ <num> 0 ]
      return 4;
    case ctx_group:  // <num> 0
    case ctx_sizeof:
      return 2;
    case ctx_extern:  // __shared__
      return 1;
    case ctx_cast_kw:  // < int > ( <num> 0 )
      return 3 + kCastOperand;
    default:
      return 0;
  }
}

// The innermost #if's group may end here: the code's brackets as they were where it opened.
inline bool if_closable(const State& s) {
  return s.if_depth == 0 || s.depth == s.if_base[s.if_depth - 1u];
}

// Inside a loop's body: continue and break may stand here.
inline bool in_loop(const State& s) { return s.loop_pending || s.loop_braces != 0; }

// Launched kernels not declared yet: each needs its (empty) declaration before <eos>.
inline std::uint16_t pending_kernel_bits(const State& s) {
  return static_cast<std::uint16_t>(s.launched & ~s.defined);
}

}  // namespace sparserl::env::detail
