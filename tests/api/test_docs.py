"""Documentation: every citation of docs/algorithms.md §N or docs/privacy.md §<name> in the source tree
resolves to an existing section, relative links between the docs resolve, and the docs ship with
the installed package (``dpsketch docs``, ``dpsketch --help``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import dpsketch
from dpsketch.cli import docs as _docs
from dpsketch.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SCANNED = ["python", "cpp", "bindings", "bench", "tests", "docs", "README.md", ".ci"]
TEXT_SUFFIXES = {".py", ".pyi", ".hpp", ".cpp", ".h", ".md", ".txt", ".toml", ".sh", ""}

# "docs/algorithms.md §2", "docs/algorithms.md §2-§5", "docs/algorithms.md §2 and §3", "§4, §5"
ALG_CITE = re.compile(r"docs/algorithms\.md\)?\s*(§\s*\d+(?:\s*(?:,|and|or|-|–|to)\s*§?\s*\d+)*)")
PRIV_CITE = re.compile(r"docs/privacy\.md\)?\s*§\s*([A-Za-z0-9][\w-]*)")
MD_LINK = re.compile(r"\]\((?:docs/)?(algorithms|privacy|cli|format|results|benchmarks)\.md(#[\w-]+)?\)")


def _source_files():
    for entry in SCANNED:
        p = ROOT / entry
        paths = [p] if p.is_file() else sorted(x for x in p.rglob("*") if x.is_file())
        for f in paths:
            if "build" in f.relative_to(ROOT).parts or f.suffix not in TEXT_SUFFIXES:
                continue
            if f.parent.name == "docs" and f.parent.parent.name == "dpsketch":
                continue  # an installed copy, if any
            try:
                yield f, f.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue


def _headings(md: Path):
    return [m.group(1).strip() for m in re.finditer(r"^#{2,4}\s+(.*)$", md.read_text(encoding="utf-8"), re.M)]


def _algorithm_sections():
    return {int(m.group(1)) for h in _headings(DOCS / "algorithms.md") if (m := re.match(r"(\d+)\.\s", h))}


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    s = re.sub(r"[^\w\- ]", "", heading.lower())
    return s.replace(" ", "-")


def test_algorithms_md_has_sections_0_to_8():
    assert _algorithm_sections() == set(range(9))


def test_every_algorithms_citation_resolves():
    sections = _algorithm_sections()
    seen, bad = 0, []
    for f, text in _source_files():
        for m in ALG_CITE.finditer(text):
            seen += 1
            numbers = [int(n) for n in re.findall(r"\d+", m.group(1))]
            for n in numbers:
                if n not in sections:
                    bad.append(f"{f.relative_to(ROOT)}: {m.group(0)!r}")
    assert seen > 40  # the scan found the citations (a broken regex must not pass silently)
    assert not bad, "citations of missing sections:\n" + "\n".join(bad)


def _privacy_name_resolves(name: str) -> bool:
    """`docs/privacy.md §<name>` names a heading by its first word (§PMG, §Budget) or by a prefix of
    its anchor (§budget-composition); `§N` is read as the spec section N."""
    if name.isdigit():
        return int(name) in _algorithm_sections()
    headings = _headings(DOCS / "privacy.md")
    first_words = {h.split()[0].strip(":—,.").lower() for h in headings}
    return name.lower() in first_words or any(_slug(h).startswith(name.lower()) for h in headings)


def test_every_privacy_citation_resolves():
    bad = []
    for f, text in _source_files():
        for m in PRIV_CITE.finditer(text):
            ok = _privacy_name_resolves(m.group(1))
            if not ok:
                bad.append(f"{f.relative_to(ROOT)}: {m.group(0)!r}")
    assert not bad, "docs/privacy.md citations without a matching heading:\n" + "\n".join(bad)


def test_privacy_citation_rule_can_fail():
    assert _privacy_name_resolves("PMG") and _privacy_name_resolves("Budget")
    assert _privacy_name_resolves("budget-composition") and _privacy_name_resolves("2")
    assert not _privacy_name_resolves("Nonexistent") and not _privacy_name_resolves("9")
    assert ALG_CITE.search("see docs/algorithms.md §2-§5 for") is not None
    assert re.findall(r"\d+", ALG_CITE.search("(docs/algorithms.md §2 and §3)").group(1)) == ["2", "3"]


def test_markdown_links_to_docs_resolve():
    bad = []
    for f, text in _source_files():
        if f.suffix != ".md":
            continue
        for m in MD_LINK.finditer(text):
            target = DOCS / f"{m.group(1)}.md"
            if not target.is_file():
                bad.append(f"{f.relative_to(ROOT)}: {m.group(0)}")
            elif m.group(2) and m.group(2)[1:] not in {_slug(h) for h in _headings(target)}:
                bad.append(f"{f.relative_to(ROOT)}: {m.group(0)} (no such heading)")
    assert not bad, "\n".join(bad)


def test_no_citation_of_the_unshipped_spec():
    offenders = [str(f.relative_to(ROOT)) for f, text in _source_files() if "ALGORITHMS.md" in text
                 and f.name != "test_docs.py"]
    assert offenders == []


# ------------------------------------------------------------------------- shipped docs --


def _installed_package_dir():
    pkg = Path(dpsketch.__file__).resolve().parent
    if ROOT / "python" in pkg.parents:
        pytest.skip("dpsketch is imported from the source tree, not from an installed package")
    return pkg


def test_docs_ship_in_the_installed_package():
    pkg = _installed_package_dir()
    shipped = pkg / "docs"
    for name in ("algorithms", "privacy", "cli", "format"):
        assert (shipped / f"{name}.md").is_file(), f"{name}.md is not installed"
    assert (shipped / "algorithms.md").read_text(encoding="utf-8") == (DOCS / "algorithms.md").read_text(encoding="utf-8")
    assert _docs.docs_dir() == shipped


def test_dpsketch_docs_command(capsys):
    assert main(["docs"]) == 0
    out = capsys.readouterr().out
    assert "algorithms" in out and "privacy" in out and str(_docs.docs_dir()) in out
    assert main(["docs", "algorithms"]) == 0
    assert capsys.readouterr().out == _docs.read("algorithms")
    assert main(["docs", "privacy", "--path"]) == 0
    assert Path(capsys.readouterr().out.strip()) == _docs.doc_path("privacy")
    assert main(["docs", "no-such-page"]) == 2
    assert "choose one of" in capsys.readouterr().err
    assert main(["docs", "../README"]) == 2


def test_help_names_the_docs():
    _installed_package_dir()
    out = subprocess.run([sys.executable, "-m", "dpsketch", "--help"], capture_output=True, text=True, check=True).stdout
    flat = " ".join(out.split())
    assert "dpsketch docs" in flat
    # argparse may wrap a long path at its hyphens (e.g. site-packages), so compare without whitespace
    assert str(_docs.docs_dir()) in "".join(out.split())
