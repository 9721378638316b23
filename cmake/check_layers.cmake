# Fails when a lower layer includes a higher one. Layers (ARCHITECTURE.md):
#   1 core/   2 reports/ mock_engine/ mock_plugin/   3 harness/
# reports/, mock_engine/ and mock_plugin/ stand side by side and never include each other.
function(check dir forbidden)
  file(GLOB_RECURSE files ${ROOT}/${dir}/*.h ${ROOT}/${dir}/*.cpp)
  foreach(f ${files})
    file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(l ${lines})
      foreach(bad ${forbidden})
        if(l MATCHES "\"${bad}/")
          message(SEND_ERROR "layering: ${f} includes ${bad}/: ${l}")
        endif()
      endforeach()
    endforeach()
  endforeach()
endfunction()
check(core "reports;mock_engine;mock_plugin;harness")
check(reports "mock_engine;mock_plugin;harness")
check(mock_engine "reports;mock_plugin;harness")
check(mock_plugin "reports;mock_engine;harness")

# catch_discover_tests passes each test name to the test binary as an argument, so a name that
# starts with '-' is read as a command-line option and the test "fails" under ctest.
file(GLOB_RECURSE test_files ${ROOT}/tests/*.cpp)
foreach(f ${test_files})
  file(STRINGS ${f} bad REGEX "TEST_CASE\\(\"-")
  if(bad)
    message(SEND_ERROR "tests: ${f}: a TEST_CASE name must not start with '-': ${bad}")
  endif()
  # A ';' ends the name in CMake's list of test names: ctest then runs a truncated name that
  # matches no test case, and "passes" without running anything (a test that cannot fail).
  file(STRINGS ${f} semi REGEX "TEST_CASE\\(\"[^\"]*;")
  if(semi)
    message(SEND_ERROR "tests: ${f}: a TEST_CASE name must not contain ';' (ctest would run nothing): ${semi}")
  endif()
endforeach()
