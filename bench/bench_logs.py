"""The log target of #38, whole commands: ``dpsketch top access.log --log-format combined --column path
--top-k 20`` against the same command on a file holding only the paths, and against
``awk '{print $7}' access.log | dpsketch top - --top-k 20``; the log reader on one thread and on two
(``dpsketch.io.logs.LOG_THREADS``); and the same for ``quantiles`` of the response bytes and for
``--privacy-id host``. Each case runs as its own process, the cases interleaved round by round, and
the table gives the median wall time of the rounds and the ratios of medians.

    python bench/bench_logs.py --lines 2000000 --rounds 7 [--dir DIR]

The log (bench/gen_access_log.py, seed 7) and the paths-only file are written to DIR once and
reused. The load average before and after is printed: on a shared machine the absolute times move,
the ratios (same rounds) less.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUN = ("import sys, dpsketch.io.logs as L; L.LOG_THREADS = int(sys.argv[1]); "
       "from dpsketch.cli import main; sys.exit(main(sys.argv[2:]))")


def dpsketch(threads, *argv):
    return [sys.executable, "-c", RUN, str(threads), *argv]


def cases(d: Path):
    log, paths, sizes, pairs = (str(d / n) for n in ("access.log", "paths.txt", "bytes.txt", "pairs.csv"))
    top = ["--top-k", "20", "-q"]
    q = ["--bounds", "0,1000000", "--rho", "1", "-q"]
    uid = ["--max-keys-per-unit", "5", "--max-rows-per-unit", "50", "-q"]
    return {
        "top paths.txt": dpsketch(2, "top", paths, *top),
        "top log, 1 thread": dpsketch(1, "top", log, "--log-format", "combined", "--column", "path", *top),
        "top log, 2 threads": dpsketch(2, "top", log, "--log-format", "combined", "--column", "path", *top),
        "awk | top -": ["sh", "-c", f"awk '{{print $7}}' {log} | {sys.executable} -m dpsketch top - --top-k 20 -q"],
        "quantiles bytes.txt": dpsketch(2, "quantiles", sizes, *q),
        "quantiles log bytes": dpsketch(2, "quantiles", log, "--log-format", "combined", "--column", "bytes", *q),
        "top pairs.csv --privacy-id": dpsketch(2, "top", pairs, "--column", "path", "--privacy-id", "host", *uid),
        "top log --privacy-id host": dpsketch(2, "top", log, "--log-format", "combined", "--column", "path",
                                              "--privacy-id", "host", *uid),
    }


def prepare(d: Path, lines: int):
    d.mkdir(parents=True, exist_ok=True)
    log = d / "access.log"
    if not log.exists():
        subprocess.run([sys.executable, str(HERE / "gen_access_log.py"), str(log), "--lines", str(lines),
                        "--paths", str(d / "paths.txt")], check=True)
    if not (d / "bytes.txt").exists() or not (d / "pairs.csv").exists():
        import dpsketch._core as core

        parser = core.logs.LogParser("combined", ["path", "host", "bytes"])
        data = log.read_bytes()
        r = parser.parse(data)
        import pyarrow as pa
        import pyarrow.csv as pcsv

        def col(c):
            validity = None if c["validity"] is None else pa.py_buffer(c["validity"])
            if c["type"] == "string":
                return pa.Array.from_buffers(pa.large_string(), r["rows"], [validity, pa.py_buffer(c["offsets"]),
                                                                            pa.py_buffer(c["data"])])
            return pa.Array.from_buffers(pa.int64(), r["rows"], [validity, pa.py_buffer(c["values"])])

        cols = {k: col(v) for k, v in r["columns"].items()}
        with open(d / "bytes.txt", "w") as f:
            f.write("\n".join("-" if v is None else str(v) for v in cols["bytes"].to_pylist()) + "\n")
        pcsv.write_csv(pa.table({"path": cols["path"], "host": cols["host"]}), d / "pairs.csv")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/dpsketch-bench-logs"))
    ap.add_argument("--only", nargs="*", help="run only these cases (names as printed)")
    a = ap.parse_args()
    prepare(a.dir, a.lines)
    todo = cases(a.dir)
    if a.only:
        todo = {k: v for k, v in todo.items() if k in a.only}
    env = dict(os.environ)
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} cores; "
          f"log {os.path.getsize(a.dir / 'access.log') / 1e6:.0f} MB, paths {os.path.getsize(a.dir / 'paths.txt') / 1e6:.0f} MB")
    times = {k: [] for k in todo}
    for _ in range(a.rounds):
        for name, argv in todo.items():
            t = time.perf_counter()
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
            times[name].append(time.perf_counter() - t)
    print(f"load average after: {os.getloadavg()}")
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med.get("top paths.txt")
    awk = med.get("awk | top -")
    print(f"| case | median s (of {a.rounds}) | min s | x top paths.txt | x awk pipeline |")
    print("|---|---|---|---|---|")
    for k, v in med.items():
        r1 = f"{v / base:.2f}" if base else ""
        r2 = f"{v / awk:.2f}" if awk else ""
        print(f"| {k} | {v:.2f} | {min(times[k]):.2f} | {r1} | {r2} |")


if __name__ == "__main__":
    main()
