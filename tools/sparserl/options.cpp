// The option shapes declared in options.hpp.
#include "options.hpp"

#include <algorithm>
#include <charconv>
#include <iostream>

#include "sparserl/datasets/matrix_store.hpp"

namespace sparserl::tools {

CLI::Option* one_of(CLI::Option* option, const std::vector<std::string>& values) {
  std::string shown;
  for (const std::string& v : values) shown += (shown.empty() ? "" : "|") + v;
  // The set is the placeholder (--op spmv|spmm); the validator adds nothing more to it. Every
  // closed set's validator is named "choice" (tests/tools finds them by it).
  return option->type_name(shown)->check(CLI::IsMember(values).description(""), "choice");
}

CLI::Option* repeatable(CLI::Option* option) { return option->allow_extra_args(false); }

CLI::Validator at_least(long long min) {
  return {[min](std::string& text) {
            long long value = 0;
            const char* end = text.data() + text.size();
            const auto [stop, error] = std::from_chars(text.data(), end, value);
            const bool ok = error == std::errc() && stop == end && value >= min;
            return ok ? std::string()
                      : text + " is not an integer of at least " + std::to_string(min);
          },
          "at least " + std::to_string(min)};
}

CLI::Option* non_negative(CLI::Option* option) {
  return option->check([](const std::string& text) {
    const bool digits = !text.empty() && std::all_of(text.begin(), text.end(),
                                                     [](char c) { return c >= '0' && c <= '9'; });
    return digits ? std::string() : text + " is not an unsigned integer";
  });
}

CLI::Option* matrix_argument(CLI::Option* option) {
  return option->type_name("FILE|URI")->transform(CLI::Validator(
      [](std::string& text) {
        try {
          text = datasets::MatrixUri::from_argument(text).str();
          return std::string();
        } catch (const datasets::InvalidUri& e) {
          return std::string(e.what());
        }
      },
      "", "matrix"));
}

CLI::Option* add_non_test_part(CLI::App& app, datasets::SplitPart& part,
                               const std::string& command) {
  return app
      .add_option_function<std::string>(
          "--part", [&part](const std::string& text) { part = *datasets::parse_split_part(text); },
          "the part of the split (the test part: sparserl bench --part test)")
      ->type_name("train|val")
      ->default_str(std::string(datasets::to_string(part)))
      ->check(
          [command](const std::string& text) {
            if (text == "test") {
              return "sparserl " + command +
                     " does not read the test part: only `sparserl bench` and "
                     "`sparserl eval` given "
                     "--part test do, once per study (docs/benchmark.md)";
            }
            return datasets::parse_split_part(text) ? std::string() : text + " not in {train,val}";
          },
          "", "choice");
}

std::filesystem::path MatrixLocations::data_dir_or_default() const {
  return data_dir ? std::filesystem::path(*data_dir) : datasets::default_data_dir();
}

std::vector<std::filesystem::path> MatrixLocations::index_paths() const {
  return {indexes.begin(), indexes.end()};
}

CLI::Option* add_data_dir(CLI::App& app, MatrixLocations& where) {
  return app
      .add_option("--data-dir", where.data_dir,
                  "where suitesparse-v1 matrices are found (and fetched to) (default: "
                  "$SPARSERL_DATA_DIR, else ./data)")
      ->type_name("DIR");
}

CLI::Option* add_indexes(CLI::App& app, MatrixLocations& where) {
  return repeatable(app.add_option("--index", where.indexes,
                                   "also look suitesparse-v1 matrices up in this SuiteSparse "
                                   "index (a folder with an INDEX.csv, or the CSV itself), e.g. "
                                   "../shared/matrices (repeatable)"))
      ->type_name("PATH");
}

void add_matrix_locations(CLI::App& app, MatrixLocations& where) {
  add_data_dir(app, where);
  add_indexes(app, where);
}

experiments::Config RunArgs::config(const std::filesystem::path& file) const {
  return experiments::Config::load(file, overrides);
}

experiments::RunnerOptions RunArgs::runner_options(const std::string& name,
                                                   const std::vector<std::string>& argv) const {
  experiments::RunnerOptions out = options;
  out.command = command_line(name, argv);
  return out;
}

void add_run_options(CLI::App& app, RunArgs& args, const std::string& example) {
  repeatable(
      app.add_option("--set", args.overrides,
                     "override one key (repeatable), checked like the file: --set " + example))
      ->type_name("KEY=VALUE");
  app.add_option("--root", args.options.root, "the folder relative paths of the config start from")
      ->type_name("DIR");
  app.add_option("--runs-dir", args.options.runs_dir,
                 "where the run directory goes (default: experiment.output_dir)")
      ->type_name("DIR");
}

CLI::Option* add_part_with_test(CLI::App& app, std::optional<std::string>& part,
                                const std::string& what, const std::string& key) {
  return one_of(app.add_option("--part", part,
                               "the part of data.split to " + what + " (over " + key +
                                   "); the test part is read only this way: a config or --set "
                                   "asking for it is refused"),
                {"train", "val", "test"});
}

std::string command_line(const std::string& name, const std::vector<std::string>& argv) {
  std::string line = "sparserl " + name;
  for (const std::string& a : argv) line += " " + a;
  return line;
}

int report_outcome(const experiments::RunOutcome& outcome, bool resumable) {
  std::cout << experiments::describe_outcome(outcome, resumable);
  return experiments::exit_status(outcome);
}

}  // namespace sparserl::tools
