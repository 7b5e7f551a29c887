// The download path end to end over HTTP: a local server (tests/support/http_test_server.hpp)
// serves a SuiteSparse-layout tree MM/GROUP/NAME.tar.gz made from real shared matrices, and
// download_matrix fetches from http://127.0.0.1:PORT/MM with libcurl over TCP, as it would from the
// collection. A fetched archive loads through the store equal to the original; an archive already
// present costs no request; a 404, a cut transfer, a connection closed without a response, a
// transfer slower than the low-speed limit, a redirect loop and a corrupt archive are
// DownloadErrors naming the URL that leave nothing in the data directory; redirects (301 to a path,
// 302 to an absolute URL) are followed. The whole file is skipped (exit 77) when the build has no
// libcurl.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "catch.hpp"
#include "datasets_test_support.hpp"
#include "http_test_server.hpp"
#include "sparserl/datasets/download.hpp"
#include "sparserl/datasets/matrix_market.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "test_support.hpp"

namespace ds = sparserl::datasets;
namespace fs = std::filesystem;
using namespace sparserl::testing;

namespace {

// A scratch folder with www/MM/GROUP/NAME.tar.gz written from real shared matrices, and the
// matrices as the store loads them from ../shared.
struct Collection {
  fs::path dir;
  fs::path www;
  fs::path data;
  std::map<std::string, ds::SparseMatrix> originals;  // by GROUP/NAME
};

Collection make_collection(const std::string& test_name) {
  if (!ds::download_available()) {
    sparserl::testing::skip("this build has no libcurl: nothing downloads");
  }
  Collection c;
  c.dir = sparserl::testing::scratch_dir(test_name);
  c.www = c.dir / "www";
  c.data = c.dir / "data";
  ds::StoreOptions options;
  options.indexes = {sparserl::testing::shared_matrices_dir()};
  ds::MatrixStore shared(c.dir / "no-data", options);
  for (const std::string key : {"HB/west0067", "HB/494_bus"}) {
    const auto a = shared.load("suitesparse-v1/" + key);
    ds::write_matrix_market_archive(c.www / "MM" / (key + ".tar.gz"), *a);
    c.originals.emplace(key, *a);
  }
  return c;
}

ds::DownloadOptions from(const HttpTestServer& server) {
  ds::DownloadOptions options;
  options.base_url = server.url() + "/MM";
  options.connect_timeout_s = 5;
  return options;
}

const auto kWest = ds::MatrixUri::parse("suitesparse-v1/HB/west0067");

}  // namespace

TEST_CASE("downloads over HTTP land in the data directory and load equal to the original",
          "[datasets][download][http]") {
  Collection c = make_collection("http_download");
  HttpTestServer server(c.www);
  ds::DownloadOptions options = from(server);
  std::int64_t last_received = -1, last_total = -1;
  options.progress = [&](std::int64_t received, std::int64_t total) {
    last_received = received;
    last_total = total;
  };
  for (const std::string key : {"HB/west0067", "HB/494_bus"}) {
    INFO(key);
    const auto uri = ds::MatrixUri::parse("suitesparse-v1/" + key);
    const fs::path got = ds::download_matrix(uri, c.data, options);
    CHECK(got == c.data / "suitesparse" / (key + ".tar.gz"));
    CHECK(sparserl::testing::read_bytes(got) ==
          sparserl::testing::read_bytes(c.www / "MM" / (key + ".tar.gz")));
    CHECK(server.requests("/MM/" + key + ".tar.gz") == 1);
    // The server announced the length: the progress callback saw the whole of it.
    CHECK(last_total == static_cast<std::int64_t>(fs::file_size(got)));
    CHECK(last_received == last_total);
    ds::MatrixStore store(c.data);
    CHECK(*store.load(uri) == c.originals.at(key));
  }
  CHECK(files_under(c.data) == 2);

  SECTION("an archive already present costs no request") {
    const std::size_t before = server.requests();
    CHECK(ds::download_matrix(kWest, c.data, options) ==
          c.data / "suitesparse" / "HB" / "west0067.tar.gz");
    CHECK(server.requests() == before);
    options.overwrite = true;
    (void)ds::download_matrix(kWest, c.data, options);
    CHECK(server.requests() == before + 1);
    CHECK(files_under(c.data) == 2);
  }
}

TEST_CASE("HTTP failures name the URL and leave nothing behind", "[datasets][download][http]") {
  Collection c = make_collection("http_download_failures");
  HttpTestServer server(c.www);
  ds::DownloadOptions options = from(server);
  const std::string url = server.url() + "/MM/HB/west0067.tar.gz";
  const std::string path = "/MM/HB/west0067.tar.gz";
  const std::size_t size = fs::file_size(c.www / "MM" / "HB" / "west0067.tar.gz");

  SECTION("404") {
    const auto missing = ds::MatrixUri::parse("suitesparse-v1/HB/nothere");
    CHECK_THROWS_AS(ds::download_matrix(missing, c.data, options), ds::DownloadError);
    CHECK_THROWS_WITH(ds::download_matrix(missing, c.data, options),
                      has_substring(server.url() + "/MM/HB/nothere.tar.gz: download failed") &&
                          has_substring("404"));
    CHECK(server.requests("/MM/HB/nothere.tar.gz") == 2);
  }
  SECTION("a server error") {
    server.fail_with(path, 503);
    CHECK_THROWS_WITH(ds::download_matrix(kWest, c.data, options),
                      has_substring(url + ": download failed") && has_substring("503"));
  }
  SECTION("a body cut short") {
    server.truncate(path, size / 2);
    CHECK_THROWS_WITH(ds::download_matrix(kWest, c.data, options),
                      has_substring(url + ": download failed") &&
                          has_substring(std::to_string(size - size / 2) + " bytes remaining"));
    CHECK(server.requests(path) == 1);
  }
  SECTION("a connection closed without a response") {
    server.close_without_response(path);
    CHECK_THROWS_WITH(ds::download_matrix(kWest, c.data, options),
                      has_substring(url + ": download failed") && has_substring("Empty reply"));
  }
  SECTION("a transfer below the low-speed limit is abandoned") {
    server.slow(path, 16, std::chrono::milliseconds(250));  // 64 bytes/s, under 1 KiB/s
    options.low_speed_timeout_s = 1;
    CHECK_THROWS_WITH(ds::download_matrix(kWest, c.data, options),
                      has_substring(url + ": download failed") && has_substring("too slow"));
  }
  SECTION("a redirect loop") {
    server.redirect(path, path, 302);
    CHECK_THROWS_WITH(ds::download_matrix(kWest, c.data, options),
                      has_substring(url + ": download failed") && has_substring("redirects"));
    CHECK(server.requests(path) == 11);  // the first request and the 10 redirects allowed
  }
  SECTION("a corrupt archive served whole") {
    std::string bytes = sparserl::testing::read_bytes(c.www / "MM" / "HB" / "west0067.tar.gz");
    for (std::size_t i = 20; i + 10 < bytes.size(); i += 3)
      bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
    sparserl::testing::write_bytes(c.www / "MM" / "HB" / "corrupt.tar.gz", bytes);
    const auto corrupt = ds::MatrixUri::parse("suitesparse-v1/HB/corrupt");
    CHECK_THROWS_WITH(
        ds::download_matrix(corrupt, c.data, options),
        has_substring(server.url() + "/MM/HB/corrupt.tar.gz: the downloaded file is not a readable "
                                     "archive of suitesparse-v1/HB/corrupt"));
    CHECK(server.requests("/MM/HB/corrupt.tar.gz") == 1);
  }
  CHECK(files_under(c.data) == 0);
  CHECK_FALSE(ds::MatrixStore(c.data).find(kWest));
}

TEST_CASE("HTTP redirects are followed and slow transfers within the limit arrive whole",
          "[datasets][download][http]") {
  Collection c = make_collection("http_download_redirects");
  const fs::path mirrored = c.www / "mirror" / "HB" / "west0067.tar.gz";
  fs::create_directories(mirrored.parent_path());
  fs::copy_file(c.www / "MM" / "HB" / "west0067.tar.gz", mirrored);
  fs::remove(c.www / "MM" / "HB" / "west0067.tar.gz");
  HttpTestServer server(c.www);
  ds::DownloadOptions options = from(server);

  SECTION("301 to a path on the same server") {
    server.redirect("/MM/HB/west0067.tar.gz", "/mirror/HB/west0067.tar.gz", 301);
    (void)ds::download_matrix(kWest, c.data, options);
    CHECK(server.request_log() ==
          std::vector<std::string>{"/MM/HB/west0067.tar.gz", "/mirror/HB/west0067.tar.gz"});
  }
  SECTION("302 to an absolute URL, through a second redirect") {
    server.redirect("/MM/HB/west0067.tar.gz", server.url() + "/hop/west0067.tar.gz", 302);
    server.redirect("/hop/west0067.tar.gz", "/mirror/HB/west0067.tar.gz", 302);
    (void)ds::download_matrix(kWest, c.data, options);
    CHECK(server.request_log() == std::vector<std::string>{"/MM/HB/west0067.tar.gz",
                                                           "/hop/west0067.tar.gz",
                                                           "/mirror/HB/west0067.tar.gz"});
  }
  SECTION("a slow body above the limit") {
    server.redirect("/MM/HB/west0067.tar.gz", "/mirror/HB/west0067.tar.gz", 302);
    server.slow("/mirror/HB/west0067.tar.gz", 512, std::chrono::milliseconds(20));
    (void)ds::download_matrix(kWest, c.data, options);
  }
  ds::MatrixStore store(c.data);
  CHECK(*store.load(kWest) == c.originals.at("HB/west0067"));
  CHECK(files_under(c.data) == 1);
}
