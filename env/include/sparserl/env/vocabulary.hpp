// The closed token vocabulary of the environment's action space. Every token has a class and a
// text; its id is its position in the vocabulary. The classes (and why they exist):
//
//   special    <pad> <bos> <eos>; <num> (a number's digits follow); <eol> (ends a directive or a
//              preprocessor line); <macro(> (the '(' of a function-like macro, glued to its name -
//              `#define F(a)` and `#define F (a)` mean different things)
//   directive  <format> <launch>, the format names (csr coo ell sell bsr) and the directive keys
//              (C= sigma= R= grid= block= smem=)
//   constant   the kernel ABI prelude: value_t and every prelude constant of reward/abi.hpp
//   keyword    C/C++ and CUDA keywords (__global__, __restrict__, ...) and preprocessor words
//   builtin    CUDA and C names a program uses without declaring them: threadIdx, __shfl_down_sync,
//              atomicAdd, __ldg, fmaf, min, ceil_div, ...
//   member     x y z w, the members of threadIdx and the vector types (after `.` or `->`)
//   punct      C punctuators
//   digit      the characters a number literal is spelled with: 0-9 a-f A-F x X . u U l L + -
//   literal    "C" (of extern "C"; no other string literal is in the language)
//   local      v0 v1 ...: the program's own identifiers (kernel names, parameters, locals, macros),
//              canonicalised in order of first appearance
//
// Vocabularies are versioned files (env/vocab/NAME.vocab): a header with the file-format version,
// the vocabulary's name and size, one "CLASS TEXT" line per token, and a SHA-256 digest of the
// token lines. A checkpoint saves the vocabulary it was trained with; loading checks the format
// version and the digest, and a policy checks the digest against its own. The standard vocabulary
// (the committed env/vocab/cuda-c-v1.vocab) is compiled into the library. A changed vocabulary is a
// new file with a new name, never an edit: token ids are what a trained policy has learned.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sparserl::env {

using TokenId = std::int32_t;

enum class TokenClass {
  special,
  directive,
  constant,
  keyword,
  builtin,
  member,
  punct,
  digit,
  literal,
  local
};

std::string_view to_string(TokenClass cls);
std::optional<TokenClass> parse_token_class(std::string_view text);

struct TokenSpec {
  TokenClass cls = TokenClass::special;
  std::string text;
  friend bool operator==(const TokenSpec&, const TokenSpec&) = default;
};

// A malformed vocabulary file, or one whose digest or version is not what was expected; what()
// names the file (and line).
class VocabularyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The identifiers the tokenizer keeps verbatim, by class, before the corpus adds its own builtins:
// the fixed part of every vocabulary (the lists live in vocabulary.cpp).
struct VocabularyLists {
  std::vector<std::string> keywords, builtins, members, punctuators, digits;
};
const VocabularyLists& fixed_vocabulary_lists();

struct VocabularyOptions {
  std::string name = "cuda-c-v1";
  int locals = 128;                         // v0 .. v{locals-1}
  std::vector<std::string> extra_builtins;  // found in the corpus (sorted and deduplicated here)
};

class Vocabulary {
 public:
  static constexpr int kFileVersion = 1;
  static constexpr std::string_view kStandardName = "cuda-c-v1";

  // From the fixed lists, the ABI registry's constants and the options. Deterministic.
  static Vocabulary build(const VocabularyOptions& options);
  // The committed env/vocab/cuda-c-v1.vocab, compiled into the library.
  static const Vocabulary& standard();

  // Parses a vocabulary file; VocabularyError "SOURCE:LINE: ..." for anything malformed, an unknown
  // format version, or a digest that does not match the token lines.
  static Vocabulary parse(std::string_view text, const std::string& source);
  static Vocabulary load(const std::filesystem::path& file);
  [[nodiscard]] std::string serialize() const;
  void save(const std::filesystem::path& file) const;

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& digest() const { return digest_; }  // 64 hex digits
  // VocabularyError naming both digests when they differ (a checkpoint of another vocabulary).
  void require_digest(std::string_view expected, std::string_view what) const;

  [[nodiscard]] std::size_t size() const { return tokens_.size(); }
  [[nodiscard]] const TokenSpec& token(TokenId id) const {
    return tokens_.at(static_cast<std::size_t>(id));
  }
  [[nodiscard]] const std::vector<TokenSpec>& tokens() const { return tokens_; }
  [[nodiscard]] std::optional<TokenId> find(TokenClass cls, std::string_view text) const;
  // The id, or std::out_of_range naming the token.
  [[nodiscard]] TokenId id(TokenClass cls, std::string_view text) const;
  // "local v3", "punct {", "special <eos>": for messages.
  [[nodiscard]] std::string describe(TokenId id) const;

  [[nodiscard]] TokenId pad() const { return pad_; }
  [[nodiscard]] TokenId bos() const { return bos_; }
  [[nodiscard]] TokenId eos() const { return eos_; }
  [[nodiscard]] TokenId num() const { return num_; }
  [[nodiscard]] TokenId eol() const { return eol_; }
  [[nodiscard]] TokenId macro_open() const { return macro_open_; }
  [[nodiscard]] int locals() const { return static_cast<int>(local_ids_.size()); }
  [[nodiscard]] TokenId local(int index) const {
    return local_ids_.at(static_cast<std::size_t>(index));
  }
  // The local index of a token (0 for v0), or -1 when it is not a local.
  [[nodiscard]] int local_index(TokenId id) const;

  friend bool operator==(const Vocabulary& a, const Vocabulary& b) {
    return a.name_ == b.name_ && a.tokens_ == b.tokens_;
  }

 private:
  Vocabulary(std::string name, std::vector<TokenSpec> tokens);
  static std::string compute_digest(const std::vector<TokenSpec>& tokens);

  std::string name_;
  std::vector<TokenSpec> tokens_;
  std::string digest_;
  std::unordered_map<std::string, TokenId> index_;  // "CLASS\x1fTEXT" -> id
  std::vector<TokenId> local_ids_;
  std::vector<int> local_index_;  // per id: local index or -1
  TokenId pad_ = -1, bos_ = -1, eos_ = -1, num_ = -1, eol_ = -1, macro_open_ = -1;
};

}  // namespace sparserl::env
