"""Cost of parsing log lines in C++ (dpsketch._core.logs, docs/logs.md) against the plain line
splitter (dpsketch._core.split_lines) on a file holding only the paths: the parser alone, from
bytes in memory to Arrow columns, without the rest of the command (I/O, counting, release).

A combined log of --lines lines (bench/gen_access_log.py, fixed seed) and its paths alone are
written once; then, in the same run and interleaved round by round, each case is timed over the
whole file (blocks of 8 MiB cut at line ends, as the input layer reads them) and the median over
--rounds rounds is reported, with the median of the per-round ratios to the paths-only split.

    python bench/bench_log_parse.py [--lines 2000000] [--rounds 7] [--dir /tmp] [--cli]

--cli also times `dpsketch top PATHS --top-k 20` on the paths-only file (the whole command), to
set the parser's cost against the issue's target of 1.5x that command for the log file.
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

from dpsketch import _core

BLOCK = 8 << 20


def blocks(data: bytes) -> list[memoryview]:
    """data cut into blocks of about BLOCK bytes, each ending at a line end."""
    out, view, i = [], memoryview(data), 0
    while i < len(data):
        j = data.find(b"\n", min(i + BLOCK, len(data)) - 1)
        j = len(data) if j < 0 else j + 1
        out.append(view[i:j])
        i = j
    return out


def time_split(bs) -> float:
    t = time.perf_counter()
    for b in bs:
        _core.split_lines(np.frombuffer(b, dtype=np.uint8), True, 1 << 20)
    return time.perf_counter() - t


def time_parse(parser, bs) -> float:
    t = time.perf_counter()
    for b in bs:
        parser.parse(b)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--regex-lines", type=int, default=200_000, help="lines timed for the (slow) regex case")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--cli", action="store_true", help="also time the whole `dpsketch top` on the paths file")
    a = ap.parse_args()
    d = Path(a.dir)
    log, paths, js = d / f"access-{a.lines}.log", d / f"paths-{a.lines}.txt", d / f"access-{a.lines}.jsonl"
    if not (log.exists() and paths.exists() and js.exists()):
        gen = Path(__file__).with_name("gen_access_log.py")
        subprocess.run([sys.executable, str(gen), str(log), "--lines", str(a.lines), "--paths", str(paths),
                        "--json", str(js)], check=True)
    log_data, path_data, js_data = log.read_bytes(), paths.read_bytes(), js.read_bytes()
    log_b, path_b, js_b = blocks(log_data), blocks(path_data), blocks(js_data)
    cut = log_data.find(b"\n", len(log_data) * a.regex_lines // a.lines)
    rx_b = blocks(log_data[:cut + 1])
    rx_pattern = (r'^(?P<host>\S+) \S+ \S+ \[[^\]]*\] "(?P<method>\S+) (?P<path>[^ "]*)[^"]*" '
                  r'(?P<status>\d+) (?P<bytes>\S+)')
    cases = {
        "split paths-only file": lambda: time_split(path_b),
        "combined: path": lambda: time_parse(_core.logs.LogParser("combined", ["path"]), log_b),
        "combined: path, strip_query": lambda: time_parse(
            _core.logs.LogParser("combined", ["path"], strip_query=True), log_b),
        "combined: path, host": lambda: time_parse(_core.logs.LogParser("combined", ["path", "host"]), log_b),
        "combined: bytes (int64)": lambda: time_parse(_core.logs.LogParser("combined", ["bytes"]), log_b),
        "json: path": lambda: time_parse(_core.logs.LogParser("json", ["path"]), js_b),
        "split whole log lines": lambda: time_split(log_b),
    }
    rx = _core.logs.LogParser("regex", ["path"], pattern=rx_pattern)
    times: dict[str, list[float]] = {k: [] for k in cases}
    ratios: dict[str, list[float]] = {k: [] for k in cases}
    rx_times = []
    for _ in range(a.rounds):
        base = None
        for name, fn in cases.items():
            s = fn()
            times[name].append(s)
            base = s if base is None else base
            ratios[name].append(s / base)
        rx_times.append(time_parse(rx, rx_b))
    sizes = {"split paths-only file": len(path_data), "json: path": len(js_data)}
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    print(f"host: {cpu}, {os.cpu_count()} cores; {a.lines} lines; log {len(log_data) / 1e6:.0f} MB, "
          f"paths {len(path_data) / 1e6:.0f} MB, JSON {len(js_data) / 1e6:.0f} MB; median of {a.rounds} rounds")
    print(f"{'case':32} {'seconds':>8} {'Mlines/s':>9} {'MB/s':>7} {'x split(paths)':>15}")
    for name in cases:
        s = statistics.median(times[name])
        mb = sizes.get(name, len(log_data)) / 1e6 / s
        print(f"{name:32} {s:8.3f} {a.lines / s / 1e6:9.2f} {mb:7.0f} {statistics.median(ratios[name]):15.2f}")
    s = statistics.median(rx_times)
    print(f"{'regex: path (' + str(a.regex_lines) + ' lines)':32} {s:8.3f} {a.regex_lines / s / 1e6:9.2f} "
          f"{(cut + 1) / 1e6 / s:7.0f} {'(std::regex)':>15}")
    if a.cli:
        cmd = [sys.executable, "-m", "dpsketch", "top", str(paths), "--top-k", "20", "-q"]
        runs = []
        for _ in range(3):
            t = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            runs.append(time.perf_counter() - t)
        cli = statistics.median(runs)
        extra = statistics.median(times["combined: path"]) - statistics.median(times["split paths-only file"])
        print(f"`dpsketch top paths --top-k 20`: {cli:.2f} s; the parser adds {extra:.2f} s over the split: "
              f"({cli:.2f} + {extra:.2f}) / {cli:.2f} = {(cli + extra) / cli:.2f}x if the rest of the command "
              f"costs the same on the log file (reading {len(log_data) / len(path_data):.1f}x the bytes is not counted)")


if __name__ == "__main__":
    main()
