#!/usr/bin/env bash
# Runs the sanitized unit driver and the counter differential test (FUZZ_DIFF_SEQUENCES, default
# 20000, under the sanitizers); if fuzz/build.sh made the -march=native builds (AVX-512 CPU), the
# same two and every target for FUZZ_NATIVE_SECONDS (default 10) from its corpus there; then every
# fuzz target at once for a bounded time from its committed seed corpus
# (fuzz/corpus/<target>/, read-only: new inputs go to a scratch directory). Fails on any crash,
# sanitizer report, failed check or timeout.
#   FUZZ_SECONDS  seconds of wall time for the targets together (default 60)
#   FUZZ_RUNS     or a number of executions per target instead (e.g. 1000000)
#   FUZZ_TARGETS  which targets (default: fuzz_from_bytes fuzz_operations fuzz_dyadic_bytes
#                 fuzz_line_splitter fuzz_pair_coder fuzz_log_formats)
# Crashing inputs are written to $FUZZ_BUILD_DIR/artifacts/; add each one, once fixed, to the
# target's corpus as a regression seed.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${FUZZ_BUILD_DIR:-build/fuzz}
[ "${FUZZ_SKIP_BUILD:-0}" = 1 ] || fuzz/build.sh
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$OUT/artifacts"

targets=(${FUZZ_TARGETS:-fuzz_from_bytes fuzz_operations fuzz_dyadic_bytes fuzz_line_splitter fuzz_pair_coder fuzz_log_formats})
# run_targets DIR LIMIT...: the targets built in DIR at the same time (one process each, sharing the
# cores), so they take one period of wall time rather than one per target. Returns 1 if any failed.
run_targets() {
  local dir=$1 pids=() scratches=() failed=0 i target log rc tag=""
  shift
  [ "$dir" = "$OUT" ] || tag=native-
  for target in "${targets[@]}"; do
    scratches+=("$(mktemp -d)")
    echo "== $dir/$target ($*)"
    # -timeout: one input may take at most 10 s; -rss_limit_mb: a blob must not buy much memory.
    "$dir/$target" "$@" -max_len=4096 -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
      -artifact_prefix="$OUT/artifacts/$tag$target-" "${scratches[-1]}" "fuzz/corpus/$target" >"$dir/$target.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!targets[@]}"; do
    target=${targets[$i]} log="$dir/${targets[$i]}.log"
    set +e
    wait "${pids[$i]}"
    rc=$?
    set -e
    if [ "$rc" -ne 0 ]; then
      tail -n 60 "$log" >&2
      echo "fuzz/run.sh: $tag$target FAILED (exit $rc); full log $log, crashing input in $OUT/artifacts/" >&2
      failed=1
    else
      echo "== $dir/$target"
      grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb)|DONE" "$log" || true
    fi
  done
  rm -rf "${scratches[@]}"
  return "$failed"
}

"$OUT/sanitized_units"
"$OUT/counters_differential" "${FUZZ_DIFF_SEQUENCES:-20000}"
# The -march=native (AVX-512) builds, when fuzz/build.sh made them: the same two, then the targets
# for FUZZ_NATIVE_SECONDS (every committed input, then mutations).
if [ -d "$OUT/native" ]; then
  echo "== the -march=native builds ($OUT/native)"
  "$OUT/native/sanitized_units"
  "$OUT/native/counters_differential" "${FUZZ_DIFF_SEQUENCES:-20000}"
  run_targets "$OUT/native" -max_total_time="${FUZZ_NATIVE_SECONDS:-10}"
fi

if [ -n "${FUZZ_RUNS:-}" ]; then limit=(-runs="$FUZZ_RUNS"); else limit=(-max_total_time="${FUZZ_SECONDS:-60}"); fi
run_targets "$OUT" "${limit[@]}"
echo "fuzz/run.sh: all targets passed"
