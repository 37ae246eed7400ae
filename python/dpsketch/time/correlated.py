"""Cumulative releases with correlated noise: ``Cumulative(..., schedule="sqrt")`` (and
``"banded"`` with ``bands=p``) for Count-Min and CountSketch under zCDP
(docs/mechanisms/cumulative-correlated.md).

Every step publishes the encoded cells C_W·x of the series plus fresh discrete Gaussian noise (an
int64 array, depth × width); the prefix through step t is decoded from the published arrays alone
(post-processing). The encoder, its sensitivity, σ and the decoder are those of
:mod:`dpsketch.mechanisms.correlated`; this module only feeds them sketches.

Memory: the encoder keeps the last p − 1 exact steps, the decoder the last p − 1 decoded steps and
the running prefix (p = T for ``"sqrt"``), plus the decoded prefixes kept for :meth:`prefix`
(``keep``: all by default; 1 keeps only the latest).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional

import numpy as np

from .. import _seeds
from ..accounting.budget import Budget, charging
from ..errors import ParameterError, ParameterTypeError
from ..mechanisms.correlated import CORRELATED_SCHEDULES, Decoder, Encoder, correlated_plan
from ..release import Release
from ..sketches.linear import CountMin, CountSketch
from ..units import Row
from .._validation import check_int, validate_params

__all__ = ["CorrelatedCumulative", "CorrelatedPrefix", "CORRELATED_SCHEDULES"]

_ONE_ROW = Row().describe()
_KINDS = {CountMin: "PrivateCountMin", CountSketch: "PrivateCountSketch"}
_NOT_HERE = ("universe_bits", "gamma", "bounds", "node_options")


class CorrelatedPrefix:
    """The decoded noisy prefix through step ``t``: cells (depth × width floats) = B·y through t,
    post-processing of the published steps. Estimates read the cells at the key's positions:
    Count-Min the minimum over rows (no shift: it may underestimate by the noise), CountSketch the
    median of the signed row values. Every cell's noise has variance (proxy) :attr:`noise_variance`.

    :ivar t: the step
    :ivar cells: the decoded cells (read-only)
    :ivar noise_variance: the noise variance of each decoded cell
    :ivar variance_factor: the same in units of one window released alone at the full ρ
    """

    def __init__(self, t: int, cells: np.ndarray, kind: type, positions: Callable, plan: Any, variance: float,
                 factor: float) -> None:
        self.t, self.cells, self._kind, self._positions, self._plan = t, cells, kind, positions, plan
        self.noise_variance, self.variance_factor = variance, factor
        self.cells.setflags(write=False)

    def _rows(self, items) -> np.ndarray:
        buckets, signs = self._positions(items)
        rows = np.arange(self.cells.shape[0])[:, None]
        return self.cells[rows, buckets] * signs  # (depth, n): each row's estimate

    def estimate_many(self, items) -> np.ndarray:
        """Estimates of a batch of keys (ints or strs).

        :param items: the keys
        """
        v = self._rows(items)
        return v.min(axis=0) if self._kind is CountMin else np.median(v, axis=0)

    def estimate(self, item) -> float:
        """The prefix's estimate of ``item``'s count.

        :param item: one key
        """
        return float(self.estimate_many([item])[0])

    def top(self, candidates, *, k: Optional[int] = None, threshold: Optional[float] = None) -> list:
        """(key, estimate) of the public ``candidates`` above ``threshold`` (when given), estimate
        descending (ties by key), the first ``k``: post-processing when the candidates are fixed
        without reading the data.

        :param candidates: the keys to rank (public)
        :param k: keep the first k
        :param threshold: keep estimates above it
        """
        keys = list(candidates)
        est = self.estimate_many(keys) if keys else np.zeros(0)
        pairs = [(x, float(e)) for x, e in zip(keys, est) if threshold is None or e > threshold]
        pairs.sort(key=lambda p: (-p[1], p[0]))
        return pairs if k is None else pairs[: check_int("k", k, 1, 2**40)]

    def noisy_total(self) -> float:
        """Count-Min: the mean over rows of the decoded row sums (each row sums to the number of
        elements through t). CountSketch has no noisy total."""
        if self._kind is not CountMin:
            raise ParameterTypeError("a CountSketch prefix has no noisy total; use Count-Min")
        return float(self.cells.sum(axis=1).mean())

    def cell_interval(self, level: float = 0.95) -> float:
        """Half-width h such that each decoded cell is within h of its exact value with probability
        at least ``level`` (sub-Gaussian tail of the decoded noise; one cell, not simultaneous).

        :param level: the confidence level
        """
        return self._plan.interval_half_width(self.noise_variance, level)

    def __repr__(self) -> str:
        return (f"CorrelatedPrefix(t={self.t}, kind={self._kind.__name__}, "
                f"variance_factor={self.variance_factor:.3f})")


class CorrelatedCumulative:
    """Cumulative releases of a Count-Min or CountSketch over ``horizon`` steps with correlated
    discrete Gaussian noise (module docstring). Built by ``Cumulative(..., schedule="sqrt")`` or
    ``schedule="banded", bands=p``; zCDP only (``rho=``).

    Each :meth:`step` / :meth:`add` returns the step's :class:`~dpsketch.Release`: ``sketch`` is
    the published int64 array (depth × width) of C_W·x + z at that step, ``metadata`` records the
    schedule, W, σ², Δ2², ρ and the decoded prefix's noise variance. :meth:`prefix` ``(t)`` decodes.

    :param horizon: T, the number of steps (public, fixed before any data)
    :param sketch: ``'countmin'`` or ``'countsketch'``
    :param width: columns per row
    :param depth: rows
    :param hash_seed: the sketch's public hash seed (default derived from ``seed``, else random)
    :param key_type: ``'int'`` or ``'str'``
    :param rho: ρ of the whole series (zCDP)
    :param epsilon: not accepted (correlated noise is Gaussian only)
    :param delta: δ of the (ε, δ) conversion the metadata records
    :param schedule: ``'sqrt'`` or ``'banded'``
    :param bands: p, the encoder coefficients kept (``'banded'`` only)
    :param seed: the user seed of the noise (reproducible, NOT secret)
    :param budget: a :class:`dpsketch.Budget` charged ρ once, at construction
    :param make: instead of ``sketch`` and its shape: a function returning an empty sketch
    :param keep: how many most recent decoded prefixes :meth:`prefix` can answer (default all)
    """

    @validate_params(["rho", "delta", "seed"])
    def __init__(self, *, horizon: int, sketch: Optional[str] = None, width: Optional[int] = None,
                 depth: Optional[int] = None, hash_seed: Optional[int] = None, key_type: Optional[str] = None,
                 rho: Optional[float] = None, epsilon: Optional[float] = None, delta: Optional[float] = None,
                 schedule: str = "sqrt", bands: Optional[int] = None, seed: Optional[int] = None,
                 budget: Optional[Budget] = None, make: Optional[Callable[[], Any]] = None,
                 keep: Optional[int] = None, **others: Any) -> None:
        from .cumulative import _sketch_factory

        bad = sorted(k for k, v in others.items() if v is not None)
        if bad:
            raise ParameterError(f"schedule={schedule!r} does not take {bad} (Count-Min and CountSketch only)")
        if set(others) - set(_NOT_HERE):
            raise ParameterTypeError(f"unexpected arguments {sorted(set(others) - set(_NOT_HERE))}")
        if epsilon is not None or rho is None:
            raise ParameterError(f"schedule={schedule!r} is Gaussian noise under zCDP: pass rho= (not epsilon=)")
        if make is None:
            if sketch is None:
                raise ParameterError("pass sketch='countmin' | 'countsketch' with width= and depth=, or make=")
            if sketch == "dyadic":
                raise ParameterError(f"schedule={schedule!r} takes sketch='countmin' or 'countsketch'")
            make = _sketch_factory(sketch, width=width, depth=depth, universe_bits=None, gamma=None, bounds=None,
                                   hash_seed=hash_seed, seed=seed, key_type=key_type)
        elif any(v is not None for v in (sketch, width, depth, hash_seed, key_type)):
            raise ParameterError("make= replaces sketch= and its shape: pass one or the other")
        probe = make()
        if type(probe) not in _KINDS:
            raise ParameterTypeError("make must return a non-private dpsketch.CountMin or CountSketch")
        if probe.n != 0:
            raise ParameterError("make must return an empty sketch (one per step)")
        self._make, self._kind, self._probe = make, type(probe), probe
        self._shape = (probe.width, probe.depth, probe.hash_seed)
        self._plan = correlated_plan(schedule=schedule, horizon=horizon, depth=probe.depth, rho=rho, bands=bands,
                                     delta=delta)
        self._variances = self._plan.prefix_variances()
        self._factors = self._plan.variance_factors()
        self.seed = _seeds.check_user_seed(seed)
        self._keep = None if keep is None else check_int("keep", keep, 1, self._plan.horizon)
        self._encoder, self._decoder = Encoder(self._plan.encoder), Decoder(self._plan.encoder)
        self._prefixes: dict[int, np.ndarray] = {}
        self._lock = threading.RLock()
        self._t = 0
        with charging(budget, self.mechanism, **self._plan.charge()):
            pass

    # -- description ---------------------------------------------------------------------------
    @property
    def mechanism(self) -> str:
        return f"Cumulative[{self._plan.schedule}, {_KINDS[self._kind]}]"

    @property
    def plan(self):
        """The :class:`~dpsketch.mechanisms.correlated.CorrelatedPlan` (encoder, σ², Δ2², ρ)."""
        return self._plan

    horizon = property(lambda self: self._plan.horizon, doc="T, the number of steps.")
    steps = property(lambda self: self._t, doc="How many steps were fed.")
    rho = property(lambda self: self._plan.series_rho, doc="The series' ρ for the noise as drawn.")
    epsilon = property(lambda self: self._plan.epsilon, doc="With ``delta``, the (ε, δ) conversion of ρ.")
    delta = property(lambda self: self._plan.delta, doc="The δ of the conversion, or None.")

    def worst_variance_factor(self) -> float:
        """The largest prefix noise variance over the horizon, in units of one window released
        alone at the full ρ."""
        return float(self._factors.max())

    def memory_bytes(self) -> int:
        """Bytes of the arrays the series keeps: the encoder's exact steps, the decoder's state and
        the decoded prefixes kept."""
        return self._encoder.memory_bytes() + self._decoder.memory_bytes() + sum(
            v.nbytes for v in self._prefixes.values())

    def __repr__(self) -> str:
        return (f"CorrelatedCumulative(horizon={self.horizon}, schedule={self._plan.schedule!r}, "
                f"bands={self._plan.bands}, rho={self.rho:g}, steps={self._t}, kind={self._kind.__name__})")

    # -- feeding -------------------------------------------------------------------------------
    def step(self, items=None, counts=None) -> Release:
        """Feed the next step's elements and publish its encoded noisy cells.

        :param items: the step's keys (None or empty for a step without elements)
        :param counts: one count per key (default 1 each)
        """
        leaf = self._make()
        self._check_leaf(leaf)
        if items is not None and len(items):
            leaf.update_many(items, counts) if counts is not None else leaf.update_many(items)
        return self._add(leaf)

    def add(self, sketch) -> Release:
        """Feed the next step as a finished non-private sketch of the ``make`` shape (read only).

        :param sketch: the step's non-private sketch
        """
        self._check_leaf(sketch)
        return self._add(sketch)

    def _check_leaf(self, s) -> None:
        if type(s) is not self._kind or (s.width, s.depth, s.hash_seed) != self._shape:
            raise ParameterError(f"a step's sketch must be a {self._kind.__name__} of the shape and hash seed make() gives")
        if s.key_type is not None and self._probe.key_type is None:
            self._probe = s  # positions follow the key type the data uses

    def _add(self, leaf) -> Release:
        with self._lock:
            if self._t >= self.horizon:
                raise ParameterError(f"the horizon of {self.horizon} steps is reached; the series is complete")
            s = self._t + 1
            encoded = self._encoder.push(leaf.cells())
            published = self._plan.publish(s, encoded, self.seed)
            prefix = self._decoder.push(published)  # from the published array only
            self._prefixes[s] = prefix
            if self._keep is not None:
                self._prefixes.pop(s - self._keep, None)
            self._t = s
            placed = {"composition": self._plan.composition(), "unit": _ONE_ROW, "width": self._shape[0],
                      "depth": self._shape[1], "hash_seed": self._shape[2], "sketch": self._kind.__name__}
            return self._plan.step_release(s, published, mechanism=self.mechanism, seeded=self.seed is not None,
                                           extra=placed)

    # -- answers -------------------------------------------------------------------------------
    def window(self, t: int, w: int) -> CorrelatedPrefix:
        """The sliding window (t − w, t]: decoded prefix t minus decoded prefix t − w
        (post-processing of the same published arrays), with that difference's noise variance.
        Needs both prefixes kept (``keep`` ≥ w + 1).

        :param t: the window's last step (fed)
        :param w: its length in steps, 1..t
        """
        with self._lock:
            t = check_int("t", t, 1, self._t if self._t else 1)
            w = check_int("w", w, 1, t)
            last = self.prefix(t)
            cells = last.cells - self.prefix(t - w).cells if w < t else last.cells.copy()
            var, factor = self._plan.window_variance(t, w)
            return CorrelatedPrefix(t, cells, self._kind, last._positions, self._plan, var, factor)

    def prefix(self, t: Optional[int] = None) -> CorrelatedPrefix:
        """The decoded noisy prefix through step ``t`` (default the last fed).

        :param t: the step, 1..steps fed (within the last ``keep``)
        """
        with self._lock:
            t = self._t if t is None else check_int("t", t, 1, self.horizon)
            if t < 1 or t > self._t:
                raise ParameterError(f"step {t} is not fed yet ({self._t} steps so far)")
            if t not in self._prefixes:
                raise ParameterError(f"step {t} is older than the last keep={self._keep} decoded prefixes")
            probe = self._probe
            return CorrelatedPrefix(t, self._prefixes[t].copy(), self._kind, probe.positions, self._plan,
                                    float(self._variances[t - 1]), float(self._factors[t - 1]))
