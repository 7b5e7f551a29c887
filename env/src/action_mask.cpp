// The syntax mask's class (ActionMask) over its automata (action_mask_internal.hpp): the whole
// automaton's judge and take dispatched by phase, fill() and the budget. Tables are built once per
// vocabulary and shared; the State is a small fixed-size value so that the budget check can try a
// token on a copy. fill() is the hot path: where the code-token rules alone decide it copies a
// precomputed mask and runs the checks of the few context-dependent tokens (locals, constants,
// type words, brackets, <eol>, <eos>); elsewhere it asks the rules of the automaton under way about
// its candidate tokens. The budget check runs only near max_tokens, and tries one token per
// effect class (tokens that change the state the same way, such as all builtins).
#include "sparserl/env/action_mask.hpp"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>

#include "action_mask_internal.hpp"

namespace sparserl::env {
namespace detail {

bool token_allowed(const Tables& t, const State& s, const TokenInfo& k) {
  if (s.done) return false;
  switch (s.phase) {
    case Phase::expr:
      return expression_allowed(t, s, k);
    case Phase::code:
      return code_allowed(t, s, k);
    default: {
      const Verdict verdict = t.directives.judge(static_cast<int>(s.phase), t, s, k);
      return verdict == Verdict::pass ? code_allowed(t, s, k) : verdict == Verdict::allow;
    }
  }
}

void take_token(const Tables& t, State& s, const TokenInfo& k) {
  ++s.tokens;
  if (k.cat == Cat::eos) {
    s.done = true;
    return;
  }
  switch (s.phase) {
    case Phase::expr:
      return t.expressions.take(static_cast<int>(s.es), t, s, k);
    case Phase::code:
      return take_code(t, s, k);
    default:
      return t.directives.take(static_cast<int>(s.phase), t, s, k);
  }
}

}  // namespace detail

using namespace detail;

namespace {

// The automaton whose rules judge a token first (token_allowed() descends from it), at its
// sub-state: fill() asks it for its candidates, or where it passes every token on, it fills
// from the code-token rules' tables.
struct ActiveRules {
  const RuleIndex* rules;
  int at;
};
ActiveRules active_rules(const Tables& t, const State& s) {
  switch (s.phase) {
    case Phase::expr:
      return {&t.expressions, static_cast<int>(s.es)};
    case Phase::code:
      break;
    default:
      return {&t.directives, static_cast<int>(s.phase)};
  }
  if (s.num != Num::off) return {&t.numbers, static_cast<int>(s.num)};
  ActiveRules line = on_line(s) ? ActiveRules{&t.lines, static_cast<int>(s.pp)}
                                : ActiveRules{&t.declarations, static_cast<int>(s.decl)};
  if (!on_line(s) && line.rules->passes_all(line.at) &&
      !t.files.passes_all(static_cast<int>(s.top))) {
    line = {&t.files, static_cast<int>(s.top)};  // at file scope, outside a function
  }
  if (s.last != Last::access || !line.rules->passes_all(line.at)) return line;
  return {&t.fields, 0};
}

}  // namespace

std::string_view to_string(MaskMode mode) { return mode == MaskMode::none ? "none" : "syntax"; }

std::optional<MaskMode> parse_mask_mode(std::string_view text) {
  if (text == "none") return MaskMode::none;
  if (text == "syntax") return MaskMode::syntax;
  return std::nullopt;
}

ActionMask::ActionMask(std::shared_ptr<const Vocabulary> vocabulary, MaskMode mode, int max_tokens)
    : vocabulary_(std::move(vocabulary)),
      state_(std::make_unique<State>()),
      mode_(mode),
      max_tokens_(max_tokens) {
  if (!vocabulary_) throw std::invalid_argument("ActionMask needs a vocabulary");
  if (max_tokens < 1 || (mode == MaskMode::syntax && max_tokens < kMinSyntaxTokens)) {
    throw std::invalid_argument("max_tokens = " + std::to_string(max_tokens) + ": the " +
                                std::string(to_string(mode)) + " mask needs at least " +
                                std::to_string(mode == MaskMode::syntax ? kMinSyntaxTokens : 1) +
                                " (the shortest complete program)");
  }
  // Tables depend only on the vocabulary: share them between the masks of one vocabulary.
  static std::mutex mutex;
  static std::vector<std::pair<std::weak_ptr<const Vocabulary>, std::shared_ptr<const Tables>>>
      cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& [vocab, tables] : cache) {
      if (auto v = vocab.lock(); v && v.get() == vocabulary_.get()) tables_ = tables;
    }
    if (!tables_) {
      tables_ = std::make_shared<const Tables>(*vocabulary_);
      cache.erase(std::remove_if(cache.begin(), cache.end(),
                                 [](const auto& e) { return e.first.expired(); }),
                  cache.end());
      cache.emplace_back(vocabulary_, tables_);
    }
  }
}

ActionMask::~ActionMask() = default;
ActionMask::ActionMask(const ActionMask& other)
    : vocabulary_(other.vocabulary_),
      tables_(other.tables_),
      state_(std::make_unique<State>(*other.state_)),
      mode_(other.mode_),
      max_tokens_(other.max_tokens_) {}
ActionMask& ActionMask::operator=(const ActionMask& other) {
  if (this != &other) {
    vocabulary_ = other.vocabulary_;
    tables_ = other.tables_;
    state_ = std::make_unique<State>(*other.state_);
    mode_ = other.mode_;
    max_tokens_ = other.max_tokens_;
  }
  return *this;
}
ActionMask::ActionMask(ActionMask&&) noexcept = default;
ActionMask& ActionMask::operator=(ActionMask&&) noexcept = default;

int ActionMask::tokens() const { return state_->tokens; }

void ActionMask::reset() { *state_ = State{}; }

int ActionMask::min_completion() const {
  return mode_ == MaskMode::syntax ? completion(*tables_, *state_) : 1;
}

void ActionMask::fill(std::span<std::uint8_t> mask) const {
  const Tables& t = *tables_;
  const State& s = *state_;
  const std::size_t n = t.info.size();
  if (mask.size() != n) {
    throw std::invalid_argument("action mask of size " + std::to_string(mask.size()) +
                                " for a vocabulary of " + std::to_string(n));
  }
  if (mode_ == MaskMode::none) {
    std::fill(mask.begin(), mask.end(), std::uint8_t{1});
    mask[static_cast<std::size_t>(vocabulary_->pad())] = 0;
    mask[static_cast<std::size_t>(vocabulary_->bos())] = 0;
    return;
  }
  if (s.done) {
    std::fill(mask.begin(), mask.end(), std::uint8_t{0});
    return;
  }
  const ActiveRules active = active_rules(t, s);
  if (active.rules->passes_all(active.at)) {
    fill_code_tokens(t, s, mask);  // every token passes to the code-token rules
  } else {
    std::fill(mask.begin(), mask.end(), std::uint8_t{0});
    for (TokenId id : active.rules->candidates(active.at)) {
      const auto i = static_cast<std::size_t>(id);
      mask[i] = token_allowed(t, s, t.info[i]) ? 1 : 0;
    }
  }
  // The budget: keep only tokens after which the program can still be completed in time.
  const int remaining_after = max_tokens_ - s.tokens - 1;
  if (remaining_after - completion(t, s) >= t.max_delta) return;
  std::vector<int> cache(static_cast<std::size_t>(t.effects), -1);
  for (std::size_t i = 0; i < n; ++i) {
    if (mask[i] == 0) continue;
    const TokenInfo& k = t.info[i];
    if (k.cat == Cat::eos) {
      if (remaining_after < 0) mask[i] = 0;
      continue;
    }
    // A launch name adds a declaration to the completion unless the kernel is launched already,
    // a local declared const its initializer unless it is a macro: locals differ there, so each
    // is tried.
    int own = -1;
    const bool each = s.phase == Phase::launch_name || k.cat == Cat::local;
    int& m = each ? own : cache[static_cast<std::size_t>(k.effect)];
    if (m < 0) {
      State after = s;
      take_token(t, after, k);
      m = completion(t, after);
    }
    if (m > remaining_after) mask[i] = 0;
  }
}

bool ActionMask::allows(TokenId token) const {
  if (token < 0 || static_cast<std::size_t>(token) >= tables_->info.size()) return false;
  if (mode_ == MaskMode::none) return token != vocabulary_->pad() && token != vocabulary_->bos();
  const Tables& t = *tables_;
  const State& s = *state_;
  const TokenInfo& k = t.info[static_cast<std::size_t>(token)];
  if (!token_allowed(t, s, k)) return false;
  const int remaining_after = max_tokens_ - s.tokens - 1;
  if (remaining_after < 0) return false;
  if (token == t.eos) return true;
  State after = s;
  take_token(t, after, k);
  return completion(t, after) <= remaining_after;
}

void ActionMask::advance(TokenId token) {
  if (!allows(token)) {
    throw std::invalid_argument("token " + std::to_string(token) + " (" +
                                vocabulary_->describe(token) + ") is not allowed by the " +
                                std::string(to_string(mode_)) + " mask after " +
                                std::to_string(state_->tokens) + " tokens");
  }
  if (mode_ == MaskMode::none) {
    ++state_->tokens;
    return;
  }
  take_token(*tables_, *state_, tables_->info[static_cast<std::size_t>(token)]);
}

}  // namespace sparserl::env
