"""Counter-based summaries: Misra-Gries (docs/algorithms.md §2) and SpaceSaving (§3)."""

from __future__ import annotations

from . import _core
from .budget import Budget, charging, used_value
from ._keyed import Keyed, locked
from ._validation import check_int
from .release import (
    Release,
    build_release,
    check_length_params,
    check_privacy_params,
    make_rng,
)

__all__ = ["MisraGries", "SpaceSaving"]


class _CounterSummary(Keyed):
    def __init__(self, capacity: int, *, key_type: str | None = None) -> None:
        self._capacity = check_int("capacity", capacity, 1, _core.MAX_CAPACITY)
        super().__init__(key_type)

    def _make(self, key_type):
        return self._natives[key_type](self._capacity)

    def _restore_params(self):
        self._capacity = self._impl.capacity

    @locked
    def _release(self, native_fn, mechanism, epsilon, delta, k, seed, length_epsilon, length_delta, allow_repeat,
                 budget=None):
        eps, dlt = check_privacy_params(epsilon, delta)
        le, ld = check_length_params(length_epsilon, length_delta, dlt)
        # The budget is charged what the release reports: ε as used (rounded down) plus ε_n, δ + δ_n.
        spend_eps = used_value(eps) + (used_value(le) if le is not None else 0)
        with charging(budget, mechanism, epsilon=spend_eps, delta=dlt + ld):  # raises before any noise
            extra = self._guard.next(type(self).__name__, allow_repeat)  # before any noise is drawn
        rng, seeded = make_rng(seed)
        raw = native_fn(self._impl, eps, dlt, k, le, ld, rng)
        return build_release(
            raw, mechanism=mechanism, epsilon=eps, delta=dlt, n_public=self.n, seeded=seeded,
            extra=extra, length_epsilon=le, length_delta=ld,
        )

    @property
    def capacity(self) -> int:
        """Number of counters."""
        return self._capacity

    def _repr_fields(self):
        return f"capacity={self._capacity}"

    def items(self) -> list[tuple]:  # pragma: no cover - defined by each summary
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.items())


class MisraGries(_CounterSummary):
    """Misra-Gries summary with ``capacity`` counters, Lebeda-Tetek variant (docs/algorithms.md §2).

    Guarantee: ``f(x) - n/(capacity+1) <= estimate(x) <= f(x)``. O(1) amortized update.
    Keys are ints (int64) or strs; the type is fixed by the first update or ``key_type=``.
    """

    _natives = {"int": _core.MisraGriesInt, "str": _core.MisraGriesStr}
    _family = 1

    @locked
    def items(self, include_zero: bool = False) -> list[tuple]:
        """Stored (key, count) pairs, largest count first. ``include_zero`` adds stored keys whose
        count fell to 0 (the release mechanism noises those too)."""
        out = self._impl.items(include_zero)
        out.sort(key=lambda kv: kv[1], reverse=True)
        return out

    @locked
    def _state(self) -> list[tuple]:
        """Internal order (tests): positive counts ascending, newest first per count, then zero keys."""
        return self._impl.items(True)

    def release(
        self, epsilon: float, delta: float, k: int | None = None, seed: int | None = None, *,
        length_epsilon: float | None = None, length_delta: float | None = None, allow_repeat: bool = False,
        budget: Budget | None = None,
    ) -> Release:
        """PMG: (ε, δ)-DP release of this summary (docs/algorithms.md §2, docs/privacy.md).

        Every stored key (zero counts included) gets ``c(x) + η + Z_x`` with a shared ``η`` and
        independent ``Z_x``, all ``DLap(1/ε)``; keys with noisy value ``>= 1 + 2t`` are released.
        ``k`` additionally keeps only values ``>= n/k`` (heavy hitters; post-processing).
        ``seed`` makes the noise reproducible and NOT secret (experiments only).
        ``length_epsilon`` treats n as private (docs/algorithms.md §0): only the ``n/k`` filter uses n.
        A summary is released once; ``allow_repeat=True`` releases again with composed privacy loss.
        ``budget``: a :class:`dpsketch.Budget` charged (ε, δ) before any noise is drawn.
        """
        kk = None if k is None else check_int("k", k, 1, 2**63 - 1)
        return self._release(
            _core.release.pmg, "PMG", epsilon, delta, kk, seed, length_epsilon, length_delta, allow_repeat, budget
        )

    @property
    @locked
    def decrements(self) -> int:
        """How many 'decrement all' steps happened; ``n - sum(counts) == decrements*(capacity+1)``."""
        return self._impl.decrements


class SpaceSaving(_CounterSummary):
    """SpaceSaving with ``capacity`` counters and the exact recency tie rule (docs/algorithms.md §3).

    On a miss with all counters used, the item with the minimum count whose latest occurrence is
    most recent is evicted and the newcomer gets ``min + 1``. Guarantee for tracked items:
    ``f(x) <= estimate(x) <= f(x) + min_count()``; ``min_count() <= n/capacity``. O(1) update.
    ``estimate`` returns 0 for untracked items (whose frequency is at most ``min_count()``).
    """

    _natives = {"int": _core.SpaceSavingInt, "str": _core.SpaceSavingStr}
    _family = 2

    @locked
    def items(self) -> list[tuple]:
        """Tracked (key, count) pairs, largest count first."""
        out = self._impl.items()
        out.reverse()  # structure order is ascending
        out.sort(key=lambda kv: kv[1], reverse=True)
        return out

    @locked
    def _state(self) -> list[tuple]:
        """Internal order (tests): counts ascending, newest first per count (first = next victim)."""
        return self._impl.items()

    def release(
        self, epsilon: float, delta: float, k: int, seed: int | None = None, length_epsilon: float | None = None, *,
        length_delta: float | None = None, allow_repeat: bool = False, budget: Budget | None = None,
    ) -> Release:
        """DPSS: (ε, δ)-DP heavy hitters of this SpaceSaving (docs/algorithms.md §3, Holland Alg. 3).

        Each tracked count gets independent ``DLap(1/ε)`` noise; items whose noisy count exceeds
        ``τ = max(n/k − γ, n/capacity + 1 + γ)`` are released. Needs ``capacity >= k``
        (``capacity >= 2k`` for the recall guarantee). ``seed`` makes the noise reproducible and NOT
        secret. ``length_epsilon`` = ε_n: n is treated as private (§0): n̂ = n + DLap(1/ε_n) and the
        total guarantee becomes (ε + ε_n, δ + δ_n), ``length_delta`` = δ_n defaulting to δ.
        A summary is released once; ``allow_repeat=True`` releases again with composed privacy loss.
        ``budget``: a :class:`dpsketch.Budget` charged (ε, δ) before any noise is drawn.
        """
        kk = check_int("k", k, 1, 2**63 - 1)
        if kk > self._capacity:
            raise ValueError(
                f"DPSS needs capacity >= k, got capacity={self._capacity} < k={kk}; "
                f"use SpaceSaving({2 * kk}) (capacity = 2k) for full recall"
            )
        return self._release(
            _core.release.dpss, "DPSS", epsilon, delta, kk, seed, length_epsilon, length_delta, allow_repeat, budget
        )

    @locked
    def min_count(self) -> int:
        """Minimum tracked count once all counters are used (0 before)."""
        return self._impl.min_count()
