// Validation, construction from triplets, and digests of the canonical CSR SparseMatrix.
#include "sparserl/datasets/sparse_matrix.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>
#include <string>

namespace sparserl::datasets {
namespace {

std::string describe(const char* what, std::int64_t at, std::int64_t value) {
  return std::string(what) + " at " + std::to_string(at) + " is " + std::to_string(value);
}

// 64-bit FNV-1a over little-endian words: simple, endian-fixed, identical on every platform.
class Fnv1a {
 public:
  void add_u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      hash_ ^= (v >> (8 * i)) & 0xffU;
      hash_ *= 0x100000001b3ULL;
    }
  }
  void add_u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) {
      hash_ ^= (v >> (8 * i)) & 0xffU;
      hash_ *= 0x100000001b3ULL;
    }
  }
  [[nodiscard]] std::string hex() const {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out(16, '0');
    for (int i = 0; i < 16; ++i) out[15 - i] = kDigits[(hash_ >> (4 * i)) & 0xfU];
    return out;
  }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

void add_pattern(Fnv1a& h, Index rows, Index cols, std::span<const Index> row_ptr,
                 std::span<const Index> col_idx) {
  h.add_u32(static_cast<std::uint32_t>(rows));
  h.add_u32(static_cast<std::uint32_t>(cols));
  for (Index v : row_ptr) h.add_u32(static_cast<std::uint32_t>(v));
  for (Index v : col_idx) h.add_u32(static_cast<std::uint32_t>(v));
}

}  // namespace

SparseMatrix SparseMatrix::from_csr(Index rows, Index cols, std::vector<Index> row_ptr,
                                    std::vector<Index> col_idx, std::vector<double> values) {
  if (rows < 0 || cols < 0) {
    throw InvalidMatrix("negative dimensions " + std::to_string(rows) + " x " + std::to_string(cols));
  }
  if (row_ptr.size() != static_cast<std::size_t>(rows) + 1) {
    throw InvalidMatrix("row_ptr has " + std::to_string(row_ptr.size()) + " entries, expected rows + 1 = " +
                        std::to_string(static_cast<std::int64_t>(rows) + 1));
  }
  if (col_idx.size() != values.size()) {
    throw InvalidMatrix("col_idx has " + std::to_string(col_idx.size()) + " entries but values has " +
                        std::to_string(values.size()));
  }
  if (row_ptr.front() != 0) throw InvalidMatrix(describe("row_ptr", 0, row_ptr.front()) + ", expected 0");
  if (static_cast<std::size_t>(row_ptr.back()) != col_idx.size()) {
    throw InvalidMatrix(describe("row_ptr", rows, row_ptr.back()) + ", expected nnz = " +
                        std::to_string(col_idx.size()));
  }
  for (Index i = 0; i < rows; ++i) {
    const Index begin = row_ptr[i];
    const Index end = row_ptr[i + 1];
    if (end < begin) throw InvalidMatrix(describe("row_ptr", i + 1, end) + ", below row_ptr[" +
                                         std::to_string(i) + "] = " + std::to_string(begin));
    for (Index p = begin; p < end; ++p) {
      const Index c = col_idx[p];
      if (c < 0 || c >= cols) {
        throw InvalidMatrix("row " + std::to_string(i) + ": " + describe("col_idx", p, c) +
                            ", outside [0, " + std::to_string(cols) + ")");
      }
      if (p > begin && c <= col_idx[p - 1]) {
        throw InvalidMatrix("row " + std::to_string(i) + ": column " + std::to_string(c) +
                            " follows column " + std::to_string(col_idx[p - 1]) +
                            " (columns must be strictly increasing)");
      }
    }
  }
  return SparseMatrix(rows, cols, std::move(row_ptr), std::move(col_idx), std::move(values));
}

SparseMatrix SparseMatrix::from_triplets(Index rows, Index cols, std::vector<Triplet> entries,
                                         std::int64_t* duplicates_summed) {
  if (rows < 0 || cols < 0) {
    throw InvalidMatrix("negative dimensions " + std::to_string(rows) + " x " + std::to_string(cols));
  }
  if (static_cast<std::int64_t>(entries.size()) > kMaxIndex) {
    throw InvalidMatrix(std::to_string(entries.size()) +
                        " entries exceed the 32-bit index range of the kernel ABI");
  }
  for (std::size_t p = 0; p < entries.size(); ++p) {
    const Triplet& t = entries[p];
    if (t.row < 0 || t.row >= rows || t.col < 0 || t.col >= cols) {
      throw InvalidMatrix("entry " + std::to_string(p) + " at (" + std::to_string(t.row) + ", " +
                          std::to_string(t.col) + ") lies outside the " + std::to_string(rows) + " x " +
                          std::to_string(cols) + " matrix");
    }
  }
  // Counting sort by row keeps this linear in nnz. Each entry moves once, as one 16-byte record, so the
  // scatter costs one cache miss per entry; rows are then sorted by column in place (stable: equal
  // columns are summed in input order, so the sum is deterministic).
  struct Entry {
    Index col;
    double value;
  };
  std::vector<Index> row_ptr(static_cast<std::size_t>(rows) + 1, 0);
  for (const Triplet& t : entries) ++row_ptr[t.row + 1];
  std::partial_sum(row_ptr.begin(), row_ptr.end(), row_ptr.begin());
  std::vector<Entry> sorted(entries.size());
  {
    std::vector<Index> next(row_ptr.begin(), row_ptr.end() - 1);
    for (const Triplet& t : entries) sorted[next[t.row]++] = {t.col, t.value};
  }
  entries.clear();
  entries.shrink_to_fit();

  std::vector<Index> out_ptr(static_cast<std::size_t>(rows) + 1, 0);
  std::vector<Index> cols_sorted(sorted.size());
  std::vector<double> vals_sorted(sorted.size());
  std::int64_t folded = 0;
  Index write = 0;
  for (Index i = 0; i < rows; ++i) {
    const auto begin = sorted.begin() + row_ptr[i];
    const auto end = sorted.begin() + row_ptr[i + 1];
    const auto by_col = [](const Entry& a, const Entry& b) { return a.col < b.col; };
    if (!std::is_sorted(begin, end, by_col)) std::stable_sort(begin, end, by_col);
    for (auto it = begin; it != end; ++it) {
      if (write > out_ptr[i] && cols_sorted[write - 1] == it->col) {
        vals_sorted[write - 1] += it->value;
        ++folded;
      } else {
        cols_sorted[write] = it->col;
        vals_sorted[write] = it->value;
        ++write;
      }
    }
    out_ptr[i + 1] = write;
  }
  cols_sorted.resize(write);
  vals_sorted.resize(write);
  if (duplicates_summed != nullptr) *duplicates_summed = folded;
  return SparseMatrix(rows, cols, std::move(out_ptr), std::move(cols_sorted),
                      std::move(vals_sorted));
}

std::string SparseMatrix::digest() const {
  Fnv1a h;
  add_pattern(h, rows_, cols_, row_ptr_, col_idx_);
  for (double v : values_) h.add_u64(std::bit_cast<std::uint64_t>(v));
  return h.hex();
}

std::string SparseMatrix::pattern_digest() const {
  Fnv1a h;
  add_pattern(h, rows_, cols_, row_ptr_, col_idx_);
  return h.hex();
}

std::vector<Triplet> SparseMatrix::to_triplets() const {
  std::vector<Triplet> out;
  out.reserve(col_idx_.size());
  for (Index i = 0; i < rows_; ++i) {
    for (Index p = row_ptr_[i]; p < row_ptr_[i + 1]; ++p) out.push_back({i, col_idx_[p], values_[p]});
  }
  return out;
}

std::size_t resident_bytes(const SparseMatrix& m) {
  return m.row_ptr().size_bytes() + m.col_idx().size_bytes() + m.values().size_bytes();
}

}  // namespace sparserl::datasets
