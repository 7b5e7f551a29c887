// A content-addressed cache of compile results: SHA-256 of (source = prelude + program, arch, NVRTC
// version, options) -> CompileResult. RL samples repeat, and a compile costs tens of milliseconds
// while a lookup costs microseconds. In memory it is a bounded LRU, safe to share between threads;
// with a directory it also keeps one file per key, written atomically (temporary file + rename), so
// several processes may share a directory; a corrupt or foreign file is ignored and replaced.
// Failed compiles are cached too (they are as deterministic as good ones); internal errors are not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "sparserl/reward/compiler.hpp"

namespace sparserl::reward {

// The key of a request compiled by the given NVRTC version: 64 hex digits.
std::string compile_cache_key(const CompileRequest& request, std::string_view nvrtc_version);

struct CompileCacheOptions {
  std::size_t max_entries = 4096;                  // in memory; 0 disables the memory level
  std::optional<std::filesystem::path> directory;  // on-disk store, created if absent
};

struct CompileCacheStats {
  std::uint64_t hits = 0;       // memory hits
  std::uint64_t disk_hits = 0;  // found on disk (then kept in memory)
  std::uint64_t misses = 0;
  std::uint64_t inserts = 0;
  std::uint64_t corrupt_files = 0;  // disk entries that could not be read back (replaced)
  std::size_t entries = 0;          // in memory now
};

class CompileCache {
 public:
  explicit CompileCache(CompileCacheOptions options = {});

  // The cached result for the key (with `cached` set), or nullopt.
  std::optional<CompileResult> find(const std::string& key);
  // Stores a result (ignored when result.internal_error). Disk write failures are ignored: the
  // cache is an optimisation, never a reason for an evaluation to fail.
  void insert(const std::string& key, const CompileResult& result);

  // find, else compile with `compiler` (by default compile()) and insert.
  CompileResult get_or_compile(
      const CompileRequest& request,
      const std::function<CompileResult(const CompileRequest&)>& compiler = nullptr);

  [[nodiscard]] CompileCacheStats stats() const;
  [[nodiscard]] const CompileCacheOptions& options() const { return options_; }
  void clear_memory();

 private:
  std::optional<CompileResult> read_disk(const std::string& key);
  void write_disk(const std::string& key, const CompileResult& result);
  void insert_memory(const std::string& key, const CompileResult& result);

  CompileCacheOptions options_;
  mutable std::mutex mutex_;
  std::list<std::pair<std::string, CompileResult>> lru_;  // most recent first
  std::unordered_map<std::string, std::list<std::pair<std::string, CompileResult>>::iterator>
      index_;
  CompileCacheStats stats_;
};

}  // namespace sparserl::reward
