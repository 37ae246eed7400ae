"""The accounting of a series of releases: tumbling windows and cumulative trees.

A series is a plan in its own right. :func:`window_series` states what each window's release runs
at and what the whole series guarantees (parallel composition over disjoint event-time windows,
with group privacy over a person's rows when a person is the unit: docs/privacy.md §Windows).
:func:`tree_series` states the per-node budget of a cumulative tree and what the series
guarantees (composition over the nodes an element lies in: docs/privacy.md §Cumulative). Both
build the ``composition`` record every release of the series carries, so ``time/windows.py`` and
``time/cumulative.py`` only feed summaries and call these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..accounting.calibration import check_privacy_params, split_over_parts, zcdp_epsilon, zcdp_rho_for
from ..release import Release, with_metadata
from .unit_level import PRIVACY_UNIT_ID, _bounded_memory_plan, _split_row_level

__all__ = ["iso", "WindowSeries", "window_series", "TreeSeries", "tree_series", "series_rho"]


def iso(ns: int) -> str:
    """ISO 8601 UTC text of an instant in nanoseconds (fractional digits only when needed)."""
    import datetime as _dt

    sec, frac = divmod(int(ns), 10**9)
    base = (_dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=sec)).isoformat()
    return base + (f".{frac:09d}".rstrip("0") if frac else "") + "Z"


@dataclass(frozen=True)
class WindowSeries:
    """One release per tumbling window: what each window runs at and what the series holds.

    :ivar epsilon: each window's release ε (per row when a person is the unit)
    :ivar delta: each window's release δ (per row when a person is the unit)
    :ivar series_epsilon: the ε of the whole series under the unit
    :ivar series_delta: the δ of the whole series under the unit
    :ivar requested_epsilon: the ε asked for
    :ivar requested_delta: the δ asked for
    :ivar max_rows_per_unit: r, rows one person keeps over the series (None: one event is the unit)
    """

    epsilon: float
    delta: float
    series_epsilon: float
    series_delta: float
    requested_epsilon: float
    requested_delta: float
    max_rows_per_unit: Optional[int] = None

    def release_options(self, **extra: Any) -> dict:
        """The privacy keywords of each window's ``release`` call, plus ``extra`` (None dropped)."""
        out: dict = {"epsilon": self.epsilon, "delta": self.delta}
        out.update({k: v for k, v in extra.items() if v is not None})
        return out

    def composition(self, clock: str, period_ns: int, origin_ns: int, allowed_lateness_ns: int = 0,
                    reason: Optional[str] = None) -> dict:
        """The ``composition`` record of every window's release (docs/privacy.md §Windows):
        parallel composition at the event level, then, with a person as the unit, group privacy
        over the person's at most r rows (so at most r windows). ``reason``: why each event lies
        in one window's release only, where the route adds a step (Spark's key partitions)."""
        rec = {
            "rule": "parallel",
            "reason": "each event lies in exactly one event-time window (docs/privacy.md §Windows)",
            "series_epsilon": float(self.series_epsilon), "series_delta": float(self.series_delta),
            "neighbours": "add or remove one event", "clock": clock,
            "period_ns": int(period_ns), "origin": iso(origin_ns),
            "allowed_lateness_ns": int(allowed_lateness_ns),
            "dropped_events": "late, early and out-of-range events are dropped and never counted in any output",
        }
        if self.max_rows_per_unit is not None:
            rec.update(
                rule="parallel at the event level, then group privacy over the unit's at most r rows",
                reason=("each event lies in exactly one window and a unit keeps at most r rows over the whole "
                        "series, so it is in at most r windows (docs/privacy.md §Windows)"),
                neighbours="add or remove all rows of one privacy id")
        if reason is not None:
            rec["reason"] = reason
        return rec

    def finish(self, rel: Release, placed: dict, mechanism: str) -> Release:
        """Window release ``rel`` with its ``placed`` record (window, composition); with a person
        as the unit, its per-row figures move under ``per_row_calibration`` and the release states
        the unit-level (ε, δ) of the series."""
        if self.max_rows_per_unit is None:
            return with_metadata(rel, placed)
        r = self.max_rows_per_unit
        meta, per_row = _split_row_level({**rel.metadata, **placed})
        per_row.update(mechanism=mechanism, epsilon_per_row=rel.epsilon, delta_per_row=rel.delta,
                       privacy_unit_of_these_figures="one stream element")
        unit = dict(privacy_unit=PRIVACY_UNIT_ID, neighbours="add_remove_unit", route="bounded_memory",
                    max_rows_per_unit=r, max_windows_per_unit=r,
                    bounding="per unit: its first r rows in input order over the whole series (all windows)",
                    epsilon=self.series_epsilon, delta=self.series_delta,
                    epsilon_requested=self.requested_epsilon, delta_requested=self.requested_delta,
                    group_privacy="(r·ε', δ'·Σ_{i<r} e^{iε'}) from the per-row (ε', δ')",
                    per_row_calibration=per_row, reference="docs/privacy.md §Windows")
        return with_metadata(rel, unit, base=meta, epsilon=self.series_epsilon, delta=self.series_delta,
                             mechanism=f"unit.bounded_memory[{mechanism}]")


def window_series(epsilon: float, delta: float, max_rows_per_unit: Optional[int] = None) -> WindowSeries:
    """The :class:`WindowSeries` of windows released at (``epsilon``, ``delta``) each: with one event
    as the unit every window runs at the requested (ε, δ) (parallel composition); with a person
    keeping at most r rows, each window runs at the per-row (ε', δ') whose group-privacy chain over
    r rows is the requested (ε, δ) (docs/privacy.md §Windows, §Privacy unit)."""
    eps, dlt = check_privacy_params(epsilon, delta)
    if max_rows_per_unit is None:
        return WindowSeries(eps, dlt, eps, dlt, eps, dlt, None)
    p = _bounded_memory_plan(eps, dlt, max_rows_per_unit)
    return WindowSeries(p["epsilon_row"], p["delta_row"], p["epsilon"], p["delta"], eps, dlt, max_rows_per_unit)


@dataclass(frozen=True)
class TreeSeries:
    """A cumulative tree's accounting: each published node's budget and the series' guarantee.

    :ivar schedule: the schedule's name
    :ivar horizon: T, the number of steps
    :ivar nodes_per_element: L, the most published nodes one element lies in
    :ivar node_budget: each node's ρ (zCDP) or ε (pure DP)
    :ivar series_budget: the series' ρ or ε (L times the node's, never above the request)
    :ivar zcdp: True for ρ (discrete Gaussian noise), False for ε (discrete Laplace)
    :ivar delta: the δ of the series' (ε, δ) conversion of ρ, or None
    """

    schedule: str
    horizon: int
    nodes_per_element: int
    node_budget: float
    series_budget: float
    zcdp: bool
    delta: Optional[float] = None

    @property
    def rho(self) -> Optional[float]:
        """The series' ρ (None for pure DP)."""
        return self.series_budget if self.zcdp else None

    @property
    def epsilon(self) -> Optional[float]:
        """The series' ε: L·(node ε) for pure DP; with ``delta``, the (ε, δ) conversion of ρ; else None."""
        if not self.zcdp:
            return self.series_budget
        return None if self.delta is None else zcdp_epsilon(self.series_budget, self.delta)

    @property
    def node_rho(self) -> Optional[float]:
        return self.node_budget if self.zcdp else None

    @property
    def node_epsilon(self) -> Optional[float]:
        return None if self.zcdp else self.node_budget

    def node_options(self) -> dict:
        """The privacy keyword of each node's private sketch."""
        return {"rho": self.node_budget} if self.zcdp else {"epsilon": self.node_budget}

    def charge(self) -> dict:
        """What a budget is charged once for the whole series (before any noise)."""
        return {"rho": self.series_budget, "epsilon": 0} if self.zcdp else {"epsilon": self.series_budget, "rho": 0}

    def composition(self) -> dict:
        """The ``composition`` record of every node's release (docs/privacy.md §Cumulative)."""
        return {
            "rule": ("zCDP composition over the nodes an element lies in" if self.zcdp
                     else "basic composition over the nodes an element lies in"),
            "reason": "each node is published once with fresh noise; an element lies in at most L published "
                      "nodes (docs/privacy.md §Cumulative)",
            "schedule": self.schedule, "horizon": self.horizon, "nodes_per_element": self.nodes_per_element,
            "series_rho": self.rho, "series_epsilon": self.epsilon, "series_delta": self.delta,
            "node_rho": self.node_rho, "node_epsilon": self.node_epsilon,
            "neighbours": "add or remove one element",
        }


def tree_series(*, schedule: str, horizon: int, nodes_per_element: int, rho: Optional[float] = None,
                epsilon: Optional[float] = None, delta: Optional[float] = None) -> TreeSeries:
    """The :class:`TreeSeries` of a cumulative tree with ``nodes_per_element`` = L: every node gets
    the series' ρ (or ε) over L, rounded so that L nodes compose to at most the request
    (docs/privacy.md §Cumulative). Exactly one of ``rho`` and ``epsilon``; ``delta`` (with ``rho``
    only) records the (ε, δ) conversion."""
    from ..errors import ParameterError

    if (rho is None) == (epsilon is None):
        raise ParameterError("pass exactly one of rho= (zCDP, Gaussian noise) or epsilon= (pure DP, Laplace noise)")
    if epsilon is not None:
        if delta is not None:
            raise ParameterError("delta= records the (ε, δ) conversion of rho=; epsilon= is pure DP")
        total, _ = check_privacy_params(epsilon, 0.5)
    else:
        total, _ = check_privacy_params(rho, 0.5, name="rho")
    dlt = None if delta is None else check_privacy_params(1.0, delta)[1]
    node, series = split_over_parts(total, nodes_per_element, what="rho/epsilon",
                                    parts_name=f"the L = {nodes_per_element} nodes an element lies in")
    return TreeSeries(schedule, int(horizon), int(nodes_per_element), float(node), float(series), rho is not None,
                      dlt)


def series_rho(epsilon: float, delta: float) -> float:
    """The ρ of a zCDP series (Gaussian noise) whose (ε, δ)-DP conversion is the (``epsilon``,
    ``delta``) asked for: the largest ρ the conversion of docs/privacy.md §Budget maps to at
    most ``epsilon`` at ``delta``."""
    eps, dlt = check_privacy_params(epsilon, delta)
    return zcdp_rho_for(eps, dlt)
