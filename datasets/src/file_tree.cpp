// read_file_bytes and remove_tree (file_tree.hpp). remove_tree is a depth-first walk with nftw(3)
// that unlinks files and removes folders after their contents, using only the C library - so no
// copy of std::filesystem that LibTorch interposes is ever called.
#include "sparserl/datasets/file_tree.hpp"

#include <ftw.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace sparserl::datasets {

std::optional<std::string> read_file_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return std::move(bytes).str();
}

namespace {

// nftw has no user pointer: the walk's state lives in thread-local variables, one walk per thread.
thread_local std::uintmax_t t_removed = 0;
thread_local int t_errno = 0;
thread_local std::string t_failed;

int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  if (::remove(path) != 0) {
    t_errno = errno;
    t_failed = path;
    return 1;  // stop the walk
  }
  ++t_removed;
  return 0;
}

}  // namespace

std::uintmax_t remove_tree(const std::filesystem::path& path, std::error_code& error) noexcept {
  error.clear();
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno != ENOENT && errno != ENOTDIR) error.assign(errno, std::generic_category());
    return 0;
  }
  t_removed = 0;
  t_errno = 0;
  t_failed.clear();
  if (::nftw(path.c_str(), remove_entry, 32, FTW_DEPTH | FTW_PHYS) != 0) {
    error.assign(t_errno != 0 ? t_errno : errno, std::generic_category());
  }
  return t_removed;
}

std::uintmax_t remove_tree(const std::filesystem::path& path) {
  std::error_code error;
  const std::uintmax_t removed = remove_tree(path, error);
  if (error) {
    throw std::filesystem::filesystem_error(
        "remove_tree: cannot remove " + (t_failed.empty() ? path.string() : t_failed), path, error);
  }
  return removed;
}

}  // namespace sparserl::datasets
