// BpeGrammarMask (bpe_grammar_mask.hpp): the token trie and its walk, the mask cache, the budget,
// and the class over the character layer (bpe_grammar_lexer.cpp).
//
// fill() walks the trie depth first from the mask's state. A node's state is its parent's with one
// byte read (Lex copied, the automaton's State copied only where a lexeme completes); a node whose
// pending lexeme can no longer complete is pruned with its subtree (an identifier or punctuator
// that cannot complete cannot complete longer either). Each token's node gives its verdict and
// what the budget must keep after it (an upper bound where the exact count is dear: a new name's
// identifier is counted as that new name); the walk's result does not depend on the tokens left,
// so it is cached by state, and the budget is applied when the mask is filled - exactly, token by
// token, where the bound does not fit.
#include "sparserl/env/bpe_grammar_mask.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "bpe_grammar_internal.hpp"
#include "sparserl/env/tokenizer.hpp"
#include "sparserl/reward/program.hpp"

namespace sparserl::env {

using namespace bpe_grammar;

namespace {

constexpr int kUnreachable = std::numeric_limits<int>::max();

// The vocabulary's tokens by their bytes: children of a node are contiguous and sorted by byte.
// Tokens whose bytes the grammar never takes (beyond ASCII, control characters but tab and
// newline) and special tokens are left out.
class TokenTrie {
 public:
  struct Node {
    std::uint32_t first = 0;  // index of the first child
    std::uint32_t children = 0;
    std::uint32_t tokens_begin = 0;  // ids_[tokens_begin, +tokens) end here
    std::uint32_t tokens = 0;
    char byte = 0;
  };

  explicit TokenTrie(const BpeTokenizer& t) {
    std::vector<std::pair<std::string_view, TokenId>> list;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const auto id = static_cast<TokenId>(i);
      if (!t.has_token(id) || t.is_special(id)) continue;
      const std::string& bytes = t.token_bytes(id);
      const bool readable = !bytes.empty() && std::all_of(bytes.begin(), bytes.end(), [](char c) {
        return (c >= 0x20 && c < 0x7F) || c == '\t' || c == '\n';
      });
      if (readable) list.emplace_back(bytes, id);
    }
    std::sort(list.begin(), list.end());
    nodes_.emplace_back();
    build(0, list, 0, list.size(), 0);
  }

  [[nodiscard]] const Node& node(std::uint32_t i) const { return nodes_[i]; }
  [[nodiscard]] std::span<const TokenId> tokens(const Node& n) const {
    return {ids_.data() + n.tokens_begin, n.tokens};
  }
  [[nodiscard]] std::size_t depth() const { return depth_; }
  [[nodiscard]] std::size_t nodes() const { return nodes_.size(); }

 private:
  void build(std::uint32_t at, const std::vector<std::pair<std::string_view, TokenId>>& list,
             std::size_t lo, std::size_t hi, std::size_t depth) {
    depth_ = std::max(depth_, depth);
    nodes_[at].tokens_begin = static_cast<std::uint32_t>(ids_.size());
    while (lo < hi && list[lo].first.size() == depth) ids_.push_back(list[lo++].second);
    nodes_[at].tokens = static_cast<std::uint32_t>(ids_.size()) - nodes_[at].tokens_begin;
    std::vector<std::pair<std::size_t, std::size_t>> groups;
    for (std::size_t i = lo; i < hi;) {
      std::size_t j = i;
      while (j < hi && list[j].first[depth] == list[i].first[depth]) ++j;
      groups.emplace_back(i, j);
      i = j;
    }
    nodes_[at].first = static_cast<std::uint32_t>(nodes_.size());
    nodes_[at].children = static_cast<std::uint32_t>(groups.size());
    for (const auto& [i, j] : groups) {
      nodes_.emplace_back();
      nodes_.back().byte = list[i].first[depth];
    }
    for (std::size_t g = 0; g < groups.size(); ++g) {
      build(nodes_[at].first + static_cast<std::uint32_t>(g), list, groups[g].first,
            groups[g].second, depth + 1);
    }
  }

  std::vector<Node> nodes_;
  std::vector<TokenId> ids_;
  std::size_t depth_ = 0;
};

// A token's verdict from the walk: allowed where `need` BPE tokens still fit after it; `exact`
// false when need is an upper bound (then the exact count is taken where the bound does not fit).
struct Verdict {
  TokenId id;
  std::int32_t need;
  bool exact;
};
using Verdicts = std::vector<Verdict>;

}  // namespace

struct BpeGrammarMask::Shared {
  Shared(std::shared_ptr<const BpeTokenizer> t, std::shared_ptr<const Vocabulary> closed)
      : tokenizer(std::move(t)), grammar(std::move(closed)), trie(*tokenizer) {}
  std::shared_ptr<const BpeTokenizer> tokenizer;
  Grammar grammar;
  TokenTrie trie;

  mutable std::mutex mutex;
  mutable std::unordered_map<std::uint64_t, std::shared_ptr<const Verdicts>> cache;
  mutable std::deque<std::uint64_t> order;  // oldest first
  mutable CacheStats stats;
};

struct BpeGrammarMask::Progress {
  Lex lex;
  State closed;
  Names names;
  std::string pending;  // the pending identifier's characters (ident_start is 0 between tokens)
  std::string text;
  std::vector<TokenId> closed_tokens;
  int tokens = 0;
  bool done = false;
};

namespace {

// The trie walk of one fill().
class Walk {
 public:
  Walk(const BpeGrammarMask::Shared& shared, const BpeGrammarMask::Progress& p)
      : g_(shared.grammar), trie_(shared.trie), names_(p.names), base_(p.pending.size()) {
    buffer_ = p.pending;
    buffer_.resize(base_ + trie_.depth() + 1);
    levels_.resize(trie_.depth() + 1);
  }

  Verdicts run(const Lex& lex, const State& closed) {
    NewNameMemo memo;
    visit(0, 0, lex, closed, -1, lex.pending == Pending::ident ? &memo : nullptr);
    return std::move(out_);
  }

 private:
  // What a new name costs where an identifier started (its state does not change until it ends).
  struct NewNameMemo {
    int known = 0;  // 0 not yet, 1 no new name here, 2 need below
    int need = 0;
  };

  [[nodiscard]] Context context() const { return {g_, names_, buffer_}; }

  int committed_need(const Lex& x, const State& s, int& completion) const {
    if (completion < 0) completion = detail::completion(*g_.tables, s);
    int need = kBytesPerToken * (completion - 1) + 1 + separator_debt(x);
    if (detail::pending_kernel_bits(s) != 0) need = needed_committed(context(), x, s);
    return need;
  }

  // The new-name bound of a pending identifier in code: its need, or kUnreachable where no new
  // name may stand (then viability and need are found the long way).
  int new_name_need(std::size_t end, const Lex& x, const State& s, NewNameMemo& memo) const {
    const Role role = role_of(s);
    if (role != Role::code && role != Role::field) return kUnreachable;
    if (memo.known == 0) {
      memo.known = 1;
      if (s.locals_used < g_.vocabulary->locals() && x.new_names < kMaxNewNamesPerToken) {
        State after;
        ClosedRef r(&s, &after);
        if (feed(g_, r, g_.vocabulary->local(s.locals_used))) {
          Lex y = x;  // the name ended by a blank
          y.pending = Pending::none;
          y.blank = true;
          y.line_start = false;
          memo.known = 2;
          memo.need = needed_committed(context(), y, r.get());
        }
      }
    }
    if (memo.known == 1 || x.ident_len >= kMaxIdent) return kUnreachable;
    // Characters more where the identifier is a word or a name already (`int_`, `v_`).
    const std::string_view text(buffer_.data() + x.ident_start, end - x.ident_start);
    if (!name_taken(context(), x, role, text)) return memo.need + 1;
    const auto name = fresh_name(context(), x, role, text);
    return name ? memo.need + 1 + static_cast<int>(name->size() - text.size()) : kUnreachable;
  }

  void visit(std::uint32_t at, std::size_t depth, const Lex& lex, const State& closed,
             int completion, NewNameMemo* memo) {
    const TokenTrie::Node& node = trie_.node(at);
    for (std::uint32_t i = 0; i < node.children; ++i) {
      const std::uint32_t child_at = node.first + i;
      const TokenTrie::Node& child = trie_.node(child_at);
      const std::size_t pos = base_ + depth;
      buffer_[pos] = child.byte;
      Lex x = lex;
      ClosedRef r(&closed, &levels_[depth]);
      if (!step(context(), pos, x, r)) continue;
      const State& s = r.get();
      int child_completion = r.copied() ? -1 : completion;
      NewNameMemo fresh;
      NewNameMemo* child_memo = nullptr;
      if (x.pending == Pending::ident) {
        child_memo = x.ident_start == pos || memo == nullptr ? &fresh : memo;
      }
      int need = kUnreachable;
      if (x.pending == Pending::none) {
        need = committed_need(x, s, child_completion);
      } else if (x.pending == Pending::ident &&
                 (need = new_name_need(pos + 1, x, s, *child_memo)) != kUnreachable) {
      } else if (x.pending != Pending::ident || child.tokens > 0) {
        need = needed_bound(context(), pos + 1, x, s);
      } else if (viable(context(), pos + 1, x, s)) {
        need = kUnreachable - 1;  // viable; no token ends here to count for
      }
      const bool exact = x.pending == Pending::none;
      if (need == kUnreachable) continue;  // nothing completes the pending lexeme: prune
      for (TokenId id : trie_.tokens(child)) out_.push_back({id, need, exact});
      visit(child_at, depth + 1, x, s, child_completion, child_memo);
    }
  }

  const Grammar& g_;
  const TokenTrie& trie_;
  const Names& names_;
  std::size_t base_;
  std::string buffer_;
  std::vector<State> levels_;
  Verdicts out_;
};

// Reads a token's bytes from the mask's state: false where the grammar refuses a byte.
bool read_token(const Grammar& g, const BpeGrammarMask::Progress& p, std::string_view bytes,
                std::string& buffer, Lex& x, ClosedRef& r) {
  buffer = p.pending;
  buffer += bytes;
  const Context c{g, p.names, buffer};
  for (std::size_t i = p.pending.size(); i < buffer.size(); ++i) {
    if (!step(c, i, x, r)) return false;
  }
  return true;
}

std::uint64_t state_key(const BpeGrammarMask::Progress& p) {
  std::uint64_t h = digest(p.lex) * 1099511628211ull ^ digest(p.closed);
  for (const std::string& name : p.names.by_local) {
    h = (h ^ std::hash<std::string>{}(name)) * 1099511628211ull;
  }
  return (h ^ std::hash<std::string>{}(p.pending)) * 1099511628211ull + p.names.by_local.size();
}

std::shared_ptr<BpeGrammarMask::Shared> shared_for(std::shared_ptr<const BpeTokenizer> tokenizer,
                                                   std::shared_ptr<const Vocabulary> closed) {
  // Tables and the trie depend only on the tokenizer and the closed vocabulary: one per pair.
  static std::mutex mutex;
  static std::vector<
      std::pair<std::pair<std::weak_ptr<const BpeTokenizer>, std::weak_ptr<const Vocabulary>>,
                std::weak_ptr<BpeGrammarMask::Shared>>>
      registry;
  std::lock_guard<std::mutex> lock(mutex);
  for (auto& [key, shared] : registry) {
    auto t = key.first.lock();
    auto v = key.second.lock();
    if (t.get() == tokenizer.get() && v.get() == closed.get()) {
      if (auto s = shared.lock()) return s;
    }
  }
  auto made = std::make_shared<BpeGrammarMask::Shared>(tokenizer, closed);
  std::erase_if(registry, [](const auto& e) { return e.second.expired(); });
  registry.push_back({{tokenizer, closed}, made});
  return made;
}

}  // namespace

BpeGrammarMask::BpeGrammarMask(std::shared_ptr<const BpeTokenizer> tokenizer,
                               BpeGrammarOptions options, std::shared_ptr<const Vocabulary> closed)
    : progress_(std::make_unique<Progress>()), options_(options) {
  if (!tokenizer) throw std::invalid_argument("BpeGrammarMask needs a tokenizer");
  if (!closed) closed = std::make_shared<const Vocabulary>(Vocabulary::standard());
  if (!tokenizer->eos()) {
    throw std::invalid_argument(tokenizer->source() + ": the BPE grammar mask needs an eos id");
  }
  for (int b = 0x1F; b < 0x7F; ++b) {
    const auto byte = static_cast<unsigned char>(b == 0x1F ? '\n' : b);  // newline, then ' '..'~'
    if (!tokenizer->byte_token(byte)) {
      throw std::invalid_argument(tokenizer->source() + ": byte " + std::to_string(byte) +
                                  " has no token of its own; the grammar mask's budget counts on "
                                  "one for every printable ASCII byte and newline");
    }
  }
  if (options_.mask_size == 0) options_.mask_size = tokenizer->size();
  if (options_.mask_size < tokenizer->size()) {
    throw std::invalid_argument("BPE grammar mask of size " + std::to_string(options_.mask_size) +
                                " for a tokenizer of " + std::to_string(tokenizer->size()));
  }
  shared_ = shared_for(std::move(tokenizer), std::move(closed));
  const int least = min_completion();
  if (options_.max_tokens < least) {
    throw std::invalid_argument("max_tokens = " + std::to_string(options_.max_tokens) +
                                ": the BPE grammar mask needs at least " + std::to_string(least) +
                                " (the budget of the shortest program)");
  }
}

BpeGrammarMask::~BpeGrammarMask() = default;
BpeGrammarMask::BpeGrammarMask(const BpeGrammarMask& o)
    : shared_(o.shared_),
      progress_(std::make_unique<Progress>(*o.progress_)),
      options_(o.options_) {}
BpeGrammarMask& BpeGrammarMask::operator=(const BpeGrammarMask& o) {
  if (this != &o) {
    shared_ = o.shared_;
    progress_ = std::make_unique<Progress>(*o.progress_);
    options_ = o.options_;
  }
  return *this;
}
BpeGrammarMask::BpeGrammarMask(BpeGrammarMask&&) noexcept = default;
BpeGrammarMask& BpeGrammarMask::operator=(BpeGrammarMask&&) noexcept = default;

int BpeGrammarMask::max_tokens() const { return options_.max_tokens; }
int BpeGrammarMask::tokens() const { return progress_->tokens; }
std::size_t BpeGrammarMask::size() const { return options_.mask_size; }
TokenId BpeGrammarMask::eos() const { return *shared_->tokenizer->eos(); }
bool BpeGrammarMask::done() const { return progress_->done; }
const std::string& BpeGrammarMask::text() const { return progress_->text; }
const std::vector<TokenId>& BpeGrammarMask::closed_tokens() const {
  return progress_->closed_tokens;
}

BpeGrammarMask::CacheStats BpeGrammarMask::cache_stats() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->stats;
}

void BpeGrammarMask::reset() { *progress_ = Progress{}; }

int BpeGrammarMask::min_completion() const {
  const Progress& p = *progress_;
  if (p.done) return 0;
  const Context c{shared_->grammar, p.names, p.pending};
  return needed(c, p.pending.size(), p.lex, p.closed);
}

void BpeGrammarMask::fill(std::span<std::uint8_t> mask) const {
  if (mask.size() != options_.mask_size) {
    throw std::invalid_argument("BPE grammar mask of size " + std::to_string(mask.size()) +
                                " where " + std::to_string(options_.mask_size) + " is expected");
  }
  std::fill(mask.begin(), mask.end(), std::uint8_t{0});
  const Progress& p = *progress_;
  if (p.done) return;
  const int remaining_after = options_.max_tokens - p.tokens - 1;
  mask[static_cast<std::size_t>(eos())] = allows(eos()) ? 1 : 0;
  const std::uint64_t key = state_key(p);
  std::shared_ptr<const Verdicts> verdicts;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    if (auto it = shared_->cache.find(key); it != shared_->cache.end()) {
      verdicts = it->second;
      ++shared_->stats.hits;
    } else {
      ++shared_->stats.misses;
    }
  }
  if (!verdicts) {
    auto made = std::make_shared<const Verdicts>(Walk(*shared_, p).run(p.lex, p.closed));
    verdicts = made;
    std::lock_guard<std::mutex> lock(shared_->mutex);
    if (options_.cache_masks > 0 && shared_->cache.emplace(key, made).second) {
      shared_->order.push_back(key);
      while (shared_->order.size() > options_.cache_masks) {
        shared_->cache.erase(shared_->order.front());
        shared_->order.pop_front();
      }
    }
  }
  for (const Verdict& v : *verdicts) {
    const bool fits = v.need <= remaining_after || (!v.exact && allows(v.id));
    mask[static_cast<std::size_t>(v.id)] = fits ? 1 : 0;
  }
}

bool BpeGrammarMask::allows(TokenId token) const {
  const Progress& p = *progress_;
  const BpeTokenizer& t = *shared_->tokenizer;
  const int remaining_after = options_.max_tokens - p.tokens - 1;
  if (p.done || remaining_after < 0) return false;
  const Grammar& g = shared_->grammar;
  Lex x = p.lex;
  State scratch;
  ClosedRef r(&p.closed, &scratch);
  std::string buffer = p.pending;
  if (token == eos()) return finish(Context{g, p.names, buffer}, buffer.size(), x, r);
  if (!t.has_token(token) || t.is_special(token)) return false;
  if (!read_token(g, p, t.token_bytes(token), buffer, x, r)) return false;
  return needed(Context{g, p.names, buffer}, buffer.size(), x, r.get()) <= remaining_after;
}

void BpeGrammarMask::advance(TokenId token) {
  if (!allows(token)) {
    const BpeTokenizer& t = *shared_->tokenizer;
    throw std::invalid_argument(
        "token " + std::to_string(token) + " (" +
        (t.has_token(token) ? "'" + t.token(token) + "'" : std::string("no token")) +
        ") is not allowed by the BPE grammar mask after " + std::to_string(progress_->tokens) +
        " tokens");
  }
  Progress& p = *progress_;
  const Grammar& g = shared_->grammar;
  State after;
  ClosedRef r(&p.closed, &after, &p.closed_tokens);
  Lex x = p.lex;
  std::string buffer = p.pending;
  ++p.tokens;
  if (token == eos()) {
    finish(Context{g, p.names, buffer}, buffer.size(), x, r);
    p.closed = r.get();
    p.done = true;
    return;
  }
  const std::string& bytes = shared_->tokenizer->token_bytes(token);
  read_token(g, p, bytes, buffer, x, r);
  for (int i = 0; i < x.new_names; ++i) {
    const NewName& n = x.news[static_cast<std::size_t>(i)];
    p.names.add(buffer.substr(n.start, n.length));
  }
  x.new_names = 0;
  if (x.pending == Pending::ident) {
    p.pending = buffer.substr(x.ident_start, x.ident_len);
    x.ident_start = 0;
  } else {
    p.pending.clear();
  }
  p.closed = r.get();
  p.lex = x;
  p.text += bytes;
}

// ---- the program text a BPE policy writes -------------------------------------------------------

std::string bpe_program_text(std::string_view program) {
  const reward::LexResult lexed = reward::lex(program);
  if (!lexed.ok()) {
    throw TokenizeError("lexical error at " + std::to_string(lexed.error->line) + ":" +
                            std::to_string(lexed.error->column) + ": " + lexed.error->message,
                        "", lexed.error->line, lexed.error->column);
  }
  // Comments out (a block comment becomes a blank, as the compiler reads it), literals kept.
  std::string out;
  std::vector<bool> had_comment;  // per output line
  bool comment_on_line = false;
  for (std::size_t i = 0; i < program.size();) {
    const char c = program[i];
    if (c == '"' || c == '\'') {
      std::size_t j = i + 1;
      while (j < program.size() && program[j] != c && program[j] != '\n') {
        j += program[j] == '\\' ? 2 : 1;
      }
      out.append(program.substr(i, j + 1 - i));
      i = j + 1;
    } else if (program.compare(i, 2, "//") == 0 && program.compare(i, 3, "//@") != 0) {
      while (i < program.size() && program[i] != '\n') ++i;
      comment_on_line = true;
    } else if (program.compare(i, 2, "/*") == 0) {
      const std::size_t end = program.find("*/", i + 2);
      i = end == std::string_view::npos ? program.size() : end + 2;
      out += ' ';
      comment_on_line = true;
    } else {
      if (c == '\n') {
        had_comment.push_back(comment_on_line);
        comment_on_line = false;
      }
      out += c;
      ++i;
    }
  }
  had_comment.push_back(comment_on_line);
  // Trailing blanks trimmed; a line that only held a comment dropped.
  std::string text;
  std::size_t line = 0, start = 0;
  while (start <= out.size()) {
    std::size_t end = out.find('\n', start);
    const bool last = end == std::string::npos;
    if (last) end = out.size();
    std::string_view l(out.data() + start, end - start);
    while (!l.empty() && (l.back() == ' ' || l.back() == '\t')) l.remove_suffix(1);
    if (!(l.empty() && had_comment[line])) {
      text += l;
      if (!last) text += '\n';
    }
    ++line;
    if (last) break;
    start = end + 1;
  }
  return text;
}

}  // namespace sparserl::env
