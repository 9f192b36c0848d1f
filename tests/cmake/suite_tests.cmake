# splitsim_add_suite_tests(TARGET [PROPERTIES prop value ...]): registers each
# GoogleTest suite of TARGET as one ctest test, `Suite.*`, that runs the
# suite's tests in one process. For the binaries that link LibTorch: loading
# it costs about 1 s of CPU before the first test, so one process per test
# (gtest_discover_tests) spent more time starting than testing (costmodel_tests:
# 221 CPU-s as 179 processes, 41 s as one). Like gtest_discover_tests, the list
# is read from the built binary after each build (write_suite_tests.cmake), so
# a new suite needs no CMake edit.
function(splitsim_add_suite_tests target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "PROPERTIES")
  set(suites_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -D "BINARY=$<TARGET_FILE:${target}>"
            -D "OUTPUT=${suites_file}"
            -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/write_suite_tests.cmake"
    BYPRODUCTS "${suites_file}"
    VERBATIM)
  # What ctest reads: the properties every suite gets, then the suites.
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_include.cmake")
  set(quoted "")
  foreach(item IN LISTS arg_PROPERTIES)
    string(APPEND quoted " [==[${item}]==]")
  endforeach()
  file(WRITE "${include_file}"
    "set(splitsim_suite_properties WORKING_DIRECTORY [==[${CMAKE_CURRENT_BINARY_DIR}]==]${quoted})\n"
    "if(EXISTS [==[${suites_file}]==])\n"
    "  include([==[${suites_file}]==])\n"
    "else()\n"
    "  add_test([==[${target}_NOT_BUILT]==] [==[${target}_NOT_BUILT]==])\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
