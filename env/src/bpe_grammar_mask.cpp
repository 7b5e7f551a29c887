// BpeGrammarMask (bpe_grammar_mask.hpp): the class over the character layer
// (bpe_grammar_lexer.cpp) and the trie walk (bpe_grammar_walk.cpp): the masks cached by state, the
// budget applied when a mask is filled (exactly, token by token, where the walk's bound for a token
// does not fit the tokens left), the direct per-token check, and bpe_program_text().
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

struct BpeGrammarMask::Shared {
  Shared(std::shared_ptr<const BpeTokenizer> t, std::shared_ptr<const Vocabulary> closed)
      : tokenizer(std::move(t)), grammar(std::move(closed)), trie(*tokenizer) {}
  std::shared_ptr<const BpeTokenizer> tokenizer;
  Grammar grammar;
  TokenTrie trie;

  mutable std::mutex mutex;
  mutable std::unordered_map<std::uint64_t, std::shared_ptr<const Verdicts>> cache;
  mutable std::deque<std::uint64_t> order;  // oldest first
  mutable CacheStats stats;                  // entries and bytes: what `cache` holds
};

struct BpeGrammarMask::Progress {
  Lex lex;
  State closed;
  Names names;
  std::uint64_t names_digest = 0;  // of the names in order (the mask cache's key)
  std::string pending;  // the pending identifier's characters (ident_start is 0 between tokens)
  std::string text;
  std::vector<TokenId> closed_tokens;
  int tokens = 0;
  bool done = false;
};

namespace {

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
  const std::uint64_t h = (digest(p.lex) * 1099511628211ull ^ digest(p.closed)) * 1099511628211ull;
  return ((h ^ p.names_digest) * 1099511628211ull ^ std::hash<std::string>{}(p.pending)) +
         p.names.by_local.size();
}

std::shared_ptr<BpeGrammarMask::Shared> shared_for(std::shared_ptr<const BpeTokenizer> tokenizer,
                                                   std::shared_ptr<const Vocabulary> closed) {
  // Tables, the trie and the cache depend only on the tokenizer and the closed vocabulary: one per
  // pair, kept while the tokenizer lives elsewhere (a mask holds it too), so that masks made one
  // after the other share them.
  struct Entry {
    std::weak_ptr<const BpeTokenizer> tokenizer;
    const Vocabulary* closed;
    std::shared_ptr<BpeGrammarMask::Shared> shared;
  };
  static std::mutex mutex;
  static std::vector<Entry> registry;
  std::lock_guard<std::mutex> lock(mutex);
  std::erase_if(registry, [](const Entry& e) {
    return e.shared.use_count() == 1 && e.tokenizer.use_count() <= 1;
  });
  for (const Entry& e : registry) {
    if (e.tokenizer.lock() == tokenizer && e.closed == closed.get()) return e.shared;
  }
  auto made = std::make_shared<BpeGrammarMask::Shared>(tokenizer, closed);
  registry.push_back({tokenizer, closed.get(), made});
  return made;
}

// Keeps a state's verdicts in the tokenizer's cache, the oldest dropped while the cache holds more
// than `budget` bytes (a mask larger than the budget is not kept).
void remember(BpeGrammarMask::Shared& shared, std::size_t budget, std::uint64_t key,
              std::shared_ptr<const Verdicts> verdicts) {
  const auto bytes_of = [](const Verdicts& v) { return sizeof(Verdicts) + v.size() * sizeof(Segment); };
  const std::size_t bytes = bytes_of(*verdicts);
  if (bytes > budget) return;
  std::lock_guard<std::mutex> lock(shared.mutex);
  if (!shared.cache.emplace(key, std::move(verdicts)).second) return;  // another row made it too
  shared.order.push_back(key);
  BpeGrammarMask::CacheStats& stats = shared.stats;
  ++stats.entries;
  stats.bytes += bytes;
  while (stats.bytes > budget) {
    const auto oldest = shared.cache.find(shared.order.front());
    stats.bytes -= bytes_of(*oldest->second);
    --stats.entries;
    shared.cache.erase(oldest);
    shared.order.pop_front();
  }
}

}  // namespace

BpeGrammarMask::BpeGrammarMask(std::shared_ptr<const BpeTokenizer> tokenizer,
                               BpeGrammarOptions options, std::shared_ptr<const Vocabulary> closed)
    : progress_(std::make_unique<Progress>()), options_(options) {
  if (!tokenizer) throw std::invalid_argument("BpeGrammarMask needs a tokenizer");
  if (!closed) {
    // One pointer for the standard vocabulary, so that the masks of a tokenizer share their
    // tables, trie and cache.
    static const auto standard = std::make_shared<const Vocabulary>(Vocabulary::standard());
    closed = standard;
  }
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
    auto made = std::make_shared<const Verdicts>(
        walk(shared_->grammar, shared_->trie, p.names, p.pending, p.lex, p.closed));
    verdicts = made;
    remember(*shared_, options_.cache_bytes, key, std::move(made));
  }
  const std::vector<TokenId>& ids = shared_->trie.ids();
  for (const Segment& v : *verdicts) {
    for (std::uint32_t i = v.begin; i < v.end; ++i) {
      const TokenId id = ids[i];
      const bool fits = v.need <= remaining_after || (!v.exact && allows(id));
      mask[static_cast<std::size_t>(id)] = fits ? 1 : 0;
    }
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
    p.names_digest =
        (p.names_digest ^ std::hash<std::string>{}(p.names.by_local.back())) * 1099511628211ull;
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
