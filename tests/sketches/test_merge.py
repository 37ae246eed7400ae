"""Merging counter summaries (docs/algorithms.md §8; Agarwal et al. "Mergeable summaries") and the
trusted-aggregator release of merged linear sketches.

Checks: the merged state equals an independent reference of the merge rule; the stated guarantee
holds against exact counts over random partitions, random merge trees and further updates; merges
are commutative; the merged flag survives bytes/pickle/copy; private release of a merged summary is
refused; from_sketch equals the single-stream private sketch cell for cell."""

from __future__ import annotations

import copy
import pickle
from collections import Counter

import numpy as np
import pytest

import dpsketch as dp


# -- independent references of the merge rules ------------------------------------------------------

def ref_mg_merge(a: dict, b: dict, m: int):
    """Agarwal et al.: add key-wise, subtract the (m+1)-th largest sum, keep the positive ones."""
    g = Counter(a)
    g.update(b)
    vals = sorted(g.values(), reverse=True)
    s = vals[m] if len(vals) > m else 0
    return {x: v - s for x, v in g.items() if v > s}, s


def ref_ss_merge(a: dict, ma: int, b: dict, mb: int, k: int):
    """Through the MG isomorphism: MG forms c - min, MG merge with k counters kept, shift by E."""
    ga = {x: c - ma for x, c in a.items() if c > ma}
    gb = {x: c - mb for x, c in b.items() if c > mb}
    r, s = ref_mg_merge(ga, gb, k)
    e = ma + mb + s
    return {x: v + e for x, v in r.items()}, e


def zipf_stream(rng, n, alphabet, a=1.3):
    x = rng.zipf(a, size=n)
    return (x % alphabet).astype(np.int64)


def random_parts(rng, stream, p):
    """Random partition of the rows (any assignment is allowed for non-private merging)."""
    lab = rng.integers(0, p, size=len(stream))
    return [stream[lab == i] for i in range(p)]


def merge_tree(rng, parts):
    """Merge in a random binary tree order; returns the root."""
    nodes = list(parts)
    while len(nodes) > 1:
        i, j = sorted(rng.choice(len(nodes), size=2, replace=False))
        b = nodes.pop(j)
        a = nodes.pop(i)
        a.merge(b)
        nodes.append(a)
    return nodes[0]


def check_mg(mg, exact: Counter, n: int):
    m = mg.capacity
    items = dict(mg.items())
    e = mg.decrements
    total = sum(items.values())
    assert mg.n == n
    assert e * (m + 1) <= n - total, "undercount bound E <= (n - sum)/(m+1)"
    for x, f in exact.items():
        c = items.get(x, 0)
        assert f - e <= c <= f, (f, c, e)
    for x in items:
        assert x in exact


def check_ss(ss, exact: Counter, n: int):
    k = ss.capacity
    items = dict(ss.items())
    cmin = ss.min_count()
    assert ss.n == n
    assert cmin * k <= n, "min_count <= n/k"
    for x, f in exact.items():
        if x in items:
            assert f <= items[x] <= f + cmin, (f, items[x], cmin)
        else:
            assert f <= cmin, (f, cmin)


# -- exact merge rule --------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [dp.MisraGries, dp.SpaceSaving])
def test_merge_matches_reference_rule(cls, rng):
    for trial in range(60):
        k = int(rng.integers(1, 7))
        alphabet = int(rng.integers(2, 15))
        a, b = cls(k, key_type="int"), cls(k, key_type="int")
        a.update_many(zipf_stream(rng, int(rng.integers(0, 60)), alphabet))
        b.update_many(zipf_stream(rng, int(rng.integers(0, 60)), alphabet))
        da, db = dict(a.items()), dict(b.items())
        if cls is dp.MisraGries:
            want, s = ref_mg_merge(da, db, k)
            e_want = a.decrements + b.decrements + s
        else:
            want, e_want = ref_ss_merge(da, a.min_count(), db, b.min_count(), k)
        n = a.n + b.n
        a.merge(b)
        assert dict(a.items()) == want
        assert a.n == n and a.merged
        if cls is dp.MisraGries:
            assert a.decrements == e_want
        elif len(want) < k:
            assert a.min_count() == e_want  # the floor while slots are free


@pytest.mark.parametrize("cls", [dp.MisraGries, dp.SpaceSaving])
def test_merged_state_is_canonical_and_commutative(cls, rng):
    for _ in range(30):
        k = int(rng.integers(1, 6))
        xs, ys = zipf_stream(rng, 80, 12), zipf_stream(rng, 80, 12)
        a1, b1, a2, b2 = (cls(k) for _ in range(4))
        a1.update_many(xs), b1.update_many(ys), a2.update_many(xs), b2.update_many(ys)
        a1.merge(b1)
        b2.merge(a2)
        assert a1.to_bytes() == b2.to_bytes()
        # Internal order lists counts ascending, newest first within a count; merged equal counts
        # are ordered by key with the largest key newest (SpaceSaving's next victim).
        state = a1._state()
        pos = [(c, -x) for x, c in state if c > 0]
        assert pos == sorted(pos)


# -- guarantees on random partitions, merge trees and further updates --------------------------------

@pytest.mark.parametrize("cls", [dp.MisraGries, dp.SpaceSaving])
def test_guarantee_over_partitions_and_merge_trees(cls, rng):
    check = check_mg if cls is dp.MisraGries else check_ss
    for trial in range(40):
        k = int(rng.integers(1, 9))
        alphabet = int(rng.integers(2, 40))
        n = int(rng.integers(0, 600))
        stream = zipf_stream(rng, n, alphabet, a=float(rng.uniform(1.05, 2.0)))
        p = int(rng.integers(1, 7))
        parts = random_parts(rng, stream, p)
        summaries = []
        for part in parts:
            s = cls(k, key_type="int")
            s.update_many(part)
            summaries.append(s)
        root = merge_tree(rng, summaries)
        exact = Counter(stream.tolist())
        check(root, exact, n)
        # The merged summary keeps working: further updates, another merge, round trip.
        more = zipf_stream(rng, int(rng.integers(0, 300)), alphabet + 5)
        root.update_many(more)
        exact.update(more.tolist())
        check(root, exact, n + len(more))
        other = cls(k, key_type="int")
        extra = zipf_stream(rng, 100, alphabet)
        other.update_many(extra)
        root.merge(other)
        exact.update(extra.tolist())
        check(root, exact, n + len(more) + 100)
        again = cls.from_bytes(root.to_bytes())
        assert again.to_bytes() == root.to_bytes()
        tail = zipf_stream(rng, 50, alphabet)
        again.update_many(tail)
        root.update_many(tail)
        assert again.to_bytes() == root.to_bytes()


@pytest.mark.parametrize("cls", [dp.MisraGries, dp.SpaceSaving])
def test_merge_str_keys(cls):
    a, b = cls(3), cls(3)
    a.update_many(["x", "y", "x", "z", "w"])
    b.update_many(["x", "q", "q"])
    a.merge(b)
    exact = Counter(["x", "y", "x", "z", "w", "x", "q", "q"])
    (check_mg if cls is dp.MisraGries else check_ss)(a, exact, 8)
    assert a.key_type == "str"


# -- flag, serialization, errors ---------------------------------------------------------------------

@pytest.mark.parametrize("cls", [dp.MisraGries, dp.SpaceSaving])
def test_merged_flag_survives_bytes_pickle_copy(cls):
    a, b = cls(4), cls(4)
    a.update_many(np.arange(10, dtype=np.int64))
    b.update_many(np.arange(5, 15, dtype=np.int64))
    assert not a.merged and a.to_bytes()[7] == 0  # unmerged bytes are unchanged (flags byte 0)
    a.merge(b)
    data = a.to_bytes()
    assert data[7] & 1
    for c in (cls.from_bytes(data), pickle.loads(pickle.dumps(a)), copy.copy(a), copy.deepcopy(a)):
        assert c.merged and c.to_bytes() == data
    with pytest.raises(ValueError, match="unknown (header )?flag"):
        cls.from_bytes(data[:7] + bytes([data[7] | 0x80]) + data[8:])


def test_merged_bytes_invariants_checked():
    a, b = dp.SpaceSaving(3), dp.SpaceSaving(3)
    a.update_many(np.array([1, 2, 3, 4, 4, 4], dtype=np.int64))
    b.update_many(np.array([5, 5, 6], dtype=np.int64))
    a.merge(b)
    data = bytearray(a.to_bytes())
    # Raise the floor (bytes 20..27, after capacity and n) above n/capacity.
    data[20:28] = (10**6).to_bytes(8, "little")
    with pytest.raises(ValueError, match="floor"):
        dp.SpaceSaving.from_bytes(bytes(data))
    m = dp.MisraGries(2)
    m.update_many(np.array([1, 2, 3, 1, 1], dtype=np.int64))
    m.merge(dp.MisraGries(2))
    data = bytearray(m.to_bytes())
    data[20:28] = (10**3).to_bytes(8, "little")  # decrements > n/(m+1)
    with pytest.raises(ValueError, match="inconsistent"):
        dp.MisraGries.from_bytes(bytes(data))


@pytest.mark.parametrize("cls", [dp.MisraGries, dp.SpaceSaving])
def test_merge_errors(cls):
    a = cls(4)
    a.update(1)
    with pytest.raises(ValueError, match="capacity"):
        a.merge(cls(5))
    b = cls(4)
    b.update("s")
    with pytest.raises(TypeError, match="key"):
        a.merge(b)
    other = dp.SpaceSaving(4) if cls is dp.MisraGries else dp.MisraGries(4)
    with pytest.raises(TypeError):
        a.merge(other)
    with pytest.raises(TypeError):
        a.merge(dp.CountMin(8, 2, seed=1))
    assert not a.merged  # failed merges change nothing


def test_release_of_merged_summary_is_refused():
    for cls, call in ((dp.MisraGries, lambda s: s.release(epsilon=1.0, delta=1e-6, seed=1)),
                      (dp.SpaceSaving, lambda s: s.release(epsilon=1.0, delta=1e-6, k=2, seed=1))):
        a, b = cls(4), cls(4)
        a.update_many(np.arange(20, dtype=np.int64) % 5)
        b.update_many(np.arange(20, dtype=np.int64) % 7)
        a.merge(b)
        with pytest.raises(ValueError, match="partition the data by key") as ei:
            call(a)
        assert "from_sketch" in str(ei.value)
        # Also after a round trip (the flag is in the bytes).
        with pytest.raises(ValueError, match="merged"):
            call(cls.from_bytes(a.to_bytes()))
        # An unmerged summary still releases.
        c = cls(4)
        c.update_many(np.arange(20, dtype=np.int64) % 5)
        call(c)


# -- trusted aggregator: from_sketch ----------------------------------------------------------------

@pytest.mark.parametrize("priv, plain", [(dp.PrivateCountMin, dp.CountMin), (dp.PrivateCountSketch, dp.CountSketch)])
@pytest.mark.parametrize("noise", [{"rho": 0.5}, {"epsilon": 1.0}])
def test_from_sketch_equals_single_stream_private_sketch(priv, plain, noise, rng):
    stream = zipf_stream(rng, 5000, 300)
    single = priv(64, 5, seed=77, **noise)
    single.update_many(stream)
    parts = random_parts(rng, stream, 4)
    sketches = []
    for part in parts:
        s = plain(64, 5, seed=77)  # one seed, one set of hash functions (docs/privacy.md §Seeds)
        s.update_many(part)
        sketches.append(s)
    merged = merge_tree(rng, sketches)
    out = priv.from_sketch(merged, seed=77, **noise)
    assert np.array_equal(out.cells(), single.cells())
    assert out.n == single.n == len(stream)
    assert out.hash_seed == single.hash_seed
    assert out.estimate(int(stream[0])) == single.estimate(int(stream[0]))
    assert out.privacy() == single.privacy()
    # Unseeded: secure noise, different from the seeded draw but the same hash functions.
    fresh = priv.from_sketch(merged, **noise)
    assert fresh.hash_seed == single.hash_seed
    assert not np.array_equal(fresh.cells(), single.cells())
    # The noise is centred on the exact counts (loose check on the mean of cell differences).
    diff = (fresh.cells() - merged.cells()).astype(float) - fresh.privacy()["shift"]
    assert abs(diff.mean()) < 6 * diff.std() / np.sqrt(diff.size) + 1e-9


def test_from_sketch_errors():
    with pytest.raises(TypeError, match="needs a CountMin"):
        dp.PrivateCountMin.from_sketch(dp.CountSketch(8, 2, seed=1), rho=1.0)
    with pytest.raises(TypeError):
        dp.PrivateCountSketch.from_sketch(dp.MisraGries(4), rho=1.0)
    with pytest.raises(ValueError, match="exactly one"):
        dp.PrivateCountMin.from_sketch(dp.CountMin(8, 2, seed=1))
    s = dp.CountMin(8, 2, seed=1)
    s.update("a")
    p = dp.PrivateCountMin.from_sketch(s, epsilon=1.0)
    assert p.key_type == "str" and p.n == 1


def test_merge_breaks_the_per_stream_neighbour_structure():
    """Why merged summaries are refused (docs/privacy.md §Merged counter summaries): the smallest
    counterexample found by bench/merge_neighbour_search.py. Unmerged, SpaceSaving(2) on 0 0 1 vs
    0 1 differs in one counter by 1 (the DPSS lemma); after merging each with an empty part the
    count of 0 moves by 2."""
    def ss(rows, merged):
        s = dp.SpaceSaving(2, key_type="int")
        s.update_many(np.array(rows, dtype=np.int64))
        if merged:
            s.merge(dp.SpaceSaving(2, key_type="int"))
        return dict(s.items())

    a, b = ss([0, 0, 1], False), ss([0, 1], False)
    assert sum(abs(a.get(x, 0) - b.get(x, 0)) for x in set(a) | set(b)) == 1
    a, b = ss([0, 0, 1], True), ss([0, 1], True)
    assert abs(a.get(0, 0) - b.get(0, 0)) == 2


@pytest.mark.parametrize("priv, plain", [(dp.PrivateCountMin, dp.CountMin), (dp.PrivateCountSketch, dp.CountSketch)])
def test_from_sketch_replace_neighbours(priv, plain, rng):
    stream = zipf_stream(rng, 2000, 100)
    single = priv(32, 4, rho=0.5, seed=3, neighbours="replace")
    single.update_many(stream)
    s = plain(32, 4, hash_seed=single.hash_seed)
    s.update_many(stream)
    out = priv.from_sketch(s, rho=0.5, seed=3, neighbours="replace")
    assert np.array_equal(out.cells(), single.cells())
    assert out.neighbours == "replace" and out.privacy() == single.privacy()
