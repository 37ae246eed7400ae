"""The ``dpsketch`` command line (also ``python -m dpsketch``).

``dpsketch top [FILE|-]``
    Stream items from a text file (one item per line, gzip-compressed or not), a CSV column or a
    Parquet column through a summary, release the differentially private heavy hitters once and
    print them (rank, item, noisy count) as a table, JSON or CSV.
``dpsketch top --demo``
    The same on the bundled *retail* stream, plus recall and precision against the exact answer.
``dpsketch quantiles [FILE|-]``
    Private quantiles of a numeric column from a PrivateDyadicCountSketch (logic in
    :mod:`dpsketch.quantiles_cmd`).
``dpsketch experiment NAME``
    Run one of the experiments of :mod:`dpsketch.experiments`.
``dpsketch docs [TOPIC]``
    List the documentation installed with the package, or print one page (``--path``: its location).

Exit status: 0 on success, 2 for usage errors (bad options or parameters), 1 for runtime errors
(unreadable or empty input, a release the library refuses). Errors are one line on stderr,
``dpsketch: error: ...``; they name no item, line or row number (an item label may only be shown
once it has passed the release threshold, and a position counts the items before it).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import sys

import numpy as np

from . import _input

__all__ = ["main"]

PROG = "dpsketch"
ALGORITHMS = ("spacesaving", "misragries", "countmin", "countsketch")
FORMATS = _input.FORMATS
# Frequency threshold n/k: k = 1000 (0.1% of the stream) releases something on typical data
# (GCIDE words: ~100 items, retail: ~50); --top caps what is printed.
DEFAULT_K = 1000
DEFAULT_TOP = 25
DEMO_DEFAULT_K = 100  # the demo evaluates recall/precision against f(x) >= n/k: 5 clear items at 100
DEFAULT_CHUNK = 1_000_000


class UsageError(Exception):
    """Bad command line: exit status 2."""


class RunError(Exception):
    """The command could not be carried out (input, release): exit status 1."""


# ---------------------------------------------------------------------------------------------
# argument parsing
# ---------------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (no usage dump) and never exits the interpreter."""

    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _float_in(name, ok, requirement):
    """argparse type: a float for which ok(v) holds, else one line saying `name must be <requirement>`."""

    def conv(text):
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not (math.isfinite(v) and ok(v)):
            raise argparse.ArgumentTypeError(f"{name} must be {requirement}, got {text}")
        return v

    return conv


def _positive_float(name):
    return _float_in(name, lambda v: v > 0, "a finite number > 0")


_delta = _float_in("delta", lambda v: 0.0 < v < 1.0, "strictly between 0 and 1")
_oversample = _float_in("oversample (capacity/k)", lambda v: v >= 1, "a number >= 1")


def _int_at_least(name, lo, hi=None):
    def conv(text):
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if v < lo or (hi is not None and v > hi):
            bound = f">= {lo}" if hi is None else f"between {lo} and {hi}"
            raise argparse.ArgumentTypeError(f"{name} must be an integer {bound}, got {text}")
        return v

    return conv


def _max_length(text):
    if text == "auto":
        return "auto"
    return _int_at_least("max-stream-length", 1)(text)


def _build_parser() -> _Parser:
    p = _Parser(
        prog=PROG,
        description="Differentially private heavy hitters on data streams.",
        epilog="Run 'dpsketch COMMAND --help' for the options of a command. " + _docs_hint(),
    )
    from . import __version__

    p.add_argument("--version", action="version", version=f"dpsketch {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    t = sub.add_parser(
        "top",
        help="release the differentially private heavy hitters of a stream",
        description=(
            "Stream the items of FILE (or stdin) through a summary and release, once, the items "
            "whose noisy count passes the mechanism's threshold. The table goes to stdout; a "
            "header (mechanism, epsilon, delta, threshold, n) goes to stderr."
        ),
    )
    t.add_argument("file", nargs="?", metavar="FILE", help="input file, or '-' for stdin (default)")
    t.add_argument("--demo", action="store_true",
                   help="run on the bundled retail stream and print recall/precision "
                        f"(default --k {DEMO_DEFAULT_K})")
    g = t.add_argument_group("input")
    g.add_argument("--format", choices=FORMATS,
                   help="input format (default: from the extension: .csv/.tsv -> csv, "
                        ".parquet/.pq -> parquet, anything else -> text; gzip is detected from the content)")
    g.add_argument("--column", metavar="NAME",
                   help="CSV/Parquet column holding the items (optional when there is only one); "
                        "with --no-header, a 0-based column index")
    g.add_argument("--delimiter", metavar="CHAR", help="CSV field delimiter (default ',' or tab for .tsv)")
    g.add_argument("--no-header", action="store_true", help="the CSV file has no header row")
    g.add_argument("--encoding", default="utf-8", help="text/CSV encoding (default utf-8)")
    keys = g.add_mutually_exclusive_group()
    keys.add_argument("--int-keys", dest="keys", action="store_const", const="int",
                      help="parse every item as a 64-bit integer (items that are not one are dropped)")
    keys.add_argument("--str-keys", dest="keys", action="store_const", const="str",
                      help="keep every item as text (the default for text and CSV input)")
    g.add_argument("--chunk-size", type=_int_at_least("chunk-size", 1), default=DEFAULT_CHUNK,
                   metavar="N", help=f"items per update batch (default {DEFAULT_CHUNK:,})")
    g.add_argument("--max-line-length", type=_int_at_least("max-line-length", 1),
                   default=_input.DEFAULT_MAX_LINE_BYTES, metavar="BYTES",
                   help="longest line (text) or row (CSV) accepted; longer input is an error, so "
                        f"input without newlines cannot exhaust memory (default {_input.DEFAULT_MAX_LINE_BYTES:,})")
    m = t.add_argument_group("mechanism")
    m.add_argument("--algorithm", "-a", choices=ALGORITHMS, default="spacesaving",
                   help="summary: spacesaving (DPSS, default), misragries (PMG), countmin or "
                        "countsketch (noisy sketch + candidate set)")
    m.add_argument("--k", "-k", type=_int_at_least("k", 1), default=None,
                   help="frequency threshold: release items whose frequency is about n/k or more "
                        f"(n = stream length; NOT 'the top k'; default {DEFAULT_K}, i.e. 0.1%% of the "
                        "stream). At most ~k items can pass; see --top for how many are printed")
    m.add_argument("--epsilon", "-e", type=_positive_float("epsilon"), default=1.0,
                   help="privacy parameter epsilon > 0 (default 1.0)")
    m.add_argument("--delta", "-d", type=_delta, default=1e-6,
                   help="privacy parameter delta in (0, 1) (default 1e-6)")
    m.add_argument("--oversample", type=_oversample, default=2.0,
                   help="capacity / k, i.e. counters or candidates per target item (default 2)")
    m.add_argument("--max-stream-length", type=_max_length, metavar="N|auto",
                   help="countmin/countsketch: public upper bound on the number of items, fixed "
                        "before reading ('auto', only with --public-length: count a file in a first "
                        "pass; Parquet: row count). Ignored by spacesaving/misragries")
    m.add_argument("--length-epsilon", type=_positive_float("length-epsilon"), metavar="EPS",
                   help="the part of --epsilon spent on the noisy stream length (default epsilon/10); "
                        "the release's total stays (epsilon, delta)")
    m.add_argument("--public-length", action="store_true",
                   help="treat the stream length n as public instead of private: the guarantee then "
                        "holds for neighbours that change one item (replace-one), and exact item "
                        "counts may be printed")
    m.add_argument("--seed", type=_int_at_least("seed", 0, 2**64 - 1),
                   help="seed the noise for reproducible experiments (the release is then NOT secret)")
    o = t.add_argument_group("output")
    fmt = o.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the release as JSON")
    fmt.add_argument("--csv", action="store_true", help="print rank,item,noisy_count as CSV")
    o.add_argument("--top", "-n", type=_int_at_least("top", 0), default=DEFAULT_TOP, metavar="N",
                   help=f"print at most the N largest released items (post-processing; default "
                        f"{DEFAULT_TOP}; 0 prints all)")
    o.add_argument("--quiet", "-q", action="store_true", help="no header, notes or progress bar on stderr")
    prog = o.add_mutually_exclusive_group()
    prog.add_argument("--progress", action="store_true",
                      help="show a progress bar with rate and ETA (default: only when stderr is a terminal)")
    prog.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.set_defaults(handler=_cmd_top, keys="auto")

    qp = sub.add_parser(
        "quantiles",
        help="release differentially private quantiles of a numeric column",
        description=(
            "Feed the numeric values of FILE (or stdin) into a private dyadic CountSketch (noise drawn "
            "before reading) and print the requested quantiles. With --bounds LO,HI values are real "
            "numbers clamped into [LO, HI] and reported at resolution (HI-LO)/2^L; with only "
            "--universe-bits L they are integers in [0, 2^L). Mechanism and privacy go to stderr."
        ),
    )
    qp.add_argument("file", nargs="?", metavar="FILE", help="input file, or '-' for stdin (default)")
    g = qp.add_argument_group("input")
    g.add_argument("--format", choices=FORMATS, help="input format (default: from the file name; text for stdin)")
    g.add_argument("--column", metavar="NAME", help="CSV/Parquet column holding the values")
    g.add_argument("--delimiter", metavar="CHAR", help="CSV field delimiter (default ',' or tab for .tsv)")
    g.add_argument("--no-header", action="store_true", help="the CSV file has no header row")
    g.add_argument("--encoding", default="utf-8", help="text/CSV encoding (default utf-8)")
    g.add_argument("--chunk-size", type=_int_at_least("chunk-size", 1), default=DEFAULT_CHUNK,
                   help=f"values per batch (default {DEFAULT_CHUNK:,})")
    m = qp.add_argument_group("mechanism")
    m.add_argument("--q", default="0.5,0.9,0.99", metavar="Q1,Q2,...",
                   help="quantile levels in [0, 1] (default 0.5,0.9,0.99)")
    budget = m.add_mutually_exclusive_group()
    budget.add_argument("--rho", type=_positive_float("rho"), help="zCDP budget (discrete Gaussian noise)")
    budget.add_argument("--epsilon", "-e", type=_positive_float("epsilon"), help="pure-DP budget (discrete Laplace)")
    m.add_argument("--bounds", metavar="LO,HI", help="public value range; values outside are clamped")
    m.add_argument("--universe-bits", type=_int_at_least("universe-bits", 1, 64), metavar="L",
                   help="L: 2^L buckets (default 32 with --bounds); without --bounds, values are integers in [0, 2^L)")
    m.add_argument("--gamma", type=_float_in("gamma", lambda v: 0 < v < 1, "strictly between 0 and 1"), default=0.01,
                   help="target rank error gamma of Zhao's shape (default 0.01)")
    m.add_argument("--noise-allocation", choices=("joint", "zhao"), default="joint",
                   help="joint sigma^2 over all levels (default) or Zhao's even split of rho")
    m.add_argument("--seed", type=_int_at_least("seed", 0, 2**64 - 1), metavar="S",
                   help="reproducible noise and hashes: NOT secret, for experiments only")
    o = qp.add_argument_group("output")
    fmt = o.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print quantiles and privacy metadata as JSON")
    fmt.add_argument("--csv", action="store_true", help="print q,value as CSV")
    o.add_argument("--quiet", "-q", dest="quiet", action="store_true", help="no header on stderr")
    qp.set_defaults(handler=_cmd_quantiles, keys="str")

    e = sub.add_parser(
        "experiment",
        help="run a paper experiment (dpsketch.experiments)",
        description="Run one experiment of dpsketch.experiments and write its results.",
    )
    e.add_argument("name", metavar="NAME", help="experiment name")
    e.add_argument("--quick", action="store_true", help="small, fast version")
    e.add_argument("--out", metavar="DIR", help="output folder")
    e.add_argument("--repeats", type=_int_at_least("repeats", 1), metavar="R", help="repetitions")
    e.add_argument("--seed", type=_int_at_least("seed", 0, 2**64 - 1), metavar="S", help="seed")
    e.add_argument("--data", metavar="PATH", help="folder or file with the real data sets")
    e.set_defaults(handler=_cmd_experiment)

    d = sub.add_parser(
        "docs",
        help="list or print the documentation installed with the package",
        description="Without TOPIC: list the pages (algorithms, privacy, cli, ...) and where they are. "
                    "With TOPIC: print that page (Markdown).",
    )
    d.add_argument("topic", nargs="?", metavar="TOPIC", help="page name, e.g. algorithms, privacy, cli")
    d.add_argument("--path", action="store_true", help="print the file's path (or the folder's) instead")
    d.set_defaults(handler=_cmd_docs)

    a = sub.add_parser(
        "audit",
        help="empirically audit the privacy of every mechanism (lower bounds on epsilon)",
        description="Run built-in worst-case neighbouring inputs through each mechanism and report an "
                    "empirical lower bound on epsilon (Clopper-Pearson), on the Gaussian-DP mu for the Gaussian "
                    "mechanisms, and the unstable-label release rate vs delta. Exit status 1 if any bound exceeds "
                    "the claimed guarantee (with --miscalibrated: if some halved-noise mechanism is not caught). "
                    "See docs/audit.md.",
    )
    a.add_argument("mechanisms", nargs="*", metavar="MECHANISM", help="mechanisms to audit (default: all)")
    a.add_argument("--epsilon", "-e", type=_positive_float("epsilon"), default=1.0, help="epsilon audited (default 1)")
    a.add_argument("--delta", "-d", type=_delta, default=1e-6, help="delta of the epsilon pairs (default 1e-6)")
    a.add_argument("--label-delta", type=_delta, default=0.2,
                   help="delta of the unstable-label pairs, large so the event is measurable (default 0.2)")
    a.add_argument("--trials", type=_int_at_least("trials", 10), metavar="N",
                   help="runs per side of each pair (default 200000; --quick: 10000)")
    a.add_argument("--quick", action="store_true", help="small, fast audit for CI")
    a.add_argument("--miscalibrated", action="store_true",
                   help="audit copies of the mechanisms with their noise scale halved (same claimed guarantee); "
                        "exit 0 iff every mechanism FAILs, i.e. the audit catches each of them")
    a.add_argument("--confidence", type=_float_in("confidence", lambda v: 0.5 <= v < 1, "in [0.5, 1)"),
                   default=0.999, help="family-wise confidence of the bounds (default 0.999)")
    a.add_argument("--seed", type=_int_at_least("seed", 0, 2**64 - 1), help="seed the audit (reproducible)")
    a.add_argument("--json", action="store_true", help="print the results as JSON")
    a.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    a.set_defaults(handler=_cmd_audit)
    return p


def _docs_hint():
    from ._docs import docs_dir

    where = docs_dir()
    place = f"installed in {where}" if where is not None else "in docs/ of the source distribution"
    return (f"Documentation ({place}): 'dpsketch docs' lists the pages, 'dpsketch docs algorithms' prints "
            "the algorithm specification, 'dpsketch docs cli' this command's manual.")


def _cmd_docs(args):
    from . import _docs

    where = _docs.docs_dir()
    if where is None:
        raise RunError("the documentation is not installed with this copy of dpsketch (see docs/ in the source)")
    if args.topic is None:
        if args.path:
            print(where)
            return 0
        print(f"dpsketch documentation in {where}:")
        for name, title in _docs.topics().items():
            print(f"  {name:<12} {title}")
        print("print a page with 'dpsketch docs TOPIC'")
        return 0
    try:
        page = _docs.doc_path(args.topic)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.path:
        print(page)
    else:
        sys.stdout.write(page.read_text(encoding="utf-8"))
    return 0


def _cmd_audit(args):
    from . import audit

    try:
        return audit.run_command(
            args.mechanisms, epsilon=args.epsilon, delta=args.delta, label_delta=args.label_delta,
            trials=args.trials, quick=args.quick, confidence=args.confidence, seed=args.seed,
            as_json=args.json, quiet=args.quiet, out=sys.stdout, err=sys.stderr, miscalibrated=args.miscalibrated)
    except ValueError as exc:
        raise UsageError(_first_line(exc)) from None


# ---------------------------------------------------------------------------------------------
# stderr helpers
# ---------------------------------------------------------------------------------------------


def _note(args, msg):
    if not getattr(args, "quiet", False):
        print(f"{PROG}: {msg}", file=sys.stderr)


def _note_spent(args, budget):
    """The 'spent:' line of every command that draws noise: what its dpsketch.Budget recorded."""
    s = budget.spent()
    what = f"rho={_num(s.rho)}" if budget.rho is not None else f"epsilon={_num(s.epsilon)}, delta={_num(s.delta)}"
    _note(args, f"spent: {what} (dpsketch.Budget ledger)")


def _warn(msg):
    print(f"{PROG}: warning: {msg}", file=sys.stderr)


class _Progress:
    """A tqdm progress bar on stderr (rate and ETA; percentage when the total is known), or nothing."""

    def __init__(self, enabled, total, unit):
        self.bar, self.last = None, 0
        if not enabled:
            return
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit=unit.strip() or "B", unit_scale=True, unit_divisor=1000,
                        file=sys.stderr, leave=False, delay=0.5, desc=PROG, dynamic_ncols=True)

    def update(self, pos):
        if self.bar is None or pos is None:
            return
        self.bar.update(pos - self.last)
        self.last = pos

    def close(self):
        if self.bar is not None:
            self.bar.close()


# ---------------------------------------------------------------------------------------------
# input (the reading itself lives in dpsketch._input)
# ---------------------------------------------------------------------------------------------


def _display(path):
    return _input.display(path)


def _first_line(exc):
    return _input.first_line(exc)


def _open_source(args, keys=None):
    """The input of ``top`` as a dpsketch._input.Source (checks options and the path, reads nothing)."""
    try:
        return _input.Source(
            args.file, format=args.format, column=args.column, no_header=args.no_header,
            delimiter=args.delimiter, encoding=args.encoding, keys=keys or args.keys,
            chunk_size=args.chunk_size,
            max_line_bytes=getattr(args, "max_line_length", _input.DEFAULT_MAX_LINE_BYTES),
        )
    except _input.InputUsageError as exc:
        raise UsageError(str(exc)) from None
    except _input.InputError as exc:
        raise RunError(str(exc)) from None

# ---------------------------------------------------------------------------------------------
# dpsketch top
# ---------------------------------------------------------------------------------------------


def _make_estimator(args, capacity, max_len):
    import dpsketch

    if args.algorithm == "spacesaving":
        return dpsketch.SpaceSaving(capacity)
    if args.algorithm == "misragries":
        return dpsketch.MisraGries(capacity)
    return dpsketch.SketchHeavyHitters(
        sketch=args.algorithm, k=args.k, capacity=capacity, epsilon=args.epsilon, delta=args.delta,
        max_stream_length=max_len, seed=args.seed, **_length_options(args),
    )


def _length_options(args):
    return {"public_length": args.public_length, "length_epsilon": args.length_epsilon}


def _release(args, est):
    from .budget import Budget

    # The run's budget is what was asked for; the release (its length share included) is charged
    # to it and the accountant's total is what the 'spent:' line prints.
    args.budget = Budget(args.epsilon, args.delta)
    if args.algorithm == "spacesaving":
        return est.release(epsilon=args.epsilon, delta=args.delta, k=args.k, seed=args.seed, budget=args.budget, **_length_options(args))
    if args.algorithm == "misragries":
        return est.release(epsilon=args.epsilon, delta=args.delta, k=args.k, seed=args.seed, budget=args.budget,
                           **_length_options(args))
    return est.release(budget=args.budget)  # sketch noise was drawn at construction (seeded there)


def _num(x):
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if x.is_integer() and abs(x) < 1e15:
            return str(int(x))
        return f"{x:.10g}"
    return str(x)


def _label(key):
    s = str(key)
    return s if s.isprintable() else repr(s)[1:-1]


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    return str(o)


def _print_table(items, threshold):
    out = sys.stdout
    rows = [(str(i), _label(k), _num(v)) for i, (k, v) in enumerate(items, 1)]
    head = ("rank", "item", "noisy count")
    w = [max([len(head[j])] + [len(r[j]) for r in rows]) for j in range(3)]
    out.write(f"{head[0]:>{w[0]}}  {head[1]:<{w[1]}}  {head[2]:>{w[2]}}\n")
    for r in rows:
        out.write(f"{r[0]:>{w[0]}}  {r[1]:<{w[1]}}  {r[2]:>{w[2]}}\n")
    if not rows:
        out.write(f"(no item passed the threshold {_num(threshold)})\n")


def _print_csv(items):
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(["rank", "item", "noisy_count"])
    for i, (k, v) in enumerate(items, 1):
        w.writerow([i, k, _num(v)])


def _evaluate(stream, items, k):
    """Recall and precision of the released keys against {x : f(x) >= n/k} (exact, non-private)."""
    n = len(stream)
    keys, counts = np.unique(stream, return_counts=True)
    truth = set(keys[counts * k >= n].tolist())  # f(x) >= n/k, exactly in integers
    released = {k_ for k_, _ in items}
    hit = len(truth & released)
    return {
        "true_heavy_hitters": len(truth),
        "released": len(released),
        "correct": hit,
        "recall": hit / len(truth) if truth else 1.0,
        "precision": hit / len(released) if released else 1.0,
        "threshold_n_over_k": n / k,
        "note": "evaluated against the exact counts: not differentially private",
    }


def _check_parameters_upfront(args):
    """Everything that can be checked without the data, checked before any input is read."""
    from .release import calibrate

    if args.public_length and args.length_epsilon is not None:
        raise UsageError("--length-epsilon prices a private length; it cannot be combined with --public-length")
    try:
        calibrate(args.epsilon, args.delta, "bounds", public_length=args.public_length,
                  length_epsilon=args.length_epsilon)
    except (TypeError, ValueError) as exc:
        raise UsageError(_first_line(exc)) from None


def _cmd_top(args):
    if args.demo:
        if args.file is not None:
            raise UsageError("--demo reads the bundled retail stream; do not also give FILE")
        for opt in ("format", "column", "delimiter"):
            if getattr(args, opt) is not None:
                raise UsageError(f"--{opt} does not apply to --demo")
    if args.k is None:
        args.k = DEMO_DEFAULT_K if args.demo else DEFAULT_K
    capacity = max(args.k, math.ceil(args.oversample * args.k - 1e-9))
    _check_parameters_upfront(args)

    src = None
    stream = None
    max_len = args.max_stream_length
    if args.demo:
        import dpsketch.datasets

        stream = dpsketch.datasets.retail()
        if max_len in (None, "auto"):
            max_len = len(stream)
    else:
        if args.file is None and _isatty(sys.stdin):
            raise UsageError("no input: give FILE, '-' to read stdin, or --demo")
        src = _open_source(args)
    sketch = args.algorithm in ("countmin", "countsketch")
    # The length is private unless --public-length: nothing exact about it (items read, skipped,
    # an empty input) may be printed or recorded (docs/cli.md).
    private_length = not args.public_length
    if sketch and private_length and max_len == "auto" and not args.demo:
        raise UsageError(
            "--max-stream-length auto would use the exact length, which is private by default; "
            "give a public bound --max-stream-length N fixed before reading (or opt in to --public-length)"
        )
    if sketch and max_len is None and src.format == "parquet" and src.path != "-" and not private_length:
        max_len = "auto"
    if sketch and max_len is None:
        raise UsageError(
            f"--algorithm {args.algorithm} needs --max-stream-length N, a public upper bound on "
            f"the number of items fixed before reading (or 'auto' to count a file in a first pass)"
        )
    if sketch and max_len == "auto" and src.path == "-":
        raise UsageError("--max-stream-length auto cannot count stdin; give a number")
    if sketch and max_len != "auto":
        _make_checked_estimator(args, capacity, max_len)  # parameter errors before any reading
    if sketch and max_len == "auto":
        max_len = _count_items(src, args)
        _note(args, f"max stream length {max_len:,} (counted in a first pass; the length is treated as public)")
        if max_len == 0:
            raise RunError(f"{_display(src.path)} has no items")

    if args.seed is not None:
        _warn("--seed makes the noise reproducible: this release is NOT secret (use for experiments only)")

    est = _make_checked_estimator(args, capacity, max_len)

    n = 0
    if args.demo:
        progress = _Progress(_show_progress(args), len(stream), " items")
        try:
            for i in range(0, len(stream), args.chunk_size):
                chunk = stream[i : i + args.chunk_size]
                est.update_many(chunk)
                n += len(chunk)
                progress.update(n)
        finally:
            progress.close()
        keys_desc = "int (retail item ids)"
        source_desc = f"bundled retail stream ({len(stream):,} items)"
    else:
        n = _feed(src, est, args)
        keys_desc = src.keys.describe()
        source_desc = _display(src.path)
        if n == 0 and not private_length:  # with a private length an empty input releases as usual
            what = f" ({src.skipped:,} {src.skipped_what} skipped)" if src.skipped else ""
            raise RunError(f"{source_desc} has no items{what}")
        if src.skipped and not private_length:
            _note(args, f"skipped {src.skipped:,} {src.skipped_what}")

    try:
        rel = _release(args, est)
    except (ValueError, TypeError, RuntimeError) as exc:
        raise RunError(f"release failed: {_first_line(exc)}") from None

    released = [(k, v) for k, v in rel.items]
    items = released[: args.top] if args.top else released  # post-processing of the release
    _print_header(args, rel, capacity, keys_desc, source_desc, len(released))
    _note_spent(args, args.budget)
    if not released:
        _note(args, f"hint: nothing reached the threshold; a larger --k (now {args.k}) lowers it to "
                    f"frequency >= n/k, a larger --epsilon lowers the noise margin")
    elif len(items) < len(released):
        _note(args, f"showing the top {len(items)} of {len(released)} released items (--top 0 shows all)")
    evaluation = _evaluate(stream, released, args.k) if args.demo else None

    if args.json:
        obj = rel.to_dict()
        obj["items"] = [[k, v] for k, v in items]
        obj["cli"] = {
            "algorithm": args.algorithm, "k": args.k, "capacity": capacity, "source": source_desc,
            "keys": keys_desc, "top": args.top, "released": len(released),
        }
        if private_length:
            obj["cli"]["exact_counts_withheld"] = True  # items read / skipped would reveal n
        else:
            obj["cli"].update(items_read=n, skipped=0 if src is None else src.skipped)
        if evaluation is not None:
            obj["evaluation"] = evaluation
        json.dump(obj, sys.stdout, default=_json_default, indent=2)
        sys.stdout.write("\n")
    elif args.csv:
        _print_csv(items)
    else:
        _print_table(items, rel.threshold)
    if evaluation is not None and not args.json:
        ev = evaluation
        out = sys.stderr if args.csv else sys.stdout
        print(
            f"recall    {ev['recall']:.3f}  ({ev['correct']}/{ev['true_heavy_hitters']} items with "
            f"f(x) >= n/k = {ev['threshold_n_over_k']:.2f} released)\n"
            f"precision {ev['precision']:.3f}  ({ev['correct']}/{ev['released']} released items have "
            f"f(x) >= n/k)\n"
            f"(exact counts, for evaluation only: not differentially private)",
            file=out,
        )
    return 0


def _make_checked_estimator(args, capacity, max_len):
    try:
        return _make_estimator(args, capacity, max_len)
    except (ValueError, TypeError, OverflowError) as exc:
        raise UsageError(_first_line(exc)) from None


def _show_progress(args):
    # the bar counts items: shown with a private length only when asked for (--progress)
    if args.quiet or args.no_progress:
        return False
    if not args.public_length:
        return args.progress
    return args.progress or _isatty(sys.stderr)


def _isatty(f):
    try:
        return f.isatty()
    except (AttributeError, ValueError):
        return False


def _feed(src, est, args):
    n = 0
    progress = _Progress(_show_progress(args), src.total, src.unit)
    try:
        for batch in src.chunks():
            if progress.bar is not None and progress.bar.total is None and src.total:
                progress.bar.total = src.total  # Parquet: the row count is known once opened
            try:
                est.update_many(batch)
            except (TypeError, ValueError, OverflowError) as exc:
                raise RunError(f"cannot add the items of {_display(src.path)}: {_first_line(exc)}") from None
            n += len(batch)
            progress.update(src.position() if src.total else n)
    except _input.InputUsageError as exc:
        raise UsageError(str(exc)) from None
    except _input.InputError as exc:
        raise RunError(str(exc)) from None
    finally:
        progress.close()
    return n


def _count_items(src, args):
    """First pass for --max-stream-length auto: Parquet row count, else count the items."""
    try:
        if src.format == "parquet":
            return src.parquet_rows()
        return sum(len(batch) for batch in _open_source(args, keys="str").chunks())
    except _input.InputUsageError as exc:
        raise UsageError(str(exc)) from None
    except _input.InputError as exc:
        raise RunError(str(exc)) from None


def _print_header(args, rel, capacity, keys_desc, source_desc, released):
    if args.quiet:
        return
    unit = {"spacesaving": "counters", "misragries": "counters"}.get(args.algorithm, "candidates")
    parts = [f"epsilon={_num(rel.epsilon)}", f"delta={_num(rel.delta)}"]
    if getattr(rel, "rho", None) is not None:
        parts.append(f"rho={_num(rel.rho)}")
    parts.append(f"threshold={_num(rel.threshold)}")
    meta = getattr(rel, "metadata", None) or {}
    if meta.get("assumes_public_length"):
        parts += [f"n={_num(rel.n)}", "(n treated as public; neighbours: replace one item)"]
    elif rel.n is not None:
        parts.append(f"noisy n={_num(rel.n)}")
    print(f"{PROG}: {rel.mechanism} via {args.algorithm} ({capacity} {unit}; target frequency >= n/k, "
          f"k={args.k}) on {source_desc}; "
          f"keys: {keys_desc}", file=sys.stderr)
    print(f"{PROG}: {' '.join(parts)} -> {released} item(s) released", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# dpsketch quantiles (logic in dpsketch/quantiles_cmd.py)
# ---------------------------------------------------------------------------------------------


class _TextInput:
    """The input of ``dpsketch quantiles``, which parses the numbers itself: a dpsketch._input.Source
    whose text/CSV chunks are lists of str (``texts()``)."""

    def __init__(self, args):
        self._src = _open_source(args, keys="str")

    def __getattr__(self, name):
        return getattr(self._src, name)

    def __setattr__(self, name, value):
        if name == "_src":
            object.__setattr__(self, name, value)
        else:
            setattr(self._src, name, value)

    def texts(self):
        try:
            for arr in self._src.text_chunks():
                yield arr.to_pylist()
        except _input.InputUsageError as exc:
            raise UsageError(str(exc)) from None
        except _input.InputError as exc:
            raise RunError(str(exc)) from None


def _cmd_quantiles(args):
    from . import quantiles_cmd

    return quantiles_cmd.run(args, input_class=_TextInput, usage_error=UsageError, run_error=RunError,
                             warn=_warn, display=_display, first_line=_first_line, note_spent=_note_spent)


# ---------------------------------------------------------------------------------------------
# dpsketch experiment
# ---------------------------------------------------------------------------------------------


def _cmd_experiment(args):
    try:
        from . import experiments
    except ImportError as exc:
        if getattr(exc, "name", None) == f"{__package__}.experiments":
            raise RunError("the experiments module (dpsketch.experiments) is not available") from None
        raise RunError(f"cannot load dpsketch.experiments: {_first_line(exc)}") from None
    names = getattr(experiments, "EXPERIMENTS", None) or getattr(experiments, "NAMES", None)
    if names is not None and args.name not in names:
        raise UsageError(f"unknown experiment {args.name!r}; choose from {', '.join(sorted(names))}")
    run = getattr(experiments, "run", None)
    if run is None:
        raise RunError("the experiments module (dpsketch.experiments) is not available")
    # pass only what was given, so the experiment's own defaults apply to the rest
    kwargs = {"quick": args.quick}
    for opt in ("out", "repeats", "seed", "data"):
        if getattr(args, opt) is not None:
            kwargs[opt] = getattr(args, opt)
    with contextlib.suppress(TypeError, ValueError):
        import inspect

        if "progress" in inspect.signature(run).parameters:
            kwargs["progress"] = _isatty(sys.stderr)
    try:
        result = run(args.name, **kwargs)
    except (FileNotFoundError, ValueError) as exc:
        raise RunError(_first_line(exc)) from None
    if isinstance(result, (str, os.PathLike)):
        print(os.fspath(result))
    return result if isinstance(result, int) and not isinstance(result, bool) else 0


# ---------------------------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        return args.handler(args)
    except SystemExit as exc:  # --help / --version
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except RunError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # stdout closed early (e.g. piped into head): exit quietly
        with contextlib.suppress(Exception):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 1
