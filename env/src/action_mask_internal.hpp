// The syntax mask's machinery, shared by its source files (a private header). The mask is a stack
// of small automata, each a table of rules (Rule) keyed by its own sub-state and the token's
// category: the directive lines (Phase), launch expressions (Expr), numbers in code (Num),
// preprocessor lines (Pp), kernel declarations (Decl), code at file scope (Top) and fields after
// `.` / `->`; beneath them the code-token rules, one row per category (action_mask_code.cpp)
// refined by the type-word rules of the context the code stands in (Ctx). Each rule is written
// once, its judge (may the token come here?) beside its take (how the state moves when it does):
// allows() asks the judges, advance() runs the takes, and ActionMask::Tables derives from the same
// rows what fill() needs - per sub-state the candidate tokens, and per context the mask of code
// tokens that need no look at the state plus the list of those that do.
//
// Files: action_mask_lexicon.cpp (tokens into categories, words and roles; the tables),
// action_mask_directives.cpp (the //@format and //@launch lines, grid='s value ranges),
// action_mask_code.cpp (code tokens: categories, type words, scopes; fill()'s fast path),
// action_mask_lines.cpp (numbers in code, preprocessor lines), action_mask_declaration.cpp (kernel
// declarations), action_mask_file_scope.cpp (what stands at file scope), action_mask_completion.cpp
// (min_completion), action_mask.cpp (the class, fill(), the budget);
// action_mask_context.hpp (the inline questions the rules ask of a State).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "sparserl/env/action_mask.hpp"
#include "sparserl/reward/abi.hpp"

namespace sparserl::env {
namespace detail {

enum class Cat : std::uint8_t {
  pad,
  bos,
  eos,
  num,
  eol,
  macro_open,
  format,
  launch,
  format_name,
  key_c,
  key_sigma,
  key_r,
  key_grid,
  key_block,
  key_smem,
  constant,
  keyword,
  builtin,
  member,
  local,
  literal,
  digit,
  open_paren,
  open_bracket,
  open_brace,
  close_paren,
  close_bracket,
  close_brace,
  semi,
  comma,
  hash,
  access,
  plus,
  minus,
  star,
  slash,
  punct_other,
};
constexpr int kCats = static_cast<int>(Cat::punct_other) + 1;

// Keyword roles on a preprocessor line.
enum PpRole : std::uint8_t {
  pp_none,
  pp_define,
  pp_undef,
  pp_if,
  pp_ifdef,
  pp_ifndef,
  pp_elif,
  pp_else,
  pp_endif,
  pp_pragma,
  pp_unroll,
  pp_nounroll,
};

// Builtin roles in launch expressions.
enum FuncRole : std::uint8_t { fn_none, fn_ceil_div, fn_min, fn_max };

// Words with a role in a kernel declaration (extern "C" __global__ void [__launch_bounds__(..)]
// NAME(params) {): the declaration automaton matches them by role, whatever their category.
enum DeclWord : std::uint8_t {
  w_none,
  w_extern,
  w_linkage,  // the literal "C"
  w_global,
  w_void,
  w_bounds,  // __launch_bounds__
  w_const,
  w_int,
  w_value_t,
  w_restrict,
  w_device,       // __device__
  w_template,     // template
  w_angle_close,  // `>`
};

// The type-word rules. C++ takes a type word only where a declaration, a cast or a template
// argument may start (a statement's start, after `(` `,` a qualifier, or `<` of a *_cast), or as
// a functional cast in an expression (`value_t(0)`); after a type-specifier run comes what a
// declaration or a cast goes on with (more of the run, a qualifier, `*` / `&`, the declared
// name, `)` `>` `(`), and after a declared name what a declarator goes on with (`=` `;` `,` `[`
// `(` `{` `:` `>`). Sampled programs broke each of these (`if (v9 < long long long`, `int = -256;`,
// `value_t* 0`, `value_t v12 + 0;`, `const int v13 ceil_div(`): the rules refuse them. They never
// refuse a token of the completion path (closers, `;`, `#`, <eol>, <eos>), so the budget keeps
// its guarantee, and they apply in code only, outside preprocessor lines and kernel declarations.
//
// The same rules alternate operands and operators (NVRTC's "expected an expression", the
// commonest error of random programs): after an operator an operand is due (ctx_operand_due: no
// operator but a unary one, no closer, `;` or `,`), after an operand no second operand comes
// (ctx_operand), `if` / `while` go on with `(` and an operand (ctx_cond). Where an operand or a
// parenthesis is due the completion path writes one first (`0`, `(0)`), so those contexts refuse
// even its tokens.
enum Role : std::uint8_t {
  role_other,    // `[`, `::`, `?`, return, if, sizeof, ...: an expression goes on
  role_operator, // an operator after which an operand is due: = + - / % == && ! ~ += ? ...
  role_incdec,   // ++ / --: prefix (an operand due) or postfix (an operand ends)
  role_type,     // a type word: int, long, value_t, float4, ...
  role_qual,     // a qualifier or specifier: const, static, __shared__, __restrict__, typedef, ...
  role_ptr,      // `*` or `&`
  role_cast_kw,  // static_cast, reinterpret_cast, const_cast, template: `<` opens types
  role_lt,       // `<`
  role_start,    // ( , ; { } ) : else do - a declaration or a cast may start after it
  role_operand,  // a number, a constant, a member, a literal, warpSize, `]`, true, ...
  role_function, // a builtin function: `(` follows
  role_vector,   // threadIdx, blockIdx, blockDim, gridDim: `.` and a member follow
};
// Where code stands for the type-word rules (State::ctx).
enum Ctx : std::uint8_t {
  ctx_start,        // a type may start a run
  ctx_qual,         // after a qualifier: a type may start or go on with the run
  ctx_type,         // after a type word of a declaration or a cast
  ctx_ptr,          // after `*` / `&` inside a type
  ctx_cast_call,    // after a type word in an expression: a functional cast, `(` or `{` next
  ctx_declared,     // after the name a declaration declares
  ctx_expr,         // inside an expression, before an operand: a type only as a functional cast
  ctx_operand,      // after an operand: no type
  ctx_cast_kw,      // after static_cast & co.
  ctx_operand_due,  // after an operator: an operand must come
  ctx_paren,        // after a condition's, a for statement's, a declarator's `)`: a statement
  ctx_macro,        // after a macro's name: what follows a qualifier or an operand
  ctx_cond,         // after if / while: `(` must come
  ctx_callable,     // after a file-scope name (a device function's): an operand that `(` may call
  ctx_call,         // after a builtin function that may take no argument: `(` must come
  ctx_call_args,    // after a builtin function that takes arguments: `(` and one must come
  ctx_member,       // after threadIdx & co: `.` must come
  ctx_member_dot,   // after threadIdx & co `.`: x, y or z must come
  ctx_cast_type,    // after static_cast & co `<`: a type must come
  // After an operand, by what it is (NVRTC's "expression must be a modifiable lvalue", "operand of
  // * must be a pointer", "expression must have pointer-to-object type"): ctx_operand is a
  // variable that is no pointer; these others -
  ctx_value,          // a value no assignment takes: a number, a constant, a const variable, ...
  ctx_pointer,        // a pointer or array variable: `[` may follow
  ctx_element,        // `]` of a writable element: `[` may follow again
  ctx_const_element,  // `]` of an element of a const pointer: no assignment
  ctx_deref,          // after a unary `*`: a pointer variable or `(` must come
  ctx_address,        // after a unary `&`, prefix ++ / --, a reference cast: a variable or `(`
  ctx_sizeof,         // after sizeof: an operand or `(` and a type
  ctx_result,         // after a group's or a call's `)`: anything that follows an operand but `(`
  ctx_args,           // after a call's `(`: an argument or `)`
  ctx_group,          // after a grouping `(`: an operand, or a cast's type
  ctx_for,            // after for: `(` must come
  ctx_initialized,    // after a declarator's brace initializer `{...}`: `,` or `;` (NVRTC: ";")
  // After `extern` in a function: `__shared__` must come (`extern int v;` there declares a host
  // variable at namespace scope, which NVRTC refuses).
  ctx_extern,
  // After a call's `)` (a builtin's, a device function's, a functional cast's, a cast's operand):
  // what follows ctx_result but an assignment or ++ / -- (NVRTC: "expression must be a modifiable
  // lvalue" of `int(x) = 1`, `min(a, b)++`); `*reinterpret_cast<T*>(p)` stays assignable.
  ctx_call_result,
  // A pointer variable where a value is due (after * / % a comparison or a unary `-`: NVRTC
  // "expression must have arithmetic or unscoped enum type" of `2 * p`, "operand types are
  // incompatible" of `i < p`): its `[` (or `->`) must come; the completion path writes `[ <num> 0
  // ]`.
  ctx_subscript_due,
  kContexts,
};
static_assert(kContexts <= 64, "TokenInfo::follows holds a bit per context");
// Where a preprocessor line's body stands (State::line_ctx): a body is an expression (#if, #elif,
// a macro's: every macro of the corpus is a number or an expression), so operands and operators
// alternate there too - an operand due (at its start, after an operator), after an operand, after
// a name or a builtin function (a call's `(` may follow), or a function-like macro's body to
// start (an operand or, for an empty body, <eol>); on an #if / #elif line, where the preprocessor
// takes no call, assignment, member, subscript or comma, an operand due or after an operand.
enum LineCtx : std::uint8_t {
  line_due,
  line_operand,
  line_callable,
  line_start,
  line_if_due,
  line_if_operand,
  line_defined,        // after `defined`: a name or `(`
  line_defined_paren,  // after `defined (`: a name
  line_defined_close,  // after `defined ( NAME`: `)`
  // After `/` or `%` on an #if line: a divisor that is never 0 - a number not starting with 0, a
  // constant of the format at least 1 on every matrix, a macro (an unknown name there is 0).
  line_if_divisor,
  // After `<<` or `>>` on an #if line: a shift count below 64 - a number of one digit (a constant
  // or macro may be 64 or more on some matrix, a sign makes it negative: NVRTC "shift count is
  // too large", "shift count is negative").
  line_if_shift,
  // After threadIdx & co in a #define's body: what follows an operand, `.` too (line_operand takes
  // no `.`: a number, a constant, true / false or a group is no class where the body is expanded).
  line_vector,
  kLineContexts
};
// The rows of the code-token rules: one per context, then a declaration's __launch_bounds__
// expression (no type-word rules there), then a preprocessor line's body, one per LineCtx.
constexpr int kDeclarationRow = kContexts, kLineRow = kContexts + 1,
              kRows = kContexts + 1 + kLineContexts;

// A type-specifier run: the count of `long` (bits 0-1), then one bit per other part.
constexpr std::uint8_t kRunLong = 1, kRunShort = 4, kRunSign = 8, kRunInt = 16, kRunChar = 32,
                       kRunSingle = 64;

// What a code token needs of the state beyond its row (TokenInfo::checks): nothing (0), refusal,
// or the checks whose bits are set (action_mask_code.cpp).
enum Check : std::uint8_t {
  kCheckFormat = 1,    // a prelude constant of the program's format
  kCheckRun = 2,       // a type word that the type-specifier run under way takes
  kCheckLocal = 4,     // a local: canonical order, in scope, declared where a name may be
  kCheckOpen = 8,      // an opening bracket: below the nesting limit
  kCheckClose = 16,    // a closing bracket: the innermost open one's
  kCheckLineEnd = 32,  // <eol>: the preprocessor line's brackets closed
  kCheckEnd = 64,      // <eos>: the program complete
  kRefused = 128,
};

// A call's arguments whose count the grammar does not know (TokenInfo::max_args).
constexpr std::uint8_t kArgsUnknown = 15;
// State::args packs per open call the `,` its arguments may still take (the low 4 bits; kArgsUnknown:
// any number) and the `,` they still need before its `)` (the high 4 bits).
constexpr std::uint8_t kArgsRoom = 0x0F;
inline std::uint8_t call_room(std::uint8_t args) { return args & kArgsRoom; }
inline std::uint8_t call_need(std::uint8_t args) { return static_cast<std::uint8_t>(args >> 4); }
// The completion path's tokens for a missing argument: `, <num> 0`.
constexpr int kMissingArgument = 3;

struct TokenInfo {
  Cat cat = Cat::punct_other;
  std::uint8_t word = w_none;  // DeclWord
  std::uint8_t param = 0;      // format index, pp role, function role, digit character, format mask
  std::uint8_t width = 0;      // characters in a rendered launch expression (names)
  std::uint8_t least = 0;      // a prelude constant's least value on any matrix (0 or 1)
  bool function_qual = false;  // a qualifier a device function's result may have (const, inline)
  bool file_only = false;      // static, __device__, template: refused inside a function
  bool unmodelled = false;     // a keyword the grammar does not model: refused in code and lines
  bool pp_operator = false;    // `defined`: on an #if line alone (in code an undeclared name)
  bool condition = false;      // if, while: `(` and a condition follow
  bool assigns = false;        // = += -= ... (no operator of a preprocessing expression)
  bool plain_assign = false;   // `=` alone
  bool shared = false;         // __shared__
  bool constructed = false;    // dim3: a type with a constructor (no __shared__ variable of it)
  bool for_loop = false;       // for: `(` and its clauses follow
  bool loop = false;           // while: its condition's `)` opens a loop's body
  bool jump = false;           // continue, break: inside a loop's body alone
  bool is_else = false;        // else: right after an if's statement alone
  // The conditional operator: `?` (1) opens a '?' on the code's stack, `:` (2) closes it.
  std::uint8_t ternary = 0;
  bool divides = false;        // `/`, `%`
  bool shifts = false;         // `<<`, `>>`
  bool shift_assigns = false;  // `<<=`, `>>=`
  // A builtin function's arguments at most (kArgsUnknown: not known; NVRTC: "too many arguments
  // in function call", "no instance of overloaded function" of `sqrt(a, b)`).
  std::uint8_t max_args = kArgsUnknown;
  // Its arguments at least (NVRTC: "too few arguments in function call", "no instance of
  // overloaded function" of `max(a)`, `atomicAdd(p)`): a `)` before the last is refused, and the
  // completion path writes the missing ones (`, <num> 0` each).
  std::uint8_t min_args = 0;
  bool nullary = false;        // a builtin function that may take no argument (__syncthreads)
  bool arrow = false;          // `->` (threadIdx & co take `.` alone)
  bool reinterpret = false;    // reinterpret_cast
  bool value_arguments = false;  // a builtin whose arguments are values (no atomic, load, store)
  // Types (NVRTC checks them; the grammar knows a declared name's type and what a few tokens are):
  // a type word's category (TypeCat); a builtin function overloaded for float and double alone,
  // whose first argument must be floating (NVRTC: "more than one instance of overloaded function"
  // of `ceil(int)`, "no instance" of `round(uint4)`, `pow(bool)`); a token that starts no floating
  // argument there (an integer or vector type, a prelude constant, threadIdx & co, `!`, `&`, a
  // builtin whose result is no floating value, ...); a comparison or logical operator, whose result
  // is bool.
  std::uint8_t type_cat = 0;
  bool floating_overload = false;
  bool starts_no_floating = false;
  bool compares = false;
  // A builtin function of no result (__syncthreads, __threadfence, __stcg, ...): a statement of its
  // own (NVRTC: "expression must have arithmetic or unscoped enum type" of `__syncthreads() * 2`).
  bool void_result = false;
  // Operators of integer operands alone (% << >> & | ^ and their assignments: NVRTC "expression
  // must have integral or unscoped enum type" of `0.5 % 2`), of arithmetic ones (* / and theirs:
  // "arithmetic or unscoped enum type" of `p * 2` with p a pointer); a floating value's start (a
  // floating type word, a builtin of floating result alone: sqrtf, __int2float_rn, ...).
  bool integral_operator = false;
  bool relational = false;  // < > <= >=: no pointer before them
  bool is_return = false;   // return
  bool is_false = false;    // false: no divisor (action_mask_types.cpp)
  bool boolean = false;     // bool: no reinterpret_cast's type (action_mask_types.cpp)
  bool vector_result = false;  // make_*: a CUDA vector's value (action_mask_types.cpp)
  bool equality = false;    // == !=
  bool arithmetic_operator = false;
  bool floating_value = false;
  bool pointer_first =
      false;                 // a builtin whose first parameter is a pointer: loads, stores, atomics
  bool type_prefix = false;  // `!`, `~`, sizeof: the operand they start has their type
  // A declaration's specifier or qualifier (const, static, inline, __device__, ...): its bit in
  // State::specifiers (0: none).
  std::uint16_t specifier = 0;
  int local = -1;              // local index
  int effect = 0;              // effect class (budget check cache)
  // In code: a name may be declared after it (a type word: int, value_t, float4, ...), it keeps
  // that so (const, *, &, __restrict__, __shared__, ...), or it names a tag, namespace or label
  // (struct, enum, goto, ...: a name that scopes do not track). See new_local_allowed.
  enum : std::uint8_t { naming_none, naming_type, naming_keep, naming_tag };
  std::uint8_t naming = naming_none;
  // Its part in the type-word rules: a Role, a type word's part of a type-specifier run (kRun*),
  // and the contexts (bits of Ctx) it may follow in code.
  std::uint8_t role = 0;
  std::uint8_t type_bits = 0;
  std::uint64_t follows = 0;
  // Per row of the code-token rules, what it needs of the state there (Check bits).
  std::array<std::uint8_t, kRows> checks{};
};

// A token that opens a bracket of the code's stack: `(`, `[`, `{` or the conditional operator's
// `?`.
inline bool opens_bracket(const TokenInfo& k) {
  return k.cat == Cat::open_paren || k.cat == Cat::open_bracket || k.cat == Cat::open_brace ||
         k.ternary == 1;
}

enum class Phase : std::uint8_t {
  start,
  format_name,
  format_key,
  format_num_start,
  format_num,
  format_eol,
  launch_start,
  launch_name,
  launch_key,
  expr,
  code,
};
constexpr int kPhases = static_cast<int>(Phase::code) + 1;
enum class Expr : std::uint8_t { operand, after_func, number_start, number, after_operand };
constexpr int kExprStates = static_cast<int>(Expr::after_operand) + 1;
// The values a grid= expression may take over every matrix: an interval whose bounds kNegInf /
// kPosInf stand for unbounded (action_mask_directives.cpp).
struct Range {
  std::int32_t lo = 0, hi = 0;
};
constexpr std::int32_t kNegInf = std::numeric_limits<std::int32_t>::min(),
                       kPosInf = std::numeric_limits<std::int32_t>::max();
// Per open frame of a grid= expression (State::evals): how the operand under way joins the value
// so far - the sum's pending `+` / `-` (bits 0-1: none, plus, minus), the term's state (bits 2-3:
// none, complete, pending `*`, pending `/`) - whether the frame's value is negated when it closes
// (bit 4), and a call's function (bits 5-6: FuncRole; fn_none for a parenthesis).
constexpr std::uint8_t kSumPlus = 1, kSumMinus = 2, kSumMask = 3, kTermDone = 4, kTermMul = 8,
                       kTermDiv = 12, kTermMask = 12, kNegateFrame = 16, kFnShift = 5;
enum class Pp : std::uint8_t {
  none,
  hash,
  define_name,
  after_macro_name,
  macro_param_first,
  macro_param_next,
  macro_param_sep,
  body,
  undef_name,
  ifdef_name,
  if_expr_start,
  eol_only,
  pragma,
  unroll,
  unroll_num_start,
  unroll_num,
};
constexpr int kPpStates = static_cast<int>(Pp::unroll_num) + 1;
enum class Last : std::uint8_t { none, brace_close, semi, pp_eol, access, other, brace_open };
// Where a top-level kernel declaration stands. `external` is a top-level `extern` (it may still be
// `extern __shared__ ...`); from `linkage` on the declaration is committed and runs to its `{`.
enum class Decl : std::uint8_t {
  none,
  external,      // extern
  linkage,       // extern "C"                       -> __global__
  global,        // extern "C" __global__            -> void
  result,        // ... void                         -> __launch_bounds__ | a launched kernel's name
  bounds_open,   // ... __launch_bounds__            -> (
  bounds_first,  // ... __launch_bounds__(           -> an operand
  bounds,        // ... __launch_bounds__(256        -> ... )
  params,        // ... NAME                         -> the format's parameter list, ) {
};
constexpr int kDeclStates = static_cast<int>(Decl::params) + 1;
// Where code stands at file scope (action_mask_file_scope.cpp): between declarations, or in one.
enum class Top : std::uint8_t {
  start,        // between declarations: #, extern (a kernel), __device__, template, ;
  external,     // extern -> "C" (the declaration automaton goes on)
  device,       // __device__ ...: qualifiers, type words, `*` / `&`, the function's name
  named,        // __device__ TYPE NAME -> (
  params_open,  // its parameter list's `(`: `)` or a parameter
  params,       // its parameter list: [const] TYPE [* [const] [__restrict__]] [NAME] , ... )
  header,       // __device__ TYPE NAME(...) -> {
  body,         // a function's body (a kernel's from "C" on), to the `}` back at file scope
  tmpl,         // template -> <
  tmpl_params,  // template <...: type words, names, `,`, then > -> __device__
  tmpl_done,    // template <...> -> __device__
};
constexpr int kTopStates = static_cast<int>(Top::tmpl_done) + 1;
// One token of a kernel's forced parameter list: a category, a word, or (Cat::local) a parameter's
// name: a local not yet named in this declaration (new, or one an earlier kernel's parameter
// used: the tokenizer gives equal names the same local).
struct Forced {
  Cat cat;
  std::uint8_t word = w_none;
};
enum class Num : std::uint8_t {
  off,
  start,
  start_nonzero,  // a divisor on an #if line: no leading 0
  start_shift,    // a shift count on an #if line: one digit
  start_null,     // a static_cast to a pointer's operand: the null pointer constant, `0`
  zero,
  dec,
  dot_start,
  frac,
  exp_start,
  exp_sign,
  exp,
  hex_start,
  hex,
  int_suffix,
  float_suffix,
};
constexpr int kNumStates = static_cast<int>(Num::float_suffix) + 1;

// What a bracket on the code's stack (State::stack) opened: a block `{`, an initializer's brace
// (kInitBrace), `[`, a parenthesis that groups or casts `(`, a call's arguments (kCallParen), a
// declarator's parameters (kParamParen: a function's, `int x(...)`), a for statement's with the
// `;` it has read (kForParen + 0..2).
constexpr std::uint8_t kInitBrace = 'i', kCallParen = 'c', kParamParen = 'p', kForParen = 'f';
// A functional cast's brace (`value_t{...}`, `dim3{...}`): an operand when it closes, where a
// declarator's initializer (kInitBrace, `int v{...}`) ends the declarator.
constexpr std::uint8_t kCastBrace = 'b';
// A subscript of a const pointer or array (its element takes no assignment).
constexpr std::uint8_t kConstSubscript = 'r';
// A group that holds a type: a cast, whose operand follows its `)` (`(int)x`).
constexpr std::uint8_t kCastParen = 'k';
// sizeof's parenthesis (a type in it is no cast); an if's or a while's condition.
constexpr std::uint8_t kSizeofParen = 's', kCondParen = 'q';
// A while's condition (its `)` opens a loop's body, as a for statement's does).
constexpr std::uint8_t kLoopCondParen = 'w';
// A group after a unary `*` / `&` (`*(p + i)`: what it points at is a variable).
constexpr std::uint8_t kDerefParen = 'd';
// A conditional operator's `?` (its `:` closes it; no `)` `]` `;` `,` before).
constexpr std::uint8_t kTernary = '?';
// A cast's `<` (static_cast<...>): `>` closes it, then `(` and its operand are due.
constexpr std::uint8_t kCastAngle = '<';
// Tokens a cast's angle still needs after it closes: ( <num> 0 ).
constexpr int kCastOperand = 4;
// Brackets open at once in code and on a preprocessor line (the State's stacks).
constexpr int kMaxCodeDepth = 48, kMaxPpDepth = 16;
// #if groups open at once (State::if_base).
constexpr int kMaxIfDepth = 16;
// A launch expression's open parentheses and calls, unary minus signs; the largest literal in a
// grid= expression (the design space's largest is 8192), and block= / smem= (literals alone: a
// block of 1..1024 threads, 0..48 KiB of dynamic shared memory, as reward's limits).
constexpr int kMaxExprFrames = 8, kMaxExprUnary = 8;
constexpr std::int64_t kMaxGridLiteral = 65536, kMaxBlockLiteral = 1024,
                       kMaxSmemLiteral = 48 * 1024;
// Characters of a number in code; digits of #pragma unroll's count.
constexpr int kMaxNumberChars = 20, kMaxUnrollDigits = 5;
// The most any token can raise min_completion, but for those that add a declaration to it (a format
// name, a new kernel's launch name): Tables::max_delta adds the longest declaration. The budget
// check runs whenever the slack is below max_delta.
constexpr int kMaxDelta = 16;
// Kernel names are launch names, the first locals: a bit per local below this.
constexpr int kMaxKernelLocal = 16;
// A declaration's names: the kernel's and its parameters' (at most 6 in any format).
constexpr int kMaxDeclNames = 8;
// Locals whose scope is tracked (State::scope); a vocabulary's locals past these are allowed
// wherever a known name is.
constexpr int kScopedLocals = 128;
// The shortest launch line: <launch> v grid= <num> 1 block= <num> 1 <eol>.
constexpr int kLaunchLineTokens = 9;
// Launch expression pieces: `(1, 1)` after a function name, `, 1)` to close a first argument.
constexpr int kFuncFrame0 = 1, kFuncFrame1 = 2, kGroupFrame = 0;
// Where a local's name stands (State::scope; see known_local_allowed): kScopeDead (not in scope),
// kScopeMacro / kScopeTag (anywhere), or a block level (block_scope; kScopeSoft: bound to the block
// that follows the parentheses that declared it).
constexpr std::uint8_t kScopeDead = 0, kScopeSoft = 0x80, kScopeTag = 0xFE, kScopeMacro = 0xFF;
// State::declarator: where a new local may stand (see new_local_allowed).
constexpr std::uint8_t kNameDeclarator = 1, kTypeDeclarator = 2, kTagDeclarator = 3;

// Sets of sub-states (bits of an automaton's state enum) and of categories, for the rule tables.
using CatSet = std::uint64_t;
template <class... C>
constexpr CatSet cats(C... c) {
  return ((CatSet{1} << static_cast<unsigned>(c)) | ...);
}
constexpr CatSet kAnyCat = ~CatSet{0};
template <class... S>
constexpr std::uint32_t on(S... s) {
  return ((std::uint32_t{1} << static_cast<unsigned>(s)) | ...);
}

}  // namespace detail

struct ActionMask::State {
  detail::Phase phase = detail::Phase::start;
  std::uint8_t format = 0;
  std::uint8_t key = 0;  // format key index
  std::uint8_t launches = 0;
  std::uint8_t digits = 0;  // digits of the directive number or expression literal
  std::int64_t value = 0;   // format directive number
  // launch expression
  detail::Expr es = detail::Expr::operand;
  std::uint8_t which = 0;  // 0 grid, 1 block, 2 smem
  std::array<std::uint8_t, detail::kMaxExprFrames> frames{};
  std::uint8_t nframes = 0, unary = 0;
  std::uint16_t chars = 0;
  // grid='s possible values: per frame (0 the expression, i + 1 the i-th open parenthesis or call)
  // the sum and the term so far, a call's first argument, and how they join (kSum* / kTerm*); a
  // unary minus pending on the operand under way, the function named before its `(`, and whether
  // the expression may divide by zero (a state never taken: the token that does it is refused).
  std::array<detail::Range, detail::kMaxExprFrames + 1> sums{}, terms{}, firsts{};
  std::array<std::uint8_t, detail::kMaxExprFrames + 1> evals{};
  bool negate = false, divides_by_zero = false;
  std::uint8_t function = 0;
  // code
  std::array<std::uint8_t, detail::kMaxCodeDepth> stack{};
  // Per code stack index, the `,` a call's arguments may still take and still need (call_room,
  // call_need); the builtin just named's TokenInfo::max_args and min_args.
  std::array<std::uint8_t, detail::kMaxCodeDepth> args{};
  std::uint8_t callee_max = 0;
  std::uint8_t callee_least = 0;
  std::uint8_t depth = 0;
  std::array<std::uint8_t, detail::kMaxPpDepth> pp_stack{};
  std::uint8_t pp_depth = 0;
  detail::Pp pp = detail::Pp::none;
  std::uint8_t if_depth = 0;
  detail::Last last = detail::Last::none;
  detail::Num num = detail::Num::off;
  std::uint8_t num_len = 0;
  bool num_u = false;
  std::uint8_t num_l = 0;
  char num_lcase = 0;
  std::uint16_t locals_used = 0;
  // kernel declarations
  detail::Decl decl = detail::Decl::none;
  detail::Top top = detail::Top::start;  // where code stands at file scope
  std::uint8_t decl_pos = 0;             // next token of the forced parameter list
  std::array<std::uint8_t, detail::kMaxDeclNames> decl_names{};  // the kernel's, its parameters'
  std::uint8_t decl_named = 0;
  bool bounds_used = false;
  std::uint8_t bounds_commas = 0;  // `,` between __launch_bounds__'s arguments so far
  std::uint16_t launched = 0, defined = 0;  // kernel names (bits of locals) launched / declared
  // Where a new local may appear in code: after a type (kTypeDeclarator, kept through declarator
  // prefixes), right after a local (kNameDeclarator: a user type or a macro naming one), or after
  // `,` in a declaration list opened at list_depth.
  std::uint8_t declarator = 0;
  std::int8_t list_depth = -1;
  // Scopes (see known_local_allowed): per local, where its name stands now - kScopeDead (not in
  // scope: unseen, a launched kernel not yet declared, a block's name after the block, a macro's
  // parameter), kScopeMacro / kScopeTag (a macro, a tag: anywhere), or the block level it was
  // declared at (block_scope; kScopeSoft for a name declared inside parentheses - a for
  // statement's or a function's - bound to the block that follows them).
  std::array<std::uint8_t, detail::kScopedLocals> scope{};
  std::uint8_t braces = 0;      // `{` open in code
  detail::Last line_last = detail::Last::none;  // State::last before a preprocessor line
  // Per scoped local (a bit each): declared a pointer or an array; declared const (a variable's
  // value, a pointer's elements). A declaration's specifiers so far have had `const`; the local
  // it last declared.
  std::array<std::uint8_t, detail::kScopedLocals / 8> pointers{}, consts{};
  // Per scoped local (a bit each): a function-like macro (#defined with a parameter list; code
  // names none: see local_allowed); the macro a #define line names.
  std::array<std::uint8_t, detail::kScopedLocals / 8> function_macros{};
  std::uint8_t macro_local = 0;
  bool decl_const = false;
  // Per scoped local (a bit each): a template parameter of the file-scope declaration under way
  // (NVRTC: "template parameter may not be redeclared in this scope" - in the template's list,
  // as the function's name, its parameters or a name in its body).
  std::array<std::uint8_t, detail::kScopedLocals / 8> template_names{};
  std::uint8_t last_declared = 0;
  bool operand_const = false;  // the variable just named was declared const
  bool deref_cast = false;     // a cast after a unary `*`: its operand's `(` is a kDerefParen
  bool reinterpret_angle = false;  // the last cast keyword was reinterpret_cast (its `<` ... `>`)
  std::int8_t soft_depth = -1;  // bracket depth of the parenthesis that declared soft names
  bool soft_closed = false;     // ... which has just closed
  // The type-word rules: where code stands, and the type-specifier run under way.
  std::uint8_t ctx = detail::ctx_start;
  std::uint8_t run = 0;
  std::uint8_t line_ctx = detail::line_due;  // a preprocessor line's body (LineCtx)
  // Loops (continue / break only in a loop's body: NVRTC's "may only be used within a loop"): per
  // code stack index, a bit for a block that is a loop's body (or stands in one); a for's or a
  // while's `)` just closed, whose body's statement is under way (to its `{` or its `;`).
  std::uint64_t loop_braces = 0;
  std::uint64_t else_seen = 0;  // per open #if (bit if_depth - 1): its #else has appeared
  // Per open #if, the code's bracket depth where it opened: the preprocessor keeps one branch,
  // so each keeps the brackets as they were (NVRTC: `expected a ")"` after an #endif whose
  // dropped branch held the `)`); #else, #elif and #endif only at that depth, no closer below it.
  std::array<std::uint8_t, detail::kMaxIfDepth> if_base{};
  bool loop_pending = false;
  // An if's statement (NVRTC: "expected a statement" of an `else` after anything else): per code
  // stack index, a bit for a block that is an if's body; an if's `)` just closed, whose statement
  // is under way (to its `{` or its `;`); the code token before ended an if's statement.
  std::uint64_t if_braces = 0;
  bool if_pending = false;
  bool else_ok = false;
  bool while_cond = false;  // the ctx_cond under way is a while's
  // Types: per scoped local its category (TypeCat, two bits each; a pointer's or an array's is
  // its elements'), the category of the declaration's type words under way; a builtin overloaded
  // for floating arguments alone was just named (its `(` comes next); its first argument starts
  // here (after its `(` and unary `-` / `+` / `*` / ++ / --); per code stack index, such a call's
  // parenthesis in its first argument.
  std::array<std::uint8_t, detail::kScopedLocals / 4> local_types{};
  std::uint8_t decl_type = 0;
  bool floating_call = false;
  bool floating_due = false;
  std::uint64_t floating_args = 0;
  // The specifiers and qualifiers of the declaration under way, or of the pointer level after its
  // last `*` / `&` (TokenInfo::specifier bits; NVRTC: "duplicate specifier in declaration" of
  // `const const`, "more than one storage class" of `static static`).
  std::uint16_t specifiers = 0;
  // A builtin of no result was just named (its `(` comes next); the code stack index of its call's
  // parenthesis (-1: none), after whose `)` only `,` or `;` may come.
  bool void_named = false;
  std::int8_t void_call = -1;
  // The type's last `*` / `&` was a `&` (NVRTC: "reference to reference is not allowed" of
  // `int& &`, "pointer to reference is not allowed" of `int& *`).
  bool reference = false;
  bool starred = false;  // a `*` in the declarator under way (`int*& p` declares a pointer)
  // What the operand just read is (Operand; a number's when it ends); per code stack index, a
  // bracket whose `)` / `]` / `}` ends a floating value (a floating pointer's subscript, a floating
  // functional cast or builtin's call); per depth, the operand under way there has a prefix that
  // makes its type (a cast, `!`, `~`, sizeof); a floating value was just named (its `(` next); an
  // integer operand is due (after % << ... or `~`), and the number under way must be one.
  std::uint8_t operand_kind = 0;
  std::uint64_t floating_closers = 0;
  // Per code stack index, a builtin's or a functional cast's call, whose value is no pointer; a
  // builtin was just named; the `)` just read closed such a call (no `[` after it: NVRTC
  // "expression must have pointer-to-object type" of `value_t()[0]`, `__popc(x)[1]`).
  std::uint64_t value_calls = 0;
  bool builtin_named = false;
  bool value_result = false;
  std::uint64_t prefixed = 0;
  // Per depth, the prefix of the operand under way is a cast to a floating type, to a pointer
  // (NVRTC: "integral or unscoped enum type" of `(double)i % 2`); the last type word's TypeCat.
  std::uint64_t floating_casts = 0, pointer_casts = 0;
  std::uint8_t last_type = 0;
  bool floating_named = false;
  bool integral_due = false;
  bool value_due = false;  // the operand due is a value: a pointer variable there is subscripted
  // The operand right after a cast to a pointer's `)`: no floating value (NVRTC: "invalid type
  // conversion" of `(int*)f`, `(value_t*)1.5`, `(int*)sqrtf(x)`); a cast to a floating type sets
  // value_due (no pointer: `(float)p`).
  bool pointer_cast_due = false;
  // The operand after a binary `+` / `-` right after a pointer (`p + `, `p++ - `; through a unary
  // sign): no floating value either, as after a pointer cast (NVRTC: "expression must have
  // integral or unscoped enum type" of `p + 1.5`, `p - x` with x a float). Not integral_due: a
  // pointer may follow (`p - q`).
  bool offset_due = false;
  // Per code stack index, a declarator's `[` (an array's bound): no variable in it but a const one
  // (NVRTC: "expression must have a constant value" of `int a[i];`, `__shared__ float s[n + 1];`).
  std::uint64_t bounds = 0;
  // Per depth, an assignment was read in the expression under way there (`(i = 1)` is an lvalue);
  // a binary operator was (`(x + 1)` may be a pointer whatever its last operand); a binary `+` or
  // `-` was (`x + M - p`: the left operand of `-` is no longer its last).
  std::uint64_t assigned = 0, combined = 0, additive = 0;
  // Per depth, the operand since the last assignment, `,`, `?` or `:` there is no lvalue: a binary
  // operator was read, or its first prefix was `-` `+` `!` `~` `&` sizeof or a cast to no
  // reference; its first prefix was `*`, `++` or `--` (`*-p` stays an lvalue). An assignment after
  // it is refused, and a group's `)` of it takes none (NVRTC: "expression must be a modifiable
  // lvalue" of `-i = 1`, `i + j = 2`, `sizeof(x) &= 1`, `(-i) = 1`).
  std::uint64_t rvalued = 0, lvalue_led = 0;
  // Per code stack index, a group whose value must be an lvalue: after a unary `&`, a prefix ++ /
  // --, a reference cast (see lvalue_group_refuses).
  std::uint64_t lvalue_groups = 0;
  // Per code stack index, a parenthesis opened right where an integer operand or a floating
  // overload's first argument was due (`i % (`, `sqrt(-(`): a cast there is to no pointer (NVRTC:
  // "integral or unscoped enum type" of `i % (int*)p`, "no instance of overloaded function" of
  // `ceil((int*)p)`).
  std::uint64_t value_parens = 0;
  // Per code stack index, a brace that initializes one scalar (see one_value_comma).
  std::uint64_t single_braces = 0;
  // The function under way returns void (a kernel, a `__device__ void` one); its `return` was just
  // read: `;` alone follows (NVRTC: "return value type does not match the function type").
  bool void_function = false;
  bool void_return = false;
  bool void_type = false;  // the last type word was void (no variable of it: "incomplete type")
  // The declaration under way (its type word at a statement, in a for's or parameters'
  // parenthesis) is of void: its list takes no `,` (see closes_innermost). Kept through its
  // initializers' brackets; it goes when the list ends (list_depth).
  bool decl_void = false;
  bool num_integral = false;
  // The number under way starts a floating overload's first argument (State::floating_due): it
  // must be floating - a fraction, an exponent (NVRTC: "more than one instance of overloaded
  // function" of `ceil(2)`, `pow(1, x)`; the completion path writes `0.`).
  bool num_floating = false;
  // The code token before was a declarator's `[` (see bound_due); the declarator under way has
  // closed a bound's brackets already (its next `[` is no first dimension); the declaration under
  // way has had `extern`.
  bool bound_opened = false;
  bool bound_taken = false;
  bool decl_extern = false;
  // The declaration under way has had `__shared__`, a type word with a constructor (dim3).
  bool decl_shared = false;
  bool decl_constructed = false;
  // The operand just read is a scalar: an integer or floating variable, what a unary `*` of a
  // pointer names (`*p.x` is `*(p.x)`), a floating pointer's element. No `.` or `->` after it
  // (NVRTC: "expression must have class type" of `i.x`, "pointer-to-class type" of `x->y`).
  bool no_member = false;
  // The operand just read is a variable of a CUDA vector type (dim3, float4, ...; no pointer, no
  // array): no operator but `=` after it, no `->` (NVRTC: "no operator \">\" matches these operands"
  // of `d > warpSize` with d a dim3).
  bool vector_operand = false;
  // The operand types of action_mask_types.cpp. Per depth: the additive expression read there so
  // far is a pointer (`p - 1`, `i + p`: no `<` after it); the operand under way is a unary `&`'s,
  // a prefix ++ / --'s or a reference cast's (no postfix ++ / -- after it). Per code stack index:
  // a builtin's call whose arguments are values (abs, min, __popc, ...: no pointer). A builtin
  // of such arguments was just named (its `(` next).
  std::uint64_t pointer_sums = 0, address_led = 0, value_args = 0;
  bool value_named = false;
  bool static_pointer = false;  // a static_cast to a pointer's `>` or `(` was just read
  // A block's pointer declarator's `=` or `{`, or `==` / `!=` after a pointer operand, was just
  // read (see pointer_init_refuses); a builtin whose first parameter is a pointer was just named
  // or a reinterpret_cast to a pointer's `>` read (its `(` next), that `(` was just read; a group's
  // `(` was just read where one of the three (or another such group) starts a pointer.
  bool pointer_init = false, pointer_named = false, pointer_arg = false, pointer_group = false;
  // Per code stack index: the bracket holds a pointer's value - a load's, a store's or an
  // atomic's `(` until its first `,`, a group opened where a pointer starts (see
  // pointer_value_refuses).
  std::uint64_t pointer_values = 0;
  // A cast keyword's angle that ends in `&` was just closed: its `(` opens an lvalue's group, as
  // after a C cast to a reference (ctx_address).
  bool reference_cast = false;
  // A divisor is due (after a binary `/` or `%`, a sign or `(` after it); per code stack index, a
  // group opened where one was.
  bool divisor_due = false;
  std::uint64_t divisor_groups = 0;
  std::uint64_t static_parens = 0;  // per code stack index: a static_cast to a pointer's `(`
  // Per depth: the operand under way has a prefix ++ / --; it is a shift's count (after `<<` /
  // `>>` / `<<=` / `>>=`, until an operator of lower precedence than `+`). See type_refuses.
  std::uint64_t incdec_led = 0, shift_counts = 0;
  // Per depth: the last assignment there assigned a pointer (`(p += x)` is p: see take_type_step).
  std::uint64_t pointer_assigned = 0;
  // Per depth: the sum or product read there so far has a floating operand (see type_refuses).
  std::uint64_t floating_sums = 0;
  // Per depth: a comparison, a logical, shift or bitwise operator was read in the value under way
  // there (a group over it is no pointer: see begin_type_step).
  std::uint64_t valued = 0;
  // Per depth: the operand under way there is an integer operator's right one (after << >> & | ^
  // through + - * /, or in a group opened where an integer was due): each of its terms is an
  // integer (State::integral_due; see take_operand_step).
  std::uint64_t integral_chains = 0;
  std::int32_t tokens = 0;
  bool done = false;  // <eos> consumed
};

namespace detail {

using Tables = ActionMask::Tables;
using State = ActionMask::State;

// A rule's verdict on a token: refused, allowed, or passed to the rules beneath (a preprocessor
// line's body to the code-token rules, a number's end to the line's rules, ...).
enum class Verdict : std::uint8_t { refuse, allow, pass };
using Judge = Verdict (*)(const Tables&, const State&, const TokenInfo&);
using Take = void (*)(const Tables&, State&, const TokenInfo&);

// One rule of an automaton: at the sub-states `at` (bits), a token of a category in `cats` is
// judged by `judge` and, when taken, moves the state by `take`. Where several rules match, the
// first in the table holds; where none does, the token is refused.
struct Rule {
  std::uint32_t at;
  CatSet cats;
  Judge judge;
  Take take;
};

Verdict allow(const Tables&, const State&, const TokenInfo&);
Verdict pass(const Tables&, const State&, const TokenInfo&);
inline Verdict allow_if(bool allowed) { return allowed ? Verdict::allow : Verdict::refuse; }

// An automaton's rules indexed by (sub-state, category), with what fill() derives from them: per
// sub-state the tokens some rule may allow, and whether every token passes to the rules beneath.
class RuleIndex {
 public:
  RuleIndex() = default;
  RuleIndex(std::span<const Rule> rules, int states, const std::vector<TokenInfo>& info);
  [[nodiscard]] const Rule* find(int at, Cat cat) const {
    return rules_[static_cast<std::size_t>(at * kCats + static_cast<int>(cat))];
  }
  [[nodiscard]] std::span<const TokenId> candidates(int at) const {
    return candidates_[static_cast<std::size_t>(at)];
  }
  [[nodiscard]] bool passes_all(int at) const { return passes_all_[static_cast<std::size_t>(at)]; }
  // The verdict on a token at `at` (refused where no rule matches).
  [[nodiscard]] Verdict judge(int at, const Tables& t, const State& s, const TokenInfo& k) const {
    const Rule* rule = find(at, k.cat);
    return rule != nullptr ? rule->judge(t, s, k) : Verdict::refuse;
  }
  // Takes a token that judge() allowed or passed.
  void take(int at, const Tables& t, State& s, const TokenInfo& k) const {
    find(at, k.cat)->take(t, s, k);
  }

 private:
  std::vector<const Rule*> rules_;
  std::vector<std::vector<TokenId>> candidates_;
  std::vector<bool> passes_all_;
};

// The automata's rule tables.
std::span<const Rule> directive_rules();    // by Phase (the //@format and //@launch lines)
std::span<const Rule> expression_rules();   // by Expr
std::span<const Rule> number_rules();       // by Num
std::span<const Rule> line_rules();         // by Pp
std::span<const Rule> declaration_rules();  // by Decl
std::span<const Rule> field_rules();        // one sub-state: after `.` / `->`
std::span<const Rule> file_rules();         // by Top (code at file scope)
// The tokens that finish the file-scope declaration under way, or -1 (action_mask_file_scope.cpp).
int file_close(const State& s);

// The code-token rules' Check bits for a token in a row (action_mask_code.cpp), and a preprocessor
// line body's part of them (action_mask_lines.cpp).
std::uint8_t code_checks(const TokenInfo& k, int row);
std::uint8_t line_role_checks(const TokenInfo& k, int line_ctx);

// The automaton as a whole: may the token come next (the budget aside), and taking it.
bool token_allowed(const Tables& t, const State& s, const TokenInfo& k);
void take_token(const Tables& t, State& s, const TokenInfo& k);
// The layers beneath the directive lines, from a number under way down to a code word.
bool code_allowed(const Tables& t, const State& s, const TokenInfo& k);
void take_code(const Tables& t, State& s, const TokenInfo& k);
bool line_allowed(const Tables& t, const State& s, const TokenInfo& k);
void take_line_token(const Tables& t, State& s, const TokenInfo& k);
bool code_word_allowed(const Tables& t, const State& s, const TokenInfo& k);
void take_code_token(const Tables& t, State& s, const TokenInfo& k);
void take_code_word(State& s, const TokenInfo& k);
// fill() where every token passes to the code-token rules: their row's mask and checks.
void fill_code_tokens(const Tables& t, const State& s, std::span<std::uint8_t> mask);
// The operand rules (action_mask_operands.cpp): after an operand (a binary operator, a postfix
// ++ / --, ... may follow); the checks of an operand's type; a code token's step of them, read
// before the state moves (begin_operand_step, which marks a floating group) and taken after it.
bool after_operand(std::uint8_t ctx);
bool floating_allowed(const State& s, const TokenInfo& k);
std::uint8_t operand_type(const State& s);
bool operator_allowed(const State& s, const TokenInfo& k);
bool makes_value_due(const State& s, const TokenInfo& k, bool binary, bool prefix_sign);
bool floating_value_allowed(const State& s, const TokenInfo& k);
struct OperandStep {
  bool floating_open = false, floating_unary = false, floating_number = false;
  bool pointer_open = false;  // a load's, a store's or an atomic's `(`, a pointer reinterpret's
  bool reinterpret_pointer = false;  // the `>` of a reinterpret_cast to a pointer (its `(` next)
  bool pointer_group_open = false;  // State::pointer_group's `(`
  bool floating_comma = false, void_open = false, void_close = false;
  bool operand_before = false, unary_sign = false, binary = false, prefix = false;
  bool integral_next = false, value_next = false, opens_floating = false, cast_ends = false;
  bool pointer_cast = false, floating_cast = false, to_pointer = false, to_floating = false;
  bool to_integral = false;
  bool pointer_offset = false, pointer_compared = false;  // a pointer's + / -, its == / !=
  bool call_open = false, call_comma = false, value_call = false, deref = false;
  bool rvalue_group = false;  // a group's `)` whose value is no lvalue
  bool floating_deref = false;  // a `*(` group's `)` over a floating pointer: a floating value
  bool lvalue_prefix = false, rvalue_prefix = false;  // see State::rvalued
  bool value_group = false;   // ... nor a pointer
  bool in_bound = false;      // in_array_bound() before the token
  bool value_open = false;    // a `(` where an integer or a floating argument is due
  bool variable = false;      // a local named as a variable (not declared, not a macro)
  // action_mask_types.cpp's: the operand read before is a pointer (operand_type); the additive
  // expression at its depth is one after it; a token where ctx_address stood; a value builtin's
  // `(`; a `{` that initializes one value that is no pointer; a static_cast to a pointer's `>` or
  // the `(` after it.
  bool pointer_before = false, pointer_sum = false, address = false, value_args_open = false;
  bool static_start = false;     // static_pointer_start() before the token
  bool floating_before = false;  // the operand read before is floating (operand_type)
  bool value_brace = false, static_pointer = false;
  std::uint8_t group_kind = 0;  // a group's `)` over one pointer operand: its Operand kind
  std::uint8_t kind_before = 0, call_args = 0;
};
OperandStep begin_operand_step(State& s, const TokenInfo& k, bool declares, bool macro);
void take_operand_step(State& s, const TokenInfo& k, const OperandStep& o);

bool expression_allowed(const Tables& t, const State& s, const TokenInfo& k);
int completion(const Tables& t, const State& s);
// The shortest close of a launch expression from here: an operand where one is due, a called
// function's arguments `(M, M)`, then per open frame `, M)` after a call's first argument or `)`;
// in tokens (min_completion) and in the characters decode() renders (the length limit).
struct ExprClose {
  int tokens = 0;
  int chars = 0;
};
ExprClose expr_close(const State& s);
bool num_accepting(Num n);
// The number under way may end here (a floating one where State::num_floating), and the digits
// the completion path writes before it does.
bool number_complete(const State& s);
int number_close(const State& s);
bool new_local_allowed(const State& s);
bool in_array_bound(const State& s);
bool unnamed_declarator(const Tables& t, const State& s);
bool misplaced_declaration(const State& s, const TokenInfo& k);
bool block_reference(const State& s, const TokenInfo& k);
bool in_declarator_list(const State& s, std::uint8_t closed = 0);
bool vector_cast(const State& s, const TokenInfo& k);
bool list_declarator_refuses(const Tables& t, const State& s, const TokenInfo& k);
bool vector_operand_refuses(const State& s, const TokenInfo& k);
bool reinterpret_to_value(const State& s);
bool reinterpret_type_refused(const State& s, const TokenInfo& k);
bool vector_value_refused(const State& s, const TokenInfo& k);
bool pointer_init_refuses(const State& s, const TokenInfo& k);
// Where a pointer starts: a block pointer's initializer, a load's / store's / atomic's first
// argument, a group opened at either (State::pointer_init, pointer_arg, pointer_group).
inline bool pointer_starts(const State& s) {
  return s.pointer_init || s.pointer_arg || s.pointer_group;
}
// After an operand directly in a bracket that holds a pointer's value (State::pointer_values).
bool in_pointer_value(const State& s);
bool in_pointer_cast(const State& s);  // a C cast's type where a pointer starts, before its `*`
bool pointer_value_refuses(const State& s, const TokenInfo& k);
void refuse_cast_values(const Tables& t, const State& s, std::span<std::uint8_t> mask);
bool void_return_refuses(const State& s, const TokenInfo& k);
bool value_result_after(const State& s);
bool callable_refuses(const State& s, const TokenInfo& k);
bool lone_floating_argument(const State& s);
bool pointer_argument(const State& s);
bool pointer_cast_refused(const State& s, const TokenInfo& k);
bool rvalue_assignment(const State& s, const TokenInfo& k);
bool lvalue_group_refuses(const State& s, const TokenInfo& k);
// The operand-type rules of action_mask_types.cpp: the tokens they refuse (one by one, and in a
// mask fill() made), whether any may be refused in a state, and their step of a code token
// (from begin_operand_step / take_operand_step).
bool type_refuses(const Tables& t, const State& s, const TokenInfo& k);
bool lvalue_variable_due(const Tables& t, const State& s);
bool type_rules_apply(const State& s);
void refuse_ill_typed(const Tables& t, const State& s, std::span<std::uint8_t> mask);
void begin_type_step(const State& s, const TokenInfo& k, OperandStep& o);
void take_type_step(State& s, const TokenInfo& k, const OperandStep& o);
// Scopes and declarators (action_mask_scopes.cpp): a known local where it is used or declared; a
// block closing; the scopes and the declarator state after a plain code token.
bool known_local_allowed(const State& s, int local);
void close_block(State& s);
void advance_scopes(State& s, const TokenInfo& k);
void advance_declarator(State& s, const TokenInfo& k);

}  // namespace detail

struct ActionMask::Tables {
  std::vector<detail::TokenInfo> info;
  // Per row of the code-token rules: 1 for the tokens allowed there whatever the state, and the
  // tokens but locals whose checks the state decides; locals in canonical order (local_ids).
  std::array<std::vector<std::uint8_t>, detail::kRows> unchecked;
  std::array<std::vector<TokenId>, detail::kRows> checked;
  std::vector<TokenId> local_ids;
  std::vector<TokenId> file_only_ids;  // TokenInfo::file_only
  std::vector<TokenId> jump_ids;       // TokenInfo::jump
  std::vector<TokenId> else_ids;       // TokenInfo::is_else
  std::vector<TokenId> no_floating_ids;     // TokenInfo::starts_no_floating
  std::vector<TokenId> compare_ids;         // TokenInfo::compares
  std::vector<TokenId> specifier_ids;       // TokenInfo::specifier
  std::vector<TokenId> pointer_ids;         // `*`, `&`
  std::vector<TokenId> operator_ids;        // TokenInfo::integral_operator, arithmetic_operator
  std::vector<TokenId> floating_value_ids;  // TokenInfo::floating_value
  std::vector<TokenId> builtin_ids;         // Cat::builtin: functions, threadIdx & co, warpSize
  std::vector<TokenId> type_ids;            // role_type, role_qual
  std::vector<TokenId> arrow_ids;           // `->`
  std::vector<TokenId> assign_ids;          // TokenInfo::assigns, an operator
  std::vector<TokenId> access_ids;          // `.`, `->`
  detail::RuleIndex directives, expressions, numbers, lines, declarations, fields, files;
  TokenId eos = -1;
  int effects = 0;
  int locals = 0;
  // Per format: a launched kernel's declaration after its name, `(` to `{`, as the ABI's signature
  // spells it (agents/kernels' kernel_head): `const int* __restrict__ NAME`, ... Op-independent:
  // SpMV and SpMM share every format's argument kinds (checked when the tables are built).
  std::array<std::vector<detail::Forced>, 5> kernel_params;
  // Per format: tokens of a whole empty kernel, `extern "C" __global__ void NAME` + the parameter
  // list + `}`: what each launched but undeclared kernel adds to min_completion.
  std::array<int, 5> declaration_tokens{};
  int max_delta = detail::kMaxDelta;

  explicit Tables(const Vocabulary& v);
};

}  // namespace sparserl::env

// The inline questions the rules ask of a State (where the code stands, what a local is).
#include "action_mask_context.hpp"  // IWYU pragma: export
