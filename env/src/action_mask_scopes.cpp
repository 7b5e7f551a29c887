// The scopes of the syntax mask's code: which names a block holds and when they leave it
// (known_local_allowed, close_block, advance_scopes), the declarator state a code token leaves
// (advance_declarator), what may follow a declaration list's `,` (list_declarator_refuses), a
// declarator's name due (unnamed_declarator), where no declaration may stand - a for
// statement's later clauses, a loop's or an if's one statement (misplaced_declaration) - which
// reference a block may declare (block_reference: a const value's alone) and where a declaration
// list's initializer stands (in_declarator_list). Split from action_mask_code.cpp, whose
// code-token rules call these.
//
// A name used in code must be in scope, and a block must not declare a name twice (the two
// commonest compile errors of sampled programs after undeclared names). The model is C++'s, kept
// lenient wherever it cannot be sure: a name declared inside parentheses (a for statement's, a
// function's parameters) is bound to the block that follows, or else held by the enclosing block
// until it closes; the file scope and parenthesised declarations may redeclare; macros and tags
// (struct, enum, goto, ...) are allowed everywhere; locals past kScopedLocals are not tracked.
#include <algorithm>

#include "action_mask_internal.hpp"

namespace sparserl::env::detail {
namespace {

bool free_scope(std::uint8_t scope) { return scope == kScopeTag || scope == kScopeMacro; }
int block_level(std::uint8_t scope) { return (scope & ~kScopeSoft) - 1; }
bool in_parens(const State& s) {
  const std::uint8_t open = innermost(s);
  return open == '(' || open == kCastParen || open == kSizeofParen || open == kCallParen ||
         open == kParamParen || open == kCondParen || open == kLoopCondParen ||
         open == kDerefParen || is_for_paren(open);
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

}  // namespace

// A known local in code (not after `.` / `->`): where a name is used, one in scope; where one is
// declared, anything but a second declaration in the same block.
bool known_local_allowed(const State& s, int local) {
  const std::uint8_t scope = scope_of(s, local);
  if (!new_local_allowed(s)) return scope != kScopeDead;
  // A function's parameters: each name once (NVRTC: "duplicate parameter name").
  if (innermost(s) == kParamParen && scope == block_scope(s.braces + 1, true)) return false;
  if (scope == kScopeDead || free_scope(scope) || (scope & kScopeSoft) != 0) return true;
  if (s.declarator == kTagDeclarator || in_parens(s) || s.braces == 0) return true;
  return block_level(scope) != s.braces;
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
// s.declarator and s.last still those before the token). Braces move in take_open / take_close.
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

// The declarator state after a code token (outside preprocessor lines; brackets already moved).
// After a local only a name may follow directly: `v3 * v9` stays an expression (a pointer to a
// user type is `T* name` only for built-in types and value_t here).
void advance_declarator(State& s, const TokenInfo& k) {
  const std::uint8_t was = s.declarator;
  if (k.naming == TokenInfo::naming_type) {
    s.declarator = kTypeDeclarator;
  } else if (k.naming == TokenInfo::naming_tag) {
    s.declarator = kTagDeclarator;
  } else if (k.cat == Cat::local) {
    s.declarator = kNameDeclarator;
  } else if (was != kTypeDeclarator || k.naming != TokenInfo::naming_keep) {
    s.declarator = 0;
  }
  if (k.cat == Cat::local && was != 0) {  // a name
    // One at another depth than the list under way (a macro's name before it, read as a type:
    // `fmin(M v` inside a void declaration's initializer) starts a list of its own, which is no
    // void declaration's - else its `,` stayed refused where the call's completion writes one.
    if (s.list_depth >= 0 && s.list_depth != static_cast<int>(s.depth)) s.decl_void = false;
    s.list_depth = static_cast<std::int8_t>(s.depth);
  }
  if (k.cat == Cat::comma && s.depth == s.list_depth) s.declarator = kTypeDeclarator;
  // A bracket or `;` before any name: the void was no declaration's type (`void(`, `void;`).
  if ((opens_bracket(k) || k.cat == Cat::semi) && s.list_depth < 0) s.decl_void = false;
  if (s.list_depth >= 0 &&
      (s.depth < s.list_depth || (k.cat == Cat::semi && s.depth == s.list_depth))) {
    s.list_depth = -1;
    s.decl_void = false;
  }
}

// Right after a declaration list's `,` in a block or a for statement's first clause (`int a = 1,
// `): a declarator comes - a name, `*`, `&` or a preprocessor line; no number, constant or other
// operand (NVRTC: "expected an identifier" of `int a = 1, 5;`, `, M;`). The completion path
// writes the name; in a const declaration, whose name would owe an initializer, `*` and the name
// (`const bool* p{}, M;`: "expected an identifier"). Left alone where no new name is left.
bool list_declarator_refuses(const Tables& t, const State& s, const TokenInfo& k) {
  if (s.ctx != ctx_operand_due || s.declarator != kTypeDeclarator || on_line(s) ||
      s.list_depth != static_cast<int>(s.depth) || !new_local_allowed(s) ||
      s.locals_used >= t.locals) {
    return false;
  }
  return k.cat != Cat::local && k.role != role_ptr && k.cat != Cat::hash;
}

// After a variable of a CUDA vector type: `.` and what ends an operand (`=`, `,`, `;`, closers, `:`,
// a preprocessor line); no other operator, no `->` (see State::vector_operand; CUDA's vector types
// have no operators).
bool vector_operand_refuses(const State& s, const TokenInfo& k) {
  // (A block's variable: a file-scope name is a device function's, ctx_callable.)
  if (!s.vector_operand || on_line(s) || (s.ctx != ctx_operand && s.ctx != ctx_const_element)) {
    return false;
  }
  if (k.cat == Cat::access) return k.arrow;
  return !k.plain_assign && k.cat != Cat::comma && k.cat != Cat::semi &&
         k.cat != Cat::close_paren && k.cat != Cat::close_bracket && k.cat != Cat::close_brace &&
         k.ternary != 2 && k.cat != Cat::hash;
}

// Right after a declaration's `*` / `&` in a block or a for statement's first clause, with a new
// name left to declare: the name comes before `;` or `,` (NVRTC: "expected an identifier" of
// `int *;`, `void* , p;`); the completion path writes it. Not judged on a preprocessor line, but
// counted through it (the count may not grow at its <eol>). Not in a const declaration, whose
// reference would then need an initializer (`__shared__ const int& v` can take none).
bool unnamed_declarator(const Tables& t, const State& s) {
  return s.ctx == ctx_ptr && !s.decl_const && s.top == Top::body && s.decl == Decl::none &&
         (innermost(s) == '{' || innermost(s) == kForParen) && s.declarator != 0 &&
         s.locals_used < t.locals;  // (new_local_allowed() but State::last, which a line moves)
}

// A type word at the start of a for statement's condition or step: a declaration there declares
// nothing, or its condition is one (NVRTC: "declaration does not declare anything" of `for
// (unsigned i; long; size_t)`). `for (; int(x) < n;)` and `for (; int j = n;)` go with it.
// Nor a type word or a qualifier where a loop's or an if's one statement starts (no block): the
// declaration's scope would be that statement alone, and the grammar keeps its name in scope
// after it (NVRTC: "identifier \"s\" is undefined" of `for (;;) const short s {}; s - 1;`).
// `for (...) int x = f();` goes with it.
bool misplaced_declaration(const State& s, const TokenInfo& k) {
  if (on_line(s)) return false;
  if (s.ctx == ctx_paren) {
    return (k.role == role_type || k.role == role_qual) && (s.loop_pending || s.if_pending);
  }
  const std::uint8_t open = innermost(s);
  return k.role == role_type && s.ctx == ctx_start &&
         (open == kForParen + 1 || open == kForParen + 2);
}

// A declaration's `&` in a block or a for statement's first clause, but a const value's (`const
// int& r`, which binds any value of its type): a reference to a variable or to a pointer binds an
// lvalue of its type alone, which the grammar does not know, and needs one (NVRTC: "reference
// variable \"r\" requires an initializer" of `void *&r;`, "initial value of reference to
// non-const must be an lvalue" of `int& r = 1;`). `int& c = b;` goes with them; parameters, casts
// and the corpus declare none. The completion path writes no `&`.
bool block_reference(const State& s, const TokenInfo& k) {
  if (k.role != role_ptr || k.cat == Cat::star || on_line(s) || s.top != Top::body ||
      s.decl != Decl::none || (s.ctx != ctx_type && s.ctx != ctx_ptr && s.ctx != ctx_qual)) {
    return false;
  }
  const std::uint8_t open = innermost(s);
  return (open == '{' || open == kForParen) && (!s.decl_const || s.starred);
}

// Inside a declaration list's initializer, the token's brackets moved: deeper than the list in a
// bracket that is no block or parameter list, or back at its depth after closing one (`const int
// a{f(1)}, b;`: `b` is const and owes an initializer, NVRTC "const variable \"b\" requires an
// initializer"). A `const` there is a cast's.
bool in_declarator_list(const State& s, std::uint8_t closed) {
  if (s.list_depth < 0 || s.depth < s.list_depth) return false;
  const std::uint8_t first =
      s.depth > s.list_depth ? s.stack[static_cast<std::size_t>(s.list_depth)] : closed;
  return first != 0 && first != '{' && first != kParamParen;
}

}  // namespace sparserl::env::detail
