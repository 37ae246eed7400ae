"""A published private sketch carries nothing exact about the data (docs/algorithms.md §0,
docs/privacy.md §Publishing, docs/format.md): not the stream length n (attribute, repr, bytes,
pickle, copies), not the gross absorbed mass; the live object keeps both for the data holder.
Also: ``budget=`` on PrivateDyadicCountSketch is charged before its noise is drawn."""

import copy
import pickle
import re
import struct

import numpy as np
import pytest

import dpsketch as d

N = 987_653  # distinctive, so a byte search for it is meaningful


def _published_keeping_n(p):
    """Bytes marked published (release index 1, seeded) that still carry n: no withheld bit."""
    impl = type(p._impl).from_bytes(p._impl.to_bytes())
    impl.set_release_state(1, True, True)
    return impl.to_bytes()

PATHS = {
    "self": lambda o: o,
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
    "pickle": lambda o: pickle.loads(pickle.dumps(o)),
    "bytes": lambda o: type(o).from_bytes(o.to_bytes()),
    "release-again": lambda o: o.release().sketch,
}

NOISE = {"laplace": {"epsilon": 1.0}, "gaussian": {"rho": 0.5}}


def _le(v):
    return [struct.pack("<q", v), struct.pack("<Q", v & (2**64 - 1))]


def _assert_not_in_bytes(b, *values):
    for v in values:
        for enc in _le(v):
            assert enc not in b, f"the exact value {v} is in the published bytes"


def _stream():
    # spread over many keys and the whole dyadic universe: no single cell holds ~n
    return (np.arange(N, dtype=np.int64) * 2654435761) % (1 << 16)


# -- Count-Min / CountSketch ----------------------------------------------------------------------
def _linear_n_field(b):
    """The inner sketch's n field of PrivateCountMin/PrivateCountSketch bytes (docs/format.md)."""
    pos = 8 + 1 + 8 + 8 + 8  # header, kind, num, den, shift
    (f2w,) = struct.unpack_from("<I", b, pos)
    pos += 4 + 8 * f2w + 4  # F2 row, inner length prefix
    return struct.unpack_from("<q", b, pos + 8 + 4 + 4 + 8)[0]  # inner header, width, depth, seed


def _check_published_linear(pub, live):
    ref_cells = live.cells()
    for name, path in PATHS.items():
        q = path(pub)
        assert q.published, name
        assert q.n is None, name
        r = repr(q)
        assert str(N) not in r and f"{N:,}" not in r and not re.search(r"\bn=", r), (name, r)
        b = q.to_bytes()
        _assert_not_in_bytes(b, N)
        assert _linear_n_field(b) == 0, name
        assert np.array_equal(q.cells(), ref_cells), name  # the noisy cells are all that travels
        with pytest.raises(RuntimeError, match="read-only"):
            q.update(1)
        with pytest.raises(RuntimeError, match="read-only"):
            q.update_many(np.array([1, 2], dtype=np.int64))


@pytest.mark.parametrize("noise", NOISE)
@pytest.mark.parametrize("cls", [d.PrivateCountMin, d.PrivateCountSketch])
def test_published_linear_sketch_withholds_n(cls, noise):
    p = cls(256, 5, seed=11, **NOISE[noise])
    p.update_many(_stream())
    assert p.n == N  # the live object is the data holder's
    assert _linear_n_field(p.to_bytes()) == N
    pub = p.release().sketch
    _check_published_linear(pub, p)
    assert pub.metadata["assumes_public_length"] is False


@pytest.mark.parametrize("noise", NOISE)
@pytest.mark.parametrize("cls,base", [(d.PrivateCountMin, d.CountMin), (d.PrivateCountSketch, d.CountSketch)])
def test_published_from_sketch_withholds_n(cls, base, noise):
    s = base(256, 5, seed=3)
    s.update_many(_stream())
    p = cls.from_sketch(s, seed=4, **NOISE[noise])
    pub = p.release().sketch
    _check_published_linear(pub, p)


@pytest.mark.parametrize("cls", [d.PrivateCountMin, d.PrivateCountSketch])
def test_published_linear_native_object_is_read_only(cls):
    p = cls(64, 3, epsilon=1.0)
    p.update_many(np.arange(1000, dtype=np.int64))
    pub = p.release().sketch
    assert pub._impl.length_withheld and not p._impl.length_withheld
    with pytest.raises(RuntimeError, match="withheld"):
        pub._impl.update(1)
    with pytest.raises(RuntimeError, match="withheld"):
        pub._impl.update_counted(1, -2)
    with pytest.raises(RuntimeError, match="withheld"):
        pub._impl.update_many(np.array([1, 2], dtype=np.int64))


@pytest.mark.parametrize("cls", [d.PrivateCountMin, d.PrivateCountSketch])
def test_published_bytes_without_the_withheld_bit_load_withheld(cls):
    # published bytes that still carry n (no withheld bit): loading drops n, so no copy repeats it
    p = cls(64, 3, epsilon=1.0, seed=2)
    p.update_many(_stream())
    old = _published_keeping_n(p)
    q = cls.from_bytes(old)
    assert q.published and q.n is None
    assert _linear_n_field(q.to_bytes()) == 0
    _assert_not_in_bytes(q.to_bytes(), N)


@pytest.mark.parametrize("cls", [d.PrivateCountMin, d.PrivateCountSketch])
def test_withheld_length_must_be_written_as_zero(cls):
    p = cls(64, 3, epsilon=1.0)
    p.update_many(np.arange(50, dtype=np.int64))
    b = bytearray(p.release().sketch.to_bytes())
    assert b[8] & 0x20  # the withheld bit of the noise-kind byte (docs/format.md)
    pos = 8 + 25
    (f2w,) = struct.unpack_from("<I", b, pos)
    pos += 4 + 8 * f2w + 4 + 8 + 16
    struct.pack_into("<q", b, pos, 50)
    with pytest.raises(ValueError, match="withheld"):
        cls.from_bytes(bytes(b))


def test_count_min_noisy_total():
    p = d.PrivateCountMin(512, 7, epsilon=1.0, seed=5)
    p.update_many(_stream())
    pub = p.release().sketch
    t = pub.noisy_total()
    assert t == p.noisy_total()  # post-processing of the same noisy cells
    cells = pub.cells()
    assert t == pytest.approx(cells.sum(axis=1).mean())
    assert abs(t - N) < 2000 and t != N  # row sums of Laplace(7) noise over 512 cells
    g = d.PrivateCountMin(512, 7, rho=0.5, seed=5)
    g.update_many(_stream())
    gp = g.release().sketch
    shift = gp.metadata["shift"]
    assert shift > 0
    assert gp.noisy_total() == pytest.approx(gp.cells().sum(axis=1).mean() - 512 * shift)
    assert abs(gp.noisy_total() - N) < 2000
    assert not hasattr(d.PrivateCountSketch, "noisy_total")  # its cells do not determine n


# -- dyadic ---------------------------------------------------------------------------------------
def _dyadic_n_mass(b):
    """(n, mass) fields of PrivateDyadicCountSketch bytes (docs/format.md, family 9)."""
    levels = b[11]
    pos = 8 + 4 + 16 * levels + 4 + 4 + 4 + 8
    return struct.unpack_from("<qQ", b, pos)


def _dyadic_max_cell(s):
    return max(int(np.abs(s.level_cells(j)).max()) for j in range(1, s.universe_bits + 1))


def _live_dyadic(noise, seed=7):
    p = d.PrivateDyadicCountSketch(16, width=64, depth=3, seed=seed, **NOISE[noise])
    p.update_many(_stream())
    # deletions: the gross absorbed mass then exceeds n and reveals more than n
    p.update_many(np.arange(500, dtype=np.int64), np.full(500, -3, dtype=np.int64))
    p.update_many(np.arange(500, dtype=np.int64), np.full(500, 3, dtype=np.int64))
    return p


@pytest.mark.parametrize("noise", NOISE)
def test_published_dyadic_withholds_n_and_mass(noise):
    p = _live_dyadic(noise)
    assert p.n == N
    live_n, live_mass = _dyadic_n_mass(p.to_bytes())
    assert live_n == N and live_mass > N + 2000  # gross mass: deletions counted
    pub = p.release().sketch
    for name, path in PATHS.items():
        q = path(pub)
        assert q.published and q.n is None, name
        r = repr(q)
        assert str(N) not in r and not re.search(r"\bn=", r), (name, r)
        b = q.to_bytes()
        _assert_not_in_bytes(b, N, live_mass)
        n_field, mass_field = _dyadic_n_mass(b)
        assert n_field == 0 and mass_field == _dyadic_max_cell(q), name  # a bound from the noisy cells
        assert q.noisy_total() == p.noisy_total() == pytest.approx(q.rank(2**16))
        assert q.quantile(0.5) == p.quantile(0.5)
        with pytest.raises(RuntimeError, match="read-only"):
            q.update(1)
        with pytest.raises(RuntimeError, match="withheld"):
            q._impl.update(1, 1)
        with pytest.raises(RuntimeError, match="withheld"):
            q._impl.update_many(np.array([1], dtype=np.uint64), None)


@pytest.mark.parametrize("noise", NOISE)
def test_published_dyadic_from_sketch_withholds_n_and_mass(noise):
    s = d.DyadicCountSketch(16, width=64, depth=3, seed=1)
    s.update_many(_stream())
    pub = d.PrivateDyadicCountSketch.from_sketch(s, seed=2, **NOISE[noise]).release().sketch
    for path in PATHS.values():
        q = path(pub)
        assert q.n is None and not re.search(r"\bn=", repr(q))
        b = q.to_bytes()
        _assert_not_in_bytes(b, N, s._impl.mass)
        assert _dyadic_n_mass(b) == (0, _dyadic_max_cell(q))


def _fmix64(h):
    m = 2**64 - 1
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & m
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & m
    return h ^ (h >> 33)


def _checksum64(b):
    """dyadic::checksum64 (cpp/include/dpsketch/dyadic/dyadic_count_sketch.hpp)."""
    m, p = 2**64 - 1, 0x9E3779B97F4A7C15
    h = 0x243F6A8885A308D3 ^ len(b)
    i = 0
    while i + 8 <= len(b):
        h = ((h ^ int.from_bytes(b[i:i + 8], "little")) * p) & m
        h = ((h << 29) | (h >> 35)) & m
        i += 8
    h = ((h ^ int.from_bytes(b[i:].ljust(8, b"\0"), "little")) * p) & m
    return _fmix64(h)


def _reseal(body):
    """Native bytes with header flags (byte 7, set by the Python layer after the checksum) and a
    fresh checksum of the bytes as the native layer wrote them."""
    native = bytes(body[:7]) + b"\0" + bytes(body[8:])
    return bytes(body) + _checksum64(native).to_bytes(8, "little")


def test_withheld_dyadic_bytes_are_canonical():
    pub = _live_dyadic("gaussian").release().sketch
    b = pub.to_bytes()
    body, trailer = bytearray(b[:-9]), b[-9:]  # release-state trailer after the checksum
    native = bytes(body[:-8])
    assert _reseal(native) == bytes(body)  # the checksum port is right
    assert native[8] & 0x20  # the withheld bit of the noise-kind byte (docs/format.md)
    levels = native[11]
    pos = 8 + 4 + 16 * levels + 20
    for n_field, mass_field in ((5, _dyadic_max_cell(pub)), (0, _dyadic_max_cell(pub) + 1)):
        forged = bytearray(native)
        struct.pack_into("<qQ", forged, pos, n_field, mass_field)
        with pytest.raises(ValueError, match="withheld"):
            d.PrivateDyadicCountSketch.from_bytes(_reseal(forged) + trailer)


def test_published_dyadic_bytes_without_the_withheld_bit_load_withheld():
    p = _live_dyadic("laplace")
    old = _published_keeping_n(p)
    q = d.PrivateDyadicCountSketch.from_bytes(old)
    assert q.published and q.n is None
    assert _dyadic_n_mass(q.to_bytes()) == (0, _dyadic_max_cell(q))


# -- budget= on PrivateDyadicCountSketch ----------------------------------------------------------
def test_dyadic_budget_refuses_before_building():
    from dpsketch.accounting.budget import used_value

    b = d.Budget(rho=0.3)
    with pytest.raises(d.errors.BudgetExceededError):
        d.PrivateDyadicCountSketch(12, width=32, depth=3, rho=0.5, budget=b)
    assert b.ledger == [] and b.spent().rho == 0
    s = d.DyadicCountSketch(12, width=32, depth=3, seed=1)
    s.update_many(np.arange(100, dtype=np.int64))
    with pytest.raises(d.errors.BudgetExceededError):
        d.PrivateDyadicCountSketch.from_sketch(s, rho=0.5, budget=b)
    assert b.ledger == []
    p = d.PrivateDyadicCountSketch(12, width=32, depth=3, rho=0.1, budget=b)
    q = d.PrivateDyadicCountSketch.from_sketch(s, rho=0.15, noise_allocation="zhao", budget=b)
    assert [x.mechanism for x in b.ledger] == ["PrivateDyadicCountSketch"] * 2
    assert [x.rho for x in b.ledger] == [float(used_value(0.1)), float(used_value(0.15))]
    assert p.privacy()["rho_used"] == pytest.approx(b.ledger[0].rho)
    assert q.privacy()["rho_used"] == pytest.approx(b.ledger[1].rho)
    with pytest.raises(d.errors.BudgetExceededError):
        d.PrivateDyadicCountSketch(12, width=32, depth=3, rho=0.1, budget=b)
    assert len(b.ledger) == 2


def test_dyadic_budget_epsilon():
    from dpsketch.accounting.budget import used_value

    b = d.Budget(epsilon=1.0)
    with pytest.raises(d.errors.BudgetExceededError):
        d.PrivateDyadicCountSketch(12, width=32, depth=3, epsilon=1.5, budget=b)
    assert b.ledger == []
    p = d.PrivateDyadicCountSketch(12, width=32, depth=3, epsilon=0.7, budget=b)
    assert b.ledger[0].epsilon == float(used_value(0.7)) and b.ledger[0].rho == 0
    assert p.privacy()["epsilon_used"] == pytest.approx(b.ledger[0].epsilon)
    s = d.DyadicCountSketch(12, width=32, depth=3)
    with pytest.raises(d.errors.BudgetExceededError):
        d.PrivateDyadicCountSketch.from_sketch(s, epsilon=0.5, budget=b)
    d.PrivateDyadicCountSketch.from_sketch(s, epsilon=0.3, budget=b)
    assert len(b.ledger) == 2
    with pytest.raises(TypeError, match="Budget"):
        d.PrivateDyadicCountSketch(12, width=32, depth=3, epsilon=0.1, budget=0.5)


def test_envelope_length_error_does_not_echo_n():
    h = d.SketchHeavyHitters(k=2, capacity=8, epsilon=1, delta=1e-3, max_stream_length=1000)
    h.update_many(np.arange(987, dtype=np.int64))
    with pytest.raises(ValueError, match="max_stream_length") as e:
        h.update_many(np.arange(20, dtype=np.int64))
    assert "987" not in str(e.value)
