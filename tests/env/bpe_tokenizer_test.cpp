// The byte-level BPE tokenizer against hand-built tokenizer.json files whose encodings are worked
// out by hand (merge order, words that cannot be fully merged, bytes >= 0x80, the pre-tokenizer
// patterns of GPT-2 and Qwen2 on spaces, newlines and digits, added and special tokens), the
// refusals with their JSON paths, and model folders' special ids.
#include "sparserl/env/bpe_tokenizer.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "catch.hpp"
#include "test_support.hpp"

namespace {

using namespace sparserl::env;
using nlohmann::json;
using sparserl::testing::has_substring;

// GPT-2's bytes_to_unicode(), written out independently of the library: printable Latin-1 bytes
// spell themselves, the other 68 take U+0100, U+0101, ... in byte order (space is U+0120 'Ġ').
std::string spelled(const std::string& raw) {
  std::string out;
  for (unsigned char c : raw) {
    unsigned cp = c;
    if (!((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE)) {
      unsigned n = 0;
      for (unsigned b = 0; b < c; ++b) {
        if (!((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) ++n;
      }
      cp = 256 + n;
    }
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

json qwen2_pre_tokenizer() {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"},
             {"pattern", {{"Regex", std::string(kQwen2PreTokenizerPattern)}}},
             {"behavior", "Isolated"},
             {"invert", false}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
}

json gpt2_pre_tokenizer() {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
}

// A tokenizer.json: the 256 bytes with id = byte, then each merge's result in order (ids 256...),
// then the added tokens.
struct Spec {
  using Merges = std::vector<std::pair<std::string, std::string>>;
  Merges merges;  // raw bytes
  json pre_tokenizer = qwen2_pre_tokenizer();
  std::vector<std::pair<std::string, bool>> added;  // content, special
  json normalizer = nullptr;
  bool pair_form = false;
  bool ignore_merges = false;
  std::vector<std::string> extra_vocab;  // raw, after the merges' results
};

Spec spec_of(Spec::Merges merges) {
  Spec spec;
  spec.merges = std::move(merges);
  return spec;
}

json document(const Spec& spec) {
  json vocab = json::object();
  int next = 0;
  for (int b = 0; b < 256; ++b) vocab[spelled(std::string(1, static_cast<char>(b)))] = next++;
  json merges = json::array();
  for (const auto& [a, b] : spec.merges) {
    if (!vocab.contains(spelled(a + b))) vocab[spelled(a + b)] = next++;
    if (spec.pair_form) {
      merges.push_back({spelled(a), spelled(b)});
    } else {
      merges.push_back(spelled(a) + " " + spelled(b));
    }
  }
  for (const std::string& t : spec.extra_vocab) vocab[spelled(t)] = next++;
  json added = json::array();
  for (const auto& [content, special] : spec.added) {
    added.push_back({{"id", next++},
                     {"content", content},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", special}});
  }
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"normalizer", spec.normalizer},
          {"pre_tokenizer", spec.pre_tokenizer},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"ignore_merges", spec.ignore_merges},
            {"vocab", vocab},
            {"merges", merges}}}};
}

BpeTokenizer make(const Spec& spec) {
  return BpeTokenizer::parse(document(spec).dump(), "test.json");
}

// The encoding as the tokens' raw texts: readable expectations.
std::vector<std::string> pieces(const BpeTokenizer& t, std::string_view text) {
  std::vector<std::string> out;
  for (TokenId id : t.encode(text)) out.push_back(t.token_bytes(id));
  return out;
}

using Pieces = std::vector<std::string>;

std::string refusal(const json& doc) {
  try {
    (void)BpeTokenizer::parse(doc.dump(), "bad.json");
  } catch (const BpeTokenizerError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("BPE merges apply by rank, lowest first, and stop where no merge applies", "[env][bpe]") {
  // "abc": with a+b first the word becomes ab|c; with b+c first, a|bc.
  CHECK(pieces(make(spec_of({{"a", "b"}, {"b", "c"}})), "abc") == Pieces{"ab", "c"});
  CHECK(pieces(make(spec_of({{"b", "c"}, {"a", "b"}})), "abc") == Pieces{"a", "bc"});
  // A word that cannot be fully merged: ab+c exists, nothing takes the d.
  const BpeTokenizer t = make(spec_of({{"a", "b"}, {"ab", "c"}}));
  CHECK(pieces(t, "abcd") == Pieces{"abc", "d"});
  CHECK(pieces(t, "abd") == Pieces{"ab", "d"});
  CHECK(t.encode("abc") == std::vector<TokenId>{257});  // ab = 256, abc = 257
  // Equal pairs merge leftmost first: aaa -> aa|a, aaaa -> aa|aa, then aa+aa where it exists.
  CHECK(pieces(make(spec_of({{"a", "a"}})), "aaa") == Pieces{"aa", "a"});
  CHECK(pieces(make(spec_of({{"a", "a"}, {"aa", "aa"}})), "aaaaa") == Pieces{"aaaa", "a"});
  // The pair form of merges reads the same.
  Spec pairs = spec_of({{"a", "b"}, {"ab", "c"}});
  pairs.pair_form = true;
  CHECK(make(pairs).encode("abcd") == t.encode("abcd"));
  CHECK(t.merges() == 2);
  CHECK(t.size() == 258);
}

TEST_CASE("bytes >= 0x80 and multibyte UTF-8 are byte-level tokens and round-trip", "[env][bpe]") {
  // é is C3 A9; the merge of its two bytes makes it one token spelled "Ã©".
  const BpeTokenizer t = make(spec_of({{"\xC3", "\xA9"}}));
  const std::vector<TokenId> ids = t.encode("caf\xC3\xA9");
  CHECK(ids == std::vector<TokenId>{'c', 'a', 'f', 256});
  CHECK(t.token(256) == "\xC3\x83\xC2\xA9");
  CHECK(t.token_bytes(256) == "\xC3\xA9");
  CHECK(t.token(' ') == "\xC4\xA0");  // space spells as U+0120
  CHECK(t.decode(ids) == "caf\xC3\xA9");
  // Four-byte characters, control bytes and bytes that are no UTF-8 at all.
  for (const std::string& text : {std::string("\xF0\x9F\x98\x80 x"), std::string("\x01\x7F\t\r"),
                                  std::string("\xFF\xFE ab \xC3"), std::string("a\0b", 3)}) {
    CHECK(t.decode(t.encode(text)) == text);
  }
}

TEST_CASE("Qwen2's pattern splits digits one by one and keeps spaces and newlines apart",
          "[env][bpe]") {
  // The same merges under two pre-tokenizers: GPT-2 keeps " 12" one pre-token, Qwen2 splits it
  // into " ", "1", "2", so neither " 1" nor "12" can form.
  Spec spec = spec_of({{" ", "1"}, {"1", "2"}, {" ", "b"}, {";", "\n"}, {" ", "\n"}, {"\n", "\n"}});
  const BpeTokenizer qwen = make(spec);
  spec.pre_tokenizer = gpt2_pre_tokenizer();
  const BpeTokenizer gpt2 = make(spec);
  CHECK(pieces(gpt2, "x 12") == Pieces{"x", " 1", "2"});
  CHECK(pieces(qwen, "x 12") == Pieces{"x", " ", "1", "2"});
  CHECK(pieces(gpt2, "12") == Pieces{"12"});
  CHECK(pieces(qwen, "12") == Pieces{"1", "2"});
  // Two spaces before a word: the last joins the word (\s+(?!\S) leaves it), the first stands
  // alone; Qwen2 gives the word one leading non-letter.
  CHECK(pieces(gpt2, "a  b") == Pieces{"a", " ", " b"});
  CHECK(pieces(qwen, "a  b") == Pieces{"a", " ", " b"});
  // Punctuation takes the newlines after it under Qwen2 (`;\n` merges); GPT-2 cuts before them
  // and leaves the last newline of a run on its own (\s+(?!\S)), so "\n\n" cannot form.
  CHECK(pieces(qwen, "x;\n\ny") == Pieces{"x", ";\n", "\n", "y"});
  CHECK(pieces(gpt2, "x;\n\ny") == Pieces{"x", ";", "\n", "\n", "y"});
  // Blanks before a newline go with it (\s*[\r\n]+).
  CHECK(pieces(qwen, "a \n b") == Pieces{"a", " \n", " b"});
  for (const char* text : {"x 12", "a  b", "x;\n\ny", "a \n b", "  \n\n  \t x(1, 2);\n"}) {
    CHECK(qwen.decode(qwen.encode(text)) == text);
    CHECK(gpt2.decode(gpt2.encode(text)) == text);
  }
}

TEST_CASE("added and special tokens are split out first, longest match, never merged",
          "[env][bpe]") {
  Spec spec = spec_of({{"a", "b"}, {"<", "|"}});
  spec.added = {{"<|end|>", true}, {"<|endoftext|>", true}, {"<tool>", false}};
  const BpeTokenizer t = make(spec);
  const TokenId end = *t.find("<|end|>"), endoftext = *t.find("<|endoftext|>"),
                tool = *t.find("<tool>");
  CHECK(t.is_special(endoftext));
  CHECK(t.is_added(tool));
  CHECK_FALSE(t.is_special(tool));
  CHECK(t.encode("ab<|endoftext|>ab") == std::vector<TokenId>{256, endoftext, 256});
  CHECK(t.encode("<|end|><|endoftext|>") == std::vector<TokenId>{end, endoftext});
  CHECK(t.encode("a<tool>b") == std::vector<TokenId>{'a', tool, 'b'});
  // Not an added token: "<|" merges as text.
  CHECK(pieces(t, "<|x") == Pieces{"<|", "x"});
  const std::vector<TokenId> ids = t.encode("ab<|endoftext|>ab");
  CHECK(t.decode(ids) == "ab<|endoftext|>ab");
  CHECK(t.decode(ids, true) == "abab");
  CHECK(t.eos() == endoftext);  // the well-known name
  // Ids without a token are skipped.
  CHECK(t.decode(std::vector<TokenId>{'a', 100000, -1, 'b'}) == "ab");
}

TEST_CASE("ignore_merges takes a word the vocabulary holds whole", "[env][bpe]") {
  Spec spec = spec_of({{"a", "b"}});
  spec.extra_vocab = {"abc"};
  CHECK(pieces(make(spec), "abc") == Pieces{"ab", "c"});
  spec.ignore_merges = true;
  CHECK(pieces(make(spec), "abc") == Pieces{"abc"});
}

TEST_CASE("the NFC normalizer is checked, not computed: text NFC leaves alone passes",
          "[env][bpe]") {
  Spec spec;
  spec.normalizer = {{"type", "NFC"}};
  const BpeTokenizer t = make(spec);
  const std::string composed = "caf\xC3\xA9 \xCE\xBB \xE2\x86\x92 \xE4\xB8\xAD";  // é λ → 中
  CHECK(t.decode(t.encode(composed)) == composed);
  // e + U+0301 COMBINING ACUTE ACCENT: NFC would compose it.
  try {
    (void)t.encode("cafe\xCC\x81");
    FAIL("a combining mark was encoded under NFC");
  } catch (const BpeTokenizerError& e) {
    CHECK_THAT(std::string(e.what()), has_substring("U+0301 at byte 4"));
  }
  // U+212B ANGSTROM SIGN: NFC maps it to U+00C5.
  CHECK_THROWS_AS(t.encode("\xE2\x84\xAB"), BpeTokenizerError);
  // A Sequence of NFC reads the same; without the normalizer the same text passes.
  spec.normalizer = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}}}};
  CHECK_THROWS_AS(make(spec).encode("cafe\xCC\x81"), BpeTokenizerError);
  spec.normalizer = nullptr;
  CHECK(make(spec).decode(make(spec).encode("cafe\xCC\x81")) == "cafe\xCC\x81");
}

TEST_CASE("what the tokenizer does not support is refused, naming the JSON path", "[env][bpe]") {
  const json good = document(spec_of({{"a", "b"}}));
  json doc = good;
  doc["model"]["type"] = "WordPiece";
  CHECK_THAT(refusal(doc), has_substring("bad.json: model.type: 'WordPiece' is not supported"));
  doc = good;
  doc["pre_tokenizer"] = {{"type", "Whitespace"}};
  CHECK_THAT(refusal(doc), has_substring("pre_tokenizer.type: 'Whitespace' is not supported"));
  doc = good;
  doc["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed";
  CHECK_THAT(refusal(doc),
             has_substring("pre_tokenizer.pretokenizers[0].behavior: 'Removed' is not supported"));
  doc = good;
  doc["normalizer"] = {{"type", "Lowercase"}};
  CHECK_THAT(refusal(doc), has_substring("normalizer.type: 'Lowercase' is not supported"));
  doc = good;
  doc["model"]["merges"].push_back("a zz");
  CHECK_THAT(refusal(doc),
             has_substring("model.merges[1]: 'a' + 'zz': 'zz' is not in model.vocab"));
  doc = good;
  doc["added_tokens"] = {{{"id", 300}, {"content", "<x>"}, {"lstrip", true}}};
  CHECK_THAT(refusal(doc), has_substring("added_tokens[0].lstrip: true is not supported"));
  doc = good;
  doc["model"]["byte_fallback"] = true;
  CHECK_THAT(refusal(doc), has_substring("model.byte_fallback"));
  doc = good;
  doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  CHECK_THAT(refusal(doc), has_substring("pre_tokenizer.pretokenizers[0].pattern: pattern"));
  CHECK_THAT(refusal(json::array()), has_substring("bad.json"));
  CHECK_THROWS_WITH(BpeTokenizer::parse("{not json", "broken.json"),
                    has_substring("broken.json: not JSON"));
  // A byte the vocabulary lacks cannot be encoded.
  doc = good;
  doc["model"]["vocab"].erase(spelled("z"));
  CHECK_THROWS_WITH(BpeTokenizer::parse(doc.dump(), "t.json").encode("xyz"),
                    has_substring("byte 0x7A has no token"));
}

TEST_CASE("a model folder's special ids come from config.json, then tokenizer_config.json",
          "[env][bpe]") {
  const auto dir = sparserl::testing::scratch_dir("bpe_folder");
  Spec spec;
  spec.added = {{"<|endoftext|>", true}, {"<|im_end|>", true}, {"<s>", true}};
  { std::ofstream(dir / "tokenizer.json") << document(spec).dump(); }
  // From the file alone: the well-known names.
  const BpeTokenizer plain = BpeTokenizer::load_folder(dir);
  CHECK(plain.eos() == 256);
  CHECK(plain.bos() == 258);
  CHECK_FALSE(plain.pad().has_value());
  {
    std::ofstream(dir / "tokenizer_config.json")
        << R"({"eos_token": {"content": "<|im_end|>"}, "pad_token": "<|endoftext|>"})";
  }
  CHECK(BpeTokenizer::load_folder(dir).eos() == 257);
  CHECK(BpeTokenizer::load_folder(dir).pad() == 256);
  { std::ofstream(dir / "config.json") << R"({"eos_token_id": [256, 257], "bos_token_id": null})"; }
  const BpeTokenizer configured = BpeTokenizer::load_folder(dir);
  CHECK(configured.eos() == 256);  // the first of the list
  CHECK(configured.bos() == 258);
  CHECK(configured.digest().size() == 64);
  CHECK_THROWS_AS(BpeTokenizer::load_folder(dir / "missing"), BpeTokenizerError);
}
