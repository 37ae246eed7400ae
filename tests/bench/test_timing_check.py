"""The CI timing check (bench/timing_check.py, docs/benchmarks.md "CI timing regression check") is
not blind: a path made twice as slow by the check's own slow-down hook (DPSKETCH_TIMING_SLOWDOWN,
read only by the check's harness: the timed pass runs twice over its chunk) fails it, while a path
left alone on the same loaded machine passes. The measurement compiles the timing program, so it is
marked slow (CI's "slow tests" stage)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

CHECK = Path(__file__).resolve().parents[2] / "bench" / "timing_check.py"


def run_check(*args: str, slowdown: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DPSKETCH_TIMING_SLOWDOWN"}
    if slowdown is not None:
        env["DPSKETCH_TIMING_SLOWDOWN"] = slowdown
    return subprocess.run([sys.executable, str(CHECK), *args], check=False, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("value", ["python_update_int_k256", "python_update_int_k256=0",
                                   "python_update_int_k256=1.5", "=2"])
def test_malformed_slowdown_is_refused_before_measuring(value):
    r = run_check(slowdown=value, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "DPSKETCH_TIMING_SLOWDOWN" in r.stderr and "PATH=K" in r.stderr
    assert "timing check" not in r.stdout  # refused before compiling or timing anything


def test_update_refuses_a_slowdown():
    r = run_check("--update", slowdown="python_update_int_k256=2", timeout=60)
    assert r.returncode == 2 and "DPSKETCH_TIMING_SLOWDOWN" in r.stderr, r.stdout + r.stderr


@pytest.mark.timing  # CI stage "timing": measured with nothing else running beside it
def test_a_twice_slower_path_fails_and_the_others_pass():
    pytest.importorskip("dpsketch")
    slowed = ["spacesaving_int_k256", "python_update_int_k256"]
    untouched = ["misragries_int_k256", "python_dyadic_update_int_l32"]
    r = run_check("--paths", ",".join(slowed + untouched), slowdown=",".join(f"{p}=2" for p in slowed))
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    failed = re.search(r"timing check FAILED: (\S+(?:, \S+)*) slower than recorded", r.stdout)
    assert failed, out
    assert sorted(failed.group(1).split(", ")) == sorted(slowed), out
    # every attempt of a slowed path was out of bounds (one measurement and two re-measurements)
    verdicts = table(r.stdout)
    for p in slowed:
        assert verdicts[p] == ["out of bounds"] * 3, out
    for p in untouched:
        assert verdicts[p][-1] != "out of bounds", out


def table(stdout: str) -> dict[str, list[str]]:
    """{path: [verdict of each attempt]} from the check's table."""
    rows: dict[str, list[str]] = {}
    last = None
    for line in stdout.splitlines():
        m = re.match(r"(\S+|  \(attempt \d+\))\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+x  (.+)$", line)
        if m:
            if not m.group(1).startswith(" "):
                last = m.group(1)
                rows[last] = []
            rows[last].append(m.group(2))
    return rows


@pytest.mark.timing
def test_an_unknown_slowdown_path_is_refused():
    r = run_check(slowdown="no_such_path=2")
    assert r.returncode == 2 and "unknown paths no_such_path" in r.stderr, r.stdout + r.stderr
