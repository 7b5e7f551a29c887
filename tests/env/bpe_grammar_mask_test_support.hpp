// What the BPE grammar mask's tests share: tokenizers trained here on the corpus's programs (a
// small vocabulary, so the tests run fast; one of each per test binary), a mask over one, feeding
// text token by token or byte by byte, and a CSR kernel's head to write code after.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "catch.hpp"
#include "env_test_support.hpp"
#include "sparserl/env/bpe_grammar_mask.hpp"
#include "sparserl/env/bpe_trainer.hpp"

namespace sparserl::testing::bpe_mask {

using namespace sparserl::env;

inline std::vector<fixtures::CorpusProgram> corpus() {
  auto programs = fixtures::reference_corpus();
  for (auto& p : fixtures::design_space_corpus()) programs.push_back(std::move(p));
  return programs;
}

// A BPE tokenizer learnt from the corpus's programs in BPE form (Qwen2's pattern by default).
inline std::shared_ptr<const BpeTokenizer> trained(int vocab_size, std::string pattern = "") {
  BpeTrainerOptions options;
  options.vocab_size = vocab_size;
  if (!pattern.empty()) options.pattern = pattern;
  BpeTrainer trainer(options);
  for (const auto& p : corpus()) trainer.add_text(bpe_program_text(p.text));
  return std::make_shared<const BpeTokenizer>(BpeTokenizer::parse(trainer.train(), "trained"));
}

inline std::shared_ptr<const BpeTokenizer> small_tokenizer() {
  static const auto t = trained(600);
  return t;
}

// As many merges as the corpus programs give (about 1,100 tokens): longer tokens, longer names.
inline std::shared_ptr<const BpeTokenizer> larger_tokenizer() {
  static const auto t = trained(4096);
  return t;
}

inline BpeGrammarMask make_mask(int max_tokens,
                                std::shared_ptr<const BpeTokenizer> tokenizer = small_tokenizer()) {
  BpeGrammarOptions options;
  options.max_tokens = max_tokens;
  return BpeGrammarMask(std::move(tokenizer), options);
}

// Feeds text token by token (its BPE encoding); the index of the first refused token or -1.
inline int feed_text(BpeGrammarMask& mask, const std::string& text) {
  const std::vector<TokenId> ids = small_tokenizer()->encode(text);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (!mask.allows(ids[i])) return static_cast<int>(i);
    mask.advance(ids[i]);
  }
  return -1;
}

// Does the mask take `piece` (bytes, each its own token) after `prefix`?
inline bool takes_after(const std::string& prefix, const std::string& piece,
                        int max_tokens = 4000) {
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
inline int first_refused(const std::string& prefix, const std::string& piece,
                         int max_tokens = 4000) {
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

inline const std::string kHead =
    "//@format csr\n//@launch spmv grid=ceil_div(max(M, 1), 4) block=128\n"
    "extern \"C\" __global__ void spmv(const int* __restrict__ row_ptr, const int* __restrict__ "
    "col_idx, const value_t* __restrict__ val, const value_t* __restrict__ x, value_t* "
    "__restrict__ y) {\n";

}  // namespace sparserl::testing::bpe_mask
