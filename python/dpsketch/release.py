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

__all__ = ["Release", "ReleaseBudgetError", "check_privacy_params", "make_rng"]


_INT_META = {"k", "capacity", "gamma", "t", "width", "depth", "noisy_cells", "l1_sensitivity", "max_stream_length", "length_t"}


class ReleaseBudgetError(RuntimeError):
    """Raised when a summary that was already released is released again without opting in."""


@dataclass(frozen=True)
class Release:
    """A differentially private heavy-hitter release.

    items      -- list of (key, noisy value), noisy value descending (ties by key)
    threshold  -- released values are > threshold (>= for PMG; see metadata['threshold_inclusive'])
    epsilon    -- total ε of this release (including the length budget in rigorous mode)
    delta      -- total δ
    rho        -- zCDP ρ where the mechanism is zCDP, else None
    mechanism  -- 'PMG', 'DPSS', 'SketchHeavyHitters[countmin]', ...
    n          -- the stream length the release used (n̂, a noisy length, in rigorous mode)
    metadata   -- every parameter and derived constant (γ, τ, d, w, envelope terms, rounding of ε,
                  assumes_public_length, reproducible_not_secret, release_index, ...)
    """

    items: list
    threshold: float
    epsilon: float
    delta: float
    mechanism: str
    n: float
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
            f"delta={self.delta:g}, threshold={self.threshold:.6g}, n={self.n:g}{seeded})"
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


def build_release(raw, *, mechanism, epsilon, delta, n_public, seeded, extra, length_epsilon=None, length_delta=0.0):
    """Turn the native (items, threshold, inclusive, metadata) tuple into a Release."""
    items, threshold, inclusive, meta = raw
    meta = {k: int(v) if k in _INT_META and float(v).is_integer() else v for k, v in meta.items()}
    meta["assumes_public_length"] = bool(meta.get("assumes_public_length", 1))
    meta["threshold_inclusive"] = bool(inclusive)
    meta["reproducible_not_secret"] = bool(seeded)
    meta["epsilon_requested"] = epsilon
    meta.update(extra)
    total_eps = meta["epsilon_used"] + (meta.get("length_epsilon") or 0.0)
    total_delta = delta + (length_delta if length_epsilon is not None else 0.0)
    n_used = meta.get("n_used", n_public)
    return Release(
        items=items,
        threshold=threshold,
        epsilon=total_eps,
        delta=total_delta,
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


def check_length_params(length_epsilon, length_delta, delta):
    if length_epsilon is None:
        return None, 0.0
    ld = delta if length_delta is None else length_delta
    le, ld = check_privacy_params(length_epsilon, ld, name="length_epsilon", delta_name="length_delta")
    return le, ld
