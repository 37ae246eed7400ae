"""Correlated noise for cumulative releases: the matrix mechanism with the square-root
factorization of the prefix-sum matrix and an integer encoder (docs/mechanisms/cumulative-correlated.md).

Prefix sums over T steps are A·x with A the T×T lower-triangular ones matrix. With A = B·C, the
series publishes y = C·x + z (the Gaussian mechanism on the query C·x) and answers prefixes as
B·y = A·x + B·z (post-processing). Here:

* C is the integer Toeplitz encoder C_W[k] = round(W·c_k), c_k = C(2k, k)/4^k the coefficients of
  the square root of A (``"sqrt"``), or only its first p coefficients (``"banded"``, p = ``bands``);
  integer so that the discrete Gaussian's zCDP guarantee applies to it exactly
  (docs/mechanisms/cumulative-correlated.md §Integer encoder).
* z is DGauss(σ²) per cell per step, σ² = Δ2²/(2ρ) with Δ2² = d·Σ_k C_W[k]² the exact ℓ2
  sensitivity of C_W·x when one element of one step moves one cell in each of the d rows (§Sensitivity).
* B = A·C_W^{-1}, applied in floating point by forward substitution (§Decoder); it touches only
  y and public coefficients.

The prefix variance is σ²·Σ_{k<t} V_k², V the running sums of C_W^{-1}'s first column (§Variance).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import Any, Optional

import numpy as np

from .. import _core, _seeds
from ..accounting.calibration import noise_guarantee, used_value, zcdp_epsilon
from ..errors import ParameterError, StreamLimitError
from .._validation import check_int

__all__ = ["CORRELATED_SCHEDULES", "DEFAULT_SCALE", "sqrt_coefficients", "integer_encoder", "sensitivity_squared",
           "inverse_coefficients", "decode_prefixes", "prefix_variance_factors", "worst_variance_factor",
           "window_variance_factor",
           "unit_sensitivity_squared", "CorrelatedPlan", "correlated_plan", "Encoder", "Decoder"]

CORRELATED_SCHEDULES = ("sqrt", "banded")
DEFAULT_SCALE = 2**16  # W: rounding W·c_k moves each coefficient by at most 1/(2W) relative to c_0
_CELL_LIMIT = 2**62  # encoded cells stay in int64 with room (the sketches' own mass bound)
_MAX_SIGMA2 = 2**56  # the exact discrete Gaussian sampler needs 64·(⌊σ⌋ + 1)² < 2^64 for an integer σ²
_MIN_SCALE = 2**6  # below this the rounded coefficients lose the square root's shape


def sqrt_coefficients(n: int) -> np.ndarray:
    """c_0..c_{n-1} of A^{1/2}: c_k = C(2k, k)/4^k, by c_k = c_{k-1}·(2k − 1)/(2k) (§Square root).

    :param n: how many coefficients
    """
    n = check_int("n", n, 1, 2**24)
    k = np.arange(1, n, dtype=float)
    return np.concatenate(([1.0], np.cumprod((2 * k - 1) / (2 * k))))


def integer_encoder(horizon: int, bands: Optional[int] = None, scale: int = DEFAULT_SCALE) -> tuple:
    """The integer encoder's coefficients (C_W[0], …, C_W[p−1]) as Python ints, p = min(T, bands)
    (all T without ``bands``): round(W·c_k). The encoder matrix is Toeplitz lower-triangular with
    these on its first p diagonals and zeros below (§Integer encoder).

    :param horizon: T, the number of steps
    :param bands: p, the number of coefficients kept (None: all T, the full square root)
    :param scale: W, the public integer the real coefficients are scaled by before rounding
    """
    horizon = check_int("horizon", horizon, 1, 2**24)
    scale = check_int("scale", scale, 1, 2**30)
    p = horizon if bands is None else min(horizon, check_int("bands", bands, 1, 2**24))
    return tuple(int(v) for v in np.rint(scale * sqrt_coefficients(p)))


def sensitivity_squared(encoder: tuple, depth: int) -> int:
    """Δ2² of C_W·x (exact integer): an element of step j moves one cell per row by ±1, hence those
    d cells by ±C_W[k] at step j + k; the worst j is the first step, where every coefficient is
    inside the horizon: d·Σ_k C_W[k]² (§Sensitivity).

    :param encoder: the integer coefficients (:func:`integer_encoder`)
    :param depth: d, the rows of the sketch (cells one element moves)
    """
    return int(depth) * sum(c * c for c in encoder)


def unit_sensitivity_squared(encoder: tuple, horizon: int, steps: int, depth: int = 1) -> int:
    """Δ2² when one unit may touch ``steps`` = h distinct steps (one cell per row in each, signs
    chosen by the adversary): max over J, |J| = h, of ‖Σ_{j∈J} C_W e_j‖² times d. The coefficients
    are positive, so equal signs are worst and the norm only grows as the steps move earlier and
    closer; the exact maximum is over J = {1..h} (§Unit level; checked by brute force in the tests).

    :param encoder: the integer coefficients (:func:`integer_encoder`)
    :param horizon: T
    :param steps: h, the most steps one unit's elements lie in
    :param depth: d, rows of the sketch
    """
    h = check_int("steps", steps, 1, horizon)
    col = np.zeros(horizon, dtype=object)
    for j in range(h):  # columns 0..h-1 summed: entry t holds Σ_{j<=t, j<h} C_W[t − j]
        for k, c in enumerate(encoder[: horizon - j]):
            col[j + k] += c
    return int(depth) * int(sum(int(v) * int(v) for v in col))


def inverse_coefficients(encoder: tuple, n: int) -> np.ndarray:
    """The first column v of C_W^{-1} (Toeplitz lower-triangular too), n entries, by forward
    substitution: v_0 = 1/C_W[0], v_m = −Σ_{k=1}^{min(m, p−1)} C_W[k]·v_{m−k} / C_W[0] (§Decoder).

    :param encoder: the integer coefficients
    :param n: how many entries (T)
    """
    cw = np.asarray(encoder, dtype=float)
    v = np.zeros(int(n))
    v[0] = 1.0 / cw[0]
    for m in range(1, int(n)):
        k = min(m, len(cw) - 1)
        v[m] = -np.dot(cw[1 : k + 1], v[m - 1 :: -1][:k]) / cw[0]
    return v


def decode_prefixes(encoder: tuple, released: np.ndarray) -> np.ndarray:
    """B·y for released rows y_1..y_t (axis 0 the steps): the noisy prefixes, by forward
    substitution then running sums (post-processing, §Decoder).

    :param encoder: the integer coefficients
    :param released: the released encoded values, steps along axis 0
    """
    dec = Decoder(encoder)
    return np.stack([dec.push(y) for y in np.asarray(released)])


def prefix_variance_factors(encoder: tuple, horizon: int) -> np.ndarray:
    """For t = 1..T, the noise variance of prefix t in units of one window released alone at the
    full ρ (σ₁² = d/(2ρ)): (Σ_k C_W[k]²)·Σ_{k<t} V_k², V the running sums of C_W^{-1}'s first
    column -- row t of B = A·C_W^{-1} is (V_{t−1}, …, V_0) (§Variance). Independent of d and ρ.

    :param encoder: the integer coefficients
    :param horizon: T
    """
    V = np.cumsum(inverse_coefficients(encoder, horizon))
    return float(sum(c * c for c in encoder)) * np.cumsum(V**2)


def window_variance_factor(encoder: tuple, horizon: int, t: int, w: int) -> float:
    """The noise variance of the sliding window (t − w, t] decoded as prefix_t − prefix_{t−w}, in
    units of one window at the full ρ: (Σ_k C_W[k]²)·(Σ_{m<w} V_m² + Σ_{w≤m<t} (V_m − V_{m−w})²), the
    squared norm of the difference of B's rows t and t − w (§Sliding windows). w = t is prefix t.

    :param encoder: the integer coefficients
    :param horizon: T
    :param t: the window's last step
    :param w: its length in steps, 1..t
    """
    t = check_int("t", t, 1, horizon)
    w = check_int("w", w, 1, t)
    V = np.cumsum(inverse_coefficients(encoder, t))
    head = float(np.sum(V[:w] ** 2))
    tail = float(np.sum((V[w:t] - V[: t - w]) ** 2))
    return float(sum(c * c for c in encoder)) * (head + tail)


def worst_variance_factor(schedule: str, horizon: int, bands: Optional[int] = None,
                          scale: int = DEFAULT_SCALE) -> float:
    """max over t of :func:`prefix_variance_factors` for ``"sqrt"`` or ``"banded"`` (``bands`` = p).

    :param schedule: 'sqrt' or 'banded'
    :param horizon: T
    :param bands: p for 'banded'
    :param scale: W
    """
    enc = integer_encoder(horizon, _bands_for(schedule, bands), scale)
    return float(prefix_variance_factors(enc, horizon).max())


def _bands_for(schedule: str, bands: Optional[int]) -> Optional[int]:
    if schedule == "sqrt":
        if bands is not None:
            raise ParameterError("bands= is an option of schedule='banded'")
        return None
    if schedule == "banded":
        if bands is None:
            raise ParameterError("schedule='banded' needs bands= (the number of encoder coefficients kept)")
        return check_int("bands", bands, 1, 2**24)
    raise ParameterError(f"schedule must be one of {', '.join(CORRELATED_SCHEDULES)}, got {schedule!r}")


@dataclass(frozen=True)
class CorrelatedPlan:
    """A correlated-noise series, fixed before any data: encoder, noise and guarantee.

    :ivar schedule: 'sqrt' or 'banded'
    :ivar horizon: T
    :ivar bands: p, the encoder coefficients kept (T for 'sqrt')
    :ivar scale: W
    :ivar encoder: C_W[0..p−1] (ints)
    :ivar depth: d, rows of the sketch
    :ivar l2_squared: Δ2² of the encoded series (exact)
    :ivar sigma2_rational: σ² as (num, den)
    :ivar series_rho: the ρ of the whole series for the noise as drawn (at most the request)
    :ivar requested_rho: the ρ asked for
    :ivar delta: δ of the (ε, δ) conversion recorded, or None
    """

    schedule: str
    horizon: int
    bands: int
    scale: int
    encoder: tuple
    depth: int
    l2_squared: int
    sigma2_rational: tuple
    series_rho: float
    requested_rho: float
    delta: Optional[float] = None

    @property
    def sigma2(self) -> float:
        num, den = self.sigma2_rational
        return num / den

    @property
    def epsilon(self) -> Optional[float]:
        return None if self.delta is None else zcdp_epsilon(self.series_rho, self.delta)

    def variance_factors(self) -> np.ndarray:
        """:func:`prefix_variance_factors` of this encoder (t = 1..T)."""
        return self._tables[0].copy()

    @cached_property
    def _tables(self) -> tuple:
        # (variance factors, prefix variances), computed once per plan (O(T·p))
        V = np.cumsum(inverse_coefficients(self.encoder, self.horizon))
        norms = np.cumsum(V**2)
        return float(sum(c * c for c in self.encoder)) * norms, self.sigma2 * norms

    def prefix_variances(self) -> np.ndarray:
        """σ²·‖row t of B‖² for t = 1..T: each decoded prefix cell's noise variance, an upper
        bound since Var DGauss(σ²) ≤ σ² (§Variance). The decoded noise is a fixed linear
        combination of independent discrete Gaussians, so it is sub-Gaussian with this variance
        proxy (§Intervals)."""
        return self._tables[1].copy()

    def window_variance(self, t: int, w: int) -> tuple:
        """(variance per decoded cell, the same in window units) of prefix_t − prefix_{t−w}
        (:func:`window_variance_factor`; σ² times the squared row difference).

        :param t: the window's last step
        :param w: its length in steps
        """
        f = window_variance_factor(self.encoder, self.horizon, t, w)
        return self.sigma2 * f / float(sum(c * c for c in self.encoder)), f

    def interval_half_width(self, variance: float, level: float) -> float:
        """Half-width of a ``level`` interval for one decoded cell whose noise has variance proxy
        ``variance``: √(2·var·ln(2/(1 − level))) (the sub-Gaussian tail, §Intervals).

        :param variance: the cell's variance proxy
        :param level: the confidence level in (0, 1)
        """
        if not 0 < level < 1:
            raise ParameterError(f"level must be in (0, 1), got {level!r}")
        return float(np.sqrt(2 * variance * np.log(2 / (1 - level))))

    def noise(self, step: int, cells: int, seed: Optional[int]) -> np.ndarray:
        """DGauss(σ²) for every cell of step ``step``: a fresh stream per step (from the secure
        generator, or ``derive_seed(seed, "correlated/<step>")`` -- reproducible, NOT secret).

        :param step: s, 1-based
        :param cells: d·w
        :param seed: the user seed or None
        """
        rng, _ = _seeds.rng(seed, f"correlated/{int(step)}")
        num, den = self.sigma2_rational
        return _core.noise.discrete_gaussian(rng, num, den, int(cells))

    def publish(self, step: int, encoded: np.ndarray, seed: Optional[int]) -> np.ndarray:
        """The released array of step ``step``: the encoded cells C_W·x plus :meth:`noise`, int64,
        read-only. |encoded| <= 2^62 (the encoder checks) and the noise is far below 2^62, so the sum
        stays in int64.

        :param step: s, 1-based
        :param encoded: (C_W·x)_s, int64
        :param seed: the user seed or None
        """
        z = self.noise(step, encoded.size, seed).reshape(encoded.shape)
        if int(np.abs(z).max(initial=0)) > _CELL_LIMIT:  # pragma: no cover - σ is far below 2^62
            raise StreamLimitError("a noise value exceeds 2^62")
        out = encoded + z
        out.setflags(write=False)
        return out

    def charge(self) -> dict:
        """What a budget is charged once for the whole series."""
        return {"rho": self.series_rho, "epsilon": 0}

    def composition(self) -> dict:
        """The ``composition`` record of every step's release: one Gaussian mechanism on C_W·x,
        released one step at a time (each step's noise is fresh; §Privacy)."""
        return {
            "rule": "one Gaussian mechanism on the encoded series C_W·x, released step by step",
            "reason": ("an element of step j moves its d cells by C_W[k] at step j + k; Δ2² = d·Σ_k C_W[k]² "
                       "(docs/mechanisms/cumulative-correlated.md §Sensitivity)"),
            "schedule": self.schedule, "horizon": self.horizon, "series_rho": self.series_rho,
            "series_epsilon": self.epsilon, "series_delta": self.delta, "neighbours": "add or remove one element",
        }

    def step_record(self, step: int) -> dict:
        """The metadata of step ``step``'s release: schedule, W, the coefficients kept, σ², Δ2², ρ
        and the decoded prefix's noise variance (per cell) at this step.

        :param step: s, 1-based
        """
        var = float(self._tables[1][int(step) - 1])
        return {
            "schedule": self.schedule, "horizon": self.horizon, "step": int(step), "bands": self.bands,
            "encoder_scale": self.scale, "noise": "discrete_gaussian",
            "noise_param": self.sigma2, "noise_param_rational": list(self.sigma2_rational),
            "l2_sensitivity_squared": self.l2_squared, "sigma": float(np.sqrt(self.sigma2)),
            "l2_sensitivity": float(np.sqrt(self.l2_squared)),
            "privacy": "zcdp", "rho": self.series_rho, "rho_requested": self.requested_rho,
            "epsilon": self.epsilon, "delta": self.delta,
            "prefix_noise_variance": var,
            "prefix_variance_factor": float(self._tables[0][int(step) - 1]),
            "reference": "docs/mechanisms/cumulative-correlated.md",
        }


    def step_release(self, step: int, published: np.ndarray, *, mechanism: str, seeded: bool,
                     extra: dict) -> Any:
        """The :class:`~dpsketch.Release` of step ``step``: ``sketch`` is the published int64 array
        C_W·x + z of that step; ``metadata`` is :meth:`step_record` with the guarantee (one element
        added or removed, no length read), ``extra`` (the series' place) and ``reproducible_not_secret``.

        :param step: s, 1-based
        :param published: the step's released array
        :param mechanism: the series' mechanism name
        :param seeded: whether the noise came from a user seed
        :param extra: more metadata (shape, hash seed, composition)
        """
        from ..release import PRIVACY_UNIT, Release

        meta = self.step_record(step)
        meta.update(extra)
        meta.update(mechanism=mechanism, privacy_unit=PRIVACY_UNIT, neighbours="add_remove", length="unused",
                    assumes_public_length=False, reproducible_not_secret=bool(seeded),
                    published="Release.sketch: the step's encoded cells plus noise, int64 (depth, width)")
        return Release(items=[], threshold=None, epsilon=self.epsilon, delta=self.delta, mechanism=mechanism,
                       n=None, metadata=meta, rho=self.series_rho, sketch=published)


@lru_cache(maxsize=64)  # a plan is a pure function of its public arguments (the audit builds many)
def correlated_plan(*, schedule: str, horizon: int, depth: int, rho: float, bands: Optional[int] = None,
                    delta: Optional[float] = None, scale: int = DEFAULT_SCALE) -> CorrelatedPlan:
    """The :class:`CorrelatedPlan` of a ``schedule`` series over ``horizon`` steps of a ``depth``-row
    sketch at ``rho`` for the whole series: σ² = Δ2²/(2ρ) (ρ rounded down to a multiple of 2^-32 and
    σ² rounded up, docs/algorithms.md §1), so the noise as drawn is at most ``rho``-zCDP.

    :param schedule: 'sqrt' or 'banded'
    :param horizon: T
    :param depth: d
    :param rho: the series' ρ
    :param bands: p for 'banded'
    :param delta: δ of the (ε, δ) conversion to record, or None
    :param scale: W, the largest to try: halved while σ² would exceed the exact sampler's range
    """
    from ..release import check_privacy_params

    p = _bands_for(schedule, bands)
    horizon = check_int("horizon", horizon, 1, 2**16)
    depth = check_int("depth", depth, 1, _core.MAX_DEPTH)
    total, _ = check_privacy_params(rho, 0.5, name="rho")
    dlt = None if delta is None else check_privacy_params(1.0, delta)[1]
    scale = check_int("scale", scale, _MIN_SCALE, 2**30)
    while True:
        enc = integer_encoder(horizon, p, scale)
        l2 = sensitivity_squared(enc, depth)
        sigma2 = _integer_sigma2(l2, float(total))
        if sigma2 <= _MAX_SIGMA2 or scale <= _MIN_SCALE:
            break
        scale //= 2  # σ² scales with W²: a smaller W keeps the exact sampler in range (§Calibration)
    if sigma2 > _MAX_SIGMA2:
        raise ParameterError(f"rho={rho} is too small for the exact sampler at this horizon and depth "
                             f"(σ² = {sigma2} > 2^56 even at W = {_MIN_SCALE}); raise rho")
    _, used = noise_guarantee("gaussian", 0, l2, sigma2, 1)
    return CorrelatedPlan(schedule, horizon, len(enc), int(scale), enc, depth, l2, (sigma2, 1), float(used),
                          float(total), dlt)


def _integer_sigma2(l2: int, rho: float) -> int:
    """σ² = Δ2²/(2ρ) with ρ rounded down to a multiple of 2^-32 (docs/algorithms.md §1), then rounded
    UP to an integer: more noise, so ρ_used = Δ2²/(2σ²) stays at most ρ; the integer keeps the exact
    sampler's 128-bit arithmetic in range for the large σ² of a scaled encoder (§Calibration)."""
    q = Fraction(int(l2)) / (2 * used_value(rho))  # exact: Python integers, no 64-bit limit
    return -(-q.numerator // q.denominator)


class Encoder:
    """C_W·x one step at a time: keeps the last p − 1 exact steps (int64 arrays; never published).

    :param encoder: the integer coefficients
    """

    def __init__(self, encoder: tuple) -> None:
        self._c = tuple(int(c) for c in encoder)
        self._past: list = []  # most recent first, at most p − 1

    def push(self, x: np.ndarray) -> np.ndarray:
        """(C_W·x)_t for the new step x_t: Σ_k C_W[k]·x_{t−k}, exact in int64 (checked first).

        :param x: the step's exact cells (int64)
        """
        x = np.asarray(x, dtype=np.int64)
        terms = [x] + self._past
        bound = sum(c * int(np.abs(v).max(initial=0)) for c, v in zip(self._c, terms))
        if bound > _CELL_LIMIT:
            # (the message states no figure: the bound is a function of the exact cells)
            raise StreamLimitError("an encoded cell could exceed 2^62; fewer counts per step")
        out = np.zeros(x.shape, dtype=np.int64)
        for c, v in zip(self._c, terms):
            out += c * v
        self._past = terms[: len(self._c) - 1]
        return out

    def memory_bytes(self) -> int:
        return sum(v.nbytes for v in self._past)


class Decoder:
    """B·y one step at a time: x̂_t = (y_t − Σ_{k=1}^{p−1} C_W[k]·x̂_{t−k})/C_W[0], prefix_t =
    prefix_{t−1} + x̂_t (§Decoder). Keeps p − 1 decoded steps and the running prefix (floats);
    reads only released values and public coefficients.

    :param encoder: the integer coefficients
    """

    def __init__(self, encoder: tuple) -> None:
        self._c = np.asarray(encoder, dtype=float)
        self._past: list = []
        self._prefix: Optional[np.ndarray] = None

    def push(self, y: np.ndarray) -> np.ndarray:
        """The decoded noisy prefix after released step y_t (a new array).

        :param y: the step's released encoded values
        """
        acc = np.asarray(y, dtype=float).copy()
        for c, v in zip(self._c[1:], self._past):
            acc -= c * v
        xhat = acc / self._c[0]
        self._past = ([xhat] + self._past)[: len(self._c) - 1]
        self._prefix = xhat.copy() if self._prefix is None else self._prefix + xhat
        return self._prefix.copy()

    def memory_bytes(self) -> int:
        return sum(v.nbytes for v in self._past) + (0 if self._prefix is None else self._prefix.nbytes)
