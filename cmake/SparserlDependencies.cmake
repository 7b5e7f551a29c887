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

# Boost.Process (header-only, needs Boost.Filesystem in 1.74-1.83) and Boost.Asio spawn and watch the
# evaluator's worker processes. Config mode: FindBoost is gone from recent CMake.
find_package(Boost 1.74 REQUIRED CONFIG COMPONENTS filesystem)

find_package(HDF5 REQUIRED COMPONENTS C)
if(NOT TARGET hdf5::hdf5)
  add_library(hdf5::hdf5 INTERFACE IMPORTED)
  target_include_directories(hdf5::hdf5 INTERFACE ${HDF5_C_INCLUDE_DIRS})
  target_link_libraries(hdf5::hdf5 INTERFACE ${HDF5_C_LIBRARIES})
  target_compile_definitions(hdf5::hdf5 INTERFACE ${HDF5_C_DEFINITIONS})
endif()

find_package(tomlplusplus 3 REQUIRED)

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
