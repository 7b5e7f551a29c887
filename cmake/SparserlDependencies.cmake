# Finds every external package once, for the whole tree, and smooths over the two platforms we build
# on: Debian 12 (Catch2 2, Boost 1.74, Debian's CPU LibTorch 1.13) and Ubuntu 24.04 GPU hosts (Catch2 3,
# Boost 1.83, PyTorch's LibTorch with CUDA). Optional pieces (libcurl, LibTorch under AUTO) are reported
# in one summary line each so a user sees what the build left out and why.

# CUDA toolkit: NVRTC compiles candidate kernels on every machine; cudart, cuSPARSE and CUPTI are linked
# only by the GPU side of sparserl-worker. None of them links libcuda, so binaries start without a driver.
if(NOT CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT} AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit 12.0 REQUIRED)
message(STATUS "sparserl: CUDA toolkit ${CUDAToolkit_VERSION} (nvcc in ${CUDAToolkit_BIN_DIR})")

find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)

# Boost.Process (v1 API) and Boost.Asio spawn and watch the evaluator's worker processes; both are
# header-only. Boost.Process v1 wants Boost.Filesystem's compiled library unless it may use
# std::filesystem (BOOST_PROCESS_USE_STD_FS, Boost >= 1.77): Debian 12 has 1.74 and the library, the
# Ubuntu GPU hosts have 1.83 headers without it. sparserl::boost_process hides the difference.
# Config mode: FindBoost is gone from recent CMake.
find_package(Boost 1.74 REQUIRED CONFIG)
add_library(sparserl_boost_process INTERFACE)
add_library(sparserl::boost_process ALIAS sparserl_boost_process)
target_link_libraries(sparserl_boost_process INTERFACE Boost::headers Threads::Threads)
if(Boost_VERSION VERSION_LESS 1.77)
  find_package(Boost 1.74 REQUIRED CONFIG COMPONENTS filesystem)
  target_link_libraries(sparserl_boost_process INTERFACE Boost::filesystem)
else()
  target_compile_definitions(sparserl_boost_process INTERFACE BOOST_PROCESS_USE_STD_FS=1)
endif()
message(STATUS "sparserl: Boost ${Boost_VERSION}")

find_package(HDF5 REQUIRED COMPONENTS C)
if(NOT TARGET hdf5::hdf5)
  add_library(hdf5::hdf5 INTERFACE IMPORTED)
  target_include_directories(hdf5::hdf5 INTERFACE ${HDF5_C_INCLUDE_DIRS})
  target_link_libraries(hdf5::hdf5 INTERFACE ${HDF5_C_LIBRARIES})
  target_compile_definitions(hdf5::hdf5 INTERFACE ${HDF5_C_DEFINITIONS})
endif()

find_package(tomlplusplus 3 REQUIRED)

# nlohmann-json (header-only) reads and writes every JSON file and line: run.json, metrics.jsonl,
# EvalResult and the env's info. 3.11 for lookups by std::string_view; Debian 12 has 3.11.2, the
# Ubuntu GPU hosts 3.11.3.
find_package(nlohmann_json 3.11 REQUIRED)
message(STATUS "sparserl: nlohmann-json ${nlohmann_json_VERSION}")
# CLI11 parses the `sparserl` command line (header-only; Debian 12 has 2.1, the Ubuntu GPU hosts
# 2.4: tools/sparserl uses only what both have). Both packages ship a CMake config with CLI11::CLI11.
find_package(CLI11 2.1 REQUIRED CONFIG)
message(STATUS "sparserl: CLI11 ${CLI11_VERSION}")

# PCRE2 (8-bit) runs the pre-tokenizer patterns of Hugging Face tokenizer.json files (env's
# BpeTokenizer): Unicode classes (\p{L}, \p{N}) and look-aheads, as the `tokenizers` library's
# patterns need. Debian 12 and Ubuntu 24.04 both have 10.42 (libpcre2-dev); the Ubuntu GPU image has
# the runtime (libpcre2-8.so.0) but maybe not the headers, which then travel as a .deb
# (EXTRA_DEBS="libpcre2-dev" with ../shared/device/kit.sh; docs/bpe.md). The runtime's soname is
# accepted where the development symlink is missing.
find_path(SPARSERL_PCRE2_INCLUDE_DIR pcre2.h)
find_library(SPARSERL_PCRE2_LIBRARY NAMES pcre2-8 libpcre2-8.so.0)
if(NOT SPARSERL_PCRE2_INCLUDE_DIR OR NOT SPARSERL_PCRE2_LIBRARY)
  message(FATAL_ERROR "sparserl: PCRE2 (8-bit) not found (pcre2.h: ${SPARSERL_PCRE2_INCLUDE_DIR}, "
    "library: ${SPARSERL_PCRE2_LIBRARY}); install libpcre2-dev (tools/setup.sh does)")
endif()
add_library(sparserl_pcre2 INTERFACE)
add_library(sparserl::pcre2 ALIAS sparserl_pcre2)
target_include_directories(sparserl_pcre2 SYSTEM INTERFACE "${SPARSERL_PCRE2_INCLUDE_DIR}")
target_link_libraries(sparserl_pcre2 INTERFACE "${SPARSERL_PCRE2_LIBRARY}")
target_compile_definitions(sparserl_pcre2 INTERFACE PCRE2_CODE_UNIT_WIDTH=8)
message(STATUS "sparserl: PCRE2 ${SPARSERL_PCRE2_LIBRARY}")

find_package(CURL QUIET)
if(CURL_FOUND)
  set(SPARSERL_HAVE_CURL ON)
  message(STATUS "sparserl: libcurl ${CURL_VERSION_STRING}: matrix downloads enabled")
else()
  set(SPARSERL_HAVE_CURL OFF)
  message(STATUS "sparserl: libcurl not found: `sparserl data fetch` will report that downloads are unavailable")
endif()

# LibTorch: only agents/ (and the experiment runner that wires agents in) include it.
set(SPARSERL_HAVE_TORCH OFF)
if(NOT SPARSERL_WITH_TORCH STREQUAL "OFF")
  if(SPARSERL_WITH_TORCH STREQUAL "ON")
    find_package(Torch REQUIRED)
  else()
    find_package(Torch QUIET)
  endif()
  if(Torch_FOUND)
    set(SPARSERL_HAVE_TORCH ON)
    message(STATUS "sparserl: LibTorch found (${Torch_DIR}): learned agents enabled")
  else()
    message(STATUS "sparserl: LibTorch not found: learned agents disabled (template and random agents remain)")
  endif()
endif()

if(SPARSERL_BUILD_TESTS)
  # Catch2 3 ships Catch2WithMain; Catch2 2 needs a TU with CATCH_CONFIG_MAIN. tests/support hides both.
  find_package(Catch2 3 QUIET CONFIG)
  if(Catch2_FOUND)
    set(SPARSERL_CATCH2_MAJOR 3)
  else()
    find_package(Catch2 2 REQUIRED CONFIG)
    set(SPARSERL_CATCH2_MAJOR 2)
  endif()
  message(STATUS "sparserl: Catch2 ${Catch2_VERSION} (major ${SPARSERL_CATCH2_MAJOR})")
  include(Catch)
endif()
