"""The plumbing every input reader shares (dpsketch.io.input and its readers: text, delimited,
columnar, logs): the two error types, the input's name and format, byte streams (files, stdin,
gzip inflated by ISA-L or zlib), reading a generator ahead in a thread, the filter that drops lines
longer than the limit, and small helpers on Arrow and numpy columns. It reads no format itself and
imports no feature module."""

from __future__ import annotations

import io
import os
import stat
import sys
import threading
from typing import Any, Callable

import numpy as np

from .options import RunError, UsageError

_COLUMNAR = ("parquet", "arrow")  # typed columns: the schema decides the key type
_ON_BAD_CODE = {"error": 0, "skip": 1, "replace": 2}  # dpsketch._core.split_lines(on_bad=)
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



class Plumbing:
    """What every reader of :class:`dpsketch.io.input.Source` uses: the name shown in messages, the
    progress position, the raw byte streams (``_open_bytes`` through pyarrow, ``_timed_blocks`` for
    CSV windows and ``--follow``), errors turned into one line, and the bad-line counter. The
    readers (text, delimited, columnar, logs) derive from it; the state below is set by
    ``Source.__init__`` (declared here for the type checker)."""

    path: str
    format: str
    log: Any
    column: Any
    privacy_id: Any
    no_header: bool
    delimiter: str
    col_index: Any
    id_index: Any
    chunk_size: int
    max_line_bytes: int
    utf8: bool
    encoding: str
    keys: Any
    ids: Any
    on_bad_line: str
    name_positions: bool
    bad_lines: int
    skipped: int
    skipped_what: str
    total: Any
    unit: str
    _pos: Callable[[], Any]
    _counting: threading.Lock
    _cancel: threading.Event

    def _keyed(self, items: Any) -> Any:  # Source's: key batches of at most chunk_size items
        raise NotImplementedError

    def _table_batches(self) -> Any:  # Source's: a CSV's or a log's item (and id) columns
        raise NotImplementedError

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

    def position(self):
        return self._pos()

    def where(self) -> str:
        return display(self.path)

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

    def _count_bad(self):
        with self._counting:  # Arrow may call the row handler from its parsing threads
            self.bad_lines += 1
