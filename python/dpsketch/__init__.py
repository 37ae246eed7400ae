"""dpsketch: differentially private heavy hitters on data streams.

Summaries and sketches (non-private): :class:`MisraGries`, :class:`SpaceSaving`,
:class:`CountMin`, :class:`CountSketch`. Private releases: ``MisraGries.release`` (PMG),
``SpaceSaving.release`` (DPSS), :class:`PrivateCountMin`, :class:`PrivateCountSketch`,
:class:`SketchHeavyHitters`; each returns or builds on a :class:`Release`. Ranks, quantiles,
range counts and hierarchical heavy hitters: :class:`DyadicCountSketch`,
:class:`PrivateDyadicCountSketch`. Several releases can draw from one :class:`Budget`. The
documentation is installed with the package: ``dpsketch docs`` (the specification is
docs/algorithms.md, the derivations docs/privacy.md).
"""

from ._core import __version__
from . import audit, datasets
from .budget import Budget, BudgetExceededError, PrivacyTotals, Spend
from .dyadic import DyadicCountSketch, PrivateDyadicCountSketch
from .private import PrivateCountMin, PrivateCountSketch, SketchHeavyHitters
from .release import Release, ReleaseBudgetError
from .sketches import CountMin, CountSketch
from .summaries import MisraGries, SpaceSaving

__all__ = [
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
    "ReleaseBudgetError",
    "Budget",
    "BudgetExceededError",
    "PrivacyTotals",
    "Spend",
    "datasets",
    "audit",
    "__version__",
]
