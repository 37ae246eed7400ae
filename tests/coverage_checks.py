"""The empirical coverage checks the interval tests share (tests/api/test_intervals.py,
tests/mechanisms/test_distributed_intervals.py): whether a release's intervals hold the true
counts, whether a coverage is significantly below its level, and the intervals with the noise
half-width halved (a miscalibrated copy the tests must catch)."""

from __future__ import annotations

import math


def _binom_cdf(k: int, n: int, p: float) -> float:
    """P(Binom(n, p) <= k), summed exactly."""
    return math.fsum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


def significantly_below(hits: int, runs: int, level: float) -> bool:
    """True if `hits` of `runs` is implausible for a coverage >= level (one-sided, p < 1e-4)."""
    return _binom_cdf(hits, runs, level) < 1e-4


def covered(release, truth, intervals=None) -> bool:
    """Every released key's true count lies in its interval (``intervals``: the release's own by default)."""
    ivs = release.intervals if intervals is None else intervals
    assert ivs is not None and len(ivs) == len(release.items)
    return all(lo <= truth[k] <= hi for (k, _), (lo, hi) in zip(release.items, ivs))


def halved(release) -> list:
    """The release's intervals with the noise half-width s halved on both sides (the summary's error kept)."""
    s = release.metadata["interval"]["noise_halfwidth"]
    h = s // 2
    return [(lo + (s - h), hi - (s - h)) for lo, hi in release.intervals]
