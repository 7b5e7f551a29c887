// Action masks: which tokens the policy may emit next. Two modes:
//
//   none    every token but <pad> and <bos>; <eos> at any time. An episode may be cut at
//   max_tokens. syntax  a grammar automaton over the token language that encode() writes
//   (tokenizer.hpp):
//             - the //@format line first (a format name, then its keys in order with values in
//               range: sell C=1..1024 sigma=1..2^30, bsr R=1..32 C=1..32), then 1..8 //@launch
//               lines (a canonical local as the kernel name, grid=EXPR block=EXPR [smem=EXPR], each
//               EXPR a well-formed launch expression over the constants the format defines, at most
//               256 characters as decode() renders it), then code. The geometry check's ranges
//               hold on every matrix: block= is a literal 1..1024, smem= a literal 0..49152, and
//               grid= (literals up to 65536) divides by nothing that may be 0 and is at least 1 -
//               judged by interval arithmetic where the budget's completion would close it, so a
//               program the mask accepts never fails bad_geometry but by a grid too large;
//             - code tokens lexically valid in context: numbers are well-formed C literals (no
//               octal, suffixes u/l/ll/f in order), members only after `.` or `->`, locals in
//               canonical order (the next new local is always v<n>; in code only where a name is
//               declared - after a type word (through const / * / & / __restrict__ / __shared__
//               ...), directly after a known name (a user type), or after `,` in a declaration
//               list - never inside an expression, where it would be undeclared), brackets
//               properly nested
//               (at most 48 deep, 16 in a preprocessor line), preprocessor lines well-formed
//               (#define NAME[(params)] body, #undef, #if/#ifdef/#ifndef/#elif/#else/#endif nested,
//               #pragma unroll [N] | nounroll) and ended by <eol>;
//             - type words (int, long, unsigned, value_t, float4, ...) in code only where C++
//               takes one: where a declaration, a cast or a template argument may start (a
//               statement's start, after `(` `,` a qualifier, `<` of a *_cast or template), or in
//               an expression as a functional cast (`value_t(0)`: `(` or `{` must follow); a run
//               of them as C++ has a type for (`unsigned long long int`, not `long long long`,
//               `int int`, `value_t float`); after a run what a declaration or cast goes on with (a
//               qualifier, `*` / `&`, a name, `(` `)` `>` `,` `{`), after `*` / `&` no type word or
//               operand, and after a declared name `=` `;` `,` `[` `(` `)` `{` `:` `>` alone.
//               Closers, `;` and `#` are never refused by these rules (the budget's path);
//             - preprocessor-only words (define, undef, ifdef, ifndef, elif, endif, pragma,
//               unroll, nounroll) only on preprocessor lines;
//             - at file scope declarations alone, as the design space writes them: preprocessor
//               lines, a launched kernel's declaration (`extern` only while one is still to
//               declare), a device function `[template <...>] __device__ QUALIFIERS TYPE NAME(
//               PARAMS) { ... }` (integer template parameters), an empty `;` - no variable
//               (global_state, or NVRTC's host variable) and no other text (NVRTC's "expected a
//               declaration"); inside a function no `static` (a static local fails global_state
//               but for static __shared__ / const, which need no static) and no `__device__`;
//             - kernel declarations as the ABI spells them: "C", __global__ and __launch_bounds__
//               only in `extern "C" __global__ void [__launch_bounds__(EXPR)] NAME(PARAMS) {` at
//               the top level, NAME a launched kernel not yet declared ("C" is offered only while
//               one remains), PARAMS the format's signature token for token (`const int*
//               __restrict__ NAME`, ...; op-independent: SpMV and SpMM share every format's kinds),
//               each name a local not yet in the declaration; no __global__ or extern in a
//               preprocessor line, and no #define / #undef of a launched kernel's name. A program
//               the mask accepts never fails the static check's signature_mismatch,
//               unlaunched_kernel, undefined_kernel or those macro_abuse rules;
//             - <eos> only where the program is complete: every launched kernel declared, every
//               bracket closed, every #if closed, no line open, and the code ending in `}` or `;`
//               (or a preprocessor line);
//             - the budget: a token is allowed only if the program can still be completed within
//               max_tokens after it, so every episode under this mask ends with <eos> and is never
//               truncated (max_tokens must be at least kMinSyntaxTokens).
//           Every token sequence the syntax mask accepts up to <eos> decodes to text that
//           reward::parse_program() accepts with balanced brackets (tests/env/action_mask_test.cpp
//           checks 10,000 random episodes, and 2,000 steered into declarations pass the static
//           check), and the encoding of every corpus program is accepted. Beyond declarations,
//           scopes and type words the mask is lexical: it does not make programs compile.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "sparserl/env/vocabulary.hpp"

namespace sparserl::env {

enum class MaskMode { none, syntax };
std::string_view to_string(MaskMode mode);
std::optional<MaskMode> parse_mask_mode(std::string_view text);  // "none", "syntax"

// The shortest program the syntax mask accepts: <format> ell <eol> <launch> v0 grid= <num> 1
// block= <num> 1 <eol> extern "C" __global__ void v0 (ELL's 4 parameters) { } <eos> (the tables
// check it).
inline constexpr int kMinSyntaxTokens = 44;

class ActionMask {
 public:
  // Throws std::invalid_argument when max_tokens < kMinSyntaxTokens under the syntax mode (or < 1).
  ActionMask(std::shared_ptr<const Vocabulary> vocabulary, MaskMode mode, int max_tokens);
  ~ActionMask();
  ActionMask(const ActionMask&);
  ActionMask& operator=(const ActionMask&);
  ActionMask(ActionMask&&) noexcept;
  ActionMask& operator=(ActionMask&&) noexcept;

  [[nodiscard]] MaskMode mode() const { return mode_; }
  [[nodiscard]] int max_tokens() const { return max_tokens_; }
  [[nodiscard]] int tokens() const;  // tokens consumed since reset()

  void reset();
  // Writes 1 for every allowed token and 0 elsewhere; mask.size() must be the vocabulary size.
  void fill(std::span<std::uint8_t> mask) const;
  [[nodiscard]] bool allows(TokenId token) const;
  // Consumes a token; std::invalid_argument naming it when it is not allowed here.
  void advance(TokenId token);
  // Tokens still needed (including <eos>) to complete the program from here under the syntax
  // mode (an upper bound of the shortest completion); 1 under mode none.
  [[nodiscard]] int min_completion() const;

  // Implementation types (defined in src/action_mask_internal.hpp).
  struct Tables;
  struct State;

 private:
  std::shared_ptr<const Vocabulary> vocabulary_;
  std::shared_ptr<const Tables> tables_;
  std::unique_ptr<State> state_;
  MaskMode mode_;
  int max_tokens_;
};

}  // namespace sparserl::env
