"""Writes the seed corpus of the fuzz targets (fuzz/corpus/<target>/), deterministically.

    python fuzz/make_corpus.py        # needs dpsketch installed (pip install .)

fuzz_from_bytes: the native to_bytes() of every serializable class and key type (empty, small, evicting;
private sketches also in their published, length-withheld form), plus hand-made blobs at the limits (n = 2^62, |cell| near 2^62). fuzz_operations: byte
strings choosing each structure (first byte: structure, 0x80 = str keys) and a mix of
operations. Files are small (< 2 KB). Regression inputs (named regression-*) are kept as they are.
"""

from __future__ import annotations

import hashlib
import random
import struct
from pathlib import Path

import numpy as np

import dpsketch

ROOT = Path(__file__).resolve().parent / "corpus"
LIMIT, EXCESS = 2**62, 2**62 - 1


def write(target: str, name: str, data: bytes) -> None:
    d = ROOT / target
    d.mkdir(parents=True, exist_ok=True)
    assert len(data) < 2048, (name, len(data))
    (d / f"{name}-{hashlib.sha1(data).hexdigest()[:8]}").write_bytes(data)


def stream(kind: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    ints = (rng.zipf(1.3, size=n) % 9).astype(np.int64)
    return ints if kind == "int" else [f"k{v}" for v in ints.tolist()]


def from_bytes_seeds() -> None:
    makers = {
        "ss": lambda: dpsketch.SpaceSaving(4),
        "mg": lambda: dpsketch.MisraGries(4),
        "cm": lambda: dpsketch.CountMin(8, 3, seed=1),
        "cs": lambda: dpsketch.CountSketch(8, 3, seed=2),
        "pcm": lambda: dpsketch.PrivateCountMin(8, 3, epsilon=1.0, seed=3),
        "pcs": lambda: dpsketch.PrivateCountSketch(8, 3, epsilon=1.0, seed=4),
        "pcm-gauss": lambda: dpsketch.PrivateCountMin(8, 2, rho=0.5, seed=5),
    }
    for name, make in makers.items():
        for kind in ("int", "str"):
            for n in (0, 3, 40):
                s = make()
                s.update_many(stream(kind, max(n, 1), n))  # fixes the key type
                if n == 0:
                    s = make()
                    s.update_many(stream(kind, 1, 0))
                # The native bytes: the Python layer's header flags and trailer are not the core's.
                write("fuzz_from_bytes", f"{name}-{kind}-{n}", s._impl.to_bytes())
                if name.startswith("p") and n == 40:  # the published form: length withheld
                    write("fuzz_from_bytes", f"{name}-{kind}-{n}-published", s.release()._impl.to_bytes())
    # The F2 row of the envelope's CountSketch is not reachable from Python: build it by hand.
    hdr = lambda fam, tag=1: b"DPSK" + bytes([1, fam, tag, 0])
    inner = hdr(4) + struct.pack("<IIQQ", 2, 1, 9, 3) + struct.pack("<2q", 2, -1)
    write("fuzz_from_bytes", "pcs-f2", hdr(8) + struct.pack("<BQQqI", 1, 2, 1, 0, 2) + struct.pack("<2q", 4, -2)
          + struct.pack("<I", len(inner)) + inner)
    # At the limits (valid bytes).
    write("fuzz_from_bytes", "ss-at-limit", hdr(2) + struct.pack("<IQI", 2, LIMIT, 1) + struct.pack("<qQ", 7, LIMIT))
    write("fuzz_from_bytes", "mg-at-limit",
          hdr(1) + struct.pack("<IQQI", 1, LIMIT, 0, 1) + struct.pack("<qQ", 7, LIMIT) + struct.pack("<I", 0))
    write("fuzz_from_bytes", "cm-at-limit", hdr(3) + struct.pack("<IIQQ", 1, 1, 0, LIMIT) + struct.pack("<q", LIMIT))
    cs = hdr(4) + struct.pack("<IIQQ", 1, 1, 0, 0) + struct.pack("<q", 0)
    write("fuzz_from_bytes", "pcs-cell-at-limit",
          hdr(8) + struct.pack("<BQQqI", 1, 1, 1, 0, 1) + struct.pack("<q", -EXCESS) + struct.pack("<I", len(cs))
          + cs[:-8] + struct.pack("<q", EXCESS))
    # A count of 2^64 - 2, past the 2^62 limit (must be rejected).
    write("fuzz_from_bytes", "ss-2^64-2", hdr(2) + struct.pack("<IQI", 1, 2**64 - 2, 1) + struct.pack("<qQ", 7, 2**64 - 2))


def operations_seeds() -> None:
    rnd = random.Random(11)
    for which in range(7):
        for keys in (0, 0x80):
            for i in range(3):
                ops = bytearray([which | keys, rnd.randrange(256), rnd.randrange(256), rnd.randrange(256)])
                for _ in range(rnd.choice((8, 40, 200))):
                    op = rnd.choice((0, 0, 1, 2, 3, 3, 4, 5, 6, 7))
                    ops += bytes([op, rnd.randrange(256)])
                    if op == 2:
                        ops += bytes(rnd.randrange(256) for _ in range(ops[-1] % 16))
                write("fuzz_operations", f"ops-{which}-{'str' if keys else 'int'}-{i}", bytes(ops))


def dyadic_seeds() -> None:
    """Small non-private and private dyadic sketches (families 5 and 9), native bytes."""
    rng = np.random.default_rng(11)
    for bits, width, depth, n in ((4, 4, 2, 0), (8, 8, 2, 30), (10, 8, 2, 200)):
        items = rng.integers(0, 2**bits, n)
        s = dpsketch.DyadicCountSketch(bits, width=width, depth=depth, seed=bits)
        s.update_many(items)
        write("fuzz_dyadic_bytes", f"dcs-{bits}-{n}", s._impl.to_bytes())
        p = dpsketch.PrivateDyadicCountSketch(bits, width=width, depth=depth, rho=1.0, seed=bits)
        p.update_many(items)
        write("fuzz_dyadic_bytes", f"pdcs-{bits}-{n}", p._impl.to_bytes())
        write("fuzz_dyadic_bytes", f"pdcs-{bits}-{n}-published", p.release()._impl.to_bytes())
    t = dpsketch.DyadicCountSketch(6, width=4, depth=2, seed=1)
    t.update_many(np.array([1, 2, 3], dtype=np.int64), counts=np.array([5, -2, 1], dtype=np.int64))
    write("fuzz_dyadic_bytes", "dcs-turnstile", t._impl.to_bytes())


TARGETS = ("fuzz_from_bytes", "fuzz_operations", "fuzz_dyadic_bytes")

if __name__ == "__main__":
    for target in TARGETS:
        d = ROOT / target
        if d.exists():
            for f in d.iterdir():
                if not f.name.startswith("regression-"):
                    f.unlink()
    from_bytes_seeds()
    operations_seeds()
    dyadic_seeds()
    for target in TARGETS:
        files = list((ROOT / target).iterdir())
        print(f"{target}: {len(files)} files, {sum(f.stat().st_size for f in files)} bytes")
