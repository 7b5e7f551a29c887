// The lexer (what is code, what is a comment or a literal, as the compiler sees it) and the
// directive parser (every directive form and every way to get one wrong).
#include "sparserl/reward/program.hpp"

#include <algorithm>

#include "catch.hpp"
#include "test_support.hpp"

using namespace sparserl::reward;
using sparserl::testing::has_substring;

namespace {

std::vector<std::string> texts(const LexResult& r) {
  std::vector<std::string> out;
  for (const Token& t : r.tokens) out.push_back(t.text);
  return out;
}

bool has_token(const LexResult& r, const std::string& text) {
  return std::any_of(r.tokens.begin(), r.tokens.end(),
                     [&](const Token& t) { return t.text == text; });
}

const Token& token(const LexResult& r, const std::string& text) {
  for (const Token& t : r.tokens) {
    if (t.text == text) return t;
  }
  FAIL("no token " << text);
  return r.tokens.front();
}

ProgramError parse_error(const std::string& text) {
  const ParseResult p = parse_program(text);
  INFO(text);
  REQUIRE_FALSE(p.ok());
  return p.error;
}

const std::string kKernel =
    "extern \"C\" __global__ void k(const int* a, const int* b, const value_t* v, const value_t* "
    "x, "
    "value_t* y) {}\n";

}  // namespace

TEST_CASE("the lexer skips comments and literals but keeps their place", "[reward][program]") {
  const LexResult r = lex("int a; // clock()\n/* clock64 */ b = \"clock\" + 'c';\n");
  REQUIRE(r.ok());
  CHECK(texts(r) ==
        std::vector<std::string>{"int", "a", ";", "b", "=", "\"clock\"", "+", "'c'", ";"});
  CHECK(token(r, "b").line == 2);
  CHECK(token(r, "b").column == 15);
  CHECK(token(r, "\"clock\"").kind == TokenKind::string);
  CHECK(token(r, "'c'").kind == TokenKind::character);
}

TEST_CASE("the lexer reads raw strings, prefixes and digit separators whole", "[reward][program]") {
  // A naive lexer would end the raw string at the first quote and see clock() as code, or open a
  // character literal at 1'000 and swallow the code after it.
  LexResult r = lex("auto s = R\"x(\" clock() )\" )x\"; int n = 1'000'000; auto w = u8\"a\";");
  REQUIRE(r.ok());
  CHECK_FALSE(has_token(r, "clock"));
  CHECK(has_token(r, "1'000'000"));
  CHECK(has_token(r, "u8\"a\""));
  CHECK(has_token(r, "n"));
  r = lex("float f = 1.5e-3f + .5 + 0x1fu;");
  CHECK(texts(r) ==
        std::vector<std::string>{"float", "f", "=", "1.5e-3f", "+", ".5", "+", "0x1fu", ";"});
}

TEST_CASE("the lexer splices backslash-newline like the compiler", "[reward][program]") {
  LexResult r = lex("int x = clo\\\nck();");
  REQUIRE(r.ok());
  CHECK(has_token(r, "clock"));
  // A line comment continued by a backslash hides the next line from the compiler too.
  r = lex("// note \\\nclock();\nint y;");
  CHECK_FALSE(has_token(r, "clock"));
  CHECK(token(r, "y").line == 3);
  // With a blank after the backslash, or a lone carriage return, the lexer sees code (the safe
  // side).
  r = lex("// note \\ \nclock();");
  CHECK(has_token(r, "clock"));
  r = lex("// note\rclock();");
  CHECK(has_token(r, "clock"));
}

TEST_CASE("the lexer folds digraphs and finds <<<", "[reward][program]") {
  LexResult r = lex("%:include <x>\n#define P(a) a %:%: b\nk<<<1, 1>>>();");
  REQUIRE(r.ok());
  CHECK(r.tokens[0].text == "#");
  CHECK(r.tokens[0].pp_line == 0);
  CHECK(r.tokens[0].line_start);
  CHECK(has_token(r, "##"));
  CHECK(has_token(r, "<<<"));
  CHECK(token(r, "k").pp_line == -1);
}

TEST_CASE("the lexer marks preprocessor lines, continued through block comments",
          "[reward][program]") {
  const LexResult r = lex("#define A /*\n*/ clock\nint b;\n  # if 1\n#endif");
  REQUIRE(r.ok());
  CHECK(token(r, "clock").pp_line == 0);
  CHECK(token(r, "int").pp_line == -1);
  CHECK(token(r, "if").pp_line == 1);
  CHECK(token(r, "endif").pp_line == 2);
}

TEST_CASE("the lexer reports stray characters and unterminated text", "[reward][program]") {
  LexResult r = lex("int a = \\u0063lock;");
  REQUIRE(r.ok());
  CHECK(token(r, "\\").kind == TokenKind::other);
  r = lex("int a; /* open");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error->message, has_substring("unterminated /*"));
  r = lex("const char* s = \"abc\nint x;");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error->message, has_substring("unterminated string"));
  CHECK(r.error->line == 1);
  r = lex("auto s = R\"(never closed");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error->message, has_substring("raw string"));
}

TEST_CASE("directives are line comments that start with //@", "[reward][program]") {
  const LexResult r =
      lex("//@format csr\n  //@launch k grid=1 block=1\nint a; //@launch x\n// @format\n");
  REQUIRE(r.directives.size() == 3);
  CHECK(r.directives[0].text == "format csr");
  CHECK(r.directives[0].alone);
  CHECK(r.directives[1].line == 2);
  CHECK(r.directives[1].column == 3);
  CHECK(r.directives[1].alone);
  CHECK_FALSE(r.directives[2].alone);
}

TEST_CASE("a program's format and launches are parsed", "[reward][program]") {
  const std::string text =
      "// SpMV, two launches\n"
      "//@launch zero grid=ceil_div(M, 256) block=256\n" +
      kKernel +
      "//@format sell C=32 sigma=256\n"
      "//@launch k grid=ceil_div(SELL_SLICES * SELL_C, 128)  block=128 smem=128 * 4\n"
      "//@launch zero grid=1 block=32\n";
  const ParseResult p = parse_program(text);
  INFO(p.error.message);
  REQUIRE(p.ok());
  const Program& prog = *p.program;
  CHECK(prog.format.format == Format::sell);
  CHECK(prog.format.params.sell_c == 32);
  CHECK(prog.format.params.sell_sigma == 256);
  CHECK(prog.format_line == 4);
  REQUIRE(prog.launches.size() == 3);
  CHECK(prog.launches[0].kernel == "zero");
  CHECK(prog.launches[0].line == 2);
  CHECK(prog.launches[0].smem.text() == "0");
  CHECK(prog.launches[1].grid.text() == "ceil_div(SELL_SLICES * SELL_C, 128)");
  CHECK(prog.launches[1].block.text() == "128");
  CHECK(prog.launches[1].smem.text() == "128 * 4");
  CHECK(prog.launches[1].grid_column == 18);
  CHECK(prog.kernel_names() == std::vector<std::string>{"zero", "k"});
  CHECK(prog.text == text);

  const ParseResult b = parse_program("//@format bsr R=4 C=2\n//@launch k grid=BSR_MB block=64\n");
  REQUIRE(b.ok());
  CHECK(b.program->format.params.bsr_r == 4);
  CHECK(b.program->format.params.bsr_c == 2);
}

TEST_CASE("directive errors name the problem, line and column", "[reward][program]") {
  const std::string launch = "//@launch k grid=1 block=32\n";
  ProgramError e = parse_error(launch + kKernel);
  CHECK_THAT(e.message, has_substring("no //@format"));

  e = parse_error("//@format csr\n//@format coo\n" + launch);
  CHECK(e.line == 2);
  CHECK_THAT(e.message, has_substring("a second //@format"));

  e = parse_error("//@format csr\n//@lanuch k grid=1 block=1\n");
  CHECK(e.line == 2);
  CHECK_THAT(e.message, has_substring("unknown directive //@lanuch"));

  e = parse_error("//@format csr\nint a; //@launch k grid=1 block=1\n");
  CHECK_THAT(e.message, has_substring("line of its own"));

  e = parse_error("//@format hyb\n" + launch);
  CHECK(e.line == 1);
  CHECK(e.column == 11);
  CHECK_THAT(e.message, has_substring("unknown format 'hyb'"));

  CHECK_THAT(parse_error("//@format sell C=32\n" + launch).message, has_substring("sigma="));
  CHECK_THAT(parse_error("//@format sell C=0 sigma=1\n" + launch).message,
             has_substring("C must be in 1..1024"));
  CHECK_THAT(parse_error("//@format bsr R=4 C=64\n" + launch).message,
             has_substring("R and C must be in 1..32"));
  CHECK_THAT(parse_error("//@format sell C=32 sigma=1 R=2\n" + launch).message,
             has_substring("does not take 'R'"));
  CHECK_THAT(parse_error("//@format csr C=2\n" + launch).message, has_substring("no parameters"));
  CHECK_THAT(parse_error("//@format bsr R=x C=2\n" + launch).message,
             has_substring("decimal integer"));
  CHECK_THAT(parse_error("//@format bsr R=2 R=2 C=2\n" + launch).message,
             has_substring("given twice"));

  CHECK_THAT(parse_error("//@format csr\n" + kKernel).message, has_substring("no //@launch"));
  std::string nine = "//@format csr\n";
  for (int i = 0; i < 9; ++i) nine += launch;
  e = parse_error(nine);
  CHECK(e.line == 10);
  CHECK_THAT(e.message, has_substring("more than 8"));
}

TEST_CASE("launch directive errors point into the expression", "[reward][program]") {
  ProgramError e = parse_error("//@format csr\n//@launch k grid=1\n");
  CHECK_THAT(e.message, has_substring("needs block="));
  e = parse_error("//@format csr\n//@launch k block=1\n");
  CHECK_THAT(e.message, has_substring("grid="));
  e = parse_error("//@format csr\n//@launch k grid=1 block=2 grid=3\n");
  CHECK_THAT(e.message, has_substring("'grid' given twice"));
  e = parse_error("//@format csr\n//@launch k grid=1 blocks=2\n");
  CHECK_THAT(e.message, has_substring("unknown launch parameter 'blocks'"));
  e = parse_error("//@format csr\n//@launch grid=1 block=2\n");
  CHECK_THAT(e.message, has_substring("kernel name first"));
  e = parse_error("//@format csr\n//@launch k grid=ceil_div(M, 0x4) block=1\n");
  CHECK(e.line == 2);
  CHECK(e.column == 31);  // the x of 0x4
  CHECK_THAT(e.message, has_substring("decimal integer"));
  e = parse_error("//@format csr\n//@launch k grid=ceil_div(M, ELL_WIDTH) block=1\n");
  CHECK_THAT(e.message, has_substring("unknown name 'ELL_WIDTH'"));
  CHECK(e.column == 30);
  e = parse_error("//@format csr\n//@launch k-1 grid=1 block=1\n");
  CHECK_THAT(e.message, has_substring("kernel name"));
}
