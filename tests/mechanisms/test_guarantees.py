"""The documented error guarantees (docs/algorithms.md §2-§4), checked key by key against exact counts
on uniform, Zipf and real streams; and batch inputs of every supported kind give exactly the state
of per-item updates."""

from __future__ import annotations

import gzip
import math
from collections import Counter
from functools import lru_cache

import numpy as np
import pytest

import dpsketch
import dpsketch.datasets
from dpsketch import CountMin, CountSketch, MisraGries, SpaceSaving
from conftest import shared_file

GCIDE_PREFIX = 1_000_000


# ---------------------------------------------------------------------------------------------
# streams
# ---------------------------------------------------------------------------------------------


def _uniform(n, universe, seed):
    return np.random.default_rng(seed).integers(0, universe, size=n, dtype=np.int64)


def _as_str(arr):
    return [f"k{v}" for v in arr.tolist()]


STREAMS = {
    "uniform-int": lambda: _uniform(60_000, 2_000, 1),
    "uniform-str": lambda: _as_str(_uniform(40_000, 1_500, 2)),
    "zipf0.8-int": lambda: dpsketch.datasets.zipf(80_000, 0.8, universe=20_000, seed=3),
    "zipf1.1-str": lambda: _as_str(dpsketch.datasets.zipf(60_000, 1.1, universe=20_000, seed=4)),
    "zipf1.5-int": lambda: dpsketch.datasets.zipf(80_000, 1.5, universe=20_000, seed=5, offset=-500),
    "zipf2.0-str": lambda: _as_str(dpsketch.datasets.zipf(60_000, 2.0, universe=20_000, seed=6)),
}


def _stream(name):
    if name == "retail":
        return dpsketch.datasets.retail()
    if name == "gcide":
        return _gcide_prefix(str(shared_file("gcide_words.txt.gz")))
    return STREAMS[name]()


@lru_cache(maxsize=1)
def _gcide_prefix(path):
    words = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            words.extend(line.split())
            if len(words) >= GCIDE_PREFIX:
                break
    return words[:GCIDE_PREFIX]


ALL_STREAMS = list(STREAMS) + ["retail", "gcide"]


def _keys_of(stream):
    return stream.tolist() if isinstance(stream, np.ndarray) else list(stream)


def _absent_keys(stream):
    """A few keys that never occur (estimates of unseen keys obey the same bounds with f = 0)."""
    if isinstance(stream, np.ndarray):
        return [-(2**63), 2**63 - 1, -123456789, 10**15]
    return ["", "never-seen-key", "\u00e9\u65e5\U0001f600", "zz" * 40]


def _exact(stream):
    keys = _keys_of(stream)
    return keys, Counter(keys)


def _estimates(s, keys):
    if isinstance(s, (CountMin, CountSketch)) and keys and isinstance(keys[0], int):
        return s.estimate_many(np.array(keys, dtype=np.int64)).tolist()
    return [s.estimate(k) for k in keys]


# ---------------------------------------------------------------------------------------------
# counter summaries
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_STREAMS)
@pytest.mark.parametrize("m", [1, 16, 300])
def test_misra_gries_bounds(name, m):
    stream = _stream(name)
    keys, f = _exact(stream)
    n = len(keys)
    s = MisraGries(m)
    s.update_many(stream)
    assert s.n == n
    stored = s.items()
    assert len(s.items(include_zero=True)) <= m
    assert all(c > 0 for _, c in stored)
    counts = {k: c for k, c in stored}
    # The decrement identity: each decrement-all removes m stored units and drops the new item.
    assert n - sum(counts.values()) == s.decrements * (m + 1)
    slack = n / (m + 1)
    queried = list(f) + _absent_keys(stream)
    est = _estimates(s, queried)
    bad = [
        (k, f.get(k, 0), e)
        for k, e in zip(queried, est)
        if not (f.get(k, 0) - slack <= e <= f.get(k, 0))
    ]
    assert not bad, f"{len(bad)} keys outside f - n/(m+1) <= c <= f, e.g. (key, f, c) = {bad[:3]}"
    for k, c in counts.items():
        assert s.estimate(k) == c
    # Every key with f(x) > n/(m+1) must therefore be stored.
    for k, fx in f.items():
        if fx > slack:
            assert counts.get(k, 0) > 0


@pytest.mark.parametrize("name", ALL_STREAMS)
@pytest.mark.parametrize("k", [1, 16, 300])
def test_space_saving_bounds(name, k):
    stream = _stream(name)
    keys, f = _exact(stream)
    n = len(keys)
    s = SpaceSaving(k)
    s.update_many(stream)
    assert s.n == n
    tracked = dict(s.items())
    assert len(tracked) == min(k, len(f))
    assert sum(tracked.values()) == n
    cmin = s.min_count()
    assert cmin <= n / k
    if len(tracked) == k:
        assert cmin == min(tracked.values())
    bad = [(x, f[x], c) for x, c in tracked.items() if not (f[x] <= c <= f[x] + cmin)]
    assert not bad, f"tracked keys outside f <= c <= f + min_count ({cmin}): {bad[:3]}"
    missing = [x for x, fx in f.items() if fx > n / k and x not in tracked]
    assert not missing, f"keys with f > n/k not tracked: {missing[:3]}"
    untracked_over = [(x, fx) for x, fx in f.items() if x not in tracked and fx > cmin]
    assert not untracked_over, f"untracked keys with f > min_count ({cmin}): {untracked_over[:3]}"
    for x in list(f)[:2000] + _absent_keys(stream):
        assert s.estimate(x) == tracked.get(x, 0)


# ---------------------------------------------------------------------------------------------
# linear sketches
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_STREAMS)
@pytest.mark.parametrize("width", [64, 1024])
def test_count_min_bounds(name, width):
    depth = 5
    stream = _stream(name)
    keys, f = _exact(stream)
    n = len(keys)
    s = CountMin(width, depth, seed=1000 + width)
    s.update_many(stream)
    assert s.n == n
    cells = s.cells()
    assert cells.shape == (depth, width)
    assert (cells.sum(axis=1) == n).all()  # every update adds 1 to each row
    queried = list(f) + _absent_keys(stream)
    exact = np.array([f.get(x, 0) for x in queried], dtype=np.int64)
    err = np.array(_estimates(s, queried), dtype=np.int64) - exact
    assert (err >= 0).all(), f"Count-Min underestimated {int((err < 0).sum())} keys"
    assert (err <= n).all()
    # Markov per row + independent rows: P(err > e*n/w) <= e^-d, P(err > 2n/w) <= 2^-d (= 3%).
    within_e = float(np.mean(err <= math.e * n / width))
    within_2 = float(np.mean(err <= 2 * n / width))
    assert within_e >= 0.95, f"only {within_e:.3f} of keys within e*n/w"
    assert within_2 >= 0.90, f"only {within_2:.3f} of keys within 2n/w"


@pytest.mark.parametrize("name", ALL_STREAMS)
@pytest.mark.parametrize("width,depth", [(64, 5), (1024, 5), (512, 4)])
def test_count_sketch_bounds(name, width, depth):
    stream = _stream(name)
    keys, f = _exact(stream)
    n = len(keys)
    s = CountSketch(width, depth, seed=2000 + width + depth)
    s.update_many(stream)
    assert s.n == n
    cells = s.cells()
    assert (np.abs(cells).sum(axis=1) <= n).all()
    assert ((cells.sum(axis=1) - n) % 2 == 0).all()  # each update adds +-1 to each row
    f2 = sum(v * v for v in f.values())
    bound = 4 * math.sqrt(f2 / width)
    queried = list(f) + _absent_keys(stream)
    exact = np.array([f.get(x, 0) for x in queried], dtype=np.float64)
    est = np.array(_estimates(s, queried), dtype=np.float64)
    if depth % 2:
        assert (est == np.round(est)).all()
    else:
        assert (est * 2 == np.round(est * 2)).all()  # mean of the two middle values
    within = float(np.mean(np.abs(est - exact) <= bound))
    assert within >= 0.95, f"only {within:.3f} of keys within 4*sqrt(F2/w) = {bound:.1f}"


def test_count_sketch_depth1_exact_row_estimate():
    """d = 1: the estimate is exactly sign * cell, so summing sign*estimate over the keys of a bucket
    recovers the bucket content (a direct check of the sign/bucket pairing)."""
    stream = _uniform(5000, 300, 9)
    s = CountSketch(8, 1, seed=3)
    s.update_many(stream)
    f = Counter(stream.tolist())
    cells = s.cells()[0]
    # Every key's estimate is +-cell of its bucket, hence its absolute value is one of the cells.
    values = set(np.abs(cells).tolist())
    for x in f:
        assert abs(s.estimate(x)) in values


# ---------------------------------------------------------------------------------------------
# batch inputs == per-item updates
# ---------------------------------------------------------------------------------------------

MAKERS = [
    ("MisraGries", lambda: MisraGries(7)),
    ("SpaceSaving", lambda: SpaceSaving(7)),
    ("CountMin", lambda: CountMin(32, 3, seed=11)),
    ("CountSketch", lambda: CountSketch(32, 4, seed=12)),
]


def _state(s):
    out = {"n": s.n, "key_type": s.key_type, "bytes": s.to_bytes()}
    if isinstance(s, MisraGries):
        out.update(state=s._state(), decrements=s.decrements)
    elif isinstance(s, SpaceSaving):
        out.update(state=s._state(), min_count=s.min_count())
    else:
        out.update(cells=s.cells().tolist())
    return out


def _per_item(make, keys):
    s = make()
    for x in keys:
        s.update(x)
    return _state(s)


def _int_keys(rng):
    return rng.integers(0, 40, size=1500).tolist() + rng.integers(0, 2**31, size=20).tolist()


def _str_keys(rng):
    alphabet = ["a", "b", "", "caf\u00e9", "\u65e5\u672c", "\U0001f600x", "longer key " * 3, "a\x00b"]
    alphabet += [f"w{i}" for i in range(30)]
    return [alphabet[i] for i in rng.integers(0, len(alphabet), size=1500)]


@pytest.mark.parametrize("cls_name,make", MAKERS)
def test_int_batches_equal_per_item(cls_name, make, rng):
    keys = _int_keys(rng)
    want = _per_item(make, keys)
    arr = np.array(keys, dtype=np.int64)
    forms = {
        "int64": arr,
        "int32": arr.astype(np.int32),
        "uint32": arr.astype(np.uint32),
        "uint64": arr.astype(np.uint64),
        "int64-strided": np.repeat(arr, 2)[::2],
        "int64-noncontig": np.stack([arr, arr]).T[:, 0],
        "list": list(keys),
        "tuple": tuple(keys),
        "numpy-int-scalars": [np.int64(x) for x in keys],
        "object": np.array(keys, dtype=object),
        "generator": (x for x in keys),
    }
    for label, batch in forms.items():
        s = make()
        s.update_many(batch)
        assert _state(s) == want, label
    # Split into several batches, including empty ones.
    s = make()
    for lo, hi in [(0, 0), (0, 7), (7, 700), (700, 700), (700, len(keys))]:
        s.update_many(arr[lo:hi])
    assert _state(s) == want


@pytest.mark.parametrize("cls_name,make", MAKERS)
def test_str_batches_equal_per_item(cls_name, make, rng):
    keys = _str_keys(rng)
    want = _per_item(make, keys)
    forms = {
        "list": list(keys),
        "tuple": tuple(keys),
        "U": np.array(keys),
        "U-wide": np.array(keys, dtype="U64"),
        "object": np.array(keys, dtype=object),
        "generator": (x for x in keys),
    }
    for label, batch in forms.items():
        s = make()
        s.update_many(batch)
        assert _state(s) == want, label
    s = make()
    for lo, hi in [(0, 3), (3, 3), (3, 900), (900, len(keys))]:
        s.update_many(keys[lo:hi])
    assert _state(s) == want


@pytest.mark.parametrize("cls_name,make", MAKERS)
def test_pyarrow_batches_equal_per_item(cls_name, make, rng):
    pa = pytest.importorskip("pyarrow")
    skeys = _str_keys(rng)
    want = _per_item(make, skeys)
    full = pa.array(["pad0", "pad1"] + skeys + ["pad2"], type=pa.string())
    forms = {
        "string": pa.array(skeys, type=pa.string()),
        "large_string": pa.array(skeys, type=pa.large_string()),
        "sliced-string": full.slice(2, len(skeys)),
        "sliced-large": full.cast(pa.large_string()).slice(2, len(skeys)),
        "chunked": pa.chunked_array([pa.array(skeys[:500]), pa.array([], pa.string()), pa.array(skeys[500:])]),
        "chunked-sliced": pa.chunked_array([full.slice(2, 300), full.slice(302, len(skeys) - 300)]),
        "chunked-large": pa.chunked_array([pa.array(skeys, type=pa.large_string())]),
    }
    for label, batch in forms.items():
        s = make()
        s.update_many(batch)
        assert _state(s) == want, label

    ikeys = _int_keys(rng)
    want = _per_item(make, ikeys)
    ifull = pa.array([5, 6] + ikeys + [7], type=pa.int64())
    iforms = {
        "int64": pa.array(ikeys, type=pa.int64()),
        "uint32": pa.array(ikeys, type=pa.uint32()),
        "sliced": ifull.slice(2, len(ikeys)),
        "chunked": pa.chunked_array([pa.array(ikeys[:100]), pa.array(ikeys[100:])]),
        "chunked-sliced": pa.chunked_array([ifull.slice(2, 50), ifull.slice(52, len(ikeys) - 50)]),
    }
    for label, batch in iforms.items():
        s = make()
        s.update_many(batch)
        assert _state(s) == want, label


def test_retail_batch_equals_per_item_prefix():
    """A real-data prefix through numpy, list and per-item paths gives the same SpaceSaving state."""
    data = dpsketch.datasets.retail()[:20_000]
    a, b, c = SpaceSaving(50), SpaceSaving(50), SpaceSaving(50)
    a.update_many(data)
    b.update_many(data.tolist())
    for x in data.tolist():
        c.update(x)
    assert a._state() == b._state() == c._state()
