# The nanopi test components and the Node-side tests of the nanopi guest runner (issue 9).
#
# Every component of tests/nanopi_components/manifest.json is built from source at build time, never
# committed as a binary:  C --(clang-14 --target=wasm32, wasm-ld)--> <name>.core.wasm, then one
# `node guest/nanopi/build-component.mjs --manifest …` run wraps every core module (and the WAT ones)
# into <build>/nanopi/<name>.wasm with jco's componentEmbed + componentNew (NANOPI-HOST.md §3).
#
# Without node, clang-14, wasm-ld or guest/nanopi/node_modules (scripts/deps-node.sh installs it) this
# module builds nothing, says so with a WARNING and writes <build>/nanopi/DISABLED (the reason): the
# C++ nanopi tests must then SKIP loudly. When enabled, <build>/nanopi/manifest.json is a copy of the
# manifest and target `nanopi_components` (in ALL) produces the components.

set(_np_src ${CMAKE_SOURCE_DIR}/tests/nanopi_components)
set(_np_guest ${CMAKE_SOURCE_DIR}/guest/nanopi)
set(_np_out ${CMAKE_BINARY_DIR}/nanopi)
file(MAKE_DIRECTORY ${_np_out})
file(REMOVE ${_np_out}/DISABLED ${_np_out}/manifest.json)

find_program(CONFORM_NODE NAMES node nodejs)
find_program(CONFORM_WASM_CLANG NAMES clang-14 clang)
# clang-14 runs the wasm-ld of its own LLVM directory (Debian lld-14 puts it there).
find_program(CONFORM_WASM_LD NAMES wasm-ld PATHS /usr/lib/llvm-14/bin NO_DEFAULT_PATH)
find_program(CONFORM_WASM_LD NAMES wasm-ld-14 wasm-ld)
set(_np_missing "")
if(NOT CONFORM_NODE OR NOT EXISTS "${CONFORM_NODE}")
  list(APPEND _np_missing "node (scripts/deps-node.sh installs it)")
endif()
if(NOT CONFORM_WASM_CLANG)
  list(APPEND _np_missing "clang-14")
endif()
if(NOT CONFORM_WASM_LD)
  list(APPEND _np_missing "wasm-ld (Debian package lld-14)")
endif()
if(NOT EXISTS ${_np_guest}/node_modules/@bytecodealliance/jco-transpile/package.json)
  list(APPEND _np_missing "guest/nanopi/node_modules (run scripts/deps-node.sh or `make deps`)")
endif()

if(_np_missing)
  string(REPLACE ";" ", " _np_why "${_np_missing}")
  message(WARNING "conform: nanopi test components and runner tests DISABLED, missing: ${_np_why}. "
    "The nanopi tests will skip.")
  file(WRITE ${_np_out}/DISABLED "missing: ${_np_why}\n")
  # Re-configure by itself once `make deps` creates guest/nanopi/node_modules (the folder's mtime
  # changes), so an existing build dir does not stay disabled.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_np_guest})
  return()
endif()

configure_file(${_np_src}/manifest.json ${_np_out}/manifest.json COPYONLY)
file(READ ${_np_src}/manifest.json _np_manifest)
string(JSON _np_count LENGTH "${_np_manifest}" components)
math(EXPR _np_last "${_np_count} - 1")

# The freestanding recipe of NANOPI-HOST.md §3: no libc, no start function, undefined symbols become
# imports (the host functions from "$root").
set(_np_cflags --target=wasm32 -O2 -nostdlib -ffreestanding -fno-builtin -Wall -Wextra -Werror
  -Wl,--no-entry -Wl,--allow-undefined)

set(_np_cores "")
set(_np_outputs "")
set(_np_wat "")
foreach(i RANGE ${_np_last})
  string(JSON _name GET "${_np_manifest}" components ${i} name)
  string(JSON _source GET "${_np_manifest}" components ${i} source)
  list(APPEND _np_outputs ${_np_out}/${_name}.wasm)
  if(_source MATCHES "\\.wat$")
    list(APPEND _np_wat ${_np_src}/${_source})
    continue()
  endif()
  string(JSON _ndef LENGTH "${_np_manifest}" components ${i} defines)
  set(_defs "")
  if(_ndef GREATER 0)
    math(EXPR _dlast "${_ndef} - 1")
    foreach(j RANGE ${_dlast})
      string(JSON _d GET "${_np_manifest}" components ${i} defines ${j})
      list(APPEND _defs -D${_d})
    endforeach()
  endif()
  add_custom_command(OUTPUT ${_np_out}/${_name}.core.wasm
    COMMAND ${CONFORM_WASM_CLANG} ${_np_cflags} ${_defs} -o ${_np_out}/${_name}.core.wasm ${_np_src}/${_source}
    DEPENDS ${_np_src}/${_source} ${_np_src}/np.h ${_np_src}/manifest.json
    COMMENT "nanopi: compiling ${_name}.core.wasm" VERBATIM)
  list(APPEND _np_cores ${_np_out}/${_name}.core.wasm)
endforeach()

add_custom_command(OUTPUT ${_np_outputs}
  COMMAND ${CONFORM_NODE} ${_np_guest}/build-component.mjs --manifest ${_np_src}/manifest.json
    --core-dir ${_np_out} --out-dir ${_np_out}
  DEPENDS ${_np_cores} ${_np_wat} ${_np_src}/manifest.json ${_np_guest}/build-component.mjs
    ${_np_guest}/wit/nanopi.wit ${_np_guest}/wit/test-worlds.wit
  COMMENT "nanopi: wrapping ${_np_count} components (jco componentEmbed + componentNew)" VERBATIM)
add_custom_target(nanopi_components ALL DEPENDS ${_np_outputs})

# C++ nanopi tests (tests/nanopi*/) read the components: build them first.
foreach(_t test_nanopi test_nanopi_host test_check)
  if(TARGET ${_t})
    add_dependencies(${_t} nanopi_components)
  endif()
endforeach()

# The runner's own tests (node:test), one CTest test per file; CONFORM_NANOPI_DIR points them at the
# components built above. Not in sanitized builds: they test JavaScript, which a sanitizer build does
# not change (CI runs them once, in the plain build). load and call assert wall-clock bounds of the
# contract (EOF -> exit within 1 s, a spin stopped within budget + 250 ms): they run alone (RUN_SERIAL)
# so that parallel C++ tests on a 2-core machine do not eat those margins.
if(NOT CONFORM_SANITIZE)
  file(GLOB _np_tests CONFIGURE_DEPENDS ${_np_guest}/test/*.test.mjs)
  foreach(_t ${_np_tests})
    get_filename_component(_tn ${_t} NAME_WE)
    add_test(NAME nanopi.runner.${_tn} COMMAND ${CONFORM_NODE} --test ${_t} WORKING_DIRECTORY ${_np_guest})
    set_tests_properties(nanopi.runner.${_tn} PROPERTIES LABELS nanopi TIMEOUT 240
      ENVIRONMENT "CONFORM_NANOPI_DIR=${_np_out}")
    if(_tn STREQUAL "load" OR _tn STREQUAL "call")
      set_tests_properties(nanopi.runner.${_tn} PROPERTIES RUN_SERIAL TRUE)
    endif()
  endforeach()
endif()
