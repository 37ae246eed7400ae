"""Per-unit memory of the bounded-memory route's row limiter (docs/privacy.md §Privacy unit).

Feeds 10^6 distinct units (1.5·10^6 rows: every unit once, half of them twice, shuffled, in chunks
of 10^5 rows) through ``UnitRowLimiter(3)`` and, as a baseline in the same run, through a plain dict
of per-unit counters; reports the memory still held afterwards and the peak during the run, per
unit, as traced by ``tracemalloc`` (which sees numpy's buffers and Python objects, not the
interpreter's own baseline). Ids are int64, or str ``"user-%08d"`` (13 ASCII characters).

Usage: PYTHONPATH=python python3 tools/measure_unit_state.py [--units N]
"""

from __future__ import annotations

import argparse
import gc
import platform
import tracemalloc

import numpy as np

from dpsketch.mechanisms.unit_level import UnitRowLimiter


class DictLimiter:
    """The baseline: one dict entry (id -> rows kept) per unit."""

    def __init__(self, r: int):
        self.r, self.seen = r, {}

    def keep(self, ids) -> np.ndarray:
        out = np.empty(len(ids), dtype=bool)
        for i, x in enumerate(ids.tolist()):
            c = self.seen.get(x, 0)
            out[i] = c < self.r
            self.seen[x] = min(c + 1, self.r)
        return out


def measure(make, chunks, units: int) -> tuple[float, float]:
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    lim = make()
    for c in chunks:
        lim.keep(c)
    cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del lim
    return (cur - base) / units, (peak - base) / units


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=10**6)
    n = ap.parse_args().units
    ids = np.random.default_rng(1).permutation(n).astype(np.int64)
    ids = np.concatenate([ids, ids[: n // 2]])
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}; "
          f"{n} units, {len(ids)} rows")
    for kind in ("int", "str"):
        col = ids if kind == "int" else np.array([f"user-{x:08d}" for x in ids.tolist()])
        chunks = [col[i:i + 100_000] for i in range(0, len(col), 100_000)]
        for name, make in (("UnitRowLimiter", lambda: UnitRowLimiter(3)), ("dict baseline", lambda: DictLimiter(3))):
            held, peak = measure(make, chunks, n)
            print(f"{kind:>3} ids  {name:<15} held {held:6.1f} B/unit   peak {peak:6.1f} B/unit")


if __name__ == "__main__":
    main()
