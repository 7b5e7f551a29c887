// The gen-v1 matrix generators of generators.hpp. A spec is first turned into a Plan: every key
// read, typed, range-checked and the matrix's size bounded, so that a bad URI fails before any
// allocation and validate() costs nothing. The pattern is then built in CSR order (directly, or
// through a counting sort for the random kinds), the modifiers rewrite it in one pass, and the
// values are drawn last from their own stream, so the number of draws a pattern needs never changes
// the values it gets.
#include "sparserl/datasets/generators.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <string_view>

#include "generator_internal.hpp"
#include "sparserl/datasets/random.hpp"

namespace sparserl::datasets {

namespace detail {

void sample_distinct(Rng& rng, std::int64_t n, std::int64_t k, std::vector<Index>& out) {
  out.clear();
  if (k <= 0) return;
  if (k * 4 >= n) {
    // Selection sampling (Knuth's Algorithm S): one draw per candidate, output already sorted.
    std::int64_t needed = k;
    for (std::int64_t t = 0; t < n && needed > 0; ++t) {
      if (static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(n - t))) < needed) {
        out.push_back(static_cast<Index>(t));
        --needed;
      }
    }
    return;
  }
  // Sparse: draw the missing count with replacement until k distinct values remain. By symmetry the
  // distinct values of an i.i.d. uniform sequence form a uniform k-subset.
  while (static_cast<std::int64_t>(out.size()) < k) {
    const std::int64_t missing = k - static_cast<std::int64_t>(out.size());
    for (std::int64_t i = 0; i < missing; ++i) {
      out.push_back(static_cast<Index>(rng.below(static_cast<std::uint64_t>(n))));
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
}

Pattern pattern_from_pairs(Index rows, Index cols, std::vector<Index> pair_row,
                           std::vector<Index> pair_col) {
  const auto pairs = static_cast<std::int64_t>(pair_row.size());
  std::vector<std::int64_t> start(static_cast<std::size_t>(rows) + 1, 0);
  for (Index r : pair_row) ++start[r + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<Index> sorted(static_cast<std::size_t>(pairs));
  {
    std::vector<std::int64_t> next(start.begin(), start.end() - 1);
    for (std::int64_t e = 0; e < pairs; ++e) sorted[next[pair_row[e]]++] = pair_col[e];
  }
  pair_row = {};
  pair_col = {};
  return fold_rows(rows, cols, start, std::move(sorted));
}

Pattern fold_rows(Index rows, Index cols, const std::vector<std::int64_t>& start,
                  std::vector<Index> entries) {
  Pattern m;
  m.rows = rows;
  m.cols = cols;
  m.row_ptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  std::int64_t write = 0;
  for (std::int64_t i = 0; i < rows; ++i) {
    const auto first = entries.begin() + start[i];
    const auto last = entries.begin() + start[i + 1];
    std::sort(first, last);
    const auto unique_end = std::unique(first, last);
    for (auto it = first; it != unique_end; ++it) entries[write++] = *it;
    m.row_ptr[i + 1] = static_cast<Index>(write);
  }
  entries.resize(static_cast<std::size_t>(write));
  entries.shrink_to_fit();
  m.col_idx = std::move(entries);
  return m;
}

}  // namespace detail

namespace {

using detail::check_size;
using detail::FamilyPlan;
using detail::kModifierStream;
using detail::kPatternStream;
using detail::kPermuteStream;
using detail::kValueStream;
using detail::Pattern;
using detail::sample_distinct;
using detail::SpecReader;
using detail::times;

const std::vector<GeneratorKind>& kinds_table() {
  static const std::vector<GeneratorKind> kinds = [] {
    std::vector<GeneratorKind> all = {
        {"stencil2d",
         "2D grid Laplacian pattern, row y*nx + x coupled to its grid neighbours",
         {{"nx", "64", "grid points along x"},
          {"ny", "", "grid points along y (default nx)"},
          {"points", "5", "stencil points: 5 or 9"}}},
        {"stencil3d",
         "3D grid Laplacian pattern, row (z*ny + y)*nx + x coupled to its grid neighbours",
         {{"nx", "16", "grid points along x"},
          {"ny", "", "grid points along y (default nx)"},
          {"nz", "", "grid points along z (default nx)"},
          {"points", "7", "stencil points: 7 or 27"}}},
        {"banded",
         "n x n band: the diagonal, and entries with |i - j| <= bandwidth kept with probability "
         "fill",
         {{"n", "1000", "rows and columns"},
          {"bandwidth", "4", "largest |i - j| of an entry"},
          {"fill", "1", "probability that an off-diagonal entry in the band is kept, in [0, 1]"}}},
        {"uniform",
         "uniformly random distinct columns per row",
         {{"rows", "1000", "rows"},
          {"cols", "", "columns (default rows)"},
          {"nnz_per_row", "8", "entries in every row (at most cols)"},
          {"nnz", "", "total entries instead of nnz_per_row; rows drawn uniformly"}}},
        {"rmat",
         "R-MAT power-law graph, 2^scale vertices, duplicate edges folded",
         {{"scale", "10", "log2 of rows and columns, in [0, 30]"},
          {"edge_factor", "16", "edges per vertex before folding duplicates"},
          {"a", "0.57", "probability of the top-left quadrant"},
          {"b", "0.19", "probability of the top-right quadrant"},
          {"c", "0.19", "probability of the bottom-left quadrant"},
          {"d", "", "probability of the bottom-right quadrant (default 1 - a - b - c)"},
          {"permute", "0", "1: relabel vertices by a seeded random permutation"}}},
        {"blockdiag",
         "dense square blocks on the diagonal",
         {{"blocks", "16", "number of blocks"},
          {"block_size", "8", "rows and columns of a block"}}},
        {"arrow",
         "dense first rows and first columns plus the diagonal",
         {{"n", "1000", "rows and columns"}, {"width", "1", "dense rows and columns, in [0, n]"}}},
        {"diagonal", "n x n diagonal", {{"n", "1000", "rows and columns"}}},
        {"column", "n x 1, every row holding its entry", {{"n", "1000", "rows"}}},
    };
    const auto& families = detail::family_kinds();
    all.insert(all.end(), families.begin(), families.end());
    return all;
  }();
  return kinds;
}

const std::vector<GeneratorKey>& common_table() {
  static const std::vector<GeneratorKey> keys = {
      {"seed", "0", "unsigned 64-bit seed of the pattern, the modifiers and the values"},
      {"huge_row", "0",
       "LENGTH > 0: one seeded row replaced by min(LENGTH, cols) evenly spread entries"},
      {"empty_rows", "0",
       "FRACTION in [0, 1]: round(FRACTION * rows) seeded rows (not the huge row) emptied"},
      {"permute", "0",
       "1: rows and columns relabelled by seeded permutations after the other modifiers (P A P^T "
       "when square); rmat's own permute key keeps its meaning"},
  };
  return keys;
}

// Every key of a spec, read once, typed and checked.
struct Plan {
  std::string kind;
  std::int64_t rows = 0, cols = 0;
  std::int64_t nx = 0, ny = 0, nz = 0, points = 0;  // stencils
  std::int64_t bandwidth = 0;                       // banded
  double fill = 1.0;
  std::int64_t nnz_per_row = 0, nnz = 0;  // uniform
  bool by_total = false;
  std::int64_t scale = 0, edge_factor = 0;  // rmat
  double a = 0, b = 0, c = 0, d = 0;
  bool permute = false;
  std::int64_t blocks = 0, block_size = 0;  // blockdiag
  std::int64_t width = 0;                   // arrow
  bool is_family = false;                   // a kind of generator_families.cpp
  FamilyPlan family;
  std::uint64_t seed = 0;
  std::int64_t huge_row = 0;
  double empty_rows = 0.0;
  bool relabel = false;  // the common permute key (every kind but rmat)
};

// Refuses an unknown kind, and a key that is neither the kind's nor a common one.
void check_kind_and_keys(const GeneratorSpec& spec, const SpecReader& in) {
  const GeneratorKind* kind = nullptr;
  for (const GeneratorKind& k : kinds_table()) {
    if (k.name == spec.kind) kind = &k;
  }
  if (kind == nullptr) {
    std::string known;
    for (const GeneratorKind& k : kinds_table()) known += (known.empty() ? "" : ", ") + k.name;
    throw std::invalid_argument(in.uri() + ": unknown generator kind '" + spec.kind +
                                "' (known: " + known + ")");
  }
  for (const auto& [key, value] : spec.params) {
    bool known = false;
    for (const GeneratorKey& k : kind->keys) known = known || k.name == key;
    for (const GeneratorKey& k : common_table()) known = known || k.name == key;
    if (!known) {
      std::string names;
      for (const GeneratorKey& k : kind->keys) names += k.name + ", ";
      for (const GeneratorKey& k : common_table()) names += k.name + ", ";
      names.resize(names.size() - 2);
      in.fail(key, "is not a key of kind '" + spec.kind + "' (keys: " + names + ")");
    }
  }
}

Plan make_plan(const GeneratorSpec& spec) {
  SpecReader in(spec);
  check_kind_and_keys(spec, in);

  Plan p;
  p.kind = spec.kind;
  constexpr std::int64_t kMax = kMaxIndex;
  std::int64_t nnz_bound = 0;
  std::string nnz_key;  // the key named if the bound is too large
  if (p.kind == "stencil2d") {
    p.nx = in.integer("nx", 64, 0, kMax);
    p.ny = in.integer("ny", p.nx, 0, kMax);
    p.points = in.integer("points", 5, 0, 27);
    if (p.points != 5 && p.points != 9)
      in.fail("points", "must be 5 or 9, not " + std::to_string(p.points));
    p.rows = p.cols = times(p.nx, p.ny);
    check_size(in, "ny", "rows", p.rows);
    nnz_bound = times(p.rows, p.points);
    nnz_key = "points";
  } else if (p.kind == "stencil3d") {
    p.nx = in.integer("nx", 16, 0, kMax);
    p.ny = in.integer("ny", p.nx, 0, kMax);
    p.nz = in.integer("nz", p.nx, 0, kMax);
    p.points = in.integer("points", 7, 0, 27);
    if (p.points != 7 && p.points != 27) {
      in.fail("points", "must be 7 or 27, not " + std::to_string(p.points));
    }
    p.rows = p.cols = times(times(p.nx, p.ny), p.nz);
    check_size(in, "nz", "rows", p.rows);
    nnz_bound = times(p.rows, p.points);
    nnz_key = "points";
  } else if (p.kind == "banded") {
    p.rows = p.cols = in.integer("n", 1000, 0, kMax);
    p.bandwidth = in.integer("bandwidth", 4, 0, kMax);
    p.fill = in.real("fill", 1.0, 0.0, 1.0);
    nnz_bound = times(p.rows, 2 * std::min(p.bandwidth, p.rows) + 1);
    nnz_key = "bandwidth";
  } else if (p.kind == "uniform") {
    p.rows = in.integer("rows", 1000, 0, kMax);
    p.cols = in.integer("cols", p.rows, 0, kMax);
    if (in.has("nnz") && in.has("nnz_per_row")) {
      in.fail("nnz", "excludes nnz_per_row: give one of them");
    }
    p.by_total = in.has("nnz");
    if (p.by_total) {
      p.nnz = in.integer("nnz", 0, 0, kMax);
      if (p.nnz > times(p.rows, p.cols)) {
        in.fail("nnz", "is " + std::to_string(p.nnz) +
                           ", more than rows * cols = " + std::to_string(times(p.rows, p.cols)));
      }
      nnz_bound = p.nnz;
    } else {
      p.nnz_per_row = in.integer("nnz_per_row", 8, 0, kMax);
      if (p.rows > 0 && p.nnz_per_row > p.cols) {
        in.fail("nnz_per_row", "is " + std::to_string(p.nnz_per_row) +
                                   ", more than cols = " + std::to_string(p.cols));
      }
      nnz_bound = times(p.rows, p.nnz_per_row);
      nnz_key = "nnz_per_row";
    }
  } else if (p.kind == "rmat") {
    p.scale = in.integer("scale", 10, 0, 30);
    p.edge_factor = in.integer("edge_factor", 16, 0, kMax);
    p.a = in.real("a", 0.57, 0.0, 1.0);
    p.b = in.real("b", 0.19, 0.0, 1.0);
    p.c = in.real("c", 0.19, 0.0, 1.0);
    const double rest = 1.0 - p.a - p.b - p.c;
    if (in.has("d")) {
      p.d = in.real("d", 0.0, 0.0, 1.0);
      if (std::abs(p.a + p.b + p.c + p.d - 1.0) > 1e-9) {
        in.fail("d",
                "makes a + b + c + d = " + std::to_string(p.a + p.b + p.c + p.d) + ", expected 1");
      }
    } else {
      if (rest < -1e-9) {
        in.fail(in.has("c")   ? "c"
                : in.has("b") ? "b"
                              : "a",
                "makes a + b + c = " + std::to_string(p.a + p.b + p.c) + ", above 1");
      }
      p.d = std::max(rest, 0.0);
    }
    p.permute = in.boolean("permute", false);
    p.rows = p.cols = std::int64_t{1} << p.scale;
    check_size(in, "scale", "rows", p.rows);
    nnz_bound = times(p.rows, p.edge_factor);
    nnz_key = "edge_factor";
  } else if (p.kind == "blockdiag") {
    p.blocks = in.integer("blocks", 16, 0, kMax);
    p.block_size = in.integer("block_size", 8, 0, kMax);
    p.rows = p.cols = times(p.blocks, p.block_size);
    check_size(in, "block_size", "rows", p.rows);
    nnz_bound = times(p.rows, p.block_size);
    nnz_key = "block_size";
  } else if (p.kind == "arrow") {
    p.rows = p.cols = in.integer("n", 1000, 0, kMax);
    p.width = in.integer("width", 1, 0, kMax);
    if (p.width > p.rows) {
      in.fail("width",
              "is " + std::to_string(p.width) + ", more than n = " + std::to_string(p.rows));
    }
    nnz_bound = times(p.width, p.rows) + times(p.rows - p.width, p.width + 1);
    nnz_key = "width";
  } else if (p.kind == "diagonal") {
    p.rows = p.cols = in.integer("n", 1000, 0, kMax);
    nnz_bound = p.rows;
  } else if (detail::is_family_kind(p.kind)) {  // sizes checked by the family's plan
    p.is_family = true;
    p.family = detail::make_family_plan(in, p.kind);
    p.rows = p.family.rows;
    p.cols = p.family.cols;
    nnz_bound = p.family.nnz_bound;
  } else {  // column
    p.rows = in.integer("n", 1000, 0, kMax);
    p.cols = 1;
    nnz_bound = p.rows;
  }
  if (!nnz_key.empty()) check_size(in, nnz_key, "up to nnz", nnz_bound);

  p.seed = in.unsigned64("seed", 0);
  p.huge_row = in.integer("huge_row", 0, 0, kMax);
  p.empty_rows = in.real("empty_rows", 0.0, 0.0, 1.0);
  if (p.kind != "rmat") p.relabel = in.boolean("permute", false);
  // A bound of -1 is not known before generation (lp, lognormal, kron): apply_modifiers checks.
  if (p.huge_row > 0 && p.rows > 0 && nnz_bound >= 0) {
    check_size(in, "huge_row", "up to nnz", nnz_bound + std::min(p.huge_row, p.cols));
  }
  return p;
}

Pattern stencil2d(const Plan& p) {
  Pattern m;
  m.rows = m.cols = static_cast<Index>(p.rows);
  m.row_ptr.reserve(static_cast<std::size_t>(p.rows) + 1);
  m.col_idx.reserve(static_cast<std::size_t>(p.rows * p.points));
  const Index nx = static_cast<Index>(p.nx), ny = static_cast<Index>(p.ny);
  for (Index y = 0; y < ny; ++y) {
    for (Index x = 0; x < nx; ++x) {
      // Neighbours in (dy, dx) lexicographic order are in increasing column order.
      for (Index dy = -1; dy <= 1; ++dy) {
        for (Index dx = -1; dx <= 1; ++dx) {
          if (p.points == 5 && dx != 0 && dy != 0) continue;
          const Index yy = y + dy, xx = x + dx;
          if (yy < 0 || yy >= ny || xx < 0 || xx >= nx) continue;
          m.col_idx.push_back(yy * nx + xx);
        }
      }
      m.end_row();
    }
  }
  return m;
}

Pattern stencil3d(const Plan& p) {
  Pattern m;
  m.rows = m.cols = static_cast<Index>(p.rows);
  m.row_ptr.reserve(static_cast<std::size_t>(p.rows) + 1);
  m.col_idx.reserve(static_cast<std::size_t>(p.rows * p.points));
  const Index nx = static_cast<Index>(p.nx), ny = static_cast<Index>(p.ny);
  const Index nz = static_cast<Index>(p.nz);
  for (Index z = 0; z < nz; ++z) {
    for (Index y = 0; y < ny; ++y) {
      for (Index x = 0; x < nx; ++x) {
        for (Index dz = -1; dz <= 1; ++dz) {
          for (Index dy = -1; dy <= 1; ++dy) {
            for (Index dx = -1; dx <= 1; ++dx) {
              // 7 points: the centre and the six face neighbours (one offset nonzero).
              if (p.points == 7 && (dx != 0) + (dy != 0) + (dz != 0) > 1) continue;
              const Index zz = z + dz, yy = y + dy, xx = x + dx;
              if (zz < 0 || zz >= nz || yy < 0 || yy >= ny || xx < 0 || xx >= nx) continue;
              m.col_idx.push_back((zz * ny + yy) * nx + xx);
            }
          }
        }
        m.end_row();
      }
    }
  }
  return m;
}

Pattern banded(const Plan& p, Rng& rng) {
  Pattern m;
  m.rows = m.cols = static_cast<Index>(p.rows);
  m.row_ptr.reserve(static_cast<std::size_t>(p.rows) + 1);
  const bool full = p.fill >= 1.0;
  if (full)
    m.col_idx.reserve(static_cast<std::size_t>(p.rows * (2 * std::min(p.bandwidth, p.rows) + 1)));
  for (std::int64_t i = 0; i < p.rows; ++i) {
    const std::int64_t lo = std::max<std::int64_t>(0, i - p.bandwidth);
    const std::int64_t hi = std::min<std::int64_t>(p.rows - 1, i + p.bandwidth);
    for (std::int64_t j = lo; j <= hi; ++j) {
      if (j == i || full || rng.bernoulli(p.fill)) m.col_idx.push_back(static_cast<Index>(j));
    }
    m.end_row();
  }
  return m;
}

Pattern uniform(const Plan& p, Rng& rng) {
  Pattern m;
  m.rows = static_cast<Index>(p.rows);
  m.cols = static_cast<Index>(p.cols);
  std::vector<Index> counts(static_cast<std::size_t>(p.rows), static_cast<Index>(p.nnz_per_row));
  std::int64_t total = p.rows * p.nnz_per_row;
  if (p.by_total) {
    std::fill(counts.begin(), counts.end(), 0);
    for (std::int64_t e = 0; e < p.nnz; ++e) {
      std::uint64_t r = 0;
      do {
        r = rng.below(static_cast<std::uint64_t>(p.rows));
      } while (counts[r] == p.cols);
      ++counts[r];
    }
    total = p.nnz;
  }
  m.row_ptr.reserve(static_cast<std::size_t>(p.rows) + 1);
  m.col_idx.reserve(static_cast<std::size_t>(total));
  std::vector<Index> row;
  for (std::int64_t i = 0; i < p.rows; ++i) {
    sample_distinct(rng, p.cols, counts[i], row);
    m.col_idx.insert(m.col_idx.end(), row.begin(), row.end());
    m.end_row();
  }
  return m;
}

// Probability as a threshold on a uniform 32-bit word: integer compares give the same quadrant
// choices on every platform, and two levels share one 64-bit draw.
std::uint64_t threshold32(double probability) {
  if (probability >= 1.0) return std::uint64_t{1} << 32;
  if (probability <= 0.0) return 0;
  return static_cast<std::uint64_t>(probability * 4294967296.0);
}

Pattern rmat(const Plan& p, Rng& rng) {
  const std::int64_t n = p.rows;
  const std::int64_t edges = n * p.edge_factor;
  const std::uint64_t t_a = threshold32(p.a);
  const std::uint64_t t_ab = threshold32(p.a + p.b);
  const std::uint64_t t_abc = threshold32(p.a + p.b + p.c);
  std::vector<Index> edge_row(static_cast<std::size_t>(edges));
  std::vector<Index> edge_col(static_cast<std::size_t>(edges));
  for (std::int64_t e = 0; e < edges; ++e) {
    std::uint64_t row = 0, col = 0, word = 0;
    for (std::int64_t level = 0; level < p.scale; ++level) {
      if (level % 2 == 0) word = rng.next();
      const std::uint64_t u = (level % 2 == 0) ? (word & 0xffffffffULL) : (word >> 32);
      row <<= 1;
      col <<= 1;
      if (u >= t_abc) {
        row |= 1;
        col |= 1;
      } else if (u >= t_ab) {
        row |= 1;
      } else if (u >= t_a) {
        col |= 1;
      }
    }
    edge_row[e] = static_cast<Index>(row);
    edge_col[e] = static_cast<Index>(col);
  }
  if (p.permute) {
    // Fisher-Yates with the unbiased integer draws of random.hpp.
    Rng perm_rng(p.seed, kPermuteStream);
    std::vector<Index> label(static_cast<std::size_t>(n));
    std::iota(label.begin(), label.end(), 0);
    for (std::int64_t i = n - 1; i > 0; --i) {
      std::swap(label[i], label[perm_rng.below(static_cast<std::uint64_t>(i) + 1)]);
    }
    for (std::int64_t e = 0; e < edges; ++e) {
      edge_row[e] = label[edge_row[e]];
      edge_col[e] = label[edge_col[e]];
    }
  }

  // Counting sort by row, then each row sorted and its duplicates folded.
  return detail::pattern_from_pairs(static_cast<Index>(n), static_cast<Index>(n),
                                    std::move(edge_row), std::move(edge_col));
}

Pattern blockdiag(const Plan& p) {
  Pattern m;
  m.rows = m.cols = static_cast<Index>(p.rows);
  m.row_ptr.reserve(static_cast<std::size_t>(p.rows) + 1);
  m.col_idx.reserve(static_cast<std::size_t>(p.rows * p.block_size));
  for (std::int64_t block = 0; block < p.blocks; ++block) {
    const std::int64_t first = block * p.block_size;
    for (std::int64_t r = 0; r < p.block_size; ++r) {
      for (std::int64_t c = 0; c < p.block_size; ++c)
        m.col_idx.push_back(static_cast<Index>(first + c));
      m.end_row();
    }
  }
  return m;
}

Pattern arrow(const Plan& p) {
  Pattern m;
  m.rows = m.cols = static_cast<Index>(p.rows);
  m.row_ptr.reserve(static_cast<std::size_t>(p.rows) + 1);
  for (std::int64_t i = 0; i < p.rows; ++i) {
    const std::int64_t dense_to = i < p.width ? p.rows : p.width;
    for (std::int64_t j = 0; j < dense_to; ++j) m.col_idx.push_back(static_cast<Index>(j));
    if (i >= p.width) m.col_idx.push_back(static_cast<Index>(i));
    m.end_row();
  }
  return m;
}

Pattern diagonal_or_column(const Plan& p) {
  Pattern m;
  m.rows = static_cast<Index>(p.rows);
  m.cols = static_cast<Index>(p.cols);
  m.row_ptr.resize(static_cast<std::size_t>(p.rows) + 1);
  std::iota(m.row_ptr.begin(), m.row_ptr.end(), 0);
  m.col_idx.resize(static_cast<std::size_t>(p.rows));
  if (p.kind == "diagonal") std::iota(m.col_idx.begin(), m.col_idx.end(), 0);
  return m;
}

// huge_row then empty_rows, rewritten in one pass over the pattern.
void apply_modifiers(const Plan& p, const SpecReader& in, Pattern& m) {
  if ((p.huge_row == 0 && p.empty_rows == 0.0) || m.rows == 0) return;
  Rng rng(p.seed, kModifierStream);
  std::int64_t huge = -1;
  std::vector<Index> huge_cols;
  if (p.huge_row > 0) {
    huge = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(m.rows)));
    const std::int64_t length = std::min<std::int64_t>(p.huge_row, m.cols);
    huge_cols.resize(static_cast<std::size_t>(length));
    for (std::int64_t k = 0; k < length; ++k)
      huge_cols[k] = static_cast<Index>(k * m.cols / length);
  }
  std::vector<std::uint8_t> emptied(static_cast<std::size_t>(m.rows), 0);
  if (p.empty_rows > 0.0) {
    const std::int64_t candidates = m.rows - (huge >= 0 ? 1 : 0);
    const std::int64_t count = std::min<std::int64_t>(
        candidates, static_cast<std::int64_t>(std::floor(p.empty_rows * m.rows + 0.5)));
    std::vector<Index> chosen;
    sample_distinct(rng, candidates, count, chosen);
    for (Index r : chosen) emptied[(huge >= 0 && r >= huge) ? r + 1 : r] = 1;
  }

  std::int64_t nnz = 0;
  for (Index i = 0; i < m.rows; ++i) {
    if (i == huge) {
      nnz += static_cast<std::int64_t>(huge_cols.size());
    } else if (emptied[i] == 0) {
      nnz += m.row_ptr[i + 1] - m.row_ptr[i];
    }
  }
  check_size(in, "huge_row", "nnz", nnz);
  std::vector<Index> row_ptr(static_cast<std::size_t>(m.rows) + 1, 0);
  std::vector<Index> col_idx;
  col_idx.reserve(static_cast<std::size_t>(nnz));
  for (Index i = 0; i < m.rows; ++i) {
    if (i == huge) {
      col_idx.insert(col_idx.end(), huge_cols.begin(), huge_cols.end());
    } else if (emptied[i] == 0) {
      col_idx.insert(col_idx.end(), m.col_idx.begin() + m.row_ptr[i],
                     m.col_idx.begin() + m.row_ptr[i + 1]);
    }
    row_ptr[i + 1] = static_cast<Index>(col_idx.size());
  }
  m.row_ptr = std::move(row_ptr);
  m.col_idx = std::move(col_idx);
}

}  // namespace

GeneratorSpec GeneratorSpec::from_uri(const MatrixUri& uri) {
  GeneratorSpec spec{uri.kind, uri.params};
  if (uri.scheme != MatrixUri::Scheme::generated) {
    const std::string text = uri.scheme == MatrixUri::Scheme::file
                                 ? "file:" + uri.path
                                 : "suitesparse-" + uri.version + "/" + uri.group + "/" + uri.name;
    throw std::invalid_argument(text + ": not a generated-matrix URI (gen-v1/KIND?key=value&...)");
  }
  if (!uri.version.empty() && uri.version != "v1") {
    throw std::invalid_argument("gen-" + uri.version + "/" + uri.kind +
                                ": unsupported generator version '" + uri.version +
                                "' (known: v1)");
  }
  validate(spec);
  return spec;
}

std::string GeneratorSpec::uri() const {
  std::string out = "gen-v1/" + kind;
  char sep = '?';
  for (const auto& [key, value] : params) {
    out += sep + key + "=" + value;
    sep = '&';
  }
  return out;
}

void validate(const GeneratorSpec& spec) { (void)make_plan(spec); }

SparseMatrix generate(const GeneratorSpec& spec, const MatrixLoader& loader) {
  const Plan p = make_plan(spec);
  const SpecReader in(spec);
  Rng rng(p.seed, kPatternStream);
  Pattern m;
  if (p.kind == "stencil2d") {
    m = stencil2d(p);
  } else if (p.kind == "stencil3d") {
    m = stencil3d(p);
  } else if (p.kind == "banded") {
    m = banded(p, rng);
  } else if (p.kind == "uniform") {
    m = uniform(p, rng);
  } else if (p.kind == "rmat") {
    m = rmat(p, rng);
  } else if (p.kind == "blockdiag") {
    m = blockdiag(p);
  } else if (p.kind == "arrow") {
    m = arrow(p);
  } else if (p.is_family) {
    m = detail::build_family(p.family, in, rng, loader);
  } else {
    m = diagonal_or_column(p);
  }
  apply_modifiers(p, in, m);
  if (p.relabel) detail::relabel(m, p.seed);

  std::vector<double> values(m.col_idx.size());
  Rng value_rng(p.seed, kValueStream);
  for (double& v : values) v = value_rng.uniform_pm1();
  return SparseMatrix::from_csr(m.rows, m.cols, std::move(m.row_ptr), std::move(m.col_idx),
                                std::move(values));
}

SparseMatrix generate(const MatrixUri& uri, const MatrixLoader& loader) {
  return generate(GeneratorSpec::from_uri(uri), loader);
}

std::vector<std::string> loaded_matrices(const GeneratorSpec& spec) {
  const Plan p = make_plan(spec);
  if (p.is_family && !p.family.base_uri.empty()) return {p.family.base_uri};
  return {};
}

const std::vector<GeneratorKind>& generator_kinds() { return kinds_table(); }
const std::vector<GeneratorKey>& common_generator_keys() { return common_table(); }

}  // namespace sparserl::datasets
