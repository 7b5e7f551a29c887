// Internal to sparserl::datasets: how the library writes files. AtomicFile writes a temporary file
// beside the target and renames it into place on commit (or links it, for files that must never be
// replaced), so readers see either nothing or the whole file. GzipWriter deflates into it, and
// tar_member_header builds the one ustar header a single-member archive needs.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sparserl::datasets::detail {

class AtomicFile {
 public:
  // Creates TARGET.tmp-PID-N beside the target (and the target's folder if missing). Throws
  // std::runtime_error naming the target when that fails.
  explicit AtomicFile(std::filesystem::path target);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // removes the temporary file unless committed

  void write(std::string_view bytes);
  [[nodiscard]] std::FILE* file() { return file_; }
  [[nodiscard]] const std::filesystem::path& temp_path() const { return temp_; }

  // Flushes, closes and renames over the target.
  void commit();
  // Like commit but fails (std::runtime_error, "already exists") when the target exists; the check
  // and the creation are one step (a hard link), so two writers cannot both succeed.
  void commit_no_clobber();

 private:
  void close();
  std::filesystem::path target_, temp_;
  std::FILE* file_ = nullptr;
  bool done_ = false;
};

// Streams gzip-compressed bytes into an AtomicFile.
class GzipWriter {
 public:
  explicit GzipWriter(AtomicFile& out, int level = 6);
  GzipWriter(const GzipWriter&) = delete;
  GzipWriter& operator=(const GzipWriter&) = delete;
  ~GzipWriter();
  void write(std::string_view bytes);
  void finish();  // writes the gzip trailer; call before out.commit()

 private:
  void pump(int flush);
  struct State;
  std::unique_ptr<State> state_;
  AtomicFile& out_;
};

// A POSIX ustar header (512 bytes) for a regular file `name` of `size` bytes (mode 0644). Names of
// more than 100 bytes are split into prefix/name at a '/' (std::invalid_argument if impossible).
std::string tar_member_header(const std::string& name, std::uint64_t size);

// The one member of a single-member archive: NAME/NAME.mtx for NAME.tar.gz, NAME.tgz or NAME.tar.
std::string default_archive_member(const std::filesystem::path& archive);

}  // namespace sparserl::datasets::detail
