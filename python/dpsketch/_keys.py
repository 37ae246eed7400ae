"""Key handling: a summary's key type ('int' or 'str') is fixed by its first update or by
``key_type=``; batches are converted to what the native core takes without silent truncation."""

from __future__ import annotations

import numbers

import numpy as np

KEY_TYPES = ("int", "str")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def check_key_type(key_type):
    if key_type is None or key_type in KEY_TYPES:
        return key_type
    if key_type is int:
        return "int"
    if key_type is str:
        return "str"
    raise ValueError(f"key_type must be 'int' or 'str', got {key_type!r}")


def key_type_of(item) -> str:
    """The key type of one item, or TypeError for anything that is not an int or a str."""
    if isinstance(item, str):
        return "str"
    if isinstance(item, (bool, np.bool_)):
        raise TypeError("keys must be int or str, got bool; convert it to int explicitly")
    if isinstance(item, numbers.Integral):
        return "int"
    raise TypeError(f"keys must be int or str, got {type(item).__name__}")


def as_int_key(item) -> int:
    v = int(item)
    if not _INT64_MIN <= v <= _INT64_MAX:
        # The value is not echoed: error messages must not carry keys (docs/algorithms.md §0).
        raise OverflowError("an integer key does not fit in a signed 64-bit integer (-2**63 .. 2**63-1); map such keys to str or hash them first")
    return v


def batch_key_type(items) -> str:
    """Key type of a batch (numpy array, pyarrow array, or sequence), from its dtype or first element."""
    if isinstance(items, np.ndarray):
        if items.ndim != 1:
            raise ValueError(f"expected a 1-D batch of keys, got an array of shape {items.shape}")
        if items.dtype.kind in "iu":
            return "int"
        if items.dtype.kind == "U":
            return "str"
        if items.dtype.kind == "O":
            return key_type_of(items[0]) if len(items) else "int"
        raise TypeError(
            f"cannot use a numpy array of dtype {items.dtype} as keys; pass integers (int64) or str"
        )
    if _is_arrow(items):
        import pyarrow as pa

        t = items.type
        if pa.types.is_integer(t):
            return "int"
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return "str"
        raise TypeError(f"cannot use a pyarrow array of type {t} as keys; pass integers or strings")
    if isinstance(items, (str, bytes)):
        raise TypeError("update_many takes a sequence of keys, not a single string; use update(key)")
    for first in items:
        if isinstance(first, (list, tuple, np.ndarray)):
            raise ValueError("expected a 1-D batch of keys, got a nested sequence")
        return key_type_of(first)
    return "int"


def int_batch(items) -> np.ndarray:
    """A C-contiguous int64 array with exactly the given values, or a clear error."""
    if _is_arrow(items):
        if items.null_count:
            raise ValueError("keys contain nulls; drop or fill them before updating")
        items = items.to_numpy(zero_copy_only=False)
    if not isinstance(items, np.ndarray):
        return _int_sequence(items)
    arr = items
    if arr.ndim != 1:
        raise ValueError(f"expected a 1-D batch of keys, got shape {arr.shape}")
    kind = arr.dtype.kind
    if kind == "i":
        return np.ascontiguousarray(arr, dtype=np.int64)
    if kind == "u":
        if arr.dtype.itemsize == 8 and arr.size and arr.max() > _INT64_MAX:
            raise OverflowError("uint64 key above 2**63-1 does not fit in a signed 64-bit integer")
        return np.ascontiguousarray(arr, dtype=np.int64)
    if kind == "b":
        raise TypeError("keys must be int or str, got a bool array; convert it to int explicitly")
    if kind == "O" or kind == "U":
        out = np.empty(arr.shape[0], dtype=np.int64)
        for i, x in enumerate(arr.tolist()):
            if key_type_of(x) != "int":
                raise TypeError(f"element {i} is a {type(x).__name__}, but this summary's keys are int")
            out[i] = as_int_key(x)
        return out
    raise TypeError(f"cannot use values of dtype {arr.dtype} as int keys (floats are not keys); cast explicitly")


def _int_sequence(items) -> np.ndarray:
    """A Python sequence of int keys as int64, element by element semantics: bools, floats and strs
    are TypeErrors and out-of-range ints OverflowErrors (np.asarray would silently turn True into 1,
    or a mix of negative and >= 2**63 ints into float64)."""
    items = items if isinstance(items, (list, tuple)) else list(items)
    if set(map(type, items)) <= {int}:
        try:
            return np.array(items, dtype=np.int64)
        except OverflowError:
            pass  # report the offending element below
    out = np.empty(len(items), dtype=np.int64)
    for i, x in enumerate(items):
        if isinstance(x, (list, tuple, np.ndarray)):
            raise ValueError("expected a 1-D batch of keys, got a nested sequence")
        if key_type_of(x) != "int":
            raise TypeError(f"element {i} is a {type(x).__name__}, but this summary's keys are int")
        out[i] = as_int_key(x)
    return out


def feed_str_batch(impl, items) -> None:
    """Feed a batch of str keys: numpy str/object arrays and sequences go straight to the core;
    pyarrow string arrays pass their UTF-8 buffer and offsets without per-item Python objects."""
    if _is_arrow(items):
        import pyarrow as pa

        if isinstance(items, pa.ChunkedArray):
            if items.null_count:  # checked up front: a bad later chunk must not leave earlier ones fed
                raise ValueError("keys contain nulls; drop or fill them before updating")
            for chunk in items.chunks:
                feed_str_batch(impl, chunk)
            return
        if items.null_count:
            raise ValueError("keys contain nulls; drop or fill them before updating")
        if pa.types.is_string(items.type):
            items = items.cast(pa.large_string())
        _validity, offsets_buf, data_buf = items.buffers()
        offsets = np.frombuffer(offsets_buf, dtype=np.int64)[items.offset : items.offset + len(items) + 1]
        data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
        impl.update_many_utf8(data, np.ascontiguousarray(offsets))
        return
    impl.update_many(items)


def _is_arrow(items) -> bool:
    mod = type(items).__module__
    return mod.startswith("pyarrow")
