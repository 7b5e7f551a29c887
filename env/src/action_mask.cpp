// The syntax automaton. Tokens are sorted once into categories (Tables); the State is a small
// fixed-size value so that the budget check can try a token on a copy. fill() is the hot path: in
// plain code it copies a precomputed mask and patches the few context-dependent entries (locals,
// the matching closer, <eol>, <eos>); the budget check runs only near max_tokens, and tries one
// token per effect class (tokens that change the state the same way, such as all builtins).
//
// min_completion() is a count along one fixed completion path (close the number, finish the
// preprocessor line, close brackets inside out, `;` if needed, #endif lines, <eos>); each step of
// that path lowers it by exactly one, which is what guarantees that the budget never strands an
// episode.
#include "sparserl/env/action_mask.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include "sparserl/reward/abi.hpp"
#include "sparserl/reward/launch_expr.hpp"
#include "sparserl/reward/program.hpp"

namespace sparserl::env {
namespace {

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
};

struct TokenInfo {
  Cat cat = Cat::punct_other;
  std::uint8_t word = w_none;  // DeclWord
  std::uint8_t param = 0;  // format index, pp role, function role, digit character, format mask
  std::uint8_t width = 0;  // characters in a rendered launch expression (names)
  int local = -1;          // local index
  int effect = 0;          // effect class (budget check cache)
  // In code: a name may be declared after it (a type word: int, value_t, float4, ...), it keeps
  // that so (const, *, &, __restrict__, __shared__, ...), or it names a tag, namespace or label
  // (struct, enum, goto, ...: a name that scopes do not track). See new_local_allowed.
  enum : std::uint8_t { naming_none, naming_type, naming_keep, naming_tag };
  std::uint8_t naming = naming_none;
  // Its part in the type-word rules (see role_allows): a Role, a type word's part of a
  // type-specifier run (kRun*), and the contexts (bits of Ctx) it may follow in code.
  std::uint8_t role = 0;
  std::uint8_t type_bits = 0;
  std::uint16_t follows = 0;
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
enum Role : std::uint8_t {
  role_other,    // an operator, `=`, `[`, `?`, return, if, sizeof, ...: an expression goes on
  role_type,     // a type word: int, long, value_t, float4, ...
  role_qual,     // a qualifier or specifier: const, static, __shared__, __restrict__, typedef, ...
  role_ptr,      // `*` or `&`
  role_cast_kw,  // static_cast, reinterpret_cast, const_cast, template: `<` opens types
  role_lt,       // `<`
  role_start,    // ( , ; { } ) : else do - a declaration or a cast may start after it
  role_operand,  // a number, a constant, a member, a literal, a builtin, `]`, ++, --, true, ...
};
// Where code stands for the type-word rules (State::ctx).
enum Ctx : std::uint8_t {
  ctx_start,      // a type may start a run
  ctx_qual,       // after a qualifier: a type may start or go on with the run
  ctx_type,       // after a type word of a declaration or a cast
  ctx_ptr,        // after `*` / `&` inside a type
  ctx_cast_call,  // after a type word in an expression: a functional cast, `(` or `{` next
  ctx_declared,   // after the name a declaration declares
  ctx_expr,       // inside an expression, before an operand: a type only as a functional cast
  ctx_operand,    // after an operand: no type
  ctx_cast_kw,    // after static_cast & co.
  kContexts,
};
// A type-specifier run: the count of `long` (bits 0-1), then one bit per other part.
constexpr std::uint8_t kRunLong = 1, kRunShort = 4, kRunSign = 8, kRunInt = 16, kRunChar = 32,
                       kRunSingle = 64;

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

// Each token's role, type part and follow set (TokenInfo). Call after categories and naming.
void assign_roles(const Vocabulary& v, std::vector<TokenInfo>& info) {
  constexpr std::uint16_t kFree = (1u << ctx_start) | (1u << ctx_qual) | (1u << ctx_expr) |
                                  (1u << ctx_operand) | (1u << ctx_cast_kw);
  constexpr std::uint16_t kType = 1u << ctx_type, kPtr = 1u << ctx_ptr,
                          kCall = 1u << ctx_cast_call, kDeclared = 1u << ctx_declared;
  constexpr std::uint16_t kAlways = kFree | kType | kPtr | kCall | kDeclared;
  for (std::size_t i = 0; i < info.size(); ++i) {
    const TokenSpec& spec = v.token(static_cast<TokenId>(i));
    const std::string& w = spec.text;
    TokenInfo& k = info[i];
    const bool word = spec.cls == TokenClass::keyword || spec.cls == TokenClass::builtin ||
                      spec.cls == TokenClass::constant;
    k.follows = kFree;
    if (word && k.naming == TokenInfo::naming_type && w != "typedef") {
      k.role = role_type;
      k.type_bits = w == "long"                      ? kRunLong
                    : w == "short"                   ? kRunShort
                    : w == "signed" || w == "unsigned" ? kRunSign
                    : w == "int"                     ? kRunInt
                    : w == "char"                    ? kRunChar
                                                     : kRunSingle;
      continue;
    }
    if (w == "*" || w == "&") {
      k.role = role_ptr;
      k.follows |= kType | kPtr;
    } else if (word && (k.naming == TokenInfo::naming_keep || w == "typedef")) {
      k.role = role_qual;
      k.follows |= kType | kPtr;
    } else if (word && (w == "static_cast" || w == "reinterpret_cast" || w == "const_cast" ||
                        w == "dynamic_cast" || w == "template")) {
      k.role = role_cast_kw;
    } else if (w == "<" && spec.cls == TokenClass::punct) {
      k.role = role_lt;
    } else if (spec.cls == TokenClass::punct &&
               (w == "(" || w == "," || w == ";" || w == "{" || w == "}" || w == ")" || w == ":")) {
      k.role = role_start;
    } else if (spec.cls == TokenClass::keyword && (w == "else" || w == "do")) {
      k.role = role_start;
    } else if (k.cat == Cat::num || k.cat == Cat::member || k.cat == Cat::literal ||
               k.cat == Cat::constant || k.cat == Cat::builtin ||
               (spec.cls == TokenClass::punct && (w == "]" || w == "++" || w == "--")) ||
               (spec.cls == TokenClass::keyword &&
                (w == "true" || w == "false" || w == "nullptr" || w == "this"))) {
      k.role = role_operand;
    } else {
      k.role = role_other;
    }
    // What may follow a type, a pointer, a functional cast's type, a declared name.
    if (k.cat == Cat::local) k.follows |= kType | kPtr;
    if (w == "(" && spec.cls == TokenClass::punct) k.follows |= kType | kPtr | kCall | kDeclared;
    if (w == "{" && spec.cls == TokenClass::punct) k.follows |= kType | kCall | kDeclared;
    if ((w == ">" || w == ",") && spec.cls == TokenClass::punct) {
      k.follows |= kType | kPtr | kDeclared;  // `static_cast<int>`, `template <int G>`
    }
    if ((w == "=" || w == "[" || w == ":") && spec.cls == TokenClass::punct) k.follows |= kDeclared;
    // The completion path's tokens follow anything.
    if (k.cat == Cat::close_paren || k.cat == Cat::close_bracket || k.cat == Cat::close_brace ||
        k.cat == Cat::semi || k.cat == Cat::hash || k.cat == Cat::eol || k.cat == Cat::eos) {
      k.follows = kAlways;
    }
  }
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
enum class Expr : std::uint8_t { operand, after_func, number_start, number, after_operand };
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
enum class Last : std::uint8_t { none, brace_close, semi, pp_eol, access, other };
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

constexpr int kMaxCodeDepth = 48;
constexpr int kMaxPpDepth = 16;
constexpr int kMaxExprFrames = 8;
constexpr int kMaxExprUnary = 8;
constexpr int kMaxExprDigits = 18;
constexpr int kMaxNumberChars = 20;
constexpr int kMaxUnrollDigits = 5;
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

// Launch expression pieces: `(0, 0)` after a function name, `, 0)` to close a first argument.
constexpr int kFuncFrame0 = 1, kFuncFrame1 = 2, kGroupFrame = 0;

std::int64_t format_key_max(int format, int key) {
  if (format == static_cast<int>(reward::Format::sell)) {
    return key == 0 ? reward::kMaxSellC : reward::kMaxSellSigma;
  }
  return reward::kMaxBsrBlock;
}

bool is_param_format(int format) {
  return format == static_cast<int>(reward::Format::sell) ||
         format == static_cast<int>(reward::Format::bsr);
}

// A keyword of preprocessor lines alone (`if` and `else` are C++'s too).
bool pp_only_word(const TokenInfo& k) {
  return k.cat == Cat::keyword && k.param != pp_none && k.param != pp_if && k.param != pp_else;
}

}  // namespace

struct ActionMask::Tables {
  std::vector<TokenInfo> info;
  std::vector<std::uint8_t> code_base;        // plain code, outside a preprocessor line
  std::vector<std::uint8_t> pp_base;          // plain code inside a preprocessor line
  // code_base under the type-word rules, per context (type words after a qualifier or in a run
  // are patched by the run in fill()).
  std::array<std::vector<std::uint8_t>, kContexts> code_ctx;
  std::vector<TokenId> type_words;  // role_type tokens
  std::uint16_t local_follows = 0;   // every local's follow set (they are alike)
  std::vector<TokenId> digits;                // every digit token
  std::vector<TokenId> directive_candidates;  // tokens that may appear in a directive line
  std::vector<TokenId> pp_candidates;  // preprocessor words, locals, constants, <eol>, <num>, ...
  std::vector<TokenId> format_constants;  // constants of some formats only (SELL_C, BSR_R, ...)
  TokenId format_token = -1, launch_token = -1, eos = -1, eol = -1, num = -1, macro_open = -1;
  std::array<TokenId, 5> format_names{};
  TokenId key_c = -1, key_sigma = -1, key_r = -1, key_grid = -1, key_block = -1, key_smem = -1;
  int effects = 0;
  int locals = 0;
  // Per format: a launched kernel's declaration after its name, `(` to `{`, as the ABI's signature
  // spells it (agents/kernels' kernel_head): `const int* __restrict__ NAME`, ... Op-independent:
  // SpMV and SpMM share every format's argument kinds (checked when the tables are built).
  std::array<std::vector<Forced>, 5> kernel_params;
  // Per format: tokens of a whole empty kernel, `extern "C" __global__ void NAME` + the parameter
  // list + `}`: what each launched but undeclared kernel adds to min_completion.
  std::array<int, 5> declaration_tokens{};
  int max_delta = kMaxDelta;

  explicit Tables(const Vocabulary& v);
};

struct ActionMask::State {
  Phase phase = Phase::start;
  std::uint8_t format = 0;
  std::uint8_t key = 0;  // format key index
  std::uint8_t launches = 0;
  std::uint8_t digits = 0;  // digits of the directive number or expression literal
  std::int64_t value = 0;   // format directive number
  // launch expression
  Expr es = Expr::operand;
  std::uint8_t which = 0;  // 0 grid, 1 block, 2 smem
  std::array<std::uint8_t, kMaxExprFrames> frames{};
  std::uint8_t nframes = 0, unary = 0;
  std::uint16_t chars = 0;
  // code
  std::array<std::uint8_t, kMaxCodeDepth> stack{};
  std::uint8_t depth = 0;
  std::array<std::uint8_t, kMaxPpDepth> pp_stack{};
  std::uint8_t pp_depth = 0;
  Pp pp = Pp::none;
  std::uint8_t if_depth = 0;
  Last last = Last::none;
  Num num = Num::off;
  std::uint8_t num_len = 0;
  bool num_u = false;
  std::uint8_t num_l = 0;
  char num_lcase = 0;
  std::uint16_t locals_used = 0;
  // kernel declarations
  Decl decl = Decl::none;
  std::uint8_t decl_pos = 0;  // next token of the forced parameter list
  std::array<std::uint8_t, kMaxDeclNames> decl_names{};  // the kernel's name, its parameters' names
  std::uint8_t decl_named = 0;
  bool bounds_used = false;
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
  std::array<std::uint8_t, kScopedLocals> scope{};
  std::uint8_t braces = 0;      // `{` open in code
  std::int8_t soft_depth = -1;  // bracket depth of the parenthesis that declared soft names
  bool soft_closed = false;     // ... which has just closed
  // The type-word rules (role_allows): where code stands, and the type-specifier run under way.
  std::uint8_t ctx = ctx_start;
  std::uint8_t run = 0;
  std::int32_t tokens = 0;
  bool done = false;  // <eos> consumed
};

namespace {

using Tables = ActionMask::Tables;

}  // namespace

ActionMask::Tables::Tables(const Vocabulary& v) {
  const std::size_t n = v.size();
  info.resize(n);
  locals = v.locals();
  for (std::size_t i = 0; i < n; ++i) {
    const TokenSpec& t = v.token(static_cast<TokenId>(i));
    TokenInfo& k = info[i];
    switch (t.cls) {
      case TokenClass::special:
        k.cat = t.text == "<pad>"   ? Cat::pad
                : t.text == "<bos>" ? Cat::bos
                : t.text == "<eos>" ? Cat::eos
                : t.text == "<num>" ? Cat::num
                : t.text == "<eol>" ? Cat::eol
                                    : Cat::macro_open;
        break;
      case TokenClass::directive:
        if (t.text == "<format>") {
          k.cat = Cat::format;
        } else if (t.text == "<launch>") {
          k.cat = Cat::launch;
        } else if (auto f = reward::parse_format(t.text)) {
          k.cat = Cat::format_name;
          k.param = static_cast<std::uint8_t>(*f);
        } else {
          k.cat = t.text == "C="       ? Cat::key_c
                  : t.text == "sigma=" ? Cat::key_sigma
                  : t.text == "R="     ? Cat::key_r
                  : t.text == "grid="  ? Cat::key_grid
                  : t.text == "block=" ? Cat::key_block
                                       : Cat::key_smem;
        }
        break;
      case TokenClass::constant: {
        k.cat = Cat::constant;
        if (t.text == "value_t") k.word = w_value_t;
        k.width = static_cast<std::uint8_t>(std::min<std::size_t>(t.text.size(), 255));
        for (reward::Format f : reward::kFormats) {
          const auto names = reward::constant_names(f);
          if (std::find(names.begin(), names.end(), t.text) != names.end()) {
            k.param |= static_cast<std::uint8_t>(1u << static_cast<unsigned>(f));
          }
        }
        break;
      }
      case TokenClass::keyword:
        k.cat = Cat::keyword;
        k.word = t.text == "extern"              ? w_extern
                 : t.text == "__global__"        ? w_global
                 : t.text == "void"              ? w_void
                 : t.text == "__launch_bounds__" ? w_bounds
                 : t.text == "const"             ? w_const
                 : t.text == "int"               ? w_int
                 : t.text == "__restrict__"      ? w_restrict
                                                 : w_none;
        k.param = t.text == "define"     ? pp_define
                  : t.text == "undef"    ? pp_undef
                  : t.text == "if"       ? pp_if
                  : t.text == "ifdef"    ? pp_ifdef
                  : t.text == "ifndef"   ? pp_ifndef
                  : t.text == "elif"     ? pp_elif
                  : t.text == "else"     ? pp_else
                  : t.text == "endif"    ? pp_endif
                  : t.text == "pragma"   ? pp_pragma
                  : t.text == "unroll"   ? pp_unroll
                  : t.text == "nounroll" ? pp_nounroll
                                         : pp_none;
        break;
      case TokenClass::builtin:
        k.cat = Cat::builtin;
        k.param = t.text == "ceil_div" ? fn_ceil_div
                  : t.text == "min"    ? fn_min
                  : t.text == "max"    ? fn_max
                                       : fn_none;
        k.width = static_cast<std::uint8_t>(std::min<std::size_t>(t.text.size(), 255));
        break;
      case TokenClass::member:
        k.cat = Cat::member;
        break;
      case TokenClass::local:
        k.cat = Cat::local;
        k.local = v.local_index(static_cast<TokenId>(i));
        break;
      case TokenClass::literal:
        k.cat = Cat::literal;
        if (t.text == "\"C\"") k.word = w_linkage;
        break;
      case TokenClass::digit:
        k.cat = Cat::digit;
        k.param = static_cast<std::uint8_t>(t.text[0]);
        break;
      case TokenClass::punct: {
        const std::string& p = t.text;
        k.cat = p == "("                ? Cat::open_paren
                : p == "["              ? Cat::open_bracket
                : p == "{"              ? Cat::open_brace
                : p == ")"              ? Cat::close_paren
                : p == "]"              ? Cat::close_bracket
                : p == "}"              ? Cat::close_brace
                : p == ";"              ? Cat::semi
                : p == ","              ? Cat::comma
                : p == "#"              ? Cat::hash
                : p == "." || p == "->" ? Cat::access
                : p == "+"              ? Cat::plus
                : p == "-"              ? Cat::minus
                : p == "*"              ? Cat::star
                : p == "/"              ? Cat::slash
                                        : Cat::punct_other;
        break;
      }
    }
  }
  // Effect classes: tokens of these categories change the state alike, whatever their text.
  std::map<std::tuple<int, int, int, int>, int> effect_of;
  for (std::size_t i = 0; i < n; ++i) {
    TokenInfo& k = info[i];
    int param = k.param;
    int width = 0;
    if (k.cat == Cat::local || k.cat == Cat::member || k.cat == Cat::literal) param = 0;
    if (k.cat == Cat::keyword && k.param == pp_none) param = 0;
    if (k.cat == Cat::builtin && k.param != fn_none) width = k.width;
    if (k.cat == Cat::builtin && k.param == fn_none) param = 0;
    if (k.cat == Cat::constant) width = k.width;  // its format mask (param) and width matter
    const auto [it, added] =
        effect_of.emplace(std::make_tuple(static_cast<int>(k.cat), param, width, int{k.word}), effects);
    if (added) ++effects;
    k.effect = it->second;
  }
  // Where a new name may be declared in code (after a type, through declarator prefixes).
  static const char* const kTypeWords[] = {
      "auto",     "bool",     "char",     "double",    "float",     "int",       "long",
      "short",    "signed",   "unsigned", "void",      "typedef",   "size_t",
      "ptrdiff_t", "int8_t",  "int16_t",  "int32_t",   "int64_t",   "uint8_t",   "uint16_t",
      "uint32_t", "uint64_t", "uint",     "dim3",      "char2",     "char4",     "short2",
      "short4",   "int2",     "int3",     "int4",      "uint2",     "uint3",     "uint4",
      "long2",    "longlong2", "ulonglong2", "float2",  "float3",    "float4",    "double2",
      "double3",  "double4",  "value_t"};
  static const char* const kTagWords[] = {"typename", "class", "struct",   "union",
                                          "enum",     "using", "namespace", "goto"};
  static const char* const kKeepWords[] = {
      "const",    "volatile",    "__restrict__", "static",   "constexpr", "register", "inline",
      "__forceinline__", "__noinline__", "__device__", "__host__", "__shared__", "__constant__",
      "extern",   "*",           "&"};
  for (std::size_t i = 0; i < n; ++i) {
    const TokenSpec& spec = v.token(static_cast<TokenId>(i));
    if (spec.cls != TokenClass::keyword && spec.cls != TokenClass::builtin &&
        spec.cls != TokenClass::constant && spec.cls != TokenClass::punct) {
      continue;
    }
    for (const char* w : kTypeWords) {
      if (spec.text == w) info[i].naming = TokenInfo::naming_type;
    }
    for (const char* w : kKeepWords) {
      if (spec.text == w) info[i].naming = TokenInfo::naming_keep;
    }
    for (const char* w : kTagWords) {
      if (spec.text == w) info[i].naming = TokenInfo::naming_tag;
    }
  }
  assign_roles(v, info);
  // Plain code masks.
  code_base.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const Cat c = info[i].cat;
    switch (c) {
      case Cat::keyword:
      case Cat::builtin:
      case Cat::constant:
      case Cat::literal:
      case Cat::num:
      case Cat::open_paren:
      case Cat::open_bracket:
      case Cat::open_brace:
      case Cat::semi:
      case Cat::comma:
      case Cat::hash:
      case Cat::access:
      case Cat::plus:
      case Cat::minus:
      case Cat::star:
      case Cat::slash:
      case Cat::punct_other:
        code_base[i] = 1;
        break;
      default:
        break;
    }
    if (c == Cat::digit) digits.push_back(static_cast<TokenId>(i));
    if (c == Cat::constant && info[i].param != 0) format_constants.push_back(static_cast<TokenId>(i));
    if (c == Cat::format_name || c == Cat::key_c || c == Cat::key_sigma || c == Cat::key_r ||
        c == Cat::key_grid || c == Cat::key_block || c == Cat::key_smem || c == Cat::eol ||
        c == Cat::num || c == Cat::digit || c == Cat::local || c == Cat::constant ||
        (c == Cat::builtin && info[i].param != fn_none) || c == Cat::open_paren ||
        c == Cat::close_paren || c == Cat::comma || c == Cat::plus || c == Cat::minus ||
        c == Cat::star || c == Cat::slash) {
      directive_candidates.push_back(static_cast<TokenId>(i));
    }
    if ((c == Cat::keyword && info[i].param != pp_none) || c == Cat::local || c == Cat::constant ||
        c == Cat::eol || c == Cat::num || c == Cat::digit || c == Cat::macro_open ||
        c == Cat::close_paren || c == Cat::comma) {
      pp_candidates.push_back(static_cast<TokenId>(i));
    }
  }
  // Declaration words outside a declaration: "C", __global__ and __launch_bounds__ only inside
  // one (a fill() that finds a declaration under way takes the slow path); no __global__ or extern
  // in a preprocessor line (the static check's macro_abuse).
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t w = info[i].word;
    if (w == w_linkage || w == w_global || w == w_bounds) code_base[i] = 0;
  }
  pp_base = code_base;
  for (std::size_t i = 0; i < n; ++i) {
    if (info[i].cat == Cat::hash || info[i].word == w_extern) pp_base[i] = 0;
  }
  // Preprocessor-only words (define, endif, pragma, unroll, ...) are no C++ keywords: in code they
  // are undeclared names (seen in sampled programs: `identifier "endif" is undefined`).
  for (std::size_t i = 0; i < n; ++i) {
    if (pp_only_word(info[i])) code_base[i] = 0;
  }
  for (int c = 0; c < kContexts; ++c) {
    std::vector<std::uint8_t>& base = code_ctx[static_cast<std::size_t>(c)];
    base = code_base;
    for (std::size_t i = 0; i < n; ++i) {
      const TokenInfo& k = info[i];
      const bool ok = k.role == role_type ? c == ctx_start || c == ctx_qual || c == ctx_type ||
                                                c == ctx_expr
                                          : ((k.follows >> c) & 1u) != 0;
      if (!ok) base[i] = 0;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (info[i].role == role_type) type_words.push_back(static_cast<TokenId>(i));
    if (info[i].cat == Cat::local) local_follows = info[i].follows;
  }
  for (reward::Format f : reward::kFormats) {
    const auto& args = reward::signature(reward::Op::spmv, f).args;
    const auto& spmm = reward::signature(reward::Op::spmm, f).args;
    if (args.size() != spmm.size() ||
        !std::equal(args.begin(), args.end(), spmm.begin(),
                    [](const auto& a, const auto& b) { return a.kind == b.kind; })) {
      throw std::logic_error("action mask: SpMV and SpMM kernels of format " +
                             std::string(reward::to_string(f)) +
                             " differ in argument kinds; the mask's declaration needs the op");
    }
    std::vector<Forced>& seq = kernel_params[static_cast<std::size_t>(f)];
    seq.push_back({Cat::open_paren});
    for (std::size_t a = 0; a < args.size(); ++a) {
      if (a > 0) seq.push_back({Cat::comma});
      if (args[a].kind != reward::ArgKind::output_array) seq.push_back({Cat::keyword, w_const});
      if (args[a].kind == reward::ArgKind::index_array) {
        seq.push_back({Cat::keyword, w_int});
      } else {
        seq.push_back({Cat::constant, w_value_t});
      }
      seq.push_back({Cat::star});
      seq.push_back({Cat::keyword, w_restrict});
      seq.push_back({Cat::local});
    }
    seq.push_back({Cat::close_paren});
    seq.push_back({Cat::open_brace});
    if (args.size() + 1 > static_cast<std::size_t>(kMaxDeclNames)) {
      throw std::logic_error("action mask: a kernel of more than 7 parameters");
    }
    declaration_tokens[static_cast<std::size_t>(f)] = 5 + static_cast<int>(seq.size()) + 1;
    max_delta = std::max(max_delta, declaration_tokens[static_cast<std::size_t>(f)] + kMaxDelta);
  }
  // The shortest program: a format line, one launch line, the launched kernel empty, <eos>.
  int shortest = std::numeric_limits<int>::max();
  for (reward::Format f : reward::kFormats) {
    const int format_line = is_param_format(static_cast<int>(f)) ? 9 : 3;
    const int declaration = declaration_tokens[static_cast<std::size_t>(f)];
    shortest = std::min(shortest, format_line + 7 + declaration + 1);
  }
  if (shortest != kMinSyntaxTokens) {
    throw std::logic_error("action mask: the shortest program is " + std::to_string(shortest) +
                           " tokens, kMinSyntaxTokens says " + std::to_string(kMinSyntaxTokens));
  }
  format_token = v.id(TokenClass::directive, "<format>");
  launch_token = v.id(TokenClass::directive, "<launch>");
  eos = v.eos();
  eol = v.eol();
  num = v.num();
  macro_open = v.macro_open();
  for (reward::Format f : reward::kFormats) {
    format_names[static_cast<std::size_t>(f)] = v.id(TokenClass::directive, reward::to_string(f));
  }
  key_c = v.id(TokenClass::directive, "C=");
  key_sigma = v.id(TokenClass::directive, "sigma=");
  key_r = v.id(TokenClass::directive, "R=");
  key_grid = v.id(TokenClass::directive, "grid=");
  key_block = v.id(TokenClass::directive, "block=");
  key_smem = v.id(TokenClass::directive, "smem=");
}

namespace {

using State = ActionMask::State;

bool num_accepting(Num n) {
  switch (n) {
    case Num::zero:
    case Num::dec:
    case Num::frac:
    case Num::exp:
    case Num::hex:
    case Num::int_suffix:
    case Num::float_suffix:
      return true;
    default:
      return false;
  }
}

bool is_dec(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_dec(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// The number state after one more character, or Num::off when the character cannot follow.
// Integer suffixes: u once; l or ll (the two l's adjacent and of one case); in either order.
// num_l: 0 none, 1 one l just read, 2 one l earlier, 3 ll.
Num num_next(const State& s, char c, bool& u, std::uint8_t& l, char& lcase) {
  u = s.num_u;
  l = s.num_l;
  lcase = s.num_lcase;
  const auto int_suffix = [&]() -> Num {
    if (c == 'u' || c == 'U') {
      if (u) return Num::off;
      u = true;
      if (l == 1) l = 2;
      return Num::int_suffix;
    }
    if (c == 'l' || c == 'L') {
      if (l == 0) {
        l = 1;
        lcase = c;
        return Num::int_suffix;
      }
      if (l == 1 && lcase == c) {
        l = 3;
        return Num::int_suffix;
      }
    }
    return Num::off;
  };
  switch (s.num) {
    case Num::start:
      if (c == '0') return Num::zero;
      if (is_dec(c)) return Num::dec;
      if (c == '.') return Num::dot_start;
      return Num::off;
    case Num::zero:
      if (c == 'x' || c == 'X') return Num::hex_start;
      if (c == '.') return Num::frac;
      if (c == 'e' || c == 'E') return Num::exp_start;
      return int_suffix();
    case Num::dec:
      if (is_dec(c)) return Num::dec;
      if (c == '.') return Num::frac;
      if (c == 'e' || c == 'E') return Num::exp_start;
      return int_suffix();
    case Num::dot_start:
      return is_dec(c) ? Num::frac : Num::off;
    case Num::frac:
      if (is_dec(c)) return Num::frac;
      if (c == 'e' || c == 'E') return Num::exp_start;
      if (c == 'f' || c == 'F' || c == 'l' || c == 'L') return Num::float_suffix;
      return Num::off;
    case Num::exp_start:
      if (c == '+' || c == '-') return Num::exp_sign;
      return is_dec(c) ? Num::exp : Num::off;
    case Num::exp_sign:
      return is_dec(c) ? Num::exp : Num::off;
    case Num::exp:
      if (is_dec(c)) return Num::exp;
      if (c == 'f' || c == 'F' || c == 'l' || c == 'L') return Num::float_suffix;
      return Num::off;
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
}

bool digit_allowed_in_number(const State& s, char c) {
  if (s.num_len + 1 > kMaxNumberChars) return false;
  bool u;
  std::uint8_t l;
  char lcase;
  const Num next = num_next(s, c, u, l, lcase);
  if (next == Num::off) return false;
  // Keep the literal completable within the length cap.
  return s.num_len + 1 + (num_accepting(next) ? 0 : 1) <= kMaxNumberChars;
}

std::uint8_t opener(Cat c) {
  return c == Cat::open_paren ? '(' : c == Cat::open_bracket ? '[' : '{';
}
std::uint8_t closer_for(std::uint8_t open) { return open == '(' ? ')' : open == '[' ? ']' : '}'; }
std::uint8_t close_char(Cat c) {
  return c == Cat::close_paren ? ')' : c == Cat::close_bracket ? ']' : '}';
}

// --- launch expressions ---

int frame_close_chars(std::uint8_t frame) {
  return frame == kFuncFrame0 ? 4 : 1;  // ", 0)" or ")"
}

int expr_close_chars(const State& s) {
  int c = 0;
  switch (s.es) {
    case Expr::operand:
    case Expr::number_start:
      c += 1;
      break;
    case Expr::after_func:
      c += 6;
      break;
    default:
      break;
  }
  for (int i = 0; i < s.nframes; ++i) c += frame_close_chars(s.frames[static_cast<std::size_t>(i)]);
  return c;
}

int expr_close_tokens(const State& s) {
  int t = 0;
  switch (s.es) {
    case Expr::operand:
    case Expr::number_start:
      t += 1;
      break;
    case Expr::after_func:
      t += 5;
      break;
    default:
      break;
  }
  for (int i = 0; i < s.nframes; ++i)
    t += s.frames[static_cast<std::size_t>(i)] == kFuncFrame0 ? 3 : 1;
  return t;
}

// --- min_completion ---

// Launched kernels not declared yet: each needs its (empty) declaration before <eos>.
int pending_kernels(const State& s) {
  return std::popcount(static_cast<unsigned>(s.launched & ~s.defined));
}

// Closing everything (below), then an empty declaration of each pending kernel at the top level,
// then <eos>.
int code_completion(const Tables& t, const State& s) {
  int m = 1 + pending_kernels(s) * t.declaration_tokens[s.format];  // declarations, <eos>
  if (s.num != Num::off && !num_accepting(s.num)) m += 1;
  const bool access = s.last == Last::access;
  int end = 0;
  int open_ifs = s.if_depth;
  if (s.pp != Pp::none) {
    switch (s.pp) {
      case Pp::hash:
        // `endif <eol>` when an #if is open (it closes one), else `pragma unroll <eol>`.
        if (open_ifs > 0) {
          m += 2;
          --open_ifs;
        } else {
          m += 3;
        }
        break;
      case Pp::define_name:
        m += 2;
        break;
      case Pp::after_macro_name:
        m += 1;
        break;
      case Pp::macro_param_first:
        m += 2;
        break;
      case Pp::macro_param_next:
        m += 3;
        break;
      case Pp::macro_param_sep:
        m += 2;
        break;
      case Pp::body:
        m += s.pp_depth + 1 + (access ? 1 : 0);
        break;
      case Pp::if_expr_start:
        m += 2;
        break;
      case Pp::undef_name:
      case Pp::ifdef_name:
        m += 2;
        break;
      case Pp::eol_only:
        m += 1;
        break;
      case Pp::pragma:
        m += 2;
        break;
      case Pp::unroll:
        m += 1;
        break;
      case Pp::unroll_num_start:
        m += 2;
        break;
      case Pp::unroll_num:
        m += 1;
        break;
      case Pp::none:
        break;
    }
    // The line ends with <eol>: afterwards the code ends well unless a bracket below is open.
    end = s.depth > 0 ? (s.stack[0] == '{' ? 0 : 1) : 0;
  } else {
    if (access) m += 1;
    const bool ends_well =
        !access && s.num == Num::off &&
        (s.last == Last::brace_close || s.last == Last::semi || s.last == Last::pp_eol);
    end = s.depth > 0 ? (s.stack[0] == '{' ? 0 : 1) : (ends_well ? 0 : 1);
  }
  m += s.depth;
  m += open_ifs > 0 ? 3 * open_ifs : end;  // `# endif <eol>` each; the last leaves a line end
  return m;
}

// Tokens to complete a committed declaration (linkage .. params): up to and with its `{`, then
// the code's completion from there (`}`, #endif lines, <eos>). Each step along the path - the
// forced words, an operand and the closers of __launch_bounds__, the parameter list - lowers it
// by one.
int declaration_completion(const Tables& t, const State& s) {
  const int list = static_cast<int>(t.kernel_params[s.format].size());
  int to_brace = 0;
  switch (s.decl) {
    case Decl::linkage:
      to_brace = 3 + list;  // __global__ void NAME
      break;
    case Decl::global:
      to_brace = 2 + list;
      break;
    case Decl::result:
      to_brace = 1 + list;
      break;
    case Decl::bounds_open:
      to_brace = 4 + 1 + list;  // ( <num> 1 ) NAME
      break;
    case Decl::bounds_first:
      to_brace = 3 + 1 + list;  // <num> 1 ) NAME
      break;
    case Decl::bounds:
      to_brace = (s.num != Num::off && !num_accepting(s.num) ? 1 : 0) + s.depth + 1 + list;
      break;
    case Decl::params:
      to_brace = list - s.decl_pos;
      break;
    case Decl::none:
    case Decl::external:
      break;
  }
  State body = s;
  if (s.decl != Decl::params) {
    // NAME is still to come: it will be one of the pending kernels (the lowest, say).
    const unsigned pending = static_cast<unsigned>(s.launched & ~s.defined);
    body.defined = static_cast<std::uint16_t>(s.defined | (pending & (~pending + 1u)));
  }
  body.decl = Decl::none;
  body.num = Num::off;
  body.pp = Pp::none;
  body.depth = 1;
  body.stack[0] = '{';
  body.last = Last::other;
  return to_brace + code_completion(t, body);
}

bool declaring(const State& s) { return s.decl != Decl::none && s.decl != Decl::external; }

int completion(const Tables& t, const State& s) {
  if (s.done) return 0;
  constexpr int kLaunchLine = 7;  // <launch> v grid= M block= M <eol>
  // After the launch lines: an empty declaration of every launched kernel (at least the one a
  // launch line under way names), then <eos>.
  const int declarations = t.declaration_tokens[s.format];
  const int after_launch = std::max(pending_kernels(s), 1) * declarations + 1;
  const int after_format = kLaunchLine + declarations + 1;
  switch (s.phase) {
    case Phase::start:
    case Phase::format_name: {
      // The shortest format line and declaration (kMinSyntaxTokens at the start).
      return kMinSyntaxTokens - (s.phase == Phase::start ? 0 : 1);
    }
    case Phase::format_key:
      return (2 - s.key) * 3 + 1 + after_format;
    case Phase::format_num_start:
      return 2 + (1 - s.key) * 3 + 1 + after_format;
    case Phase::format_num:
      return (s.digits == 0 ? 1 : 0) + (1 - s.key) * 3 + 1 + after_format;
    case Phase::format_eol:
      return 1 + after_format;
    case Phase::launch_start:
      return s.launches == 0 ? after_format : after_launch;
    case Phase::launch_name:
      return 6 + after_launch;
    case Phase::launch_key:
      return 5 + after_launch;
    case Phase::expr: {
      const int rest = s.which == 0 ? 3 : 1;  // block= M <eol>, or <eol>
      return expr_close_tokens(s) + rest + after_launch;
    }
    case Phase::code:
      if (declaring(s)) return declaration_completion(t, s);
      // `extern` at the top level: "C" goes on to the first pending kernel's declaration.
      if (s.decl == Decl::external && pending_kernels(s) > 0) {
        State linkage = s;
        linkage.decl = Decl::linkage;
        return 1 + declaration_completion(t, linkage);
      }
      return code_completion(t, s);
  }
  return 1;
}

// The next new local (the canonical v<locals_used>) in code: only where C++ declares a name -
// after a type word or an earlier local (a user type or macro), through `const`, `*`, `&`,
// `__restrict__`, ..., or after `,` in a declaration list - never inside an expression, where it
// would be an undeclared identifier (the commonest compile error of sampled programs). Preprocessor
// lines keep every local: a macro may name what the code declares later.
bool new_local_allowed(const State& s) { return s.declarator != 0 && s.last != Last::access; }

constexpr std::uint8_t kNameDeclarator = 1, kTypeDeclarator = 2, kTagDeclarator = 3;

// --- scopes ---
// A name used in code must be in scope, and a block must not declare a name twice (the two
// commonest compile errors of sampled programs after undeclared names). The model is C++'s, kept
// lenient wherever it cannot be sure: a name declared inside parentheses (a for statement's, a
// function's parameters) is bound to the block that follows, or else held by the enclosing block
// until it closes; the file scope and parenthesised declarations may redeclare; macros and tags
// (struct, enum, goto, ...) are allowed everywhere; locals past kScopedLocals are not tracked.
constexpr std::uint8_t kScopeDead = 0, kScopeSoft = 0x80, kScopeTag = 0xFE, kScopeMacro = 0xFF;

std::uint8_t scope_of(const State& s, int local) {
  return local < kScopedLocals ? s.scope[static_cast<std::size_t>(local)] : kScopeMacro;
}
void set_scope(State& s, int local, std::uint8_t scope) {
  if (local >= 0 && local < kScopedLocals) s.scope[static_cast<std::size_t>(local)] = scope;
}
bool free_scope(std::uint8_t scope) { return scope == kScopeTag || scope == kScopeMacro; }
std::uint8_t block_scope(int level, bool soft) {
  return static_cast<std::uint8_t>((level + 1) | (soft ? kScopeSoft : 0));
}
int block_level(std::uint8_t scope) { return (scope & ~kScopeSoft) - 1; }
bool is_macro(const State& s, int local) {
  return local < kScopedLocals && s.scope[static_cast<std::size_t>(local)] == kScopeMacro;
}
bool in_parens(const State& s) { return s.depth > 0 && s.stack[s.depth - 1u] == '('; }

// A known local in code (not after `.` / `->`): where a name is used, one in scope; where one is
// declared, anything but a second declaration in the same block.
bool known_local_allowed(const State& s, int local) {
  const std::uint8_t scope = scope_of(s, local);
  if (!new_local_allowed(s)) return scope != kScopeDead;
  if (scope == kScopeDead || free_scope(scope) || (scope & kScopeSoft) != 0) return true;
  if (s.declarator == kTagDeclarator || in_parens(s) || s.braces == 0) return true;
  return block_level(scope) != s.braces;
}

// Soft names at `level` move to `to` (their parenthesis was followed by no block).
void move_soft_names(State& s, int level, int to) {
  const int n = std::min<int>(s.locals_used, kScopedLocals);
  for (int i = 0; i < n; ++i) {
    if (s.scope[static_cast<std::size_t>(i)] == block_scope(level, true)) {
      s.scope[static_cast<std::size_t>(i)] = block_scope(to, true);
    }
  }
}

// The block at level s.braces closes: its names, and those bound to it, leave scope.
void close_block(State& s) {
  const int n = std::min<int>(s.locals_used, kScopedLocals);
  for (int i = 0; i < n; ++i) {
    const std::uint8_t scope = s.scope[static_cast<std::size_t>(i)];
    if (scope != kScopeDead && !free_scope(scope) && block_level(scope) >= s.braces) {
      s.scope[static_cast<std::size_t>(i)] = kScopeDead;
    }
  }
  --s.braces;
}

// The scopes before a plain code token (outside a preprocessor line and a kernel declaration;
// s.declarator and s.last still those before the token). Braces move in apply_code_word.
void advance_scopes(State& s, const TokenInfo& k) {
  if (s.soft_closed) {
    s.soft_closed = false;
    if (k.cat != Cat::open_brace) move_soft_names(s, s.braces + 1, s.braces);
  }
  if (k.cat == Cat::close_paren && s.soft_depth == static_cast<int>(s.depth)) {
    s.soft_closed = true;
    s.soft_depth = -1;
  }
  if (k.cat != Cat::local || !new_local_allowed(s)) return;  // a use, or a field
  if (scope_of(s, k.local) == kScopeMacro) return;           // a macro naming a type or a qualifier
  if (s.declarator == kTagDeclarator) {
    set_scope(s, k.local, kScopeTag);
  } else if (in_parens(s)) {
    set_scope(s, k.local, block_scope(s.braces + 1, true));
    s.soft_depth = static_cast<std::int8_t>(s.depth);
  } else {
    set_scope(s, k.local, block_scope(s.braces, false));
  }
}

// --- allowed tokens ---

// A kernel can still be declared: a launched kernel is not yet (its parameters can always be
// named: the vocabulary has far more locals than a declaration has names).
bool can_declare(const State& s) { return (s.launched & ~s.defined) != 0; }

// The declaration's rule for this token under way (s.decl != none, outside a preprocessor line),
// or nullopt where the token is judged as plain code.
std::optional<bool> declaration_allows(const Tables& t, const State& s, const TokenInfo& k) {
  switch (s.decl) {
    case Decl::none:
      return std::nullopt;
    case Decl::external:
      if (k.word == w_linkage) return can_declare(s);
      return std::nullopt;
    case Decl::linkage:
      return k.word == w_global;
    case Decl::global:
      return k.word == w_void;
    case Decl::result:
      if (k.word == w_bounds) return !s.bounds_used;
      return k.cat == Cat::local && k.local < kMaxKernelLocal &&
             ((s.launched & ~s.defined) >> k.local & 1u) != 0;
    case Decl::bounds_open:
      return k.cat == Cat::open_paren;
    case Decl::bounds_first:
    case Decl::bounds:
      // An integer expression: numbers, names, operators, parentheses.
      if (k.word != w_none) return false;
      switch (k.cat) {
        case Cat::close_paren:
        case Cat::comma:
          if (s.decl == Decl::bounds_first) return false;
          return std::nullopt;
        case Cat::num:
        case Cat::constant:
        case Cat::local:
        case Cat::open_paren:
        case Cat::plus:
        case Cat::minus:
        case Cat::star:
        case Cat::slash:
        case Cat::punct_other:
          return std::nullopt;
        default:
          return false;
      }
    case Decl::params: {
      const Forced& f = t.kernel_params[s.format][s.decl_pos];
      if (k.cat != f.cat || k.word != f.word) return false;
      if (k.cat != Cat::local) return true;
      if (k.local > s.locals_used || k.local >= t.locals || is_macro(s, k.local)) return false;
      for (int i = 0; i < s.decl_named; ++i) {
        if (s.decl_names[static_cast<std::size_t>(i)] == k.local) return false;
      }
      return true;
    }
  }
  return false;
}

// The declarator state after a code token (outside preprocessor lines; brackets already moved).
// After a local only a name may follow directly: `v3 * v9` stays an expression (a pointer to a
// user type is `T* name` only for built-in types and value_t here).
void advance_declarator(State& s, const TokenInfo& k) {
  const std::uint8_t was = s.declarator;
  s.declarator = k.naming == TokenInfo::naming_type ? kTypeDeclarator
                 : k.naming == TokenInfo::naming_tag ? kTagDeclarator
                 : k.cat == Cat::local              ? kNameDeclarator
                 : was == kTypeDeclarator && k.naming == TokenInfo::naming_keep ? kTypeDeclarator
                                                                                : 0;
  if (k.cat == Cat::local && was != 0) s.list_depth = static_cast<std::int8_t>(s.depth);  // a name
  if (k.cat == Cat::comma && s.depth == s.list_depth) s.declarator = kTypeDeclarator;
  if (s.list_depth >= 0 && (s.depth < s.list_depth ||
                            (k.cat == Cat::semi && s.depth == s.list_depth))) {
    s.list_depth = -1;
  }
}

// A prelude constant in code: one the program's format defines (BSR_C in a CSR program would be an
// undeclared identifier; M, N, NNZ, value_t, ... are every format's). Preprocessor lines may name
// any (`#if BSR_C > 2` is 0 where it is undefined; a macro body counts only where expanded).
bool constant_in_format(const State& s, const TokenInfo& k) {
  return k.param == 0 || ((k.param >> s.format) & 1u) != 0;
}

// The type-word rules for a code token (outside preprocessor lines and kernel declarations).
bool role_allows(const State& s, const TokenInfo& k) {
  if (k.role == role_type) {
    switch (s.ctx) {
      case ctx_start:
      case ctx_expr:
        return true;
      case ctx_qual:
      case ctx_type:
        return type_run_takes(s.run, k.type_bits);
      default:
        return false;
    }
  }
  return ((k.follows >> s.ctx) & 1u) != 0;
}

// The context after a code token; `declares`: the token is a local that a declaration declares,
// `macro`: a local #defined (it may name a type or a qualifier).
void advance_role(State& s, const TokenInfo& k, bool declares, bool macro) {
  const bool in_type = s.ctx == ctx_type || s.ctx == ctx_ptr || (s.ctx == ctx_qual && s.run != 0);
  switch (k.role) {
    case role_type:
      if (s.ctx == ctx_expr) {
        s.ctx = ctx_cast_call;
        s.run = k.type_bits;
      } else {
        s.run = type_run_join(in_type ? s.run : 0, k.type_bits);
        s.ctx = ctx_type;
      }
      return;
    case role_qual:
      if (!in_type) s.run = 0;
      if (s.ctx != ctx_ptr) s.ctx = ctx_qual;
      return;
    case role_ptr:
      s.ctx = in_type ? ctx_ptr : ctx_expr;
      return;
    case role_cast_kw:
      s.ctx = ctx_cast_kw;
      return;
    case role_lt:
      s.ctx = s.ctx == ctx_cast_kw ? ctx_start : ctx_expr;
      return;
    case role_start:
      s.ctx = ctx_start;
      s.run = 0;
      return;
    case role_operand:
      s.ctx = ctx_operand;
      return;
    default:
      break;
  }
  if (k.cat == Cat::local && macro) {
    if (!in_type) s.run = 0;
    s.ctx = ctx_qual;
  } else if (k.cat == Cat::local) {
    s.ctx = declares ? ctx_declared : ctx_operand;
  } else {
    s.ctx = ctx_expr;
  }
}

bool code_word_allows(const Tables& t, const State& s, const TokenInfo& k, bool in_pp) {
  if (in_pp) {
    if (k.word == w_extern || k.word == w_linkage || k.word == w_global || k.word == w_bounds) {
      return false;
    }
  } else if (pp_only_word(k)) {
    return false;
  } else if (auto rule = declaration_allows(t, s, k)) {
    return *rule;
  } else if (k.word == w_linkage || k.word == w_global || k.word == w_bounds) {
    return false;  // only inside a declaration
  }
  if (s.last == Last::access) {
    // After `.` / `->` a field: known in code (a new name there would be undeclared).
    const bool known = k.local < s.locals_used || (in_pp && k.local == s.locals_used);
    return k.cat == Cat::member || (k.cat == Cat::local && k.local < t.locals && known);
  }
  if (!in_pp && !declaring(s) && !role_allows(s, k)) return false;
  switch (k.cat) {
    case Cat::constant:
      return in_pp || constant_in_format(s, k);
    case Cat::keyword:
    case Cat::builtin:
    case Cat::literal:
    case Cat::num:
    case Cat::semi:
    case Cat::comma:
    case Cat::access:
    case Cat::plus:
    case Cat::minus:
    case Cat::star:
    case Cat::slash:
    case Cat::punct_other:
      return true;
    case Cat::local:
      if (k.local >= t.locals || k.local > s.locals_used) return false;
      if (in_pp) return true;
      return k.local == s.locals_used ? new_local_allowed(s) : known_local_allowed(s, k.local);
    case Cat::open_paren:
    case Cat::open_bracket:
    case Cat::open_brace:
      return in_pp ? s.pp_depth < kMaxPpDepth : s.depth < kMaxCodeDepth;
    case Cat::close_paren:
    case Cat::close_bracket:
    case Cat::close_brace:
      if (in_pp) {
        return s.pp_depth > 0 && closer_for(s.pp_stack[s.pp_depth - 1u]) == close_char(k.cat);
      }
      return s.depth > 0 && closer_for(s.stack[s.depth - 1u]) == close_char(k.cat);
    case Cat::hash:
      return !in_pp;
    case Cat::eol:
      return in_pp && s.pp_depth == 0 && s.pp == Pp::body;
    case Cat::eos:
      return !in_pp && s.depth == 0 && s.if_depth == 0 && pending_kernels(s) == 0 &&
             (s.last == Last::brace_close || s.last == Last::semi || s.last == Last::pp_eol);
    default:
      return false;
  }
}

bool pp_allows(const Tables& t, const State& s, const TokenInfo& k) {
  const bool new_local_ok = k.cat == Cat::local && k.local <= s.locals_used && k.local < t.locals;
  // #define / #undef never name a launched kernel (the static check's macro_abuse); the next new
  // local is never one, so a name always remains.
  const bool macro_name_ok =
      new_local_ok && (k.local >= kMaxKernelLocal || ((s.launched >> k.local) & 1u) == 0);
  switch (s.pp) {
    case Pp::hash:
      if (k.cat != Cat::keyword) return false;
      switch (k.param) {
        case pp_define:
        case pp_undef:
        case pp_if:
        case pp_ifdef:
        case pp_ifndef:
        case pp_pragma:
          return true;
        case pp_elif:
        case pp_else:
        case pp_endif:
          return s.if_depth > 0;
        default:
          return false;
      }
    case Pp::define_name:
      return macro_name_ok;
    case Pp::after_macro_name:
      if (k.cat == Cat::macro_open) return true;
      if (k.cat == Cat::eol) return true;
      return code_word_allows(t, s, k, true);
    case Pp::macro_param_first:
      return new_local_ok || k.cat == Cat::close_paren;
    case Pp::macro_param_next:
      return new_local_ok;
    case Pp::macro_param_sep:
      return k.cat == Cat::comma || k.cat == Cat::close_paren;
    case Pp::body:
      return code_word_allows(t, s, k, true);
    case Pp::if_expr_start:
      return k.cat != Cat::eol && code_word_allows(t, s, k, true);
    case Pp::undef_name:
      return macro_name_ok;
    case Pp::ifdef_name:
      return new_local_ok || k.cat == Cat::constant;
    case Pp::eol_only:
      return k.cat == Cat::eol;
    case Pp::pragma:
      return k.cat == Cat::keyword && (k.param == pp_unroll || k.param == pp_nounroll);
    case Pp::unroll:
      return k.cat == Cat::num || k.cat == Cat::eol;
    case Pp::unroll_num_start:
      return k.cat == Cat::digit && k.param >= '1' && k.param <= '9';
    case Pp::unroll_num:
      return (k.cat == Cat::digit && is_dec(static_cast<char>(k.param)) &&
              s.digits < kMaxUnrollDigits) ||
             k.cat == Cat::eol;
    case Pp::none:
      return false;
  }
  return false;
}

bool code_allows(const Tables& t, const State& s, const TokenInfo& k) {
  if (s.num != Num::off) {
    if (k.cat == Cat::digit) return digit_allowed_in_number(s, static_cast<char>(k.param));
    if (!num_accepting(s.num)) return false;
    State after = s;
    after.num = Num::off;
    after.last = Last::other;
    return s.pp == Pp::none ? code_word_allows(t, after, k, false) : pp_allows(t, after, k);
  }
  if (s.pp != Pp::none) return pp_allows(t, s, k);
  return code_word_allows(t, s, k, false);
}

bool expr_allows(const Tables&, const State& s, const TokenInfo& k, int& width) {
  width = 0;
  switch (s.es) {
    case Expr::operand:
      switch (k.cat) {
        case Cat::constant:
          width = k.width;
          return (k.param & (1u << s.format)) != 0;
        case Cat::builtin:  // its '(' must still fit
          width = k.width;
          return k.param != fn_none && s.nframes < kMaxExprFrames;
        case Cat::num:
          return true;
        case Cat::open_paren:
          width = 1;
          return s.nframes < kMaxExprFrames;
        case Cat::minus:
          width = 1;
          return s.unary < kMaxExprUnary;
        default:
          return false;
      }
    case Expr::after_func:
      width = 1;
      return k.cat == Cat::open_paren && s.nframes < kMaxExprFrames;
    case Expr::number_start:
      width = 1;
      return k.cat == Cat::digit && is_dec(static_cast<char>(k.param));
    case Expr::number:
      if (k.cat == Cat::digit) {
        width = 1;
        return is_dec(static_cast<char>(k.param)) && s.digits < kMaxExprDigits;
      }
      [[fallthrough]];
    case Expr::after_operand: {
      const std::uint8_t top = s.nframes > 0 ? s.frames[s.nframes - 1u] : 255;
      switch (k.cat) {
        case Cat::plus:
        case Cat::minus:
        case Cat::star:
        case Cat::slash:
          width = 3;
          return true;
        case Cat::close_paren:
          width = 1;
          return top == kGroupFrame || top == kFuncFrame1;
        case Cat::comma:
          width = 2;
          return top == kFuncFrame0;
        case Cat::key_block:
          return s.nframes == 0 && s.which == 0;
        case Cat::key_smem:
          return s.nframes == 0 && s.which == 1;
        case Cat::eol:
          return s.nframes == 0 && s.which >= 1;
        default:
          return false;
      }
    }
  }
  return false;
}

// --- transitions (the token is known to be allowed) ---

void apply_expr(State& s, const TokenInfo& k, int width) {
  s.chars = static_cast<std::uint16_t>(s.chars + width);
  switch (s.es) {
    case Expr::operand:
      switch (k.cat) {
        case Cat::constant:
          s.es = Expr::after_operand;
          break;
        case Cat::builtin:
          s.es = Expr::after_func;
          break;
        case Cat::num:
          s.es = Expr::number_start;
          s.digits = 0;
          break;
        case Cat::open_paren:
          s.frames[s.nframes++] = kGroupFrame;
          break;
        case Cat::minus:
          ++s.unary;
          break;
        default:
          break;
      }
      return;
    case Expr::after_func:
      s.frames[s.nframes++] = kFuncFrame0;
      s.es = Expr::operand;
      return;
    case Expr::number_start:
      s.es = Expr::number;
      s.digits = 1;
      return;
    case Expr::number:
      if (k.cat == Cat::digit) {
        ++s.digits;
        return;
      }
      [[fallthrough]];
    case Expr::after_operand:
      switch (k.cat) {
        case Cat::plus:
        case Cat::minus:
        case Cat::star:
        case Cat::slash:
          s.es = Expr::operand;
          break;
        case Cat::close_paren:
          --s.nframes;
          s.es = Expr::after_operand;
          break;
        case Cat::comma:
          s.frames[s.nframes - 1u] = kFuncFrame1;
          s.es = Expr::operand;
          break;
        case Cat::key_block:
        case Cat::key_smem:
          s.which = k.cat == Cat::key_block ? 1 : 2;
          s.es = Expr::operand;
          s.chars = 0;
          s.unary = 0;
          break;
        case Cat::eol:
          s.phase = Phase::launch_start;
          break;
        default:
          break;
      }
      return;
  }
}

void apply_code_word(State& s, const TokenInfo& k, bool in_pp) {
  if (k.cat == Cat::local && k.local == s.locals_used) ++s.locals_used;
  switch (k.cat) {
    case Cat::open_paren:
    case Cat::open_bracket:
    case Cat::open_brace:
      if (in_pp) {
        s.pp_stack[s.pp_depth++] = opener(k.cat);
      } else {
        s.stack[s.depth++] = opener(k.cat);
        if (k.cat == Cat::open_brace) ++s.braces;
      }
      s.last = Last::other;
      break;
    case Cat::close_paren:
    case Cat::close_bracket:
    case Cat::close_brace:
      if (in_pp) {
        --s.pp_depth;
      } else {
        --s.depth;
        if (k.cat == Cat::close_brace) close_block(s);
      }
      s.last = k.cat == Cat::close_brace && !in_pp ? Last::brace_close : Last::other;
      break;
    case Cat::semi:
      s.last = in_pp ? Last::other : Last::semi;
      break;
    case Cat::access:
      s.last = Last::access;
      break;
    case Cat::num:
      s.num = Num::start;
      s.num_len = 0;
      s.num_u = false;
      s.num_l = 0;
      s.num_lcase = 0;
      s.last = Last::other;
      break;
    case Cat::hash:
      s.pp = Pp::hash;
      s.pp_depth = 0;
      s.last = Last::other;
      break;
    case Cat::eol:
      s.pp = Pp::none;
      s.pp_depth = 0;
      s.last = Last::pp_eol;
      break;
    default:
      s.last = Last::other;
      break;
  }
}

// The declaration's state after a code token outside a preprocessor line (apply_code_word has
// already moved brackets and locals).
void advance_declaration(const Tables& t, State& s, const TokenInfo& k) {
  switch (s.decl) {
    case Decl::external:
      if (k.word == w_linkage) {
        s.decl = Decl::linkage;
        s.bounds_used = false;
        return;
      }
      [[fallthrough]];
    case Decl::none:
      s.decl = k.word == w_extern && s.depth == 0 ? Decl::external : Decl::none;
      return;
    case Decl::linkage:
      s.decl = Decl::global;
      return;
    case Decl::global:
      s.decl = Decl::result;
      return;
    case Decl::result:
      if (k.word == w_bounds) {
        s.decl = Decl::bounds_open;
        s.bounds_used = true;
      } else {
        s.defined = static_cast<std::uint16_t>(s.defined | (1u << k.local));
        set_scope(s, k.local, block_scope(0, false));  // a file-scope name from here on
        s.decl = Decl::params;
        s.decl_pos = 0;
        s.decl_names[0] = static_cast<std::uint8_t>(k.local);
        s.decl_named = 1;
      }
      return;
    case Decl::bounds_open:
      s.decl = Decl::bounds_first;
      return;
    case Decl::bounds_first:
    case Decl::bounds:
      s.decl = k.cat == Cat::close_paren && s.depth == 0 ? Decl::result : Decl::bounds;
      return;
    case Decl::params:
      if (k.cat == Cat::local) {
        s.decl_names[s.decl_named++] = static_cast<std::uint8_t>(k.local);
        set_scope(s, k.local, block_scope(1, false));  // the body's outermost block
      }
      if (++s.decl_pos == t.kernel_params[s.format].size()) s.decl = Decl::none;
      return;
  }
}

void end_pp_line(State& s) {
  s.pp = Pp::none;
  s.pp_depth = 0;
  s.digits = 0;
  s.last = Last::pp_eol;
  s.ctx = ctx_start;  // the completion path may go on with `extern` or <eos>
  s.run = 0;
}

void apply_pp(State& s, const TokenInfo& k) {
  if (k.cat == Cat::local && k.local == s.locals_used) ++s.locals_used;
  switch (s.pp) {
    case Pp::hash:
      switch (k.param) {
        case pp_define:
          s.pp = Pp::define_name;
          break;
        case pp_undef:
          s.pp = Pp::undef_name;
          break;
        case pp_if:
          ++s.if_depth;
          s.pp = Pp::if_expr_start;
          break;
        case pp_ifdef:
        case pp_ifndef:
          ++s.if_depth;
          s.pp = Pp::ifdef_name;
          break;
        case pp_elif:
          s.pp = Pp::if_expr_start;
          break;
        case pp_else:
          s.pp = Pp::eol_only;
          break;
        case pp_endif:
          --s.if_depth;
          s.pp = Pp::eol_only;
          break;
        case pp_pragma:
          s.pp = Pp::pragma;
          break;
        default:
          break;
      }
      return;
    case Pp::define_name:
      set_scope(s, k.local, kScopeMacro);
      s.pp = Pp::after_macro_name;
      return;
    case Pp::after_macro_name:
      if (k.cat == Cat::macro_open) {
        s.pp = Pp::macro_param_first;
      } else if (k.cat == Cat::eol) {
        end_pp_line(s);
      } else {
        s.pp = Pp::body;
        apply_code_word(s, k, true);
      }
      return;
    case Pp::macro_param_first:
    case Pp::macro_param_next:
      s.pp = k.cat == Cat::close_paren ? Pp::body : Pp::macro_param_sep;
      s.last = Last::other;
      return;
    case Pp::macro_param_sep:
      s.pp = k.cat == Cat::comma ? Pp::macro_param_next : Pp::body;
      s.last = Last::other;
      return;
    case Pp::body:
    case Pp::if_expr_start:
      if (k.cat == Cat::eol) {
        end_pp_line(s);
        return;
      }
      s.pp = Pp::body;
      apply_code_word(s, k, true);
      return;
    case Pp::undef_name:
    case Pp::ifdef_name:
      if (k.cat == Cat::local && scope_of(s, k.local) == kScopeDead) set_scope(s, k.local, kScopeMacro);
      s.pp = Pp::eol_only;
      return;
    case Pp::eol_only:
      end_pp_line(s);
      return;
    case Pp::pragma:
      s.pp = k.param == pp_unroll ? Pp::unroll : Pp::eol_only;
      return;
    case Pp::unroll:
      if (k.cat == Cat::eol) {
        end_pp_line(s);
      } else {
        s.pp = Pp::unroll_num_start;
        s.digits = 0;
      }
      return;
    case Pp::unroll_num_start:
      s.pp = Pp::unroll_num;
      s.digits = 1;
      return;
    case Pp::unroll_num:
      if (k.cat == Cat::eol) {
        end_pp_line(s);
      } else {
        ++s.digits;
      }
      return;
    case Pp::none:
      return;
  }
}

// A code token outside a preprocessor line: scopes, brackets and locals, the kernel declaration,
// the declarator.
void apply_code_token(const Tables& t, State& s, const TokenInfo& k) {
  const bool macro = k.cat == Cat::local && scope_of(s, k.local) == kScopeMacro;
  const bool declares =
      k.cat == Cat::local && new_local_allowed(s) && s.declarator == kTypeDeclarator && !macro;
  if (s.decl == Decl::none || s.decl == Decl::external) advance_scopes(s, k);
  apply_code_word(s, k, false);
  advance_declaration(t, s, k);
  if (s.pp == Pp::none) {
    advance_declarator(s, k);
    advance_role(s, k, declares, macro);
  }
}

void apply_code(const Tables& t, State& s, const TokenInfo& k) {
  if (s.num != Num::off) {
    if (k.cat == Cat::digit) {
      bool u;
      std::uint8_t l;
      char lcase;
      s.num = num_next(s, static_cast<char>(k.param), u, l, lcase);
      s.num_u = u;
      s.num_l = l;
      s.num_lcase = lcase;
      ++s.num_len;
      return;
    }
    s.num = Num::off;
    s.last = Last::other;
  }
  if (s.pp != Pp::none) return apply_pp(s, k);
  apply_code_token(t, s, k);
}

bool allows_raw(const Tables& t, const State& s, TokenId id, int& width) {
  width = 0;
  const TokenInfo& k = t.info[static_cast<std::size_t>(id)];
  if (s.done) return false;
  switch (s.phase) {
    case Phase::start:
      return k.cat == Cat::format;
    case Phase::format_name:
      return k.cat == Cat::format_name;
    case Phase::format_key: {
      if (s.format == static_cast<int>(reward::Format::sell)) {
        return id == (s.key == 0 ? t.key_c : t.key_sigma);
      }
      return id == (s.key == 0 ? t.key_r : t.key_c);
    }
    case Phase::format_num_start:
      return k.cat == Cat::num;
    case Phase::format_num: {
      if (k.cat == Cat::digit) {
        const char c = static_cast<char>(k.param);
        if (!is_dec(c) || (s.digits == 0 && c == '0')) return false;
        return s.value * 10 + (c - '0') <= format_key_max(s.format, s.key);
      }
      if (s.digits == 0) return false;
      if (s.key == 0) {
        return id == (s.format == static_cast<int>(reward::Format::sell) ? t.key_sigma : t.key_c);
      }
      return k.cat == Cat::eol;
    }
    case Phase::format_eol:
      return k.cat == Cat::eol;
    case Phase::launch_start:
      if (k.cat == Cat::launch) return s.launches < reward::kMaxLaunches;
      if (s.launches == 0) return false;
      return code_word_allows(t, s, k, false);
    case Phase::launch_name:
      // A kernel name is one of the first kMaxKernelLocal locals (a bit of launched / defined).
      return k.cat == Cat::local && k.local <= s.locals_used && k.local < t.locals &&
             k.local < kMaxKernelLocal;
    case Phase::launch_key:
      return k.cat == Cat::key_grid;
    case Phase::expr: {
      if (!expr_allows(t, s, k, width)) return false;
      if (k.cat == Cat::key_block || k.cat == Cat::key_smem || k.cat == Cat::eol) return true;
      State after = s;
      apply_expr(after, k, width);
      return after.chars + expr_close_chars(after) <=
             static_cast<int>(reward::kMaxLaunchExprLength);
    }
    case Phase::code:
      return code_allows(t, s, k);
  }
  return false;
}

void apply(const Tables& t, State& s, TokenId id) {
  const TokenInfo& k = t.info[static_cast<std::size_t>(id)];
  ++s.tokens;
  if (k.cat == Cat::eos) {
    s.done = true;
    return;
  }
  switch (s.phase) {
    case Phase::start:
      s.phase = Phase::format_name;
      return;
    case Phase::format_name:
      s.format = k.param;
      s.key = 0;
      s.phase = is_param_format(s.format) ? Phase::format_key : Phase::format_eol;
      return;
    case Phase::format_key:
      s.phase = Phase::format_num_start;
      return;
    case Phase::format_num_start:
      s.phase = Phase::format_num;
      s.digits = 0;
      s.value = 0;
      return;
    case Phase::format_num:
      if (k.cat == Cat::digit) {
        s.value = s.value * 10 + (static_cast<char>(k.param) - '0');
        ++s.digits;
        return;
      }
      if (k.cat == Cat::eol) {
        s.phase = Phase::launch_start;
        return;
      }
      s.key = 1;  // the second key
      s.phase = Phase::format_num_start;
      return;
    case Phase::format_eol:
      s.phase = Phase::launch_start;
      return;
    case Phase::launch_start:
      if (k.cat == Cat::launch) {
        ++s.launches;
        s.phase = Phase::launch_name;
        return;
      }
      s.phase = Phase::code;
      apply_code_token(t, s, k);
      return;
    case Phase::launch_name:
      if (k.local == s.locals_used) ++s.locals_used;
      if (k.local < kMaxKernelLocal) {
        s.launched = static_cast<std::uint16_t>(s.launched | (1u << k.local));
      }
      s.phase = Phase::launch_key;
      return;
    case Phase::launch_key:
      s.phase = Phase::expr;
      s.which = 0;
      s.es = Expr::operand;
      s.nframes = 0;
      s.unary = 0;
      s.chars = 0;
      return;
    case Phase::expr: {
      int width = 0;
      expr_allows(t, s, k, width);
      apply_expr(s, k, width);
      return;
    }
    case Phase::code:
      apply_code(t, s, k);
      return;
  }
}

}  // namespace

std::string_view to_string(MaskMode mode) { return mode == MaskMode::none ? "none" : "syntax"; }

std::optional<MaskMode> parse_mask_mode(std::string_view text) {
  if (text == "none") return MaskMode::none;
  if (text == "syntax") return MaskMode::syntax;
  return std::nullopt;
}

ActionMask::ActionMask(std::shared_ptr<const Vocabulary> vocabulary, MaskMode mode, int max_tokens)
    : vocabulary_(std::move(vocabulary)),
      state_(std::make_unique<State>()),
      mode_(mode),
      max_tokens_(max_tokens) {
  if (!vocabulary_) throw std::invalid_argument("ActionMask needs a vocabulary");
  if (max_tokens < 1 || (mode == MaskMode::syntax && max_tokens < kMinSyntaxTokens)) {
    throw std::invalid_argument("max_tokens = " + std::to_string(max_tokens) + ": the " +
                                std::string(to_string(mode)) + " mask needs at least " +
                                std::to_string(mode == MaskMode::syntax ? kMinSyntaxTokens : 1) +
                                " (the shortest complete program)");
  }
  // Tables depend only on the vocabulary: share them between the masks of one vocabulary.
  static std::mutex mutex;
  static std::vector<std::pair<std::weak_ptr<const Vocabulary>, std::shared_ptr<const Tables>>>
      cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& [vocab, tables] : cache) {
      if (auto v = vocab.lock(); v && v.get() == vocabulary_.get()) tables_ = tables;
    }
    if (!tables_) {
      tables_ = std::make_shared<const Tables>(*vocabulary_);
      cache.erase(std::remove_if(cache.begin(), cache.end(),
                                 [](const auto& e) { return e.first.expired(); }),
                  cache.end());
      cache.emplace_back(vocabulary_, tables_);
    }
  }
}

ActionMask::~ActionMask() = default;
ActionMask::ActionMask(const ActionMask& other)
    : vocabulary_(other.vocabulary_),
      tables_(other.tables_),
      state_(std::make_unique<State>(*other.state_)),
      mode_(other.mode_),
      max_tokens_(other.max_tokens_) {}
ActionMask& ActionMask::operator=(const ActionMask& other) {
  if (this != &other) {
    vocabulary_ = other.vocabulary_;
    tables_ = other.tables_;
    state_ = std::make_unique<State>(*other.state_);
    mode_ = other.mode_;
    max_tokens_ = other.max_tokens_;
  }
  return *this;
}
ActionMask::ActionMask(ActionMask&&) noexcept = default;
ActionMask& ActionMask::operator=(ActionMask&&) noexcept = default;

int ActionMask::tokens() const { return state_->tokens; }

void ActionMask::reset() { *state_ = State{}; }

int ActionMask::min_completion() const {
  return mode_ == MaskMode::syntax ? completion(*tables_, *state_) : 1;
}

void ActionMask::fill(std::span<std::uint8_t> mask) const {
  const Tables& t = *tables_;
  const State& s = *state_;
  const std::size_t n = t.info.size();
  if (mask.size() != n) {
    throw std::invalid_argument("action mask of size " + std::to_string(mask.size()) +
                                " for a vocabulary of " + std::to_string(n));
  }
  if (mode_ == MaskMode::none) {
    std::fill(mask.begin(), mask.end(), std::uint8_t{1});
    mask[static_cast<std::size_t>(vocabulary_->pad())] = 0;
    mask[static_cast<std::size_t>(vocabulary_->bos())] = 0;
    return;
  }
  int width = 0;
  if (s.done) {
    std::fill(mask.begin(), mask.end(), std::uint8_t{0});
    return;
  }
  const bool plain_code =
      (s.phase == Phase::code || (s.phase == Phase::launch_start && s.launches > 0)) &&
      s.num == Num::off && s.last != Last::access && (s.pp == Pp::none || s.pp == Pp::body) &&
      s.decl == Decl::none;  // a declaration is never open on a preprocessor line
  if (plain_code) {
    const bool in_pp = s.pp != Pp::none;
    const std::vector<std::uint8_t>& base = in_pp ? t.pp_base : t.code_ctx[s.ctx];
    std::memcpy(mask.data(), base.data(), n);
    const bool local_fits = in_pp || ((t.local_follows >> s.ctx) & 1u) != 0;
    for (int i = 0; i < s.locals_used && i < t.locals; ++i) {
      mask[static_cast<std::size_t>(vocabulary_->local(i))] =
          local_fits && (in_pp || known_local_allowed(s, i)) ? 1 : 0;
    }
    for (TokenId id : t.format_constants) {
      mask[static_cast<std::size_t>(id)] =
          base[static_cast<std::size_t>(id)] != 0 &&
                  (in_pp || constant_in_format(s, t.info[static_cast<std::size_t>(id)]))
              ? 1
              : 0;
    }
    if (s.locals_used < t.locals) {
      mask[static_cast<std::size_t>(vocabulary_->local(s.locals_used))] =
          local_fits && (in_pp || new_local_allowed(s)) ? 1 : 0;
    }
    if (!in_pp && (s.ctx == ctx_qual || s.ctx == ctx_type)) {
      for (TokenId id : t.type_words) {
        const auto i = static_cast<std::size_t>(id);
        mask[i] = t.code_base[i] != 0 && type_run_takes(s.run, t.info[i].type_bits) ? 1 : 0;
      }
    }
    if (in_pp ? s.pp_depth == kMaxPpDepth : s.depth == kMaxCodeDepth) {
      for (std::size_t i = 0; i < n; ++i) {
        const Cat c = t.info[i].cat;
        if (c == Cat::open_paren || c == Cat::open_bracket || c == Cat::open_brace) mask[i] = 0;
      }
    }
    // closers, <eol>, <eos>
    for (const char* text : {")", "]", "}"}) {
      const TokenId id = vocabulary_->id(TokenClass::punct, text);
      mask[static_cast<std::size_t>(id)] =
          code_word_allows(t, s, t.info[static_cast<std::size_t>(id)], in_pp) ? 1 : 0;
    }
    mask[static_cast<std::size_t>(t.eol)] =
        code_word_allows(t, s, t.info[static_cast<std::size_t>(t.eol)], in_pp);
    mask[static_cast<std::size_t>(t.eos)] =
        code_word_allows(t, s, t.info[static_cast<std::size_t>(t.eos)], in_pp);
    if (s.phase == Phase::launch_start) {
      mask[static_cast<std::size_t>(t.launch_token)] = s.launches < reward::kMaxLaunches ? 1 : 0;
    }
  } else {
    std::fill(mask.begin(), mask.end(), std::uint8_t{0});
    const auto consider = [&](TokenId id) {
      mask[static_cast<std::size_t>(id)] = allows_raw(t, s, id, width) ? 1 : 0;
    };
    switch (s.phase) {
      case Phase::start:
        consider(t.format_token);
        break;
      case Phase::launch_start:
        consider(t.launch_token);
        break;  // no launch yet
      case Phase::format_name:
      case Phase::format_key:
      case Phase::format_num_start:
      case Phase::format_num:
      case Phase::format_eol:
      case Phase::launch_name:
      case Phase::launch_key:
      case Phase::expr:
        for (TokenId id : t.directive_candidates) consider(id);
        break;
      case Phase::code:
        if (s.num != Num::off && num_accepting(s.num)) {
          for (std::size_t i = 0; i < n; ++i) consider(static_cast<TokenId>(i));
        } else if (s.num != Num::off) {
          for (TokenId id : t.digits) consider(id);
        } else if (s.last == Last::access) {
          for (std::size_t i = 0; i < n; ++i) {
            const Cat c = t.info[i].cat;
            if (c == Cat::member || c == Cat::local) consider(static_cast<TokenId>(i));
          }
        } else if (s.pp == Pp::after_macro_name || s.pp == Pp::if_expr_start ||
                   s.decl != Decl::none) {
          for (std::size_t i = 0; i < n; ++i) consider(static_cast<TokenId>(i));
        } else {
          for (TokenId id : t.pp_candidates) consider(id);
        }
        break;
    }
  }
  // The budget: keep only tokens after which the program can still be completed in time.
  const int remaining_after = max_tokens_ - s.tokens - 1;
  if (remaining_after - completion(t, s) >= t.max_delta) return;
  std::vector<int> cache(static_cast<std::size_t>(t.effects), -1);
  for (std::size_t i = 0; i < n; ++i) {
    if (mask[i] == 0) continue;
    const TokenInfo& k = t.info[i];
    if (k.cat == Cat::eos) {
      if (remaining_after < 0) mask[i] = 0;
      continue;
    }
    // A launch name adds a declaration to the completion unless the kernel is launched already:
    // locals differ there, so each is tried.
    int own = -1;
    int& m = s.phase == Phase::launch_name ? own : cache[static_cast<std::size_t>(k.effect)];
    if (m < 0) {
      State after = s;
      apply(t, after, static_cast<TokenId>(i));
      m = completion(t, after);
    }
    if (m > remaining_after) mask[i] = 0;
  }
}

bool ActionMask::allows(TokenId token) const {
  if (token < 0 || static_cast<std::size_t>(token) >= tables_->info.size()) return false;
  if (mode_ == MaskMode::none) return token != vocabulary_->pad() && token != vocabulary_->bos();
  const Tables& t = *tables_;
  const State& s = *state_;
  int width = 0;
  if (!allows_raw(t, s, token, width)) return false;
  const int remaining_after = max_tokens_ - s.tokens - 1;
  if (remaining_after < 0) return false;
  if (token == t.eos) return true;
  State after = s;
  apply(t, after, token);
  return completion(t, after) <= remaining_after;
}

void ActionMask::advance(TokenId token) {
  if (!allows(token)) {
    throw std::invalid_argument("token " + std::to_string(token) + " (" +
                                vocabulary_->describe(token) + ") is not allowed by the " +
                                std::string(to_string(mode_)) + " mask after " +
                                std::to_string(state_->tokens) + " tokens");
  }
  if (mode_ == MaskMode::none) {
    ++state_->tokens;
    return;
  }
  apply(*tables_, *state_, token);
}

}  // namespace sparserl::env
