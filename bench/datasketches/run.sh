#!/usr/bin/env bash
# Build and run bench_vs_datasketches: dpsketch's SpaceSaving / MisraGries against Apache
# DataSketches' C++ frequent_items_sketch at the same a-priori error bound.
# Not part of the CMake build or CI: it needs the DataSketches headers, fetched first (outside
# the repository) by fetch_datasketches.sh.
#
# Usage (from anywhere):
#   bench/datasketches/fetch_datasketches.sh            # once; --pypi where git hosting is unreachable
#   bench/datasketches/run.sh [benchmark args]          # e.g. --rounds 11 --n-log2 22
#   benchmark args: --rounds R (11) --n-log2 L (20) --passes P (max(1, 2^22/n)) --k 256,1024,4096
#                   --streams 1.1,0.8,uniform --no-floor --ds-lg-offset D (sensitivity only)
#                   --fresh (every timed pass feeds a newly built structure; default: steady state)
#
# Compiler flags: those of the project's CMake Release build of dpsketch_bench (-O3 -DNDEBUG,
# C++17, no -march=native). Environment: DATASKETCHES_DIR (as for fetch_datasketches.sh), CXX
# (default g++), EXTRA_CXXFLAGS (e.g. -march=native; the default run uses none), BUILD_DIR
# (default <repo>/build/bench-datasketches; build/ is git-ignored).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo_root="$(cd "$here/../.." && pwd)"
ds_dir="${DATASKETCHES_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dpsketch-bench/datasketches-cpp}"
build_dir="${BUILD_DIR:-$repo_root/build/bench-datasketches}"
cxx="${CXX:-g++}"

if [ ! -f "$ds_dir/fi/include/frequent_items_sketch.hpp" ]; then
  echo "run.sh: no DataSketches headers in $ds_dir; run bench/datasketches/fetch_datasketches.sh first" >&2
  exit 2
fi
ds_version="$(cat "$ds_dir/DPSKETCH_FETCHED" 2>/dev/null || echo unknown)"
ds_version="${ds_version%% *}"

mkdir -p "$build_dir"
# shellcheck disable=SC2086  # EXTRA_CXXFLAGS is a list of flags
"$cxx" -std=c++17 -O3 -DNDEBUG ${EXTRA_CXXFLAGS:-} \
  -I "$repo_root/cpp/include" -I "$repo_root/bench" \
  -isystem "$ds_dir/common/include" -isystem "$ds_dir/fi/include" \
  -DDATASKETCHES_VERSION_STRING="\"$ds_version\"" \
  "$here/bench_vs_datasketches.cpp" -o "$build_dir/bench_vs_datasketches"

echo "# $("$cxx" --version | head -n 1); flags: -std=c++17 -O3 -DNDEBUG ${EXTRA_CXXFLAGS:-}"
echo "# CPU: $(grep -m 1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPU(s) available; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$build_dir/bench_vs_datasketches" "$@"
