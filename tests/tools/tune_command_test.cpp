// `sparserl tune` with a measurement store, through the built binary (compile-only here: no GPU):
// the store is created and every evaluation appended with its search, a second run with --resume
// skips the tasks the store holds, --no-record leaves it as it was, and the split filters refuse
// what they cannot do (a regime filter on a version-1 split; store flags without a store).
#include <filesystem>
#include <fstream>
#include <string>

#include "catch.hpp"
#include "command_checks.hpp"
#include "test_support.hpp"

using namespace sparserl::testing;
namespace fs = std::filesystem;

namespace {

std::string tune() { return quoted(SPARSERL_CLI_PATH) + " tune"; }

std::size_t lines_of(const fs::path& file) {
  std::ifstream in(file);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

}  // namespace

TEST_CASE("sparserl tune records to a measurement store and resumes from it", "[tools][tune]") {
  const fs::path dir = scratch_dir("tune_measurements");
  const fs::path store = dir / "store" / "measurements.jsonl";  // its folder is made too
  const std::string common = " --budget 2 --compile-only --compile-workers 2 --data-dir " +
                             quoted(dir / "data") + " --measurements " + quoted(store);
  const std::string arrow = " --matrix 'gen-v1/arrow?n=300&width=2'";
  const std::string diagonal = " --matrix 'gen-v1/diagonal?n=50'";
  check_command(tune() + arrow + common + " --out " + quoted(dir / "a") + " 2>&1", 0,
                {"measurement store", "0 candidates, 0 searches",
                 "candidates chosen by the analytic model", "search "});
  // The header, 2 candidates and the search line.
  CHECK(lines_of(store) == 4);
  check_command(
      tune() + arrow + diagonal + common + " --resume --out " + quoted(dir / "b") + " 2>&1", 0,
      {"2 candidates, 1 searches", "1 task(s) skipped", "gen-v1/diagonal?n=50 spmv"});
  CHECK(lines_of(store) == 7);
  check_command(tune() + diagonal + common + " --no-record --out " + quoted(dir / "c") + " 2>&1", 0,
                {"4 candidates, 2 searches"});
  CHECK(lines_of(store) == 7);
}

TEST_CASE("sparserl tune refuses filters and store flags it cannot honour", "[tools][tune]") {
  const fs::path dir = scratch_dir("tune_refusals");
  const std::string split = quoted(source_dir() / "datasets" / "splits" / "shared-v1.split");
  check_command(tune() + " --split " + split + " --regime large --compile-only --out " +
                    quoted(dir / "a") + " 2>&1",
                2, {"--regime needs a benchmark split (version 2)"});
  check_command(
      tune() + " --matrix 'gen-v1/diagonal?n=5' --resume --out " + quoted(dir / "b") + " 2>&1", 2,
      {"--resume requires --measurements"});
  check_command(tune() + " --matrix 'gen-v1/diagonal?n=5' --regime large --out " +
                    quoted(dir / "c") + " 2>&1",
                2, {"--regime requires --split"});
}
