# Embeds every *.json under a folder into the binary at build time, as a generated C++ table:
#   generated/conform/embedded_schemas.cpp  —  conform::protocol::detail::embeddedSchemas()
# Each entry is {relative path without .json, text}. Editing a schema re-runs the embed step.
function(conform_embed_schemas target dir)
  file(GLOB_RECURSE schemas CONFIGURE_DEPENDS ${dir}/*.json)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/generated/conform/embedded_schemas.cpp)
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DDIR=${dir} -DOUT=${out} -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed.cmake
    DEPENDS ${schemas} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed.cmake
    COMMENT "Embedding protocol schemas")
  target_sources(${target} PRIVATE ${out})
endfunction()
