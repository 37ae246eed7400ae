"""The ``dpsketch`` command line (also ``python -m dpsketch``): the options of each command and
the wiring to :mod:`dpsketch._commands`, which carries them out.

``dpsketch top [FILE|-]``
    Stream items from a text file (one item per line, gzip-compressed or not), a CSV column or a
    Parquet column through a summary, release the differentially private heavy hitters once and
    print them (rank, item, noisy count) as a table, JSON or CSV. With ``--privacy-id COLUMN``:
    the user-level release, where one privacy id (all of its rows) is the privacy unit. With
    ``--time-column NAME --window DURATION``: one release per event-time window (JSON lines with
    ``--json``), each printed when its window closes (:mod:`dpsketch.windows`).
``dpsketch top --demo``
    The same on the bundled *retail* stream, plus recall and precision against the exact answer.
``dpsketch quantiles [FILE|-]``
    Private quantiles of a numeric column from a PrivateDyadicCountSketch. With ``--privacy-id
    COLUMN``: the user-level release (at most ``--max-rows-per-unit`` rows per privacy id).
``dpsketch budget new FILE`` / ``dpsketch budget show FILE``
    Create a privacy budget file (:meth:`dpsketch.Budget.open`) that ``top`` and ``quantiles``
    draw from with ``--budget FILE``, or print its caps, totals and charges.
``dpsketch docs [TOPIC]``
    List the documentation installed with the package, or print one page (``--path``: its location).
``dpsketch audit [MECHANISM...]``
    Empirically audit the privacy of the mechanisms.

Every command reads its input through :mod:`dpsketch.io.input` and prints through
:mod:`dpsketch.io.output`. Exit status: 0 on success, 2 for usage errors (bad options or parameters),
1 for runtime errors (unreadable input, a release the library refuses). Errors are one line on
stderr, ``dpsketch: error: ...``; they name no item, line or row number (an item label may only be
shown once it has passed the release threshold, and a position counts the items before it).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys

from ..io.options import DEFAULT_MAX_LINE_BYTES, FORMATS, ON_BAD_LINE, RunError, UsageError, release_written

__all__ = ["main"]

PROG = "dpsketch"
ALGORITHMS = ("spacesaving", "misragries", "countmin", "countsketch")
# Frequency threshold n/k: k = 1000 (0.1% of the stream) releases something on typical data
# (GCIDE words: ~100 items, retail: ~50); --show caps what is printed.
DEFAULT_K = 1000
DEFAULT_TOP = 25
DEMO_DEFAULT_K = 100  # the demo evaluates recall/precision against f(x) >= n/k: 5 clear items at 100
DEFAULT_CHUNK = 1_000_000


# ---------------------------------------------------------------------------------------------
# argument parsing
# ---------------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (no usage dump) and never exits the interpreter."""

    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _param(name, spec=None):
    """argparse type: the option's text read and checked by the library's own spec of ``name``
    (:func:`dpsketch._validation.parse_text`), so the same value gets the same limits and the same
    message as in a library call; ``spec``: a constraint of an option only the command line has."""

    def conv(text):
        from .. import _validation  # imported when an option is read: --help and --version load no numpy

        try:
            return _validation.parse_text(name, text, spec() if callable(spec) else spec)
        except ValueError as exc:  # ParameterError / ParameterTypeError
            raise argparse.ArgumentTypeError(str(exc)) from None

    return conv


def _at_least(kind, lo, hi=None, closed="both"):
    """A constraint for an option only the command line has (built when it is read)."""
    def make():
        from .._validation import Interval

        return Interval(kind, lo, hi, closed)
    return make


_delta = _param("delta")
_seed = _param("seed")


def _max_length(text):
    if text == "auto":
        return "auto"
    return _param("max_stream_length", _at_least(int, 1))(text)


# help line and description of each command (its handler is the function of that name in dpsketch._commands)
_COMMANDS = {
    "top": (
        "release the differentially private heavy hitters of a stream",
        "Stream the items of FILE (or stdin) through a summary and release, once, the items "
        "whose noisy count passes the mechanism's threshold: with --frequency-k K the items of frequency "
        "about n/K or more, with --top-k N exactly N items whenever N pass. --show N only limits the rows "
        "of the table (--json and --csv write the whole release). The table goes to stdout; a "
        "header (mechanism, epsilon, delta, threshold, n) goes to stderr. With --privacy-id, "
        "one privacy id (all of its rows) is the privacy unit.",
    ),
    "quantiles": (
        "release differentially private quantiles of a numeric column",
        "Feed the numeric values of FILE (or stdin) into a private dyadic CountSketch (noise drawn "
        "before reading) and print the requested quantiles. With --bounds LO,HI values are real "
        "numbers clamped into [LO, HI] and reported at resolution (HI-LO)/2^L; with only "
        "--universe-bits L they are integers in [0, 2^L). Mechanism and privacy go to stderr. With "
        "--privacy-id, one privacy id (all of its rows) is the privacy unit.",
    ),
    "budget": (
        "create or show a privacy budget file that several runs draw from (--budget FILE)",
        "A budget file is a ledger that 'dpsketch top' and 'dpsketch quantiles' runs with --budget FILE "
        "are charged to before they read their input, so that several runs on the same data stay within "
        "one cap. 'new' creates one, 'show' prints its caps, totals, what is left and every charge.",
    ),
    "docs": (
        "list or print the documentation installed with the package",
        "Without TOPIC: list the pages (algorithms, privacy, cli, ...) and where they are. "
        "With TOPIC: print that page (Markdown).",
    ),
    "completion": (
        "print a shell completion script (bash, zsh or tcsh)",
        "Print the completion script of the dpsketch command for SHELL, generated from its options by "
        "shtab. For bash: dpsketch completion bash > ~/.local/share/bash-completion/completions/dpsketch "
        "(or 'source <(dpsketch completion bash)' in ~/.bashrc); zsh: write it as _dpsketch into a "
        "folder of your $fpath.",
    ),
    "audit": (
        "empirically audit the privacy of every mechanism (lower bounds on epsilon)",
        "Run built-in worst-case neighbouring inputs through each mechanism and report an "
        "empirical lower bound on epsilon (Clopper-Pearson), on the Gaussian-DP mu for the Gaussian "
        "mechanisms, and the unstable-label release rate vs delta. Exit status 1 if any bound exceeds "
        "the claimed guarantee (with --miscalibrated: if some halved-noise mechanism is not caught). "
        "See docs/audit.md.",
    ),
}


def _command(sub, name):
    """The subcommand ``name``, run by ``dpsketch.cli.commands.<name>`` (imported when it runs).
    A command with a short help (``_SHORT_HELP``) prints it for ``-h/--help`` and its full option
    reference for ``--help-all``."""
    help_line, description = _COMMANDS[name]
    short = name in _SHORT_HELP
    p = sub.add_parser(name, help=help_line, description=description, add_help=not short)
    if short:
        p.add_argument("-h", "--help", action=_ShortHelp, nargs=0, help="a short help with examples")
        p.add_argument("--help-all", action="help", help="every option, grouped (also: dpsketch docs cli)")
    p.set_defaults(run=name)
    return p


# The short helps: plain words and examples first, the common options by group; the full
# reference is --help-all and docs/cli.md.
_SHORT_HELP = {
    "top": """\
usage: dpsketch top [FILE|-] [options]

The most frequent items of a file or stdin, released with differential privacy: a
table of items with their noisy counts and 95% intervals; the run's privacy unit
and guarantee go to stderr.

examples:
  dpsketch top items.txt                           one item per line, one row = the unit
  dpsketch top events.csv --column query --top-k 20
  dpsketch top access.log --log-format combined --column path --top-k 20
  dpsketch top events.csv --column query --privacy-id user_id --max-keys-per-unit 10
                                                   one person (all their rows) = the unit
  dpsketch top events.csv --column query --k 200 --dry-run --plan-rows 1000000
                                                   what a release would cost, reading nothing
  dpsketch top events.csv --column query --time-column ts --window 1h
  dpsketch top --demo                              the bundled retail stream

input:
  FILE                  text (one item a line), CSV/TSV, Parquet, Arrow; .gz ok; '-' = stdin
  --column NAME         the item column of a CSV/Parquet/Arrow input, or a log field
  --log-format F        log lines: common, combined (Apache/nginx) or json; --regex P
                        for other lines (named groups are the fields)
  --on-bad-line MODE    error (default), skip or replace lines that cannot be read

privacy:
  --epsilon E, --delta D   the guarantee (default 1 and 1e-6)
  --privacy-id COLUMN      one person is the unit: all rows with the same id
  --max-keys-per-unit M    with --privacy-id: at most M distinct items per person
  --budget FILE            charge the run to a budget file shared by several runs

what to release:
  --k K                 items of frequency about n/K or more (default 1000)
  --top-k N             exactly N items (when N pass the threshold)
  --dry-run             print the plan (guarantee, threshold, intervals) and stop

output:
  --json, --csv         the whole release, machine-readable
  --show N              rows of the table (the release itself is never cut)
  --quiet               no header on stderr

Every option (windows, algorithms, lengths, seeds): dpsketch top --help-all
The reference with examples: dpsketch docs cli
""",
    "quantiles": """\
usage: dpsketch quantiles [FILE|-] [options]

Quantiles of a numeric column, released with differential privacy.

examples:
  dpsketch quantiles lat.csv --column ms --method auto --bounds 1,5000 --epsilon 1
  dpsketch quantiles lat.csv --column ms --bounds 0,5000 --rho 1 --q 0.5,0.99
  dpsketch quantiles lat.csv --column ms --bounds 0,5000 --rho 1 \\
      --privacy-id user_id --max-rows-per-unit 5      one person = the unit

input:
  FILE                  CSV/TSV, Parquet, Arrow or text (one number a line); '-' = stdin
  --column NAME         the value column, or a log field (bytes) with --log-format
  --log-format F        log lines: common, combined, json (or --regex P)

privacy and method:
  --method M            dyadic (default: a sketch, bounded memory) or auto|exp|joint|recursive
                        (in memory, a smaller rank error)
  --bounds LO,HI        the public value range (values outside are clamped)
  --epsilon E | --rho R the guarantee (pure DP, or zCDP for the dyadic sketch)
  --privacy-id COLUMN   one person is the unit, with --max-rows-per-unit R
  --dry-run             print the plan and stop (auto|exp|joint|recursive, --privacy-id)

output:
  --q Q1,Q2,...         the quantile levels (default 0.5,0.9,0.99)
  --json, --csv         machine-readable output

Every option: dpsketch quantiles --help-all
The reference with examples: dpsketch docs cli
""",
}


class _ShortHelp(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        parser._print_message(_SHORT_HELP[parser.prog.split()[-1]], sys.stdout)
        parser.exit(0)


def _input_options(p, what):
    """The input options every reading command shares (dpsketch._input.Source takes them)."""
    p.add_argument("file", nargs="?", metavar="FILE", help="input file, or '-' for stdin (default)")
    g = p.add_argument_group("input")
    g.add_argument("--format", choices=FORMATS,
                   help="input format (default: from the extension: .csv/.tsv -> csv, .parquet/.pq -> "
                        "parquet, .arrow/.arrows/.feather -> arrow (an Arrow IPC stream or file), anything "
                        "else -> text; gzip is detected from the content)")
    g.add_argument("--column", metavar="NAME",
                   help=f"CSV/Parquet/Arrow column holding the {what} (optional when there is only one); "
                        "with --no-header, a 0-based column index")
    g.add_argument("--log-format", choices=("common", "combined", "json"),
                   help="read log lines: Apache/nginx common or combined, or JSON lines; --column, --privacy-id "
                        "and --time-column then name fields (path, host, bytes, timestamp, ...; docs/logs.md). "
                        "Lines that do not parse follow --on-bad-line")
    g.add_argument("--regex", metavar="PATTERN",
                   help="read log lines of any other shape: a regular expression with named groups "
                        "(?P<name>...), each group a field (lines without a match follow --on-bad-line)")
    g.add_argument("--strip-query", action="store_true",
                   help="with --log-format common|combined: the path field ends before its '?'")
    g.add_argument("--delimiter", metavar="CHAR", help="CSV field delimiter (default ',' or tab for .tsv)")
    g.add_argument("--no-header", action="store_true", help="the CSV file has no header row")
    g.add_argument("--encoding", default="utf-8", help="text/CSV encoding (default utf-8)")
    g.add_argument("--chunk-size", type=_param("chunk_size", _at_least(int, 1)), default=DEFAULT_CHUNK,
                   metavar="N", help=f"{what} per batch (default {DEFAULT_CHUNK:,})")
    g.add_argument("--max-line-length", type=_param("max_line_length", _at_least(int, 1)),
                   default=DEFAULT_MAX_LINE_BYTES, metavar="BYTES",
                   help="longest line (text) or row (CSV) accepted; longer input is an error, so "
                        f"input without newlines cannot exhaust memory (default {DEFAULT_MAX_LINE_BYTES:,})")
    g.add_argument("--on-bad-line", choices=ON_BAD_LINE, default=None,
                   help="a line or row that is not valid UTF-8, is longer than --max-line-length, or "
                        "(CSV) has the wrong number of fields: error (default; skip with --follow) stops "
                        "the run; skip drops it; replace keeps it with U+FFFD for bad bytes, cut to "
                        "--max-line-length (a malformed or overlong CSV row is skipped). How many is printed "
                        "only with --public-length")
    return g


def _user_level_group(parser, description):
    """A command's "user-level privacy" options: --privacy-id and --int-ids, and the group for the rest."""
    g = parser.add_argument_group("user-level privacy", description)
    g.add_argument("--privacy-id", metavar="COLUMN",
                   help="CSV/Parquet/Arrow column of privacy ids (e.g. a user id); with --no-header, a 0-based index")
    g.add_argument("--int-ids", action="store_true",
                   help="parse every privacy id as a 64-bit integer (rows whose id is not one are dropped); "
                        "default: CSV ids are text, a Parquet column's type decides")
    return g


def _output_options(p, json_help, csv_help, quiet_help):
    o = p.add_argument_group("output")
    fmt = o.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help=json_help)
    fmt.add_argument("--csv", action="store_true", help=csv_help)
    o.add_argument("--quiet", "-q", action="store_true", help=quiet_help)
    o.add_argument("--verbose", "-v", action="count", default=0,
                   help="log what the run does on stderr (the 'dpsketch' Python logger: -v info, -vv debug); "
                        "the log names options, files and routes, never a count or value of the data")
    o.add_argument("--dry-run", action="store_true",
                   help="print the plan of this release (guarantee, noise, threshold, interval half-width, the "
                        "counts released with probability 1/2 and 0.95) and stop: no input is read, no budget "
                        "is charged")
    o.add_argument("--plan-rows", type=_param("plan_rows", _at_least(int, 1)), metavar="N",
                   help="with --dry-run: the number of rows to assume (public, a planning figure) where the "
                        "threshold depends on the input's length")
    return o


def _budget_file_option(p):
    g = p.add_argument_group(
        "privacy budget file",
        "With --budget FILE the run's request (its epsilon and delta, or rho) is charged to the budget "
        "file before any input is read; a run that does not fit is refused (exit status 2) and reads "
        "nothing. Create the file with 'dpsketch budget new FILE'.")
    g.add_argument("--budget", dest="budget_file", metavar="FILE",
                   help="budget file to charge this run to (see 'dpsketch budget --help')")


def _top_parser(sub):
    t = _command(sub, "top")
    g = _input_options(t, "items")
    t.add_argument("--demo", action="store_true",
                   help="run on the bundled retail stream and print recall/precision "
                        f"(default --k {DEMO_DEFAULT_K})")
    keys = g.add_mutually_exclusive_group()
    keys.add_argument("--int-keys", dest="keys", action="store_const", const="int",
                      help="parse every item as a 64-bit integer (items that are not one are dropped)")
    keys.add_argument("--str-keys", dest="keys", action="store_const", const="str",
                      help="keep every item as text (the default for text and CSV input)")
    m = t.add_argument_group("mechanism")
    m.add_argument("--algorithm", "-a", choices=ALGORITHMS,
                   help="summary: spacesaving (DPSS, default), misragries (PMG), countmin or "
                        "countsketch (noisy sketch + candidate set)")
    m.add_argument("--frequency-k", "--k", "-k", dest="k", type=_param("k"), default=None, metavar="K",
                   help="frequency cut n/K: release the items whose frequency is about n/K or more "
                        f"(n = stream length; default {DEFAULT_K}, i.e. 0.1%% of the stream). NOT 'the top K': "
                        "at most ~K items can pass and often far fewer; for exactly N items use --top-k N. "
                        "--k and -k are older spellings")
    m.add_argument("--top-k", type=_param("top_k"), metavar="N",
                   help="exact-k: release exactly N items (the N largest noisy counts) whenever N items pass "
                        "the threshold, instead of a frequency cut; the summary gets --oversample*N counters "
                        "(default 64*N) and DPSS its lowest threshold, and the header says how many items "
                        "qualified. Same (epsilon, delta): the ranking reads only the release. With "
                        "--privacy-id: together with --selection gumbel")
    m.add_argument("--epsilon", "-e", type=_param("epsilon"), default=1.0,
                   help="privacy parameter epsilon > 0 (default 1.0)")
    m.add_argument("--delta", "-d", type=_delta, default=1e-6,
                   help="privacy parameter delta in (0, 1) (default 1e-6)")
    m.add_argument("--oversample", type=_param("oversample", _at_least(float, 1)),
                   help="capacity / K, i.e. counters or candidates per target item (default 2); with "
                        "--top-k, capacity / N (default 64)")
    m.add_argument("--cut", choices=("n/k", "none"), default=None,
                   help="spacesaving: also drop released items whose noisy count is below the noisy n/k "
                        "(n/k, the default; post-processing: higher precision) or keep all above DPSS's "
                        "threshold n/k - gamma (none, the published DPSS)")
    m.add_argument("--passes", type=int, choices=(1, 2), default=None,
                   help="spacesaving: 2 reads FILE twice: the first pass picks the candidates, the second "
                        "counts them exactly, and the release noises the exact counts (same memory, same "
                        "privacy; files only, not stdin; default 1)")
    m.add_argument("--max-stream-length", type=_max_length, metavar="N|auto",
                   help="countmin/countsketch: public upper bound on the number of items, fixed "
                        "before reading ('auto', only with --public-length: count a file in a first "
                        "pass; Parquet: row count). Ignored by spacesaving/misragries")
    m.add_argument("--length-epsilon", type=_param("length_epsilon"), metavar="EPS",
                   help="the part of --epsilon spent on the noisy stream length (default epsilon/10); "
                        "the release's total stays (epsilon, delta)")
    m.add_argument("--public-length", action="store_true",
                   help="treat the stream length n as public instead of private: the guarantee then "
                        "holds for neighbours that change one item (replace-one), and exact item "
                        "counts may be printed")
    m.add_argument("--seed", type=_seed,
                   help="seed the noise for reproducible experiments (the release is then NOT secret)")
    u = _user_level_group(
        t,
        "With --privacy-id a neighbour adds or removes all rows of one privacy id (docs/privacy.md, Privacy "
        "unit). CSV, Parquet and Arrow only. A file takes the exact route (dpsketch.unit_heavy_hitters; "
        "--algorithm, --k, --oversample and the length options do not apply); stdin, or "
        "--max-rows-per-unit, takes the bounded-memory route (dpsketch.UnitStream: the first R rows of "
        "each id into a SpaceSaving or MisraGries summary, released by DPSS or PMG for one id).")
    u.add_argument("--max-keys-per-unit", type=_param("max_keys_per_unit"), metavar="M",
                   help="m: the most distinct items one privacy id contributes (required with --privacy-id; "
                        "a unit with more keeps m of them, chosen by a salted hash)")
    u.add_argument("--max-rows-per-key", type=_param("max_rows_per_key"), metavar="C",
                   help="c: the most rows one privacy id contributes to one item (default 1)")
    u.add_argument("--max-rows-per-unit", type=_param("max_rows_per_unit"), metavar="R",
                   help="the bounded-memory route: the most rows one privacy id contributes (its first R in "
                        "the input's order; default with stdin: m*c); with --window, over the whole series")
    u.add_argument("--noise", choices=("gaussian", "laplace"),
                   help="discrete Gaussian (default; l2-sensitivity c*sqrt(m)) or discrete Laplace "
                        "(l1-sensitivity m*c) noise on the bounded counts")
    u.add_argument("--selection", choices=("gumbel", "weighted_gaussian"),
                   help="gumbel, with --top-k N: release the N passing items a one-shot Gumbel selection ranks "
                        "first (half of epsilon pays for the ranking); weighted_gaussian: select items by "
                        "weighted scores (each id's kept items weigh 1/sqrt(their number); "
                        "docs/mechanisms/person-weighted.md), with noisy counts at half of rho")
    u.add_argument("--no-counts", action="store_true",
                   help="with --selection weighted_gaussian: release the items with their noisy weighted scores "
                        "(the whole budget selects), no counts")
    o = _output_options(t, "print the release as JSON", "print rank,item,noisy_count as CSV",
                        "no header, notes or progress bar on stderr")
    o.add_argument("--show", "--top", "-n", dest="top", type=_param("show", _at_least(int, 0)), default=None, metavar="N",
                   help=f"print at most N rows of the table, its largest noisy counts (display only; default "
                        f"{DEFAULT_TOP}, or all N with --top-k N; 0 prints all). --json and --csv always write "
                        "the whole release. It selects nothing privately: for exactly N items use --top-k N. "
                        "--top is an older spelling")
    prog = o.add_mutually_exclusive_group()
    prog.add_argument("--progress", action="store_true",
                      help="show a progress bar with rate and ETA (default: only when stderr is a terminal)")
    prog.add_argument("--no-progress", action="store_true", help="no progress bar")
    w = t.add_argument_group(
        "windows",
        "With --window, one release per tumbling event-time window, each released once when it closes; "
        "the series is (epsilon, delta)-DP for one event by parallel composition (docs/privacy.md, Windows). "
        "The windows released are fixed by --start, --end, --window and --origin, never by the data. With "
        "--privacy-id, each id keeps its first --max-rows-per-unit R rows over the whole series.")
    w.add_argument("--time-column", metavar="NAME",
                   help="CSV column of event times: epoch seconds or ISO 8601 (no zone: UTC); with --no-header, "
                        "a 0-based index; with --log-format common|combined: timestamp")
    w.add_argument("--window", metavar="DURATION", help="window length, e.g. 1h, 15min, 90s")
    w.add_argument("--start", metavar="TIME",
                   help="the first window is the one containing TIME (ISO 8601 or epoch seconds; required "
                        "without --follow; default with --follow: now)")
    w.add_argument("--end", metavar="TIME",
                   help="the last window is the one containing the instant before TIME (required without "
                        "--follow; with --follow: stop after it, default: at the end of the input)")
    w.add_argument("--origin", metavar="TIME", default="0",
                   help="an instant where a window starts (default 1970-01-01T00:00:00Z)")
    w.add_argument("--follow", action="store_true",
                   help="release each window at its end plus --allowed-lateness on the wall clock, while reading "
                        "(stdin that keeps growing, or a file that is appended to); without it every window is "
                        "released at the end of the input")
    w.add_argument("--allowed-lateness", metavar="DURATION",
                   help="with --follow: how long after its end a window still takes events (default 0); "
                        "later events are dropped and never counted in the output")
    w.add_argument("--cumulative", action="store_true",
                   help="after every window, the heavy hitters since --start (not of the window alone): "
                        "dpsketch.Cumulative over a dyadic CountSketch of the 64-bit integer keys (--int-keys, "
                        "--algorithm countsketch), nodes of a binary tree over the windows, each noised once; "
                        "items by descent, post-processing (docs/privacy.md, Cumulative releases)")
    w.add_argument("--schedule", choices=("auto", "binary", "smooth", "windows"),
                   help="with --cumulative: the public schedule of the nodes (default auto: the smallest "
                        "worst-case variance over the horizon)")
    _budget_file_option(t)
    t.set_defaults(keys="auto")


def _quantiles_parser(sub):
    q = _command(sub, "quantiles")
    _input_options(q, "values")
    m = q.add_argument_group("mechanism")
    m.add_argument("--q", default="0.5,0.9,0.99", metavar="Q1,Q2,...",
                   help="quantile levels in [0, 1] (default 0.5,0.9,0.99)")
    budget = m.add_mutually_exclusive_group()
    budget.add_argument("--rho", type=_param("rho"), help="zCDP budget (discrete Gaussian noise)")
    budget.add_argument("--epsilon", "-e", type=_param("epsilon"), help="pure-DP budget (discrete Laplace)")
    m.add_argument("--bounds", metavar="LO,HI", help="public value range; values outside are clamped")
    m.add_argument("--universe-bits", type=_param("universe_bits"), metavar="L",
                   help="L: 2^L buckets (default 32 with --bounds); without --bounds, values are integers in [0, 2^L)")
    m.add_argument("--gamma", type=_param("gamma"), default=0.01,
                   help="target rank error gamma of Zhao's shape (default 0.01)")
    m.add_argument("--noise-allocation", choices=("joint", "zhao"),
                   help="Zhao's even split of rho (or epsilon) over the levels (default: about half the "
                        "rank-error variance) or one joint sigma^2 over all levels")
    m.add_argument("--method", choices=("dyadic", "auto", "exp", "joint", "recursive"), default="dyadic",
                   help="dyadic (default): the streaming PrivateDyadicCountSketch; auto, exp, joint, recursive: "
                        "read the whole input into memory and run dpsketch.quantiles (pure DP: --epsilon and "
                        "--bounds; usually a much smaller rank error)")
    m.add_argument("--scale", choices=("linear", "log"), default="linear",
                   help="with --method auto|exp|joint|recursive: log releases log-bucket representatives within "
                        "--relative-accuracy of the answer (positive heavy-tailed values; --bounds MIN_POSITIVE,MAX)")
    m.add_argument("--relative-accuracy", type=_param("relative_accuracy"), default=0.01, metavar="A",
                   help="alpha of --scale log (default 0.01)")
    m.add_argument("--integer", action="store_true",
                   help="with --method auto|exp|joint|recursive: integer values with ties (integer --bounds); "
                        "answers are integers")
    m.add_argument("--seed", type=_seed, metavar="S", help="reproducible noise and hashes: NOT secret, for experiments only")
    u = _user_level_group(
        q,
        "With --privacy-id a neighbour adds or removes all rows of one privacy id: each id keeps at most "
        "--max-rows-per-unit rows and the noise is calibrated for that many (dpsketch.unit_quantiles, "
        "docs/privacy.md, Privacy unit). CSV, Parquet and Arrow only; --noise-allocation does not apply.")
    u.add_argument("--max-rows-per-unit", type=_param("max_rows_per_unit"), metavar="R",
                   help="r: the most rows one privacy id contributes (required with --privacy-id; an id with "
                        "more keeps r of them, chosen by a salted hash)")
    u.add_argument("--delta", "-d", type=_delta,
                   help="with --rho: also report the (epsilon, delta)-DP conversion of the zCDP guarantee; with "
                        "--privacy-id and --epsilon: discrete Gaussian noise calibrated to (epsilon, delta)")
    _output_options(q, "print quantiles and privacy metadata as JSON", "print q,value as CSV", "no header on stderr")
    _budget_file_option(q)
    q.set_defaults(keys="str")


def _budget_parser(sub):
    b = _command(sub, "budget")
    actions = b.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser, required=True)
    n = actions.add_parser("new", help="create a budget file with its caps",
                           description="Create FILE, a budget ledger with the cap --epsilon E (and --delta D) "
                                       "or --rho R, and nothing spent. An existing FILE is never overwritten.")
    n.add_argument("file", metavar="FILE", help="the budget file to create")
    cap = n.add_mutually_exclusive_group(required=True)
    cap.add_argument("--epsilon", "-e", type=_param("epsilon"),
                     help="cap on the composed (epsilon, delta)-DP guarantee of every run charged to the file")
    cap.add_argument("--rho", type=_param("rho"), help="cap on the composed rho-zCDP guarantee instead")
    n.add_argument("--delta", "-d", type=_param("delta", _at_least(float, 0, 1, "left")),
                   help="delta cap (default 0: pure-DP runs only)")
    n.add_argument("--zcdp-delta", type=_param("zcdp_delta"), metavar="D",
                   help="the share of --delta reserved to convert zCDP runs (quantiles --rho) to (epsilon, delta) "
                        "(default delta/2)")
    n.add_argument("--json", action="store_true", help="print the new file's state as JSON")
    s = actions.add_parser("show", help="print a budget file's caps, totals and charges",
                           description="Print the caps of FILE, what its charges add up to, what is left and "
                                       "every charge (after checking the file's integrity).")
    s.add_argument("file", metavar="FILE", help="the budget file")
    s.add_argument("--json", action="store_true", help="print the state as JSON")


def _build_parser() -> _Parser:
    p = _Parser(
        prog=PROG,
        description="Differentially private heavy hitters on data streams.",
        epilog="Run 'dpsketch COMMAND --help' for the options of a command. " + _docs_hint(),
    )
    from .. import __version__

    p.add_argument("--version", action="version", version=f"dpsketch {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _top_parser(sub)
    _quantiles_parser(sub)
    _budget_parser(sub)

    d = _command(sub, "docs")
    d.add_argument("topic", nargs="?", metavar="TOPIC", help="page name, e.g. algorithms, privacy, cli")
    d.add_argument("--path", action="store_true", help="print the file's path (or the folder's) instead")

    c = _command(sub, "completion")
    c.add_argument("shell", choices=("bash", "zsh", "tcsh"), metavar="SHELL", help="bash, zsh or tcsh")

    a = _command(sub, "audit")
    a.add_argument("mechanisms", nargs="*", metavar="MECHANISM", help="mechanisms to audit (default: all)")
    a.add_argument("--epsilon", "-e", type=_param("epsilon"), default=1.0, help="epsilon audited (default 1)")
    a.add_argument("--delta", "-d", type=_delta, default=1e-6, help="delta of the epsilon pairs (default 1e-6)")
    a.add_argument("--label-delta", type=_param("label_delta"), default=0.2,
                   help="delta of the unstable-label pairs, large so the event is measurable (default 0.2)")
    a.add_argument("--trials", type=_param("trials", _at_least(int, 10, 100_000_000)), metavar="N",
                   help="runs per side of each pair (default 200000; --quick: 10000)")
    a.add_argument("--quick", action="store_true", help="small, fast audit for CI")
    a.add_argument("--miscalibrated", action="store_true",
                   help="audit copies of the mechanisms with their noise scale halved (same claimed guarantee); "
                        "exit 0 iff every mechanism FAILs, i.e. the audit catches each of them")
    a.add_argument("--confidence", type=_param("confidence", _at_least(float, 0.5, 1, "left")),
                   default=0.999, help="family-wise confidence of the bounds (default 0.999)")
    a.add_argument("--seed", type=_seed, help="seed the audit (reproducible)")
    a.add_argument("--json", action="store_true", help="print the results as JSON")
    a.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    return p


def _docs_hint():
    from .docs import docs_dir

    where = docs_dir()
    place = f"installed in {where}" if where is not None else "in docs/ of the source distribution"
    return (f"Documentation ({place}): 'dpsketch docs' lists the pages, 'dpsketch docs algorithms' prints "
            "the algorithm specification, 'dpsketch docs cli' this command's manual.")


# ---------------------------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------------------------


class _LogHandler(logging.StreamHandler):
    """The command line's handler of the 'dpsketch' logger: stderr as it is when a record is
    written (a test's captured stderr too)."""

    def __init__(self):
        super().__init__(sys.stderr)

    def emit(self, record):
        self.stream = sys.stderr
        super().emit(record)


def _configure_logging(verbose: int) -> None:
    """The 'dpsketch' logger for one run: silent below warnings unless -v (info) or -vv (debug), one
    line a record, 'dpsketch: info: ...'. The library logs through it and never adds handlers."""
    logger = logging.getLogger(PROG)
    for h in [h for h in logger.handlers if isinstance(h, _LogHandler)]:
        logger.removeHandler(h)
    level = logging.WARNING if not verbose else logging.INFO if verbose == 1 else logging.DEBUG
    logger.setLevel(level)
    if verbose:
        handler = _LogHandler()
        handler.setFormatter(_LowerLevel(f"{PROG}: %(levelname)s: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False


class _LowerLevel(logging.Formatter):
    def format(self, record):
        record.levelname = record.levelname.lower()
        return super().format(record)


def main(argv=None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    if "numpy" not in sys.modules:
        # The commands do no linear algebra: OpenBLAS's worker threads would only spin at start-up,
        # on the cores the reading, splitting and updating threads need. Read when numpy loads.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    parser = _build_parser()
    release_written(reset=True)
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        _configure_logging(getattr(args, "verbose", 0))
        if getattr(args, "on_bad_line", "") is None:
            # a series released while reading (--follow) decides bad rows one by one, never stops on one
            args.on_bad_line = "skip" if getattr(args, "follow", False) else "error"
        from . import commands as _commands

        return getattr(_commands, args.run)(args)
    except SystemExit as exc:  # --help / --version
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except RunError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if release_written():
            # the release is on stdout, whole, and its budget spent: the run did what it was for
            print(f"{PROG}: interrupted after the release was written (it is complete)", file=sys.stderr)
            return 0
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # stdout closed early (e.g. piped into head): exit quietly
        with contextlib.suppress(Exception):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 1
