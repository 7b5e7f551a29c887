// The command-line plumbing shared by every `sparserl` subcommand: a registry that subcommand files
// add themselves to (one file per command group, no central list to edit), a small argument parser
// with --flag value / --flag=value / boolean switches, and the usage error that prints help and exits 2.
#pragma once

#include "sparserl/datasets/splits.hpp"

#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sparserl::tools {

// Bad arguments: the message is printed with the command's usage, exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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

// The train or val part named by --part (default `fallback`) for a command other than `sparserl
// bench` / `sparserl eval`: the test part of a split is read only by those two, given --part test
// (docs/benchmark.md), so anything else asking for it is a UsageError saying so.
datasets::SplitPart non_test_part(const Args& args, const std::string& command,
                                  const std::string& fallback = "train");

struct Command {
  std::string name;     // "data", "check", ...
  std::string summary;  // one line for `sparserl --help`
  std::string usage;    // the full usage text printed with --help and on usage errors
  std::function<int(const std::vector<std::string>& args)> run;  // args after the command name
};

// Adds a command to the registry; call through a static CommandRegistration in the command's file.
void register_command(Command command);
const std::map<std::string, Command>& commands();

struct CommandRegistration {
  explicit CommandRegistration(Command command) { register_command(std::move(command)); }
};

}  // namespace sparserl::tools
