# conform — the two commands that matter on a fresh Debian 12 machine:
#   make run    install what is missing, build, run the main job (reports in ./conform-reports)
#   make test   install what is missing, build, run every test
# Others: make build | make asan-test | make bench | make clean
#         make fuzz-replay | make fuzz-smoke [FUZZ_SECONDS=20]   (fuzz/Fuzzing.md)
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
# then the engine catalogue against the bundled reference engine (conform plays the plugin). Every
# report format (console, report.html, report.json, junit.xml, report.sarif, report.md, per-case
# traces) is written to ./conform-reports/plugin and ./conform-reports/engine.
run: build
	./$(BUILD)/conform check --report-dir conform-reports/plugin -- ./$(BUILD)/conform-plugin
	./$(BUILD)/conform check-engine --report-dir conform-reports/engine -- ./$(BUILD)/conform-engine
	@echo "reports: $(CURDIR)/conform-reports/plugin/report.html and $(CURDIR)/conform-reports/engine/report.html"

test: build
	ctest --test-dir $(BUILD) -j $(JOBS) --output-on-failure --timeout 300

$(ASAN)/build.ninja:
	$(CONFIGURE) -B $(ASAN) -DCMAKE_BUILD_TYPE=Debug -DCONFORM_SANITIZE=ON

asan-build: deps $(ASAN)/build.ninja
	cmake --build $(ASAN) -j $(JOBS)

asan-test: asan-build
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	  ctest --test-dir $(ASAN) -j $(JOBS) --output-on-failure --timeout 600

bench: build
	@for b in $(BUILD)/bench/bench_*; do echo "== $$b"; $$b || exit 1; done

clean:
	rm -rf $(BUILD) $(ASAN)

# Fuzzing (fuzz/Fuzzing.md). fuzz-build / fuzz-replay use the ordinary build, where every fuzz
# target links fuzz/main_plain.cpp and replays its seed corpus as a CTest test labelled "fuzz".
fuzz-build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target fuzz_all

fuzz-replay: fuzz-build
	ctest --test-dir $(BUILD) -L '^fuzz$$' -j $(JOBS) --output-on-failure --timeout 300

# libFuzzer + ASan + UBSan in its own build dir (-fsanitize=fuzzer-no-link on every object).
# -O1 without NDEBUG: RapidJSON's assertions stay on, so misuse of its API is caught too.
$(FUZZ)/build.ninja:
	$(CONFIGURE) -B $(FUZZ) -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g" -DCONFORM_FUZZ=ON

fuzz-smoke: deps $(FUZZ)/build.ninja
	cmake --build $(FUZZ) -j $(JOBS) --target fuzz_all
	bash fuzz/smoke.sh $(FUZZ) $(FUZZ_SECONDS)
