// The static checks over lexed tokens: forbidden constructs (one table of names and name families
// per reason), preprocessor discipline, the kernel definitions against the launches and the
// registry's signature, then the geometry and resource checks that need a matrix or a cubin.
// Two checks are backed up after compilation because a macro can hide what a token scan looks for:
// module-scope device memory (ptxas' "bytes gmem") and kernels missing from the cubin.
#include "sparserl/reward/static_checks.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <iterator>
#include <set>

namespace sparserl::reward {
namespace {

using Reason = StaticCheckReason;

struct ReasonInfo {
  std::string_view name;
  std::string_view description;
};

constexpr ReasonInfo kReasons[] = {
    {"include",
     "`#include` and every preprocessor directive except `#define`, `#undef`, `#if`, "
     "`#ifdef`, `#ifndef`, `#elif`, `#else`, `#endif` and `#pragma unroll` / `nounroll`"},
    {"token_pasting",
     "`##` and `#` (stringizing) in macros, `_Pragma`, `__pragma`: they could "
     "assemble a forbidden name the scan never sees"},
    {"inline_asm", "`asm`, `__asm__`, `__asm` (PTX can read timers, special registers, anything)"},
    {"timer_read",
     "`clock`, `clock64`, `__globaltimer`, `__nanosleep`, chrono clocks, `__TIME__` / "
     "`__DATE__` (a kernel must not observe time)"},
    {"stream_api",
     "`cudaStream*`, `cudaEvent*`, `cudaDeviceSynchronize`, `cudaMemcpy*`, any other "
     "`cuda*` runtime call, cooperative grid sync (`this_grid`, `grid_group`)"},
    {"graph_api", "`cudaGraph*`"},
    {"device_launch",
     "`<<<`, `cudaLaunch*`, `cudaGetParameterBuffer`: dynamic parallelism would "
     "run work the timer and the launch list do not see"},
    {"device_malloc",
     "`malloc`, `free`, `calloc`, `realloc`, `new`, `delete`, `alloca`, "
     "`cudaMalloc*`, `cudaFree*`"},
    {"device_io", "`printf` and relatives, `assert` (device output floods the worker)"},
    {"global_state",
     "`__device__` and `__managed__` variables, `static` locals, and any "
     "module-scope device memory ptxas reports (namespace-scope `const` / `constexpr` "
     "variables used by device code included: NVRTC places them in global memory; use "
     "`#define`, a local `constexpr` or `__constant__`): state that outlives a launch, "
     "where a kernel could keep results between timed runs"},
    {"bad_token",
     "a character outside C++'s basic set outside literals and comments (a stray "
     "backslash could spell `\\u0063lock`), a NUL byte, an unterminated comment or "
     "literal"},
    {"macro_abuse",
     "spellings that hide what the checker must see: `__global__` or `extern` in "
     "a macro body, `#define` / `#undef` of a prelude constant, `value_t`, a keyword "
     "or a launched kernel's name, `__attribute__((global))` and CUDA's other "
     "internal space spellings (`__location__`, `__annotate__`), tile kernels"},
    {"undefined_kernel",
     "a `//@launch`ed kernel that is not defined as `extern \"C\" __global__ "
     "void NAME(...) { ... }` (or is missing from the cubin)"},
    {"unlaunched_kernel", "a `__global__` function that no `//@launch` runs (a decoy)"},
    {"signature_mismatch",
     "a launched kernel whose parameters differ from the registry's list for "
     "the (op, format), or that is not `extern \"C\"` / not `void`"},
    {"bad_geometry",
     "grid outside 1 .. 2^31-1, block outside 1 .. 1024, negative smem, or a "
     "launch expression that divides by zero or overflows on the task's matrix"},
    {"resource_limit",
     "static + dynamic shared memory over the limit (48 KiB), registers x block "
     "over the register file, spills over a set limit, or the format's padded "
     "size over its cap"},
    {"bad_directive",
     "a missing or repeated `//@format`, a malformed `//@launch` or launch "
     "expression, an unknown `//@` directive"},
    {"program_too_large", "a program over the byte limit (64 KiB by default)"},
};
static_assert(std::size(kReasons) == kStaticCheckReasonCount, "one entry per StaticCheckReason");

// C++ keywords and the CUDA words a signature or a kernel is made of: a macro may not redefine
// them.
const std::set<std::string, std::less<>>& protected_words() {
  // clang-format off
  static const std::set<std::string, std::less<>> words = {
      "alignas", "alignof", "auto", "bool", "break", "case", "catch", "char", "class", "const",
      "constexpr", "const_cast", "continue", "decltype", "default", "delete", "do", "double",
      "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
      "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept",
      "nullptr", "operator", "private", "protected", "public", "register", "reinterpret_cast",
      "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
      "switch", "template", "this", "throw", "true", "try", "typedef", "typeid", "typename",
      "union", "unsigned", "using", "virtual", "void", "volatile", "while", "char16_t", "char32_t",
      "char8_t", "wchar_t", "concept", "requires", "consteval", "constinit", "__global__",
      "__device__", "__host__", "__shared__", "__constant__", "__managed__", "__restrict__",
      "__restrict", "__launch_bounds__", "__forceinline__", "__noinline__", "__grid_constant__",
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "__syncthreads", "value_t",
      "defined", "__VA_ARGS__", "__VA_OPT__"};
  // clang-format on
  return words;
}

struct Forbidden {
  std::string_view name;
  bool prefix;  // the name is a family: every identifier that starts with it
  Reason reason;
  std::string_view why;
};

// Looked up in order: a more specific family ("cudaGraph") precedes a broader one ("cuda").
constexpr Forbidden kForbidden[] = {
    {"asm", false, Reason::inline_asm, "inline assembly"},
    {"__asm__", false, Reason::inline_asm, "inline assembly"},
    {"__asm", false, Reason::inline_asm, "inline assembly"},
    {"_Pragma", false, Reason::token_pasting, "_Pragma builds a directive from a string"},
    {"__pragma", false, Reason::token_pasting, "__pragma builds a directive"},
    {"clock", false, Reason::timer_read, "reads the SM clock"},
    {"clock64", false, Reason::timer_read, "reads the SM clock"},
    {"__clock", false, Reason::timer_read, "reads the SM clock"},
    {"__clock64", false, Reason::timer_read, "reads the SM clock"},
    {"globaltimer", false, Reason::timer_read, "reads the global timer"},
    {"__globaltimer", false, Reason::timer_read, "reads the global timer"},
    {"__nanosleep", false, Reason::timer_read, "sleeps for a time"},
    {"nanosleep", false, Reason::timer_read, "sleeps for a time"},
    {"__nvvm_read_ptx_sreg_", true, Reason::timer_read, "reads a special register"},
    {"__builtin_readcyclecounter", false, Reason::timer_read, "reads a cycle counter"},
    {"chrono", false, Reason::timer_read, "clocks"},
    {"steady_clock", false, Reason::timer_read, "a clock"},
    {"system_clock", false, Reason::timer_read, "a clock"},
    {"high_resolution_clock", false, Reason::timer_read, "a clock"},
    {"__TIME__", false, Reason::timer_read,
     "the compile time (it would also defeat the compile cache)"},
    {"__DATE__", false, Reason::timer_read,
     "the compile date (it would also defeat the compile cache)"},
    {"__TIMESTAMP__", false, Reason::timer_read,
     "the compile time (it would also defeat the compile cache)"},
    {"cudaGraph", true, Reason::graph_api, "CUDA graphs run work outside the launch list"},
    {"cudaLaunch", true, Reason::device_launch, "launches kernels from the device"},
    {"cudaGetParameterBuffer", true, Reason::device_launch, "dynamic parallelism"},
    {"__cudaPushCallConfiguration", false, Reason::device_launch, "a kernel launch"},
    {"__cudaPopCallConfiguration", false, Reason::device_launch, "a kernel launch"},
    {"cudaMalloc", true, Reason::device_malloc, "allocates device memory"},
    {"cudaFree", true, Reason::device_malloc, "frees device memory"},
    {"malloc", false, Reason::device_malloc, "allocates device heap memory"},
    {"free", false, Reason::device_malloc, "frees device heap memory"},
    {"calloc", false, Reason::device_malloc, "allocates device heap memory"},
    {"realloc", false, Reason::device_malloc, "allocates device heap memory"},
    {"aligned_alloc", false, Reason::device_malloc, "allocates device heap memory"},
    {"memalign", false, Reason::device_malloc, "allocates device heap memory"},
    {"__nv_aligned_device_malloc", false, Reason::device_malloc, "allocates device heap memory"},
    {"new", false, Reason::device_malloc, "allocates device heap memory"},
    {"delete", false, Reason::device_malloc, "frees device heap memory"},
    {"alloca", false, Reason::device_malloc, "allocates on the stack at run time"},
    {"__builtin_alloca", false, Reason::device_malloc, "allocates on the stack at run time"},
    {"printf", false, Reason::device_io, "device output"},
    {"vprintf", false, Reason::device_io, "device output"},
    {"fprintf", false, Reason::device_io, "device output"},
    {"sprintf", false, Reason::device_io, "formatted output"},
    {"snprintf", false, Reason::device_io, "formatted output"},
    {"puts", false, Reason::device_io, "device output"},
    {"putchar", false, Reason::device_io, "device output"},
    {"__builtin_printf", false, Reason::device_io, "device output"},
    {"assert", false, Reason::device_io, "prints on failure"},
    {"__assert_fail", false, Reason::device_io, "prints on failure"},
    {"__assertfail", false, Reason::device_io, "prints on failure"},
    {"this_grid", false, Reason::stream_api, "cooperative grid synchronisation"},
    {"this_multi_grid", false, Reason::stream_api, "cooperative grid synchronisation"},
    {"grid_group", false, Reason::stream_api, "cooperative grid synchronisation"},
    {"multi_grid_group", false, Reason::stream_api, "cooperative grid synchronisation"},
    {"cooperative_groups", false, Reason::stream_api, "cooperative groups (grid sync)"},
    {"cudaStream", true, Reason::stream_api, "streams run work the timer does not see"},
    {"cudaEvent", true, Reason::stream_api, "events"},
    {"cudaDeviceSynchronize", false, Reason::stream_api, "device-wide synchronisation"},
    {"cudaMemcpy", true, Reason::stream_api, "copies outside the kernel"},
    {"__cuda", true, Reason::stream_api, "the CUDA runtime's internals"},
    // The spellings behind CUDA's keywords (host_defines.h) would declare kernels and device
    // variables the scan does not recognise; CUDA 13's tile kernels are another kind of kernel.
    {"__location__", false, Reason::macro_abuse,
     "CUDA's internal spelling of a space keyword: write __global__, __device__, ..."},
    {"__annotate__", false, Reason::macro_abuse,
     "CUDA's internal spelling of a space keyword: write __global__, __device__, ..."},
    {"__tile_global__", false, Reason::macro_abuse, "tile kernels are not part of the ABI"},
    {"__tile__", false, Reason::macro_abuse, "tile functions are not part of the ABI"},
    {"__tile_builtin__", false, Reason::macro_abuse, "tile functions are not part of the ABI"},
};

// Attribute arguments that are CUDA's execution and memory spaces: __attribute__((global)) is a
// __global__ the scan would not see.
bool is_space_attribute(std::string_view id) {
  static const std::set<std::string, std::less<>> spaces = {
      "global",     "device",      "host",       "shared",       "constant",
      "managed",    "tile_global", "tile",       "tile_builtin", "__global__",
      "__device__", "__host__",    "__shared__", "__constant__", "__managed__"};
  return spaces.count(id) > 0;
}

// Any other identifier `cudaX...` with X upper case is a runtime call (stream_api).
bool is_runtime_call(std::string_view id) {
  return id.size() > 4 && id.substr(0, 4) == "cuda" && id[4] >= 'A' && id[4] <= 'Z';
}

// Every entry's name is non-empty, so a first character that differs rules it out before any
// longer comparison (the lookups run for every identifier the checks and the BPE mask read).
bool same_start(std::string_view a, std::string_view b) {
  return !a.empty() && !b.empty() && a.front() == b.front();
}

const Forbidden* find_forbidden(std::string_view id) {
  for (const Forbidden& f : kForbidden) {
    if (!same_start(id, f.name)) continue;
    if (f.prefix ? id.substr(0, f.name.size()) == f.name : id == f.name) return &f;
  }
  return nullptr;
}

StaticCheckFailure failure(Reason reason, std::string message, int line, int column) {
  return {reason, std::move(message), line, column};
}

StaticCheckFailure at(Reason reason, std::string message, const Token& t) {
  return failure(reason, std::move(message), t.line, t.column);
}

bool is(const Token& t, std::string_view text) {
  return (t.kind == TokenKind::identifier || t.kind == TokenKind::punct) && t.text == text;
}

class Checker {
 public:
  Checker(const Program& program, const std::vector<Token>& tokens, Op op)
      : program_(program), tokens_(tokens), op_(op), launched_(program.kernel_names()) {}

  std::optional<StaticCheckFailure> forbidden_constructs() {
    std::vector<bool> code_brace;  // per open brace: does it open code (a function body, a block)?
    for (std::size_t i = 0; i < tokens_.size(); ++i) {
      const Token& t = tokens_[i];
      if (t.kind == TokenKind::other) {
        return at(Reason::bad_token,
                  "stray character '" + printable(t.text) +
                      "' outside a literal or comment (only C++'s basic source characters)",
                  t);
      }
      if (t.pp_line >= 0 && t.line_start) {
        if (auto f = directive(i)) return f;
        continue;
      }
      if (is(t, "#")) {
        if (t.pp_line >= 0) {
          return at(Reason::token_pasting, "# (stringizing) in a macro", t);
        }
        return at(Reason::bad_token, "stray '#' that does not start a directive", t);
      }
      if (is(t, "##")) return at(Reason::token_pasting, "## (token pasting) in a macro", t);
      if (is(t, "<<<")) {
        return at(Reason::device_launch, "<<< launches a kernel from the device", t);
      }
      if (is(t, "{")) {
        const bool enclosing_code = !code_brace.empty() && code_brace.back();
        bool opens_code = enclosing_code;
        if (i > 0) {
          const Token& p = tokens_[i - 1];
          opens_code = opens_code || is(p, ")") || is(p, "const") || is(p, "noexcept") ||
                       is(p, "else") || is(p, "do") || is(p, "try") || is(p, "mutable");
        }
        code_brace.push_back(opens_code);
        continue;
      }
      if (is(t, "}")) {
        if (!code_brace.empty()) code_brace.pop_back();
        continue;
      }
      if (t.kind != TokenKind::identifier) continue;
      if ((t.text == "__attribute__" || t.text == "__declspec") && i + 1 < tokens_.size() &&
          is(tokens_[i + 1], "(")) {
        const std::size_t end = matching_paren(i + 1);
        for (std::size_t j = i + 2; j < end && j < tokens_.size(); ++j) {
          if (tokens_[j].kind == TokenKind::identifier && is_space_attribute(tokens_[j].text)) {
            return at(Reason::macro_abuse,
                      t.text + "((" + tokens_[j].text +
                          ")) spells a CUDA space keyword the "
                          "checker must see: write __global__, __device__, ...",
                      t);
          }
        }
      }
      if (const Forbidden* f = find_forbidden(t.text)) {
        return at(f->reason, t.text + " is not allowed: " + std::string(f->why), t);
      }
      if (is_runtime_call(t.text)) {
        return at(Reason::stream_api, t.text + " is a CUDA runtime call: not allowed in a kernel",
                  t);
      }
      // forbidden_name() below is these two lookups, for the grammar mask over BPE tokens.
      if (t.text == "__managed__") {
        return at(Reason::global_state, "__managed__ variables outlive a launch", t);
      }
      if (t.pp_line >= 0 && (t.text == "__global__" || t.text == "extern")) {
        return at(Reason::macro_abuse,
                  t.text + " inside a macro: kernels and linkage must be written out", t);
      }
      if (t.text == "__device__" && t.pp_line < 0 && device_variable(i)) {
        return at(Reason::global_state,
                  "a __device__ variable outlives a launch (a kernel could keep results between "
                  "timed runs); constants can be constexpr without __device__, or __constant__",
                  t);
      }
      if (t.text == "static" && t.pp_line < 0 && !code_brace.empty() && code_brace.back() &&
          static_local(i)) {
        return at(Reason::global_state,
                  "a static local variable outlives a launch; only static __shared__ is allowed",
                  t);
      }
    }
    return std::nullopt;
  }

  std::optional<StaticCheckFailure> kernels() {
    struct Kernel {
      std::string name;
      std::size_t global_index, name_index, close;
      bool definition = false;
    };
    std::vector<Kernel> found;
    for (std::size_t i = 0; i < tokens_.size(); ++i) {
      if (!is(tokens_[i], "__global__") || tokens_[i].pp_line >= 0) continue;
      // The name: the first identifier followed by '(' that is not an attribute.
      std::size_t n = i + 1;
      std::string name;
      while (n + 1 < tokens_.size()) {
        if (tokens_[n].kind == TokenKind::identifier && is(tokens_[n + 1], "(") &&
            tokens_[n].text != "__launch_bounds__" && tokens_[n].text != "__maxnreg__") {
          name = tokens_[n].text;
          break;
        }
        if (is(tokens_[n], ";") || is(tokens_[n], "{")) break;
        ++n;
      }
      if (name.empty()) {
        return at(Reason::signature_mismatch,
                  "cannot read this __global__ declaration: expected extern \"C\" __global__ void "
                  "NAME(...)",
                  tokens_[i]);
      }
      const std::size_t close = matching_paren(n + 1);
      const bool definition = close + 1 < tokens_.size() && is(tokens_[close + 1], "{");
      found.push_back({name, i, n, close, definition});
    }
    // A launch of a kernel that is not defined first: a typo in a name would otherwise be reported
    // as the decoy it makes of the real kernel.
    for (const LaunchDirective& l : program_.launches) {
      const bool defined = std::any_of(found.begin(), found.end(), [&](const Kernel& k) {
        return k.name == l.kernel && k.definition;
      });
      if (!defined) {
        return failure(Reason::undefined_kernel,
                       "//@launch " + l.kernel + " names no kernel defined here: expected " +
                           signature(op_, program_.format.format).declaration(l.kernel) +
                           " { ... }",
                       l.line, 1);
      }
    }
    for (const Kernel& k : found) {
      const bool is_launched =
          std::find(launched_.begin(), launched_.end(), k.name) != launched_.end();
      if (!is_launched) {
        if (!k.definition) continue;  // an unused prototype is harmless
        return at(Reason::unlaunched_kernel,
                  "__global__ " + k.name +
                      " is defined but no //@launch runs it (a decoy); launch "
                      "it or make it a __device__ function",
                  tokens_[k.name_index]);
      }
      if (auto f = launched_shape(k.global_index, k.name_index, k.close, k.name)) return f;
    }
    return std::nullopt;
  }

 private:
  static std::string printable(const std::string& s) {
    const auto c = static_cast<unsigned char>(s[0]);
    if (c >= 0x20 && c < 0x7f) return s;
    static constexpr char kHex[] = "0123456789abcdef";
    return std::string("\\x") + kHex[c >> 4] + kHex[c & 0xf];
  }

  // A preprocessor line starting at token i (the '#').
  std::optional<StaticCheckFailure> directive(std::size_t i) {
    const Token& hash = tokens_[i];
    const bool has_name = i + 1 < tokens_.size() && tokens_[i + 1].pp_line == hash.pp_line;
    if (!has_name) return std::nullopt;  // the null directive
    const Token& name = tokens_[i + 1];
    static const std::set<std::string, std::less<>> allowed = {
        "define", "undef", "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif"};
    if (name.text == "pragma") {
      const bool ok = i + 2 < tokens_.size() && tokens_[i + 2].pp_line == hash.pp_line &&
                      (tokens_[i + 2].text == "unroll" || tokens_[i + 2].text == "nounroll");
      if (!ok) {
        return at(Reason::include, "#pragma other than unroll / nounroll is not allowed", hash);
      }
      return std::nullopt;
    }
    if (allowed.find(name.text) == allowed.end()) {
      return at(Reason::include,
                "#" + name.text +
                    " is not allowed (programs are self-contained device code; "
                    "only #define, #undef, #if* / #else / #endif and #pragma unroll)",
                hash);
    }
    if ((name.text == "define" || name.text == "undef") && i + 2 < tokens_.size() &&
        tokens_[i + 2].pp_line == hash.pp_line) {
      const Token& macro = tokens_[i + 2];
      const auto& constants = constant_infos();
      const bool is_constant =
          std::any_of(constants.begin(), constants.end(),
                      [&](const ConstantInfo& c) { return c.name == macro.text; });
      const bool is_kernel =
          std::find(launched_.begin(), launched_.end(), macro.text) != launched_.end();
      if (is_constant || is_kernel || protected_words().count(macro.text) > 0) {
        const std::string what = is_constant ? "a prelude constant"
                                 : is_kernel ? "a launched kernel's name"
                                             : "a keyword or ABI name";
        return at(Reason::macro_abuse,
                  "#" + name.text + " " + macro.text + ": " + what + " may not be redefined",
                  macro);
      }
    }
    return std::nullopt;
  }

  // `__device__ ...` at token i: a variable when the declaration reaches ; = [ { before any (.
  bool device_variable(std::size_t i) const {
    for (std::size_t j = i + 1; j < tokens_.size(); ++j) {
      const Token& t = tokens_[j];
      if (t.pp_line >= 0) return false;
      if (is(t, "(")) return false;
      if (is(t, ";") || is(t, "=") || is(t, "[") || is(t, "{")) return true;
    }
    return false;
  }

  // `static ...` in code at token i: a static local unless __shared__, const or constexpr.
  bool static_local(std::size_t i) const {
    for (std::size_t j = i + 1; j < tokens_.size(); ++j) {
      const Token& t = tokens_[j];
      if (is(t, "__shared__") || is(t, "const") || is(t, "constexpr")) return false;
      if (is(t, ";") || is(t, "=") || is(t, "[") || is(t, "{") || is(t, "(")) return true;
    }
    return true;
  }

  std::size_t matching_paren(std::size_t open) const {
    int depth = 0;
    for (std::size_t j = open; j < tokens_.size(); ++j) {
      if (is(tokens_[j], "(")) ++depth;
      if (is(tokens_[j], ")") && --depth == 0) return j;
    }
    return tokens_.size();
  }

  // A launched kernel: extern "C" __global__ void [attributes] NAME(params) with the registry's
  // parameter list.
  std::optional<StaticCheckFailure> launched_shape(std::size_t global, std::size_t name_index,
                                                   std::size_t close, const std::string& name) {
    const Token& g = tokens_[global];
    const Signature& sig = signature(op_, program_.format.format);
    const std::string expected = sig.declaration(name);
    const bool extern_c = global >= 2 && is(tokens_[global - 2], "extern") &&
                          tokens_[global - 1].kind == TokenKind::string &&
                          tokens_[global - 1].text == "\"C\"";
    if (!extern_c) {
      return at(Reason::signature_mismatch,
                "kernel " + name +
                    " must be declared extern \"C\" (the evaluator finds it by "
                    "name): expected " +
                    expected,
                g);
    }
    bool saw_void = false;
    for (std::size_t j = global + 1; j < name_index; ++j) {
      const Token& t = tokens_[j];
      if (is(t, "void")) {
        saw_void = true;
      } else if (is(t, "__launch_bounds__") || is(t, "__maxnreg__")) {
        const std::size_t end = matching_paren(j + 1);
        if (j + 1 >= name_index || !is(tokens_[j + 1], "(") || end >= name_index) break;
        j = end;
      } else {
        return at(Reason::signature_mismatch,
                  "unexpected '" + t.text + "' in the declaration of kernel " + name +
                      ": expected " + expected,
                  t);
      }
    }
    if (!saw_void) {
      return at(Reason::signature_mismatch,
                "kernel " + name + " must return void: expected " + expected, g);
    }
    if (close >= tokens_.size()) {
      return at(Reason::signature_mismatch, "unbalanced parameter list of kernel " + name,
                tokens_[name_index]);
    }
    // Parameters split at top-level commas.
    std::vector<std::vector<const Token*>> params(1);
    int depth = 0;
    for (std::size_t j = name_index + 2; j < close; ++j) {
      const Token& t = tokens_[j];
      if (is(t, "(") || is(t, "[") || is(t, "<")) ++depth;
      if (is(t, ")") || is(t, "]") || is(t, ">")) --depth;
      if (depth == 0 && is(t, ",")) {
        params.emplace_back();
        continue;
      }
      params.back().push_back(&t);
    }
    if (params.size() == 1 && params[0].empty()) params.clear();
    if (params.size() != sig.args.size()) {
      return at(Reason::signature_mismatch,
                "kernel " + name + " takes " + std::to_string(params.size()) + " parameters, the " +
                    std::string(to_string(op_)) + " " +
                    std::string(to_string(program_.format.format)) + " signature has " +
                    std::to_string(sig.args.size()) + ": expected " + expected,
                tokens_[name_index]);
    }
    for (std::size_t p = 0; p < params.size(); ++p) {
      if (auto problem = param_problem(params[p], sig.args[p])) {
        const Token& where = params[p].empty() ? tokens_[name_index] : *params[p].front();
        return at(Reason::signature_mismatch,
                  "parameter " + std::to_string(p + 1) + " of kernel " + name + " is '" +
                      joined(params[p]) + "': expected " + std::string(c_type(sig.args[p].kind)) +
                      " (" + std::string(sig.args[p].name) + ")" + *problem +
                      "; the signature is " + expected,
                  where);
      }
    }
    return std::nullopt;
  }

  static std::string joined(const std::vector<const Token*>& tokens) {
    std::string s;
    for (const Token* t : tokens) {
      if (t->text != "*" && !s.empty()) s += ' ';
      s += t->text;
    }
    return s;
  }

  // nullopt when the tokens are the argument's type (qualifiers in any allowed order, a name or
  // not); else a hint.
  static std::optional<std::string> param_problem(const std::vector<const Token*>& tokens,
                                                  const KernelArg& arg) {
    std::vector<std::string> before, after;
    int stars = 0;
    for (const Token* t : tokens) {
      if (t->text == "*") {
        ++stars;
        continue;
      }
      (stars == 0 ? before : after).push_back(t->text);
    }
    if (stars != 1) return std::string(": one pointer level");
    const bool input = arg.kind != ArgKind::output_array;
    const std::string base = arg.kind == ArgKind::index_array ? "int" : "value_t";
    // Before the '*': the base type, and const exactly when the argument is an input.
    int consts = 0, bases = 0;
    for (const std::string& w : before) {
      if (w == "const") {
        ++consts;
      } else if (w == base) {
        ++bases;
      } else {
        return std::string(": '") + w + "' is not part of this type";
      }
    }
    if (bases != 1) return std::string(": the element type is ") + base;
    if (input && consts != 1) return std::string(": inputs are pointers to const");
    if (!input && consts != 0) return std::string(": the output is written, it cannot be const");
    // After the '*': optional __restrict__ / __restrict, optional const, then an optional name.
    bool restrict_seen = false, const_seen = false, name_seen = false;
    for (const std::string& w : after) {
      if (name_seen) return std::string(": unexpected '") + w + "' after the parameter name";
      if ((w == "__restrict__" || w == "__restrict") && !restrict_seen) {
        restrict_seen = true;
      } else if (w == "const" && !const_seen) {
        const_seen = true;
      } else if (!w.empty() && (std::isalpha(static_cast<unsigned char>(w[0])) || w[0] == '_') &&
                 protected_words().count(w) == 0) {
        name_seen = true;
      } else {
        return std::string(": unexpected '") + w + "'";
      }
    }
    return std::nullopt;
  }

  const Program& program_;
  const std::vector<Token>& tokens_;
  Op op_;
  std::vector<std::string> launched_;
};

}  // namespace

std::optional<StaticCheckReason> forbidden_name(std::string_view identifier) {
  if (const Forbidden* f = find_forbidden(identifier)) return f->reason;
  if (is_runtime_call(identifier)) return Reason::stream_api;
  return std::nullopt;
}

bool forbidden_family(std::string_view prefix) {
  if (is_runtime_call(prefix)) return true;
  return std::any_of(std::begin(kForbidden), std::end(kForbidden), [&](const Forbidden& f) {
    return f.prefix && same_start(prefix, f.name) && prefix.substr(0, f.name.size()) == f.name;
  });
}

bool forbidden_below(std::string_view prefix) {
  // `cuda` followed by an upper-case letter: every prefix of "cuda", and what already is one.
  if (std::string_view("cuda").substr(0, prefix.size()) == prefix || is_runtime_call(prefix)) {
    return true;
  }
  return std::any_of(std::begin(kForbidden), std::end(kForbidden), [&](const Forbidden& f) {
    if (!same_start(prefix, f.name)) return false;
    return f.name.substr(0, prefix.size()) == prefix ||
           (f.prefix && prefix.substr(0, f.name.size()) == f.name);
  });
}

std::string_view to_string(StaticCheckReason reason) {
  const auto i = static_cast<std::size_t>(reason);
  return i < std::size(kReasons) ? kReasons[i].name : "?";
}

std::optional<StaticCheckReason> parse_static_check_reason(std::string_view text) {
  for (std::size_t i = 0; i < std::size(kReasons); ++i) {
    if (kReasons[i].name == text) return static_cast<StaticCheckReason>(i);
  }
  return std::nullopt;
}

std::string_view describe(StaticCheckReason reason) {
  const auto i = static_cast<std::size_t>(reason);
  return i < std::size(kReasons) ? kReasons[i].description : "?";
}

ErrorKind error_kind(StaticCheckReason reason) {
  switch (reason) {
    case Reason::bad_directive:
      return ErrorKind::bad_program;
    case Reason::resource_limit:
      return ErrorKind::resource_limit;
    default:
      return ErrorKind::static_check;
  }
}

std::string StaticCheckFailure::str() const {
  std::string s(to_string(reason));
  if (line > 0) {
    s += " at line " + std::to_string(line);
    if (column > 0) s += ", column " + std::to_string(column);
  }
  s += ": " + message;
  return s;
}

StaticCheckResult check_program(std::string_view text, Op op, const ProgramLimits& limits) {
  StaticCheckResult result;
  if (text.size() > limits.max_program_bytes) {
    result.failure =
        failure(Reason::program_too_large,
                "the program has " + std::to_string(text.size()) + " bytes, over the limit of " +
                    std::to_string(limits.max_program_bytes),
                0, 0);
    return result;
  }
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    int line = 1 + static_cast<int>(std::count(
                       text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n'));
    result.failure =
        failure(Reason::bad_token, "a NUL byte (the compiler would stop reading there)", line, 0);
    return result;
  }
  const LexResult lexed = lex(text);
  if (!lexed.ok()) {
    result.failure =
        failure(Reason::bad_token, lexed.error->message, lexed.error->line, lexed.error->column);
    return result;
  }
  ParseResult parsed = parse_program(text);
  if (!parsed.ok()) {
    result.failure = failure(Reason::bad_directive, parsed.error.message, parsed.error.line,
                             parsed.error.column);
    return result;
  }
  result.program = std::move(parsed.program);
  Checker checker(*result.program, lexed.tokens, op);
  if (auto f = checker.forbidden_constructs()) {
    result.failure = std::move(f);
    return result;
  }
  if (auto f = checker.kernels()) result.failure = std::move(f);
  return result;
}

GeometryResult resolve_launches(const Program& program, const Constants& constants,
                                const ProgramLimits& limits) {
  GeometryResult result;
  for (const LaunchDirective& l : program.launches) {
    struct Part {
      const char* key;
      const LaunchExpr* expr;
      int column;
      std::int64_t value = 0;
    };
    std::array<Part, 3> parts = {{{"grid", &l.grid, l.grid_column},
                                  {"block", &l.block, l.block_column},
                                  {"smem", &l.smem, l.smem_column}}};
    for (Part& p : parts) {
      const LaunchExprValue v = p.expr->evaluate(constants);
      if (!v.ok()) {
        result.failure = failure(Reason::bad_geometry,
                                 "//@launch " + l.kernel + " " + p.key + "=" + p.expr->text() +
                                     ": " + v.error->message + " on this matrix",
                                 l.line, p.column > 0 ? p.column + v.error->column - 1 : 0);
        return result;
      }
      p.value = v.value;
    }
    const auto range_error = [&](const Part& p, Reason reason, std::int64_t lo, std::int64_t hi) {
      result.failure = failure(reason,
                               "//@launch " + l.kernel + " " + p.key + "=" + p.expr->text() +
                                   " is " + std::to_string(p.value) + " on this matrix: expected " +
                                   std::to_string(lo) + " .. " + std::to_string(hi),
                               l.line, p.column);
    };
    if (parts[0].value < 1 || parts[0].value > limits.max_grid) {
      range_error(parts[0], Reason::bad_geometry, 1, limits.max_grid);
      return result;
    }
    if (parts[1].value < 1 || parts[1].value > limits.max_block) {
      range_error(parts[1], Reason::bad_geometry, 1, limits.max_block);
      return result;
    }
    if (parts[2].value < 0) {
      range_error(parts[2], Reason::bad_geometry, 0, limits.max_shared_bytes);
      return result;
    }
    if (parts[2].value > limits.max_shared_bytes) {
      range_error(parts[2], Reason::resource_limit, 0, limits.max_shared_bytes);
      return result;
    }
    result.launches.push_back(
        {l.kernel, parts[0].value, static_cast<int>(parts[1].value), parts[2].value, l.line});
  }
  const std::int64_t stored = stored_entries(constants, program.format.format);
  if (stored > limits.max_stored_entries) {
    result.launches.clear();
    result.failure =
        failure(Reason::resource_limit,
                "format " + program.format.str() + " stores " + std::to_string(stored) +
                    " entries with padding on this matrix, "
                    "over the cap of " +
                    std::to_string(limits.max_stored_entries),
                program.format_line, 1);
  }
  return result;
}

std::optional<StaticCheckFailure> check_resources(const std::vector<ResolvedLaunch>& launches,
                                                  const CompileResult& compiled,
                                                  const ProgramLimits& limits) {
  if (compiled.global_bytes > 0) {
    return failure(Reason::global_state,
                   "the program keeps " + std::to_string(compiled.global_bytes) +
                       " bytes of module-scope device memory: state that outlives a launch. A "
                       "__device__ or static variable (perhaps behind a macro), or a "
                       "namespace-scope const / constexpr variable that device code uses, which "
                       "NVRTC places in global memory. Use #define or a local constexpr for "
                       "constants and __constant__ for tables",
                   0, 0);
  }
  std::int64_t spills = 0;
  for (const KernelFigures& k : compiled.kernels)
    spills += k.spill_store_bytes + k.spill_load_bytes;
  for (const ResolvedLaunch& l : launches) {
    const KernelFigures* k = compiled.kernel(l.kernel);
    if (k == nullptr) {
      return failure(Reason::undefined_kernel,
                     "kernel " + l.kernel +
                         " is not in the compiled program (is its name a "
                         "macro?)",
                     l.line, 1);
    }
    const std::int64_t smem = k->static_smem_bytes + l.smem_bytes;
    if (smem > limits.max_shared_bytes) {
      return failure(Reason::resource_limit,
                     "kernel " + l.kernel + " uses " + std::to_string(k->static_smem_bytes) +
                         " bytes of static + " + std::to_string(l.smem_bytes) +
                         " bytes of dynamic shared memory, over the limit of " +
                         std::to_string(limits.max_shared_bytes),
                     l.line, 1);
    }
    const std::int64_t threads = (static_cast<std::int64_t>(l.block) + 31) / 32 * 32;
    if (static_cast<std::int64_t>(k->registers) * threads > limits.max_registers_per_block ||
        k->registers > limits.max_registers_per_thread) {
      return failure(Reason::resource_limit,
                     "kernel " + l.kernel + " uses " + std::to_string(k->registers) +
                         " registers per thread; with block=" + std::to_string(l.block) +
                         " that is over the " + std::to_string(limits.max_registers_per_block) +
                         " registers of a block (use __launch_bounds__ or a smaller block)",
                     l.line, 1);
    }
  }
  if (limits.max_spill_bytes >= 0 && spills > limits.max_spill_bytes) {
    return failure(Reason::resource_limit,
                   "the kernels spill " + std::to_string(spills) +
                       " bytes (stores + loads), over the limit of " +
                       std::to_string(limits.max_spill_bytes),
                   0, 0);
  }
  return std::nullopt;
}

std::string compile_source(DType dtype, const Constants& constants, std::string_view program_text) {
  std::string source = render_prelude(dtype, constants);
  source += program_text;
  if (!source.empty() && source.back() != '\n') source += '\n';
  return source;
}

}  // namespace sparserl::reward
