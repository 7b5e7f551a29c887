// The command registry and the parse-run-exit status path declared in cli.hpp.
#include "cli.hpp"

#include <iostream>

#include "help.hpp"

namespace sparserl::tools {

namespace {
std::map<std::string, Command>& registry() {
  static std::map<std::string, Command> r;
  return r;
}
}  // namespace

void register_command(Command command) {
  std::string name = command.name;
  registry().emplace(std::move(name), std::move(command));
}

const std::map<std::string, Command>& commands() { return registry(); }

namespace {

void print_overview(std::ostream& out) {
  out << "usage: sparserl COMMAND [ARGS...]\n\ncommands:\n";
  for (const auto& [name, command] : commands()) {
    out << "  " << name;
    for (std::size_t pad = name.size(); pad < 11; ++pad) out << ' ';
    out << command.summary << "\n";
  }
  out << "\n`sparserl COMMAND --help` describes a command.\n";
}

}  // namespace

int run_sparserl(const std::vector<std::string>& args) {
  if (args.empty()) {
    print_overview(std::cerr);
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_overview(std::cout);
    return 0;
  }
  auto it = commands().find(args[0]);
  if (it == commands().end()) {
    std::cerr << "sparserl: unknown command '" << args[0] << "'\n\n";
    print_overview(std::cerr);
    return 2;
  }
  return run_command(it->second, {args.begin() + 1, args.end()});
}

std::unique_ptr<CLI::App> make_parser(const Command& command, Run& run) {
  auto app = std::make_unique<CLI::App>(command.summary, "sparserl " + command.name);
  app->formatter(std::make_shared<HelpLayout>());
  app->set_help_flag("-h,--help", "print this help");
  // As before CLI11: an option given twice takes its last value (repeatable options keep all).
  // Every option's help shows its default, taken from the variable it is bound to.
  app->option_defaults()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->always_capture_default();
  run = command.declare(*app);
  return app;
}

namespace {

// The usage printed with a usage error: the command's whole help (a command
// group's lists every subcommand), whichever subcommand was given.
std::string usage(const CLI::App& app) {
  return app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
}

// "sparserl data fetch": the command and the subcommands given (as far as the parse got).
std::string given_name(const CLI::App& app) {
  std::string name = app.get_name();
  for (const CLI::App* sub = &app; !sub->get_subcommands().empty();) {
    sub = sub->get_subcommands().front();
    name += " " + sub->get_name();
  }
  return name;
}

}  // namespace

int run_command(const Command& command, const std::vector<std::string>& argv) {
  Run run;
  const std::unique_ptr<CLI::App> app = make_parser(command, run);
  try {
    app->parse(std::vector<std::string>(argv.rbegin(), argv.rend()));  // CLI11 takes them reversed
  } catch (const CLI::CallForHelp&) {
    std::cout << app->help();  // the help of the subcommand given, if any
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << given_name(*app) << ": " << e.what() << "\n\n" << usage(*app);
    return 2;
  }
  const std::string prefix = given_name(*app) + ": ";
  try {
    return run(argv);
  } catch (const UsageError& e) {
    std::cerr << prefix << e.what() << "\n\n" << usage(*app);
    return 2;
  } catch (const std::exception& e) {
    std::cerr << prefix << "error: " << e.what() << "\n";
    return 1;
  }
}

Subcommands::Subcommands(CLI::App& group) : group_(group) { group_.require_subcommand(1); }

void Subcommands::add(const std::string& name, const std::string& description,
                      const Declare& declare) {
  CLI::App* sub = group_.add_subcommand(name, description);
  subcommands_.emplace_back(sub, declare(*sub));
}

Run Subcommands::run() const {
  return [subcommands = subcommands_](const std::vector<std::string>& argv) {
    for (const auto& [sub, run] : subcommands) {
      if (sub->parsed()) return run(argv);
    }
    throw std::logic_error("no subcommand parsed");  // require_subcommand(1) makes this unreachable
  };
}

}  // namespace sparserl::tools
