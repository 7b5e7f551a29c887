// The large regime's list (large_regime.hpp). Each family's parts differ in more than the seed:
// train, val and test use other grid sizes and stencils, band widths and fills, block sizes and
// counts, R-MAT skews, road densities, circuit nets, Pareto tails, log-normal spreads and base
// matrices, with permutation on some entries of each part. The URIs are written canonically (the
// [large_regime] test checks it), and the nonzero counts are those measured by
// tests/bench/large_regime_bench (docs/formats.md has its table).
#include "sparserl/datasets/large_regime.hpp"

#include <cstdint>
#include <string>

namespace sparserl::datasets {
namespace {

constexpr SplitPart kTrain = SplitPart::train;
constexpr SplitPart kVal = SplitPart::val;
constexpr SplitPart kTest = SplitPart::test;

struct Entry {
  SplitPart part;
  const char* family;
  const char* uri;
  std::int64_t nnz;
};

constexpr Entry kEntries[] = {
    // stencil: 2D 5/9-point and 3D 7/27-point grids, some randomly numbered (permute).
    {kTrain, "stencil", "gen-v1/stencil2d?nx=1500&ny=1500&points=5&seed=101", 11244000},
    {kTrain, "stencil", "gen-v1/stencil2d?nx=1200&ny=1000&permute=1&points=9&seed=102", 10786804},
    {kTrain, "stencil", "gen-v1/stencil3d?nx=120&points=7&seed=103", 12009600},
    {kTrain, "stencil", "gen-v1/stencil3d?nx=120&ny=110&nz=100&permute=1&points=27&seed=104",
     34992352},
    {kVal, "stencil", "gen-v1/stencil2d?nx=800&ny=700&points=9&seed=105", 5031004},
    {kVal, "stencil", "gen-v1/stencil3d?nx=90&ny=80&nz=70&permute=1&points=7&seed=106", 3489800},
    {kTest, "stencil", "gen-v1/stencil2d?nx=1000&ny=900&permute=1&points=5&seed=107", 4496200},
    {kTest, "stencil", "gen-v1/stencil3d?nx=60&ny=50&nz=40&points=27&seed=108", 3108592},

    // banded: partially filled bands of several widths.
    {kTrain, "banded", "gen-v1/banded?bandwidth=4&fill=0.6&n=2000000&seed=201", 11600071},
    {kTrain, "banded", "gen-v1/banded?bandwidth=16&fill=0.3&n=1000000&seed=202", 10601512},
    {kTrain, "banded", "gen-v1/banded?bandwidth=2&fill=0.9&n=3000000&seed=203", 13798750},
    {kTrain, "banded", "gen-v1/banded?bandwidth=64&fill=0.15&n=500000&seed=204", 10103691},
    {kVal, "banded", "gen-v1/banded?bandwidth=8&fill=0.5&n=800000&seed=205", 7196487},
    {kVal, "banded", "gen-v1/banded?bandwidth=32&fill=0.2&n=400000&seed=206", 5518036},
    {kTest, "banded", "gen-v1/banded?bandwidth=6&fill=0.4&n=1200000&seed=207", 6959876},
    {kTest, "banded", "gen-v1/banded?bandwidth=48&fill=0.25&n=250000&seed=208", 6246962},

    // block-aligned: dense blocks on the block grid (BSR without fill), some partly filled.
    {kTrain, "block-aligned",
     "gen-v1/blocksparse?block=2&block_rows=500000&blocks_per_row=10&seed=301", 20000000},
    {kTrain, "block-aligned",
     "gen-v1/blocksparse?block=4&block_cols=300000&block_rows=150000&blocks_per_row=6&seed=302",
     14400000},
    {kTrain, "block-aligned",
     "gen-v1/blocksparse?block=8&block_rows=60000&blocks_per_row=8&seed=303", 30720000},
    {kTrain, "block-aligned",
     "gen-v1/blocksparse?block=16&block_rows=6000&blocks_per_row=6&fill=0.8&seed=304", 7372389},
    {kVal, "block-aligned", "gen-v1/blocksparse?block=4&block_rows=80000&blocks_per_row=5&seed=305",
     6400000},
    {kVal, "block-aligned",
     "gen-v1/blocksparse?block=8&block_rows=12000&blocks_per_row=7&fill=0.9&seed=306", 4837373},
    {kTest, "block-aligned",
     "gen-v1/blocksparse?block=2&block_rows=300000&blocks_per_row=6&seed=307", 7200000},
    {kTest, "block-aligned",
     "gen-v1/blocksparse?block=16&block_rows=3000&blocks_per_row=5&seed=308", 3840000},

    // block-unaligned: blocks shifted off the grid (BSR pays fill).
    {kTrain, "block-unaligned",
     "gen-v1/blocksparse?align=0&block=4&block_rows=200000&blocks_per_row=5&seed=401", 15999812},
    {kTrain, "block-unaligned",
     "gen-v1/blocksparse?align=0&block=8&block_rows=25000&blocks_per_row=6&seed=402", 9598930},
    {kTrain, "block-unaligned",
     "gen-v1/blocksparse?align=0&block=3&block_rows=400000&blocks_per_row=4&seed=403", 14399928},
    {kTrain, "block-unaligned",
     "gen-v1/blocksparse?align=0&block=6&block_rows=60000&blocks_per_row=7&fill=0.7&seed=404",
     10585897},
    {kVal, "block-unaligned",
     "gen-v1/blocksparse?align=0&block=5&block_rows=60000&blocks_per_row=5&seed=405", 7499733},
    {kVal, "block-unaligned",
     "gen-v1/blocksparse?align=0&block=12&block_rows=8000&blocks_per_row=4&seed=406", 4607118},
    {kTest, "block-unaligned",
     "gen-v1/blocksparse?align=0&block=4&block_rows=100000&blocks_per_row=3&seed=407", 4799933},
    {kTest, "block-unaligned",
     "gen-v1/blocksparse?align=0&block=10&block_rows=10000&blocks_per_row=5&fill=0.85&seed=408",
     4248835},

    // rmat: power laws of several skews, heavy rows first or spread by rmat's own permute.
    {kTrain, "rmat", "gen-v1/rmat?edge_factor=16&scale=20&seed=501", 16085002},
    {kTrain, "rmat", "gen-v1/rmat?a=0.45&b=0.22&c=0.22&edge_factor=20&permute=1&scale=21&seed=502",
     41923147},
    {kTrain, "rmat", "gen-v1/rmat?a=0.65&b=0.15&c=0.15&edge_factor=32&scale=19&seed=503", 12719535},
    {kTrain, "rmat", "gen-v1/rmat?a=0.5&b=0.2&c=0.2&edge_factor=4&permute=1&scale=22&seed=504",
     16770422},
    {kVal, "rmat", "gen-v1/rmat?a=0.6&b=0.17&c=0.17&edge_factor=24&permute=1&scale=18&seed=505",
     5568773},
    {kVal, "rmat", "gen-v1/rmat?a=0.52&b=0.21&c=0.21&edge_factor=12&scale=19&seed=506", 6223746},
    {kTest, "rmat", "gen-v1/rmat?a=0.55&b=0.2&c=0.2&edge_factor=6&scale=20&seed=507", 6215942},
    {kTest, "rmat", "gen-v1/rmat?a=0.62&b=0.16&c=0.16&edge_factor=40&permute=1&scale=17&seed=508",
     4116201},

    // road: thinned grids with a few long-range edges, some randomly numbered.
    {kTrain, "road", "gen-v1/road?keep=0.7&long_range=0.001&nx=2000&ny=2000&seed=601", 15205946},
    {kTrain, "road", "gen-v1/road?keep=0.6&long_range=0.002&nx=3000&ny=1500&permute=1&seed=602",
     15314376},
    {kTrain, "road", "gen-v1/road?keep=0.8&long_range=0&nx=1500&ny=1200&seed=603", 7555572},
    {kTrain, "road", "gen-v1/road?keep=0.65&long_range=0.0005&nx=3500&ny=3000&permute=1&seed=604",
     37806690},
    {kVal, "road", "gen-v1/road?keep=0.72&long_range=0.003&nx=1000&ny=900&seed=605", 3494522},
    {kVal, "road", "gen-v1/road?keep=0.62&long_range=0.001&nx=1400&ny=700&permute=1&seed=606",
     3409694},
    {kTest, "road", "gen-v1/road?keep=0.68&long_range=0.0015&nx=1100&ny=1000&permute=1&seed=607",
     4092852},
    {kTest, "road", "gen-v1/road?keep=0.75&long_range=0.004&nx=800&ny=800&seed=608", 2562524},

    // circuit: near-diagonal bulk with power and ground nets (dense rows and columns).
    {kTrain, "circuit",
     "gen-v1/circuit?dense_cols=2&dense_len=0.3&dense_rows=2&far=1&n=4000000&near=2&seed=701"
     "&spread=8",
     18908851},
    {kTrain, "circuit",
     "gen-v1/circuit?dense_cols=3&dense_len=0.5&dense_rows=4&far=2&n=2000000&near=3&seed=702"
     "&spread=20",
     15629116},
    {kTrain, "circuit",
     "gen-v1/circuit?dense_cols=1&dense_len=0.8&dense_rows=1&far=1&n=3000000&near=1&seed=703"
     "&spread=4",
     13466067},
    {kTrain, "circuit",
     "gen-v1/circuit?dense_cols=5&dense_len=0.2&dense_rows=3&far=1&n=1500000&near=4&permute=1"
     "&seed=704&spread=50",
     10088443},
    {kVal, "circuit",
     "gen-v1/circuit?dense_cols=3&dense_len=0.4&dense_rows=2&far=1&n=1000000&near=2&seed=705"
     "&spread=12",
     5214703},
    {kVal, "circuit",
     "gen-v1/circuit?dense_cols=2&dense_len=0.6&dense_rows=3&far=1&n=700000&near=3&permute=1"
     "&seed=706&spread=6",
     4593640},
    {kTest, "circuit",
     "gen-v1/circuit?dense_cols=2&dense_len=0.25&dense_rows=2&far=2&n=1200000&near=2&seed=707"
     "&spread=10",
     6730308},
    {kTest, "circuit",
     "gen-v1/circuit?dense_cols=1&dense_len=0.7&dense_rows=4&far=1&n=600000&near=1&permute=1"
     "&seed=708&spread=3",
     3009146},

    // lp: wide, Pareto row lengths of several tails.
    {kTrain, "lp", "gen-v1/lp?alpha=1.5&cols=8000000&min_len=3&rows=2000000&seed=801", 16984111},
    {kTrain, "lp", "gen-v1/lp?alpha=2&cols=9000000&min_len=5&rows=1500000&seed=802", 14285470},
    {kTrain, "lp",
     "gen-v1/lp?alpha=1.3&cols=10000000&max_len=100000&min_len=2&permute=1&rows=3000000&seed=803",
     23456684},
    {kTrain, "lp", "gen-v1/lp?alpha=2.5&cols=6000000&min_len=8&rows=1000000&seed=804", 12849839},
    {kVal, "lp", "gen-v1/lp?alpha=1.8&cols=3000000&min_len=4&rows=600000&seed=805", 5118239},
    {kVal, "lp", "gen-v1/lp?alpha=1.4&cols=2400000&max_len=50000&min_len=2&rows=800000&seed=806",
     5208081},
    {kTest, "lp", "gen-v1/lp?alpha=2.2&cols=2500000&min_len=6&rows=500000&seed=807", 5268129},
    {kTest, "lp", "gen-v1/lp?alpha=1.6&cols=5400000&min_len=3&permute=1&rows=900000&seed=808",
     6760817},

    // lognormal: log-normal row lengths of several medians and spreads.
    {kTrain, "lognormal", "gen-v1/lognormal?cols=1000000&median=10&rows=1000000&seed=901&sigma=1",
     16485452},
    {kTrain, "lognormal", "gen-v1/lognormal?cols=4000000&median=4&rows=2000000&seed=902&sigma=1.3",
     18756438},
    {kTrain, "lognormal", "gen-v1/lognormal?cols=2000000&median=20&rows=500000&seed=903&sigma=0.7",
     12791848},
    {kTrain, "lognormal",
     "gen-v1/lognormal?cols=3000000&median=3&permute=1&rows=3000000&seed=904&sigma=0.5", 10198974},
    {kVal, "lognormal", "gen-v1/lognormal?cols=800000&median=12&rows=400000&seed=905&sigma=0.9",
     7213915},
    {kVal, "lognormal",
     "gen-v1/lognormal?cols=800000&median=5&permute=1&rows=800000&seed=906&sigma=1.1", 7320581},
    {kTest, "lognormal", "gen-v1/lognormal?cols=1200000&median=15&rows=300000&seed=907&sigma=1.2",
     9257988},
    {kTest, "lognormal", "gen-v1/lognormal?cols=500000&median=6&rows=1000000&seed=908&sigma=0.8",
     8252559},

    // scaled-real: Kronecker products of matrices of ../shared/matrices/INDEX.csv, each base from a
    // collection group that bench-v2 puts in the same part (no val or test matrix grows a pattern
    // the train part holds).
    {kTrain, "scaled-real",
     "gen-v1/kron?group=HB&n=10000&name=west0067&outer=real&per_row=4&seed=1001", 11760000},
    {kTrain, "scaled-real",
     "gen-v1/kron?group=HB&n=2000&name=494_bus&outer=random&per_row=3&seed=1002", 9996000},
    {kTrain, "scaled-real",
     "gen-v1/kron?group=Rajat&n=100&name=rajat01&outer=real&per_row=5&seed=1003", 21625000},
    {kTrain, "scaled-real",
     "gen-v1/kron?group=Bai&n=2000&name=olm500&outer=real&per_row=3&permute=1&seed=1004", 11976000},
    {kVal, "scaled-real",
     "gen-v1/kron?group=Pajek&n=1000&name=Erdos971&outer=random&per_row=2&seed=1005", 5256000},
    {kVal, "scaled-real",
     "gen-v1/kron?group=Pajek&n=200&name=Pd&outer=real&per_row=2&permute=1&seed=1006", 5214400},
    {kTest, "scaled-real", "gen-v1/kron?group=Gset&n=150&name=G51&outer=real&per_row=3&seed=1007",
     5318100},
    {kTest, "scaled-real",
     "gen-v1/kron?group=LPnetlib&n=800&name=lp_e226&outer=random&per_row=2&permute=1&seed=1008",
     4428800},
};

}  // namespace

const std::vector<std::string>& large_regime_families() {
  static const std::vector<std::string> families = {
      "stencil", "banded", "block-aligned", "block-unaligned", "rmat", "road",
      "circuit", "lp",     "lognormal",     "scaled-real"};
  return families;
}

const std::vector<LargeRegimeMatrix>& large_regime_v1() {
  static const std::vector<LargeRegimeMatrix> list = [] {
    std::vector<LargeRegimeMatrix> out;
    for (const Entry& e : kEntries) out.push_back({e.part, e.family, e.uri, e.nnz});
    return out;
  }();
  return list;
}

}  // namespace sparserl::datasets
