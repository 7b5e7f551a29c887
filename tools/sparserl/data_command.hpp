// Internal to `sparserl data`, whose subcommands are spread over three files: data_command.cpp
// (usage, dispatch, info, convert, generate, version-1 split, summary), data_split_command.cpp (a
// split file's report and the benchmark split maker) and data_fetch_command.cpp (fetching one URI
// or a split's part). This header holds what they share: option handling, the store over
// --data-dir and --index, and what "present on this machine" means for a split's matrix.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/datasets/task.hpp"

namespace sparserl::tools::data {

namespace ds = sparserl::datasets;

// The options of `sparserl data` that take no value.
inline const std::vector<std::string> kSwitches = {
    "json",   "symmetric", "general",   "allow-non-finite",
    "strict", "overwrite", "benchmark", "dry-run"};

// Switches are declared once for the whole command; each subcommand accepts only its own.
void allow_switches(const Args& args, std::string_view sub,
                    const std::vector<std::string>& allowed);

// A URI argument; a malformed one is a usage error (exit 2), not a failed input.
ds::MatrixUri parse_uri_argument(const std::string& text);

// --index (repeatable), --allow-non-finite and --member as StoreOptions.
ds::StoreOptions store_options(const Args& args);
// --data-dir, else $SPARSERL_DATA_DIR, else ./data.
std::filesystem::path data_dir(const Args& args);

// --name, --seed and --ratios of `data split` (UsageError for a bad seed or ratios).
ds::SplitSpec split_spec(const Args& args);

std::string fixed(double v, int digits);
double seconds_since(std::chrono::steady_clock::time_point start);

// Whether a split entry's matrix is at hand without fetching anything, and without loading it: a
// suitesparse-v1 (or file:) matrix when the store finds its file in the data directory or an
// attached index; a gen-v1 matrix always (it is generated), unless its URI names the collection
// matrix it builds on by group= and name= keys (kron) and the store cannot find that one.
bool present(const ds::MatrixStore& store, const ds::SplitEntry& entry);

int run_split_report(const Args& args);     // data split FILE
int run_benchmark_split(const Args& args);  // data split --benchmark
int run_fetch(const Args& args);            // data fetch URI | data fetch --split FILE --part P

}  // namespace sparserl::tools::data
