"""The constants of the Spark routes (docs/privacy.md §Distributed releases), checked against their
defining inequalities; no Spark needed."""

import math

import pytest

from dpsketch import _seeds
from dpsketch import distributed as dpd
from dpsketch._seeds import derive_seed
from dpsketch import spark as dps
from dpsketch.accounting.calibration import zcdp_rho_for
from dpsketch.mechanisms.private_sketches import zcdp_to_dp


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


# -- the exact route, one row (docs/privacy.md §Exact route, one row) ---------------------------------

def _zipf_counts(seed=3, n=30_000):
    import numpy as np

    x = np.random.default_rng(seed).zipf(1.3, size=n) % 3000
    return x, *np.unique(x, return_counts=True)


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_exact_counts_release_is_the_unit_route_with_one_row_per_unit(noise):
    import numpy as np

    import dpsketch as dp

    x, keys, counts = _zipf_counts()
    rel = dpd.release_exact_counts(keys, counts, k=None, cut=None, epsilon=1.0, delta=1e-6, noise=noise, seed=4)
    # every row its own unit: bounding with m = c = 1 keeps every row, the bounded counts are the counts
    bounded = dp.mechanisms.unit_level.bound_contributions(x, np.arange(len(x)), max_keys_per_unit=1, max_rows_per_key=1, seed=4)
    unit = dp.mechanisms.unit_level.release_bounded_counts(bounded, epsilon=1.0, delta=1e-6, noise=noise, seed=4)
    assert rel.items and rel.items == unit.items and rel.threshold == unit.threshold
    assert (rel.epsilon, rel.delta) == (unit.epsilon, unit.delta) and rel.epsilon <= 1.0 and rel.delta <= 1e-6
    m = rel.metadata
    assert m["privacy_unit"] == "one stream element" and m["neighbours"] == "add_remove" and rel.n is None
    assert m["length"] == "unused" and m["route"] == "exact" and m["noise_param"] == unit.metadata["noise_param"]


@pytest.mark.parametrize("noise, eps, delta", [("gaussian", 1.0, 1e-6), ("gaussian", 0.3, 1e-9), ("laplace", 1.0, 1e-6),
                                                ("laplace", 5.0, 1e-3)])
def test_exact_counts_threshold_is_the_smallest_that_protects_a_count_of_one(noise, eps, delta):
    from dpsketch.accounting.calibration import dgauss_tail_gt

    rel = dpd.release_exact_counts([1], [1], k=None, cut=None, epsilon=eps, delta=delta, noise=noise, seed=1)
    m = rel.metadata
    tau = m["threshold"]
    num, den = m["noise_param"]
    if noise == "gaussian":
        tail = lambda t: dgauss_tail_gt(num / den, t)  # noqa: E731
        budget = delta / 2
    else:
        tail = lambda t: math.exp(-t * den / num) / (1 + math.exp(den / num))  # noqa: E731
        budget = delta
    # a key held by the removed row alone has count 1: released iff 1 + Z > τ
    assert tail(tau - 1) <= budget and tail(tau - 2) > budget
    assert m["delta_threshold"] == pytest.approx(tail(tau - 1)) and rel.delta <= delta


def test_exact_counts_cut_keeps_values_at_or_above_the_released_mass_over_k():
    _, keys, counts = _zipf_counts()
    every = dpd.release_exact_counts(keys, counts, k=None, cut=None, epsilon=1.0, delta=1e-6, seed=2)
    cut = dpd.release_exact_counts(keys, counts, k=20, epsilon=1.0, delta=1e-6, seed=2)
    mass = sum(v for _, v in every.items)
    assert cut.threshold == mass / 20 and cut.metadata["threshold_inclusive"]
    assert cut.items == [kv for kv in every.items if kv[1] >= mass / 20] and 0 < len(cut.items) < len(every.items)
    assert set(keys[counts >= counts.sum() / 20].tolist()) <= set(cut.keys())


def test_exact_counts_reject_bad_input():
    from dpsketch.errors import ParameterError

    ok = dict(epsilon=1.0, delta=1e-6)
    with pytest.raises(ParameterError, match="distinct"):
        dpd.release_exact_counts([1, 1], [2, 3], k=5, **ok)
    with pytest.raises(ParameterError, match="positive"):
        dpd.release_exact_counts([1, 2], [2, 0], k=5, **ok)
    with pytest.raises(ParameterError, match="aligned"):
        dpd.release_exact_counts([1, 2], [2], k=5, **ok)
    with pytest.raises(ParameterError, match="int64 or str"):
        dpd.release_exact_counts([1.5], [2], k=5, **ok)
    with pytest.raises(ParameterError, match="needs k"):
        dpd.release_exact_counts([1], [2], k=None, **ok)
    with pytest.raises(ParameterError, match="noise"):
        dpd.release_exact_counts([1], [2], k=2, noise="uniform", **ok)
    assert dpd.release_exact_counts(["b", "a"], [9_000, 8_000], k=None, cut=None, epsilon=50.0, delta=1e-6,
                                    seed=1).keys() == ["b", "a"]


def test_default_route_follows_the_parameters_asked():
    assert dps._default_route(**dps._SKETCH_DEFAULTS, **dps._COUNTERS_DEFAULTS) == "exact"
    sketch = dict(dps._COUNTERS_DEFAULTS, **dps._SKETCH_DEFAULTS)
    for name, v in (("width", 2048), ("depth", 5), ("gamma", 0.01), ("rho_fraction", 0.8)):
        assert dps._default_route(**dict(sketch, **{name: v})) == "sketch"
    for name, v in (("summary", "misragries"), ("capacity", 64), ("num_partitions", 3), ("passes", 2),
                    ("public_length", True), ("length_epsilon", 0.1), ("length_delta", 1e-7)):
        assert dps._default_route(**dict(sketch, **{name: v})) == "counters"
    with pytest.raises(ValueError, match="route="):
        dps._default_route(**dict(sketch, width=64, capacity=8))
