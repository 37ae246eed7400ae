"""Wall time and peak memory of ``dpsketch top`` against the tools users already have.

Inputs (generated into /tmp, not committed; one item per line, each plain and gzip level 6):
  * int:   ``--lines`` integer keys, Zipf 1.1 folded onto 10^6 ids drawn from [0, 10^9) (seeded),
  * words: the GCIDE word stream (``gcide_words.txt.gz`` from ``$DPSKETCH_DATA`` or
    ``../shared/data``) repeated and cut to ``--lines`` lines.

Contenders, on the same file in the same run; the runs alternate (run r of every contender before
run r+1 of any), so a change of load on a shared machine hits them alike:
  * ``dpsketch top FILE --k 1000 --seed 1 --quiet --no-progress`` (``--int-keys`` on int files),
  * DuckDB: ``SELECT item, count(*) FROM read_csv(FILE) GROUP BY item ORDER BY count(*) DESC LIMIT 25``,
  * polars: ``pl.scan_csv(FILE).group_by("item").len().top_k(25, by="len").collect()``,
  * with ``--baseline-ref REF``: the ``dpsketch top`` of a git ref (its Python package from
    ``git archive``, with this tree's compiled module), i.e. "before",
  * with ``--sort``: ``zcat FILE | sort | uniq -c | sort -rn | head`` (exact, not private).
The peers are exact and not private; they run with their default threads (every core). DuckDB and
polars are imported from this interpreter when it has them, else installed with pip into a venv
of their own (``$TMPDIR/dpsketch_bench_peers``; ``--peer-python`` picks another interpreter).
``--floors`` adds what no reader of the file can beat: ``wc -l`` (plain) or ``gzip -dc > /dev/null``
(gzip), and the interpreter start-up (``dpsketch --version``).

    python bench/bench_cli.py                                 # 10^7 lines, int and words, medians of 3
    python bench/bench_cli.py --lines 50000000 --runs 3 --floors
    python bench/bench_cli.py --sets words --compress gzip --baseline-ref main --sort

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
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TMP = Path(tempfile.gettempdir())
PEERS = ("duckdb", "polars")
TOP = 25  # rows the peers return: dpsketch top prints at most 25 by default

_DUCKDB = (
    "import sys, duckdb; path, typ = sys.argv[1:3]; "
    "duckdb.sql(f\"SELECT item, count(*) AS n FROM read_csv('{path}', header=false, columns={{'item': '{typ}'}}) "
    "GROUP BY item ORDER BY n DESC LIMIT " + str(TOP) + "\").fetchall()"
)
_POLARS = (
    "import sys, polars as pl; path, typ = sys.argv[1:3]; "
    "pl.scan_csv(path, has_header=False, new_columns=['item'], schema={'item': getattr(pl, typ)})"
    ".group_by('item').len().top_k(" + str(TOP) + ", by='len').collect()"
)
_LAUNCH = (
    "import sys; sys.path.insert(0, {path!r}); "
    # an editable install's import hook would shadow sys.path: drop it for the baseline
    "sys.meta_path[:] = [f for f in sys.meta_path if 'Redirect' not in type(f).__name__]; "
    "import dpsketch; assert dpsketch.__file__.startswith({path!r}), dpsketch.__file__; "
    "from dpsketch.cli import main; sys.exit(main(sys.argv[1:]))"
)


def data_file(name: str) -> Path:
    for base in (os.environ.get("DPSKETCH_DATA"), ROOT.parent / "shared" / "data", ROOT / ".." / "shared" / "data"):
        if base and (Path(base) / name).exists():
            return Path(base) / name
    sys.exit(f"{name} not found: set DPSKETCH_DATA to the folder holding it")


def _write_lines(path: Path, pieces, compress: bool) -> None:
    """Write the byte pieces to ``path`` (gzip level 6 when ``compress``), atomically."""
    tmp = path.with_name(path.name + ".part")
    with (gzip.open(tmp, "wb", compresslevel=6) if compress else open(tmp, "wb")) as out:
        for piece in pieces:
            out.write(piece)
    tmp.rename(path)


def _int_pieces(lines: int, seed: int = 1):
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 10**9, size=10**6)
    for start in range(0, lines, 10**6):
        ranks = (rng.zipf(1.1, size=min(10**6, lines - start)) - 1) % ids.size
        yield ("\n".join(map(str, ids[ranks].tolist())) + "\n").encode()


def _word_pieces(lines: int, source: Path):
    words = gzip.decompress(source.read_bytes())
    per_copy = words.count(b"\n")
    for _ in range(lines // per_copy):
        yield words
    rest = lines % per_copy
    if rest:
        yield words[: _nth_newline(words, rest) + 1]


def _nth_newline(data: bytes, n: int) -> int:
    at = -1
    for _ in range(n):
        at = data.index(b"\n", at + 1)
    return at


def make_input(kind: str, lines: int, compress: bool) -> Path:
    """The generated input (made once, then reused from /tmp)."""
    path = TMP / f"dpsketch_bench_{kind}_{lines}.txt{'.gz' if compress else ''}"
    if not path.exists():
        print(f"generating {path} ...", file=sys.stderr, flush=True)
        pieces = _int_pieces(lines) if kind == "int" else _word_pieces(lines, data_file("gcide_words.txt.gz"))
        _write_lines(path, pieces, compress)
    return path


def baseline_tree(ref: str, dest: Path) -> Path:
    """The Python package of `ref` plus this tree's compiled module (the C++ is shared)."""
    import dpsketch._core as core

    subprocess.run(f"git -C {ROOT} archive {ref} python/dpsketch | tar -x -C {dest}", shell=True, check=True)
    pkg = dest / "python" / "dpsketch"
    shutil.copy(core.__file__, pkg / Path(core.__file__).name)
    return dest / "python"


def peer_python(given: str | None) -> str:
    """An interpreter that imports duckdb and polars: ``given``, this one, or a venv made for them."""
    probe = "import duckdb, polars"
    for python in ([given] if given else [sys.executable]):
        if subprocess.run([python, "-c", probe], capture_output=True).returncode == 0:
            return python
    if given:
        sys.exit(f"{given} cannot import duckdb and polars")
    env_dir = TMP / "dpsketch_bench_peers"
    python = str(env_dir / "bin" / "python")
    if not Path(python).exists() or subprocess.run([python, "-c", probe], capture_output=True).returncode:
        print(f"installing duckdb and polars into {env_dir} ...", file=sys.stderr, flush=True)
        venv.create(env_dir, with_pip=True, clear=True)
        subprocess.run([python, "-m", "pip", "install", "--quiet", *PEERS], check=True)
    return python


def run(cmd, *, shell=False):
    """(wall seconds, peak RSS in MB) of one child process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"command failed ({code}): {cmd}\n{err.decode(errors='replace')[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def contenders(path: Path, kind: str, args, peers_py: str | None, baseline: str | None):
    """{name: (command, shell)} for one input."""
    top = ["top", str(path), "--k", args.k, "--seed", "1", "--quiet", "--no-progress"]
    if kind == "int":
        top.append("--int-keys")
    out = {"dpsketch top": ([sys.executable, "-m", "dpsketch", *top], False)}
    if baseline is not None:
        out[f"dpsketch top ({args.baseline_ref})"] = ([sys.executable, "-c", _LAUNCH.format(path=baseline), *top], False)
    if peers_py is not None:
        out["DuckDB"] = ([peers_py, "-c", _DUCKDB, str(path), "BIGINT" if kind == "int" else "VARCHAR"], False)
        out["polars"] = ([peers_py, "-c", _POLARS, str(path), "Int64" if kind == "int" else "String"], False)
    if args.sort:
        cat = "gzip -dc" if path.suffix == ".gz" else "cat"
        out["sort | uniq -c | sort -rn | head"] = (f"{cat} {path} | sort | uniq -c | sort -rn | head", True)
    if args.floors:
        out["floor: " + ("gzip -dc > /dev/null" if path.suffix == ".gz" else "wc -l")] = (
            f"gzip -dc {path} > /dev/null" if path.suffix == ".gz" else f"wc -l {path} > /dev/null", True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="int,words", help="inputs: int, words (comma-separated; default both)")
    ap.add_argument("--compress", default="plain,gzip", help="plain, gzip (comma-separated; default both)")
    ap.add_argument("--lines", type=int, nargs="+", default=[10_000_000], help="lines per input (default 10^7)")
    ap.add_argument("--runs", type=int, default=3, help="runs per contender; the median is reported (default 3)")
    ap.add_argument("--skip-peers", action="store_true", help="no DuckDB and polars rows")
    ap.add_argument("--peer-python", help="interpreter with duckdb and polars (default: this one, else a venv)")
    ap.add_argument("--baseline-ref", help="also time the dpsketch package of this git ref")
    ap.add_argument("--sort", action="store_true", help="also time the sort | uniq -c pipeline")
    ap.add_argument("--floors", action="store_true", help="also time reading the file alone and the start-up")
    ap.add_argument("--k", default="1000")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()

    peers_py = None if args.skip_peers else peer_python(args.peer_python)
    tmp = tempfile.TemporaryDirectory()
    baseline = None if args.baseline_ref is None else str(baseline_tree(args.baseline_ref, Path(tmp.name)))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"{platform.python_implementation()} {platform.python_version()}; {load()} at the start", flush=True)
    if args.floors:
        runs = [run([sys.executable, "-m", "dpsketch", "--version"])[0] for _ in range(10)]
        floor = [run([sys.executable, "-c", "pass"])[0] for _ in range(10)]
        print(f"start-up: dpsketch --version {statistics.median(runs):.3f} s, python -c pass "
              f"{statistics.median(floor):.3f} s (medians of 10)", flush=True)
    results = []
    for lines in args.lines:
        for kind in args.sets.split(","):
            for comp in args.compress.split(","):
                path = make_input(kind, lines, comp == "gzip")
                cands = contenders(path, kind, args, peers_py, baseline)
                walls = {name: [] for name in cands}
                rss = {name: [] for name in cands}
                for _ in range(args.runs):
                    for name, (cmd, shell) in cands.items():
                        w, m = run(cmd, shell=shell)
                        walls[name].append(w)
                        rss[name].append(m)
                print(f"\n{kind} {comp}, {lines:,} lines ({path.stat().st_size / 1e6:.0f} MB), "
                      f"medians of {args.runs}; {load()}", flush=True)
                ours = statistics.median(walls["dpsketch top"])
                ours_rss = statistics.median(rss["dpsketch top"])
                for name in cands:
                    wall, mem = statistics.median(walls[name]), statistics.median(rss[name])
                    ratio = "" if name == "dpsketch top" else f"  dpsketch/this: time {ours / wall:.2f}x, memory {ours_rss / mem:.2f}x"
                    print(f"  {name:36s} {wall:7.2f} s  {lines / wall / 1e6:7.1f} M lines/s  peak {mem:7.1f} MB{ratio}",
                          flush=True)
                    results.append({"set": kind, "compress": comp, "lines": lines, "contender": name,
                                    "seconds": wall, "peak_rss_mb": mem, "runs": walls[name]})
    print(f"\n{load()} at the end")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
