"""The distributed heavy-hitter mechanisms' plans and releases (docs/algorithms.md §8;
docs/mechanisms/distributed.md): every threshold, length and calibration of the counters route
over key partitions, and the exact route for one row. ``dpsketch.distributed`` (partitions,
windows) and ``dpsketch.spark`` (the engine) only wire: they check, partition, collect and call
these functions.

Counters route: :func:`counters_calibration` (how (ε, δ) is spent, the length's share included),
:func:`counters_length` (one length for the whole data set), :func:`release_partition` (one
partition's DPSS/PMG release at that length) and :func:`release_union` (the union's threshold,
the n/k cut, top-k and the Release).
Exact route: :func:`exact_counts_plan` and :func:`release_exact_counts`.
"""

from __future__ import annotations

from bisect import bisect_right
from operator import itemgetter

import numpy as np

from .. import _core, _seeds
from .._validation import check_int
from ..accounting.budget import Budget, charging
from ..accounting.calibration import calibrate, make_length, used_value
from ..errors import ParameterError
from ..release import Release, build_release, mechanism_release
from .dpss import check_cut, two_pass_release
from .top_k import select_top_k

__all__ = ["COUNTERS_MECHANISM", "counters_calibration", "counters_charge", "counters_length", "release_partition", "release_union",
           "exact_counts_plan", "release_exact_counts"]

COUNTERS_MECHANISM = {"spacesaving": "DPSS", "misragries": "PMG"}


def counters_calibration(summary: str, epsilon: float, delta: float, *, public_length: bool = False,
                         length_epsilon: float | None = None, length_delta: float | None = None) -> dict:
    """How the counters route spends (ε, δ) (docs/privacy.md §Counters route, §Stream length): DPSS
    reads length bounds in its thresholds, PMG an estimate for its cut n̂/k; the length's share
    (default ε/10, δ/10) or the public n (replace-one neighbours). Raises on every bad parameter.

    :param summary: "spacesaving" (DPSS: reads length bounds) or "misragries" (PMG: reads the estimate n̂)
    :param epsilon: total ε of the release, the length's share included
    :param delta: total δ of the release, in (0, 1), the length's share included
    :param public_length: treat the exact total n as public (replace-one neighbours; no length share)
    :param length_epsilon: ε spent on the noisy length (default ε/10; below ``epsilon``)
    :param length_delta: δ spent on the noisy length's bounds (DPSS only, default δ/10; below ``delta``)
    """
    return calibrate(epsilon, delta, "bounds" if summary == "spacesaving" else "estimate",
                     public_length=public_length, length_epsilon=length_epsilon, length_delta=length_delta)


def counters_length(cal: dict, n: int, seed: int | None):
    """The one length all partitions read: n̂ = n + DLap(1/ε_n) from the seed's "length" stream, or
    the public n (docs/privacy.md §Counters route: never an exact per-partition length).

    :param cal: the calibration of :func:`counters_calibration`
    :param n: the exact total length Σ n_p of all partitions (enters only n̂, or the opted-in public n)
    :param seed: reproducible noise, NOT secret (None: keyed from the operating system)
    """
    return make_length(cal, n, _seeds.rng(seed, "length")[0])


def counters_charge(cal: dict) -> dict:
    """What a budget is charged for a counters-route release of calibration ``cal``: its total ε as
    used (rounded down, docs/algorithms.md §1) and total δ."""
    return {"epsilon": used_value(cal["epsilon_total"]), "delta": cal["delta_total"]}


def release_partition(summary: str, part, *, cal: dict, k: int, length, seed: int | None, partition_id: int,
                      keys: list | None = None, counts: list | None = None) -> tuple[list, dict]:
    """One key partition's (items, native metadata): DPSS τ_p = max(n_lo/k − γ, n_up/k̃_p + 1 + γ)
    or PMG (v >= 1 + 2t) on its own summary at the mechanism's share of (ε, δ), the noise from the
    seed's "partition/{id}" stream; with ``keys``/``counts`` the exact counts of the second pass
    (docs/privacy.md §DPSS "Two passes").

    :param summary: "spacesaving" (DPSS) or "misragries" (PMG): the class of ``part``
    :param part: the partition's own unmerged SpaceSaving or MisraGries summary
    :param cal: the calibration of :func:`counters_calibration`; the partition runs at its mechanism share
    :param k: the threshold's k (frequency cut n/k)
    :param length: the one Length of the whole data set (:func:`counters_length`)
    :param seed: reproducible noise, NOT secret (None: keyed from the operating system)
    :param partition_id: the partition's non-negative id: names its noise stream "partition/{id}"
    :param keys: DPSS second pass only: the keys ``part`` tracks after the first pass (None: one pass)
    :param counts: the exact counts of ``keys``, aligned with them
    """
    rng, _ = _seeds.rng(seed, f"partition/{partition_id}")
    if keys is not None:
        got, _, _, meta = two_pass_release(keys, list(counts or ()), epsilon=cal["epsilon_mechanism"], delta=cal["delta_mechanism"],
                                           k=k, capacity=part.capacity, length=length, rng=rng)
        return got, meta
    native = _core.release.dpss if summary == "spacesaving" else _core.release.pmg
    got, _, _, meta = native(part._impl, cal["epsilon_mechanism"], cal["delta_mechanism"], k, length, rng)
    return got, meta


def release_union(summary: str, items: list, *, cal: dict, k: int, length, gamma, epsilon_used, cut: str | None,
                  top_k: int | None, passes: int, partitions: int, capacities: list, epsilon: float, delta: float,
                  seed: int | None, mechanism: str) -> Release:
    """The union of the partitions' releases (parallel composition, docs/algorithms.md §8) as one
    Release: DPSS keeps the values >= n̂/k with ``cut="n/k"`` (post-processing; n̂/k > n_lo/k − γ,
    docs/privacy.md §DPSS "The n/k cut"), its threshold otherwise n_lo/k − γ (every τ_p is at least
    that); PMG's threshold is max(1 + 2t, n̂/k). ``top_k`` keeps the N largest (§Exact-k). The
    record states the partitions, the one length and the interval rule's inputs (the public
    number of counters Σ capacities, the smallest capacity).

    :param summary: "spacesaving" (DPSS) or "misragries" (PMG)
    :param items: the (key, noisy value) pairs of all the partitions' releases
    :param cal: the calibration of :func:`counters_calibration`
    :param k: the threshold's k (frequency cut n/k)
    :param length: the one Length all partitions read (:func:`counters_length`)
    :param gamma: DPSS's γ as the partitions' metadata reports it (None: computed from the mechanism share)
    :param epsilon_used: the ε the partitions report as used (None: the calibration's mechanism ε); recorded only
    :param cut: "n/k" or None (DPSS only; PMG always cuts at n̂/k)
    :param top_k: keep only the N largest noisy values of the union (None: no top-k cut)
    :param passes: 1, or 2 for the two-pass (exact counts) release; recorded for DPSS
    :param partitions: the number of partitions, recorded in the metadata
    :param capacities: every partition's summary capacity (public; the interval rule's inputs)
    :param epsilon: the ε asked for, recorded as requested (the Release's ε is the calibration's total)
    :param delta: the δ asked for, recorded as requested (the Release's δ is the calibration's total)
    :param seed: only whether it is None is read: a seeded release is flagged reproducible and NOT secret
    :param mechanism: the Release's mechanism name, e.g. "spark.counters[DPSS]"
    """
    items = sorted(items, key=lambda kv: (-kv[1], kv[0]))
    if summary == "spacesaving":
        g = _core.release.dpss_gamma(cal["epsilon_mechanism"], cal["delta_mechanism"]) if gamma is None else int(gamma)
        threshold = length.n_lo / k - g  # every partition's τ_p is at least this
        if cut == "n/k":  # post-processing of the union and n̂; n̂/k > n_lo/k − γ
            threshold = length.n_hat / k
            items = [(key, v) for key, v in items if v >= threshold]
        inclusive = cut == "n/k"
    else:
        threshold = max(1 + 2 * _core.release.pmg_t(cal["epsilon_mechanism"], cal["delta_mechanism"]), length.n_hat / k)
        inclusive = True
    selected: dict = {}
    if top_k is not None:
        items, _, _, selected = select_top_k((items, threshold, None, {}), top_k)
    meta = {
        "route": "counters",
        "composition": "parallel: partitions by a hash of the key alone, each row in exactly one partition "
                       "(docs/algorithms.md §8); one length for all partitions; the union of the per-partition "
                       "releases is (epsilon, delta)-DP",
        "partitions": partitions,
        "partition_thresholds": ("DPSS tau_p = max(n_lo/k - gamma, n_up/capacity_p + 1 + gamma)" if summary == "spacesaving"
                                 else "PMG: v >= 1 + 2t and v >= n_hat/k") + " from the one length of the whole data set",
        "summary": summary,
        "capacity_per_partition": sorted(set(capacities)),
        "counters_total": int(sum(capacities)),
        "capacity_min": int(min(capacities)),
        "k": k,
        "partition_order": "sorted by key inside each partition (input order depends on the multiset only)",
        "length_epsilon": cal["length_epsilon"],
        "length_delta": cal["length_delta"],
        "epsilon_used": cal["epsilon_mechanism"] if epsilon_used is None else epsilon_used,
        "n_used": length.n_hat,
    }
    if summary == "spacesaving":
        meta["gamma"] = g
        meta["cut"] = "none" if cut is None else cut
        meta["passes"] = passes
    if cal["length"] == "private":
        meta.update(n_lower=length.n_lo, n_upper=length.n_up, length_t=length.t)
    meta.update(selected)
    return build_release((items, threshold, inclusive, meta), mechanism=mechanism, cal=cal, epsilon=float(epsilon),
                         delta=float(delta), seeded=seed is not None, extra={})


def exact_counts_plan(epsilon: float, delta: float, noise: str = "gaussian") -> tuple[str, dict]:
    """(mechanism name, plan) of :func:`release_exact_counts`: the unit-level exact route's noise and
    τ for one row (m = c = 1; docs/privacy.md §Exact route, one row). Reads no data: a front end
    charges the budget with it before it aggregates.

    :param epsilon: ε of the release
    :param delta: δ of the release, in (0, 1)
    :param noise: "gaussian" (discrete Gaussian, the default) or "laplace" (discrete Laplace)
    """
    from . import unit_level as U

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
    drawn.

    :param keys: the distinct keys, a 1-D sequence of int64 or str
    :param counts: each key's exact count over the whole data set (positive ints, aligned with ``keys``)
    :param k: the cut's k (keep noisy values >= M/k); needed with cut="n/k", may be None with cut=None
    :param epsilon: ε of the release's (ε, δ)-DP guarantee
    :param delta: δ of the release's (ε, δ)-DP guarantee, in (0, 1)
    :param noise: "gaussian" (discrete Gaussian, the default) or "laplace" (discrete Laplace)
    :param cut: "n/k" (default) or None (keep every key above τ)
    :param seed: reproducible noise, NOT secret (experiments only)
    :param budget: a :class:`dpsketch.Budget` charged (ε, δ) before any noise is drawn
    """
    from . import unit_level as U

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
    above = len(items)  # keys above τ before the cut: the intervals' union runs over them
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
        "above_threshold": above,
        **{key: v for key, v in plan.items() if key not in ("epsilon", "delta", "epsilon_selection")},
    }
    return mechanism_release(items, threshold=threshold, epsilon=plan["epsilon"], delta=plan["delta"],
                             mechanism=mechanism, n=None, metadata=meta, rho=plan.get("rho"))


