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
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sparserl::tools {

// Bad arguments that only the command can see (a combination of options, a value another library
// refuses): printed with the command's usage, exit status 2. Bad arguments that CLI11 sees from the
// declarations (an unknown option, a value out of range) take the same way.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Runs a command once its arguments have parsed; `argv` are the arguments after
// the command name, as given (a run records them).
using Run = std::function<int(const std::vector<std::string>& argv)>;
// Declares the arguments of a command (or of one of its subcommands) on `app`, bound to state that
// the returned Run owns; it may set the help's description and footer (app.description(...)).
using Declare = std::function<Run(CLI::App& app)>;

struct Command {
  std::string name;     // "data", "check", ...
  std::string summary;  // one line for `sparserl --help` (and the help's description by default)
  Declare declare;
};

// Adds a command to the registry; call through a static CommandRegistration in the command's file.
void register_command(Command command);
const std::map<std::string, Command>& commands();

struct CommandRegistration {
  explicit CommandRegistration(Command command) { register_command(std::move(command)); }
  CommandRegistration(std::string name, std::string summary, Declare declare)
      : CommandRegistration(Command{std::move(name), std::move(summary), std::move(declare)}) {}
};

// The parser of `command`: an App named "sparserl NAME" with the project's help layout and the
// command's declarations; `run` receives what runs the command once the arguments parse.
std::unique_ptr<CLI::App> make_parser(const Command& command, Run& run);

// Parses `argv` (the arguments after the command name) and runs the command. Returns its exit
// status: 0 after --help (printed on stdout), 2 after bad arguments (the message and the command's
// usage on stderr), 1 after any other failure (the message on stderr).
int run_command(const Command& command, const std::vector<std::string>& argv);

// The whole command line after the program's name: `sparserl COMMAND ARGS...` as main() runs it,
// callable from a test executable that links the commands (and, say, an algorithm of its own).
// Prints the list of commands for none (exit 2) or --help (0); 2 for an unknown command;
// otherwise the command's status (run_command).
int run_sparserl(const std::vector<std::string>& args);

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
