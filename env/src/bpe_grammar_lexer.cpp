// The grammar mask's character layer (bpe_grammar_internal.hpp): program text read byte by byte as
// reward's lexer and the closed tokenizer's encode() read it, each completed lexeme fed to the
// syntax mask's automaton as the closed tokens encode() would write for it.
//
// The text it reads (docs/bpe.md): the directive lines first, written as decode() writes them
// (`//@format NAME [KEY=VALUE ...]`, `//@launch NAME grid=EXPR block=EXPR [smem=EXPR]`, one blank
// between words, a blank in an expression only where decode() puts one), blank lines between
// them; then code with free blanks and newlines, no comments, no string but "C", no character
// literal, a backslash only to splice a preprocessor line after a blank, `#` only first on a line.
// Identifiers are read as encode() reads them: after `.` / `->` a member first, then a keyword, a
// prelude constant, a builtin, else a local - a name seen before, or the next new local where the
// syntax mask allows one and the static checks would not refuse the name (`malloc`, `cudaX...`:
// reward::forbidden_name); a launch line's kernel name is always a local (never a vocabulary word,
// which code would read as that word); `#define NAME(` with the parenthesis glued is <macro(>.
#include <algorithm>
#include <limits>

#include "bpe_grammar_internal.hpp"
#include "sparserl/reward/program.hpp"
#include "sparserl/reward/static_checks.hpp"

namespace sparserl::env::bpe_grammar {

using detail::Cat;
using detail::Last;
using detail::Phase;

namespace {

constexpr std::string_view kLiterals[] = {"//@format", "//@launch"};
constexpr std::string_view kLinkage = "\"C\"";

// Character classes of the C locale, without the locale's lookups (the walk asks per byte).
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_punct_char(char c) {
  return std::string_view("{}[]()<>%:;.?*+-/^&|~!=,#").find(c) != std::string_view::npos;
}

bool in_directive_line(const State& s) {
  switch (s.phase) {
    case Phase::format_name:
    case Phase::format_key:
    case Phase::format_num_start:
    case Phase::format_num:
    case Phase::format_eol:
    case Phase::launch_name:
    case Phase::launch_key:
    case Phase::expr:
      return true;
    default:
      return false;
  }
}
bool in_directive_section(const State& s) {
  return s.phase == Phase::start || s.phase == Phase::launch_start;
}

// A lexeme was fed (`now`: the closed state after it): the line's bookkeeping.
void lexeme_done(Lex& x, const State& now) {
  x.blank = false;
  x.line_start = false;
  if (detail::on_line(now) && x.pp_lexemes < 3) ++x.pp_lexemes;
}

std::string_view ident_text(const Context& c, const Lex& x) {
  return c.text.substr(x.ident_start, x.ident_len);
}

std::optional<int> known_local(const Context& c, const Lex& x, std::string_view text) {
  if (auto id = c.names.sorted.find(text)) return *id;
  for (int i = 0; i < x.new_names; ++i) {
    const NewName& n = x.news[static_cast<std::size_t>(i)];
    if (c.text.substr(n.start, n.length) == text) return n.local;
  }
  return std::nullopt;
}

// The next new local, if the vocabulary has one and the token may hold another new name.
std::optional<TokenId> next_local(const Context& c, const Lex& x, const State& s) {
  if (s.locals_used >= c.grammar.vocabulary->locals() || x.new_names >= kMaxNewNamesPerToken) {
    return std::nullopt;
  }
  return c.grammar.vocabulary->local(s.locals_used);
}

enum class End : std::uint8_t { refused, consumed, not_consumed };

// The identifier's closed token where it stands, given what ends it (`after`, or 0 at the end of
// the text); -1 when refused. `is_new` says it is a new local.
TokenId read_identifier(const Context& c, const Lex& x, const State& s, char after, bool& is_new) {
  const Grammar& g = c.grammar;
  const std::string_view text = ident_text(c, x);
  is_new = false;
  const auto local_or_new = [&]() -> TokenId {
    if (auto local = known_local(c, x, text)) return g.vocabulary->local(*local);
    if (reward::forbidden_name(text)) return -1;  // the static checks would refuse it
    is_new = true;
    return next_local(c, x, s).value_or(-1);
  };
  switch (role_of(s)) {
    case Role::code:
    case Role::field: {
      if (after == '"' || after == '\'') return -1;  // a string prefix (u8"...") or worse
      const Words& words = role_of(s) == Role::field ? g.field_words : g.code_words;
      if (auto id = words.find(text)) return *id;
      return local_or_new();
    }
    case Role::expr:
      if (after == '=') {
        const bool key_place = x.ident_after_blank && x.expr_prev == ExprPrev::operand;
        return key_place ? g.launch_keys.find(text).value_or(-1) : -1;
      }
      return g.expr_words.find(text).value_or(-1);
    case Role::format_name:
      return is_blank(after) || after == '\n' ? g.format_names.find(text).value_or(-1) : -1;
    case Role::format_key:
      return after == '=' ? g.format_keys.find(text).value_or(-1) : -1;
    case Role::launch_key:
      return after == '=' ? g.launch_keys.find(text).value_or(-1) : -1;
    case Role::launch_name:
      if (!is_blank(after) || g.code_words.find(text)) return -1;
      return local_or_new();
    case Role::none:
      break;
  }
  return -1;
}

// Ends the pending identifier before `after` (0: the end of the text) and feeds its token; `=` of
// a key and the `(` of `#define NAME(` are taken with it.
End end_identifier(const Context& c, Lex& x, ClosedRef& closed, char after) {
  const State& s = closed.get();
  bool is_new = false;
  const TokenId id = read_identifier(c, x, s, after, is_new);
  if (id < 0) return End::refused;
  const Role role = role_of(s);
  const bool on_line = detail::on_line(s);
  const bool macro_paren = after == '(' && on_line && x.pp_define && x.pp_lexemes == 2;
  const int local = is_new ? s.locals_used : -1;
  if (!feed(c.grammar, closed, id)) return End::refused;
  if (is_new) {
    x.news[x.new_names++] = NewName{x.ident_start, static_cast<std::uint8_t>(x.ident_len),
                                    static_cast<std::uint8_t>(local)};
  }
  x.pending = Pending::none;
  const TokenInfo& k = c.grammar.info(id);
  const bool key = role == Role::format_key || role == Role::launch_key ||
                   (role == Role::expr && after == '=');  // `grid=`: the `=` is the key's
  if (key) {
    x.expr_prev = ExprPrev::start;  // its expression starts
  } else if (role == Role::expr) {
    x.expr_prev = k.cat == Cat::builtin ? ExprPrev::function : ExprPrev::operand;
  }
  if (on_line && x.pp_lexemes == 1) {
    x.pp_define = k.cat == Cat::keyword && k.param == detail::pp_define;
  }
  lexeme_done(x, closed.get());
  if (macro_paren) {
    if (!feed(c.grammar, closed, c.grammar.macro_open)) return End::refused;
    lexeme_done(x, closed.get());
    return End::consumed;
  }
  return key ? End::consumed : End::not_consumed;
}

// Feeds one punctuator (folded) that reward's lexer would read here.
bool take_punct(const Context& c, Lex& x, ClosedRef& closed, std::string_view spelled,
                bool first_on_line) {
  const Grammar& g = c.grammar;
  const std::string p = reward::fold_digraph(spelled);
  const State& s = closed.get();
  if (p == "#" && (!first_on_line || in_directive_line(s) || s.phase == Phase::start)) {
    return false;  // `#` opens a preprocessor line only (no stringizing)
  }
  if (s.phase == Phase::expr) {
    // Launch expressions have no decrement: `--` is two minus signs (as encode() writes it).
    const bool unary = x.expr_prev != ExprPrev::operand;
    if (p == "--") {
      if (!feed(g, closed, g.minus) || !feed(g, closed, g.minus)) return false;
      x.expr_prev = ExprPrev::unary;
      lexeme_done(x, closed.get());
      return true;
    }
    x.expr_prev = p == "("            ? ExprPrev::open
                  : p == ")"          ? ExprPrev::operand
                  : p == ","          ? ExprPrev::comma
                  : p == "-" && unary ? ExprPrev::unary
                                      : ExprPrev::binary;
  }
  const auto it = g.punct.find(p);
  if (it == g.punct.end() || !feed(g, closed, it->second)) return false;
  lexeme_done(x, closed.get());
  return true;
}

// Reads the punctuator buffer out (nothing more can join it), as reward's lexer would: the first
// punctuator of its list that matches, again and again.
bool flush_punct(const Context& c, Lex& x, ClosedRef& closed, std::size_t length) {
  std::string_view buffer(x.punct.data(), length);
  bool first = x.punct_line_start;
  x.pending = Pending::none;
  while (!buffer.empty()) {
    std::string_view match;
    for (std::string_view p : c.grammar.punct_by_first[static_cast<unsigned char>(buffer[0])]) {
      if (buffer.substr(0, p.size()) == p) {
        match = p;
        break;
      }
    }
    if (match.empty() || !take_punct(c, x, closed, match, first)) return false;
    buffer.remove_prefix(match.size());
    first = false;
  }
  return true;
}

bool start_number(const Context& c, Lex& x, ClosedRef& closed, std::string_view chars) {
  const bool in_expr = closed.get().phase == Phase::expr;
  if (!feed(c.grammar, closed, c.grammar.num)) return false;
  for (char ch : chars) {
    const TokenId d = c.grammar.digit[static_cast<unsigned char>(ch) & 0x7F];
    if (d < 0 || !feed(c.grammar, closed, d)) return false;
  }
  x.number = true;
  x.number_last = chars.back();
  if (in_expr) x.expr_prev = ExprPrev::operand;
  lexeme_done(x, closed.get());
  return true;
}

bool newline(const Context& c, Lex& x, ClosedRef& closed) {
  const State& s = closed.get();
  if (in_directive_line(s) || detail::on_line(s)) {
    if (!feed(c.grammar, closed, c.grammar.eol)) return false;
    x.pp_lexemes = 0;
    x.pp_define = false;
  }
  x.line_start = true;
  x.blank = true;
  return true;
}

// A blank: free in code and between directive lines; in a directive line one, where decode()
// writes one.
bool blank(Lex& x, const State& s) {
  if (in_directive_line(s)) {
    if (x.blank || s.phase == Phase::format_num_start) return false;
    if (s.phase == Phase::expr && x.expr_prev != ExprPrev::operand &&
        x.expr_prev != ExprPrev::binary && x.expr_prev != ExprPrev::comma) {
      return false;
    }
  }
  x.blank = true;
  return true;
}

// A character with nothing pending: a blank, a newline, or the start of a lexeme.
bool start(const Context& c, std::size_t pos, Lex& x, ClosedRef& closed) {
  const char ch = c.text[pos];
  const State& s = closed.get();
  if (ch == '\n') return newline(c, x, closed);
  if (is_blank(ch)) return blank(x, s);
  if (in_directive_line(s) && !x.blank &&
      (s.phase == Phase::format_name || s.phase == Phase::launch_name ||
       s.phase == Phase::launch_key || s.phase == Phase::format_key ||
       s.phase == Phase::format_eol)) {
    return false;  // a directive's words are apart
  }
  if (in_directive_section(s) && x.line_start && ch == '/') {
    x.pending = Pending::literal;
    x.literal = 2;
    x.plen = 1;
    return true;
  }
  if (s.phase == Phase::start) return false;
  if (ch == '\\') {
    if (!detail::on_line(s) || !x.blank) return false;
    x.pending = Pending::splice;
    return true;
  }
  if (is_digit(ch)) return start_number(c, x, closed, std::string_view(&c.text[pos], 1));
  if (is_ident_start(ch)) {
    // Glued to `"C"` a name would be the string's user-defined suffix (NVRTC: "expected an
    // identifier" of `extern "C"__global__`).
    if (!x.blank && closed.get().decl == detail::Decl::linkage) return false;
    x.pending = Pending::ident;
    x.ident_start = static_cast<std::uint16_t>(pos);
    x.ident_len = 1;
    x.ident_after_blank = x.blank;
    return true;
  }
  if (ch == '"') {
    x.pending = Pending::string;
    x.plen = 1;
    return true;
  }
  if (is_punct_char(ch)) {
    x.pending = Pending::punct;
    x.punct[0] = ch;
    x.plen = 1;
    x.punct_line_start = x.line_start;
    if (!c.grammar.punct_grows(std::string_view(&ch, 1))) return flush_punct(c, x, closed, 1);
    return true;
  }
  return false;
}

// A character while a punctuator is pending.
bool punct_goes_on(const Context& c, std::size_t pos, Lex& x, ClosedRef& closed) {
  const char ch = c.text[pos];
  const std::size_t n = x.plen;
  if (x.punct[n - 1] == '/' && n == 1 && (ch == '/' || ch == '*')) return false;  // a comment
  if (n < x.punct.size()) {
    std::array<char, 4> grown = x.punct;
    grown[n] = ch;
    const std::string_view candidate(grown.data(), n + 1);
    if (c.grammar.punct_grows(candidate) || c.grammar.is_punct(candidate)) {
      x.punct = grown;
      x.plen = static_cast<std::uint8_t>(n + 1);
      return c.grammar.punct_grows(candidate) || flush_punct(c, x, closed, n + 1);
    }
  }
  if (is_digit(ch) && x.punct[n - 1] == '.') {
    // `.5`: the dot starts a number (reward's lexer looks for a digit after a dot first).
    if (n > 1 && !flush_punct(c, x, closed, n - 1)) return false;
    x.pending = Pending::none;
    const char number[2] = {'.', ch};
    return start_number(c, x, closed, std::string_view(number, 2));
  }
  return flush_punct(c, x, closed, n) && start(c, pos, x, closed);
}

bool literal_goes_on(const Context& c, char ch, Lex& x, ClosedRef& closed) {
  if (x.literal == 2 && x.plen == 3) {
    if (ch != 'f' && ch != 'l') return false;
    x.literal = ch == 'f' ? 0 : 1;
  }
  const std::string_view literal = kLiterals[x.literal == 2 ? 0 : x.literal];
  if (ch != literal[x.plen]) return false;
  if (++x.plen < literal.size()) return true;
  x.pending = Pending::none;
  if (!feed(c.grammar, closed, x.literal == 0 ? c.grammar.format : c.grammar.launch)) return false;
  lexeme_done(x, closed.get());
  return true;
}

bool string_goes_on(const Context& c, char ch, Lex& x, ClosedRef& closed) {
  if (ch != kLinkage[x.plen]) return false;
  if (++x.plen < kLinkage.size()) return true;
  x.pending = Pending::none;
  if (!feed(c.grammar, closed, c.grammar.linkage)) return false;
  lexeme_done(x, closed.get());
  return true;
}

// A number's character: what reward's lexer takes into a preprocessing number.
bool continues_number(const Lex& x, char ch) {
  if (is_ident_char(ch) || ch == '.') return true;
  const char e = x.number_last;
  return (ch == '+' || ch == '-') && (e == 'e' || e == 'E' || e == 'p' || e == 'P');
}

}  // namespace

bool feed(const Grammar& g, ClosedRef& closed, TokenId id) {
  if (id < 0) return false;
  const TokenInfo& k = g.info(id);
  if (!detail::token_allowed(*g.tables, closed.get(), k)) return false;
  detail::take_token(*g.tables, closed.edit(), k);
  closed.log(id);
  return true;
}

Role role_of(const State& s) {
  switch (s.phase) {
    case Phase::format_name:
      return Role::format_name;
    case Phase::format_key:
    case Phase::format_num:  // the second key, after a blank
      return Role::format_key;
    case Phase::launch_name:
      return Role::launch_name;
    case Phase::launch_key:
      return Role::launch_key;
    case Phase::expr:
      return Role::expr;
    case Phase::launch_start:
    case Phase::code:
      return s.last == Last::access ? Role::field : Role::code;
    default:
      return Role::none;
  }
}

bool step(const Context& c, std::size_t pos, Lex& x, ClosedRef& closed) {
  const char ch = c.text[pos];
  if (static_cast<unsigned char>(ch) >= 0x80) return false;
  switch (x.pending) {
    case Pending::ident: {
      if (is_ident_char(ch)) {
        if (x.ident_len >= kMaxIdent) return false;
        ++x.ident_len;
        return true;
      }
      const End end = end_identifier(c, x, closed, ch);
      if (end != End::not_consumed) return end == End::consumed;
      break;
    }
    case Pending::punct:
      return punct_goes_on(c, pos, x, closed);
    case Pending::literal:
      return literal_goes_on(c, ch, x, closed);
    case Pending::string:
      return string_goes_on(c, ch, x, closed);
    case Pending::splice:
      if (ch != '\n') return false;
      x.pending = Pending::none;
      x.blank = true;
      return true;
    case Pending::none:
      break;
  }
  if (x.number) {
    if (continues_number(x, ch)) {
      x.number_last = ch;
      return feed(c.grammar, closed, c.grammar.digit[static_cast<unsigned char>(ch)]);
    }
    // The number ends here: where a blank ends it, no token shows the syntax mask that it did,
    // so it must be complete already (not `0x`, `1e+`).
    const State& s = closed.get();
    if (s.num != detail::Num::off && !detail::number_complete(s)) return false;
    x.number = false;
  }
  return start(c, pos, x, closed);
}

bool finish(const Context& c, std::size_t end, Lex& x, ClosedRef& closed) {
  (void)end;
  switch (x.pending) {
    case Pending::ident:
      if (end_identifier(c, x, closed, 0) == End::refused) return false;
      break;
    case Pending::punct:
      if (!flush_punct(c, x, closed, x.plen)) return false;
      break;
    case Pending::none:
      break;
    default:
      return false;
  }
  x.number = false;
  if (detail::on_line(closed.get()) && !feed(c.grammar, closed, c.grammar.eol)) return false;
  return feed(c.grammar, closed, c.grammar.eos);
}

// ---- viability and the budget -------------------------------------------------------------------

namespace {

bool allowed(const Grammar& g, const State& s, TokenId id) {
  return id >= 0 && detail::token_allowed(*g.tables, s, g.info(id));
}

// A known name may complete the identifier here: its local is allowed, and where members come
// first (after `.`) it is not read as a member.
bool name_allowed(const Context& c, const State& s, Role role, std::string_view name, int local) {
  if (role == Role::field && c.grammar.field_words.find(name)) return false;
  return allowed(c.grammar, s, c.grammar.vocabulary->local(local));
}

bool new_name_allowed(const Context& c, const Lex& x, const State& s) {
  const auto id = next_local(c, x, s);
  return id && allowed(c.grammar, s, *id);
}

// The word lists an identifier of this role may complete to (besides names).
std::vector<const Words*> word_lists(const Grammar& g, const Lex& x, Role role) {
  switch (role) {
    case Role::code:
      return {&g.code_words};
    case Role::field:
      return {&g.field_words};
    case Role::expr:
      if (x.ident_after_blank && x.expr_prev == ExprPrev::operand)
        return {&g.expr_words, &g.launch_keys};
      return {&g.expr_words};
    case Role::format_name:
      return {&g.format_names};
    case Role::format_key:
      return {&g.format_keys};
    case Role::launch_key:
      return {&g.launch_keys};
    default:
      return {};
  }
}

}  // namespace

bool name_taken(const Context& c, const Lex& x, Role role, std::string_view name) {
  return c.grammar.code_words.find(name) || known_local(c, x, name) ||
         (role == Role::field && c.grammar.field_words.find(name));
}

std::optional<std::string> fresh_name(const Context& c, const Lex& x, Role role,
                                      std::string_view prefix) {
  if (reward::forbidden_family(prefix)) return std::nullopt;
  std::string name(prefix);
  while (name_taken(c, x, role, name) || reward::forbidden_name(name)) {
    if (name.size() >= static_cast<std::size_t>(kMaxIdent)) return std::nullopt;
    // No family ends in a digit: `0` where `_` would enter one (`__nvvm_read_ptx_sreg_`).
    name += reward::forbidden_family(name + '_') ? '0' : '_';
  }
  return name;
}

namespace {

bool ident_viable(const Context& c, const Lex& x, const State& s) {
  const Role role = role_of(s);
  const std::string_view prefix = ident_text(c, x);
  const bool takes_names = role == Role::code || role == Role::field || role == Role::launch_name;
  if (takes_names && new_name_allowed(c, x, s) && fresh_name(c, x, role, prefix)) return true;
  for (const Words* words : word_lists(c.grammar, x, role)) {
    const auto [first, last] = words->range(prefix);
    for (std::size_t i = first; i < last; ++i) {
      if (allowed(c.grammar, s, words->id(i))) return true;
    }
  }
  if (!takes_names) return false;
  const auto [first, last] = c.names.sorted.range(prefix);
  for (std::size_t i = first; i < last; ++i) {
    if (name_allowed(c, s, role, c.names.sorted.text(i), c.names.sorted.id(i))) return true;
  }
  for (int i = 0; i < x.new_names; ++i) {
    const NewName& n = x.news[static_cast<std::size_t>(i)];
    const std::string_view name = c.text.substr(n.start, n.length);
    if (name.substr(0, prefix.size()) == prefix && name_allowed(c, s, role, name, n.local)) {
      return true;
    }
  }
  return false;
}

// One way to complete the pending lexeme: the characters still to come and whether they end it
// (a key's `=`, a kernel name's blank, a punctuator that cannot grow) or the next character will.
struct Completion {
  std::string rest;
  bool ends_itself = false;
};

// Calls `visit` with each way to complete the pending identifier until it returns true; true
// when it did.
template <class Visit>
bool each_ident_completion(const Context& c, const Lex& x, const State& s, Visit&& visit) {
  const Role role = role_of(s);
  const std::string_view prefix = ident_text(c, x);
  const bool keyed = role == Role::format_key || role == Role::launch_key;
  const std::string tail = keyed                                                    ? "="
                           : role == Role::launch_name || role == Role::format_name ? " "
                                                                                    : "";
  const auto word = [&](std::string_view w, std::string_view end) {
    return visit(Completion{std::string(w.substr(prefix.size())) + std::string(end), !end.empty()});
  };
  for (const Words* words : word_lists(c.grammar, x, role)) {
    const auto [first, last] = words->range(prefix);
    for (std::size_t i = first; i < last; ++i) {
      if (!allowed(c.grammar, s, words->id(i))) continue;
      const bool key = words == &c.grammar.launch_keys && role == Role::expr;
      if (word(words->text(i), key ? "=" : tail)) return true;
    }
  }
  if (role != Role::code && role != Role::field && role != Role::launch_name) return false;
  const auto [first, last] = c.names.sorted.range(prefix);
  for (std::size_t i = first; i < last; ++i) {
    if (name_allowed(c, s, role, c.names.sorted.text(i), c.names.sorted.id(i)) &&
        word(c.names.sorted.text(i), tail)) {
      return true;
    }
  }
  for (int i = 0; i < x.new_names; ++i) {
    const NewName& n = x.news[static_cast<std::size_t>(i)];
    const std::string_view name = c.text.substr(n.start, n.length);
    if (name.substr(0, prefix.size()) == prefix && name_allowed(c, s, role, name, n.local) &&
        word(name, tail)) {
      return true;
    }
  }
  if (!new_name_allowed(c, x, s)) return false;
  const auto name = fresh_name(c, x, role, prefix);
  return name && word(*name, tail);
}

template <class Visit>
bool each_completion(const Context& c, const Lex& x, const State& s, Visit&& visit) {
  switch (x.pending) {
    case Pending::ident:
      return each_ident_completion(c, x, s, visit);
    case Pending::punct: {
      const std::string_view buffer(x.punct.data(), x.plen);
      if (visit(Completion{"", false})) return true;
      // A dot may start a number (`.5`): where an operand is due, no punctuator would do.
      if (buffer.back() == '.' && visit(Completion{"0", false})) return true;
      for (const std::string& p : c.grammar.punct_spellings) {
        if (p.size() > buffer.size() && p.compare(0, buffer.size(), buffer) == 0 &&
            visit(Completion{p.substr(buffer.size()), false})) {
          return true;
        }
      }
      return false;
    }
    case Pending::literal:
      for (int which = 0; which < 2; ++which) {
        if ((x.literal == 2 || x.literal == which) &&
            visit(Completion{std::string(kLiterals[which].substr(x.plen)), true})) {
          return true;
        }
      }
      return false;
    case Pending::string:
      return visit(Completion{std::string(kLinkage.substr(x.plen)), true});
    case Pending::splice:
      return visit(Completion{"\n", true});
    case Pending::none:
      break;
  }
  return visit(Completion{"", true});
}

// Takes a completion's characters and ends the lexeme; false when the grammar refuses it.
bool complete(const Context& c, std::size_t end, const Completion& how, Lex& x, ClosedRef& r) {
  for (std::size_t i = 0; i < how.rest.size(); ++i) {
    if (!step(c, end + i, x, r)) return false;
  }
  if (!how.ends_itself) {
    if (x.pending == Pending::ident && end_identifier(c, x, r, 0) == End::refused) return false;
    if (x.pending == Pending::punct && !flush_punct(c, x, r, x.plen)) return false;
  }
  return x.pending == Pending::none;
}

// The cost of one completion (INT_MAX where the grammar refuses it). An identifier or a
// punctuator that the next character ends is ended by a blank where one may stand (the blank then
// is the separator the next token would need), else by no character, counted as one.
int completion_cost(const Context& c, std::size_t end, const Lex& x, const State& s,
                    const Completion& how, std::string& text) {
  for (const bool blank_after : {true, false}) {
    if (blank_after && how.ends_itself) continue;
    text.resize(end);
    text += how.rest;
    if (blank_after) text += ' ';
    const Context with{c.grammar, c.names, text};
    Lex y = x;
    State scratch;
    ClosedRef r(&s, &scratch);
    const Completion taken{blank_after ? how.rest + " " : how.rest, how.ends_itself || blank_after};
    if (!complete(with, end, taken, y, r)) continue;
    const int extra = how.ends_itself || blank_after ? 0 : 1;
    return static_cast<int>(taken.rest.size()) + extra + needed_committed(with, y, r.get());
  }
  return std::numeric_limits<int>::max();
}

// The least cost over the completions (or the first that works, with `first_only`).
int completion_need(const Context& c, std::size_t end, const Lex& x, const State& s,
                    bool first_only) {
  int best = std::numeric_limits<int>::max();
  std::string text(c.text.substr(0, end));
  each_completion(c, x, s, [&](const Completion& how) {
    const int cost = completion_cost(c, end, x, s, how, text);
    best = std::min(best, cost);
    return first_only && cost != std::numeric_limits<int>::max();
  });
  return best;
}

}  // namespace

bool viable(const Context& c, std::size_t end, const Lex& x, const State& s) {
  switch (x.pending) {
    case Pending::none:
    case Pending::splice:
      return true;
    case Pending::ident:
      return ident_viable(c, x, s);
    case Pending::literal:
      return (x.literal != 1 && allowed(c.grammar, s, c.grammar.format)) ||
             (x.literal != 0 && allowed(c.grammar, s, c.grammar.launch));
    case Pending::string:
      return allowed(c.grammar, s, c.grammar.linkage);
    case Pending::punct:
      break;
  }
  return completion_need(c, end, x, s, true) != std::numeric_limits<int>::max();
}

int needed_committed(const Context& c, const Lex& x, const State& s) {
  // Each launched kernel still to declare is named once more in its declaration; where a launch
  // line's name is due, the completion names one of them there too (the syntax mask's count
  // reuses a pending kernel rather than declare another).
  int excess = 0, least = std::numeric_limits<int>::max();
  const unsigned pending = detail::pending_kernel_bits(s);
  for (int k = 0; k < detail::kMaxKernelLocal; ++k) {
    if (((pending >> k) & 1u) == 0) continue;
    std::size_t length = 0;
    if (static_cast<std::size_t>(k) < c.names.by_local.size()) {
      length = c.names.by_local[static_cast<std::size_t>(k)].size();
    }
    for (int i = 0; i < x.new_names; ++i) {
      const NewName& n = x.news[static_cast<std::size_t>(i)];
      if (n.local == k) length = n.length;
    }
    excess += kernel_name_excess(static_cast<int>(length));
    least = std::min(least, kernel_name_excess(static_cast<int>(length)));
  }
  if (s.phase == detail::Phase::launch_name && pending != 0) excess += least;
  if (detail::lvalue_variable_due(*c.grammar.tables, s)) excess += kLvalueNameBytes;
  return kBytesPerToken * (detail::completion(*c.grammar.tables, s) - 1) + 1 + separator_debt(x) +
         excess;
}

int punct_end_cost(const Context& c, std::size_t end, const Lex& x, const State& s) {
  std::string text(c.text.substr(0, end));
  return completion_cost(c, end, x, s, Completion{"", false}, text);
}

int needed(const Context& c, std::size_t end, const Lex& x, const State& s) {
  if (x.pending == Pending::none) return needed_committed(c, x, s);
  return completion_need(c, end, x, s, false);
}

int needed_bound(const Context& c, std::size_t end, const Lex& x, const State& s) {
  if (x.pending == Pending::none) return needed_committed(c, x, s);
  return completion_need(c, end, x, s, true);
}

}  // namespace sparserl::env::bpe_grammar
