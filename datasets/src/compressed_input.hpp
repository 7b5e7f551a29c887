// Internal to sparserl::datasets: byte sources the Matrix Market reader pulls big blocks from. A
// plain file, a gzip stream (zlib, concatenated members allowed) over any source, a replay of bytes
// already peeked at, and a tar archive reader that walks members and reads one of them. Sources
// report broken input by throwing InputError with a message that names no file: the reader adds
// file and line.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sparserl::datasets::detail {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ByteSource {
 public:
  ByteSource() = default;
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;
  virtual ~ByteSource() = default;
  // Reads up to n bytes into dst; returns 0 only at the end of the stream.
  virtual std::size_t read(char* dst, std::size_t n) = 0;
  // Total bytes this source will produce, when known without reading it (a plain file's size).
  [[nodiscard]] virtual std::optional<std::uint64_t> size_hint() const { return std::nullopt; }
};

// Reads until n bytes or the end; returns how many were read.
std::size_t read_fully(ByteSource& src, char* dst, std::size_t n);

class FileSource final : public ByteSource {
 public:
  // Throws InputError ("cannot open: REASON") when the file cannot be opened.
  explicit FileSource(const std::filesystem::path& path);
  ~FileSource() override;
  std::size_t read(char* dst, std::size_t n) override;
  [[nodiscard]] std::optional<std::uint64_t> size_hint() const override { return size_; }

 private:
  std::FILE* file_ = nullptr;
  std::optional<std::uint64_t> size_;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  std::size_t read(char* dst, std::size_t n) override;
  [[nodiscard]] std::optional<std::uint64_t> size_hint() const override { return bytes_.size(); }

 private:
  std::string_view bytes_;
};

// Bytes already taken from `inner` (to sniff its format) followed by the rest of `inner`.
class ReplaySource final : public ByteSource {
 public:
  ReplaySource(std::string prefix, ByteSource& inner) : prefix_(std::move(prefix)), inner_(inner) {}
  std::size_t read(char* dst, std::size_t n) override;
  [[nodiscard]] std::optional<std::uint64_t> size_hint() const override;

 private:
  std::string prefix_;
  std::size_t at_ = 0;
  ByteSource& inner_;
};

class GzipSource final : public ByteSource {
 public:
  explicit GzipSource(ByteSource& compressed);
  ~GzipSource() override;
  std::size_t read(char* dst, std::size_t n) override;

 private:
  bool refill();
  struct State;
  std::unique_ptr<State> state_;
  ByteSource& in_;
};

bool is_gzip_magic(const char* bytes, std::size_t n);
// True when `block` (512 bytes) is a tar header with a valid checksum.
bool is_tar_header(const char* block);

struct TarMember {
  std::string name;  // leading "./" removed
  std::uint64_t size = 0;
  bool regular = true;  // a plain file (not a directory, link, ...)
};

// Walks a tar stream (ustar, GNU long names, pax `path` records). Reading past the archive's
// end-of- archive blocks, truncated headers and bad checksums are InputErrors.
class TarReader final : public ByteSource {
 public:
  explicit TarReader(ByteSource& archive) : in_(archive) {}
  // Advances to the next member (skipping what is left of the current one); nullopt at the end.
  std::optional<TarMember> next();
  // Reads the current member's data.
  std::size_t read(char* dst, std::size_t n) override;
  [[nodiscard]] std::optional<std::uint64_t> size_hint() const override { return member_size_; }

 private:
  void skip(std::uint64_t n);
  std::string read_data_as_string(std::uint64_t size);
  ByteSource& in_;
  std::uint64_t remaining_ = 0;  // data bytes of the current member not yet read
  std::uint64_t padding_ = 0;    // zero bytes after it up to the 512-byte boundary
  std::uint64_t member_size_ = 0;
  std::uint64_t offset_ = 0;  // of the archive stream, for messages
};

}  // namespace sparserl::datasets::detail
