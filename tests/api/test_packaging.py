"""Package metadata (pyproject.toml) and the distribution checker (tools/check_dist.py) that CI's
"wheels" stage runs on the built wheels and sdist (docs/releasing.md)."""

import importlib.util
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")


def _check_dist():
    spec = importlib.util.spec_from_file_location("check_dist", ROOT / "tools" / "check_dist.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _metadata_text(project) -> str:
    """METADATA as a build backend writes it from pyproject.toml's [project] table."""
    lines = ["Metadata-Version: 2.2", f"Name: {project['name']}", f"Version: {project['version']}",
             f"Requires-Python: {project['requires-python']}"]
    lines += [f"Classifier: {c}" for c in project["classifiers"]]
    lines += [f"Project-URL: {k}, {v}" for k, v in project["urls"].items()]
    lines += ["Description-Content-Type: text/markdown", ""]
    return "\n".join(lines) + (ROOT / project["readme"]).read_text(encoding="utf-8")


def test_python_classifiers_match_the_supported_range():
    project = _project()
    cd = _check_dist()
    minors = cd.supported_minors(project["requires-python"])
    assert minors[0] == "3.9" and minors[-1] == "3.13"
    listed = [c.rsplit(" :: ", 1)[1] for c in project["classifiers"]
              if c.startswith("Programming Language :: Python :: 3.")]
    assert listed == minors


def test_metadata_passes_the_checker_except_for_release():
    project = _project()
    cd = _check_dist()
    text = _metadata_text(project)
    assert cd.check_metadata(text, "pyproject", release=False) == []
    # the URLs are placeholders until the project has a public home: a release must refuse them
    placeholders = any(".invalid" in u for u in project["urls"].values())
    assert bool(cd.check_metadata(text, "pyproject", release=True)) == placeholders


def _wheel(tmp_path: Path, name: str, files) -> Path:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("dpsketch-0.1.0.dist-info/METADATA", _metadata_text(_project()))
        for f in files:
            z.writestr(f, "x")
    return path


def _good_files():
    return (["dpsketch/__init__.py", "dpsketch/_core.cpython-311-x86_64-linux-gnu.so",
             "dpsketch/datasets/retail.dat.gz", "dpsketch-0.1.0.dist-info/licenses/LICENSE"]
            + [f"dpsketch/docs/{p.name}" for p in (ROOT / "docs").glob("*.md")]
            + [f"dpsketch/docs/mechanisms/{p.name}" for p in (ROOT / "docs" / "mechanisms").glob("*.md")])


def test_checker_accepts_a_manylinux_wheel_and_refuses_the_linux_tag(tmp_path):
    cd = _check_dist()
    good = _wheel(tmp_path, "dpsketch-0.1.0-cp311-cp311-manylinux_2_35_x86_64.whl", _good_files())
    assert cd.check_wheel(good, release=False) == []
    raw = _wheel(tmp_path, "dpsketch-0.1.0-cp311-cp311-linux_x86_64.whl", _good_files())
    assert any("refused by package indexes" in p for p in cd.check_wheel(raw, release=False))


@pytest.mark.parametrize("extra", ["dpsketch/tests/test_x.py", "tests/data/x.csv",
                                   "dpsketch/docs/results/run.json", "dpsketch/docs/api/index.md",
                                   "bench/timing_check.cpp"])
def test_checker_refuses_source_tree_files_in_a_wheel(tmp_path, extra):
    cd = _check_dist()
    w = _wheel(tmp_path, "dpsketch-0.1.0-cp311-cp311-manylinux_2_35_x86_64.whl", _good_files() + [extra])
    assert cd.check_wheel(w, release=False) != []
