"""What every public summary and sketch shares, whatever its keys: a re-entrant lock, the
release-once guard (docs/privacy.md §Publishing and the release-once rule), and -- for the classes
that serialize -- bytes, pickling and copies that carry the release state. Key-type dispatch is
the :class:`dpsketch._keyed.Keyed` layer on top; the dyadic sketches take numbers only."""

from __future__ import annotations

import functools
from typing import Any, Callable, ClassVar, TypeVar, cast

from .. import _core
from ._release_state import stamp
from ..errors import ParameterError, ParameterTypeError

_F = TypeVar("_F", bound=Callable[..., Any])
_S = TypeVar("_S", bound="Serialized")

HEADER = 8  # magic (4), version, family, key tag, flags: docs/format.md


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


class Guarded:
    """The lock and the release guard. Subclasses hold their native structure in ``_impl``."""

    __slots__ = ()
    _lock: Any  # _core.ObjectLock
    _impl: Any
    # Serialized with the object (header flags + trailer, docs/format.md): no copy path resets them.
    _published = False
    _reproducible_not_secret = False

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        obj = super().__new__(cls)
        obj._lock = _core.ObjectLock()
        return obj

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


class Serialized(Guarded):
    """Bytes (docs/format.md), pickling and copies. The native structure writes and validates every
    byte, release state included; in-process copies share the original's release guard."""

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


class Publishable(Serialized):
    """A private sketch: noise drawn at construction, published once by ``release()`` as a read-only
    copy that withholds the exact length (docs/privacy.md §Publishing and the release-once rule).
    Subclasses set ``_epsilon``/``_rho`` (the guarantee of the stored noise), ``_beta``, ``_seed``,
    ``_conversion_delta`` and define ``metadata``."""

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
