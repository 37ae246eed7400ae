"""Golden blobs (tests/data/golden, tools/make_golden_blobs.py; docs/format.md): bytes committed
once and never rewritten, one per family, key type and flag set. Every blob must load from Python,
show the manifest's facts, and re-serialize byte-identically through to_bytes, pickle, copy and
the native class. The same blobs are read by the C++ core in tests/cpp/golden_blobs.cpp.

The check can fail: a changed byte, a truncation and a wrong manifest fact are all reported."""

import copy
import json
import pathlib
import pickle

import pytest

import dpsketch as d
from dpsketch import _core

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "data" / "golden"
MANIFEST = json.loads((GOLDEN / "manifest.json").read_text(encoding="utf-8"))
ENTRIES = MANIFEST["blobs"]
IDS = [e["file"] for e in ENTRIES]

NATIVE = {
    "MisraGries": (_core, "MisraGries"), "SpaceSaving": (_core, "SpaceSaving"),
    "CountMin": (_core, "CountMin"), "CountSketch": (_core, "CountSketch"),
    "PrivateCountMin": (_core.release, "PrivateCountMin"), "PrivateCountSketch": (_core.release, "PrivateCountSketch"),
}


def _native_class(entry):
    fam = entry["family"]
    if fam == "DyadicCountSketch":
        return _core.dyadic.DyadicCountSketch
    if fam == "PrivateDyadicCountSketch":
        return _core.dyadic.PrivateDyadicCountSketch
    mod, stem = NATIVE[fam]
    return getattr(mod, stem + ("Str" if entry["key_tag"] == 2 else "Int"))  # tag 0: int layout


def _fact_problems(obj, facts) -> list:
    out = []

    def same(name, got, want):
        if got != want and not (isinstance(want, float) and got == pytest.approx(want)):
            out.append(f"{name}: {got!r} != {want!r}")

    for k, want in facts.items():
        if k == "estimates":
            for probe, est in want:
                same(f"estimate({probe!r})", obj.estimate(probe), est)
        elif k == "ranks":
            for probe, r in want:
                same(f"rank({probe!r})", float(obj.rank(probe)), r)
        elif k == "items":
            same("items", len(obj.items()), want)
        elif k == "release_count":
            same(k, obj._impl.release_count, want)
        elif k == "seeded":
            same(k, obj.reproducible_not_secret, want)
        elif k == "bounds":
            same(k, None if obj.bounds is None else list(obj.bounds), want)
        else:
            same(k, getattr(obj, k), want)
    return out


def _problems(entry, data: bytes) -> list:
    """Everything that differs between `data` read back and the golden entry (empty: it matches)."""
    golden = (GOLDEN / entry["file"]).read_bytes()
    cls = getattr(d, entry["family"])
    try:
        obj = cls.from_bytes(data)
    except ValueError as e:
        return [f"rejected: {e}"]
    out = []
    if obj.to_bytes() != golden:
        out.append("to_bytes() differs from the golden blob")
    if (data[5], data[6], data[7], len(data)) != (entry["family_byte"], entry["key_tag"], entry["header_flags"],
                                                  entry["bytes"]):
        out.append("header bytes or length differ from the manifest")
    return out + _fact_problems(obj, entry["facts"])


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_golden_blob_reads_and_reserializes_identically(entry):
    data = (GOLDEN / entry["file"]).read_bytes()
    assert _problems(entry, data) == []
    obj = getattr(d, entry["family"]).from_bytes(data)
    for path in (copy.copy, copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))):
        assert path(obj).to_bytes() == data
    native = _native_class(entry).from_bytes(data)
    assert native.to_bytes() == data  # the C++ core alone reads and writes the same bytes
    flags = data[7]
    assert native.release_count > 0 if flags & 0x02 else native.release_count == 0
    assert native.published == bool(flags & 0x04) and native.seeded == bool(flags & 0x08)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_golden_flags_mean_what_the_manifest_says(entry):
    data = (GOLDEN / entry["file"]).read_bytes()
    obj = getattr(d, entry["family"]).from_bytes(data)
    flags, fam = set(entry["flags"]), entry["family"]
    assert bool(data[7] & 0x02) == bool(flags & {"released", "published"})
    assert obj._impl.release_count == (1 if flags & {"released", "published"} else 0)
    if fam in ("MisraGries", "SpaceSaving"):
        assert obj.merged == ("merged" in flags) == bool(data[7] & 0x01)
    if fam.startswith("Private"):
        assert obj.published == ("published" in flags)
        assert obj.reproducible_not_secret == ("seeded" in flags)
        assert obj.neighbours == ("replace" if "replace" in flags else "add_remove")
        if "published" in flags:
            assert obj.n is None and obj._impl.length_withheld  # a published copy withholds n
            assert "n" not in entry["facts"]
    if "untyped" in flags:
        assert data[6] == 0 and obj.key_type is None and obj.n == 0
        obj.update(5)  # the first update fixes the key type
        assert obj.to_bytes()[6] == 1


def test_golden_set_covers_every_family_key_type_and_flag_set():
    have = {(e["family"], e["facts"].get("key_type", "int"), tuple(e["flags"])) for e in ENTRIES}
    for fam in ("MisraGries", "SpaceSaving"):
        for kt in ("int", "str"):
            for fl in ("fresh", "merged", "released"):
                assert (fam, kt, (fl,)) in have
        assert (fam, None, ("untyped",)) in have
    for fam in ("CountMin", "CountSketch"):
        for kt in ("int", "str"):
            assert (fam, kt, ("fresh",)) in have and (fam, kt, ("merged",)) in have
        assert (fam, None, ("untyped",)) in have
    for fam in ("PrivateCountMin", "PrivateCountSketch"):
        for kt in ("int", "str"):
            for fl in (("fresh",), ("seeded",), ("replace",), ("released",), ("published",), ("published", "seeded")):
                assert (fam, kt, fl) in have
        assert (fam, None, ("untyped",)) in have
    assert ("DyadicCountSketch", "int", ("fresh",)) in have
    for fl in (("fresh",), ("seeded",), ("replace",), ("released",), ("published",), ("published", "seeded")):
        assert ("PrivateDyadicCountSketch", "int", fl) in have
    assert sorted(p.name for p in GOLDEN.glob("*.bin")) == sorted(IDS)
    assert all(e["bytes"] <= 4096 for e in ENTRIES)


def test_untyped_blobs_are_read_with_int64_keys():
    data = (GOLDEN / "misragries-untyped.bin").read_bytes()
    assert _core.MisraGriesInt.from_bytes(data).untyped
    with pytest.raises(ValueError, match="read with int64 keys"):
        _core.MisraGriesStr.from_bytes(data)


# -- the check can fail ----------------------------------------------------------------------------
@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_every_changed_byte_fails_the_golden_check(entry):
    golden = (GOLDEN / entry["file"]).read_bytes()
    rejected = 0
    for i in range(len(golden)):
        changed = bytearray(golden)
        changed[i] ^= 0x01
        problems = _problems(entry, bytes(changed))
        assert problems, f"flipping bit 0 of byte {i} went unnoticed"
        rejected += problems[0].startswith("rejected")
    for k in (1, 9):
        assert _problems(entry, golden[:-k])
    assert rejected >= 6  # at least the magic, version and family bytes are rejected outright


@pytest.mark.parametrize("entry", ENTRIES[::7], ids=IDS[::7])
def test_a_wrong_manifest_fact_fails_the_golden_check(entry):
    data = (GOLDEN / entry["file"]).read_bytes()
    for key in ("release_count", "n", "width", "capacity"):
        if key in entry["facts"] and entry["facts"][key] is not None:
            wrong = copy.deepcopy(entry)
            wrong["facts"][key] += 1
            assert _problems(wrong, data), key


# -- serialized_size -------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_serialized_size_is_the_length_of_the_bytes(entry):
    data = (GOLDEN / entry["file"]).read_bytes()
    obj = getattr(d, entry["family"]).from_bytes(data)
    assert obj.serialized_size() == len(obj.to_bytes()) == len(data)
    assert _native_class(entry).from_bytes(data).serialized_size() == len(data)


def test_serialized_size_follows_updates_merges_and_releases():
    for key_type, keys in (("int", [1, 2, 2, 3, 4, 5, 5, 5]), ("str", ["a", "bb", "bb", "ccc", "", "é", "é"])):
        for make in (lambda: d.MisraGries(3), lambda: d.SpaceSaving(3), lambda: d.CountMin(5, 2, seed=1),
                     lambda: d.CountSketch(5, 2, seed=1), lambda: d.PrivateCountMin(5, 2, epsilon=1.0, seed=1)):
            s = make()
            assert s.serialized_size() == len(s.to_bytes())  # untyped
            for k in keys:
                s.update(k)
                assert s.serialized_size() == len(s.to_bytes())
            if isinstance(s, d.PrivateCountMin):
                pub = s.release().sketch
                assert s.serialized_size() == len(s.to_bytes()) and pub.serialized_size() == len(pub.to_bytes())
                continue
            if isinstance(s, d.MisraGries):
                s.release(epsilon=1.0, delta=1e-3)  # the trailer
                assert s.serialized_size() == len(s.to_bytes())
            other = make()
            other.update_many(keys[:3])
            s.merge(other)
            assert s.serialized_size() == len(s.to_bytes())
    big = d.SpaceSaving(70_000)  # free slots padded (docs/format.md)
    big.update_many([1, 2, 3])
    assert big.serialized_size() == len(big.to_bytes()) > 70_000
    p = d.PrivateDyadicCountSketch(6, width=4, depth=3, rho=1.0, seed=2)
    p.update_many([1, 2, 3])
    assert p.serialized_size() == len(p.to_bytes())
    pub = p.release().sketch
    assert p.serialized_size() == len(p.to_bytes()) and pub.serialized_size() == len(pub.to_bytes())
