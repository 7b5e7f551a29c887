// The grammar mask's tables (bpe_grammar_internal.hpp): the closed vocabulary's identifier
// spellings by role, in the order encode() looks them up (a member after `.` / `->`, then a
// keyword, a prelude constant, a builtin; in a launch expression a constant, then a builtin), its
// digits and punctuators; the program's names; and the digests that key the mask cache.
#include <algorithm>
#include <cstring>

#include "bpe_grammar_internal.hpp"
#include "sparserl/reward/abi.hpp"
#include "sparserl/reward/program.hpp"

namespace sparserl::env::bpe_grammar {

void Words::add(std::string text, TokenId id) { list_.emplace_back(std::move(text), id); }

void Words::sort() {
  std::stable_sort(list_.begin(), list_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  list_.erase(std::unique(list_.begin(), list_.end(),
                          [](const auto& a, const auto& b) { return a.first == b.first; }),
              list_.end());
  index_.clear();
  for (const auto& [text, id] : list_) index_.emplace(text, id);
}

std::optional<TokenId> Words::find(std::string_view text) const {
  const auto it = index_.find(text);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

std::pair<std::size_t, std::size_t> Words::range(std::string_view prefix) const {
  const auto first = std::lower_bound(
      list_.begin(), list_.end(), prefix,
      [](const std::pair<std::string, TokenId>& e, std::string_view t) { return e.first < t; });
  auto last = first;
  while (last != list_.end() && last->first.compare(0, prefix.size(), prefix) == 0) ++last;
  return {static_cast<std::size_t>(first - list_.begin()),
          static_cast<std::size_t>(last - list_.begin())};
}

void Names::add(const std::string& name) {
  sorted.add(name, static_cast<TokenId>(by_local.size()));
  sorted.sort();
  by_local.push_back(name);
}

namespace {

// Punctuators by spelling: a bit per spelling of one or two characters (a table of 128 x 128),
// the few longer ones listed; each as a whole (`full`) and as a proper prefix of one (`grows`).
struct PunctSets {
  std::vector<bool> full = std::vector<bool>(128 * 129), grows = std::vector<bool>(128 * 129);
  std::vector<std::string_view> full_long, grows_long;
  static std::size_t index(std::string_view s) {
    const auto c0 = static_cast<std::size_t>(static_cast<unsigned char>(s[0]) & 0x7F);
    return s.size() == 1 ? c0 : 128 + c0 * 128 + (static_cast<unsigned char>(s[1]) & 0x7F);
  }
  void mark(std::string_view s, bool whole) {
    if (s.size() <= 2) {
      (whole ? full : grows)[index(s)] = true;
    } else {
      (whole ? full_long : grows_long).push_back(s);
    }
  }
  [[nodiscard]] bool has(std::string_view s, bool whole) const {
    if (s.empty() || static_cast<unsigned char>(s[0]) >= 0x80) return false;
    if (s.size() <= 2) return (whole ? full : grows)[index(s)];
    const auto& list = whole ? full_long : grows_long;
    return std::find(list.begin(), list.end(), s) != list.end();
  }
  PunctSets() {
    for (std::string_view p : reward::punctuators()) {
      mark(p, true);
      for (std::size_t n = 1; n < p.size(); ++n) mark(p.substr(0, n), false);
    }
  }
};
const PunctSets& punct_sets() {
  static const PunctSets sets;
  return sets;
}

}  // namespace

bool Grammar::punct_grows(std::string_view buffer) const { return punct_sets().has(buffer, false); }
bool Grammar::is_punct(std::string_view text) const { return punct_sets().has(text, true); }

Grammar::Grammar(std::shared_ptr<const Vocabulary> v)
    : vocabulary(std::move(v)), tables(std::make_shared<const Tables>(*vocabulary)) {
  digit.fill(-1);
  const auto all_of = [&](TokenClass cls, const auto& take) {
    for (std::size_t i = 0; i < vocabulary->size(); ++i) {
      const TokenSpec& t = vocabulary->token(static_cast<TokenId>(i));
      if (t.cls == cls) take(t.text, static_cast<TokenId>(i));
    }
  };
  for (TokenClass cls :
       {TokenClass::member, TokenClass::keyword, TokenClass::constant, TokenClass::builtin}) {
    all_of(cls, [&](const std::string& text, TokenId id) {
      field_words.add(text, id);
      if (cls != TokenClass::member) code_words.add(text, id);
      if (cls == TokenClass::constant || cls == TokenClass::builtin) expr_words.add(text, id);
    });
  }
  all_of(TokenClass::directive, [&](const std::string& text, TokenId id) {
    if (reward::parse_format(text)) format_names.add(text, id);
    if (text == "C=" || text == "sigma=" || text == "R=") {
      format_keys.add(text.substr(0, text.size() - 1), id);
    }
    if (text == "grid=" || text == "block=" || text == "smem=") {
      launch_keys.add(text.substr(0, text.size() - 1), id);
    }
    if (text == "<format>") format = id;
    if (text == "<launch>") launch = id;
  });
  all_of(TokenClass::digit, [&](const std::string& text, TokenId id) {
    digit[static_cast<unsigned char>(text[0]) & 0x7F] = id;
  });
  all_of(TokenClass::punct, [&](const std::string& text, TokenId id) { punct.emplace(text, id); });
  for (Words* words :
       {&code_words, &field_words, &expr_words, &format_names, &format_keys, &launch_keys}) {
    words->sort();
  }
  for (std::string_view p : reward::punctuators()) {
    punct_spellings.emplace_back(p);
    punct_by_first[static_cast<unsigned char>(p[0]) & 0x7F].push_back(p);
  }
  linkage = vocabulary->id(TokenClass::literal, "\"C\"");
  minus = vocabulary->id(TokenClass::punct, "-");
  eol = vocabulary->eol();
  num = vocabulary->num();
  eos = vocabulary->eos();
  macro_open = vocabulary->macro_open();
}

namespace {

struct Fnv {
  std::uint64_t h = 14695981039346656037ull;
  void bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) {
      h ^= b[i];
      h *= 1099511628211ull;
    }
  }
  template <class T>
  void add(const T& v) {
    bytes(&v, sizeof v);
  }
};

}  // namespace

std::uint64_t digest(const State& s) {
  // Every field but the token count, one by one (padding bytes are not the state's). A new field
  // of State must be added here: the size check below is the reminder.
  static_assert(sizeof(State) == 984, "ActionMask::State changed: update bpe_grammar::digest");
  Fnv f;
  f.add(s.phase), f.add(s.format), f.add(s.key), f.add(s.launches), f.add(s.digits);
  f.add(s.value), f.add(s.es), f.add(s.which), f.add(s.frames), f.add(s.nframes), f.add(s.unary);
  f.add(s.chars), f.add(s.sums), f.add(s.terms), f.add(s.firsts), f.add(s.evals), f.add(s.negate);
  f.add(s.divides_by_zero), f.add(s.function), f.add(s.stack), f.add(s.depth), f.add(s.pp_stack),
      f.add(s.pp_depth);
  f.add(s.pp), f.add(s.if_depth), f.add(s.else_seen), f.add(s.if_base), f.add(s.last), f.add(s.num);
  f.add(s.num_len), f.add(s.num_u);
  f.add(s.num_l), f.add(s.num_lcase), f.add(s.locals_used), f.add(s.decl), f.add(s.top),
      f.add(s.decl_pos);
  f.add(s.decl_names), f.add(s.decl_named), f.add(s.bounds_used), f.add(s.bounds_commas), f.add(s.launched);
  f.add(s.defined), f.add(s.declarator), f.add(s.list_depth), f.add(s.scope), f.add(s.braces);
  f.add(s.soft_depth), f.add(s.soft_closed), f.add(s.ctx), f.add(s.run), f.add(s.line_ctx);
  f.add(s.line_last), f.add(s.pointers), f.add(s.consts), f.add(s.decl_const),
      f.add(s.template_names);
  f.add(s.last_declared), f.add(s.operand_const), f.add(s.deref_cast), f.add(s.loop_braces), f.add(s.loop_pending);
  f.add(s.if_braces), f.add(s.if_pending), f.add(s.else_ok);
  f.add(s.while_cond), f.add(s.done), f.add(s.local_types), f.add(s.decl_type);
  f.add(s.floating_call), f.add(s.floating_due), f.add(s.floating_args), f.add(s.specifiers);
  f.add(s.void_named), f.add(s.void_call), f.add(s.reference), f.add(s.starred);
  f.add(s.operand_kind), f.add(s.floating_closers), f.add(s.prefixed), f.add(s.floating_named);
  f.add(s.integral_due), f.add(s.num_integral), f.add(s.num_floating), f.add(s.value_due);
  f.add(s.void_function), f.add(s.void_return), f.add(s.floating_casts), f.add(s.pointer_casts);
  f.add(s.last_type), f.add(s.void_type), f.add(s.decl_void), f.add(s.pointer_cast_due), f.add(s.offset_due), f.add(s.bounds);
  f.add(s.assigned), f.add(s.reinterpret_angle), f.add(s.value_parens), f.add(s.combined),
      f.add(s.additive);
  f.add(s.args), f.add(s.callee_max), f.add(s.callee_least);
  f.add(s.value_calls), f.add(s.builtin_named), f.add(s.value_result);
  f.add(s.bound_opened), f.add(s.bound_taken), f.add(s.decl_extern), f.add(s.single_braces);
  f.add(s.decl_shared), f.add(s.decl_constructed), f.add(s.rvalued), f.add(s.lvalue_led);
  f.add(s.no_member), f.add(s.vector_operand), f.add(s.lvalue_groups);
  f.add(s.pointer_sums), f.add(s.address_led), f.add(s.value_args), f.add(s.value_named);
  f.add(s.static_pointer), f.add(s.divisor_due), f.add(s.divisor_groups);
  f.add(s.static_parens), f.add(s.incdec_led), f.add(s.shift_counts), f.add(s.pointer_assigned);
  f.add(s.floating_sums), f.add(s.valued), f.add(s.function_macros), f.add(s.macro_local);
  f.add(s.pointer_init), f.add(s.pointer_named), f.add(s.pointer_arg), f.add(s.pointer_group),
      f.add(s.pointer_values), f.add(s.reference_cast), f.add(s.integral_chains);
  return f.h;
}

std::uint64_t digest(const Lex& x) {
  static_assert(sizeof(Lex) == 30, "Lex changed: update bpe_grammar::digest");
  Fnv f;
  f.add(x.pending), f.add(x.plen), f.add(x.punct), f.add(x.literal), f.add(x.line_start);
  f.add(x.punct_line_start), f.add(x.blank), f.add(x.ident_after_blank), f.add(x.number);
  f.add(x.number_last), f.add(x.pp_lexemes), f.add(x.pp_define), f.add(x.expr_prev);
  f.add(x.ident_start), f.add(x.ident_len), f.add(x.new_names);
  return f.h;
}

}  // namespace sparserl::env::bpe_grammar
