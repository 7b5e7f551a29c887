// The Matrix Market writer of matrix_market.hpp (the reader is matrix_market.cpp): coordinate files
// in general or symmetric form, as text, as a plain or gzip-compressed file written atomically, or
// as the single member of a .tar.gz archive. Values are written in their shortest round-trip form,
// so that reading a written file gives back the same doubles.
#include "sparserl/datasets/matrix_market.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "compressed_output.hpp"

namespace sparserl::datasets {

bool is_symmetric(const SparseMatrix& a) {
  if (a.rows() != a.cols()) return false;
  const auto row_ptr = a.row_ptr();
  const auto col_idx = a.col_idx();
  const auto values = a.values();
  for (Index i = 0; i < a.rows(); ++i) {
    for (Index p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
      const Index j = col_idx[p];
      if (j >= i) continue;  // each pair once, from its lower entry; the upper side is found below
      const auto begin = col_idx.begin() + row_ptr[j];
      const auto end = col_idx.begin() + row_ptr[j + 1];
      const auto it = std::lower_bound(begin, end, i);
      if (it == end || *it != i) return false;
      const double mirrored = values[static_cast<std::size_t>(it - col_idx.begin())];
      if (std::bit_cast<std::uint64_t>(mirrored) != std::bit_cast<std::uint64_t>(values[p])) {
        return false;
      }
    }
  }
  // Every lower entry has its mirror; the counts then match only if every upper entry has one too.
  std::int64_t lower = 0;
  std::int64_t upper = 0;
  for (Index i = 0; i < a.rows(); ++i) {
    for (Index p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
      if (col_idx[p] < i) ++lower;
      if (col_idx[p] > i) ++upper;
    }
  }
  return lower == upper;
}

namespace {

// Produces the file's text in pieces of about 1 MiB, handed to `emit`.
template <class Emit>
void write_text(const SparseMatrix& a, const WriteOptions& options, Emit&& emit) {
  if (options.symmetric && !is_symmetric(a)) {
    throw std::invalid_argument("cannot write a symmetric Matrix Market file: the " +
                                std::to_string(a.rows()) + " x " + std::to_string(a.cols()) +
                                " matrix is not symmetric");
  }
  const bool pattern = options.field == MmField::pattern;
  const bool integer = options.field == MmField::integer;
  const auto row_ptr = a.row_ptr();
  const auto col_idx = a.col_idx();
  const auto values = a.values();
  if (integer) {
    for (std::size_t p = 0; p < values.size(); ++p) {
      const double v = values[p];
      if (!(std::trunc(v) == v && std::fabs(v) < 9007199254740992.0)) {
        throw std::invalid_argument("cannot write an integer Matrix Market file: value " +
                                    std::to_string(v) + " (entry " + std::to_string(p) +
                                    ") is not an integer below 2^53");
      }
    }
  }
  std::int64_t entries = a.nnz();
  if (options.symmetric) {
    entries = 0;
    for (Index i = 0; i < a.rows(); ++i) {
      for (Index p = row_ptr[i]; p < row_ptr[i + 1]; ++p) entries += col_idx[p] <= i ? 1 : 0;
    }
  }
  std::string out = "%%MatrixMarket matrix coordinate ";
  out += to_string(options.field);
  out += options.symmetric ? " symmetric\n" : " general\n";
  for (const std::string& comment : options.comments) {
    std::size_t start = 0;
    for (;;) {
      const std::size_t nl = comment.find('\n', start);
      std::string_view piece(comment.data() + start,
                             (nl == std::string::npos ? comment.size() : nl) - start);
      if (!piece.empty() && piece.back() == '\r') piece.remove_suffix(1);
      out += piece.empty() ? "%" : "% ";
      out += piece;
      out += '\n';
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
  }
  out += std::to_string(a.rows()) + " " + std::to_string(a.cols()) + " " + std::to_string(entries) +
         "\n";
  constexpr std::size_t kFlush = std::size_t{1} << 20;
  out.reserve(kFlush + 128);
  char buf[64];
  for (Index i = 0; i < a.rows(); ++i) {
    for (Index p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
      const Index j = col_idx[p];
      if (options.symmetric && j > i) continue;
      char* w = buf;
      w = std::to_chars(w, buf + sizeof buf, i + 1).ptr;
      *w++ = ' ';
      w = std::to_chars(w, buf + sizeof buf, j + 1).ptr;
      if (!pattern) {
        *w++ = ' ';
        if (integer) {
          w = std::to_chars(w, buf + sizeof buf, static_cast<std::int64_t>(values[p])).ptr;
        } else {
          w = std::to_chars(w, buf + sizeof buf, values[p]).ptr;  // shortest round-trip form
        }
      }
      *w++ = '\n';
      out.append(buf, static_cast<std::size_t>(w - buf));
      if (out.size() >= kFlush) {
        emit(std::string_view(out));
        out.clear();
      }
    }
  }
  emit(std::string_view(out));
}

}  // namespace

std::string format_matrix_market(const SparseMatrix& a, const WriteOptions& options) {
  std::string text;
  write_text(a, options, [&text](std::string_view piece) { text += piece; });
  return text;
}

void write_matrix_market(const std::filesystem::path& path, const SparseMatrix& a,
                         const WriteOptions& options) {
  detail::AtomicFile file(path);
  if (path.extension() == ".gz") {
    detail::GzipWriter gz(file);
    write_text(a, options, [&gz](std::string_view piece) { gz.write(piece); });
    gz.finish();
  } else {
    write_text(a, options, [&file](std::string_view piece) { file.write(piece); });
  }
  file.commit();
}

void write_matrix_market_archive(const std::filesystem::path& archive, const SparseMatrix& a,
                                 const WriteOptions& options, std::string member) {
  if (member.empty()) member = detail::default_archive_member(archive);
  const std::string text = format_matrix_market(a, options);
  detail::AtomicFile file(archive);
  detail::GzipWriter gz(file);
  gz.write(detail::tar_member_header(member, text.size()));
  gz.write(text);
  gz.write(std::string((512 - text.size() % 512) % 512, '\0'));
  gz.write(std::string(1024, '\0'));  // the end-of-archive marker: two zero blocks
  gz.finish();
  file.commit();
}

}  // namespace sparserl::datasets
