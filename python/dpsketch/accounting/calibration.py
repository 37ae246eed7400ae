"""One place for the privacy arithmetic every front end shares (docs/privacy.md §Stream length;
docs/algorithms.md §1): parameter checks, the split of a caller's (ε, δ) between the stream length
and the mechanism, the guarantee record a release carries, ε as used (rounded down), and the
zCDP <-> (ε, δ) conversions. The numbers come from the C++ core (``release/calibration.hpp``,
``release/thresholds.hpp``); this module only validates and wraps them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from .. import _core
from .._validation import check
from ..errors import ParameterError, ParameterTypeError
from .zcdp import cks20_epsilon, cks20_rho_for

__all__ = ["PRIVACY_UNIT", "Guarantee", "calibrate", "cell_sensitivities", "check_privacy_params", "make_length",
           "dgauss_tail_gt", "noise_guarantee", "privacy_record", "unit_cell_sensitivities", "unit_group_guarantee",
           "unit_group_privacy", "used_value", "zcdp_epsilon",
           "zcdp_rho_for"]

_R = _core.release

PRIVACY_UNIT = "one stream element"


@dataclass(frozen=True)
class Guarantee:
    """What a release guarantees, in one typed record (read it from ``Release.guarantee``).

    :ivar mechanism: the mechanism's name ('DPSS', 'PMG', 'SketchHeavyHitters[countmin]', ...)
    :ivar privacy_unit: what one neighbour adds, removes or changes ('one stream element')
    :ivar neighbours: 'add_remove', or 'replace' (public length: the stream length is fixed)
    :ivar length: how the release reads the stream length: 'private' (a noisy n̂ paid from the
        budget), 'public' (the exact n as a public parameter) or 'unused'
    :ivar epsilon: ε that holds (never above the ε asked for); None for a ρ-zCDP release without a conversion δ
    :ivar delta: δ that holds (never above the δ asked for)
    :ivar rho: ρ of a zCDP mechanism, else None
    :ivar reproducible_not_secret: True when the noise came from a user seed
    :ivar release_index: 1 for the first release of a summary, 2 for a repeat, ...
    """

    mechanism: str
    privacy_unit: str
    neighbours: str
    length: str
    epsilon: float | None
    delta: float | None
    rho: float | None
    reproducible_not_secret: bool
    release_index: int | None


def check_privacy_params(epsilon, delta, *, name="epsilon", delta_name="delta"):
    """Validate ε (a number in [2^-32, 2^31 - 1]) and δ in (0, 1) against the shared specs
    (:data:`dpsketch._validation.SPECS`); return them as floats."""
    return check(name, epsilon, "epsilon"), check(delta_name, delta, "delta")


def used_value(x: float) -> Fraction:
    """ε or ρ as the mechanisms use it: rounded down to a multiple of 2^-32 (docs/algorithms.md §1)."""
    num, den = _core.noise.dyadic_down(float(x), 32)
    return Fraction(num, den)


def split_over_parts(total: float, parts: int, *, what: str = "the budget", parts_name: str = "the parts") -> tuple:
    """(per part, composed) for a budget ε or ρ spent evenly over ``parts`` mechanisms that one
    element can reach (basic or zCDP composition, both additive; docs/privacy.md §Cumulative): each
    part gets total/parts rounded down to a multiple of 2^-32 (:func:`used_value`, docs/algorithms.md
    §1), and the parts compose to parts·(that), never above ``total``. Exact ``Fraction`` values."""
    per = used_value(total / parts)
    if per == 0:
        raise ParameterError(f"{what} over {parts_name} is below 2**-32")
    return per, parts * per


def zcdp_epsilon(rho: float, delta: float) -> float:
    """ε of the (ε, δ)-DP guarantee implied by ρ-zCDP, by the CKS20 conversion (Canonne, Kamath &
    Steinke 2020; docs/accounting.md §Conversion): never above the classic ρ + 2·sqrt(ρ·ln(1/δ)).

    :param rho: ρ of the ρ-zCDP guarantee
    :param delta: δ of the (ε, δ)-DP guarantee asked for, in (0, 1)
    """
    return cks20_epsilon(float(rho), float(delta))


def zcdp_rho_for(epsilon: float, delta: float) -> float:
    """The largest ρ whose ρ-zCDP implies (ε, δ)-DP by CKS20: the inverse of :func:`zcdp_epsilon`."""
    return cks20_rho_for(float(epsilon), float(delta))


def calibrate(epsilon, delta, need, *, public_length=False, length_epsilon=None, length_delta=None) -> dict:
    """How a release spends the caller's (ε, δ) (docs/privacy.md §Stream length; the arithmetic is
    the C++ core's ``calibration.hpp``). ``need``: what the mechanism reads of the stream length n --
    ``"none"``, ``"estimate"`` (a post-processing cut n̂/k) or ``"bounds"`` (an upper bound in a
    privacy-relevant threshold). By default n is private: a share of (ε, δ) buys n̂ = n + DLap(1/ε_n)
    (``length_epsilon``, default ε/10; ``length_delta``, default δ/10, when bounds are needed).
    ``public_length=True`` treats n as a fixed public parameter: neighbours become replace-one and the
    mechanism runs at (ε/2, δ/(1 + e^{ε/2})), so the reported (ε, δ) hold for that relation."""
    eps, dlt = check_privacy_params(epsilon, delta)
    if not isinstance(public_length, bool):
        raise ParameterTypeError(f"public_length must be True or False, got {type(public_length).__name__}")
    if public_length and (length_epsilon is not None or length_delta is not None):
        raise ParameterError("length_epsilon/length_delta price a private length; they cannot be combined with public_length=True")
    le = ld = 0.0
    if length_epsilon is not None:
        le, _ = check_privacy_params(length_epsilon, 0.5, name="length_epsilon")
        if not le < eps:
            raise ParameterError(f"length_epsilon must be below epsilon (it is carved out of it), got {length_epsilon!r} >= {epsilon!r}")
    if length_delta is not None:
        _, ld = check_privacy_params(1.0, length_delta, delta_name="length_delta")
        if not ld < dlt:
            raise ParameterError(f"length_delta must be below delta (it is carved out of it), got {length_delta!r} >= {delta!r}")
    return dict(_core.release.calibrate(eps, dlt, need, public_length, le, ld))


def make_length(cal: dict, n: int, rng):
    """The length as the release uses it: unused, the public n, or n̂ drawn from ``rng`` now."""
    if cal["length"] == "unused":
        return _core.release.Length.unused()
    if cal["length"] == "public":
        return _core.release.Length.fixed(n)
    return _core.release.Length.noisy(n, cal["length_epsilon"], cal["length_delta"], rng)


def privacy_record(cal: dict, *, epsilon_requested, delta_requested) -> dict:
    """The metadata every release carries about its guarantee (docs/privacy.md §Model)."""
    return {
        "privacy_unit": PRIVACY_UNIT,
        "neighbours": cal["neighbours"],
        "length": cal["length"],
        "assumes_public_length": cal["length"] == "public",
        "epsilon_requested": epsilon_requested,
        "delta_requested": delta_requested,
        "epsilon_mechanism": cal["epsilon_mechanism"],
        "delta_mechanism": cal["delta_mechanism"],
    }




def cell_sensitivities(depth: int, neighbours: str, signed: bool) -> tuple[int, int]:
    """(ℓ1, ℓ2²) of a sketch's cells under one neighbour (docs/privacy.md "Dyadic sketches (§6)"):
    one element changes one cell in each of ``depth`` rows by ±1, so (d, d) for add/remove. Replace
    doubles ℓ1; it doubles ℓ2² for unsigned cells (Count-Min, exact dyadic levels: depth 1) but
    makes it 4d for signed ones (CountSketch), whose two items can share a cell with opposite signs."""
    if neighbours == "add_remove":
        return depth, depth
    return 2 * depth, (4 * depth if signed else 2 * depth)


def noise_guarantee(kind: str, l1: int, l2: int, num: int, den: int) -> tuple[float | None, float | None]:
    """(ε, ρ) of integer noise with parameter num/den on cells of sensitivity (ℓ1, ℓ2²)
    (docs/algorithms.md §1): DLap scale b gives ε = ℓ1/b; DGauss σ² gives ρ = ℓ2²/(2σ²)."""
    if kind == "laplace":
        return l1 * den / num, None
    return None, l2 * den / (2 * num)


def dgauss_tail_gt(sigma2: float, t: int) -> float:
    """An upper bound on P[X > t] for X ~ DGauss(σ²), integer t >= 0 (docs/privacy.md §Privacy
    unit): the exact sum Σ_{x>t} e^{-x²/2σ²} / Σ_x e^{-x²/2σ²} with the numerator summed to 40σ
    past t plus a geometric bound on the rest, over a truncated (smaller) normaliser, rounded up; for
    σ > 10^4 the sub-Gaussian bound e^{-(t+1)²/2σ²} of the discrete Gaussian (CKS20)."""
    import numpy as np

    t = int(t)
    if t < 0:
        raise ParameterError("the tail is for t >= 0")
    s2 = float(sigma2)
    if s2 > 1e8:
        return min(1.0, math.exp(-((t + 1) ** 2) / (2 * s2)))
    span = int(math.ceil(40 * math.sqrt(s2))) + 10
    xs = np.arange(t + 1, t + 1 + span, dtype=np.float64)
    last = t + 1 + span
    ratio = math.exp(-(2 * last + 1) / (2 * s2))
    num = float(np.exp(-xs * xs / (2 * s2)).sum()) + math.exp(-last * last / (2 * s2)) / (1 - ratio)
    ks = np.arange(1, span + 1, dtype=np.float64)
    den = 1.0 + 2.0 * float(np.exp(-ks * ks / (2 * s2)).sum())
    return min(1.0, num / den * (1 + 1e-9))


def unit_group_privacy(epsilon: float, delta: float, rows_per_unit: int) -> tuple[float, float]:
    """The per-row (ε', δ') that group privacy over ``rows_per_unit`` = r rows turns into (ε, δ):
    ε' = ε/r and δ' = δ·(e^{ε/r} − 1)/(e^ε − 1), so that δ'·Σ_{i<r} e^{iε'} = δ exactly
    (docs/privacy.md §Privacy unit)."""
    r = int(rows_per_unit)
    e1 = float(epsilon) / r
    return e1, float(delta) * math.expm1(e1) / math.expm1(float(epsilon))


def unit_group_guarantee(epsilon_row: float, delta_row: float, rows_per_unit: int) -> tuple[float, float]:
    """The (ε, δ) that an (ε', δ')-DP element-level mechanism gives a unit of at most r rows
    (group privacy over r element steps, docs/privacy.md §Privacy unit): (r·ε', δ'·Σ_{i<r} e^{iε'}).
    The inverse of :func:`unit_group_privacy`, applied to the figures a release reports."""
    r = int(rows_per_unit)
    e1, d1 = float(epsilon_row), float(delta_row)
    chain = math.fsum(math.exp(i * e1) for i in range(r)) if r <= 4096 else math.expm1(r * e1) / math.expm1(e1)
    return r * e1, d1 * chain


def unit_cell_sensitivities(depth: int, rows_per_unit: int) -> tuple[int, int]:
    """(ℓ1, ℓ2²) of a sketch's cells when neighbours add or remove one unit of at most r rows
    (docs/privacy.md §Privacy unit): one row moves one cell per row of the sketch by ±1; r rows may
    all be the same item, which moves that cell by ±r in each of the ``depth`` rows, so
    ℓ1 = depth·r and ℓ2² = depth·r² (attained). Exact dyadic levels are ``depth`` 1."""
    r = int(rows_per_unit)
    l1, l2 = cell_sensitivities(depth, "add_remove", signed=True)
    return l1 * r, l2 * r * r
