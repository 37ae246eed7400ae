"""The documentation installed with the package: docs/*.md of the source tree, shipped as
``dpsketch/docs/`` (see CMakeLists.txt). ``dpsketch docs`` lists and prints it."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional

from ..errors import NotInstalledError, ParameterError

__all__ = ["docs_dir", "topics", "doc_path", "read"]


def docs_dir() -> Optional[Path]:
    """Folder holding the .md files: the installed copy, else (running from a source checkout)
    the repository's docs/; None when neither exists."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "docs", package.parent.parent / "docs"):
        if (candidate / "algorithms.md").is_file():
            return candidate
    return None


def topics() -> Dict[str, str]:
    """{topic: title} for every page, e.g. {'algorithms': 'Algorithms: what dpsketch computes'};
    the mechanism pages are ``'mechanisms/<name>'`` (docs/mechanisms/)."""
    d = docs_dir()
    if d is None:
        return {}
    out = {}
    for p in sorted(d.glob("*.md")) + sorted(d.glob("mechanisms/*.md")):
        first = p.read_text(encoding="utf-8").lstrip().splitlines()[:1]
        out[p.relative_to(d).with_suffix("").as_posix()] = first[0].lstrip("# ").strip() if first else p.stem
    return out


def doc_path(topic: str) -> Path:
    """Path of one page; ``topic`` is its name without .md (``'algorithms'``, ``'privacy'``,
    ``'mechanisms/dpss'``, ...): one of :func:`topics`, nothing else."""
    d = docs_dir()
    if d is None:
        raise NotInstalledError("the dpsketch documentation is not installed with this copy of the package")
    name = topic[:-3] if topic.endswith(".md") else topic
    if name not in topics():
        raise ParameterError(f"unknown documentation topic; choose one of: {', '.join(topics())}")
    return d / f"{name}.md"


def read(topic: str) -> str:
    """The text of one page (Markdown)."""
    return doc_path(topic).read_text(encoding="utf-8")
