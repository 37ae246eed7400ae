"""The counter core against the brute-force reference counters on random operation sequences.

tests/native/counters_differential.cpp drives the library's SpaceSaving / MisraGries and the
reference counters of tests/native/reference_counters.hpp (the rules of docs/algorithms.md §2-§3,
the merges of docs/distributed.md and the bytes of docs/format.md, each a linear scan over plain
slot records) through the same random updates, batch updates, merges and serialization round
trips, and requires identical items(), min_count() / decrements(), estimates and bytes after every
operation. The reference is anchored to the committed golden counter blobs (tests/data/golden): it
must write each one's exact bytes from the stream that made it (tools/make_golden_blobs.py).
Compiled here with the system C++ compiler (the library is header-only).
DPSKETCH_DIFF_SEQUENCES overrides the number of sequences (default 10^6).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "native" / "counters_differential.cpp"
GOLDEN = ROOT / "tests" / "data" / "golden"
CXX = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")

pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler to build the differential test")


def build(out_dir: Path, *defines: str, include: Path = ROOT / "cpp" / "include", opt: str = "-O1") -> Path:
    # -O1 for the short runs (variants, mutants): most of their time is the compile
    exe = out_dir / "counters_differential"
    cmd = [CXX, opt, "-std=c++17", *defines, "-I", str(include), "-I", str(ROOT / "tests" / "native"),
           str(SOURCE), "-o", str(exe)]
    subprocess.run(cmd, check=True)
    return exe


def run(exe: Path, sequences: int, seed: int, *more: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), str(sequences), str(seed), *more], capture_output=True, text=True, timeout=1800)


def agreed(exe: Path, sequences: int, seed: int, *more: str) -> str:
    out = run(exe, sequences, seed, *more)
    assert out.returncode == 0, out.stderr + out.stdout
    assert out.stdout.startswith(f"agreed on {sequences} sequences"), out.stdout
    return out.stdout


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    return build(tmp_path_factory.mktemp("differential"), opt="-O2")


def golden_spec(tmp_path: Path) -> Path:
    """The golden counter blobs with the streams that made them (tools/make_golden_blobs.py), one
    line each in the format counters_differential.cpp reads."""
    spec = importlib.util.spec_from_file_location("make_golden_blobs", ROOT / "tools" / "make_golden_blobs.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    streams = {"int": (gen.INT_STREAM, gen.MERGE_INT), "str": (gen.STR_STREAM, gen.MERGE_STR)}

    def field(keys) -> str:
        return ",".join(str(k).encode().hex() for k in keys) or "-"

    lines = []
    for e in json.loads((GOLDEN / "manifest.json").read_text(encoding="utf-8"))["blobs"]:
        if e["family"] not in ("MisraGries", "SpaceSaving"):
            continue
        flags, facts = e["flags"], e["facts"]
        stream, merge = ([], []) if "untyped" in flags else streams[facts["key_type"]]
        merged = "merged" in flags
        lines.append(" ".join([e["family"], facts["key_type"] or "int", str(facts["capacity"]), str(int(merged)),
                               str(facts["release_count"]), str(int("untyped" in flags)), str(GOLDEN / e["file"]),
                               field(stream), field(merge if merged else [])]))
    path = tmp_path / "golden.spec"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_core_equals_reference_on_a_million_sequences(exe):
    # one share of the sequences per core, each from its own seed, run at the same time
    sequences = int(os.environ.get("DPSKETCH_DIFF_SEQUENCES", "1000000"))
    parts = max(1, min(os.cpu_count() or 1, 8))
    shares = [sequences // parts + (i < sequences % parts) for i in range(parts)]
    procs = [subprocess.Popen([str(exe), str(share), str(20261130 + i)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i, share in enumerate(shares)]
    for share, proc in zip(shares, procs):
        out, err = proc.communicate(timeout=1800)
        assert proc.returncode == 0, err + out
        assert out.startswith(f"agreed on {share} sequences"), out


@pytest.mark.slow
def test_reference_writes_the_golden_counter_blobs(exe, tmp_path):
    # Every golden MisraGries / SpaceSaving blob (fresh, merged, released, untyped; int and str).
    spec = golden_spec(tmp_path)
    lines = spec.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 14
    assert f"and {len(lines)} golden blobs" in agreed(exe, 0, 3, str(spec))


@pytest.mark.slow
def test_a_changed_golden_byte_fails_the_reference_check(exe, tmp_path):
    spec = golden_spec(tmp_path)
    line = next(x for x in spec.read_text(encoding="utf-8").splitlines() if x.startswith("SpaceSaving int 4 1 "))
    blob = Path(line.split()[6])
    changed = bytearray(blob.read_bytes())
    changed[-1] ^= 0x01  # the high byte of the last count (no trailer: merged, unreleased)
    (tmp_path / "changed.bin").write_bytes(bytes(changed))
    spec.write_text(line.replace(str(blob), str(tmp_path / "changed.bin")) + "\n", encoding="utf-8")
    out = run(exe, 0, 3, str(spec))
    assert out.returncode == 1 and "MISMATCH on golden blob" in out.stderr, out.stderr + out.stdout


@pytest.mark.slow
def test_time_renumbering_keeps_the_order(tmp_path):
    # A clock limit of 700 ticks makes the rank renumbering of the 32-bit times (counters/flat_slots.hpp)
    # run every few hundred updates, merges and deserializations included; the states must still
    # equal the reference's.
    agreed(build(tmp_path, "-DDPSKETCH_COUNTER_CLOCK_LIMIT=700"), 20000, 7)


@pytest.mark.slow
def test_portable_table_lookup_equals_reference(tmp_path):
    # The slot table's byte-loop group match (used where SSE2 is absent, common/compact_table.hpp)
    # forced on this machine: the states must still equal the reference's.
    agreed(build(tmp_path, "-DDPSKETCH_PORTABLE_TABLE"), 50000, 11)


# Deliberately broken library rules, each of which the differential test must report:
# (file under cpp/include/dpsketch/counters, the text, its broken replacement).
MUTANTS = {
    # SpaceSaving evicts among the oldest instead of the newest minimum-count slots (the same
    # comparison orders the slots of a Misra-Gries zero layer).
    "recency_tie_rule": ("flat_slots.hpp", "[this](std::int32_t a, std::int32_t b) { return time(a) < time(b); }",
                         "[this](std::int32_t a, std::int32_t b) { return time(a) > time(b); }"),
    # Misra-Gries merge forgets the subtracted cut s in the undercount bound E = E1 + E2 + s.
    "merge_undercount_bound": ("misra_gries.hpp", "out.decrements_ = decrements_ + other.decrements_ + s;",
                               "out.decrements_ = decrements_ + other.decrements_;"),
    # SpaceSaving writes equal counts newest first, so a round trip reverses their tie order.
    "serialized_tie_order": ("space_saving.hpp", "for (std::int32_t s : ordered(true)) {\n      Traits::write(w",
                             "for (std::int32_t s : ordered(false)) {\n      Traits::write(w"),
}


@pytest.mark.slow
@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_the_differential_test_catches_a_broken_rule(tmp_path, mutant):
    header, needle, broken = MUTANTS[mutant]
    mutated = tmp_path / "include"
    shutil.copytree(ROOT / "cpp" / "include", mutated)
    path = mutated / "dpsketch" / "counters" / header
    text = path.read_text()
    assert text.count(needle) == 1, needle
    path.write_text(text.replace(needle, broken))
    out = run(build(tmp_path, include=mutated), 2000, 1)
    assert out.returncode == 1 and "MISMATCH in sequence" in out.stderr, out.stderr + out.stdout
