// The layout of `sparserl COMMAND --help`, generated from the command's CLI11 declarations, so that
// the usage text is never written twice: a usage line made of the positionals and options (optional
// ones in brackets, repeatable ones followed by "...", two optional ones that exclude each other as
// [A | B]), the command's description, one line per argument and option with its help, default and
// accepted values, and the footer. A command group lists its subcommands, each with its usage line
// and description.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>

namespace sparserl::tools {

class HelpLayout : public CLI::FormatterBase {
 public:
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override;
};

// The usage line of `app` called `name` ("sparserl compare RUN_DIR... [--out
// DIR] ..."), for a line where `name` starts at `column`: wrapped at 100
// columns, continuation lines aligned after the name.
std::string synopsis(const CLI::App& app, const std::string& name, std::size_t column);

}  // namespace sparserl::tools
