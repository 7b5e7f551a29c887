// The command-line plumbing shared by every `sparserl` command: a registry that command files add
// themselves to (one file per command group, no central list to edit), and the one place where a
// command's arguments are parsed (CLI11, from the options the command declares) and its failures
// become exit statuses: 2 with the usage for bad arguments, 1 with a message for inputs that cannot
// be read. options.hpp holds the option shapes the commands share, help.hpp the help layout.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sparserl/datasets/splits.hpp"

namespace sparserl::tools {

// Bad arguments that only the command can see (a combination of options, a value another library
// refuses): printed with the command's usage, exit status 2. Bad arguments that CLI11 sees from the
// declarations (an unknown option, a value out of range) take the same way.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Transitional, until every command declares its options: the hand-written argument parser.
class Args {
 public:
  // `switches` are options that take no value (e.g. --json); every other --name takes one.
  Args(std::vector<std::string> argv, std::vector<std::string> switches);

  [[nodiscard]] const std::vector<std::string>& positional() const { return positional_; }
  // The i-th positional argument, or a UsageError naming `what`.
  [[nodiscard]] const std::string& positional(std::size_t i, std::string_view what) const;

  [[nodiscard]] bool flag(const std::string& name) const;
  [[nodiscard]] std::optional<std::string> option(const std::string& name) const;
  [[nodiscard]] std::string option_or(const std::string& name, std::string fallback) const;
  [[nodiscard]] std::string required(const std::string& name) const;
  [[nodiscard]] long long integer(const std::string& name, long long fallback, long long min,
                                  long long max) const;
  [[nodiscard]] double real(const std::string& name, double fallback) const;
  // Every option given more than once, in order (e.g. --set a=b --set c=d).
  [[nodiscard]] std::vector<std::string> all(const std::string& name) const;

  // Throws UsageError if an option was given that is not in `known` (switches are always known).
  void allow_only(const std::vector<std::string>& known) const;

 private:
  std::vector<std::string> positional_;
  std::multimap<std::string, std::string> options_;
  std::vector<std::string> switches_given_;
  std::vector<std::string> switches_;
};

// Transitional: --part for a command other than bench / eval (options.hpp's add_non_test_part).
datasets::SplitPart non_test_part(const Args& args, const std::string& command,
                                  const std::string& fallback = "train");

// Runs a command once its arguments have parsed; `argv` are the arguments after
// the command name, as given (a run records them).
using Run = std::function<int(const std::vector<std::string>& argv)>;
// Declares the arguments of a command (or of one of its subcommands) on `app`,
// bound to state that the returned Run owns.
using Declare = std::function<Run(CLI::App& app)>;

struct Command {
  std::string name;     // "data", "check", ...
  std::string summary;  // one line for `sparserl --help`; the help's description
                        // unless `declare` sets a longer one
                        // (app.description(...), app.footer(...))
  // Transitional, until every command declares its options: the hand-written usage and runner.
  std::string usage = {};
  std::function<int(const std::vector<std::string>& args)> run = {};
  Declare declare = {};
};

// Adds a command to the registry; call through a static CommandRegistration in the command's file.
void register_command(Command command);
const std::map<std::string, Command>& commands();

struct CommandRegistration {
  explicit CommandRegistration(Command command) { register_command(std::move(command)); }
};

// The parser of `command`: an App named "sparserl NAME" with the project's help layout and the
// command's declarations; `run` receives what runs the command once the arguments parse.
std::unique_ptr<CLI::App> make_parser(const Command& command, Run& run);

// Parses `argv` (the arguments after the command name) and runs the command. Returns its exit
// status: 0 after --help (printed on stdout), 2 after bad arguments (the message and the command's
// usage on stderr), 1 after any other failure (the message on stderr).
int run_command(const Command& command, const std::vector<std::string>& argv);

// The subcommands of a command group (`sparserl data info|convert|...`): each declares its own
// arguments on its own App; the group's Run runs the one that was given.
class Subcommands {
 public:
  explicit Subcommands(CLI::App& group);
  void add(const std::string& name, const std::string& description, const Declare& declare);
  [[nodiscard]] Run run() const;

 private:
  CLI::App& group_;
  std::vector<std::pair<const CLI::App*, Run>> subcommands_;
};

}  // namespace sparserl::tools
