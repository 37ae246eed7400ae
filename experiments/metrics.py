"""Ground truth and the metrics of the two papers' experiments.

Holland (seed 000, §6): recall and precision of the released label set against the true heavy
hitters ``{x : f(x) >= n/k}``; average relative error (ARE) over the *reported* items,
``mean |released value - f(x)| / f(x)``.

Zhao et al. (seed 001, §5): ARE over *all distinct items* of the stream, ``mean |est - f| / f``;
F1 of the estimated top-10 against the true top-10.

Undefined values (recall with no true heavy hitter, precision or ARE with nothing reported) are
NaN, never a made-up 0 or 1; summaries count how many runs had a defined value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Truth", "heavy_hitter_scores", "top_k_f1", "zhao_are", "summarize"]


@dataclass
class Truth:
    """Exact frequencies of a stream: ``keys`` sorted ascending (int64 or numpy str), ``counts``."""

    keys: np.ndarray
    counts: np.ndarray
    n: int

    @classmethod
    def of(cls, stream: np.ndarray) -> "Truth":
        stream = np.asarray(stream)
        if stream.dtype.kind in "iu" and len(stream) and stream.min() >= 0 and stream.max() < 1 << 24:
            counts = np.bincount(stream)
            keys = np.flatnonzero(counts).astype(np.int64)
            return cls(keys, counts[keys].astype(np.int64), len(stream))
        keys, counts = np.unique(stream, return_counts=True)
        return cls(keys, counts.astype(np.int64), len(stream))

    def freq(self, items) -> np.ndarray:
        """True frequency of each of ``items`` (0 for items that never occur)."""
        items = np.asarray(items, dtype=self.keys.dtype if self.keys.dtype.kind in "iu" else None)
        if items.size == 0:
            return np.zeros(0, dtype=np.int64)
        pos = np.searchsorted(self.keys, items)
        pos = np.minimum(pos, len(self.keys) - 1)
        hit = self.keys[pos] == items
        return np.where(hit, self.counts[pos], 0).astype(np.int64)

    def heavy(self, threshold: float) -> np.ndarray:
        """Keys with frequency >= threshold."""
        return self.keys[self.counts >= threshold]

    def top(self, m: int) -> np.ndarray:
        """The m most frequent keys (ties broken by the smaller key)."""
        order = np.lexsort((np.arange(len(self.keys)), -self.counts))
        return self.keys[order[:m]]


def _ratio(num: float, den: float) -> float:
    return num / den if den else math.nan


def heavy_hitter_scores(items, truth: Truth, k: int) -> dict:
    """Holland's metrics for a released list of ``(key, noisy value)`` pairs and target ``k``."""
    keys = [kv[0] for kv in items]
    values = np.array([float(kv[1]) for kv in items], dtype=np.float64)
    f = truth.freq(np.array(keys)) if keys else np.zeros(0, dtype=np.int64)
    threshold = truth.n / k
    heavy = truth.heavy(threshold)
    true_pos = int(np.count_nonzero(f >= threshold))
    # A released key that never occurs has f = 0: a false positive; ARE is undefined for it, so it
    # is left out of the ARE (it still counts against precision).
    occurring = f > 0
    are = float(np.mean(np.abs(values[occurring] - f[occurring]) / f[occurring])) if occurring.any() else math.nan
    return {
        "recall": _ratio(true_pos, len(heavy)),
        "precision": _ratio(true_pos, len(keys)),
        "are": are,
        "n_heavy": int(len(heavy)),
        "n_reported": int(len(keys)),
        "true_positives": true_pos,
    }


def zhao_are(estimates: np.ndarray, truth: Truth) -> float:
    """Mean over all distinct items of |est - f| / f (estimates aligned with ``truth.keys``)."""
    est = np.asarray(estimates, dtype=np.float64)
    return float(np.mean(np.abs(est - truth.counts) / truth.counts))


def top_k_f1(estimated_top, true_top) -> float:
    """F1 of an estimated top-m set against the true top-m set."""
    est, tru = set(np.asarray(estimated_top).tolist()), set(np.asarray(true_top).tolist())
    tp = len(est & tru)
    if tp == 0:
        return 0.0
    p, r = tp / len(est), tp / len(tru)
    return 2 * p * r / (p + r)


def summarize(values) -> dict:
    """Mean and 5th/95th percentiles over the defined (non-NaN) values, plus how many were defined."""
    v = np.asarray([x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))], dtype=np.float64)
    if v.size == 0:
        return {"mean": math.nan, "p5": math.nan, "p95": math.nan, "defined": 0}
    return {
        "mean": float(v.mean()),
        "p5": float(np.percentile(v, 5)),
        "p95": float(np.percentile(v, 95)),
        "defined": int(v.size),
    }
