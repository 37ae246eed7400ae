"""The log reader: fields of log lines as columns (``--log-format common|combined|json``,
``--regex PATTERN``; docs/logs.md).

The lines are read as text input is (a file or stdin, plain or gzip, ``--encoding``, ``--follow``,
the progress position: :meth:`dpsketch.io.input.Source._text_blocks` and ``_timed_blocks``) in
chunks of ``LOG_BLOCK_BYTES``, cut after their last ``\\n`` without a copy (the line that straddles
two chunks is parsed on its own), and parsed in C++ (:class:`dpsketch._core.logs.LogParser`, which
releases the GIL) on up to ``LOG_THREADS`` threads, the blocks' results taken in input order. Each
block gives one column per field asked for (an Arrow large_string, or int64 for ``timestamp``,
``status`` and ``bytes``), aligned row by row; ``dpsketch top``'s text keys go to the summary as
:class:`dpsketch.sketches._keys.Utf8Lines` over the parser's buffers, without pyarrow.

Bad lines follow the reader's ``on_bad_line``, decided on each line's own bytes:

- ``error`` stops at the first line that is not valid UTF-8, is longer than ``max_line_bytes`` or
  does not match the format (named by its number only with ``name_positions``);
- ``skip`` drops such lines; ``replace`` parses a line with ill-formed UTF-8 with U+FFFD in its
  place and drops the other bad lines (a line cut short or of another shape cannot be mended).

Either way each dropped line adds one to ``Source.bad_lines``, and each blank line to
``Source.skipped``; the commands print those counts only with a public stream length. A line
without ``\\n`` longer than ``max_line_bytes`` is an overlong line before the parser sees it, so
input without newlines cannot grow memory; line ends are ``\\n``, ``\\r\\n`` or (inside a block) a
bare ``\\r``.
"""

from __future__ import annotations

import logging
import os
from collections import deque

import numpy as np

from ..errors import ParameterError
from .streams import (Plumbing, _BOM, _EDGE_WS, InputError, InputUsageError, _aligned, _aligned_columns, _both, _pa,
                      _short_lines, _take, _trim, _values)
from .values import _MAX_EPOCH_SECONDS, _event_times

__all__ = ["LOG_FORMATS", "LogFormat", "LOG_BLOCK_BYTES", "LOG_THREADS"]

_log = logging.getLogger(__name__)

LOG_FORMATS = ("common", "combined", "json")
LOG_BLOCK_BYTES = 4 << 20  # bytes of complete lines per parse
# Blocks parsed at once: the parser releases the GIL, so two blocks parse on two cores while the
# summary's update runs on a third thread (docs/benchmarks.md, Log lines).
LOG_THREADS = max(1, min(2, os.cpu_count() or 1))
_UTF8, _LONG, _NO_MATCH = 1, 2, 3  # dpsketch._core.logs.BAD_LINE_REASONS


class LogFormat:
    """Which lines and how: a named format (``common``, ``combined``, ``json``) or a regular
    expression with named groups (``pattern``), and ``strip_query`` (the ``path`` field ends
    before its first ``?``). Builds the C++ parser of a list of fields; an unknown field or a
    pattern that does not compile is a usage error naming the fields there are."""

    def __init__(self, name=None, pattern=None, strip_query=False):
        if pattern is not None and name not in (None, "regex"):
            raise InputUsageError("--regex PATTERN reads lines of any other shape; give it or --log-format, not both")
        if pattern is None and name not in LOG_FORMATS:
            raise InputUsageError(f"--log-format must be one of {', '.join(LOG_FORMATS)} (or --regex PATTERN), "
                                  f"got {name!r}")
        self.name = "regex" if pattern is not None else name
        self.pattern = pattern
        self.strip_query = bool(strip_query)
        if self.strip_query and self.name not in ("common", "combined"):
            raise InputUsageError("--strip-query applies to the path field of --log-format common and combined")

    def describe(self) -> str:
        return "a regular expression (--regex)" if self.name == "regex" else f"the {self.name} log format"

    def fields(self) -> tuple:
        from .. import _core

        return tuple(_core.logs.FIELDS.get(self.name, ()))

    def is_int(self, field) -> bool:
        from .. import _core

        return self.name in ("common", "combined") and field in _core.logs.INT_FIELDS

    def parser(self, fields, *, max_line_bytes, replace_invalid_utf8=False):
        from .. import _core

        try:
            return _core.logs.LogParser(self.name, list(fields), pattern=self.pattern, strip_query=self.strip_query,
                                        max_line_bytes=max_line_bytes, replace_invalid_utf8=replace_invalid_utf8)
        except ParameterError as exc:
            raise InputUsageError(f"{exc} (--column, --privacy-id and --time-column name fields of "
                                  f"{self.describe()})") from None


def _arrow_column(c, rows, keep_nulls):
    """A parser column as a pyarrow array, sharing its buffers. Strings: large_string, whose nulls
    (zero-length slots) become empty strings unless ``keep_nulls``; int64 keeps its nulls."""
    import pyarrow as pa

    validity = None if c["validity"] is None else pa.py_buffer(c["validity"])
    if c["type"] == "string":
        if not keep_nulls:
            validity = None
        return pa.Array.from_buffers(pa.large_string(), rows, [validity, pa.py_buffer(c["offsets"]),
                                                               pa.py_buffer(c["data"])],
                                     null_count=c["null_count"] if validity is not None else 0)
    return pa.Array.from_buffers(pa.int64(), rows, [validity, pa.py_buffer(c["values"])], null_count=c["null_count"])


def _complete_blocks(chunks):
    """Blocks of complete lines from ``chunks`` (bytes, as read: a few MiB each, or what a pipe had
    under ``--follow``), without copying a chunk: a chunk's lines up to its last ``\n`` are a
    memoryview of it, and the line that straddles two chunks is joined on its own (the held-back
    bytes and the next chunk's first line) and parsed as a block of its own. The input's last bytes
    form the last block whether or not they end with one. Yields (block, held): ``block`` is None
    when only ``held``, the length of the incomplete line held back, is news; the caller checks it
    against the line limit."""
    held: list = []  # the incomplete line: its pieces so far
    size = 0
    for chunk in chunks:
        if not chunk:
            continue
        first = chunk.find(b"\n")
        if first < 0:  # no line ends here: the incomplete line grows
            held.append(chunk)
            size += len(chunk)
            yield None, size
            continue
        last = chunk.rfind(b"\n")
        view = memoryview(chunk)
        if held:
            yield b"".join(held + [view[: first + 1]]), 0
            if last > first:
                yield view[first + 1 : last + 1], 0
        else:
            yield view[: last + 1], 0
        rest = view[last + 1 :]
        held, size = ([bytes(rest)], len(rest)) if len(rest) else ([], 0)
        if size:
            yield None, size
    if held:
        yield b"".join(held), 0


def log_columns(src, fields, *, follow=False, keep_nulls=False, arrow=True):
    """Lists of pyarrow arrays, one per field of ``fields``, aligned row by row: the parsed lines
    of ``src`` (a :class:`dpsketch.io.input.Source` with ``src.log`` set), block by block in input
    order, with its ``on_bad_line`` applied (module doc). ``follow``: lines are handed over as soon
    as they arrive (``--follow``), parsed on the reading thread. ``arrow=False``: the parser's own
    columns (dicts of numpy arrays, docs/logs.md) and the row count instead, without pyarrow."""
    from .._prefetch import Prefetch

    fmt = src.log
    parser = fmt.parser(fields, max_line_bytes=src.max_line_bytes,
                        replace_invalid_utf8=src.on_bad_line == "replace")
    if follow and not src.utf8:
        raise InputUsageError("--follow reads UTF-8 input; convert it first (iconv)")
    raw = src._timed_blocks(True) if follow else src._text_blocks(LOG_BLOCK_BYTES)
    reader = Prefetch(raw, name="dpsketch-inflate") if not follow else None
    chunks = _chunks(reader) if reader is not None else raw
    lenient = src.on_bad_line != "error"
    if lenient:  # overlong lines are dropped (and counted) before the parser sees them
        chunks = _short_lines(b"", chunks, src.max_line_bytes, src._count_bad)
    threads = 1 if follow else LOG_THREADS
    pool = None
    if threads > 1:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="dpsketch-log-parse")
    lines_before = 0
    first = True
    _log.debug("log reader: %s, fields %s, %d parse thread(s), blocks of about %d MiB%s", fmt.describe(),
               ", ".join(fields), threads, LOG_BLOCK_BYTES >> 20, " (--follow: as lines arrive)" if follow else "")

    def taken(r):
        nonlocal lines_before
        bad = r["bad"]
        if len(bad):
            if not lenient:
                line = lines_before + int(bad[0]) + 1
                reason = int(r["bad_reason"][0])
                if reason == _UTF8:
                    raise InputError(f"{src._at('line', line)} is not valid {src.encoding} text; "
                                     f"--on-bad-line skip or replace goes on (or pass the right --encoding)")
                if reason == _LONG:
                    raise src._too_long(line)
                option = "--regex" if fmt.name == "regex" else "--log-format"
                raise InputError(f"{src._at('line', line)} does not match {fmt.describe()}; --on-bad-line skip "
                                 f"goes on (or check {option})")
            with src._counting:
                src.bad_lines += len(bad)
        src.skipped += len(r["blank"])
        lines_before += int(r["lines"])
        rows = int(r["rows"])
        if not rows:
            return None
        if not arrow:
            return [r["columns"][f] for f in fields], rows
        return [_arrow_column(r["columns"][f], rows, keep_nulls) for f in fields]

    queue: deque = deque()
    try:
        for block, carry in _complete_blocks(chunks):
            if src._cancel.is_set():
                return
            if carry > src.max_line_bytes:  # a line without an end: no need to wait for it
                while queue:  # the lines before it first (an earlier bad line is the error)
                    taken(queue.popleft().result())
                raise src._too_long(lines_before + 1)
            if block is None:
                continue
            if first:
                first = False
                if src.utf8 and bytes(block[:3]) == _BOM:
                    block = block[3:]
                if follow and bytes(block[:2]) == b"\x1f\x8b":  # pragma: no cover - _timed_blocks says so first
                    raise InputUsageError("--follow reads plain text; decompress gzip input first")
            if pool is None:
                out = taken(parser.parse(block))
                if out is not None:
                    yield out
                continue
            queue.append(pool.submit(parser.parse, block))
            while len(queue) > 2 * threads:  # a straddling line is a small block of its own
                out = taken(queue.popleft().result())
                if out is not None:
                    yield out
        while queue:
            out = taken(queue.popleft().result())
            if out is not None:
                yield out
    finally:
        for f in queue:
            f.cancel()
        if pool is not None:
            pool.shutdown(wait=True)
        if reader is not None:
            reader.close(wait=not src.utf8)


def _chunks(reader):
    from .._prefetch import Prefetch

    while (chunk := reader.get()) is not Prefetch.DONE:
        yield chunk


class LogReader(Plumbing):
    """The log methods of :class:`dpsketch.io.input.Source` (``src.log`` set): fields checked before
    reading, the text keys of ``dpsketch top`` without pyarrow, the numbers of an int64 field, and
    the timed batches of ``--time-column``."""

    def _log_key_chunks(self):
        """Key batches of a text field as dpsketch._keys.Utf8Lines over the parser's own buffers
        (no pyarrow, no copy), at most chunk_size keys each; a missing or empty field is skipped and
        counted. A batch with an item that has white space at an edge (a JSON value, a regex group)
        goes through the Arrow path, which trims it as a CSV cell is trimmed."""
        from ..sketches._keys import Utf8Lines

        for (col,), rows in log_columns(self, [self.column], arrow=False):
            data, offsets = col["data"], col["offsets"]
            lengths = np.diff(offsets)
            nonempty = lengths > 0
            if data.size and (_EDGE_WS[data[offsets[:-1][nonempty]]].any()
                              or _EDGE_WS[data[offsets[1:][nonempty] - 1]].any()):
                arr, kept = _trim(_arrow_column(col, rows, False))
                if kept is not None:
                    self.skipped += int(len(arr) - np.count_nonzero(kept))
                    arr = _take(arr, kept)
                yield from self._keyed([arr])
                continue
            if not nonempty.all():  # nulls and empty values: the other items, compacted
                self.skipped += int(rows - np.count_nonzero(nonempty))
                data = data[np.repeat(nonempty, lengths)]
                offsets = np.concatenate(([0], np.cumsum(lengths[nonempty])))
            for start in range(0, len(offsets) - 1, self.chunk_size):
                yield Utf8Lines(data, offsets[start : start + self.chunk_size + 1])

    def _check_log_fields(self, *fields, time_column=None):
        """Usage errors before reading: no --column, or a field the log format does not have."""
        if self.column is None:
            known = self.log.fields()
            listed = f"; the fields of {self.log.name} are {', '.join(known)}" if known else ""
            raise InputUsageError(f"name the field to read with --column FIELD{listed}")
        wanted = [f for f in (*fields, time_column) if f is not None]
        self.log.parser(wanted, max_line_bytes=self.max_line_bytes)  # refuses an unknown field or group

    def _log_numbers(self, integer, bits, with_ids):
        """quantiles of a log's int64 field (bytes, status, timestamp): (numbers, ids) batches, or
        numbers alone without ``with_ids``; nulls ('-') dropped and counted as skipped, integers
        clamped into [0, 2^bits) as for a Parquet integer column."""
        pa, pc = _pa()
        from .logs import log_columns

        top = (1 << bits) - 1
        fields = [self.column] + ([self.privacy_id] if with_ids else [])
        for cols in log_columns(self, fields):
            vals = cols[0]
            ids, ids_nonempty = _trim(cols[1]) if with_ids else (None, None)
            present = _values(vals.is_valid()) if vals.null_count else None
            both = _both(present, ids_nonempty)
            if both is not None and not both.all():
                self.skipped += int(len(both) - np.count_nonzero(both))
                vals = vals.filter(pa.array(both))
                ids = _take(ids, both) if ids is not None else None
            v = _values(vals)
            v = np.minimum(np.maximum(v, 0).astype(np.uint64), np.uint64(top)) if integer else v.astype(np.float64)
            if ids is None:  # no privacy ids asked for
                if len(v):
                    yield v
                continue
            for start in range(0, len(v), self.chunk_size):
                part, ids_part = _aligned(v[start : start + self.chunk_size], None,
                                          *self.ids.convert_kept(ids.slice(start, self.chunk_size)))
                if len(part):
                    yield part, ids_part

    def _log_timed(self, time_column, follow):
        """timed() of a log: the item field and the event-time field (``timestamp``: int64 seconds,
        or a text field read as epoch seconds or ISO 8601, as a CSV's), then the privacy id."""
        from .logs import log_columns

        if time_column in (self.column, self.privacy_id):
            raise InputUsageError("--time-column must name another field than the items' --column and --privacy-id")
        self._check_log_fields(self.column, time_column, self.privacy_id)
        fields = [self.column, time_column] + ([self.privacy_id] if self.privacy_id is not None else [])
        for cols in log_columns(self, fields, follow=follow):
            items, items_nonempty = _trim(cols[0])
            ids, ids_nonempty = (None, None) if len(cols) < 3 else _trim(cols[2])
            times = cols[1]
            if str(times.type) == "int64":
                secs = _values(times.fill_null(0)) if times.null_count else _values(times)
                usable = _both(_values(times.is_valid()) if times.null_count else None,
                               np.abs(secs) < _MAX_EPOCH_SECONDS)
                if usable is not None and usable.all():
                    usable = None
                texts = None
            else:
                texts, usable = _trim(times)
            both = _both(_both(items_nonempty, usable), ids_nonempty)
            if both is not None and not both.all():
                items = _take(items, both)
                ids = None if ids is None else _take(ids, both)
                if texts is None:
                    secs = secs[both]
                else:
                    texts = _take(texts, both)
            if not len(items):
                continue
            converted = [self.keys.convert_kept(items),
                         (secs * 1_000_000_000, None) if texts is None else _event_times(texts)]
            if ids is not None:
                converted.append(self.ids.convert_kept(ids))
            out = _aligned_columns(converted)
            if len(out[0]):
                out[1] = out[1].view("datetime64[ns]")
                yield tuple(out)
