"""Streaming input for ``dpsketch top``: text lines, CSV/TSV columns and Parquet columns, plain or
gzip-compressed, read by pyarrow's C++ readers in bounded blocks and handed to ``update_many`` as
Arrow arrays or int64 numpy arrays -- no Python object per item.

Memory is bounded: text is decompressed by pyarrow in blocks of ``TEXT_BLOCK_BYTES`` and split
into lines in C++ (``dpsketch._core.split_lines``); CSV rows are parsed by ``pyarrow.csv.open_csv``
in blocks of ``max_line_bytes``. A line or row longer than ``max_line_bytes`` is an error (input
without newlines, e.g. ``/dev/zero``, stops there instead of growing without bound). Parquet is
read one record batch at a time.

Key typing never looks at the items: a type read off the data would be printed with the release
and could be contradicted by a later item. ``keys='auto'``: text and CSV items are text, a Parquet
column's type decides (integer column → int keys, except uint64, whose values may not fit int64 →
text). ``keys='int'`` parses a decimal integer with optional sign, surrounding space and leading
zeros (``+7``, ``007`` and ``7`` are one key) and **drops** an item that is not one or is outside
the signed 64-bit range: an error there would depend on the data. ``keys='str'`` keeps text.

Errors are :class:`InputError` (the input cannot be read as asked: exit status 1) or
:class:`InputUsageError` (the options do not fit the file, e.g. no such column: exit status 2).
Their messages name no item, line number, row number or count: every consumer is a private
release, and a position is a count of the items before it.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import re
import stat
import sys

import numpy as np

from .errors import DPSketchError

__all__ = [
    "FORMATS", "InputError", "InputUsageError", "Source", "detect_format", "DEFAULT_MAX_LINE_BYTES",
]

FORMATS = ("text", "csv", "parquet")
DEFAULT_MAX_LINE_BYTES = 1 << 20  # also the CSV reader's block size: bounds memory in flight
_LENIENT_INT = r"^[+-]?[0-9]+$"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_BOM = b"\xef\xbb\xbf"
TEXT_BLOCK_BYTES = 1 << 20  # decompressed bytes per read for text input
# Bytes at a line's edge that may need trimming: ASCII whitespace, or the lead/continuation byte of
# a possibly-whitespace non-ASCII character (str.strip() semantics; utf8_trim_whitespace does them).
_EDGE_WS = np.zeros(256, dtype=bool)
_EDGE_WS[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True
_EDGE_WS[0x80:] = True


class InputError(DPSketchError):
    """The input cannot be read as asked (exit status 1)."""


class InputUsageError(DPSketchError):
    """The options do not fit the input, e.g. a column that does not exist (exit status 2)."""


def _pa():
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:  # pragma: no cover - pyarrow is a dependency of the CLI
        raise InputError("install pyarrow to read input files (pip install pyarrow)") from None
    return pa, pc


def detect_format(path: str | None) -> str:
    """'csv' for .csv/.tsv, 'parquet' for .parquet/.pq/.parq, else 'text' (a .gz suffix is looked through)."""
    if path is None or path == "-":
        return "text"
    name = _base_name(path)
    if name.endswith((".csv", ".tsv")):
        return "csv"
    if name.endswith((".parquet", ".pq", ".parq")):
        return "parquet"
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

    def __init__(self, mode: str, format: str = "text"):
        if mode not in ("auto", "int", "str"):
            raise ValueError(f"keys must be 'auto', 'int' or 'str', got {mode!r}")
        self.mode = mode
        if mode != "auto":
            self.chosen, self.how = mode, "forced"
        elif format == "parquet":
            self.chosen, self.how = None, "from the Parquet column type"  # set when the file is opened
        else:
            self.chosen, self.how = "str", "text input; --int-keys for integer keys"

    def describe(self) -> str:
        return "none" if self.chosen is None else f"{self.chosen} ({self.how})"

    def convert(self, arr):
        """``arr``: pyarrow large_string array -> itself (text keys) or an int64 numpy array."""
        return arr if self.chosen == "str" else _lenient_ints(arr)


def _lenient_ints(arr):
    """The items of ``arr`` that are decimal integers in the int64 range (optional sign, leading
    zeros), as an int64 numpy array; the other items are dropped."""
    pa, pc = _pa()
    ok = pc.match_substring_regex(arr, _LENIENT_INT)
    # Only items of 19 or more characters can be outside int64: check those few exactly.
    long_idx = np.flatnonzero(pc.and_(ok, pc.greater_equal(pc.utf8_length(arr), 19)).to_numpy(zero_copy_only=False))
    if long_idx.size:
        mask = ok.to_numpy(zero_copy_only=False).copy()
        for i in long_idx.tolist():
            mask[i] = _fits_int64(arr[i].as_py())
        ok = pa.array(mask)
    if not pc.all(ok).as_py():
        arr = arr.filter(ok)
    if not len(arr):
        return np.zeros(0, dtype=np.int64)
    return pc.cast(pc.replace_substring_regex(arr, r"^\+", ""), pa.int64()).to_numpy()


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


def _read_ahead(gen, depth: int = 2):
    """Run the generator `gen` in a thread, `depth` items ahead of the consumer. Reading,
    decompressing and splitting release the GIL, and so does the consumer's update_many, so
    the two overlap on two cores; memory grows by `depth` batches. Exceptions reach the consumer
    in order; a consumer that stops early stops the reader."""
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def put(item):
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run():
        try:
            for item in gen:
                if not put((True, item)):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            put((False, exc))
            return
        finally:
            if stop.is_set():
                gen.close()
        put((True, done))

    t = threading.Thread(target=run, name="dpsketch-reader", daemon=True)
    t.start()
    try:
        while True:
            ok, item = q.get()
            if not ok:
                raise item
            if item is done:
                return
            yield item
    finally:
        stop.set()
        t.join()


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


class Source:
    """One input: ``chunks()`` yields key batches for ``update_many``.

    ``total``/``unit``/``position()`` drive a progress bar (compressed bytes read for text and CSV
    files, rows for Parquet; None for stdin); ``skipped`` counts blank lines / empty values / nulls.
    """

    def __init__(self, path=None, *, format=None, column=None, no_header=False, delimiter=None,
                 encoding="utf-8", keys="auto", chunk_size=1_000_000,
                 max_line_bytes=DEFAULT_MAX_LINE_BYTES):
        self.path = "-" if path is None else os.fspath(path)
        self.format = format or detect_format(self.path)
        if self.format not in FORMATS:
            raise InputUsageError(f"format must be one of {', '.join(FORMATS)}, got {self.format!r}")
        self.column = column
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
        self.skipped = 0
        self.skipped_what = {"text": "blank lines", "csv": "empty values"}.get(self.format, "null values")
        self.total = None
        self.unit = "B"
        self._pos = lambda: None
        self._raw = False
        self.col_index = None
        if self.format == "text" and column is not None:
            raise InputUsageError("--column is only for CSV and Parquet input; pass --format csv or --format parquet")
        if self.format != "csv" and (delimiter is not None or no_header):
            raise InputUsageError("--delimiter and --no-header are only for CSV input")
        if delimiter is not None and len(delimiter) != 1:
            if delimiter in ("\\t", "tab"):
                delimiter = "\t"
            else:
                raise InputUsageError(f"--delimiter must be one character, got {delimiter!r}")
        if delimiter is None:
            delimiter = "\t" if _base_name(self.path).endswith(".tsv") else ","
        self.delimiter = delimiter
        if no_header and column is not None:
            try:
                self.col_index = int(column)
            except ValueError:
                raise InputUsageError("with --no-header, --column is a 0-based column index") from None
            if self.col_index < 0:
                raise InputUsageError("with --no-header, --column is a 0-based column index")
        check_path(self.path)

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

    # -- chunk generators ---------------------------------------------------------------------
    def chunks(self):
        """Key batches (pyarrow large_string arrays or int64 numpy arrays); empty items are skipped."""
        gen = {"text": self._text_chunks, "csv": self._csv_chunks, "parquet": self._parquet_chunks}[self.format]
        try:
            yield from _read_ahead(gen())
        except (InputError, InputUsageError):
            raise
        except UnicodeDecodeError:
            raise InputError(f"{self.where()} is not valid {self.encoding} text; pass --encoding") from None
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

    def _split(self, arr):
        """Slices of at most chunk_size items, each converted to keys (for text_chunks: raw text)."""
        for start in range(0, len(arr), self.chunk_size):
            part = arr.slice(start, self.chunk_size)
            if self._raw:
                yield part
                continue
            keys = self.keys.convert(part)
            if len(keys):
                yield keys

    def text_chunks(self):
        """large_string arrays of the raw stripped items, for commands that parse the text
        themselves (dpsketch quantiles); Parquet is not handled here."""
        self._raw = True
        gen = self._text_chunks() if self.format == "text" else self._csv_chunks()
        try:
            yield from gen
        except UnicodeDecodeError:
            raise InputError(f"{self.where()} is not valid {self.encoding} text; pass --encoding") from None
        except OSError as exc:
            raise InputError(self._io_message(exc)) from None

    def _text_chunks(self):
        """Lines, split in C++ (dpsketch._core.split_lines) from decompressed blocks read by pyarrow:
        line ends \\n, \\r\\n or \\r; str.strip() whitespace; blank lines skipped; UTF-8 and the
        line length checked. Memory: one block plus one partial line (at most max_line_bytes)."""
        pa, _ = _pa()
        from . import _core

        stream, owned = self._open_bytes()
        carry = np.zeros(0, dtype=np.uint8)
        bom_checked = not self.utf8
        try:
            while True:
                buf = stream.read_buffer(TEXT_BLOCK_BYTES)
                eof = buf.size == 0
                block = np.frombuffer(buf, dtype=np.uint8)
                if carry.size:
                    block = np.concatenate([carry, block])
                if not bom_checked and (block.size >= 3 or eof):
                    bom_checked = True
                    if block[:3].tobytes() == _BOM:
                        block = block[3:]
                r = _core.split_lines(block, eof, self.max_line_bytes)
                if r["error"] == 1:
                    raise InputError(
                        f"{self.where()} is not valid {self.encoding} text; "
                        f"pass --encoding, or check that it is a text file")
                if r["error"] == 2:
                    raise self._too_long()
                offsets, blank = r["offsets"], r["blank"]
                self.skipped += len(blank)
                if len(offsets) > 1:
                    arr = pa.Array.from_buffers(pa.large_string(), len(offsets) - 1,
                                                [None, pa.py_buffer(offsets), pa.py_buffer(r["data"])])
                    yield from self._split(arr)
                carry = block[r["consumed"]:]
                if eof:
                    return
        finally:
            if owned is not None:
                owned.close()

    def _too_long(self):
        return InputError(
            f"a line of {self.where()} is longer than {self.max_line_bytes:,} bytes (no newline); "
            f"raise --max-line-length if the input really has such lines"
        )

    def _non_empty(self, arr):
        """Trim (only when some item has a possibly-blank edge byte), drop empty items, yield key chunks."""
        pa, pc = _pa()
        _validity, offsets_buf, data_buf = arr.buffers()
        offsets = np.frombuffer(offsets_buf, dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
        data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
        nz = offsets[1:] > offsets[:-1]
        if nz.any():
            starts, ends = offsets[:-1][nz], offsets[1:][nz]
            if _EDGE_WS[data[starts]].any() or _EDGE_WS[data[ends - 1]].any():
                arr = pc.utf8_trim_whitespace(arr)
                nz = pc.greater(pc.binary_length(arr), 0).to_numpy(zero_copy_only=False)
        if not nz.all():
            self.skipped += len(arr) - int(np.count_nonzero(nz))
            arr = arr.filter(pa.array(nz))
        if not len(arr):
            return
        yield from self._split(arr)

    def _csv_chunks(self):
        pa, pc = _pa()
        import pyarrow.csv as pcsv

        stream, owned = self._open_bytes()
        try:
            head = stream.read(self.max_line_bytes + 1)
            nl = head.find(b"\n")
            if nl < 0 and len(head) > self.max_line_bytes:
                raise self._too_long()
            if self.utf8 and head.startswith(_BOM):
                head = head[3:]
                nl = head.find(b"\n")
            first = head if nl < 0 else head[: nl + 1]
            if not first.strip():
                raise InputError(f"{self.where()} is empty (no CSV header row)" if not self.no_header
                                 else f"{self.where()} has no items")
            fields = next(csv.reader([first.decode("utf-8", errors="replace").rstrip("\r\n")],
                                     delimiter=self.delimiter))
            if self.no_header:
                names = [f"f{i}" for i in range(len(fields))]
                idx = self.col_index if self.col_index is not None else 0
                if idx >= len(names):
                    raise InputUsageError(f"{self.where()} has {len(names)} field(s) per row; --column {idx} "
                                          f"is field {idx + 1}")
                body = head
            else:
                names = [h.strip() for h in fields]
                idx = self._pick_column(names)
                body = head[len(first):]
            colname = names[idx]
            names = [f"f{i}" for i in range(len(names))]  # unique names for Arrow; the pick is by index
            try:
                reader = pcsv.open_csv(
                    pa.PythonFile(_Chain(body, stream), mode="r"),
                    read_options=pcsv.ReadOptions(column_names=names, block_size=max(self.max_line_bytes, 1 << 16),
                                                  use_threads=True),
                    parse_options=pcsv.ParseOptions(delimiter=self.delimiter, newlines_in_values=False),
                    convert_options=pcsv.ConvertOptions(include_columns=[names[idx]],
                                                        column_types={names[idx]: pa.large_string()},
                                                        strings_can_be_null=False, quoted_strings_can_be_null=False),
                )
            except pa.ArrowInvalid as exc:
                if "Empty CSV" in str(exc):
                    return  # a header and nothing else
                raise InputError(self._csv_message(exc, colname)) from None
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                except pa.ArrowInvalid as exc:
                    raise InputError(self._csv_message(exc, colname)) from None
                yield from self._non_empty(batch.column(0))
        finally:
            if owned is not None:
                owned.close()

    def _csv_message(self, exc, colname):
        """Arrow's CSV errors quote the offending row and its number; keep only what went wrong."""
        msg = first_line(exc)
        if re.search(r"Expected \d+ columns, got \d+", msg):
            return (f"malformed CSV in {self.where()}: a row has a different number of fields than "
                    f"the header (check --delimiter and quoting)")
        if "straddl" in msg or "block size" in msg:
            return (f"a row of {self.where()} is longer than {self.max_line_bytes:,} bytes; raise "
                    f"--max-line-length if the input really has such rows")
        if "UTF8" in msg or "utf8" in msg.lower():
            return f"{self.where()} is not valid {self.encoding} text; pass --encoding"
        return f"malformed CSV in {self.where()} (check --delimiter and quoting)"

    def _pick_column(self, header):
        if self.column is None:
            if len(header) == 1:
                return 0
            raise InputUsageError(
                f"{self.where()} has {len(header)} columns ({', '.join(map(repr, header[:20]))}"
                f"{', ...' if len(header) > 20 else ''}); pick one with --column NAME"
            )
        if self.column in header:
            return header.index(self.column)
        raise InputUsageError(
            f"no column {self.column!r} in {self.where()}; its columns are "
            f"{', '.join(map(repr, header[:20]))}{', ...' if len(header) > 20 else ''}"
        )

    # -- Parquet ------------------------------------------------------------------------------
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

    def _parquet_chunks(self):
        pa, pc = _pa()
        pf = self.parquet_file()
        schema = pf.schema_arrow
        names = list(schema.names)
        if self.column is None:
            if len(names) != 1:
                raise InputUsageError(
                    f"{self.where()} has {len(names)} columns ({', '.join(map(repr, names[:20]))}"
                    f"{', ...' if len(names) > 20 else ''}); pick one with --column NAME"
                )
            column = names[0]
        elif self.column in names:
            column = self.column
        else:
            raise InputUsageError(
                f"no column {self.column!r} in {self.where()}; its columns are "
                f"{', '.join(map(repr, names[:20]))}{', ...' if len(names) > 20 else ''}"
            )
        typ = schema.field(column).type
        if pa.types.is_dictionary(typ):
            typ = typ.value_type
        is_int = pa.types.is_integer(typ)
        is_str = (pa.types.is_string(typ) or pa.types.is_large_string(typ)
                  or (hasattr(pa.types, "is_string_view") and pa.types.is_string_view(typ)))
        if not (is_int or is_str):
            raise InputError(f"column {column!r} has type {typ}; only integer and string columns can be items")
        self.total, self.unit = pf.metadata.num_rows, " rows"
        is_uint64 = pa.types.is_uint64(typ)
        mode = self.keys.mode
        if mode == "auto":
            # uint64 values may not fit int64 keys: text keeps every one of them
            mode = "int" if is_int and not is_uint64 else "str"
            self.keys.chosen = mode
            if is_uint64:
                self.keys.how = "from the Parquet column type: uint64 may exceed int64"
        rows = 0
        self._pos = lambda: rows
        try:
            for batch in pf.iter_batches(batch_size=self.chunk_size, columns=[column]):
                arr = batch.column(0)
                rows += len(arr)
                if pa.types.is_dictionary(arr.type):
                    arr = arr.dictionary_decode()
                if arr.null_count:
                    self.skipped += arr.null_count
                    arr = pc.drop_null(arr)
                if not len(arr):
                    continue
                if is_str and not pa.types.is_large_string(arr.type):
                    arr = arr.cast(pa.large_string())
                if mode == "str" and is_int:
                    arr = arr.cast(pa.large_string())
                elif mode == "int" and is_str:
                    arr = _lenient_ints(pc.utf8_trim_whitespace(arr))
                elif mode == "int":
                    if is_uint64:  # --int-keys: values above the int64 range are dropped
                        arr = arr.filter(pc.less_equal(arr, pa.scalar(_INT64_MAX, pa.uint64())))
                    arr = np.asarray(arr.cast(pa.int64()).to_numpy())
                if len(arr):
                    yield arr
        except (pa.ArrowException, OSError) as exc:
            if isinstance(exc, (InputError, InputUsageError)):  # pragma: no cover
                raise
            raise InputError(f"cannot read {self.where()} as Parquet: {first_line(exc)}") from None
