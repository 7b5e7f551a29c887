// The CLI tests' one way to judge a command: it exited with an expected status and its output
// holds each of a few pieces of text (a Catch2 CHECK each, the command and its whole output shown
// when one fails). Header-only, so test_support.cpp stays free of Catch2 for the benchmark programs
// that link it.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "catch.hpp"
#include "test_support.hpp"

namespace sparserl::testing {

inline void check_output(const CommandResult& result, int status,
                         std::initializer_list<std::string_view> pieces) {
  INFO(result.output);
  CHECK(result.status == status);
  for (std::string_view piece : pieces) CHECK_THAT(result.output, has_substring(std::string(piece)));
}

// Runs COMMAND (run_shell) and checks it as check_output does; returns its output.
inline std::string check_command(const std::string& command, int status,
                                 std::initializer_list<std::string_view> pieces) {
  INFO(command);
  CommandResult result = run_shell(command);
  check_output(result, status, pieces);
  return std::move(result.output);
}

}  // namespace sparserl::testing
