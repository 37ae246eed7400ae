"""User-level quantiles and the bounded-memory heavy-hitter route (docs/privacy.md §Privacy unit):
the row bound reads only a unit's own rows, the dyadic sketch's unit-level sensitivities by brute
force against what calibration uses, the unit-level metadata and budget charges, the compact row
limiter, and utility on the event log."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

import dpsketch as d
from dpsketch import _core
from dpsketch.mechanisms import unit_level as U
from dpsketch.accounting.calibration import unit_group_guarantee, zcdp_epsilon
from dpsketch.datasets import distinct_units_per_key, event_log

from conftest import check_unit_utility


def _kept(values, ids, r, seed) -> Counter:
    """The multiset of kept (unit, value) rows."""
    mask = d.mechanisms.unit_level.bound_rows_per_unit(values, ids, max_rows_per_unit=r, seed=seed)
    return Counter(zip(np.asarray(ids)[mask].tolist(), np.asarray(values)[mask].tolist()))


# -- U3: the quantile row bound reads only the unit's own rows ----------------------------------------
@pytest.mark.parametrize("kind", ["int", "str"])
@pytest.mark.parametrize("vals", ["int", "float"])
def test_row_bound_depends_only_on_the_units_rows(kind, vals, rng):
    n = 5000
    users = rng.integers(0, 400, n)
    values = rng.integers(0, 30, n)  # many equal values per unit
    if vals == "float":
        values = values * 0.5 - 3.0
    if kind == "str":
        users = np.array([f"u{x}" for x in users])
    full = _kept(values, users, 4, seed=9)
    per_unit = Counter(u for u, _ in full.elements())
    have = Counter(users.tolist())
    assert all(per_unit[x] == min(4, have[x]) for x in have)  # exactly min(r, rows) per unit
    for victim in np.unique(users)[:12]:
        mine = users == victim
        rest = _kept(values[~mine], users[~mine], 4, seed=9)
        alone = _kept(values[mine], users[mine], 4, seed=9)
        assert rest + alone == full  # the others keep the same rows; the unit keeps what it keeps alone
    for _ in range(3):  # the order of the rows does not matter
        perm = rng.permutation(n)
        assert _kept(values[perm], users[perm], 4, seed=9) == full


def test_row_bound_treats_equal_rows_as_interchangeable_and_minus_zero_as_zero():
    ids = np.array([1, 1, 1, 1, 1, 2, 2])
    vals = np.array([0.0, -0.0, 0.0, 5.0, 5.0, 1.0, 1.0])
    a = _kept(vals, ids, 3, seed=4)
    b = _kept(np.array([-0.0, 0.0, -0.0, 5.0, 5.0, 1.0, 1.0]), ids, 3, seed=4)
    assert a == b and sum(a.values()) == 5
    # a different salt may keep different rows, always 3 of unit 1 and both of unit 2
    for s in range(20):
        got = _kept(vals, ids, 3, seed=s)
        assert sum(c for (u, _), c in got.items() if u == 1) == 3 and got[(2, 1.0)] == 2


# -- U1: unit-level sensitivity of the dyadic sketch, brute force ---------------------------------------
@pytest.mark.parametrize("r", [1, 2, 3])
def test_dyadic_unit_sensitivity_brute_force(r):
    """Every unit of up to r + 1 rows over a universe of 8 values, next to a fixed background: after
    the row bound, the cells move by at most what calibration uses (ℓ1 = r·Σ d_ℓ, ℓ2² = r²·Σ d_ℓ),
    per level and in total, and both totals are attained."""
    bits, width, depth = 3, 2, 2  # levels 1-2 exact, level 3 a CountSketch
    proto = d.DyadicCountSketch(bits, width=width, depth=depth, seed=3)
    assert proto.exact_levels == 2
    sens = U.unit_dyadic_sensitivities(bits, proto.exact_levels, depth, r)
    assert sens == [(r, r * r), (r, r * r), (depth * r, depth * r * r)]

    def cells(values, ids):
        s = d.DyadicCountSketch.from_bytes(proto.to_bytes())
        keep = d.mechanisms.unit_level.bound_rows_per_unit(values, ids, max_rows_per_unit=r, seed=1)
        s.update_many(np.asarray(values, dtype=np.int64)[keep])
        return [s.level_cells(j).astype(np.int64).ravel() for j in range(1, bits + 1)]

    background = ([0, 3, 3, 7, 5], [10, 10, 11, 12, 12])
    base = cells(*background)
    per_level = [(0, 0)] * bits
    tot1 = tot2 = 0
    for size in range(1, r + 2):
        for unit in itertools.combinations_with_replacement(range(8), size):
            vals = list(background[0]) + list(unit)
            ids = list(background[1]) + [99] * size
            diff = [a - b for a, b in zip(cells(vals, ids), base)]
            l1 = [int(np.abs(x).sum()) for x in diff]
            l2 = [int((x * x).sum()) for x in diff]
            per_level = [(max(a, x), max(b, y)) for (a, b), x, y in zip(per_level, l1, l2)]
            tot1, tot2 = max(tot1, sum(l1)), max(tot2, sum(l2))
    assert per_level == sens  # per level: the bound holds and is attained
    assert tot1 == sum(a for a, _ in sens) and tot2 == sum(b for _, b in sens)  # the totals calibration uses


def test_calibration_is_computed_once_from_the_unit_sensitivities():
    rel = d.mechanisms.unit_level.unit_quantiles([1, 2, 3], [1, 1, 2], [0.5], max_rows_per_unit=7, universe_bits=10, rho=0.3, seed=1)
    m = rel.metadata
    s = d.DyadicCountSketch(10, seed=1)
    sens = U.unit_dyadic_sensitivities(10, s.exact_levels, s.depth, 7)
    row = U.unit_dyadic_sensitivities(10, s.exact_levels, s.depth, 1)
    assert m["l2_sensitivity_squared_total"] == sum(b for _, b in sens) == 49 * sum(b for _, b in row)
    assert m["noise_param"] == list(_core.release.gaussian_sigma2(m["l2_sensitivity_squared_total"], 0.3))
    num, den = m["noise_param"]
    assert m["rho"] == pytest.approx(m["l2_sensitivity_squared_total"] * den / (2 * num)) and m["rho"] <= 0.3
    # group privacy on ρ would run the row-level sketch at ρ/r², rounded down to 2^-32 again: never less noise
    per_row = d.PrivateDyadicCountSketch(10, rho=0.3 / 49, noise_allocation="joint", seed=1)
    assert per_row.privacy()["sigma2"] >= m["sigma2"]
    lap = d.mechanisms.unit_level.unit_quantiles([1, 2, 3], [1, 1, 2], [0.5], max_rows_per_unit=7, universe_bits=10, epsilon=0.5, seed=1)
    assert lap.metadata["l1_sensitivity_total"] == 7 * sum(a for a, _ in row)
    assert lap.epsilon <= 0.5 and lap.delta == 0


# -- U5: metadata of every new release ------------------------------------------------------------------
def _assert_unit_metadata(rel, r, route):
    m = rel.metadata
    assert m["privacy_unit"] == "privacy_id" and m["neighbours"] == "add_remove_unit"
    assert m["route"] == route and m["max_rows_per_unit"] == r
    assert rel.guarantee.privacy_unit == "privacy_id" and rel.guarantee.neighbours == "add_remove_unit"
    assert "n" not in m and not any("unit" in k and "count" in k for k in m)


@pytest.mark.parametrize("params", [{"rho": 0.5}, {"rho": 0.5, "delta": 1e-6}, {"epsilon": 1.0},
                                    {"epsilon": 1.0, "delta": 1e-6}])
def test_unit_quantiles_metadata_and_budget(params):
    users, keys = event_log(20_000, universe=2_000, heavy_users=3, heavy_rows=500, seed=5)
    budget = d.Budget(5.0, 1e-5) if "epsilon" in params and "delta" in params else d.Budget(rho=2.0)
    rel = d.mechanisms.unit_level.unit_quantiles(keys, users, [0.25, 0.5], max_rows_per_unit=8, universe_bits=12, seed=3, budget=budget,
                           **params)
    _assert_unit_metadata(rel, 8, "row_bounded_sketch")
    assert rel.n is None and rel.threshold is None and rel.sketch is None
    assert [q for q, _ in rel.items] == [0.25, 0.5] and rel.metadata["reproducible_not_secret"] is True
    (spend,) = budget.ledger
    if "rho" in params:
        assert rel.rho <= 0.5 and spend.rho == rel.rho
        if "delta" in params:
            assert rel.delta == 1e-6 and rel.epsilon == pytest.approx(zcdp_epsilon(rel.rho, 1e-6))
        else:
            assert rel.epsilon is None and rel.delta is None
    elif "delta" in params:
        assert rel.epsilon <= 1.0 and rel.delta == 1e-6 and spend.epsilon == rel.epsilon and spend.delta == 1e-6
    else:
        assert rel.epsilon <= 1.0 and rel.delta == 0 and rel.rho is None and spend.epsilon == rel.epsilon
    assert repr(rel).startswith("Release(mechanism='unit.quantiles")


@pytest.mark.parametrize("params", [{"rho": 0.5}, {"rho": 0.5, "delta": 1e-6}, {"epsilon": 1.0},
                                    {"epsilon": 1.0, "delta": 1e-6}])
@pytest.mark.parametrize("shape", [{"universe_bits": 12}, {"bounds": (0.0, 4096.0), "universe_bits": 20}])
def test_unit_quantiles_cost_is_what_the_release_reports(params, shape):
    users, keys = event_log(5_000, universe=2_000, heavy_users=2, heavy_rows=300, seed=6)
    cost = d.mechanisms.unit_level.unit_quantiles_cost(max_rows_per_unit=7, **shape, **params)
    rel = d.mechanisms.unit_level.unit_quantiles(keys, users, [0.5], max_rows_per_unit=7, seed=1, **shape, **params)
    m = rel.metadata
    for field in ("noise", "max_rows_per_unit", "universe_bits", "width", "depth", "exact_levels",
                  "l1_sensitivity_total", "l2_sensitivity_squared_total", "epsilon", "delta", "rho"):
        assert cost[field] == m[field], field
    scale = "sigma2" if m["noise"] == "discrete_gaussian" else "laplace_scale"
    assert cost[scale] == m[scale]
    assert cost["resolution"] == (1.0 if "bounds" not in shape else 4096.0 / 2**20)


@pytest.mark.parametrize("bad,exc", [
    ({"max_rows_per_unit": 0, "universe_bits": 8, "rho": 1}, ValueError),
    ({"max_rows_per_unit": 1, "universe_bits": 8}, ValueError),
    ({"max_rows_per_unit": 1, "universe_bits": 8, "rho": 1, "epsilon": 1}, ValueError),
    ({"max_rows_per_unit": 1, "rho": 1}, ValueError),
    ({"max_rows_per_unit": 1, "universe_bits": 53, "bounds": (0, 1), "rho": 1}, ValueError),
    ({"max_rows_per_unit": 1, "universe_bits": 8, "bounds": (1, 0), "rho": 1}, ValueError),
    ({"max_rows_per_unit": 1, "universe_bits": 8, "gamma": 1.5, "rho": 1}, ValueError),
    ({"max_rows_per_unit": 1, "universe_bits": 8, "epsilon": 1, "delta": 2}, ValueError),
])
def test_unit_quantiles_cost_refuses_what_the_release_refuses(bad, exc):
    with pytest.raises(exc):
        d.mechanisms.unit_level.unit_quantiles_cost(**bad)
    with pytest.raises(exc):
        d.mechanisms.unit_level.unit_quantiles([1], [1], [0.5], **bad)


def test_unit_quantiles_bad_input_and_refusals_spend_nothing():
    b = d.Budget(rho=0.1)
    with pytest.raises(d.errors.BudgetExceededError):
        d.mechanisms.unit_level.unit_quantiles([1, 2], [1, 2], [0.5], max_rows_per_unit=1, universe_bits=4, rho=0.2, budget=b)
    assert not b.ledger
    with pytest.raises(d.ParameterError, match="exactly one"):
        d.mechanisms.unit_level.unit_quantiles([1], [1], [0.5], max_rows_per_unit=1, universe_bits=4)
    with pytest.raises(d.ParameterError, match="same length"):
        d.mechanisms.unit_level.unit_quantiles([1, 2], [1], [0.5], max_rows_per_unit=1, universe_bits=4, rho=1)
    with pytest.raises(d.ParameterError, match="same length"):
        d.mechanisms.unit_level.unit_quantiles([1.0, float("nan")], [1], [0.5], max_rows_per_unit=1, bounds=(0, 1), rho=1)
    with pytest.raises(d.ParameterError, match="quantile levels"):
        d.mechanisms.unit_level.unit_quantiles([1], [1], [1.5], max_rows_per_unit=1, universe_bits=4, rho=1)
    with pytest.raises(TypeError):
        d.mechanisms.unit_level.unit_quantiles([True], [1], [0.5], max_rows_per_unit=1, universe_bits=4, rho=1)
    for bad in (0, -2, 1.5, True):
        with pytest.raises((ValueError, TypeError)):
            d.mechanisms.unit_level.unit_quantiles([1], [1], [0.5], max_rows_per_unit=bad, universe_bits=4, rho=1)
    empty = d.mechanisms.unit_level.unit_quantiles([], [], [0.5], max_rows_per_unit=3, bounds=(0.0, 1.0), rho=1, seed=2)
    assert len(empty.items) == 1


def test_unit_quantiles_decide_each_row_on_its_own():
    # No row decides between an error and a release: NaN and None rows are dropped before the
    # bound, integers outside [0, 2^L) are clamped to its ends, ±inf to the bounds. Same seed: the
    # release equals that of the cleaned rows.
    def same(dirty_v, dirty_u, clean_v, clean_u, **kw):
        kw = dict(max_rows_per_unit=2, rho=1.0, seed=9, **kw)
        got = d.mechanisms.unit_level.unit_quantiles(dirty_v, dirty_u, [0.1, 0.5, 0.9], **kw)
        want = d.mechanisms.unit_level.unit_quantiles(clean_v, clean_u, [0.1, 0.5, 0.9], **kw)
        assert got.items == want.items

    rng = np.random.default_rng(4)
    u = rng.integers(0, 50, 400)
    ints = rng.integers(0, 256, 400)
    big = np.array([-5, 2**40, -(2**62), 256], dtype=np.int64)
    same(np.r_[ints, big], np.r_[u, [60, 61, 62, 63]], np.r_[ints, [0, 255, 0, 255]], np.r_[u, [60, 61, 62, 63]],
         universe_bits=8)
    same(np.r_[ints, [2**63 + 7]].astype(np.uint64), np.r_[u, [70]], np.r_[ints, [255]], np.r_[u, [70]],
         universe_bits=8)
    same(ints.tolist() + [None, -3, 2**70], u.tolist() + [80, 81, 82], ints.tolist() + [0, 255],
         u.tolist() + [81, 82], universe_bits=8)
    reals = rng.uniform(0, 10, 400)
    same(np.r_[reals, [np.nan, np.inf, -np.inf, np.nan]], np.r_[u, [1, 90, 91, 4]], np.r_[reals, [10.0, 0.0]],
         np.r_[u, [90, 91]], bounds=(0, 10))
    same(reals.tolist() + [None, np.float32("nan"), float("nan")], u.tolist() + [5, 6, 7], reals, u,
         bounds=(0, 10))
    # a unit whose rows are all NaN contributes nothing; the bound of the others is unchanged
    v = np.r_[reals, [np.nan] * 5]
    uu = np.r_[u, [99] * 5]
    mask = d.mechanisms.unit_level.bound_rows_per_unit(v, uu, max_rows_per_unit=2, seed=3)
    assert not mask[-5:].any()
    assert (mask[:-5] == d.mechanisms.unit_level.bound_rows_per_unit(reals, u, max_rows_per_unit=2, seed=3)).all()


# -- utility on the event log ---------------------------------------------------------------------------
def test_unit_quantiles_track_the_bounded_data_on_the_event_log():
    users, keys = event_log(300_000, universe=20_000, heavy_users=20, heavy_rows=2_000, seed=7)
    qs = [0.1, 0.25, 0.5, 0.75, 0.9]
    rel = d.mechanisms.unit_level.unit_quantiles(keys, users, qs, max_rows_per_unit=10, bounds=(0, 2**15), epsilon=1.0, delta=1e-6, seed=4)
    kept = np.sort(keys[d.mechanisms.unit_level.bound_rows_per_unit(keys, users, max_rows_per_unit=10, seed=4)])
    for q, v in rel.items:  # v is a q-quantile of the kept values up to a rank error of 2%
        below = np.searchsorted(kept, v, side="left") / len(kept)
        upto = np.searchsorted(kept, v, side="right") / len(kept)
        assert below - 0.02 <= q <= upto + 0.02, (q, v, below, upto)
    # the bots' 20 single-user keys (about 13% of the rows) do not drag the top quantile up
    assert rel.items[-1][1] < np.quantile(keys, 0.9)


# -- the bounded-memory route ---------------------------------------------------------------------------
def _feed(stream, users, keys, chunk=37_000):
    for i in range(0, len(keys), chunk):
        stream.update(keys[i:i + chunk], users[i:i + chunk])


@pytest.mark.parametrize("summary,k", [("spacesaving", 50), ("misragries", None)])
def test_unit_stream_releases_at_the_unit_level(summary, k):
    users, keys = event_log(200_000, universe=5_000, heavy_users=10, heavy_rows=1_500, seed=2)
    s = d.mechanisms.unit_level.UnitStream(summary, capacity=100, max_rows_per_unit=4)
    _feed(s, users, keys)
    b = d.Budget(2.0, 1e-5)
    rel = s.release(epsilon=1.0, delta=1e-6, k=k, seed=5, budget=b)
    _assert_unit_metadata(rel, 4, "bounded_memory")
    m = rel.metadata
    per_row = m["per_row_calibration"]
    assert per_row["privacy_unit_of_these_figures"] == "one stream element"
    # the unit-level figures are the group-privacy image of the per-row ones, never the per-row ones
    assert (rel.epsilon, rel.delta) == pytest.approx(unit_group_guarantee(per_row["epsilon_per_row"],
                                                                          per_row["delta_per_row"], 4), rel=1e-12)
    assert 0.99 < rel.epsilon <= 1.0 and rel.delta <= 1e-6 and m["epsilon"] == rel.epsilon
    assert per_row["epsilon_per_row"] * 4 <= 1.0 and per_row["epsilon_per_row"] < rel.epsilon / 3
    assert "epsilon_mechanism" not in m and "epsilon_used" not in m and "length_epsilon" not in m
    # no top-level field states a per-row privacy figure (PMG's delta_unstable_labels among them)
    privacy_keys = {key for key in m if "epsilon" in key or "delta" in key}
    assert privacy_keys == {"epsilon", "delta", "epsilon_requested", "delta_requested"}, privacy_keys
    if summary == "misragries":
        assert per_row["delta_unstable_labels"] > 0
    assert m["epsilon_requested"] == 1.0 and m["delta_requested"] == 1e-6
    (spend,) = b.ledger
    assert spend.epsilon == rel.epsilon and spend.delta == rel.delta
    by = distinct_units_per_key(keys, users)
    assert rel.keys() and not any(by[x] == 1 for x in rel.keys())  # no bot's own key
    with pytest.raises(d.errors.ReleaseBudgetError):
        s.release(epsilon=1.0, delta=1e-6, k=k)
    assert len(b.ledger) == 1


def test_unit_stream_recall_on_the_event_log():
    users, keys = event_log(400_000, heavy_users=20, heavy_rows=2_000, universe=20_000, seed=3)
    s = d.mechanisms.unit_level.UnitStream("spacesaving", capacity=400, max_rows_per_unit=5)
    _feed(s, users, keys)
    rel = s.release(epsilon=1.0, delta=1e-6, k=200, seed=1)
    check_unit_utility(rel.keys(), users, keys, popular_users=3_000)


def test_unit_stream_refusals():
    s = d.mechanisms.unit_level.UnitStream(capacity=10, max_rows_per_unit=3)
    with pytest.raises(TypeError):
        s.release(epsilon=1.0, delta=1e-6, k=5, public_length=True)  # a public length does not survive a unit
    with pytest.raises(d.ParameterError, match="same length"):
        s.update([1, 2], [1])
    s.update([1, 2], ["a", "b"])
    with pytest.raises(TypeError, match="one key type"):
        s.update(["x"], ["a"])
    with pytest.raises(TypeError, match="one type"):
        s.update([3], [7])
    with pytest.raises(d.ParameterError, match="summary"):
        d.mechanisms.unit_level.UnitStream("countmin", capacity=10, max_rows_per_unit=3)
    with pytest.raises(d.ParameterError, match="2\\*\\*-32"):
        d.mechanisms.unit_level.UnitStream(capacity=10, max_rows_per_unit=2**40).release(epsilon=1e-3, delta=1e-6, k=5)
    b = d.Budget(0.5, 1e-6)
    with pytest.raises(d.errors.BudgetExceededError):
        s.release(epsilon=1.0, delta=1e-6, k=5, budget=b)
    s.release(epsilon=0.5, delta=1e-6, k=5, budget=b)  # the refusal spent nothing and released nothing
    assert "1" not in repr(s).replace("capacity=10", "")


def test_bounded_memory_plan_never_exceeds_the_request():
    for eps, delta, r in [(1.0, 1e-6, 3), (0.3, 1e-5, 7), (2.0, 1e-8, 1), (1.0, 1e-6, 1000), (8.0, 1e-9, 2**20)]:
        p = U._bounded_memory_plan(eps, delta, r)
        assert p["epsilon"] <= eps and p["delta"] <= delta
        assert p["epsilon_row"] * 2**32 == int(p["epsilon_row"] * 2**32)  # what the element-level release uses
        e, dl = unit_group_guarantee(p["epsilon_row"], p["delta_row"], r)
        assert e == pytest.approx(eps, rel=1e-6) and dl == pytest.approx(delta, rel=1e-6)


# -- the row limiter's compact state ---------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["int", "str"])
def test_row_limiter_matches_a_dict_across_chunks(kind, rng):
    ids = rng.integers(-50, 3000, 40_000)
    if kind == "str":
        ids = np.array([f"user-{x}" * (1 + x % 3) for x in ids])  # short and long ids
    lim = U.UnitRowLimiter(3)
    kept = np.concatenate([lim.keep(ids[i:i + 777]) for i in range(0, len(ids), 777)])
    seen: dict = {}
    want = []
    for x in ids.tolist():
        seen[x] = seen.get(x, 0) + 1
        want.append(seen[x] <= 3)
    assert kept.tolist() == want
    if kind == "int":
        assert lim.state_bytes() == 9 * len(seen)  # 8 bytes of id + 1 byte of count per unit


# -- ids and keys are their exact strings (numpy's U and S drop trailing NULs) ---------------------------
NUL_IDS = ["a", "a\0", "a\0\0", "\0", ""]  # distinct ids that a numpy U array would fold into two


@pytest.mark.parametrize("form", ["list", "object", "series"])
def test_row_limiter_tells_ids_apart_by_their_exact_bytes(form):
    import pandas as pd

    ids = NUL_IDS * 3
    col = {"list": ids, "object": np.array(ids, dtype=object), "series": pd.Series(ids)}[form]
    lim = U.UnitRowLimiter(2)
    assert lim.keep(col).tolist() == [True] * 10 + [False] * 5  # two rows of each of the five units
    assert lim.keep(["a\0\0\0", "a\0"]).tolist() == [True, False]  # a new unit; one already at its bound


def test_unit_stream_bounds_each_exact_id_and_counts_each_exact_key():
    s = d.mechanisms.unit_level.UnitStream("misragries", capacity=16, max_rows_per_unit=1)
    s.update(["x", "x\0", "x"], ["u", "u\0", "u\0\0"])
    assert s._summary.estimate("x") == 2 and s._summary.estimate("x\0") == 1  # one row per unit, three units


def test_row_bound_tells_ids_apart_by_their_exact_bytes():
    ids = np.array(["a" + "\0" * j for j in range(10)], dtype=object)  # ten units of one row each
    vals = np.arange(10)
    assert U.bound_rows_per_unit(vals, ids, max_rows_per_unit=1, seed=3).all()
    q = U.unit_quantiles(vals, ids, [0.0, 1.0], max_rows_per_unit=1, universe_bits=4, rho=1e6, seed=3)
    assert [v for _, v in q.items] == [0, 9]  # all ten rows kept (ρ = 10^6: negligible noise)
