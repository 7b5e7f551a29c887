// min_completion(): the tokens still needed (including <eos>) to complete the program, counted
// along one fixed completion path - close the number, finish the preprocessor line, close brackets
// inside out, `;` if needed, #endif lines, an empty declaration of every launched kernel not yet
// declared, <eos>. Each step of that path lowers the count by exactly one, which is what
// guarantees that the budget never strands an episode: fill() allows a token only where the
// count after it still fits the tokens left.
#include <algorithm>
#include <array>
#include <bit>

#include "action_mask_internal.hpp"

namespace sparserl::env::detail {
namespace {

int pending_kernels(const State& s) {
  return std::popcount(static_cast<unsigned>(pending_kernel_bits(s)));
}

// Tokens that end a preprocessor line from each of its states, <eol> included (a body adds its
// closers; `#` alone ends as `pragma unroll <eol>`, or as `endif <eol>` where an #if is open).
constexpr std::array<int, kPpStates> kLineEnd = {
    0,  // none
    3,  // hash: pragma unroll <eol>
    2,  // define_name: NAME <eol>
    1,  // after_macro_name: <eol>
    2,  // macro_param_first: ) <eol>
    3,  // macro_param_next: NAME ) <eol>
    2,  // macro_param_sep: ) <eol>
    1,  // body: (closers) <eol>
    2,  // undef_name: NAME <eol>
    2,  // ifdef_name: NAME <eol>
    2,  // if_expr_start: OPERAND <eol>
    1,  // eol_only: <eol>
    2,  // pragma: unroll <eol>
    1,  // unroll: <eol>
    2,  // unroll_num_start: DIGIT <eol>
    1,  // unroll_num: <eol>
};

// Beyond the closers: a for statement's `;` still due, and the `;` that ends the statement under
// way before its block's `}` (after the brackets inside it close).
int statement_closers(const State& s) {
  int m = 0;
  bool block = false;
  for (int i = 0; i < s.depth; ++i) {
    const std::uint8_t open = s.stack[static_cast<std::size_t>(i)];
    if (is_for_paren(open)) m += kForParen + 2 - open;
    if (open == kCastAngle) m += kCastOperand;
    // The cast's operand: <num> 0; a reference's `( <num> 0 )` (after its `&` and qualifiers).
    if (open == kCastParen) m += i + 1 == s.depth && in_cast_reference(s) ? 4 : 2;
    if (open == kTernary) m += 2;    // after its `:` an operand: <num> 0
    // A builtin's call before its last argument: `, <num> 0` each missing.
    if (open == kCallParen) m += kMissingArgument * call_need(s.args[static_cast<std::size_t>(i)]);
    block = block || open == '{';
  }
  // A cast's angle without its type yet: `int` before the `>`.
  if (innermost(s) == kCastAngle && s.ctx != ctx_type && s.ctx != ctx_ptr &&
      !(s.ctx == ctx_qual && s.run != 0)) {
    ++m;
  }
  const Last last = on_line(s) ? s.line_last : s.last;
  if (block && (innermost(s) != '{' || !statement_ended(last))) ++m;
  return m;
}

// Closing everything (below), then an empty declaration of each pending kernel at the top level,
// then <eos>.
int code_completion(const Tables& t, const State& s) {
  int m = 1 + pending_kernels(s) * t.declaration_tokens[s.format];  // declarations, <eos>
  m += number_close(s);
  const bool access = s.last == Last::access;
  int end = 0;
  int open_ifs = s.if_depth;
  if (s.pp != Pp::none) {
    m += kLineEnd[static_cast<std::size_t>(s.pp)];
    if (s.pp == Pp::hash && open_ifs > 0 && if_closable(s)) {
      m -= 1;  // `endif <eol>` closes one (where the brackets are as at its #if)
      --open_ifs;
    }
    // A body's operand still due: a constant (`M`) before the closers.
    const bool due = s.line_ctx == line_due || s.line_ctx == line_if_due ||
                     s.line_ctx == line_defined || s.line_ctx == line_defined_paren ||
                     s.line_ctx == line_if_divisor;  // K
    if (s.pp == Pp::body) m += s.pp_depth + (access || due ? 1 : 0);
    if (s.pp == Pp::body && s.line_ctx == line_if_shift) m += 2;  // <num> 0
    // A `?` takes `:` and an operand (`: M`).
    for (int i = 0; i < s.pp_depth && s.pp == Pp::body; ++i) {
      if (s.pp_stack[static_cast<std::size_t>(i)] == kTernary) ++m;
    }
    // The line ends with <eol>: afterwards the code ends well unless a bracket below is open.
    end = s.depth > 0 ? (s.stack[0] == '{' ? 0 : 1) : 0;
  } else {
    if (access) m += 1;
    const bool ends_well =
        !access && s.num == Num::off &&
        (s.last == Last::brace_close || s.last == Last::semi || s.last == Last::pp_eol);
    end = s.depth > 0 ? (s.stack[0] == '{' ? 0 : 1) : (ends_well ? 0 : 1);
  }
  m += s.depth + due_tokens(s.ctx) + statement_closers(s);
  if (const_uninitialized(s)) m += kConstInitializer;  // = <num> 0
  if (untyped_qualifiers(s)) m += kQualifiedType;      // int
  if (bound_due(s)) m += kBoundNumber;                 // <num> 1
  if (unnamed_declarator(t, s)) m += 1;                // the name
  if (reinterpret_to_value(s)) m += 1;                 // `*` before the angle's `>`
  if (void_cast_due(s)) m += 1;                        // `*` before a void cast's `)`
  if (const_declarator_due(s, t.locals)) m += 2;       // NAME = <num> 0, not <num> 0
  if (pointer_argument(s)) m += 4;                     // [ <num> 0 ]
  // A builtin just named: its arguments past the first (due_tokens counts one).
  if (s.ctx == ctx_call_args && s.callee_least > 1) m += kMissingArgument * (s.callee_least - 1);
  // The number due where a floating overload's first argument starts is floating: `0 .`.
  if ((s.ctx == ctx_call_args && s.floating_call) || (s.floating_due && due_tokens(s.ctx) > 0)) {
    m += 1;
  }
  // What finishes a file-scope declaration under way, then `# endif <eol>` each (the last leaves
  // a line end).
  const int file = file_close(s);
  m += (open_ifs > 0 ? 3 * open_ifs : file < 0 ? end : 0) + std::max(file, 0);
  return m;
}

// Tokens to complete a committed declaration (linkage .. params): up to and with its `{`, then
// the code's completion from there (`}`, #endif lines, <eos>). Each step along the path - the
// forced words, an operand and the closers of __launch_bounds__, the parameter list - lowers it
// by one.
int declaration_completion(const Tables& t, const State& s) {
  const int list = static_cast<int>(t.kernel_params[s.format].size());
  int to_brace = 0;
  switch (s.decl) {
    case Decl::linkage:
      to_brace = 3 + list;  // __global__ void NAME
      break;
    case Decl::global:
      to_brace = 2 + list;
      break;
    case Decl::result:
      to_brace = 1 + list;
      break;
    case Decl::bounds_open:
      to_brace = 4 + 1 + list;  // ( <num> 1 ) NAME
      break;
    case Decl::bounds_first:
      to_brace = 3 + 1 + list;  // <num> 1 ) NAME
      break;
    case Decl::bounds:
      to_brace = number_close(s) + s.depth +
                 due_tokens(s.ctx) + 1 + list;
      break;
    case Decl::params:
      to_brace = list - s.decl_pos;
      break;
    case Decl::none:
    case Decl::external:
      break;
  }
  State body = s;
  if (s.decl != Decl::params) {
    // NAME is still to come: it will be one of the pending kernels (the lowest, say).
    const unsigned pending = pending_kernel_bits(s);
    body.defined = static_cast<std::uint16_t>(s.defined | (pending & (~pending + 1u)));
  }
  body.decl = Decl::none;
  body.num = Num::off;
  body.pp = Pp::none;
  body.depth = 1;
  body.stack[0] = '{';
  body.last = Last::brace_open;  // the body's `{`: `}` closes it
  body.ctx = ctx_start;
  return to_brace + code_completion(t, body);
}

}  // namespace

int completion(const Tables& t, const State& s) {
  if (s.done) return 0;
  // After the launch lines: an empty declaration of every launched kernel (at least the one a
  // launch line under way names), then <eos>.
  const int declarations = t.declaration_tokens[s.format];
  const int after_launch = std::max(pending_kernels(s), 1) * declarations + 1;
  const int after_format = kLaunchLineTokens + declarations + 1;
  switch (s.phase) {
    case Phase::start:
    case Phase::format_name:
      // The shortest format line and declaration (kMinSyntaxTokens at the start).
      return kMinSyntaxTokens - (s.phase == Phase::start ? 0 : 1);
    case Phase::format_key:
      return (2 - s.key) * 3 + 1 + after_format;
    case Phase::format_num_start:
      return 2 + (1 - s.key) * 3 + 1 + after_format;
    case Phase::format_num:
      return (s.digits == 0 ? 1 : 0) + (1 - s.key) * 3 + 1 + after_format;
    case Phase::format_eol:
      return 1 + after_format;
    case Phase::launch_start:
      return s.launches == 0 ? after_format : after_launch;
    case Phase::launch_name:
      return 8 + after_launch;  // v grid= <num> 1 block= <num> 1 <eol>
    case Phase::launch_key:
      return 7 + after_launch;
    case Phase::expr:
      return expr_close(s).tokens + (s.which == 0 ? 4 : 1) + after_launch;  // block= <num> 1 <eol>
    case Phase::code:
      if (declaring(s)) return declaration_completion(t, s);
      // `extern` at the top level: "C" goes on to the first pending kernel's declaration.
      if (s.decl == Decl::external && pending_kernels(s) > 0) {
        State linkage = s;
        linkage.decl = Decl::linkage;
        return 1 + declaration_completion(t, linkage);
      }
      return code_completion(t, s);
  }
  return 1;
}

}  // namespace sparserl::env::detail
