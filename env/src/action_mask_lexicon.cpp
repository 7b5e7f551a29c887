// The syntax mask's tables (ActionMask::Tables), built once per vocabulary: every token sorted into
// a category with its words and roles (the lexicon: which spelling is a type word, a qualifier, a
// preprocessor keyword, a kernel-declaration word, ...), then what the rule tables of the other
// action_mask_*.cpp files give for it - its checks per row of the code-token rules, the masks and
// check lists that fill()'s fast path starts from, and each automaton's rule index with its
// candidate tokens - and the kernel declarations the ABI spells per format. Nothing here decides
// what is allowed: it files tokens and indexes rules.
#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>

#include "action_mask_internal.hpp"
#include "sparserl/reward/abi.hpp"
#include "sparserl/reward/program.hpp"

namespace sparserl::env {
namespace detail {
namespace {

// A spelling's part in the lexicon: its category, kernel-declaration word and parameter (pp role,
// function role) within its class. A class's row of empty text gives its other tokens' category.
struct Spelling {
  TokenClass cls;
  std::string_view text;
  Cat cat;
  std::uint8_t word = w_none;
  std::uint8_t param = 0;
};
constexpr Spelling kSpellings[] = {
    {TokenClass::special, "<pad>", Cat::pad},
    {TokenClass::special, "<bos>", Cat::bos},
    {TokenClass::special, "<eos>", Cat::eos},
    {TokenClass::special, "<num>", Cat::num},
    {TokenClass::special, "<eol>", Cat::eol},
    {TokenClass::special, "", Cat::macro_open},
    {TokenClass::directive, "<format>", Cat::format},
    {TokenClass::directive, "<launch>", Cat::launch},
    {TokenClass::directive, "C=", Cat::key_c},
    {TokenClass::directive, "sigma=", Cat::key_sigma},
    {TokenClass::directive, "R=", Cat::key_r},
    {TokenClass::directive, "grid=", Cat::key_grid},
    {TokenClass::directive, "block=", Cat::key_block},
    {TokenClass::directive, "", Cat::key_smem},
    {TokenClass::constant, "value_t", Cat::constant, w_value_t},
    {TokenClass::constant, "", Cat::constant},
    {TokenClass::keyword, "extern", Cat::keyword, w_extern},
    {TokenClass::keyword, "__global__", Cat::keyword, w_global},
    {TokenClass::keyword, "void", Cat::keyword, w_void},
    {TokenClass::keyword, "__launch_bounds__", Cat::keyword, w_bounds},
    {TokenClass::keyword, "const", Cat::keyword, w_const},
    {TokenClass::keyword, "int", Cat::keyword, w_int},
    {TokenClass::keyword, "__restrict__", Cat::keyword, w_restrict},
    {TokenClass::keyword, "__device__", Cat::keyword, w_device},
    {TokenClass::keyword, "template", Cat::keyword, w_template},
    {TokenClass::keyword, "define", Cat::keyword, w_none, pp_define},
    {TokenClass::keyword, "undef", Cat::keyword, w_none, pp_undef},
    {TokenClass::keyword, "if", Cat::keyword, w_none, pp_if},
    {TokenClass::keyword, "ifdef", Cat::keyword, w_none, pp_ifdef},
    {TokenClass::keyword, "ifndef", Cat::keyword, w_none, pp_ifndef},
    {TokenClass::keyword, "elif", Cat::keyword, w_none, pp_elif},
    {TokenClass::keyword, "else", Cat::keyword, w_none, pp_else},
    {TokenClass::keyword, "endif", Cat::keyword, w_none, pp_endif},
    {TokenClass::keyword, "pragma", Cat::keyword, w_none, pp_pragma},
    {TokenClass::keyword, "unroll", Cat::keyword, w_none, pp_unroll},
    {TokenClass::keyword, "nounroll", Cat::keyword, w_none, pp_nounroll},
    {TokenClass::keyword, "", Cat::keyword},
    {TokenClass::builtin, "ceil_div", Cat::builtin, w_none, fn_ceil_div},
    {TokenClass::builtin, "min", Cat::builtin, w_none, fn_min},
    {TokenClass::builtin, "max", Cat::builtin, w_none, fn_max},
    {TokenClass::builtin, "", Cat::builtin},
    {TokenClass::member, "", Cat::member},
    {TokenClass::local, "", Cat::local},
    {TokenClass::literal, "\"C\"", Cat::literal, w_linkage},
    {TokenClass::literal, "", Cat::literal},
    {TokenClass::digit, "", Cat::digit},
    {TokenClass::punct, "(", Cat::open_paren},
    {TokenClass::punct, "[", Cat::open_bracket},
    {TokenClass::punct, "{", Cat::open_brace},
    {TokenClass::punct, ")", Cat::close_paren},
    {TokenClass::punct, "]", Cat::close_bracket},
    {TokenClass::punct, "}", Cat::close_brace},
    {TokenClass::punct, ";", Cat::semi},
    {TokenClass::punct, ",", Cat::comma},
    {TokenClass::punct, "#", Cat::hash},
    {TokenClass::punct, ".", Cat::access},
    {TokenClass::punct, "->", Cat::access},
    {TokenClass::punct, "+", Cat::plus},
    {TokenClass::punct, "-", Cat::minus},
    {TokenClass::punct, "*", Cat::star},
    {TokenClass::punct, "/", Cat::slash},
    {TokenClass::punct, ">", Cat::punct_other, w_angle_close},
    {TokenClass::punct, "", Cat::punct_other},
};

// Where a new name may be declared in code (after a type, through declarator prefixes).
constexpr std::string_view kTypeWords[] = {
    "auto",    "bool",     "char",    "double",    "float",      "int",       "long",   "short",
    "signed",  "unsigned", "void",    "typedef",   "size_t",     "ptrdiff_t", "int8_t", "int16_t",
    "int32_t", "int64_t",  "uint8_t", "uint16_t",  "uint32_t",   "uint64_t",  "uint",   "dim3",
    "char2",   "char4",    "short2",  "short4",    "int2",       "int3",      "int4",   "uint2",
    "uint3",   "uint4",    "long2",   "longlong2", "ulonglong2", "float2",    "float3", "float4",
    "double2", "double3",  "double4", "value_t"};
constexpr std::string_view kTagWords[] = {"typename", "class", "struct",    "union",
                                          "enum",     "using", "namespace", "goto"};
constexpr std::string_view kKeepWords[] = {
    "const",    "volatile",   "__restrict__",    "static",       "constexpr",
    "register", "inline",     "__forceinline__", "__noinline__", "__device__",
    "__host__", "__shared__", "__constant__",    "extern",       "*",
    "&"};

// Keywords the grammar does not model, refused in code and on preprocessor lines (a macro body is
// code where it is expanded): user types and namespaces (the scopes would have to know their
// names), statements whose structure the rules do not track (switch / case / default, do ...
// while, goto and its labels), declarations that need what the rules cannot see (auto and
// constexpr need an initializer, register is gone from C++17), and words with no use in a kernel
// here, nullptr (NVRTC refused it in arithmetic: "expression must have arithmetic type"). No
// reference or design-space program writes any of them; random programs wrote them anywhere, and
// NVRTC refused those (docs/bpe.md, "The compile stage of random programs").
constexpr std::string_view kUnmodelledWords[] = {
    "alignas",  "alignof", "auto",     "case",     "class",     "constexpr", "const_cast",
    "decltype", "default", "do",       "enum",     "explicit",  "goto",      "namespace",
    "noexcept", "operator", "register", "static_assert", "struct", "switch",  "this",
    "typedef",  "typename", "union",   "using",    "__host__",  "__constant__", "__align__",
    "nullptr"};

// Type names of host headers that NVRTC does not know.
constexpr std::string_view kHostTypes[] = {"uint",    "int8_t",  "int16_t",  "int32_t", "int64_t",
                                           "uint8_t", "uint16_t", "uint32_t", "uint64_t"};

// Builtins of a vector type (uint3, dim3): a member follows them.
constexpr std::string_view kVectorBuiltins[] = {"threadIdx", "blockIdx", "blockDim", "gridDim"};
// Builtin functions that may be called without an argument; every other one needs one.
constexpr std::string_view kNullaryBuiltins[] = {
    "__syncthreads", "__syncwarp", "__threadfence", "__threadfence_block", "__threadfence_system",
    "__activemask"};

// Types. Integer and floating type words (the rest of kTypeWords but void are vectors); builtin
// functions overloaded for float and double alone (CUDA's math functions without their f suffix:
// an integer, bool or vector argument is ambiguous or matches none); builtins whose result may be
// floating (CUDA's float and double math and conversions, loads, shuffles, atomicAdd / atomicExch).
constexpr std::string_view kIntegralTypes[] = {"bool",  "char",   "int",    "long",     "short",
                                               "signed", "unsigned", "size_t", "ptrdiff_t"};
constexpr std::string_view kFloatingTypes[] = {"float", "double", "value_t"};
constexpr std::string_view kFloatingOverloads[] = {
    "fabs",  "fmin",  "fmax", "fma",   "sqrt",  "rsqrt", "cbrt", "exp",   "exp2",
    "log",   "log2",  "pow",  "sin",   "cos",   "ceil",  "floor", "round", "trunc",
    "rint",  "lrint", "llrint", "isnan", "isinf", "isfinite", "signbit", "copysign"};
constexpr std::string_view kFloatingResults[] = {
    "fabs",     "fabsf",      "fmin",       "fmax",       "fminf",          "fmaxf",
    "fma",      "fmaf",       "sqrt",       "sqrtf",      "rsqrt",          "rsqrtf",
    "cbrt",     "cbrtf",      "exp",        "expf",       "exp2",           "exp2f",
    "log",      "logf",       "log2",       "log2f",      "pow",            "powf",
    "sin",      "sinf",       "cos",        "cosf",       "ceil",           "ceilf",
    "floor",    "floorf",     "round",      "roundf",     "trunc",          "truncf",
    "rint",     "rintf",      "copysign",   "copysignf",  "fdividef",       "__fdividef",
    "__fdiv_rn", "__ddiv_rn", "__fadd_rn",  "__fsub_rn",  "__fmul_rn",      "__fmaf_rn",
    "__dadd_rn", "__dsub_rn", "__dmul_rn",  "__fma_rn",   "__frcp_rn",      "__drcp_rn",
    "__fsqrt_rn", "__dsqrt_rn", "__expf",   "__logf",     "__powf",         "__sinf",
    "__cosf",   "__saturatef", "__int2float_rn", "__uint2float_rn", "__int2double_rn",
    "__double2float_rn", "__int_as_float", "__uint_as_float", "__longlong_as_double",
    "__hiloint2double", "__ldg",  "__ldcg",     "__ldca",     "__ldcs",         "__ldlu",
    "__ldcv",   "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
    "atomicAdd", "atomicExch"};
// A declaration's specifiers and qualifiers, each at most once in it (TokenInfo::specifier); after
// a `*` / `&` the pointer's own qualifiers alone (kPointerQualifiers: NVRTC "expected an
// identifier" of `int* static`, `long& __device__`), each once per pointer.
constexpr std::string_view kSpecifierWords[] = {
    "const",      "volatile", "__restrict__", "static",   "extern",    "inline",
    "__forceinline__", "__noinline__", "__device__", "__host__", "__shared__", "__constant__",
    "register",   "constexpr", "typedef"};
constexpr std::string_view kPointerQualifiers[] = {"const", "volatile", "__restrict__"};
static_assert(std::size(kSpecifierWords) <= 16, "TokenInfo::specifier holds a bit per word");

// Builtin functions of no result (void).
constexpr std::string_view kVoidBuiltins[] = {
    "__syncthreads", "__syncwarp", "__threadfence", "__threadfence_block", "__threadfence_system",
    "__stcg",        "__stcs",     "__stwb",        "__stwt"};

// Operators of integer operands alone, of arithmetic ones (no pointer).
constexpr std::string_view kIntegralOperators[] = {"%",  "<<",  ">>",  "&",  "|",  "^",  "~",
                                                   "%=", "<<=", ">>=", "&=", "|=", "^="};
constexpr std::string_view kArithmeticOperators[] = {"*", "/", "*=", "/="};

// Builtin functions' argument counts (others: not known): no `,` past the most, no `)` before the
// least (the completion path writes the arguments missing).
struct Arity {
  std::string_view name;
  std::uint8_t least, most;
};
constexpr Arity kArities[] = {
    {"min", 2, 2}, {"max", 2, 2}, {"ceil_div", 2, 2}, {"abs", 1, 1}, {"labs", 1, 1},
    {"llabs", 1, 1}, {"fabs", 1, 1}, {"fabsf", 1, 1}, {"fmin", 2, 2}, {"fmax", 2, 2},
    {"fminf", 2, 2}, {"fmaxf", 2, 2}, {"fma", 3, 3}, {"fmaf", 3, 3}, {"sqrt", 1, 1},
    {"sqrtf", 1, 1}, {"rsqrt", 1, 1}, {"rsqrtf", 1, 1}, {"cbrt", 1, 1}, {"cbrtf", 1, 1},
    {"exp", 1, 1}, {"expf", 1, 1}, {"exp2", 1, 1}, {"exp2f", 1, 1}, {"log", 1, 1},
    {"logf", 1, 1}, {"log2", 1, 1}, {"log2f", 1, 1}, {"pow", 2, 2}, {"powf", 2, 2},
    {"sin", 1, 1}, {"sinf", 1, 1}, {"cos", 1, 1}, {"cosf", 1, 1}, {"ceil", 1, 1},
    {"ceilf", 1, 1}, {"floor", 1, 1}, {"floorf", 1, 1}, {"round", 1, 1}, {"roundf", 1, 1},
    {"trunc", 1, 1}, {"truncf", 1, 1}, {"rint", 1, 1}, {"rintf", 1, 1}, {"lrint", 1, 1},
    {"llrint", 1, 1}, {"isnan", 1, 1}, {"isinf", 1, 1}, {"isfinite", 1, 1}, {"signbit", 1, 1},
    {"copysign", 2, 2}, {"copysignf", 2, 2}, {"fdividef", 2, 2}, {"__fdividef", 2, 2},
    {"__expf", 1, 1}, {"__logf", 1, 1}, {"__powf", 2, 2}, {"__sinf", 1, 1}, {"__cosf", 1, 1},
    {"__saturatef", 1, 1}, {"__popc", 1, 1}, {"__popcll", 1, 1}, {"__clz", 1, 1},
    {"__clzll", 1, 1}, {"__ffs", 1, 1}, {"__ffsll", 1, 1}, {"__brev", 1, 1}, {"__brevll", 1, 1},
    {"__mul24", 2, 2}, {"__umul24", 2, 2}, {"__mulhi", 2, 2}, {"__umulhi", 2, 2},
    {"__float2int_rn", 1, 1}, {"__float2int_rz", 1, 1}, {"__float2uint_rn", 1, 1},
    {"__int2float_rn", 1, 1}, {"__uint2float_rn", 1, 1}, {"__double2int_rn", 1, 1},
    {"__double2int_rz", 1, 1}, {"__int2double_rn", 1, 1}, {"__double2float_rn", 1, 1},
    {"__float_as_int", 1, 1}, {"__int_as_float", 1, 1}, {"__float_as_uint", 1, 1},
    {"__uint_as_float", 1, 1}, {"__ldg", 1, 1}, {"atomicAdd", 2, 2}, {"atomicSub", 2, 2},
    {"atomicExch", 2, 2}, {"atomicMin", 2, 2}, {"atomicMax", 2, 2}, {"atomicAnd", 2, 2},
    {"atomicOr", 2, 2}, {"atomicXor", 2, 2}, {"atomicCAS", 3, 3}, {"__syncthreads", 0, 0},
    {"__threadfence", 0, 0}, {"__threadfence_block", 0, 0}, {"__threadfence_system", 0, 0},
    {"__activemask", 0, 0}, {"__syncwarp", 0, 1}, {"__shfl_sync", 3, 4},
    {"__shfl_up_sync", 3, 4}, {"__shfl_down_sync", 3, 4}, {"__shfl_xor_sync", 3, 4},
    {"__ballot_sync", 2, 2}, {"__any_sync", 2, 2}, {"__all_sync", 2, 2},
    {"__uni_sync", 2, 2}, {"__match_any_sync", 2, 2}, {"__match_all_sync", 3, 3},
    {"__reduce_add_sync", 2, 2}, {"__reduce_min_sync", 2, 2}, {"__reduce_max_sync", 2, 2},
    {"__reduce_and_sync", 2, 2}, {"__reduce_or_sync", 2, 2}, {"__reduce_xor_sync", 2, 2},
    {"__syncthreads_count", 1, 1}, {"__syncthreads_and", 1, 1}, {"__syncthreads_or", 1, 1},
    {"__ldcg", 1, 1}, {"__ldca", 1, 1}, {"__ldcs", 1, 1}, {"__ldlu", 1, 1}, {"__ldcv", 1, 1},
    {"__stcg", 2, 2}, {"__stcs", 2, 2}, {"__stwb", 2, 2}, {"__stwt", 2, 2},
    {"atomicInc", 2, 2}, {"atomicDec", 2, 2}, {"atomicAdd_block", 2, 2},
    {"atomicAdd_system", 2, 2}, {"__mul64hi", 2, 2}, {"__umul64hi", 2, 2}, {"__sad", 3, 3},
    {"__usad", 3, 3}, {"__byte_perm", 3, 3}, {"__funnelshift_l", 3, 3},
    {"__funnelshift_r", 3, 3}, {"__fdiv_rn", 2, 2}, {"__ddiv_rn", 2, 2}, {"__fadd_rn", 2, 2},
    {"__fsub_rn", 2, 2}, {"__fmul_rn", 2, 2}, {"__fmaf_rn", 3, 3}, {"__dadd_rn", 2, 2},
    {"__dsub_rn", 2, 2}, {"__dmul_rn", 2, 2}, {"__fma_rn", 3, 3}, {"__frcp_rn", 1, 1},
    {"__drcp_rn", 1, 1}, {"__fsqrt_rn", 1, 1}, {"__dsqrt_rn", 1, 1},
    {"__double_as_longlong", 1, 1}, {"__longlong_as_double", 1, 1}, {"__double2hiint", 1, 1},
    {"__double2loint", 1, 1}, {"__hiloint2double", 2, 2}, {"make_int2", 2, 2},
    {"make_int3", 3, 3}, {"make_int4", 4, 4}, {"make_uint2", 2, 2}, {"make_uint4", 4, 4},
    {"make_float2", 2, 2}, {"make_float3", 3, 3}, {"make_float4", 4, 4}, {"make_double2", 2, 2},
    {"make_double4", 4, 4}, {"make_longlong2", 2, 2}};

// Comparisons and logical operators (a bool result).
constexpr std::string_view kComparisons[] = {"<", ">", "<=", ">=", "==", "!=", "&&", "||", "?"};

// Prelude constants at least 1 on every matrix: K (1 for SpMV, k >= 1 for SpMM) and the formats'
// parameters (compute_constants refuses a spec out of range). The matrix's own may be 0.
constexpr std::string_view kPositiveConstants[] = {"K", "SELL_C", "SELL_SIGMA", "BSR_R", "BSR_C"};

// Qualifiers and specifiers a device function's declaration may have before its name.
constexpr std::string_view kFunctionQualifiers[] = {"const",    "volatile",        "static",
                                                    "inline",   "__forceinline__", "__noinline__",
                                                    "__host__", "__device__",      "constexpr"};

template <std::size_t N>
bool listed(const std::string_view (&words)[N], std::string_view text) {
  return std::find(std::begin(words), std::end(words), text) != std::end(words);
}

// A token's category, words and parameters from the lexicon (kSpellings), the format names and
// the formats' prelude constants.
TokenInfo classify(const Vocabulary& v, TokenId id) {
  const TokenSpec& t = v.token(id);
  TokenInfo k;
  for (const Spelling& s : kSpellings) {
    if (s.cls == t.cls && (s.text == t.text || s.text.empty())) {
      k.cat = s.cat;
      k.word = s.word;
      k.param = s.param;
      break;
    }
  }
  if (t.cls == TokenClass::directive && t.text != "<format>" && t.text != "<launch>") {
    if (auto f = reward::parse_format(t.text)) {
      k.cat = Cat::format_name;
      k.param = static_cast<std::uint8_t>(*f);
    }
  }
  if (k.cat == Cat::constant) {
    for (reward::Format f : reward::kFormats) {
      const auto names = reward::constant_names(f);
      if (std::find(names.begin(), names.end(), t.text) != names.end()) {
        k.param |= static_cast<std::uint8_t>(1u << static_cast<unsigned>(f));
      }
    }
  }
  if (k.cat == Cat::constant || k.cat == Cat::builtin) {
    k.width = static_cast<std::uint8_t>(std::min<std::size_t>(t.text.size(), 255));
  }
  // Constants at least 1 on every matrix (K, the format's parameters); the others may be 0.
  if (k.cat == Cat::constant && listed(kPositiveConstants, t.text)) k.least = 1;
  k.function_qual = t.cls == TokenClass::keyword && listed(kFunctionQualifiers, t.text);
  // `template` too: in a function it could only be `x.template f<...>`, which kernels never need.
  k.file_only = t.cls == TokenClass::keyword &&
                (t.text == "static" || t.text == "__device__" || t.text == "template" ||
                 t.text == "inline" || t.text == "__forceinline__" || t.text == "__noinline__");
  // `uint` and <cstdint>'s types are no CUDA types (host headers' typedefs): NVRTC knows no such
  // names. `::` scopes nothing the grammar has (no class, no namespace).
  k.unmodelled = (t.cls == TokenClass::keyword && listed(kUnmodelledWords, t.text)) ||
                 (t.cls == TokenClass::builtin && listed(kHostTypes, t.text)) ||
                 (t.cls == TokenClass::punct && t.text == "::");
  k.nullary = t.cls == TokenClass::builtin && listed(kNullaryBuiltins, t.text);
  k.arrow = t.cls == TokenClass::punct && t.text == "->";
  if (k.cat == Cat::member) k.param = static_cast<std::uint8_t>(t.text[0]);
  k.pp_operator = t.cls == TokenClass::keyword && t.text == "defined";
  k.floating_overload = t.cls == TokenClass::builtin && listed(kFloatingOverloads, t.text);
  k.compares = t.cls == TokenClass::punct && listed(kComparisons, t.text);
  k.integral_operator = t.cls == TokenClass::punct && listed(kIntegralOperators, t.text);
  k.arithmetic_operator = t.cls == TokenClass::punct && listed(kArithmeticOperators, t.text);
  k.relational = t.cls == TokenClass::punct &&
                 (t.text == "<" || t.text == ">" || t.text == "<=" || t.text == ">=");
  k.equality = t.cls == TokenClass::punct && (t.text == "==" || t.text == "!=");
  k.is_return = t.cls == TokenClass::keyword && t.text == "return";
  k.is_false = t.cls == TokenClass::keyword && t.text == "false";
  k.boolean = t.cls == TokenClass::keyword && t.text == "bool";
  // Builtins whose result is floating whatever their arguments (not __ldg, __shfl_sync, atomicAdd).
  const bool floating_builtin = t.cls == TokenClass::builtin && listed(kFloatingResults, t.text) &&
                                t.text.rfind("__ld", 0) != 0 && t.text.rfind("__shfl", 0) != 0 &&
                                t.text.rfind("atomic", 0) != 0;
  k.floating_value = floating_builtin || listed(kFloatingTypes, t.text);
  k.pointer_first = t.cls == TokenClass::builtin &&
                    (t.text.rfind("atomic", 0) == 0 || t.text.rfind("__ld", 0) == 0 ||
                     t.text.rfind("__st", 0) == 0);
  k.type_prefix = (t.cls == TokenClass::punct && (t.text == "!" || t.text == "~")) ||
                  (t.cls == TokenClass::keyword && t.text == "sizeof");
  if (t.cls == TokenClass::keyword) {
    const auto* word = std::find(std::begin(kSpecifierWords), std::end(kSpecifierWords), t.text);
    // (__forceinline__ is CUDA's `__inline__` and an attribute: `inline` twice.)
    if (t.text == "__forceinline__") word = std::find(std::begin(kSpecifierWords), word, "inline");
    if (word != std::end(kSpecifierWords)) {
      k.specifier = static_cast<std::uint16_t>(1u << (word - std::begin(kSpecifierWords)));
    }
  }
  k.condition = t.cls == TokenClass::keyword && (t.text == "if" || t.text == "while");
  k.for_loop = t.cls == TokenClass::keyword && t.text == "for";
  k.loop = t.cls == TokenClass::keyword && t.text == "while";
  k.jump = t.cls == TokenClass::keyword && (t.text == "continue" || t.text == "break");
  k.is_else = t.cls == TokenClass::keyword && t.text == "else";
  if (t.cls == TokenClass::punct) k.ternary = t.text == "?" ? 1 : t.text == ":" ? 2 : 0;
  k.divides = t.cls == TokenClass::punct && (t.text == "/" || t.text == "%");
  k.shifts = t.cls == TokenClass::punct && (t.text == "<<" || t.text == ">>");
  k.shift_assigns = t.cls == TokenClass::punct && (t.text == "<<=" || t.text == ">>=");
  for (const Arity& a : kArities) {
    if (t.cls == TokenClass::builtin && a.name == t.text) {
      k.max_args = a.most;
      k.min_args = a.least;
      // (Its arguments are values but an atomic's, a load's or a store's first, a pointer.)
      k.value_arguments = a.most > 0 && t.text.rfind("atomic", 0) != 0 &&
                          t.text.rfind("__ld", 0) != 0 && t.text.rfind("__st", 0) != 0;
    }
  }
  k.assigns = t.cls == TokenClass::punct && t.text.size() >= 1 && t.text.back() == '=' &&
              t.text != "==" && t.text != "!=" && t.text != "<=" && t.text != ">=";
  k.plain_assign = t.cls == TokenClass::punct && t.text == "=";
  k.shared = t.cls == TokenClass::keyword && t.text == "__shared__";
  k.constructed = t.text == "dim3";
  if (k.cat == Cat::local) k.local = v.local_index(id);
  if (k.cat == Cat::digit) k.param = static_cast<std::uint8_t>(t.text[0]);
  if (t.cls == TokenClass::keyword || t.cls == TokenClass::builtin ||
      t.cls == TokenClass::constant || t.cls == TokenClass::punct) {
    k.naming = listed(kTagWords, t.text)    ? TokenInfo::naming_tag
               : listed(kKeepWords, t.text) ? TokenInfo::naming_keep
               : listed(kTypeWords, t.text) ? TokenInfo::naming_type
                                            : TokenInfo::naming_none;
  }
  return k;
}

// A token's role, type part and follow set in the type-word rules. After its category and naming.
// The follow sets also alternate operands and operators: an operand or a unary operator where
// one may start (kOperandStart), a binary operator after an operand (kAfterOperand), statements'
// keywords where a statement may start.
void assign_role(const TokenSpec& spec, TokenInfo& k) {
  constexpr auto bit = [](int ctx) { return std::uint64_t{1} << ctx; };
  constexpr std::uint64_t kType = bit(ctx_type), kPtr = bit(ctx_ptr), kCall = bit(ctx_cast_call),
                          kDeclared = bit(ctx_declared), kQual = bit(ctx_qual),
                          kStart = bit(ctx_start), kParen = bit(ctx_paren);
  constexpr std::uint64_t kOperandStart = kStart | bit(ctx_expr) | bit(ctx_operand_due) | kParen |
                                          bit(ctx_args) | bit(ctx_group) | bit(ctx_sizeof);
  // (Not after ctx_paren: NVRTC's "expected an expression" of `if (c) = 1`, `while (c) [`.)
  constexpr std::uint64_t kAfterOperand =
      bit(ctx_operand) | bit(ctx_callable) | bit(ctx_value) | bit(ctx_pointer) | bit(ctx_element) |
      bit(ctx_const_element) | bit(ctx_result) | bit(ctx_call_result);
  // An assignment, ++ / -- after a variable or a writable element.
  constexpr std::uint64_t kAfterLvalue =
      bit(ctx_operand) | bit(ctx_pointer) | bit(ctx_element) | bit(ctx_result);
  constexpr std::uint64_t kDeref = bit(ctx_deref) | bit(ctx_address);
  constexpr std::uint64_t kAll = (std::uint64_t{1} << kContexts) - 1;
  // Where an operand, a parenthesis or a member is due the completion path writes it first.
  constexpr std::uint64_t kClosers = kAll & ~bit(ctx_operand_due) & ~bit(ctx_cond) &
                                     ~bit(ctx_call) & ~bit(ctx_call_args) & ~bit(ctx_member) & ~kCall &
                                     ~bit(ctx_group) & ~bit(ctx_for) & ~bit(ctx_cast_kw) &
                                     ~bit(ctx_cast_type) & ~kDeref & ~bit(ctx_sizeof) &
                                     ~bit(ctx_extern) & ~bit(ctx_subscript_due);
  const std::string& w = spec.text;
  const bool word = spec.cls == TokenClass::keyword || spec.cls == TokenClass::builtin ||
                    spec.cls == TokenClass::constant;
  const bool punct = spec.cls == TokenClass::punct;
  const bool keyword = spec.cls == TokenClass::keyword;
  k.follows = kOperandStart;
  if (word && k.naming == TokenInfo::naming_type && w != "typedef") {
    k.role = role_type;
    k.type_cat = listed(kIntegralTypes, w) ? type_integral
                 : listed(kFloatingTypes, w) ? type_floating
                 : w == "void"               ? type_unknown
                                             : type_vector;
    k.starts_no_floating = k.type_cat != type_floating;  // `int(`, `dim3(`, `void`
    k.type_bits = w == "long"                        ? kRunLong
                  : w == "short"                     ? kRunShort
                  : w == "signed" || w == "unsigned" ? kRunSign
                  : w == "int"                       ? kRunInt
                  : w == "char"                      ? kRunChar
                                                     : kRunSingle;
    return;
  }
  if (w == "*" || w == "&") {
    k.role = role_ptr;
    k.follows = kOperandStart | kAfterOperand | kType | kPtr;
  } else if (word && (k.naming == TokenInfo::naming_keep || w == "typedef")) {
    k.role = role_qual;
    k.follows = kStart | kQual | kType | kPtr | kParen | bit(ctx_group) | bit(ctx_cast_type);
    if (w == "__restrict__") k.follows = kPtr;  // of a pointer alone
    if (!listed(kPointerQualifiers, w)) k.follows &= ~kPtr;
    // `extern` where a statement starts, `extern __shared__` (NVRTC: "a storage class may not be
    // specified here" of `const extern`; a host variable of `extern int v;` in a function).
    if (w == "extern") k.follows = kStart;
    if (w == "__shared__") k.follows |= bit(ctx_extern);
  } else if (word && (w == "static_cast" || w == "reinterpret_cast" || w == "const_cast" ||
                      w == "dynamic_cast" || w == "template")) {
    k.role = role_cast_kw;
    k.follows |= kDeref;  // *reinterpret_cast<const float4*>(p)
    k.reinterpret = w == "reinterpret_cast";
  } else if (w == "<" && punct) {
    k.role = role_lt;
    k.follows = kAfterOperand | bit(ctx_cast_kw);
  } else if (punct &&
             (w == "(" || w == "," || w == ";" || w == "{" || w == "}" || w == ")" || w == ":")) {
    k.role = role_start;
    // A call after a file-scope name or a builtin function (a block's names are no functions).
    if (w == "(") k.follows = kOperandStart | bit(ctx_callable) | bit(ctx_call) |
                              bit(ctx_call_args) | kType | kPtr | kDeref |
                              kCall | kDeclared | bit(ctx_cond) | bit(ctx_for);
    if (w == "{") k.follows = kStart | kParen | kType | kCall | kDeclared;
    if (w == ",") k.follows = kAfterOperand | kDeclared | kType | kPtr | bit(ctx_initialized);
    // Wherever a call's `)` may close it, its missing arguments' `,` (the completion path's; its
    // check allows it there only before a builtin's last argument).
    if (w == ",") k.follows |= kStart | kQual | bit(ctx_expr) | bit(ctx_args);
    // `:` closes a `?` (its check): wherever its `)` might close a parenthesis, as the completion
    // path needs, so not where an operand is due (`a ? :`).
    if (w == ":") k.follows = kClosers;
  } else if (keyword && (w == "else" || w == "do")) {
    k.role = role_start;
    k.follows = kStart;
  } else if (punct && (w == "++" || w == "--")) {
    k.role = role_incdec;
    k.follows = kOperandStart | kAfterLvalue;
  } else if (punct && (w == "!" || w == "~")) {
    k.role = role_operator;
  } else if (punct && (w == "+" || w == "-")) {
    k.role = role_operator;
    k.follows = kOperandStart | kAfterOperand;
  } else if (keyword && w == "sizeof") {
    k.role = role_operator;  // an operand (or its parenthesised type) follows
  } else if (k.cat == Cat::builtin && listed(kVectorBuiltins, w)) {
    k.role = role_vector;
  } else if (k.cat == Cat::builtin && w != "warpSize") {
    k.role = role_function;
    // A call of no result stands where a statement starts (after `;`, a block's braces, a
    // condition's `)`, else).
    k.void_result = listed(kVoidBuiltins, w);
    if (k.void_result) k.follows = kStart | kParen;
    k.vector_result = w.rfind("make_", 0) == 0;
  } else if (k.cat == Cat::num || k.cat == Cat::member || k.cat == Cat::literal ||
             k.cat == Cat::constant || k.cat == Cat::builtin || (punct && w == "]") ||
             (keyword && (w == "true" || w == "false" || w == "nullptr" || w == "this"))) {
    k.role = role_operand;
  } else if (punct && w != "[" && w != "::" && w != "." && w != "->" && w != "#") {
    k.role = role_operator;  // binary: = == != > <= >= && || / % ^ | << >> op= ?
    k.follows = kAfterOperand;
    if (w == "=") k.follows |= kDeclared;
    if (k.assigns) k.follows &= kAfterLvalue | kDeclared;
    if (w == ">") k.follows |= kType | kPtr | kDeclared | kQual;  // `<int>`, `<int G>`, `<int const>`
  } else {
    k.role = role_other;
    // `[` `.` `->` `::` after an operand (`[` also in a declarator); a statement's keywords where
    // a statement may start; sizeof where an operand may.
    if (punct) k.follows = kAfterOperand | (w == "[" ? kDeclared : 0);
    // A subscript of a pointer, an array or an element (of a 2-D array).
    if (w == "[") {
      k.follows = bit(ctx_pointer) | bit(ctx_element) | bit(ctx_const_element) | kDeclared |
                  bit(ctx_result) | bit(ctx_call_result) | bit(ctx_subscript_due);
    }
    // `.` after a variable, an element, threadIdx & co (not a number, a constant, a pointer or a
    // function, nor a call's or a group's value - `int().x`, `(b).x`: NVRTC's "expression must
    // have class type"); `->` after a pointer or a call's or a group's value (a cast's pointer).
    if (k.cat == Cat::access) {
      k.follows = w == "." ? bit(ctx_operand) | bit(ctx_element) | bit(ctx_const_element) |
                                 bit(ctx_member)
                           : bit(ctx_pointer) | bit(ctx_result) | bit(ctx_call_result) |
                                 bit(ctx_subscript_due);
    }
    if (keyword && w != "sizeof") k.follows = kStart | kParen;
  }
  if (k.cat == Cat::local) k.follows = kOperandStart | kQual | kType | kPtr | kDeref;
  // What starts no floating value (locals: their declared type decides; numbers: the completion
  // path writes one).
  k.starts_no_floating = (k.cat == Cat::constant && k.word != w_value_t) ||
                         k.cat == Cat::literal || k.role == role_vector ||
                         (k.cat == Cat::builtin && k.role != role_function) ||
                         (k.role == role_function && !listed(kFloatingResults, w)) ||
                         (keyword && (w == "true" || w == "false" || w == "sizeof" ||
                                      w == "nullptr" || w == "this")) ||
                         (punct && (w == "!" || w == "~" || w == "&"));
  // The completion path's tokens follow anything but where an operand or `(` is due.
  if (k.cat == Cat::close_paren || k.cat == Cat::close_bracket || k.cat == Cat::close_brace ||
      k.cat == Cat::semi) {
    k.follows = kClosers;
  }
  if (k.cat == Cat::hash || k.cat == Cat::eol || k.cat == Cat::eos) k.follows = kAll;
}

// Effect classes: tokens that change the state alike, whatever their text (the budget check
// tries one of each). Returns the number of classes.
int assign_effects(std::vector<TokenInfo>& info) {
  std::map<std::tuple<int, int, int, int, int>, int> effect_of;
  for (TokenInfo& k : info) {
    int param = k.param;
    int width = 0;
    if (k.cat == Cat::local || k.cat == Cat::member || k.cat == Cat::literal) param = 0;
    if (k.cat == Cat::keyword && k.param == pp_none) param = 0;
    if (k.cat == Cat::builtin && k.param != fn_none) width = k.width;
    if (k.cat == Cat::builtin && k.param == fn_none) param = 0;
    if (k.cat == Cat::constant) width = k.width + 256 * k.least;  // its format mask and range
    // Its role in the type-word rules too: what finishes a file-scope declaration depends on it.
    const auto key =
        std::make_tuple(static_cast<int>(k.cat), param, width, int{k.word},
                        k.role * 8 + (k.function_qual ? 1 : 0) + (k.condition ? 2 : 0) +
                            (k.for_loop ? 4 : 0) + (k.nullary ? 128 : 0) + k.ternary * 256 +
                            (k.shifts ? 1024 : 0) +             // a shift count costs 2
                            k.min_args * 2048 +                 // and missing arguments 3 each
                            (k.floating_overload ? 8192 : 0) +  // and `0.` a digit more
                            // a floating or vector type in reinterpret_cast's
                            // angle makes `*` due
                            k.type_cat * 16384);
    k.effect = effect_of.emplace(key, static_cast<int>(effect_of.size())).first->second;
  }
  return static_cast<int>(effect_of.size());
}

}  // namespace

Verdict allow(const Tables&, const State&, const TokenInfo&) { return Verdict::allow; }
Verdict pass(const Tables&, const State&, const TokenInfo&) { return Verdict::pass; }

RuleIndex::RuleIndex(std::span<const Rule> rules, int states, const std::vector<TokenInfo>& info)
    : rules_(static_cast<std::size_t>(states * kCats), nullptr),
      candidates_(static_cast<std::size_t>(states)),
      passes_all_(static_cast<std::size_t>(states), true) {
  for (int at = 0; at < states; ++at) {
    for (int c = 0; c < kCats; ++c) {
      const Rule*& slot = rules_[static_cast<std::size_t>(at * kCats + c)];
      for (const Rule& rule : rules) {
        if (((rule.at >> at) & 1u) != 0 && ((rule.cats >> c) & 1u) != 0) {
          slot = &rule;
          break;
        }
      }
      if (slot == nullptr || slot->judge != &pass) {
        passes_all_[static_cast<std::size_t>(at)] = false;
      }
    }
    for (std::size_t i = 0; i < info.size(); ++i) {
      if (find(at, info[i].cat) != nullptr) {
        candidates_[static_cast<std::size_t>(at)].push_back(static_cast<TokenId>(i));
      }
    }
  }
}

}  // namespace detail

using namespace detail;

namespace {

// The kernel declarations the ABI spells per format (Tables::kernel_params, declaration_tokens,
// max_delta), and the check that the shortest program is kMinSyntaxTokens long.
void declare_kernels(Tables& t) {
  for (reward::Format f : reward::kFormats) {
    const auto& args = reward::signature(reward::Op::spmv, f).args;
    const auto& spmm = reward::signature(reward::Op::spmm, f).args;
    if (args.size() != spmm.size() ||
        !std::equal(args.begin(), args.end(), spmm.begin(),
                    [](const auto& a, const auto& b) { return a.kind == b.kind; })) {
      throw std::logic_error("action mask: SpMV and SpMM kernels of format " +
                             std::string(reward::to_string(f)) +
                             " differ in argument kinds; the mask's declaration needs the op");
    }
    std::vector<Forced>& seq = t.kernel_params[static_cast<std::size_t>(f)];
    seq.push_back({Cat::open_paren});
    for (std::size_t a = 0; a < args.size(); ++a) {
      if (a > 0) seq.push_back({Cat::comma});
      if (args[a].kind != reward::ArgKind::output_array) seq.push_back({Cat::keyword, w_const});
      if (args[a].kind == reward::ArgKind::index_array) {
        seq.push_back({Cat::keyword, w_int});
      } else {
        seq.push_back({Cat::constant, w_value_t});
      }
      seq.push_back({Cat::star});
      seq.push_back({Cat::keyword, w_restrict});
      seq.push_back({Cat::local});
    }
    seq.push_back({Cat::close_paren});
    seq.push_back({Cat::open_brace});
    if (args.size() + 1 > static_cast<std::size_t>(kMaxDeclNames)) {
      throw std::logic_error("action mask: a kernel of more than 7 parameters");
    }
    int& tokens = t.declaration_tokens[static_cast<std::size_t>(f)];
    tokens = 5 + static_cast<int>(seq.size()) + 1;
    t.max_delta = std::max(t.max_delta, tokens + kMaxDelta);
  }
  // The shortest program: a format line, one launch line, the launched kernel empty, <eos>.
  int shortest = std::numeric_limits<int>::max();
  for (reward::Format f : reward::kFormats) {
    const int format_line = is_param_format(static_cast<int>(f)) ? 9 : 3;
    const int declaration = t.declaration_tokens[static_cast<std::size_t>(f)];
    shortest = std::min(shortest, format_line + kLaunchLineTokens + declaration + 1);
  }
  if (shortest != kMinSyntaxTokens) {
    throw std::logic_error("action mask: the shortest program is " + std::to_string(shortest) +
                           " tokens, kMinSyntaxTokens says " + std::to_string(kMinSyntaxTokens));
  }
}

}  // namespace

ActionMask::Tables::Tables(const Vocabulary& v) {
  const std::size_t n = v.size();
  locals = v.locals();
  for (std::size_t i = 0; i < n; ++i) {
    info.push_back(classify(v, static_cast<TokenId>(i)));
    assign_role(v.token(static_cast<TokenId>(i)), info.back());
  }
  effects = assign_effects(info);
  // fill()'s fast path: per row the tokens that need no look at the state, and those that do.
  for (int row = 0; row < kRows; ++row) {
    unchecked[static_cast<std::size_t>(row)].assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      TokenInfo& k = info[i];
      const std::uint8_t checks = code_checks(k, row);
      k.checks[static_cast<std::size_t>(row)] = checks;
      if (checks == 0) unchecked[static_cast<std::size_t>(row)][i] = 1;
      if (checks != 0 && (checks & kRefused) == 0 && k.cat != Cat::local) {
        checked[static_cast<std::size_t>(row)].push_back(static_cast<TokenId>(i));
      }
    }
  }
  for (int i = 0; i < locals; ++i) local_ids.push_back(v.local(i));
  directives = RuleIndex(directive_rules(), kPhases, info);
  expressions = RuleIndex(expression_rules(), kExprStates, info);
  numbers = RuleIndex(number_rules(), kNumStates, info);
  lines = RuleIndex(line_rules(), kPpStates, info);
  declarations = RuleIndex(declaration_rules(), kDeclStates, info);
  fields = RuleIndex(field_rules(), 1, info);
  files = RuleIndex(file_rules(), kTopStates, info);
  for (std::size_t i = 0; i < n; ++i) {
    if (info[i].file_only) file_only_ids.push_back(static_cast<TokenId>(i));
    if (info[i].jump) jump_ids.push_back(static_cast<TokenId>(i));
    if (info[i].is_else) else_ids.push_back(static_cast<TokenId>(i));
    if (info[i].starts_no_floating) no_floating_ids.push_back(static_cast<TokenId>(i));
    if (info[i].compares) compare_ids.push_back(static_cast<TokenId>(i));
    if (info[i].specifier != 0) specifier_ids.push_back(static_cast<TokenId>(i));
    if (info[i].role == role_ptr) pointer_ids.push_back(static_cast<TokenId>(i));
    if (info[i].integral_operator || info[i].arithmetic_operator || info[i].relational) {
      operator_ids.push_back(static_cast<TokenId>(i));
    }
    if (info[i].floating_value) floating_value_ids.push_back(static_cast<TokenId>(i));
    if (info[i].cat == Cat::builtin) builtin_ids.push_back(static_cast<TokenId>(i));
    if (info[i].role == role_type || info[i].role == role_qual) {
      type_ids.push_back(static_cast<TokenId>(i));
    }
    if (info[i].arrow) arrow_ids.push_back(static_cast<TokenId>(i));
    if (info[i].cat == Cat::access) access_ids.push_back(static_cast<TokenId>(i));
    if (info[i].assigns && info[i].role == role_operator) {
      assign_ids.push_back(static_cast<TokenId>(i));
    }
  }
  declare_kernels(*this);
  eos = v.eos();
}

}  // namespace sparserl::env
