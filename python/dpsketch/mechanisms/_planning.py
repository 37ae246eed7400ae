"""What the plans of the mechanisms share (docs/routes.md, Plans): the probabilities a plan states
the smallest released count at, and the law of the noisy length a release reads (docs/privacy.md
§Stream length), mixed into the probability that a count is released. Each mechanism's own plan
is in its module (``dpss.plan_figures``, ``pmg.plan_figures``, ``unit_level.plan_exact`` ...)."""

from __future__ import annotations

import math
from typing import Callable

from ..intervals import dlap_abs_tail_gt

# The probabilities at which a plan states the smallest true count released.
RELEASE_PROBABILITIES = (0.5, 0.95)
# Length noise beyond this two-sided tail mass is counted as "not released": the stated release
# probabilities are lower bounds by at most this much.
_LENGTH_TAIL = 1e-12


def _smallest(prob: Callable[[int], float], p: float) -> int:
    """The smallest count c >= 1 with prob(c) >= p (prob non-decreasing in c)."""
    from ..intervals import _first

    return _first(lambda c: prob(c) >= p, 1)


def _length_law(length: str, n: int, eps_n: float) -> tuple[int, list[float]]:
    """(zmax, [P(Z = z) for z in -zmax..zmax]): the lengths n̂ = n + Z a release may read at true
    length n. Public: Z = 0. Private: Z ~ DLap(1/ε_n) (docs/privacy.md §Stream length),
    P(Z = z) = (1−q)/(1+q)·q^{|z|}, cut where the two-sided tail is below 10^-12 (that mass is left
    out, so sums over it are lower bounds)."""
    if length != "private":
        return 0, [1.0]
    from ..intervals import smallest_width

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
