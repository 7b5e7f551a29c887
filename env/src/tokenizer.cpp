// Encoding reads the program with reward's lexer and directive parser and maps every token to the
// vocabulary; decoding is a small pretty-printer whose one hard duty is that its output lexes back
// to the same tokens (a space wherever two tokens would otherwise run into one, `#define F (a)`
// kept apart from `#define F(a)`), so that encode(decode(t)) == t and the compiler sees the same
// program.
#include "sparserl/env/tokenizer.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "sparserl/reward/program.hpp"

namespace sparserl::env {
namespace {

using reward::Token;
using reward::TokenKind;

std::string position(int line, int column) {
  return std::to_string(line) + ":" + std::to_string(column);
}

// Tokens after which an identifier is being declared: `int x`, `value_t* __restrict__ y`.
bool is_type_word(const Vocabulary& v, const Token& t) {
  if (t.kind != TokenKind::identifier) return false;
  static const std::unordered_set<std::string> kTypeKeywords = {
      "int",          "float",        "double",       "char",       "void",       "long",
      "short",        "unsigned",     "signed",       "bool",       "auto",       "const",
      "volatile",     "__restrict__", "struct",       "class",      "enum",       "union",
      "typename",     "__shared__",   "__constant__", "__device__", "__global__", "__forceinline__",
      "__noinline__", "inline",       "static",       "extern",     "register",   "constexpr",
      "define"};
  if (kTypeKeywords.count(t.text) != 0) return true;
  if (t.text == "value_t") return true;
  if (v.find(TokenClass::keyword, t.text) || v.find(TokenClass::constant, t.text)) return false;
  // A builtin type (size_t, float4, ...) or a program's own type name.
  return true;
}

class Encoder {
 public:
  Encoder(const Vocabulary& v, bool collect_only) : v_(v), collect_only_(collect_only) {}

  EncodedProgram run(std::string_view text) {
    const reward::ParseResult parsed = reward::parse_program(text);
    if (!parsed.ok()) {
      throw TokenizeError("directives at " + position(parsed.error.line, parsed.error.column) +
                              ": " + parsed.error.message,
                          "", parsed.error.line, parsed.error.column);
    }
    const reward::LexResult lexed = reward::lex(text);
    if (!lexed.ok()) {
      throw TokenizeError("lexical error at " + position(lexed.error->line, lexed.error->column) +
                              ": " + lexed.error->message,
                          "", lexed.error->line, lexed.error->column);
    }
    const reward::Program& program = *parsed.program;
    directives(program);
    code(lexed.tokens);
    out_.tokens.push_back(v_.eos());
    check_calls();
    return std::move(out_);
  }

  std::vector<std::string> undeclared() const { return undeclared_; }

 private:
  struct LocalUse {
    bool declared = false;
    int call_line = 0, call_column = 0;  // first call, 0 when never called
  };

  void emit(TokenId id) {
    if (!collect_only_) out_.tokens.push_back(id);
  }
  void emit(TokenClass cls, std::string_view text) { emit(v_.id(cls, text)); }

  TokenId local(const std::string& name, int line, int column) {
    auto it = local_of_.find(name);
    if (it == local_of_.end()) {
      const int index = static_cast<int>(out_.locals.size());
      if (!collect_only_ && index >= v_.locals()) {
        throw TokenizeError("identifier '" + name + "' at " + position(line, column) +
                                " would be local number " + std::to_string(index + 1) +
                                ", but vocabulary " + v_.name() + " has " +
                                std::to_string(v_.locals()) + " locals (v0..v" +
                                std::to_string(v_.locals() - 1) + "): out of vocabulary",
                            name, line, column);
      }
      it = local_of_.emplace(name, index).first;
      out_.locals.push_back(name);
      uses_.emplace_back();
    }
    return collect_only_ ? 0 : v_.local(it->second);
  }

  void number(const std::string& text, int line, int column) {
    emit(v_.num());
    for (std::size_t i = 0; i < text.size(); ++i) {
      const auto id = v_.find(TokenClass::digit, std::string_view(text).substr(i, 1));
      if (!id) {
        throw TokenizeError("number '" + text + "' at " + position(line, column) +
                                ": its character '" + text.substr(i, 1) +
                                "' is not in vocabulary " + v_.name() + ": out of vocabulary",
                            text, line, column);
      }
      emit(*id);
    }
  }

  void directives(const reward::Program& program) {
    const reward::FormatSpec& f = program.format;
    emit(TokenClass::directive, "<format>");
    emit(TokenClass::directive, reward::to_string(f.format));
    if (f.format == reward::Format::sell) {
      emit(TokenClass::directive, "C=");
      number(std::to_string(f.params.sell_c), program.format_line, 1);
      emit(TokenClass::directive, "sigma=");
      number(std::to_string(f.params.sell_sigma), program.format_line, 1);
    } else if (f.format == reward::Format::bsr) {
      emit(TokenClass::directive, "R=");
      number(std::to_string(f.params.bsr_r), program.format_line, 1);
      emit(TokenClass::directive, "C=");
      number(std::to_string(f.params.bsr_c), program.format_line, 1);
    }
    emit(v_.eol());
    for (const reward::LaunchDirective& l : program.launches) {
      emit(TokenClass::directive, "<launch>");
      emit(local(l.kernel, l.line, 1));
      uses_[static_cast<std::size_t>(local_of_.at(l.kernel))].declared = true;
      emit(TokenClass::directive, "grid=");
      expression(l.grid.text(), l.line, l.grid_column);
      emit(TokenClass::directive, "block=");
      expression(l.block.text(), l.line, l.block_column);
      if (l.smem_column != 0) {
        emit(TokenClass::directive, "smem=");
        expression(l.smem.text(), l.line, l.smem_column);
      }
      emit(v_.eol());
    }
  }

  void expression(const std::string& text, int line, int column) {
    const reward::LexResult lexed = reward::lex(text);
    for (const Token& t : lexed.tokens) {
      const int col = column + t.column - 1;
      std::optional<TokenId> id;
      if (t.kind == TokenKind::number) {
        number(t.text, line, col);
        continue;
      }
      if (t.kind == TokenKind::identifier) {
        id = v_.find(TokenClass::constant, t.text);
        if (!id) id = v_.find(TokenClass::builtin, t.text);
      } else if (t.kind == TokenKind::punct) {
        if (t.text == "--") {
          // Launch expressions have no decrement: `--x` is two unary minuses (as LaunchExpr reads
          // it).
          emit(TokenClass::punct, "-");
          emit(TokenClass::punct, "-");
          continue;
        }
        id = v_.find(TokenClass::punct, t.text);
      }
      if (!id) {
        throw TokenizeError("'" + t.text + "' at " + position(line, col) +
                                " in a launch expression is not in vocabulary " + v_.name(),
                            t.text, line, col);
      }
      emit(*id);
    }
  }

  static bool is_punct(const Token& t, std::string_view text) {
    return t.kind == TokenKind::punct && t.text == text;
  }

  // `#define NAME(` with the parenthesis glued to the name: a function-like macro.
  static bool function_macro_paren(const std::vector<Token>& toks, std::size_t i) {
    if (i < 3 || !is_punct(toks[i], "(")) return false;
    const Token& name = toks[i - 1];
    const Token& def = toks[i - 2];
    const Token& hash = toks[i - 3];
    return name.kind == TokenKind::identifier && def.kind == TokenKind::identifier &&
           def.text == "define" && is_punct(hash, "#") && hash.line_start && hash.pp_line >= 0 &&
           toks[i].pp_line == hash.pp_line && name.pp_line == hash.pp_line &&
           toks[i].line == name.line &&
           toks[i].column == name.column + static_cast<int>(name.text.size());
  }

  bool declares(const std::vector<Token>& toks, std::size_t i) const {
    if (in_macro_params_) return true;
    if (i == 0) return false;
    const Token& p = toks[i - 1];
    if (is_type_word(v_, p)) return true;
    if ((is_punct(p, "*") || is_punct(p, "&")) && i >= 2) {
      std::size_t j = i - 2;
      while (j > 0 && (is_punct(toks[j], "*") || is_punct(toks[j], "&"))) --j;
      return is_type_word(v_, toks[j]);
    }
    return false;
  }

  void code(const std::vector<Token>& toks) {
    int pp = -1;
    for (std::size_t i = 0; i < toks.size(); ++i) {
      const Token& t = toks[i];
      if (t.pp_line != pp) {
        if (pp >= 0) emit(v_.eol());
        pp = t.pp_line;
        in_macro_params_ = false;
      }
      switch (t.kind) {
        case TokenKind::identifier: {
          const bool after_member_access =
              i > 0 && (is_punct(toks[i - 1], ".") || is_punct(toks[i - 1], "->"));
          std::optional<TokenId> id;
          if (after_member_access) id = v_.find(TokenClass::member, t.text);
          if (!id) id = v_.find(TokenClass::keyword, t.text);
          if (!id) id = v_.find(TokenClass::constant, t.text);
          if (!id) id = v_.find(TokenClass::builtin, t.text);
          if (id) {
            emit(*id);
            break;
          }
          emit(local(t.text, t.line, t.column));
          LocalUse& use = uses_[static_cast<std::size_t>(local_of_.at(t.text))];
          if (declares(toks, i)) {
            use.declared = true;
          } else if (i + 1 < toks.size() && is_punct(toks[i + 1], "(") && use.call_line == 0) {
            use.call_line = t.line;
            use.call_column = t.column;
          }
          break;
        }
        case TokenKind::number:
          number(t.text, t.line, t.column);
          break;
        case TokenKind::string: {
          const auto id = v_.find(TokenClass::literal, t.text);
          if (!id) {
            throw TokenizeError("string literal " + t.text + " at " + position(t.line, t.column) +
                                    " is not in vocabulary " + v_.name() +
                                    " (only \"C\" of extern \"C\" is): out of vocabulary",
                                t.text, t.line, t.column);
          }
          emit(*id);
          break;
        }
        case TokenKind::character:
          throw TokenizeError("character literal " + t.text + " at " + position(t.line, t.column) +
                                  " is not in vocabulary " + v_.name() + ": out of vocabulary",
                              t.text, t.line, t.column);
        case TokenKind::other:
          throw TokenizeError("character '" + t.text + "' at " + position(t.line, t.column) +
                                  " starts no token of vocabulary " + v_.name(),
                              t.text, t.line, t.column);
        case TokenKind::punct: {
          if (function_macro_paren(toks, i)) {
            emit(v_.macro_open());
            in_macro_params_ = true;
            break;
          }
          if (in_macro_params_ && t.text == ")") in_macro_params_ = false;
          const auto id = v_.find(TokenClass::punct, t.text);
          if (!id) {
            throw TokenizeError("'" + t.text + "' at " + position(t.line, t.column) +
                                    " is not in vocabulary " + v_.name() + ": out of vocabulary",
                                t.text, t.line, t.column);
          }
          emit(*id);
          break;
        }
      }
    }
    if (pp >= 0) emit(v_.eol());
  }

  void check_calls() {
    for (std::size_t i = 0; i < uses_.size(); ++i) {
      const LocalUse& use = uses_[i];
      if (use.declared || use.call_line == 0) continue;
      if (collect_only_) {
        undeclared_.push_back(out_.locals[i]);
        continue;
      }
      throw TokenizeError("'" + out_.locals[i] + "' at " +
                              position(use.call_line, use.call_column) +
                              " is called but is neither a word of vocabulary " + v_.name() +
                              " nor declared in the program: out of vocabulary",
                          out_.locals[i], use.call_line, use.call_column);
    }
  }

  const Vocabulary& v_;
  bool collect_only_;
  EncodedProgram out_;
  std::unordered_map<std::string, int> local_of_;
  std::vector<LocalUse> uses_;
  std::vector<std::string> undeclared_;
  bool in_macro_params_ = false;
};

// ---- decoding -----------------------------------------------------------------------------------

// True when `a` immediately followed by `b` would not lex as the two tokens (`+` `+` is `++`, `1`
// `.` is the number `1.`, `/` `/` opens a comment).
bool would_merge(const std::string& a, const std::string& b) {
  const reward::LexResult lexed = reward::lex(a + b);
  return !lexed.ok() || lexed.tokens.size() != 2 || lexed.tokens[0].text != a ||
         lexed.tokens[1].text != b || !lexed.directives.empty();
}

class Decoder {
 public:
  explicit Decoder(const Vocabulary& v) : v_(v) {}

  std::string run(std::span<const TokenId> ids) {
    // Tokens are rendered in two streams: directive lines first, then code, so that the program
    // always opens with its directives whatever order an unmasked policy emitted them in.
    for (TokenId id : ids) {
      if (id < 0 || static_cast<std::size_t>(id) >= v_.size()) continue;
      if (id == v_.eos()) break;
      if (id == v_.pad() || id == v_.bos()) continue;
      const TokenSpec& t = v_.token(id);
      if (in_directive_) {
        if (id == v_.eol()) {
          end_directive();
          continue;
        }
        if (t.cls == TokenClass::directive && (t.text == "<format>" || t.text == "<launch>")) {
          end_directive();
        } else {
          directive_token(t);
          continue;
        }
      }
      if (t.cls == TokenClass::directive && (t.text == "<format>" || t.text == "<launch>")) {
        end_number();
        in_directive_ = true;
        directive_ = t.text == "<format>" ? "//@format" : "//@launch";
        expect_operand_ = true;
        continue;
      }
      code_token(id, t);
    }
    end_directive();
    end_number();
    std::string text = directives_text_;
    if (!code_.empty()) {
      if (!text.empty()) text += "\n";
      text += code_;
      if (text.back() != '\n') text += "\n";
    }
    // No trailing blank lines.
    while (text.size() >= 2 && text[text.size() - 1] == '\n' && text[text.size() - 2] == '\n') {
      text.pop_back();
    }
    return text;
  }

 private:
  // --- directives ---
  void directive_token(const TokenSpec& t) {
    if (t.cls == TokenClass::special && t.text == "<num>") {
      directive_ += (expect_operand_ || directive_.back() == '=' || directive_.back() == '(' ||
                     directive_.back() == ' ')
                        ? ""
                        : " ";
      in_directive_number_ = true;
      expect_operand_ = false;
      return;
    }
    if (t.cls == TokenClass::digit && in_directive_number_) {
      directive_ += t.text;
      return;
    }
    in_directive_number_ = false;
    if (t.cls == TokenClass::directive) {  // a format name or a key
      directive_ += " " + t.text;
      expect_operand_ = t.text.back() == '=';
      return;
    }
    if (t.cls == TokenClass::punct) {
      const std::string& p = t.text;
      if (p == "(") {
        directive_ += "(";
        expect_operand_ = true;
      } else if (p == ")") {
        directive_ += ")";
        expect_operand_ = false;
      } else if (p == ",") {
        directive_ += ", ";
        expect_operand_ = true;
      } else if (p == "-" && expect_operand_) {
        directive_ += "-";
      } else {
        directive_ += " " + p + " ";
        expect_operand_ = true;
      }
      return;
    }
    // A name (constant, function, kernel) or anything else an unmasked policy put here.
    const char last = directive_.back();
    if (!(last == '=' || last == '(' || last == ' ' || (last == '-' && expect_operand_))) {
      directive_ += " ";
    }
    directive_ += t.text;
    expect_operand_ = false;
  }

  void end_directive() {
    if (!in_directive_) return;
    while (!directive_.empty() && directive_.back() == ' ') directive_.pop_back();
    directives_text_ += directive_ + "\n";
    directive_.clear();
    in_directive_ = false;
    in_directive_number_ = false;
  }

  // --- code ---
  enum class Piece { word, open, close, unary, binary, pointer, access, other };

  static bool is_control_keyword(const std::string& s) {
    return s == "if" || s == "for" || s == "while" || s == "switch" || s == "return" ||
           s == "case" || s == "do" || s == "else" || s == "elif";
  }
  static bool is_operand_keyword(const std::string& s) {
    return s == "true" || s == "false" || s == "nullptr" || s == "this";
  }
  static bool is_type_keyword(const std::string& s) {
    return s == "int" || s == "float" || s == "double" || s == "char" || s == "void" ||
           s == "long" || s == "short" || s == "unsigned" || s == "signed" || s == "bool" ||
           s == "auto" || s == "value_t" || s == "size_t";
  }

  bool prev_is_operand() const {
    if (prev_piece_ == Piece::close) return true;
    if (prev_piece_ != Piece::word) return false;
    if (prev_cls_ == TokenClass::keyword) return is_operand_keyword(prev_text_);
    return true;
  }

  void newline() {
    while (!code_.empty() && code_.back() == ' ') code_.pop_back();
    if (!code_.empty() && code_.back() != '\n') code_ += "\n";
    line_start_ = true;
  }

  void put(const std::string& text, bool space_before) {
    if (force_space_) {
      space_before = true;  // the body of a function-like macro after its parameter list
      force_space_ = false;
    }
    if (line_start_) {
      code_.append(static_cast<std::size_t>(2 * std::max(indent_, 0)), ' ');
      line_start_ = false;
    } else if (space_before || (!last_piece_text_.empty() && would_merge(last_piece_text_, text))) {
      code_ += " ";
    }
    code_ += text;
    last_piece_text_ = text;
  }

  void end_number() {
    if (!in_number_) return;
    in_number_ = false;
    put(number_, space_before_number_);
    number_.clear();
    finish_piece(Piece::word, TokenClass::digit, number_text_placeholder_);
  }

  void finish_piece(Piece piece, TokenClass cls, const std::string& text) {
    prev_piece_ = piece;
    prev_cls_ = cls;
    prev_text_ = text;
  }

  void code_token(TokenId id, const TokenSpec& t) {
    if (in_number_) {
      if (t.cls == TokenClass::digit) {
        number_ += t.text;
        return;
      }
      end_number();
    }
    if (pending_newline_) {
      pending_newline_ = false;
      const bool joins =
          t.cls == TokenClass::punct && (t.text == ";" || t.text == "," || t.text == ")");
      const bool continues =
          t.cls == TokenClass::keyword && (t.text == "else" || t.text == "while");
      if (!joins && !continues) {
        newline();
        if (blank_line_after_) code_ += "\n";
      }
      blank_line_after_ = false;
    }
    if (id == v_.num()) {
      in_number_ = true;
      number_.clear();
      space_before_number_ = space_before_word();
      return;
    }
    if (id == v_.eol()) {
      in_macro_params_ = false;
      force_space_ = false;
      if (in_pp_) {
        in_pp_ = false;
        newline();
        finish_piece(Piece::other, TokenClass::special, "");
        last_piece_text_.clear();
      }
      return;
    }
    if (id == v_.macro_open()) {
      pp_after_macro_name_ = false;
      in_macro_params_ = true;
      put("(", false);
      finish_piece(Piece::open, TokenClass::punct, "(");
      ++paren_;
      return;
    }
    if (t.cls == TokenClass::special || t.cls == TokenClass::directive) {
      // Out of place (an unmasked policy): keep it visible as text; the compiler will refuse it.
      put(t.text, true);
      finish_piece(Piece::other, t.cls, t.text);
      return;
    }
    if (t.cls == TokenClass::punct) return punct(t.text);
    // A word.
    put(t.text, space_before_word());
    if (pp_expect_macro_name_) {
      pp_expect_macro_name_ = false;
      pp_after_macro_name_ = true;
      finish_piece(Piece::word, t.cls, t.text);
      return;
    }
    if (in_pp_ && prev_cls_ == TokenClass::punct && prev_text_ == "#" && t.text == "define") {
      pp_expect_macro_name_ = true;
    }
    if (cast_pending_ == 0 &&
        (t.text == "static_cast" || t.text == "reinterpret_cast" || t.text == "const_cast")) {
      cast_pending_ = 1;
    }
    pp_after_macro_name_ = false;
    finish_piece(Piece::word, t.cls, t.text);
  }

  bool space_before_word() const {
    if (line_start_) return false;
    switch (prev_piece_) {
      case Piece::open:
      case Piece::unary:
      case Piece::access:
        return false;
      case Piece::other:
        return !(prev_cls_ == TokenClass::punct && prev_text_ == "#") && !last_piece_text_.empty();
      default:
        return true;
    }
  }

  void punct(const std::string& p) {
    const bool after_macro_name = pp_after_macro_name_;
    pp_after_macro_name_ = false;
    if (p == "#") {
      if (!in_pp_) {
        newline();
        in_pp_ = true;
      }
      put("#", !line_start_);
      finish_piece(Piece::other, TokenClass::punct, "#");
      return;
    }
    if (p == "{") {
      put("{", !line_start_ && prev_piece_ != Piece::open);
      ++indent_;
      finish_piece(Piece::other, TokenClass::punct, "{");
      if (!in_pp_) newline();
      return;
    }
    if (p == "}") {
      --indent_;
      if (!in_pp_) newline();
      put("}", !line_start_);
      finish_piece(Piece::close, TokenClass::punct, "}");
      if (!in_pp_) {
        pending_newline_ = true;
        blank_line_after_ = indent_ <= 0;
      }
      return;
    }
    if (p == ";") {
      put(";", false);
      finish_piece(Piece::other, TokenClass::punct, ";");
      if (paren_ <= 0 && !in_pp_) newline();
      return;
    }
    if (p == ",") {
      put(",", false);
      finish_piece(Piece::other, TokenClass::punct, ",");
      return;
    }
    if (p == "(" || p == "[") {
      bool space = !line_start_;
      if (after_macro_name) {
        space = true;  // `#define F (a)`: object-like, the blank is what says so
      } else if (prev_piece_ == Piece::word) {
        space = prev_cls_ == TokenClass::keyword && is_control_keyword(prev_text_);
      } else if (prev_piece_ == Piece::close || prev_piece_ == Piece::open ||
                 prev_piece_ == Piece::unary || prev_piece_ == Piece::access) {
        space = false;
      } else if (prev_piece_ == Piece::other && prev_text_ == ">" && cast_pending_ == 0) {
        space = false;  // static_cast<int>(x)
      }
      put(p, space);
      finish_piece(Piece::open, TokenClass::punct, p);
      ++paren_;
      return;
    }
    if (p == ")" || p == "]") {
      put(p, false);
      finish_piece(Piece::close, TokenClass::punct, p);
      --paren_;
      if (in_macro_params_ && p == ")") {
        in_macro_params_ = false;
        force_space_ = true;
      }
      return;
    }
    if (p == "." || p == "->" || p == "::") {
      put(p, false);
      finish_piece(Piece::access, TokenClass::punct, p);
      return;
    }
    if (cast_pending_ > 0) {
      if (p == "<" && cast_pending_ == 1 && prev_piece_ == Piece::word) {
        put("<", false);
        cast_pending_ = 2;
        finish_piece(Piece::open, TokenClass::punct, "<");
        return;
      }
      if (p == ">" && cast_pending_ == 2) {
        put(">", false);
        cast_pending_ = 0;
        finish_piece(Piece::other, TokenClass::punct, ">");
        return;
      }
      if (cast_pending_ == 1) cast_pending_ = 0;
    }
    if (p == "++" || p == "--") {
      if (prev_is_operand()) {
        put(p, false);  // postfix
        finish_piece(Piece::close, TokenClass::punct, p);
      } else {
        put(p, space_before_word());
        finish_piece(Piece::unary, TokenClass::punct, p);
      }
      return;
    }
    const bool unary_capable = p == "-" || p == "+" || p == "*" || p == "&" || p == "!" || p == "~";
    if ((p == "*" || p == "&") && prev_piece_ == Piece::word &&
        (is_type_keyword(prev_text_) || prev_cls_ == TokenClass::constant)) {
      if (prev_cls_ != TokenClass::constant || prev_text_ == "value_t") {
        put(p, false);  // a declarator: `const int* row_ptr`
        finish_piece(Piece::pointer, TokenClass::punct, p);
        return;
      }
    }
    if (prev_piece_ == Piece::pointer && (p == "*" || p == "&")) {
      put(p, false);
      finish_piece(Piece::pointer, TokenClass::punct, p);
      return;
    }
    if (unary_capable && (p == "!" || p == "~" || !prev_is_operand())) {
      put(p, space_before_word());
      finish_piece(Piece::unary, TokenClass::punct, p);
      return;
    }
    put(p, !line_start_);
    finish_piece(Piece::binary, TokenClass::punct, p);
    // A binary operator is followed by a blank: the next word gets one through space_before_word.
  }

  const Vocabulary& v_;
  std::string directives_text_, directive_, code_;
  bool in_directive_ = false, in_directive_number_ = false, expect_operand_ = false;

  bool in_number_ = false, space_before_number_ = false;
  std::string number_;
  const std::string number_text_placeholder_ = "0";

  bool in_pp_ = false, pp_expect_macro_name_ = false, pp_after_macro_name_ = false;
  bool in_macro_params_ = false, force_space_ = false;
  bool line_start_ = true, pending_newline_ = false, blank_line_after_ = false;
  int indent_ = 0, paren_ = 0, cast_pending_ = 0;
  Piece prev_piece_ = Piece::other;
  TokenClass prev_cls_ = TokenClass::special;
  std::string prev_text_, last_piece_text_;
};

}  // namespace

Tokenizer::Tokenizer(std::shared_ptr<const Vocabulary> vocabulary)
    : vocabulary_(std::move(vocabulary)) {
  if (!vocabulary_) throw std::invalid_argument("Tokenizer needs a vocabulary");
}

Tokenizer::Tokenizer()
    : vocabulary_(
          std::shared_ptr<const Vocabulary>(&Vocabulary::standard(), [](const Vocabulary*) {})) {}

EncodedProgram Tokenizer::encode(std::string_view program) const {
  return Encoder(*vocabulary_, false).run(program);
}

std::vector<std::string> Tokenizer::undeclared_calls(std::string_view program) const {
  Encoder encoder(*vocabulary_, true);
  encoder.run(program);
  return encoder.undeclared();
}

std::string Tokenizer::decode(std::span<const TokenId> tokens) const {
  return Decoder(*vocabulary_).run(tokens);
}

}  // namespace sparserl::env
