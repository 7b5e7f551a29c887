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

#include "cli.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/experiments/config.hpp"
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

// What the commands that make a run directory (train, bench, eval, quickstart) share: --set
// KEY=VALUE (repeatable, into `overrides`), --root DIR and --runs-dir DIR (into `options`).
struct RunArgs {
  std::vector<std::string> overrides;
  experiments::RunnerOptions options;

  // The config file with the overrides applied.
  [[nodiscard]] experiments::Config config(const std::filesystem::path& file) const;
  // The runner options of one invocation of the command: its command line recorded (run.json).
  [[nodiscard]] experiments::RunnerOptions runner_options(
      const std::string& name, const std::vector<std::string>& argv) const;
};

// Declares RunArgs' options; `example` is an override for the help of --set.
void add_run_options(CLI::App& app, RunArgs& args, const std::string& example);

// --part train|val|test of `sparserl bench` and `sparserl eval`, the only way a run reads a split's
// test part: `what` the command does with the part ("benchmark"), over the config key `key`.
CLI::Option* add_part_with_test(CLI::App& app, std::optional<std::string>& part,
                                const std::string& what, const std::string& key);

// The exit statuses of the commands that make a run directory, for their help's footer.
inline constexpr const char* kRunExitStatus =
    "exit status: 0 completed, 130 interrupted, 1 failed (the error is named), 2 bad arguments";

// The matrix URI of a --matrix value (MatrixUri::from_argument: a path, a file: URI or a matrix
// URI alike). None of them throws Error naming the option and the value: UsageError (exit status
// 2) by default, std::runtime_error (1) for a command that counts it an unreadable input.
template <class Error = UsageError>
std::string matrix_uri(const std::string& text) {
  try {
    return datasets::MatrixUri::from_argument(text).str();
  } catch (const datasets::InvalidUri& e) {
    throw Error(std::string("--matrix ") + e.what());
  }
}

// "sparserl NAME ARG...": the command line a run records (run.json, a trajectory file's config).
std::string command_line(const std::string& name, const std::vector<std::string>& argv);

// Prints how a run ended (experiments::describe_outcome; `resumable` for train) and returns the
// command's exit status.
int report_outcome(const experiments::RunOutcome& outcome, bool resumable);

}  // namespace sparserl::tools
