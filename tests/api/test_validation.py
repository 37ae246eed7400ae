"""Argument and key validation: bad parameters and keys raise clear ValueError / TypeError /
OverflowError, a rejected batch changes nothing, and reprs never show keys."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsketch import CountMin, CountSketch, MisraGries, SpaceSaving, _core
from dpsketch._seeds import derive_seed

MAX_CAP = _core.MAX_CAPACITY
COUNTERS = [MisraGries, SpaceSaving]
SKETCHES = [CountMin, CountSketch]


def make(cls, **kw):
    return cls(5, **kw) if cls in COUNTERS else cls(16, 3, seed=1, **kw)


ALL = COUNTERS + SKETCHES


# ---------------------------------------------------------------------------------------------
# parameters
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", COUNTERS)
@pytest.mark.parametrize("bad", [0, -1, 2.5, math.nan, math.inf, -math.inf, MAX_CAP + 1, 2**64, np.int64(0)])
def test_bad_capacity_is_value_error(cls, bad):
    with pytest.raises(ValueError, match="capacity") as e:
        cls(bad)
    assert str(MAX_CAP) in str(e.value)  # says what to pass


@pytest.mark.parametrize("cls", COUNTERS)
@pytest.mark.parametrize("bad", [True, False, "5", None, b"5", [5], 5j])
def test_capacity_of_wrong_type_is_type_error(cls, bad):
    with pytest.raises(TypeError, match="capacity"):
        cls(bad)


@pytest.mark.parametrize("cls", COUNTERS)
def test_capacity_accepted_forms(cls):
    for ok, want in ((1, 1), (3.0, 3), (np.int32(7), 7), (np.uint64(9), 9)):
        assert cls(ok).capacity == want
    with pytest.raises(ValueError, match="capacity"):
        cls(capacity=-5)


@pytest.mark.parametrize("cls", SKETCHES)
@pytest.mark.parametrize("param", ["width", "depth"])
@pytest.mark.parametrize("bad", [0, -1, -(2**70), 2.5, math.nan, math.inf])
def test_bad_shape_is_value_error(cls, param, bad):
    kw = {"width": 16, "depth": 3, "seed": 1, param: bad}
    with pytest.raises(ValueError, match=param):
        cls(**kw)


@pytest.mark.parametrize("cls", SKETCHES)
def test_shape_limits(cls):
    with pytest.raises(ValueError, match="depth"):
        cls(16, _core.MAX_DEPTH + 1, seed=1)
    with pytest.raises(ValueError, match="width"):
        cls(2**31 + 1, 1, seed=1)
    with pytest.raises(ValueError, match="cells"):
        cls(2**21, 255, seed=1)  # too many cells
    with pytest.raises(ValueError, match="cells"):
        cls(_core.MAX_CELLS // 2 + 1, 2, seed=1)
    for param in ("width", "depth"):
        for bad in (True, "3", None):
            kw = {"width": 16, "depth": 3, "seed": 1, param: bad}
            with pytest.raises(TypeError, match=param):
                cls(**kw)
    s = cls(1, 1, hash_seed=0)
    assert (s.width, s.depth, s.hash_seed) == (1, 1, 0)
    with pytest.raises(ValueError, match="not both"):
        cls(1, 1, seed=0, hash_seed=0)


@pytest.mark.parametrize("cls", SKETCHES)
def test_seed_range(cls):
    for bad in (-1, 2**64, 2**100, 1.5, math.nan, math.inf):
        with pytest.raises(ValueError, match="seed"):
            cls(8, 2, seed=bad)
    for bad in ("1", True, b"1", [1]):
        with pytest.raises(TypeError, match="seed"):
            cls(8, 2, seed=bad)
    for ok in (0, 2**64 - 1, np.uint64(2**64 - 1), 12.0):
        # the one seed rule (docs/privacy.md §Seeds): the hash seed is derived, never the user seed itself
        assert cls(8, 2, seed=ok).hash_seed == derive_seed(int(ok), "hash") != int(ok)
        assert cls(8, 2, hash_seed=ok).hash_seed == int(ok)
    # seed=None draws a fresh seed: two sketches almost surely differ.
    assert len({cls(8, 2).hash_seed for _ in range(5)}) > 1


@pytest.mark.parametrize("cls", ALL)
def test_bad_key_type_argument(cls):
    for bad in ("float", "bytes", float, bytes, 1, "INT"):
        with pytest.raises(ValueError, match="key_type"):
            make(cls, key_type=bad)
    assert make(cls, key_type=str).key_type == "str"
    assert make(cls, key_type=int).key_type == "int"


def test_native_constructors_validate_too():
    with pytest.raises(ValueError, match="capacity"):
        _core.MisraGriesInt(0)
    with pytest.raises(ValueError, match="capacity"):
        _core.SpaceSavingStr(MAX_CAP + 1)
    with pytest.raises(ValueError, match="depth"):
        _core.CountMinInt(8, 0, 1)
    with pytest.raises(ValueError, match="cells"):
        _core.CountSketchStr(2**21, 255, 1)


# ---------------------------------------------------------------------------------------------
# keys
# ---------------------------------------------------------------------------------------------


def snapshot(s):
    return (s.n, s.key_type, s.to_bytes())


@pytest.mark.parametrize("cls", ALL)
def test_mixing_key_types_is_type_error(cls):
    s = make(cls)
    s.update(1)
    for bad in ("a", ["a"], np.array(["a"]), ("a", "b")):
        with pytest.raises(TypeError):
            s.update(bad) if isinstance(bad, str) else s.update_many(bad)
    with pytest.raises(TypeError):
        s.estimate("a")
    t = make(cls)
    t.update("a")
    for bad in (1, [1], np.array([1]), np.array([1], dtype=object)):
        with pytest.raises(TypeError):
            t.update(bad) if isinstance(bad, int) else t.update_many(bad)
    with pytest.raises(TypeError):
        t.estimate(1)
    assert s.n == 1 and t.n == 1


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("fill", ["empty", "int", "str"])
def test_rejected_batches_change_nothing(cls, fill):
    pa = pytest.importorskip("pyarrow")
    s = make(cls)
    if fill == "int":
        s.update_many(np.arange(50) % 7)
    elif fill == "str":
        s.update_many([f"k{i % 7}" for i in range(50)])
    before = snapshot(s)
    good_int = list(range(200))
    good_str = [f"g{i}" for i in range(200)]
    bad_batches = [
        good_int + ["a"],
        good_int + [True],
        good_int + [2**63],
        good_int + [1.0],
        good_int + [None],
        [-1, 2**63],
        np.array(good_int + [2**64 - 1], dtype=np.uint64),
        np.array(good_int + [2**65], dtype=object),
        np.array(good_int + ["x"], dtype=object),
        np.arange(10, dtype=np.float64),
        np.array([True, False]),
        np.zeros((3, 2), dtype=np.int64),
        np.array([["a", "b"]]),
        [[1, 2], [3, 4]],
        good_str + [1],
        good_str + [None],
        good_str + [b"bytes"],
        good_str + ["lone \ud800 surrogate"],
        np.array(good_str + ["lone \udc00 surrogate"]),
        np.array(good_str + [7], dtype=object),
        pa.chunked_array([pa.array(good_str), pa.array(["x", None])]),
        pa.chunked_array([pa.array(good_int), pa.array([1, None])]),
        pa.array([1.5, 2.5]),
        pa.array([True]),
        pa.array([2**63], type=pa.uint64()),
        "a string",
        b"some bytes",
    ]
    for batch in bad_batches:
        with pytest.raises((TypeError, ValueError, OverflowError)):
            s.update_many(batch)
        assert snapshot(s) == before, repr(batch)[:80]
    for item in (True, np.bool_(False), 1.0, 2**63, -(2**63) - 1, None, b"b", "lone \ud800", [1], (1,)):
        with pytest.raises((TypeError, ValueError, OverflowError)):
            s.update(item)
        assert snapshot(s) == before, repr(item)
    # Still accepts good keys of its type afterwards (or either type when still empty).
    s.update("ok" if fill == "str" else 3)
    assert s.n == before[0] + 1


@pytest.mark.parametrize("cls", ALL)
def test_specific_key_errors(cls):
    s = make(cls)
    for bad in (1.5, 1.0, None, b"x", True, np.bool_(True), [1], object()):
        with pytest.raises(TypeError):
            s.update(bad)
    for bad in (np.arange(3, dtype=np.float64), np.arange(3, dtype=np.float32), np.array([True]), [1, True], [1, 1.0]):
        with pytest.raises(TypeError):
            s.update_many(bad)
    for bad in (2**63, -(2**63) - 1, 2**64, 10**30):
        with pytest.raises(OverflowError):
            s.update(bad)
    for bad in ([2**63], [0, 2**63], [-1, 2**63], [1, -(2**63) - 1], np.array([2**63], dtype=np.uint64),
                np.array([1, 2**64], dtype=object)):
        with pytest.raises(OverflowError):
            s.update_many(bad)
    for bad in (np.zeros((2, 2), dtype=np.int64), np.array([["a"]]), np.zeros((1, 1), dtype=object),
                [[1], [2]], [("a",)], [np.arange(2)]):
        with pytest.raises(ValueError):
            s.update_many(bad)
    assert s.n == 0 and s.key_type is None
    # The int64 range is accepted exactly.
    s.update_many([2**63 - 1, -(2**63)])
    s.update(np.uint64(2**63 - 1))
    assert s.n == 3 and s.key_type == "int"
    if cls in COUNTERS:
        assert s.estimate(2**63 - 1) == 2 and s.estimate(-(2**63)) == 1


def test_pyarrow_key_errors():
    pa = pytest.importorskip("pyarrow")
    s = SpaceSaving(4)
    with pytest.raises(OverflowError):
        s.update_many(pa.array([1, 2**63], type=pa.uint64()))
    with pytest.raises(ValueError, match="null"):
        s.update_many(pa.array(["a", None]))
    with pytest.raises(ValueError, match="null"):
        s.update_many(pa.array([1, None]))
    with pytest.raises(TypeError):
        s.update_many(pa.array([1.5]))
    assert s.n == 0 and s.key_type is None


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("key_type", ["int", "str"])
def test_key_type_argument_fixes_type_before_first_update(cls, key_type):
    s = make(cls, key_type=key_type)
    assert s.key_type == key_type
    other_one, other_batch = (1, np.array([1, 2])) if key_type == "str" else ("a", np.array(["a"]))
    with pytest.raises(TypeError):
        s.update(other_one)
    with pytest.raises(TypeError):
        s.update_many(other_batch)
    with pytest.raises(TypeError):
        s.estimate(other_one)
    assert s.n == 0 and s.key_type == key_type
    s.update("x" if key_type == "str" else 5)
    assert s.n == 1
    # Without key_type the type is open until the first update.
    t = make(cls)
    assert t.key_type is None
    assert t.estimate("anything") == 0 and t.estimate(1) == 0
    t.update_many([])
    assert t.key_type is None
    t.update("s")
    assert t.key_type == "str"


# ---------------------------------------------------------------------------------------------
# reprs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", ALL)
def test_repr_never_shows_keys(cls):
    import copy
    import pickle

    secret, secret_int = "SECRETKEY123", 987654321987
    s = make(cls)
    s.update_many([secret] * 10 + ["other"])
    t = make(cls)
    t.update_many([secret_int] * 10 + [5])
    for obj in (s, t, pickle.loads(pickle.dumps(s)), copy.copy(t), type(s).from_bytes(s.to_bytes())):
        for text in (repr(obj), str(obj), format(obj), f"{obj!r}"):
            assert "SECRETKEY" not in text and str(secret_int) not in text
            assert type(obj).__name__ in text
    assert "n=11" in repr(s) and "key_type='str'" in repr(s)
