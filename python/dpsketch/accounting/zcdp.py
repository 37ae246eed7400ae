"""zCDP arithmetic for tight accounting (docs/accounting.md; spec §11): the CKS20 conversion from
ρ-zCDP to (ε, δ)-DP and its inverse, the exact zCDP of the discrete Laplace mechanism with a
rigorous bound on the supremum over Rényi orders, and the zCDP of bounded-range and pure spends.

Every function here is pure (no state, no data) and errs on the side of privacy: a conversion may
return a slightly larger ε or δ than the exact optimum (any Rényi order α > 1 gives a valid
bound, so an imperfect search only loses tightness), and the zCDP of a profile is an upper bound
on sup_α D_α/α, never an estimate of it.
"""

from __future__ import annotations

import functools
import math
from typing import Tuple

import numpy as np

from ..errors import ParameterError

__all__ = ["classic_epsilon", "cks20_epsilon", "cks20_delta", "cks20_rho_for", "dlaplace_renyi",
           "dlaplace_zcdp", "bounded_range_zcdp", "pure_zcdp", "gaussian_zcdp"]

_SAFETY = 1e-12  # relative margin that covers float rounding in a conversion (always added, never removed)


def _up(x: float, rel: float = _SAFETY) -> float:
    return math.nextafter(x * (1 + rel) if x > 0 else x, math.inf)


def _check_rho(rho: float) -> float:
    r = float(rho)
    if not (math.isfinite(r) and r >= 0):
        raise ParameterError(f"rho must be a finite number >= 0, got {rho!r}")
    return r


def _check_delta(delta: float) -> float:
    d = float(delta)
    if not 0 < d < 1:
        raise ParameterError(f"delta must be in (0, 1), got {delta!r}")
    return d


def classic_epsilon(rho: float, delta: float) -> float:
    """ρ + 2·sqrt(ρ·ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3): the conversion dpsketch used before
    CKS20; kept as the reference that :func:`cks20_epsilon` never exceeds."""
    r, d = _check_rho(rho), _check_delta(delta)
    return r + 2 * math.sqrt(r * math.log(1 / d))


def _cks_eps_at(alpha: float, rho: float, log_inv_delta: float) -> float:
    """ε(α) = αρ + ln(1 − 1/α) + (ln(1/δ) − ln α)/(α − 1) (CKS20 Prop. 12 solved for ε)."""
    am1 = alpha - 1
    return alpha * rho + math.log1p(-1 / alpha) + (log_inv_delta - math.log(alpha)) / am1


def _cks_log_delta_at(alpha: float, rho: float, epsilon: float) -> float:
    """ln δ(α) = (α − 1)(αρ − ε) + α·ln(1 − 1/α) − ln(α − 1) (CKS20 Prop. 12)."""
    am1 = alpha - 1
    return am1 * (alpha * rho - epsilon) + alpha * math.log1p(-1 / alpha) - math.log(am1)


def _minimise_over_alpha(f, hint: float) -> float:
    """min over α > 1 of f(α), searched in x = ln(α − 1): a scan of x ∈ [−12, 14] then a golden
    section around the best point, and the ``hint`` evaluated too. Every α gives a valid bound, so
    the result is always valid; the search only decides how tight it is."""
    best_x, best = math.log(hint - 1), f(hint)
    xs = np.linspace(-12.0, 14.0, 209)
    for x in xs:
        v = f(1 + math.exp(x))
        if v < best:
            best, best_x = v, float(x)
    lo, hi = best_x - 0.25, best_x + 0.25
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = f(1 + math.exp(a)), f(1 + math.exp(b))
    for _ in range(80):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = f(1 + math.exp(a))
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = f(1 + math.exp(b))
    return min(best, fa, fb)


@functools.lru_cache(maxsize=4096)
def cks20_epsilon(rho: float, delta: float) -> float:
    """The ε such that ρ-zCDP implies (ε, δ)-DP by Canonne, Kamath & Steinke 2020 (arXiv
    2004.00010, Prop. 12 / p. 13): the minimum over α > 1 of
    αρ + ln(1 − 1/α) + (ln(1/δ) − ln α)/(α − 1), rounded up. Never above :func:`classic_epsilon`
    (the classic bound's optimal order is one of the orders tried, and at every order the CKS20
    term is the smaller one). 0 for ρ = 0.

    :param rho: ρ of the ρ-zCDP guarantee (>= 0)
    :param delta: δ wanted, in (0, 1)
    """
    r, d = _check_rho(rho), _check_delta(delta)
    if r == 0:
        return 0.0
    L = math.log(1 / d)
    hint = 1 + math.sqrt(L / r)  # the classic bound's optimal order
    eps = _minimise_over_alpha(lambda a: _cks_eps_at(a, r, L), hint)
    return max(0.0, _up(min(eps, classic_epsilon(r, d))))


def cks20_delta(rho: float, epsilon: float) -> float:
    """The δ such that ρ-zCDP implies (ε, δ)-DP (CKS20 Prop. 12): the minimum over α > 1 of
    exp((α − 1)(αρ − ε) + α·ln(1 − 1/α))/(α − 1), capped at 1, rounded up.

    :param rho: ρ of the ρ-zCDP guarantee (>= 0)
    :param epsilon: ε wanted (>= 0)
    """
    r, e = _check_rho(rho), float(epsilon)
    if not (math.isfinite(e) and e >= 0):
        raise ParameterError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    if r == 0:
        return 0.0
    hint = max(1 + 1e-9, (e + r) / (2 * r))  # the order that minimises the leading term
    log_d = _minimise_over_alpha(lambda a: _cks_log_delta_at(a, r, e), hint)
    return min(1.0, _up(math.exp(log_d), 1e-9))


def _cks_cost_at(alpha: float, log_inv_delta: float) -> float:
    """c(α) = ln(1 − 1/α) + (ln(1/δ) − ln α)/(α − 1): CKS20's ε at order α is αρ + c(α)."""
    return math.log1p(-1 / alpha) + (log_inv_delta - math.log(alpha)) / (alpha - 1)


@functools.lru_cache(maxsize=4096)
def cks20_rho_for(epsilon: float, delta: float) -> float:
    """The largest ρ such that ρ-zCDP implies (ε, δ)-DP by :func:`cks20_epsilon`: the inverse used
    to calibrate Gaussian noise to an (ε, δ) target. At each order α the CKS20 ε is affine in ρ,
    αρ + c(α), so ρ-zCDP gives (ε, δ) iff αρ + c(α) <= ε for some α, that is iff
    ρ <= max over α > 1 of (ε − c(α))/α: one search over α (every α found gives a valid ρ, the
    search only decides how large). The target is ε·(1 − 10⁻¹⁰), so the rounding up inside
    :func:`cks20_epsilon` cannot carry it past ε. Guaranteed: ``cks20_epsilon(cks20_rho_for(e, d),
    d) <= e``."""
    e, d = float(epsilon), _check_delta(delta)
    if not (math.isfinite(e) and e > 0):
        raise ParameterError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    L = math.log(1 / d)
    target = e * (1 - 1e-10)
    classic = (math.sqrt(L + target) - math.sqrt(L)) ** 2  # the classic inverse: a lower bound
    hint = 1 + math.sqrt(L / classic) if classic > 0 else 2.0
    best = -_minimise_over_alpha(lambda a: -(target - _cks_cost_at(a, L)) / a, hint)
    rho = max(best, classic, 0.0)
    while rho > 0 and cks20_epsilon(rho, d) > e:  # float rounding: step down until the check holds
        rho *= 1 - 1e-12
    return rho


# -- zCDP of each noise law ---------------------------------------------------------------------------

def gaussian_zcdp(sensitivity_sq: float, sigma2: float) -> float:
    """ρ = Δ2²/(2σ²) of the discrete Gaussian DGauss(σ²) on a query of squared ℓ2 sensitivity Δ2²
    (CKS20 Thm. 14; the same as the continuous Gaussian)."""
    return float(sensitivity_sq) / (2 * float(sigma2))


def pure_zcdp(epsilon: float) -> float:
    """ε²/2: any ε-DP mechanism is (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
    return float(epsilon) ** 2 / 2


def bounded_range_zcdp(eta: float) -> float:
    """η²/8: an η-bounded-range mechanism (the exponential mechanism with ε = η, Gumbel top-k, ...)
    is (η²/8)-zCDP (Cesar & Rogers, ALT 2021, Lemma 3.2)."""
    return float(eta) ** 2 / 8


def _dlap_log_mgf(lam: np.ndarray, t: float, shift: int) -> np.ndarray:
    """ln E_P[exp(λ·L)] for the privacy loss L of DLap(t) (P(z) ∝ e^{−t|z|}) against its copy
    shifted by ``shift`` (an integer >= 1), ε = t·shift, as a numpy array over λ > 0.

    With P centred at 0 and Q at s: L(z) = t(|z − s| − |z|) is ε for z <= 0, −ε for z >= s and
    t(s − 2z) in between. Summing P(z) = tanh(t/2)·e^{−t|z|} over the three parts:
      z <= 0: e^{λε}/(1 + e^{−t});   z >= s: e^{−(1+λ)ε}/(1 + e^{−t});
      0 < z < s: tanh(t/2)·e^{λε}·Σ_{z=1}^{s−1} e^{−u z} with u = t(1 + 2λ)."""
    eps = t * shift
    log_head = -math.log1p(math.exp(-t))
    parts = [lam * eps + log_head, -(1 + lam) * eps + log_head]
    if shift > 1:
        u = t * (1 + 2 * lam)
        # Σ_{z=1}^{s−1} e^{−uz} = e^{−u}(1 − e^{−u(s−1)})/(1 − e^{−u})
        geo = -u + np.log(-np.expm1(-u * (shift - 1))) - np.log(-np.expm1(-u))
        parts.append(math.log(math.tanh(t / 2)) + lam * eps + geo)
    stacked = np.stack(parts)
    m = stacked.max(axis=0)
    return m + np.log(np.exp(stacked - m).sum(axis=0))


def dlaplace_renyi(alpha, epsilon: float, sensitivity: int = 1):
    """D_α(P‖Q) of the discrete Laplace mechanism with ε = Δ1/b at ℓ1 sensitivity Δ1 = ``sensitivity``
    (noise DLap with parameter t = ε/Δ1, neighbours shifted by Δ1), for α > 1 (a number or array).
    The two directions are equal by symmetry of the law."""
    a = np.asarray(alpha, dtype=np.float64)
    s = int(sensitivity)
    if s < 1:
        raise ParameterError("the sensitivity of a discrete Laplace profile is an integer >= 1")
    lam = a - 1
    out = _dlap_log_mgf(np.atleast_1d(lam), float(epsilon) / s, s) / np.atleast_1d(lam)
    return out if a.ndim else float(out[0])


def dlaplace_zcdp(epsilon: float, sensitivity: int = 1, *, tolerance: float = 1e-6) -> float:
    """An upper bound, within a relative ``tolerance`` of the exact value, on the zCDP of the
    discrete Laplace mechanism, ρ = sup_{α>1} D_α(P‖Q)/α, for a query whose ℓ1 sensitivity
    ``sensitivity`` (Δ1) is moved by one neighbour along a single coordinate; never above ε²/2.

    Rigorous supremum (no grid sampling alone): D_α is non-decreasing in α (van Erven & Harremoës
    2014, Thm. 3), so on [α_i, α_{i+1}] D_α/α <= D_{α_{i+1}}/α_i; and D_α <= D_∞ = ε, so
    D_α/α <= ε/A for α >= A. The intervals whose upper bound could exceed the best value found
    are split until the largest upper bound is within ``tolerance`` of it; the result is that
    largest upper bound, raised by a float margin. It tends to ε + e^{−ε} − 1 (the continuous
    Laplace, Harrison & Manurangsi) from above as Δ1 → ∞ at fixed ε (at Δ1 = 1 it lies between that
    and ε²/2: the law has no middle region where the loss is below ε in absolute value).

    :param epsilon: ε = Δ1/b of the noise (b its scale)
    :param sensitivity: Δ1, an integer >= 1
    """
    e = float(epsilon)
    if not (math.isfinite(e) and e > 0):
        raise ParameterError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    s = int(sensitivity)
    cap = pure_zcdp(e)
    A = max(1e3, 4 * e / (tolerance * cap))  # beyond A, D_α/α <= ε/A is far below the supremum
    edges = np.exp(np.linspace(math.log(1e-9), math.log(A - 1), 4097)) + 1  # α grid on (1, A]
    while True:
        d = dlaplace_renyi(edges, e, s)
        lower = float(np.max(d / edges))  # values attained: a lower bound on the supremum
        upper_each = d[1:] / edges[:-1]  # bound on each [α_i, α_{i+1}]
        head = float(d[0])  # (1, α_0]: D_α/α <= D_{α_0}
        upper = max(float(upper_each.max()), head, e / A)
        if upper <= lower * (1 + tolerance) or len(edges) > 2_000_000:
            break
        hot = np.nonzero(upper_each > lower * (1 + tolerance / 2))[0]
        mids = [np.exp(np.linspace(math.log(edges[i] - 1), math.log(edges[i + 1] - 1), 17)[1:-1]) + 1 for i in hot]
        extra = [np.linspace(1 + 1e-12, edges[0], 5)[:-1]] if head > lower * (1 + tolerance / 2) else []
        edges = np.unique(np.concatenate([edges, *mids, *extra]))
    return min(cap, _up(upper, 1e-10))


def dlaplace_profile_rho(epsilon: float, sensitivity: int = 1) -> Tuple[float, float]:
    """(exact ρ bound, ε²/2) of a discrete Laplace profile: the pair the accountant compares."""
    return dlaplace_zcdp(epsilon, sensitivity), pure_zcdp(epsilon)
