"""Neighbouring pairs of the weighted Gaussian key selection (docs/mechanisms/person-weighted.md):
X and X' differ by all rows of one unit.

The pairs run the library's own code: the unit's rows go through ``weighted_scores``, the noise and
τ come from ``_weighted_plan`` (the claim), and every run draws with ``_draw_weighted``, the function
``release_weighted`` draws with, from that plan with its noise scales multiplied by ctx.noise.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from ..accounting.calibration import zcdp_epsilon
from ..mechanisms import unit_weighted as UW
from ._pairs import _cells_result, _structure, pair
from ._stats import label_result

_M = 4  # the unit's bound m; it sends m + 2 keys and keeps m, each of weight ⌊W/√m⌋
_BACKGROUND_UNIT = 1_000_000
_GAUSSIAN_MAX_TRIALS = 200_000


def _plans(ctx, delta, counts, m=_M):
    """(claimed plan, plan the runs draw with): σ² of the scores (and of the counts) times ctx.noise²."""
    claimed = UW._weighted_plan(ctx.epsilon, delta, m, 1, counts, 0.5)
    f2 = Fraction(ctx.noise) ** 2
    built = dict(claimed)
    for key in ("noise_param", "count_noise_param"):
        if key in claimed:
            s = Fraction(*claimed[key]) * f2
            built[key] = [s.numerator, s.denominator]
    return claimed, built


def _scored(ctx, background: dict, unit_keys: list, m: int = _M):
    """(scores of X, scores of X'): X' = units of one row each (``background[key]`` of them hold
    ``key``), X = X' and unit 0 holding ``unit_keys`` (two rows each); the same salt."""
    keys = [k for k, n in background.items() for _ in range(n)]
    ids = list(range(_BACKGROUND_UNIT, _BACKGROUND_UNIT + len(keys)))
    unit = [k for k in unit_keys for _ in range(2)]
    seed = ctx.run_seed(ctx.mechanism + "/salt")
    kw = dict(max_keys_per_unit=m, seed=seed)
    sx = UW.weighted_scores(np.array(keys + unit, dtype=np.int64), np.array(ids + [0] * len(unit), dtype=np.int64),
                            **kw)
    sxp = UW.weighted_scores(np.array(keys, dtype=np.int64), np.array(ids, dtype=np.int64), **kw)
    return sx, sxp


def _far_above(plan) -> int:
    """Background holders per key: the key's score clears τ except with probability < 1e-20."""
    return int(math.ceil((plan["threshold"] + 10 * plan["sigma"]) / plan["weight_scale"])) + 1


def _values_pair(counts: bool):
    def fn(ctx):
        claimed, built = _plans(ctx, ctx.delta, counts)
        held = list(range(_M + 2))
        n = _far_above(claimed)
        sx, sxp = _scored(ctx, {k: n for k in held}, held)
        fx, fxp = (dict(zip(s.keys.tolist(), (s.counts if counts else s.scores).tolist())) for s in (sx, sxp))
        diff = {k: fx[k] - fxp.get(k, 0) for k in fx if fx[k] != fxp.get(k, 0)}
        step = 1 if counts else int(UW.unit_weights([_M])[0])
        _structure(len(diff) == _M and set(diff.values()) == {step}, "weighted values pair: w(m) (or 1) on m keys")
        touched = sorted(diff)
        scale = 1.0 if counts else float(claimed["weight_scale"])
        base = np.array([fxp[k] for k in touched], dtype=float)
        rng = ctx.rng(ctx.mechanism)

        def values(s):
            got = dict(UW._draw_weighted(s, built, rng))
            return [float(got[k]) * scale for k in touched]  # every touched key clears τ

        def sample_cells(mm):
            return np.array([values(sx) for _ in range(mm)]), np.array([values(sxp) for _ in range(mm)])

        sigma2 = claimed["count_sigma2"] if counts else claimed["sigma2"]
        rho = claimed["rho_counts"] if counts else claimed["rho_selection"]
        trials = max(ctx.trials, min(4 * ctx.trials, _GAUSSIAN_MAX_TRIALS))
        if counts:
            res = _cells_result(ctx, sample_cells, np.full(_M, float(step)), base, "gaussian", np.full(_M, sigma2),
                                rho, trials=trials)
        else:
            # σ is thousands of units here, where the discrete Gaussian's excess μ over √(2ρ) is nil
            # (and its exact computation, a convolution over ±14σ, too slow): the statistic and the
            # μ-test of _cells_result with the continuous bound
            weight = np.full(_M, float(step)) / sigma2

            def sample(mm):
                cx, cxp = sample_cells(mm)
                return (cx - base) @ weight, (cxp - base) @ weight

            res = ctx.samplers(sample, epsilon=zcdp_epsilon(rho, ctx.delta), delta=ctx.delta, mu=math.sqrt(2 * rho),
                               trials=trials)
        res.notes.update(m=_M, unit_keys=_M + 2, holders=n, threshold=claimed["threshold"])
        return res
    return fn


def _worst_size(plan, m: int) -> int:
    """The set size s <= m whose keys, held by the removed unit alone, pass τ most often."""
    tail = UW._gauss_tail(plan["sigma"])
    ws = UW.unit_weights(np.arange(1, m + 1), plan["weight_scale"]).tolist()
    return max(range(1, m + 1), key=lambda s: -math.expm1(s * math.log1p(-tail(plan["threshold"] - ws[s - 1]))))


def _label_pair(counts: bool):
    def fn(ctx):
        t0 = time.perf_counter()
        claimed, built = _plans(ctx, ctx.label_delta, counts)
        s = _worst_size(claimed, _M)
        held = list(range(s))
        sx, sxp = _scored(ctx, {100: 50}, held)
        _structure(set(held) <= set(sx.keys.tolist()) and not set(held) & set(sxp.keys.tolist()),
                   "weighted label pair: the unit's keys are its own")
        rng = ctx.rng(ctx.mechanism + "/label")
        only = set(held)
        hits = sum(any(k in only for k, _ in UW._draw_weighted(sx, built, rng)) for _ in range(ctx.trials))
        # charged δ_τ = max_s 1 − (1 − P[Z > τ − w(s)])^s <= δ/2
        return label_result(ctx.mechanism, ctx.case, hits, ctx.trials, claimed["delta_threshold"], claimed["epsilon"],
                            ctx.confidence, t0, {"m": _M, "unit_keys": s, "threshold": claimed["threshold"],
                                                 "label_delta": ctx.label_delta})
    return fn


for _counts in (False, True):
    _name = UW._mechanism(_counts)
    _what = ("its bounded counts (+1 on m keys)" if _counts
             else f"the scores (+w(m) = ⌊W/√{_M}⌋ on m keys, ℓ2 <= W)")
    pair(_name, f"one unit sharing {_M + 2} keys with others, bounded to m={_M}: {_what}",
         tests=2)(_values_pair(_counts))
    pair(_name, "unstable labels: the keys one unit holds alone (the worst set size <= m)")(_label_pair(_counts))
