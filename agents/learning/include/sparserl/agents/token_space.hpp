// The tokens a policy reads and writes, and what the learner, the sampler and the training stages
// need to know of them, for either kind of network ([agent.model] kind, config.hpp):
//
//   small  the environment's closed vocabulary (env/vocabulary.hpp): programs are encoded by
//          env::Tokenizer, the mask is env::ActionMask, a completion follows <bos>;
//   hf     the byte-level BPE tokenizer of the model folder (env/bpe_tokenizer.hpp): programs are
//          put in the grammar's text form (bpe_program_text) and encoded, eos appended; the mask
//          is env::BpeGrammarMask (the same grammar; ids at or past the tokenizer's size - the
//          padding rows of an embedding, as Qwen2 has - are never allowed) or, under mask none,
//          every token of the tokenizer but the special ones other than eos; a completion follows
//          the tokenizer's bos, else its eos (the text form: the observation's text and a
//          newline, after bos where the tokenizer has one).
//
// Episodes of an hf policy are finished by an episode pipeline over its BPE tokenizer
// (program_tokenizer(): env::ProgramTokenizer), so the env decodes them with the tokenizer that
// wrote them. No LibTorch here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/agents/config.hpp"
#include "sparserl/env/action_mask.hpp"
#include "sparserl/env/bpe_tokenizer.hpp"
#include "sparserl/env/observation.hpp"
#include "sparserl/env/program_tokenizer.hpp"
#include "sparserl/env/vocabulary.hpp"

namespace sparserl::agents {

// The action mask of one completion being written: env::ActionMask or env::BpeGrammarMask behind
// one interface (their calls are the same).
class CompletionMask {
 public:
  virtual ~CompletionMask() = default;
  // 1 for every allowed token, 0 elsewhere; mask.size() is the token space's size().
  virtual void fill(std::span<std::uint8_t> mask) const = 0;
  [[nodiscard]] virtual bool allows(env::TokenId token) const = 0;
  // std::invalid_argument naming the token when it is not allowed.
  virtual void advance(env::TokenId token) = 0;
};

class TokenSpace {
 public:
  virtual ~TokenSpace() = default;

  // "closed" or "bpe".
  [[nodiscard]] virtual std::string_view kind() const = 0;
  // The width of the policy's logits: the vocabulary's size, or the model's embedding rows
  // (config.json's vocab_size, at least the tokenizer's size).
  [[nodiscard]] virtual std::size_t size() const = 0;
  [[nodiscard]] virtual env::TokenId pad() const = 0;
  [[nodiscard]] virtual env::TokenId eos() const = 0;
  // "local v3", "bpe 17 'for'": for messages.
  [[nodiscard]] virtual std::string describe(env::TokenId token) const = 0;

  // The mask of a fresh completion of at most max_tokens tokens (std::invalid_argument when the
  // budget is below the grammar's shortest program).
  [[nodiscard]] virtual std::unique_ptr<CompletionMask> mask(env::MaskMode mode,
                                                             int max_tokens) const = 0;
  // What the policy reads before its first completion token, for a matrix observation (nullptr:
  // none, as in pretraining): <bos> or the start token, or the observation's text in the text
  // prompt form. Never empty.
  [[nodiscard]] virtual std::vector<env::TokenId> prompt(
      const env::MatrixObservation* matrix) const = 0;

  // A program as a training target: its tokens, eos last; nullopt when the tokenizer refuses it or
  // it takes more than max_tokens.
  [[nodiscard]] virtual std::optional<std::vector<env::TokenId>> program_tokens(
      std::string_view program, int max_tokens) const = 0;
  // Plain text as training sequences of at most max_tokens tokens each (the text cut in order, eos
  // after its last token); the closed vocabulary reads it as a program (program_tokens).
  [[nodiscard]] virtual std::vector<std::vector<env::TokenId>> text_tokens(
      std::string_view text, int max_tokens) const = 0;

  // The tokenizer that turns this space's completions into program text (the episode pipeline's).
  [[nodiscard]] virtual std::shared_ptr<const env::ProgramTokenizer> program_tokenizer() const = 0;
  // The closed vocabulary (small), or nullptr.
  [[nodiscard]] virtual std::shared_ptr<const env::Vocabulary> vocabulary() const = 0;

  // Checkpoints: a name, a digest of the file, the file written into a checkpoint folder, and the
  // check of a checkpoint's recorded digest (env::VocabularyError naming both otherwise).
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual std::string digest() const = 0;
  virtual void save(const std::filesystem::path& dir) const = 0;
  virtual void require_digest(std::string_view expected, std::string_view what) const = 0;
};

// The closed vocabulary's space.
std::shared_ptr<const TokenSpace> closed_token_space(
    std::shared_ptr<const env::Vocabulary> vocabulary);
// The BPE space of a tokenizer (eos required; no pad: eos pads) for a model of `logits`
// embedding rows, the prompt in `form`.
std::shared_ptr<const TokenSpace> bpe_token_space(
    std::shared_ptr<const env::BpeTokenizer> tokenizer, std::size_t logits, PromptForm form);
// The space of an agent: the closed `vocabulary` for model.kind = small; for hf the tokenizer of
// model.path (its tokenizer.json and special ids, BpeTokenizer::load_folder) and config.json's
// vocab_size. std::invalid_argument naming the folder when it has no tokenizer or the tokenizer
// has no eos or more tokens than the model's embedding rows.
std::shared_ptr<const TokenSpace> make_token_space(
    const AgentConfig& config, std::shared_ptr<const env::Vocabulary> vocabulary);

}  // namespace sparserl::agents
