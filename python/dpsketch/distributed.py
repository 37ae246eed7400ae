"""Distributed releases as library functions, free of any engine (docs/algorithms.md §8;
derivations in docs/privacy.md §Distributed releases). ``dpsketch.spark`` only moves data to
and from these functions; the audit and the tests call them directly. This module only wires:
the thresholds, lengths, noise and tail bounds are the mechanisms' (``mechanisms.partitioned``,
``mechanisms.sketch_route``; tests/api/test_no_privacy_arithmetic.py checks it), re-exported here.

:func:`release_partitions` -- the counters route: one PMG/DPSS release per key partition, every
partition's threshold reading one length bound computed for the whole data set (never an exact
per-partition length), the union of the releases.
:func:`release_windows` -- one counters-route release per event-time window of a public range, the
series charged once (parallel composition, docs/privacy.md §Windows "On Spark").
:func:`lookup_labels` -- the sketch route's label lookup: candidate fingerprints (a DP output)
mapped back to labels by a noisy exact count that a label of count 1 rarely clears.
:func:`fingerprint_delta` -- the probability bound of a fingerprint collision among the labels.
:func:`release_exact_counts` -- the exact route: noise and a label-protecting threshold on the exact
per-key counts of the whole data set (an engine aggregated them), no length read.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from .accounting.budget import Budget, DisjointScope, charging
from .release import Release, with_metadata
from .sketches.counters import MisraGries, SpaceSaving
from ._validation import check_int
from .mechanisms.dpss import check_cut
from .mechanisms.partitioned import (COUNTERS_MECHANISM, counters_calibration, counters_charge, counters_length, exact_counts_plan,
                                     release_exact_counts, release_partition, release_union)
from .mechanisms.sketch_route import (FINGERPRINT_BITS, FINGERPRINT_SALT_BITS, SketchRoute, fingerprint_delta,
                                      lookup_labels, lookup_t)
from .errors import ParameterError, ParameterTypeError
from .mechanisms.top_k import check_top_k

__all__ = ["release_partitions", "release_exact_counts", "exact_counts_plan", "release_windows", "check_windows", "charge_windows", "MAX_WINDOWS", "SketchRoute", "lookup_labels", "lookup_t", "fingerprint_delta", "FINGERPRINT_BITS"]



def release_partitions(parts: Sequence[SpaceSaving | MisraGries], *, k: int, epsilon: float, delta: float,
                       public_length: bool = False, length_epsilon: float | None = None,
                       length_delta: float | None = None, seed: int | None = None,
                       budget: Budget | None = None, partition_ids: Sequence[int] | None = None,
                       cut: str | None = "n/k", exact_counts: Mapping[Any, int] | None = None,
                       top_k: int | None = None) -> Release:
    """(ε, δ)-DP heavy hitters from per-partition counter summaries of a stream partitioned **by
    key** (each key in one partition; docs/privacy.md §Counters route).

    ``parts`` are unmerged summaries of one class (SpaceSaving: DPSS; MisraGries: PMG), each fed its
    partition's rows in an order that depends only on that partition's multiset (e.g. sorted).
    One length is drawn for the whole data set -- n̂ = n + DLap(1/ε_n) with n = Σ n_p, costing
    ``length_epsilon`` (default ε/10) and, for DPSS, ``length_delta`` (default δ/10) of the budget --
    and every partition's threshold reads its bounds: DPSS τ_p = max(n_lo/k − γ, n_up/k̃_p + 1 + γ),
    PMG the cut n̂/k. ``public_length=True`` uses the exact total n instead (replace-one
    neighbours). The release is the union of the partitions' releases (parallel composition); its
    (ε, δ) are the ones asked for. ``seed`` makes all noise reproducible and NOT secret;
    ``partition_ids`` name the partitions for the per-partition seeds (default 0, 1, ...).
    ``cut="n/k"`` (DPSS; the default) keeps only noisy values >= n̂/k, as ``SpaceSaving.release``
    does (post-processing, docs/privacy.md §DPSS "The n/k cut"); ``cut=None`` keeps every value
    above its partition's τ_p. PMG always cuts at n̂/k (``cut=None`` is refused for it).
    ``exact_counts`` (DPSS only; the second pass): key -> exact count over the whole data set for
    at least every tracked key of every part; each partition then releases the exact counts of its
    tracked keys instead of its SpaceSaving counts (docs/privacy.md §DPSS "Two passes": with key
    partitions, a key's count over the data set is its count in its own partition).
    ``top_k=N``: of the union, keep the N largest noisy values (post-processing, docs/privacy.md
    §Exact-k; ``metadata['qualified']`` is the size of the union); callers asking for exactly N
    items pass k = the partitions' capacity, DPSS's lowest threshold.
    """
    parts = list(parts)
    kinds = {type(s) for s in parts}
    if not parts or len(kinds) != 1 or not kinds <= {SpaceSaving, MisraGries}:
        raise ParameterTypeError("parts must be a non-empty list of SpaceSaving (DPSS) or MisraGries (PMG) summaries, one class")
    summary = "spacesaving" if SpaceSaving in kinds else "misragries"
    kk = check_int("k", k, 1, 2**63 - 1)
    check_cut(cut)
    n_top = None if top_k is None else check_top_k(top_k)
    if exact_counts is not None and summary != "spacesaving":
        raise ParameterError("exact_counts (two passes) applies to DPSS (SpaceSaving parts) only")
    if summary == "misragries" and cut is None:
        raise ParameterError("PMG always keeps only values >= n̂/k; cut=None applies to DPSS (SpaceSaving parts)")
    for s in parts:
        if s.merged:
            raise ParameterError("a partition's summary must not be merged: build one summary per key partition")
        if summary == "spacesaving" and s.capacity < kk:
            raise ParameterError(f"DPSS needs capacity >= k in every partition (got {s.capacity} < {kk}); the default is 2k")
    ids = list(range(len(parts))) if partition_ids is None else [int(p) for p in partition_ids]
    if len(ids) != len(parts) or len(set(ids)) != len(ids) or any(p < 0 for p in ids):
        raise ParameterError("partition_ids must be distinct non-negative ints, one per part")
    if seed is not None:
        seed = check_int("seed", seed, 0, 2**64 - 1)
    cal = counters_calibration(summary, epsilon, delta, public_length=public_length, length_epsilon=length_epsilon,
                               length_delta=length_delta)
    mechanism = f"spark.counters[{COUNTERS_MECHANISM[summary]}{'' if exact_counts is None else '[two-pass]'}]"
    tracked = None
    if exact_counts is not None:  # every count is checked before the budget is charged
        tracked = [[key for key, _ in s.items()] for s in parts]
        if any(key not in exact_counts for keys in tracked for key in keys):
            raise ParameterError("exact_counts must hold every tracked key of every part (the second pass)")
    with charging(budget, mechanism, **counters_charge(cal)):
        pass  # nothing has been drawn yet; a refusal spends nothing
    n = sum(s.n for s in parts)  # exact, on the driver only: it enters n̂ or (opt-in) the public n
    length = counters_length(cal, n, seed)
    items = []
    gamma = eps_used = None
    for idx, (p, s) in enumerate(zip(ids, parts)):
        if s.n == 0:  # nothing is stored: the release would be empty whatever the noise
            continue
        keys = None if tracked is None else tracked[idx]
        got, meta = release_partition(summary, s, cal=cal, k=kk, length=length, seed=seed, partition_id=p, keys=keys,
                                      counts=None if keys is None else [int(exact_counts[key]) for key in keys])  # type: ignore[index]
        items += got
        gamma = meta.get("gamma", gamma)
        eps_used = meta.get("epsilon_used", eps_used)
    return release_union(summary, items, cal=cal, k=kk, length=length, gamma=gamma, epsilon_used=eps_used, cut=cut,
                         top_k=n_top, passes=1 if exact_counts is None else 2, partitions=len(parts),
                         capacities=[s.capacity for s in parts], epsilon=epsilon, delta=delta, seed=seed,
                         mechanism=mechanism)


MAX_WINDOWS = 1 << 20  # windows in one series: every one of them is released, so their number is bounded


def check_windows(*, first: int, last: int, empty: Callable[[], SpaceSaving | MisraGries], k: int, epsilon: float,
                  delta: float, public_length: bool = False, length_epsilon: float | None = None,
                  length_delta: float | None = None, seed: int | None = None,
                  cut: str | None = "n/k", budget: Budget | DisjointScope | None = None) -> tuple[int, str]:
    """Every parameter check of :func:`release_windows`, for a front end to run before it reads a
    row: (k, "spacesaving" or "misragries"), or the error that :func:`release_windows` would raise."""
    from .time.windows import window_seed

    if last < first:
        raise ParameterError("the series needs last >= first (a window range fixed by public parameters)")
    if last - first + 1 > MAX_WINDOWS:
        raise ParameterError(f"{last - first + 1} windows in one series (at most {MAX_WINDOWS}): every window of "
                             "the range is released; use a longer period or a shorter range")
    proto = empty()
    if not isinstance(proto, (SpaceSaving, MisraGries)) or proto.n:
        raise ParameterTypeError("empty() must return an empty SpaceSaving (DPSS) or MisraGries (PMG)")
    summary = "spacesaving" if isinstance(proto, SpaceSaving) else "misragries"
    kk = check_int("k", k, 1, 2**63 - 1)
    check_cut(cut)
    if summary == "misragries" and cut is None:
        raise ParameterError("PMG always keeps only values >= n̂/k; cut=None applies to DPSS (SpaceSaving parts)")
    if summary == "spacesaving" and proto.capacity < kk:
        raise ParameterError(f"DPSS needs capacity >= k in every partition (got {proto.capacity} < {kk}); the default is 2k")
    window_seed(seed, first)
    if budget is not None and not isinstance(budget, (Budget, DisjointScope)):
        raise ParameterTypeError(f"budget must be a dpsketch.Budget, got {type(budget).__name__}")
    counters_calibration(summary, epsilon, delta, public_length=public_length, length_epsilon=length_epsilon,
                         length_delta=length_delta)
    return kk, summary


def charge_windows(budget: Budget | None, summary: str, epsilon: float, delta: float) -> DisjointScope | None:
    """Charge ``budget`` (ε, δ) once for a series of :func:`release_windows` (parallel composition,
    :meth:`Budget.disjoint`) and return the scope whose parts the windows spend; None without a
    budget. A refusal raises :class:`~dpsketch.errors.BudgetExceededError` and records nothing."""
    if budget is None:
        return None
    return budget.disjoint(f"windows[spark.counters[{COUNTERS_MECHANISM[summary]}]]", epsilon=epsilon, delta=delta)


def release_windows(parts: Mapping[int, Sequence[tuple[int, SpaceSaving | MisraGries]]], *, first: int, last: int,
                    period_ns: int, origin_ns: int, partitions: int, empty: Callable[[], SpaceSaving | MisraGries],
                    k: int,
                    epsilon: float, delta: float, public_length: bool = False, length_epsilon: float | None = None,
                    length_delta: float | None = None, seed: int | None = None,
                    budget: Budget | DisjointScope | None = None, cut: str | None = "n/k") -> list[Release]:
    """One (ε, δ)-DP counters-route release per tumbling window ``first..last`` (docs/privacy.md
    §Windows "On Spark"), the series (ε, δ)-DP by parallel composition.

    ``parts[i]`` lists window i's per-partition summaries as ``(partition id, summary)``: the rows
    of window i (window i = ``[origin + i·period, origin + (i+1)·period)``, a function of the row's
    own time) partitioned by a hash of the key alone into ``partitions`` key partitions (ids
    0 .. partitions − 1, a public count) and fed in key order, as :func:`release_partitions`
    requires. A partition without rows of window i may be absent: it stands as an ``empty()``
    summary, so every window is released over all ``partitions`` parts and nothing in a release
    tells which partitions held rows of it. Every window of the public range is released, an
    empty window included (a noisy length and, but with probability δ, no item); window i's release is :func:`release_partitions` on its parts with its own length, the
    user seed :func:`dpsketch.windows.window_seed` ``(seed, i)`` and its own part of
    ``budget.disjoint``, which charges (ε, δ) once for the series (``budget`` may also be the
    :class:`~dpsketch.budget.DisjointScope` of such a charge, made by :func:`charge_windows` before
    the rows were read). Each release's metadata carries
    ``window`` and ``composition`` as :class:`dpsketch.Windowed`'s do."""
    from .time.windows import composition_record, window_record, window_seed

    first, last = int(first), int(last)
    kk, summary = check_windows(first=first, last=last, empty=empty, k=k, epsilon=epsilon, delta=delta,
                                public_length=public_length, length_epsilon=length_epsilon,
                                length_delta=length_delta, seed=seed, cut=cut, budget=budget)
    if any(not first <= int(i) <= last for i in parts):
        raise ParameterError("parts must hold windows first..last only (rows outside the range are dropped before)")
    pp = check_int("partitions", partitions, 1, 1 << 20)
    for i, got in parts.items():
        ids = [int(p) for p, _ in got]
        if len(set(ids)) != len(ids) or any(not 0 <= p < pp for p in ids):
            raise ParameterError(f"window {i}: partition ids must be distinct and in [0, partitions)")
    scope = budget if isinstance(budget, DisjointScope) else charge_windows(budget, summary, epsilon, delta)
    out = []
    for i in range(first, last + 1):
        have = {int(p): s for p, s in parts.get(i, ())}
        got = [(p, have[p] if p in have else empty()) for p in range(pp)]
        rel = release_partitions([s for _, s in got], k=kk, epsilon=epsilon, delta=delta, public_length=public_length,
                                 length_epsilon=length_epsilon, length_delta=length_delta,
                                 seed=window_seed(seed, i), budget=None if scope is None else scope.part(i),
                                 partition_ids=[p for p, _ in got], cut=cut)
        out.append(with_metadata(rel, {
            "window": window_record(i, period_ns, origin_ns),
            "composition": composition_record(
                "input", epsilon, delta, period_ns, origin_ns,
                reason="each row lies in exactly one event-time window, and inside it in the one key partition "
                       "of its key (docs/privacy.md §Windows \"On Spark\")")}))
    return out
