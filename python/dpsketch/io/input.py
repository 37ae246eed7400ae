"""The input of every ``dpsketch`` command: text lines, CSV/TSV columns, Parquet columns and Arrow
IPC columns (the stream format, e.g. from ``duckdb -arrow`` or a program writing
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

Every error of a command is a :class:`UsageError` (exit status 2) or a :class:`RunError` (exit
status 1); the reader raises :class:`InputUsageError` (the options do not fit the file, e.g. no
such column) and :class:`InputError` (the input cannot be read as asked). Their messages name no
item or count, and a line or row number only when ``name_positions`` is set (the commands set it
for a public stream length): a position is a count of the lines before it, and with a private
length nothing exact about the data is printed.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import re
import stat
import sys
import threading

import numpy as np

from .options import DEFAULT_MAX_LINE_BYTES, FORMATS, ON_BAD_LINE, RunError, UsageError
from ..errors import ParameterError

__all__ = [
    "FORMATS", "UsageError", "RunError", "InputError", "InputUsageError", "Source", "column", "detect_format",
    "DEFAULT_MAX_LINE_BYTES", "ON_BAD_LINE",
]

_COLUMNAR = ("parquet", "arrow")  # typed columns: the schema decides the key type
_ON_BAD_CODE = {"error": 0, "skip": 1, "replace": 2}  # dpsketch._core.split_lines(on_bad=)
_LENIENT_INT = r"^[+-]?[0-9]+$"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_BOM = b"\xef\xbb\xbf"
TEXT_BLOCK_BYTES = 1 << 20  # decompressed bytes per read for text input
TIMED_BLOCK_BYTES = 4 << 20  # bytes per parse of a CSV with an event-time column
# Bytes at a line's edge that may need trimming: ASCII whitespace, or the lead/continuation byte of
# a possibly-whitespace non-ASCII character (str.strip() semantics; utf8_trim_whitespace does them).
_EDGE_WS = np.zeros(256, dtype=bool)
_EDGE_WS[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True
_EDGE_WS[0x80:] = True
_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[ord("0") : ord("9") + 1] = True


class InputUsageError(UsageError):
    """The options do not fit the input, e.g. a column that does not exist."""


class InputError(RunError):
    """The input cannot be read as asked."""


def _pa():
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:  # pragma: no cover - pyarrow is a dependency of the CLI
        raise InputError("install pyarrow to read input files (pip install pyarrow)") from None
    return pa, pc


def detect_format(path: str | None) -> str:
    """'csv' for .csv/.tsv, 'parquet' for .parquet/.pq/.parq, 'arrow' for .arrow/.arrows/.feather/.ipc, else
    'text' (a .gz suffix is looked through)."""
    if path is None or path == "-":
        return "text"
    name = _base_name(path)
    if name.endswith((".csv", ".tsv")):
        return "csv"
    if name.endswith((".parquet", ".pq", ".parq")):
        return "parquet"
    if name.endswith((".arrow", ".arrows", ".feather", ".ipc")):
        return "arrow"
    return "text"


def _base_name(path):
    name = os.path.basename(path or "").lower()
    return name[:-3] if name.endswith(".gz") else name


def display(path) -> str:
    return "stdin" if path in (None, "-") else repr(str(path))


def first_line(exc) -> str:
    s = str(exc).strip().splitlines()
    return s[0] if s else type(exc).__name__


def check_path(path) -> None:
    """Fail early (before any option is acted on) on a missing file or a directory."""
    if path in (None, "-"):
        return
    if not os.path.exists(path):
        raise InputError(f"cannot read {path!r}: no such file")
    if os.path.isdir(path):
        raise InputError(f"cannot read {path!r}: it is a directory")


# ---------------------------------------------------------------------------------------------
# key typing
# ---------------------------------------------------------------------------------------------


class KeyTyper:
    """Turns a chunk of (trimmed, non-empty) large_string items into keys; see the module doc."""

    def __init__(self, mode: str, format: str = "text", int_option: str = "--int-keys for integer keys"):
        if mode not in ("auto", "int", "str"):
            raise ParameterError(f"keys must be 'auto', 'int' or 'str', got {mode!r}")
        self.mode = mode
        self.chosen: str | None
        if mode != "auto":
            self.chosen, self.how = mode, "forced"
        elif format in _COLUMNAR:
            kind = "Parquet" if format == "parquet" else "Arrow"
            self.chosen, self.how = None, f"from the {kind} column type"  # set when the input is opened
        else:
            self.chosen, self.how = "str", f"text input; {int_option}"

    def describe(self) -> str:
        return "none" if self.chosen is None else f"{self.chosen} ({self.how})"

    def convert(self, arr):
        """``arr``: pyarrow large_string array -> itself (text keys) or an int64 numpy array."""
        return self.convert_kept(arr)[0]

    def convert_kept(self, arr):
        """(keys, kept): ``kept`` is None when every item became a key, else a numpy bool mask of
        the items that did (the others were dropped)."""
        return (arr, None) if self.chosen == "str" else _lenient_ints(arr)


def _lenient_ints(arr):
    """(values, kept): the items of ``arr`` that are decimal integers in the int64 range (optional
    sign, leading zeros) as an int64 numpy array, and None or the mask of those items (the other
    items are dropped)."""
    pa, pc = _pa()
    plain = _plain_ints(arr)
    if plain is not None:
        return plain, None
    ok = pc.match_substring_regex(arr, _LENIENT_INT)
    # Only items of 19 or more characters can be outside int64: check those few exactly.
    long_idx = np.flatnonzero(pc.and_(ok, pc.greater_equal(pc.utf8_length(arr), 19)).to_numpy(zero_copy_only=False))
    if long_idx.size:
        mask = ok.to_numpy(zero_copy_only=False).copy()
        for i in long_idx.tolist():
            mask[i] = _fits_int64(arr[i].as_py())
        ok = pa.array(mask)
    kept = None
    if not pc.all(ok).as_py():
        kept = ok.to_numpy(zero_copy_only=False)
        arr = arr.filter(ok)
    if not len(arr):
        return np.zeros(0, dtype=np.int64), kept
    return pc.cast(pc.replace_substring_regex(arr, r"^\+", ""), pa.int64()).to_numpy(), kept


def _plain_ints(arr):
    """The int64 values of ``arr`` when every item is -?[0-9]+ within int64 (the common case),
    else None. The bytes are checked first (digits, and '-' only where an item starts), so Arrow's
    cast, which also reads forms _LENIENT_INT does not ('0x10'), only sees that language; it
    refuses a lone '-', an empty item and a value outside int64, which go to the exact path."""
    pa, pc = _pa()
    _validity, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    if data_buf is None or not len(arr):
        return None
    data = np.frombuffer(data_buf, dtype=np.uint8)[offsets[0] : offsets[-1]]
    first = data[: offsets[1] - offsets[0]]
    if first.size and first[0] == 45:  # '-'
        first = first[1:]
    if not first.size or not _DIGIT[first].all():  # the first item already is not a plain integer
        return None
    from .. import _core

    fast = _core.plain_ints(offsets, np.frombuffer(data_buf, dtype=np.uint8))  # items of <= 18 digits, in C++
    if fast is not None:
        return fast
    if not _DIGIT[data].all():
        minus = np.flatnonzero(data == 45)  # '-'
        starts = np.zeros(len(data) + 1, dtype=bool)
        starts[offsets[:-1] - offsets[0]] = True
        if np.count_nonzero(_DIGIT[data]) + len(minus) != len(data) or not starts[minus].all():
            return None
    try:
        return pc.cast(arr, pa.int64()).to_numpy()
    except pa.ArrowInvalid:
        return None


def _inflater():
    """The inflate module and its error class: ISA-L's (``isal``, about twice zlib's speed; same
    interface, same bytes out) when installed, else the standard library's zlib."""
    try:
        from isal import isal_zlib

        return isal_zlib, isal_zlib.error
    except ImportError:  # a platform without isal wheels
        import zlib

        return zlib, zlib.error


def _gunzip(raw, block, inflater=None):
    """The inflated bytes of the gzip stream ``raw``, at most ``block`` bytes at a time; every
    member in turn, as gzip -d reads them. EOFError when the stream ends inside a member; OSError
    for corrupt data (bytes after a member that are not another member included). ``inflater``:
    (module, error class), by default :func:`_inflater`'s."""
    zlib, zlib_error = inflater or _inflater()

    member = zlib.decompressobj(31)  # wbits 16 + 15: a gzip header and trailer
    pending, inside = b"", True  # compressed bytes not yet given to zlib; inside a member
    try:
        while True:
            if not pending:
                pending = raw.read(block // 4)
                if not pending:
                    if inside:
                        rest = member.flush()  # what zlib holds back when the output was capped
                        if rest:
                            yield rest
                        if not member.eof:
                            raise EOFError("compressed stream ended early")
                    return
            if not inside:  # bytes after a member: another member, or corrupt (zlib and ISA-L alike)
                while len(pending) < 2 and (more := raw.read(block // 4)):
                    pending += more
                if pending[:2] != b"\x1f\x8b":
                    raise OSError("inflate failed: the bytes after a gzip member are not another gzip member")
                member, inside = zlib.decompressobj(31), True
            out = member.decompress(pending, block)
            if member.eof:
                pending, inside = member.unused_data, False
            else:
                pending = member.unconsumed_tail
            if out:
                yield out
    except zlib_error as exc:
        raise OSError(f"inflate failed: {exc}") from None


def _append(buf, lo, hi, chunk):
    """``buf[lo:hi]`` followed by ``chunk``, in ``buf`` or a buffer twice its size: (buf, lo, hi).
    The live bytes move to the front only when the consumed space before them is as large, so
    each byte is moved O(1) times on average."""
    live = hi - lo
    if hi + chunk.size > buf.size:
        if lo >= live and live + chunk.size <= buf.size:
            buf[:live] = buf[lo:hi]
        else:
            bigger = np.empty(max(2 * buf.size, live + chunk.size), dtype=np.uint8)
            bigger[:live] = buf[lo:hi]
            buf = bigger
        lo, hi = 0, live
    buf[hi : hi + chunk.size] = chunk
    return buf, lo, hi + chunk.size


def _take(values, mask):
    """The items of an Arrow array or numpy array where the numpy bool ``mask`` is True."""
    if isinstance(values, np.ndarray):
        return values[mask]
    pa, _ = _pa()
    return values.filter(pa.array(mask))


def _both(a, b):
    """The rows two masks (None: every row) both keep."""
    return a if b is None else b if a is None else a & b


def _aligned(a, a_kept, b, b_kept):
    """Two columns converted apart (each dropping its own unreadable items, ``*_kept`` as returned
    by KeyTyper.convert_kept) reduced to the rows both kept."""
    if a_kept is None and b_kept is None:
        return a, b
    both = _both(a_kept, b_kept)
    return (_take(a, both if a_kept is None else both[a_kept]),
            _take(b, both if b_kept is None else both[b_kept]))


def _aligned_columns(converted) -> list:
    """Columns converted apart, each ``(values, kept)`` as KeyTyper.convert_kept returns it,
    reduced to the rows every one of them kept."""
    every = None
    for _, kept in converted:
        every = _both(every, kept)
    if every is None:
        return [values for values, _ in converted]
    return [_take(values, every if kept is None else every[kept]) for values, kept in converted]


def column(batches, typer) -> np.ndarray:
    """One column from the batches of :meth:`Source.pairs`, as the library's privacy-unit functions
    take it: an int64 array for int keys or ids, else an array of str."""
    if typer.chosen == "int":
        return np.concatenate(batches) if batches else np.zeros(0, dtype=np.int64)
    pa, _ = _pa()
    if not batches:
        return np.zeros(0, dtype=str)
    return pa.chunked_array(batches, type=pa.large_string()).to_numpy()


def _fits_int64(text: str) -> bool:
    """``text`` matches _LENIENT_INT; is its value in int64? (digits counted first: int() of a
    very long string is slow, and refused above sys.get_int_max_str_digits())."""
    digits = text.lstrip("+-").lstrip("0")
    return len(digits) <= 19 and _INT64_MIN <= int(text) <= _INT64_MAX


def _safe_position(f, size):
    """Bytes of `f` read so far, for a progress bar that may ask after the reader closed it."""
    def pos():
        try:
            return f.tell()
        except (ValueError, OSError):
            return size
    return pos


def _read_ahead(gen, depth: int = 2, stop=None):
    """Run the generator `gen` in a thread, `depth` items ahead of the consumer. Reading,
    decompressing and splitting release the GIL, and so does the consumer's update_many, so
    the two overlap on two cores; memory grows by `depth` batches. Exceptions reach the consumer
    in order; a consumer that stops early (an error, Ctrl-C) sets `stop`, which the reader also
    checks between blocks (a long line yields nothing for many blocks), and waits for it to end."""
    from .._prefetch import Prefetch

    ahead = Prefetch(gen, depth=depth, stop=stop)
    try:
        while (item := ahead.get()) is not Prefetch.DONE:
            yield item
    finally:
        ahead.close()


# ---------------------------------------------------------------------------------------------
# byte streams
# ---------------------------------------------------------------------------------------------


class _Chain(io.RawIOBase):
    """``head`` bytes, then the rest of a pyarrow stream (CSV: the header line was read by hand)."""

    def __init__(self, head: bytes, rest):
        self._head = memoryview(head)
        self._rest = rest

    def readable(self):
        return True

    def read(self, n=-1):
        if self._head.nbytes:
            n = self._head.nbytes if n is None or n < 0 else min(n, self._head.nbytes)
            out = bytes(self._head[:n])
            self._head = self._head[n:]
            return out
        return self._rest.read() if n is None or n < 0 else self._rest.read(n)

    def readinto(self, b):
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)


class _LongRowFilter(io.RawIOBase):
    """The bytes of ``raw`` without its lines longer than ``limit`` bytes (CSV under --on-bad-line
    skip or replace: Arrow's parser cannot step over a row longer than its block, and a cut row
    is not a row). Lines end at \\n, \\r or \\r\\n, as for the parser (CSV values hold no
    newline); ``dropped()`` is called once per line dropped. Kept bytes pass through unchanged;
    at most ``limit`` bytes of a partial line are held back."""

    def __init__(self, raw, limit, dropped):
        self._raw = raw
        self._limit = limit
        self._dropped = dropped
        self._partial = b""  # the current line's bytes so far, when it is kept
        self._dropping = False  # the current line is too long: its bytes are dropped up to its end
        self._out = memoryview(b"")
        self._eof = False

    def readable(self):
        return True

    def read(self, n=-1):
        if n is None or n < 0:  # everything to the end
            return b"".join(iter(lambda: self.read(TEXT_BLOCK_BYTES), b""))
        while not self._out.nbytes and not self._eof:
            block = self._raw.read(TEXT_BLOCK_BYTES)
            self._out = memoryview(self._filter(block))
        n = min(n, self._out.nbytes)
        out = bytes(self._out[:n])
        self._out = self._out[n:]
        return out

    def readinto(self, b):
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def _filter(self, block):
        if not block:
            self._eof = True
            out, self._partial = (b"" if self._dropping else self._partial), b""
            return out
        arr = np.frombuffer(block, dtype=np.uint8)
        ends = np.flatnonzero((arr == 10) | (arr == 13))
        if not ends.size:  # the current line goes on
            if not self._dropping and len(self._partial) + len(block) > self._limit:
                self._dropped()
                self._dropping, self._partial = True, b""
            elif not self._dropping:
                self._partial += block
            return b""
        # lines of this block: [starts[i], ends[i]] with their line end; the first continues the partial one
        starts = np.concatenate(([0], ends[:-1] + 1))
        lengths = ends - starts
        lengths[0] += len(self._partial)
        too_long = lengths > self._limit
        if self._dropping:  # the first line is the tail of a dropped one
            too_long[0] = False
        pieces = []
        keep_from = 0  # start of the kept run of bytes in `block`
        if self._dropping:
            keep_from = int(ends[0]) + 1
            self._dropping = False
        else:
            pieces.append(self._partial)
        for i in np.flatnonzero(too_long).tolist():
            self._dropped()
            if i == 0:
                pieces = []  # the partial line goes too
            else:
                pieces.append(block[keep_from : int(starts[i])])
            keep_from = int(ends[i]) + 1
        pieces.append(block[keep_from : int(ends[-1]) + 1])
        rest = block[int(ends[-1]) + 1 :]
        if len(rest) > self._limit:
            self._dropped()
            self._dropping, self._partial = True, b""
        else:
            self._partial = rest
        return b"".join(pieces)


def _short_lines(first, blocks, limit, dropped):
    """``first`` and then ``blocks`` (bytes), without their lines longer than ``limit`` bytes
    (:class:`_LongRowFilter` fed block by block, so a growing input still comes through as it
    arrives); ``dropped()`` once per line dropped."""
    keep = _LongRowFilter(None, limit, dropped)
    if first and (out := keep._filter(first)):
        yield out
    for data in blocks:
        if data and (out := keep._filter(data)):
            yield out
    if out := keep._filter(b""):  # the end: the last line, when it is short enough
        yield out


class Source:
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

    def _check_log_fields(self, *fields, time_column=None):
        """Usage errors before reading: no --column, or a field the log format does not have."""
        if self.column is None:
            known = self.log.fields()
            listed = f"; the fields of {self.log.name} are {', '.join(known)}" if known else ""
            raise InputUsageError(f"name the field to read with --column FIELD{listed}")
        wanted = [f for f in (*fields, time_column) if f is not None]
        self.log.parser(wanted, max_line_bytes=self.max_line_bytes)  # refuses an unknown field or group

    def position(self):
        return self._pos()

    def where(self) -> str:
        return display(self.path)

    # -- raw bytes ----------------------------------------------------------------------------
    def _open_bytes(self):
        """(decompressed pyarrow stream, raw file to close or None). gzip is detected by its magic."""
        pa, _ = _pa()
        if self.path == "-":
            raw = sys.stdin.buffer
            if hasattr(raw, "peek"):
                magic = raw.peek(2)[:2]
            elif hasattr(raw, "seekable") and raw.seekable():
                pos = raw.tell()
                magic = raw.read(2)
                raw.seek(pos)
            else:  # pragma: no cover - exotic stdin replacements
                raw = io.BufferedReader(raw)
                magic = raw.peek(2)[:2]
            src, owned = pa.PythonFile(raw, mode="r"), None
        else:
            try:
                src = pa.OSFile(self.path, "r")
            except OSError as exc:
                raise InputError(f"cannot read {self.where()}: {first_line(exc)}") from None
            owned = src
            try:
                st = os.stat(self.path)
                if stat.S_ISREG(st.st_mode):
                    self.total, self.unit = st.st_size, "B"
                    self._pos = _safe_position(src, st.st_size)
                magic = src.read(2)
                src.seek(0)
            except OSError:  # a pipe or device: no size, no seek
                magic = b""
        stream = pa.CompressedInputStream(src, "gzip") if magic == b"\x1f\x8b" else src
        if not self.utf8:
            stream = pa.transcoding_input_stream(stream, self.encoding, "utf-8")
        return stream, owned

    # -- what the commands read ---------------------------------------------------------------
    def chunks(self, table_hashes: bool = False):
        """Key batches (pyarrow large_string arrays, dpsketch._keys.Utf8Lines for text input, or
        int64 numpy arrays) of at most chunk_size items; empty items are skipped. Read one batch
        ahead in a thread. ``table_hashes``: text lines carry their slot-table hashes, computed in
        the split thread (for a counter summary, whose update then does only the table work)."""
        self._cancel = threading.Event()  # this read's own: set when its consumer stops
        if self.format in _COLUMNAR:
            gen = self._parquet_chunks()
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

    def _guard(self, gen):
        """``gen``, with the errors of reading and decoding turned into one-line InputErrors."""
        try:
            yield from gen
        except UnicodeDecodeError:  # a transcoded --encoding: --on-bad-line covers UTF-8 only
            raise InputError(f"{self.where()} is not valid {self.encoding} text; pass the right --encoding") from None
        except EOFError:
            raise InputError(f"{self.where()} is truncated (compressed stream ended early)") from None
        except OSError as exc:
            raise InputError(self._io_message(exc)) from None

    def _io_message(self, exc) -> str:
        msg = first_line(exc)
        low = msg.lower()
        if "truncated" in low:
            return f"{self.where()} is truncated (compressed stream ended early)"
        if "zlib" in low or "gzip" in low or "inflate" in low:
            return f"{self.where()} is not a valid gzip file (corrupt compressed data: {msg})"
        return f"cannot read {self.where()}: {getattr(exc, 'strerror', None) or msg}"

    def _slices(self, arr):
        for start in range(0, len(arr), self.chunk_size):
            yield arr.slice(start, self.chunk_size)

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

    def _csv_trimmed_pairs(self):
        """Each CSV batch's item and privacy id columns, trimmed, without the rows where either is empty."""
        for batch in self._table_batches():
            items, items_nonempty = _trim(batch.column(0))
            ids, ids_nonempty = _trim(batch.column(1))
            if items_nonempty is not None or ids_nonempty is not None:
                both = _both(items_nonempty, ids_nonempty)
                items, ids = _take(items, both), _take(ids, both)
            yield items, ids

    def _csv_pairs(self):
        for keys, ids in self._csv_trimmed_pairs():
            if len(keys):
                keys, ids = _aligned(*self.keys.convert_kept(keys), *self.ids.convert_kept(ids))
            if len(keys):
                yield keys, ids

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
            if not with_ids:
                if len(v):
                    yield v
                continue
            for start in range(0, len(v), self.chunk_size):
                part, ids_part = _aligned(v[start : start + self.chunk_size], None,
                                          *self.ids.convert_kept(ids.slice(start, self.chunk_size)))
                if len(part):
                    yield part, ids_part

    def _csv_number_pairs(self, integer, bits):
        for texts, ids in self._csv_trimmed_pairs():
            for start in range(0, len(texts), self.chunk_size):
                part = texts.slice(start, self.chunk_size)
                values, ids_part = _aligned(*_numbers_kept(part.to_pylist(), integer, bits),
                                            *self.ids.convert_kept(ids.slice(start, self.chunk_size)))
                if len(values):
                    yield values, ids_part

    # -- text ---------------------------------------------------------------------------------
    def _text_blocks(self, block_bytes=None):
        """The decompressed bytes of the text input, in blocks of at most ``block_bytes`` (default
        TEXT_BLOCK_BYTES): read with
        Python's io and inflated with ISA-L or zlib (_inflater; both release the GIL; gzip is detected by its magic and
        every member is read, as gzip -d does), or through pyarrow's transcoding stream for an
        --encoding other than UTF-8."""
        size = block_bytes or TEXT_BLOCK_BYTES
        if not self.utf8:
            stream, owned = self._open_bytes()
            try:
                while chunk := stream.read(size):
                    yield chunk
            finally:
                if owned is not None:
                    owned.close()
            return
        if self.path == "-":
            # A reader of its own on stdin's descriptor: the thread reading it is not waited for
            # when a run stops early, and one blocked inside sys.stdin's own reader at exit
            # would abort the interpreter (it holds that reader's lock).
            try:
                raw = owned = open(sys.stdin.buffer.fileno(), "rb", closefd=False)
            except (AttributeError, OSError, ValueError):  # a replaced stdin without a descriptor
                raw, owned = sys.stdin.buffer, None
                if not hasattr(raw, "peek"):  # pragma: no cover - exotic stdin replacements
                    raw = io.BufferedReader(raw)
        else:
            try:
                raw = owned = open(self.path, "rb")
            except OSError as exc:
                raise InputError(f"cannot read {self.where()}: {exc.strerror or first_line(exc)}") from None
            st = os.fstat(raw.fileno())
            if stat.S_ISREG(st.st_mode):
                self.total, self.unit = st.st_size, "B"
                self._pos = _safe_position(raw, st.st_size)
        try:
            if raw.peek(2)[:2] == b"\x1f\x8b":
                yield from _gunzip(raw, size)
            else:
                while chunk := raw.read(size):
                    yield chunk
        finally:
            if owned is not None:
                owned.close()

    def _text_chunks(self, table_hashes=False):
        """Key batches of text input, at most chunk_size keys each: the lines as
        dpsketch._keys.Utf8Lines, or with keys='int' their int64 keys (read in the split)."""
        for batch in self._text_lines(int_keys=self.keys.chosen == "int", table_hashes=table_hashes):
            for start in range(0, len(batch), self.chunk_size):
                if isinstance(batch, np.ndarray):
                    yield batch[start : start + self.chunk_size]
                else:
                    yield batch.slice(start, self.chunk_size)

    def _text_lines(self, int_keys=False, table_hashes=False):
        """Lines, split in C++ (dpsketch._core.split_lines) from decompressed blocks
        (:meth:`_text_blocks`): line ends \\n, \\r\\n or \\r; str.strip() whitespace; blank lines
        skipped; UTF-8 and the line length checked, a bad line handled by ``on_bad_line``; as
        dpsketch._keys.Utf8Lines batches, or with ``int_keys`` as int64 arrays of the lines that
        are integer keys (the rule of the module doc, applied in the same C++ pass; the other
        lines are dropped); ``table_hashes``: the Utf8Lines carry their slot-table hashes. The unconsumed bytes (one partial line) live in a buffer that doubles
        when full, and split_lines resumes its search where the last call stopped, so a line of L
        bytes costs O(L) however many blocks it spans; each call handles one block, so the loop
        sees a cancel (Ctrl-C) between blocks. Memory: a block plus one partial line (at most
        max_line_bytes; under skip/replace the rest of an overlong line is dropped as it comes)."""
        from .. import _core
        from ..sketches._keys import Utf8Lines
        from .._prefetch import Prefetch

        # Reading and inflating run in a thread of their own, a block or two ahead of the split:
        # inflating gzip costs about as much as splitting, so one thread doing both would be the
        # pipeline's bottleneck (the summary's update is the third stage). It has its own stop
        # event (stopping it must not cancel this read) and is not waited for when the split
        # stops early, so an error is not held up by a read from a pipe that delivers nothing.
        blocks = Prefetch(self._text_blocks(), name="dpsketch-inflate")
        on_bad = _ON_BAD_CODE[self.on_bad_line]
        buf = np.empty(2 * TEXT_BLOCK_BYTES, dtype=np.uint8)
        lo = hi = 0  # buf[lo:hi]: bytes read and not yet consumed
        scanned, discarding, lines_before = 0, False, 0
        bom_checked = not self.utf8
        try:
            while not self._cancel.is_set():
                chunk = blocks.get()
                eof = chunk is Prefetch.DONE
                if eof:
                    chunk = b""
                if chunk:
                    buf, lo, hi = _append(buf, lo, hi, np.frombuffer(chunk, dtype=np.uint8))
                if not bom_checked:  # only at the start of the input, before any line is split
                    if hi - lo < 3 and not eof:
                        continue
                    bom_checked = True
                    if buf[lo : lo + 3].tobytes() == _BOM:
                        lo += 3
                r = _core.split_lines(buf[lo:hi], eof, self.max_line_bytes, on_bad, scanned, discarding, int_keys,
                                      table_hashes)
                if r["error"]:
                    line = lines_before + int(r["error_line"]) + 1
                    if r["error"] == 1:
                        raise InputError(
                            f"{self._at('line', line)} is not valid {self.encoding} text; "
                            f"--on-bad-line skip or replace goes on (or pass the right --encoding)")
                    raise self._too_long(line)
                self.skipped += len(r["blank"])
                self.bad_lines += int(r["bad"])
                lines_before += int(r["lines"])
                if int_keys:
                    if len(r["ints"]):
                        yield r["ints"]
                elif len(r["offsets"]) > 1:
                    yield Utf8Lines(r["data"], r["offsets"], r["hashes"] if table_hashes else None)
                lo += int(r["consumed"])
                scanned, discarding = int(r["scanned"]), bool(r["discarding"])
                if lo == hi:
                    lo = hi = 0
                    if buf.size > 4 * TEXT_BLOCK_BYTES:  # a long line has passed: give its memory back
                        buf = np.empty(2 * TEXT_BLOCK_BYTES, dtype=np.uint8)
                if eof:
                    return
        finally:
            # pyarrow's transcoding stream may read sys.stdin itself: that reader is waited for
            blocks.close(wait=not self.utf8)

    def _at(self, what, number):
        """'line N of FILE' when positions may be named, else 'a line of FILE'."""
        return f"{what} {number:,} of {self.where()}" if self.name_positions else f"a {what} of {self.where()}"

    def _too_long(self, line=None, what="line", skippable=True):
        where = f"a {what} of {self.where()}" if line is None else self._at(what, line)
        go_on = "--on-bad-line skip or replace goes on, or " if skippable else ""
        return InputError(
            f"{where} is longer than {self.max_line_bytes:,} bytes; {go_on}raise --max-line-length "
            f"if the input really has such {what}s"
        )

    # -- CSV ----------------------------------------------------------------------------------
    def _header_fields(self, first: bytes) -> list:
        """The fields of the CSV's first line. Bytes that cannot start a CSV file -- a NUL or other
        control bytes (binary data), or a bare CR inside the line (old Mac and Excel exports end
        lines with CR alone, which the reader does not split on) -- are a clear InputError naming
        the fix, never a traceback; the message echoes none of the bytes."""
        line = first.rstrip(b"\r\n")
        if self.no_header:  # the first line is a row of data: its bytes are the data's business
            try:
                return next(csv.reader([line.decode("utf-8", errors="replace")], delimiter=self.delimiter))
            except csv.Error:
                raise InputError(f"{self.where()}: the first row is not CSV; if its lines end with a bare carriage "
                                 "return (old Mac or Excel export), convert them first: tr '\\r' '\\n'") from None
        if any(b < 0x20 and b not in (0x09, 0x0D) or b == 0x7F for b in line):
            raise InputError(f"{self.where()} does not start with a line of CSV text (it holds control or binary "
                             "bytes); pass a CSV file, or --format parquet / arrow / text for other input")
        if b"\r" in line:
            raise InputError(f"{self.where()} ends its lines with a bare carriage return (old Mac or Excel "
                             "export); convert the line ends first, for example: tr '\\r' '\\n' < IN > OUT.csv")
        try:
            return next(csv.reader([line.decode("utf-8", errors="replace")], delimiter=self.delimiter))
        except csv.Error as exc:
            raise InputError(f"{self.where()}: the first line is not CSV ({exc})") from None

    def _csv_batches(self):
        """Record batches of the item column (then the privacy id column, when there is one) as
        unstripped large_string arrays, parsed by pyarrow in blocks of max_line_bytes."""
        pa, _ = _pa()
        import pyarrow.csv as pcsv

        stream, owned = self._open_bytes()
        try:
            head = stream.read(self.max_line_bytes + 1)
            nl = head.find(b"\n")
            if nl < 0 and len(head) > self.max_line_bytes:
                raise self._too_long(what="row", skippable=False)  # the header (or first row): no way past it
            if self.utf8 and head.startswith(_BOM):
                head = head[3:]
                nl = head.find(b"\n")
            first = head if nl < 0 else head[: nl + 1]
            if not first.strip():
                raise InputError(f"{self.where()} is empty (no CSV header row)" if not self.no_header
                                 else f"{self.where()} has no items")
            fields = self._header_fields(first)
            if self.no_header:
                picked = [self._field(len(fields), "--column", self.col_index or 0)]
                if self.privacy_id is not None:
                    picked.append(self._field(len(fields), "--privacy-id", self.id_index))
                body = head
            else:
                header = [h.strip() for h in fields]
                picked = [self._pick_column(header)]
                if self.privacy_id is not None:
                    picked.append(self._pick_id_column(header))
                body = head[len(first):]
            names = [f"f{i}" for i in range(len(fields))]  # unique names for Arrow; the pick is by index
            wanted = [names[i] for i in picked]
            header_rows = 0 if self.no_header else 1
            malformed_row = []

            def on_malformed(row):
                # a row with the wrong number of fields: skipped under skip and replace (a row
                # cannot be mended); Arrow numbers it only when it parses on one thread
                if self.on_bad_line == "error":
                    malformed_row.append(None if row.number is None else row.number + header_rows)
                    return "error"
                self._count_bad()
                return "skip"

            body_stream = _Chain(body, stream)
            if self.on_bad_line != "error":
                body_stream = _LongRowFilter(body_stream, self.max_line_bytes, dropped=self._count_bad)
            try:
                reader = pcsv.open_csv(
                    pa.PythonFile(body_stream, mode="r"),
                    # a row of max_line_bytes and its "\\r\\n" fit one block
                    read_options=pcsv.ReadOptions(column_names=names, block_size=max(self.max_line_bytes + 2, 1 << 16),
                                                  use_threads=not self.name_positions),
                    parse_options=pcsv.ParseOptions(delimiter=self.delimiter, newlines_in_values=False,
                                                    invalid_row_handler=on_malformed),
                    convert_options=pcsv.ConvertOptions(include_columns=wanted,
                                                        column_types={n: pa.large_string() for n in wanted},
                                                        strings_can_be_null=False, quoted_strings_can_be_null=False,
                                                        check_utf8=False),  # checked below, per on_bad_line
                )
            except pa.ArrowInvalid as exc:
                if "Empty CSV" in str(exc):
                    return  # a header and nothing else
                raise InputError(self._csv_message(exc, malformed_row)) from None
            rows_before = header_rows
            while not self._cancel.is_set():
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                except pa.ArrowInvalid as exc:
                    raise InputError(self._csv_message(exc, malformed_row)) from None
                batch = self._checked_utf8(batch.select(wanted), rows_before)
                rows_before += batch.num_rows
                yield batch
        finally:
            if owned is not None:
                owned.close()

    def _count_bad(self):
        with self._counting:  # Arrow may call the row handler from its parsing threads
            self.bad_lines += 1

    def _field(self, count, option, idx):
        if idx >= count:
            raise InputUsageError(f"{self.where()} has {count} field(s) per row; {option} {idx} is field {idx + 1}")
        return idx

    def _csv_message(self, exc, malformed_row=()):
        """Arrow's CSV errors quote the offending row; keep only what went wrong (and the row's
        number, when positions may be named and Arrow knew it)."""
        msg = first_line(exc)
        if re.search(r"Expected \d+ columns, got \d+", msg):
            row = malformed_row[0] if malformed_row else None
            where = self._at("row", row) if row is not None else f"a row of {self.where()}"
            return (f"malformed CSV: {where} has a different number of fields than the header "
                    f"(check --delimiter and quoting; --on-bad-line skip goes on)")
        if "straddl" in msg or "block size" in msg:
            return (f"a row of {self.where()} is longer than {self.max_line_bytes:,} bytes; raise "
                    f"--max-line-length if the input really has such rows")
        if "UTF8" in msg or "utf8" in msg.lower():
            return f"{self.where()} is not valid {self.encoding} text; pass --encoding"
        return f"malformed CSV in {self.where()} (check --delimiter and quoting)"

    def _checked_utf8(self, batch, rows_before):
        """``batch`` (the picked columns, unchecked) with its ill-formed UTF-8 cells handled by
        ``on_bad_line``: an error, the row skipped, or the cell decoded with U+FFFD replacements.
        Arrow checks a whole column at once; only a column that fails is looked at cell by cell."""
        pa, _ = _pa()
        bad_rows = None
        columns = list(batch.columns)
        for j, arr in enumerate(columns):
            try:
                arr.validate(full=True)
                continue
            except pa.ArrowInvalid:
                pass
            raw = arr.cast(pa.large_binary()).to_pylist()
            bad = np.zeros(len(raw), dtype=bool)
            fixed = []
            for i, cell in enumerate(raw):
                try:
                    fixed.append(cell.decode("utf-8"))
                except UnicodeDecodeError:
                    bad[i] = True
                    fixed.append(cell.decode("utf-8", errors="replace"))
            if self.on_bad_line == "error":
                row = rows_before + int(np.argmax(bad)) + 1
                raise InputError(f"{self._at('row', row)} is not valid {self.encoding} text; "
                                 f"--on-bad-line skip or replace goes on (or pass the right --encoding)")
            bad_rows = bad if bad_rows is None else bad_rows | bad
            if self.on_bad_line == "replace":
                columns[j] = pa.array(fixed, type=pa.large_string())
        if bad_rows is None:
            return batch
        self.bad_lines += int(np.count_nonzero(bad_rows))
        batch = pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
        return batch.filter(pa.array(~bad_rows)) if self.on_bad_line == "skip" else batch

    def _pick_column(self, header):
        """The index of the item column among the column names (CSV header, Parquet or Arrow schema)."""
        if self.column is None:
            if len(header) == 1:
                return 0
            raise InputUsageError(
                f"{self.where()} has {len(header)} columns ({_names(header)}); pick one with --column NAME")
        if self.column in header:
            return header.index(self.column)
        raise InputUsageError(f"no column {self.column!r} in {self.where()}; its columns are {_names(header)}")

    def _pick_id_column(self, header):
        if self.privacy_id in header:
            return header.index(self.privacy_id)
        raise InputUsageError(f"no column {self.privacy_id!r} (--privacy-id) in {self.where()}; "
                              f"its columns are {_names(header)}")

    # -- CSV with an event-time column (dpsketch top --window) ---------------------------------
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

    def _timed_blocks(self, follow):
        """Raw byte blocks of the input. Without ``follow``: the decompressed stream in blocks of
        TIMED_BLOCK_BYTES. With ``follow``: whatever the file descriptor has (at most that many
        bytes), so short writes to a pipe come through at once."""
        if not follow:
            stream, owned = self._open_bytes()
            try:
                while True:
                    data = stream.read(TIMED_BLOCK_BYTES)
                    if not data:
                        return
                    yield data
            finally:
                if owned is not None:
                    owned.close()
            return
        import select
        import time

        if self.path == "-":
            fd, owned = sys.stdin.buffer.fileno(), None
        else:
            owned = open(self.path, "rb", buffering=0)
            fd = owned.fileno()
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        first = True
        try:
            while True:
                data = os.read(fd, TIMED_BLOCK_BYTES)
                if not data:
                    if not regular:
                        return
                    time.sleep(0.2)  # a file that keeps growing: look again
                    continue
                # gather what else is already there, so a fast writer gives big batches
                while (len(data) < TIMED_BLOCK_BYTES and not regular
                       and select.select([fd], [], [], 0)[0]):
                    more = os.read(fd, TIMED_BLOCK_BYTES - len(data))
                    if not more:
                        break
                    data += more
                # only the input's first bytes say gzip: later blocks start wherever a read ended,
                # possibly inside a row, which is that row's business (--on-bad-line), not the run's
                if first and data[:2] == b"\x1f\x8b":
                    raise InputUsageError("--follow reads plain text; decompress gzip input first (zcat FILE | ...)")
                first = False
                yield data
        finally:
            if owned is not None:
                owned.close()

    def _csv_timed(self, time_column, follow):
        pa, _ = _pa()
        import pyarrow.csv as pcsv

        if follow and not self.utf8:
            raise InputUsageError("--follow reads UTF-8 input; convert it first (iconv)")
        blocks = self._timed_blocks(follow)
        carry = b""
        header = None
        for data in blocks:
            carry += data
            nl = carry.find(b"\n")
            if nl < 0:
                if len(carry) > self.max_line_bytes:
                    raise self._too_long()
                continue
            header, carry = carry[: nl + 1], carry[nl + 1 :]
            break
        if header is None:
            header, carry = carry, b""
        if self.utf8 and header.startswith(_BOM):
            header = header[3:]
        if not header.strip():
            raise InputError(f"{self.where()} is empty (no CSV header row)" if not self.no_header
                             else f"{self.where()} has no items")
        fields = self._header_fields(header)
        if self.no_header:
            picked = [self._field(len(fields), "--column", self.col_index or 0),
                      self._field(len(fields), "--time-column", _field_index("--time-column", time_column))]
            carry = header + carry
        else:
            names_in_file = [h.strip() for h in fields]
            if time_column not in names_in_file:
                raise InputUsageError(f"no column {time_column!r} (--time-column) in {self.where()}; "
                                      f"its columns are {_names(names_in_file)}")
            picked = [self._pick_column(names_in_file), names_in_file.index(time_column)]
        if self.privacy_id is not None:
            picked.append(self._field(len(fields), "--privacy-id", self.id_index) if self.no_header
                          else self._pick_id_column([h.strip() for h in fields]))
        if len(set(picked)) != len(picked):
            raise InputUsageError("--time-column must name another column than the items' --column and --privacy-id")
        names = [f"f{i}" for i in range(len(fields))]
        wanted = [names[i] for i in picked]
        # Under skip and replace every bad row is decided on its own bytes (as for _csv_batches):
        # rows longer than max_line_bytes are dropped before Arrow sees them (_LongRowFilter), a
        # row with the wrong number of fields is skipped by the parser, and ill-formed UTF-8 is
        # handled cell by cell (_checked_utf8). A windowed run then never stops on a row: with
        # --follow a stop would cut the series short and its time would tell when the row came.
        lenient = self.on_bad_line != "error"
        # a row of max_line_bytes and its "\r\n" fit one block
        read_options = pcsv.ReadOptions(column_names=names, use_threads=True,
                                        block_size=max(self.max_line_bytes + 2, 1 << 16))
        convert_options = pcsv.ConvertOptions(include_columns=wanted,
                                              column_types={n: pa.large_string() for n in wanted},
                                              strings_can_be_null=False, quoted_strings_can_be_null=False,
                                              check_utf8=not lenient)

        int_times = pcsv.ConvertOptions(include_columns=wanted,
                                        column_types={n: pa.int64() if n == wanted[1] else pa.large_string()
                                                      for n in wanted},
                                        strings_can_be_null=False, quoted_strings_can_be_null=False,
                                        check_utf8=not lenient)

        def parse_options(bad):
            """Arrow's parse options; under skip/replace a malformed row is skipped and noted in ``bad``
            (counted once the block's parse is the one kept)."""
            if not lenient:
                return pcsv.ParseOptions(delimiter=self.delimiter, newlines_in_values=False)
            return pcsv.ParseOptions(delimiter=self.delimiter, newlines_in_values=False,
                                     invalid_row_handler=lambda row: bad.append(1) or "skip")

        def read(block, options, bad):
            try:
                return pcsv.read_csv(pa.py_buffer(block), read_options=read_options,
                                     parse_options=parse_options(bad), convert_options=options)
            except pa.ArrowInvalid as exc:
                if "Empty CSV" in str(exc):
                    return None
                raise InputError(self._csv_message(exc)) from None

        def parse(block, hex_prefix):
            # Epoch seconds as integers, the common case, parse in C++. Any other value makes the
            # block fail there and the block is read again as text, each time on its own; both
            # read a decimal integer alike, and a block with "0x" (which Arrow would read as hex)
            # goes to the text path, so a row's time never depends on the other rows.
            table, int_column, bad = None, not hex_prefix, []
            if int_column:
                try:
                    table = pcsv.read_csv(pa.py_buffer(block), read_options=read_options,
                                          parse_options=parse_options(bad), convert_options=int_times)
                except (pa.ArrowInvalid, pa.ArrowTypeError):
                    int_column, bad = False, []
            if not int_column:
                table = read(block, convert_options, bad)
            if bad:
                with self._counting:
                    self.bad_lines += len(bad)
            if table is None:
                return
            for batch in table.select(wanted).to_batches():
                if lenient:
                    batch = self._checked_utf8(batch, 0)
                if batch.num_rows:
                    yield from converted(int_column, *batch.columns)

        def converted(int_column, items_col, times_col, ids_col=None):
            items, items_nonempty = _trim(items_col)
            ids, ids_nonempty = (None, None) if ids_col is None else _trim(ids_col)
            if int_column:
                secs = _values(times_col.fill_null(0)) if times_col.null_count else _values(times_col)
                usable = _values(times_col.is_valid()) if times_col.null_count else None
                usable = _both(usable, np.abs(np.where(usable, secs, 0) if usable is not None else secs)
                               < _MAX_EPOCH_SECONDS)
                texts = None
            else:
                texts, usable = _trim(times_col)
            both = _both(_both(items_nonempty, usable), ids_nonempty)
            if both is not None and not both.all():
                items = _take(items, both)
                ids = None if ids is None else _take(ids, both)
                if int_column:
                    secs = secs[both]
                else:
                    texts = _take(texts, both)
            if not len(items):
                return
            converted_columns = [self.keys.convert_kept(items)]
            if int_column:
                converted_columns.append((secs * 1_000_000_000, None))  # |secs| < 2^62/10^9: no overflow
            else:
                converted_columns.append(_event_times(texts))
            if ids is not None:
                converted_columns.append(self.ids.convert_kept(ids))
            out = _aligned_columns(converted_columns)
            if len(out[0]):
                out[1] = out[1].view("datetime64[ns]")
                yield tuple(out)

        def complete_lines(last, data=b""):
            nonlocal carry
            cut = len(data) if last else data.rfind(b"\n") + 1
            if cut <= 0:
                carry += data
                if len(carry) > self.max_line_bytes:
                    raise self._too_long()
                return
            view = memoryview(data)[:cut]
            carry_before = carry
            block = b"".join((carry, view)) if carry else view
            carry = data[cut:]
            # memchr finds no "x" in most blocks; only a block with one needs the vectorised look
            maybe = any(buf.find(x) >= 0 for buf in (carry_before, data) for x in (b"x", b"X"))
            yield from parse(block, maybe and _hex_prefix(block))

        data, carry = carry, b""
        if lenient:
            data, blocks = b"", _short_lines(data, blocks, self.max_line_bytes, self._count_bad)
        yield from complete_lines(False, data)
        for data in blocks:
            yield from complete_lines(False, data)
        if carry.strip():
            data, carry = carry, b""
            yield from complete_lines(True, data)

    # -- Parquet and Arrow ------------------------------------------------------------------------
    def parquet_file(self):
        pa, _ = _pa()
        import pyarrow.parquet as pq

        source = pa.BufferReader(sys.stdin.buffer.read()) if self.path == "-" else self.path
        try:
            return pq.ParquetFile(source)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise InputError(f"cannot read {self.where()} as Parquet: {first_line(exc)}") from None

    def parquet_rows(self) -> int:
        return self.parquet_file().metadata.num_rows

    def _parquet_read(self, pf, columns):
        """Record batches of the named columns, chunk_size rows each (dictionaries decoded)."""
        pa, _ = _pa()
        self.total, self.unit = pf.metadata.num_rows, " rows"
        rows = 0
        self._pos = lambda: rows
        try:
            for batch in pf.iter_batches(batch_size=self.chunk_size, columns=columns):
                rows += batch.num_rows
                yield [arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr
                       for arr in batch.columns]
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"cannot read {self.where()} as Parquet: {first_line(exc)}") from None

    def _columnar(self):
        """(schema, read) of a Parquet file or an Arrow IPC input: ``read(columns)`` yields the
        record batches of those columns as lists of arrays, dictionaries decoded."""
        if self.format == "parquet":
            pf = self.parquet_file()
            return pf.schema_arrow, lambda columns: self._parquet_read(pf, columns)
        reader, owned = self._arrow_reader()
        return reader.schema, lambda columns: self._arrow_read(reader, owned, columns)

    def _arrow_reader(self):
        """(reader, file to close or None): the Arrow IPC file format (random access; a file
        starting with ARROW1) or the stream format (a file or stdin, gzip detected as for text)."""
        pa, _ = _pa()
        import pyarrow.ipc as ipc

        try:
            if self.path != "-":
                with open(self.path, "rb") as f:
                    is_file_format = f.read(6) == b"ARROW1"
                if is_file_format:
                    src = pa.memory_map(self.path, "r")
                    return ipc.open_file(src), src
            stream, owned = self._open_bytes()
            try:
                return ipc.open_stream(stream), owned
            except BaseException:
                if owned is not None:
                    owned.close()
                raise
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise InputError(f"cannot read {self.where()} as an Arrow IPC stream or file: {first_line(exc)}") from None

    def _arrow_read(self, reader, owned, columns):
        """Record batches of the named columns, at most chunk_size rows each (slices of the
        writer's batches: no copy)."""
        pa, _ = _pa()
        rows = 0
        self.unit = " rows"
        self._pos = lambda: rows
        if isinstance(reader, pa.ipc.RecordBatchFileReader):
            batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
        else:
            batches = iter(reader)
        try:
            for batch in batches:
                batch = batch.select(columns)
                for start in range(0, batch.num_rows, self.chunk_size):
                    part = batch.slice(start, self.chunk_size)
                    rows += part.num_rows
                    yield [arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr
                           for arr in part.columns]
        except pa.ArrowException as exc:
            raise InputError(f"cannot read {self.where()} as an Arrow IPC stream or file: {first_line(exc)}") from None
        finally:
            if owned is not None:
                owned.close()

    def _parquet_chunks(self):
        _, pc = _pa()
        schema, read = self._columnar()
        name = schema.names[self._pick_column(list(schema.names))]
        convert = _parquet_typing(schema, name, self.keys, "items")
        for (arr,) in read([name]):
            if arr.null_count:
                self.skipped += arr.null_count
                arr = pc.drop_null(arr)
            if len(arr):
                keys, _ = convert(arr)
                if len(keys):
                    yield keys

    def _parquet_pairs(self):
        pa, pc = _pa()
        schema, read = self._columnar()
        names = list(schema.names)
        key_name, id_name = names[self._pick_column(names)], names[self._pick_id_column(names)]
        convert_key = _parquet_typing(schema, key_name, self.keys, "items")
        convert_id = _parquet_typing(schema, id_name, self.ids, "privacy ids")
        for keys, ids in read([key_name, id_name]):
            if keys.null_count or ids.null_count:
                both = pc.and_(keys.is_valid(), ids.is_valid())
                keys, ids = keys.filter(both), ids.filter(both)
            if len(keys):
                keys, ids = _aligned(*convert_key(keys), *convert_id(ids))
            if len(keys):
                yield keys, ids

    def _parquet_numbers(self, integer, bits):
        schema, read = self._columnar()
        name = schema.names[self._pick_column(list(schema.names))]
        convert = _parquet_number_typing(schema, name, integer, bits)
        for (arr,) in read([name]):
            values, _ = convert(arr)
            yield values

    def _parquet_number_pairs(self, integer, bits):
        pa, pc = _pa()
        schema, read = self._columnar()
        names = list(schema.names)
        value_name, id_name = names[self._pick_column(names)], names[self._pick_id_column(names)]
        convert_value = _parquet_number_typing(schema, value_name, integer, bits)
        convert_id = _parquet_typing(schema, id_name, self.ids, "privacy ids")
        for values, ids in read([value_name, id_name]):
            if ids.null_count:
                ids_valid = ids.is_valid()
                values, ids = values.filter(ids_valid), ids.filter(ids_valid)
            if len(ids):
                values, ids = _aligned(*convert_value(values), *convert_id(ids))
            if len(values):
                yield values, ids


def _field_index(option, text):
    """With --no-header a column is a 0-based field index."""
    try:
        idx = int(text)
    except ValueError:
        idx = -1
    if idx < 0:
        raise InputUsageError(f"with --no-header, {option} is a 0-based column index")
    return idx


_NUMPY_OF_ARROW = {"int64": np.dtype(np.int64), "uint64": np.dtype(np.uint64), "double": np.dtype(np.float64)}


def _values(arr) -> np.ndarray:
    """A numpy view of a null-free int64, uint64, float64 or boolean Arrow array. pyarrow's
    to_numpy() imports pandas on its first call, which would cost a reader more than the data."""
    if arr.null_count:
        return arr.to_numpy(zero_copy_only=False)
    buf = arr.buffers()[1]
    kind = str(arr.type)
    if kind == "bool":
        if buf is None:
            return np.zeros(0, dtype=bool)
        bits = np.unpackbits(np.frombuffer(buf, dtype=np.uint8), bitorder="little")
        return bits[arr.offset : arr.offset + len(arr)].view(bool)
    dtype = _NUMPY_OF_ARROW[kind]
    if buf is None:
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)


def _names(header) -> str:
    return f"{', '.join(map(repr, header[:20]))}{', ...' if len(header) > 20 else ''}"


def _trim(arr):
    """(``arr`` with str.strip() whitespace trimmed, None or the numpy mask of its non-empty
    items). Trimming runs only when some item has a possibly-blank edge byte."""
    _, pc = _pa()
    _validity, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    nonempty = offsets[1:] > offsets[:-1]
    if nonempty.any():
        starts, ends = offsets[:-1][nonempty], offsets[1:][nonempty]
        if _EDGE_WS[data[starts]].any() or _EDGE_WS[data[ends - 1]].any():
            arr = pc.utf8_trim_whitespace(arr)
            nonempty = pc.greater(pc.binary_length(arr), 0).to_numpy(zero_copy_only=False)
    return arr, (None if nonempty.all() else nonempty)


def _hex_prefix(block) -> bool:
    """Does ``block`` hold "0x" or "0X" anywhere (vectorised: bytes.find is slow on digit runs)?"""
    b = np.frombuffer(block, dtype=np.uint8)
    x = np.flatnonzero((b[1:] | 0x20) == ord("x"))
    return bool(x.size) and bool((b[x] == ord("0")).any())


_EPOCH_SECONDS = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_MAX_EPOCH_SECONDS = 2**62 // 10**9  # later than ~2116 is not an event time: dropped


_ZONE_SUFFIX = re.compile(r"([Zz]|[+-][0-9]{2}(:?[0-9]{2})?)$")


def _iso_types(first):
    """The Arrow timestamp types to read a block of ISO 8601 times as, the likely one first: with a
    zone (Z or an offset) if the block's first text has one, else naive (UTC)."""
    pa, _ = _pa()
    zoned = isinstance(first, str) and _ZONE_SUFFIX.search(first.strip()) is not None and "T" in first.upper()
    naive, utc = pa.timestamp("ns"), pa.timestamp("ns", tz="UTC")
    return (utc,) if zoned else (naive,)


def _iso_block(texts, types):
    """int64 ns of every text of ``texts`` read as ISO 8601 by one of ``types``, or None."""
    pa, pc = _pa()
    for typ in types:
        try:
            return pc.cast(texts, typ).cast(pa.int64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
    return None


def _event_times(texts):
    """(int64 ns since the epoch, None or the mask of the texts read): each text on its own is
    epoch seconds (a decimal number) or ISO 8601 (a zone offset or Z is applied; none: UTC)."""
    pa, pc = _pa()
    secs = _plain_ints(texts)
    if secs is not None:
        ok = np.abs(secs) < _MAX_EPOCH_SECONDS
        if ok.all():
            return secs * 1_000_000_000, None
        return secs[ok] * 1_000_000_000, ok
    if len(texts):
        # A block of ISO 8601 times in one form is one Arrow cast (Arrow's ISO parser refuses every
        # plain number, so a block it reads whole holds none). Only the form the first text shows
        # is tried: a cast that fails costs a full parse of the block.
        parsed = _iso_block(texts, _iso_types(texts[0].as_py()))
        if parsed is not None:
            return parsed, None
    numeric = pc.match_substring_regex(texts, _EPOCH_SECONDS).to_numpy(zero_copy_only=False)
    out = np.zeros(len(texts), dtype=np.int64)
    kept = np.zeros(len(texts), dtype=bool)
    if numeric.any():
        idx = np.flatnonzero(numeric)
        v = pc.cast(texts.take(pa.array(idx)), pa.float64()).to_numpy(zero_copy_only=False)
        good = np.abs(v) < _MAX_EPOCH_SECONDS
        out[idx[good]] = np.floor(v[good] * 1e9).astype(np.int64)
        kept[idx[good]] = True
    rest = np.flatnonzero(~numeric)
    if rest.size:
        part = texts.take(pa.array(rest))
        parsed = _iso_block(part, _iso_types(part[0].as_py()))
        if parsed is not None:
            out[rest] = parsed
            kept[rest] = True
        else:  # mixed forms or bad values: each on its own
            from ..time.windows import parse_instant

            for j, text in zip(rest.tolist(), part.to_pylist()):
                try:
                    v = parse_instant(text)
                except (ValueError, TypeError, OverflowError):
                    continue
                if abs(v) < 2**62:
                    out[j], kept[j] = v, True
    if kept.all():
        return out, None
    return out[kept], kept


def _parquet_typing(schema, name, typer, what):
    """Check a Parquet or Arrow column's type, settle ``typer`` on it (auto: the column type decides) and
    return the converter of its batches (no nulls) to (values, kept) as KeyTyper.convert_kept."""
    pa, pc = _pa()
    typ = schema.field(name).type
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    is_int = pa.types.is_integer(typ)
    is_str = (pa.types.is_string(typ) or pa.types.is_large_string(typ)
              or (hasattr(pa.types, "is_string_view") and pa.types.is_string_view(typ)))
    if not (is_int or is_str):
        raise InputError(f"column {name!r} has type {typ}; only integer and string columns can be {what}")
    is_uint64 = pa.types.is_uint64(typ)
    mode = typer.mode
    if mode == "auto":
        # uint64 values may not fit int64 keys: text keeps every one of them
        mode = "int" if is_int and not is_uint64 else "str"
        typer.chosen = mode
        if is_uint64:
            typer.how += ": uint64 may exceed int64"

    def convert(arr):
        if is_str and not pa.types.is_large_string(arr.type):
            arr = arr.cast(pa.large_string())
        if mode == "str":
            return (arr.cast(pa.large_string()) if is_int else arr), None
        if is_str:
            return _lenient_ints(pc.utf8_trim_whitespace(arr))
        kept = None
        if is_uint64:  # int mode: values above the int64 range are dropped
            ok = pc.less_equal(arr, pa.scalar(_INT64_MAX, pa.uint64()))
            if not pc.all(ok).as_py():
                kept = ok.to_numpy(zero_copy_only=False)
                arr = arr.filter(ok)
        return np.asarray(arr.cast(pa.int64()).to_numpy()), kept

    return convert


def _numbers(texts, integer, bits):
    """A chunk of text values as numbers, each mapped on its own (so a neighbouring input changes
    at most one value): with ``integer``, Python's int syntax clamped into [0, 2^bits); else
    Python's float syntax (±inf is clamped by the sketch, NaN dropped); anything else is dropped."""
    return _numbers_kept(texts, integer, bits)[0]


def _numbers_kept(texts, integer, bits):
    """(numbers, kept) as :func:`_numbers` reads them: ``kept`` is None when every text became a
    number, else the numpy bool mask of those that did (as KeyTyper.convert_kept)."""
    kept = np.ones(len(texts), dtype=bool)
    if integer:
        top = (1 << bits) - 1
        ints = []
        for i, s in enumerate(texts):
            try:
                v = int(s)
            except ValueError:  # not an integer, or more digits than int() accepts
                kept[i] = False
                continue
            ints.append(0 if v < 0 else top if v > top else v)
        return np.array(ints, dtype=np.uint64), (None if kept.all() else kept)
    reals = []
    for i, s in enumerate(texts):
        try:
            v = float(s)
        except ValueError:
            kept[i] = False
            continue
        if v == v:  # NaN has no place in the order
            reals.append(v)
        else:
            kept[i] = False
    return np.array(reals, dtype=np.float64), (None if kept.all() else kept)


def _parquet_number_typing(schema, name, integer, bits):
    """Check that a Parquet or Arrow column is numeric (in integer mode: of an integer type; the schema
    decides, not the values) and return the converter of its batches to (numbers, kept) as
    :func:`_numbers_kept`: nulls and NaNs dropped, integers clamped into [0, 2^bits) (as --bounds
    clamps real values)."""
    pa, pc = _pa()
    typ = schema.field(name).type
    if not (pa.types.is_integer(typ) or pa.types.is_floating(typ)):
        raise InputError(f"column {name!r} has type {typ}; quantiles need a numeric column")
    if integer and pa.types.is_floating(typ):
        raise InputUsageError(f"column {name!r} has type {typ}; --universe-bits without --bounds needs an "
                              "integer column (pass --bounds LO,HI for real values)")
    top = (1 << bits) - 1

    def convert(arr):
        ok = arr.is_valid() if pa.types.is_integer(typ) else pc.and_kleene(arr.is_valid(), pc.invert(pc.is_nan(arr)))
        ok = pc.fill_null(ok, False)
        kept = None
        if not pc.all(ok).as_py():
            kept = ok.to_numpy(zero_copy_only=False)
            arr = arr.filter(ok)
        v = arr.to_numpy(zero_copy_only=False)
        if integer:
            if v.dtype.kind == "i":
                v = np.maximum(v, 0)
            return np.ascontiguousarray(np.minimum(v.astype(np.uint64), np.uint64(top))), kept
        return v.astype(np.float64, copy=False), kept

    return convert
