"""Serialization: exact round trips (bytes, pickle, copy) that keep behaving identically when fed
further; merging of linear sketches; corrupt input of every kind is rejected with ValueError or
TypeError -- in-process, so a native crash would take pytest down with it."""

from __future__ import annotations

import copy
import pickle
import resource
import struct

import numpy as np
import pytest

import dpsketch.datasets
from dpsketch import CountMin, CountSketch, MisraGries, SpaceSaving

MAKERS = {
    "MisraGries": lambda **kw: MisraGries(6, **kw),
    "SpaceSaving": lambda **kw: SpaceSaving(6, **kw),
    "CountMin": lambda **kw: CountMin(16, 3, seed=2**64 - 5, **kw),
    "CountSketch": lambda **kw: CountSketch(16, 4, seed=77, **kw),
}
CLASSES = {"MisraGries": MisraGries, "SpaceSaving": SpaceSaving, "CountMin": CountMin, "CountSketch": CountSketch}


def _stream(key_type, n, seed):
    rng = np.random.default_rng(seed)
    # Skewed and small alphabet: MG reaches zero-count keys, SS evicts, ties are common.
    ints = dpsketch.datasets.zipf(n, 1.0, universe=25, seed=seed) + rng.integers(-1, 2, size=n) * 10**12
    if key_type == "int":
        return ints
    return [f"s{v}\u00e9" if v % 3 else f"{v}" for v in ints.tolist()]


def state(s):
    out = {"type": type(s), "n": s.n, "key_type": s.key_type, "bytes": s.to_bytes()}
    if isinstance(s, MisraGries):
        out.update(items=s.items(), all=s.items(include_zero=True), state=s._state(), dec=s.decrements, cap=s.capacity)
    elif isinstance(s, SpaceSaving):
        out.update(items=s.items(), state=s._state(), min=s.min_count(), cap=s.capacity, len=len(s))
    else:
        out.update(cells=s.cells().tolist(), shape=(s.width, s.depth, s.hash_seed))
    return out


def _roundtrips(s):
    cls = type(s)
    b = s.to_bytes()
    yield "from_bytes", cls.from_bytes(b)
    yield "bytearray", cls.from_bytes(bytearray(b))
    yield "memoryview", cls.from_bytes(memoryview(b))
    for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):
        yield f"pickle{proto}", pickle.loads(pickle.dumps(s, protocol=proto))
    yield "copy", copy.copy(s)
    yield "deepcopy", copy.deepcopy(s)
    yield "deepcopy-in-list", copy.deepcopy([s])[0]


def _feed(s, keys):
    if isinstance(keys, np.ndarray):
        s.update_many(keys[: len(keys) // 2])
        for x in keys[len(keys) // 2 :].tolist():
            s.update(x)
    else:
        s.update_many(keys)


@pytest.mark.parametrize("name", MAKERS)
@pytest.mark.parametrize("key_type", ["int", "str"])
@pytest.mark.parametrize("fill", [0, 1, 5, 3000])
def test_roundtrip_then_identical_continuation(name, key_type, fill):
    s = MAKERS[name]()
    if fill:
        _feed(s, _stream(key_type, fill, seed=fill))
    cont = _stream(key_type, 700, seed=99)
    for label, r in _roundtrips(s):
        assert type(r) is type(s), label
        want = state(s)
        if fill == 0:  # an untyped empty summary stays untyped
            assert r.key_type is None, label
        assert state(r) == want, label
        assert repr(r) == repr(s), label
        # Same behaviour afterwards: feed both the same continuation.
        twin = type(s).from_bytes(s.to_bytes())
        _feed(r, cont)
        _feed(twin, cont)
        assert state(r) == state(twin), label
        assert r.to_bytes() == twin.to_bytes(), label
    # The original is unaffected by its copies being updated.
    assert state(s)["n"] == fill


@pytest.mark.parametrize("name", MAKERS)
@pytest.mark.parametrize("key_type", ["int", "str"])
def test_roundtrip_keeps_explicit_key_type_when_empty(name, key_type):
    """An empty summary built with key_type= keeps rejecting the other key type after pickle/copy,
    and after from_bytes when the bytes say str (an empty int summary's bytes are ambiguous)."""
    s = MAKERS[name](key_type=key_type)
    other = 1 if key_type == "str" else "x"
    restored = [pickle.loads(pickle.dumps(s)), copy.copy(s), copy.deepcopy(s)]
    if key_type == "str":
        restored.append(type(s).from_bytes(s.to_bytes()))
    for r in restored:
        assert r.key_type == key_type
        with pytest.raises(TypeError):
            r.update(other)
        assert r.n == 0


def test_roundtrip_misra_gries_zero_stack_order():
    """Zero-count keys and the order in which their slots are reused survive a round trip."""
    rng = np.random.default_rng(5)
    for _ in range(300):
        cap = int(rng.integers(1, 6))
        stream = rng.integers(0, 9, size=int(rng.integers(0, 40))).tolist()
        s = MisraGries(cap)
        for x in stream:
            s.update(x)
        r = MisraGries.from_bytes(s.to_bytes())
        assert r._state() == s._state() and r.decrements == s.decrements and r.n == s.n
        for x in rng.integers(0, 12, size=25).tolist():
            s.update(x)
            r.update(x)
            assert r._state() == s._state()


def test_roundtrip_space_saving_tie_order():
    rng = np.random.default_rng(6)
    for _ in range(300):
        cap = int(rng.integers(1, 6))
        stream = rng.integers(0, 9, size=int(rng.integers(0, 40))).tolist()
        s = SpaceSaving(cap)
        for x in stream:
            s.update(x)
        r = pickle.loads(pickle.dumps(s))
        assert r._state() == s._state()
        for x in rng.integers(0, 12, size=25).tolist():
            s.update(x)
            r.update(x)
            assert r._state() == s._state()


def test_roundtrip_extreme_keys():
    for cls in (MisraGries, SpaceSaving):
        s = cls(4)
        s.update_many([-(2**63), 2**63 - 1, 0, -(2**63)])
        assert cls.from_bytes(s.to_bytes()).items() == s.items()
        t = cls(4)
        t.update_many(["", "a\x00b", "\U0001f600" * 100, "x" * 100_000])
        assert cls.from_bytes(t.to_bytes()).items() == t.items()


# ---------------------------------------------------------------------------------------------
# merge
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [CountMin, CountSketch])
@pytest.mark.parametrize("key_type", ["int", "str"])
def test_merge_equals_sketch_of_concatenation(cls, key_type):
    x, y = _stream(key_type, 4000, 1), _stream(key_type, 2500, 2)
    a, b, both = cls(50, 5, seed=9), cls(50, 5, seed=9), cls(50, 5, seed=9)
    a.update_many(x)
    b.update_many(y)
    both.update_many(x)
    both.update_many(y)
    a.merge(b)
    assert a.n == both.n == len(x) + len(y)
    assert a.cells().tolist() == both.cells().tolist()
    assert a.to_bytes() == both.to_bytes()
    assert b.n == len(y)  # the argument is not modified
    for k in list(x[:50]) + list(y[:50]):
        assert a.estimate(k) == both.estimate(k)
    # Merging into an empty sketch, and merging an empty sketch, are the identity.
    e = cls(50, 5, seed=9)
    e.merge(both)
    assert e.to_bytes() == both.to_bytes() and e.key_type == key_type
    both.merge(cls(50, 5, seed=9))
    assert both.to_bytes() == e.to_bytes()
    # Merge after a round trip, and a self-merge (twice the stream).
    r = pickle.loads(pickle.dumps(b))
    r.merge(r)
    twice = cls(50, 5, seed=9)
    twice.update_many(y)
    twice.update_many(y)
    assert r.to_bytes() == twice.to_bytes()


@pytest.mark.parametrize("cls", [CountMin, CountSketch])
def test_merge_rejects_incompatible(cls):
    a = cls(32, 4, seed=1)
    a.update_many(np.arange(100))
    before = a.to_bytes()
    for other in (cls(33, 4, seed=1), cls(32, 5, seed=1), cls(32, 4, seed=2)):
        other.update(1)
        with pytest.raises(ValueError):
            a.merge(other)
    s = cls(32, 4, seed=1)
    s.update("x")
    with pytest.raises(TypeError):
        a.merge(s)
    with pytest.raises(TypeError):
        s.merge(a)
    wrong = CountSketch(32, 4, seed=1) if cls is CountMin else CountMin(32, 4, seed=1)
    wrong.update(1)
    for w in (wrong, MisraGries(4), SpaceSaving(4), None, 3, a.to_bytes()):
        with pytest.raises(TypeError):
            a.merge(w)
    assert a.to_bytes() == before


def test_merge_cell_overflow_is_an_error():
    """Cells are int64: a merge that could overflow raises instead of wrapping around. Restored cells
    are bounded by 2^62 in magnitude (turnstile mass bound), so 2^63 - 1 is corrupt bytes."""
    a = CountMin(1, 1, seed=0)
    a.update(1)
    for big, ok in ((2**62, True), (2**63 - 1, False)):
        raw = bytearray(a.to_bytes()[:-8] + struct.pack("<q", big))
        struct.pack_into("<Q", raw, 24, big)  # n consistent with the cell
        if not ok:
            with pytest.raises(ValueError):
                CountMin.from_bytes(bytes(raw))
            continue
        b = CountMin.from_bytes(bytes(raw))
        with pytest.raises(OverflowError):
            b.merge(a)


# ---------------------------------------------------------------------------------------------
# corrupt input
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def bounded_memory():
    """Cap the address space at current + 1 GiB: an oversized allocation from corrupt bytes becomes
    a MemoryError (reported as a failure) instead of an OOM kill of the machine."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/status") as fh:
        vm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    limit = vm + (1 << 30)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _samples():
    out = []
    for name, make in MAKERS.items():
        for key_type in ("int", "str"):
            s = make()
            s.update_many(_stream(key_type, 400, seed=len(out) + 1))
            out.append((f"{name}-{key_type}", s))
    s = MisraGries(3)
    s.update_many([1, 2, 3, 4])  # all zero-count keys
    out.append(("MisraGries-zeros", s))
    out.append(("SpaceSaving-empty", SpaceSaving(3)))
    return out


def _check_invariants(obj):
    """A corrupt input that decodes must still be a consistent object."""
    n = obj.n
    if isinstance(obj, MisraGries):
        counts = [c for _, c in obj.items()]
        assert len(obj.items(include_zero=True)) <= obj.capacity
        assert n - sum(counts) == obj.decrements * (obj.capacity + 1)
    elif isinstance(obj, SpaceSaving):
        counts = [c for _, c in obj.items()]
        assert len(counts) <= obj.capacity and sum(counts) == n
        assert obj.min_count() <= n / obj.capacity
    keys = obj.items() if isinstance(obj, (MisraGries, SpaceSaving)) else []
    for k, _ in keys[:5]:
        obj.estimate(k)
    # It keeps working: further updates, estimates, a round trip.
    probe = 1 if obj.key_type in (None, "int") else "probe"
    for _ in range(3):
        obj.update(probe)
    obj.estimate(probe)
    assert type(obj).from_bytes(obj.to_bytes()).to_bytes() == obj.to_bytes()


def test_every_truncation_is_rejected(bounded_memory):
    for label, s in _samples():
        b = s.to_bytes()
        cls = type(s)
        for cut in range(len(b)):
            with pytest.raises(ValueError):
                cls.from_bytes(b[:cut])
        for extra in (b"\x00", b"\x01" * 9):
            with pytest.raises(ValueError):
                cls.from_bytes(b + extra)
        assert cls.from_bytes(b).to_bytes() == b, label


def test_random_byte_flips_never_crash(bounded_memory):
    rng = np.random.default_rng(424242)
    problems = []
    for label, s in _samples():
        b = s.to_bytes()
        cls = type(s)
        counters = isinstance(s, (MisraGries, SpaceSaving))
        for trial in range(700):
            data = bytearray(b)
            for _ in range(1 if trial < 500 else int(rng.integers(2, 6))):
                pos = int(rng.integers(0, len(data)))
                if counters and 8 <= pos < 12:
                    # The capacity field: any value up to 2**28 makes SpaceSaving bytes valid (and
                    # slow: O(capacity) memory); Misra-Gries capacity checks have their own test.
                    continue
                data[pos] ^= int(rng.integers(1, 256))
            try:
                obj = cls.from_bytes(bytes(data))
            except (ValueError, TypeError):
                continue
            except MemoryError:
                problems.append((label, "MemoryError (oversized allocation)", bytes(data[:24]).hex()))
                continue
            try:
                _check_invariants(obj)
            except (AssertionError, ValueError, TypeError, OverflowError) as e:
                problems.append((label, f"accepted but inconsistent: {type(e).__name__} {e}", bytes(data[:24]).hex()))
    kinds = sorted({(p[0], p[1].split(":")[0]) for p in problems})
    assert not problems, f"{len(problems)} bad outcomes; kinds {kinds}; first: {problems[:3]}"


def test_random_garbage_never_crashes(bounded_memory):
    rng = np.random.default_rng(7)
    for cls in CLASSES.values():
        for _ in range(500):
            body = rng.integers(0, 256, size=int(rng.integers(0, 80)), dtype=np.uint8).tobytes()
            for data in (body, b"DPSK\x01" + bytes([cls._family, int(rng.integers(1, 3)), 0]) + body):
                try:
                    obj = cls.from_bytes(data)
                except (ValueError, TypeError):
                    continue
                _check_invariants(obj)


def test_header_errors():
    s = SpaceSaving(4)
    s.update_many([1, 2, 3])
    b = s.to_bytes()
    assert b[:4] == b"DPSK"
    bad = {
        "magic": b"XPSK" + b[4:],
        "version": b[:4] + b"\x09" + b[5:],
        "family": b[:5] + b"\x07" + b[6:],
        "key tag": b[:6] + b"\x03" + b[7:],
        "key tag 0": b[:6] + b"\x00" + b[7:],
        "reserved": b[:7] + b"\x01" + b[8:],
        "empty": b"",
        "magic only": b"DPSK",
    }
    for label, data in bad.items():
        with pytest.raises(ValueError, match="corrupt or incompatible"):
            SpaceSaving.from_bytes(data)
        # the native classes check too
        with pytest.raises(ValueError):
            SpaceSaving._natives["int"].from_bytes(data)


def test_wrong_family_and_key_type():
    samples = {}
    for name, make in MAKERS.items():
        for key_type in ("int", "str"):
            s = make()
            s.update_many(_stream(key_type, 50, seed=3))
            samples[(name, key_type)] = s.to_bytes()
    for (name, key_type), data in samples.items():
        for other_name, other_cls in CLASSES.items():
            if other_name != name:
                with pytest.raises(ValueError):
                    other_cls.from_bytes(data)
        # The native class of the other key type rejects the bytes too.
        other_kt = "str" if key_type == "int" else "int"
        with pytest.raises(ValueError):
            CLASSES[name]._natives[other_kt].from_bytes(data)


@pytest.mark.parametrize("cls", list(CLASSES.values()))
def test_non_bytes_input_is_type_error(cls):
    s = cls(8) if cls in (MisraGries, SpaceSaving) else cls(8, 2, seed=1)
    good = s.to_bytes()
    for bad in (good.decode("latin-1"), None, 5, 1.5, list(good), np.frombuffer(good, np.uint8), s):
        with pytest.raises(TypeError):
            cls.from_bytes(bad)


def _mg_bytes(capacity=4):
    s = MisraGries(capacity)
    s.update_many([5, 5, 5, 6, 6, 7])
    return s, bytearray(s.to_bytes())


def _ss_bytes():
    s = SpaceSaving(4)
    s.update_many([5, 5, 5, 6, 6, 7, 8, 9])
    return s, bytearray(s.to_bytes())


def test_flipped_counts_breaking_invariants_are_rejected():
    # SpaceSaving: header 8 | capacity u32 | n u64 | size u32 | (key i64, count u64)*
    s, b = _ss_bytes()
    first_count = 8 + 4 + 8 + 4 + 8
    assert struct.unpack_from("<Q", b, first_count)[0] == s._state()[0][1]
    for delta in (1, -1, 2**40):
        d = bytearray(b)
        struct.pack_into("<Q", d, first_count, (s._state()[0][1] + delta) % 2**64)
        with pytest.raises(ValueError):  # sum of counts != n, or order broken
            SpaceSaving.from_bytes(bytes(d))
    d = bytearray(b)
    struct.pack_into("<Q", d, 12, s.n + 1)  # n no longer the sum of counts
    with pytest.raises(ValueError):
        SpaceSaving.from_bytes(bytes(d))
    d = bytearray(b)
    struct.pack_into("<q", d, first_count + 16, s._state()[0][0])  # duplicate key
    with pytest.raises(ValueError):
        SpaceSaving.from_bytes(bytes(d))

    # MisraGries: header 8 | capacity u32 | n u64 | decrements u64 | positive u32 | (key, count)*
    m, b = _mg_bytes()
    first_count = 8 + 4 + 8 + 8 + 4 + 8
    c0 = struct.unpack_from("<Q", b, first_count)[0]
    for new in (c0 + 1, c0 - 1, 0):
        d = bytearray(b)
        struct.pack_into("<Q", d, first_count, new)
        with pytest.raises(ValueError):
            MisraGries.from_bytes(bytes(d))
    for field, value in ((12, m.n + 1), (20, m.decrements + 1)):
        d = bytearray(b)
        struct.pack_into("<Q", d, field, value)
        with pytest.raises(ValueError):
            MisraGries.from_bytes(bytes(d))


def test_flipped_sketch_cells_breaking_invariants_are_rejected():
    """Non-private Count-Min rows each sum to n; CountSketch rows have sum = n (mod 2) and |row|_1 <= n.
    Bytes that break this cannot come from to_bytes() (they would e.g. make Count-Min underestimate)."""
    for cls in (CountMin, CountSketch):
        s = cls(8, 3, seed=4)
        s.update_many(np.arange(100))
        b = bytearray(s.to_bytes())
        cells_at = 8 + 4 + 4 + 8 + 8
        d = bytearray(b)
        struct.pack_into("<q", d, cells_at, struct.unpack_from("<q", d, cells_at)[0] + 1)
        with pytest.raises(ValueError):
            cls.from_bytes(bytes(d))
        d = bytearray(b)
        struct.pack_into("<Q", d, 16 + 8, s.n + 1)  # n
        with pytest.raises(ValueError):
            cls.from_bytes(bytes(d))


def test_huge_declared_capacity_is_rejected_before_allocating(bounded_memory):
    """A Misra-Gries payload lists all `capacity` slots (>= 1 byte each), so a capacity field larger
    than the payload is corrupt: it must be a ValueError, not a multi-GiB allocation."""
    _, b = _mg_bytes()
    for cap in (2**28, 2**24 + 4, 2**22):
        d = bytearray(b)
        struct.pack_into("<I", d, 8, cap)
        with pytest.raises(ValueError):
            MisraGries.from_bytes(bytes(d))


def test_declared_sizes_do_not_allocate(bounded_memory):
    # A sketch whose shape promises more cells than the bytes hold.
    s = CountMin(4, 2, seed=1)
    b = bytearray(s.to_bytes())
    struct.pack_into("<II", b, 8, 2**20, 255)
    with pytest.raises(ValueError):
        CountMin.from_bytes(bytes(b))
    # A string key length far beyond the payload.
    t = SpaceSaving(2)
    t.update("abc")
    b = bytearray(t.to_bytes())
    struct.pack_into("<I", b, 8 + 4 + 8 + 4, 2**32 - 1)
    with pytest.raises(ValueError):
        SpaceSaving.from_bytes(bytes(b))
    # Many more records declared than present.
    b = bytearray(t.to_bytes())
    struct.pack_into("<I", b, 8 + 4 + 8, 2**28)
    with pytest.raises(ValueError):
        SpaceSaving.from_bytes(bytes(b))


@pytest.mark.parametrize("cls", [MisraGries, SpaceSaving])
def test_invalid_utf8_string_key_is_rejected(cls):
    """str keys come back as Python str: bytes holding a key that is not UTF-8 are corrupt (else the
    restored summary's items() would raise forever)."""
    s = cls(2)
    s.update_many(["abc", "abc", "xyz", "q\u00e9"])  # MG(2): the third key forces a decrement
    b = s.to_bytes()
    keys = [k for k, _ in (s.items(include_zero=True) if cls is MisraGries else s.items())]
    assert keys
    for k in keys:
        i = b.find(k.encode())
        d = bytearray(b)
        d[i] = 0xFF
        with pytest.raises(ValueError, match="UTF-8"):
            cls.from_bytes(bytes(d))


def test_key_type_fixedness_survives_bytes():
    """Tag 1 means int keys were fixed (explicitly or by an update); tag 0 an untyped empty summary."""
    fixed = MisraGries.from_bytes(MisraGries(5, key_type="int").to_bytes())
    assert fixed.key_type == "int"
    with pytest.raises(TypeError):
        fixed.update("x")
    untyped_bytes = MisraGries(5).to_bytes()
    assert untyped_bytes[6] == 0
    untyped = MisraGries.from_bytes(untyped_bytes)
    assert untyped.key_type is None
    untyped.update("x")
    assert untyped.key_type == "str"
    full = MisraGries(5)
    full.update(3)
    bad = bytearray(full.to_bytes())
    bad[6] = 0  # claims "untyped" but holds data
    with pytest.raises(ValueError, match="untyped"):
        MisraGries.from_bytes(bytes(bad))
