// csr_nnzsplit on the CPU, where no kernel can run: a host re-implementation of both launches - the
// zeroing launch (a thread per row, or a warp per tile boundary without empty rows) and the main
// launch lane by lane: the tile's products, its first row's search, the head flags written from
// row_ptr 32 rows per step (jumping over runs of empty rows), each slab's ballot, segment starts,
// carried sums, shares and segmented scan, and which rows are stored or added with atomics - run
// over the grids the program's own launch expressions give, on awkward matrices (empty rows and
// runs of them, a huge row over many tiles, rows ending exactly at slab and tile boundaries,
// power-law rows, 1 x N, a single column, 1 x 1, 0 x 0), checked against the fp64 reference and the
// write discipline. Broken variants are caught. Every point compiles with NVRTC (f32, f64) on both
// paths of its zeroing launch, and pruning and the analytic cost model put the design among the
// candidates of power-law matrices.
#include <algorithm>
#include <bit>
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

// What an emulation leaves out, to show that the checks catch a broken program.
enum class Fault { none, no_zero_launch, no_slab_flush, no_last_row };

// Steps the head-flag loops took over all emulated tiles, and how many of them jumped over a run
// of empty rows.
struct FlagSteps {
  std::int64_t steps = 0;
  std::int64_t jumps = 0;
};

// The head flags of a tile: mark[i] is the row that starts at nonzero tile_begin + i (-1: none),
// written 32 rows per step from the row after `first` on, a step of 32 empty rows jumping to the
// nonempty row that ends their run, as the kernel's loop does.
std::vector<std::int64_t> head_flags(const Problem& p, std::int64_t first, std::int64_t tile_begin,
                                     std::int64_t tile_end, std::int64_t tile, FlagSteps& count) {
  std::vector<std::int64_t> mark(static_cast<std::size_t>(tile), -1);
  for (std::int64_t base = first + 1;;) {
    ++count.steps;
    bool any_past = false, all_empty = true;
    std::int64_t run_start = -1;
    for (int lane = 0; lane < 32; ++lane) {
      const std::int64_t r = base + lane;
      const std::int64_t start = r < p.rows() ? p.ptr(r) : p.nnz();
      const std::int64_t end = start < tile_end ? p.ptr(r + 1) : start;
      if (end > start) {
        REQUIRE(start > tile_begin);  // only the first row can start at the tile's first nonzero
        REQUIRE(mark[start - tile_begin] == -1);  // one nonempty row per nonzero: no write race
        mark[start - tile_begin] = r;
      }
      any_past = any_past || start >= tile_end;
      all_empty = all_empty && end == start;
      run_start = start;
    }
    if (any_past) return mark;
    if (all_empty) {
      ++count.jumps;
      const std::int64_t next = row_of_nonzero(p, run_start, base + 32, 32);
      REQUIRE(p.ptr(next) == run_start);  // the nonempty row that ends the run
      REQUIRE(p.ptr(next + 1) > run_start);
      base = next;
    } else {
      base += 32;
    }
  }
}

// A row's sum from a tile: stored when it began in the tile (and ended in it), else added.
void write_row(OutputLog& out, std::int64_t row, double sum, bool began) {
  if (began) {
    out.store(row, sum);
  } else {
    out.add(row, sum);
  }
}

// Launch 2 for one warp: the 32 lanes of each step as arrays (a shuffle reads another lane's value
// of the same step).
void emulate_nnz_split_warp(const Problem& p, std::int64_t tile, std::int64_t tile_begin,
                            OutputLog& out, Fault fault, FlagSteps& steps) {
  const std::int64_t tile_end = std::min(tile_begin + tile, p.nnz());
  const std::int64_t first = row_of_nonzero(p, tile_begin, 0, 32);
  const std::vector<std::int64_t> mark = head_flags(p, first, tile_begin, tile_end, tile, steps);
  std::int64_t open = first;
  bool open_began = p.ptr(first) == tile_begin;
  double carry = 0;
  double share[32] = {};
  bool pending = false;
  for (std::int64_t s = 0; s < tile / 32; ++s) {
    if (tile_begin + s * 32 >= tile_end) break;
    double sum[32];
    std::uint32_t head = 0;
    for (int lane = 0; lane < 32; ++lane) {
      const std::int64_t nz = tile_begin + s * 32 + lane;
      sum[lane] = nz < tile_end ? p.product(nz) : 0;
      if (mark[s * 32 + lane] >= 0) head |= 1u << lane;
    }
    if (head == 0) {
      for (int lane = 0; lane < 32; ++lane) share[lane] += sum[lane];
      pending = true;
      continue;
    }
    if (pending) {
      for (double& v : share) carry += v;
      std::fill(share, share + 32, 0.0);
      pending = false;
    }
    int seg[32];
    std::int64_t row[32];
    for (int lane = 0; lane < 32; ++lane) {
      const std::uint32_t upto = head & (0xffffffffu >> (31 - lane));
      seg[lane] = upto != 0 ? 31 - std::countl_zero(upto) : -1;
      row[lane] = seg[lane] >= 0 ? mark[s * 32 + seg[lane]] : open;
    }
    if ((head & 1u) != 0) {
      if (fault != Fault::no_slab_flush) write_row(out, open, carry, open_began);
    } else {
      sum[0] += carry;
    }
    for (int offset = 1; offset < 32; offset *= 2) {
      double before[32];
      std::copy(sum, sum + 32, before);
      for (int lane = 0; lane < 32; ++lane) {
        if (lane - offset >= std::max(seg[lane], 0)) sum[lane] += before[lane - offset];
      }
    }
    for (int lane = 0; lane < 31; ++lane) {
      if (((head >> (lane + 1)) & 1u) != 0) {
        write_row(out, row[lane], sum[lane], seg[lane] >= 0 || open_began);
      }
    }
    open = row[31];
    carry = sum[31];
    open_began = true;
  }
  if (pending) {
    for (double v : share) carry += v;
  }
  if (fault == Fault::no_last_row) return;
  write_row(out, open, carry, open_began && p.ptr(open + 1) <= tile_end);
}

// Both launches of a csr_nnzsplit point, over the grids its launch expressions give.
void emulate_csr_nnz_split(const DesignPoint& point, const Problem& p, OutputLog& out,
                           Fault fault = Fault::none, FlagSteps* steps = nullptr) {
  FlagSteps local;
  FlagSteps& count = steps != nullptr ? *steps : local;
  const auto launches = launches_of(point, p.a, 1);
  REQUIRE(launches.size() == 2);
  const std::int64_t tile = 32 * point.int_param("items");
  REQUIRE(launches[1].block == point.int_param("block"));
  if (fault != Fault::no_zero_launch) {
    emulate_tile_cut_zeroing(p, tile, launches[0].grid * launches[0].block, out);
  }
  const std::int64_t warps = launches[1].grid * launches[1].block / 32;
  REQUIRE(warps * tile >= p.nnz());  // the grid covers every nonzero
  for (std::int64_t w = 0; w < warps; ++w) {
    if (w * tile < p.nnz()) emulate_nnz_split_warp(p, tile, w * tile, out, fault, count);
  }
}

}  // namespace

TEST_CASE("csr_nnzsplit's index logic matches the reference on the host", "[kernels][split]") {
  const auto matrices = tile_test_matrices();
  int emulated = 0;
  for (const datasets::SparseMatrix& a : matrices) {
    const Problem problem(a);
    for (const DesignPoint& point : points_of("csr_nnzsplit", datasets::DType::f64)) {
      INFO(point.id() << " on " << a.rows() << " x " << a.cols() << ", " << a.nnz() << " nonzeros");
      OutputLog out(a.rows());
      emulate_csr_nnz_split(point, problem, out);
      check_output(problem, out);
      ++emulated;
    }
  }
  CHECK(emulated == 15 * 8);
}

TEST_CASE("the matrices reach csr_nnzsplit's edge cases", "[kernels][split]") {
  // Rows of exactly 32 and 64 entries end at every slab and tile boundary; the edge matrix has
  // runs of 100 and 1,000 empty rows and a row over many tiles; a skewed R-MAT without permutation
  // has long runs of empty rows among its high-numbered rows. The runs take the head flags' jump.
  const auto rows32 = generated("gen-v1/uniform?rows=300&cols=400&nnz_per_row=32&seed=2");
  for (datasets::Index i = 0; i < rows32.rows(); ++i) REQUIRE(rows32.row_length(i) == 32);
  const auto rows64 = generated("gen-v1/uniform?rows=100&cols=400&nnz_per_row=64&seed=2");
  for (datasets::Index i = 0; i < rows64.rows(); ++i) REQUIRE(rows64.row_length(i) == 64);
  const auto edge = edge_matrix();
  CHECK(edge.row_length(40 + 9 + 100 + 1) == 1000);
  CHECK(edge.row_length(0) == 0);
  CHECK(edge.row_length(edge.rows() - 1) == 0);
  const auto skewed = generated("gen-v1/rmat?a=0.65&b=0.15&c=0.15&edge_factor=8&scale=14&seed=5");
  for (const auto* a : {&edge, &skewed}) {
    const Problem problem(*a);
    OutputLog out(a->rows());
    FlagSteps steps;
    emulate_csr_nnz_split(DesignPoint::parse(datasets::Op::spmv, datasets::DType::f64,
                                             "csr_nnzsplit items=16 block=128"),
                          problem, out, Fault::none, &steps);
    std::cout << a->rows() << " rows, " << a->nnz() << " nonzeros: " << steps.steps
              << " head-flag steps, " << steps.jumps << " jumps over runs of empty rows\n";
    CHECK(steps.jumps > 0);
    CHECK(mismatches(problem, out) == 0);
  }
}

TEST_CASE("the host checks catch a broken csr_nnzsplit", "[kernels][split]") {
  const DesignPoint point = DesignPoint::parse(datasets::Op::spmv, datasets::DType::f64,
                                               "csr_nnzsplit items=4 block=128");
  const FaultMatrices m;
  const auto run = [&](const Problem& p, OutputLog& out, Fault f) {
    emulate_csr_nnz_split(point, p, out, f);
  };
  CHECK(wrong_rows(m.rows32, run, Fault::none) == 0);
  CHECK(wrong_rows(m.huge, run, Fault::none) == 0);
  CHECK(wrong_rows(m.rows32, run, Fault::no_slab_flush) > 0);  // rows ending at a slab's end
  CHECK(wrong_rows(m.huge, run, Fault::no_zero_launch) > 0);   // NaN stays under the atomics
  CHECK(wrong_rows(m.huge, run, Fault::no_last_row) > 0);      // a row over many tiles
}

TEST_CASE("every csr_nnzsplit point compiles with NVRTC on both zeroing paths",
          "[kernels][split][nvrtc]") {
  // EMPTY_ROWS > 0 (a thread per row zeroes) and EMPTY_ROWS == 0 (a warp per tile boundary).
  const auto with_empty = generated(
      "gen-v1/uniform?rows=3000&cols=2000&nnz_per_row=7&empty_rows=0.3&huge_row=1900&seed=5");
  const auto without_empty = generated("gen-v1/arrow?n=3000&width=2");
  REQUIRE(datasets::compute_features(with_empty).empty_rows > 0);
  REQUIRE(datasets::compute_features(without_empty).empty_rows == 0);
  int compiled = 0;
  for (auto dtype : {datasets::DType::f32, datasets::DType::f64}) {
    for (const DesignPoint& p : points_of("csr_nnzsplit", dtype)) {
      for (const auto* a : {&with_empty, &without_empty}) {
        require_compiles(p, *a, 1);
        ++compiled;
      }
    }
  }
  std::cout << "compiled " << compiled << " csr_nnzsplit programs\n";
  CHECK(compiled == 2 * 8 * 2);
}

TEST_CASE("pruning and the cost model put csr_nnzsplit among a power law's candidates",
          "[kernels][split]") {
  const DesignSpace spmv(datasets::Op::spmv, datasets::DType::f32);
  for (const char* uri :
       {"gen-v1/rmat?scale=14&edge_factor=16&seed=1", "gen-v1/lognormal?rows=20000&median=8",
        "gen-v1/lp?rows=20000&alpha=1.5"}) {
    INFO(uri);
    const auto matrix = generated(uri);
    const auto pruned = spmv.pruned(datasets::compute_features(matrix));
    std::set<std::string> generators;
    for (const DesignPoint& p : pruned) generators.insert(p.generator);
    CHECK(generators.count("csr_nnzsplit") == 1);
    // The search's analytic order at the smallest budget the GPU runs use.
    kernels::CostModel model(matrix, datasets::Op::spmv, datasets::DType::f32, 1);
    std::set<std::string> chosen;
    std::vector<double> predicted;
    std::cout << uri << ", budget 8:";
    const auto candidates = kernels::choose_candidates(pruned, model, 8, &predicted);
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      chosen.insert(candidates[i].generator);
      std::cout << " " << candidates[i].generator << " " << predicted[i] << " us;";
    }
    std::cout << "\n";
    CHECK(chosen.count("csr_nnzsplit") == 1);
    // Its row searches cost per tile: longer tiles are predicted faster, and the point screened
    // has long tiles (items=2 measured 1.5-2.4x the model's old figure on large power laws).
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].generator == "csr_nnzsplit") CHECK(candidates[i].int_param("items") >= 8);
    }
    for (const char* block : {"128", "256"}) {
      const auto point = [&](const char* items) {
        return *spmv.find(std::string("csr_nnzsplit items=") + items + " block=" + block);
      };
      CHECK(model.estimate(point("16")).us < model.estimate(point("4")).us);
      CHECK(model.estimate(point("4")).us < model.estimate(point("2")).us);
    }
  }
  const auto stencil = spmv.pruned(datasets::compute_features(generated("gen-v1/stencil2d?nx=64")));
  for (const DesignPoint& p : stencil) CHECK(p.generator != "csr_nnzsplit");
}
