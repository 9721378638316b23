#!/usr/bin/env bash
# fuzz/smoke.sh BUILD_DIR [SECONDS] [TARGET...] — runs each libFuzzer target of BUILD_DIR (built with
# -DCONFORM_FUZZ=ON or -DCONFORM_SANITIZE=ON) for SECONDS (default 20), SMOKE_JOBS at a time, and prints a
# summary line per target: exec/s, coverage (cov/ft), corpus size. Exit status 1 when any target
# crashed, leaked, hung or broke an invariant; the input is saved under
# BUILD_DIR/fuzz-artifacts/<target>/ and the reproducer command is printed.
#
# The seeds in fuzz/corpus/<target>/ are read, never written: new inputs go to
# BUILD_DIR/fuzz-corpus/<target>/, which persists between runs of the same build dir (so a local
# campaign resumes where it stopped). Dictionary: fuzz/dict/<target>.dict, else protocol.dict.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:?usage: fuzz/smoke.sh BUILD_DIR [SECONDS] [TARGET...]}"
seconds="${2:-20}"
shift $(( $# >= 2 ? 2 : 1 ))
build="$(cd "$build" && pwd)"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for b in "$build"/fuzz/fuzz_*; do
    [ -x "$b" ] && targets+=("$(basename "$b" | sed 's/^fuzz_//')")
  done
fi
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz-smoke: no fuzz targets in $build/fuzz (configure with -DCONFORM_FUZZ=ON)" >&2
  exit 1
fi

# halt_on_error/abort: a sanitizer report must end the run as a crash with a saved input.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# One target: fuzz it, write its summary line to $build/fuzz-logs/<t>.line, exit 1 on a find.
run_one() {
  local t="$1"
  local bin="$build/fuzz/fuzz_$t"
  local seeds="$here/corpus/$t"
  local dict="$here/dict/$t.dict"
  [ -f "$dict" ] || dict="$here/dict/protocol.dict"
  local work="$build/fuzz-corpus/$t"
  local art="$build/fuzz-artifacts/$t"
  local log="$build/fuzz-logs/$t.log"
  mkdir -p "$work" "$art" "$(dirname "$log")"
  echo "== fuzz_$t: ${seconds}s"
  # -timeout: one input running longer than this is a hang (PCRE2 and recursion must be bounded);
  # generous because the CI machine is shared. -rss_limit_mb: no input may need 2 GiB.
  "$bin" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
    -dict="$dict" -artifact_prefix="$art/" "$work" "$seeds" >"$log" 2>&1
  local rc=$?
  local last execs rate cov line crash
  last="$(grep -E '^#[0-9]+.*(cov|DONE)' "$log" | tail -1)"
  execs="$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')"
  rate="$(grep -E '^stat::average_exec_per_sec' "$log" | awk '{print $2}')"
  cov="$(sed -nE 's/.* cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+).*/cov \1 ft \2 corpus \3/p' <<<"$last")"
  line="fuzz_$t: ${execs:-?} runs, ${rate:-?} exec/s, ${cov:-no coverage line}"
  if [ $rc -ne 0 ]; then
    crash="$(ls -t "$art" 2>/dev/null | head -1)"
    line="$line  FAILED (exit $rc)"
    grep -E 'ERROR:|fuzz invariant failed|SUMMARY' "$log" | head -5
    echo "   log: $log"
    [ -n "$crash" ] && echo "   reproduce: $bin $art/$crash"
  fi
  echo "   $line"
  echo "$line" >"$build/fuzz-logs/$t.line"
  [ $rc -eq 0 ]
}

# Targets run SMOKE_JOBS at a time (default: the number of cores; each libFuzzer process is
# single-threaded), so a smoke of N targets takes about N × SECONDS / SMOKE_JOBS.
jobs="${SMOKE_JOBS:-$(nproc)}"
failed=0
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
summary=()
for t in "${targets[@]}"; do
  summary+=("$(cat "$build/fuzz-logs/$t.line" 2>/dev/null || echo "fuzz_$t: no result")")
done
echo "== fuzz-smoke summary (${seconds}s per target)"
printf '   %s\n' "${summary[@]}"
exit $failed
