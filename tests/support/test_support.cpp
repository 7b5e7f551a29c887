// Implements the test helpers declared in test_support.hpp.
#include "test_support.hpp"

#include <sys/wait.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "sparserl/datasets/file_tree.hpp"

namespace sparserl::testing {

void skip(std::string_view why) {
  std::cout << "SKIPPED: " << why << std::endl;
  std::fflush(nullptr);
  std::_Exit(kSkipExitCode);
}

std::filesystem::path shared_dir() {
  std::filesystem::path dir = SPARSERL_TEST_SHARED_DIR;
  if (const char* env = std::getenv("SPARSERL_SHARED_DIR"); env != nullptr && *env != '\0') {
    dir = env;
  }
  if (!std::filesystem::is_directory(dir / "matrices")) {
    skip("the shared folder with matrices is absent: " + dir.string());
  }
  return dir;
}

std::filesystem::path shared_matrices_dir() { return shared_dir() / "matrices"; }

std::filesystem::path scratch_dir(std::string_view test_name) {
  std::string name(test_name);
  for (char& c : name) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!plain) c = '_';
  }
  std::filesystem::path dir = std::filesystem::path(SPARSERL_TEST_BINARY_DIR) / "scratch" / name;
  sparserl::datasets::remove_tree(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::filesystem::path source_dir() { return SPARSERL_TEST_SOURCE_DIR; }
std::filesystem::path binary_dir() { return SPARSERL_TEST_BINARY_DIR; }

std::string run_command(const std::string& command, int& status) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot start a shell for: " + command);
  std::string output;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  status = ::pclose(pipe);
  return output;
}

CommandResult run_shell(const std::string& command) {
  CommandResult r;
  int status = 0;
  r.output = run_command(command, status);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string quoted(const std::filesystem::path& p) { return shell_quote(p.string()); }

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace sparserl::testing
