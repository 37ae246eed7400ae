"""Private quantiles of data held in memory (a column, a file read once), pure ε-DP under
add/remove-one-value neighbours (docs/privacy.md §In-memory quantiles):

- ``"exp"``: the exponential mechanism over the intervals between the sorted values (after Smith
  2011), one quantile per run; several levels share ε evenly (basic composition).
- ``"joint"``: JointExp (after Gillenwater, Joseph and Kulesza 2021): one exponential mechanism
  over sorted output vectors, sampled by dynamic programming over the intervals in O(m²·n)
  log-space operations.
- ``"recursive"``: the recursive split (after Kaplan, Schnapp and Stemmer 2022): the middle level
  by the exponential mechanism, then each side recursively on the values below / above it;
  ⌊log2 m⌋ + 1 levels of recursion, ε split evenly over them, parallel composition within a level.
- ``"auto"``: "exp" for one level, "joint" up to :data:`JOINT_MAX_LEVELS` levels, "recursive"
  beyond (the crossover measured by bench/bench_quantile_peers.py, docs/results.md).

These need the whole data set in memory; streams, turnstile updates and Spark use the dyadic
sketch (:class:`dpsketch.PrivateDyadicCountSketch`). ``scale="log"`` runs the same mechanisms on
log-values and releases DDSketch-style bucket representatives (relative accuracy α) for positive,
heavy-tailed data such as latencies.

Every probability is computed in float64 in log space and every draw comes from the ChaCha20
generator of dpsketch._seeds (keyed from the OS, or from ``seed=``: reproducible, NOT secret).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _seeds
from .._validation import check
from ..accounting.budget import Budget, charging
from ..accounting.profile import Profile, profile_record
from ..accounting.calibration import PRIVACY_UNIT, check_privacy_params, used_value
from ..errors import ParameterError, ParameterTypeError
from ..release import Release

__all__ = ["quantiles", "interval_record", "JOINT_MAX_LEVELS", "METHODS"]

METHODS = ("auto", "exp", "joint", "recursive")
# "auto" uses JointExp up to this many distinct levels and the recursive split above (measured:
# docs/results.md §"In-memory private quantiles"; JointExp's cost also grows as m²·n).
JOINT_MAX_LEVELS = 8
_MECHANISM = {"exp": "ExponentialQuantiles", "joint": "JointExp", "recursive": "RecursiveExpQuantiles"}
_U53 = 2.0**-53


# ------------------------------------------------------------------------------ sampling --------
def _uniform(rng) -> float:
    """A uniform double in [0, 1): 53 bits of the ChaCha20 stream."""
    return (rng.next_u64() >> 11) * _U53


def _categorical(rng, logw: np.ndarray) -> int:
    """Index i with probability exp(logw[i]) / Σ_j exp(logw[j]); weights of −∞ are never drawn."""
    top = float(np.max(logw))
    w = np.exp(logw - top)  # the largest weight is 1: no overflow, underflow only far below it
    cum = np.cumsum(w)
    i = int(np.searchsorted(cum, _uniform(rng) * cum[-1], side="right"))
    return min(i, int(np.flatnonzero(w > 0)[-1]))  # U·total may round up to the total


def _log(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(x)


def _intervals(xs: np.ndarray, lo: float, hi: float):
    """Edges lo, x_1..x_n, hi of the n + 1 intervals between sorted clamped values, and the log
    of their lengths (−∞ for the empty intervals between equal values)."""
    edges = np.concatenate(([lo], xs, [hi]))
    return edges, _log(np.diff(edges))


def _em_sensitivity(q: float) -> float:
    """Sensitivity of u(y) = −|#{x < y} − q·n| under adding or removing one value: the shift
    inside |·| is [z < y] − q ∈ {−q, 1 − q} (docs/privacy.md §In-memory quantiles)."""
    return max(q, 1.0 - q)


def _exp_quantile(rng, xs: np.ndarray, lo: float, hi: float, q: float, eps: float) -> float:
    """One ε-DP quantile (docs/privacy.md §In-memory quantiles, the exponential mechanism): interval
    i (i values below it) with weight len_i·exp(−ε·|i − q·n|/(2Δ_q)), then uniform within it."""
    if not hi > lo:  # an empty sub-range of the recursive split: nothing to choose
        return lo
    n = len(xs)
    edges, loglen = _intervals(xs, lo, hi)
    logw = loglen - eps / (2 * _em_sensitivity(q)) * np.abs(np.arange(n + 1) - q * n)
    i = _categorical(rng, logw)
    return float(min(edges[i] + _uniform(rng) * (edges[i + 1] - edges[i]), edges[i + 1]))


# ------------------------------------------------------------------------------ JointExp --------
def _window_logsumexp(x: np.ndarray, width: int) -> np.ndarray:
    """out[e] = log Σ_{i = max(0, e−width+1)}^{e} exp(x[i]), by block prefix/suffix sums
    (van Herk / Gil–Werman): no subtraction, so no cancellation in log space."""
    n = len(x)
    xp = np.concatenate((np.full(width - 1, -np.inf), x))
    blocks = -(-len(xp) // width)
    xp = np.concatenate((xp, np.full(blocks * width - len(xp), -np.inf))).reshape(blocks, width)
    prefix = np.logaddexp.accumulate(xp, axis=1).ravel()
    suffix = np.logaddexp.accumulate(xp[:, ::-1], axis=1)[:, ::-1].ravel()
    start = np.arange(n)
    return np.where(start % width == 0, suffix[start], np.logaddexp(suffix[start], prefix[start + width - 1]))


def _gap_transition(prev: np.ndarray, c: float, t: float) -> np.ndarray:
    """out[b] = log Σ_{a<b} exp(prev[a] − c·|b − a − t|): the next quantile in a later interval,
    b − a values between the two (docs/privacy.md §In-memory quantiles, JointExp). The kernel is
    e^{−c(t−d)} for gaps d ≤ ⌊t⌋ (a window) and e^{−c(d−t)} beyond (a geometric recursion)."""
    size = len(prev)
    idx = np.arange(size, dtype=np.float64)
    out = np.full(size, -np.inf)
    whole = int(math.floor(t))
    first = max(1, whole + 1)  # gaps d >= first have d > t
    if first < size:
        # G(e) = Σ_{a<=e} prev(a)·e^{−c(e−a)} as a running log-sum-exp of prev(a) + c·a
        g = np.logaddexp.accumulate(prev + c * idx) - c * idx
        out[first:] = g[: size - first] - c * first + c * t
    if whole >= 1:
        # gaps 1..whole: a in [b − whole, b − 1], weight e^{−c(t − b)}·e^{−c·a}
        w = _window_logsumexp(prev - c * idx, whole)
        out[1:] = np.logaddexp(out[1:], w[:-1] + c * (idx[1:] - t))
    return out


class _JointTables:
    """The forward tables of JointExp on sorted clamped values ``xs`` and increasing levels ``qs``.

    The output o_1 ≤ … ≤ o_m has density ∝ exp(c·u(o)) on the ordered region of [lo, hi]^m, with
    u(o) = −Σ_{j=1}^{m+1} |n_j − (q_j − q_{j−1})·n| (n_j: values in (o_{j−1}, o_j], o_0 = lo,
    o_{m+1} = hi, q_0 = 0, q_{m+1} = 1) and c = ε/(2Δ), Δ = 2. Placing o_j in interval i_j gives
    n_j = i_j − i_{j−1}; a run of r outputs in one interval of length ℓ has volume ℓ^r/r!, so
    ``run[j][r−1](b)`` = log of the total weight of o_1..o_j with o_j the r-th of a run in interval
    b. Only run length 1 is kept per level (``first``); longer runs are rebuilt from it."""

    def __init__(self, xs: np.ndarray, lo: float, hi: float, qs: np.ndarray, eps: float):
        n, m = len(xs), len(qs)
        self.n, self.m = n, m
        self.c = c = eps / 4.0  # exp(ε·u/(2Δ)) with Δ = 2
        self.edges, self.loglen = edges, loglen = _intervals(xs, lo, hi)
        levels = np.concatenate(([0.0], qs, [1.0]))
        self.gaps = np.diff(levels) * n  # t_1..t_{m+1}: target values per gap
        b = np.arange(n + 1, dtype=np.float64)
        runs = [loglen - c * np.abs(b - self.gaps[0])]  # o_1: i_1 values in [lo, o_1]
        self.first = [runs[0]]
        self.total = [runs[0]]
        for j in range(1, m):
            t = float(self.gaps[j])
            new = [loglen + _gap_transition(self.total[-1], c, t)]
            # o_{j+1} in the same interval as o_j: gap 0, the run grows by one (volume ℓ^r/r!)
            new += [run + loglen - math.log(r + 2) - c * t for r, run in enumerate(runs)]
            runs = new
            self.first.append(runs[0])
            self.total.append(np.logaddexp.reduce(np.vstack(runs), axis=0))
        last = -c * np.abs((n - b) - self.gaps[m])  # values in (o_m, hi]
        self.final = np.vstack(runs) + last  # [r − 1, b]

    def log_normalizer(self) -> float:
        return float(np.logaddexp.reduce(self.final.ravel()))

    def _run_weights(self, j: int, a: int) -> np.ndarray:
        """log weight of o_j (0-based level j) as the r-th of a run in interval a, r = 1..j+1."""
        out = np.empty(j + 1)
        for r in range(1, j + 2):
            start = j - r + 1  # the run's first level
            out[r - 1] = (self.first[start][a] + (r - 1) * self.loglen[a] - math.lgamma(r + 1)
                          - self.c * float(np.sum(self.gaps[start + 1: j + 1])))
        return out

    def sample_intervals(self, rng) -> list[int]:
        """Interval indices i_1 ≤ … ≤ i_m drawn from the JointExp distribution (backward sampling)."""
        flat = _categorical(rng, self.final.ravel())
        r, b = divmod(flat, self.n + 1)
        r += 1
        out = [0] * self.m
        j = self.m - 1
        while True:
            for k in range(r):
                out[j - k] = b
            start = j - r + 1
            if start == 0:
                return out
            # o_{start−1} in an interval a < b, weighted by the tables and the gap kernel
            a_idx = np.arange(b)
            logw = self.total[start - 1][:b] - self.c * np.abs(b - a_idx - self.gaps[start])
            a = _categorical(rng, logw)
            j = start - 1
            r = _categorical(rng, self._run_weights(j, a)) + 1
            b = a

    def sample(self, rng) -> np.ndarray:
        """o_1 ≤ … ≤ o_m: intervals from the tables, then the outputs of each run as sorted
        uniforms in its interval (uniform on the ordered region)."""
        idx = self.sample_intervals(rng)
        out = np.empty(self.m)
        j = 0
        while j < self.m:
            k = j
            while k < self.m and idx[k] == idx[j]:
                k += 1
            lo, hi = self.edges[idx[j]], self.edges[idx[j] + 1]
            out[j:k] = np.sort([min(lo + _uniform(rng) * (hi - lo), hi) for _ in range(k - j)])
            j = k
        return out


# ------------------------------------------------------------------------------ recursive -------
def recursion_levels(m: int) -> int:
    """Levels of the recursive split for m distinct quantile levels: ⌊log2 m⌋ + 1 (the middle
    level splits m into parts of at most ⌊m/2⌋)."""
    return int(m).bit_length()


def _recursive(rng, xs: np.ndarray, lo: float, hi: float, qs: np.ndarray, eps_level: float) -> np.ndarray:
    """docs/privacy.md §In-memory quantiles, the recursive split: the middle level on the current
    values (its level rescaled to them), then the values below / at or above the answer for the
    levels below / above it. Each value is in one sub-problem per recursion level."""
    out = np.empty(len(qs))
    todo = [(0, len(qs), xs, lo, hi, 0.0, 1.0)]
    while todo:
        i0, i1, sub, a, b, qa, qb = todo.pop()
        if i0 >= i1:
            continue
        mid = (i0 + i1) // 2
        q = min(1.0, max(0.0, (qs[mid] - qa) / (qb - qa)))
        o = _exp_quantile(rng, sub, a, b, q, eps_level)
        out[mid] = o
        k = int(np.searchsorted(sub, o, side="left"))
        todo.append((i0, mid, sub[:k], a, o, qa, float(qs[mid])))
        todo.append((mid + 1, i1, sub[k:], o, b, float(qs[mid]), qb))
    return out


# ------------------------------------------------------------------------------ front end -------
def _check_levels(qs) -> tuple[np.ndarray, bool]:
    scalar = isinstance(qs, numbers.Real) and not isinstance(qs, bool)
    try:
        q = np.asarray(qs, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterTypeError("qs must be a number or a sequence of numbers in [0, 1]") from None
    if q.ndim > 1 or q.size == 0:
        raise ParameterError("qs must be a number or a non-empty 1-D sequence of levels in [0, 1]")
    q = np.atleast_1d(q)
    if np.isnan(q).any() or (q < 0).any() or (q > 1).any():
        raise ParameterError("quantile levels must be in [0, 1]")
    return q, scalar


def _check_bounds(bounds, positive: bool) -> tuple[float, float]:
    if bounds is None:
        raise ParameterError("bounds=(lo, hi) is required: a public range, chosen without looking at the data")
    lo, hi = check("bounds", bounds)
    if positive and not lo > 0:
        raise ParameterError("scale='log' needs bounds=(min_positive, max) with min_positive > 0 "
                             "(values below it are clamped up to it)")
    return lo, hi


def _check_values(values) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind == "b":
        raise ParameterTypeError("values must be numbers, not booleans")
    if arr.dtype.kind not in "iuf":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise ParameterTypeError(f"values must be numbers, got an array of dtype {arr.dtype}") from None
    if arr.ndim != 1:
        raise ParameterError(f"values must be a 1-D array, got {arr.ndim} dimensions")
    v = arr.astype(np.float64, copy=False)
    # Each value on its own (docs/privacy.md §In-memory quantiles): NaN has no place in the order
    # and is dropped, ±inf is clamped to the bounds with every other value. An error here would let
    # one value decide between a refusal and a release.
    nan = np.isnan(v)
    return v[~nan] if nan.any() else v


def check_params(qs, *, bounds, epsilon, method="auto", scale="linear", relative_accuracy=0.01,
                 integer=False) -> tuple:
    """(levels, (lo, hi), ε, α) of a :func:`quantiles` call, after every check that reads only the
    parameters (the plans of docs/routes.md make the same checks). α is 0 unless scale="log"."""
    if method not in METHODS:
        raise ParameterError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    if scale not in ("linear", "log"):
        raise ParameterError(f"scale must be 'linear' or 'log', got {scale!r}")
    levels, _ = _check_levels(qs)
    lo, hi = _check_bounds(bounds, positive=scale == "log")
    eps, _ = check_privacy_params(epsilon, 0.5)
    alpha = 0.0  # read only with scale="log"
    if scale == "log":
        if isinstance(relative_accuracy, bool) or not isinstance(relative_accuracy, numbers.Real) \
                or not 0 < float(relative_accuracy) < 1:
            raise ParameterError(f"relative_accuracy must be in (0, 1), got {relative_accuracy!r}")
        alpha = float(relative_accuracy)
    if not isinstance(integer, bool):
        raise ParameterTypeError(f"integer must be True or False, got {type(integer).__name__}")
    if integer and (scale == "log" or not (lo.is_integer() and hi.is_integer())):
        raise ParameterError("integer=True needs integer bounds and the linear scale")
    return levels, (lo, hi), eps, alpha


def quantile_profile(method: str, eps_used, distinct_levels: int) -> tuple:
    """The privacy profile of an in-memory quantile release (docs/accounting.md §Profiles): each
    exponential-mechanism draw exp(ε'·u/(2Δu)) is ε'-bounded-range (Durfee & Rogers 2019), so
    'exp' is m parts of η = ε/m, 'joint' (JointExp) one part of η = ε, and 'recursive' one part
    of η = ε/L per recursion level (the level's draws act on disjoint sub-ranges of the data, so
    one element changes one of them: the level is η-bounded-range)."""
    from fractions import Fraction

    eps = Fraction(eps_used)
    if method == "exp":
        return tuple(Profile.bounded_range(eps / distinct_levels) for _ in range(distinct_levels))
    if method == "joint":
        return (Profile.bounded_range(eps),)
    levels = recursion_levels(distinct_levels)
    return tuple(Profile.bounded_range(eps / levels) for _ in range(levels))


def choose_method(method: str, distinct_levels: int) -> str:
    """The method that runs: ``method``, or for "auto" exp for one distinct level, joint up to
    :data:`JOINT_MAX_LEVELS`, recursive beyond. Reads only the number of levels, never the data."""
    if method != "auto":
        return method
    m = distinct_levels
    return "exp" if m == 1 else "joint" if m <= JOINT_MAX_LEVELS else "recursive"


def mechanism_name(method: str) -> str:
    """The mechanism name a release of ``method`` reports."""
    return _MECHANISM[method]


def method_record(method: str, eps_used: float, distinct_levels: int) -> dict:
    """How ``method`` spends ε_used over m distinct levels, and its utility's sensitivity (the
    release's metadata and the plan state these)."""
    m = distinct_levels
    if method == "exp":
        return {"epsilon_per_level": eps_used / m, "utility_sensitivity": "max(q, 1 - q) per level"}
    if method == "joint":
        return {"utility_sensitivity": 2}
    return {"recursion_levels": recursion_levels(m), "epsilon_per_recursion_level": eps_used / recursion_levels(m),
            "utility_sensitivity": "max(q', 1 - q') per split, q' the level rescaled to its sub-range"}


# Why no release of these methods carries intervals (docs/mechanisms/quantiles.md §Accuracy): the
# utility tail of each is P(rank error > u) <= (volume of the range)/(volume near q·n)·e^{-c(u - w)},
# and the volume near q·n is a gap between data points, not published and possibly 0 (ties).
_TAIL_RATE = {
    "exp": "c = epsilon_per_level/(2·max(q, 1 - q)) per level",
    "joint": "c = epsilon/4 on the summed rank error over the m + 1 gaps",
    "recursive": "c = epsilon_per_recursion_level/(2·max(q', 1 - q')) at each split",
}


def interval_record(method: str) -> dict:
    """``metadata['interval']`` of a release (and the plan's statement) for ``method``: no
    interval, and why (docs/mechanisms/quantiles.md §Accuracy). Each method samples with density
    ∝ exp(c·utility) against the *length* of the output region, so its rank-error tail is
    (hi − lo)/|G_w|·e^{−c(u − w)}, |G_w| the length of the outputs within rank w of q·n: a gap
    between data points. With n copies of one value every answer has rank 0 or n (the intervals
    between equal values have length 0), a rank error of min(q, 1 − q)·n with probability 1, and n
    is not published: no half-width computed from public parameters covers it. Never a made-up value."""
    return {
        "coverage": "none",
        "reason": ("no data-independent rank bound exists: the exponential mechanism weighs each output "
                   "interval by its length, so with n copies of one value every answer has rank 0 or n "
                   "(rank error min(q, 1 - q)·n with probability 1) and n is not published "
                   "(docs/mechanisms/quantiles.md §Accuracy)"),
        "data_dependent_bound": ("P(rank error > u) <= (hi - lo)/|G_w|·exp(-c·(u - w)) for any w >= 0, |G_w| the "
                                 "length of the outputs within rank w of q·n (a gap between data points, not "
                                 f"published); {_TAIL_RATE[method]}"),
        "derivation": "docs/mechanisms/quantiles.md §Accuracy",
    }


def quantiles(values, qs, *, bounds, epsilon: float, method: str = "auto", scale: str = "linear",
              relative_accuracy: float = 0.01, integer: bool = False, seed=None,
              budget: Budget | None = None) -> Release:
    """ε-DP quantiles of ``values`` (an array held in memory) at the levels ``qs``
    (docs/privacy.md §In-memory quantiles).

    ``bounds=(lo, hi)`` is public and must not come from the data; values outside it, ±inf
    included, are clamped into it, and NaN (or None) is dropped: each value on its own, so no value
    decides between an error and a release. Neighbouring data sets add or remove one value; the count n is not released (it is
    read only inside the mechanism, whose sensitivity covers it). ``method``: ``"exp"`` (one
    exponential mechanism per level, ε/m each), ``"joint"`` (JointExp), ``"recursive"`` (the
    recursive split, ε/(⌊log2 m⌋ + 1) per recursion level) or ``"auto"`` (exp for one level,
    joint up to :data:`JOINT_MAX_LEVELS` levels, recursive beyond). Repeated levels are answered
    once; the answers never decrease as q rises.

    ``scale="log"`` (positive, heavy-tailed data such as latencies): ``bounds=(min_positive, max)``
    with min_positive > 0; the mechanism runs on ln(value) and each answer is released as the
    representative 2γ^k/(γ + 1) of its log bucket (γ^{k−1}, γ^k], γ = (1 + α)/(1 − α), α =
    ``relative_accuracy``: within relative error α of the mechanism's answer, at every magnitude.

    ``integer=True`` (integer data with ties, e.g. ids or counts; integer bounds): each value v,
    floored, is spread over [v, v + 1) by an independent uniform draw, so that an answer can fall
    among the copies of a value held many times, and the answers are floored to integers.

    ``seed`` makes the draws reproducible and NOT secret (experiments only). ``budget`` (a
    :class:`dpsketch.Budget`) is charged ε before anything is drawn.

    Returns a :class:`dpsketch.Release` whose ``items`` are the (q, value) pairs in the order of
    ``qs`` (``release.values()`` gives the values), with ``delta`` 0 and the guarantee in
    ``metadata``.

    :param bounds: ``(lo, hi)``: a public value range (never read off the data); values outside are
        clamped
    :param epsilon: ε of the pure ε-DP release
    :param scale: ``'linear'`` or ``'log'`` (positive heavy-tailed data; bounds=(min_positive, max))
    :param integer: integer data with ties (integer bounds); answers are integers
    """
    levels, (lo, hi), eps, alpha = check_params(qs, bounds=bounds, epsilon=epsilon, method=method, scale=scale,
                                                relative_accuracy=relative_accuracy, integer=integer)
    v = _check_values(values)
    s = _seeds.check_user_seed(seed)
    eps_used = float(used_value(eps))  # the ε the mechanism uses and is charged (docs/algorithms.md §1)

    distinct = np.unique(levels)
    m = len(distinct)
    chosen = choose_method(method, m)

    if scale == "log":
        lo_m, hi_m = math.log(lo), math.log(hi)
        xs = np.sort(np.log(np.clip(v, lo, hi)))
    else:
        lo_m, hi_m = lo, hi
        xs = np.sort(np.clip(v, lo, hi))

    profile = quantile_profile(chosen, used_value(eps), m)
    with charging(budget, _MECHANISM[chosen], profile=profile):
        rng, seeded = _seeds.rng(s, "quantiles")
        if integer:  # docs/privacy.md §In-memory quantiles, integer data: one jitter per value
            xs = np.sort(np.floor(xs) + np.array([_uniform(rng) for _ in range(len(xs))]))
            hi_m = hi + 1.0
        if chosen == "exp":
            answers = np.sort([_exp_quantile(rng, xs, lo_m, hi_m, float(q), eps_used / m) for q in distinct])
        elif chosen == "joint":
            answers = _JointTables(xs, lo_m, hi_m, distinct, eps_used).sample(rng)
        else:
            answers = _recursive(rng, xs, lo_m, hi_m, distinct, eps_used / recursion_levels(m))

    if integer:
        answers = np.clip(np.floor(answers), lo, hi)
    if scale == "log":
        gamma = (1 + alpha) / (1 - alpha)
        k = np.ceil(answers / math.log(gamma))
        answers = np.clip(2 * gamma**k / (gamma + 1), lo, hi)
    by_level = dict(zip(distinct.tolist(), answers.tolist()))
    items = [(float(q), float(by_level[float(q)])) for q in levels]

    meta = {
        "mechanism": _MECHANISM[chosen],
        "method": chosen,
        "method_requested": method,
        "reference": "docs/privacy.md §In-memory quantiles",
        "privacy": "pure",
        "privacy_unit": PRIVACY_UNIT,
        "neighbours": "add_remove",
        "length": "unused",  # n is read only inside the mechanism's utility, never released
        "epsilon_requested": float(eps),
        "epsilon_used": eps_used,
        "epsilon": eps_used,
        "delta": 0.0,
        "rho": None,
        "bounds": [lo, hi],
        "bounds_public": True,
        "out_of_bounds": "clamped",
        "scale": scale,
        "integer": integer,
        "levels_requested": levels.tolist(),
        "distinct_levels": m,
        "reproducible_not_secret": seeded,
    }
    meta.update(method_record(chosen, eps_used, m))
    meta["privacy_profile"] = profile_record(profile)
    if scale == "log":
        meta.update(relative_accuracy=alpha, log_gamma=(1 + alpha) / (1 - alpha),
                    representative="2·γ^k/(γ + 1) of the bucket (γ^(k−1), γ^k] holding exp(answer)")
    # the exponential mechanisms' rank-error tails depend on the gaps between the data points, which
    # are not published (and can be 0): no interval, and the reason (docs/mechanisms/quantiles.md §Accuracy)
    meta["interval"] = interval_record(chosen)
    return Release(items=items, threshold=None, epsilon=eps_used, delta=0.0, mechanism=_MECHANISM[chosen],
                   n=None, metadata=meta)


# -- the plan: the guarantee before any data (docs/routes.md, Plans) --------------------------------

def plan_figures(m: str, qs, *, bounds, epsilon, method, scale, relative_accuracy, integer) -> dict:
    """The figures of a :class:`dpsketch.Plan` of these quantiles by method ``m`` (the routed
    method), without data: the guarantee and the exponential mechanism's record; no rank interval
    (docs/mechanisms/quantiles.md, Accuracy).

    :param m: the method the front door routes to (exp, joint or recursive)
    :param qs: the quantile levels
    :param bounds: the public value range (lo, hi)
    :param epsilon: ε of the pure-DP guarantee
    :param method: the method asked for ("auto" or one of the three)
    :param scale: "linear" or "log"
    :param relative_accuracy: the log scale's relative accuracy
    :param integer: the values are integers
    """
    levels, (lo, hi), eps, _alpha = check_params(qs, bounds=bounds, epsilon=epsilon, method=method, scale=scale,
                                                 relative_accuracy=relative_accuracy, integer=integer)
    eps_used = float(used_value(eps))
    record = method_record(m, eps_used, len(np.unique(levels)))
    return dict(mechanism=mechanism_name(m), epsilon=eps_used, delta=0.0, rho=None, neighbours="add_remove",
               noise={"law": "exponential_mechanism", "epsilon_used": eps_used, **record},
               interval=interval_record(m)["reason"],
               notes=(f"bounds=({lo:g}, {hi:g}) are public; values outside are clamped",))
