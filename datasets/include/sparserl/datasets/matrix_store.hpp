// The matrix store: where a task's matrix URI becomes a SparseMatrix. suitesparse-v1 URIs are
// looked up in a data directory laid out as the download path writes it, then in attached
// SuiteSparse indexes (e.g. ../shared/matrices with its INDEX.csv); file: URIs are read directly;
// gen-v1 URIs are generated (generators.hpp), with this store as the loader of the real matrices a
// generator builds on (kron); a large generated matrix is generated once per data directory and
// kept there as a file (StoreOptions::generated_file_min_nnz). A missing matrix is an error naming the URI and every place looked,
// so a user sees at once what to download or where to point --data-dir.
//
// Data directory layout for suitesparse-v1/GROUP/NAME, tried in this order:
//   DATA_DIR/suitesparse/GROUP/NAME.mtx
//   DATA_DIR/suitesparse/GROUP/NAME.mtx.gz
//   DATA_DIR/suitesparse/GROUP/NAME.tar.gz   (the collection's archive; member NAME/NAME.mtx)
//
// Loaded matrices may be kept in a small LRU cache keyed by the canonical URI, each with its
// content digest once asked for (load_digested); the store is safe to use from several threads
// (loads of different URIs run in parallel, the cache is locked briefly).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sparserl/datasets/matrix_market.hpp"
#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/datasets/suitesparse_index.hpp"
#include "sparserl/datasets/task.hpp"

namespace sparserl::datasets {

class MatrixNotFound : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// $SPARSERL_DATA_DIR when set and not empty, else ./data.
std::filesystem::path default_data_dir();

// $SPARSERL_GENERATED_FILE_MIN_NNZ when set and not empty (a count of nonzeros, 0: no files), else
// 1,000,000: StoreOptions::generated_file_min_nnz's default. The variable reaches every store of a
// run, its workers' too (they inherit the environment). std::invalid_argument naming the variable
// when it is no such count.
std::int64_t default_generated_file_min_nnz();

// The relative location of a suitesparse-v1 matrix's archive in a data directory:
// suitesparse/GROUP/NAME.tar.gz (what download_matrix writes).
std::filesystem::path archive_relative_path(const MatrixUri& uri);

struct StoreOptions {
  // Folders holding an INDEX.csv (or paths of index CSV files) searched after the data directory.
  std::vector<std::filesystem::path> indexes{};
  // How many loaded matrices to keep in memory (0: no cache).
  std::size_t cache_capacity = 0;
  // And at most this many bytes of them (resident_bytes(); 0: no bound by bytes). The newest
  // matrix stays cached even when it alone is larger.
  std::size_t cache_bytes = 0;
  // Generated matrices of at least this many nonzeros are kept as files in DATA_DIR/generated/
  // (generated_files.hpp): written where the store generated one (best effort: a data directory
  // this process cannot write, e.g. a sandboxed worker's, leaves the matrix unwritten), read back
  // by every store of that data directory from then on. 0: generate each time, write nothing.
  std::int64_t generated_file_min_nnz = default_generated_file_min_nnz();
  ReadOptions read{};
};

// Where a matrix came from, and what the reader saw (no report for generated matrices).
struct LoadedMatrix {
  std::shared_ptr<const SparseMatrix> matrix;
  std::string uri;             // canonical
  std::filesystem::path file;  // empty for generated matrices
  std::optional<ReadReport> report;
};

// A matrix and its content digest (SparseMatrix::digest()).
struct DigestedMatrix {
  std::shared_ptr<const SparseMatrix> matrix;
  std::string digest;
};

class MatrixStore {
 public:
  // Reads the attached indexes now (IndexError if one is malformed or missing). The data directory
  // need not exist.
  explicit MatrixStore(std::filesystem::path data_dir, StoreOptions options = {});

  [[nodiscard]] const std::filesystem::path& data_dir() const { return data_dir_; }
  [[nodiscard]] const std::vector<SuiteSparseIndex>& indexes() const { return indexes_; }

  // The local file of a suitesparse-v1 or file: URI, or nullopt when there is none. gen-v1 URIs
  // have no file: std::invalid_argument.
  [[nodiscard]] std::optional<std::filesystem::path> find(const MatrixUri& uri) const;
  // Like find, but throws MatrixNotFound naming the URI and every place looked.
  [[nodiscard]] std::filesystem::path resolve(const MatrixUri& uri) const;
  [[nodiscard]] std::filesystem::path resolve(std::string_view uri) const;

  // The matrix of any URI (through the cache when enabled). Throws InvalidUri, MatrixNotFound,
  // MatrixMarketError (a file that does not read) or std::invalid_argument (a bad generator spec).
  [[nodiscard]] std::shared_ptr<const SparseMatrix> load(const MatrixUri& uri);
  [[nodiscard]] std::shared_ptr<const SparseMatrix> load(std::string_view uri);
  // load, plus where the matrix came from and the reader's report; bypasses the cache.
  [[nodiscard]] LoadedMatrix load_with_report(const MatrixUri& uri) const;
  // load, plus the matrix's digest, computed once per cached matrix: the digest reads every entry
  // (a full pass, about 20 ns per nonzero), and a caller that checks it on every use - the GPU
  // worker, once per evaluation - would otherwise pay that pass each time. Without a cache, or for
  // a matrix that has left it, the digest is computed again.
  [[nodiscard]] DigestedMatrix load_digested(const MatrixUri& uri);
  // How many digests load_digested has computed (not answered from the cache).
  [[nodiscard]] std::uint64_t digests_computed() const { return digests_computed_; }

  // Every suitesparse-v1 URI of the attached indexes, in index order.
  [[nodiscard]] std::vector<std::string> indexed_uris() const;

  [[nodiscard]] std::size_t cache_size() const;
  [[nodiscard]] std::size_t cache_bytes() const;  // resident_bytes() of the cached matrices
  void clear_cache();

 private:
  std::vector<std::filesystem::path> candidates(const MatrixUri& uri) const;

  // A cached matrix; its digest is computed at the first load_digested, outside the lock.
  struct Digest {
    std::once_flag once;
    std::string value;
  };
  struct Entry {
    std::string key;  // canonical URI
    std::shared_ptr<const SparseMatrix> matrix;
    std::shared_ptr<Digest> digest;
  };
  // The cache's entry for the URI, loading the matrix (and caching it when enabled) on a miss.
  Entry entry(const MatrixUri& uri);

  std::filesystem::path data_dir_;
  StoreOptions options_;
  std::vector<SuiteSparseIndex> indexes_;
  mutable std::mutex mutex_;
  // Most recently used first.
  std::list<Entry> cache_;
  std::size_t cached_bytes_ = 0;
  std::atomic<std::uint64_t> digests_computed_{0};
};

}  // namespace sparserl::datasets
