"""Structural lemmas the privacy proofs rely on, checked on 10^5 random neighbouring pairs each
(X, and X with one element removed). Small alphabets and capacities hit the corner cases.

* SpaceSaving, Holland Cor. 1 (docs/algorithms.md §3): |T ∩ T'| >= k̃ - 2 (when full; in general each
  side has at most 2 labels the other lacks); every label outside the intersection has count
  <= (its structure's minimum) + 1; at most one shared label differs in count, by exactly 1.
* Misra-Gries, Lebeda-Tetek 2023 (docs/algorithms.md §2), with zero-count keys as stored labels and
  absent keys counted as 0: either the count vectors differ in one key by exactly 1, or every
  shared label differs by exactly 1 in the same direction; in both cases each side has at most 2
  labels the other lacks, each with count <= 1 (so up to 4 labels differ in all: docs/privacy.md
  §PMG explains why the release threshold covers that).
"""

import numpy as np

from dpsketch import MisraGries, SpaceSaving

PAIRS = 100_000


def neighbouring_pairs(seed, pairs=PAIRS):
    rng = np.random.default_rng(seed)
    for _ in range(pairs):
        cap = int(rng.integers(1, 6))
        alphabet = int(rng.integers(2, 9))
        length = int(rng.integers(1, 45))
        x = rng.integers(0, alphabet, size=length)
        drop = int(rng.integers(0, length))
        yield cap, x, np.delete(x, drop)


def _state(cls, cap, stream):
    s = cls(cap)
    s.update_many(stream)
    return dict(s._state())


def check_space_saving(cap, x, x_removed):
    space_saving_lemma(cap, _state(SpaceSaving, cap, x), _state(SpaceSaving, cap, x_removed))


def space_saving_lemma(cap, c, c2):
    t, t2 = set(c), set(c2)
    shared = t & t2
    if len(t) == cap and len(t2) == cap:
        assert len(shared) >= cap - 2
    assert len(t - t2) <= 2 and len(t2 - t) <= 2
    if t - t2:
        m = min(c.values())
        assert all(c[y] <= m + 1 for y in t - t2)
    if t2 - t:
        m2 = min(c2.values())
        assert all(c2[y] <= m2 + 1 for y in t2 - t)
    diffs = [c[y] - c2[y] for y in shared if c[y] != c2[y]]
    assert len(diffs) <= 1 and all(abs(d) == 1 for d in diffs)


def check_misra_gries(cap, x, x_removed):
    misra_gries_lemma(_state(MisraGries, cap, x), _state(MisraGries, cap, x_removed))


def misra_gries_lemma(c, c2):
    t, t2 = set(c), set(c2)
    only = (t - t2) | (t2 - t)
    assert len(t - t2) <= 2 and len(t2 - t) <= 2
    assert all(c.get(y, 0) <= 1 and c2.get(y, 0) <= 1 for y in only)
    keys = t | t2
    diff = {y: c.get(y, 0) - c2.get(y, 0) for y in keys}
    nonzero = [d for d in diff.values() if d != 0]
    one_counter = len(nonzero) == 1 and abs(nonzero[0]) == 1
    shared_diffs = {diff[y] for y in t & t2}
    all_shift = len(shared_diffs) <= 1 and shared_diffs <= {1, -1}
    assert one_counter or all_shift, (c, c2)


def _run(check, seed):
    for cap, x, x_removed in neighbouring_pairs(seed):
        try:
            check(cap, x, x_removed)
        except AssertionError as e:
            raise AssertionError(f"lemma fails for capacity={cap}, X={x.tolist()}, X'={x_removed.tolist()}") from e


def test_space_saving_structural_lemma():
    _run(check_space_saving, seed=1)


def test_misra_gries_structural_lemma():
    _run(check_misra_gries, seed=2)


def test_lemma_checks_reject_violations():
    # Guards against vacuous checks: states that break each clause must be rejected.
    import pytest

    bad_ss = [
        (3, {"a": 3, "b": 3, "e": 3}, {"c": 3, "d": 3, "f": 3}),  # no shared labels
        (2, {"a": 1, "b": 3}, {"a": 1, "c": 1}),  # unstable label b with count > min + 1
        (3, {"a": 2, "b": 2, "c": 1}, {"a": 1, "b": 1, "c": 1}),  # two shared counts differ
        (2, {"a": 3, "b": 1}, {"a": 1, "b": 1}),  # shared count differs by 2
    ]
    for cap, c, c2 in bad_ss:
        with pytest.raises(AssertionError):
            space_saving_lemma(cap, c, c2)
    bad_mg = [
        ({"a": 2, "b": 0}, {"a": 2, "c": 2}),  # unstable label with count 2
        ({"a": 1, "b": 0, "c": 0, "d": 0}, {"a": 1}),  # three labels only on one side
        ({"a": 3, "b": 2}, {"a": 2, "b": 3}),  # shifts in both directions
        ({"a": 3, "b": 2}, {"a": 1, "b": 2}),  # one counter differs by 2
    ]
    for c, c2 in bad_mg:
        with pytest.raises(AssertionError):
            misra_gries_lemma(c, c2)
