"""Is the C fast path of ``obj.update(x)`` (bindings/bind_fast.cpp) still needed? Times the
per-item ``update`` through it against the Python method it falls back to (the same function,
``type(obj).update.__wrapped__``), same run, interleaved rounds, median of per-round ratios.

    python bench/bench_fast_path.py [--rounds 9] [--n 200000]
"""

import argparse
import platform
import statistics
import time

import numpy as np

import dpsketch


def per_item_ns(cls, keys, fast: bool) -> float:
    s = cls(1024) if cls in (dpsketch.SpaceSaving, dpsketch.MisraGries) else cls(1024, 5)
    s.update(keys[0])  # fixes the key type: the fast path's precondition
    slow = type(s).update.__wrapped__
    t = time.perf_counter()
    if fast:
        update = s.update
        for k in keys:
            update(k)
    else:
        for k in keys:
            slow(s, k)
    return (time.perf_counter() - t) / len(keys) * 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--n", type=int, default=200_000)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    ints = [int(x) for x in rng.zipf(1.1, args.n) % 100_000]
    strs = [f"user:{x}" for x in ints]
    print(f"host: {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print("structure     keys  fast ns  Python ns  Python/fast")
    for cls in (dpsketch.SpaceSaving, dpsketch.MisraGries, dpsketch.CountMin):
        for name, keys in (("int", ints), ("str", strs)):
            fast, slow, ratio = [], [], []
            for _ in range(args.rounds):
                a, b = per_item_ns(cls, keys, True), per_item_ns(cls, keys, False)
                fast.append(a), slow.append(b), ratio.append(b / a)
            print(f"{cls.__name__:12s} {name:>4s} {statistics.median(fast):8.0f} {statistics.median(slow):10.0f}"
                  f" {statistics.median(ratio):11.1f}x")


if __name__ == "__main__":
    main()
