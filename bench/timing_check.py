#!/usr/bin/env python3
"""CI timing regression check (~10 s of CPU time; 25-50 s of wall time on a loaded 2-cpu machine).

Compiles bench/timing_check.cpp and bench/timing_baseline_lib.cpp (header-only library, no
dependencies) with $CXX (default c++) and times key update paths, each as a ratio to a yardstick
timed next to it (an exact std::unordered_map counter over the stream's keys folded to 4096 values,
cache-resident like the paths: bench/timing_exact.hpp), against the ratios recorded in
bench/timing_baseline.json. The C++ paths run in the timing program; the Python paths (through the
importable dpsketch module, on the same stream) run in this process, next to the same yardstick
loaded from the shared library.

How a path is measured, so that a shared, loaded machine neither fails nor blinds the check:

- **Rounds.** Path by path, each of --rounds rounds times one yardstick pass and one path pass over
  short chunks of the stream (~0.1-3 ms each; which goes first alternates), so both see the same
  state of the machine. Each timed pass follows an untimed one of the same structure, so it starts
  from its own cache footprint.
- **Clock.** CPU time of the timing thread (of the process for the text reader, whose work runs in
  its threads): time spent descheduled is other work's, and a pass preempted for a time slice would
  otherwise read several times slower. --clock wall for the old wall-clock reading.
- **Ratio.** The median of the per-round ratios path / yardstick.
- **Verdict.** A path whose ratio exceeds tolerance x recorded (default 1.5) is measured again on
  its own, up to --attempts times in all; it fails only if every attempt is out of bounds.

    python bench/timing_check.py            # check
    python bench/timing_check.py --paths a,b   # check only these paths
    python bench/timing_check.py --update   # re-record the ratios (after an intended change;
                                            # median of 3 runs per path)
    python bench/timing_check.py --update --paths python_str_list_k256   # re-record these only

DPSKETCH_TIMING_SLOWDOWN=PATH=K[,PATH=K...] makes the timed pass of each named path run K times
over its chunk (K times the per-item work; the library is untouched): the check must then fail on
that path (tests/bench/test_timing_check.py). Exit status 1 when a path fails, 2 on bad usage; only
regressions fail, and improvements beyond the tolerance are reported with a hint to re-record.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "bench" / "timing_baseline.json"
SLOWDOWN_ENV = "DPSKETCH_TIMING_SLOWDOWN"
BASE_CHUNK = 1 << 15  # items per yardstick pass (as in timing_check.cpp)

PY_PATH = "python_spacesaving_int_k256"
PY_ITEM_PATH = "python_update_int_k256"  # per-item SpaceSaving.update(int) through the native fast path
# per-item DyadicCountSketch(32, gamma=0.01).update(x) through the native fast path: int items, and
# float values with bounds (the value mapping in C)
PY_DYADIC_INT_PATH = "python_dyadic_update_int_l32"
PY_DYADIC_FLOAT_PATH = "python_dyadic_update_float_l32"
PY_STR_LIST_PATH = "python_str_list_k256"  # SpaceSaving(256).update_many(list of str)
# the text reader of dpsketch top (read, split, and with --int-keys parse), per line of a file
PY_TEXT_READER_PATHS = {"python_text_reader_int": "int", "python_text_reader_str": "str"}
# the exact Spark route's driver step: noise and threshold on the aggregated (key, count) rows
# (dpsketch.distributed.release_exact_counts; no Spark), per aggregated row
PY_EXACT_DRIVER_PATH = "python_spark_exact_driver_int"
PY_STR_ARROW_PATH = "python_str_arrow_k256"  # SpaceSaving(256).update_many(pa.string() array), int32 offsets in place
# the privacy unit's exact route (ContributionBounder, top --privacy-id): coding a batch of text keys
# and text ids from pa.string() arrays (per row), and bounding the coded rows (per row)
PY_UNIT_CODE_PATH = "python_unit_code_str"
PY_UNIT_BOUND_PATH = "python_unit_bound"
PY_PATHS = [PY_PATH, PY_ITEM_PATH, PY_DYADIC_INT_PATH, PY_DYADIC_FLOAT_PATH, PY_STR_LIST_PATH,
            *PY_TEXT_READER_PATHS, PY_EXACT_DRIVER_PATH, PY_STR_ARROW_PATH, PY_UNIT_CODE_PATH, PY_UNIT_BOUND_PATH]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def parse_slowdown(text: str) -> dict[str, int]:
    """``PATH=K[,PATH=K...]`` (K an integer >= 1) as {path: K}; SystemExit(2) with what to write."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, k = part.partition("=")
        if not eq or not name or not k.strip().isdigit() or int(k) < 1:
            print(f"{SLOWDOWN_ENV}: {part!r} is not PATH=K with an integer K >= 1 "
                  f"(e.g. {SLOWDOWN_ENV}=python_update_int_k256=2)", file=sys.stderr)
            sys.exit(2)
        out[name.strip()] = int(k)
    return out


def build(tmp: Path, binary: str | None) -> tuple[Path, Path]:
    """The timing program (or ``binary``) and the yardstick library, compiled at the same time."""
    cxx = shlex.split(os.environ.get("CXX", "c++"))
    flags = ["-O3", "-DNDEBUG", "-std=c++17", "-I", str(ROOT / "cpp" / "include"), "-I", str(ROOT / "bench")]
    exe, lib = tmp / "dpsketch_timing", tmp / "libdpsketch_timing_baseline.so"
    jobs = [subprocess.Popen(cxx + flags + ["-shared", "-fPIC", str(ROOT / "bench" / "timing_baseline_lib.cpp"),
                                            "-o", str(lib)])]
    if binary:
        exe = Path(binary)
    else:
        jobs.append(subprocess.Popen(cxx + flags + [str(ROOT / "bench" / "timing_check.cpp"), "-o", str(exe)]))
    if any(j.wait() != 0 for j in jobs):
        sys.exit("timing check: compiling the timing program failed")
    return exe, lib


def cpp_path_names(exe: Path) -> list[str]:
    return subprocess.run([str(exe), "--list"], check=True, capture_output=True, text=True).stdout.split()


def run_cpp(exe: Path, args, paths: list[str], slow: dict[str, int]) -> dict[str, dict]:
    """Per-round ns per item of each C++ path and of the yardstick: {path: {"base_ns": [...], "ns": [...]}}."""
    cmd = [str(exe), "--rounds", str(args.rounds), "--items", str(args.items), "--clock", args.clock,
           "--paths", ",".join(paths)]
    cmd += [a for name, k in slow.items() if name in paths for a in ("--slow", f"{name}={k}")]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["paths"]


class Yardstick:
    """The yardstick of bench/timing_exact.hpp on the stream, through the shared library."""

    def __init__(self, lib_path: Path, stream_file: Path, cpu: bool):
        import numpy as np

        self.lib = ctypes.CDLL(str(lib_path))
        self.lib.dpsketch_timing_new.restype = ctypes.c_void_p
        self.lib.dpsketch_timing_new.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.lib.dpsketch_timing_pass.restype = ctypes.c_double
        self.lib.dpsketch_timing_pass.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
        self.lib.dpsketch_timing_free.argtypes = [ctypes.c_void_p]
        ints = np.fromfile(stream_file, dtype=np.int64)
        self.chunks = len(ints) // BASE_CHUNK
        self.handle = self.lib.dpsketch_timing_new(ints.ctypes.data, len(ints), int(cpu))

    def ns(self, r: int) -> float:
        """ns per item of a timed pass over chunk r, after an untimed one over chunk r - 1."""
        self.lib.dpsketch_timing_pass(self.handle, ((r - 1) % self.chunks) * BASE_CHUNK, BASE_CHUNK)
        return self.lib.dpsketch_timing_pass(self.handle, (r % self.chunks) * BASE_CHUNK, BASE_CHUNK) * 1e9 / BASE_CHUNK

    def close(self):
        self.lib.dpsketch_timing_free(self.handle)


class PyPath:
    """One Python path: ``work(j)`` does one pass over its chunk j (of ``chunks``) and returns the
    items it covered; ``prepass``: a timed pass follows an untimed one over chunk j - 1 (short
    passes; a long pass warms itself up). ``process_clock``: CPU time of the whole process (work
    done in threads)."""

    def __init__(self, work, chunks: int, prepass: bool = True, process_clock: bool = False):
        self.work, self.chunks, self.prepass, self.process_clock = work, chunks, prepass, process_clock

    def ns(self, r: int, repeat: int, cpu: bool) -> float:
        if self.prepass:
            self.work((r - 1) % self.chunks)
        clock = (time.process_time if self.process_clock else time.thread_time) if cpu else time.perf_counter
        t0 = clock()
        for _ in range(repeat):
            items = self.work(r % self.chunks)
        return (clock() - t0) * 1e9 / items


def _chunked(xs, size: int) -> list:
    return [xs[i : i + size] for i in range(0, len(xs) - size + 1, size)]


def python_paths(stream_file: Path, tmp: Path, names: list[str]) -> dict[str, PyPath]:
    """The Python paths among ``names`` on the dumped stream, each warmed by one pass over all its
    chunks; {} without dpsketch."""
    try:
        import dpsketch
        import numpy as np
        from dpsketch.io import input as _input
        from dpsketch.distributed import release_exact_counts
    except ImportError as e:  # the check still covers the C++ paths
        print(f"note: Python paths skipped ({e})")
        return {}
    ints = np.fromfile(stream_file, dtype=np.int64)
    paths = {}

    def add(name, make):
        if name in names:
            paths[name] = make()
            for j in range(paths[name].chunks):
                paths[name].work(j)

    def batch(summary, chunks):
        def work(j):
            summary.update_many(chunks[j])
            return len(chunks[j])
        return PyPath(work, len(chunks))

    def per_item(upd, chunks):
        def work(j):
            [upd(x) for x in chunks[j]]
            return len(chunks[j])
        return PyPath(work, len(chunks))

    # SpaceSaving(256).update_many on int64 chunks of the stream
    add(PY_PATH, lambda: batch(dpsketch.SpaceSaving(256), _chunked(ints, 1 << 15)))
    # SpaceSaving(256).update(x) per item on the first 2^17 items (list comprehension included)
    add(PY_ITEM_PATH, lambda: per_item(dpsketch.SpaceSaving(256).update, _chunked(ints[: 1 << 17].tolist(), 1 << 13)))
    # DyadicCountSketch(32, gamma=0.01).update(x) per item on the first 2^16 items (ints in [0, 10^5));
    # the float path: the same values as floats with bounds=(0, 10^5)
    for name, floats in ((PY_DYADIC_INT_PATH, False), (PY_DYADIC_FLOAT_PATH, True)):
        def make_dyadic(floats=floats):
            xs = ints[: 1 << 16].astype(np.float64 if floats else np.int64).tolist()
            sk = dpsketch.DyadicCountSketch(32, gamma=0.01, seed=1, bounds=(0.0, 1e5) if floats else None)
            return per_item(sk.update, _chunked(xs, 1 << 11))
        add(name, make_dyadic)
    # SpaceSaving(256).update_many(list of "user:<id>" str, the C++ string stream's keys)
    add(PY_STR_LIST_PATH, lambda: batch(dpsketch.SpaceSaving(256),
                                        _chunked([f"user:{v}" for v in ints[: 1 << 17].tolist()], 1 << 14)))
    # the command line's text reader (_input.Source(...).chunks(): read, split into lines and, with
    # keys="int", parse each line) over the stream written one value per line
    text = tmp / "stream.txt"
    if any(name in names for name in PY_TEXT_READER_PATHS):
        text.write_text("\n".join(map(str, ints.tolist())) + "\n")
    for name, keys in PY_TEXT_READER_PATHS.items():
        def make_reader(keys=keys):
            def work(_j):
                return sum(len(batch) for batch in _input.Source(str(text), keys=keys).chunks())
            return PyPath(work, 1, prepass=False, process_clock=True)
        add(name, make_reader)
    # release_exact_counts(keys, counts, k=256) on chunks of 2^13 of the stream's (distinct key, count)
    # rows (what groupBy(key).count() hands the driver), per row
    def make_driver():
        keys, counts = np.unique(ints, return_counts=True)
        rows = list(zip(_chunked(keys, 1 << 13), _chunked(counts, 1 << 13)))

        def work(j):
            release_exact_counts(rows[j][0], rows[j][1], k=256, epsilon=1.0, delta=1e-6, seed=1)
            return len(rows[j][0])
        return PyPath(work, len(rows), prepass=False)
    add(PY_EXACT_DRIVER_PATH, make_driver)

    def arrow_strs(values):
        import pyarrow as pa
        return pa.array([str(v) for v in values.tolist()], type=pa.string())

    # SpaceSaving(256).update_many(pa.string() array of "user:<id>"): the offsets read as int32
    def make_str_arrow():
        import pyarrow as pa
        xs = pa.array([f"user:{v}" for v in ints[: 1 << 17].tolist()], type=pa.string())
        return batch(dpsketch.SpaceSaving(256), [xs.slice(i, 1 << 14) for i in range(0, len(xs), 1 << 14)])
    add(PY_STR_ARROW_PATH, make_str_arrow)
    # ContributionBounder coding: keys = the stream's values as decimal text, ids = a second stream
    # of decimal text (the values mixed, 2^15 distinct); each pass codes one chunk of 2^14 rows of
    # both columns into one bounder (the tables warm: lookups and appends, as most batches see them)
    unit_ids = (ints * 2654435761) % (1 << 15)

    def make_unit_code():
        keys = arrow_strs(ints[: 1 << 17])
        ids = arrow_strs(unit_ids[: 1 << 17])
        chunks = [(keys.slice(i, 1 << 14), ids.slice(i, 1 << 14)) for i in range(0, len(keys), 1 << 14)]
        bounder = dpsketch.ContributionBounder(max_keys_per_unit=10, seed=1)

        def work(j):
            bounder.add_keys(chunks[j][0])
            bounder.add_ids(chunks[j][1])
            return len(chunks[j][0])
        return PyPath(work, len(chunks))
    add(PY_UNIT_CODE_PATH, make_unit_code)
    # bounding (m = 10, c = 1) of 2^16 coded rows and listing the kept keys (bounded()), per row
    def make_unit_bound():
        bounder = dpsketch.ContributionBounder(max_keys_per_unit=10, seed=1)
        bounder.add(arrow_strs(ints[: 1 << 16]), arrow_strs(unit_ids[: 1 << 16]))

        def work(_j):
            bounder.bounded()
            return 1 << 16
        return PyPath(work, 1)
    add(PY_UNIT_BOUND_PATH, make_unit_bound)
    return paths


def run_python(paths: dict[str, PyPath], yard: Yardstick, rounds: int, slow: dict[str, int], cpu: bool,
               names: list[str]) -> dict[str, dict]:
    """Per-round ns per item of each Python path in ``names`` and of the yardstick, path by path."""
    out = {}
    for name in names:
        p, base_ns, ns = paths[name], [], []
        for r in range(rounds):
            if r % 2 == 0:
                base_ns.append(yard.ns(r))
                ns.append(p.ns(r, slow.get(name, 1), cpu))
            else:
                ns.append(p.ns(r, slow.get(name, 1), cpu))
                base_ns.append(yard.ns(r))
        out[name] = {"base_ns": base_ns, "ns": ns}
    return out


def summarize(rounds: dict) -> tuple[float, float, float]:
    """(median of the per-round ratios, median path ns, median yardstick ns) of one measurement."""
    ratios = [p / b for p, b in zip(rounds["ns"], rounds["base_ns"])]
    return statistics.median(ratios), statistics.median(rounds["ns"]), statistics.median(rounds["base_ns"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--update", action="store_true", help="record the measured ratios in bench/timing_baseline.json")
    ap.add_argument("--tolerance", type=float, default=None, help="allowed ratio growth factor (default: from the baseline file, 1.5)")
    ap.add_argument("--rounds", type=int, default=41, help="rounds per measurement (default 41)")
    ap.add_argument("--attempts", type=int, default=3,
                    help="measurements of a path out of bounds before it fails (default 3)")
    ap.add_argument("--items", type=int, default=1 << 19)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="cpu (default): CPU time of the timing thread; wall: elapsed time (quiet machine only)")
    ap.add_argument("--binary", help="use this prebuilt dpsketch_timing instead of compiling")
    ap.add_argument("--paths", help="measure only these comma-separated paths (with --update: re-record only "
                                    "these, keeping the other recorded ratios)")
    args = ap.parse_args()
    if args.rounds < 1 or args.attempts < 1:
        ap.error("--rounds and --attempts must be >= 1")
    slow = parse_slowdown(os.environ.get(SLOWDOWN_ENV, ""))
    if slow and args.update:
        ap.error(f"--update with {SLOWDOWN_ENV} set would record slowed paths; unset it")
    cpu = args.clock == "cpu"

    recorded = json.loads(BASELINE.read_text())
    tol = args.tolerance or recorded.get("tolerance", 1.5)
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        exe, lib = build(tmp, args.binary)
        cpp_names = cpp_path_names(exe)
        known = cpp_names + PY_PATHS
        wanted = args.paths.split(",") if args.paths else known
        for what, names in (("--paths", wanted), (SLOWDOWN_ENV, list(slow))):
            unknown = [k for k in names if k not in known]
            if unknown:
                print(f"{what}: unknown paths {', '.join(unknown)} (known: {', '.join(known)})", file=sys.stderr)
                return 2
        if slow:
            print(f"{SLOWDOWN_ENV}: timed passes repeated " + ", ".join(f"{k} x{v}" for k, v in slow.items()))
        stream = tmp / "stream.bin"
        subprocess.run([str(exe), "--rounds", "0", "--items", str(args.items), "--dump", str(stream)], check=True)
        cpp_wanted = [k for k in cpp_names if k in wanted]
        py_wanted = [k for k in PY_PATHS if k in wanted]
        pypaths = python_paths(stream, tmp, py_wanted) if py_wanted else {}
        py_wanted = [k for k in py_wanted if k in pypaths]
        yard = Yardstick(lib, stream, cpu) if py_wanted else None

        def measure(names: list[str]) -> dict[str, tuple[float, float, float]]:
            res = {}
            cpp = [k for k in names if k in cpp_names]
            if cpp:
                res.update(run_cpp(exe, args, cpp, slow))
            py = [k for k in names if k in py_wanted]
            if py:
                res.update(run_python(pypaths, yard, args.rounds, slow, cpu, py))
            return {k: summarize(v) for k, v in res.items()}

        names = cpp_wanted + py_wanted
        if args.update:
            # Record each path's median over 3 separate measurements: a recorded outlier would make
            # the check either lax or flaky.
            runs = [measure(names) for _ in range(3)]
            first = {k: sorted(r[k] for r in runs)[1] for k in names}
            attempts = {k: [first[k]] for k in names}
        else:
            first = measure(names)
            attempts = {k: [v] for k, v in first.items()}
            # A path out of bounds is measured again on its own; it fails only if it stays out.
            for _ in range(args.attempts - 1):
                out = [k for k, v in attempts.items()
                       if k in recorded["ratios"] and min(a[0] for a in v) > tol * recorded["ratios"][k]]
                if not out:
                    break
                print(f"out of bounds, measuring again: {', '.join(out)}")
                for k, v in measure(out).items():
                    attempts[k].append(v)
        if yard is not None:
            yard.close()
    elapsed = time.perf_counter() - t_start
    print(f"{len(names)} paths, {args.rounds} rounds each, clock {args.clock}; {elapsed:.1f} s")

    if args.update:
        if args.paths:
            data = recorded
        else:
            data = {
                "comment": recorded.get("comment", ""),
                "machine": f"{cpu_model()}, {os.cpu_count()} cpus",
                "tolerance": recorded.get("tolerance", 1.5),
                "ratios": {},
                "ns_at_recording": {},
            }
        for k in names:
            data["ratios"][k] = round(first[k][0], 4)
            data["ns_at_recording"][k] = round(first[k][1], 2)
        BASELINE.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        for k in names:
            print(f"  {k:30s} ratio {first[k][0]:7.3f}  ({first[k][1]:.2f} ns/update, yardstick {first[k][2]:.2f})")
        print(f"recorded {len(names)} ratios in {BASELINE.relative_to(ROOT)}")
        return 0

    failed = []
    print(f"{'path':30s} {'ns/upd':>8s} {'yardst':>7s} {'ratio':>7s} {'recorded':>8s} {'change':>7s}")
    for k in names:
        ref = recorded["ratios"].get(k)
        for i, (ratio, ns, base_ns) in enumerate(attempts[k]):
            label = k if i == 0 else f"  (attempt {i + 1})"
            if ref is None:
                print(f"{label:30s} {ns:8.2f} {base_ns:7.2f} {ratio:7.3f} {'-':>8s}   (not recorded; run --update)")
                continue
            change = ratio / ref
            verdict = "out of bounds" if change > tol else ("faster: consider --update" if change < 1 / tol else "ok")
            print(f"{label:30s} {ns:8.2f} {base_ns:7.2f} {ratio:7.3f} {ref:8.3f} {change:6.2f}x  {verdict}")
        if ref is not None and all(a[0] > tol * ref for a in attempts[k]):
            failed.append(k)
    if failed:
        print(f"timing check FAILED: {', '.join(failed)} slower than recorded by more than {tol:.2f}x in each of "
              f"{args.attempts} measurements (median of per-round ratios to the yardstick). If intended, "
              f"re-record with `python bench/timing_check.py --update --paths {','.join(failed)}`.")
        return 1
    print("timing check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
