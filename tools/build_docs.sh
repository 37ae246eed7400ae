#!/usr/bin/env bash
# Build the documentation site into build/docs (open build/docs/index.html): the Markdown pages of
# docs/ through myst-parser, the Python API from the installed package's docstrings (autodoc) and
# the C++ headers' leading comments (docs/_ext/cpp_headers.py). Any warning fails the build.
# Needs the package and the docs tools: pip install ".[docs]" (CI: the test extra has them).
# PYTHON selects the interpreter (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
if ! "$py" -c "import sphinx, myst_parser, dpsketch" 2>/dev/null; then
  echo "build_docs.sh: needs sphinx, myst-parser and an installed dpsketch: pip install \".[docs]\"" >&2
  exit 2
fi
# -E: read every page afresh, so that a warning in an unchanged page still fails the build.
"$py" -m sphinx -b html -E -W --keep-going -q docs build/docs "$@"
echo "docs site: $(pwd)/build/docs/index.html"
