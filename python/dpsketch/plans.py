"""The plan of a release, before any data (docs/routes.md, Plans): :func:`plan` takes the
arguments of a front door (:func:`dpsketch.heavy_hitters`, :func:`dpsketch.quantiles`) minus the
data and returns a :class:`Plan`: the method that would run, the guarantee (ε, δ, ρ, neighbours, unit), the noise
(law, scale, the sensitivity it is calibrated to) and the accuracy (threshold, interval half-width
at a level, the smallest true count released with probability >= 1/2 and >= 0.95).

Nothing here reads data, and nothing here computes a privacy figure of its own: the routing is the
front doors' (``front.route_heavy_hitters`` / ``front.route_quantiles``), the calibration the
releases' (calibration.py, the C++ bindings of ``_core.release``, ``privacy_unit._exact_plan``,
``privacy_unit._bounded_memory_plan``, ``privacy_unit.unit_quantiles_cost``) and the intervals the
releases' rules (intervals.py). Where a figure depends on the stream length (DPSS's τ, the n/k
cut), ``n=`` is a *planning assumption*: a public number the caller chooses, never read from data.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional, cast

from . import _core
from ._validation import check_int, validate_params
from .accounting.calibration import calibrate, used_value
from .errors import ParameterError
from .intervals import (DEFAULT_LEVEL, check_level, dlap_abs_tail_gt, dlap_sum_tail_ge, dlap_tail_gt, for_release, noise_log_tail)
from .units import Person, Row, as_unit

__all__ = ["Plan", "plan", "plan_heavy_hitters", "plan_quantiles", "RELEASE_PROBABILITIES"]

_R = _core.release

# The probabilities at which a plan states the smallest true count released.
RELEASE_PROBABILITIES = (0.5, 0.95)
# Length noise beyond this two-sided tail mass is counted as "not released": the stated release
# probabilities are lower bounds by at most this much.
_LENGTH_TAIL = 1e-12


@dataclass(frozen=True)
class Plan:
    """What a release with these parameters would run and guarantee, and how accurate it would be,
    computed without data (docs/routes.md, Plans). ``print(plan)`` shows a short table.

    :ivar question: ``"heavy_hitters"`` or ``"quantiles"``
    :ivar mechanism: the mechanism name the release reports (``Release.mechanism``)
    :ivar method: the method that runs (``metadata["method"]``), "auto" resolved
    :ivar unit: the privacy unit as the release states it (``metadata["unit"]``)
    :ivar epsilon: ε the release reports (None for ρ-zCDP without a conversion δ)
    :ivar delta: δ the release reports
    :ivar rho: ρ of a zCDP release, else None
    :ivar neighbours: the neighbour relation (``metadata["neighbours"]``)
    :ivar noise: the noise law (``law``), its parameter (``scale`` of a discrete Laplace, ``sigma``
        and ``sigma2`` of a discrete Gaussian, ``epsilon_used`` of an exponential mechanism) and
        the sensitivity it is calibrated to
    :ivar threshold: the release threshold (``Release.threshold``) when it does not depend on the
        data; at the planning length ``n`` when it depends on the stream length; a formula string
        without ``n``; None when the release has none
    :ivar threshold_rule: how the threshold is applied (``"noisy value > threshold"``, ...)
    :ivar n: the planning assumption on the stream length (public, from the caller), or None
    :ivar level: the level of ``interval_half_width``
    :ivar interval_half_width: the noise half-width s of the release's intervals at ``level``
        (``metadata["interval"]["noise_halfwidth"]``), or None where the plan states none
    :ivar interval: what the half-width bounds, or why none is stated
    :ivar smallest_count_released: {p: the smallest true count c such that a key of true count c
        is released with probability >= p}, p in 1/2 and 0.95; None where the plan states none
    :ivar released_count_means: what "true count" means there, and what is left out
    :ivar notes: anything else the reader should know
    """

    question: str
    mechanism: str
    method: str
    unit: dict
    epsilon: Optional[float]
    delta: Optional[float]
    rho: Optional[float]
    neighbours: str
    noise: dict
    threshold: Any
    threshold_rule: Optional[str]
    n: Optional[int]
    level: float
    interval_half_width: Optional[int]
    interval: str
    smallest_count_released: Optional[dict]
    released_count_means: Optional[str]
    notes: tuple = ()
    _probability: Optional[Callable[[int], float]] = field(default=None, repr=False, compare=False)

    def release_probability(self, count: int) -> float:
        """The probability (a lower bound, by at most 10^-12) that a key of true ``count`` is
        released, in the sense of ``released_count_means``; only where the plan states
        ``smallest_count_released``."""
        if self._probability is None:
            raise ParameterError("this plan states no release probability: "
                                 + (self.released_count_means or "the mechanism releases no counts"))
        return self._probability(check_int("count", count, 0, 2**62))

    def to_dict(self) -> dict:
        """The plan as plain Python values (JSON-ready)."""
        out = asdict(self)
        out.pop("_probability")
        if out["smallest_count_released"] is not None:
            out["smallest_count_released"] = {str(p): c for p, c in out["smallest_count_released"].items()}
        out["notes"] = list(out["notes"])
        return out

    def __str__(self) -> str:
        def num(x):
            return "-" if x is None else f"{x:.6g}" if isinstance(x, float) else str(x)

        unit = self.unit
        who = ("one row" if unit["kind"] == "row" else
               f"one person ({', '.join(f'{k}={v}' for k, v in unit.items() if k.startswith('max_'))})")
        guarantee = f"epsilon={num(self.epsilon)}, delta={num(self.delta)}"
        if self.rho is not None:
            guarantee += f", rho={num(self.rho)}"
        noise = ", ".join(f"{k}={num(v) if not isinstance(v, str) else v}" for k, v in self.noise.items())
        rows = [
            ("plan", f"{self.question.replace('_', ' ')} by method={self.method!r} ({self.mechanism})"),
            ("unit", f"{who}; neighbours: {self.neighbours}"),
            ("guarantee", guarantee),
            ("noise", noise),
        ]
        if self.threshold is not None:
            at = f" at n={self.n}" if self.n is not None and not isinstance(self.threshold, str) else ""
            rows.append(("threshold", f"{num(self.threshold)}{at} ({self.threshold_rule})"))
        if self.interval_half_width is not None:
            rows.append((f"interval {self.level:g}", f"+/- {self.interval_half_width}: {self.interval}"))
        else:
            rows.append((f"interval {self.level:g}", f"not stated: {self.interval}"))
        if self.smallest_count_released is not None:
            rows.append(("released", "; ".join(f"p>={p:g} from count {c}"
                                                for p, c in self.smallest_count_released.items())))
        elif self.released_count_means:
            rows.append(("released", f"not stated: {self.released_count_means}"))
        rows += [("note", x) for x in self.notes]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _check_n(n) -> Optional[int]:
    return None if n is None else check_int("n", n, 0, 2**62)


def _smallest(prob: Callable[[int], float], p: float) -> int:
    """The smallest count c >= 1 with prob(c) >= p (prob non-decreasing in c)."""
    from .intervals import _first

    return _first(lambda c: prob(c) >= p, 1)


def _length_law(length: str, n: int, eps_n: float) -> tuple[int, list[float]]:
    """(zmax, [P(Z = z) for z in -zmax..zmax]): the lengths n̂ = n + Z a release may read at true
    length n. Public: Z = 0. Private: Z ~ DLap(1/ε_n) (docs/privacy.md §Stream length),
    P(Z = z) = (1−q)/(1+q)·q^{|z|}, cut where the two-sided tail is below 10^-12 (that mass is left
    out, so sums over it are lower bounds)."""
    if length != "private":
        return 0, [1.0]
    from .intervals import smallest_width

    zmax = smallest_width(lambda t: dlap_abs_tail_gt(eps_n, t), _LENGTH_TAIL)
    q = math.exp(-eps_n)
    c0 = -math.expm1(-eps_n) / (1 + q)
    return zmax, [c0 * math.exp(-eps_n * abs(z)) for z in range(-zmax, zmax + 1)]


def _mixture_probability(n: int, law: tuple[int, list[float]], threshold_of: Callable[[int], int],
                         tail_ge: Callable[[int], float]) -> Callable[[int], float]:
    """c -> Σ_z P(Z = z)·P(c + noise >= T(n + z)): ``threshold_of(n̂)`` the smallest noisy value
    released at n̂ (non-decreasing in n̂), ``tail_ge(u)`` = P(noise >= u). The lengths are grouped
    by their T, each group's range found by bisection, so the core is asked O(groups·log zmax)
    times rather than once per length."""
    zmax, weights = law
    groups: dict[int, float] = {}
    lo = -zmax
    while lo <= zmax:
        t = threshold_of(n + lo)
        a, b = lo, zmax
        if threshold_of(n + b) != t:  # T(n + a) == t < T(n + b): bisect for the last z with T == t
            while b - a > 1:
                mid = (a + b) // 2
                if threshold_of(n + mid) == t:
                    a = mid
                else:
                    b = mid
            b = a
        groups[t] = groups.get(t, 0.0) + math.fsum(weights[lo + zmax:b + zmax + 1])
        lo = b + 1
    items = sorted(groups.items())
    return lambda c: math.fsum(w * tail_ge(t - c) for t, w in items)


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


# -- heavy hitters ---------------------------------------------------------------------------------

def _dpss(epsilon, delta, *, k, top_k, capacity, cut, public_length, length_epsilon, length_delta, two_pass,
          n, level) -> dict:
    """DPSS in one or two passes (docs/privacy.md §DPSS): the checks of dpss.heavy_hitters, the
    calibration of the release, τ at the planning n by the core's ``dpss_threshold``, the n/k cut
    by ``dpss.apply_cut`` and the interval rule of intervals.py."""
    from .mechanisms.dpss import _k_or_top_k, apply_cut, check_cut

    kk, n_top, cut = _k_or_top_k(k, top_k, capacity, cut)
    cap = kk if n_top is not None else 2 * kk if capacity is None else check_int("capacity", capacity, 1,
                                                                                   _core.MAX_CAPACITY)
    if cap < kk:
        raise ParameterError(f"DPSS needs capacity >= k, got capacity={cap} < k={kk}")
    check_cut(cut)
    cal = calibrate(epsilon, delta, "bounds", public_length=public_length, length_epsilon=length_epsilon,
                    length_delta=length_delta)
    eps_used = float(_R.epsilon_used(cal["epsilon_mechanism"]))
    gamma = int(_R.dpss_gamma(eps_used, cal["delta_mechanism"]))
    num, den = _R.laplace_scale(1, cal["epsilon_mechanism"])
    private = cal["length"] == "private"
    eps_n = float(_R.epsilon_used(cal["length_epsilon"])) if private else 0.0
    t_n = int(_R.length_t(eps_n, cal["length_delta"])) if private else 0

    def threshold_at(nh: int) -> tuple[float, bool]:
        length = (_R.Length.from_bounds(float(nh), t_n, eps_n, cal["length_delta"]) if private
                  else _R.Length.fixed(nh))
        tau = float(_R.dpss_threshold(length.n_lo, length.n_up, kk, cap, gamma))
        _, thr, inclusive, _ = apply_cut(([], tau, False, {"n_used": float(nh)}), kk, cut)
        return thr, inclusive

    def smallest_value(nh: int) -> int:  # the smallest noisy value released at n̂
        thr, inclusive = threshold_at(nh)
        return math.ceil(thr) if inclusive else math.floor(thr) + 1

    nn = "n̂" if private else "n"
    lo_term = f"({nn} - {t_n})/{kk} - {gamma}" if private else f"{nn}/{kk} - {gamma}"
    hi_term = f"({nn} + {t_n})/{cap} + 1 + {gamma}" if private else f"{nn}/{cap} + 1 + {gamma}"
    formula = f"max({lo_term}, {hi_term})" + (f", and noisy value >= {nn}/{kk} (the n/k cut)" if cut else "")
    notes = []
    threshold: Any
    if n is None:
        threshold, rule = f"tau = {formula}", "noisy value > tau"
        notes.append("the threshold depends on the stream length: give n= (a public planning assumption) for "
                     "figures")
    else:
        threshold, inclusive = threshold_at(n)
        rule = ("noisy value >= threshold (the n/k cut)" if inclusive else "noisy value > threshold") + (
            f"; at n̂ = n (the release reads n̂ = n + DLap(1/{eps_n:.4g}))" if private else "")
    if n_top is not None:
        notes.append(f"top_k={n_top}: of the keys above the threshold the {n_top} largest noisy values are "
                     "released; the counts below are for passing the threshold")
    mechanism = "DPSS[two-pass]" if two_pass else "DPSS"
    meta = {"epsilon_used": eps_used, "capacity": cap, "length": cal["length"], "n_used": float(n or 0),
            "length_epsilon": eps_n}
    _, rule_iv = for_release(mechanism, [], meta, level)
    s = int(rule_iv["noise_halfwidth"])
    interval = f"DLap(1/epsilon_used) on each of the {cap} counters, all at once"
    if not two_pass:
        err = f" = {math.floor(rule_iv['n_bound'] / cap)} at n" if n is not None else ""
        interval += f"; one pass: the low end also subtracts SpaceSaving's overestimate floor(n_bound/{cap}){err}"
    counts = prob = None
    if n is not None:
        prob = _mixture_probability(n, _length_law(cal["length"], n, eps_n), smallest_value,
                                    lambda u: dlap_tail_gt(eps_used, u - 1))
        counts = {p: _smallest(prob, p) for p in RELEASE_PROBABILITIES}
    means = ("the exact count (two passes: the release noises the exact counts of the candidates)" if two_pass else
             "the key's SpaceSaving count; it is >= the true count for a tracked key, and every key of true count "
             f"> n/{cap} is tracked, so a true count at these figures (when above n/{cap}) is released at least as "
             "often")
    if n is not None and private:
        means += "; over the noise of the counts and of n̂"
    return dict(mechanism=mechanism, epsilon=cal["epsilon_total"], delta=cal["delta_total"], rho=None,
                neighbours=cal["neighbours"], threshold=threshold, threshold_rule=rule,
                noise={"law": "discrete_laplace", "scale": num / den, "epsilon_used": eps_used,
                       "sensitivity": "l1 = 1 (one count)", "gamma": gamma, "capacity": cap},
                interval_half_width=s, interval=interval, smallest_count_released=counts,
                released_count_means=means if n is not None else "give n= (the threshold depends on it)",
                notes=tuple(notes), _probability=prob)


def _pmg(epsilon, delta, *, k, top_k, capacity, public_length, length_epsilon, length_delta, n, level) -> dict:
    """PMG (docs/privacy.md §PMG): the checks of the front door and MisraGries.release, the
    calibration, t by the core's ``pmg_t`` and τ = 1 + 2t by its ``pmg_threshold`` (the release's
    own functions, cpp/include/dpsketch/release/thresholds.hpp), the n/k cut, the interval rule."""
    from .mechanisms.top_k import check_top_k, top_k_capacity

    if capacity is None:
        if k is None and top_k is None:
            raise ParameterError("method='pmg' needs capacity= (Misra-Gries counters), or k / top_k to size it")
        capacity = 2 * (k if k is not None else top_k)
    cap = check_int("capacity", capacity, 1, _core.MAX_CAPACITY)
    kk = None if k is None else check_int("k", k, 1, 2**63 - 1)
    n_top = None if top_k is None else check_top_k(top_k)
    if kk is not None and n_top is not None:
        raise ParameterError("pass k= (keep noisy values >= n/k) or top_k= (exactly N items), not both")
    if n_top is not None:
        top_k_capacity(n_top, cap)
    if kk is None and length_delta is not None:
        raise ParameterError("length_delta has no use here: PMG reads the length only for the k cut, which needs no "
                             "delta")
    cal = calibrate(epsilon, delta, "none" if kk is None else "estimate", public_length=public_length,
                    length_epsilon=length_epsilon, length_delta=None)
    eps_used = float(_R.epsilon_used(cal["epsilon_mechanism"]))
    t = int(_R.pmg_t(eps_used, cal["delta_mechanism"]))
    tau = int(_R.pmg_threshold(eps_used, cal["delta_mechanism"]))  # 1 + 2t, docs/mechanisms/pmg.md
    num, den = _R.laplace_scale(1, cal["epsilon_mechanism"])
    private = cal["length"] == "private"
    eps_n = float(_R.epsilon_used(cal["length_epsilon"])) if private else 0.0

    def smallest_value(nh: int) -> int:  # v >= max(τ, n̂/k), v an integer
        return tau if kk is None else max(tau, _ceil_div(nh, kk))

    notes = []
    threshold: Any
    nn = "n̂" if private else "n"
    if kk is None:
        threshold, rule = float(tau), "noisy value >= threshold (1 + 2t)"
    elif n is None:
        threshold, rule = f"max({tau}, {nn}/{kk})", "noisy value >= threshold"
        notes.append("the n/k cut depends on the stream length: give n= (a public planning assumption) for figures")
    else:
        threshold = float(max(tau, n / kk))
        rule = "noisy value >= threshold" + (f"; at n̂ = n (the release reads n̂ = n + DLap(1/{eps_n:.4g}))"
                                             if private else "")
    if n_top is not None:
        notes.append(f"top_k={n_top}: of the keys above the threshold the {n_top} largest noisy values are "
                     "released; the counts below are for passing the threshold")
    meta = {"epsilon_used": eps_used, "capacity": cap, "length": cal["length"], "n_used": float(n or 0),
            "length_epsilon": eps_n}
    _, rule_iv = for_release("PMG", [], meta, level)
    s = int(rule_iv["noise_halfwidth"])
    interval = f"eta + Z_x on each of the {cap} stored keys, all at once; the high end also adds Misra-Gries' " \
               f"underestimate floor(n_bound/{cap + 1})"
    if kk is None:
        interval += " (infinite: without k the release publishes no length)"
    elif n is not None:
        interval += f" = {math.floor(rule_iv['n_bound'] / (cap + 1))} at n"
    counts = prob = None
    if kk is None or n is not None:
        law = _length_law(cal["length"] if kk is not None else "unused", n or 0, eps_n)
        prob = _mixture_probability(n or 0, law, smallest_value, lambda u: dlap_sum_tail_ge(eps_used, u))
        counts = {p: _smallest(prob, p) for p in RELEASE_PROBABILITIES}
    means = (f"the key's Misra-Gries count; the true count may exceed it by up to floor(n/{cap + 1}) "
             f"(add that for a true count)")
    if private and n is not None:
        means += "; over the noise of the counts and of n̂"
    return dict(mechanism="PMG", epsilon=cal["epsilon_total"], delta=cal["delta_total"], rho=None,
                neighbours=cal["neighbours"], threshold=threshold, threshold_rule=rule,
                noise={"law": "discrete_laplace (eta shared + Z_x per key)", "scale": num / den,
                       "epsilon_used": eps_used, "sensitivity": "l1 = 1 per draw", "t": t, "tau": tau,
                       "capacity": cap},
                interval_half_width=s, interval=interval, smallest_count_released=counts,
                released_count_means=means if counts is not None else "give n= (the n/k cut depends on it)",
                notes=tuple(notes), _probability=prob)


def _exact(u: Person, epsilon, delta, *, top_k, noise) -> dict:
    """The person-level exact route (docs/privacy.md §Privacy unit): privacy_unit._exact_plan is
    the release's own calibration; released iff bounded count + Z > τ."""
    from .mechanisms.unit_level import _exact_plan

    selection = None if top_k is None else "gumbel"
    kk = None if top_k is None else check_int("k", top_k, 1, 2**31)
    p = _exact_plan(epsilon, delta, u.max_keys, u.max_rows_per_key, noise, selection, kk)
    num, den = p["noise_param"]
    log_tail = noise_log_tail(p["noise"], num / den)
    tau = int(p["threshold"])

    def prob(c: int) -> float:  # P(c + Z > τ)
        return math.exp(log_tail(tau - c))

    if p["noise"] == "discrete_gaussian":
        law = {"law": "discrete_gaussian", "sigma": p["sigma"], "sigma2": p["sigma2"],
               "sensitivity": f"l2 = {p['l2_sensitivity']:.6g} (max_rows_per_key*sqrt(max_keys))"}
    else:
        law = {"law": "discrete_laplace", "scale": p["laplace_scale"],
               "sensitivity": f"l1 = {p['l1_sensitivity']} (max_keys*max_rows_per_key)"}
    notes = []
    if selection:
        law["gumbel_scale"] = p["gumbel_scale"]
        notes.append(f"top_k={kk}: half of epsilon ranks the keys above the threshold by Gumbel noise on their "
                     "bounded counts; the counts below are for passing the threshold")
    return dict(mechanism=f"unit.exact[{p['noise']}{'+gumbel' if selection else ''}]", epsilon=p["epsilon"],
                delta=p["delta"], rho=p.get("rho"), neighbours="add_remove_unit", threshold=float(tau),
                threshold_rule="noisy bounded count > threshold", noise=law, interval_half_width=None,
                interval="this route's intervals are conditional on the released set (they depend on the released "
                         "value and on how many keys are released, docs/privacy.md §Intervals): no data-free "
                         "half-width",
                smallest_count_released={q: _smallest(prob, q) for q in RELEASE_PROBABILITIES},
                released_count_means="the key's bounded count (each person's at most max_keys keys and "
                                     "max_rows_per_key rows of each)",
                notes=tuple(notes), _probability=prob)


def _bounded_memory(u: Person, epsilon, delta, *, k, capacity, n, level) -> dict:
    """The person-level bounded-memory route (docs/privacy.md §Privacy unit): DPSS at the per-row
    (ε', δ') of privacy_unit._bounded_memory_plan, reported at the unit-level (ε, δ)."""
    from .mechanisms.unit_level import _bounded_memory_plan

    bm = _bounded_memory_plan(epsilon, delta, cast(int, u.max_rows))
    out = _dpss(bm["epsilon_row"], bm["delta_row"], k=k, top_k=None, capacity=capacity, cut="n/k",
                public_length=False, length_epsilon=None, length_delta=None, two_pass=False, n=n, level=level)
    out.update(mechanism="unit.bounded_memory[DPSS]", epsilon=bm["epsilon"], delta=bm["delta"],
               neighbours="add_remove_unit")
    out["noise"] = {**out["noise"], "epsilon_per_row": bm["epsilon_row"], "delta_per_row": bm["delta_row"]}
    out["notes"] = out["notes"] + (f"each person's first {u.max_rows} rows reach SpaceSaving; n and the counts are "
                                   "those of the kept rows",)
    return out


@validate_params(["epsilon", "delta", "k", "top_k", "capacity", "length_epsilon", "length_delta", "level"])
def plan_heavy_hitters(*, epsilon: float, delta: float, unit: Any = None, k: Optional[int] = None,
                       top_k: Optional[int] = None, method: str = "auto", capacity: Optional[int] = None,
                       passes: Optional[int] = None, cut: Any = "n/k", public_length: Optional[bool] = None,
                       length_epsilon: Optional[float] = None, length_delta: Optional[float] = None,
                       noise: str = "gaussian", n: Optional[int] = None, level: float = DEFAULT_LEVEL) -> Plan:
    """The :class:`Plan` of :func:`dpsketch.heavy_hitters` with these arguments, without data.
    ``n``: a public planning assumption on the number of rows (the stream length the summary
    reads), needed for the figures that depend on it; ``level``: of the interval half-width."""
    u = as_unit(unit, public_length)
    from .front import route_heavy_hitters

    m = route_heavy_hitters(u, method, k=k, top_k=top_k, passes=passes, capacity=capacity,
                            length_epsilon=length_epsilon, length_delta=length_delta, noise=noise)
    nn = _check_n(n)
    lv = check_level(level)
    fig: dict[str, Any]
    if m in ("dpss", "dpss_two_pass"):
        fig = _dpss(epsilon, delta, k=k, top_k=top_k, capacity=capacity, cut=cut,
                    public_length=cast(Row, u).public_length, length_epsilon=length_epsilon,
                    length_delta=length_delta, two_pass=m == "dpss_two_pass", n=nn, level=lv)
    elif m == "pmg":
        fig = _pmg(epsilon, delta, k=k, top_k=top_k, capacity=capacity, public_length=cast(Row, u).public_length,
                   length_epsilon=length_epsilon, length_delta=length_delta, n=nn, level=lv)
    elif m == "exact":
        fig = _exact(cast(Person, u), epsilon, delta, top_k=top_k, noise=noise)
    else:
        fig = _bounded_memory(cast(Person, u), epsilon, delta, k=k, capacity=capacity, n=nn, level=lv)
    return Plan(question="heavy_hitters", method=m, unit=u.describe(), n=nn, level=lv, **fig)


# -- quantiles -------------------------------------------------------------------------------------

@validate_params(["epsilon", "delta", "rho", "bounds", "universe_bits", "level"])
def plan_quantiles(qs: Any, *, bounds: Any = None, epsilon: Optional[float] = None, delta: Optional[float] = None,
                   rho: Optional[float] = None, unit: Any = None, method: str = "auto", scale: str = "linear",
                   relative_accuracy: float = 0.01, integer: bool = False, universe_bits: Optional[int] = None,
                   gamma: float = 0.01, n: Optional[int] = None, level: float = DEFAULT_LEVEL) -> Plan:
    """The :class:`Plan` of :func:`dpsketch.quantiles` with these arguments, without data. The
    guarantee and the noise are stated for every method; no rank-error bound is stated (the
    exponential mechanisms' depend on the gaps between the data points; the person-level release
    carries rank intervals only on a hierarchy of exact levels): ``interval`` says so."""
    u = as_unit(unit)
    from .front import route_quantiles

    m = route_quantiles(u, method, qs, epsilon=epsilon, delta=delta, rho=rho, universe_bits=universe_bits,
                        scale=scale, integer=integer)
    nn = _check_n(n)
    lv = check_level(level)
    fig: dict[str, Any]
    if isinstance(u, Row):
        import numpy as np

        from .mechanisms.quantiles import check_params, interval_record, mechanism_name, method_record

        levels, (lo, hi), eps, _alpha = check_params(qs, bounds=bounds, epsilon=epsilon, method=method, scale=scale,
                                                     relative_accuracy=relative_accuracy, integer=integer)
        eps_used = float(used_value(eps))
        record = method_record(m, eps_used, len(np.unique(levels)))
        fig = dict(mechanism=mechanism_name(m), epsilon=eps_used, delta=0.0, rho=None, neighbours="add_remove",
                   noise={"law": "exponential_mechanism", "epsilon_used": eps_used, **record},
                   interval=interval_record(m)["reason"],
                   notes=(f"bounds=({lo:g}, {hi:g}) are public; values outside are clamped",))
    else:
        from .mechanisms.unit_level import _check_qs, unit_quantiles_cost

        _check_qs(qs)
        cost = unit_quantiles_cost(max_rows_per_unit=cast(int, u.max_rows), bounds=bounds, universe_bits=universe_bits,
                                   gamma=gamma, rho=rho, epsilon=epsilon, delta=delta)
        gaussian = cost["noise"] == "discrete_gaussian"
        law = ({"law": "discrete_gaussian", "sigma": math.sqrt(cost["sigma2"]), "sigma2": cost["sigma2"],
                "sensitivity": f"l2^2 = {cost['l2_sensitivity_squared_total']} over all levels"} if gaussian else
               {"law": "discrete_laplace", "scale": cost["laplace_scale"],
                "sensitivity": f"l1 = {cost['l1_sensitivity_total']} over all levels"})
        law.update(universe_bits=cost["universe_bits"], exact_levels=cost["exact_levels"], width=cost["width"],
                   depth=cost["depth"])
        fig = dict(mechanism=f"unit.quantiles[{cost['noise']}]", epsilon=cost["epsilon"], delta=cost["delta"],
                   rho=cost["rho"], neighbours="add_remove_unit", noise=law,
                   interval=("each value carries a rank interval: the true rank range among the kept rows meets "
                             "q·n̂ ± s, s uniform over all positions (exact levels only; docs/privacy.md §Intervals)"
                             if cost["exact_levels"] >= cost["universe_bits"] else
                             f"none at this shape: {cost['universe_bits'] - cost['exact_levels']} CountSketch levels add "
                             "a collision error no published quantity bounds (universe_bits <= "
                             f"{cost['exact_levels']} for rank intervals; docs/privacy.md §Intervals)"),
                   notes=(f"each person's first {u.max_rows} values enter the sketch; resolution "
                          f"{cost['resolution']:.6g}",))
    return Plan(question="quantiles", method=m, unit=u.describe(), threshold=None, threshold_rule=None, n=nn,
                level=lv, interval_half_width=None, smallest_count_released=None, released_count_means=None, **fig)


def plan(question: str, /, **params: Any) -> Plan:
    """The plan of a release, before any data (docs/routes.md, Plans): ``plan("heavy_hitters",
    epsilon=..., delta=..., unit=..., k=... | top_k=..., method=..., n=...)`` or ``plan("quantiles", qs=...,
    bounds=..., epsilon=..., unit=..., method=...)`` with the arguments of the front door of the
    same name minus the data (and its reading options: column, format, keys, seed, budget), plus
    ``n=`` (a public planning assumption on the number of rows) and ``level=`` (of the interval
    half-width, default 0.95). Returns a :class:`Plan`; ``print`` it for a short table.

    :param question: ``'heavy_hitters'`` or ``'quantiles'``: which front door to plan
    """
    if question == "heavy_hitters":
        return plan_heavy_hitters(**params)
    if question == "quantiles":
        if "qs" not in params:
            raise ParameterError("plan('quantiles', ...) needs qs= (the quantile levels)")
        return plan_quantiles(**params)
    raise ParameterError(f"plan() takes 'heavy_hitters' or 'quantiles', got {question!r}")
