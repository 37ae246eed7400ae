"""The per-mechanism documentation pages (docs/mechanisms/): every page keeps the one template
(the same ``##`` headings in the same order, a parameter table), appears in the index table, and
every code path, test file and audit pair it cites exists; the links into and out of the pages
resolve (file and heading)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MECH = DOCS / "mechanisms"
TESTS = ROOT / "tests"

TEMPLATE = ["What it releases", "Parameters", "Privacy map", "Threshold", "Accuracy", "What is public",
            "Code", "Tests", "Audit pair"]
PARAMETER_HEADER = re.compile(r"^\|\s*name\s*\|\s*meaning\s*\|\s*default\s*\|\s*valid range\s*\|\s*$", re.M)

# The package layout the pages cite (new) and where each module lived before the move (old):
# a cited Python path must exist under one of the two names, and a page must cite the new one.
MOVED = {
    "sketches/counters.py": "summaries.py",
    "sketches/linear.py": "sketches.py",
    "sketches/dyadic.py": "dyadic.py",
    "accounting/budget.py": "budget.py",
    "accounting/ledger.py": "budget_file.py",
    "accounting/calibration.py": "calibration.py",
    "mechanisms/dpss.py": "dpss.py",
    "mechanisms/top_k.py": "top_k.py",
    "mechanisms/private_sketches.py": "private.py",
    "mechanisms/quantiles.py": "inmemory.py",
    "mechanisms/unit_level.py": "privacy_unit.py",
    "time/windows.py": "windows.py",
    "time/cumulative.py": "cumulative.py",
    "io/input.py": "_input.py",
    "cli/__init__.py": "cli.py",
    "cli/commands.py": "_commands.py",
}
PKG = "python/dpsketch/"
OLD_ONLY = {PKG + old for old in MOVED.values()} - {PKG + new for new in MOVED}

LINK = re.compile(r"\]\(([^)\s]+?\.md)(#[\w-]+)?\)")
CODE_PATH = re.compile(r"`((?:python|cpp)/[^`\s]+)`")
TEST_CITE = re.compile(r"`(test_\w+\.py)(?:::(\w+))?`")
AUDIT_COMMAND = re.compile(r"`dpsketch audit (?:--miscalibrated )?([^`\s]+)`")


def _pages():
    return sorted(p for p in MECH.glob("*.md") if p.name != "index.md")


def _strip_fences(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def _sections(text: str) -> dict:
    """{level-2 heading: its body} in order."""
    parts = re.split(r"^## (.*)$", _strip_fences(text), flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def _slug(heading: str) -> str:
    s = re.sub(r"[^\w\- ]", "", heading.lower())
    return s.replace(" ", "-")


def _anchors(md: Path) -> set:
    text = _strip_fences(md.read_text(encoding="utf-8"))
    return {_slug(m.group(1).strip()) for m in re.finditer(r"^#{1,4}\s+(.*)$", text, re.M)}


def _audit_names() -> set:
    audit = pytest.importorskip("dpsketch.audit")
    return {p.mechanism for p in audit.PAIRS}


def _python_path_exists(path: str) -> bool:
    if (ROOT / path).is_file():
        return True
    rel = path[len(PKG):] if path.startswith(PKG) else None
    return rel in MOVED and (ROOT / PKG / MOVED[rel]).is_file()


def _test_files() -> dict:
    return {p.name: p for p in TESTS.rglob("test_*.py")}


def test_there_are_pages():
    assert (MECH / "index.md").is_file()
    assert len(_pages()) >= 12


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.stem)
def test_page_follows_the_template(page):
    text = page.read_text(encoding="utf-8")
    titles = re.findall(r"^# .+$", _strip_fences(text), re.M)
    assert len(titles) == 1 and text.startswith("# "), "one title, first"
    sections = _sections(text)
    assert list(sections) == TEMPLATE, f"headings {list(sections)} != template {TEMPLATE}"
    assert PARAMETER_HEADER.search(sections["Parameters"]), "Parameters needs the table name | meaning | default | valid range"
    assert re.search(r"docs/algorithms\.md\)?\s*§\s*\d", text), "a page cites the specification's sections"


def test_every_page_is_in_the_index_table_and_nothing_else_is():
    rows = [line for line in (MECH / "index.md").read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    linked = [m.group(1) for line in rows for m in LINK.finditer(line)]
    pages = {p.name for p in _pages()}
    table_pages = [t for t in linked if "/" not in t]
    assert sorted(table_pages) == sorted(pages), "one index row per page, no row without a page"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.stem)
def test_cited_code_exists(page):
    code = _sections(page.read_text(encoding="utf-8"))["Code"]
    paths = CODE_PATH.findall(code)
    assert paths, "the Code section cites at least one path"
    for path in paths:
        assert path not in OLD_ONLY, f"{path}: cite the new package layout"
        if path.startswith("cpp/"):
            assert (ROOT / path).is_file(), f"{path} does not exist"
        else:
            assert _python_path_exists(path), f"{path} exists neither at the new nor at the old path"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.stem)
def test_cited_tests_exist(page):
    text = page.read_text(encoding="utf-8")
    files = _test_files()
    cited = TEST_CITE.findall(_sections(text)["Tests"])
    assert cited, "the Tests section cites at least one test file"
    for name, function in TEST_CITE.findall(text):  # anywhere on the page
        assert name in files, f"{name}: no such test file under tests/"
        if function:
            assert re.search(rf"^\s*def {function}\(", files[name].read_text(encoding="utf-8"), re.M), \
                f"{name}::{function} does not exist"


def _bullets(section: str) -> list:
    items, cur = [], None
    for line in section.splitlines():
        if line.startswith("- "):
            cur = [line]
            items.append(cur)
        elif cur is not None and line.startswith("  "):
            cur.append(line.strip())
        else:
            cur = None
    return [" ".join(i) for i in items]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.stem)
def test_cited_audit_pairs_exist(page):
    known = _audit_names()
    section = _sections(page.read_text(encoding="utf-8"))["Audit pair"]
    names = []
    for item in _bullets(section):
        m = re.match(r"- ((?:`[^`]+`(?:,\s*|\s+and\s+)?)+)(?:\([^)]*\))?\s*:", item)
        assert m, f"an audit bullet starts with the pair name(s) and a colon: {item[:80]!r}"
        names += re.findall(r"`([^`]+)`", m.group(1))
    names += AUDIT_COMMAND.findall(section)
    assert names, "the Audit pair section names at least one pair"
    unknown = sorted(set(names) - known)
    assert not unknown, f"not a registered audit pair: {unknown}"


def _md_files():
    yield from sorted(DOCS.glob("*.md"))
    yield from sorted(MECH.glob("*.md"))
    yield ROOT / "README.md"


def test_links_into_and_out_of_the_pages_resolve():
    bad = []
    for f in _md_files():
        text = _strip_fences(f.read_text(encoding="utf-8"))
        for m in LINK.finditer(text):
            target = (f.parent / m.group(1)).resolve()
            into = MECH in target.parents
            if not (into or f.parent == MECH):
                continue  # links between the other pages are tests/api/test_docs.py's
            if not target.is_file():
                bad.append(f"{f.relative_to(ROOT)}: {m.group(0)} (no such file)")
            elif m.group(2) and m.group(2)[1:] not in _anchors(target):
                bad.append(f"{f.relative_to(ROOT)}: {m.group(0)} (no such heading)")
    assert not bad, "\n".join(bad)


def test_every_citation_of_a_page_names_an_existing_page():
    """`docs/mechanisms/<page>.md` in prose, code comments and docstrings names a page that exists."""
    bad = []
    files = [ROOT / "README.md", *DOCS.rglob("*.md"), *(ROOT / "python").rglob("*.py"), *TESTS.rglob("*.py")]
    for f in files:
        if "build" in f.relative_to(ROOT).parts:
            continue
        for m in re.finditer(r"docs/mechanisms/([\w-]+)\.md", f.read_text(encoding="utf-8", errors="replace")):
            if not (MECH / f"{m.group(1)}.md").is_file():
                bad.append(f"{f.relative_to(ROOT)}: {m.group(0)}")
    assert not bad, "\n".join(bad)


def _docs_module():
    """The source tree's docs module (dpsketch docs), loaded from its file: the installed package may
    be an older build. It is python/dpsketch/_docs.py, or cli/docs.py after the layout move."""
    import importlib.util

    pytest.importorskip("dpsketch")
    for rel, package in (("cli/docs.py", "dpsketch.cli"), ("_docs.py", "dpsketch")):
        path = ROOT / PKG / rel
        if path.is_file():
            spec = importlib.util.spec_from_file_location(package + "._docs_under_test", path)
            mod = importlib.util.module_from_spec(spec)
            mod.__package__ = package
            spec.loader.exec_module(mod)
            return mod
    pytest.fail("no docs module in the source tree")


def test_dpsketch_docs_serves_the_mechanism_pages():
    docs = _docs_module()
    assert docs.docs_dir() == DOCS
    topics = docs.topics()
    assert "privacy" in topics and "mechanisms/index" in topics
    for page in _pages():
        assert docs.doc_path(f"mechanisms/{page.stem}") == page
    assert docs.doc_path("mechanisms/dpss.md") == MECH / "dpss.md"
    for bad in ("../README", "mechanisms/../privacy", "mechanisms", "results/x", "mechanisms/no-such-page"):
        with pytest.raises(ValueError):
            docs.doc_path(bad)


def test_the_checks_can_fail():
    assert not _python_path_exists("python/dpsketch/mechanisms/no_such_module.py")
    assert _python_path_exists("python/dpsketch/mechanisms/dpss.py")  # new or old name
    assert "python/dpsketch/summaries.py" in OLD_ONLY
    assert "test_no_such_file.py" not in _test_files()
    assert "DPSS" in _audit_names() and "NoSuchPair" not in _audit_names()
    assert list(_sections("# t\n## A\nx\n## B\n```\n## not a heading\n```\n")) == ["A", "B"]


def test_every_mechanism_page_is_in_the_site_toctree():
    """The docs site builds with warnings as errors; a page outside every toctree is one (found in
    CI otherwise, after the fast suite)."""
    import pathlib

    docs = pathlib.Path(__file__).resolve().parents[2] / "docs"
    toctree = (docs / "index.rst").read_text(encoding="utf-8")
    missing = [p.stem for p in sorted((docs / "mechanisms").glob("*.md")) if f"mechanisms/{p.stem}" not in toctree]
    assert not missing, f"add to docs/index.rst: {missing}"
