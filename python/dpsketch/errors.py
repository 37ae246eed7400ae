"""The exceptions dpsketch raises, all under :class:`DPSketchError`. Each also derives from the
built-in a caller would catch without knowing dpsketch (``ValueError``, ``OverflowError``,
``RuntimeError``), so ``except ValueError`` keeps working.

=====================  ==================  =====================================================
class                  also a              raised when
=====================  ==================  =====================================================
ParameterError         ValueError          a parameter is out of range or inconsistent
CorruptBytesError      ValueError          serialized bytes are corrupt, truncated or foreign
StreamLimitError       OverflowError       an update would pass a summary's stream limit (2^62)
NoiseRangeError        OverflowError       a noise scale is outside the exact samplers' range
EntropyError           RuntimeError        the OS entropy source fails
ReadOnlyError          RuntimeError        a published (released) object is updated
ReleaseBudgetError     RuntimeError        a summary is released twice without ``allow_repeat``
BudgetExceededError    ReleaseBudgetError  a release would exceed its :class:`dpsketch.Budget`
BudgetFileError        ValueError          a budget file is missing, damaged, edited or unusable
=====================  ==================  =====================================================
"""

from __future__ import annotations

from ._core import (  # the C++ core's types (bindings/bind_errors.cpp)
    CorruptBytesError,
    DPSketchError,
    EntropyError,
    NoiseRangeError,
    ParameterError,
    ReadOnlyError,
    StreamLimitError,
)

__all__ = ["DPSketchError", "ParameterError", "CorruptBytesError", "StreamLimitError", "NoiseRangeError",
           "EntropyError", "ReadOnlyError", "ReleaseBudgetError", "BudgetExceededError", "BudgetFileError"]


class ReleaseBudgetError(DPSketchError, RuntimeError):
    """Raised when a summary that was already released is released again without opting in."""


class BudgetExceededError(ReleaseBudgetError):
    """A release would exceed its :class:`dpsketch.Budget`. Nothing was spent and no noise was drawn."""


class BudgetFileError(DPSketchError, ValueError):
    """A budget file (:meth:`dpsketch.Budget.open`) cannot be used: it is missing, not a budget
    ledger, damaged, edited, of an unknown format version, or its caps differ from the ones given.
    The message names the file and what to do; the file is never reset or repaired."""
