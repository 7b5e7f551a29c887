// Benchmark (not a test): the Matrix Market reader against a plain iostream reader in the same run.
// It writes a deterministic coordinate real general file of at least 100 MB (entries in random
// order, values with 15-17 significant digits) to a temporary folder, then reads it REPS times with
// each reader, alternating. Each read is timed in two phases: parse (text -> list of entries: the
// reader proper) and build (entries -> canonical CSR with SparseMatrix::from_triplets, the same
// code for both). It prints every repetition, the median MB/s of each reader for the parse alone
// and for the complete read, and their ratios; the two readers' matrices must be equal. The file is
// written just before, so both read from the page cache.
//
//   mtx_reader_bench [--mb MB] [--reps N] [--dir DIR]     (defaults: 100 MB, 5 repetitions,
//   $TMPDIR)
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/datasets/matrix_market.hpp"
#include "sparserl/datasets/random.hpp"

namespace ds = sparserl::datasets;
namespace fs = std::filesystem;

namespace {

using ds::splitmix64;

// Entries are appended until the file holds at least `min_bytes`; the entry count on the size line
// is patched in afterwards (it is padded to a fixed width so the patch cannot move the body).
std::int64_t write_file(const fs::path& path, std::uint64_t min_bytes, ds::Index n) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::perror(path.c_str());
    std::exit(1);
  }
  const std::string banner =
      "%%MatrixMarket matrix coordinate real general\n% mtx_reader_bench input\n";
  std::fputs(banner.c_str(), f);
  char size_line[64];
  std::snprintf(size_line, sizeof size_line, "%d %d %-20s\n", n, n, "0");
  std::fputs(size_line, f);
  std::uint64_t state = 20240601;
  std::uint64_t bytes = banner.size() + std::strlen(size_line);
  std::int64_t entries = 0;
  std::string buf;
  buf.reserve(1 << 20);
  char line[96];
  while (bytes < min_bytes) {
    const auto r = static_cast<ds::Index>(splitmix64(state) % static_cast<std::uint64_t>(n)) + 1;
    const auto c = static_cast<ds::Index>(splitmix64(state) % static_cast<std::uint64_t>(n)) + 1;
    // Values in [-1, 1) with 53 random bits: their shortest decimal form has 15-17 digits.
    const double v = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-52 - 1.0;
    char* w = line;
    w = std::to_chars(w, line + sizeof line, r).ptr;
    *w++ = ' ';
    w = std::to_chars(w, line + sizeof line, c).ptr;
    *w++ = ' ';
    w = std::to_chars(w, line + sizeof line, v).ptr;
    *w++ = '\n';
    buf.append(line, w);
    bytes += static_cast<std::uint64_t>(w - line);
    ++entries;
    if (buf.size() > (1 << 20) - 128) {
      std::fwrite(buf.data(), 1, buf.size(), f);
      buf.clear();
    }
  }
  std::fwrite(buf.data(), 1, buf.size(), f);
  std::snprintf(size_line, sizeof size_line, "%d %d %-20lld\n", n, n,
                static_cast<long long>(entries));
  std::fseek(f, static_cast<long>(banner.size()), SEEK_SET);
  std::fputs(size_line, f);
  std::fclose(f);
  return entries;
}

// The baseline: what a first Matrix Market reader usually looks like (std::ifstream >>), up to the
// list of entries; the SparseMatrix is then built exactly as the library builds it.
ds::MatrixMarketEntries iostream_entries(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line) && !line.empty() && line[0] == '%') {
  }
  long long rows = 0, cols = 0, n = 0;
  {
    std::istringstream size(line);
    size >> rows >> cols >> n;
  }
  ds::MatrixMarketEntries out;
  out.rows = static_cast<ds::Index>(rows);
  out.cols = static_cast<ds::Index>(cols);
  out.entries.reserve(static_cast<std::size_t>(n));
  long long i = 0, j = 0;
  double v = 0;
  while (in >> i >> j >> v) {
    out.entries.push_back({static_cast<ds::Index>(i - 1), static_cast<ds::Index>(j - 1), v});
  }
  return out;
}

struct Timed {
  double parse_s = 0.0;  // text -> entries
  double build_s = 0.0;  // entries -> canonical CSR (SparseMatrix::from_triplets)
  ds::SparseMatrix matrix;
};

template <class Parse>
Timed timed_read(Parse&& parse) {
  using clock = std::chrono::steady_clock;
  Timed t;
  auto t0 = clock::now();
  ds::MatrixMarketEntries e = parse();
  t.parse_s = std::chrono::duration<double>(clock::now() - t0).count();
  t0 = clock::now();
  t.matrix = ds::SparseMatrix::from_triplets(e.rows, e.cols, std::move(e.entries));
  t.build_s = std::chrono::duration<double>(clock::now() - t0).count();
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t mb = 100;
  int reps = 5;
  fs::path dir = fs::temp_directory_path();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key == "--mb")
      mb = std::strtoull(argv[i + 1], nullptr, 10);
    else if (key == "--reps")
      reps = std::atoi(argv[i + 1]);
    else if (key == "--dir")
      dir = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: mtx_reader_bench [--mb MB] [--reps N] [--dir DIR]\n");
      return 2;
    }
  }
  if (reps < 1 || mb < 1) {
    std::fprintf(stderr, "mtx_reader_bench: --reps and --mb must be positive\n");
    return 2;
  }
  const fs::path work = dir / ("sparserl-mtx-bench-" + std::to_string(::getpid()));
  fs::create_directories(work);
  const fs::path file = work / "bench.mtx";
  const ds::Index n = 2000000;
  const std::int64_t entries = write_file(file, mb * 1000000, n);
  const double file_mb = static_cast<double>(fs::file_size(file)) / 1e6;
  std::printf("input: %s, %.1f MB, %d x %d, %lld entries (coordinate real general)\n", file.c_str(),
              file_mb, n, n, static_cast<long long>(entries));

  std::vector<double> fast_parse, slow_parse, fast_total, slow_total, build;
  bool same = true;
  std::int64_t nnz = 0;
  for (int rep = 0; rep < reps; ++rep) {
    const Timed fast = timed_read([&file] { return ds::read_matrix_market_entries(file); });
    const Timed slow = timed_read([&file] { return iostream_entries(file); });
    same = same && fast.matrix == slow.matrix;
    nnz = fast.matrix.nnz();
    fast_parse.push_back(file_mb / fast.parse_s);
    slow_parse.push_back(file_mb / slow.parse_s);
    fast_total.push_back(file_mb / (fast.parse_s + fast.build_s));
    slow_total.push_back(file_mb / (slow.parse_s + slow.build_s));
    build.push_back(fast.build_s);
    std::printf(
        "rep %d: sparserl parse %.3f s + build %.3f s; iostream parse %.3f s + build %.3f s\n",
        rep + 1, fast.parse_s, fast.build_s, slow.parse_s, slow.build_s);
    std::fflush(stdout);
  }
  const double fp = median(fast_parse), sp = median(slow_parse);
  const double ft = median(fast_total), st = median(slow_total);
  std::printf(
      "median of %d, parse (text -> entries):        sparserl %.1f MB/s, iostream %.1f MB/s, "
      "ratio %.1fx\n",
      reps, fp, sp, fp / sp);
  std::printf(
      "median of %d, complete (text -> SparseMatrix): sparserl %.1f MB/s, iostream %.1f MB/s, "
      "ratio %.1fx (both include from_triplets, median %.3f s)\n",
      reps, ft, st, ft / st, median(build));
  std::printf("nnz %lld; the two readers' matrices are %s\n", static_cast<long long>(nnz),
              same ? "equal" : "DIFFERENT");
  sparserl::datasets::remove_tree(work);
  return same ? 0 : 1;
}
