// `sparserl vocab bpe`: trains the project's byte-level BPE tokenizer (env's BpeTrainer) on the
// source files under each --corpus DIR (C, C++ and CUDA sources and headers, e.g.
// ../shared/corpus/cuda) and the kernel design space's programs in the form the BPE grammar mask
// reads (bpe_program_text), and writes a Hugging Face tokenizer.json that BpeTokenizer and the
// `tokenizers` library load. It then loads the file back and checks that every input
// round-trips, and says how many bytes a token holds on average.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "options.hpp"
#include "sparserl/env/bpe_grammar_mask.hpp"
#include "sparserl/env/bpe_trainer.hpp"
#include "vocab_command.hpp"

namespace sparserl::tools::vocab {
namespace {

namespace fs = std::filesystem;

struct BpeArgs {
  std::vector<std::string> corpus;
  std::string out;
  env::BpeTrainerOptions options;
  std::string pattern = "qwen2";
  bool no_design_space = false;
};

std::vector<CorpusProgram> read_sources(const std::vector<std::string>& dirs) {
  std::vector<CorpusProgram> texts;
  try {
    for (env::SourceText& t : env::read_source_tree({dirs.begin(), dirs.end()})) {
      texts.push_back({std::move(t.name), std::move(t.text)});
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--corpus ") + e.what());
  }
  return texts;
}

int run_bpe(BpeArgs& a) {
  if (a.pattern == "gpt2") {
    a.options.pattern = std::string(env::kGpt2PreTokenizerPattern);
  } else if (a.pattern == "qwen2") {
    a.options.pattern = std::string(env::kQwen2PreTokenizerPattern);
  } else {
    a.options.pattern = a.pattern;
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<CorpusProgram> texts = read_sources(a.corpus);
  const std::size_t files = texts.size();
  if (!a.no_design_space) {
    for (CorpusProgram& p : design_space_programs()) {
      texts.push_back({p.name, env::bpe_program_text(p.text)});
    }
  }
  if (texts.empty()) throw UsageError("no input: give --corpus DIR or leave the design space in");
  std::optional<env::BpeTrainer> trainer;
  try {
    trainer.emplace(a.options);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  for (const CorpusProgram& t : texts) trainer->add_text(t.text);
  const std::string json = trainer->train();
  {
    std::ofstream out(a.out, std::ios::binary);
    if (!out) throw std::runtime_error("cannot write " + a.out);
    out << json;
  }
  const env::BpeTokenizer tokenizer = env::BpeTokenizer::load(a.out);
  std::size_t bytes = 0, tokens = 0;
  for (const CorpusProgram& t : texts) {
    const std::vector<env::TokenId> ids = tokenizer.encode(t.text);
    if (tokenizer.decode(ids) != t.text) {
      throw std::runtime_error(a.out + " does not round-trip " + t.name);
    }
    bytes += t.text.size();
    tokens += ids.size();
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "wrote " << a.out << ": " << tokenizer.size() << " tokens ("
            << a.options.special_tokens.size() << " special, 256 bytes, " << tokenizer.merges()
            << " merges) from " << files << " files and " << texts.size() - files
            << " design-space programs, " << bytes << " bytes, " << trainer->distinct_pre_tokens()
            << " distinct pre-tokens; every input round-trips, "
            << static_cast<double>(bytes) / static_cast<double>(std::max<std::size_t>(tokens, 1))
            << " bytes per token; " << secs << " s\n";
  return 0;
}

}  // namespace

Run declare_bpe(CLI::App& sub) {
  auto a = std::make_shared<BpeArgs>();
  repeatable(sub.add_option("--corpus", a->corpus,
                            "every C/C++/CUDA source or header under DIR is training text "
                            "(repeatable), e.g. ../shared/corpus/cuda"))
      ->type_name("DIR");
  sub.add_option("--out", a->out, "the tokenizer.json to write")->type_name("FILE")->required();
  sub.add_option("--vocab-size", a->options.vocab_size,
                 "tokens in all: special tokens, the 256 bytes and the merges")
      ->type_name("N")
      ->check(CLI::Range(258, 1 << 20));
  sub.add_option("--min-frequency", a->options.min_frequency,
                 "the fewest occurrences a pair needs to be merged")
      ->type_name("N")
      ->check(CLI::Range(1, 1 << 30));
  sub.add_option("--pattern", a->pattern,
                 "the pre-tokenizer: qwen2 (digits one by one), gpt2, or a PCRE2 pattern")
      ->type_name("qwen2|gpt2|REGEX");
  sub.add_flag("--no-design-space", a->no_design_space,
               "leave the kernel design space's programs out of the training text");
  return [a](const std::vector<std::string>&) { return run_bpe(*a); };
}

}  // namespace sparserl::tools::vocab
