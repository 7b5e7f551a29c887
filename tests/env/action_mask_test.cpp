// The syntax mask's promises: random episodes under it end with <eos> within max_tokens and decode
// to programs whose directives parse and whose brackets balance; <eos> is offered only where the
// program is complete; the mask is never empty; every corpus program's encoding is accepted token
// by token; the `none` mode allows everything but <pad> and <bos>.
#include "sparserl/env/action_mask.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "catch.hpp"
#include "env_test_support.hpp"
#include "sparserl/datasets/random.hpp"
#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/env/tokenizer.hpp"
#include "sparserl/reward/static_checks.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::env;
using fixtures::first_refused;

std::shared_ptr<const Vocabulary> vocab() {
  static const auto v = std::make_shared<const Vocabulary>(Vocabulary::standard());
  return v;
}

// One uniform random episode under the mask; returns the tokens (ending with <eos> when it ended).
std::vector<TokenId> random_episode(ActionMask& mask, datasets::Rng& rng,
                                    std::vector<std::uint8_t>& m, std::vector<TokenId>& allowed) {
  mask.reset();
  std::vector<TokenId> tokens;
  const TokenId eos = vocab()->eos();
  while (static_cast<int>(tokens.size()) < mask.max_tokens()) {
    mask.fill(m);
    allowed.clear();
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (m[i] != 0) allowed.push_back(static_cast<TokenId>(i));
    }
    if (allowed.empty()) {
      FAIL("empty mask after " << tokens.size()
                               << " tokens: " << Tokenizer(vocab()).decode(tokens));
    }
    const TokenId t = allowed[rng.below(allowed.size())];
    mask.advance(t);
    tokens.push_back(t);
    if (t == eos) break;
  }
  return tokens;
}

}  // namespace

TEST_CASE("10,000 random episodes under the syntax mask all parse with balanced brackets",
          "[env][mask]") {
  const Tokenizer tokenizer(vocab());
  datasets::Rng rng(20240611);
  std::vector<std::uint8_t> m(vocab()->size());
  std::vector<TokenId> allowed;
  int episodes = 0, failures = 0;
  std::size_t total_tokens = 0;
  // A spread of budgets, from the shortest program up, so that the budget logic is exercised.
  const int budgets[] = {kMinSyntaxTokens, kMinSyntaxTokens + 1, 46, 54, 70, 96, 128, 200};
  for (int i = 0; i < 10000; ++i) {
    ActionMask mask(vocab(), MaskMode::syntax, budgets[i % 8]);
    const std::vector<TokenId> tokens = random_episode(mask, rng, m, allowed);
    ++episodes;
    total_tokens += tokens.size();
    REQUIRE(!tokens.empty());
    if (tokens.back() != vocab()->eos()) {
      FAIL("episode " << i << " hit max_tokens " << budgets[i % 8]
                      << " without <eos>: " << tokenizer.decode(tokens));
    }
    const std::string program = tokenizer.decode(tokens);
    const reward::ParseResult parsed = reward::parse_program(program);
    if (!parsed.ok() || !fixtures::brackets_balance(program)) {
      ++failures;
      if (failures <= 3) {
        UNSCOPED_INFO("episode " << i << ": " << (parsed.ok() ? "unbalanced" : parsed.error.message)
                                 << "\n"
                                 << program);
      }
    }
    // The decoded program encodes back to the same tokens: the decoder's layout is faithful.
    if (i % 5 == 0 && parsed.ok()) {
      try {
        const EncodedProgram again = tokenizer.encode(program);
        if (again.tokens != tokens) {
          ++failures;
          UNSCOPED_INFO("episode " << i << " does not re-encode to its tokens:\n" << program);
        }
      } catch (const TokenizeError& e) {
        // A random program may call a local it never declares: that is the only refusal allowed.
        CHECK_THAT(std::string(e.what()), sparserl::testing::has_substring("is called but"));
      }
    }
  }
  CHECK(failures == 0);
  CHECK(episodes == 10000);
  INFO("mean episode length " << static_cast<double>(total_tokens) / episodes);
  CHECK(total_tokens > 10000u * static_cast<unsigned>(kMinSyntaxTokens));
}

TEST_CASE("<eos> is offered only where the program is complete", "[env][mask]") {
  const Tokenizer tokenizer(vocab());
  datasets::Rng rng(7);
  std::vector<std::uint8_t> m(vocab()->size());
  std::vector<TokenId> allowed;
  int offers = 0;
  for (int i = 0; i < 300; ++i) {
    ActionMask mask(vocab(), MaskMode::syntax, 200);
    std::vector<TokenId> tokens;
    while (true) {
      mask.fill(m);
      if (m[static_cast<std::size_t>(vocab()->eos())] != 0) {
        // Ending here gives a complete program.
        ++offers;
        std::vector<TokenId> ended = tokens;
        ended.push_back(vocab()->eos());
        const std::string program = tokenizer.decode(ended);
        REQUIRE(reward::parse_program(program).ok());
        REQUIRE(fixtures::brackets_balance(program));
      }
      allowed.clear();
      for (std::size_t k = 0; k < m.size(); ++k) {
        if (m[k] != 0 && static_cast<TokenId>(k) != vocab()->eos())
          allowed.push_back(static_cast<TokenId>(k));
      }
      if (allowed.empty()) break;  // only <eos> left
      const TokenId t = allowed[rng.below(allowed.size())];
      mask.advance(t);
      tokens.push_back(t);
    }
  }
  CHECK(offers > 250);
}

TEST_CASE("the encoding of every corpus program is accepted by the syntax mask", "[env][mask]") {
  const Tokenizer tokenizer(vocab());
  auto corpus = fixtures::reference_corpus();
  for (auto& p : fixtures::design_space_corpus()) corpus.push_back(std::move(p));
  for (const auto& program : corpus) {
    INFO(program.name);
    const EncodedProgram encoded = tokenizer.encode(program.text);
    ActionMask mask(vocab(), MaskMode::syntax, 4096);
    std::vector<std::uint8_t> m(vocab()->size());
    for (std::size_t i = 0; i < encoded.tokens.size(); ++i) {
      mask.fill(m);
      const TokenId t = encoded.tokens[i];
      std::string before;
      for (std::size_t j = i > 16 ? i - 16 : 0; j < i; ++j) {
        before += vocab()->describe(encoded.tokens[j]) + " | ";
      }
      INFO("token " << i << ": " << vocab()->describe(t) << " after: " << before);
      REQUIRE(m[static_cast<std::size_t>(t)] == 1);
      REQUIRE(mask.allows(t));
      mask.advance(t);
    }
  }
}

TEST_CASE("the syntax mask refuses what the grammar forbids", "[env][mask]") {
  const Vocabulary& v = *vocab();
  ActionMask mask(vocab(), MaskMode::syntax, 100);
  // Only <format> first.
  CHECK(mask.allows(v.id(TokenClass::directive, "<format>")));
  CHECK_FALSE(mask.allows(v.eos()));
  CHECK_FALSE(mask.allows(v.id(TokenClass::directive, "<launch>")));
  CHECK_FALSE(mask.allows(v.id(TokenClass::keyword, "extern")));
  mask.advance(v.id(TokenClass::directive, "<format>"));
  mask.advance(v.id(TokenClass::directive, "bsr"));
  CHECK_FALSE(mask.allows(v.id(TokenClass::directive, "C=")));  // bsr takes R= first
  mask.advance(v.id(TokenClass::directive, "R="));
  mask.advance(v.num());
  CHECK_FALSE(mask.allows(v.id(TokenClass::digit, "0")));  // no leading zero, R >= 1
  mask.advance(v.id(TokenClass::digit, "3"));
  CHECK_FALSE(mask.allows(v.id(TokenClass::digit, "3")));  // R = 33 > 32
  CHECK(mask.allows(v.id(TokenClass::digit, "2")));        // R = 32
  CHECK_THROWS_AS(mask.advance(v.id(TokenClass::digit, "9")), std::invalid_argument);
  CHECK(mask.tokens() == 5);

  // A launch may use only the constants of its format.
  ActionMask ell(vocab(), MaskMode::syntax, 100);
  for (const char* t : {"<format>", "csr"}) ell.advance(v.id(TokenClass::directive, t));
  ell.advance(v.eol());
  ell.advance(v.id(TokenClass::directive, "<launch>"));
  CHECK_FALSE(ell.allows(v.local(1)));  // the first local is v0
  ell.advance(v.local(0));
  ell.advance(v.id(TokenClass::directive, "grid="));
  CHECK(ell.allows(v.id(TokenClass::constant, "K")));
  CHECK_FALSE(ell.allows(v.id(TokenClass::constant, "NNZ")));  // 0 on an empty matrix
  CHECK_FALSE(ell.allows(v.id(TokenClass::constant, "ELL_WIDTH")));
  CHECK_FALSE(ell.allows(v.id(TokenClass::constant, "value_t")));
  CHECK_FALSE(ell.allows(v.id(TokenClass::directive, "block=")));  // the expression is empty
  ell.advance(v.id(TokenClass::builtin, "ceil_div"));
  CHECK(ell.allows(v.id(TokenClass::punct, "(")));
  CHECK_FALSE(ell.allows(v.id(TokenClass::constant, "M")));
}

TEST_CASE("a too-small budget for the syntax mask is refused", "[env][mask]") {
  CHECK_THROWS_AS(ActionMask(vocab(), MaskMode::syntax, kMinSyntaxTokens - 1),
                  std::invalid_argument);
  CHECK_NOTHROW(ActionMask(vocab(), MaskMode::syntax, kMinSyntaxTokens));
  CHECK_NOTHROW(ActionMask(vocab(), MaskMode::none, 1));
}

TEST_CASE("the none mask allows every token but <pad> and <bos>", "[env][mask]") {
  ActionMask mask(vocab(), MaskMode::none, 8);
  std::vector<std::uint8_t> m(vocab()->size());
  mask.fill(m);
  std::size_t allowed = 0;
  for (std::uint8_t b : m) allowed += b;
  CHECK(allowed == vocab()->size() - 2);
  CHECK(m[static_cast<std::size_t>(vocab()->pad())] == 0);
  CHECK(m[static_cast<std::size_t>(vocab()->bos())] == 0);
  CHECK(m[static_cast<std::size_t>(vocab()->eos())] == 1);
  CHECK(mask.min_completion() == 1);
  CHECK(parse_mask_mode("syntax") == MaskMode::syntax);
  CHECK(parse_mask_mode("none") == MaskMode::none);
  CHECK_FALSE(parse_mask_mode("grammar").has_value());
}

namespace {

// Advances through `<format> FORMAT [keys] <eol>` and one `<launch> NAME grid= K block= <num> 3 2
// <eol>` per name (names are locals: 0, 1, ...).
void begin_program(ActionMask& mask, reward::Format format, int kernels,
                   std::vector<TokenId>& tokens) {
  const Vocabulary& v = *vocab();
  auto take = [&](TokenId t) {
    mask.advance(t);
    tokens.push_back(t);
  };
  take(v.id(TokenClass::directive, "<format>"));
  take(v.id(TokenClass::directive, reward::to_string(format)));
  auto key = [&](const char* name, const char* digit) {
    take(v.id(TokenClass::directive, name));
    take(v.num());
    take(v.id(TokenClass::digit, digit));
  };
  if (format == reward::Format::sell) {
    key("C=", "4");
    key("sigma=", "1");
  } else if (format == reward::Format::bsr) {
    key("R=", "2");
    key("C=", "2");
  }
  take(v.eol());
  for (int k = 0; k < kernels; ++k) {
    take(v.id(TokenClass::directive, "<launch>"));
    take(v.local(k));
    take(v.id(TokenClass::directive, "grid="));
    take(v.id(TokenClass::constant, "K"));
    take(v.id(TokenClass::directive, "block="));
    take(v.num());
    take(v.id(TokenClass::digit, "3"));
    take(v.id(TokenClass::digit, "2"));
    take(v.eol());
  }
}

// Opens a device function's body, `__device__ void v0 ( ) {` (v0 the launched kernel's name,
// declared again): code at file scope is declarations alone.
void begin_body(ActionMask& mask, std::vector<TokenId>& tokens) {
  const Vocabulary& v = *vocab();
  for (TokenId t :
       {v.id(TokenClass::keyword, "__device__"), v.id(TokenClass::keyword, "void"), v.local(0),
        v.id(TokenClass::punct, "("), v.id(TokenClass::punct, ")"), v.id(TokenClass::punct, "{")}) {
    mask.advance(t);
    tokens.push_back(t);
  }
}

// The code token spelled `text` (punctuation, keyword, constant, builtin or literal).
TokenId id(const char* text) {
  for (TokenClass c : {TokenClass::punct, TokenClass::keyword, TokenClass::constant,
                       TokenClass::builtin, TokenClass::literal}) {
    if (auto found = vocab()->find(c, text)) return *found;
  }
  FAIL("no token " << text);
  return TokenId{0};
}

std::vector<TokenId> allowed_tokens(const ActionMask& mask) {
  std::vector<std::uint8_t> m(vocab()->size());
  mask.fill(m);
  std::vector<TokenId> out;
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (m[i] != 0) out.push_back(static_cast<TokenId>(i));
  }
  return out;
}

}  // namespace

TEST_CASE("a kernel declaration under the syntax mask is the ABI's, in every format",
          "[env][mask]") {
  const Vocabulary& v = *vocab();
  const Tokenizer tokenizer(vocab());
  const TokenId extern_kw = v.id(TokenClass::keyword, "extern");
  const TokenId linkage = v.id(TokenClass::literal, "\"C\"");
  const TokenId global = v.id(TokenClass::keyword, "__global__");
  const TokenId bounds = v.id(TokenClass::keyword, "__launch_bounds__");
  const TokenId void_kw = v.id(TokenClass::keyword, "void");
  const TokenId open_brace = v.id(TokenClass::punct, "{");
  const TokenId close_brace = v.id(TokenClass::punct, "}");
  for (reward::Format format : reward::kFormats) {
    INFO(reward::to_string(format));
    ActionMask mask(vocab(), MaskMode::syntax, 400);
    std::vector<TokenId> tokens;
    begin_program(mask, format, 2, tokens);  // kernels v0 and v1
    auto take = [&](TokenId t) {
      mask.advance(t);
      tokens.push_back(t);
    };
    // The parameter list, one token at a time: where several are allowed they are the names
    // (locals not yet in this declaration; the new one is taken). Returns the names.
    auto parameter_list = [&](TokenId kernel) {
      int names = 0;
      while (true) {
        const std::vector<TokenId> allowed = allowed_tokens(mask);
        REQUIRE(!allowed.empty());
        if (allowed.size() > 1) {
          for (TokenId t : allowed) REQUIRE(v.token(t).cls == TokenClass::local);
          CHECK(std::find(allowed.begin(), allowed.end(), kernel) == allowed.end());
          ++names;
        }
        take(allowed.back());
        if (allowed.back() == open_brace) return names;
      }
    };
    // Outside a declaration: no "C", __global__ or __launch_bounds__.
    CHECK_FALSE(mask.allows(linkage));
    CHECK_FALSE(mask.allows(global));
    CHECK_FALSE(mask.allows(bounds));
    take(extern_kw);
    CHECK(mask.allows(linkage));
    CHECK_FALSE(mask.allows(v.id(TokenClass::keyword, "__shared__")));  // a kernel's at file scope
    take(linkage);
    CHECK(allowed_tokens(mask) == std::vector<TokenId>{global});
    take(global);
    CHECK(allowed_tokens(mask) == std::vector<TokenId>{void_kw});
    take(void_kw);
    // __launch_bounds__ or a launched kernel's name (v1 is launched; v2 would be a new local).
    CHECK(mask.allows(bounds));
    CHECK(mask.allows(v.local(0)));
    CHECK(mask.allows(v.local(1)));
    CHECK_FALSE(mask.allows(v.local(2)));
    take(bounds);
    CHECK(allowed_tokens(mask) == std::vector<TokenId>{v.id(TokenClass::punct, "(")});
    take(v.id(TokenClass::punct, "("));
    CHECK_FALSE(mask.allows(v.id(TokenClass::punct, ")")));  // not empty
    CHECK_FALSE(mask.allows(v.id(TokenClass::punct, ";")));
    take(v.num());
    for (const char* d : {"2", "5", "6"}) take(v.id(TokenClass::digit, d));
    take(v.id(TokenClass::punct, ")"));
    CHECK_FALSE(mask.allows(bounds));  // once
    take(v.local(1));
    CHECK(parameter_list(v.local(1)) ==
          static_cast<int>(reward::signature(reward::Op::spmv, format).args.size()));
    take(close_brace);
    // v0 is still undeclared: no <eos> yet, but a second declaration, whose names may reuse the
    // first one's.
    CHECK_FALSE(mask.allows(v.eos()));
    CHECK(mask.allows(v.id(TokenClass::punct, ";")));
    take(extern_kw);
    take(linkage);
    take(global);
    take(void_kw);
    CHECK_FALSE(mask.allows(v.local(1)));  // declared already
    take(v.local(0));
    parameter_list(v.local(0));
    take(close_brace);
    // Every launched kernel is declared: <eos> may come, and no third declaration.
    CHECK(mask.allows(v.eos()));
    CHECK_FALSE(mask.allows(extern_kw));
    // A macro may not be named after a launched kernel, nor hold __global__ or extern.
    take(v.id(TokenClass::punct, "#"));
    take(v.id(TokenClass::keyword, "define"));
    CHECK_FALSE(mask.allows(v.local(0)));
    CHECK_FALSE(mask.allows(v.local(1)));
    const std::vector<TokenId> names = allowed_tokens(mask);
    REQUIRE(names.size() > 2);
    take(names.back());
    CHECK_FALSE(mask.allows(global));
    CHECK_FALSE(mask.allows(extern_kw));
    take(v.num());
    take(v.id(TokenClass::digit, "1"));
    take(v.eol());
    take(v.eos());
    // The program passes the static check (its kernel rules included) for both ops.
    const std::string text = tokenizer.decode(tokens);
    INFO(text);
    for (reward::Op op : reward::kOps) {
      const reward::StaticCheckResult checked = reward::check_program(text, op);
      if (!checked.ok()) FAIL(checked.failure->str());
    }
  }
}

TEST_CASE("a new local appears only where a name is declared, never inside an expression",
          "[env][mask]") {
  const Vocabulary& v = *vocab();
  ActionMask mask(vocab(), MaskMode::syntax, 400);
  std::vector<TokenId> tokens;
  begin_program(mask, reward::Format::csr, 1, tokens);  // v0 is the launched kernel
  begin_body(mask, tokens);
  auto take = [&](TokenId t) {
    REQUIRE(mask.allows(t));
    mask.advance(t);
  };
  auto take_all = [&](std::initializer_list<const char*> texts) {
    for (const char* t : texts) take(id(t));
  };
  // Code starts: no declaration yet, so no new name.
  CHECK_FALSE(mask.allows(v.local(1)));
  // `const int* __restrict__ v1 = v1 ...`: a declaration through its prefixes ...
  take_all({"const", "int", "*", "__restrict__"});
  take(v.local(1));
  take(id("="));
  CHECK_FALSE(mask.allows(v.local(2)));  // ... but not in its initializer
  CHECK(mask.allows(v.local(1)));        // where the declared name is in scope already
  take(v.local(1));
  take(id("+"));
  CHECK_FALSE(mask.allows(v.local(2)));
  take(id("("));
  CHECK_FALSE(mask.allows(v.local(2)));  // nor in a call or group
  take(v.local(1));
  take(id(","));
  CHECK_FALSE(mask.allows(v.local(2)));  // a `,` inside brackets is no declaration list
  take(id("M"));
  take(id(")"));
  // `, v2` continues the declaration list; `;` ends it.
  take(id(","));
  CHECK(mask.allows(v.local(2)));
  take(v.local(2));
  CHECK_FALSE(mask.allows(id(";")));  // v2 is a const int: it takes an initializer
  take(id("="));
  take(v.num());
  take(v.id(TokenClass::digit, "0"));
  take(id(";"));
  CHECK_FALSE(mask.allows(v.local(3)));
  // `for (value_t v3 = 0, v4 ...`: a list inside parentheses.
  take_all({"for", "(", "value_t"});
  take(v.local(3));
  take(id("="));
  take(v.num());
  take(v.id(TokenClass::digit, "0"));
  take(id(","));
  CHECK(mask.allows(v.local(4)));
  take(v.local(4));
  take(id(";"));
  CHECK_FALSE(mask.allows(v.local(5)));
  take(v.local(3));
  take(id(";"));
  take(id(")"));
  take(id("{"));
  // After a variable's name no new name follows (no user type: typedef and struct are refused; a
  // macro naming a type may, below), nor through `*` (that is a product); after `.` not.
  take(v.local(2));
  CHECK_FALSE(mask.allows(v.local(5)));
  take(id("*"));
  CHECK_FALSE(mask.allows(v.local(5)));
  take(v.local(1));  // a pointer: its element's member (`.` takes no pointer)
  take(id("["));
  take(v.num());
  take(v.id(TokenClass::digit, "0"));
  take(id("]"));
  take(id("."));
  CHECK_FALSE(mask.allows(v.local(5)));
  CHECK(mask.allows(v.id(TokenClass::member, "x")));
  take(v.id(TokenClass::member, "x"));
  take(id(";"));
  // A preprocessor line's body names only what is known: a new name there would be undeclared
  // where the macro is expanded.
  take(id("#"));
  take(v.id(TokenClass::keyword, "define"));
  take(v.local(5));
  CHECK_FALSE(mask.allows(v.local(6)));
  CHECK(mask.allows(v.local(4)));
}

TEST_CASE("preprocessor-only words are refused in code, allowed on their lines", "[env][mask]") {
  const Vocabulary& v = *vocab();
  ActionMask mask(vocab(), MaskMode::syntax, 200);
  std::vector<TokenId> tokens;
  begin_program(mask, reward::Format::csr, 1, tokens);
  begin_body(mask, tokens);
  for (const char* word :
       {"endif", "define", "undef", "ifdef", "ifndef", "elif", "pragma", "unroll", "nounroll"}) {
    INFO(word);
    CHECK_FALSE(mask.allows(v.id(TokenClass::keyword, word)));
  }
  CHECK(mask.allows(v.id(TokenClass::keyword, "if")));
  // (else only right after an if's statement: the BPE grammar mask's tests.)
  CHECK_FALSE(mask.allows(v.id(TokenClass::keyword, "else")));
  mask.advance(v.id(TokenClass::punct, "#"));
  CHECK(mask.allows(v.id(TokenClass::keyword, "define")));
  CHECK(mask.allows(v.id(TokenClass::keyword, "pragma")));
}

TEST_CASE("random episodes steered into kernel declarations pass the static check", "[env][mask]") {
  // A random agent that starts a declaration whenever the mask offers one (extern, then "C") and
  // otherwise draws from plain tokens (locals, numbers, constants, brackets, ; , + *): its
  // programs declare their launched kernels at random points, and every one of them must pass
  // the static check - no signature_mismatch, unlaunched_kernel, macro_abuse or undefined_kernel
  // (the budget leaves room for an empty declaration of each launched kernel, and <eos> waits for
  // them; tight budgets make the mask force them).
  const Vocabulary& v = *vocab();
  const Tokenizer tokenizer(vocab());
  datasets::Rng rng(20261121);
  std::vector<std::uint8_t> m(v.size());
  const TokenId extern_kw = v.id(TokenClass::keyword, "extern");
  const TokenId linkage = v.id(TokenClass::literal, "\"C\"");
  std::vector<std::uint8_t> plain(v.size(), 0);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const TokenSpec& t = v.token(static_cast<TokenId>(i));
    plain[i] = t.cls == TokenClass::local || t.cls == TokenClass::digit ||
               t.cls == TokenClass::constant || t.cls == TokenClass::directive ||
               t.cls == TokenClass::special ||
               (t.cls == TokenClass::builtin &&
                (t.text == "ceil_div" || t.text == "min" || t.text == "max")) ||
               (t.cls == TokenClass::punct &&
                (t.text == "(" || t.text == ")" || t.text == "[" || t.text == "]" ||
                 t.text == "{" || t.text == "}" || t.text == ";" || t.text == "," ||
                 t.text == "+" || t.text == "*" || t.text == "#"));
  }
  int ok = 0, declarations = 0;
  const int budgets[] = {kMinSyntaxTokens, 96, 160, 256, 400};
  std::vector<TokenId> allowed, preferred;
  for (int i = 0; i < 2000; ++i) {
    ActionMask mask(vocab(), MaskMode::syntax, budgets[i % 5]);
    std::vector<TokenId> tokens;
    while (tokens.empty() || tokens.back() != v.eos()) {
      REQUIRE(static_cast<int>(tokens.size()) < mask.max_tokens());
      mask.fill(m);
      allowed.clear();
      preferred.clear();
      for (std::size_t k = 0; k < m.size(); ++k) {
        if (m[k] == 0) continue;
        allowed.push_back(static_cast<TokenId>(k));
        if (plain[k] != 0) preferred.push_back(static_cast<TokenId>(k));
      }
      REQUIRE(!allowed.empty());
      TokenId t = 0;
      if (m[static_cast<std::size_t>(linkage)] != 0) {
        t = linkage;
        ++declarations;
      } else if (m[static_cast<std::size_t>(extern_kw)] != 0 && rng.below(4) == 0) {
        t = extern_kw;
      } else if (!preferred.empty()) {
        t = preferred[rng.below(preferred.size())];
      } else {
        t = allowed[rng.below(allowed.size())];  // a forced word, a preprocessor keyword, ...
      }
      mask.advance(t);
      tokens.push_back(t);
    }
    const std::string text = tokenizer.decode(tokens);
    const reward::StaticCheckResult checked = reward::check_program(text, reward::Op::spmv);
    if (!checked.ok()) FAIL("episode " << i << ": " << checked.failure->str() << "\n" << text);
    ++ok;
  }
  CHECK(ok == 2000);
  CHECK(declarations > 2000);
}

TEST_CASE("a name is used only in its scope and declared once per block", "[env][mask]") {
  const Vocabulary& v = *vocab();
  const Tokenizer tokenizer(vocab());
  ActionMask mask(vocab(), MaskMode::syntax, 600);
  std::vector<TokenId> tokens;
  begin_program(mask, reward::Format::csr, 1, tokens);  // v0 is the launched kernel
  auto take = [&](TokenId t) {
    REQUIRE(mask.allows(t));
    mask.advance(t);
    tokens.push_back(t);
  };
  auto take_all = [&](std::initializer_list<const char*> texts) {
    for (const char* t : texts) take(id(t));
  };
  auto number = [&](const char* digit) {
    take(v.num());
    take(v.id(TokenClass::digit, digit));
  };
  // A macro: its name is in scope everywhere, also in __launch_bounds__; the launched kernel's
  // name is not, until its declaration.
  take_all({"#", "define"});
  take(v.local(1));
  number("8");
  take(v.eol());
  take_all({"extern", "\"C\"", "__global__", "void", "__launch_bounds__", "("});
  CHECK_FALSE(mask.allows(v.local(0)));
  take(v.local(1));
  take(id(")"));
  take(v.local(0));
  // The parameter list: a macro's name would be expanded, so it is no parameter's name.
  std::vector<TokenId> params;
  while (true) {
    const std::vector<TokenId> allowed = allowed_tokens(mask);
    REQUIRE(!allowed.empty());
    if (v.token(allowed.back()).cls == TokenClass::local) {
      CHECK(std::find(allowed.begin(), allowed.end(), v.local(1)) == allowed.end());
      params.push_back(allowed.back());
    }
    take(allowed.back());
    if (allowed.back() == id("{")) break;
  }
  REQUIRE(params.size() == 5);  // csr: row_ptr, col_idx, values, x, y -> v2 .. v6
  const TokenId param = params[0];
  CHECK(param == v.local(2));
  // The body's outermost block holds the parameters: no second `int v2`, but a nested block may
  // shadow it.
  take(id("int"));
  CHECK_FALSE(mask.allows(param));
  take(v.local(7));  // int v7 = v2[0];
  take(id("="));
  take(param);
  take(id("["));
  number("0");
  take_all({"]", ";", "int"});
  CHECK_FALSE(mask.allows(v.local(7)));  // declared in this block already
  take(v.local(8));
  take(id(";"));
  take_all({"{", "int"});
  CHECK(mask.allows(param));
  CHECK(mask.allows(v.local(7)));
  take(v.local(9));  // { int v9; }
  take_all({";", "}"});
  // v9 has left scope with its block: refused in an expression, declared again it is back.
  CHECK_FALSE(mask.allows(v.local(9)));
  CHECK(mask.allows(v.local(8)));
  take(id("int"));
  CHECK(mask.allows(v.local(9)));
  take(v.local(9));
  take(id(";"));
  CHECK(mask.allows(v.local(9)));
  // A for statement's name belongs to its block: after the block it is out of scope, and the
  // next for statement may declare it again.
  for (int round = 0; round < 2; ++round) {
    take_all({"for", "(", "int"});
    take(v.local(10));
    take(id("="));
    number("0");
    take(id(";"));
    take(v.local(10));
    take(id("<"));
    number("4");
    take_all({";", "++"});
    take(v.local(10));
    take_all({")", "{"});
    take(v.local(8));
    take(id("+="));
    take(v.local(10));
    take_all({";", "}"});
    CHECK_FALSE(mask.allows(v.local(10)));
  }
  // Without a block its name stays until the enclosing block closes (a lenient reading: the
  // statement's end is not tracked).
  take_all({"for", "(", "int"});
  take(v.local(11));
  take(id("="));
  number("0");
  take_all({";", ";", ")"});
  take(v.local(8));
  take(id("+="));
  take(v.local(11));
  take(id(";"));
  CHECK(mask.allows(v.local(11)));
  // User types are not modelled (their names would need scopes of their own): struct, class,
  // typedef, ... are refused. v12 .. v14 are used as before.
  for (const char* word : {"struct", "class", "union", "enum", "typedef", "using", "namespace"}) {
    CHECK_FALSE(mask.allows(id(word)));
  }
  take(id("int"));
  take(v.local(12));
  take_all({";", "int"});
  take(v.local(13));
  take_all({";", "int"});
  take(v.local(14));
  take(id(";"));
  take(v.local(13));
  take(id("="));
  take(v.local(7));
  take_all({";", "}"});
  // After the kernel: its parameters and locals are out of scope, the kernel's and the macro's
  // names are not (but a launched kernel's name is no operand in a function's code).
  take_all({"__device__", "int"});
  CHECK(mask.allows(param));  // a file-scope declaration of the name again
  take(v.local(15));
  take_all({"(", ")", "{", "return"});
  CHECK_FALSE(mask.allows(param));
  CHECK_FALSE(mask.allows(v.local(7)));
  CHECK_FALSE(mask.allows(v.local(10)));
  CHECK_FALSE(mask.allows(v.local(0)));
  CHECK(mask.allows(v.local(1)));
  take(v.local(1));
  take_all({";", "}"});
  take(v.eos());
  const std::string text = tokenizer.decode(tokens);
  INFO(text);
  const reward::StaticCheckResult checked = reward::check_program(text, reward::Op::spmv);
  if (!checked.ok()) FAIL(checked.failure->str());
}

TEST_CASE("code names only the prelude constants of the program's format", "[env][mask]") {
  const Vocabulary& v = *vocab();
  const TokenId bsr_c = v.id(TokenClass::constant, "BSR_C");
  const TokenId sell_c = v.id(TokenClass::constant, "SELL_C");
  const TokenId rows = v.id(TokenClass::constant, "M");
  const TokenId sell_stored = v.id(TokenClass::constant, "SELL_STORED");
  for (reward::Format format : reward::kFormats) {
    INFO(reward::to_string(format));
    ActionMask mask(vocab(), MaskMode::syntax, 200);
    std::vector<TokenId> tokens;
    begin_program(mask, format, 1, tokens);
    begin_body(mask, tokens);
    // `int v1 = `: an expression follows.
    mask.advance(v.id(TokenClass::keyword, "int"));
    mask.advance(v.local(1));
    mask.advance(v.id(TokenClass::punct, "="));
    const std::vector<TokenId> allowed = allowed_tokens(mask);
    auto offered = [&](TokenId t) {
      return std::find(allowed.begin(), allowed.end(), t) != allowed.end();
    };
    CHECK(offered(rows));
    CHECK(mask.allows(rows));
    CHECK(offered(bsr_c) == (format == reward::Format::bsr));
    CHECK(mask.allows(bsr_c) == (format == reward::Format::bsr));
    CHECK(offered(sell_c) == (format == reward::Format::sell));
    // A #define's body too: it is code wherever the macro is expanded (NVRTC: "identifier
    // \"SELL_STORED\" is undefined" of `#define v2 SELL_STORED` expanded in an ell program).
    mask.advance(v.id(TokenClass::constant, "M"));
    mask.advance(v.id(TokenClass::punct, ";"));
    mask.advance(v.id(TokenClass::punct, "#"));
    mask.advance(v.id(TokenClass::keyword, "define"));
    mask.advance(v.local(2));
    CHECK(mask.allows(rows));
    CHECK(mask.allows(bsr_c) == (format == reward::Format::bsr));
    CHECK(mask.allows(sell_c) == (format == reward::Format::sell));
    CHECK(mask.allows(sell_stored) == (format == reward::Format::sell));
    // ... after an operator and in a function-like macro's body as well.
    ActionMask body = mask;
    body.advance(rows);
    body.advance(v.id(TokenClass::punct, "+"));
    CHECK(body.allows(sell_stored) == (format == reward::Format::sell));
    CHECK(body.allows(rows));
    ActionMask params = mask;
    params.advance(v.macro_open());
    params.advance(v.local(3));
    params.advance(v.id(TokenClass::punct, ")"));
    CHECK(params.allows(sell_stored) == (format == reward::Format::sell));
    CHECK(params.allows(v.local(3)));
    // An #if line keeps every constant (an undefined name is 0 there), `defined` and #ifdef too.
    mask.advance(rows);
    mask.advance(v.eol());
    mask.advance(v.id(TokenClass::punct, "#"));
    mask.advance(v.id(TokenClass::keyword, "if"));
    CHECK(mask.allows(sell_stored));
    CHECK(mask.allows(bsr_c));
    mask.advance(v.id(TokenClass::keyword, "defined"));
    CHECK(mask.allows(sell_stored));
  }
}

namespace {

// Code after a CSR program's header (one launched kernel, v0) in a device function's body, or at
// file scope where it is a declaration (`template ...`, `__device__ ...`), spelled with spaces:
// `vN` is local N, a run of digits a number, anything else a code token (id()). Takes every token
// but the last; returns whether the mask allows the last (fill() and allows() must agree).
bool allows_last(std::string_view code) {
  const Vocabulary& v = *vocab();
  ActionMask mask(vocab(), MaskMode::syntax, 600);
  std::vector<TokenId> tokens;
  begin_program(mask, reward::Format::csr, 1, tokens);
  if (!code.starts_with("template") && !code.starts_with("__device__")) begin_body(mask, tokens);
  std::vector<std::vector<TokenId>> words;
  std::size_t at = 0;
  while (at < code.size()) {
    const std::size_t end = std::min(code.find(' ', at), code.size());
    const std::string word(code.substr(at, end - at));
    at = end + 1;
    if (word.empty()) continue;
    if (word.size() > 1 && word[0] == 'v' && std::isdigit(static_cast<unsigned char>(word[1]))) {
      words.push_back({v.local(std::stoi(word.substr(1)))});
    } else if (word == "x" || word == "y" || word == "z" || word == "w") {
      words.push_back({v.id(TokenClass::member, word)});
    } else if (std::isdigit(static_cast<unsigned char>(word[0]))) {
      std::vector<TokenId> number{v.num()};
      for (char c : word) number.push_back(v.id(TokenClass::digit, std::string(1, c)));
      words.push_back(number);
    } else {
      words.push_back({id(word.c_str())});
    }
  }
  std::vector<std::uint8_t> m(v.size());
  for (std::size_t w = 0; w < words.size(); ++w) {
    for (std::size_t i = 0; i < words[w].size(); ++i) {
      const TokenId t = words[w][i];
      mask.fill(m);
      const bool allowed = mask.allows(t);
      INFO("token " << w << " (" << v.describe(t) << ") of: " << code);
      REQUIRE((m[static_cast<std::size_t>(t)] != 0) == allowed);
      if (w + 1 == words.size() && i == 0) return allowed;
      REQUIRE(allowed);
      mask.advance(t);
    }
  }
  return true;
}

}  // namespace

TEST_CASE("type words stand only where a declaration, a cast or a functional cast may",
          "[env][mask]") {
  // What kernels write: declarations, casts, template arguments, functional casts.
  for (const char* code : {
           "const long long v1 = static_cast < long long > ( blockIdx . x ) * 2 ;",
           "unsigned long long int v1 = 0 , v2 ; signed char v3 ; short int v4 ;",
           "long v1 ; unsigned v2 = 0 ; long int v3 ;",
           "value_t v1 = value_t ( 0 ) + float ( 1 ) ; int v2 = ( int ) sizeof ( value_t ) ;",
           "const float4 * __restrict__ v1 = reinterpret_cast < const float4 * > ( 0 ) ;",
           "__shared__ value_t v1 [ 4 ] ; for ( int v2 = 0 , v3 = 1 ; v2 < M ; ++ v2 ) { }",
           "int v1 = 0 ; if ( v1 < N ) { const int * const v2 = & v1 ; }",
           "template < int v1 > __device__ __forceinline__ value_t v2 ( const value_t * v3 , int "
           "v4 ) "
           "{ return v3 [ v4 ] ; }",
           "const int v1 { 4 } ; extern __shared__ value_t v2 [ ] ;",  // (no static in a body)
       }) {
    INFO(code);
    CHECK(allows_last(std::string(code) + " ;"));
  }
  // What sampled programs wrote (the last token is refused): a type inside an expression other
  // than as a functional cast, a run C++ has no type for, a type followed by what no declaration
  // or cast goes on with, a declared name followed by an expression.
  for (const char* code : {
           "int v1 ; if ( v1 < long long",
           "int v1 ; int v2 ; if ( v1 * ( v2 < long v2",  // (`%` there: refused at `<`)
           "int v1 ; v1 int",
           "int v1 ; int v2 = v1 float",
           "long long long",
           "int int",
           "value_t float",
           "unsigned signed",
           "short long",
           "char int",
           "const long long <=",
           "int =",
           "value_t * 0",
           "value_t * float",
           "value_t v1 +",
           "const int v1 ceil_div",
           "int v1 v2",
           "int v1 ; v1 = 2 * unsigned v1",
           "int ( v1",
       }) {
    INFO(code);
    CHECK_FALSE(allows_last(code));
  }
  // The completion path's tokens stay open after a type word (the budget's guarantee).
  CHECK_FALSE(allows_last("{ int }"));  // a statement ends with `;` before its block's `}`
  CHECK(allows_last("{ int ; }"));
  CHECK(allows_last("int ;"));
  CHECK(allows_last("( value_t )"));
  // ... but where an operand, a call's parentheses or a member is due: the path writes it first.
  CHECK_FALSE(allows_last("int v1 = value_t ;"));
  CHECK(allows_last("int v1 = value_t ( ) ;"));
  CHECK_FALSE(allows_last("int v1 = 2 + ;"));
  CHECK_FALSE(allows_last("int v1 = sqrt ;"));
  CHECK_FALSE(allows_last("int v1 = threadIdx ;"));
  CHECK(allows_last("int v1 = threadIdx . x ;"));
  CHECK_FALSE(allows_last("if )"));
}

TEST_CASE("fill() and allows() agree on every token along random episodes", "[env][mask]") {
  datasets::Rng rng(31);
  std::vector<std::uint8_t> m(vocab()->size());
  std::vector<TokenId> allowed;
  int mismatches = 0, steps = 0;
  for (int e = 0; e < 60; ++e) {
    ActionMask mask(vocab(), MaskMode::syntax, e % 2 == 0 ? 160 : 60);
    while (true) {
      mask.fill(m);
      allowed.clear();
      for (std::size_t i = 0; i < m.size(); ++i) {
        const bool by_allows = mask.allows(static_cast<TokenId>(i));
        if ((m[i] != 0) != by_allows && ++mismatches <= 3) {
          UNSCOPED_INFO("episode " << e << " token " << mask.tokens() << ": "
                                   << vocab()->describe(static_cast<TokenId>(i)) << " fill "
                                   << int{m[i]} << " allows " << by_allows);
        }
        if (m[i] != 0) allowed.push_back(static_cast<TokenId>(i));
      }
      ++steps;
      if (allowed.empty()) break;
      const TokenId t = allowed[rng.below(allowed.size())];
      mask.advance(t);
      if (t == vocab()->eos()) break;
    }
  }
  CHECK(mismatches == 0);
  CHECK(steps > 60 * 42);
}

TEST_CASE("launch expressions are refused where they could only evaluate out of range",
          "[env][mask]") {
  const std::string csr = "//@format csr\n//@launch k ";
  // block= and smem= are a literal in range.
  CHECK(first_refused(csr + "grid=K block=1024 smem=49152\n") == "");
  CHECK(first_refused(csr + "grid=K block=1025\n") == "5");
  CHECK(first_refused(csr + "grid=K block=0\n") == "0");
  CHECK(first_refused(csr + "grid=K block=M\n") == "M");
  CHECK(first_refused(csr + "grid=K block=32 * 2\n") == "*");
  CHECK(first_refused(csr + "grid=K block=32 smem=49153\n") == "3");
  CHECK(first_refused(csr + "grid=K block=32 smem=0\n") == "");
  // grid=: at least 1, no division by what may be 0, literals up to 65536 - judged where the
  // completion path (`1` for an operand due, `, 1)` or `)` per open frame) would close it out of
  // range, so conservatively: `M + 1` is refused at M, `1 + M` is not.
  CHECK(first_refused(csr + "grid=ceil_div(max(M, 1) * 32, 256) block=256\n") == "");
  CHECK(first_refused(csr +
                      "grid=max(min(EMPTY_ROWS, 1) * ceil_div(M, 256) + (1 - min(EMPTY_ROWS, 1)) "
                      "* ceil_div(NNZ, 512), 1) block=256\n") == "");
  CHECK(first_refused(csr + "grid=M block=256\n") == "M");  // 0 on a matrix without rows
  CHECK(first_refused(csr + "grid=M + 1 block=256\n") == "M");
  CHECK(first_refused(csr + "grid=1 + M block=256\n") == "");
  CHECK(first_refused(csr + "grid=K / EMPTY_ROWS block=256\n") == "EMPTY_ROWS");
  CHECK(first_refused(csr + "grid=ceil_div(K, max(EMPTY_ROWS, 1)) block=256\n") == "");
  CHECK(first_refused(csr + "grid=K / max(EMPTY_ROWS, 1) block=256\n") == "EMPTY_ROWS");  // 0
  CHECK(first_refused(csr + "grid=ceil_div(K, (K - K)) block=256\n") == "-");
  CHECK(first_refused(csr + "grid=K / K block=256\n") == "K");  // K / K >= 0 only, to intervals
  CHECK(first_refused(csr + "grid=ceil_div(K, 0) block=256\n") == "0");
  CHECK(first_refused(csr + "grid=-K block=256\n") == "-");
  CHECK(first_refused(csr + "grid=max(-K, 1) block=256\n") == "");
  CHECK(first_refused(csr + "grid=-(-K) block=256\n") == "-");  // `-1` would close it
  CHECK(first_refused(csr + "grid=65536 * K block=256\n") == "");
  CHECK(first_refused(csr + "grid=65537 block=256\n") == "7");
}

TEST_CASE("random episodes' launch lines evaluate in range on small and empty matrices",
          "[env][mask]") {
  std::vector<datasets::Triplet> triplets;
  for (int i = 0; i < 48; ++i) triplets.push_back({i, (i * 7 + 3) % 64, 1.0});  // 16 empty rows
  const datasets::SparseMatrix matrices[] = {
      datasets::SparseMatrix::from_triplets(64, 64, triplets),
      datasets::SparseMatrix::from_triplets(0, 0, {}),
      datasets::SparseMatrix::from_triplets(1, 1, {{0, 0, 1.0}})};
  datasets::Rng rng(7);
  std::vector<std::uint8_t> m(vocab()->size());
  std::vector<TokenId> allowed;
  int launches = 0;
  for (int e = 0; e < 300; ++e) {
    ActionMask mask(vocab(), MaskMode::syntax, 200 + e % 200);
    const std::string text = Tokenizer(vocab()).decode(random_episode(mask, rng, m, allowed));
    const reward::ParseResult parsed = reward::parse_program(text);
    REQUIRE(parsed.ok());
    for (const datasets::SparseMatrix& matrix : matrices) {
      const reward::Constants constants =
          reward::compute_constants(matrix, reward::Op::spmm, 4, parsed.program->format);
      for (const reward::LaunchDirective& l : parsed.program->launches) {
        INFO(text);
        ++launches;
        const reward::LaunchExprValue grid = l.grid.evaluate(constants);
        // No bound keeps a grid below 2^31 or its products from overflowing: only those fail.
        if (grid.ok()) {
          CHECK(grid.value >= 1);
        } else {
          CHECK_THAT(grid.error->message, sparserl::testing::has_substring("overflow"));
        }
        const std::int64_t block = l.block.evaluate(constants).value;
        const std::int64_t smem = l.smem.evaluate(constants).value;
        CHECK((block >= 1 && block <= 1024));
        CHECK((smem >= 0 && smem <= 48 * 1024));
      }
    }
  }
  CHECK(launches >= 300 * 3);
}
