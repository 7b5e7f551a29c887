// The token trie and fill()'s walk over it (bpe_grammar_internal.hpp).
//
// The walk goes depth first from the mask's state. A node's state is its parent's with one byte
// read by the character layer (Lex copied, the syntax mask's State copied only where a lexeme
// completes); a node whose pending lexeme can no longer complete is pruned with its subtree (what
// cannot complete cannot complete longer either). Each token's node gives its verdict and what the
// budget must keep after it - exact where nothing is pending, else the cost of one completion (an
// upper bound), which the mask checks exactly only where it does not fit.
//
// Identifiers in code are most of a vocabulary, so they have a fast path. While one is pending its
// state does not change, so what its context allows is worked out once (IdentMemo): whether a new
// name may stand there and what it costs, and - lazily, word by word - which vocabulary words and
// names may; the words and names that start with the identifier's characters so far are a span of
// their sorted lists, narrowed by one character per level. Where a new name may stand and no word
// or name starts with the characters so far, every identifier below is a new name of the same
// cost: the subtree's tokens are taken in one segment if all its bytes continue the identifier and
// no name the static checks forbid starts with the characters so far (reward::forbidden_below:
// not under `mal` of `malloc` or `cu` of `cudaX...`).
#include <algorithm>
#include <deque>
#include <limits>

#include "bpe_grammar_internal.hpp"
#include "sparserl/reward/static_checks.hpp"

namespace sparserl::env::bpe_grammar {

namespace {

constexpr int kUnreachable = std::numeric_limits<int>::max();
constexpr int kViable = kUnreachable - 1;  // viable, where no token ends to be counted

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

TokenTrie::TokenTrie(const BpeTokenizer& t) {
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

void TokenTrie::build(std::uint32_t at,
                      const std::vector<std::pair<std::string_view, TokenId>>& list, std::size_t lo,
                      std::size_t hi, std::size_t depth) {
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
  const auto first = static_cast<std::uint32_t>(nodes_.size());
  nodes_[at].first = first;
  nodes_[at].children = static_cast<std::uint32_t>(groups.size());
  for (const auto& group : groups) {
    nodes_.emplace_back();
    nodes_.back().byte = list[group.first].first[depth];
  }
  bool word_only = true;
  std::uint16_t deepest = nodes_[at].tokens > 0 ? static_cast<std::uint16_t>(depth) : 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto child = first + static_cast<std::uint32_t>(g);
    build(child, list, groups[g].first, groups[g].second, depth + 1);
    word_only = word_only && is_word_char(nodes_[child].byte) && nodes_[child].word_only;
    deepest = std::max(deepest, nodes_[child].subtree_depth);
  }
  nodes_[at].word_only = word_only;
  nodes_[at].subtree_depth = deepest;
  nodes_[at].subtree_end = static_cast<std::uint32_t>(ids_.size());
}

namespace {

// Indices [lo, hi) of a sorted spelling list.
struct Span {
  std::uint32_t lo = 0, hi = 0;
  [[nodiscard]] bool empty() const { return lo >= hi; }
};

Span span_of(const Words& words, std::string_view prefix) {
  const auto [lo, hi] = words.range(prefix);
  return {static_cast<std::uint32_t>(lo), static_cast<std::uint32_t>(hi)};
}

// A span whose spellings share their first `length` characters, narrowed to those whose next one
// is `c` (the one of exactly `length` characters sorts first, then by that character).
Span narrow(const Words& words, Span span, std::size_t length, char c) {
  const auto key = [&](std::uint32_t i) {
    const std::string& t = words.text(i);
    return t.size() > length ? static_cast<int>(static_cast<unsigned char>(t[length])) : -1;
  };
  const int want = static_cast<unsigned char>(c);
  std::uint32_t lo = span.lo, hi = span.hi;
  while (lo < hi) {  // the first key >= want
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (key(mid) < want)
      lo = mid + 1;
    else
      hi = mid;
  }
  std::uint32_t end = lo;
  hi = span.hi;
  while (end < hi) {  // the first key > want
    const std::uint32_t mid = end + (hi - end) / 2;
    if (key(mid) <= want)
      end = mid + 1;
    else
      hi = mid;
  }
  return {lo, end};
}

// What the context of a pending identifier in code allows (its state is fixed until it ends).
struct IdentMemo {
  Role role = Role::code;
  const Words* words = nullptr;  // code_words, or field_words after `.` / `->`
  bool words_are_candidates = true;
  int new_state = 0;  // 0 not yet known, 1 no new name here, 2 one costs new_need + 1
  int new_need = 0;
  std::vector<std::int8_t> word_ok, name_ok;  // -1 not yet known
  std::vector<int> word_tail, name_tail;      // a completion's cost past the word's characters
};

// The identifier under way in a walk level: its memo and its spans of words and names.
struct IdentAt {
  IdentMemo* memo = nullptr;
  Span words, names;
};

class Walker {
 public:
  Walker(const Grammar& g, const TokenTrie& trie, const Names& names, std::string_view pending)
      : g_(g), trie_(trie), names_(names), base_(pending.size()), levels_(thread_levels()) {
    buffer_ = pending;
    buffer_.resize(base_ + trie_.depth() + 2);  // a blank after the deepest byte (punct_end)
    if (levels_.size() < trie_.depth() + 1) levels_.resize(trie_.depth() + 1);
  }

  Verdicts run(const Lex& lex, const State& closed) {
    IdentAt at;
    if (lex.pending == Pending::ident) at = start_identifier(lex, closed, nullptr);
    visit(0, 0, lex, closed, -1, at);
    return std::move(out_);
  }

 private:
  [[nodiscard]] Context context() const { return {g_, names_, buffer_}; }

  // The closed states of the walk's levels, kept per thread from one walk to the next (a level's
  // state is written before it is read).
  static std::vector<State>& thread_levels() {
    thread_local std::vector<State> levels;
    return levels;
  }

  int committed_need(const Lex& x, const State& s, int& completion) const {
    if (detail::pending_kernel_bits(s) != 0 || detail::lvalue_variable_due(*g_.tables, s)) {
      return needed_committed(context(), x, s);
    }
    if (completion < 0) completion = detail::completion(*g_.tables, s);
    return kBytesPerToken * (completion - 1) + 1 + separator_debt(x);
  }

  // The context of an identifier that starts here: `shared`, a sibling's, where the state is the
  // same (an identifier starting at the byte after the same state), else a new one.
  IdentAt start_identifier(const Lex& x, const State& s, IdentMemo* shared) {
    const Role role = role_of(s);
    if (role != Role::code && role != Role::field && role != Role::launch_name) return {};
    IdentMemo* memo = shared;
    if (memo == nullptr) {
      memo = &memos_.emplace_back();
      memo->role = role;
      memo->words = role == Role::field ? &g_.field_words : &g_.code_words;
      // A kernel's name is a local, never a word: the words only say which spellings are taken.
      memo->words_are_candidates = role != Role::launch_name;
      memo->new_state = 1;
      if (s.locals_used < g_.vocabulary->locals() && x.new_names < kMaxNewNamesPerToken) {
        ClosedRef r(&s, &scratch_);
        if (feed(g_, r, g_.vocabulary->local(s.locals_used))) {
          Lex y = x;  // the new name, ended by a blank
          y.pending = Pending::none;
          y.blank = true;
          y.line_start = false;
          memo->new_state = 2;
          memo->new_need = needed_committed(context(), y, r.get());
        }
      }
    }
    const std::string_view text(buffer_.data() + x.ident_start, x.ident_len);
    if (text.size() == 1) {  // narrowed from the whole lists, without comparing strings
      const Span all_words{0, static_cast<std::uint32_t>(memo->words->size())};
      const Span all_names{0, static_cast<std::uint32_t>(names_.sorted.size())};
      return {memo, narrow(*memo->words, all_words, 0, text[0]),
              narrow(names_.sorted, all_names, 0, text[0])};
    }
    return {memo, span_of(*memo->words, text), span_of(names_.sorted, text)};
  }

  bool word_ok(IdentMemo& m, const State& s, std::uint32_t i) const {
    if (m.word_ok.empty()) m.word_ok.assign(m.words->size(), -1);
    std::int8_t& ok = m.word_ok[i];
    if (ok < 0) ok = detail::token_allowed(*g_.tables, s, g_.info(m.words->id(i))) ? 1 : 0;
    return ok == 1;
  }

  bool name_ok(IdentMemo& m, const State& s, std::uint32_t i) const {
    if (m.name_ok.empty()) m.name_ok.assign(names_.sorted.size(), -1);
    std::int8_t& ok = m.name_ok[i];
    if (ok < 0) {
      const TokenInfo& k = g_.info(g_.vocabulary->local(names_.sorted.id(i)));
      const bool member = m.role == Role::field && g_.field_words.find(names_.sorted.text(i));
      ok = !member && detail::token_allowed(*g_.tables, s, k) ? 1 : 0;
    }
    return ok == 1;
  }

  // What completing the identifier as a word (its closed token `id`) costs beyond the word's
  // remaining characters: the blank that ends it, then the completion from there (as needed()
  // counts a completion).
  int tail(std::vector<int>& memo, std::size_t size, std::uint32_t i, const Lex& x, const State& s,
           TokenId id) {
    if (memo.empty()) memo.assign(size, -1);
    if (memo[i] < 0) {
      ClosedRef r(&s, &scratch_);
      memo[i] = kUnreachable;
      if (feed(g_, r, id)) {
        Lex y = x;
        y.pending = Pending::none;
        y.blank = true;
        y.line_start = false;
        memo[i] = 1 + needed_committed(context(), y, r.get());
      }
    }
    return memo[i];
  }

  // A pending identifier in code: kUnreachable where nothing completes it, else (at a token's end)
  // the cost of one completion, or kViable.
  int judge_identifier(const Lex& x, const State& s, IdentAt& at, bool token_end, std::size_t end) {
    IdentMemo& m = *at.memo;
    const std::size_t n = x.ident_len;
    const std::string_view text(buffer_.data() + x.ident_start, n);
    if (m.new_state == 2) {
      const bool taken = (!at.words.empty() && m.words->text(at.words.lo).size() == n) ||
                         (!at.names.empty() && names_.sorted.text(at.names.lo).size() == n) ||
                         new_name_starting(x, text, true) || reward::forbidden_name(text);
      // A new kernel's name longer than the budget's allowance counts apart.
      const auto cost = [&](std::size_t length) {
        const int excess =
            m.role == Role::launch_name ? kernel_name_excess(static_cast<int>(length)) : 0;
        return m.new_need + 1 + static_cast<int>(length - n) + excess;
      };
      if (!taken) return token_end ? cost(n) : kViable;  // a new name as it stands
      const auto name = fresh_name(context(), x, m.role, text);
      if (name) return token_end ? cost(name->size()) : kViable;
    }
    for (std::uint32_t i = at.words.lo; i < at.words.hi && m.words_are_candidates; ++i) {
      if (!word_ok(m, s, i)) continue;
      if (!token_end) return kViable;
      const int t = tail(m.word_tail, m.words->size(), i, x, s, m.words->id(i));
      if (t != kUnreachable) return static_cast<int>(m.words->text(i).size() - n) + t;
    }
    for (std::uint32_t i = at.names.lo; i < at.names.hi; ++i) {
      if (!name_ok(m, s, i)) continue;
      if (!token_end) return kViable;
      const TokenId local = g_.vocabulary->local(names_.sorted.id(i));
      const int t = tail(m.name_tail, names_.sorted.size(), i, x, s, local);
      if (t != kUnreachable) return static_cast<int>(names_.sorted.text(i).size() - n) + t;
    }
    if (new_name_starting(x, text, false)) {  // a name this token introduced (rare)
      const int need = needed_bound(context(), end, x, s);
      return need == kUnreachable || token_end ? need : kViable;
    }
    return kUnreachable;
  }

  // A pending punctuator's cost, ended by a blank where one may stand (as needed() counts that
  // completion), else the long way.
  int punct_end(const Lex& x, const State& s, std::size_t end) {
    buffer_[end] = ' ';
    Lex y = x;
    ClosedRef r(&s, &scratch_);
    if (step(context(), end, y, r) && y.pending == Pending::none) {
      return 1 + needed_committed(context(), y, r.get());
    }
    const int need = punct_end_cost(context(), end, x, s);
    return need != kUnreachable ? need : needed_bound(context(), end, x, s);
  }

  // A name first seen in this token that starts with `text` (or is it, with `whole`).
  bool new_name_starting(const Lex& x, std::string_view text, bool whole) const {
    for (int i = 0; i < x.new_names; ++i) {
      const NewName& name = x.news[static_cast<std::size_t>(i)];
      const std::string_view spelled(buffer_.data() + name.start, name.length);
      if (whole ? spelled == text : spelled.substr(0, text.size()) == text) return true;
    }
    return false;
  }

  void visit(std::uint32_t at, std::size_t depth, const Lex& lex, const State& closed,
             int completion, const IdentAt& ident) {
    const TokenTrie::Node& node = trie_.node(at);
    IdentMemo* sibling_memo = nullptr;  // identifiers starting here, from this node's state
    for (std::uint32_t c = 0; c < node.children; ++c) {
      const std::uint32_t child_at = node.first + c;
      const TokenTrie::Node& child = trie_.node(child_at);
      const std::size_t pos = base_ + depth;
      buffer_[pos] = child.byte;
      Lex x = lex;
      ClosedRef r(&closed, &levels_[depth]);
      if (!step(context(), pos, x, r)) continue;
      const State& s = r.get();
      int child_completion = r.copied() ? -1 : completion;
      const bool token_end = child.tokens > 0;
      IdentAt here;
      int need = kUnreachable;
      bool exact = false;
      if (x.pending == Pending::none) {
        need = committed_need(x, s, child_completion);
        exact = true;
      } else if (x.pending == Pending::ident && ident.memo != nullptr && x.ident_start != pos) {
        here = {ident.memo, narrow(*ident.memo->words, ident.words, x.ident_len - 1, child.byte),
                narrow(names_.sorted, ident.names, x.ident_len - 1, child.byte)};
      } else if (x.pending == Pending::ident) {
        here = start_identifier(x, s, r.copied() ? nullptr : sibling_memo);
        if (!r.copied()) sibling_memo = here.memo;
      }
      if (here.memo != nullptr) {
        const IdentMemo& m = *here.memo;
        const std::string_view text(buffer_.data() + x.ident_start, x.ident_len);
        if (m.new_state == 2 && here.words.empty() && here.names.empty() && child.word_only &&
            !new_name_starting(x, text, false) && !reward::forbidden_below(text) &&
            x.ident_len + child.subtree_depth - (depth + 1) <=
                static_cast<std::size_t>(m.role == Role::launch_name ? kBytesPerToken - 3
                                                                     : kMaxIdent)) {
          // New names all the way down, of one cost: the whole subtree in one segment.
          out_.push_back({child.tokens_begin, child.subtree_end, m.new_need + 1, false});
          continue;
        }
        need = judge_identifier(x, s, here, token_end, pos + 1);
      } else if (x.pending == Pending::punct) {
        need = punct_end(x, s, pos + 1);
      } else if (x.pending != Pending::none) {
        need = needed_bound(context(), pos + 1, x, s);
      }
      if (need == kUnreachable) continue;  // nothing completes the pending lexeme: prune
      if (token_end && need != kViable) {
        out_.push_back({child.tokens_begin, child.tokens_begin + child.tokens, need, exact});
      }
      visit(child_at, depth + 1, x, s, child_completion, here);
    }
  }

  const Grammar& g_;
  const TokenTrie& trie_;
  const Names& names_;
  std::size_t base_;
  std::string buffer_;
  std::vector<State>& levels_;
  State scratch_;                // for the costs of words and new names
  std::deque<IdentMemo> memos_;  // the identifier contexts met (stable addresses)
  Verdicts out_;
};

}  // namespace

Verdicts walk(const Grammar& g, const TokenTrie& trie, const Names& names, std::string_view pending,
              const Lex& lex, const State& closed) {
  return Walker(g, trie, names, pending).run(lex, closed);
}

}  // namespace sparserl::env::bpe_grammar
