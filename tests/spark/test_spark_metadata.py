"""Nothing a Spark route publishes may follow the input's layout or say whether it holds rows
(docs/privacy.md §Counters route, §Sketch route; marked `spark`).

Three DataFrames are read from CSV files of different sizes -- no data row, one row, many rows --
under a small ``spark.sql.files.maxPartitionBytes``, so Spark splits them into different numbers of
input partitions (the one-row file and the many-row one differ; as 1,023 and 1,024 rows would at
a smaller size). Every route of dpsketch.spark must publish the same metadata keys on all three,
and the same value for every field that is not a noisy output; adaptive query execution (Spark's default) runs no task on an
empty shuffle, which must not show either."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("pyspark", reason="pip install '.[spark]' (or the test extra) to run")

from dpsketch import spark as dps  # noqa: E402

from conftest import SPARK_PARTS  # noqa: E402

pytestmark = pytest.mark.spark

# Fields computed from the noise (the noisy length, its bounds, cuts read off it, how many noisy
# values qualified): they differ between data sets by design. Every other field must not.
NOISY = {"n_used", "n_lower", "n_upper", "final_cut", "descent_threshold", "delta_fingerprint", "lookup_threshold_strict",
         "threshold_inclusive", "qualified"}

# Interval rule fields read off the released values (post-processing: the length bound, the
# summary error it gives, the number of released items in a union bound); the rest of the rule is public.
NOISY_PATHS = ("interval.n_bound", "interval.summary_error", "interval.noise", "above_threshold")

SCHEMA = "key string, ikey long, uid string, v double, t long"
ROWS = {"empty": 0, "one": 1, "many": 3000}


def _write(path, n: int) -> None:
    rows = (f"k{i % 7 if i % 3 else 0},{i % 11 if i % 2 else 5},u{i % 50},{(i * 37) % 100}.5,{i % 7200}\n"
            for i in range(n))
    with open(path, "w") as f:
        f.write("key,ikey,uid,v,t\n")
        f.writelines(rows)


@pytest.fixture(scope="module")
def frames(spark, tmp_path_factory):
    """name -> DataFrame read from its own CSV file; the read splits files into 2 kB partitions
    while this module runs (the conf is read when a query is planned)."""
    conf = {"spark.sql.files.maxPartitionBytes": "2048", "spark.sql.files.openCostInBytes": "0"}
    old = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    d = tmp_path_factory.mktemp("layout")
    out = {}
    for name, n in ROWS.items():
        _write(d / f"{name}.csv", n)
        out[name] = spark.read.csv(str(d / f"{name}.csv"), header=True, schema=SCHEMA)
    yield out
    for k, v in old.items():
        if v is None:
            spark.conf.unset(k)
        else:
            spark.conf.set(k, v)


def _flat(x, prefix: str = "") -> dict:
    """Nested dicts and lists of dicts as one dict of dotted paths."""
    if isinstance(x, dict):
        out: dict = {}
        for k, v in x.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(x, list) and x and all(isinstance(v, dict) for v in x):
        out = {}
        for i, v in enumerate(x):
            out.update(_flat(v, f"{prefix}[{i}]"))
        return out
    return {prefix: x}


def _published(rel) -> dict:
    """What a release states besides its items: mechanism, guarantee and metadata."""
    if isinstance(rel, list):  # a window series
        return {f"w{i}": _published(r) for i, r in enumerate(rel)}
    return {"mechanism": rel.mechanism, "epsilon": rel.epsilon, "delta": rel.delta, "metadata": rel.metadata}


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


E, D = 1.0, 1e-6
ROUTES = {
    "exact": lambda df: dps.heavy_hitters(df, "key", k=5, epsilon=E, delta=D, seed=1),
    "counters.dpss": lambda df: dps.heavy_hitters(df, "key", k=5, epsilon=E, delta=D, route="counters", seed=1),
    "counters.pmg": lambda df: dps.heavy_hitters(df, "ikey", k=5, epsilon=E, delta=D, summary="misragries", seed=1),
    "counters.top_k": lambda df: dps.heavy_hitters(df, "key", top_k=3, epsilon=E, delta=D, seed=1),
    "counters.two_pass": lambda df: dps.heavy_hitters(df, "key", k=5, epsilon=E, delta=D, passes=2, seed=1),
    "sketch.str": lambda df: dps.heavy_hitters(df, "key", k=5, epsilon=E, delta=D, route="sketch", width=64,
                                               depth=2, seed=1),
    "sketch.int": lambda df: dps.heavy_hitters(df, "ikey", k=5, epsilon=E, delta=D, route="sketch", width=64,
                                               depth=2, seed=1),
    "unit": lambda df: dps.heavy_hitters(df, "key", epsilon=E, delta=D, privacy_id="uid", max_keys_per_unit=2,
                                         seed=1),
    "quantiles": lambda df: dps.quantiles(df, "v", [0.5], rho=1.0, bounds=(0, 100), universe_bits=8, seed=1),
    "quantiles.unit": lambda df: dps.quantiles(df, "v", [0.5], rho=1.0, bounds=(0, 100), universe_bits=8, seed=1,
                                               privacy_id="uid", max_rows_per_unit=3),
    "windows": lambda df: dps.windowed_heavy_hitters(df, "key", time_column="t", period=3600, start=0, end=7200,
                                                     k=5, epsilon=E, delta=D, seed=1),
}


def test_the_frames_differ_in_layout(frames):
    parts = {name: df.rdd.getNumPartitions() for name, df in frames.items()}
    assert parts["one"] < parts["many"], parts  # else the test below would compare equal layouts


@pytest.mark.parametrize("route", list(ROUTES))
def test_metadata_does_not_follow_the_rows_or_the_layout(frames, route):
    got = {name: _flat(_published(ROUTES[route](df))) for name, df in frames.items()}
    keys = {name: set(f) for name, f in got.items()}
    assert keys["empty"] == keys["one"] == keys["many"], {n: sorted(k ^ keys["many"]) for n, k in keys.items()}
    for path in sorted(keys["many"]):
        if path.rsplit(".", 1)[-1] in NOISY or path.endswith(NOISY_PATHS):
            continue
        vals = [got[name][path] for name in ROWS]
        assert all(_same(v, vals[0]) for v in vals), f"{route}: {path} = {dict(zip(ROWS, vals))}"
    if route.startswith("counters") or route == "windows":
        parts = [v for p, v in got["empty"].items() if p.rsplit(".", 1)[-1] == "partitions"]
        assert parts and set(parts) == {SPARK_PARTS}  # the configured P, also with no task run
