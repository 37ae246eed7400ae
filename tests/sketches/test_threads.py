"""Batch updates release the GIL inside C++; sharing one object between threads must still be safe
(calls on one object serialize) and lose nothing."""

import threading

import numpy as np
import pytest

import dpsketch as d


@pytest.mark.parametrize("make", [lambda: d.SpaceSaving(64), lambda: d.MisraGries(64),
                                  lambda: d.CountMin(256, 4, seed=1), lambda: d.CountSketch(256, 4, seed=1),
                                  lambda: d.PrivateCountMin(256, 4, epsilon=1.0, seed=1)])
def test_concurrent_batches_and_reads(make):
    obj = make()
    rng = np.random.default_rng(0)
    batches = [rng.integers(0, 500, size=20_000) for _ in range(8)]
    errors = []

    def writer(batch):
        try:
            for _ in range(5):
                obj.update_many(batch)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    def reader():
        try:
            for _ in range(200):
                obj.estimate(3)
                obj.to_bytes()
                if hasattr(obj, "items"):
                    obj.items()
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(b,)) for b in batches] + [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert obj.n == 5 * sum(len(b) for b in batches)
    if isinstance(obj, d.CountMin):  # linear: order does not matter, so the result is exact
        ref = d.CountMin(256, 4, seed=1)
        for b in batches:
            for _ in range(5):
                ref.update_many(b)
        assert np.array_equal(ref.cells(), obj.cells())


def test_concurrent_cross_merges_do_not_deadlock():
    a, b = d.CountMin(64, 3, seed=2), d.CountMin(64, 3, seed=2)
    a.update_many(np.arange(100))
    b.update_many(np.arange(100))
    ta = threading.Thread(target=lambda: [a.merge(b) for _ in range(200)])
    tb = threading.Thread(target=lambda: [b.merge(a) for _ in range(200)])
    ta.start(); tb.start()
    ta.join(timeout=60); tb.join(timeout=60)
    assert not ta.is_alive() and not tb.is_alive()
