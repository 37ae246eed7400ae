"""Counter-based summaries: Misra-Gries (docs/algorithms.md §2) and SpaceSaving (§3)."""

from __future__ import annotations

from .. import _core
from ..accounting.budget import Budget
from ..errors import ParameterError, ParameterTypeError
from ._base import KeyDispatch, Serialized, Summary, locked
from .._validation import check, validate_params
from ..release import Release

__all__ = ["MisraGries", "SpaceSaving"]


class _CounterSummary(KeyDispatch, Serialized, Summary):
    _takes_table_hashes = True

    @validate_params(["capacity"])
    def __init__(self, capacity: int, *, key_type: str | None = None) -> None:
        self._capacity = check("capacity", capacity)
        super().__init__(key_type)

    def _make(self, key_type):
        return self._natives[key_type](self._capacity)

    def _restore_params(self):
        self._capacity = self._impl.capacity

    def merge(self, other) -> None:
        """Merge ``other`` (same class, capacity and key type) into this summary: Agarwal et al.'s
        mergeable-summary merge (docs/algorithms.md §8; guarantee in the class docstring, proof in
        docs/distributed.md). The result keeps accepting updates, serializes with the "merged" flag
        and can NOT be released privately (no sensitivity bound holds after a merge, docs/privacy.md
        §Merged counter summaries): use ``dpsketch.spark`` routes for private distributed releases."""
        if type(other) is not type(self):
            raise ParameterTypeError(f"can only merge a {type(self).__name__} into a {type(self).__name__}, got {type(other).__name__}")
        if other.capacity != self.capacity:
            raise ParameterError(
                f"cannot merge {type(self).__name__} summaries of different capacity ({self.capacity} vs "
                f"{other.capacity}); build every part with the same capacity"
            )
        first, second = sorted((self, other), key=id)  # fixed lock order: no deadlock on a.merge(b) || b.merge(a)
        with first._lock, second._lock:
            if not other._key_type_fixed and other._impl.n == 0:
                # An empty, untyped part adds nothing but still makes this a merged summary.
                self._impl.merge(self._make(self._key_type))
                return
            if self._key_type_fixed and other._key_type != self._key_type:
                raise ParameterTypeError(
                    f"cannot merge a {type(self).__name__} with {other._key_type} keys into one with "
                    f"{self._key_type} keys; use one key type for every part"
                )
            if not self._key_type_fixed:
                self._settle(other._key_type)
            self._impl.merge(other._impl)

    @property
    @locked
    def merged(self) -> bool:
        """True if this summary is the result of :meth:`merge` (then it cannot be released privately)."""
        return self._impl.merged

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

    ``merge(other)`` (Agarwal et al.; docs/algorithms.md §8): counts are added key-wise, the
    (capacity+1)-th largest sum s is subtracted and the positive results kept. With n = n1 + n2
    and E = ``decrements`` (= E1 + E2 + s after a merge) the union satisfies
    ``f(x) - E <= estimate(x) <= f(x)`` and ``E <= (n - sum of counts)/(capacity+1) <= n/(capacity+1)``,
    also after further updates and merges. Equal counts in a merged state are ordered by key (no
    recency order exists across parts); zero-count keys are dropped.

    :param key_type: ``'int'`` or ``'str'`` to fix the key type now (default: the first batch decides)
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

    @validate_params(["epsilon", "delta", "k", "top_k", "seed", "length_epsilon", "length_delta"])
    def release(
        self, *, epsilon: float, delta: float, k: int | None = None, top_k: int | None = None,
        seed: int | None = None, public_length: bool = False, length_epsilon: float | None = None,
        length_delta: float | None = None, allow_repeat: bool = False, budget: Budget | None = None,
    ) -> Release:
        """PMG: (ε, δ)-DP release of this summary (docs/algorithms.md §2, docs/privacy.md §PMG).

        Every stored key (zero counts included) gets ``c(x) + η + Z_x`` with a shared ``η`` and
        independent ``Z_x``, all ``DLap(1/ε)``; keys with noisy value ``>= 1 + 2t`` are released.
        ``k`` additionally keeps only values ``>= n̂/k`` (heavy hitters; post-processing of a noisy
        length n̂ that costs ``length_epsilon``, default ε/10, of the ε asked for; without ``k`` the
        release reads no length and spends all of ε on the counts). ``top_k=N`` instead releases
        exactly N items whenever N pass the threshold: the N largest noisy values (post-processing,
        docs/privacy.md §Exact-k; needs capacity >= N; ``metadata['qualified']`` says how many passed). ``public_length=True`` uses the
        exact n as a public parameter instead: the guarantee then holds for replace-one neighbours
        (docs/privacy.md §Stream length). The reported (ε, δ) never exceed the ones asked for.
        ``seed`` makes the noise reproducible and NOT secret (experiments only).
        A summary is released once; ``allow_repeat=True`` releases again with composed privacy loss.
        ``budget``: a :class:`dpsketch.Budget` charged (ε, δ) before any noise is drawn.

        :param epsilon: ε of the release's (ε, δ)-DP guarantee
        :param delta: δ of the release's (ε, δ)-DP guarantee, in (0, 1)
        :param top_k: release exactly N items (the N largest noisy values) whenever N pass the
            threshold
        :param public_length: treat the exact stream length as public (replace-one neighbours) instead
            of paying for a noisy one
        :param length_delta: unused by PMG (its length estimate for ``k`` needs no δ); an error without ``k``
        :param allow_repeat: release again although this object was released before (the privacy loss
            composes)
        """
        from ..mechanisms import pmg

        return pmg.release(self, epsilon=epsilon, delta=delta, k=k, top_k=top_k, seed=seed,
                           public_length=public_length, length_epsilon=length_epsilon, length_delta=length_delta,
                           allow_repeat=allow_repeat, budget=budget)

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

    ``merge(other)`` goes through SpaceSaving's isomorphism with Misra-Gries (Agarwal et al.;
    docs/algorithms.md §8, proof in docs/distributed.md): with m_i each part's ``min_count()``, the
    MG forms ``c_i(x) - m_i`` are added key-wise, the (capacity+1)-th largest sum s is subtracted,
    positive results r(x) are kept with count ``r(x) + E``, E = m_1 + m_2 + s. For the union
    (n = n1 + n2) the same guarantees hold: ``f(x) <= estimate(x) <= f(x) + min_count()`` for
    tracked x, ``f(x) <= min_count()`` for untracked x, ``min_count() <= n/capacity``, also after
    further updates. While slots are free a merged summary has ``min_count() == E`` (its floor) and a
    newcomer starts at E + 1, so counts may sum to more than n. Equal counts in a merged state are
    ordered by key (largest key evicted first); the recency tie rule describes unmerged summaries only.

    :param key_type: ``'int'`` or ``'str'`` to fix the key type now (default: the first batch decides)
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

    @validate_params(["epsilon", "delta", "k", "top_k", "seed", "length_epsilon", "length_delta"])
    def release(
        self, *, epsilon: float, delta: float, k: int | None = None, cut: str | None = "n/k",
        top_k: int | None = None, seed: int | None = None, public_length: bool = False,
        length_epsilon: float | None = None, length_delta: float | None = None, allow_repeat: bool = False,
        budget: Budget | None = None,
    ) -> Release:
        """DPSS: (ε, δ)-DP heavy hitters of this SpaceSaving (docs/algorithms.md §3, Holland Alg. 3).

        Each tracked count gets independent ``DLap(1/ε')`` noise; items whose noisy count exceeds
        ``τ = max(n_lo/k − γ, n_up/capacity + 1 + γ)`` are released. Needs ``capacity >= k``
        (``capacity >= 2k`` for the recall guarantee). ``cut='n/k'`` (the default) also drops
        released items whose noisy value is below n̂/k: post-processing that removes most items
        with a true count in [n/k − γ, n/k) (docs/privacy.md §DPSS, "The n/k cut");
        ``cut=None`` is Holland's release as published. ``top_k=N`` (instead of ``k``) releases
        exactly N items whenever N pass the threshold: τ is DPSS's lowest, at k = capacity, and the
        N largest noisy values are kept (post-processing, docs/privacy.md §Exact-k; ``cut`` does
        not apply; ``metadata['qualified']`` says how many passed; needs capacity >= N, and
        ``dpsketch.heavy_hitters(top_k=N)`` picks 64·N). By default the length is private: n̂ =
        n + DLap(1/ε_n) with n_lo, n_up = n̂ ∓ t_n; ε_n = ``length_epsilon`` (default ε/10) and
        δ_n = ``length_delta`` (default δ/10) are carved out of (ε, δ), and the counts use the rest.
        ``public_length=True`` reads the exact n as a public parameter instead (replace-one
        neighbours, docs/privacy.md §Stream length). The reported (ε, δ) never exceed the request.
        ``seed`` makes the noise reproducible and NOT secret.
        A summary is released once; ``allow_repeat=True`` releases again with composed privacy loss.
        ``budget``: a :class:`dpsketch.Budget` charged (ε, δ) before any noise is drawn.

        :param epsilon: ε of the release's (ε, δ)-DP guarantee
        :param delta: δ of the release's (ε, δ)-DP guarantee, in (0, 1)
        :param top_k: release exactly N items (the N largest noisy values) whenever N pass the
            threshold
        :param public_length: treat the exact stream length as public (replace-one neighbours) instead
            of paying for a noisy one
        :param allow_repeat: release again although this object was released before (the privacy loss
            composes)
        """
        from ..mechanisms import dpss

        return dpss.release_space_saving(self, epsilon=epsilon, delta=delta, k=k, cut=cut, top_k=top_k, seed=seed,
                                         public_length=public_length, length_epsilon=length_epsilon,
                                         length_delta=length_delta, allow_repeat=allow_repeat, budget=budget)

    @locked
    def min_count(self) -> int:
        """Minimum tracked count once all counters are used (0 before)."""
        return self._impl.min_count()
