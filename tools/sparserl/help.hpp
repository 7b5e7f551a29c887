// The layout of `sparserl COMMAND --help`, generated from the command's CLI11 declarations, so that
// the usage text is never written twice: a usage line made of the positionals and options (optional
// ones in brackets, repeatable ones followed by "...", two optional ones that exclude each other as
// [A | B]), the command's description, one line per argument and option with its help, default and
// accepted values, and the footer. A command group lists its subcommands, each with its usage line
// and description.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace sparserl::tools {

class HelpLayout : public CLI::FormatterBase {
 public:
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override;
};

}  // namespace sparserl::tools
