// Where tests find their inputs (the shared SuiteSparse matrices, the built worker, a scratch folder)
// and how a test says it cannot run here. A skipped test exits with 77, which CTest reports as
// "skipped": a missing GPU or a missing ../shared never turns into a pass.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace sparserl::testing {

// Exit code that sparserl_add_test registers as SKIP_RETURN_CODE.
inline constexpr int kSkipExitCode = 77;

// Prints why and exits with kSkipExitCode. Each CTest test runs one TEST_CASE, so only it is skipped.
[[noreturn]] void skip(std::string_view why);

// ../shared beside the project (or SPARSERL_SHARED_DIR from the environment); skips if absent.
std::filesystem::path shared_dir();
std::filesystem::path shared_matrices_dir();  // shared_dir()/matrices

// A fresh empty folder under the build tree for this test, removed at the start of the next run;
// held by this process (another process holding it is waited for, up to 300 s or
// SPARSERL_SCRATCH_WAIT_S, then std::runtime_error names it).
std::filesystem::path scratch_dir(std::string_view test_name);

// Path of a built executable or of the source tree, from compile definitions.
std::filesystem::path source_dir();
std::filesystem::path binary_dir();

// A file's bytes (std::runtime_error naming it when it cannot be read).
std::string read_bytes(const std::filesystem::path& path);

// Runs COMMAND through the shell with stderr joined to stdout: its output, and in `status` its wait
// status as pclose() returns it (WEXITSTATUS for the exit code). Throws std::runtime_error when the
// shell cannot be started.
std::string run_command(const std::string& command, int& status);

// The same with the exit code in `status` (-1 for a command that did not exit: a signal).
struct CommandResult {
  int status = -1;
  std::string output;  // stdout and stderr together
};
CommandResult run_shell(const std::string& command);

// A string, or a path, as one shell word: 'it'\''s'.
std::string shell_quote(const std::string& s);
std::string quoted(const std::filesystem::path& p);

}  // namespace sparserl::testing
