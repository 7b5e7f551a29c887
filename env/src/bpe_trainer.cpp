// BPE training (bpe_trainer.hpp) with incremental pair counts: a pair's count over all pre-tokens,
// the pre-tokens it occurs in, and a max-heap of (count, pair) whose stale entries are re-queued
// with their current count when they surface (counts of existing pairs only fall as merges
// proceed; a merge's new pairs are queued once with their totals). Each merge rewrites only the
// pre-tokens that hold its pair.
#include "sparserl/env/bpe_trainer.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <queue>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "byte_level.hpp"

namespace sparserl::env {

struct BpeTrainer::Counts {
  explicit Counts(const std::string& pattern) : split(pattern) {}
  byte_level::SplitPattern split;
  std::unordered_map<std::string, std::int64_t> pre_tokens;
  std::int64_t bytes = 0;
};

namespace {

using Pair = std::uint64_t;
Pair pair_of(int a, int b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
         static_cast<std::uint32_t>(b);
}
int left_of(Pair p) { return static_cast<int>(p >> 32); }
int right_of(Pair p) { return static_cast<int>(p & 0xFFFFFFFFu); }

// The learning state: pre-tokens as symbol ids with their counts, and the pair statistics.
class Learner {
 public:
  Learner(const std::unordered_map<std::string, std::int64_t>& pre_tokens, int first_byte_id) {
    // Sorted, so that the result does not depend on the hash map's order.
    std::vector<std::pair<std::string, std::int64_t>> sorted(pre_tokens.begin(), pre_tokens.end());
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [text, count] : sorted) {
      std::vector<int> symbols;
      for (char c : text) symbols.push_back(first_byte_id + static_cast<std::uint8_t>(c));
      words_.push_back(std::move(symbols));
      counts_.push_back(count);
    }
    for (std::size_t w = 0; w < words_.size(); ++w) add_pairs(static_cast<int>(w), +1);
    for (const auto& [p, count] : pair_count_) queue_.push({count, p});
  }

  // The most frequent pair (ties: lower ids first) with at least min_count occurrences.
  std::optional<Pair> best(std::int64_t min_count) {
    while (!queue_.empty()) {
      const Entry top = queue_.top();
      queue_.pop();
      const auto it = pair_count_.find(top.pair);
      const std::int64_t now = it == pair_count_.end() ? 0 : it->second;
      if (now != top.count) {
        if (now > 0) queue_.push({now, top.pair});
        continue;
      }
      if (now < min_count) return std::nullopt;
      return top.pair;
    }
    return std::nullopt;
  }

  // Replaces every occurrence of the pair (left to right) by `merged`.
  void merge(Pair p, int merged) {
    const int a = left_of(p), b = right_of(p);
    std::set<int> where(where_[p].begin(), where_[p].end());
    changed_.clear();
    for (int w : where) {
      const std::vector<int>& old = words_[static_cast<std::size_t>(w)];
      bool found = false;
      for (std::size_t i = 0; i + 1 < old.size() && !found; ++i)
        found = old[i] == a && old[i + 1] == b;
      if (!found) continue;  // an entry left from before an earlier merge rewrote the word
      add_pairs(w, -1);
      std::vector<int> next;
      for (std::size_t i = 0; i < old.size();) {
        if (i + 1 < old.size() && old[i] == a && old[i + 1] == b) {
          next.push_back(merged);
          i += 2;
        } else {
          next.push_back(old[i++]);
        }
      }
      words_[static_cast<std::size_t>(w)] = std::move(next);
      add_pairs(w, +1);
    }
    where_.erase(p);
    for (Pair q : changed_) {
      const auto it = pair_count_.find(q);
      if (it != pair_count_.end() && it->second > 0 &&
          (left_of(q) == merged || right_of(q) == merged)) {
        queue_.push({it->second, q});
      }
    }
  }

 private:
  struct Entry {
    std::int64_t count;
    Pair pair;
    bool operator<(const Entry& o) const {
      if (count != o.count) return count < o.count;
      return pair > o.pair;  // lower ids first
    }
  };

  void add_pairs(int w, int sign) {
    const std::vector<int>& s = words_[static_cast<std::size_t>(w)];
    const std::int64_t n = counts_[static_cast<std::size_t>(w)] * sign;
    for (std::size_t i = 0; i + 1 < s.size(); ++i) {
      const Pair p = pair_of(s[i], s[i + 1]);
      auto& c = pair_count_[p];
      c += n;
      if (c == 0) pair_count_.erase(p);
      if (sign > 0) where_[p].push_back(w);
      changed_.push_back(p);
    }
  }

  std::vector<std::vector<int>> words_;
  std::vector<std::int64_t> counts_;
  std::unordered_map<Pair, std::int64_t> pair_count_;
  std::unordered_map<Pair, std::vector<int>> where_;
  std::priority_queue<Entry> queue_;
  std::vector<Pair> changed_;
};

nlohmann::ordered_json byte_level_step() {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", false},
          {"use_regex", false}};
}

}  // namespace

BpeTrainer::BpeTrainer(BpeTrainerOptions options) : options_(std::move(options)) {
  std::set<std::string> seen;
  for (const std::string& s : options_.special_tokens) {
    if (s.empty() || !seen.insert(s).second) {
      throw std::invalid_argument("BPE trainer: special token '" + s + "' is empty or repeated");
    }
  }
  const int least = static_cast<int>(options_.special_tokens.size()) + 256;
  if (options_.vocab_size < least) {
    throw std::invalid_argument("BPE trainer: vocab_size " + std::to_string(options_.vocab_size) +
                                " is below the special tokens and the 256 bytes (" +
                                std::to_string(least) + ")");
  }
  if (options_.min_frequency < 1) {
    throw std::invalid_argument("BPE trainer: min_frequency must be at least 1");
  }
  counts_ = std::make_unique<Counts>(options_.pattern);
}

BpeTrainer::~BpeTrainer() = default;
BpeTrainer::BpeTrainer(BpeTrainer&&) noexcept = default;
BpeTrainer& BpeTrainer::operator=(BpeTrainer&&) noexcept = default;

void BpeTrainer::add_text(std::string_view text) {
  counts_->bytes += static_cast<std::int64_t>(text.size());
  for (std::string_view piece : counts_->split.split(text))
    ++counts_->pre_tokens[std::string(piece)];
}

std::size_t BpeTrainer::distinct_pre_tokens() const { return counts_->pre_tokens.size(); }
std::int64_t BpeTrainer::bytes_seen() const { return counts_->bytes; }

std::string BpeTrainer::train() const {
  const int specials = static_cast<int>(options_.special_tokens.size());
  std::vector<std::string> spelled;  // by id
  for (const std::string& s : options_.special_tokens) spelled.push_back(s);
  for (const std::string& c : byte_level::byte_chars()) spelled.push_back(c);

  std::unordered_map<std::string, int> id_of;
  for (std::size_t id = 0; id < spelled.size(); ++id)
    id_of.emplace(spelled[id], static_cast<int>(id));

  std::vector<std::pair<int, int>> merges;
  Learner learner(counts_->pre_tokens, specials);
  while (static_cast<int>(spelled.size()) < options_.vocab_size) {
    const auto best = learner.best(options_.min_frequency);
    if (!best) break;
    const int a = left_of(*best), b = right_of(*best);
    // Two pairs may spell one token ("ab"+"c", "a"+"bc"): it keeps its first id, as the
    // `tokenizers` trainer does, and both merges are listed.
    const std::string merged =
        spelled[static_cast<std::size_t>(a)] + spelled[static_cast<std::size_t>(b)];
    const auto [it, is_new] = id_of.emplace(merged, static_cast<int>(spelled.size()));
    if (is_new) spelled.push_back(merged);
    merges.emplace_back(a, b);
    learner.merge(*best, it->second);
  }

  using ojson = nlohmann::ordered_json;
  ojson added = ojson::array();
  for (int i = 0; i < specials; ++i) {
    added.push_back({{"id", i},
                     {"content", options_.special_tokens[static_cast<std::size_t>(i)]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  ojson vocab = ojson::object();
  for (std::size_t id = 0; id < spelled.size(); ++id) vocab[spelled[id]] = id;
  ojson merge_list = ojson::array();
  for (const auto& [a, b] : merges) {
    merge_list.push_back(spelled[static_cast<std::size_t>(a)] + " " +
                         spelled[static_cast<std::size_t>(b)]);
  }
  ojson doc = {{"version", "1.0"},
               {"truncation", nullptr},
               {"padding", nullptr},
               {"added_tokens", added},
               {"normalizer", nullptr},
               {"pre_tokenizer",
                {{"type", "Sequence"},
                 {"pretokenizers", ojson::array({{{"type", "Split"},
                                                  {"pattern", {{"Regex", options_.pattern}}},
                                                  {"behavior", "Isolated"},
                                                  {"invert", false}},
                                                 byte_level_step()})}}},
               {"post_processor", byte_level_step()},
               {"decoder", byte_level_step()},
               {"model",
                {{"type", "BPE"},
                 {"dropout", nullptr},
                 {"unk_token", nullptr},
                 {"continuing_subword_prefix", nullptr},
                 {"end_of_word_suffix", nullptr},
                 {"fuse_unk", false},
                 {"byte_fallback", false},
                 {"ignore_merges", false},
                 {"vocab", vocab},
                 {"merges", merge_list}}}};
  return doc.dump(1) + "\n";
}

std::vector<SourceText> read_source_tree(const std::vector<std::filesystem::path>& folders) {
  namespace fs = std::filesystem;
  static const std::vector<std::string> kExtensions = {".cu",  ".cuh", ".h",  ".hpp", ".hxx",
                                                       ".inl", ".cpp", ".cc", ".c",   ".cxx"};
  const auto is_source = [](const fs::path& p) {
    return std::find(kExtensions.begin(), kExtensions.end(), p.extension().string()) !=
           kExtensions.end();
  };
  std::vector<SourceText> texts;
  for (const fs::path& folder : folders) {
    if (!fs::is_directory(folder)) {
      throw std::invalid_argument(folder.string() + ": not a folder");
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(folder)) {
      if (e.is_regular_file() && is_source(e.path())) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::ostringstream s;
      s << in.rdbuf();
      if (!in) throw std::runtime_error("cannot read " + f.string());
      texts.push_back({f.string(), s.str()});
    }
  }
  return texts;
}

}  // namespace sparserl::env
