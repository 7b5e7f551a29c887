// The lexer and the directive parser. The lexer errs on the side of seeing code: wherever it and
// the compiler could disagree about what is a comment or a literal (a splice with trailing blanks,
// a lone carriage return, a raw string whose end a splice would change), it reads the text as code,
// so a forbidden name can be falsely suspected but never hidden. Digraphs are folded to what they
// mean (`%:` is `#`, `%:%:` is `##`), and pp-numbers keep their digit separators (1'000), so no
// quote character opens a bogus literal that would swallow code.
#include "sparserl/reward/program.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace sparserl::reward {
namespace {

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// The text after phase 2 (backslash-newline removed), with each character's original position.
struct Spliced {
  std::string text;
  std::vector<int> line, column;
};

Spliced splice(std::string_view in) {
  Spliced s;
  s.text.reserve(in.size());
  s.line.reserve(in.size() + 1);
  s.column.reserve(in.size() + 1);
  int line = 1, column = 1;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '\\' && i + 1 < in.size() &&
        (in[i + 1] == '\n' || (in[i + 1] == '\r' && i + 2 < in.size() && in[i + 2] == '\n'))) {
      i += in[i + 1] == '\n' ? 1 : 2;
      ++line;
      column = 1;
      continue;
    }
    s.text.push_back(c);
    s.line.push_back(line);
    s.column.push_back(column);
    const bool newline = c == '\n' || (c == '\r' && !(i + 1 < in.size() && in[i + 1] == '\n'));
    if (newline) {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  s.line.push_back(line);  // end-of-text position
  s.column.push_back(column);
  return s;
}

// Punctuators, longest first within each leading character (the search takes the first match).
constexpr std::array<std::string_view, 59> kPunctuators = {
    "%:%:", "...", "<<=", ">>=", "->*", "<=>", "<<<", "##", "::", "->", "++", "--",
    "<<",   ">>",  "<=",  ">=",  "==",  "!=",  "&&",  "||", "+=", "-=", "*=", "/=",
    "%=",   "&=",  "|=",  "^=",  ".*",  "%:",  "<:",  ":>", "<%", "%>", "{",  "}",
    "[",    "]",   "(",   ")",   ";",   ":",   "?",   ".",  ",",  "+",  "-",  "*",
    "/",    "%",   "^",   "&",   "|",   "~",   "!",   "=",  "<",  ">",  "#"};

bool is_string_prefix(std::string_view id) {
  return id == "u8" || id == "u" || id == "U" || id == "L" || id == "R" || id == "u8R" ||
         id == "uR" || id == "UR" || id == "LR";
}

class Lexer {
 public:
  explicit Lexer(std::string_view original) : s_(splice(original)), t_(s_.text) {}

  LexResult run() {
    while (pos_ < t_.size() && !result_.error) step();
    return std::move(result_);
  }

 private:
  void error_at(std::size_t pos, std::string message) {
    result_.error = LexError{std::move(message), s_.line[pos], s_.column[pos]};
  }

  void newline() {
    line_has_token_ = false;
    current_pp_ = -1;
  }

  void push(TokenKind kind, std::string text, std::size_t start) {
    Token token;
    token.kind = kind;
    token.text = std::move(text);
    token.line = s_.line[start];
    token.column = s_.column[start];
    token.line_start = !line_has_token_;
    if (token.line_start && kind == TokenKind::punct && token.text == "#") {
      current_pp_ = pp_count_++;
    }
    token.pp_line = current_pp_;
    line_has_token_ = true;
    result_.tokens.push_back(std::move(token));
  }

  void step() {
    const char c = t_[pos_];
    if (c == '\n' || c == '\r') {
      ++pos_;
      if (c == '\r' && pos_ < t_.size() && t_[pos_] == '\n') ++pos_;
      newline();
      return;
    }
    if (c == ' ' || c == '\t' || c == '\v' || c == '\f') {
      ++pos_;
      return;
    }
    if (c == '/' && pos_ + 1 < t_.size() && t_[pos_ + 1] == '/') return line_comment();
    if (c == '/' && pos_ + 1 < t_.size() && t_[pos_ + 1] == '*') return block_comment();
    if (is_digit(c) || (c == '.' && pos_ + 1 < t_.size() && is_digit(t_[pos_ + 1]))) {
      return number();
    }
    if (is_ident_start(c)) return identifier();
    if (c == '"') return quoted(pos_, pos_, '"', TokenKind::string);
    if (c == '\'') return quoted(pos_, pos_, '\'', TokenKind::character);
    for (std::string_view p : kPunctuators) {
      if (t_.compare(pos_, p.size(), p) == 0) return punct(p);
    }
    push(TokenKind::other, std::string(1, c), pos_);
    ++pos_;
  }

  void punct(std::string_view p) {
    push(TokenKind::punct, fold_digraph(p), pos_);
    pos_ += p.size();
  }

  static bool is_line_end(char c) { return c == '\n' || c == '\r'; }

  // A block comment spanning lines: inside a preprocessor directive it is one blank and
  // the directive goes on after it, as in the compiler's phase 3; elsewhere a `#` after it may
  // start a directive.
  void skip_lines(std::size_t from, std::size_t to) {
    if (current_pp_ >= 0) return;
    for (std::size_t i = from; i < to; ++i) {
      if (is_line_end(t_[i])) line_has_token_ = false;
    }
  }

  void line_comment() {
    const std::size_t start = pos_;
    std::size_t end = pos_;
    while (end < t_.size() && !is_line_end(t_[end])) ++end;
    if (t_.compare(start, 3, "//@") == 0) {
      DirectiveComment d;
      d.text = t_.substr(start + 3, end - start - 3);
      d.line = s_.line[start];
      d.column = s_.column[start];
      d.alone = !line_has_token_;
      result_.directives.push_back(std::move(d));
    }
    pos_ = end;
  }

  void block_comment() {
    const std::size_t start = pos_;
    const std::size_t end = t_.find("*/", pos_ + 2);
    if (end == std::string::npos) return error_at(start, "unterminated /* comment");
    skip_lines(pos_, end);
    pos_ = end + 2;
  }

  void number() {
    const std::size_t start = pos_;
    ++pos_;
    while (pos_ < t_.size()) {
      const char c = t_[pos_];
      if ((c == '+' || c == '-') && (t_[pos_ - 1] == 'e' || t_[pos_ - 1] == 'E' ||
                                     t_[pos_ - 1] == 'p' || t_[pos_ - 1] == 'P')) {
        ++pos_;
      } else if (c == '\'' && pos_ + 1 < t_.size() && is_ident_char(t_[pos_ + 1])) {
        pos_ += 2;  // digit separator
      } else if (is_ident_char(c) || c == '.') {
        ++pos_;
      } else {
        break;
      }
    }
    push(TokenKind::number, t_.substr(start, pos_ - start), start);
  }

  void identifier() {
    const std::size_t start = pos_;
    while (pos_ < t_.size() && is_ident_char(t_[pos_])) ++pos_;
    const std::string id = t_.substr(start, pos_ - start);
    if (pos_ < t_.size() && (t_[pos_] == '"' || t_[pos_] == '\'') && is_string_prefix(id)) {
      if (id.back() == 'R' && t_[pos_] == '"') return raw_string(start);
      return quoted(start, pos_, t_[pos_],
                    t_[pos_] == '"' ? TokenKind::string : TokenKind::character);
    }
    push(TokenKind::identifier, id, start);
  }

  void quoted(std::size_t start, std::size_t quote_pos, char quote, TokenKind kind) {
    std::size_t i = quote_pos + 1;
    while (i < t_.size() && t_[i] != quote) {
      if (is_line_end(t_[i])) break;
      i += (t_[i] == '\\' && i + 1 < t_.size()) ? 2 : 1;
    }
    if (i >= t_.size() || t_[i] != quote) {
      return error_at(start, std::string("unterminated ") +
                                 (kind == TokenKind::string ? "string" : "character") + " literal");
    }
    push(kind, t_.substr(start, i + 1 - start), start);
    pos_ = i + 1;
  }

  void raw_string(std::size_t start) {
    const std::size_t open = t_.find('(', pos_ + 1);
    if (open == std::string::npos || open - pos_ - 1 > 16) {
      return error_at(start,
                      "malformed raw string literal: expected R\"delimiter( with a "
                      "delimiter of at most 16 characters");
    }
    const std::string delimiter = t_.substr(pos_ + 1, open - pos_ - 1);
    for (char c : delimiter) {
      if (c == ' ' || c == ')' || c == '\\' || is_line_end(c) || c == '\t') {
        return error_at(start, "malformed raw string delimiter");
      }
    }
    const std::string close = ")" + delimiter + "\"";
    const std::size_t end = t_.find(close, open + 1);
    if (end == std::string::npos) return error_at(start, "unterminated raw string literal");
    push(TokenKind::string, t_.substr(start, end + close.size() - start), start);
    pos_ = end + close.size();
  }

  Spliced s_;
  const std::string& t_;
  std::size_t pos_ = 0;
  bool line_has_token_ = false;
  int current_pp_ = -1;
  int pp_count_ = 0;
  LexResult result_;
};

// --- directives -----------------------------------------------------------------------------

struct Word {
  std::string text;
  int offset = 0;  // in the directive text
};

std::vector<Word> split_words(std::string_view text) {
  std::vector<Word> words;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    if (i > start)
      words.push_back({std::string(text.substr(start, i - start)), static_cast<int>(start)});
  }
  return words;
}

bool parse_int(std::string_view s, std::int64_t& value) {
  if (s.empty() || s.size() > 12) return false;
  value = 0;
  for (char c : s) {
    if (!is_digit(c)) return false;
    value = value * 10 + (c - '0');
  }
  return true;
}

class DirectiveParser {
 public:
  explicit DirectiveParser(const DirectiveComment& d) : d_(d) {}

  ProgramError error(std::string message, int offset) const {
    // The directive text starts 3 characters after the `//`.
    return {std::move(message), d_.line, d_.column + 3 + offset};
  }

  std::optional<ProgramError> format(FormatSpec& spec, int words_offset,
                                     const std::vector<Word>& words) const {
    if (words.size() < 2) {
      return error("//@format needs a format: csr, coo, ell, sell C=.. sigma=.. or bsr R=.. C=..",
                   words_offset);
    }
    const auto format = parse_format(words[1].text);
    if (!format) {
      return error("unknown format '" + words[1].text + "': expected csr, coo, ell, sell or bsr",
                   words[1].offset);
    }
    spec = FormatSpec{};
    spec.format = *format;
    std::vector<std::string> seen;
    for (std::size_t i = 2; i < words.size(); ++i) {
      const Word& w = words[i];
      const auto eq = w.text.find('=');
      if (eq == std::string::npos) {
        return error("expected KEY=VALUE, got '" + w.text + "'", w.offset);
      }
      const std::string key = w.text.substr(0, eq);
      std::int64_t value = 0;
      if (!parse_int(std::string_view(w.text).substr(eq + 1), value)) {
        return error("'" + key + "' needs a decimal integer, got '" + w.text.substr(eq + 1) + "'",
                     w.offset + static_cast<int>(eq) + 1);
      }
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        return error("'" + key + "' given twice", w.offset);
      }
      seen.push_back(key);
      if (spec.format == Format::sell && key == "C") {
        spec.params.sell_c = static_cast<int>(std::min<std::int64_t>(value, 1 << 30));
      } else if (spec.format == Format::sell && key == "sigma") {
        spec.params.sell_sigma = value;
      } else if (spec.format == Format::bsr && key == "R") {
        spec.params.bsr_r = static_cast<int>(std::min<std::int64_t>(value, 1 << 30));
      } else if (spec.format == Format::bsr && key == "C") {
        spec.params.bsr_c = static_cast<int>(std::min<std::int64_t>(value, 1 << 30));
      } else {
        const std::string expected = spec.format == Format::sell  ? "C and sigma"
                                     : spec.format == Format::bsr ? "R and C"
                                                                  : "no parameters";
        return error(
            "format " + words[1].text + " does not take '" + key + "': it takes " + expected,
            w.offset);
      }
    }
    const auto need = [&](const char* key) {
      return std::find(seen.begin(), seen.end(), key) != seen.end();
    };
    if (spec.format == Format::sell && (!need("C") || !need("sigma"))) {
      return error("//@format sell needs C=<slice height> and sigma=<sorting window>",
                   words[1].offset);
    }
    if (spec.format == Format::bsr && (!need("R") || !need("C"))) {
      return error("//@format bsr needs R=<block rows> and C=<block columns>", words[1].offset);
    }
    if (auto problem = spec.validate()) return error("invalid format " + *problem, words[1].offset);
    return std::nullopt;
  }

  // `launch NAME key=EXPR ...`; expressions may contain blanks, so the keys are found as
  // `identifier =` (not `==`) at parenthesis depth 0 after a blank.
  std::optional<ProgramError> launch(LaunchDirective& launch,
                                     const std::vector<std::string_view>& names) const {
    const std::string& text = d_.text;
    std::size_t i = std::string_view("launch").size();
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    const std::size_t name_start = i;
    while (i < text.size() && is_ident_char(text[i])) ++i;
    if (i == name_start || !is_ident_start(text[name_start])) {
      return error("//@launch needs a kernel name first: //@launch NAME grid=EXPR block=EXPR",
                   static_cast<int>(name_start));
    }
    launch.kernel = text.substr(name_start, i - name_start);
    launch.line = d_.line;
    if (text.find('=', name_start) == first_non_blank(text, i)) {
      return error("//@launch needs a kernel name first: //@launch NAME grid=EXPR block=EXPR",
                   static_cast<int>(name_start));
    }
    if (i < text.size() && text[i] != ' ' && text[i] != '\t') {
      return error("unexpected '" + std::string(1, text[i]) + "' in the kernel name",
                   static_cast<int>(i));
    }

    struct Key {
      std::string name;
      std::size_t key_start, expr_start;
    };
    std::vector<Key> keys;
    int depth = 0;
    for (std::size_t j = i; j < text.size(); ++j) {
      const char c = text[j];
      if (c == '(') ++depth;
      if (c == ')') --depth;
      if (depth != 0 || !is_ident_start(c) ||
          (j > 0 && text[j - 1] != ' ' && text[j - 1] != '\t')) {
        continue;
      }
      std::size_t k = j;
      while (k < text.size() && is_ident_char(text[k])) ++k;
      std::size_t e = k;
      while (e < text.size() && (text[e] == ' ' || text[e] == '\t')) ++e;
      if (e < text.size() && text[e] == '=' && !(e + 1 < text.size() && text[e + 1] == '=')) {
        keys.push_back({text.substr(j, k - j), j, e + 1});
        j = e;
      }
    }
    if (keys.empty() || keys.front().key_start != first_non_blank(text, i)) {
      return error("expected grid=EXPR after the kernel name",
                   static_cast<int>(first_non_blank(text, i)));
    }
    bool have_grid = false, have_block = false, have_smem = false;
    for (std::size_t k = 0; k < keys.size(); ++k) {
      const Key& key = keys[k];
      const std::size_t end = k + 1 < keys.size() ? keys[k + 1].key_start : text.size();
      std::string_view expr_text =
          std::string_view(text).substr(key.expr_start, end - key.expr_start);
      std::size_t lead = 0;
      while (lead < expr_text.size() && (expr_text[lead] == ' ' || expr_text[lead] == '\t')) ++lead;
      while (!expr_text.empty() && (expr_text.back() == ' ' || expr_text.back() == '\t')) {
        expr_text.remove_suffix(1);
      }
      expr_text.remove_prefix(std::min(lead, expr_text.size()));
      const int expr_offset = static_cast<int>(key.expr_start + lead);
      LaunchExpr* target = nullptr;
      int* column = nullptr;
      bool* have = nullptr;
      if (key.name == "grid") {
        target = &launch.grid, column = &launch.grid_column, have = &have_grid;
      } else if (key.name == "block") {
        target = &launch.block, column = &launch.block_column, have = &have_block;
      } else if (key.name == "smem") {
        target = &launch.smem, column = &launch.smem_column, have = &have_smem;
      } else {
        return error("unknown launch parameter '" + key.name + "': expected grid, block or smem",
                     static_cast<int>(key.key_start));
      }
      if (*have) return error("'" + key.name + "' given twice", static_cast<int>(key.key_start));
      *have = true;
      const LaunchExprParse parsed = LaunchExpr::parse(expr_text, &names);
      if (!parsed.ok()) {
        return error(key.name + "=" + std::string(expr_text) + ": " + parsed.error.message,
                     expr_offset + parsed.error.column - 1);
      }
      *target = *parsed.expr;
      *column = d_.column + 3 + expr_offset;
    }
    if (!have_grid) return error("//@launch " + launch.kernel + " needs grid=EXPR", 0);
    if (!have_block) return error("//@launch " + launch.kernel + " needs block=EXPR", 0);
    return std::nullopt;
  }

 private:
  static std::size_t first_non_blank(const std::string& text, std::size_t from) {
    while (from < text.size() && (text[from] == ' ' || text[from] == '\t')) ++from;
    return from;
  }

  const DirectiveComment& d_;
};

}  // namespace

LexResult lex(std::string_view text) { return Lexer(text).run(); }

std::span<const std::string_view> punctuators() { return kPunctuators; }

std::string fold_digraph(std::string_view p) {
  if (p == "%:%:") return "##";
  if (p == "%:") return "#";
  if (p == "<:") return "[";
  if (p == ":>") return "]";
  if (p == "<%") return "{";
  if (p == "%>") return "}";
  return std::string(p);
}

std::vector<std::string> Program::kernel_names() const {
  std::vector<std::string> names;
  for (const LaunchDirective& l : launches) {
    if (std::find(names.begin(), names.end(), l.kernel) == names.end()) names.push_back(l.kernel);
  }
  return names;
}

ParseResult parse_program(std::string_view text) {
  ParseResult result;
  const LexResult lexed = lex(text);
  if (!lexed.ok()) {
    result.error = {lexed.error->message, lexed.error->line, lexed.error->column};
    return result;
  }
  Program program;
  program.text = std::string(text);
  bool have_format = false;
  std::vector<const DirectiveComment*> launches;
  for (const DirectiveComment& d : lexed.directives) {
    DirectiveParser parser(d);
    if (!d.alone) {
      result.error = parser.error("a //@ directive must be on a line of its own", -3);
      return result;
    }
    const std::vector<Word> words = split_words(d.text);
    if (words.empty() || words[0].offset != 0) {
      result.error =
          parser.error("empty or malformed directive: expected //@format or //@launch", 0);
      return result;
    }
    if (words[0].text == "format") {
      if (have_format) {
        result.error =
            parser.error("a second //@format (the first is on line " +
                             std::to_string(program.format_line) + "): a program has exactly one",
                         0);
        return result;
      }
      if (auto e = parser.format(program.format, 0, words)) {
        result.error = *e;
        return result;
      }
      have_format = true;
      program.format_line = d.line;
    } else if (words[0].text == "launch") {
      launches.push_back(&d);
    } else {
      result.error = parser.error(
          "unknown directive //@" + words[0].text + ": expected //@format or //@launch", 0);
      return result;
    }
  }
  if (!have_format) {
    result.error = {
        "no //@format directive: a program names its storage format, e.g. //@format csr", 1, 1};
    return result;
  }
  if (launches.empty()) {
    result.error = {
        "no //@launch directive: a program launches at least one kernel, e.g. "
        "//@launch spmv grid=ceil_div(M, 128) block=128",
        1, 1};
    return result;
  }
  if (launches.size() > static_cast<std::size_t>(kMaxLaunches)) {
    const DirectiveComment& extra = *launches[kMaxLaunches];
    result.error = {"more than " + std::to_string(kMaxLaunches) + " //@launch directives",
                    extra.line, extra.column};
    return result;
  }
  const std::vector<std::string_view> names = constant_names(program.format.format);
  for (const DirectiveComment* d : launches) {
    LaunchDirective launch;
    if (auto e = DirectiveParser(*d).launch(launch, names)) {
      result.error = *e;
      return result;
    }
    program.launches.push_back(std::move(launch));
  }
  result.program = std::move(program);
  return result;
}

}  // namespace sparserl::reward
