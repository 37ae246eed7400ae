"""Cumulative(..., schedule="sqrt" | "banded"): correlated discrete Gaussian noise over a
Count-Min or CountSketch series (docs/mechanisms/cumulative-correlated.md).

K1: each step publishes C_W·x + z (int64, depth × width) and the decoded prefix is A·x + B·z: the
empirical covariance of the decoded prefix noise over many seeded runs is σ²·B·Bᵀ (whitened, the
identity within sampling error). K2: estimates read the decoded cells at the sketch's own hash
positions. K3: the metadata records schedule, W, σ², Δ2², ρ and the prefix variance; the budget
is charged ρ once. K4: nothing but the published arrays reaches the decoder."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpsketch
from dpsketch import Budget, Cumulative
from dpsketch.errors import ParameterError
from dpsketch.mechanisms import correlated as cr
from dpsketch.time.correlated import CorrelatedCumulative

W, D = 16, 2


def toeplitz(first, n):
    m = np.zeros((n, n))
    for k, c in enumerate(first[:n]):
        m += np.diag(np.full(n - k, float(c)), -k)
    return m


def steps_data(T, rng):
    return [rng.integers(0, 50, size=int(rng.integers(0, 40))).astype(np.int64) for _ in range(T)]


@pytest.mark.parametrize("schedule,bands", [("sqrt", None), ("banded", 3)])
def test_decoded_noise_covariance_is_sigma2_B_Bt(schedule, bands):
    T, runs = 8, 300
    rng = np.random.default_rng(5)
    data = steps_data(T, rng)
    exact = []
    cs = dpsketch.CountSketch(W, D, hash_seed=99)
    for xs in data:
        cs.update_many(xs) if len(xs) else None
        exact.append(cs.cells().astype(float))
    exact = np.stack(exact)  # (T, D, W) exact prefixes
    noise = []
    for r in range(runs):
        c = Cumulative(horizon=T, sketch="countsketch", width=W, depth=D, hash_seed=99, rho=0.5,
                       schedule=schedule, bands=bands, seed=1000 + r)
        pre = []
        for xs in data:
            c.step(xs)
            pre.append(c.prefix().cells)
        noise.append((np.stack(pre) - exact).reshape(T, -1).T)  # (cells, T)
    noise = np.concatenate(noise)  # N samples of the T-vector of prefix noise
    plan = c.plan
    enc = plan.encoder
    B = np.tril(np.ones((T, T))) @ toeplitz(cr.inverse_coefficients(enc, T), T)
    cov = plan.sigma2 * B @ B.T
    assert np.allclose(np.diag(cov), plan.prefix_variances())
    white = np.linalg.solve(np.linalg.cholesky(cov), noise.T).T
    N = len(white)
    S = white.T @ white / N
    # entries of a Wishart/N: sd √(2/N) on the diagonal, √(1/N) off it; 5 sd is a 1e-6 event per entry
    assert np.all(np.abs(np.diag(S) - 1) < 5 * math.sqrt(2 / N)), np.diag(S)
    off = S - np.diag(np.diag(S))
    assert np.all(np.abs(off) < 5 * math.sqrt(1 / N)), off
    assert abs(white.mean()) < 5 / math.sqrt(N * T)


def test_published_arrays_are_integer_encoded_cells_plus_noise_and_decode_to_prefixes():
    T = 12
    rng = np.random.default_rng(2)
    data = steps_data(T, rng)
    c = Cumulative(horizon=T, sketch="countmin", width=W, depth=3, hash_seed=7, rho=1.0, schedule="sqrt", seed=3)
    rels = [c.step(xs) for xs in data]
    Y = np.stack([r.sketch for r in rels])
    assert Y.dtype == np.int64 and Y.shape == (T, 3, W)
    with pytest.raises(ValueError):
        rels[0].sketch[0, 0] = 1  # read-only
    # the decoder reads the published arrays alone
    assert np.allclose(cr.decode_prefixes(c.plan.encoder, Y)[-1], c.prefix().cells)
    # and the same seed gives the same noise: Y − C_W·x is the same for other data
    c2 = Cumulative(horizon=T, sketch="countmin", width=W, depth=3, hash_seed=7, rho=1.0, schedule="sqrt", seed=3)
    Y2 = np.stack([c2.step(None).sketch for _ in range(T)])
    leaves = []
    for xs in data:
        s = dpsketch.CountMin(W, 3, hash_seed=7)
        s.update_many(xs) if len(xs) else None
        leaves.append(s.cells())
    X = np.stack(leaves).astype(object)
    CW = toeplitz(np.asarray(c.plan.encoder, dtype=float), T).astype(np.int64).astype(object)
    enc = np.einsum("ts,sdw->tdw", CW, X)
    assert np.array_equal((Y - Y2).astype(object), enc)


@pytest.mark.parametrize("sketch", ["countmin", "countsketch"])
def test_estimates_use_the_sketch_hash_positions(sketch):
    T = 6
    c = Cumulative(horizon=T, sketch=sketch, width=64, depth=5, hash_seed=11, rho=50.0, schedule="sqrt", seed=4)
    heavy = {5: 300, 17: 120, 23: 40}
    for s in range(T):
        xs = np.concatenate([np.full(v // T, k, dtype=np.int64) for k, v in heavy.items()])
        c.step(xs)
    p = c.prefix()
    half = p.cell_interval(0.999)
    est = p.estimate_many(list(heavy))
    for (k, v), e in zip(heavy.items(), est):
        assert abs(e - v) < 3 * half + 1e-9, (k, v, e)
    assert p.estimate(5) == pytest.approx(est[0])
    assert [k for k, _ in p.top(range(100), k=3)] == [5, 17, 23]
    # string keys through the same positions
    cs = Cumulative(horizon=2, sketch=sketch, width=64, depth=5, hash_seed=11, rho=50.0, schedule="sqrt", seed=4)
    cs.step(["a"] * 50 + ["b"] * 5)
    cs.step(["a"] * 50)
    assert abs(cs.prefix().estimate("a") - 100) < 3 * cs.prefix().cell_interval(0.999)


def test_positions_match_a_unit_update():
    for cls in (dpsketch.CountMin, dpsketch.CountSketch):
        for key in (0, 12345, -7, "key"):
            s = cls(32, 4, hash_seed=3)
            s.update(key)
            b, g = s.positions([key])
            m = np.zeros((4, 32), dtype=np.int64)
            m[np.arange(4), b[:, 0]] = g[:, 0]
            assert np.array_equal(s.cells(), m)


def test_metadata_budget_and_options():
    budget = Budget(rho=1.0)
    c = Cumulative(horizon=24, sketch="countsketch", width=32, depth=5, rho=0.5, delta=1e-6, schedule="sqrt",
                   budget=budget, seed=1)
    assert isinstance(c, CorrelatedCumulative)
    assert budget.spent().rho == pytest.approx(0.5)
    r = c.step([1, 2, 3])
    m = r.metadata
    assert m["schedule"] == "sqrt" and m["encoder_scale"] == cr.DEFAULT_SCALE
    assert m["l2_sensitivity_squared"] == cr.sensitivity_squared(c.plan.encoder, 5)
    assert m["rho"] <= 0.5 and r.rho == m["rho"] and r.epsilon == pytest.approx(cr.zcdp_epsilon(m["rho"], 1e-6))
    assert m["prefix_noise_variance"] == pytest.approx(c.plan.prefix_variances()[0])
    assert m["reproducible_not_secret"] is True and m["privacy_unit"] == "one stream element"
    assert "n" not in m and r.n is None
    assert c.worst_variance_factor() == pytest.approx(4.3039, abs=1e-3)
    b = Cumulative(horizon=24, sketch="countsketch", width=32, depth=5, rho=0.5, schedule="banded", bands=4)
    assert b.plan.bands == 4 and b.worst_variance_factor() > c.worst_variance_factor()
    for bad in (dict(epsilon=1.0), dict(rho=0.5, sketch="dyadic"), dict(rho=0.5, node_options={"beta": 0.1})):
        kw = dict(horizon=4, sketch="countsketch", width=8, depth=2, schedule="sqrt")
        kw.update(bad)
        with pytest.raises(ParameterError):
            Cumulative(**kw)
    with pytest.raises(ParameterError):
        Cumulative(horizon=4, sketch="countsketch", width=8, depth=2, rho=0.5, schedule="binary", bands=3)
    with pytest.raises(ParameterError):
        Cumulative(horizon=4, sketch="countsketch", width=8, depth=2, rho=0.5, schedule="banded")


def test_keep_bounds_the_state():
    T = 40
    c = Cumulative(horizon=T, sketch="countsketch", width=64, depth=5, rho=0.5, schedule="banded", bands=4, keep=1)
    for _ in range(T):
        c.step([1, 2, 3])
    cell = 64 * 5 * 8
    # encoder: p − 1 exact steps; decoder: p − 1 decoded steps + the running prefix; one kept prefix
    assert c.memory_bytes() == (3 + 3 + 1 + 1) * cell
    with pytest.raises(ParameterError):
        c.prefix(T - 1)
    with pytest.raises(ParameterError):
        c.step([1])  # the horizon is reached


def test_sliding_window_is_the_difference_of_two_decoded_prefixes():
    T = 10
    c = Cumulative(horizon=T, sketch="countsketch", width=32, depth=3, hash_seed=5, rho=2.0, schedule="sqrt", seed=9)
    for s in range(T):
        c.step([1] * 10 + [s])
    win = c.window(10, 3)
    assert np.allclose(win.cells, c.prefix(10).cells - c.prefix(7).cells)
    var, factor = c.plan.window_variance(10, 3)
    assert win.noise_variance == var and win.variance_factor == factor
    assert abs(win.estimate(1) - 30) < 3 * win.cell_interval(0.999)
    assert np.allclose(c.window(4, 4).cells, c.prefix(4).cells)
    k = Cumulative(horizon=T, sketch="countsketch", width=32, depth=3, rho=2.0, schedule="sqrt", keep=2)
    for s in range(T):
        k.step([1])
    k.window(10, 1)
    with pytest.raises(ParameterError):
        k.window(10, 3)  # prefix 7 is no longer kept
