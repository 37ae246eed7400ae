"""Dyadic CountSketch: ranks, quantiles, range counts and hierarchical heavy hitters over the
universe [0, 2^L) (docs/algorithms.md §6; Zhao et al. §4), non-private and private.

Level j of the hierarchy counts the j-bit prefixes x >> (L - j). Levels whose 2^j nodes fit the
per-level budget depth·width are exact arrays; the others are CountSketches. With ``gamma`` the shape
follows Zhao's parameters d = ⌈ln(L/γ)⌉, w = ⌈(1/γ)·√(L·ln(L/γ))⌉ (the paper gives only the
asymptotic forms; the constants are the spec's).

Updates are turnstile: ``update(x, count)`` with a signed integer count (deletions included); ``n``
is the net count. Real-valued data goes through ``bounds=(lo, hi)``: v ↦ ⌊(clip(v) − lo)/(hi − lo)·2^L⌋
(values outside the bounds are clamped; the bounds are public and must not come from the data);
quantiles are reported in the original units at the resolution (hi − lo)/2^L (lower bucket edge).
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any, ClassVar

import numpy as np

from .. import _core
from ..accounting.budget import Budget, charging
from ..accounting.calibration import cell_sensitivities, noise_guarantee, used_value, zcdp_epsilon
from .._validation import check, check_int, validate_params
from ._base import Publishable, Serialized, Summary, locked
from ._streams import streamed
from .. import _seeds
from ..release import PRIVACY_UNIT, Release, check_privacy_params
from ..errors import IntegerRangeError, ParameterError, ParameterTypeError

__all__ = ["DyadicCountSketch", "PrivateDyadicCountSketch"]

_D = _core.dyadic
_R = _core.release
_MAX_BOUNDED_BITS = 52  # float64 resolution of the bounds mapping
_DEFAULT_MAX_NODES = 1 << 20


def _check_bounds(bounds):
    return None if bounds is None else check("bounds", bounds)


def _check_gamma(gamma):
    return check("gamma", gamma)


def _shape(universe_bits, gamma, width, depth):
    """(L, width, depth, gamma or 0): explicit width/depth win; a missing one comes from Zhao's γ rule."""
    bits = check_int("universe_bits", universe_bits, 1, 64)
    if width is not None and depth is not None:
        w = check_int("width", width, 1, 2**31)
        d = check_int("depth", depth, 1, _core.MAX_DEPTH)
        g = 0.0
    else:
        g = _check_gamma(gamma)
        zw, zd = _D.zhao_parameters(bits, g)
        w = zw if width is None else check_int("width", width, 1, 2**31)
        d = zd if depth is None else check_int("depth", depth, 1, _core.MAX_DEPTH)
        if width is not None or depth is not None:
            g = 0.0  # the shape is no longer Zhao's
    return bits, w, d, g


class _DyadicBase(Serialized, Summary):
    """Queries and value mapping shared by the non-private and the private class (lock, release
    guard, bytes, pickling and copies: dpsketch.sketches._base; the native `update`, end of this
    module)."""

    __slots__ = ()
    _key_type_fixed_at_start = True  # items are numbers: there is no key type to settle first

    _native: ClassVar[Any]

    # -- parameters -----------------------------------------------------------------------------
    universe_bits = property(lambda self: self._impl.bits, doc="L: items live in [0, 2^L).")
    width = property(lambda self: self._impl.width, doc="Columns per row of every CountSketch level.")
    depth = property(lambda self: self._impl.depth, doc="Rows of every CountSketch level.")
    exact_levels = property(lambda self: self._impl.exact_levels, doc="Levels 1..E are exact arrays.")
    hash_seed = property(lambda self: self._impl.seed, doc="The public seed of the hash functions, derived from ``seed=`` "
                         "(docs/privacy.md §Seeds); merging needs equal hash seeds.")
    bounds = property(lambda self: self._impl.bounds, doc="(lo, hi) of the value mapping, or None.")

    @property
    def gamma(self):
        """The γ the shape was derived from (None when width and depth were given)."""
        g = self._impl.gamma
        return g if g > 0 else None

    @property
    def resolution(self) -> float:
        """Bucket width in the caller's units: (hi − lo)/2^L with bounds, else 1."""
        b = self.bounds
        return 1.0 if b is None else (b[1] - b[0]) / 2.0**self.universe_bits

    def levels(self) -> list[dict]:
        """Per level: its number, kind ('exact' or 'sketch') and cell count."""
        e, d, w = self.exact_levels, self.depth, self.width
        return [{"level": j, "kind": "exact" if j <= e else "sketch", "cells": 2**j if j <= e else d * w}
                for j in range(1, self.universe_bits + 1)]

    @locked
    def level_cells(self, level: int) -> np.ndarray:
        """A copy of one level's cells: shape (2^level,) for an exact level, (depth, width) otherwise.

        :param level: the level ℓ of the hierarchy, in [1, universe_bits]
        """
        return self._impl.level_cells(check_int("level", level, 1, self.universe_bits))

    # -- item mapping ---------------------------------------------------------------------------
    def _items(self, items) -> np.ndarray:
        """A batch as a contiguous uint64 array in [0, 2^L); clear errors, never echoing values."""
        L = self.universe_bits
        bounds = self.bounds
        arr = np.asarray(items)
        if arr.ndim != 1:
            raise ParameterError(f"expected a 1-D batch, got {arr.ndim} dimensions")
        if arr.dtype.kind == "b":
            raise ParameterTypeError("items must be numbers, not booleans")
        if bounds is not None:
            if arr.dtype.kind not in "iuf":
                raise ParameterTypeError(f"items must be numbers, got an array of dtype {arr.dtype}")
            return self._map_values(arr.astype(np.float64, copy=False))
        if arr.dtype.kind == "f":
            raise ParameterTypeError("float items need bounds=(lo, hi) (the public value range); "
                            "or pass integers in [0, 2^universe_bits)")
        if arr.dtype.kind == "O" or arr.dtype.kind not in "iu":
            if arr.size == 0:
                return np.zeros(0, dtype=np.uint64)
            if arr.dtype.kind == "O" and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in arr):
                ints = [int(v) for v in arr]
                if min(ints) < 0 or max(ints) >= 2**L:
                    raise ParameterError(self._range_message())
                return np.asarray(ints, dtype=np.uint64)
            raise ParameterTypeError(f"items must be integers (numpy int/uint arrays), got dtype {arr.dtype}")
        if arr.size == 0:
            return np.zeros(0, dtype=np.uint64)
        if arr.dtype.kind == "i" and arr.min() < 0:
            raise ParameterError(self._range_message())
        out = np.ascontiguousarray(arr.astype(np.uint64, copy=False))
        if L < 64 and out.max() >> np.uint64(L):
            raise ParameterError(self._range_message())
        return out

    def _range_message(self):
        return (f"items must be integers in [0, 2^{self.universe_bits}); map real values with "
                "bounds=(lo, hi) or raise universe_bits")

    def _map_values(self, v: np.ndarray) -> np.ndarray:
        """docs/algorithms.md §6: ⌊(clip(v) − lo)/(hi − lo)·2^L⌋, clamped to [0, 2^L − 1]."""
        if np.isnan(v).any():
            raise ParameterError("items contain NaN; drop or impute missing values first")
        lo, hi = self.bounds
        scale = 2.0**self.universe_bits
        t = np.floor((np.clip(v, lo, hi) - lo) / (hi - lo) * scale)
        return np.ascontiguousarray(np.minimum(t, scale - 1).astype(np.uint64))

    def _bucket(self, v: float) -> int:
        """_map_values of one float (not NaN), in the same float64 operations and order."""
        lo, hi = self.bounds
        t = math.floor((min(max(v, lo), hi) - lo) / (hi - lo) * 2.0**self.universe_bits)
        return min(t, 2**self.universe_bits - 1)

    def _one(self, x) -> int:
        """One item of ``update`` (plain ints and floats normally take the native fast path, which
        maps them the same way; this path raises its errors)."""
        if isinstance(x, bool):
            raise ParameterTypeError("items must be numbers, not booleans")
        if self.bounds is not None:
            if not isinstance(x, numbers.Real):
                raise ParameterTypeError(f"items must be numbers, got {type(x).__name__}")
            v = float(x)
            if math.isnan(v):
                raise ParameterError("items contain NaN; drop or impute missing values first")
            return self._bucket(v)
        if isinstance(x, numbers.Integral):
            xi = int(x)
            if not 0 <= xi < 2**self.universe_bits:
                raise ParameterError(self._range_message())
            return xi
        if isinstance(x, numbers.Real):
            raise ParameterTypeError("float items need bounds=(lo, hi); or pass integers in [0, 2^universe_bits)")
        raise ParameterTypeError(f"items must be integers, got {type(x).__name__}")

    @staticmethod
    def _counts(counts, m):
        if counts is None:
            return None
        c = np.asarray(counts)
        if c.dtype.kind not in "iu" or c.ndim != 1 or len(c) != m:
            raise ParameterError("counts must be a 1-D integer array with one signed count per item")
        if c.dtype.kind == "u" and c.size and c.max() > np.iinfo(np.int64).max:
            raise IntegerRangeError("counts must fit in int64")
        return np.ascontiguousarray(c.astype(np.int64, copy=False))

    # -- positions (the argument of rank/cdf/range_count) ---------------------------------------
    def _position(self, x) -> int:
        """x as a position in [0, 2^L]: rank(position) counts items below it."""
        if isinstance(x, bool):
            raise ParameterTypeError("positions must be numbers, not booleans")
        L = self.universe_bits
        if self.bounds is not None:
            if not isinstance(x, numbers.Real) or math.isnan(float(x)):
                raise ParameterError("positions must be real numbers (not NaN)")
            if float(x) > self.bounds[1]:
                return 2**L
            return self._bucket(float(x))
        if not isinstance(x, numbers.Integral):
            raise ParameterTypeError("positions must be integers (pass bounds=(lo, hi) at construction for real values)")
        xi = int(x)
        if not 0 <= xi <= 2**L:
            raise ParameterError(f"positions must be in [0, 2^{L}]")
        return xi

    def _rank_at(self, pos: int) -> float:
        return self._impl.total() if pos == 2**self.universe_bits else self._impl.rank(pos)

    def _value(self, bucket: int):
        """Bucket index -> the caller's units (the lower bucket edge with bounds)."""
        if self.bounds is None:
            return int(bucket)
        lo, _ = self.bounds
        return lo + bucket * self.resolution

    # -- queries --------------------------------------------------------------------------------
    def _total(self) -> float:
        """The count quantile targets refer to (n; the private class uses its noisy total)."""
        return float(self._impl.n)

    @locked
    def rank(self, x) -> float:
        """Estimated number of items < x (x in [0, 2^L]; with bounds, a value: items in lower
        buckets). Sum of ≤ L node estimates (docs/algorithms.md §6).

        :param x: a position (a value of the universe, or of ``bounds``)
        """
        return float(self._rank_at(self._position(x)))

    @locked
    def range_count(self, lo, hi) -> float:
        """Estimated number of items in [lo, hi): rank(hi) − rank(lo).

        :param lo: the first position of the range (inclusive)
        :param hi: the end of the range (exclusive)
        """
        a, b = self._position(lo), self._position(hi)
        if b < a:
            raise ParameterError("range_count needs lo <= hi")
        return float(self._rank_at(b) - self._rank_at(a))

    def _targets(self, qs) -> np.ndarray:
        q = np.asarray(qs, dtype=np.float64)
        if q.ndim > 1:
            raise ParameterError("quantile levels must be a number or a 1-D sequence")
        if np.isnan(q).any() or (q < 0).any() or (q > 1).any():
            raise ParameterError("quantile levels must be in [0, 1]")
        # a noisy total below 0 would make the targets fall as q rises; clamping it (post-processing)
        # keeps quantile() monotone in q at every n
        return np.ascontiguousarray(np.atleast_1d(q) * max(0.0, self._total()))

    @locked
    def quantile(self, q: float):
        """Smallest x whose estimated rank(x + 1) reaches q·n, by descent from the root (monotone in q).

        :param q: a quantile level in [0, 1]
        """
        if isinstance(q, bool) or not isinstance(q, numbers.Real):
            raise ParameterTypeError("q must be a number in [0, 1]")
        return self._value(int(self._impl.quantiles(self._targets([q]))[0]))

    @locked
    def quantiles(self, qs) -> np.ndarray:
        """quantile(q) for every q (a numpy array: uint64 items, or float values with bounds).

        :param qs: the quantile levels, each in [0, 1]
        """
        buckets = self._impl.quantiles(self._targets(qs))
        if self.bounds is None:
            return buckets
        return self.bounds[0] + buckets.astype(np.float64) * self.resolution

    @locked
    def cdf(self, xs) -> np.ndarray:
        """Estimated fraction of items ≤ x for each x: rank(x + 1)/n (items' buckets ≤ x's bucket).
        One native call for the whole batch (GIL released).

        :param xs: positions (values of the universe, or of ``bounds``)
        """
        total = self._total()
        pos = np.array([self._position(x) for x in np.atleast_1d(np.asarray(xs)).tolist()], dtype=object)
        top = 2**self.universe_bits
        nxt = [min(int(p) + 1, top) for p in pos]
        inner = np.array([p for p in nxt if p < top], dtype=np.uint64)
        ranks = iter(self._impl.ranks(inner).tolist())
        out = np.array([self._impl.total() if p == top else next(ranks) for p in nxt], dtype=np.float64)
        return out / total if total else np.full(len(out), np.nan)

    @locked
    def heavy_hitters(self, threshold: float, *, max_nodes: int = _DEFAULT_MAX_NODES) -> list:
        """Hierarchical heavy hitters (docs/algorithms.md §6): descend from the root keeping the nodes
        whose estimate exceeds ``threshold`` (an absolute count); returns the leaves reached as
        (item, estimate), by estimate descending (ties by item), never in true-count order.
        ``max_nodes`` caps the nodes kept per level (ValueError when a low threshold exceeds it)."""
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or math.isnan(float(threshold)):
            raise ParameterTypeError("threshold must be a number (an absolute count)")
        m = check_int("max_nodes", max_nodes, 1, 2**40)
        leaves = self._impl.heavy_hitters(float(threshold), m)
        leaves.sort(key=lambda t: (-t[1], t[0]))
        return [(self._value(x), e) for x, e in leaves]

    # -- serialization (dpsketch.sketches._base.Serialized) ---------------------------------------------
    @classmethod
    def _native_reader(cls, data: bytes) -> Any:
        return cls._native

    def _restored(self, data: bytes) -> None:
        self._restore()

    def _restore(self):
        pass

    def _repr_fields(self):
        b = "" if self.bounds is None else f", bounds={self.bounds}"
        return f"universe_bits={self.universe_bits}, width={self.width}, depth={self.depth}{b}"

    def __repr__(self):
        return f"{type(self).__name__}({self._repr_fields()}, n={self.n})"


class DyadicCountSketch(_DyadicBase):
    """Non-private dyadic CountSketch over [0, 2^universe_bits) (docs/algorithms.md §6).

    ``gamma`` sets Zhao's shape (rank error about γ·n with constant probability per quantile);
    ``width``/``depth`` override it. ``bounds=(lo, hi)`` maps real values into the universe.
    ``seed`` seeds the public hash functions (random if None; docs/privacy.md §Seeds); merge needs
    equal hash seeds. ``hash_seed`` gives the public hash seed itself (e.g. of a published sketch).

    :param universe_bits: L: the values are integers in [0, 2^L) (or ``bounds`` mapped onto 2^L buckets)
    :param bounds: ``(lo, hi)``: a public value range (never read off the data); values outside are
        clamped
    """

    _family = 5
    _native = _D.DyadicCountSketch

    @validate_params(["universe_bits", "width", "depth", "bounds", "seed", "hash_seed"])
    def __init__(self, universe_bits: int = 32, *, gamma: float = 0.01, width=None, depth=None, bounds=None,
                 seed=None, hash_seed=None):
        bits, w, d, g = _shape(universe_bits, gamma, width, depth)
        b = _check_bounds(bounds)
        if b is not None and bits > _MAX_BOUNDED_BITS:
            raise ParameterError(f"with bounds, universe_bits must be at most {_MAX_BOUNDED_BITS} (float64 resolution)")
        self._impl = self._native(bits, w, d, _seeds.hash_seed(seed, hash_seed))
        self._impl.set_meta(g, b)

    @locked
    def update(self, item, count: int = 1) -> None:
        """Add ``count`` (a signed integer; negative deletes) occurrences of ``item``."""
        c = check_int("count", count, -(2**62), 2**62)
        self._impl.update(self._one(item), c)

    @locked
    @streamed
    def update_many(self, items, counts=None) -> None:
        """Add a batch (numpy int/uint array; floats with bounds), optionally with one signed int64
        count per item. All-or-nothing; the GIL is released during the C++ loop."""
        arr = self._items(items)
        self._impl.update_many(arr, self._counts(counts, len(arr)))

    def merge(self, other: "DyadicCountSketch") -> None:
        """Add ``other``'s cells: the sketch of both streams (same universe_bits, width, depth, seed)."""
        if type(other) is not DyadicCountSketch:
            raise ParameterTypeError(f"can only merge a DyadicCountSketch, got {type(other).__name__}")
        if other.bounds != self.bounds:
            raise ParameterError("cannot merge sketches with different bounds")
        first, second = sorted((self, other), key=id)
        with first._lock, second._lock:
            self._impl.merge(other._impl)


def _sensitivities(bits, exact, depth, neighbours):
    """Per-level (ℓ1, ℓ2²) sensitivities of the cells (docs/privacy.md "Dyadic sketches (§6)").
    Add/remove: exact level (1, 1), CountSketch level (d, d). Replace: ℓ1 doubles everywhere, ℓ2²
    doubles on exact levels and is 4d on CountSketch levels (two items in one cell with opposite
    signs move it by 2)."""
    return [cell_sensitivities(1, neighbours, signed=False) if j <= exact else cell_sensitivities(depth, neighbours, signed=True)
            for j in range(1, bits + 1)]


_NOISE_GRID = 1 << 16  # lattice points of the node-noise distributions behind the rank-error σ


@functools.lru_cache(maxsize=256)
def node_noise_variance(kind: str, num: int, den: int, depth: int) -> float:
    """Variance of one node's noise (docs/privacy.md "Dyadic sketches (§6)", rank error): one
    cell's DLap(b = num/den) or DGauss(σ² = num/den) noise on an exact level (``depth`` 1), the
    median of ``depth`` independent cells (mean of the two middle ones for an even depth) on a
    CountSketch level. Computed from the distribution on the integers truncated at 60 scales (on
    a coarser lattice of the same law when that exceeds 2^16 points: relative error below
    (step/scale)²), the median's law from the order statistics of the truncated law."""
    p = num / den
    scale = p if kind == "laplace" else math.sqrt(p)
    step = max(1, math.ceil(120 * scale / _NOISE_GRID))
    half = math.ceil(60 * scale / step) + 1
    k = np.arange(-half, half + 1, dtype=np.float64) * step
    logw = -np.abs(k) / p if kind == "laplace" else -(k * k) / (2 * p)
    pmf = np.exp(logw - logw.max())
    pmf /= pmf.sum()
    if depth == 1:
        return float(np.sum(k * k * pmf))
    cdf = np.minimum(np.cumsum(pmf), 1.0)
    below = cdf - pmf  # P(X < k)
    surv = np.concatenate((np.cumsum(pmf[::-1])[::-1][1:], [0.0]))  # P(X > k)

    def order_cdf(r, c):  # P(X_(r) <= k) with c = P(X <= k): at least r of the d values
        return sum(math.comb(depth, i) * c**i * (1 - c) ** (depth - i) for i in range(r, depth + 1))

    if depth % 2:
        r = (depth + 1) // 2
        med = order_cdf(r, cdf) - order_cdf(r, below)
        return float(np.sum(k * k * med))
    r = depth // 2
    second = [float(np.sum(k * k * (order_cdf(j, cdf) - order_cdf(j, below)))) for j in (r, r + 1)]
    # E[X_(r)·X_(r+1)]: X_(r) = a < X_(r+1) = b has probability C(d,r)(F(a)^r − F(a−1)^r)·g(b),
    # g(b) = P(X >= b)^{d−r} − P(X > b)^{d−r}; the rest of P(X_(r) = a) is X_(r+1) = a
    top = math.comb(depth, r) * (cdf**r - below**r)
    g = (surv + pmf) ** (depth - r) - surv ** (depth - r)
    after = np.concatenate((np.cumsum((k * g)[::-1])[::-1][1:], [0.0]))  # Σ_{b > a} b·g(b)
    p_r = order_cdf(r, cdf) - order_cdf(r, below)
    cross = float(np.sum(k * top * after) + np.sum(k * k * (p_r - top * surv ** (depth - r))))
    return (second[0] + second[1] + 2 * cross) / 4


class PrivateDyadicCountSketch(Publishable, _DyadicBase):
    """Dyadic CountSketch with noise in every cell from construction (docs/algorithms.md §6).

    ``rho`` → ρ-zCDP discrete Gaussian noise: ``noise_allocation="zhao"`` (default) splits ρ
    evenly over the L levels (σ_ℓ² = Δ2,ℓ²·L/(2ρ)), as in Zhao et al.; ``"joint"`` adds
    DGauss(S/(2ρ)) to every cell, S = Σ_levels Δ2² (d per CountSketch level, 1 per exact level).
    ``epsilon`` → ε-DP discrete Laplace noise, DLap(Δ1,ℓ·L/ε) per level (``"joint"``: DLap(S1/ε),
    S1 = Σ Δ1). The split gives ranks and quantiles, which sum one node per level, about half the
    noise variance of the joint allocation; the joint one is better for single nodes of CountSketch
    levels (docs/algorithms.md §6).
    ``neighbours="replace"`` uses the replace-one sensitivities (docs/privacy.md).
    Queries are post-processing; quantile targets use the noisy total (so they need no public n).
    ``seed`` makes hash seeds and noise reproducible and NOT secret (experiments only).
    ``budget=`` (a :class:`dpsketch.Budget`) is charged ρ or ε at construction, before the noise is
    drawn. Publish ``release()``: a read-only copy that withholds n (docs/privacy.md §Publishing).

    :param universe_bits: L: the values are integers in [0, 2^L) (or ``bounds`` mapped onto 2^L buckets)
    :param gamma: the target rank error γ of Zhao's shape, in (0, 1) (ignored when both width and depth
        are given)
    :param width: counters per row of the sketch
    :param depth: rows (hash functions) of the sketch
    :param bounds: ``(lo, hi)``: a public value range (never read off the data); values outside are
        clamped
    :param noise_allocation: ``'zhao'`` (an even split over the levels) or ``'joint'`` (one σ² over all
        levels)
    :param beta: failure probability of the stated error bounds, in (0, 1)
    :param neighbours: ``'add_remove'`` (default) or ``'replace'``: the neighbour relation the noise is
        calibrated for
    :param budget: a :class:`dpsketch.Budget` charged ρ or ε at construction, before the noise is drawn
    """

    _family = 9
    _native = _D.PrivateDyadicCountSketch

    @validate_params(["universe_bits", "width", "depth", "bounds", "epsilon", "rho", "seed"])
    def __init__(self, universe_bits: int = 32, *, gamma: float = 0.01, width=None, depth=None, bounds=None,
                 rho=None, epsilon=None, noise_allocation: str = "zhao", beta: float = 0.01,
                 neighbours: str = "add_remove", seed=None, budget: Budget | None = None):
        bits, w, d, g = _shape(universe_bits, gamma, width, depth)
        b = _check_bounds(bounds)
        if b is not None and bits > _MAX_BOUNDED_BITS:
            raise ParameterError(f"with bounds, universe_bits must be at most {_MAX_BOUNDED_BITS} (float64 resolution)")
        s = None if seed is None else check_int("seed", seed, 0, 2**64 - 1)
        exact = _D.exact_levels(bits, w, d)
        noise = self._setup(bits, exact, d, rho, epsilon, noise_allocation, beta, neighbours, s)
        kind, allocation, nb, params = noise
        with self._charging(budget):  # noise is drawn at construction (§6): charge first
            self._impl = self._native(bits, w, d, _seeds.hash_seed(s), kind, allocation, nb, params, _seeds.rng(s)[0])
        self._impl.set_meta(g, b)

    def _charging(self, budget):
        """Charge ``budget`` the ε or ρ the noise uses (rounded down to 2^-32, as the level
        parameters are; composition over levels gives back exactly that total)."""
        return charging(budget, type(self).__name__,
                        epsilon=0 if self._epsilon is None else used_value(self._epsilon),
                        rho=0 if self._rho is None else used_value(self._rho))

    def _setup(self, bits, exact, depth, rho, epsilon, allocation, beta, neighbours, seed):
        """Validate the privacy parameters; return (kind, allocation, neighbours, per-level params)."""
        if (epsilon is None) == (rho is None):
            raise ParameterError("pass exactly one of rho= (zCDP, Gaussian noise) or epsilon= (pure DP, Laplace noise)")
        if allocation not in ("joint", "zhao"):
            raise ParameterError(f"noise_allocation must be 'joint' or 'zhao', got {allocation!r}")
        if neighbours not in ("add_remove", "replace"):
            raise ParameterError(f"neighbours must be 'add_remove' or 'replace', got {neighbours!r}")
        if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not 0 < float(beta) < 1:
            raise ParameterError(f"beta must be in (0, 1), got {beta!r}")
        self._rho = self._epsilon = None
        if epsilon is not None:
            self._epsilon, _ = check_privacy_params(epsilon, 0.5)
        else:
            self._rho, _ = check_privacy_params(rho, 0.5, name="rho")
        self._beta, self._seed = float(beta), seed
        self._published, self._reproducible_not_secret = False, seed is not None
        self._conversion_delta: float | None = None
        return self._noise_params(bits, exact, depth, allocation, neighbours)

    def _noise_params(self, bits, exact, depth, allocation, neighbours):
        sens = _sensitivities(bits, exact, depth, neighbours)
        if self._epsilon is not None:
            kind = "laplace"
            if allocation == "joint":  # DLap(S1/ε) everywhere (docs/privacy.md "Dyadic sketches (§6)")
                params = [_R.laplace_scale(sum(l1 for l1, _ in sens), self._epsilon)] * bits
            else:  # ε/L per level: DLap(Δ1,ℓ·L/ε)
                params = [_R.laplace_scale(l1 * bits, self._epsilon) for l1, _ in sens]
        else:
            kind = "gaussian"
            if allocation == "joint":  # σ² = S/(2ρ), S = Σ Δ2,ℓ²
                params = [_R.gaussian_sigma2(sum(l2 for _, l2 in sens), self._rho)] * bits
            else:  # ρ/L per level: σ_ℓ² = Δ2,ℓ²·L/(2ρ)
                params = [_R.gaussian_sigma2(l2 * bits, self._rho) for _, l2 in sens]
        return kind, allocation, neighbours, [tuple(p) for p in params]

    @classmethod
    def from_sketch(cls, sketch: DyadicCountSketch, *, rho=None, epsilon=None, noise_allocation: str = "zhao",
                    beta: float = 0.01, neighbours: str = "add_remove", seed=None,
                    budget: Budget | None = None) -> "PrivateDyadicCountSketch":
        """Privatise a non-private (e.g. merged) sketch once: noise added at the aggregator
        (docs/algorithms.md §8). With the seed the sketch's hashes came from, the cells equal those of
        a PrivateDyadicCountSketch built with that seed on the same stream. ``budget`` is charged
        as at construction, before the noise is drawn.

        :param sketch: a non-private DyadicCountSketch, read and left unchanged
        :param rho: ρ-zCDP of the noise (discrete Gaussian)
        :param epsilon: pure ε-DP of the noise (discrete Laplace) instead of ``rho``
        :param noise_allocation: ``'zhao'`` (an even split over the levels) or ``'joint'`` (one σ²
            over all levels)
        :param beta: failure probability of the stated error bounds, in (0, 1)
        :param neighbours: ``'add_remove'`` (default) or ``'replace'``: the neighbour relation the
            noise is calibrated for
        :param seed: a user seed: reproducible noise (and hash functions), NOT secret; None: the
            secure generator
        """
        if type(sketch) is not DyadicCountSketch:
            raise ParameterTypeError(f"from_sketch takes a DyadicCountSketch, got {type(sketch).__name__}")
        obj = cls.__new__(cls)
        s = None if seed is None else check_int("seed", seed, 0, 2**64 - 1)
        with sketch._lock:
            noise = obj._setup(sketch.universe_bits, sketch.exact_levels, sketch.depth, rho, epsilon,
                               noise_allocation, beta, neighbours, s)
            kind, allocation, nb, params = noise
            with obj._charging(budget):
                obj._impl = cls._native.from_sketch(sketch._impl, kind, allocation, nb, params, _seeds.rng(s)[0])
        return obj

    def _restore(self):
        # The guarantee of the noise actually stored, level by level (composition over levels):
        # ρ = Σ_ℓ Δ2,ℓ²/(2σ_ℓ²) or ε = Σ_ℓ Δ1,ℓ/b_ℓ -- the requested budget for either allocation.
        impl = self._impl
        sens = _sensitivities(impl.bits, impl.exact_levels, impl.depth, impl.neighbours)
        shares = [noise_guarantee(impl.noise_kind, l1, l2, num, den) for (l1, l2), (num, den) in zip(sens, impl.level_params)]
        if impl.noise_kind == "laplace":
            self._epsilon, self._rho = sum(e for e, _ in shares), None
        else:
            self._rho, self._epsilon = sum(r for _, r in shares), None
        self._beta, self._seed, self._conversion_delta = None, None, None  # the seed never travels; whether there was one does

    noise_allocation = property(lambda self: self._impl.allocation)
    neighbours = property(lambda self: self._impl.neighbours)

    def _total(self) -> float:
        # The noisy total rank(2^L) (two level-1 nodes): post-processing, no public-n assumption.
        return float(self._impl.total())

    @locked
    def noisy_total(self) -> float:
        """The noisy total rank(2^L), the sum of the two noisy level-1 nodes (what quantile targets
        use): post-processing of the noisy cells, never the exact n."""
        return self._total()

    @locked
    def update(self, item, count: int = 1) -> None:
        """Add ``count`` (signed integer) occurrences of ``item``; one unit update is the privacy unit."""
        self._check_not_frozen()
        c = check_int("count", count, -(2**62), 2**62)
        self._impl.update(self._one(item), c)

    @locked
    @streamed
    def update_many(self, items, counts=None) -> None:
        self._check_not_frozen()
        arr = self._items(items)
        self._impl.update_many(arr, self._counts(counts, len(arr)))

    @property
    def metadata(self) -> dict:
        """The record of this sketch's guarantee, the same schema as every release's: mechanism,
        privacy unit, neighbours, noise, ε/δ/ρ of the noise as drawn (ε, δ for a zCDP sketch only
        with the conversion ``delta`` given to ``release(delta=)``), sensitivities, shape, levels,
        release index and labels."""
        return self.privacy(self._conversion_delta)

    @locked
    def privacy(self, delta: float | None = None) -> dict:
        """The :attr:`metadata` record with every constant behind it; with ``delta``, the (ε, δ)-DP
        conversion of ρ-zCDP: ε = ρ + 2·√(ρ·ln(1/δ)) (docs/algorithms.md §1)."""
        impl = self._impl
        bits, exact, d = impl.bits, impl.exact_levels, impl.depth
        sens = _sensitivities(bits, exact, d, impl.neighbours)
        gaussian = impl.noise_kind == "gaussian"
        levels = []
        for j, ((l1, l2), (num, den)) in enumerate(zip(sens, impl.level_params), start=1):
            lv = {"level": j, "kind": "exact" if j <= exact else "sketch", "l1_sensitivity": l1,
                  "l2_sensitivity_squared": l2}
            eps_share, rho_share = noise_guarantee(impl.noise_kind, l1, l2, num, den)
            if gaussian:
                lv["sigma2"] = num / den
                lv["rho_share"] = rho_share
            else:
                lv["laplace_scale"] = num / den
                lv["epsilon_share"] = eps_share
            lv["node_noise_variance"] = node_noise_variance(impl.noise_kind, num, den, 1 if j <= exact else d)
            levels.append(lv)
        rank_var = math.fsum(lv["node_noise_variance"] for lv in levels)
        out = {
            "mechanism": "PrivateDyadicCountSketch",
            "reference": "docs/algorithms.md §6",
            "noise": "discrete_gaussian" if gaussian else "discrete_laplace",
            "noise_allocation": impl.allocation,
            "neighbours": impl.neighbours,
            "privacy_unit": PRIVACY_UNIT,
            "length": "unused",  # quantile targets use the noisy total (post-processing)
            "rho_requested": self._rho,
            "epsilon_requested": self._epsilon,
            "release_index": self._guard.count,
            "published": self._published,
            "universe_bits": bits, "width": impl.width, "depth": d, "exact_levels": exact,
            "sketch_levels": bits - exact,
            "l1_sensitivity_total": sum(a for a, _ in sens),
            "l2_sensitivity_squared_total": sum(b for _, b in sens),
            "levels": levels,
            "quantile_targets": "q times the noisy total rank(2^L) (post-processing; no public n needed)",
            # docs/privacy.md "Dyadic sketches (§6)", rank error: rank(x) sums one node per 1-bit of x
            "rank_error_sigma": math.sqrt(rank_var),
            "rank_error_sigma_mean_position": math.sqrt(rank_var / 2),
            "rank_error_sigma_note": ("standard deviation of the noise in rank(x): at a position whose L bits "
                                      "are all set (the largest), and the root mean square over uniformly "
                                      "random positions; CountSketch levels add a hash-collision error that "
                                      "depends on the data and is not included"),
            "reproducible_not_secret": self._reproducible_not_secret,
        }
        # the guarantee of the noise as drawn (ε, ρ rounded down to multiples of 2^-32, §1)
        if gaussian:
            out["rho_used"] = out["rho"] = sum(lv["rho_share"] for lv in levels)
            out.update(privacy="zcdp", epsilon=None, delta=None)
            if impl.allocation == "joint":
                out["sigma2"] = levels[0]["sigma2"]
            if delta is not None:
                _, dl = check_privacy_params(1.0, delta)
                out["delta"] = dl
                out["epsilon"] = out["epsilon_from_zcdp"] = zcdp_epsilon(out["rho_used"], dl)
        else:
            out["epsilon_used"] = out["epsilon"] = sum(lv["epsilon_share"] for lv in levels)
            out.update(privacy="pure", delta=0.0, rho=None)
        if self._beta is not None:
            out["beta"] = self._beta
            out["noise_bound"] = self._noise_bound(levels, gaussian)
        return out

    def _noise_bound(self, levels, gaussian):
        """A bound every cell's |noise| stays within except with probability β (union over all cells):
        Gaussian σ·√(2 ln(2C/β)) (sub-Gaussian tail), Laplace b·ln(C/β) (docs/algorithms.md §1)."""
        cells = sum(lv["cells"] for lv in self.levels())
        if gaussian:
            s2 = max(lv["sigma2"] for lv in levels)
            return math.sqrt(s2) * math.sqrt(2 * math.log(2 * cells / self._beta))
        b = max(lv["laplace_scale"] for lv in levels)
        return b * math.log(cells / self._beta)

    @locked
    def rank_intervals(self, xs, *, level: float = 0.95) -> list[tuple]:
        """(estimated rank, low, high) for each position of ``xs``: with probability at least
        ``level`` the true rank (items < x) of every x lies in its [low, high] (simultaneously;
        docs/privacy.md §Intervals). rank(x) sums one node per 1-bit of x; on exact levels a node
        is its exact count plus independent cell noise, so the error is a sum of known integer
        noises (the exact law, convolved). A position whose rank reads a CountSketch level (a
        1-bit below the exact levels) carries a hash-collision error no published quantity bounds:
        refused. The positions must not be chosen from the cells (a quantile the sketch returned
        is chosen by the noise and is not covered)."""
        from ..intervals import check_level, sum_halfwidth

        alpha = 1.0 - check_level(level)
        impl = self._impl
        L, E = impl.bits, impl.exact_levels
        params = impl.level_params
        kind = impl.noise_kind
        positions = [self._position(x) for x in np.atleast_1d(np.asarray(xs, dtype=object)).tolist()]
        out = []
        for pos in positions:
            if pos == 2**L:
                levels = [1, 1]  # total(): the two level-1 nodes
            else:
                levels = [j for j in range(1, L + 1) if (pos >> (L - j)) & 1]
            if any(j > E for j in levels):
                raise ParameterError(
                    f"rank intervals need positions whose rank reads exact levels only (the low "
                    f"{L - E} bits zero, or a universe of at most {E} bits): CountSketch levels add a "
                    "collision error that no published quantity bounds (docs/privacy.md §Intervals)")
            laws = [(kind, params[j - 1][0] / params[j - 1][1]) for j in levels]
            s = sum_halfwidth(laws, alpha / len(positions))
            est = float(self._rank_at(pos))
            out.append((est, max(0.0, est - s), est + s))
        return out

    @locked
    def quantile_intervals(self, qs, *, level: float = 0.95) -> list[tuple]:
        """(value, low, high) for each level q: ``value`` is :meth:`quantiles`' answer and, with
        probability at least ``level`` for every q at once, the true rank range of the value meets
        [low, high]: (items < value) <= high and (items <= value) >= low (docs/privacy.md
        §Intervals). The descent returns a position y with estimated rank(y) < t <= estimated
        rank(y + 1), t = q·max(0, noisy total); y is chosen by the noise, so the bound s is uniform
        over all positions (a union over the 2^L positions of the exact noise sums) and
        [low, high] = [t − s, t + s]. With ``bounds``, ranks count buckets: "items <= value" are the
        items of value's bucket and below. Needs a hierarchy of exact levels only (a universe of at most
        ``exact_levels`` bits): CountSketch levels add a collision error no published quantity bounds.

        :param qs: the quantile levels, each in [0, 1]
        """
        from ..intervals import check_level, uniform_rank_halfwidth

        alpha = 1.0 - check_level(level)
        impl = self._impl
        if impl.exact_levels < impl.bits:
            raise ParameterError(
                f"quantile intervals need every level exact (universe_bits <= {impl.exact_levels} at this "
                "width and depth): CountSketch levels add a collision error that no published quantity "
                "bounds (docs/privacy.md §Intervals)")
        laws = {num / den for num, den in impl.level_params}
        if len(laws) != 1:
            raise ParameterError("quantile intervals need one noise law on every level")
        s = uniform_rank_halfwidth(impl.noise_kind, laws.pop(), impl.bits, alpha)
        targets = self._targets(qs)
        values = self.quantiles(qs)
        return [(v.item() if hasattr(v, "item") else v, float(t) - s, float(t) + s)
                for v, t in zip(np.atleast_1d(values), targets)]

    def rank_interval(self, x, *, level: float = 0.95) -> tuple:
        """(estimated rank, low, high) of one position: :meth:`rank_intervals` of [x].

        :param x: a position (a value of the universe, or of ``bounds``)
        :param level: the coverage probability of the interval, in (0, 1)
        """
        return self.rank_intervals([x], level=level)[0]

    @locked
    @validate_params(["delta"])
    def release(self, *, allow_repeat: bool = False, delta: float | None = None) -> Release:
        """A :class:`Release` whose ``sketch`` is the noisy hierarchy as a publishable, read-only
        copy (to_bytes, quantiles, ranks). It withholds the exact length and absorbed mass: ``n`` is
        None, the bytes hold n = 0 and the mass bound max ``|cell|`` (docs/privacy.md §Publishing).
        ``delta`` (zCDP only) records the (ε, δ)-DP conversion in the metadata. A second release
        raises unless ``allow_repeat=True`` (docs/algorithms.md §0); releasing a published copy
        releases it again (nothing new is revealed).

        :param allow_repeat: release again although this object was released before (the privacy loss
            composes)
        """
        return self._publish(allow_repeat, delta)

    def merge(self, other):
        """Always refused (a ParameterTypeError): private sketches do not merge, their noise would add up.

        :param other: the sketch that would be merged in
        """
        raise ParameterTypeError("private sketches do not merge (their noise would add up); merge non-private "
                        "DyadicCountSketch objects and privatise once with PrivateDyadicCountSketch.from_sketch")

    def _repr_fields(self):
        p = f"epsilon={self._epsilon:g}" if self._epsilon is not None else f"rho={self._rho:g}"
        return f"{super()._repr_fields()}, {p}, noise_allocation={self.noise_allocation!r}"

    def __repr__(self):
        if self._impl.length_withheld:  # a published copy: no n (docs/privacy.md §Publishing)
            flag = ", published=True" if self._published else ""
            return f"{type(self).__name__}({self._repr_fields()}{flag})"
        return super().__repr__()


# `obj.update(x)` / `obj.update(x, count)`: a plain int (or, with bounds, an int or float) and an int
# count run in C under the object's lock, mapped as update_many maps them; any other call runs the
# Python method (which raises the documented errors).
DyadicCountSketch.update = _core.FastUpdate(DyadicCountSketch.update)  # type: ignore[method-assign]
PrivateDyadicCountSketch.update = _core.FastUpdate(PrivateDyadicCountSketch.update)  # type: ignore[method-assign]
