"""Streams of batches for ``update_many``: Arrow record batch readers, anything exporting the
Arrow C stream interface (a DuckDB relation, ``pyarrow.RecordBatchReader.from_stream``), pyarrow
datasets and scanners, Arrow Flight stream readers, polars LazyFrames, tables and data frames, and iterators of arrays or
batches. A stream is read one batch at a time and each batch goes to the summary's own one-batch
``update_many`` (C++ with the GIL released), so memory stays at one batch and no Python object is
made per row.

The column rule: a batch with several columns needs ``column=`` (its name); a one-column batch is
its own column. ``column=`` on something that already is one column is an error. Nulls are
refused by the one-batch path (a ``ParameterError``), as for every ``update_many``: filter them
where the data come from (``WHERE q IS NOT NULL``, ``drop_nulls()``). A stream cannot be rewound,
so the batches read before a refused one stay added.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any, Callable, Iterator

import numpy as np

from ._keys import Utf8Lines
from ..errors import ParameterError, ParameterTypeError

_TABLE_MODULES = ("pandas", "polars", "pyarrow")
_FRAMES = ("DataFrame", "Table", "RecordBatch")
_COLUMNS = ("Series", "Array", "ChunkedArray", "Index")


def _module(obj) -> str:
    return type(obj).__module__.partition(".")[0]


def _is_frame(obj) -> bool:
    return _module(obj) in _TABLE_MODULES and type(obj).__name__ in _FRAMES


def _is_column(obj) -> bool:
    """One column already: numpy arrays, the text reader's Utf8Lines, pandas/polars Series, pyarrow
    arrays (also their subclasses such as StringArray, Int64Array), lists and tuples."""
    if isinstance(obj, (np.ndarray, Utf8Lines, list, tuple, str, bytes)):
        return True
    mod = _module(obj)
    if mod == "pyarrow":
        import pyarrow as pa

        return isinstance(obj, (pa.Array, pa.ChunkedArray))
    return mod in ("pandas", "polars") and type(obj).__name__ in _COLUMNS


def _is_batch(obj) -> bool:
    return (_is_column(obj) and not isinstance(obj, (str, bytes))) or _is_frame(obj)


def batches(items: Any, column: str | None) -> Iterator[Any] | None:
    """None when ``items`` is one batch of keys and ``column`` is None (the caller's one-batch path
    takes it as before); else an iterator of one-column batches, read lazily."""
    if column is not None and not isinstance(column, str):
        raise ParameterError(f"column must be a column name (str), got {type(column).__name__}")
    if _is_column(items):
        if column is not None:
            raise ParameterError("column= picks a column of a table, record batch or stream; "
                                 f"a {type(items).__name__} already is one column")
        return None
    if _is_frame(items):
        return iter([_pick(items, column)])
    mod, name = _module(items), type(items).__name__
    if mod == "polars" and name == "LazyFrame":
        return _lazy_frame(items, column)
    if mod == "pyarrow":
        import pyarrow as pa

        if isinstance(items, pa.RecordBatchReader):
            return _reader(items, column)
        if hasattr(items, "to_reader"):  # a pyarrow Scanner, or a Flight stream reader
            return _reader(items.to_reader(), column)
        if hasattr(items, "scanner") and hasattr(items, "schema"):  # a pyarrow dataset: read only the column
            return _reader(items.scanner(columns=[_name(items.schema.names, column)]).to_reader(), column)
    if hasattr(items, "__arrow_c_stream__"):  # e.g. a DuckDB relation, a nanoarrow stream
        import pyarrow as pa

        return _reader(pa.RecordBatchReader.from_stream(items), column)
    if iter(items) is items:  # an iterator or generator: of batches, or of single keys
        try:
            first = next(items)
        except StopIteration:
            return iter(())
        rest = itertools.chain([first], items)
        if _is_batch(first):
            return (_pick(b, column) if _is_frame(b) else _plain(b, column) for b in rest)
        if column is not None:
            raise ParameterError("column= picks a column of the batches of a stream; this iterator yields single keys")
        return iter([list(rest)])  # single keys, as for a list of them
    if column is not None:
        raise ParameterError(f"column= picks a column of a table, record batch or stream, not of a {name}")
    return None


def _plain(batch, column):
    if column is not None:
        raise ParameterError("column= picks a column of record batches or tables; this stream yields "
                             f"a {type(batch).__name__}, which already is one column")
    return batch


def _name(names, column) -> str:
    """The item column among ``names`` (column names are schema, not data: they may be shown)."""
    names = list(names)
    if column is None:
        if len(names) == 1:
            return names[0]
        shown = ", ".join(map(repr, names[:20])) + (", ..." if len(names) > 20 else "")
        raise ParameterTypeError(f"update_many got {len(names)} columns ({shown}); pick the key column with column='name'")
    if column not in names:
        shown = ", ".join(map(repr, names[:20])) + (", ..." if len(names) > 20 else "")
        raise ParameterError(f"no column {column!r}; the columns are {shown}")
    return column


def _pick(frame, column):
    """The item column of a pyarrow Table/RecordBatch, pandas or polars DataFrame."""
    mod = _module(frame)
    if mod == "pyarrow":
        return frame.column(_name(frame.schema.names, column))
    if mod == "polars":
        return frame.get_column(_name(frame.columns, column))
    labels = {str(c): c for c in frame.columns}  # pandas labels need not be str
    return frame[labels[_name(list(labels), column)]]


def _reader(reader, column):
    """The item column of each record batch of a pyarrow RecordBatchReader, one batch at a time."""
    name = _name(reader.schema.names, column)
    with reader:
        for batch in reader:
            yield batch.column(name)


def _lazy_frame(lf, column):
    """A polars LazyFrame, collected in batches of the item column only (the projection reaches
    the scan, e.g. of ``scan_parquet``)."""
    name = _name(lf.collect_schema().names(), column)
    if not hasattr(lf, "collect_batches"):
        raise ParameterError("this polars has no LazyFrame.collect_batches(); upgrade polars or pass "
                             "lf.collect() (the whole frame in memory)")
    for frame in lf.select(name).collect_batches():
        yield frame.get_column(name)


def _check_nulls(batch) -> None:
    """Arrow and polars columns say how many nulls they hold without a pass over the data."""
    mod = _module(batch)
    nulls = batch.null_count if mod == "pyarrow" else batch.null_count() if mod == "polars" else 0
    if nulls:
        raise ParameterError("keys contain nulls; drop or fill them before updating (e.g. WHERE col IS NOT NULL, "
                             "drop_nulls()); in a stream, the batches before this one stay added")


def streamed(method: Callable[[Any, Any, Any], None]) -> Callable[..., None]:
    """Give a one-batch ``update_many(items, counts)`` the stream forms of :func:`batches` and the
    ``column=`` argument; one batch at a time goes to ``method``."""

    @functools.wraps(method, assigned=("__module__", "__name__", "__qualname__", "__doc__"))
    def update_many(self: Any, items: Any, counts: Any = None, *, column: str | None = None) -> None:
        stream = batches(items, column)
        if stream is None:
            return method(self, items, counts)
        if counts is not None:
            raise ParameterError("counts= goes with one batch of keys (an array), not with a stream or a table")
        for batch in stream:
            _check_nulls(batch)
            method(self, batch, None)
        return None

    del update_many.__wrapped__  # the signature shown (help, docs) is this one, with column=
    update_many.__doc__ = (method.__doc__ or "").rstrip() + _UPDATE_MANY_PARAMS
    return update_many


_UPDATE_MANY_PARAMS = """

        :param items: the keys: an array or list (one batch), an iterable of batches, a pandas/polars
            Series, or a DataFrame / Arrow table / record-batch reader with ``column=``
        :param counts: one count per key of a single batch (default 1 each)
        :param column: the key column of a DataFrame or an Arrow table
        """
