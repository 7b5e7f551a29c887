// `sparserl config`: checks an experiment config and prints it resolved (every key with the value a
// run would use), or prints the reference of every key as Markdown (docs/config.md).
#include <iostream>

#include "cli.hpp"
#include "sparserl/experiments/config.hpp"

namespace sparserl::tools {
namespace {

int run_config(const std::vector<std::string>& argv) {
  Args args(argv, {"markdown"});
  args.allow_only({"set"});
  if (args.flag("markdown")) {
    std::cout << experiments::experiment_schema().render_markdown();
    return 0;
  }
  if (args.positional().size() > 1) throw UsageError("expected at most one CONFIG file");
  const std::vector<std::string> overrides = args.all("set");
  experiments::Config config = args.positional().empty()
                                   ? experiments::Config()
                                   : experiments::Config::load(args.positional(0, "CONFIG"), overrides);
  if (args.positional().empty()) {
    for (const std::string& o : overrides) config.set(o);
  }
  std::cout << config.to_toml();
  return 0;
}

const CommandRegistration kConfig({"config", "check a config file and print it resolved",
                                   "usage: sparserl config [CONFIG] [--set section.key=value ...]\n"
                                   "       sparserl config --markdown\n\n"
                                   "Reads CONFIG (or the defaults), applies the overrides, checks every key and\n"
                                   "prints the resolved config. --markdown prints the reference of every key.\n",
                                   run_config});

}  // namespace
}  // namespace sparserl::tools
