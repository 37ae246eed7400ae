"""In-memory private quantiles at the settings of Gillenwater, Joseph and Kulesza (2021)'s
``dp_multiq`` benchmark: n values drawn from a Gaussian (mean 0, sd 5), a uniform on [−5, 5] or a
real column (the FIMI retail item ids, dpsketch.datasets.retail, sampled), public bounds
[−100, 100] ([0, 2^15] for the retail ids), m evenly spaced levels i/(m+1), ε = 1 (pure DP,
add/remove-one-value neighbours).

Methods:
- ``dpsketch.quantiles`` with method "exp" (ε/m per level), "joint" (JointExp), "recursive" and
  "auto" (what the library picks); on the retail ids (integers with heavy ties) with
  ``integer=True``;
- dpsketch ``PrivateDyadicCountSketch`` (ε = 1, Laplace noise, the default even split over the
  levels, universe 2^16 over the bounds, γ = 1 %): the streaming sketch on the same data;
- OpenDP ``make_private_quantile`` (the exponential mechanism on a grid of 2^12 candidates over the
  bounds, pure DP via OpenDP's max-divergence privacy map at ε/m per level);
- Google's quantile tree via python-dp (``QuantileTree``, height 4, branching 16, Laplace, ε);
- Apache DataSketches KLL (k = 200) and REQ (k = 12, high-rank accuracy), non-private, for scale.

Metric: for each level the distance of the target rank q·n from [#values < x̂, #values ≤ x̂] of
the answer x̂ (``quantile_rank_distance``), averaged over the m levels and then over repeats; and
the wall time of one call answering all m levels (ingest included), median over repeats.

Peers are installed only for this script, in a separate environment
(``python3 -m venv --system-site-packages /work/venvs/quantpeers``, then
``/work/venvs/quantpeers/bin/pip install opendp python-dp datasketches``); a missing peer is
skipped and reported. Writes ``<out>/runs.csv``, ``summary.csv``, ``table.md``, ``run_info.json``.

    PYTHONPATH=python /work/venvs/quantpeers/bin/python bench/bench_quantiles_inmemory.py \
        --out docs/results/quick/quantiles-inmemory --quick
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

import dpsketch
from experiments import quantiles as Q
from experiments._common import derive_seed, write_csv

EPSILON = 1.0
KLL_K, REQ_K = 200, 12
OPENDP_CANDIDATES = 1 << 12


def _versions() -> dict:
    from importlib.metadata import version

    out = {"dpsketch": dpsketch.__version__}
    for mod, name in (("opendp", "opendp"), ("pydp", "python-dp"), ("datasketches", "datasketches")):
        try:
            __import__(mod)
            out[name] = version(name)
        except Exception as exc:  # noqa: BLE001 - report any import failure verbatim
            out[name] = f"not available: {type(exc).__name__}: {exc}"
    return out


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            return next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), "?")
    except OSError:
        return "?"


def _data(name: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    if name == "gaussian":
        return rng.normal(0.0, 5.0, n), (-100.0, 100.0)
    if name == "uniform":
        return rng.uniform(-5.0, 5.0, n), (-100.0, 100.0)
    ids = dpsketch.datasets.retail()
    return ids[rng.integers(0, len(ids), n)].astype(np.float64), (0.0, float(1 << 15))


# ------------------------------------------------------------------------------------ methods
def dpsketch_method(method):
    def run(x, bounds, qs, seed, integer):
        return dpsketch.quantiles(x, qs, bounds=bounds, epsilon=EPSILON, method=method, integer=integer,
                                  seed=seed).values()
    return run


def dyadic(x, bounds, qs, seed, integer):
    sk = dpsketch.PrivateDyadicCountSketch(16, bounds=bounds, epsilon=EPSILON, seed=seed)
    sk.update_many(x)
    return sk.quantiles(qs)


def opendp_em(x, bounds, qs, seed, integer):
    import opendp.prelude as dp

    dp.enable_features("contrib")
    cands = np.linspace(bounds[0], bounds[1], OPENDP_CANDIDATES).tolist()
    space = (dp.vector_domain(dp.atom_domain(T="f64", nan=False)), dp.symmetric_distance())
    eps_each = EPSILON / len(qs)  # basic composition over the m levels
    data = x.tolist()
    out = []
    for q in qs:
        def make(scale, q=q):
            return dp.m.make_private_quantile(*space, dp.max_divergence(), candidates=cands, alpha=float(q), scale=scale)
        scale = make(1.0).map(1) / eps_each  # ε ∝ 1/scale: solve from OpenDP's own map, then check it
        meas = make(scale)
        while meas.map(1) > eps_each:
            scale *= 1.0001
            meas = make(scale)
        out.append(meas(data))
    return np.sort(out)


def pydp_tree(x, bounds, qs, seed, integer):
    from pydp.algorithms.quantile_tree import QuantileTree

    tree = QuantileTree(bounds[0], bounds[1], 4, 16)
    for v in x.tolist():
        tree.add_entry(v)
    return tree.compute_quantiles(EPSILON, 0.0, 1, 1, list(qs), "laplace")


def kll(x, bounds, qs, seed, integer):
    from datasketches import kll_doubles_sketch

    sk = kll_doubles_sketch(KLL_K)
    sk.update(x)
    return sk.get_quantiles(qs)


def req(x, bounds, qs, seed, integer):
    from datasketches import req_floats_sketch

    sk = req_floats_sketch(REQ_K)
    sk.update(x.astype(np.float32))
    return [sk.get_quantile(float(q)) for q in qs]


METHODS = [
    ("dpsketch exp (ε/m per level)", "dpsketch", "ε=1", dpsketch_method("exp")),
    ("dpsketch joint (JointExp)", "dpsketch", "ε=1", dpsketch_method("joint")),
    ("dpsketch recursive", "dpsketch", "ε=1", dpsketch_method("recursive")),
    ("dpsketch auto", "dpsketch", "ε=1", dpsketch_method("auto")),
    ("dpsketch PrivateDyadicCountSketch (stream)", "dpsketch", "ε=1", dyadic),
    ("OpenDP make_private_quantile (ε/m per level)", "opendp", "ε=1", opendp_em),
    ("python-dp QuantileTree", "python-dp", "ε=1", pydp_tree),
    (f"DataSketches KLL k={KLL_K} (non-private)", "datasketches", "none", kll),
    (f"DataSketches REQ k={REQ_K} (non-private)", "datasketches", "none", req),
]


def _skip(method: str, n: int, m: int) -> bool:
    """JointExp costs O(m²·n); the per-level peers O(m·n) Python calls: bounded for a modest run."""
    if method.startswith("dpsketch joint"):
        return m * m * n > 2.5e8
    if method.startswith("OpenDP"):
        return m * n > 2e6
    return False


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="n = 1000 only, 10 repeats")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    ns = (1000,) if args.quick else (1000, 10_000, 100_000)
    ms = (1, 2, 4, 8, 16, 32, 64, 100)
    repeats = args.repeats or (10 if args.quick else 5)
    datasets = ("gaussian", "uniform", "retail")
    versions = _versions()
    for name, v in versions.items():
        print(f"{name}: {v}", file=sys.stderr)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    t_start = time.perf_counter()
    for ds in datasets:
        for n in ns:
            for rep in range(repeats):
                x, bounds = _data(ds, n, derive_seed(args.seed, "inmem-data", ds, n, rep))
                srt = np.sort(x)
                for m in ms:
                    qs = Q.levels(m)
                    for method, peer, privacy, fn in METHODS:
                        if versions[peer].startswith("not"):
                            continue
                        if _skip(method, n, m):
                            continue
                        t0 = time.perf_counter()
                        got = np.asarray(fn(x, bounds, qs, derive_seed(args.seed, "inmem", ds, n, rep, m, method),
                                            ds == "retail"), dtype=np.float64)
                        secs = time.perf_counter() - t0
                        err = float(np.mean(Q.quantile_rank_distance(srt, got, qs * n)))
                        rows.append({"dataset": ds, "n": n, "m": m, "repeat": rep, "method": method,
                                     "privacy": privacy, "rank_error": err, "seconds": secs})
                print(f"{ds} n={n} repeat {rep} ({time.perf_counter() - t_start:.0f} s)", file=sys.stderr)
            write_csv(out / "runs.csv", rows)
    summary = summarize(rows)
    write_csv(out / "summary.csv", summary)
    info = {"script": "bench/bench_quantiles_inmemory.py", "quick": args.quick, "repeats": repeats, "ns": list(ns),
            "ms": list(ms), "epsilon": EPSILON, "datasets": list(datasets), "seed": args.seed, "peers": versions,
            "python": platform.python_version(), "machine": f"{_cpu()}, {platform.machine()}, {os.cpu_count()} vCPU, "
            f"{platform.platform()}", "wall_seconds": round(time.perf_counter() - t_start, 1),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"),
            "note": "machine shared with other jobs; times are same-run comparisons (medians)"}
    (out / "run_info.json").write_text(json.dumps(info, indent=2) + "\n")
    (out / "table.md").write_text(markdown(summary, ms))
    print(f"wrote {out}", file=sys.stderr)
    return 0


def summarize(rows):
    keys = []
    for r in rows:
        k = (r["dataset"], r["n"], r["method"], r["privacy"], r["m"])
        if k not in keys:
            keys.append(k)
    out = []
    for ds, n, method, privacy, m in keys:
        sel = [r for r in rows if (r["dataset"], r["n"], r["method"], r["m"]) == (ds, n, method, m)]
        out.append({"dataset": ds, "n": n, "method": method, "privacy": privacy, "m": m, "runs": len(sel),
                    "rank_error_mean": float(np.mean([r["rank_error"] for r in sel])),
                    "seconds_median": float(np.median([r["seconds"] for r in sel]))})
    return out


def markdown(summary, ms) -> str:
    lines = []
    for ds in dict.fromkeys(r["dataset"] for r in summary):
        for n in sorted({int(r["n"]) for r in summary if r["dataset"] == ds}):
            rs = [r for r in summary if r["dataset"] == ds and int(r["n"]) == n]
            lines += [f"**{ds}, n = {n:,}** (mean rank error over levels and repeats; time of one call for all m "
                      f"levels, median)", "",
                      "| method | privacy | " + " | ".join(f"m={m}" for m in ms) + f" | seconds (m={ms[-1]}) |",
                      "|---|---|" + "---|" * len(ms) + "---|"]
            for method in dict.fromkeys(r["method"] for r in rs):
                sel = {int(r["m"]): r for r in rs if r["method"] == method}
                errs = " | ".join(f"{sel[m]['rank_error_mean']:.3g}" if m in sel else "-" for m in ms)
                last = sel[max(sel)]
                lines.append(f"| {method} | {last['privacy']} | {errs} | {last['seconds_median']:.3g}"
                             f"{'' if max(sel) == ms[-1] else f' (m={max(sel)})'} |")
            lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
