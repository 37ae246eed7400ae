"""docs/tutorial.md runs as written: its Python blocks, in order, in one namespace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial.md"


def test_the_tutorial_runs_as_written(tmp_path, monkeypatch, capsys):
    pytest.importorskip("pandas")
    blocks = re.findall(r"```python\n(.*?)```", TUTORIAL.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for i, block in enumerate(blocks, 1):
        exec(compile(block, f"{TUTORIAL.name} block {i}", "exec"), namespace)  # noqa: S102 - the docs' own code
    out = capsys.readouterr().out
    assert "bot-only keys released" in out and "refused:" in out
    assert int(out.split(" bot-only keys released")[0].split()[-1]) > 0  # the row-level pitfall shows
