# The one way to add a test executable: sparserl_add_test(NAME n LABEL cpu|gpu SOURCES ... [LIBS ...]).
# Each Catch2 TEST_CASE becomes its own CTest test (prefixed with the executable name), labelled `cpu`
# or `gpu` plus the folder name. A test that needs something absent (a GPU, ../shared) exits with 77,
# which CTest reports as skipped, never as passed. Tests learn where things are from compile
# definitions, so they run the same from ctest, from the build folder or by hand.
set(SPARSERL_SHARED_DIR "${PROJECT_SOURCE_DIR}/../shared" CACHE PATH
    "The shared folder with SuiteSparse matrices (tests skip what needs it when it is absent)")

# Parses the arguments the helpers share into T_*: NAME, LABEL (cpu or gpu), TIMEOUT (default 300 s)
# and the helper's own list `items` (SOURCES or COMMAND, required) plus LIBS; fails naming `helper`.
macro(_sparserl_test_arguments helper items)
  cmake_parse_arguments(T "" "NAME;LABEL;TIMEOUT" "${items};LIBS" ${ARGN})
  if(NOT T_NAME OR NOT T_${items})
    message(FATAL_ERROR "${helper} needs NAME and ${items}")
  endif()
  if(NOT T_LABEL STREQUAL "cpu" AND NOT T_LABEL STREQUAL "gpu")
    message(FATAL_ERROR "${helper}(${T_NAME}): LABEL must be cpu or gpu, not '${T_LABEL}'")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  # The folder's name is a label too, through the directory's LABELS property.
  get_filename_component(_folder "${CMAKE_CURRENT_SOURCE_DIR}" NAME)
  set_property(DIRECTORY APPEND PROPERTY LABELS ${_folder})
endmacro()

function(sparserl_add_test)
  _sparserl_test_arguments(sparserl_add_test SOURCES ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE sparserl::test_support ${T_LIBS} sparserl::warnings)
  # catch_discover_tests flattens PROPERTIES into one list, so a two-label value would split into
  # "LABELS cpu" and a bogus property named after the folder, swallowing SKIP_RETURN_CODE: hence the
  # folder label from the directory's LABELS property.
  catch_discover_tests(${T_NAME}
    TEST_PREFIX "${T_NAME}:"
    PROPERTIES LABELS ${T_LABEL} SKIP_RETURN_CODE 77 TIMEOUT ${T_TIMEOUT})
endfunction()

# The tests of one folder: every *_test.cpp in it goes into PREFIX_tests (label cpu, CPU_TIMEOUT,
# default 300 s), every *_gpu_test.cpp into PREFIX_gpu_tests (label gpu, GPU_TIMEOUT; each case
# skips itself without a GPU). Both link LIBS, are compiled with DEFINITIONS (where the binaries they run are) and are built
# after DEPENDS (those binaries). Files matching the regex EXCLUDE belong to other executables.
function(sparserl_add_folder_tests)
  cmake_parse_arguments(F "" "PREFIX;CPU_TIMEOUT;GPU_TIMEOUT;EXCLUDE" "LIBS;DEFINITIONS;DEPENDS" ${ARGN})
  file(GLOB cpu_sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*_test.cpp")
  file(GLOB gpu_sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*_gpu_test.cpp")
  if(gpu_sources)
    list(REMOVE_ITEM cpu_sources ${gpu_sources})
  endif()
  if(F_EXCLUDE)
    list(FILTER cpu_sources EXCLUDE REGEX "${F_EXCLUDE}")
    list(FILTER gpu_sources EXCLUDE REGEX "${F_EXCLUDE}")
  endif()
  if(NOT F_GPU_TIMEOUT)
    set(F_GPU_TIMEOUT 900)
  endif()
  if(NOT F_CPU_TIMEOUT)
    set(F_CPU_TIMEOUT 300)
  endif()
  foreach(kind cpu gpu)
    if(NOT ${kind}_sources)
      continue()
    endif()
    if(kind STREQUAL "cpu")
      set(name ${F_PREFIX}_tests)
      sparserl_add_test(NAME ${name} LABEL cpu SOURCES ${${kind}_sources} LIBS ${F_LIBS}
                        TIMEOUT ${F_CPU_TIMEOUT})
    else()
      set(name ${F_PREFIX}_gpu_tests)
      sparserl_add_test(NAME ${name} LABEL gpu SOURCES ${${kind}_sources} LIBS ${F_LIBS}
                        TIMEOUT ${F_GPU_TIMEOUT})
    endif()
    if(F_DEFINITIONS)
      target_compile_definitions(${name} PRIVATE ${F_DEFINITIONS})
    endif()
    if(F_DEPENDS)
      add_dependencies(${name} ${F_DEPENDS})
    endif()
  endforeach()
endfunction()

# A test that is a script, not a Catch2 executable (tools/check_sizes.py and its own unit test):
# sparserl_add_script_test(NAME n LABEL cpu|gpu COMMAND ...), with the same labels, skip code (77)
# and timeout as sparserl_add_test. Python 3 (standard library only) runs the project's scripts.
find_package(Python3 REQUIRED COMPONENTS Interpreter)

function(sparserl_add_script_test)
  _sparserl_test_arguments(sparserl_add_script_test COMMAND ${ARGN})
  add_test(NAME ${T_NAME} COMMAND ${T_COMMAND})
  set_tests_properties(${T_NAME} PROPERTIES LABELS ${T_LABEL} SKIP_RETURN_CODE 77
                       TIMEOUT ${T_TIMEOUT})
endfunction()
