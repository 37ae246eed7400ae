"""The correlated-noise factorization (dpsketch.mechanisms.correlated;
docs/mechanisms/cumulative-correlated.md): the square-root coefficients, the integer encoder, its
exact sensitivity (against brute force over every event position), A = B·C_W, and the worst
prefix variance against the issue's figures and the tree schedules."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpsketch.errors import ParameterError
from dpsketch.mechanisms import correlated as cr
from dpsketch.time.cumulative import schedule_for


def toeplitz(first: np.ndarray, n: int) -> np.ndarray:
    m = np.zeros((n, n))
    for k, c in enumerate(first[:n]):
        m += np.diag(np.full(n - k, float(c)), -k)
    return m


def test_sqrt_coefficients_square_to_the_prefix_matrix():
    n = 40
    c = cr.sqrt_coefficients(n)
    assert c[:4].tolist() == [1.0, 0.5, 0.375, 0.3125]
    assert all(abs(c[k] - math.comb(2 * k, k) / 4**k) < 1e-14 for k in range(n))
    C = toeplitz(c, n)
    assert np.allclose(C @ C, np.tril(np.ones((n, n))), atol=1e-12)


@pytest.mark.parametrize("bands", [None, 1, 3, 8])
def test_decoder_times_encoder_is_the_prefix_matrix(bands):
    T = 50
    enc = cr.integer_encoder(T, bands)
    assert all(isinstance(c, int) for c in enc) and len(enc) == (T if bands is None else bands)
    CW = toeplitz(np.asarray(enc, float), T)
    B = np.tril(np.ones((T, T))) @ toeplitz(cr.inverse_coefficients(enc, T), T)
    assert np.allclose(B @ CW, np.tril(np.ones((T, T))), atol=1e-9)
    # the streaming decoder applies the same B
    y = np.random.default_rng(1).normal(size=(T, 3))
    assert np.allclose(cr.decode_prefixes(enc, y), B @ y, atol=1e-9)


@pytest.mark.parametrize("T,bands,depth", [(1, None, 3), (7, None, 1), (64, None, 5), (64, 4, 2), (33, 40, 3)])
def test_sensitivity_equals_brute_force_over_every_event_position(T, bands, depth):
    enc = cr.integer_encoder(T, bands)
    worst = 0
    for j in range(T):  # an element of step j + 1: its d cells move by C_W[t − j] at steps t >= j
        col = [enc[t - j] if 0 <= t - j < len(enc) else 0 for t in range(T)]
        worst = max(worst, depth * sum(v * v for v in col))
    assert cr.sensitivity_squared(enc, depth) == worst


@pytest.mark.parametrize("T", [6, 12, 64])
@pytest.mark.parametrize("h", [1, 2, 3, 4])
def test_unit_level_sensitivity_equals_brute_force(T, h):
    if T == 64 and h > 2:
        T = 16  # C(64, 3) subsets is slow in pure Python; the rule is the same
    for bands in (None, 3):
        enc = cr.integer_encoder(T, bands)
        cols = [[enc[t - j] if 0 <= t - j < len(enc) else 0 for t in range(T)] for j in range(T)]
        best = 0
        for J in itertools.combinations(range(T), h):
            s = [sum(cols[j][t] for j in J) for t in range(T)]
            best = max(best, sum(v * v for v in s))
        assert cr.unit_sensitivity_squared(enc, T, h, depth=2) == 2 * best
    assert cr.unit_sensitivity_squared(cr.integer_encoder(T), T, 1, 3) == cr.sensitivity_squared(cr.integer_encoder(T), 3)


ISSUE = {24: 4.30, 168: 7.27, 8760: 15.65}


@pytest.mark.parametrize("T", [24, 168, 720, 8760])
def test_worst_variance_table(T):
    sqrt = cr.worst_variance_factor("sqrt", T)
    if T in ISSUE:
        assert ISSUE[T] / 1.1 <= sqrt <= ISSUE[T] * 1.1
    # the (0.701 + ln T/π)² lower bound for any factorization (Henzinger et al.)
    assert sqrt >= (0.701 + math.log(T) / math.pi) ** 2 * 0.99
    # beats both trees at every horizon of the table
    assert sqrt < schedule_for("smooth", T).worst_variance_factor < schedule_for("binary", T).worst_variance_factor
    # banded: more coefficients, less variance, and p = T is the full square root
    b = [cr.worst_variance_factor("banded", T, p) for p in (4, 16, 64)]
    assert b[0] > b[1] > b[2] >= sqrt * 0.999
    assert cr.worst_variance_factor("banded", T, T) == pytest.approx(sqrt)


def test_variance_factor_matches_a_direct_computation():
    T = 30
    enc = cr.integer_encoder(T)
    B = np.tril(np.ones((T, T))) @ np.linalg.inv(toeplitz(np.asarray(enc, float), T))
    direct = sum(c * c for c in enc) * (B**2).sum(axis=1)
    assert np.allclose(cr.prefix_variance_factors(enc, T), direct, rtol=1e-9)


def test_plan_calibrates_sigma_to_the_exact_sensitivity():
    p = cr.correlated_plan(schedule="sqrt", horizon=24, depth=5, rho=0.5, delta=1e-6)
    assert p.l2_squared == cr.sensitivity_squared(cr.integer_encoder(24), 5)
    assert p.series_rho <= 0.5 and p.l2_squared / (2 * p.sigma2) == pytest.approx(p.series_rho, rel=1e-12)
    rec = p.step_record(24)
    assert rec["prefix_variance_factor"] == pytest.approx(4.3039, abs=1e-3)
    # in units of σ₁² = d/(2ρ): the prefix noise variance per cell
    assert rec["prefix_noise_variance"] == pytest.approx(rec["prefix_variance_factor"] * 5 / (2 * 0.5), rel=1e-6)
    with pytest.raises(ParameterError):
        cr.correlated_plan(schedule="banded", horizon=24, depth=5, rho=0.5)
    with pytest.raises(ParameterError):
        cr.correlated_plan(schedule="sqrt", horizon=24, depth=5, rho=0.5, bands=3)


@pytest.mark.parametrize("bands", [None, 4])
def test_window_variance_is_the_norm_of_the_row_difference(bands):
    T = 40
    enc = cr.integer_encoder(T, bands)
    B = np.tril(np.ones((T, T))) @ np.linalg.inv(toeplitz(np.asarray(enc, float), T))
    scale = sum(c * c for c in enc)
    for t, w in [(40, 1), (40, 7), (20, 20), (13, 12)]:
        row = B[t - 1] - (B[t - w - 1] if w < t else 0)
        assert cr.window_variance_factor(enc, T, t, w) == pytest.approx(scale * float(row @ row), rel=1e-9)
    # the issue's figure: a week inside a year of hours, about 18 window units (against 168 for the sum)
    assert cr.window_variance_factor(cr.integer_encoder(8760), 8760, 8760, 168) == pytest.approx(17.85, abs=0.05)


def test_encoder_refuses_cells_that_could_overflow():
    from dpsketch.errors import StreamLimitError

    enc = cr.Encoder(cr.integer_encoder(4))
    enc.push(np.array([2**40], dtype=np.int64))
    with pytest.raises(StreamLimitError):
        enc.push(np.array([2**46], dtype=np.int64))  # 2^16·2^46 = 2^62 plus the earlier step


def test_small_rho_halves_the_scale_and_keeps_the_sampler_in_range():
    p = cr.correlated_plan(schedule="sqrt", horizon=8760, depth=255, rho=2**-30)
    assert p.scale < cr.DEFAULT_SCALE and p.sigma2_rational[1] == 1 and p.sigma2 <= 2**56
    assert p.series_rho <= 2**-30
    z = p.noise(1, 1000, seed=3)  # the exact sampler accepts it
    assert abs(float(np.std(z)) / math.sqrt(p.sigma2) - 1) < 0.15
    # a fractional ρ with a large denominator gives an integer σ², rounded up
    q = cr.correlated_plan(schedule="sqrt", horizon=6, depth=2, rho=0.3)
    assert q.sigma2_rational[1] == 1 and q.series_rho <= 0.3
    from fractions import Fraction
    from dpsketch.accounting.calibration import used_value

    # the smallest integer σ² at the ρ actually used (ρ rounded down to a multiple of 2^-32)
    sig = q.sigma2_rational[0]
    assert Fraction(q.l2_squared, 2 * sig) <= used_value(0.3) < Fraction(q.l2_squared, 2 * (sig - 1))
