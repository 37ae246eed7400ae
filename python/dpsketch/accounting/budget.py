"""A privacy budget shared by several releases (docs/algorithms.md §1, docs/privacy.md §Budget).

A :class:`Budget` is an accountant: every private release given ``budget=`` asks it first and is
refused with :class:`BudgetExceededError` -- before any noise is drawn and before the summary's
release guard advances -- when the composed guarantee would exceed the cap.

Every spend carries a privacy profile (:class:`Profile`: its noise law and parameters, plus any
additive δ); a spend given only as (ε, δ, ρ) has the generic profile of those numbers. Two kinds of
budget (docs/accounting.md derives every rule):

* ``Budget(epsilon, delta)``: an (ε, δ)-DP cap with one accumulator, fixed by its first spend
  (docs/accounting.md §The adaptive filter): by basic composition (ε's and δ's add) when the first
  spend holds no Gaussian/zCDP part, and a later zCDP spend is refused; in zCDP otherwise (ρ's
  add, a pure spend at its exact zCDP, a generic (ε, δ) spend refused), converted once with a δ
  share ``zcdp_delta`` reserved at construction (default δ/2) by the CKS20 conversion
  (:func:`~dpsketch.accounting.zcdp.cks20_epsilon`). Both totals at once would let the analyst
  split the cap between them from the outputs, which no composition theorem covers.
* ``Budget(rho=R)``: a zCDP cap. ρ spends add; a pure spend counts at the exact zCDP of its
  profile (discrete Laplace: computed from its privacy-loss law; bounded range η: η²/8; generic
  pure ε: ε²/2); spends with δ > 0 cannot be expressed in zCDP and are refused.

Totals are kept as exact fractions of the charged values. The ε (and ρ) charged is what the
mechanism actually uses: the requested value rounded down to a multiple of 2^-32 (§1).
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Iterator, Optional, Sequence, Union

from .calibration import used_value
from .profile import Profile, as_profile, part_epsilon, part_rho, profile_totals
from .zcdp import cks20_epsilon, cks20_rho_for
from ..errors import BudgetExceededError, ReleaseBudgetError  # noqa: F401  (re-exported)
from ..errors import ParameterError, ParameterTypeError
from .._validation import Interval, validate_params

if TYPE_CHECKING:
    from .declared import DeclaredSeries
    from .ledger import FileBudget

__all__ = ["Budget", "BudgetExceededError", "DisjointScope", "Spend", "PrivacyTotals", "Profile"]

Number = Union[int, float, Fraction]




@dataclass(frozen=True)
class Spend:
    """One ledger entry: the mechanism and what it spent (ε and δ of an (ε, δ)-DP spend, or ρ of a
    zCDP spend; the other fields are 0).

    :ivar mechanism: the name of the charge
    :ivar epsilon: ε charged (0 for a zCDP charge)
    :ivar delta: δ charged
    :ivar rho: ρ charged (0 for an (ε, δ) charge)
    :ivar profile: the spend's privacy profile, one :class:`Profile` per part (a spend recorded
        without one has the generic profile of its (ε, δ, ρ))
    :ivar charged: how the accountant composed it: (ε by basic composition, δ, ρ in the zCDP
        total); a pure part routed to the zCDP total shows there at its exact zCDP
    """

    mechanism: str
    epsilon: float
    delta: float
    rho: float
    profile: tuple = ()
    charged: Optional[tuple] = None


@dataclass(frozen=True)
class PrivacyTotals:
    """A guarantee: ``epsilon``/``delta`` of (ε, δ)-DP (None for a zCDP-only budget) and the zCDP
    ``rho`` part."""

    epsilon: Optional[float]
    delta: Optional[float]
    rho: float




def _up(x: float) -> Fraction:
    """x nudged up by a few ulps: float rounding in the conversion must not under-charge."""
    for _ in range(4):
        x = math.nextafter(x, math.inf)
    return Fraction(x)


def _down(x: Fraction) -> float:
    """The largest float <= x (float(x) rounds to nearest)."""
    f = float(x)
    return math.nextafter(f, -math.inf) if Fraction(f) > x else f


def _number(name: str, v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, Fraction)):
        raise ParameterTypeError(f"{name} must be a number, got {type(v).__name__}")
    f = float(v)
    if not math.isfinite(f):
        raise ParameterError(f"{name} must be finite, got {v!r}")
    return f


# the caps a Budget takes: any finite positive epsilon or rho, delta in [0, 1) (0: pure DP only)
_CAP = Interval(float, 0, None, closed="neither")
_DELTA_CAP = Interval(float, 0, 1, closed="left")


class Budget:
    """An accountant that private releases draw from (``release(..., budget=b)``,
    ``PrivateCountMin(..., budget=b)``, ...). See the module docstring for the composition rules.

    ``Budget(epsilon, delta=0.0, *, zcdp_delta=None)`` caps the total (ε, δ)-DP guarantee;
    ``Budget(rho=R)`` caps the total ρ-zCDP guarantee. ``spent()``, ``remaining()`` and ``ledger``
    report the state; ``spend()`` records a mechanism run outside dpsketch; ``check()`` asks whether
    a spend fits without recording it. ``Budget.open(path, ...)`` keeps the ledger in a file that
    several processes share (:class:`dpsketch.FileBudget`).

    A budget is one accountant, so it is never duplicated: ``copy.copy(b)`` and
    ``copy.deepcopy(b)`` return ``b`` itself (an object holding a budget that is deep-copied keeps
    charging the same one), and pickling raises ``TypeError``, because an unpickled copy in another
    process would be a second ledger that this one never sees, and together they could spend
    twice the cap. Keep the Budget in the process that runs the releases and record a spend made
    elsewhere with :meth:`spend`. A forked child process (``multiprocessing`` with fork) holds a
    separate copy in its own memory: do not charge budgets there.

    :param epsilon: the cap on the total ε of an (ε, δ)-DP budget (any number > 0)
    :param delta: the cap on the total δ, in [0, 1) (0: pure-DP charges only)
    :param rho: the cap on the total ρ of a ρ-zCDP budget instead (any number > 0)
    :param zcdp_delta: the δ share reserved to convert ρ-zCDP charges to (ε, δ)-DP (default δ/2)
    """

    @validate_params({"epsilon": _CAP, "delta": _DELTA_CAP, "rho": _CAP, "zcdp_delta": "zcdp_delta"})
    def __init__(
        self,
        epsilon: Optional[float] = None,
        delta: float = 0.0,
        *,
        rho: Optional[float] = None,
        zcdp_delta: Optional[float] = None,
    ) -> None:
        if (epsilon is None) == (rho is None):
            raise ParameterError("pass epsilon= (an (ε, δ)-DP budget, with delta=) or rho= (a zCDP budget), not both")
        self._lock = threading.RLock()
        self._eps_sum = Fraction(0)
        self._delta_sum = Fraction(0)
        self._rho_sum = Fraction(0)
        self._ledger: list[Spend] = []
        if rho is not None:
            r = _number("rho", rho)
            if r <= 0:
                raise ParameterError(f"rho must be > 0, got {rho!r}")
            if delta != 0.0 or zcdp_delta is not None:
                raise ParameterError("a zCDP budget (rho=) has no delta; use Budget(epsilon, delta) for an (ε, δ) cap")
            self._epsilon_cap: Optional[float] = None
            self._delta_cap: Optional[float] = None
            self._rho_cap: Optional[float] = r
            self._zcdp_delta: Optional[float] = None
            return
        e, d = _number("epsilon", epsilon), _number("delta", delta)
        if e <= 0:
            raise ParameterError(f"epsilon must be > 0, got {epsilon!r}")
        if not 0.0 <= d < 1.0:
            raise ParameterError(f"delta must be in [0, 1), got {delta!r}")
        if zcdp_delta is None:
            zd: Optional[float] = d / 2 if d > 0 else None
        else:
            zd = _number("zcdp_delta", zcdp_delta)
            if not 0.0 < zd <= d:
                raise ParameterError(f"zcdp_delta must be in (0, delta], got {zcdp_delta!r} with delta={delta!r}")
        self._epsilon_cap, self._delta_cap, self._rho_cap, self._zcdp_delta = e, d, None, zd

    @classmethod
    def open(
        cls,
        path: "Union[str, os.PathLike[str]]",
        *,
        epsilon: Optional[float] = None,
        delta: Optional[float] = None,
        rho: Optional[float] = None,
        zcdp_delta: Optional[float] = None,
    ) -> "FileBudget":
        """A budget kept in a JSON ledger file that several processes can share
        (:class:`dpsketch.budget_file.FileBudget`): created with these caps when ``path`` does not
        exist, loaded when it does (caps given must then equal the stored ones). Every charge locks
        the file, re-reads it, checks the cap and replaces the file atomically.

        :param epsilon: the ε cap of a new file (a present file must have the same caps)
        :param delta: the δ cap of a new file
        :param rho: the ρ cap of a new zCDP file
        :param zcdp_delta: the δ share reserved to convert ρ-zCDP charges to (ε, δ)-DP (default δ/2)
        """
        from .ledger import FileBudget

        return FileBudget.open(path, epsilon=epsilon, delta=delta, rho=rho, zcdp_delta=zcdp_delta)

    # -- properties -------------------------------------------------------------------------------
    epsilon = property(lambda self: self._epsilon_cap, doc="The ε cap (None for a zCDP budget).")
    delta = property(lambda self: self._delta_cap, doc="The δ cap (None for a zCDP budget).")
    rho = property(lambda self: self._rho_cap, doc="The ρ cap of a zCDP budget (None for an (ε, δ) budget).")
    zcdp_delta = property(lambda self: self._zcdp_delta,
                          doc="The δ share reserved to convert the zCDP total (None: ρ spends are refused).")

    @property
    def ledger(self) -> list[Spend]:
        """Every spend so far, in order."""
        with self._lock:
            return list(self._ledger)

    # -- totals -----------------------------------------------------------------------------------
    def _totals(self, eps: Fraction, dlt: Fraction, rho: Fraction) -> tuple[Fraction, Fraction, Fraction]:
        """(ε total, δ total, ρ total) as exact fractions (the zCDP conversion rounded up)."""
        if self._rho_cap is not None:  # zCDP budget: pure ε spends are already folded into rho
            return Fraction(0), Fraction(0), rho
        if rho == 0:
            return eps, dlt, rho
        assert self._zcdp_delta is not None
        return eps + _up(cks20_epsilon(float(rho), self._zcdp_delta)), dlt + Fraction(self._zcdp_delta), rho

    def _fits(self, eps: Fraction, dlt: Fraction, rho: Fraction) -> bool:
        e, d, r = self._totals(eps, dlt, rho)
        if self._rho_cap is not None:
            return r <= Fraction(self._rho_cap)
        assert self._epsilon_cap is not None and self._delta_cap is not None
        return e <= Fraction(self._epsilon_cap) and d <= Fraction(self._delta_cap)

    def spent(self) -> PrivacyTotals:
        """The composed guarantee of everything spent so far (for an (ε, δ) budget, ε and δ include
        the converted zCDP part; ``rho`` is the zCDP total)."""
        with self._lock:
            e, d, r = self._totals(self._eps_sum, self._delta_sum, self._rho_sum)
            if self._rho_cap is not None:
                return PrivacyTotals(None, None, float(r))
            return PrivacyTotals(float(e), float(d), float(r))

    def remaining(self) -> PrivacyTotals:
        """What one more spend may use: for an (ε, δ) budget the ε and δ left for an (ε, δ) spend
        and the largest ρ a zCDP spend could still take; for a zCDP budget the ρ left."""
        with self._lock:
            if self._rho_cap is not None:
                return PrivacyTotals(None, None, max(0.0, _down(Fraction(self._rho_cap) - self._rho_sum)))
            e, d, _ = self._totals(self._eps_sum, self._delta_sum, self._rho_sum)
            assert self._epsilon_cap is not None and self._delta_cap is not None
            eps_left = max(0.0, _down(Fraction(self._epsilon_cap) - e))
            delta_left = max(0.0, _down(Fraction(self._delta_cap) - d))
            return PrivacyTotals(eps_left, delta_left, self._rho_left())

    def _rho_left(self) -> float:
        """Largest extra ρ that still fits: the CKS20 inverse of the ε left, stepped down until the
        exact check accepts it."""
        if self._zcdp_delta is None or ((self._eps_sum or self._delta_sum) and not self._rho_sum):
            return 0.0  # no delta share, or a budget that composes by basic composition (its first spend)
        assert self._epsilon_cap is not None
        e_left = float(Fraction(self._epsilon_cap) - self._eps_sum)
        if e_left <= 0 or not self._fits(self._eps_sum, self._delta_sum, self._rho_sum + Fraction(2**-60)):
            return 0.0
        extra = float(Fraction(cks20_rho_for(e_left, self._zcdp_delta)) - self._rho_sum)
        for _ in range(64):  # float error: step down until the exact check accepts it
            if extra <= 0:
                return 0.0
            if self._fits(self._eps_sum, self._delta_sum, self._rho_sum + Fraction(extra)):
                return extra
            extra = extra * (1 - 1e-12)
        return 0.0

    # -- spending ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def charging(
        self, mechanism: str, *, epsilon: Number = 0, delta: Number = 0, rho: Number = 0,
        profile: "Union[None, Profile, Sequence[Profile]]" = None,
    ) -> Iterator[None]:
        """Check the spend (raising :class:`BudgetExceededError` if it does not fit), run the body
        holding the budget's lock, and record the spend only if the body succeeds. Releases draw
        their noise inside or after the body, never before the check.

        :param mechanism: a name for the charge in the ledger
        :param epsilon: ε of the charge
        :param delta: δ of the charge
        :param rho: ρ of a zCDP charge instead of (ε, δ)
        :param profile: the spend's privacy profile (a :class:`Profile` or a sequence of parts),
            which the accountant composes instead of the bare (ε, δ, ρ) (docs/accounting.md)
        """
        eps, dlt, r, parts = self._request(epsilon, delta, rho, profile)
        with self._charge_scope():
            new, routes, charged = self._admit(mechanism, parts)
            yield
            self._commit(mechanism, new, eps, dlt, r, parts, routes, charged)

    def check(self, mechanism: str, *, epsilon: Number = 0, delta: Number = 0, rho: Number = 0,
              profile: "Union[None, Profile, Sequence[Profile]]" = None) -> None:
        """Raise :class:`BudgetExceededError` if the spend would not fit now; records nothing.

        :param mechanism: a name for the charge in the ledger
        :param epsilon: ε of the spend to test
        :param delta: δ of the spend to test
        :param rho: ρ of a zCDP spend to test
        :param profile: the spend's privacy profile (as in :meth:`charging`)
        """
        _, _, _, parts = self._request(epsilon, delta, rho, profile)
        with self._charge_scope():
            self._admit(mechanism, parts)

    def _request(self, epsilon, delta, rho, profile):
        """(ε, δ, ρ, profile parts) of a spend: the profile as given, or the generic one of the
        numbers; with a profile, the numbers default to the profile's own totals."""
        eps, dlt, r = (self._amount(n, v) for n, v in (("epsilon", epsilon), ("delta", delta), ("rho", rho)))
        parts = as_profile(eps, dlt, r, profile)
        if profile is not None:
            totals = profile_totals(parts)
            if (eps or dlt or r) and (eps, dlt, r) != totals:
                raise ParameterError(
                    f"the profile spends (epsilon={float(totals[0]):.6g}, delta={float(totals[1]):.6g}, "
                    f"rho={float(totals[2]):.6g}), not the epsilon/delta/rho given; pass the profile alone")
            eps, dlt, r = totals
        return eps, dlt, r, parts

    @contextlib.contextmanager
    def _charge_scope(self) -> Iterator[None]:
        """Where a charge is checked and recorded: under the budget's lock (a persisted budget also
        locks and re-reads its file here)."""
        with self._lock:
            yield

    def _route(self, mechanism: str, parts, sums):
        """Compose ``parts`` onto the running sums (basic ε, δ, ρ): (new sums, one route per part,
        the (ε, δ, ρ) charged). The routing rule (docs/accounting.md §The adaptive filter) reads
        only the declared parameters and the running sums, which are themselves functions of
        earlier declared parameters -- never of an output."""
        E, D, R = sums
        E0, D0, R0 = sums
        routes = []
        # One accumulator per (ε, δ) budget, fixed by its first spend (docs/accounting.md §The
        # adaptive filter): a split between basic composition and the zCDP total chosen spend by
        # spend would let the analyst pick the split from the outputs, which no composition theorem
        # covers. The first spend is declared before any output of this budget exists.
        zcdp_mode = self._zcdp_mode(parts if not (E0 or D0 or R0) else None)
        for p in parts:
            pr = part_rho(p)
            if self._rho_cap is not None:  # zCDP budget: every part in ρ at its tightest zCDP
                if p.delta > 0 or pr is None:
                    raise ParameterError(
                        f"{mechanism} spends delta > 0, which a zCDP budget (rho=) cannot account for; "
                        "use Budget(epsilon, delta)"
                    )
                E, R = E + part_epsilon(p), R + pr  # E: the pure ε declared (information only)
                routes.append(("zcdp", pr))
                continue
            if p.law in ("discrete_gaussian", "zcdp") and p.rho > 0:
                if self._zcdp_delta is None:
                    raise BudgetExceededError(
                        f"{mechanism} spends rho-zCDP, which needs a delta share to convert to (ε, δ)-DP; "
                        "build the budget with delta > 0 (and optionally zcdp_delta=)"
                    )
                if not zcdp_mode:
                    raise BudgetExceededError(
                        f"{mechanism} spends rho-zCDP, but this budget composes its spends by basic composition "
                        "(its first spend was (ε, δ)-DP): mixing the two totals adaptively is not covered by a "
                        "composition theorem (docs/accounting.md §The adaptive filter). Release with an (ε, δ) "
                        "mechanism, or keep the zCDP releases in a budget of their own; nothing was spent")
                R, D = R + p.rho, D + p.delta
                routes.append(("zcdp", p.rho))
                continue
            if zcdp_mode:
                if pr is None:
                    raise BudgetExceededError(
                        f"{mechanism} spends (ε, δ)-DP with δ > 0, but this budget composes its spends in zCDP "
                        "(its first spend was zCDP), which cannot hold a generic (ε, δ) spend (docs/accounting.md "
                        "§The adaptive filter). Keep the (ε, δ) releases in a budget of their own; nothing was "
                        "spent")
                R = R + pr  # a pure spend at its exact zCDP
                routes.append(("zcdp", pr))
                continue
            E, D = E + part_epsilon(p), D + p.delta
            routes.append(("basic", Fraction(0)))
        return (E, D, R), tuple(routes), (E - E0, D - D0, R - R0)

    def _zcdp_mode(self, first_parts=None) -> bool:
        """Does this (ε, δ) budget compose in zCDP? Yes once its first spend held a Gaussian/zCDP
        part (``first_parts``: the parts of the spend being admitted when nothing was spent yet)."""
        if first_parts is not None:
            return any(q.law in ("discrete_gaussian", "zcdp") and q.rho > 0 for q in first_parts)
        return self._rho_sum > 0

    def _admit(self, mechanism: str, parts):
        """The running sums after the spend (with its routes and charges), or
        :class:`BudgetExceededError` if it does not fit."""
        new, routes, charged = self._route(mechanism, parts, (self._eps_sum, self._delta_sum, self._rho_sum))
        if not self._fits(*new):
            left = self.remaining()
            eps, dlt, r = profile_totals(parts)
            raise BudgetExceededError(
                f"{mechanism} would spend (epsilon={float(eps):.6g}, delta={float(dlt):.6g}, rho={float(r):.6g}) "
                f"but {self._name()} has {self._describe(left)} left; nothing was spent and no noise was drawn. "
                "Lower the release's epsilon/delta/rho or use a larger Budget"
            )
        return new, routes, charged

    def _commit(self, mechanism: str, new, eps: Fraction, dlt: Fraction, r: Fraction, parts=(), routes=(),
                charged=None) -> None:
        self._eps_sum, self._delta_sum, self._rho_sum = new
        self._ledger.append(Spend(mechanism, float(eps), float(dlt), float(r), tuple(parts),
                                  None if charged is None else tuple(float(c) for c in charged)))

    def composition(self) -> dict:
        """The profile view of the state: the ε composed by basic composition, the additive δ,
        the zCDP total ρ, the conversion δ share and the (ε, δ) they give (by CKS20), or ρ alone
        for a zCDP budget; with the ledger's profiles and routes."""
        with self._lock:
            e, d, r = self._totals(self._eps_sum, self._delta_sum, self._rho_sum)
            view: dict = {"basic_epsilon": float(self._eps_sum) if self._rho_cap is None else 0.0,
                    "additive_delta": float(self._delta_sum), "rho": float(self._rho_sum),
                    "zcdp_delta": self._zcdp_delta,
                    "conversion": "CKS20 (Canonne, Kamath, Steinke 2020)"}
            if self._rho_cap is None:
                view.update(epsilon=float(e), delta=float(d))
            view["spends"] = [{"mechanism": s.mechanism, "profile": [p.to_dict() for p in s.profile],
                               "charged": None if s.charged is None else
                               dict(zip(("epsilon", "delta", "rho"), s.charged))} for s in self._ledger]
            return view

    def _name(self) -> str:
        return "the budget"

    def spend(self, mechanism: str, *, epsilon: Number = 0, delta: Number = 0, rho: Number = 0,
              profile: "Union[None, Profile, Sequence[Profile]]" = None) -> None:
        """Record a spend made outside dpsketch (values used as given, no rounding); raises
        :class:`BudgetExceededError` and records nothing if it does not fit.

        :param mechanism: a name for the charge in the ledger
        :param epsilon: ε of the spend
        :param delta: δ of the spend
        :param rho: ρ of a zCDP spend instead of (ε, δ)
        :param profile: the spend's privacy profile (as in :meth:`charging`)
        """
        if not isinstance(mechanism, str):
            raise ParameterTypeError(f"mechanism must be a str, got {type(mechanism).__name__}")
        with self.charging(mechanism, epsilon=epsilon, delta=delta, rho=rho, profile=profile):
            pass

    def declare(self, name: str, releases, *, epsilon: float, delta: float) -> "DeclaredSeries":
        """Declare a series before any of its releases (docs/accounting.md §Declared plans): the
        releases (:class:`~dpsketch.accounting.declared.PlannedRelease`) are composed exactly with
        privacy-loss distributions (needs ``dp_accounting``: ``pip install 'dpsketch[accounting]'``),
        their noise calibrated so the whole series is (``epsilon``, ``delta``)-DP, and that (ε, δ)
        is charged now, once, as one spend (refused, nothing charged, if it does not fit). Returns
        the :class:`~dpsketch.accounting.declared.DeclaredSeries` to pass as ``budget=`` to each
        release in order; a release outside the plan is refused.

        :param name: a name for the plan in the ledger
        :param releases: the declared releases, in order
        :param epsilon: ε of the whole series
        :param delta: δ of the whole series
        """
        from .declared import DeclaredSeries, calibrate_plan

        plan = calibrate_plan(releases, float(epsilon), float(delta))
        self.spend(f"declared plan {name} ({len(plan.profiles)} releases, composed by PLD)",
                   profile=Profile("approx", epsilon=Fraction(float(epsilon)), delta=Fraction(float(delta))))
        return DeclaredSeries(name, plan)

    def disjoint(self, mechanism: str, *, epsilon: Number, delta: Number = 0, part_epsilon: Optional[Number] = None,
                 part_delta: Optional[Number] = None) -> "DisjointScope":
        """Charge one (ε, δ)-DP spend now and return a :class:`DisjointScope` whose parts -- one
        per disjoint slice of the data, e.g. one per event-time window -- may each spend up to
        (``part_epsilon``, ``part_delta``), default (ε, δ), without further charges: parallel
        composition (docs/privacy.md §Windows). Smaller part caps are for a privacy unit that
        spans several parts, where (ε, δ) is what group privacy makes of the parts' figures (the
        caller's argument). Raises :class:`BudgetExceededError` and records nothing if (ε, δ)
        does not fit.

        :param mechanism: a name for the charge in the ledger
        :param epsilon: ε charged once for all the disjoint parts
        :param delta: δ charged once for all the disjoint parts
        """
        pe = epsilon if part_epsilon is None else part_epsilon
        pd = delta if part_delta is None else part_delta
        if self._amount("part_epsilon", pe) > self._amount("epsilon", epsilon) or \
                self._amount("part_delta", pd) > self._amount("delta", delta):
            raise ParameterError("a part cannot spend more than the whole series is charged")
        self.spend(f"{mechanism} (parallel composition: disjoint parts, charged once)",
                   epsilon=epsilon, delta=delta)
        return DisjointScope(mechanism, pe, pd)

    @staticmethod
    def _amount(name: str, v: Number) -> Fraction:
        f = v if isinstance(v, Fraction) else Fraction(_number(name, v))
        if f < 0:
            raise ParameterError(f"{name} to spend must be >= 0, got {float(f)!r}")
        return f

    def _describe(self, t: PrivacyTotals) -> str:
        if self._rho_cap is not None:
            return f"rho={t.rho:.6g}"
        return f"epsilon={t.epsilon:.6g}, delta={t.delta:.6g} (or rho={t.rho:.6g})"

    # -- copies -----------------------------------------------------------------------------------
    def __copy__(self) -> "Budget":
        return self  # a second ledger would let the copies together spend more than the cap

    def __deepcopy__(self, memo: dict) -> "Budget":
        return self

    def __reduce_ex__(self, protocol):
        raise ParameterTypeError(
            "a dpsketch.Budget cannot be pickled: the unpickled copy would be a second accountant that "
            "this one never sees, so together they could spend more than the cap. Keep the Budget in "
            "the process that runs the releases and record spends made elsewhere with "
            "budget.spend(mechanism, epsilon=..., delta=..., rho=...)"
        )

    def __reduce__(self):
        return self.__reduce_ex__(2)

    def __repr__(self) -> str:
        s = self.spent()
        if self._rho_cap is not None:
            return f"Budget(rho={self._rho_cap:g}; spent rho={s.rho:.6g}, {len(self._ledger)} spend(s))"
        return (
            f"Budget(epsilon={self._epsilon_cap:g}, delta={self._delta_cap:g}; spent epsilon={s.epsilon:.6g}, "
            f"delta={s.delta:.6g}, rho={s.rho:.6g}, {len(self._ledger)} spend(s))"
        )


class DisjointScope:
    """The parts of one parallel composition (:meth:`Budget.disjoint`): ``part(key)`` is a fresh
    :class:`Budget` capped at the scope's (ε, δ) for the slice ``key`` of the data. The parent
    budget was charged (ε, δ) once; that covers every part only because each data record lies in
    exactly one part (docs/privacy.md §Windows), which the caller guarantees by construction. A
    key is served once: asking for it again raises ``ValueError``, since two budgets for one slice
    would let it spend twice.

    :param mechanism: the name of the charge
    :param epsilon: ε charged once for all the parts
    :param delta: δ charged once for all the parts
    """

    def __init__(self, mechanism: str, epsilon: Number, delta: Number = 0) -> None:
        self.mechanism = mechanism
        self.epsilon, self.delta = float(epsilon), float(delta)
        self._lock = threading.Lock()
        self._served: set = set()

    def part(self, key: object) -> Budget:
        """The budget of part ``key`` (hashable): a cap of (ε, δ) for that slice alone."""
        with self._lock:
            if key in self._served:
                raise ParameterError(f"{self.mechanism}: part {key!r} already has its budget; a slice of "
                                 "the data is charged once")
            self._served.add(key)
        return Budget(self.epsilon, self.delta)

    def __len__(self) -> int:
        return len(self._served)

    def __repr__(self) -> str:
        return (f"DisjointScope({self.mechanism!r}, epsilon={self.epsilon:g}, delta={self.delta:g}; "
                f"{len(self._served)} part(s))")


def charging(
    budget: Optional[Budget], mechanism: str, *, epsilon: Number = 0, delta: Number = 0, rho: Number = 0,
    profile: "Union[None, Profile, Sequence[Profile]]" = None,
) -> contextlib.AbstractContextManager[None]:
    """``budget.charging(...)``, or a no-op when ``budget`` is None (the wiring in the releases); a
    :class:`~dpsketch.accounting.declared.DeclaredSeries` admits only its next declared release."""
    if budget is None:
        return contextlib.nullcontext()
    from .declared import DeclaredSeries

    if isinstance(budget, DeclaredSeries):
        return budget.charging(mechanism, epsilon=epsilon, delta=delta, rho=rho, profile=profile)
    if not isinstance(budget, Budget):
        raise ParameterTypeError(f"budget must be a dpsketch.Budget, got {type(budget).__name__}")
    return budget.charging(mechanism, epsilon=epsilon, delta=delta, rho=rho, profile=profile)
