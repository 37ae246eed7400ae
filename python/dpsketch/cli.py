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
``dpsketch: error: ...``; they name line numbers, never the items themselves (an item label may
only be shown once it has passed the release threshold).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gzip
import io
import itertools
import json
import math
import os
import stat
import sys
import time

import numpy as np

__all__ = ["main"]

PROG = "dpsketch"
ALGORITHMS = ("spacesaving", "misragries", "countmin", "countsketch")
FORMATS = ("text", "csv", "parquet")
DEFAULT_K = 10
DEMO_DEFAULT_K = 100  # at k = 10 no retail item reaches n/k, so recall would be vacuous
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
                        ".parquet/.pq -> parquet, anything else -> text; a .gz suffix is looked through)")
    g.add_argument("--column", metavar="NAME",
                   help="CSV/Parquet column holding the items (optional when there is only one); "
                        "with --no-header, a 0-based column index")
    g.add_argument("--delimiter", metavar="CHAR", help="CSV field delimiter (default ',' or tab for .tsv)")
    g.add_argument("--no-header", action="store_true", help="the CSV file has no header row")
    g.add_argument("--encoding", default="utf-8", help="text/CSV encoding (default utf-8)")
    keys = g.add_mutually_exclusive_group()
    keys.add_argument("--int-keys", dest="keys", action="store_const", const="int",
                      help="parse every item as a 64-bit integer")
    keys.add_argument("--str-keys", dest="keys", action="store_const", const="str",
                      help="keep every item as text")
    g.add_argument("--chunk-size", type=_int_at_least("chunk-size", 1), default=DEFAULT_CHUNK,
                   metavar="N", help=f"items per update batch (default {DEFAULT_CHUNK:,})")
    m = t.add_argument_group("mechanism")
    m.add_argument("--algorithm", "-a", choices=ALGORITHMS, default="spacesaving",
                   help="summary: spacesaving (DPSS, default), misragries (PMG), countmin or "
                        "countsketch (noisy sketch + candidate set)")
    m.add_argument("--k", "-k", type=_int_at_least("k", 1), default=None,
                   help=f"target: items with frequency >= n/k (default {DEFAULT_K})")
    m.add_argument("--epsilon", "-e", type=_positive_float("epsilon"), default=1.0,
                   help="privacy parameter epsilon > 0 (default 1.0)")
    m.add_argument("--delta", "-d", type=_delta, default=1e-6,
                   help="privacy parameter delta in (0, 1) (default 1e-6)")
    m.add_argument("--oversample", type=_oversample, default=2.0,
                   help="capacity / k, i.e. counters or candidates per target item (default 2)")
    m.add_argument("--max-stream-length", type=_max_length, metavar="N|auto",
                   help="countmin/countsketch: public upper bound on the number of items, fixed "
                        "before reading ('auto': count a file in a first pass; Parquet: row count). "
                        "Ignored by spacesaving/misragries")
    m.add_argument("--length-epsilon", type=_positive_float("length-epsilon"), metavar="EPS",
                   help="treat n as private: release a noisy n with this extra epsilon (total "
                        "privacy (epsilon + EPS, 2 delta)) instead of treating n as public")
    m.add_argument("--seed", type=_int_at_least("seed", 0, 2**64 - 1),
                   help="seed the noise for reproducible experiments (the release is then NOT secret)")
    o = t.add_argument_group("output")
    fmt = o.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the release as JSON")
    fmt.add_argument("--csv", action="store_true", help="print rank,item,noisy_count as CSV")
    o.add_argument("--quiet", "-q", action="store_true", help="no header, notes or progress bar on stderr")
    o.add_argument("--no-progress", action="store_true", help="no progress bar")
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
                    "empirical lower bound on epsilon (Clopper-Pearson) and the unstable-label release "
                    "rate vs delta. Exit status 1 if any bound exceeds the claimed guarantee. See docs/audit.md.",
    )
    a.add_argument("mechanisms", nargs="*", metavar="MECHANISM", help="mechanisms to audit (default: all)")
    a.add_argument("--epsilon", "-e", type=_positive_float("epsilon"), default=1.0, help="epsilon audited (default 1)")
    a.add_argument("--delta", "-d", type=_delta, default=1e-6, help="delta of the epsilon pairs (default 1e-6)")
    a.add_argument("--label-delta", type=_delta, default=0.2,
                   help="delta of the unstable-label pairs, large so the event is measurable (default 0.2)")
    a.add_argument("--trials", type=_int_at_least("trials", 10), metavar="N",
                   help="runs per side of each pair (default 200000; --quick: 10000)")
    a.add_argument("--quick", action="store_true", help="small, fast audit for CI")
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
            as_json=args.json, quiet=args.quiet, out=sys.stdout, err=sys.stderr)
    except ValueError as exc:
        raise UsageError(_first_line(exc)) from None


# ---------------------------------------------------------------------------------------------
# stderr helpers
# ---------------------------------------------------------------------------------------------


def _note(args, msg):
    if not getattr(args, "quiet", False):
        print(f"{PROG}: {msg}", file=sys.stderr)


def _warn(msg):
    print(f"{PROG}: warning: {msg}", file=sys.stderr)


class _Progress:
    """Progress on stderr, only when stderr is a terminal: tqdm if importable, else a one-line
    counter redrawn at most 5 times a second, shown only for inputs that take > 0.5 s."""

    def __init__(self, enabled, total, unit):
        self.total, self.unit, self.last = total, unit, 0
        self.bar = None
        self.enabled = bool(enabled)
        self.t0 = time.monotonic()
        self.drawn = 0.0
        self.shown = False
        if not self.enabled:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        try:
            self.bar = tqdm(total=total, unit=unit, unit_scale=True, file=sys.stderr, leave=False,
                            delay=0.5, desc=PROG)
        except TypeError:  # tqdm without delay=
            self.bar = tqdm(total=total, unit=unit, unit_scale=True, file=sys.stderr, leave=False, desc=PROG)

    def update(self, pos):
        if not self.enabled or pos is None:
            return
        if self.bar is not None:
            self.bar.update(pos - self.last)
            self.last = pos
            return
        now = time.monotonic()
        if now - self.t0 < 0.5 or now - self.drawn < 0.2:
            return
        self.drawn, self.shown = now, True
        done = _si(pos) + self.unit
        if self.total:
            frac = min(1.0, pos / self.total)
            width = 30
            fill = int(frac * width)
            line = f"{PROG}: [{'#' * fill}{'.' * (width - fill)}] {frac:6.1%}  {done} / {_si(self.total)}{self.unit}"
        else:
            line = f"{PROG}: {done} read"
        sys.stderr.write("\r" + line + "\x1b[K")
        sys.stderr.flush()

    def close(self):
        if self.bar is not None:
            self.bar.close()
        elif self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _si(x):
    for unit in ("", "k", "M", "G", "T"):
        if abs(x) < 1000:
            return f"{x:.0f}{unit}" if unit == "" else f"{x:.1f}{unit}"
        x /= 1000.0
    return f"{x:.1f}P"


# ---------------------------------------------------------------------------------------------
# input
# ---------------------------------------------------------------------------------------------


def _detect_format(path: str | None) -> str:
    if path is None or path == "-":
        return "text"
    name = os.path.basename(path).lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith((".csv", ".tsv")):
        return "csv"
    if name.endswith((".parquet", ".pq", ".parq")):
        return "parquet"
    return "text"


def _display(path):
    return "stdin" if path == "-" else repr(path)


def _canonical_ints(items):
    """int64 array when every item is a canonical decimal integer in the int64 range (so the
    integer prints back as the same text), else None."""
    try:
        vals = list(map(int, items))
    except (ValueError, TypeError):
        return None
    if not all(map(str.__eq__, map(str, vals), items)):
        return None
    try:
        return np.array(vals, dtype=np.int64)
    except OverflowError:
        return None


class _KeyConverter:
    """Turns a chunk of text items into keys. Mode 'str' keeps the text; 'int' parses every item
    with int() (leading zeros, '+', surrounding space allowed); 'auto' decides on the first
    chunk: int keys if every item there is a canonical integer (e.g. '42', '-7', not '007'),
    else str. Later chunks must then follow the same choice."""

    def __init__(self, mode):
        self.mode = mode
        self.chosen = None if mode == "auto" else mode
        self.how = "auto-detected from the first chunk" if mode == "auto" else "forced"

    def describe(self):
        if self.chosen is None:
            return "none"
        return f"{self.chosen} ({self.how})"

    def convert(self, items, locate):
        if self.chosen is None:
            arr = _canonical_ints(items)
            self.chosen = "int" if arr is not None else "str"
            return arr if arr is not None else items
        if self.chosen == "str":
            return items
        if self.mode == "auto":
            arr = _canonical_ints(items)
            if arr is not None:
                return arr
            bad = next(i for i, s in enumerate(items) if _canonical_ints([s]) is None)
            raise RunError(
                f"{locate(bad)} is not an integer, but the keys were auto-detected as integers from "
                f"the first chunk; rerun with --str-keys (or --int-keys to parse leniently)"
            )
        out = np.empty(len(items), dtype=np.int64)
        for i, s in enumerate(items):
            try:
                out[i] = int(s)
            except ValueError:
                raise RunError(f"{locate(i)} is not an integer (--int-keys); rerun without --int-keys") from None
            except OverflowError:
                raise RunError(f"{locate(i)} does not fit in a signed 64-bit integer (--int-keys)") from None
        return out


class _Input:
    """An input source that yields key batches for ``update_many``."""

    def __init__(self, args):
        self.path = args.file if args.file is not None else "-"
        self.format = args.format or _detect_format(self.path)
        self.column = args.column
        self.no_header = args.no_header
        self.chunk_size = args.chunk_size
        enc = args.encoding
        try:
            import codecs

            enc = codecs.lookup(enc).name
        except LookupError:
            raise UsageError(f"unknown encoding {args.encoding!r}") from None
        self.encoding = "utf-8-sig" if enc == "utf-8" else enc  # drop a leading byte-order mark
        self.delimiter = args.delimiter
        self.keys = _KeyConverter(args.keys)
        self.skipped = 0
        self.skipped_what = {"text": "blank lines", "csv": "empty values"}.get(self.format, "null values")
        self.total = None  # progress total (bytes or rows)
        self.unit = "B"
        self._pos = lambda: None
        if self.format == "text" and self.column is not None:
            raise UsageError("--column is only for CSV and Parquet input; pass --format csv or --format parquet")
        if self.format != "csv" and (self.delimiter is not None or self.no_header):
            raise UsageError("--delimiter and --no-header are only for CSV input")
        if self.delimiter is not None and len(self.delimiter) != 1:
            if self.delimiter in ("\\t", "tab"):
                self.delimiter = "\t"
            else:
                raise UsageError(f"--delimiter must be one character, got {self.delimiter!r}")
        if self.no_header and self.column is not None:
            try:
                self.col_index = int(self.column)
            except ValueError:
                raise UsageError("with --no-header, --column is a 0-based column index") from None
            if self.col_index < 0:
                raise UsageError("with --no-header, --column is a 0-based column index")
        if self.path != "-" and not os.path.exists(self.path):
            raise RunError(f"cannot read {self.path!r}: no such file")
        if self.path != "-" and os.path.isdir(self.path):
            raise RunError(f"cannot read {self.path!r}: it is a directory")

    def position(self):
        return self._pos()

    # -- raw bytes ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _binary(self):
        """The decompressed byte stream (gzip detected by its magic bytes)."""
        if self.path == "-":
            buf = sys.stdin.buffer
            if not hasattr(buf, "peek"):
                buf = io.BufferedReader(buf)
            raw, owned = buf, False
        else:
            raw, owned = open(self.path, "rb"), True
            st = os.fstat(raw.fileno())
            if stat.S_ISREG(st.st_mode):
                self.total, self.unit = st.st_size, "B"
                self._pos = raw.tell
        try:
            magic = raw.peek(2)[:2]
            stream = gzip.GzipFile(fileobj=raw, mode="rb") if magic == b"\x1f\x8b" else raw
            yield stream
        finally:
            if owned:
                raw.close()

    @contextlib.contextmanager
    def _text(self, newline=None):
        with self._binary() as stream:
            text = io.TextIOWrapper(stream, encoding=self.encoding, newline=newline)
            try:
                yield text
            finally:
                text.detach()  # never close stdin through the wrapper

    # -- chunk generators ---------------------------------------------------------------------
    def chunks(self):
        """Batches of keys (list of str, int64 array or pyarrow array); empty items are skipped."""
        if self.format == "parquet":
            yield from self._parquet_chunks()
            return
        gen = self._text_chunks() if self.format == "text" else self._csv_chunks()
        for items, locate in gen:
            if items:
                yield self.keys.convert(items, locate)

    def _text_chunks(self):
        line_no = 0
        try:
            with self._text() as fh:
                while True:
                    raw = list(itertools.islice(fh, self.chunk_size))
                    if not raw:
                        return
                    start = line_no + 1
                    line_no += len(raw)
                    stripped = list(map(str.strip, raw))
                    items = [s for s in stripped if s]
                    self.skipped += len(raw) - len(items)

                    def locate(idx, stripped=stripped, start=start):
                        seen = -1
                        for j, s in enumerate(stripped):
                            seen += bool(s)
                            if seen == idx:
                                return f"line {start + j}"
                        return f"line {start}"  # pragma: no cover

                    yield items, locate
        except UnicodeDecodeError:
            raise RunError(
                f"{_display(self.path)} is not valid {self.encoding.replace('-sig', '')} text "
                f"(after line {line_no}); pass --encoding, or check that it is a text file"
            ) from None

    def _csv_chunks(self):
        delim = self.delimiter
        if delim is None:
            delim = "\t" if _detect_base(self.path).endswith(".tsv") else ","
        try:
            with self._text(newline="") as fh:
                reader = csv.reader(fh, delimiter=delim)
                if self.no_header:
                    idx = self.col_index if self.column is not None else 0
                else:
                    header = next(reader, None)
                    if header is None:
                        raise RunError(f"{_display(self.path)} is empty (no CSV header row)")
                    header = [h.strip() for h in header]
                    idx = self._pick_column(header)
                colname = self.column if self.column is not None else f"#{idx}"
                items, lines = [], []
                for row in reader:
                    if not row:
                        continue  # blank line
                    if idx >= len(row):
                        raise RunError(
                            f"line {reader.line_num} of {_display(self.path)} has {len(row)} "
                            f"field(s); column {colname!r} is field {idx + 1}"
                        )
                    v = row[idx].strip()
                    if not v:
                        self.skipped += 1
                        continue
                    items.append(v)
                    lines.append(reader.line_num)
                    if len(items) >= self.chunk_size:
                        yield items, (lambda i, lines=lines: f"line {lines[i]}")
                        items, lines = [], []
                if items:
                    yield items, (lambda i, lines=lines: f"line {lines[i]}")
        except UnicodeDecodeError:
            raise RunError(
                f"{_display(self.path)} is not valid {self.encoding.replace('-sig', '')} text; pass --encoding"
            ) from None
        except csv.Error as exc:
            raise RunError(f"malformed CSV in {_display(self.path)}: {exc}") from None

    def _pick_column(self, header):
        if self.column is None:
            if len(header) == 1:
                return 0
            raise UsageError(
                f"{_display(self.path)} has {len(header)} columns ({', '.join(map(repr, header[:20]))}"
                f"{', ...' if len(header) > 20 else ''}); pick one with --column NAME"
            )
        if self.column in header:
            return header.index(self.column)
        raise UsageError(
            f"no column {self.column!r} in {_display(self.path)}; its columns are "
            f"{', '.join(map(repr, header[:20]))}{', ...' if len(header) > 20 else ''}"
        )

    def _parquet_chunks(self):
        try:
            import pyarrow as pa
            import pyarrow.compute as pc
            import pyarrow.parquet as pq
        except ImportError:
            raise RunError("install pyarrow to read Parquet (pip install pyarrow)") from None
        if self.path == "-":
            source = pa.BufferReader(sys.stdin.buffer.read())
        else:
            source = self.path
        try:
            pf = pq.ParquetFile(source)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise RunError(f"cannot read {_display(self.path)} as Parquet: {_first_line(exc)}") from None
        schema = pf.schema_arrow
        names = list(schema.names)
        if self.column is None:
            if len(names) != 1:
                raise UsageError(
                    f"{_display(self.path)} has {len(names)} columns ({', '.join(map(repr, names[:20]))}"
                    f"{', ...' if len(names) > 20 else ''}); pick one with --column NAME"
                )
            column = names[0]
        elif self.column in names:
            column = self.column
        else:
            raise UsageError(
                f"no column {self.column!r} in {_display(self.path)}; its columns are "
                f"{', '.join(map(repr, names[:20]))}{', ...' if len(names) > 20 else ''}"
            )
        typ = schema.field(column).type
        if pa.types.is_dictionary(typ):
            typ = typ.value_type
        is_int = pa.types.is_integer(typ)
        is_str = pa.types.is_string(typ) or pa.types.is_large_string(typ) or (
            hasattr(pa.types, "is_string_view") and pa.types.is_string_view(typ))
        if not (is_int or is_str):
            raise RunError(
                f"column {column!r} has type {typ}; only integer and string columns can be items"
            )
        self.total, self.unit = pf.metadata.num_rows, " rows"
        mode = self.keys.mode
        if mode == "auto":
            mode = "int" if is_int else "str"
        self.keys.chosen = mode
        self.keys.how = "from the Parquet column type" if self.keys.mode == "auto" else "forced"
        rows = 0
        self._pos = lambda: rows
        try:
            for batch in pf.iter_batches(batch_size=self.chunk_size, columns=[column]):
                arr = batch.column(0)
                rows += len(arr)
                if pa.types.is_dictionary(arr.type):
                    arr = arr.dictionary_decode()
                if arr.null_count:
                    self.skipped += arr.null_count
                    arr = pc.drop_null(arr)
                if not len(arr):
                    continue
                if is_str and not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
                    arr = arr.cast(pa.large_string())
                if mode == "str" and is_int:
                    arr = arr.cast(pa.string())
                elif mode == "int" and is_str:
                    try:
                        arr = pc.cast(pc.utf8_trim_whitespace(arr), pa.int64())
                    except pa.ArrowInvalid:
                        raise RunError(
                            f"column {column!r} holds values that are not 64-bit integers (--int-keys)"
                        ) from None
                yield arr
        except (pa.ArrowException, OSError) as exc:
            if isinstance(exc, RunError):  # pragma: no cover
                raise
            raise RunError(f"cannot read {_display(self.path)} as Parquet: {_first_line(exc)}") from None


def _detect_base(path):
    name = os.path.basename(path or "").lower()
    return name[:-3] if name.endswith(".gz") else name


def _first_line(exc):
    s = str(exc).strip().splitlines()
    return s[0] if s else type(exc).__name__
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
        max_stream_length=max_len, seed=args.seed,
    )


def _release(args, est):
    from .budget import Budget

    extra = {} if args.length_epsilon is None else {"length_epsilon": args.length_epsilon}
    # The run's budget is what was asked for (ε + ε_n, δ + δ_n); the release is charged to it and
    # the accountant's total is what the 'spent:' line prints.
    cap_eps = math.nextafter(args.epsilon + (args.length_epsilon or 0.0), math.inf)
    args.budget = extra["budget"] = Budget(cap_eps, args.delta * (2 if args.length_epsilon else 1))
    if args.algorithm == "spacesaving":
        return est.release(args.epsilon, args.delta, args.k, seed=args.seed, **extra)
    if args.algorithm == "misragries":
        return est.release(args.epsilon, args.delta, k=args.k, seed=args.seed, **extra)
    return est.release(**extra)  # sketch noise was drawn at construction (seeded there)


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
        src = _Input(args)
    sketch = args.algorithm in ("countmin", "countsketch")
    # --length-epsilon: nothing exact about the length may be printed or recorded (docs/cli.md)
    private_length = args.length_epsilon is not None
    if sketch and private_length and max_len == "auto" and not args.demo:
        raise UsageError(
            "--max-stream-length auto would use the exact length, which --length-epsilon keeps private; "
            "give a public bound --max-stream-length N fixed before reading"
        )
    if sketch and max_len is None and src.format == "parquet" and src.path != "-" and not private_length:
        max_len = "auto"
    if sketch and max_len is None:
        raise UsageError(
            f"--algorithm {args.algorithm} needs --max-stream-length N, a public upper bound on "
            f"the number of items fixed before reading (or 'auto' to count a file in a first pass)"
        )
    if sketch and max_len == "auto":
        if src.path == "-":
            raise UsageError("--max-stream-length auto cannot count stdin; give a number")
        max_len = _count_items(src, args)
        _note(args, f"max stream length {max_len:,} (counted in a first pass; the length is treated as public)")
        if max_len == 0:
            raise RunError(f"{_display(src.path)} has no items")

    if args.seed is not None:
        _warn("--seed makes the noise reproducible: this release is NOT secret (use for experiments only)")

    try:
        est = _make_estimator(args, capacity, max_len)
    except (ValueError, TypeError, OverflowError) as exc:
        raise UsageError(_first_line(exc)) from None

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
        if n == 0:
            what = f" ({src.skipped:,} {src.skipped_what} skipped)" if src.skipped and not private_length else ""
            raise RunError(f"{source_desc} has no items{what}")
        if src.skipped and not private_length:
            _note(args, f"skipped {src.skipped:,} {src.skipped_what}")

    try:
        rel = _release(args, est)
    except (ValueError, TypeError, RuntimeError) as exc:
        raise RunError(f"release failed: {_first_line(exc)}") from None

    items = [(k, v) for k, v in rel.items]
    _print_header(args, rel, capacity, keys_desc, source_desc, len(items))
    spent = args.budget.spent()
    _note(args, f"spent: epsilon={_num(spent.epsilon)}, delta={_num(spent.delta)} (dpsketch.Budget ledger)")
    evaluation = _evaluate(stream, items, args.k) if args.demo else None

    if args.json:
        obj = rel.to_dict()
        obj["cli"] = {
            "algorithm": args.algorithm, "k": args.k, "capacity": capacity, "source": source_desc,
            "keys": keys_desc,
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


def _show_progress(args):
    # the bar counts items: not with a private length
    return not (args.quiet or args.no_progress or args.length_epsilon is not None) and _isatty(sys.stderr)


def _isatty(f):
    try:
        return f.isatty()
    except (AttributeError, ValueError):
        return False


def _feed(src, est, args):
    n = 0
    progress = None
    try:
        for batch in src.chunks():
            if progress is None:
                progress = _Progress(_show_progress(args), src.total, src.unit)
            try:
                est.update_many(batch)
            except (TypeError, ValueError, OverflowError) as exc:
                raise RunError(f"cannot add the items of {_display(src.path)}: {_first_line(exc)}") from None
            n += len(batch)
            progress.update(src.position() if src.total else n)
    except OSError as exc:
        raise RunError(f"cannot read {_display(src.path)}: {exc.strerror or _first_line(exc)}") from None
    except EOFError:
        raise RunError(f"{_display(src.path)} is truncated (compressed stream ended early)") from None
    finally:
        if progress is not None:
            progress.close()
    return n


def _count_items(src, args):
    """First pass for --max-stream-length auto: Parquet row count, else count the items."""
    if src.format == "parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise RunError("install pyarrow to read Parquet (pip install pyarrow)") from None
        try:
            return pq.ParquetFile(src.path).metadata.num_rows
        except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file
            raise RunError(f"cannot read {_display(src.path)} as Parquet: {_first_line(exc)}") from None
    counter = _Input(args)
    counter.keys = _KeyConverter("str")  # counting only
    n = 0
    try:
        for batch in counter.chunks():
            n += len(batch)
    except OSError as exc:
        raise RunError(f"cannot read {_display(src.path)}: {exc.strerror or _first_line(exc)}") from None
    except EOFError:
        raise RunError(f"{_display(src.path)} is truncated (compressed stream ended early)") from None
    return n


def _print_header(args, rel, capacity, keys_desc, source_desc, released):
    if args.quiet:
        return
    unit = {"spacesaving": "counters", "misragries": "counters"}.get(args.algorithm, "candidates")
    parts = [f"epsilon={_num(rel.epsilon)}", f"delta={_num(rel.delta)}"]
    if getattr(rel, "rho", None) is not None:
        parts.append(f"rho={_num(rel.rho)}")
    parts += [f"threshold={_num(rel.threshold)}", f"n={_num(rel.n)}"]
    meta = getattr(rel, "metadata", None) or {}
    if meta.get("assumes_public_length"):
        parts.append("(n treated as public)")
    print(f"{PROG}: {rel.mechanism} via {args.algorithm} ({capacity} {unit}, k={args.k}) on {source_desc}; "
          f"keys: {keys_desc}", file=sys.stderr)
    print(f"{PROG}: {' '.join(parts)} -> {released} item(s) released", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# dpsketch quantiles (logic in dpsketch/quantiles_cmd.py)
# ---------------------------------------------------------------------------------------------


def _cmd_quantiles(args):
    from . import quantiles_cmd

    return quantiles_cmd.run(args, input_class=_Input, usage_error=UsageError, run_error=RunError, note=_note,
                             warn=_warn, display=_display, first_line=_first_line)


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
