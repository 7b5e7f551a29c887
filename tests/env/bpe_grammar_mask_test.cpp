// The grammar mask over BPE tokens: every corpus program (reward's reference programs and the
// design space's, in the form bpe_program_text() gives) is accepted token by token, and the closed
// tokens the mask read are exactly what the closed tokenizer's encode() makes of the text; random
// episodes under the mask end with <eos> within max_tokens and decode to programs that encode,
// parse and balance their brackets; fill() agrees with allows() on every token along random
// episodes; specific bad tokens are refused where they stand. The tokenizers are trained here by
// the project's trainer, on the corpus's programs (a small vocabulary, so the tests run fast). What
// NVRTC refuses, refused where it goes wrong: bpe_grammar_mask_nvrtc_test.cpp.
#include "sparserl/env/bpe_grammar_mask.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "bpe_grammar_mask_test_support.hpp"
#include "catch.hpp"
#include "env_test_support.hpp"
#include "sparserl/datasets/random.hpp"
#include "sparserl/env/bpe_trainer.hpp"
#include "sparserl/env/tokenizer.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::env;
using namespace sparserl::testing::bpe_mask;
using sparserl::testing::has_substring;

}  // namespace

TEST_CASE("bpe_program_text drops comments, keeps directives, trims blanks", "[env][bpe]") {
  const std::string program =
      "// header\n//@format csr  \n/* a\nblock */ //@launch k grid=M block=M\n"
      "int x; // trailing\n#define A 1 /* one */\n\n";
  CHECK(bpe_program_text(program) ==
        "//@format csr\n  //@launch k grid=M block=M\nint x;\n"
        "#define A 1\n\n");
  CHECK_THROWS_AS(bpe_program_text("int x; /* open"), TokenizeError);
}

TEST_CASE("every corpus program in BPE form is accepted token by token, read as encode() reads it",
          "[env][bpe][mask]") {
  const auto tokenizer = small_tokenizer();
  const Tokenizer closed;
  std::vector<std::uint8_t> m;
  int checked_fills = 0, index = 0;
  for (const auto& program : corpus()) {
    INFO(program.name);
    const std::string text = bpe_program_text(program.text);
    const std::vector<TokenId> ids = tokenizer->encode(text);
    BpeGrammarMask mask = make_mask(static_cast<int>(ids.size()) + 1000, tokenizer);
    m.resize(mask.size());
    // fill() on every step of the reference programs and of every 20th design-space program.
    const bool fills = index++ < 10 || index % 20 == 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      INFO("token " << i << " '" << tokenizer->token_bytes(ids[i]) << "' after:\n" << mask.text());
      REQUIRE(mask.allows(ids[i]));
      if (fills) {
        mask.fill(m);
        REQUIRE(m[static_cast<std::size_t>(ids[i])] == 1);
        ++checked_fills;
      }
      mask.advance(ids[i]);
    }
    REQUIRE(mask.allows(mask.eos()));
    mask.advance(mask.eos());
    CHECK(mask.text() == text);
    CHECK(mask.closed_tokens() == closed.encode(text).tokens);
  }
  CHECK(checked_fills > 1000);
}

TEST_CASE("random episodes under the BPE grammar mask end with <eos> and read as encode() reads",
          "[env][bpe][mask]") {
  const Tokenizer closed;
  datasets::Rng rng(20250612);
  const int least = make_mask(4000).min_completion();
  const int budgets[] = {least, least + 1, least + 40, least + 200, 1024, 2000};
  std::vector<std::uint8_t> m;
  std::vector<TokenId> allowed;
  int called_undeclared = 0;
  for (int e = 0; e < 300; ++e) {
    const auto tokenizer = e % 2 == 0 ? small_tokenizer() : larger_tokenizer();
    BpeGrammarMask mask = make_mask(budgets[e % 6], tokenizer);
    m.resize(mask.size());
    std::vector<TokenId> ids;
    while (!mask.done()) {
      mask.fill(m);
      allowed.clear();
      for (std::size_t i = 0; i < m.size(); ++i) {
        if (m[i] != 0) allowed.push_back(static_cast<TokenId>(i));
      }
      INFO("episode " << e << ", " << mask.tokens() << " of " << mask.max_tokens()
                      << " tokens, min_completion " << mask.min_completion() << ":\n"
                      << mask.text());
      REQUIRE(!allowed.empty());
      REQUIRE(mask.tokens() < mask.max_tokens());
      ids.push_back(allowed[rng.below(allowed.size())]);
      mask.advance(ids.back());
    }
    REQUIRE(ids.back() == mask.eos());
    REQUIRE(static_cast<int>(ids.size()) <= mask.max_tokens());
    const std::string text = tokenizer->decode(ids, true);
    INFO("episode " << e << ":\n" << text);
    CHECK(text == mask.text());
    const reward::ParseResult parsed = reward::parse_program(text);
    CHECK(parsed.ok());
    CHECK(fixtures::brackets_balance(text));
    std::vector<TokenId> encoded;
    try {
      encoded = closed.encode(text).tokens;
    } catch (const TokenizeError& error) {
      // As under the closed mask, a random program may call a local it never declared.
      CHECK_THAT(std::string(error.what()), has_substring("is called but"));
      ++called_undeclared;
      continue;
    }
    CHECK(encoded == mask.closed_tokens());
  }
  // A rate, not a pin: the count moves with the corpus the tokenizers are trained on and the seed.
  // With the 206-point SpMV space (csr_nnzsplit, 2026-11-28) four seeds gave 62, 54, 48 and 57 of
  // 300 (this seed 52 before csr_nnzsplit), so the bound is 25%, not 20%.
  INFO(called_undeclared << " of 300 call a name they never declare");
  CHECK(called_undeclared < 75);
}

TEST_CASE("the BPE grammar mask's fill() and allows() agree on every token along random episodes",
          "[env][bpe][mask]") {
  const auto tokenizer = small_tokenizer();
  datasets::Rng rng(41);
  const int least = make_mask(4000).min_completion();
  std::vector<std::uint8_t> m;
  std::vector<TokenId> allowed;
  int mismatches = 0, steps = 0;
  for (int e = 0; e < 12; ++e) {
    BpeGrammarMask mask = make_mask(e % 2 == 0 ? least + 300 : least + 20, tokenizer);
    m.resize(mask.size());
    while (!mask.done()) {
      mask.fill(m);
      allowed.clear();
      for (std::size_t i = 0; i < m.size(); ++i) {
        const bool direct = mask.allows(static_cast<TokenId>(i));
        if ((m[i] != 0) != direct && ++mismatches <= 3) {
          UNSCOPED_INFO("episode " << e << " token " << mask.tokens() << ": id " << i << " '"
                                   << (tokenizer->has_token(static_cast<TokenId>(i))
                                           ? tokenizer->token_bytes(static_cast<TokenId>(i))
                                           : "")
                                   << "' fill " << int{m[i]} << " allows " << direct << " after:\n"
                                   << mask.text());
        }
        if (m[i] != 0) allowed.push_back(static_cast<TokenId>(i));
      }
      ++steps;
      INFO("episode " << e << ", " << mask.tokens() << " of " << mask.max_tokens()
                      << " tokens, min_completion " << mask.min_completion() << ":\n"
                      << mask.text());
      REQUIRE(!allowed.empty());
      mask.advance(allowed[rng.below(allowed.size())]);
    }
  }
  CHECK(mismatches == 0);
  CHECK(steps > 12 * 100);
}

TEST_CASE("the BPE grammar mask's cache stays within its byte budget and answers as allows() does",
          "[env][bpe][mask]") {
  // A tokenizer of its own: the cache is shared by the masks of one tokenizer.
  const auto tokenizer = trained(700);
  const auto programs = corpus();
  const std::vector<TokenId> ids = tokenizer->encode(bpe_program_text(programs[0].text));
  const std::vector<TokenId> other = tokenizer->encode(bpe_program_text(programs[3].text));
  const auto mask_with = [&](std::size_t cache_bytes) {
    BpeGrammarOptions options;
    options.max_tokens = 4000;
    options.cache_bytes = cache_bytes;
    return BpeGrammarMask(tokenizer, options);
  };
  const std::size_t budget = 48 << 10;
  std::vector<std::uint8_t> m;
  int mismatches = 0;
  const auto check = [&](const BpeGrammarMask& mask) {
    for (std::size_t i = 0; i < m.size(); ++i) {
      mismatches += (m[i] != 0) != mask.allows(static_cast<TokenId>(i)) ? 1 : 0;
    }
  };
  // Two rows writing the same program side by side: the second finds each state the first left.
  BpeGrammarMask first = mask_with(budget), second = mask_with(budget);
  m.resize(first.size());
  const auto before = first.cache_stats();
  for (std::size_t step = 0; step < ids.size(); ++step) {
    for (BpeGrammarMask* mask : {&first, &second}) {
      mask->fill(m);
      if (step % 7 == 0) check(*mask);
      mask->advance(ids[step]);
    }
    REQUIRE(first.cache_stats().bytes <= budget);
  }
  const auto after = first.cache_stats();
  CHECK(after.entries >= 1);
  CHECK(after.hits - before.hits >= ids.size());
  // A mask with no budget keeps nothing of its own (it still reads what is there).
  BpeGrammarMask none = mask_with(0);
  for (TokenId id : other) {
    none.fill(m);
    check(none);
    none.advance(id);
  }
  CHECK(none.cache_stats().entries == after.entries);
  CHECK(none.cache_stats().bytes == after.bytes);
  CHECK(mismatches == 0);
}

TEST_CASE("the BPE grammar mask refuses bad tokens where they stand", "[env][bpe][mask]") {
  // Only the directives first.
  CHECK(takes_after("", "\n  //@format csr\n"));
  CHECK_FALSE(takes_after("", "int"));
  CHECK_FALSE(takes_after("", "//@launch"));
  CHECK_FALSE(takes_after("", "// comment"));
  CHECK_FALSE(takes_after("//@format", "csr"));    // words apart
  CHECK_FALSE(takes_after("//@format ", " csr"));  // by one blank
  CHECK_FALSE(takes_after("//@format ", "crs"));
  CHECK(takes_after("//@format sell C=32 sigma=", "256\n"));
  CHECK_FALSE(takes_after("//@format sell C=", "032"));
  CHECK_FALSE(takes_after("//@format sell C=32", " R=2"));
  // Launch lines: a kernel name that is no vocabulary word, expressions over the format's names.
  const std::string format = "//@format csr\n";
  CHECK_FALSE(takes_after(format + "//@launch ", "min "));
  CHECK(takes_after(format + "//@launch k grid=", "ceil_div(max(M, 1), 4) block=128\n"));
  CHECK_FALSE(takes_after(format + "//@launch k grid=", "ceil_div (M, 4)"));  // as decode() writes
  CHECK_FALSE(takes_after(format + "//@launch k grid=", "ELL_WIDTH"));        // not csr's
  CHECK_FALSE(takes_after(format + "//@launch k grid=", "M  block"));
  CHECK_FALSE(takes_after(format + "//@launch k grid=K", "\n"));  // no block=
  // ... whose values the geometry check accepts on every matrix (the closed mask's rules).
  CHECK_FALSE(takes_after(format + "//@launch k grid=", "M block"));  // 0 rows: grid 0
  CHECK_FALSE(takes_after(format + "//@launch k grid=ceil_div(K, ", "EMPTY_ROWS"));
  CHECK(takes_after(format + "//@launch k grid=ceil_div(K, ", "max(EMPTY_ROWS, 1)) block=32\n"));
  CHECK_FALSE(takes_after(format + "//@launch k grid=K block=", "K"));  // a literal alone
  CHECK_FALSE(takes_after(format + "//@launch k grid=K block=", "1025"));
  CHECK(takes_after(format + "//@launch k grid=K block=", "1024 smem=49152\n"));
  // Code: names in scope, no comments, no character literals, `#` first on its line.
  CHECK(takes_after(kHead, "  int i = threadIdx.x;\n"));
  CHECK(takes_after(kHead, "  int i=threadIdx.x+1;\n"));  // no blank needed between lexemes
  CHECK_FALSE(takes_after(kHead, "  int i = 0x "));       // a blank may not end `0x`
  CHECK_FALSE(takes_after(kHead, "  int i = 1e+;"));  // ... nor may anything but a digit end `1e+`
  CHECK_FALSE(takes_after(kHead, "  int i = undeclared"));
  CHECK_FALSE(takes_after(kHead, "  int i = 0; // no comments"));
  CHECK_FALSE(takes_after(kHead, "  char c = 'a"));
  CHECK_FALSE(takes_after(kHead, "  int i = 0; #"));
  CHECK(takes_after(kHead, "#pragma unroll\n"));
  CHECK_FALSE(takes_after(kHead, "  y[0] = \"D\""));
  // A name glued to "C" would be the string's suffix (NVRTC: "expected an identifier").
  const std::string launched = format + "//@launch spmv grid=K block=32\n";
  CHECK_FALSE(takes_after(launched, "extern \"C\"__global__"));
  CHECK(takes_after(launched, "extern \"C\"\n__global__ void spmv("));
  CHECK_FALSE(takes_after(kHead, "  y[0] = x[0] + 1.0p"));  // not a digit of the vocabulary
  CHECK(takes_after(kHead, "  y[0] = x[0] + .5f;\n"));
  // <eos> only where the program is complete.
  BpeGrammarMask mask = make_mask(4000);
  REQUIRE(feed_text(mask, kHead) == -1);
  CHECK_FALSE(mask.allows(mask.eos()));
  REQUIRE(feed_text(mask, "}") == -1);
  CHECK(mask.allows(mask.eos()));
}

TEST_CASE("the BPE grammar mask's #define bodies name only the format's prelude constants",
          "[env][bpe][mask]") {
  // Issue 28 (run gc13-1): `#define A SELL_STORED`, expanded in an ell program's code - "identifier
  // \"SELL_STORED\" is undefined" (the prelude defines only the format's constants).
  const std::string launch = "//@launch k grid=K block=32\n";
  for (const char* format : {"csr", "ell"}) {
    INFO(format);
    const std::string head = std::string("//@format ") + format + "\n" + launch;
    CHECK_FALSE(takes_after(head + "#define A ", "SELL_STORED\n"));
    CHECK_FALSE(takes_after(head + "#define A(b) b * ", "SELL_STORED\n"));
    CHECK_FALSE(takes_after(head + "#define A ", "BSR_NNZB\n"));
    CHECK(takes_after(head + "#define A ", "M + NNZ * K\n"));
    CHECK(takes_after(head + "#if ", "SELL_STORED > 1\n#endif\n"));  // 0 there: no error
    CHECK(takes_after(head + "#if defined(", "SELL_STORED)\n#endif\n"));
  }
  CHECK(takes_after("//@format ell\n" + launch + "#define A ", "ELL_WIDTH\n"));
  CHECK_FALSE(takes_after("//@format csr\n" + launch + "#define A ", "ELL_WIDTH\n"));
  const std::string sell = "//@format sell C=32 sigma=1\n" + launch;
  CHECK(takes_after(sell + "#define A ", "SELL_STORED\n"));
  CHECK(takes_after(sell + "#define A(b) b * ", "SELL_STORED\n"));
  CHECK_FALSE(takes_after(sell + "#define A ", "BSR_NNZB\n"));
}

TEST_CASE("the BPE grammar mask's budget and its refusals at construction", "[env][bpe][mask]") {
  const int least = make_mask(4000).min_completion();
  CHECK(least > 42);
  CHECK_THROWS_WITH(make_mask(least - 1), has_substring("needs at least"));
  // At the least budget the mask still completes the shortest program: a walk taking the first
  // allowed token ends with <eos> inside the budget.
  BpeGrammarMask mask = make_mask(least);
  std::vector<std::uint8_t> m(mask.size());
  while (!mask.done()) {
    mask.fill(m);
    const auto first = std::find(m.begin(), m.end(), std::uint8_t{1});
    REQUIRE(first != m.end());
    mask.advance(static_cast<TokenId>(first - m.begin()));
  }
  CHECK(mask.tokens() <= least);
  CHECK(reward::parse_program(mask.text()).ok());
  // A tokenizer without an eos id is refused.
  auto no_eos = std::make_shared<BpeTokenizer>(*small_tokenizer());
  no_eos->set_special_ids({});
  CHECK_THROWS_WITH(make_mask(4000, no_eos), has_substring("needs an eos id"));
}

namespace {

// The corpus programs' tokenizer, with names the static checks forbid (and allowed names that
// share their prefixes) learnt as whole tokens, each both after a blank and alone.
std::shared_ptr<const BpeTokenizer> names_tokenizer() {
  static const auto t = [] {
    BpeTrainerOptions options;
    options.vocab_size = 1400;
    BpeTrainer trainer(options);
    for (const auto& p : corpus()) trainer.add_text(bpe_program_text(p.text));
    std::string names;
    for (const char* name :
         {"cudaMalloc", "cudaMemcpy", "cudaStreamCreate", "cudaX",    "cuda_x",  "cudax", "cuda",
          "__cuda",     "__cudaPush", "malloc",           "malloc_",  "mallocs", "free",  "freeze",
          "printf",     "printfs",    "assert",           "asserted", "new",     "news",  "clock",
          "clocks"}) {
      for (int i = 0; i < 40; ++i) names += std::string(" ") + name + "\n" + name + "\n";
    }
    trainer.add_text(names);
    return std::make_shared<const BpeTokenizer>(BpeTokenizer::parse(trainer.train(), "names"));
  }();
  return t;
}

// The mask of names_tokenizer() after `prefix` (read byte by byte).
BpeGrammarMask names_mask_after(const std::string& prefix) {
  const auto tokenizer = names_tokenizer();
  BpeGrammarOptions options;
  options.max_tokens = 4000;
  BpeGrammarMask mask(tokenizer, options);
  for (char c : prefix) {
    const TokenId id = *tokenizer->byte_token(static_cast<unsigned char>(c));
    REQUIRE(mask.allows(id));
    mask.advance(id);
  }
  return mask;
}

// Does that mask allow the token spelled `bytes` (which the tokenizer must have)?
bool names_allows(const std::string& prefix, const std::string& bytes) {
  const std::vector<TokenId> ids = names_tokenizer()->encode(bytes);
  INFO("'" << bytes << "' is " << ids.size() << " tokens");
  REQUIRE(ids.size() == 1);
  return names_mask_after(prefix).allows(ids[0]);
}

}  // namespace

TEST_CASE("the BPE grammar mask refuses new names the static checks forbid where they complete",
          "[env][bpe][mask]") {
  const std::string decl = kHead + "  int";
  const std::string decl_blank = decl + " ";
  const std::string launch = "//@format csr\n//@launch ";
  // A token that completes a forbidden name, or enters a forbidden family, is refused there.
  CHECK_FALSE(takes_after(decl_blank, "cudaM"));  // cudaX...: a runtime call (stream_api)
  CHECK_FALSE(takes_after(decl_blank, "__cuda"));
  CHECK_FALSE(takes_after(decl_blank, "malloc;"));  // the exact name ends at `;`
  CHECK_FALSE(takes_after(decl_blank, "malloc "));
  CHECK_FALSE(takes_after(decl_blank, "free="));
  CHECK_FALSE(takes_after(decl_blank, "printf;"));
  CHECK_FALSE(takes_after(decl_blank, "assert;"));
  CHECK_FALSE(takes_after(decl_blank, "new;"));
  CHECK_FALSE(takes_after(decl_blank, "clock;"));  // timer_read: every reason's names
  CHECK_FALSE(takes_after(launch, "printf "));     // a kernel's name too
  // Allowed names that share their prefixes stay allowed.
  CHECK(takes_after(decl_blank, "cuda;"));
  CHECK(takes_after(decl_blank, "cuda_x;"));
  CHECK(takes_after(decl_blank, "cudax;"));
  CHECK(takes_after(decl_blank, "cuda0;"));
  CHECK(takes_after(decl_blank, "__cud;"));
  CHECK(takes_after(decl_blank, "malloc_;"));
  CHECK(takes_after(decl_blank, "mallocs;"));
  CHECK(takes_after(decl_blank, "freeze;"));
  CHECK(takes_after(decl_blank, "printfs;"));
  CHECK(takes_after(decl_blank, "asserted;"));
  CHECK(takes_after(decl_blank, "news;"));
  CHECK(takes_after(launch, "printfs "));
  // Whole tokens: one that enters a family is refused at once; an exact forbidden name pending at
  // the token's end is allowed (it may still grow), refused by what ends it.
  CHECK_FALSE(names_allows(decl, " cudaMalloc"));
  CHECK_FALSE(names_allows(decl_blank, "cudaMemcpy"));
  CHECK_FALSE(names_allows(decl_blank, "cudaStreamCreate"));
  CHECK_FALSE(names_allows(decl_blank, "cudaX"));
  CHECK_FALSE(names_allows(decl_blank + "__", "cudaPush"));  // `__cuda...`
  CHECK_FALSE(names_allows(decl_blank + "__", "cuda"));
  CHECK(names_allows(decl_blank + "_", "cuda"));
  CHECK(names_allows(decl, " cuda"));
  CHECK(names_allows(decl_blank + "cuda", "_x"));
  CHECK(names_allows(decl_blank, "cudax"));
  CHECK(names_allows(decl, " malloc"));
  CHECK(names_allows(decl_blank, "malloc"));
  CHECK(names_allows(decl_blank, "printf"));
  CHECK(names_allows(decl, " freeze"));
  CHECK_FALSE(names_allows(decl_blank + "malloc", ";"));
  CHECK_FALSE(names_allows(decl_blank + "printf", " "));
  CHECK(names_allows(decl_blank + "printf", "s"));
  CHECK(names_allows(decl_blank + "mallo", "c"));
  // fill() agrees with allows() on every token where such names start, are pending and end.
  std::vector<std::uint8_t> m;
  int mismatches = 0;
  for (const std::string& at : {decl, decl_blank, decl_blank + "c", decl_blank + "cu",
                                decl_blank + "cuda", decl_blank + "mal", decl_blank + "malloc",
                                decl_blank + "__", decl_blank + "free", launch, launch + "pr"}) {
    BpeGrammarMask mask = names_mask_after(at);
    m.resize(mask.size());
    mask.fill(m);
    for (std::size_t i = 0; i < m.size(); ++i) {
      if ((m[i] != 0) != mask.allows(static_cast<TokenId>(i)) && ++mismatches <= 3) {
        UNSCOPED_INFO("after '" << at << "': token '"
                                << names_tokenizer()->token_bytes(static_cast<TokenId>(i))
                                << "' fill " << int{m[i]});
      }
    }
  }
  CHECK(mismatches == 0);
}

// The rules that keep random programs compiling (docs/bpe.md, "The compile stage of random
// programs"): each refuses what NVRTC refused in random walks, at the byte where it goes wrong,
// and takes what the corpus writes.
