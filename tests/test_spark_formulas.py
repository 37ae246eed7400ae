"""The constants of the Spark routes (docs/privacy.md §Distributed releases), checked against their
defining inequalities; no Spark needed."""

import math

import pytest

from dpsketch import _seeds
from dpsketch import distributed as dpd
from dpsketch._seeds import derive_seed
from dpsketch import spark as dps
from dpsketch.calibration import zcdp_rho_for
from dpsketch.private import zcdp_to_dp


@pytest.mark.parametrize("eps, delta", [(0.1, 1e-6), (1.0, 1e-5), (5.0, 1e-9), (1e-3, 0.3)])
def test_rho_for_is_the_largest_rho_within_epsilon(eps, delta):
    rho = zcdp_rho_for(eps, delta)
    assert zcdp_to_dp(rho, delta) <= eps
    assert zcdp_to_dp(rho * (1 + 1e-9), delta) > eps * (1 - 1e-6)


def _p_ge(eps, t):  # P(DLap(1/eps) >= t), t >= 1 (docs/algorithms.md §1)
    return math.exp(-eps * t) / (1 + math.exp(-eps))


@pytest.mark.parametrize("eps, delta", [(0.1, 1e-6), (0.5, 1e-3), (2.0, 1e-9), (0.01, 0.4)])
def test_lookup_t_is_the_smallest_valid_integer(eps, delta):
    t = dpd.lookup_t(eps, delta)
    assert t >= 1 and _p_ge(eps, t) <= delta
    assert t == 1 or _p_ge(eps, t - 1) > delta


def test_partition_seeds_are_distinct_and_reproducible():
    # the one seed rule (docs/privacy.md §Seeds): each stream its own label
    labels = [f"partition/{p}" for p in range(100)] + ["hash", "noise", "length", "salt", "lookup"]
    seeds = {derive_seed(5, lab) for lab in labels}
    assert len(seeds) == len(labels)
    a, seeded = _seeds.rng(5, "partition/3")
    assert seeded and a.next_u64() == _seeds.rng(5, "partition/3")[0].next_u64()
    assert _seeds.rng(None, "partition/3")[1] is False


def test_aggregated_dyadic_feeding_is_bit_identical(monkeypatch):
    """The sketch route feeds (distinct key, count) pairs; the cells must equal row-by-row feeding,
    also across flushes of the aggregation buffer."""
    import numpy as np
    import pyarrow as pa

    import dpsketch as dp

    monkeypatch.setattr(dps, "_AGGREGATE_FLUSH", 50)
    r = np.random.default_rng(9)
    x = (r.zipf(1.2, size=5000) % 300).astype(np.int64) - 150  # negative keys too
    batches = [pa.RecordBatch.from_arrays([pa.array(x[i:i + 700])], names=["fp"]) for i in range(0, 5000, 700)]
    batches.append(pa.RecordBatch.from_arrays([pa.array([None, 3], type=pa.int64())], names=["fp"]))
    got = dp.DyadicCountSketch(64, width=64, depth=3, seed=4)
    dps._feed_aggregated(got, iter(batches))
    want = dp.DyadicCountSketch(64, width=64, depth=3, seed=4)
    want.update_many(np.append(x, 3).view(np.uint64))
    assert got.to_bytes() == want.to_bytes()


def test_aggregated_feeding_rejects_negative_items_outside_the_sketch_route():
    import pyarrow as pa

    import dpsketch as dp

    s = dp.DyadicCountSketch(64, width=16, depth=2, seed=1)
    batch = pa.RecordBatch.from_arrays([pa.array([1, -2])], names=["v"])
    with pytest.raises(ValueError, match="2\\^64"):
        dps._feed_aggregated(s, iter([batch]), twos_complement=False)
    assert s.n == 0
