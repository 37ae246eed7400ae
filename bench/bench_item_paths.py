#!/usr/bin/env python3
"""Per-item dyadic updates and str-list batches against their same-run baselines (docs/benchmarks.md).

  * ``dyadic``: DyadicCountSketch(32, gamma=0.01).update(x) per item through the public method
    against the native call ``_impl.update(bucket, 1)`` on the same items (int items; float values
    with bounds, the native call given their precomputed buckets), and the private sketch likewise;
    Zipf(1.1) over 10^5 keys, interleaved rounds, medians.
  * ``strlist``: SpaceSaving(256) / CountMin(2048, 5) update_many of a list of "user:<id>" str,
    of the same keys as a polars String Series (when polars is installed) and as a pyarrow
    large_string array, against the same keys as a pyarrow string array (interleaved rounds,
    medians); the list also against ``pyarrow.compute.value_counts`` of the same list and of the
    pyarrow string array; and the peak
    resident memory each batch adds, measured in a fresh process (VmHWM reset first).

    python bench/bench_item_paths.py dyadic [--items 65536] [--rounds 9]
    python bench/bench_item_paths.py strlist [--items 2000000] [--mem-items 10000000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import dpsketch


def zipf_ids(n: int, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, 100_001) ** 1.1
    cdf = np.cumsum(p / p.sum())
    return np.minimum(np.searchsorted(cdf, rng.random(n)), 99_999)


def timed(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def dyadic(args) -> None:
    ids = zipf_ids(args.items)
    ints, floats = ids.tolist(), ids.astype(np.float64).tolist()
    bounds = (0.0, 1e5)
    cases = {}
    for name, private in (("", False), ("private ", True)):
        make = (lambda b=None: dpsketch.PrivateDyadicCountSketch(32, gamma=0.01, rho=1.0, seed=3, bounds=b)) if private \
            else (lambda b=None: dpsketch.DyadicCountSketch(32, gamma=0.01, seed=3, bounds=b))
        si, sf = make(), make(bounds)
        buckets = sf._map_values(np.asarray(floats)).tolist()
        ni, nf, ui, uf = si._impl.update, sf._impl.update, si.update, sf.update
        cases[f"{name}int: native call"] = lambda ni=ni: [ni(x, 1) for x in ints]
        cases[f"{name}int: update(x)"] = lambda ui=ui: [ui(x) for x in ints]
        cases[f"{name}float: native call"] = lambda nf=nf, b=buckets: [nf(x, 1) for x in b]
        cases[f"{name}float: update(x)"] = lambda uf=uf: [uf(x) for x in floats]
    for f in cases.values():
        f()  # warm-up
    times = {k: [] for k in cases}
    for _ in range(args.rounds):
        for k, f in cases.items():
            times[k].append(timed(f) / args.items * 1e9)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"| per-item path (L = 32, {args.items} Zipf items, median of {args.rounds}) | ns/item | x native call |")
    print("|---|---:|---:|")
    for k, v in med.items():
        base = med[k.split(":")[0] + ": native call"]
        print(f"| {k} | {v:.0f} | {v / base:.2f} |")
    print(f"\nload average: {os.getloadavg()[0]:.1f}")


def strlist_memory(kind: str, n: int, container: str = "list") -> float:
    """Peak RSS increase (MB) of one update_many of a list (or a polars Series), in this (fresh) process."""
    xs = [f"user:{i}" for i in zipf_ids(n).tolist()]
    if container == "polars":
        import polars as pl

        xs = pl.Series(xs)
    elif container in ("arrow", "large_arrow"):  # pa.string() (int32 offsets) / pa.large_string()
        import pyarrow as pa

        xs = pa.array(xs, type=pa.string() if container == "arrow" else pa.large_string())
    s = dpsketch.SpaceSaving(256) if kind == "spacesaving" else dpsketch.CountMin(2048, 5, seed=1)
    s.update_many(xs[:10])

    def status(key):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(key + ":")) / 1024

    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the high-water mark to the current RSS
    before = status("VmRSS")
    s.update_many(xs)
    return status("VmHWM") - before


def strlist(args) -> None:
    import pyarrow as pa

    xs = [f"user:{i}" for i in zipf_ids(args.items).tolist()]
    import pyarrow.compute as pc

    arr = pa.array(xs, type=pa.string())
    sources = [("list", xs), ("arrow", arr), ("large_arrow", arr.cast(pa.large_string()))]
    try:
        import polars as pl

        sources.append(("polars", pl.Series(xs)))
    except ImportError:
        pass
    makers = {"SpaceSaving(256)": lambda: dpsketch.SpaceSaving(256),
              "CountMin(2048, 5)": lambda: dpsketch.CountMin(2048, 5, seed=1)}
    times: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for name, make in makers.items():
            for src, data in sources:
                s = make()
                times.setdefault(f"{name} {src}", []).append(timed(lambda: s.update_many(data)) / args.items * 1e9)
        # the peer of a list of str: pyarrow's exact count of the same list (conversion included)
        times.setdefault("value_counts list", []).append(timed(lambda: pc.value_counts(xs)) / args.items * 1e9)
        times.setdefault("value_counts arrow", []).append(timed(lambda: pc.value_counts(arr)) / args.items * 1e9)
    print(f"| update_many of {args.items} str keys (median of {args.rounds}) | source | ns/item | / Arrow (per-round ratios) |")
    print("|---|---|---:|---:|")
    for name in makers:
        b = times[f"{name} arrow"]
        for src, _ in sources:
            a = times[f"{name} {src}"]
            ratio = statistics.median(x / y for x, y in zip(a, b))
            print(f"| {name} | {src} | {statistics.median(a):.1f} | {ratio:.2f} |")
        for peer in ("list", "arrow"):
            a, b = times[f"{name} list"], times[f"value_counts {peer}"]
            print(f"| {name} | list / pyarrow.compute.value_counts({peer}) ({statistics.median(b):.1f} ns) | "
                  f"| {statistics.median(x / y for x, y in zip(a, b)):.2f} |")
    for kind in ("spacesaving", "countmin"):
        for container in [src for src, _ in sources]:
            out = subprocess.run([sys.executable, __file__, "_mem", kind, str(args.mem_items), container], check=True,
                                 capture_output=True, text=True).stdout.strip()
            print(f"peak RSS added by update_many({container} of {args.mem_items} str), {kind}: {out} MB (fresh process)")
    print(f"\nload average: {os.getloadavg()[0]:.1f}")


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "_mem":
        print(f"{strlist_memory(sys.argv[2], int(sys.argv[3]), sys.argv[4]):.1f}")
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["dyadic", "strlist"])
    ap.add_argument("--items", type=int, default=None)
    ap.add_argument("--mem-items", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    if args.mode == "dyadic":
        args.items = args.items or 1 << 16
        dyadic(args)
    else:
        args.items = args.items or 2_000_000
        strlist(args)


if __name__ == "__main__":
    main()
