"""dpsketch on Apache Spark (PySpark): mergeable summaries built per partition with no per-row
Python, and private releases done once, on the driver (docs/distributed.md; docs/algorithms.md §8).

- :func:`summarize` -- the building block: every partition feeds Arrow batches straight into
  ``update_many`` (``mapInArrow``) and returns ``to_bytes()``; the driver merges them (tree order).
- :func:`heavy_hitters` -- ``route="exact"`` (the default): Spark's ``groupBy(key).count()``, noise
  and a threshold on the aggregated rows on the driver; ``route="counters"``: partition by key,
  PMG/DPSS per partition, union of the releases (parallel composition); ``route="sketch"``:
  per-partition non-private dyadic sketch, merge, noise once, hierarchical descent, and (string
  keys) a private label lookup pass.
- :func:`quantiles` -- merged dyadic sketch, noise once, quantile descent.
- :func:`windowed_heavy_hitters` -- one counters-route release per event-time window of a public
  range (batch); :func:`stream_heavy_hitters` -- the same series on Structured Streaming, each
  window released at its deadline on a public clock (docs/privacy.md §Windows "On Spark").

Privacy unit: one row (add/remove one row), or with ``privacy_id=`` one unit (all its rows):
:func:`heavy_hitters` and :func:`quantiles` then bound each unit's contribution in the JVM by a rule
that reads only that unit's rows and calibrate the noise for the bounded unit (docs/privacy.md
§Privacy unit). Requires the Spark extra: ``pip install ".[spark]"`` from the source tree.

Both releases take ``budget=``: a :class:`dpsketch.Budget`, or a budget file
(``dpsketch.Budget.open(path)``) that other jobs and ``dpsketch --budget FILE`` runs on the same
data draw from too. It is charged on the driver, before any noise is drawn; a refusal spends nothing.
"""

from __future__ import annotations

import pickle
from typing import Any, Callable

import numpy as np

from . import _core
from .accounting.budget import Budget, charging
from .accounting.calibration import check_privacy_params
from .distributed import SketchRoute, charge_windows, check_windows, release_partitions, release_windows
from .mechanisms.partitioned import counters_calibration
from .mechanisms.dpss import check_cut
from .sketches.dyadic import DyadicCountSketch, PrivateDyadicCountSketch
from .release import Release, sketch_quantiles_release, with_metadata
from .units import Person, Row, as_unit
from .sketches.linear import CountMin, CountSketch
from .sketches.counters import MisraGries, SpaceSaving
from ._validation import check_int, validate_params
from .time.windows import NS, WallClockReleaser, Windowed, assign, parse_duration, parse_instant, times_ns
from .errors import InternalError, MissingDependencyError, ParameterError, ParameterTypeError
from .mechanisms.top_k import check_top_k, top_k_capacity

__all__ = ["summarize", "heavy_hitters", "weighted_heavy_hitters", "quantiles", "windowed_heavy_hitters",
           "stream_heavy_hitters", "WindowedStream"]

_MERGEABLE = (MisraGries, SpaceSaving, CountMin, CountSketch, DyadicCountSketch)


# -- plumbing ------------------------------------------------------------------------------------

def _require_spark():
    try:
        import pyspark  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise MissingDependencyError('dpsketch.spark needs PySpark: pip install ".[spark]" in the dpsketch source tree (or pip install pyspark)') from e


def _part_batch(pa, out: bytes | None, error: BaseException | None = None, pid: int | None = None):
    """One task's output row: its bytes, or the exception it raised, pickled (our own errors are
    data, so Spark does not retry a deterministic failure and the driver re-raises the same
    exception object)."""
    cols = {"part": pa.array([out], type=pa.binary()),
            "error": pa.array([None if error is None else pickle.dumps(error)], type=pa.binary())}
    if pid is not None:
        cols = {"pid": pa.array([pid], type=pa.int64()), **cols}
    return pa.RecordBatch.from_arrays(list(cols.values()), names=list(cols))


def _collect_parts(df):
    """collect() of task outputs; a task that failed with one of our errors re-raises it here."""
    rows = df.collect()
    for r in rows:
        if r["error"] is not None:
            raise pickle.loads(r["error"])
    return rows


def _column_kind(df, column: str) -> str:
    """'int', 'str' or 'float' for a supported column type; TypeError otherwise."""
    from pyspark.sql import types as T

    if not isinstance(column, str):
        raise ParameterTypeError(f"column must be a column name (str), got {type(column).__name__}")
    if column not in df.columns:
        raise ParameterError(f"the DataFrame has no column named {column!r}; its columns are {df.columns}")
    t = df.schema[column].dataType
    if isinstance(t, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
        return "int"
    if isinstance(t, T.StringType):
        return "str"
    if isinstance(t, (T.DoubleType, T.FloatType)):
        return "float"
    raise ParameterTypeError(
        f"column {column!r} has type {t.simpleString()}; dpsketch.spark takes integer or string keys "
        "(and float values for quantiles with bounds=); cast the column first"
    )


def _batch_values(batch, kind: str):
    """The batch's only column without nulls (skipped: never counted, never reported), as an int64
    numpy array, a float64 array, or a pyarrow string array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = batch.column(0)
    if col.null_count:
        col = pc.drop_null(col)
    if kind == "int":
        return col.cast(pa.int64()).to_numpy(zero_copy_only=False)
    if kind == "float":
        return col.cast(pa.float64()).to_numpy(zero_copy_only=False)
    return col


def _feed(summary, values) -> None:
    if len(values):
        summary.update_many(values)


def _merge_tree(objs: list):
    """Merge in a balanced binary tree (pairs, then pairs of pairs): O(log P) depth."""
    objs = list(objs)
    while len(objs) > 1:
        nxt = []
        for i in range(0, len(objs) - 1, 2):
            objs[i].merge(objs[i + 1])
            nxt.append(objs[i])
        if len(objs) % 2:
            nxt.append(objs[-1])
        objs = nxt
    return objs[0]


# -- summarize -----------------------------------------------------------------------------------

def summarize(df, column: str, factory: Callable[[], Any]):
    """Build one summary of ``df[column]`` on Spark: each partition feeds its Arrow batches into
    ``update_many`` (``mapInArrow``; no per-row Python) and returns ``to_bytes()``; the driver
    merges the parts in a balanced tree. Returns the merged, NON-private summary.

    ``factory()`` must return an empty MisraGries, SpaceSaving, CountMin, CountSketch or
    DyadicCountSketch. It is called once, on the driver; its bytes are shipped to every task, so
    all parts share the same hash seeds (a random seed is drawn once, not per partition).
    Nulls are skipped. A failed and retried task contributes once (Spark keeps only the output of
    the successful attempt). Counter summaries come back merged (docs/algorithms.md §8) and cannot
    be released privately; linear sketches can (``PrivateCountSketch.from_sketch`` & co).

    :param df: a Spark DataFrame
    :param column: the column to summarise
    :param factory: returns an empty MisraGries, SpaceSaving, CountMin, CountSketch or DyadicCountSketch
    """
    _require_spark()
    proto = factory()
    if not isinstance(proto, _MERGEABLE):
        raise ParameterTypeError(
            "factory() must return an empty MisraGries, SpaceSaving, CountMin, CountSketch or DyadicCountSketch, "
            f"got {type(proto).__name__} (private objects do not merge: summarize non-private ones and privatise "
            "once with from_sketch)"
        )
    if proto.n != 0:
        raise ParameterError("factory() must return an empty summary")
    kind = _column_kind(df, column)
    if isinstance(proto, DyadicCountSketch):
        if kind == "str":
            raise ParameterTypeError("a DyadicCountSketch takes numbers; use heavy_hitters(route='sketch') for string keys")
        if kind == "float" and proto.bounds is None:
            raise ParameterTypeError(f"column {column!r} holds floats: build the DyadicCountSketch with bounds=(lo, hi)")
    elif kind == "float":
        raise ParameterTypeError(f"column {column!r} holds floats; counter summaries and sketches take int or str keys")
    parts = _summary_parts(df.select(column), kind, type(proto), proto.to_bytes())
    objs = [type(proto).from_bytes(b) for b in parts]
    out = _merge_tree(objs) if objs else proto
    if isinstance(out, (MisraGries, SpaceSaving)) and not out.merged:
        # Even a single part is marked merged: its input order was Spark's row order, which can
        # depend on other rows (e.g. round-robin repartitioning), so PMG/DPSS must not release it.
        out.merge(type(proto).from_bytes(proto.to_bytes()))
    return out


_RAW, _LZ4 = b"\x00", b"\x01"  # how a part's bytes travel: as they are, or LZ4 with the raw length first


def _pack(pa, raw: bytes) -> bytes:
    """A part's bytes for the trip to the driver: LZ4-compressed when the codec is there (a sketch's
    cells are mostly zero where the keys are few, e.g. the upper levels of a 64-bit dyadic sketch:
    9.9 MB shrink to about 0.5 MB at width 8000). The driver gets the same bytes back (_unpack)."""
    if pa.Codec.is_available("lz4"):
        return _LZ4 + len(raw).to_bytes(8, "little") + pa.compress(raw, codec="lz4", asbytes=True)
    return _RAW + raw


def _unpack(packed: bytes) -> bytes:
    if packed[:1] == _RAW:
        return packed[1:]
    import pyarrow as pa

    size = int.from_bytes(packed[1:9], "little")
    return pa.decompress(packed[9:], decompressed_size=size, codec="lz4", asbytes=True)


def _parts(df, cls, proto_bytes, fill) -> list:
    """``fill(summary, arrow batches)`` on every partition of ``df`` (mapInArrow), each starting from
    the prototype's bytes; the parts' bytes come back to the driver (compressed on the way), a
    task's exception pickled. The prototype travels compressed too (an empty sketch is all zeros)."""
    import pyarrow as pa

    packed_proto = _pack(pa, proto_bytes)

    def build(batches):
        import pyarrow as pa

        try:
            s = cls.from_bytes(_unpack(packed_proto))
            fill(s, batches)
            out = _pack(pa, s.to_bytes())
        except (ValueError, TypeError, OverflowError) as e:
            yield _part_batch(pa, None, e)
            return
        yield _part_batch(pa, out)

    return [_unpack(r["part"]) for r in _collect_parts(df.mapInArrow(build, "part binary, error binary"))]


def _summary_parts(df, kind, cls, proto_bytes) -> list:
    def fill(s, batches):
        if cls is DyadicCountSketch and kind == "int" and s.bounds is None:
            _feed_aggregated(s, batches, twos_complement=False)  # linear: identical cells
        else:
            for b in batches:
                _feed(s, _batch_values(b, kind))

    return _parts(df, cls, proto_bytes, fill)


# -- heavy hitters -------------------------------------------------------------------------------

@validate_params(["epsilon", "delta", "k", "top_k", "seed", "capacity", "length_epsilon", "length_delta", "max_keys_per_unit"])
def heavy_hitters(df, column: str, *, k: int | None = None, epsilon: float, delta: float, route: str | None = None,
                  summary: str = "spacesaving", capacity: int | None = None, num_partitions: int | None = None,
                  rho_fraction: float = 0.9, gamma: float | None = None, width: int | None = None,
                  depth: int | None = None, public_length: bool = False, length_epsilon: float | None = None,
                  length_delta: float | None = None, seed: int | None = None, budget: Budget | None = None,
                  privacy_id: str | None = None, max_keys_per_unit: int | None = None, max_rows_per_key: int = 1,
                  noise: str = "gaussian", selection: str | None = None, cut: str | None = "n/k",
                  passes: int = 1, top_k: int | None = None, unit: Any = None, method: str = "auto") -> Release:
    """(ε, δ)-DP heavy hitters of ``df[column]`` (nulls skipped). The reported (ε, δ) are the ones
    asked for; ``budget`` (a :class:`dpsketch.Budget`) is charged them before any noise is drawn.

    The privacy unit is one row, or with ``privacy_id`` (a column) one unit: all its rows. Then
    ``max_keys_per_unit`` (m) and ``max_rows_per_key`` (c) bound each unit's contribution, and the
    route is ``"exact"`` (docs/privacy.md §Privacy unit): in the JVM, a groupBy on (unit, key), the
    m pairs with the smallest xxhash64(salt, unit, key) per unit (a window; ties by key), at most c
    rows each, and a groupBy on key; on the driver :func:`dpsketch.privacy_unit.release_bounded_counts`
    (``noise="gaussian"`` or ``"laplace"``, ``selection="gumbel"`` with ``k`` for exactly k ranked keys).
    Without ``privacy_id`` the routes below take ``k`` (required); the route is chosen as follows.

    Default route (``route=None``): ``"exact"`` -- unless a parameter of another route is given:
    a sketch shape (``width``, ``depth``, ``gamma``, ``rho_fraction``) asks for the sketch route
    (bounded memory everywhere, no shuffle), a counters parameter (``summary``, ``capacity``,
    ``num_partitions``, ``passes``, a length option) for the counters route. The exact route is
    the fastest on one machine and the most accurate; it shuffles one row per distinct key and
    partition and collects one row per distinct key to the driver. Where the distinct keys do not
    fit in the driver's memory, or no shuffle is wanted, pass ``route="sketch"``.

    ``route="exact"`` (docs/privacy.md §Exact route, one row): Spark's ``groupBy(key).count()``
    in the JVM; on the driver :func:`dpsketch.distributed.release_exact_counts`: every key's count
    + discrete Gaussian (``noise="gaussian"``, ℓ2 = 1) or discrete Laplace (``noise="laplace"``)
    noise, released iff above τ, the threshold a key of count 1 clears with probability at most
    δ/2 (Laplace: δ). No length is read or published. ``cut="n/k"`` keeps the noisy values >= M/k,
    M the sum of the released noisy values (post-processing); ``cut=None`` every key above τ.

    ``route="counters"`` (docs/algorithms.md §8, "partition by key"): rows are repartitioned by a
    hash of the key alone, each partition is sorted by key (the summary's input order is then a
    function of the partition's multiset, never of row positions) and summarised with SpaceSaving
    (``summary="spacesaving"``, DPSS; ``capacity`` k̃_p default 2k) or Misra-Gries (``"misragries"``,
    PMG); the driver releases every partition with one length bound for the whole data set
    (:func:`dpsketch.distributed.release_partitions`: n̂ from ``length_epsilon``/``length_delta``,
    or the exact total with ``public_length=True``, replace-one neighbours). ``num_partitions``
    defaults to min(spark.sql.shuffle.partitions, the session's default parallelism): one task per
    core rather than Spark's 200 shuffle partitions; the count comes from configuration, never from
    the data (docs/privacy.md §Counters route). Seeded results are reproducible across clusters with
    the same count (set spark.default.parallelism, or pass ``num_partitions``).

    ``cut`` (counters route with DPSS): ``"n/k"``, the default, keeps only noisy values >= n̂/k;
    None keeps every value above its partition's τ_p (docs/privacy.md §DPSS "The n/k cut").
    ``passes=2`` (counters route with DPSS): a second Spark job counts every key the partitions'
    SpaceSavings track exactly, and each partition releases those exact counts (docs/privacy.md
    §DPSS "Two passes"; same threshold and (ε, δ)). The DataFrame must give the same rows twice
    (a deterministic source, or cache it).

    ``top_k=N`` (instead of ``k``; counters route): exactly N items whenever N pass, the N
    largest noisy values of the union (docs/privacy.md §Exact-k): each partition gets a capacity
    of 64·N (or ``capacity``) and k = that capacity, DPSS's lowest threshold (PMG: the cut n̂/k at
    that k); ``cut`` does not apply. With ``privacy_id``, ``top_k=N`` is ``k=N`` of the Gumbel
    selection (``selection="gumbel"``).

    ``route="sketch"``: see docs/distributed.md §Sketch route -- per-partition non-private
    DyadicCountSketch over the keys (int64 keys as themselves, string keys as salted 64-bit
    fingerprints), merged on the driver, Gaussian noise once (ρ-zCDP, ρ from ``rho_fraction``·ε
    and δ/3), hierarchical descent with thresholds from the sketch's own noisy total (no length
    budget needed); for string keys a lookup pass counts the rows of the candidates by 128-bit
    fingerprint (a second salted xxhash64 next to the sketch's) with their labels, and a label is
    released only if its count + DLap(1/ε_L) clears τ_L (ε_L = (1 − rho_fraction)·ε, P(label of
    count 1 released) ≤ δ/3); 128-bit fingerprint collisions are a failure event of probability
    ≤ n²/2^129, bounded by δ/3 (δ = 10^−6 admits about 10^16 rows).

    Sketch shape: ``width``/``depth`` per CountSketch level, or Zhao's rule from ``gamma``; by
    default width = max(1024, 8k) and depth = 3 (each of the 64 levels costs depth counter updates
    per distinct key and partition, and depth·width noisy cells on the driver).

    ``seed`` makes all noise reproducible and NOT secret (experiments/tests only).

    :param df: a Spark DataFrame
    :param column: the column of ``df`` holding the keys
    :param epsilon: ε of the release's (ε, δ)-DP guarantee
    :param delta: δ of the release's (ε, δ)-DP guarantee, in (0, 1)
    :param route: ``'exact'``, ``'counters'`` or ``'sketch'`` (default: chosen as described above)
    :param public_length: treat the exact stream length as public (replace-one neighbours) instead of
        paying for a noisy one
    :param noise: the exact route's noise: ``'gaussian'`` (default) or ``'laplace'``
    :param selection: ``'gumbel'`` with ``privacy_id`` and ``k``: the k passing keys a Gumbel selection
        ranks first
    :param top_k: release exactly N items (the N largest noisy values) whenever N pass the threshold
    :param unit: the privacy unit, as the front doors take it: ``dpsketch.Row()`` (default; with
        ``public_length=True`` the papers' model) or ``dpsketch.Person("id_column", max_keys=m,
        max_rows_per_key=c)`` (the exact route over bounded contributions). The release reports it
        in ``metadata["unit"]``. ``privacy_id``, ``max_keys_per_unit`` and ``max_rows_per_key`` are
        the older spelling of the same
    :param method: the front door's names: ``'dpss'`` (route ``'counters'`` with SpaceSaving),
        ``'dpss_two_pass'`` (the same with ``passes=2``), ``'pmg'`` (route ``'counters'`` with
        Misra-Gries), ``'exact'``, plus ``'sketch'`` (the bounded-memory sketch route); ``'auto'``
        (default) chooses as ``route=None`` does. The release reports it in ``metadata["method"]``
    """
    _require_spark()
    u = _heavy_hitter_unit(unit, privacy_id, max_keys_per_unit, max_rows_per_key, public_length)
    if isinstance(u, Person):
        privacy_id, max_keys_per_unit, max_rows_per_key = u.id_column, u.max_keys, u.max_rows_per_key
    else:
        public_length = u.public_length
    route, summary, passes = _method_route(method, route, summary, passes, u)
    rel = _heavy_hitters(
        df, column, k=k, epsilon=epsilon, delta=delta, route=route, summary=summary, capacity=capacity,
        num_partitions=num_partitions, rho_fraction=rho_fraction, gamma=gamma, width=width, depth=depth,
        public_length=public_length, length_epsilon=length_epsilon, length_delta=length_delta, seed=seed,
        budget=budget, privacy_id=privacy_id, max_keys_per_unit=max_keys_per_unit,
        max_rows_per_key=max_rows_per_key, noise=noise, selection=selection, cut=cut, passes=passes,
        top_k=top_k)
    ran = rel.metadata.get("route")
    if ran == "counters":
        ran = "pmg" if summary == "misragries" else "dpss_two_pass" if passes == 2 else "dpss"
    return with_metadata(rel, {"unit": u.describe(), "method": ran})


# The front door's method names on Spark: (route, summary, passes).
_METHODS = {"dpss": ("counters", "spacesaving", 1), "dpss_two_pass": ("counters", "spacesaving", 2),
            "pmg": ("counters", "misragries", 1), "exact": ("exact", "spacesaving", 1),
            "sketch": ("sketch", "spacesaving", 1)}


def _method_route(method, route, summary, passes, unit):
    """(route, summary, passes) of ``method=`` (the front door's names), or the ones given."""
    from ._validation import Options, check

    m = check("method", method, Options(("auto", *_METHODS)))
    if m == "auto":
        return route, summary, passes
    if route is not None or summary != "spacesaving" or passes != 1:
        raise ParameterError(f"method={m!r} sets the route, the summary and the passes; pass method= or "
                             "route=/summary=/passes=, not both")
    if isinstance(unit, Person) and m != "exact":
        raise ParameterError(f"method={m!r} protects one row; with unit=Person(...) Spark runs method='exact'")
    return _METHODS[m]


def _spelled_twice(what: str) -> ParameterError:
    return ParameterError(f"pass the privacy unit once: unit=dpsketch.{what} or the older keywords, not both")


def _heavy_hitter_unit(unit, privacy_id, m, c, public_length):
    """The privacy unit of :func:`heavy_hitters` from ``unit=`` or the older keywords."""
    if unit is None:
        if privacy_id is None:
            if m is not None:
                raise ParameterError("max_keys_per_unit bounds a privacy unit: pass privacy_id= (the unit's column) "
                                     "too, or unit=dpsketch.Person('id_column', max_keys=m)")
            return Row(public_length=bool(public_length))
        if m is None:
            raise ParameterError("privacy_id needs max_keys_per_unit=m (distinct keys a unit may contribute); "
                                 "or pass unit=dpsketch.Person(privacy_id, max_keys=m)")
        _warn_old_unit_keywords("privacy_id=/max_keys_per_unit=", f"Person({privacy_id!r}, max_keys=m)")
        return Person(privacy_id, max_keys=m, max_rows_per_key=c)
    u = as_unit(unit)
    if privacy_id is not None or m is not None or c != 1 or public_length:
        raise _spelled_twice("Row(...)" if isinstance(u, Row) else "Person(...)")
    if isinstance(u, Person):
        if u.id_column is None:
            raise ParameterError("on Spark, Person(id=...) names the DataFrame's column of privacy ids")
        if u.max_keys is None:
            raise ParameterError("Spark's person-level heavy hitters bound each person's distinct keys: pass "
                                 "Person(id_column, max_keys=m) (max_rows is the in-memory bounded-memory route)")
    return u


def _warn_old_unit_keywords(old: str, new: str) -> None:
    import warnings

    warnings.warn(f"{old} is the older spelling of the privacy unit; pass unit=dpsketch.{new}",
                  DeprecationWarning, stacklevel=3)


def _heavy_hitters(df, column: str, *, k, epsilon, delta, route, summary, capacity, num_partitions, rho_fraction,
                   gamma, width, depth, public_length, length_epsilon, length_delta, seed, budget, privacy_id,
                   max_keys_per_unit, max_rows_per_key, noise, selection, cut, passes, top_k) -> Release:
    if top_k is not None:
        if k is not None:
            raise ParameterError("pass k= or top_k= (exactly N items), not both")
        k = check_top_k(top_k)
    if privacy_id is not None:
        if route not in (None, "exact"):
            raise ParameterError(f"with privacy_id the route is 'exact' (bounded per-key counts), got route={route!r}")
        if public_length or length_epsilon is not None or length_delta is not None:
            raise ParameterError("the exact route reads no stream length: public_length/length_epsilon/length_delta do not apply")
        if max_keys_per_unit is None:
            raise ParameterError("privacy_id needs max_keys_per_unit=m (distinct keys a unit may contribute)")
        return _unit_route(df, column, privacy_id, max_keys_per_unit, max_rows_per_key, epsilon, delta, noise, selection,
                           k, seed, budget)
    if max_keys_per_unit is not None or selection is not None:
        raise ParameterError("max_keys_per_unit and selection bound a privacy unit: pass privacy_id= (the unit's column) too")
    if route is None:
        route = "counters" if top_k is not None else _default_route(
            summary=summary, capacity=capacity, num_partitions=num_partitions, passes=passes,
            public_length=public_length, length_epsilon=length_epsilon, length_delta=length_delta,
            rho_fraction=rho_fraction, gamma=gamma, width=width, depth=depth)
    if top_k is not None:  # docs/privacy.md §Exact-k: k = capacity, the lowest threshold
        if route != "counters":
            raise ParameterError("top_k applies to route='counters' (or to privacy_id= with selection='gumbel')")
        capacity = top_k_capacity(check_top_k(top_k), capacity)
        k, cut = capacity, None if summary == "spacesaving" else "n/k"
    if route == "exact":
        return _exact_route(df, column, k, epsilon, delta, noise, cut, seed, budget, summary=summary, capacity=capacity,
                            num_partitions=num_partitions, passes=passes, public_length=public_length,
                            length_epsilon=length_epsilon, length_delta=length_delta, rho_fraction=rho_fraction,
                            gamma=gamma, width=width, depth=depth)
    if noise != "gaussian":
        raise ParameterError(f"noise= chooses the exact route's noise; route={route!r} has its own")
    if cut is None and (route != "counters" or summary != "spacesaving"):
        raise ParameterError("cut=None applies to the exact route and to route='counters' with summary='spacesaving' (DPSS)")
    if passes not in (1, 2) or isinstance(passes, bool):
        raise ParameterError(f"passes must be 1 or 2, got {passes!r}")
    if passes == 2 and (route != "counters" or summary != "spacesaving"):
        raise ParameterError("passes=2 applies to route='counters' with summary='spacesaving' (DPSS) only")
    if k is None:
        raise ParameterError(f"route={route!r} needs k= (the heavy-hitter cut n/k)")
    kk = check_int("k", k, 1, 2**40)
    if gamma is None and width is None and depth is None:
        width, depth = max(1024, 8 * kk), 3
    eps, dlt = check_privacy_params(epsilon, delta)
    kind = _column_kind(df, column)
    if kind == "float":
        raise ParameterTypeError(f"column {column!r} holds floats; heavy hitters need int or str keys (cast or bucket first)")
    if seed is not None:
        seed = check_int("seed", seed, 0, 2**64 - 1)
    if route == "counters":
        return _counters_route(df, column, kind, kk, eps, dlt, summary, capacity, num_partitions, seed, budget,
                               public_length, length_epsilon, length_delta, cut, passes, top_k)
    if route == "sketch":
        if public_length or length_epsilon is not None or length_delta is not None:
            raise ParameterError("route='sketch' reads its length from the noisy sketch itself (no length budget); "
                             "public_length, length_epsilon and length_delta apply to route='counters'")
        return _sketch_route(df, column, kind, kk, eps, dlt, rho_fraction, gamma, width, depth, seed, budget)
    raise ParameterError(f"route must be 'exact', 'counters' or 'sketch', got {route!r}")


_SKETCH_DEFAULTS = {"rho_fraction": 0.9, "gamma": None, "width": None, "depth": None}
_COUNTERS_DEFAULTS = {"summary": "spacesaving", "capacity": None, "num_partitions": None, "passes": 1,
                      "public_length": False, "length_epsilon": None, "length_delta": None}


def _asked(defaults: dict, given: dict) -> list:
    """The parameters of ``given`` that differ from their defaults (what the caller asked for)."""
    return [name for name, v in defaults.items() if given[name] is not v and given[name] != v]


def _default_route(**given) -> str:
    """route=None: the sketch route when a sketch parameter is given (bounded memory, no shuffle), the
    counters route when a counters parameter is, otherwise the exact route (Spark's own aggregation)."""
    sketch = _asked(_SKETCH_DEFAULTS, given)
    counters = _asked(_COUNTERS_DEFAULTS, given)
    if sketch and counters:
        raise ParameterError(f"{sketch} belong to route='sketch' and {counters} to route='counters'; pass route= to choose")
    return "sketch" if sketch else "counters" if counters else "exact"


def _exact_route(df, column, k, epsilon, delta, noise, cut, seed, budget, **others) -> Release:
    """The exact route (docs/privacy.md §Exact route, one row): Spark's ``groupBy(key).count()`` in the
    JVM, the aggregated rows (one per distinct key) to the driver as Arrow, and the noise and the
    threshold there (:func:`dpsketch.distributed.release_exact_counts`)."""
    from .distributed import exact_counts_plan, release_exact_counts

    wrong = _asked(_SKETCH_DEFAULTS, others) + _asked(_COUNTERS_DEFAULTS, others)
    if wrong:
        raise ParameterError(f"{wrong} do not apply to the exact route (it reads no length and builds no summary); "
                         "pass route='counters' or route='sketch'")
    if k is None:
        raise ParameterError("route='exact' needs k= (the heavy-hitter cut; cut=None keeps every key above τ)")
    kk = check_int("k", k, 1, 2**40)
    mechanism, plan = exact_counts_plan(epsilon, delta, noise)
    check_cut(cut)
    if seed is not None:
        seed = check_int("seed", seed, 0, 2**64 - 1)
    kind = _column_kind(df, column)
    if kind == "float":
        raise ParameterTypeError(f"column {column!r} holds floats; heavy hitters need int or str keys (cast or bucket first)")
    # Every parameter is checked and the budget charged before Spark reads a row (a refusal runs no job).
    with charging(budget, mechanism, epsilon=plan["epsilon"], delta=plan["delta"]):
        pass
    keys, counts = _key_counts(df, column)
    if kind == "int":
        keys = keys.astype(np.int64, copy=False)
    rel = release_exact_counts(keys, counts, k=kk, epsilon=epsilon, delta=delta, noise=noise, cut=cut, seed=seed)
    rel.metadata.update(front_end="spark", aggregation="Spark: groupBy(key).count() in the JVM; the noise on the driver")
    return rel


def _key_counts(df, column):
    """(keys, counts) of ``groupBy(column).count()`` without nulls, collected as Arrow."""
    from pyspark.sql import functions as F

    counts = df.select(F.col(column).alias("k")).where(F.col("k").isNotNull()).groupBy("k").count()
    if hasattr(counts, "toArrow"):
        table = counts.toArrow()
        return (table.column("k").to_numpy(zero_copy_only=False),
                table.column("count").to_numpy(zero_copy_only=False))
    pdf = counts.toPandas()  # pragma: no cover - Spark < 4 has no DataFrame.toArrow
    return pdf["k"].to_numpy(), pdf["count"].to_numpy()


def _unit_bounded_counts(df, column, privacy_id, m, c, salt):
    """(keys, bounded counts) computed by Spark: per unit the m (unit, key) pairs with the smallest
    xxhash64(salt, unit, key), ties by key, at most c rows each, summed per key."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    pairs = (df.select(F.col(column).alias("k"), F.col(privacy_id).alias("u"))
             .where(F.col("k").isNotNull() & F.col("u").isNotNull())
             .groupBy("u", "k").agg(F.count(F.lit(1)).alias("rows")))
    rank = Window.partitionBy("u").orderBy(F.xxhash64(F.lit(salt), F.col("u"), F.col("k")), F.col("k"))
    counts = (pairs.withColumn("r", F.row_number().over(rank)).where(F.col("r") <= m)
              .groupBy("k").agg(F.sum(F.least(F.col("rows"), F.lit(c))).alias("n")))
    if hasattr(counts, "toArrow"):
        table = counts.toArrow()
        return table.column("k").to_numpy(zero_copy_only=False), table.column("n").to_numpy(zero_copy_only=False)
    pdf = counts.toPandas()  # pragma: no cover - Spark < 4 has no DataFrame.toArrow
    return pdf["k"].to_numpy(), pdf["n"].to_numpy()


def _unit_route(df, column, privacy_id, m, c, epsilon, delta, noise, selection, k, seed, budget) -> Release:
    """User-level heavy hitters (docs/privacy.md §Privacy unit): contribution bounding and per-key
    sums as Spark aggregations (no per-row Python), the exact route's noise and threshold on the
    driver over the bounded per-key counts."""
    from . import _seeds
    from .mechanisms.unit_level import (_bounded_from_aggregates, _check_bounds, _exact_strs, release_bounded_counts)

    mm, cc = _check_bounds(m, c)
    check_privacy_params(epsilon, delta)
    kind = _column_kind(df, column)
    if kind == "float":
        raise ParameterTypeError(f"column {column!r} holds floats; heavy hitters need int or str keys (cast or bucket first)")
    if privacy_id not in df.columns:
        raise ParameterError(f"no column {privacy_id!r} for privacy_id")
    salt = _seeds.rng(seed, "salt")[0].next_u64() & ((1 << 63) - 1)
    keys, n = _unit_bounded_counts(df, column, privacy_id, mm, cc, salt)
    keys = _exact_strs(keys) if kind == "str" else keys.astype(np.int64)  # keys differing by a trailing NUL stay two
    bounded = _bounded_from_aggregates(keys, n.astype(np.int64), mm, cc)
    rel = release_bounded_counts(bounded, epsilon=epsilon, delta=delta, noise=noise, selection=selection, k=k, seed=seed,
                                 budget=budget)
    rel.metadata.update(front_end="spark", bounding="Spark: groupBy(unit, key); per unit the m smallest "
                        "xxhash64(salt, unit, key) (ties by key); <= c rows each; groupBy(key)")
    return rel


def weighted_heavy_hitters(df, column: str, *, unit, epsilon: float, delta: float, counts: bool = True,
                           seed: int | None = None, budget=None) -> Release:
    """User-level key selection by weighted Gaussian scores (docs/mechanisms/person-weighted.md),
    aggregated in the JVM: per (unit, key) deduplicated, per unit the m pairs with the smallest
    xxhash64(salt, unit, key) (the exact route's Spark rule), each unit's weight from its kept
    count, weights and bounded counts summed per key; the noise and threshold on the driver.

    :param df: a Spark DataFrame
    :param column: the key column
    :param unit: ``dpsketch.Person("id column", max_keys=m)``
    :param epsilon: ε of the release
    :param delta: δ of the release
    :param counts: also release the selected keys' noisy bounded counts
    :param seed: reproducible salt and noise, NOT secret
    :param budget: a :class:`dpsketch.Budget` charged before any noise is drawn
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from . import _seeds
    from .mechanisms.unit_level import _check_bounds, _exact_strs
    from .mechanisms.unit_weighted import _weighted_plan, release_weighted, scores_from_aggregates, spark_weights
    from .units import Person

    if not isinstance(unit, Person) or unit.id_column is None or unit.max_keys is None:
        raise ParameterError("weighted_heavy_hitters takes unit=dpsketch.Person('id column', max_keys=m)")
    mm, cc = _check_bounds(unit.max_keys, unit.max_rows_per_key)
    _weighted_plan(epsilon, delta, mm, cc, bool(counts), 0.5)  # every parameter checked before Spark reads a row
    kind = _column_kind(df, column)
    if kind == "float":
        raise ParameterTypeError(f"column {column!r} holds floats; heavy hitters need int or str keys")
    if unit.id_column not in df.columns:
        raise ParameterError(f"no column {unit.id_column!r} for the privacy id")
    salt = _seeds.rng(seed, "salt")[0].next_u64() & ((1 << 63) - 1)
    pairs = (df.select(F.col(column).alias("k"), F.col(unit.id_column).alias("u"))
             .where(F.col("k").isNotNull() & F.col("u").isNotNull())
             .groupBy("u", "k").agg(F.count(F.lit(1)).alias("rows")))
    rank = Window.partitionBy("u").orderBy(F.xxhash64(F.lit(salt), F.col("u"), F.col("k")), F.col("k"))
    kept = (pairs.withColumn("r", F.row_number().over(rank)).where(F.col("r") <= mm)
            .withColumn("s", F.count(F.lit(1)).over(Window.partitionBy("u"))))
    agg = kept.groupBy("k").agg(F.sum(spark_weights(F, F.col("s"))).alias("w"),
                                F.sum(F.least(F.col("rows"), F.lit(cc))).alias("n"))
    pdf = agg.toPandas()
    keys = pdf["k"].to_numpy()
    keys = _exact_strs(keys) if kind == "str" else keys.astype(np.int64)
    scored = scores_from_aggregates(keys, pdf["w"].to_numpy(), pdf["n"].to_numpy(), mm, cc)
    rel = release_weighted(scored, epsilon=epsilon, delta=delta, counts=counts, seed=seed, budget=budget)
    rel.metadata.update(front_end="spark", unit=unit.describe(),
                        bounding="Spark: groupBy(unit, key); per unit the m smallest xxhash64(salt, unit, key) "
                                 "(ties by key); weight floor(W/sqrt(kept)); <= c rows each; groupBy(key)")
    return rel


def _counters_route(df, column, kind, k, eps, dlt, summary, capacity, num_partitions, seed, budget,
                    public_length, length_epsilon, length_delta, cut="n/k", passes=1, top_k=None) -> Release:
    from pyspark.sql import functions as F

    if summary not in ("spacesaving", "misragries"):
        raise ParameterError(f"summary must be 'spacesaving' (DPSS) or 'misragries' (PMG), got {summary!r}")
    kt = 2 * k if capacity is None else check_int("capacity", capacity, 1, _core.MAX_CAPACITY)
    if summary == "spacesaving" and kt < k:
        raise ParameterError(f"DPSS needs capacity >= k (got {kt} < {k}); the default is 2k")
    # Every parameter is checked (and the budget asked) before Spark reads a row.
    counters_calibration(summary, eps, dlt, public_length=public_length, length_epsilon=length_epsilon,
                         length_delta=length_delta)
    parts_n = (_counters_partitions(df.sparkSession) if num_partitions is None
               else check_int("num_partitions", num_partitions, 1, 1 << 20))
    col = F.col(column)
    # Partition by Spark's hash of the key alone (§8: never by position), then sort inside each
    # partition so the summary's input order depends only on the partition's multiset.
    keyed = df.select(column).where(col.isNotNull()).repartition(parts_n, col).sortWithinPartitions(col)
    cls = SpaceSaving if summary == "spacesaving" else MisraGries
    rows = _collect_parts(keyed.mapInArrow(_partition_summary_fn(kind, cls, kt), "pid long, part binary, error binary"))
    parts = _all_partitions(rows, parts_n, cls, lambda: cls(kt, key_type=kind))
    exact = _exact_counts(df, column, kind, parts) if passes == 2 else None
    return release_partitions(parts, k=k, epsilon=eps, delta=dlt, public_length=public_length,
                              length_epsilon=length_epsilon, length_delta=length_delta, seed=seed, budget=budget,
                              partition_ids=list(range(parts_n)), cut=cut, exact_counts=exact, top_k=top_k)


def _all_partitions(rows, parts_n: int, cls, empty) -> list:
    """One summary per key partition 0 .. parts_n − 1, an ``empty()`` one standing for a partition
    that returned no row. Which tasks run is the data's business (adaptive query execution runs
    none on an empty shuffle), so the release always covers all parts_n partitions and its
    ``partitions`` says nothing about the rows (docs/privacy.md §Counters route)."""
    have: dict = {}
    for r in rows:
        p = int(r["pid"])
        if not 0 <= p < parts_n or p in have:
            raise InternalError(f"Spark returned key partition {p} twice or outside [0, {parts_n}): "
                               "the counters route needs one summary per partition of repartition(P, key)")
        have[p] = r["part"]
    return [cls.from_bytes(have[p]) if p in have else empty() for p in range(parts_n)]


def _exact_counts(df, column, kind, parts) -> dict:
    """The second pass: the exact count of every key some partition's summary tracks (a filter and a
    groupBy in the JVM; keys of no row count 0)."""
    from pyspark.sql import functions as F

    keys = sorted({key for s in parts for key, _ in s.items()})
    exact = dict.fromkeys(keys, 0)
    if not keys:
        return exact
    col = F.col(column)
    counted = df.select(column).where(col.isNotNull() & col.isin(keys)).groupBy(column).count().collect()
    for row in counted:
        key = int(row[0]) if kind == "int" else str(row[0])
        if key in exact:
            exact[key] = int(row[1])
    return exact


_PROBE_ROWS = 1 << 16  # rows of the synthetic range that reads the session's default parallelism


def _counters_partitions(spark) -> int:
    """The counters route's default partition count: min(spark.sql.shuffle.partitions, D), D the
    session's default parallelism (spark.default.parallelism when set, else the executors' total
    cores), read as the partition count Spark gives a range of synthetic rows -- a DataFrame query,
    so it works on Spark Connect too. Both come from the session's configuration and the cluster,
    never from the input's rows (docs/privacy.md §Counters route: the key partitioning must not
    depend on the data)."""
    from pyspark.sql import functions as F

    shuffle = int(spark.conf.get("spark.sql.shuffle.partitions"))
    last = spark.range(0, _PROBE_ROWS).select(F.spark_partition_id().alias("p")).agg(F.max("p").alias("p")).first()["p"]
    return max(1, min(shuffle, int(last) + 1))


def _partition_summary_fn(kind, cls, kt):
    def run(batches):
        import pyarrow as pa
        from pyspark import TaskContext

        p = TaskContext.get().partitionId()
        try:
            s = cls(kt, key_type=kind)
            for b in batches:
                _feed(s, _batch_values(b, kind))
            out = s.to_bytes()  # the summary, not a release: the driver releases with one global length
        except (ValueError, TypeError, OverflowError) as e:
            yield _part_batch(pa, None, e, pid=p)
            return
        yield _part_batch(pa, out, pid=p)

    return run


# -- sketch route ---------------------------------------------------------------------------------

def _sketch_route(df, column, kind, k, eps, dlt, rho_fraction, gamma, width, depth, seed, budget) -> Release:
    """The sketch route (distributed.SketchRoute) on Spark: the parts of the 64-bit dyadic sketch
    on the executors, the merge tree and the noise on the driver, and the lookup of the candidate
    fingerprints as one Spark aggregation."""
    from pyspark.sql import functions as F

    route = SketchRoute(k=k, epsilon=eps, delta=dlt, strings=kind == "str", rho_fraction=rho_fraction, seed=seed)
    with charging(budget, route.mechanism, epsilon=route.epsilon_total, delta=dlt):
        pass  # before any noise is drawn; a refusal spends nothing
    col = F.col(column)
    base = df.select(column).where(col.isNotNull())
    if route.strings:  # salted 64-bit fingerprint computed by Spark (xxhash64, vectorised in the JVM)
        keyed = base.select(F.xxhash64(F.lit(route.salt), col).alias("fp"))
    else:
        keyed = base.select(col.cast("long").alias("fp"))
    proto = route.prototype(gamma=gamma, width=width, depth=depth)
    parts = _dyadic_parts(keyed, proto.to_bytes())
    objs = [DyadicCountSketch.from_bytes(b) for b in parts]
    # the parts' number follows the input's layout (file sizes): the merge is exact, and nothing reports it
    fps = route.candidates(_merge_tree(objs) if objs else proto)
    del objs  # the exact sketch stays on the driver and is never published
    if not route.strings:
        return route.release()
    found = {}
    if fps:
        # The 128-bit lookup fingerprint (φ1, φ2): φ2 is hashed only on the rows of candidate φ1.
        hits = (base.select(F.xxhash64(F.lit(route.salt), col).alias("fp"), col.alias("label"))
                .where(F.col("fp").isin(fps))
                .select("fp", F.xxhash64(F.lit(route.salt2), F.col("label")).alias("fp2"), "label")
                .groupBy("fp", "fp2").agg(F.count(F.lit(1)).alias("c"), F.countDistinct("label").alias("u"),
                                          F.min("label").alias("label")))
        found = {(r["fp"], r["fp2"]): (int(r["c"]), int(r["u"]), r["label"]) for r in hits.collect()}
    return route.release(found)


_AGGREGATE_FLUSH = 1 << 20  # rows buffered before they are aggregated and fed


def _feed_aggregated(s, batches, *, twos_complement: bool = True) -> None:
    """Feed int64 keys into a DyadicCountSketch as (distinct key, count) pairs: the core's
    ``update_many_aggregated`` counts the distinct keys of up to _AGGREGATE_FLUSH buffered rows
    (a hash table that grows with the distinct keys) and feeds one counted update each. The sketch
    is linear, so update(x, c) equals c unit updates of x -- the cells are identical to feeding
    every row (tested), at a fraction of the cost on skewed data (one dyadic update touches every
    level). Memory stays bounded: at most _AGGREGATE_FLUSH buffered rows. ``twos_complement``:
    negative keys map to [2^63, 2^64) (the sketch route's bijection); otherwise they are rejected
    like DyadicCountSketch.update_many does."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pending, rows = [], 0

    def flush():
        nonlocal pending, rows
        if rows:
            keys = pending[0] if len(pending) == 1 else np.concatenate(pending)
            s._impl.update_many_aggregated(keys.view(np.uint64))
        pending, rows = [], 0

    for b in batches:
        col = b.column(0)
        if col.null_count:
            col = pc.drop_null(col)
        if not len(col):
            continue
        keys = col.cast(pa.int64()).to_numpy(zero_copy_only=False)
        if not twos_complement and keys.min() < 0:
            raise ParameterError(f"items must be integers in [0, 2^{s.universe_bits}); map real values with "
                             "bounds=(lo, hi) or raise universe_bits")
        pending.append(keys)
        rows += len(keys)
        if rows >= _AGGREGATE_FLUSH:
            flush()
    flush()


def _dyadic_parts(keyed, proto_bytes) -> list:
    return _parts(keyed, DyadicCountSketch, proto_bytes, _feed_aggregated)


# -- quantiles ------------------------------------------------------------------------------------

QuantileRelease = Release  # deprecated: quantiles return a dpsketch.Release (CHANGELOG, Unreleased)


@validate_params(["rho", "epsilon", "bounds", "universe_bits", "seed", "max_rows_per_unit"])
def quantiles(df, column: str, qs, *, rho: float | None = None, epsilon: float | None = None,
              bounds=None, universe_bits: int | None = None, gamma: float = 0.01, seed: int | None = None,
              budget: Budget | None = None, privacy_id: str | None = None, max_rows_per_unit: int | None = None,
              delta: float | None = None, unit: Any = None, method: str = "auto"):
    """Private quantiles of ``df[column]`` via a merged dyadic sketch with noise added once on the
    driver (docs/algorithms.md §6, §8). Integers in [0, 2^universe_bits) (an integer outside is
    clamped to 0 or 2^universe_bits − 1), or numbers mapped with public ``bounds=(lo, hi)`` (never
    computed from the data; values outside are clamped to them, ±inf included). One row = privacy
    unit; nulls and NaN are skipped (never counted, never reported). Each row is read on its own:
    no value fails the job. Quantile targets use the noisy total, so every result is
    post-processing of the noisy hierarchy -- also on an empty DataFrame. ``budget`` (a :class:`dpsketch.Budget`) is
    charged ρ or ε before the noise is drawn.

    With ``privacy_id`` (a column) the privacy unit is one unit, all its rows, and each unit
    contributes at most r = ``max_rows_per_unit`` rows: in the JVM, per unit the r rows with the
    smallest xxhash64(salt, unit, value, j) (j: the row's index among the unit's equal values;
    ties by value and j), then the same sketch, noised once on the driver by
    :func:`dpsketch.privacy_unit.release_unit_quantiles` for a unit of r rows (docs/privacy.md
    §Privacy unit). ``delta`` then converts ρ to (ε, δ), or with ``epsilon`` asks for Gaussian
    noise at (ε, δ).

    Returns a :class:`dpsketch.Release` (as :func:`dpsketch.quantiles` does): ``items`` are the
    (q, value) pairs in the order of ``qs`` (``values()`` the values), the guarantee in ``epsilon``,
    ``delta``, ``rho`` and ``metadata``, and ``intervals`` the rank intervals of the noisy hierarchy
    at ``interval_level`` where every level is exact (docs/mechanisms/distributed.md §Accuracy;
    otherwise None, the reason in ``metadata["interval"]``). ``sketch`` is the published noisy
    hierarchy (further queries are post-processing), None with ``privacy_id`` (the unit-level
    hierarchy is not published). A single-process release of the same data and seed is equal.

    :param df: a Spark DataFrame
    :param column: the numeric column
    :param qs: the quantile levels, each in [0, 1]
    :param rho: ρ of a ρ-zCDP guarantee (discrete Gaussian noise) instead of ε
    :param bounds: ``(lo, hi)``: a public value range (never read off the data); values outside are
        clamped
    :param universe_bits: L: the values are integers in [0, 2^L) (or ``bounds`` mapped onto 2^L buckets)
    :param gamma: the target rank error γ of Zhao's shape, in (0, 1) (ignored when both width and depth
        are given)
    :param seed: a user seed: reproducible noise (and hash functions), NOT secret; None: the secure
        generator
    :param unit: the privacy unit: ``dpsketch.Row()`` (default) or ``dpsketch.Person("id_column",
        max_rows=r)`` (each person's r rows, as :func:`dpsketch.quantiles` takes it); reported in
        ``metadata["unit"]``. ``privacy_id`` with ``max_rows_per_unit`` is the older spelling
    :param method: ``'dyadic'`` or ``'auto'`` (the same): Spark merges dyadic sketches; the in-memory
        methods (``'exp'``, ``'joint'``, ``'recursive'``) need the values on one machine
    """
    from ._validation import Options, check

    if check("method", method, Options(("auto", "dyadic", "exp", "joint", "recursive"))) not in ("auto", "dyadic"):
        raise ParameterError(f"method={method!r} needs the values in memory on one machine; Spark runs "
                             "method='dyadic' (collect the column and call dpsketch.quantiles for the others)")
    u = _quantile_unit(unit, privacy_id, max_rows_per_unit)
    if isinstance(u, Person):
        privacy_id, max_rows_per_unit = u.id_column, u.max_rows
    return with_metadata(_quantiles(df, column, qs, rho=rho, epsilon=epsilon, bounds=bounds,
                                    universe_bits=universe_bits, gamma=gamma, seed=seed, budget=budget,
                                    privacy_id=privacy_id, max_rows_per_unit=max_rows_per_unit, delta=delta),
                         {"unit": u.describe(), "method": "dyadic"})


def _quantile_unit(unit, privacy_id, r):
    """The privacy unit of :func:`quantiles` from ``unit=`` or the older keywords."""
    if unit is None:
        if privacy_id is None and r is None:
            return Row()
        if privacy_id is None or r is None:
            missing = "privacy_id= (the unit's column)" if privacy_id is None else "max_rows_per_unit=r"
            raise ParameterError(f"a person as the privacy unit needs {missing} too; or pass "
                                 "unit=dpsketch.Person('id_column', max_rows=r)")
        _warn_old_unit_keywords("privacy_id=/max_rows_per_unit=", f"Person({privacy_id!r}, max_rows=r)")
        return Person(privacy_id, max_rows=r)
    u = as_unit(unit)
    if privacy_id is not None or r is not None:
        raise _spelled_twice("Person(...)")
    if isinstance(u, Row):
        if u.public_length:
            raise ParameterError("quantiles read no length: pass unit=dpsketch.Row()")
        return u
    if u.id_column is None:
        raise ParameterError("on Spark, Person(id=...) names the DataFrame's column of privacy ids")
    if u.max_rows is None:
        raise ParameterError("quantiles bound each person's rows: pass Person(id_column, max_rows=r)")
    return u


def _quantiles(df, column: str, qs, *, rho, epsilon, bounds, universe_bits, gamma, seed, budget, privacy_id,
               max_rows_per_unit, delta) -> Release:
    from pyspark.sql import functions as F

    _require_spark()
    kind = _column_kind(df, column)
    if kind == "str":
        raise ParameterTypeError(f"column {column!r} holds strings; quantiles need numbers")
    if bounds is None and universe_bits is None:
        raise ParameterError("pass bounds=(lo, hi) (public value range) or universe_bits=L (integers in [0, 2^L))")
    bits = 16 if universe_bits is None else universe_bits
    qlist = [float(q) for q in np.atleast_1d(qs)]
    proto = DyadicCountSketch(bits, gamma=gamma, bounds=bounds, seed=seed)
    if kind == "float":
        df = df.where(~F.isnan(F.col(column)))  # NaN has no position in [lo, hi]: skipped like a null
    elif bounds is None:
        # An integer outside the universe is clamped into it, row by row (as unit_quantiles and the
        # CLI do), before the unit bound hashes it; the sketch would otherwise fail the task on it.
        # The column keeps its type (the clamped value lies between 0 and the original value).
        clamped = F.greatest(F.col(column), F.lit(0))
        if bits < 63:
            clamped = F.least(clamped, F.lit((1 << bits) - 1))
        df = df.withColumn(column, clamped.cast(df.schema[column].dataType))
    if privacy_id is not None or max_rows_per_unit is not None:
        return _unit_quantiles(df, column, kind, qlist, proto, privacy_id, max_rows_per_unit, rho, epsilon, delta,
                               seed, budget)
    if delta is not None:
        raise ParameterError("delta applies to the unit-level route (privacy_id=); a row-level sketch reports its "
                         "(ε, δ) conversion with release(delta=)")
    merged = summarize(df, column, lambda: DyadicCountSketch.from_bytes(proto.to_bytes()))
    priv = PrivateDyadicCountSketch.from_sketch(merged, rho=rho, epsilon=epsilon, seed=seed,
                                                budget=budget)
    del merged  # exact; never published
    return sketch_quantiles_release(priv.release(), qlist, front_end="spark")


def _unit_bounded_values(df, column, privacy_id, kind, r, salt):
    """``df`` reduced to the rows the unit-level quantile bound keeps (columns "u", "v"): per unit the r
    rows with the smallest xxhash64(salt, unit, value, j), ties by (value, j), j numbering the
    unit's rows of equal value (which of two equal rows gets which j does not change what is kept)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    v = F.col(column)
    if kind == "float":
        v = F.when(v == 0, F.lit(0.0)).otherwise(v)  # −0.0 and 0.0 are one value
    rows = (df.select(v.alias("v"), F.col(privacy_id).alias("u"))
            .where(F.col("v").isNotNull() & F.col("u").isNotNull()))
    same = Window.partitionBy("u", "v").orderBy("v")
    unit = Window.partitionBy("u").orderBy(F.xxhash64(F.lit(salt), F.col("u"), F.col("v"), F.col("j")),
                                           F.col("v"), F.col("j"))
    return (rows.withColumn("j", F.row_number().over(same))
            .withColumn("rank", F.row_number().over(unit))
            .where(F.col("rank") <= r).select("u", "v"))


def _unit_quantiles(df, column, kind, qlist, proto, privacy_id, r, rho, epsilon, delta, seed, budget):
    """User-level quantiles (docs/privacy.md §Privacy unit): the row bound as Spark window
    functions (no per-row Python), the per-partition sketches and their merge as for row-level
    quantiles, and the unit-level noise on the driver."""
    from . import _seeds
    from .mechanisms.unit_level import _quantile_noise, _check_qs, release_unit_quantiles

    if privacy_id is None or r is None:
        raise ParameterError("the unit-level route needs both privacy_id= (the unit's column) and max_rows_per_unit=r")
    rr = check_int("max_rows_per_unit", r, 1, 1 << 40)
    _quantile_noise(rho, epsilon, delta)  # every parameter is checked before Spark reads a row
    _check_qs(qlist)
    if not isinstance(privacy_id, str) or privacy_id not in df.columns:
        raise ParameterError(f"no column {privacy_id!r} for privacy_id")
    salt = _seeds.rng(seed, "salt")[0].next_u64() & ((1 << 63) - 1)
    bounded = _unit_bounded_values(df, column, privacy_id, kind, rr, salt).select("v")
    merged = summarize(bounded, "v", lambda: DyadicCountSketch.from_bytes(proto.to_bytes()))
    rel = release_unit_quantiles(merged, qlist, max_rows_per_unit=rr, rho=rho, epsilon=epsilon, delta=delta,
                                 seed=seed, budget=budget, front_end="spark",
                                 bounding="Spark: per unit the r rows with the smallest xxhash64(salt, unit, value, "
                                          "index among the unit's equal values), ties by value and index")
    del merged  # exact; never published
    return rel


# -- releases over time ---------------------------------------------------------------------------

def _time_kind(df, column: str) -> str:
    """'ts' for a timestamp column, 'num' for epoch seconds (integers or floats); TypeError otherwise."""
    from pyspark.sql import types as T

    if not isinstance(column, str) or column not in df.columns:
        raise ParameterError(f"the DataFrame has no time column named {column!r}; its columns are {df.columns}")
    t = df.schema[column].dataType
    if isinstance(t, (T.TimestampType, T.TimestampNTZType)):
        return "ts"
    if isinstance(t, (T.LongType, T.IntegerType, T.ShortType, T.DoubleType, T.FloatType)):
        return "num"
    raise ParameterTypeError(f"time column {column!r} has type {t.simpleString()}; it must be a timestamp or epoch seconds "
                    "(a number): cast it first, e.g. F.to_timestamp(...)")


def _counter_class(summary: str, k: int, capacity: int | None):
    if summary not in ("spacesaving", "misragries"):
        raise ParameterError(f"summary must be 'spacesaving' (DPSS) or 'misragries' (PMG), got {summary!r}")
    kt = 2 * k if capacity is None else check_int("capacity", capacity, 1, _core.MAX_CAPACITY)
    if summary == "spacesaving" and kt < k:
        raise ParameterError(f"DPSS needs capacity >= k (got {kt} < {k}); the default is 2k")
    return (SpaceSaving if summary == "spacesaving" else MisraGries), kt


def _window_keys(batch, kind: str, period: int, origin: int, lo: int, hi: int | None):
    """(keys, window indices) of the rows of an Arrow batch (key, time; no nulls) whose window
    (:func:`dpsketch.windows.assign` of the time) is in [lo, hi], in the batch's order."""
    import pyarrow as pa

    t, ok = times_ns(batch.column(1))
    w = assign(t, period, origin)
    keep = w >= lo
    if hi is not None:
        keep &= w <= hi
    if ok is not None:
        keep &= ok
    idx = np.flatnonzero(keep)
    keys = batch.column(0)
    if kind == "int":
        return keys.cast(pa.int64()).to_numpy(zero_copy_only=False)[idx], w[idx]
    return keys.take(pa.array(idx, type=pa.int64())), w[idx]


def _window_summaries_fn(kind, cls, kt, period, origin, first, last):
    """Per partition (rows in key order): one summary per window, fed that window's rows in key
    order; one output row (pid, window, summary bytes) per window with rows."""
    def run(batches):
        import pyarrow as pa
        from pyspark import TaskContext

        p = TaskContext.get().partitionId()
        try:
            sums: dict = {}
            for b in batches:
                keys, w = _window_keys(b, kind, period, origin, first, last)
                if not len(w):
                    continue
                order = np.argsort(w, kind="stable")  # stable: key order inside each window
                ws = w[order]
                cuts = np.flatnonzero(ws[1:] != ws[:-1]) + 1
                for a, z in zip(np.concatenate(([0], cuts)).tolist(), np.concatenate((cuts, [len(ws)])).tolist()):
                    i = int(ws[a])
                    part = order[a:z]
                    s = sums.get(i)
                    if s is None:
                        s = sums[i] = cls(kt, key_type=kind)
                    s.update_many(keys[part] if kind == "int" else keys.take(pa.array(part, type=pa.int64())))
            out = sorted((i, s.to_bytes()) for i, s in sums.items())
        except (ValueError, TypeError, OverflowError) as e:
            yield pa.RecordBatch.from_arrays(
                [pa.array([p], pa.int64()), pa.array([None], pa.int64()), pa.array([None], pa.binary()),
                 pa.array([pickle.dumps(e)], pa.binary())], names=["pid", "w", "part", "error"])
            return
        if out:
            yield pa.RecordBatch.from_arrays(
                [pa.array([p] * len(out), pa.int64()), pa.array([i for i, _ in out], pa.int64()),
                 pa.array([b for _, b in out], pa.binary()), pa.array([None] * len(out), pa.binary())],
                names=["pid", "w", "part", "error"])

    return run


def _window_range(period, origin, start, end) -> tuple[int, int, int, int]:
    """(period_ns, origin_ns, first, last): the windows of the public range [start, end)."""
    p, o = parse_duration(period), parse_instant(origin)
    if p <= 0:
        raise ParameterError("period must be > 0")
    if start is None or end is None:
        raise ParameterError("windowed_heavy_hitters needs start= and end=: the windows released must be public, "
                         "not read off the data")
    s, e = parse_instant(start), parse_instant(end)
    if e <= s:
        raise ParameterError("end must be after start")
    return p, o, (s - o) // p, (e - 1 - o) // p


@validate_params(["epsilon", "delta", "k", "seed", "capacity", "length_epsilon", "length_delta"])
def windowed_heavy_hitters(df, column: str, *, time_column: str, period: Any, start: Any, end: Any, k: int,
                           epsilon: float, delta: float, origin: Any = 0, summary: str = "spacesaving",
                           capacity: int | None = None, num_partitions: int | None = None,
                           public_length: bool = False, length_epsilon: float | None = None,
                           length_delta: float | None = None, cut: str | None = "n/k", seed: int | None = None,
                           budget: Budget | None = None) -> list[Release]:
    """One (ε, δ)-DP heavy-hitter release per tumbling event-time window of a batch DataFrame,
    the series (ε, δ)-DP by parallel composition (docs/privacy.md §Windows "On Spark").

    Windows are ``[origin + i·period, origin + (i+1)·period)`` (as :class:`dpsketch.Windowed`);
    the series is every window from the one containing ``start`` to the one containing the instant
    before ``end`` -- public parameters, never the data's smallest or largest time -- and every
    one of them is released, an empty window included. ``time_column`` holds timestamps (a
    timestamp without time zone is read as UTC) or epoch seconds (numbers); rows of other windows, and rows with a null key or time, are dropped and counted
    nowhere. Window i's release is the counters route of :func:`heavy_hitters` on the rows of
    window i (key partitions by a hash of the key alone, ``num_partitions`` as there, each
    partition in key order; DPSS or PMG per partition with one noisy length per window), with the
    user seed ``window_seed(seed, i)``; ``budget`` is charged (ε, δ) once for the whole series
    (:meth:`Budget.disjoint`), before Spark reads a row. One Spark job builds all windows' summaries (one per window and
    partition); the releases are drawn on the driver. Returns the releases in window order; each
    carries ``metadata["window"]`` and ``metadata["composition"]``.

    :param df: a Spark DataFrame
    :param column: the column of ``df`` holding the keys
    :param period: the window length (a duration: seconds, ``'1h'``, ``'15min'``, a timedelta)
    :param k: the frequency cut n/k of each window
    :param epsilon: ε of each window's release (the series' by parallel composition)
    :param delta: δ of each window's release
    :param origin: an instant where a window starts (default the epoch)
    :param summary: ``'spacesaving'`` (DPSS, default) or ``'misragries'`` (PMG)
    :param capacity: counters of the summary
    :param public_length: treat the exact stream length as public (replace-one neighbours) instead of
        paying for a noisy one
    :param length_epsilon: the ε share spent on the noisy stream length (default ε/10)
    :param length_delta: the δ share spent on the length bound (default δ/10)
    :param cut: ``'n/k'`` (default) also drops released values below n̂/k; None keeps all above the
        threshold
    :param seed: a user seed: reproducible noise (and hash functions), NOT secret; None: the secure
        generator
    """
    from pyspark.sql import functions as F

    _require_spark()
    kk = check_int("k", k, 1, 2**40)
    kind = _column_kind(df, column)
    if kind == "float":
        raise ParameterTypeError(f"column {column!r} holds floats; heavy hitters need int or str keys (cast or bucket first)")
    tkind = _time_kind(df, time_column)
    if df.isStreaming:
        raise ParameterError("df is a streaming DataFrame: use stream_heavy_hitters (windows closed on a public clock)")
    period_ns, origin_ns, first, last = _window_range(period, origin, start, end)
    cls, kt = _counter_class(summary, kk, capacity)
    parts_n = (_counters_partitions(df.sparkSession) if num_partitions is None
               else check_int("num_partitions", num_partitions, 1, 1 << 20))
    key, t = F.col(column), F.col(time_column)
    rows = df.select(column, time_column).where(key.isNotNull() & t.isNotNull())
    lo_s = (origin_ns + first * period_ns) / NS - 1.0  # a loose filter in the JVM; the exact one is _window_keys
    hi_s = (origin_ns + (last + 1) * period_ns) / NS + 1.0
    if tkind == "num":
        rows = rows.where((t >= F.lit(lo_s)) & (t < F.lit(hi_s)))
    elif df.schema[time_column].dataType.typeName() == "timestamp":
        rows = rows.where((F.unix_micros(t) >= F.lit(int(lo_s * 1e6))) & (F.unix_micros(t) < F.lit(int(hi_s * 1e6))))

    def empty():
        return cls(kt, key_type=kind)

    # every parameter is checked, and the budget charged once for the series, before Spark reads a row
    _, summary_name = check_windows(first=first, last=last, empty=empty, k=kk, epsilon=epsilon, delta=delta,
                  public_length=public_length, length_epsilon=length_epsilon, length_delta=length_delta, seed=seed,
                  cut=cut, budget=budget)
    scope = charge_windows(budget, summary_name, epsilon, delta)
    keyed = rows.repartition(parts_n, key).sortWithinPartitions(key)
    got = _collect_parts(keyed.mapInArrow(_window_summaries_fn(kind, cls, kt, period_ns, origin_ns, first, last),
                                          "pid long, w long, part binary, error binary"))
    parts: dict = {}
    for r in sorted(got, key=lambda r: (r["w"], r["pid"])):
        parts.setdefault(int(r["w"]), []).append((int(r["pid"]), cls.from_bytes(r["part"])))
    return release_windows(parts, first=first, last=last, period_ns=period_ns, origin_ns=origin_ns,
                           partitions=parts_n, empty=empty,
                           k=kk, epsilon=epsilon, delta=delta, public_length=public_length,
                           length_epsilon=length_epsilon, length_delta=length_delta, seed=seed, budget=scope,
                           cut=cut)


def _to_arrow(df):
    if hasattr(df, "toArrow"):
        return df.toArrow()
    import pyarrow as pa  # pragma: no cover - Spark < 4 has no DataFrame.toArrow

    return pa.Table.from_pandas(df.toPandas(), preserve_index=False)  # pragma: no cover


def _window_rows_fn(kind, period, origin, lo):
    """Per micro-batch partition: (window, key) of the rows whose window is >= lo."""
    def run(batches):
        import pyarrow as pa

        for b in batches:
            keys, w = _window_keys(b, kind, period, origin, lo, None)
            if len(w):
                yield pa.RecordBatch.from_arrays([pa.array(w, pa.int64()), pa.array(keys) if kind == "int" else keys],
                                                 names=["w", "k"])

    return run


class WindowedStream:
    """A running :func:`stream_heavy_hitters` series.

    ``query`` is the Spark ``StreamingQuery``; ``releases`` the window releases so far, in window
    order (each also went to ``on_release``). :meth:`stop` stops the query and ends the series:
    windows not yet released are released at once (through ``end`` when it was given, else
    through the window open now). :meth:`advance` releases the windows due now (a clock thread
    does it at each deadline anyway).

    :param releaser: the :class:`~dpsketch.time.windows.WallClockReleaser` that releases the windows
    """

    def __init__(self, query, releaser: WallClockReleaser, releases: list) -> None:
        self.query, self._releaser, self._releases = query, releaser, releases

    @property
    def releases(self) -> list[Release]:
        return list(self._releases)

    @property
    def windowed(self) -> Windowed:
        return self._releaser.windowed

    def process_all_available(self) -> None:
        """Block until every file present now has been processed (``StreamingQuery.processAllAvailable``)."""
        self.query.processAllAvailable()

    def advance(self) -> None:
        self._releaser.advance()

    def await_termination(self, timeout: float | None = None):
        """Wait until the streaming query ends (``StreamingQuery.awaitTermination``).

        :param timeout: seconds to wait at most (None: until the query ends)
        """
        return self.query.awaitTermination(timeout) if timeout is not None else self.query.awaitTermination()

    def stop(self) -> list[Release]:
        """Stop the query, release every window not yet released, and return all releases."""
        self.query.stop()
        self._releaser.close()
        return self.releases


@validate_params(["epsilon", "delta", "k", "seed", "capacity", "length_epsilon", "length_delta"])
def stream_heavy_hitters(df, column: str, *, time_column: str, period: Any, k: int, epsilon: float, delta: float,
                         start: Any = None, end: Any = None, origin: Any = 0, allowed_lateness: Any = 0,
                         summary: str = "spacesaving", capacity: int | None = None,
                         length_epsilon: float | None = None, length_delta: float | None = None,
                         seed: int | None = None, budget: Budget | None = None,
                         on_release: Callable[[Release], Any] | None = None, now: Callable[[], float] | None = None,
                         trigger: dict | None = None, checkpoint_location: str | None = None,
                         max_wait: float = 1.0) -> WindowedStream:
    """One (ε, δ)-DP heavy-hitter release per tumbling event-time window of a streaming DataFrame
    (Structured Streaming), each window released when a public clock passes its end plus
    ``allowed_lateness`` -- never on a watermark read off the data (docs/privacy.md §Windows
    "On Spark").

    The series is :class:`dpsketch.Windowed` with ``clock="wall"`` held on the driver: windows
    ``[origin + i·period, origin + (i+1)·period)`` from the one containing ``start`` (default: now)
    to the one containing the instant before ``end`` (default: until :meth:`WindowedStream.stop`),
    every one released, empty ones included; DPSS (``summary="spacesaving"``, capacity 2k) or PMG
    per window with its own noisy length and the user seed ``window_seed(seed, i)``; ``budget``
    charged (ε, δ) once, now. A ``foreachBatch`` sink aggregates each micro-batch in Spark to
    (window, key, count) and feeds it to the series at the moment it reaches the driver (its
    arrival on ``now``, default ``time.time``, UTC epoch seconds): an event is kept iff its window
    is open then (start_i <= now < end_i + allowed_lateness); late, early and out-of-range events,
    and rows with a null key or time, are dropped and counted nowhere. A clock thread releases each
    window at its deadline even while no micro-batch runs; every release goes to ``on_release``
    (on the driver, in window order) and to :attr:`WindowedStream.releases`.

    ``trigger`` is passed to ``DataStreamWriter.trigger`` (e.g. ``{"processingTime": "10 seconds"}``);
    ``checkpoint_location`` to the writer. The series' state lives in this process, not in the
    checkpoint: a restarted query is a new series (charged again). Needs a classic session (on
    Spark Connect the ``foreachBatch`` function runs in the server's Python, away from this state).

    :param df: a Spark DataFrame
    :param column: the column of ``df`` holding the keys
    :param time_column: the column of event times (epoch seconds or a timestamp)
    :param period: the window length (a duration: seconds, ``'1h'``, ``'15min'``, a timedelta)
    :param k: the frequency cut n/k of each window
    :param epsilon: ε of each window's release (the series' by parallel composition)
    :param delta: δ of each window's release
    :param origin: an instant where a window starts (default the epoch)
    :param summary: ``'spacesaving'`` (DPSS, default) or ``'misragries'`` (PMG)
    :param capacity: counters of the summary
    :param length_epsilon: the ε share spent on the noisy stream length (default ε/10)
    :param length_delta: the δ share spent on the length bound (default δ/10)
    :param seed: a user seed: reproducible noise (and hash functions), NOT secret; None: the secure
        generator
    :param max_wait: the longest the clock thread sleeps between checks of the deadlines, in seconds
    """
    from pyspark.sql import functions as F

    _require_spark()
    if not df.isStreaming:
        raise ParameterError("df is not a streaming DataFrame: use windowed_heavy_hitters for a batch DataFrame")
    if type(df.sparkSession).__module__.startswith("pyspark.sql.connect"):
        raise ParameterTypeError("stream_heavy_hitters needs a classic Spark session: on Spark Connect foreachBatch runs in "
                        "the server's Python process, away from the series' state")
    kk = check_int("k", k, 1, 2**40)
    kind = _column_kind(df, column)
    if kind == "float":
        raise ParameterTypeError(f"column {column!r} holds floats; heavy hitters need int or str keys (cast or bucket first)")
    _time_kind(df, time_column)
    cls, kt = _counter_class(summary, kk, capacity)
    if on_release is not None and not callable(on_release):
        raise ParameterTypeError("on_release must be a function taking one Release")
    windowed = Windowed(period=period, make=lambda: cls(kt, key_type=kind), epsilon=epsilon, delta=delta, k=kk,
                        start=start, end=end, origin=origin, clock="wall", allowed_lateness=allowed_lateness,
                        length_epsilon=length_epsilon, length_delta=length_delta, seed=seed, budget=budget, now=now)
    releases: list = []

    def emit(rel):
        releases.append(rel)
        if on_release is not None:
            on_release(rel)

    releaser = WallClockReleaser(windowed, emit, max_wait=max_wait)
    key, t = F.col(column), F.col(time_column)
    schema = f"w long, k {'long' if kind == 'int' else 'string'}"

    def on_batch(batch_df, batch_id):
        lo = windowed.accepting_from()  # lower windows are closed for good: drop their rows in Spark
        counted = (batch_df.select(column, time_column).where(key.isNotNull() & t.isNotNull())
                   .mapInArrow(_window_rows_fn(kind, windowed.period, windowed.origin, lo), schema)
                   .groupBy("w", "k").count())
        table = _to_arrow(counted).sort_by([("w", "ascending"), ("k", "ascending")])
        if not len(table):
            releaser.advance()
            return
        # each window's rows in key order: a function of the micro-batch's rows, never of their positions
        idx = np.repeat(np.arange(len(table)), table.column("count").to_numpy().astype(np.int64))
        w = table.column("w").to_numpy()[idx]
        col = table.column("k").combine_chunks()
        keys = col.to_numpy(zero_copy_only=False)[idx] if kind == "int" else col.take(idx)
        releaser.feed(keys, w)

    writer = df.select(column, time_column).writeStream.foreachBatch(on_batch)
    if trigger:
        writer = writer.trigger(**trigger)
    if checkpoint_location is not None:
        writer = writer.option("checkpointLocation", str(checkpoint_location))
    try:
        query = writer.start()
    except BaseException:
        releaser.halt()
        raise
    return WindowedStream(query, releaser, releases)
