"""Weighted Gaussian key selection with one person as the privacy unit
(docs/mechanisms/person-weighted.md; Gopi et al., "Differentially Private Set Union", ICML 2020).

Each unit keeps the same set S_u of at most m distinct keys as the exact route (the m smallest
h(salt, unit, key), the same salt for the same seed) and gives each kept key the integer weight
w_u = ⌊W/√|S_u|⌋, so the unit's weight vector has ℓ2 ≤ W whatever |S_u| is. A key's score is the
sum of its holders' weights; score + DGauss(σ²) > τ selects it, σ calibrated for ℓ2 = W, τ for the
keys only the removed unit holds (person-weighted.md §Privacy map, "The threshold's δ"). Optionally
the selected keys' bounded counts (c rows per kept key) get their own Gaussian noise at a share of ρ.

Weights depend only on the unit's own rows, so removing a unit leaves every other unit's weights
and kept keys unchanged. The bounding runs in numpy over the C++ dictionary codes: a few int64
arrays over the distinct (unit, key) pairs (its memory is not measured yet).
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .. import _core, _seeds
from ..accounting.budget import Budget, charging
from ..accounting.calibration import check_privacy_params, zcdp_epsilon, zcdp_rho_for
from ..errors import ParameterError, ParameterTypeError
from ..release import Release, with_intervals
from .._validation import check_int, validate_params
from ._planning import RELEASE_PROBABILITIES, _smallest
from . import unit_level as U

__all__ = ["WEIGHT_SCALE", "WeightedScores", "weighted_scores", "release_weighted", "weighted_heavy_hitters",
           "unit_weights", "plan_weighted", "spark_weights", "scores_from_aggregates"]

WEIGHT_SCALE = 1 << 12  # W: weights are integers ⌊W/√s⌋; rounding loses at most √s/W of a weight
_EXACT_SIZES = 2048  # set sizes s <= this enter τ's δ one by one; larger ones in blocks (upper bound)
_BLOCK = 1.01  # the blocks' growth: s in [a, ⌊1.01a⌋] counted as ⌊1.01a⌋ keys of weight w(a)
_TAIL_SLACK = 1 + 1e-9  # erfc's floating-point error, rounded in the direction of a larger tail
_MAX_NUM, _MAX_PRODUCT = 1 << 57, 1 << 63  # the exact sampler's limits (samplers.hpp), with a bit to spare


def unit_weights(set_sizes, scale: int = WEIGHT_SCALE) -> np.ndarray:
    """w(s) = ⌊W/√s⌋ = ⌊√⌊W²/s⌋⌋ exactly, for each set size s >= 1 (so s·w(s)² <= W²).

    :param set_sizes: the number of keys each unit kept (ints >= 1)
    :param scale: W
    """
    s = np.asarray(set_sizes, dtype=np.int64)
    if s.size and int(s.min()) < 1:
        raise ParameterError("set sizes are >= 1")
    q = (scale * scale) // s
    w = np.floor(np.sqrt(q.astype(np.float64))).astype(np.int64)
    w -= (w * w > q).astype(np.int64)  # the float square root, corrected to the exact integer one
    w += ((w + 1) * (w + 1) <= q).astype(np.int64)
    return w


def spark_weights(F, sizes, scale: int = WEIGHT_SCALE):
    """The Spark Column of ⌊W/√s⌋ for a Column of set sizes s: the integer :func:`unit_weights`
    computes (⌊W²/s⌋ and its square root in doubles, exact below 2^52, then the same ±1 check).

    :param F: ``pyspark.sql.functions``
    :param sizes: a Column of set sizes (>= 1)
    :param scale: W
    """
    q = F.floor(F.lit(scale * scale) / sizes).cast("long")
    w = F.floor(F.sqrt(q)).cast("long")
    w = F.when(w * w > q, w - 1).otherwise(w)
    return F.when((w + 1) * (w + 1) <= q, w + 1).otherwise(w)


def scores_from_aggregates(keys, scores, counts, m: int, c: int, scale: int = WEIGHT_SCALE) -> "WeightedScores":
    """:class:`WeightedScores` that a front end computed elsewhere by this module's rule (Spark: the
    m smallest xxhash64(salt, unit, key) per unit, weights :func:`spark_weights`, sums per key).

    :param keys: the distinct keys
    :param scores: the summed integer weights of each key
    :param counts: the bounded counts of each key
    :param m: the bound on keys per unit the weights were computed for
    :param c: the bound on rows per (unit, key) of the counts
    :param scale: W
    """
    k = np.asarray(keys)
    sc, n = np.asarray(scores, dtype=np.int64), np.asarray(counts, dtype=np.int64)
    keep = sc > 0
    order = np.argsort(k[keep], kind="stable")
    return WeightedScores._sealed(k[keep][order], sc[keep][order], n[keep][order], m, c, scale)


def _gauss_tail(sigma: float):
    """An upper bound on P[Z > t], Z ~ DGauss(σ²), integer t: Q(t/σ) for t >= 0 (the sum over
    x > t is at most the integral from t, and the normaliser Σ_x e^{-x²/2σ²} >= σ√(2π) by Poisson
    summation; person-weighted.md §Privacy map, "The tail"), 1 for t < 0."""
    root2 = sigma * math.sqrt(2.0)

    def tail(t: int) -> float:
        if t < 0:
            return 1.0
        return min(1.0, 0.5 * math.erfc(t / root2) * _TAIL_SLACK)
    return tail


def _size_blocks(m: int, scale: int) -> list[tuple[int, int]]:
    """(key count, weight) pairs covering every set size s <= m: exact for s <= 2048, above in
    blocks [a, b] as (b, w(a)), which bounds every s in the block (more keys, larger weight)."""
    top = min(m, _EXACT_SIZES)
    sizes = np.arange(1, top + 1)
    out = list(zip(sizes.tolist(), unit_weights(sizes, scale).tolist()))
    a = top + 1
    while a <= m:
        b = min(m, max(a, int(a * _BLOCK)))
        out.append((b, int(unit_weights([a], scale)[0])))
        a = b + 1
    return out


def _threshold_delta(tau: int, blocks, tail) -> float:
    """δ_τ = max over the removed unit's set size s of 1 − (1 − P[Z > τ − w(s)])^s."""
    worst = 0.0
    for s, w in blocks:
        p = tail(tau - w)
        d = 1.0 if p >= 1.0 else -math.expm1(s * math.log1p(-p))
        worst = max(worst, d)
    return worst


def _fit_sampler(num: int, den: int) -> tuple[int, int]:
    """σ² = num/den rounded UP to a fraction the exact sampler takes (64·den·(⌊σ⌋+1)² < 2^64,
    num < 2^58): a larger σ² only lowers ρ, which is recomputed from the result."""
    sigma = math.isqrt(num // den) + 1
    if num < _MAX_NUM and 64 * den * sigma * sigma < _MAX_PRODUCT:
        return num, den
    d = 1
    while 64 * (2 * d) * sigma * sigma < _MAX_PRODUCT and ((num * 2 * d) // den + 1) < _MAX_NUM:
        d *= 2
    n = -(-num * d // den)  # ceil
    if n >= _MAX_NUM or 64 * d * (math.isqrt(n // d) + 1) ** 2 >= _MAX_PRODUCT:
        raise ParameterError("the weighted selection's noise is too large for the exact sampler: raise epsilon")
    return n, d


def _weighted_plan(epsilon, delta, m: int, c: int, counts: bool, count_share: float,
                   scale: int = WEIGHT_SCALE) -> dict:
    """The noise and threshold of the weighted selection (docs/mechanisms/person-weighted.md §Privacy map):
    δ/2 converts the total ρ, δ/2 pays for τ; ρ is split between the selection (ℓ2 = W) and the
    counts of the selected keys (ℓ2 = c·√m) when ``counts``."""
    eps, dlt = check_privacy_params(epsilon, delta)
    if not (0.0 < count_share < 1.0):
        raise ParameterError(f"count_share must be in (0, 1), got {count_share!r}")
    d_conv, d_tau = dlt / 2, dlt / 2
    rho = zcdp_rho_for(eps, d_conv)
    rho_sel = rho * (1.0 - count_share) if counts else rho
    num, den = _fit_sampler(*_core.release.gaussian_sigma2(scale * scale, rho_sel))
    sigma2 = num / den
    rho_sel_used = scale * scale * den / (2 * num)  # ρ = ℓ2²/(2σ²), ℓ2 = W
    plan: dict[str, Any] = {"noise": "discrete_gaussian", "weight_scale": scale, "sigma2_rational": [num, den],
                            "noise_param": [num, den], "sigma": math.sqrt(sigma2), "sigma2": sigma2,
                            "l2_sensitivity": float(scale), "rho_selection": rho_sel_used}
    rho_used = rho_sel_used
    if counts:
        l2sq = c * c * m  # the exact route's sensitivity on the selected keys' bounded counts
        cnum, cden = _core.release.gaussian_sigma2(l2sq, rho * count_share)
        rho_cnt_used = l2sq * cden / (2 * cnum)
        rho_used += rho_cnt_used
        plan.update(count_noise_param=[cnum, cden], count_sigma2=cnum / cden, count_sigma=math.sqrt(cnum / cden),
                    count_l2_sensitivity=math.sqrt(l2sq), rho_counts=rho_cnt_used, count_share=count_share)
    # τ: the smallest integer with max_s 1 − (1 − P[Z > τ − w(s)])^s <= δ/2 (a key only the removed
    # unit holds has score w(s) <= W; the unit holds s <= m keys; person-weighted.md §Threshold)
    tail = _gauss_tail(math.sqrt(sigma2))
    blocks = _size_blocks(m, scale)
    hi = scale
    while _threshold_delta(hi, blocks, tail) > d_tau:
        hi *= 2
    lo = 0
    while lo < hi:
        mid = (lo + hi) // 2
        if _threshold_delta(mid, blocks, tail) <= d_tau:
            hi = mid
        else:
            lo = mid + 1
    tau = lo
    d_tau_used = _threshold_delta(tau, blocks, tail)
    eps_used = zcdp_epsilon(rho_used, d_conv)
    plan.update(threshold=tau, threshold_persons=tau / scale, delta_threshold=d_tau_used, delta_noise=d_conv,
                rho=rho_used, epsilon=eps_used, delta=d_conv + d_tau_used, counts=bool(counts))
    return plan


class WeightedScores:
    """Per-key weighted scores (and bounded counts) of the weighted selection: made only by
    :func:`weighted_scores`, read-only, not picklable, so scores never meet other bounds.

    :ivar keys: distinct kept keys, in key order
    :ivar scores: Σ of the holders' integer weights ⌊W/√|S_u|⌋ (int64)
    :ivar counts: the bounded count of each key (c rows per kept (unit, key)), as the exact route's
    :ivar max_keys_per_unit: m
    :ivar max_rows_per_key: c
    :ivar weight_scale: W
    """

    __slots__ = ("_keys", "_scores", "_counts", "_m", "_c", "_w")

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise ParameterTypeError("WeightedScores come from dpsketch.mechanisms.unit_weighted.weighted_scores")

    @classmethod
    def _sealed(cls, keys, scores, counts, m, c, w) -> "WeightedScores":
        obj = object.__new__(cls)
        for a in (keys, scores, counts):
            a.setflags(write=False)
        for name, value in (("_keys", keys), ("_scores", scores), ("_counts", counts), ("_m", int(m)), ("_c", int(c)),
                            ("_w", int(w))):
            object.__setattr__(obj, name, value)
        return obj

    keys = property(lambda self: self._keys, doc="Distinct kept keys, in key order.")
    scores = property(lambda self: self._scores, doc="Integer weighted scores (int64).")
    counts = property(lambda self: self._counts, doc="Bounded counts (int64).")
    max_keys_per_unit = property(lambda self: self._m, doc="m.")
    max_rows_per_key = property(lambda self: self._c, doc="c.")
    weight_scale = property(lambda self: self._w, doc="W.")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("WeightedScores are read-only")

    def __reduce__(self):
        raise ParameterTypeError("WeightedScores do not pickle: bound the data again where it is released")

    def __repr__(self) -> str:  # no keys, no scores: they are data
        return f"WeightedScores(max_keys_per_unit={self._m}, max_rows_per_key={self._c}, weight_scale={self._w})"


def _kept_pairs(unit_codes, key_codes, unit_hashes, key_hashes, m, rank_of_key=None):
    """(unit code, key code, rows) of the kept (unit, key) pairs: per unit the m distinct keys with
    the smallest pair hash mix(h_u ^ mix(h_k)) (the C++ bounding's rule, bound_contributions.hpp),
    ties by the key's rank in value order when ``rank_of_key`` is given."""
    pair = (unit_codes.astype(np.uint64) << np.uint64(32)) | key_codes.astype(np.uint64)
    pair, rows = np.unique(pair, return_counts=True)  # (unit, key) deduplicated, rows counted
    uc = (pair >> np.uint64(32)).astype(np.int64)
    kc = (pair & np.uint64(0xFFFFFFFF)).astype(np.int64)
    h = U._mix(unit_hashes[uc] ^ U._mix(key_hashes[kc]))
    keys_ = (h, uc) if rank_of_key is None else (rank_of_key[kc], h, uc)
    order = np.lexsort(keys_)
    su, sh = uc[order], h[order]
    start = np.flatnonzero(np.r_[True, su[1:] != su[:-1]])
    lengths = np.diff(np.r_[start, len(su)])
    rank = np.arange(len(su)) - np.repeat(start, lengths)
    keep = order[rank < m]
    # a tie of pair hashes inside one unit at the cut decides what it keeps: the caller redoes it by rank
    tie = rank_of_key is None and bool(np.any((su[1:] == su[:-1]) & (sh[1:] == sh[:-1])))
    return uc[keep], kc[keep], rows[keep], tie


@validate_params(["max_keys_per_unit", "max_rows_per_key", "seed"])
def weighted_scores(keys, privacy_id, *, max_keys_per_unit: int, max_rows_per_key: int = 1,
                    seed: Optional[int] = None, weight_scale: int = WEIGHT_SCALE) -> WeightedScores:
    """Bound each unit to its m kept keys (the exact route's rule and salt) and score every key by
    the sum of its holders' weights ⌊W/√|S_u|⌋ (docs/mechanisms/person-weighted.md).

    :param keys: aligned 1-D int or str column of keys
    :param privacy_id: aligned 1-D int or str column of privacy ids
    :param max_keys_per_unit: m: the most distinct keys one privacy unit contributes (more: m kept, chosen
        by a salted hash)
    :param max_rows_per_key: c: the most rows one privacy unit contributes to one key (the counts)
    :param seed: a user seed for the salt (reproducible, NOT secret)
    :param weight_scale: W, the integer scale of the weights
    """
    m, c = U._check_bounds(max_keys_per_unit, max_rows_per_key)
    scale = check_int("weight_scale", weight_scale, math.isqrt(m) + 1, 1 << 20)
    keys, privacy_id = U._present_rows(keys, privacy_id)
    k = U._bounding_column(keys, "keys")
    u = U._bounding_column(privacy_id, "privacy_id")
    if len(k) != len(u):
        raise ParameterError("keys and privacy_id must have the same length (one privacy id per row)")
    salt = _seeds.rng(seed, "salt")[0].next_u64()  # the exact route's salt for the same seed
    empty = np.zeros(0, np.int64)
    if len(k) == 0:
        k = U._column(k, "keys")
        return WeightedScores._sealed(k[:0].copy(), empty, empty.copy(), m, c, scale)
    key_codes, key_values, key_hashes = U._codes(k, "keys", salt ^ U._KEY_SALT_TWEAK)
    unit_codes, _, unit_hashes = U._codes(u, "privacy_id", salt, values=False)
    uc, kc, rows, tie = _kept_pairs(unit_codes, key_codes, unit_hashes, key_hashes, m)
    if tie:
        uc, kc, rows, _ = _kept_pairs(unit_codes, key_codes, unit_hashes, key_hashes, m, U._rank(key_values))
    del unit_codes, key_codes
    sizes = np.bincount(uc)  # |S_u| of every unit (0 for none: such a unit kept nothing)
    w = unit_weights(np.maximum(sizes, 1), scale)[uc]
    nk = len(key_values)
    total = float(scale) * len(uc)
    if total >= 2.0**53:
        raise ParameterError("too many (unit, key) pairs for exact float64 sums of the weights")
    scores = np.bincount(kc, weights=w, minlength=nk).astype(np.int64)  # exact: every partial sum < 2^53
    counts = np.bincount(kc, weights=np.minimum(rows, c), minlength=nk).astype(np.int64)
    nz = np.flatnonzero(scores)
    out_keys = key_values[nz]
    order = np.argsort(out_keys, kind="stable")
    return WeightedScores._sealed(out_keys[order], scores[nz][order], counts[nz][order], m, c, scale)


@validate_params(["epsilon", "delta", "seed"])
def release_weighted(scored: WeightedScores, *, epsilon: float, delta: float, counts: bool = True,
                     count_share: float = 0.5, seed: Optional[int] = None,
                     budget: Optional[Budget] = None) -> Release:
    """Release the keys whose noisy weighted score passes τ, and with ``counts`` their bounded
    counts with noise at ``count_share`` of ρ (docs/mechanisms/person-weighted.md). Items: (key,
    noisy bounded count) by noisy count, or without counts (key, noisy score / W) by noisy score.

    :param scored: the :class:`WeightedScores` of :func:`weighted_scores`
    :param epsilon: ε of the release's (ε, δ)-DP guarantee
    :param delta: δ of the release's (ε, δ)-DP guarantee, in (0, 1)
    :param counts: also release the selected keys' noisy bounded counts (a second Gaussian at a share of ρ)
    :param count_share: the share of ρ the counts get (with ``counts``)
    :param seed: a user seed: reproducible noise, NOT secret; None: the secure generator
    :param budget: a :class:`dpsketch.Budget` charged before any noise is drawn
    """
    if not isinstance(scored, WeightedScores):
        raise ParameterTypeError("release_weighted takes the WeightedScores of weighted_scores")
    m, c, scale = scored.max_keys_per_unit, scored.max_rows_per_key, scored.weight_scale
    plan = _weighted_plan(epsilon, delta, m, c, bool(counts), count_share, scale)
    mechanism = _mechanism(bool(counts))
    with charging(budget, mechanism, epsilon=plan["epsilon"], delta=plan["delta"]):
        pass  # nothing drawn yet: a refusal spends nothing
    rng, seeded = _seeds.rng(seed, "noise")
    items = _draw_weighted(scored, plan, rng)
    meta = {
        "privacy_unit": U.PRIVACY_UNIT_ID,
        "neighbours": "add_remove_unit",
        "route": "exact",
        "selection": "weighted_gaussian",
        "max_keys_per_unit": m,
        "max_rows_per_key": c,
        "bounding": "per unit: the m distinct keys with the smallest h(salt, unit, key), <= c rows each; each kept "
                    "key weighted floor(W/sqrt(keys kept))",
        "values": ("noisy bounded counts of the selected keys" if counts else
                   "noisy weighted scores / W (person units), not counts"),
        "length": "unused",
        "epsilon_requested": float(epsilon),
        "delta_requested": float(delta),
        "reproducible_not_secret": bool(seeded),
        "reference": "docs/mechanisms/person-weighted.md",
        **{k: v for k, v in plan.items() if k not in ("epsilon", "delta")},
    }
    intervals, level = with_intervals(mechanism, items, meta)
    return Release(items=items, threshold=float(plan["threshold"]) / scale, epsilon=plan["epsilon"],
                   delta=plan["delta"], mechanism=mechanism, n=None, metadata=meta, rho=plan["rho"],
                   intervals=intervals, interval_level=level)


def _mechanism(counts: bool) -> str:
    return "unit.weighted[discrete_gaussian+counts]" if counts else "unit.weighted[discrete_gaussian]"


def _draw_weighted(scored: WeightedScores, plan: dict, rng) -> list[tuple]:
    """The random part: DGauss noise of ``noise_param`` on every score, the keys above τ, then
    (with counts) DGauss of ``count_noise_param`` on the selected keys' bounded counts. The audit
    draws its runs with this function."""
    num, den = plan["noise_param"]
    z = _core.noise.discrete_gaussian(rng, num, den, len(scored.scores))
    noisy = scored.scores + z
    sel = np.flatnonzero(noisy > plan["threshold"])
    if plan["counts"]:
        cnum, cden = plan["count_noise_param"]
        vals = scored.counts[sel] + _core.noise.discrete_gaussian(rng, cnum, cden, len(sel))
        order = sel[np.lexsort((scored.keys[sel], -vals))]
        vals_by_key = dict(zip(sel.tolist(), vals.tolist()))
        return [(k, vals_by_key[i]) for k, i in zip(scored.keys[order].tolist(), order.tolist())]
    order = sel[np.lexsort((scored.keys[sel], -noisy[sel]))]
    w = float(plan["weight_scale"])
    return [(k, v / w) for k, v in zip(scored.keys[order].tolist(), noisy[order].tolist())]


@validate_params(["epsilon", "delta", "max_keys_per_unit", "max_rows_per_key", "seed"])
def weighted_heavy_hitters(keys, privacy_id, *, epsilon: float, delta: float, max_keys_per_unit: int,
                           max_rows_per_key: int = 1, counts: bool = True, count_share: float = 0.5,
                           seed: Optional[int] = None, budget: Optional[Budget] = None) -> Release:
    """(ε, δ)-DP key selection with one ``privacy_id`` as the unit by weighted Gaussian scores:
    :func:`weighted_scores` then :func:`release_weighted`.

    :param keys: aligned 1-D int or str column of keys
    :param privacy_id: aligned 1-D int or str column of privacy ids
    :param epsilon: ε of the release's (ε, δ)-DP guarantee
    :param delta: δ of the release's (ε, δ)-DP guarantee, in (0, 1)
    :param max_keys_per_unit: m: the most distinct keys one privacy unit contributes (more: m kept, chosen
        by a salted hash)
    :param max_rows_per_key: c: the most rows one privacy unit contributes to one key (the counts)
    :param counts: also release the selected keys' noisy bounded counts
    :param count_share: the share of ρ the counts get (with ``counts``)
    :param seed: a user seed: reproducible salt and noise, NOT secret
    :param budget: a :class:`dpsketch.Budget` charged before any noise is drawn
    """
    scored = weighted_scores(keys, privacy_id, max_keys_per_unit=max_keys_per_unit,
                             max_rows_per_key=max_rows_per_key, seed=seed)
    return release_weighted(scored, epsilon=epsilon, delta=delta, counts=counts, count_share=count_share, seed=seed,
                            budget=budget)


def plan_weighted(u: Any, epsilon, delta, *, counts: bool = True, count_share: float = 0.5) -> dict:
    """The figures of a :class:`dpsketch.Plan` of the weighted selection, without data: both costs
    (the selection's σ and τ, the counts' σ) from :func:`_weighted_plan`, the release's own."""
    p = _weighted_plan(epsilon, delta, int(u.max_keys), int(u.max_rows_per_key), bool(counts), count_share)
    scale, tau = p["weight_scale"], int(p["threshold"])
    tail = _gauss_tail(p["sigma"])

    def prob(n: int) -> float:  # P(n·W + Z > τ) >= 1 − P(Z > n·W − τ − 1) (symmetric noise)
        t = n * scale - tau - 1
        return 0.0 if t < 0 else 1.0 - tail(t)

    law = {"law": "discrete_gaussian", "sigma": p["sigma"] / scale, "sigma2": p["sigma2"] / scale**2,
           "sensitivity": "l2 = 1 person (weights 1/sqrt(keys kept), integers of scale W)",
           "rho_selection": p["rho_selection"]}
    notes = [f"selection: noisy weighted score > {p['threshold_persons']:.6g} persons "
             f"(delta {p['delta_threshold']:.3g} for keys one person holds alone, over <= {u.max_keys} keys)"]
    if counts:
        law.update(count_sigma=p["count_sigma"], rho_counts=p["rho_counts"])
        notes.append(f"counts: the selected keys' bounded counts + DGauss(sigma={p['count_sigma']:.6g}) "
                     f"(l2 = {p['count_l2_sensitivity']:.6g}, {count_share:g} of rho)")
    else:
        notes.append("keys only: the values are noisy weighted scores in persons, not counts")
    return dict(mechanism=_mechanism(bool(counts)), epsilon=p["epsilon"], delta=p["delta"], rho=p["rho"],
                neighbours="add_remove_unit", threshold=tau / scale,
                threshold_rule="noisy weighted score (persons) > threshold", noise=law, interval_half_width=None,
                interval="the counts of the selected keys are unconditional Gaussian draws; no data-free "
                         "simultaneous half-width (it depends on how many keys are released)",
                smallest_count_released={q: _smallest(prob, q) for q in RELEASE_PROBABILITIES},
                released_count_means="holders who kept only this key (each weighs 1; a holder who kept s keys "
                                     "weighs 1/sqrt(s))",
                notes=tuple(notes), _probability=prob)
