// Conversions between the canonical CSR SparseMatrix and the kernel ABI's storage formats (COO,
// ELL, SELL-C-sigma, BSR; layouts in formats.hpp), and the fp64 reference products for each. The
// evaluator runs the conversions on matrices of tens of millions of nonzeros, so every conversion
// is a few linear passes: sizes are counted first (and checked against the padding limit before
// anything large is allocated), then arrays are filled in place. Conversions back to CSR validate
// the arrays they are given, because a hand-built or corrupted format must fail here with a
// message, not in a kernel.
#include "sparserl/datasets/formats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace sparserl::datasets {
namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

// The padded size of a format must stay below the caller's limit and, whatever the limit, inside
// the ABI's 32-bit `int` offsets (a kernel computes k*M + i or b*R*C + ... in int).
void check_padded_size(const char* format, std::int64_t stored, std::int64_t max_stored,
                       const std::string& shape) {
  const std::int64_t limit = std::min(max_stored, kMaxIndex);
  if (stored > limit) {
    throw FormatTooLarge(std::string(format) + " would store " + str(stored) +
                         " entries with padding (" + shape + "), above the limit of " + str(limit) +
                         " stored entries");
  }
}

void require_size(const char* what, std::size_t got, std::int64_t expected,
                  const std::string& why) {
  if (static_cast<std::int64_t>(got) != expected) {
    throw std::invalid_argument(std::string(what) + " has " + str(static_cast<std::int64_t>(got)) +
                                " entries, expected " + why + " = " + str(expected));
  }
}

// Where one stored row of a padded format (ELL, SELL) lies: its `width` slots are at start,
// start + stride, ...; a padding slot has column -1. csr_row is the row it came from.
struct PaddedRow {
  Index csr_row;
  std::int64_t start;
  std::int64_t stride;
  std::int64_t width;
};

// Back to CSR from a validated padded format, two linear passes: row lengths without the padding,
// then the entries. row_of(p) describes stored row p (0 <= p < m.rows).
template <class Padded, class RowOf>
SparseMatrix csr_from_padded(const Padded& m, const RowOf& row_of) {
  std::vector<Index> row_ptr(static_cast<std::size_t>(m.rows) + 1, 0);
  for (std::int64_t p = 0; p < m.rows; ++p) {
    const PaddedRow r = row_of(p);
    Index length = 0;
    for (std::int64_t k = 0, at = r.start; k < r.width; ++k, at += r.stride) {
      if (m.col_idx[at] >= 0) ++length;
    }
    row_ptr[r.csr_row + 1] = length;
  }
  std::partial_sum(row_ptr.begin(), row_ptr.end(), row_ptr.begin());
  std::vector<Index> col_idx(static_cast<std::size_t>(row_ptr.back()));
  std::vector<double> values(col_idx.size());
  for (std::int64_t p = 0; p < m.rows; ++p) {
    const PaddedRow r = row_of(p);
    Index out = row_ptr[r.csr_row];
    for (std::int64_t k = 0, at = r.start; k < r.width; ++k, at += r.stride) {
      if (m.col_idx[at] < 0) continue;
      col_idx[out] = m.col_idx[at];
      values[out++] = m.val[at];
    }
  }
  return SparseMatrix::from_csr(m.rows, m.cols, std::move(row_ptr), std::move(col_idx),
                                std::move(values));
}

// The inverse of csr_from_padded: stored row p of m (0 <= p < m.rows) receives the entries of CSR
// row row_of(p).csr_row from its start on; every other slot of the `stored` is padding.
template <class Padded, class RowOf>
void fill_padded(const SparseMatrix& a, std::int64_t stored, Padded& m, const RowOf& row_of) {
  const auto row_ptr = a.row_ptr();
  const auto col_idx = a.col_idx();
  const auto values = a.values();
  m.col_idx.assign(static_cast<std::size_t>(stored), -1);
  m.val.assign(static_cast<std::size_t>(stored), 0.0);
  for (std::int64_t p = 0; p < m.rows; ++p) {
    const PaddedRow r = row_of(p);
    std::int64_t at = r.start;
    for (Index q = row_ptr[r.csr_row]; q < row_ptr[r.csr_row + 1]; ++q, at += r.stride) {
      m.col_idx[at] = col_idx[q];
      m.val[at] = values[q];
    }
  }
}

// Where ELL's row i lies: column-major, slot k of the row at k * rows + i.
PaddedRow ell_row(const EllMatrix& m, std::int64_t i) {
  return PaddedRow{static_cast<Index>(i), i, m.rows, m.width};
}

// Where SELL's stored row p lies: in slice p / C, column-major with stride C; it holds the CSR row
// row_perm[p].
PaddedRow sell_row(const SellMatrix& m, std::int64_t p) {
  const std::int64_t c = m.slice_height;
  const std::int64_t s = p / c;
  return PaddedRow{m.row_perm[p], m.slice_ptr[s] + (p - s * c), c,
                   (std::int64_t{m.slice_ptr[s + 1]} - m.slice_ptr[s]) / c};
}

void require_column(const char* format, Index col, Index cols, std::int64_t at) {
  if (col < 0 || col >= cols) {
    throw std::invalid_argument(std::string(format) + ": column index " + str(col) + " at " +
                                str(at) + " lies outside [0, " + str(cols) + ")");
  }
}

void check_vectors(const char* op, std::int64_t rows, std::int64_t cols, std::int64_t k,
                   std::size_t x_size, std::size_t y_size) {
  if (k < 1) {
    throw std::invalid_argument(std::string(op) + ": k is " + str(k) + ", expected k >= 1");
  }
  const std::string suffix = k == 1 ? "" : " * k";
  require_size((std::string(op) + ": x").c_str(), x_size, cols * k, "cols" + suffix);
  require_size((std::string(op) + ": y").c_str(), y_size, rows * k, "rows" + suffix);
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Rounded-up sigma as stored in SellMatrix::sigma (see formats.hpp).
Index effective_sigma(Index slice_height, Index sigma) {
  if (sigma <= 1) return sigma;
  const std::int64_t rounded = ceil_div(sigma, slice_height) * slice_height;
  if (rounded > kMaxIndex) {
    throw std::invalid_argument("SELL: sigma " + str(sigma) + " rounded up to a multiple of C = " +
                                str(slice_height) + " exceeds the 32-bit index range");
  }
  return static_cast<Index>(rounded);
}

// The consistency of a SELL matrix's arrays, checked by to_csr and the reference products.
void check_sell(const SellMatrix& m) {
  if (m.slice_height < 1) {
    throw std::invalid_argument("SELL: slice_height is " + str(m.slice_height) + ", expected >= 1");
  }
  const std::int64_t slices = ceil_div(m.rows, m.slice_height);
  require_size("SELL slice_ptr", m.slice_ptr.size(), slices + 1, "ceil(rows / C) + 1");
  require_size("SELL row_perm", m.row_perm.size(), m.rows, "rows");
  if (m.slice_ptr.front() != 0) throw std::invalid_argument("SELL slice_ptr[0] is not 0");
  for (std::int64_t s = 0; s < slices; ++s) {
    const std::int64_t span = std::int64_t{m.slice_ptr[s + 1]} - m.slice_ptr[s];
    if (span < 0 || span % m.slice_height != 0) {
      throw std::invalid_argument(
          "SELL slice " + str(s) + " spans " + str(span) +
          " entries, expected a non-negative multiple of C = " + str(m.slice_height));
    }
  }
  require_size("SELL col_idx", m.col_idx.size(), m.slice_ptr.back(), "slice_ptr[num_slices]");
  require_size("SELL val", m.val.size(), m.slice_ptr.back(), "slice_ptr[num_slices]");
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(m.rows), 0);
  for (std::size_t p = 0; p < m.row_perm.size(); ++p) {
    const Index r = m.row_perm[p];
    if (r < 0 || r >= m.rows || seen[r] != 0) {
      throw std::invalid_argument("SELL row_perm is not a permutation: position " +
                                  str(static_cast<std::int64_t>(p)) + " holds row " + str(r));
    }
    seen[r] = 1;
  }
}

void check_ell(const EllMatrix& m) {
  if (m.width < 0) throw std::invalid_argument("ELL: width is " + str(m.width) + ", expected >= 0");
  const std::int64_t stored = std::int64_t{m.width} * m.rows;
  require_size("ELL col_idx", m.col_idx.size(), stored, "width * rows");
  require_size("ELL val", m.val.size(), stored, "width * rows");
}

void check_bsr(const BsrMatrix& m) {
  if (m.block_rows < 1 || m.block_cols < 1) {
    throw std::invalid_argument("BSR: block dimensions are " + str(m.block_rows) + " x " +
                                str(m.block_cols) + ", expected both >= 1");
  }
  const std::int64_t mb = ceil_div(m.rows, m.block_rows);
  const std::int64_t nb = ceil_div(m.cols, m.block_cols);
  require_size("BSR block_row_ptr", m.block_row_ptr.size(), mb + 1, "ceil(rows / R) + 1");
  if (m.block_row_ptr.front() != 0) throw std::invalid_argument("BSR block_row_ptr[0] is not 0");
  for (std::int64_t b = 0; b < mb; ++b) {
    if (m.block_row_ptr[b + 1] < m.block_row_ptr[b]) {
      throw std::invalid_argument("BSR block_row_ptr decreases at " + str(b + 1));
    }
  }
  require_size("BSR block_col_idx", m.block_col_idx.size(), m.block_row_ptr.back(),
               "block_row_ptr[MB]");
  const std::int64_t cells = m.nnzb() * m.block_rows * m.block_cols;
  require_size("BSR val", m.val.size(), cells, "nnzb * R * C");
  if (!m.stored.empty()) require_size("BSR stored", m.stored.size(), cells, "nnzb * R * C");
  for (std::int64_t b = 0; b < mb; ++b) {
    for (Index p = m.block_row_ptr[b]; p < m.block_row_ptr[b + 1]; ++p) {
      const Index bc = m.block_col_idx[p];
      if (bc < 0 || bc >= nb) {
        throw std::invalid_argument("BSR block column " + str(bc) + " at " + str(p) +
                                    " lies outside [0, " + str(nb) + ")");
      }
      if (p > m.block_row_ptr[b] && bc <= m.block_col_idx[p - 1]) {
        throw std::invalid_argument("BSR block row " + str(b) + ": block column " + str(bc) +
                                    " follows " + str(m.block_col_idx[p - 1]) +
                                    " (must be strictly increasing)");
      }
    }
  }
}

}  // namespace

// --------------------------------------------------------------------------------------------- COO

CooMatrix to_coo(const SparseMatrix& a) {
  CooMatrix m;
  m.rows = a.rows();
  m.cols = a.cols();
  const auto row_ptr = a.row_ptr();
  m.row_idx.resize(static_cast<std::size_t>(a.nnz()));
  for (Index i = 0; i < a.rows(); ++i) {
    std::fill(m.row_idx.begin() + row_ptr[i], m.row_idx.begin() + row_ptr[i + 1], i);
  }
  m.col_idx.assign(a.col_idx().begin(), a.col_idx().end());
  m.val.assign(a.values().begin(), a.values().end());
  return m;
}

SparseMatrix to_csr(const CooMatrix& m) {
  require_size("COO col_idx", m.col_idx.size(), static_cast<std::int64_t>(m.row_idx.size()),
               "row_idx size");
  require_size("COO val", m.val.size(), static_cast<std::int64_t>(m.row_idx.size()),
               "row_idx size");
  bool canonical = true;
  for (std::size_t p = 0; p < m.row_idx.size(); ++p) {
    if (m.row_idx[p] < 0 || m.row_idx[p] >= m.rows) {
      throw std::invalid_argument("COO: row index " + str(m.row_idx[p]) + " at " +
                                  str(static_cast<std::int64_t>(p)) + " lies outside [0, " +
                                  str(m.rows) + ")");
    }
    require_column("COO", m.col_idx[p], m.cols, static_cast<std::int64_t>(p));
    if (p > 0 && (m.row_idx[p] < m.row_idx[p - 1] ||
                  (m.row_idx[p] == m.row_idx[p - 1] && m.col_idx[p] <= m.col_idx[p - 1]))) {
      canonical = false;
    }
  }
  if (!canonical) {
    // Not the layout to_coo writes; still a well-defined matrix: sort it and sum duplicates.
    std::vector<Triplet> entries(m.row_idx.size());
    for (std::size_t p = 0; p < entries.size(); ++p)
      entries[p] = {m.row_idx[p], m.col_idx[p], m.val[p]};
    return SparseMatrix::from_triplets(m.rows, m.cols, std::move(entries));
  }
  std::vector<Index> row_ptr(static_cast<std::size_t>(m.rows) + 1, 0);
  for (Index r : m.row_idx) ++row_ptr[r + 1];
  std::partial_sum(row_ptr.begin(), row_ptr.end(), row_ptr.begin());
  return SparseMatrix::from_csr(m.rows, m.cols, std::move(row_ptr), m.col_idx, m.val);
}

// --------------------------------------------------------------------------------------------- ELL

EllMatrix to_ell(const SparseMatrix& a, std::int64_t max_stored) {
  const auto row_ptr = a.row_ptr();
  const Index rows = a.rows();
  Index width = 0;
  for (Index i = 0; i < rows; ++i) width = std::max(width, row_ptr[i + 1] - row_ptr[i]);
  const std::int64_t stored = std::int64_t{width} * rows;
  check_padded_size("ELL", stored, max_stored, "width " + str(width) + " x " + str(rows) + " rows");

  EllMatrix m;
  m.rows = rows;
  m.cols = a.cols();
  m.width = width;
  fill_padded(a, stored, m, [&](std::int64_t i) { return ell_row(m, i); });
  return m;
}

SparseMatrix to_csr(const EllMatrix& m) {
  check_ell(m);
  return csr_from_padded(m, [&](std::int64_t i) { return ell_row(m, i); });
}

// ------------------------------------------------------------------------------------ SELL-C-sigma

SellMatrix to_sell(const SparseMatrix& a, Index slice_height, Index sigma,
                   std::int64_t max_stored) {
  if (slice_height < 1) {
    throw std::invalid_argument("SELL: slice height C is " + str(slice_height) + ", expected >= 1");
  }
  if (sigma < 1) throw std::invalid_argument("SELL: sigma is " + str(sigma) + ", expected >= 1");
  const Index rows = a.rows();
  const auto row_ptr = a.row_ptr();
  auto length = [&](Index r) { return row_ptr[r + 1] - row_ptr[r]; };

  SellMatrix m;
  m.rows = rows;
  m.cols = a.cols();
  m.slice_height = slice_height;
  m.sigma = effective_sigma(slice_height, sigma);
  m.row_perm.resize(static_cast<std::size_t>(rows));
  std::iota(m.row_perm.begin(), m.row_perm.end(), 0);
  if (m.sigma > 1) {
    // Stable, so rows of equal length keep their order: the permutation is fully determined.
    for (std::int64_t begin = 0; begin < rows; begin += m.sigma) {
      const std::int64_t end = std::min<std::int64_t>(begin + m.sigma, rows);
      std::stable_sort(m.row_perm.begin() + begin, m.row_perm.begin() + end,
                       [&](Index x, Index y) { return length(x) > length(y); });
    }
  }

  const std::int64_t slices = ceil_div(rows, slice_height);
  std::vector<std::int64_t> slice_ptr(static_cast<std::size_t>(slices) + 1, 0);
  for (std::int64_t s = 0; s < slices; ++s) {
    Index width = 0;
    const std::int64_t end = std::min<std::int64_t>((s + 1) * slice_height, rows);
    for (std::int64_t p = s * slice_height; p < end; ++p)
      width = std::max(width, length(m.row_perm[p]));
    slice_ptr[s + 1] = slice_ptr[s] + std::int64_t{width} * slice_height;
  }
  const std::int64_t stored = slice_ptr.back();
  check_padded_size("SELL", stored, max_stored,
                    str(slices) + " slices of C = " + str(slice_height) +
                        ", sigma = " + str(m.sigma) + ", for " + str(a.nnz()) + " nonzeros");
  m.slice_ptr.assign(slice_ptr.begin(), slice_ptr.end());  // fits Index: checked above
  fill_padded(a, stored, m, [&](std::int64_t p) { return sell_row(m, p); });
  return m;
}

SparseMatrix to_csr(const SellMatrix& m) {
  check_sell(m);
  return csr_from_padded(m, [&](std::int64_t p) { return sell_row(m, p); });
}

// --------------------------------------------------------------------------------------------- BSR

BsrMatrix to_bsr(const SparseMatrix& a, Index block_rows, Index block_cols,
                 std::int64_t max_stored) {
  if (block_rows < 1 || block_cols < 1) {
    throw std::invalid_argument("BSR: block dimensions are " + str(block_rows) + " x " +
                                str(block_cols) + ", expected both >= 1");
  }
  const Index rows = a.rows();
  const auto row_ptr = a.row_ptr();
  const auto col_idx = a.col_idx();
  const auto values = a.values();
  const std::int64_t mb = ceil_div(rows, block_rows);
  const std::int64_t nb = ceil_div(a.cols(), block_cols);
  const std::int64_t cells = std::int64_t{block_rows} * block_cols;

  // Pass 1: distinct block columns per block row, marked with the block row that saw them last.
  std::vector<Index> mark(static_cast<std::size_t>(nb), -1);
  std::vector<std::int64_t> block_row_ptr(static_cast<std::size_t>(mb) + 1, 0);
  for (Index b = 0; b < mb; ++b) {
    std::int64_t count = 0;
    const std::int64_t row_end = std::min<std::int64_t>((std::int64_t{b} + 1) * block_rows, rows);
    for (std::int64_t i = std::int64_t{b} * block_rows; i < row_end; ++i) {
      for (Index p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
        const Index bc = col_idx[p] / block_cols;
        if (mark[bc] != b) {
          mark[bc] = b;
          ++count;
        }
      }
    }
    block_row_ptr[b + 1] = block_row_ptr[b] + count;
  }
  const std::int64_t nnzb = block_row_ptr.back();
  check_padded_size("BSR", nnzb * cells, max_stored,
                    str(nnzb) + " blocks of " + str(block_rows) + " x " + str(block_cols));

  BsrMatrix m;
  m.rows = rows;
  m.cols = a.cols();
  m.block_rows = block_rows;
  m.block_cols = block_cols;
  m.block_row_ptr.assign(block_row_ptr.begin(), block_row_ptr.end());
  m.block_col_idx.resize(static_cast<std::size_t>(nnzb));
  m.val.assign(static_cast<std::size_t>(nnzb * cells), 0.0);
  m.stored.assign(static_cast<std::size_t>(nnzb * cells), 0);

  // Pass 2: the block columns of each block row, sorted, then every entry placed in its cell.
  std::fill(mark.begin(), mark.end(), -1);
  std::vector<Index> slot(static_cast<std::size_t>(nb), 0);  // block column -> index in block row
  for (Index b = 0; b < mb; ++b) {
    const std::int64_t base = block_row_ptr[b];
    std::int64_t count = 0;
    const std::int64_t row_begin = std::int64_t{b} * block_rows;
    const std::int64_t row_end = std::min<std::int64_t>(row_begin + block_rows, rows);
    for (std::int64_t i = row_begin; i < row_end; ++i) {
      for (Index p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
        const Index bc = col_idx[p] / block_cols;
        if (mark[bc] != b) {
          mark[bc] = b;
          m.block_col_idx[base + count++] = bc;
        }
      }
    }
    const auto first = m.block_col_idx.begin() + base;
    std::sort(first, first + count);
    for (std::int64_t q = 0; q < count; ++q) slot[first[q]] = static_cast<Index>(q);
    for (std::int64_t i = row_begin; i < row_end; ++i) {
      const std::int64_t in_block_row = (i - row_begin) * block_cols;
      for (Index p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
        const Index bc = col_idx[p] / block_cols;
        const std::int64_t at =
            (base + slot[bc]) * cells + in_block_row + (col_idx[p] - std::int64_t{bc} * block_cols);
        m.val[at] = values[p];
        m.stored[at] = 1;
      }
    }
  }
  return m;
}

SparseMatrix to_csr(const BsrMatrix& m) {
  check_bsr(m);
  const Index r_dim = m.block_rows;
  const Index c_dim = m.block_cols;
  const std::int64_t cells = std::int64_t{r_dim} * c_dim;
  const bool marked = !m.stored.empty();
  // Without the host-side `stored` mask (a BSR built elsewhere), nonzero cells are the entries.
  auto is_entry = [&](std::int64_t at) { return marked ? m.stored[at] != 0 : m.val[at] != 0.0; };
  auto check_cell = [&](std::int64_t i, std::int64_t j, std::int64_t at) {
    if (i >= m.rows || j >= m.cols) {
      throw std::invalid_argument("BSR: cell at " + str(at) + " holds an entry at (" + str(i) +
                                  ", " + str(j) + "), outside the " + str(m.rows) + " x " +
                                  str(m.cols) + " matrix");
    }
  };

  std::vector<Index> row_ptr(static_cast<std::size_t>(m.rows) + 1, 0);
  std::vector<Index> col_idx;
  std::vector<double> values;
  for (int pass = 0; pass < 2; ++pass) {
    for (Index b = 0; b < m.mb(); ++b) {
      for (Index r = 0; r < r_dim; ++r) {
        const std::int64_t i = std::int64_t{b} * r_dim + r;
        std::int64_t out = (pass == 1 && i < m.rows) ? row_ptr[i] : 0;
        std::int64_t length = 0;
        for (Index p = m.block_row_ptr[b]; p < m.block_row_ptr[b + 1]; ++p) {
          const std::int64_t first_col = std::int64_t{m.block_col_idx[p]} * c_dim;
          for (Index c = 0; c < c_dim; ++c) {
            const std::int64_t at = p * cells + std::int64_t{r} * c_dim + c;
            if (!is_entry(at)) continue;
            if (pass == 0) {
              check_cell(i, first_col + c, at);
              ++length;
            } else {
              col_idx[out] = static_cast<Index>(first_col + c);
              values[out++] = m.val[at];
            }
          }
        }
        if (pass == 0 && i < m.rows) row_ptr[i + 1] = static_cast<Index>(length);
      }
    }
    if (pass == 0) {
      std::partial_sum(row_ptr.begin(), row_ptr.end(), row_ptr.begin());
      col_idx.resize(static_cast<std::size_t>(row_ptr.back()));
      values.resize(col_idx.size());
    }
  }
  return SparseMatrix::from_csr(m.rows, m.cols, std::move(row_ptr), std::move(col_idx),
                                std::move(values));
}

// -------------------------------------------------------------------------------- reference SpMV

void spmv(const SparseMatrix& a, std::span<const double> x, std::span<double> y) {
  check_vectors("spmv (CSR)", a.rows(), a.cols(), 1, x.size(), y.size());
  const auto row_ptr = a.row_ptr();
  const auto col_idx = a.col_idx();
  const auto values = a.values();
  for (Index i = 0; i < a.rows(); ++i) {
    double sum = 0.0;
    for (Index p = row_ptr[i]; p < row_ptr[i + 1]; ++p) sum += values[p] * x[col_idx[p]];
    y[i] = sum;
  }
}

void spmv(const CooMatrix& a, std::span<const double> x, std::span<double> y) {
  check_vectors("spmv (COO)", a.rows, a.cols, 1, x.size(), y.size());
  require_size("COO col_idx", a.col_idx.size(), static_cast<std::int64_t>(a.row_idx.size()),
               "row_idx size");
  require_size("COO val", a.val.size(), static_cast<std::int64_t>(a.row_idx.size()),
               "row_idx size");
  std::fill(y.begin(), y.end(), 0.0);
  for (std::size_t p = 0; p < a.val.size(); ++p) {
    const Index r = a.row_idx[p];
    if (r < 0 || r >= a.rows) {
      throw std::invalid_argument("COO: row index " + str(r) + " at " +
                                  str(static_cast<std::int64_t>(p)) + " lies outside [0, " +
                                  str(a.rows) + ")");
    }
    require_column("COO", a.col_idx[p], a.cols, static_cast<std::int64_t>(p));
    y[r] += a.val[p] * x[a.col_idx[p]];
  }
}

void spmv(const EllMatrix& a, std::span<const double> x, std::span<double> y) {
  check_vectors("spmv (ELL)", a.rows, a.cols, 1, x.size(), y.size());
  check_ell(a);
  const std::size_t rows = static_cast<std::size_t>(a.rows);
  for (std::size_t i = 0; i < rows; ++i) {
    double sum = 0.0;
    for (std::size_t k = 0, at = i; k < static_cast<std::size_t>(a.width); ++k, at += rows) {
      const Index c = a.col_idx[at];
      if (c < 0) continue;
      require_column("ELL", c, a.cols, static_cast<std::int64_t>(at));
      sum += a.val[at] * x[c];
    }
    y[i] = sum;
  }
}

void spmv(const SellMatrix& a, std::span<const double> x, std::span<double> y) {
  check_vectors("spmv (SELL)", a.rows, a.cols, 1, x.size(), y.size());
  check_sell(a);
  const std::int64_t c_dim = a.slice_height;
  for (std::int64_t p = 0; p < a.rows; ++p) {
    const std::int64_t s = p / c_dim;
    const std::int64_t width = (std::int64_t{a.slice_ptr[s + 1]} - a.slice_ptr[s]) / c_dim;
    double sum = 0.0;
    for (std::int64_t k = 0, at = a.slice_ptr[s] + (p - s * c_dim); k < width; ++k, at += c_dim) {
      const Index c = a.col_idx[at];
      if (c < 0) continue;
      require_column("SELL", c, a.cols, at);
      sum += a.val[at] * x[c];
    }
    y[a.row_perm[p]] = sum;
  }
}

void spmv(const BsrMatrix& a, std::span<const double> x, std::span<double> y) {
  check_vectors("spmv (BSR)", a.rows, a.cols, 1, x.size(), y.size());
  check_bsr(a);
  const std::int64_t r_dim = a.block_rows;
  const std::int64_t c_dim = a.block_cols;
  std::vector<double> sum(static_cast<std::size_t>(r_dim));
  for (Index b = 0; b < a.mb(); ++b) {
    std::fill(sum.begin(), sum.end(), 0.0);
    const std::int64_t row0 = std::int64_t{b} * r_dim;
    // Like a kernel: every cell of a block is multiplied, cells past the matrix edge are skipped.
    for (Index p = a.block_row_ptr[b]; p < a.block_row_ptr[b + 1]; ++p) {
      const std::int64_t col0 = std::int64_t{a.block_col_idx[p]} * c_dim;
      const double* block = a.val.data() + p * r_dim * c_dim;
      for (std::int64_t r = 0; r < r_dim && row0 + r < a.rows; ++r) {
        for (std::int64_t c = 0; c < c_dim && col0 + c < a.cols; ++c) {
          sum[r] += block[r * c_dim + c] * x[col0 + c];
        }
      }
    }
    for (std::int64_t r = 0; r < r_dim && row0 + r < a.rows; ++r) y[row0 + r] = sum[r];
  }
}

// -------------------------------------------------------------------------------- reference SpMM

void spmm(const SparseMatrix& a, std::span<const double> x, Index k, std::span<double> y) {
  check_vectors("spmm (CSR)", a.rows(), a.cols(), k, x.size(), y.size());
  const auto row_ptr = a.row_ptr();
  const auto col_idx = a.col_idx();
  const auto values = a.values();
  const std::size_t kk = static_cast<std::size_t>(k);
  for (Index i = 0; i < a.rows(); ++i) {
    double* out = y.data() + i * kk;
    std::fill(out, out + kk, 0.0);
    for (Index p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
      const double v = values[p];
      const double* in = x.data() + static_cast<std::size_t>(col_idx[p]) * kk;
      for (std::size_t c = 0; c < kk; ++c) out[c] += v * in[c];
    }
  }
}

void spmm(const CooMatrix& a, std::span<const double> x, Index k, std::span<double> y) {
  check_vectors("spmm (COO)", a.rows, a.cols, k, x.size(), y.size());
  require_size("COO col_idx", a.col_idx.size(), static_cast<std::int64_t>(a.row_idx.size()),
               "row_idx size");
  require_size("COO val", a.val.size(), static_cast<std::int64_t>(a.row_idx.size()),
               "row_idx size");
  const std::size_t kk = static_cast<std::size_t>(k);
  std::fill(y.begin(), y.end(), 0.0);
  for (std::size_t p = 0; p < a.val.size(); ++p) {
    const Index r = a.row_idx[p];
    if (r < 0 || r >= a.rows) {
      throw std::invalid_argument("COO: row index " + str(r) + " at " +
                                  str(static_cast<std::int64_t>(p)) + " lies outside [0, " +
                                  str(a.rows) + ")");
    }
    require_column("COO", a.col_idx[p], a.cols, static_cast<std::int64_t>(p));
    double* out = y.data() + static_cast<std::size_t>(r) * kk;
    const double* in = x.data() + static_cast<std::size_t>(a.col_idx[p]) * kk;
    for (std::size_t c = 0; c < kk; ++c) out[c] += a.val[p] * in[c];
  }
}

void spmm(const EllMatrix& a, std::span<const double> x, Index k, std::span<double> y) {
  check_vectors("spmm (ELL)", a.rows, a.cols, k, x.size(), y.size());
  check_ell(a);
  const std::size_t rows = static_cast<std::size_t>(a.rows);
  const std::size_t kk = static_cast<std::size_t>(k);
  for (std::size_t i = 0; i < rows; ++i) {
    double* out = y.data() + i * kk;
    std::fill(out, out + kk, 0.0);
    for (std::size_t q = 0, at = i; q < static_cast<std::size_t>(a.width); ++q, at += rows) {
      const Index c = a.col_idx[at];
      if (c < 0) continue;
      require_column("ELL", c, a.cols, static_cast<std::int64_t>(at));
      const double* in = x.data() + static_cast<std::size_t>(c) * kk;
      for (std::size_t j = 0; j < kk; ++j) out[j] += a.val[at] * in[j];
    }
  }
}

void spmm(const SellMatrix& a, std::span<const double> x, Index k, std::span<double> y) {
  check_vectors("spmm (SELL)", a.rows, a.cols, k, x.size(), y.size());
  check_sell(a);
  const std::int64_t c_dim = a.slice_height;
  const std::size_t kk = static_cast<std::size_t>(k);
  for (std::int64_t p = 0; p < a.rows; ++p) {
    const std::int64_t s = p / c_dim;
    const std::int64_t width = (std::int64_t{a.slice_ptr[s + 1]} - a.slice_ptr[s]) / c_dim;
    double* out = y.data() + static_cast<std::size_t>(a.row_perm[p]) * kk;
    std::fill(out, out + kk, 0.0);
    for (std::int64_t q = 0, at = a.slice_ptr[s] + (p - s * c_dim); q < width; ++q, at += c_dim) {
      const Index c = a.col_idx[at];
      if (c < 0) continue;
      require_column("SELL", c, a.cols, at);
      const double* in = x.data() + static_cast<std::size_t>(c) * kk;
      for (std::size_t j = 0; j < kk; ++j) out[j] += a.val[at] * in[j];
    }
  }
}

void spmm(const BsrMatrix& a, std::span<const double> x, Index k, std::span<double> y) {
  check_vectors("spmm (BSR)", a.rows, a.cols, k, x.size(), y.size());
  check_bsr(a);
  const std::int64_t r_dim = a.block_rows;
  const std::int64_t c_dim = a.block_cols;
  const std::size_t kk = static_cast<std::size_t>(k);
  for (Index b = 0; b < a.mb(); ++b) {
    const std::int64_t row0 = std::int64_t{b} * r_dim;
    const std::int64_t row_end = std::min<std::int64_t>(row0 + r_dim, a.rows);
    std::fill(y.begin() + row0 * k, y.begin() + row_end * k, 0.0);
    for (Index p = a.block_row_ptr[b]; p < a.block_row_ptr[b + 1]; ++p) {
      const std::int64_t col0 = std::int64_t{a.block_col_idx[p]} * c_dim;
      const double* block = a.val.data() + p * r_dim * c_dim;
      for (std::int64_t r = 0; row0 + r < row_end; ++r) {
        double* out = y.data() + static_cast<std::size_t>(row0 + r) * kk;
        for (std::int64_t c = 0; c < c_dim && col0 + c < a.cols; ++c) {
          const double v = block[r * c_dim + c];
          const double* in = x.data() + static_cast<std::size_t>(col0 + c) * kk;
          for (std::size_t j = 0; j < kk; ++j) out[j] += v * in[j];
        }
      }
    }
  }
}

// ----------------------------------------------------------------------------------- error scales

void spmv_abs(const SparseMatrix& a, std::span<const double> x, std::span<double> y_abs) {
  check_vectors("spmv_abs", a.rows(), a.cols(), 1, x.size(), y_abs.size());
  const auto row_ptr = a.row_ptr();
  const auto col_idx = a.col_idx();
  const auto values = a.values();
  for (Index i = 0; i < a.rows(); ++i) {
    double sum = 0.0;
    for (Index p = row_ptr[i]; p < row_ptr[i + 1]; ++p) sum += std::abs(values[p] * x[col_idx[p]]);
    y_abs[i] = sum;
  }
}

void spmm_abs(const SparseMatrix& a, std::span<const double> x, Index k, std::span<double> y_abs) {
  check_vectors("spmm_abs", a.rows(), a.cols(), k, x.size(), y_abs.size());
  const auto row_ptr = a.row_ptr();
  const auto col_idx = a.col_idx();
  const auto values = a.values();
  const std::size_t kk = static_cast<std::size_t>(k);
  for (Index i = 0; i < a.rows(); ++i) {
    double* out = y_abs.data() + i * kk;
    std::fill(out, out + kk, 0.0);
    for (Index p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
      const double v = std::abs(values[p]);
      const double* in = x.data() + static_cast<std::size_t>(col_idx[p]) * kk;
      for (std::size_t c = 0; c < kk; ++c) out[c] += v * std::abs(in[c]);
    }
  }
}

}  // namespace sparserl::datasets
