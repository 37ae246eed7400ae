#!/usr/bin/env python3
"""Dyadic CountSketch speed against its targets (docs/benchmarks.md), as a markdown table, all in one run:

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


def median_time(fn, reps, clock=time.perf_counter):
    ts = []
    for _ in range(reps):
        gc.collect()
        t0 = clock()
        fn()
        ts.append(clock() - t0)
    return statistics.median(ts)


def both_times(fn, reps):
    """(median wall seconds, median CPU seconds of this process) -- on a shared machine the CPU time
    is the steadier figure; both are reported."""
    walls, cpus = [], []
    for _ in range(reps):
        gc.collect()
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus)


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
    print("| case | shape (d x w, exact levels) | dpsketch ns/item wall (cpu) | numpy ns/item wall (cpu) | "
          "speed-up wall (cpu) |")
    print("|---|---|---|---|---|")
    for bits in (32, 16):
        for dist in ("uniform", "zipf"):
            x = rng.integers(0, 2**bits, n, dtype=np.uint64) if dist == "uniform" else zipf_items(rng, n, bits)
            probe = dpsketch.DyadicCountSketch(bits, gamma=0.01, seed=7)
            w, d, seed = probe.width, probe.depth, probe.hash_seed

            def run_dp():
                s = dpsketch.DyadicCountSketch(bits, gamma=0.01, seed=7)
                s.update_many(x)

            def run_np():
                NumpyDyadic(bits, w, d, seed).update_many(x)

            w_dp, c_dp = both_times(run_dp, args.reps)
            w_np, c_np = both_times(run_np, max(1, args.reps // 2))
            print(f"| update_many L={bits} {dist} | {d} x {w}, {probe.exact_levels} | {w_dp / n * 1e9:.1f} "
                  f"({c_dp / n * 1e9:.1f}) | {w_np / n * 1e9:.1f} ({c_np / n * 1e9:.1f}) | "
                  f"{w_np / w_dp:.1f}x ({c_np / c_dp:.1f}x) |")
    p = dpsketch.PrivateDyadicCountSketch(32, gamma=0.01, rho=1.0, seed=3)
    p.update_many(rng.integers(0, 2**32, 100_000, dtype=np.uint64))
    rel = p.release().sketch
    qs = np.linspace(0.05, 0.95, 10)
    reps = 2000
    w, c = both_times(lambda: [rel.quantiles(qs) for _ in range(reps)], 5)
    w1, c1 = both_times(lambda: [rel._impl.quantiles(qs * 1e5) for _ in range(reps)], 5)
    print(f"\n10-quantile query on the released L=32 object: {w / reps * 1e6:.1f} µs wall ({c / reps * 1e6:.1f} µs "
          f"cpu) through the Python API; {w1 / reps * 1e6:.1f} µs wall ({c1 / reps * 1e6:.1f} µs cpu) in the "
          "native call (10 descents x 32 levels, 19 of them 9-row medians)")
    print(f"load average after the run: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
