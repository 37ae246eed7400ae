"""The input of every ``dpsketch`` command: text lines, CSV/TSV columns, fields of log lines
(``--log-format``, ``--regex``), Parquet columns and Arrow IPC columns (the stream format, e.g. from ``duckdb -arrow`` or a program writing
``pyarrow.ipc.new_stream``, and the file format, Feather v2), plain or gzip-compressed, from a file or
stdin, read in bounded blocks (text by Python's io, ISA-L or zlib and the C++ core, the other formats by
pyarrow's C++ readers). A :class:`Source` hands a command

- :meth:`Source.chunks`: key batches for ``update_many`` (``dpsketch top``), as Arrow string arrays,
  :class:`dpsketch._keys.Utf8Lines` (text) or int64 numpy arrays -- no Python object per item;
- :meth:`Source.pairs`: the key and the privacy id of each row, aligned (``dpsketch top
  --privacy-id``; CSV, Parquet and Arrow; the batches go to ``dpsketch.ContributionBounder`` as they come),
  and :func:`column` to join batches into one column for the library;
- :meth:`Source.values`: the numbers of ``dpsketch quantiles``, and :meth:`Source.number_pairs`: those
  numbers with the privacy id of each row, aligned (``dpsketch quantiles --privacy-id``);
- :meth:`Source.timed`: the keys of a CSV column with the event time of each row (and the privacy
  id), aligned, for ``dpsketch top --window`` (:mod:`dpsketch.windows`); with ``follow`` a pipe or
  file that keeps growing is read as lines arrive.

Memory is bounded: text is decompressed in blocks of ``TEXT_BLOCK_BYTES`` and split into lines
in C++ (``dpsketch._core.split_lines``, which also reads the integer keys under ``keys='int'``); CSV rows are parsed by ``pyarrow.csv.open_csv``
in blocks of ``max_line_bytes``. Parquet and Arrow are read one record batch at a time (an Arrow
batch is as large as its writer made it).

A bad line -- not valid UTF-8, longer than ``max_line_bytes`` or (CSV) with the wrong number of
fields -- is handled by ``on_bad_line``: 'error' (the default) stops the read; 'skip' drops it;
'replace' keeps it, ill-formed UTF-8 decoded to U+FFFD as ``bytes.decode(errors="replace")`` does
and a text line cut to its first ``max_line_bytes`` bytes (a CSV row with the wrong number of
fields or longer than ``max_line_bytes`` cannot be mended and is skipped). Each line is
kept, mended or dropped on its own bytes alone, so a neighbouring input still differs in at most
one item. Input without newlines (``/dev/zero``) stops or is dropped at ``max_line_bytes``
instead of growing without bound.

Key typing never looks at the items: a type read off the data would be printed with the release
and could be contradicted by a later item. ``keys='auto'``: text and CSV items are text, a Parquet
or Arrow column's type decides (integer column → int keys, except uint64, whose values may not fit int64 →
text). ``keys='int'`` parses a decimal integer with optional sign, surrounding space and leading
zeros (``+7``, ``007`` and ``7`` are one key) and **drops** an item that is not one or is outside
the signed 64-bit range: an error there would depend on the data. ``keys='str'`` keeps text.
Privacy ids (``ids=``) are typed by the same rule: what a unit keeps is decided by a hash of its
id's value, so the type of one unit's id must not depend on the other rows.

The readers live one per format in their own modules, mixed into :class:`Source`:
:mod:`dpsketch.io.text` (one item a line), :mod:`dpsketch.io.delimited` (CSV/TSV, and the CSV time
column of windows), :mod:`dpsketch.io.columnar` (Parquet and Arrow) and :mod:`dpsketch.io.logs` (log
lines: ``log_format``/``regex``, fields as columns); what they share -- the error types, byte
streams, gzip, stdin, ``--follow``, the progress position, the overlong-line filter -- is in
:mod:`dpsketch.io.streams`, and key, number and time typing in :mod:`dpsketch.io.values`. This
module keeps :class:`Source` (its options and what the commands read) and re-exports the names it
always had.

Every error of a command is a :class:`UsageError` (exit status 2) or a :class:`RunError` (exit
status 1); the reader raises :class:`InputUsageError` (the options do not fit the file, e.g. no
such column) and :class:`InputError` (the input cannot be read as asked). Their messages name no
item or count, and a line or row number only when ``name_positions`` is set (the commands set it
for a public stream length): a position is a count of the lines before it, and with a private
length nothing exact about the data is printed.
"""

from __future__ import annotations

import codecs
import logging
import os
import threading

import numpy as np

from .options import DEFAULT_MAX_LINE_BYTES, FORMATS, ON_BAD_LINE, RunError, UsageError
# The plumbing's and the typing's names stay importable from here, as they always were.
from .streams import (_BOM, _COLUMNAR, TEXT_BLOCK_BYTES, TIMED_BLOCK_BYTES, InputError,  # noqa: F401
                      InputUsageError, Plumbing, _aligned, _base_name, _both, _field_index, _gunzip, _LongRowFilter,
                      _pa, _read_ahead, _short_lines, _take, _trim, _values, check_path, detect_format, display,
                      first_line)
from .values import (KeyTyper, _MAX_EPOCH_SECONDS, _event_times, _lenient_ints, _numbers, _numbers_kept,  # noqa: F401
                     _plain_ints, column)
from .text import TextReader
from .delimited import DelimitedReader
from .columnar import ColumnarReader, _parquet_number_typing, _parquet_typing  # noqa: F401
from .logs import LogReader

_log = logging.getLogger(__name__)

__all__ = [
    "FORMATS", "UsageError", "RunError", "InputError", "InputUsageError", "Source", "column", "detect_format",
    "DEFAULT_MAX_LINE_BYTES", "ON_BAD_LINE",
]


class Source(TextReader, DelimitedReader, ColumnarReader, LogReader):
    """One input, read by one of ``chunks()``, ``pairs()`` or ``values()`` (see the module doc).

    ``total``/``unit``/``position()`` drive a progress bar (compressed bytes read for text and CSV
    files, rows for Parquet and Arrow; None for stdin); ``skipped`` counts blank lines / empty values / nulls.
    ``privacy_id``: the column of privacy ids that ``pairs()`` reads next to ``column``.
    ``on_bad_line`` ('error', 'skip', 'replace'): what a line or row that cannot be read as asked
    does (see the module doc); ``bad_lines`` counts those skipped or replaced. ``name_positions``:
    errors may name the line or row (only for a public stream length: a position is a count).
    """

    def __init__(self, path=None, *, format=None, column=None, privacy_id=None, no_header=False, delimiter=None,
                 encoding="utf-8", keys="auto", ids="auto", chunk_size=1_000_000,
                 max_line_bytes=DEFAULT_MAX_LINE_BYTES, on_bad_line="error", name_positions=False,
                 log_format=None, regex=None, strip_query=False):
        self.path = "-" if path is None else os.fspath(path)
        self.log = None  # the log reader's LogFormat (dpsketch.io.logs), with --log-format or --regex
        if log_format is not None or regex is not None:
            from .logs import LogFormat

            if format not in (None, "text"):
                raise InputUsageError(f"--log-format and --regex read lines of text; drop --format {format}")
            self.log = LogFormat(log_format, regex, strip_query)
            format = "log"
        elif strip_query:
            raise InputUsageError("--strip-query applies to the path field of --log-format common and combined")
        self.format = format or detect_format(self.path)
        if format is None and self.path == "-" and (column is not None or privacy_id is not None):
            # a named column means a table: stdin, whose format no name tells, is read as CSV
            self.format = "csv"
        if self.format not in FORMATS and self.log is None:
            raise InputUsageError(f"format must be one of {', '.join(FORMATS)}, got {self.format!r}")
        self.column = column
        self.privacy_id = privacy_id
        self.no_header = no_header
        self.chunk_size = int(chunk_size)
        self.max_line_bytes = int(max_line_bytes)
        if self.chunk_size < 1 or self.max_line_bytes < 1:
            raise InputUsageError("chunk size and maximum line length must be >= 1")
        try:
            enc = codecs.lookup(encoding).name
        except LookupError:
            raise InputUsageError(f"unknown encoding {encoding!r}") from None
        self.utf8 = enc in ("utf-8", "utf-8-sig")
        self.encoding = enc
        self.keys = KeyTyper(keys, self.format)
        self.ids = KeyTyper(ids, self.format, "--int-ids for integer ids")
        if on_bad_line not in ON_BAD_LINE:
            raise InputUsageError(f"on_bad_line must be one of {', '.join(ON_BAD_LINE)}, got {on_bad_line!r}")
        self.on_bad_line = on_bad_line
        self.name_positions = bool(name_positions)
        self.bad_lines = 0
        self._counting = threading.Lock()
        self._cancel = threading.Event()
        self.skipped = 0
        self.skipped_what = {"text": "blank lines", "csv": "empty values",
                             "log": "blank lines and empty fields"}.get(self.format, "null values")
        self.total = None
        self.unit = "B"
        self._pos = lambda: None
        if self.format == "text" and column is not None:
            raise InputUsageError("--column is only for CSV, Parquet and Arrow input; pass --format csv, parquet or arrow")
        if self.format == "text" and privacy_id is not None:
            raise InputUsageError("--privacy-id needs CSV, Parquet or Arrow input (a column of privacy ids next to the "
                                  "item column); text input has one item per line")
        if self.format != "csv" and (delimiter is not None or no_header):
            raise InputUsageError("--delimiter and --no-header are only for CSV input")
        if self.format in _COLUMNAR and not self.utf8:
            raise InputUsageError("--encoding is only for text and CSV input (Parquet and Arrow strings are UTF-8)")
        if delimiter is not None and len(delimiter) != 1:
            if delimiter in ("\\t", "tab"):
                delimiter = "\t"
            else:
                raise InputUsageError(f"--delimiter must be one character, got {delimiter!r}")
        if delimiter is None:
            delimiter = "\t" if _base_name(self.path).endswith(".tsv") else ","
        self.delimiter = delimiter
        self.col_index = _field_index("--column", column) if no_header and column is not None else None
        self.id_index = _field_index("--privacy-id", privacy_id) if no_header and privacy_id is not None else None
        if privacy_id is not None and (privacy_id == column or (self.id_index is not None
                                                                 and self.id_index == (self.col_index or 0))):
            raise InputUsageError("--privacy-id must name another column than the items' --column")
        if self.log is not None:
            self._check_log_fields(column, privacy_id)
        check_path(self.path)
        # options only: the log of a run never carries a count or value of the data
        _log.info("input %s: %s%s%s; keys %s; --on-bad-line %s", self.where(),
                  self.log.describe() if self.log is not None else f"{self.format} input",
                  f", item column {self.column!r}" if self.column is not None else "",
                  f", privacy id column {self.privacy_id!r}" if self.privacy_id is not None else "",
                  self.keys.describe(), self.on_bad_line)

    def chunks(self, table_hashes: bool = False):
        """Key batches (pyarrow large_string arrays, dpsketch._keys.Utf8Lines for text input, or
        int64 numpy arrays) of at most chunk_size items; empty items are skipped. Read one batch
        ahead in a thread. ``table_hashes``: text lines carry their slot-table hashes, computed in
        the split thread (for a counter summary, whose update then does only the table work)."""
        self._cancel = threading.Event()  # this read's own: set when its consumer stops
        if self.format in _COLUMNAR:
            gen = self._parquet_chunks()
        elif self.format == "log" and self.keys.chosen == "str" and not self.log.is_int(self.column):
            gen = self._log_key_chunks()
        else:
            gen = self._text_chunks(table_hashes) if self.format == "text" else self._keyed(self._items())
        yield from self._guard(_read_ahead(gen, stop=self._cancel))

    def pairs(self, in_reader=None):
        """(keys, privacy ids) batches aligned row by row (CSV, Parquet and Arrow, ``privacy_id`` set). A
        row is dropped when its item or its id is empty or null, or cannot be typed (``keys`` /
        ``ids`` 'int', as for chunks()). Read one batch ahead in a thread; ``in_reader(keys, ids)``,
        when given, runs in that thread on each batch and what it returns is yielded instead."""
        if self.privacy_id is None:  # pragma: no cover - the commands only call it with an id column
            raise InputUsageError("pairs() needs a privacy id column")
        self._cancel = threading.Event()  # this read's own: set when its consumer stops
        gen = self._parquet_pairs() if self.format in _COLUMNAR else self._csv_pairs()
        if in_reader is not None:
            gen = (in_reader(keys, ids) for keys, ids in gen)
        yield from self._guard(_read_ahead(gen, stop=self._cancel))

    def values(self, *, integer: bool, bits: int):
        """The numbers of ``dpsketch quantiles``, in batches: float64 arrays (``integer=False``), or
        uint64 arrays clamped into [0, 2^bits) (``integer=True``). Text and CSV items are parsed one
        by one (Python's float or int syntax) and an item that is not a number (or NaN) is dropped,
        so a neighbouring input changes at most one value; a Parquet or Arrow column must be numeric (in
        integer mode: of an integer type, decided by the schema) and its nulls and NaNs are dropped."""
        if self.format in _COLUMNAR:
            gen = self._parquet_numbers(integer, bits)
        elif self.format == "log" and self.log.is_int(self.column):
            gen = self._log_numbers(integer, bits, with_ids=False)
        else:
            gen = (_numbers(part.to_pylist(), integer, bits) for arr in self._items() for part in self._slices(arr))
        for batch in self._guard(gen):
            if len(batch):
                yield batch

    def number_pairs(self, *, integer: bool, bits: int):
        """(values, privacy ids) batches aligned row by row (CSV, Parquet and Arrow, ``privacy_id`` set):
        the numbers of :meth:`values`, read and dropped by the same rules, next to the ids of
        :meth:`pairs`. A row is dropped when its value is not a number (or NaN, empty, null) or its
        id is empty, null or cannot be typed (``ids='int'``); nothing counts the dropped rows. Read
        one batch ahead in a thread."""
        if self.privacy_id is None:  # pragma: no cover - the commands only call it with an id column
            raise InputUsageError("number_pairs() needs a privacy id column")
        self._cancel = threading.Event()  # this read's own: set when its consumer stops
        if self.format in _COLUMNAR:
            gen = self._parquet_number_pairs(integer, bits)
        elif self.format == "log" and self.log.is_int(self.column):
            gen = self._log_numbers(integer, bits, with_ids=True)
        else:
            gen = self._csv_number_pairs(integer, bits)
        yield from self._guard(_read_ahead(gen, stop=self._cancel))

    def timed(self, time_column, *, follow: bool = False):
        """(keys, times) batches aligned row by row from a CSV file or stdin: the item column and
        the event-time column ``time_column``, times as numpy datetime64[ns] (UTC); with
        ``privacy_id`` set, (keys, times, privacy ids), a row also dropped when its id is empty or
        cannot be typed (``ids``, as for pairs()).
        A time is epoch seconds (a decimal number) or ISO 8601 text (no zone: UTC), each value
        read on its own; a row is dropped when its item is empty or cannot be typed, or its time
        is empty or neither form. A bad row follows ``on_bad_line`` as for :meth:`pairs` (skip and
        replace decide it on its own bytes; replace mends ill-formed UTF-8 and skips a malformed or
        overlong row). ``follow``: complete lines are handed over as soon as they are
        read (a pipe that keeps growing yields batches before its end; a file is polled for new
        lines after its end, until the consumer stops). Read one batch ahead in a thread unless
        ``follow`` (the windowed release reads in its own thread then)."""
        if self.format == "log":
            gen = self._log_timed(time_column, follow)
            yield from self._guard(gen if follow else _read_ahead(gen))
            return
        if self.format != "csv":
            raise InputUsageError("--time-column needs CSV input (a column of items and a column of event times)")
        gen = self._csv_timed(time_column, follow)
        yield from self._guard(gen if follow else _read_ahead(gen))

    def _keyed(self, items):
        """CSV items (large_string arrays) as key batches of at most chunk_size items."""
        for arr in items:
            for part in self._slices(arr):
                keys = self.keys.convert(part)
                if len(keys):
                    yield keys

    def _items(self):
        """The stripped, non-empty text items of a text file (dpsketch._keys.Utf8Lines) or a CSV
        column (large_string arrays)."""
        if self.format == "text":
            yield from self._text_lines()
            return
        for batch in self._table_batches():
            arr, nonempty = _trim(batch.column(0))
            if nonempty is not None:
                self.skipped += len(arr) - int(np.count_nonzero(nonempty))
                arr = _take(arr, nonempty)
            if len(arr):
                yield arr

    def _table_batches(self):
        """The item column (then the privacy id column) as large_string record batches: a CSV's,
        or a log's fields (dpsketch.io.logs; a missing field is an empty string, an int64 field
        its decimal text)."""
        if self.format != "log":
            yield from self._csv_batches()
            return
        pa, pc = _pa()
        from .logs import log_columns

        fields = [self.column] + ([self.privacy_id] if self.privacy_id is not None else [])
        names = [f"f{i}" for i in range(len(fields))]
        for cols in log_columns(self, fields):
            cols = [pc.fill_null(pc.cast(c, pa.large_string()), "") if c.type == pa.int64() else c for c in cols]
            yield pa.RecordBatch.from_arrays(cols, names=names)
