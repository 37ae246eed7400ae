#!/usr/bin/env bash
# The C++ package without Python: build the ctest suite (every header alone with warnings as
# errors, no allocation after construction, the example, the counters' vector scan), again with
# -march=native on a CPU with AVX-512, install the headers and the CMake package, and build the
# example against the installed tree with find_package(dpsketch).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${CPP_BUILD_DIR:-build/cpp}
case $out in /*) ;; *) out=$PWD/$out ;; esac
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
rm -rf "$out"
cmake -S . -B "$out/tree" "${gen[@]}" -DDPSKETCH_TESTS=ON >/dev/null
cmake --build "$out/tree" -j2
ctest --test-dir "$out/tree" --output-on-failure
# Where this CPU has AVX-512 (BW and VL), the suite again with DPSKETCH_NATIVE=ON (-march=native):
# a user's tuned build, in which the compiler may rewrite the AVX2 kernels as AVX-512 code.
if grep -qw avx512bw /proc/cpuinfo 2>/dev/null && grep -qw avx512vl /proc/cpuinfo; then
  cmake -S . -B "$out/native" "${gen[@]}" -DDPSKETCH_TESTS=ON -DDPSKETCH_NATIVE=ON >/dev/null
  cmake --build "$out/native" -j2
  ctest --test-dir "$out/native" --output-on-failure
fi
cmake --install "$out/tree" --prefix "$out/prefix" >/dev/null
cmake -S examples/cpp -B "$out/example" "${gen[@]}" -DCMAKE_PREFIX_PATH="$out/prefix" >/dev/null
cmake --build "$out/example" -j2
seq 1 30000 | awk '{ print ($1 % 4 ? $1 : "hot") }' | "$out/example/top_items" 5 1.0 1e-6 | grep -q '^hot'
echo "tools/cpp_check.sh: C++ package OK (installed at $out/prefix)"
