// Reading a tokenizer.json (the parts bpe_tokenizer.hpp lists, each checked where it is read, so
// that an error names its JSON path) and the encoder: added tokens split out, the text checked
// for NFC, pre-tokens cut by the patterns, each merged by rank as the `tokenizers` library's
// Word::merge_all does - a heap of candidate pairs ordered by rank then position, stale entries
// skipped - so that ties between equal pairs resolve the same way.
#include "sparserl/env/bpe_tokenizer.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>
#include <unordered_map>

#include "byte_level.hpp"
#include "sparserl/reward/digest.hpp"

namespace sparserl::env {

using nlohmann::json;

struct BpeTokenizer::Model {
  std::string source, digest;
  std::vector<std::string> tokens;  // by id, as spelled; empty where an id has no token
  std::vector<std::string> bytes;   // by id: what decode() writes
  enum Kind : std::uint8_t { none, vocab, added, special };
  std::vector<Kind> kind;
  std::unordered_map<std::string, TokenId> by_token;  // spelled vocabulary tokens
  std::unordered_map<std::string, TokenId> by_added;  // added tokens' contents
  struct Merge {
    int rank = 0;
    TokenId id = -1;
  };
  std::unordered_map<std::uint64_t, Merge> merges;  // (left id, right id) -> rank, merged id
  std::array<TokenId, 256> byte_ids{};
  std::vector<BpeAddedToken> added_tokens;
  // Added tokens by first byte, longest first: the leftmost-longest split.
  std::array<std::vector<const BpeAddedToken*>, 256> added_by_first;
  std::vector<byte_level::SplitPattern> splits;  // applied in order, each to every piece
  bool nfc = false;
  bool ignore_merges = false;
  BpeSpecialIds defaults;

  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<TokenId>> cache;  // pre-token -> ids

  static std::uint64_t pair(TokenId a, TokenId b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
           static_cast<std::uint32_t>(b);
  }
  void encode_piece(std::string_view piece, std::vector<TokenId>& out) const;
  void merge(std::string_view piece, std::vector<TokenId>& out) const;
  void encode_text(std::string_view text, std::size_t offset, std::vector<TokenId>& out) const;
};

namespace {

constexpr std::size_t kCacheLimit = 1 << 17;

// Errors name the file and the JSON path.
[[noreturn]] void fail(const std::string& source, const std::string& path,
                       const std::string& message) {
  throw BpeTokenizerError(source + ": " + path + ": " + message);
}

const json& member(const json& object, const char* key, const std::string& source,
                   const std::string& path) {
  if (!object.is_object() || !object.contains(key)) fail(source, path, "missing");
  return object.at(key);
}

bool flag(const json& object, const char* key, bool fallback, const std::string& source,
          const std::string& path) {
  if (!object.contains(key) || object.at(key).is_null()) return fallback;
  if (!object.at(key).is_boolean()) fail(source, path + "." + key, "expected true or false");
  return object.at(key).get<bool>();
}

std::string type_of(const json& object, const std::string& source, const std::string& path) {
  const json& type = member(object, "type", source, path + ".type");
  if (!type.is_string()) fail(source, path + ".type", "expected a string");
  return type.get<std::string>();
}

void read_normalizer(BpeTokenizer::Model& m, const json& n, const std::string& path) {
  if (n.is_null()) return;
  const std::string type = type_of(n, m.source, path);
  if (type == "NFC") {
    m.nfc = true;
  } else if (type == "Sequence") {
    const json& list = member(n, "normalizers", m.source, path + ".normalizers");
    for (std::size_t i = 0; i < list.size(); ++i) {
      read_normalizer(m, list[i], path + ".normalizers[" + std::to_string(i) + "]");
    }
  } else {
    fail(m.source, path + ".type", "'" + type + "' is not supported (null and NFC are)");
  }
}

void read_byte_level(BpeTokenizer::Model& m, const json& p, const std::string& path) {
  if (flag(p, "add_prefix_space", false, m.source, path)) {
    fail(m.source, path + ".add_prefix_space", "true is not supported");
  }
  if (flag(p, "use_regex", true, m.source, path)) m.splits.emplace_back(kGpt2PreTokenizerPattern);
}

void read_split(BpeTokenizer::Model& m, const json& p, const std::string& path) {
  const std::string behavior =
      member(p, "behavior", m.source, path + ".behavior").get<std::string>();
  if (behavior != "Isolated") {
    fail(m.source, path + ".behavior", "'" + behavior + "' is not supported (Isolated is)");
  }
  if (flag(p, "invert", false, m.source, path))
    fail(m.source, path + ".invert", "true is not supported");
  const json& pattern = member(p, "pattern", m.source, path + ".pattern");
  try {
    if (pattern.contains("Regex")) {
      m.splits.emplace_back(pattern.at("Regex").get<std::string>());
    } else if (pattern.contains("String")) {
      m.splits.emplace_back(pattern.at("String").get<std::string>(), true);
    } else {
      fail(m.source, path + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
    }
  } catch (const std::invalid_argument& e) {
    fail(m.source, path + ".pattern", e.what());
  }
}

void read_pre_tokenizer(BpeTokenizer::Model& m, const json& p, const std::string& path) {
  if (p.is_null()) fail(m.source, path, "null is not supported (a byte-level BPE needs ByteLevel)");
  const std::string type = type_of(p, m.source, path);
  if (type == "ByteLevel") return read_byte_level(m, p, path);
  if (type != "Sequence") {
    fail(m.source, path + ".type",
         "'" + type + "' is not supported (ByteLevel, or a Sequence of Split steps and ByteLevel)");
  }
  const json& list = member(p, "pretokenizers", m.source, path + ".pretokenizers");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = path + ".pretokenizers[" + std::to_string(i) + "]";
    const std::string step = type_of(list[i], m.source, at);
    const bool last = i + 1 == list.size();
    if (step == "Split" && !last) {
      read_split(m, list[i], at);
    } else if (step == "ByteLevel" && last) {
      read_byte_level(m, list[i], at);
    } else {
      fail(m.source, at + ".type",
           "'" + step + "' is not supported here (Split steps, then ByteLevel last)");
    }
  }
  if (list.empty() || type_of(list.back(), m.source, path) != "ByteLevel") {
    fail(m.source, path + ".pretokenizers", "a byte-level BPE needs ByteLevel as the last step");
  }
}

void read_model_options(const BpeTokenizer::Model& m, const json& model) {
  const auto refuse_if = [&](const char* key, bool bad, const char* what) {
    if (bad) fail(m.source, std::string("model.") + key, what);
  };
  if (model.contains("type") && type_of(model, m.source, "model") != "BPE") {
    fail(m.source, "model.type",
         "'" + type_of(model, m.source, "model") + "' is not supported (BPE is)");
  }
  refuse_if("dropout",
            model.contains("dropout") && !model["dropout"].is_null() &&
                model["dropout"].get<double>() != 0.0,
            "dropout is not supported");
  refuse_if("byte_fallback", flag(model, "byte_fallback", false, m.source, "model"),
            "true is not supported (a byte-level vocabulary needs no fallback)");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    refuse_if(
        key, model.contains(key) && !model[key].is_null() && !model[key].get<std::string>().empty(),
        "a subword prefix or suffix is not supported");
  }
}

void read_vocab(BpeTokenizer::Model& m, const json& vocab) {
  if (!vocab.is_object()) fail(m.source, "model.vocab", "expected an object {token: id}");
  std::size_t size = 0;
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() >= (1 << 30)) {
      fail(m.source, "model.vocab[\"" + token + "\"]", "expected an id in [0, 2^30)");
    }
    size = std::max(size, static_cast<std::size_t>(id.get<std::int64_t>()) + 1);
  }
  m.tokens.assign(size, "");
  m.bytes.assign(size, "");
  m.kind.assign(size, BpeTokenizer::Model::none);
  m.byte_ids.fill(-1);
  for (const auto& [token, id_json] : vocab.items()) {
    const auto id = static_cast<TokenId>(id_json.get<std::int64_t>());
    const auto i = static_cast<std::size_t>(id);
    if (m.kind[i] != BpeTokenizer::Model::none) {
      fail(m.source, "model.vocab[\"" + token + "\"]",
           "id " + std::to_string(id) + " is also '" + m.tokens[i] + "'");
    }
    const auto bytes = byte_level::unspell(token);
    if (!bytes) {
      fail(m.source, "model.vocab[\"" + token + "\"]",
           "a character outside the byte-level alphabet (not a byte-level BPE vocabulary)");
    }
    m.tokens[i] = token;
    m.bytes[i] = *bytes;
    m.kind[i] = BpeTokenizer::Model::vocab;
    m.by_token.emplace(token, id);
    if (bytes->size() == 1) m.byte_ids[static_cast<std::uint8_t>((*bytes)[0])] = id;
  }
}

void read_merges(BpeTokenizer::Model& m, const json& merges) {
  if (!merges.is_array()) fail(m.source, "model.merges", "expected an array");
  m.merges.reserve(merges.size());
  for (std::size_t r = 0; r < merges.size(); ++r) {
    const std::string path = "model.merges[" + std::to_string(r) + "]";
    std::string left, right;
    const json& e = merges[r];
    if (e.is_string()) {
      const std::string s = e.get<std::string>();
      const auto space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        fail(m.source, path, "'" + s + "': expected two tokens separated by one space");
      }
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      left = e[0].get<std::string>();
      right = e[1].get<std::string>();
    } else {
      fail(m.source, path, "expected \"a b\" or [\"a\", \"b\"]");
    }
    const auto a = m.by_token.find(left), b = m.by_token.find(right),
               ab = m.by_token.find(left + right);
    if (a == m.by_token.end() || b == m.by_token.end() || ab == m.by_token.end()) {
      fail(m.source, path,
           "'" + left + "' + '" + right + "': " +
               (a == m.by_token.end()   ? "'" + left + "'"
                : b == m.by_token.end() ? "'" + right + "'"
                                        : "'" + left + right + "'") +
               " is not in model.vocab");
    }
    // A repeated pair keeps its first (lowest) rank, as the library's map does.
    m.merges.emplace(BpeTokenizer::Model::pair(a->second, b->second),
                     BpeTokenizer::Model::Merge{static_cast<int>(r), ab->second});
  }
}

void read_added(BpeTokenizer::Model& m, const json& added) {
  if (added.is_null()) return;
  if (!added.is_array()) fail(m.source, "added_tokens", "expected an array");
  for (std::size_t i = 0; i < added.size(); ++i) {
    const std::string path = "added_tokens[" + std::to_string(i) + "]";
    const json& a = added[i];
    for (const char* key : {"lstrip", "rstrip", "single_word"}) {
      if (flag(a, key, false, m.source, path))
        fail(m.source, path + "." + key, "true is not supported");
    }
    const json& id_json = member(a, "id", m.source, path + ".id");
    const json& content = member(a, "content", m.source, path + ".content");
    if (!id_json.is_number_integer() || id_json.get<std::int64_t>() < 0 ||
        id_json.get<std::int64_t>() >= (1 << 30) || !content.is_string() ||
        content.get<std::string>().empty()) {
      fail(m.source, path, "expected an id in [0, 2^30) and a non-empty content");
    }
    BpeAddedToken token{static_cast<TokenId>(id_json.get<std::int64_t>()),
                        content.get<std::string>(), flag(a, "special", false, m.source, path)};
    const auto index = static_cast<std::size_t>(token.id);
    if (index >= m.tokens.size()) {
      m.tokens.resize(index + 1);
      m.bytes.resize(index + 1);
      m.kind.resize(index + 1, BpeTokenizer::Model::none);
    }
    if (m.kind[index] == BpeTokenizer::Model::vocab && m.tokens[index] != token.content) {
      fail(m.source, path,
           "id " + std::to_string(token.id) + " is '" + m.tokens[index] + "' in model.vocab");
    }
    m.tokens[index] = token.content;
    // As the ByteLevel decoder writes it: through the alphabet when every character is in it,
    // else the content's own bytes.
    m.bytes[index] = byte_level::unspell(token.content).value_or(token.content);
    m.kind[index] = token.special ? BpeTokenizer::Model::special : BpeTokenizer::Model::added;
    m.by_added[token.content] = token.id;
    m.added_tokens.push_back(std::move(token));
  }
  for (const BpeAddedToken& t : m.added_tokens) {
    m.added_by_first[static_cast<std::uint8_t>(t.content[0])].push_back(&t);
  }
  for (auto& list : m.added_by_first) {
    std::stable_sort(list.begin(), list.end(), [](const BpeAddedToken* a, const BpeAddedToken* b) {
      return a->content.size() > b->content.size();
    });
  }
}

// The added tokens' well-known names, where the files say nothing of the special roles.
BpeSpecialIds guess_special_ids(const BpeTokenizer::Model& m) {
  const auto first_of = [&](std::initializer_list<const char*> names) -> std::optional<TokenId> {
    for (const char* name : names) {
      if (auto it = m.by_added.find(name); it != m.by_added.end()) return it->second;
    }
    return std::nullopt;
  };
  BpeSpecialIds ids;
  ids.bos = first_of({"<|begin_of_text|>", "<s>", "<bos>", "<|bos|>"});
  ids.eos = first_of({"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>", "<|eos|>"});
  ids.pad = first_of({"<|pad|>", "<pad>"});
  return ids;
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw BpeTokenizerError(file.string() + ": cannot read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

// ---- encoding ----------------------------------------------------------------------------------

void BpeTokenizer::Model::merge(std::string_view piece, std::vector<TokenId>& out) const {
  const std::size_t n = piece.size();
  std::vector<TokenId> symbol(n);
  std::vector<int> prev(n), next(n);
  for (std::size_t i = 0; i < n; ++i) {
    symbol[i] = byte_ids[static_cast<std::uint8_t>(piece[i])];
    if (symbol[i] < 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X",
                    static_cast<unsigned>(static_cast<std::uint8_t>(piece[i])));
      throw BpeTokenizerError(source + ": byte " + hex + " has no token in model.vocab");
    }
    prev[i] = static_cast<int>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int>(i) + 1 : -1;
  }
  struct Candidate {
    int rank, pos;
    TokenId id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto offer = [&](int pos) {
    if (pos < 0 || next[static_cast<std::size_t>(pos)] < 0) return;
    const auto it =
        merges.find(pair(symbol[static_cast<std::size_t>(pos)],
                         symbol[static_cast<std::size_t>(next[static_cast<std::size_t>(pos)])]));
    if (it != merges.end()) queue.push({it->second.rank, pos, it->second.id});
  };
  for (std::size_t i = 0; i + 1 < n; ++i) offer(static_cast<int>(i));
  std::vector<bool> gone(n, false);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    const auto pos = static_cast<std::size_t>(top.pos);
    if (gone[pos] || next[pos] < 0) continue;
    const auto right = static_cast<std::size_t>(next[pos]);
    const auto it = merges.find(pair(symbol[pos], symbol[right]));
    if (it == merges.end() || it->second.id != top.id) continue;  // a stale candidate
    symbol[pos] = top.id;
    gone[right] = true;
    next[pos] = next[right];
    if (next[pos] >= 0) prev[static_cast<std::size_t>(next[pos])] = static_cast<int>(pos);
    offer(prev[pos]);
    offer(static_cast<int>(pos));
  }
  for (int i = 0; i >= 0; i = next[static_cast<std::size_t>(i)]) {
    out.push_back(symbol[static_cast<std::size_t>(i)]);
  }
}

void BpeTokenizer::Model::encode_piece(std::string_view piece, std::vector<TokenId>& out) const {
  if (piece.empty()) return;
  const std::string key(piece);
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (auto it = cache.find(key); it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<TokenId> ids;
  if (ignore_merges) {
    if (auto it = by_token.find(byte_level::spell(piece)); it != by_token.end()) ids = {it->second};
  }
  if (ids.empty()) merge(piece, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  std::lock_guard<std::mutex> lock(cache_mutex);
  if (cache.size() >= kCacheLimit) cache.clear();
  cache.emplace(key, std::move(ids));
}

// Text between added tokens; `offset` is its place in the whole text (messages).
void BpeTokenizer::Model::encode_text(std::string_view text, std::size_t offset,
                                      std::vector<TokenId>& out) const {
  if (nfc) {
    if (const auto at = byte_level::first_non_inert(text)) {
      const auto cp = byte_level::next_code_point(text, *at);
      char name[16];
      std::snprintf(name, sizeof name, "U+%04X", cp ? cp->value : 0u);
      throw BpeTokenizerError(source + ": the text's character " + name + " at byte " +
                              std::to_string(offset + *at) +
                              " may change under the NFC normalizer, which is not computed here "
                              "(only text NFC leaves alone is encoded)");
    }
  }
  std::vector<std::string_view> pieces{text};
  for (const byte_level::SplitPattern& pattern : splits) {
    std::vector<std::string_view> finer;
    for (std::string_view p : pieces) {
      for (std::string_view q : pattern.split(p)) finer.push_back(q);
    }
    pieces = std::move(finer);
  }
  for (std::string_view p : pieces) encode_piece(p, out);
}

std::vector<TokenId> BpeTokenizer::encode(std::string_view text) const {
  const Model& m = *model_;
  std::vector<TokenId> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size();) {
    const BpeAddedToken* found = nullptr;
    for (const BpeAddedToken* t : m.added_by_first[static_cast<std::uint8_t>(text[i])]) {
      if (text.compare(i, t->content.size(), t->content) == 0) {
        found = t;
        break;
      }
    }
    if (found == nullptr) {
      ++i;
      continue;
    }
    m.encode_text(text.substr(start, i - start), start, out);
    out.push_back(found->id);
    i += found->content.size();
    start = i;
  }
  m.encode_text(text.substr(start), start, out);
  return out;
}

std::string BpeTokenizer::decode(std::span<const TokenId> ids, bool skip_special) const {
  const Model& m = *model_;
  std::string out;
  for (TokenId id : ids) {
    if (!has_token(id)) continue;
    const auto i = static_cast<std::size_t>(id);
    if (skip_special && m.kind[i] == Model::special) continue;
    out += m.bytes[i];
  }
  return out;
}

std::string BpeTokenizer::program_text(std::span<const TokenId> ids) const {
  const std::optional<TokenId> end = eos();
  const auto stop = end ? std::find(ids.begin(), ids.end(), *end) : ids.end();
  return decode(ids.first(static_cast<std::size_t>(stop - ids.begin())), true);
}

TokenId BpeTokenizer::end_of_program() const {
  if (!eos()) throw std::logic_error(source() + ": the tokenizer has no eos token");
  return *eos();
}

// ---- loading and lookups -----------------------------------------------------------------------

BpeTokenizer::BpeTokenizer(std::shared_ptr<const Model> model)
    : model_(std::move(model)), special_(model_->defaults) {}

BpeTokenizer BpeTokenizer::parse(std::string_view text, const std::string& source) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw BpeTokenizerError(source + ": not JSON: " + e.what());
  }
  auto m = std::make_shared<Model>();
  m->source = source;
  m->digest = reward::sha256_hex(text);
  try {
    if (!doc.is_object()) fail(source, "(top)", "expected an object");
    const json& model = member(doc, "model", source, "model");
    read_model_options(*m, model);
    m->ignore_merges = flag(model, "ignore_merges", false, source, "model");
    read_vocab(*m, member(model, "vocab", source, "model.vocab"));
    read_merges(*m, member(model, "merges", source, "model.merges"));
    read_added(*m, doc.value("added_tokens", json()));
    read_normalizer(*m, doc.value("normalizer", json()), "normalizer");
    read_pre_tokenizer(*m, member(doc, "pre_tokenizer", source, "pre_tokenizer"), "pre_tokenizer");
    const json decoder = doc.value("decoder", json());
    if (!decoder.is_null() && type_of(decoder, source, "decoder") != "ByteLevel") {
      fail(source, "decoder.type",
           "'" + type_of(decoder, source, "decoder") + "' is not supported (ByteLevel is)");
    }
  } catch (const json::exception& e) {
    throw BpeTokenizerError(source + ": unexpected JSON: " + e.what());
  }
  m->defaults = guess_special_ids(*m);
  return BpeTokenizer(std::move(m));
}

BpeTokenizer BpeTokenizer::load(const std::filesystem::path& file) {
  return parse(read_text(file), file.string());
}

BpeTokenizer BpeTokenizer::load_folder(const std::filesystem::path& folder) {
  BpeTokenizer tokenizer = load(folder / "tokenizer.json");
  BpeSpecialIds ids = tokenizer.special_ids();
  const auto read_json = [&](const char* name) -> json {
    const auto path = folder / name;
    if (!std::filesystem::exists(path)) return json();
    try {
      return json::parse(read_text(path));
    } catch (const json::exception& e) {
      throw BpeTokenizerError(path.string() + ": not JSON: " + e.what());
    }
  };
  // tokenizer_config.json names the tokens; config.json's ids win where both speak.
  const json names = read_json("tokenizer_config.json");
  for (auto [key, slot] : {std::pair{"bos_token", &ids.bos}, std::pair{"eos_token", &ids.eos},
                           std::pair{"pad_token", &ids.pad}}) {
    if (!names.is_object() || !names.contains(key)) continue;
    const json& v = names.at(key);
    const json content = v.is_object() ? v.value("content", json()) : v;
    if (content.is_string()) {
      if (auto id = tokenizer.find(content.get<std::string>())) *slot = id;
    }
  }
  const json config = read_json("config.json");
  for (auto [key, slot] : {std::pair{"bos_token_id", &ids.bos}, std::pair{"eos_token_id", &ids.eos},
                           std::pair{"pad_token_id", &ids.pad}}) {
    if (!config.is_object() || !config.contains(key)) continue;
    json v = config.at(key);
    if (v.is_array() && !v.empty()) v = v[0];
    if (v.is_number_integer()) *slot = static_cast<TokenId>(v.get<std::int64_t>());
  }
  tokenizer.set_special_ids(ids);
  return tokenizer;
}

std::size_t BpeTokenizer::size() const { return model_->tokens.size(); }

bool BpeTokenizer::has_token(TokenId id) const {
  return id >= 0 && static_cast<std::size_t>(id) < model_->kind.size() &&
         model_->kind[static_cast<std::size_t>(id)] != Model::none;
}

const std::string& BpeTokenizer::token(TokenId id) const {
  if (!has_token(id)) throw std::out_of_range("token id " + std::to_string(id) + " has no token");
  return model_->tokens[static_cast<std::size_t>(id)];
}

const std::string& BpeTokenizer::token_bytes(TokenId id) const {
  if (!has_token(id)) throw std::out_of_range("token id " + std::to_string(id) + " has no token");
  return model_->bytes[static_cast<std::size_t>(id)];
}

std::optional<TokenId> BpeTokenizer::find(std::string_view token) const {
  const std::string key(token);
  if (auto it = model_->by_added.find(key); it != model_->by_added.end()) return it->second;
  if (auto it = model_->by_token.find(key); it != model_->by_token.end()) return it->second;
  return std::nullopt;
}

bool BpeTokenizer::is_added(TokenId id) const {
  return has_token(id) && model_->kind[static_cast<std::size_t>(id)] >= Model::added;
}

bool BpeTokenizer::is_special(TokenId id) const {
  return has_token(id) && model_->kind[static_cast<std::size_t>(id)] == Model::special;
}

const std::vector<BpeAddedToken>& BpeTokenizer::added_tokens() const {
  return model_->added_tokens;
}

std::optional<TokenId> BpeTokenizer::byte_token(unsigned char byte) const {
  const TokenId id = model_->byte_ids[byte];
  return id >= 0 ? std::optional<TokenId>(id) : std::nullopt;
}

std::size_t BpeTokenizer::merges() const { return model_->merges.size(); }

const BpeSpecialIds& BpeTokenizer::special_ids() const { return special_; }

void BpeTokenizer::set_special_ids(const BpeSpecialIds& ids) {
  for (const auto& id : {ids.bos, ids.eos, ids.pad}) {
    if (id && !has_token(*id)) {
      throw std::invalid_argument(model_->source + ": special id " + std::to_string(*id) +
                                  " has no token");
    }
  }
  special_ = ids;
}

const std::string& BpeTokenizer::digest() const { return model_->digest; }
const std::string& BpeTokenizer::source() const { return model_->source; }

}  // namespace sparserl::env
