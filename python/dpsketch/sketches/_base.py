"""The Python side of every summary and sketch, kept to at most two levels over the native class:
:class:`Summary` (native structure, lock, release guard) and the mixins :class:`Serialized`
(bytes, pickling, copies), :class:`KeyDispatch` (int/str keys onto the native classes) and
:class:`Publishable` (private sketches published once). A public class is ``Name(Summary, mixins)``
or ``Name(_Family)`` with ``_Family(mixins..., Summary)``."""

from __future__ import annotations

import contextlib
import functools
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterator, TypeVar, Union, cast

import numpy as np

from .. import _core
from ..errors import ParameterError, ParameterTypeError
from ._keys import (Utf8Lines, as_int_key, as_str_key, batch_key_type, check_key_type, feed_str_batch, int_batch,
                    key_type_of, normalize_batch)
from ._release_state import stamp
from ._streams import streamed

_F = TypeVar("_F", bound=Callable[..., Any])
_S = TypeVar("_S", bound="Serialized")

HEADER = 8  # magic (4), version, family, key tag, flags: docs/format.md
Key = Union[int, str]

_KEY_TAGS = {1: "int", 2: "str"}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UNTYPED = 0


def locked(method: _F) -> _F:
    """Run ``method`` holding the object's lock. Batch calls release the GIL inside C++, so without
    it another thread could read or mutate the same native structure mid-batch (a crash, not just a
    wrong answer). Objects are safe to share between threads; calls on one object serialize. The
    lock is a native re-entrant ObjectLock so that the C-level ``update`` fast path takes it too."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return cast(_F, wrapper)


class Summary:
    """What every summary and sketch shares: the native structure (``_impl``, stored in the state
    of the C fast path of ``update``: ``dpsketch._core.make_fast_state``), a re-entrant lock, the
    release-once guard (docs/privacy.md §Publishing and the release-once rule), ``n`` and
    ``memory_bytes``. The mixins below add bytes (:class:`Serialized`), int/str key dispatch
    (:class:`KeyDispatch`) and the publishing of private sketches (:class:`Publishable`); a public
    class is at most two levels over this one."""

    # `_fast` (a _core.FastUpdateState) is a slot so that the native `update` finds it at a fixed
    # offset; it is also the only storage of `_impl` and of whether the key type is fixed, so the
    # fast path always updates the structure the object uses, under the object's lock.
    __slots__ = ("_fast", "__dict__", "__weakref__")
    _lock: Any  # _core.ObjectLock
    _fast: Any  # _core.FastUpdateState
    # Serialized with the object (header flags + trailer, docs/format.md): no copy path resets them.
    _published = False
    _reproducible_not_secret = False
    # Whether the key type is fixed from construction (numbers only: the dyadic sketches).
    _key_type_fixed_at_start: ClassVar[bool] = False

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        obj = super().__new__(cls)
        obj._lock = _core.ObjectLock()
        obj._fast = _core.make_fast_state(None, obj._lock)
        if cls._key_type_fixed_at_start:
            obj._fast.fixed = True
        return obj

    @property
    def _impl(self) -> Any:
        """The native structure (stored in the fast-path state)."""
        return self._fast.impl

    @_impl.setter
    def _impl(self, impl: Any) -> None:
        self._fast.impl = impl

    @property
    def _guard(self):
        from ..release import ReleaseGuard

        g = self.__dict__.get("_release_guard")
        if g is None:
            g = self.__dict__["_release_guard"] = ReleaseGuard()
        return g

    @property
    @locked
    def n(self) -> int:
        """Number of items added so far (linear and dyadic sketches: the net count, insertions minus
        deletions)."""
        return self._impl.n  # type: ignore[no-any-return]

    @locked
    def memory_bytes(self) -> int:
        """Bytes of memory held by the native structure (including string key storage)."""
        return self._impl.memory_bytes()  # type: ignore[no-any-return]

    def _repr_fields(self) -> str:  # pragma: no cover - overridden
        return ""


# The mixins are plain classes at run time (so a public class stays two levels over Summary); type
# checkers see them as what they extend.
if TYPE_CHECKING:
    _SummaryForTypes = Summary
else:
    _SummaryForTypes = object


class Serialized(_SummaryForTypes):
    """Mixin of the classes that serialize: bytes (docs/format.md), pickling and copies. The native
    structure writes and validates every byte, release state included; in-process copies share the
    original's release guard."""

    __slots__ = ()
    _family: ClassVar[int]

    def _stamped(self) -> Any:
        """The native structure with the release state set, ready to write."""
        return stamp(self._impl, self._guard.count, self._published, self._reproducible_not_secret)

    @locked
    def to_bytes(self) -> bytes:
        """Serialize (versioned little-endian format; docs/format.md), release state included."""
        return self._stamped().to_bytes()  # type: ignore[no-any-return]

    @locked
    def serialized_size(self) -> int:
        """``len(self.to_bytes())``, computed by the native structure without writing the bytes."""
        return int(self._stamped().serialized_size())

    @classmethod
    def _native_reader(cls, data: bytes) -> Any:  # pragma: no cover - overridden
        """The native class that reads ``data`` (after the magic and family checks)."""
        raise NotImplementedError

    def _restored(self, data: bytes) -> None:
        """Subclasses re-derive their Python-side state from the restored native object."""

    @classmethod
    def from_bytes(cls: type[_S], data: bytes | bytearray | memoryview) -> _S:
        """Rebuild from ``to_bytes()`` output. Corrupt or mismatched bytes raise
        :class:`dpsketch.CorruptBytesError` (a ValueError).

        :param data: bytes written by ``to_bytes()``
        """
        from ..errors import CorruptBytesError
        from ..release import ReleaseGuard

        if isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        if not isinstance(data, bytes):
            raise ParameterTypeError(f"from_bytes expects bytes, got {type(data).__name__}")
        if len(data) < HEADER or data[:4] != b"DPSK":
            raise CorruptBytesError("corrupt or incompatible dpsketch bytes: not dpsketch bytes (bad magic or too short)")
        if data[5] != cls._family:
            raise CorruptBytesError(f"corrupt or incompatible dpsketch bytes: these bytes do not hold a {cls.__name__}")
        obj = cls.__new__(cls)
        obj._impl = impl = cls._native_reader(data).from_bytes(data)  # validates every header bit and the trailer
        obj.__dict__["_release_guard"] = ReleaseGuard(impl.release_count)
        obj._published = impl.published
        obj._reproducible_not_secret = impl.seeded
        obj._restored(data)
        return obj

    def __reduce__(self):
        return (type(self).from_bytes, (self.to_bytes(),))

    def __copy__(self):
        obj = type(self).from_bytes(self.to_bytes())
        # In-process copies share the release budget: releasing a copy counts for the original.
        obj.__dict__["_release_guard"] = self._guard
        return obj

    def __deepcopy__(self, memo):
        return self.__copy__()


if TYPE_CHECKING:
    _SerializedForTypes = Serialized
else:
    _SerializedForTypes = object


class KeyDispatch(_SerializedForTypes):
    """Mixin of the keyed classes: int64 or str keys, the type fixed by the first update or
    ``key_type=``; reprs never show keys. Subclasses set ``_natives`` and implement
    ``_make(key_type)``. With :class:`Serialized` (after it in the bases' order), an empty object
    whose key type is not fixed yet is written with key tag 0 ("untyped", the int layout) and reads
    back untyped."""

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

    # -- bytes, with Serialized -----------------------------------------------------------------

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


class Publishable(_SerializedForTypes):
    """Mixin of the private sketches (before :class:`Serialized`): noise drawn at construction, published once by ``release()`` as a read-only
    copy that withholds the exact length (docs/privacy.md §Publishing and the release-once rule).
    Subclasses set ``_epsilon``/``_rho`` (the guarantee of the stored noise), ``_beta``, ``_seed``,
    ``_conversion_delta`` and define ``metadata``."""

    __slots__ = ()
    _epsilon: float | None
    _rho: float | None
    _beta: float | None
    _seed: int | None
    _conversion_delta: float | None

    epsilon = property(lambda self: self._epsilon, doc="Pure-DP ε of the noisy cells (None for zCDP).")
    rho = property(lambda self: self._rho, doc="zCDP ρ of the noisy cells (None for pure DP).")
    published = property(lambda self: self._published,
                         doc="True for a release() result (and its copies/bytes): read-only, publishable.")
    reproducible_not_secret = property(lambda self: self._reproducible_not_secret,
                                       doc="True if the noise came from a user seed: anyone with it can remove the noise.")

    @property
    @locked
    def n(self) -> int | None:  # type: ignore[override]  # None on a published copy
        """The net number of items added, on the live sketch (the data holder's). None on a
        ``release()`` result and its copies and bytes: a published sketch withholds the exact
        length (docs/privacy.md §Publishing); ``noisy_total()`` estimates it from the noisy cells."""
        return None if self._impl.length_withheld else self._impl.n  # type: ignore[no-any-return]

    @classmethod
    def from_bytes(cls: type[_S], data: bytes | bytearray | memoryview) -> _S:
        """Rebuild from ``to_bytes()`` output; a published copy keeps its stream length withheld.

        :param data: bytes written by ``to_bytes()``
        """
        obj = super().from_bytes(data)
        if obj._published and not obj._impl.length_withheld:
            obj._impl.withhold_length()  # published bytes that still carry n (and mass): drop them here
        return obj

    def _check_not_frozen(self) -> None:
        if self._published:
            from ..errors import ReadOnlyError

            raise ReadOnlyError("this is a released (published) sketch and is read-only; keep updating the original")

    def _publish(self, allow_repeat: bool, delta: float | None) -> Any:
        """The body of every private sketch's ``release()`` (the caller holds the lock)."""
        from ..accounting.calibration import check_privacy_params
        from ..release import sketch_release

        if delta is not None:
            if self._rho is None:
                raise ParameterError("delta applies to zCDP sketches (rho=); a Laplace sketch is pure ε-DP")
            _, delta = check_privacy_params(1.0, delta)
        if not self._published:
            self._guard.next(type(self).__name__, allow_repeat)
        out = type(self).from_bytes(self.to_bytes())
        if not self._published:
            out._impl.withhold_length()  # nothing exact is published
        out._beta, out._seed, out._published = self._beta, self._seed, True
        out._conversion_delta = delta if delta is not None else self._conversion_delta
        return sketch_release(out, out.metadata)  # type: ignore[attr-defined]


# `obj.update(x)`: one plain int/str with the key type fixed runs in C under the object's lock; any
# other call (counts, other types, errors, a changed native structure) runs the Python method above.
KeyDispatch.update = _core.FastUpdate(KeyDispatch.update)  # type: ignore[method-assign]
_core.register_fast_class(Summary)

def _restore(cls, data, key_type_fixed):
    """Unpickle: the bytes, and whether the key type was fixed; fixed if either of them says so."""
    obj = cls.from_bytes(data)
    obj._key_type_fixed = bool(key_type_fixed) or obj._key_type_fixed
    return obj
