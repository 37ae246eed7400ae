"""dpsketch.spark on a real local Spark (local[2]; marked `spark`, deselect with -m "not spark").

One SparkSession for the whole test session (small shuffle partitions, UI off). Results must equal
the single-process results on the same data and seeds."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

pyspark = pytest.importorskip("pyspark", reason="pip install '.[spark]' (or the test extra) to run")

import dpsketch as dp  # noqa: E402
from dpsketch import distributed as dpd  # noqa: E402
from dpsketch import spark as dps  # noqa: E402

from conftest import SPARK_PARTS as PARTS, check_unit_utility

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def zipf_ints():
    r = np.random.default_rng(7)
    return (r.zipf(1.3, size=20000) % 5000).astype(np.int64) - 100  # some negative keys


@pytest.fixture(scope="session")
def int_df(spark, zipf_ints):
    import pandas as pd

    return spark.createDataFrame(pd.DataFrame({"x": zipf_ints})).repartition(PARTS).cache()


@pytest.fixture(scope="session")
def words():
    r = np.random.default_rng(8)
    ids = r.zipf(1.4, size=8000) % 2000
    return [f"w{i}" for i in ids]


@pytest.fixture(scope="session")
def str_df(spark, words):
    import pandas as pd

    return spark.createDataFrame(pd.DataFrame({"w": words})).repartition(PARTS).cache()


# -- summarize ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [dp.CountMin, dp.CountSketch])
def test_summarize_linear_bit_identical(int_df, str_df, zipf_ints, words, cls):
    got = dps.summarize(int_df, "x", lambda: cls(128, 4))  # seed drawn once on the driver, shipped
    single = cls(128, 4, hash_seed=got.hash_seed)
    single.update_many(zipf_ints)
    assert got.n == len(zipf_ints)
    assert np.array_equal(got.cells(), single.cells())
    got_s = dps.summarize(str_df, "w", lambda: cls(64, 3, seed=5))
    single_s = cls(64, 3, seed=5)
    single_s.update_many(words)
    assert np.array_equal(got_s.cells(), single_s.cells()) and got_s.key_type == "str"


def test_summarize_dyadic_bit_identical(spark):
    import pandas as pd

    vals = np.random.default_rng(3).integers(0, 1 << 12, size=6000)
    df = spark.createDataFrame(pd.DataFrame({"v": vals})).repartition(3)
    got = dps.summarize(df, "v", lambda: dp.DyadicCountSketch(12, width=64, depth=3, seed=9))
    single = dp.DyadicCountSketch(12, width=64, depth=3, seed=9)
    single.update_many(vals)
    assert got.to_bytes() == single.to_bytes()


@pytest.mark.parametrize("cls", [dp.MisraGries, dp.SpaceSaving])
def test_summarize_counters_guarantee(int_df, zipf_ints, cls):
    got = dps.summarize(int_df, "x", lambda: cls(32))
    exact = Counter(zipf_ints.tolist())
    n = len(zipf_ints)
    assert got.n == n and got.merged
    items = dict(got.items())
    if cls is dp.MisraGries:
        e = got.decrements
        assert e * 33 <= n - sum(items.values())
        assert all(f - e <= items.get(x, 0) <= f for x, f in exact.items())
    else:
        m = got.min_count()
        assert m * 32 <= n
        assert all((f <= items[x] <= f + m) if x in items else f <= m for x, f in exact.items())
    with pytest.raises(ValueError, match="merged"):
        got.release(epsilon=1.0, delta=1e-6, k=4) if cls is dp.SpaceSaving else got.release(epsilon=1.0, delta=1e-6)


@pytest.mark.parametrize("priv, plain", [(dp.PrivateCountSketch, dp.CountSketch), (dp.PrivateCountMin, dp.CountMin)])
def test_trusted_aggregator_equals_single_process_private(int_df, zipf_ints, priv, plain):
    single = priv(96, 5, rho=0.5, seed=11)
    single.update_many(zipf_ints)
    merged = dps.summarize(int_df, "x", lambda: plain(96, 5, hash_seed=single.hash_seed))
    out = priv.from_sketch(merged, rho=0.5, seed=11)
    assert np.array_equal(out.cells(), single.cells())


def test_dyadic_from_sketch_after_spark_merge(spark):
    import pandas as pd

    vals = np.random.default_rng(4).integers(0, 1 << 10, size=3000)
    df = spark.createDataFrame(pd.DataFrame({"v": vals})).repartition(3)
    merged = dps.summarize(df, "v", lambda: dp.DyadicCountSketch(10, width=32, depth=3, seed=21))
    single = dp.PrivateDyadicCountSketch(10, width=32, depth=3, rho=1.0, seed=21)
    single.update_many(vals)
    out = dp.PrivateDyadicCountSketch.from_sketch(merged, rho=1.0, seed=21)
    for lvl in range(1, 11):
        assert np.array_equal(out.level_cells(lvl), single.level_cells(lvl))


# -- counters route ---------------------------------------------------------------------------------

def _by_hand_counter_route(spark, df, column, k, eps, delta, seed, summary="spacesaving", capacity=None, **extra):
    """The counters route run by hand: Spark only tells which partition each row lands in."""
    from pyspark.sql import functions as F

    rows = (df.select(column).where(F.col(column).isNotNull()).repartition(PARTS, F.col(column))
            .withColumn("pid", F.spark_partition_id()).collect())
    per = {}
    for r in rows:
        per.setdefault(r["pid"], []).append(r[column])
    parts, ids = [], []
    for p in sorted(per):
        s = (dp.SpaceSaving if summary == "spacesaving" else dp.MisraGries)(capacity or 2 * k)
        s.update_many(sorted(per[p]))
        parts.append(s)
        ids.append(p)
    return dpd.release_partitions(parts, k=k, epsilon=eps, delta=delta, seed=seed, partition_ids=ids, **extra)


@pytest.mark.parametrize("summary", ["spacesaving", "misragries"])
def test_counters_route_equals_by_hand(spark, int_df, zipf_ints, summary):
    rel = dps.heavy_hitters(int_df, "x", k=20, epsilon=2.0, delta=1e-6, route="counters", summary=summary, seed=5)
    want = _by_hand_counter_route(spark, int_df, "x", 20, 2.0, 1e-6, 5, summary)
    assert rel.items == want.items and rel.threshold == want.threshold
    assert rel.intervals == want.intervals and rel.interval_level == want.interval_level == 0.95  # the same rule
    assert rel.metadata["interval"]["coverage"] == "simultaneous"
    assert rel.epsilon == pytest.approx(2.0) and rel.delta == pytest.approx(1e-6)
    assert rel.metadata["length"] == "private" and rel.n != len(zipf_ints)
    assert rel.metadata["route"] == "counters" and "parallel" in rel.metadata["composition"]
    assert rel.metadata["reproducible_not_secret"]
    exact = Counter(zipf_ints.tolist())
    heavy = {x for x, f in exact.items() if f >= len(zipf_ints) / 20}
    assert heavy and heavy <= set(rel.keys())  # large ε: full recall on these well-separated items


@pytest.mark.parametrize("summary", ["spacesaving", "misragries"])
def test_counters_route_top_k_releases_exactly_n(spark, int_df, zipf_ints, summary):
    # docs/privacy.md §Exact-k: each partition at capacity 64·N and k = capacity, the N largest
    # noisy values of the union (PMG: the cut n̂/k at that k)
    rel = dps.heavy_hitters(int_df, "x", top_k=12, epsilon=2.0, delta=1e-6, summary=summary, seed=5)
    cap = 64 * 12
    want = _by_hand_counter_route(spark, int_df, "x", cap, 2.0, 1e-6, 5, summary, capacity=cap,
                                  cut=None if summary == "spacesaving" else "n/k", top_k=12)
    assert len(rel) == 12 and rel.items == want.items and rel.metadata["qualified"] >= 12
    assert rel.intervals == want.intervals and len(rel.intervals) == 12
    assert rel.metadata["top_k"] == 12 and rel.epsilon == pytest.approx(2.0)
    exact = Counter(zipf_ints.tolist())
    assert len(set(rel.keys()) & {x for x, _ in exact.most_common(12)}) >= 10
    with pytest.raises(ValueError, match="not both"):
        dps.heavy_hitters(int_df, "x", k=5, top_k=12, epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="route='counters'"):
        dps.heavy_hitters(int_df, "x", top_k=12, epsilon=1.0, delta=1e-6, route="sketch")


def test_counters_route_strings(str_df, words):
    rel = dps.heavy_hitters(str_df, "w", k=10, epsilon=2.0, delta=1e-6, route="counters", seed=1)
    exact = Counter(words)
    heavy = {x for x, f in exact.items() if f >= len(words) / 10}
    assert heavy and heavy <= set(rel.keys())
    assert all(exact[x] > 0 for x in rel.keys())


# -- exact route (one row; docs/privacy.md §Exact route, one row) -------------------------------------

@pytest.mark.parametrize("df_name,column,values", [("int_df", "x", "zipf_ints"), ("str_df", "w", "words")])
def test_exact_route_is_the_default_and_equals_the_library_on_any_layout(request, df_name, column, values):
    df, data = request.getfixturevalue(df_name), request.getfixturevalue(values)
    keys, counts = np.unique(np.asarray(data), return_counts=True)
    want = dpd.release_exact_counts(keys, counts, k=20, epsilon=1.0, delta=1e-6, seed=6)
    for layout in (df, df.coalesce(1), df.repartition(3)):
        rel = dps.heavy_hitters(layout, column, k=20, epsilon=1.0, delta=1e-6, seed=6)
        assert rel.items and rel.items == want.items and rel.threshold == want.threshold
    m = rel.metadata
    assert rel.mechanism == "exact[discrete_gaussian]" and m["route"] == "exact" and m["front_end"] == "spark"
    assert rel.n is None and m["length"] == "unused" and m["neighbours"] == "add_remove"
    heavy = {x for x, f in zip(keys.tolist(), counts.tolist()) if f >= len(data) / 20}
    assert heavy and heavy <= set(rel.keys())


def test_exact_route_hides_single_row_keys_and_takes_laplace(spark, zipf_ints):
    import pandas as pd

    singles = np.arange(10**6, 10**6 + 3000, dtype=np.int64)  # 3000 keys of one row each
    df = spark.createDataFrame(pd.DataFrame({"x": np.r_[zipf_ints, singles]})).repartition(PARTS)
    exact = Counter(np.r_[zipf_ints, singles].tolist())
    for noise in ("gaussian", "laplace"):
        rel = dps.heavy_hitters(df, "x", k=20, epsilon=1.0, delta=1e-6, noise=noise, cut=None, seed=2)
        assert rel.items and not set(rel.keys()) & set(singles.tolist())
        assert all(v > rel.threshold and exact[key] > 1 for key, v in rel.items)
        assert rel.mechanism == f"exact[discrete_{noise}]"
    big = dps.heavy_hitters(df, "x", k=20, epsilon=2000.0, delta=1e-6, cut=None, seed=2)  # the noise is 0
    assert big.items and all(v == exact[key] for key, v in big.items)


def test_exact_route_refused_by_the_budget_reads_no_row(int_df):
    def _unreadable(batches):  # nested: pickled by value for the Python workers
        raise RuntimeError("this DataFrame must not be read")
        yield  # a generator, as mapInArrow wants

    unreadable = int_df.mapInArrow(_unreadable, int_df.schema)
    with pytest.raises(dp.errors.BudgetExceededError):
        dps.heavy_hitters(unreadable, "x", k=20, epsilon=1.0, delta=1e-6, budget=dp.Budget(0.5, 1e-6))
    with pytest.raises(Exception, match="must not be read"):  # the same call with budget left does read it
        dps.heavy_hitters(unreadable, "x", k=20, epsilon=1.0, delta=1e-6, budget=dp.Budget(2.0, 1e-5))


def test_route_parameters_choose_or_refuse_a_route(int_df):
    ok = dict(k=20, epsilon=1.0, delta=1e-6, seed=1)
    assert dps.heavy_hitters(int_df, "x", width=64, depth=2, **ok).metadata["route"] == "sketch"
    assert dps.heavy_hitters(int_df, "x", capacity=40, **ok).metadata["route"] == "counters"
    with pytest.raises(ValueError, match="pass route="):
        dps.heavy_hitters(int_df, "x", width=64, capacity=40, **ok)
    with pytest.raises(ValueError, match="do not apply to the exact route"):
        dps.heavy_hitters(int_df, "x", route="exact", public_length=True, **ok)
    with pytest.raises(ValueError, match="noise"):
        dps.heavy_hitters(int_df, "x", route="sketch", noise="laplace", **ok)
    with pytest.raises(ValueError, match="needs k"):
        dps.heavy_hitters(int_df, "x", epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="route must be"):
        dps.heavy_hitters(int_df, "x", route="fast", **ok)


# -- sketch route ------------------------------------------------------------------------------------

def test_sketch_route_int_keys(int_df, zipf_ints):
    rel = dps.heavy_hitters(int_df, "x", k=20, epsilon=2.0, delta=1e-6, route="sketch", width=256, depth=3, seed=3)
    exact = Counter(zipf_ints.tolist())
    heavy = {x for x, f in exact.items() if f >= len(zipf_ints) / 20}
    assert heavy and heavy <= set(rel.keys())
    assert all(exact[x] >= len(zipf_ints) / 40 for x in rel.keys())  # no light keys (-100 is among them)
    assert rel.rho is not None and rel.metadata["route"] == "sketch"


def test_sketch_route_string_keys_lookup(str_df, words):
    rel = dps.heavy_hitters(str_df, "w", k=10, epsilon=2.0, delta=1e-4, route="sketch", width=256, depth=3, seed=3)
    exact = Counter(words)
    heavy = {x for x, f in exact.items() if f >= len(words) / 10}
    assert heavy and heavy <= set(rel.keys())
    assert all(isinstance(x, str) and exact[x] > 0 for x in rel.keys())
    m = rel.metadata
    assert m["tau_lookup"] >= 2 and m["delta_fingerprint"] <= 1e-4 / 3
    assert rel.n != len(words) and m["length"] == "private"  # the sketch's own noisy total
    assert rel.epsilon <= 2.0 + 1e-9


def test_sketch_route_string_keys_at_delta_1e6_uses_128_bit_fingerprints(str_df, words):
    """δ = 10^-6 on string keys: the lookup groups rows by a 128-bit fingerprint computed in the JVM,
    and the collision term is the 128-bit bound of the route's own noisy n_up (docs/privacy.md
    §Sketch route, Collisions), far below δ/3 here as it stays at 10^10 rows."""
    rel = dps.heavy_hitters(str_df, "w", k=10, epsilon=2.0, delta=1e-6, route="sketch", width=256, depth=3, seed=5)
    exact = Counter(words)
    heavy = {x for x, f in exact.items() if f >= len(words) / 10}
    assert heavy and heavy <= set(rel.keys())
    assert all(exact[x] > 0 for x in rel.keys())
    m = rel.metadata
    assert m["fingerprint_bits"] == 128 and "salt2" in m["fingerprint"]
    assert m["delta_fingerprint"] == dpd.fingerprint_delta(m["n_upper"]) <= 1e-6 / 3
    assert m["n_upper"] > len(words) / 2
    assert rel.delta == pytest.approx(1e-6)
    # the released values are noisy counts of rows grouped by the 128-bit fingerprint
    assert all(abs(v - exact[x]) <= 40 for x, v in rel.items)


# -- intervals: the Spark release's equal the single-process one's -----------------------------------

@pytest.mark.parametrize("noise, cut", [("gaussian", "n/k"), ("laplace", None)])
def test_exact_route_intervals_equal_the_single_process_release(int_df, zipf_ints, noise, cut):
    rel = dps.heavy_hitters(int_df, "x", k=20, epsilon=1.0, delta=1e-6, noise=noise, cut=cut, seed=4)
    keys, counts = np.unique(zipf_ints, return_counts=True)
    want = dpd.release_exact_counts(keys, counts, k=20, epsilon=1.0, delta=1e-6, noise=noise, cut=cut, seed=4)
    assert rel.items == want.items and rel.intervals == want.intervals and rel.interval_level == 0.95
    exact = Counter(zipf_ints.tolist())
    assert all(lo <= exact[x] <= hi for (x, _), (lo, hi) in zip(rel.items, rel.intervals))


def test_quantile_release_equals_the_single_process_release(spark):
    import pandas as pd

    vals = np.random.default_rng(11).normal(50, 10, size=5000)
    df = spark.createDataFrame(pd.DataFrame({"v": vals})).repartition(3)
    qs = [0.1, 0.5, 0.9]
    rel = dps.quantiles(df, "v", qs, rho=1.0, bounds=(0, 100), universe_bits=8, seed=2)
    local = dp.PrivateDyadicCountSketch(8, rho=1.0, bounds=(0, 100), seed=2)
    local.update_many(vals)
    want = dp.release.sketch_quantiles_release(local.release(), qs, front_end="spark")
    assert isinstance(rel, dp.Release) and rel.mechanism == want.mechanism == "PrivateDyadicCountSketch"
    assert rel.items == want.items and rel.intervals == want.intervals and rel.interval_level == 0.95
    assert rel.metadata == {**want.metadata, "unit": dp.Row().describe(), "method": "dyadic"}
    assert (rel.epsilon, rel.delta, rel.rho) == (want.epsilon, want.delta, want.rho)
    assert rel.values() == rel.sketch.quantiles(qs).tolist()


def test_sketch_route_string_intervals_cover_the_lookup_counts(str_df, words):
    rel = dps.heavy_hitters(str_df, "w", k=10, epsilon=2.0, delta=1e-6, route="sketch", seed=3)
    exact = Counter(words)
    assert rel.items and rel.interval_level == 0.95 and len(rel.intervals) == len(rel.items)
    assert all(lo <= exact[x] <= hi for (x, _), (lo, hi) in zip(rel.items, rel.intervals))


# -- quantiles ---------------------------------------------------------------------------------------

def test_quantiles(spark):
    import pandas as pd

    vals = np.random.default_rng(5).normal(50, 10, size=20000)
    df = spark.createDataFrame(pd.DataFrame({"v": vals})).repartition(3)
    out = dps.quantiles(df, "v", [0.1, 0.5, 0.9], rho=1.0, bounds=(0, 100), universe_bits=12, seed=2)
    want = np.quantile(vals, [0.1, 0.5, 0.9])
    assert isinstance(out, dp.Release) and [q for q, _ in out.items] == [0.1, 0.5, 0.9]
    assert np.all(np.abs(np.array(out.values()) - want) < 1.5)
    assert out.metadata["rho"] == 1.0 and out.rho == 1.0 and out.sketch is not None


# -- bad input and failures -------------------------------------------------------------------------

def test_empty_dataframe(spark):
    from pyspark.sql import types as T

    df = spark.createDataFrame([], T.StructType([T.StructField("x", T.LongType())]))
    s = dps.summarize(df, "x", lambda: dp.CountMin(16, 2, seed=1))
    assert s.n == 0
    mg = dps.summarize(df, "x", lambda: dp.MisraGries(4))
    assert mg.n == 0 and mg.merged  # counter summaries from Spark are always marked merged
    rel = dps.heavy_hitters(df, "x", k=5, epsilon=1.0, delta=1e-6, route="counters", seed=1)
    assert len(rel) == 0 and rel.metadata["length"] == "private"
    rel = dps.heavy_hitters(df, "x", k=5, epsilon=1.0, delta=1e-6, seed=1)
    assert len(rel) == 0 and rel.metadata["route"] == "exact" and rel.n is None
    rel2 = dps.heavy_hitters(df, "x", k=5, epsilon=1.0, delta=1e-6, route="sketch", width=64, depth=2, seed=1)
    assert len(rel2) == 0


def test_nulls_are_skipped(spark):
    from pyspark.sql import types as T

    data = [(1,), (None,), (2,), (None,), (1,)]
    df = spark.createDataFrame(data, T.StructType([T.StructField("x", T.LongType())]))
    s = dps.summarize(df, "x", lambda: dp.CountMin(16, 2, seed=1))
    assert s.n == 3 and s.estimate(1) >= 2
    sdf = spark.createDataFrame([("a",), (None,)], T.StructType([T.StructField("w", T.StringType())]))
    assert dps.summarize(sdf, "w", lambda: dp.SpaceSaving(4)).n == 1


def test_bad_columns_and_factories(spark, int_df):
    from pyspark.sql import types as T

    bdf = spark.createDataFrame([(True,)], T.StructType([T.StructField("b", T.BooleanType())]))
    with pytest.raises(TypeError, match="cast"):
        dps.summarize(bdf, "b", lambda: dp.CountMin(16, 2))
    with pytest.raises(ValueError, match="no column"):
        dps.heavy_hitters(int_df, "nope", k=5, epsilon=1.0, delta=1e-6)
    fdf = spark.createDataFrame([(1.5,)], T.StructType([T.StructField("f", T.DoubleType())]))
    with pytest.raises(TypeError, match="floats"):
        dps.heavy_hitters(fdf, "f", k=5, epsilon=1.0, delta=1e-6)
    with pytest.raises(TypeError, match="private objects do not merge"):
        dps.summarize(int_df, "x", lambda: dp.PrivateCountMin(16, 2, rho=1.0))
    with pytest.raises(ValueError, match="route"):
        dps.heavy_hitters(int_df, "x", k=5, epsilon=1.0, delta=1e-6, route="other")
    # A task-side error comes back as the same Python exception type, with its message.
    with pytest.raises(ValueError, match="universe_bits|2\\^"):
        dps.summarize(int_df, "x", lambda: dp.DyadicCountSketch(8, width=16, depth=2, seed=1))


def test_mismatched_seeds_cannot_merge():
    a, b = dp.CountSketch(32, 2, seed=1), dp.CountSketch(32, 2, seed=2)
    with pytest.raises(ValueError, match="seed"):
        a.merge(b)


def test_task_retry_does_not_double_count(spark, int_df, zipf_ints):
    """A task that fails once, after feeding some batches, is retried; the result equals the
    no-failure result (Spark keeps only the successful attempt's output)."""
    def fail_first_attempt(batches):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        for i, b in enumerate(batches):
            yield b
            if ctx.partitionId() == 0 and ctx.attemptNumber() == 0 and i == 0:
                raise RuntimeError("injected failure on the first attempt")

    def failed_tasks():
        it = spark.sparkContext._jsc.sc().statusStore().executorList(False).iterator()
        total = 0
        while it.hasNext():
            total += int(it.next().failedTasks())
        return total

    flaky = int_df.mapInArrow(fail_first_attempt, int_df.schema)
    before = failed_tasks()
    got = dps.summarize(flaky, "x", lambda: dp.CountSketch(64, 3, seed=4))
    assert failed_tasks() > before  # the injected failure happened and the task was retried
    clean = dps.summarize(int_df, "x", lambda: dp.CountSketch(64, 3, seed=4))
    assert got.n == clean.n == len(zipf_ints)
    assert np.array_equal(got.cells(), clean.cells())
    rel = dps.heavy_hitters(flaky, "x", k=20, epsilon=2.0, delta=1e-6, route="counters", seed=5)
    rel_clean = dps.heavy_hitters(int_df, "x", k=20, epsilon=2.0, delta=1e-6, route="counters", seed=5)
    assert rel.items == rel_clean.items and rel.n == rel_clean.n


def test_counters_route_does_not_depend_on_row_order_or_input_partitioning(spark, zipf_ints):
    """§8: partitioning by the key alone + sorting inside partitions makes the release a function
    of the multiset of rows: same seed, shuffled rows and other input partitionings -> same output."""
    import pandas as pd

    shuffled = np.random.default_rng(1).permutation(zipf_ints)
    a = spark.createDataFrame(pd.DataFrame({"x": zipf_ints})).repartition(3)
    b = spark.createDataFrame(pd.DataFrame({"x": shuffled})).coalesce(1)
    ra = dps.heavy_hitters(a, "x", k=20, epsilon=1.0, delta=1e-6, route="counters", seed=9)
    rb = dps.heavy_hitters(b, "x", k=20, epsilon=1.0, delta=1e-6, route="counters", seed=9)
    assert ra.items == rb.items and ra.n == rb.n


@pytest.mark.parametrize("df_name,column,values", [("int_df", "x", "zipf_ints"), ("str_df", "w", "words")])
def test_counters_route_two_passes(request, spark, df_name, column, values):
    df, data = request.getfixturevalue(df_name), request.getfixturevalue(values)
    exact = Counter(data.tolist() if hasattr(data, "tolist") else list(data))
    rel = dps.heavy_hitters(df, column, k=20, epsilon=2.0, delta=1e-6, passes=2, cut=None, seed=5)
    want = _by_hand_counter_route(spark, df, column, 20, 2.0, 1e-6, 5, exact_counts=exact, cut=None)
    assert rel.items and rel.items == want.items and rel.threshold == want.threshold
    assert rel.mechanism == "spark.counters[DPSS[two-pass]]" and rel.metadata["passes"] == 2
    # ε large: the noise is 0, the released values are the exact counts
    big = dps.heavy_hitters(df, column, k=20, epsilon=2000.0, delta=1e-6, passes=2, seed=5)
    assert big.items and all(v == exact[key] for key, v in big.items)
    with pytest.raises(ValueError, match="passes=2"):
        dps.heavy_hitters(df, column, k=20, epsilon=1.0, delta=1e-6, passes=2, summary="misragries")
    with pytest.raises(ValueError, match="passes"):
        dps.heavy_hitters(df, column, k=20, epsilon=1.0, delta=1e-6, passes=3)


def test_release_partitions_exact_counts_are_checked():
    s = dp.SpaceSaving(4)
    s.update_many([1, 1, 2, 3])
    with pytest.raises(dp.ParameterError, match="every tracked key"):
        dpd.release_partitions([s], k=2, epsilon=1.0, delta=1e-6, exact_counts={1: 2})
    mg = dp.MisraGries(4)
    mg.update_many([1, 1, 2])
    with pytest.raises(dp.ParameterError, match="DPSS"):
        dpd.release_partitions([mg], k=2, epsilon=1.0, delta=1e-6, exact_counts={1: 2})


# -- every printed guarantee is true by default ---------------------------------------------------

# Two hash partitions whose rows differ by moving one row across them (one `4` replaced by a `0`,
# n unchanged): a threshold reading the exact per-partition length n_p tells the two apart.
_P0 = [2] * 17 + [4, 5, 8, 12, 14] * 3 + [15, 16, 17, 18] * 2
_P1 = [1] * 17 + [0, 3, 6, 7] * 3 + [9, 10, 11, 13, 20] * 2


def _moved_one_row():
    a0, a1 = list(_P0), list(_P1)
    b0, b1 = list(_P0), list(_P1)
    b0.remove(4)
    b1.append(0)
    return (a0, a1), (b0, b1)


def test_counters_route_partitions_do_not_reveal_the_changed_row():
    """Both sides share every noise draw (same seed, same n): with one length for the whole data
    set, partition 0's release of key 2 (count 17 on both sides) is the same on both sides."""
    sides = _moved_one_row()
    differ = 0
    for seed in range(150):
        out = []
        for p0, p1 in sides:
            parts = [dp.SpaceSaving(10), dp.SpaceSaving(10)]
            parts[0].update_many(sorted(p0))
            parts[1].update_many(sorted(p1))
            rel = dpd.release_partitions(parts, k=5, epsilon=1.0, delta=1e-5, seed=seed, cut=None)
            out.append([kv for kv in rel.items if kv[0] == 2])
        differ += out[0] != out[1]
    assert differ == 0


def test_counters_route_cut_keeps_the_values_at_or_above_n_hat_over_k():
    (p0, p1), _ = _moved_one_row()
    for seed in range(5):
        rels = {}
        for cut in ("n/k", None):
            parts = [dp.SpaceSaving(10), dp.SpaceSaving(10)]
            parts[0].update_many(sorted(p0))
            parts[1].update_many(sorted(p1))
            rels[cut] = dpd.release_partitions(parts, k=5, epsilon=1.0, delta=1e-5, seed=seed, cut=cut)
        hh = rels["n/k"].n / 5
        assert rels["n/k"].threshold == hh and rels["n/k"].metadata["cut"] == "n/k"
        assert rels["n/k"].items == [kv for kv in rels[None].items if kv[1] >= hh]
    mg = dp.MisraGries(10)
    mg.update_many(sorted(p0))
    with pytest.raises(dp.ParameterError, match="PMG"):
        dpd.release_partitions([mg], k=5, epsilon=1.0, delta=1e-5, cut=None)


def test_counters_route_default_partitions_come_from_configuration(spark, int_df, zipf_ints):
    """min(spark.sql.shuffle.partitions, default parallelism), whatever the input's rows or layout."""
    parallelism = spark.sparkContext.defaultParallelism  # PARTS, set by the fixture
    assert dps._counters_partitions(spark) == min(PARTS, parallelism)
    old = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        spark.conf.set("spark.sql.shuffle.partitions", "3")
        assert dps._counters_partitions(spark) == 3
        # the default is the explicit count it stands for, on any input layout
        got = dps.heavy_hitters(int_df.coalesce(1), "x", k=10, epsilon=1.0, delta=1e-6, route="counters", seed=4)
        want = dps.heavy_hitters(int_df, "x", k=10, epsilon=1.0, delta=1e-6, num_partitions=3, seed=4)
        assert got.items == want.items and got.items
        spark.conf.set("spark.sql.shuffle.partitions", "200")
        assert dps._counters_partitions(spark) == parallelism
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", old)


def test_counters_route_on_spark_uses_one_length_for_all_partitions(spark):
    import pandas as pd

    (a0, a1), (b0, b1) = _moved_one_row()
    a = spark.createDataFrame(pd.DataFrame({"x": np.array(a0 + a1, dtype=np.int64)}))
    b = spark.createDataFrame(pd.DataFrame({"x": np.array(b0 + b1, dtype=np.int64)}))
    for seed in (1, 2, 3):
        ra = dps.heavy_hitters(a, "x", k=5, epsilon=1.0, delta=1e-5, num_partitions=2, seed=seed, cut=None)
        rb = dps.heavy_hitters(b, "x", k=5, epsilon=1.0, delta=1e-5, num_partitions=2, seed=seed, cut=None)
        assert ra.threshold == rb.threshold and ra.n == rb.n
        assert [kv for kv in ra.items if kv[0] == 2] == [kv for kv in rb.items if kv[0] == 2]


@pytest.mark.parametrize("kept", ["in memory", "in a file"])
def test_budget_is_charged_by_every_spark_release(spark, int_df, tmp_path, kept):
    def new(**caps):  # the same caps, in memory or in a budget file (Budget.open)
        if kept == "in memory":
            return dp.Budget(**caps)
        return dp.Budget.open(tmp_path / f"{'rho' if 'rho' in caps else 'epsilon-delta'}.json", **caps)

    budget = new(epsilon=3.0, delta=1e-5)
    dps.heavy_hitters(int_df, "x", k=20, epsilon=1.0, delta=1e-6, seed=1, budget=budget)
    dps.heavy_hitters(int_df, "x", k=20, epsilon=1.0, delta=1e-6, route="sketch", width=64, depth=2, seed=1,
                      budget=budget)
    assert budget.spent().epsilon <= 2.0 + 1e-12 and budget.spent().epsilon > 1.9
    with pytest.raises(dp.errors.BudgetExceededError):
        dps.heavy_hitters(int_df, "x", k=20, epsilon=1.5, delta=1e-6, seed=1, budget=budget)
    zcdp = new(rho=1.0)
    dps.quantiles(int_df, "x", [0.5], rho=0.75, bounds=(-200, 5000), seed=1, budget=zcdp)
    with pytest.raises(dp.errors.BudgetExceededError):
        dps.quantiles(int_df, "x", [0.5], rho=0.5, bounds=(-200, 5000), seed=1, budget=zcdp)
    assert [s.rho for s in zcdp.ledger] == [0.75]
    if kept == "in a file":  # what another process opening the files sees
        assert [s.rho for s in dp.Budget.open(zcdp.path).ledger] == [0.75]
        assert dp.Budget.open(budget.path).spent() == budget.spent() and len(budget.ledger) == 2


def test_quantiles_skip_nan_and_answer_on_empty_data(spark):
    import pandas as pd
    from pyspark.sql import types as T

    vals = np.r_[np.random.default_rng(5).normal(50, 10, size=2000), [np.nan, np.inf, -np.inf]]
    df = spark.createDataFrame(pd.DataFrame({"v": vals}))
    out = dps.quantiles(df, "v", [0.5], rho=1.0, bounds=(0, 100), universe_bits=10, seed=2)
    assert abs(out.values()[0] - 50) < 3
    empty = spark.createDataFrame([], T.StructType([T.StructField("v", T.DoubleType())]))
    out = dps.quantiles(empty, "v", [0.1, 0.9], rho=1.0, bounds=(0, 100), universe_bits=10, seed=2)
    assert all(isinstance(v, float) for v in out.values())  # noisy answers, never a None for n = 0


def test_quantiles_clamp_out_of_range_integers_row_by_row(spark):
    # One integer outside [0, 2^L) must not fail the job: it is clamped to 0 or 2^L − 1, as
    # dpsketch.mechanisms.unit_level.unit_quantiles and the CLI do, before the unit bound hashes it.
    import pandas as pd

    r = np.random.default_rng(6)
    u = r.integers(0, 40, 600)
    v = r.integers(0, 256, 600)
    dirty = pd.DataFrame({"user": np.r_[u, [1, 2, 3]], "q": np.r_[v, [-5, 2**40, 256]].astype(np.int64)})
    clean = pd.DataFrame({"user": np.r_[u, [1, 2, 3]], "q": np.r_[v, [0, 255, 255]].astype(np.int64)})
    dirty_df, clean_df = (spark.createDataFrame(x).repartition(PARTS) for x in (dirty, clean))
    qs = [0.1, 0.5, 0.9]
    for kw in ({}, {"privacy_id": "user", "max_rows_per_unit": 2}):
        got = dps.quantiles(dirty_df, "q", qs, rho=1.0, universe_bits=8, seed=3, **kw)
        want = dps.quantiles(clean_df, "q", qs, rho=1.0, universe_bits=8, seed=3, **kw)
        assert got.values() == want.values()


# -- user-level privacy (docs/privacy.md §Privacy unit) ----------------------------------------------

@pytest.fixture(scope="session")
def event_df(spark):
    import pandas as pd

    from dpsketch.datasets import event_log

    users, keys = event_log(200_000, universe=5_000, heavy_users=10, heavy_rows=1_000, seed=11)
    return spark.createDataFrame(pd.DataFrame({"user": users, "q": keys})).repartition(PARTS).cache(), users, keys


def test_unit_route_bounds_each_unit_by_its_own_rows(spark, event_df):
    import pandas as pd

    df, users, keys = event_df
    full = dict(zip(*dps._unit_bounded_counts(df, "q", "user", 3, 2, 12345)))
    victim = int(users[np.argmax(np.bincount(users))])  # a heavy user
    mine = users == victim
    rest_df = spark.createDataFrame(pd.DataFrame({"user": users[~mine], "q": keys[~mine]})).repartition(PARTS)
    alone_df = spark.createDataFrame(pd.DataFrame({"user": users[mine], "q": keys[mine]}))
    rest = dict(zip(*dps._unit_bounded_counts(rest_df, "q", "user", 3, 2, 12345)))
    alone = dict(zip(*dps._unit_bounded_counts(alone_df, "q", "user", 3, 2, 12345)))
    assert {k: v - rest.get(k, 0) for k, v in full.items() if v != rest.get(k, 0)} == alone
    assert len(alone) <= 3 and all(v <= 2 for v in alone.values())


def test_unit_route_releases_popular_keys_and_no_single_user_key(event_df):
    df, users, keys = event_df
    rel = dps.heavy_hitters(df, "q", privacy_id="user", max_keys_per_unit=10, epsilon=1.0, delta=1e-6, seed=3)
    check_unit_utility(rel.keys(), users, keys)
    m = rel.metadata
    assert m["privacy_unit"] == "privacy_id" and m["route"] == "exact" and m["front_end"] == "spark"
    assert rel.epsilon <= 1.0 and rel.delta <= 1e-6
    with pytest.raises(ValueError, match="max_keys_per_unit"):
        dps.heavy_hitters(df, "q", privacy_id="user", epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="privacy_id"):
        dps.heavy_hitters(df, "q", k=5, max_keys_per_unit=3, epsilon=1.0, delta=1e-6)


def test_unit_as_a_value_is_the_older_keywords(event_df):
    """``unit=Person(...)`` gives the release of the older keywords, reports the unit, and the
    older keywords warn; a unit given twice, or with the wrong bound, is refused."""
    df, users, keys = event_df
    new = dps.heavy_hitters(df, "q", unit=dp.Person("user", max_keys=10), epsilon=1.0, delta=1e-6, seed=3)
    with pytest.warns(DeprecationWarning, match="unit=dpsketch.Person"):
        old = dps.heavy_hitters(df, "q", privacy_id="user", max_keys_per_unit=10, epsilon=1.0, delta=1e-6, seed=3)
    assert new.items == old.items
    assert new.metadata["unit"] == {"kind": "person", "id": "user", "max_keys": 10, "max_rows_per_key": 1,
                                    "neighbours": "add or remove every row of one privacy id"}
    row = dps.heavy_hitters(df, "q", k=20, epsilon=1.0, delta=1e-6, seed=3)
    assert row.metadata["unit"] == dp.Row().describe()
    with pytest.raises(dp.errors.ParameterError, match="once"):
        dps.heavy_hitters(df, "q", unit=dp.Person("user", max_keys=10), privacy_id="user", epsilon=1.0, delta=1e-6)
    with pytest.raises(dp.errors.ParameterError, match="max_keys"):
        dps.heavy_hitters(df, "q", unit=dp.Person("user", max_rows=10), epsilon=1.0, delta=1e-6)
    with pytest.raises(dp.errors.ParameterError, match="column"):
        dps.heavy_hitters(df, "q", unit=dp.Person(users, max_keys=10), epsilon=1.0, delta=1e-6)
    q_new = dps.quantiles(df, "q", [0.5], rho=1.0, universe_bits=14, unit=dp.Person("user", max_rows=5), seed=2)
    with pytest.warns(DeprecationWarning):
        q_old = dps.quantiles(df, "q", [0.5], rho=1.0, universe_bits=14, privacy_id="user", max_rows_per_unit=5,
                              seed=2)
    assert q_new.items == q_old.items and q_new.metadata["unit"]["max_rows"] == 5
    with pytest.raises(dp.errors.ParameterError, match="max_rows"):
        dps.quantiles(df, "q", [0.5], rho=1.0, universe_bits=14, unit=dp.Person("user", max_keys=5))
    with pytest.raises(dp.errors.ParameterError, match="in memory"):
        dps.quantiles(df, "q", [0.5], epsilon=1.0, universe_bits=14, method="joint")


# -- user-level quantiles --------------------------------------------------------------------------------

def _kept_rows(df, r, salt, kind="int"):
    return Counter(map(tuple, dps._unit_bounded_values(df, "q", "user", kind, r, salt).toPandas()[["u", "v"]]
                       .itertuples(index=False)))


def test_unit_quantiles_bound_each_unit_by_its_own_rows(spark):
    import pandas as pd

    from dpsketch.datasets import event_log

    users, keys = event_log(20_000, universe=500, heavy_users=3, heavy_rows=1_000, seed=12)
    df = spark.createDataFrame(pd.DataFrame({"user": users, "q": keys})).repartition(PARTS)
    full = _kept_rows(df, 4, 777)
    have = Counter(users.tolist())
    per_unit = Counter(u for u, _ in full.elements())
    assert all(per_unit[x] == min(4, have[x]) for x in have)  # exactly min(r, rows) per unit
    heavy = int(users[np.argmax(np.bincount(users))])
    for victim in (heavy, int(users[0])):
        mine = users == victim
        rest_df = spark.createDataFrame(pd.DataFrame({"user": users[~mine], "q": keys[~mine]})).repartition(PARTS)
        alone_df = spark.createDataFrame(pd.DataFrame({"user": users[mine], "q": keys[mine]}))
        assert _kept_rows(rest_df, 4, 777) + _kept_rows(alone_df, 4, 777) == full
    perm = np.random.default_rng(3).permutation(len(users))  # another row order and partitioning
    shuffled = spark.createDataFrame(pd.DataFrame({"user": users[perm], "q": keys[perm]})).repartition(PARTS + 1)
    assert _kept_rows(shuffled, 4, 777) == full


def test_unit_quantiles_on_spark_state_the_unit_guarantee(event_df):
    df, users, keys = event_df
    qs = [0.25, 0.5, 0.75]
    budget = dp.Budget(2.0, 1e-5)
    out = dps.quantiles(df, "q", qs, epsilon=1.0, delta=1e-6, universe_bits=14, privacy_id="user",
                        max_rows_per_unit=5, seed=2, budget=budget)
    m = out.metadata
    assert out.sketch is None and [q for q, _ in out.items] == qs and len(out.values()) == 3
    assert m["privacy_unit"] == "privacy_id" and m["neighbours"] == "add_remove_unit" and m["front_end"] == "spark"
    assert m["route"] == "row_bounded_sketch" and m["max_rows_per_unit"] == 5
    assert m["epsilon"] <= 1.0 and m["delta"] == 1e-6 and "n" not in m
    (spend,) = budget.ledger
    assert spend.epsilon == m["epsilon"] and spend.delta == 1e-6
    # the same calibration as the library's, and quantiles of the bounded data up to a small rank error
    local = dp.mechanisms.unit_level.unit_quantiles(keys, users, qs, epsilon=1.0, delta=1e-6, universe_bits=14, max_rows_per_unit=5, seed=2)
    assert local.metadata["noise_param"] == m["noise_param"]
    kept = np.sort(keys[dp.mechanisms.unit_level.bound_rows_per_unit(keys, users, max_rows_per_unit=5, seed=2)])
    for q, v in zip(qs, out.values()):
        lo, hi = np.searchsorted(kept, v, side="left") / len(kept), np.searchsorted(kept, v, side="right") / len(kept)
        assert lo - 0.03 <= q <= hi + 0.03, (q, v, lo, hi)
    with pytest.raises(ValueError, match="privacy_id"):
        dps.quantiles(df, "q", qs, rho=1.0, universe_bits=14, max_rows_per_unit=5)
    with pytest.raises(ValueError, match="max_rows_per_unit"):
        dps.quantiles(df, "q", qs, rho=1.0, universe_bits=14, privacy_id="user")
    with pytest.raises(ValueError, match="delta"):
        dps.quantiles(df, "q", qs, rho=1.0, universe_bits=14, delta=1e-6)


def test_unit_quantiles_on_spark_skip_nan_and_take_floats(spark):
    import pandas as pd

    v = np.array([1.5, np.nan, -0.0, 0.0, 2.5, 99.0] * 200)
    u = np.repeat(np.arange(300), 4)
    df = spark.createDataFrame(pd.DataFrame({"user": u, "q": v})).repartition(PARTS)
    full = _kept_rows(df, 2, 5, kind="float")
    assert sum(full.values()) == 2 * 300 and not any(np.isnan(x) for _, x in full)
    assert not any(math.copysign(1.0, x) < 0 for _, x in full)  # −0.0 is 0.0
    out = dps.quantiles(df, "q", [0.5], rho=1.0, bounds=(0, 100), privacy_id="user", max_rows_per_unit=2, seed=1)
    assert 0 <= out.values()[0] <= 100 and out.metadata["max_rows_per_unit"] == 2


def test_keys_differing_by_trailing_nuls_are_distinct_keys(spark):
    """numpy's U dtype drops trailing NULs: the exact and unit routes keep the keys as they are."""
    from pyspark.sql import types as T

    keys = ["a", "a\0", "a\0\0"]
    rows = [(x, f"u{i}") for j, x in enumerate(keys) for i in range(200 * (j + 1))]
    df = spark.createDataFrame(rows, T.StructType([T.StructField("q", T.StringType()),
                                                   T.StructField("user", T.StringType())]))
    rel = dps.heavy_hitters(df, "q", k=3, epsilon=8.0, delta=1e-6, cut=None, seed=1)
    assert sorted(x for x, _ in rel.items) == keys
    assert dict(rel.items)["a\0\0"] == pytest.approx(600, abs=10)
    unit = dps.heavy_hitters(df, "q", epsilon=8.0, delta=1e-6, privacy_id="user", max_keys_per_unit=3, seed=1)
    assert sorted(x for x, _ in unit.items) == keys
    assert dict(unit.items)["a"] == pytest.approx(200, abs=10)
    lib = dpd.release_exact_counts(np.array(keys, dtype=object), np.array([200, 400, 600]), k=3, epsilon=8.0,
                                   delta=1e-6, cut=None, seed=1)
    assert lib.items == rel.items


@pytest.mark.parametrize("method, route_args", [
    ("pmg", dict(route="counters", summary="misragries")),
    ("dpss", dict(route="counters")),
    ("exact", dict(route="exact")),
])
def test_method_names_are_the_front_doors(int_df, method, route_args):
    """``method=`` takes the front door's names and gives the release of the route it names."""
    by_method = dps.heavy_hitters(int_df, "x", k=20, epsilon=1.0, delta=1e-6, seed=4, method=method)
    by_route = dps.heavy_hitters(int_df, "x", k=20, epsilon=1.0, delta=1e-6, seed=4, **route_args)
    assert by_method.items == by_route.items and by_method.metadata["method"] == method
    assert by_route.metadata["method"] == method
    with pytest.raises(dp.errors.ParameterError, match="not both"):
        dps.heavy_hitters(int_df, "x", k=20, epsilon=1.0, delta=1e-6, method=method, route="sketch")
