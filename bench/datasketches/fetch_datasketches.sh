#!/usr/bin/env bash
# Fetch the Apache DataSketches C++ headers that bench_vs_datasketches.cpp compiles against, into a
# directory OUTSIDE this repository (DataSketches is a benchmark-only peer: never vendored here).
#
# Usage: bench/datasketches/fetch_datasketches.sh [--git | --pypi] [--force]
#   --git  (default) git clone --depth 1 --branch "$DATASKETCHES_TAG" "$DATASKETCHES_GIT_URL"
#          (default tag 5.2.0, the version of the `datasketches` Python wheel used elsewhere in
#          docs/benchmarks.md; default URL https://github.com/apache/datasketches-cpp.git; any git
#          URL or local clone/mirror with that tag works).
#   --pypi pip download the source distribution of the `datasketches` Python package 4.1.0 and
#          unpack it. Works where only the Python package index is reachable. 4.1.0 is the last
#          release whose sdist bundles the C++ sources (from 5.0 on the sdist fetches them from git
#          at build time). Its frequent-items sketch has the same update path as 5.2.0:
#          `git diff 4.1.0 5.2.0 -- fi/include` changes only comments, a static_assert on the weight
#          type and the serialized "empty" flag bits.
#   --force  fetch again even if the directory already holds the requested version.
#
# Environment: DATASKETCHES_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/dpsketch-bench/datasketches-cpp),
# DATASKETCHES_TAG (git route, default 5.2.0), DATASKETCHES_GIT_URL.
# Result: $DATASKETCHES_DIR/{common,fi}/include/... plus $DATASKETCHES_DIR/DPSKETCH_FETCHED, one
# line "<version> <route>", which run.sh passes to the benchmark so its output names the version.
set -euo pipefail

route=git
force=0
for arg in "$@"; do
  case "$arg" in
    --git) route=git ;;
    --pypi) route=pypi ;;
    --force) force=1 ;;
    -h | --help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "fetch_datasketches.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

dest="${DATASKETCHES_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dpsketch-bench/datasketches-cpp}"
tag="${DATASKETCHES_TAG:-5.2.0}"
git_url="${DATASKETCHES_GIT_URL:-https://github.com/apache/datasketches-cpp.git}"
pypi_version=4.1.0

repo_root="$(cd "$(dirname "$0")/../.." && pwd)"
dest_abs="$(realpath -m "$dest")"
case "$dest_abs/" in
  "$repo_root"/*) echo "fetch_datasketches.sh: $dest_abs is inside the repository; DataSketches must stay outside it (set DATASKETCHES_DIR)" >&2; exit 2 ;;
esac

mkdir -p "$dest_abs"
# The directory's contents get replaced: refuse one that holds anything but an earlier fetch.
if [ -n "$(ls -A "$dest_abs")" ] && [ ! -f "$dest_abs/DPSKETCH_FETCHED" ]; then
  echo "fetch_datasketches.sh: $dest_abs is not empty and holds no earlier fetch; choose another DATASKETCHES_DIR" >&2
  exit 2
fi

if [ "$route" = git ]; then stamp="$tag git $git_url"; else stamp="$pypi_version pypi-sdist"; fi
if [ "$force" = 0 ] && [ -f "$dest_abs/DPSKETCH_FETCHED" ] && [ "$(cat "$dest_abs/DPSKETCH_FETCHED")" = "$stamp" ] &&
  [ -f "$dest_abs/fi/include/frequent_items_sketch.hpp" ]; then
  echo "DataSketches $stamp already in $dest_abs (--force to fetch again)"
  exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if [ "$route" = git ]; then
  git -c advice.detachedHead=false clone --quiet --depth 1 --branch "$tag" "$git_url" "$tmp/src"
  src="$tmp/src"
else
  # --no-binary for this package only: pip must fetch the sdist; to read its metadata pip installs
  # the package's build requirements, which may come as wheels.
  python3 -m pip download --quiet --no-deps --no-binary datasketches "datasketches==$pypi_version" -d "$tmp/dl"
  tar -xzf "$tmp/dl/datasketches-$pypi_version.tar.gz" -C "$tmp"
  src="$tmp/datasketches-$pypi_version"
fi
for needed in fi/include/frequent_items_sketch.hpp fi/include/reverse_purge_hash_map_impl.hpp common/include/common_defs.hpp; do
  [ -f "$src/$needed" ] || { echo "fetch_datasketches.sh: $needed missing from the fetched sources" >&2; exit 1; }
done

# Replace the directory's contents only once the new copy is complete.
find "$dest_abs" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
cp -R "$src/common" "$src/fi" "$dest_abs/"
for f in LICENSE NOTICE; do [ -f "$src/$f" ] && cp "$src/$f" "$dest_abs/"; done
echo "$stamp" > "$dest_abs/DPSKETCH_FETCHED"
echo "DataSketches $stamp -> $dest_abs"
