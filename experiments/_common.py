"""Shared plumbing of the experiment sweeps: seeds, timing, CSV output and a progress bar."""

from __future__ import annotations

import csv
import math
import sys
import time
import zlib
from pathlib import Path

import numpy as np

from .metrics import summarize


def derive_seed(base: int, *parts) -> int:
    """A 63-bit seed determined by ``base`` and the labels of a run (stable across runs and
    platforms: labels are hashed with CRC32 of their repr, not Python's salted ``hash``)."""
    words = [int(base) & 0xFFFFFFFF, (int(base) >> 32) & 0xFFFFFFFF]
    words += [zlib.crc32(repr(p).encode()) for p in parts]
    return int(np.random.SeedSequence(words).generate_state(1, np.uint64)[0] >> np.uint64(1))


def timed_update(obj, stream) -> float:
    """Feed ``stream`` to ``obj.update_many`` and return the wall time per item in microseconds."""
    t0 = time.perf_counter()
    obj.update_many(stream)
    dt = time.perf_counter() - t0
    return dt / max(len(stream), 1) * 1e6


# ---------------------------------------------------------------------------------------- CSV
def _fmt(v):
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return repr(v)
    return v


def write_csv(path: Path, rows: list[dict], columns: list[str] | None = None) -> None:
    """One row per dict; NaN is written as an empty cell."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if columns is None:
        columns = []
        for r in rows:
            for c in r:
                if c not in columns:
                    columns.append(c)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({c: _fmt(r.get(c, "")) for c in columns})


def read_csv(path: Path) -> list[dict]:
    """Rows as dicts; numeric cells become floats, empty cells NaN."""
    out = []
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            row = {}
            for c, v in r.items():
                if v == "":
                    row[c] = math.nan
                    continue
                try:
                    row[c] = float(v)
                except ValueError:
                    row[c] = v
            out.append(row)
    return out


def span(values) -> str:
    """The values of a parameter over a group of runs: "v" when all equal, "lo-hi" otherwise, ""
    when undefined in every run (e.g. the depth of a counter summary)."""
    vs = sorted({float(v) for v in values if v not in (None, "") and not (isinstance(v, float) and math.isnan(v))})
    if not vs:
        return ""
    f = lambda v: f"{v:g}" if v != int(v) else f"{int(v)}"  # noqa: E731
    return f(vs[0]) if len(vs) == 1 else f"{f(vs[0])}-{f(vs[-1])}"


def summary_rows(runs: list[dict], group_by: list[str], metrics: list[str], spans: dict | None = None) -> list[dict]:
    """Per group of runs: the group's labels, the number of runs, mean/p5/p95 (and how many runs
    had a defined value) of each metric, and for each ``spans`` entry ``column: fn(run)`` the span
    (see ``span``) of ``fn`` over the group's runs (parameters such as the sketch depth)."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        key = tuple(None if isinstance(v, float) and math.isnan(v) else v for v in (r.get(g) for g in group_by))
        groups.setdefault(key, []).append(r)
    out = []
    for key, rs in groups.items():
        row = dict(zip(group_by, key))
        row["runs"] = len(rs)
        for col, fn in (spans or {}).items():
            row[col] = span(fn(r) for r in rs)
        for m in metrics:
            s = summarize([r.get(m, math.nan) for r in rs])
            row[f"{m}_mean"] = s["mean"]
            row[f"{m}_p5"] = s["p5"]
            row[f"{m}_p95"] = s["p95"]
            row[f"{m}_defined"] = s["defined"]
        out.append(row)
    return out


# ----------------------------------------------------------------------------------- progress
class Progress:
    """A progress bar on stderr: tqdm when importable, else a plain one-line bar."""

    def __init__(self, total: int, desc: str, enabled: bool = True):
        self.total, self.desc, self.enabled, self.done = total, desc, enabled, 0
        self._tqdm = None
        self._t0 = time.perf_counter()
        self._last = 0.0
        if not enabled:
            return
        try:
            from tqdm import tqdm  # optional

            self._tqdm = tqdm(total=total, desc=desc, file=sys.stderr, dynamic_ncols=True)
        except ImportError:
            self._draw("")

    def update(self, note: str = "") -> None:
        self.done += 1
        if not self.enabled:
            return
        if self._tqdm is not None:
            self._tqdm.set_postfix_str(note, refresh=False)
            self._tqdm.update(1)
            return
        now = time.perf_counter()
        if now - self._last >= 0.2 or self.done == self.total:
            self._draw(note)

    def _draw(self, note: str) -> None:
        self._last = time.perf_counter()
        width = 30
        frac = self.done / self.total if self.total else 1.0
        bar = "#" * int(frac * width) + "." * (width - int(frac * width))
        elapsed = self._last - self._t0
        eta = elapsed / frac - elapsed if frac > 0 else 0.0
        line = f"\r{self.desc} [{bar}] {self.done}/{self.total} {elapsed:5.0f}s eta {eta:4.0f}s {note}"
        sys.stderr.write(line[:120].ljust(120))
        sys.stderr.flush()

    def close(self) -> None:
        if not self.enabled:
            return
        if self._tqdm is not None:
            self._tqdm.close()
        else:
            self._draw("done")
            sys.stderr.write("\n")
            sys.stderr.flush()


def log(msg: str, enabled: bool = True) -> None:
    if enabled:
        print(msg, file=sys.stderr, flush=True)
