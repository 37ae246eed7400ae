"""Releases over time: one release per event-time window (``windows``: :class:`Windowed`) and
cumulative releases over a series of windows by the tree mechanism (``cumulative``:
:class:`Cumulative`), or with correlated noise (``correlated``: what ``Cumulative(schedule="sqrt")``
builds)."""

from .._lazy import attach

__all__ = ["Windowed", "Cumulative"]
__getattr__, __dir__ = attach(__name__, ("windows", "cumulative", "correlated"), {"Windowed": "windows", "Cumulative": "cumulative"})
