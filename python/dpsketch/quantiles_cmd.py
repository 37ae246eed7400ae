"""``dpsketch quantiles``: private quantiles of a numeric column (the logic behind the command that
``cli.py`` defines). One PrivateDyadicCountSketch (docs/algorithms.md §6) is built, with noise, before
any input is read; values are fed in chunks; quantiles are read off the noisy hierarchy once.

Errors never echo input values (only line numbers), and the number of values clamped to --bounds
is not reported: it is a function of the data that the privacy budget does not cover.
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
    """Validate every parameter and build the private sketch (noise drawn now, before any input)."""
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
    try:
        sketch = PrivateDyadicCountSketch(
            bits, gamma=args.gamma, bounds=bounds, rho=args.rho, epsilon=args.epsilon,
            noise_allocation=args.noise_allocation, seed=args.seed,
        )
    except (ValueError, TypeError, OverflowError) as exc:
        raise usage_error(str(exc).splitlines()[0]) from None
    return sketch, qs, bounds, bits


def _values(texts, locate, integer, bits, run_error):
    """Parse a chunk of text values into floats (bounds) or uint64 items; one clear line on bad input."""
    if integer:
        out = np.empty(len(texts), dtype=np.uint64)
        top = 2**bits
        for i, s in enumerate(texts):
            try:
                v = int(s)
            except ValueError:
                raise run_error(f"{locate(i)} is not an integer (--universe-bits without --bounds expects "
                                "integers; pass --bounds LO,HI for real values)") from None
            if not 0 <= v < top:
                raise run_error(f"{locate(i)} is outside [0, 2^{bits}); raise --universe-bits or pass --bounds LO,HI")
            out[i] = v
        return out
    try:
        arr = np.array(texts, dtype=np.float64)
    except ValueError:
        for i, s in enumerate(texts):
            try:
                float(s)
            except ValueError:
                raise run_error(f"{locate(i)} is not a number") from None
        raise
    bad = np.flatnonzero(np.isnan(arr))
    if bad.size:
        raise run_error(f"{locate(int(bad[0]))} is NaN; drop or impute missing values first")
    return arr


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
    for batch in pf.iter_batches(batch_size=src.chunk_size, columns=[column]):
        arr = batch.column(0)
        if arr.null_count:
            src.skipped += arr.null_count
            arr = pc.drop_null(arr)
        if not len(arr):
            continue
        if integer:
            v = arr.to_numpy(zero_copy_only=False)
            if v.dtype.kind == "f" or (v.size and (v.min() < 0 or (bits < 64 and v.max() >= 2**bits))):
                raise run_error(f"column {column!r} holds values that are not integers in [0, 2^{bits}); "
                                "pass --bounds LO,HI or raise --universe-bits")
            yield np.ascontiguousarray(v.astype(np.uint64))
        else:
            v = arr.cast(pa.float64()).to_numpy(zero_copy_only=False)
            if np.isnan(v).any():
                raise run_error(f"column {column!r} holds NaN; drop or impute missing values first")
            yield v


def run(args, *, input_class, usage_error, run_error, note, warn, display, first_line) -> int:
    """The command: validate everything, build the sketch, read, print. Helpers come from cli.py."""
    sketch, qs, bounds, bits = _build_sketch(args, usage_error)
    if args.file is None and sys.stdin.isatty():
        raise usage_error("no input: give FILE, or '-' to read stdin")
    args.keys = "str"  # raw text; parsed here as numbers
    src = input_class(args)
    if args.seed is not None:
        warn("--seed makes the noise reproducible: this release is NOT secret (use for experiments only)")
    integer = bounds is None
    n_read = 0
    try:
        if src.format == "parquet":
            batches = _parquet_values(src, integer, bits, run_error, usage_error, display)
        else:
            gen = src._text_chunks() if src.format == "text" else src._csv_chunks()
            batches = (_values(items, locate, integer, bits, run_error) for items, locate in gen if items)
        for values in batches:
            sketch.update_many(values)
            n_read += len(values)
    except (ValueError, TypeError, OverflowError) as exc:
        raise run_error(first_line(exc)) from None
    if n_read == 0:
        raise run_error(f"{display(src.path)} has no values")
    if src.skipped:
        note(args, f"skipped {src.skipped:,} {src.skipped_what}")

    released = sketch.release()
    values = released.quantiles(qs)
    meta = released.privacy(delta=getattr(args, "delta", None))
    res = released.resolution
    _print_header(args, released, meta, display(src.path), bounds, res)
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
    if meta["noise"] == "gaussian":
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
