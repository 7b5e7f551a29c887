# One interface target carries the project's warning flags; every sparserl target links it privately,
# so third-party headers (LibTorch, Boost) included as SYSTEM do not drown our own warnings.
add_library(sparserl_warnings INTERFACE)
add_library(sparserl::warnings ALIAS sparserl_warnings)
target_compile_options(sparserl_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual
  -Wimplicit-fallthrough)
# GCC 12 reports -Wrestrict false positives inside libstdc++'s std::string concatenation (GCC bug
# 105329); GCC 13 fixed it.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(sparserl_warnings INTERFACE -Wno-restrict)
endif()
