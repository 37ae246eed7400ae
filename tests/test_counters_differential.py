"""The counter core against an independent reference core on random operation sequences.

tests/native/counters_differential.cpp drives the library's SpaceSaving / MisraGries and the frozen
reference core (tests/native/legacy/: linked count groups, an 8-byte probing table) through the
same random updates, batch updates, merges and serialization round trips, and requires identical
items(), min_count() / decrements(), estimates and bytes after every operation. It is compiled here with the system C++ compiler (the library is
header-only). DPSKETCH_DIFF_SEQUENCES overrides the number of sequences (default 10^6).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "native" / "counters_differential.cpp"
CXX = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")

pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler to build the differential test")


def build(tmp_path: Path, *defines: str) -> Path:
    exe = tmp_path / "counters_differential"
    cmd = [CXX, "-O2", "-std=c++17", *defines, "-I", str(ROOT / "cpp" / "include"), "-I", str(ROOT / "tests" / "native"),
           str(SOURCE), "-o", str(exe)]
    subprocess.run(cmd, check=True)
    return exe


def run(exe: Path, sequences: int, seed: int) -> str:
    out = subprocess.run([str(exe), str(sequences), str(seed)], capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr + out.stdout
    return out.stdout


@pytest.mark.slow
def test_core_equals_reference_core_on_a_million_sequences(tmp_path):
    sequences = int(os.environ.get("DPSKETCH_DIFF_SEQUENCES", "1000000"))
    out = run(build(tmp_path), sequences, 20261130)
    assert out.startswith(f"agreed on {sequences} sequences"), out


@pytest.mark.slow
def test_time_renumbering_keeps_the_order(tmp_path):
    # A clock limit of 700 ticks makes the rank renumbering of the 32-bit times (counters/flat_slots.hpp)
    # run every few hundred updates; the states must still equal the reference core's, and no time may reach
    # the limit (DPSKETCH_CHECK_CLOCK: the one-compare guard of FlatSlots::advance must be kept fresh
    # through merges and deserialization).
    out = run(build(tmp_path, "-DDPSKETCH_COUNTER_CLOCK_LIMIT=700", "-DDPSKETCH_CHECK_CLOCK"), 20000, 7)
    assert out.startswith("agreed on 20000 sequences"), out


@pytest.mark.slow
def test_portable_table_lookup_equals_reference_core(tmp_path):
    # The slot table's byte-loop group match (used where SSE2 is absent, common/compact_table.hpp)
    # forced on this machine: the states must still equal the reference core's.
    out = run(build(tmp_path, "-DDPSKETCH_PORTABLE_TABLE"), 50000, 11)
    assert out.startswith("agreed on 50000 sequences"), out


@pytest.mark.slow
def test_the_differential_test_can_fail(tmp_path):
    # The same program with the SpaceSaving victim chosen among the oldest instead of the newest
    # minimum-count slots must report a mismatch.
    mutated = tmp_path / "include"
    shutil.copytree(ROOT / "cpp" / "include", mutated)
    flat = mutated / "dpsketch" / "counters" / "flat_slots.hpp"
    text = flat.read_text()
    needle = "[this](std::int32_t a, std::int32_t b) { return time(a) < time(b); }"
    assert needle in text
    flat.write_text(text.replace(needle, "[this](std::int32_t a, std::int32_t b) { return time(a) > time(b); }"))
    exe = tmp_path / "mutant"
    subprocess.run([CXX, "-O2", "-std=c++17", "-I", str(mutated), "-I", str(ROOT / "tests" / "native"), str(SOURCE), "-o",
                    str(exe)], check=True)
    out = subprocess.run([str(exe), "2000", "1"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 1 and "MISMATCH" in out.stderr
