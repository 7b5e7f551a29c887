// The tokenizer: kernel programs (CUDA device code plus //@ directives, reward/program.hpp) to
// token ids of a Vocabulary and back.
//
// encode() reads the program through the evaluator's own lexer (so the tokenizer and the static
// checks never disagree about what is code) and its directive parser, then writes:
//   1. the directives first, in a fixed order and spelling - the //@format line, then every
//   //@launch
//      line in run order - each ending with <eol>:
//        <format> sell C= <num> 3 2 sigma= <num> 2 5 6 <eol>
//        <launch> v0 grid= ceil_div ( M , <num> 2 5 6 ) block= <num> 2 5 6 <eol>
//   2. the code, token by token; comments are dropped (directives are comments to the compiler, so
//      moving them to the front changes nothing it sees); each preprocessor line ends with <eol>;
//   3. <eos>.
// The program's own identifiers become locals v0, v1, ... in order of first appearance, the kernel
// names of the //@launch lines first, so a kernel keeps one name in its directive and its
// definition. Identifiers after `.` or `->` that are vector/built-in members (x y z w) stay
// members. Numbers are <num> followed by one digit token per character (0x1f -> <num> 0 x 1 f).
//
// encode() refuses, with a TokenizeError naming the token and its line:column in the program: a
// lexical error, unreadable directives, a token outside the vocabulary (a character literal, a
// string other than "C", `<<<`, `##`, a character of a number such as the p of 0x1p3), more
// distinct local identifiers than the vocabulary has, and a call of a name that is neither a
// vocabulary word nor declared in the program (a builtin the vocabulary lacks: without this check
// it would silently become a local and stop compiling).
//
// decode() never fails: it renders any token sequence (whatever an unmasked policy emits) as text,
// with a fixed layout - directives first, two-space indentation by brace depth, one statement per
// line, spaces around binary operators - and stops at <eos>. For every program p that encodes,
// decode(encode(p)) is p with its comments dropped, its identifiers renamed and its layout
// normalised; it compiles to the same code (tests/env/tokenizer_test.cpp compares the cubins), and
// encode(decode(t)) == t for every encoded t.
#pragma once

#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/env/program_tokenizer.hpp"
#include "sparserl/env/vocabulary.hpp"

namespace sparserl::env {

class TokenizeError : public std::invalid_argument {
 public:
  TokenizeError(const std::string& message, std::string token, int line, int column)
      : std::invalid_argument(message), token_(std::move(token)), line_(line), column_(column) {}
  [[nodiscard]] const std::string& token() const { return token_; }
  [[nodiscard]] int line() const { return line_; }
  [[nodiscard]] int column() const { return column_; }

 private:
  std::string token_;
  int line_ = 0;
  int column_ = 0;
};

struct EncodedProgram {
  std::vector<TokenId> tokens;      // ends with <eos>; no <bos>
  std::vector<std::string> locals;  // locals[i] is the program's name for vi
};

class Tokenizer final : public ProgramTokenizer {
 public:
  explicit Tokenizer(std::shared_ptr<const Vocabulary> vocabulary);
  // The standard vocabulary (Vocabulary::standard()).
  Tokenizer();

  [[nodiscard]] const Vocabulary& vocabulary() const { return *vocabulary_; }
  [[nodiscard]] const std::shared_ptr<const Vocabulary>& vocabulary_ptr() const {
    return vocabulary_;
  }

  // Throws TokenizeError (see above).
  [[nodiscard]] EncodedProgram encode(std::string_view program) const;
  // Never throws for any sequence of ids: out-of-range ids, <pad> and <bos> are skipped; rendering
  // stops at the first <eos>.
  [[nodiscard]] std::string decode(std::span<const TokenId> tokens) const;

  // Names a program calls that are neither vocabulary words nor declared in it: what encode()
  // refuses as out-of-vocabulary and what the vocabulary builder adds as builtins from the corpus.
  // Throws TokenizeError for a lexical or directive error.
  [[nodiscard]] std::vector<std::string> undeclared_calls(std::string_view program) const;

  // ProgramTokenizer: decode(), the vocabulary's <eos> and size.
  [[nodiscard]] std::string program_text(std::span<const TokenId> tokens) const override {
    return decode(tokens);
  }
  [[nodiscard]] TokenId end_of_program() const override { return vocabulary_->eos(); }
  [[nodiscard]] std::size_t action_count() const override { return vocabulary_->size(); }

 private:
  std::shared_ptr<const Vocabulary> vocabulary_;
};

}  // namespace sparserl::env
