add_library(conform_flags INTERFACE)
target_compile_options(conform_flags INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
  -Wno-unused-parameter)
if(CONFORM_WERROR)
  target_compile_options(conform_flags INTERFACE -Werror)
endif()
# CONFORM_FUZZ implies the sanitizers: a fuzzer without ASan + UBSan finds only segfaults.
if(CONFORM_SANITIZE OR CONFORM_FUZZ)
  # clang's UBSan flags RapidJSON's internal stack on every parse: ignore list in cmake/ubsan.ignore.
  set(san -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    list(APPEND san -fsanitize-ignorelist=${CMAKE_CURRENT_SOURCE_DIR}/cmake/ubsan.ignore)
  endif()
  target_compile_options(conform_flags INTERFACE ${san})
  target_link_options(conform_flags INTERFACE -fsanitize=address,undefined)
endif()
if(CONFORM_FUZZ)
  # Coverage instrumentation for libFuzzer on every object, without libFuzzer's main(): only the
  # fuzz targets link -fsanitize=fuzzer (fuzz/CMakeLists.txt). Other executables of this build
  # dir still link (the ASan runtime provides the coverage callbacks) but are not meant to run:
  # use a separate build dir (DEPENDENCIES.md). This is the build for long local campaigns
  # (`make fuzz-build`): full instrumentation, comparison tracing included.
  target_compile_options(conform_flags INTERFACE -fsanitize=fuzzer-no-link)
elseif(CONFORM_SANITIZE AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  # The sanitized test build doubles as the CI libFuzzer build (CI time: one instrumented build
  # instead of two, ~a quarter of CI's compile time). Every object gets the cheap part of
  # libFuzzer's coverage (an 8-bit counter per edge + the PC table; no comparison tracing, which
  # would slow every test): the ASan runtime provides the callbacks, so tests and tools link and
  # run as before, and the fuzz targets link libFuzzer's main (fuzz/CMakeLists.txt sees
  # CONFORM_FUZZ_LINK) so `make fuzz-smoke` fuzzes this build dir directly.
  target_compile_options(conform_flags INTERFACE -fsanitize-coverage=inline-8bit-counters,pc-table)
  set(CONFORM_FUZZ_LINK ON)
endif()
if(CONFORM_FUZZ)
  set(CONFORM_FUZZ_LINK ON)
endif()
