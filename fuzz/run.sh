#!/usr/bin/env bash
# Runs the sanitized unit driver and the counter differential test (FUZZ_DIFF_SEQUENCES, default
# 20000, under the sanitizers), then every fuzz target at once for a bounded time from its committed
# seed corpus (fuzz/corpus/<target>/, read-only: new inputs go to a scratch directory). Fails on any
# crash, sanitizer report, failed check or timeout.
#   FUZZ_SECONDS  seconds of wall time for the targets together (default 60)
#   FUZZ_RUNS     or a number of executions per target instead (e.g. 1000000)
#   FUZZ_TARGETS  which targets (default: fuzz_from_bytes fuzz_operations fuzz_dyadic_bytes)
# Crashing inputs are written to $FUZZ_BUILD_DIR/artifacts/; add each one, once fixed, to the
# target's corpus as a regression seed.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${FUZZ_BUILD_DIR:-build/fuzz}
[ "${FUZZ_SKIP_BUILD:-0}" = 1 ] || fuzz/build.sh
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

"$OUT/sanitized_units"
"$OUT/counters_differential" "${FUZZ_DIFF_SEQUENCES:-20000}"

mkdir -p "$OUT/artifacts"
# The targets run at the same time (one process each, sharing the cores), so the stage takes
# FUZZ_SECONDS of wall time rather than one period per target.
targets=(${FUZZ_TARGETS:-fuzz_from_bytes fuzz_operations fuzz_dyadic_bytes})
if [ -n "${FUZZ_RUNS:-}" ]; then limit=(-runs="$FUZZ_RUNS"); else limit=(-max_total_time="${FUZZ_SECONDS:-60}"); fi
pids=() scratches=()
for target in "${targets[@]}"; do
  scratch=$(mktemp -d) && scratches+=("$scratch")
  echo "== $target (${limit[*]})"
  # -timeout: one input may take at most 10 s; -rss_limit_mb: a blob must not buy much memory.
  "$OUT/$target" "${limit[@]}" -max_len=4096 -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
    -artifact_prefix="$OUT/artifacts/$target-" "$scratch" "fuzz/corpus/$target" >"$OUT/$target.log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!targets[@]}"; do
  target=${targets[$i]} log="$OUT/${targets[$i]}.log"
  set +e
  wait "${pids[$i]}"
  rc=$?
  set -e
  if [ "$rc" -ne 0 ]; then
    tail -n 60 "$log" >&2
    echo "fuzz/run.sh: $target FAILED (exit $rc); full log $log, crashing input in $OUT/artifacts/" >&2
    failed=1
  else
    echo "== $target"
    grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb)|DONE" "$log" || true
  fi
done
rm -rf "${scratches[@]}"
[ "$failed" = 0 ] || exit 1
echo "fuzz/run.sh: all targets passed"
