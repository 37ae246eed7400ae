"""Releases over time on a real local Spark (docs/privacy.md §Windows "On Spark"; marked `spark`):
dpsketch.spark.windowed_heavy_hitters on a batch DataFrame and stream_heavy_hitters on a
Structured Streaming file source. Each seeded release must equal the release computed without
the window machinery on exactly the rows the window should hold."""

from __future__ import annotations

import datetime as dt
import json
import threading

import numpy as np
import pytest

pytest.importorskip("pyspark", reason="pip install '.[spark]' (or the test extra) to run")

import dpsketch as dp  # noqa: E402
from dpsketch import distributed as dpd  # noqa: E402
from dpsketch import spark as dps  # noqa: E402
from dpsketch.errors import BudgetExceededError  # noqa: E402
from dpsketch.time.windows import Windowed, window_seed  # noqa: E402

from conftest import SPARK_PARTS

pytestmark = pytest.mark.spark

HOUR = 3600
T0 = dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)


def same_release(a, b):
    assert a.items == b.items
    assert a.threshold == b.threshold and a.n == b.n
    assert (a.epsilon, a.delta, a.mechanism) == (b.epsilon, b.delta, b.mechanism)


@pytest.fixture(scope="module")
def events(spark, tmp_path_factory):
    """A Parquet file read by Spark: hourly windows 0..3 from T0, windows 0, 1, 3 with Zipf-like
    keys, window 2 empty; a heavy key 'z' just before the range and just after it (dropped); a
    null key and a null time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    r = np.random.default_rng(11)
    keys, secs = [], []
    for h, n in ((0, 1500), (1, 1000), (3, 1200)):
        keys += [f"q{i}" for i in r.zipf(1.5, size=n) % 300]
        secs += (h * HOUR + r.uniform(0, HOUR, size=n)).tolist()
    keys += ["z"] * 600 + [None, "q1"]
    secs += [-1.0] * 300 + [4.0 * HOUR] * 300 + [0.0, None]
    base = int(T0.timestamp()) * 10**6
    us = pa.array([None if t is None else base + int(t * 1e6) for t in secs], pa.timestamp("us", tz="UTC"))
    path = tmp_path_factory.mktemp("events") / "events.parquet"
    order = r.permutation(len(keys))
    pq.write_table(pa.table({"key": pa.array(keys).take(order), "ts": us.take(order)}), path)
    return spark.read.parquet(str(path)).repartition(3)


def test_batch_windows_equal_the_counters_route_on_each_window(spark, events):
    """Reference without Spark's help: the rows Spark holds, each put in the window of its time
    and in Spark's hash partition of its key (pmod(murmur3(key), P), what repartition(P, key)
    uses), fed in key order, then release_partitions per window with the window's seed."""
    from pyspark.sql import functions as F

    b = dp.Budget(1.0, 1e-5)
    rels = dps.windowed_heavy_hitters(events, "key", time_column="ts", period="1h", start=T0,
                                      end=T0 + dt.timedelta(hours=4), k=10, epsilon=1.0, delta=1e-5, seed=5,
                                      budget=b)
    first = int(T0.timestamp()) // HOUR
    # the series: every window of the public range, in order, charged once
    assert [r.metadata["window"]["index"] for r in rels] == [first + h for h in range(4)]
    assert rels[0].metadata["window"]["start"] == "2024-05-01T00:00:00Z"
    assert len(b.ledger) == 1 and b.spent().epsilon == 1.0 and b.spent().delta == 1e-5
    assert all(r.metadata["composition"]["rule"] == "parallel" for r in rels)
    assert rels[2].items == [] and rels[2].n is not None  # the empty window is released too
    assert all(r.items for r in (rels[0], rels[1], rels[3]))
    assert not any(k == "z" for r in rels for k, _ in r.items)  # rows outside the range are dropped

    pdf = (events.where(F.col("key").isNotNull() & F.col("ts").isNotNull())
           .select("key", F.unix_micros("ts").alias("us"),
                   F.pmod(F.hash("key"), F.lit(SPARK_PARTS)).alias("p")).toPandas())
    win = np.floor_divide(pdf["us"].to_numpy(), HOUR * 10**6)
    for r in rels:
        i = r.metadata["window"]["index"]
        sel = pdf[win == i]
        parts = []
        for p in sorted(set(sel["p"])):
            s = dp.SpaceSaving(20, key_type="str")
            s.update_many(np.array(sorted(sel[sel["p"] == p]["key"])))
            parts.append((p, s))
        parts = parts or [(0, dp.SpaceSaving(20, key_type="str"))]
        ref = dpd.release_partitions([s for _, s in parts], partition_ids=[p for p, _ in parts], k=10,
                                     epsilon=1.0, delta=1e-5, seed=window_seed(5, i))
        same_release(r, ref)
        assert r.metadata["partitions"] == SPARK_PARTS  # public: not the number of partitions with rows


def test_batch_windows_epoch_seconds_pmg_and_refusals(spark, events):
    from pyspark.sql import functions as F

    # int keys (q17 -> 17, z -> null: dropped) at epoch seconds (doubles)
    secs = events.select(F.expr("try_cast(substring(key, 2) AS BIGINT)").alias("key"),
                         (F.unix_micros("ts").cast("double") / 1e6).alias("t"))
    start, end = T0.timestamp(), T0.timestamp() + 4 * HOUR
    kwargs = dict(time_column="t", period=HOUR, start=start, end=end, k=10, epsilon=1.0, delta=1e-5, seed=9,
                  summary="misragries")
    got = dps.windowed_heavy_hitters(secs, "key", **kwargs)
    again = dps.windowed_heavy_hitters(secs, "key", **kwargs)
    assert len(got) == 4 and got[2].items == [] and got[0].mechanism == "spark.counters[PMG]"
    assert all(isinstance(key, int) for r in got for key, _ in r.items) and got[0].items
    for a, b in zip(got, again):  # seeded: reproducible
        same_release(a, b)
    with pytest.raises(ValueError, match="start= and end="):
        dps.windowed_heavy_hitters(secs, "key", time_column="t", period=HOUR, start=start, end=None, k=10,
                                   epsilon=1.0, delta=1e-5)
    with pytest.raises(TypeError, match="time column"):  # a string column is no time
        dps.windowed_heavy_hitters(events, "key", time_column="key", period=HOUR, start=start, end=end, k=10,
                                   epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="cut=None"):
        dps.windowed_heavy_hitters(secs, "key", **dict(kwargs, cut=None))
    b = dp.Budget(0.5, 1e-5)
    with pytest.raises(BudgetExceededError):  # refused before Spark reads a row
        dps.windowed_heavy_hitters(secs, "key", **dict(kwargs, budget=b))
    assert b.ledger == []


class Clock:
    """A public clock the test moves by hand (epoch seconds)."""

    def __init__(self, t: float) -> None:
        self.t, self._lock = float(t), threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.t

    def set(self, t: float) -> None:
        with self._lock:
            self.t = float(t)


def write_json(folder, name, rows):
    """A file appears in the source folder at once (written beside it, then renamed in)."""
    tmp = folder.parent / (name + ".tmp")
    tmp.write_text("".join(json.dumps({"item": k, "t": t}) + "\n" for k, t in rows))
    tmp.rename(folder / name)


def test_stream_releases_each_window_at_its_deadline(spark, tmp_path):
    """Windows [10i, 10i+10) s, i = 100..103, allowed lateness 5 s, clock moved by hand. Early,
    late and out-of-range events are dropped; the empty windows are released; each release equals
    a Windowed fed, at the same clock readings, the micro-batches' rows in (window, key) order."""
    src = tmp_path / "in"
    src.mkdir()
    clock = Clock(1001)
    batches = [  # (clock when the file arrives, rows)
        (1001, [("a", 1001.5)] * 60 + [("b", 1005)] * 3 + [("x", 1025)] * 60  # x: early (window 102)
         + [("y", 990)] * 60 + [("y", 1050)] * 60),                                 # y: out of range
        (1012, [("c", 1011)] * 50 + [("a", 1007)] * 40),
        (1016, [("a", 1008)] * 80 + [("c", 1013)] * 20),                            # a: late (window 100 closed)
    ]
    params = dict(period=10, start=1000, end=1040, allowed_lateness=5, k=2, epsilon=1.0, delta=1e-5, seed=3)
    seen = []
    stream = spark.readStream.schema("item string, t double").json(str(src))
    run = dps.stream_heavy_hitters(stream, "item", time_column="t", now=clock, on_release=seen.append,
                                   max_wait=0.1, **params)
    ref = Windowed(make=lambda: dp.SpaceSaving(4, key_type="str"), clock="wall", now=clock, **params)
    expected = []
    try:
        for n, (now, rows) in enumerate(batches):
            clock.set(now)
            if n == 2:
                run.advance()  # 1016 passed window 100's deadline (1015)
                assert [r.metadata["window"]["index"] for r in run.releases] == [100]
            write_json(src, f"part-{n}.json", rows)
            run.process_all_available()
            rows = sorted(rows, key=lambda kt: (int(kt[1] // 10), kt[0]))
            expected += ref.update(np.array([k for k, _ in rows]), np.array([t for _, t in rows]))
        clock.set(1100)
        run.advance()
        got = run.stop()
    finally:
        run.query.stop()
    expected += ref.close()
    assert [r.metadata["window"]["index"] for r in got] == [100, 101, 102, 103]
    assert seen == got
    for a, b in zip(got, expected):
        same_release(a, b)
        assert a.metadata["window"] == b.metadata["window"]
    counts = [dict(r.items) for r in got]
    assert abs(counts[0]["a"] - 100) < 20  # 60 + 40 on time; the 80 late ones are not counted
    assert abs(counts[1]["c"] - 70) < 20
    assert counts[2] == {} and counts[3] == {}  # x (early) and y (out of range) nowhere
