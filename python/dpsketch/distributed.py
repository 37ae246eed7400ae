"""Distributed releases as library functions, free of any engine (docs/algorithms.md §8;
derivations in docs/privacy.md §Distributed releases). ``dpsketch.spark`` only moves data to
and from these functions; the audit and the tests call them directly.

:func:`release_partitions` -- the counters route: one PMG/DPSS release per key partition, every
partition's threshold reading one length bound computed for the whole data set (never an exact
per-partition length), the union of the releases.
:func:`lookup_labels` -- the sketch route's label lookup: candidate fingerprints (a DP output)
mapped back to labels by a noisy exact count that a label of count 1 rarely clears.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from . import _core
from .budget import Budget, charging
from .calibration import calibrate, make_length, privacy_record, used_value
from . import _seeds
from .release import Release
from .summaries import MisraGries, SpaceSaving
from ._validation import check_int

__all__ = ["release_partitions", "lookup_labels", "lookup_t"]

_MECHANISM = {"spacesaving": "DPSS", "misragries": "PMG"}


def release_partitions(parts: Sequence[SpaceSaving | MisraGries], *, k: int, epsilon: float, delta: float,
                       public_length: bool = False, length_epsilon: float | None = None,
                       length_delta: float | None = None, seed: int | None = None,
                       budget: Budget | None = None, partition_ids: Sequence[int] | None = None) -> Release:
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
    """
    parts = list(parts)
    kinds = {type(s) for s in parts}
    if not parts or len(kinds) != 1 or not kinds <= {SpaceSaving, MisraGries}:
        raise TypeError("parts must be a non-empty list of SpaceSaving (DPSS) or MisraGries (PMG) summaries, one class")
    summary = "spacesaving" if SpaceSaving in kinds else "misragries"
    kk = check_int("k", k, 1, 2**63 - 1)
    for s in parts:
        if s.merged:
            raise ValueError("a partition's summary must not be merged: build one summary per key partition")
        if summary == "spacesaving" and s.capacity < kk:
            raise ValueError(f"DPSS needs capacity >= k in every partition (got {s.capacity} < {kk}); the default is 2k")
    ids = list(range(len(parts))) if partition_ids is None else [int(p) for p in partition_ids]
    if len(ids) != len(parts) or len(set(ids)) != len(ids) or any(p < 0 for p in ids):
        raise ValueError("partition_ids must be distinct non-negative ints, one per part")
    if seed is not None:
        seed = check_int("seed", seed, 0, 2**64 - 1)
    cal = calibrate(epsilon, delta, "bounds" if summary == "spacesaving" else "estimate",
                    public_length=public_length, length_epsilon=length_epsilon, length_delta=length_delta)
    mechanism = f"spark.counters[{_MECHANISM[summary]}]"
    with charging(budget, mechanism, epsilon=used_value(cal["epsilon_total"]), delta=cal["delta_total"]):
        pass  # nothing has been drawn yet; a refusal spends nothing
    n = sum(s.n for s in parts)  # exact, on the driver only: it enters n̂ or (opt-in) the public n
    length = make_length(cal, n, _seeds.rng(seed, "length")[0])
    native = _core.release.dpss if summary == "spacesaving" else _core.release.pmg
    items = []
    gamma = None
    for p, s in zip(ids, parts):
        if s.n == 0:  # nothing is stored: the release would be empty whatever the noise
            continue
        rng, _ = _seeds.rng(seed, f"partition/{p}")
        got, _, _, meta = native(s._impl, cal["epsilon_mechanism"], cal["delta_mechanism"], kk, length, rng)
        items += got
        gamma = meta.get("gamma", gamma)
    items.sort(key=lambda kv: (-kv[1], kv[0]))
    if summary == "spacesaving":
        g = _core.release.dpss_gamma(cal["epsilon_mechanism"], cal["delta_mechanism"]) if gamma is None else int(gamma)
        threshold = length.n_lo / kk - g  # every partition's τ_p is at least this
    else:
        threshold = max(1 + 2 * _core.release.pmg_t(cal["epsilon_mechanism"], cal["delta_mechanism"]), length.n_hat / kk)
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
    if cal["length"] == "private":
        meta.update(n_used=length.n_hat, n_lower=length.n_lo, n_upper=length.n_up, length_t=length.t)
    return Release(items=items, threshold=threshold, epsilon=cal["epsilon_total"], delta=cal["delta_total"],
                   mechanism=mechanism, n=length.n_hat, metadata=meta)


def lookup_t(epsilon: float, delta: float) -> int:
    """Smallest integer t >= 1 with P(DLap(1/ε) >= t) = e^{-εt}/(1 + e^{-ε}) <= δ (§1 tails)."""
    t = max(1, math.ceil(math.log(1.0 / (delta * (1 + math.exp(-epsilon)))) / epsilon))
    while t > 1 and math.exp(-epsilon * (t - 1)) / (1 + math.exp(-epsilon)) <= delta:
        t -= 1
    while math.exp(-epsilon * t) / (1 + math.exp(-epsilon)) > delta:
        t += 1
    return t


def lookup_labels(candidates: Sequence[int], found: Mapping[int, tuple[int, int, Any]], *, epsilon: float,
                  delta: float, n_hat: float, k: int, rng) -> tuple[list, int, float]:
    """The label lookup of the sketch route (docs/privacy.md §Sketch route), for candidate
    fingerprints fixed before the lookup reads the data: ``found[φ] = (c, u, label)`` holds the
    exact count c of rows with fingerprint φ, the number u of distinct labels among them and one
    label. Every candidate (in sorted order, so the draws do not depend on the data) gets
    v = c + DLap(1/ε); (label, v) is released iff c >= 1, u == 1 and v >= τ = max(1 + t, n̂/k − t),
    t = :func:`lookup_t` (ε, δ): a label of count 1 is released with probability <= δ.
    ``epsilon`` is used as given (round it down first, §1). Returns (items, 1 + t, τ)."""
    t = lookup_t(epsilon, delta)
    threshold = max(1 + t, n_hat / k - t)
    num, den = _core.release.laplace_scale(1, epsilon)  # one row moves one count by 1
    fps = sorted(candidates)
    noise = _core.noise.discrete_laplace(rng, num, den, len(fps))
    items = []
    for fp, z in zip(fps, noise.tolist()):
        c, u, label = found.get(fp, (0, 0, None))
        v = c + int(z)
        if c and u == 1 and v >= threshold:
            items.append((label, v))
    items.sort(key=lambda kv: (-kv[1], kv[0]))
    return items, 1 + t, threshold
