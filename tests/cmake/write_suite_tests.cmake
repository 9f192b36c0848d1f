# cmake -D BINARY=<GoogleTest binary> -D OUTPUT=<file> -P write_suite_tests.cmake
# Writes OUTPUT: one add_test per suite of BINARY (`Suite.*`, run with
# --gtest_filter), each with the properties in ${splitsim_suite_properties}
# (set by the include file suite_tests.cmake writes).
execute_process(COMMAND "${BINARY}" --gtest_list_tests
  OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE rc TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${BINARY} --gtest_list_tests failed (${rc}):\n${errors}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(content "")
foreach(line IN LISTS lines)
  # Suite lines start in column 0 and end with '.' (a typed suite's line has
  # "  # TypeParam = ..." after it); test lines are indented.
  if(line MATCHES "^([A-Za-z_][A-Za-z0-9_/]*)\\.")
    set(name "${CMAKE_MATCH_1}.*")
    string(APPEND content
      "add_test([==[${name}]==] [==[${BINARY}]==] [==[--gtest_filter=${name}]==])\n"
      "set_tests_properties([==[${name}]==] PROPERTIES \${splitsim_suite_properties})\n")
  endif()
endforeach()
if(content STREQUAL "")
  message(FATAL_ERROR "${BINARY} --gtest_list_tests listed no suite")
endif()
file(WRITE "${OUTPUT}" "${content}")
