// A byte-level BPE tokenizer read from a Hugging Face `tokenizer.json`: the tokenizer of the
// pretrained decoders (Qwen2, Llama 3, GPT-2 and their kind) and of the project's own BPE models
// (bpe_trainer.hpp writes such files). No LibTorch: the grammar mask over BPE tokens
// (bpe_grammar_mask.hpp) and the samplers of agents/learning both use it.
//
// What it reads (anything else is refused with a BpeTokenizerError naming the file and the JSON
// path, e.g. "tokenizer.json: pre_tokenizer.pretokenizers[0].behavior: 'Removed' is not
// supported (Isolated is)"):
//   model          type "BPE"; vocab {token: id}; merges as "a b" strings or ["a", "b"] pairs, in
//                  rank order; ignore_merges; dropout null, byte_fallback false, no subword
//                  prefix or suffix;
//   added_tokens   [{id, content, special, ...}] with lstrip, rstrip and single_word false: split
//                  out of the text first (leftmost, longest), never merged with their neighbours;
//   normalizer     null, NFC, or a Sequence of those. NFC is not computed: the text is checked to
//                  consist of characters NFC leaves alone (ASCII and a Unicode 14 table of
//                  NFC-inert characters, byte_level.cpp), which holds for every file of the CUDA
//                  corpus; other text is refused, naming the character and its byte offset;
//   pre_tokenizer  ByteLevel (use_regex true: GPT-2's pattern, or false), or a Sequence of Split
//                  steps (a Regex or String pattern, behavior Isolated, invert false) ending with
//                  ByteLevel, as Qwen2 and Llama 3 write it; add_prefix_space false;
//   decoder        ByteLevel (or null); post_processor: ignored (encode() adds no special
//                  tokens; callers put bos() in front where their model wants one).
// Patterns run through PCRE2 with Unicode properties (\p{L}, \p{N}) and look-aheads.
//
// encode(text): added tokens split out, then per piece the pre-tokenizer's patterns, each
// pre-token spelled in GPT-2's byte alphabet and merged by rank (lowest first; a cache per
// pre-token). Bytes that are not UTF-8 are encoded as bytes (the patterns never match them, so
// they are pre-tokens of their own). decode(ids): each token's bytes, in order, special tokens
// kept or skipped; ids without a token are skipped. For every text t, decode(encode(t)) == t
// (without the NFC normalizer, or where the NFC check passes).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/env/program_tokenizer.hpp"
#include "sparserl/env/vocabulary.hpp"

namespace sparserl::env {

// GPT-2's pre-tokenizer pattern (the ByteLevel pre-tokenizer's with use_regex = true).
inline constexpr std::string_view kGpt2PreTokenizerPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Qwen2's (the Split step of its tokenizer.json): digits one by one, letters with one leading
// non-letter, punctuation runs with the line ends after them, newline runs on their own.
inline constexpr std::string_view kQwen2PreTokenizerPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A tokenizer file that cannot be read, is malformed, or asks for what is not supported (what()
// names the file and the JSON path); or text that cannot be encoded (what() names the offset).
class BpeTokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct BpeAddedToken {
  TokenId id = -1;
  std::string content;
  bool special = false;
};

// The ids a model gives its special roles; unset where neither the files nor the caller say.
struct BpeSpecialIds {
  std::optional<TokenId> bos, eos, pad;
};

class BpeTokenizer final : public ProgramTokenizer {
 public:
  // `json` is the text of a tokenizer.json; `source` names it in errors.
  static BpeTokenizer parse(std::string_view json, const std::string& source);
  static BpeTokenizer load(const std::filesystem::path& file);
  // A model folder: its tokenizer.json, and the special ids from config.json (bos_token_id,
  // eos_token_id - the first of a list - and pad_token_id), else tokenizer_config.json (bos_token,
  // eos_token, pad_token as text or {content}), else the added tokens' well-known names.
  static BpeTokenizer load_folder(const std::filesystem::path& folder);

  // Ids of the text; no special tokens are added. BpeTokenizerError when a byte has no token or
  // the NFC check refuses the text.
  [[nodiscard]] std::vector<TokenId> encode(std::string_view text) const;
  [[nodiscard]] std::string decode(std::span<const TokenId> ids, bool skip_special = false) const;

  // One more than the largest id of the vocabulary and the added tokens (a model's embedding may
  // have more rows: ids past this have no token).
  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] bool has_token(TokenId id) const;
  // The token as tokenizer.json spells it (the byte alphabet; an added token's content); throws
  // std::out_of_range for an id without a token.
  [[nodiscard]] const std::string& token(TokenId id) const;
  // The bytes a token stands for: what decode() writes for it.
  [[nodiscard]] const std::string& token_bytes(TokenId id) const;
  [[nodiscard]] std::optional<TokenId> find(std::string_view token) const;
  [[nodiscard]] bool is_added(TokenId id) const;
  [[nodiscard]] bool is_special(TokenId id) const;
  [[nodiscard]] const std::vector<BpeAddedToken>& added_tokens() const;
  // The id of a single byte's token, when the vocabulary has one.
  [[nodiscard]] std::optional<TokenId> byte_token(unsigned char byte) const;
  [[nodiscard]] std::size_t merges() const;

  [[nodiscard]] const BpeSpecialIds& special_ids() const;
  void set_special_ids(const BpeSpecialIds& ids);
  [[nodiscard]] std::optional<TokenId> bos() const { return special_ids().bos; }
  [[nodiscard]] std::optional<TokenId> eos() const { return special_ids().eos; }
  [[nodiscard]] std::optional<TokenId> pad() const { return special_ids().pad; }
  // A SHA-256 of the file's text: what a checkpoint records of its tokenizer.
  [[nodiscard]] const std::string& digest() const;
  [[nodiscard]] const std::string& source() const;

  // ProgramTokenizer: the text of the tokens before the first eos(), special tokens skipped; the
  // action space is size(). end_of_program() throws std::logic_error when there is no eos id.
  [[nodiscard]] std::string program_text(std::span<const TokenId> tokens) const override;
  [[nodiscard]] TokenId end_of_program() const override;
  [[nodiscard]] std::size_t action_count() const override { return size(); }

  struct Model;

 private:
  explicit BpeTokenizer(std::shared_ptr<const Model> model);
  std::shared_ptr<const Model> model_;
  BpeSpecialIds special_;
};

}  // namespace sparserl::env
