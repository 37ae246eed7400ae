"""Hardening of the native core against crafted bytes and overlong streams.

Limits (docs/hardening.md, cpp/include/dpsketch/common/limits.hpp): n <= 2^62 for the counter
summaries; for the sketches every |cell| and |n| <= mass <= 2^62 (total |count| absorbed plus the
starting max |cell|); from_bytes allocates only what the length of its input backs. Probes that could corrupt memory on a broken build run in a
subprocess, so a native crash fails the test instead of taking pytest down.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from dpsketch import CountMin, CountSketch, MisraGries, SpaceSaving
from dpsketch import _core

LIMIT = 2**62
INT, STR = 1, 2  # key type tags
FAMILY = {"MisraGries": 1, "SpaceSaving": 2, "CountMin": 3, "CountSketch": 4,
          "PrivateCountMin": 7, "PrivateCountSketch": 8}


# -- blob builders (docs/format.md) ------------------------------------------------------------
def header(family, tag=INT):
    return b"DPSK" + bytes([1, FAMILY[family], tag, 0])


def key(k, tag):
    if tag == INT:
        return struct.pack("<q", k)
    b = str(k).encode()
    return struct.pack("<I", len(b)) + b


def ss_blob(capacity, n, records, tag=INT, tail=b""):
    body = struct.pack("<IQI", capacity, n, len(records))
    body += b"".join(key(k, tag) + struct.pack("<Q", c) for k, c in records)
    return header("SpaceSaving", tag) + body + tail


def mg_blob(capacity, n, decrements, records, zero_keys=(), tag=INT):
    body = struct.pack("<IQQI", capacity, n, decrements, len(records))
    body += b"".join(key(k, tag) + struct.pack("<Q", c) for k, c in records)
    zeros = capacity - len(records)
    zk = list(zero_keys) + [None] * (zeros - len(zero_keys))
    body += struct.pack("<I", zeros) + b"".join(b"\x00" if k is None else b"\x01" + key(k, tag) for k in zk)
    return header("MisraGries", tag) + body


def sketch_blob(family, width, depth, n, cells, seed=5, tag=INT):
    return header(family, tag) + struct.pack("<IIQQ", width, depth, seed, n) + struct.pack(f"<{len(cells)}q", *cells)


def private_blob(family, inner, f2=(), shift=0, tag=INT, kind=1, num=3, den=1, f2_width=None):
    f2_width = len(f2) if f2_width is None else f2_width
    body = struct.pack("<BQQqI", kind, num, den, shift, f2_width) + struct.pack(f"<{len(f2)}q", *f2)
    return header(family, tag) + body + struct.pack("<I", len(inner)) + inner


def _run(code: str, timeout=120):
    """Runs code in a fresh interpreter; returns (returncode, stdout, stderr)."""
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


# -- counts near 2^64 never reach the hot paths ----------------------------------------
# One interpreter runs every probe of a key type and prints each outcome as soon as it is known:
# a probe that crashes the interpreter is missing from the output, and its test fails.
PROBE = """
import pickle, sys
import dpsketch
for case, blob, cls_name, item in pickle.loads(bytes.fromhex({arg!r})):
    cls = getattr(dpsketch, cls_name)
    try:
        s = cls.from_bytes(blob)
    except ValueError:
        print(case, "from_bytes:ValueError", flush=True); continue
    before = s.to_bytes()
    try:
        s.update(item)
    except OverflowError:
        print(case, "update:OverflowError:" + ("unchanged" if s.to_bytes() == before else "CHANGED"), flush=True)
        continue
    print(case, "update:accepted", flush=True)
"""

_probe_results = {}


def _probe(case, tag):
    if tag not in _probe_results:
        import pickle

        item = 7 if tag == INT else "7"
        probes = [(c, make(tag), cls_name, item) for c, (make, cls_name) in CRAFTED_COUNTS.items()]
        rc, out, err = _run(PROBE.format(arg=pickle.dumps(probes).hex()))
        results = dict(line.split(" ", 1) for line in out.splitlines())
        _probe_results[tag] = (rc, results, err)
    rc, results, err = _probe_results[tag]
    assert case in results, f"the probe crashed (rc {rc}) at or before {case}: {err[-2000:]}"
    return results[case]


SAFE = {"from_bytes:ValueError", "update:OverflowError:unchanged"}

CRAFTED_COUNTS = {
    # Count 2^64 - 2: one update away from the all-ones value no count may take; must be refused.
    "ss-2^64-2": (lambda t: ss_blob(1, 2**64 - 2, [(7, 2**64 - 2)], t), "SpaceSaving"),
    "mg-2^64-2": (lambda t: mg_blob(1, 2**64 - 2, 0, [(7, 2**64 - 2)], tag=t), "MisraGries"),
    "ss-2^63": (lambda t: ss_blob(2, 2**63, [(7, 2**62), (8, 2**62)], t), "SpaceSaving"),
    "mg-2^63+1": (lambda t: mg_blob(1, 2**63 + 1, 0, [(7, 2**63 + 1)], tag=t), "MisraGries"),
    "ss-limit+1": (lambda t: ss_blob(1, LIMIT + 1, [(7, LIMIT + 1)], t), "SpaceSaving"),
    "cm-int64-max": (lambda t: sketch_blob("CountMin", 1, 1, 2**63 - 1, [2**63 - 1], tag=t), "CountMin"),
    "cs-int64-max": (lambda t: sketch_blob("CountSketch", 1, 1, 2**63 - 1, [-(2**63) + 1], tag=t), "CountSketch"),
    "cm-n-2^64-1": (lambda t: sketch_blob("CountMin", 1, 1, 2**64 - 1, [0], tag=t), "CountMin"),
    "pcm-cell-int64-max": (
        lambda t: private_blob("PrivateCountMin", sketch_blob("CountMin", 2, 1, 0, [2**63 - 1, 2**63 - 1], tag=t), tag=t),
        "PrivateCountMin"),
    "pcs-cell-int64-min": (
        lambda t: private_blob("PrivateCountSketch", sketch_blob("CountSketch", 2, 1, 0, [-(2**63), -(2**63)], tag=t),
                               tag=t), "PrivateCountSketch"),
    "pcs-f2-int64-max": (
        lambda t: private_blob("PrivateCountSketch", sketch_blob("CountSketch", 2, 1, 0, [0, 0], tag=t),
                               f2=(2**63 - 1, 2**63 - 1), tag=t), "PrivateCountSketch"),
    "pcm-n-2^64-1": (
        lambda t: private_blob("PrivateCountMin", sketch_blob("CountMin", 1, 1, 2**63, [0], tag=t), tag=t),
        "PrivateCountMin"),
}


@pytest.mark.parametrize("case", CRAFTED_COUNTS)
@pytest.mark.parametrize("tag", [INT, STR])
def test_crafted_near_max_counts_are_rejected_or_refused(case, tag):
    result = _probe(case, tag)
    assert result in SAFE, f"{case}: {result}"
    if case.startswith(("ss", "mg", "cm", "cs")) or "n-2^64" in case:
        # These break n <= 2^62 (counters) or |cell|, |n| <= 2^62 (sketches): rejected outright.
        assert result == "from_bytes:ValueError", f"{case}: {result}"


def _at_limit(name, tag, n=LIMIT):
    k = 7 if tag == INT else "7"
    if name == "SpaceSaving":
        return SpaceSaving.from_bytes(ss_blob(2, n, [(7, n)], tag)), k
    if name == "MisraGries":
        return MisraGries.from_bytes(mg_blob(2, n, 0, [(7, n)], tag=tag)), k
    if name == "CountMin":
        return CountMin.from_bytes(sketch_blob("CountMin", 1, 2, n, [n, n], tag=tag)), k
    return CountSketch.from_bytes(sketch_blob("CountSketch", 1, 2, n, [n, -n], tag=tag)), k


def _snapshot(s):
    return s.n, s.to_bytes()


@pytest.mark.parametrize("name", ["SpaceSaving", "MisraGries", "CountMin", "CountSketch"])
@pytest.mark.parametrize("tag", [INT, STR])
def test_update_at_the_limit_raises_overflow_and_changes_nothing(name, tag):
    s, k = _at_limit(name, tag)  # legitimate bytes: exactly at the limit
    assert s.n == LIMIT
    before = _snapshot(s)
    with pytest.raises(OverflowError, match="2\\^62"):
        s.update(k)
    assert _snapshot(s) == before
    batch = np.array([7, 8], dtype=np.int64) if tag == INT else ["7", "8"]
    with pytest.raises(OverflowError):
        s.update_many(batch)
    assert _snapshot(s) == before
    if tag == STR:
        with pytest.raises(OverflowError):
            s.update_many(np.array(["7"]))
        assert _snapshot(s) == before


@pytest.mark.parametrize("name", ["SpaceSaving", "MisraGries", "CountMin", "CountSketch"])
@pytest.mark.parametrize("tag", [INT, STR])
def test_batch_crossing_the_limit_is_all_or_nothing(name, tag):
    s, k = _at_limit(name, tag, n=LIMIT - 2)
    before = _snapshot(s)
    three = np.array([7, 8, 9], dtype=np.int64) if tag == INT else ["7", "8", "9"]
    with pytest.raises(OverflowError):
        s.update_many(three)  # 2 would fit, 3 do not: none is applied
    assert _snapshot(s) == before
    s.update_many(three[:2])  # exactly up to the limit is fine
    assert s.n == LIMIT
    with pytest.raises(OverflowError):
        s.update(k)
    assert s.n == LIMIT


def test_merge_beyond_the_limit_raises_overflow_and_changes_nothing():
    a = CountMin.from_bytes(sketch_blob("CountMin", 1, 1, LIMIT - 1, [LIMIT - 1]))
    b = CountMin.from_bytes(sketch_blob("CountMin", 1, 1, 2, [2]))
    before = _snapshot(a)
    with pytest.raises(OverflowError):
        a.merge(b)
    assert _snapshot(a) == before
    c = CountMin.from_bytes(sketch_blob("CountMin", 1, 1, 1, [1]))
    a.merge(c)
    assert a.n == LIMIT and a.cells().tolist() == [[LIMIT]]


@pytest.mark.parametrize("tag", [INT, STR])
def test_releases_at_the_limit_keep_exact_noisy_counts(tag):
    """At n = 2^62 the PMG/DPSS noisy values are count + noise with no int64 wrap: the one heavy
    label is released with a value within a few noise scales of 2^62."""
    k = 7 if tag == INT else "7"
    mg = MisraGries.from_bytes(mg_blob(2, LIMIT, 0, [(7, LIMIT)], tag=tag))
    ss = SpaceSaving.from_bytes(ss_blob(2, LIMIT, [(7, LIMIT)], tag))
    for rel in (mg.release(epsilon=1.0, delta=1e-6, seed=1), ss.release(epsilon=1.0, delta=1e-6, k=1, seed=1)):
        items = dict(rel.items)
        assert list(items) == [k]
        assert abs(items[k] - LIMIT) < 200


@pytest.mark.parametrize("where", ["cell", "f2"])
def test_cell_limit_boundary_is_exact(where):
    """A noisy cell (or F2 cell) of magnitude 2^62 loads and sets the mass, so the next update is
    refused; 2^62 + 1 does not load."""
    from dpsketch import PrivateCountSketch

    def blob(v):
        cell, f2 = (v, 0) if where == "cell" else (0, v)
        return private_blob("PrivateCountSketch", sketch_blob("CountSketch", 1, 1, 3, [cell]), f2=(f2,))

    s = PrivateCountSketch.from_bytes(blob(-LIMIT))
    before = s.to_bytes()
    with pytest.raises(OverflowError):
        s.update(7)  # the F2 row moves with every update: its magnitude counts towards the mass
    assert s.to_bytes() == before
    with pytest.raises(ValueError, match="2\\^62"):
        PrivateCountSketch.from_bytes(blob(-LIMIT - 1))


# -- declared sizes must be backed by the input's length -------------------------------
ALLOC_PROBE = """
import json, resource, struct
import dpsketch

def vm_bytes():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024

# Everything this process maps from now on must fit in 384 MB: an attempt to allocate the ~2 GB a
# crafted capacity declares fails (MemoryError) instead of passing unnoticed.
limit = vm_bytes() + (384 << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
out = {}
for name, (cls_name, blob_hex) in json.loads(BLOBS).items():
    try:
        getattr(dpsketch, cls_name).from_bytes(bytes.fromhex(blob_hex))
        out[name] = "accepted"
    except ValueError:
        out[name] = "ValueError"
    except BaseException as e:
        out[name] = type(e).__name__
print(json.dumps(out))
"""


def _huge_blobs():
    blobs = {}
    for tag, tn in ((INT, "int"), (STR, "str")):
        blobs[f"ss-capacity-2^24-{tn}"] = ("SpaceSaving", ss_blob(2**24, 0, [], tag))
        blobs[f"ss-capacity-2^24-one-item-{tn}"] = ("SpaceSaving", ss_blob(2**24, 1, [(3, 1)], tag))
        blobs[f"ss-size-2^24-{tn}"] = ("SpaceSaving", header("SpaceSaving", tag) + struct.pack("<IQI", 2**24, 0, 2**24))
        blobs[f"mg-capacity-2^24-{tn}"] = ("MisraGries", header("MisraGries", tag) + struct.pack("<IQQI", 2**24, 0, 0, 0))
        blobs[f"mg-positive-2^24-{tn}"] = (
            "MisraGries", header("MisraGries", tag) + struct.pack("<IQQI", 2**24, 0, 0, 2**24) + b"\0" * 64)
        for fam in ("CountMin", "CountSketch"):
            blobs[f"{fam}-2^28-cells-{tn}"] = (fam, header(fam, tag) + struct.pack("<IIQQ", 2**20, 255, 1, 0))
            blobs[f"{fam}-2^31-width-{tn}"] = (fam, header(fam, tag) + struct.pack("<IIQQ", 2**31, 1, 1, 0))
            pfam = "Private" + fam
            inner_hdr = header(fam, tag) + struct.pack("<IIQQ", 2**20, 255, 1, 0)
            blobs[f"{pfam}-inner-2^28-cells-{tn}"] = (pfam, private_blob(pfam, inner_hdr, tag=tag))
            blobs[f"{pfam}-f2-2^32-{tn}"] = (
                pfam, header(pfam, tag) + struct.pack("<BQQqI", 1, 3, 1, 0, 2**32 - 1) + b"\0" * 16)
            blobs[f"{pfam}-inner-length-2^32-{tn}"] = (
                pfam, header(pfam, tag) + struct.pack("<BQQqI", 1, 3, 1, 0, 0) + struct.pack("<I", 2**32 - 1) + b"\0" * 8)
        blobs[f"ss-string-key-length-2^32-{tn}"] = (
            "SpaceSaving", header("SpaceSaving", tag) + struct.pack("<IQI", 4, 1, 1) + struct.pack("<I", 2**32 - 1) + b"ab")
    return blobs


def test_tiny_blobs_declaring_huge_sizes_are_rejected_before_allocating():
    blobs = _huge_blobs()
    code = "BLOBS = " + repr(json.dumps({k: (c, b.hex()) for k, (c, b) in blobs.items()})) + "\n" + ALLOC_PROBE
    rc, out, err = _run(code)
    assert rc == 0, f"the probe crashed (rc {rc}): {err[-2000:]}"
    results = json.loads(out)
    assert set(results) == set(blobs)
    wrong = {k: v for k, v in results.items() if v != "ValueError"}
    assert not wrong, wrong


def test_spacesaving_free_slots_beyond_the_allowance_are_padded_and_round_trip():
    allowance = 2**16
    small = SpaceSaving(allowance + 1)
    small.update(5)
    b = small.to_bytes()  # allowance free slots: no padding
    assert len(b) == 8 + 16 + 16
    big = SpaceSaving(allowance + 3)
    big.update(5)
    b = big.to_bytes()
    assert len(b) == 8 + 16 + 16 + allowance + 2  # one zero byte per free slot
    r = SpaceSaving.from_bytes(b)
    assert r.capacity == allowance + 3 and r.items() == [(5, 1)] and r.to_bytes() == b
    with pytest.raises(ValueError, match="capacity"):
        SpaceSaving.from_bytes(b[:-1])  # padding cut short
    with pytest.raises(ValueError, match="padding"):
        SpaceSaving.from_bytes(b[:-1] + b"\x01")
    # Without padding, allowance free slots still load (bytes written before the padding existed).
    assert SpaceSaving.from_bytes(ss_blob(allowance + 1, 1, [(5, 1)])).capacity == allowance + 1


def test_limits_are_exported():
    assert _core.MAX_STREAM_LENGTH == LIMIT
    assert _core.MAX_CELL_MASS == LIMIT


@pytest.mark.parametrize("name", ["MisraGries", "SpaceSaving"])
def test_counter_merge_beyond_the_stream_limit_is_an_overflow_error(name):
    # Two parts each just over half the limit: the merged n would pass 2^62, which from_bytes
    # rejects, so merge must refuse and change nothing.
    a, _ = _at_limit(name, INT, n=LIMIT // 2 + 1)
    b, _ = _at_limit(name, INT, n=LIMIT // 2 + 1)
    before = _snapshot(a)
    with pytest.raises(OverflowError):
        a.merge(b)
    assert _snapshot(a) == before
    c, _ = _at_limit(name, INT, n=LIMIT // 2)
    d, _ = _at_limit(name, INT, n=LIMIT // 2)
    c.merge(d)  # exactly at the limit still merges
    assert c.n == LIMIT
