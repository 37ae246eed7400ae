#!/usr/bin/env python3
"""Dyadic CountSketch speed (issue 9 targets), as a markdown table, all in one run:

  * update_many ns/item at L = 32 and L = 16 (γ = 1 %, Zhao's shape), uniform and Zipf items;
  * the same hierarchy in vectorised numpy (tests/dyadic_reference.py: per level a shift, per row a
    multiply-add-shift hash and a bincount) on the same items, and the same-run speed-up;
  * a 10-quantile query (quantiles of 10 levels) on a released PrivateDyadicCountSketch, µs.

Medians over --reps runs. The machine may be shared: compare the same-run ratios, not absolute
times across runs.

    python bench/bench_dyadic.py            # n = 2,000,000
    python bench/bench_dyadic.py --quick    # n = 200,000
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import dpsketch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from dyadic_reference import NumpyDyadic  # noqa: E402


def median_time(fn, reps):
    ts = []
    for _ in range(reps):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def zipf_items(rng, n, bits):
    ranks = rng.zipf(1.1, n).astype(np.uint64) % np.uint64(2**bits)
    return (ranks * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits) if bits < 64 else ranks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=2_000_000)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    n = 200_000 if args.quick else args.n
    rng = np.random.default_rng(1)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
          f"load average {os.getloadavg()[0]:.1f} (shared machine: compare same-run ratios)")
    print(f"n = {n:,}, median of {args.reps} runs\n")
    print("| case | shape (d x w, exact levels) | dpsketch ns/item | numpy ns/item | speed-up |")
    print("|---|---|---|---|---|")
    for bits in (32, 16):
        for dist in ("uniform", "zipf"):
            x = rng.integers(0, 2**bits, n, dtype=np.uint64) if dist == "uniform" else zipf_items(rng, n, bits)
            probe = dpsketch.DyadicCountSketch(bits, gamma=0.01, seed=7)
            w, d, seed = probe.width, probe.depth, probe.seed

            def run_dp():
                s = dpsketch.DyadicCountSketch(bits, gamma=0.01, seed=7)
                s.update_many(x)

            def run_np():
                NumpyDyadic(bits, w, d, seed).update_many(x)

            t_dp = median_time(run_dp, args.reps)
            t_np = median_time(run_np, max(1, args.reps // 2))
            print(f"| update_many L={bits} {dist} | {d} x {w}, {probe.exact_levels} | {t_dp / n * 1e9:.1f} | "
                  f"{t_np / n * 1e9:.1f} | {t_np / t_dp:.1f}x |")
    p = dpsketch.PrivateDyadicCountSketch(32, gamma=0.01, rho=1.0, seed=3)
    p.update_many(rng.integers(0, 2**32, 100_000, dtype=np.uint64))
    rel = p.release()
    qs = np.linspace(0.05, 0.95, 10)
    reps = 2000
    t = median_time(lambda: [rel.quantiles(qs) for _ in range(reps)], 5) / reps
    t1 = median_time(lambda: [rel._impl.quantiles(qs * 1e5) for _ in range(reps)], 5) / reps
    print(f"\n10-quantile query on the released L=32 object: {t * 1e6:.1f} µs through the Python API "
          f"({t1 * 1e6:.1f} µs in the native call: 10 descents x 32 levels, 19 of them 9-row medians)")


if __name__ == "__main__":
    main()
