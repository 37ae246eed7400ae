"""The counters route's partition count on one local Spark: heavy_hitters(route="counters") with
num_partitions = spark.sql.shuffle.partitions (200, Spark's default) against the route's default
count (docs/distributed.md §Counters route), same DataFrame, same run, alternating, medians.

  nice python bench/bench_spark_counters.py --rows 2000000 --reps 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--parallelism", type=int, default=2)
    args = ap.parse_args()

    import pandas as pd
    from pyspark.sql import SparkSession

    from dpsketch import spark as dps

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(f"local[{args.parallelism}]").appName("dpsketch-bench-counters")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "2g")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000").getOrCreate())
    keys = (np.random.default_rng(1).zipf(1.2, size=args.rows) % 1_000_000).astype(np.int64)
    df = spark.createDataFrame(pd.DataFrame({"x": keys})).cache()
    df.count()
    shuffle = int(spark.conf.get("spark.sql.shuffle.partitions"))
    configs = {f"num_partitions={shuffle} (shuffle.partitions)": shuffle, "default": None}
    times = {name: [] for name in configs}
    found = {}
    for _ in range(args.reps):
        for name, p in configs.items():
            t0 = time.perf_counter()
            rel = dps.heavy_hitters(df, "x", k=args.k, epsilon=1.0, delta=1e-6, num_partitions=p, seed=3)
            times[name].append(time.perf_counter() - t0)
            found[name] = len(rel.items)
    base = statistics.median(times[f"num_partitions={shuffle} (shuffle.partitions)"])
    print(f"rows={args.rows} local[{args.parallelism}] reps={args.reps} machine={os.uname().nodename} cpus={os.cpu_count()}")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"{name:40s} median {m:6.2f} s  (x{m / base:.2f})  released {found[name]}  runs {[round(t, 2) for t in ts]}")
    spark.stop()


if __name__ == "__main__":
    main()
