"""The built-in neighbouring pairs (docs/audit.md "The neighbouring pairs"), one small function
each, in a registry keyed by mechanism.

A pair function takes a :class:`Ctx` and returns one :class:`AuditResult`. It builds the mechanism
with ``ctx.eps(ε)`` (Laplace noise: scale ∝ 1/ε) or ``ctx.rho(ρ)`` (Gaussian noise: σ ∝ 1/√ρ) and
reports the guarantee claimed for the *unmodified* ε or ρ: with ``ctx.noise == 1`` that is the real
mechanism, with ``ctx.noise == 0.5`` (``audit(miscalibrated=True)``) a copy whose noise scale is
halved while the claim stays, which the audit must catch. Register with::

    @pair("Mechanism-name", "what X and X' are", tests=1)
    def _my_pair(ctx):
        ...
        return ctx.samplers(sample, epsilon=claimed_eps, delta=0.0)

``tests`` is the number of statistical tests the pair makes (1, or 2 with a μ-test), for the
Bonferroni split of the family-wise confidence.
"""

from __future__ import annotations

import math
import secrets
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import InternalError
from .. import _core
from ..accounting.calibration import zcdp_epsilon, zcdp_rho_for
from .._seeds import derive_seed
from ._stats import AuditResult, audit_samplers, discrete_gaussian_mu, label_result

_R = _core.release
_NEG = -math.inf  # statistic of "label not released"


# ------------------------------------------------------------------------------ context ---------
class Ctx:
    """What a pair receives: the audited parameters, the per-test confidence, a generator per
    pair, and the noise factor (1: the real mechanism; 0.5: noise scale halved, same claim)."""

    def __init__(self, epsilon, delta, label_delta, trials, confidence, seed, noise=1.0):
        self.epsilon, self.delta, self.label_delta = epsilon, delta, label_delta
        # ``confidence`` is the per-test level (the caller splits the family-wise level)
        self.trials, self.confidence, self.noise = trials, confidence, float(noise)
        self.seed = secrets.randbits(64) if seed is None else seed
        self.eps_used = float(_R.epsilon_used(epsilon))  # §1: ε rounded down to a multiple of 2^-32
        self.mechanism, self.case = "", ""

    def eps(self, epsilon: float) -> float:
        """The ε to build a Laplace-noise mechanism with: its noise scale is (claimed scale)·noise."""
        return epsilon / self.noise

    def rho(self, rho: float) -> float:
        """The ρ to build a Gaussian-noise mechanism with: its σ is (claimed σ)·noise."""
        return rho / self.noise**2

    def rng(self, label: str):
        return _core.noise.SecureRng(derive_seed(self.seed, "audit/" + label))

    def run_seed(self, label: str) -> int:
        return derive_seed(self.seed, "audit-run/" + label)

    def samplers(self, sample, *, epsilon, delta, trials=None, mu=None, test_epsilon=True) -> AuditResult:
        return audit_samplers(self.mechanism, self.case, sample, epsilon=epsilon, delta=delta,
                              trials=trials or self.trials, confidence=self.confidence, mu=mu,
                              test_epsilon=test_epsilon)


@dataclass
class Pair:
    mechanism: str
    case: str
    fn: Callable[[Ctx], AuditResult]
    tests: int = 1
    requires: Callable[[], bool] | None = None


PAIRS: list[Pair] = []


def pair(mechanism: str, case: str, *, tests: int = 1, requires: Callable[[], bool] | None = None):
    """Register ``fn(ctx) -> AuditResult`` as a neighbouring pair of ``mechanism``."""
    def register(fn):
        PAIRS.append(Pair(mechanism, case, fn, tests, requires))
        return fn
    return register


def _structure(ok: bool, what: str) -> None:
    """The pairs rely on structural facts of the summaries; if one stops holding, say so."""
    if not ok:
        raise InternalError(f"audit pair no longer has the intended structure ({what}); update dpsketch/audit/_pairs.py")


def _value_of(raw, key) -> float:
    for k, v in raw[0]:
        if k == key:
            return float(v)
    return _NEG


def _ints(xs):
    return np.asarray(xs, dtype=np.int64)


def _leaves(make, steps) -> list:
    """One non-private sketch per step of ``steps`` (lists of int keys), each from ``make()``."""
    out = []
    for xs in steps:
        leaf = make()
        leaf.update_many(_ints(xs))
        out.append(leaf)
    return out


# The releases as they ship (docs/privacy.md §Stream length); every call goes through here.
def _dpss(summary, eps, delta, k, rng):
    """DPSS with its default private length: a share of (ε, δ) buys n̂ (release/calibration.hpp)."""
    cal = _R.calibrate(eps, delta, "bounds")
    length = _R.Length.noisy(summary.n, cal["length_epsilon"], cal["length_delta"], rng)
    return _R.dpss(summary, cal["epsilon_mechanism"], cal["delta_mechanism"], k, length, rng)


def _dpss_margins(eps, delta):
    """(γ, t_n) of the default DPSS release at (ε, δ)."""
    cal = _R.calibrate(eps, delta, "bounds")
    return (_R.dpss_gamma(cal["epsilon_mechanism"], cal["delta_mechanism"]),
            _R.length_t(cal["length_epsilon"], cal["length_delta"]))


def _pmg(summary, eps, delta, rng):
    return _R.pmg(summary, eps, delta, None, _R.Length.unused(), rng)  # without k, PMG reads no length


# DPSS (docs/algorithms.md §3) ---------------------------------------------------------------------
def _space_saving(cap, data):
    ss = _core.SpaceSavingInt(cap)
    ss.update_many(_ints(data))
    return ss


@pair("DPSS", "+1 on a released counter")
def _dpss_plus_one(ctx):
    rng = ctx.rng("dpss")
    # capacity 4, k = 2: τ = max(n_lo/2 − γ, n_up/4 + 1 + γ) (§3) with n_up ≤ n + 2t_n (n̂ within
    # t_n of n but rarely), so a count c ≥ 4/3·(γ + 3 + 2t_n/4 + 20/ε) clears it by 20/ε
    gamma, t_n = _dpss_margins(ctx.epsilon, ctx.delta)
    c = math.ceil(4 / 3 * (gamma + 3 + t_n / 2 + 20 / ctx.eps_used)) + 10
    xp = [1] * c + [2] * 3 + [3] * 2
    summaries = [_space_saving(4, xp + [1]), _space_saving(4, xp)]
    eps = ctx.eps(ctx.epsilon)

    def sample(m):
        return tuple(np.array([_value_of(_dpss(s, eps, ctx.delta, 2, rng), 1) for _ in range(m)]) for s in summaries)

    return ctx.samplers(sample, epsilon=ctx.eps_used, delta=ctx.delta)


@pair("DPSS", "unstable label (evicted counter + 1)")
def _dpss_label(ctx):
    # docs/privacy.md §3: capacity 2, X = 1 2 3 evicts 2 for 3 (count 2 = min + 1); X' = 1 2 has
    # no 3. P(release 3 | X) ≤ δ/4 by the choice of γ.
    t0 = time.perf_counter()
    rng = ctx.rng("dpss-label")
    ss, ssp = _space_saving(2, [1, 2, 3]), _space_saving(2, [1, 2])
    _structure(3 not in [k for k, _ in ssp.items()], "DPSS pair: 3 must be absent for X'")
    eps = ctx.eps(ctx.epsilon)
    hits = sum(_value_of(_dpss(ss, eps, ctx.label_delta, 1, rng), 3) != _NEG for _ in range(ctx.trials))
    return label_result(ctx.mechanism, ctx.case, hits, ctx.trials, ctx.label_delta, ctx.eps_used, ctx.confidence,
                        t0, {"X": [1, 2, 3], "X'": [1, 2], "capacity": 2})


# The DPSS pair of docs/privacy.md §Stream length: a SpaceSaving(10) stream of length n = 10q with
# 10 distinct keys (no eviction) and the same stream less one row of another key (n − 1). With the
# exact n read at the full (ε, δ), τ = n/10 + 1 + γ = q + 1 + γ for X and 0.1 less for X', so key 2,
# of count q + 1 + γ, is released with exactly that value for X' only (probability ≈ 0.46 at ε = 1).
def _length_streams(gamma: int):
    q = math.ceil((10 + gamma) / 9)
    c = q + 1 + gamma
    others = [4, 5, 8, 12, 14, 15, 16, 17, 18]
    rest = [others[i % 9] for i in range(10 * q - c)]  # every other key at least once
    x = [2] * c + rest
    return x, _without_one(x, 4), c


def _without_one(xs, item):
    out = list(xs)
    out.remove(item)
    return out


def _length_pair(ctx):
    """(X, X', at) for the audit's (ε, δ): ``at`` is the value that only X' can release when the
    threshold reads the exact n at the full (ε, δ)."""
    return _length_streams(_R.dpss_gamma(ctx.epsilon, ctx.delta))


def _near(value: float, at: float) -> float:
    """−|value − at| (−∞ when not released): its threshold events are the intervals around ``at``,
    the point event {value == at} included, where a threshold reading an exact length differs."""
    return _NEG if value == _NEG else -abs(value - at)


@pair("DPSS", "n crosses a multiple of k̃ (private length: released value of a key at τ)")
def _dpss_length(ctx):
    rng = ctx.rng("dpss-length")
    x, xp, at = _length_pair(ctx)
    summaries = [_space_saving(10, sorted(x)), _space_saving(10, sorted(xp))]
    _structure(len(summaries[0].items()) == 10, "DPSS length pair: 10 distinct keys, no eviction")
    eps = ctx.eps(ctx.epsilon)
    ctx.case = f"n crosses a multiple of k̃: −|value of key 2 − {at}| ({at} = τ for X with an exact n)"

    def sample(m):
        return tuple(np.array([_near(_value_of(_dpss(s, eps, ctx.delta, 5, rng), 2), at) for _ in range(m)])
                     for s in summaries)

    return ctx.samplers(sample, epsilon=ctx.eps_used, delta=ctx.delta)


# DPSS two passes (docs/privacy.md §DPSS, "Two passes"): the release of the exact counts of pass 1's
# tracked set, with the default private length, as dpsketch.dpss.heavy_hitters(passes=2) runs it.
def _two_passes(stream, cap):
    """(tracked set of pass 1, exact counts of pass 2, n) of ``stream`` with ``cap`` counters."""
    ss = _space_saving(cap, stream)
    tracked = [key for key, _ in ss.items()]
    return tracked, [list(stream).count(key) for key in tracked], ss.n


def _dpss_two_pass(passes, cap, eps, delta, k, rng):
    from ..mechanisms.dpss import two_pass_release

    tracked, exact, n = passes
    cal = _R.calibrate(eps, delta, "bounds")
    length = _R.Length.noisy(n, cal["length_epsilon"], cal["length_delta"], rng)
    return two_pass_release(tracked, exact, epsilon=cal["epsilon_mechanism"], delta=cal["delta_mechanism"], k=k,
                            capacity=cap, length=length, rng=rng)


@pair("DPSS[two-pass]", "+1 on a released exact count")
def _dpss_two_pass_plus_one(ctx):
    rng = ctx.rng("dpss-two-pass")
    # as the DPSS pair: capacity 4, k = 2, the key's count clears τ by 20/ε
    gamma, t_n = _dpss_margins(ctx.epsilon, ctx.delta)
    c = math.ceil(4 / 3 * (gamma + 3 + t_n / 2 + 20 / ctx.eps_used)) + 10
    xp = [1] * c + [2] * 3 + [3] * 2
    sides = [_two_passes(xp + [1], 4), _two_passes(xp, 4)]
    _structure(sides[0][0] == sides[1][0], "DPSS two-pass +1 pair: the same tracked set on both sides")
    eps = ctx.eps(ctx.epsilon)

    def sample(m):
        return tuple(np.array([_value_of(_dpss_two_pass(p, 4, eps, ctx.delta, 2, rng), 1) for _ in range(m)])
                     for p in sides)

    return ctx.samplers(sample, epsilon=ctx.eps_used, delta=ctx.delta)


@pair("DPSS[two-pass]", "one-sided label (tracked on X only)")
def _dpss_two_pass_label(ctx):
    # capacity 2, X = 1 2 3: pass 1 tracks {1, 3} (3 replaced 2), pass 2 counts f(3) = 1;
    # X' = 1 2 has no 3. P(release 3 | X) <= δ/4 (docs/privacy.md §DPSS "Two passes", fact 2).
    t0 = time.perf_counter()
    rng = ctx.rng("dpss-two-pass-label")
    x, xp = [1, 2, 3], [1, 2]
    _structure(3 in [k for k, _ in _space_saving(2, x).items()] and 3 not in [k for k, _ in _space_saving(2, xp).items()],
               "DPSS two-pass pair: 3 tracked for X only")
    eps = ctx.eps(ctx.epsilon)
    passes = _two_passes(x, 2)
    hits = sum(_value_of(_dpss_two_pass(passes, 2, eps, ctx.label_delta, 1, rng), 3) != _NEG
               for _ in range(ctx.trials))
    return label_result(ctx.mechanism, ctx.case, hits, ctx.trials, ctx.label_delta, ctx.eps_used, ctx.confidence,
                        t0, {"X": x, "X'": xp, "capacity": 2})


# DPSS exact-k (docs/privacy.md §Exact-k), as SpaceSaving.release(top_k=N) runs it: DPSS with its
# default private length at k = capacity (the lowest τ), then the library's selection of the N
# largest noisy values.
def _dpss_top_k(summary, eps, delta, n_top, rng):
    from ..mechanisms.top_k import select_top_k

    return select_top_k(_dpss(summary, eps, delta, summary.capacity, rng), n_top)


@pair("DPSS[top-k]", "+1 on one of 3 equal keys competing for N = 2 places")
def _dpss_top_k_plus_one(ctx):
    rng = ctx.rng("dpss-top-k")
    # capacity 4, k = 4, three keys of count c (no eviction): τ = max(n_lo/4 − γ, n_up/4 + 1 + γ)
    # with n ≈ 3c and n_up ≤ n + 2t_n (rarely more), so c ≥ 4(γ + 2 + 20/ε) + 2t_n clears τ by 20/ε
    gamma, t_n = _dpss_margins(ctx.epsilon, ctx.delta)
    c = math.ceil(4 * (gamma + 2 + 20 / ctx.eps_used) + 2 * t_n) + 10
    xp = [1] * c + [2] * c + [3] * c
    summaries = [_space_saving(4, xp + [1]), _space_saving(4, xp)]
    eps = ctx.eps(ctx.epsilon)

    def sample(m):  # the value of key 1 when it is among the 2 released, else −∞
        return tuple(np.array([_value_of(_dpss_top_k(s, eps, ctx.delta, 2, rng), 1) for _ in range(m)])
                     for s in summaries)

    res = ctx.samplers(sample, epsilon=ctx.eps_used, delta=ctx.delta)
    res.notes.update(capacity=4, top_k=2, count=c)
    return res


@pair("DPSS[top-k]", "unstable label (evicted counter + 1) at k = capacity")
def _dpss_top_k_label(ctx):
    # capacity 2, X = 1 2 3 evicts 2 for 3 (count 2 = min + 1), X' = 1 2 has no 3; N = 2 releases
    # everything that passes τ = max(n_lo/2 − γ, n_up/2 + 1 + γ), so the rate of 3 is P(Z > τ − 2) ≤ δ/4
    t0 = time.perf_counter()
    rng = ctx.rng("dpss-top-k-label")
    ss, ssp = _space_saving(2, [1, 2, 3]), _space_saving(2, [1, 2])
    _structure(3 not in [k for k, _ in ssp.items()], "DPSS top-k pair: 3 must be absent for X'")
    eps = ctx.eps(ctx.epsilon)
    hits = sum(_value_of(_dpss_top_k(ss, eps, ctx.label_delta, 2, rng), 3) != _NEG for _ in range(ctx.trials))
    return label_result(ctx.mechanism, ctx.case, hits, ctx.trials, ctx.label_delta, ctx.eps_used, ctx.confidence,
                        t0, {"X": [1, 2, 3], "X'": [1, 2], "capacity": 2, "top_k": 2})


# Spark counters route (docs/privacy.md §Counters route), through the library function the driver
# runs (dpsketch.distributed.release_partitions), on summaries built as the route builds them: one
# per key partition, fed its rows sorted by key.
def _partitions(parts, cls=None):
    from ..sketches.counters import SpaceSaving

    out = []
    for rows in parts:
        s = (cls or SpaceSaving)(10, key_type="int")
        s.update_many(np.asarray(sorted(rows), dtype=np.int64))
        out.append(s)
    return out


_ROUTE_P1 = [1] * 17 + [0, 3, 6, 7] * 3 + [9, 10, 11, 13, 20] * 2


def _route_sampler(ctx, sides, key, k=5, at=None):
    from .. import distributed

    rng = ctx.rng(ctx.mechanism + "/" + str(len(ctx.case)) + "/" + ctx.case.encode("ascii", "replace").decode())
    eps = ctx.eps(ctx.epsilon)

    def run(parts):
        # cut=None: the pairs probe the partitions' thresholds τ_p; the n/k cut is post-processing
        rel = distributed.release_partitions(parts, k=k, epsilon=eps, delta=ctx.delta, seed=rng.next_u64(), cut=None)
        v = next((float(v) for x, v in rel.items if x == key), _NEG)
        return v if at is None else _near(v, at)

    def sample(m):
        return tuple(np.array([run(parts) for _ in range(m)]) for parts in sides)

    return sample


@pair("spark.counters[DPSS]", "one row removed from one partition: another key at its partition's τ")
def _route_moved_row(ctx):
    # A per-partition threshold n_p/k̃_p + 1 + γ would move by 1/k̃ in partition 0 only and give
    # away which partition (which key) the removed row has.
    x, xp, at = _length_pair(ctx)
    sides = [_partitions([x, _ROUTE_P1]), _partitions([xp, _ROUTE_P1])]
    return ctx.samplers(_route_sampler(ctx, sides, 2, at=at), epsilon=ctx.eps_used, delta=ctx.delta,
                        trials=ctx.trials // 4)


@pair("spark.counters[DPSS]", "+1 on a released counter of one partition")
def _route_plus_one(ctx):
    gamma, t_n = _dpss_margins(ctx.epsilon, ctx.delta)
    c = math.ceil(2 * (gamma + 2 + t_n / 4 + 20 / ctx.eps_used)) + 10  # clears every τ_p by 20/ε
    p0 = [1] * c + [2] * 3
    p1 = [5] * 3 + [6] * 2
    sides = [_partitions([p0 + [1], p1]), _partitions([p0, p1])]
    return ctx.samplers(_route_sampler(ctx, sides, 1, k=2), epsilon=ctx.eps_used, delta=ctx.delta,
                        trials=ctx.trials // 4)


# Sketch route, string keys: the label lookup (docs/privacy.md §Sketch route), through
# dpsketch.distributed.lookup_labels on a fixed candidate set.
def _lookup_sampler(ctx, sides, fp, epsilon, delta):
    from ..distributed import lookup_labels

    rng = ctx.rng(ctx.mechanism + "/" + str(len(ctx.case)) + "/" + ctx.case.encode("ascii", "replace").decode())

    def run(found):
        items, _, _ = lookup_labels([fp, fp + 1], found, epsilon=epsilon, delta=delta, n_hat=0.0, k=1, rng=rng)
        return next((float(v) for x, v in items if x == "label"), _NEG)

    def sample(m):
        return tuple(np.array([run(found) for _ in range(m)]) for found in sides)

    return sample


@pair("spark.sketch[lookup]", "+1 on a candidate's exact count")
def _lookup_plus_one(ctx):
    eps = ctx.eps(ctx.eps_used)
    t = 1 + math.ceil(30 / ctx.eps_used) + 60  # far above τ = 1 + t_L
    sides = [{(7, 1): (t + 1, 1, "label")}, {(7, 1): (t, 1, "label")}]
    return ctx.samplers(_lookup_sampler(ctx, sides, 7, eps, ctx.delta), epsilon=ctx.eps_used, delta=ctx.delta)


@pair("spark.sketch[lookup]", "a light label on the heavy label's sketch fingerprint")
def _lookup_shared_sketch_fingerprint(ctx):
    # One row of another label whose 64-bit sketch fingerprint is the heavy label's but whose
    # 128-bit lookup fingerprint differs: it must not decide the heavy label's release.
    eps = ctx.eps(ctx.eps_used)
    t = 1 + math.ceil(30 / ctx.eps_used) + 60
    heavy = {(7, 1): (t, 1, "label")}
    sides = [{**heavy, (7, 2): (1, 1, "other")}, heavy]
    return ctx.samplers(_lookup_sampler(ctx, sides, 7, eps, ctx.delta), epsilon=ctx.eps_used, delta=ctx.delta)


@pair("spark.sketch[lookup]", "a candidate's only row (count 1 vs absent)")
def _lookup_label(ctx):
    t0 = time.perf_counter()
    from ..distributed import lookup_labels

    rng = ctx.rng("lookup-label")
    eps = ctx.eps(ctx.eps_used)
    hits = 0
    for _ in range(ctx.trials):
        items, _, _ = lookup_labels([7], {(7, 1): (1, 1, "label")}, epsilon=eps, delta=ctx.label_delta, n_hat=0.0, k=1,
                                    rng=rng)
        hits += bool(items)
    return label_result(ctx.mechanism, ctx.case, hits, ctx.trials, ctx.label_delta, ctx.eps_used, ctx.confidence,
                        t0, {"count": 1})


# PMG (docs/algorithms.md §2) ----------------------------------------------------------------------
_PMG_UNSTABLE = [2, 5, 6, 4, 3, 0, 4, 2, 4, 2, 1, 2, 7]  # from the lemma search (tests/mechanisms/test_privacy.py)


def _mg(cap, data):
    mg = _core.MisraGriesInt(cap)
    mg.update_many(_ints(data))
    return mg


def _pmg_count(ctx):
    # counts clear the release threshold 1 + 2t (§2) by 30/ε (noise η + Z: two DLap(1/ε))
    return 1 + 2 * _R.pmg_t(ctx.epsilon, ctx.delta) + math.ceil(30 / ctx.eps_used)


@pair("PMG", "+1 on a released counter")
def _pmg_plus_one(ctx):
    rng = ctx.rng("pmg")
    xp = [1] * _pmg_count(ctx) + [2] * 3 + [3] * 2
    pair_ = [_mg(4, xp + [1]), _mg(4, xp)]
    eps = ctx.eps(ctx.epsilon)

    def sample(m):
        return tuple(np.array([_value_of(_pmg(s, eps, ctx.delta, rng), 1) for _ in range(m)]) for s in pair_)

    return ctx.samplers(sample, epsilon=ctx.eps_used, delta=ctx.delta)


@pair("PMG", "all counters shifted by a decrement")
def _pmg_shifted(ctx):
    # capacity 3 full of counts c + 1; a 4th distinct item decrements all three
    rng = ctx.rng("pmg-shift")
    c = _pmg_count(ctx)
    base = [1] * (c + 1) + [2] * (c + 1) + [3] * (c + 1)
    shifted = [_mg(3, base + [4]), _mg(3, base)]
    _structure(sorted(v for _, v in shifted[0].items(False)) == [c, c, c], "PMG pair: every counter shifted")
    eps = ctx.eps(ctx.epsilon)

    def total(raw):
        vals = [float(v) for k, v in raw[0] if k in (1, 2, 3)]
        return sum(vals) if len(vals) == 3 else _NEG

    def sample(m):
        return tuple(np.array([total(_pmg(s, eps, ctx.delta, rng)) for _ in range(m)]) for s in shifted)

    return ctx.samplers(sample, epsilon=ctx.eps_used, delta=ctx.delta)


@pair("PMG", "unstable labels (lemma counterexample)")
def _pmg_labels(ctx):
    # docs/privacy.md §2: 1 (count 1) and 5 (a zero-count key) are stored for X and absent for
    # X' = X without one element; the proof charges their release to δ.
    t0 = time.perf_counter()
    rng = ctx.rng("pmg-label")
    mg = _mg(5, _PMG_UNSTABLE)
    xprime = None
    for i in range(len(_PMG_UNSTABLE)):
        cand = _PMG_UNSTABLE[:i] + _PMG_UNSTABLE[i + 1:]
        if not {k for k, _ in _mg(5, cand).items(True)} & {1, 5}:
            xprime = cand
            break
    _structure(xprime is not None, "PMG pair: a neighbour without labels 1 and 5")
    eps = ctx.eps(ctx.epsilon)
    hits = sum(bool({k for k, _ in _pmg(mg, eps, ctx.label_delta, rng)[0]} & {1, 5}) for _ in range(ctx.trials))
    return label_result(ctx.mechanism, ctx.case, hits, ctx.trials, ctx.label_delta, ctx.eps_used, ctx.confidence,
                        t0, {"X": _PMG_UNSTABLE, "X'": xprime, "capacity": 5})


# Linear-sketch pairs: the statistic is the likelihood-ratio test of the cells ----------------------
def _cells_result(ctx, sample_cells, diff, base, kind, sigma2, claim, trials=None):
    """Audit a mechanism that publishes noisy cells. ``sample_cells(m)`` returns (m, c) arrays of
    the c touched cells for X and X'; ``diff`` = cells(X) − cells(X') without noise, ``base`` =
    cells(X') without noise. Laplace (claim ε): statistic min_c sign(diff_c)·(cell_c − base_c), the
    all-cells-up event whose likelihood ratio is e^ε exactly; tested at δ = 0. Gaussian (claim ρ,
    per-cell variances ``sigma2``): statistic Σ_c diff_c·cell_c/σ_c², the likelihood-ratio
    statistic, μ-tested against √(2ρ) and ε-tested against the (ε, δ) conversion of ρ."""
    diff, base = np.asarray(diff, float), np.asarray(base, float)
    if kind == "laplace":
        sign = np.sign(diff)

        def sample(m):
            cx, cxp = sample_cells(m)
            return np.min(sign * (cx - base), axis=1), np.min(sign * (cxp - base), axis=1)

        return ctx.samplers(sample, epsilon=claim, delta=0.0, trials=trials)
    sigma2 = np.asarray(sigma2, float)
    weight = diff / sigma2

    def sample(m):
        cx, cxp = sample_cells(m)
        return (cx - base) @ weight, (cxp - base) @ weight

    # μ-test bound: √(2ρ) plus the discrete Gaussian's excess over its continuous μ at this pair's
    # move (its exact event-μ at the claimed σ when the pair attains the claimed sensitivity). A move
    # beyond what ρ covers (a sensitivity the claim misses) adds only that excess, not itself.
    groups: dict = {}
    for s2, a in zip(sigma2, np.abs(diff)):
        groups[(float(s2), float(a))] = groups.get((float(s2), float(a)), 0) + 1
    mu_cont = math.sqrt(2 * claim)
    mu_seen = math.sqrt(float(np.sum(diff**2 / sigma2)))
    mu_disc = discrete_gaussian_mu([(k, s2, a) for (s2, a), k in groups.items()]) - mu_seen + mu_cont
    res = ctx.samplers(sample, epsilon=zcdp_epsilon(claim, ctx.delta), delta=ctx.delta, mu=max(mu_cont, mu_disc),
                       trials=trials)
    res.notes.update(mu_sqrt_2rho=mu_cont, mu_discrete_gaussian=mu_disc)
    return res


def _privacy_kw(ctx, kind, factor=True):
    """The privacy keyword for a sketch audited at ctx.epsilon: ε itself (Laplace), or the ρ whose
    (ε, δ) conversion is ε (Gaussian); scaled by the noise factor when ``factor``."""
    if kind == "laplace":
        return {"epsilon": ctx.eps(ctx.epsilon) if factor else ctx.epsilon}
    rho = zcdp_rho_for(ctx.epsilon, ctx.delta)
    return {"rho": ctx.rho(rho) if factor else rho}


# Private Count-Min / CountSketch (docs/algorithms.md §4) and their from_sketch route (§8) ----------
_W, _D, _ITEM, _M = 4, 2, 7, 5  # width, depth, the neighbouring item, its count in X'


def _twin_cells(count_min, hash_seed, items):
    from ..sketches.linear import CountMin, CountSketch

    tw = (CountMin if count_min else CountSketch)(_W, _D, hash_seed=hash_seed)
    if len(items):
        tw.update_many(_ints(items))
    return tw.cells().astype(float)


def _replace_partner(count_min, hash_seed):
    """The element X' has instead of one more _ITEM: for Count-Min an item in none of _ITEM's
    cells (ℓ1 = 2d), for CountSketch one in every one of its cells with the opposite sign (the
    ℓ2² = 4d worst case of docs/privacy.md)."""
    a = _twin_cells(count_min, hash_seed, [_ITEM])
    for b in range(_ITEM + 1, _ITEM + 20_000):
        cb = _twin_cells(count_min, hash_seed, [b])
        if count_min and not np.any((a != 0) & (cb != 0)):
            return b
        if not count_min and np.array_equal(cb, -a):
            return b
    raise InternalError("no replace partner found")  # pragma: no cover - found within ~64 tries


def _sketch_pair(count_min: bool, kind: str, route: str, neighbours: str):
    def fn(ctx):
        from ..mechanisms.private_sketches import PrivateCountMin, PrivateCountSketch
        from ..sketches.linear import CountMin, CountSketch

        cls = PrivateCountMin if count_min else PrivateCountSketch
        claimed = cls(_W, _D, neighbours=neighbours, **_privacy_kw(ctx, kind, factor=False))
        claim = claimed.epsilon if kind == "laplace" else claimed.rho
        mech = cls(_W, _D, neighbours=neighbours, **_privacy_kw(ctx, kind))  # the audited copy
        hash_seed = mech.hash_seed
        partner = _replace_partner(count_min, hash_seed) if neighbours == "replace" else None
        xp = [_ITEM] * _M + ([partner] if partner is not None else [])
        x = [_ITEM] * (_M + 1)
        cx, cxp = _twin_cells(count_min, hash_seed, x), _twin_cells(count_min, hash_seed, xp)
        touched = np.nonzero((cx - cxp) != 0)
        diff, base = (cx - cxp)[touched], cxp[touched]
        num, den = mech._impl.noise_param
        cnum, cden = claimed._impl.noise_param
        sigma2 = np.full(diff.shape, cnum / cden)  # the LR weights and the μ bound use the claimed σ
        rng = ctx.rng(ctx.mechanism)

        if route == "constructor":
            impl = mech._impl
            native = type(impl)
            lone = _twin_cells(count_min, hash_seed, [partner])[touched] if partner is not None else 0.0

            def sample_cells(m):
                ox, oxp = np.empty((m, diff.size)), np.empty((m, diff.size))
                for i in range(m):
                    s = native(width=_W, depth=_D, hash_seed=hash_seed, kind=impl.noise_kind, num=num, den=den,
                               shift=impl.shift, f2_row=False, rng=rng, neighbours=impl.neighbours)
                    s.update_many(_ints(xp))
                    oxp[i] = s.cells()[touched]
                    s.update(_ITEM)  # X: one more _ITEM (same noise draw: the marginals are exact) ...
                    ox[i] = s.cells()[touched] - lone  # ... and, for replace, without the partner
                return ox, oxp
        else:
            src_cls = CountMin if count_min else CountSketch
            sources = []
            for data in (x, xp):
                src = src_cls(_W, _D, hash_seed=hash_seed)
                src.update_many(_ints(data))
                sources.append(src)
            kw = _privacy_kw(ctx, kind)
            base_seed = ctx.run_seed(ctx.mechanism)

            def sample_cells(m):
                ox, oxp = np.empty((m, diff.size)), np.empty((m, diff.size))
                for i in range(m):
                    s = derive_seed(base_seed, str(i))  # one noise draw for both sides
                    ox[i] = cls.from_sketch(sources[0], neighbours=neighbours, seed=s, **kw).cells()[touched]
                    oxp[i] = cls.from_sketch(sources[1], neighbours=neighbours, seed=s, **kw).cells()[touched]
                return ox, oxp

        return _cells_result(ctx, sample_cells, diff, base, kind, sigma2, claim)
    return fn


for _cm, _cname in ((True, "PrivateCountMin"), (False, "PrivateCountSketch")):
    for _kind in ("laplace", "gaussian"):
        _t = 1 if _kind == "laplace" else 2
        pair(f"{_cname}-{_kind}", f"single element +1 ({_kind}, w={_W}, d={_D})", tests=_t)(
            _sketch_pair(_cm, _kind, "constructor", "add_remove"))
        pair(f"{_cname}-{_kind}-replace", f"one element changed ({_kind}, neighbours='replace')", tests=_t)(
            _sketch_pair(_cm, _kind, "constructor", "replace"))
        pair(f"{_cname}-{_kind}-from_sketch", f"merged sketch + 1, noise once ({_kind}, from_sketch)", tests=_t)(
            _sketch_pair(_cm, _kind, "from_sketch", "add_remove"))


# Dyadic (docs/algorithms.md §6), when this build has it -----------------------------------------
# universe 2^3, width 2, depth 2: levels 1-2 are exact arrays, level 3 a CountSketch, so the joint
# and the Zhao allocations give different per-level noise
_DB, _DW, _DD = 3, 2, 2


def _has_dyadic() -> bool:
    import dpsketch

    return hasattr(dpsketch, "PrivateDyadicCountSketch")


def _dyadic_cells(sk) -> np.ndarray:
    bits = sk.universe_bits if hasattr(sk, "universe_bits") else sk.bits  # public class or native
    return np.concatenate([np.ravel(sk.level_cells(j)) for j in range(1, bits + 1)]).astype(float)


def _dyadic_twin(shape, seed, items):
    from ..sketches.dyadic import DyadicCountSketch

    bits, width, depth = shape
    tw = DyadicCountSketch(bits, width=width, depth=depth, seed=seed)
    for x in items:
        tw.update(x, 1)
    return tw


def _dyadic_pair(kind: str, allocation: str, route: str, neighbours: str, shape=(_DB, _DW, _DD)):
    def fn(ctx):
        from ..sketches.dyadic import PrivateDyadicCountSketch as P

        _DB, _DW, _DD = shape
        n_exact = sum(1 for j in range(1, _DB + 1) if 2**j <= _DW * _DD)

        a = 0
        hash_seed_src = ctx.run_seed(ctx.mechanism + "/hash")
        partner = None
        if neighbours == "replace":
            # X' holds b instead of one more a: b in the other half (every exact node differs), at
            # the sketch level in a's cells with the opposite signs when some seed allows it
            for attempt in range(64):
                seed = derive_seed(hash_seed_src, str(attempt))
                ca = _dyadic_cells(_dyadic_twin(shape, seed, [a]))
                for b in range(2 ** (_DB - 1), 2**_DB):
                    cb = _dyadic_cells(_dyadic_twin(shape, seed, [b]))
                    sk = slice(sum(2**j for j in range(1, n_exact + 1)), None)  # the sketch levels' cells
                    if np.array_equal(cb[sk], -ca[sk]):
                        partner, hash_seed_src = b, seed
                        break
                if partner is not None:
                    break
            _structure(partner is not None, "dyadic replace pair: an opposite-sign partner")
        common = [a] * _M + ([partner] if partner is not None else [])
        kw = dict(width=_DW, depth=_DD, noise_allocation=allocation, neighbours=neighbours)
        claimed = P(_DB, seed=hash_seed_src, **kw, **_privacy_kw(ctx, kind, factor=False))
        claim = claimed.epsilon if kind == "laplace" else claimed.rho
        mech = P(_DB, seed=hash_seed_src, **kw, **_privacy_kw(ctx, kind))
        impl = mech._impl
        cxp = _dyadic_cells(_dyadic_twin(shape, hash_seed_src, common))
        cx = _dyadic_cells(_dyadic_twin(shape, hash_seed_src, [a] * (_M + 1)))
        touched = np.nonzero(cx != cxp)[0]
        diff, base = (cx - cxp)[touched], cxp[touched]
        sizes = [2**j if j <= impl.exact_levels else _DW * _DD for j in range(1, _DB + 1)]
        sigma2 = np.repeat([num / den for num, den in claimed._impl.level_params], sizes)[touched]  # claimed σ
        rng = ctx.rng(ctx.mechanism)

        if route == "constructor":
            native = type(impl)

            def sample_cells(m):
                ox, oxp = np.empty((m, diff.size)), np.empty((m, diff.size))
                for i in range(m):
                    s = native(bits=_DB, width=_DW, depth=_DD, hash_seed=impl.seed, kind=impl.noise_kind,
                               allocation=impl.allocation, neighbours=impl.neighbours, params=impl.level_params,
                               rng=rng)
                    for x in common:
                        s.update(item=x, count=1)
                    oxp[i] = _dyadic_cells(s)[touched]
                    s.update(item=a, count=1)  # X: same noise draw, the marginals are exact
                    if partner is not None:
                        s.update(item=partner, count=-1)
                    ox[i] = _dyadic_cells(s)[touched]
                return ox, oxp
        else:
            sources = [_dyadic_twin(shape, hash_seed_src, [a] * (_M + 1)), _dyadic_twin(shape, hash_seed_src, common)]
            pkw = dict(noise_allocation=allocation, neighbours=neighbours, **_privacy_kw(ctx, kind))
            base_seed = ctx.run_seed(ctx.mechanism)

            def sample_cells(m):
                ox, oxp = np.empty((m, diff.size)), np.empty((m, diff.size))
                for i in range(m):
                    s = derive_seed(base_seed, str(i))  # one noise draw for both sides
                    ox[i] = _dyadic_cells(P.from_sketch(sources[0], seed=s, **pkw))[touched]
                    oxp[i] = _dyadic_cells(P.from_sketch(sources[1], seed=s, **pkw))[touched]
                return ox, oxp

        return _cells_result(ctx, sample_cells, diff, base, kind, sigma2, claim)
    return fn


# Laplace replace: 2^2 universe, w = 2, d = 1 (level 1 exact, level 2 one CountSketch row), so
# that the all-up event spans 3 cells rather than 6
_DYADIC_LAPLACE_REPLACE = (2, 2, 1)
for _kind in ("laplace", "gaussian"):
    _t = 1 if _kind == "laplace" else 2
    _rshape = _DYADIC_LAPLACE_REPLACE if _kind == "laplace" else (_DB, _DW, _DD)
    for _suffix, _alloc, _route, _nb, _shp, _case in (
            ("", "joint", "constructor", "add_remove", (_DB, _DW, _DD),
             f"item 0 +1 ({_kind}, joint, 2^{_DB} universe, w={_DW}, d={_DD})"),
            ("-zhao", "zhao", "constructor", "add_remove", (_DB, _DW, _DD), f"item 0 +1 ({_kind}, Zhao allocation)"),
            ("-replace", "joint", "constructor", "replace", _rshape,
             f"one item changed, upper half ({_kind}, 2^{_rshape[0]}, w={_rshape[1]}, d={_rshape[2]})"),
            ("-from_sketch", "joint", "from_sketch", "add_remove", (_DB, _DW, _DD),
             f"merged sketch + 1, noise once ({_kind})")):
        pair(f"PrivateDyadicCountSketch-{_kind}{_suffix}", _case, tests=_t, requires=_has_dyadic)(
            _dyadic_pair(_kind, _alloc, _route, _nb, _shp))


# SketchHeavyHitters (docs/algorithms.md §5) --------------------------------------------------------
# The wrapper adds DLap(Δ/ε) to every cell of its oracle and publishes candidates' final estimates.
# Only an event on which every touched cell moves has a likelihood ratio near e^ε, and its
# probability is about 2^-d: the pairs use the smallest depth the envelope rule
# d ≥ log2((max_stream_length + k̃)/δ_C) allows, with a large envelope δ and the shortest stream,
# and read the oracle (its estimate, or its cells), the ε-DP state every released value is a
# function of. The envelope δ then only sets the depth, so the pairs are tested at δ = 0.
WRAPPER_DELTA = 0.99  # envelope δ of the wrapper pairs (sets the depth only)
WRAPPER_MAX_TRIALS = 400_000  # runs per side: a multiple of --trials, at most this


def _wrapper_trials(ctx, factor):
    return max(ctx.trials, min(ctx.trials * factor, WRAPPER_MAX_TRIALS))


def _envelope(native, **kw):
    try:
        return native(**kw)
    except ValueError:
        return None


def _smallest_depth(native, eps, **kw):
    for depth in range(1, 64):
        if _envelope(native, depth=depth, epsilon=eps, delta=WRAPPER_DELTA, **kw) is not None:
            return depth
    raise InternalError("no wrapper depth found")  # pragma: no cover


@pair("SketchHeavyHitters-countmin", "lone item +1: the noisy oracle's estimate (min over rows)")
def _wrapper_countmin(ctx):
    # The released value of a candidate is its final Count-Min estimate, min over d rows of
    # m + DLap(d/ε). A stream long enough for the item to clear the cut forces a depth whose
    # all-rows-up event is too rare to measure, so the pair reads the estimate itself (a function
    # of the ε-DP noisy sketch, the quantity every released value is) on the shortest stream.
    eps = ctx.eps_used
    native, rng = _R.EnvelopeCountMinInt, ctx.rng(ctx.mechanism)
    shape = dict(k=1, capacity=2, width=2, max_stream_length=2, hash_seed=1, rng=rng)
    depth = _smallest_depth(native, ctx.eps(eps), **shape)  # the depth rule reads the ε the copy is built with
    base_seed = ctx.run_seed(ctx.mechanism)
    ctx.case = f"lone item 1 copy +1: estimate = min over rows (d={depth}, w=2, ε={eps:g}, envelope δ={WRAPPER_DELTA})"

    def sample(mm):
        vx, vxp = np.empty(mm), np.empty(mm)
        for i in range(mm):
            h = native(k=1, capacity=2, width=2, depth=depth, epsilon=ctx.eps(eps), delta=WRAPPER_DELTA,
                       max_stream_length=2, hash_seed=derive_seed(base_seed, str(i)), rng=rng)
            h.update(_ITEM)
            vxp[i] = float(h.estimate(_ITEM))
            h.update(_ITEM)  # same noise draw: the marginals are exact
            vx[i] = float(h.estimate(_ITEM))
        return vx, vxp

    res = ctx.samplers(sample, epsilon=eps, delta=0.0, trials=_wrapper_trials(ctx, 10))
    res.notes.update(depth=depth, width=2, capacity=2, copies=1, envelope_delta=WRAPPER_DELTA)
    return res


@pair("SketchHeavyHitters-countsketch", "lone item +1: min over the oracle's touched cells")
def _wrapper_countsketch(ctx):
    # A released value is the median of the item's d signed rows, which moves with half of them
    # only, so the pair reads the wrapper's noisy oracle itself (the ε-DP state every released value
    # is computed from, oracle_cells()): one item moves one cell of each of the d signed rows by its
    # public sign and the F2 cell by +1, and min over those d + 1 signed cells is the all-up
    # likelihood-ratio event of DLap((d+1)/ε) noise, as for the private sketches. The shortest
    # stream (one item, then two) allows the smallest depth.
    eps = ctx.eps_used
    native, rng = _R.EnvelopeCountSketchInt, ctx.rng(ctx.mechanism)
    shape = dict(k=1, capacity=2, width=1, max_stream_length=2, hash_seed=1, rng=rng)
    depth = _smallest_depth(native, ctx.eps(eps), **shape)
    base_seed = ctx.run_seed(ctx.mechanism)
    ctx.case = f"lone item 1 copy +1: min over the oracle's d + 1 touched cells (d={depth}, w=1)"

    def stat(h, signs):
        cells, f2 = h.oracle_cells()
        return float(min(np.min(signs * cells[:, 0]), f2[0]))

    def sample(mm):
        vx, vxp = np.empty(mm), np.empty(mm)
        for i in range(mm):
            seed = derive_seed(base_seed, str(i))
            h = native(k=1, capacity=2, width=1, depth=depth, epsilon=ctx.eps(eps), delta=WRAPPER_DELTA,
                       max_stream_length=2, hash_seed=seed, rng=rng)
            public = _core.CountSketchInt(1, depth, seed)  # the public hashes: the item's sign per row
            public.update(_ITEM)
            signs = public.cells()[:, 0]
            h.update(_ITEM)
            vxp[i] = stat(h, signs)
            h.update(_ITEM)
            vx[i] = stat(h, signs)
        return vx, vxp

    res = ctx.samplers(sample, epsilon=eps, delta=0.0, trials=_wrapper_trials(ctx, 10))
    res.notes.update(depth=depth, width=1, copies=1, envelope_delta=WRAPPER_DELTA)
    return res
