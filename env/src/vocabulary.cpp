// The fixed token lists, the vocabulary file format and its digest. The lists are the vocabulary's
// stable core; the corpus adds the builtins it uses that are missing here (Vocabulary::build's
// extra_builtins). Order matters: token ids are positions, so the lists are only ever appended to,
// and only in a new vocabulary version.
#include "sparserl/env/vocabulary.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "sparserl/datasets/enum_names.hpp"
#include "sparserl/reward/abi.hpp"
#include "sparserl/reward/digest.hpp"

namespace sparserl::env {

// The committed standard vocabulary's text (generated into the build tree from env/vocab/).
extern const char* const kStandardVocabularyText;

namespace {

std::string key(TokenClass cls, std::string_view text) {
  std::string k(to_string(cls));
  k += '\x1f';
  k += text;
  return k;
}

VocabularyLists make_lists() {
  VocabularyLists l;
  l.keywords = {// C and C++
                "alignas", "alignof", "auto", "bool", "break", "case", "char", "class", "const",
                "constexpr", "const_cast", "continue", "decltype", "default", "do", "double",
                "else", "enum", "explicit", "extern", "false", "float", "for", "goto", "if",
                "inline", "int", "long", "namespace", "noexcept", "nullptr", "operator", "register",
                "reinterpret_cast", "return", "short", "signed", "sizeof", "static",
                "static_assert", "static_cast", "struct", "switch", "template", "this", "true",
                "typedef", "typename", "union", "unsigned", "using", "void", "volatile", "while",
                // CUDA
                "__global__", "__device__", "__host__", "__shared__", "__constant__",
                "__restrict__", "__forceinline__", "__noinline__", "__launch_bounds__", "__align__",
                // preprocessor words (if / else are above)
                "define", "undef", "ifdef", "ifndef", "elif", "endif", "pragma", "unroll",
                "nounroll", "defined"};
  l.builtins = {
      // built-in variables
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize",
      // types
      "size_t", "ptrdiff_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
      "uint32_t", "uint64_t", "uint", "dim3", "char2", "char4", "short2", "short4", "int2", "int3",
      "int4", "uint2", "uint3", "uint4", "long2", "longlong2", "ulonglong2", "float2", "float3",
      "float4", "double2", "double3", "double4", "make_int2", "make_int3", "make_int4",
      "make_uint2", "make_uint4", "make_float2", "make_float3", "make_float4", "make_double2",
      "make_double4", "make_longlong2",
      // synchronisation and warp primitives
      "__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or", "__syncwarp",
      "__threadfence", "__threadfence_block", "__threadfence_system", "__activemask", "__shfl_sync",
      "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync", "__any_sync",
      "__all_sync", "__uni_sync", "__match_any_sync", "__match_all_sync", "__reduce_add_sync",
      "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync", "__reduce_or_sync",
      "__reduce_xor_sync",
      // cache-controlled loads and stores
      "__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv", "__stcg", "__stcs", "__stwb",
      "__stwt",
      // atomics
      "atomicAdd", "atomicSub", "atomicExch", "atomicMin", "atomicMax", "atomicInc", "atomicDec",
      "atomicCAS", "atomicAnd", "atomicOr", "atomicXor", "atomicAdd_block", "atomicAdd_system",
      // integer intrinsics
      "__popc", "__popcll", "__clz", "__clzll", "__ffs", "__ffsll", "__brev", "__brevll", "__mul24",
      "__umul24", "__mulhi", "__umulhi", "__mul64hi", "__umul64hi", "__sad", "__usad",
      "__byte_perm", "__funnelshift_l", "__funnelshift_r",
      // math
      "min", "max", "abs", "labs", "llabs", "fabs", "fabsf", "fmin", "fmax", "fminf", "fmaxf",
      "fma", "fmaf", "sqrt", "sqrtf", "rsqrt", "rsqrtf", "cbrt", "cbrtf", "exp", "expf", "exp2",
      "exp2f", "log", "logf", "log2", "log2f", "pow", "powf", "sin", "sinf", "cos", "cosf", "ceil",
      "ceilf", "floor", "floorf", "round", "roundf", "trunc", "truncf", "rint", "rintf", "lrint",
      "llrint", "isnan", "isinf", "isfinite", "signbit", "copysign", "copysignf", "fdividef",
      "__fdividef", "__fdiv_rn", "__ddiv_rn", "__fadd_rn", "__fsub_rn", "__fmul_rn", "__fmaf_rn",
      "__dadd_rn", "__dsub_rn", "__dmul_rn", "__fma_rn", "__frcp_rn", "__drcp_rn", "__fsqrt_rn",
      "__dsqrt_rn", "__expf", "__logf", "__powf", "__sinf", "__cosf", "__saturatef",
      // conversions and reinterpretations
      "__float2int_rn", "__float2int_rz", "__float2uint_rn", "__int2float_rn", "__uint2float_rn",
      "__double2int_rn", "__double2int_rz", "__int2double_rn", "__double2float_rn",
      "__float_as_int", "__int_as_float", "__float_as_uint", "__uint_as_float",
      "__double_as_longlong", "__longlong_as_double", "__double2hiint", "__double2loint",
      "__hiloint2double",
      // the launch-expression function (min and max are above)
      "ceil_div"};
  l.members = {"x", "y", "z", "w"};
  l.punctuators = {"{",  "}",  "[",  "]",  "(",  ")",  ";",   ":",   "::", "?",  ".",  "->",
                   ",",  "+",  "-",  "*",  "/",  "%",  "^",   "&",   "|",  "~",  "!",  "=",
                   "<",  ">",  "<=", ">=", "==", "!=", "&&",  "||",  "<<", ">>", "+=", "-=",
                   "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--", "#"};
  for (char c = '0'; c <= '9'; ++c) l.digits.emplace_back(1, c);
  for (char c = 'a'; c <= 'f'; ++c) l.digits.emplace_back(1, c);
  for (char c = 'A'; c <= 'F'; ++c) l.digits.emplace_back(1, c);
  for (const char* c : {"x", "X", ".", "u", "U", "l", "L", "+", "-"}) l.digits.emplace_back(c);
  return l;
}

constexpr std::string_view kFileMagic = "sparserl-vocab";

constexpr auto kTokenClassNames = datasets::enum_names<TokenClass::special, TokenClass::local>(
    {"special", "directive", "constant", "keyword", "builtin", "member", "punct", "digit",
     "literal", "local"});

}  // namespace

std::string_view to_string(TokenClass cls) { return kTokenClassNames.name(cls); }
std::optional<TokenClass> parse_token_class(std::string_view text) {
  return kTokenClassNames.parse(text);
}

const VocabularyLists& fixed_vocabulary_lists() {
  static const VocabularyLists lists = make_lists();
  return lists;
}

Vocabulary Vocabulary::build(const VocabularyOptions& options) {
  if (options.locals < 1 || options.locals > 4096) {
    throw std::invalid_argument("vocabulary " + options.name + ": locals must be in 1..4096, got " +
                                std::to_string(options.locals));
  }
  const VocabularyLists& l = fixed_vocabulary_lists();
  std::vector<TokenSpec> t;
  for (const char* s : {"<pad>", "<bos>", "<eos>", "<num>", "<eol>", "<macro(>"}) {
    t.push_back({TokenClass::special, s});
  }
  for (const char* s : {"<format>", "<launch>"}) t.push_back({TokenClass::directive, s});
  for (reward::Format f : reward::kFormats) {
    t.push_back({TokenClass::directive, std::string(reward::to_string(f))});
  }
  for (const char* s : {"C=", "sigma=", "R=", "grid=", "block=", "smem="}) {
    t.push_back({TokenClass::directive, s});
  }
  t.push_back({TokenClass::constant, "value_t"});
  for (const reward::ConstantInfo& c : reward::constant_infos()) {
    t.push_back({TokenClass::constant, std::string(c.name)});
  }
  for (const std::string& s : l.keywords) t.push_back({TokenClass::keyword, s});
  std::vector<std::string> builtins = l.builtins;
  std::vector<std::string> extra = options.extra_builtins;
  std::sort(extra.begin(), extra.end());
  extra.erase(std::unique(extra.begin(), extra.end()), extra.end());
  for (const std::string& s : extra) {
    if (std::find(builtins.begin(), builtins.end(), s) == builtins.end()) builtins.push_back(s);
  }
  for (const std::string& s : builtins) t.push_back({TokenClass::builtin, s});
  for (const std::string& s : l.members) t.push_back({TokenClass::member, s});
  for (const std::string& s : l.punctuators) t.push_back({TokenClass::punct, s});
  for (const std::string& s : l.digits) t.push_back({TokenClass::digit, s});
  t.push_back({TokenClass::literal, "\"C\""});
  for (int i = 0; i < options.locals; ++i)
    t.push_back({TokenClass::local, "v" + std::to_string(i)});
  return Vocabulary(options.name, std::move(t));
}

const Vocabulary& Vocabulary::standard() {
  static const Vocabulary vocabulary =
      parse(kStandardVocabularyText, "the standard vocabulary compiled into sparserl_env");
  return vocabulary;
}

Vocabulary::Vocabulary(std::string name, std::vector<TokenSpec> tokens)
    : name_(std::move(name)), tokens_(std::move(tokens)) {
  digest_ = compute_digest(tokens_);
  local_index_.assign(tokens_.size(), -1);
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    const TokenSpec& t = tokens_[i];
    const auto id = static_cast<TokenId>(i);
    if (t.text.empty() || t.text.find_first_of(" \t\r\n\x1f") != std::string::npos) {
      throw VocabularyError("vocabulary " + name_ + ": token " + std::to_string(i) +
                            " has an empty text or a blank in it");
    }
    if (!index_.emplace(key(t.cls, t.text), id).second) {
      throw VocabularyError("vocabulary " + name_ + ": token '" + std::string(to_string(t.cls)) +
                            " " + t.text + "' is listed twice");
    }
    if (t.cls == TokenClass::local) {
      if (t.text != "v" + std::to_string(local_ids_.size())) {
        throw VocabularyError("vocabulary " + name_ +
                              ": locals must be v0, v1, ... in order, got " + t.text);
      }
      local_index_[i] = static_cast<int>(local_ids_.size());
      local_ids_.push_back(id);
    }
  }
  const auto need = [&](const char* text) {
    const auto found = find(TokenClass::special, text);
    if (!found) throw VocabularyError("vocabulary " + name_ + " lacks the special token " + text);
    return *found;
  };
  pad_ = need("<pad>");
  bos_ = need("<bos>");
  eos_ = need("<eos>");
  num_ = need("<num>");
  eol_ = need("<eol>");
  macro_open_ = need("<macro(>");
  if (local_ids_.empty()) throw VocabularyError("vocabulary " + name_ + " has no local tokens");
}

std::string Vocabulary::compute_digest(const std::vector<TokenSpec>& tokens) {
  reward::Sha256 sha;
  for (const TokenSpec& t : tokens) {
    sha.update(to_string(t.cls));
    sha.update(" ");
    sha.update(t.text);
    sha.update("\n");
  }
  return sha.finish_hex();
}

std::optional<TokenId> Vocabulary::find(TokenClass cls, std::string_view text) const {
  const auto it = index_.find(key(cls, text));
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

TokenId Vocabulary::id(TokenClass cls, std::string_view text) const {
  if (auto found = find(cls, text)) return *found;
  throw std::out_of_range("vocabulary " + name_ + " has no token '" + std::string(to_string(cls)) +
                          " " + std::string(text) + "'");
}

std::string Vocabulary::describe(TokenId id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size()) {
    return "token id " + std::to_string(id) + " (outside the vocabulary of " +
           std::to_string(tokens_.size()) + ")";
  }
  const TokenSpec& t = tokens_[static_cast<std::size_t>(id)];
  return std::string(to_string(t.cls)) + " " + t.text;
}

int Vocabulary::local_index(TokenId id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= local_index_.size()) return -1;
  return local_index_[static_cast<std::size_t>(id)];
}

void Vocabulary::require_digest(std::string_view expected, std::string_view what) const {
  if (expected != digest_) {
    throw VocabularyError(std::string(what) + " was made with a vocabulary of digest " +
                          std::string(expected) + ", but vocabulary " + name_ + " has digest " +
                          digest_ + ": token ids would not mean the same tokens");
  }
}

std::string Vocabulary::serialize() const {
  std::string s;
  s += "# SparseRL Gym token vocabulary. One token per line, \"CLASS TEXT\"; a token's id is its\n";
  s += "# position (0-based). Never edit: a changed vocabulary is a new file with a new name.\n";
  s += std::string(kFileMagic) + " " + std::to_string(kFileVersion) + "\n";
  s += "name " + name_ + "\n";
  s += "size " + std::to_string(tokens_.size()) + "\n";
  for (const TokenSpec& t : tokens_) {
    s += std::string(to_string(t.cls)) + " " + t.text + "\n";
  }
  s += "digest " + digest_ + "\n";
  return s;
}

void Vocabulary::save(const std::filesystem::path& file) const {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw VocabularyError("cannot write vocabulary file " + file.string());
  out << serialize();
  out.flush();
  if (!out) throw VocabularyError("error writing vocabulary file " + file.string());
}

Vocabulary Vocabulary::load(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw VocabularyError("cannot read vocabulary file " + file.string());
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), file.string());
}

Vocabulary Vocabulary::parse(std::string_view text, const std::string& source) {
  std::vector<TokenSpec> tokens;
  std::string name, digest;
  long long size = -1;
  bool have_magic = false;
  int line_no = 0;
  std::size_t pos = 0;
  const auto fail = [&](const std::string& message) -> VocabularyError {
    return VocabularyError(source + ":" + std::to_string(line_no) + ": " + message);
  };
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos)
      throw fail("expected \"KEY VALUE\", got '" + std::string(line) + "'");
    const std::string_view head = line.substr(0, space);
    const std::string_view rest = line.substr(space + 1);
    if (!have_magic) {
      if (head != kFileMagic) {
        throw fail("not a vocabulary file: expected '" + std::string(kFileMagic) + " " +
                   std::to_string(kFileVersion) + "' first");
      }
      if (rest != std::to_string(kFileVersion)) {
        throw fail("vocabulary file format version " + std::string(rest) +
                   " is not supported (this " + "build reads version " +
                   std::to_string(kFileVersion) + ")");
      }
      have_magic = true;
      continue;
    }
    if (!digest.empty()) throw fail("nothing may follow the digest line");
    if (head == "name") {
      name = rest;
    } else if (head == "size") {
      try {
        size = std::stoll(std::string(rest));
      } catch (const std::exception&) {
        throw fail("size needs an integer, got '" + std::string(rest) + "'");
      }
    } else if (head == "digest") {
      digest = rest;
    } else if (auto cls = parse_token_class(head)) {
      if (rest.empty() || rest.find(' ') != std::string_view::npos) {
        throw fail("a token's text is one word without blanks, got '" + std::string(rest) + "'");
      }
      tokens.push_back({*cls, std::string(rest)});
    } else {
      throw fail("unknown line kind '" + std::string(head) +
                 "': expected name, size, digest or a token class (special, local, ...)");
    }
  }
  if (!have_magic) throw VocabularyError(source + ": empty vocabulary file");
  if (name.empty()) throw VocabularyError(source + ": the vocabulary has no name line");
  if (digest.empty()) throw VocabularyError(source + ": the vocabulary has no digest line");
  if (size != static_cast<long long>(tokens.size())) {
    throw VocabularyError(source + ": the size line says " + std::to_string(size) +
                          " tokens, the file lists " + std::to_string(tokens.size()));
  }
  Vocabulary v = [&] {
    try {
      return Vocabulary(name, std::move(tokens));
    } catch (const VocabularyError& e) {
      throw VocabularyError(source + ": " + e.what());
    }
  }();
  if (v.digest() != digest) {
    throw VocabularyError(source + ": digest mismatch: the file says " + digest +
                          ", its token lines hash to " + v.digest() + " (the file was edited)");
  }
  return v;
}

}  // namespace sparserl::env
