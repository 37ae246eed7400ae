"""Exact-k releases: exactly N items whenever N qualify (docs/privacy.md §Exact-k).

Two selections over a candidate set whose labels a threshold already protects:

- :func:`select_top_k`, the row-level rule (``SpaceSaving.release(top_k=N)``, ``MisraGries.release(top_k=N)``,
  ``dpsketch.heavy_hitters(..., top_k=N)``): of the items the DPSS or PMG release passed (the
  *qualified* items), keep the N with the largest noisy values. It reads only the release, so it is
  post-processing and costs nothing; under add/remove-one-event neighbours the released noisy
  counts are already ε-DP with noise of scale 1/ε, far less than a separate Gumbel ranking would add
  (scale N/ε_sel, docs/privacy.md §Exact-k);
- :func:`gumbel_top_k`, one-shot Gumbel (= N peels of the exponential mechanism, Durfee & Rogers
  2019), the user-level exact route's ranking (``unit_heavy_hitters(selection="gumbel", k=N)``),
  where a unit moves up to m counts and the released values' noise grows with m.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _core
from .._validation import check_int
from ..errors import ParameterError

__all__ = ["COUNTERS_PER_ITEM", "check_top_k", "gumbel_top_k", "oversampled_capacity", "select_top_k", "top_k_capacity"]

# Counters per requested item when the summary's capacity is chosen from N. An item qualifies when
# its noisy count clears DPSS's suppression branch n/k̃ + 1 + γ, so the N-th largest count must be
# above about n/k̃: a Zipf(1) stream over a universe U has f_(N) ≈ n/(N·ln U), which 64·N counters
# clear for U up to e^64 (and the retail stream's top 20 by a factor 2.5; docs/privacy.md §Exact-k).
COUNTERS_PER_ITEM = 64
MAX_TOP_K = 2**31


def check_top_k(top_k) -> int:
    """``top_k`` as an int in [1, 2^31] or a ParameterError/TypeError saying what to pass."""
    return check_int("top_k", top_k, 1, MAX_TOP_K)


def top_k_capacity(top_k: int, capacity: int | None = None) -> int:
    """The summary's capacity for an exact-k release of ``top_k`` items: ``capacity`` if given (it
    must be >= top_k: a summary tracks at most capacity items), else COUNTERS_PER_ITEM·top_k, capped
    at the library's maximum."""
    n = check_top_k(top_k)
    if capacity is None:
        return max(n, min(COUNTERS_PER_ITEM * n, _core.MAX_CAPACITY))
    cap = check_int("capacity", capacity, 1, _core.MAX_CAPACITY)
    if cap < n:
        raise ParameterError(f"top_k={n} needs capacity >= {n}: a summary of {cap} counters tracks at most "
                             f"{cap} items (the default capacity is {COUNTERS_PER_ITEM}·top_k)")
    return cap


def oversampled_capacity(target: int, oversample: float) -> int:
    """A summary's capacity for ``target`` items (K of the n/K cut, or N of an exact-k release)
    with ``oversample`` counters per item: max(target, ⌈oversample·target⌉), the 1e-9 absorbing a
    float product that lands just above an integer. The capacity is public; it sets DPSS's k̃ and so
    its threshold (docs/mechanisms/dpss.md)."""
    return max(target, math.ceil(oversample * target - 1e-9))


def select_top_k(raw: tuple, top_k: int) -> tuple:
    """The release tuple (items, threshold, inclusive, metadata) cut to the ``top_k`` items with the
    largest noisy values (ties by key). A function of the released pairs only: post-processing
    (docs/privacy.md §Exact-k). ``metadata['qualified']`` is how many items passed the threshold
    (the length of the release before the cut: a function of the release, not an exact count).

    :param raw: the release tuple (items, threshold, inclusive, metadata) a native release returns
    """
    items, threshold, inclusive, meta = raw
    ranked = sorted(items, key=lambda kv: (-kv[1], kv[0]))
    meta = dict(meta)
    meta.update(top_k=int(top_k), qualified=len(ranked), selection="top_k_by_noisy_value")
    return ranked[:top_k], threshold, inclusive, meta


def gumbel_top_k(scores: np.ndarray, scale: float, k: int, rng) -> list[int]:
    """Indices of the k largest score/scale + Gumbel(1) (one shot; the same distribution as k peels
    of the exponential mechanism ∝ exp(score/scale), Durfee & Rogers 2019). Uniforms come from the
    secure generator (53-bit, never 0 or 1).

    :param scores: the scores to rank
    :param scale: the Gumbel scale (the exponential mechanism's 2Δ/ε)
    :param k: how many indices to return
    :param rng: the noise generator (a ``SecureRng``)
    """
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ParameterError(f"the Gumbel scale must be a positive number, got {scale!r}")
    if len(scores) == 0:
        return []
    raw = np.array([rng.next_u64() for _ in range(len(scores))], dtype=np.uint64)
    uni = ((raw >> np.uint64(11)).astype(np.float64) + 0.5) / 2.0**53
    g = -np.log(-np.log(uni))
    noisy = np.asarray(scores, dtype=np.float64) / scale + g
    return np.argsort(-noisy, kind="stable")[: min(k, len(scores))].tolist()
