// What code may stand at file scope (kFileRules, by Top): a preprocessor line, a launched kernel's
// declaration (`extern "C"`: the declaration automaton takes it from there), a device function
// (`[template <...>] __device__ QUALIFIERS TYPE NAME(PARAMS) { ... }`), or an empty declaration
// `;` - what the design space's and the reference programs write there, nothing else. Anything
// else at file scope never compiles or never passes the static checks: a variable there is state
// that outlives a launch (global_state; NVRTC refuses one without a memory space), and text that
// is no declaration is NVRTC's "expected a declaration". Inside a function's parentheses and body
// every token passes to the code-token rules; a preprocessor line stands between declarations or
// inside those (not amid a declaration's head, where it would reset the type-word rules' context).
// The judges pass a token on (the code-token rules still judge it) or refuse it; the takes move
// State::top.
#include "action_mask_internal.hpp"

namespace sparserl::env::detail {
namespace {

template <Top kNext>
void goes_on(const Tables&, State& s, const TokenInfo&) {
  s.top = kNext;
}
void stays(const Tables&, State&, const TokenInfo&) {}
Verdict allow_pass(bool passes) { return passes ? Verdict::pass : Verdict::refuse; }

// A type under way: a type word seen, or `*` / `&` after one (advance_role's in_type).
bool typed(const State& s) {
  return s.ctx == ctx_type || s.ctx == ctx_ptr || (s.ctx == ctx_qual && s.run != 0);
}

// Between declarations: `extern` while a launched kernel is still to declare (then "C" and the
// declaration follow) and no #if is open (in a branch whose condition is false NVRTC would never
// see the kernel: undefined_kernel), `__device__`, `template`.
Verdict declaration_start(const Tables&, const State& s, const TokenInfo& k) {
  if (k.word == w_extern) {
    return pending_kernel_bits(s) != 0 && s.if_depth == 0 ? Verdict::pass : Verdict::refuse;
  }
  return k.word == w_device || k.word == w_template ? Verdict::pass : Verdict::refuse;
}
void start_declaration(const Tables&, State& s, const TokenInfo& k) {
  s.top = k.word == w_extern ? Top::external : k.word == w_device ? Top::device : Top::tmpl;
  s.template_names = {};  // the last template's parameters leave scope
  s.void_function = false;
}

// A device function's result type: a function's qualifiers (no extern, typedef, __shared__ ...)
// and type words, `*` / `&` after a type, then its name where a declaration names one (a new
// local, or a known one redeclared).
Verdict result_word(const Tables&, const State&, const TokenInfo& k) {
  return allow_pass(k.role == role_type || k.function_qual);
}
Verdict result_pointer(const Tables&, const State& s, const TokenInfo& k) {
  return k.role == role_ptr && typed(s) ? Verdict::pass : Verdict::refuse;
}
// Whether the result is void (`void`, not `void*`): its `return` takes no value.
void result_type(const Tables&, State& s, const TokenInfo& k) {
  if (k.role == role_type || k.role == role_ptr) s.void_function = k.word == w_void;
}
Verdict function_name(const Tables&, const State& s, const TokenInfo& k) {
  const bool names =
      typed(s) && new_local_allowed(s) && s.declarator == kTypeDeclarator && !is_macro(s, k.local);
  return names ? Verdict::pass : Verdict::refuse;
}

// A device function's parameters (NVRTC refused the random expressions that stood there): each
// `[const] TYPE [* [const] [__restrict__]] [NAME]`, `,` between them, `)` after one or at once.
Verdict parameter(const Tables&, const State& s, const TokenInfo& k) {
  const bool named = s.ctx == ctx_declared;
  switch (k.role) {
    case role_type:  // (no void parameter)
      return allow_pass(!named && k.word != w_void);
    case role_qual:
      return allow_pass(k.word == w_const || k.word == w_restrict);
    case role_ptr:
      return allow_pass(typed(s));
    default:
      break;
  }
  switch (k.cat) {
    case Cat::local:  // no macro's name (it would expand)
      return allow_pass(typed(s) && !is_macro(s, k.local));
    case Cat::comma:
      return allow_pass(named || typed(s));
    case Cat::close_paren:
      return allow_pass(named || typed(s) || s.top == Top::params_open);
    case Cat::hash:
      return Verdict::pass;
    default:
      return Verdict::refuse;
  }
}
// The parameter list ends with the `)` back at file scope, the body with its `}`.
void in_parameters(const Tables&, State& s, const TokenInfo& k) {
  s.top = k.cat == Cat::close_paren && s.depth == 0 ? Top::header : Top::params;
}
void in_body(const Tables&, State& s, const TokenInfo& k) {
  if (k.cat == Cat::close_brace && s.depth == 0) s.top = Top::start;
}

// template <...>: integer type words (a float, void or value_t parameter never compiles), names,
// `,` and `>` (which ends it), then __device__.
Verdict opens_angle(const Tables&, const State&, const TokenInfo& k) {
  return k.role == role_lt ? Verdict::pass : Verdict::refuse;
}
Verdict template_parameter(const Tables&, const State& s, const TokenInfo& k) {
  switch (k.cat) {
    case Cat::keyword:
      return allow_pass(k.role == role_type && k.type_bits != kRunSingle);
    case Cat::local:
      return allow_pass(typed(s) && new_local_allowed(s) && !is_macro(s, k.local));
    case Cat::comma:
      return allow_pass(s.ctx == ctx_declared);
    default:  // `>` after a parameter's name (`template <>`, `<int G, >` declare none)
      return allow_pass(k.word == w_angle_close && s.ctx == ctx_declared);
  }
}
void take_template_parameter(const Tables&, State& s, const TokenInfo& k) {
  if (k.word == w_angle_close) s.top = Top::tmpl_done;
}
Verdict device_word(const Tables&, const State&, const TokenInfo& k) {
  return k.word == w_device ? Verdict::pass : Verdict::refuse;
}

constexpr Rule kFileRules[] = {
    // at, categories, judge, take
    {on(Top::start), cats(Cat::hash, Cat::semi, Cat::eos), pass, stays},
    {on(Top::start), cats(Cat::keyword), declaration_start, start_declaration},
    {on(Top::external), cats(Cat::literal), pass, goes_on<Top::body>},  // "C", as Decl judges it
    {on(Top::device), cats(Cat::keyword, Cat::constant), result_word, result_type},  // value_t too
    {on(Top::device), cats(Cat::star, Cat::punct_other), result_pointer, result_type},
    {on(Top::device), cats(Cat::local), function_name, goes_on<Top::named>},
    {on(Top::named), cats(Cat::open_paren), pass, goes_on<Top::params_open>},
    {on(Top::params_open, Top::params), kAnyCat, parameter, in_parameters},
    {on(Top::header), cats(Cat::open_brace), pass, goes_on<Top::body>},
    {on(Top::body), kAnyCat, pass, in_body},
    {on(Top::tmpl), cats(Cat::punct_other), opens_angle, goes_on<Top::tmpl_params>},
    {on(Top::tmpl_params), cats(Cat::keyword, Cat::local, Cat::comma, Cat::punct_other),
     template_parameter, take_template_parameter},
    {on(Top::tmpl_done), cats(Cat::keyword), device_word, goes_on<Top::device>},
};

}  // namespace

std::span<const Rule> file_rules() { return kFileRules; }

// The tokens that finish the file-scope declaration under way (after the closers of what is open
// in it; before any `# endif <eol>` still due), or -1 where the code's own count holds:
// `void NAME ( ) { }` from __device__, `< int NAME >` and `__device__` before it from template;
// these
// tokens pass every rule on that path.
int file_close(const State& s) {
  constexpr int kFunction = 6;  // void NAME ( ) { }
  switch (s.top) {
    case Top::device:
      return typed(s) ? kFunction - 1 : kFunction;
    case Top::named:
      return kFunction - 2;
    case Top::params_open:
    case Top::header:
      return kFunction - 4;
    case Top::params:  // a type after `,`
      return kFunction - 4 + (s.ctx == ctx_declared || typed(s) ? 0 : 1);
    case Top::tmpl:
      return 4 + 1 + kFunction;  // < int NAME > __device__
    case Top::tmpl_params:
      return (s.ctx == ctx_declared ? 1 : typed(s) ? 2 : 3) + 1 + kFunction;  // (int NAME) >
    case Top::tmpl_done:
      return 1 + kFunction;
    default:
      return -1;
  }
}

}  // namespace sparserl::env::detail
