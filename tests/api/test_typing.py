"""Typing: the package is typed (py.typed) with checked-in stubs for the compiled module that match
a fresh pybind11-stubgen run (tools/gen_stubs.py), and mypy accepts a typed user of the public API
(tests/typed/usage.py, --strict) and the public modules themselves, while rejecting misuse."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import dpsketch

ROOT = Path(__file__).resolve().parents[2]
PUBLIC_MODULES = ["__init__", "accounting/budget", "accounting/ledger", "release", "sketches/counters",
                  "sketches/linear", "mechanisms/private_sketches", "sketches/_base", "cli/docs", "sketches/dyadic",
                  "datasets/__init__"]


def _need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (it is in the test extra: pip install '.[test]')")


def _installed_package_dir() -> Path:
    pkg = Path(dpsketch.__file__).resolve().parent
    if ROOT / "python" in pkg.parents:
        pytest.skip("dpsketch is imported from the source tree, not from an installed package")
    return pkg


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("mypy_cache")


def _mypy(args, cwd, cache):
    cmd = [sys.executable, "-m", "mypy", "--cache-dir", str(cache), "--no-error-summary", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def test_installed_package_is_typed():
    pkg = _installed_package_dir()
    assert (pkg / "py.typed").is_file()
    for name in ("__init__.pyi", "noise.pyi", "release.pyi"):
        assert (pkg / "_core" / name).is_file(), f"_core/{name} is not installed"


def test_checked_in_stubs_match_a_fresh_generation(tmp_path):
    _need("pybind11_stubgen")
    _installed_package_dir()
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import gen_stubs
    finally:
        sys.path.pop(0)
    fresh = gen_stubs.generate(tmp_path)
    checked_in = {p.name for p in (ROOT / "python" / "dpsketch" / "_core").glob("*.pyi")}
    assert {"__init__.pyi", "noise.pyi", "release.pyi"} <= set(fresh)
    assert set(fresh) == checked_in, "a submodule's stub is missing or stale; run  python tools/gen_stubs.py"
    d = gen_stubs.diff(fresh)
    assert d == "", f"python/dpsketch/_core/*.pyi are stale; run  python tools/gen_stubs.py\n{d[:4000]}"
    # the comparison can fail: a changed stub is reported
    assert gen_stubs.diff({**fresh, "noise.pyi": fresh["noise.pyi"] + "x: int\n"}) != ""


def test_typed_usage_passes_mypy_strict(tmp_path, mypy_cache):
    _need("mypy")
    _installed_package_dir()
    # run from an empty folder so mypy resolves dpsketch to the installed package (py.typed + stubs)
    res = _mypy(["--strict", str(ROOT / "tests" / "typed" / "usage.py")], tmp_path, mypy_cache)
    assert res.returncode == 0, res.stdout + res.stderr


def test_mypy_rejects_misuse_of_the_api(tmp_path, mypy_cache):
    _need("mypy")
    _installed_package_dir()
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import dpsketch\nfrom dpsketch import _core\n"
        "dpsketch.Budget(epsilon='1')\n"
        "_core.SpaceSavingInt('x')\n"
        "dpsketch.SpaceSaving(8).release(epsilon=0.1, delta=1e-6, k=3, budget=1.0)\n"
        "x: str = dpsketch.Budget(1.0).spent().rho\n"
        "dpsketch.SpaceSaving(8).release(0.1, 1e-6, k=3)\n"  # keyword-only

    )
    res = _mypy(["--strict", str(bad)], tmp_path, mypy_cache)
    assert res.returncode == 1
    errors = [line for line in res.stdout.splitlines() if ": error:" in line]
    assert [int(line.split(":")[1]) for line in errors] == [3, 4, 5, 6, 7], res.stdout


def test_public_modules_pass_mypy(mypy_cache):
    _need("mypy")
    files = [str(ROOT / "python" / "dpsketch" / f"{m}.py") for m in PUBLIC_MODULES]
    res = _mypy(["--follow-imports=silent", "--ignore-missing-imports", *files], ROOT, mypy_cache)
    assert res.returncode == 0, res.stdout + res.stderr
