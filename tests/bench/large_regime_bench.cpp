// Benchmark (not a test): generates every matrix of the large regime (large_regime.hpp) once, in
// list order, and prints one Markdown table row per matrix: its URI, family, part, rows, columns,
// nonzeros, longest and mean row, and the generation time (wall clock around generate(), which for
// scaled-real includes loading the small base matrix through the store). It ends with the totals
// and fails (exit 1) when a matrix holds fewer than 1M or more than 50M nonzeros, or another count
// than the one large_regime_v1() lists for it. The scaled-real family needs the shared SuiteSparse
// matrices: --shared names the folder that holds matrices/.
//
//   large_regime_bench [--shared DIR] [--part train|val|test] [--family NAME]
//                      (default DIR: ../shared beside the source tree)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>

#include "sparserl/datasets/generators.hpp"
#include "sparserl/datasets/large_regime.hpp"
#include "sparserl/datasets/matrix_store.hpp"

namespace ds = sparserl::datasets;
namespace fs = std::filesystem;

namespace {

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "large_regime_bench: %s\nusage: large_regime_bench [--shared DIR] "
               "[--part train|val|test] [--family NAME]\n",
               why);
  std::exit(2);
}

// 12345678 -> "12,345,678"
std::string grouped(std::int64_t v) {
  std::string digits = std::to_string(v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path shared = fs::path(SPARSERL_BENCH_SOURCE_DIR) / ".." / "shared";
  std::string part_filter, family_filter;
  for (int i = 1; i < argc; ++i) {
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("an option lacks its value");
      return argv[++i];
    };
    if (std::strcmp(argv[i], "--shared") == 0) {
      shared = value();
    } else if (std::strcmp(argv[i], "--part") == 0) {
      part_filter = value();
      if (!ds::parse_split_part(part_filter)) usage("--part takes train, val or test");
    } else if (std::strcmp(argv[i], "--family") == 0) {
      family_filter = value();
    } else {
      usage("unknown argument");
    }
  }
  ds::StoreOptions options;
  options.indexes = {shared / "matrices"};
  options.cache_capacity = 4;  // the scaled-real bases
  std::unique_ptr<ds::MatrixStore> store;
  try {
    store = std::make_unique<ds::MatrixStore>(ds::default_data_dir(), options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "large_regime_bench: %s (--shared DIR names the folder of matrices/)\n",
                 e.what());
    return 2;
  }
  const ds::MatrixLoader loader = [&store](const std::string& uri) { return store->load(uri); };

  std::printf("| uri | family | part | rows | cols | nnz | max row | mean row | seconds |\n");
  std::printf("|---|---|---|---:|---:|---:|---:|---:|---:|\n");
  int count = 0, outside = 0, unlike_list = 0;
  std::int64_t total_nnz = 0;
  double total_seconds = 0.0;
  for (const ds::LargeRegimeMatrix& m : ds::large_regime_v1()) {
    const std::string part(ds::to_string(m.part));
    if (!part_filter.empty() && part != part_filter) continue;
    if (!family_filter.empty() && m.family != family_filter) continue;
    const auto start = std::chrono::steady_clock::now();
    const ds::SparseMatrix a = ds::generate(ds::MatrixUri::parse(m.uri), loader);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::int64_t max_row = 0;
    for (ds::Index i = 0; i < a.rows(); ++i) {
      max_row = std::max<std::int64_t>(max_row, a.row_length(i));
    }
    const double mean_row = a.rows() > 0 ? static_cast<double>(a.nnz()) / a.rows() : 0.0;
    const bool in_range = a.nnz() >= ds::kLargeRegimeMinNnz && a.nnz() <= ds::kLargeRegimeMaxNnz;
    const std::string note = std::string(in_range ? "" : " (OUT OF RANGE)") +
                             (a.nnz() == m.nnz ? "" : " (listed " + grouped(m.nnz) + ")");
    std::printf("| `%s` | %s | %s | %s | %s | %s%s | %s | %.2f | %.2f |\n", m.uri.c_str(),
                m.family.c_str(), part.c_str(), grouped(a.rows()).c_str(),
                grouped(a.cols()).c_str(), grouped(a.nnz()).c_str(), note.c_str(),
                grouped(max_row).c_str(), mean_row, seconds);
    std::fflush(stdout);
    ++count;
    outside += in_range ? 0 : 1;
    unlike_list += a.nnz() == m.nnz ? 0 : 1;
    total_nnz += a.nnz();
    total_seconds += seconds;
  }
  std::printf(
      "\n%d matrices, %s nonzeros, generated in %.1f s (%.1f M nonzeros/s); %d outside "
      "[%s, %s] nonzeros; %d unlike the list's count\n",
      count, grouped(total_nnz).c_str(), total_seconds,
      total_seconds > 0 ? static_cast<double>(total_nnz) / total_seconds / 1e6 : 0.0, outside,
      grouped(ds::kLargeRegimeMinNnz).c_str(), grouped(ds::kLargeRegimeMaxNnz).c_str(),
      unlike_list);
  return outside == 0 && unlike_list == 0 ? 0 : 1;
}
