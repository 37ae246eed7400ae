"""Empirical privacy audit: a statistical LOWER bound on the ε each mechanism actually spends, on
built-in worst-case neighbouring inputs (docs/audit.md).

For a neighbouring pair (X, X') and an output event S, (ε, δ)-DP requires
P[M(X) ∈ S] ≤ e^ε · P[M(X') ∈ S] + δ. Running the mechanism many times on X and on X' and
bounding both probabilities with exact Clopper–Pearson intervals gives, with the stated
confidence, ε̂ = ln((p_lower(X) − δ) / p_upper(X')) ≤ the true privacy loss; ε̂ > ε proves a
violation (the DP-Sniper / Jagielski et al. recipe). The event is a threshold on one released
statistic, chosen on a separate selection sample so that choosing it does not bias ε̂.

For unstable labels (a label stored for X but absent for X'; docs/privacy.md §2 and §3) the
release probability under X' is 0, so the proofs charge that event to δ: the audit reports its
release rate with a confidence interval and fails if the rate is significantly above δ.

This is a test harness: it calls the native mechanisms directly and reuses one generator per
case (ChaCha20 keyed from a fresh random 64-bit seed, or from ``seed=`` for a reproducible run,
through the one-way derivation of docs/privacy.md §Seeds). That changes nothing
about the output distributions; it only avoids per-trial Python overhead.
"""

from __future__ import annotations

import math
import secrets
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from . import _core
from ._release_state import derive_seed

__all__ = ["AuditResult", "MECHANISMS", "audit", "clopper_pearson", "epsilon_lower_bound", "audit_samplers"]

_R = _core.release
_NEG = -math.inf  # statistic of "label not released"


# ------------------------------------------------------------------ exact binomial confidence ----
def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, dd = 1.0, 1.0 - qab * x / qap
    dd = 1.0 / (dd if abs(dd) > tiny else tiny)
    h = dd
    for m in range(1, 100_000):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            dd = 1.0 + num * dd
            dd = 1.0 / (dd if abs(dd) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            delta = dd * c
            h *= delta
        if abs(delta - 1.0) < eps:
            return h
    return h  # pragma: no cover - converges in O(sqrt(max(a, b))) steps


def _betainc(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(ln_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def _beta_quantile(q: float, a: float, b: float) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if _betainc(a, b, mid) < q:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-15:
            break
    return (lo + hi) / 2


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """Exact one-sided bounds (lower, upper) for a binomial proportion, each at level ``alpha``:
    P(p < lower) ≤ alpha and P(p > upper) ≤ alpha."""
    if not 0 <= k <= n or n <= 0:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    lower = 0.0 if k == 0 else _beta_quantile(alpha, k, n - k + 1)
    upper = 1.0 if k == n else _beta_quantile(1 - alpha, k + 1, n - k)
    return lower, upper


def epsilon_lower_bound(hits_x: int, hits_xp: int, trials: int, delta: float, alpha: float):
    """ε̂ = ln((p_lower(X) − δ) / p_upper(X')), or None when p_lower(X) ≤ δ (no evidence)."""
    lo, _ = clopper_pearson(hits_x, trials, alpha)
    _, up = clopper_pearson(hits_xp, trials, alpha)
    if lo - delta <= 0:
        return None, lo, up
    return math.log((lo - delta) / up), lo, up


# ------------------------------------------------------------------------- event selection ------
def _select_event(sx: np.ndarray, sxp: np.ndarray, delta: float):
    """Pick the threshold event (direction, side, c) that looks most distinguishing on the
    selection sample (normal-approximation score; the exact bound is computed on fresh data)."""
    best = (-math.inf, None)
    finite = np.concatenate([sx, sxp])
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return None
    cands = np.unique(np.quantile(finite, np.linspace(0, 1, 201), method="nearest"))
    n = len(sx)
    for a, b, swap in ((sx, sxp, False), (sxp, sx, True)):
        sa, sb = np.sort(a), np.sort(b)
        for side in ("ge", "le"):
            if side == "ge":
                pa = (n - np.searchsorted(sa, cands, "left")) / n
                pb = (n - np.searchsorted(sb, cands, "left")) / n
            else:
                pa = np.searchsorted(sa, cands, "right") / n
                pb = np.searchsorted(sb, cands, "right") / n
            # a conservative score (3σ, and at least 20 hits) so that a rare event that looked
            # good by chance on the selection sample is not preferred
            lo = pa - 3 * np.sqrt(pa * (1 - pa) / n) - 1 / n - delta
            up = pb + 3 * np.sqrt(pb * (1 - pb) / n) + 3 / n
            with np.errstate(divide="ignore", invalid="ignore"):
                score = np.where((lo > 0) & (pa * n >= 20), np.log(np.maximum(lo, 1e-300) / up), -math.inf)
            i = int(np.argmax(score))
            if score[i] > best[0]:
                best = (float(score[i]), (swap, side, float(cands[i])))
    return best[1]


def _count(s: np.ndarray, side: str, c: float) -> int:
    return int(np.count_nonzero(s >= c) if side == "ge" else np.count_nonzero(s <= c))


# ------------------------------------------------------------------------------- results --------
@dataclass
class AuditResult:
    """One audited neighbouring pair. ``epsilon_hat`` is a (1 − α)-confidence lower bound on the
    privacy loss (None: the event gave no evidence); ``label_rate*`` are for unstable-label pairs."""

    mechanism: str
    case: str
    epsilon: float  # the guarantee claimed for this configuration (ε used, or ε from zCDP)
    delta: float
    trials: int
    epsilon_hat: float | None = None
    event: str | None = None
    p_x_lower: float | None = None
    p_xprime_upper: float | None = None
    label_rate: float | None = None
    label_rate_lower: float | None = None
    label_rate_upper: float | None = None
    verdict: str = "pass"
    seconds: float = 0.0
    notes: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


def audit_samplers(name: str, case: str, sample: Callable[[int], tuple[np.ndarray, np.ndarray]], *,
                   epsilon: float, delta: float, trials: int, confidence: float = 0.999,
                   selection_trials: int | None = None) -> AuditResult:
    """Audit any mechanism through the same estimator: ``sample(m)`` returns two float arrays of
    ``m`` statistics each, one scalar per run on X and on X' (``-inf`` allowed: "not released").
    ``epsilon_hat`` is a lower bound on the privacy loss holding with probability ``confidence``."""
    t0 = time.perf_counter()
    alpha = (1 - confidence) / 2  # two one-sided bounds per ε̂ (union bound)
    m = selection_trials or max(200, trials // 4)
    sel_x, sel_xp = sample(m)
    choice = _select_event(np.asarray(sel_x, float), np.asarray(sel_xp, float), delta)
    res = AuditResult(name, case, epsilon, delta, trials)
    if choice is None:
        res.notes["event"] = "no finite statistic: nothing to threshold"
    else:
        sx, sxp = sample(trials)
        swap, side, c = choice
        a, b = (sxp, sx) if swap else (sx, sxp)
        ka, kb = _count(np.asarray(a, float), side, c), _count(np.asarray(b, float), side, c)
        eh, lo, up = epsilon_lower_bound(ka, kb, trials, delta, alpha)
        first, second = ("X'", "X") if swap else ("X", "X'")
        res.event = f"statistic {'>=' if side == 'ge' else '<='} {c:g} ({first} vs {second})"
        res.epsilon_hat, res.p_x_lower, res.p_xprime_upper = eh, lo, up
        if eh is not None and eh > epsilon:
            res.verdict = "FAIL"
    res.seconds = time.perf_counter() - t0
    return res


def _label_result(name, case, hits, trials, delta, epsilon, confidence, t0, notes):
    lo, up = clopper_pearson(hits, trials, (1 - confidence) / 2)
    res = AuditResult(name, case, epsilon, delta, trials, label_rate=hits / trials,
                      label_rate_lower=lo, label_rate_upper=up, notes=notes)
    res.verdict = "FAIL" if lo > delta else "pass"  # significantly above δ
    res.seconds = time.perf_counter() - t0
    return res


# ------------------------------------------------------------------------------ mechanisms ------
class _Ctx:
    def __init__(self, epsilon, delta, label_delta, trials, confidence, seed, noise_scale):
        self.epsilon, self.delta, self.label_delta = epsilon, delta, label_delta
        # ``confidence`` is the per-pair level (the caller splits the family-wise level)
        self.trials, self.confidence, self.noise_scale = trials, confidence, noise_scale
        self.seed = secrets.randbits(64) if seed is None else seed
        self.eps_used = float(_R.epsilon_used(epsilon))  # §1: ε rounded down to a multiple of 2^-32

    def rng(self, label):
        return _core.noise.SecureRng(derive_seed(self.seed, "audit/" + label))


def _structure(ok: bool, what: str) -> None:
    """The pairs rely on structural facts of the summaries; if one stops holding, say so."""
    if not ok:
        raise RuntimeError(f"audit pair no longer has the intended structure ({what}); update dpsketch/audit.py")


def _value_of(raw, key) -> float:
    for k, v in raw[0]:
        if k == key:
            return float(v)
    return _NEG


def _ints(xs):
    return np.asarray(xs, dtype=np.int64)


# DPSS (docs/algorithms.md §3) ---------------------------------------------------------------------
def _dpss(ctx: _Ctx):
    out = []
    rng = ctx.rng("dpss")
    # +1 on a counter that passes the threshold surely: with capacity 4 and k = 2,
    # τ = max(n/2 − γ, n/4 + 1 + γ) (§3), so a count c ≥ 4/3·(γ + 3 + 20/ε) clears it by 20/ε
    gamma = _R.dpss_gamma(ctx.epsilon, ctx.delta)
    c = math.ceil(4 / 3 * (gamma + 3 + 20 / ctx.eps_used)) + 10
    xp = [1] * c + [2] * 3 + [3] * 2
    summaries = []
    for data in (xp + [1], xp):
        ss = _core.SpaceSavingInt(4)
        ss.update_many(_ints(data))
        summaries.append(ss)

    def sample(m):
        return tuple(np.array([_value_of(_R.dpss(s, ctx.epsilon, ctx.delta, 2, _R.Length.fixed(s.n), rng), 1) for _ in range(m)])
                     for s in summaries)

    out.append(audit_samplers("DPSS", "+1 on a released counter", sample, epsilon=ctx.eps_used,
                              delta=ctx.delta, trials=ctx.trials, confidence=ctx.confidence))
    # unstable label (docs/privacy.md §3): capacity 2, X = 1 2 3 evicts 2 for 3 (count 2 =
    # min + 1); X' = 1 2 has no 3. P(release 3 | X) ≤ δ/4 by the choice of γ.
    t0 = time.perf_counter()
    ss, ssp = _core.SpaceSavingInt(2), _core.SpaceSavingInt(2)
    ss.update_many(_ints([1, 2, 3]))
    ssp.update_many(_ints([1, 2]))
    _structure(3 not in [k for k, _ in ssp.items()], "DPSS pair: 3 must be absent for X'")
    hits = sum(_value_of(_R.dpss(ss, ctx.epsilon, ctx.label_delta, 1, _R.Length.fixed(ss.n), rng), 3) != _NEG
               for _ in range(ctx.trials))
    out.append(_label_result("DPSS", "unstable label (evicted counter + 1)", hits, ctx.trials, ctx.label_delta,
                             ctx.eps_used, ctx.confidence, t0, {"X": [1, 2, 3], "X'": [1, 2], "capacity": 2}))
    return out


# PMG (docs/algorithms.md §2) ----------------------------------------------------------------------
_PMG_UNSTABLE = [2, 5, 6, 4, 3, 0, 4, 2, 4, 2, 1, 2, 7]  # from the lemma search (tests/test_privacy.py)


def _mg(cap, data):
    mg = _core.MisraGriesInt(cap)
    mg.update_many(_ints(data))
    return mg


def _pmg(ctx: _Ctx):
    out = []
    rng = ctx.rng("pmg")
    # counts clear the release threshold 1 + 2t (§2) by 30/ε (noise η + Z: two DLap(1/ε))
    c = 1 + 2 * _R.pmg_t(ctx.epsilon, ctx.delta) + math.ceil(30 / ctx.eps_used)
    xp = [1] * c + [2] * 3 + [3] * 2
    pair = [_mg(4, xp + [1]), _mg(4, xp)]

    def sample_one(m):
        return tuple(np.array([_value_of(_R.pmg(s, ctx.epsilon, ctx.delta, None, _R.Length.unused(), rng), 1)
                               for _ in range(m)]) for s in pair)

    out.append(audit_samplers("PMG", "+1 on a released counter", sample_one, epsilon=ctx.eps_used,
                              delta=ctx.delta, trials=ctx.trials, confidence=ctx.confidence))
    # all counters shifted: capacity 3 full of counts c + 1; a 4th distinct item decrements all three
    base = [1] * (c + 1) + [2] * (c + 1) + [3] * (c + 1)
    shifted = [_mg(3, base + [4]), _mg(3, base)]
    _structure(sorted(v for _, v in shifted[0].items(False)) == [c, c, c], "PMG pair: every counter shifted")

    def total(raw):
        vals = [float(v) for k, v in raw[0] if k in (1, 2, 3)]
        return sum(vals) if len(vals) == 3 else _NEG

    def sample_all(m):
        return tuple(np.array([total(_R.pmg(s, ctx.epsilon, ctx.delta, None, _R.Length.unused(), rng)) for _ in range(m)])
                     for s in shifted)

    out.append(audit_samplers("PMG", "all counters shifted by a decrement", sample_all, epsilon=ctx.eps_used,
                              delta=ctx.delta, trials=ctx.trials, confidence=ctx.confidence))
    # unstable labels (docs/privacy.md §2): 1 (count 1) and 5 (a zero-count key) are stored for X
    # and absent for X' = X without one element; the proof charges their release to δ.
    t0 = time.perf_counter()
    mg = _mg(5, _PMG_UNSTABLE)
    xprime = None
    for i in range(len(_PMG_UNSTABLE)):
        cand = _PMG_UNSTABLE[:i] + _PMG_UNSTABLE[i + 1:]
        stored = {k for k, _ in _mg(5, cand).items(True)}
        if not stored & {1, 5}:
            xprime = cand
            break
    _structure(xprime is not None, "PMG pair: a neighbour without labels 1 and 5")
    hits = 0
    for _ in range(ctx.trials):
        keys = {k for k, _ in _R.pmg(mg, ctx.epsilon, ctx.label_delta, None, _R.Length.unused(), rng)[0]}
        hits += bool(keys & {1, 5})
    out.append(_label_result("PMG", "unstable labels (lemma counterexample)", hits, ctx.trials, ctx.label_delta,
                             ctx.eps_used, ctx.confidence, t0, {"X": _PMG_UNSTABLE, "X'": xprime, "capacity": 5}))
    return out


# Private sketches (docs/algorithms.md §4) ----------------------------------------------------------
def zcdp_rho_for(epsilon: float, delta: float) -> float:
    """The ρ whose (ε, δ)-DP conversion ρ + 2√(ρ ln 1/δ) equals ε (docs/algorithms.md §1)."""
    L = math.log(1 / delta)
    return (math.sqrt(L + epsilon) - math.sqrt(L)) ** 2


def _private_sketch(ctx: _Ctx, name: str, count_min: bool, kind: str):
    from .private import PrivateCountMin, PrivateCountSketch, zcdp_to_dp
    from .sketches import CountMin, CountSketch

    width, depth, item, m = 4, 2, 7, 5
    cls = PrivateCountMin if count_min else PrivateCountSketch
    if kind == "laplace":
        proto = cls(width, depth, epsilon=ctx.epsilon)
    else:
        proto = cls(width, depth, rho=zcdp_rho_for(ctx.epsilon, ctx.delta))
    impl = proto._impl
    num, den = impl.noise_param
    # the guarantee of the noise actually drawn (§4): Laplace scale d/ε, Gaussian σ² = d/(2ρ)
    claimed = depth * den / num if kind == "laplace" else zcdp_to_dp(depth * den / (2 * num), ctx.delta)
    den = int(round(den / ctx.noise_scale)) if ctx.noise_scale != 1 else den  # test-only hook
    hash_seed = impl.seed
    native = impl.__class__
    # the cells the neighbouring element touches, and their signs, from a non-private twin
    twin_x = (CountMin if count_min else CountSketch)(width, depth, seed=hash_seed)
    twin_x.update(item)
    diff = twin_x.cells()
    rows, cols = np.nonzero(diff)
    signs = diff[rows, cols].astype(float)
    rng = ctx.rng(name)
    reduce = np.min if kind == "laplace" else np.sum  # the privacy-loss statistic of each noise

    def sample(mm):
        sx, sxp = np.empty(mm), np.empty(mm)
        for i in range(mm):
            s = native(width, depth, hash_seed, impl.noise_kind, num, den, impl.shift, False, rng)
            s.update_many(_ints([item] * m))
            sxp[i] = reduce(signs * s.cells()[rows, cols])
            s.update(item)  # X = X' + one element: same noise draw, the marginals are exact
            sx[i] = reduce(signs * s.cells()[rows, cols])
        return sx, sxp

    case = f"single element +1 ({kind}, w={width}, d={depth})"
    return [audit_samplers(name, case, sample, epsilon=claimed, delta=ctx.delta if kind != "laplace" else 0.0,
                           trials=ctx.trials, confidence=ctx.confidence)]


# SketchHeavyHitters (docs/algorithms.md §5) --------------------------------------------------------
def _wrapper(ctx: _Ctx, sketch: str):
    name = f"SketchHeavyHitters-{sketch}"
    prefix = "EnvelopeCountMinInt" if sketch == "countmin" else "EnvelopeCountSketchInt"
    native = getattr(_R, prefix)
    k, capacity, item = 2, 8, 7
    width = 0 if sketch == "countmin" else 512  # CountSketch: wide rows so √(F2/w) lets one item pass
    n_max = max(100_000, math.ceil(100_000 / ctx.eps_used))  # the item must be able to reach the cut (γ_N ∝ 1/ε, §5)
    rng = ctx.rng(name)
    # each run feeds thousands of items through a deep sketch: fewer runs than the other pairs
    trials = max(200, ctx.trials // (20 if sketch == "countmin" else 200))

    def run(m, mm):
        """mm runs: (estimate − threshold margin at X', value released for X', for X)."""
        margin, vx, vxp = np.empty(mm), np.empty(mm), np.empty(mm)
        for i in range(mm):
            h = native(k, capacity, width, 0, ctx.epsilon, ctx.delta, n_max, derive_seed(ctx.seed, f"h{i}"), rng)
            h.update_many(_ints([item] * m))
            raw = h.release(_R.Length.fixed(h.n))
            margin[i] = h.estimate(item) - raw[1]
            vxp[i] = _value_of(raw, item)
            h.update(item)
            vx[i] = _value_of(h.release(_R.Length.fixed(h.n)), item)
        return margin, vx, vxp

    # Heavy item at the threshold: bisect for the m where the median margin (final estimate −
    # release cut) changes sign, so the item is released about half the time.
    lo, hi = 1, n_max - 1
    while hi - lo > max(1, lo // 200):
        mid = (lo + hi) // 2
        if np.median(run(mid, 9)[0]) < 0:
            lo = mid
        else:
            hi = mid
    m = hi

    def sample(mm):
        _, vx, vxp = run(m, mm)
        return vx, vxp

    res = audit_samplers(name, f"heavy item at the threshold ({m} copies +1)", sample,
                         epsilon=float(_R.epsilon_used(ctx.epsilon)), delta=ctx.delta, trials=trials,
                         confidence=ctx.confidence)
    return [res]


# Dyadic (docs/algorithms.md §6), when this build has it -----------------------------------------
def _dyadic(ctx: _Ctx):
    import dpsketch

    cls = dpsketch.PrivateDyadicCountSketch
    m, bits = 5, 4
    # rank(2^j) is the single dyadic node [0, 2^j) of level j: item 0 moves each by +1, and the
    # min over the levels is the all-levels-up event (the Laplace privacy-loss event, as in §4)
    points = [2**j for j in range(bits)]

    def stat(s):
        return min(s.rank(p) for p in points)

    def sample(mm):
        sx, sxp = np.empty(mm), np.empty(mm)
        for i in range(mm):
            s = cls(bits, width=8, depth=2, epsilon=ctx.epsilon, seed=derive_seed(ctx.seed, f"dyadic{i}"))
            s.update_many(np.zeros(m, dtype=np.int64))
            sxp[i] = stat(s)
            s.update(0)
            sx[i] = stat(s)
        return sx, sxp

    return [audit_samplers("PrivateDyadicCountSketch", "single element +1 (min of rank(2^j))", sample,
                           epsilon=float(_R.epsilon_used(ctx.epsilon)), delta=0.0,
                           trials=max(200, ctx.trials // 2), confidence=ctx.confidence)]


MECHANISMS: dict[str, Callable[[_Ctx], list]] = {
    "DPSS": _dpss,
    "PMG": _pmg,
    "PrivateCountMin-laplace": lambda c: _private_sketch(c, "PrivateCountMin-laplace", True, "laplace"),
    "PrivateCountMin-gaussian": lambda c: _private_sketch(c, "PrivateCountMin-gaussian", True, "gaussian"),
    "PrivateCountSketch-laplace": lambda c: _private_sketch(c, "PrivateCountSketch-laplace", False, "laplace"),
    "PrivateCountSketch-gaussian": lambda c: _private_sketch(c, "PrivateCountSketch-gaussian", False, "gaussian"),
    "SketchHeavyHitters-countmin": lambda c: _wrapper(c, "countmin"),
    "SketchHeavyHitters-countsketch": lambda c: _wrapper(c, "countsketch"),
}


def available_mechanisms() -> list[str]:
    import dpsketch

    names = list(MECHANISMS)
    if hasattr(dpsketch, "PrivateDyadicCountSketch"):
        names.append("PrivateDyadicCountSketch")
    return names


DEFAULT_TRIALS = 200_000
QUICK_TRIALS = 10_000
_PAIRS = {"DPSS": 2, "PMG": 3}  # neighbouring pairs per mechanism (others: 1)


def audit(mechanisms=None, *, epsilon: float = 1.0, delta: float = 1e-6, label_delta: float = 0.2,
          trials: int = DEFAULT_TRIALS, confidence: float = 0.999, seed: int | None = None,
          progress: Callable[[AuditResult], None] | None = None, _noise_scale: float = 1.0) -> list[AuditResult]:
    """Run the built-in neighbouring pairs of each mechanism (default: all) and return one
    AuditResult per pair. ``trials`` runs per side (the heavy-hitter wrappers use 1/20 and 1/200 of
    it: each run feeds thousands of items through a deep sketch). ``label_delta`` is the δ of the
    unstable-label pairs (large, so the δ-event is frequent enough to measure). ``confidence`` is
    family-wise: with that probability every reported bound holds at once (Bonferroni over the
    pairs), so a correct mechanism FAILs with probability at most 1 − confidence.
    ``_noise_scale`` (tests only) multiplies the private sketches' noise parameter, to check that
    the audit catches a broken mechanism."""
    from .release import check_privacy_params
    from ._validation import check_int

    epsilon, delta = check_privacy_params(epsilon, delta)
    _, label_delta = check_privacy_params(1.0, label_delta, delta_name="label_delta")
    trials = check_int("trials", trials, 10, 10**8)
    if seed is not None:
        seed = check_int("seed", seed, 0, 2**64 - 1)
    if isinstance(mechanisms, str):
        mechanisms = [mechanisms]
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.5 <= confidence < 1:
        raise ValueError(f"confidence must be in [0.5, 1), got {confidence!r}")
    names = available_mechanisms()
    chosen = names if not mechanisms else list(mechanisms)
    unknown = [m for m in chosen if m not in names]
    if unknown:
        raise ValueError(f"unknown mechanism(s) {', '.join(map(repr, unknown))}; choose from {', '.join(names)}")
    pairs = sum(_PAIRS.get(name, 1) for name in chosen)
    ctx = _Ctx(epsilon, delta, label_delta, trials, 1 - (1 - confidence) / pairs, seed, _noise_scale)
    results = []
    for name in chosen:
        fn = _dyadic if name == "PrivateDyadicCountSketch" else MECHANISMS[name]
        for r in fn(ctx):
            results.append(r)
            if progress is not None:
                progress(r)
    return results


def format_table(results: list[AuditResult]) -> str:
    """A plain-text report, one line per neighbouring pair."""
    lines = [f"{'mechanism':<31} {'case':<48} {'ε':>7} {'ε̂ (lower bnd)':>14} {'label rate [CI] vs δ':>30} {'trials':>7}  verdict"]
    for r in results:
        eh = "—" if r.epsilon_hat is None else f"{r.epsilon_hat:.3f}"
        if r.label_rate is not None:
            lab = f"{r.label_rate:.4f} [{r.label_rate_lower:.4f},{r.label_rate_upper:.4f}] vs {r.delta:g}"
            eh = "n/a"
        else:
            lab = ""
        lines.append(f"{r.mechanism:<31} {r.case[:48]:<48} {r.epsilon:>7.3f} {eh:>14} {lab:>30} {r.trials:>7}  {r.verdict}")
    return "\n".join(lines)


def run_command(mechanisms, *, epsilon, delta, label_delta, trials, quick, confidence, seed, as_json, quiet,
                out, err) -> int:
    """``dpsketch audit``: print the report (table or JSON) and return the exit status (0: every
    pair passed, 1: some ε̂ > ε or label rate significantly > δ)."""
    import json

    if trials is None:
        trials = QUICK_TRIALS if quick else DEFAULT_TRIALS
    t0 = time.perf_counter()

    def progress(r):
        if not quiet and not as_json:
            eh = "n/a" if r.epsilon_hat is None and r.label_rate is not None else (
                "—" if r.epsilon_hat is None else f"{r.epsilon_hat:.3f}")
            print(f"dpsketch: audited {r.mechanism}: {r.case} ({r.seconds:.1f} s, ε̂ {eh}, {r.verdict})", file=err)

    results = audit(mechanisms, epsilon=epsilon, delta=delta, label_delta=label_delta, trials=trials,
                    confidence=confidence, seed=seed, progress=progress)
    ok = all(r.passed for r in results)
    if as_json:
        json.dump({"epsilon": epsilon, "delta": delta, "label_delta": label_delta, "trials": trials,
                   "confidence": confidence, "seeded": seed is not None, "passed": ok,
                   "seconds": time.perf_counter() - t0, "results": [r.to_dict() for r in results]},
                  out, indent=2, default=lambda o: None if isinstance(o, float) and not math.isfinite(o) else str(o))
        out.write("\n")
    else:
        out.write(format_table(results) + "\n")
        out.write(f"{'PASS' if ok else 'FAIL'}: {sum(r.passed for r in results)}/{len(results)} pairs within the claimed "
                  f"guarantee; ε̂ are {confidence:.1%}-confidence lower bounds (family-wise), not proofs "
                  f"(docs/audit.md). {time.perf_counter() - t0:.0f} s\n")
    return 0 if ok else 1
