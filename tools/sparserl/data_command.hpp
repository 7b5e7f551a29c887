// Internal to `sparserl data`, whose subcommands are spread over three files: data_command.cpp
// (their declarations, info, convert, generate, version-1 split, summary), data_split_command.cpp
// (a split file's report and the benchmark split maker) and data_fetch_command.cpp (fetching one
// URI or a split's part). This header holds what they share: the arguments, the store over
// --data-dir and --index, and what "present on this machine" means for a split's matrix.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "options.hpp"
#include "sparserl/datasets/download.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/datasets/text.hpp"

namespace sparserl::tools::data {

namespace ds = sparserl::datasets;

// The arguments of every `sparserl data` subcommand; each subcommand declares the ones it takes
// (data_command.cpp), bound to these fields.
struct DataArgs {
  // Positionals: info FILE|URI, convert IN, generate URI, split FILE, fetch URI, summary DIR.
  std::optional<std::string> input;
  std::string output;  // convert OUT
  // Where matrices are found and how files are read: --data-dir, --index (repeatable), --member,
  // --allow-non-finite.
  MatrixLocations where;
  std::string member;
  bool allow_non_finite = false;
  bool json = false;
  std::optional<std::string> out;     // generate, split: --out FILE
  std::vector<std::string> comments;  // convert, generate: --comment TEXT (repeatable)
  // convert
  std::optional<std::string> field;
  bool symmetric = false;
  bool general = false;
  // split
  bool benchmark = false;
  std::string name;
  std::optional<std::uint64_t> seed;
  std::string ratios = "0.6,0.2,0.2";
  std::optional<std::string> catalogue;
  // fetch
  std::optional<std::string> split;
  std::string part;
  std::vector<std::string> regimes;
  std::optional<std::string> source;
  std::string base_url{ds::kDefaultSuiteSparseBaseUrl};
  long long max = std::numeric_limits<long long>::max();
  bool dry_run = false;
  bool overwrite = false;
  // summary
  std::optional<std::string> summary_index;
  bool strict = false;
};

// A URI argument; a malformed one is a usage error (exit 2), not a failed input.
ds::MatrixUri parse_uri_argument(const std::string& text);

// --index (repeatable), --allow-non-finite and --member as StoreOptions.
ds::StoreOptions store_options(const DataArgs& args);
// --data-dir, else $SPARSERL_DATA_DIR, else ./data.
std::filesystem::path data_dir(const DataArgs& args);

// --name, --seed and --ratios of `data split` (UsageError for missing ones or bad ratios).
ds::SplitSpec split_spec(const DataArgs& args);

using datasets::fixed;  // numbers as the project spells them (sparserl/datasets/text.hpp)
double seconds_since(std::chrono::steady_clock::time_point start);

// Whether a split entry's matrix is at hand without fetching anything, and without loading it: a
// suitesparse-v1 (or file:) matrix when the store finds its file in the data directory or an
// attached index; a gen-v1 matrix always (it is generated), unless its URI names the collection
// matrix it builds on by group= and name= keys (kron) and the store cannot find that one.
bool present(const ds::MatrixStore& store, const ds::SplitEntry& entry);

int run_split_report(const DataArgs& args);     // data split FILE
int run_benchmark_split(const DataArgs& args);  // data split --benchmark
int run_fetch(const DataArgs& args);            // data fetch URI | data fetch --split FILE --part P

}  // namespace sparserl::tools::data
