# The one way to add one of the project's libraries: sparserl_add_library(NAME [EXTRA_SOURCES ...]
# [PUBLIC ...] [PRIVATE ...]) makes sparserl_NAME, alias sparserl::NAME: a static, position-
# independent library of the folder's src/*.cpp (and EXTRA_SOURCES, generated ones), its include/
# folder public, linking PUBLIC and PRIVATE and, privately, the project's warning flags.
function(sparserl_add_library name)
  cmake_parse_arguments(L "" "" "EXTRA_SOURCES;PUBLIC;PRIVATE" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/src/*.cpp")
  add_library(sparserl_${name} STATIC ${sources} ${L_EXTRA_SOURCES})
  add_library(sparserl::${name} ALIAS sparserl_${name})
  target_include_directories(sparserl_${name} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>)
  target_link_libraries(sparserl_${name} PUBLIC ${L_PUBLIC} PRIVATE ${L_PRIVATE} sparserl::warnings)
  set_target_properties(sparserl_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
