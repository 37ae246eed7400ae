"""Correlated-noise cumulative releases (docs/mechanisms/cumulative-correlated.md): the worst prefix
variance table (sqrt, banded-p, binary, smooth) and the measured state of a 5 × 4096 CountSketch
series at T = 8760.

    PYTHONPATH=python python bench/bench_correlated.py [--steps N]

The state stops growing after p steps (the encoder and decoder keep p − 1 steps each), so the run
feeds p + 2 steps of a T = 8760 series and reads ``memory_bytes()``; ``--steps`` feeds more.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpsketch import Cumulative
from dpsketch.mechanisms.correlated import worst_variance_factor
from dpsketch.time.cumulative import schedule_for


def table(horizons=(24, 168, 720, 8760), bands=(16, 64, 256, 1024)) -> None:
    print("T | sqrt | " + " | ".join(f"banded p={p}" for p in bands) + " | smooth | binary")
    for T in horizons:
        row = [f"{worst_variance_factor('sqrt', T):.2f}"]
        row += [f"{worst_variance_factor('banded', T, p):.2f}" if p < T else "= sqrt" for p in bands]
        row += [str(schedule_for(s, T).worst_variance_factor) for s in ("smooth", "binary")]
        print(f"{T} | " + " | ".join(row))


def memory(T=8760, width=4096, depth=5, bands=(16, 64, 256), steps=None) -> None:
    rng = np.random.default_rng(0)
    for p in bands:
        c = Cumulative(horizon=T, sketch="countsketch", width=width, depth=depth, rho=0.5, schedule="banded",
                       bands=p, keep=1, seed=1)
        n = steps or p + 2
        t0 = time.perf_counter()
        for _ in range(n):
            c.step(rng.integers(0, 10**6, size=10_000))
        dt = (time.perf_counter() - t0) / n
        sketch_bytes = width * depth * 8
        print(f"banded p={p}: state {c.memory_bytes() / 2**20:.1f} MiB = {c.memory_bytes() / sketch_bytes:.0f} "
              f"sketches of {sketch_bytes / 2**10:.0f} KiB after {n} steps; {dt * 1e3:.1f} ms per step")
    print(f"sqrt (p = T = {T}): state 2·(T − 1) + 2 = {2 * T} sketches = {2 * T * width * depth * 8 / 2**30:.2f} GiB "
          "(by the same count; not run)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=None)
    a = ap.parse_args()
    table()
    memory(steps=a.steps)
