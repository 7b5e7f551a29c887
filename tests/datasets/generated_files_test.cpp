// Generated matrices kept as files (generated_files.hpp) and the store's use of them: a large
// generated matrix is written once into DATA_DIR/generated/ and read back by another store of the
// same data directory; small ones, or a store with generated_file_min_nnz = 0, write nothing; a file
// that is truncated, of another URI or of another revision reads as absent (and is written again);
// a data directory the store cannot write, or a file size limit below the file's size, leaves the
// matrix generated and unwritten (and the process alive: no SIGXFSZ).
#include <stdlib.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "catch.hpp"
#include "sparserl/datasets/generated_files.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "test_support.hpp"

namespace ds = sparserl::datasets;
namespace fs = std::filesystem;

namespace {

const std::string kUri = "gen-v1/uniform?nnz_per_row=4&rows=300&seed=9";  // 1,200 nonzeros

ds::StoreOptions keep_from(std::int64_t min_nnz) {
  ds::StoreOptions o;
  o.generated_file_min_nnz = min_nnz;
  return o;
}

ds::SparseMatrix other() { return ds::SparseMatrix::from_triplets(300, 300, {{1, 2, 5.0}}); }

}  // namespace

TEST_CASE("a large generated matrix is written once and read back by another store",
          "[datasets][store]") {
  const fs::path dir = sparserl::testing::scratch_dir("generated_files_kept");
  const ds::SparseMatrix generated = ds::generate(ds::MatrixUri::parse(kUri));
  const fs::path file = ds::generated_file_path(dir, kUri);
  CHECK(file.parent_path() == dir / "generated");
  CHECK(file.extension() == ".csr");
  {
    ds::MatrixStore store(dir, keep_from(1000));
    CHECK(*store.load(kUri) == generated);
  }
  REQUIRE(fs::exists(file));
  CHECK(fs::file_size(file) == 8 + 8 + kUri.size() + 24 + 301 * 4 + 1200 * 12);
  CHECK(ds::read_generated_file(file, kUri) == std::optional<ds::SparseMatrix>(generated));
  // Another store reads the file: a different matrix written as this URI's is what it returns.
  ds::write_generated_file(file, kUri, other());
  ds::MatrixStore again(dir, keep_from(1000));
  CHECK(*again.load(kUri) == other());
  CHECK(again.load_with_report(ds::MatrixUri::parse(kUri)).file.empty());
  // No temporary file is left beside it.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir / "generated")) ++entries;
  CHECK(entries == 1);
}

TEST_CASE("small generated matrices and stores that keep none write no file", "[datasets][store]") {
  const fs::path dir = sparserl::testing::scratch_dir("generated_files_none");
  ds::MatrixStore above(dir, keep_from(1201));
  CHECK(above.load(kUri)->nnz() == 1200);
  ds::MatrixStore off(dir, keep_from(0));
  CHECK(off.load(kUri)->nnz() == 1200);
  CHECK_FALSE(fs::exists(dir / "generated"));
}

TEST_CASE("the least size kept as a file follows SPARSERL_GENERATED_FILE_MIN_NNZ", "[datasets][store]") {
  const char* const var = "SPARSERL_GENERATED_FILE_MIN_NNZ";
  ::unsetenv(var);
  CHECK(ds::StoreOptions{}.generated_file_min_nnz == 1'000'000);
  ::setenv(var, "", 1);
  CHECK(ds::default_generated_file_min_nnz() == 1'000'000);
  ::setenv(var, "5000", 1);
  CHECK(ds::StoreOptions{}.generated_file_min_nnz == 5000);
  ::setenv(var, "0", 1);
  CHECK(ds::default_generated_file_min_nnz() == 0);
  for (const char* bad : {"-1", "1e6", "many", "12 "}) {
    ::setenv(var, bad, 1);
    CHECK_THROWS_WITH(ds::default_generated_file_min_nnz(),
                      sparserl::testing::has_substring("SPARSERL_GENERATED_FILE_MIN_NNZ: '" + std::string(bad) +
                                                       "' is not a count of nonzeros"));
  }
  ::unsetenv(var);
}

TEST_CASE("a kept file that is not whole, or not this URI's or revision's, reads as absent",
          "[datasets][store]") {
  const fs::path dir = sparserl::testing::scratch_dir("generated_files_bad");
  const ds::SparseMatrix generated = ds::generate(ds::MatrixUri::parse(kUri));
  const fs::path file = ds::generated_file_path(dir, kUri);
  CHECK_FALSE(ds::read_generated_file(file, kUri).has_value());  // no file
  ds::write_generated_file(file, kUri, generated);
  REQUIRE(ds::read_generated_file(file, kUri) == generated);
  // Another URI (a collision of the file name) is not this one's.
  CHECK_FALSE(ds::read_generated_file(file, kUri + "0").has_value());
  SECTION("truncated, then written again by the store") {
    fs::resize_file(file, fs::file_size(file) - 4);
    CHECK_FALSE(ds::read_generated_file(file, kUri).has_value());
    ds::MatrixStore store(dir, keep_from(1000));
    CHECK(*store.load(kUri) == generated);
    CHECK(ds::read_generated_file(file, kUri) == generated);
  }
  SECTION("another revision") {
    std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
    const std::uint32_t revision = ds::kGeneratedFileRevision + 1;
    f.seekp(8);
    f.write(reinterpret_cast<const char*>(&revision), sizeof revision);
    f.close();
    CHECK_FALSE(ds::read_generated_file(file, kUri).has_value());
  }
  SECTION("arrays that are no CSR matrix") {
    std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
    const std::int32_t bad = 7;  // row_ptr[0] must be 0
    f.seekp(static_cast<std::streamoff>(8 + 8 + kUri.size() + 24));
    f.write(reinterpret_cast<const char*>(&bad), sizeof bad);
    f.close();
    CHECK_FALSE(ds::read_generated_file(file, kUri).has_value());
  }
}

TEST_CASE("a data directory the store cannot write leaves the matrix generated", "[datasets][store]") {
  const fs::path dir = sparserl::testing::scratch_dir("generated_files_unwritable");
  std::ofstream(dir / "generated") << "a file where the folder would be\n";
  ds::MatrixStore store(dir, keep_from(1000));
  CHECK(store.load(kUri)->nnz() == 1200);
  CHECK(fs::is_regular_file(dir / "generated"));
  CHECK_THROWS_WITH(ds::write_generated_file(ds::generated_file_path(dir, kUri), kUri, other()),
                    sparserl::testing::has_substring("cannot make " + (dir / "generated").string()));
}

TEST_CASE("a file larger than the process's file size limit is not written", "[datasets][store]") {
  const fs::path dir = sparserl::testing::scratch_dir("generated_files_fsize");
  rlimit before{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &before) == 0);
  rlimit low = before;
  low.rlim_cur = 4096;  // the file holds 15 KB; a sandboxed GPU worker has 64 MiB
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &low) == 0);
  bool thrown = false;
  std::string message;
  try {
    ds::write_generated_file(ds::generated_file_path(dir, kUri), kUri, ds::generate(ds::MatrixUri::parse(kUri)));
  } catch (const std::runtime_error& e) {
    thrown = true;
    message = e.what();
  }
  ds::MatrixStore store(dir, keep_from(1000));
  const std::int64_t nnz = store.load(kUri)->nnz();
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &before) == 0);
  CHECK(thrown);
  CHECK_THAT(message, sparserl::testing::has_substring("exceed this process's file size limit of 4096"));
  CHECK(nnz == 1200);
  CHECK_FALSE(fs::exists(ds::generated_file_path(dir, kUri)));
}
