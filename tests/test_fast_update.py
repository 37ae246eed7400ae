"""The native per-item update path: same results and errors as the Python path, same locking."""

from __future__ import annotations

import copy
import pickle
import threading

import numpy as np
import pytest

import dpsketch as d
from dpsketch import _core

MAKERS = [lambda: d.SpaceSaving(16), lambda: d.MisraGries(16), lambda: d.CountMin(64, 3, seed=2),
          lambda: d.CountSketch(64, 3, seed=2)]


@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize("keys", [np.random.default_rng(1).integers(-50, 50, 3_000),
                                  np.array([f"k{v}" for v in np.random.default_rng(2).integers(0, 60, 3_000)])])
def test_per_item_equals_batch(make, keys):
    one, batch = make(), make()
    for k in keys.tolist():
        one.update(k)
    batch.update_many(keys)
    assert one.to_bytes() == batch.to_bytes()
    assert isinstance(one._fast, _core.FastUpdateState) and one._fast.impl is one._impl
    assert "_impl" not in vars(one) and "_key_type_fixed" not in vars(one)  # one source of truth


def test_unusual_keys_take_the_checked_path():
    s = d.SpaceSaving(8)
    s.update(3)

    class MyInt(int):
        pass

    s.update(np.int64(3))
    s.update(MyInt(3))
    assert s.estimate(3) == 3
    with pytest.raises(OverflowError):
        s.update(2**63)
    with pytest.raises(TypeError, match="bool"):
        s.update(True)
    with pytest.raises(TypeError, match="int keys"):
        s.update("3")
    s.update(item=3)  # keyword calls reach the Python signature
    with pytest.raises(ValueError, match="insertion-only"):
        s.update(3, 4)  # a count goes to the checked path (turnstile counts: linear sketches only)
    assert s.n == 4 and s.estimate(3) == 4
    cm = d.CountMin(64, 3, seed=1)
    cm.update("a")
    cm.update("a", 5)
    cm.update("a", count=-2)
    assert cm.estimate("a") == 4 and cm.n == 4


def test_subclass_overrides_keep_their_checks():
    p = d.PrivateCountMin(64, 3, epsilon=1.0, seed=1)
    p.update(1)
    pub = p.release().sketch
    with pytest.raises(RuntimeError):
        pub.update(1)  # its own update() (read-only checks) stays in charge
    assert type(p).update is not d.SpaceSaving.update


def test_update_on_a_temporary_and_bound_before_first_use():
    with pytest.raises(TypeError):
        d.CountMin(8, 2, seed=1).update(1, 1.5)
    d.SpaceSaving(4).update("x")  # the object dies right after the attribute lookup: fine
    s = d.SpaceSaving(4)
    f = s.update
    f("a"); f("a")
    assert s.estimate("a") == 2 and "occurrence" in d.SpaceSaving.update.__doc__


def test_copies_and_pickles_do_not_share_the_fast_path():
    s = d.SpaceSaving(8)
    s.update("a")
    for c in (copy.copy(s), copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        c.update("b")
        assert c.n == 2 and s.n == 1
        c.update("b")
        assert c.estimate("b") == 2 and s.estimate("b") == 0


def test_fast_path_follows_a_replaced_native_structure():
    s = d.SpaceSaving(8)
    s.update(1)
    s._impl = type(s._impl)(8)  # anything that swaps the native object must not be updated behind
    s.update(1)
    assert s.n == 1


def test_key_type_flag_and_structure_live_in_the_fast_state():
    s = d.SpaceSaving(8)
    assert s.key_type is None and s._fast.fixed is False
    s.update("a")  # the first update fixes the key type (Python path), then C takes over
    assert s.key_type == "str" and s._fast.fixed is True and s._fast.impl is s._impl
    with pytest.raises(TypeError, match="str keys"):
        s.update(1)
    with pytest.raises(AttributeError):
        del s._fast.impl
    t = d.SpaceSaving(8, key_type="int")
    t._key_type_fixed = False  # a flag cleared from Python sends updates back to the checked path
    t.update("x")  # ... which may switch the key type while the summary is empty
    assert t.key_type == "str" and t.estimate("x") == 1


def test_a_waiting_update_runs_after_the_holder_releases():
    s = d.SpaceSaving(8)
    s.update(1)
    order = []
    s._lock.acquire()
    t = threading.Thread(target=lambda: (s.update(2), order.append("update")))
    t.start()
    t.join(0.2)
    assert t.is_alive() and s.n == 1  # waits for the lock (with the GIL released)
    order.append("release")
    s._lock.release()
    t.join(5)
    assert not t.is_alive() and order == ["release", "update"] and s.n == 2


def test_concurrent_single_updates_and_batches():
    s = d.SpaceSaving(64)
    s.update(0)
    batch = np.random.default_rng(3).integers(0, 300, 50_000)
    errors = []

    def singles():
        try:
            for i in range(20_000):
                s.update(i % 97)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    def batches():
        try:
            for _ in range(6):
                s.update_many(batch)
                s.items()
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=singles) for _ in range(2)] + [threading.Thread(target=batches) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert s.n == 1 + 2 * 20_000 + 2 * 6 * len(batch)
    assert sum(c for _, c in s.items()) == s.n  # SpaceSaving: counts sum to n exactly


def test_object_lock_is_reentrant_and_checks_the_owner():
    lock = _core.ObjectLock()
    with lock:
        with lock:
            pass
    with pytest.raises(RuntimeError):
        lock.release()


def test_no_reference_cycle_del_frees_at_once():
    import gc
    import weakref

    gc.disable()
    try:
        s = d.CountMin(1 << 12, 4, seed=1)
        s.update("x")
        s.update("y")
        ref = weakref.ref(s)
        del s
        assert ref() is None  # freed by reference counting, without the cycle collector
    finally:
        gc.enable()
