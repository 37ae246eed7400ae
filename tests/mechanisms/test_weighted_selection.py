"""The weighted Gaussian key selection with one person as the unit (docs/mechanisms/person-weighted.md):
integer weights and their ℓ2 bound, removal of a unit, the threshold's δ against an exact sum,
plans against releases, the front door's options."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import dpsketch as d
from dpsketch.errors import ParameterError
from dpsketch.mechanisms import unit_level as U
from dpsketch.mechanisms import unit_weighted as UW


def _log(rng, units=60, keys=12, max_set=9, int_keys=True):
    sizes = rng.integers(1, max_set + 1, units)
    ids = np.repeat(np.arange(units), sizes)
    ks = rng.integers(0, keys, len(ids))
    ks = np.concatenate([ks, ks[: len(ks) // 3]])  # repeated rows of some (unit, key) pairs
    ids = np.concatenate([ids, ids[: len(ids) // 3]])
    if not int_keys:
        ks = np.array([f"k{x}" for x in ks.tolist()], dtype=object)
    return ks, ids


def _scores(keys, ids, m, seed, scale=UW.WEIGHT_SCALE):
    s = UW.weighted_scores(keys, ids, max_keys_per_unit=m, seed=seed, weight_scale=scale)
    return dict(zip(s.keys.tolist(), s.scores.tolist()))


def test_weights_are_the_exact_floor_and_square_to_at_most_w2():
    for scale in (16, 1000, UW.WEIGHT_SCALE, 1 << 20):
        s = np.arange(1, 200_001, dtype=np.int64)
        w = UW.unit_weights(s, scale)
        assert np.all(s * w * w <= scale * scale) and np.all(s * (w + 1) * (w + 1) > scale * scale)
        assert int(w[0]) == scale
    assert UW.unit_weights([4, 3], 4096).tolist() == [2048, math.isqrt(4096 * 4096 // 3)]


@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("int_keys", [True, False])
def test_kept_keys_and_counts_are_the_exact_routes(m, int_keys):
    rng = np.random.default_rng(m)
    keys, ids = _log(rng, units=300, keys=40, max_set=12, int_keys=int_keys)
    for c in (1, 2):
        s = UW.weighted_scores(keys, ids, max_keys_per_unit=m, max_rows_per_key=c, seed=11)
        b = U.bound_contributions(keys, ids, max_keys_per_unit=m, max_rows_per_key=c, seed=11)
        assert s.keys.tolist() == b.keys.tolist() and s.counts.tolist() == b.counts.tolist()


@pytest.mark.parametrize("m", [1, 2, 5])
def test_removing_a_unit_moves_only_its_own_keys_by_its_weight_brute_force(m):
    # Every unit of a small log, removed in turn: the score vector moves by exactly w_u on the
    # keys u kept (at most m of them) and nowhere else (every other unit's weight and kept set is
    # unchanged), and |S_u|·w_u² <= W² (ℓ2 <= W, i.e. <= 1 person).
    rng = np.random.default_rng(7 + m)
    scale = 64
    for trial in range(3):
        keys, ids = _log(rng, units=25, keys=8, max_set=6)
        full = _scores(keys, ids, m, seed=trial, scale=scale)
        for unit in np.unique(ids).tolist():
            keep = ids != unit
            rest = _scores(keys[keep], ids[keep], m, seed=trial, scale=scale)
            moved = {k: full.get(k, 0) - rest.get(k, 0) for k in set(full) | set(rest)}
            moved = {k: v for k, v in moved.items() if v}
            own = set(keys[~keep].tolist())
            size = min(m, len(own))
            w = int(UW.unit_weights([size], scale)[0])
            assert len(moved) == size and set(moved) <= own and set(moved.values()) == {w}
            assert size * w * w <= scale * scale


def test_scores_do_not_depend_on_row_order():
    rng = np.random.default_rng(3)
    keys, ids = _log(rng, units=200, keys=30)
    perm = rng.permutation(len(keys))
    assert _scores(keys, ids, 4, seed=5) == _scores(keys[perm], ids[perm], 4, seed=5)


def _exact_dgauss_tail(sigma2: float, t: int) -> float:
    """P[Z > t], Z ~ DGauss(σ²), by direct summation over ±60σ (the rest is below 1e-700)."""
    span = int(60 * math.sqrt(sigma2)) + 10
    x = np.arange(-span, span + 1, dtype=np.float64)
    p = np.exp(-x * x / (2 * sigma2))
    return float(p[x > t].sum() / p.sum())


@pytest.mark.parametrize("m", [1, 4, 16, 300])
@pytest.mark.parametrize("counts", [False, True])
def test_threshold_delta_against_an_exact_sum(m, counts):
    # W = 16 keeps σ small enough for the exact sum: δ_τ is recomputed from the exact tail over
    # every set size s <= m of the removed unit; it is within the claim, and τ − 1 is not.
    scale = 16
    p = UW._weighted_plan(1.0, 1e-6, m, 1, counts, 0.5, scale)
    sigma2 = Fraction(*p["noise_param"])
    w = UW.unit_weights(np.arange(1, m + 1), scale).tolist()

    def exact_delta(tau):
        return max(-math.expm1(s * math.log1p(-_exact_dgauss_tail(float(sigma2), tau - ws)))
                   for s, ws in zip(range(1, m + 1), w))

    tau = p["threshold"]
    got = exact_delta(tau)
    assert got <= p["delta_threshold"] <= 1e-6 / 2
    assert exact_delta(tau - 1) > 0.95 * 1e-6 / 2 * 0.5  # τ is not loose by more than the Q bound's step
    assert p["delta"] <= 1e-6 and p["epsilon"] <= 1.0
    # the guarantee: ρ = W²/(2σ²) (+ the counts' c²m/(2σ_c²)) converts to the reported ε at δ/2
    rho = scale * scale / (2 * float(sigma2))
    if counts:
        rho += m / (2 * p["count_sigma2"])
    assert math.isclose(rho, p["rho"], rel_tol=1e-12)


def test_q_bound_is_above_the_exact_tail():
    for sigma2 in (0.3, 2.0, 50.0, 1234.5):
        tail = UW._gauss_tail(math.sqrt(sigma2))
        for t in range(0, int(8 * math.sqrt(sigma2)) + 3):
            assert tail(t) >= _exact_dgauss_tail(sigma2, t)


def test_large_m_blocks_bound_every_size():
    # above 2048 keys, sizes enter τ's δ in blocks (b keys of weight w(a)): never below the exact
    p = UW._weighted_plan(1.0, 1e-6, 5000, 1, False, 0.5)
    tail = UW._gauss_tail(p["sigma"])
    ws = UW.unit_weights(np.arange(1, 5001), UW.WEIGHT_SCALE).tolist()
    exact = max(-math.expm1(s * math.log1p(-tail(p["threshold"] - w))) for s, w in zip(range(1, 5001), ws))
    assert exact <= p["delta_threshold"] <= 1e-6 / 2


def test_plan_is_the_releases_calibration_and_states_both_costs():
    rng = np.random.default_rng(0)
    keys, ids = _log(rng, units=3000, keys=50)
    unit = d.Person(ids, max_keys=8)
    for counts in (True, False):
        plan = d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, unit=d.Person("uid", max_keys=8),
                      selection="weighted_gaussian", counts=counts)
        rel = d.heavy_hitters(keys, epsilon=1.0, delta=1e-6, unit=unit, selection="weighted_gaussian",
                              counts=counts, seed=4)
        assert (rel.mechanism, rel.epsilon, rel.delta, rel.rho) == (plan.mechanism, plan.epsilon, plan.delta, plan.rho)
        assert rel.threshold == plan.threshold and plan.method == rel.metadata["method"] == "exact"
        assert ("count_sigma" in plan.noise) == counts and "rho_selection" in plan.noise
        assert rel.metadata["selection"] == "weighted_gaussian"
        assert plan.release_probability(plan.smallest_count_released[0.95]) >= 0.95


def test_release_is_reproducible_and_selects_the_heavy_keys():
    rng = np.random.default_rng(1)
    ids = np.repeat(np.arange(20_000), 3)
    keys = rng.zipf(1.3, len(ids)) % 1000
    kw = dict(epsilon=1.0, delta=1e-6, unit=d.Person(ids, max_keys=16), selection="weighted_gaussian", seed=9)
    a, b = d.heavy_hitters(keys, **kw), d.heavy_hitters(keys, **kw)
    assert a.items == b.items and a.metadata["reproducible_not_secret"]
    released = {k for k, _ in a.items}
    true = U.bound_contributions(keys, ids, max_keys_per_unit=16, seed=9)
    heavy = set(true.keys[true.counts > 400].tolist())
    assert heavy <= released
    vals = [v for _, v in a.items]
    assert vals == sorted(vals, reverse=True)
    assert a.intervals is not None and all(lo <= hi for lo, hi in a.intervals)


def test_noise_is_calibrated_for_w():
    # the noisy scores of a key far above τ spread with σ = the plan's, in W units
    s = UW.weighted_scores(np.zeros(5000, np.int64), np.arange(5000), max_keys_per_unit=4, seed=0)
    p = UW._weighted_plan(1.0, 1e-6, 4, 1, False, 0.5)
    from dpsketch import _seeds
    gen = _seeds.rng(1, "noise")[0]
    vals = [UW._draw_weighted(s, p, gen)[0][1] * UW.WEIGHT_SCALE - s.scores[0] for _ in range(3000)]
    assert abs(np.std(vals) / p["sigma"] - 1) < 0.06 and abs(np.mean(vals)) < 0.1 * p["sigma"]


@pytest.mark.parametrize("kwargs, msg", [
    (dict(unit=d.Row()), "person-level exact"),
    (dict(unit=d.Person("u", max_rows=4)), "person-level exact"),
    (dict(unit=d.Person("u", max_keys=4), top_k=3), "top_k"),
    (dict(unit=d.Person("u", max_keys=4), noise="laplace"), "laplace"),
    (dict(unit=d.Person("u", max_keys=4), method="bounded_memory"), "person-level exact"),
    (dict(unit=d.Person("u", max_keys=4), selection="weighted"), "selection"),
])
def test_front_door_refuses_what_does_not_go_with_the_weighted_selection(kwargs, msg):
    kwargs = {"selection": "weighted_gaussian", **kwargs}
    with pytest.raises(ParameterError, match=msg):
        d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, **kwargs)


def test_counts_false_needs_the_weighted_selection_and_the_default_is_unchanged():
    with pytest.raises(ParameterError, match="counts=False"):
        d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, unit=d.Person("u", max_keys=4), counts=False)
    p = d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, unit=d.Person("u", max_keys=4))
    assert p.mechanism == "unit.exact[discrete_gaussian]"  # auto keeps the uniform threshold


def test_scores_cannot_be_built_or_pickled():
    import pickle

    s = UW.weighted_scores([1, 2], [1, 1], max_keys_per_unit=2, seed=0)
    with pytest.raises(TypeError):
        UW.WeightedScores()
    with pytest.raises(TypeError):
        pickle.dumps(s)
    with pytest.raises(AttributeError):
        s._m = 5
    assert repr(s) == f"WeightedScores(max_keys_per_unit=2, max_rows_per_key=1, weight_scale={UW.WEIGHT_SCALE})"


def test_empty_and_missing_rows():
    s = UW.weighted_scores([], [], max_keys_per_unit=3, seed=0)
    assert len(s.keys) == 0
    rel = UW.release_weighted(s, epsilon=1.0, delta=1e-6, seed=0)
    assert rel.items == []
    s = UW.weighted_scores([1, None, 2], [5, 6, None], max_keys_per_unit=3, seed=0)
    assert s.keys.tolist() == [1] and s.scores.tolist() == [UW.WEIGHT_SCALE]
