"""Counter-based summaries: Misra-Gries (ALGORITHMS.md §2) and SpaceSaving (§3)."""

from __future__ import annotations

from . import _core
from ._keyed import Keyed
from ._validation import check_int

__all__ = ["MisraGries", "SpaceSaving"]


class _CounterSummary(Keyed):
    def __init__(self, capacity: int, *, key_type=None):
        self._capacity = check_int("capacity", capacity, 1, _core.MAX_CAPACITY)
        super().__init__(key_type)

    def _make(self, key_type):
        return self._natives[key_type](self._capacity)

    def _restore_params(self):
        self._capacity = self._impl.capacity

    @property
    def capacity(self) -> int:
        """Number of counters."""
        return self._capacity

    def _repr_fields(self):
        return f"capacity={self._capacity}"

    def __len__(self) -> int:
        return len(self.items())


class MisraGries(_CounterSummary):
    """Misra-Gries summary with ``capacity`` counters, Lebeda-Tetek variant (ALGORITHMS.md §2).

    Guarantee: ``f(x) - n/(capacity+1) <= estimate(x) <= f(x)``. O(1) amortized update.
    Keys are ints (int64) or strs; the type is fixed by the first update or ``key_type=``.
    """

    _natives = {"int": _core.MisraGriesInt, "str": _core.MisraGriesStr}
    _family = 1

    def items(self, include_zero: bool = False) -> list[tuple]:
        """Stored (key, count) pairs, largest count first. ``include_zero`` adds stored keys whose
        count fell to 0 (the release mechanism noises those too)."""
        out = self._impl.items(include_zero)
        out.sort(key=lambda kv: kv[1], reverse=True)
        return out

    def _state(self) -> list[tuple]:
        """Internal order (tests): positive counts ascending, newest first per count, then zero keys."""
        return self._impl.items(True)

    @property
    def decrements(self) -> int:
        """How many 'decrement all' steps happened; ``n - sum(counts) == decrements*(capacity+1)``."""
        return self._impl.decrements


class SpaceSaving(_CounterSummary):
    """SpaceSaving with ``capacity`` counters and the exact recency tie rule (ALGORITHMS.md §3).

    On a miss with all counters used, the item with the minimum count whose latest occurrence is
    most recent is evicted and the newcomer gets ``min + 1``. Guarantee for tracked items:
    ``f(x) <= estimate(x) <= f(x) + min_count()``; ``min_count() <= n/capacity``. O(1) update.
    ``estimate`` returns 0 for untracked items (whose frequency is at most ``min_count()``).
    """

    _natives = {"int": _core.SpaceSavingInt, "str": _core.SpaceSavingStr}
    _family = 2

    def items(self) -> list[tuple]:
        """Tracked (key, count) pairs, largest count first."""
        out = self._impl.items()
        out.reverse()  # structure order is ascending
        out.sort(key=lambda kv: kv[1], reverse=True)
        return out

    def _state(self) -> list[tuple]:
        """Internal order (tests): counts ascending, newest first per count (first = next victim)."""
        return self._impl.items()

    def min_count(self) -> int:
        """Minimum tracked count once all counters are used (0 before)."""
        return self._impl.min_count()
