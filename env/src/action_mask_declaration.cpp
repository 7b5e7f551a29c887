// Kernel declarations as the ABI spells them (kDeclarationRules): "C", __global__ and
// __launch_bounds__ only in `extern "C" __global__ void [__launch_bounds__(EXPR)] NAME(PARAMS) {`
// at the top level, NAME a launched kernel not yet declared ("C" is offered only while one
// remains), PARAMS the format's signature token for token (Tables::kernel_params), each name a
// local not yet in the declaration and no macro. Outside a committed declaration (Decl::none,
// Decl::external) and inside __launch_bounds__( ) every token passes to the code-token rules; the
// declaration's state moves after each code token, its brackets already moved.
#include "action_mask_internal.hpp"

namespace sparserl::env::detail {
namespace {

// A kernel can still be declared: a launched kernel is not yet (its parameters can always be
// named: the vocabulary has far more locals than a declaration has names).
bool can_declare(const State& s) { return pending_kernel_bits(s) != 0; }

// A top-level `extern` may begin a declaration; any other token leaves it.
void begin_or_leave(const Tables&, State& s, const TokenInfo& k) {
  s.decl = k.word == w_extern && s.depth == 0 ? Decl::external : Decl::none;
}

Verdict linkage(const Tables&, const State& s, const TokenInfo& k) {
  return k.word == w_linkage ? allow_if(can_declare(s)) : Verdict::pass;
}
void take_linkage(const Tables& t, State& s, const TokenInfo& k) {
  if (k.word != w_linkage) return begin_or_leave(t, s, k);
  s.decl = Decl::linkage;
  s.bounds_used = false;
  s.void_function = true;  // a kernel
}

template <std::uint8_t kWord>
Verdict word(const Tables&, const State&, const TokenInfo& k) {
  return allow_if(k.word == kWord);
}
template <Decl kNext>
void goes_on(const Tables&, State& s, const TokenInfo&) {
  s.decl = kNext;
}

Verdict bounds_once(const Tables&, const State& s, const TokenInfo& k) {
  return allow_if(k.word == w_bounds && !s.bounds_used);
}
void open_bounds(const Tables&, State& s, const TokenInfo&) {
  s.decl = Decl::bounds_open;
  s.bounds_used = true;
  s.bounds_commas = 0;
}
// __launch_bounds__'s argument: a constant integer expression of numbers, the prelude's constants,
// macros, operators and parentheses, which the code-token rules judge (no keyword, type, builtin
// or variable in it: NVRTC wants a constant).
Verdict bounds_operand(const Tables&, const State& s, const TokenInfo& k) {
  // Nor ++ / --, a member, a unary `*` / `&` (no lvalue in a constant).
  const bool refused = k.word != w_none || k.cat == Cat::keyword || k.cat == Cat::builtin ||
                       k.cat == Cat::literal || k.role == role_type ||
                       (k.cat == Cat::local && !is_macro(s, k.local)) ||
                       k.role == role_incdec || k.cat == Cat::access ||
                       // + - * ( ) and `,` alone: no `/` or `%` (NVRTC: "division by zero" of
                       // `NNZ / EMPTY_ROWS`, a constant 0 on some matrix)
                       k.cat == Cat::punct_other || k.cat == Cat::slash ||
                       // At most two arguments: threads, blocks per multiprocessor (NVRTC:
                       // `expected a ")"` at a fourth; the corpus writes one).
                       (k.cat == Cat::comma && (s.depth != 1 || s.bounds_commas >= 1)) ||
                       (k.role == role_ptr && s.ctx != ctx_macro && s.ctx != ctx_value &&
                        s.ctx != ctx_paren);
  return refused ? Verdict::refuse : Verdict::pass;
}
void bounds_step(const Tables&, State& s, const TokenInfo& k) {
  s.decl = k.cat == Cat::close_paren && s.depth == 0 ? Decl::result : Decl::bounds;
  if (k.cat == Cat::comma) ++s.bounds_commas;
}

Verdict undeclared_kernel(const Tables&, const State& s, const TokenInfo& k) {
  return allow_if(k.local < kMaxKernelLocal && ((pending_kernel_bits(s) >> k.local) & 1u) != 0);
}
void name_kernel(const Tables&, State& s, const TokenInfo& k) {
  s.defined = static_cast<std::uint16_t>(s.defined | (1u << k.local));
  set_scope(s, k.local, block_scope(0, false));  // a file-scope name from here on
  s.decl = Decl::params;
  s.decl_pos = 0;
  s.decl_names[0] = static_cast<std::uint8_t>(k.local);
  s.decl_named = 1;
}

// The next token of the format's parameter list; a parameter's name is a local up to the next new
// one, no macro, not yet named in this declaration.
Verdict forced(const Tables& t, const State& s, const TokenInfo& k) {
  const Forced& f = t.kernel_params[s.format][s.decl_pos];
  if (k.cat != f.cat || k.word != f.word) return Verdict::refuse;
  if (k.cat != Cat::local) return Verdict::allow;
  if (k.local > s.locals_used || k.local >= t.locals || is_macro(s, k.local)) {
    return Verdict::refuse;
  }
  for (int i = 0; i < s.decl_named; ++i) {
    if (s.decl_names[static_cast<std::size_t>(i)] == k.local) return Verdict::refuse;
  }
  return Verdict::allow;
}
void take_forced(const Tables& t, State& s, const TokenInfo& k) {
  if (k.cat == Cat::local) {
    s.decl_names[s.decl_named++] = static_cast<std::uint8_t>(k.local);
    set_scope(s, k.local, block_scope(1, false));  // the body's outermost block
  }
  if (++s.decl_pos == t.kernel_params[s.format].size()) s.decl = Decl::none;
}

constexpr CatSet kBoundsOperands =
    cats(Cat::num, Cat::constant, Cat::local, Cat::open_paren, Cat::plus, Cat::minus, Cat::star,
         Cat::slash, Cat::punct_other);

constexpr Rule kDeclarationRules[] = {
    // at, categories, judge, take
    {on(Decl::external), cats(Cat::literal), linkage, take_linkage},
    {on(Decl::none, Decl::external), kAnyCat, pass, begin_or_leave},
    {on(Decl::linkage), cats(Cat::keyword), word<w_global>, goes_on<Decl::global>},
    {on(Decl::global), cats(Cat::keyword), word<w_void>, goes_on<Decl::result>},
    {on(Decl::result), cats(Cat::keyword), bounds_once, open_bounds},
    {on(Decl::result), cats(Cat::local), undeclared_kernel, name_kernel},
    {on(Decl::bounds_open), cats(Cat::open_paren), allow, goes_on<Decl::bounds_first>},
    {on(Decl::bounds_first, Decl::bounds), kBoundsOperands, bounds_operand, bounds_step},
    {on(Decl::bounds), cats(Cat::close_paren, Cat::comma), bounds_operand, bounds_step},
    {on(Decl::params), kAnyCat, forced, take_forced},
};

}  // namespace

std::span<const Rule> declaration_rules() { return kDeclarationRules; }

}  // namespace sparserl::env::detail
