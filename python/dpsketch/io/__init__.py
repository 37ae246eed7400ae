"""Input and output of the command line: ``input`` (text, CSV/TSV, JSON lines, Parquet and Arrow
readers with gzip, stdin, follow and the bad-line policy), ``options`` (their shared option values)
and ``output`` (tables, JSON and CSV of a release)."""

from .._lazy import attach

__getattr__, __dir__ = attach(__name__, ("input", "options", "output"), {})
