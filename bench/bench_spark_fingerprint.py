"""The cost of the sketch route's 128-bit lookup fingerprint on one local Spark (docs/distributed.md
§Sketch route).

String keys (heavy-tailed: 'q' + floor(U^-1.25), generated in Spark and cached). In one run:
  - route:      dpsketch.spark.heavy_hitters(route="sketch") end to end (sketch pass + lookup pass)
  - lookup-64:  the lookup aggregation grouped by the 64-bit sketch fingerprint alone
  - lookup-128: the lookup aggregation the route runs, grouped by (xxhash64(salt), xxhash64(salt2))
Both lookups use the same candidate set (the route's, rebuilt with the same seed). Medians of
`--reps` runs, the two lookups alternating; the machine is shared: compare ratios within one run.

  nice python bench/bench_spark_fingerprint.py --rows 10000000 --reps 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_spark import spark_session  # noqa: E402


def candidates(df, column, route, width, depth):
    """The route's candidate sketch fingerprints, built as dpsketch.spark builds them."""
    from pyspark.sql import functions as F

    from dpsketch import spark as dps
    from dpsketch.sketches.dyadic import DyadicCountSketch

    col = F.col(column)
    keyed = df.select(column).where(col.isNotNull()).select(F.xxhash64(F.lit(route.salt), col).alias("fp"))
    proto = route.prototype(width=width, depth=depth)
    parts = dps._dyadic_parts(keyed, proto.to_bytes())
    objs = [DyadicCountSketch.from_bytes(b) for b in parts]
    return route.candidates(dps._merge_tree(objs) if objs else proto)


def lookup(df, column, route, fps, bits):
    from pyspark.sql import functions as F

    col = F.col(column)
    hits = (df.select(column).where(col.isNotNull())
            .select(F.xxhash64(F.lit(route.salt), col).alias("fp"), col.alias("label"))
            .where(F.col("fp").isin(fps)))
    keys = ["fp"]
    if bits == 128:
        hits = hits.select("fp", F.xxhash64(F.lit(route.salt2), F.col("label")).alias("fp2"), "label")
        keys.append("fp2")
    agg = hits.groupBy(*keys).agg(F.count(F.lit(1)).alias("c"), F.countDistinct("label").alias("u"),
                                  F.min("label").alias("label"))
    return agg.collect()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--parallelism", type=int, default=2)
    ap.add_argument("--route-only", action="store_true", help="time only the route, once (large runs)")
    ap.add_argument("--no-cache", action="store_true", help="regenerate the rows in each pass instead of caching")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    from pyspark.sql import functions as F

    from dpsketch import distributed as dpd
    from dpsketch import spark as dps

    spark = spark_session(args.parallelism)
    df = spark.range(args.rows, numPartitions=4 * args.parallelism).select(
        F.concat(F.lit("q"), F.floor(F.pow(F.rand(7), F.lit(-1.25))).cast("long").cast("string")).alias("q"))
    if not args.no_cache:
        df = df.cache()
        t0 = time.perf_counter()
        df.count()
        print(f"generated and cached {args.rows:,} rows in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    width, depth, seed = 2048, 3, 1
    res: dict = {"rows": args.rows, "k": args.k, "delta": args.delta, "machine": platform.node(),
                 "cpus": os.cpu_count(), "spark": f"local[{args.parallelism}]", "cached": not args.no_cache}

    times = []
    for _ in range(1 if args.route_only else args.reps):
        t0 = time.perf_counter()
        rel = dps.heavy_hitters(df, "q", k=args.k, epsilon=1.0, delta=args.delta, route="sketch", width=width,
                                depth=depth, seed=seed)
        times.append(time.perf_counter() - t0)
    res["route_seconds"] = float(np.median(times))
    res["route_runs"] = times
    res["released"] = len(rel.items)
    res["delta_fingerprint"] = rel.metadata["delta_fingerprint"]
    res["delta_fingerprint_64"] = dpd.fingerprint_delta(rel.metadata["n_upper"], bits=64)
    print(json.dumps(res), file=sys.stderr)
    if not args.route_only:
        route = dpd.SketchRoute(k=args.k, epsilon=1.0, delta=1.0 / 3, strings=True, seed=seed)  # δ: no refusal
        fps = candidates(df, "q", route, width, depth)
        res["candidates"] = len(fps)
        lk: dict = {64: [], 128: []}
        lookup(df, "q", route, fps, 64)  # warm-up
        for i in range(args.reps):
            for bits in ((64, 128) if i % 2 == 0 else (128, 64)):
                t0 = time.perf_counter()
                groups = lookup(df, "q", route, fps, bits)
                lk[bits].append(time.perf_counter() - t0)
                res[f"groups_{bits}"] = len(groups)
        res["lookup_64_seconds"] = float(np.median(lk[64]))
        res["lookup_128_seconds"] = float(np.median(lk[128]))
        res["lookup_128_over_64"] = res["lookup_128_seconds"] / res["lookup_64_seconds"]
        res["lookup_runs"] = {str(b): v for b, v in lk.items()}
    print(json.dumps(res, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(res, indent=1) + "\n")
    spark.stop()


if __name__ == "__main__":
    main()
