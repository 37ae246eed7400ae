"""Intervals on a cumulative Count-Min prefix's point estimates: coverage over seeds, and the
refusals where no rule exists (docs/mechanisms/cumulative.md §Accuracy)."""

from __future__ import annotations

import numpy as np
import pytest

from dpsketch.errors import ParameterTypeError
from dpsketch.time.cumulative import Cumulative

STEPS = 6
RNG = np.random.default_rng(21)
DATA = [RNG.zipf(1.4, 3_000).astype(np.int64) % 400 for _ in range(STEPS)]
ITEMS = list(range(0, 40)) + [10_001, 10_002]  # frequent keys and keys never seen
TRUE = np.bincount(np.concatenate(DATA), minlength=10_003)[ITEMS]


def _intervals(seed, level=0.95, halve=False):
    c = Cumulative(horizon=8, sketch="countmin", width=128, depth=3, hash_seed=1000 + seed, rho=0.2,
                   schedule="binary", seed=seed)
    for d in DATA:
        c.step(d)
    got = c.prefix().estimate_intervals(ITEMS, level=level)
    if halve:  # a miscalibrated copy: a quarter of the width, around the same middle
        got = [(e, (lo + hi) / 2 - (hi - lo) / 8, (lo + hi) / 2 + (hi - lo) / 8) for e, lo, hi in got]
    return got


def _covered(got) -> bool:
    return all(lo <= f <= hi for (_, lo, hi), f in zip(got, TRUE))


def test_prefix_intervals_cover_every_item_at_the_level():
    seeds = range(60)
    misses = sum(not _covered(_intervals(s)) for s in seeds)
    assert misses <= 6, misses  # 0.95 simultaneous: expect <= 3 of 60; the rule is conservative


def test_a_too_narrow_rule_is_caught():
    misses = sum(not _covered(_intervals(s, halve=True)) for s in range(30))
    assert misses >= 10, misses


def test_intervals_hold_the_estimate_and_widen_with_the_level():
    narrow, wide = _intervals(3, level=0.5), _intervals(3, level=0.99)
    for (e1, lo1, hi1), (e2, lo2, hi2) in zip(narrow, wide):
        assert e1 == e2 and lo2 <= lo1 <= hi1 <= hi2 and lo1 >= 0


def test_countsketch_and_dyadic_prefixes_state_none():
    c = Cumulative(horizon=2, sketch="countsketch", width=32, depth=3, rho=0.5)
    c.step(DATA[0])
    with pytest.raises(ParameterTypeError, match="CountSketch"):
        c.prefix().estimate_intervals([1])
