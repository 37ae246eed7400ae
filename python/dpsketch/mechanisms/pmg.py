"""PMG: the private release of a Misra–Gries summary (docs/algorithms.md §2,
docs/mechanisms/pmg.md). Every stored key, zero counts included, gets ``c(x) + η + Z_x`` with a
shared η and independent Z_x, all DLap(1/ε); keys at or above ``1 + 2t`` are released (the
threshold and the noise are drawn in cpp/include/dpsketch/release/counter_release.hpp)."""

from __future__ import annotations

import math
from typing import Any

from .. import _core
from .._validation import check_int
from ..errors import ParameterError
from ..release import Release
from ._counter_release import release_counters
from .top_k import check_top_k, top_k_capacity
from ..accounting.calibration import calibrate
from ..intervals import dlap_sum_tail_ge, for_release
from ._planning import RELEASE_PROBABILITIES, _ceil_div, _length_law, _mixture_probability, _smallest

_R = _core.release

__all__ = ["plan_figures", "release"]


def release(summary: Any, *, epsilon: float, delta: float, k: int | None = None, top_k: int | None = None,
            seed: int | None = None, public_length: bool = False, length_epsilon: float | None = None,
            length_delta: float | None = None, allow_repeat: bool = False, budget=None) -> Release:
    """PMG of ``summary`` (a :class:`dpsketch.MisraGries`); the parameters are
    :meth:`dpsketch.MisraGries.release`'s.

    :param summary: the summary to release (it holds its own lock during the release)
    :param epsilon: ε of the release's (ε, δ)-DP guarantee
    :param delta: δ of the release's (ε, δ)-DP guarantee, in (0, 1)
    :param k: also keep only noisy values >= n̂/k (heavy hitters; reads a noisy length)
    :param top_k: release exactly N items (the N largest noisy values) whenever N pass the threshold
    :param seed: reproducible noise, NOT secret (experiments only)
    :param public_length: treat the exact stream length as public (replace-one neighbours)
    :param length_epsilon: ε spent on the noisy length (default ε/10)
    :param length_delta: δ spent on the noisy length's bound: unused by PMG, an error without ``k``
    :param allow_repeat: release again although the summary was released before (the loss composes)
    :param budget: a :class:`dpsketch.Budget` charged (ε, δ) before any noise is drawn
    """
    kk = None if k is None else check_int("k", k, 1, 2**63 - 1)
    n_top = None if top_k is None else check_top_k(top_k)
    if kk is not None and n_top is not None:
        raise ParameterError("pass k= (keep noisy values >= n/k) or top_k= (exactly N items), not both")
    if n_top is not None:
        top_k_capacity(n_top, summary.capacity)  # capacity >= top_k
    if kk is None and length_delta is not None:
        raise ParameterError("length_delta has no use here: PMG reads the length only for the k cut, which needs no delta")
    return release_counters(
        summary, _core.release.pmg, "PMG", epsilon=epsilon, delta=delta, k=kk,
        need="none" if kk is None else "estimate", seed=seed, public_length=public_length,
        length_epsilon=length_epsilon, length_delta=None, allow_repeat=allow_repeat, budget=budget, top_k=n_top,
    )


# -- the plan: the guarantee and the accuracy before any data (docs/routes.md, Plans) ---------------

def plan_figures(epsilon, delta, *, k, top_k, capacity, public_length, length_epsilon, length_delta, n, level) -> dict:
    """PMG (docs/privacy.md §PMG): the checks of the front door and MisraGries.release, the
    calibration, t by the core's ``pmg_t`` and τ = 1 + 2t by its ``pmg_threshold`` (the release's
    own functions, cpp/include/dpsketch/release/thresholds.hpp), the n/k cut, the interval rule.

    :param epsilon: ε of the (ε, δ)-DP guarantee asked for
    :param delta: δ of the guarantee asked for
    :param k: the frequency cut's k (None with ``top_k``)
    :param top_k: exactly N items (None with ``k``)
    :param capacity: the summary's counters (None: the front door's default)
    :param public_length: the exact stream length is public (replace-one neighbours)
    :param length_epsilon: ε of the noisy length (default ε/10)
    :param length_delta: δ of the noisy length's bound
    :param n: the number of rows to assume (a public planning figure), or None
    :param level: the level of the interval half-width
    """

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
