// The grammar mask over BPE tokens, its machinery (a private header): a character layer that reads
// program text as the closed tokenizer's encode() reads it and feeds the closed-vocabulary tokens
// it finds to the syntax mask's automaton (action_mask_internal.hpp), one lexeme at a time.
//
// The layer's state is Lex (small, trivially copyable: the trie walk copies it per node) beside the
// syntax mask's State (copied only when a lexeme completes and is fed), the program's names so far
// (Names) and the grammar's tables (Grammar, one per pair of tokenizer and closed vocabulary). A
// lexeme still open at the end of a BPE token - an identifier whose end is not yet seen, a
// punctuator that may grow (`<` of `<<=`), a directive's `//@...`, the literal "C" - is pending:
// the token is allowed only where the lexeme can still complete to something the syntax mask
// takes (viable()), and the budget counts the cheapest such completion (needed()).
//
// Files: bpe_grammar_lexer.cpp (the character layer: step, finish, viable, needed),
// bpe_grammar_tables.cpp (Words, Grammar, Names, the digests), bpe_grammar_walk.cpp (the token
// trie and fill()'s walk over it), bpe_grammar_mask.cpp (the mask cache, the budget applied, the
// class, bpe_program_text()).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "action_mask_internal.hpp"
#include "sparserl/env/bpe_tokenizer.hpp"

namespace sparserl::env::bpe_grammar {

using State = ActionMask::State;
using Tables = ActionMask::Tables;
using detail::TokenInfo;

// The longest identifier the layer reads (longer ones are refused).
inline constexpr int kMaxIdent = 64;
// The budget. The syntax mask's completion() counts the closed tokens of a path that completes the
// program, each lowering the count by one. As text, one such token costs at most its characters
// and the separator before it (a blank, or the newline a `#` needs), and every byte is a BPE token
// of its own in a byte-level vocabulary. So the layer counts kBytesPerToken per closed token but
// <eos> (one token), plus the separator the next token may still need (separator_debt: none at a
// line's start, one after a blank, two after a lexeme), plus what kernel names longer than the
// allowance need (kernel_name_excess). A pending lexeme adds its cheapest completion's characters
// and a blank. Along such a completion every byte lowers the count by at least one (14 covers
// `__restrict__` typed at a line's start: 12 characters, the blank after it, the debt of two), so a
// token is allowed only where the count after it fits the tokens left, and every episode ends with
// <eos> in time.
inline constexpr int kBytesPerToken = 14;
inline int kernel_name_excess(int length) { return std::max(0, length + 3 - kBytesPerToken); }
// Where the completion path writes a variable in place of a number in a group that must be an
// lvalue (detail::lvalue_variable_due), the variable's name: the longest a name may be, less the
// two closed tokens the count gives it (`<num> 0`), with the blank after it to spare.
inline constexpr int kLvalueNameBytes = kMaxIdent + 2 - 2 * kBytesPerToken;

// Names a single BPE token may introduce (a token holding more is refused: no tokenizer's
// pre-tokenizer makes one, as pre-tokens hold one word).
inline constexpr int kMaxNewNamesPerToken = 2;

enum class Pending : std::uint8_t { none, ident, punct, literal, string, splice };
// What an identifier is read as where it stands (the closed phase decides it).
enum class Role : std::uint8_t {
  none,         // no identifier may stand here
  code,         // keyword, prelude constant, builtin, else a local (known or new)
  field,        // after `.` / `->`: a member first, then as in code
  expr,         // a launch expression: a prelude constant or a builtin; or the next key (`block=`)
  format_name,  // csr coo ell sell bsr
  format_key,   // C= sigma= R=
  launch_name,  // a kernel's name: a local, never a vocabulary word
  launch_key,   // grid=
};
// The last lexeme of a launch expression, for where a blank may stand (only where decode() puts
// one, so that the text is never longer than the rendering the syntax mask limits to 256).
enum class ExprPrev : std::uint8_t { start, operand, binary, comma, open, unary, function };

// A name first seen inside the BPE token being read: where its text is in the walk's buffer.
struct NewName {
  std::uint16_t start = 0;
  std::uint8_t length = 0;
  std::uint8_t local = 0;
};

struct Lex {
  Pending pending = Pending::none;
  std::uint8_t plen = 0;          // the punctuator buffer's length; literal or string progress
  std::array<char, 4> punct{};    // the pending punctuator's characters
  std::uint8_t literal = 0;       // 0 "//@format", 1 "//@launch", 2 not yet known ("//@")
  bool line_start = true;         // nothing but blanks yet on this (spliced) line
  bool punct_line_start = false;  // the pending punctuator opened its line (`#`)
  bool blank = false;             // a blank since the last lexeme
  bool ident_after_blank = false;
  bool number = false;  // a number is open (its characters go in as digit tokens)
  char number_last = 0;
  std::uint8_t pp_lexemes = 0;  // lexemes on this preprocessor line (counts to 3)
  bool pp_define = false;       // ... and the second was `define`
  ExprPrev expr_prev = ExprPrev::start;
  std::uint16_t ident_start = 0;  // the pending identifier: text[ident_start, ident_start + len)
  std::uint16_t ident_len = 0;
  std::uint8_t new_names = 0;
  std::array<NewName, kMaxNewNamesPerToken> news{};
};

inline int separator_debt(const Lex& x) { return x.line_start ? 0 : x.blank ? 1 : 2; }

// Identifier spellings of one role, sorted by text, each with the closed token it reads as.
class Words {
 public:
  // Spellings are added, then sorted once; a spelling added twice keeps its first token (as an
  // earlier class wins in encode()'s lookups).
  void add(std::string text, TokenId id);
  void sort();
  [[nodiscard]] std::optional<TokenId> find(std::string_view text) const;
  // Indices [first, last) of the spellings that start with `prefix`.
  [[nodiscard]] std::pair<std::size_t, std::size_t> range(std::string_view prefix) const;
  [[nodiscard]] const std::string& text(std::size_t i) const { return list_[i].first; }
  [[nodiscard]] TokenId id(std::size_t i) const { return list_[i].second; }
  [[nodiscard]] std::size_t size() const { return list_.size(); }

 private:
  std::vector<std::pair<std::string, TokenId>> list_;
  std::unordered_map<std::string_view, TokenId> index_;  // into list_, rebuilt by sort()
};

// What the layer knows of the closed vocabulary, built once per vocabulary.
struct Grammar {
  explicit Grammar(std::shared_ptr<const Vocabulary> vocabulary);

  std::shared_ptr<const Vocabulary> vocabulary;
  std::shared_ptr<const Tables> tables;
  Words code_words, field_words, expr_words, format_names, format_keys, launch_keys;
  std::array<TokenId, 128> digit{};  // a number's character -> its digit token (or -1)
  std::unordered_map<std::string, TokenId> punct;  // folded punctuator -> token
  std::vector<std::string> punct_spellings;  // every punctuator reward's lexer knows, unfolded
  // Those of each first character, in the order reward's lexer tries them.
  std::array<std::vector<std::string_view>, 128> punct_by_first;
  TokenId format = -1, launch = -1, eol = -1, num = -1, eos = -1, macro_open = -1, linkage = -1;
  TokenId minus = -1;

  [[nodiscard]] const TokenInfo& info(TokenId id) const {
    return tables->info[static_cast<std::size_t>(id)];
  }
  // A proper prefix of a punctuator: the buffer may still grow.
  [[nodiscard]] bool punct_grows(std::string_view buffer) const;
  [[nodiscard]] bool is_punct(std::string_view text) const;
};

// The program's names so far (locals in order of first appearance), between BPE tokens.
struct Names {
  std::unordered_map<std::string, int> local_of;
  std::vector<std::string> by_local;
  Words sorted;  // for prefix queries; the id is the local index
  void add(const std::string& name);
};

// The closed state of a walk level: read from the level above until a lexeme is fed, then a copy.
class ClosedRef {
 public:
  // With a `log`, every token fed is appended to it (the mask's record of what it read).
  ClosedRef(const State* base, State* scratch, std::vector<TokenId>* log = nullptr)
      : base_(base), scratch_(scratch), log_(log) {}
  [[nodiscard]] const State& get() const { return copied_ ? *scratch_ : *base_; }
  State& edit() {
    if (!copied_) {
      *scratch_ = *base_;
      copied_ = true;
    }
    return *scratch_;
  }
  [[nodiscard]] bool copied() const { return copied_; }
  void log(TokenId id) {
    if (log_ != nullptr) log_->push_back(id);
  }

 private:
  const State* base_;
  State* scratch_;
  std::vector<TokenId>* log_;
  bool copied_ = false;
};

// What a step reads besides the states: the tables, the names, and the text - the pending
// identifier's start carried over from earlier tokens, then the bytes read in this token.
struct Context {
  const Grammar& grammar;
  const Names& names;
  std::string_view text;
};

// Reads the byte text[pos]; false when the grammar refuses it (the states are then spoilt).
bool step(const Context& c, std::size_t pos, Lex& lex, ClosedRef& closed);
// The text ends at `end` and <eos> follows: finishes the pending lexeme and an open
// preprocessor line; false when the program cannot end here.
bool finish(const Context& c, std::size_t end, Lex& lex, ClosedRef& closed);
// The pending lexeme (if any) can still complete to one the syntax mask takes.
bool viable(const Context& c, std::size_t end, const Lex& lex, const State& closed);
// BPE tokens (the <eos> included) that complete the program from here, along a completion whose
// every byte lowers the count by at least one: what the budget compares with the tokens left
// (INT_MAX where the pending lexeme cannot complete).
int needed(const Context& c, std::size_t end, const Lex& lex, const State& closed);
// An upper bound of needed(), cheaper: the cost of the first completion found (INT_MAX where
// none is: the pending lexeme is not viable).
int needed_bound(const Context& c, std::size_t end, const Lex& lex, const State& closed);
// The same where nothing is pending.
int needed_committed(const Context& c, const Lex& lex, const State& closed);

// A word or a name already, where `role` reads identifiers (so no new name's spelling).
bool name_taken(const Context& c, const Lex& lex, Role role, std::string_view name);
// The shortest extension of an identifier's prefix that is no word, no name yet and no name the
// static checks forbid (reward::forbidden_name: a new name's spelling where `role` reads it), or
// nullopt past kMaxIdent or where every extension is forbidden (`cudaM`).
std::optional<std::string> fresh_name(const Context& c, const Lex& lex, Role role,
                                      std::string_view prefix);
// The cost (as needed() counts it) of ending the pending punctuator now; INT_MAX where the grammar
// refuses it.
int punct_end_cost(const Context& c, std::size_t end, const Lex& lex, const State& closed);
// Feeds a closed token if the syntax mask takes it here.
bool feed(const Grammar& g, ClosedRef& closed, TokenId id);
// Where an identifier stands, by the closed phase.
Role role_of(const State& s);
// A digest of the syntax mask's State but its token count (the mask cache's key).
std::uint64_t digest(const State& s);
std::uint64_t digest(const Lex& lex);

// ---- the token trie and its walk (bpe_grammar_walk.cpp)
// -------------------------------------------

// The vocabulary's tokens by their bytes, for fill()'s walk. Children of a node are contiguous and
// sorted by byte; token ids are kept in depth-first order, so a node's subtree holds the ids
// [tokens_begin, subtree_end). Tokens whose bytes the grammar never takes (beyond ASCII, control
// characters but tab and newline) and special tokens are left out.
class TokenTrie {
 public:
  struct Node {
    std::uint32_t first = 0;  // index of the first child
    std::uint32_t children = 0;
    std::uint32_t tokens_begin = 0;  // ids[tokens_begin, +tokens) end here
    std::uint32_t tokens = 0;
    std::uint32_t subtree_end = 0;    // ids of the whole subtree end here
    std::uint16_t subtree_depth = 0;  // the longest token below, in bytes
    bool word_only = false;           // every byte below continues an identifier
    char byte = 0;
  };

  explicit TokenTrie(const BpeTokenizer& t);
  [[nodiscard]] const Node& node(std::uint32_t i) const { return nodes_[i]; }
  [[nodiscard]] const std::vector<TokenId>& ids() const { return ids_; }
  [[nodiscard]] std::size_t depth() const { return depth_; }

 private:
  void build(std::uint32_t at, const std::vector<std::pair<std::string_view, TokenId>>& list,
             std::size_t lo, std::size_t hi, std::size_t depth);
  std::vector<Node> nodes_;
  std::vector<TokenId> ids_;
  std::size_t depth_ = 0;
};

// The walk's verdict on the tokens trie.ids()[begin, end): allowed where `need` BPE tokens still
// fit after them; `exact` false when need is an upper bound (the exact count is then taken token by
// token where the bound does not fit).
struct Segment {
  std::uint32_t begin = 0, end = 0;
  std::int32_t need = 0;
  bool exact = true;
};
using Verdicts = std::vector<Segment>;

// Every token's verdict from a state: the layer's and the syntax mask's, the names, and the pending
// identifier's characters.
Verdicts walk(const Grammar& g, const TokenTrie& trie, const Names& names, std::string_view pending,
              const Lex& lex, const State& closed);

}  // namespace sparserl::env::bpe_grammar
