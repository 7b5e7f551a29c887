// Atomic file creation, gzip output through zlib's deflate, ustar headers and the member name of a
// single-member archive (compressed_output.hpp).
#include "compressed_output.hpp"

#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

namespace sparserl::datasets::detail {

namespace {

std::runtime_error io_error(const std::filesystem::path& p, const std::string& what) {
  return std::runtime_error(p.string() + ": " + what);
}

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path target) : target_(std::move(target)) {
  static std::atomic<unsigned> counter{0};
  std::error_code ec;
  const auto parent = target_.parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  temp_ = target_;
  temp_ += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  file_ = std::fopen(temp_.c_str(), "wb");
  if (file_ == nullptr) {
    throw io_error(
        target_, std::string("cannot create a temporary file beside it: ") + std::strerror(errno));
  }
}

AtomicFile::~AtomicFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (!done_) {
    std::error_code ec;
    std::filesystem::remove(temp_, ec);
  }
}

void AtomicFile::write(std::string_view bytes) {
  if (bytes.empty()) return;
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    throw io_error(target_, std::string("write failed: ") + std::strerror(errno));
  }
}

void AtomicFile::close() {
  const bool flushed = std::fflush(file_) == 0;
  const int err = errno;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!flushed || !closed) {
    throw io_error(target_, std::string("write failed: ") + std::strerror(flushed ? errno : err));
  }
}

void AtomicFile::commit() {
  close();
  std::error_code ec;
  std::filesystem::rename(temp_, target_, ec);
  if (ec) throw io_error(target_, "cannot rename the temporary file into place: " + ec.message());
  done_ = true;
}

void AtomicFile::commit_no_clobber() {
  close();
  std::error_code ec;
  std::filesystem::create_hard_link(temp_, target_, ec);
  if (ec == std::errc::file_exists) {
    throw io_error(target_, "already exists (refusing to overwrite it)");
  }
  if (ec) {
    // Filesystems without hard links: check, then rename (a narrow race, reported if lost).
    if (std::filesystem::exists(target_)) {
      throw io_error(target_, "already exists (refusing to overwrite it)");
    }
    std::filesystem::rename(temp_, target_, ec);
    if (ec) throw io_error(target_, "cannot move the temporary file into place: " + ec.message());
    done_ = true;
    return;
  }
  std::filesystem::remove(temp_, ec);
  done_ = true;
}

struct GzipWriter::State {
  z_stream zs{};
  std::vector<unsigned char> out = std::vector<unsigned char>(std::size_t{1} << 18);
  bool finished = false;
};

GzipWriter::GzipWriter(AtomicFile& out, int level) : state_(std::make_unique<State>()), out_(out) {
  // 15 + 16: the largest window with a gzip (not zlib) wrapper.
  if (deflateInit2(&state_->zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("zlib: deflateInit2 failed");
  }
}

GzipWriter::~GzipWriter() { deflateEnd(&state_->zs); }

void GzipWriter::pump(int flush) {
  State& s = *state_;
  for (;;) {
    s.zs.next_out = s.out.data();
    s.zs.avail_out = static_cast<uInt>(s.out.size());
    const int ret = deflate(&s.zs, flush);
    if (ret == Z_STREAM_ERROR) throw std::runtime_error("zlib: deflate failed");
    const std::size_t produced = s.out.size() - s.zs.avail_out;
    out_.write({reinterpret_cast<const char*>(s.out.data()), produced});
    if (flush == Z_FINISH ? ret == Z_STREAM_END : (s.zs.avail_in == 0 && s.zs.avail_out != 0)) {
      return;
    }
  }
}

void GzipWriter::write(std::string_view bytes) {
  while (!bytes.empty()) {
    const std::size_t chunk = std::min<std::size_t>(bytes.size(), 1U << 30);
    state_->zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    state_->zs.avail_in = static_cast<uInt>(chunk);
    pump(Z_NO_FLUSH);
    bytes.remove_prefix(chunk);
  }
}

void GzipWriter::finish() {
  if (state_->finished) return;
  state_->zs.next_in = nullptr;
  state_->zs.avail_in = 0;
  pump(Z_FINISH);
  state_->finished = true;
}

std::string tar_member_header(const std::string& name, std::uint64_t size) {
  std::string h(512, '\0');
  std::string base = name;
  std::string prefix;
  if (base.size() > 100) {
    const std::size_t cut = name.rfind('/', 155);
    if (cut == std::string::npos || name.size() - cut - 1 > 100 || cut == 0) {
      throw std::invalid_argument("tar member name too long for ustar: " + name);
    }
    prefix = name.substr(0, cut);
    base = name.substr(cut + 1);
  }
  auto put = [&h](std::size_t at, std::string_view v) { h.replace(at, v.size(), v); };
  auto octal = [&h](std::size_t at, std::size_t width, std::uint64_t v) {
    // width - 1 octal digits and a NUL, as GNU tar writes them.
    for (std::size_t i = width - 1; i-- > 0;) {
      h[at + i] = static_cast<char>('0' + (v & 7U));
      v >>= 3;
    }
    if (v != 0) throw std::invalid_argument("tar field overflow");
  };
  put(0, base);
  octal(100, 8, 0644);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, size);
  octal(136, 12, 0);  // mtime 0: archives made twice are identical
  h[156] = '0';
  put(257, std::string_view("ustar\0"
                            "00",
                            8));
  put(345, prefix);
  put(148, "        ");
  std::uint64_t sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  octal(148, 7, sum);
  h[155] = ' ';
  return h;
}

std::string default_archive_member(const std::filesystem::path& archive) {
  std::string name = archive.filename().string();
  for (std::string_view suffix : {".tar.gz", ".tgz", ".tar"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      name.resize(name.size() - suffix.size());
      break;
    }
  }
  return name + "/" + name + ".mtx";
}

}  // namespace sparserl::datasets::detail
