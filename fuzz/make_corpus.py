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


ACCESS_LINES = [
    b'127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif?x=1 HTTP/1.0" 200 2326 '
    b'"http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)"',
    b'2001:db8::1 - - [01/Jan/1970:00:00:00 +0000] "POST /a\\"b\\\\c\\xff HTTP/1.1" 404 - "-" "-" "extra" 0.01',
    b'10.0.0.1 - - [bad] "-" 400 0 "-" "curl/8.0 \\"q\\""',
    b'h - - [t] "GET /only" 2x0 1',
]
JSON_LINES = [
    b'{"path": "/a\\u00e9\\"\\n", "a": -1.5e3, "user": null, "o": {"x": [1, {"y": "}"}]}}',
    b'{"\\u00e9": "\\ud83d\\ude00 \\ud800", "path": "/b", "path": "/c"}',
    b'{"path": 01}', b'[1]', b'{"a": [1,]}', b"{}",
]


def log_format_seeds() -> None:
    """fuzz_log_formats: a mode byte (low 4 bits: 0-3 common/combined, 4-9 JSON, 10-15 regex;
    0x10 strip_query, 0x20 replace invalid UTF-8, 0x40 a 24-byte line limit), then lines."""
    for mode in (0, 2, 0x12, 0x42):
        write("fuzz_log_formats", f"access-{mode:02x}", bytes([mode]) + b"\r\n".join(ACCESS_LINES) + b"\n\xff\n")
    for mode in (4, 0x24):
        write("fuzz_log_formats", f"json-{mode:02x}", bytes([mode]) + b"\n".join(JSON_LINES) + b"\n\n")
    for mode in (10, 11, 12):
        write("fuzz_log_formats", f"regex-{mode:02x}", bytes([mode]) + b"\n".join(ACCESS_LINES[:2]) + b"\nacbx\n\xc3\xa9")


def line_splitter_seeds() -> None:
    """fuzz_line_splitter: max_line byte, policy byte (% 3; 0x10 int keys, 0x20 hashes), cut byte, text."""
    text = b"  a \r\nb\r\rc\n\xff\n" + b"x" * 40 + b"\n12\n-7\n99999999999999999999\n\xe2\x80\xa8 last"
    for a, b, cut in ((0x40, 0, 7), (8, 1, 20), (8, 2, 45), (0x40, 0x10, 60), (0x40, 0x21, 3), (3, 0x22, 50)):
        write("fuzz_line_splitter", f"lines-{a:02x}-{b:02x}-{cut}", bytes([a, b, cut]) + text)


def pair_coder_seeds() -> None:
    """fuzz_pair_coder: mode byte (1 str keys, 2 str ids, 4 two halves), m, c, then (key, id) pairs
    (id bit 0x80 ends a batch)."""
    rng = random.Random(3)
    for mode in range(8):
        pairs = bytes(rng.randrange(256) for _ in range(2 * 40))
        write("fuzz_pair_coder", f"pairs-{mode}", bytes([mode, 2, 3]) + pairs)


TARGETS = ("fuzz_from_bytes", "fuzz_operations", "fuzz_dyadic_bytes", "fuzz_line_splitter", "fuzz_pair_coder",
           "fuzz_log_formats")

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
    line_splitter_seeds()
    pair_coder_seeds()
    log_format_seeds()
    for target in TARGETS:
        files = list((ROOT / target).iterdir())
        print(f"{target}: {len(files)} files, {sum(f.stat().st_size for f in files)} bytes")
