// The byte sources of compressed_input.hpp: plain files read in big unbuffered blocks, zlib
// inflation of gzip streams, and a tar walker that understands the headers GNU tar and Python's
// tarfile write.
#include "compressed_input.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace sparserl::datasets::detail {

std::size_t read_fully(ByteSource& src, char* dst, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    const std::size_t r = src.read(dst + got, n - got);
    if (r == 0) break;
    got += r;
  }
  return got;
}

// ---- plain files and memory
// ------------------------------------------------------------------------

FileSource::FileSource(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError("cannot open: it is a directory");
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr) {
    throw InputError(std::string("cannot open: ") + std::strerror(errno));
  }
  // The reader asks for multi-megabyte blocks; stdio's own buffer would only add a copy.
  std::setvbuf(file_, nullptr, _IONBF, 0);
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec) size_ = size;
}

FileSource::~FileSource() {
  if (file_ != nullptr) std::fclose(file_);
}

std::size_t FileSource::read(char* dst, std::size_t n) {
  const std::size_t r = std::fread(dst, 1, n, file_);
  if (r == 0 && std::ferror(file_) != 0) {
    throw InputError(std::string("read failed: ") + std::strerror(errno));
  }
  return r;
}

std::size_t MemorySource::read(char* dst, std::size_t n) {
  const std::size_t r = std::min(n, bytes_.size());
  std::memcpy(dst, bytes_.data(), r);
  bytes_.remove_prefix(r);
  return r;
}

std::size_t ReplaySource::read(char* dst, std::size_t n) {
  if (at_ < prefix_.size()) {
    const std::size_t r = std::min(n, prefix_.size() - at_);
    std::memcpy(dst, prefix_.data() + at_, r);
    at_ += r;
    return r;
  }
  return inner_.read(dst, n);
}

std::optional<std::uint64_t> ReplaySource::size_hint() const {
  auto inner = inner_.size_hint();
  if (!inner) return std::nullopt;
  return *inner + (prefix_.size() - at_);
}

// ---- gzip
// --------------------------------------------------------------------------------------------

bool is_gzip_magic(const char* bytes, std::size_t n) {
  return n >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

struct GzipSource::State {
  z_stream zs{};
  std::vector<unsigned char> in = std::vector<unsigned char>(std::size_t{1} << 18);
  bool in_eof = false;
  bool finished = false;
};

GzipSource::GzipSource(ByteSource& compressed)
    : state_(std::make_unique<State>()), in_(compressed) {
  // 15 + 32: the largest window, and accept both gzip and zlib headers.
  if (inflateInit2(&state_->zs, 15 + 32) != Z_OK) throw InputError("zlib: inflateInit2 failed");
}

GzipSource::~GzipSource() { inflateEnd(&state_->zs); }

bool GzipSource::refill() {
  State& s = *state_;
  if (s.in_eof) return false;
  const std::size_t r = in_.read(reinterpret_cast<char*>(s.in.data()), s.in.size());
  if (r == 0) {
    s.in_eof = true;
    return false;
  }
  s.zs.next_in = s.in.data();
  s.zs.avail_in = static_cast<uInt>(r);
  return true;
}

std::size_t GzipSource::read(char* dst, std::size_t n) {
  State& s = *state_;
  if (s.finished || n == 0) return 0;
  s.zs.next_out = reinterpret_cast<Bytef*>(dst);
  s.zs.avail_out = static_cast<uInt>(std::min<std::size_t>(n, 1U << 30));
  const uInt wanted = s.zs.avail_out;
  while (s.zs.avail_out == wanted) {
    if (s.zs.avail_in == 0 && !refill()) {
      throw InputError("truncated gzip stream (the compressed data ends early)");
    }
    const int ret = inflate(&s.zs, Z_NO_FLUSH);
    if (ret == Z_STREAM_END) {
      // gzip allows several members back to back (pigz, `cat a.gz b.gz`); a tail of zero bytes
      // (block-padded tapes and some archivers) is tolerated, anything else is an error.
      for (;;) {
        while (s.zs.avail_in > 0 && *s.zs.next_in == 0) {
          ++s.zs.next_in;
          --s.zs.avail_in;
        }
        if (s.zs.avail_in > 0) break;
        if (!refill()) {
          s.finished = true;
          return wanted - s.zs.avail_out;
        }
      }
      if (s.zs.avail_in >= 1 && *s.zs.next_in != 0x1f) {
        throw InputError("unexpected bytes after the end of the gzip stream");
      }
      inflateReset(&s.zs);
      continue;
    }
    if (ret == Z_DATA_ERROR) {
      throw InputError(std::string("corrupt gzip stream (zlib: ") +
                       (s.zs.msg != nullptr ? s.zs.msg : "data error") + ")");
    }
    if (ret == Z_MEM_ERROR) throw InputError("zlib: out of memory");
    if (ret != Z_OK && ret != Z_BUF_ERROR) {
      throw InputError("zlib: inflate failed with code " + std::to_string(ret));
    }
  }
  return wanted - s.zs.avail_out;
}

// ---- tar
// ---------------------------------------------------------------------------------------------

namespace {

constexpr std::size_t kBlock = 512;

std::optional<std::uint64_t> parse_numeric_field(const char* field, std::size_t len) {
  const auto* u = reinterpret_cast<const unsigned char*>(field);
  if ((u[0] & 0x80U) != 0) {  // GNU base-256 for sizes of 8 GiB and more
    std::uint64_t v = u[0] & 0x7fU;
    for (std::size_t i = 1; i < len; ++i) v = (v << 8) | u[i];
    return v;
  }
  std::size_t i = 0;
  while (i < len && (field[i] == ' ' || field[i] == '\0')) ++i;
  std::uint64_t v = 0;
  bool any = false;
  for (; i < len && field[i] >= '0' && field[i] <= '7'; ++i) {
    v = v * 8 + static_cast<std::uint64_t>(field[i] - '0');
    any = true;
  }
  for (; i < len; ++i) {
    if (field[i] != ' ' && field[i] != '\0') return std::nullopt;
  }
  if (!any) return 0;
  return v;
}

std::string c_string(const char* field, std::size_t len) {
  return {field, static_cast<std::size_t>(std::find(field, field + len, '\0') - field)};
}

std::string normalise_name(std::string name) {
  while (name.rfind("./", 0) == 0) name.erase(0, 2);
  return name;
}

}  // namespace

bool is_tar_header(const char* block) {
  const auto stored = parse_numeric_field(block + 148, 8);
  if (!stored) return false;
  std::uint64_t unsigned_sum = 0;
  std::int64_t signed_sum = 0;
  bool all_zero = true;
  for (std::size_t i = 0; i < kBlock; ++i) {
    const char c = (i >= 148 && i < 156) ? ' ' : block[i];
    unsigned_sum += static_cast<unsigned char>(c);
    signed_sum += static_cast<signed char>(c);
    if (block[i] != 0) all_zero = false;
  }
  if (all_zero) return false;
  return *stored == unsigned_sum || static_cast<std::int64_t>(*stored) == signed_sum;
}

void TarReader::skip(std::uint64_t n) {
  char scratch[1 << 14];
  while (n > 0) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(n, sizeof scratch));
    const std::size_t got = read_fully(in_, scratch, want);
    offset_ += got;
    if (got < want) throw InputError("truncated tar archive (it ends inside a member)");
    n -= got;
  }
}

std::string TarReader::read_data_as_string(std::uint64_t size) {
  if (size > (std::uint64_t{1} << 20)) throw InputError("tar extended header larger than 1 MiB");
  std::string s(static_cast<std::size_t>(size), '\0');
  if (read_fully(in_, s.data(), s.size()) < s.size()) {
    throw InputError("truncated tar archive (it ends inside an extended header)");
  }
  offset_ += size;
  skip((kBlock - size % kBlock) % kBlock);
  return c_string(s.data(), s.size());
}

std::optional<TarMember> TarReader::next() {
  skip(remaining_ + padding_);
  remaining_ = padding_ = member_size_ = 0;
  std::optional<std::string> long_name;
  for (;;) {
    char header[kBlock];
    const std::size_t got = read_fully(in_, header, kBlock);
    if (got == 0) return std::nullopt;  // no end-of-archive blocks: tolerated
    if (got < kBlock) throw InputError("truncated tar archive (it ends inside a header)");
    const std::uint64_t at = offset_;
    offset_ += kBlock;
    if (std::all_of(header, header + kBlock, [](char c) { return c == 0; })) return std::nullopt;
    if (!is_tar_header(header)) {
      throw InputError("not a tar archive, or a corrupt one (bad header checksum at byte " +
                       std::to_string(at) + ")");
    }
    const auto size = parse_numeric_field(header + 124, 12);
    if (!size)
      throw InputError("corrupt tar header at byte " + std::to_string(at) + " (size field)");
    const char type = header[156];
    if (type == 'L') {  // GNU: the next member's long name is this member's data
      long_name = read_data_as_string(*size);
      continue;
    }
    if (type == 'x') {  // pax: "LEN key=value\n" records; only `path` matters here
      const std::string records = read_data_as_string(*size);
      std::size_t p = 0;
      while (p < records.size()) {
        const std::size_t space = records.find(' ', p);
        if (space == std::string::npos) break;
        std::size_t len = 0;
        for (std::size_t i = p; i < space && records[i] >= '0' && records[i] <= '9'; ++i) {
          len = len * 10 + static_cast<std::size_t>(records[i] - '0');
        }
        if (len == 0 || p + len > records.size()) break;
        const std::string record = records.substr(space + 1, p + len - space - 2);
        if (record.rfind("path=", 0) == 0) long_name = record.substr(5);
        p += len;
      }
      continue;
    }
    if (type == 'g' || type == 'K') {  // pax global header, GNU long link name
      skip(*size + (kBlock - *size % kBlock) % kBlock);
      continue;
    }
    TarMember m;
    if (long_name) {
      m.name = *long_name;
    } else {
      m.name = c_string(header, 100);
      const bool posix_ustar = std::memcmp(header + 257, "ustar\0", 6) == 0;
      const std::string prefix = posix_ustar ? c_string(header + 345, 155) : std::string();
      if (!prefix.empty()) m.name = prefix + "/" + m.name;
    }
    m.name = normalise_name(std::move(m.name));
    m.regular = type == '0' || type == '\0' || type == '7';
    // Directories and links carry no data even when a size is written.
    m.size = (m.regular || type == 'S') ? *size : 0;
    remaining_ = m.size;
    padding_ = (kBlock - m.size % kBlock) % kBlock;
    member_size_ = m.size;
    return m;
  }
}

std::size_t TarReader::read(char* dst, std::size_t n) {
  if (remaining_ == 0) return 0;
  const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(n, remaining_));
  const std::size_t got = in_.read(dst, want);
  if (got == 0) throw InputError("truncated tar archive (it ends inside a member)");
  remaining_ -= got;
  offset_ += got;
  return got;
}

}  // namespace sparserl::datasets::detail
