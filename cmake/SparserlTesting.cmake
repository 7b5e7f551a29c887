# The one way to add a test executable: sparserl_add_test(NAME n LABEL cpu|gpu SOURCES ... [LIBS ...]).
# Each Catch2 TEST_CASE becomes its own CTest test (prefixed with the executable name), labelled `cpu`
# or `gpu` plus the folder name. A test that needs something absent (a GPU, ../shared) exits with 77,
# which CTest reports as skipped, never as passed. Tests learn where things are from compile
# definitions, so they run the same from ctest, from the build folder or by hand.
set(SPARSERL_SHARED_DIR "${PROJECT_SOURCE_DIR}/../shared" CACHE PATH
    "The shared folder with SuiteSparse matrices (tests skip what needs it when it is absent)")

function(sparserl_add_test)
  cmake_parse_arguments(T "" "NAME;LABEL;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT T_NAME OR NOT T_SOURCES)
    message(FATAL_ERROR "sparserl_add_test needs NAME and SOURCES")
  endif()
  if(NOT T_LABEL STREQUAL "cpu" AND NOT T_LABEL STREQUAL "gpu")
    message(FATAL_ERROR "sparserl_add_test(${T_NAME}): LABEL must be cpu or gpu, not '${T_LABEL}'")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE sparserl::test_support ${T_LIBS} sparserl::warnings)
  get_filename_component(_folder "${CMAKE_CURRENT_SOURCE_DIR}" NAME)
  # catch_discover_tests flattens PROPERTIES into one list, so a two-label value would split into
  # "LABELS cpu" and a bogus property named after the folder, swallowing SKIP_RETURN_CODE. The folder
  # label comes from the directory's LABELS property instead.
  set_property(DIRECTORY APPEND PROPERTY LABELS ${_folder})
  catch_discover_tests(${T_NAME}
    TEST_PREFIX "${T_NAME}:"
    PROPERTIES LABELS ${T_LABEL} SKIP_RETURN_CODE 77 TIMEOUT ${T_TIMEOUT})
endfunction()

# A test that is a script, not a Catch2 executable (tools/check_sizes.py and its own unit test):
# sparserl_add_script_test(NAME n LABEL cpu|gpu COMMAND ...), with the same labels, skip code (77)
# and timeout as sparserl_add_test. Python 3 (standard library only) runs the project's scripts.
find_package(Python3 REQUIRED COMPONENTS Interpreter)

function(sparserl_add_script_test)
  cmake_parse_arguments(T "" "NAME;LABEL;TIMEOUT" "COMMAND" ${ARGN})
  if(NOT T_NAME OR NOT T_COMMAND)
    message(FATAL_ERROR "sparserl_add_script_test needs NAME and COMMAND")
  endif()
  if(NOT T_LABEL STREQUAL "cpu" AND NOT T_LABEL STREQUAL "gpu")
    message(FATAL_ERROR
      "sparserl_add_script_test(${T_NAME}): LABEL must be cpu or gpu, not '${T_LABEL}'")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_test(NAME ${T_NAME} COMMAND ${T_COMMAND})
  get_filename_component(_folder "${CMAKE_CURRENT_SOURCE_DIR}" NAME)
  set_property(DIRECTORY APPEND PROPERTY LABELS ${_folder})
  set_tests_properties(${T_NAME} PROPERTIES LABELS ${T_LABEL} SKIP_RETURN_CODE 77
                       TIMEOUT ${T_TIMEOUT})
endfunction()
