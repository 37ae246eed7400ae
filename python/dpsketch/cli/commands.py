"""The commands behind :mod:`dpsketch.cli` (which parses the options and wires them here): ``top``,
``quantiles``, ``docs`` and ``audit``.

Every command checks each parameter before any input is read, reads through
:mod:`dpsketch._input`, releases with the library's mechanisms (nothing here draws noise or sets a
threshold) and prints through one :class:`dpsketch._output.Output`. Errors are
:class:`~dpsketch._input.UsageError` (exit status 2) or :class:`~dpsketch._input.RunError` (exit
status 1), one line each, naming no item, line, row or count.
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any

import numpy as np

from ..io import input as _input
from ..io.input import RunError, UsageError, display, first_line
from ..io.output import (Column, Output, Progress, caps, display_width, document, json_default, label, num, pad,
                         totals, value_text)
from ..routes import PARAMETERS, heavy_hitters_route, quantiles_route, refusals
from . import DEFAULT_K, DEFAULT_TOP, DEMO_DEFAULT_K

__all__ = ["top", "quantiles", "budget", "docs", "completion", "audit"]

def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _given(args, name) -> bool:
    value = getattr(args, name, None)
    return value is not None and value is not False


def _refuse_for(args, route: str, *, person: bool = False) -> None:
    """The first option given that does not apply to ``route`` (the library's rules,
    dpsketch.routes.refusals): a usage error naming it and why."""
    given = [name for name in PARAMETERS if _given(args, name)]
    found = refusals(route, given, person=person, spell=_option)
    if found:
        raise UsageError(f"{_option(found[0].name)} {found[0].why}")


def _isatty(f):
    try:
        return f.isatty()
    except (AttributeError, ValueError):
        return False


def _source(args, *, keys=None, privacy_id=None, ids="auto"):
    """The input of a command as a dpsketch._input.Source (checks options and the path, reads nothing)."""
    return _input.Source(
        args.file, format=args.format, column=args.column, privacy_id=privacy_id, no_header=args.no_header,
        delimiter=args.delimiter, encoding=args.encoding, keys=keys or args.keys, ids=ids,
        chunk_size=args.chunk_size, max_line_bytes=args.max_line_length, on_bad_line=args.on_bad_line,
        # a position is a count of the rows before it: named only when the length is public
        name_positions=getattr(args, "public_length", False),
        log_format=args.log_format, regex=args.regex, strip_query=args.strip_query,
    )


def _log_input(args) -> bool:
    """Are the input's lines log lines (--log-format or --regex)?"""
    return getattr(args, "log_format", None) is not None or getattr(args, "regex", None) is not None


def _checked(check):
    """``check()``, which checks a route's parameters before any input is read; its TypeError or
    ValueError becomes a usage error."""
    try:
        return check()
    except (TypeError, ValueError) as exc:
        raise UsageError(first_line(exc)) from None


def _open_input(args, out, **source):
    """The command's input (FILE, or stdin when piped) as a Source, after the --seed warning."""
    if args.file is None and _isatty(sys.stdin):
        raise UsageError("no input: give FILE, or '-' to read stdin")
    src = _source(args, **source)
    _warn_seed(args, out)
    return src


def _unit_ids(args) -> str:
    return "int" if args.int_ids else "auto"


def _rows_per_unit(args) -> int | None:
    """R, the rows one privacy id may contribute to a row-bounded route: --max-rows-per-unit, or
    M*C from --max-keys-per-unit and --max-rows-per-key; None when neither is given."""
    if args.max_rows_per_unit is not None:
        return args.max_rows_per_unit
    if args.max_keys_per_unit is not None:
        return args.max_keys_per_unit * (args.max_rows_per_key or 1)
    return None


def _show_progress(args, src=None):
    """The progress bar: --progress forces it, --no-progress and --quiet hide it; by default it shows
    when stderr is a terminal. With a private length (the default) it then shows only for a
    regular file read by bytes (text, CSV, logs), where it moves through the file's size, which
    ``ls`` shows too, and is erased when the run ends; on stdin or Parquet/Arrow it would count
    items or rows, a count of the data, so it waits for --progress (docs/cli.md, Output)."""
    if args.quiet or args.no_progress:
        return False
    if args.progress:
        return True
    if not _isatty(sys.stderr):
        return False
    if getattr(args, "public_length", False):
        return True
    return (src is not None and src.path != "-" and src.format not in ("parquet", "arrow")
            and os.path.isfile(src.path))


def _warn_seed(args, out):
    if args.seed is not None:
        out.warn("--seed makes the noise reproducible: this release is NOT secret (use for experiments only)")


class _BudgetFile:
    """``--budget FILE``: the shared ledger (dpsketch.FileBudget) a run is charged to before it reads
    its input. The charge is the run's request -- (--epsilon, --delta), --rho, or --epsilon alone --
    which caps the run's own dpsketch.Budget, so whatever the release spends is within it; the
    refusal depends on the parameters and the ledger only. Without --budget every step is a no-op."""

    def __init__(self, args, mechanism: str, *, epsilon=None, delta=None, rho=None):
        self.path = getattr(args, "budget_file", None)
        self.mechanism = mechanism
        self.request = {name: v for name, v in (("epsilon", epsilon), ("delta", delta), ("rho", rho))
                        if v is not None}
        self.ledger = None if self.path is None else _open_budget_file(self.path)

    def check(self) -> None:
        """Refuse a run that does not fit, before the input is opened (records nothing)."""
        self._charge(lambda: self.ledger.check(self.mechanism, **self.request))

    def charge(self) -> None:
        """Record the run's request in the file: the last step before the input is read."""
        self._charge(lambda: self.ledger.spend(self.mechanism, **self.request))

    def _charge(self, act) -> None:
        from ..errors import BudgetExceededError, BudgetFileError

        if self.ledger is None:
            return
        try:
            act()
        except BudgetExceededError:
            raise UsageError(self._refusal()) from None
        except BudgetFileError as exc:
            raise RunError(first_line(exc)) from None
        except ValueError as exc:
            if self.ledger.rho is None:
                raise UsageError(f"--budget {display(self.path)}: {first_line(exc)}") from None
            raise UsageError(f"--budget {display(self.path)} caps rho-zCDP, and this run spends delta > 0, which "
                             "has no zCDP equivalent; charge it to a budget file with an (epsilon, delta) cap "
                             "('dpsketch budget new FILE --epsilon E --delta D')") from None
        except OSError as exc:
            raise RunError(f"cannot update the budget file {display(self.path)}: {first_line(exc)}") from None

    def _refusal(self) -> str:
        ledger = self.ledger
        left = ledger.remaining()
        if ledger.rho is not None:
            has = f"rho={num(left.rho)}"
        else:
            has = f"epsilon={num(left.epsilon)}, delta={num(left.delta)}"
            if "rho" in self.request:
                has += f" (rho={num(left.rho)} for a zCDP run)"
        need = ", ".join(f"{name}={num(v)}" for name, v in self.request.items())
        return (f"--budget {display(self.path)} has {has} left of its cap {caps(ledger)}, and this run needs "
                f"{need}: nothing was charged and no input was read (lower the run's privacy parameters, or "
                "use another budget file for other data)")


def _open_budget_file(path, what="--budget"):
    from ..accounting.ledger import FileBudget
    from ..errors import BudgetFileError

    if not os.path.isfile(path):
        raise UsageError(f"{what} {display(path)}: no budget file there; create one with "
                         "'dpsketch budget new FILE --epsilon E --delta D' (or --rho R)")
    try:
        return FileBudget.open(path)
    except BudgetFileError as exc:
        raise RunError(first_line(exc)) from None
    except OSError as exc:
        raise RunError(f"cannot read the budget file {display(path)}: {first_line(exc)}") from None


# ---------------------------------------------------------------------------------------------
# dpsketch top
# ---------------------------------------------------------------------------------------------


def _items_release(out, released, top, *, json_obj, threshold, intervals=None, level=None):
    """Print the released (item, noisy value) pairs. ``top`` (--show) cuts the table only: a release
    is single-shot and its budget spent, so --json and --csv write every released item. With the
    release's ``intervals``, the table and the CSV show them (the table as the range that holds
    every item's true count at once with probability ``level``)."""
    items = released[:top] if top and out.fmt == "table" else released
    if json_obj is not None:
        json_obj["items"] = [[k, v] for k, v in items]
        if json_obj.get("intervals") is not None:  # aligned with the items, a prefix of the release's
            json_obj["intervals"] = json_obj["intervals"][:len(items)]
    columns = [Column("rank", "rank", ">", str, int), Column("item", "item", "<", label, lambda k: k),
               Column("noisy count", "noisy_count", ">", num, num)]
    rows = [(i, k, v) for i, (k, v) in enumerate(items, 1)]
    if intervals is not None and len(intervals) >= len(items):
        title = f"true count ({level:.0%}, all at once)" if level else "true count within"
        columns.append(Column(title, "low", ">", _range_text, lambda r: _bound_text(r[0])))
        columns.append(Column("", "high", ">", lambda r: "", lambda r: _bound_text(r[1])))
        rows = [row + (intervals[i], intervals[i]) for i, row in enumerate(rows)]
    out.release(columns, rows, json_obj=json_obj, empty=f"(no item passed the threshold {num(threshold)})")
    return items


def _bound_text(x) -> str:
    return "" if x is None or (isinstance(x, float) and math.isinf(x)) else num(x)


def _range_text(r) -> str:
    lo, hi = (_bound_text(x) for x in r)
    return f"{lo or '-inf'} .. {hi or 'inf'}"


def _refuse_options(args, names, why: str) -> None:
    """An option of ``names`` given where it does not apply: a usage error naming it and ``why``."""
    for name in names:
        if _given(args, name):
            raise UsageError(f"{_option(name)} {why}")


def _counter_algorithm(args, release: str) -> str:
    """--algorithm of a release only the counter summaries have (spacesaving, the default, or misragries)."""
    algorithm = args.algorithm or "spacesaving"
    if algorithm not in ("spacesaving", "misragries"):
        raise UsageError(f"--algorithm {algorithm} has no {release}; use spacesaving (DPSS) or misragries (PMG)")
    return algorithm


def _check_dry_run(args) -> None:
    if args.plan_rows is not None and not args.dry_run:
        raise UsageError("--plan-rows goes with --dry-run (it is the number of rows a plan assumes)")


def top(args) -> int:
    _check_dry_run(args)
    out = Output.for_args(args)
    if args.top is None:  # --show: what is printed; with --top-k N all N released items
        args.top = 0 if args.top_k is not None else DEFAULT_TOP
    route = heavy_hitters_route(person=args.privacy_id is not None, selection=args.selection,
                                series=args.window is not None or args.time_column is not None,
                                cumulative=bool(args.cumulative), bounded_rows=args.max_rows_per_unit is not None,
                                one_pass_input=args.file in (None, "-"))
    if route.startswith("windowed"):
        if args.dry_run:
            raise UsageError("--dry-run states the plan of one release; a windowed run makes that release once per "
                             "window: drop --time-column and --window to see it")
        return _top_windowed(args, out, route)
    _refuse_for(args, route)
    if route == "person.bounded_memory":
        return _top_units_bounded(args, out)
    if route == "person.weighted":
        return _top_units_weighted(args, out)
    if route == "person.exact":
        return _top_units(args, out)
    if args.algorithm is None:
        args.algorithm = "spacesaving"
    if args.top_k is not None:
        _refuse_options(args, ("k",), "is a frequency cut n/K; --top-k N asks for exactly N items instead (give one)")
        _refuse_options(args, ("cut",), "does not apply with --top-k (the threshold is DPSS's lowest, at k = capacity)")
        if args.algorithm not in ("spacesaving", "misragries"):
            raise UsageError(f"--top-k applies to --algorithm spacesaving (DPSS) and misragries (PMG), not "
                             f"{args.algorithm}")
    if args.oversample is None:
        from ..mechanisms.top_k import COUNTERS_PER_ITEM

        args.oversample = float(COUNTERS_PER_ITEM) if args.top_k is not None else 2.0
    if args.demo:
        if args.file is not None:
            raise UsageError("--demo reads the bundled retail stream; do not also give FILE")
        for opt in ("format", "column", "delimiter", "log_format", "regex"):
            if getattr(args, opt) is not None:
                raise UsageError(f"{_option(opt)} does not apply to --demo")
    if args.k is None and args.top_k is None:
        args.k = DEMO_DEFAULT_K if args.demo else DEFAULT_K
    if args.algorithm != "spacesaving":
        _refuse_options(args, ("cut", "passes"), "applies to --algorithm spacesaving (DPSS) only")
    if args.passes == 2 and not args.demo and args.file in (None, "-"):
        raise UsageError("--passes 2 reads the input twice; stdin can be read once: give a FILE")
    target = args.k if args.top_k is None else args.top_k  # capacity = oversample x (K or N)
    from ..mechanisms.top_k import oversampled_capacity

    capacity = oversampled_capacity(target, args.oversample)
    _check_row_parameters(args)
    if args.dry_run:
        if args.algorithm not in ("spacesaving", "misragries"):
            raise UsageError(f"--dry-run states the plan of DPSS and PMG (--algorithm spacesaving, misragries), "
                             f"not of {args.algorithm}")
        from ..units import Row

        method = "pmg" if args.algorithm == "misragries" else ("dpss_two_pass" if args.passes == 2 else "dpss")
        return _print_plan(args, "heavy_hitters", epsilon=args.epsilon, delta=args.delta, k=args.k,
                           top_k=args.top_k, method=method, capacity=capacity,
                           cut=None if args.cut == "none" else "n/k", length_epsilon=args.length_epsilon,
                           unit=Row(public_length=bool(args.public_length)), n=args.plan_rows)
    budget_file = _BudgetFile(args, f"dpsketch top ({args.algorithm})", epsilon=args.epsilon, delta=args.delta)
    budget_file.check()

    src: Any = None  # the file's Source, or None with --demo
    stream: Any = None  # the retail stream with --demo
    max_len = args.max_stream_length
    if args.demo:
        import dpsketch.datasets

        stream = dpsketch.datasets.retail()
        if max_len in (None, "auto"):
            max_len = len(stream)
    else:
        if args.file is None and _isatty(sys.stdin):
            raise UsageError("no input: give FILE, '-' to read stdin, or --demo")
        src = _source(args)
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
        _checked_estimator(args, capacity, max_len)  # parameter errors before any reading
    budget_file.charge()
    if sketch and max_len == "auto":
        max_len = _count_items(src, args)
        out.note(f"max stream length {max_len:,} (counted in a first pass; the length is treated as public)")
        if max_len == 0:
            raise RunError(f"{display(src.path)} has no items")

    _warn_seed(args, out)
    est = _checked_estimator(args, capacity, max_len)

    n = 0
    if args.demo:
        progress = Progress(_show_progress(args), len(stream), " items")
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
        source_desc = display(src.path)
        if n == 0 and not private_length:  # with a private length an empty input releases as usual
            what = f" ({src.skipped:,} {src.skipped_what} skipped)" if src.skipped else ""
            raise RunError(f"{source_desc} has no items{what}")
        if src.skipped and not private_length:
            out.note(f"skipped {src.skipped:,} {src.skipped_what}")
        if src.bad_lines and not private_length:
            done = "skipped" if args.on_bad_line == "skip" else "replaced"
            out.note(f"{done} {src.bad_lines:,} bad line{'s' if src.bad_lines != 1 else ''} (--on-bad-line {args.on_bad_line})")

    counts = None
    if args.passes == 2:  # the second pass: exact counts of the summary's tracked items
        counts = _second_pass(est, stream if args.demo else _source(args), args)
    try:
        rel = _row_release(args, est, counts)
    except (ValueError, TypeError, RuntimeError) as exc:
        raise RunError(f"release failed: {first_line(exc)}") from None

    released = [(k, v) for k, v in rel.items]
    _row_header(args, out, rel, capacity, keys_desc, source_desc, len(released))
    out.spent(args.budget, budget_file.ledger)
    if args.top_k is not None and len(released) < args.top_k:
        out.note(f"hint: {len(released)} item(s) qualified, fewer than --top-k {args.top_k}; a larger --oversample "
                 f"(now {num(args.oversample)}: {capacity} counters) or --epsilon lowers the threshold")
    elif not released:
        out.note(f"hint: nothing reached the threshold; a larger --frequency-k (now {args.k}) lowers it to "
                 f"frequency >= n/K, a larger --epsilon lowers the noise margin")
    _note_cut(out, args.top, len(released))
    evaluation = None
    if args.demo:
        evaluation = _evaluate(stream, released, args.k) if args.top_k is None else _evaluate_top_k(stream, released,
                                                                                                   args.top_k)

    obj = None
    if out.fmt == "json":
        obj = rel.to_dict()
        obj["cli"] = {
            "algorithm": args.algorithm, "k": args.k, "top_k": args.top_k, "capacity": capacity, "source": source_desc,
            "keys": keys_desc, "top": args.top, "released": len(released),
        }
        if private_length:
            obj["cli"]["exact_counts_withheld"] = True  # items read / skipped would reveal n
        else:
            obj["cli"].update(items_read=n, skipped=0 if src is None else src.skipped,
                              bad_lines=0 if src is None else src.bad_lines)
        if evaluation is not None:
            obj["evaluation"] = evaluation
    _items_release(out, released, args.top, json_obj=obj, threshold=rel.threshold,
                   intervals=getattr(rel, "intervals", None), level=getattr(rel, "interval_level", None))
    if evaluation is not None and out.fmt != "json" and args.top_k is not None:
        ev = evaluation
        print(f"overlap   {ev['overlap']}/{ev['top_k']} released items are among the true top {ev['top_k']}\n"
              f"(exact counts, for evaluation only: not differentially private)",
              file=sys.stderr if out.fmt == "csv" else sys.stdout)
    elif evaluation is not None and out.fmt != "json":
        ev = evaluation
        print(
            f"recall    {ev['recall']:.3f}  ({ev['correct']}/{ev['true_heavy_hitters']} items with "
            f"f(x) >= n/k = {ev['threshold_n_over_k']:.2f} released)\n"
            f"precision {ev['precision']:.3f}  ({ev['correct']}/{ev['released']} released items have "
            f"f(x) >= n/k)\n"
            f"(exact counts, for evaluation only: not differentially private)",
            file=sys.stderr if out.fmt == "csv" else sys.stdout,
        )
    return 0


def _note_cut(out, top_n, released):
    if top_n and top_n < released and out.fmt == "table":
        out.note(f"showing the top {top_n} of {released} released items (--show 0 shows all)")


def _check_row_parameters(args):
    """Everything about the row-level release that can be checked without the data."""
    from ..release import calibrate

    if args.public_length and args.length_epsilon is not None:
        raise UsageError("--length-epsilon prices a private length; it cannot be combined with --public-length")
    try:
        calibrate(args.epsilon, args.delta, "bounds", public_length=args.public_length,
                  length_epsilon=args.length_epsilon)
    except (TypeError, ValueError) as exc:
        raise UsageError(first_line(exc)) from None


def _length_options(args):
    return {"public_length": args.public_length, "length_epsilon": args.length_epsilon}


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


def _checked_estimator(args, capacity, max_len):
    try:
        return _make_estimator(args, capacity, max_len)
    except (ValueError, TypeError, OverflowError) as exc:
        raise UsageError(first_line(exc)) from None


def _second_pass(summary, data, args):
    """Exact counts of ``summary``'s tracked items over ``data`` (the bundled stream, or a fresh
    Source on the same file), in the order of ``summary.items()`` (dpsketch.dpss.CandidateCounts)."""
    from ..mechanisms.dpss import CandidateCounts

    counter = CandidateCounts([key for key, _ in summary.items()], summary.key_type or "int")
    if isinstance(data, np.ndarray):
        counter.update_many(data)
    else:
        for batch in data.chunks():
            try:
                counter.update_many(batch)
            except (TypeError, ValueError) as exc:
                raise RunError(f"the second pass over {display(data.path)} failed: {first_line(exc)}") from None
    if counter.n != summary.n:
        raise RunError("the second pass read a different number of items than the first: the input changed "
                       "between the passes")
    return counter.counts()


def _evaluate_top_k(stream, items, n_top):
    """How many released keys are among the true top ``n_top`` (exact, non-private; ties at the
    N-th count all count as top)."""
    keys, counts = np.unique(stream, return_counts=True)
    nth = np.sort(counts)[::-1][min(n_top, len(counts)) - 1] if len(counts) else 0
    truth = set(keys[counts >= nth].tolist())
    return {"top_k": n_top, "released": len(items), "overlap": len({k for k, _ in items} & truth),
            "note": "evaluated against the exact counts: not differentially private"}


def _row_release(args, est, counts=None):
    from ..accounting.budget import Budget

    # The run's budget is what was asked for (and what --budget FILE was charged); the release (its
    # length share included) is charged to it and the accountant's total is what 'spent:' prints.
    args.budget = Budget(args.epsilon, args.delta)
    cut = None if args.cut == "none" else "n/k"
    # exactly N items (docs/privacy.md §Exact-k), or the frequency cut n/K
    target = {"top_k": args.top_k} if args.top_k is not None else {"k": args.k}
    if counts is not None:
        from ..mechanisms.dpss import release_exact_counts

        if args.top_k is None:
            target["cut"] = cut
        return release_exact_counts(est, counts, epsilon=args.epsilon, delta=args.delta, **target,
                                    seed=args.seed, budget=args.budget, **_length_options(args))
    if args.algorithm == "spacesaving":
        if args.top_k is None:
            target["cut"] = cut
        return est.release(epsilon=args.epsilon, delta=args.delta, **target, seed=args.seed,
                           budget=args.budget, **_length_options(args))
    if args.algorithm == "misragries":
        return est.release(epsilon=args.epsilon, delta=args.delta, **target, seed=args.seed, budget=args.budget,
                           **_length_options(args))
    return est.release(budget=args.budget)  # sketch noise was drawn at construction (seeded there)


def _feed(src, est, args):
    n = 0
    progress = Progress(_show_progress(args, src), src.total, src.unit)
    try:
        for batch in src.chunks(table_hashes=getattr(est, "_takes_table_hashes", False)):
            try:
                est.update_many(batch)
            except (TypeError, ValueError, OverflowError) as exc:
                raise RunError(f"cannot add the items of {display(src.path)}: {first_line(exc)}") from None
            n += len(batch)
            _advance(progress, src, n)
    finally:
        progress.close()
    return n


def _each_pair(args, src, take) -> None:
    """Hand every (keys, privacy ids) batch of ``src`` to ``take``, with the progress bar."""
    rows = 0
    progress = Progress(_show_progress(args, src), src.total, src.unit)
    try:
        for keys, ids in src.pairs():
            take(keys, ids)
            rows += len(keys)
            _advance(progress, src, rows)
    finally:
        progress.close()


def _advance(progress, src, items):
    """Move the bar to the bytes or rows read (``items`` read when neither is known)."""
    if progress.bar is None:  # no bar: do not ask the file for its position (tell() waits for the reader)
        return
    if progress.bar.total is None and src.total:
        progress.bar.total = src.total  # Parquet: the row count is known once opened
    progress.update(src.position() if src.total else items)


def _count_items(src, args):
    """First pass for --max-stream-length auto: Parquet row count, else count the items."""
    if src.format == "parquet":
        return src.parquet_rows()
    return sum(len(batch) for batch in _source(args, keys="str").chunks())


def _frequency_cut(n, k):
    from ..mechanisms.dpss import frequency_cut

    return frequency_cut(n, k)


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
        "threshold_n_over_k": _frequency_cut(n, k),
        "note": "evaluated against the exact counts: not differentially private",
    }


def _row_header(args, out, rel, capacity, keys_desc, source_desc, released):
    unit = {"spacesaving": "counters", "misragries": "counters"}.get(args.algorithm, "candidates")
    parts = [f"epsilon={num(rel.epsilon)}", f"delta={num(rel.delta)}"]
    if getattr(rel, "rho", None) is not None:
        parts.append(f"rho={num(rel.rho)}")
    parts.append(f"threshold={num(rel.threshold)}")
    meta = getattr(rel, "metadata", None) or {}
    if meta.get("cut") == "n/k" and "tau" in meta:
        parts.append(f"(the n/k cut; DPSS tau={num(meta['tau'])})")
    if meta.get("assumes_public_length"):
        parts += [f"n={num(rel.n)}", "(n treated as public; neighbours: replace one item)"]
    elif rel.n is not None:
        parts.append(f"noisy n={num(rel.n)}")
    if args.top_k is not None:
        target = f"exact-k: the {args.top_k} largest noisy counts of the items that pass the threshold"
        done = f"{meta.get('qualified', released)} item(s) qualified -> {released} released"
    else:
        target = f"target frequency >= n/k, k={args.k}"
        done = f"{released} item(s) released"
    out.note(f"{rel.mechanism} via {args.algorithm} ({capacity} {unit}; {target}) on {source_desc}; keys: {keys_desc}")
    out.note("privacy unit: one row (one item of the input); if a person can have several rows, name their "
             "column with --privacy-id to protect the person")
    out.note(f"{' '.join(parts)} -> {done}")


# -- windowed releases (--time-column, --window) ------------------------------------------------


def _top_windowed(args, out, route: str) -> int:
    """``top --time-column T --window P``: dpsketch.windows.Windowed over the item and time
    columns. One DPSS or PMG release per event-time window, printed when the window closes
    (every window at the end of the input, or with --follow at its end plus --allowed-lateness on
    the wall clock); the windows released follow from --start, --end, --window and --origin
    only, and an empty window is released like any other (docs/privacy.md §Windows). The run
    is charged (epsilon, delta) once: each event lies in one window (parallel composition)."""
    import csv

    from ..accounting.budget import Budget
    from ..sketches.counters import MisraGries, SpaceSaving
    from ..time.windows import Windowed, iso

    _refuse_for(args, route, person=args.privacy_id is not None)
    if args.follow and args.on_bad_line == "error":
        # Windows are printed while the input is read: a stop at a bad row would withhold the rest
        # of the public range and its time would tell when the row arrived. Rows are decided one
        # by one instead (skip, the default with --follow, or replace).
        raise UsageError("--on-bad-line error is not available with --follow: a windowed series released while "
                         "reading must not stop on a row; use --on-bad-line skip (the default with --follow) or "
                         "replace")
    if route == "windowed.cumulative":
        return _top_cumulative(args, out)
    rows_per_unit = None
    if args.privacy_id is not None:
        # a unit keeps its first R rows over the whole series, so it is in at most R windows
        rows_per_unit = _rows_per_unit(args)
        if rows_per_unit is None:
            raise UsageError("--privacy-id with --window needs --max-rows-per-unit R (or --max-keys-per-unit M and "
                             "--max-rows-per-key C for R = M*C): how many rows one privacy id may contribute to "
                             "the whole series, so it is in at most R windows")
    if args.time_column is None or args.window is None:
        raise UsageError("--time-column NAME and --window DURATION go together: the event time of each row "
                         "and the window length")
    algorithm = _counter_algorithm(args, "windowed release")
    if not args.follow and (args.start is None or args.end is None):
        raise UsageError("without --follow, give --start TIME and --end TIME: the first and last window are "
                         "released whatever the data, so they must be public (the smallest and largest event "
                         "time are data)")
    if args.allowed_lateness is not None and not args.follow:
        raise UsageError("--allowed-lateness applies with --follow; without it every window closes at the end "
                         "of the input and no event is late")
    k = args.k if args.k is not None else DEFAULT_K
    from ..mechanisms.top_k import oversampled_capacity

    capacity = oversampled_capacity(k, args.oversample or 2.0)
    summary_class = SpaceSaving if algorithm == "spacesaving" else MisraGries
    budget_file = _BudgetFile(args, f"dpsketch top --window ({algorithm}, parallel composition)",
                              epsilon=args.epsilon, delta=args.delta)
    # The run's accountant, capped at what was asked for; the series is charged to it once.
    budget = Budget(args.epsilon, args.delta)
    windowed = _checked(lambda: Windowed(
        period=args.window, make=lambda: summary_class(capacity), epsilon=args.epsilon, delta=args.delta, k=k,
        start=args.start, end=args.end, origin=args.origin, clock="wall" if args.follow else "input",
        allowed_lateness=args.allowed_lateness or 0, length_epsilon=args.length_epsilon, seed=args.seed,
        budget=budget, max_rows_per_unit=rows_per_unit))
    if args.format is None and not _log_input(args) and _input.detect_format(args.file) != "parquet":
        args.format = "csv"  # an event-time column: CSV whatever the file is called, stdin included
    budget_file.check()
    src = _open_input(args, out, privacy_id=args.privacy_id, ids=_unit_ids(args))
    budget_file.charge()

    mechanism = windowed.mechanism
    close = (f"each at its end + {args.allowed_lateness or '0'} on the wall clock" if args.follow
             else "all at the end of the input")
    last = "the end of the input" if windowed.last is None else iso(windowed.bounds(windowed.last)[1])
    out.note(f"{mechanism} via {algorithm} ({capacity} counters; target frequency >= n/k per window, k={k}) on "
             f"{display(src.path)}; keys: {src.keys.describe()}")
    out.note(f"windows of {args.window} from {iso(windowed.bounds(windowed.first)[0])} to {last}, released "
             f"{close}; epsilon={num(args.epsilon)} delta={num(args.delta)} for the whole series (parallel "
             "composition: each event lies in one window; each window has its own noisy length)")
    if rows_per_unit is not None:
        out.note(f"privacy unit: privacy_id = column {args.privacy_id!r} (ids: {src.ids.describe()}); neighbours: "
                 f"all rows of one id; bound per unit: r={rows_per_unit} rows over the whole series (its first r in "
                 f"input order, so at most r windows); each window runs at the per-row epsilon/r, and group "
                 "privacy gives the epsilon, delta above for one privacy id")

    source_desc = display(src.path)
    writer = csv.writer(sys.stdout, lineterminator="\n") if out.fmt == "csv" else None
    if writer is not None:
        writer.writerow(["window_start", "window_end", "rank", "item", "noisy_count"])
    _print_series(windowed.releases(src.timed(args.time_column, follow=args.follow)),
                  lambda rel: _print_window(out, writer, rel, args.top, source_desc, k, capacity, algorithm),
                  source_desc)
    out.spent(budget, budget_file.ledger)
    return 0


def _print_series(releases, print_one, source_desc) -> None:
    """Print each release of a windowed or cumulative series as it comes; a failure while reading,
    adding or releasing is a RunError."""
    try:
        for rel in releases:
            print_one(rel)
    except (TypeError, RuntimeError) as exc:
        raise RunError(f"release failed: {first_line(exc)}") from None
    except ValueError as exc:
        raise RunError(f"cannot add the items of {source_desc}: {first_line(exc)}") from None


_SIGN = 1 << 63  # int64 keys to the dyadic universe [0, 2^64): x + 2^63 keeps the order


def _top_cumulative(args, out) -> int:
    """``top --time-column T --window P --cumulative``: dpsketch.Cumulative over the windows from
    --start to --end (the horizon, public), one dyadic CountSketch of the 64-bit integer keys per
    window; after every window the heavy hitters since --start by descent over the published
    nodes, with the threshold max(noisy n since start / k, 4 noise standard deviations of a prefix
    node) -- post-processing of published nodes, no candidate set, no label outside the noisy
    hierarchy. Charged once: rho with rho + 2*sqrt(rho*ln(1/delta)) = epsilon (docs/privacy.md
    §Cumulative)."""
    import csv

    from ..accounting.budget import Budget
    from ..mechanisms.series import series_rho
    from ..time.cumulative import MAX_HORIZON, Cumulative
    from ..time.windows import iso, parse_duration, parse_instant

    algorithm = args.algorithm or "countsketch"
    if algorithm != "countsketch":
        raise UsageError(f"--cumulative needs --algorithm countsketch (a dyadic CountSketch: linear, so windows add "
                         f"up, and searchable by descent); {algorithm} is not available with it")
    if args.keys != "int":
        raise UsageError("--cumulative needs --int-keys: its heavy hitters are found by descent over the 64-bit "
                         "integer key space (text keys would need a lookup pass over the data, which is no "
                         "post-processing)")
    if args.time_column is None or args.window is None or args.start is None or args.end is None:
        raise UsageError("--cumulative needs --time-column NAME, --window DURATION, --start TIME and --end TIME: "
                         "the windows, and so the horizon of the tree, must be public")
    try:
        period, origin = parse_duration(args.window), parse_instant(args.origin)
        start, end = parse_instant(args.start), parse_instant(args.end)
    except (TypeError, ValueError) as exc:
        raise UsageError(first_line(exc)) from None
    if period <= 0 or end <= start:
        raise UsageError("--window must be > 0 and --end after --start")
    first, last = (start - origin) // period, (end - 1 - origin) // period
    horizon = last - first + 1
    if horizon > MAX_HORIZON:
        raise UsageError(f"--cumulative covers at most {MAX_HORIZON} windows; got {horizon} (use a longer --window)")
    k = args.k if args.k is not None else DEFAULT_K
    from ..mechanisms.top_k import oversampled_capacity

    capacity = oversampled_capacity(k, args.oversample or 2.0)
    width, depth = max(16, 2 * capacity), 3
    rho = series_rho(args.epsilon, args.delta)
    budget_file = _BudgetFile(args, "dpsketch top --window --cumulative (binary tree, zCDP)",
                              epsilon=args.epsilon, delta=args.delta)
    budget = Budget(args.epsilon, args.delta, zcdp_delta=args.delta)
    # one public hash seed for every window's sketch (derived from --seed, else random)
    cumulative = _checked(lambda: Cumulative(
        horizon=horizon, sketch="dyadic", universe_bits=64, width=width, depth=depth,
        rho=rho, delta=args.delta, schedule=args.schedule or "auto", seed=args.seed, budget=budget))
    if args.format is None and not _log_input(args) and _input.detect_format(args.file) != "parquet":
        args.format = "csv"
    budget_file.check()
    src = _open_input(args, out, privacy_id=None, ids="auto")
    budget_file.charge()
    sched = cumulative.schedule
    out.note(f"{cumulative.mechanism} on {display(src.path)}; keys: {src.keys.describe()}; dyadic CountSketch "
             f"over 64-bit keys, width {width}, depth {depth}")
    out.note(f"{horizon} windows of {args.window} from {iso(origin + first * period)} to {iso(origin + (last + 1) * period)}, "
             f"released at the end of the input; schedule {sched.name}: every element in at most "
             f"L={sched.nodes_per_element} published nodes, each at rho/L; rho={num(rho)} for the whole series "
             f"= (epsilon={num(args.epsilon)}, delta={num(args.delta)})")
    source_desc = display(src.path)
    writer = csv.writer(sys.stdout, lineterminator="\n") if out.fmt == "csv" else None
    if writer is not None:
        writer.writerow(["through_window_end", "rank", "item", "noisy_count"])

    def batches():
        for keys, times in src.timed(args.time_column, follow=False):
            arr = np.asarray(keys, dtype=np.int64)
            yield (arr.view(np.uint64) ^ np.uint64(_SIGN)), times

    _print_series(cumulative.releases(batches(), period=args.window, start=args.start, origin=args.origin),
                  lambda step: _print_cumulative(out, writer, step, cumulative, args.top, k, source_desc),
                  source_desc)
    out.spent(budget, budget_file.ledger)
    return 0


def _print_cumulative(out, writer, step, cumulative, top_n, k, source_desc) -> None:
    """One window's cumulative answer on stdout, flushed: a JSON line, CSV rows or a titled table."""
    prefix, window = step.prefix, step.window
    total = prefix.noisy_total()
    # max(noisy n / k, a public noise floor of 4 standard deviations of a leaf-level estimate)
    from ..mechanisms.private_sketches import prefix_heavy_hitter_threshold

    threshold = prefix_heavy_hitter_threshold(total, k, [s.metadata for s in prefix.sketches])
    found = prefix.heavy_hitters(threshold)
    items = [(int(x) - _SIGN, v) for x, v in found]
    shown = items[:top_n] if top_n and out.fmt == "table" else items  # --show cuts the table only
    if out.fmt == "json":
        obj = document(cumulative.mechanism, step=step.step, window=window,
                       threshold=threshold, noisy_total=total,
                       items=[[key, v] for key, v in shown], rho=cumulative.rho, epsilon=cumulative.epsilon,
                       delta=cumulative.delta, nodes_in_prefix=len(prefix),
                       nodes_published=[n.metadata["node"] for n in step.nodes],
                       composition=step.nodes[0].metadata["composition"] if step.nodes else None,
                       cli={"k": k, "source": source_desc, "top": top_n, "released": len(items),
                            "exact_counts_withheld": True})
        sys.stdout.write(json.dumps(obj, default=json_default) + "\n")
    elif writer is not None:
        for rank, (key, v) in enumerate(shown, 1):
            writer.writerow([window["end"], rank, key, num(v)])
    else:
        sys.stdout.write(f"since start through window [{window['start']}, {window['end']}): threshold={num(threshold)} "
                         f"noisy n={num(total)} -> {len(items)} item(s)\n")
        _write_ranked(shown)
    sys.stdout.flush()


def _print_window(out, writer, rel, top_n, source_desc, k, capacity, algorithm) -> None:
    """One window's release on stdout, flushed: a JSON line, CSV rows or a titled table."""
    window = rel.metadata["window"]
    items = rel.items[:top_n] if top_n and out.fmt == "table" else rel.items  # --show cuts the table only
    if out.fmt == "json":
        obj = rel.to_dict()
        obj["items"] = [[key, v] for key, v in items]
        if obj.get("intervals") is not None:
            obj["intervals"] = obj["intervals"][:len(items)]
        obj["cli"] = {"algorithm": algorithm, "k": k, "capacity": capacity, "source": source_desc, "top": top_n,
                      "released": len(rel.items), "exact_counts_withheld": True}
        sys.stdout.write(json.dumps(obj, default=json_default) + "\n")
    elif writer is not None:
        for rank, (key, v) in enumerate(items, 1):
            writer.writerow([window["start"], window["end"], rank, key, num(v)])
    else:
        sys.stdout.write(f"window [{window['start']}, {window['end']}): threshold={num(rel.threshold)} "
                         f"noisy n={num(rel.n)} -> {len(rel.items)} item(s) released\n")
        _write_ranked(items)
    sys.stdout.flush()


def _write_ranked(items) -> None:
    """The rows of a windowed or cumulative table: rank, item, noisy count."""
    width = max([display_width(label(key)) for key, _ in items] + [4])  # terminal columns (CJK, emoji: 2)
    for rank, (key, v) in enumerate(items, 1):
        sys.stdout.write(f"{rank:>6}  {pad(label(key), width)}  {num(v)}\n")


# -- the user-level release (--privacy-id) ----------------------------------------------------------


def _top_units(args, out) -> int:
    """``top --privacy-id``: the exact route of dpsketch.unit_heavy_hitters (docs/privacy.md §Privacy
    unit) on the item and id columns. Neighbours add or remove all rows of one privacy id; nothing
    about rows, units or lengths is printed (the route publishes no length)."""
    from ..accounting.budget import Budget
    from ..mechanisms.unit_level import ContributionBounder, release_bounded_counts, unit_release_cost

    if args.max_keys_per_unit is None:
        raise UsageError("--privacy-id needs --max-keys-per-unit M: how many distinct items one privacy id "
                         "may contribute (the rest of its items are dropped)")
    if (args.top_k is None) != (args.selection is None):
        raise UsageError("--privacy-id takes --top-k N together with --selection gumbel: the Gumbel selection "
                         "releases the N passing items it ranks first")
    m, c = args.max_keys_per_unit, args.max_rows_per_key or 1
    noise = args.noise or "gaussian"
    _checked(lambda: unit_release_cost(epsilon=args.epsilon, delta=args.delta, max_keys_per_unit=m,
                                       max_rows_per_key=c, noise=noise))
    if args.dry_run:
        from ..units import Person

        return _print_plan(args, "heavy_hitters", epsilon=args.epsilon, delta=args.delta, top_k=args.top_k,
                           method="exact", noise=noise, unit=Person(args.privacy_id, max_keys=m, max_rows_per_key=c))
    budget_file = _BudgetFile(args, "dpsketch top --privacy-id (exact route)", epsilon=args.epsilon, delta=args.delta)
    budget_file.check()
    src = _open_input(args, out, privacy_id=args.privacy_id, ids=_unit_ids(args))
    budget_file.charge()

    # Each batch is coded (C++, GIL released) as it is read: its keys in the reader thread, its ids
    # here while the reader reads the next batch; only the rows' codes and the code tables are kept.
    bounder = ContributionBounder(max_keys_per_unit=m, max_rows_per_key=c, seed=args.seed)

    def coded(add, batch):
        try:
            add(batch)
        except (ValueError, TypeError) as exc:
            raise RunError(f"release failed: {first_line(exc)}") from None

    def take(keys, ids):
        coded(bounder.add_keys, keys)
        coded(bounder.add_ids, ids)

    _each_pair(args, src, take)

    budget = Budget(args.epsilon, args.delta)
    try:
        rel = release_bounded_counts(bounder.bounded(), epsilon=args.epsilon, delta=args.delta, noise=noise,
                                     selection=args.selection, k=args.top_k, seed=args.seed, budget=budget)
    except (ValueError, TypeError, RuntimeError) as exc:
        raise RunError(f"release failed: {first_line(exc)}") from None
    del bounder

    meta = rel.metadata
    selection = (f"; Gumbel selection of the top {args.top_k}" if args.selection else "")
    return _print_unit_release(
        args, out, src, rel, budget, budget_file, route=f"{meta['route']} route",
        bounds=f"bounds per unit: m={meta['max_keys_per_unit']} keys (max_keys_per_unit), "
               f"c={meta['max_rows_per_key']} rows per key (max_rows_per_key){selection}",
        hint="hint: nothing reached the threshold; a larger --epsilon or a smaller --max-keys-per-unit lowers it")


def _column_of(batches: list):
    """One numpy column from the batches of Source.pairs (Arrow arrays, numpy arrays or lists)."""
    parts = [b.to_numpy(zero_copy_only=False) if hasattr(b, "to_numpy") and not isinstance(b, np.ndarray)
             else np.asarray(b) if not isinstance(b, list) else np.array(b, dtype=object) for b in batches]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _top_units_weighted(args, out) -> int:
    """``top --privacy-id --selection weighted_gaussian``: the weighted Gaussian key selection
    (docs/mechanisms/person-weighted.md) on the item and id columns, held in memory."""
    from ..accounting.budget import Budget
    from ..mechanisms.unit_weighted import weighted_heavy_hitters
    from ..units import Person

    if args.max_keys_per_unit is None:
        raise UsageError("--privacy-id needs --max-keys-per-unit M: how many distinct items one privacy id "
                         "may contribute (the rest of its items are dropped)")
    m, c, counts = args.max_keys_per_unit, args.max_rows_per_key or 1, not args.no_counts
    unit = Person(args.privacy_id, max_keys=m, max_rows_per_key=c)
    if args.dry_run:
        return _print_plan(args, "heavy_hitters", epsilon=args.epsilon, delta=args.delta, method="exact", unit=unit,
                           selection="weighted_gaussian", counts=counts)
    _checked(lambda: _plan_only(args, unit, counts))
    budget_file = _BudgetFile(args, "dpsketch top --privacy-id --selection weighted_gaussian", epsilon=args.epsilon,
                              delta=args.delta)
    budget_file.check()
    src = _open_input(args, out, privacy_id=args.privacy_id, ids=_unit_ids(args))
    budget_file.charge()
    key_batches: list = []
    id_batches: list = []
    _each_pair(args, src, lambda keys, ids: (key_batches.append(keys), id_batches.append(ids)))
    budget = Budget(args.epsilon, args.delta)
    try:
        rel = weighted_heavy_hitters(_column_of(key_batches), _column_of(id_batches), epsilon=args.epsilon,
                                     delta=args.delta, max_keys_per_unit=m, max_rows_per_key=c, counts=counts,
                                     seed=args.seed, budget=budget)
    except (ValueError, TypeError, RuntimeError) as exc:
        raise RunError(f"release failed: {first_line(exc)}") from None
    return _print_unit_release(
        args, out, src, rel, budget, budget_file, route="exact route, weighted Gaussian selection",
        bounds=f"bounds per unit: m={m} keys (max_keys_per_unit), c={c} rows per key (max_rows_per_key); "
               + ("noisy counts of the selected items" if counts else "values: noisy weighted scores, not counts"),
        hint="hint: nothing reached the threshold; a larger --epsilon lowers it")


def _plan_only(args, unit, counts):
    """Every privacy parameter checked before any input is read (the plan raises what the release would)."""
    from ..plans import plan

    return plan("heavy_hitters", epsilon=args.epsilon, delta=args.delta, method="exact", unit=unit,
                selection="weighted_gaussian", counts=counts)


def _print_unit_release(args, out, src, rel, budget, budget_file, *, route, bounds, hint) -> int:
    """The header (route, privacy unit, bounds, the unit-level guarantee), the spent line and the
    items of a user-level ``top`` release; JSON adds the CLI block. Nothing about rows or ids."""
    released = list(rel.items)
    source_desc, keys_desc, ids_desc = display(src.path), src.keys.describe(), src.ids.describe()
    meta = rel.metadata
    parts = [f"epsilon={num(rel.epsilon)}", f"delta={num(rel.delta)}"]
    if rel.rho is not None:
        parts.append(f"rho={num(rel.rho)}")
    parts.append(f"threshold={num(rel.threshold)}")
    out.note(f"{rel.mechanism} ({route}) on {source_desc}; keys: {keys_desc}")
    out.note(f"privacy unit: {meta['privacy_unit']} = column {args.privacy_id!r} (ids: {ids_desc}); neighbours: "
             f"{meta['neighbours']} (all rows of one id); {bounds}")
    out.note(f"{' '.join(parts)} for one privacy unit -> {len(released)} item(s) released")
    out.spent(budget, budget_file.ledger)
    if not released:
        out.note(hint)
    _note_cut(out, args.top, len(released))
    obj = None
    if out.fmt == "json":
        obj = rel.to_dict()
        obj["cli"] = {"source": source_desc, "keys": keys_desc, "privacy_id_column": args.privacy_id,
                      "privacy_ids": ids_desc, "top": args.top, "released": len(released),
                      "exact_counts_withheld": True}
    _items_release(out, released, args.top, json_obj=obj, threshold=rel.threshold,
                   intervals=getattr(rel, "intervals", None), level=getattr(rel, "interval_level", None))
    return 0


def _top_units_bounded(args, out) -> int:
    """``top --privacy-id`` on stdin or with ``--max-rows-per-unit``: the bounded-memory route of
    dpsketch.UnitStream (docs/privacy.md §Privacy unit). Each id's first r rows, in input order,
    reach a SpaceSaving (DPSS) or MisraGries (PMG) summary released at the per-row (ε/r, δ') that
    group privacy turns into the requested (ε, δ) for one id; memory is the summary plus one
    counter per id seen, so the input is never held."""
    from ..accounting.budget import Budget
    from ..mechanisms.unit_level import UnitStream, unit_calibration

    r = _rows_per_unit(args)
    if r is None:
        raise UsageError("the bounded-memory route (stdin) needs --max-rows-per-unit R, or --max-keys-per-unit M "
                         "(and --max-rows-per-key C) for R = M*C: how many rows one privacy id may contribute")
    algorithm = _counter_algorithm(args, "bounded-memory user-level release")
    k = args.k if args.k is not None else DEFAULT_K
    from ..mechanisms.top_k import oversampled_capacity

    capacity = oversampled_capacity(k, args.oversample or 2.0)
    _checked(lambda: unit_calibration(args.epsilon, args.delta, r))
    if args.dry_run:
        from ..units import Person

        return _print_plan(args, "heavy_hitters", epsilon=args.epsilon, delta=args.delta, k=k, capacity=capacity,
                           method="bounded_memory", unit=Person(args.privacy_id, max_rows=r), n=args.plan_rows)
    stream = _checked(lambda: UnitStream(algorithm, capacity=capacity, max_rows_per_unit=r))
    budget_file = _BudgetFile(args, f"dpsketch top --privacy-id (bounded_memory route, {algorithm})",
                              epsilon=args.epsilon, delta=args.delta)
    budget_file.check()
    src = _open_input(args, out, privacy_id=args.privacy_id, ids=_unit_ids(args))
    budget_file.charge()

    _each_pair(args, src, lambda keys, ids: stream.update(_input.column([keys], src.keys),
                                                          _input.column([ids], src.ids)))

    budget = Budget(args.epsilon, args.delta)
    try:
        rel = stream.release(epsilon=args.epsilon, delta=args.delta, k=k, seed=args.seed, budget=budget)
    except (ValueError, TypeError, RuntimeError) as exc:
        raise RunError(f"release failed: {first_line(exc)}") from None

    return _print_unit_release(
        args, out, src, rel, budget, budget_file, route=f"bounded_memory route, {capacity} counters",
        bounds=f"bound per unit: r={r} rows (max_rows_per_unit, its first r in input order), per-row "
               "calibration epsilon/r by group privacy",
        hint="hint: nothing reached the threshold; the bounded-memory route pays epsilon/r per row: a smaller "
             "--max-rows-per-unit or a file (the exact route) releases more")


# ---------------------------------------------------------------------------------------------
# dpsketch quantiles
# ---------------------------------------------------------------------------------------------


def parse_bounds(text: str):
    """'LO,HI' -> (lo, hi) with finite lo < hi, or UsageError saying what to pass."""
    parts = text.split(",")
    if len(parts) != 2:
        raise UsageError(f"--bounds must be LO,HI (two numbers), got {text!r}")
    try:
        lo, hi = float(parts[0]), float(parts[1])
    except ValueError:
        raise UsageError(f"--bounds must be two numbers LO,HI, got {text!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise UsageError(f"--bounds must be finite with LO < HI, got {text!r}")
    return lo, hi


def parse_qs(text: str) -> list[float]:
    """'0.5,0.9,0.99' -> quantile levels in [0, 1], or UsageError."""
    levels = []
    for part in text.split(","):
        try:
            q = float(part)
        except ValueError:
            raise UsageError(f"--q must be comma-separated numbers in [0, 1], got {text!r}") from None
        if not (math.isfinite(q) and 0 <= q <= 1):
            raise UsageError(f"--q values must be in [0, 1], got {part!r}")
        levels.append(q)
    if not levels:  # pragma: no cover - str.split always gives one part
        raise UsageError("--q needs at least one quantile level")
    return levels


def _quantile_sketch(args):
    """Validate every parameter, check that the run fits --budget FILE, and build the private sketch
    (noise drawn now, before any input), charged to the run's budget as the mechanism uses it (ρ or
    ε rounded down to a multiple of 2^-32). Returns (sketch, budget, budget file, qs, bounds,
    universe bits)."""
    from ..accounting.budget import Budget
    from ..sketches.dyadic import PrivateDyadicCountSketch

    if (args.rho is None) == (args.epsilon is None):
        raise UsageError("give exactly one of --rho R (zCDP, Gaussian noise) or --epsilon E (pure DP, Laplace noise)")
    bounds = parse_bounds(args.bounds) if args.bounds is not None else None
    if bounds is None and args.universe_bits is None:
        raise UsageError("give --bounds LO,HI (real values, clamped into the range) or --universe-bits L "
                         "(integers in [0, 2^L))")
    bits = args.universe_bits if args.universe_bits is not None else 32
    if bounds is not None and bits > 52:
        raise UsageError("with --bounds, --universe-bits must be at most 52 (float64 resolution)")
    qs = parse_qs(args.q)
    budget_file = _BudgetFile(args, "dpsketch quantiles", rho=args.rho, epsilon=args.epsilon)
    budget_file.check()
    # the run's accountant: its cap is what was asked for (--rho as a zCDP cap, --epsilon pure)
    budget = Budget(rho=args.rho) if args.rho is not None else Budget(args.epsilon)
    try:  # the sketch charges the budget what its noise uses, before drawing it
        sketch = PrivateDyadicCountSketch(
            bits, gamma=args.gamma, bounds=bounds, rho=args.rho, epsilon=args.epsilon,
            noise_allocation=args.noise_allocation, seed=args.seed, budget=budget,
        )
    except (ValueError, TypeError, OverflowError) as exc:
        raise UsageError(first_line(exc)) from None
    return sketch, budget, budget_file, qs, bounds, bits


def quantiles(args) -> int:
    """One PrivateDyadicCountSketch (docs/algorithms.md §6) built, with noise, before any input is
    read and charged to the run's budget first; values fed in batches; quantiles read off the noisy
    hierarchy once. The whole output is a private release, so nothing about the input fails the run
    or is counted in it (see Source.values); an input with no values is released like any other."""
    _check_dry_run(args)
    out = Output.for_args(args)
    method = getattr(args, "method", "dyadic")
    if args.privacy_id is not None and method != "dyadic":
        raise UsageError(f"--method {method} releases row-level quantiles; --privacy-id uses the dyadic sketch")
    route = quantiles_route(person=args.privacy_id is not None, method=method)
    _refuse_for(args, route)
    if route == "person.dyadic":
        return _quantiles_units(args, out)
    if route == "row.in_memory":
        return _quantiles_in_memory(args, out, method)
    if getattr(args, "scale", "linear") != "linear" or getattr(args, "integer", False):
        raise UsageError("--scale and --integer apply to --method auto|exp|joint|recursive")
    if args.delta is not None and args.rho is None:
        raise UsageError("--delta goes with --rho (it reports the (epsilon, delta)-DP conversion of the zCDP "
                         "guarantee) or with --privacy-id; --epsilon alone is pure DP")
    if args.dry_run:
        raise UsageError("--dry-run states the plans of --method auto|exp|joint|recursive and of --privacy-id; "
                         "the dyadic sketch's noise is described in docs/mechanisms/private-dyadic.md")
    if args.noise_allocation is None:
        args.noise_allocation = "zhao"
    sketch, budget, budget_file, qs, bounds, bits = _quantile_sketch(args)
    src = _open_input(args, out, keys="str")
    budget_file.charge()
    try:
        for values in src.values(integer=bounds is None, bits=bits):
            sketch.update_many(values)
    except (ValueError, TypeError, OverflowError) as exc:  # pragma: no cover - the values are checked above
        raise RunError(first_line(exc)) from None

    released = sketch.release().sketch
    levels = released.quantiles(qs)
    meta = released.privacy(delta=args.delta)
    res = released.resolution
    if meta["noise"] == "discrete_gaussian":
        priv = f"rho={meta['rho_used']:g} (zCDP, discrete Gaussian, {meta['noise_allocation']} allocation)"
        if args.delta is not None:
            priv += f", that is epsilon={meta['epsilon']:g}, delta={meta['delta']:g}"
    else:
        priv = f"epsilon={meta['epsilon_used']:g} (pure DP, discrete Laplace, {meta['noise_allocation']} allocation)"
    rng = (f"values clamped to [{bounds[0]:g}, {bounds[1]:g}]" if bounds
           else f"integers in [0, 2^{meta['universe_bits']})")
    out.note(f"PrivateDyadicCountSketch on {display(src.path)}: {rng}; universe 2^{meta['universe_bits']}, "
             f"width {meta['width']}, depth {meta['depth']}, exact levels 1..{meta['exact_levels']}")
    out.note(f"{priv}; resolution {res:.6g}; quantile targets use the noisy total "
             f"{released._total():.0f} (n is not published); rank noise sigma at most "
             f"{meta['rank_error_sigma']:.3g} (hash collisions excluded)")
    if meta.get("reproducible_not_secret"):
        out.note("seeded: reproducible_not_secret=True")
    out.spent(budget, budget_file.ledger)
    rows = [(q, float(v) if bounds is not None else int(v)) for q, v in zip(qs, levels)]
    _note_quantiles_at_a_bound(out, [v for _, v in rows], bounds, bits, res)
    obj = document(meta["mechanism"], meta, quantiles=[{"q": q, "value": v} for q, v in rows],
                   resolution=res, bounds=list(bounds) if bounds else None, universe_bits=bits,
                   noisy_total=released._total())
    real = bounds is not None
    out.release(
        [Column("q", "q", ">", lambda q: f"{q:g}", lambda q: f"{q:g}"),
         Column("value", "value", "<", (lambda v: value_text(v, resolution=res)) if real else str,
                repr if real else str)],
        rows, json_obj=obj,
    )
    return 0


def _quantiles_in_memory(args, out, method: str) -> int:
    """``quantiles --method auto|exp|joint|recursive``: dpsketch.quantiles (docs/privacy.md
    §In-memory quantiles) on the whole input, read into memory. Parameters and the budget file are
    checked before the input is opened; the file is charged before it is read."""
    from ..accounting.budget import Budget
    from ..mechanisms.quantiles import quantiles as in_memory_quantiles

    if args.epsilon is None:
        raise UsageError(f"--method {method} is pure DP: give --epsilon E (--rho is for the dyadic sketch)")
    for name in ("delta", "noise_allocation", "universe_bits"):
        if getattr(args, name) is not None:
            raise UsageError(f"{_option(name)} applies to the dyadic sketch, not to --method {method}")
    if args.bounds is None:
        raise UsageError(f"--method {method} needs --bounds LO,HI (the public value range; values outside are clamped)")
    bounds = parse_bounds(args.bounds)
    if args.scale == "log" and not bounds[0] > 0:
        raise UsageError("--scale log needs --bounds MIN_POSITIVE,MAX with MIN_POSITIVE > 0")
    if args.integer and (args.scale == "log" or not all(float(b).is_integer() for b in bounds)):
        raise UsageError("--integer needs integer --bounds and --scale linear")
    qs = parse_qs(args.q)
    if args.dry_run:
        return _print_plan(args, "quantiles", qs=qs, bounds=bounds, epsilon=args.epsilon, method=method,
                           scale=args.scale, relative_accuracy=args.relative_accuracy, integer=args.integer)
    budget_file = _BudgetFile(args, "dpsketch quantiles", epsilon=args.epsilon)
    budget_file.check()
    src = _open_input(args, out, keys="str")
    budget_file.charge()
    batches = list(src.values(integer=False, bits=52))
    values = np.concatenate(batches) if batches else np.zeros(0)
    budget = Budget(args.epsilon)  # the run's accountant: its cap is what was asked for
    try:
        rel = in_memory_quantiles(values, qs, bounds=bounds, epsilon=args.epsilon, method=method, seed=args.seed,
                                  scale=args.scale, relative_accuracy=args.relative_accuracy, integer=args.integer,
                                  budget=budget)
    except (ValueError, TypeError) as exc:  # pragma: no cover - the parameters are checked above
        raise UsageError(first_line(exc)) from None
    meta = rel.metadata
    scale = f"; log buckets, relative accuracy {args.relative_accuracy:g}" if args.scale == "log" else ""
    out.note(f"{meta['mechanism']} on {display(src.path)} (read into memory): values clamped to "
             f"[{bounds[0]:g}, {bounds[1]:g}]; method {meta['method']}{scale}{'; integers' if args.integer else ''}")
    out.note(f"epsilon={meta['epsilon_used']:g} (pure DP, exponential mechanism; add/remove one value); "
             "n is not published")
    if meta.get("reproducible_not_secret"):
        out.note("seeded: reproducible_not_secret=True")
    out.spent(budget, budget_file.ledger)
    rows = list(rel.items)
    obj = document(meta["mechanism"], meta, quantiles=[{"q": q, "value": v} for q, v in rows],
                   bounds=list(bounds))
    out.release(
        [Column("q", "q", ">", lambda q: f"{q:g}", lambda q: f"{q:g}"),
         Column("value", "value", "<", lambda v: value_text(
             v, resolution=1 if args.integer else None,
             relative=args.relative_accuracy if args.scale == "log" else None), repr)],
        rows, json_obj=obj,
    )
    return 0


def _note_quantiles_at_a_bound(out, values, bounds, bits, res) -> None:
    """A hint when every released quantile sits at the same end of the value range: the values may
    lie outside --bounds (they are clamped), or the noise swamps the data. Reads the release only."""
    lo, top = (bounds[0], bounds[1] - res) if bounds is not None else (0, 2**bits - 1)
    tol = res / 2
    for at, edge, cause in ((lo, "lower", "below"), (top, "upper", "above")):
        if values and all(abs(v - at) <= tol for v in values):
            out.note(f"hint: every quantile sits at the {edge} end of the range: the values may lie {cause} it "
                     f"(they are clamped; check --bounds or --universe-bits), or the noise is large next to the "
                     f"data (a larger --rho or --epsilon)")


# -- the user-level release (--privacy-id) ----------------------------------------------------------


def _quantiles_units(args, out) -> int:
    """``quantiles --privacy-id``: dpsketch.unit_quantiles (docs/privacy.md §Privacy unit,
    quantiles) on the value and id columns. Neighbours add or remove all rows of one privacy id;
    every unit keeps at most r rows and the noise is calibrated once for r rows. Nothing about
    rows, units or the total is printed."""
    from ..accounting.budget import Budget
    from ..mechanisms.unit_level import unit_quantiles, unit_quantiles_cost

    if args.max_rows_per_unit is None:
        raise UsageError("--privacy-id needs --max-rows-per-unit R: how many rows one privacy id may "
                         "contribute (the rest of its rows are dropped)")
    if (args.rho is None) == (args.epsilon is None):
        raise UsageError("give exactly one of --rho R (zCDP, discrete Gaussian; --delta adds the (epsilon, delta) "
                         "conversion) or --epsilon E (pure DP, discrete Laplace; with --delta: discrete Gaussian "
                         "calibrated to (epsilon, delta))")
    bounds = parse_bounds(args.bounds) if args.bounds is not None else None
    if bounds is None and args.universe_bits is None:
        raise UsageError("give --bounds LO,HI (real values, clamped into the range) or --universe-bits L "
                         "(integers in [0, 2^L))")
    bits = args.universe_bits if args.universe_bits is not None else 32
    if bounds is None and bits > 63:  # the library takes int64 values
        raise UsageError("with --privacy-id and without --bounds, --universe-bits must be at most 63")
    qs = parse_qs(args.q)
    privacy = dict(rho=args.rho, epsilon=args.epsilon, delta=args.delta)  # the options as given
    cost = _checked(lambda: unit_quantiles_cost(max_rows_per_unit=args.max_rows_per_unit, bounds=bounds,
                                                universe_bits=bits, gamma=args.gamma, **privacy))
    if args.dry_run:
        from ..units import Person

        return _print_plan(args, "quantiles", qs=qs, bounds=bounds, universe_bits=bits, gamma=args.gamma,
                           unit=Person(args.privacy_id, max_rows=args.max_rows_per_unit), **privacy)
    budget_file = _BudgetFile(args, "dpsketch quantiles --privacy-id", rho=args.rho, epsilon=args.epsilon,
                              delta=None if args.rho is not None else args.delta)
    budget_file.check()
    src = _open_input(args, out, keys="str", privacy_id=args.privacy_id, ids=_unit_ids(args))
    budget_file.charge()

    value_batches, id_batches = [], []
    for values, ids in src.number_pairs(integer=bounds is None, bits=bits):
        value_batches.append(values)
        id_batches.append(ids)
    values = (np.concatenate(value_batches) if value_batches
              else np.zeros(0, dtype=np.uint64 if bounds is None else np.float64))
    del value_batches
    ids = _input.column(id_batches, src.ids)
    del id_batches

    # the run's accountant: its cap is what was asked for (--rho as a zCDP cap, else (--epsilon, --delta))
    budget = Budget(rho=args.rho) if args.rho is not None else Budget(args.epsilon, args.delta or 0.0)
    try:
        rel = unit_quantiles(values, ids, qs, max_rows_per_unit=args.max_rows_per_unit, bounds=bounds,
                             universe_bits=bits, gamma=args.gamma, seed=args.seed, budget=budget, **privacy)
    except (ValueError, TypeError, RuntimeError) as exc:
        raise RunError(f"release failed: {first_line(exc)}") from None
    del values, ids

    meta = rel.metadata
    source_desc, ids_desc = display(src.path), src.ids.describe()
    rng = (f"values clamped to [{bounds[0]:g}, {bounds[1]:g}]" if bounds
           else f"integers in [0, 2^{meta['universe_bits']})")
    parts = [f"epsilon={num(rel.epsilon)}" if rel.epsilon is not None else None,
             f"delta={num(rel.delta)}" if rel.epsilon is not None else None,
             f"rho={num(rel.rho)}" if rel.rho is not None else None]
    noise = ("discrete Gaussian, sigma^2=" + num(meta["sigma2"]) if meta["noise"] == "discrete_gaussian"
             else "discrete Laplace, scale=" + num(meta["laplace_scale"]))
    out.note(f"{rel.mechanism} ({meta['route']} route) on {source_desc}: {rng}; universe 2^{meta['universe_bits']}, "
             f"width {meta['width']}, depth {meta['depth']}, exact levels 1..{meta['exact_levels']}")
    out.note(f"privacy unit: {meta['privacy_unit']} = column {args.privacy_id!r} (ids: {ids_desc}); neighbours: "
             f"{meta['neighbours']} (all rows of one id); bound per unit: r={meta['max_rows_per_unit']} rows "
             f"(max_rows_per_unit)")
    out.note(f"{' '.join(p for p in parts if p)} for one privacy unit ({noise}, {meta['noise_allocation']} "
             f"allocation); resolution {cost['resolution']:.6g}; quantile targets use the noisy total "
             f"(n is not published)")
    if meta.get("reproducible_not_secret"):
        out.note("seeded: reproducible_not_secret=True")
    out.spent(budget, budget_file.ledger)
    rows_out = [(q, float(v) if bounds is not None else int(v)) for q, v in rel.items]
    _note_quantiles_at_a_bound(out, [v for _, v in rows_out], bounds, meta["universe_bits"], cost["resolution"])
    obj = None
    if out.fmt == "json":
        obj = rel.to_dict()
        obj["quantiles"] = [{"q": q, "value": v} for q, v in rows_out]
        obj["resolution"] = cost["resolution"]
        obj["cli"] = {"source": source_desc, "privacy_id_column": args.privacy_id, "privacy_ids": ids_desc,
                      "exact_counts_withheld": True}
    real = bounds is not None
    out.release(
        [Column("q", "q", ">", lambda q: f"{q:g}", lambda q: f"{q:g}"),
         Column("value", "value", "<", (lambda v: value_text(v, resolution=res)) if real else str,
                repr if real else str)],
        rows_out, json_obj=obj or {},
    )
    return 0


# ---------------------------------------------------------------------------------------------
# dpsketch docs / audit
# ---------------------------------------------------------------------------------------------


def budget(args) -> int:
    """``dpsketch budget new FILE`` creates a budget file (dpsketch.FileBudget.create) and
    ``dpsketch budget show FILE`` prints its caps, totals, what is left and every charge."""
    from ..accounting.ledger import FileBudget
    from ..errors import BudgetFileError

    if args.action == "new":
        if args.rho is not None and (args.delta is not None or args.zcdp_delta is not None):
            raise UsageError("a zCDP budget (--rho) has no --delta or --zcdp-delta")
        try:
            ledger = FileBudget.create(args.file, epsilon=args.epsilon, delta=args.delta, rho=args.rho,
                                       zcdp_delta=args.zcdp_delta)
        except BudgetFileError as exc:
            raise UsageError(first_line(exc)) from None
        except (TypeError, ValueError) as exc:
            raise UsageError(first_line(exc)) from None
        except OSError as exc:
            raise RunError(f"cannot create the budget file {display(args.file)}: {first_line(exc)}") from None
    else:
        ledger = _open_budget_file(args.file, "budget show")
    state = ledger.to_dict()
    if args.json:
        json.dump(state, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    cap = state["cap"]
    zcdp = f"; zCDP spends convert with zcdp_delta={num(cap['zcdp_delta'])}" if cap.get("zcdp_delta") else ""
    print(f"budget file {state['path']!r}")
    print(f"cap    {_named(cap, ('rho',) if cap['rho'] is not None else ('epsilon', 'delta'))}{zcdp}")
    print(f"spent  {_named(state['spent'], ('rho',) if cap['rho'] is not None else ('epsilon', 'delta'))}"
          + (f" (of which zCDP rho={num(state['spent']['rho'])})" if cap["rho"] is None and state["spent"]["rho"] else ""))
    left = state["remaining"]
    print(f"left   {_named(left, ('rho',) if cap['rho'] is not None else ('epsilon', 'delta'))}"
          + (f" (or rho={num(left['rho'])} for a zCDP spend)" if cap["rho"] is None and cap.get("zcdp_delta") else ""))
    print(f"{len(state['ledger'])} charge(s)")
    for i, e in enumerate(state["ledger"], 1):
        amounts = " ".join(f"{name}={num(e[name])}" for name in ("epsilon", "delta", "rho") if e[name])
        print(f"  {i:>3}  {e['mechanism']}  {amounts or 'nothing'}")
    return 0


def _named(values: dict, names) -> str:
    return ", ".join(f"{name}={num(values[name])}" for name in names)


def completion(args) -> int:
    """The shell completion script of the whole command, generated from its parser by shtab."""
    try:
        import shtab
    except ImportError:
        raise RunError("shell completion needs shtab: pip install shtab") from None
    from . import _build_parser

    print(shtab.complete(_build_parser(), shell=args.shell))
    return 0


def docs(args) -> int:
    from . import docs as _docs

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


def audit(args) -> int:
    from .. import audit as audit_module

    try:
        return audit_module.run_command(
            args.mechanisms, epsilon=args.epsilon, delta=args.delta, label_delta=args.label_delta,
            trials=args.trials, quick=args.quick, confidence=args.confidence, seed=args.seed,
            as_json=args.json, quiet=args.quiet, out=sys.stdout, err=sys.stderr, miscalibrated=args.miscalibrated)
    except ValueError as exc:
        raise UsageError(first_line(exc)) from None


def _print_plan(args, question: str, **kwargs) -> int:
    """``--dry-run``: the plan of the release these options ask for (:func:`dpsketch.plan`: the
    guarantee, noise, threshold, interval half-width and the counts released with probability ½
    and 0.95), printed before any input is opened or any budget is charged."""
    from ..plans import plan

    if args.plan_rows is not None and "n" not in kwargs:
        raise UsageError("--plan-rows applies where the threshold depends on the input's length (DPSS, PMG with "
                         "--k, the bounded-memory person route)")
    p = _checked(lambda: plan(question, **kwargs))
    if getattr(args, "json", False):
        print(json.dumps(p.to_dict(), default=json_default, indent=2))
    else:
        print(str(p))
    return 0
