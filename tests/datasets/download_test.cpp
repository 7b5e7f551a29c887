// The download path against a local file:// "collection" built in a scratch folder (no network
// exists here): a fetched archive lands in DATA_DIR/suitesparse/GROUP/NAME.tar.gz and loads through
// the store; a missing file, a corrupt archive and an archive of the wrong matrix are errors naming
// the URL, and none of them leaves a file behind.
#include "sparserl/datasets/download.hpp"

#include <filesystem>
#include <string>

#include "catch.hpp"
#include "datasets_test_support.hpp"
#include "sparserl/datasets/matrix_market.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "test_support.hpp"

namespace ds = sparserl::datasets;
namespace fs = std::filesystem;
using namespace sparserl::testing;

namespace {

}  // namespace

TEST_CASE("archive URLs", "[datasets][download]") {
  const auto uri = ds::MatrixUri::parse("suitesparse-v1/HB/west0067");
  CHECK(ds::archive_url(uri, ds::kDefaultSuiteSparseBaseUrl) ==
        "https://suitesparse-collection-website.herokuapp.com/MM/HB/west0067.tar.gz");
  CHECK(ds::archive_url(uri, "file:///x/MM//") == "file:///x/MM/HB/west0067.tar.gz");
  CHECK_THROWS_AS(ds::archive_url(ds::MatrixUri::parse("gen-v1/diagonal"), "http://x"),
                  std::invalid_argument);
}

TEST_CASE("downloads from a file:// base URL into the data directory", "[datasets][download]") {
  const auto dir = sparserl::testing::scratch_dir("download");
  const auto uri = ds::MatrixUri::parse("suitesparse-v1/HB/m1");
  const std::string base = "file://" + (dir / "collection").string();
  if (!ds::download_available()) {
    ds::DownloadOptions options;
    options.base_url = base;
    CHECK_THROWS_WITH(ds::download_matrix(uri, dir / "data", options),
                      has_substring("no download support"));
    return;
  }
  const ds::SparseMatrix a = ds::SparseMatrix::from_triplets(3, 3, {{0, 0, 1.0}, {2, 1, -0.5}});
  ds::write_matrix_market_archive(dir / "collection" / "HB" / "m1.tar.gz", a);

  ds::DownloadOptions options;
  options.base_url = base;
  std::int64_t last_received = -1;
  options.progress = [&last_received](std::int64_t received, std::int64_t) {
    last_received = received;
  };
  const fs::path got = ds::download_matrix(uri, dir / "data", options);
  CHECK(got == dir / "data" / "suitesparse" / "HB" / "m1.tar.gz");
  CHECK(sparserl::testing::read_bytes(got) ==
        sparserl::testing::read_bytes(dir / "collection" / "HB" / "m1.tar.gz"));
  CHECK(last_received == static_cast<std::int64_t>(fs::file_size(got)));
  CHECK(files_under(dir / "data") == 1);
  ds::MatrixStore store(dir / "data");
  CHECK(*store.load(uri) == a);

  SECTION("an archive already present is kept unless overwrite is asked") {
    const ds::SparseMatrix b = ds::SparseMatrix::from_triplets(3, 3, {{1, 1, 4.0}});
    ds::write_matrix_market_archive(dir / "collection" / "HB" / "m1.tar.gz", b);
    (void)ds::download_matrix(uri, dir / "data", options);
    CHECK(*ds::MatrixStore(dir / "data").load(uri) == a);
    options.overwrite = true;
    (void)ds::download_matrix(uri, dir / "data", options);
    CHECK(*ds::MatrixStore(dir / "data").load(uri) == b);
  }
  SECTION("a missing file is an error naming the URL") {
    const auto missing = ds::MatrixUri::parse("suitesparse-v1/HB/nothere");
    CHECK_THROWS_WITH(ds::download_matrix(missing, dir / "data", options),
                      has_substring(base + "/HB/nothere.tar.gz: download failed"));
    CHECK(files_under(dir / "data") == 1);
  }
  SECTION("a corrupt archive is refused and leaves nothing behind") {
    std::string bytes = sparserl::testing::read_bytes(dir / "collection" / "HB" / "m1.tar.gz");
    for (std::size_t i = 20; i < bytes.size() - 10; i += 3)
      bytes[i] = static_cast<char>(bytes[i] ^ 0x33);
    sparserl::testing::write_bytes(dir / "collection" / "HB" / "bad.tar.gz", bytes);
    sparserl::testing::write_bytes(dir / "collection" / "HB" / "text.tar.gz",
                                   "<html>not found</html>\n");
    const auto bad = ds::MatrixUri::parse("suitesparse-v1/HB/bad");
    CHECK_THROWS_WITH(
        ds::download_matrix(bad, dir / "data", options),
        has_substring(base + "/HB/bad.tar.gz: the downloaded file is not a readable archive "
                             "of suitesparse-v1/HB/bad"));
    CHECK_THROWS_WITH(
        ds::download_matrix(ds::MatrixUri::parse("suitesparse-v1/HB/text"), dir / "data", options),
        has_substring("not a readable archive"));
    CHECK(files_under(dir / "data") == 1);
  }
  SECTION("an archive without NAME/NAME.mtx is refused") {
    fs::copy_file(dir / "collection" / "HB" / "m1.tar.gz", dir / "collection" / "HB" / "m2.tar.gz");
    CHECK_THROWS_WITH(
        ds::download_matrix(ds::MatrixUri::parse("suitesparse-v1/HB/m2"), dir / "data", options),
        has_substring("no member 'm2/m2.mtx' (members: m1/m1.mtx)"));
    CHECK(files_under(dir / "data") == 1);
  }
  SECTION("only suitesparse-v1 URIs download") {
    CHECK_THROWS_AS(
        ds::download_matrix(ds::MatrixUri::parse("gen-v1/diagonal"), dir / "data", options),
        std::invalid_argument);
  }
}
