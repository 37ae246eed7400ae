"""Cumulative ("since start") releases of a linear sketch over a series of windows, by the binary
tree mechanism (Dwork, Naor, Pitassi, Rothblum 2010; Chan, Shi, Song 2011) or a smooth variant
(after Andersson & Pagh 2023) (docs/privacy.md §Cumulative).

Each step (one window) contributes a leaf: the window's non-private linear sketch (Count-Min,
CountSketch or dyadic CountSketch). A tree node is the sum of the leaves of a dyadic range of leaf
positions; it is published once, as a private sketch built from that sum with fresh noise
(``from_sketch``), when its last leaf is in. The prefix through step t is the sum of the few
published nodes that tile its leaves, so every cumulative answer -- point estimates, the noisy
total, ranks, quantiles, heavy hitters -- is post-processing of published nodes.

Three public schedules, fixed by the horizon T (the number of steps) before any data is read:

* ``"binary"``: step s (1-based) is leaf s − 1; the prefix through s sums the popcount(s) nodes of
  the binary expansion of s. An element lies in at most L = ⌊log₂T⌋ + 1 published nodes.
* ``"smooth"``: leaves are spread out so that every prefix sums at most k nodes: step s is leaf
  q_s − 1, q_s the s-th positive h-bit integer with exactly k one-bits, for the (h, k) that
  minimise the worst prefix variance (most prefixes sum exactly k; early ones fewer, since nodes
  holding no step are public zeros). Its worst prefix variance is 1.6× (T = 16) to 2.8×
  (T = 2^16) below the binary tree's.
* ``"windows"``: every leaf is its own node (the tumbling windows, each at the full budget, by
  parallel composition); the prefix through s sums s nodes.

With L the most published nodes any one leaf lies in, every node is released at ρ/L (zCDP,
Gaussian noise) or ε/L (pure DP, Laplace noise) and the whole series is ρ-zCDP (ε-DP) for
neighbours that add or remove one element: the nodes that do not contain the element have the same
distribution on both sides, and the at most L that do compose (docs/privacy.md §Cumulative).
``schedule="auto"`` picks the schedule with the smallest worst-case prefix variance over the
horizon, in units of the one-window variance: T for ``"windows"``, L·max popcount for
``"binary"``, k·L for ``"smooth"`` (the tree wins once T exceeds about L²).

:meth:`Cumulative.releases` drives the series by event time: ``(items, times)`` batches are routed
into the horizon's tumbling windows by the rule of :mod:`dpsketch.windows`, one window per step.

Nothing exact leaves the object: no stream length, no leaf or node count, no cell; the noisy total
of a prefix is the sum of its nodes' noisy totals.
"""

from __future__ import annotations

import bisect
import math
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from .. import _seeds
from ..accounting.budget import Budget, charging
from ..sketches.dyadic import DyadicCountSketch, PrivateDyadicCountSketch
from ..errors import InternalError, ParameterError, ParameterTypeError
from ..mechanisms.private_sketches import PrivateCountMin, PrivateCountSketch
from ..mechanisms.correlated import CORRELATED_SCHEDULES
from ..mechanisms.series import tree_series
from ..release import Release, with_metadata
from ..units import Row
from ..sketches.linear import CountMin, CountSketch
from .._validation import check_int, validate_params

__all__ = ["Cumulative", "Prefix", "Schedule", "Step", "SCHEDULES", "MAX_HORIZON", "schedule_for", "node_seed"]

SCHEDULES = ("auto", "binary", "smooth", "windows")
MAX_HORIZON = 2**16  # steps; the schedule is enumerated once (O(T·log T)) at construction
_ONE_ROW = Row().describe()  # neighbours add or remove one element of one step
_PRIVATE: dict[type, Any] = {CountMin: PrivateCountMin, CountSketch: PrivateCountSketch, DyadicCountSketch: PrivateDyadicCountSketch}


def node_seed(seed: Optional[int], level: int, index: int) -> Optional[int]:
    """The user seed of node (level, index): ``derive_seed(seed, "tree/<level>/<index>")``
    (docs/privacy.md §Seeds), or None without a seed. Every node's noise is a fresh stream."""
    s = _seeds.check_user_seed(seed)
    return None if s is None else _seeds.derive_seed(s, f"tree/{int(level)}/{int(index)}")


def _decomposition(q: int) -> list[tuple[int, int]]:
    """The nodes tiling the leaf positions [0, q): one node (b, (q >> b) − 1) per one-bit b of q,
    highest level first. Node (b, m) holds the leaves [m·2^b, (m+1)·2^b)."""
    return [(b, (q >> b) - 1) for b in range(q.bit_length() - 1, -1, -1) if (q >> b) & 1]


class Schedule:
    """A public release schedule over ``horizon`` steps, fixed before any data is read
    (docs/privacy.md §Cumulative).

    :ivar name: 'binary', 'smooth' or 'windows'
    :ivar horizon: T, the number of steps
    :ivar leaves: the leaf position of each step (index s − 1), increasing
    :ivar nodes_per_element: L, the most published nodes one leaf lies in
    :ivar height: the number of tree levels (0..height − 1)
    :ivar ones: k of the smooth schedule (a prefix sums at most k nodes), else None
    """

    def __init__(self, name: str, horizon: int, qs: list[int], ones: Optional[int]) -> None:
        self.name, self.horizon, self.ones = name, horizon, ones
        self._qs = qs
        self.leaves = tuple(q - 1 for q in qs)
        self._first_use: dict[tuple[int, int], int] = {}
        if name == "windows":
            self.height, self.nodes_per_element, self._max_nodes = 1, 1, horizon
            return
        leaves = self.leaves
        widest = 0
        for s, q in enumerate(qs, start=1):
            dec = self._dec(q)
            widest = max(widest, len(dec))
            for node in dec:
                self._first_use.setdefault(node, s)
        self._max_nodes = widest
        self.height = max(b for b, _ in self._first_use) + 1
        used = self._first_use
        self.nodes_per_element = max(sum(1 for b in range(self.height) if (b, x >> b) in used) for x in leaves)

    def _dec(self, q: int) -> list[tuple[int, int]]:
        """The published nodes tiling [0, q): the binary decomposition less the nodes with no
        step's leaf in their range (public zeros: never published, they add nothing)."""
        return [n for n in _decomposition(q) if self._occupied(n)]

    def _occupied(self, node: tuple[int, int]) -> bool:
        b, m = node
        i = bisect.bisect_left(self.leaves, m << b)
        return i < len(self.leaves) and self.leaves[i] < (m + 1) << b

    def prefix_nodes(self, t: int) -> list[tuple[int, int]]:
        """The nodes whose sum is the prefix through step t (highest level first)."""
        if self.name == "windows":
            return [(0, i) for i in range(t)]
        return self._dec(self._qs[t - 1])

    def new_nodes(self, t: int) -> list[tuple[int, int]]:
        """The nodes first published at step t (each complete: its leaves are steps <= t)."""
        if self.name == "windows":
            return [(0, t - 1)]
        return [n for n in self._dec(self._qs[t - 1]) if self._first_use[n] == t]

    def steps_of(self, node: tuple[int, int]) -> tuple[int, int]:
        """(first step, last step) whose leaves lie in ``node``."""
        b, m = node
        lo = bisect.bisect_left(self.leaves, m << b)
        hi = bisect.bisect_left(self.leaves, (m + 1) << b)
        return lo + 1, hi

    def nodes_in_prefix(self, t: int) -> int:
        return t if self.name == "windows" else len(self.prefix_nodes(t))

    @property
    def worst_variance_factor(self) -> int:
        """max over t of (nodes in the prefix through t)·L: the prefix variance in units of one
        window's variance at the full budget (σ₁² = Δ2²/(2ρ))."""
        return self._max_nodes * self.nodes_per_element

    def variance_factor(self, t: int) -> int:
        """(nodes in the prefix through t)·L, the same unit."""
        return self.nodes_in_prefix(t) * self.nodes_per_element

    def __repr__(self) -> str:
        k = "" if self.ones is None else f", k={self.ones}"
        return (f"Schedule({self.name!r}, horizon={self.horizon}, L={self.nodes_per_element}, "
                f"height={self.height}{k}, worst_variance_factor={self.worst_variance_factor})")


def _smooth_shape(horizon: int) -> tuple[int, int]:
    """(h, k) minimising k·(h − k + 1) -- the prefix's k nodes times the bound h − k + 1 on the
    nodes a leaf lies in -- subject to C(h, k) ≥ T (enough h-bit integers with k one-bits)."""
    best = None
    base = max(1, (horizon - 1).bit_length())
    for h in range(base, base + 8):
        for k in range(1, h + 1):
            if math.comb(h, k) >= horizon:
                key = (k * (h - k + 1), h, k)
                best = key if best is None or key < best else best
    assert best is not None
    return best[1], best[2]


def _balanced(h: int, k: int, count: int) -> list[int]:
    """The ``count`` smallest positive integers below 2^h with exactly k one-bits, increasing
    (Gosper's next-permutation step)."""
    out: list[int] = []
    v = (1 << k) - 1
    while len(out) < count:
        out.append(v)
        c = v & -v
        r = v + c
        v = (((r ^ v) >> 2) // c) | r
    assert out[-1] < (1 << h)
    return out


def schedule_for(name: str, horizon: int) -> Schedule:
    """The public schedule ``name`` ('binary', 'smooth', 'windows' or 'auto') over ``horizon``
    steps. 'auto' is the one with the smallest :attr:`Schedule.worst_variance_factor` (ties: the
    earlier of windows, binary, smooth)."""
    horizon = check_int("horizon", horizon, 1, MAX_HORIZON)
    if name not in SCHEDULES:
        raise ParameterError(f"schedule must be one of {', '.join(SCHEDULES)}, got {name!r}")
    if name == "auto":
        options = [schedule_for(n, horizon) for n in ("windows", "binary", "smooth")]
        return min(options, key=lambda s: s.worst_variance_factor)
    if name == "smooth":
        h, k = _smooth_shape(horizon)
        return Schedule(name, horizon, _balanced(h, k, horizon), k)
    return Schedule(name, horizon, list(range(1, horizon + 1)), None)


@dataclass(frozen=True)
class Step:
    """One step of a time-driven series (:meth:`Cumulative.releases`): the window, the node
    releases published at this step, and the cumulative answer through it.

    :ivar step: s, 1-based
    :ivar window: index, start, end (ISO 8601 UTC) and start_ns, end_ns of the step's window
    :ivar nodes: the :class:`~dpsketch.Release` of every node first published at this step
    :ivar prefix: the :class:`Prefix` through this step (post-processing of published nodes)
    """

    step: int
    window: dict
    nodes: list
    prefix: "Prefix"


class Prefix:
    """The cumulative answer through step ``t``: the sum of the published nodes that tile its
    leaves (post-processing; docs/privacy.md §Cumulative). Queries add the nodes' own estimates:
    for Count-Min each node's estimate (with its shift) never underestimates except with
    probability β, so neither does the sum except with probability (nodes)·β; for CountSketch and
    dyadic sketches each node's estimate is unbiased."""

    def __init__(self, t: int, nodes: list, kind: type, nodes_per_element: int, variance_factor: int):
        self.t = t
        self._nodes = nodes
        self._kind = kind
        self.nodes_per_element = nodes_per_element
        self.variance_factor = variance_factor

    @property
    def sketches(self) -> list:
        """The published node sketches whose sum this prefix is (read-only copies)."""
        return list(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def estimate(self, item) -> float:
        """The prefix's estimate of ``item``'s count: the sum of the nodes' estimates."""
        if self._kind is DyadicCountSketch:
            raise ParameterTypeError("a dyadic prefix answers rank, range_count, quantile and heavy_hitters")
        return float(sum(float(s.estimate(item)) for s in self._nodes))

    def estimate_many(self, items) -> np.ndarray:
        """Estimates for a batch of int keys: the sum of the nodes' ``estimate_many``."""
        if self._kind is DyadicCountSketch:
            raise ParameterTypeError("a dyadic prefix answers rank, range_count, quantile and heavy_hitters")
        arr = np.asarray(items, dtype=np.int64)
        out = np.zeros(len(arr))
        for s in self._nodes:
            out += np.asarray(s.estimate_many(arr), dtype=float)
        return out

    def estimate_intervals(self, items, *, level: float = 0.95) -> list[tuple]:
        """(estimate, low, high) for each of ``items``: with probability at least ``level`` every
        item's true count through step t lies in its [low, high], simultaneously over the items
        (docs/mechanisms/cumulative.md §Accuracy). Count-Min prefixes only, for items chosen
        without looking at the cells (a CountSketch's collisions are two-sided and unbounded by
        anything published; a dyadic prefix answers ranks).

        :param items: the keys to bound
        :param level: the simultaneous coverage, in (0, 1)
        """
        from ..intervals import prefix_count_min_intervals

        if self._kind is not CountMin:
            raise ParameterTypeError(f"a {self._kind.__name__} prefix states no count intervals: a CountSketch's hash "
                                     "collisions are two-sided and nothing published bounds them (use sketch="
                                     "'countmin'); a dyadic prefix answers ranks")
        if not self._nodes:
            raise ParameterError("a prefix of no published node (step 0) has no estimate")
        return prefix_count_min_intervals(self._nodes, items, level)

    def noisy_total(self) -> float:
        """A noisy estimate of the number of elements through step t: the sum of the nodes' noisy
        totals (Count-Min: row sums less the shift; dyadic: the two level-1 nodes). CountSketch
        has no noisy total (its signed rows do not sum to the length)."""
        if self._kind is CountSketch:
            raise ParameterTypeError("a CountSketch prefix has no noisy total; use Count-Min or a dyadic sketch")
        return float(sum(s.noisy_total() for s in self._nodes))

    def top(self, candidates, *, k: Optional[int] = None, threshold: Optional[float] = None) -> list:
        """(key, estimate) for the ``candidates`` whose estimate exceeds ``threshold`` (when given),
        by estimate descending (ties by key), the first ``k``. Post-processing only when the
        candidates are public -- fixed without reading the data (docs/privacy.md §Cumulative)."""
        keys = list(candidates)
        est = self.estimate_many(keys) if keys and all(isinstance(x, (int, np.integer)) for x in keys) else \
            np.array([self.estimate(x) for x in keys], dtype=float)
        pairs = [(x, float(e)) for x, e in zip(keys, est) if threshold is None or e > threshold]
        pairs.sort(key=lambda p: (-p[1], p[0]))
        return pairs if k is None else pairs[:check_int("k", k, 1, 2**40)]

    # -- dyadic prefixes ----------------------------------------------------------------------
    def _dyadic(self):
        if self._kind is not DyadicCountSketch:
            raise ParameterTypeError("rank, quantile and heavy_hitters need a dyadic sketch (make=DyadicCountSketch)")
        return self._nodes[0] if self._nodes else None

    def _node(self, level: int, prefix: int) -> float:
        return float(sum(s._impl.node(level, prefix) for s in self._nodes))

    def rank(self, x) -> float:
        """Estimated number of elements < x through step t: the sum of the nodes' ranks."""
        self._dyadic()
        return float(sum(s.rank(x) for s in self._nodes))

    def range_count(self, lo, hi) -> float:
        """Estimated number of elements in [lo, hi) through step t."""
        return self.rank(hi) - self.rank(lo)

    def quantile(self, q: float):
        """Smallest x whose summed estimated rank(x + 1) reaches q·(noisy total), by the descent of
        docs/algorithms.md §6 over the summed node estimates (monotone in q)."""
        first = self._dyadic()
        if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 <= q <= 1:
            raise ParameterError("q must be a number in [0, 1]")
        if first is None:
            raise ParameterError("the prefix has no published node")
        target = float(q) * max(0.0, self.noisy_total())
        p, passed = 0, 0.0
        for j in range(1, first.universe_bits + 1):
            left = p << 1
            e = self._node(j, left)
            if target <= passed + e:
                p = left
            else:
                passed += e
                p = left | 1
        return first._value(p)

    def heavy_hitters(self, threshold: float, *, max_nodes: int = 1 << 16) -> list:
        """Hierarchical heavy hitters of the prefix (docs/algorithms.md §6): descend from the root
        keeping every node whose summed estimate exceeds ``threshold``; the leaves reached as
        (item, estimate), by estimate descending (ties by item). Post-processing of the published
        nodes: no candidate set, no label outside the noisy hierarchy."""
        first = self._dyadic()
        if first is None:
            return []
        m = check_int("max_nodes", max_nodes, 1, 2**40)
        frontier: list[int] = [0]
        out: list[tuple[int, float]] = []
        for j in range(1, first.universe_bits + 1):
            nxt: list[int] = []
            out = []
            for p in frontier:
                for c in (p << 1, (p << 1) | 1):
                    e = self._node(j, c)
                    if e > threshold:
                        if len(nxt) >= m:
                            raise ParameterError(f"more than {m} nodes exceed the threshold at level {j}; raise the threshold")
                        nxt.append(c)
                        if j == first.universe_bits:
                            out.append((c, e))
            frontier = nxt
            if not frontier:
                break
        out.sort(key=lambda t: (-t[1], t[0]))
        return [(first._value(x), e) for x, e in out]

    def __repr__(self) -> str:
        return (f"Prefix(t={self.t}, nodes={len(self._nodes)}, kind={self._kind.__name__}, "
                f"variance_factor={self.variance_factor})")


def _sketch_factory(sketch: Any, *, width, depth, universe_bits, gamma, bounds, hash_seed, seed, key_type):
    """Empty non-private sketches of one shape and one public hash seed, for ``sketch=``."""
    from .._validation import Options, check

    kind = check("sketch", sketch, Options(("countmin", "countsketch", "dyadic")))
    # one public hash seed for every leaf and node: the one given, else derived from the noise seed
    hs = check("hash_seed", hash_seed) if hash_seed is not None else _seeds.hash_seed(seed)
    if kind == "dyadic":
        if key_type is not None:
            raise ParameterError("key_type is an option of sketch='countmin' and 'countsketch'; dyadic sketches "
                                 "take numbers")
        bits = 32 if universe_bits is None else universe_bits
        g = 0.01 if gamma is None else gamma
        return lambda: DyadicCountSketch(bits, gamma=g, width=width, depth=depth, bounds=bounds, hash_seed=hs)
    if universe_bits is not None or gamma is not None or bounds is not None:
        raise ParameterError("universe_bits, gamma and bounds are options of sketch='dyadic'")
    if width is None or depth is None:
        raise ParameterError(f"sketch={kind!r} needs width= and depth=")
    cls = CountMin if kind == "countmin" else CountSketch
    return lambda: cls(width, depth, hash_seed=hs, key_type=key_type)


class Cumulative:
    """Cumulative releases of a linear sketch over ``horizon`` steps (module docstring;
    docs/privacy.md §Cumulative).

    ``Cumulative(horizon=T, sketch="countsketch", width=..., depth=..., rho=... | epsilon=...,
    schedule="auto", seed=None, budget=None)``:

    * the sketch: ``sketch`` ('countmin', 'countsketch' or 'dyadic') with its shape (``width``,
      ``depth``; ``universe_bits``, ``gamma``, ``bounds`` for 'dyadic') and ``hash_seed`` (public;
      default derived from ``seed``, else random), or ``make``: a function returning an empty
      non-private :class:`~dpsketch.CountMin`, :class:`~dpsketch.CountSketch` or
      :class:`~dpsketch.DyadicCountSketch`, the same shape and hash seed every call.
    * ``rho`` (zCDP, discrete Gaussian noise) or ``epsilon`` (pure DP, discrete Laplace noise): the
      guarantee of the whole series for neighbours that add or remove one element; each published
      node gets ρ/L (ε/L), L = :attr:`nodes_per_element`. ``delta`` (with ``rho``) records the
      (ε, δ) conversion in the metadata.
    * ``schedule``: 'auto', 'binary', 'smooth' or 'windows' (:func:`schedule_for`); or 'sqrt' /
      'banded' (``bands=p``): correlated Gaussian noise for Count-Min and CountSketch under zCDP,
      which returns a :class:`~dpsketch.time.correlated.CorrelatedCumulative` instead
      (docs/mechanisms/cumulative-correlated.md).
    * ``seed``: node (ℓ, m) draws its noise from :func:`node_seed` ``(seed, ℓ, m)``
      (reproducible and NOT secret); None: the secure generator.
    * ``budget``: charged once, at construction, L·(node ρ) or L·(node ε), before any noise.
    * ``node_options``: passed to the private class's ``from_sketch`` (``beta``, and
      ``noise_allocation`` for dyadic sketches).

    Feed one step at a time with :meth:`step` ``(items, counts=None)`` or :meth:`add` ``(sketch)``
    (the step's non-private sketch, of the same shape); each returns the releases of the nodes
    published at that step (often none or one). :meth:`prefix` ``(t)`` is the cumulative answer
    through step t (default: the last step fed).

    :param horizon: T, the number of steps of the series (public, fixed before any data)
    :param sketch: ``'countmin'``, ``'countsketch'`` or ``'dyadic'``: the linear sketch of every step
    :param width: columns per row of the sketch (for 'dyadic', default from ``gamma``)
    :param depth: rows of the sketch (for 'dyadic', default from ``gamma``)
    :param universe_bits: 'dyadic': values in [0, 2^universe_bits) (default 32)
    :param gamma: 'dyadic': the target rank accuracy that sizes the levels (default 0.01)
    :param bounds: 'dyadic': public ``(lo, hi)`` of float values mapped onto the universe
    :param hash_seed: the sketch's public hash seed (default derived from ``seed``, else random)
    :param key_type: 'countmin'/'countsketch': ``'int'`` or ``'str'`` keys (default: the first batch)
    :param rho: ρ of the whole series (zCDP, discrete Gaussian noise)
    :param epsilon: ε of the whole series (pure DP, discrete Laplace noise)
    :param delta: with ``rho``: δ of the (ε, δ) conversion the metadata records
    :param schedule: ``'auto'``, ``'binary'``, ``'smooth'`` or ``'windows'``
    :param seed: the user seed of the nodes' noise (reproducible, NOT secret)
    :param budget: a :class:`dpsketch.Budget` charged once for the whole series
    :param node_options: ``beta`` (and ``noise_allocation`` for dyadic sketches) of each node's release
    :param make: instead of ``sketch`` and its shape: a function returning an empty sketch
    :param bands: ``schedule='banded'``: p, the encoder coefficients kept
    :param keep: ``schedule='sqrt'``/``'banded'``: how many recent decoded prefixes stay answerable
    """

    def __new__(cls, *args: Any, **kwargs: Any):
        # schedule='sqrt' / 'banded': correlated noise, a different state and release per step
        # (time/correlated.py); Python then skips __init__, the object not being a Cumulative.
        if kwargs.get("schedule") in CORRELATED_SCHEDULES:
            from .correlated import CorrelatedCumulative

            return CorrelatedCumulative(*args, **kwargs)
        return super().__new__(cls)

    @validate_params(["epsilon", "rho", "delta", "seed"])
    def __init__(self, *, horizon: int, sketch: Optional[str] = None, width: Optional[int] = None,
                 depth: Optional[int] = None, universe_bits: Optional[int] = None, gamma: Optional[float] = None,
                 bounds: Any = None, hash_seed: Optional[int] = None, key_type: Optional[str] = None,
                 rho: Optional[float] = None, epsilon: Optional[float] = None, delta: Optional[float] = None,
                 schedule: str = "auto", seed: Optional[int] = None, budget: Optional[Budget] = None,
                 node_options: Optional[dict] = None, make: Optional[Callable[[], Any]] = None,
                 bands: Optional[int] = None, keep: Optional[int] = None) -> None:
        if bands is not None or keep is not None:
            raise ParameterError("bands= and keep= are options of schedule='sqrt' / 'banded' (correlated noise)")
        shaped = any(v is not None for v in (width, depth, universe_bits, gamma, bounds, hash_seed, key_type))
        if make is None:
            if sketch is None:
                raise ParameterError("pass sketch='countmin' | 'countsketch' | 'dyadic' with its shape (width=, "
                                     "depth=), or make= (a function returning an empty sketch)")
            make = _sketch_factory(sketch, width=width, depth=depth, universe_bits=universe_bits, gamma=gamma,
                                   bounds=bounds, hash_seed=hash_seed, seed=seed, key_type=key_type)
        elif sketch is not None or shaped:
            raise ParameterError("make= replaces sketch= and its shape: pass one or the other")
        if not callable(make):
            raise ParameterTypeError("make must be a function returning an empty CountMin, CountSketch or DyadicCountSketch")
        probe = make()
        kind = type(probe)
        if kind not in _PRIVATE:
            raise ParameterTypeError("make must return a non-private dpsketch.CountMin, CountSketch or DyadicCountSketch, "
                            f"got {kind.__name__}")
        if probe.n != 0:
            raise ParameterError("make must return an empty sketch (one per step)")
        self._make, self._kind, self._shape = make, kind, self._shape_of(probe)
        self.schedule = schedule_for(schedule, horizon)
        # every node at the series' budget over L: an element's at most L nodes compose to it
        self._plan = tree_series(schedule=self.schedule.name, horizon=self.schedule.horizon,
                                 nodes_per_element=self.schedule.nodes_per_element, rho=rho, epsilon=epsilon,
                                 delta=delta)
        self.seed = _seeds.check_user_seed(seed)
        self._node_options = dict(node_options or {})
        bad = set(self._node_options) - ({"beta", "noise_allocation"} if kind is DyadicCountSketch else {"beta"})
        if bad:
            raise ParameterError(f"node_options takes beta (and noise_allocation for dyadic sketches), got {sorted(bad)}")
        self._lock = threading.RLock()
        self._t = 0  # steps fed
        self._acc: dict[int, tuple[int, Any]] = {}  # level -> (block index, exact sum of its leaves so far)
        self._published: dict[tuple[int, int], Any] = {}  # node -> its published private sketch
        with charging(budget, self.mechanism, **self._plan.charge()):
            pass

    @staticmethod
    def _shape_of(s) -> tuple:
        if isinstance(s, DyadicCountSketch):
            return ("dyadic", s.universe_bits, s.width, s.depth, s.hash_seed, s.bounds)
        return (type(s).__name__, s.width, s.depth, s.hash_seed)

    # -- description ---------------------------------------------------------------------------
    @property
    def mechanism(self) -> str:
        return f"Cumulative[{self.schedule.name}, {_PRIVATE[self._kind].__name__}]"

    @property
    def horizon(self) -> int:
        return self.schedule.horizon

    @property
    def nodes_per_element(self) -> int:
        """L: the most published nodes one element lies in (docs/privacy.md §Cumulative)."""
        return self.schedule.nodes_per_element

    @property
    def steps(self) -> int:
        """How many steps were fed (a public count: one per window)."""
        return self._t

    @property
    def node_rho(self) -> Optional[float]:
        return self._plan.node_rho

    @property
    def node_epsilon(self) -> Optional[float]:
        return self._plan.node_epsilon

    @property
    def rho(self) -> Optional[float]:
        """The series' ρ: L·(node ρ) (None for pure DP)."""
        return self._plan.rho

    @property
    def epsilon(self) -> Optional[float]:
        """The series' ε: L·(node ε) for pure DP; with ``delta``, the conversion of ρ; else None."""
        return self._plan.epsilon

    @property
    def delta(self) -> Optional[float]:
        """The δ of the (ε, δ) conversion of ρ (``delta=``), or None."""
        return self._plan.delta

    def __repr__(self) -> str:
        p = f"rho={self.rho:g}" if self._plan.zcdp else f"epsilon={self.epsilon:g}"
        return (f"Cumulative(horizon={self.horizon}, schedule={self.schedule.name!r}, L={self.nodes_per_element}, "
                f"{p}, steps={self._t}, kind={self._kind.__name__})")

    # -- feeding -------------------------------------------------------------------------------
    def step(self, items=None, counts=None) -> list[Release]:
        """Feed the next step's elements (a batch as the sketch's ``update_many`` takes it; None or
        empty for a step without elements) and publish the nodes that are complete.

        :param items: the step's keys (None or empty for a step without elements)
        :param counts: one count per key (default 1 each)
        """
        leaf = self._make()
        self._check_leaf(leaf)
        if items is not None and len(items):
            leaf.update_many(items, counts) if counts is not None else leaf.update_many(items)
        return self._add(leaf)

    def add(self, sketch) -> list[Release]:
        """Feed the next step as a finished non-private sketch of the ``make`` shape (it is read,
        not changed; keep it private: it holds exact counts).

        :param sketch: the step's non-private sketch, built with the same ``make``
        """
        self._check_leaf(sketch)
        return self._add(sketch)

    def _check_leaf(self, s) -> None:
        if type(s) is not self._kind or self._shape_of(s) != self._shape:
            raise ParameterError(f"a step's sketch must be a {self._kind.__name__} of the shape and hash seed make() gives")

    def _add(self, leaf) -> list[Release]:
        with self._lock:
            if self._t >= self.horizon:
                raise ParameterError(f"the horizon of {self.horizon} steps is reached; the series is complete")
            s = self._t + 1
            pos = self.schedule.leaves[s - 1]
            finished: dict[tuple[int, int], Any] = {}
            for level in range(self.schedule.height):
                block = pos >> level
                cur = self._acc.get(level)
                if cur is None or cur[0] != block:
                    if cur is not None:
                        finished[(level, cur[0])] = cur[1]
                    cur = (block, self._make())
                    self._acc[level] = cur
                cur[1].merge(leaf)
            out = []
            for node in self.schedule.new_nodes(s):
                level, index = node
                cur = self._acc.get(level)
                source = cur[1] if cur is not None and cur[0] == index else finished.get(node)
                if source is None:  # pragma: no cover - every new node holds a fed leaf
                    raise InternalError(f"node {node} has no data")
                out.append(self._publish(node, source, s))
            self._t = s
            return out

    def _publish(self, node: tuple[int, int], source, s: int) -> Release:
        """Privatise the exact sum ``source`` of node's leaves once, with the node's own seed."""
        level, index = node
        cls = _PRIVATE[self._kind]
        private = cls.from_sketch(source, seed=node_seed(self.seed, level, index), **self._plan.node_options(),
                                  **self._node_options)
        rel = private.release(delta=self._plan.delta) if self._plan.zcdp else private.release()
        self._published[node] = rel.sketch
        first, last = self.schedule.steps_of(node)
        placed = {"node": {"level": level, "index": index, "leaves": [index << level, (index + 1) << level],
                           "first_step": first, "last_step": last, "published_at_step": s},
                  "composition": self._plan.composition(), "unit": _ONE_ROW}
        return with_metadata(rel, placed)

    # -- answers -------------------------------------------------------------------------------
    def prefix(self, t: Optional[int] = None) -> Prefix:
        """The cumulative answer through step ``t`` (1..steps fed; default the last): the sum of
        the published nodes of the schedule's decomposition of t."""
        with self._lock:
            if t is None:
                t = self._t
            t = check_int("t", t, 1, self.horizon)
            if t > self._t:
                raise ParameterError(f"step {t} is not fed yet ({self._t} steps so far)")
            nodes = [self._published[n] for n in self.schedule.prefix_nodes(t)]
            return Prefix(t, nodes, self._kind, self.nodes_per_element, self.schedule.variance_factor(t))

    def releases(self, batches, *, period: Any, start: Any, origin: Any = 0):
        """Feed ``(items, times)`` batches and yield one :class:`Step` per window, in order, at the
        end of ``batches`` (the input clock of :class:`~dpsketch.Windowed`: no event is late).
        Step s is the event-time window ``[origin + i·period, origin + (i+1)·period)`` with
        i = (the window containing ``start``) + s − 1, for s = 1 … horizon: the windows are fixed
        by public parameters, every one is a step (an empty one included), and events outside
        them are dropped and counted nowhere (docs/privacy.md §Windows). Memory: one sketch per
        window that received events.

        :param period: the window length (a duration)
        :param origin: an instant where a window starts (default the epoch)
        """
        from .windows import assign, iso, parse_duration, parse_instant, times_ns

        p = parse_duration(period)
        if p <= 0:
            raise ParameterError("period must be > 0")
        o = parse_instant(origin)
        first = (parse_instant(start) - o) // p
        with self._lock:
            if self._t:
                raise ParameterError("releases() drives a fresh series; this one has steps already")
            leaves: dict[int, Any] = {}
            for items, times in batches:
                if not isinstance(items, np.ndarray) and not type(items).__module__.startswith("pyarrow"):
                    items = np.asarray(list(items) if not hasattr(items, "__len__") else items)
                t, ok = times_ns(times)
                if len(t) != len(items):
                    raise ParameterError(f"items and times differ in length ({len(items)} vs {len(t)})")
                w = assign(t, p, o) - first
                keep = (w >= 0) & (w < self.horizon)
                if ok is not None:
                    keep &= ok
                for i in np.unique(w[keep]).tolist():
                    idx = np.flatnonzero(keep & (w == i))
                    part = items[idx] if isinstance(items, np.ndarray) else items.take(idx)
                    leaf = leaves.get(i)
                    if leaf is None:
                        leaf = leaves[i] = self._make()
                    leaf.update_many(part)
        for i in range(self.horizon):
            leaf = leaves.pop(i, None)
            nodes = self._add(leaf if leaf is not None else self._make())
            s0 = o + (first + i) * p
            window = {"index": first + i, "start": iso(s0), "end": iso(s0 + p), "start_ns": s0, "end_ns": s0 + p}
            yield Step(i + 1, window, nodes, self.prefix(i + 1))

    def node(self, level: int, index: int):
        """The published sketch of node (level, index) (KeyError if it is not published).

        :param level: the node's level ℓ in the tree
        :param index: the node's index m at that level
        """
        return self._published[(level, index)]

    @property
    def published_nodes(self) -> list[tuple[int, int]]:
        """The nodes published so far, in publication order."""
        return list(self._published)
