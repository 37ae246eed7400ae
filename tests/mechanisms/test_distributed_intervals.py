"""Intervals of the distributed releases (docs/mechanisms/distributed.md §Accuracy), checked
empirically with the single-process functions that dpsketch.spark wires: many seeded releases of
data whose true counts are known; the fraction of releases in which EVERY released interval holds
its item's true count must not be significantly below the level (one-sided exact binomial test at
10^-4), and the same runs with the noise part of every interval halved must be caught by that test.
"""

from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np
import pytest

import dpsketch
from dpsketch import distributed as D

from coverage_checks import covered, halved as halved_noise, significantly_below

LEVEL = 0.95
RUNS = 200


def halved_around_value(release) -> list:
    """The intervals halved around the released value (rules conditioned on the released set)."""
    return [(v - (v - lo) // 2, v + (hi - v) // 2) for (_, v), (lo, hi) in zip(release.items, release.intervals)]


def check(rels, truth, narrow) -> tuple[int, int]:
    assert len(rels) >= 150
    assert sum(len(r.items) for r in rels) >= len(rels), "too few items released to test anything"
    hits = sum(covered(r, truth) for r in rels)
    assert not significantly_below(hits, len(rels), LEVEL), f"coverage {hits}/{len(rels)} is below {LEVEL}"
    caught = sum(covered(r, truth, narrow(r)) for r in rels)
    assert significantly_below(caught, len(rels), LEVEL), f"halved intervals not caught: {caught}/{len(rels)}"
    return hits, caught


def exact_stream():
    """32 distinct keys with counts 2000 + 10i (summaries of >= 8 counters per partition hold them
    exactly: the noise part of the intervals is what is tested)."""
    keys = np.repeat(np.arange(32), 2000 + 10 * np.arange(32))
    return keys, Counter(keys.tolist())


def key_partitions(cls, keys, parts: int, capacity: int):
    """One summary per key partition (a key's partition a function of the key alone), fed in key order."""
    out = []
    for p in range(parts):
        s = cls(capacity)
        s.update_many(np.sort(keys[keys % parts == p]))
        out.append(s)
    return out


@pytest.mark.parametrize("cls, extra", [(dpsketch.SpaceSaving, {"cut": None}), (dpsketch.SpaceSaving, {}),
                                        (dpsketch.MisraGries, {}), (dpsketch.SpaceSaving, {"public_length": True}),
                                        (dpsketch.SpaceSaving, {"two_pass": True})])
def test_counters_route_coverage(cls, extra):
    keys, truth = exact_stream()
    parts = key_partitions(cls, keys, 4, 64)
    kw = dict(extra)
    if kw.pop("two_pass", False):
        kw["exact_counts"] = dict(truth)
    rels = [D.release_partitions(parts, k=64, epsilon=0.5, delta=1e-4, seed=s, **kw) for s in range(RUNS)]
    rule = rels[0].metadata["interval"]
    assert rule["coverage"] == "simultaneous" and "256 counters" in rule["noise"]  # 4 partitions x 64
    check(rels, truth, halved_noise)


def test_counters_route_top_k_and_zipf_coverage():
    """SpaceSaving and Misra-Gries err on a Zipf stream: the summary's one-sided error is tested
    (no narrowing: the summary error dominates)."""
    keys = np.random.default_rng(6).zipf(1.3, 20000) % 3000
    truth = Counter(keys.tolist())
    for cls in (dpsketch.SpaceSaving, dpsketch.MisraGries):
        parts = key_partitions(cls, keys, 3, 32)
        rels = [D.release_partitions(parts, k=32, epsilon=0.5, delta=1e-4, seed=s, top_k=5 if s % 2 else None)
                for s in range(RUNS)]
        hits = sum(covered(r, truth) for r in rels)
        assert sum(len(r.items) for r in rels) >= RUNS
        assert not significantly_below(hits, RUNS, LEVEL), f"{cls.__name__}: coverage {hits}/{RUNS}"


@pytest.mark.parametrize("noise, k, cut", [("gaussian", 8, "n/k"), ("laplace", None, None), ("gaussian", None, None)])
def test_exact_route_coverage(noise, k, cut):
    rng = np.random.default_rng(9)
    keys = np.concatenate([np.repeat(np.arange(12), 3 + 4 * np.arange(12)), rng.integers(100, 400, 300)])
    uniq, counts = np.unique(keys, return_counts=True)
    truth = dict(zip(uniq.tolist(), counts.tolist()))
    rels = [D.release_exact_counts(uniq, counts, k=k, cut=cut, noise=noise, epsilon=1.0, delta=1e-5, seed=s)
            for s in range(RUNS)]
    if cut == "n/k":  # the cut reads the values: the union runs over every key above τ before it
        assert any(r.metadata["above_threshold"] > len(r.items) for r in rels)
    check(rels, truth, halved_around_value)


def _fingerprint(salt: int, label: str) -> int:
    """A salted 64-bit fingerprint (a stand-in for Spark's xxhash64: the route reads only the values)."""
    return int.from_bytes(hashlib.sha256(salt.to_bytes(8, "little") + label.encode()).digest()[:8], "little",
                          signed=True)


def _sketch_route_release(labels: list, counts: list, seed: int):
    """What dpsketch.spark's sketch route does for string keys, on one machine."""
    route = D.SketchRoute(k=10, epsilon=2.0, delta=1e-6, strings=True, seed=seed)
    fp1 = np.array([_fingerprint(route.salt, x) for x in labels], dtype=np.int64)
    sk = route.prototype(width=256, depth=3)
    sk.update_many(np.repeat(fp1, counts).view(np.uint64))
    cands = set(route.candidates(sk))
    found = {(int(f1), _fingerprint(route.salt2, x)): (c, 1, x) for f1, x, c in zip(fp1, labels, counts)
             if int(f1) in cands}
    return route.release(found)


def test_sketch_route_lookup_coverage():
    labels = [f"item{i}" for i in range(40)]
    counts = [400 + 40 * i if i < 10 else 5 for i in range(40)]
    truth = dict(zip(labels, counts))
    rels = [_sketch_route_release(labels, counts, s) for s in range(150)]
    assert rels[0].metadata["interval"]["summary_error"].startswith("none")
    check(rels, truth, halved_around_value)


def test_sketch_route_int_keys_state_why_there_is_no_interval():
    route = D.SketchRoute(k=5, epsilon=1.0, delta=1e-6, strings=False, seed=1)
    sk = route.prototype(width=64, depth=2)
    sk.update_many(np.repeat(np.arange(5, dtype=np.uint64), 500))
    route.candidates(sk)
    rel = route.release()
    assert rel.intervals is None and rel.metadata["interval"]["coverage"] == "none"
    assert "collision" in rel.metadata["interval"]["reason"]


def test_windows_carry_the_counters_route_intervals():
    keys, _ = exact_stream()
    parts = {0: list(enumerate(key_partitions(dpsketch.SpaceSaving, keys, 2, 64))), 2: []}
    rels = D.release_windows(parts, first=0, last=2, period_ns=10**9, origin_ns=0, partitions=2,
                             empty=lambda: dpsketch.SpaceSaving(64), k=64, epsilon=1.0, delta=1e-6, seed=3)
    assert [r.interval_level for r in rels] == [0.95] * 3
    assert all(r.intervals is not None and len(r.intervals) == len(r.items) for r in rels)
    assert len(rels[0].items) == 32 and rels[1].items == []


def test_unit_quantile_intervals_cover_the_kept_rows():
    """The unit-level quantiles (the Spark route's mechanism, release_unit_quantiles) carry the
    noisy hierarchy's rank intervals: the true rank range, among the rows the per-unit bound kept,
    of every released value meets its interval (simultaneously)."""
    from dpsketch.mechanisms.unit_level import bound_rows_per_unit, unit_quantiles

    rng = np.random.default_rng(12)
    values, ids = rng.integers(0, 256, 3000), rng.integers(0, 400, 3000)
    qs = [0.1, 0.5, 0.9]
    hits = 0
    for s in range(150):
        rel = unit_quantiles(values, ids, qs, max_rows_per_unit=3, universe_bits=8, rho=0.5, seed=s)
        kept = np.sort(values[bound_rows_per_unit(values, ids, max_rows_per_unit=3, seed=s)])
        below = np.searchsorted(kept, rel.values(), side="left")
        upto = np.searchsorted(kept, rel.values(), side="right")
        hits += all(b <= hi and u >= lo for b, u, (lo, hi) in zip(below, upto, rel.intervals))
    assert not significantly_below(hits, 150, LEVEL), f"coverage {hits}/150"
    wide = unit_quantiles(values, ids, qs, max_rows_per_unit=3, universe_bits=16, rho=0.5, seed=1)
    assert wide.intervals is None and "every level exact" in wide.metadata["interval"]["reason"]
