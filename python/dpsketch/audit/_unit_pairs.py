"""Neighbouring pairs for one person as the privacy unit (docs/privacy.md §Privacy unit; docs/audit.md
"The neighbouring pairs"): X and X' differ by ALL rows of one unit.

The exact-route pairs run the library's own code: the unit's rows go through
``bound_contributions``, the noise and τ come from ``_exact_plan`` (the claim), and every run draws
the release with ``_draw_release``, the function ``release_bounded_counts`` draws with, from that
plan with its noise scales multiplied by ctx.noise. The bounded-memory pair keeps the unit's rows
with ``UnitRowLimiter`` and runs DPSS at the per-row (ε', δ') of ``unit_calibration``, built with
``ctx.eps(ε')``; the claim is the unit-level ε.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from ..mechanisms import unit_level as U
from ._pairs import _NEG, _R, _cells_result, _dpss, _dpss_margins, _space_saving, _structure, pair
from ._stats import label_result

_M, _C = 3, 2  # the unit's bounds: m keys, c rows per key (ℓ1 = m·c = 6, ℓ2 = c·√m)
_HELD = _M + 2  # distinct keys the removed unit holds; bounding keeps m of them
_GUMBEL_KEYS = 10  # keys ranked by the selection pair
_BACKGROUND_UNIT = 1_000_000  # ids of the other units (one row each) start here
_GAUSSIAN_MAX_TRIALS = 200_000  # the Gaussian value pair runs 4× --trials per side, at most this


def _background(counts: dict) -> tuple[list, list]:
    """Rows of other units, one row each: ``counts[key]`` units hold ``key``."""
    keys = [k for k, n in counts.items() for _ in range(n)]
    return keys, list(range(_BACKGROUND_UNIT, _BACKGROUND_UNIT + len(keys)))


def _bounded_pair(ctx, counts: dict, unit_keys: list) -> tuple:
    """(bounded X, bounded X', {key: count(X) − count(X')} for the keys that differ, counts of X'):
    X' = the background, X = the background and one unit (id 0) with c + 1 rows of each of
    ``unit_keys``, both bounded with the same salt."""
    keys, ids = _background(counts)
    unit = [k for k in unit_keys for _ in range(_C + 1)]
    seed = ctx.run_seed(ctx.mechanism + "/salt")
    kw = dict(max_keys_per_unit=_M, max_rows_per_key=_C, seed=seed)
    bx = U.bound_contributions(np.array(keys + unit, dtype=np.int64), np.array(ids + [0] * len(unit)), **kw)
    bxp = U.bound_contributions(np.array(keys, dtype=np.int64), np.array(ids, dtype=np.int64), **kw)
    cx = dict(zip(bx.keys.tolist(), bx.counts.tolist()))
    cxp = dict(zip(bxp.keys.tolist(), bxp.counts.tolist()))
    diff = {k: cx.get(k, 0) - cxp.get(k, 0) for k in cx}
    return bx, bxp, {k: d for k, d in diff.items() if d}, cxp


def _plans(ctx, delta, noise, selection=None, k=None, m=_M, c=_C):
    """(claimed plan, plan the runs draw with): the library's plan for (ε, δ, m, c), and the same
    plan with every noise scale (σ, the Laplace scale, the Gumbel scale) times ctx.noise; τ stays."""
    claimed = U._exact_plan(ctx.epsilon, delta, m, c, noise, selection, k)
    f = Fraction(ctx.noise)
    num, den = claimed["noise_param"]
    scaled = Fraction(num, den) * (f * f if claimed["noise"] == "discrete_gaussian" else f)  # σ² or the scale
    built = {**claimed, "noise_param": [scaled.numerator, scaled.denominator]}
    if "gumbel_scale" in claimed:
        built["gumbel_scale"] = claimed["gumbel_scale"] * float(f)
    return claimed, built


def _clear_margin(plan) -> int:
    """A count above which a key passes τ except with probability < 1e-20."""
    scale = plan["sigma"] * 10 if "sigma" in plan else plan["laplace_scale"] * 47
    return int(plan["threshold"] + math.ceil(scale))


def _values_pair(noise: str):
    def fn(ctx):
        claimed, built = _plans(ctx, ctx.delta, noise)
        held = list(range(_HELD))
        n = _clear_margin(claimed)
        bx, bxp, diff, base_counts = _bounded_pair(ctx, {k: n for k in held}, held)
        _structure(len(diff) == _M and set(diff.values()) == {_C}, "unit values pair: c on exactly m kept keys")
        touched = sorted(diff)
        d = np.full(_M, float(_C))
        base = np.array([base_counts[k] for k in touched], dtype=float)
        tau = float(claimed["threshold"])  # an unreleased key reads as τ (a function of its noisy count)
        rng = ctx.rng(ctx.mechanism)

        def values(b):
            got = dict(U._draw_release(b, built, rng))
            return [float(got.get(k, tau)) for k in touched]

        def sample_cells(m):
            ox = np.array([values(bx) for _ in range(m)])
            oxp = np.array([values(bxp) for _ in range(m)])
            return ox, oxp

        if noise == "laplace":
            res = _cells_result(ctx, sample_cells, d, base, "laplace", None, claimed["epsilon"])
        else:  # the μ-test needs more runs than the all-keys-up event to catch a halved σ reliably
            res = _cells_result(ctx, sample_cells, d, base, "gaussian", np.full(_M, claimed["sigma2"]),
                                claimed["rho"], trials=max(ctx.trials, min(4 * ctx.trials, _GAUSSIAN_MAX_TRIALS)))
        res.notes.update(m=_M, c=_C, unit_keys=_HELD, count=n, threshold=claimed["threshold"])
        return res
    return fn


def _label_pair(noise: str):
    def fn(ctx):
        t0 = time.perf_counter()
        claimed, built = _plans(ctx, ctx.label_delta, noise)
        held = list(range(_HELD))
        bx, bxp, diff, _ = _bounded_pair(ctx, {100: 50}, held)
        _structure(len(diff) == _M and set(diff.values()) == {_C} and not set(diff) & set(bxp.keys.tolist()),
                   "unit label pair: m keys of count c held by the removed unit alone")
        only = set(diff)
        rng = ctx.rng(ctx.mechanism + "/label")
        hits = sum(any(k in only for k, _ in U._draw_release(bx, built, rng)) for _ in range(ctx.trials))
        # the proof charges this event δ_τ = 1 − (1 − P[noise > τ − c])^m (<= δ/2 Gaussian, δ Laplace)
        return label_result(ctx.mechanism, ctx.case, hits, ctx.trials, claimed["delta_threshold"],
                            claimed["epsilon"], ctx.confidence, t0,
                            {"m": _M, "c": _C, "unit_keys": _HELD, "threshold": claimed["threshold"],
                             "label_delta": ctx.label_delta})
    return fn


for _noise, _name in (("gaussian", "discrete_gaussian"), ("laplace", "discrete_laplace")):
    _shift = f"ℓ2 = c·√m = {_C}·√{_M}" if _noise == "gaussian" else f"ℓ1 = m·c = {_M * _C}"
    pair(f"unit.exact[{_name}]", f"one unit, {_HELD} keys × {_C + 1} rows, bounded to m={_M}, c={_C} ({_shift})",
         tests=2 if _noise == "gaussian" else 1)(_values_pair(_noise))
    pair(f"unit.exact[{_name}]", "unstable labels: m keys of count c held by the unit alone")(_label_pair(_noise))


# -- the exact route with one row as the unit (docs/privacy.md §Exact route, one row) --------------------

def _row_plans(ctx, delta, noise):
    """The m = c = 1 plans, checked to be the ones ``release_exact_counts`` releases with."""
    from ..distributed import release_exact_counts

    claimed, built = _plans(ctx, delta, noise, m=1, c=1)
    meta = release_exact_counts([0], [1], k=None, cut=None, epsilon=ctx.epsilon, delta=delta, noise=noise,
                                seed=0).metadata
    _structure(meta["noise_param"] == claimed["noise_param"] and meta["threshold"] == claimed["threshold"],
               "row exact pair: release_exact_counts runs the m = c = 1 plan")
    return claimed, built


def _row_counts(counts: dict):
    keys = np.array(sorted(counts), dtype=np.int64)
    return U._bounded_from_aggregates(keys, np.array([counts[k] for k in keys.tolist()], dtype=np.int64), 1, 1)


def _row_values_pair(noise: str):
    def fn(ctx):
        claimed, built = _row_plans(ctx, ctx.delta, noise)
        n = _clear_margin(claimed)
        bx, bxp = _row_counts({0: n + 1, 1: n, 2: n}), _row_counts({0: n, 1: n, 2: n})  # one row of key 0
        tau = float(claimed["threshold"])
        rng = ctx.rng(ctx.mechanism)

        def value(b):
            for k, v in U._draw_release(b, built, rng):
                if k == 0:
                    return float(v)
            return tau

        def sample_cells(m):
            return (np.array([[value(bx)] for _ in range(m)]), np.array([[value(bxp)] for _ in range(m)]))

        if noise == "laplace":
            res = _cells_result(ctx, sample_cells, [1.0], [float(n)], "laplace", None, claimed["epsilon"])
        else:
            res = _cells_result(ctx, sample_cells, [1.0], [float(n)], "gaussian", np.array([claimed["sigma2"]]),
                                claimed["rho"], trials=max(ctx.trials, min(4 * ctx.trials, _GAUSSIAN_MAX_TRIALS)))
        res.notes.update(count=n, threshold=claimed["threshold"])
        return res
    return fn


def _row_label_pair(noise: str):
    def fn(ctx):
        t0 = time.perf_counter()
        claimed, built = _row_plans(ctx, ctx.label_delta, noise)
        bx = _row_counts({0: 1, 1: _clear_margin(claimed)})  # key 0: the removed row's, count 1
        rng = ctx.rng(ctx.mechanism + "/label")
        hits = sum(any(k == 0 for k, _ in U._draw_release(bx, built, rng)) for _ in range(ctx.trials))
        # X' has no key 0: it is never released there; the proof charges δ_τ = P[noise > τ − 1]
        return label_result(ctx.mechanism, ctx.case, hits, ctx.trials, claimed["delta_threshold"],
                            claimed["epsilon"], ctx.confidence, t0,
                            {"threshold": claimed["threshold"], "label_delta": ctx.label_delta})
    return fn


for _noise, _name in (("gaussian", "discrete_gaussian"), ("laplace", "discrete_laplace")):
    pair(f"exact[{_name}]", "one row added to a key far above τ (ℓ1 = ℓ2 = 1)",
         tests=2 if _noise == "gaussian" else 1)(_row_values_pair(_noise))
    pair(f"exact[{_name}]", "unstable label: a key of count 1, the added row's")(_row_label_pair(_noise))


@pair("unit.exact[discrete_gaussian+gumbel]", f"which key is ranked first (k=1 of {_GUMBEL_KEYS}): one unit adds c")
def _unit_gumbel(ctx):
    # Every key clears τ (so both sides pass the same set), and the unit raises key 0's bounded
    # count by c: the monotone side, where the ratio of P(key 0 first) tends to e^{ε_sel} as the
    # number of keys grows.
    claimed, built = _plans(ctx, ctx.delta, "gaussian", "gumbel", 1)
    keys = list(range(_GUMBEL_KEYS))
    n = _clear_margin(claimed)
    bx, bxp, diff, _ = _bounded_pair(ctx, {k: n for k in keys}, [0])
    _structure(diff == {0: _C}, "unit Gumbel pair: key 0 raised by c")
    rng = ctx.rng(ctx.mechanism)

    def first_is_0(b):
        items = U._draw_release(b, built, rng)
        return 1.0 if items and items[0][0] == 0 else 0.0

    def sample(m):
        return tuple(np.array([first_is_0(b) for _ in range(m)]) for b in (bx, bxp))

    res = ctx.samplers(sample, epsilon=claimed["epsilon_selection"], delta=ctx.delta)
    res.notes.update(m=_M, c=_C, k=1, keys=_GUMBEL_KEYS, count=n, gumbel_scale=claimed["gumbel_scale"])
    return res


@pair("unit.bounded_memory[DPSS]", f"one unit's r = m·c = {_M * _C} rows on a released counter (ε/r per row)")
def _unit_bounded_memory(ctx):
    # A unit of r rows is r element steps: DPSS at unit_calibration's (ε/r, δ') is (ε, δ)-DP for
    # it (group privacy). The unit sends r + 2 rows; the row limiter keeps its first r.
    r = _M * _C
    e1, d1 = U.unit_calibration(ctx.epsilon, ctx.delta, r)
    e1_used = float(_R.epsilon_used(e1))
    gamma, t_n = _dpss_margins(e1, d1)
    c = math.ceil(4 / 3 * (gamma + 3 + r / 4 + t_n / 2 + 20 / e1_used)) + 10  # clears τ by 20/ε' (as DPSS's pair)
    keys = [1] * c + [2] * 3 + [3] * 2
    ids = list(range(_BACKGROUND_UNIT, _BACKGROUND_UNIT + len(keys)))
    limiter = U.UnitRowLimiter(r)
    kept = limiter.keep(np.array(ids + [0] * (r + 2), dtype=np.int64))
    stream = np.array(keys + [1] * (r + 2), dtype=np.int64)[kept]
    _structure(len(stream) == len(keys) + r, "unit bounded-memory pair: the limiter keeps r of the unit's rows")
    summaries = [_space_saving(4, stream.tolist()), _space_saving(4, keys)]
    eps = ctx.eps(e1)
    rng = ctx.rng(ctx.mechanism)

    def value(s):
        for k, v in _dpss(s, eps, d1, 2, rng)[0]:
            if k == 1:
                return float(v)
        return _NEG

    def sample(m):
        return tuple(np.array([value(s) for _ in range(m)]) for s in summaries)

    res = ctx.samplers(sample, epsilon=r * e1_used, delta=ctx.delta)
    res.notes.update(rows_per_unit=r, epsilon_per_row=e1, delta_per_row=d1, count=c)
    return res
