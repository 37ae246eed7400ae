"""The native summaries equal the brute-force references after every prefix of many random small
streams: this is what makes the tie rules (part of the privacy proofs) exact."""

import numpy as np
import pytest

from dpsketch import MisraGries, SpaceSaving
from reference import RefMisraGries, RefSpaceSaving

CASES = [(cap, alphabet) for cap in (1, 2, 3, 4, 7) for alphabet in (2, 3, 5, 9, 30)]


@pytest.mark.parametrize("cls,ref_cls", [(SpaceSaving, RefSpaceSaving), (MisraGries, RefMisraGries)])
@pytest.mark.parametrize("cap,alphabet", CASES)
def test_state_equals_reference_after_every_prefix(cls, ref_cls, cap, alphabet, rng):
    for _ in range(12):
        length = int(rng.integers(1, 60))
        # Mix uniform and skewed streams: ties at the minimum are common with small alphabets.
        if rng.random() < 0.5:
            stream = rng.integers(0, alphabet, size=length)
        else:
            stream = np.minimum(rng.zipf(1.5, size=length) - 1, alphabet - 1)
        ours, ref = cls(cap), ref_cls(cap)
        for i, x in enumerate(stream.tolist()):
            ours.update(x)
            ref.update(x)
            assert ours._state() == ref.state(), f"diverged after prefix {i + 1} of {stream.tolist()}"
        assert ours.n == length


@pytest.mark.parametrize("cls,ref_cls", [(SpaceSaving, RefSpaceSaving), (MisraGries, RefMisraGries)])
def test_string_keys_follow_the_same_rules(cls, ref_cls, rng):
    words = ["a", "bb", "ccc", "", "δ", "a" * 40, "zz"]
    for _ in range(30):
        stream = [words[i] for i in rng.integers(0, len(words), size=50)]
        ours, ref = cls(3), ref_cls(3)
        ours.update_many(stream)
        for x in stream:
            ref.update(x)
        assert ours._state() == ref.state()


@pytest.mark.parametrize("cls,ref_cls", [(SpaceSaving, RefSpaceSaving), (MisraGries, RefMisraGries)])
def test_batch_and_single_updates_agree(cls, ref_cls, rng):
    stream = rng.integers(-5, 20, size=2000)
    a, b, ref = cls(6), cls(6), ref_cls(6)
    a.update_many(stream)
    for x in stream.tolist():
        b.update(x)
        ref.update(x)
    assert a._state() == b._state() == ref.state()
