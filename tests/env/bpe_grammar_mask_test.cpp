// The grammar mask over BPE tokens: every corpus program (reward's reference programs and the
// design space's, in the form bpe_program_text() gives) is accepted token by token, and the closed
// tokens the mask read are exactly what the closed tokenizer's encode() makes of the text; random
// episodes under the mask end with <eos> within max_tokens and decode to programs that encode,
// parse and balance their brackets; fill() agrees with allows() on every token along random
// episodes; specific bad tokens are refused where they stand. The tokenizers are trained here by
// the project's trainer, on the corpus's programs (a small vocabulary, so the tests run fast).
#include "sparserl/env/bpe_grammar_mask.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "catch.hpp"
#include "env_test_support.hpp"
#include "sparserl/datasets/random.hpp"
#include "sparserl/env/bpe_trainer.hpp"
#include "sparserl/env/tokenizer.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::env;
using sparserl::testing::has_substring;

std::vector<fixtures::CorpusProgram> corpus() {
  auto programs = fixtures::reference_corpus();
  for (auto& p : fixtures::design_space_corpus()) programs.push_back(std::move(p));
  return programs;
}

// A BPE tokenizer learnt from the corpus's programs in BPE form (Qwen2's pattern by default).
std::shared_ptr<const BpeTokenizer> trained(int vocab_size, std::string pattern = "") {
  BpeTrainerOptions options;
  options.vocab_size = vocab_size;
  if (!pattern.empty()) options.pattern = pattern;
  BpeTrainer trainer(options);
  for (const auto& p : corpus()) trainer.add_text(bpe_program_text(p.text));
  return std::make_shared<const BpeTokenizer>(BpeTokenizer::parse(trainer.train(), "trained"));
}

std::shared_ptr<const BpeTokenizer> small_tokenizer() {
  static const auto t = trained(600);
  return t;
}

// As many merges as the corpus programs give (about 1,100 tokens): longer tokens, longer names.
std::shared_ptr<const BpeTokenizer> larger_tokenizer() {
  static const auto t = trained(4096);
  return t;
}

BpeGrammarMask make_mask(int max_tokens,
                         std::shared_ptr<const BpeTokenizer> tokenizer = small_tokenizer()) {
  BpeGrammarOptions options;
  options.max_tokens = max_tokens;
  return BpeGrammarMask(std::move(tokenizer), options);
}

// Feeds text token by token (its BPE encoding); the index of the first refused token or -1.
int feed_text(BpeGrammarMask& mask, const std::string& text) {
  const std::vector<TokenId> ids = small_tokenizer()->encode(text);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (!mask.allows(ids[i])) return static_cast<int>(i);
    mask.advance(ids[i]);
  }
  return -1;
}

// Does the mask take `piece` (bytes, each its own token) after `prefix`?
bool takes_after(const std::string& prefix, const std::string& piece, int max_tokens = 4000) {
  BpeGrammarMask mask = make_mask(max_tokens);
  REQUIRE(feed_text(mask, prefix) == -1);
  const auto tokenizer = small_tokenizer();
  for (char c : piece) {
    const TokenId id = *tokenizer->byte_token(static_cast<unsigned char>(c));
    if (!mask.allows(id)) return false;
    mask.advance(id);
  }
  return true;
}

// The offset of the first byte of `piece` (each its own token) the mask refuses after `prefix`, or
// -1 where it takes them all.
int first_refused(const std::string& prefix, const std::string& piece, int max_tokens = 4000) {
  BpeGrammarMask mask = make_mask(max_tokens);
  REQUIRE(feed_text(mask, prefix) == -1);
  const auto tokenizer = small_tokenizer();
  for (std::size_t i = 0; i < piece.size(); ++i) {
    const TokenId id = *tokenizer->byte_token(static_cast<unsigned char>(piece[i]));
    if (!mask.allows(id)) return static_cast<int>(i);
    mask.advance(id);
  }
  return -1;
}

const std::string kHead =
    "//@format csr\n//@launch spmv grid=ceil_div(max(M, 1), 4) block=128\n"
    "extern \"C\" __global__ void spmv(const int* __restrict__ row_ptr, const int* __restrict__ "
    "col_idx, const value_t* __restrict__ val, const value_t* __restrict__ x, value_t* "
    "__restrict__ y) {\n";

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
TEST_CASE("the BPE grammar mask refuses what NVRTC refuses where it goes wrong", "[env][bpe][mask]") {
  SECTION("keywords the grammar does not model") {
    // Refused at the first byte no allowed word or name starts with: `str`, `sw`, `thi` (`th`
    // may be threadIdx), `de`, `t` after `.` (a member: x y z w).
    CHECK(first_refused(kHead, "  struct s;") == 4);
    CHECK(first_refused(kHead, "  switch (M) {") == 3);
    CHECK(first_refused(kHead, "  int i = this;") == 12);
    CHECK(first_refused(kHead, "  if (defined(M)) {}") == 7);
    CHECK(first_refused(kHead, "  int i = 0; i.template") == 15);
    CHECK(first_refused(kHead, "  typedef int T;") == 3);
    CHECK(first_refused(kHead, "#define A typedef\n") == 11);  // `ty`: no known name either
    // What kernels write: loops, branches, casts, `defined` on an #if line.
    CHECK(first_refused(kHead,
                        "  for (int i = 0; i < 4; ++i) { if (i > 2) break; else continue; }\n"
                        "  bool b = static_cast<long long>(M) > 0 && true;\n"
                        "#if defined(M)\n#endif\n") == -1);
  }
  SECTION("operands and operators alternate") {
    CHECK(first_refused(kHead, "  y[0] = x[0] + ;") == 16);  // an operand is due
    CHECK(first_refused(kHead, "  y[0] = * / 2;") == 11);
    CHECK(first_refused(kHead, "  int i = 2 3;") == 12);     // no operand after an operand
    CHECK(first_refused(kHead, "  int i = M M;") == 12);
    CHECK(first_refused(kHead, "  if M") == 5);              // `(` after if
    CHECK(first_refused(kHead, "  while (") == -1);
    CHECK(first_refused(kHead, "  while ()") == 9);          // ... and a condition
    CHECK(first_refused(kHead,
                        "  int i = (1) + -2 * !0 - ~1, j = i++ + ++i;\n"
                        "  if (M > 0 && i <= 2) y[0] = x[i] * 0.5f + (value_t)1 + value_t(2);\n"
                        "  int k = static_cast<int>(-x[0]) ? 1 : 2;\n") == -1);
  }
  SECTION("builtin functions are called, threadIdx & co name a member, a block's names no call") {
    CHECK(first_refused(kHead, "  int i = sqrtf;") == 15);
    CHECK(first_refused(kHead, "  int i = threadIdx;") == 19);
    CHECK(first_refused(kHead, "  int i = 0; i(") == 14);
    CHECK(first_refused(kHead, "  int i = threadIdx.x + sqrtf(2.0f) + min(1, 2) + warpSize;\n") == -1);
  }
  SECTION("a preprocessor line's body is an expression of known names") {
    CHECK(first_refused(kHead, "#define A 1 +\n") == 13);
    CHECK(first_refused(kHead, "#define A B\n") == 11);  // a new name (B may be BSR_C)
    CHECK(first_refused(kHead, "#if M(") == 5);          // no call on #if
    CHECK(first_refused(kHead, "#if M = 1") == 7);       // nor an assignment
    CHECK(first_refused(kHead,
                        "#define W (M > 0 ? NNZ / M : 0)\n#define F(a) (a + W)\n#define E()\n"
                        "#if K % 2 == 0 && defined(W)\n#endif\n  y[0] = F(2);\n") == -1);
  }
  SECTION("statements end with `;`, for statements have their clauses, blocks stand alone") {
    CHECK(first_refused(kHead, "  int i = 0 }") == 12);       // `;` first
    CHECK(first_refused(kHead, "  int i = 0\n#pragma unroll\n}") == 27);  // also after a line
    CHECK(first_refused(kHead, "  y[0 ;") == 6);              // no `;` inside brackets
    CHECK(first_refused(kHead, "  for (int i = 0; i < 4)") == 23);
    CHECK(first_refused(kHead, "  int i = (int j") == 15);    // no declaration in a group
    CHECK(first_refused(kHead, "  int i = sqrtf({") == 16);   // nor a block in a call
    CHECK(first_refused(kHead,
                        "  { }\n  if (M) { y[0] = 1; } else { int i = (int)x[0]; }\n"
                        "  for (;;) break;\n  for (int i = 0, j = 1; i < j; ++i) {\n"
                        "#pragma unroll\n  }\n") == -1);
  }
  SECTION("casts, builtins' arguments and members, launch bounds") {
    CHECK(first_refused(kHead, "  int i = static_cast(1);") == 21);
    CHECK(first_refused(kHead, "  int i = static_cast<int, long>(1);") == 25);
    CHECK(first_refused(kHead, "  int i = static_cast<int>1;") == 26);
    CHECK(first_refused(kHead, "  int i = threadIdx.w;") == 20);
    CHECK(first_refused(kHead, "  int i = threadIdx->x;") == 19);
    CHECK(first_refused(kHead, "  int i = sqrtf();") == 16);
    CHECK(first_refused(kHead, "  y[0] = sqrtf(void") == 16);  // `vo`: nor volatile
    CHECK(first_refused(kHead, "  uint i;") == 6);
    CHECK(first_refused(kHead, "#if value_t\n") == 7);  // `valu`: val is a name
    CHECK(first_refused(kHead,
                        "  __syncthreads();\n  int i = static_cast<const int>(blockIdx.x) + "
                        "reinterpret_cast<const int4*>(row_ptr)[0].w;\n") == -1);
    const std::string head = "//@format csr\n//@launch k grid=K block=128\n#define B 128\n"
                             "extern \"C\" __global__ void __launch_bounds__(";
    CHECK(first_refused(head, "threadIdx") == 0);  // no variable: a constant expression
    CHECK(first_refused(head, "B * 2) k(") == -1);
    CHECK(first_refused(head, "B < 2") == 2);   // arithmetic alone
    CHECK(first_refused(head, "1.5") == 1);     // an integer
    CHECK(first_refused(head, "(B, 2") == 2);   // `,` between its arguments alone
    CHECK(first_refused(head, "B, 2) k(") == -1);
  }
  SECTION("no function declared in a function, defined names a name") {
    CHECK(first_refused(kHead, "  int f();") == 7);
    CHECK(first_refused(kHead, "  int i = (1)(2);") == 13);      // a group is no function
    CHECK(first_refused(kHead, "  int i = sqrtf(1)(2);") == 18);  // nor is a call's value
    CHECK(first_refused(kHead, "  if (M) (y)[0] = *(y + 1);\n  (y + 1)[0] = 2;\n") == -1);
    CHECK(first_refused(kHead, "#if defined 5") == 12);
    CHECK(first_refused(kHead, "#if defined nullptr") == 12);
    CHECK(first_refused(kHead, "#if defined M && defined(K)\n#endif\n") == -1);
  }
  SECTION("assignments to variables and elements, * of pointers, members of variables") {
    // (`=` is refused at the blank after it: it might have grown into `==`.)
    CHECK(first_refused(kHead, "  M = 1;") == 5);                  // a constant
    CHECK(first_refused(kHead, "  x[0] = 1;") == 8);               // an element of a const pointer
    CHECK(first_refused(kHead, "  const int i = 0; i++;") == 21);  // a const variable
    CHECK(first_refused(kHead, "  int i = 0; y[*i] = 1;") == 16);   // * takes a pointer
    CHECK(first_refused(kHead, "  int i = 0; i[0] = 1;") == 14);    // [ ] too
    CHECK(first_refused(kHead, "  y[0] = M.x;") == 10);             // no member of a constant
    CHECK(first_refused(kHead, "  int i = 0; i = i + *y + y[0];\n  y[i]++;\n  *y = 1;\n"
                               "  const float4 v = *reinterpret_cast<const float4*>(x);\n"
                               "  y[0] += v.x + x[0];\n") == -1);
  }
  SECTION("a device function's parameters are declarations") {
    const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
    CHECK(first_refused(head, "__device__ int f(M") == 17);
    CHECK(first_refused(head, "__device__ int f(int a, )") == 24);
    CHECK(first_refused(head, "__device__ int f(int (") == 21);
    CHECK(first_refused(head, "__device__ int f(void") == 18);
    CHECK(first_refused(head, "__device__ int f(static int a)") == 18);
    CHECK(first_refused(head, "__device__ int f(int a = 1)") == 23);
    CHECK(first_refused(head,
                        "__device__ int f() { return 0; }\n"
                        "__device__ value_t g(const value_t* __restrict__ p, int, long long n) {\n"
                        "  return p[n];\n}\n") == -1);
  }
  SECTION("casts take an operand, __restrict__ a pointer, <cstdint> names none") {
    CHECK(first_refused(kHead, "  int i = (int);") == 15);
    CHECK(first_refused(kHead, "  int i = sizeof;") == 16);
    // `,`: a name or an operand (`long(...)` a functional cast), no second declaration.
    CHECK(first_refused(kHead, "  int i = 1, long j;") == 18);
    CHECK(first_refused(kHead, "  __restrict__ int i;") == 6);  // `__res`: no pointer before
    CHECK(first_refused(kHead, "  uint8_t i;") == 6);           // `uint8` (uint4 is CUDA's)
    CHECK(first_refused(kHead, "  int i = 1, j = (int)x[0] + sizeof(value_t) + sizeof i;\n") == -1);
  }
  SECTION("a launched kernel is declared outside #if") {
    const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
    CHECK(first_refused(head, "#if M\nextern") == 6);
    CHECK(first_refused(head, "#if M\n#endif\nextern \"C\" __global__ void k(") == -1);
  }
  SECTION("a template declares its parameters") {
    const std::string head = "//@format csr\n//@launch k grid=K block=32\n";
    CHECK(first_refused(head, "template <>") == 10);
    CHECK(first_refused(head, "template <int G, >") == 17);
    CHECK(first_refused(head, "template <int G, int H>\n__device__ int f() { return G + H; }\n") ==
          -1);
  }
}

// Continued (the case above at its size limit): statements and directives in their places.
TEST_CASE("the BPE grammar mask refuses what NVRTC refuses where it goes wrong, continued",
          "[env][bpe][mask]") {
  SECTION("continue and break only in a loop's body") {
    // (NVRTC: "a continue statement may only be used within a loop"; no switch, so break too.)
    CHECK(first_refused(kHead, "  continue;") == 5);  // `cont`: const goes no further
    CHECK(first_refused(kHead, "  if (M) break;") == 10);
    CHECK(first_refused(kHead, "  for (;;) { }\n  break;") == 18);  // after the loop's body
    CHECK(first_refused(kHead, "  for (;;) y[0] = 1;\n  continue;") == 26);
    CHECK(first_refused(kHead,
                        "  for (int i = 0; i < 4; ++i) { if (i > 2) { break; } continue; }\n"
                        "  for (;;) if (M) continue;\n  while (M) break;\n"
                        "  while (M) { for (int i = 0; i < 2; ++i) y[i] = 0; break; }\n") == -1);
  }
  SECTION("no #else or #elif after an #if's #else") {
    // (NVRTC: "directive is not allowed -- an #else has already appeared".)
    CHECK(first_refused(kHead, "#if M\n#else\n#else") == 14);  // `#el`: elif too
    CHECK(first_refused(kHead, "#ifdef M\n#else\n#elif") == 17);
    CHECK(first_refused(kHead, "#if M\n#else\n#if K\n#else\n#endif\n#else") == 33);
    CHECK(first_refused(kHead,
                        "#if M\n#elif K\n#else\n#if K\n#elif M\n#else\n#endif\n#endif\n"
                        "#if M\n#else\n#endif\n#ifdef K\n#else\n#endif\n") == -1);
  }
  SECTION("a conditional operator's `?` takes its `:` before the expression closes") {
    // (NVRTC: `expected a ":"`; a `:` with no `?` open: `expected a ";"`.)
    CHECK(first_refused(kHead, "  int i = M ? 1;") == 15);
    CHECK(first_refused(kHead, "  y[M ? 1] = 0;") == 9);
    CHECK(first_refused(kHead, "  y[0] = sqrtf(M ? 1, 2);") == 20);
    CHECK(first_refused(kHead, "  int i = M : 1;") == 12);
    CHECK(first_refused(kHead, "  int i = M ? 1 : 2 : 3;") == 20);
    CHECK(first_refused(kHead,
                        "  int i = M > 0 ? (K ? 1 : 2) : M ? 3 : 4, j = i ? y[i ? 0 : 1] : 0;\n"
                        "  y[0] = sqrtf(i ? 1.0f : 2.0f) + (j > 1 ? 1 : 0);\n") == -1);
  }
}

// Continued again (the case above at its size limit): preprocessor lines, declarations, operands.
TEST_CASE("the BPE grammar mask refuses what NVRTC refuses where it goes wrong, continued again",
          "[env][bpe][mask]") {
  SECTION("on #if lines `defined ( NAME )` and a `?` with its `:`") {
    // (NVRTC: `expected a ")"` after `defined(M %`, `expected a ":"` at a line's end.)
    CHECK(first_refused(kHead, "#if defined(M % 2\n") == 14);
    CHECK(first_refused(kHead, "#if defined(M\n") == 13);
    CHECK(first_refused(kHead, "#if defined\n") == 11);
    CHECK(first_refused(kHead, "#if defined((M))\n") == 12);
    CHECK(first_refused(kHead, "#if M ? K\n") == 9);
    CHECK(first_refused(kHead, "#if (M ? K)\n") == 10);
    CHECK(first_refused(kHead, "#if M : K\n") == 6);
    CHECK(first_refused(kHead, "#define A (M > 0 ? 1\n") == 20);
    CHECK(first_refused(kHead,
                        "#if defined(M) && (defined K || M > 0 ? (K ? 1 : 2) : 0)\n#endif\n"
                        "#define A (M > 0 ? NNZ / M : 0)\n") == -1);
  }
  SECTION("a prefix ++ / -- takes a variable or a parenthesis") {
    // (NVRTC: "expression must be a modifiable lvalue" of `--M`, `++2`, `--int(1)`.)
    CHECK(first_refused(kHead, "  int i = ++2;") == 12);
    CHECK(first_refused(kHead, "  int i = --M;") == 12);
    CHECK(first_refused(kHead, "  y[0] = ++value_t(1);") == 14);  // `valu`: val is a pointer
    CHECK(first_refused(kHead, "  int i = 0; i = ----i;") == 19);
    CHECK(first_refused(kHead, "  int i = 0; ++i; --y[i]; ++(i); y[++i] = i-- + -(--i);\n") == -1);
  }
  SECTION("no member of a call's or a group's value") {
    // (NVRTC: "expression must have class type but it has type "int"".)
    CHECK(first_refused(kHead, "  int i = int(1).x;") == 16);
    CHECK(first_refused(kHead, "  int i = (M).x;") == 13);
    CHECK(first_refused(kHead, "  if (M).x") == 9);  // `.` may start `.5`
    CHECK(first_refused(kHead,
                        "  float4 v = reinterpret_cast<const float4*>(x)[0];\n"
                        "  y[0] = v.x + reinterpret_cast<const float4*>(x)->y + threadIdx.x;\n") ==
          -1);
  }
  SECTION("no division by what may be 0 on #if lines, none in __launch_bounds__") {
    // (NVRTC: "division by zero" - an unknown name on #if is 0, EMPTY_ROWS is on some matrix.)
    CHECK(first_refused(kHead, "#if M / EMPTY_ROWS\n") == 8);
    CHECK(first_refused(kHead, "#if M % 0\n") == 8);
    CHECK(first_refused(kHead, "#if M / warpSize\n") == 8);
    CHECK(first_refused(kHead, "#if M / (K)\n") == 8);
    CHECK(first_refused(kHead, "#define C 4\n#if M % C == 0 && K / 2 > 1 && M / K\n#endif\n") ==
          -1);
    const std::string head = "//@format csr\n//@launch k grid=K block=128\n#define B 128\n"
                             "extern \"C\" __global__ void __launch_bounds__(";
    CHECK(first_refused(head, "B / 2") == 2);
    CHECK(first_refused(head, "B * 2 - 1) k(") == -1);
    CHECK(first_refused(head, "B, 2, 1) k(") == 4);  // at most two arguments
    CHECK(first_refused(head, "B, (2)) k(") == -1);
  }
  SECTION("extern in a function: where a statement starts, then __shared__") {
    // (NVRTC: a host variable at namespace scope of `extern int v;`, "a storage class may not be
    // specified here" of `const extern`.)
    CHECK(first_refused(kHead, "  extern int v;") == 9);
    CHECK(first_refused(kHead, "  int i = 0; const extern") == 19);
    CHECK(first_refused(kHead, "  y[0] = (extern") == 12);  // `ext`: exp goes no further
    CHECK(first_refused(kHead, "  extern __shared__ value_t s[];\n  s[0] = 1;\n") == -1);
  }
  SECTION("an #if group keeps the code's brackets as they were at its #if") {
    // (NVRTC: `expected a ")"` after an #endif whose dropped branch held the `)`.)
    CHECK(first_refused(kHead, "  int i = (1\n#if M\n)") == 19);
    CHECK(first_refused(kHead, "#if M\n  y[0] = (1\n#endif") == 19);  // `#e`: #else, #elif too
    CHECK(first_refused(kHead, "#if M\n  {\n#else") == 11);
    CHECK(first_refused(kHead,
                        "  int i = 0;\n#if M\n  i = (1 + 2);\n#elif K\n  { i = 1; }\n#else\n"
                        "  i = 2;\n#endif\n  y[0] = i\n#if M\n  + 1\n#endif\n  ;\n") == -1);
  }
  SECTION("`>` after an operand, a cast's type or a template's parameter") {
    // (NVRTC: `expected a ";"` of `long v >`, `expected an identifier` of `double >`.)
    CHECK(first_refused(kHead, "  long v >") == 9);
    CHECK(first_refused(kHead, "  int i = (float >") == 17);
    CHECK(first_refused(kHead, "  double >") == 9);
    CHECK(first_refused(kHead, "  int i = M > 1 && static_cast<const int*>(row_ptr)[0] >= 0;\n") ==
          -1);
    CHECK(first_refused("//@format csr\n//@launch k grid=K block=32\n",
                        "template <int G, int H>\n__device__ int f() { return G > H; }\n") == -1);
  }
  SECTION("a subscript holds an expression") {
    // (NVRTC: "expected an expression" of `y[]`, `y<::>` - a digraph's `]`.)
    CHECK(first_refused(kHead, "  y[] = 1;") == 4);
    CHECK(first_refused(kHead, "  int i = y[:>;") == 12);  // `:>` is `]`
    CHECK(first_refused(kHead, "  extern __shared__ value_t s[];\n  s[0] = y[0];\n") == -1);
  }
  SECTION("integers on #if lines") {
    // (NVRTC: "expression must have integral or enum type" of `#if M > .5`.)
    CHECK(first_refused(kHead, "#if M > .5\n") == 8);
    CHECK(first_refused(kHead, "#if M > 6.\n") == 9);
    CHECK(first_refused(kHead, "#if M > 1e3\n") == 9);
    CHECK(first_refused(kHead, "#if M > 0x1f && K < 10u\n#endif\n#define A 1.5f\n") == -1);
  }
  SECTION("no nullptr") {
    // (NVRTC: "expression must have arithmetic or unscoped enum type" of `nullptr / 2`.)
    CHECK(first_refused(kHead, "  int i = nullptr / 2;") == 10);  // `n`: no name starts so
    CHECK(first_refused(kHead, "  int i = NNZ / 2;\n") == -1);
  }
  SECTION("after a type or a qualifier a name is declared where a declaration stands") {
    // (NVRTC: `expected a ")"` of `(int i`, "explicit type is missing" of `const y`.)
    CHECK(first_refused(kHead, "  int i = 0; y[0] = (int i") == 25);
    CHECK(first_refused(kHead, "  const y") == 8);
    CHECK(first_refused(kHead, "  int i = 0; i = sizeof(const int* i") == 35);
    CHECK(first_refused(kHead,
                        "  int i = (int)M + sizeof(int);\n  const int j = i;\n"
                        "  for (int k = 0; k < j; ++k) { value_t* const p = y; p[k] = 0; }\n") ==
          -1);
  }
  SECTION("#ifdef, #ifndef and #undef define no name") {
    // (NVRTC: "identifier is undefined" of a name #undef or #ifdef named and nothing defined.)
    CHECK(first_refused(kHead, "#undef A\n  y[0] = A;") == 18);
    CHECK(first_refused(kHead, "#define A 1\n#undef A\n  y[0] = A;") == 30);
    CHECK(first_refused(kHead, "#ifdef A\n#endif\n  y[0] = A;") == 25);
    CHECK(first_refused(kHead,
                        "#ifndef A\n#define A 2\n#endif\n  y[0] = A;\n#undef A\n  int A = 1;\n") ==
          -1);
  }
  SECTION("else right after an if's statement") {
    // (NVRTC: "expected a statement" of an `else` after anything else.)
    CHECK(first_refused(kHead, "  else") == 3);  // `el`: no word goes on so
    CHECK(first_refused(kHead, "  if (M) y[0] = 1;\n  y[0] = 2;\n  else") == 34);
    CHECK(first_refused(kHead, "  for (;;) { }\n  else") == 18);
    CHECK(first_refused(kHead,
                        "  if (M) y[0] = 1; else y[0] = 2;\n  if (M) { } else if (K) { y[0] = 1; }"
                        " else { }\n  if (M) for (;;) { } else while (K) { }\n"
                        "  if (M) if (K) y[0] = 1; else y[0] = 2;\n") == -1);
  }
  SECTION("no assignment to a call's value") {
    // (NVRTC: "expression must be a modifiable lvalue" of `int(M) = 1`, `min(1, 2)++`.)
    CHECK(first_refused(kHead, "  y[int(M) = 0] = 1;") == 12);  // at the blank: `==` may follow
    CHECK(first_refused(kHead, "  int i = min(1, 2)++;") == 20);
    CHECK(first_refused(kHead,
                        "  *reinterpret_cast<value_t*>(y) = 1;\n  reinterpret_cast<value_t*>(y)[0] = 2;"
                        "\n  *(y + 1) += min(1, 2);\n") == -1);
  }
  SECTION("a brace initializer ends its declarator; a functional cast's braces are a value") {
    // (NVRTC: `expected a ";"` after `int i {}` and a `}`, an operand or a second initializer.)
    CHECK(first_refused(kHead, "  int i {}\n}") == 11);
    CHECK(first_refused(kHead, "  int i {} + 1;") == 11);
    CHECK(first_refused(kHead, "  int i {} {") == 11);
    CHECK(first_refused(kHead, "  int i {0} M") == 12);
    CHECK(first_refused(kHead, "  int i {return") == 11);  // `ret`: expressions in the braces
    CHECK(first_refused(kHead, "  int i = value_t{} M;") == 20);  // a value: no operand after
    CHECK(first_refused(kHead,
                        "  int i {}, j{M + 1};\n  for (int k{0}; k < j; ++k) y[k] = value_t{} + "
                        "value_t{1};\n") == -1);
  }
}

// Types: what the grammar knows of a value's type (a declared name's, a type word's, a few
// builtins' results) against what NVRTC checks.
TEST_CASE("the BPE grammar mask refuses what NVRTC refuses of types", "[env][bpe][mask]") {
  SECTION("a cast's parenthesis holds its type alone") {
    // (NVRTC: `expected a ")"` of `(const char(`, `sizeof(size_t ,`, `(float *__shared__`.)
    CHECK(first_refused(kHead, "  y[0] = (const char(1));") == 20);
    CHECK(first_refused(kHead, "  int i = sizeof(size_t, 1);") == 23);
    CHECK(first_refused(kHead, "  int i = (int const short {}) + 1;") == 27);
    CHECK(first_refused(kHead, "  y[0] = (float *__shared__) 1;") == 19);  // `__s`
    CHECK(first_refused(kHead, "  y[0] = (static int) 1;") == 16);         // `static`: static_cast
    CHECK(first_refused(kHead,
                        "  int i = (const int)M + sizeof(const volatile unsigned long*) + (int)(M);"
                        "\n  y[0] = ((const value_t* __restrict__)x)[0] + (value_t)i;\n") == -1);
  }
  SECTION("% << & | ^ take integers, * / no pointer") {
    // (NVRTC: "expression must have integral or unscoped enum type" of `x[0] % 2`, `1 << 2.5`;
    // "arithmetic or unscoped enum type" of `x * 2` with x a pointer.)
    CHECK(first_refused(kHead, "  y[0] = x[0] % 2;") == 14);   // at the blank: `%>` is `}`
    CHECK(first_refused(kHead, "  int i = 1.5 << 2;") == 15);  // `<`: a comparison
    CHECK(first_refused(kHead, "  int i = 0; i = i % x[0];") == 21);
    CHECK(first_refused(kHead, "  int i = 0; i = i ^ 2.5;") == 22);
    CHECK(first_refused(kHead, "  int i = 0; i = i & value_t(1);") == 21);
    CHECK(first_refused(kHead, "  int i = ~x[0];") == 11);
    CHECK(first_refused(kHead, "  int i = x * 2;") == 12);
    CHECK(first_refused(kHead, "  int i = 0; i = (1.5 + i) % 2;") == 27);  // a floating group
    CHECK(first_refused(kHead, "  int i = (x[0]) << 1;") == 18);
    CHECK(first_refused(kHead, "  int i = (double)M % 2;") == 20);   // a floating cast's value
    CHECK(first_refused(kHead, "  int i = (float*)y << 1;") == 21);  // a pointer cast's (`<:`)
    CHECK(first_refused(kHead, "  int i = 5 % (double)M;") == 21);   // an integer due (double4)
    CHECK(first_refused(kHead, "  int i = 5 % (sin(1.));") == 17);
    CHECK(first_refused(kHead, "  return 1;") == 9);  // a kernel returns void
    CHECK(first_refused(kHead, "  int i = row_ptr / 2;") == 18);
    CHECK(first_refused(kHead,
                        "  int i = 1 % 2 << 3 & ~4;\n"
                        "  i = (int)x[0] % 2 + !x[1] % 2 + (int)(1.5f) % 2 + x[i] * 2 + i++ % 2;\n"
                        "  float f = 0.5f;\n  i = i % (int)f + sizeof f % 2 + -i % 3 + 5 % (i + 1);\n"
                        "  value_t* p = y + 1;\n  p[0] = p[1] * 2;\n") == -1);
  }
  SECTION("no pointer where a value is due, no < > <= >= after one") {
    // (NVRTC: "expression must have arithmetic or unscoped enum type" of `2 * x`, `-x`; "operand
    // types are incompatible" of `1 < row_ptr`, `row_ptr < 1`, `M == col_idx`.)
    CHECK(first_refused(kHead, "  y[0] = 2 * x;") == 14);
    CHECK(first_refused(kHead, "  int i = 1 < row_ptr;") == 21);
    CHECK(first_refused(kHead, "  int i = row_ptr < 1;") == 19);  // `<:` is `[`
    CHECK(first_refused(kHead, "  y[0] = -x;") == 11);
    CHECK(first_refused(kHead, "  int i = M == col_idx;") == 22);
    CHECK(first_refused(kHead,
                        "  y[0] = 2 * x[0] + val[1] / x[2] - -x[0];\n  int i = row_ptr[1] < col_idx[0];"
                        "\n  bool b = x == y;\n  const value_t* p = x + 1;\n  int d = y - x;\n"
                        "  if (x != y && i < M) y[0] = M * *x;\n") == -1);
  }
  SECTION("no cast of a pointer to a floating type, of a floating value to a pointer") {
    // (NVRTC: "invalid type conversion" of `(float)x`, `(value_t*)f`, `(int*)1.5`.)
    CHECK(first_refused(kHead, "  y[0] = (float)x;") == 17);
    CHECK(first_refused(kHead, "  y[0] = (value_t)val + 1;") == 22);
    CHECK(first_refused(kHead, "  value_t f = 1; y = (value_t*)f;") == 32);
    CHECK(first_refused(kHead, "  value_t f = 1; y = (value_t* const)f;") == 38);
    CHECK(first_refused(kHead, "  y = (int*)1.5;") == 13);
    CHECK(first_refused(kHead, "  y = (value_t*)sqrtf(1.f);") == 17);  // `sq`: sqrt too
    CHECK(first_refused(kHead,
                        "  value_t f = (value_t)x[0] + (float)M + (double)-f + (float)*x;\n"
                        "  const value_t* p = (const value_t*)x + (int)f;\n"
                        "  value_t& r = (value_t&)row_ptr[0];\n  int& q = (int&)f;\n"
                        "  p = (value_t* const)y + (size_t)(int*)0;\n"
                        "  f = ((const value_t* __restrict__)x)[0] + (float)(x - y);\n") == -1);
  }
  SECTION("no type right after the parenthesis of `*(`, `&(`, `++(`") {
    // (NVRTC: "expected an expression" of `*(float)`, `&(double) )`, `**(int),`; `*(int*)p` was
    // refused at p already.)
    CHECK(first_refused(kHead, "  y[0] = *(float);") == 14);            // `flo`: floor
    CHECK(first_refused(kHead, "  y[0] = *(const value_t*)x;") == 13);  // `co`: col_idx, cos
    CHECK(first_refused(kHead, "  int i = 0; ++(unsigned)i;") == 16);
    CHECK(first_refused(kHead, "  int* p = &(int);") == 14);  // `i`: isinf & co
    CHECK(first_refused(kHead, "  int i = *(row_ptr + 1) + *(col_idx) + sizeof(int) + (int)1.5;"
                               "\n  ++(i);\n  int* p = &(i);\n") == -1);
  }
  SECTION("after a condition's or a for statement's `)` a statement: no binary operator") {
    // (NVRTC: "expected an expression" of `if (M) = 1`, `while (M) [0]`; `*` `&` `-` `++` there
    // are unary: `if (M) *y = 1` was refused at its `=`.)
    CHECK(first_refused(kHead, "  if (M) = 1;") == 9);
    CHECK(first_refused(kHead, "  while (M) [0] = 1;") == 12);
    CHECK(first_refused(kHead, "  for (;;) % 2;") == 11);
    CHECK(first_refused(kHead, "  if (M) += 1;") == 10);  // `+=`: a unary `+` alone
    CHECK(first_refused(kHead, "  if (M) *y = 1;\n  for (;;) -*y;\n  while (M) ++y[0];\n"
                               "  if (M) (*y)++;\n") == -1);
  }
  SECTION("no assignment or ++ / -- to a group whose value is no lvalue") {
    // (NVRTC: "expression must be a modifiable lvalue" of `(M)--`, `(warpSize) = 1`, `(i, 1) = 2`.)
    CHECK(first_refused(kHead, "  (M)--;") == 6);  // `(M)-` a subtraction
    CHECK(first_refused(kHead, "  int i = 0; (i + 1)++;") == 21);
    CHECK(first_refused(kHead, "  (warpSize) = 1;") == 14);  // at the blank: `==`
    CHECK(first_refused(kHead, "  (x[0]) = 1;") == 10);      // x points to const
    CHECK(first_refused(kHead, "  int i = 0; (i, 1) = 2;") == 21);
    CHECK(first_refused(kHead, "  int i = 0; (i) = 1; (i)++; (i, i) = 2; (i = 2) = 3; (*y)++;\n"
                               "  (y[0]) += 1; (i ? i : i) = 1; ((i)) = 2; (i = 1 + 2) = 3;\n") ==
          -1);
  }
  SECTION("an array's bound takes integer numbers") {
    // (NVRTC: "expression must have integral or unscoped enum type" of `float a[1.5]`.)
    CHECK(first_refused(kHead, "  float a[1.5];") == 11);
    CHECK(first_refused(kHead, "  float a[6e8 / 2];") == 11);
    CHECK(first_refused(kHead, "  float a[2 * (1.5)];") == 16);
    CHECK(first_refused(kHead, "  float a[(int)1.5 + sizeof 2.5 + 0x1e + 2u], b[2];\n"
                               "  b[1] = 2.5;\n") == -1);
  }
  SECTION("a shift count on an #if line is one digit") {
    // (NVRTC: "shift count is too large" of `#if M << NNZ` on a matrix of 64 nonzeros or more,
    // "shift count is negative" of `>> -1`.)
    CHECK(first_refused(kHead, "#if M << NNZ\n") == 9);
    CHECK(first_refused(kHead, "#if M >> -1\n") == 9);
    CHECK(first_refused(kHead, "#if M << 12\n") == 10);
    CHECK(first_refused(kHead, "#if M << (1)\n") == 9);
    CHECK(first_refused(kHead, "#if M << 5u && K >> 0\n#endif\n  int i = M << 40;\n") == -1);
  }
}

TEST_CASE("the BPE grammar mask refuses what NVRTC refuses of builtin calls",
          "[env][bpe][mask]") {
  SECTION("a builtin takes at most its arguments, a functional cast one") {
    // (NVRTC: "too many arguments in function call" of `sqrt(a, b)`, `expected a ")"` of
    // `int(1, 2)`.)
    CHECK(first_refused(kHead, "  y[0] = sqrt(x[0], 1);") == 18);
    CHECK(first_refused(kHead, "  int i = int(1, 2);") == 15);
    CHECK(first_refused(kHead, "  int i = min(1, 2, 3);") == 18);
    CHECK(first_refused(kHead, "  int i = __activemask(1);") == 23);
    CHECK(first_refused(kHead,
                        "  int i = min(1, max(2, 3)) + __shfl_down_sync(0xffffffffu, 1, 1, 32);\n"
                        "  y[0] = fma(x[0], 2, 1) + (value_t)(1, 2) + int(i);\n") == -1);
  }
  SECTION("a builtin takes its arguments at least") {
    // (NVRTC: "too few arguments in function call", "no instance of overloaded function" of
    // `max(1)`, `atomicAdd(y)`.)
    CHECK(first_refused(kHead, "  int i = max(1);") == 15);
    CHECK(first_refused(kHead, "  atomicAdd(y);") == 13);
    CHECK(first_refused(kHead, "  y[0] = fma(x[0], 2.f);") == 22);
    CHECK(first_refused(kHead, "  int i = __shfl_down_sync(0xffffffffu, 1);") == 41);
    CHECK(first_refused(kHead, "  atomicAdd(y, max(1, 2));\n  __syncwarp();\n") == -1);
  }
  SECTION("no subscript of a builtin's or a functional cast's value, no `->`") {
    // (NVRTC: "expression must have pointer-to-object type" of `value_t()[0]`, `__popc(1)[0]`;
    // "operator -> or ->* applied to \"float\" instead of to a pointer type" of `ceil(x[0])->`.)
    CHECK(first_refused(kHead, "  y[0] = value_t(1)[0];") == 19);
    CHECK(first_refused(kHead, "  int i = __popc(1)[0];") == 19);
    CHECK(first_refused(kHead, "  int i = ceil(x[0])->x;") == 21);  // `-` a subtraction
    CHECK(first_refused(kHead, "  int i = int()->x;") == 16);
    CHECK(first_refused(kHead, "  y[0] = reinterpret_cast<const value_t*>(x)[0] + (x + 1)[0];\n") ==
          -1);
  }
  SECTION("a floating overload's first argument is no integer, vector or bool") {
    // (NVRTC: "more than one instance of overloaded function" of `ceil(M)`, "no instance" of
    // `round(int2{})`, `pow(true, 2)`; a comparison makes a bool of its argument.)
    CHECK(first_refused(kHead, "  y[0] = ceil(M);") == 14);
    CHECK(first_refused(kHead, "  int i = 0; y[0] = sqrt(i);") == 25);
    CHECK(first_refused(kHead, "  y[0] = round(int(2));") == 15);
    CHECK(first_refused(kHead, "  y[0] = log(-threadIdx.x);") == 15);  // `t`: trunc
    CHECK(first_refused(kHead, "  y[0] = pow(!x[0], 2);") == 13);
    CHECK(first_refused(kHead, "  y[0] = sqrt(x[0] < 1);") == 20);   // `<`: `<<`
    CHECK(first_refused(kHead, "  y[0] = exp(col_idx[0]);") == 15);  // `co`: cos
    CHECK(first_refused(kHead,
                        "  int i = 0; float f = i;\n"
                        "  y[i] = sqrt(x[0]) + ceil(value_t(M) / 2) + pow(-x[1], 2) + log(f) +\n"
                        "         fmax(*x, i < 1) + sqrt(static_cast<float>(M)) + floor(f) +\n"
                        "         exp(float(threadIdx.x)) + sqrtf(M < 2) + ceil((x[0]));\n") == -1);
  }
  SECTION("a floating overload's first argument starts with no integer literal, in a group neither") {
    // (NVRTC: "more than one instance of overloaded function" of `ceil(2)`, `pow(2, x)`,
    // `sqrt((M))`, `sqrt((int)x)`; the completion path writes `0.` where such a number is due.)
    CHECK(first_refused(kHead, "  y[0] = ceil(2);") == 15);
    CHECK(first_refused(kHead, "  y[0] = pow(2, x[0]);") == 14);
    CHECK(first_refused(kHead, "  y[0] = ceil(0x10);") == 15);
    CHECK(first_refused(kHead, "  y[0] = sqrt(-1u);") == 16);
    CHECK(first_refused(kHead, "  y[0] = sqrt((M));") == 15);
    CHECK(first_refused(kHead, "  y[0] = sqrt((int)x[0]);") == 15);
    CHECK(first_refused(kHead,
                        "  y[0] = ceil(2.0) + sqrt(2.f * x[0]) + pow(2e3, 1) + sqrt((x[0])) +\n"
                        "         sqrt((float)M) + floor(-.5) + exp(-(1.5 + M)) + sqrtf(2) + 2;\n") ==
          -1);
  }
  SECTION("a builtin of no result is a statement") {
    // (NVRTC: "expression must have arithmetic or unscoped enum type" of `__syncthreads() * 2`.)
    CHECK(first_refused(kHead, "  y[0] = __syncthreads();") == 22);       // `(`: __syncthreads_or
    CHECK(first_refused(kHead, "  int i = 1 + __threadfence();") == 16);  // `__t`: no value
    CHECK(first_refused(kHead, "  __syncthreads() + 1;") == 18);
    CHECK(first_refused(kHead, "  __syncwarp() y") == 15);
    CHECK(first_refused(kHead,
                        "  if (M) __threadfence();\n  __syncthreads();\n  __syncwarp(), y[0] = 1;\n"
                        "  for (__syncthreads();;) break;\n  int i = __syncthreads_count(1);\n") ==
          -1);
  }
  SECTION("no vector type's functional cast in an expression") {
    // (NVRTC: "no operator ... matches these operands" of `dim3() - 1`, "no suitable constructor
    // exists" of `int4(1)`.)
    CHECK(first_refused(kHead, "  int i = dim3().x;") == 11);       // `di`: no other word
    CHECK(first_refused(kHead, "  y[0] = 1 + float4{}.x;") == 18);  // `float4`: float, then `4`
    CHECK(first_refused(kHead, "  y[0] = max(1, int2{1, 2}.x);") == 19);
    CHECK(first_refused(
              kHead,
              "  float4 v = make_float4(1, 2, 3, 4);\n  dim3 d;\n  int2 w = make_int2(1, 2);"
              "\n  y[0] = v.x + d.y + w.x + float(1);\n") == -1);
  }
}
