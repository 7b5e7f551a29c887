// The command registry and the parse-run-exit status path declared in cli.hpp
// (and, until every command declares its options, the hand-written Args).
#include "cli.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <iostream>

#include "help.hpp"

namespace sparserl::tools {

Args::Args(std::vector<std::string> argv, std::vector<std::string> switches)
    : switches_(std::move(switches)) {
  bool only_positional = false;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (only_positional || a.size() < 3 || a.rfind("--", 0) != 0) {
      if (a == "--") {
        only_positional = true;
        continue;
      }
      if (!only_positional && a.size() >= 2 && a[0] == '-' && a != "-" &&
          !(a[1] >= '0' && a[1] <= '9')) {
        throw UsageError("unknown option '" + a + "'");
      }
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (std::find(switches_.begin(), switches_.end(), name) != switches_.end()) {
      if (value) throw UsageError("--" + name + " takes no value");
      switches_given_.push_back(name);
      continue;
    }
    if (!value) {
      if (i + 1 >= argv.size()) throw UsageError("--" + name + " needs a value");
      value = argv[++i];
    }
    options_.emplace(name, *value);
  }
}

const std::string& Args::positional(std::size_t i, std::string_view what) const {
  if (i >= positional_.size()) throw UsageError("missing " + std::string(what));
  return positional_[i];
}

bool Args::flag(const std::string& name) const {
  return std::find(switches_given_.begin(), switches_given_.end(), name) != switches_given_.end();
}

std::optional<std::string> Args::option(const std::string& name) const {
  auto range = options_.equal_range(name);
  if (range.first == range.second) return std::nullopt;
  std::optional<std::string> last;
  for (auto it = range.first; it != range.second; ++it) last = it->second;
  return last;
}

std::string Args::option_or(const std::string& name, std::string fallback) const {
  auto v = option(name);
  return v ? *v : std::move(fallback);
}

std::string Args::required(const std::string& name) const {
  auto v = option(name);
  if (!v) throw UsageError("--" + name + " is required");
  return *v;
}

long long Args::integer(const std::string& name, long long fallback, long long min,
                        long long max) const {
  auto v = option(name);
  if (!v) return fallback;
  long long out = 0;
  auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || ptr != v->data() + v->size()) {
    throw UsageError("--" + name + " expects an integer, got '" + *v + "'");
  }
  if (out < min || out > max) {
    throw UsageError("--" + name + " must lie in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "], got " + *v);
  }
  return out;
}

double Args::real(const std::string& name, double fallback) const {
  auto v = option(name);
  if (!v) return fallback;
  char* end = nullptr;
  const double out = std::strtod(v->c_str(), &end);
  if (v->empty() || end != v->c_str() + v->size()) {
    throw UsageError("--" + name + " expects a number, got '" + *v + "'");
  }
  return out;
}

std::vector<std::string> Args::all(const std::string& name) const {
  std::vector<std::string> out;
  auto range = options_.equal_range(name);
  for (auto it = range.first; it != range.second; ++it) out.push_back(it->second);
  return out;
}

void Args::allow_only(const std::vector<std::string>& known) const {
  for (const auto& [name, value] : options_) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw UsageError("unknown option '--" + name + "'");
    }
  }
}

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

std::unique_ptr<CLI::App> make_parser(const Command& command, Run& run) {
  auto app = std::make_unique<CLI::App>(command.summary, "sparserl " + command.name);
  app->formatter(std::make_shared<HelpLayout>());
  app->set_help_flag("-h,--help", "print this help");
  // As before CLI11: an option given twice takes its last value (repeatable options keep all).
  app->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
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

int run_legacy(const Command& command, const std::vector<std::string>& argv) {
  for (const std::string& a : argv) {
    if (a == "--help" || a == "-h") {
      std::cout << command.usage;
      return 0;
    }
  }
  try {
    return command.run(argv);
  } catch (const UsageError& e) {
    std::cerr << "sparserl " << command.name << ": " << e.what() << "\n\n" << command.usage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "sparserl " << command.name << ": error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int run_command(const Command& command, const std::vector<std::string>& argv) {
  if (!command.declare) return run_legacy(command, argv);
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

datasets::SplitPart non_test_part(const Args& args, const std::string& command,
                                  const std::string& fallback) {
  const std::string text = args.option_or("part", fallback);
  const auto part = datasets::parse_split_part(text);
  if (!part) throw UsageError("--part must be train, val or test, got '" + text + "'");
  if (*part == datasets::SplitPart::test) {
    throw UsageError("sparserl " + command +
                     " does not read the test part: only `sparserl bench` and `sparserl "
                     "eval` "
                     "given --part test do, once per study (docs/benchmark.md)");
  }
  return *part;
}

}  // namespace sparserl::tools
