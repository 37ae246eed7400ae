"""Releases over time: one release per event-time window (``windows``: :class:`Windowed`) and
cumulative releases over a series of windows by the tree mechanism (``cumulative``:
:class:`Cumulative`)."""

from .._lazy import attach

__all__ = ["Windowed", "Cumulative"]
__getattr__, __dir__ = attach(__name__, ("windows", "cumulative"), {"Windowed": "windows", "Cumulative": "cumulative"})
