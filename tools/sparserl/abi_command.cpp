// `sparserl abi`: prints the kernel ABI registry - what a generated program receives for each
// (op, format), the prelude constants and the static-check reasons. With --markdown it prints the
// page committed as docs/kernel-abi.md (a test fails when the two differ), so regenerating the
// documentation is `sparserl abi --markdown > docs/kernel-abi.md`.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sparserl/reward/abi.hpp"

namespace sparserl::tools {
namespace {

Run declare_abi(CLI::App& app) {
  app.description(
      "Prints the kernel ABI registry: per (op, format) the kernel's argument list with types and\n"
      "lengths, the prelude constants, and the static-check reasons.");
  auto markdown = std::make_shared<bool>(false);
  app.add_flag("--markdown", *markdown,
               "print docs/kernel-abi.md instead of the plain-text summary");
  return [markdown](const std::vector<std::string>&) {
    std::cout << (*markdown ? reward::render_abi_markdown() : reward::render_abi_text());
    return 0;
  };
}

const CommandRegistration kRegistration(
    "abi", "print the kernel ABI registry (--markdown: docs/kernel-abi.md)", declare_abi);

}  // namespace
}  // namespace sparserl::tools
