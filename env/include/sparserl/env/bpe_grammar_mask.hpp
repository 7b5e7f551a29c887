// The program grammar over BPE tokens: which tokens of a byte-level BPE vocabulary
// (bpe_tokenizer.hpp) a policy may emit next so that its text is a program the closed vocabulary's
// syntax mask (action_mask.hpp) accepts - the same grammar, applied to multi-character tokens.
//
// How: a character layer reads the text as the closed tokenizer's encode() does and feeds each
// lexeme it completes to the syntax mask's automaton as the closed tokens encode() writes for it
// (identifiers canonicalised to locals in order of first appearance, numbers digit by digit, ...).
// A BPE token is allowed where walking its bytes through the layer never reaches a state the
// automaton refuses, the lexeme still open at its end (an identifier, a punctuator that may grow,
// `//@lau...`) can complete to one the automaton takes, and the budget holds. fill() walks a trie
// of the vocabulary's tokens (shared prefixes are read once, states copied only where a lexeme
// completes) and keeps the masks it made by state (the layer's state, the automaton's digest and
// the names), so a state met again - every episode's first steps - costs a lookup.
//
// The text (docs/bpe.md has the details): the //@format line and 1..8 //@launch lines first,
// spelled as decode() spells them (one blank between words, a blank inside an expression only
// where decode() puts one); then CUDA code with free blanks and newlines, no comments, no string
// but "C", no character literal, `#` only first on a line, a backslash only to splice a
// preprocessor line after a blank. bpe_program_text() turns a program into that form.
//
// Guarantees (tests/env/bpe_grammar_mask_test.cpp): every sequence the mask accepts up to <eos> is
// text that Tokenizer::encode() reads as exactly the closed tokens the layer fed (closed_tokens()),
// which the syntax mask accepts, so it parses (reward::parse_program) with balanced brackets - but
// where a program calls a name that encode()'s call check does not see declared (as for the closed
// mask's own programs); the design-space and reference programs in that form are accepted token by
// token; and every episode ends with <eos> within max_tokens. The budget: the syntax mask's
// min_completion() counts closed tokens; as text each costs at most 14 bytes (`__restrict__`, the
// blank after it, a separator still due before it; a kernel name longer than 11 characters is
// counted apart), and every byte is a BPE token, so a token is allowed only where that many BPE
// tokens - and <eos> - still fit after it (docs/bpe.md). min_completion() says how many that is;
// the shortest budget a mask takes is the count at the start, 603 (its constructor refuses less).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/env/bpe_tokenizer.hpp"
#include "sparserl/env/vocabulary.hpp"

namespace sparserl::env {

// The program in the form the BPE grammar reads: comments removed (directive lines kept), lines
// left empty by that removed, trailing blanks trimmed. What a BPE policy's training text of a
// program is. TokenizeError (tokenizer.hpp) when the program does not lex.
std::string bpe_program_text(std::string_view program);

struct BpeGrammarOptions {
  int max_tokens = 1024;         // BPE tokens of a completion, <eos> included
  std::size_t mask_size = 0;     // the policy's logits (0: the tokenizer's size); ids past the
                                 // tokenizer's are never allowed
  // The masks kept per tokenizer (shared by its masks, the oldest dropped first), bounded by their
  // bytes; 0: none kept. A state recurs within one completion (each line start of a scope, each
  // argument list), so the cache has to hold a batch's rows' recent states: 64 masks (a few
  // hundred KB) were answered 7% of the time along corpus programs, 128 or more 34%.
  std::size_t cache_bytes = std::size_t{256} << 20;
};

class BpeGrammarMask {
 public:
  // The tokenizer must have an eos id and a token for every printable ASCII byte, blank and
  // newline (std::invalid_argument naming what is missing); max_tokens must cover the shortest
  // program (std::invalid_argument with the least budget). `closed` defaults to the standard
  // vocabulary.
  BpeGrammarMask(std::shared_ptr<const BpeTokenizer> tokenizer, BpeGrammarOptions options,
                 std::shared_ptr<const Vocabulary> closed = nullptr);
  ~BpeGrammarMask();
  BpeGrammarMask(const BpeGrammarMask&);
  BpeGrammarMask& operator=(const BpeGrammarMask&);
  BpeGrammarMask(BpeGrammarMask&&) noexcept;
  BpeGrammarMask& operator=(BpeGrammarMask&&) noexcept;

  [[nodiscard]] int max_tokens() const;
  [[nodiscard]] int tokens() const;        // consumed since reset()
  [[nodiscard]] std::size_t size() const;  // the mask's length
  [[nodiscard]] TokenId eos() const;
  [[nodiscard]] bool done() const;  // <eos> consumed

  void reset();
  // 1 for every allowed token, 0 elsewhere; mask.size() must be size().
  void fill(std::span<std::uint8_t> mask) const;
  // The same for one token, read on its own (no trie, no cache): fill()'s reference.
  [[nodiscard]] bool allows(TokenId token) const;
  // Consumes a token; std::invalid_argument naming it when it is not allowed.
  void advance(TokenId token);
  // BPE tokens (<eos> included) the budget keeps for completing the program from here.
  [[nodiscard]] int min_completion() const;

  // The program text so far, and the closed-vocabulary tokens the layer read from it (after
  // <eos>: exactly what Tokenizer::encode() of the text gives).
  [[nodiscard]] const std::string& text() const;
  [[nodiscard]] const std::vector<TokenId>& closed_tokens() const;

  struct CacheStats {
    std::uint64_t hits = 0, misses = 0;
    std::size_t entries = 0, bytes = 0;  // kept now
  };
  [[nodiscard]] CacheStats cache_stats() const;

  struct Shared;
  struct Progress;

 private:
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<Progress> progress_;
  BpeGrammarOptions options_;
};

}  // namespace sparserl::env
