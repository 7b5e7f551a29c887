// The single place that knows which Catch2 major is installed: Debian 12 ships Catch2 2.13 (one header),
// Ubuntu 24.04 ships Catch2 3 (split headers, namespaced Approx). Every test includes this file only.
#pragma once

#include <string>

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#define SPARSERL_CATCH2_MAJOR 3
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#define SPARSERL_CATCH2_MAJOR 2
#endif

namespace sparserl::testing {

// A matcher for "the message contains this text" under either major (Catch2 3 renamed it).
inline auto has_substring(const std::string& text) {
#if SPARSERL_CATCH2_MAJOR == 3
  return Catch::Matchers::ContainsSubstring(text);
#else
  return Catch::Matchers::Contains(text);
#endif
}

}  // namespace sparserl::testing
