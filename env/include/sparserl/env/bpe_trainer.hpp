// The project's own byte-level BPE trainer: the tokenizer of models trained from scratch (issue
// 28's "project-made BPE tokenizer"), written as a Hugging Face tokenizer.json that BpeTokenizer
// and the `tokenizers` library both load (`sparserl vocab bpe` is its command).
//
// Texts are cut into pre-tokens by a pattern (Qwen2's by default: digits one by one, which keeps
// numbers - kernel constants, launch geometry - spelled digit by digit as the closed vocabulary
// does), every pre-token is spelled in GPT-2's byte alphabet, and merges are learned greedily: the
// most frequent adjacent pair over all pre-tokens (weighted by their counts) becomes a token, ties
// going to the pair of lower ids, until the vocabulary has vocab_size tokens or no pair occurs
// min_frequency times. The vocabulary is the special tokens (ids 0, 1, ...), then all 256 bytes
// (so that every text encodes, and every byte is a token of its own - what the grammar mask's
// budget counts on), then the merges in the order learned. Deterministic: the same texts in the
// same order give the same file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/env/bpe_tokenizer.hpp"

namespace sparserl::env {

struct BpeTrainerOptions {
  // Special tokens, bytes and merges together; at least the special tokens and 256.
  int vocab_size = 4096;
  int min_frequency = 2;
  std::string pattern = std::string(kQwen2PreTokenizerPattern);
  // Added tokens marked special, in id order from 0; the first is the eos BpeTokenizer finds.
  std::vector<std::string> special_tokens = {"<|endoftext|>", "<|pad|>"};
};

class BpeTrainer {
 public:
  // std::invalid_argument for a vocab_size below the special tokens and the bytes, an empty or
  // repeated special token, or a pattern PCRE2 does not compile.
  explicit BpeTrainer(BpeTrainerOptions options);
  ~BpeTrainer();
  BpeTrainer(BpeTrainer&&) noexcept;
  BpeTrainer& operator=(BpeTrainer&&) noexcept;

  // Counts the text's pre-tokens.
  void add_text(std::string_view text);
  [[nodiscard]] std::size_t distinct_pre_tokens() const;
  [[nodiscard]] std::int64_t bytes_seen() const;

  // Learns the merges and returns the tokenizer.json text (BpeTokenizer::parse reads it).
  [[nodiscard]] std::string train() const;

 private:
  struct Counts;
  BpeTrainerOptions options_;
  std::unique_ptr<Counts> counts_;
};

// A source file of a training text corpus: its path and its bytes.
struct SourceText {
  std::string name;
  std::string text;
};

// Every C, C++ and CUDA source or header (.cu .cuh .h .hpp .hxx .inl .cpp .cc .c .cxx) under each
// folder, recursively, in path order within a folder: the training text of `sparserl vocab bpe`
// and the plain-text pretraining corpus of an HF model (train.text_corpus).
// std::invalid_argument naming a folder that is not one; std::runtime_error naming a file that
// cannot be read.
std::vector<SourceText> read_source_tree(const std::vector<std::filesystem::path>& folders);

}  // namespace sparserl::env
