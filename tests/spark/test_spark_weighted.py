"""``dpsketch.spark.weighted_heavy_hitters`` (docs/mechanisms/person-weighted.md): the JVM's weights
are the exact integers ⌊W/√s⌋, and its scores equal the in-memory ones when no unit is truncated
(then the kept sets do not depend on the hash)."""

from __future__ import annotations

import numpy as np
import pytest

import dpsketch as d
from dpsketch import spark as dps
from dpsketch.mechanisms import unit_weighted as UW

pytest.importorskip("pyspark")
pytestmark = pytest.mark.spark


def _log(seed, units=400, max_set=6):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_set + 1, units)
    ids = np.repeat(np.arange(units), sizes)
    keys = rng.zipf(1.5, len(ids)) % 60
    return ids, keys


def test_spark_weights_equal_the_exact_integers(spark):
    from pyspark.sql import functions as F

    sizes = list(range(1, 3001)) + [2**20, 2**20 - 1, 4097, 4095]
    df = spark.createDataFrame([(s,) for s in sizes], "s long")
    got = dict(df.select("s", UW.spark_weights(F, F.col("s")).alias("w")).toPandas().itertuples(index=False))
    want = dict(zip(sizes, UW.unit_weights(sizes).tolist()))
    assert got == want


def test_spark_scores_equal_in_memory_without_truncation(spark):
    ids, keys = _log(1)
    df = spark.createDataFrame(list(zip(ids.tolist(), keys.tolist())), "u long, k long")
    rel = dps.weighted_heavy_hitters(df, "k", unit=d.Person("u", max_keys=8), epsilon=1.0, delta=1e-6, seed=2,
                                     counts=False)
    local = UW.weighted_heavy_hitters(keys, ids, epsilon=1.0, delta=1e-6, max_keys_per_unit=8, counts=False, seed=2)
    # m = 8 >= every set size: both keep every key, so the scores and hence (same noise seed) the items agree
    assert rel.items == local.items and len(rel.items) > 0
    assert rel.metadata["front_end"] == "spark" and rel.mechanism == "unit.weighted[discrete_gaussian]"
    assert (rel.epsilon, rel.delta, rel.threshold) == (local.epsilon, local.delta, local.threshold)


def test_spark_refuses_a_row_unit(spark):
    df = spark.createDataFrame([(1, 2)], "u long, k long")
    with pytest.raises(d.errors.ParameterError):
        dps.weighted_heavy_hitters(df, "k", unit=d.Row(), epsilon=1.0, delta=1e-6)
