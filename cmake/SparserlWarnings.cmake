# One interface target carries the project's warning flags; every sparserl target links it privately,
# so third-party headers (LibTorch, Boost) included as SYSTEM do not drown our own warnings.
add_library(sparserl_warnings INTERFACE)
add_library(sparserl::warnings ALIAS sparserl_warnings)
target_compile_options(sparserl_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual
  -Wimplicit-fallthrough)
