"""What the command line needs to know about the input before reading any (the values of the input
options, the two error types of a command), apart from the readers of :mod:`dpsketch._input`, so
that parsing the options imports neither numpy nor pyarrow. :mod:`dpsketch._input` re-exports them."""

from __future__ import annotations

from ..errors import DPSketchError

__all__ = ["FORMATS", "ON_BAD_LINE", "DEFAULT_MAX_LINE_BYTES", "UsageError", "RunError", "release_written"]

FORMATS = ("text", "csv", "parquet", "arrow")
ON_BAD_LINE = ("error", "skip", "replace")
DEFAULT_MAX_LINE_BYTES = 1 << 20  # also the CSV reader's block size: bounds memory in flight


class UsageError(DPSketchError):
    """A bad command line: an option out of range, or options that do not fit together (exit status 2)."""


class RunError(DPSketchError):
    """The command could not be carried out: unreadable input, a release the library refuses (exit status 1)."""


_written = {"release": False}  # set once a run's release is on stdout (see release_written)


def release_written(reset: bool = False) -> bool:
    """Whether this run's release has been written to stdout in full (the command line's Ctrl-C
    handler: an interrupt after it does not undo the release, so the run exits 0); ``reset``
    clears it when a run starts."""
    if reset:
        _written["release"] = False
    return _written["release"]
