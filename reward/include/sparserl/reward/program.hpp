// A program as a policy writes it: CUDA device code plus directive comments. This file holds the
// lexer every check reads through and the directive parser. The lexer works on the text as the
// compiler's first phases see it (backslash-newline spliced, so `clo\<newline>ck` is `clock`),
// skips comments, string, character and raw-string literals, marks preprocessor lines, and reports
// directives, which are line comments that start with `//@` on a line of their own:
//
//   //@format csr | coo | ell | sell C=<1..1024> sigma=<>=1> | bsr R=<1..32> C=<1..32>
//       exactly one
//   //@launch NAME grid=EXPR block=EXPR [smem=EXPR]
//       1..8 of them, run in order
//
// Any other `//@` comment is an error (a misspelt directive must not silently vanish). A program
// parses without a matrix; its launch expressions are evaluated later against the matrix's
// constants.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/reward/abi.hpp"
#include "sparserl/reward/launch_expr.hpp"

namespace sparserl::reward {

enum class TokenKind {
  identifier,  // also keywords
  number,      // a preprocessing number: 12, 0x1f, 1.5e-3f, 2ull
  string,      // "..." with any prefix (u8, u, U, L) or a raw string R"d(...)d"
  character,   // '...'
  punct,       // operators and punctuation, longest match ("<<", "##", "->", ...)
  other,       // a byte no C++ token starts with (a stray backslash, a non-ASCII byte)
};

struct Token {
  TokenKind kind = TokenKind::punct;
  std::string text;
  int line = 0;             // 1-based, in the original text
  int column = 0;           // 1-based, in the original text
  int pp_line = -1;         // index of the preprocessor line this token belongs to, -1 outside any
  bool line_start = false;  // first token of its (spliced) line
};

// A line comment that starts with `//@`.
struct DirectiveComment {
  std::string text;  // after the `//@`, e.g. "launch spmv grid=ceil_div(M, 4) block=128"
  int line = 0;
  int column = 0;     // of the `//`
  bool alone = true;  // nothing but whitespace before it on its line
};

struct LexError {
  std::string message;
  int line = 0;
  int column = 0;
};

struct LexResult {
  std::vector<Token> tokens;
  std::vector<DirectiveComment> directives;
  std::optional<LexError> error;  // unterminated comment or literal
  [[nodiscard]] bool ok() const { return !error.has_value(); }
};

LexResult lex(std::string_view text);

// The punctuators lex() knows, in the order it tries them (the first that matches wins: longest
// first within a leading character), and what a punctuator means once digraphs are folded (`%:`
// is `#`, `<:` is `[`, ...). For lexers that must read text exactly as lex() does (env's grammar
// mask over BPE tokens).
std::span<const std::string_view> punctuators();
std::string fold_digraph(std::string_view punctuator);

inline constexpr int kMaxLaunches = 8;

struct LaunchDirective {
  std::string kernel;
  LaunchExpr grid, block, smem;  // smem is the literal 0 when the directive has none
  int line = 0;
  // 1-based columns of each expression's first character on the directive's line (error messages).
  int grid_column = 0, block_column = 0, smem_column = 0;
};

struct Program {
  std::string text;  // the program as written (directives included: they are comments to NVRTC)
  FormatSpec format;
  int format_line = 0;
  std::vector<LaunchDirective> launches;  // in run order

  // The distinct launched kernel names, in order of first launch.
  [[nodiscard]] std::vector<std::string> kernel_names() const;
};

struct ProgramError {
  std::string message;  // names the directive and what was expected
  int line = 0;
  int column = 0;
};

struct ParseResult {
  std::optional<Program> program;
  ProgramError error;  // meaningful when !ok()
  [[nodiscard]] bool ok() const { return program.has_value(); }
};

// Reads the directives: one valid //@format, 1..kMaxLaunches //@launch lines whose kernel names are
// identifiers and whose expressions parse with the names the format defines. The code itself is
// not examined (that is static_checks.hpp).
ParseResult parse_program(std::string_view text);

}  // namespace sparserl::reward
