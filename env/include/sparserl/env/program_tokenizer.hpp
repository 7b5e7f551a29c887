// What the episode pipeline needs of a tokenizer: the action space's size, the token that ends a
// completion, and the program text a completion's tokens write. The environment's closed
// vocabulary (Tokenizer, tokenizer.hpp) and the byte-level BPE vocabulary of a Hugging Face model
// (BpeTokenizer, bpe_tokenizer.hpp) both implement it, so one EpisodePipeline decodes, truncates,
// evaluates and rewards the completions of either kind of policy the same way.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "sparserl/env/vocabulary.hpp"

namespace sparserl::env {

class ProgramTokenizer {
 public:
  virtual ~ProgramTokenizer() = default;

  // The program a completion's tokens write, up to the first end_of_program(); never throws, for
  // any ids (ids outside the action space are skipped).
  [[nodiscard]] virtual std::string program_text(std::span<const TokenId> tokens) const = 0;
  // The token that ends a completion (<eos>).
  [[nodiscard]] virtual TokenId end_of_program() const = 0;
  // The action space: Discrete(action_count()), ids 0 .. action_count() - 1.
  [[nodiscard]] virtual std::size_t action_count() const = 0;

 protected:
  ProgramTokenizer() = default;
  ProgramTokenizer(const ProgramTokenizer&) = default;
  ProgramTokenizer& operator=(const ProgramTokenizer&) = default;
  ProgramTokenizer(ProgramTokenizer&&) = default;
  ProgramTokenizer& operator=(ProgramTokenizer&&) = default;
};

}  // namespace sparserl::env
