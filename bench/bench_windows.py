"""Windowed releases (docs/cli.md, Windows): what one release per window costs over one release of
the whole file, and what memory the open windows hold.

1. Time: ``dpsketch top FILE --column query`` against ``dpsketch top FILE --column query
   --time-column ts --window 1h --start ... --end ...`` on the same CSV of timestamped rows
   (``--rows``, default 2·10^7; Zipf 1.2 query ids, integer epoch seconds over one day, in time
   order). ``--pairs`` alternating runs; the figure is the median of the per-pair ratios
   (windowed / single), with each command's median wall time and peak RSS (the child's
   ``ru_maxrss``).
2. Memory, clock="input": the same file cut into 10, 100 and 1000 windows (every window open
   until the end of the input): peak RSS grows with the number of open windows, one summary each.
3. Memory, a public clock that moves with the data (``clock="wall"`` with ``now`` = the batch's
   event time, 10^3 windows of 1 s, 10^4 events per window, in time order): windows close as the
   clock passes them, so at most two are open and the peak RSS stays flat while the number of
   windows released grows.

    python bench/bench_windows.py [--rows 20000000] [--pairs 5] [--dir /tmp] [--iso] [--time-only]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import dpsketch
from dpsketch.time.windows import Windowed

DAY0 = 1_700_006_400  # 2023-11-15T00:00:00Z


def write_events(path: Path, rows: int, span_seconds: int, seed: int = 1, iso: bool = False) -> None:
    rng = np.random.default_rng(seed)
    step = 1_000_000
    with open(path, "w") as f:
        f.write("query,ts\n")
        for lo in range(0, rows, step):
            n = min(step, rows - lo)
            q = rng.zipf(1.2, n) % 1_000_003
            ts = DAY0 + (np.arange(lo, lo + n, dtype=np.int64) * span_seconds) // rows
            if iso:  # ISO 8601 text, UTC with a Z, as logs write it
                text = np.datetime_as_string(ts.astype("datetime64[s]"), unit="s")
                f.write("\n".join(f"q{a},{b}Z" for a, b in zip(q.tolist(), text.tolist())))
            else:
                f.write("\n".join(f"q{a},{b}" for a, b in zip(q.tolist(), ts.tolist())))
            f.write("\n")


def timed_child(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of ``cmd``, the RSS measured by GNU time: a child forked from
    this process would report this process's own high-water mark."""
    t = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    err = proc.stderr.decode(errors="replace")
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err}")
    return wall, int(err.strip().splitlines()[-1]) / 1024


def stream_windows(windows: int, per_window: int = 10_000) -> None:
    """Stream ``windows`` one-second windows past a public clock that moves with the events
    (module docstring, 3); run in a child of its own so that its peak RSS is its own."""
    rng = np.random.default_rng(2)
    released = 0
    w = Windowed(period="1s", make=lambda: dpsketch.SpaceSaving(2000), epsilon=1.0, delta=1e-6, k=1000,
                 start=DAY0, end=DAY0 + windows, clock="wall", now=lambda: 0.0, seed=1)
    for i in range(windows):
        items = rng.zipf(1.2, per_window) % 1_000_003
        times = DAY0 + i + np.arange(per_window) / per_window
        released += len(w.update(items, times, now=DAY0 + i + 0.5))
    released += len(w.close(now=DAY0 + windows + 1))
    assert released == windows, (released, windows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where the CSV is written")
    ap.add_argument("--iso", action="store_true", help="write the times as ISO 8601 text instead of epoch seconds")
    ap.add_argument("--time-only", action="store_true", help="part 1 only (the time ratio)")
    ap.add_argument("--stream-windows", type=int, help=argparse.SUPPRESS)  # the child of part 3
    args = ap.parse_args()
    if args.stream_windows:
        stream_windows(args.stream_windows)
        return
    cli = [sys.executable, "-m", "dpsketch", "top"]
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        path = Path(d) / "events.csv"
        write_events(path, args.rows, 86_400, iso=args.iso)
        single = cli + [str(path), "--column", "query", "--quiet"]
        window = single + ["--time-column", "ts", "--window", "1h", "--start", str(DAY0), "--end", str(DAY0 + 86_400)]
        results = {"single": [], "windowed": []}
        ratios = []
        timed_child(single)  # warm the page cache
        for _ in range(args.pairs):
            a = timed_child(single)
            b = timed_child(window)
            results["single"].append(a)
            results["windowed"].append(b)
            ratios.append(b[0] / a[0])
        print(f"{args.rows:,} rows, {args.pairs} alternating pairs, {os.cpu_count()} cores, "
              f"load average {os.getloadavg()[0]:.1f}")
        for name, runs in results.items():
            print(f"  {name:9s} median {statistics.median(r[0] for r in runs):.2f} s "
                  f"(runs {', '.join(f'{r[0]:.2f}' for r in runs)}), peak RSS {max(r[1] for r in runs):.0f} MB")
        print(f"  windowed / single: median {statistics.median(ratios):.2f} "
              f"(pairs {', '.join(f'{r:.2f}' for r in ratios)}), times as {'ISO 8601 text' if args.iso else 'epoch seconds'}")
        if args.time_only:
            return
        print("memory with every window open to the end (clock='input'), peak RSS:")
        for count in (10, 100, 1000):
            period = 86_400 // count
            wall, rss = timed_child(cli + [str(path), "--column", "query", "--quiet", "--time-column", "ts",
                                           "--window", f"{period}s", "--start", str(DAY0),
                                           "--end", str(DAY0 + period * count)])
            print(f"  {count:5d} windows of {period} s: {rss:.0f} MB, {wall:.2f} s")
    print("streaming on a public clock that moves with the events (at most two windows open), peak RSS:")
    for count in (10, 1000):
        wall, rss = timed_child([sys.executable, __file__, "--stream-windows", str(count)])
        print(f"  {count:5d} windows of 1 s, 10^4 events each: {rss:.0f} MB, {wall:.2f} s")


if __name__ == "__main__":
    main()
