// `sparserl data fetch`: collection archives into the data directory. One URI (`fetch URI`), or
// every collection matrix of a split's part that is not present yet (`fetch --split FILE --part
// P`), with progress on stderr and a final count of fetched, already present and failed matrices.
// A failed matrix is reported with its URI and the error and the run goes on; the exit status is 1
// when any failed, so a script can run it again to retry the rest.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "cli.hpp"
#include "data_command.hpp"
#include "sparserl/datasets/download.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/experiments/progress.hpp"

namespace sparserl::tools::data {
namespace {

namespace fs = std::filesystem;

std::string megabytes(std::uintmax_t bytes) {
  return fixed(static_cast<double>(bytes) / 1e6, bytes < 100'000'000 ? 2 : 1) + " MB";
}

ds::DownloadOptions download_options(const DataArgs& args) {
  ds::DownloadOptions options;
  options.base_url = args.base_url;
  options.overwrite = args.overwrite;
  return options;
}

int run_fetch_uri(const DataArgs& args) {
  const ds::MatrixUri uri = parse_uri_argument(*args.input);
  if (uri.scheme != ds::MatrixUri::Scheme::suitesparse) {
    throw UsageError("fetch takes a suitesparse-v1 URI, not '" + uri.str() + "'");
  }
  ds::DownloadOptions options = download_options(args);
  if (::isatty(2) != 0) {
    options.progress = [last = std::chrono::steady_clock::time_point()](
                           std::int64_t got, std::int64_t total) mutable {
      const auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::milliseconds(200)) return;
      last = now;
      std::fprintf(
          stderr, "\r  %.1f MB%s", static_cast<double>(got) / 1e6,
          total > 0 ? (" of " + fixed(static_cast<double>(total) / 1e6, 1) + " MB").c_str() : "");
    };
  }
  const fs::path dir = data_dir(args);
  const fs::path expected = dir / ds::archive_relative_path(uri);
  std::error_code exists_ec;
  const bool present = !options.overwrite && fs::is_regular_file(expected, exists_ec);
  const auto start = std::chrono::steady_clock::now();
  const fs::path got = ds::download_matrix(uri, dir, options);
  if (options.progress) std::fprintf(stderr, "\n");
  if (present) {
    std::cout << uri.str() << ": already present at " << got.string() << "\n";
  } else {
    std::cout << uri.str() << ": fetched " << ds::archive_url(uri, options.base_url) << " to "
              << got.string() << " (" << fs::file_size(got) << " bytes, "
              << fixed(seconds_since(start), 2) << " s)\n";
  }
  return 0;
}

// Which entries of the part to fetch: --regime (repeatable) and --source. A version-1 split has
// no regimes and lists the matrices of its one index, so its default source is every entry.
ds::SplitSelection fetch_selection(const DataArgs& args, const ds::Split& split) {
  ds::SplitSelection selection;
  const bool v1 = split.version == ds::Split::kFormatVersion;
  for (const std::string& text : args.regimes) {
    const auto regime = ds::parse_regime(text);
    if (v1) {
      throw UsageError("--regime: " + split.name +
                       " is a version-1 split file, which records no regimes");
    }
    selection.regimes.push_back(*regime);
  }
  const std::string source = args.source.value_or(v1 ? "all" : "catalogue");
  if (source == "all") {
    selection.sources = {ds::MatrixSource::shared, ds::MatrixSource::catalogue};
  } else {
    selection.sources = {*ds::parse_matrix_source(source)};  // shared or catalogue
  }
  return selection;
}

// data fetch --split FILE --part P: the part's missing collection matrices, one after another.
int run_fetch_split(const DataArgs& args) {
  const auto part = ds::parse_split_part(args.part);
  const long long max = args.max;
  const ds::Split split = ds::read_split(*args.split);
  const ds::SplitSelection selection = fetch_selection(args, split);
  const ds::DownloadOptions options = download_options(args);
  const fs::path dir = data_dir(args);
  const ds::MatrixStore store(dir, store_options(args));

  std::vector<ds::SplitEntry> missing;
  std::size_t selected = 0, already = 0;
  for (const ds::SplitEntry& e : split.select(*part, selection)) {
    if (e.uri.rfind("suitesparse-v1/", 0) != 0) continue;
    ++selected;
    if (present(store, e)) {
      ++already;
    } else {
      missing.push_back(e);
    }
  }
  const std::size_t attempt = std::min<std::size_t>(missing.size(), static_cast<std::size_t>(max));
  std::cout << "split " << split.name << " (" << *args.split << "), part " << ds::to_string(*part)
            << ", " << selection.describe() << ": " << selected << " collection matrices, "
            << already << " present, " << missing.size() << " missing";
  if (attempt < missing.size()) std::cout << ", " << attempt << " to fetch (--max " << max << ")";
  std::cout << "\nfrom " << options.base_url << " into " << dir.string() << std::endl;
  if (args.dry_run) {
    for (std::size_t i = 0; i < attempt; ++i) {
      const ds::MatrixUri uri = ds::MatrixUri::parse(missing[i].uri);
      std::cout << "would fetch " << uri.str() << " (" << missing[i].nnz << " nonzeros) from "
                << ds::archive_url(uri, options.base_url) << "\n";
    }
    std::cout << "dry run: nothing fetched; " << attempt << " to fetch, " << already
              << " already present\n";
    return 0;
  }

  experiments::ProgressOptions progress_options;
  progress_options.unit = "matrices";
  experiments::Progress progress("fetch", static_cast<std::int64_t>(attempt), std::cerr,
                                 progress_options);
  const auto start = std::chrono::steady_clock::now();
  std::size_t fetched = 0, failed = 0;
  std::uintmax_t bytes = 0;
  for (std::size_t i = 0; i < attempt; ++i) {
    const ds::MatrixUri uri = ds::MatrixUri::parse(missing[i].uri);
    try {
      const fs::path got = ds::download_matrix(uri, dir, options);
      std::error_code ec;
      bytes += fs::file_size(got, ec);
      ++fetched;
    } catch (const std::exception& e) {
      ++failed;
      // On a terminal the progress line is erased first; the next advance redraws it.
      std::cerr << (::isatty(2) != 0 ? "\r\x1b[K" : "") << "failed " << uri.str() << ": "
                << e.what() << "\n";
    }
    progress.advance(1, uri.str() + " (" + megabytes(bytes) + " so far)");
  }
  progress.finish();
  std::cout << "fetched " << fetched << ", already present " << already << ", failed " << failed;
  if (attempt < missing.size()) std::cout << ", not attempted " << missing.size() - attempt;
  std::cout << " (" << megabytes(bytes) << " in " << fixed(seconds_since(start), 1) << " s)\n";
  return failed > 0 ? 1 : 0;
}

}  // namespace

int run_fetch(const DataArgs& args) {
  if (args.split) return run_fetch_split(args);
  if (!args.input) throw UsageError("fetch takes a suitesparse-v1 URI or --split FILE --part P");
  return run_fetch_uri(args);
}

}  // namespace sparserl::tools::data
