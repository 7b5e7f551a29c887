// `sparserl data` as a user runs it: the built binary (SPARSERL_CLI_PATH) is started with arguments
// and its exit status and output are checked: 0 for work done, 1 for inputs that cannot be read or
// written, 2 with the usage text for bad arguments.
#include <filesystem>
#include <string>

#include "catch.hpp"
#include "datasets_test_support.hpp"
#include "sparserl/datasets/download.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/datasets/matrix_market.hpp"
#include "sparserl/datasets/splits.hpp"
#include "command_checks.hpp"
#include "test_support.hpp"

namespace ds = sparserl::datasets;
namespace fs = std::filesystem;
using namespace sparserl::testing;

namespace {

std::string q(const fs::path& p) { return sparserl::testing::quoted(p); }

}  // namespace

TEST_CASE("data info prints size, features and the read report", "[datasets][cli]") {
  const auto dir = sparserl::testing::scratch_dir("cli_info");
  const ds::SparseMatrix a =
      ds::SparseMatrix::from_triplets(3, 4, {{0, 0, 1.0}, {2, 3, 2.0}, {2, 1, 0.0}});
  ds::write_matrix_market(dir / "a.mtx.gz", a);
  check_output(
      sparserl_data("info " + q(dir / "a.mtx.gz")), 0,
      {"rows                3\n", "cols                4\n", "nnz                 3\n",
       "digest              " + a.digest(), "explicit zeros      1\n",
       "banner              coordinate real general", "  row_nnz_max       2\n", "  bandwidth"});

  check_output(
      sparserl_data("info --json " + q(dir / "a.mtx.gz")), 0,
      {"\"nnz\": 3,", "\"explicit_zeros\": 1", "\"row_nnz_max\": 2", "\"symmetry\": \"general\""});

  check_output(sparserl_data("info 'gen-v1/diagonal?n=5'"), 0,
               {"uri                 gen-v1/diagonal?n=5\n", "nnz                 5\n"});
}

TEST_CASE("data info resolves suitesparse-v1 URIs through --index and --data-dir",
          "[datasets][cli]") {
  const auto shared = sparserl::testing::shared_matrices_dir();
  check_output(sparserl_data("info suitesparse-v1/HB/west0067 --index " + q(shared)), 0,
               {"nnz                 294\n"});
  const auto dir = sparserl::testing::scratch_dir("cli_info_uri");
  check_output(sparserl_data("info suitesparse-v1/HB/west0067 --data-dir " + q(dir)), 1,
               {"matrix suitesparse-v1/HB/west0067 not found",
                (dir / "suitesparse" / "HB" / "west0067.mtx").string()});
}

TEST_CASE("data errors: unreadable inputs exit 1, bad arguments exit 2 with usage",
          "[datasets][cli]") {
  const auto dir = sparserl::testing::scratch_dir("cli_errors");
  sparserl::testing::write_bytes(dir / "bad.mtx",
                                 "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n");
  const auto bad = sparserl_data("info " + q(dir / "bad.mtx"));
  CHECK(bad.status == 1);
  CHECK_THAT(bad.output,
             has_substring((dir / "bad.mtx").string() + ":3: row index 3 is out of range"));

  for (const std::string& args :
       {std::string(""), std::string("bogus"), std::string("info"), std::string("info a b"),
        std::string("info x.mtx --frobnicate 1"), std::string("info x.mtx --strict"),
        std::string("convert only-one"), std::string("generate gen-v1/diagonal"),
        std::string("generate suitesparse-v1/HB/x --out y.mtx"), std::string("info 'gen-v1/x?a'"),
        std::string("split --index i.csv --name n --seed -1 --out f"),
        std::string("split --index i.csv --name n --seed 1 --ratios 1,1 --out f"),
        std::string("fetch gen-v1/diagonal"), std::string("convert a b --symmetric --general"),
        std::string("convert a b --field complex")}) {
    INFO("sparserl data " << args);
    const auto r = sparserl_data(args);
    CHECK(r.status == 2);
    CHECK_THAT(r.output, has_substring("usage: sparserl data SUBCOMMAND"));
  }
  check_output(sparserl_data("--help"), 0, {"summary [DIR | --index INDEX.csv]"});
}

TEST_CASE("data convert and data generate write Matrix Market files", "[datasets][cli]") {
  const auto dir = sparserl::testing::scratch_dir("cli_convert");
  const ds::SparseMatrix sym =
      ds::SparseMatrix::from_triplets(3, 3, {{0, 0, 2.0}, {1, 0, -1.0}, {0, 1, -1.0}, {2, 2, 0.1}});
  ds::WriteOptions options;
  options.symmetric = true;
  options.comments = {"original comment"};
  ds::write_matrix_market(dir / "in.mtx", sym, options);

  auto r = sparserl_data("convert " + q(dir / "in.mtx") + " " + q(dir / "out.mtx.gz"));
  INFO(r.output);
  CHECK(r.status == 0);
  const auto out = ds::read_matrix_market(dir / "out.mtx.gz");
  CHECK(out.matrix == sym);
  CHECK(out.report.symmetry == ds::MmSymmetry::symmetric);  // kept from the input
  CHECK(out.report.comments.front() == "original comment");

  r = sparserl_data("convert " + q(dir / "out.mtx.gz") + " " + q(dir / "general.mtx") +
                    " --general --field pattern --comment 'made in a test'");
  CHECK(r.status == 0);
  const auto general = ds::read_matrix_market(dir / "general.mtx");
  CHECK(general.report.symmetry == ds::MmSymmetry::general);
  CHECK(general.report.field == ds::MmField::pattern);
  CHECK(general.matrix.pattern_digest() == sym.pattern_digest());
  CHECK(general.report.comments.back() == "made in a test");

  r = sparserl_data("convert " + q(dir / "in.mtx") + " " + q(dir / "in.tar.gz"));
  CHECK(r.status == 0);
  CHECK(ds::read_matrix_market(dir / "in.tar.gz").matrix == sym);

  // Integer output of non-integer values fails and names the output file; nothing is written.
  r = sparserl_data("convert " + q(dir / "in.mtx") + " " + q(dir / "int.mtx") + " --field integer");
  CHECK(r.status == 1);
  CHECK_THAT(r.output, has_substring((dir / "int.mtx").string() + ": cannot write an integer"));
  CHECK_FALSE(fs::exists(dir / "int.mtx"));

  const std::string gen = "gen-v1/stencil2d?nx=4&ny=3";
  r = sparserl_data("generate '" + gen + "' --out " + q(dir / "gen.mtx"));
  CHECK(r.status == 0);
  const ds::SparseMatrix expected = ds::generate(ds::MatrixUri::parse(gen));
  CHECK_THAT(r.output, has_substring(expected.digest()));
  const auto written = ds::read_matrix_market(dir / "gen.mtx");
  CHECK(written.matrix == expected);
  CHECK(written.report.comments.at(1) == "uri: " + gen);
}

TEST_CASE("data generate finds kron's base through --index", "[datasets][cli][shared]") {
  const auto dir = sparserl::testing::scratch_dir("cli_generate_kron");
  const auto shared = sparserl::testing::shared_matrices_dir();
  const std::string kron = "gen-v1/kron?group=HB&n=3&name=west0067&per_row=2";
  auto r = sparserl_data("generate '" + kron + "' --out " + q(dir / "k.mtx") + " --index " +
                         q(shared) + " --data-dir " + q(dir / "data"));
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(ds::read_matrix_market(dir / "k.mtx").matrix.nnz() == 294 * 3 * 2);
  // Without an index the base is not found, and the message says where it looked.
  r = sparserl_data("generate '" + kron + "' --out " + q(dir / "k2.mtx") + " --data-dir " +
                    q(dir / "data"));
  CHECK(r.status == 1);
  CHECK_THAT(r.output, has_substring("matrix suitesparse-v1/HB/west0067 not found"));
}

TEST_CASE("data split writes the library's split and refuses to overwrite", "[datasets][cli]") {
  const auto dir = sparserl::testing::scratch_dir("cli_split");
  const auto index = sparserl::testing::shared_matrices_dir() / "INDEX.csv";
  const std::string args =
      "split --index " + q(index) + " --name shared-v1 --seed 1 --ratios 0.6,0.2,0.2 --out ";
  auto r = sparserl_data(args + q(dir / "s.split"));
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK_THAT(r.output, has_substring("train 32, val 11, test 10"));
  CHECK(sparserl::testing::read_bytes(dir / "s.split") ==
        sparserl::testing::read_bytes(sparserl::testing::source_dir() / "datasets" / "splits" /
                                      "shared-v1.split"));
  r = sparserl_data(args + q(dir / "s.split"));
  CHECK(r.status == 1);
  CHECK_THAT(r.output, has_substring("already exists"));
}

TEST_CASE("data fetch downloads from a file:// base URL", "[datasets][cli]") {
  const auto dir = sparserl::testing::scratch_dir("cli_fetch");
  const ds::SparseMatrix a = ds::SparseMatrix::from_triplets(2, 2, {{0, 1, 3.0}});
  ds::write_matrix_market_archive(dir / "MM" / "G" / "m.tar.gz", a);
  const std::string base = "file://" + (dir / "MM").string();
  auto r = sparserl_data("fetch suitesparse-v1/G/m --data-dir " + q(dir / "data") + " --base-url " +
                         q(base));
  INFO(r.output);
  if (!ds::download_available()) {
    CHECK(r.status == 1);
    CHECK_THAT(r.output, has_substring("no download support"));
    return;
  }
  CHECK(r.status == 0);
  CHECK_THAT(r.output, has_substring("fetched " + base + "/G/m.tar.gz"));
  CHECK(fs::exists(dir / "data" / "suitesparse" / "G" / "m.tar.gz"));
  r = sparserl_data("fetch suitesparse-v1/G/m --data-dir " + q(dir / "data") + " --base-url " +
                    q(base));
  CHECK(r.status == 0);
  CHECK_THAT(r.output, has_substring("already present"));
  r = sparserl_data("info suitesparse-v1/G/m --data-dir " + q(dir / "data"));
  CHECK(r.status == 0);
  CHECK_THAT(r.output, has_substring("nnz                 1\n"));
  r = sparserl_data("fetch suitesparse-v1/G/none --data-dir " + q(dir / "data") + " --base-url " +
                    q(base));
  CHECK(r.status == 1);
  CHECK_THAT(r.output, has_substring(base + "/G/none.tar.gz: download failed"));
}

TEST_CASE("data summary prints one line per matrix of a folder or an index", "[datasets][cli]") {
  const auto shared = sparserl::testing::shared_matrices_dir();
  auto r = sparserl_data("summary --index " + q(shared / "INDEX.csv"));
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK_THAT(r.output, has_substring("matrix"));
  CHECK_THAT(r.output, has_substring("HB/west0067"));
  CHECK_THAT(r.output, has_substring("53 matrices from "));
  CHECK_THAT(r.output, has_substring("53 read, 0 failed, 0 differ from the index"));
  CHECK(sparserl_data("summary --strict --index " + q(shared / "INDEX.csv")).status == 0);

  const auto dir = sparserl::testing::scratch_dir("cli_summary");
  ds::write_matrix_market(dir / "G" / "a.mtx",
                          ds::SparseMatrix::from_triplets(2, 2, {{0, 0, 1.0}}));
  ds::write_matrix_market_archive(dir / "G" / "b.tar.gz",
                                  ds::SparseMatrix::from_triplets(3, 3, {}));
  sparserl::testing::write_bytes(dir / "ignored.txt", "x");
  r = sparserl_data("summary " + q(dir));
  CHECK(r.status == 0);
  CHECK_THAT(r.output, has_substring("G/a.mtx"));
  CHECK_THAT(r.output, has_substring("G/b.tar.gz"));
  CHECK_THAT(r.output, has_substring("2 matrices from"));
  CHECK_THAT(r.output, has_substring("2 read, 0 failed"));
  r = sparserl_data("summary --json " + q(dir));
  CHECK(r.status == 0);
  CHECK_THAT(r.output, has_substring("\"matrix\": \"G/a.mtx\""));
  CHECK_THAT(r.output, has_substring("\"ok\": true"));
  CHECK(sparserl_data("summary " + q(dir / "nothere")).status == 1);
  // A broken file is reported on its line and counted; --strict turns it into exit status 1.
  sparserl::testing::write_bytes(dir / "G" / "broken.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n");
  r = sparserl_data("summary " + q(dir));
  CHECK(r.status == 0);
  CHECK_THAT(r.output, has_substring("2 read, 1 failed"));
  CHECK_THAT(r.output, has_substring("broken.mtx:2"));
  CHECK(sparserl_data("summary --strict " + q(dir)).status == 1);
  std::filesystem::remove(dir / "G" / "broken.mtx");
  // Without DIR or --index: the data directory.
  r = sparserl_data("summary --data-dir " + q(dir));
  CHECK(r.status == 0);
  CHECK_THAT(r.output, has_substring("2 matrices from"));
}
