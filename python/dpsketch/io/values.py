"""Key typing and number parsing of the input readers: :class:`KeyTyper` (``--int-keys``,
``--str-keys``, auto), the lenient integer reading of text keys, the numbers of ``dpsketch quantiles``
read value by value, and event times (epoch seconds or ISO 8601). Each value is read on its own, so a
neighbouring input changes at most one key, number or time."""

from __future__ import annotations

import re

import numpy as np

from ..errors import ParameterError
from .streams import _COLUMNAR, _DIGIT, _pa

_LENIENT_INT = r"^[+-]?[0-9]+$"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


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
            self.chosen, self.how = "str", f"{'a log field' if format == 'log' else 'text input'}; {int_option}"

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

