// The project's BPE trainer: merges worked out by hand on a tiny text, the vocabulary's layout
// (special tokens, the 256 bytes, the merges), determinism, its refusals, and - with
// ../shared/corpus - a tokenizer trained on a few corpus files that round-trips every file of the
// corpus (decode(encode(t)) == t) and compresses it; and its command, `sparserl vocab bpe`.
#include "sparserl/env/bpe_trainer.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "catch.hpp"
#include "sparserl/env/bpe_tokenizer.hpp"
#include "test_support.hpp"

namespace {

using namespace sparserl::env;
using nlohmann::json;

BpeTrainerOptions options(int vocab_size, int min_frequency = 2) {
  BpeTrainerOptions o;
  o.vocab_size = vocab_size;
  o.min_frequency = min_frequency;
  return o;
}

std::string train(const BpeTrainerOptions& o, const std::vector<std::string>& texts) {
  BpeTrainer trainer(o);
  for (const std::string& t : texts) trainer.add_text(t);
  return trainer.train();
}

}  // namespace

TEST_CASE("the BPE trainer learns the most frequent pairs first", "[env][bpe]") {
  // Pre-tokens (Qwen2's pattern): "ab" once, " ab" twice, " cd" once. Pairs: a+b 3 times, then
  // Ġ+ab twice; Ġ+c and c+d occur once, below min_frequency 2.
  const std::string text = train(options(1000), {"ab ab ab cd"});
  const json doc = json::parse(text);
  CHECK(doc["model"]["merges"] == json::array({"a b", "\xC4\xA0 ab"}));
  CHECK(doc["model"]["vocab"].size() == 2 + 256 + 2);
  CHECK(doc["added_tokens"][0]["content"] == "<|endoftext|>");
  CHECK(doc["model"]["vocab"]["<|endoftext|>"] == 0);
  CHECK(doc["model"]["vocab"]["a"] == 2 + 'a');  // bytes follow the special tokens in byte order
  CHECK(doc["model"]["vocab"]["\xC4\xA0"
                              "ab"] == 259);

  const BpeTokenizer t = BpeTokenizer::parse(text, "trained");
  CHECK(t.encode("ab ab") == std::vector<TokenId>{258, 259});
  CHECK(t.eos() == 0);
  CHECK(t.pad() == 1);
  // min_frequency 1 takes the single pairs too; a vocab_size cap stops early.
  CHECK(json::parse(train(options(1000, 1), {"ab ab ab cd"}))["model"]["merges"].size() == 4);
  CHECK(json::parse(train(options(2 + 256 + 1), {"ab ab ab cd"}))["model"]["merges"] ==
        json::array({"a b"}));
}

TEST_CASE("BPE training is deterministic and refuses impossible options", "[env][bpe]") {
  const std::vector<std::string> texts = {"for (int i = 0; i < n; ++i) sum += x[i];",
                                          "for (int j = 0; j < m; ++j) y[j] = 0;"};
  CHECK(train(options(300), texts) == train(options(300), texts));
  CHECK_THROWS_AS(BpeTrainer(options(200)), std::invalid_argument);
  BpeTrainerOptions repeated = options(400);
  repeated.special_tokens = {"<a>", "<a>"};
  CHECK_THROWS_AS(BpeTrainer(repeated), std::invalid_argument);
  BpeTrainerOptions bad_pattern = options(400);
  bad_pattern.pattern = "(";
  CHECK_THROWS_AS(BpeTrainer(bad_pattern), std::invalid_argument);
}

TEST_CASE("a tokenizer trained on a few corpus files round-trips every file of the corpus",
          "[env][bpe][corpus]") {
  const auto corpus = sparserl::testing::shared_dir() / "corpus" / "cuda";
  if (!std::filesystem::is_directory(corpus)) sparserl::testing::skip("no ../shared/corpus/cuda");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(corpus)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() > 100);
  BpeTrainer trainer(options(2048));
  for (std::size_t i = 0; i < files.size(); i += files.size() / 12) {
    trainer.add_text(sparserl::testing::read_bytes(files[i]));
  }
  const BpeTokenizer t = BpeTokenizer::parse(trainer.train(), "trained on 12 corpus files");
  CHECK(t.size() == 2048);
  std::size_t bytes = 0, tokens = 0;
  int failures = 0;
  for (const auto& f : files) {
    const std::string text = sparserl::testing::read_bytes(f);
    const std::vector<TokenId> ids = t.encode(text);
    bytes += text.size();
    tokens += ids.size();
    if (t.decode(ids) != text && ++failures <= 3) UNSCOPED_INFO("no round trip: " << f);
  }
  CHECK(failures == 0);
  INFO(files.size() << " files, " << bytes << " bytes, " << tokens << " tokens");
  CHECK(static_cast<double>(bytes) / static_cast<double>(tokens) > 2.5);
}

TEST_CASE("`sparserl vocab bpe` writes a tokenizer.json trained on a corpus folder",
          "[env][bpe][cli]") {
  namespace fs = std::filesystem;
  const fs::path dir = sparserl::testing::scratch_dir("vocab_bpe");
  fs::create_directories(dir / "corpus" / "sub");
  const std::string kernel =
      "__global__ void scale(float* y, const float* x, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) y[i] = 2.0f * x[i];\n}\n";
  {
    std::ofstream(dir / "corpus" / "a.cu") << kernel << kernel;
    std::ofstream(dir / "corpus" / "sub" / "b.cuh") << "#pragma once\n" << kernel;
    std::ofstream(dir / "corpus" / "notes.txt") << "zzzz zzzz zzzz zzzz zzzz zzzz zzzz zzzz\n";
  }
  const std::string cli = SPARSERL_CLI_PATH;
  const fs::path out = dir / "tokenizer.json";
  int status = 0;
  const std::string output = sparserl::testing::run_command(
      cli + " vocab bpe --corpus " + sparserl::testing::quoted(dir / "corpus") +
          " --vocab-size 300 --no-design-space --out " + sparserl::testing::quoted(out),
      status);
  INFO(output);
  REQUIRE(WEXITSTATUS(status) == 0);
  CHECK_THAT(output, sparserl::testing::has_substring("from 2 files"));
  CHECK_THAT(output, sparserl::testing::has_substring("every input round-trips"));
  const BpeTokenizer t = BpeTokenizer::load(out);
  CHECK(t.size() > 258 + 20);  // merges learnt
  CHECK(t.size() <= 300);
  CHECK(t.eos() == 0);
  // The .txt file is no source: "zz" was never a pair of the training text.
  CHECK_FALSE(t.find("zz").has_value());
  CHECK(t.encode(kernel).size() * 2 < kernel.size());  // merges learnt from the sources
  CHECK(t.decode(t.encode(kernel)) == kernel);
  // Bad arguments: exit status 2, naming what is wrong.
  const std::string small = sparserl::testing::run_command(
      cli + " vocab bpe --vocab-size 100 --out " + sparserl::testing::quoted(out), status);
  CHECK(WEXITSTATUS(status) == 2);
  const std::string missing = sparserl::testing::run_command(
      cli + " vocab bpe --corpus " + sparserl::testing::quoted(dir / "missing") + " --out " +
          sparserl::testing::quoted(out),
      status);
  CHECK(WEXITSTATUS(status) == 2);
  CHECK_THAT(missing, sparserl::testing::has_substring("not a folder"));
}
