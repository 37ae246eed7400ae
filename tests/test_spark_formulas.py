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


def test_fingerprint_bound_admits_delta_1e6_at_1e10_rows():
    """docs/privacy.md §Sketch route, Collisions: P(F) <= n_up²/2^(bits+1), refused above δ/3. With
    64-bit fingerprints δ = 10^-6 stops near 3.5·10^6 rows (10^9 rows needs δ >= 0.08); with the
    128-bit lookup fingerprint it admits 10^10 rows with room to spare."""
    delta = 1e-6
    assert dpd.FINGERPRINT_BITS == 128
    assert dpd.fingerprint_delta(1e9, bits=64) == pytest.approx(1e18 / 2**65)
    assert dpd.fingerprint_delta(1e9, bits=64) > delta / 3  # the 64-bit bound refuses at 10^9 rows
    assert 3 * dpd.fingerprint_delta(1e8, bits=64) == pytest.approx(8.1e-4, rel=0.01)
    assert dpd.fingerprint_delta(1e10) == pytest.approx(1e20 / 2**129)
    assert dpd.fingerprint_delta(1e10) <= delta / 3
    largest = math.sqrt(delta / 3 * 2.0**129)  # the most rows δ = 10^-6 admits
    assert 1e16 < largest < 2e16
    assert dpd.fingerprint_delta(largest * 1.001) > delta / 3 >= dpd.fingerprint_delta(largest * 0.999)


def _lookup(found, seed=4):
    return dpd.lookup_labels([7, 9], found, epsilon=1.0, delta=1e-6, n_hat=0.0, k=1, rng=_seeds.rng(seed, "lookup")[0])


def test_lookup_separates_labels_that_share_the_sketch_fingerprint():
    """Two labels with one 64-bit sketch fingerprint φ₁ and different 128-bit fingerprints: removing
    the row of the count-1 label must not change what the other label releases (a 64-bit lookup
    grouped them, saw two labels and released neither, so that one row decided the heavy label's
    release)."""
    heavy = {(7, 11): (500, 1, "heavy")}
    with_light = {**heavy, (7, 12): (1, 1, "light")}
    for seed in range(20):
        got, _, tau = _lookup(with_light, seed)
        want, _, _ = _lookup(heavy, seed)
        assert [x for x in got if x[0] == "heavy"] == want and want and want[0][1] >= tau
    # a true 128-bit collision (two labels on one fingerprint) still releases nothing for it
    assert _lookup({(7, 11): (500, 2, "heavy")})[0] == []
    # a fingerprint whose φ₁ is not a candidate is not looked up
    assert _lookup({(8, 11): (500, 1, "other")})[0] == []


def test_sketch_route_refusal_reads_the_128_bit_bound():
    route = dpd.SketchRoute(k=10, epsilon=1.0, delta=1e-6, strings=True, seed=1)
    assert route.salt != route.salt2 and 0 <= route.salt2 < 2**63
    proto = route.prototype(width=64, depth=2)
    proto.update_many(__import__("numpy").arange(1000, dtype=__import__("numpy").uint64) % 5)
    route.candidates(proto)
    assert route.delta_fingerprint == dpd.fingerprint_delta(route.n_up) <= 1e-6 / 3
    m = route.release({}).metadata
    assert m["fingerprint_bits"] == 128 and m["delta_fingerprint"] == route.delta_fingerprint
