"""The privacy unit (docs/privacy.md §Privacy unit): contribution bounding, the exact route's
sensitivities, threshold and noise, Gumbel selection, group privacy and the row limiter."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import dpsketch as d
from dpsketch import _core
from dpsketch.mechanisms import unit_level as U
from dpsketch.accounting.calibration import dgauss_tail_gt, unit_group_privacy
from dpsketch.datasets import distinct_units_per_key

from conftest import check_unit_utility


def _counts(b) -> dict:
    return dict(zip(b.keys.tolist(), b.counts.tolist()))


def _rows(units):
    """[(unit, [keys...]), ...] -> aligned (keys, ids) arrays."""
    keys = [k for _, ks in units for k in ks]
    ids = [u for u, ks in units for _ in ks]
    return np.array(keys, dtype=np.int64), np.array(ids, dtype=np.int64)


# -- U1: sensitivities, brute force on small universes ------------------------------------------------
@pytest.mark.parametrize("m,c", [(1, 1), (2, 1), (1, 2), (2, 2)])
def test_exact_route_sensitivity_brute_force(m, c):
    """Over every unit of <= 4 rows on 3 keys, next to every other such unit: removing the unit moves
    the bounded counts by at most m·c in ℓ1 and c·√m in ℓ2, and both bounds are attained."""
    rows = [list(ms) for r in (1, 2, 3, 4) for ms in itertools.combinations_with_replacement(range(3), r)]
    l1_max = l2sq_max = 0
    for other, unit in itertools.product(rows, rows):
        both = U.bound_contributions(*_rows([(0, other), (1, unit)]), max_keys_per_unit=m, max_rows_per_key=c, seed=5)
        rest = U.bound_contributions(*_rows([(0, other)]), max_keys_per_unit=m, max_rows_per_key=c, seed=5)
        a, b = _counts(both), _counts(rest)
        diff = [a.get(k, 0) - b.get(k, 0) for k in range(3)]
        assert min(diff) >= 0  # monotone: a unit only adds
        l1_max = max(l1_max, sum(diff))
        l2sq_max = max(l2sq_max, sum(x * x for x in diff))
    assert l1_max == min(m, 3) * c
    assert l2sq_max == min(m, 3) * c * c


@pytest.mark.parametrize("cls,signed", [(d.CountMin, False), (d.CountSketch, True)])
def test_sketch_sensitivity_of_a_unit_brute_force(cls, signed):
    """The bounded-memory route for linear sketches: a unit of r rows moves the cells by at most
    ℓ1 = d·r and ℓ2² = d·r² (colliding items are the adversary's choice), attained."""
    depth, width = 3, 4
    for r in (1, 2, 3):
        l1_max = l2_max = 0
        for unit in itertools.product(range(6), repeat=r):
            s = cls(width, depth, hash_seed=11)
            s.update_many(np.array(unit, dtype=np.int64))
            cells = s.cells().astype(np.int64)
            l1_max = max(l1_max, int(np.abs(cells).sum()))
            l2_max = max(l2_max, int((cells * cells).sum()))
        assert l1_max == depth * r and l2_max == depth * r * r


# -- U3: bounding reads only the unit's own rows ------------------------------------------------------
@pytest.mark.parametrize("kind", ["int", "str"])
def test_removing_a_unit_leaves_the_other_units_unchanged(kind, rng):
    users = rng.integers(0, 300, 6000)
    keys = rng.zipf(1.3, 6000) % 200
    if kind == "str":
        users, keys = np.array([f"u{x}" for x in users]), np.array([f"k{x}" for x in keys])
    for victim in np.unique(users)[:10]:
        full = _counts(U.bound_contributions(keys, users, max_keys_per_unit=3, max_rows_per_key=2, seed=9))
        mine = users == victim
        rest = _counts(U.bound_contributions(keys[~mine], users[~mine], max_keys_per_unit=3, max_rows_per_key=2, seed=9))
        alone = _counts(U.bound_contributions(keys[mine], users[mine], max_keys_per_unit=3, max_rows_per_key=2, seed=9))
        assert {k: full.get(k, 0) - rest.get(k, 0) for k in full} == {k: alone.get(k, 0) for k in full}
        # and the row order does not matter
        perm = rng.permutation(len(keys))
        assert _counts(U.bound_contributions(keys[perm], users[perm], max_keys_per_unit=3, max_rows_per_key=2,
                                             seed=9)) == full


def test_bounding_keeps_the_smallest_hash_keys_and_clamps_rows():
    keys, ids = _rows([(7, [1, 1, 1, 2, 3, 4, 5]), (8, [1])])
    b = U.bound_contributions(keys, ids, max_keys_per_unit=2, max_rows_per_key=2, seed=3)
    got = _counts(b)
    assert sum(got.values()) <= 2 * 2 + 1 and got.get(1, 0) <= 3
    assert len([k for k in got if k != 1]) <= 2
    everything = _counts(U.bound_contributions(keys, ids, max_keys_per_unit=10, max_rows_per_key=10, seed=3))
    assert everything == {1: 4, 2: 1, 3: 1, 4: 1, 5: 1}


# -- the C++ kernel against the rule written in numpy --------------------------------------------------
def _reference_counts(ui, ki, hu, hk, m, c):
    """The bounding rule over every distinct (unit, key) pair, in numpy: ``ki`` are codes in key
    value order (ties of the pair hash are broken by them), ``hu``/``hk`` the codes' value hashes."""
    n_keys = len(hk)
    pairs, rows = np.unique(ui.astype(np.int64) * n_keys + ki.astype(np.int64), return_counts=True)
    pu, pk = pairs // n_keys, pairs % n_keys
    h = U._mix(hu[pu] ^ U._mix(hk[pk]))
    order = np.lexsort((pk, h, pu))  # by unit, then pair hash, then key
    pu_sorted = pu[order]
    start = np.r_[0, np.flatnonzero(np.diff(pu_sorted)) + 1]
    rank = np.arange(len(order)) - np.repeat(start, np.diff(np.r_[start, len(order)]))
    kept = order[rank < m]
    return np.bincount(pk[kept], weights=np.minimum(rows[kept], c), minlength=n_keys).astype(np.int64)


def _value_hashes(values: np.ndarray, salt: int) -> np.ndarray:
    if values.dtype.kind == "i":  # the int hash: splitmix64's finaliser of value ^ salt
        return U._mix(values.view(np.uint64) ^ np.uint64(salt))
    return np.array([_core.privacy_unit.salted_str_hash(v, salt) for v in values.tolist()], dtype=np.uint64)


def _reference_bound(keys, ids, m, c, seed) -> dict:
    salt = d._seeds.rng(seed, "salt")[0].next_u64()
    ku, ki = np.unique(keys, return_inverse=True)
    uu, ui = np.unique(ids, return_inverse=True)
    counts = _reference_counts(ui, ki, _value_hashes(uu, salt), _value_hashes(ku, salt ^ U._KEY_SALT_TWEAK), m, c)
    nz = np.flatnonzero(counts)
    return dict(zip(ku[nz].tolist(), counts[nz].tolist()))


def _event_rows(rng, n, units, keys, heavy=5):
    """n rows: most units hold a few keys, ``heavy`` units hold many (more than m, repeated rows)."""
    ids = np.concatenate([rng.integers(0, units, n), np.repeat(np.arange(units, units + heavy), 200)])
    ks = np.concatenate([rng.zipf(1.2, n) % keys, rng.integers(0, keys, heavy * 200)])
    perm = rng.permutation(len(ids))
    return ks[perm].astype(np.int64), ids[perm].astype(np.int64)


@pytest.mark.parametrize("m,c", [(1, 1), (3, 2), (10, 1), (40, 3)])
@pytest.mark.parametrize("kind", ["int", "str", "str_ids"])
def test_kernel_equals_the_numpy_rule(kind, m, c, rng):
    """bound_contributions (C++ codes and kernel) gives exactly the counts of the rule computed in
    numpy with the same salt and value hashes, for int and str columns, on units with more than m
    keys and more than c rows of a key."""
    keys, ids = _event_rows(rng, 20_000, 1_500, 400)
    if kind in ("str", "str_ids"):
        ids = np.array([f"user-{x}" for x in ids])
    if kind == "str":
        keys = np.array([f"k{x}" for x in keys])
    b = U.bound_contributions(keys, ids, max_keys_per_unit=m, max_rows_per_key=c, seed=17)
    ref = _reference_bound(keys, ids, m, c, seed=17)
    assert _counts(b) == ref
    assert b.keys.tolist() == sorted(ref) and b.keys.dtype.kind == keys.dtype.kind
    if m < 40:
        assert sum(ref.values()) < len(keys)  # the bounds bit
    # the same column as a list, an object array or a pandas Series is coded alike
    pd = pytest.importorskip("pandas")
    for conv in (list, lambda a: a.astype(object), pd.Series):
        again = U.bound_contributions(conv(keys), conv(ids), max_keys_per_unit=m, max_rows_per_key=c, seed=17)
        assert _counts(again) == ref and again.keys.dtype == b.keys.dtype


def test_kernel_breaks_ties_of_the_pair_hash_by_key_rank(rng):
    """Distinct keys with equal hashes (forced here; a 64-bit collision for str keys) tie in every
    unit holding both. With key ranks the kernel keeps what the rule keeps (ties by key value);
    without, it reports that a tie decided what a unit kept."""
    n_keys, n_units = 60, 400
    ranks = rng.permutation(n_keys)  # code -> rank in value order: codes are not in value order
    hk = rng.integers(0, 2**64, 6, dtype=np.uint64)[rng.integers(0, 6, n_keys)]  # 6 hashes for 60 keys
    hu = rng.integers(0, 2**64, n_units, dtype=np.uint64)
    unit_codes = rng.integers(0, n_units, 30_000).astype(np.int32)
    key_codes = rng.integers(0, n_keys, 30_000).astype(np.int32)
    for m, c in [(1, 1), (2, 3), (5, 2)]:
        # the reference indexes keys by rank
        by_rank = np.empty(n_keys, dtype=np.uint64)
        by_rank[ranks] = hk
        want = _reference_counts(unit_codes, ranks[key_codes], hu, by_rank, m, c)[ranks]
        got, tie = _core.privacy_unit.bound_counts(unit_codes, key_codes, hu, hk, m, c, ranks.astype(np.uint64))
        assert not tie and got.tolist() == want.tolist()
        _, tie = _core.privacy_unit.bound_counts(unit_codes, key_codes, hu, hk, m, c)
        assert tie
    # distinct hashes: never a tie, and the codes' order does not matter
    hk = rng.integers(0, 2**64, n_keys, dtype=np.uint64)
    got, tie = _core.privacy_unit.bound_counts(unit_codes, key_codes.astype(np.int64), hu, hk, 3, 1)
    with_rank, _ = _core.privacy_unit.bound_counts(unit_codes, key_codes, hu, hk, 3, 1, ranks.astype(np.uint64))
    assert not tie and got.tolist() == with_rank.tolist()


def test_kernel_rejects_codes_out_of_range():
    hu, hk = np.arange(2, dtype=np.uint64), np.arange(3, dtype=np.uint64)
    for units, keys in [([0, 2], [0, 1]), ([0, 1], [3, 0]), ([-1, 0], [0, 0])]:
        with pytest.raises(d.ParameterError, match="outside"):
            _core.privacy_unit.bound_counts(np.array(units, np.int32), np.array(keys, np.int64), hu, hk, 1, 1)
    with pytest.raises(d.ParameterError, match="same length"):
        _core.privacy_unit.bound_counts(np.zeros(2, np.int32), np.zeros(3, np.int32), hu, hk, 1, 1)
    with pytest.raises(TypeError, match="int32 or int64"):
        _core.privacy_unit.bound_counts(np.zeros(2, np.float64), np.zeros(2, np.int32), hu, hk, 1, 1)


def test_codes_name_equal_values_and_hashes_depend_on_values_alone():
    """Codes follow first appearance, and a value's hash is the same whatever the rest of the
    column (and for str, whatever the container: 'U' array, object array, list)."""
    P = _core.privacy_unit
    codes, values, hashes = P.encode_ints(np.array([7, -3, 7, 2**62, -3], dtype=np.int64), 99)
    assert codes.tolist() == [0, 1, 0, 2, 1] and values.tolist() == [7, -3, 2**62]
    assert hashes.tolist() == _value_hashes(values, 99).tolist()
    words = ["b", "ä€", "b", "", "a" * 40, "ä€"]
    for col in (np.array(words), np.array(words, dtype=object), words):
        codes, first, hashes = P.encode_strs(col, 5)
        assert codes.tolist() == [0, 1, 0, 2, 3, 1] and first.tolist() == [0, 1, 3, 4]
        assert hashes.tolist() == [P.salted_str_hash(w, 5) for w in ["b", "ä€", "", "a" * 40]]
    assert P.encode_strs(np.array(["zz", "b"]), 5)[2][1] == P.salted_str_hash("b", 5)
    assert P.salted_str_hash("b", 5) != P.salted_str_hash("b", 6) != P.salted_str_hash("b\0", 6)


# -- U4: bounds travel with the bounded data and cannot be re-used ------------------------------------
def test_bounded_contributions_cannot_be_built_or_rekeyed_by_hand():
    b = U.bound_contributions([1, 2, 2], [0, 0, 1], max_keys_per_unit=1)
    with pytest.raises(TypeError, match="bound_contributions"):
        U.BoundedContributions(b.keys // 2, b.counts, 1, 1)  # merged keys would need new bounds
    with pytest.raises(ValueError):
        b.counts[0] = 100
    with pytest.raises(ValueError):
        b.keys[0] = 5
    with pytest.raises(TypeError):
        U.release_bounded_counts({"keys": [1], "counts": [5]}, epsilon=1, delta=1e-6)
    assert "1" not in repr(b).replace("max_keys_per_unit=1", "").replace("max_rows_per_key=1", "")


def test_bounded_contributions_provenance_cannot_be_forged():
    """The (m, c) of a BoundedContributions are the ones its counts were bounded by, whatever the
    public API does to the object: replace, attribute writes, copies, pickles, new arrays."""
    import copy
    import dataclasses
    import pickle

    b = U.bound_contributions([1, 1, 1, 2, 3], [0, 0, 0, 0, 0], max_keys_per_unit=3, max_rows_per_key=3)
    with pytest.raises(TypeError):
        dataclasses.replace(b, max_keys_per_unit=1, max_rows_per_key=1)  # l2 stated 1, real sqrt(3)*3
    for name, value in (("max_keys_per_unit", 1), ("max_rows_per_key", 1), ("keys", b.keys // 2), ("_m", 1)):
        with pytest.raises(AttributeError):
            setattr(b, name, value)
    with pytest.raises(AttributeError):
        del b.max_keys_per_unit
    assert copy.copy(b) is b and copy.deepcopy(b) is b
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(b)
    with pytest.raises(TypeError, match="bound_contributions"):
        U.BoundedContributions()
    for arr in (b.keys, b.counts):
        with pytest.raises(ValueError):
            arr.setflags(write=True)  # a view of read-only data stays read-only
    assert (b.max_keys_per_unit, b.max_rows_per_key) == (3, 3) and b.counts.tolist() == [3, 1, 1]


# -- U5: the metadata states the unit-level guarantee --------------------------------------------------
def test_metadata_states_the_unit_and_the_unit_level_guarantee():
    keys, ids = _rows([(u, [u % 5, 100 + u % 3]) for u in range(400)])
    r = d.mechanisms.unit_level.unit_heavy_hitters(keys, ids, epsilon=1.0, delta=1e-6, max_keys_per_unit=10, max_rows_per_key=2, seed=1)
    m = r.metadata
    assert m["privacy_unit"] == "privacy_id" and m["route"] == "exact" and m["neighbours"] == "add_remove_unit"
    assert m["max_keys_per_unit"] == 10 and m["max_rows_per_key"] == 2
    assert r.epsilon <= 1.0 and r.delta <= 1e-6 and r.epsilon > 0.99  # unit level, what was asked
    assert r.guarantee.privacy_unit == "privacy_id" and m["reproducible_not_secret"] is True
    assert r.n is None and "n" not in m and not any("unit" in k and "count" in k for k in m)
    assert m["l2_sensitivity"] == pytest.approx(2 * math.sqrt(10))
    vals = [v for _, v in r.items]
    assert vals == sorted(vals, reverse=True) and all(v > r.threshold for v in vals)


# -- the numbers: threshold, noise, tails, group privacy ----------------------------------------------
def test_threshold_and_sigma_at_the_reference_point():
    cost = d.mechanisms.unit_level.unit_release_cost(epsilon=1.0, delta=1e-6, max_keys_per_unit=10)
    ex = cost["exact"]
    # σ from the CKS20 conversion of the noise's δ share (docs/accounting.md; 16.5-18 with the classic one)
    assert 14 < ex["sigma"] < 15.5 and 78 <= ex["threshold"] <= 90
    assert ex["epsilon"] <= 1.0 and ex["delta"] <= 1e-6
    # τ is the smallest integer whose δ_τ fits δ/2 (c = 1, m = 10)
    s2 = ex["sigma"] ** 2
    p_max = 1 - (1 - 0.5e-6) ** 0.1
    t = ex["threshold"] - 1
    assert dgauss_tail_gt(s2, t) <= p_max < dgauss_tail_gt(s2, t - 1)
    lap = d.mechanisms.unit_level.unit_release_cost(epsilon=1.0, delta=1e-6, max_keys_per_unit=10, noise="laplace")["exact"]
    assert lap["laplace_scale"] == pytest.approx(10.0) and lap["epsilon"] == pytest.approx(1.0)
    e1 = 1 / lap["laplace_scale"]
    q = math.exp(-e1 * (lap["threshold"] - 1)) / (1 + math.exp(e1))
    assert 1 - (1 - q) ** 10 <= 1e-6


@pytest.mark.parametrize("sigma2", [0.5, 4.0, 300.09, 2500.0])
def test_discrete_gaussian_tail_against_a_direct_sum(sigma2):
    xs = np.arange(-20000, 20001, dtype=np.float64)
    w = np.exp(-xs * xs / (2 * sigma2))
    for t in (0, 1, 3, int(3 * math.sqrt(sigma2)), int(6 * math.sqrt(sigma2))):
        exact = w[xs > t].sum() / w.sum()
        got = dgauss_tail_gt(sigma2, t)
        assert got >= exact * (1 - 1e-12) and got == pytest.approx(exact, rel=1e-6, abs=1e-300)


def test_discrete_gaussian_tail_matches_the_sampler():
    num, den = _core.release.gaussian_sigma2(10, 0.05)
    z = _core.noise.discrete_gaussian(_core.noise.SecureRng(4), num, den, 400_000)
    for t in (5, 10, 20):
        p = dgauss_tail_gt(num / den, t)
        assert abs((z > t).mean() - p) < 5 * math.sqrt(p / 400_000) + 1e-6


def test_group_privacy_chain_is_exact():
    for eps, delta, r in [(1.0, 1e-6, 10), (0.3, 1e-5, 7), (2.0, 1e-8, 1)]:
        e1, d1 = unit_group_privacy(eps, delta, r)
        assert e1 * r == pytest.approx(eps)
        assert d1 * sum(math.exp(i * e1) for i in range(r)) == pytest.approx(delta, rel=1e-12)
    assert U.unit_calibration(1.0, 1e-6, 1) == pytest.approx((1.0, 1e-6))


# -- Gumbel selection (its χ² test against the exact peeling probabilities: tests/mechanisms/test_top_k.py) -------
def test_gumbel_selection_releases_exactly_k_ranked_keys():
    keys, ids = _rows([(u, [u % 20]) for u in range(20 * 300)])  # 20 keys of 300 users each
    r = d.mechanisms.unit_level.unit_heavy_hitters(keys, ids, epsilon=2.0, delta=1e-6, max_keys_per_unit=1, selection="gumbel", k=5, seed=2)
    assert len(r) == 5 and r.metadata["selection"] == "gumbel"
    assert r.metadata["epsilon_selection"] + r.metadata["epsilon_counts"] == pytest.approx(r.epsilon)
    assert r.epsilon <= 2.0
    with pytest.raises(d.ParameterError, match="k="):
        d.mechanisms.unit_level.unit_heavy_hitters(keys, ids, epsilon=1, delta=1e-6, max_keys_per_unit=1, selection="gumbel")


# -- utility on a log with bots ------------------------------------------------------------------------
def test_event_log_no_single_user_key_and_full_recall_of_popular_keys():
    from dpsketch.datasets import event_log

    users, keys = event_log(400_000, heavy_users=20, heavy_rows=2_000, universe=20_000, seed=3)
    r = d.mechanisms.unit_level.unit_heavy_hitters(keys, users, epsilon=1.0, delta=1e-6, max_keys_per_unit=10, seed=4)
    check_unit_utility(r.keys(), users, keys)
    by = distinct_units_per_key(keys, users)
    # the same log at the row level publishes the bots' own keys
    rows = d.SpaceSaving(2000)
    rows.update_many(keys)
    assert any(by.get(x) == 1 for x in rows.release(epsilon=1.0, delta=1e-6, k=1000, seed=1).keys())


# -- bounded-memory route: the row limiter ----------------------------------------------------------
def test_row_limiter_keeps_the_first_rows_of_each_unit_across_chunks(rng):
    ids = rng.integers(0, 50, 5000)
    lim = U.UnitRowLimiter(7)
    kept = np.concatenate([lim.keep(ids[i:i + 333]) for i in range(0, len(ids), 333)])
    seen: dict = {}
    want = []
    for x in ids.tolist():
        seen[x] = seen.get(x, 0) + 1
        want.append(seen[x] <= 7)
    assert kept.tolist() == want


# -- bad input ---------------------------------------------------------------------------------------
def test_bad_input_gets_clear_errors():
    with pytest.raises(d.ParameterError, match="same length"):
        U.bound_contributions([1, 2], [1], max_keys_per_unit=1)
    with pytest.raises(TypeError, match="ints or strs"):
        U.bound_contributions([1, 2], [1.5, 2.5], max_keys_per_unit=1)  # float ids are not labels
    for mixed in (["a", 1], np.array(["a", 2.5], dtype=object)):
        with pytest.raises(TypeError, match="ints or strs"):
            U.bound_contributions(mixed, [1, 2], max_keys_per_unit=1)
    with pytest.raises(ValueError):
        U.bound_contributions(["a", "\ud800"], [1, 2], max_keys_per_unit=1)  # not encodable as UTF-8
    objs = U.bound_contributions(np.array([3, 4], dtype=object), ["u", "v"], max_keys_per_unit=1)
    assert objs.keys.dtype == np.int64 and objs.keys.tolist() == [3, 4]
    for bad in (0, -1, 1.5, True):
        with pytest.raises((ValueError, TypeError)):
            U.bound_contributions([1], [1], max_keys_per_unit=bad)
        with pytest.raises((ValueError, TypeError)):
            U.bound_contributions([1], [1], max_keys_per_unit=1, max_rows_per_key=bad)
    with pytest.raises(d.ParameterError, match="noise"):
        d.mechanisms.unit_level.unit_heavy_hitters([1], [1], epsilon=1, delta=1e-6, max_keys_per_unit=1, noise="cauchy")
    with pytest.raises(ValueError, match="epsilon"):
        d.mechanisms.unit_level.unit_heavy_hitters([1], [1], epsilon=0, delta=1e-6, max_keys_per_unit=1)
    empty = d.mechanisms.unit_level.unit_heavy_hitters([], [], epsilon=1, delta=1e-6, max_keys_per_unit=1)
    assert empty.items == []


def test_budget_is_charged_before_noise():
    b = d.Budget(1.0, 1e-6)
    d.mechanisms.unit_level.unit_heavy_hitters([1, 2], [1, 2], epsilon=0.6, delta=5e-7, max_keys_per_unit=1, budget=b)
    with pytest.raises(d.errors.BudgetExceededError):
        d.mechanisms.unit_level.unit_heavy_hitters([1, 2], [1, 2], epsilon=0.6, delta=4e-7, max_keys_per_unit=1, budget=b)
    assert len(b.ledger) == 1


# -- batches: ContributionBounder -----------------------------------------------------------------

def _batched_columns(rng, n=6_000):
    """Keys and ids with units holding more than m keys and more than c rows of a key, non-ASCII
    and long (> 8 bytes) values, and values that differ only by trailing NUL bytes or length."""
    key_pool = np.array(["a", "a\x00", "", "é", "日本語キー", "a-much-longer-key-than-a-word", "k", "\x00"]
                        + [f"q{i}" for i in range(60)], dtype=object)
    keys_i = rng.zipf(1.4, n) % 200 - 100
    units_i = rng.integers(0, 400, n)
    units_i[: n // 10] = 7  # one unit with hundreds of rows over many keys
    keys_s = key_pool[np.abs(keys_i) % len(key_pool)]
    units_s = np.array([f"ü{u}" if u % 3 else f"user-{u:012d}" for u in units_i.tolist()], dtype=object)
    return {"int": keys_i.astype(np.int64), "str": keys_s}, {"int": units_i.astype(np.int64), "str": units_s}


def _cuts(rng, n):
    """Batch boundaries with empty batches among them."""
    cuts = sorted(set(rng.integers(0, n, 12).tolist()) | {0, n})
    return [(a, b) for a, b in zip(cuts, cuts[1:])] + [(n, n)] + [(a, a) for a in cuts[:3]]


@pytest.mark.parametrize("key_kind,id_kind", [("str", "str"), ("int", "str"), ("str", "int"), ("int", "int")])
@pytest.mark.parametrize("form", ["arrow", "arrow_sliced", "numpy"])
@pytest.mark.parametrize("m,c", [(1, 1), (3, 2)])
def test_bounder_over_batches_equals_bound_contributions(rng, key_kind, id_kind, form, m, c):
    pa = pytest.importorskip("pyarrow")
    keys, ids = _batched_columns(rng)
    k, u = keys[key_kind], ids[id_kind]
    want = U.bound_contributions(k, u, max_keys_per_unit=m, max_rows_per_key=c, seed=5)
    bounder = U.ContributionBounder(max_keys_per_unit=m, max_rows_per_key=c, seed=5)
    cuts = sorted(_cuts(rng, len(k)))  # in row order: the codes follow first appearance

    def batch(col, a, b):
        if form == "numpy":
            return col[a:b]
        typ = pa.int64() if col.dtype.kind == "i" else pa.large_string()
        if form == "arrow":
            return pa.array(col[a:b].tolist(), type=typ)
        # a slice of a larger array: the offsets buffer starts before the batch
        whole = pa.array(col.tolist(), type=pa.string() if typ == pa.large_string() else typ)
        return whole.slice(a, b - a)

    for a, b in cuts:
        bounder.add(batch(k, a, b), batch(u, a, b))
    got = bounder.bounded()
    assert got.keys.tolist() == want.keys.tolist() and got.keys.dtype.kind == want.keys.dtype.kind
    assert got.counts.tolist() == want.counts.tolist() and got.counts.dtype == np.int64
    assert (got.max_keys_per_unit, got.max_rows_per_key) == (m, c)
    assert len(got.keys) > 5 and got.counts.max() > c  # the case is not trivial
    assert not got.keys.flags.writeable and not got.counts.flags.writeable


def test_bounder_salt_comes_from_the_seed(rng):
    keys, ids = _batched_columns(rng)
    runs = []
    for seed in (5, 5, 6):
        b = U.ContributionBounder(max_keys_per_unit=1, seed=seed)
        b.add(keys["str"], ids["str"])
        runs.append(_counts(b.bounded()))
    assert runs[0] == runs[1] and runs[0] != runs[2]


def test_bounder_refuses_bad_batches_and_keeps_its_state(rng):
    pa = pytest.importorskip("pyarrow")
    keys, ids = _batched_columns(rng)
    k, u = keys["str"], ids["int"]
    want = U.bound_contributions(k, u, max_keys_per_unit=2, seed=3)
    b = U.ContributionBounder(max_keys_per_unit=2, seed=3)
    b.add(k[:100], u[:100])
    with pytest.raises(d.ParameterError, match="all hold ints or all hold strs"):
        b.add(np.arange(5), u[100:105])  # int keys after str keys
    with pytest.raises(d.ParameterError, match="same length"):
        b.add(k[100:105], u[100:104])
    b.add(pa.array([None, None], type=pa.string()), u[100:102])  # rows without a key: dropped, no error
    b.add(np.array([None, float("nan")], dtype=object), u[100:102])
    with pytest.raises(TypeError, match="ints or strs"):
        b.add(np.array([1.5, 2.5]), u[100:102])
    b.add(k[100:], u[100:])
    assert _counts(b.bounded()) == _counts(want)
    with pytest.raises(d.ParameterError):
        U.ContributionBounder(max_keys_per_unit=0)


def test_bounder_without_rows_releases_no_key():
    pa = pytest.importorskip("pyarrow")
    assert len(U.ContributionBounder(max_keys_per_unit=3).bounded().keys) == 0
    b = U.ContributionBounder(max_keys_per_unit=3)
    b.add(pa.array([], type=pa.large_string()), np.zeros(0, np.int64))
    got = b.bounded()
    assert got.keys.dtype.kind == "U" and len(got.keys) == 0 and len(got.counts) == 0
    b = U.ContributionBounder(max_keys_per_unit=3)
    b.add(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert b.bounded().keys.dtype == np.int64


def test_short_strings_get_one_code_per_value():
    """Strings of <= 8 bytes are matched on their hash and length alone (the hash is a bijection of
    the padded word for a fixed length): values differing only by trailing NULs or by length must
    still get distinct codes, and equal ones one code."""
    vals = ["", "\x00", "\x00\x00", "a", "a\x00", "ab", "abcdefgh", "abcdefg\x00", "abcdefghi", "é", "e\u0301"]
    col = np.array(vals * 3, dtype=object)
    codes, first, _ = _core.privacy_unit.encode_strs(col, 99)
    assert codes.tolist() == list(range(len(vals))) * 3 and first.tolist() == list(range(len(vals)))
    c = _core.privacy_unit.PairCoder(99, 1)
    c.add(col, np.zeros(len(col), np.int64))
    assert c.distinct_keys == len(vals)
    assert c.key_values(np.arange(len(vals), dtype=np.int64)) == vals


def test_bounder_halves_code_the_columns_apart(rng):
    """add_keys / add_ids (one thread per column) give what add gives; columns of unequal length
    are refused when bounded."""
    import threading

    keys, ids = _batched_columns(rng)
    k, u = keys["str"], ids["str"]
    want = U.bound_contributions(k, u, max_keys_per_unit=2, max_rows_per_key=2, seed=8)
    b = U.ContributionBounder(max_keys_per_unit=2, max_rows_per_key=2, seed=8)
    cuts = range(0, len(k), 700)
    t = threading.Thread(target=lambda: [b.add_keys(k[i:i + 700]) for i in cuts])
    t.start()
    for i in cuts:
        b.add_ids(u[i:i + 700])
    t.join()
    got = b.bounded()
    assert got.keys.tolist() == want.keys.tolist() and got.counts.tolist() == want.counts.tolist()
    b.add_keys(k[:3])
    with pytest.raises(d.ParameterError, match="different numbers of rows"):
        b.bounded()


# -- rows without a key or a privacy id are dropped, row by row (docs/privacy.md §Privacy unit) -------
def test_rows_without_a_key_or_an_id_are_dropped_one_by_one():
    """A missing key or id (None, NaN, pandas NA, an Arrow or polars null) drops its row and nothing
    else: the release equals the release of the other rows, whatever the container; no single
    record decides between an error and a release."""
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    pl = pytest.importorskip("polars")
    rng = np.random.default_rng(8)
    n = 3_000
    keys = [f"k{x}" for x in rng.zipf(1.3, n) % 50]
    ids = rng.integers(0, 400, n).tolist()
    missing = rng.random(n) < 0.05
    k_missing = [None if m and i % 2 else k for i, (k, m) in enumerate(zip(keys, missing))]
    u_missing = [float("nan") if m and not i % 2 else u for i, (u, m) in enumerate(zip(ids, missing))]
    keep = [not m for m in missing]
    clean_k = [k for k, ok in zip(keys, keep) if ok]
    clean_u = [u for u, ok in zip(ids, keep) if ok]
    want = d.mechanisms.unit_level.unit_heavy_hitters(clean_k, clean_u, epsilon=1.0, delta=1e-6, max_keys_per_unit=3, seed=2)
    assert want.items
    frame = pd.DataFrame({"k": k_missing, "u": u_missing})  # pandas: ids with NaN become floats
    forms = [(k_missing, u_missing), (frame["k"], frame["u"]),
             (pa.array(k_missing), pa.array([None if u != u else u for u in u_missing], type=pa.int64())),
             (pl.Series(k_missing), pl.Series([None if u != u else u for u in u_missing], dtype=pl.Int64)),
             (frame["k"], frame["u"].astype("Int64"))]
    for k_col, u_col in forms:
        got = d.mechanisms.unit_level.unit_heavy_hitters(k_col, u_col, epsilon=1.0, delta=1e-6, max_keys_per_unit=3, seed=2)
        assert got.items == want.items, type(k_col)
    b = U.ContributionBounder(max_keys_per_unit=3, seed=2)
    b.add(k_missing[:1_000], u_missing[:1_000])
    b.add(k_missing[1_000:], u_missing[1_000:])
    assert _counts(b.bounded()) == _counts(U.bound_contributions(clean_k, clean_u, max_keys_per_unit=3, seed=2))
    s1, s2 = (d.mechanisms.unit_level.UnitStream("spacesaving", capacity=64, max_rows_per_unit=3) for _ in range(2))
    s1.update(k_missing, u_missing)
    s2.update(clean_k, clean_u)
    assert s1.release(epsilon=1.0, delta=1e-6, k=20, seed=4).items == s2.release(epsilon=1.0, delta=1e-6, k=20,
                                                                                 seed=4).items
    values = rng.integers(0, 1000, n)  # quantiles read values and ids: the rows with an id count
    has_id = np.array([u == u for u in u_missing])
    ids_present = [u for u, ok in zip(u_missing, has_id) if ok]
    mask = U.bound_rows_per_unit(values, u_missing, max_rows_per_unit=2, seed=5)
    assert not mask[~has_id].any()
    assert (mask[has_id] == U.bound_rows_per_unit(values[has_id], ids_present, max_rows_per_unit=2, seed=5)).all()
    q1 = d.mechanisms.unit_level.unit_quantiles(values, u_missing, [0.5], max_rows_per_unit=2, universe_bits=10, rho=1.0, seed=6)
    q2 = d.mechanisms.unit_level.unit_quantiles(values[has_id], ids_present, [0.5], max_rows_per_unit=2, universe_bits=10, rho=1.0,
                          seed=6)
    assert q1.items == q2.items
