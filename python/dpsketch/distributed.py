"""Distributed releases as library functions, free of any engine (docs/algorithms.md §8;
derivations in docs/privacy.md §Distributed releases). ``dpsketch.spark`` only moves data to
and from these functions; the audit and the tests call them directly.

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

import math
from bisect import bisect_right
from dataclasses import replace
from operator import itemgetter
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from . import _core
from .accounting.budget import Budget, DisjointScope, charging
from .accounting.calibration import calibrate, make_length, privacy_record, used_value
from . import _seeds
from .release import Release
from .sketches.counters import MisraGries, SpaceSaving
from ._validation import check_int
from .mechanisms.dpss import check_cut, two_pass_release
from .errors import ParameterError, ParameterTypeError
from .mechanisms.top_k import check_top_k, select_top_k

__all__ = ["release_partitions", "release_exact_counts", "exact_counts_plan", "release_windows", "check_windows", "charge_windows", "MAX_WINDOWS", "SketchRoute", "lookup_labels", "lookup_t", "fingerprint_delta", "FINGERPRINT_BITS"]

_MECHANISM = {"spacesaving": "DPSS", "misragries": "PMG"}


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
    cal = calibrate(epsilon, delta, "bounds" if summary == "spacesaving" else "estimate",
                    public_length=public_length, length_epsilon=length_epsilon, length_delta=length_delta)
    mechanism = f"spark.counters[{_MECHANISM[summary]}{'' if exact_counts is None else '[two-pass]'}]"
    tracked = None
    if exact_counts is not None:  # every count is checked before the budget is charged
        tracked = [[key for key, _ in s.items()] for s in parts]
        if any(key not in exact_counts for keys in tracked for key in keys):
            raise ParameterError("exact_counts must hold every tracked key of every part (the second pass)")
    with charging(budget, mechanism, epsilon=used_value(cal["epsilon_total"]), delta=cal["delta_total"]):
        pass  # nothing has been drawn yet; a refusal spends nothing
    n = sum(s.n for s in parts)  # exact, on the driver only: it enters n̂ or (opt-in) the public n
    length = make_length(cal, n, _seeds.rng(seed, "length")[0])
    native = _core.release.dpss if summary == "spacesaving" else _core.release.pmg
    items = []
    gamma = None
    for idx, (p, s) in enumerate(zip(ids, parts)):
        if s.n == 0:  # nothing is stored: the release would be empty whatever the noise
            continue
        rng, _ = _seeds.rng(seed, f"partition/{p}")
        if tracked is None:
            got, _, _, meta = native(s._impl, cal["epsilon_mechanism"], cal["delta_mechanism"], kk, length, rng)
        else:
            keys = tracked[idx]
            got, _, _, meta = two_pass_release(keys, [int(exact_counts[key]) for key in keys],  # type: ignore[index]
                                               epsilon=cal["epsilon_mechanism"], delta=cal["delta_mechanism"], k=kk,
                                               capacity=s.capacity, length=length, rng=rng)
        items += got
        gamma = meta.get("gamma", gamma)
    items.sort(key=lambda kv: (-kv[1], kv[0]))
    if summary == "spacesaving":
        g = _core.release.dpss_gamma(cal["epsilon_mechanism"], cal["delta_mechanism"]) if gamma is None else int(gamma)
        threshold = length.n_lo / kk - g  # every partition's τ_p is at least this
        if cut == "n/k":  # post-processing of the union and n̂; n̂/k > n_lo/k − γ
            threshold = length.n_hat / kk
            items = [(key, v) for key, v in items if v >= threshold]
    else:
        threshold = max(1 + 2 * _core.release.pmg_t(cal["epsilon_mechanism"], cal["delta_mechanism"]), length.n_hat / kk)
    selected: dict = {}
    if n_top is not None:
        items, _, _, selected = select_top_k((items, threshold, None, {}), n_top)
    meta = {
        "route": "counters",
        "composition": "parallel: partitions by a hash of the key alone, each row in exactly one partition "
                       "(docs/algorithms.md §8); one length for all partitions; the union of the per-partition "
                       "releases is (epsilon, delta)-DP",
        "partitions": len(parts),
        "partition_thresholds": ("DPSS tau_p = max(n_lo/k - gamma, n_up/capacity_p + 1 + gamma)" if summary == "spacesaving"
                                 else "PMG: v >= 1 + 2t and v >= n_hat/k") + " from the one length of the whole data set",
        "summary": summary,
        "capacity_per_partition": sorted({s.capacity for s in parts}),
        "k": kk,
        "partition_order": "sorted by key inside each partition (input order depends on the multiset only)",
        "reproducible_not_secret": seed is not None,
        **privacy_record(cal, epsilon_requested=float(epsilon), delta_requested=float(delta)),
        "length_epsilon": cal["length_epsilon"],
        "length_delta": cal["length_delta"],
    }
    if summary == "spacesaving":
        meta["gamma"] = g
        meta["cut"] = "none" if cut is None else cut
        meta["passes"] = 1 if exact_counts is None else 2
        meta["threshold_inclusive"] = cut == "n/k"
    if cal["length"] == "private":
        meta.update(n_used=length.n_hat, n_lower=length.n_lo, n_upper=length.n_up, length_t=length.t)
    meta.update(selected)
    return Release(items=items, threshold=threshold, epsilon=cal["epsilon_total"], delta=cal["delta_total"],
                   mechanism=mechanism, n=length.n_hat, metadata=meta)


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
    calibrate(epsilon, delta, "bounds" if summary == "spacesaving" else "estimate", public_length=public_length,
              length_epsilon=length_epsilon, length_delta=length_delta)
    return kk, summary


def charge_windows(budget: Budget | None, summary: str, epsilon: float, delta: float) -> DisjointScope | None:
    """Charge ``budget`` (ε, δ) once for a series of :func:`release_windows` (parallel composition,
    :meth:`Budget.disjoint`) and return the scope whose parts the windows spend; None without a
    budget. A refusal raises :class:`~dpsketch.errors.BudgetExceededError` and records nothing."""
    if budget is None:
        return None
    return budget.disjoint(f"windows[spark.counters[{_MECHANISM[summary]}]]", epsilon=epsilon, delta=delta)


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
        meta = dict(rel.metadata)
        meta["window"] = window_record(i, period_ns, origin_ns)
        meta["composition"] = composition_record(
            "input", epsilon, delta, period_ns, origin_ns,
            reason="each row lies in exactly one event-time window, and inside it in the one key partition of "
                   "its key (docs/privacy.md §Windows \"On Spark\")")
        out.append(replace(rel, metadata=meta))
    return out


def exact_counts_plan(epsilon: float, delta: float, noise: str = "gaussian") -> tuple[str, dict]:
    """(mechanism name, plan) of :func:`release_exact_counts`: the unit-level exact route's noise and
    τ for one row (m = c = 1; docs/privacy.md §Exact route, one row). Reads no data: a front end
    charges the budget with it before it aggregates."""
    from .mechanisms import unit_level as U

    plan = U._exact_plan(epsilon, delta, 1, 1, noise, None, None)
    return f"exact[{plan['noise']}]", plan


def release_exact_counts(keys, counts, *, k: int | None, epsilon: float, delta: float, noise: str = "gaussian",
                         cut: str | None = "n/k", seed: int | None = None, budget: Budget | None = None) -> Release:
    """(ε, δ)-DP heavy hitters from the exact count of every key in the whole data set, one row the
    privacy unit (docs/privacy.md §Exact route, one row): what an engine's ``groupBy(key).count()``
    returns, as aligned 1-D ``keys`` (int64 or str) and ``counts`` (positive ints).

    This is the unit-level exact route (:func:`dpsketch.privacy_unit.release_bounded_counts`) with
    m = c = 1, one implementation: removing a row lowers one key's count by 1, so every key gets
    independent discrete Gaussian (ℓ2 = 1; δ/2 for the zCDP conversion) or discrete Laplace (ℓ1 = 1)
    noise and is released iff count + noise > τ, τ the smallest integer with P[noise > τ − 1] <= δ/2
    (Gaussian) or δ (Laplace): a key held by the removed row alone has count 1. No length is read and
    none is published. ``cut="n/k"`` (needs ``k``) then keeps only noisy values >= M/k, M the sum
    of the released noisy values (post-processing; M counts only keys above τ, so the cut is at most
    about n/k and errs towards keeping); ``cut=None`` keeps every key above τ. ``seed`` makes the
    noise reproducible and NOT secret; ``budget`` is charged the reported (ε, δ) before any noise is
    drawn."""
    from .mechanisms import unit_level as U

    check_cut(cut)
    kk = None if k is None else check_int("k", k, 1, 2**63 - 1)
    if cut == "n/k" and kk is None:
        raise ParameterError("cut='n/k' needs k; pass cut=None to keep every key above the threshold")
    if seed is not None:
        seed = check_int("seed", seed, 0, 2**64 - 1)
    keys = np.asarray(keys)
    counts = np.asarray(counts)
    if keys.ndim != 1 or counts.shape != keys.shape:
        raise ParameterError("keys and counts must be aligned 1-D arrays")
    if len(counts) and (counts.dtype.kind not in "iu" or counts.min() < 1):
        raise ParameterError("counts must be positive integers (one per distinct key)")
    if keys.dtype.kind in "iu":
        keys = keys.astype(np.int64, copy=False)
    elif keys.dtype.kind in "UT" or (keys.dtype.kind == "O" and all(isinstance(x, str) for x in keys.tolist())):
        keys = U._exact_strs(keys)  # exact strings: a numpy U array would merge "a" and "a\0"
    else:
        raise ParameterError("keys must be int64 or str")
    order = np.argsort(keys, kind="stable")
    keys, counts = keys[order], counts[order]
    if np.any(keys[1:] == keys[:-1]):
        raise ParameterError("keys must be distinct (one count per key)")
    mechanism, plan = exact_counts_plan(epsilon, delta, noise)
    with charging(budget, mechanism, epsilon=plan["epsilon"], delta=plan["delta"]):
        pass  # nothing drawn yet: a refusal spends nothing
    rng, seeded = _seeds.rng(seed, "noise")
    items = U._draw_release(U._bounded_from_aggregates(keys, counts.astype(np.int64, copy=False), 1, 1), plan, rng)
    threshold, inclusive = float(plan["threshold"]), False
    if cut == "n/k":
        mass = sum(map(itemgetter(1), items))  # a function of the release: post-processing
        if mass / kk > threshold:  # type: ignore[operator]
            threshold, inclusive = mass / kk, True  # type: ignore[operator]
            # items are sorted by noisy value, descending: the cut keeps a prefix
            items = items[:bisect_right(items, -threshold, key=lambda kv: -kv[1])]
    meta = {
        "route": "exact",
        "privacy_unit": "one stream element",
        "neighbours": "add_remove",
        "counts": "exact per-key counts of the whole data set (aggregated by the engine)",
        "length": "unused",
        "epsilon_requested": float(epsilon),
        "delta_requested": float(delta),
        "k": kk,
        "cut": "none" if cut is None else cut,
        "cut_length": "the sum of the noisy counts above tau (post-processing)" if cut else None,
        "threshold_inclusive": inclusive,
        "reproducible_not_secret": bool(seeded),
        "reference": "docs/privacy.md §Exact route, one row",
        **{key: v for key, v in plan.items() if key not in ("epsilon", "delta", "epsilon_selection")},
    }
    return Release(items=items, threshold=threshold, epsilon=plan["epsilon"], delta=plan["delta"],
                   mechanism=mechanism, n=None, metadata=meta, rho=plan.get("rho"))


def lookup_t(epsilon: float, delta: float) -> int:
    """Smallest integer t >= 1 with P(DLap(1/ε) >= t) = e^{-εt}/(1 + e^{-ε}) <= δ (§1 tails; the
    same tail bound as the noisy length's, release/thresholds.hpp ``length_t``)."""
    return int(_core.release.length_t(float(epsilon), float(delta)))


def lookup_labels(candidates: Sequence[int], found: Mapping[tuple[int, int], tuple[int, int, Any]], *,
                  epsilon: float, delta: float, n_hat: float, k: int, rng) -> tuple[list, int, float]:
    """The label lookup of the sketch route (docs/privacy.md §Sketch route), for candidate
    fingerprints fixed before the lookup reads the data. ``candidates`` are 64-bit sketch
    fingerprints φ₁; ``found[(φ₁, φ₂)] = (c, u, label)`` holds, for every 128-bit fingerprint
    (φ₁, φ₂) of the data whose φ₁ is a candidate, the exact count c of its rows, the number u of
    distinct labels among them and one label. Every such fingerprint (in sorted order) gets
    v = c + DLap(1/ε), independent draws; (label, v) is released iff c >= 1, u == 1 and
    v >= τ = max(1 + t, n̂/k − t), t = :func:`lookup_t` (ε, δ): a label of count 1 is released with
    probability <= δ. A fingerprint absent from ``found`` has c = 0 and releases nothing whatever
    its draw, so only the present ones draw. ``epsilon`` is used as given (round it down first,
    §1). Returns (items, 1 + t, τ)."""
    t = lookup_t(epsilon, delta)
    threshold = max(1 + t, n_hat / k - t)
    num, den = _core.release.laplace_scale(1, epsilon)  # one row moves one count by 1
    wanted = set(candidates)
    fps = sorted(fp for fp in found if fp[0] in wanted)
    noise = _core.noise.discrete_laplace(rng, num, den, len(fps))
    items = []
    for fp, z in zip(fps, noise.tolist()):
        c, u, label = found[fp]
        v = c + int(z)
        if c and u == 1 and v >= threshold:
            items.append((label, v))
    items.sort(key=lambda kv: (-kv[1], kv[0]))
    return items, 1 + t, threshold


FINGERPRINT_BITS = 128  # the lookup's fingerprint: two salted 64-bit hashes of the label


def fingerprint_delta(n_up: float, bits: int = FINGERPRINT_BITS) -> float:
    """The bound n_up²/2^(bits+1) on P(two distinct labels share a ``bits``-bit fingerprint) when
    there are at most n_up labels (docs/privacy.md §Sketch route, Collisions: U(U−1)/2 pairs, each
    colliding with probability 2^−bits under the random-function assumption, U <= n <= n_up)."""
    n = max(float(n_up), 0.0)
    return n * n / 2.0 ** (bits + 1)


FINGERPRINT_SALT_BITS = 63  # the salt is a non-negative int64 literal for Spark's xxhash64


class SketchRoute:
    """The sketch route's mechanism without Spark (docs/privacy.md §Sketch route; docs/distributed.md
    §Sketch route): what a front end does is build one merged, non-private 64-bit DyadicCountSketch
    of the keys (int64 keys as themselves, strings as salted 64-bit fingerprints φ₁ = h(salt, key))
    and, for strings, count the rows of the candidates by 128-bit fingerprint (φ₁, h(salt2, key)).
    In order:

    1. ``SketchRoute(k=, epsilon=, delta=, strings=, rho_fraction=, seed=)`` splits the budget
       (strings: ρ-zCDP for the sketch at ``rho_fraction`` of ε and δ/3, DLap lookup at the rest
       of ε and δ/3, δ/3 for fingerprint collisions) and draws the two public salts;
    2. ``candidates(merged)`` adds the noise once and walks the noisy hierarchy: the leaves above
       n̂/k − noise bound, n̂ the sketch's own noisy total (post-processing);
    3. ``release()`` for int keys, or ``release(found)`` with the exact lookup counts per 128-bit
       fingerprint for strings (:func:`lookup_labels`).
    """

    def __init__(self, *, k: int, epsilon: float, delta: float, strings: bool, rho_fraction: float = 0.9,
                 seed: int | None = None):
        from .accounting.calibration import check_privacy_params, zcdp_epsilon, zcdp_rho_for

        eps, dlt = check_privacy_params(epsilon, delta)
        if not (isinstance(rho_fraction, (int, float)) and not isinstance(rho_fraction, bool)
                and 0 < float(rho_fraction) <= 1):
            raise ParameterError(f"rho_fraction must be in (0, 1], got {rho_fraction!r}")
        if strings and rho_fraction >= 1:
            raise ParameterError("string keys need part of epsilon for the label lookup: rho_fraction must be < 1")
        self.k = check_int("k", k, 1, 2**63 - 1)
        self.strings, self.seed = bool(strings), seed
        self.epsilon, self.delta = eps, dlt
        self.epsilon_sketch = eps * (float(rho_fraction) if strings else 1.0)
        self.delta_zcdp = dlt / 3 if strings else dlt  # δ split: zCDP conversion, lookup, collisions
        self.rho = zcdp_rho_for(self.epsilon_sketch, self.delta_zcdp)
        self.epsilon_lookup = _core.release.epsilon_used(eps - self.epsilon_sketch) if strings else 0.0  # §1
        self.epsilon_total = zcdp_epsilon(self.rho, self.delta_zcdp) + self.epsilon_lookup
        self.mechanism = "spark.sketch[DyadicCountSketch+lookup]" if strings else "spark.sketch[DyadicCountSketch]"
        # Fresh public salts per release, drawn before looking at the data (collision bound below):
        # ``salt`` for the sketch's fingerprint φ₁, ``salt2`` for the lookup's second half φ₂.
        salts = _seeds.rng(seed, "salt")[0]
        self.salt = salts.next_u64() & ((1 << FINGERPRINT_SALT_BITS) - 1)
        self.salt2 = salts.next_u64() & ((1 << FINGERPRINT_SALT_BITS) - 1)
        self._meta: dict = {}
        self._cands: list = []

    def prototype(self, *, gamma: float | None = None, width: int | None = None, depth: int | None = None):
        """The empty DyadicCountSketch every part starts from (64-bit universe: int64 keys map to
        [0, 2^64) by two's complement, a bijection)."""
        from .sketches.dyadic import DyadicCountSketch

        return DyadicCountSketch(64, gamma=0.01 if gamma is None else gamma, width=width, depth=depth, seed=self.seed)

    def candidates(self, merged) -> list[int]:
        """Noise the merged sketch once and return the candidate keys (int keys) or fingerprints
        (strings), sorted. The exact ``merged`` sketch is not kept."""
        import numpy as np

        from .sketches.dyadic import PrivateDyadicCountSketch

        noisy = PrivateDyadicCountSketch.from_sketch(merged, rho=self.rho, seed=self.seed, noise_allocation="joint")
        priv = noisy.privacy(delta=self.delta_zcdp)
        noise_bound = priv["noise_bound"]
        # The noisy total rank(2^L) is two exact level-1 cells, each + DGauss(σ²): their noise sum is
        # sub-Gaussian with variance proxy 2σ², so n_up = n̂ + 2σ·sqrt(ln(3/δ)) >= n except w.p. δ/3.
        self.n_hat = n_hat = float(noisy.noisy_total())
        sigma2 = max(lv["sigma2"] for lv in priv["levels"] if lv["level"] == 1)
        self.n_up = n_hat + 2.0 * math.sqrt(sigma2 * math.log(3.0 / self.delta))
        # Descent threshold: post-processing of the noisy hierarchy (§6), set for utility: nodes above
        # n̂/(2k) (at most 2k per level when estimates are accurate); final cut n̂/k - noise bound.
        k = self.k
        tau_desc = max(n_hat / (2 * k), noise_bound)
        leaves = noisy.heavy_hitters(tau_desc, max_nodes=max(64, 16 * k)) if n_hat > 0 else []
        self.cut = n_hat / k - noise_bound
        self._cands = [(int(np.uint64(x).astype(np.int64)), e) for x, e in leaves if e > self.cut]
        self._meta = {
            "route": "sketch",
            "privacy_unit": "one stream element",
            "rho": self.rho, "epsilon_sketch": self.epsilon_sketch, "delta_zcdp": self.delta_zcdp,
            "noise_bound": noise_bound, "descent_threshold": tau_desc, "final_cut": self.cut,
            "width": noisy.width, "depth": noisy.depth, "universe_bits": 64,
            "sigma2": priv.get("sigma2"), "assumes_public_length": False, "length": "private",
            "length_source": "the noisy total of the sketch (post-processing, no budget)",
            "n_used": n_hat, "neighbours": "add_remove", "epsilon_requested": self.epsilon,
            "delta_requested": self.delta, "reproducible_not_secret": self.seed is not None,
        }
        if self.strings:
            # docs/privacy.md §Sketch route, Collisions: the bound reads the noisy n_up; when n_up < n
            # (probability <= δ/3) the route may run with P(collision) above the bound, and otherwise
            # P(collision) <= n_up²/2^129 <= δ/3, so the collision term stays <= δ/3 either way and the
            # refusal is post-processing.
            self.delta_fingerprint = fingerprint_delta(self.n_up)
            if self.delta_fingerprint > self.delta / 3:
                raise ParameterError(
                    f"fingerprint collisions (probability <= n_up^2/2^{FINGERPRINT_BITS + 1} = "
                    f"{self.delta_fingerprint:.3g}, from the noisy length) exceed delta/3; raise delta to at least "
                    f"{3 * self.delta_fingerprint:.3g} or use route='counters'"
                )
        return sorted(fp for fp, _ in self._cands)

    def release(self, found: Mapping[tuple[int, int], tuple[int, int, Any]] | None = None) -> Release:
        """The release: int keys are their own leaves (post-processing of the noisy sketch); strings
        go through :func:`lookup_labels` with ``found[(φ₁, φ₂)] = (rows, distinct labels, a label)``
        for the 128-bit fingerprints whose φ₁ is a candidate."""
        meta = dict(self._meta)
        if not self.strings:
            items = sorted(self._cands, key=lambda kv: (-kv[1], kv[0]))
            meta["labels"] = "int64 keys are their own leaves: the release is post-processing of the noisy sketch"
            return Release(items=items, threshold=self.cut, epsilon=self.epsilon_total, delta=self.delta_zcdp,
                           mechanism=self.mechanism, n=self.n_hat, metadata=meta, rho=self.rho)
        d_l = self.delta / 3
        items, tau_l, threshold = lookup_labels([fp for fp, _ in self._cands], found or {}, epsilon=self.epsilon_lookup,
                                                delta=d_l, n_hat=self.n_hat, k=self.k,
                                                rng=_seeds.rng(self.seed, "lookup")[0])
        meta.update({"labels": "lookup pass: label released iff its exact count + DLap(1/epsilon_lookup) >= tau_lookup",
                     "epsilon_lookup": self.epsilon_lookup, "tau_lookup": tau_l, "delta_lookup": d_l,
                     "delta_fingerprint": self.delta_fingerprint, "n_upper": self.n_up,
                     "fingerprint_bits": FINGERPRINT_BITS,
                     "fingerprint": "sketch: xxhash64(salt, key); lookup: (xxhash64(salt, key), xxhash64(salt2, key)); "
                                    "salts drawn per release",
                     "delta_fingerprint_bound": f"n_upper^2/2^{FINGERPRINT_BITS + 1}"})
        return Release(items=items, threshold=threshold, epsilon=self.epsilon_total, delta=self.delta,
                       mechanism=self.mechanism, n=self.n_hat, metadata=meta, rho=self.rho)
