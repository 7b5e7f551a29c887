// The syntax mask's promises: random episodes under it end with <eos> within max_tokens and decode
// to programs whose directives parse and whose brackets balance; <eos> is offered only where the
// program is complete; the mask is never empty; every corpus program's encoding is accepted token
// by token; the `none` mode allows everything but <pad> and <bos>.
#include "sparserl/env/action_mask.hpp"

#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "env_test_support.hpp"
#include "sparserl/datasets/random.hpp"
#include "sparserl/env/tokenizer.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::env;

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
  const int budgets[] = {12, 13, 16, 24, 40, 64, 96, 160};
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
  CHECK(total_tokens > 10000u * 12u);
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
  CHECK(offers > 300);
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
      INFO("token " << i << ": " << vocab()->describe(t));
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
  CHECK(ell.allows(v.id(TokenClass::constant, "NNZ")));
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
