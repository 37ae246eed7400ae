"""update_many takes the user's own containers (numpy, pandas, polars, pyarrow, lists) and gives
exactly the state the plain numpy path gives; a table of several columns without column= is a TypeError naming the fix; bad keys are
errors that never echo the key."""

from __future__ import annotations

import numpy as np
import pytest

import dpsketch as d

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

RNG = np.random.default_rng(11)
INTS = RNG.zipf(1.3, size=5_000) % 1_000  # skewed, with repeats and evictions at capacity 32
STRS = np.array([f"k{v}" for v in INTS])
MAKERS = [lambda: d.SpaceSaving(32), lambda: d.MisraGries(32), lambda: d.CountMin(64, 3, seed=4)]


def state(obj):
    """Everything observable: bytes (exact structure, including SpaceSaving's recency order)."""
    return obj.to_bytes()


def reference(make, keys):
    obj = make()
    obj.update_many(np.asarray(keys, dtype=np.int64) if keys.dtype.kind in "iu" else keys)
    return state(obj)


def fed(make, container):
    obj = make()
    obj.update_many(container)
    return obj


INT_CONTAINERS = {
    "list": lambda v: v.tolist(),
    "tuple": lambda v: tuple(v.tolist()),
    "numpy int32": lambda v: v.astype(np.int32),
    "numpy uint64": lambda v: v.astype(np.uint64),
    "pandas int64": lambda v: pd.Series(v),
    "pandas Int64 (masked)": lambda v: pd.Series(v, dtype="Int64"),
    "pandas int64[pyarrow]": lambda v: pd.Series(v, dtype="int64[pyarrow]"),
    "pandas index": lambda v: pd.Index(v),
    "pandas categorical": lambda v: pd.Series(v).astype("category"),
    "pyarrow int64": lambda v: pa.array(v),
    "pyarrow int16": lambda v: pa.array(v.astype(np.int16)),
    "pyarrow chunked": lambda v: pa.chunked_array([v[:1000], v[1000:]]),
    "pyarrow dictionary": lambda v: pa.array(v).dictionary_encode(),
}

STR_CONTAINERS = {
    "list": lambda v: v.tolist(),
    "numpy U": lambda v: v,
    "numpy U499": lambda v: v.astype("U499"),
    "numpy object": lambda v: v.astype(object),
    "pandas object": lambda v: pd.Series(v.astype(object)),
    "pandas string[python]": lambda v: pd.Series(v, dtype="string[python]"),
    "pandas string[pyarrow]": lambda v: pd.Series(v, dtype="string[pyarrow]"),
    "pandas large_string[pyarrow]": lambda v: pd.Series(pa.array(v, pa.large_string()), dtype=pd.ArrowDtype(pa.large_string())),
    "pandas categorical": lambda v: pd.Series(v).astype("category"),
    "pyarrow string": lambda v: pa.array(v),
    "pyarrow string sliced": lambda v: pa.array(np.concatenate([["pad"], v]))[1:],
    "pyarrow large_string": lambda v: pa.array(v, pa.large_string()),
    "pyarrow string_view": lambda v: pa.array(v, pa.string_view()),
    "pyarrow chunked string": lambda v: pa.chunked_array([pa.array(v[:7]), pa.array(v[7:])]),
    "pyarrow dictionary": lambda v: pa.array(v).dictionary_encode(),
    "pyarrow chunked dictionary": lambda v: pa.chunked_array([pa.array(v[:99]).dictionary_encode(),
                                                              pa.array(v[99:]).dictionary_encode()]),
}
StringDType = getattr(np.dtypes, "StringDType", None)  # numpy >= 2: variable-width strings
if StringDType is not None:
    STR_CONTAINERS["numpy StringDType"] = lambda v: v.astype(StringDType())
    STR_CONTAINERS["numpy StringDType strided"] = lambda v: np.repeat(v, 2).astype(StringDType())[::2]
needs_stringdtype = pytest.mark.skipif(StringDType is None, reason="numpy < 2 has no StringDType")


@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize("name", sorted(INT_CONTAINERS))
def test_int_containers_equal_numpy_path(make, name):
    obj = fed(make, INT_CONTAINERS[name](INTS))
    assert obj.key_type == "int"
    assert state(obj) == reference(make, INTS)


@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize("name", sorted(STR_CONTAINERS))
def test_str_containers_equal_numpy_path(make, name):
    obj = fed(make, STR_CONTAINERS[name](STRS))
    assert obj.key_type == "str"
    assert state(obj) == reference(make, STRS)


def test_polars_series():
    pl = pytest.importorskip("polars")
    for values, ref in ((INTS, INTS), (STRS, STRS)):
        for series in (pl.Series(values.tolist()), pl.Series(values.tolist()).cast(pl.Categorical)
                       if values.dtype.kind == "U" else pl.Series(values.tolist(), dtype=pl.Int32)):
            obj = fed(lambda: d.SpaceSaving(32), series)
            assert state(obj) == reference(lambda: d.SpaceSaving(32), ref)


def test_wide_numpy_str_with_inner_nul_and_non_ascii():
    keys = np.array(["a\x00b", "é" * 40, "x", "日本", "a\x00b"], dtype="U64")
    obj = d.SpaceSaving(8)
    obj.update_many(keys)
    assert dict(obj.items()) == {"a\x00b": 2, "é" * 40: 1, "x": 1, "日本": 1}


def test_strided_object_arrays_and_lists_feed_the_same():
    words = np.array([f"w{i % 37}" for i in range(5000)], dtype=object)
    for view in (words, words[::3], words[::-2], words.reshape(50, 100)[:, 7]):
        a, b = d.MisraGries(16), d.MisraGries(16)
        a.update_many(view)
        b.update_many(view.tolist())
        assert a.to_bytes() == b.to_bytes()


@needs_stringdtype
def test_numpy_stringdtype_long_non_ascii_and_counted():
    """StringDType keeps strings of up to 15 bytes inside the array and longer ones in its own
    storage: both, non-ASCII, empty and NUL-holding strings, feed exactly as the list does, also
    with counts and for an int-keyed summary (a TypeError, nothing fed)."""
    rng = np.random.default_rng(5)
    pieces = ["", "a", "é", "日本語", "\U0001F600", "a\x00b", "x" * 15, "y" * 16, "z" * 300]
    keys = [pieces[i % len(pieces)] + str(int(rng.integers(0, 40))) for i in range(3000)]
    arr = np.array(keys, dtype=StringDType())
    assert arr.tolist() == keys
    for make in MAKERS:
        a, b = make(), make()
        a.update_many(arr)
        b.update_many(keys)
        assert a.to_bytes() == b.to_bytes()
    counts = rng.integers(-3, 4, size=len(keys))
    a, b = d.CountMin(64, 3, seed=4), d.CountMin(64, 3, seed=4)
    a.update_many(arr, counts=counts)
    b.update_many(keys, counts=counts)
    assert a.to_bytes() == b.to_bytes()
    ints = d.SpaceSaving(8, key_type="int")
    with pytest.raises(TypeError):
        ints.update_many(arr)
    assert ints.n == 0
    with pytest.raises(ValueError, match="1-D"):
        d.SpaceSaving(8).update_many(np.array([["a", "b"]], dtype=StringDType()))


@needs_stringdtype
@pytest.mark.parametrize("na", [None, float("nan"), "missing"])
def test_numpy_stringdtype_nulls_are_rejected(na):
    obj = d.SpaceSaving(8)
    with pytest.raises(ValueError, match="null"):
        obj.update_many(np.array(["a", na, "b"], dtype=StringDType(na_object=na)))
    assert obj.n == 0


@pytest.mark.parametrize("width", [1, 7, 15, 16, 17, 31, 32, 33, 64, 128, 129, 130, 143, 144, 145, 499, 600])
def test_numpy_str_lengths_at_every_scan_boundary(width):
    """Element lengths come from two scans (from the end for <= 128 code points, front to back in
    16-code-point blocks above) and feeding goes one by one (<= 32) or in chunks of 256: every
    length 0..width, with NULs inside and at block edges, must come out as the list path does."""
    rng = np.random.default_rng(width)
    keys = []
    for i in range(700):
        n = int(rng.integers(0, width + 1)) if i % 3 else min(width, 16 * int(rng.integers(0, 40)) + int(rng.integers(-1, 2)))
        n = max(0, min(width, n))
        chars = rng.choice(["a", "\x00", "é", "日", "\U0001F600"], size=n, p=[0.6, 0.15, 0.1, 0.1, 0.05])
        keys.append("".join(chars).rstrip("\x00"))  # numpy drops trailing NULs itself
    arr = np.array(keys, dtype=f"U{width}")
    assert arr.tolist() == keys
    by_array, by_list = d.SpaceSaving(1024), d.SpaceSaving(1024)
    by_array.update_many(arr)
    by_list.update_many(keys)
    assert by_array.to_bytes() == by_list.to_bytes()


@pytest.mark.parametrize("table", [
    lambda: pd.DataFrame({"page": ["a", "b"], "user": [1, 2]}),
    lambda: pa.table({"page": ["a", "b"], "user": [1, 2]}),
    lambda: pa.record_batch({"page": ["a", "b"], "user": [1, 2]}),
])
def test_several_columns_without_column_is_a_type_error(table):
    obj = d.SpaceSaving(8)
    with pytest.raises(TypeError, match="pick the key column with column="):
        obj.update_many(table())
    assert obj.n == 0 and obj.key_type is None  # nothing counted (not even the column names)


@pytest.mark.parametrize("table", [
    lambda: pd.DataFrame({"page": ["a", "b", "a"]}),
    lambda: pa.table({"page": ["a", "b", "a"]}),
    lambda: pa.record_batch({"page": ["a", "b", "a"]}),
])
def test_one_column_table_is_its_column(table):
    by_table, by_list = d.SpaceSaving(8), d.SpaceSaving(8)
    by_table.update_many(table())
    by_list.update_many(["a", "b", "a"])
    assert by_table.to_bytes() == by_list.to_bytes()


def test_polars_dataframe_needs_column_when_it_has_several():
    pl = pytest.importorskip("polars")
    obj = d.MisraGries(8)
    with pytest.raises(TypeError, match="column="):
        obj.update_many(pl.DataFrame({"page": ["a", "b"], "user": [1, 2]}))
    obj.update_many(pl.DataFrame({"page": ["a", "b"], "user": [1, 2]}), column="user")
    assert obj.key_type == "int" and obj.estimate(2) == 1


@pytest.mark.parametrize("bad", [
    lambda: pd.Series(["a", None, "b"], dtype="string[pyarrow]"),
    lambda: pd.Series(["a", None, "b"], dtype=object),
    lambda: pd.Series(["a", None, "b"], dtype="string[python]"),
    lambda: pd.Series([None, "a"], dtype="string[python]"),
    lambda: np.array(["a", float("nan")], dtype=object),
    lambda: pd.Series([1, None, 2], dtype="Int64"),
    lambda: pa.array(["a", None]),
    lambda: pa.array(["a", None]).dictionary_encode(),
])
def test_nulls_are_rejected(bad):
    obj = d.SpaceSaving(8)
    with pytest.raises(ValueError, match="null"):
        obj.update_many(bad())
    assert obj.n == 0


def test_floats_and_bools_are_rejected():
    with pytest.raises(TypeError):
        d.SpaceSaving(8).update_many(pd.Series([1.0, 2.0]))
    with pytest.raises(TypeError):
        d.SpaceSaving(8).update_many(pd.Series([True, False]))
    with pytest.raises(TypeError, match="decode"):
        d.SpaceSaving(8).update_many(pa.array([b"x"]))


def test_int_list_direct_conversion_keeps_element_checks():
    obj = d.SpaceSaving(8)
    with pytest.raises(OverflowError):
        obj.update_many([1, 2**63])
    with pytest.raises(TypeError, match="bool"):
        obj.update_many([1, True])
    with pytest.raises(TypeError, match="float"):
        obj.update_many([1, 2, 3.0])
    assert obj.n == 0
    obj.update_many([-(2**63), 2**63 - 1, np.int64(5)])
    assert obj.n == 3 and sorted(k for k, _ in obj.items()) == [-(2**63), 5, 2**63 - 1]


def test_lone_surrogate_is_a_clear_error_without_the_key():
    key = "secret\udc80label"
    for obj in (d.SpaceSaving(8), d.SpaceSaving(8, key_type="str")):
        with pytest.raises(ValueError, match="surrogate") as info:
            obj.update(key)
        assert "secret" not in str(info.value) and "\udc80" not in str(info.value)
        assert info.value.__cause__ is None and info.value.__suppress_context__
        assert obj.n == 0
    warm = d.SpaceSaving(8)
    warm.update("ok")  # fast path installed: the surrogate must still come back to the clear error
    with pytest.raises(ValueError, match="surrogate") as info:
        warm.update(key)
    assert "secret" not in str(info.value)
    with pytest.raises(ValueError, match="surrogate"):
        warm.estimate(key)
    assert warm.n == 1


@pytest.mark.parametrize("make", MAKERS + [lambda: d.CountSketch(64, 3, seed=4)])
def test_str_sequences_fed_in_blocks_equal_item_by_item(make):
    """Lists, tuples and object arrays are fed block by block (4,096 keys each): across several
    blocks the state equals item-by-item updates, and a bad key in a late block changes nothing."""
    keys = [f"k{v}" if v % 7 else f"é{v}" for v in np.random.default_rng(5).integers(0, 3_000, 40_000).tolist()]
    ref = make()
    for k in keys:
        ref.update(k)
    for container in (keys, tuple(keys), np.array(keys, dtype=object), iter(keys)):
        obj = make()
        obj.update_many(container)
        assert state(obj) == state(ref)
    for bad, exc in [(None, ValueError), (3, TypeError), ("\ud800", ValueError)]:
        obj = make()
        obj.update_many(keys[:100])
        before = state(obj)
        with pytest.raises(exc):
            obj.update_many(keys[:35_000] + [bad] + keys[35_000:])
        assert state(obj) == before


def test_counted_str_list_in_blocks_equals_item_by_item():
    rng = np.random.default_rng(6)
    keys = [f"k{v}" for v in rng.integers(0, 2_000, 40_000).tolist()]
    counts = rng.integers(-5, 6, len(keys))
    ref, obj = d.CountSketch(64, 3, seed=4), d.CountSketch(64, 3, seed=4)
    for k, c in zip(keys, counts.tolist()):
        ref.update(k, c)
    obj.update_many(keys, counts=counts)
    assert state(obj) == state(ref)


LONG_STRS = np.array([("é" if i % 3 else "x") * (i % 41) + f"#{i % 97}" for i in range(3000)])


@pytest.mark.parametrize("make", MAKERS)
def test_string_views_are_read_in_place(make):
    # Arrow string views (polars' strings, pyarrow string_view): keys of up to 12 bytes inside the
    # view, longer ones in a data buffer; fed as they lie, with the state of the list path.
    want = reference(make, LONG_STRS)
    views = pa.array(LONG_STRS, pa.string_view())
    containers = [views, pa.array(np.concatenate([["pad"] * 5, LONG_STRS]), pa.string_view())[5:],
                  pa.chunked_array([views[:1000], views[1000:]])]
    pl = pytest.importorskip("polars")
    containers += [pl.Series(LONG_STRS.tolist()), pl.Series(["pad"] + LONG_STRS.tolist())[1:]]
    for container in containers:
        assert state(fed(make, container)) == want


def test_polars_strings_are_exported_as_views_without_a_copy():
    pl = pytest.importorskip("polars")
    from dpsketch.sketches._keys import normalize_batch

    if not hasattr(pl, "CompatLevel"):
        pytest.skip("this polars exports strings only as large_string")
    s = pl.Series(LONG_STRS.tolist())
    assert pa.types.is_string_view(normalize_batch(s, keep_views=True).type)
    assert pa.types.is_large_string(normalize_batch(s).type)  # other consumers get large_string


def test_a_view_outside_its_buffers_is_refused_and_changes_nothing():
    data = b"0123456789"
    for length, index, offset in ((20, 0, 0), (13, 1, 0), (13, 0, 5), (2**31, 0, 0)):
        view = length.to_bytes(4, "little") + data[:4] + index.to_bytes(4, "little") + offset.to_bytes(4, "little")
        arr = pa.Array.from_buffers(pa.string_view(), 1, [None, pa.py_buffer(view), pa.py_buffer(data)])
        s = d.SpaceSaving(8)
        s.update_many(["a", "b"])
        before = s.to_bytes()
        with pytest.raises(ValueError, match="string view"):
            s.update_many(arr)
        assert s.to_bytes() == before and s.n == 2
