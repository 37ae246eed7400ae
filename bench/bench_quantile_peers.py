"""Private quantiles side by side with peer libraries, on the data of
``python -m experiments zhao-quantiles``: Zipf a = 1.0 over [1, 2^16) and the GCIDE tokens hashed to
32 bits (CAIDA stand-in), N = 10^5 per run.

Methods (all private ones at the same privacy: ρ-zCDP, add/remove-one-item neighbours):
- dpsketch ``PrivateDyadicCountSketch`` (joint noise allocation, γ = 1 %): one release answers
  every quantile; ``DyadicCountSketch`` (non-private) for reference.
- OpenDP ``make_private_quantile`` (exponential mechanism) with OpenDP's own zCDP output measure:
  m quantiles get ρ/m each (zCDP composes additively), candidates = a grid of 2^16 values over the
  universe (every value for 2^16, a step of 2^16 for 2^32). The EM's zCDP cost scales as
  1/scale² (ρ = (Δ/scale)²/8, with OpenDP's Δ depending on the quantile level): the scale is solved
  from OpenDP's own privacy map at scale 1 and the map is checked again (≤ ρ/m) before each use.
- Google's quantile tree via python-dp (``pydp.algorithms.quantile_tree.QuantileTree``) with
  Laplace noise at ε = √(2ρ): a pure ε-DP mechanism is (ε²/2)-zCDP, so it satisfies ρ-zCDP (the
  same guarantee as the others; conservative for the tree). Branching 16; height 4 on 2^16 (one
  leaf per value), height 7 on 2^32 (leaves of 16 values): height 8 (one leaf per value) did not
  return within 2 minutes even for 10^4 items (16^8 = 2^32 leaves). One release per m answers the
  m quantiles; returned values are floored to integers.
- Apache DataSketches KLL (``kll_doubles_sketch``, k = 200) and REQ (``req_floats_sketch``,
  k = 12, high-rank accuracy), non-private, for reference.

The in-memory mechanisms of ``dpsketch.quantiles`` (pure ε-DP) are compared at dp_multiq's settings
by the sibling script bench/bench_quantiles_inmemory.py.

Metric: for q_i = i/(m+1), the rank distance of the returned value x̂ from the target q_i·N (0 when
q_i·N lies in [#items < x̂, #items ≤ x̂]), averaged over i (``quantile_error`` of
experiments/quantiles.py). Also: ingest time per item, query time, memory.

Peers are installed only for this script (``pip install opendp python-dp datasketches``); a peer
that is not importable is skipped and reported. Writes ``<out>/peers.csv`` (one row per run),
``summary.csv``, ``peers.md`` and ``run_info.json``. The machine is shared: times are same-run
comparisons, not absolute speeds.

    python bench/bench_quantile_peers.py --out docs/results/quick/quantile-peers [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

import dpsketch
from experiments import quantiles as Q
from experiments import realdata
from experiments._common import derive_seed, read_csv, summary_rows, write_csv

GAMMA = 0.01
KLL_K = 200
REQ_K = 12
N = 100_000


def _peer_versions() -> dict:
    out = {}
    from importlib.metadata import version

    for mod, name in (("opendp", "opendp"), ("pydp", "python-dp"), ("datasketches", "datasketches")):
        try:
            __import__(mod)
            out[name] = version(name)
        except Exception as exc:  # noqa: BLE001 - report any import failure verbatim
            out[name] = f"not available: {type(exc).__name__}: {exc}"
    return out


# ------------------------------------------------------------------------------------- methods
def run_dcs(stream, bits, rho, seed, ms):
    sk = (dpsketch.DyadicCountSketch(bits, gamma=GAMMA, seed=seed) if rho is None else
          dpsketch.PrivateDyadicCountSketch(bits, gamma=GAMMA, rho=rho, seed=seed))
    t0 = time.perf_counter()
    sk.update_many(stream)
    ingest = time.perf_counter() - t0
    res = {}
    for m in ms:
        t0 = time.perf_counter()
        got = np.asarray(sk.quantiles(Q.levels(m))).astype(np.int64)
        res[m] = (got, time.perf_counter() - t0)
    return ingest, sk.memory_bytes(), res


def run_kll(stream, ms):
    from datasketches import kll_doubles_sketch

    sk = kll_doubles_sketch(KLL_K)
    t0 = time.perf_counter()
    sk.update(stream.astype(np.float64))
    ingest = time.perf_counter() - t0
    res = {}
    for m in ms:
        t0 = time.perf_counter()
        got = np.asarray(sk.get_quantiles(Q.levels(m)), dtype=np.float64).astype(np.int64)
        res[m] = (got, time.perf_counter() - t0)
    return ingest, len(sk.serialize()), res


def run_req(stream, ms):
    from datasketches import req_floats_sketch

    sk = req_floats_sketch(REQ_K)
    t0 = time.perf_counter()
    sk.update(stream.astype(np.float32))  # float32 holds every integer below 2^24 exactly, not 2^32
    ingest = time.perf_counter() - t0
    res = {}
    for m in ms:
        t0 = time.perf_counter()
        got = np.asarray([sk.get_quantile(float(q)) for q in Q.levels(m)], dtype=np.float64).astype(np.int64)
        res[m] = (got, time.perf_counter() - t0)
    return ingest, len(sk.serialize()), res


def run_pydp(stream, bits, rho, ms):
    from pydp.algorithms.quantile_tree import QuantileTree

    # Branching 16: height 4 gives one leaf per value on 2^16; on 2^32 height 8 would, but python-dp
    # does not return with 16^8 leaves, so height 7 (leaves of 16 values).
    height = 4 if bits <= 16 else 7
    tree = QuantileTree(0.0, float(2**bits), height, 16)
    t0 = time.perf_counter()
    # The tree's leaf holding the point v is (v - 1, v], and it interpolates inside the leaf: fed
    # an integer v it returns values in [v - 1, v). Feeding v + 0.5, the middle of v's unit bucket,
    # puts v in [v, v + 1), so flooring the answer recovers v.
    for v in stream.tolist():
        tree.add_entry(float(v) + 0.5)
    ingest = time.perf_counter() - t0
    eps = math.sqrt(2 * rho)  # ε-DP ⇒ (ε²/2)-zCDP
    res = {}
    for m in ms:
        t0 = time.perf_counter()
        got = tree.compute_quantiles(eps, 0.0, 1, 1, list(Q.levels(m)), "laplace")
        res[m] = (np.floor(np.asarray(got, dtype=np.float64)).astype(np.int64), time.perf_counter() - t0)
    return ingest, int(tree.memory_used), res, eps


def run_opendp(stream, bits, rho, ms):
    import opendp.prelude as dp

    dp.enable_features("contrib")
    step = max(1, 2**bits >> 16)
    cands = list(range(0, 2**bits, step))
    space = (dp.vector_domain(dp.atom_domain(T="i64")), dp.symmetric_distance())
    data = stream.tolist()
    res = {}
    for m in ms:
        rho_each = rho / m  # zCDP composes additively over the m quantiles
        t0 = time.perf_counter()
        got = []
        for q in Q.levels(m):
            def make(scale, q=q):
                return dp.m.make_private_quantile(*space, dp.zero_concentrated_divergence(), candidates=cands,
                                                  alpha=float(q), scale=scale)
            # The EM's zCDP cost is (Δ/scale)²/8, with OpenDP's Δ depending on α: read it from
            # OpenDP's own privacy map at scale 1, solve for the scale, and check the map again.
            scale = math.sqrt(make(1.0).map(1) / rho_each)
            meas = make(scale)
            while meas.map(1) > rho_each:
                scale *= 1.0001
                meas = make(scale)
            got.append(meas(data))
        res[m] = (np.asarray(got, dtype=np.int64), time.perf_counter() - t0)
    # Not a streaming summary: the mechanism needs the whole data set (8 bytes per item as int64).
    return 0.0, 8 * len(stream), res


# ----------------------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="1 repeat, ρ = 1, m ∈ {1, 10}")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=None, help="folder holding gcide_words.txt.gz")
    ap.add_argument("--resume", action="store_true",
                    help="keep the complete (data set, repeat) runs of an existing peers.csv in --out")
    ap.add_argument("--redo", choices=("python-dp", "DataSketches"),
                    help="rerun only this peer on every stream, keeping the other rows of peers.csv")
    args = ap.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    rhos = (1.0,) if args.quick else (0.1, 1.0, 10.0)
    # OpenDP's EM takes ~1 s per quantile on this machine (it scores the whole data set), which
    # bounds m: the full run stops at m = 50.
    ms = (1, 10) if args.quick else (1, 10, 50)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    versions = _peer_versions()
    for name, v in versions.items():
        print(f"{name}: {v}", file=sys.stderr)

    streams = []
    for rep in range(repeats):
        s = dpsketch.datasets.zipf(N, 1.0, universe=(1 << 16) - 1, seed=derive_seed(args.seed, "zipf-q", rep), offset=1)
        streams.append(("zipf1.0", 16, rep, s))
    real = realdata.gcide_hashed32(N * repeats, args.data)
    if real is None:
        print("gcide_words.txt.gz not found: the real stream is skipped", file=sys.stderr)
    else:
        for rep in range(repeats):
            streams.append((Q.REAL_DATASET, 32, rep, real[rep * N:(rep + 1) * N]))

    rows = []
    done = set()
    if args.redo:
        # the redone method's rows of the data sets this invocation has; every other row is kept
        present = {s[0] for s in streams}
        rows = [r for r in read_csv(out / "peers.csv")
                if not (r["method"].startswith(args.redo) and r["dataset"] in present)]
        print(f"redo {args.redo}: kept {len(rows)} rows of the other methods", file=sys.stderr)
    elif args.resume and (out / "peers.csv").exists():
        old = read_csv(out / "peers.csv")
        n_private = sum(not versions[p].startswith("not") for p in ("python-dp", "opendp")) + 1
        has_ds = not versions["datasketches"].startswith("not")
        for ds, bits, rep, _ in streams:
            expected = len(ms) * (1 + has_ds * (1 + (bits <= 24)) + n_private * len(rhos))
            sel = [r for r in old if r["dataset"] == ds and int(r["repeat"]) == rep]
            if len(sel) == expected:
                rows += sel
                done.add((ds, rep))
        print(f"resuming: kept {len(rows)} rows of {sorted(done)}", file=sys.stderr)
    t_start = time.perf_counter()

    def record(ds, bits, rep, method, rho, privacy, ingest, memory, res, srt, streaming, mergeable):
        for m, (got, q_s) in res.items():
            qs = Q.levels(m)
            err = float(np.mean(Q.quantile_rank_distance(srt, got, qs * len(srt))))
            rows.append({"dataset": ds, "universe_bits": bits, "repeat": rep, "method": method,
                         "rho": math.nan if rho is None else rho, "privacy": privacy, "sweep": "m", "x": m,
                         "quantile_error": err, "ingest_us_per_item": ingest / len(srt) * 1e6,
                         "query_ms": q_s * 1e3, "memory_bytes": memory, "streaming": streaming,
                         "mergeable": mergeable})

    for ds, bits, rep, stream in streams:
        if (ds, rep) in done:
            continue
        srt = np.sort(stream)
        print(f"{ds} repeat {rep}", file=sys.stderr)
        if args.redo == "DataSketches":
            ing, mem, res = run_kll(stream, ms)
            record(ds, bits, rep, f"DataSketches KLL k={KLL_K} (non-private)", None, "none", ing, mem, res, srt, "yes", "yes")
            if bits <= 24:
                ing, mem, res = run_req(stream, ms)
                record(ds, bits, rep, f"DataSketches REQ k={REQ_K} (non-private)", None, "none", ing, mem, res, srt,
                       "yes", "yes")
            continue
        if args.redo:
            for rho in rhos:
                ing, mem, res, eps = run_pydp(stream, bits, rho, ms)
                record(ds, bits, rep, "python-dp QuantileTree (Laplace)", rho, f"ε={eps:.3g}-DP ⇒ {rho:g}-zCDP",
                       ing, mem, res, srt, "yes", "yes (serialize/merge)")
            continue
        ing, mem, res = run_dcs(stream, bits, None, derive_seed(args.seed, "peers", ds, rep, "dcs"), ms)
        record(ds, bits, rep, "dpsketch DCS (non-private)", None, "none", ing, mem, res, srt, "yes", "yes")
        if not versions["datasketches"].startswith("not"):
            ing, mem, res = run_kll(stream, ms)
            record(ds, bits, rep, f"DataSketches KLL k={KLL_K} (non-private)", None, "none", ing, mem, res, srt, "yes", "yes")
            if bits <= 24:  # REQ's sketch holds float32 values
                ing, mem, res = run_req(stream, ms)
                record(ds, bits, rep, f"DataSketches REQ k={REQ_K} (non-private)", None, "none", ing, mem, res, srt,
                       "yes", "yes")
        for rho in rhos:
            ing, mem, res = run_dcs(stream, bits, rho, derive_seed(args.seed, "peers", ds, rep, "pdcs", rho), ms)
            record(ds, bits, rep, "dpsketch PrivateDCS (joint)", rho, f"{rho:g}-zCDP", ing, mem, res, srt,
                   "yes", "yes (before release; docs/algorithms.md §8)")
            if not versions["python-dp"].startswith("not"):
                ing, mem, res, eps = run_pydp(stream, bits, rho, ms)
                record(ds, bits, rep, "python-dp QuantileTree (Laplace)", rho, f"ε={eps:.3g}-DP ⇒ {rho:g}-zCDP",
                       ing, mem, res, srt, "yes", "yes (serialize/merge)")
            if not versions["opendp"].startswith("not"):
                ing, mem, res = run_opendp(stream, bits, rho, ms)
                record(ds, bits, rep, "OpenDP make_private_quantile (EM)", rho, f"{rho:g}-zCDP (ρ/m per quantile)",
                       ing, mem, res, srt, "no (needs the data set)", "no")
            write_csv(out / "peers.csv", rows)

    write_csv(out / "peers.csv", rows)
    metrics = ["quantile_error", "ingest_us_per_item", "query_ms", "memory_bytes"]
    summary = summary_rows(rows, ["dataset", "method", "rho", "privacy", "x", "streaming", "mergeable"], metrics)
    write_csv(out / "summary.csv", summary)
    info = {"script": "bench/bench_quantile_peers.py", "quick": args.quick, "repeats": repeats, "rhos": list(rhos),
            "ms": list(ms), "n": N, "gamma": GAMMA, "kll_k": KLL_K, "seed": args.seed, "peers": versions,
            "datasets": sorted({s[0] for s in streams}), "python": platform.python_version(),
            "wall_seconds": round(time.perf_counter() - t_start, 1),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"), "resumed_runs": sorted(map(list, done)), "redone": args.redo,
            "note": "machine shared with other jobs; times are same-run comparisons"}
    if (args.resume or args.redo) and (out / "run_info.json").exists():
        info["previous_invocation"] = json.loads((out / "run_info.json").read_text())
    (out / "run_info.json").write_text(json.dumps(info, indent=2) + "\n")
    (out / "peers.md").write_text(markdown(read_csv(out / "summary.csv")))
    print(f"wrote {out}", file=sys.stderr)
    return 0


def markdown(summary) -> str:
    """One table per data set: average rank error per m (mean over repeats) and costs per method."""
    lines = []
    for ds in sorted({r["dataset"] for r in summary}, key=lambda d: not str(d).startswith("zipf")):
        rs = [r for r in summary if r["dataset"] == ds]
        ms = sorted({int(r["x"]) for r in rs})
        lines += [f"**{ds}** (N = {N:,}; mean average rank error over repeats, target-rank distance; γ·N = {GAMMA * N:g})", "",
                  "| method | privacy | " + " | ".join(f"m={m}" for m in ms) +
                  " | ingest µs/item | query ms (m=max) | memory bytes | streaming | mergeable |",
                  "|---|---|" + "---|" * len(ms) + "---|---|---|---|---|"]
        def rho_key(r):
            v = r["rho"]
            return -1.0 if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)

        keys = []
        for r in rs:
            k = (r["method"], rho_key(r), r["privacy"])
            if k not in keys:
                keys.append(k)
        keys.sort(key=lambda k: (k[1], k[0]))
        for method, rho, priv in keys:
            sel = {int(r["x"]): r for r in rs if r["method"] == method and rho_key(r) == rho}
            last = sel[ms[-1]]
            errs = " | ".join(f"{sel[m]['quantile_error_mean']:.3g}" for m in ms)
            ingest = last["ingest_us_per_item_mean"]
            lines.append(f"| {method} | {priv} | {errs} | {'-' if ingest == 0 else f'{ingest:.3g}'} | "
                         f"{last['query_ms_mean']:.3g} | {last['memory_bytes_mean']:,.0f} | {last['streaming']} | {last['mergeable']} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
