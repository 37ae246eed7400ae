"""What a ``dpsketch`` command prints. stdout gets the release, once, as an aligned table, JSON or
CSV (:meth:`Output.release`); stderr gets the header, notes, warnings, the ``spent:`` line and the
progress bar. One :class:`Output` per run, made from the parsed options (``--json``, ``--csv``,
``--quiet``).

Only what the commands hand over is printed: released items and noisy values, the mechanism's
parameters, and counts about the data only where the command says they are public.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from ..errors import ParameterError
from .options import _written, release_written  # noqa: F401 - re-exported

__all__ = ["PROG", "Column", "Output", "num", "label", "json_default", "Progress", "totals", "caps",
           "display_width", "pad", "release_written"]

PROG = "dpsketch"


def num(x) -> str:
    """A number as printed: integers (also integral floats below 1e15) without a decimal point,
    other floats with 10 significant digits."""
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


def label(key) -> str:
    """An item as a table cell: unprintable characters escaped, so one item stays on one line."""
    s = str(key)
    return s if s.isprintable() else repr(s)[1:-1]


def display_width(text: str) -> int:
    """The columns ``text`` takes on a terminal: 2 for East Asian wide and fullwidth characters
    (CJK, most emoji), 0 for combining marks, variation selectors and format characters (a
    zero-width joiner), 1 for the rest (``unicodedata``, no dependency). An emoji sequence joined
    by U+200D is counted as its parts, as terminals without emoji fonts show it."""
    import unicodedata

    if text.isascii():
        return len(text)
    width = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def pad(text: str, width: int, align: str = "<") -> str:
    """``text`` padded with spaces to ``width`` terminal columns (:func:`display_width`), on the
    right (``align`` '<') or on the left ('>')."""
    fill = " " * max(0, width - display_width(text))
    return fill + text if align == ">" else text + fill


def json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    return str(o)


def totals(budget, t, *, zcdp_part: bool = False) -> str:
    """A dpsketch.PrivacyTotals of ``budget`` as printed: ρ for a zCDP budget, else ε and δ (with
    ``zcdp_part``, also the ρ total of the zCDP spends they include, once there is one)."""
    if budget.rho is not None:
        return f"rho={num(t.rho)}"
    part = f" (of which zCDP rho={num(t.rho)})" if zcdp_part and t.rho else ""
    return f"epsilon={num(t.epsilon)}, delta={num(t.delta)}{part}"


def caps(budget) -> str:
    """The caps of a dpsketch.Budget as printed."""
    if budget.rho is not None:
        return f"rho={num(budget.rho)}"
    return f"epsilon={num(budget.epsilon)}, delta={num(budget.delta)}"


def value_text(v, *, resolution=None, relative=None) -> str:
    """A released quantile as printed, to the resolution its release supports: ``resolution`` an
    absolute step (a dyadic sketch's bucket width: digits down to it), ``relative`` a relative
    accuracy (log buckets: the significant digits it resolves), else six significant digits (the
    in-memory methods draw a point inside a gap of the data: more digits say nothing more)."""
    x = float(v)
    if resolution is not None and resolution > 0:
        if resolution >= 1 and float(resolution).is_integer():
            return f"{x:.0f}"
        return f"{x:.{max(0, math.ceil(-math.log10(resolution)))}f}"
    if relative is not None and 0 < relative < 1:
        return f"{x:.{max(1, math.ceil(-math.log10(relative)) + 1)}g}"
    return f"{x:.6g}"


def document(mechanism: str, privacy: Any = None, **fields: Any) -> dict:
    """A JSON document of the command line: the mechanism that ran first, then ``fields`` (the
    answer), then ``privacy`` (the release's own metadata, as the mechanism wrote it), when given.
    Every figure in it is read from a release, a plan or the options; none is computed here."""
    doc: dict = {"mechanism": mechanism, **fields}
    if privacy is not None:
        doc["privacy"] = privacy
    return doc


@dataclass(frozen=True)
class Column:
    """One column of a printed release: its table title and alignment ('<' or '>'), its CSV
    title, and how a value is written in each."""

    title: str
    csv_title: str
    align: str = "<"
    cell: Callable[[Any], str] = str
    csv_cell: Callable[[Any], Any] = str


class Output:
    """The printing of one run (see the module doc)."""

    def __init__(self, *, fmt: str = "table", quiet: bool = False):
        if fmt not in ("table", "json", "csv"):  # pragma: no cover - set by the parser
            raise ParameterError(f"fmt must be 'table', 'json' or 'csv', got {fmt!r}")
        self.fmt = fmt
        self.quiet = quiet

    @classmethod
    def for_args(cls, args) -> Output:
        fmt = "json" if getattr(args, "json", False) else "csv" if getattr(args, "csv", False) else "table"
        return cls(fmt=fmt, quiet=bool(getattr(args, "quiet", False)))

    # -- stderr -----------------------------------------------------------------------------------
    def note(self, msg: str) -> None:
        """A header or note line on stderr (not with --quiet)."""
        if not self.quiet:
            print(f"{PROG}: {msg}", file=sys.stderr)

    def warn(self, msg: str) -> None:
        """A warning on stderr, also with --quiet."""
        print(f"{PROG}: warning: {msg}", file=sys.stderr)

    def spent(self, budget, budget_file=None) -> None:
        """The 'spent:' line of every command that draws noise: what its dpsketch.Budget recorded;
        with ``budget_file`` (the ledger of --budget FILE) a second line with the file's totals."""
        self.note(f"spent: {totals(budget, budget.spent())} (dpsketch.Budget ledger)")
        if budget_file is not None:
            self.note(f"budget file {budget_file.path!r}: {totals(budget_file, budget_file.spent(), zcdp_part=True)} "
                      f"spent of the cap {caps(budget_file)} (left: {totals(budget_file, budget_file.remaining())})")

    # -- stdout -----------------------------------------------------------------------------------
    def release(self, columns: list[Column], rows: list[tuple], *, json_obj: dict, empty: str | None = None) -> None:
        """The release on stdout: ``json_obj`` with --json, else ``rows`` (raw values, one tuple a
        row) as CSV with a header row or as an aligned table (``empty``: the table's line when
        there are no rows)."""
        out = sys.stdout
        if self.fmt == "json":
            json.dump(json_obj, out, default=json_default, indent=2)
            out.write("\n")
        elif self.fmt == "csv":
            w = csv.writer(out, lineterminator="\n")
            w.writerow([c.csv_title for c in columns])
            for row in rows:
                w.writerow([c.csv_cell(v) for c, v in zip(columns, row)])
        else:
            cells = [[c.cell(v) for c, v in zip(columns, row)] for row in rows]
            # terminal columns, not characters: a CJK item or an emoji takes two
            widths = [max([display_width(c.title)] + [display_width(r[j]) for r in cells])
                      for j, c in enumerate(columns)]

            def line(texts):
                return "  ".join(pad(t, w, c.align) for t, c, w in zip(texts, columns, widths)).rstrip()

            out.write(line([c.title for c in columns]) + "\n")
            for r in cells:
                out.write(line(r) + "\n")
            if not rows and empty is not None:
                out.write(empty + "\n")
        out.flush()
        _written["release"] = True


class Progress:
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
