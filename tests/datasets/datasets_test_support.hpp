// Helpers shared by the datasets tests: writing bytes to files, gzip-compressing with zlib,
// building small tar archives by hand (ustar, with GNU long-name records when asked) so the reader
// is tested against archives it did not write itself, and running the built `sparserl` binary.
#pragma once

#include <zlib.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "sparserl/datasets/generators.hpp"
#include "test_support.hpp"

namespace sparserl::testing {

// A generated matrix from its kind and keys (kron's real factor comes through `loader`).
inline datasets::SparseMatrix generated(std::string kind, std::map<std::string, std::string> params,
                                        const datasets::MatrixLoader& loader = {}) {
  return datasets::generate(datasets::GeneratorSpec{std::move(kind), std::move(params)}, loader);
}

// Pinned digests of generated matrices: each spec gives its digest, the same matrix again, and the
// same matrix through its URI (a change to a generator's output or draw order shows here).
using PinnedDigests = std::vector<std::pair<datasets::GeneratorSpec, std::string>>;
inline void check_pinned_digests(const PinnedDigests& pins,
                                 const datasets::MatrixLoader& loader = {}) {
  for (const auto& [spec, digest] : pins) {
    INFO(spec.uri());
    const auto a = datasets::generate(spec, loader);
    CHECK(a.digest() == digest);
    CHECK(datasets::generate(spec, loader) == a);  // deterministic
    CHECK(datasets::generate(datasets::MatrixUri::parse(spec.uri()), loader) == a);
  }
}

// What the generators say of a spec they refuse (generate() checks a spec as validate() does,
// before anything is built); "(no error)" for a spec they accept.
inline std::string spec_error(std::string kind, std::map<std::string, std::string> params) {
  try {
    datasets::validate(datasets::GeneratorSpec{std::move(kind), std::move(params)});
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// Regular files anywhere under `dir` (0 when it does not exist): what a failed download left.
inline std::size_t files_under(const std::filesystem::path& dir) {
  std::size_t n = 0;
  if (!std::filesystem::exists(dir)) return 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    n += e.is_regular_file() ? 1 : 0;
  }
  return n;
}

// One gzip member holding `bytes`.
inline std::string gzip(const std::string& bytes) {
  z_stream zs{};
  if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2");
  }
  std::string out(deflateBound(&zs, static_cast<uLong>(bytes.size())) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(out.size() - zs.avail_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate");
  return out;
}

// A ustar header block; `type` '0' for files, 'L' for a GNU long-name record.
inline std::string tar_header(const std::string& name, std::size_t size, char type = '0') {
  std::string h(512, '\0');
  h.replace(0, std::min<std::size_t>(name.size(), 100), name.substr(0, 100));
  auto octal = [&h](std::size_t at, std::size_t width, unsigned long long v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%0*llo", static_cast<int>(width - 1), v);
    h.replace(at, width - 1, buf);
  };
  octal(100, 8, 0644);
  octal(108, 8, 1000);
  octal(116, 8, 1000);
  octal(124, 12, size);
  octal(136, 12, 1700000000);
  h[156] = type;
  h.replace(257, 8, std::string("ustar  \0", 8));  // GNU magic, as GNU tar writes it
  h.replace(148, 8, "        ");
  unsigned sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06o", sum);
  h.replace(148, 6, buf);
  h[154] = '\0';
  h[155] = ' ';
  return h;
}

// A tar stream of (name, content) members; names over 100 bytes get a GNU 'L' record.
inline std::string make_tar(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string out;
  auto pad = [&out]() { out.append((512 - out.size() % 512) % 512, '\0'); };
  for (const auto& [name, content] : members) {
    if (name.size() > 100) {
      out += tar_header("././@LongLink", name.size() + 1, 'L');
      out += name;
      out += '\0';
      pad();
    }
    out += tar_header(name, content.size());
    out += content;
    pad();
  }
  out.append(1024, '\0');
  return out;
}

#ifdef SPARSERL_CLI_PATH
// Runs the built `sparserl data ARGS` (ARGS shell-quoted by the caller). SPARSERL_DATA_DIR is
// cleared so that the default ./data applies unless a test sets --data-dir.
inline CommandResult sparserl_data(const std::string& args) {
  return run_shell("env -u SPARSERL_DATA_DIR " + shell_quote(SPARSERL_CLI_PATH) + " data " + args);
}
#endif

}  // namespace sparserl::testing
