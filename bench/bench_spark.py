"""dpsketch.spark vs peers on one local Spark (docs/distributed.md §Peer comparison).

On the same DataFrame (Zipf int64 rows; GCIDE tokens when ../shared/data is present):
  - floor:        mapInArrow pass that only sums batch lengths (the floor of any Arrow aggregation)
  - exact:        groupBy(key).count() (ground truth)
  - dpsketch exact: dpsketch.spark.heavy_hitters(route="exact") (groupBy in the JVM, noise on the driver)
  - counters:     dpsketch.spark.heavy_hitters(route="counters")  (DPSS per key partition)
  - sketch:       dpsketch.spark.heavy_hitters(route="sketch")    (merged dyadic sketch, noise once)
  - pipelinedp:   PipelineDP on Spark: DP count per key with private partition selection (if installed)
  - approx_top_k: Spark's built-in approx_top_k (non-private), if the installed Spark has it
Metrics: recall/precision against {x : f(x) >= n/k}, wall time, shuffle bytes (write) from Spark's
status store, driver memory (Python RSS and JVM heap used). Then time vs number of partitions.
The machine is shared: run with `nice`, compare ratios within one run.

  nice python bench/bench_spark.py --rows 10000000 --out docs/results/spark
  nice python bench/bench_spark.py --ratios --ratio-rows 10000000,100000000 --ks 100,1000 --reps 3
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("DPSKETCH_DATA", ROOT.parent / "shared" / "data"))


def spark_session(parallelism: int):
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    s = (SparkSession.builder.master(f"local[{parallelism}]").appName("dpsketch-bench")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "8")
         .config("spark.driver.memory", "3g")
         .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    return s


def shuffle_write_bytes(spark) -> int:
    """Cumulative shuffle bytes written, from the status store's executor summaries (no REST)."""
    it = spark.sparkContext._jsc.sc().statusStore().executorList(False).iterator()
    total = 0
    while it.hasNext():
        total += int(it.next().totalShuffleWrite())
    return total


def driver_memory(spark) -> dict:
    rss = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                rss = int(line.split()[1]) * 1024
    rt = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
    return {"python_peak_rss_mb": rss / 2**20, "jvm_heap_used_mb": (rt.totalMemory() - rt.freeMemory()) / 2**20}


def measure(spark, name, fn, reps=1):
    """Median wall time over `reps` runs (after one untimed warm-up when reps > 1); shuffle bytes of one run."""
    if reps > 1:
        fn()
    times, out, shuffled = [], None, 0
    for _ in range(reps):
        before = shuffle_write_bytes(spark)
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        shuffled = shuffle_write_bytes(spark) - before
    return out, {"method": name, "seconds": float(np.median(times)), "runs": reps, "shuffle_write_bytes": shuffled,
                 **driver_memory(spark)}


def floor_pass(df):
    import pyarrow as pa

    def count(batches):
        t = 0
        for b in batches:
            t += b.num_rows
        yield pa.RecordBatch.from_arrays([pa.array([t], type=pa.int64())], names=["n"])

    return sum(r["n"] for r in df.mapInArrow(count, "n long").collect())


def score(found, exact, n, k):
    heavy = {x for x, f in exact.items() if f >= n / k}
    found = set(found)
    tp = len(heavy & found)
    return {"true_heavy": len(heavy), "reported": len(found),
            "recall": tp / len(heavy) if heavy else 1.0,
            "precision": tp / len(found) if found else 1.0}


def pipelinedp_top(df, column, epsilon, delta, k, n):
    """DP count per key with private partition selection (PipelineDP on Spark RDDs)."""
    import pipeline_dp

    backend = pipeline_dp.SparkRDDBackend(df.sparkSession.sparkContext)
    acct = pipeline_dp.NaiveBudgetAccountant(total_epsilon=epsilon, total_delta=delta)
    engine = pipeline_dp.DPEngine(acct, backend)
    params = pipeline_dp.AggregateParams(metrics=[pipeline_dp.Metrics.COUNT],
                                         noise_kind=pipeline_dp.NoiseKind.LAPLACE,
                                         max_partitions_contributed=1, max_contributions_per_partition=1)
    # Privacy unit one row: give every row its own privacy id.
    rows = df.select(column).rdd.zipWithUniqueId().map(lambda t: (t[1], t[0][0]))
    ext = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: r[1],
                                     value_extractor=lambda r: 0)
    res = engine.aggregate(rows, params, ext)
    acct.compute_budgets()
    out = res.filter(lambda kv: kv[1].count >= n / k).collect()
    return [kv[0] for kv in out]


def approx_top_k(df, column, k, n):
    from pyspark.sql import functions as F

    try:
        row = df.select(F.expr(f"approx_top_k({column}, {4 * k})").alias("t")).collect()[0]
    except Exception as e:  # noqa: BLE001 - not in this Spark version
        return None, str(e).splitlines()[0][:120]
    # Report the items whose approximate count reaches n/k (the same target as the private methods).
    return [item["item"] for item in row["t"] if item["count"] >= n / k], None


def run_dataset(spark, name, df, column, k, eps, delta, rows_out, args, reps=3, peers=True):
    from pyspark.sql import functions as F
    from dpsketch import spark as dps

    df = df.cache()
    n = df.count()
    exact_rows, m = measure(spark, "exact groupBy", lambda: df.groupBy(column).count().collect(), reps)
    exact = {r[column]: r["count"] for r in exact_rows}
    rows_out.append({"dataset": name, "n": n, **m, "recall": 1.0, "precision": 1.0})
    _, m = measure(spark, "floor (mapInArrow len)", lambda: floor_pass(df), reps)
    rows_out.append({"dataset": name, "n": n, **m})
    for route in ("exact", "counters", "sketch"):
        kw = {"width": args.width, "depth": args.depth} if route == "sketch" else {}
        rel, m = measure(spark, f"dpsketch {route}",
                         lambda: dps.heavy_hitters(df, column, k=k, epsilon=eps, delta=delta, route=route, **kw), reps)
        rows_out.append({"dataset": name, "n": n, **m, **score(rel.keys(), exact, n, k)})
    try:
        if not peers:
            raise ImportError
        import pipeline_dp  # noqa: F401

        found, m = measure(spark, "PipelineDP", lambda: pipelinedp_top(df, column, eps, delta, k, n))
        rows_out.append({"dataset": name, "n": n, **m, **score(found, exact, n, k)})
    except ImportError:
        rows_out.append({"dataset": name, "n": n, "method": "PipelineDP",
                         "note": "not run on this data set" if not peers else "pipeline-dp not installed"})
    except Exception as e:  # noqa: BLE001
        rows_out.append({"dataset": name, "n": n, "method": "PipelineDP", "note": f"failed: {str(e)[:200]}"})
    (found, err), m = measure(spark, "approx_top_k", lambda: approx_top_k(df, column, k, n), reps)
    if err is None:
        rows_out.append({"dataset": name, "n": n, **m, **score(found, exact, n, k)})
    else:
        rows_out.append({"dataset": name, "n": n, "method": "approx_top_k", "note": f"unavailable: {err}"})
    for r in rows_out:
        if r.get("dataset") == name:
            print(json.dumps(r), flush=True)
    df.unpersist()


def zipf_parquet(rows: int, tmp: Path) -> Path:
    """Zipf(1.1) int64 keys mod 100,001 (seed 1), written in chunks of 10^7 rows (bounded memory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp / f"zipf_{rows}.parquet"
    if not path.exists():
        r = np.random.default_rng(1)
        with pq.ParquetWriter(path, pa.schema([("x", pa.int64())])) as w:
            for start in range(0, rows, 10_000_000):
                x = (r.zipf(1.1, size=min(10_000_000, rows - start)) % 100_001).astype(np.int64)
                w.write_table(pa.table({"x": x}))
    return path


def sketch_breakdown(df, column, k, eps, delta):
    """The sketch route's stages, timed: the executors' parts (mapInArrow + collect), the merge tree,
    the noise and descent on the driver; and the bytes one partition ships."""
    from dpsketch import spark as dps
    from dpsketch.distributed import SketchRoute
    from dpsketch.sketches.dyadic import DyadicCountSketch

    route = SketchRoute(k=k, epsilon=eps, delta=delta, strings=False, rho_fraction=0.9, seed=1)
    proto = route.prototype(width=max(1024, 8 * k), depth=3)
    keyed = df.select(df[column].cast("long").alias("fp"))
    t0 = time.perf_counter()
    parts = dps._dyadic_parts(keyed, proto.to_bytes())
    t1 = time.perf_counter()
    merged = dps._merge_tree([DyadicCountSketch.from_bytes(b) for b in parts])
    t2 = time.perf_counter()
    route.candidates(merged)
    t3 = time.perf_counter()
    import pyarrow as pa

    shipped = [len(dps._pack(pa, b)) for b in parts]  # what each task sends (the cells, LZ4)
    return {"k": k, "parts": len(parts), "bytes_per_part": len(parts[0]) if parts else 0,
            "shipped_bytes_per_part_max": max(shipped, default=0),
            "executors_and_collect_s": t1 - t0, "merge_s": t2 - t1, "noise_and_descent_s": t3 - t2}


def route_ratios(spark, df, column, ks, eps, delta, reps):
    """Same-run comparison, runs alternating (one round = every method once), after one warm-up
    round: Spark's groupBy(key).count() (collect() and toArrow()), the mapInArrow floor, and
    dpsketch's exact and sketch routes at each k. Ratios are taken within each round; the medians
    of the per-round ratios are reported."""
    from dpsketch import spark as dps

    methods = [("groupBy.count.collect", lambda: df.groupBy(column).count().collect()),
               ("groupBy.count.toArrow", lambda: df.groupBy(column).count().toArrow()),
               ("floor", lambda: floor_pass(df))]
    def uncompressed(fn):  # the sketch route with its parts shipped as raw bytes (A/B of the LZ4 packing)
        def run():
            packed = dps._pack
            dps._pack = lambda pa, raw: dps._RAW + raw
            try:
                return fn()
            finally:
                dps._pack = packed
        return run

    for k in ks:
        methods.append((f"exact k={k}", lambda k=k: dps.heavy_hitters(df, column, k=k, epsilon=eps, delta=delta)))
        sketch = (lambda k=k: dps.heavy_hitters(df, column, k=k, epsilon=eps, delta=delta, route="sketch"))
        methods.append((f"sketch k={k}", sketch))
        methods.append((f"sketch k={k} raw parts", uncompressed(sketch)))
    for _, fn in methods:
        fn()
    times = {name: [] for name, _ in methods}
    for _ in range(reps):
        for name, fn in methods:
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
        print(json.dumps({n: round(t[-1], 3) for n, t in times.items()}), flush=True)
    out = {"rounds": reps, "median_seconds": {n: float(np.median(t)) for n, t in times.items()}, "seconds": times}
    ratios = {}
    for k in ks:
        for num, den in ((f"exact k={k}", "groupBy.count.collect"), (f"exact k={k}", "groupBy.count.toArrow"),
                         (f"sketch k={k}", "floor"), (f"sketch k={k}", "groupBy.count.collect"),
                         (f"sketch k={k} raw parts", "floor"), (f"sketch k={k}", f"sketch k={k} raw parts")):
            ratios[f"{num} / {den}"] = float(np.median(np.array(times[num]) / np.array(times[den])))
    out["median_ratio"] = ratios
    return out


def ratios_main(args):
    """--ratios: the exact and sketch routes against Spark's groupBy().count() and the floor."""
    spark = spark_session(args.parallelism)
    tmp = Path("/tmp/dpsketch_bench_spark")
    tmp.mkdir(exist_ok=True)
    ks = [int(v) for v in args.ks.split(",")]
    result = {"machine": os.uname().nodename, "cores": os.cpu_count(), "master": f"local[{args.parallelism}]",
              "load_average_before": os.getloadavg(), "runs": []}
    for rows in [int(v) for v in args.ratio_rows.split(",")]:
        path = zipf_parquet(rows, tmp)
        if rows <= 10_000_000:  # cached in memory, 8 partitions
            df = spark.read.parquet(str(path)).repartition(8).cache()
            df.count()
        else:  # read from the file in every run, about 8 input splits (no shuffle before the method)
            spark.conf.set("spark.sql.files.maxPartitionBytes", str(max(1 << 20, path.stat().st_size // 8)))
            df = spark.read.parquet(str(path))
        run = {"rows": rows, "cached": rows <= 10_000_000, "input_partitions": df.rdd.getNumPartitions(),
               **route_ratios(spark, df, "x", ks, args.epsilon, args.delta, args.reps),
               "sketch_breakdown": [sketch_breakdown(df, "x", k, args.epsilon, args.delta) for k in ks],
               "load_average_after": os.getloadavg()}
        print(json.dumps({kk: v for kk, v in run.items() if kk != "seconds"}), flush=True)
        result["runs"].append(run)
        df.unpersist()
    spark.stop()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "exact_route_ratios.json").write_text(json.dumps(result, indent=1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ratios", action="store_true", help="only the exact/sketch routes against groupBy and the floor")
    ap.add_argument("--ratio-rows", default="10000000", help="row counts for --ratios (comma-separated)")
    ap.add_argument("--ks", default="100,1000", help="k values for --ratios")
    ap.add_argument("--reps", type=int, default=3, help="alternating rounds for --ratios")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--parallelism", type=int, default=2)
    ap.add_argument("--partitions", default="1,2,4,8")
    ap.add_argument("--peer-rows", type=int, default=1_000_000, help="rows for the PipelineDP comparison")
    ap.add_argument("--scaling-reps", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "docs" / "results" / "spark"))
    args = ap.parse_args()
    if args.ratios:
        return ratios_main(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    spark = spark_session(args.parallelism)
    import pandas as pd

    tmp = Path("/tmp/dpsketch_bench_spark")
    tmp.mkdir(exist_ok=True)
    zpath = tmp / f"zipf_{args.rows}.parquet"
    if not zpath.exists():
        r = np.random.default_rng(1)
        x = (r.zipf(1.1, size=args.rows) % 100_001).astype(np.int64)
        pd.DataFrame({"x": x}).to_parquet(zpath)
    zdf = spark.read.parquet(str(zpath)).repartition(8)
    rows = []
    run_dataset(spark, f"zipf1.1 n={args.rows}", zdf, "x", args.k, args.epsilon, args.delta, rows, args,
                peers=args.peer_rows >= args.rows)
    if args.peer_rows < args.rows:  # PipelineDP is slow: compare everything on a smaller prefix too
        ppath = tmp / f"zipf_{args.rows}_prefix{args.peer_rows}.parquet"
        if not ppath.exists():
            pd.read_parquet(zpath).iloc[: args.peer_rows].to_parquet(ppath)
        pdf = spark.read.parquet(str(ppath)).repartition(8)
        run_dataset(spark, f"zipf1.1 n={args.peer_rows} (prefix)", pdf, "x", args.k, args.epsilon, args.delta,
                    rows, args, reps=1)
    gpath = DATA / "gcide_words.txt.gz"
    if gpath.exists():
        tpath = tmp / "gcide.parquet"
        if not tpath.exists():
            with gzip.open(gpath, "rt", encoding="utf-8", errors="replace") as f:
                words = [w.strip() for w in f]
            pd.DataFrame({"w": words}).to_parquet(tpath)
        gdf = spark.read.parquet(str(tpath)).repartition(8)
        run_dataset(spark, "gcide tokens", gdf, "w", args.k, args.epsilon, args.delta, rows, args, reps=2,
                    peers=False)
    (out / "comparison.json").write_text(json.dumps(rows, indent=1))
    # Time vs number of partitions (Zipf): input partitions = shuffle partitions = P.
    from dpsketch import spark as dps

    scaling = []
    for p in [int(v) for v in args.partitions.split(",")]:
        df = spark.read.parquet(str(zpath)).repartition(p).cache()
        df.count()
        for label, fn in (
            ("floor", lambda: floor_pass(df)),
            ("sketch", lambda: dps.heavy_hitters(df, "x", k=args.k, epsilon=args.epsilon, delta=args.delta,
                                                 route="sketch", width=args.width, depth=args.depth)),
            ("counters", lambda: dps.heavy_hitters(df, "x", k=args.k, epsilon=args.epsilon, delta=args.delta,
                                                   route="counters", num_partitions=p)),
        ):
            ts = []
            fn()  # warm-up
            for _ in range(args.scaling_reps):
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
            scaling.append({"partitions": p, "method": label, "median_seconds": float(np.median(ts))})
            print(json.dumps(scaling[-1]), flush=True)
        df.unpersist()
    (out / "comparison.json").write_text(json.dumps(rows, indent=1))
    spark.stop()
    (out / "scaling.json").write_text(json.dumps(scaling, indent=1))
    plot(rows, scaling, ROOT / "docs" / "spark_comparison.png")


def plot(rows, scaling, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for method in sorted({s["method"] for s in scaling}):
        pts = [(s["partitions"], s["median_seconds"]) for s in scaling if s["method"] == method]
        a.plot(*zip(*pts), marker="o", label=method)
    a.set_xlabel("partitions (local[2])")
    a.set_ylabel("median wall time, s")
    a.set_xscale("log", base=2)
    a.set_title("Zipf 1.1: time vs partitions")
    a.legend()
    timed = [r for r in rows if "seconds" in r]
    def short(d):
        return "gcide" if d.startswith("gcide") else f"zipf n={d.split('n=')[1].split()[0]}"

    labels = [f"{short(r['dataset'])} | {r['method']}" for r in timed]
    b.barh(range(len(timed)), [r["seconds"] for r in timed])
    b.set_yticks(range(len(timed)), labels, fontsize=7)
    b.set_xlabel("wall time, s (log)")
    b.set_xscale("log")
    b.set_title("methods (recall/precision in docs/distributed.md)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--replot":  # redraw from a finished run's JSON
        d = Path(sys.argv[2])
        plot(json.loads((d / "comparison.json").read_text()), json.loads((d / "scaling.json").read_text()),
             ROOT / "docs" / "spark_comparison.png")
    else:
        main()
