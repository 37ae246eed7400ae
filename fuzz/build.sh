#!/usr/bin/env bash
# Builds the fuzz targets (libFuzzer) and the sanitized unit driver, all with AddressSanitizer and
# UndefinedBehaviorSanitizer, from the header-only core. Needs clang (Debian: apt-get install clang,
# which brings libFuzzer). Output: $FUZZ_BUILD_DIR (default build/fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
CXX=${FUZZ_CXX:-$(command -v clang++ || command -v clang++-14 || true)}
[ -n "$CXX" ] || { echo "fuzz/build.sh: clang++ not found (apt-get install clang)" >&2; exit 1; }
OUT=${FUZZ_BUILD_DIR:-build/fuzz}
mkdir -p "$OUT"
FLAGS=(-std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
       -Icpp/include -Wall -Wextra)
pids=()
for target in fuzz_from_bytes fuzz_operations fuzz_dyadic_bytes; do
  "$CXX" "${FLAGS[@]}" -fsanitize=fuzzer "fuzz/$target.cpp" -o "$OUT/$target" & pids+=($!)
done
"$CXX" "${FLAGS[@]}" fuzz/sanitized_units.cpp -o "$OUT/sanitized_units" & pids+=($!)
# The counter differential test against the brute-force reference (tests/native/), here for its
# memory-safety coverage.
"$CXX" "${FLAGS[@]}" -Itests/native tests/native/counters_differential.cpp -o "$OUT/counters_differential" & pids+=($!)
for p in "${pids[@]}"; do wait "$p"; done
echo "fuzz/build.sh: built fuzz_from_bytes fuzz_operations fuzz_dyadic_bytes sanitized_units counters_differential in $OUT"
