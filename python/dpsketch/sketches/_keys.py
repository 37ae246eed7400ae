"""Key handling: a summary's key type ('int' or 'str') is fixed by its first update or by
``key_type=``; batches are converted to what the native core takes without silent truncation."""

from __future__ import annotations

import numbers

import numpy as np

from ..errors import IntegerRangeError, ParameterError, ParameterTypeError

KEY_TYPES = ("int", "str")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def check_key_type(key_type):
    if key_type is None or key_type in KEY_TYPES:
        return key_type
    if key_type is int:
        return "int"
    if key_type is str:
        return "str"
    raise ParameterError(f"key_type must be 'int' or 'str', got {key_type!r}")


def key_type_of(item) -> str:
    """The key type of one item, or TypeError for anything that is not an int or a str."""
    if isinstance(item, str):
        return "str"
    if isinstance(item, (bool, np.bool_)):
        raise ParameterTypeError("keys must be int or str, got bool; convert it to int explicitly")
    if isinstance(item, numbers.Integral):
        return "int"
    raise ParameterTypeError(f"keys must be int or str, got {type(item).__name__}")


def as_int_key(item) -> int:
    v = int(item)
    if not _INT64_MIN <= v <= _INT64_MAX:
        # The value is not echoed: error messages must not carry keys (docs/algorithms.md §0).
        raise IntegerRangeError("an integer key does not fit in a signed 64-bit integer (-2**63 .. 2**63-1); map such keys to str or hash them first")
    return v


def as_str_key(item: str) -> str:
    """``item`` if it can be stored as UTF-8; a lone surrogate is a ValueError that does not echo it."""
    if not item.isascii():
        try:
            item.encode("utf-8")
        except UnicodeEncodeError:
            raise ParameterError(
                "a str key contains a lone surrogate code point and is not valid Unicode (typical of "
                "bytes decoded with errors='surrogateescape'); decode the input properly or clean the keys"
            ) from None
    return item


# -- user containers ------------------------------------------------------------------------------

_TABLE_FIX = {
    "pandas": "pass one column, e.g. update_many(df['column'])",
    "polars": "pass one column, e.g. update_many(df['column']) or df.get_column('column')",
    "pyarrow": "pass one column, e.g. update_many(table.column('column'))",
}


class Utf8Lines:
    """A batch of str keys as one UTF-8 byte buffer and int64 offsets (Arrow's large_string layout:
    key i is ``data[offsets[i]:offsets[i + 1]]``), as the text reader of dpsketch._input makes it
    without pyarrow. The bytes are valid UTF-8 (checked by the reader); ``update_many`` feeds them
    to the core without a Python object per key. ``hashes``, when the reader was asked for them, are
    the keys' slot-table hashes computed in its split thread (``split_lines(table_hashes=True)``):
    a counter summary then skips hashing on the updating thread."""

    __slots__ = ("data", "offsets", "hashes")

    def __init__(self, data: np.ndarray, offsets: np.ndarray, hashes: np.ndarray | None = None) -> None:
        self.data = data
        self.offsets = offsets
        self.hashes = hashes

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def slice(self, start: int, length: int) -> "Utf8Lines":
        """Keys start .. start+length-1 (a view: the bytes are shared)."""
        hashes = None if self.hashes is None else self.hashes[start : start + length]
        return Utf8Lines(self.data, self.offsets[start : start + length + 1], hashes)

    def to_pylist(self) -> list:
        blob, off = self.data.tobytes(), self.offsets.tolist()
        return [blob[a:b].decode("utf-8") for a, b in zip(off, off[1:])]

    def __iter__(self):
        return iter(self.to_pylist())

    def to_arrow(self):
        """The keys as a pyarrow large_string array (shares the buffers)."""
        import pyarrow as pa

        return pa.Array.from_buffers(pa.large_string(), len(self), [None, pa.py_buffer(self.offsets),
                                                                     pa.py_buffer(self.data)])


def normalize_batch(items, keep_views: bool = False):
    """A user container as something the feeders take: a numpy array, a pyarrow Array/ChunkedArray of
    integers or (large_)strings, or the object itself (sequences). Zero-copy where the data allow:
    numpy-backed pandas columns and Arrow-backed ones (pandas ArrowDtype, "string[pyarrow]",
    polars) are viewed, not copied. Tables are a TypeError naming the fix. ``keep_views``: Arrow
    string views (polars' strings) stay views, for :func:`feed_str_batch`, which reads them in
    place; otherwise they are cast to large_string."""
    mod = type(items).__module__.partition(".")[0]
    if mod in ("pandas", "polars", "pyarrow"):
        name = type(items).__name__
        if name in ("DataFrame", "LazyFrame", "Table", "RecordBatch"):
            raise ParameterTypeError(
                f"update_many got a {mod} {name}, which holds several columns; {_TABLE_FIX[mod]}"
            )
        if mod == "pandas":
            return _from_pandas(items)
        if mod == "polars":
            if name != "Series":
                raise ParameterTypeError(f"cannot use a polars {name} as keys; pass a polars Series")
            return _from_arrow(_polars_arrow(items, keep_views), keep_views)
        return _from_arrow(items, keep_views)
    return items


def _polars_arrow(series, keep_views: bool):
    """A polars Series as Arrow. Its strings are views in polars; ``to_arrow()`` copies them into a
    large_string array (a transient the size of the column), so with ``keep_views`` a String
    Series is exported as the views themselves (CompatLevel.newest(), zero-copy)."""
    import sys

    pl = sys.modules["polars"]
    if keep_views and hasattr(pl, "CompatLevel") and series.dtype == pl.String:
        return series.to_arrow(compat_level=pl.CompatLevel.newest())
    return series.to_arrow()


def _from_pandas(items):
    import pandas as pd

    if isinstance(items, (pd.Index, pd.Series)):
        if isinstance(items, pd.MultiIndex):
            raise ParameterTypeError("cannot use a pandas MultiIndex as keys; pass one level")
        dtype = items.dtype
        values = items.array if isinstance(items, pd.Series) else items.array
    else:  # an ExtensionArray or Categorical passed directly
        dtype, values = items.dtype, items
    if isinstance(dtype, np.dtype):
        arr = np.asarray(values)
        if dtype.kind == "O" and len(arr) and pd.isna(arr).any():
            raise ParameterError("keys contain nulls (None/NaN); drop or fill them before updating")
        if dtype.kind == "f":
            raise ParameterTypeError(f"cannot use values of dtype {dtype} as keys (floats are not keys); cast explicitly")
        return arr
    if type(dtype).__name__ == "StringDtype" and getattr(dtype, "storage", "") == "python":
        # str objects (or pd.NA) in an object array: the C++ sequence feeder checks every element
        # anyway and rejects a null with the same ValueError, so a separate NA pass would only cost time.
        arr = np.asarray(values.to_numpy(dtype=object))
        if len(arr) and arr[0] is pd.NA:  # the batch's key type is read from its first element
            raise ParameterError("keys contain nulls (NA); drop or fill them before updating")
        return arr
    if pd.isna(values).any():
        raise ParameterError("keys contain nulls (NA); drop or fill them before updating")
    if isinstance(dtype, pd.CategoricalDtype):
        import pyarrow as pa

        cat = values if isinstance(values, pd.Categorical) else pd.Categorical(values)
        codes = np.asarray(cat.codes)
        return _from_arrow(pa.DictionaryArray.from_arrays(codes, _from_pandas(pd.Index(cat.categories))))
    kind = getattr(dtype, "kind", "O")
    if kind in "iu" and not hasattr(values, "__arrow_array__") or type(dtype).__name__.endswith("IntegerDtype"):
        return np.asarray(values.to_numpy(dtype=dtype.numpy_dtype))  # masked ints without NA: a view
    if hasattr(values, "__arrow_array__"):
        return _from_arrow(values.__arrow_array__())  # Arrow-backed: the buffers themselves
    if kind == "b":
        raise ParameterTypeError("keys must be int or str, got a bool column; convert it to int explicitly")
    return np.asarray(values.to_numpy())


def _from_arrow(arr, keep_views: bool = False):
    """Arrow array/chunked array of int or (large_)string; dictionaries decoded, views cast (kept
    with ``keep_views``)."""
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks == 1:
            return _from_arrow(arr.chunk(0), keep_views)
        if keep_views and _is_string_view(arr.type):
            return arr
        if pa.types.is_dictionary(arr.type) or _is_string_view(arr.type):
            chunks = [_from_arrow(c) for c in arr.chunks]
            return pa.chunked_array(chunks, type=chunks[0].type if chunks else pa.large_string())
        return arr
    if not isinstance(arr, pa.Array):
        raise ParameterTypeError(f"cannot use a pyarrow {type(arr).__name__} as keys; pass an Array or ChunkedArray")
    if pa.types.is_dictionary(arr.type):
        if arr.null_count:
            raise ParameterError("keys contain nulls; drop or fill them before updating")
        arr = arr.dictionary_decode()
    if _is_string_view(arr.type) and not keep_views:
        arr = arr.cast(pa.large_string())
    return arr


def _is_string_view(t) -> bool:
    import pyarrow as pa

    return hasattr(pa.types, "is_string_view") and pa.types.is_string_view(t)


def batch_key_type(items) -> str:
    """Key type of a batch (numpy array, pyarrow array, or sequence), from its dtype or first element."""
    if isinstance(items, Utf8Lines):
        return "str"
    if isinstance(items, np.ndarray):
        if items.ndim != 1:
            raise ParameterError(f"expected a 1-D batch of keys, got an array of shape {items.shape}")
        if items.dtype.kind in "iu":
            return "int"
        if items.dtype.kind in "UT":  # fixed-width str, or numpy 2's StringDType
            return "str"
        if items.dtype.kind == "O":
            return key_type_of(items[0]) if len(items) else "int"
        raise ParameterTypeError(
            f"cannot use a numpy array of dtype {items.dtype} as keys; pass integers (int64) or str"
        )
    if _is_arrow(items):
        import pyarrow as pa

        t = items.type
        if pa.types.is_integer(t):
            return "int"
        if pa.types.is_string(t) or pa.types.is_large_string(t) or _is_string_view(t):
            return "str"
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            raise ParameterTypeError(f"cannot use a pyarrow array of type {t} as keys; decode the bytes to str first")
        raise ParameterTypeError(f"cannot use a pyarrow array of type {t} as keys; pass integers or strings")
    if isinstance(items, (str, bytes)):
        raise ParameterTypeError("update_many takes a sequence of keys, not a single string; use update(key)")
    for first in items:
        if isinstance(first, (list, tuple, np.ndarray)):
            raise ParameterError("expected a 1-D batch of keys, got a nested sequence")
        return key_type_of(first)
    return "int"


def int_batch(items) -> np.ndarray:
    """A C-contiguous int64 array with exactly the given values, or a clear error."""
    if _is_arrow(items):
        if items.null_count:
            raise ParameterError("keys contain nulls; drop or fill them before updating")
        items = items.to_numpy(zero_copy_only=False)
    if not isinstance(items, np.ndarray):
        return _int_sequence(items)
    arr = items
    if arr.ndim != 1:
        raise ParameterError(f"expected a 1-D batch of keys, got shape {arr.shape}")
    kind = arr.dtype.kind
    if kind == "i":
        return np.ascontiguousarray(arr, dtype=np.int64)
    if kind == "u":
        if arr.dtype.itemsize == 8 and arr.size and arr.max() > _INT64_MAX:
            raise IntegerRangeError("uint64 key above 2**63-1 does not fit in a signed 64-bit integer")
        return np.ascontiguousarray(arr, dtype=np.int64)
    if kind == "b":
        raise ParameterTypeError("keys must be int or str, got a bool array; convert it to int explicitly")
    if kind in "OUT":
        out = np.empty(arr.shape[0], dtype=np.int64)
        for i, x in enumerate(arr.tolist()):
            if key_type_of(x) != "int":
                raise ParameterTypeError(f"element {i} is a {type(x).__name__}, but this summary's keys are int")
            out[i] = as_int_key(x)
        return out
    raise ParameterTypeError(f"cannot use values of dtype {arr.dtype} as int keys (floats are not keys); cast explicitly")


def _int_sequence(items) -> np.ndarray:
    """A Python sequence of int keys as int64, element by element semantics: bools, floats and strs
    are TypeErrors and out-of-range ints OverflowErrors (np.asarray would silently turn True into 1,
    or a mix of negative and >= 2**63 ints into float64)."""
    items = items if isinstance(items, (list, tuple)) else list(items)
    from .. import _core

    direct = _core.int_list_to_array(items)  # one C pass over exact ints in the int64 range
    if direct is not None:
        return direct
    out = np.empty(len(items), dtype=np.int64)
    for i, x in enumerate(items):
        if isinstance(x, (list, tuple, np.ndarray)):
            raise ParameterError("expected a 1-D batch of keys, got a nested sequence")
        if key_type_of(x) != "int":
            raise ParameterTypeError(f"element {i} is a {type(x).__name__}, but this summary's keys are int")
        out[i] = as_int_key(x)
    return out


def feed_str_batch(impl, items) -> None:
    """Feed a batch of str keys: numpy str/object arrays and sequences go straight to the core;
    pyarrow string arrays and Utf8Lines pass their UTF-8 buffer and offsets without per-item Python objects."""
    if isinstance(items, Utf8Lines):
        if items.hashes is not None and hasattr(impl, "update_many_utf8_hashed"):
            impl.update_many_utf8_hashed(items.data, items.offsets, items.hashes)
        else:
            impl.update_many_utf8(items.data, items.offsets)
        return
    if _is_arrow(items):
        import pyarrow as pa

        if isinstance(items, pa.ChunkedArray):
            if items.null_count:  # checked up front: a bad later chunk must not leave earlier ones fed
                raise ParameterError("keys contain nulls; drop or fill them before updating")
            for chunk in items.chunks:
                feed_str_batch(impl, chunk)
            return
        if items.null_count:
            raise ParameterError("keys contain nulls; drop or fill them before updating")
        items = _from_arrow(items, keep_views=hasattr(impl, "update_many_utf8_views"))
        if _is_string_view(items.type):  # polars' strings: read in place, 16 bytes of view per key
            buffers = items.buffers()
            views = np.frombuffer(buffers[1], dtype=np.uint8)[16 * items.offset : 16 * (items.offset + len(items))]
            data = [np.frombuffer(b, dtype=np.uint8) if b is not None else np.zeros(0, np.uint8) for b in buffers[2:]]
            impl.update_many_utf8_views(views, data)
            return
        _validity, offsets_buf, data_buf = items.buffers()
        # string arrays have int32 offsets, large_string int64: both read in place, no copy
        width = np.int32 if pa.types.is_string(items.type) else np.int64
        offsets = np.frombuffer(offsets_buf, dtype=width)[items.offset : items.offset + len(items) + 1]
        data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
        impl.update_many_utf8(data, offsets)
        return
    impl.update_many(items)


def _is_arrow(items) -> bool:
    mod = type(items).__module__
    return mod.startswith("pyarrow")
