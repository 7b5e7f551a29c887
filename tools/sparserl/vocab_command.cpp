// `sparserl vocab`: the tokenizer's vocabularies on the command line. `build` makes a vocabulary
// file from the fixed lists, the kernel ABI registry and a corpus (reward/programs and the kernel
// design space by default; a builtin the corpus calls without declaring is added); `show` prints
// one; `encode` prints a program's tokens and its decoded, canonical text; `check` encodes every
// corpus program and says which ones do not round-trip. The committed env/vocab/cuda-c-v1.vocab is
// `sparserl vocab build --out env/vocab/cuda-c-v1.vocab`. `bpe` (vocab_bpe_command.cpp) trains
// the project's byte-level BPE tokenizer.
#include "vocab_command.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "options.hpp"
#include "sparserl/env/action_mask.hpp"
#include "sparserl/env/tokenizer.hpp"
#if __has_include("sparserl/kernels/design_space.hpp")
#include "sparserl/kernels/design_space.hpp"
#define SPARSERL_VOCAB_HAVE_KERNELS 1
#endif

namespace sparserl::tools {

std::vector<vocab::CorpusProgram> vocab::design_space_programs() {
  std::vector<CorpusProgram> programs;
#ifdef SPARSERL_VOCAB_HAVE_KERNELS
  for (datasets::Op op : {datasets::Op::spmv, datasets::Op::spmm}) {
    for (datasets::DType dtype : {datasets::DType::f32, datasets::DType::f64}) {
      const kernels::DesignSpace space(op, dtype);
      for (const kernels::DesignPoint& p : space.points()) {
        programs.push_back({std::string(datasets::to_string(op)) + " " +
                                std::string(datasets::to_string(dtype)) + " " + p.id(),
                            space.render(p)});
      }
    }
  }
#endif
  return programs;
}

namespace {

namespace fs = std::filesystem;
using vocab::CorpusProgram;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The default corpus folder: reward/programs beside the executable's source tree, if it is there.
std::vector<fs::path> default_corpus_dirs() {
  std::vector<fs::path> dirs;
  for (fs::path p : {fs::path("reward/programs"), fs::path("../reward/programs"),
                     fs::path("../../reward/programs")}) {
    if (fs::is_directory(p)) {
      dirs.push_back(p);
      break;
    }
  }
  return dirs;
}

// The programs of the --corpus folders (or the default one) and, with `design_space`, of the
// kernel design space.
std::vector<CorpusProgram> load_corpus(const std::vector<std::string>& corpus_dirs,
                                       bool design_space) {
  std::vector<fs::path> dirs(corpus_dirs.begin(), corpus_dirs.end());
  if (dirs.empty()) dirs = default_corpus_dirs();
  std::vector<CorpusProgram> corpus;
  for (const fs::path& dir : dirs) {
    if (!fs::is_directory(dir))
      throw std::runtime_error("--corpus " + dir.string() + ": not a folder");
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (e.is_regular_file() && e.path().extension() == ".cu") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) corpus.push_back({f.string(), read_file(f)});
  }
  if (design_space) {
    for (CorpusProgram& p : vocab::design_space_programs()) corpus.push_back(std::move(p));
  }
  return corpus;
}

std::shared_ptr<const env::Vocabulary> vocabulary_of(const std::optional<std::string>& file) {
  if (file) return std::make_shared<const env::Vocabulary>(env::Vocabulary::load(*file));
  return std::make_shared<const env::Vocabulary>(env::Vocabulary::standard());
}

struct VocabArgs {
  std::string out;                   // build
  env::VocabularyOptions options;    // build: --name, --locals
  std::vector<std::string> corpus;   // build, check
  bool no_design_space = false;      // build, check
  std::optional<std::string> file;   // show FILE, encode PROGRAM
  std::optional<std::string> vocab;  // encode, check
  bool json = false;                 // show
};

int run_build(const VocabArgs& a) {
  env::VocabularyOptions options = a.options;
  const fs::path out = a.out;
  const std::vector<CorpusProgram> corpus = load_corpus(a.corpus, !a.no_design_space);
  const env::Tokenizer lists(
      std::make_shared<const env::Vocabulary>(env::Vocabulary::build(options)));
  for (const CorpusProgram& p : corpus) {
    try {
      for (const std::string& name : lists.undeclared_calls(p.text)) {
        std::cerr << "corpus " << p.name << " calls '" << name
                  << "' without declaring it: added as a builtin\n";
        options.extra_builtins.push_back(name);
      }
    } catch (const env::TokenizeError& e) {
      throw std::runtime_error("corpus program " + p.name + ": " + e.what());
    }
  }
  const env::Vocabulary v = env::Vocabulary::build(options);
  v.save(out);
  std::cout << "wrote " << out.string() << ": vocabulary " << v.name() << ", " << v.size()
            << " tokens, " << corpus.size() << " corpus programs, digest " << v.digest() << "\n";
  return 0;
}

int run_show(const VocabArgs& a) {
  const env::Vocabulary v = a.file ? env::Vocabulary::load(*a.file) : env::Vocabulary::standard();
  std::map<std::string, std::vector<std::string>> by_class;
  for (const env::TokenSpec& t : v.tokens())
    by_class[std::string(env::to_string(t.cls))].push_back(t.text);
  if (a.json) {
    std::cout << "{\"name\":\"" << v.name() << "\",\"size\":" << v.size() << ",\"digest\":\""
              << v.digest() << "\",\"classes\":{";
    bool first = true;
    for (const auto& [cls, tokens] : by_class) {
      std::cout << (first ? "" : ",") << "\"" << cls << "\":" << tokens.size();
      first = false;
    }
    std::cout << "}}\n";
    return 0;
  }
  std::cout << "vocabulary " << v.name() << ": " << v.size() << " tokens, digest " << v.digest()
            << "\n";
  for (const auto& [cls, tokens] : by_class) {
    std::cout << "  " << cls << " (" << tokens.size() << "):";
    std::size_t shown = 0;
    for (const std::string& t : tokens) {
      if (++shown > 24) {
        std::cout << " ...";
        break;
      }
      std::cout << " " << t;
    }
    std::cout << "\n";
  }
  return 0;
}

int run_encode(const VocabArgs& a) {
  const std::string& file = *a.file;
  const env::Tokenizer tokenizer(vocabulary_of(a.vocab));
  const std::string text = read_file(file);
  env::EncodedProgram encoded;
  try {
    encoded = tokenizer.encode(text);
  } catch (const env::TokenizeError& e) {
    throw std::runtime_error(file + ": " + e.what());
  }
  std::cout << encoded.tokens.size() << " tokens:";
  for (env::TokenId id : encoded.tokens) std::cout << " " << id;
  std::cout << "\nlocals:";
  for (std::size_t i = 0; i < encoded.locals.size(); ++i)
    std::cout << " v" << i << "=" << encoded.locals[i];
  std::cout << "\n\n" << tokenizer.decode(encoded.tokens);
  return 0;
}

int run_check(const VocabArgs& a) {
  const auto vocabulary = vocabulary_of(a.vocab);
  const env::Tokenizer tokenizer(vocabulary);
  const std::vector<CorpusProgram> corpus = load_corpus(a.corpus, !a.no_design_space);
  int failures = 0;
  std::size_t longest = 0, most_locals = 0;
  for (const CorpusProgram& p : corpus) {
    try {
      const env::EncodedProgram e = tokenizer.encode(p.text);
      longest = std::max(longest, e.tokens.size());
      most_locals = std::max(most_locals, e.locals.size());
      if (tokenizer.encode(tokenizer.decode(e.tokens)).tokens != e.tokens) {
        throw std::runtime_error("decode(encode(p)) does not encode back to the same tokens");
      }
      env::ActionMask mask(vocabulary, env::MaskMode::syntax,
                           static_cast<int>(e.tokens.size()) + 16);
      for (std::size_t i = 0; i < e.tokens.size(); ++i) {
        if (!mask.allows(e.tokens[i])) {
          throw std::runtime_error("the syntax mask refuses token " + std::to_string(i) + " (" +
                                   vocabulary->describe(e.tokens[i]) + ")");
        }
        mask.advance(e.tokens[i]);
      }
    } catch (const std::exception& e) {
      ++failures;
      std::cerr << p.name << ": " << e.what() << "\n";
    }
  }
  std::cout << corpus.size() << " programs, " << failures << " failed; longest " << longest
            << " tokens; most locals " << most_locals << " of " << vocabulary->locals()
            << " (vocabulary " << vocabulary->name() << ")\n";
  return failures == 0 ? 0 : 1;
}

CLI::Option* add_corpus(CLI::App& app, VocabArgs& a) {
  app.add_flag("--no-design-space", a.no_design_space,
               "leave the kernel design space's programs out of the corpus");
  return repeatable(app.add_option("--corpus", a.corpus,
                                   "every .cu file under DIR is a corpus program (repeatable; "
                                   "default: reward/programs under the source tree, when found)"))
      ->type_name("DIR");
}

Run declare_vocab(CLI::App& app) {
  app.description("The environment's token vocabularies (env/vocab/NAME.vocab).");
  app.footer("exit status: 0 done, 1 a failure (named), 2 bad arguments");
  auto a = std::make_shared<VocabArgs>();
  Subcommands subcommands(app);
  subcommands.add(
      "build",
      "a vocabulary from the fixed token lists, the kernel ABI registry and the corpus: every\n"
      ".cu file under each --corpus DIR and the kernel design space's programs. Builtins the\n"
      "corpus calls without declaring them are added.",
      [a](CLI::App& sub) -> Run {
        sub.add_option("--out", a->out, "the vocabulary file to write")
            ->type_name("FILE")
            ->required();
        sub.add_option("--name", a->options.name, "the vocabulary's name")->type_name("NAME");
        sub.add_option("--locals", a->options.locals, "local-variable tokens")
            ->type_name("N")
            ->check(CLI::Range(1, 4096));
        add_corpus(sub, *a);
        return [a](const std::vector<std::string>&) { return run_build(*a); };
      });
  subcommands.add("show", "name, size, digest and the tokens by class", [a](CLI::App& sub) -> Run {
    sub.add_option("FILE", a->file, "the vocabulary file (default: the standard vocabulary)");
    sub.add_flag("--json", a->json, "print name, size, digest and class sizes as JSON");
    return [a](const std::vector<std::string>&) { return run_show(*a); };
  });
  subcommands.add("encode", "the program's token ids, then its decoded (canonical) text",
                  [a](CLI::App& sub) -> Run {
                    sub.add_option("PROGRAM", a->file, "the program file")->required();
                    sub.add_option("--vocab", a->vocab,
                                   "the vocabulary (default: the standard one)")
                        ->type_name("FILE");
                    return [a](const std::vector<std::string>&) { return run_encode(*a); };
                  });
  subcommands.add(
      "bpe",
      "the project's byte-level BPE tokenizer (a Hugging Face tokenizer.json), trained\n"
      "on the source files under each --corpus DIR and the design space's programs",
      vocab::declare_bpe);
  subcommands.add(
      "check",
      "encodes every corpus program: round trip, syntax-mask acceptance, longest sequence,\n"
      "most locals; exit 1 when a program fails",
      [a](CLI::App& sub) -> Run {
        sub.add_option("--vocab", a->vocab, "the vocabulary (default: the standard one)")
            ->type_name("FILE");
        add_corpus(sub, *a);
        return [a](const std::vector<std::string>&) { return run_check(*a); };
      });
  return subcommands.run();
}

const CommandRegistration kRegistration("vocab",
                                        "build, show and check the tokenizer's vocabularies",
                                        declare_vocab);

}  // namespace
}  // namespace sparserl::tools
