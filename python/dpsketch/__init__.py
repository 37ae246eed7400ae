"""dpsketch: differentially private heavy hitters on data streams.

Summaries and sketches (non-private): :class:`MisraGries`, :class:`SpaceSaving`,
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

from ._core import __version__
from . import datasets, errors
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
from .dpss import heavy_hitters
from .dyadic import DyadicCountSketch, PrivateDyadicCountSketch
from .private import PrivateCountMin, PrivateCountSketch, SketchHeavyHitters
from .inmemory import quantiles
from .privacy_unit import (ContributionBounder, UnitStream, bound_contributions, bound_rows_per_unit,
                           unit_heavy_hitters, unit_quantiles, unit_quantiles_cost, unit_release_cost)
from .release import Release
from .sketches import CountMin, CountSketch
from .summaries import MisraGries, SpaceSaving
from .windows import Windowed
from .cumulative import Cumulative

__all__ = [
    "MisraGries",
    "SpaceSaving",
    "CountMin",
    "CountSketch",
    "PrivateCountMin",
    "PrivateCountSketch",
    "SketchHeavyHitters",
    "heavy_hitters",
    "DyadicCountSketch",
    "PrivateDyadicCountSketch",
    "quantiles",
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


def __getattr__(name):  # dpsketch.audit loads on first use: importing dpsketch does not import it
    if name == "audit":
        import importlib

        return importlib.import_module(".audit", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
