// The `sparserl` command line as its declarations make it: for every registered command and
// subcommand, --help exits 0 and lists each declared option and argument (the help is generated
// from the declarations, so a new option cannot be left out of it), and a value outside a closed
// set is refused with exit status 2, a message naming the option, the value and the accepted
// values, and the usage. Checked in-process through run_command (cli.hpp), which is what main()
// calls, and once through the built binary.
#include <sys/wait.h>

#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "cli.hpp"
#include "test_support.hpp"

using sparserl::testing::has_substring;
namespace tools = sparserl::tools;

namespace {

struct Result {
  int status = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// run_command as main() calls it, with std::cout and std::cerr captured.
Result run(const tools::Command& command, const std::vector<std::string>& argv) {
  std::ostringstream out, err;
  std::streambuf* const old_out = std::cout.rdbuf(out.rdbuf());
  std::streambuf* const old_err = std::cerr.rdbuf(err.rdbuf());
  Result r;
  try {
    r.status = tools::run_command(command, argv);
  } catch (...) {
    std::cout.rdbuf(old_out);
    std::cerr.rdbuf(old_err);
    throw;
  }
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// A command's App and its subcommands' (recursively), each with the words that reach it:
// {} for the command, {"info"} for `data info`.
void collect(CLI::App* app, const std::vector<std::string>& path,
             std::vector<std::pair<std::vector<std::string>, CLI::App*>>& out) {
  out.emplace_back(path, app);
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
    std::vector<std::string> deeper = path;
    deeper.push_back(sub->get_name());
    collect(sub, deeper, out);
  }
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += " " + w;
  return out;
}

}  // namespace

TEST_CASE("every command's --help is generated from its declarations and lists each option",
          "[tools][cli]") {
  // 15 commands; `agent` only where LibTorch is built.
  REQUIRE(tools::commands().size() >= (SPARSERL_TOOLS_TESTS_HAVE_AGENTS ? 15u : 14u));
  CHECK(tools::commands().count("agent") == (SPARSERL_TOOLS_TESTS_HAVE_AGENTS ? 1u : 0u));
  for (const auto& [name, command] : tools::commands()) {
    CHECK_FALSE(command.summary.empty());
    tools::Run unused;
    const std::unique_ptr<CLI::App> parser = tools::make_parser(command, unused);
    std::vector<std::pair<std::vector<std::string>, CLI::App*>> apps;
    collect(parser.get(), {}, apps);
    for (const auto& [path, app] : apps) {
      const std::string shown = "sparserl " + name + joined(path);
      INFO(shown << " --help");
      std::vector<std::string> argv = path;
      argv.emplace_back("--help");
      const Result r = run(command, argv);
      CHECK(r.status == 0);
      CHECK(r.err.empty());
      CHECK_THAT(r.out, has_substring("usage: " + shown));
      // What the formatter makes of the declarations, and nothing hand-written beside it.
      CHECK(r.out == app->get_formatter()->make_help(app, shown, CLI::AppFormatMode::Normal));
      CHECK_FALSE(app->get_description().empty());
      for (const CLI::Option* o : app->get_options()) {
        INFO("option " << o->get_name(true, true));
        CHECK_FALSE(o->get_description().empty());
        if (o->nonpositional()) {
          CHECK_THAT(r.out, has_substring("--" + o->get_lnames().front()));
        } else {
          CHECK_THAT(r.out, has_substring(o->get_name(true)));
        }
      }
      for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
        CHECK_THAT(r.out, has_substring("\n  " + sub->get_name() + " "));
      }
    }
  }
}

TEST_CASE("a value outside a closed set names the option, the value and the accepted values",
          "[tools][cli]") {
  int checked = 0;
  for (const auto& [name, command] : tools::commands()) {
    tools::Run unused;
    const std::unique_ptr<CLI::App> parser = tools::make_parser(command, unused);
    std::vector<std::pair<std::vector<std::string>, CLI::App*>> apps;
    collect(parser.get(), {}, apps);
    for (const auto& [path, app] : apps) {
      for (CLI::Option* o : app->get_options()) {
        // The options declared as one of a set (options.hpp's one_of, --part, --source).
        bool choice = false;
        try {
          choice = o->get_validator("choice") != nullptr;
        } catch (const CLI::OptionNotFound&) {
          choice = false;
        }
        if (!choice) continue;
        const std::string option = "--" + o->get_lnames().front();
        std::vector<std::string> argv = path;
        argv.insert(argv.end(), {option, "not-a-choice"});
        INFO("sparserl " << name << joined(argv));
        const Result r = run(command, argv);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, has_substring(option + ": not-a-choice not in {"));
        // Each accepted value (the placeholder spells them a|b|c) is in the message.
        std::string type = o->get_type_name();
        type = type.substr(0, type.find(':'));
        const std::string message = r.err.substr(0, r.err.find('\n'));
        std::istringstream values(type);
        for (std::string value; std::getline(values, value, '|');) {
          CHECK_THAT(message, has_substring(value));
        }
        CHECK_THAT(r.err, has_substring("usage: sparserl " + name));
        ++checked;
      }
    }
  }
  CHECK(checked >= (SPARSERL_TOOLS_TESTS_HAVE_AGENTS ? 20 : 10));  // fewer without `agent`
}

TEST_CASE("an integer out of range names the option and the range", "[tools][cli]") {
  const tools::Command& compare = tools::commands().at("compare");
  Result r = run(compare, {"run", "--reps", "0"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, has_substring("sparserl compare: --reps: Value 0 not in range"));
  CHECK_THAT(r.err, has_substring("10000000"));
  if (SPARSERL_TOOLS_TESTS_HAVE_AGENTS) {
    const tools::Command& agent = tools::commands().at("agent");
    r = run(agent, {"rl", "--updates", "0"});
    CHECK(r.status == 2);
    CHECK_THAT(r.err,
               has_substring("sparserl agent rl: --updates: 0 is not an integer of at least 1"));
  }
  const tools::Command& data = tools::commands().at("data");
  r = run(data, {"split", "--seed", "-1"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, has_substring("sparserl data split: --seed: -1 is not an unsigned integer"));
}

TEST_CASE("the binary lists every command and prints the declared help", "[tools][cli]") {
  int status = 0;
  const std::string overview =
      sparserl::testing::run_command(std::string(SPARSERL_CLI_PATH) + " --help", status);
  CHECK(WEXITSTATUS(status) == 0);
  for (const auto& [name, command] : tools::commands()) {
    CHECK_THAT(overview, has_substring("  " + name + " "));
  }
  const std::string help =
      sparserl::testing::run_command(std::string(SPARSERL_CLI_PATH) + " data info --help", status);
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(help == run(tools::commands().at("data"), {"info", "--help"}).out);
  const std::string bad = sparserl::testing::run_command(
      std::string(SPARSERL_CLI_PATH) + " check p.cu --matrix m --op spmx", status);
  CHECK(WEXITSTATUS(status) == 2);
  CHECK_THAT(bad, has_substring("sparserl check: --op: spmx not in {spmv,spmm}"));
  CHECK_THAT(bad, has_substring("usage: sparserl check PROGRAM"));
}
