// Token edit distance and the nearest corpus program (novelty.hpp).
#include "sparserl/experiments/novelty.hpp"

#include <algorithm>
#include <cstring>

namespace sparserl::experiments {
namespace {

std::string key_of(std::span<const std::int32_t> program) {
  std::string key(program.size() * sizeof(std::int32_t), '\0');
  if (!program.empty()) std::memcpy(key.data(), program.data(), key.size());
  return key;
}

std::vector<std::pair<std::int32_t, std::int32_t>> histogram(std::span<const std::int32_t> p) {
  std::vector<std::int32_t> sorted(p.begin(), p.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::pair<std::int32_t, std::int32_t>> out;
  for (std::int32_t t : sorted) {
    if (out.empty() || out.back().first != t) out.emplace_back(t, 0);
    ++out.back().second;
  }
  return out;
}

// max(|A - B|, |B - A|) of the two multisets: every edit changes each side by at most one, so it
// bounds the edit distance from below.
std::size_t bag_distance(const std::vector<std::pair<std::int32_t, std::int32_t>>& a,
                         const std::vector<std::pair<std::int32_t, std::int32_t>>& b) {
  std::size_t only_a = 0, only_b = 0, i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
      only_a += static_cast<std::size_t>(a[i++].second);
    } else if (i == a.size() || b[j].first < a[i].first) {
      only_b += static_cast<std::size_t>(b[j++].second);
    } else {
      const std::int32_t d = a[i++].second - b[j++].second;
      (d > 0 ? only_a : only_b) += static_cast<std::size_t>(d > 0 ? d : -d);
    }
  }
  return std::max(only_a, only_b);
}

std::size_t length_difference(std::size_t a, std::size_t b) { return a > b ? a - b : b - a; }

}  // namespace

namespace {

// The banded table: cells further than `bound` from the diagonal hold more than bound, so only the
// band is filled, and a row whose cells all exceed the bound ends it. Needs |a| >= |b| and
// |a| - |b| <= bound <= |a|.
std::size_t banded_distance(std::span<const std::int32_t> a, std::span<const std::int32_t> b,
                            std::size_t bound) {
  const std::size_t n = a.size(), m = b.size();
  const std::size_t inf = bound + 1;
  std::vector<std::size_t> prev(m + 1, inf), cur(m + 1, inf);
  for (std::size_t j = 0; j <= std::min(m, bound); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    const std::size_t lo = i > bound ? i - bound : 1;
    const std::size_t hi = std::min(m, i + bound);
    cur[lo - 1] = lo == 1 && i <= bound ? i : inf;
    std::size_t row_min = cur[lo - 1];
    for (std::size_t j = lo; j <= hi; ++j) {
      const std::size_t substitute = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      const std::size_t v = std::min({substitute, prev[j] + 1, cur[j - 1] + 1, inf});
      cur[j] = v;
      row_min = std::min(row_min, v);
    }
    if (hi < m) cur[hi + 1] = inf;
    if (row_min > bound) return inf;
    std::swap(prev, cur);
  }
  return std::min(prev[m], inf);
}

// Myers' bit-parallel algorithm in Hyyro's blocked form (the pattern `b` along the bits, 64 rows
// a word, the text `a` column by column): O(|a| x ceil(|b| / 64)) word operations for the exact
// distance, where the band would need O(|b| x bound) cells.
std::size_t bit_parallel_distance(std::span<const std::int32_t> a,
                                  std::span<const std::int32_t> b) {
  const std::size_t m = b.size();
  if (m == 0) return a.size();
  const std::size_t words = (m + 63) / 64;
  // Per symbol of b, the rows where it occurs.
  std::vector<std::int32_t> symbols(b.begin(), b.end());
  std::sort(symbols.begin(), symbols.end());
  symbols.erase(std::unique(symbols.begin(), symbols.end()), symbols.end());
  const auto symbol = [&](std::int32_t t) -> std::ptrdiff_t {
    const auto it = std::lower_bound(symbols.begin(), symbols.end(), t);
    return it != symbols.end() && *it == t ? it - symbols.begin() : -1;
  };
  std::vector<std::uint64_t> peq(symbols.size() * words, 0);
  for (std::size_t i = 0; i < m; ++i) {
    peq[static_cast<std::size_t>(symbol(b[i])) * words + i / 64] |= std::uint64_t{1} << (i % 64);
  }
  // The vertical deltas of each word, +1 (vp) and -1 (vn): column 0 grows by one per row.
  struct Vertical {
    std::uint64_t vp = ~std::uint64_t{0};
    std::uint64_t vn = 0;
  };
  std::vector<Vertical> v(words);
  const std::uint64_t last = std::uint64_t{1} << ((m - 1) % 64);
  std::size_t distance = m;
  for (const std::int32_t t : a) {
    const std::ptrdiff_t s = symbol(t);
    const std::uint64_t* eq = s < 0 ? nullptr : &peq[static_cast<std::size_t>(s) * words];
    std::uint64_t hp_carry = 1, hn_carry = 0;  // row 0 grows by one per column
    for (std::size_t w = 0; w < words; ++w) {
      const std::uint64_t x = (eq != nullptr ? eq[w] : 0) | hn_carry;
      const std::uint64_t d0 = (((x & v[w].vp) + v[w].vp) ^ v[w].vp) | x | v[w].vn;
      std::uint64_t hp = v[w].vn | ~(d0 | v[w].vp);
      std::uint64_t hn = d0 & v[w].vp;
      const std::uint64_t hp_in = hp_carry, hn_in = hn_carry;
      if (w + 1 < words) {
        hp_carry = hp >> 63;
        hn_carry = hn >> 63;
      } else {
        hp_carry = (hp & last) != 0 ? 1 : 0;
        hn_carry = (hn & last) != 0 ? 1 : 0;
      }
      hp = (hp << 1) | hp_in;
      hn = (hn << 1) | hn_in;
      v[w].vp = hn | ~(d0 | hp);
      v[w].vn = hp & d0;
    }
    distance = distance + hp_carry - hn_carry;
  }
  return distance;
}

}  // namespace

std::size_t token_edit_distance(std::span<const std::int32_t> a, std::span<const std::int32_t> b,
                                std::size_t bound) {
  if (a.size() < b.size()) std::swap(a, b);  // a the longer
  const std::size_t n = a.size(), m = b.size();
  if (n - m > bound) return bound + 1;
  bound = std::min(bound, n);  // the distance is at most the longer length
  // The band costs about (2 bound + 1) cells a row, the bit-parallel form a few operations per
  // 64 rows: the band wins only when it is narrow.
  const std::size_t words = (m + 63) / 64;
  if (2 * bound + 1 <= 8 * words) return banded_distance(a, b, bound);
  return std::min(bit_parallel_distance(a, b), bound + 1);
}

ProgramCorpus::ProgramCorpus(std::string description, std::vector<TokenSequence> programs)
    : description_(std::move(description)) {
  for (TokenSequence& p : programs) {
    if (keys_.insert(key_of(p)).second) programs_.push_back(std::move(p));
  }
  std::stable_sort(
      programs_.begin(), programs_.end(),
      [](const TokenSequence& x, const TokenSequence& y) { return x.size() < y.size(); });
  for (const TokenSequence& p : programs_) histograms_.push_back(histogram(p));
}

bool ProgramCorpus::contains(std::span<const std::int32_t> program) const {
  return keys_.count(key_of(program)) != 0;
}

std::optional<std::size_t> ProgramCorpus::nearest_distance(
    std::span<const std::int32_t> program) const {
  if (programs_.empty()) return std::nullopt;
  if (contains(program)) return 0;
  const auto hist = histogram(program);
  const std::size_t n = program.size();
  // Two cursors walking away from the program's length: candidates by increasing length
  // difference.
  const auto split = std::lower_bound(
      programs_.begin(), programs_.end(), n,
      [](const TokenSequence& p, std::size_t length) { return p.size() < length; });
  std::size_t up = static_cast<std::size_t>(split - programs_.begin());
  std::size_t down = up;  // candidates [down, up) have been visited
  std::size_t best = std::numeric_limits<std::size_t>::max();
  while (down > 0 || up < programs_.size()) {
    std::size_t at = 0;
    if (down == 0) {
      at = up++;
    } else if (up == programs_.size()) {
      at = --down;
    } else if (length_difference(programs_[up].size(), n) <=
               length_difference(programs_[down - 1].size(), n)) {
      at = up++;
    } else {
      at = --down;
    }
    const TokenSequence& candidate = programs_[at];
    if (length_difference(candidate.size(), n) >= best) break;  // and so are all the others
    if (bag_distance(hist, histograms_[at]) >= best) continue;
    const std::size_t bound = best == std::numeric_limits<std::size_t>::max() ? best : best - 1;
    best = std::min(best, token_edit_distance(program, candidate, bound));
  }
  return best;
}

std::optional<TokenSequence> normalised_program(const env::Tokenizer& tokenizer,
                                                std::string_view program) {
  try {
    env::EncodedProgram encoded = tokenizer.encode(program);
    if (!encoded.tokens.empty() && encoded.tokens.back() == tokenizer.vocabulary().eos()) {
      encoded.tokens.pop_back();
    }
    return TokenSequence(encoded.tokens.begin(), encoded.tokens.end());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<TokenSequence> normalised_episode(const env::Tokenizer& tokenizer,
                                                const env::Episode& episode) {
  if (!episode.eval) return std::nullopt;
  if (auto program = normalised_program(tokenizer, episode.source)) return program;
  const env::Vocabulary& v = tokenizer.vocabulary();
  TokenSequence out;
  for (env::TokenId t : episode.tokens) {
    if (t == v.eos()) break;
    if (t != v.pad() && t != v.bos()) out.push_back(t);
  }
  return out;
}

Novelty novelty_of(const ProgramCorpus& corpus, const std::optional<TokenSequence>& program,
                   bool correct) {
  Novelty out;
  if (!program || corpus.size() == 0) return out;
  const std::optional<std::size_t> d = corpus.nearest_distance(*program);
  out.distance = static_cast<double>(*d);
  if (correct) out.novel = *d > 0;
  return out;
}

}  // namespace sparserl::experiments
