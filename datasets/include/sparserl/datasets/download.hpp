// Downloading SuiteSparse matrices: the collection's archive of a suitesparse-v1 URI, fetched from
// BASE_URL/GROUP/NAME.tar.gz into DATA_DIR/suitesparse/GROUP/NAME.tar.gz, where the matrix store
// finds it. The transfer goes to a temporary file beside the target; the archive must then read as
// a Matrix Market matrix (member NAME/NAME.mtx) before it is renamed into place, so a data
// directory never holds a partial or corrupt archive. Built on libcurl (redirects followed, HTTP
// errors are failures); a build without libcurl keeps the functions and throws DownloadError saying
// so.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "sparserl/datasets/task.hpp"

namespace sparserl::datasets {

class DownloadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::string_view kDefaultSuiteSparseBaseUrl =
    "https://suitesparse-collection-website.herokuapp.com/MM";

struct DownloadOptions {
  std::string base_url = std::string(kDefaultSuiteSparseBaseUrl);
  bool overwrite = false;  // fetch again even when the archive is already there
  long connect_timeout_s = 30;
  long low_speed_timeout_s = 60;  // give up when under 1 KiB/s for this long
  // Called now and then with bytes received and the total (0 when the server does not say).
  std::function<void(std::int64_t received, std::int64_t total)> progress;
};

// True when this build can download (it was linked with libcurl).
bool download_available();

// BASE_URL/GROUP/NAME.tar.gz (one '/' between base and group whatever the base ends with).
std::string archive_url(const MatrixUri& uri, std::string_view base_url);

// Fetches the archive of a suitesparse-v1 URI into data_dir and returns its path. An archive
// already present is kept (and returned) unless options.overwrite. Throws DownloadError naming the
// URL for a transfer failure (including HTTP errors and missing file:// files) or an archive that
// does not read, std::invalid_argument for a URI of another scheme.
std::filesystem::path download_matrix(const MatrixUri& uri, const std::filesystem::path& data_dir,
                                      const DownloadOptions& options = {});

}  // namespace sparserl::datasets
