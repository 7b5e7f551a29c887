// The syntax mask at its limits: random episodes that prefer opening brackets reach the code's
// nesting limit (48), #if groups opened mid-expression and macros read as types, under budgets
// tight enough that the completion path alone is left at their end - a token of that path the
// grammar refuses shows as an empty mask.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "catch.hpp"
#include "sparserl/datasets/random.hpp"
#include "sparserl/env/action_mask.hpp"
#include "sparserl/env/tokenizer.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::env;

std::shared_ptr<const Vocabulary> vocab() {
  static const auto v = std::make_shared<const Vocabulary>(Vocabulary::standard());
  return v;
}

}  // namespace

// Random episodes that prefer opening brackets (a builtin's call, `(`, `[`, `{`, `?`) reach the
// code's nesting limit, #if groups opened mid-expression and macros read as types - where an SFT
// policy's long degenerate samples went on the GPU host, and the mask had two dead ends: a name
// whose bracket was due after it at the full stack, and a void declaration's `,` refusal kept in a
// call's arguments. The budgets leave the completion path tight at the end, so a path token the
// grammar refuses shows as an empty mask.
TEST_CASE("random episodes nested to the bracket limit never meet an empty mask", "[env][mask]") {
  datasets::Rng rng(11);
  std::vector<std::uint8_t> m(vocab()->size());
  std::vector<bool> opener(vocab()->size());
  for (std::size_t i = 0; i < opener.size(); ++i) {
    const std::string d = vocab()->describe(static_cast<TokenId>(i));
    opener[i] = d == "punct (" || d == "punct [" || d == "punct {" || d == "punct ?" ||
                d.rfind("builtin ", 0) == 0;
  }
  std::vector<TokenId> allowed, openers, tokens;
  int dead = 0, deepest_ended = 0, longest_completion = 0;
  for (int e = 0; e < 3000; ++e) {
    const int budget = 300 + static_cast<int>(rng.below(700));
    ActionMask mask(vocab(), MaskMode::syntax, budget);
    const double bias = e % 3 == 0 ? 0.3 : e % 3 == 1 ? 0.6 : 0.9;
    tokens.clear();
    while (mask.tokens() < budget) {
      mask.fill(m);
      allowed.clear();
      openers.clear();
      for (std::size_t i = 0; i < m.size(); ++i) {
        if (m[i] == 0) continue;
        allowed.push_back(static_cast<TokenId>(i));
        if (opener[i]) openers.push_back(static_cast<TokenId>(i));
      }
      if (allowed.empty()) {
        if (++dead <= 2) {
          UNSCOPED_INFO("episode " << e << ": empty mask after " << tokens.size() << " of "
                                   << budget << " tokens:\n"
                                   << Tokenizer(vocab()).decode(tokens));
        }
        break;
      }
      longest_completion = std::max(longest_completion, mask.min_completion());
      const bool open = !openers.empty() && rng.uniform01() < bias;
      const TokenId t =
          open ? openers[rng.below(openers.size())] : allowed[rng.below(allowed.size())];
      mask.advance(t);
      tokens.push_back(t);
      if (t == vocab()->eos()) {
        deepest_ended = std::max(deepest_ended, static_cast<int>(tokens.size()));
        break;
      }
    }
  }
  CHECK(dead == 0);
  CHECK(deepest_ended > 300);  // episodes ran into the budget's end, not only short ones
  // Closing the code's 48 brackets alone takes 48 tokens: some episode stood at the limit.
  CHECK(longest_completion > 48);
}
