// Fetching collection archives with libcurl (download.hpp): transfer to a temporary file, check
// that the archive reads as its matrix, then rename into the data directory. Compiled against
// libcurl only when SPARSERL_HAVE_CURL is defined; otherwise download_matrix explains that this
// build cannot.
#include "sparserl/datasets/download.hpp"

#include <cstdio>
#include <memory>
#include <mutex>

#include "compressed_output.hpp"
#include "sparserl/datasets/matrix_market.hpp"
#include "sparserl/datasets/matrix_store.hpp"

#ifdef SPARSERL_HAVE_CURL
#include <curl/curl.h>
#endif

namespace sparserl::datasets {

std::string archive_url(const MatrixUri& uri, std::string_view base_url) {
  if (uri.scheme != MatrixUri::Scheme::suitesparse) {
    throw std::invalid_argument("only suitesparse-v1 matrices can be downloaded, not '" +
                                uri.str() + "'");
  }
  std::string base(base_url);
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/" + uri.group + "/" + uri.name + ".tar.gz";
}

#ifdef SPARSERL_HAVE_CURL

bool download_available() { return true; }

namespace {

struct Transfer {
  std::FILE* file = nullptr;
  const DownloadOptions* options = nullptr;
};

std::size_t on_data(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  return std::fwrite(data, size, count, t->file) * size;
}

int on_progress(void* user, curl_off_t total, curl_off_t received, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->options->progress) t->options->progress(received, total);
  return 0;
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

std::filesystem::path download_matrix(const MatrixUri& uri, const std::filesystem::path& data_dir,
                                      const DownloadOptions& options) {
  const std::string url = archive_url(uri, options.base_url);
  std::filesystem::path target = data_dir / archive_relative_path(uri);
  std::error_code ec;
  if (!options.overwrite && std::filesystem::is_regular_file(target, ec)) return target;
  global_init();

  std::unique_ptr<detail::AtomicFile> out;
  try {
    out = std::make_unique<detail::AtomicFile>(target);
  } catch (const std::runtime_error& e) {
    throw DownloadError(url + ": " + e.what());
  }
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw DownloadError(url + ": curl_easy_init failed");
  Transfer transfer{out->file(), &options};
  char error[CURL_ERROR_SIZE] = {0};
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "sparserl-gym/0.1 (libcurl)");
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_s);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, options.low_speed_timeout_s);
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85: the string forms; the bitmask forms are deprecated
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https,file");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, options.progress ? 0L : 1L);
  const CURLcode rc = curl_easy_perform(h);
  if (rc != CURLE_OK) {
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    std::string what = error[0] != '\0' ? std::string(error) : std::string(curl_easy_strerror(rc));
    while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
    if (status >= 400 && what.find(std::to_string(status)) == std::string::npos) {
      what += " (HTTP " + std::to_string(status) + ")";
    }
    throw DownloadError(url + ": download failed: " + what);
  }
  if (std::fflush(out->file()) != 0) throw DownloadError(url + ": cannot write " + target.string());

  // Only an archive that reads as its matrix enters the data directory.
  ReadOptions check;
  check.archive_member = uri.name + "/" + uri.name + ".mtx";
  try {
    (void)read_matrix_market(out->temp_path(), check);
  } catch (const MatrixMarketError& e) {
    throw DownloadError(url + ": the downloaded file is not a readable archive of " + uri.str() +
                        ": " + e.what());
  }
  try {
    out->commit();
  } catch (const std::runtime_error& e) {
    throw DownloadError(url + ": " + e.what());
  }
  return target;
}

#else  // no libcurl

bool download_available() { return false; }

std::filesystem::path download_matrix(const MatrixUri& uri, const std::filesystem::path&,
                                      const DownloadOptions& options) {
  const std::string url = archive_url(uri, options.base_url);
  throw DownloadError(url +
                      ": this build of sparserl has no download support (libcurl was not "
                      "found when it was configured; install libcurl4-openssl-dev and rebuild, or "
                      "download the archive yourself into DATA_DIR/" +
                      archive_relative_path(uri).string() + ")");
}

#endif

}  // namespace sparserl::datasets
