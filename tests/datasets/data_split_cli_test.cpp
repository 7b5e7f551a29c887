// `sparserl data split` and `sparserl data fetch --split` for benchmark splits, run as a user runs
// them (the built binary): the report of a split file (per part and regime, with and without
// --index, for both file versions), making bench-v2 from the shared indexes and the collection
// catalogue and the generated large regime (the counts add up, no group spans two parts, the file
// reads back and equals the committed datasets/splits/bench-v2.split, it is never overwritten), bad inputs naming the file, line or option, and fetching a part's missing
// collection matrices from a local HTTP server (fetched / already present / failed and the exit
// status).
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "datasets_test_support.hpp"
#include "http_test_server.hpp"
#include "sparserl/datasets/download.hpp"
#include "sparserl/datasets/large_regime.hpp"
#include "sparserl/datasets/matrix_market.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/datasets/suitesparse_index.hpp"
#include "test_support.hpp"

namespace ds = sparserl::datasets;
namespace fs = std::filesystem;
using namespace sparserl::testing;

namespace {

std::string q(const fs::path& p) { return sparserl::testing::quoted(p); }

// The output with every run of spaces made one space, so table rows can be matched as
// "train small 3 2 1" whatever their column widths.
std::string squeezed(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += c;
  }
  return out;
}

// A small benchmark split written by hand, so the report's counts do not depend on the group
// assignment: two real shared matrices, catalogue matrices of three groups in all three regimes,
// and generated ones (a kron on a shared matrix, a kron on one that exists nowhere).
const char* kTinySplit =
    "# split tiny-v2\n"
    "# version 2\n"
    "# seed 7\n"
    "# ratios 0.6,0.2,0.2\n"
    "# source shared INDEX.csv 2 0000000000000001\n"
    "# source catalogue cat.csv 4 0000000000000002\n"
    "# source generated large-t 3 0000000000000003\n"
    "# counts train 5 val 2 test 2\n"
    "train suitesparse-v1/HB/west0067 small HB 294 shared\n"
    "train suitesparse-v1/HB/494_bus small HB 1666 shared\n"
    "train suitesparse-v1/G1/a small G1 100 catalogue\n"
    "train suitesparse-v1/G1/b medium G1 300000 catalogue\n"
    "train gen-v1/stencil2d?nx=1000&ny=1000 large stencil 4996000 generated\n"
    "val suitesparse-v1/G2/c large G2 2000000 catalogue\n"
    "val gen-v1/kron?group=HB&n=64&name=west0067&per_row=64 large kron 1204224 generated\n"
    "test suitesparse-v1/G3/d large G3 5000000 catalogue\n"
    "test gen-v1/kron?group=HB&n=64&name=nothere&per_row=64 large kron 1204224 generated\n";

std::size_t shared_overlap(const ds::SuiteSparseIndex& catalogue,
                           const std::vector<ds::SuiteSparseIndex>& shared) {
  std::set<std::string> keys;
  for (const auto& index : shared) {
    for (const auto& e : index.entries()) keys.insert(e.key());
  }
  std::size_t n = 0;
  for (const auto& e : catalogue.entries()) n += keys.count(e.key());
  return n;
}

}  // namespace

TEST_CASE("data split FILE reports a benchmark split per part and regime, and what is present",
          "[datasets][cli][bench_split]") {
  const auto shared = sparserl::testing::shared_matrices_dir();
  const auto dir = sparserl::testing::scratch_dir("cli_split_report");
  sparserl::testing::write_bytes(dir / "tiny.split", kTinySplit);
  const ds::Split split = ds::read_split(dir / "tiny.split");

  // Nothing here but the generated stencil.
  auto r = sparserl_data("split " + q(dir / "tiny.split") + " --data-dir " + q(dir / "data"));
  INFO(r.output);
  REQUIRE(r.status == 0);
  std::string out = squeezed(r.output);
  CHECK_THAT(out, has_substring("split tiny-v2 ("));
  CHECK_THAT(out, has_substring("version 2 (benchmark split)"));
  CHECK_THAT(out, has_substring("digest " + split.digest() + "\n"));
  CHECK_THAT(out, has_substring("sources shared INDEX.csv 2 0000000000000001\n"));
  CHECK_THAT(out, has_substring(" generated large-t 3 0000000000000003\n"));
  CHECK_THAT(out, has_substring("train small 3 2 0\n"));  // west0067, 494_bus (HB), a (G1)
  CHECK_THAT(out, has_substring("train medium 1 1 0\n"));
  CHECK_THAT(out, has_substring("train large 1 1 1\n"));
  CHECK_THAT(out, has_substring("train all 5 3 1\n"));
  CHECK_THAT(out, has_substring("val small 0 0 0\n"));
  CHECK_THAT(out, has_substring("val large 2 2 0\n"));  // kron's base is absent
  CHECK_THAT(out, has_substring("test large 2 2 0\n"));
  CHECK_THAT(out, has_substring("total all 9 6 1\n"));
  CHECK_THAT(out, has_substring("train stencil 1\n"));
  CHECK_THAT(out, has_substring("val G2 1, kron 1\n"));
  CHECK_THAT(out, has_substring("test G3 1, kron 1\n"));

  // The shared index makes west0067, 494_bus and the kron built on west0067 present; an archive
  // in the data directory makes G1/a present.
  ds::write_matrix_market_archive(dir / "data" / "suitesparse" / "G1" / "a.tar.gz",
                                  ds::SparseMatrix::from_triplets(2, 2, {{0, 0, 1.0}}));
  r = sparserl_data("split " + q(dir / "tiny.split") + " --data-dir " + q(dir / "data") +
                    " --index " + q(shared));
  REQUIRE(r.status == 0);
  out = squeezed(r.output);
  CHECK_THAT(out, has_substring("train small 3 2 3\n"));
  CHECK_THAT(out, has_substring("train all 5 3 4\n"));
  CHECK_THAT(out, has_substring("val large 2 2 1\n"));
  CHECK_THAT(out, has_substring("test large 2 2 0\n"));
  CHECK_THAT(out, has_substring("total all 9 6 5\n"));

  r = sparserl_data("split --json " + q(dir / "tiny.split") + " --data-dir " + q(dir / "data"));
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, has_substring("\"digest\": \"" + split.digest() + "\""));
  CHECK_THAT(r.output, has_substring("\"part\": \"train\",\n      \"matrices\": 5,\n"
                                     "      \"families\": 3,\n      \"present\": 2,"));
  CHECK_THAT(r.output, has_substring("\"regime\": \"medium\",\n          \"matrices\": 1,"));
  CHECK_THAT(r.output, has_substring("\"family\": \"kron\",\n          \"matrices\": 1"));
}

TEST_CASE("data split FILE reports a version-1 split with its regimes unknown",
          "[datasets][cli][bench_split]") {
  const auto shared = sparserl::testing::shared_matrices_dir();
  const auto dir = sparserl::testing::scratch_dir("cli_split_report_v1");
  const auto file = sparserl::testing::source_dir() / "datasets" / "splits" / "shared-v1.split";
  auto r = sparserl_data("split " + q(file) + " --data-dir " + q(dir) + " --index " + q(shared));
  INFO(r.output);
  REQUIRE(r.status == 0);
  std::string out = squeezed(r.output);
  CHECK_THAT(out, has_substring("version 1\n"));
  CHECK_THAT(out, has_substring("digest " + ds::read_split(file).digest()));
  CHECK_THAT(out, has_substring("index INDEX.csv: 53 matrices, digest 2ae106689b7c0dbd\n"));
  CHECK_THAT(out, has_substring("train ? 32 11 32\n"));
  CHECK_THAT(out, has_substring("val ? 11 5 11\n"));
  CHECK_THAT(out, has_substring("test ? 10 5 10\n"));
  CHECK_THAT(out, has_substring("total all 53 14 53\n"));
  r = sparserl_data("split " + q(file) + " --data-dir " + q(dir));
  REQUIRE(r.status == 0);
  CHECK_THAT(squeezed(r.output), has_substring("total all 53 14 0\n"));
  r = sparserl_data("split --json " + q(file) + " --data-dir " + q(dir));
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, has_substring("\"regime\": null"));
  CHECK_THAT(r.output,
             has_substring("\"index\": {\n    \"file\": \"INDEX.csv\",\n    \"matrices\": 53"));
}

TEST_CASE("data split --benchmark makes bench-v2 from the shared indexes and the catalogue",
          "[datasets][cli][bench_split]") {
  const auto shared = sparserl::testing::shared_matrices_dir();
  const auto catalogue_csv =
      sparserl::testing::shared_dir() / "reference" / "suitesparse-catalogue.csv";
  if (!fs::exists(catalogue_csv))
    sparserl::testing::skip("no catalogue at " + catalogue_csv.string());
  const auto dir = sparserl::testing::scratch_dir("cli_split_benchmark");
  const std::string args = "split --benchmark --name bench-v2 --seed 1 --index " +
                           q(shared / "INDEX.csv") + " --index " + q(shared / "real") +
                           " --catalogue " + q(catalogue_csv) + " --out ";
  auto r = sparserl_data(args + q(dir / "b.split"));
  INFO(r.output);
  REQUIRE(r.status == 0);

  const std::vector<ds::SuiteSparseIndex> indexes = {
      ds::SuiteSparseIndex::read(shared / "INDEX.csv"),
      ds::SuiteSparseIndex::read(shared / "real" / "INDEX.csv")};
  const auto catalogue = ds::SuiteSparseIndex::read(catalogue_csv);
  const std::size_t n_shared = indexes[0].size() + indexes[1].size();
  const std::size_t n_catalogue = catalogue.size() - shared_overlap(catalogue, indexes);
  CHECK(n_shared == 111);
  CHECK(catalogue.size() == 2757);

  const ds::Split split = ds::read_split(dir / "b.split");
  const std::size_t n_generated = ds::large_regime_v1().size();
  CHECK(split.version == 2);
  CHECK(split.size() == n_shared + n_catalogue + n_generated);
  REQUIRE(split.sources.size() == 4);
  CHECK(split.sources[0] ==
        ds::SplitSource{ds::MatrixSource::shared, "matrices/INDEX.csv", 53, indexes[0].digest()});
  CHECK(split.sources[1] ==
        ds::SplitSource{ds::MatrixSource::shared, "real/INDEX.csv", 58, indexes[1].digest()});
  CHECK(split.sources[2] == ds::SplitSource{ds::MatrixSource::catalogue,
                                            "suitesparse-catalogue.csv", 2757, catalogue.digest()});
  std::vector<std::string> generated_uris;
  for (const auto& m : ds::large_regime_v1()) generated_uris.push_back(m.uri);
  CHECK(split.sources[3] == ds::SplitSource{ds::MatrixSource::generated, "large-v1", n_generated,
                                            ds::uri_set_digest(generated_uris)});
  std::map<ds::MatrixSource, std::size_t> by_source;
  std::map<std::string, std::set<ds::SplitPart>> parts_of_group;
  for (ds::SplitPart part : ds::kSplitParts) {
    for (const ds::SplitEntry& e : split.part_entries(part)) {
      ++by_source[e.source];
      if (e.source != ds::MatrixSource::generated) parts_of_group[e.family].insert(part);
    }
  }
  CHECK(by_source[ds::MatrixSource::shared] == n_shared);
  CHECK(by_source[ds::MatrixSource::catalogue] == n_catalogue);
  CHECK(by_source[ds::MatrixSource::generated] == n_generated);
  // Every generated matrix in its list's part, with its pinned nnz.
  for (const auto& m : ds::large_regime_v1()) {
    INFO(m.uri);
    const auto found = split.find(m.uri);
    REQUIRE(found);
    CHECK(found->first == m.part);
    CHECK(found->second.nnz == m.nnz);
    CHECK(found->second.family == m.family);
  }
  for (const auto& [group, parts] : parts_of_group) {
    INFO(group);
    CHECK(parts.size() == 1);
  }
  // Shared nonzeros as the store loads them: 494_bus is symmetric (1,080 stored, 1,666 in all).
  CHECK(split.find("suitesparse-v1/HB/494_bus")->second.nnz == 1666);
  CHECK(split.find("suitesparse-v1/HB/494_bus")->second.source == ds::MatrixSource::shared);
  CHECK(split.find("suitesparse-v1/HB/west0067")->second.nnz == 294);
  // A catalogue entry keeps the catalogue's nnz.
  const ds::IndexEntry* afshell = catalogue.find("Schenk_AFE", "af_shell10");
  REQUIRE(afshell != nullptr);
  CHECK(split.find("suitesparse-v1/Schenk_AFE/af_shell10")->second.nnz == *afshell->stored_entries);

  const std::string out = squeezed(r.output);
  CHECK_THAT(out, has_substring("benchmark split bench-v2 (version 2, digest " + split.digest()));
  CHECK_THAT(out, has_substring("of " + std::to_string(split.size()) + " matrices"));
  CHECK_THAT(out, has_substring("(68 catalogue matrices are shared ones: listed once, as shared)"));
  CHECK_THAT(out, has_substring("all " + std::to_string(split.size()) + " "));
  for (ds::SplitPart part : ds::kSplitParts) {
    CHECK_THAT(out, has_substring(std::string(ds::to_string(part)) + " " +
                                  std::to_string(split.part_entries(part).size()) + " "));
  }
  CHECK_THAT(r.output, has_substring("reading shared matrices  111/111"));

  // The committed bench-v2 is what these inputs make (a split is made once and never edited).
  CHECK(sparserl::testing::read_bytes(dir / "b.split") ==
        sparserl::testing::read_bytes(sparserl::testing::source_dir() / "datasets" / "splits" /
                                      "bench-v2.split"));

  // The same inputs make the same file; an existing file is never overwritten.
  r = sparserl_data(args + q(dir / "again.split"));
  REQUIRE(r.status == 0);
  CHECK(sparserl::testing::read_bytes(dir / "again.split") ==
        sparserl::testing::read_bytes(dir / "b.split"));
  const std::string before = sparserl::testing::read_bytes(dir / "b.split");
  r = sparserl_data(args + q(dir / "b.split"));
  CHECK(r.status == 1);
  CHECK_THAT(r.output, has_substring((dir / "b.split").string() + ": already exists"));
  CHECK(sparserl::testing::read_bytes(dir / "b.split") == before);
}

TEST_CASE("data split and fetch --split: bad input names the file, line or option",
          "[datasets][cli][bench_split]") {
  const auto shared = sparserl::testing::shared_matrices_dir();
  const auto dir = sparserl::testing::scratch_dir("cli_split_errors");
  sparserl::testing::write_bytes(dir / "tiny.split", kTinySplit);
  const std::string make = "split --benchmark --name b --seed 1 --index " + q(shared) + " ";

  // Bad arguments: exit 2 with the usage text.
  for (const std::string& args :
       {make + "--out", make.substr(0, make.find(" --index")) + " --out " + q(dir / "x.split"),
        "split --benchmark --name b --seed x --index " + q(shared) + " --out " + q(dir / "x"),
        make + "--catalogue a.csv --catalogue b.csv --out " + q(dir / "x"),
        make + q(dir / "tiny.split") + " --out " + q(dir / "x"),
        "split " + q(dir / "tiny.split") + " --regime large",
        "split " + q(dir / "tiny.split") + " --dry-run", "fetch --split " + q(dir / "tiny.split"),
        "fetch --split " + q(dir / "tiny.split") + " --part dev",
        "fetch --split " + q(dir / "tiny.split") + " --part train --source generated",
        "fetch --split " + q(dir / "tiny.split") + " --part train --regime huge",
        "fetch --split " + q(dir / "tiny.split") + " --part train --max -1",
        "fetch --split " + q(dir / "tiny.split") + " --part train --overwrite",
        "split " + q(dir / "tiny.split") + " --json --out " + q(dir / "x"),
        std::string("fetch suitesparse-v1/HB/x --part train")}) {
    INFO("sparserl data " << args);
    const auto r = sparserl_data(args);
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK_THAT(r.output, has_substring("usage: sparserl data SUBCOMMAND"));
  }

  // Bad files: exit 1, the message names the file and line.
  std::string bad = kTinySplit;
  bad.replace(bad.find("val suitesparse-v1/G2/c large"), 29, "val suitesparse-v1/G2/c huge ");
  sparserl::testing::write_bytes(dir / "bad.split", bad);
  auto r = sparserl_data("split " + q(dir / "bad.split"));
  CHECK(r.status == 1);
  CHECK_THAT(r.output, has_substring((dir / "bad.split").string() + ":14: unknown regime 'huge'"));
  r = sparserl_data("split " + q(dir / "none.split"));
  CHECK(r.status == 1);
  CHECK_THAT(r.output,
             has_substring((dir / "none.split").string() + ": cannot open the split file"));
  r = sparserl_data("fetch --split " + q(dir / "bad.split") + " --part train");
  CHECK(r.status == 1);
  CHECK_THAT(r.output, has_substring("bad.split:14: unknown regime"));

  sparserl::testing::write_bytes(dir / "cat.csv",
                                 "id,group,name,rows,cols,nnz\n1,G,a,2,2,3\n2,G,b,2\n");
  r = sparserl_data(make + "--catalogue " + q(dir / "cat.csv") + " --out " + q(dir / "x.split"));
  CHECK(r.status == 1);
  CHECK_THAT(r.output, has_substring((dir / "cat.csv").string() + ":3: expected 6 fields"));
  sparserl::testing::write_bytes(dir / "stored.csv", "group,name,stored_entries\nG,a,3\n");
  r = sparserl_data(make + "--catalogue " + q(dir / "stored.csv") + " --out " + q(dir / "x.split"));
  CHECK(r.status == 1);
  CHECK_THAT(r.output, has_substring((dir / "stored.csv").string() +
                                     ":1: a catalogue needs an 'nnz' column"));
  sparserl::testing::write_bytes(dir / "empty.csv", "group,name,nnz\nG,a,\n");
  r = sparserl_data(make + "--catalogue " + q(dir / "empty.csv") + " --out " + q(dir / "x.split"));
  CHECK(r.status == 1);
  CHECK_THAT(r.output, has_substring("empty.csv:2:"));
  r = sparserl_data(make + "--index " + q(shared / "INDEX.csv") + " --out " + q(dir / "x.split"));
  CHECK(r.status == 1);
  CHECK_THAT(r.output, has_substring("is also listed at " + (shared / "INDEX.csv").string() + ":"));
  r = sparserl_data(make + "--name 'bad name' --out " + q(dir / "x.split"));
  CHECK(r.status == 1);
  CHECK_THAT(r.output, has_substring("invalid split name 'bad name'"));
  CHECK_FALSE(fs::exists(dir / "x.split"));
}

TEST_CASE("data fetch --split downloads a part's missing collection matrices over HTTP",
          "[datasets][cli][bench_split][download]") {
  if (!ds::download_available()) sparserl::testing::skip("this build has no libcurl");
  const auto shared = sparserl::testing::shared_matrices_dir();
  const auto dir = sparserl::testing::scratch_dir("cli_fetch_split");
  // The server has G1/a and G2/c; G1/b is missing (404).
  const ds::SparseMatrix a = ds::SparseMatrix::from_triplets(2, 2, {{0, 1, 3.0}});
  const ds::SparseMatrix c = ds::SparseMatrix::from_triplets(3, 3, {{2, 2, -1.0}});
  ds::write_matrix_market_archive(dir / "www" / "MM" / "G1" / "a.tar.gz", a);
  ds::write_matrix_market_archive(dir / "www" / "MM" / "G2" / "c.tar.gz", c);
  ds::write_matrix_market_archive(dir / "www" / "MM" / "G3" / "d.tar.gz", c);
  sparserl::testing::HttpTestServer server(dir / "www");
  const std::string split_text =
      "# split fetch-t\n# version 2\n# seed 1\n# ratios 0.6,0.2,0.2\n"
      "# source catalogue cat.csv 4 0000000000000002\n"
      "# counts train 5 val 1 test 0\n"
      "train suitesparse-v1/G1/a small G1 1 catalogue\n"
      "train suitesparse-v1/G1/b small G1 200 catalogue\n"
      "train suitesparse-v1/G2/c large G2 2000000 catalogue\n"
      "train suitesparse-v1/HB/west0067 small HB 294 shared\n"
      "train gen-v1/diagonal?n=5 small diag 5 generated\n"
      "val suitesparse-v1/G3/d small G3 1 catalogue\n";
  sparserl::testing::write_bytes(dir / "f.split", split_text);
  const std::string fetch = "fetch --split " + q(dir / "f.split") + " --part train --base-url " +
                            q(server.url() + "/MM") + " --data-dir ";

  auto r = sparserl_data(fetch + q(dir / "data"));
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK_THAT(r.output, has_substring("3 collection matrices, 0 present, 3 missing"));
  CHECK_THAT(r.output, has_substring("fetched 2, already present 0, failed 1 "));
  CHECK_THAT(r.output, has_substring("failed suitesparse-v1/G1/b: " + server.url() +
                                     "/MM/G1/b.tar.gz: download failed"));
  CHECK_THAT(r.output, has_substring("fetch  3/3  100.0%"));
  CHECK(server.request_log() ==
        std::vector<std::string>{"/MM/G1/a.tar.gz", "/MM/G1/b.tar.gz", "/MM/G2/c.tar.gz"});
  ds::MatrixStore store(dir / "data");
  CHECK(*store.load("suitesparse-v1/G1/a") == a);
  CHECK(*store.load("suitesparse-v1/G2/c") == c);

  // Again: what is there is not fetched again; the missing one fails again.
  r = sparserl_data(fetch + q(dir / "data"));
  CHECK(r.status == 1);
  CHECK_THAT(r.output, has_substring("fetched 0, already present 2, failed 1 "));
  CHECK(server.requests() == 4);
  CHECK(server.requests("/MM/G1/b.tar.gz") == 2);

  // Selections: the large regime only; every source (the shared matrix too) as a dry run; the
  // shared matrix present through --index.
  r = sparserl_data(fetch + q(dir / "data") + " --regime large");
  CHECK(r.status == 0);
  CHECK_THAT(r.output,
             has_substring("regime large; source catalogue: 1 collection matrices, 1 present"));
  CHECK_THAT(r.output, has_substring("fetched 0, already present 1, failed 0 "));
  r = sparserl_data(fetch + q(dir / "data") + " --source all --dry-run");
  CHECK(r.status == 0);
  CHECK_THAT(r.output, has_substring("would fetch suitesparse-v1/G1/b (200 nonzeros) from " +
                                     server.url() + "/MM/G1/b.tar.gz"));
  CHECK_THAT(r.output, has_substring("would fetch suitesparse-v1/HB/west0067 (294 nonzeros)"));
  CHECK_THAT(r.output, has_substring("dry run: nothing fetched; 2 to fetch, 2 already present"));
  r = sparserl_data(fetch + q(dir / "data") + " --source shared --index " + q(shared));
  CHECK(r.status == 0);
  CHECK_THAT(r.output, has_substring("fetched 0, already present 1, failed 0 "));
  CHECK(server.requests() == 4);

  // --max: the first missing matrices only; the rest are counted as not attempted.
  r = sparserl_data(fetch + q(dir / "fresh") + " --max 1");
  CHECK(r.status == 0);
  CHECK_THAT(r.output, has_substring("3 missing, 1 to fetch (--max 1)"));
  CHECK_THAT(r.output, has_substring("fetched 1, already present 0, failed 0, not attempted 2 "));
  CHECK(fs::exists(dir / "fresh" / "suitesparse" / "G1" / "a.tar.gz"));

  // The report sees what was fetched.
  r = sparserl_data("split " + q(dir / "f.split") + " --data-dir " + q(dir / "data"));
  CHECK(r.status == 0);
  CHECK_THAT(squeezed(r.output), has_substring("train all 5 4 3\n"));  // a, c and the diagonal
}
