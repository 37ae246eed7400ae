"""The exceptions dpsketch raises, all under :class:`DPSketchError`. Each also derives from the
built-in a caller would catch without knowing dpsketch (``ValueError``, ``TypeError``,
``OverflowError``, ``RuntimeError``, ...), so ``except ValueError`` keeps working.

======================  ====================  ===================================================
class                   also a                raised when
======================  ====================  ===================================================
ParameterError          ValueError            a parameter or data argument is invalid: out of
                                              range, inconsistent, of the wrong shape
ParameterTypeError      ParameterError,       a parameter or data argument has the wrong type
                        TypeError
IntegerRangeError       ParameterError,       an integer key or count does not fit in 64 bits
                        OverflowError
CorruptBytesError       ValueError            serialized bytes are corrupt, truncated or foreign
StreamLimitError        OverflowError         an update would pass a summary's stream limit (2^62)
NoiseRangeError         OverflowError         a noise scale is outside the exact samplers' range
EntropyError            RuntimeError          the OS entropy source fails
ReadOnlyError           RuntimeError          a published (released) object is updated
StateError              RuntimeError          an object is used in a state that does not allow
                                              the call (a charge inside a charge, a batch changed
                                              by another thread while it was read)
InternalError           RuntimeError          an internal invariant failed (a bug: report it)
ReleaseBudgetError      RuntimeError          a summary is released twice without ``allow_repeat``
BudgetExceededError     ReleaseBudgetError    a release would exceed its :class:`dpsketch.Budget`
BudgetFileError         ValueError            a budget file is missing, damaged, edited or unusable
MissingDependencyError  ImportError           an optional dependency (pyspark, pandas, ...) is
                                              not installed
NotInstalledError       FileNotFoundError     a file shipped with the package (documentation, a
                                              bundled data set) is missing from this install
======================  ====================  ===================================================

The classes of the first block are created by the compiled core (``bindings/bind_errors.cpp``),
which translates every C++ exception into one of them; all are named ``dpsketch.errors.X``.
"""

from __future__ import annotations

from ._core import (CorruptBytesError, DPSketchError, EntropyError, InternalError, NoiseRangeError, ParameterError, ParameterTypeError, ReadOnlyError, StateError, StreamLimitError)

__all__ = ["DPSketchError", "ParameterError", "ParameterTypeError", "IntegerRangeError", "CorruptBytesError", "StreamLimitError",
           "NoiseRangeError", "EntropyError", "ReadOnlyError", "StateError", "InternalError", "ReleaseBudgetError",
           "BudgetExceededError", "BudgetFileError", "MissingDependencyError", "NotInstalledError"]


class IntegerRangeError(ParameterError, OverflowError):
    """An integer key or count does not fit in the signed 64-bit range the summaries hold."""


class ReleaseBudgetError(DPSketchError, RuntimeError):
    """Raised when a summary that was already released is released again without opting in."""


class BudgetExceededError(ReleaseBudgetError):
    """A release would exceed its :class:`dpsketch.Budget`. Nothing was spent and no noise was drawn."""


class BudgetFileError(DPSketchError, ValueError):
    """A budget file (:meth:`dpsketch.Budget.open`) cannot be used: it is missing, not a budget
    ledger, damaged, edited, of an unknown format version, or its caps differ from the ones given.
    The message names the file and what to do; the file is never reset or repaired."""


class MissingDependencyError(DPSketchError, ImportError):
    """An optional dependency this call needs is not installed; the message names the extra."""


class NotInstalledError(DPSketchError, FileNotFoundError):
    """A file that ships with the package (its documentation, a bundled data set) is missing."""

