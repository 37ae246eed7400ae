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


# -- dyadic sketches: obj.update(x) and obj.update(x, count) -----------------------------------


def _dyadic(private, **kw):
    if private:
        return d.PrivateDyadicCountSketch(20, gamma=0.05, rho=1.0, seed=5, **kw)
    return d.DyadicCountSketch(20, gamma=0.05, seed=5, **kw)


@pytest.mark.parametrize("private", [False, True])
def test_dyadic_per_item_int_equals_batch(private):
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.integers(0, 2**20, 3_000), [0, 2**20 - 1, 0, 2**20 - 1]]).astype(np.int64)
    c = rng.integers(-3, 4, len(x))
    c[::2] = 1  # every other item without a count argument: the default of 1
    one, batch = _dyadic(private), _dyadic(private)
    for i, (v, k) in enumerate(zip(x.tolist(), c.tolist())):
        one.update(v) if i % 2 == 0 else one.update(v, k)
    batch.update_many(x, counts=c)
    assert one.to_bytes() == batch.to_bytes()
    assert one._fast.impl is one._impl and "_impl" not in vars(one)
    assert isinstance(type(one).update, _core.FastUpdate)


EDGE_VALUES = [-3.5, 7.25, -0.0, 0.0, float("inf"), float("-inf"), 1e-300, -1e300, 5e-324,
               np.nextafter(7.25, -np.inf), np.nextafter(-3.5, np.inf), np.nextafter(-3.5, -np.inf),
               np.nextafter(7.25, np.inf)]


@pytest.mark.parametrize("private", [False, True])
@pytest.mark.parametrize("bits", [20, 52])
def test_dyadic_per_item_float_equals_batch_at_the_edges(private, bits):
    """Plain floats, numpy float64 (a float subclass) and ints with bounds: the native mapping, the
    Python fallback and the batch mapping put every value, edges included, in the same bucket."""
    rng = np.random.default_rng(4)
    make = (lambda: d.PrivateDyadicCountSketch(bits, gamma=0.05, rho=1.0, seed=5, bounds=(-3.5, 7.25))) if private \
        else (lambda: d.DyadicCountSketch(bits, gamma=0.05, seed=5, bounds=(-3.5, 7.25)))
    v = np.concatenate([rng.uniform(-6, 10, 2_000), rng.uniform(-3.5, 7.25, 2_000), EDGE_VALUES])
    fast, slow, batch = make(), make(), make()
    for i, f in enumerate(v.tolist()):
        fast.update(f if i % 3 else np.float64(f))
        type(slow).update.__wrapped__(slow, f)  # the Python method the fast path falls back to
    batch.update_many(v)
    assert fast.to_bytes() == batch.to_bytes() == slow.to_bytes()
    ints = [-5, -4, -3, 0, 3, 7, 8, 2**53 + 1, -(2**63), 2**63 - 1]
    fast_i, batch_i = make(), make()
    for k in ints:
        fast_i.update(k)
    batch_i.update_many(np.array(ints, dtype=np.int64))
    assert fast_i.to_bytes() == batch_i.to_bytes()


def test_dyadic_per_item_errors_and_no_change():
    s, b = d.DyadicCountSketch(8, seed=1), d.DyadicCountSketch(8, seed=1, bounds=(0.0, 1.0))
    p = d.PrivateDyadicCountSketch(8, rho=1.0, seed=1)
    before = [o.to_bytes() for o in (s, b, p)]
    for obj in (s, p):
        for bad, exc in [(True, TypeError), (np.bool_(True), TypeError), (256, ValueError), (-1, ValueError),
                         (2**64, ValueError), (1.5, TypeError), ("3", TypeError), (None, TypeError)]:
            with pytest.raises(exc):
                obj.update(bad)
        for count, exc in [(True, TypeError), (2**62 + 1, ValueError), ("1", TypeError)]:
            with pytest.raises(exc):
                obj.update(1, count)
    for bad, exc in [(float("nan"), ValueError), (True, TypeError), ("0.5", TypeError), (None, TypeError)]:
        with pytest.raises(exc):
            b.update(bad)
    assert [o.to_bytes() for o in (s, b, p)] == before
    published = p.release().sketch
    with pytest.raises(d.errors.ReadOnlyError):
        published.update(1)
    with pytest.raises(d.errors.ReadOnlyError):
        published.update(1, 2)
    s.update(item=3, count=2)  # keywords take the Python method
    s.update(3, 1.0)  # as does a count the fast path does not take
    assert s.n == 3


def test_dyadic_fast_path_follows_copies_and_restored_objects():
    s = d.DyadicCountSketch(16, gamma=0.05, seed=2)
    s.update(7)
    for other in (copy.copy(s), pickle.loads(pickle.dumps(s)), d.DyadicCountSketch.from_bytes(s.to_bytes())):
        assert other._fast.impl is other._impl and other._impl is not s._impl
        other.update(9)
        assert other.n == 2 and s.n == 1


def test_arrow_string_offsets_read_in_place():
    """A pa.string() array (int32 offsets), sliced or not, counts as the same keys as
    large_string; its offsets go to C++ as they are (int32) and bad ones are refused."""
    pa = pytest.importorskip("pyarrow")
    keys = [f"k{i % 37}" for i in range(5000)] + ["", "é"]
    small = pa.array(keys, type=pa.string()).slice(3, 4000)
    large = pa.array(keys, type=pa.large_string()).slice(3, 4000)
    for make in (lambda: d.SpaceSaving(16), lambda: d.CountMin(256, 4, seed=1)):
        a, b = make(), make()
        a.update_many(small)
        b.update_many(large)
        assert a.to_bytes() == b.to_bytes()
    typed = d.SpaceSaving(8)
    typed.update_many(["a"])
    with pytest.raises(ValueError):
        typed._impl.update_many_utf8(np.frombuffer(b"abc", np.uint8), np.array([0, 2, 1], np.int32))
