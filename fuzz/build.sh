#!/usr/bin/env bash
# fuzz/build.sh — OSS-Fuzz / ClusterFuzzLite build script (their Dockerfile copies the repository to
# $SRC/conform and runs `compile`, which calls this with $CC, $CXX, $CFLAGS, $CXXFLAGS,
# $LIB_FUZZING_ENGINE and $OUT set).
#
# The project's own flags are left out (CONFORM_FUZZ=OFF): the infrastructure chooses the sanitizer
# (address, undefined, memory) and the engine (libFuzzer, AFL++, honggfuzz) through
# $CFLAGS/$CXXFLAGS/$LIB_FUZZING_ENGINE; CONFORM_FUZZ_PLAIN_MAIN=OFF and the engine is linked here.
# Output per target in $OUT: the binary, <target>_seed_corpus.zip and <target>.dict.
set -euxo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="${WORK:-/tmp}/conform-ossfuzz"

cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
  -DCMAKE_C_FLAGS="$CFLAGS" -DCMAKE_CXX_FLAGS="$CXXFLAGS" \
  -DCONFORM_FUZZ=OFF -DCONFORM_FUZZ_PLAIN_MAIN=OFF -DCONFORM_SANITIZE=OFF
# Only the core archive (and the DSL sources) are needed; building every target would compile
# the CLI and the reference engine/plugin for nothing.
cmake --build "$build" --target conform_fuzz_core -j "$(nproc)"
core_lib="$build/fuzz/libconform_fuzz_core.a"
# The state-machine targets (engine_state, plugin_sdk) link the whole library (reference engine and
# plugin SDK); built only when one of them is present.
if ls "$src"/fuzz/fuzz_engine_state.cpp "$src"/fuzz/fuzz_plugin_sdk.cpp >/dev/null 2>&1; then
  cmake --build "$build" --target conform_lib -j "$(nproc)"
fi

for cpp in "$src"/fuzz/fuzz_*.cpp; do
  name="$(basename "$cpp" .cpp)"   # fuzz_json_parse
  t="${name#fuzz_}"               # json_parse
  extra=()
  lib="$core_lib"
  if [ "$t" = dsl_parser ]; then
    [ -f "$src/harness/dsl/plan.h" ] || continue
    extra=("$src"/harness/dsl/*.cpp)
  fi
  if [ "$t" = engine_state ] || [ "$t" = plugin_sdk ]; then
    lib="$build/libconform_lib.a"
    [ "$t" = plugin_sdk ] && extra=("$src/harness/runner/fuzz_gen.cpp")
  fi
  $CXX $CXXFLAGS -std=c++20 -I"$src" -I"$build/generated" -isystem /usr/include \
    -DRAPIDJSON_HAS_STDSTRING=1 -DRAPIDJSON_HAS_CXX11_RVALUE_REFS=1 \
    "$cpp" "${extra[@]}" "$lib" $LIB_FUZZING_ENGINE -lpcre2-8 -lfmt -lpthread -o "$OUT/$name"
  (cd "$src/fuzz/corpus/$t" && zip -q -r "$OUT/${name}_seed_corpus.zip" .)
  if [ -f "$src/fuzz/dict/$t.dict" ]; then cp "$src/fuzz/dict/$t.dict" "$OUT/$name.dict"
  else cp "$src/fuzz/dict/protocol.dict" "$OUT/$name.dict"; fi
done
