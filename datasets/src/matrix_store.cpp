// The matrix store (matrix_store.hpp): URI -> file by a fixed search order, file -> SparseMatrix
// through the Matrix Market reader, gen-v1 through the generators, and a small LRU of results.
#include "sparserl/datasets/matrix_store.hpp"

#include <algorithm>
#include <cstdlib>

#include "sparserl/datasets/generated_files.hpp"
#include "sparserl/datasets/generators.hpp"

namespace sparserl::datasets {

std::filesystem::path default_data_dir() {
  if (const char* env = std::getenv("SPARSERL_DATA_DIR"); env != nullptr && *env != '\0')
    return env;
  return "data";
}

std::int64_t default_generated_file_min_nnz() {
  const char* env = std::getenv("SPARSERL_GENERATED_FILE_MIN_NNZ");
  if (env == nullptr || *env == '\0') return 1'000'000;
  const std::string text = env;
  std::size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || v < 0) {
    throw std::invalid_argument("SPARSERL_GENERATED_FILE_MIN_NNZ: '" + text +
                                "' is not a count of nonzeros (0 keeps no generated matrix as a file)");
  }
  return v;
}

std::filesystem::path archive_relative_path(const MatrixUri& uri) {
  if (uri.scheme != MatrixUri::Scheme::suitesparse) {
    throw std::invalid_argument("'" + uri.str() + "' is not a suitesparse-v1 URI");
  }
  return std::filesystem::path("suitesparse") / uri.group / (uri.name + ".tar.gz");
}

MatrixStore::MatrixStore(std::filesystem::path data_dir, StoreOptions options)
    : data_dir_(std::move(data_dir)), options_(std::move(options)) {
  for (const auto& where : options_.indexes) {
    indexes_.push_back(SuiteSparseIndex::read(index_csv_path(where)));
  }
}

std::vector<std::filesystem::path> MatrixStore::candidates(const MatrixUri& uri) const {
  const std::filesystem::path base = data_dir_ / "suitesparse" / uri.group;
  return {base / (uri.name + ".mtx"), base / (uri.name + ".mtx.gz"), base / (uri.name + ".tar.gz")};
}

std::optional<std::filesystem::path> MatrixStore::find(const MatrixUri& uri) const {
  std::error_code ec;
  switch (uri.scheme) {
    case MatrixUri::Scheme::generated:
      throw std::invalid_argument("'" + uri.str() + "' is generated, not stored in a file");
    case MatrixUri::Scheme::file:
      if (std::filesystem::is_regular_file(uri.path, ec)) return std::filesystem::path(uri.path);
      return std::nullopt;
    case MatrixUri::Scheme::suitesparse:
      break;
  }
  for (const auto& path : candidates(uri)) {
    if (std::filesystem::is_regular_file(path, ec)) return path;
  }
  for (const SuiteSparseIndex& index : indexes_) {
    if (const IndexEntry* e = index.find(uri.group, uri.name)) {
      const auto path = index.file_path(*e);
      if (std::filesystem::is_regular_file(path, ec)) return path;
    }
  }
  return std::nullopt;
}

std::filesystem::path MatrixStore::resolve(const MatrixUri& uri) const {
  if (auto path = find(uri)) return *path;
  std::string looked;
  if (uri.scheme == MatrixUri::Scheme::file) {
    looked = "\n  " + uri.path + " (no such file)";
  } else {
    for (const auto& path : candidates(uri)) looked += "\n  " + path.string();
    for (const SuiteSparseIndex& index : indexes_) {
      if (const IndexEntry* e = index.find(uri.group, uri.name)) {
        looked += "\n  " + index.file_path(*e).string() + " (listed in " + index.source() +
                  " line " + std::to_string(e->line) + ", but missing)";
      } else {
        looked += "\n  " + index.source() + " (no entry " + uri.group + "/" + uri.name + ")";
      }
    }
    if (indexes_.empty()) looked += "\n  (no index attached: --index FOLDER adds one)";
    looked += "\n`sparserl data fetch " + uri.str() + " --data-dir " + data_dir_.string() +
              "` downloads it";
  }
  throw MatrixNotFound("matrix " + uri.str() + " not found; looked in:" + looked);
}

std::filesystem::path MatrixStore::resolve(std::string_view uri) const {
  return resolve(MatrixUri::parse(uri));
}

LoadedMatrix MatrixStore::load_with_report(const MatrixUri& uri) const {
  LoadedMatrix out;
  out.uri = uri.str();
  if (uri.scheme == MatrixUri::Scheme::generated) {
    // A generator that builds on a real matrix (kron) loads it through this store, uncached:
    // such bases are small, and load_with_report does not touch the cache.
    const MatrixLoader loader = [this](const std::string& base) {
      return load_with_report(MatrixUri::parse(base)).matrix;
    };
    const bool keep = options_.generated_file_min_nnz > 0;
    const std::filesystem::path kept = keep ? generated_file_path(data_dir_, out.uri) : std::filesystem::path{};
    if (keep) {
      if (std::optional<SparseMatrix> m = read_generated_file(kept, out.uri)) {
        out.matrix = std::make_shared<const SparseMatrix>(std::move(*m));
        return out;
      }
    }
    out.matrix = std::make_shared<const SparseMatrix>(generate(uri, loader));
    if (keep && out.matrix->nnz() >= options_.generated_file_min_nnz) {
      try {
        write_generated_file(kept, out.uri, *out.matrix);
      } catch (const std::runtime_error&) {
        // Only a cache: the matrix is generated again next time.
      }
    }
    return out;
  }
  out.file = resolve(uri);
  ReadOptions read = options_.read;
  // An archive in the data directory holds NAME/NAME.mtx; name it so that an archive with several
  // .mtx members (NAME_b.mtx, ...) never yields the wrong one.
  const std::string archive_name = uri.name + ".tar.gz";
  if (uri.scheme == MatrixUri::Scheme::suitesparse && read.archive_member.empty() &&
      out.file.filename() == archive_name) {
    read.archive_member = uri.name + "/" + uri.name + ".mtx";
  }
  MatrixMarketFile file = read_matrix_market(out.file, read);
  out.matrix = std::make_shared<const SparseMatrix>(std::move(file.matrix));
  out.report = std::move(file.report);
  return out;
}

MatrixStore::Entry MatrixStore::entry(const MatrixUri& uri) {
  std::string key = uri.str();
  if (options_.cache_capacity > 0) {
    std::lock_guard lock(mutex_);
    for (auto it = cache_.begin(); it != cache_.end(); ++it) {
      if (it->key == key) {
        cache_.splice(cache_.begin(), cache_, it);
        return cache_.front();
      }
    }
  }
  // Loaded outside the lock: two threads may load the same URI at once, and both get equal
  // matrices.
  Entry loaded{std::move(key), load_with_report(uri).matrix, std::make_shared<Digest>()};
  if (options_.cache_capacity > 0) {
    std::lock_guard lock(mutex_);
    const bool present = std::any_of(cache_.begin(), cache_.end(),
                                     [&](const Entry& e) { return e.key == loaded.key; });
    if (!present) {
      cache_.push_front(loaded);
      cached_bytes_ += resident_bytes(*loaded.matrix);
      const auto over = [this] {
        return cache_.size() > options_.cache_capacity ||
               (options_.cache_bytes > 0 && cached_bytes_ > options_.cache_bytes);
      };
      while (cache_.size() > 1 && over()) {
        cached_bytes_ -= resident_bytes(*cache_.back().matrix);
        cache_.pop_back();
      }
    }
  }
  return loaded;
}

std::shared_ptr<const SparseMatrix> MatrixStore::load(const MatrixUri& uri) {
  return entry(uri).matrix;
}

DigestedMatrix MatrixStore::load_digested(const MatrixUri& uri) {
  Entry e = entry(uri);
  // Concurrent callers of one entry wait for one computation; the matrix is immutable (shared as
  // const), so its digest stays the digest of what the entry holds.
  std::call_once(e.digest->once, [&e, this] {
    e.digest->value = e.matrix->digest();
    ++digests_computed_;
  });
  return {std::move(e.matrix), e.digest->value};
}

std::shared_ptr<const SparseMatrix> MatrixStore::load(std::string_view uri) {
  return load(MatrixUri::parse(uri));
}

std::vector<std::string> MatrixStore::indexed_uris() const {
  std::vector<std::string> out;
  for (const SuiteSparseIndex& index : indexes_) {
    for (const IndexEntry& e : index.entries()) out.push_back(e.uri());
  }
  return out;
}

std::size_t MatrixStore::cache_size() const {
  std::lock_guard lock(mutex_);
  return cache_.size();
}

std::size_t MatrixStore::cache_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_bytes_;
}

void MatrixStore::clear_cache() {
  std::lock_guard lock(mutex_);
  cache_.clear();
  cached_bytes_ = 0;
}

}  // namespace sparserl::datasets
