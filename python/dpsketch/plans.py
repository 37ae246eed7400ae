"""The plan of a release, before any data (docs/routes.md, Plans): :func:`plan` takes the
arguments of a front door (:func:`dpsketch.heavy_hitters`, :func:`dpsketch.quantiles`) minus the
data and returns a :class:`Plan`: the method that would run, the guarantee (ε, δ, ρ, neighbours, unit), the noise
(law, scale, the sensitivity it is calibrated to) and the accuracy (threshold, interval half-width
at a level, the smallest true count released with probability >= 1/2 and >= 0.95).

Nothing here reads data, and nothing here computes a privacy figure of its own: the routing is the
front doors' (``front.route_heavy_hitters`` / ``front.route_quantiles``), and each mechanism's
figures come from its own module, beside its release (``mechanisms.dpss.plan_figures``,
``mechanisms.pmg.plan_figures``, ``mechanisms.unit_level.plan_exact`` / ``plan_bounded_memory`` /
``plan_quantiles``, ``mechanisms.unit_weighted.plan_weighted``, ``mechanisms.quantiles.plan_figures``), which use the releases' own
calibration and interval rules. Where a figure depends on the stream length (DPSS's τ, the n/k
cut), ``n=`` is a *planning assumption*: a public number the caller chooses, never read from data.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional, cast

from ._validation import check_int, validate_params
from .errors import ParameterError
from .intervals import DEFAULT_LEVEL, check_level
from .mechanisms import dpss, pmg, quantiles, unit_level, unit_weighted
from .mechanisms._planning import RELEASE_PROBABILITIES
from .units import Person, Row, as_unit

__all__ = ["Plan", "plan", "plan_heavy_hitters", "plan_quantiles", "RELEASE_PROBABILITIES"]

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


# -- heavy hitters ---------------------------------------------------------------------------------

@validate_params(["epsilon", "delta", "k", "top_k", "capacity", "length_epsilon", "length_delta", "level"])
def plan_heavy_hitters(*, epsilon: float, delta: float, unit: Any = None, k: Optional[int] = None,
                       top_k: Optional[int] = None, method: str = "auto", capacity: Optional[int] = None,
                       passes: Optional[int] = None, cut: Any = "n/k", public_length: Optional[bool] = None,
                       length_epsilon: Optional[float] = None, length_delta: Optional[float] = None,
                       noise: str = "gaussian", n: Optional[int] = None, level: float = DEFAULT_LEVEL,
                       selection: Optional[str] = None, counts: bool = True) -> Plan:
    """The :class:`Plan` of :func:`dpsketch.heavy_hitters` with these arguments, without data.
    ``n``: a public planning assumption on the number of rows (the stream length the summary
    reads), needed for the figures that depend on it; ``level``: of the interval half-width;
    ``selection``/``counts``: the person-level weighted selection and whether it releases counts
    (both costs are shown)."""
    u = as_unit(unit, public_length)
    from .front import route_heavy_hitters

    m = route_heavy_hitters(u, method, k=k, top_k=top_k, passes=passes, capacity=capacity,
                            length_epsilon=length_epsilon, length_delta=length_delta, noise=noise,
                            selection=selection, counts=counts)
    nn = _check_n(n)
    lv = check_level(level)
    fig: dict[str, Any]
    if m in ("dpss", "dpss_two_pass"):
        fig = dpss.plan_figures(epsilon, delta, k=k, top_k=top_k, capacity=capacity, cut=cut,
                    public_length=cast(Row, u).public_length, length_epsilon=length_epsilon,
                    length_delta=length_delta, two_pass=m == "dpss_two_pass", n=nn, level=lv)
    elif m == "pmg":
        fig = pmg.plan_figures(epsilon, delta, k=k, top_k=top_k, capacity=capacity, public_length=cast(Row, u).public_length,
                   length_epsilon=length_epsilon, length_delta=length_delta, n=nn, level=lv)
    elif m == "exact" and selection is not None:
        fig = unit_weighted.plan_weighted(cast(Person, u), epsilon, delta, counts=counts)
    elif m == "exact":
        fig = unit_level.plan_exact(cast(Person, u), epsilon, delta, top_k=top_k, noise=noise)
    else:
        fig = unit_level.plan_bounded_memory(cast(Person, u), epsilon, delta, k=k, capacity=capacity, n=nn, level=lv)
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
        fig = quantiles.plan_figures(m, qs, bounds=bounds, epsilon=epsilon, method=method, scale=scale,
                                     relative_accuracy=relative_accuracy, integer=integer)
    else:
        fig = unit_level.plan_quantiles(u, qs, bounds=bounds, universe_bits=universe_bits, gamma=gamma, rho=rho,
                                        epsilon=epsilon, delta=delta)
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
