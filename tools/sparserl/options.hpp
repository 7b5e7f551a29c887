// Option shapes that several `sparserl` commands declare, applied to a CLI11 option as it is
// declared, e.g. one_of(app.add_option("--op", op, "the operation"), {"spmv", "spmm"}); the --part
// option of the commands that must not read a split's test part; the options of the commands that
// make a run directory.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sparserl/datasets/splits.hpp"
#include "sparserl/experiments/runner.hpp"

namespace sparserl::tools {

// A value from a closed set: shown as a|b|c, anything else refused with a
// message naming the option and the set.
CLI::Option* one_of(CLI::Option* option, const std::vector<std::string>& values);

// An option given any number of times, one value each (--set a=b --set c=d); without this a
// container option would also take the words that follow its value.
CLI::Option* repeatable(CLI::Option* option);

// An integer of at least `min`, up to whatever the option's type holds (a count of steps).
CLI::Validator at_least(long long min);

// An unsigned integer option (a seed): "-1" is refused, not wrapped around (as CLI11 2.1 does).
CLI::Option* non_negative(CLI::Option* option);
// A matrix option: a path, a file: URI or a matrix URI alike, each value turned into the canonical
// URI as it is parsed; one that is none of them is refused naming the option and why.
CLI::Option* matrix_argument(CLI::Option* option);

// --part train|val (default: `part` as it is) for a command other than `sparserl bench` and
// `sparserl eval`: the test part of a split is read only by those two, given --part test
// (docs/benchmark.md), so asking `command` for it is a usage error that says so.
CLI::Option* add_non_test_part(CLI::App& app, datasets::SplitPart& part,
                               const std::string& command);

// Where suitesparse-v1 matrices are found: --data-dir DIR (default: $SPARSERL_DATA_DIR, else
// ./data) and --index PATH (repeatable: SuiteSparse indexes to look matrices up in as well).
struct MatrixLocations {
  std::optional<std::string> data_dir;
  std::vector<std::string> indexes;
  [[nodiscard]] std::filesystem::path data_dir_or_default() const;
  [[nodiscard]] std::vector<std::filesystem::path> index_paths() const;
};
CLI::Option* add_data_dir(CLI::App& app, MatrixLocations& where);
CLI::Option* add_indexes(CLI::App& app, MatrixLocations& where);
// Both.
void add_matrix_locations(CLI::App& app, MatrixLocations& where);

// The options of the commands that make a run directory (train, bench, eval, quickstart): --set
// KEY=VALUE (repeatable, into `overrides`; `example` is one for the help), --root DIR and
// --runs-dir DIR (into `options`).
void add_run_options(CLI::App& app, experiments::RunnerOptions& options,
                     std::vector<std::string>& overrides, const std::string& example);

// "sparserl NAME ARG...": the command line a run records (run.json, a trajectory file's config).
std::string command_line(const std::string& name, const std::vector<std::string>& argv);

}  // namespace sparserl::tools
