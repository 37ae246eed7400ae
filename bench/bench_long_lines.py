"""Reader cost of long lines and of '\\r' line ends (docs/cli.md, Bad lines): the time to read one
line of 48 MB and of 384 MB (linear: the ratio is about 8), and a file of 2^19 lines ending in '\\r'
against the same lines ending in '\\n' (the ratio is about 1). Best of 3 per case, same run.

    python bench/bench_long_lines.py [--dir /tmp]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from dpsketch.io import input as _input


def read_seconds(path: Path, **source) -> float:
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        sum(len(b) for b in _input.Source(str(path), **source).chunks())
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where the test files are written")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        times = {}
        for mb in (48, 384):
            p = Path(d) / f"line{mb}.txt"
            p.write_bytes(b"y" * (mb << 20) + b"\n")
            times[mb] = read_seconds(p, max_line_bytes=1 << 30)
            p.unlink()
        print(f"one line of 48 MB: {times[48]:.3f} s, 384 MB: {times[384]:.3f} s, ratio {times[384] / times[48]:.1f} "
              "(linear: about 8)")
        ends = {}
        for name, end in (("cr", b"\r"), ("lf", b"\n")):
            p = Path(d) / f"{name}.txt"
            p.write_bytes((b"abcdefg" + end) * (1 << 19))
            ends[name] = read_seconds(p)
        print(f"2^19 lines ending in \\r: {ends['cr']:.3f} s, in \\n: {ends['lf']:.3f} s, ratio {ends['cr'] / ends['lf']:.2f}")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
