"""Base class of every public summary/sketch: key-type dispatch onto the native classes,
serialization, pickling and reprs that never show keys."""

from __future__ import annotations

import contextlib
import functools
from typing import Any, ClassVar

import numpy as np

from . import _core
from ._keys import (
    as_int_key,
    as_str_key,
    batch_key_type,
    check_key_type,
    feed_str_batch,
    int_batch,
    key_type_of,
    normalize_batch,
)

_KEY_TAGS = {1: "int", 2: "str"}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UNTYPED = 0
_HEADER = 8


def locked(method):
    """Run ``method`` holding the object's lock. Batch calls release the GIL inside C++, so without
    it another thread could read or mutate the same native structure mid-batch (a crash, not just a
    wrong answer). Objects are safe to share between threads; calls on one object serialize. The
    lock is a native re-entrant ObjectLock so that the C-level ``update`` fast path takes it too."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper


class Keyed:
    """Shared machinery. Subclasses set ``_natives`` and implement ``_make(key_type)``."""

    def __new__(cls, *args, **kwargs):
        obj = super().__new__(cls)
        obj._lock = _core.ObjectLock()
        return obj

    _natives: ClassVar[dict[str, Any]]
    _family: ClassVar[int]

    def __init__(self, key_type=None):
        key_type = check_key_type(key_type)
        self._key_type_fixed = key_type is not None
        self._key_type = key_type or "int"
        self._impl = self._make(self._key_type)
        self._bind_fast_update()

    # -- subclass hooks -------------------------------------------------------------------------
    def _make(self, key_type: str):  # pragma: no cover - abstract
        raise NotImplementedError

    # -- key type -------------------------------------------------------------------------------
    @property
    def key_type(self) -> str | None:
        """'int' or 'str' once fixed (by the first update or ``key_type=``), else None."""
        return self._key_type if self._key_type_fixed else None

    def _settle(self, key_type: str) -> None:
        if self._key_type_fixed:
            if key_type != self._key_type:
                raise TypeError(
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
    def update(self, item) -> None:
        """Add one occurrence of ``item`` (an int in the int64 range, or a str).

        After the key type is fixed, ``obj.update`` is a native callable that takes the same lock and
        handles plain ints and strs in C; everything else comes back here."""
        kt = key_type_of(item)
        key = as_int_key(item) if kt == "int" else as_str_key(item)
        with self._unchanged_on_error():
            self._settle(kt)
            self._impl.update(key)
        self._bind_fast_update()

    def _bind_fast_update(self) -> None:
        """Give the instance a native ``update`` (created once, re-pointed when ``_impl`` changes),
        so even ``f = obj.update`` taken before the first update is fast. Only for classes that
        do not override ``update``: their checks must keep running."""
        if type(self).update is not Keyed.update:
            return
        fast = self.__dict__.get("update")
        if fast is None:
            # holds `self` weakly: no reference cycle, so `del obj` still frees the native memory
            self.__dict__["update"] = _core.make_updater(self._impl, self._lock, self, Keyed.update)
        elif fast.impl is not self._impl:
            fast.rebind(self._impl)

    @locked
    def update_many(self, items) -> None:
        """Add every item of a batch, in order. Fast paths: numpy int64 arrays, numpy str arrays,
        pyarrow string arrays (no per-item Python work, GIL released); any sequence of int/str works."""
        items = normalize_batch(items)
        if not isinstance(items, np.ndarray) and not hasattr(items, "__len__"):
            items = list(items)
        if len(items) == 0:
            return
        kt = batch_key_type(items)
        with self._unchanged_on_error():
            self._settle(kt)
            if kt == "int":
                self._impl.update_many(int_batch(items))
            else:
                feed_str_batch(self._impl, items)

    @contextlib.contextmanager
    def _unchanged_on_error(self):
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
            raise TypeError(f"this {type(self).__name__} has {self._key_type} keys; got a {kt} key")
        if not self._key_type_fixed and kt != self._key_type:
            return None  # nothing of that type was ever added
        return as_int_key(item) if kt == "int" else as_str_key(item)

    @locked
    def estimate(self, item):
        """Estimated frequency of ``item``."""
        key = self._checked_key(item)
        return 0 if key is None else self._impl.estimate(key)

    # -- size -----------------------------------------------------------------------------------
    @property
    @locked
    def n(self) -> int:
        """Number of items added so far."""
        return self._impl.n

    @locked
    def memory_bytes(self) -> int:
        """Bytes of memory held by the native structure (including string key storage)."""
        return self._impl.memory_bytes()

    # -- serialization --------------------------------------------------------------------------
    @locked
    def to_bytes(self) -> bytes:
        """Serialize (versioned little-endian format; see docs/format.md). An empty summary whose
        key type is not fixed yet is written with key tag 0 ("untyped")."""
        data = self._impl.to_bytes()
        if not self._key_type_fixed:
            data = data[:6] + bytes([_UNTYPED]) + data[7:]
        return data

    @classmethod
    def from_bytes(cls, data):
        """Rebuild from ``to_bytes()`` output. Corrupt or mismatched bytes raise ValueError."""
        if isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        if not isinstance(data, bytes):
            raise TypeError(f"from_bytes expects bytes, got {type(data).__name__}")
        if len(data) < _HEADER or data[:4] != b"DPSK":
            raise ValueError("corrupt or incompatible dpsketch bytes: not dpsketch bytes (bad magic or too short)")
        if data[5] != cls._family:
            raise ValueError(
                f"corrupt or incompatible dpsketch bytes: these bytes do not hold a {cls.__name__}"
            )
        untyped = data[6] == _UNTYPED
        if untyped:  # an empty summary written before its key type was fixed: int layout
            data = data[:6] + b"\x01" + data[7:]
        key_type = _KEY_TAGS.get(data[6])
        if key_type is None:
            raise ValueError(f"corrupt or incompatible dpsketch bytes: unknown key type tag {data[6]}")
        obj = cls.__new__(cls)
        obj._impl = cls._natives[key_type].from_bytes(data)
        if untyped and obj._impl.n != 0:
            raise ValueError("corrupt or incompatible dpsketch bytes: an untyped summary must be empty")
        obj._key_type = key_type
        obj._key_type_fixed = not untyped
        obj._restore_params()
        obj._bind_fast_update()
        return obj

    def _restore_params(self) -> None:
        """Subclasses re-derive their Python-side parameters from the restored native object."""

    def __reduce__(self):
        return (_restore, (type(self), self.to_bytes(), self._key_type_fixed))

    def __copy__(self):
        return _restore(type(self), self.to_bytes(), self._key_type_fixed)

    def __deepcopy__(self, memo):
        return self.__copy__()

    def _repr_fields(self) -> str:  # pragma: no cover - overridden
        return ""

    def __repr__(self) -> str:
        # Never shows keys: reprs end up in logs.
        return f"{type(self).__name__}({self._repr_fields()}, key_type={self.key_type!r}, n={self.n})"


def _restore(cls, data, key_type_fixed):
    """Unpickle/copy (kept for pickles made before the untyped tag existed)."""
    obj = cls.from_bytes(data)
    obj._key_type_fixed = bool(key_type_fixed) or obj._key_type_fixed
    return obj
