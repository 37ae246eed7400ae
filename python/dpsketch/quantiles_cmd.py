"""``dpsketch quantiles``: private quantiles of a numeric column (the logic behind the command that
``cli.py`` defines). One PrivateDyadicCountSketch (docs/algorithms.md §6) is built, with noise, before
any input is read (and charged to the run's dpsketch.Budget first); values are fed in chunks;
quantiles are read off the noisy hierarchy once.

All of the output is a private release, so nothing about the input fails the run or is counted
in it: a value that cannot be parsed (or NaN) is dropped, ±inf and values outside the range are
clamped, and an input with no values is released like any other (its noisy quantiles). How many
values were dropped, clamped or skipped is not reported: those counts are data that the budget
does not cover. Errors name no value, line number or count.
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np

__all__ = ["run", "parse_bounds", "parse_qs"]


def parse_bounds(text: str):
    """'LO,HI' -> (lo, hi) with finite lo < hi, or ValueError saying what to pass."""
    parts = text.split(",")
    if len(parts) != 2:
        raise ValueError(f"--bounds must be LO,HI (two numbers), got {text!r}")
    try:
        lo, hi = float(parts[0]), float(parts[1])
    except ValueError:
        raise ValueError(f"--bounds must be two numbers LO,HI, got {text!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"--bounds must be finite with LO < HI, got {text!r}")
    return lo, hi


def parse_qs(text: str) -> list[float]:
    """'0.5,0.9,0.99' -> quantile levels in [0, 1]."""
    out = []
    for part in text.split(","):
        try:
            q = float(part)
        except ValueError:
            raise ValueError(f"--q must be comma-separated numbers in [0, 1], got {text!r}") from None
        if not (math.isfinite(q) and 0 <= q <= 1):
            raise ValueError(f"--q values must be in [0, 1], got {part!r}")
        out.append(q)
    if not out:
        raise ValueError("--q needs at least one quantile level")
    return out


def _build_sketch(args, usage_error):
    """Validate every parameter and build the private sketch (noise drawn now, before any input),
    charged to the run's budget as the mechanism uses it (ρ or ε rounded down to a multiple of
    2^-32). Returns (sketch, budget, qs, bounds, universe bits)."""
    from .calibration import used_value
    from .dyadic import PrivateDyadicCountSketch

    if (args.rho is None) == (args.epsilon is None):
        raise usage_error("give exactly one of --rho R (zCDP, Gaussian noise) or --epsilon E (pure DP, Laplace noise)")
    bounds = None
    if args.bounds is not None:
        try:
            bounds = parse_bounds(args.bounds)
        except ValueError as exc:
            raise usage_error(str(exc)) from None
    if bounds is None and args.universe_bits is None:
        raise usage_error("give --bounds LO,HI (real values, clamped into the range) or --universe-bits L "
                          "(integers in [0, 2^L))")
    bits = args.universe_bits if args.universe_bits is not None else 32
    if bounds is not None and bits > 52:
        raise usage_error("with --bounds, --universe-bits must be at most 52 (float64 resolution)")
    try:
        qs = parse_qs(args.q)
    except ValueError as exc:
        raise usage_error(str(exc)) from None
    budget = _budget(args)
    spend = {"rho": used_value(args.rho)} if args.rho is not None else {"epsilon": used_value(args.epsilon)}
    try:
        with budget.charging("PrivateDyadicCountSketch", **spend):
            sketch = PrivateDyadicCountSketch(
                bits, gamma=args.gamma, bounds=bounds, rho=args.rho, epsilon=args.epsilon,
                noise_allocation=args.noise_allocation, seed=args.seed,
            )
    except (ValueError, TypeError, OverflowError) as exc:
        raise usage_error(str(exc).splitlines()[0]) from None
    return sketch, budget, qs, bounds, bits


def _budget(args):
    """The run's accountant: its cap is what was asked for (--rho as a zCDP cap, --epsilon pure)."""
    from .budget import Budget

    return Budget(rho=args.rho) if args.rho is not None else Budget(args.epsilon)


def _values(texts, integer, bits):
    """A chunk of text values as the sketch's items. Each value is mapped on its own (so a
    neighbouring input changes at most one item): with bounds, a float (Python's float syntax;
    ±inf is clamped by the sketch, NaN dropped); without, an integer (Python's int syntax) clamped
    into [0, 2^bits); anything else is dropped."""
    if integer:
        top = (1 << bits) - 1
        ints = []
        for s in texts:
            try:
                v = int(s)
            except ValueError:  # not an integer, or more digits than int() accepts
                continue
            ints.append(0 if v < 0 else top if v > top else v)
        return np.array(ints, dtype=np.uint64)
    reals = []
    for s in texts:
        try:
            v = float(s)
        except ValueError:
            continue
        if v == v:  # NaN has no place in the order
            reals.append(v)
    return np.array(reals, dtype=np.float64)


def _parquet_values(src, integer, bits, run_error, usage_error, display):
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError:
        raise run_error("install pyarrow to read Parquet (pip install pyarrow)") from None
    source = pa.BufferReader(sys.stdin.buffer.read()) if src.path == "-" else src.path
    try:
        pf = pq.ParquetFile(source)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise run_error(f"cannot read {display(src.path)} as Parquet: {str(exc).splitlines()[0]}") from None
    names = list(pf.schema_arrow.names)
    column = src.column if src.column is not None else (names[0] if len(names) == 1 else None)
    if column is None:
        raise usage_error(f"{display(src.path)} has {len(names)} columns; pick one with --column NAME")
    if column not in names:
        raise usage_error(f"no column {column!r} in {display(src.path)}")
    typ = pf.schema_arrow.field(column).type
    if not (pa.types.is_integer(typ) or pa.types.is_floating(typ)):
        raise run_error(f"column {column!r} has type {typ}; quantiles need a numeric column")
    if integer and pa.types.is_floating(typ):  # the schema's type, not the values, decides
        raise usage_error(f"column {column!r} has type {typ}; --universe-bits without --bounds needs an "
                          "integer column (pass --bounds LO,HI for real values)")
    top = (1 << bits) - 1
    for batch in pf.iter_batches(batch_size=src.chunk_size, columns=[column]):
        arr = pc.drop_null(batch.column(0))
        if not len(arr):
            continue
        v = arr.to_numpy(zero_copy_only=False)
        if integer:  # clamped into [0, 2^bits), like --bounds clamps real values
            if v.dtype.kind == "i":
                v = np.maximum(v, 0)
            v = np.minimum(v.astype(np.uint64), np.uint64(top))
            yield np.ascontiguousarray(v)
        else:
            v = v.astype(np.float64, copy=False)
            yield v[~np.isnan(v)]


def run(args, *, input_class, usage_error, run_error, warn, display, first_line, note_spent) -> int:
    """The command: validate everything, build the sketch, read, print. Helpers come from cli.py."""
    sketch, budget, qs, bounds, bits = _build_sketch(args, usage_error)
    if args.file is None and sys.stdin.isatty():
        raise usage_error("no input: give FILE, or '-' to read stdin")
    args.keys = "str"  # raw text; parsed here as numbers
    src = input_class(args)
    if args.seed is not None:
        warn("--seed makes the noise reproducible: this release is NOT secret (use for experiments only)")
    integer = bounds is None
    try:
        if src.format == "parquet":
            batches = _parquet_values(src, integer, bits, run_error, usage_error, display)
        else:
            batches = (_values(texts, integer, bits) for texts in src.texts())
        for values in batches:
            if len(values):
                sketch.update_many(values)
    except (ValueError, TypeError, OverflowError) as exc:  # pragma: no cover - the values are checked above
        raise run_error(first_line(exc)) from None

    released = sketch.release().sketch
    values = released.quantiles(qs)
    meta = released.privacy(delta=getattr(args, "delta", None))
    res = released.resolution
    _print_header(args, released, meta, display(src.path), bounds, res)
    note_spent(args, budget)
    rows = [(q, float(v) if bounds is not None else int(v)) for q, v in zip(qs, values)]
    if args.json:
        obj = {"mechanism": meta["mechanism"], "quantiles": [{"q": q, "value": v} for q, v in rows],
               "resolution": res, "bounds": list(bounds) if bounds else None, "universe_bits": bits,
               "noisy_total": released._total(), "privacy": meta}
        json.dump(obj, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.csv:
        print("q,value")
        for q, v in rows:
            print(f"{q:g},{v!r}" if bounds is not None else f"{q:g},{v}")
    else:
        width = max(len(f"{q:g}") for q, _ in rows)
        print(f"{'q':>{width}}  value")
        for q, v in rows:
            print(f"{q:>{width}g}  {v:.10g}" if bounds is not None else f"{q:>{width}g}  {v}")
    return 0


def _print_header(args, released, meta, source, bounds, res):
    if getattr(args, "quiet", False):
        return
    prog = "dpsketch"
    if meta["noise"] == "discrete_gaussian":
        priv = f"rho={meta['rho_used']:g} (zCDP, discrete Gaussian, {meta['noise_allocation']} allocation)"
    else:
        priv = f"epsilon={meta['epsilon_used']:g} (pure DP, discrete Laplace, {meta['noise_allocation']} allocation)"
    rng = f"values clamped to [{bounds[0]:g}, {bounds[1]:g}]" if bounds else f"integers in [0, 2^{meta['universe_bits']})"
    print(f"{prog}: PrivateDyadicCountSketch on {source}: {rng}; universe 2^{meta['universe_bits']}, "
          f"width {meta['width']}, depth {meta['depth']}, exact levels 1..{meta['exact_levels']}", file=sys.stderr)
    print(f"{prog}: {priv}; resolution {res:.6g}; quantile targets use the noisy total "
          f"{released._total():.0f} (n is not published)", file=sys.stderr)
    if meta.get("reproducible_not_secret"):
        print(f"{prog}: seeded: reproducible_not_secret=True", file=sys.stderr)
