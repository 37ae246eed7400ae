"""``dpsketch top --privacy-id`` (the person as the privacy unit, exact route) against polars doing the
same contribution bounding exactly, and against the row-level command (issue #42, target 2).

Contenders, each a fresh process per run, interleaved in rounds (order rotated), on one CSV of
(query, user_id) written from ``dpsketch.datasets.event_log`` (decimal integers as text):

- ``unit``: ``dpsketch top FILE --column query --privacy-id user_id --max-keys-per-unit M`` (text keys
  and ids, the default);
- ``unit_int_ids``: the same with ``--int-ids``;
- ``unit_int``: the same with ``--int-keys --int-ids``;
- ``row``: the row-level ``dpsketch top FILE --column query`` (text keys, the default);
- ``row_int``: the same with ``--int-keys`` (the same release on this file: every key is a
  canonical decimal integer);
- ``polars``: ``scan_csv`` (both columns String, as dpsketch reads them by default) ->
  ``group_by(user_id, query).len()`` -> per user the M pairs of smallest hash, at most C rows each
  -> ``group_by(query).sum()`` -> collect.

Reported: the median wall seconds, CPU seconds (user + system of the child) and peak RSS
(ru_maxrss) per contender, and the same-run ratios of each round (medians), by wall time and by CPU
time (on a shared machine the CPU ratio is the steadier one). Run::

    python bench/unit_cli.py --rows 20000000 --rounds 9 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

POLARS = r"""
import sys, polars as pl
path, m, c = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
df = pl.scan_csv(path, schema_overrides={"query": pl.String, "user_id": pl.String})
pairs = df.group_by("user_id", "query").len()
pairs = pairs.with_columns(h=pl.struct("user_id", "query").hash(seed=1))
kept = pairs.filter(pl.col("h").rank("ordinal").over("user_id") <= m)
out = kept.group_by("query").agg(pl.col("len").clip(upper_bound=c).sum()).collect()
print(out.height)
"""


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
    except OSError:
        return platform.processor()
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    simd = [f for f in ("avx2", "avx512f", "avx512bw", "avx512vl") if f in flags]
    return f"{model} ({os.cpu_count()} CPUs; {' '.join(simd)})"


def make_csv(path: Path, rows: int, seed: int) -> None:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    from dpsketch.datasets import event_log

    users, keys = event_log(rows, seed=seed)
    pcsv.write_csv(pa.table({"query": keys, "user_id": users}), str(path),
                   pcsv.WriteOptions(quoting_style="none"))


def run(cmd: list[str], env: dict) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MB) of one child."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"failed ({status}): {' '.join(cmd)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--m", type=int, default=10)
    ap.add_argument("--c", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--csv", type=Path, help="use (or write) this CSV instead of a temporary one")
    ap.add_argument("--only", help="comma-separated contenders (default: all)")
    ap.add_argument("--pythonpath", action="append", default=[],
                    help="LABEL=DIR: also run the unit contenders with dpsketch imported from DIR (A/B builds)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    tmp = None
    path = args.csv
    if path is None:
        tmp = tempfile.TemporaryDirectory()
        path = Path(tmp.name) / "events.csv"
    if not path.exists():
        make_csv(path, args.rows, args.seed)

    py = sys.executable
    top = [py, "-m", "dpsketch", "top", str(path), "--column", "query", "--seed", "1"]
    unit = top + ["--privacy-id", "user_id", "--max-keys-per-unit", str(args.m), "--max-rows-per-key", str(args.c)]
    contenders = {
        "unit": unit, "unit_int_ids": unit + ["--int-ids"], "unit_int": unit + ["--int-keys", "--int-ids"],
        "row": top, "row_int": top + ["--int-keys"], "polars": [py, "-c", POLARS, str(path), str(args.m), str(args.c)],
    }
    if args.only:
        contenders = {k: v for k, v in contenders.items() if k in args.only.split(",")}
    envs = {name: dict(os.environ) for name in contenders}
    for spec in args.pythonpath:
        label, d = spec.split("=", 1)
        for name in [n for n in list(contenders) if n.startswith("unit") and "@" not in n]:
            contenders[f"{name}@{label}"] = contenders[name]
            envs[f"{name}@{label}"] = {**os.environ, "PYTHONPATH": d}

    names = list(contenders)
    walls = {n: [] for n in names}
    cpus = {n: [] for n in names}
    rss = {n: [] for n in names}
    for r in range(args.rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for n in order:
            w, c, m = run(contenders[n], envs[n])
            walls[n].append(w)
            cpus[n].append(c)
            rss[n].append(m)
        print(f"round {r + 1}: " + " ".join(f"{n}={walls[n][-1]:.2f}" for n in names), file=sys.stderr, flush=True)

    def ratio(a, b, t=None):
        t = walls if t is None else t
        return statistics.median(x / y for x, y in zip(t[a], t[b]))

    out = {"host": cpu_model(), "machine": platform.node(), "rows": args.rows, "rounds": args.rounds,
           "loadavg": os.getloadavg(),
           "seconds": {n: statistics.median(walls[n]) for n in names},
           "cpu_seconds": {n: statistics.median(cpus[n]) for n in names},
           "peak_rss_mb": {n: statistics.median(rss[n]) for n in names},
           "bytes_per_row": {n: statistics.median(rss[n]) * 2**20 / args.rows for n in names},
           "ratios": {}, "cpu_ratios": {}}
    pairs = []
    for n in names:
        if n.startswith("unit"):
            for peer in ("polars", "row"):
                if peer in walls:
                    pairs.append((n, peer))
            base = n.split("@")[0]
            if "@" in n and base in walls:
                pairs.append((n, base))
            if n.startswith("unit_int_ids") and n.replace("unit_int_ids", "unit") in walls:
                pairs.append((n, n.replace("unit_int_ids", "unit")))
    if "row" in walls and "row_int" in walls:
        pairs.append(("row", "row_int"))
    for a, b in pairs:
        out["ratios"][f"{a}/{b}"] = ratio(a, b)
        out["cpu_ratios"][f"{a}/{b}"] = ratio(a, b, cpus)
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
