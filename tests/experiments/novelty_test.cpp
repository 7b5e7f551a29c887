// Novelty against the training corpus: the bounded token edit distance against a plain dynamic
// programme, the corpus's nearest program against the minimum over every program, and programs in
// the tokenizer's normal form - a corpus program with its identifiers renamed is not novel, one
// with a constant changed is, a few tokens away.
#include "sparserl/experiments/novelty.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "sparserl/env/tokenizer.hpp"

using namespace sparserl::experiments;

namespace {

// The textbook (n + 1) x (m + 1) table.
std::size_t brute_force(const TokenSequence& a, const TokenSequence& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
  }
  return d[a.size()][b.size()];
}

TokenSequence random_sequence(std::mt19937& rng, std::size_t max_length, int alphabet) {
  std::uniform_int_distribution<std::size_t> length(0, max_length);
  std::uniform_int_distribution<int> token(0, alphabet - 1);
  TokenSequence s(length(rng));
  for (auto& t : s) t = token(rng);
  return s;
}

// The example of DESIGN.md, one thread per row over CSR, with its three locals and its block size
// filled in.
std::string csr_program(const std::string& row, const std::string& sum, const std::string& k,
                        int block) {
  std::string text = R"(//@format csr
//@launch spmv grid=ceil_div(M, BLOCK) block=BLOCK
extern "C" __global__ void spmv(const int* __restrict__ row_ptr,
    const int* __restrict__ col_idx, const value_t* __restrict__ val,
    const value_t* __restrict__ x, value_t* __restrict__ y) {
  int ROW = blockIdx.x * blockDim.x + threadIdx.x;  // one row each
  if (ROW < M) {
    value_t SUM = 0;
    for (int KK = row_ptr[ROW]; KK < row_ptr[ROW + 1]; ++KK) SUM += val[KK] * x[col_idx[KK]];
    y[ROW] = SUM;
  }
}
)";
  const std::pair<std::string, std::string> fill[] = {
      {"BLOCK", std::to_string(block)}, {"ROW", row}, {"SUM", sum}, {"KK", k}};
  for (const auto& [name, value] : fill) {
    for (std::size_t at = text.find(name); at != std::string::npos;
         at = text.find(name, at + value.size())) {
      text.replace(at, name.size(), value);
    }
  }
  return text;
}

}  // namespace

TEST_CASE("the bounded token edit distance matches the full table", "[experiments][novelty]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    const int alphabet = 2 + trial % 4;
    const TokenSequence a = random_sequence(rng, 12, alphabet);
    const TokenSequence b = random_sequence(rng, 12, alphabet);
    const std::size_t exact = brute_force(a, b);
    INFO("trial " << trial << ": |a| " << a.size() << ", |b| " << b.size() << ", d " << exact);
    CHECK(token_edit_distance(a, b) == exact);
    CHECK(token_edit_distance(b, a) == exact);
    for (std::size_t bound = 0; bound <= 14; ++bound) {
      const std::size_t d = token_edit_distance(a, b, bound);
      if (exact <= bound) {
        CHECK(d == exact);
      } else {
        CHECK(d > bound);
      }
    }
  }
  const TokenSequence empty;
  const TokenSequence five = {1, 2, 3, 4, 5};
  CHECK(token_edit_distance(empty, empty) == 0);
  CHECK(token_edit_distance(empty, five) == 5);
  CHECK(token_edit_distance(five, empty, 2) == 3);
  CHECK(token_edit_distance(five, five, 0) == 0);
}

TEST_CASE("long sequences: the bit-parallel and the banded distance match the full table",
          "[experiments][novelty]") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const int alphabet = 2 + trial % 40;
    const TokenSequence a = random_sequence(rng, 300, alphabet);
    TokenSequence b = random_sequence(rng, 300, alphabet);
    if (trial % 3 == 0) {  // near copies as well as strangers
      b = a;
      for (int e = 0; e < trial % 17 && !b.empty(); ++e) b[rng() % b.size()] = alphabet + e;
    }
    const std::size_t exact = brute_force(a, b);
    INFO("trial " << trial << ": |a| " << a.size() << ", |b| " << b.size() << ", d " << exact);
    CHECK(token_edit_distance(a, b) == exact);
    for (std::size_t bound : {std::size_t{0}, std::size_t{3}, exact / 2, exact, exact + 5}) {
      const std::size_t d = token_edit_distance(a, b, bound);
      if (exact <= bound) {
        CHECK(d == exact);
      } else {
        CHECK(d > bound);
      }
    }
  }
}

TEST_CASE("the nearest corpus program is the minimum over the corpus", "[experiments][novelty]") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<TokenSequence> programs;
    const int n = 1 + trial % 12;
    for (int i = 0; i < n; ++i) programs.push_back(random_sequence(rng, 30, 5));
    const ProgramCorpus corpus("random", programs);
    for (int q = 0; q < 5; ++q) {
      const TokenSequence query = q == 0
                                      ? programs[static_cast<std::size_t>(trial) % programs.size()]
                                      : random_sequence(rng, 30, 5);
      std::size_t expected = std::numeric_limits<std::size_t>::max();
      for (const TokenSequence& p : programs) expected = std::min(expected, brute_force(query, p));
      INFO("trial " << trial << " query " << q);
      CHECK(corpus.nearest_distance(query) == expected);
      CHECK(corpus.contains(query) == (expected == 0));
    }
  }
  CHECK_FALSE(ProgramCorpus().nearest_distance(TokenSequence{1}).has_value());
  const ProgramCorpus twice("dup", {{1, 2}, {1, 2}, {3}});
  CHECK(twice.size() == 2);
}

TEST_CASE("programs are compared in the tokenizer's normal form", "[experiments][novelty]") {
  const sparserl::env::Tokenizer tokenizer;
  const auto original = normalised_program(tokenizer, csr_program("row", "sum", "k", 128));
  const auto renamed = normalised_program(tokenizer, csr_program("r", "acc", "jj", 128));
  const auto constant = normalised_program(tokenizer, csr_program("row", "sum", "k", 256));
  REQUIRE(original);
  REQUIRE(renamed);
  REQUIRE(constant);
  CHECK(original->back() != tokenizer.vocabulary().eos());  // <eos> is not part of the program
  CHECK(*renamed == *original);
  const ProgramCorpus corpus("one program", {*original});

  // A corpus program with its identifiers renamed (and its comment dropped): not novel.
  const Novelty same = novelty_of(corpus, renamed, true);
  CHECK(same.novel == std::optional<bool>(false));
  CHECK(same.distance == 0);
  // A changed constant (128 -> 256 in grid and block: digits 1 2 8 -> 2 5 6, twice): novel, six
  // substitutions away.
  const Novelty changed = novelty_of(corpus, constant, true);
  CHECK(changed.novel == std::optional<bool>(true));
  CHECK(changed.distance == 6);
  // An incorrect answer has a distance but no novelty; no program, neither.
  const Novelty wrong = novelty_of(corpus, constant, false);
  CHECK_FALSE(wrong.novel.has_value());
  CHECK(wrong.distance == 6);
  const Novelty none = novelty_of(corpus, std::nullopt, true);
  CHECK_FALSE(none.novel.has_value());
  CHECK(std::isnan(none.distance));
  // Text the tokenizer refuses has no normal form.
  CHECK_FALSE(normalised_program(tokenizer, "#include <x>\n'c'").has_value());
}
