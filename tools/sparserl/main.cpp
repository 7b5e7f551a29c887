// `sparserl`: the project's command line. Each command group lives in its own file and registers
// itself (cli.hpp); this file only dispatches, prints help, and turns exceptions into exit codes:
// 0 success, 1 a failure with a message naming the input, 2 bad arguments (usage printed).
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"

namespace {

void print_overview(std::ostream& out) {
  out << "usage: sparserl COMMAND [ARGS...]\n\ncommands:\n";
  for (const auto& [name, command] : sparserl::tools::commands()) {
    out << "  " << name;
    for (std::size_t pad = name.size(); pad < 10; ++pad) out << ' ';
    out << command.summary << "\n";
  }
  out << "\n`sparserl COMMAND --help` describes a command.\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_overview(std::cerr);
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_overview(std::cout);
    return 0;
  }
  const auto& table = sparserl::tools::commands();
  auto it = table.find(args[0]);
  if (it == table.end()) {
    std::cerr << "sparserl: unknown command '" << args[0] << "'\n\n";
    print_overview(std::cerr);
    return 2;
  }
  const sparserl::tools::Command& command = it->second;
  std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const std::string& a : rest) {
    if (a == "--help" || a == "-h") {
      std::cout << command.usage;
      return 0;
    }
  }
  try {
    return command.run(rest);
  } catch (const sparserl::tools::UsageError& e) {
    std::cerr << "sparserl " << command.name << ": " << e.what() << "\n\n" << command.usage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "sparserl " << command.name << ": error: " << e.what() << "\n";
    return 1;
  }
}
