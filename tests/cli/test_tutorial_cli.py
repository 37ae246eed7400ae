"""docs/tutorial-cli.md runs as written: its shell blocks, in order, in one directory that has the
repository's bench/ (the log generator), with ``dpsketch`` on the PATH."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial-cli.md"


def test_the_command_line_tutorial_runs_as_written(tmp_path):
    pytest.importorskip("pyarrow")
    if shutil.which("bash") is None or shutil.which("awk") is None or shutil.which("gzip") is None:
        pytest.skip("needs bash, awk and gzip")
    import dpsketch

    blocks = re.findall(r"```sh\n(.*?)```", TUTORIAL.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 8
    (tmp_path / "bench").symlink_to(ROOT / "bench")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "dpsketch"  # the console script of an installed dpsketch
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m dpsketch "$@"\n')
    shim.chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=str(Path(dpsketch.__file__).resolve().parent.parent))
    outputs = []
    for i, block in enumerate(blocks, 1):
        r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"block {i}:\n{block}\n{r.stderr}"
        assert "Traceback" not in r.stderr, f"block {i}: {r.stderr}"
        outputs.append((r.stdout, r.stderr))
    everything = "".join(out + err for out, err in outputs)
    assert "exit status 1" in everything and "does not match the combined log format" in everything
    assert "/static/css/terms-13356" in everything  # the generator's most requested page is released
    assert "privacy unit: privacy_id = column 'host'" in everything
