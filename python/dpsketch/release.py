"""The shared release protocol: every ``release()`` is keyword-only and returns a :class:`Release`.

A heavy-hitter release holds ``(key, noisy value)`` items sorted by noisy value (descending; ties by
key) -- never by true count; only labels that passed the threshold appear anywhere in it
(docs/algorithms.md §0). A private sketch's release holds the published, read-only sketch in
``sketch`` (queries on it are post-processing) and no items. Either way ``metadata`` is the one
record of what was released and ``guarantee`` its typed summary.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .errors import ReleaseBudgetError
from .calibration import PRIVACY_UNIT, Guarantee, calibrate, check_privacy_params, make_length, privacy_record  # noqa: F401

__all__ = ["Release", "ReleaseBudgetError", "check_privacy_params", "calibrate"]


_INT_META = {"k", "capacity", "gamma", "t", "width", "depth", "noisy_cells", "l1_sensitivity", "max_stream_length", "length_t"}




@dataclass(frozen=True)
class Release:
    """A differentially private release.

    :ivar items: list of (key, noisy value), noisy value descending (ties by key); empty for a
                  sketch release; (q, value) in the order of the levels asked for, for
                  :func:`dpsketch.quantiles`
    :ivar threshold: released values are > threshold (>= for PMG; see metadata['threshold_inclusive']);
                  None for a sketch release
    :ivar epsilon: total ε of this release: at most the ε asked for (the length's share included);
                  None for a ρ-zCDP sketch released without a conversion δ (its guarantee is ``rho``)
    :ivar delta: total δ, at most the δ asked for (0 for pure DP; None with ``epsilon`` None)
    :ivar rho: zCDP ρ where the mechanism is zCDP, else None
    :ivar mechanism: 'PMG', 'DPSS', 'SketchHeavyHitters[countmin]', ...
    :ivar n: the stream length the release used: the noisy n̂ (default), the public n
                  (``public_length=True``), or None when the mechanism reads no length
    :ivar metadata: the guarantee record (privacy_unit, neighbours, length, epsilon/delta requested
                  and of the mechanism proper) and every parameter and derived constant (γ, τ, d,
                  w, envelope terms, reproducible_not_secret, release_index, ...)
    :ivar sketch: the published sketch (read-only; ``to_bytes``, queries) for a sketch release, else None
    """

    items: list
    threshold: float | None
    epsilon: float | None
    delta: float | None
    mechanism: str
    n: float | None
    metadata: dict = field(default_factory=dict)
    rho: float | None = None
    sketch: Any = None

    @property
    def guarantee(self) -> Guarantee:
        """The guarantee as a typed record (privacy unit, neighbours, length handling, ε, δ, ρ,
        seeded, release index), read from this release's metadata."""
        m = self.metadata
        return Guarantee(
            mechanism=self.mechanism,
            privacy_unit=m.get("privacy_unit", PRIVACY_UNIT),
            neighbours=m.get("neighbours", "add_remove"),
            length=m.get("length", "public" if m.get("assumes_public_length") else "unused"),
            epsilon=self.epsilon,
            delta=self.delta,
            rho=self.rho,
            reproducible_not_secret=bool(m.get("reproducible_not_secret", False)),
            release_index=m.get("release_index"),
        )

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def keys(self) -> list:
        return [k for k, _ in self.items]

    def values(self) -> list:
        """The second member of every item: the noisy values (heavy hitters) or the released
        quantile values (``dpsketch.quantiles``, in the order of the levels asked for)."""
        return [v for _, v in self.items]

    def to_dict(self) -> dict[str, Any]:
        """Everything released, JSON-ready; a published sketch as its class name and base64 bytes."""
        out = {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "rho": self.rho,
            "threshold": self.threshold,
            "n": self.n,
            "items": [[k, v] for k, v in self.items],
            "metadata": dict(self.metadata),
        }
        if self.sketch is not None:
            import base64

            out["sketch"] = {"class": type(self.sketch).__name__,
                             "bytes_base64": base64.b64encode(self.sketch.to_bytes()).decode("ascii")}
        return out

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
        if self.sketch is not None:
            g = f"rho={self.rho:g}" if self.epsilon is None else f"epsilon={self.epsilon:g}, delta={self.delta:g}"
            return f"Release(mechanism={self.mechanism!r}, sketch={type(self.sketch).__name__}, {g}{seeded})"
        g = f"rho={self.rho:g}" if self.epsilon is None else f"epsilon={self.epsilon:g}, delta={self.delta:g}"
        t = "" if self.threshold is None else f", threshold={self.threshold:.6g}"
        return f"Release(mechanism={self.mechanism!r}, items={len(self.items)}, {g}{t}{seeded})"


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


def sketch_release(published, metadata: dict) -> Release:
    """The Release of a published private sketch: the sketch itself, its metadata record, and the
    guarantee read from that record (ε and δ of the noise as drawn; ε None for ρ-zCDP without a
    conversion δ)."""
    return Release(items=[], threshold=None, epsilon=metadata.get("epsilon"), delta=metadata.get("delta"),
                   mechanism=metadata["mechanism"], n=None, metadata=metadata, rho=metadata.get("rho"),
                   sketch=published)


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


