"""Input and output of the command line: ``input`` (:class:`~dpsketch.io.input.Source`, over one
reader per format: ``text``, ``delimited`` (CSV/TSV), ``columnar`` (Parquet and Arrow) and ``logs``
(Apache/nginx logs, JSON lines, a regex), sharing ``streams`` (gzip, stdin, follow, the bad-line
filter) and ``values`` (key and number typing)), ``options`` (their shared option values) and
``output`` (tables, JSON and CSV of a release)."""

from .._lazy import attach

__getattr__, __dir__ = attach(
    __name__, ("input", "options", "output", "streams", "values", "text", "delimited", "columnar", "logs"), {})
