# conform — the two commands that matter on a fresh Debian 12 machine:
#   make run    install what is missing, build, run the main job (reports in ./conform-reports)
#   make test   install what is missing, build, run every test
# Others: make build | make asan-test | make bench | make clean
#         make fuzz-replay | make fuzz-smoke [FUZZ_SECONDS=20] | make fuzz-build   (fuzz/Fuzzing.md)
BUILD     ?= build
ASAN      ?= build-asan
FUZZ      ?= build-fuzz
FUZZ_SECONDS ?= 20
CXX_BIN   ?= clang++-14
C_BIN     ?= clang-14
JOBS      ?= $(shell nproc)
CMAKE_ARGS ?=
CONFIGURE = cmake -S . -G Ninja -DCMAKE_CXX_COMPILER=$(CXX_BIN) -DCMAKE_C_COMPILER=$(C_BIN) $(CMAKE_ARGS)

.PHONY: deps build run test asan-build asan-test bench clean fuzz-build fuzz-replay fuzz-smoke

deps:
	@bash scripts/deps.sh

$(BUILD)/build.ninja:
	$(CONFIGURE) -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# The main job: the plugin catalogue against the bundled reference plugin (conform plays the engine),
# then the engine catalogue against the bundled reference engine (conform plays the plugin), then the
# nanopi-0.12 and cognipeer-0.10 catalogues against their bundled conforming plugins. Every
# report format (console, report.html, report.json, junit.xml, report.sarif, report.md, per-case
# traces) is written to ./conform-reports/plugin and ./conform-reports/engine.
run: build
	./$(BUILD)/conform check --report-dir conform-reports/plugin -- ./$(BUILD)/conform-plugin --fixture sdk
	./$(BUILD)/conform check-engine --report-dir conform-reports/engine -- ./$(BUILD)/conform-engine
	@if [ -f $(BUILD)/nanopi/events_plugin.wasm ]; then \
	  ./$(BUILD)/conform check --profile nanopi-0.12 --report-dir conform-reports/nanopi -- ./$(BUILD)/nanopi/events_plugin.wasm; \
	else echo "nanopi: no test components were built ($$(cat $(BUILD)/nanopi/DISABLED 2>/dev/null))"; fi
	./$(BUILD)/conform check --profile cognipeer-0.10 --report-dir conform-reports/cognipeer -- tests/cognipeer_plugins/conforming.mjs
	@echo "reports: $(CURDIR)/conform-reports/{plugin,engine,nanopi,cognipeer}/report.html"

test: build
	ctest --test-dir $(BUILD) -j $(JOBS) --output-on-failure --timeout 300

# -g1 (line tables) is all a sanitizer report needs and is cheaper to build than -g.
$(ASAN)/build.ninja:
	$(CONFIGURE) -B $(ASAN) -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g1" -DCONFORM_SANITIZE=ON

asan-build: deps $(ASAN)/build.ninja
	cmake --build $(ASAN) -j $(JOBS)

# Under ASan + UBSan every test runs except the long end-to-end matrices, which repeat the same
# code paths hundreds of times through real processes (fault kill-rate matrices, the lint matrix,
# the live-fuzz fault hunts, the Node-hosted nanopi/cognipeer end-to-end runs): they run in `make
# test`, and here they would double CI's 20-minute budget for no new coverage. ASAN_ALL=1 runs them.
ASAN_CTEST_EXCLUDE ?= kill rate|fault of the gallery|each targeted fault|fixture fault is caught|livefuzz fault:|yields no finding|role plugin: an engine|lint matrix|nanopi e2e|cognipeer e2e|EVT-14 e2e|passes the reference engine with 0 FAIL|more spent tokens than the table holds
asan-test: asan-build
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	  ctest --test-dir $(ASAN) -j $(JOBS) --output-on-failure --timeout 600 \
	  $(if $(ASAN_ALL),,-E '$(ASAN_CTEST_EXCLUDE)')

bench: build
	@for b in $(BUILD)/bench/bench_*; do echo "== $$b"; $$b || exit 1; done

clean:
	rm -rf $(BUILD) $(ASAN)

# Fuzzing (fuzz/Fuzzing.md).
# fuzz-replay: the ordinary build links every fuzz target with fuzz/main_plain.cpp and replays its
#   seed corpus as a CTest test labelled "fuzz" (`make test` runs them too; `make asan-test` runs the
#   same corpora through libFuzzer's main under ASan + UBSan).
# fuzz-smoke: each libFuzzer target for FUZZ_SECONDS in the sanitized build dir, which is also a
#   libFuzzer build (8-bit edge counters on every object; cmake/ConformFlags.cmake) — CI's smoke.
# fuzz-build: a dedicated libFuzzer build dir with full instrumentation (comparison tracing too),
#   -O1 without NDEBUG, for long local campaigns: bash fuzz/smoke.sh $(FUZZ) 600.
fuzz-replay: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target fuzz_all
	ctest --test-dir $(BUILD) -L '^fuzz$$' -j $(JOBS) --output-on-failure --timeout 300

fuzz-smoke: deps $(ASAN)/build.ninja
	cmake --build $(ASAN) -j $(JOBS) --target fuzz_all
	bash fuzz/smoke.sh $(ASAN) $(FUZZ_SECONDS)

$(FUZZ)/build.ninja:
	$(CONFIGURE) -B $(FUZZ) -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g" -DCONFORM_FUZZ=ON

fuzz-build: deps $(FUZZ)/build.ninja
	cmake --build $(FUZZ) -j $(JOBS) --target fuzz_all
