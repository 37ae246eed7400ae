#!/usr/bin/env python3
"""Python throughput of dpsketch's update_many against peers, in one run, as a markdown table.

Stream: dpsketch.datasets.zipf(n, 1.1, 100_000) as an int64 array, and the same ids as a list of
str ("user:<id>"). Peers, timed on the same stream in the same run:
  * numpy.unique(..., return_counts=True)  -- exact, batch
  * collections.Counter                    -- exact, batch (C loop over a list)
  * Apache DataSketches (`datasketches`):  frequent_items_sketch / frequent_strings_sketch and
    count_min_sketch, one update() call per item (the API has no batch update).
Accuracy is made comparable: the DataSketches frequent-items sketch gets the smallest lg_max_k
whose a-priori error bound is <= 1/k (the SpaceSaving / Misra-Gries bound n/k), and the Count-Min
sketches get the same shape (d rows x w buckets). The table also shows the measured maximum
absolute error over the 100 most frequent items, as a fraction of n.

    python bench/bench_python.py            # n = 2,000,000 (peers' per-item loops on 500,000)
    python bench/bench_python.py --quick    # n = 200,000 (peers on 100,000), a few seconds
    python bench/bench_python.py -n 10000000 --peer-n 200000   # the core issue's speed check
    python bench/bench_python.py --vs-unique -n 10000000 --reps 7   # update_many vs numpy.unique only

--vs-unique times only the int64 rows (SpaceSaving, MisraGries, CountMin update_many and
numpy.unique(return_counts=True)) in interleaved rounds (one run of each per round), so load from
other jobs hits every contender alike; it prints per-contender medians and the median over rounds
of each round's numpy.unique time / contender time.

The "numpy.unique time / this" column is the same-run speed-up over numpy.unique on the same keys
(int64 array for the int rows, numpy str array for the str rows).
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import platform
import statistics
import time

import numpy as np

import dpsketch
from dpsketch.datasets import zipf


def timed(fn, reps: int) -> float:
    """Median seconds of fn() over reps runs (fn builds its own fresh structure)."""
    ts = []
    for _ in range(reps):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def max_err_top(est, true_keys, true_counts, n: int) -> float:
    return max(abs(float(est(k)) - float(c)) for k, c in zip(true_keys, true_counts)) / n


def cpu_name() -> str:
    return next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())


def vs_unique(n: int, reps: int, k: int, w: int, d: int) -> None:
    """Interleaved rounds: each round runs every contender once on the same int64 array."""
    ints = zipf(n, 1.1, 100_000, seed=11)
    contenders = {
        "numpy.unique(return_counts=True)": lambda: np.unique(ints, return_counts=True),
        f"SpaceSaving({k}).update_many": lambda: dpsketch.SpaceSaving(k).update_many(ints),
        f"MisraGries({k}).update_many": lambda: dpsketch.MisraGries(k).update_many(ints),
        f"CountMin({w}x{d}).update_many": lambda: dpsketch.CountMin(w, d, seed=7).update_many(ints),
    }
    for fn in contenders.values():  # warm-up (page faults, first-call costs)
        fn()
    times = {name: [] for name in contenders}
    for _ in range(reps):
        for name, fn in contenders.items():
            gc.collect()
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    uniq = times["numpy.unique(return_counts=True)"]
    print(f"Zipf(1.1) int64 over 10^5 keys, n = {n:,}; {reps} interleaved rounds; {cpu_name()}, "
          f"{os.cpu_count()} cpus; Python {platform.python_version()}, numpy {np.__version__}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print()
    print("| contender | median ns/item | min-max ns/item | numpy.unique time / this (median of rounds) |")
    print("|---|---:|---:|---:|")
    for name, ts in times.items():
        ns = [t * 1e9 / n for t in ts]
        ratio = statistics.median(u / t for u, t in zip(uniq, ts))
        print(f"| {name} | {statistics.median(ns):.1f} | {min(ns):.1f}-{max(ns):.1f} | {ratio:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("-n", type=int, default=None, help="stream length for the batch paths")
    ap.add_argument("--peer-n", type=int, default=None, help="stream prefix length for per-item peer loops")
    ap.add_argument("-k", type=int, default=256, help="counters (SpaceSaving / Misra-Gries)")
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--depth", type=int, default=5)
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--vs-unique", action="store_true", help="only the interleaved int64 comparison with numpy.unique")
    args = ap.parse_args()
    if args.vs_unique:
        vs_unique(args.n or 10_000_000, args.reps or 7, args.k, args.width, args.depth)
        return
    n = args.n or (200_000 if args.quick else 2_000_000)
    peer_n = min(n, args.peer_n or (100_000 if args.quick else 500_000))
    reps = args.reps or (3 if args.quick else 5)
    k, w, d = args.k, args.width, args.depth

    ints = zipf(n, 1.1, 100_000, seed=11)
    int_list = ints.tolist()
    strs = [f"user:{i}" for i in int_list]
    str_arr = np.array(strs)
    uniq, cnt = np.unique(ints, return_counts=True)
    order = np.argsort(-cnt)[:100]
    top_int, top_cnt = uniq[order].tolist(), cnt[order].tolist()
    top_str = [f"user:{i}" for i in top_int]

    try:
        import datasketches as ds
    except ImportError:
        ds = None

    rows = []  # (name, keys, items, seconds, error)

    def add(name, keys, items, fn, make_est=None, top=None):
        secs = timed(fn, reps if items == n else max(1, reps - 2))
        err = f"{max_err_top(make_est(), top, top_cnt, n):.5f}" if make_est is not None and items == n else ""
        rows.append((name, keys, items, secs, err))

    # ---- dpsketch batch paths --------------------------------------------------------------------
    def dp(cls, *a, **kw):
        def run(data):
            s = cls(*a, **kw)
            s.update_many(data)
            return s
        return run

    for label, cls, ctor in [
        (f"dpsketch SpaceSaving(k={k})", dpsketch.SpaceSaving, (k,)),
        (f"dpsketch MisraGries(k={k})", dpsketch.MisraGries, (k,)),
        (f"dpsketch CountMin({w}x{d})", dpsketch.CountMin, (w, d)),
        (f"dpsketch CountSketch({w}x{d})", dpsketch.CountSketch, (w, d)),
    ]:
        kw = {"seed": 7} if cls in (dpsketch.CountMin, dpsketch.CountSketch) else {}
        run = dp(cls, *ctor, **kw)
        add(label, "int64 array", n, lambda: run(ints), lambda: run(ints).estimate, top_int)
        add(label, "list of str", n, lambda: run(strs), lambda: run(strs).estimate, top_str)

    # ---- exact batch peers -----------------------------------------------------------------------
    add("numpy.unique(return_counts)", "int64 array", n, lambda: np.unique(ints, return_counts=True))
    add("numpy.unique(return_counts)", "str array", n, lambda: np.unique(str_arr, return_counts=True))
    add("collections.Counter", "list of int", n, lambda: collections.Counter(int_list))
    add("collections.Counter", "list of str", n, lambda: collections.Counter(strs))

    # ---- DataSketches, per-item (its Python API has no batch update) -----------------------------
    ds_lg = None
    if ds is not None:
        ds_lg = next(lg for lg in range(3, 30) if ds.frequent_items_sketch.get_epsilon_for_lg_size(lg) <= 1.0 / k)
        pi, ps = int_list[:peer_n], strs[:peer_n]

        def fi_int():
            s = ds.frequent_items_sketch(ds_lg)
            for x in pi:
                s.update(x)
            return s

        def fs_str():
            s = ds.frequent_strings_sketch(ds_lg)
            for x in ps:
                s.update(x)
            return s

        def cm_int():
            s = ds.count_min_sketch(d, w, 7)
            for x in pi:
                s.update(x)
            return s

        def cm_str():
            s = ds.count_min_sketch(d, w, 7)
            for x in ps:
                s.update(x)
            return s

        add(f"datasketches frequent_items(lg_max_k={ds_lg})", "list of int, per item", peer_n, fi_int)
        add(f"datasketches frequent_strings(lg_max_k={ds_lg})", "list of str, per item", peer_n, fs_str)
        add(f"datasketches count_min({w}x{d})", "list of int, per item", peer_n, cm_int)
        add(f"datasketches count_min({w}x{d})", "list of str, per item", peer_n, cm_str)

        # Accuracy on the full stream, comparable with the dpsketch rows (untimed).
        def full(make, data):
            s = make()
            for x in data:
                s.update(x)
            return s

        errs = {}
        fi = full(lambda: ds.frequent_items_sketch(ds_lg), int_list)
        errs[("frequent_items", "int")] = max_err_top(fi.get_estimate, top_int, top_cnt, n)
        fsk = full(lambda: ds.frequent_strings_sketch(ds_lg), strs)
        errs[("frequent_strings", "str")] = max_err_top(fsk.get_estimate, top_str, top_cnt, n)
        cmi = full(lambda: ds.count_min_sketch(d, w, 7), int_list)
        errs[("count_min", "int")] = max_err_top(cmi.get_estimate, top_int, top_cnt, n)
        cms = full(lambda: ds.count_min_sketch(d, w, 7), strs)
        errs[("count_min", "str")] = max_err_top(cms.get_estimate, top_str, top_cnt, n)
        fixed = []
        for name, keys, items, secs, err in rows:
            if name.startswith("datasketches"):
                fam = name.split()[1].split("(")[0]
                kt = "str" if "str" in keys else "int"
                err = f"{errs[(fam, kt)]:.5f}"
            fixed.append((name, keys, items, secs, err))
        rows = fixed

    # ---- table ----------------------------------------------------------------------------------
    per_item = {(r[0], r[1]): r[3] * 1e9 / r[2] for r in rows}
    ref_int = per_item[(f"dpsketch SpaceSaving(k={k})", "int64 array")]
    ref_str = per_item[(f"dpsketch SpaceSaving(k={k})", "list of str")]
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
    print(f"Zipf(1.1) over 10^5 keys; n = {n:,} (per-item peer loops: {peer_n:,}); median of {reps} runs; "
          f"{cpu}, {os.cpu_count()} cpus; Python {platform.python_version()}, numpy {np.__version__}"
          + (f", datasketches {ds.__version__ if hasattr(ds, '__version__') else ''}" if ds else ", datasketches not installed"))
    print()
    uniq_int = per_item[("numpy.unique(return_counts)", "int64 array")]
    uniq_str = per_item[("numpy.unique(return_counts)", "str array")]
    print("| structure | keys | ns/item | Mitems/s | x SpaceSaving (same keys) | numpy.unique time / this | max err top-100 / n |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, keys, items, secs, err in rows:
        ns = secs * 1e9 / items
        ref = ref_str if "str" in keys else ref_int
        speedup = (uniq_str if "str" in keys else uniq_int) / ns
        print(f"| {name} | {keys} | {ns:.1f} | {1e3 / ns:.1f} | {ns / ref:.2f} | {speedup:.2f} | {err or '-'} |")
    if ds is not None:
        print()
        print(f"DataSketches frequent items: lg_max_k = {ds_lg} (a-priori error "
              f"{ds.frequent_items_sketch.get_epsilon_for_lg_size(ds_lg):.5f} <= 1/k = {1 / k:.5f}).")


if __name__ == "__main__":
    main()
