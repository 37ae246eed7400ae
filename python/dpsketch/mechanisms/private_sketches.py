"""Differentially private linear sketches (docs/algorithms.md §4) and the error-envelope heavy-hitter
wrapper over them (§5). Noise is drawn once, when the object is built, from the secure generator
(or from ``seed`` -- reproducible and NOT secret, for experiments)."""

from __future__ import annotations

from typing import Any, TypeVar

from .. import _core
from ..accounting.budget import Budget, charging
from ..accounting.profile import Profile
from ..accounting.calibration import cell_sensitivities, noise_guarantee, used_value, zcdp_epsilon
from ..sketches._base import KeyDispatch, Publishable, Serialized, Summary, locked
from ..sketches._streams import streamed
from .. import _seeds
from .._validation import check_int, validate_params
from ..release import PRIVACY_UNIT, Release, build_release, calibrate, check_privacy_params, make_length
from ..errors import ParameterError, ParameterTypeError

__all__ = ["PrivateCountMin", "PrivateCountSketch", "SketchHeavyHitters", "prefix_heavy_hitter_threshold", "zcdp_to_dp"]

_R = _core.release
_P = TypeVar("_P", bound="_PrivateLinear")


zcdp_to_dp = zcdp_epsilon  # the public name of docs/algorithms.md §1's conversion


class _PrivateLinear(Publishable, KeyDispatch, Serialized, Summary):
    _count_min: bool
    _turnstile = True  # signed counts; the privacy unit stays one unit update (docs/privacy.md)

    @validate_params(["width", "depth", "epsilon", "rho", "seed"])
    def __init__(self, width: int, depth: int, *, epsilon=None, rho=None, beta: float = 0.01, seed=None, key_type=None,
                 budget: Budget | None = None, neighbours: str = "add_remove"):
        self._width = check_int("width", width, 1, 2**31)
        self._depth = check_int("depth", depth, 1, _core.MAX_DEPTH)
        if self._width * self._depth > _core.MAX_CELLS:
            raise ParameterError(f"width * depth must be at most {_core.MAX_CELLS} cells; lower width or depth")
        if (epsilon is None) == (rho is None):
            raise ParameterError("pass exactly one of epsilon= (pure DP, Laplace noise) or rho= (zCDP, Gaussian noise)")
        if epsilon is not None:
            self._epsilon, _ = check_privacy_params(epsilon, 0.5)
            self._rho = None
        else:
            self._rho, _ = check_privacy_params(rho, 0.5, name="rho")
            self._epsilon = None
        if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not (0 < float(beta) < 1):
            raise ParameterError(f"beta must be in (0, 1), got {beta!r}")
        self._beta = float(beta)
        if neighbours not in ("add_remove", "replace"):
            raise ParameterError(f"neighbours must be 'add_remove' or 'replace', got {neighbours!r}")
        self._neighbours = neighbours
        self._seed = None if seed is None else check_int("seed", seed, 0, 2**64 - 1)
        source = self.__dict__.get("_source")
        # from_sketch: the hash functions are the (public) ones the source sketch was built with.
        self._hash_seed = _seeds.hash_seed(self._seed) if source is None else source.hash_seed
        self._reproducible_not_secret = self._seed is not None
        self._conversion_delta: float | None = None
        # Noise is drawn when the object is built (§4), so the budget is charged here, checked first.
        with charging(budget, type(self).__name__, profile=self.privacy_profile):
            super().__init__(key_type)

    @property
    def privacy_profile(self) -> Profile:
        """The noise's privacy profile (docs/accounting.md): DGauss with ρ as used, or DLap with ε
        as used; under add/remove one element moves one cell per row by 1, so ``depth``
        coordinates shift by 1 each (the budget composes its exact zCDP); under replace the
        pattern is left unstated (ε²/2)."""
        if self._epsilon is None:
            assert self._rho is not None
            return Profile.discrete_gaussian(used_value(self._rho))
        if self._neighbours == "add_remove":
            return Profile.discrete_laplace(used_value(self._epsilon), sensitivity=1, coordinates=self._depth)
        return Profile.discrete_laplace(used_value(self._epsilon))

    def _sensitivities(self):
        """(ℓ1, ℓ2²) of the cells (docs/privacy.md §4 and "Dyadic sketches (§6)"): add/remove one
        element changes one cell per row by ±1: (d, d). Replace: ℓ1 doubles (2d); ℓ2² doubles for
        Count-Min (2d) but is 4d for CountSketch, whose two items can share a cell with opposite signs."""
        return cell_sensitivities(self._depth, self._neighbours, signed=not self._count_min)

    def _noise(self):
        """(kind, num, den, shift): §4 pure DP cell noise DLap(Δ1/ε), or zCDP DGauss(σ²) with
        σ² = Δ2²/(2ρ) and, for Count-Min, the shift E computed from that σ²."""
        l1, l2 = self._sensitivities()
        if self._epsilon is not None:
            num, den = _R.laplace_scale(l1, self._epsilon)
            return "laplace", num, den, 0
        num, den = _R.gaussian_sigma2(l2, self._rho)
        shift = _R.gaussian_cm_shift(num / den, self._depth, self._width, self._beta) if self._count_min else 0
        return "gaussian", num, den, shift

    def _make(self, key_type):
        kind, num, den, shift = self._noise()
        source = self.__dict__.get("_source")
        if source is not None:
            return self._natives[key_type].from_sketch(source._impl, kind, num, den, shift, _seeds.rng(self._seed, "noise")[0],
                                                       self._neighbours)
        return self._natives[key_type](
            self._width, self._depth, self._hash_seed, kind, num, den, shift, False, _seeds.rng(self._seed, "noise")[0],
            self._neighbours,
        )

    @classmethod
    def from_sketch(cls, sketch, *, epsilon=None, rho=None, beta: float = 0.01, neighbours: str = "add_remove",
                    seed=None, budget: Budget | None = None):
        """Trusted-aggregator release (docs/algorithms.md §8): privatise a finished non-private sketch
        -- typically the merge of per-worker sketches built with one shared public seed -- by adding
        the cell noise once, here. Same noise as the constructor (``epsilon``: DLap(Δ1/ε) per cell;
        ``rho``: DGauss(Δ2²/(2ρ)) per cell, plus the shift E for Count-Min; ``neighbours`` as in the
        constructor), so the result has exactly the distribution of the private sketch built on the
        whole stream with the source's hash seed: with the same ``seed`` (noise stream; reproducible
        and NOT secret) the cells are identical. ``seed=None`` draws the noise from the secure
        generator. ``budget`` is charged as at construction. The source sketch is not changed; keep it private (it holds exact counts).

        :param sketch: a non-private CountMin (for PrivateCountMin) or CountSketch of the same shape,
            read and left unchanged
        :param beta: failure probability of the stated error bounds, in (0, 1)
        """
        from ..sketches.linear import CountMin, CountSketch

        want = CountMin if cls._count_min else CountSketch
        if type(sketch) is not want:
            raise ParameterTypeError(f"{cls.__name__}.from_sketch needs a {want.__name__}, got {type(sketch).__name__}")
        obj = cls.__new__(cls)
        with sketch._lock:
            obj._source = sketch
            try:
                obj.__init__(sketch.width, sketch.depth, epsilon=epsilon, rho=rho, beta=beta, seed=seed,
                             key_type=sketch.key_type, neighbours=neighbours, budget=budget)
            finally:
                del obj._source
        return obj

    hash_seed = property(lambda self: self._hash_seed,
                         doc="Seed of the public hash functions (build worker sketches with it to use from_sketch).")

    def _restore_params(self):
        impl = self._impl
        self._width, self._depth, self._hash_seed = impl.width, impl.depth, impl.seed
        self._neighbours = impl.neighbours
        self._epsilon, self._rho = noise_guarantee(impl.noise_kind, *self._sensitivities(), *impl.noise_param)
        # the seed never travels; whether there was one does (header flag, docs/format.md)
        self._beta, self._seed, self._conversion_delta = None, None, None

    width = property(lambda self: self._width, doc="Columns per row.")
    depth = property(lambda self: self._depth, doc="Rows.")
    neighbours = property(lambda self: self._neighbours, doc="'add_remove' or 'replace' (docs/privacy.md).")

    def privacy(self, delta: float | None = None) -> dict:
        """The :attr:`metadata` record; with ``delta`` (zCDP only), its (ε, δ)-DP conversion
        ρ + 2·√(ρ·ln(1/δ)) as ``epsilon`` and ``delta`` (docs/algorithms.md §1)."""
        if delta is None:
            return self.metadata
        _, delta = check_privacy_params(1.0, delta)
        return self._record(delta)

    @property
    def metadata(self) -> dict:
        """The record of this sketch's guarantee (docs/algorithms.md §4): mechanism, privacy unit,
        neighbours, noise, ε/δ/ρ of the noise as drawn, sensitivities, shape, release index and
        labels. Everything is re-derived from the serialized state, so it is the same after copy,
        pickle or bytes (except the conversion ``delta`` given to ``release(delta=)``)."""
        return self._record(self._conversion_delta)

    @locked
    def _record(self, conversion_delta) -> dict:
        num, den = self._impl.noise_param
        d = self._impl.depth
        laplace = self._impl.noise_kind == "laplace"
        meta = {
            "mechanism": f"{type(self).__name__}[{'laplace' if laplace else 'gaussian'}]",
            "reference": "docs/algorithms.md §4",
            "noise": "discrete_laplace" if laplace else "discrete_gaussian",
            # §4: Laplace scale Δ1/ε, Gaussian σ² = Δ2²/(2ρ); (Δ1, Δ2²) = (d, d) for add/remove,
            # doubled (CountSketch ℓ2²: 4d) for replace neighbours (docs/privacy.md §Dyadic)
            "neighbours": self._neighbours,
            "privacy_unit": PRIVACY_UNIT,
            "length": "unused",
            "noise_param": num / den,
            "noise_param_rational": [num, den],
            "shift": self._impl.shift,
            "width": self._impl.width,
            "depth": d,
            "release_index": self._guard.count,
            "published": self._published,
            "reproducible_not_secret": self._reproducible_not_secret,
            # the noise needs no length, and the published copy withholds n (docs/privacy.md §Publishing)
            "assumes_public_length": False,
        }
        # the guarantee of the noise actually drawn (ε, ρ rounded down to multiples of 2^-32, §1)
        l1, l2 = self._sensitivities()
        meta.update(l1_sensitivity=l1, l2_sensitivity_squared=l2)
        eps, rho = noise_guarantee(self._impl.noise_kind, l1, l2, num, den)
        if laplace:
            meta.update(privacy="pure", epsilon=eps, delta=0.0, rho=None)
        else:
            meta.update(privacy="zcdp", rho=rho, epsilon=None, delta=None)
            if self._beta is not None and self._count_min:
                meta["beta"] = self._beta  # the shift keeps estimates >= true counts w.p. 1 - β (§4)
            if conversion_delta is not None and rho is not None:  # ρ-zCDP -> (ρ + 2√(ρ ln 1/δ), δ)-DP (§1)
                meta.update(delta=conversion_delta, epsilon=zcdp_to_dp(rho, conversion_delta))
        return meta

    @locked
    def update(self, item, count=1) -> None:
        """Add ``count`` occurrences of ``item`` to the noisy sketch.

        :param item: one key
        :param count: the count to add (default 1; negative for a turnstile sketch)
        """
        self._check_not_frozen()
        super().update(item, count)

    @locked
    @streamed
    def update_many(self, items, counts=None) -> None:
        self._check_not_frozen()
        super().update_many(items, counts)

    @locked
    def cells(self):
        """The noisy cells, shape (depth, width).

        On a ``release()`` result these are the published DP object. On the live sketch they are
        the data holder's view: the noise was drawn once, so two views taken around an update
        differ by exactly that update. Publish only a release() result (one publication of the
        final state; docs/privacy.md §Publishing and the release-once rule)."""
        return self._impl.cells()

    @locked
    def estimate_many(self, items):
        """Noisy estimates for a batch of int keys (numpy int64 array).

        :param items: the keys to estimate (an array or list)
        """
        from ..sketches._keys import int_batch

        if self._key_type_fixed and self._key_type != "int":
            raise ParameterTypeError("this sketch has str keys; estimate them one by one")
        return self._impl.estimate_many(int_batch(items))

    @locked
    @validate_params(["delta"])
    def release(self, *, allow_repeat: bool = False, delta: float | None = None) -> Release:
        """A :class:`Release` whose ``sketch`` is the noisy sketch as a publishable, read-only copy
        (serializable with to_bytes, queryable with estimate; its ``metadata`` is the release's).
        The noise, drawn once at construction, protects ONE publication of the final state:
        publishing it at more than one time reveals the updates in between exactly, so a second release raises unless ``allow_repeat=True``
        (docs/privacy.md §Publishing and the release-once rule). The release count travels with
        every copy, pickle and bytes; a published copy stays read-only through all of them and
        withholds the exact stream length (``n`` is None; the bytes hold 0). ``delta`` (zCDP
        only) records the (ε, δ)-DP conversion in the metadata.
        Releasing an already published copy releases it again (nothing new is revealed).

        :param allow_repeat: release again although this object was released before (the privacy loss
            composes)
        """
        return self._publish(allow_repeat, delta)

    def _repr_fields(self):
        p = f"epsilon={self._epsilon:g}" if self._epsilon is not None else f"rho={self._rho:g}"
        nb = "" if self._neighbours == "add_remove" else ", neighbours='replace'"
        flags = (", published=True" if self._published else "") + (
            ", reproducible_not_secret=True" if self._reproducible_not_secret else "")
        return f"width={self._width}, depth={self._depth}, {p}{nb}{flags}"

    def __repr__(self) -> str:
        if self._impl.length_withheld:  # a published copy: no n (docs/privacy.md §Publishing)
            return f"{type(self).__name__}({self._repr_fields()}, key_type={self.key_type!r})"
        return super().__repr__()


class PrivateCountMin(_PrivateLinear):
    """Count-Min with noisy cells: ``epsilon`` → every cell += DLap(depth/ε) (ε-DP); ``rho`` →
    every cell += DGauss(depth/(2ρ)) + E with E chosen so that, w.p. 1 − β, estimates never
    underestimate (ρ-zCDP; Zhao et al.). docs/algorithms.md §4. ``budget=`` (a :class:`dpsketch.Budget`)
    is charged ε or ρ at construction, before the noise is drawn.

    The noise protects one publication of the final state: publish ``release()`` (read-only, with
    ``metadata``). Queries on the live sketch are for the data holder (docs/privacy.md
    §Publishing and the release-once rule).

    :param beta: failure probability of the stated error bounds, in (0, 1)
    :param budget: a :class:`dpsketch.Budget` charged ρ or ε at construction, before the noise is drawn
    :param depth: rows (hash functions) of the sketch
    :param key_type: ``'int'`` or ``'str'`` to fix the key type now (default: the first batch decides)
    :param neighbours: ``'add_remove'`` (default) or ``'replace'``: the neighbour relation the noise is
        calibrated for
    :param seed: a user seed: reproducible noise (and hash functions), NOT secret; None: the secure
        generator
    :param width: counters per row of the sketch
    """

    _natives = {"int": _R.PrivateCountMinInt, "str": _R.PrivateCountMinStr}
    _family = 7
    _count_min = True

    @locked
    def noisy_total(self) -> float:
        """A noisy estimate of the net stream length, post-processing of the noisy cells: every row
        sums to n plus its cells' noise (and width·shift, subtracted), averaged over the rows. It is
        unbiased but noisy (the variance of a row sum is width times a cell's), never the exact n."""
        cells = self._impl.cells()
        return float(cells.sum(axis=1, dtype=float).mean()) - self._impl.width * self._impl.shift

    @locked
    def estimate_intervals(self, items, *, level: float = 0.95) -> list[tuple]:
        """(estimate, low, high) for each of ``items``: with probability at least ``level`` every
        item's true count lies in its [low, high] (simultaneously over the items given; one item
        is :meth:`estimate_interval`). Post-processing of the noisy cells (docs/privacy.md
        §Intervals): high = estimate − E + s, low = estimate − E − s − t, with s bounding the d
        noise terms of every item (a union bound), E the shift, and t a Markov bound on the
        smallest row's collision mass, ((n_up/w)·(4/(1 − level))^{1/d}), from an upper bound n_up
        on the stream length read off :meth:`noisy_total`. Valid when every update count was >= 0
        (a turnstile stream's collisions can be negative) and the items were chosen without
        looking at the hash seed or the cells."""
        from ..intervals import count_min_intervals

        items = list(items)
        if not items:
            return []
        ests = [float(self.estimate(x)) for x in items]
        num, den = self._impl.noise_param
        return count_min_intervals(ests, self._impl.noise_kind, num / den, self._impl.depth, self._impl.width,
                                   self._impl.shift, self.noisy_total(), level)

    def estimate_interval(self, item, *, level: float = 0.95) -> tuple:
        """(estimate, low, high) of one item at ``level``: :meth:`estimate_intervals` of [item].

        :param item: the key to estimate
        """
        return self.estimate_intervals([item], level=level)[0]


class PrivateCountSketch(_PrivateLinear):
    """CountSketch with noisy cells (DLap(depth/ε) or DGauss(depth/(2ρ)), no shift); ``estimate``
    is the median of the signed row values (a float). docs/algorithms.md §4. ``budget=`` is charged ε
    or ρ at construction, before the noise is drawn.

    As for PrivateCountMin: publish ``release()``, once; live queries are for the data holder.

    :param beta: failure probability of the stated error bounds, in (0, 1)
    :param budget: a :class:`dpsketch.Budget` charged ρ or ε at construction, before the noise is drawn
    :param depth: rows (hash functions) of the sketch
    :param epsilon: pure ε-DP of the noise (discrete Laplace)
    :param key_type: ``'int'`` or ``'str'`` to fix the key type now (default: the first batch decides)
    :param neighbours: ``'add_remove'`` (default) or ``'replace'``: the neighbour relation the noise is
        calibrated for
    :param rho: ρ-zCDP of the noise (discrete Gaussian) instead of ``epsilon``
    :param seed: a user seed: reproducible noise (and hash functions), NOT secret; None: the secure
        generator
    :param width: counters per row of the sketch
    """

    _natives = {"int": _R.PrivateCountSketchInt, "str": _R.PrivateCountSketchStr}
    _family = 8
    _count_min = False


class SketchHeavyHitters(KeyDispatch, Summary):
    """(ε, δ)-DP heavy hitters from a noisy Count-Min or CountSketch plus ``capacity`` candidates
    (Holland's error-envelope wrapper, docs/algorithms.md §5).

    The (ε, δ) given are the release's totals. By default the stream length is private: the
    release draws n̂ = n + DLap(1/ε_n) with bounds n̂ ∓ t_n, spending ``length_epsilon`` (default ε/10)
    and ``length_delta`` (default δ/10) of them; the noisy sketch gets the rest, (ε', δ'). The envelope
    fails with probability δ_env = δ'/(1 + e^{ε'}) (docs/privacy.md §Error envelope), split evenly
    between the cell noise and the hash rows. ``public_length=True`` reads the exact n as a public
    parameter instead (replace-one neighbours, docs/privacy.md §Stream length).

    ``depth`` defaults to max(32, ⌈log2((max_stream_length + capacity)/(δ_env/2))⌉) and ``width`` to
    2·capacity (Count-Min) or 3·capacity (CountSketch); given values are checked against §5.
    ``release()`` publishes candidates whose final noisy estimate exceeds
    max(n_up/capacity + 1 + γ2 + 2γ1, n_lo/k − γ2); every constant is in the release metadata.

    :param sketch: ``'countmin'`` (default) or ``'countsketch'``
    :param k: the frequency cut: keep items of frequency about n/k or more
    :param epsilon: ε of the release's (ε, δ)-DP guarantee
    :param delta: δ of the release's (ε, δ)-DP guarantee, in (0, 1)
    :param max_stream_length: a public upper bound on the stream length, fixed before reading
    :param seed: a user seed: reproducible noise and hash functions, NOT secret
    :param key_type: ``'int'`` or ``'str'`` to fix the key type now (default: the first batch decides)
    :param public_length: treat the exact stream length as public (replace-one neighbours) instead of
        paying for a noisy one
    """

    _family = 0

    @validate_params(["k", "capacity", "epsilon", "delta", "seed"])
    def __init__(self, sketch: str = "countmin", k: int | None = None, capacity: int | None = None,
                 epsilon: float | None = None, delta: float | None = None, max_stream_length: int | None = None,
                 seed: int | None = None, *, width: int | None = None, depth: int | None = None, key_type=None,
                 public_length: bool = False, length_epsilon: float | None = None, length_delta: float | None = None):
        missing = [name for name, v in (("k", k), ("capacity", capacity), ("epsilon", epsilon), ("delta", delta),
                                        ("max_stream_length", max_stream_length)) if v is None]
        if missing:
            raise ParameterTypeError(f"SketchHeavyHitters needs {', '.join(missing)} (e.g. k=128, capacity=4*k, epsilon=0.1, "
                            "delta=1e-3, max_stream_length=<upper bound on the stream length>)")
        if sketch not in ("countmin", "countsketch"):
            raise ParameterError(f"sketch must be 'countmin' or 'countsketch', got {sketch!r}")
        self._sketch = sketch
        self._k = check_int("k", k, 1, 2**62)
        self._capacity = check_int("capacity", capacity, 2, _core.MAX_CAPACITY)
        if self._capacity <= self._k:
            raise ParameterError(f"capacity must exceed k (got capacity={capacity}, k={k}); the paper uses capacity = 4k")
        self._epsilon, self._delta = check_privacy_params(epsilon, delta)
        self._cal = calibrate(self._epsilon, self._delta, "bounds", public_length=public_length,
                              length_epsilon=length_epsilon, length_delta=length_delta)
        self._n_max = check_int("max_stream_length", max_stream_length, 1, 2**62)
        self._width = 0 if width is None else check_int("width", width, 1, 2**31)
        self._depth = 0 if depth is None else check_int("depth", depth, 1, _core.MAX_DEPTH)
        self._seed = None if seed is None else check_int("seed", seed, 0, 2**64 - 1)
        self._hash_seed = _seeds.hash_seed(self._seed)
        self._reproducible_not_secret = self._seed is not None
        prefix = "EnvelopeCountMin" if sketch == "countmin" else "EnvelopeCountSketch"
        self._natives = {"int": getattr(_R, prefix + "Int"), "str": getattr(_R, prefix + "Str")}  # type: ignore[misc]  # per object
        super().__init__(key_type)

    def _make(self, key_type):
        return self._natives[key_type](
            self._k, self._capacity, self._width, self._depth, self._cal["epsilon_mechanism"],
            self._cal["delta_mechanism"], self._n_max, self._hash_seed, _seeds.rng(self._seed, "noise")[0],
        )

    @locked
    @streamed
    def update_many(self, items: Any, counts: Any = None) -> None:
        n = len(items)
        if self.n + n > self._n_max:
            raise ParameterError(
                # no exact n in the message: errors end up in logs (docs/algorithms.md §0)
                f"adding {n} items would exceed max_stream_length={self._n_max}; the error "
                "envelope was derived for that length. Build with a larger max_stream_length"
            )
        super().update_many(items, counts)

    @locked
    def update(self, item: Any, count: int = 1) -> None:
        """Add ``count`` occurrences of ``item`` (before the release).

        :param item: one key
        :param count: the count to add (default 1; negative for a turnstile sketch)
        """
        if self.n + 1 > self._n_max:
            raise ParameterError(f"the stream already has max_stream_length={self._n_max} items; build with a larger one")
        super().update(item, count)

    width = property(locked(lambda self: self._impl.width), doc="Columns of the noisy sketch.")
    depth = property(locked(lambda self: self._impl.depth), doc="Rows of the noisy sketch.")
    k = property(lambda self: self._k)
    capacity = property(lambda self: self._capacity)
    reproducible_not_secret = property(lambda self: self._reproducible_not_secret,
                                       doc="True if built with seed=: the sketch noise is reproducible, NOT secret.")

    @locked
    @validate_params(["seed"])
    def release(self, *, seed: int | None = None, allow_repeat: bool = False, budget: Budget | None = None) -> Release:
        """Publish the heavy hitters (§5). ``seed`` seeds only the length noise; the sketch noise was
        drawn at construction (from the constructor's ``seed``). The release is labelled
        ``reproducible_not_secret`` if either seed was given.
        ``budget``: a :class:`dpsketch.Budget` charged the release's (ε, δ) before it is computed.

        :param allow_repeat: release again although this object was released before (the privacy loss
            composes)
        """
        if seed is not None:
            seed = check_int("seed", seed, 0, 2**64 - 1)
        cal = self._cal
        mechanism = f"SketchHeavyHitters[{self._sketch}]"
        with charging(budget, mechanism, epsilon=used_value(cal["epsilon_total"]), delta=cal["delta_total"]):
            extra = self._guard.next(type(self).__name__, allow_repeat)
        rng = _seeds.rng(seed if seed is not None else self._seed, "length")[0]
        raw = self._impl.release(make_length(cal, self._impl.n, rng))
        extra.update(sketch=self._sketch,
                     delta_split="delta_envelope = delta_mechanism/(1 + e^epsilon_mechanism); delta_noise = delta_hash = delta_envelope/2")
        return build_release(raw, mechanism=mechanism, cal=cal, epsilon=self._epsilon, delta=self._delta,
                             seeded=self._seed is not None or seed is not None, extra=extra)

    def __reduce__(self):
        # Not a serializing class: its candidate set and noisy oracle are internal state, published
        # only through release().
        raise ParameterTypeError("SketchHeavyHitters cannot be pickled or copied (its candidate set is internal state); "
                        "release() it and serialize the Release instead")

    def _repr_fields(self):
        return f"{self._sketch!r}, k={self._k}, capacity={self._capacity}, epsilon={self._epsilon:g}, delta={self._delta:g}"


# A prefix's descent threshold in noise standard deviations (docs/mechanisms/cumulative.md §Threshold).
PREFIX_NOISE_FLOOR_SDS = 4


def prefix_heavy_hitter_threshold(noisy_total: float, k: int, node_metadata) -> float:
    """The threshold of a cumulative prefix's heavy-hitter descent (``dpsketch top --cumulative``,
    docs/mechanisms/cumulative.md §Threshold): max(n̂/k, 4·σ) with n̂ the prefix's noisy total and σ²
    the variance of a leaf-level estimate summed over the prefix's nodes -- each node's largest
    per-level noise variance ``sigma2`` (its published metadata; docs/algorithms.md §4 and §6), the
    nodes' noises independent, so their variances add. A function of published values only
    (post-processing): it spends nothing.

    :param noisy_total: the prefix's noisy total n̂
    :param k: the frequency cut's k
    :param node_metadata: the published metadata of the prefix's nodes (their ``levels``)
    """
    import math

    sigma2 = sum(max(lv.get("sigma2", 0.0) for lv in meta["levels"]) for meta in node_metadata)
    return max(noisy_total / k, PREFIX_NOISE_FLOOR_SDS * math.sqrt(sigma2))
