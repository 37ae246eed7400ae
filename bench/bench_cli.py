"""Throughput and peak memory of ``dpsketch top`` on a large gzip file of words.

Compares, on the same file and in the same run:
  * this tree's ``dpsketch top`` (Arrow input path),
  * the ``dpsketch top`` of a git ref (default ``main``; its Python package from ``git archive``,
    with this tree's compiled module), i.e. "before",
  * the Unix idiom ``zcat FILE | sort | uniq -c | sort -rn | head`` (exact, not private).

The input is generated (not committed): the GCIDE word list (``gcide_words.txt.gz`` from
``$DPSKETCH_DATA`` or ``../shared/data``) repeated ``--repeat`` times, gzip level 6, in /tmp.

    python bench/bench_cli.py                      # ~54 M lines, every contender once
    python bench/bench_cli.py --runs 3 --skip-sort # medians of 3, no sort pipeline

Peak memory is the child's ru_maxrss (os.wait4); wall time is time.perf_counter around the child.
Report same-run ratios: absolute numbers depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def data_file(name: str) -> Path:
    for base in (os.environ.get("DPSKETCH_DATA"), ROOT.parent / "shared" / "data", ROOT / ".." / "shared" / "data"):
        if base and (Path(base) / name).exists():
            return Path(base) / name
    sys.exit(f"{name} not found: set DPSKETCH_DATA to the folder holding it")


def make_input(path: Path, repeat: int) -> int:
    """GCIDE words repeated `repeat` times, gzip-compressed; returns the line count."""
    src = data_file("gcide_words.txt.gz")
    words = gzip.decompress(src.read_bytes())
    if not words.endswith(b"\n"):
        words += b"\n"
    if not path.exists():
        tmp = path.with_suffix(".part")
        with gzip.open(tmp, "wb", compresslevel=6) as out:
            for _ in range(repeat):
                out.write(words)
        tmp.rename(path)
    return words.count(b"\n") * repeat


def baseline_tree(ref: str, dest: Path) -> Path:
    """The Python package of `ref` plus this tree's compiled module (the C++ is shared)."""
    import dpsketch._core as core

    subprocess.run(f"git -C {ROOT} archive {ref} python/dpsketch | tar -x -C {dest}", shell=True, check=True)
    pkg = dest / "python" / "dpsketch"
    shutil.copy(core.__file__, pkg / Path(core.__file__).name)
    return dest / "python"


_LAUNCH = (
    "import sys; sys.path.insert(0, {path!r}); "
    # an editable install's import hook would shadow sys.path: drop it for the baseline
    "sys.meta_path[:] = [f for f in sys.meta_path if 'Redirect' not in type(f).__name__]; "
    "import dpsketch; assert dpsketch.__file__.startswith({path!r}), dpsketch.__file__; "
    "from dpsketch.cli import main; sys.exit(main(sys.argv[1:]))"
)


def run(cmd, *, shell=False, env=None):
    """(wall seconds, peak RSS in MB, stdout) of one child process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, shell=shell, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {cmd}\n{err.decode(errors='replace')[-2000:]}")
    return wall, usage.ru_maxrss / 1024, out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file", type=Path, default=Path(tempfile.gettempdir()) / "dpsketch_bench_words.txt.gz")
    ap.add_argument("--repeat", type=int, default=10, help="copies of the GCIDE word list (default 10)")
    ap.add_argument("--runs", type=int, default=1, help="runs per contender; the median is reported")
    ap.add_argument("--baseline-ref", default="main", help="git ref whose Python package is 'before'")
    ap.add_argument("--skip-baseline", action="store_true")
    ap.add_argument("--skip-sort", action="store_true")
    ap.add_argument("--k", default="1000")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()

    lines = make_input(args.file, args.repeat)
    top_args = ["top", str(args.file), "--k", args.k, "--seed", "1", "--quiet", "--no-progress"]
    contenders = {"dpsketch top (this tree)": ([sys.executable, "-m", "dpsketch", *top_args], False)}
    tmp = tempfile.TemporaryDirectory()
    if not args.skip_baseline:
        path = str(baseline_tree(args.baseline_ref, Path(tmp.name)))
        contenders[f"dpsketch top ({args.baseline_ref})"] = (
            [sys.executable, "-c", _LAUNCH.format(path=path), *top_args], False)
    if not args.skip_sort:
        contenders["zcat | sort | uniq -c | sort -rn | head"] = (
            f"zcat {args.file} | sort | uniq -c | sort -rn | head", True)

    results = {}
    for name, (cmd, shell) in contenders.items():
        runs = [run(cmd, shell=shell) for _ in range(args.runs)]
        wall = statistics.median(r[0] for r in runs)
        rss = max(r[1] for r in runs)
        results[name] = {"seconds": wall, "lines_per_s": lines / wall, "peak_rss_mb": rss, "runs": len(runs)}
        print(f"{name:42s} {wall:8.2f} s  {lines / wall / 1e6:7.2f} M lines/s  peak {rss:7.1f} MB", flush=True)

    this = results["dpsketch top (this tree)"]["seconds"]
    print(f"\n{lines:,} lines ({args.file.stat().st_size / 1e6:.0f} MB gzip); machine: {platform.machine()}, "
          f"{os.cpu_count()} CPUs, {platform.python_implementation()} {platform.python_version()}")
    for name, r in results.items():
        if r["seconds"] != this:
            print(f"this tree is {r['seconds'] / this:.2f}x faster than {name}")
    if args.json:
        args.json.write_text(json.dumps({"lines": lines, "results": results}, indent=2))


if __name__ == "__main__":
    main()
