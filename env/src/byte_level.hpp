// What the byte-level BPE tokenizer (bpe_tokenizer.hpp) and its trainer (bpe_trainer.hpp) share, a
// private header: GPT-2's byte-to-character alphabet (every byte is spelled as one printable
// character, so that a token is a string and a merge is "a b"), UTF-8 reading, the NFC check, and
// PCRE2 patterns that split text into pre-tokens as the `tokenizers` library's Split pre-tokenizer
// with behavior Isolated does (matches and the gaps between them are pieces, in order).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/env/bpe_tokenizer.hpp"

namespace sparserl::env::byte_level {

// The character that spells byte b (UTF-8), and back: the byte a spelled character stands for.
const std::array<std::string, 256>& byte_chars();
std::optional<std::uint8_t> byte_of(std::uint32_t code_point);
// `bytes` spelled in the alphabet.
std::string spell(std::string_view bytes);
// A spelled token back to bytes; nullopt when a character is outside the alphabet.
std::optional<std::string> unspell(std::string_view spelled);

// The code point at text[pos] and its length in bytes; nullopt for an invalid or truncated
// sequence (overlong forms and surrogates included).
struct CodePoint {
  std::uint32_t value = 0;
  int length = 1;
};
std::optional<CodePoint> next_code_point(std::string_view text, std::size_t pos);

// True when NFC leaves every character of text as it is for a reason the check can prove: each
// code point is ASCII or in the table of NFC-inert characters (canonical combining class 0, its
// own NFC form, never the second of a canonical composition; Unicode 14). Bytes that are not
// UTF-8 are let through (they are no characters; normalisation does not apply to them). Else the
// byte offset of the first character it cannot vouch for.
std::optional<std::size_t> first_non_inert(std::string_view text);

// A compiled PCRE2 pattern (UTF, Unicode properties, invalid UTF-8 tolerated: such bytes never
// match and end up in the gaps). Shared and immutable; split() is safe from several threads.
class SplitPattern {
 public:
  // std::invalid_argument with PCRE2's message and the offset in the pattern.
  explicit SplitPattern(std::string_view pattern, bool literal = false);
  // The pieces of text: every match and every non-empty gap between matches, in order.
  [[nodiscard]] std::vector<std::string_view> split(std::string_view text) const;
  [[nodiscard]] const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  std::string pattern_;
  std::shared_ptr<const Code> code_;
};

}  // namespace sparserl::env::byte_level
