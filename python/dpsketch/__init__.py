"""dpsketch: differentially private heavy hitters on data streams.

Two front doors for data in hand: :func:`heavy_hitters` and :func:`quantiles`, with the privacy
unit as a value (``unit=``: :class:`Row` or :class:`Person`); :func:`plan` states what either
would guarantee and how accurate it would be, before any data (a :class:`Plan`). Summaries and sketches (non-private): :class:`MisraGries`, :class:`SpaceSaving`,
:class:`CountMin`, :class:`CountSketch`. Private releases: ``MisraGries.release`` (PMG),
``SpaceSaving.release`` (DPSS), :func:`heavy_hitters` (DPSS in one or two passes over an array,
DataFrame or file), :class:`PrivateCountMin`, :class:`PrivateCountSketch`,
:class:`SketchHeavyHitters`; each returns or builds on a :class:`Release`. Ranks, quantiles,
range counts and hierarchical heavy hitters: :class:`DyadicCountSketch`,
:class:`PrivateDyadicCountSketch`; quantiles of data held in memory: :func:`quantiles`. Several
releases can draw from one :class:`Budget`, kept in a file shared by several processes with
:meth:`Budget.open`. One release per event-time window: :class:`Windowed` (``dpsketch.windows``),
charged once by parallel composition. Cumulative ("since start") releases of a linear sketch over a
series of windows, by the binary tree mechanism: :class:`Cumulative` (``dpsketch.cumulative``).
Every error is a :class:`DPSketchError` (``dpsketch.errors``). The
documentation is installed with the package: ``dpsketch docs`` (the specification is
docs/algorithms.md, the derivations docs/privacy.md).
"""

from typing import TYPE_CHECKING

# The public names load on first use (PEP 562), so that a command line that only parses its
# options (``dpsketch --version``, ``--help``) imports neither numpy nor the compiled module.
# ``from dpsketch import X`` and ``dpsketch.X`` work as for eager imports; the block below gives
# type checkers the same names.
_LAZY = {
    "__version__": "._core",
    "Budget": ".budget", "DisjointScope": ".budget", "PrivacyTotals": ".budget", "Spend": ".budget",
    "FileBudget": ".budget_file",
    "BudgetExceededError": ".errors", "BudgetFileError": ".errors", "CorruptBytesError": ".errors",
    "DPSketchError": ".errors", "ParameterError": ".errors", "ReadOnlyError": ".errors",
    "ReleaseBudgetError": ".errors", "StreamLimitError": ".errors",
    "heavy_hitters": ".front", "quantiles": ".front", "Row": ".units", "Person": ".units",
    "plan": ".plans", "Plan": ".plans",
    "DyadicCountSketch": ".dyadic", "PrivateDyadicCountSketch": ".dyadic",
    "PrivateCountMin": ".private", "PrivateCountSketch": ".private", "SketchHeavyHitters": ".private",
    "ContributionBounder": ".privacy_unit", "UnitStream": ".privacy_unit", "bound_contributions": ".privacy_unit",
    "bound_rows_per_unit": ".privacy_unit", "unit_heavy_hitters": ".privacy_unit", "unit_quantiles": ".privacy_unit",
    "unit_quantiles_cost": ".privacy_unit", "unit_release_cost": ".privacy_unit",
    "Release": ".release",
    "CountMin": ".sketches", "CountSketch": ".sketches",
    "MisraGries": ".summaries", "SpaceSaving": ".summaries",
    "Windowed": ".windows",
    "Cumulative": ".cumulative",
}
_SUBMODULES = ("audit", "datasets", "errors")

if TYPE_CHECKING:
    from ._core import __version__
    from . import audit, datasets, errors
    from .budget import Budget, DisjointScope, PrivacyTotals, Spend
    from .budget_file import FileBudget
    from .errors import (
        BudgetExceededError,
        BudgetFileError,
        CorruptBytesError,
        DPSketchError,
        ParameterError,
        ReadOnlyError,
        ReleaseBudgetError,
        StreamLimitError,
    )
    from .front import heavy_hitters, quantiles
    from .plans import Plan, plan
    from .units import Person, Row
    from .dyadic import DyadicCountSketch, PrivateDyadicCountSketch
    from .private import PrivateCountMin, PrivateCountSketch, SketchHeavyHitters
    from .privacy_unit import (ContributionBounder, UnitStream, bound_contributions, bound_rows_per_unit,
                               unit_heavy_hitters, unit_quantiles, unit_quantiles_cost, unit_release_cost)
    from .release import Release
    from .sketches import CountMin, CountSketch
    from .summaries import MisraGries, SpaceSaving
    from .windows import Windowed
    from .cumulative import Cumulative

__all__ = [
    "heavy_hitters",
    "quantiles",
    "plan",
    "Plan",
    "Row",
    "Person",
    "MisraGries",
    "SpaceSaving",
    "CountMin",
    "CountSketch",
    "PrivateCountMin",
    "PrivateCountSketch",
    "SketchHeavyHitters",
    "DyadicCountSketch",
    "PrivateDyadicCountSketch",
    "Release",
    "unit_heavy_hitters",
    "unit_quantiles",
    "UnitStream",
    "bound_contributions",
    "ContributionBounder",
    "bound_rows_per_unit",
    "unit_release_cost",
    "unit_quantiles_cost",
    "Budget",
    "DisjointScope",
    "FileBudget",
    "Windowed",
    "Cumulative",
    "DPSketchError",
    "ParameterError",
    "CorruptBytesError",
    "StreamLimitError",
    "ReadOnlyError",
    "ReleaseBudgetError",
    "BudgetExceededError",
    "BudgetFileError",
    "PrivacyTotals",
    "Spend",
    "datasets",
    "errors",
    "audit",
    "__version__",
]


def __getattr__(name):
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
