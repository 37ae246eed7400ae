"""The two front doors for data in hand: :func:`heavy_hitters` and :func:`quantiles`.

Both take the data (an array or list, a pandas/polars DataFrame or an Arrow table with
``column=``, or a file path), the privacy parameters, and the privacy unit as a value
(``unit=dpsketch.Row()`` by default, or ``dpsketch.Person(id=..., max_keys=... | max_rows=...)``).
``method="auto"`` picks the mechanism from what is asked; the release reports the unit
(``metadata["unit"]``) and the method it ran (``metadata["method"]``). The mechanisms themselves
live in their own modules; this one only routes (docs/routes.md).

One name per question, in every route: ``k=`` keeps the items of frequency about n/k or more
(a frequency cut, not a count of items); ``top_k=N`` releases the N most frequent items.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Optional, cast

import numpy as np

from .accounting.budget import Budget
from .errors import ParameterError, ParameterTypeError
from .release import Release
from .units import Person, Row, as_unit
from ._validation import Instance, Options, check, validate_params

__all__ = ["heavy_hitters", "quantiles", "route_heavy_hitters", "route_quantiles", "HEAVY_HITTER_METHODS",
           "QUANTILE_METHODS"]

# method -> what it runs (docs/routes.md); "auto" picks one of these from the unit and the request.
HEAVY_HITTER_METHODS = {
    "dpss": "row: SpaceSaving released by DPSS, one pass (docs/privacy.md §DPSS)",
    "dpss_two_pass": "row: SpaceSaving's candidates counted exactly in a second pass (§DPSS, Two passes)",
    "pmg": "row: Misra-Gries released by PMG (docs/privacy.md §PMG)",
    "exact": "person: contributions bounded to max_keys, exact counts with noise (§Privacy unit)",
    "bounded_memory": "person: each person's first max_rows rows into SpaceSaving/Misra-Gries (§Privacy unit)",
}
QUANTILE_METHODS = {
    "exp": "row: one exponential mechanism per level (docs/privacy.md §In-memory quantiles)",
    "joint": "row: JointExp over all levels (§In-memory quantiles)",
    "recursive": "row: the recursive split (§In-memory quantiles)",
    "dyadic": "person: each person's first max_rows values into a private dyadic CountSketch (§Privacy unit)",
}


def _is_path(data: Any) -> bool:
    return isinstance(data, (str, os.PathLike))


def _is_frame(data: Any) -> bool:
    return type(data).__name__ in ("DataFrame", "Table", "RecordBatch") or _is_relation(data)


def _is_relation(data: Any) -> bool:
    """A DuckDB relation (or anything else that hands over its rows as an Arrow table)."""
    return hasattr(data, "to_arrow_table") or hasattr(data, "fetch_arrow_table")


def _frame_column(data: Any, name: str, what: str):
    if _is_relation(data):  # a DuckDB relation: read the columns it holds once
        data = data.to_arrow_table() if hasattr(data, "to_arrow_table") else data.fetch_arrow_table()
    cols = data.column_names if hasattr(data, "column_names") else list(data.columns)
    if name not in cols:
        raise ParameterError(f"{what} {name!r} is not a column of the {type(data).__name__} (it has {cols[:20]})")
    col = data[name]
    return col.combine_chunks() if hasattr(col, "combine_chunks") else col


def _person_columns(data: Any, column: Optional[str], unit: Person):
    """(keys, privacy ids) of in-memory data for a person-level route."""
    if _is_frame(data):
        if column is None:
            raise ParameterError(f"a {type(data).__name__} holds several columns; pass column= to name the items")
        keys = _frame_column(data, column, "column")
        ids = (_frame_column(data, unit.id_column, "Person(id=...)") if unit.id_column is not None else unit.id)
        return keys, ids
    if column is not None:
        raise ParameterError("column= names a column of a DataFrame, an Arrow table or a file; this data is an array")
    if unit.id_column is not None:
        raise ParameterError(f"Person(id={unit.id_column!r}) names a column, but the data is an array: pass the "
                             "privacy ids as an aligned array, Person(id=ids, ...), or pass a DataFrame")
    return data, unit.id


def _finish(rel: Release, unit, method: str) -> Release:
    meta = dict(rel.metadata)
    meta["unit"] = unit.describe()
    meta["method"] = method
    return dataclasses.replace(rel, metadata=meta)


def _check_method(method: Any, table: dict) -> str:
    return check("method", method, Options(("auto", *table)))


@validate_params(["epsilon", "delta", "k", "top_k", "seed", "capacity", "length_epsilon", "length_delta"])
def heavy_hitters(
    data: Any, *, epsilon: float, delta: float, unit: Any = None, k: Optional[int] = None,
    top_k: Optional[int] = None, method: str = "auto", column: Optional[str] = None, budget: Optional[Budget] = None,
    seed: Optional[int] = None, capacity: Optional[int] = None, passes: Optional[int] = None, cut: Any = "n/k",
    format: Optional[str] = None, keys: str = "auto", public_length: Optional[bool] = None,
    length_epsilon: Optional[float] = None, length_delta: Optional[float] = None, noise: str = "gaussian",
    chunk_size: int = 1_000_000, selection: Optional[str] = None, counts: bool = True,
) -> Release:
    """(ε, δ)-DP heavy hitters of ``data`` under the privacy unit ``unit``.

    :param data: the items: a list, numpy array or Series of int or str keys; a pandas/polars
        DataFrame, an Arrow table or a DuckDB relation with ``column=``; or a file path (text: one
        item per line; CSV/Parquet/Arrow with ``column=``)
    :param epsilon: the ε that holds for the whole release (every share included)
    :param delta: the δ that holds for the whole release
    :param unit: the privacy unit: ``dpsketch.Row()`` (default: one row, private length),
        ``dpsketch.Row(public_length=True)``, or ``dpsketch.Person(id=..., max_keys=m)`` /
        ``dpsketch.Person(id=..., max_rows=r)`` (every row of one privacy id)
    :param k: keep the items of frequency about n/k or more (a frequency cut, not a count)
    :param top_k: release the N most frequent items instead (exactly N whenever N qualify)
    :param method: ``"auto"`` or one of :data:`HEAVY_HITTER_METHODS`: ``dpss``, ``dpss_two_pass``
        and ``pmg`` for a row, ``exact`` (``max_keys``) and ``bounded_memory`` (``max_rows``) for a
        person; ``auto`` runs ``dpss`` (``dpss_two_pass`` with ``passes=2``) for a row and the route
        of the person's bound for a person
    :param column: the item column of a DataFrame, table or CSV/Parquet/Arrow file
    :param budget: a :class:`dpsketch.Budget` charged the release's (ε, δ) before any noise is drawn
    :param seed: makes the noise reproducible and therefore NOT secret (tests and experiments)
    :param capacity: counters of the summary (row-level and bounded-memory methods; default 2k, or
        64·N for ``top_k``)
    :param passes: 1 or 2 for the row-level DPSS (2: exact counts of the candidates, which needs
        re-iterable data)
    :param cut: ``"n/k"`` (default) keeps noisy values >= n̂/k; None keeps everything above the
        mechanism's threshold (row-level DPSS)
    :param format: the file format of a path (``text``, ``csv``, ``parquet``, ``arrow``; default
        from the name)
    :param keys: ``"auto"``, ``"int"`` or ``"str"``: how a file's items are typed
    :param public_length: the older spelling of ``unit=dpsketch.Row(public_length=True)``
    :param length_epsilon: the ε share spent on the noisy length (default ε/10)
    :param length_delta: the δ share spent on the length bound (default δ/10)
    :param noise: ``"gaussian"`` or ``"laplace"``: the noise of the person-level exact method
    :param chunk_size: items per batch when reading a file or an iterator
    :param selection: None (default: every key whose noisy bounded count passes the threshold) or
        ``"weighted_gaussian"`` (person-level exact method: keys selected by weighted scores, each
        person's kept keys weighing 1/sqrt(their number); docs/mechanisms/person-weighted.md)
    :param counts: with ``selection="weighted_gaussian"``: also release the selected keys' noisy
        bounded counts (half of the budget's ρ); False releases the keys with their noisy scores
    :returns: a :class:`dpsketch.Release`; ``metadata["unit"]`` and ``metadata["method"]`` say
        what was protected and what ran
    """
    u = as_unit(unit, public_length)
    m = route_heavy_hitters(u, method, k=k, top_k=top_k, passes=passes, capacity=capacity,
                            length_epsilon=length_epsilon, length_delta=length_delta, noise=noise,
                            selection=selection, counts=counts)
    if m == "pmg":
        return _finish(_pmg(data, cast(Row, u), k=k, top_k=top_k, capacity=capacity, epsilon=epsilon, delta=delta,
                            column=column, format=format, keys=keys, seed=seed, budget=budget,
                            length_epsilon=length_epsilon, length_delta=length_delta, chunk_size=chunk_size),
                       u, m)
    if m in ("dpss", "dpss_two_pass"):
        from .mechanisms.dpss import heavy_hitters as dpss_heavy_hitters

        rel = dpss_heavy_hitters(data, k=k, epsilon=epsilon, delta=delta, top_k=top_k, capacity=capacity,
                                 passes=2 if m == "dpss_two_pass" else 1, cut=cut, column=column, format=format,
                                 keys=keys, seed=seed, public_length=cast(Row, u).public_length,
                                 length_epsilon=length_epsilon, length_delta=length_delta, budget=budget,
                                 chunk_size=chunk_size)
        return _finish(rel, u, m)
    u = cast(Person, u)  # route_heavy_hitters returned a person-level method
    if m == "exact":
        if selection is not None:
            rel = _person_weighted(data, u, column=column, format=format, keys=keys, epsilon=epsilon, delta=delta,
                                   counts=counts, seed=seed, budget=budget)
            return _finish(rel, u, m)
        rel = _person_exact(data, u, column=column, format=format, keys=keys, epsilon=epsilon, delta=delta,
                            noise=noise, top_k=top_k, seed=seed, budget=budget)
        return _finish(rel, u, m)
    rel = _person_bounded_memory(data, u, column=column, format=format, keys=keys, k=k, capacity=capacity,
                                 epsilon=epsilon, delta=delta, seed=seed, budget=budget)
    return _finish(rel, u, m)


def route_heavy_hitters(u, method: Any, *, k=None, top_k=None, passes=None, capacity=None, length_epsilon=None,
                        length_delta=None, noise: str = "gaussian", selection=None, counts: bool = True) -> str:
    """The method :func:`heavy_hitters` runs for the unit ``u`` (a Row or a Person) and ``method``
    ("auto" resolved), after every check that reads only these options. :func:`dpsketch.plan`
    calls it too, so a plan and a release never route differently (docs/routes.md, Plans)."""
    m = _check_method(method, HEAVY_HITTER_METHODS)
    _check_selection(u, m, selection, counts, top_k=top_k, noise=noise)
    if passes not in (None, 1, 2) or isinstance(passes, bool):
        raise ParameterError(f"passes must be 1 or 2, got {passes!r}")
    if isinstance(u, Row):
        if m == "auto":
            m = "dpss_two_pass" if passes == 2 else "dpss"
        if m in ("exact", "bounded_memory"):
            raise ParameterError(f"method={m!r} protects a person: pass unit=dpsketch.Person(id=..., "
                                 f"{'max_keys' if m == 'exact' else 'max_rows'}=...)")
        if passes is not None and (passes == 2) != (m == "dpss_two_pass"):
            raise ParameterError(f"passes={passes!r} does not go with method={m!r}; passes=2 is method='dpss_two_pass'")
        return m
    # one person
    if m == "auto":
        m = "exact" if u.max_keys is not None else "bounded_memory"
    if m in ("dpss", "dpss_two_pass", "pmg"):
        raise ParameterError(f"method={m!r} protects one row; with unit=Person(...) use method='exact' (max_keys) "
                             "or 'bounded_memory' (max_rows)")
    if m == "exact" and u.max_keys is None:
        raise ParameterError("method='exact' bounds each person to max_keys keys: pass Person(id=..., max_keys=m)")
    if m == "bounded_memory" and u.max_rows is None:
        raise ParameterError("method='bounded_memory' keeps each person's first max_rows rows: pass "
                             "Person(id=..., max_rows=r)")
    if passes is not None or length_epsilon is not None or length_delta is not None:
        raise ParameterError("passes, length_epsilon and length_delta are options of the row-level methods")
    if m == "exact":
        if k is not None:
            raise ParameterError("the person-level exact method releases every key whose noisy bounded count passes "
                                 "its threshold; it makes no length estimate for a frequency cut k: pass top_k=N for "
                                 "the N largest, or neither")
        if capacity is not None:
            raise ParameterError("capacity is an option of the summary-based methods, not of method='exact'")
        return m
    if top_k is not None:
        raise ParameterError("method='bounded_memory' releases by a frequency cut: pass k= (frequency about n/k or "
                             "more); for the N largest keys of each person's bounded rows use max_keys (exact)")
    if noise != "gaussian":
        raise ParameterError("noise is an option of method='exact'")
    if k is None:
        raise ParameterError("method='bounded_memory' needs k= (keep keys of frequency about n/k or more)")
    return m


SELECTIONS = ("weighted_gaussian",)


def _check_selection(u, m: str, selection, counts, *, top_k, noise) -> None:
    """``selection``/``counts`` go with the person-level exact method only (docs/routes.md). The
    default stays the uniform threshold: "auto" never switches to the weighted selection, so seeded
    calls keep their outputs."""
    check("counts", counts, Instance(bool))
    if selection is None:
        if not counts:
            raise ParameterError("counts=False goes with selection='weighted_gaussian' (the keys without counts)")
        return
    check("selection", selection, Options(SELECTIONS))
    if not isinstance(u, Person) or u.max_keys is None or m not in ("auto", "exact"):
        raise ParameterError("selection='weighted_gaussian' is a person-level exact method: pass "
                             "unit=dpsketch.Person(id=..., max_keys=m) and method='auto' or 'exact'")
    if top_k is not None:
        raise ParameterError("selection='weighted_gaussian' releases every key whose weighted score passes its "
                             "threshold; top_k ranks by Gumbel noise instead: pass one of them")
    if noise != "gaussian":
        raise ParameterError("selection='weighted_gaussian' adds discrete Gaussian noise: noise='laplace' does not "
                             "apply")


def _person_weighted(data, unit: Person, *, column, format, keys, epsilon, delta, counts, seed, budget):
    from .mechanisms import unit_weighted as UW

    if _is_path(data):
        raise ParameterError("selection='weighted_gaussian' reads its data in memory: read the file's columns into "
                             "a DataFrame or an Arrow table first")
    keys_col, ids = _person_columns(data, column, unit)
    return UW.weighted_heavy_hitters(keys_col, ids, epsilon=epsilon, delta=delta, max_keys_per_unit=unit.max_keys,
                                     max_rows_per_key=unit.max_rows_per_key, counts=counts, seed=seed, budget=budget)


def _pmg(data, unit: Row, *, k, top_k, capacity, epsilon, delta, column, format, keys, seed, budget,
         length_epsilon, length_delta, chunk_size) -> Release:
    from .mechanisms.dpss import _batches
    from .sketches.counters import MisraGries

    if capacity is None:
        if k is None and top_k is None:
            raise ParameterError("method='pmg' needs capacity= (Misra-Gries counters), or k / top_k to size it")
        capacity = 2 * (k if k is not None else top_k)
    summary = MisraGries(capacity)
    for batch in _batches(data, column=column, format=format, keys=keys, chunk_size=chunk_size):
        summary.update_many(batch)
    options = {"top_k": top_k} if top_k is not None else {"k": k}
    return summary.release(epsilon=epsilon, delta=delta, seed=seed, public_length=unit.public_length,
                           length_epsilon=length_epsilon, length_delta=length_delta, budget=budget, **options)


def _person_exact(data, unit: Person, *, column, format, keys, epsilon, delta, noise, top_k, seed, budget):
    from .mechanisms import unit_level as U

    selection = None if top_k is None else "gumbel"
    if _is_path(data):
        if unit.id_column is None:
            raise ParameterError("a file's privacy ids are a column of it: pass Person(id='column name', ...)")
        from .io import input as _input

        src = _input.Source(data, format=format, column=column, privacy_id=unit.id_column, keys=keys)
        bounder = U.ContributionBounder(max_keys_per_unit=unit.max_keys, max_rows_per_key=unit.max_rows_per_key,
                                        seed=seed)
        for k_batch, id_batch in src.pairs():
            bounder.add(k_batch, id_batch)
        return U.release_bounded_counts(bounder.bounded(), epsilon=epsilon, delta=delta, noise=noise,
                                        selection=selection, k=top_k, seed=seed, budget=budget)
    keys_col, ids = _person_columns(data, column, unit)
    return U.unit_heavy_hitters(keys_col, ids, epsilon=epsilon, delta=delta, max_keys_per_unit=unit.max_keys,
                                max_rows_per_key=unit.max_rows_per_key, noise=noise, selection=selection, k=top_k,
                                seed=seed, budget=budget)


def _person_bounded_memory(data, unit: Person, *, column, format, keys, k, capacity, epsilon, delta, seed, budget):
    from .mechanisms.unit_level import UnitStream

    stream = UnitStream("spacesaving", capacity=2 * k if capacity is None else capacity,
                        max_rows_per_unit=unit.max_rows)
    if _is_path(data):
        if unit.id_column is None:
            raise ParameterError("a file's privacy ids are a column of it: pass Person(id='column name', ...)")
        from .io import input as _input

        src = _input.Source(data, format=format, column=column, privacy_id=unit.id_column, keys=keys)
        for k_batch, id_batch in src.pairs():
            stream.update(k_batch, id_batch)
    else:
        keys_col, ids = _person_columns(data, column, unit)
        stream.update(keys_col, ids)
    return stream.release(epsilon=epsilon, delta=delta, k=k, seed=seed, budget=budget)


def _values(data: Any, column: Optional[str]):
    if _is_frame(data):
        if column is None:
            raise ParameterError(f"a {type(data).__name__} holds several columns; pass column= to name the values")
        col = _frame_column(data, column, "column")
        return col.to_numpy(zero_copy_only=False) if hasattr(col, "to_numpy") and hasattr(col, "type") else col
    if _is_path(data):
        raise ParameterError("quantiles of a file: read the column into an array first, or use the command line "
                             "(dpsketch quantiles FILE --column ...), which reads it in bounded memory")
    if column is not None:
        raise ParameterError("column= names a column of a DataFrame or an Arrow table; this data is an array")
    return data


@validate_params(["epsilon", "delta", "rho", "bounds", "universe_bits", "seed"])
def quantiles(
    data: Any, qs: Any, *, bounds: Any = None, epsilon: Optional[float] = None, delta: Optional[float] = None,
    rho: Optional[float] = None, unit: Any = None, method: str = "auto", column: Optional[str] = None,
    scale: str = "linear", relative_accuracy: float = 0.01, integer: bool = False, universe_bits: Optional[int] = None,
    gamma: float = 0.01, seed: Optional[int] = None, budget: Optional[Budget] = None,
) -> Release:
    """Differentially private quantiles of ``data`` at the levels ``qs`` under the privacy unit ``unit``.

    :param data: the values: an array or list of numbers, or a DataFrame / Arrow table / DuckDB
        relation with ``column=``
    :param qs: the levels, each in [0, 1]
    :param bounds: ``(lo, hi)``: the public value range (never taken from the data); values
        outside are clamped into it
    :param epsilon: ε of the release (a row: pure ε-DP; a person: with ``delta``, or alone for the
        Laplace noise)
    :param delta: δ of a person-level release converted from zCDP
    :param rho: ρ-zCDP of a person-level release instead of (ε, δ)
    :param unit: ``dpsketch.Row()`` (default) or ``dpsketch.Person(id=..., max_rows=r)``
    :param method: ``"auto"`` or one of :data:`QUANTILE_METHODS` (``exp``, ``joint``,
        ``recursive`` for a row; ``dyadic`` for a person)
    :param column: the value column of a DataFrame or table
    :param scale: ``"linear"`` or ``"log"`` (positive heavy-tailed data; row-level methods)
    :param relative_accuracy: the log scale's bucket accuracy α
    :param integer: integer data with ties (row-level methods)
    :param universe_bits: integers in [0, 2^L) instead of ``bounds`` (person-level method)
    :param gamma: the dyadic sketch's error parameter (person-level method)
    :param seed: makes the draws reproducible and therefore NOT secret
    :param budget: a :class:`dpsketch.Budget` charged before anything is drawn
    :returns: a :class:`dpsketch.Release` whose items are the (q, value) pairs in the order of
        ``qs``; ``metadata["unit"]`` and ``metadata["method"]`` say what was protected and what ran
    """
    u = as_unit(unit)
    m = route_quantiles(u, method, qs, epsilon=epsilon, delta=delta, rho=rho, universe_bits=universe_bits,
                        scale=scale, integer=integer)
    if isinstance(u, Row):
        from .mechanisms.quantiles import quantiles as inmemory_quantiles

        rel = inmemory_quantiles(_values(data, column), qs, bounds=bounds, epsilon=cast(float, epsilon),
                                 method=method, scale=scale, relative_accuracy=relative_accuracy, integer=integer,
                                 seed=seed, budget=budget)
        return _finish(rel, u, m)
    from .mechanisms.unit_level import unit_quantiles

    values, ids = _person_columns(data, column, u)
    rel = unit_quantiles(values, ids, qs, max_rows_per_unit=cast(int, u.max_rows), bounds=bounds,
                         universe_bits=universe_bits, gamma=gamma, rho=rho, epsilon=epsilon, delta=delta, seed=seed,
                         budget=budget)
    return _finish(rel, u, "dyadic")


def route_quantiles(u, method: Any, qs: Any, *, epsilon=None, delta=None, rho=None, universe_bits=None,
                    scale: str = "linear", integer: bool = False) -> str:
    """The method :func:`quantiles` runs for the unit ``u`` and ``method`` ("auto" resolved from
    the number of distinct levels in ``qs``, never from the data), after every check that reads
    only these options. :func:`dpsketch.plan` calls it too (docs/routes.md, Plans)."""
    m = _check_method(method, QUANTILE_METHODS)
    if isinstance(u, Row):
        if u.public_length:
            raise ParameterError("quantiles do not read the number of rows: pass unit=dpsketch.Row()")
        if m == "dyadic":
            raise ParameterError("method='dyadic' is the person-level method here; a row-level dyadic sketch "
                                 "for streams is dpsketch.PrivateDyadicCountSketch")
        if delta is not None or rho is not None or universe_bits is not None:
            raise ParameterError("the row-level quantile methods are pure ε-DP on bounds=(lo, hi): pass epsilon "
                                 "and bounds only (delta, rho and universe_bits are person-level options)")
        if epsilon is None:
            raise ParameterError("pass epsilon= (the row-level quantile methods are pure ε-DP)")
        from .mechanisms.quantiles import _check_levels, choose_method

        return choose_method(m, len(np.unique(_check_levels(qs)[0])))
    if m not in ("auto", "dyadic"):
        raise ParameterError(f"method={m!r} protects one row; with unit=Person(...) quantiles use method='dyadic'")
    if u.max_rows is None:
        raise ParameterError("person-level quantiles keep each person's first max_rows values: pass "
                             "Person(id=..., max_rows=r)")
    if scale != "linear" or integer:
        raise ParameterError("scale and integer are options of the row-level methods")
    return "dyadic"
