"""Accuracy intervals of a release (docs/privacy.md §Intervals).

Every interval is post-processing: it reads the released noisy values, the length the release
already published (n̂, or the public n) and public parameters (ε as used, capacity, the envelope's
constants), never the data. The guarantee is *simultaneous*: with probability at least ``level``
every released item's interval holds its true value. Selection by a threshold would bias per-item
coverage, so each rule bounds every noise term the mechanism drew (a union bound over the public
number of candidates) and adds the summary's own one-sided error; any subset of the candidates --
the released items -- is then covered on the same event.

What is bounded (the "true value"): the item's exact count in the stream the summary read (PMG,
DPSS, two-pass DPSS, SketchHeavyHitters; for the bounded-memory unit route the rows the per-unit
bound kept), the bounded count (the unit-level exact route), a published Count-Min's point
counts, and a private dyadic sketch's ranks. The unit-level exact route conditions on the released
set instead of a union over candidates, whose number it does not publish.
"""

from __future__ import annotations

import math
from typing import Callable

from ._validation import check
from .accounting.calibration import dgauss_tail_gt
from .errors import ParameterError, ParameterTypeError

__all__ = ["DEFAULT_LEVEL", "check_level", "count_min_intervals", "dgauss_abs_tail_gt", "dlap_abs_tail_gt",
           "dlap_sum_abs_tail_gt", "dlap_sum_tail_ge", "dlap_tail_gt", "for_release", "noise_log_tail",
           "noise_variance", "smallest_width", "sum_halfwidth", "uniform_rank_halfwidth"]

DEFAULT_LEVEL = 0.95
LENGTH_SHARE = 0.1  # of the miss probability 1 - level, spent on the length bound (private n̂)


def check_level(level) -> float:
    """``level`` as a float in (0, 1) (the shared spec ``level``)."""
    return check("level", level)


# -- exact tails of the integer noise laws (docs/privacy.md §Noise (§1)) -----------------------------

def dlap_tail_gt(eps: float, t: int) -> float:
    """P(Z > t) for Z ~ DLap(1/ε), integer t: e^{-ε(t+1)}/(1 + e^{-ε}) for t >= 0, and
    1 − P(Z > −t − 1) for t < 0 (symmetry)."""
    if t < 0:
        return 1.0 - dlap_tail_gt(eps, -t - 1)
    return math.exp(-eps * (t + 1)) / (1 + math.exp(-eps))


def dlap_abs_tail_gt(eps: float, t: int) -> float:
    """P(|Z| > t) for Z ~ DLap(1/ε), integer t >= 0: 2·e^{-ε(t+1)}/(1 + e^{-ε})."""
    return min(1.0, 2 * dlap_tail_gt(eps, t))


def dlap_sum_abs_tail_gt(eps: float, s: int) -> float:
    """P(|η + Z| > s) for η, Z independent DLap(1/ε), integer s >= 0. With q = e^{-ε} the pmf of
    S = η + Z is P(S = j) = ((1-q)/(1+q))²·q^{|j|}·(|j| + 1 + 2q²/(1-q²)), so for u >= 1
    P(S >= u) = q^u/(1+q)²·((u+1)(1-q) + q + 2q²/(1+q)); |S| > s is S >= s+1 or S <= -(s+1)."""
    return min(1.0, 2 * dlap_sum_tail_ge(eps, s + 1))


def dlap_sum_tail_ge(eps: float, u: int) -> float:
    """P(η + Z >= u) for η, Z independent DLap(1/ε), integer u: for u >= 1
    q^u/(1+q)²·((u+1)(1-q) + q + 2q²/(1+q)) (the pmf in :func:`dlap_sum_abs_tail_gt`), and
    1 − P(η + Z >= 1 − u) for u <= 0 (symmetry)."""
    if u <= 0:
        return 1.0 - dlap_sum_tail_ge(eps, 1 - u)
    q = math.exp(-eps)
    omq = -math.expm1(-eps)
    return math.exp(-eps * u) / (1 + q) ** 2 * ((u + 1) * omq + q + 2 * q * q / (1 + q))


def dgauss_abs_tail_gt(sigma2: float, t: int) -> float:
    """An upper bound on P(|X| > t) for X ~ DGauss(σ²): twice :func:`dgauss_tail_gt`."""
    return min(1.0, 2 * dgauss_tail_gt(sigma2, t))


def smallest_width(tail: Callable[[int], float], alpha: float) -> int:
    """The smallest integer s >= 0 with tail(s) <= alpha, for a non-increasing tail."""
    if tail(0) <= alpha:
        return 0
    hi = 1
    while tail(hi) > alpha:
        hi *= 2
    lo = hi // 2  # tail(lo) > alpha
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if tail(mid) <= alpha:
            hi = mid
        else:
            lo = mid
    return hi


# -- the length bound ----------------------------------------------------------------------------

def _length_upper(meta: dict, alpha_n: float) -> tuple[float, float]:
    """(an upper bound on n, the probability it fails) from what the release published: the public
    n (exact, fails never) or n̂ = n + DLap(1/ε_n): n <= n̂ + s except when Z < -s, probability
    P(Z > s) <= alpha_n (s the smallest such integer). n_upper of the metadata is sized for the
    privacy failure δ_n and is wider than a bound at the interval's level needs."""
    length = meta.get("length")
    if length == "public":
        return float(meta["n_used"]), 0.0
    if length == "private":
        eps_n = float(meta["length_epsilon"])
        s = smallest_width(lambda t: dlap_tail_gt(eps_n, t), alpha_n)
        return float(meta["n_used"]) + s, dlap_tail_gt(eps_n, s)
    raise ParameterError("no length was published")


# -- the rules, per mechanism --------------------------------------------------------------------

def _dpss(items, meta, alpha, two_pass):
    """DPSS (docs/privacy.md §DPSS): v = c + Z, Z ~ DLap(1/ε) drawn for each of the <= k̃ tracked
    counters, and f <= c <= f + c_min <= f + ⌊n/k̃⌋ (SpaceSaving). Two passes: v = f + Z."""
    eps = float(meta["epsilon_used"])
    cap = int(meta["capacity"])
    if two_pass:
        alpha_len, n_up, summary_err = 0.0, None, 0
    else:
        n_up, alpha_len = _length_upper(meta, LENGTH_SHARE * alpha if meta.get("length") == "private" else 0.0)
        summary_err = math.floor(max(n_up, 0.0) / cap)
    per = (alpha - alpha_len) / cap
    s = smallest_width(lambda t: dlap_abs_tail_gt(eps, t), per)
    iv = [(max(0, v - s - summary_err), v + s) for _, v in items]
    rule = {
        "coverage": "simultaneous",
        "bounds": "the item's true count in the stream the summary read",
        "noise": f"DLap(1/epsilon_used) on each of the capacity = {cap} counters: |Z| <= {s} for all, "
                 f"each failing w.p. P(|Z| > {s}) <= {per:.3g} (union bound)",
        "noise_halfwidth": s,
        "reference": "docs/privacy.md §Intervals",
    }
    if two_pass:
        rule["summary_error"] = "none (exact counts of the second pass)"
    else:
        rule.update(summary_error=f"SpaceSaving overestimates by at most floor(n_bound/capacity) = {summary_err}",
                    n_bound=n_up, length_miss_probability=alpha_len)
    return iv, rule


def _pmg(items, meta, alpha):
    """PMG (docs/privacy.md §PMG): v = c + η + Z_x, η shared and Z_x per stored key (<= m keys),
    all DLap(1/ε); f − ⌊n/(m+1)⌋ <= c <= f (Misra–Gries underestimates)."""
    eps = float(meta["epsilon_used"])
    m = int(meta["capacity"])
    if meta.get("length") in ("public", "private"):
        n_up, alpha_len = _length_upper(meta, LENGTH_SHARE * alpha if meta.get("length") == "private" else 0.0)
        summary_err: float = math.floor(max(n_up, 0.0) / (m + 1))
    else:
        n_up, alpha_len, summary_err = None, 0.0, math.inf  # no length published: no upper bound
    per = (alpha - alpha_len) / m
    s = smallest_width(lambda t: dlap_sum_abs_tail_gt(eps, t), per)
    iv = [(max(0, v - s), v + s + summary_err) for _, v in items]
    rule = {
        "coverage": "simultaneous",
        "bounds": "the item's true count in the stream the summary read",
        "noise": f"eta + Z_x, eta and Z_x DLap(1/epsilon_used), on each of the capacity = {m} stored keys: "
                 f"|eta + Z_x| <= {s} for all, each failing w.p. P(|eta + Z| > {s}) <= {per:.3g} (union bound)",
        "noise_halfwidth": s,
        "summary_error": (f"Misra-Gries underestimates by at most floor(n_bound/(capacity+1)) = {summary_err}"
                          if n_up is not None else
                          "Misra-Gries underestimates by at most n/(capacity+1), and this release published no "
                          "length: the upper bounds are infinite (release with k= to publish n̂)"),
        "n_bound": n_up,
        "length_miss_probability": alpha_len,
        "reference": "docs/privacy.md §Intervals",
    }
    return iv, rule


def _envelope(items, meta, alpha):
    """SketchHeavyHitters (docs/privacy.md §Error envelope): γ1 >= f̃ − f >= −γ2 for every
    (item, time) of the stream except with probability δ_env, given n_up >= n (fails w.p. <= δ_n)."""
    miss = float(meta["delta_envelope"])
    if meta.get("length") == "private":
        eps_n, t_n = float(meta["length_epsilon"]), int(meta["length_t"])
        miss += dlap_tail_gt(eps_n, t_n)  # n_up = n̂ + t_n < n iff Z < -t_n
    if miss > alpha:
        return None, {"coverage": "none", "reason": f"the envelope fails w.p. up to {miss:.3g}, above 1 - level"}
    g1, g2 = float(meta["gamma1"]), float(meta["gamma2"])
    iv = [(max(0.0, v - g1), v + g2) for _, v in items]
    return iv, {
        "coverage": "simultaneous",
        "bounds": "the item's true count in the stream the summary read",
        "noise": f"the error envelope gamma1 >= estimate - f >= -gamma2 (cell noise and hash rows), "
                 f"failing w.p. <= delta_envelope plus the length bound's failure: {miss:.3g} in all",
        "summary_error": "included in gamma1 (Count-Min collisions; CountSketch: 4·sqrt(F2_up/w))",
        "reference": "docs/privacy.md §Intervals",
    }


# -- a published Count-Min's point queries -------------------------------------------------------

def noise_variance(kind: str, param: float) -> float:
    """Variance of one cell's noise: DLap(scale b) 2q/(1−q)² with q = e^{−1/b}; DGauss(σ²) at
    most σ² (Canonne–Kamath–Steinke 2020)."""
    if kind == "laplace":
        q = math.exp(-1.0 / param)
        return 2 * q / (-math.expm1(-1.0 / param)) ** 2
    return float(param)


def _cell_abs_tail(kind: str, param: float) -> Callable[[int], float]:
    if kind == "laplace":
        return lambda t: dlap_abs_tail_gt(1.0 / param, t)
    return lambda t: dgauss_abs_tail_gt(param, t)


def count_min_intervals(estimates, kind, param, depth, width, shift, noisy_total, level) -> list[tuple]:
    """Intervals for Count-Min point queries (docs/privacy.md §Intervals), simultaneous over the
    m estimates. Row j of item x holds f + C_j + N_j + E (C_j >= 0 the collision mass for a
    non-negative stream, N_j the cell noise, E the shift). Split of α = 1 − level: α/2 for the
    m·d noise terms (|N| <= s), α/4 for the length (n <= n̂ + t_n, Cantelli with the exact variance
    of n̂'s noise, w·Var/d), α/4 for the collisions: P(min_j C_j > t) <= (n/(w·t))^d per item
    (Markov per row, rows independent), so t = (n_up/w)·(4m/α)^{1/d}."""
    alpha = 1.0 - check_level(level)
    m = len(estimates)
    s = smallest_width(_cell_abs_tail(kind, param), alpha / 2 / (m * depth))
    var_total = width * noise_variance(kind, param) / depth
    a_n = alpha / 4
    n_up = max(0.0, noisy_total + math.sqrt(var_total * (1 - a_n) / a_n))
    t = n_up / width * (4 * m / alpha) ** (1.0 / depth)
    return [(e, max(0.0, e - shift - s - t), e - shift + s) for e in estimates]


def prefix_count_min_intervals(nodes, items, level) -> list[tuple]:
    """(estimate, low, high) of each item's count in a cumulative prefix, the sum of the published
    Count-Min ``nodes`` (docs/mechanisms/cumulative.md §Accuracy): each node's
    ``estimate_intervals`` at level 1 − α/L (L nodes; a union bound over them) covers the node's own
    count for every item at once, so the sums of the nodes' lows and highs cover the prefix's count
    with probability at least 1 − α. Holds for items chosen without looking at the cells."""
    alpha = 1.0 - check_level(level)
    items = list(items)
    total = [[0.0, 0.0, 0.0] for _ in items]
    for node in nodes:
        for acc, got in zip(total, node.estimate_intervals(items, level=1.0 - alpha / len(nodes))):
            for i in range(3):
                acc[i] += got[i]
    return [(e, max(0.0, lo), hi) for e, lo, hi in total]


# -- sums of independent integer noises (dyadic ranks) --------------------------------------------

_MAX_GRID = 1 << 22


def _pmf(kind: str, param: float, half: int):
    import numpy as np

    k = np.arange(-half, half + 1, dtype=np.float64)
    logw = -np.abs(k) / param if kind == "laplace" else -(k * k) / (2 * param)
    w = np.exp(logw - logw.max())
    return w / w.sum()


def sum_halfwidth(laws: list[tuple[str, float]], alpha: float) -> int:
    """The smallest integer s found with P(|N_1 + ... + N_k| > s) <= alpha for independent
    N_i ~ DLap(scale b) ("laplace", b) or DGauss(σ²) ("gaussian", σ²): each law is cut at ±T_i
    where its two-sided tail is <= alpha·10^-6/k (that mass counts as failure), the cut laws are
    convolved (FFT, with 10^-9 of slack for its rounding) and the sum's tail is read off. Grids
    beyond 2^22 points fall back to a union bound over the k terms (each at alpha/k)."""
    import numpy as np

    if not laws:
        return 0
    k = len(laws)
    eta = alpha * 1e-6 / k
    halves = [smallest_width(_cell_abs_tail(kind, p), eta) for kind, p in laws]
    if sum(2 * h + 1 for h in halves) > _MAX_GRID:
        return sum(smallest_width(_cell_abs_tail(kind, p), alpha / k) for kind, p in laws)
    size = sum(2 * h for h in halves) + 1
    nfft = 1 << (size - 1).bit_length()
    spec = np.ones(nfft // 2 + 1, dtype=np.complex128)
    for (kind, p), h in zip(laws, halves):
        spec *= np.fft.rfft(_pmf(kind, p, h), nfft)
    conv = np.clip(np.fft.irfft(spec, nfft)[:size], 0.0, None)  # support -H..H, H = Σ halves
    center = size // 2
    budget = alpha - k * eta - 1e-9
    if budget <= 0:
        raise ParameterError("level too close to 1 for this computation")
    # tail(s) = P(|S| > s): mass outside [center − s, center + s]
    inside = np.cumsum(conv)  # inside[i] = P(S <= i − center)
    for_s = lambda s: 1.0 - (inside[center + s] - (inside[center - s - 1] if center - s - 1 >= 0 else 0.0))  # noqa: E731
    if for_s(center) > budget:
        raise ParameterError("the noise sum's tail could not be resolved; use a lower level")
    return smallest_width(lambda s: for_s(min(s, center)), budget)


def uniform_rank_halfwidth(kind: str, param: float, bits: int, alpha: float) -> int:
    """The smallest integer s found with P(some position's rank error exceeds s) <= alpha, for a
    dyadic hierarchy of ``bits`` exact levels whose every node carries independent noise of one law:
    rank(p) sums popcount(p) nodes and the total two, so by a union bound over the 2^bits positions
    and the total, Σ_k C(bits, k)·P(|S_k| > s) + P(|S_2| > s) <= alpha, S_k a sum of k nodes. Each
    node's law is cut at ±T where its tail is <= alpha·10^-6/2^(bits+1) (all nodes within: that
    failure is counted once), and the cut laws are convolved by FFT (10^-9 of slack)."""
    import numpy as np

    n_nodes = 2 ** (bits + 1)
    eta = alpha * 1e-6 / n_nodes
    half = smallest_width(_cell_abs_tail(kind, param), eta)
    size = 2 * half * bits + 1
    if size > _MAX_GRID:
        raise ParameterError("the noise is too wide for an exact uniform rank bound at this universe size")
    nfft = 1 << (size - 1).bit_length()
    one = np.fft.rfft(_pmf(kind, param, half), nfft)
    weights = {k: math.comb(bits, k) for k in range(1, bits + 1)}
    weights[2] = weights.get(2, 0) + 1  # the total: the two level-1 nodes
    total_tail = np.zeros(half * bits + 1)  # total_tail[s] = Σ_k w_k·P(|S_k| > s)
    for k, wk in weights.items():
        law = np.clip(np.fft.irfft(one**k, nfft)[: 2 * half * k + 1], 0.0, None)
        center = half * k
        inside = np.cumsum(law)
        ss = np.arange(0, center + 1)
        tail = 1.0 - (inside[center + ss] - np.where(center - ss - 1 >= 0, inside[np.maximum(center - ss - 1, 0)], 0.0))
        total_tail[: center + 1] += wk * np.clip(tail, 0.0, None)
    budget = alpha - alpha * 1e-6 - 1e-9 * sum(weights.values())
    ok = np.flatnonzero(total_tail <= budget)
    if budget <= 0 or len(ok) == 0:
        raise ParameterError("level too close to 1 for this computation")
    # total_tail is non-increasing in s; the first s within the budget
    return int(ok[0])


# -- selection by a fixed threshold: intervals conditional on the released set --------------------

def noise_log_tail(noise: str, param: float) -> Callable[[int], float]:
    """log P(Z > t) for every integer t, exact up to floating point, for Z ~ DLap(scale b = param)
    or DGauss(σ² = param): ratios of two tiny tails need the logarithms, not an upper bound."""
    from functools import lru_cache

    if noise == "discrete_laplace":
        e = 1.0 / param

        def upper(t: int) -> float:  # t >= 0: e^{-e(t+1)}/(1 + e^{-e})
            return -e * (t + 1) - math.log1p(math.exp(-e))
    elif param > 1e6:
        # σ > 1000: Euler–Maclaurin from the midpoint, Σ_{x>t} f(x) = ∫_y^∞ f + f_prime(y)/24 + O(f^(4)),
        # y = t + 1/2, f(x) = e^{-x²/2σ²}, and the normaliser σ√(2π) (exact up to e^{-2π²σ²}); the
        # remaining relative error, about (y/σ²)^4/1920, is far inside the callers' 10^-6 margin
        sig = math.sqrt(float(param))

        def upper(t: int) -> float:
            y = t + 0.5
            log_int = _log_erfc(y / (sig * math.sqrt(2))) - math.log(2)  # log(∫_y^∞ f / (σ√(2π)))
            ratio = math.exp(-y * y / (2 * param) - math.log(sig * math.sqrt(2 * math.pi)) - log_int)  # f(y)/∫
            return log_int + math.log1p(-y / param * ratio / 24)
    else:
        import numpy as np

        s2 = float(param)
        j = np.arange(0, int(math.ceil(40 * math.sqrt(s2))) + 20, dtype=np.float64)
        ks = np.arange(1, int(math.ceil(40 * math.sqrt(s2))) + 20, dtype=np.float64)
        log_norm = math.log1p(2.0 * float(np.exp(-ks * ks / (2 * s2)).sum()))

        def upper(t: int) -> float:  # Σ_{x>t} e^{-x²/2σ²} = e^{-(t+1)²/2σ²}·Σ_j e^{-(2(t+1)j + j²)/2σ²}
            u = t + 1
            rest = float(np.exp(-(2.0 * u * j + j * j) / (2 * s2)).sum())
            return -(u * u) / (2 * s2) + math.log(rest) - log_norm

    @lru_cache(maxsize=4096)
    def log_tail(t: int) -> float:
        if t >= 0:
            return upper(t)
        return math.log1p(-math.exp(upper(-t - 1)))  # P(Z > t) = 1 − P(Z > −t−1) (symmetry)

    return log_tail


def _log_erfc(z: float) -> float:
    """log erfc(z) for z >= 0, without underflow (asymptotic series beyond z = 20)."""
    if z < 20:
        return math.log(math.erfc(z))
    z2 = z * z
    return -z2 - math.log(z * math.sqrt(math.pi)) + math.log1p(-1 / (2 * z2) + 3 / (4 * z2 * z2) - 15 / (8 * z2**3))


def _first(pred: Callable[[int], bool], lo: int) -> int:
    """The smallest integer x >= lo with pred(x), pred monotone (False then True) and True somewhere."""
    if pred(lo):
        return lo
    step = 1
    while not pred(lo + step):
        step *= 2
    a, b = lo + step // 2, lo + step  # pred(a) False (or a == lo), pred(b) True
    while b - a > 1:
        mid = (a + b) // 2
        if pred(mid):
            b = mid
        else:
            a = mid
    return b


def _selected(items, meta, alpha):
    """The unit-level exact route (docs/privacy.md §Privacy unit): v = f + Z, Z independent per key,
    released iff v > τ (τ a public integer); the Gumbel ranking reads the bounded counts and its own
    draws, never the Z's. Given the released set S (|S| = R, published), the released values are
    therefore independent with the laws of f + Z conditioned on f + Z > τ. Each item gets the set of
    f >= 1 that an equal-tailed test at level α/R of that truncated law accepts; the union over the
    R items bounds the miss probability by α given S, hence overall. The number of keys that got
    noise is not published, so no union bound over the candidates is available."""
    noise = meta["noise"]
    num, den = meta["noise_param"]
    log_tail = noise_log_tail(noise, num / den)
    tau = int(math.ceil(float(meta["threshold"])))
    # R: the released items, or the keys above τ before a cut that read the values (the exact route's
    # n/k cut keeps a prefix of them: covering all of them covers the prefix on the same event)
    r = max(len(items), int(meta.get("above_threshold", 0)))
    half = alpha / max(r, 1) / 2 * (1 - 1e-6)  # a hair below a/2: rounding only widens

    def up_p(v, f):  # P_f(V >= v | V > τ) = P(Z > v − f − 1)/P(Z > τ − f); increasing in f
        return math.exp(log_tail(v - f - 1) - log_tail(tau - f))

    def low_p(v, f):  # P_f(V <= v | V > τ) = 1 − P(Z > v − f)/P(Z > τ − f); decreasing in f
        return -math.expm1(log_tail(v - f) - log_tail(tau - f))

    iv = []
    for _, v in items:
        v = int(v)
        lo = _first(lambda f, v=v: up_p(v, f) > half, 1)
        hi = _first(lambda f, v=v: low_p(v, f) <= half, max(lo, v)) - 1
        iv.append((lo, hi))
    return iv, {
        "coverage": "simultaneous",
        "bounds": "the item's bounded count (each unit's at most m keys and c rows per key)",
        "noise": f"{noise} given selection: per item, the f accepted by an equal-tailed test at level "
                 f"(1 - level)/R of f + Z conditioned on f + Z > tau, R = {r} (the released items, or the keys "
                 "above tau before a cut that read the values; union bound given that set)",
        "summary_error": "none (exact bounded counts)",
        "reference": "docs/privacy.md §Intervals",
    }


def _weighted_counts(items, meta, alpha):
    """The weighted selection's counts (docs/mechanisms/person-weighted.md §Accuracy): the set is
    chosen by the scores' noise alone, so given the released set (R keys, published) each count is
    its bounded count plus an independent DGauss(σ_c²): ± s with P(|Z| > s) <= α/R, a union bound
    over the R items; the bounded count of a selected key is >= 1."""
    num, den = meta["count_noise_param"]
    r = max(len(items), 1)
    s = smallest_width(lambda t: dgauss_abs_tail_gt(num / den, t), alpha / r * (1 - 1e-6))
    iv = [(max(1, int(v) - s), max(1, int(v) + s)) for _, v in items]
    return iv, {
        "coverage": "simultaneous",
        "bounds": "the item's bounded count (each unit's at most m keys and c rows per key)",
        "noise": f"discrete_gaussian, independent of the selection: +/- {s} per item, union bound over R = {r}",
        "noise_halfwidth": s,
        "summary_error": "none (exact bounded counts)",
        "reference": "docs/mechanisms/person-weighted.md §Accuracy",
    }


def _partitioned(items, meta, alpha, inner):
    """The counters route over key partitions (docs/mechanisms/distributed.md §Accuracy): partition p
    released DPSS or PMG on its own summary of capacity m_p, every noise term independent, all
    thresholds reading one length; a key lives in one partition, so its count there is its true
    count. The union bound runs over the public number of counters M = Σ_p m_p (every partition's,
    an empty one included: an over-count) and the summary's one-sided error is bounded with the
    smallest capacity and n_p <= n <= n_bound. ``inner`` is "DPSS", "DPSS[two-pass]" or "PMG"."""
    eps = float(meta["epsilon_used"])
    total, m_min = int(meta["counters_total"]), int(meta["capacity_min"])
    two_pass = inner == "DPSS[two-pass]"
    if two_pass:
        n_up, alpha_len, summary_err = None, 0.0, 0
    else:
        n_up, alpha_len = _length_upper(meta, LENGTH_SHARE * alpha if meta.get("length") == "private" else 0.0)
        summary_err = math.floor(max(n_up, 0.0) / (m_min + (inner == "PMG")))
    per = (alpha - alpha_len) / total
    if inner == "PMG":  # v = c + η_p + Z_x: the shared and the per-key draw
        s = smallest_width(lambda t: dlap_sum_abs_tail_gt(eps, t), per)
        iv = [(max(0, v - s), v + s + summary_err) for _, v in items]
        noise = f"eta_p + Z_x, both DLap(1/epsilon_used)"
        err = f"Misra-Gries underestimates by at most floor(n_bound/(capacity_min+1)) = {summary_err}"
    else:
        s = smallest_width(lambda t: dlap_abs_tail_gt(eps, t), per)
        iv = [(max(0, v - s - summary_err), v + s) for _, v in items]
        noise = "Z ~ DLap(1/epsilon_used)"
        err = ("none (exact counts of the second pass)" if two_pass else
               f"SpaceSaving overestimates by at most floor(n_bound/capacity_min) = {summary_err}")
    rule = {
        "coverage": "simultaneous",
        "bounds": "the item's true count in the data set (its count in its own key partition)",
        "noise": f"{noise} on each of the {total} counters of all partitions: |noise| <= {s} for all, each "
                 f"failing w.p. <= {per:.3g} (union bound over the public number of counters)",
        "noise_halfwidth": s,
        "summary_error": err,
        "reference": "docs/mechanisms/distributed.md §Accuracy",
    }
    if not two_pass:
        rule.update(n_bound=n_up, length_miss_probability=alpha_len)
    return iv, rule


def _lookup(items, meta, alpha):
    """The sketch route's label lookup for string keys (docs/mechanisms/distributed.md §Accuracy): a
    released label's value is c + Z, c the exact count of its 128-bit fingerprint's rows (one label:
    u == 1), Z ~ DLap independent per fingerprint, released iff c + Z >= tau_lookup. Given the
    released set the values are independent draws of f + Z conditioned on the threshold: the rule
    of the exact route (:func:`_selected`) at the lookup's noise and strict threshold."""
    iv, rule = _selected(items, {"noise": meta["lookup_noise"], "noise_param": meta["lookup_noise_param"],
                                 "threshold": meta["lookup_threshold_strict"]}, alpha)
    rule.update(bounds="the label's true count (its 128-bit fingerprint's rows, one label among them)",
                summary_error="none (exact counts of the lookup pass; the sketch only chose the candidates)",
                reference="docs/mechanisms/distributed.md §Accuracy")
    return iv, rule


def for_release(mechanism: str, items: list, meta: dict, level: float) -> tuple[list | None, dict]:
    """(intervals aligned with ``items`` or None, the rule that made them) for a release of
    ``mechanism`` at ``level``: only the released values, the published length and public
    parameters are read."""
    alpha = 1.0 - check_level(level)
    unit = mechanism.startswith("unit.bounded_memory[")
    if unit:  # the element-level release of the rows the per-unit bound kept; its figures are per row
        mechanism = mechanism[len("unit.bounded_memory["):-1]
        meta = {**meta, **meta.get("per_row_calibration", {})}
    if mechanism == "DPSS":
        iv, rule = _dpss(items, meta, alpha, two_pass=False)
    elif mechanism == "DPSS[two-pass]":
        iv, rule = _dpss(items, meta, alpha, two_pass=True)
    elif mechanism == "PMG":
        iv, rule = _pmg(items, meta, alpha)
    elif mechanism.startswith("unit.exact["):
        iv, rule = _selected(items, meta, alpha)
    elif mechanism == "unit.weighted[discrete_gaussian+counts]":
        iv, rule = _weighted_counts(items, meta, alpha)
    elif mechanism.startswith("SketchHeavyHitters["):
        iv, rule = _envelope(items, meta, alpha)
    elif mechanism.startswith("spark.counters["):
        iv, rule = _partitioned(items, meta, alpha, mechanism[len("spark.counters["):-1])
    elif mechanism.startswith("exact["):  # the exact route for one row: the unit-level rule with m = c = 1
        iv, rule = _selected(items, meta, alpha)
        rule.update(bounds="the item's exact count in the data set", reference="docs/mechanisms/distributed.md §Accuracy")
    elif mechanism == "spark.sketch[DyadicCountSketch+lookup]":
        iv, rule = _lookup(items, meta, alpha)
    elif mechanism == "spark.sketch[DyadicCountSketch]":
        return None, {"coverage": "none", "reason": "int64 keys are released with their noisy CountSketch leaf "
                      "estimate: its hash-collision error is two-sided and no published quantity bounds it for "
                      "keys the noise selected (docs/mechanisms/distributed.md §Accuracy); use route='exact' or "
                      "string keys (exact lookup counts) for intervals"}
    else:
        return None, {"coverage": "none", "reason": f"no interval rule for {mechanism} yet (docs/privacy.md §Intervals)"}
    if unit and iv is not None:
        rule["bounds"] = "the item's count among the rows kept by the per-unit bound (each unit's first r rows)"
    rule["level"] = level
    return iv, rule
