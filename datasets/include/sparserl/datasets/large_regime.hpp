// The large generated regime of the benchmark (bench-v2, DESIGN.md "Benchmark and statistics"):
// matrices of 1M to 50M nonzeros, in families that mirror the kinds of the SuiteSparse collection,
// each family split into train, val and test parts whose parameters differ (sizes, skews, widths,
// fill, block sizes, permutation, base matrices), so that no val or test matrix is a re-seeded copy
// of a train matrix. Val and test matrices hold 1M-16M nonzeros (GPU time is scarce); train goes
// up to 50M. The list is versioned like a split: v1 never changes; a changed list is a new
// function.
//
// Every entry is a canonical gen-v1 URI (generators.hpp). The scaled-real family (kron) builds on
// matrices of ../shared/matrices/INDEX.csv: load those entries through a MatrixStore with that
// index attached. docs/formats.md lists every entry with its measured size and generation time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sparserl/datasets/splits.hpp"

namespace sparserl::datasets {

// Every matrix of the regime holds between kLargeRegimeMinNnz (splits.hpp: where the large regime
// starts) and these many nonzeros, inclusive (as generated).
inline constexpr std::int64_t kLargeRegimeMaxNnz = 50'000'000;

struct LargeRegimeMatrix {
  SplitPart part = SplitPart::train;
  std::string family;    // one of large_regime_families()
  std::string uri;       // canonical gen-v1 URI
  std::int64_t nnz = 0;  // nonzeros as generated (pinned: the tests and the bench check it), so
                         // that a size can be chosen without generating
};

// The families, in list order: stencil, banded, block-aligned, block-unaligned, rmat, road,
// circuit, lp, lognormal, scaled-real.
const std::vector<std::string>& large_regime_families();

// The regime's matrices: per family, its train entries, then val, then test.
const std::vector<LargeRegimeMatrix>& large_regime_v1();

}  // namespace sparserl::datasets
