// bpe_mask_bench: what the grammar mask over BPE tokens (env/bpe_grammar_mask.hpp) costs per step,
// and what the programs of random episodes under it compile to.
//
//   1. fill()'s cost per step (median, p90 and max microseconds, one thread) along the corpus
//      programs in BPE form token by token (the path of a policy that writes such programs) and
//      along random episodes (uniform over the allowed tokens), with the mask cache's hit rate,
//      the same along --rows corpus programs side by side (one step of each in turn, as a batch is
//      sampled), and allows()' cost per token; for a small tokenizer trained here on the CUDA
//      corpus and the corpus programs (--small tokens) and a Qwen-sized one (--large tokens,
//      151,643 as Qwen2.5's byte-level vocabulary): read from --tokenizer FILE, or built - trained
//      on the CUDA corpus
//      (--corpus, default ../shared/corpus/cuda), where merges run out near 62,000 tokens, then
//      grown to the size the way Qwen2's vocabulary is made up (qwen_sized()).
//   2. random episodes of the small tokenizer (--compile of them, max_tokens --max-tokens): how
//      many parse, pass the static checks (check_program) and compile (NVRTC, sm_90, f32, a small
//      matrix's prelude); beside them the closed syntax mask's random episodes (max_tokens 512).
//
//      Each stage as the evaluator runs it - parse, static checks, launch geometry on the matrix,
//      NVRTC, the resource checks - with the commonest failure reasons (NVRTC's first error).
//
// usage: bpe_mask_bench [--episodes N] [--compile N] [--small N] [--large N] [--max-tokens N]
//                       [--corpus DIR] [--tokenizer FILE] [--no-large] [--rows N]
//                       [--cache-mib M]   (the masks' cache budget; default BpeGrammarOptions')
//                       [--compile-only]  (section 2 alone)
//                       [--dump DIR]      (section 2's programs, each headed by its verdict,
//                                          and the corpus programs)
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "sparserl/datasets/random.hpp"
#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/env/action_mask.hpp"
#include "sparserl/env/bpe_grammar_mask.hpp"
#include "sparserl/env/bpe_trainer.hpp"
#include "sparserl/env/tokenizer.hpp"
#include "sparserl/kernels/design_space.hpp"
#include "sparserl/reward/compiler.hpp"
#include "sparserl/reward/static_checks.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::env;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

struct Options {
  int episodes = 40, compile = 300, small = 4096, large = 151643, max_tokens = 1024, rows = 64;
  double cache_mib = -1;  // the masks' cache budget (-1: BpeGrammarOptions' default)
  fs::path corpus = fs::path(SPARSERL_BENCH_SOURCE_DIR) / ".." / "shared" / "corpus" / "cuda";
  std::string tokenizer, dump;
  bool no_large = false, compile_only = false;
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The reference programs and every design-space point, in the form the BPE grammar reads.
std::vector<std::string> corpus_programs() {
  std::vector<std::string> out;
  // By name: directory order differs between checkouts, and the programs' order moves both the
  // tokenizer's training (ties between merges) and which programs the sections take.
  std::vector<fs::path> references;
  for (const auto& e :
       fs::directory_iterator(fs::path(SPARSERL_BENCH_SOURCE_DIR) / "reward" / "programs")) {
    if (e.path().extension() == ".cu") references.push_back(e.path());
  }
  std::sort(references.begin(), references.end());
  for (const fs::path& path : references) out.push_back(bpe_program_text(read(path)));
  for (datasets::Op op : {datasets::Op::spmv, datasets::Op::spmm}) {
    for (datasets::DType dtype : {datasets::DType::f32, datasets::DType::f64}) {
      const kernels::DesignSpace space(op, dtype);
      for (const kernels::DesignPoint& p : space.points()) {
        out.push_back(bpe_program_text(space.render(p)));
      }
    }
  }
  return out;
}

std::shared_ptr<const BpeTokenizer> train(int size, const std::vector<std::string>& texts,
                                          const std::string& what) {
  const auto start = Clock::now();
  BpeTrainerOptions options;
  options.vocab_size = size;
  BpeTrainer trainer(options);
  for (const std::string& t : texts) trainer.add_text(t);
  auto t = std::make_shared<const BpeTokenizer>(BpeTokenizer::parse(trainer.train(), what));
  std::printf("  trained %s: %zu tokens from %zu texts in %.1f s\n", what.c_str(), t->size(),
              texts.size(), std::chrono::duration<double>(Clock::now() - start).count());
  return t;
}

struct Times {
  std::vector<double> us;
  void add(Clock::time_point since) {
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - since).count());
  }
  [[nodiscard]] std::string str() {
    if (us.empty()) return "no steps";
    std::sort(us.begin(), us.end());
    double sum = 0;
    for (double u : us) sum += u;
    char line[160];
    std::snprintf(line, sizeof line,
                  "%zu steps: mean %.1f us, median %.1f us, p90 %.1f us, max %.0f us", us.size(),
                  sum / static_cast<double>(us.size()), us[us.size() / 2], us[us.size() * 9 / 10],
                  us.back());
    return line;
  }
};

// The masks' cache budget for the whole run (--cache-mib), set once by main().
std::size_t cache_bytes = BpeGrammarOptions{}.cache_bytes;

BpeGrammarMask make_mask(const std::shared_ptr<const BpeTokenizer>& t, int max_tokens) {
  BpeGrammarOptions o;
  o.cache_bytes = cache_bytes;
  o.max_tokens = max_tokens;
  return BpeGrammarMask(t, o);
}

// fill() along every `stride`-th corpus program, token by token.
void teacher_forced(const std::shared_ptr<const BpeTokenizer>& t,
                    const std::vector<std::string>& programs, std::size_t stride) {
  Times times;
  std::vector<std::uint8_t> m;
  const auto before = make_mask(t, 8192).cache_stats();
  for (std::size_t i = 0; i < programs.size(); i += stride) {
    const std::vector<TokenId> ids = t->encode(programs[i]);
    BpeGrammarMask mask = make_mask(t, static_cast<int>(ids.size()) + 2000);
    m.resize(mask.size());
    for (TokenId id : ids) {
      const auto start = Clock::now();
      mask.fill(m);
      times.add(start);
      mask.advance(id);
    }
  }
  const auto after = make_mask(t, 8192).cache_stats();
  const double hits = static_cast<double>(after.hits - before.hits);
  const double all = hits + static_cast<double>(after.misses - before.misses);
  std::printf("  corpus programs (every %zu-th, teacher-forced): fill %s; cache hits %.1f%%\n",
              stride, times.str().c_str(), 100.0 * hits / std::max(all, 1.0));
}

// `rows` corpus programs (every `stride`-th from stride / 2: none of teacher_forced()'s) side by
// side, one step of each at a time, as PolicyAgent::generate fills a batch's masks: the cache sees
// the rows' states interleaved (and keeps what the earlier passes left in it).
void teacher_forced_batch(const std::shared_ptr<const BpeTokenizer>& t,
                          const std::vector<std::string>& programs, std::size_t stride, int rows) {
  std::vector<std::vector<TokenId>> ids;
  std::vector<BpeGrammarMask> masks;
  for (std::size_t i = stride / 2; i < programs.size() && static_cast<int>(ids.size()) < rows;
       i += stride) {
    ids.push_back(t->encode(programs[i]));
    masks.push_back(make_mask(t, static_cast<int>(ids.back().size()) + 2000));
  }
  Times times;
  std::vector<std::uint8_t> m(masks.front().size());
  const auto before = masks.front().cache_stats();
  for (std::size_t step = 0;; ++step) {
    bool any = false;
    for (std::size_t r = 0; r < ids.size(); ++r) {
      if (step >= ids[r].size()) continue;
      any = true;
      const auto start = Clock::now();
      masks[r].fill(m);
      times.add(start);
      masks[r].advance(ids[r][step]);
    }
    if (!any) break;
  }
  const auto after = masks.front().cache_stats();
  const double hits = static_cast<double>(after.hits - before.hits);
  const double all = hits + static_cast<double>(after.misses - before.misses);
  std::printf(
      "  %zu other corpus programs side by side (every %zu-th from the %zu-th): fill %s; "
      "cache hits %.1f%%, %zu masks kept (%.1f MiB)\n",
      ids.size(), stride, stride / 2, times.str().c_str(), 100.0 * hits / std::max(all, 1.0),
      after.entries, static_cast<double>(after.bytes) / (1 << 20));
}

// Random episodes: fill() per step, allows() per token on every 50th step; the texts.
std::vector<std::string> random_walks(const std::shared_ptr<const BpeTokenizer>& t, int episodes,
                                      int max_tokens, bool report) {
  datasets::Rng rng(20250612);
  Times fills, allows;
  std::vector<std::uint8_t> m;
  std::vector<TokenId> allowed;
  std::vector<std::string> texts;
  for (int e = 0; e < episodes; ++e) {
    BpeGrammarMask mask = make_mask(t, max_tokens);
    m.resize(mask.size());
    while (!mask.done()) {
      const auto start = Clock::now();
      mask.fill(m);
      fills.add(start);
      if (report && mask.tokens() % 50 == 0) {
        const auto one = Clock::now();
        for (std::size_t i = 0; i < m.size(); i += 97) (void)mask.allows(static_cast<TokenId>(i));
        allows.us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - one).count() /
                            static_cast<double>((m.size() + 96) / 97));
      }
      allowed.clear();
      for (std::size_t i = 0; i < m.size(); ++i) {
        if (m[i] != 0) allowed.push_back(static_cast<TokenId>(i));
      }
      mask.advance(allowed[rng.below(allowed.size())]);
    }
    texts.push_back(mask.text());
  }
  if (report) {
    std::printf("  random episodes (%d, max_tokens %d): fill %s\n", episodes, max_tokens,
                fills.str().c_str());
    std::printf("  allows() per token (every 97th token at every 50th step): %s\n",
                allows.str().c_str());
  }
  return texts;
}

// A Qwen-sized vocabulary: `base` (trained on the CUDA corpus, where merges run out near 62,000
// tokens) grown to `target` tokens the way Qwen2's vocabulary is made up - variants of its words
// (with a leading blank, capitalised, upper case, after `_`), runs of blanks, tabs and newlines,
// then tokens beyond ASCII (CJK characters and pairs, about 40% of the whole as in Qwen2's).
// The added tokens have no merge: encode() never makes them, the mask must still judge them.
std::shared_ptr<const BpeTokenizer> qwen_sized(const std::string& base_json, int target) {
  auto doc = nlohmann::json::parse(base_json);
  auto& vocab = doc["model"]["vocab"];
  const BpeTokenizer base = BpeTokenizer::parse(base_json, "base");
  const auto spell = [&](const std::string& raw) {
    std::string out;
    for (unsigned char c : raw) out += base.token(*base.byte_token(c));
    return out;
  };
  int next = static_cast<int>(base.size());
  std::unordered_set<std::string> have;
  for (const auto& [key, id] : vocab.items()) have.insert(key);
  const auto add = [&](const std::string& raw) {
    if (next >= target) return;
    std::string key = spell(raw);
    if (have.insert(key).second) vocab[std::move(key)] = next++;
  };
  std::vector<std::string> words;
  for (std::size_t i = 0; i < base.size(); ++i) {
    const auto id = static_cast<TokenId>(i);
    if (!base.has_token(id) || base.is_added(id)) continue;
    const std::string& w = base.token_bytes(id);
    if (!w.empty() && std::all_of(w.begin(), w.end(), [](char c) { return std::isalpha(c); })) {
      words.push_back(w);
    }
  }
  const int ascii_target = target * 6 / 10;
  for (const std::string& w : words) {
    if (next >= ascii_target) break;
    std::string cap = w, upper = w;
    cap[0] = static_cast<char>(std::toupper(cap[0]));
    std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
    for (const std::string& v : {" " + w, cap, upper, " " + cap, "_" + w, "." + w}) add(v);
  }
  for (int n = 1; n <= 64; ++n) {
    for (const char* unit : {" ", "\t", "\n", " \n", "\n "}) {
      std::string run;
      for (int k = 0; k < n; ++k) run += unit;
      add(run);
    }
  }
  for (std::uint32_t cp = 0x4E00; next < target && cp < 0x9FFF; ++cp) {
    const std::string c = {static_cast<char>(0xE0 | (cp >> 12)),
                           static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                           static_cast<char>(0x80 | (cp & 0x3F))};
    add(c);
    add(" " + c);
    add(c + c);
  }
  for (auto& a : doc["added_tokens"]) {
    if (a["id"].get<int>() >= static_cast<int>(base.size())) a["id"] = next++;
  }
  return std::make_shared<const BpeTokenizer>(BpeTokenizer::parse(
      doc.dump(), "Qwen-sized (" + std::to_string(next) + " tokens: the corpus's " +
                      std::to_string(base.size()) + " and variants)"));
}

void cost_section(const std::shared_ptr<const BpeTokenizer>& t,
                  const std::vector<std::string>& programs, const Options& o) {
  std::printf("  tokenizer %s: %zu tokens, %zu merges\n", t->source().c_str(), t->size(),
              t->merges());
  teacher_forced(t, programs, t->size() > 50000 ? 40 : 10);
  teacher_forced_batch(t, programs, t->size() > 50000 ? 40 : 10, o.rows);
  random_walks(t, o.episodes, o.max_tokens, true);
}

// The evaluator's stages up to the compile (the order Evaluator runs them): parse, the static
// checks, the launch geometry on the matrix, NVRTC, the resource checks on its result. NVRTC runs
// on every program that passes the static checks (geometry depends on the launch lines alone), so
// its failure classes are seen even where the geometry fails; "all" is every stage passed.
struct CompileStats {
  int programs = 0, parsed = 0, checked = 0, geometry = 0, compiled = 0, all = 0;
  std::map<std::string, int> reasons;  // "stage: reason" -> programs
};

// The first error of an NVRTC log, its quoted names and numbers blanked: a failure class.
std::string first_error(const std::string& log) {
  const std::size_t at = log.find("error: ");
  if (at == std::string::npos) return "no error line";
  std::string line = log.substr(at + 7, log.find('\n', at) - at - 7);
  std::string out;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      out += quoted ? "\"" : "\"...";
      quoted = !quoted;
    } else if (!quoted) {
      out += c;
    }
  }
  return out;
}

// For a dump: NVRTC's first error line and the source line it names (the program's line: NVRTC
// numbers them from the prelude's `#line`), each as a comment line.
std::string error_context(const std::string& log, const std::string& source) {
  const std::size_t at = log.find("error: ");
  if (at == std::string::npos) return "";
  const std::size_t start = log.rfind('\n', at) == std::string::npos ? 0 : log.rfind('\n', at) + 1;
  std::string out = "// " + log.substr(start, log.find('\n', at) - start) + "\n";
  // NVRTC's next lines: the source line and a caret under where it went wrong.
  for (std::size_t next = log.find('\n', at), shown = 0; next != std::string::npos && shown < 2;
       ++shown) {
    const std::size_t end = log.find('\n', next + 1);
    const std::string row = log.substr(next + 1, end == std::string::npos ? end : end - next - 1);
    if (row.empty() || row.find("error") != std::string::npos) break;
    out += "//| " + row + "\n";
    next = end;
  }
  const std::size_t open = log.find('(', start);
  if (open == std::string::npos || open > at) return out;
  const int line = std::atoi(log.c_str() + open + 1);
  // Past the prelude, `#line 1 "program.cu"` numbers the program's lines.
  const std::size_t program = source.find("#line 1 \"program.cu\"\n");
  std::size_t from = program == std::string::npos ? 0 : source.find('\n', program) + 1;
  for (int i = 1; i < line && from != std::string::npos; ++i) {
    from = source.find('\n', from);
    if (from != std::string::npos) ++from;
  }
  if (from == std::string::npos) return out;
  return out + "// at: " + source.substr(from, source.find('\n', from) - from) + "\n";
}

// NVRTC in a child process, as the evaluator's sandboxed compile workers run it (NVRTC crashed on
// a random program in-process); nullopt where the child died.
std::optional<reward::CompileResult> compile_apart(const reward::CompileRequest& request) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    const std::string bytes = reward::serialize(reward::compile(request));
    for (std::size_t at = 0; at < bytes.size();) {
      const ssize_t n = ::write(fds[1], bytes.data() + at, bytes.size() - at);
      if (n <= 0) _exit(1);
      at += static_cast<std::size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string bytes;
  char buffer[1 << 16];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) {
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return reward::deserialize_compile_result(bytes);
}

CompileStats compile_all(const std::vector<std::string>& texts, const std::string& dump,
                         const std::string& prefix) {
  CompileStats s;
  std::vector<datasets::Triplet> triplets;
  for (int i = 0; i < 64; ++i) {
    triplets.push_back({i, i, 2.0});
    triplets.push_back({i, (i * 7 + 3) % 64, -1.0});
  }
  const auto matrix = datasets::SparseMatrix::from_triplets(64, 64, std::move(triplets));
  for (const std::string& text : texts) {
    const int index = s.programs++;
    std::string verdict = "ok", error_at;
    const auto fail = [&](const std::string& why) {
      ++s.reasons[why];
      if (verdict == "ok") verdict = why;
    };
    const reward::ParseResult parsed = reward::parse_program(text);
    const reward::StaticCheckResult checked =
        parsed.ok() ? reward::check_program(text, datasets::Op::spmv) : reward::StaticCheckResult{};
    if (!parsed.ok()) {
      fail("parse");
    } else if (!checked.ok()) {
      fail("static: " + std::string(reward::to_string(checked.failure->reason)));
    }
    if (parsed.ok()) ++s.parsed;
    if (parsed.ok() && checked.ok()) {
      ++s.checked;
      const reward::Constants constants =
          reward::compute_constants(matrix, datasets::Op::spmv, 4, parsed.program->format);
      const reward::GeometryResult geometry = reward::resolve_launches(*parsed.program, constants);
      if (geometry.ok()) {
        ++s.geometry;
      } else {
        // "//@launch NAME KEY=...": which expression failed.
        const std::string& m = geometry.failure->message;
        const std::size_t key = m.find(' ', m.find(' ') + 1) + 1;
        fail("geometry: " + std::string(reward::to_string(geometry.failure->reason)) + " (" +
             m.substr(key, m.find('=', key) - key) + ": " +
             (m.find("division by zero") != std::string::npos ? "division by zero"
              : m.find("overflow") != std::string::npos       ? "overflow"
                                                              : "out of range") +
             ")");
      }
      reward::CompileRequest request;
      request.source = reward::compile_source(datasets::DType::f32, constants, text);
      const std::optional<reward::CompileResult> result = compile_apart(request);
      if (!result) {
        fail("nvrtc: crashed");
      } else if (const reward::CompileResult& compiled = *result; compiled.ok) {
        ++s.compiled;
        const auto resources = reward::check_resources(geometry.launches, compiled);
        if (resources) fail("resources: " + std::string(reward::to_string(resources->reason)));
        if (geometry.ok() && !resources) ++s.all;
      } else {
        fail("nvrtc: " + first_error(compiled.log));
        error_at = error_context(compiled.log, request.source);
      }
    }
    if (!dump.empty()) {
      std::ofstream(fs::path(dump) / (prefix + std::to_string(index) + ".cu"))
          << "// " << verdict << "\n"
          << error_at << text;
    }
  }
  return s;
}

void print_compile(const char* what, const CompileStats& s) {
  const auto pct = [&](int n) { return 100.0 * n / std::max(s.programs, 1); };
  std::printf(
      "  %s: %d programs; parse %.1f%%, static checks %.1f%%, launch geometry %.1f%%, NVRTC "
      "compiles %.1f%% (of all programs), every stage %.1f%%\n",
      what, s.programs, pct(s.parsed), pct(s.checked), pct(s.geometry), pct(s.compiled),
      pct(s.all));
  std::vector<std::pair<int, std::string>> reasons;
  for (const auto& [why, n] : s.reasons) reasons.emplace_back(-n, why);
  std::sort(reasons.begin(), reasons.end());
  for (std::size_t i = 0; i < reasons.size() && i < 12; ++i) {
    std::printf("    %4d  %s\n", -reasons[i].first, reasons[i].second.c_str());
  }
}

std::vector<std::string> closed_walks(int episodes, int max_tokens) {
  const auto vocab = std::make_shared<const Vocabulary>(Vocabulary::standard());
  const Tokenizer tokenizer(vocab);
  datasets::Rng rng(20250612);
  std::vector<std::uint8_t> m(vocab->size());
  std::vector<TokenId> allowed, tokens;
  std::vector<std::string> texts;
  for (int e = 0; e < episodes; ++e) {
    ActionMask mask(vocab, MaskMode::syntax, max_tokens);
    tokens.clear();
    while (tokens.empty() || tokens.back() != vocab->eos()) {
      mask.fill(m);
      allowed.clear();
      for (std::size_t i = 0; i < m.size(); ++i) {
        if (m[i] != 0) allowed.push_back(static_cast<TokenId>(i));
      }
      tokens.push_back(allowed[rng.below(allowed.size())]);
      mask.advance(tokens.back());
    }
    texts.push_back(tokenizer.decode(tokens));
  }
  return texts;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--episodes")
      o.episodes = std::stoi(next());
    else if (a == "--compile")
      o.compile = std::stoi(next());
    else if (a == "--small")
      o.small = std::stoi(next());
    else if (a == "--large")
      o.large = std::stoi(next());
    else if (a == "--max-tokens")
      o.max_tokens = std::stoi(next());
    else if (a == "--corpus")
      o.corpus = next();
    else if (a == "--tokenizer")
      o.tokenizer = next();
    else if (a == "--no-large")
      o.no_large = true;
    else if (a == "--compile-only")
      o.compile_only = true;
    else if (a == "--dump")
      o.dump = next();
    else if (a == "--rows")
      o.rows = std::stoi(next());
    else if (a == "--cache-mib")
      o.cache_mib = std::stod(next());
    else
      throw std::invalid_argument("unknown argument " + a + " (see the file's header)");
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    if (o.cache_mib >= 0) cache_bytes = static_cast<std::size_t>(o.cache_mib * (1 << 20));
    const std::vector<std::string> programs = corpus_programs();
    std::printf("bpe_mask_bench: %zu corpus programs; one thread; mask cache %.1f MiB\n",
                programs.size(), static_cast<double>(cache_bytes) / (1 << 20));
    // Training text: the CUDA corpus (where present) and the corpus programs.
    std::vector<std::string> texts = programs;
    if (fs::is_directory(o.corpus)) {
      std::vector<fs::path>
          files;  // by name, as corpus_programs() (the trainer breaks ties by order)
      for (const auto& e : fs::recursive_directory_iterator(o.corpus)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
      for (const fs::path& f : files) texts.push_back(read(f));
    }
    // Without the corpus the small tokenizer is another one (about 1,200 tokens, not 4,096) and
    // every fill() figure moves with it: said on the line that names the tokenizer, so that two
    // runs are compared only where they trained the same one (a checkout without ../shared beside
    // it once made the mask look 60% slower).
    const std::string corpus_note =
        texts.size() > programs.size()
            ? "the CUDA corpus at " + o.corpus.string() + " and the corpus programs"
            : "the corpus programs alone: no CUDA corpus at " + o.corpus.string() +
                  " (--corpus DIR)";
    std::printf("1. fill() per step, small tokenizer\n");
    const auto small = train(o.small, texts, "small (" + corpus_note + ")");
    if (!o.compile_only) cost_section(small, programs, o);
    if (!o.no_large && !o.compile_only) {
      std::printf("1. fill() per step, Qwen-sized tokenizer\n");
      std::shared_ptr<const BpeTokenizer> large;
      if (!o.tokenizer.empty()) {
        large = std::make_shared<const BpeTokenizer>(BpeTokenizer::load(o.tokenizer));
      } else if (texts.size() > programs.size()) {
        BpeTrainerOptions options;
        options.vocab_size = o.large;
        options.min_frequency = 1;
        BpeTrainer trainer(options);
        for (const std::string& t : texts) trainer.add_text(t);
        large = qwen_sized(trainer.train(), o.large);
      }
      if (large) {
        cost_section(large, programs, o);
      } else {
        std::printf("  skipped: no --tokenizer and no corpus at %s\n", o.corpus.c_str());
      }
    }
    std::printf("2. the compile stage of random episodes' programs\n");
    if (!o.dump.empty()) {
      fs::create_directories(o.dump);
      for (std::size_t i = 0; i < programs.size(); ++i) {
        std::ofstream(fs::path(o.dump) / ("corpus_" + std::to_string(i) + ".cu")) << programs[i];
      }
    }
    print_compile("BPE grammar mask, small tokenizer",
                  compile_all(random_walks(small, o.compile, o.max_tokens, false), o.dump, "bpe_"));
    print_compile("closed syntax mask (max_tokens 512)",
                  compile_all(closed_walks(o.compile, 512), o.dump, "closed_"));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bpe_mask_bench: %s\n", e.what());
    return 1;
  }
}
