"""Key-type dispatch onto the native classes (int64 or str keys) and reprs that never show keys,
on the shared guarded base (dpsketch._guarded: lock, release guard, bytes, pickling, copies)."""

from __future__ import annotations

import contextlib
from typing import Any, ClassVar, Iterator, Union

import numpy as np

from .. import _core
from ._guarded import Guarded, Serialized, locked  # noqa: F401  (locked: re-exported for the classes)
from ._streams import streamed
from ._keys import (Utf8Lines, as_int_key, batch_key_type, check_key_type, as_str_key, feed_str_batch, int_batch, key_type_of, normalize_batch)
from ..errors import ParameterError, ParameterTypeError

Key = Union[int, str]

_KEY_TAGS = {1: "int", 2: "str"}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UNTYPED = 0


class FastUpdated(Guarded):
    """A guarded object whose native structure lives in the state of the C fast path of ``update``
    (``dpsketch._core.make_fast_state``): the summaries, the sketches and the dyadic sketches."""

    # `_fast` (a _core.FastUpdateState) is a slot so that the native `update` finds it at a fixed
    # offset; it is also the only storage of `_impl` and of whether the key type is fixed, so the
    # fast path always updates the structure the object uses, under the object's lock.
    __slots__ = ("_fast", "__dict__", "__weakref__")
    # Whether the key type is fixed from construction (numbers only: the dyadic sketches).
    _key_type_fixed_at_start: ClassVar[bool] = False

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        obj = super().__new__(cls)
        obj._fast = _core.make_fast_state(None, obj._lock)
        if cls._key_type_fixed_at_start:
            obj._fast.fixed = True
        return obj

    _fast: Any  # _core.FastUpdateState

    @property
    def _impl(self) -> Any:
        """The native structure (stored in the fast-path state)."""
        return self._fast.impl

    @_impl.setter
    def _impl(self, impl: Any) -> None:
        self._fast.impl = impl


class Keyed(FastUpdated):
    """Key-type dispatch. Subclasses set ``_natives`` and implement ``_make(key_type)``."""

    __slots__ = ()

    @property
    def _key_type_fixed(self) -> bool:
        return self._fast.fixed  # type: ignore[no-any-return]

    @_key_type_fixed.setter
    def _key_type_fixed(self, fixed: bool) -> None:
        self._fast.fixed = fixed

    _natives: ClassVar[dict[str, Any]]
    # Linear sketches take signed counts (turnstile); counter summaries count each update once.
    _turnstile: ClassVar[bool] = False
    # Whether text lines hashed by the reader's split thread save this class work (Source.chunks
    # table_hashes=): the counter summaries' slot table uses that hash.
    _takes_table_hashes: ClassVar[bool] = False

    def __init__(self, key_type: str | None = None) -> None:
        key_type = check_key_type(key_type)
        self._key_type_fixed = key_type is not None
        self._key_type = key_type or "int"
        self._impl = self._make(self._key_type)

    # -- subclass hooks -------------------------------------------------------------------------
    def _make(self, key_type: str) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- key type -------------------------------------------------------------------------------
    @property
    def key_type(self) -> str | None:
        """'int' or 'str' once fixed (by the first update or ``key_type=``), else None."""
        return self._key_type if self._key_type_fixed else None

    def _settle(self, key_type: str) -> None:
        if self._key_type_fixed:
            if key_type != self._key_type:
                raise ParameterTypeError(
                    f"this {type(self).__name__} has {self._key_type} keys; got a {key_type} key. "
                    f"Use a separate summary per key type, or convert the keys."
                )
            return
        if key_type != self._key_type:
            self._impl = self._make(key_type)
            self._key_type = key_type
        self._key_type_fixed = True

    # -- updates --------------------------------------------------------------------------------
    @locked
    def update(self, item: Any, count: int = 1) -> None:
        """Add one occurrence of ``item`` (an int in the int64 range, or a str). Linear sketches also
        take a signed integer ``count`` (turnstile: negative deletes)."""
        if type(count) is not int or count != 1:
            c = self._check_count(count)
            if c != 1:
                self._update_counted(item, c)
                return
        # Plain ints and strs of a fixed key type normally never get here: once the key type is
        # fixed, `Keyed.update` (a _core.FastUpdate, see the end of this module) updates in C.
        kt = key_type_of(item)
        key = as_int_key(item) if kt == "int" else as_str_key(item)
        with self._unchanged_on_error():
            self._settle(kt)
            self._impl.update(key)

    @locked
    @streamed
    def update_many(self, items: Any, counts: Any = None) -> None:
        """Add every item of a batch, in order. Fast paths: numpy int64 arrays, numpy str arrays
        (fixed-width ``U`` and numpy 2's ``StringDType``), pyarrow string arrays (no per-item Python
        work, GIL released); any sequence of int/str works.
        Linear sketches also take ``counts``: one signed int64 count per item (turnstile).
        pandas/polars Series and pyarrow arrays are taken zero-copy where possible.

        Streams, one batch at a time (memory: one batch): a ``pyarrow.RecordBatchReader`` (e.g.
        DuckDB's ``to_arrow_reader()``), anything with ``__arrow_c_stream__`` (a DuckDB relation),
        a pyarrow dataset or scanner, an Arrow Flight stream reader, a polars LazyFrame, or an iterator of arrays, Series or record
        batches (polars ``collect_batches()``). A table, data frame or batch with several columns
        needs ``column=`` (the name of the key column). Nulls are refused (ParameterError); in a
        stream the batches before a refused one stay added (dpsketch._streams)."""
        items = normalize_batch(items, keep_views=True)
        if not isinstance(items, np.ndarray) and not hasattr(items, "__len__"):
            items = list(items)
        c = None if counts is None else self._check_counts(counts, len(items))
        if len(items) == 0:
            return
        kt = batch_key_type(items)
        with self._unchanged_on_error():
            self._settle(kt)
            if kt == "int":
                batch = int_batch(items)
                if c is None:
                    self._impl.update_many(batch)
                else:
                    self._impl.update_many_counted(batch, c)
            elif c is None:
                feed_str_batch(self._impl, items)
            else:
                if type(items).__module__.startswith("pyarrow") or isinstance(items, Utf8Lines):
                    items = items.to_pylist()
                self._impl.update_many_counted(items, c)

    def _check_count(self, count) -> int:
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
            raise ParameterTypeError(f"count must be an integer, got {type(count).__name__}")
        c = int(count)
        if not self._turnstile and c != 1:
            raise ParameterError(f"{type(self).__name__} counts every update once (insertion-only summary); "
                             "counts other than 1 are for the linear sketches (CountMin, CountSketch, ...)")
        if not -(2**62) <= c <= 2**62:
            raise ParameterError("count must be in [-2**62, 2**62]")
        return c

    def _check_counts(self, counts, m) -> np.ndarray:
        if not self._turnstile:
            raise ParameterError(f"{type(self).__name__} counts every update once (insertion-only summary); "
                             "counts are for the linear sketches (CountMin, CountSketch, ...)")
        c = np.asarray(counts)
        if c.ndim != 1 or len(c) != m:
            raise ParameterError("counts must be a 1-D integer array with one signed count per item")
        if c.size and c.dtype.kind not in "iu":
            raise ParameterTypeError(f"counts must be integers, got dtype {c.dtype}")
        if c.dtype.kind == "u" and c.size and c.max() > 2**62:
            raise ParameterError("counts must be in [-2**62, 2**62]")
        return np.ascontiguousarray(c, dtype=np.int64)

    def _update_counted(self, item, count: int) -> None:
        kt = key_type_of(item)
        key = as_int_key(item) if kt == "int" else as_str_key(item)
        with self._unchanged_on_error():
            self._settle(kt)
            self._impl.update_counted(key, count)

    @contextlib.contextmanager
    def _unchanged_on_error(self) -> Iterator[None]:
        """A rejected update must not fix the key type either (the native feeders are all-or-nothing)."""
        saved = (self._impl, self._key_type, self._key_type_fixed)
        try:
            yield
        except BaseException:
            self._impl, self._key_type, self._key_type_fixed = saved
            raise

    def _checked_key(self, item):
        kt = key_type_of(item)
        if self._key_type_fixed and kt != self._key_type:
            raise ParameterTypeError(f"this {type(self).__name__} has {self._key_type} keys; got a {kt} key")
        if not self._key_type_fixed and kt != self._key_type:
            return None  # nothing of that type was ever added
        return as_int_key(item) if kt == "int" else as_str_key(item)

    @locked
    def estimate(self, item: Key) -> int | float:
        """Estimated frequency of ``item``."""
        key = self._checked_key(item)
        return 0 if key is None else self._impl.estimate(key)

    def __repr__(self) -> str:
        # Never shows keys: reprs end up in logs.
        return f"{type(self).__name__}({self._repr_fields()}, key_type={self.key_type!r}, n={self.n})"


class SerializedKeyed(Keyed, Serialized):
    """A keyed summary or sketch that serializes. An empty one whose key type is not fixed yet is
    written with key tag 0 ("untyped", the int layout) and reads back untyped."""

    __slots__ = ()

    def _stamped(self) -> Any:
        impl = super()._stamped()
        impl.untyped = not self._key_type_fixed
        return impl

    @classmethod
    def _native_reader(cls, data: bytes) -> Any:
        from ..errors import CorruptBytesError

        key_type = "int" if data[6] == _UNTYPED else _KEY_TAGS.get(data[6])
        if key_type is None:
            raise CorruptBytesError(f"corrupt or incompatible dpsketch bytes: unknown key type tag {data[6]}")
        return cls._natives[key_type]

    def _restored(self, data: bytes) -> None:
        self._key_type = "int" if data[6] == _UNTYPED else _KEY_TAGS[data[6]]
        self._key_type_fixed = not self._impl.untyped
        self._restore_params()

    def _restore_params(self) -> None:
        """Subclasses re-derive their Python-side parameters from the restored native object."""

    def __reduce__(self):
        return (_restore, (type(self), self.to_bytes(), self._key_type_fixed))


# `obj.update(x)`: one plain int/str with the key type fixed runs in C under the object's lock; any
# other call (counts, other types, errors, a changed native structure) runs the Python method above.
Keyed.update = _core.FastUpdate(Keyed.update)  # type: ignore[method-assign]
_core.register_fast_class(FastUpdated)

def _restore(cls, data, key_type_fixed):
    """Unpickle: the bytes, and whether the key type was fixed; fixed if either of them says so."""
    obj = cls.from_bytes(data)
    obj._key_type_fixed = bool(key_type_fixed) or obj._key_type_fixed
    return obj
