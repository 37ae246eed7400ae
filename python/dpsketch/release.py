"""The shared release interface: every private mechanism returns a :class:`Release`.

Items are ``(key, noisy value)`` pairs sorted by noisy value (descending; ties by key) -- never by
true count. Only labels that passed the threshold appear anywhere in a Release (docs/algorithms.md §0).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from . import _core

__all__ = ["Release", "ReleaseBudgetError", "check_privacy_params", "make_rng", "calibrate"]


_INT_META = {"k", "capacity", "gamma", "t", "width", "depth", "noisy_cells", "l1_sensitivity", "max_stream_length", "length_t"}


class ReleaseBudgetError(RuntimeError):
    """Raised when a summary that was already released is released again without opting in."""


@dataclass(frozen=True)
class Release:
    """A differentially private heavy-hitter release.

    :ivar items: list of (key, noisy value), noisy value descending (ties by key)
    :ivar threshold: released values are > threshold (>= for PMG; see metadata['threshold_inclusive'])
    :ivar epsilon: total ε of this release: at most the ε asked for (the length's share included)
    :ivar delta: total δ, at most the δ asked for
    :ivar rho: zCDP ρ where the mechanism is zCDP, else None
    :ivar mechanism: 'PMG', 'DPSS', 'SketchHeavyHitters[countmin]', ...
    :ivar n: the stream length the release used: the noisy n̂ (default), the public n
                  (``public_length=True``), or None when the mechanism reads no length
    :ivar metadata: the guarantee record (privacy_unit, neighbours, length, epsilon/delta requested
                  and of the mechanism proper) and every parameter and derived constant (γ, τ, d,
                  w, envelope terms, reproducible_not_secret, release_index, ...)
    """

    items: list
    threshold: float
    epsilon: float
    delta: float
    mechanism: str
    n: float | None
    metadata: dict = field(default_factory=dict)
    rho: float | None = None

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def keys(self) -> list:
        return [k for k, _ in self.items]

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "rho": self.rho,
            "threshold": self.threshold,
            "n": self.n,
            "items": [[k, v] for k, v in self.items],
            "metadata": dict(self.metadata),
        }

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    def to_pandas(self):
        """DataFrame with columns key, noisy_value (pandas required); release info in ``.attrs``."""
        import pandas as pd

        df = pd.DataFrame(self.items, columns=["key", "noisy_value"])
        df.attrs.update({k: v for k, v in self.to_dict().items() if k != "items"})
        return df

    def __repr__(self) -> str:
        seeded = ", reproducible_not_secret=True" if self.metadata.get("reproducible_not_secret") else ""
        return (
            f"Release(mechanism={self.mechanism!r}, items={len(self.items)}, epsilon={self.epsilon:g}, "
            f"delta={self.delta:g}, threshold={self.threshold:.6g}{seeded})"
        )


def check_privacy_params(epsilon, delta, *, name="epsilon", delta_name="delta"):
    """Validate ε > 0 (finite) and δ in (0, 1); return them as floats."""
    for nm, v in ((name, epsilon), (delta_name, delta)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) and not hasattr(v, "__float__"):
            raise TypeError(f"{nm} must be a number, got {type(v).__name__}")
    e, d = float(epsilon), float(delta)
    if not math.isfinite(e) or e <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {epsilon!r}")
    if e > 2**31 - 1:
        raise ValueError(f"{name} must be below 2**31, got {epsilon!r}")
    if e < 2**-32:
        raise ValueError(f"{name} must be at least 2**-32 (it is rounded down to a multiple of 2**-32), got {epsilon!r}")
    if not (0 < d < 1):
        raise ValueError(f"{delta_name} must be in (0, 1), got {delta!r}")
    return e, d


def make_rng(seed):
    """A fresh generator per release: OS-keyed ChaCha20, or seeded (reproducible, NOT secret)."""
    if seed is None:
        return _core.noise.SecureRng(), False
    from ._validation import check_int

    s = check_int("seed", seed, 0, 2**64 - 1)
    return _core.noise.SecureRng(s), True


PRIVACY_UNIT = "one stream element"


def calibrate(epsilon, delta, need, *, public_length=False, length_epsilon=None, length_delta=None) -> dict:
    """How a release spends the caller's (ε, δ) (docs/privacy.md §Stream length; the arithmetic is
    the C++ core's ``calibration.hpp``). ``need``: what the mechanism reads of the stream length n --
    ``"none"``, ``"estimate"`` (a post-processing cut n̂/k) or ``"bounds"`` (an upper bound in a
    privacy-relevant threshold). By default n is private: a share of (ε, δ) buys n̂ = n + DLap(1/ε_n)
    (``length_epsilon``, default ε/10; ``length_delta``, default δ/10, when bounds are needed).
    ``public_length=True`` treats n as a fixed public parameter: neighbours become replace-one and the
    mechanism runs at (ε/2, δ/(1 + e^{ε/2})), so the reported (ε, δ) hold for that relation."""
    eps, dlt = check_privacy_params(epsilon, delta)
    if not isinstance(public_length, bool):
        raise TypeError(f"public_length must be True or False, got {type(public_length).__name__}")
    if public_length and (length_epsilon is not None or length_delta is not None):
        raise ValueError("length_epsilon/length_delta price a private length; they cannot be combined with public_length=True")
    le = ld = 0.0
    if length_epsilon is not None:
        le, _ = check_privacy_params(length_epsilon, 0.5, name="length_epsilon")
        if not le < eps:
            raise ValueError(f"length_epsilon must be below epsilon (it is carved out of it), got {length_epsilon!r} >= {epsilon!r}")
    if length_delta is not None:
        _, ld = check_privacy_params(1.0, length_delta, delta_name="length_delta")
        if not ld < dlt:
            raise ValueError(f"length_delta must be below delta (it is carved out of it), got {length_delta!r} >= {delta!r}")
    return dict(_core.release.calibrate(eps, dlt, need, public_length, le, ld))


def make_length(cal: dict, n: int, rng):
    """The length as the release uses it: unused, the public n, or n̂ drawn from ``rng`` now."""
    if cal["length"] == "unused":
        return _core.release.Length.unused()
    if cal["length"] == "public":
        return _core.release.Length.fixed(n)
    return _core.release.Length.noisy(n, cal["length_epsilon"], cal["length_delta"], rng)


def privacy_record(cal: dict, *, epsilon_requested, delta_requested) -> dict:
    """The metadata every release carries about its guarantee (docs/privacy.md §Model)."""
    return {
        "privacy_unit": PRIVACY_UNIT,
        "neighbours": cal["neighbours"],
        "length": cal["length"],
        "assumes_public_length": cal["length"] == "public",
        "epsilon_requested": epsilon_requested,
        "delta_requested": delta_requested,
        "epsilon_mechanism": cal["epsilon_mechanism"],
        "delta_mechanism": cal["delta_mechanism"],
    }


def build_release(raw, *, mechanism, cal, epsilon, delta, seeded, extra):
    """Turn the native (items, threshold, inclusive, metadata) tuple into a Release whose ε and δ
    are the totals of ``cal`` (never above the request)."""
    items, threshold, inclusive, meta = raw
    meta = {k: int(v) if k in _INT_META and float(v).is_integer() else v for k, v in meta.items()}
    meta.update(privacy_record(cal, epsilon_requested=epsilon, delta_requested=delta))
    meta["threshold_inclusive"] = bool(inclusive)
    meta["reproducible_not_secret"] = bool(seeded)
    meta.update(extra)
    n_used = meta.get("n_used")
    return Release(
        items=items,
        threshold=threshold,
        epsilon=cal["epsilon_total"],
        delta=cal["delta_total"],
        mechanism=mechanism,
        n=n_used,
        metadata=meta,
    )


class ReleaseGuard:
    """Single-observation bookkeeping (§0): a second release raises unless explicitly allowed."""

    def __init__(self, count: int = 0):
        # The count travels with copies, pickles and bytes (docs/format.md, release-state trailer);
        # in-process copies share one guard, so releasing any copy spends the same budget.
        import threading

        self.count = count
        self._lock = threading.Lock()  # copies with their own object locks may release concurrently

    def next(self, owner: str, allow_repeat: bool) -> dict:
        with self._lock:
            if self.count and not allow_repeat:
                raise ReleaseBudgetError(
                    f"this {owner} was already released {self.count} time(s) and its privacy budget is spent; "
                    "pass allow_repeat=True to release again and accept the composed privacy loss"
                )
            self.count += 1
            return {"release_index": self.count, "composed_with_previous_releases": self.count > 1}


