// Shared by the host emulations of the load-balanced SpMV designs (split_designs_test.cpp: issue
// 25's csr_split, csr_segscan and spmm_csr_split; nnz_split_test.cpp: csr_nnzsplit;
// coo_tiled_test.cpp: coo_tiled): the problem (a matrix, x and the fp64 reference), the log of an
// emulated program's writes to y and the write discipline the kernels rely on, the launch geometry
// a point's program resolves on a matrix, the programs' row_of_nonzero() search, their shared
// zeroing launch, an NVRTC compile that must succeed without spills, and the matrices of the
// warp-tile designs (csr_nnzsplit, coo_tiled). No GPU: these tests re-implement a kernel's index
// logic lane by lane and run it over its own grid.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/kernels/design_space.hpp"
#include "sparserl/reward/compiler.hpp"
#include "sparserl/reward/static_checks.hpp"

namespace sparserl::testing::emulation {

using kernels::DesignPoint;

// The output of an emulated program: y starts as NaN (as the evaluator fills it) and every write
// is counted by kind.
struct OutputLog {
  std::vector<double> y;
  std::vector<int> stores, zeros, adds;
  explicit OutputLog(std::int64_t rows)
      : y(rows, std::numeric_limits<double>::quiet_NaN()),
        stores(rows, 0),
        zeros(rows, 0),
        adds(rows, 0) {}
  void store(std::int64_t row, double v) {
    REQUIRE(row >= 0);
    REQUIRE(row < static_cast<std::int64_t>(y.size()));
    y[row] = v;
    ++stores[row];
  }
  void zero(std::int64_t row) {
    REQUIRE(row >= 0);
    REQUIRE(row < static_cast<std::int64_t>(y.size()));
    y[row] = 0;
    ++zeros[row];
  }
  void add(std::int64_t row, double v) {
    REQUIRE(row >= 0);
    REQUIRE(row < static_cast<std::int64_t>(y.size()));
    y[row] += v;
    ++adds[row];
  }
};

// The matrix, x, and y = A x in fp64.
struct Problem {
  const datasets::SparseMatrix& a;
  std::vector<double> x;
  std::vector<double> reference;
  explicit Problem(const datasets::SparseMatrix& matrix) : a(matrix) {
    for (std::int64_t j = 0; j < a.cols(); ++j) x.push_back(1.0 + static_cast<double>(j % 7) / 8);
    for (std::int64_t i = 0; i < a.rows(); ++i) {
      double s = 0;
      for (auto k = a.row_ptr()[i]; k < a.row_ptr()[i + 1]; ++k)
        s += a.values()[k] * x[a.col_idx()[k]];
      reference.push_back(s);
    }
  }
  [[nodiscard]] std::int64_t rows() const { return a.rows(); }
  [[nodiscard]] std::int64_t nnz() const { return a.nnz(); }
  [[nodiscard]] std::int64_t ptr(std::int64_t i) const { return a.row_ptr()[i]; }
  [[nodiscard]] double product(std::int64_t k) const { return a.values()[k] * x[a.col_idx()[k]]; }
  [[nodiscard]] double sum(std::int64_t from, std::int64_t to) const {
    double s = 0;
    for (std::int64_t k = from; k < to; ++k) s += product(k);
    return s;
  }
};

// Rows whose emulated y differs from the reference beyond rounding.
inline std::int64_t mismatches(const Problem& p, const OutputLog& out) {
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < p.rows(); ++i) {
    const bool close = std::abs(out.y[i] - p.reference[i]) <= 1e-9 * (1 + std::abs(p.reference[i]));
    wrong += close ? 0 : 1;
  }
  return wrong;
}

// Every row right, and the write discipline: a row is either stored once (and nothing else), or
// zeroed by an earlier launch and then only added to, or (an empty row) only zeroed.
inline void check_output(const Problem& p, const OutputLog& out) {
  for (std::int64_t i = 0; i < p.rows(); ++i) {
    INFO("row " << i << " of " << p.rows() << ": stores " << out.stores[i] << ", zeros "
                << out.zeros[i] << ", adds " << out.adds[i]);
    REQUIRE(out.stores[i] <= 1);
    if (out.stores[i] == 1) {
      REQUIRE(out.zeros[i] == 0);
      REQUIRE(out.adds[i] == 0);
    } else {
      REQUIRE(out.zeros[i] >= 1);
    }
    REQUIRE(std::isfinite(out.y[i]));
  }
  CHECK(mismatches(p, out) == 0);
}

// The launches of a point's program on a matrix (grid sizes from its own launch expressions).
inline std::vector<reward::ResolvedLaunch> launches_of(const DesignPoint& point,
                                                       const datasets::SparseMatrix& a,
                                                       std::int64_t k) {
  const std::string text = kernels::render_program(point);
  const reward::StaticCheckResult checked = reward::check_program(text, point.op);
  REQUIRE(checked.ok());
  const reward::GeometryResult g = reward::resolve_launches(
      *checked.program, reward::compute_constants(a, point.op, k, point.format()));
  REQUIRE(g.ok());
  return g.launches;
}

// row_of_nonzero() as the programs write it: `group` probes per step narrow the range.
inline std::int64_t row_of_nonzero(const Problem& p, std::int64_t nz, std::int64_t low, int group) {
  std::int64_t high = p.rows();
  while (low < high) {
    const std::int64_t step = (high - low + group - 1) / group;
    int count = 0;
    for (int lane = 0; lane < group; ++lane) {
      const std::int64_t probe = low + lane * step;
      if (probe < high && p.ptr(probe + 1) <= nz) ++count;
    }
    if (count == 0) {
      high = low;
    } else {
      const std::int64_t last = low + (count - 1) * step;
      low = last + 1;
      high = std::min(high, last + step);
    }
  }
  return low;
}

// The zeroing launch the tile-split designs share (program_text's tile_cut_zeroing_kernel:
// csr_segscan, csr_nnzsplit), over `threads` threads: with empty rows, a thread per row zeroes its
// row where it is empty or a multiple of `tile` nonzeros cuts it; without, a warp per tile boundary
// zeroes the row that boundary cuts.
inline void emulate_tile_cut_zeroing(const Problem& p, std::int64_t tile, std::int64_t threads,
                                     OutputLog& out) {
  std::int64_t empty_rows = 0;
  for (std::int64_t i = 0; i < p.rows(); ++i) empty_rows += p.ptr(i) == p.ptr(i + 1) ? 1 : 0;
  if (empty_rows > 0) {
    for (std::int64_t row = 0; row < std::min(threads, p.rows()); ++row) {
      const std::int64_t begin = p.ptr(row), end = p.ptr(row + 1);
      if (begin == end || begin / tile != (end - 1) / tile) out.zero(row);
    }
    return;
  }
  for (std::int64_t w = 0; w < threads / 32; ++w) {
    const std::int64_t boundary = (w + 1) * tile;
    if (boundary >= p.nnz()) continue;
    const std::int64_t row = row_of_nonzero(p, boundary, 0, 32);
    if (p.ptr(row) < boundary) out.zero(row);
  }
}

// Compiles a point for a matrix and K; REQUIREs a cubin with every launched kernel and no spills.
inline void require_compiles(const DesignPoint& p, const datasets::SparseMatrix& a,
                             std::int64_t k) {
  const std::string text = kernels::render_program(p);
  reward::CompileRequest request;
  request.source =
      reward::compile_source(p.dtype, reward::compute_constants(a, p.op, k, p.format()), text);
  const reward::CompileResult r = reward::compile(request);
  INFO(p.id() << " " << to_string(p.dtype) << " k=" << k << " on " << a.rows() << " x " << a.cols()
              << "\n"
              << r.log);
  REQUIRE(r.ok);
  for (const auto& name : reward::check_program(text, p.op).program->kernel_names()) {
    CHECK(r.kernel(name) != nullptr);
  }
  CHECK(r.figures().spill_bytes == 0);
}

inline datasets::SparseMatrix generated(const std::string& uri) {
  return datasets::generate(datasets::MatrixUri::parse(uri));
}

// The designs that split the nonzeros into warp tiles (csr_nnzsplit, coo_tiled) are emulated on
// these. Row lengths chosen to hit the tile and slab edges: leading and trailing empty rows, runs
// of 100 and 1,000 empty rows, rows of 31, 32 and 33 entries, a row of 1,000 over many tiles.
inline datasets::SparseMatrix edge_matrix() {
  std::vector<int> lengths(40, 0);
  for (int len : {5, 27, 32, 32, 31, 33, 1, 1, 30}) lengths.push_back(len);
  for (int i = 0; i < 100; ++i) lengths.push_back(0);
  for (int len : {64, 1000, 0, 0, 3, 61, 128, 256, 1, 0, 2}) lengths.push_back(len);
  for (int i = 0; i < 50; ++i) lengths.push_back(i % 3 == 0 ? 0 : i % 7 + 1);
  for (int i = 0; i < 1000; ++i) lengths.push_back(0);
  lengths.push_back(5);
  for (int i = 0; i < 37; ++i) lengths.push_back(0);
  const int cols = 1100;
  std::vector<datasets::Index> row_ptr = {0}, col_idx;
  std::vector<double> values;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    const int len = lengths[r];
    for (int j = 0; j < len; ++j) {  // distinct columns: 13 is prime to 1100
      col_idx.push_back(static_cast<datasets::Index>((j * 13 + static_cast<int>(r)) % cols));
      values.push_back(0.5 + static_cast<double>(col_idx.size() % 5));
    }
    std::sort(col_idx.end() - len, col_idx.end());
    row_ptr.push_back(static_cast<datasets::Index>(col_idx.size()));
  }
  return datasets::SparseMatrix::from_csr(static_cast<datasets::Index>(lengths.size()), cols,
                                          std::move(row_ptr), std::move(col_idx),
                                          std::move(values));
}

inline const std::vector<std::string> kTileMatrices = {
    "gen-v1/arrow?n=3000&width=2",
    "gen-v1/uniform?rows=20000&cols=20000&nnz_per_row=3&huge_row=15000&seed=6",
    "gen-v1/uniform?rows=3000&cols=2000&nnz_per_row=7&empty_rows=0.3&huge_row=1900&seed=5",
    "gen-v1/uniform?rows=5000&cols=100&nnz_per_row=1&empty_rows=0.9&seed=7",
    "gen-v1/uniform?rows=1&cols=5000&nnz_per_row=5000",
    "gen-v1/uniform?rows=300&cols=400&nnz_per_row=32&seed=2",
    "gen-v1/uniform?rows=100&cols=400&nnz_per_row=64&seed=2",
    "gen-v1/column?n=4097",
    "gen-v1/rmat?scale=12&edge_factor=8&seed=3",
    "gen-v1/rmat?a=0.65&b=0.15&c=0.15&edge_factor=8&scale=14&seed=5",  // long empty runs
    "gen-v1/lognormal?rows=4000&median=8&sigma=1.5",
    "gen-v1/lp?rows=3000&alpha=1.2",
    "gen-v1/diagonal?n=1",
};

inline std::vector<datasets::SparseMatrix> tile_test_matrices() {
  std::vector<datasets::SparseMatrix> out;
  for (const std::string& uri : kTileMatrices) out.push_back(generated(uri));
  out.push_back(edge_matrix());
  out.emplace_back();  // 0 x 0
  return out;
}

// The SpMV points of one generator, in the space's order.
inline std::vector<DesignPoint> points_of(const std::string& generator, datasets::DType dtype) {
  std::vector<DesignPoint> out;
  const kernels::DesignSpace space(datasets::Op::spmv, dtype);
  for (const DesignPoint& p : space.points()) {
    if (p.generator == generator) out.push_back(p);
  }
  return out;
}

// The two matrices the broken-variant checks run on: rows of 32 entries, each ending at a slab's
// edge, and a row of 15,000 entries over many tiles.
struct FaultMatrices {
  datasets::SparseMatrix rows32 =
      generated("gen-v1/uniform?rows=300&cols=400&nnz_per_row=32&seed=2");
  datasets::SparseMatrix huge =
      generated("gen-v1/uniform?rows=20000&cols=20000&nnz_per_row=3&huge_row=15000&seed=6");
};

// The rows an emulation gets wrong on `a` with `fault` (emulate(problem, out, fault)).
template <class Emulate, class Fault>
std::int64_t wrong_rows(const datasets::SparseMatrix& a, const Emulate& emulate, Fault fault) {
  const Problem problem(a);
  OutputLog out(a.rows());
  emulate(problem, out, fault);
  return mismatches(problem, out);
}

}  // namespace sparserl::testing::emulation
