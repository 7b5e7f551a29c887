// coo_tiled on the CPU, where no kernel can run: a host re-implementation of both launches - the
// zeroing launch over its grid, then the main launch warp by warp and lane by lane: each lane's
// ITEMS entries of the warp's tile, the open row carried from slab to slab, the warp segmented
// scan as the shuffles compute it (step by step, every lane reading the values before the step),
// which rows are stored and which added with atomicAdd, and the block's merge of its warps' open
// rows - over the grids the program's own
// launch expressions give, on the warp-tile matrices (empty rows and runs of them, a huge row over
// many tiles, rows ending exactly at slab and tile edges, power-law rows, 1 x N, a column, 1 x 1,
// 0 x 0), checked against the fp64 reference and the write discipline (every row zeroed once,
// then stored at most once and then never added to). Broken variants are caught. Every point
// compiles with NVRTC (f32, f64) without spills, and pruning and the analytic cost model put the
// design among the candidates of matrices with very long rows, ahead of coo_segmented.
#include <iostream>
#include <set>

#include "catch.hpp"
#include "host_emulation.hpp"
#include "sparserl/datasets/features.hpp"
#include "sparserl/kernels/cost_model.hpp"
#include "sparserl/kernels/design_space.hpp"

using namespace sparserl;
using kernels::DesignPoint;
using kernels::DesignSpace;
using namespace sparserl::testing::emulation;

namespace {

// What an emulation leaves out or gets wrong, to show that the checks catch a broken program.
// no_block_merge adds every warp's open row by itself, which is right (as a kernel without the
// block's scan): the atomics count shows what the merge saves.
enum class Fault {
  none,
  no_zero_launch,
  no_slab_flush,
  no_tile_tail,
  first_row_stored,
  no_block_merge
};

// The row of every entry (COO's row_idx: the rows in order).
std::vector<std::int64_t> row_index(const Problem& p) {
  std::vector<std::int64_t> rows;
  for (std::int64_t i = 0; i < p.rows(); ++i) {
    for (std::int64_t k = p.ptr(i); k < p.ptr(i + 1); ++k) rows.push_back(i);
  }
  return rows;
}

// The row still open at a tile's end and the tile's sum of it (row -1: none).
struct Tail {
  std::int64_t row = -1;
  double sum = 0;
};

// One warp of the main launch on the tile from tile_begin; returns its open row.
Tail emulate_tile(const Problem& p, const std::vector<std::int64_t>& row_idx, std::int64_t items,
                  std::int64_t tile_begin, OutputLog& out, Fault fault) {
  const std::int64_t first = row_idx[tile_begin];
  const auto write = [&](std::int64_t row, double v) {
    if (row == first && fault != Fault::first_row_stored) {
      out.add(row, v);
    } else {
      out.store(row, v);
    }
  };
  std::int64_t open = -1;
  double carry = 0;
  for (std::int64_t s = 0; s < items; ++s) {
    std::int64_t row[32];
    double v[32];
    for (int lane = 0; lane < 32; ++lane) {
      const std::int64_t e = tile_begin + s * 32 + lane;
      row[lane] = e < p.nnz() ? row_idx[e] : -1;
      v[lane] = e < p.nnz() ? p.product(e) : 0.0;
    }
    if (row[0] == open) {
      v[0] += carry;
    } else if (open >= 0 && fault != Fault::no_slab_flush) {
      write(open, carry);
    }
    for (int offset = 1; offset < 32; offset *= 2) {  // __shfl_up_sync reads before the step
      double before[32];
      std::copy(v, v + 32, before);
      for (int lane = offset; lane < 32; ++lane) {
        if (row[lane - offset] == row[lane]) v[lane] += before[lane - offset];
      }
    }
    for (int lane = 0; lane < 31; ++lane) {
      if (row[lane] >= 0 && row[lane + 1] != row[lane]) write(row[lane], v[lane]);
    }
    open = row[31];
    carry = v[31];
  }
  return {open, carry};
}

// The block's last step: the warps' open rows in warp order, each run of equal rows summed (the
// warp segmented scan over the tails) and added once.
void add_block_tails(const std::vector<Tail>& tails, OutputLog& out, Fault fault) {
  if (fault == Fault::no_tile_tail) return;
  for (std::size_t w = 0; w < tails.size(); ++w) {
    if (tails[w].row < 0) continue;
    if (fault != Fault::no_block_merge && w + 1 < tails.size() &&
        tails[w + 1].row == tails[w].row) {
      continue;  // the run goes on: its last warp adds the sum
    }
    double sum = 0;
    for (std::size_t v = w + 1; v-- > 0 && tails[v].row == tails[w].row;) {
      sum += tails[v].sum;
      if (fault == Fault::no_block_merge) break;
    }
    out.add(tails[w].row, sum);
  }
}

// Both launches of a coo_tiled point, over the grids its launch expressions give.
void emulate_coo_tiled(const DesignPoint& point, const Problem& p, OutputLog& out,
                       Fault fault = Fault::none) {
  const auto launches = launches_of(point, p.a, 1);
  REQUIRE(launches.size() == 2);
  if (fault != Fault::no_zero_launch) {
    const std::int64_t threads = launches[0].grid * launches[0].block;
    for (std::int64_t row = 0; row < std::min(threads, p.rows()); ++row) out.zero(row);
  }
  const std::int64_t items = point.int_param("items");
  const std::int64_t tile = 32 * items;
  REQUIRE(launches[1].block == point.int_param("block"));
  const std::int64_t warps = launches[1].grid * launches[1].block / 32;
  REQUIRE(warps * tile >= p.nnz());  // the grid covers every entry
  const auto row_idx = row_index(p);
  const std::int64_t per_block = point.int_param("block") / 32;
  for (std::int64_t b = 0; b * per_block < warps; ++b) {
    std::vector<Tail> tails(per_block);
    for (std::int64_t i = 0; i < per_block; ++i) {
      const std::int64_t w = b * per_block + i;
      if (w * tile < p.nnz()) tails[i] = emulate_tile(p, row_idx, items, w * tile, out, fault);
    }
    add_block_tails(tails, out, fault);
  }
}

// Every row right; every row zeroed once by the first launch, then stored at most once, and a
// stored row never added to.
void check_tiled_output(const Problem& p, const OutputLog& out) {
  for (std::int64_t i = 0; i < p.rows(); ++i) {
    INFO("row " << i << " of " << p.rows() << ": stores " << out.stores[i] << ", zeros "
                << out.zeros[i] << ", adds " << out.adds[i]);
    REQUIRE(out.zeros[i] == 1);
    REQUIRE(out.stores[i] <= 1);
    if (out.stores[i] == 1) REQUIRE(out.adds[i] == 0);
    REQUIRE(std::isfinite(out.y[i]));
  }
  CHECK(mismatches(p, out) == 0);
}

}  // namespace

TEST_CASE("coo_tiled's index logic matches the reference on the host", "[kernels][split]") {
  const auto matrices = tile_test_matrices();
  int emulated = 0;
  std::int64_t atomics = 0, stores = 0;
  for (const datasets::SparseMatrix& a : matrices) {
    const Problem problem(a);
    for (const DesignPoint& point : points_of("coo_tiled", datasets::DType::f64)) {
      INFO(point.id() << " on " << a.rows() << " x " << a.cols() << ", " << a.nnz() << " nonzeros");
      OutputLog out(a.rows());
      emulate_coo_tiled(point, problem, out);
      check_tiled_output(problem, out);
      for (std::int64_t i = 0; i < a.rows(); ++i) {
        atomics += out.adds[i];
        stores += out.stores[i];
      }
      ++emulated;
    }
  }
  std::cout << emulated << " emulations: " << stores << " rows stored, " << atomics << " atomics\n";
  CHECK(emulated == 15 * 10);
  CHECK(stores > atomics);  // most rows begin and end inside a tile
}

TEST_CASE("coo_tiled adds to a long row about once a block", "[kernels][split]") {
  // The huge row of 15,000 entries: coo_segmented items=1 adds to it once per warp (469 times);
  // coo_tiled once per block of tiles it touches (the tails' merge), once more where it begins
  // inside a tile, once where it ends inside one.
  const auto huge =
      generated("gen-v1/uniform?rows=20000&cols=20000&nnz_per_row=3&huge_row=15000&seed=6");
  std::int64_t longest = 0;
  for (datasets::Index i = 0; i < huge.rows(); ++i) {
    if (huge.row_length(i) > huge.row_length(longest)) longest = i;
  }
  REQUIRE(huge.row_length(longest) >= 15000);
  const Problem problem(huge);
  for (const DesignPoint& point : points_of("coo_tiled", datasets::DType::f32)) {
    OutputLog out(huge.rows());
    emulate_coo_tiled(point, problem, out);
    const std::int64_t span = 32 * point.int_param("items") * point.int_param("block") / 32;
    INFO(point.id());
    CHECK(out.adds[longest] <= huge.row_length(longest) / span + 3);
    CHECK(mismatches(problem, out) == 0);
    // Without the merge: a tile's worth more atomics, the same answer.
    OutputLog unmerged(huge.rows());
    emulate_coo_tiled(point, problem, unmerged, Fault::no_block_merge);
    CHECK(mismatches(problem, unmerged) == 0);
    CHECK(unmerged.adds[longest] >= huge.row_length(longest) / (32 * point.int_param("items")));
    CHECK(unmerged.adds[longest] > 2 * out.adds[longest]);
  }
}

TEST_CASE("the host checks catch a broken coo_tiled", "[kernels][split]") {
  const DesignPoint point =
      DesignPoint::parse(datasets::Op::spmv, datasets::DType::f64, "coo_tiled items=4 block=128");
  const FaultMatrices m;
  const auto run = [&](const Problem& p, OutputLog& out, Fault f) {
    emulate_coo_tiled(point, p, out, f);
  };
  CHECK(wrong_rows(m.rows32, run, Fault::none) == 0);
  CHECK(wrong_rows(m.huge, run, Fault::none) == 0);
  CHECK(wrong_rows(m.rows32, run, Fault::no_slab_flush) > 0);   // rows ending at a slab's end
  CHECK(wrong_rows(m.huge, run, Fault::no_zero_launch) > 0);    // NaN stays under the atomics
  CHECK(wrong_rows(m.huge, run, Fault::no_tile_tail) > 0);      // a row over many tiles
  CHECK(wrong_rows(m.huge, run, Fault::first_row_stored) > 0);  // a store over earlier atomics
}

TEST_CASE("every coo_tiled point compiles with NVRTC without spills", "[kernels][split][nvrtc]") {
  const auto matrix = generated(
      "gen-v1/uniform?rows=3000&cols=2000&nnz_per_row=7&empty_rows=0.3&huge_row=1900&seed=5");
  int compiled = 0;
  for (auto dtype : {datasets::DType::f32, datasets::DType::f64}) {
    for (const DesignPoint& p : points_of("coo_tiled", dtype)) {
      require_compiles(p, matrix, 1);
      ++compiled;
    }
  }
  std::cout << "compiled " << compiled << " coo_tiled programs\n";
  CHECK(compiled == 2 * 10);
}

TEST_CASE("the cost model puts coo_tiled ahead of coo_segmented where rows are very long",
          "[kernels][split]") {
  const DesignSpace spmv(datasets::Op::spmv, datasets::DType::f32);
  // A circuit-like matrix: short rows and a few dense rows and columns (bench-v2's circuit family,
  // where coo_segmented items=1 took twice cuSPARSE's COO time on one address's atomics).
  const auto circuit = generated(
      "gen-v1/"
      "circuit?n=200000&near=3&far=1&spread=6&dense_rows=3&dense_cols=2&dense_len=0.6&seed=7");
  const auto pruned = spmv.pruned(datasets::compute_features(circuit));
  std::set<std::string> generators;
  for (const DesignPoint& p : pruned) generators.insert(p.generator);
  REQUIRE(generators.count("coo_tiled") == 1);
  kernels::CostModel model(circuit, datasets::Op::spmv, datasets::DType::f32, 1);
  const auto us = [&](const std::string& id) { return model.estimate(*spmv.find(id)).us; };
  CHECK(us("coo_tiled items=8 block=128") < us("coo_segmented items=1 block=128"));
  CHECK(us("coo_tiled items=16 block=128") <= us("coo_tiled items=4 block=128"));
  std::vector<double> predicted;
  std::set<std::string> chosen;
  for (const DesignPoint& p : kernels::choose_candidates(pruned, model, 8, &predicted)) {
    chosen.insert(p.generator);
  }
  CHECK(chosen.count("coo_tiled") == 1);
  // Regular rows: no COO design.
  const auto stencil = spmv.pruned(datasets::compute_features(generated("gen-v1/stencil2d?nx=64")));
  for (const DesignPoint& p : stencil) CHECK(p.generator != "coo_tiled");
}
