// The SuiteSparse matrices of ../shared/matrices against their INDEX.csv: every valid one loads
// with the index's rows, cols and stored entries (symmetric ones expand to 2 * stored - diagonal),
// agrees bit for bit with a slow sscanf/strtod reference reader written here, and survives round
// trips through the writer, .mtx.gz and .tar.gz. The files that are not valid Matrix Market are
// listed with their error.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "sparserl/datasets/matrix_market.hpp"
#include "sparserl/datasets/suitesparse_index.hpp"
#include "test_support.hpp"

namespace ds = sparserl::datasets;
using sparserl::testing::has_substring;

namespace {

// Files of the shared collection that are not valid Matrix Market, with the error they must give.
struct InvalidFile {
  const char* file;
  std::int64_t line;
  const char* message;
};
// Every shared file reads. (Pajek/Ragusa16 declares `pattern` but carries a value on every line:
// it reads as the pattern it declares, the values counted in ReadReport::ignored_values; see the
// test below.)
const std::vector<InvalidFile> kInvalid = {};

const InvalidFile* invalid_entry(const std::string& file) {
  for (const auto& x : kInvalid) {
    if (file == x.file) return &x;
  }
  return nullptr;
}

// A deliberately plain coordinate reader (getline + sscanf + strtod): the reference the fast reader
// must agree with bit for bit.
ds::SparseMatrix reference_read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::istringstream banner(line);
  std::string mm, object, format, field, symmetry;
  banner >> mm >> object >> format >> field >> symmetry;
  while (std::getline(in, line) && (line.empty() || line[0] == '%')) {
  }
  long long rows = 0, cols = 0, n = 0;
  std::sscanf(line.c_str(), "%lld %lld %lld", &rows, &cols, &n);
  std::vector<ds::Triplet> t;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '%') continue;
    long long i = 0, j = 0;
    int used = 0;
    std::sscanf(line.c_str(), "%lld %lld%n", &i, &j, &used);
    const double v = field == "pattern" ? 1.0 : std::strtod(line.c_str() + used, nullptr);
    t.push_back({static_cast<ds::Index>(i - 1), static_cast<ds::Index>(j - 1), v});
    if (symmetry == "symmetric" && i != j) {
      t.push_back({static_cast<ds::Index>(j - 1), static_cast<ds::Index>(i - 1), v});
    }
  }
  return ds::SparseMatrix::from_triplets(static_cast<ds::Index>(rows), static_cast<ds::Index>(cols),
                                         t);
}

std::int64_t diagonal_entries(const ds::SparseMatrix& a) {
  std::int64_t d = 0;
  for (const auto& t : a.to_triplets()) d += t.row == t.col ? 1 : 0;
  return d;
}

ds::SuiteSparseIndex shared_index() {
  return ds::SuiteSparseIndex::read(sparserl::testing::shared_matrices_dir() / "INDEX.csv");
}

}  // namespace

TEST_CASE("every valid shared SuiteSparse matrix loads with the counts of INDEX.csv",
          "[datasets][suitesparse]") {
  const auto index = shared_index();
  REQUIRE(index.size() >= 50);
  std::size_t loaded = 0;
  std::size_t symmetric = 0;
  for (const ds::IndexEntry& e : index.entries()) {
    INFO(e.key() << " (" << e.file << ")");
    const auto path = index.file_path(e);
    if (const InvalidFile* bad = invalid_entry(e.file)) {
      try {
        (void)ds::read_matrix_market(path);
        FAIL_CHECK("loaded, but is listed as invalid");
      } catch (const ds::MatrixMarketError& err) {
        CHECK(err.line() == bad->line);
        CHECK_THAT(err.what(), has_substring(bad->message));
      }
      continue;
    }
    const ds::MatrixMarketFile f = ds::read_matrix_market(path);
    ++loaded;
    REQUIRE(e.rows.has_value());
    CHECK(f.matrix.rows() == *e.rows);
    CHECK(f.matrix.cols() == *e.cols);
    CHECK(f.report.stored_entries == *e.stored_entries);
    CHECK(std::string(ds::to_string(f.report.field)) == e.field);
    CHECK(std::string(ds::to_string(f.report.symmetry)) == e.symmetry);
    CHECK(f.report.duplicates_summed == 0);
    CHECK(f.matrix.nnz() == f.report.expanded_entries - f.report.duplicates_summed);
    if (e.symmetry == "symmetric") {
      ++symmetric;
      CHECK(f.matrix.nnz() == 2 * *e.stored_entries - diagonal_entries(f.matrix));
      CHECK(ds::is_symmetric(f.matrix));
    } else {
      CHECK(f.matrix.nnz() == *e.stored_entries);
    }
    CHECK(f.matrix == reference_read(path));
  }
  CHECK(loaded + kInvalid.size() == index.size());
  CHECK(symmetric >= 10);
}

TEST_CASE("shared matrices round-trip through .mtx, .mtx.gz, .tar.gz and symmetric output",
          "[datasets][suitesparse]") {
  const auto index = shared_index();
  const auto dir = sparserl::testing::scratch_dir("suitesparse_round_trip");
  for (const ds::IndexEntry& e : index.entries()) {
    if (invalid_entry(e.file) != nullptr) continue;
    INFO(e.key());
    const ds::MatrixMarketFile original = ds::read_matrix_market(index.file_path(e));
    const ds::SparseMatrix& a = original.matrix;
    ds::WriteOptions options;
    options.field = original.report.field;
    options.comments = {"round trip of " + e.key()};
    ds::write_matrix_market(dir / (e.name + ".mtx"), a, options);
    ds::write_matrix_market(dir / (e.name + ".mtx.gz"), a, options);
    ds::write_matrix_market_archive(dir / (e.name + ".tar.gz"), a, options);
    const auto plain = ds::read_matrix_market(dir / (e.name + ".mtx"));
    CHECK(plain.matrix == a);
    CHECK(plain.report.field == original.report.field);
    CHECK(ds::read_matrix_market(dir / (e.name + ".mtx.gz")).matrix == a);
    CHECK(ds::read_matrix_market(dir / (e.name + ".tar.gz")).matrix == a);
    if (e.symmetry == "symmetric") {
      options.symmetric = true;
      ds::write_matrix_market(dir / (e.name + "_sym.mtx"), a, options);
      const auto sym = ds::read_matrix_market(dir / (e.name + "_sym.mtx"));
      CHECK(sym.matrix == a);
      CHECK(sym.report.stored_entries == *e.stored_entries);
    }
  }
}

TEST_CASE("the shared INDEX.csv reads with ungrouped matrices and file paths",
          "[datasets][suitesparse]") {
  const auto index = shared_index();
  const ds::IndexEntry* arrow = index.find("ungrouped", "arrow");
  REQUIRE(arrow != nullptr);
  CHECK(arrow->uri() == "suitesparse-v1/ungrouped/arrow");
  CHECK(std::filesystem::exists(index.file_path(*arrow)));
  const ds::IndexEntry* west = index.find("HB", "west0067");
  REQUIRE(west != nullptr);
  CHECK(west->rows == 67);
  CHECK(west->stored_entries == 294);
  CHECK(west->field == "real");
  CHECK(index.find("HB", "nothere") == nullptr);
  CHECK(index.digest().size() == 16);
}

TEST_CASE("index parsing: columns by header name, quoting, defaults and errors",
          "[datasets][index]") {
  const auto index = ds::SuiteSparseIndex::parse(
      "# a comment line\n"
      "Name,Group,nnz,rows,cols,extra\n"
      "\n"
      "a,G1,5,3,4,x\n"
      "\"b\",,0,1,1,\"say \"\"hi\"\", twice\"\r\n",
      "idx.csv", "/data");
  REQUIRE(index.size() == 2);
  CHECK(index.entries()[0].key() == "G1/a");
  CHECK(index.entries()[0].file == "a.mtx");
  CHECK(index.entries()[0].stored_entries == 5);
  CHECK(index.entries()[0].line == 4);
  CHECK(index.entries()[1].key() == "ungrouped/b");
  CHECK(index.entries()[1].rows == 1);
  CHECK(index.folder() == "/data");
  // "b,c" is a valid CSV name but not a valid collection name.
  CHECK_THROWS_WITH(ds::SuiteSparseIndex::parse("name,group\n\"b,c\",G\n", "i.csv", "."),
                    has_substring("i.csv:2: invalid matrix URI 'suitesparse-v1/G/b,c'"));
  const auto ok = ds::SuiteSparseIndex::parse("name,group,rows\nx,,7\n", "i.csv", ".");
  CHECK(ok.entries()[0].group == "ungrouped");
  CHECK(ok.entries()[0].rows == 7);
  CHECK_FALSE(ok.entries()[0].cols.has_value());

  CHECK_THROWS_WITH(ds::SuiteSparseIndex::parse("file,name\nx.mtx,x\n", "i.csv", "."),
                    has_substring("i.csv:1: the header has no 'group' column"));
  CHECK_THROWS_WITH(
      ds::SuiteSparseIndex::parse("name,group,rows\nx,G,seven\n", "i.csv", "."),
      has_substring(
          "i.csv:2: expected a non-negative integer in the column 'rows', found 'seven'"));
  CHECK_THROWS_WITH(ds::SuiteSparseIndex::parse("name,group\nx,G,1\n", "i.csv", "."),
                    has_substring("i.csv:2: expected 2 fields as in the header, found 3"));
  CHECK_THROWS_WITH(ds::SuiteSparseIndex::parse("name,group\nx,G\ny,H\nx,G\n", "i.csv", "."),
                    has_substring("i.csv:4: the matrix G/x is listed twice (also on line 2)"));
  CHECK_THROWS_WITH(ds::SuiteSparseIndex::parse("name,group\n\"x,G\n", "i.csv", "."),
                    has_substring("i.csv:2: a quoted field is not closed"));
  CHECK_THROWS_WITH(ds::SuiteSparseIndex::parse("", "i.csv", "."),
                    has_substring("i.csv: empty index"));
  CHECK_THROWS_WITH(ds::SuiteSparseIndex::read("/nonexistent/INDEX.csv"),
                    has_substring("/nonexistent/INDEX.csv: cannot open"));
}

TEST_CASE("the index digest depends on the set of matrices only", "[datasets][index]") {
  const auto a = ds::SuiteSparseIndex::parse("name,group,rows\nx,G,1\ny,H,2\n", "a.csv", ".");
  const auto b = ds::SuiteSparseIndex::parse("group,name\nH,y\nG,x\n", "b.csv", ".");
  const auto c = ds::SuiteSparseIndex::parse("name,group\nx,G\nz,H\n", "c.csv", ".");
  CHECK(a.digest() == b.digest());
  CHECK(a.digest() != c.digest());
}

TEST_CASE("a pattern file with a value on every line reads as its pattern", "[datasets][suitesparse]") {
  const auto path = sparserl::testing::shared_matrices_dir() / "suitesparse" / "Ragusa16.mtx";
  const ds::MatrixMarketFile f = ds::read_matrix_market(path);
  CHECK(f.report.field == ds::MmField::pattern);
  CHECK(f.report.stored_entries == 81);
  CHECK(f.report.ignored_values == 81);
  CHECK(f.matrix.rows() == 24);
  for (double v : f.matrix.values()) CHECK(v == 1.0);
  // Two trailing numbers are still an error.
  CHECK_THROWS_WITH(ds::parse_matrix_market("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 5 6\n",
                                            "two.mtx"),
                    has_substring("two.mtx:3: expected an entry 'ROW COL'"));
}
