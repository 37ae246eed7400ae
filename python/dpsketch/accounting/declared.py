"""Declared plans: a series of releases fixed before any of them runs, composed exactly with
privacy-loss distributions and calibrated to the declared total (docs/accounting.md §Declared
plans; spec §11).

The adaptive :class:`~dpsketch.Budget` must use filters that stay valid when each spend is chosen
after earlier outputs, and PLD composition is not one of them. A plan is different: its whole
series -- the noise law, sensitivity and count of every release -- is fixed before the first
release, so it is one non-adaptive mechanism, whose exact guarantee is the composition of its
releases' privacy-loss distributions (Google's ``dp_accounting``: discrete Gaussian and discrete
Laplace PLDs, and the optimal pessimistic PLD of a generic (ε, δ) release for thresholded ones).

:meth:`Budget.declare <dpsketch.Budget.declare>` charges the plan's (ε, δ) once, as one generic
spend, and returns a :class:`DeclaredSeries`, which hands out the declared releases in order:
``series.next()`` gives the noise the next release must use, and a series passed as ``budget=``
to a release refuses any release whose profile is not the next declared one, and any release
after the last. Nothing about the plan ever enters the adaptive filter's routing.

``dp_accounting`` is an optional dependency (``pip install dpsketch[accounting]``); only this
module needs it.
"""

from __future__ import annotations

import contextlib
import math
import threading
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterator, Optional, Sequence

from ..errors import BudgetExceededError, MissingDependencyError, ParameterError
from .profile import Profile, as_profile

__all__ = ["PlannedRelease", "Plan", "DeclaredSeries", "calibrate_plan", "plan_epsilon"]

_KINDS = ("discrete_gaussian", "discrete_laplace", "approx")
_DISCRETISATION = 1e-4


def _pld():
    try:
        from dp_accounting.pld import privacy_loss_distribution as pld
    except ImportError:  # pragma: no cover - the extra is installed in CI
        raise MissingDependencyError("declared plans compose with Google's dp_accounting: pip install 'dpsketch[accounting]' "
                          "(the adaptive Budget does not need it)") from None
    return pld


@dataclass(frozen=True)
class PlannedRelease:
    """``count`` releases of one kind, as declared.

    * ``"discrete_gaussian"``: each adds DGauss(σ²) to ``coordinates`` integer cells that one
      neighbour moves by ``sensitivity`` each (a sketch of depth d: d cells by 1); σ is calibrated.
    * ``"discrete_laplace"``: each adds DLap of parameter t (P(z) ∝ e^{−t|z|}) to ``coordinates``
      cells moved by ``sensitivity`` each; t is calibrated.
    * ``"approx"``: a generic (``epsilon``, ``delta``)-DP release (a thresholded one), fixed,
      composed by its optimal pessimistic PLD.

    :param kind: "discrete_gaussian", "discrete_laplace" or "approx"
    :param count: how many such releases
    :param sensitivity: the shift of each cell one neighbour moves (an integer)
    :param coordinates: how many cells one neighbour moves
    :param epsilon: ε of an "approx" release
    :param delta: δ of an "approx" release
    """

    kind: str
    count: int = 1
    sensitivity: int = 1
    coordinates: int = 1
    epsilon: float = 0.0
    delta: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ParameterError(f"a planned release's kind is one of {_KINDS}, got {self.kind!r}")
        for name in ("count", "sensitivity", "coordinates"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ParameterError(f"a planned release's {name} is an integer >= 1, got {v!r}")
        if self.kind == "approx" and not (self.epsilon > 0 and 0 <= self.delta < 1):
            raise ParameterError("an 'approx' planned release states epsilon > 0 and delta in [0, 1)")


@dataclass(frozen=True)
class Plan:
    """A calibrated plan: the releases in order, the noise of each calibrated kind (σ of the
    discrete Gaussian, t of the discrete Laplace; None when the plan has none) and the (ε, δ)
    the PLD composition gives for the whole series."""

    releases: tuple
    sigma: Optional[float]
    laplace_parameter: Optional[float]
    epsilon: float
    delta: float
    profiles: tuple = field(default=())

    def expanded(self) -> list:
        """One profile per release, in declaration order."""
        return list(self.profiles)


def _series_pld(releases: Sequence[PlannedRelease], sigma: Optional[float], t: Optional[float]):
    pld = _pld()
    out = None
    for r in releases:
        if r.kind == "discrete_gaussian":
            one = pld.from_discrete_gaussian_mechanism(sigma, sensitivity=r.sensitivity,
                                                       value_discretization_interval=_DISCRETISATION)
        elif r.kind == "discrete_laplace":
            one = pld.from_discrete_laplace_mechanism(t, sensitivity=r.sensitivity,
                                                      value_discretization_interval=_DISCRETISATION)
        else:
            one = pld.from_privacy_parameters(pld.common.DifferentialPrivacyParameters(r.epsilon, r.delta),
                                              value_discretization_interval=_DISCRETISATION)
        times = r.count * (r.coordinates if r.kind != "approx" else 1)
        block = one.self_compose(times) if times > 1 else one
        out = block if out is None else out.compose(block)
    return out


def plan_epsilon(releases: Sequence[PlannedRelease], delta: float, *, sigma: Optional[float] = None,
                 laplace_parameter: Optional[float] = None) -> float:
    """The ε of the whole declared series at ``delta``, by PLD composition (pessimistic:
    dp_accounting rounds every privacy loss up)."""
    return float(_series_pld(releases, sigma, laplace_parameter).get_epsilon_for_delta(delta))


def calibrate_plan(releases: Sequence[PlannedRelease], epsilon: float, delta: float) -> Plan:
    """The least noise that meets (``epsilon``, ``delta``) for the whole declared series: one noise
    scale shared by the releases of the calibrated kind(s) (σ = m·Δ for discrete Gaussian
    releases, Laplace scale m for discrete Laplace ones, one multiplier m found by bisection on
    the PLD's ε), the 'approx' releases fixed. Raises ParameterError when even infinite noise
    cannot meet the target (the fixed releases alone exceed it)."""
    rel = tuple(releases)
    if not rel:
        raise ParameterError("a plan declares at least one release")
    if not (epsilon > 0 and 0 < delta < 1):
        raise ParameterError("a plan's target is epsilon > 0 and delta in (0, 1)")
    has_g = any(r.kind == "discrete_gaussian" for r in rel)
    has_l = any(r.kind == "discrete_laplace" for r in rel)

    def noise(m: float):
        return (m if has_g else None), ((1 / m) if has_l else None)

    def eps_at(m: float) -> float:
        s, t = noise(m)
        return plan_epsilon(rel, delta, sigma=s, laplace_parameter=t)

    if not (has_g or has_l):
        e = eps_at(1.0)
        if e > epsilon:
            raise ParameterError(f"the declared releases compose to epsilon={e:.6g} > {epsilon:g}")
        return _finish(rel, None, None, e, delta)
    lo, hi = 1e-3, 1.0
    while eps_at(hi) > epsilon:
        lo, hi = hi, hi * 2
        if hi > 1e7:
            raise ParameterError("the fixed releases of the plan alone exceed its target")
    for _ in range(40):  # the multiplier to 1 part in 10^6
        mid = math.sqrt(lo * hi)
        if eps_at(mid) <= epsilon:
            hi = mid
        else:
            lo = mid
        if hi / lo < 1 + 1e-6:
            break
    s, t = noise(hi)
    return _finish(rel, s, t, eps_at(hi), delta)


def _finish(rel, sigma, t, eps, delta) -> Plan:
    """The plan's per-release profiles at the values a release uses (ρ and ε rounded down to a
    multiple of 2^-32, docs/algorithms.md §1: a little more noise than calibrated, never less)."""
    from .calibration import used_value

    profiles = []
    for r in rel:
        for _ in range(r.count):
            if r.kind == "discrete_gaussian":
                profiles.append(Profile.discrete_gaussian(used_value(r.coordinates * r.sensitivity ** 2 / (2 * sigma * sigma))))
            elif r.kind == "discrete_laplace":
                profiles.append(Profile.discrete_laplace(used_value(r.coordinates * r.sensitivity * t),
                                                         sensitivity=r.sensitivity, coordinates=r.coordinates))
            else:
                profiles.append(Profile("approx", epsilon=r.epsilon, delta=r.delta))
    return Plan(rel, sigma, t, eps, delta, tuple(profiles))


class DeclaredSeries:
    """The releases of a declared plan, charged once to the budget (:meth:`Budget.declare
    <dpsketch.Budget.declare>`). Pass it as ``budget=`` to each release of the series, in order:
    a release whose profile is not the next declared one, or one after the last, is refused
    (:class:`BudgetExceededError`) before any noise is drawn.

    :param name: the plan's name (in messages)
    :param plan: the calibrated :class:`Plan`
    """

    def __init__(self, name: str, plan: Plan) -> None:
        self.name, self.plan = name, plan
        self._lock = threading.Lock()
        self._next = 0

    @property
    def remaining(self) -> int:
        """How many declared releases have not run yet."""
        return len(self.plan.profiles) - self._next

    def next(self) -> Profile:
        """The profile (the calibrated noise) of the next declared release."""
        with self._lock:
            if self._next >= len(self.plan.profiles):
                raise BudgetExceededError(f"the declared plan {self.name!r} has no release left")
            return self.plan.profiles[self._next]

    @contextlib.contextmanager
    def charging(self, mechanism: str, *, epsilon=0, delta=0, rho=0, profile=None) -> Iterator[None]:
        """Admit the release only if its profile is the next declared one (the plan's share was
        charged when it was declared); count it as run if the body succeeds.

        :param mechanism: the release's name (in messages)
        :param epsilon: ε of a release that states no profile
        :param delta: δ of a release that states no profile
        :param rho: ρ of a release that states no profile
        :param profile: the release's privacy profile
        """
        parts = as_profile(Fraction(epsilon), Fraction(delta), Fraction(rho), profile)
        with self._lock:
            if self._next >= len(self.plan.profiles):
                raise BudgetExceededError(f"{mechanism} is not in the declared plan {self.name!r}: every declared "
                                          "release has run; nothing was spent and no noise was drawn")
            want = self.plan.profiles[self._next]
            if parts != (want,):
                raise BudgetExceededError(
                    f"{mechanism} is not the next release of the declared plan {self.name!r} (declared: "
                    f"{want.to_dict()}); a release outside the plan is refused, nothing was spent and no noise "
                    "was drawn")
            yield
            self._next += 1

    def __repr__(self) -> str:
        return (f"DeclaredSeries({self.name!r}; epsilon={self.plan.epsilon:.6g}, delta={self.plan.delta:g}, "
                f"{self.remaining} of {len(self.plan.profiles)} release(s) left)")
