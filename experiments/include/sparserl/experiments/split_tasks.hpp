// Which matrices a run takes from its split, and the discipline around the test part (DESIGN.md,
// "Benchmark and statistics"). Every stage reads one part of data.split - train's data.part,
// eval.part, bench.part - narrowed by data.regimes / data.sources / data.families (a
// datasets::SplitSelection; version-1 splits have no regimes, so a regime filter on one is an
// error). Collection matrices of the catalogue that are not on this machine (neither in the data
// directory nor in an attached index) are skipped, and the run says in one line how many and how
// to fetch them; the matrices at hand still run.
//
// The test part is read only where a person asked for it on the command line: `sparserl bench` and
// `sparserl eval` with `--part test`. A config or a --set asking for part = test is refused, and so
// is an eval or bench over data.uris that lists a test matrix without that flag. `sparserl train`
// never reads a test matrix: not through data.part, not through a data.uris entry that is in the
// test part of data.split or of any *.split under ROOT/datasets/splits/, and not through a
// data.generators URI equal (seed= aside) to a generated test matrix. Each refusal names the matrix
// and the split. The split, its digest, the selection and whether test matrices were read go into
// run.json ("split", SplitRecord) and the report's header.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sparserl/datasets/splits.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/results.hpp"
#include "sparserl/experiments/run_info.hpp"

namespace sparserl::experiments {

// The matrices of one part of data.split a run takes (or of data.uris when the split is empty).
struct PartTasks {
  std::vector<datasets::Task> tasks;
  // Parallel to tasks: the split's entry of each (nullopt for a data.uris task).
  std::vector<std::optional<datasets::SplitEntry>> entries;
  std::optional<datasets::Split> split;  // data.split, read
  std::filesystem::path split_file;      // absolute; empty for data.uris
  std::string part;
  datasets::SplitSelection selection;
  std::size_t selected = 0;  // entries the selection took, before absent ones and max_tasks
  std::size_t absent = 0;    // catalogue matrices of those not on this machine: skipped
  // The line a run says when some were absent ("" when none):
  //   "data.split bench-v2, part val: 3 of the 12 selected matrices are catalogue matrices not on
  //    this machine: skipped. Fetch them: sparserl data fetch --split FILE --part val --data-dir D"
  std::string note;
  // Tasks that are test matrices: all of them for part test, else the data.uris entries found in a
  // test part (test_split names the first such split).
  std::size_t test_matrices = 0;
  std::string test_split;

  // The entry of a task's URI, or nullptr.
  [[nodiscard]] const datasets::SplitEntry* entry(std::string_view uri) const;
};

// data.regimes, data.sources and data.families (the schema has checked their choices).
datasets::SplitSelection split_selection(const Config& config);

// The tasks of `part` of data.split (or data.uris), selected, absent catalogue matrices skipped, at
// most `max_tasks` (0: all), in file order. RunnerError naming the key for: no split and no URIs, a
// split file that is missing or malformed, a part without matrices, a regime filter on a
// version-1 split, a family the split does not have, a selection given with data.uris, nothing
// selected, or every selected matrix absent (with the fetch command).
PartTasks part_tasks(const Config& config, const std::filesystem::path& root, std::string_view part,
                     std::int64_t max_tasks);

// The test matrices a run must not read unasked: the test parts of data.split and of every *.split
// under ROOT/datasets/splits/ (a malformed one is a RunnerError naming it).
class TestParts {
 public:
  static TestParts of(const Config& config, const std::filesystem::path& root);
  // "bench-v2 (/root/datasets/splits/bench-v2.split)" when `uri` is in a test part.
  [[nodiscard]] std::optional<std::string> split_of(std::string_view uri) const;
  // For a gen-v1 URI: the generated test matrix with the same URI but for seed=, and its split.
  [[nodiscard]] std::optional<std::pair<std::string, std::string>> generated_match(
      std::string_view uri) const;

 private:
  std::map<std::string, std::string> uris_;                               // canonical URI -> split
  std::map<std::string, std::pair<std::string, std::string>> generated_;  // URI sans seed= -> both
};

// RunnerError unless `part` (the value of `key`) is not "test" or the command line said --part
// test (`explicit_test`). `command`: "sparserl bench" / "sparserl eval".
void check_test_part(std::string_view key, std::string_view part, bool explicit_test,
                     std::string_view command);

// For `sparserl eval` and `bench`: counts the test matrices among `tasks` (for data.uris: those in
// a test part of data.split or of ROOT/datasets/splits/*.split) and refuses them (RunnerError
// naming the first and its split) unless `explicit_test`.
void check_test_matrices(PartTasks& tasks, const Config& config, const std::filesystem::path& root,
                         bool explicit_test, std::string_view command);

// For `sparserl train`: RunnerError naming the matrix and the split when data.part is test (with a
// split), a data.uris entry is a test matrix, or a data.generators URI is a generated test
// matrix's (seed= aside).
void check_training_data(const Config& config, const std::filesystem::path& root);

// Fills the regime and family of every row: the split entry's tags of its matrix, else the
// regime of its nonzeros and the family its URI names (the collection group, the generator kind;
// "file" for a file: URI).
void tag_results(std::vector<MatrixResult>& rows, const PartTasks& tasks);

// run.json's "split" for a run that read `tasks`.
SplitRecord split_record(const PartTasks& tasks);

// The line report.md opens its results with: "Test part: not touched" or "Test part: 3 matrices of
// bench-v2 test read (--part test)".
std::string test_part_line(const SplitRecord& record);

}  // namespace sparserl::experiments
