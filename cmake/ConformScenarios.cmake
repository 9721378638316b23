# Embeds the scenario catalogue (scenarios/**/*.scn) into conform at build time, so an installed
# `conform check` works alone (no search path). Also extracts the rule ids the monitors judge
# (string literals like "FRAME-06" in harness/rules/*.cpp) for `conform check --coverage`.
#   generated/conform/embedded_scenarios.cpp — conform::runner::detail::embeddedScenarios()
#                                              conform::runner::detail::monitoredRules()
# Included once from the end of the top-level CMakeLists.txt.
file(GLOB_RECURSE conform_scenario_files CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/scenarios/*.scn)
file(GLOB conform_monitor_files CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/harness/rules/*.cpp)
set(conform_scn_out ${CMAKE_CURRENT_BINARY_DIR}/generated/conform/embedded_scenarios.cpp)
add_custom_command(OUTPUT ${conform_scn_out}
  COMMAND ${CMAKE_COMMAND} -DDIR=${CMAKE_CURRENT_SOURCE_DIR}/scenarios
          -DRULES_DIR=${CMAKE_CURRENT_SOURCE_DIR}/harness/rules -DOUT=${conform_scn_out}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_scenarios.cmake
  DEPENDS ${conform_scenario_files} ${conform_monitor_files} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_scenarios.cmake
  COMMENT "Embedding the scenario catalogue")
target_sources(conform_harness PRIVATE ${conform_scn_out})
