// The matrix store: the data directory's search order (.mtx, .mtx.gz, the collection's .tar.gz),
// attached indexes, file: and gen-v1 URIs, the message for a missing matrix, and the LRU cache with
// the digests it keeps.
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "datasets_test_support.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/datasets/matrix_market.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "test_support.hpp"

namespace ds = sparserl::datasets;
using sparserl::testing::has_substring;

namespace {

ds::SparseMatrix small(double v) {
  return ds::SparseMatrix::from_triplets(3, 3, {{0, 0, v}, {2, 1, -v}});
}

}  // namespace

TEST_CASE("the data directory is searched as .mtx, .mtx.gz, then .tar.gz", "[datasets][store]") {
  const auto dir = sparserl::testing::scratch_dir("store_layout");
  const auto base = dir / "suitesparse" / "G";
  ds::write_matrix_market_archive(base / "m.tar.gz", small(3.0));
  ds::MatrixStore store(dir);
  const auto uri = ds::MatrixUri::parse("suitesparse-v1/G/m");
  CHECK(store.resolve(uri) == base / "m.tar.gz");
  CHECK(*store.load(uri) == small(3.0));
  ds::write_matrix_market(base / "m.mtx.gz", small(2.0));
  CHECK(store.resolve(uri) == base / "m.mtx.gz");
  CHECK(*store.load(uri) == small(2.0));
  ds::write_matrix_market(base / "m.mtx", small(1.0));
  CHECK(store.resolve("suitesparse-v1/G/m") == base / "m.mtx");
  const ds::LoadedMatrix loaded = store.load_with_report(uri);
  CHECK(*loaded.matrix == small(1.0));
  CHECK(loaded.file == base / "m.mtx");
  CHECK(loaded.uri == "suitesparse-v1/G/m");
  REQUIRE(loaded.report.has_value());
  CHECK(loaded.report->stored_entries == 2);
  CHECK(ds::archive_relative_path(uri) == std::filesystem::path("suitesparse/G/m.tar.gz"));
}

TEST_CASE("a collection archive with several .mtx members yields NAME/NAME.mtx",
          "[datasets][store]") {
  const auto dir = sparserl::testing::scratch_dir("store_archive");
  const std::string tar =
      sparserl::testing::make_tar({{"m/m_b.mtx", ds::format_matrix_market(small(9.0))},
                                   {"m/m.mtx", ds::format_matrix_market(small(4.0))}});
  sparserl::testing::write_bytes(dir / "suitesparse" / "G" / "m.tar.gz",
                                 sparserl::testing::gzip(tar));
  ds::MatrixStore store(dir);
  CHECK(*store.load("suitesparse-v1/G/m") == small(4.0));
}

TEST_CASE("a missing matrix names the URI and every place looked", "[datasets][store]") {
  const auto dir = sparserl::testing::scratch_dir("store_missing");
  sparserl::testing::write_bytes(dir / "idx" / "INDEX.csv", "file,name,group\ngone.mtx,gone,G\n");
  ds::StoreOptions options;
  options.indexes = {dir / "idx"};
  ds::MatrixStore store(dir / "data", options);
  const auto base = (dir / "data" / "suitesparse" / "G").string();
  try {
    (void)store.load("suitesparse-v1/G/m");
    FAIL("no exception");
  } catch (const ds::MatrixNotFound& e) {
    const std::string what = e.what();
    CHECK_THAT(what, has_substring("matrix suitesparse-v1/G/m not found"));
    CHECK_THAT(what, has_substring(base + "/m.mtx\n"));
    CHECK_THAT(what, has_substring(base + "/m.mtx.gz\n"));
    CHECK_THAT(what, has_substring(base + "/m.tar.gz\n"));
    CHECK_THAT(what, has_substring((dir / "idx" / "INDEX.csv").string() + " (no entry G/m)"));
    CHECK_THAT(what, has_substring("sparserl data fetch suitesparse-v1/G/m"));
  }
  CHECK_THROWS_WITH(store.resolve("suitesparse-v1/G/gone"),
                    has_substring("gone.mtx (listed in " + (dir / "idx" / "INDEX.csv").string() +
                                  " line 2, but missing)"));
  CHECK_FALSE(store.find(ds::MatrixUri::parse("suitesparse-v1/G/gone")).has_value());
  CHECK_THROWS_WITH(store.load("file:" + (dir / "no.mtx").string()),
                    has_substring("matrix file:" + (dir / "no.mtx").string() + " not found"));
  CHECK_THROWS_AS(store.load("suitesparse-v1/G"), ds::InvalidUri);
  ds::StoreOptions nowhere;
  nowhere.indexes = {dir / "nowhere"};
  CHECK_THROWS_WITH(ds::MatrixStore(dir, nowhere), has_substring("cannot open the index"));
}

TEST_CASE("attached indexes resolve the shared matrices", "[datasets][store]") {
  const auto shared = sparserl::testing::shared_matrices_dir();
  ds::StoreOptions options;
  options.indexes = {shared};
  ds::MatrixStore store(sparserl::testing::scratch_dir("store_shared"), options);
  CHECK(store.resolve("suitesparse-v1/HB/west0067") == shared / "suitesparse" / "west0067.mtx");
  CHECK(store.load("suitesparse-v1/HB/west0067")->nnz() == 294);
  CHECK(store.load("suitesparse-v1/ungrouped/arrow")->rows() == 100);
  CHECK(store.indexed_uris().size() == store.indexes().front().size());
  CHECK(store.indexed_uris().front().rfind("suitesparse-v1/", 0) == 0);
}

TEST_CASE("file: and gen-v1 URIs", "[datasets][store]") {
  const auto dir = sparserl::testing::scratch_dir("store_other");
  ds::write_matrix_market(dir / "x.mtx.gz", small(5.0));
  ds::MatrixStore store(dir);
  CHECK(*store.load("file:" + (dir / "x.mtx.gz").string()) == small(5.0));
  const std::string gen = "gen-v1/diagonal?n=7";
  const auto g = store.load(gen);
  CHECK(*g == ds::generate(ds::MatrixUri::parse(gen)));
  CHECK(g->rows() == 7);
  CHECK_THROWS_AS(store.resolve(gen), std::invalid_argument);
  CHECK_FALSE(store.load_with_report(ds::MatrixUri::parse(gen)).report.has_value());
}

TEST_CASE("the LRU cache keeps the most recently used matrices", "[datasets][store]") {
  const auto dir = sparserl::testing::scratch_dir("store_cache");
  for (int i = 0; i < 3; ++i) {
    ds::write_matrix_market(dir / "suitesparse" / "G" / ("m" + std::to_string(i) + ".mtx"),
                            small(i));
  }
  ds::StoreOptions options;
  options.cache_capacity = 2;
  ds::MatrixStore store(dir, options);
  const auto a0 = store.load("suitesparse-v1/G/m0");
  CHECK(store.load("suitesparse-v1/G/m0") == a0);  // the same object: served from the cache
  (void)store.load("suitesparse-v1/G/m1");
  (void)store.load("suitesparse-v1/G/m0");  // m0 is now the most recent
  (void)store.load("suitesparse-v1/G/m2");  // evicts m1
  CHECK(store.cache_size() == 2);
  CHECK(store.load("suitesparse-v1/G/m0") == a0);
  // The file changes on disk; the cache still serves m0 until cleared.
  ds::write_matrix_market(dir / "suitesparse" / "G" / "m0.mtx", small(7.0));
  CHECK(*store.load("suitesparse-v1/G/m0") == small(0.0));
  store.clear_cache();
  CHECK(store.cache_size() == 0);
  CHECK(*store.load("suitesparse-v1/G/m0") == small(7.0));

  // Concurrent loads through one store agree.
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<const ds::SparseMatrix>> got(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back(
        [&store, &got, t] { got[t] = store.load("suitesparse-v1/G/m" + std::to_string(t % 3)); });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t)
    CHECK(*got[t] == *store.load("suitesparse-v1/G/m" + std::to_string(t % 3)));
  CHECK(store.cache_size() <= 2);
}

TEST_CASE("the cache is bounded by bytes as well as by entries", "[datasets][store]") {
  // A training session's store holds the large regime's matrices (tens of millions of nonzeros):
  // bounded by their bytes, not by a count that is either too small for many matrices (each SFT
  // step then generated its matrices again: 17 s a step on the large train part) or too large for
  // big ones.
  const auto dir = sparserl::testing::scratch_dir("store_cache_bytes");
  for (int i = 0; i < 3; ++i) {
    ds::write_matrix_market(dir / "suitesparse" / "G" / ("m" + std::to_string(i) + ".mtx"),
                            small(i));
  }
  const std::size_t one = ds::resident_bytes(small(0));
  REQUIRE(one == (small(0).row_ptr().size() + small(0).col_idx().size()) * sizeof(ds::Index) +
                     small(0).values().size() * sizeof(double));
  ds::StoreOptions options;
  options.cache_capacity = 100;
  options.cache_bytes = 2 * one;
  ds::MatrixStore store(dir, options);
  const auto a0 = store.load("suitesparse-v1/G/m0");
  (void)store.load("suitesparse-v1/G/m1");
  CHECK(store.cache_size() == 2);
  CHECK(store.cache_bytes() == 2 * one);
  (void)store.load("suitesparse-v1/G/m2");  // a third would pass the bytes: m0 goes
  CHECK(store.cache_size() == 2);
  CHECK(store.cache_bytes() == 2 * one);
  CHECK(store.load("suitesparse-v1/G/m0") != a0);  // loaded again
  // A bound below one matrix still keeps the newest.
  ds::StoreOptions tiny = options;
  tiny.cache_bytes = 1;
  ds::MatrixStore small_store(dir, tiny);
  const auto b0 = small_store.load("suitesparse-v1/G/m0");
  CHECK(small_store.load("suitesparse-v1/G/m0") == b0);
  (void)small_store.load("suitesparse-v1/G/m1");
  CHECK(small_store.cache_size() == 1);
  CHECK(small_store.cache_bytes() == one);
  small_store.clear_cache();
  CHECK(small_store.cache_bytes() == 0);
}

TEST_CASE("a cached matrix's digest is computed once", "[datasets][store]") {
  // The GPU worker checks the digest of its matrix on every evaluation: load_digested answers it
  // from the cache entry, and computes it again only for a matrix that was loaded again.
  const auto dir = sparserl::testing::scratch_dir("store_digest");
  for (int i = 0; i < 2; ++i) {
    ds::write_matrix_market(dir / "suitesparse" / "G" / ("m" + std::to_string(i) + ".mtx"),
                            small(i));
  }
  const auto m0 = ds::MatrixUri::parse("suitesparse-v1/G/m0");
  const auto m1 = ds::MatrixUri::parse("suitesparse-v1/G/m1");
  ds::StoreOptions options;
  options.cache_capacity = 1;
  ds::MatrixStore store(dir, options);
  const ds::DigestedMatrix a = store.load_digested(m0);
  CHECK(a.digest == small(0.0).digest());
  CHECK(store.digests_computed() == 1);
  const ds::DigestedMatrix again = store.load_digested(m0);
  CHECK(again.matrix == a.matrix);  // the cached object, with its digest
  CHECK(again.digest == a.digest);
  CHECK(store.digests_computed() == 1);
  CHECK(store.load(m0) == a.matrix);  // load() and load_digested() share the entry
  CHECK(store.load_digested(m1).digest == small(1.0).digest());  // evicts m0
  CHECK(store.digests_computed() == 2);
  // The file changes on disk: the reloaded matrix gets its own digest, not the old entry's.
  ds::write_matrix_market(dir / "suitesparse" / "G" / "m0.mtx", small(7.0));
  const ds::DigestedMatrix reloaded = store.load_digested(m0);
  CHECK(reloaded.digest == small(7.0).digest());
  CHECK(reloaded.digest != a.digest);
  CHECK(store.digests_computed() == 3);

  // Concurrent first requests agree and compute it once; without a cache, every call computes it.
  ds::MatrixStore shared(dir, options);
  std::vector<std::thread> threads;
  std::vector<std::string> digests(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] { digests[t] = shared.load_digested(m1).digest; });
  }
  for (auto& th : threads) th.join();
  for (const std::string& d : digests) CHECK(d == small(1.0).digest());
  // Threads that loaded the matrix before the first one cached it compute their own.
  CHECK(shared.digests_computed() >= 1);
  CHECK(shared.digests_computed() <= 8);
  ds::MatrixStore uncached(dir);
  (void)uncached.load_digested(m1);
  (void)uncached.load_digested(m1);
  CHECK(uncached.digests_computed() == 2);
}

TEST_CASE("the default data directory follows SPARSERL_DATA_DIR", "[datasets][store]") {
  ::setenv("SPARSERL_DATA_DIR", "/tmp/sparserl-data-test", 1);
  CHECK(ds::default_data_dir() == "/tmp/sparserl-data-test");
  ::setenv("SPARSERL_DATA_DIR", "", 1);
  CHECK(ds::default_data_dir() == "data");
  ::unsetenv("SPARSERL_DATA_DIR");
  CHECK(ds::default_data_dir() == "data");
}
