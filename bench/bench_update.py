"""Per-item ``update()`` and batch ``update_many`` on the user's containers, ns per item.

    python bench/bench_update.py                  # this tree
    python bench/bench_update.py --compare main   # also a git ref's Python package + compiled
                                                  # module (built in a scratch dir), same run
    python bench/bench_update.py --compare-site DIR   # ... or a dpsketch package already in DIR

Per-item rows: median over --repeats of timeit loops, including DataSketches' own per-item update
(``pip install datasketches``; skipped when absent) on the same keys. Container rows: one
``update_many`` call on 1 M keys (median of --repeats) into a SpaceSaving(1000).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import timeit

N_ITEM = 200_000
N_BATCH = 1_000_000


def measure(repeats):
    import numpy as np

    import dpsketch as d

    rng = np.random.default_rng(0)
    ints = (rng.zipf(1.2, N_ITEM) % 100_000).tolist()
    strs = [f"w{v}" for v in ints]
    out = {}

    def per_item(make, keys):
        times = []
        for _ in range(repeats):
            obj = make()
            upd = obj.update
            t = timeit.timeit(lambda: [upd(k) for k in keys], number=1)
            times.append(t / len(keys) * 1e9)
        return statistics.median(times)

    def loop_only(keys):  # the list-comprehension overhead included above, for reference
        f = lambda k: None  # noqa: E731
        return statistics.median(timeit.timeit(lambda: [f(k) for k in keys], number=1) / len(keys) * 1e9
                                 for _ in range(repeats))

    out["empty Python call (loop overhead)"] = loop_only(ints)
    out["SpaceSaving(1000).update(int)"] = per_item(lambda: d.SpaceSaving(1000), ints)
    out["SpaceSaving(1000).update(str)"] = per_item(lambda: d.SpaceSaving(1000), strs)
    out["MisraGries(1000).update(str)"] = per_item(lambda: d.MisraGries(1000), strs)
    out["CountMin(2048, 5).update(str)"] = per_item(lambda: d.CountMin(2048, 5, seed=1), strs)
    try:
        import datasketches as ds

        out["datasketches frequent_strings_sketch(11).update(str)"] = per_item(
            lambda: ds.frequent_strings_sketch(11), strs)
        out["datasketches frequent_items_sketch(11).update(str)"] = per_item(
            lambda: ds.frequent_items_sketch(11), strs)
        out["datasketches frequent_items_sketch(11).update(int)"] = per_item(
            lambda: ds.frequent_items_sketch(11), ints)
        out["datasketches count_min_sketch(5, 2048).update(str)"] = per_item(
            lambda: ds.count_min_sketch(5, 2048), strs)
    except ImportError:
        pass

    keys = rng.zipf(1.2, N_BATCH) % 100_000
    words = np.array([f"w{v}" for v in keys[:200_000]])[rng.integers(0, 200_000, N_BATCH)]
    containers = {"numpy int64": lambda: keys, "list of int": lambda: keys.tolist(),
                  "numpy U8": lambda: words.astype("U8"), "numpy U32": lambda: words.astype("U32"),
                  "numpy U128": lambda: words.astype("U128"), "numpy U499": lambda: words.astype("U499"),
                  "numpy object": lambda: words.astype(object), "list of str": lambda: words.tolist()}
    try:
        import pandas as pd
        import pyarrow as pa

        containers.update({
            "pandas int64": lambda: pd.Series(keys),
            "pandas string[python]": lambda: pd.Series(words, dtype="string[python]"),
            "pandas string[pyarrow]": lambda: pd.Series(words, dtype="string[pyarrow]"),
            "pandas category": lambda: pd.Series(words).astype("category"),
            "pyarrow string": lambda: pa.array(words),
            "pyarrow dictionary": lambda: pa.array(words).dictionary_encode(),
            "pyarrow string_view": lambda: pa.array(words, pa.string_view()),
        })
    except ImportError:
        pass
    if hasattr(np.dtypes, "StringDType"):  # numpy >= 2
        containers["numpy StringDType"] = lambda: words.astype(np.dtypes.StringDType())
    try:
        import polars as pl

        containers["polars str"] = lambda: pl.Series(words.tolist())
    except ImportError:
        pass
    for name, build in containers.items():
        data = build()
        times = []
        for _ in range(repeats):
            s = d.SpaceSaving(1000)
            try:
                times.append(timeit.timeit(lambda: s.update_many(data), number=1) / N_BATCH * 1e9)
            except (TypeError, ValueError) as exc:  # an older tree may reject a container
                times = [float("nan")]
                out[f"update_many({name}) error"] = type(exc).__name__
                break
        out[f"update_many({name})"] = statistics.median(times)
    return out


def scratch_build(ref, dest):
    """Python package and compiled module of `ref`, built in `dest` (no install)."""
    subprocess.run(f"git -C {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))} archive {ref} | tar -x -C {dest}",
                   shell=True, check=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q", "-w",
                    os.path.join(dest, "dist"), dest], check=True)
    whl = next(f for f in os.listdir(os.path.join(dest, "dist")) if f.endswith(".whl"))
    site = os.path.join(dest, "site")
    subprocess.run([sys.executable, "-m", "zipfile", "-e", os.path.join(dest, "dist", whl), site], check=True)
    return site


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--compare", metavar="REF", help="also measure this git ref (built in a scratch dir)")
    ap.add_argument("--compare-site", metavar="DIR", help="also measure the dpsketch package found in DIR")
    ap.add_argument("--site", help="measure the dpsketch found in this folder instead (internal)")
    ap.add_argument("--json", help="write results here")
    args = ap.parse_args()
    if args.site:
        sys.path.insert(0, args.site)
        sys.meta_path[:] = [f for f in sys.meta_path if "Redirect" not in type(f).__name__]
        print(json.dumps(measure(args.repeats)))
        return
    results = {"this tree": measure(args.repeats)}
    if args.compare:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            site = scratch_build(args.compare, tmp)
            r = subprocess.run([sys.executable, __file__, "--site", site, "--repeats", str(args.repeats)],
                               capture_output=True, text=True, check=True)
            results[args.compare] = json.loads(r.stdout.strip().splitlines()[-1])
    if args.compare_site:
        r = subprocess.run([sys.executable, __file__, "--site", args.compare_site, "--repeats", str(args.repeats)],
                           capture_output=True, text=True, check=True)
        results[args.compare_site] = json.loads(r.stdout.strip().splitlines()[-1])
    names = list(results["this tree"])
    cols = list(results)
    print(f"{'ns per item':60s}" + "".join(f"{c:>14s}" for c in cols))
    for n in names:
        row = [results[c].get(n, float("nan")) for c in cols]
        print(f"{n:60s}" + "".join(f"{v:14.1f}" if isinstance(v, float) else f"{v:>14s}" for v in row))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
