#!/usr/bin/env python3
"""Checks built distributions before they are published (docs/releasing.md).

    python tools/check_dist.py dist/*.whl dist/*.tar.gz            # what CI checks
    python tools/check_dist.py --release dist/*.whl dist/*.tar.gz  # also: ready to upload

A wheel: a platform tag a package index accepts (manylinux/musllinux on Linux, not linux_*), its
metadata (Requires-Python, one classifier per supported minor version and no other, licence, OS,
project URLs, a Markdown long description) and its contents: the dpsketch package, its one
extension module, the documentation that `dpsketch docs` prints (docs/*.md and docs/mechanisms/*.md of the tree,
no other docs sources) and nothing of the tests, benchmarks, fuzzers or experiment results. The installed
size is printed. An sdist: everything a build needs, and no build output.
``--release`` also refuses the placeholder project URLs (the .invalid domain).
Exit status 1 with one line per problem.
"""

from __future__ import annotations

import argparse
import email.parser
import re
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parent.parent
# Installed size above which the wheel is no longer lean: the package is about 1.6 MB of bundled
# demo data, 0.4 MB of docs, the Python sources and one extension module.
MAX_INSTALLED_BYTES = 12 * 2**20
# Paths that belong to the source tree only.
FORBIDDEN_PARTS = ("tests/", "bench/", "fuzz/", "results/", "examples/", "tools/", "cpp/include/",
                   "bindings/", "docs/api/", "docs/data/", "docs/_ext/", ".ci/")
SDIST_REQUIRED = ("pyproject.toml", "CMakeLists.txt", "README.md", "LICENSE", "PKG-INFO",
                  "cmake/reusable_module_build.cmake", "cmake/dpsketchConfig.cmake.in",
                  "bindings/module.cpp", "cpp/include/dpsketch", "python/dpsketch/__init__.py",
                  "python/dpsketch/datasets/retail.dat.gz", "docs/algorithms.md")


def supported_minors(requires_python: str) -> List[str]:
    """'>=3.9,<3.14' -> ['3.9', ..., '3.13']; only the two bounds this project uses are read."""
    lo = re.search(r">=\s*3\.(\d+)", requires_python)
    hi = re.search(r"<\s*3\.(\d+)", requires_python)
    if not lo or not hi:
        raise ValueError(f"Requires-Python {requires_python!r} needs both a >=3.N and a <3.M bound")
    return [f"3.{m}" for m in range(int(lo.group(1)), int(hi.group(1)))]


def check_metadata(text: str, where: str, release: bool) -> List[str]:
    msg = email.parser.Parser().parsestr(text)
    problems = []
    name = msg.get("Name")
    if name != "dpsketch":
        problems.append(f"{where}: Name is {name!r}")
    cmake_version = re.search(r"project\(dpsketch VERSION ([0-9.]+)",
                              (ROOT / "CMakeLists.txt").read_text(encoding="utf-8"))
    if cmake_version and msg.get("Version") != cmake_version.group(1):
        # dpsketch.__version__ comes from CMakeLists.txt, the package version from pyproject.toml
        problems.append(f"{where}: Version {msg.get('Version')} but CMakeLists.txt says "
                        f"{cmake_version.group(1)}")
    req = msg.get("Requires-Python") or ""
    try:
        minors = supported_minors(req)
    except ValueError as e:
        return problems + [f"{where}: {e}"]
    classifiers = msg.get_all("Classifier") or []
    listed = sorted((c.rsplit(" :: ", 1)[1] for c in classifiers
                     if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)),
                    key=lambda v: int(v.split(".")[1]))
    if listed != minors:
        problems.append(f"{where}: Python classifiers {listed} differ from Requires-Python "
                        f"{req!r} ({minors})")
    for prefix in ("License :: ", "Operating System :: ", "Topic :: "):
        if not any(c.startswith(prefix) for c in classifiers):
            problems.append(f"{where}: no '{prefix}...' classifier")
    urls = msg.get_all("Project-URL") or []
    labels = {u.split(",", 1)[0].strip().lower() for u in urls}
    for label in ("homepage", "documentation", "source"):
        if label not in labels:
            problems.append(f"{where}: no {label!r} Project-URL")
    if release:
        placeholders = [u for u in urls if ".invalid" in u]
        if placeholders:
            problems.append(f"{where}: placeholder project URLs {placeholders}: set the real "
                            "ones in pyproject.toml [project.urls] first")
    if msg.get("Description-Content-Type", "").split(";")[0] != "text/markdown":
        problems.append(f"{where}: the long description is not Markdown")
    body = msg.get_payload()
    if not isinstance(body, str) or "Differentially private heavy hitters" not in body:
        problems.append(f"{where}: the long description (README.md) is missing")
    return problems


def check_wheel(path: Path, release: bool) -> List[str]:
    problems = []
    tags = path.name[:-len(".whl")].split("-")[-1]
    if "linux" in tags and not re.search(r"(manylinux|musllinux)_\d+_\d+_", tags):
        problems.append(f"{path.name}: platform tag {tags!r} is refused by package indexes; "
                        "repair it with auditwheel (docs/releasing.md)")
    with zipfile.ZipFile(path) as z:
        infos = [i for i in z.infolist() if not i.is_dir()]
        names = [i.filename for i in infos]
        meta = [n for n in names if n.endswith(".dist-info/METADATA")]
        if len(meta) != 1:
            return problems + [f"{path.name}: {len(meta)} METADATA files"]
        problems += check_metadata(z.read(meta[0]).decode("utf-8"), path.name, release)
        installed = sum(i.file_size for i in infos)
    top = {n.split("/", 1)[0] for n in names}
    extra_top = {t for t in top if t != "dpsketch" and not t.endswith((".dist-info", ".libs"))
                 and not t.endswith(".data")}
    if extra_top:
        problems.append(f"{path.name}: files outside the dpsketch package: {sorted(extra_top)}")
    for n in names:
        rel = n.split("/", 1)[1] if "/" in n else n
        if any("/" + part in "/" + rel for part in FORBIDDEN_PARTS):
            problems.append(f"{path.name}: source-tree file in the wheel: {n}")
    modules = [n for n in names if re.fullmatch(r"dpsketch/_core\..*\.(so|pyd)", n)]
    if len(modules) != 1:
        problems.append(f"{path.name}: {len(modules)} extension modules dpsketch/_core.*")
    shipped_docs = sorted(n[len("dpsketch/docs/"):] for n in names if n.startswith("dpsketch/docs/"))
    tree_docs = sorted([p.name for p in (ROOT / "docs").glob("*.md")]
                       + [f"mechanisms/{p.name}" for p in (ROOT / "docs" / "mechanisms").glob("*.md")])
    if (ROOT / "docs").is_dir() and shipped_docs != tree_docs:
        problems.append(f"{path.name}: dpsketch/docs holds {shipped_docs}, the tree's docs/*.md "
                        f"are {tree_docs}")
    if not any(re.search(r"\.dist-info/(licenses/)?LICENSE$", n) for n in names):
        problems.append(f"{path.name}: the LICENSE file is missing")
    if not any(n.endswith("datasets/retail.dat.gz") for n in names):
        problems.append(f"{path.name}: the demo data (dpsketch/datasets/retail.dat.gz) is missing")
    print(f"{path.name}: {len(names)} files, {path.stat().st_size / 2**20:.2f} MiB compressed, "
          f"{installed / 2**20:.2f} MiB installed")
    if installed > MAX_INSTALLED_BYTES:
        problems.append(f"{path.name}: {installed} bytes installed, over {MAX_INSTALLED_BYTES}")
    return problems


def check_sdist(path: Path, release: bool) -> List[str]:
    problems = []
    with tarfile.open(path) as t:
        members = t.getnames()
        base = members[0].split("/", 1)[0]
        rel = {m.split("/", 1)[1] for m in members if "/" in m}
        pkg_info = t.extractfile(f"{base}/PKG-INFO")
        if pkg_info is None:
            return [f"{path.name}: no PKG-INFO"]
        problems += check_metadata(pkg_info.read().decode("utf-8"), path.name, release)
    for req in SDIST_REQUIRED:
        if req not in rel and not any(r.startswith(req + "/") for r in rel):
            problems.append(f"{path.name}: {req} is missing")
    built = sorted(r for r in rel if r.startswith("build/") or r.endswith((".so", ".o", ".whl")))
    if built:
        problems.append(f"{path.name}: build outputs in the sdist: {built[:5]}")
    print(f"{path.name}: {len(members)} entries, {path.stat().st_size / 2**20:.2f} MiB")
    return problems


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dists", nargs="+", type=Path, help="wheels (.whl) and sdists (.tar.gz)")
    ap.add_argument("--release", action="store_true", help="also refuse placeholder project URLs")
    args = ap.parse_args(argv)
    problems: List[str] = []
    for d in args.dists:
        if d.name.endswith(".whl"):
            problems += check_wheel(d, args.release)
        elif d.name.endswith(".tar.gz"):
            problems += check_sdist(d, args.release)
        else:
            problems.append(f"{d}: neither a wheel nor an sdist")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
