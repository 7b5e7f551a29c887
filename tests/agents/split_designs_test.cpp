// The designs of issue 25 (csr_split, csr_segscan, spmm_csr_split) on the CPU, where no kernel can
// run: host re-implementations of their index logic - which rows a launch stores, zeroes or adds
// to with atomics, the chunks and tiles, the row searches, csr_segscan's per-slab row assignment
// and segmented scan, lane by lane - run over the launch geometry their programs resolve on
// awkward matrices, and checked against the fp64 reference and the write discipline the kernels
// rely on (a row stored once, or zeroed by an earlier launch and then only added to). Then every
// point compiles with NVRTC for f32 and f64 on each code path its prelude specialisations select,
// and (hidden tag [.shared-nvrtc], run by hand: minutes) on every shared matrix.
#include <cmath>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <set>

#include "catch.hpp"
#include "host_emulation.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/kernels/design_space.hpp"
#include "sparserl/reward/compiler.hpp"
#include "sparserl/reward/static_checks.hpp"
#include "test_support.hpp"

using namespace sparserl;
using kernels::DesignPoint;
using kernels::DesignSpace;
using namespace sparserl::testing::emulation;

namespace {

const std::set<std::string> kIssue25Generators = {"csr_split", "csr_segscan", "spmm_csr_split"};

// Matrices that reach every path of the split designs: long rows past every threshold, dense
// columns, a single long row (1 x N), a single column, runs of empty rows longer than 32 rows per
// 32 nonzeros, a row of exactly a chunk's length, the 1 x 1 and the 0 x 0 matrix.
const std::vector<std::string> kAwkward = {
    "gen-v1/arrow?n=3000&width=2",
    "gen-v1/uniform?rows=20000&cols=20000&nnz_per_row=3&huge_row=15000&seed=6",
    "gen-v1/uniform?rows=3000&cols=2000&nnz_per_row=7&empty_rows=0.3&huge_row=1900&seed=5",
    "gen-v1/uniform?rows=5000&cols=100&nnz_per_row=1&empty_rows=0.9&seed=7",
    "gen-v1/uniform?rows=1&cols=5000&nnz_per_row=5000",
    "gen-v1/uniform?rows=600&cols=600&nnz_per_row=2&huge_row=512&seed=8",
    "gen-v1/column?n=4097",
    "gen-v1/rmat?scale=12&edge_factor=8&seed=3",
    "gen-v1/diagonal?n=1",
};

std::vector<datasets::SparseMatrix> awkward_matrices() {
  std::vector<datasets::SparseMatrix> out;
  for (const std::string& uri : kAwkward) out.push_back(generated(uri));
  out.emplace_back();  // 0 x 0
  return out;
}

std::vector<DesignPoint> issue25_points(datasets::Op op, datasets::DType dtype) {
  std::vector<DesignPoint> out;
  const DesignSpace space(op, dtype);
  for (const DesignPoint& p : space.points()) {
    if (kIssue25Generators.count(p.generator) != 0) out.push_back(p);
  }
  return out;
}

// Launch 2 of csr_split and spmm_csr_split: a group per chunk of `split` nonzeros; `groups` of
// them in the grid.
void emulate_long_chunks(const Problem& p, std::int64_t split, std::int64_t groups, int group,
                         OutputLog& out) {
  std::int64_t max_row = 0;
  for (std::int64_t i = 0; i < p.rows(); ++i) max_row = std::max(max_row, p.ptr(i + 1) - p.ptr(i));
  if (max_row <= split) return;  // #if MAX_ROW_NNZ > SPLIT_ROW
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t chunk_begin = g * split;
    if (chunk_begin >= p.nnz()) continue;
    const std::int64_t chunk_end = std::min(chunk_begin + split, p.nnz());
    std::int64_t row = row_of_nonzero(p, chunk_begin, 0, group);
    for (int side = 0; side < 2; ++side) {
      const std::int64_t begin = p.ptr(row);
      const std::int64_t end = p.ptr(row + 1);
      if (end - begin > split) {
        out.add(row, p.sum(std::max(begin, chunk_begin), std::min(end, chunk_end)));
      }
      if (end >= chunk_end) break;
      row = row_of_nonzero(p, chunk_end - 1, row + 1, group);
    }
  }
}

// csr_split: launch 1 (bulk) and launch 2 (long rows), thread by thread of their grids.
// `drop_chunks` leaves the last chunks of launch 2's grid out (a broken program, for the negative
// test).
void emulate_csr_split(const DesignPoint& point, const Problem& p, OutputLog& out,
                       std::int64_t drop_chunks = 0) {
  const auto launches = launches_of(point, p.a, 1);
  REQUIRE(launches.size() == 2);
  const int lanes = point.int_param("lanes");
  const std::int64_t split = point.int_param("split");
  const std::int64_t short_row = 8 * lanes;
  const int groups = 32 / lanes;
  std::int64_t max_row = 0;
  for (std::int64_t i = 0; i < p.rows(); ++i) max_row = std::max(max_row, p.ptr(i + 1) - p.ptr(i));
  const std::int64_t tiles = launches[0].grid * launches[0].block / 32;
  for (std::int64_t tile = 0; tile < tiles; ++tile) {
    std::int64_t begin[32], end[32];
    for (int lane = 0; lane < 32; ++lane) {
      const std::int64_t row = tile * 32 + lane;
      begin[lane] = row < p.rows() ? p.ptr(row) : 0;
      end[lane] = row < p.rows() ? p.ptr(row + 1) : 0;
      if (max_row > split && row < p.rows() && end[lane] - begin[lane] > split) out.zero(row);
    }
    for (int round = 0; round < lanes; ++round) {
      for (int group = 0; group < groups; ++group) {
        const int source = round * groups + group;
        if (end[source] - begin[source] > short_row) continue;
        if (tile * 32 + source < p.rows())
          out.store(tile * 32 + source, p.sum(begin[source], end[source]));
      }
    }
    if (max_row <= short_row) continue;
    for (int source = 0; source < 32; ++source) {
      const std::int64_t length = end[source] - begin[source];
      if (tile * 32 + source < p.rows() && length > short_row && length <= split) {
        out.store(tile * 32 + source, p.sum(begin[source], end[source]));
      }
    }
  }
  emulate_long_chunks(p, split, launches[1].grid * launches[1].block / 32 - drop_chunks, 32, out);
}

// spmm_csr_split's row partition (one column of Y: the column tiles do not change it).
void emulate_spmm_split(const DesignPoint& point, const Problem& p, OutputLog& out) {
  const auto launches = launches_of(point, p.a, 8);
  REQUIRE(launches.size() == 2);
  const int lanes = point.int_param("lanes");
  const std::int64_t split = point.int_param("split");
  const std::int64_t rows = launches[0].grid * launches[0].block / lanes;
  for (std::int64_t row = 0; row < std::min(rows, p.rows()); ++row) {
    const std::int64_t begin = p.ptr(row);
    const std::int64_t end = p.ptr(row + 1) - begin > split ? begin : p.ptr(row + 1);
    if (end == begin && p.ptr(row + 1) > begin) {
      out.zero(row);
    } else {
      out.store(row, p.sum(begin, end));
    }
  }
  emulate_long_chunks(p, split, launches[1].grid * launches[1].block / lanes, lanes, out);
}

// csr_segscan's zero launch and main launch, the 32 lanes of each warp as arrays (a shuffle reads
// another lane's value of the same step).
void emulate_segscan_warp(const Problem& p, std::int64_t tile_size, std::int64_t tile_begin,
                          OutputLog& out) {
  const std::int64_t M = p.rows();
  const std::int64_t NNZ = p.nnz();
  const std::int64_t tile_end = std::min(tile_begin + tile_size, NNZ);
  std::int64_t row = row_of_nonzero(p, tile_begin, 0, 32);
  std::int64_t row_end = p.ptr(row + 1);
  bool began_here = p.ptr(row) == tile_begin;
  double share[32] = {};
  for (std::int64_t base = tile_begin; base < tile_end; base += 32) {
    const std::int64_t stop = std::min(base + 32, tile_end);
    double sum[32];
    for (int lane = 0; lane < 32; ++lane)
      sum[lane] = base + lane < stop ? p.product(base + lane) : 0;
    if (row_end > stop) {
      for (int lane = 0; lane < 32; ++lane) share[lane] += sum[lane];
      continue;
    }
    std::int64_t window_end[32], my_row[32], my_end[32];
    for (int lane = 0; lane < 32; ++lane) {
      window_end[lane] = row + lane < M ? p.ptr(row + lane + 1) : NNZ;
    }
    for (int lane = 0; lane < 32; ++lane) {
      const std::int64_t nz = base + lane;
      int count = 0;
      for (int step = 16; step > 0; step /= 2) {
        if (window_end[count + step - 1] <= nz) count += step;
      }
      if (window_end[31] <= nz) count = 32;
      my_row[lane] = row + count;
      my_end[lane] = window_end[count & 31];
      if (nz >= stop) {
        my_row[lane] = M;
      } else if (count == 32) {
        std::int64_t low = row + 32, high = M;
        while (low < high) {
          const std::int64_t middle = (low + high) / 2;
          if (p.ptr(middle + 1) <= nz) {
            low = middle + 1;
          } else {
            high = middle;
          }
        }
        my_row[lane] = low;
        my_end[lane] = p.ptr(low + 1);
      }
    }
    double open = 0;
    for (double s : share) open += s;
    sum[0] += open;
    for (double& s : share) s = 0;
    for (int offset = 1; offset < 32; offset *= 2) {
      double before[32];
      std::copy(sum, sum + 32, before);
      for (int lane = offset; lane < 32; ++lane) {
        if (my_row[lane - offset] == my_row[lane]) sum[lane] += before[lane - offset];
      }
    }
    for (int lane = 0; lane < 32; ++lane) {
      const bool tail = lane == 31 || my_row[lane + 1] != my_row[lane];
      if (base + lane >= stop || !tail) continue;
      if (my_end[lane] <= stop) {
        if (my_row[lane] != row || began_here) {
          out.store(my_row[lane], sum[lane]);
        } else {
          out.add(my_row[lane], sum[lane]);
        }
      } else if (stop == tile_end) {
        out.add(my_row[lane], sum[lane]);
      }
    }
    if (stop == tile_end) break;
    if (my_end[31] > stop) {
      began_here = began_here || my_row[31] != row;
      row = my_row[31];
      row_end = my_end[31];
      share[0] = sum[31];
    } else {
      int ended = 0;
      for (std::int64_t e : window_end) ended += e <= stop ? 1 : 0;
      row = ended < 32 ? row + ended : row_of_nonzero(p, stop, row + 32, 32);
      row_end = p.ptr(row + 1);
      began_here = true;
    }
  }
  if (row_end > tile_end) {
    double open = 0;
    for (double s : share) open += s;
    out.add(row, open);
  }
}

void emulate_csr_segscan(const DesignPoint& point, const Problem& p, OutputLog& out) {
  const auto launches = launches_of(point, p.a, 1);
  REQUIRE(launches.size() == 2);
  const std::int64_t tile = 32 * point.int_param("slabs");
  emulate_tile_cut_zeroing(p, tile, launches[0].grid * launches[0].block, out);
  const std::int64_t warps = launches[1].grid * launches[1].block / 32;
  for (std::int64_t w = 0; w < warps; ++w) {
    if (w * tile < p.nnz()) emulate_segscan_warp(p, tile, w * tile, out);
  }
}

}  // namespace

TEST_CASE("the split and segmented-scan designs' index logic matches the reference on the host",
          "[kernels][split]") {
  const auto matrices = awkward_matrices();
  int emulated = 0;
  for (const datasets::SparseMatrix& a : matrices) {
    const Problem problem(a);
    for (const DesignPoint& point : issue25_points(datasets::Op::spmv, datasets::DType::f64)) {
      INFO(point.id() << " on " << a.rows() << " x " << a.cols() << ", " << a.nnz() << " nonzeros");
      OutputLog out(a.rows());
      if (point.generator == "csr_split") {
        emulate_csr_split(point, problem, out);
      } else {
        emulate_csr_segscan(point, problem, out);
      }
      check_output(problem, out);
      ++emulated;
    }
    for (const DesignPoint& point : issue25_points(datasets::Op::spmm, datasets::DType::f64)) {
      INFO(point.id() << " on " << a.rows() << " x " << a.cols() << ", " << a.nnz() << " nonzeros");
      OutputLog out(a.rows());
      emulate_spmm_split(point, problem, out);
      check_output(problem, out);
      ++emulated;
    }
  }
  CHECK(emulated == 10 * (15 + 12));
}

TEST_CASE("the host checks catch a broken partition", "[kernels][split]") {
  // The emulation can fail: without the long-row launch's chunks the long rows keep their zeros,
  // and the comparison with the reference sees it.
  const auto a =
      generated("gen-v1/uniform?rows=20000&cols=20000&nnz_per_row=3&huge_row=15000&seed=6");
  const Problem problem(a);
  const DesignPoint point =
      DesignPoint::parse(datasets::Op::spmv, datasets::DType::f64, "csr_split lanes=4 split=512");
  OutputLog whole(a.rows());
  emulate_csr_split(point, problem, whole);
  CHECK(mismatches(problem, whole) == 0);
  OutputLog broken(a.rows());
  emulate_csr_split(point, problem, broken, 1000000);  // no long-row launch at all
  CHECK(mismatches(problem, broken) > 0);
}

namespace {

// The prelude facts a point's program switches on (#if), so that one compile per distinct key
// covers every code path.
std::string code_path_key(const DesignPoint& p, const datasets::SparseMatrix& a, std::int64_t k) {
  std::int64_t max_row = 0, empty = 0;
  for (std::int64_t i = 0; i < a.rows(); ++i) {
    max_row = std::max<std::int64_t>(max_row, a.row_length(static_cast<datasets::Index>(i)));
    empty += a.row_length(static_cast<datasets::Index>(i)) == 0 ? 1 : 0;
  }
  std::string key = p.id() + " " + std::string(to_string(p.dtype));
  if (p.generator != "csr_segscan") {
    const std::int64_t split = p.int_param("split");
    key += max_row > split ? " long" : " no-long";
  }
  if (p.generator == "csr_split") key += max_row > 8 * p.int_param("lanes") ? " medium" : "";
  if (p.generator == "csr_segscan") key += empty > 0 ? " empty" : " no-empty";
  if (p.op == datasets::Op::spmm) key += k % p.int_param("cols") == 0 ? " vector" : " scalar";
  return key;
}

// Every issue-25 point on every matrix (f32 and f64; SpMM with K = 8 and 3), compiled once per
// code path unless `every_matrix`; returns the count of compiles.
int compile_issue25_points(const std::vector<datasets::SparseMatrix>& matrices, bool every_matrix) {
  std::set<std::string> seen;
  int compiled = 0;
  for (auto op : {datasets::Op::spmv, datasets::Op::spmm}) {
    for (auto dtype : {datasets::DType::f32, datasets::DType::f64}) {
      for (const DesignPoint& p : issue25_points(op, dtype)) {
        for (const datasets::SparseMatrix& a : matrices) {
          for (std::int64_t k : {std::int64_t{8}, std::int64_t{3}}) {
            if (op == datasets::Op::spmv && k != 8) continue;
            const std::int64_t kk = op == datasets::Op::spmv ? 1 : k;
            if (!every_matrix && !seen.insert(code_path_key(p, a, kk)).second) continue;
            require_compiles(p, a, kk);
            ++compiled;
          }
        }
      }
    }
  }
  return compiled;
}

}  // namespace

TEST_CASE("the issue-25 designs compile with NVRTC on every code path of their preludes",
          "[kernels][split][nvrtc]") {
  const int compiled = compile_issue25_points(awkward_matrices(), false);
  std::cout << "compiled " << compiled << " issue-25 programs (one per point and code path)\n";
  CHECK(compiled >= 2 * (15 + 2 * 12));
}

TEST_CASE("the issue-25 designs compile with NVRTC on every shared matrix",
          "[.shared-nvrtc][kernels][split]") {
  const auto dir = sparserl::testing::shared_matrices_dir();
  datasets::StoreOptions options;
  options.indexes = {dir};
  datasets::MatrixStore store(sparserl::testing::scratch_dir("split_designs_shared"), options);
  std::vector<datasets::SparseMatrix> matrices;
  for (const std::string& uri : store.indexed_uris()) matrices.push_back(*store.load(uri));
  for (auto& a : awkward_matrices()) matrices.push_back(std::move(a));
  const int compiled = compile_issue25_points(matrices, true);
  std::cout << "compiled " << compiled << " issue-25 programs on " << matrices.size()
            << " matrices\n";
  CHECK(compiled == static_cast<int>(matrices.size()) * 2 * (15 + 2 * 12));
}

TEST_CASE("pruning keeps the split designs where a few rows are long", "[kernels][split]") {
  const DesignSpace spmv(datasets::Op::spmv, datasets::DType::f32);
  const auto generators_on = [&](const std::string& uri) {
    std::set<std::string> ids;
    for (const auto& p : spmv.pruned(datasets::compute_features(generated(uri))))
      ids.insert(p.id());
    return ids;
  };
  const auto arrow = generators_on("gen-v1/arrow?n=3000&width=2");
  CHECK(arrow.count("csr_split lanes=1 split=512") == 1);
  CHECK(arrow.count("csr_split lanes=1 split=2048") == 1);
  CHECK(arrow.count("csr_segscan slabs=16") == 1);
  const auto stencil = generators_on("gen-v1/stencil2d?nx=64");
  for (const std::string& id : stencil) {
    CHECK(id.rfind("csr_split", 0) == std::string::npos);
    CHECK(id.rfind("csr_segscan", 0) == std::string::npos);
  }
}
