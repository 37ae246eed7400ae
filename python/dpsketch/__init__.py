"""dpsketch: differentially private heavy hitters, frequency oracles and quantiles on data streams.

Two front doors for data in hand: :func:`heavy_hitters` and :func:`quantiles`, with the privacy
unit as a value (``unit=``: :class:`Row` or :class:`Person`); :func:`plan` states what either would
guarantee and how accurate it would be, before any data (a :class:`Plan`). Every release is a
:class:`Release` with intervals on its values.

For streams, the summaries and sketches update, merge and release: :class:`MisraGries` (PMG),
:class:`SpaceSaving` (DPSS), :class:`CountMin`, :class:`CountSketch`, :class:`DyadicCountSketch`
(ranks, quantiles, range counts), and the sketches noised at construction
:class:`PrivateCountMin`, :class:`PrivateCountSketch`, :class:`PrivateDyadicCountSketch` and
:class:`SketchHeavyHitters`. Several releases draw from one :class:`Budget`; one release per
event-time window: :class:`Windowed`; cumulative releases over windows: :class:`Cumulative`.

The package by role: ``dpsketch.sketches`` (non-private summaries), ``dpsketch.mechanisms`` (each
mechanism's plan and release; the person-level tools in ``dpsketch.mechanisms.unit_level``),
``dpsketch.accounting`` (budgets, calibration), ``dpsketch.time`` (windows, cumulative),
``dpsketch.io`` (input readers), ``dpsketch.spark``, ``dpsketch.audit``, ``dpsketch.cli``. Every
error is a :class:`DPSketchError` (``dpsketch.errors``). The documentation is installed with the
package: ``dpsketch docs``.
"""

from typing import TYPE_CHECKING

# The public names load on first use (PEP 562), so that a command line that only parses its
# options (``dpsketch --version``, ``--help``) imports neither numpy nor the compiled module.
_LAZY = {
    "__version__": "._core",
    "heavy_hitters": ".front", "quantiles": ".front",
    "plan": ".plans", "Plan": ".plans",
    "Row": ".units", "Person": ".units",
    "Release": ".release",
    "MisraGries": ".sketches.counters", "SpaceSaving": ".sketches.counters",
    "CountMin": ".sketches.linear", "CountSketch": ".sketches.linear",
    "DyadicCountSketch": ".sketches.dyadic", "PrivateDyadicCountSketch": ".sketches.dyadic",
    "PrivateCountMin": ".mechanisms.private_sketches", "PrivateCountSketch": ".mechanisms.private_sketches",
    "SketchHeavyHitters": ".mechanisms.private_sketches",
    "Budget": ".accounting.budget",
    "Windowed": ".time.windows", "Cumulative": ".time.cumulative",
    "DPSketchError": ".errors", "ParameterError": ".errors",
}

# Names that left the top level, with where they live now: they still work for one release, with
# a DeprecationWarning (CHANGELOG.md lists them).
_MOVED = {
    "FileBudget": "dpsketch.accounting", "DisjointScope": "dpsketch.accounting",
    "PrivacyTotals": "dpsketch.accounting", "Spend": "dpsketch.accounting",
    "BudgetExceededError": "dpsketch.errors", "BudgetFileError": "dpsketch.errors",
    "CorruptBytesError": "dpsketch.errors", "ReadOnlyError": "dpsketch.errors",
    "ReleaseBudgetError": "dpsketch.errors", "StreamLimitError": "dpsketch.errors",
    "ContributionBounder": "dpsketch.mechanisms.unit_level", "UnitStream": "dpsketch.mechanisms.unit_level",
    "bound_contributions": "dpsketch.mechanisms.unit_level",
    "bound_rows_per_unit": "dpsketch.mechanisms.unit_level",
    "unit_heavy_hitters": "dpsketch.mechanisms.unit_level", "unit_quantiles": "dpsketch.mechanisms.unit_level",
    "unit_quantiles_cost": "dpsketch.mechanisms.unit_level",
    "unit_release_cost": "dpsketch.mechanisms.unit_level",
}

_SUBMODULES = ("accounting", "audit", "cli", "datasets", "errors", "io", "mechanisms", "sketches", "spark",
               "time")

if TYPE_CHECKING:
    from ._core import __version__
    from . import accounting, audit, datasets, errors, mechanisms, sketches
    from .accounting.budget import Budget
    from .errors import DPSketchError, ParameterError
    from .front import heavy_hitters, quantiles
    from .mechanisms.private_sketches import PrivateCountMin, PrivateCountSketch, SketchHeavyHitters
    from .plans import Plan, plan
    from .release import Release
    from .sketches.counters import MisraGries, SpaceSaving
    from .sketches.dyadic import DyadicCountSketch, PrivateDyadicCountSketch
    from .sketches.linear import CountMin, CountSketch
    from .time.cumulative import Cumulative
    from .time.windows import Windowed
    from .units import Person, Row

__all__ = [
    "heavy_hitters",
    "quantiles",
    "plan",
    "Plan",
    "Row",
    "Person",
    "Release",
    "MisraGries",
    "SpaceSaving",
    "CountMin",
    "CountSketch",
    "DyadicCountSketch",
    "PrivateCountMin",
    "PrivateCountSketch",
    "PrivateDyadicCountSketch",
    "SketchHeavyHitters",
    "Budget",
    "Windowed",
    "Cumulative",
    "DPSketchError",
    "ParameterError",
    "__version__",
]


def __getattr__(name):
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    if name in _MOVED:
        import warnings

        where = _MOVED[name]
        warnings.warn(f"dpsketch.{name} is deprecated: use {where}.{name}", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(where), name)
    if name in _OLD_MODULES:
        return _old_module(name, stacklevel=3)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


# installs the finder that maps the old module paths (``import dpsketch.windows``) onto the new ones
from ._compat import OLD_MODULES as _OLD_MODULES, old_module as _old_module  # noqa: E402
