// `sparserl config`: checks an experiment config and prints it resolved (every key with the value a
// run would use), or prints the reference of every key as Markdown (docs/config.md).
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "options.hpp"
#include "sparserl/experiments/config.hpp"

namespace sparserl::tools {
namespace {

struct ConfigArgs {
  std::optional<std::string> file;
  std::vector<std::string> overrides;
  bool markdown = false;
};

Run declare_config(CLI::App& app) {
  app.description(
      "Reads CONFIG (or the defaults), applies the overrides, checks every key and prints the\n"
      "resolved config. --markdown prints the reference of every key (docs/config.md).");
  auto a = std::make_shared<ConfigArgs>();
  CLI::Option* file = app.add_option("CONFIG", a->file, "the config file (default: the defaults)");
  CLI::Option* set =
      repeatable(app.add_option("--set", a->overrides, "override one key (repeatable)"))
          ->type_name("KEY=VALUE");
  app.add_flag("--markdown", a->markdown, "print the reference of every key as Markdown")
      ->excludes(file)
      ->excludes(set);
  return [a](const std::vector<std::string>&) {
    if (a->markdown) {
      std::cout << experiments::experiment_schema().render_markdown();
      return 0;
    }
    experiments::Config config =
        a->file ? experiments::Config::load(*a->file, a->overrides) : experiments::Config();
    if (!a->file) {
      for (const std::string& o : a->overrides) config.set(o);
    }
    std::cout << config.to_toml();
    return 0;
  };
}

const CommandRegistration kConfig("config", "check a config file and print it resolved",
                                  declare_config);

}  // namespace
}  // namespace sparserl::tools
