"""Fills the generated blocks of a results page (docs/results.md) from finished runs, so that the
page's tables state what was recorded, not what someone remembered.

A block is written as::

    <!-- generated: KIND FOLDER [FOLDER ...] -->
    ...replaced...
    <!-- end generated -->

with FOLDERs relative to the page. KIND is ``claims`` (the folder's claims.md), ``setup`` (one
row per folder and data set: stream length, repeats, runs, wall time, and the structure sizes
recorded in summary.csv: counter capacity, sketch capacity, depth and width, number of true heavy
hitters), ``heavy`` (the true heavy hitters per point of each sweep), ``dpss`` (a dpss-precision
run: precision / recall of every variant per data set and ε), ``dpssvariants`` (the same run: one
row per variant with the worst point's 5th percentile of precision and ARE), or ``include`` (a
markdown file written by a script, e.g. bench/bench_quantile_peers.py's peers.md, verbatim).

Run from the repository root: ``python -m experiments.report docs/results.md``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from ._common import read_csv
from .plots import _span_of
from dpsketch.errors import ParameterError

__all__ = ["fill", "main"]

_BLOCK = re.compile(r"(<!-- generated: ([a-z]+) ([^>]*?) -->\n)(.*?)(<!-- end generated -->)", re.S)


def _setup(folders: list[Path]) -> str:
    lines = ["| run | data set | n | repeats | runs | wall time | counters (k̃) | sketch capacity | depth | "
             "width (Count-Min / CountSketch) | true heavy hitters per point |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for f in folders:
        info = json.loads((f / "run_info.json").read_text())
        rows = read_csv(f / "summary.csv")
        for ds in sorted({r["dataset"] for r in rows}):
            n = info["n"][ds] if isinstance(info.get("n"), dict) else info.get("n")
            sk = ("CountMinSketch", "CountSketch")
            if info["experiment"] in ("zhao-frequency", "zhao-quantiles"):
                counters, cap = "-", "-"
                depth = _span_of(rows, "depth", dataset=ds)
                width = _span_of(rows, "width", dataset=ds)
                heavy = (f"{_span_of(rows, 'distinct_items', dataset=ds)} distinct items"
                         if info["experiment"] == "zhao-frequency" else "-")
            else:
                counters = _span_of(rows, "capacity", dataset=ds, algorithm=("MisraGries", "SpaceSaving"))
                cap = _span_of(rows, "capacity", dataset=ds, algorithm=sk)
                depth = _span_of(rows, "depth", dataset=ds, algorithm=sk)
                width = (f"{_span_of(rows, 'width', dataset=ds, algorithm='CountMinSketch')} / "
                         f"{_span_of(rows, 'width', dataset=ds, algorithm='CountSketch')}")
                heavy = _span_of(rows, "true_heavy_hitters", dataset=ds)
            wall = info.get("wall_seconds")
            wall_s = f"{wall:,.0f} s" if isinstance(wall, (int, float)) else "?"
            lines.append(f"| {info['experiment']} ({info['scale']}) | {ds} | {n:,} | {info.get('repeats')} | "
                         f"{info.get('runs')} | {wall_s} | {counters} | {cap} | {depth} | {width} | {heavy} |")
    return "\n".join(lines) + "\n"


def _heavy(folders: list[Path]) -> str:
    lines = ["| run | data set | sweep | x | true heavy hitters (f ≥ n/k) |", "|---|---|---|---|---|"]
    for f in folders:
        info = json.loads((f / "run_info.json").read_text())
        rows = read_csv(f / "summary.csv")
        seen = {}
        for r in rows:
            key = (r["dataset"], r["sweep"], float(r["x"]))
            if key not in seen:
                seen[key] = _span_of([r], "true_heavy_hitters")
        for (ds, sweep, x), v in sorted(seen.items()):
            lines.append(f"| {info['experiment']} ({info['scale']}) | {ds} | {sweep} | {x:g} | {v} |")
    return "\n".join(lines) + "\n"


def fill(page: str | Path) -> int:
    """Rewrites every generated block of ``page``; returns how many were filled."""
    page = Path(page)
    text = page.read_text()
    count = 0

    def sub(m):
        nonlocal count
        kind, args = m.group(2), m.group(3).split()
        folders = [page.parent / a for a in args]
        if kind == "claims":
            body = "".join((f / "claims.md").read_text() for f in folders)
        elif kind == "setup":
            body = _setup(folders)
        elif kind == "heavy":
            body = _heavy(folders)
        elif kind in ("dpss", "dpssvariants"):
            from . import precision

            fn = precision.wide_table if kind == "dpss" else precision.table
            body = "".join(fn(read_csv(f / "summary.csv")) for f in folders)
        elif kind == "include":
            body = "".join(f.read_text() for f in folders)
        else:
            raise ParameterError(f"unknown generated block kind {kind!r} in {page}")
        count += 1
        return m.group(1) + body + m.group(5)

    page.write_text(_BLOCK.sub(sub, text))
    return count


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m experiments.report PAGE.md", file=sys.stderr)
        return 2
    n = fill(argv[0])
    print(f"filled {n} generated blocks in {argv[0]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
