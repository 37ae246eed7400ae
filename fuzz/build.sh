#!/usr/bin/env bash
# Builds the fuzz targets (libFuzzer) and the sanitized unit driver, all with AddressSanitizer and
# UndefinedBehaviorSanitizer, from the header-only core, and again with -march=native on a CPU with
# AVX-512. Needs clang (Debian: apt-get install clang,
# which brings libFuzzer). Output: $FUZZ_BUILD_DIR (default build/fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
CXX=${FUZZ_CXX:-$(command -v clang++ || command -v clang++-14 || true)}
[ -n "$CXX" ] || { echo "fuzz/build.sh: clang++ not found (apt-get install clang)" >&2; exit 1; }
OUT=${FUZZ_BUILD_DIR:-build/fuzz}
FLAGS=(-std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
       -Icpp/include -Wall -Wextra)
# build DIR EXTRA-FLAGS...: the six targets, the unit driver and the differential test into DIR.
build() {
  local dir=$1 pids=() p
  shift
  mkdir -p "$dir"
  for target in fuzz_from_bytes fuzz_operations fuzz_dyadic_bytes fuzz_line_splitter fuzz_pair_coder fuzz_log_formats; do
    "$CXX" "${FLAGS[@]}" "$@" -fsanitize=fuzzer "fuzz/$target.cpp" -o "$dir/$target" & pids+=($!)
  done
  "$CXX" "${FLAGS[@]}" "$@" fuzz/sanitized_units.cpp -o "$dir/sanitized_units" & pids+=($!)
  # The counter differential test against the brute-force reference (tests/native/), here for its
  # memory-safety coverage.
  "$CXX" "${FLAGS[@]}" "$@" -Itests/native tests/native/counters_differential.cpp -o "$dir/counters_differential" & pids+=($!)
  for p in "${pids[@]}"; do wait "$p"; done
}
build "$OUT"
echo "fuzz/build.sh: built fuzz_from_bytes fuzz_operations fuzz_dyadic_bytes fuzz_line_splitter fuzz_pair_coder fuzz_log_formats sanitized_units counters_differential in $OUT"
# Where this CPU has AVX-512 (BW and VL): the same eight again with -march=native in $OUT/native (a
# user's tuned build, in which the compiler may turn the AVX2 kernels into AVX-512 code); fuzz/run.sh
# runs them too. FUZZ_NATIVE=0 skips them.
rm -rf "$OUT/native"
if [ "${FUZZ_NATIVE:-1}" != 0 ] && grep -qw avx512bw /proc/cpuinfo 2>/dev/null && grep -qw avx512vl /proc/cpuinfo; then
  build "$OUT/native" -march=native
  echo "fuzz/build.sh: and with -march=native (AVX-512) in $OUT/native"
fi
