"""Privacy profiles (docs/accounting.md §Profiles; spec §11): what a release spends, stated as its
noise law and parameters rather than only as (ε, δ), so that a budget can compose it with the
tightest rule that is valid.

A profile is a tuple of :class:`Profile` parts (a release that buys a noisy stream length and then
runs its mechanism has two). Each part names its law:

* ``"discrete_gaussian"``: ρ = Δ2²/(2σ²) (``rho``), plus an additive ``delta`` (thresholds,
  envelopes): approximate zCDP;
* ``"zcdp"``: a generic ρ-zCDP spend (``rho``), plus an additive ``delta``;
* ``"discrete_laplace"``: ε = Δ1/b (``epsilon``); ``sensitivity`` = s and ``coordinates`` = k when
  one neighbour moves k coordinates (each with its own DLap noise of scale b) by s each, so
  Δ1 = k·s (then its exact zCDP, k times that of one coordinate at ε/k, is computed from the
  privacy-loss law), None otherwise (then ε²/2); an additive ``delta`` (thresholds, length bounds)
  makes it an (ε, δ) spend;
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

__all__ = ["Profile", "LAWS", "as_profile", "profile_record", "part_rho", "part_epsilon", "profile_totals", "profile_to_json",
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
    :ivar sensitivity: the shift s of each coordinate a neighbour moves, for a discrete Laplace
        part (None: the pattern is not stated, and ε²/2 is used)
    :ivar coordinates: how many coordinates k a neighbour moves by ``sensitivity`` (Δ1 = k·s)
    """

    law: str
    epsilon: Fraction = Fraction(0)
    delta: Fraction = Fraction(0)
    rho: Fraction = Fraction(0)
    eta: Fraction = Fraction(0)
    sensitivity: Optional[int] = None
    coordinates: int = 1

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
        if isinstance(self.coordinates, bool) or not isinstance(self.coordinates, int) or self.coordinates < 1:
            raise ParameterError("a profile's coordinates is an integer >= 1")
        if self.coordinates != 1 and self.sensitivity is None:
            raise ParameterError("coordinates= goes with sensitivity= (the shift of each coordinate)")
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
        """A discrete Gaussian part.

        :param rho: ρ = Δ2²/(2σ²) as the mechanism uses it
        :param delta: its additive δ (thresholds, envelopes)
        """
        return cls("discrete_gaussian", rho=rho, delta=delta)

    @classmethod
    def discrete_laplace(cls, epsilon, delta=0, *, sensitivity: Optional[int] = None, coordinates: int = 1) -> "Profile":
        """A discrete Laplace part.

        :param epsilon: ε = Δ1/b as the mechanism uses it
        :param delta: its additive δ (a thresholded release: basic composition only)
        :param sensitivity: the shift of each cell one neighbour moves (None: not stated, ε²/2)
        :param coordinates: how many cells one neighbour moves by ``sensitivity``
        """
        return cls("discrete_laplace", epsilon=epsilon, delta=delta, sensitivity=sensitivity, coordinates=coordinates)

    @classmethod
    def bounded_range(cls, eta) -> "Profile":
        """An η-bounded-range selection (exponential mechanism, JointExp, Gumbel top-k).

        :param eta: η (the mechanism is η-DP and (η²/8)-zCDP)
        """
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
            d["coordinates"] = self.coordinates
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
def _dlap_rho(eps: Fraction, sensitivity: Optional[int], coordinates: int) -> Fraction:
    """k coordinates, each ε/k-DP DLap shifted by s: the Rényi divergences add over independent
    coordinates, so the supremum of the sum is at most k times the per-coordinate supremum."""
    if sensitivity is None:
        return eps * eps / 2
    per = Fraction(zcdp.dlaplace_zcdp(float(eps / coordinates), sensitivity))
    return min(eps * eps / 2, coordinates * per)


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
        return _dlap_rho(p.epsilon, p.sensitivity, p.coordinates) if p.epsilon else Fraction(0)
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
        generic: list = []
        if epsilon or (delta and not rho):
            generic.append(Profile("pure", epsilon=epsilon) if not delta else Profile("approx", epsilon=epsilon, delta=delta))
        if rho:
            generic.append(Profile("zcdp", rho=rho, delta=delta if epsilon == 0 else Fraction(0)))
        return tuple(generic)
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


def profile_record(parts) -> list:
    """The ``privacy_profile`` a release's metadata carries: one plain dict per part."""
    parts = (parts,) if isinstance(parts, Profile) else tuple(parts)
    return [p.to_dict() for p in parts]


def profile_to_json(parts: Profiles, routes, text) -> list:
    """The ledger file's form of a profile: exact fraction strings (``text``), and each part's
    route ("basic" or "zcdp") and the ρ it was charged in the zCDP total."""
    out = []
    for p, (route, charged_rho) in zip(parts, routes):
        d = {"law": p.law, "route": route}
        for name in ("epsilon", "delta", "rho", "eta"):
            d[name] = text(getattr(p, name))
        d["sensitivity"] = p.sensitivity
        d["coordinates"] = p.coordinates
        d["charged_rho"] = text(charged_rho)
        out.append(d)
    return out


def profile_from_json(items, exact) -> Tuple[Profiles, tuple]:
    """Inverse of :func:`profile_to_json`; ``exact`` parses a fraction string (raising on bad input)."""
    if not isinstance(items, list):
        raise ParameterError("profile is not a list")
    parts, routes = [], []
    for d in items:
        if not (isinstance(d, dict) and set(d) == {"law", "route", "epsilon", "delta", "rho", "eta", "sensitivity",
                                                   "coordinates", "charged_rho"}):
            raise ParameterError("malformed profile part")
        if d["route"] not in ("basic", "zcdp"):
            raise ParameterError("unknown route")
        parts.append(Profile(d["law"], epsilon=exact(d["epsilon"]), delta=exact(d["delta"]), rho=exact(d["rho"]),
                             eta=exact(d["eta"]), sensitivity=d["sensitivity"], coordinates=d["coordinates"]))
        routes.append((d["route"], exact(d["charged_rho"])))
    return tuple(parts), tuple(routes)
