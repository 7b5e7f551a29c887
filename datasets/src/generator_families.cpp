// The generator families of the large benchmark regime (generators.hpp lists their keys): road
// networks, circuits, LP constraint matrices, log-normal row lengths, block-sparse matrices and
// Kronecker-scaled real matrices, plus the common `permute` modifier. Each family reads its keys
// into a FamilyPlan (validation: no allocation, no loading), then builds its pattern from the
// pattern stream in the order documented at each builder: the order of the draws is part of the
// matrix's definition, since the same URI must give the same matrix everywhere.
//
// Real arithmetic: lp and lognormal need exp and log (Pareto and log-normal row lengths). libm's
// results differ between implementations, so both are computed here from IEEE + - * / and sqrt
// only, each correctly rounded on every conforming CPU. A fused multiply-add rounds once where this
// code rounds twice, so this file is compiled with -ffp-contract=off (datasets/CMakeLists.txt): no
// compiler may contract differently on a CPU that has FMA.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "generator_internal.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/datasets/random.hpp"
#include "sparserl/datasets/task.hpp"

namespace sparserl::datasets {
namespace detail {
namespace {

// ---- exp and log from + - * / and sqrt

constexpr double kInvLn2 = 0x1.71547652b82fep0;  // 1 / ln 2, the nearest double
constexpr double kSqrt2 = 0x1.6a09e667f3bcdp0;   // sqrt 2, the nearest double
// ln 2 = kLn2Hi + kLn2Lo (fdlibm's split): kLn2Hi has 32 significant bits, so k * kLn2Hi is exact
// for |k| < 2^21 (every exponent of a double).
constexpr double kLn2Hi = 0x1.62e42feep-1;
constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;

// x * 2^k for k in [-1022, 1023]: a multiplication by an exact power of two.
double times_power_of_two(double x, int k) {
  return x * std::bit_cast<double>(static_cast<std::uint64_t>(k + 1023) << 52);
}

// Natural logarithm of a finite x > 0. x = m * 2^e with m in (sqrt(1/2), sqrt(2)] (exact bit
// manipulation); ln m = 2 atanh(t) with t = (m - 1) / (m + 1), |t| <= 0.172, by its series up to
// t^27 (the next term is below 1e-21); ln x = e ln 2 + ln m. What matters here is less the last
// ulp than that every step is one correctly rounded IEEE operation.
double exact_log(double x) {
  auto bits = std::bit_cast<std::uint64_t>(x);
  int e = static_cast<int>((bits >> 52) & 0x7ffU) - 1023;
  if (e == -1023) {  // subnormal: scaled into the normal range (exact)
    bits = std::bit_cast<std::uint64_t>(x * 0x1p54);
    e = static_cast<int>((bits >> 52) & 0x7ffU) - 1023 - 54;
  }
  auto m = std::bit_cast<double>((bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);
  if (m > kSqrt2) {
    m *= 0.5;
    ++e;
  }
  const double t = (m - 1.0) / (m + 1.0);
  const double t2 = t * t;
  double series = 1.0 / 27.0;
  for (int k = 12; k >= 0; --k) series = 1.0 / (2 * k + 1) + t2 * series;
  const auto ed = static_cast<double>(e);
  return ed * kLn2Hi + (ed * kLn2Lo + 2.0 * t * series);
}

// e^x: x = k ln 2 + r with k the integer nearest to x / ln 2 and |r| <= 0.35 (Cody and Waite's
// reduction with ln 2 in two parts); e^r by its Taylor series up to r^16 (Horner; the next term is
// below 1e-21), times 2^k exactly. Below -708 the result is 0, from 709 on +infinity (so the
// scaling never leaves the normal range). Both functions are within a few ulp of the true value.
double exact_exp(double x) {
  if (!(x < 709.0)) return std::numeric_limits<double>::infinity();
  if (x < -708.0) return 0.0;
  const double kf = x * kInvLn2;
  const int k = static_cast<int>(kf >= 0.0 ? kf + 0.5 : kf - 0.5);
  const double r = (x - static_cast<double>(k) * kLn2Hi) - static_cast<double>(k) * kLn2Lo;
  double sum = 1.0;
  for (int j = 16; j >= 1; --j) sum = 1.0 + sum * r / static_cast<double>(j);
  return times_power_of_two(sum, k);
}

// A standard normal deviate by Marsaglia's polar method: (u, v) uniform in [-1, 1)^2 until
// 0 < s = u^2 + v^2 < 1, then u * sqrt(-2 ln(s) / s). The second deviate (v's) is not used.
double standard_normal(Rng& rng) {
  for (;;) {
    const double u = rng.uniform_pm1();
    const double v = rng.uniform_pm1();
    const double s = u * u + v * v;
    if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * exact_log(s) / s);
  }
}

// floor(x + 0.5) for 0 <= x < 2^62, by truncation: halves round up by definition (no libm).
std::int64_t round_half_up(double x) {
  return static_cast<std::int64_t>(x + 0.5);  // NOLINT(bugprone-incorrect-roundings)
}

// ---- the table

const std::vector<GeneratorKind>& families_table() {
  static const std::vector<GeneratorKind> kinds = {
      {"road",
       "road-network-like: grid graph, edges kept at random, plus long-range edges; symmetric",
       {{"nx", "64", "grid vertices along x"},
        {"ny", "", "grid vertices along y (default nx)"},
        {"keep", "0.7", "probability that a grid edge is kept, in [0, 1]"},
        {"long_range", "0.001",
         "long-range edges per vertex, in [0, 10]: round(long_range * nx * ny) uniform pairs"}}},
      {"circuit",
       "circuit-like: sparse near-diagonal bulk with a few very dense rows and columns",
       {{"n", "10000", "rows and columns"},
        {"near", "2", "entries per row at offsets uniform in [-spread, spread], in [0, 1000]"},
        {"spread", "8", "largest offset of a near entry"},
        {"far", "1", "entries per row at uniform columns, in [0, 1000]"},
        {"dense_rows", "2", "dense rows (at most n)"},
        {"dense_cols", "2", "dense columns (at most n)"},
        {"dense_len", "0.1",
         "dense row or column k holds floor(dense_len * n / (k + 1)) entries, in [0, 1]"}}},
      {"lp",
       "LP-like: wide, rows of Pareto-distributed lengths at uniform distinct columns",
       {{"rows", "1000", "rows"},
        {"cols", "", "columns (default 4 * rows)"},
        {"min_len", "2", "Pareto scale (the shortest row length), in [1, 2147483647]"},
        {"alpha", "1.5", "Pareto tail index, in [0.05, 100]: smaller is heavier"},
        {"max_len", "", "longest row, at most cols (default cols)"}}},
      {"lognormal",
       "rows of log-normal lengths at uniform distinct columns",
       {{"rows", "1000", "rows"},
        {"cols", "", "columns (default rows)"},
        {"median", "8", "median row length, in [0, 2147483647]"},
        {"sigma", "1", "standard deviation of the log row length, in [0, 20]"},
        {"max_len", "", "longest row, at most cols (default cols)"}}},
      {"blocksparse",
       "dense square blocks at random block columns, on the block grid or shifted off it",
       {{"block", "4", "rows and columns of a block, in [1, 4096]"},
        {"block_rows", "256", "block rows (rows = block_rows * block)"},
        {"block_cols", "", "block columns (default block_rows; cols = block_cols * block)"},
        {"blocks_per_row", "4", "blocks per block row, at distinct block columns"},
        {"align", "1", "1: blocks on the block grid; 0: each block shifted by [0, block)^2"},
        {"fill", "1", "probability that a cell of a block is kept, in [0, 1]"}}},
      {"kron",
       "Kronecker product of a real matrix's pattern with a seeded random pattern",
       {{"group", "HB", "SuiteSparse group of the real matrix ('ungrouped' for none)"},
        {"name", "west0067", "SuiteSparse name of the real matrix"},
        {"n", "64", "rows and columns of the random factor"},
        {"per_row", "4", "distinct uniform columns per row of the random factor (at most n)"},
        {"outer", "real", "the outer factor: real (real x random) or random (random x real)"}}},
  };
  return kinds;
}

// ---- plans

constexpr std::int64_t kMax = kMaxIndex;

void plan_road(const SpecReader& in, FamilyPlan& p) {
  p.nx = in.integer("nx", 64, 0, kMax);
  p.ny = in.integer("ny", p.nx, 0, kMax);
  p.keep = in.real("keep", 0.7, 0.0, 1.0);
  p.long_range = in.real("long_range", 0.001, 0.0, 10.0);
  p.rows = p.cols = times(p.nx, p.ny);
  check_size(in, "ny", "rows", p.rows);
  const std::int64_t extra = round_half_up(p.long_range * static_cast<double>(p.rows));
  p.nnz_bound = plus(times(p.rows, 5), times(extra, 2));
  check_size(in, "long_range", "up to nnz", p.nnz_bound);
}

// The length of circuit's dense row (or column) k.
std::int64_t dense_length(const FamilyPlan& p, std::int64_t k) {
  return static_cast<std::int64_t>(p.dense_len * static_cast<double>(p.rows) /
                                   static_cast<double>(k + 1));
}

void plan_circuit(const SpecReader& in, FamilyPlan& p) {
  p.rows = p.cols = in.integer("n", 10000, 0, kMax);
  p.near = in.integer("near", 2, 0, 1000);
  p.spread = in.integer("spread", 8, 0, kMax);
  p.far = in.integer("far", 1, 0, 1000);
  p.dense_rows = in.integer("dense_rows", 2, 0, kMax);
  p.dense_cols = in.integer("dense_cols", 2, 0, kMax);
  p.dense_len = in.real("dense_len", 0.1, 0.0, 1.0);
  const auto at_most_n = [&](const char* key, std::int64_t count) {
    if (count > p.rows) {
      in.fail(key, "is " + std::to_string(count) + ", more than n = " + std::to_string(p.rows));
    }
  };
  at_most_n("dense_rows", p.dense_rows);
  at_most_n("dense_cols", p.dense_cols);
  std::int64_t bound = times(p.rows, 1 + p.near + p.far);
  for (std::int64_t k = 0; k < p.dense_rows; ++k) bound = plus(bound, dense_length(p, k));
  for (std::int64_t k = 0; k < p.dense_cols; ++k) bound = plus(bound, dense_length(p, k));
  p.nnz_bound = bound;
  check_size(in, "n", "up to nnz", p.nnz_bound);
}

// lp and lognormal; their nnz is known once the lengths are drawn.
void plan_lengths(const SpecReader& in, FamilyPlan& p) {
  const bool lp = p.kind == "lp";
  p.rows = in.integer("rows", 1000, 0, kMax);
  p.cols = in.integer("cols", lp ? times(4, p.rows) : p.rows, 0, kMax);
  if (!in.has("cols")) check_size(in, "rows", "cols", p.cols);
  p.max_len = in.integer("max_len", p.cols, 0, p.cols);
  if (lp) {
    p.min_len = in.real("min_len", 2.0, 1.0, static_cast<double>(kMax));
    p.alpha = in.real("alpha", 1.5, 0.05, 100.0);
    // Every row holds at least min(max_len, floor(min_len)) entries: refuse what cannot fit.
    const auto least = std::min(p.max_len, static_cast<std::int64_t>(p.min_len));
    check_size(in, "min_len", "at least nnz", times(p.rows, least));
  } else {
    p.median = in.real("median", 8.0, 0.0, static_cast<double>(kMax));
    p.sigma = in.real("sigma", 1.0, 0.0, 20.0);
  }
  p.nnz_bound = -1;
}

void plan_blocksparse(const SpecReader& in, FamilyPlan& p) {
  p.block = in.integer("block", 4, 1, 4096);
  p.block_rows = in.integer("block_rows", 256, 0, kMax);
  p.block_cols = in.integer("block_cols", p.block_rows, 0, kMax);
  p.blocks_per_row = in.integer("blocks_per_row", 4, 0, kMax);
  p.align = in.boolean("align", true);
  p.fill = in.real("fill", 1.0, 0.0, 1.0);
  if (p.blocks_per_row > p.block_cols) {
    in.fail("blocks_per_row", "is " + std::to_string(p.blocks_per_row) +
                                  ", more than block_cols = " + std::to_string(p.block_cols));
  }
  p.rows = times(p.block_rows, p.block);
  check_size(in, "block_rows", "rows", p.rows);
  p.cols = times(p.block_cols, p.block);
  check_size(in, "block_cols", "cols", p.cols);
  p.nnz_bound = times(times(p.block_rows, p.blocks_per_row), p.block * p.block);
  check_size(in, "blocks_per_row", "up to nnz", p.nnz_bound);
}

void plan_kron(const SpecReader& in, FamilyPlan& p) {
  const std::string group = in.text("group", "HB");
  const std::string name = in.text("name", "west0067");
  try {
    (void)MatrixUri::parse("suitesparse-v1/" + group + "/x");
  } catch (const InvalidUri& e) {
    in.fail("group", std::string("does not name a SuiteSparse group (") + e.what() + ")");
  }
  try {
    p.base_uri = MatrixUri::parse("suitesparse-v1/" + group + "/" + name).str();
  } catch (const InvalidUri& e) {
    in.fail("name", std::string("does not name a SuiteSparse matrix (") + e.what() + ")");
  }
  p.n = in.integer("n", 64, 0, kMax);
  p.per_row = in.integer("per_row", 4, 0, kMax);
  if (p.per_row > p.n) {
    in.fail("per_row",
            "is " + std::to_string(p.per_row) + ", more than n = " + std::to_string(p.n));
  }
  check_size(in, "per_row", "random factor nnz", times(p.n, p.per_row));
  const std::string outer = in.text("outer", "real");
  if (outer != "real" && outer != "random") {
    in.fail("outer", "must be real or random, not '" + outer + "'");
  }
  p.real_outer = outer == "real";
  p.rows = p.cols = p.nnz_bound = -1;  // known once the base is loaded
}

// ---- builders

// road. Draws: every horizontal grid edge (y, x)-(y, x+1) in row-major order, kept with
// probability keep (bernoulli); then every vertical edge (y, x)-(y+1, x) likewise; then the
// long-range edges, each as two vertex draws (u, then v; u == v adds only the diagonal).
Pattern road(const FamilyPlan& p, Rng& rng) {
  const std::int64_t nx = p.nx, ny = p.ny, n = p.rows;
  std::vector<std::uint8_t> right(static_cast<std::size_t>(n), 0);  // edge v - v+1 kept
  std::vector<std::uint8_t> down(static_cast<std::size_t>(n), 0);   // edge v - v+nx kept
  for (std::int64_t y = 0; y < ny; ++y) {
    for (std::int64_t x = 0; x + 1 < nx; ++x) right[y * nx + x] = rng.bernoulli(p.keep) ? 1 : 0;
  }
  for (std::int64_t y = 0; y + 1 < ny; ++y) {
    for (std::int64_t x = 0; x < nx; ++x) down[y * nx + x] = rng.bernoulli(p.keep) ? 1 : 0;
  }
  const std::int64_t extra = round_half_up(p.long_range * static_cast<double>(n));
  std::vector<Index> ends(static_cast<std::size_t>(2 * extra));
  for (Index& v : ends) v = static_cast<Index>(rng.below(static_cast<std::uint64_t>(n)));

  // Row v: its grid neighbours and the diagonal in column order, then its long-range partners;
  // fold_rows sorts and folds each row.
  const auto up_kept = [&](std::int64_t v) { return v >= nx && down[v - nx] != 0; };
  const auto left_kept = [&](std::int64_t v) { return v % nx > 0 && right[v - 1] != 0; };
  std::vector<std::int64_t> start(static_cast<std::size_t>(n) + 1, 0);
  for (std::int64_t v = 0; v < n; ++v) {
    start[v + 1] = 1 + right[v] + down[v] + (up_kept(v) ? 1 : 0) + (left_kept(v) ? 1 : 0);
  }
  for (Index v : ends) ++start[v + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<Index> entries(static_cast<std::size_t>(start[n]));
  std::vector<std::int64_t> next(start.begin(), start.end() - 1);
  for (std::int64_t v = 0; v < n; ++v) {
    std::int64_t& w = next[v];
    if (up_kept(v)) entries[w++] = static_cast<Index>(v - nx);
    if (left_kept(v)) entries[w++] = static_cast<Index>(v - 1);
    entries[w++] = static_cast<Index>(v);
    if (right[v] != 0) entries[w++] = static_cast<Index>(v + 1);
    if (down[v] != 0) entries[w++] = static_cast<Index>(v + nx);
  }
  for (std::int64_t e = 0; e < extra; ++e) {
    const Index u = ends[2 * e], v = ends[2 * e + 1];
    entries[next[u]++] = v;
    entries[next[v]++] = u;
  }
  return fold_rows(static_cast<Index>(n), static_cast<Index>(n), start, std::move(entries));
}

// `count` distinct values of [0, n) in the order drawn (one below(n) each, a repeat drawn again):
// the positions of circuit's dense rows or columns, the longest first.
std::vector<Index> distinct_in_draw_order(Rng& rng, std::int64_t n, std::int64_t count) {
  std::vector<Index> out;
  std::vector<Index> seen;  // sorted, for the membership test
  while (static_cast<std::int64_t>(out.size()) < count) {
    const auto v = static_cast<Index>(rng.below(static_cast<std::uint64_t>(n)));
    const auto at = std::lower_bound(seen.begin(), seen.end(), v);
    if (at != seen.end() && *at == v) continue;
    seen.insert(at, v);
    out.push_back(v);
  }
  return out;
}

// circuit. Draws: row by row, its `near` offsets (between(-spread, spread)) then its `far` columns
// (below(n)); then the dense rows' positions and the dense columns' positions
// (distinct_in_draw_order); then each dense row's columns and each dense column's rows
// (sample_distinct, k = 0 first).
Pattern circuit(const FamilyPlan& p, Rng& rng) {
  const std::int64_t n = p.rows;
  std::vector<Index> pair_row, pair_col;
  pair_row.reserve(static_cast<std::size_t>(p.nnz_bound));
  pair_col.reserve(static_cast<std::size_t>(p.nnz_bound));
  const auto add = [&](std::int64_t i, std::int64_t j) {
    pair_row.push_back(static_cast<Index>(i));
    pair_col.push_back(static_cast<Index>(j));
  };
  for (std::int64_t i = 0; i < n; ++i) {
    add(i, i);
    for (std::int64_t k = 0; k < p.near; ++k) {
      const std::int64_t j = i + rng.between(-p.spread, p.spread);
      if (j >= 0 && j < n) add(i, j);
    }
    for (std::int64_t k = 0; k < p.far; ++k) {
      add(i, static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(n))));
    }
  }
  const std::vector<Index> dense_rows = distinct_in_draw_order(rng, n, p.dense_rows);
  const std::vector<Index> dense_cols = distinct_in_draw_order(rng, n, p.dense_cols);
  std::vector<Index> picked;
  for (std::int64_t k = 0; k < p.dense_rows; ++k) {
    sample_distinct(rng, n, dense_length(p, k), picked);
    for (Index c : picked) add(dense_rows[k], c);
  }
  for (std::int64_t k = 0; k < p.dense_cols; ++k) {
    sample_distinct(rng, n, dense_length(p, k), picked);
    for (Index r : picked) add(r, dense_cols[k]);
  }
  return pattern_from_pairs(static_cast<Index>(n), static_cast<Index>(n), std::move(pair_row),
                            std::move(pair_col));
}

// lp and lognormal. Draws: every row's length first (lp: one uniform01 each; lognormal: one
// standard_normal each), then every row's columns (sample_distinct). The total is checked against
// the 32-bit range while the lengths are drawn, before the entries are allocated.
Pattern rows_of_drawn_lengths(const FamilyPlan& p, const SpecReader& in, Rng& rng) {
  const bool lp = p.kind == "lp";
  const auto max_len = static_cast<double>(p.max_len);
  std::vector<Index> row_ptr(static_cast<std::size_t>(p.rows) + 1, 0);
  std::int64_t total = 0;
  for (std::int64_t i = 0; i < p.rows; ++i) {
    std::int64_t length = 0;
    if (lp) {
      // U^(-1/alpha) = exp(-ln(U) / alpha) with U = 1 - uniform01() in (0, 1].
      const double u = 1.0 - rng.uniform01();
      const double x = p.min_len * exact_exp(-exact_log(u) / p.alpha);
      length = x >= max_len ? p.max_len : static_cast<std::int64_t>(x);
    } else {
      const double x = p.median * exact_exp(p.sigma * standard_normal(rng));
      length = x >= max_len ? p.max_len : std::max<std::int64_t>(1, round_half_up(x));
      length = std::min(length, p.max_len);
    }
    total += length;
    if (total > kMax) check_size(in, lp ? "min_len" : "median", "nnz", total);
    row_ptr[i + 1] = static_cast<Index>(total);
  }
  Pattern m;
  m.rows = static_cast<Index>(p.rows);
  m.cols = static_cast<Index>(p.cols);
  m.col_idx.reserve(static_cast<std::size_t>(total));
  std::vector<Index> row;
  for (std::int64_t i = 0; i < p.rows; ++i) {
    sample_distinct(rng, p.cols, row_ptr[i + 1] - row_ptr[i], row);
    m.col_idx.insert(m.col_idx.end(), row.begin(), row.end());
  }
  m.row_ptr = std::move(row_ptr);
  return m;
}

// blocksparse. Draws, block row by block row: its block columns (sample_distinct, ascending), then
// for each of its blocks in that order: with align = 0 its shift (below(block) down, then
// below(block) right); with fill < 1 one bernoulli(fill) per cell, row-major, also for the cells
// that the matrix edge cuts off.
Pattern blocksparse(const FamilyPlan& p, Rng& rng) {
  const std::int64_t b = p.block, k = p.blocks_per_row;
  std::vector<Index> block_cols;
  std::vector<std::uint8_t> kept(static_cast<std::size_t>(k * b * b), 1);
  std::vector<std::int64_t> shift(static_cast<std::size_t>(2 * k), 0);
  std::vector<Index> pair_row, pair_col;  // align = 0
  Pattern m;
  m.rows = static_cast<Index>(p.rows);
  m.cols = static_cast<Index>(p.cols);
  if (p.align) m.col_idx.reserve(static_cast<std::size_t>(p.nnz_bound));
  for (std::int64_t br = 0; br < p.block_rows; ++br) {
    sample_distinct(rng, p.block_cols, k, block_cols);
    for (std::int64_t q = 0; q < k; ++q) {
      if (!p.align) {
        shift[2 * q] = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(b)));
        shift[2 * q + 1] = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(b)));
      }
      if (p.fill < 1.0) {
        for (std::int64_t c = 0; c < b * b; ++c) kept[q * b * b + c] = rng.bernoulli(p.fill);
      }
    }
    if (p.align) {  // rows br*b .. br*b+b-1 are complete: write them in CSR order
      for (std::int64_t i = 0; i < b; ++i) {
        for (std::int64_t q = 0; q < k; ++q) {
          for (std::int64_t j = 0; j < b; ++j) {
            if (kept[(q * b + i) * b + j] == 0) continue;
            m.col_idx.push_back(static_cast<Index>(block_cols[q] * b + j));
          }
        }
        m.end_row();
      }
      continue;
    }
    for (std::int64_t q = 0; q < k; ++q) {
      const std::int64_t row0 = br * b + shift[2 * q];
      const std::int64_t col0 = block_cols[q] * b + shift[2 * q + 1];
      for (std::int64_t i = 0; i < b && row0 + i < p.rows; ++i) {
        for (std::int64_t j = 0; j < b && col0 + j < p.cols; ++j) {
          if (kept[(q * b + i) * b + j] == 0) continue;
          pair_row.push_back(static_cast<Index>(row0 + i));
          pair_col.push_back(static_cast<Index>(col0 + j));
        }
      }
    }
  }
  if (p.align) return m;
  return pattern_from_pairs(m.rows, m.cols, std::move(pair_row), std::move(pair_col));
}

// kron. The base is loaded first and the sizes checked; then the random factor is drawn row by row
// (sample_distinct), and the product written directly in CSR order.
Pattern kron(const FamilyPlan& p, const SpecReader& in, Rng& rng, const MatrixLoader& loader) {
  if (!loader) {
    throw std::invalid_argument(
        in.uri() + ": kind 'kron' builds on " + p.base_uri +
        " and needs a matrix loader: load the URI through a MatrixStore whose data directory or "
        "index holds that matrix, or pass a MatrixLoader to generate()");
  }
  const std::shared_ptr<const SparseMatrix> base = loader(p.base_uri);
  if (!base) {
    throw std::invalid_argument(in.uri() + ": the loader returned no matrix for " + p.base_uri);
  }
  const SparseMatrix& a = *base;
  check_size(in, "n", "rows", times(a.rows(), p.n));
  check_size(in, "n", "cols", times(a.cols(), p.n));
  check_size(in, "n", "nnz", times(a.nnz(), times(p.n, p.per_row)));

  const std::int64_t n = p.n;
  std::vector<Index> rnd_ptr(static_cast<std::size_t>(n) + 1, 0);
  std::vector<Index> rnd_col;
  rnd_col.reserve(static_cast<std::size_t>(n * p.per_row));
  std::vector<Index> row;
  for (std::int64_t i = 0; i < n; ++i) {
    sample_distinct(rng, n, p.per_row, row);
    rnd_col.insert(rnd_col.end(), row.begin(), row.end());
    rnd_ptr[i + 1] = static_cast<Index>(rnd_col.size());
  }

  // Outer (mo x no) and inner (mi x ni): (i, j) x (k, l) goes to (i * mi + k, j * ni + l), so row
  // i * mi + k is outer row i's columns, each expanded by inner row k (already in column order).
  const std::span<const Index> r_ptr(rnd_ptr), r_col(rnd_col);
  const bool ro = p.real_outer;
  const std::span<const Index> outer_ptr = ro ? a.row_ptr() : r_ptr;
  const std::span<const Index> outer_col = ro ? a.col_idx() : r_col;
  const std::span<const Index> inner_ptr = ro ? r_ptr : a.row_ptr();
  const std::span<const Index> inner_col = ro ? r_col : a.col_idx();
  const std::int64_t mo = ro ? a.rows() : n, no = ro ? a.cols() : n;
  const std::int64_t mi = ro ? n : a.rows(), ni = ro ? n : a.cols();
  Pattern m;
  m.rows = static_cast<Index>(mo * mi);
  m.cols = static_cast<Index>(no * ni);
  m.row_ptr.reserve(static_cast<std::size_t>(m.rows) + 1);
  m.col_idx.reserve(static_cast<std::size_t>(a.nnz() * n * p.per_row));
  for (std::int64_t i = 0; i < mo; ++i) {
    for (std::int64_t k = 0; k < mi; ++k) {
      for (Index e = outer_ptr[i]; e < outer_ptr[i + 1]; ++e) {
        const std::int64_t offset = std::int64_t{outer_col[e]} * ni;
        for (Index f = inner_ptr[k]; f < inner_ptr[k + 1]; ++f) {
          m.col_idx.push_back(static_cast<Index>(offset + inner_col[f]));
        }
      }
      m.end_row();
    }
  }
  return m;
}

// Fisher-Yates over [0, n) with the unbiased draws of random.hpp, as rmat's permute.
std::vector<Index> shuffled(Rng& rng, Index n) {
  std::vector<Index> label(static_cast<std::size_t>(n));
  std::iota(label.begin(), label.end(), 0);
  for (std::int64_t i = std::int64_t{n} - 1; i > 0; --i) {
    std::swap(label[i], label[rng.below(static_cast<std::uint64_t>(i) + 1)]);
  }
  return label;
}

}  // namespace

const std::vector<GeneratorKind>& family_kinds() { return families_table(); }

bool is_family_kind(const std::string& kind) {
  const auto& kinds = families_table();
  return std::any_of(kinds.begin(), kinds.end(),
                     [&kind](const GeneratorKind& k) { return k.name == kind; });
}

FamilyPlan make_family_plan(const SpecReader& in, const std::string& kind) {
  FamilyPlan p;
  p.kind = kind;
  if (kind == "road") {
    plan_road(in, p);
  } else if (kind == "circuit") {
    plan_circuit(in, p);
  } else if (kind == "lp" || kind == "lognormal") {
    plan_lengths(in, p);
  } else if (kind == "blocksparse") {
    plan_blocksparse(in, p);
  } else {
    plan_kron(in, p);
  }
  return p;
}

Pattern build_family(const FamilyPlan& p, const SpecReader& in, Rng& rng,
                     const MatrixLoader& loader) {
  if (p.kind == "road") return road(p, rng);
  if (p.kind == "circuit") return circuit(p, rng);
  if (p.kind == "lp" || p.kind == "lognormal") return rows_of_drawn_lengths(p, in, rng);
  if (p.kind == "blocksparse") return blocksparse(p, rng);
  return kron(p, in, rng, loader);
}

void relabel(Pattern& m, std::uint64_t seed) {
  const Relabelling to = permute_relabelling(seed, m.rows, m.cols);
  std::vector<Index> from(static_cast<std::size_t>(m.rows));
  for (Index i = 0; i < m.rows; ++i) from[to.rows_to[i]] = i;
  std::vector<Index> row_ptr(static_cast<std::size_t>(m.rows) + 1, 0);
  std::vector<Index> col_idx(m.col_idx.size());
  std::int64_t write = 0;
  for (Index r = 0; r < m.rows; ++r) {
    const Index old = from[r];
    const std::int64_t first = write;
    for (Index e = m.row_ptr[old]; e < m.row_ptr[old + 1]; ++e) {
      col_idx[write++] = to.cols_to[m.col_idx[e]];
    }
    std::sort(col_idx.begin() + first, col_idx.begin() + write);
    row_ptr[r + 1] = static_cast<Index>(write);
  }
  m.row_ptr = std::move(row_ptr);
  m.col_idx = std::move(col_idx);
}

}  // namespace detail

Relabelling permute_relabelling(std::uint64_t seed, Index rows, Index cols) {
  Rng rng(seed, detail::kRelabelStream);
  Relabelling out;
  out.rows_to = detail::shuffled(rng, rows);
  out.cols_to = rows == cols ? out.rows_to : detail::shuffled(rng, cols);
  return out;
}

}  // namespace sparserl::datasets
