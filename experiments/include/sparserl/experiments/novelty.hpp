// Novelty against the training corpus: is an agent's answer a program it was trained on, and how
// far is it from the nearest one? Programs are compared in the tokenizer's normal form
// (env/tokenizer.hpp: comments dropped, local identifiers canonicalised to v0, v1, ... in order of
// appearance, numbers spelled digit by digit), so a corpus program with its variables renamed or
// its layout changed is the same program, and a changed constant is a different one a few tokens
// away. The distance is Levenshtein's over token ids (unit insertions, deletions and
// substitutions).
//
// A bench compares hundreds of answers of up to a few thousand tokens with a corpus of a few
// hundred programs, so the nearest program is found with bounds instead of a full table per pair:
// an exact match is a hash lookup; candidates are visited by increasing length difference (a lower
// bound of the distance, so the search stops once it reaches the best distance found); a candidate
// whose token-count difference (the bag distance, also a lower bound) reaches the best is skipped;
// and the distance itself is computed only within a diagonal band of the best distance so far,
// stopping at the first row whose cells all exceed it - or, where that band would be wide, by
// Myers' bit-parallel algorithm (64 rows per machine word). Against the 183 design-space programs
// of SpMV f32 (584 tokens on average, 2,258 at most) the nearest program of an edited corpus
// program takes well under a millisecond and that of 4,000 random tokens about 11 ms (one core of
// the 2-core development machine).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "sparserl/env/episode.hpp"
#include "sparserl/env/tokenizer.hpp"

namespace sparserl::experiments {

using TokenSequence = std::vector<std::int32_t>;

// The edit distance between a and b when it is at most `bound`, else bound + 1 (any value above
// the bound means "more than bound"). Time O(min(|a|, |b|) x bound) within a narrow band, else
// O(max(|a|, |b|) x min(|a|, |b|) / 64) bit-parallel.
std::size_t token_edit_distance(std::span<const std::int32_t> a, std::span<const std::int32_t> b,
                                std::size_t bound = std::numeric_limits<std::size_t>::max());

// The programs a policy was trained on, in normal form, duplicates dropped.
class ProgramCorpus {
 public:
  ProgramCorpus() = default;
  // `description` says what the corpus is ("the 183 design-space programs of spmv f32").
  ProgramCorpus(std::string description, std::vector<TokenSequence> programs);

  [[nodiscard]] const std::string& description() const { return description_; }
  [[nodiscard]] std::size_t size() const { return programs_.size(); }
  [[nodiscard]] bool contains(std::span<const std::int32_t> program) const;
  // The distance to the nearest corpus program (0 when it is one); nullopt for an empty corpus.
  [[nodiscard]] std::optional<std::size_t> nearest_distance(
      std::span<const std::int32_t> program) const;

 private:
  using Histogram = std::vector<std::pair<std::int32_t, std::int32_t>>;  // (token, count), sorted
  std::string description_;
  std::vector<TokenSequence> programs_;  // by length
  std::vector<Histogram> histograms_;    // of programs_
  std::unordered_set<std::string> keys_;
};

// A program's normal form: the tokenizer's encoding without <eos>; nullopt when it does not encode.
std::optional<TokenSequence> normalised_program(const env::Tokenizer& tokenizer,
                                                std::string_view program);
// An evaluated episode's program: its decoded source normalised, else its own tokens up to <eos>
// (<pad> and <bos> dropped); nullopt for an episode that never reached the evaluator.
std::optional<TokenSequence> normalised_episode(const env::Tokenizer& tokenizer,
                                                const env::Episode& episode);

// What results.csv says about one answer: `novel` for a correct answer with a program (nullopt
// otherwise), `distance` for any answer with a program (NaN without one or without a corpus).
struct Novelty {
  std::optional<bool> novel;
  double distance = std::numeric_limits<double>::quiet_NaN();
};
Novelty novelty_of(const ProgramCorpus& corpus, const std::optional<TokenSequence>& program,
                   bool correct);

}  // namespace sparserl::experiments
