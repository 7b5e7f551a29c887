// The compile cache: an LRU list with a hash index under one mutex, and a disk store of one file
// per key. A disk file holds the key, the encoded result and a SHA-256 of both, so a truncated,
// corrupt or renamed file is detected, ignored and replaced. Disk I/O happens outside the lock.
#include "sparserl/reward/compile_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <system_error>

#include "sparserl/reward/digest.hpp"

namespace sparserl::reward {
namespace {

constexpr std::string_view kFileMagic = "sparserl-compile-cache-v1\n";

std::string file_payload(const std::string& key, const CompileResult& result) {
  CompileResult stored = result;
  stored.cached = false;
  std::string body = key + "\n" + serialize(stored);
  const std::string check = sha256_hex(body);
  return std::string(kFileMagic) + check + "\n" + body;
}

std::optional<CompileResult> parse_payload(const std::string& key, std::string_view bytes) {
  if (bytes.substr(0, kFileMagic.size()) != kFileMagic) return std::nullopt;
  bytes.remove_prefix(kFileMagic.size());
  if (bytes.size() < 65 || bytes[64] != '\n') return std::nullopt;
  const std::string_view check = bytes.substr(0, 64);
  const std::string_view body = bytes.substr(65);
  if (sha256_hex(body) != check) return std::nullopt;
  if (body.substr(0, key.size()) != key || body.size() <= key.size() || body[key.size()] != '\n') {
    return std::nullopt;
  }
  return deserialize_compile_result(body.substr(key.size() + 1));
}

bool valid_key(const std::string& key) {
  if (key.size() != 64) return false;
  for (char c : key) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::string compile_cache_key(const CompileRequest& request, std::string_view nvrtc_version) {
  Sha256 h;
  h.update_field("sparserl-compile-key-v1");
  h.update_field(request.source);
  h.update_field(request.arch);
  h.update_field(nvrtc_version);
  h.update_field(request.name);
  const std::vector<std::string> options = nvrtc_options(request);
  h.update_field(std::to_string(options.size()));
  for (const std::string& o : options) h.update_field(o);
  return h.finish_hex();
}

CompileCache::CompileCache(CompileCacheOptions options) : options_(std::move(options)) {
  if (options_.directory) {
    std::error_code ec;
    std::filesystem::create_directories(*options_.directory, ec);  // failures surface as misses
  }
}

std::optional<CompileResult> CompileCache::find(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++stats_.hits;
      CompileResult r = it->second->second;
      r.cached = true;
      return r;
    }
  }
  if (options_.directory) {
    if (auto r = read_disk(key)) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.disk_hits;
      insert_memory(key, *r);
      r->cached = true;
      return r;
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.misses;
  return std::nullopt;
}

void CompileCache::insert(const std::string& key, const CompileResult& result) {
  if (result.internal_error) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.inserts;
    insert_memory(key, result);
  }
  if (options_.directory) write_disk(key, result);
}

void CompileCache::insert_memory(const std::string& key, const CompileResult& result) {
  if (options_.max_entries == 0) return;
  auto it = index_.find(key);
  if (it != index_.end()) {
    it->second->second = result;
    it->second->second.cached = false;
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(key, result);
  lru_.front().second.cached = false;
  index_[key] = lru_.begin();
  while (lru_.size() > options_.max_entries) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  stats_.entries = lru_.size();
}

CompileResult CompileCache::get_or_compile(
    const CompileRequest& request,
    const std::function<CompileResult(const CompileRequest&)>& compiler) {
  static const std::string version = nvrtc_version();
  const std::string key = compile_cache_key(request, version);
  if (auto hit = find(key)) return *hit;
  CompileResult result = compiler ? compiler(request) : compile(request);
  insert(key, result);
  return result;
}

CompileCacheStats CompileCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CompileCacheStats s = stats_;
  s.entries = lru_.size();
  return s;
}

void CompileCache::clear_memory() {
  std::lock_guard<std::mutex> lock(mutex_);
  lru_.clear();
  index_.clear();
  stats_.entries = 0;
}

std::optional<CompileResult> CompileCache::read_disk(const std::string& key) {
  if (!valid_key(key)) return std::nullopt;
  const std::filesystem::path path = *options_.directory / (key + ".compile");
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  in.close();
  auto result = parse_payload(key, bytes.str());
  if (!result) {
    std::error_code ec;
    std::filesystem::remove(path, ec);
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.corrupt_files;
  }
  return result;
}

void CompileCache::write_disk(const std::string& key, const CompileResult& result) {
  if (!valid_key(key)) return;
  static std::atomic<std::uint64_t> counter{0};
  const std::filesystem::path final_path = *options_.directory / (key + ".compile");
  const std::filesystem::path tmp_path =
      *options_.directory /
      (key + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1)));
  {
    std::ofstream out(tmp_path, std::ios::binary | std::ios::trunc);
    if (!out) return;
    const std::string payload = file_payload(key, result);
    out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
    out.flush();
    if (!out) {
      out.close();
      std::error_code ec;
      std::filesystem::remove(tmp_path, ec);
      return;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp_path, final_path, ec);  // atomic on POSIX within one directory
  if (ec) std::filesystem::remove(tmp_path, ec);
}

}  // namespace sparserl::reward
