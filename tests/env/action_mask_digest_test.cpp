// The syntax mask's behaviour pinned: a digest of every fill() mask and min_completion() along
// seeded random episodes. The digest depends only on the mask's rules, the built-in vocabulary
// (cuda-c-v1) and the seeded generator, not on the machine; it guards refactorings of the mask (a
// restructuring must leave every mask bit as it was). A deliberate change of the grammar changes
// it: then check the change with the other mask tests and record the value this test prints.
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "sparserl/datasets/random.hpp"
#include "sparserl/env/action_mask.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::env;

// FNV-1a over bytes; integers go in as 8 little-endian bytes whatever the machine's order.
struct Fnv1a {
  std::uint64_t hash = 14695981039346656037ull;
  void byte(std::uint8_t b) {
    hash ^= b;
    hash *= 1099511628211ull;
  }
  void integer(std::int64_t v) {
    for (int i = 0; i < 8; ++i) {
      byte(static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) >> (8 * i)));
    }
  }
};

// Episodes of a uniform random agent (steered: one that starts a kernel declaration whenever the
// mask offers `extern "C"`, so that declarations are exercised too) over a spread of budgets.
std::uint64_t digest(bool steered, int episodes, std::uint64_t seed) {
  const auto vocab = std::make_shared<const Vocabulary>(Vocabulary::standard());
  const TokenId extern_kw = vocab->id(TokenClass::keyword, "extern");
  const TokenId linkage = vocab->id(TokenClass::literal, "\"C\"");
  const int budgets[] = {kMinSyntaxTokens, kMinSyntaxTokens + 1, 46, 54, 70, 96, 128, 200};
  datasets::Rng rng(seed);
  Fnv1a fnv;
  std::vector<std::uint8_t> m(vocab->size());
  std::vector<TokenId> allowed;
  for (int e = 0; e < episodes; ++e) {
    ActionMask mask(vocab, MaskMode::syntax, budgets[e % 8]);
    while (true) {
      mask.fill(m);
      fnv.integer(mask.min_completion());
      allowed.clear();
      for (std::size_t i = 0; i < m.size(); ++i) {
        fnv.byte(m[i]);
        if (m[i] != 0) allowed.push_back(static_cast<TokenId>(i));
      }
      if (allowed.empty()) break;
      TokenId t = allowed[rng.below(allowed.size())];
      if (steered && m[static_cast<std::size_t>(linkage)] != 0) {
        t = linkage;
      } else if (steered && m[static_cast<std::size_t>(extern_kw)] != 0 && rng.below(4) == 0) {
        t = extern_kw;
      }
      mask.advance(t);
    }
  }
  return fnv.hash;
}

std::string hex(std::uint64_t v) {
  std::ostringstream out;
  out << std::hex << v;
  return out.str();
}

}  // namespace

TEST_CASE("the syntax mask's masks and completions along seeded episodes match the record",
          "[env][mask]") {
  REQUIRE(Vocabulary::standard().name() == "cuda-c-v1");
  CHECK(hex(digest(false, 2000, 20250101)) == "c26f821607fd2077");
  CHECK(hex(digest(true, 500, 20250102)) == "716939491692ee0d");
}
