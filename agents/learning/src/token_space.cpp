// The two token spaces (token_space.hpp): the closed vocabulary's and a Hugging Face model's BPE
// tokenizer's - their masks, prompts, training sequences and checkpoint files. No LibTorch.
#include "sparserl/agents/token_space.hpp"

#include <algorithm>
#include <stdexcept>

#include "sparserl/agents/hf_config.hpp"
#include "sparserl/agents/training.hpp"
#include "sparserl/env/bpe_grammar_mask.hpp"
#include "sparserl/env/tokenizer.hpp"

namespace sparserl::agents {
namespace {

namespace fs = std::filesystem;

// Either env mask behind CompletionMask.
template <typename Mask>
class MaskOf final : public CompletionMask {
 public:
  explicit MaskOf(Mask mask) : mask_(std::move(mask)) {}
  void fill(std::span<std::uint8_t> mask) const override { mask_.fill(mask); }
  [[nodiscard]] bool allows(env::TokenId token) const override { return mask_.allows(token); }
  void advance(env::TokenId token) override { mask_.advance(token); }

 private:
  Mask mask_;
};

class ClosedTokenSpace final : public TokenSpace {
 public:
  explicit ClosedTokenSpace(std::shared_ptr<const env::Vocabulary> vocabulary)
      : vocabulary_(std::move(vocabulary)),
        tokenizer_(std::make_shared<const env::Tokenizer>(vocabulary_)) {}

  [[nodiscard]] std::string_view kind() const override { return "closed"; }
  [[nodiscard]] std::size_t size() const override { return vocabulary_->size(); }
  [[nodiscard]] env::TokenId pad() const override { return vocabulary_->pad(); }
  [[nodiscard]] env::TokenId eos() const override { return vocabulary_->eos(); }
  [[nodiscard]] std::string describe(env::TokenId token) const override {
    return vocabulary_->describe(token);
  }
  [[nodiscard]] std::unique_ptr<CompletionMask> mask(env::MaskMode mode,
                                                     int max_tokens) const override {
    return std::make_unique<MaskOf<env::ActionMask>>(
        env::ActionMask(vocabulary_, mode, max_tokens));
  }
  [[nodiscard]] std::vector<env::TokenId> prompt(const env::MatrixObservation*) const override {
    return {vocabulary_->bos()};
  }
  [[nodiscard]] std::optional<std::vector<env::TokenId>> program_tokens(
      std::string_view program, int max_tokens) const override {
    return tokens_within(*tokenizer_, std::string(program), max_tokens);
  }
  [[nodiscard]] std::vector<std::vector<env::TokenId>> text_tokens(std::string_view text,
                                                                   int max_tokens) const override {
    std::vector<std::vector<env::TokenId>> out;
    if (auto tokens = program_tokens(text, max_tokens)) out.push_back(std::move(*tokens));
    return out;
  }
  [[nodiscard]] std::shared_ptr<const env::ProgramTokenizer> program_tokenizer() const override {
    return tokenizer_;
  }
  [[nodiscard]] std::shared_ptr<const env::Vocabulary> vocabulary() const override {
    return vocabulary_;
  }
  [[nodiscard]] std::string name() const override { return vocabulary_->name(); }
  [[nodiscard]] std::string digest() const override { return vocabulary_->digest(); }
  void save(const fs::path& dir) const override { vocabulary_->save(dir / "vocabulary.vocab"); }
  void require_digest(std::string_view expected, std::string_view what) const override {
    vocabulary_->require_digest(expected, what);
  }

 private:
  std::shared_ptr<const env::Vocabulary> vocabulary_;
  std::shared_ptr<const env::Tokenizer> tokenizer_;
};

// Mask mode none over BPE tokens: every token of the tokenizer but the special ones (eos is
// allowed at any time), never an id without a token.
class BpeOpenMask final : public CompletionMask {
 public:
  BpeOpenMask(std::shared_ptr<const env::BpeTokenizer> tokenizer, env::TokenId eos)
      : tokenizer_(std::move(tokenizer)), eos_(eos) {}
  void fill(std::span<std::uint8_t> mask) const override {
    for (std::size_t id = 0; id < mask.size(); ++id) {
      mask[id] = allows(static_cast<env::TokenId>(id)) ? 1 : 0;
    }
  }
  [[nodiscard]] bool allows(env::TokenId token) const override {
    return token == eos_ || (tokenizer_->has_token(token) && !tokenizer_->is_special(token));
  }
  void advance(env::TokenId token) override {
    if (!allows(token)) {
      throw std::invalid_argument("token " + std::to_string(token) +
                                  " is not allowed by the none mask over BPE tokens");
    }
  }

 private:
  std::shared_ptr<const env::BpeTokenizer> tokenizer_;
  env::TokenId eos_;
};

class BpeTokenSpace final : public TokenSpace {
 public:
  BpeTokenSpace(std::shared_ptr<const env::BpeTokenizer> tokenizer, std::size_t logits,
                PromptForm form)
      : tokenizer_(std::move(tokenizer)), logits_(logits), form_(form) {
    if (!tokenizer_->eos()) {
      throw std::invalid_argument(tokenizer_->source() +
                                  ": the tokenizer has no eos token (a completion ends with one)");
    }
    if (tokenizer_->size() > logits_) {
      throw std::invalid_argument(tokenizer_->source() + ": " + std::to_string(tokenizer_->size()) +
                                  " tokens, but the model has " + std::to_string(logits_) +
                                  " embedding rows");
    }
    eos_ = *tokenizer_->eos();
    start_ = tokenizer_->bos().value_or(eos_);
    pad_ = tokenizer_->pad().value_or(eos_);
  }

  [[nodiscard]] std::string_view kind() const override { return "bpe"; }
  [[nodiscard]] std::size_t size() const override { return logits_; }
  [[nodiscard]] env::TokenId pad() const override { return pad_; }
  [[nodiscard]] env::TokenId eos() const override { return eos_; }
  [[nodiscard]] std::string describe(env::TokenId token) const override {
    if (!tokenizer_->has_token(token)) return "bpe " + std::to_string(token) + " (no token)";
    return "bpe " + std::to_string(token) + " '" + tokenizer_->token(token) + "'";
  }
  [[nodiscard]] std::unique_ptr<CompletionMask> mask(env::MaskMode mode,
                                                     int max_tokens) const override {
    if (mode == env::MaskMode::none) return std::make_unique<BpeOpenMask>(tokenizer_, eos_);
    env::BpeGrammarOptions options;
    options.max_tokens = max_tokens;
    options.mask_size = logits_;
    return std::make_unique<MaskOf<env::BpeGrammarMask>>(env::BpeGrammarMask(tokenizer_, options));
  }
  [[nodiscard]] std::vector<env::TokenId> prompt(
      const env::MatrixObservation* matrix) const override {
    if (form_ == PromptForm::soft || matrix == nullptr) return {start_};
    if (matrix->text.empty()) {
      throw std::invalid_argument(
          "the text prompt form needs the observation's text (env::observe_matrix writes it)");
    }
    std::vector<env::TokenId> out;
    if (tokenizer_->bos()) out.push_back(*tokenizer_->bos());
    const std::vector<env::TokenId> text = tokenizer_->encode(matrix->text + "\n");
    out.insert(out.end(), text.begin(), text.end());
    return out;
  }
  [[nodiscard]] std::optional<std::vector<env::TokenId>> program_tokens(
      std::string_view program, int max_tokens) const override {
    try {
      std::vector<env::TokenId> tokens = tokenizer_->encode(env::bpe_program_text(program));
      tokens.push_back(eos_);
      if (static_cast<int>(tokens.size()) <= max_tokens) return tokens;
    } catch (const env::TokenizeError&) {
    } catch (const env::BpeTokenizerError&) {
    }
    return std::nullopt;
  }
  [[nodiscard]] std::vector<std::vector<env::TokenId>> text_tokens(std::string_view text,
                                                                   int max_tokens) const override {
    std::vector<env::TokenId> all;
    try {
      all = tokenizer_->encode(text);
    } catch (const env::BpeTokenizerError&) {
      return {};
    }
    all.push_back(eos_);
    std::vector<std::vector<env::TokenId>> out;
    const auto step = static_cast<std::size_t>(std::max(1, max_tokens));
    for (std::size_t at = 0; at < all.size(); at += step) {
      const std::size_t end = std::min(all.size(), at + step);
      out.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(at),
                       all.begin() + static_cast<std::ptrdiff_t>(end));
    }
    return out;
  }
  [[nodiscard]] std::shared_ptr<const env::ProgramTokenizer> program_tokenizer() const override {
    return tokenizer_;
  }
  [[nodiscard]] std::shared_ptr<const env::Vocabulary> vocabulary() const override {
    return nullptr;
  }
  [[nodiscard]] std::string name() const override {
    return "bpe-" + std::to_string(tokenizer_->size()) + " " +
           fs::path(tokenizer_->source()).filename().string();
  }
  [[nodiscard]] std::string digest() const override { return tokenizer_->digest(); }
  void save(const fs::path& dir) const override {
    fs::copy_file(tokenizer_->source(), dir / "tokenizer.json",
                  fs::copy_options::overwrite_existing);
  }
  void require_digest(std::string_view expected, std::string_view what) const override {
    if (expected == digest()) return;
    throw env::VocabularyError(std::string(what) + ": recorded with the tokenizer of digest " +
                               std::string(expected) + ", but " + tokenizer_->source() +
                               " has digest " + digest());
  }

 private:
  std::shared_ptr<const env::BpeTokenizer> tokenizer_;
  std::size_t logits_;
  PromptForm form_;
  env::TokenId eos_ = 0, start_ = 0, pad_ = 0;
};

}  // namespace

std::shared_ptr<const TokenSpace> closed_token_space(
    std::shared_ptr<const env::Vocabulary> vocabulary) {
  return std::make_shared<const ClosedTokenSpace>(std::move(vocabulary));
}

std::shared_ptr<const TokenSpace> bpe_token_space(
    std::shared_ptr<const env::BpeTokenizer> tokenizer, std::size_t logits, PromptForm form) {
  return std::make_shared<const BpeTokenSpace>(std::move(tokenizer), logits, form);
}

std::shared_ptr<const TokenSpace> make_token_space(
    const AgentConfig& config, std::shared_ptr<const env::Vocabulary> vocabulary) {
  if (config.model.kind == ModelKind::small) return closed_token_space(std::move(vocabulary));
  const fs::path folder = config.model.path;
  std::shared_ptr<const env::BpeTokenizer> tokenizer;
  try {
    tokenizer = std::make_shared<const env::BpeTokenizer>(env::BpeTokenizer::load_folder(folder));
  } catch (const env::BpeTokenizerError& e) {
    throw std::invalid_argument("model.path = " + folder.string() + ": " + e.what());
  }
  const HfModelConfig model = read_hf_config(folder / "config.json");
  try {
    return bpe_token_space(std::move(tokenizer), static_cast<std::size_t>(model.vocab_size),
                           config.model.prompt);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("model.path = " + folder.string() + ": " + e.what());
  }
}

}  // namespace sparserl::agents
