// BpeTokenizer against the tokenizers library (issue 28's parity): tests/fixtures/hf holds, for
// each tiny model make_fixtures.py made on the GPU host, the tokenizer.json the tokenizers library
// trained and what that library encoded - the prompts' ids, and for 40 corpus files the token
// count and the SHA-256 of the ids (the corpus text itself is not committed; it is read from
// ../shared/corpus/cuda). The C++ encoding must be the same ids, and decoding them must give the
// text back wherever the library's decoding did. Skipped where the fixtures or the corpus are
// absent.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "catch.hpp"
#include "hf_fixtures.hpp"
#include "sparserl/env/bpe_tokenizer.hpp"
#include "sparserl/reward/digest.hpp"
#include "test_support.hpp"

namespace {

using namespace sparserl::env;
using nlohmann::json;
namespace fs = std::filesystem;

fs::path fixtures() { return sparserl::testing::hf_fixtures_dir(); }

json read_json(const fs::path& file) { return sparserl::testing::read_json_file(file); }

std::vector<std::string> fixture_models() {
  if (!fs::exists(fixtures() / "manifest.json")) {
    sparserl::testing::skip("no tests/fixtures/hf/manifest.json (make_fixtures.py makes it)");
  }
  return sparserl::testing::hf_fixture_models();
}

// The digest make_fixtures.py records: SHA-256 of the ids as int32 little-endian.
std::string ids_digest(const std::vector<TokenId>& ids) {
  std::string bytes;
  for (const TokenId id : ids) {
    const auto v = static_cast<std::uint32_t>(static_cast<std::int32_t>(id));
    for (int shift = 0; shift < 32; shift += 8) bytes.push_back(static_cast<char>(v >> shift));
  }
  return sparserl::reward::sha256_hex(bytes);
}

}  // namespace

TEST_CASE("BPE parity: the fixtures' prompts encode to the tokenizers library's ids",
          "[env][bpe][parity]") {
  for (const std::string& name : fixture_models()) {
    INFO(name);
    const BpeTokenizer tokenizer = BpeTokenizer::load(fixtures() / name / "tokenizer.json");
    const json expected = read_json(fixtures() / "expected" / (name + ".json"));
    const json& bos = expected.at("bos_token_id");
    REQUIRE(expected.at("prompts").size() >= 3);
    for (const json& prompt : expected.at("prompts")) {
      const std::string text = prompt.at("text").get<std::string>();
      INFO(text);
      std::vector<TokenId> ids;
      if (!bos.is_null()) ids.push_back(bos.get<TokenId>());
      for (const TokenId id : tokenizer.encode(text)) ids.push_back(id);
      CHECK(ids == prompt.at("input_ids").get<std::vector<TokenId>>());
    }
  }
}

TEST_CASE("BPE parity: corpus files encode to the tokenizers library's ids and decode back",
          "[env][bpe][parity]") {
  const std::vector<std::string> models = fixture_models();
  const fs::path corpus = sparserl::testing::shared_dir() / "corpus" / "cuda";
  if (!fs::is_directory(corpus)) sparserl::testing::skip("no ../shared/corpus/cuda");
  for (const std::string& name : models) {
    INFO(name);
    const BpeTokenizer tokenizer = BpeTokenizer::load(fixtures() / name / "tokenizer.json");
    const json encodings = read_json(fixtures() / "expected" / (name + ".encodings.json"));
    std::size_t compared = 0;
    for (const json& file : encodings.at("files")) {
      const fs::path path = corpus / file.at("path").get<std::string>();
      INFO(path.string());
      REQUIRE(fs::exists(path));
      const std::string text = sparserl::testing::read_bytes(path);
      REQUIRE(text.size() == file.at("bytes").get<std::size_t>());
      const std::vector<TokenId> ids = tokenizer.encode(text);
      CHECK(ids.size() == file.at("tokens").get<std::size_t>());
      CHECK(ids_digest(ids) == file.at("ids_sha256").get<std::string>());
      if (file.at("decodes_to_text").get<bool>()) CHECK(tokenizer.decode(ids) == text);
      ++compared;
    }
    CHECK(compared >= 20);
  }
}
