// Generated matrices kept as files (generated_files.hpp). Layout, little-endian as the machine
// writes it (the file never leaves the data directory it was made in):
//   "SPRLGEN\n", u32 revision, u32 URI length, the URI's bytes, i64 rows, i64 cols, i64 nnz,
//   row_ptr (rows + 1 x i32), col_idx (nnz x i32), values (nnz x f64)
// and nothing after: a file of another length is not whole.
#include "sparserl/datasets/generated_files.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <fstream>
#include <functional>
#include <span>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include "fnv1a.hpp"

namespace sparserl::datasets {
namespace {

constexpr std::array<char, 8> kMagic = {'S', 'P', 'R', 'L', 'G', 'E', 'N', '\n'};

template <typename T>
void put(std::ofstream& out, const T& v) {
  out.write(reinterpret_cast<const char*>(&v), sizeof v);
}
template <typename T>
void put_array(std::ofstream& out, std::span<const T> v) {
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size_bytes()));
}
template <typename T>
bool get(std::ifstream& in, T& v) {
  return static_cast<bool>(in.read(reinterpret_cast<char*>(&v), sizeof v));
}
template <typename T>
bool get_array(std::ifstream& in, std::vector<T>& v, std::int64_t n) {
  v.resize(static_cast<std::size_t>(n));
  return static_cast<bool>(in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(T))));
}

// The whole file's bytes: the header, then row_ptr, col_idx and the values.
std::uint64_t file_bytes(std::size_t uri_size, std::int64_t rows, std::int64_t nnz) {
  return kMagic.size() + 8 + uri_size + 24 + static_cast<std::uint64_t>(rows + 1) * sizeof(Index) +
         static_cast<std::uint64_t>(nnz) * (sizeof(Index) + sizeof(double));
}

}  // namespace

std::filesystem::path generated_file_path(const std::filesystem::path& data_dir,
                                          const std::string& canonical_uri) {
  return data_dir / "generated" / (detail::hex16(detail::fnv1a64(canonical_uri)) + ".csr");
}

void write_generated_file(const std::filesystem::path& path, const std::string& canonical_uri,
                          const SparseMatrix& matrix) {
  // A process under a file size limit (a sandboxed worker's RLIMIT_FSIZE) would get SIGXFSZ for a
  // larger write, which ends it: such a file is not written.
  const std::uint64_t bytes = file_bytes(canonical_uri.size(), matrix.rows(), matrix.nnz());
  rlimit limit{};
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && bytes > limit.rlim_cur) {
    throw std::runtime_error("cannot write " + path.string() + ": its " + std::to_string(bytes) +
                             " bytes exceed this process's file size limit of " + std::to_string(limit.rlim_cur));
  }
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) throw std::runtime_error("cannot make " + path.parent_path().string() + ": " + ec.message());
  // A name of its own per writer: two processes generating one matrix do not write one file.
  const std::filesystem::path part =
      path.string() + ".part-" + std::to_string(::getpid()) + "-" +
      std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(part, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + part.string());
    out.write(kMagic.data(), kMagic.size());
    put(out, kGeneratedFileRevision);
    put(out, static_cast<std::uint32_t>(canonical_uri.size()));
    out.write(canonical_uri.data(), static_cast<std::streamsize>(canonical_uri.size()));
    put(out, static_cast<std::int64_t>(matrix.rows()));
    put(out, static_cast<std::int64_t>(matrix.cols()));
    put(out, static_cast<std::int64_t>(matrix.nnz()));
    put_array(out, matrix.row_ptr());
    put_array(out, matrix.col_idx());
    put_array(out, matrix.values());
    out.flush();
    if (!out) {
      out.close();
      std::filesystem::remove(part, ec);
      throw std::runtime_error("cannot write " + part.string() + " (disk full?)");
    }
  }
  std::filesystem::rename(part, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(part, ignored);
    throw std::runtime_error("cannot rename " + part.string() + " to " + path.string() + ": " + ec.message());
  }
}

std::optional<SparseMatrix> read_generated_file(const std::filesystem::path& path,
                                                const std::string& canonical_uri) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::array<char, 8> magic{};
  std::uint32_t revision = 0, uri_size = 0;
  if (!in.read(magic.data(), magic.size()) || magic != kMagic || !get(in, revision) ||
      revision != kGeneratedFileRevision || !get(in, uri_size) || uri_size != canonical_uri.size()) {
    return std::nullopt;
  }
  std::string uri(uri_size, '\0');
  std::int64_t rows = 0, cols = 0, nnz = 0;
  if (!in.read(uri.data(), uri_size) || uri != canonical_uri || !get(in, rows) || !get(in, cols) ||
      !get(in, nnz)) {
    return std::nullopt;
  }
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec || rows < 0 || cols < 0 || nnz < 0 || rows > kMaxIndex || cols > kMaxIndex || nnz > kMaxIndex ||
      size != file_bytes(uri_size, rows, nnz)) {
    return std::nullopt;
  }
  std::vector<Index> row_ptr, col_idx;
  std::vector<double> values;
  if (!get_array(in, row_ptr, rows + 1) || !get_array(in, col_idx, nnz) || !get_array(in, values, nnz)) {
    return std::nullopt;
  }
  try {
    return SparseMatrix::from_csr(static_cast<Index>(rows), static_cast<Index>(cols), std::move(row_ptr),
                                  std::move(col_idx), std::move(values));
  } catch (const InvalidMatrix&) {
    return std::nullopt;
  }
}

}  // namespace sparserl::datasets
