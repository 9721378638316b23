# The Node-side tests of the Cognipeer guest runner (issue 10; guest/cognipeer/README.md).
#
# Each guest/cognipeer/test/*.test.mjs file is one CTest test (label `cognipeer`), run with
# `node --test <file>` from guest/cognipeer. Files are listed explicitly: a bare `node --test` would also
# pick up the fixtures (one of which never finishes loading, on purpose). The runner needs no npm
# package, so Node alone is enough. Without Node this registers nothing and says so with a WARNING: the
# tests are missing, never silently passing (the C++ cognipeer tests skip loudly on their own).

# A sanitized build (make asan-test) runs the same JavaScript again and instruments no C++ of these
# tests: they are registered in the ordinary build only.
if(CONFORM_SANITIZE)
  return()
endif()

find_program(CONFORM_NODE NAMES node nodejs)
if(NOT CONFORM_NODE)
  message(WARNING "conform: node not found — the Cognipeer guest runner tests are NOT registered "
    "(run `make deps` / scripts/deps-node.sh to install Node.js)")
  return()
endif()

execute_process(COMMAND ${CONFORM_NODE} --version OUTPUT_VARIABLE _cg_node_version
  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _cg_node_rc)
# node:test and worker_threads' resourceLimits/terminate semantics the runner relies on: Node >= 18
# (docs/guest-protocol.md "Startup").
if(NOT _cg_node_rc EQUAL 0 OR NOT _cg_node_version MATCHES "^v([0-9]+)\\.")
  message(WARNING "conform: cannot run ${CONFORM_NODE} --version — Cognipeer runner tests NOT registered")
  return()
endif()
if(CMAKE_MATCH_1 LESS 18)
  message(WARNING "conform: ${CONFORM_NODE} is ${_cg_node_version}; the Cognipeer runner needs Node >= 18 — "
    "its tests are NOT registered")
  return()
endif()

set(_cg_dir ${CMAKE_SOURCE_DIR}/guest/cognipeer)
file(GLOB _cg_tests CONFIGURE_DEPENDS ${_cg_dir}/test/*.test.mjs)
foreach(_t IN LISTS _cg_tests)
  get_filename_component(_n ${_t} NAME_WE)
  add_test(NAME cognipeer_runner_${_n}
    COMMAND ${CONFORM_NODE} --test --test-reporter=spec ${_t}
    WORKING_DIRECTORY ${_cg_dir})
  # The slowest suite (invoke: timeouts, restarts) takes ~20 s on an idle machine and ~40 s when 2 cores
  # are shared by a whole ctest -j run; 180 s leaves room for worse.
  set_tests_properties(cognipeer_runner_${_n} PROPERTIES LABELS cognipeer TIMEOUT 180)
endforeach()
