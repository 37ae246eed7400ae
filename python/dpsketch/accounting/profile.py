"""Privacy profiles (docs/accounting.md §Profiles; spec §11): what a release spends, stated as its
noise law and parameters rather than only as (ε, δ), so that a budget can compose it with the
tightest rule that is valid.

A profile is a tuple of :class:`Profile` parts (a release that buys a noisy stream length and then
runs its mechanism has two). Each part names its law:

* ``"discrete_gaussian"``: ρ = Δ2²/(2σ²) (``rho``), plus an additive ``delta`` (thresholds,
  envelopes): approximate zCDP;
* ``"zcdp"``: a generic ρ-zCDP spend (``rho``), plus an additive ``delta``;
* ``"discrete_laplace"``: ε = Δ1/b (``epsilon``); ``sensitivity`` = Δ1 when one neighbour moves
  a single coordinate by Δ1 (then its exact zCDP is computed from the privacy-loss law), None
  otherwise (then ε²/2); an additive ``delta`` (thresholds, length bounds) makes it an (ε, δ) spend;
* ``"bounded_range"``: an η-bounded-range selection (exponential mechanism, JointExp, recursive
  quantiles, Gumbel top-k) with ``eta`` = η (η-DP, and (η²/8)-zCDP);
* ``"pure"``: a generic ε-DP spend (``epsilon``; (ε²/2)-zCDP);
* ``"approx"``: a generic (ε, δ)-DP spend (basic composition only).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Optional, Tuple, Union

from ..errors import ParameterError, ParameterTypeError
from . import zcdp

__all__ = ["Profile", "LAWS", "as_profile", "part_rho", "part_epsilon", "profile_totals", "profile_to_json",
           "profile_from_json"]

LAWS = ("discrete_gaussian", "zcdp", "discrete_laplace", "bounded_range", "pure", "approx")
_PURE_LAWS = ("discrete_laplace", "bounded_range", "pure")


def _frac(name: str, v) -> Fraction:
    if isinstance(v, bool) or not isinstance(v, (int, float, Fraction)):
        raise ParameterTypeError(f"profile {name} must be a number, got {type(v).__name__}")
    f = v if isinstance(v, Fraction) else Fraction(float(v))
    if f < 0 or not math.isfinite(float(f)):
        raise ParameterError(f"profile {name} must be a finite number >= 0, got {v!r}")
    return f


@dataclass(frozen=True)
class Profile:
    """One part of a spend's privacy profile (module docstring). Values are exact fractions of
    what the mechanism uses (ε and ρ rounded down as in docs/algorithms.md §1).

    :ivar law: one of :data:`LAWS`
    :ivar epsilon: ε of a discrete Laplace, pure or (ε, δ) part
    :ivar delta: the additive δ of the part
    :ivar rho: ρ of a discrete Gaussian or zCDP part
    :ivar eta: η of a bounded-range part
    :ivar sensitivity: Δ1 of a single-coordinate discrete Laplace part (None: ε²/2 is used)
    """

    law: str
    epsilon: Fraction = Fraction(0)
    delta: Fraction = Fraction(0)
    rho: Fraction = Fraction(0)
    eta: Fraction = Fraction(0)
    sensitivity: Optional[int] = None

    def __post_init__(self) -> None:
        if self.law not in LAWS:
            raise ParameterError(f"profile law must be one of {LAWS}, got {self.law!r}")
        for name in ("epsilon", "delta", "rho", "eta"):
            object.__setattr__(self, name, _frac(name, getattr(self, name)))
        if self.delta >= 1:
            raise ParameterError("a profile's delta must be below 1")
        if self.sensitivity is not None:
            if isinstance(self.sensitivity, bool) or not isinstance(self.sensitivity, int) or self.sensitivity < 1:
                raise ParameterError("a profile's sensitivity is an integer >= 1 (or None)")
            if self.law != "discrete_laplace":
                raise ParameterError("only a discrete_laplace profile takes sensitivity=")
        law = self.law
        if law in ("discrete_gaussian", "zcdp") and (self.epsilon or self.eta):
            raise ParameterError(f"a {law} profile states rho= (and an additive delta=), not epsilon/eta")
        if law in ("discrete_laplace", "pure", "approx") and (self.rho or self.eta):
            raise ParameterError(f"a {law} profile states epsilon= (and delta=), not rho/eta")
        if law == "bounded_range" and (self.rho or self.epsilon):
            raise ParameterError("a bounded_range profile states eta= (and delta=), not epsilon/rho")
        if law in ("pure", "bounded_range") and self.delta:
            raise ParameterError(f"a {law} profile has no delta (use 'approx' for a generic (ε, δ) spend)")

    # -- constructors ----------------------------------------------------------------------------
    @classmethod
    def discrete_gaussian(cls, rho, delta=0) -> "Profile":
        return cls("discrete_gaussian", rho=rho, delta=delta)

    @classmethod
    def discrete_laplace(cls, epsilon, delta=0, *, sensitivity: Optional[int] = None) -> "Profile":
        return cls("discrete_laplace", epsilon=epsilon, delta=delta, sensitivity=sensitivity)

    @classmethod
    def bounded_range(cls, eta) -> "Profile":
        return cls("bounded_range", eta=eta)

    def to_dict(self) -> dict:
        """Plain floats (for release metadata): law and the non-zero parameters."""
        d: dict = {"law": self.law}
        for name in ("epsilon", "delta", "rho", "eta"):
            v = getattr(self, name)
            if v:
                d[name] = float(v)
        if self.sensitivity is not None:
            d["sensitivity"] = self.sensitivity
        zc = part_rho(self)
        d["zcdp_rho"] = None if zc is None else float(zc)
        return d


Profiles = Tuple[Profile, ...]


def part_epsilon(p: Profile) -> Fraction:
    """ε of the part under basic composition (0 for a Gaussian/zCDP part, which has none)."""
    if p.law == "bounded_range":
        return p.eta  # η-bounded range implies η-DP
    if p.law in ("discrete_gaussian", "zcdp"):
        return Fraction(0)
    return p.epsilon


@functools.lru_cache(maxsize=4096)
def _dlap_rho(eps: Fraction, sensitivity: Optional[int]) -> Fraction:
    if sensitivity is None:
        return eps * eps / 2
    return min(eps * eps / 2, Fraction(zcdp.dlaplace_zcdp(float(eps), sensitivity)))


def part_rho(p: Profile) -> Optional[Fraction]:
    """ρ of the part in zCDP (approximate zCDP with its additive δ for a Gaussian part), the
    tightest this module can prove: Gaussian ρ; discrete Laplace exactly (single coordinate) or
    ε²/2; bounded range η²/8 (Cesar & Rogers); pure ε²/2. None for a part that cannot enter the
    zCDP total: a generic (ε, δ) part, or a pure-law part with an additive δ."""
    if p.law in ("discrete_gaussian", "zcdp"):
        return p.rho
    if p.delta:
        return None
    if p.law == "discrete_laplace":
        return _dlap_rho(p.epsilon, p.sensitivity) if p.epsilon else Fraction(0)
    if p.law == "bounded_range":
        return p.eta * p.eta / 8
    if p.law == "pure" or p.law == "approx":  # an (ε, 0) spend is ε-DP
        return p.epsilon * p.epsilon / 2
    return None


def as_profile(epsilon: Fraction, delta: Fraction, rho: Fraction,
               profile: Union[None, Profile, Iterable[Profile]]) -> Profiles:
    """The profile of a spend: ``profile`` as given (one part or several), or, when None, the
    generic profile of (ε, δ, ρ): an (ε, δ) part (a pure one when δ = 0) and a zCDP part."""
    if profile is None:
        parts = []
        if epsilon or (delta and not rho):
            parts.append(Profile("pure", epsilon=epsilon) if not delta else Profile("approx", epsilon=epsilon, delta=delta))
        if rho:
            parts.append(Profile("zcdp", rho=rho, delta=delta if epsilon == 0 else 0))
        return tuple(parts)
    parts = (profile,) if isinstance(profile, Profile) else tuple(profile)
    for p in parts:
        if not isinstance(p, Profile):
            raise ParameterTypeError(f"profile must be a dpsketch.Profile or a sequence of them, got {type(p).__name__}")
    return parts


def profile_totals(parts: Profiles) -> Tuple[Fraction, Fraction, Fraction]:
    """(ε, δ, ρ) of a profile as the pre-profile accountant would have been told: ε of the pure
    and (ε, δ) parts, every additive δ, ρ of the Gaussian parts."""
    return (sum((part_epsilon(p) for p in parts), Fraction(0)),
            sum((p.delta for p in parts), Fraction(0)),
            sum((p.rho for p in parts), Fraction(0)))


def profile_to_json(parts: Profiles, routes, text) -> list:
    """The ledger file's form of a profile: exact fraction strings (``text``), and each part's
    route ("basic" or "zcdp") and the ρ it was charged in the zCDP total."""
    out = []
    for p, (route, charged_rho) in zip(parts, routes):
        d = {"law": p.law, "route": route}
        for name in ("epsilon", "delta", "rho", "eta"):
            d[name] = text(getattr(p, name))
        d["sensitivity"] = p.sensitivity
        d["charged_rho"] = text(charged_rho)
        out.append(d)
    return out


def profile_from_json(items, exact) -> Tuple[Profiles, tuple]:
    """Inverse of :func:`profile_to_json`; ``exact`` parses a fraction string (raising on bad input)."""
    if not isinstance(items, list):
        raise ValueError("profile is not a list")
    parts, routes = [], []
    for d in items:
        if not (isinstance(d, dict) and set(d) == {"law", "route", "epsilon", "delta", "rho", "eta", "sensitivity",
                                                   "charged_rho"}):
            raise ValueError("malformed profile part")
        if d["route"] not in ("basic", "zcdp"):
            raise ValueError("unknown route")
        parts.append(Profile(d["law"], epsilon=exact(d["epsilon"]), delta=exact(d["delta"]), rho=exact(d["rho"]),
                             eta=exact(d["eta"]), sensitivity=d["sensitivity"]))
        routes.append((d["route"], exact(d["charged_rho"])))
    return tuple(parts), tuple(routes)
