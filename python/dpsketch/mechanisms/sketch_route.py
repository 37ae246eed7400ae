"""The sketch route's mechanism (docs/privacy.md §Sketch route; docs/mechanisms/distributed.md):
the budget split, the noisy 64-bit dyadic sketch's candidates and its cut, and for string keys the
label lookup with its threshold, its noise and the fingerprint-collision bound. ``dpsketch.distributed``
and ``dpsketch.spark`` wire it (partitions, merges, the lookup's aggregation); every threshold and
tail bound of the route lives here.

:func:`lookup_labels` -- the sketch route's label lookup: candidate fingerprints (a DP output)
mapped back to labels by a noisy exact count that a label of count 1 rarely clears.
:func:`fingerprint_delta` -- the probability bound of a fingerprint collision among the labels.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from .. import _core, _seeds
from .._validation import check_int
from ..errors import ParameterError
from ..release import Release, mechanism_release

__all__ = ["SketchRoute", "lookup_labels", "lookup_t", "fingerprint_delta", "FINGERPRINT_BITS", "FINGERPRINT_SALT_BITS"]


def lookup_t(epsilon: float, delta: float) -> int:
    """Smallest integer t >= 1 with P(DLap(1/ε) >= t) = e^{-εt}/(1 + e^{-ε}) <= δ (§1 tails; the
    same tail bound as the noisy length's, release/thresholds.hpp ``length_t``).

    :param epsilon: ε of the DLap(1/ε) noise
    :param delta: the tail probability bound δ
    """
    return int(_core.release.length_t(float(epsilon), float(delta)))


def lookup_labels(candidates: Sequence[int], found: Mapping[tuple[int, int], tuple[int, int, Any]], *,
                  epsilon: float, delta: float, n_hat: float, k: int, rng) -> tuple[list, int, float]:
    """The label lookup of the sketch route (docs/privacy.md §Sketch route), for candidate
    fingerprints fixed before the lookup reads the data. ``candidates`` are 64-bit sketch
    fingerprints φ₁; ``found[(φ₁, φ₂)] = (c, u, label)`` holds, for every 128-bit fingerprint
    (φ₁, φ₂) of the data whose φ₁ is a candidate, the exact count c of its rows, the number u of
    distinct labels among them and one label. Every such fingerprint (in sorted order) gets
    v = c + DLap(1/ε), independent draws; (label, v) is released iff c >= 1, u == 1 and
    v >= τ = max(1 + t, n̂/k − t), t = :func:`lookup_t` (ε, δ): a label of count 1 is released with
    probability <= δ. A fingerprint absent from ``found`` has c = 0 and releases nothing whatever
    its draw, so only the present ones draw. ``epsilon`` is used as given (round it down first,
    §1). Returns (items, 1 + t, τ).

    :param candidates: the candidate 64-bit fingerprints φ₁ (a DP output, fixed before the lookup)
    :param found: (φ₁, φ₂) -> (exact row count c, distinct labels u, one label) for each 128-bit
        fingerprint of the data whose φ₁ is a candidate
    :param epsilon: ε of the lookup's DLap(1/ε) noise, used as given
    :param delta: δ of the lookup: the tail bound of t (a label of count 1 is released w.p. <= δ)
    :param n_hat: the noisy length n̂ of the threshold's n̂/k − t term
    :param k: the frequency cut's k
    :param rng: the noise generator (a ``SecureRng``)
    """
    t = lookup_t(epsilon, delta)
    threshold = max(1 + t, n_hat / k - t)
    num, den = _core.release.laplace_scale(1, epsilon)  # one row moves one count by 1
    wanted = set(candidates)
    fps = sorted(fp for fp in found if fp[0] in wanted)
    noise = _core.noise.discrete_laplace(rng, num, den, len(fps))
    items = []
    for fp, z in zip(fps, noise.tolist()):
        c, u, label = found[fp]
        v = c + int(z)
        if c and u == 1 and v >= threshold:
            items.append((label, v))
    items.sort(key=lambda kv: (-kv[1], kv[0]))
    return items, 1 + t, threshold


FINGERPRINT_BITS = 128  # the lookup's fingerprint: two salted 64-bit hashes of the label


def fingerprint_delta(n_up: float, bits: int = FINGERPRINT_BITS) -> float:
    """The bound n_up²/2^(bits+1) on P(two distinct labels share a ``bits``-bit fingerprint) when
    there are at most n_up labels (docs/privacy.md §Sketch route, Collisions: U(U−1)/2 pairs, each
    colliding with probability 2^−bits under the random-function assumption, U <= n <= n_up).

    :param n_up: an upper bound on the number of distinct labels (the noisy length's upper bound)
    :param bits: the fingerprint's width in bits (default 128, :data:`FINGERPRINT_BITS`)
    """
    n = max(float(n_up), 0.0)
    return n * n / 2.0 ** (bits + 1)


FINGERPRINT_SALT_BITS = 63  # the salt is a non-negative int64 literal for Spark's xxhash64


class SketchRoute:
    """The sketch route's mechanism without Spark (docs/privacy.md §Sketch route; docs/distributed.md
    §Sketch route): what a front end does is build one merged, non-private 64-bit DyadicCountSketch
    of the keys (int64 keys as themselves, strings as salted 64-bit fingerprints φ₁ = h(salt, key))
    and, for strings, count the rows of the candidates by 128-bit fingerprint (φ₁, h(salt2, key)).
    In order:

    1. ``SketchRoute(k=, epsilon=, delta=, strings=, rho_fraction=, seed=)`` splits the budget
       (strings: ρ-zCDP for the sketch at ``rho_fraction`` of ε and δ/3, DLap lookup at the rest
       of ε and δ/3, δ/3 for fingerprint collisions) and draws the two public salts;
    2. ``candidates(merged)`` adds the noise once and walks the noisy hierarchy: the leaves above
       n̂/k − noise bound, n̂ the sketch's own noisy total (post-processing);
    3. ``release()`` for int keys, or ``release(found)`` with the exact lookup counts per 128-bit
       fingerprint for strings (:func:`lookup_labels`).

    :param k: the frequency cut's k (an int >= 1): candidates above n̂/k − noise bound
    :param epsilon: total ε of the release
    :param delta: total δ of the release, in (0, 1) (strings: a third each to the sketch, the lookup, collisions)
    :param strings: True for string keys (fingerprints and the label lookup), False for int64 keys
    :param rho_fraction: the sketch's share of ε, in (0, 1] (default 0.9); below 1 for string keys, whose
        lookup gets the rest; unused for int keys (the sketch gets all of ε)
    :param seed: reproducible salts, hash functions and noise, NOT secret (None: keyed from the operating system)
    """

    def __init__(self, *, k: int, epsilon: float, delta: float, strings: bool, rho_fraction: float = 0.9,
                 seed: int | None = None):
        from ..accounting.calibration import check_privacy_params, zcdp_epsilon, zcdp_rho_for

        eps, dlt = check_privacy_params(epsilon, delta)
        if not (isinstance(rho_fraction, (int, float)) and not isinstance(rho_fraction, bool)
                and 0 < float(rho_fraction) <= 1):
            raise ParameterError(f"rho_fraction must be in (0, 1], got {rho_fraction!r}")
        if strings and rho_fraction >= 1:
            raise ParameterError("string keys need part of epsilon for the label lookup: rho_fraction must be < 1")
        self.k = check_int("k", k, 1, 2**63 - 1)
        self.strings, self.seed = bool(strings), seed
        self.epsilon, self.delta = eps, dlt
        self.epsilon_sketch = eps * (float(rho_fraction) if strings else 1.0)
        self.delta_zcdp = dlt / 3 if strings else dlt  # δ split: zCDP conversion, lookup, collisions
        self.rho = zcdp_rho_for(self.epsilon_sketch, self.delta_zcdp)
        self.epsilon_lookup = _core.release.epsilon_used(eps - self.epsilon_sketch) if strings else 0.0  # §1
        self.epsilon_total = zcdp_epsilon(self.rho, self.delta_zcdp) + self.epsilon_lookup
        self.mechanism = "spark.sketch[DyadicCountSketch+lookup]" if strings else "spark.sketch[DyadicCountSketch]"
        # Fresh public salts per release, drawn before looking at the data (collision bound below):
        # ``salt`` for the sketch's fingerprint φ₁, ``salt2`` for the lookup's second half φ₂.
        salts = _seeds.rng(seed, "salt")[0]
        self.salt = salts.next_u64() & ((1 << FINGERPRINT_SALT_BITS) - 1)
        self.salt2 = salts.next_u64() & ((1 << FINGERPRINT_SALT_BITS) - 1)
        self._meta: dict = {}
        self._cands: list = []

    def prototype(self, *, gamma: float | None = None, width: int | None = None, depth: int | None = None):
        """The empty DyadicCountSketch every part starts from (64-bit universe: int64 keys map to
        [0, 2^64) by two's complement, a bijection).

        :param gamma: the DyadicCountSketch's shape γ (None: 0.01)
        :param width: the sketch's width, overriding ``gamma``'s (None: from ``gamma``)
        :param depth: the sketch's depth, overriding ``gamma``'s (None: from ``gamma``)
        """
        from ..sketches.dyadic import DyadicCountSketch

        return DyadicCountSketch(64, gamma=0.01 if gamma is None else gamma, width=width, depth=depth, seed=self.seed)

    def candidates(self, merged) -> list[int]:
        """Noise the merged sketch once and return the candidate keys (int keys) or fingerprints
        (strings), sorted. The exact ``merged`` sketch is not kept.

        :param merged: the merged, non-private DyadicCountSketch of all keys (built from :meth:`prototype`)
        """
        import numpy as np

        from ..sketches.dyadic import PrivateDyadicCountSketch

        noisy = PrivateDyadicCountSketch.from_sketch(merged, rho=self.rho, seed=self.seed, noise_allocation="joint")
        priv = noisy.privacy(delta=self.delta_zcdp)
        noise_bound = priv["noise_bound"]
        # The noisy total rank(2^L) is two exact level-1 cells, each + DGauss(σ²): their noise sum is
        # sub-Gaussian with variance proxy 2σ², so n_up = n̂ + 2σ·sqrt(ln(3/δ)) >= n except w.p. δ/3.
        self.n_hat = n_hat = float(noisy.noisy_total())
        sigma2 = max(lv["sigma2"] for lv in priv["levels"] if lv["level"] == 1)
        self.n_up = n_hat + 2.0 * math.sqrt(sigma2 * math.log(3.0 / self.delta))
        # Descent threshold: post-processing of the noisy hierarchy (§6), set for utility: nodes above
        # n̂/(2k) (at most 2k per level when estimates are accurate); final cut n̂/k - noise bound.
        k = self.k
        tau_desc = max(n_hat / (2 * k), noise_bound)
        leaves = noisy.heavy_hitters(tau_desc, max_nodes=max(64, 16 * k)) if n_hat > 0 else []
        self.cut = n_hat / k - noise_bound
        self._cands = [(int(np.uint64(x).astype(np.int64)), e) for x, e in leaves if e > self.cut]
        self._meta = {
            "route": "sketch",
            "privacy_unit": "one stream element",
            "rho": self.rho, "epsilon_sketch": self.epsilon_sketch, "delta_zcdp": self.delta_zcdp,
            "noise_bound": noise_bound, "descent_threshold": tau_desc, "final_cut": self.cut,
            "width": noisy.width, "depth": noisy.depth, "universe_bits": 64,
            "sigma2": priv.get("sigma2"), "assumes_public_length": False, "length": "private",
            "length_source": "the noisy total of the sketch (post-processing, no budget)",
            "n_used": n_hat, "neighbours": "add_remove", "epsilon_requested": self.epsilon,
            "delta_requested": self.delta, "reproducible_not_secret": self.seed is not None,
        }
        if self.strings:
            # docs/privacy.md §Sketch route, Collisions: the bound reads the noisy n_up; when n_up < n
            # (probability <= δ/3) the route may run with P(collision) above the bound, and otherwise
            # P(collision) <= n_up²/2^129 <= δ/3, so the collision term stays <= δ/3 either way and the
            # refusal is post-processing.
            self.delta_fingerprint = fingerprint_delta(self.n_up)
            if self.delta_fingerprint > self.delta / 3:
                raise ParameterError(
                    f"fingerprint collisions (probability <= n_up^2/2^{FINGERPRINT_BITS + 1} = "
                    f"{self.delta_fingerprint:.3g}, from the noisy length) exceed delta/3; raise delta to at least "
                    f"{3 * self.delta_fingerprint:.3g} or use route='counters'"
                )
        return sorted(fp for fp, _ in self._cands)

    def release(self, found: Mapping[tuple[int, int], tuple[int, int, Any]] | None = None) -> Release:
        """The release: int keys are their own leaves (post-processing of the noisy sketch); strings
        go through :func:`lookup_labels` with ``found[(φ₁, φ₂)] = (rows, distinct labels, a label)``
        for the 128-bit fingerprints whose φ₁ is a candidate.

        :param found: string keys: (φ₁, φ₂) -> (rows, distinct labels, a label) of the lookup; unused for int keys
        """
        meta = dict(self._meta)
        if not self.strings:
            items = sorted(self._cands, key=lambda kv: (-kv[1], kv[0]))
            meta["labels"] = "int64 keys are their own leaves: the release is post-processing of the noisy sketch"
            return mechanism_release(items, threshold=self.cut, epsilon=self.epsilon_total, delta=self.delta_zcdp,
                                     mechanism=self.mechanism, n=self.n_hat, metadata=meta, rho=self.rho)
        d_l = self.delta / 3
        num, den = _core.release.laplace_scale(1, self.epsilon_lookup)  # the lookup's noise (lookup_labels)
        items, tau_l, threshold = lookup_labels([fp for fp, _ in self._cands], found or {}, epsilon=self.epsilon_lookup,
                                                delta=d_l, n_hat=self.n_hat, k=self.k,
                                                rng=_seeds.rng(self.seed, "lookup")[0])
        meta.update({"labels": "lookup pass: label released iff its exact count + DLap(1/epsilon_lookup) >= tau_lookup",
                     "epsilon_lookup": self.epsilon_lookup, "tau_lookup": tau_l, "delta_lookup": d_l,
                     "delta_fingerprint": self.delta_fingerprint, "n_upper": self.n_up,
                     "fingerprint_bits": FINGERPRINT_BITS,
                     "fingerprint": "sketch: xxhash64(salt, key); lookup: (xxhash64(salt, key), xxhash64(salt2, key)); "
                                    "salts drawn per release",
                     "delta_fingerprint_bound": f"n_upper^2/2^{FINGERPRINT_BITS + 1}",
                     # what the intervals read (docs/mechanisms/distributed.md §Accuracy): the lookup's
                     # noise law and the strict integer form of its threshold (v >= tau iff v > ceil(tau) - 1)
                     "lookup_noise": "discrete_laplace", "lookup_noise_param": [int(num), int(den)],
                     "lookup_threshold_strict": math.ceil(threshold) - 1})
        return mechanism_release(items, threshold=threshold, epsilon=self.epsilon_total, delta=self.delta,
                                 mechanism=self.mechanism, n=self.n_hat, metadata=meta, rho=self.rho)

