"""Dyadic CountSketch (docs/algorithms.md §6): structure against brute force, merge and turnstile
identities, noise calibration for both allocations, utility at Zhao's setting, hierarchical heavy
hitters, serialization hardening."""

import math
import pickle

import numpy as np
import pytest

import dpsketch as dp
from dpsketch.sketches.dyadic import _sensitivities


def zipf_stream(rng, n, universe, a=1.0):
    """Zipf(a) over [1, universe) (Zhao §5), shuffled."""
    ranks = np.arange(1, universe, dtype=np.float64)
    p = ranks**-a
    p /= p.sum()
    return rng.choice(np.arange(1, universe, dtype=np.int64), size=n, p=p)


def brute_rank(x, pos):
    return int(np.sum(x < pos))


def brute_quantile(x, q):
    """Smallest v with #{items <= v} >= q·n (the descent's definition)."""
    s = np.sort(x)
    k = math.ceil(float(np.float64(q) * len(x)))  # the same float target as the sketch
    return 0 if k == 0 else s[k - 1]


# -- shape ---------------------------------------------------------------------------------------


def test_zhao_parameters_match_formula():
    for bits, gamma in [(32, 0.01), (16, 0.01), (64, 0.05), (8, 0.1)]:
        s = dp.DyadicCountSketch(bits, gamma=gamma, seed=1)
        lg = math.log(bits / gamma)
        assert s.depth == math.ceil(lg)
        assert s.width == math.ceil(math.sqrt(bits * lg) / gamma)
        budget = s.depth * s.width
        assert s.exact_levels == min(bits, int(math.floor(math.log2(budget))))
        assert 2**s.exact_levels <= budget
    s = dp.DyadicCountSketch(32, seed=1)
    assert (s.depth, s.width, s.exact_levels) == (9, 1608, 13)


def test_parameter_errors():
    with pytest.raises(ValueError):
        dp.DyadicCountSketch(0)
    with pytest.raises(ValueError):
        dp.DyadicCountSketch(65)
    with pytest.raises(ValueError):
        dp.DyadicCountSketch(16, gamma=0)
    with pytest.raises(ValueError):
        dp.DyadicCountSketch(16, bounds=(1.0, 1.0))
    with pytest.raises(ValueError):
        dp.DyadicCountSketch(16, bounds=(0.0, float("nan")))
    with pytest.raises(ValueError):
        dp.DyadicCountSketch(60, bounds=(0.0, 1.0))
    s = dp.DyadicCountSketch(8, seed=1)
    with pytest.raises(ValueError):
        s.update(256)
    with pytest.raises(ValueError):
        s.update(-1)
    with pytest.raises(ValueError):
        s.update_many(np.array([1, 2, -3]))
    with pytest.raises(ValueError):
        s.update_many(np.array([1, 2, 300], dtype=np.uint64))
    with pytest.raises(TypeError):
        s.update_many(np.array([1.0, 2.0]))
    with pytest.raises(ValueError):
        s.update_many(np.array([1, 2]), counts=np.array([1]))
    assert s.n == 0 and s.level_cells(8).sum() == 0  # all-or-nothing
    b = dp.DyadicCountSketch(8, bounds=(0.0, 1.0), seed=1)
    with pytest.raises(ValueError, match="NaN"):
        b.update_many(np.array([0.5, np.nan]))
    with pytest.raises(ValueError):
        dp.PrivateDyadicCountSketch(8, seed=1)  # neither rho nor epsilon
    with pytest.raises(ValueError):
        dp.PrivateDyadicCountSketch(8, rho=1, epsilon=1, seed=1)
    with pytest.raises(ValueError):
        dp.PrivateDyadicCountSketch(8, rho=1, noise_allocation="even", seed=1)
    with pytest.raises(ValueError):
        dp.PrivateDyadicCountSketch(8, rho=1, neighbours="swap", seed=1)


# -- exact structure -----------------------------------------------------------------------------


def test_exact_levels_equal_brute_force_prefix_counts(rng):
    L = 14
    s = dp.DyadicCountSketch(L, width=300, depth=5, seed=3)  # budget 1500: levels 1..10 exact
    assert s.exact_levels == 10
    x = rng.integers(0, 2**L, 20000)
    c = rng.integers(-3, 4, 20000)
    s.update_many(x, counts=c)
    for j in range(1, s.exact_levels + 1):
        expect = np.bincount(x >> (L - j), weights=c, minlength=2**j).astype(np.int64)
        assert np.array_equal(s.level_cells(j), expect), j
    assert s.n == int(c.sum())
    assert s.level_cells(11).shape == (5, 300)


@pytest.mark.parametrize("L", [1, 3, 7, 10])
def test_all_exact_queries_equal_brute_force(rng, L):
    s = dp.DyadicCountSketch(L, width=2**L, depth=1, seed=5)
    assert s.exact_levels == L
    x = rng.integers(0, 2**L, 3000)
    s.update_many(x)
    for pos in list(range(0, 2**L + 1, max(1, 2**L // 64))) + [2**L]:
        assert s.rank(pos) == brute_rank(x, pos)
    for a, b in [(0, 2**L), (1, 2**L - 1), (2**L // 3, 2**L // 2)]:
        assert s.range_count(a, b) == brute_rank(x, b) - brute_rank(x, a)
    qs = np.linspace(0, 1, 101)
    got = s.quantiles(qs)
    assert [int(v) for v in got] == [int(brute_quantile(x, q)) for q in qs]
    assert s.quantile(0.5) == brute_quantile(x, 0.5)
    # cdf(x) = fraction <= x
    xs = np.arange(2**L)
    assert np.allclose(s.cdf(xs[:50]), [np.mean(x <= v) for v in xs[:50]])


def test_sketch_levels_within_zhao_bound(rng):
    n, gamma = 100_000, 0.01
    x = zipf_stream(rng, n, 2**16)
    s = dp.DyadicCountSketch(16, gamma=gamma, seed=11)
    assert s.exact_levels < 16  # CountSketch levels are exercised
    s.update_many(x)
    qs = np.linspace(0.01, 0.99, 99)
    items = np.quantile(x, qs, method="inverted_cdf").astype(np.int64)
    err = [abs(s.rank(int(v)) - brute_rank(x, int(v))) for v in items]
    assert max(err) <= gamma * n
    # quantile answers: their true rank is within γ·n of the target
    for q, v in zip(qs, s.quantiles(qs)):
        lo, hi = brute_rank(x, int(v)), brute_rank(x, int(v) + 1)
        assert lo - gamma * n <= q * n <= hi + gamma * n


def test_quantile_monotone_in_q_under_noise(rng):
    x = rng.integers(0, 2**12, 500)
    # Heavy Laplace noise: rank estimates are not monotone, the descent's quantiles are.
    p = dp.PrivateDyadicCountSketch(12, width=64, depth=3, epsilon=0.05, seed=2)
    p.update_many(x)
    ranks = [p.rank(v) for v in range(0, 2**12, 16)]
    assert np.any(np.diff(ranks) < 0)
    q = p.quantiles(np.linspace(0, 1, 2001))
    assert np.all(np.diff(q.astype(np.float64)) >= 0)
    single = [p.quantile(v) for v in np.linspace(0, 1, 51)]
    assert all(a <= b for a, b in zip(single, single[1:]))


def test_quantiles_monotone_when_the_noisy_total_is_negative():
    # at n = 4 the noisy total is often below 0; the targets q·total must not then fall as q rises
    negative = 0
    for seed in range(60):
        p = dp.PrivateDyadicCountSketch(8, width=16, depth=3, epsilon=0.5, seed=seed)
        p.update_many(np.array([3, 40, 41, 200]))
        negative += p.noisy_total() < 0
        q = p.quantiles(np.linspace(0, 1, 101)).astype(np.float64)
        assert np.all(np.diff(q) >= 0), seed
    assert negative > 0  # the case under test occurred


def test_bounds_mapping_round_trips_at_resolution(rng):
    lo, hi, L = -50.0, 150.0, 10
    s = dp.DyadicCountSketch(L, width=2**L, depth=1, bounds=(lo, hi), seed=1)
    res = (hi - lo) / 2**L
    assert s.resolution == res
    v = rng.uniform(lo, hi, 5000)
    s.update_many(v)
    for q in np.linspace(0.01, 1, 41):
        true = brute_quantile(v, q)
        got = s.quantile(q)
        assert got <= true + 1e-9 and true < got + res + 1e-9, (q, got, true)
    # each value's bucket edge is within one resolution step below it
    b = s._map_values(v)
    edges = lo + b.astype(np.float64) * res
    assert np.all(edges <= v + 1e-9) and np.all(v < edges + res + 1e-9)
    # outside the bounds: clamped into the end buckets
    s2 = dp.DyadicCountSketch(L, width=2**L, depth=1, bounds=(lo, hi), seed=1)
    s2.update_many(np.array([-1e9, 1e9, float("inf")]))
    assert s2.level_cells(L)[0] == 1 and s2.level_cells(L)[-1] == 2
    assert s2.rank(hi + 1) == 3 and s2.rank(lo) == 0


# -- merge, turnstile ----------------------------------------------------------------------------


def test_merge_of_halves_equals_whole_bit_for_bit(rng):
    x = rng.integers(0, 2**32, 50_000, dtype=np.uint64)
    whole = dp.DyadicCountSketch(32, seed=7)
    whole.update_many(x)
    a, b = dp.DyadicCountSketch(32, seed=7), dp.DyadicCountSketch(32, seed=7)
    a.update_many(x[:20_000])
    for v in x[20_000:21_000]:
        b.update(int(v))  # scalar and batch paths agree too
    b.update_many(x[21_000:])
    a.merge(b)
    assert a.to_bytes() == whole.to_bytes()
    with pytest.raises(ValueError, match="seed"):
        a.merge(dp.DyadicCountSketch(32, seed=8))
    with pytest.raises(ValueError):
        a.merge(dp.DyadicCountSketch(32, gamma=0.02, seed=7))


def test_wide_levels_scalar_and_batch_agree(rng):
    x = rng.integers(0, 2**63, 3000, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    s1, s2 = dp.DyadicCountSketch(64, gamma=0.1, seed=4), dp.DyadicCountSketch(64, gamma=0.1, seed=4)
    s1.update_many(x)
    for v in x:
        s2.update(int(v))
    assert s1.to_bytes() == s2.to_bytes()
    assert s1.rank(2**64) == s1.n == 3000


@pytest.mark.parametrize("counted", [False, True])
def test_batches_of_every_size_equal_item_by_item(rng, counted):
    """update_many splits batches into chunks of 16,384 and builds the small exact levels of a chunk
    from one histogram when the chunk is long enough (>= 16 items): any split of a stream into
    batches, around every threshold, must give the bytes of item-by-item updates."""
    L, n = 18, 40_000
    x = np.concatenate([rng.integers(0, 2**L, n // 2), rng.integers(0, 40, n // 2) * 977]).astype(np.uint64)
    rng.shuffle(x)
    c = rng.integers(-4, 5, n) if counted else None
    ref = dp.DyadicCountSketch(L, width=257, depth=3, seed=11)  # budget 771: levels 1..9 exact
    assert ref.exact_levels == 9
    for i, v in enumerate(x.tolist()):
        ref.update(v, int(c[i])) if counted else ref.update(v)
    for size in (1, 7, 15, 16, 17, 63, 64, 1000, 16_383, 16_384, 16_385, n):
        s = dp.DyadicCountSketch(L, width=257, depth=3, seed=11)
        for start in range(0, n, size):
            if counted:
                s.update_many(x[start:start + size], counts=c[start:start + size])
            else:
                s.update_many(x[start:start + size])
        assert s.to_bytes() == ref.to_bytes(), size


def test_insert_then_delete_returns_previous_cells(rng):
    base = rng.integers(0, 2**20, 5000)
    batch = rng.integers(0, 2**20, 3000)
    s = dp.DyadicCountSketch(20, gamma=0.05, seed=9)
    s.update_many(base)
    before = [s.level_cells(j) for j in range(1, 21)]
    s.update_many(batch)
    s.update_many(batch, counts=-np.ones(len(batch), dtype=np.int64))
    assert s.n == len(base)
    assert all(np.array_equal(a, s.level_cells(j)) for j, a in enumerate(before, start=1))
    s.update(5, 7)
    s.update(5, -7)
    assert all(np.array_equal(a, s.level_cells(j)) for j, a in enumerate(before, start=1))
    p = dp.PrivateDyadicCountSketch(20, gamma=0.05, rho=1.0, seed=9)
    noisy = [p.level_cells(j) for j in range(1, 21)]
    p.update_many(batch, counts=np.full(len(batch), 3))
    p.update_many(batch, counts=np.full(len(batch), -3))
    assert all(np.array_equal(a, p.level_cells(j)) for j, a in enumerate(noisy, start=1))


def test_mass_bound_refuses_overflow():
    s = dp.DyadicCountSketch(8, seed=1)
    s.update(1, 2**62)
    with pytest.raises(OverflowError):
        s.update(1, 1)
    with pytest.raises(ValueError):
        s.update(1, 2**63)


# -- privacy calibration -------------------------------------------------------------------------


def _zero_cells(p):
    return {j: p.level_cells(j).ravel().astype(np.float64) for j in range(1, p.universe_bits + 1)}


@pytest.mark.parametrize("allocation", ["joint", "zhao"])
def test_cell_variance_matches_sigma2(allocation):
    L, w, d, rho = 12, 1000, 4, 0.5  # budget 4000: levels 1..11 exact, level 12 a sketch
    exact_cells, sketch_cells = [], []
    for seed in range(3):
        p = dp.PrivateDyadicCountSketch(L, width=w, depth=d, rho=rho, noise_allocation=allocation, seed=seed)
        cells = _zero_cells(p)
        exact_cells.append(np.concatenate([cells[j] for j in range(1, 12)]))
        sketch_cells.append(cells[12])
    S = 11 * 1 + 1 * d
    meta = p.privacy()
    if allocation == "joint":
        s2_exact = s2_sketch = S / (2 * rho)
        assert meta["sigma2"] == pytest.approx(S / (2 * rho))
    else:
        s2_exact, s2_sketch = L / (2 * rho), d * L / (2 * rho)
    lv = meta["levels"]
    assert lv[0]["sigma2"] == pytest.approx(s2_exact) and lv[11]["sigma2"] == pytest.approx(s2_sketch)
    assert meta["rho_used"] == pytest.approx(rho)
    for sample, s2 in ((np.concatenate(exact_cells), s2_exact), (np.concatenate(sketch_cells), s2_sketch)):
        n = len(sample)
        assert abs(sample.mean()) < 5 * math.sqrt(s2 / n)
        # sample variance has relative sd ≈ sqrt(2/n) (discrete Gaussian ≈ normal at these σ)
        assert abs(sample.var() / s2 - 1) < 5 * math.sqrt(2 / n), (sample.var(), s2)


def test_joint_never_worse_than_zhao():
    for L, w, d in [(12, 1000, 4), (16, 1087, 8), (32, 1608, 9)]:
        j = dp.PrivateDyadicCountSketch(L, width=w, depth=d, rho=1, seed=1, noise_allocation="joint").privacy()
        z = dp.PrivateDyadicCountSketch(L, width=w, depth=d, rho=1, seed=1, noise_allocation="zhao").privacy()
        # sketch-level variance: S/(2ρ) vs d·L/(2ρ); S = E + (L-E)·d <= L·d, strictly when E > 0
        sk = L  # the last level is a sketch level
        assert j["levels"][sk - 1]["sigma2"] < z["levels"][sk - 1]["sigma2"]
        assert j["rho_used"] == pytest.approx(z["rho_used"])


def test_laplace_scale():
    p = dp.PrivateDyadicCountSketch(12, width=1000, depth=4, epsilon=2.0, noise_allocation="joint", seed=1)
    m = p.privacy()
    assert m["noise"] == "discrete_laplace" and m["l1_sensitivity_total"] == 11 + 4
    assert m["levels"][0]["laplace_scale"] == pytest.approx(15 / 2.0)
    assert m["epsilon_used"] == pytest.approx(2.0)
    cells = np.concatenate(list(_zero_cells(p).values()))
    b = 15 / 2.0
    var = 2 * math.exp(-1 / b) / (1 - math.exp(-1 / b)) ** 2  # discrete Laplace variance
    assert abs(cells.var() / var - 1) < 6 * math.sqrt(5 / len(cells))


def _single_item_cells(s_factory, x):
    s = s_factory()
    s.update(x)
    return [s.level_cells(j).ravel().astype(np.int64) for j in range(1, s.universe_bits + 1)]


def test_sensitivities_against_brute_force():
    """Add/remove and replace sensitivities per level, exhaustively on a small hierarchy, against
    _sensitivities (which the noise calibration uses). Replace: ℓ1 doubles; ℓ2² doubles on exact
    levels and reaches 4d (not 2d) on CountSketch levels."""
    L, w, d = 8, 3, 1  # budget 3: level 1 exact, 2..8 sketches with one row
    make = lambda: dp.DyadicCountSketch(L, width=w, depth=d, seed=12)  # noqa: E731
    E = make().exact_levels
    vecs = [_single_item_cells(make, x) for x in range(2**L)]
    add = _sensitivities(L, E, d, "add_remove")
    rep = _sensitivities(L, E, d, "replace")
    worst_sketch_l2 = 0
    for j in range(L):
        V = np.stack([v[j] for v in vecs])  # one row per item
        assert (np.abs(V).sum(1).max(), (V**2).sum(1).max()) == add[j]
        diff = V[None, :, :] - V[:, None, :]  # every replacement x -> y
        r1, r2 = np.abs(diff).sum(2).max(), (diff**2).sum(2).max()
        assert r1 <= rep[j][0] and r2 <= rep[j][1]
        assert r1 == 2 * add[j][0]
        if j < E:
            assert r2 == 2
        else:
            worst_sketch_l2 = max(worst_sketch_l2, r2)
    assert worst_sketch_l2 == 4 * d  # an opposite-sign collision moves one cell by 2: ℓ2² = 4d, not 2d


# -- utility -------------------------------------------------------------------------------------


def test_private_rank_error_at_zhaos_setting():
    """Zipf(1) over 2^16, N = 10^5, γ = 1 %, ρ = 1: average rank error of evenly spaced quantile
    items below γ·N/10 = 100 in each of 5 seeded runs (Zhao Fig 2)."""
    n, m = 100_000, 20
    for run in range(5):
        rng = np.random.default_rng(1000 + run)
        x = zipf_stream(rng, n, 2**16)
        p = dp.PrivateDyadicCountSketch(16, gamma=0.01, rho=1.0, seed=run)
        p.update_many(x)
        qs = np.arange(1, m + 1) / (m + 1)
        items = np.quantile(x, qs, method="inverted_cdf").astype(np.int64)
        err = np.mean([abs(p.rank(int(v)) - brute_rank(x, int(v))) for v in items])
        assert err < 0.01 * n / 10, (run, err)


def test_hierarchical_heavy_hitters_recall(rng):
    n, k = 200_000, 64
    x = zipf_stream(rng, n, 2**16, a=1.1)
    p = dp.PrivateDyadicCountSketch(16, epsilon=1.0, seed=3)
    p.update_many(x)
    counts = np.bincount(x, minlength=2**16)
    heavy = set(np.flatnonzero(counts >= n / k).tolist())
    assert len(heavy) >= 5
    got = p.heavy_hitters(n / (2 * k))
    found = {v for v, _ in got}
    assert heavy <= found  # recall 1.0
    assert all(counts[v] >= n / (4 * k) for v in found)  # no light false positives
    est = [e for _, e in got]
    assert est == sorted(est, reverse=True)
    with pytest.raises(ValueError, match="threshold"):
        p.heavy_hitters(-1e9, max_nodes=100)


# -- serialization -------------------------------------------------------------------------------


def test_serialization_round_trips(rng):
    x = rng.uniform(0, 10, 1000)
    s = dp.DyadicCountSketch(20, gamma=0.05, bounds=(0.0, 10.0), seed=3)
    s.update_many(x, counts=rng.integers(-2, 5, 1000))
    for t in (dp.DyadicCountSketch.from_bytes(s.to_bytes()), pickle.loads(pickle.dumps(s))):
        assert t.to_bytes() == s.to_bytes()
        assert t.bounds == (0.0, 10.0) and t.gamma == 0.05 and t.n == s.n
        assert t.quantile(0.3) == s.quantile(0.3)
    p = dp.PrivateDyadicCountSketch(20, gamma=0.05, epsilon=0.7, noise_allocation="zhao", seed=2)
    p.update_many(rng.integers(0, 2**20, 500))
    t = dp.PrivateDyadicCountSketch.from_bytes(p.to_bytes())
    assert t.to_bytes() == p.to_bytes() and t.epsilon == pytest.approx(0.7)
    assert t.noise_allocation == "zhao" and pickle.loads(pickle.dumps(p)).to_bytes() == p.to_bytes()
    with pytest.raises(ValueError):
        dp.DyadicCountSketch.from_bytes(p.to_bytes())
    with pytest.raises(ValueError):
        dp.PrivateDyadicCountSketch.from_bytes(s.to_bytes())


@pytest.mark.parametrize("private", [False, True])
def test_truncation_and_bitflips_raise(rng, private):
    if private:
        s = dp.PrivateDyadicCountSketch(12, width=40, depth=3, rho=1, seed=1)
    else:
        s = dp.DyadicCountSketch(12, width=40, depth=3, seed=1)
    s.update_many(rng.integers(0, 2**12, 300))
    data = s.to_bytes()
    cls = type(s)
    for cut in sorted(set(rng.integers(0, len(data), 60).tolist()) | {0, 7, 8, 20, len(data) - 1}):
        with pytest.raises(ValueError):
            cls.from_bytes(data[:cut])
    positions = set(range(0, 120)) | set(rng.integers(0, len(data), 200).tolist())
    for pos in positions:
        for bit in (0, 3, 7):
            if (pos, bit) == (7, 3):
                continue  # the "seeded" label bit: not integrity-protected by design (docs/format.md)
            b = bytearray(data)
            b[pos] ^= 1 << bit
            with pytest.raises(ValueError):
                cls.from_bytes(bytes(b))
    with pytest.raises(ValueError):
        cls.from_bytes(data + b"\0")


def test_cells_equal_independent_numpy_reference(rng):
    """The C++ hierarchy against tests/dyadic_reference.py, written from the documented hashing
    (RowHash: seeds per (level, row), multiply-add-shift on the prefix, sign bit 0, bucket from
    bits 1..31): every cell, and ranks (medians included)."""
    from dyadic_reference import NumpyDyadic

    for bits, w, d in [(16, 300, 5), (20, 64, 4), (32, 1608, 9)]:
        s = dp.DyadicCountSketch(bits, width=w, depth=d, seed=77)
        ref = NumpyDyadic(bits, w, d, s.hash_seed)
        x = rng.integers(0, 2**bits, 5000, dtype=np.uint64)
        s.update_many(x)
        ref.update_many(x)
        for j in range(1, bits + 1):
            assert np.array_equal(s.level_cells(j), ref.levels[j - 1]), (bits, j)
        for pos in rng.integers(0, 2**bits, 20).tolist():
            assert s.rank(pos) == ref.rank(pos)


_SIMD_WORKLOAD = r"""
import hashlib, numpy as np, dpsketch as d
h = hashlib.sha256()
rng = np.random.default_rng(8)
for bits, w, dep in [(32, 1608, 9), (16, 100, 3), (24, 77, 4), (40, 50, 5)]:
    x = rng.integers(0, 2**bits, 3001, dtype=np.uint64)
    s = d.DyadicCountSketch(bits, width=w, depth=dep, seed=bits)
    s.update_many(x)
    s.update_many(x[:1001], counts=rng.integers(-3, 4, 1001))
    h.update(s.to_bytes())
print(h.hexdigest())
"""


def test_batch_paths_avx2_and_portable_identical():
    """The AVX2 batch kernels (unit and counted) against the portable loops, bit for bit."""
    import os
    import subprocess
    import sys

    out = []
    for flag in ("0", "1"):
        env = dict(os.environ, DPSKETCH_NO_SIMD=flag)
        out.append(subprocess.run([sys.executable, "-c", _SIMD_WORKLOAD], env=env, capture_output=True, text=True,
                                  check=True).stdout.strip())
    assert out[0] == out[1] and len(out[0]) == 64


# -- the analytic rank-error σ in privacy() ------------------------------------------------------


@pytest.mark.parametrize("noise,depth", [({"epsilon": 1.0}, 3), ({"rho": 1.0}, 4)])
def test_rank_error_sigma_matches_seeded_runs(noise, depth):
    """privacy()['rank_error_sigma'] is the noise std of rank(x) at the position with all L bits set
    (one node per level; median of d cells on CountSketch levels): the variance of that rank over
    independent noise draws on an empty sketch (no collisions) agrees within a 4-standard-error
    band (the band's width from the sample kurtosis), and the band has power: it rejects the
    variance that ignores the median (one cell per CountSketch node)."""
    bits, width = 12, 64
    meta = dp.PrivateDyadicCountSketch(bits, width=width, depth=depth, seed=0, **noise).privacy()
    assert 0 < meta["exact_levels"] < bits  # both kinds of level are summed
    predicted = meta["rank_error_sigma"] ** 2
    assert meta["rank_error_sigma_mean_position"] ** 2 == pytest.approx(predicted / 2)
    runs = 2000
    r = np.array([dp.PrivateDyadicCountSketch(bits, width=width, depth=depth, seed=s, **noise).rank(2**bits - 1)
                  for s in range(1, runs + 1)])
    var = r.var(ddof=1)
    kurt = float(np.mean((r - r.mean()) ** 4) / np.mean((r - r.mean()) ** 2) ** 2) - 3
    se = math.sqrt((2 + max(kurt, 0.0)) / runs)
    assert abs(var / predicted - 1) < 4 * se
    key = "sigma2" if "rho" in noise else "laplace_scale"
    cells = sum(lv[key] if key == "sigma2" else 2 * lv[key] ** 2 for lv in meta["levels"])
    assert abs(var / cells - 1) > 4 * se


@pytest.mark.parametrize("bits", [16, 40, 64])
def test_aggregated_batch_update_gives_the_same_cells(bits):
    # update_many_aggregated feeds the distinct items with their counts (common/key_counts.hpp):
    # the sketch is linear, so the cells and n must equal item-by-item feeding, on skewed and on
    # all-distinct batches, across chunk boundaries and at the ends of the universe.
    from dpsketch import _core

    r = np.random.default_rng(bits)
    top = (1 << bits) - 1
    batches = [
        (r.zipf(1.2, size=40_000) % 5_000).astype(np.uint64),
        r.integers(0, top, size=30_000, dtype=np.uint64, endpoint=True),
        np.array([0, top, top, 0, 1], dtype=np.uint64),
        np.zeros(0, dtype=np.uint64),
    ]
    got = _core.dyadic.DyadicCountSketch(bits, 64, 3, 11)
    want = _core.dyadic.DyadicCountSketch(bits, 64, 3, 11)
    for b in batches:
        got.update_many_aggregated(b)
        want.update_many(b)
    assert got.to_bytes() == want.to_bytes() and got.n == want.n
    if bits < 64:  # out of the universe: refused whole, nothing changed
        before = got.to_bytes()
        with pytest.raises(ValueError, match="out of range"):
            got.update_many_aggregated(np.array([1, top + 1], dtype=np.uint64))
        assert got.to_bytes() == before


@pytest.mark.parametrize("counted", [False, True])
def test_levels_a_chunk_shares_get_one_update_with_the_same_cells(rng, counted):
    # A batch's chunk whose items all have the same prefix at a level updates that level once with
    # the chunk's total: ids from a small range in a 64-bit universe share the top ~50 levels.
    x = (rng.integers(0, 3000, 20_000) + 2**40).astype(np.uint64)
    x[::997] = 2**40 + 7  # and a chunk-long run of one key
    x[5000:5100] = 2**40 + 1
    c = rng.integers(-3, 4, len(x)) if counted else None
    ref = dp.DyadicCountSketch(64, width=97, depth=3, seed=2)
    for i, v in enumerate(x.tolist()):
        ref.update(v, int(c[i]) if counted else 1)
    for size in (1, 100, 20_000):
        s = dp.DyadicCountSketch(64, width=97, depth=3, seed=2)
        for start in range(0, len(x), size):
            s.update_many(x[start:start + size], counts=None if c is None else c[start:start + size])
        assert s.to_bytes() == ref.to_bytes(), size
