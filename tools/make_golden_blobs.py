#!/usr/bin/env python3
"""Write the golden blobs: one serialized object per family, key type and flag set, built
deterministically (fixed hash and noise seeds, tiny streams and shapes), and a manifest of facts
each must still show when read back (tests/sketches/test_golden_blobs.py, tests/cpp/golden_blobs.cpp).

    python3 tools/make_golden_blobs.py [--out tests/data/golden]

Golden blobs are the cross-version contract of docs/format.md: once committed, a blob is never
rewritten; a format change adds blobs (and a new version byte) and keeps reading these. The script
refuses to overwrite a blob whose bytes differ unless --force is given.

Facts are what a reader must reproduce: shape, n (never for a published copy, which withholds it),
the number of items, a few estimates, the release state. Private sketches are built with a fixed
noise seed; the "unseeded" variants are the same bytes written without the seeded flag (through the
native set_release_state), which is what a sketch with secure-generator noise looks like.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

INT_STREAM = [7] * 9 + [3] * 5 + [1, 2, 4, 5, 6, 8] + [3, 7, 7]
STR_STREAM = [str(x) if x != 7 else "héllo" for x in INT_STREAM]
INT_PROBES = [7, 3, 1, 99]
STR_PROBES = ["héllo", "3", "1", "absent"]
MERGE_INT = [7, 7, 9, 9, 9, 10]
MERGE_STR = ["héllo", "héllo", "9", "9", "9", "10"]
DYADIC_STREAM = [0, 1, 1, 5, 9, 17, 17, 17, 33, 40, 41, 62, 63, 63]
DYADIC_PROBES = [0, 17, 32, 63]


def _restamp(obj, count, published, seeded):
    """The object's bytes with another release state, written by the native layer."""
    impl = type(obj._impl).from_bytes(obj.to_bytes())
    impl.set_release_state(count, published, seeded)
    return type(obj).from_bytes(impl.to_bytes())


def _release_count(obj) -> int:
    return int(obj._impl.release_count)


def _keyed_facts(obj, probes) -> dict:
    f = {"key_type": obj.key_type, "release_count": _release_count(obj)}
    if getattr(obj, "published", False):
        f["published"] = True
    else:
        f["n"] = obj.n
    f["estimates"] = [[p, obj.estimate(p)] for p in probes]
    return f


def counters(d):
    out = []
    for key_type, stream, merge_stream, probes in (("int", INT_STREAM, MERGE_INT, INT_PROBES),
                                                   ("str", STR_STREAM, MERGE_STR, STR_PROBES)):
        for cls in (d.MisraGries, d.SpaceSaving):
            def fresh():
                s = cls(4, key_type=key_type)
                s.update_many(stream)
                return s

            s = fresh()
            out.append((s, cls.__name__, key_type, ["fresh"], probes))
            m = fresh()
            other = cls(4, key_type=key_type)
            other.update_many(merge_stream)
            m.merge(other)
            out.append((m, cls.__name__, key_type, ["merged"], probes))
            r = fresh()
            if cls is d.MisraGries:
                r.release(epsilon=1.0, delta=1e-3, seed=1)
            else:
                r.release(epsilon=1.0, delta=1e-3, k=2, seed=1)
            out.append((r, cls.__name__, key_type, ["released"], probes))
            if key_type == "int":
                out.append((cls(4), cls.__name__, None, ["untyped"], probes))
    return out


def linear(d):
    out = []
    for key_type, stream, probes in (("int", INT_STREAM, INT_PROBES), ("str", STR_STREAM, STR_PROBES)):
        for cls in (d.CountMin, d.CountSketch):
            s = cls(8, 3, seed=11, key_type=key_type)
            s.update_many(stream)
            out.append((s, cls.__name__, key_type, ["fresh"], probes))
            m = cls(8, 3, seed=11, key_type=key_type)
            m.update_many(stream)
            m.merge(s)
            out.append((m, cls.__name__, key_type, ["merged"], probes))
            if key_type == "int":
                t = cls(8, 3, seed=11)
                t.update_many([7, 3, 7, 5], counts=[4, -2, 1, -3])
                out.append((t, cls.__name__, "int", ["turnstile"], probes))
                out.append((cls(8, 3, seed=11), cls.__name__, None, ["untyped"], probes))
    return out


def private_linear(d):
    out = []
    for key_type, stream, probes in (("int", INT_STREAM, INT_PROBES), ("str", STR_STREAM, STR_PROBES)):
        for cls in (d.PrivateCountMin, d.PrivateCountSketch):
            name = cls.__name__

            def make(**kw):
                p = cls(8, 3, seed=21, key_type=key_type, **kw)
                p.update_many(stream)
                return p

            seeded = make(epsilon=1.0)
            out.append((_restamp(seeded, 0, False, False), name, key_type, ["fresh"], probes))
            out.append((seeded, name, key_type, ["seeded"], probes))
            g = make(rho=0.5)
            out.append((_restamp(g, 0, False, False), name, key_type, ["gaussian"], probes))
            out.append((_restamp(make(epsilon=1.0, neighbours="replace"), 0, False, False), name, key_type,
                        ["replace"], probes))
            live = make(epsilon=1.0)
            pub = live.release()
            out.append((_restamp(live, 1, False, False), name, key_type, ["released"], probes))
            out.append((_restamp(pub, 1, True, False), name, key_type, ["published"], probes))
            out.append((pub, name, key_type, ["published", "seeded"], probes))
            if key_type == "int":
                u = cls(8, 3, epsilon=1.0, seed=21)
                out.append((_restamp(u, 0, False, False), name, None, ["untyped"], probes))
    return out


def dyadic(d):
    out = []
    s = d.DyadicCountSketch(6, width=4, depth=3, seed=5)
    s.update_many(DYADIC_STREAM)
    out.append((s, "DyadicCountSketch", None, ["fresh"], DYADIC_PROBES))
    m = d.DyadicCountSketch(6, width=4, depth=3, seed=5)
    m.update_many([2, 3, 60])
    m.merge(s)
    out.append((m, "DyadicCountSketch", None, ["merged"], DYADIC_PROBES))
    t = d.DyadicCountSketch(6, width=4, depth=3, seed=5)
    t.update_many([5, 17, 40, 5], counts=[3, -1, 2, -1])
    out.append((t, "DyadicCountSketch", None, ["turnstile"], DYADIC_PROBES))
    b = d.DyadicCountSketch(6, width=4, depth=3, seed=5, bounds=(-1.0, 1.0))
    b.update_many([-0.9, -0.5, 0.0, 0.25, 0.25, 0.99])
    out.append((b, "DyadicCountSketch", None, ["bounds"], [-0.5, 0.0, 0.25]))

    name = "PrivateDyadicCountSketch"

    def make(**kw):
        p = d.PrivateDyadicCountSketch(6, width=4, depth=3, seed=23, noise_allocation="joint", **kw)
        p.update_many(DYADIC_STREAM)
        return p

    seeded = make(rho=1.0)
    out.append((_restamp(seeded, 0, False, False), name, None, ["fresh"], DYADIC_PROBES))
    out.append((seeded, name, None, ["seeded"], DYADIC_PROBES))
    out.append((_restamp(make(epsilon=2.0), 0, False, False), name, None, ["laplace"], DYADIC_PROBES))
    out.append((_restamp(make(rho=1.0, neighbours="replace"), 0, False, False), name, None, ["replace"],
                DYADIC_PROBES))
    out.append((_restamp(make(rho=1.0, noise_allocation="zhao"), 0, False, False), name, None, ["zhao"],
                DYADIC_PROBES))
    live = make(rho=1.0)
    pub = live.release()
    out.append((_restamp(live, 1, False, False), name, None, ["released"], DYADIC_PROBES))
    out.append((_restamp(pub, 1, True, False), name, None, ["published"], DYADIC_PROBES))
    out.append((pub, name, None, ["published", "seeded"], DYADIC_PROBES))
    return out


def facts(obj, family, probes) -> dict:
    f: dict = {"release_count": _release_count(obj)}
    if family in ("MisraGries", "SpaceSaving"):
        f.update(_keyed_facts(obj, probes))
        f["capacity"] = obj.capacity
        f["merged"] = obj.merged
        f["items"] = len(obj.items())
    elif family in ("CountMin", "CountSketch", "PrivateCountMin", "PrivateCountSketch"):
        f.update(_keyed_facts(obj, probes))
        f["width"], f["depth"] = obj.width, obj.depth
        if family.startswith("Private"):
            f["published"] = obj.published
            f["seeded"] = obj.reproducible_not_secret
            f["neighbours"] = obj.neighbours
    else:
        f["universe_bits"], f["width"], f["depth"] = obj.universe_bits, obj.width, obj.depth
        f["ranks"] = [[p, float(obj.rank(p))] for p in probes]
        if family == "PrivateDyadicCountSketch":
            f["published"] = obj.published
            f["seeded"] = obj.reproducible_not_secret
            f["neighbours"] = obj.neighbours
            f["noise_allocation"] = obj.noise_allocation
            if not obj.published:
                f["n"] = obj.n
        else:
            f["n"] = obj.n
            f["bounds"] = None if obj.bounds is None else list(obj.bounds)
    return f


def build(d) -> list:
    entries = []
    for obj, family, key_type, flags, probes in counters(d) + linear(d) + private_linear(d) + dyadic(d):
        kt = key_type or "int"
        stem = f"{family.lower()}-untyped" if "untyped" in flags else f"{family.lower()}-{kt}-{'-'.join(flags)}"
        data = obj.to_bytes()
        entries.append({"file": stem + ".bin", "family": family, "family_byte": data[5], "key_tag": data[6],
                        "flags": flags, "header_flags": data[7], "bytes": len(data),
                        "facts": facts(obj, family, probes), "_data": data})
    return entries


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "tests" / "data" / "golden")
    ap.add_argument("--force", action="store_true", help="overwrite blobs whose bytes differ")
    args = ap.parse_args(argv)
    import dpsketch as d  # the built package (pip install -e .)

    entries = build(d)
    names = [e["file"] for e in entries]
    assert len(set(names)) == len(names), "duplicate blob names"
    args.out.mkdir(parents=True, exist_ok=True)
    changed = []
    for e in entries:
        path = args.out / e["file"]
        data = e.pop("_data")
        if path.exists() and path.read_bytes() != data and not args.force:
            changed.append(e["file"])
            continue
        path.write_bytes(data)
    if changed:
        print("refusing to rewrite golden blobs whose bytes differ (add new ones instead, or --force):",
              *changed, sep="\n  ", file=sys.stderr)
        return 1
    lines = ",\n".join("  " + json.dumps(e, ensure_ascii=False) for e in entries)
    (args.out / "manifest.json").write_text(
        '{"format_version": 1, "generator": "tools/make_golden_blobs.py", "blobs": [\n' + lines + "\n]}\n",
        encoding="utf-8")
    print(f"{len(entries)} golden blobs, {sum(e['bytes'] for e in entries)} bytes, in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
