"""Linear sketches: Count-Min and CountSketch (docs/algorithms.md §4), non-private."""

from __future__ import annotations

import numpy as np

from .. import _core
from ._base import KeyDispatch, Serialized, Summary, locked
from .. import _seeds
from .._validation import check, validate_params
from ..errors import ParameterError, ParameterTypeError

__all__ = ["CountMin", "CountSketch"]


class _LinearSketch(KeyDispatch, Serialized, Summary):
    _turnstile = True  # update(x, count) / update_many(items, counts): signed counts (docs/privacy.md)

    @validate_params(["width", "depth", "seed", "hash_seed"])
    def __init__(self, width: int, depth: int, seed=None, *, key_type=None, hash_seed=None):
        self._width = check("width", width)
        self._depth = check("depth", depth)
        if self._width * self._depth > _core.MAX_CELLS:
            raise ParameterError(
                f"width * depth must be at most {_core.MAX_CELLS} cells, got {self._width * self._depth}; "
                "lower width or depth"
            )
        self._seed = _seeds.hash_seed(seed, hash_seed)
        super().__init__(key_type)

    def _make(self, key_type):
        return self._natives[key_type](self._width, self._depth, self._seed)

    def _restore_params(self):
        self._width, self._depth, self._seed = self._impl.width, self._impl.depth, self._impl.seed

    width = property(lambda self: self._width, doc="Columns per row.")
    depth = property(lambda self: self._depth, doc="Rows (independent hash functions).")
    hash_seed = property(lambda self: self._seed, doc="The public seed of the hash functions, derived from ``seed=`` "
                         "(docs/privacy.md §Seeds); merging needs equal hash seeds.")

    @locked
    def cells(self) -> np.ndarray:
        """A copy of the counters, shape (depth, width)."""
        return self._impl.cells()

    @locked
    def estimate_many(self, items) -> np.ndarray:
        """Estimates for a batch of int keys (numpy int64 array; GIL released).

        :param items: the keys to estimate (an array or list)
        """
        from ._keys import int_batch

        if self._key_type_fixed and self._key_type != "int":
            raise ParameterTypeError(f"this {type(self).__name__} has str keys; estimate them one by one")
        return self._impl.estimate_many(int_batch(items))

    def positions(self, items, key_type: str | None = None) -> tuple:
        """``(buckets, signs)``, each an int64 array of shape (depth, len(items)): the column each
        row maps each key to and the sign a unit update adds there (always 1 for Count-Min), from
        this sketch's public hash functions. For callers that keep cells of this shape themselves
        (the correlated-noise series, docs/mechanisms/cumulative-correlated.md).

        :param items: the keys (ints, or strs)
        :param key_type: ``'int'`` or ``'str'`` (default: the sketch's, else from the first key)
        """
        from ._keys import check_key_type, int_batch

        keys = list(items) if not isinstance(items, np.ndarray) else items
        kt = check_key_type(key_type) or self.key_type or ("str" if len(keys) and isinstance(keys[0], str) else "int")
        native = self._natives[kt](self._width, self._depth, self._seed)
        if kt == "int":
            return native.positions_many(int_batch(keys))
        if not all(isinstance(k, str) for k in keys):
            raise ParameterTypeError("positions with key_type='str' needs str keys")
        return native.positions_many(list(keys))

    def merge(self, other) -> None:
        """Add ``other``'s counts into this sketch: the sketch of both streams together. Requires the
        same class, width, depth, seed and key type."""
        if type(other) is not type(self):
            raise ParameterTypeError(f"can only merge a {type(self).__name__} into a {type(self).__name__}, got {type(other).__name__}")
        if (other.width, other.depth, other.hash_seed) != (self.width, self.depth, self.hash_seed):
            raise ParameterError(
                f"cannot merge sketches of different shape or seed: ({self.width}, {self.depth}, hash_seed={self.hash_seed}) vs "
                f"({other.width}, {other.depth}, hash_seed={other.hash_seed}); build both with the same width, depth and seed"
            )
        # Both objects' locks, always in the same order, so concurrent a.merge(b) / b.merge(a) cannot deadlock.
        first, second = sorted((self, other), key=id)
        with first._lock, second._lock:
            if not other._key_type_fixed and other._impl.n == 0:
                return  # an empty, untyped sketch adds nothing
            self._settle(other._key_type)  # TypeError if the key types differ
            self._impl.merge(other._impl)

    def _repr_fields(self):
        return f"width={self._width}, depth={self._depth}"


class CountMin(_LinearSketch):
    """Count-Min sketch: ``depth`` rows of ``width`` counters; ``estimate`` never underestimates and
    overestimates by more than ``2n/width`` with probability at most ``2**-depth`` (docs/algorithms.md §4).
    Turnstile updates (signed counts) are accepted; the never-underestimate guarantee then needs the
    strict turnstile model (no item's net frequency ever negative), which is the caller's concern.
    Hash functions are pairwise independent per row, seeded from ``seed`` (random if None;
    docs/privacy.md §Seeds), or from ``hash_seed``, the public hash seed of another sketch (e.g. a published one) to match it.

    :param key_type: ``'int'`` or ``'str'`` to fix the key type now (default: the first batch decides)
    """

    _natives = {"int": _core.CountMinInt, "str": _core.CountMinStr}
    _family = 3


class CountSketch(_LinearSketch):
    """CountSketch: ``depth`` rows of ``width`` signed counters; ``estimate`` is the median of the
    row estimates (a float: the mean of the two middle values when depth is even). Error is within
    ``4*sqrt(F2/width)`` except with probability ``2**-depth``-ish (docs/algorithms.md §4, §5).

    :param hash_seed: the public hash seed itself (e.g. read from a published sketch); not with ``seed``
    :param key_type: ``'int'`` or ``'str'`` to fix the key type now (default: the first batch decides)
    :param seed: a user seed the public hash functions are derived from (reproducible; random if None)
    """

    _natives = {"int": _core.CountSketchInt, "str": _core.CountSketchStr}
    _family = 4
