// `sparserl abi`: prints the kernel ABI registry - what a generated program receives for each
// (op, format), the prelude constants and the static-check reasons. With --markdown it prints the
// page committed as docs/kernel-abi.md (a test fails when the two differ), so regenerating the
// documentation is `sparserl abi --markdown > docs/kernel-abi.md`.
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sparserl/reward/abi.hpp"

namespace sparserl::tools {
namespace {

constexpr const char* kUsage =
    "usage: sparserl abi [--markdown]\n"
    "\n"
    "Prints the kernel ABI registry: per (op, format) the kernel's argument list with types and\n"
    "lengths, the prelude constants, and the static-check reasons.\n"
    "\n"
    "  --markdown   print docs/kernel-abi.md instead of the plain-text summary\n";

int run_abi(const std::vector<std::string>& argv) {
  const Args args(argv, {"markdown"});
  args.allow_only({});
  if (!args.positional().empty()) {
    throw UsageError("unexpected argument '" + args.positional().front() + "'");
  }
  std::cout << (args.flag("markdown") ? reward::render_abi_markdown() : reward::render_abi_text());
  return 0;
}

const CommandRegistration kRegistration(Command{
    "abi", "print the kernel ABI registry (--markdown: docs/kernel-abi.md)", kUsage, run_abi});

}  // namespace
}  // namespace sparserl::tools
