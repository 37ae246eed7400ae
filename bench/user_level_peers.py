"""User-level heavy hitters against PipelineDP on one generated event log (docs/privacy_unit.md).

Both tools bound each user to ``m`` distinct keys and ``c`` rows per key, add Gaussian noise and
select keys at (ε, δ) for the user (privacy unit = one user):

- dpsketch: ``dpsketch.mechanisms.unit_level.unit_heavy_hitters`` (exact route) in this process;
- PipelineDP (``DPEngine.aggregate``, COUNT, LocalBackend, Gaussian noise, its default truncated
  geometric partition selection) in its own virtual environment, since it needs numpy < 2
  (``--pipelinedp-python``; create it with ``python -m venv V && V/bin/pip install "numpy<2" pipeline-dp``).

Reported per tool: wall time (median of ``--repeats`` runs, data already in memory as numpy
arrays for dpsketch and as a Python list of (user, key) tuples for PipelineDP, the input each
takes), peak RSS increase, keys released, recall of the keys with >= 150 distinct users, and how
many released keys have a single user. Run::

    python bench/user_level_peers.py --rows 5000000 --pipelinedp-python /tmp/venv-pdp/bin/python

With ``--spark`` both tools run on Apache Spark ``local[2]`` instead, on the same Parquet file
(columns ``user``, ``key``): ``dpsketch.spark.heavy_hitters(df, "key", unit=dpsketch.Person("user", max_keys=m), ...)``
against PipelineDP's ``SparkRDDBackend`` over ``spark.read.parquet(...).rdd`` (the venv then needs
pyspark too). Spark's exact ``groupBy("key").count()`` on the same file is timed as the floor. Each
session is started and warmed up by one untimed run before the timed ones; the wall time is from
reading the file to the collected result.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PDP_SCRIPT = r"""
import json, resource, sys, time
import numpy as np
import pipeline_dp

users = np.load(sys.argv[1]); keys = np.load(sys.argv[2])
eps, delta, m, c, repeats = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
rows = list(zip(users.tolist(), keys.tolist()))
times, out = [], None
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for _ in range(repeats):
    t0 = time.perf_counter()
    acc = pipeline_dp.NaiveBudgetAccountant(total_epsilon=eps, total_delta=delta)
    eng = pipeline_dp.DPEngine(acc, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(noise_kind=pipeline_dp.NoiseKind.GAUSSIAN, metrics=[pipeline_dp.Metrics.COUNT],
                                         max_partitions_contributed=m, max_contributions_per_partition=c)
    ext = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: r[1],
                                     value_extractor=lambda r: 0)
    res = eng.aggregate(rows, params, ext)
    acc.compute_budgets()
    out = [int(k) for k, _ in res]
    times.append(time.perf_counter() - t0)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"times": times, "keys": out, "rss_mb": (rss - rss0) / 1024}))
"""

PDP_SPARK_SCRIPT = r"""
import json, os, sys, time
os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers need this venv's pipeline_dp
import pipeline_dp
from pyspark.sql import SparkSession

path, eps, delta, m, c, repeats = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.driver.memory", sys.argv[7]).getOrCreate())
spark.sparkContext.setLogLevel("ERROR")

def run():
    rdd = spark.read.parquet(path).rdd.map(lambda r: (r[0], r[1]))
    acc = pipeline_dp.NaiveBudgetAccountant(total_epsilon=eps, total_delta=delta)
    eng = pipeline_dp.DPEngine(acc, pipeline_dp.SparkRDDBackend(spark.sparkContext))
    params = pipeline_dp.AggregateParams(noise_kind=pipeline_dp.NoiseKind.GAUSSIAN, metrics=[pipeline_dp.Metrics.COUNT],
                                         max_partitions_contributed=m, max_contributions_per_partition=c)
    ext = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: r[1],
                                     value_extractor=lambda r: 0)
    res = eng.aggregate(rdd, params, ext)
    acc.compute_budgets()
    return [int(k) for k, _ in res.collect()]

run()
times, out = [], None
for _ in range(repeats):
    t0 = time.perf_counter()
    out = run()
    times.append(time.perf_counter() - t0)
spark.stop()
print(json.dumps({"times": times, "keys": out}))
"""


def spark_comparison(args, users, keys, du, out: dict) -> None:
    """Both tools and Spark's exact groupBy on local[2], from one Parquet file (module docstring)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import SparkSession

    import dpsketch
    import dpsketch.spark as dps

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/events.parquet"
        pq.write_table(pa.table({"user": users, "key": keys}), path, row_group_size=1 << 20)
        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.driver.memory", args.spark_memory).getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")

        def timed(fn):
            fn()  # warm-up, untimed
            ts, res = [], None
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                res = fn()
                ts.append(time.perf_counter() - t0)
            return ts, res

        def dp_run():
            return dps.heavy_hitters(spark.read.parquet(path), "key", epsilon=args.epsilon, delta=args.delta,
                                     unit=dpsketch.Person("user", max_keys=args.m, max_rows_per_key=args.c))

        def floor_run():
            return spark.read.parquet(path).groupBy("key").count().collect()

        ts, rel = timed(dp_run)
        out["dpsketch_spark"] = {"seconds": statistics.median(ts), "times": ts, "threshold": rel.threshold,
                                 **score(rel.keys(), du, 150)}
        ts, _ = timed(floor_run)
        out["spark_groupby_count"] = {"seconds": statistics.median(ts), "times": ts}
        spark.stop()
        if args.pipelinedp_python:
            (Path(tmp) / "run.py").write_text(PDP_SPARK_SCRIPT)
            res = subprocess.run([args.pipelinedp_python, f"{tmp}/run.py", path, str(args.epsilon), str(args.delta),
                                  str(args.m), str(args.c), str(args.repeats), args.spark_memory],
                                 capture_output=True, text=True, check=True)
            got = json.loads(res.stdout.strip().splitlines()[-1])
            out["pipelinedp_spark"] = {"seconds": statistics.median(got["times"]), "times": got["times"],
                                       **score(got["keys"], du, 150)}
            out["speedup_vs_pipelinedp"] = out["pipelinedp_spark"]["seconds"] / out["dpsketch_spark"]["seconds"]
    out["dpsketch_over_groupby"] = out["dpsketch_spark"]["seconds"] / out["spark_groupby_count"]["seconds"]


def score(released: list[int], distinct_users: dict[int, int], min_users: int) -> dict:
    rel = set(released)
    big = {k for k, u in distinct_users.items() if u >= min_users}
    return {"released": len(rel), "recall_ge_%d_users" % min_users: len(rel & big) / max(1, len(big)),
            "single_user_keys_released": sum(1 for k in rel if distinct_users.get(k, 0) == 1),
            "keys_with_ge_%d_users" % min_users: len(big)}


def local_comparison(args, users, keys, du, out: dict) -> None:
    """Both tools in memory, in this process and PipelineDP's venv (module docstring)."""
    import dpsketch

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times, rel = [], None
    for r in range(args.repeats):
        t0 = time.perf_counter()
        rel = dpsketch.mechanisms.unit_level.unit_heavy_hitters(keys, users, epsilon=args.epsilon, delta=args.delta, max_keys_per_unit=args.m,
                                          max_rows_per_key=args.c)
        times.append(time.perf_counter() - t0)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out["dpsketch"] = {"seconds": statistics.median(times), "times": times, "rss_mb": (rss - rss0) / 1024,
                       "threshold": rel.threshold, **score(rel.keys(), du, 150)}
    if args.pipelinedp_python:
        with tempfile.TemporaryDirectory() as tmp:
            np.save(f"{tmp}/u.npy", users)
            np.save(f"{tmp}/k.npy", keys)
            (Path(tmp) / "run.py").write_text(PDP_SCRIPT)
            res = subprocess.run([args.pipelinedp_python, f"{tmp}/run.py", f"{tmp}/u.npy", f"{tmp}/k.npy", str(args.epsilon),
                                  str(args.delta), str(args.m), str(args.c), str(args.repeats)],
                                 capture_output=True, text=True, check=True)
            got = json.loads(res.stdout.strip().splitlines()[-1])
        out["pipelinedp"] = {"seconds": statistics.median(got["times"]), "times": got["times"], "rss_mb": got["rss_mb"],
                             **score(got["keys"], du, 150)}
        out["speedup_vs_pipelinedp"] = out["pipelinedp"]["seconds"] / out["dpsketch"]["seconds"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--m", type=int, default=10, help="max distinct keys per user")
    ap.add_argument("--c", type=int, default=1, help="max rows per (user, key)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pipelinedp-python", help="python of a venv with pipeline-dp (numpy < 2)")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--spark", action="store_true", help="compare on Spark local[2] instead (module docstring)")
    ap.add_argument("--spark-memory", default="6g", help="spark.driver.memory of each Spark session")
    args = ap.parse_args(argv)

    from dpsketch.datasets import distinct_units_per_key, event_log

    users, keys = event_log(args.rows, seed=args.seed)
    du = distinct_units_per_key(keys, users)
    out: dict = {"machine": platform.processor() or platform.machine(), "rows": args.rows, "epsilon": args.epsilon,
                 "delta": args.delta, "m": args.m, "c": args.c, "repeats": args.repeats}
    if args.spark:
        out["mode"] = "spark local[2]"
        spark_comparison(args, users, keys, du, out)
    else:
        out["mode"] = "local, in memory"
        local_comparison(args, users, keys, du, out)
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
