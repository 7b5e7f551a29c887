// The tokenizer against its contract: every corpus program round-trips (tokens, text, and the cubin
// NVRTC makes of it), out-of-vocabulary input is refused with the token and its line:column, the
// layout is pinned, decode() survives any token sequence, and vocabulary files are versioned and
// digest-checked.
//
// What "the same cubin" means. decode(encode(p)) renames p's identifiers to v0, v1, ... and
// normalises its layout. NVRTC (without -G or -lineinfo, as the evaluator runs it) puts no line
// numbers, file names or local names into the cubin: moving lines, dropping comments or renaming a
// local changes no byte (checked here). The kernel names are the exception: they are ELF symbols
// and section names (.text.NAME, .nv.info.NAME). So the test compares
//   1. cubin(decode(encode(p))) with cubin(q), q = p with only its kernel names replaced by the
//      canonical ones: byte for byte;
//   2. cubin(q) with cubin(p): section by section, equal after mapping kernel names - same section
//      types, flags and contents, same symbols with the same values - with only the string tables
//      (which hold the names) allowed to differ.
// Together: the decoded program is the original program, up to the names of its kernels.
#include "sparserl/env/tokenizer.hpp"

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "catch.hpp"
#include "env_test_support.hpp"
#include "sparserl/datasets/random.hpp"
#include "sparserl/env/sparse_cuda_env.hpp"
#include "sparserl/reward/abi.hpp"
#include "sparserl/reward/compiler.hpp"
#include "sparserl/reward/static_checks.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::env;

const Tokenizer& tokenizer() {
  static const Tokenizer t;
  return t;
}

// --- a minimal ELF64 reader (little-endian), enough to compare two cubins section by section ---

template <typename T>
T read_at(const std::string& bytes, std::size_t offset) {
  if (offset + sizeof(T) > bytes.size()) throw std::runtime_error("ELF read out of range");
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

struct Section {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t flags = 0, size = 0, align = 0, entsize = 0;
  std::uint32_t link = 0, info = 0;
  std::string data;
};

struct Symbol {
  std::string name;
  std::uint8_t info = 0, other = 0;
  std::uint16_t shndx = 0;
  std::uint64_t value = 0, size = 0;
};

struct Elf {
  std::vector<Section> sections;
  std::vector<Symbol> symbols;
};

std::string c_string_at(const std::string& table, std::size_t offset) {
  if (offset >= table.size()) return {};
  return std::string(table.c_str() + offset);
}

Elf parse_elf(const std::string& bytes) {
  REQUIRE(bytes.size() > 64);
  REQUIRE(bytes.compare(0, 4,
                        "\x7f"
                        "ELF") == 0);
  REQUIRE(bytes[4] == 2);  // 64-bit
  const auto shoff = read_at<std::uint64_t>(bytes, 0x28);
  const auto shentsize = read_at<std::uint16_t>(bytes, 0x3a);
  const auto shnum = read_at<std::uint16_t>(bytes, 0x3c);
  const auto shstrndx = read_at<std::uint16_t>(bytes, 0x3e);
  Elf elf;
  std::vector<std::uint32_t> name_offsets;
  for (std::uint16_t i = 0; i < shnum; ++i) {
    const std::size_t h = shoff + static_cast<std::size_t>(i) * shentsize;
    Section s;
    name_offsets.push_back(read_at<std::uint32_t>(bytes, h));
    s.type = read_at<std::uint32_t>(bytes, h + 4);
    s.flags = read_at<std::uint64_t>(bytes, h + 8);
    const auto offset = read_at<std::uint64_t>(bytes, h + 0x18);
    s.size = read_at<std::uint64_t>(bytes, h + 0x20);
    s.link = read_at<std::uint32_t>(bytes, h + 0x28);
    s.info = read_at<std::uint32_t>(bytes, h + 0x2c);
    s.align = read_at<std::uint64_t>(bytes, h + 0x30);
    s.entsize = read_at<std::uint64_t>(bytes, h + 0x38);
    if (s.type != 8 /* SHT_NOBITS */ && s.size > 0) {
      REQUIRE(offset + s.size <= bytes.size());
      s.data = bytes.substr(offset, s.size);
    }
    elf.sections.push_back(std::move(s));
  }
  const std::string& shstrtab = elf.sections.at(shstrndx).data;
  for (std::size_t i = 0; i < elf.sections.size(); ++i) {
    elf.sections[i].name = c_string_at(shstrtab, name_offsets[i]);
  }
  for (const Section& s : elf.sections) {
    if (s.type != 2 /* SHT_SYMTAB */) continue;
    const std::string& strtab = elf.sections.at(s.link).data;
    for (std::size_t off = 0; off + 24 <= s.data.size(); off += 24) {
      Symbol sym;
      sym.name = c_string_at(strtab, read_at<std::uint32_t>(s.data, off));
      sym.info = read_at<std::uint8_t>(s.data, off + 4);
      sym.other = read_at<std::uint8_t>(s.data, off + 5);
      sym.shndx = read_at<std::uint16_t>(s.data, off + 6);
      sym.value = read_at<std::uint64_t>(s.data, off + 8);
      sym.size = read_at<std::uint64_t>(s.data, off + 16);
      elf.symbols.push_back(sym);
    }
  }
  return elf;
}

std::string map_name(std::string name, const std::map<std::string, std::string>& names) {
  for (const auto& [from, to] : names) {
    if (name == from) return to;
    const std::string suffix = "." + from;
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return name.substr(0, name.size() - from.size()) + to;
    }
  }
  return name;
}

// cubin(a) equals cubin(b) once a's kernel names are mapped to b's (see the file comment).
void require_equal_up_to_names(const std::string& a_bytes, const std::string& b_bytes,
                               const std::map<std::string, std::string>& names) {
  const Elf a = parse_elf(a_bytes), b = parse_elf(b_bytes);
  REQUIRE(a.sections.size() == b.sections.size());
  for (std::size_t i = 0; i < a.sections.size(); ++i) {
    const Section& x = a.sections[i];
    const Section& y = b.sections[i];
    INFO("section " << i << ": " << x.name << " / " << y.name);
    CHECK(map_name(x.name, names) == y.name);
    CHECK(x.type == y.type);
    CHECK(x.flags == y.flags);
    CHECK(x.align == y.align);
    CHECK(x.entsize == y.entsize);
    CHECK(x.link == y.link);
    CHECK(x.info == y.info);
    const bool names_inside = x.type == 3 /* SHT_STRTAB */ || x.type == 2 /* SHT_SYMTAB */;
    if (!names_inside) {
      CHECK(x.size == y.size);
      CHECK(x.data == y.data);
    }
  }
  REQUIRE(a.symbols.size() == b.symbols.size());
  for (std::size_t i = 0; i < a.symbols.size(); ++i) {
    INFO("symbol " << i << ": " << a.symbols[i].name);
    CHECK(map_name(a.symbols[i].name, names) == b.symbols[i].name);
    CHECK(a.symbols[i].info == b.symbols[i].info);
    CHECK(a.symbols[i].other == b.symbols[i].other);
    CHECK(a.symbols[i].shndx == b.symbols[i].shndx);
    CHECK(a.symbols[i].value == b.symbols[i].value);
    CHECK(a.symbols[i].size == b.symbols[i].size);
  }
}

// The names that decode() gives the program's kernels: each kernel is a local of the encoding,
// v<its index>.
std::map<std::string, std::string> decoded_kernel_names(const std::string& text,
                                                        const EncodedProgram& encoded) {
  std::map<std::string, std::string> names;
  for (const std::string& kernel : reward::parse_program(text).program->kernel_names()) {
    const auto it = std::find(encoded.locals.begin(), encoded.locals.end(), kernel);
    REQUIRE(it != encoded.locals.end());
    names[kernel] = "v" + std::to_string(it - encoded.locals.begin());
  }
  return names;
}

// The program with only its kernel names replaced (directives and code), all else byte for byte.
std::string rename_kernels(const std::string& text,
                           const std::map<std::string, std::string>& names) {
  const reward::LexResult lexed = reward::lex(text);
  REQUIRE(lexed.ok());
  std::vector<std::string> lines;
  {
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t end = text.find('\n', start);
      lines.push_back(
          text.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  // Code tokens, right to left within a line so that columns stay valid.
  for (auto it = lexed.tokens.rbegin(); it != lexed.tokens.rend(); ++it) {
    if (it->kind != reward::TokenKind::identifier) continue;
    const auto found = names.find(it->text);
    if (found == names.end()) continue;
    std::string& line = lines.at(static_cast<std::size_t>(it->line - 1));
    line.replace(static_cast<std::size_t>(it->column - 1), it->text.size(), found->second);
  }
  for (const reward::DirectiveComment& d : lexed.directives) {
    std::string& line = lines.at(static_cast<std::size_t>(d.line - 1));
    const std::string prefix = "//@launch ";
    const std::size_t at = line.find(prefix);
    if (at == std::string::npos) continue;
    const std::size_t name_start = at + prefix.size();
    const std::size_t name_end = line.find(' ', name_start);
    const std::string name = line.substr(name_start, name_end - name_start);
    if (names.count(name) != 0) line.replace(name_start, name.size(), names.at(name));
  }
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    out += lines[i];
  }
  return out;
}

reward::CompileResult compile(const std::string& program, datasets::Op op) {
  const reward::ParseResult parsed = reward::parse_program(program);
  REQUIRE(parsed.ok());
  const auto matrix = fixtures::small_matrix();
  const reward::Constants constants =
      reward::compute_constants(matrix, op, 4, parsed.program->format);
  reward::CompileRequest request;
  request.source = reward::compile_source(datasets::DType::f32, constants, program);
  reward::CompileResult result = reward::compile(request);
  INFO(result.log);
  REQUIRE(result.ok);
  return result;
}

}  // namespace

std::vector<fixtures::CorpusProgram> whole_corpus() {
  std::vector<fixtures::CorpusProgram> corpus = fixtures::reference_corpus();
  for (auto& p : fixtures::design_space_corpus()) corpus.push_back(std::move(p));
  return corpus;
}

TEST_CASE("every corpus program round-trips through the tokenizer", "[env][tokenizer]") {
  const auto corpus = whole_corpus();
  INFO(corpus.size() << " corpus programs");
  for (const auto& program : corpus) {
    INFO(program.name);
    const EncodedProgram encoded = tokenizer().encode(program.text);
    REQUIRE(encoded.tokens.back() == tokenizer().vocabulary().eos());
    const std::string decoded = tokenizer().decode(encoded.tokens);
    INFO(decoded);
    CHECK(tokenizer().encode(decoded).tokens == encoded.tokens);
    CHECK(tokenizer().decode(tokenizer().encode(decoded).tokens) == decoded);
    const reward::ParseResult original = reward::parse_program(program.text);
    const reward::ParseResult again = reward::parse_program(decoded);
    REQUIRE(again.ok());
    CHECK(again.program->format == original.program->format);
    REQUIRE(again.program->launches.size() == original.program->launches.size());
    for (std::size_t i = 0; i < original.program->launches.size(); ++i) {
      CHECK(again.program->launches[i].grid.text() == original.program->launches[i].grid.text());
      CHECK(again.program->launches[i].block.text() == original.program->launches[i].block.text());
    }
    // Kernels are v0, v1, ... in launch order, the same name in the directive and the definition.
    CHECK(encoded.locals.at(0) == original.program->launches.at(0).kernel);
    CHECK(reward::check_program(decoded, program.op).ok());
    CHECK(encoded.tokens.size() <= static_cast<std::size_t>(EnvConfig{}.max_tokens));
  }
}

TEST_CASE("decode(encode(p)) compiles to the cubin of p, up to kernel names",
          "[env][tokenizer][nvrtc]") {
  for (const auto& program : fixtures::reference_corpus()) {
    INFO(program.name);
    const datasets::Op op = program.op;
    const EncodedProgram encoded = tokenizer().encode(program.text);
    const auto kernel_names = decoded_kernel_names(program.text, encoded);
    const std::string decoded = tokenizer().decode(encoded.tokens);
    const std::string renamed = rename_kernels(program.text, kernel_names);
    const reward::CompileResult from_decoded = compile(decoded, op);
    const reward::CompileResult from_renamed = compile(renamed, op);
    const reward::CompileResult from_original = compile(program.text, op);
    CHECK(from_decoded.cubin == from_renamed.cubin);
    require_equal_up_to_names(from_original.cubin, from_renamed.cubin, kernel_names);
    // The ptxas figures agree too.
    REQUIRE(from_decoded.kernels.size() == from_original.kernels.size());
    for (std::size_t i = 0; i < from_decoded.kernels.size(); ++i) {
      CHECK(from_decoded.kernels[i].registers == from_original.kernels[i].registers);
      CHECK(from_decoded.kernels[i].spill_store_bytes ==
            from_original.kernels[i].spill_store_bytes);
    }
  }
}

TEST_CASE("design-space programs compile to the same cubin after the round trip",
          "[env][tokenizer][nvrtc]") {
  // One program per generator (f32): two compiles each, the decoded program against the original
  // with its kernels renamed (the full ELF comparison is done on the reference corpus above).
  const auto corpus = fixtures::design_space_corpus(true);
  if (corpus.empty())
    sparserl::testing::skip("the kernel design space (agents/kernels) is not built");
  for (const auto& program : corpus) {
    INFO(program.name);
    const EncodedProgram encoded = tokenizer().encode(program.text);
    const auto kernel_names = decoded_kernel_names(program.text, encoded);
    CHECK(compile(tokenizer().decode(encoded.tokens), program.op).cubin ==
          compile(rename_kernels(program.text, kernel_names), program.op).cubin);
  }
}

TEST_CASE("NVRTC embeds no lines and no local names: layout and local renaming keep the cubin",
          "[env][tokenizer][nvrtc]") {
  const std::string text = fixtures::reference_corpus().front().text;  // spmm_bsr
  std::string moved = "// a comment that shifts every line\n\n\n" + text;
  std::string renamed_local = text;
  // `sum` is a local of spmm_bsr; renaming it everywhere changes nothing NVRTC emits.
  for (std::size_t at = renamed_local.find("sum"); at != std::string::npos;
       at = renamed_local.find("sum", at + 5)) {
    renamed_local.replace(at, 3, "total");
  }
  REQUIRE(renamed_local != text);
  const std::string base = compile(text, datasets::Op::spmm).cubin;
  CHECK(compile(moved, datasets::Op::spmm).cubin == base);
  CHECK(compile(renamed_local, datasets::Op::spmm).cubin == base);
}

TEST_CASE("the layout of decoded programs is fixed", "[env][tokenizer]") {
  const std::string program =
      "//@launch k grid=ceil_div(M,128) block=128\n"
      "//@format csr\n"
      "#define W(a) ((a)*2)   /* function-like */\n"
      "#define G (1 + 2)\n"
      "extern \"C\" __global__ void k(const int* __restrict__ rp, const int* __restrict__ ci,\n"
      "    const value_t* __restrict__ v, const value_t* __restrict__ x, value_t* __restrict__ y)\n"
      "{ const long long r=static_cast<long long>(blockIdx.x)*blockDim.x+threadIdx.x; // row\n"
      "  if(r>=M) return; value_t s=0; for(int e=rp[r];e<rp[r+1];++e){s+=v[e]*x[ci[e]];}\n"
      "  y[r]=s*W(G)-0x1fu+1.5e-3f; }\n";
  const EncodedProgram encoded = tokenizer().encode(program);
  CHECK(encoded.locals ==
        std::vector<std::string>{"k", "W", "a", "G", "rp", "ci", "v", "x", "y", "r", "s", "e"});
  const std::string expected =
      "//@format csr\n"
      "//@launch v0 grid=ceil_div(M, 128) block=128\n"
      "\n"
      "#define v1(v2) ((v2) * 2)\n"
      "#define v3 (1 + 2)\n"
      "extern \"C\" __global__ void v0(const int* __restrict__ v4, const int* __restrict__ v5, "
      "const value_t* __restrict__ v6, const value_t* __restrict__ v7, value_t* __restrict__ v8) "
      "{\n"
      "  const long long v9 = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;\n"
      "  if (v9 >= M) return;\n"
      "  value_t v10 = 0;\n"
      "  for (int v11 = v4[v9]; v11 < v4[v9 + 1]; ++v11) {\n"
      "    v10 += v6[v11] * v7[v5[v11]];\n"
      "  }\n"
      "  v8[v9] = v10 * v1(v3) - 0x1fu + 1.5e-3f;\n"
      "}\n";
  CHECK(tokenizer().decode(encoded.tokens) == expected);
  CHECK(tokenizer().encode(expected).tokens == encoded.tokens);
}

TEST_CASE("out-of-vocabulary input names the token and its line:column", "[env][tokenizer]") {
  const std::string head = "//@format csr\n//@launch k grid=1 block=32\n";
  const auto refuses = [&](const std::string& code, const std::string& token, int line, int column,
                           const std::string& words) {
    INFO(code);
    try {
      (void)tokenizer().encode(head + code);
      FAIL("encoded without an error");
    } catch (const TokenizeError& e) {
      CHECK(e.token() == token);
      CHECK(e.line() == line);
      CHECK(e.column() == column);
      CHECK_THAT(std::string(e.what()), sparserl::testing::has_substring(words));
      CHECK_THAT(std::string(e.what()), sparserl::testing::has_substring(
                                            std::to_string(line) + ":" + std::to_string(column)));
    }
  };
  refuses("__global__ void k() { printf(\"hi\"); }", "\"hi\"", 3, 30, "string literal");
  refuses("__global__ void k() {\n  char c = 'a'; }", "'a'", 4, 12, "character literal");
  refuses("__global__ void k() { float f = 0x1p3; }", "0x1p3", 3, 33, "'p'");
  refuses("__global__ void k() { int i = my_helper(2); }", "my_helper", 3, 31, "is called but");
  refuses("__global__ void k() { k<<<1, 1>>>(); }", "<<<", 3, 24, "out of vocabulary");
  refuses("__global__ void k() { int a = 1 @ 2; }", "@", 3, 33, "starts no token");
  // A declared helper is a local, not an error.
  CHECK_NOTHROW(tokenizer().encode(head +
                                   "__device__ int my_helper(int v) { return v; }\n"
                                   "extern \"C\" __global__ void k() { int i = my_helper(2); }"));
  // Too many locals for a small vocabulary.
  const Tokenizer tiny(std::make_shared<const Vocabulary>(Vocabulary::build({"tiny-test", 3, {}})));
  try {
    (void)tiny.encode(head + "extern \"C\" __global__ void k(int a, int b, int c) {}");
    FAIL("encoded without an error");
  } catch (const TokenizeError& e) {
    CHECK(e.token() == "c");
    CHECK(e.line() == 3);
    CHECK_THAT(std::string(e.what()), sparserl::testing::has_substring("3 locals"));
  }
  // Unreadable directives name their position too.
  try {
    (void)tokenizer().encode("//@format xyz\n");
    FAIL("encoded without an error");
  } catch (const TokenizeError& e) {
    CHECK(e.line() == 1);
    CHECK_THAT(std::string(e.what()), sparserl::testing::has_substring("unknown format"));
  }
}

TEST_CASE("decode survives any token sequence", "[env][tokenizer]") {
  const Vocabulary& v = tokenizer().vocabulary();
  datasets::Rng rng(99);
  for (int i = 0; i < 2000; ++i) {
    std::vector<TokenId> ids(rng.below(80));
    for (TokenId& id : ids) {
      id = static_cast<TokenId>(rng.between(-3, static_cast<std::int64_t>(v.size()) + 3));
    }
    CHECK_NOTHROW(tokenizer().decode(ids));
  }
  CHECK(tokenizer().decode({}).empty());
  const std::vector<TokenId> after_eos = {v.eos(), v.id(TokenClass::keyword, "int")};
  CHECK(tokenizer().decode(after_eos).empty());
}

TEST_CASE("vocabulary files are versioned and digest-checked", "[env][tokenizer][vocab]") {
  const Vocabulary& standard = Vocabulary::standard();
  CHECK(standard.name() == "cuda-c-v1");
  CHECK(standard.digest().size() == 64);
  // Every ABI constant and the special tokens are in it.
  for (const reward::ConstantInfo& c : reward::constant_infos()) {
    CHECK(standard.find(TokenClass::constant, c.name).has_value());
  }
  CHECK(standard.pad() == 0);
  CHECK(standard.bos() == 1);
  CHECK(standard.eos() == 2);

  const auto dir = sparserl::testing::scratch_dir("vocabulary_files");
  standard.save(dir / "copy.vocab");
  const Vocabulary loaded = Vocabulary::load(dir / "copy.vocab");
  CHECK(loaded == standard);
  CHECK(loaded.digest() == standard.digest());
  CHECK_NOTHROW(loaded.require_digest(standard.digest(), "a checkpoint"));
  CHECK_THROWS_AS(loaded.require_digest(std::string(64, '0'), "a checkpoint"), VocabularyError);

  // An edited token line breaks the digest.
  std::string text = standard.serialize();
  const std::size_t at = text.find("builtin atomicAdd\n");
  REQUIRE(at != std::string::npos);
  std::string edited = text;
  edited.replace(at, std::strlen("builtin atomicAdd"), "builtin atomicSum");
  CHECK_THROWS_WITH(Vocabulary::parse(edited, "edited.vocab"),
                    sparserl::testing::has_substring("digest mismatch"));
  std::string future = text;
  future.replace(future.find("sparserl-vocab 1"), 16, "sparserl-vocab 9");
  CHECK_THROWS_WITH(
      Vocabulary::parse(future, "future.vocab"),
      sparserl::testing::has_substring("future.vocab:3: vocabulary file format version 9"));
  CHECK_THROWS_AS(Vocabulary::load(dir / "missing.vocab"), VocabularyError);
}

TEST_CASE("the committed standard vocabulary is what the builder makes from the corpus",
          "[env][tokenizer][vocab]") {
  // The builder: the fixed lists, the ABI registry, and the builtins the corpus calls.
  VocabularyOptions options;
  const Tokenizer lists(std::make_shared<const Vocabulary>(Vocabulary::build(options)));
  for (const auto& program : whole_corpus()) {
    for (const std::string& name : lists.undeclared_calls(program.text)) {
      options.extra_builtins.push_back(name);
    }
  }
  const Vocabulary built = Vocabulary::build(options);
  INFO("regenerate with `sparserl vocab build --out env/vocab/NAME.vocab` under a NEW name");
  CHECK(built == Vocabulary::standard());
  const auto committed = sparserl::testing::source_dir() / "env" / "vocab" / "cuda-c-v1.vocab";
  CHECK(Vocabulary::load(committed) == Vocabulary::standard());
}
