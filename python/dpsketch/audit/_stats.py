"""The estimators of the audit (docs/audit.md "What it computes"): exact Clopper–Pearson bounds,
the (ε, δ) lower bound ε̂, the Gaussian-DP lower bound μ̂, the threshold-event selection and the
per-pair result."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Callable

import numpy as np
from ..errors import ParameterError

_PHI_INV = NormalDist().inv_cdf


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
        raise ParameterError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    lower = 0.0 if k == 0 else _beta_quantile(alpha, k, n - k + 1)
    upper = 1.0 if k == n else _beta_quantile(1 - alpha, k + 1, n - k)
    return lower, upper


def epsilon_lower_bound(hits_x: int, hits_xp: int, trials: int, delta: float, alpha: float):
    """ε̂ = max(0, ln((p_lower(X) − δ) / p_upper(X'))), or None when p_lower(X) ≤ δ (no
    evidence). A privacy loss is never negative, so a negative logarithm only says the event gave
    no evidence: 0 is then the lower bound that holds, and the report never shows a negative ε̂."""
    lo, _ = clopper_pearson(hits_x, trials, alpha)
    _, up = clopper_pearson(hits_xp, trials, alpha)
    if lo - delta <= 0:
        return None, lo, up
    return max(0.0, math.log((lo - delta) / up)), lo, up


def mu_lower_bound(hits_x: int, hits_xp: int, trials: int, alpha: float):
    """μ̂ = Φ⁻¹(TPR_lower) − Φ⁻¹(FPR_upper) for the test "reject X' iff the event happens"
    (TPR = P[event | X], FPR = P[event | X']); None when a bound is 0 or 1 (no evidence).

    A μ-GDP mechanism has trade-off curve ≥ G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) (Dong–Roth–Su), so every
    test has Φ⁻¹(TPR) − Φ⁻¹(FPR) ≤ μ; with the Clopper–Pearson bounds μ̂ is a lower bound on μ,
    clamped at 0 (μ ≥ 0) like ε̂."""
    tpr, _ = clopper_pearson(hits_x, trials, alpha)
    _, fpr = clopper_pearson(hits_xp, trials, alpha)
    if tpr <= 0.0 or fpr >= 1.0:
        return None, tpr, fpr
    return max(0.0, _PHI_INV(tpr) - _PHI_INV(fpr)), tpr, fpr


# ------------------------------------------------------------------------- event selection ------
def _select_event(sx: np.ndarray, sxp: np.ndarray, delta: float, metric: str = "epsilon"):
    """Pick the threshold event (direction, side, c) that looks most distinguishing on the
    selection sample (normal-approximation score of ε̂ or μ̂; the exact bound is computed on fresh
    data)."""
    best = (-math.inf, None)
    finite = np.concatenate([sx, sxp])
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return None
    cands = np.unique(np.quantile(finite, np.linspace(0, 1, 201), method="nearest"))
    n = len(sx)
    phi_inv = np.vectorize(_PHI_INV, otypes=[float])
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
            lo = pa - 3 * np.sqrt(pa * (1 - pa) / n) - 1 / n
            up = pb + 3 * np.sqrt(pb * (1 - pb) / n) + 3 / n
            if metric == "epsilon":
                lo = lo - delta
                with np.errstate(divide="ignore", invalid="ignore"):
                    score = np.where((lo > 0) & (pa * n >= 20), np.log(np.maximum(lo, 1e-300) / up), -math.inf)
            else:  # μ: Φ⁻¹(TPR) − Φ⁻¹(FPR), both bounds strictly inside (0, 1)
                ok = (lo > 0) & (up < 1) & (pa * n >= 20)
                score = np.full(len(cands), -math.inf)
                if ok.any():
                    score[ok] = phi_inv(lo[ok]) - phi_inv(up[ok])
            i = int(np.argmax(score))
            if score[i] > best[0]:
                best = (float(score[i]), (swap, side, float(cands[i])))
    return best[1]


def _count(s: np.ndarray, side: str, c: float) -> int:
    return int(np.count_nonzero(s >= c) if side == "ge" else np.count_nonzero(s <= c))


def _describe(choice) -> str:
    swap, side, c = choice
    first, second = ("X'", "X") if swap else ("X", "X'")
    return f"statistic {'>=' if side == 'ge' else '<='} {c:g} ({first} vs {second})"


# ------------------------------------------------------------------------------- results --------
@dataclass
class AuditResult:
    """One audited neighbouring pair. ``epsilon_hat`` is a (1 − α)-confidence lower bound on the
    privacy loss (None: the event gave no evidence); ``mu_hat`` the same for the Gaussian-DP μ
    (Gaussian mechanisms only); ``label_rate*`` are for unstable-label pairs. ``noise_factor`` is
    1 for the real mechanism and 0.5 in the miscalibrated mode (noise scale halved, same claim)."""

    mechanism: str
    case: str
    epsilon: float  # the guarantee claimed for this configuration (ε used, or ε from zCDP)
    delta: float
    trials: int
    epsilon_hat: float | None = None
    event: str | None = None
    p_x_lower: float | None = None
    p_xprime_upper: float | None = None
    mu: float | None = None  # claimed Gaussian-DP μ (√(2ρ)), Gaussian mechanisms only
    mu_hat: float | None = None
    mu_event: str | None = None
    tpr_lower: float | None = None
    fpr_upper: float | None = None
    label_rate: float | None = None
    label_rate_lower: float | None = None
    label_rate_upper: float | None = None
    noise_factor: float = 1.0
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
                   selection_trials: int | None = None, mu: float | None = None,
                   test_epsilon: bool = True) -> AuditResult:
    """Audit any mechanism through the same estimator: ``sample(m)`` returns two float arrays of
    ``m`` statistics each, one scalar per run on X and on X' (``-inf`` allowed: "not released").
    ``epsilon_hat`` is a lower bound on the privacy loss holding with probability ``confidence``;
    with ``mu`` (a claimed Gaussian-DP μ) also ``mu_hat``, each at ``confidence``: the pair FAILs
    if ε̂ > ε or μ̂ > μ. ``test_epsilon=False`` runs the μ-test only."""
    t0 = time.perf_counter()
    alpha = (1 - confidence) / 2  # two one-sided bounds per test (union bound)
    m = selection_trials or max(200, trials // 4)
    sel_x, sel_xp = (np.asarray(v, float) for v in sample(m))
    res = AuditResult(name, case, epsilon, delta, trials, mu=mu)
    choices = {}
    if test_epsilon:
        choices["epsilon"] = _select_event(sel_x, sel_xp, delta, "epsilon")
    if mu is not None:
        choices["mu"] = _select_event(sel_x, sel_xp, delta, "mu")
    if all(c is None for c in choices.values()):
        res.notes["event"] = "no finite statistic: nothing to threshold"
    else:
        sx, sxp = (np.asarray(v, float) for v in sample(trials))
        for metric, choice in choices.items():
            if choice is None:
                continue
            swap, side, c = choice
            a, b = (sxp, sx) if swap else (sx, sxp)
            ka, kb = _count(a, side, c), _count(b, side, c)
            if metric == "epsilon":
                eh, lo, up = epsilon_lower_bound(ka, kb, trials, delta, alpha)
                res.event, res.epsilon_hat, res.p_x_lower, res.p_xprime_upper = _describe(choice), eh, lo, up
                if eh is not None and eh > epsilon:
                    res.verdict = "FAIL"
            else:
                mh, tpr, fpr = mu_lower_bound(ka, kb, trials, alpha)
                res.mu_event, res.mu_hat, res.tpr_lower, res.fpr_upper = _describe(choice), mh, tpr, fpr
                if mh is not None and mh > mu:
                    res.verdict = "FAIL"
    res.seconds = time.perf_counter() - t0
    return res


def label_result(name, case, hits, trials, delta, epsilon, confidence, t0, notes):
    """An unstable-label pair: the release rate of a label that can never appear for X', with its
    Clopper–Pearson interval; FAIL if the lower bound exceeds δ."""
    lo, up = clopper_pearson(hits, trials, (1 - confidence) / 2)
    res = AuditResult(name, case, epsilon, delta, trials, label_rate=hits / trials,
                      label_rate_lower=lo, label_rate_upper=up, notes=notes)
    res.verdict = "FAIL" if lo > delta else "pass"  # significantly above δ
    res.seconds = time.perf_counter() - t0
    return res


# ------------------------------------------------------ the discrete Gaussian's trade-off curve ----
def _dgauss_sum(k: int, sigma2: float):
    """Support and pmf of the sum of k independent discrete Gaussians DGauss(σ²), cut at ±14σ."""
    r = int(math.ceil(14 * math.sqrt(sigma2))) + 2
    z = np.arange(-r, r + 1)
    p = np.exp(-(z.astype(float) ** 2) / (2 * sigma2))
    p /= p.sum()
    out, lo = p, -r
    for _ in range(k - 1):
        out, lo = np.convolve(out, p), lo - r
    return np.arange(lo, lo + out.size), out


def discrete_gaussian_mu(groups) -> float:
    """The largest Φ⁻¹(P_X[S ∈ E]) − Φ⁻¹(P_X'[S ∈ E]) over threshold events E (either side,
    either direction) of the likelihood-ratio statistic S = Σ_c diff_c·cell_c/σ_c² of cells with
    discrete Gaussian noise: the exact μ the audit's μ-test can see for a correct mechanism.
    ``groups`` lists (cells, σ², ``|diff|``). The continuous Gaussian gives √(Σ cells·diff²/σ²) for
    every event; the discrete one is slightly above it in the tails when σ is small."""
    vals, pmf = np.zeros(1), np.ones(1)
    shift = 0.0
    for k, sigma2, a in groups:
        z, p = _dgauss_sum(int(k), float(sigma2))
        w = a / sigma2
        vals = (vals[:, None] + w * z[None, :]).ravel()
        pmf = (pmf[:, None] * p[None, :]).ravel()
        keep = pmf > 1e-300
        vals, pmf = vals[keep], pmf[keep]
        shift += k * a * a / sigma2
        if vals.size > 4_000_000:
            raise ParameterError("too many support points for the exact discrete-Gaussian μ")
    order = np.argsort(vals, kind="stable")
    v, p = vals[order], pmf[order]
    # X' has S = v (probability p); X has S = v + shift. Thresholds at every support point of both.
    cuts = np.unique(np.concatenate([v, v + shift]))
    cdf_xp = np.concatenate([[0.0], np.cumsum(p)])
    sf_xp = np.concatenate([np.cumsum(p[::-1])[::-1], [0.0]])
    # (a tolerance so that c − shift lands on the support point it stands for despite rounding)
    tol = 1e-9 * (float(np.max(np.abs(v))) + shift)
    i_ge_xp = np.searchsorted(v, cuts - tol, "left")           # P_X'(S >= c) = sf_xp[i]
    i_ge_x = np.searchsorted(v, cuts - shift - tol, "left")    # P_X(S >= c)
    i_le_xp = np.searchsorted(v, cuts + tol, "right")          # P_X'(S <= c) = cdf_xp[i]
    i_le_x = np.searchsorted(v, cuts - shift + tol, "right")
    best = -math.inf
    for tpr, fpr in ((sf_xp[i_ge_x], sf_xp[i_ge_xp]), (cdf_xp[i_le_xp], cdf_xp[i_le_x])):
        ok = (tpr > 1e-15) & (tpr < 1 - 1e-12) & (fpr > 1e-15) & (fpr < 1 - 1e-12)
        for t, f in zip(tpr[ok], fpr[ok]):
            best = max(best, _PHI_INV(float(t)) - _PHI_INV(float(f)))
    return best
