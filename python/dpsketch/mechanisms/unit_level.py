"""One person as the privacy unit (docs/privacy.md §Privacy unit).

Neighbouring data sets differ by **all rows of one privacy unit** (a user id column aligned with
the keys). Each unit's contribution is bounded first, by a rule that reads only that unit's own
rows: keep the ``max_keys_per_unit`` (m) distinct keys with the smallest salted hash
h(salt, unit, key), and at most ``max_rows_per_key`` (c) rows of each kept key. Then

- the **exact route** (:func:`unit_heavy_hitters`, :func:`release_bounded_counts`): the bounded
  count of every key, discrete Gaussian noise of ℓ2-sensitivity c·√m (or discrete Laplace of
  ℓ1-sensitivity m·c), and the stable-key threshold τ, whose δ_τ = 1 − (1 − P[noise > τ − c])^m
  covers the keys only the removed unit holds; optionally ``selection="gumbel"`` ranks exactly k of
  the keys that passed by one-shot Gumbel (= peeling) on their bounded counts;
- the **bounded-memory route** (:class:`UnitStream`; :func:`unit_calibration`,
  :class:`UnitRowLimiter`): DPSS or PMG (or any element-level mechanism) run on the first r rows
  of each unit, at the per-row (ε/r, δ') that group privacy turns into (ε, δ) for the unit;
- **quantiles** (:func:`unit_quantiles`, :func:`release_unit_quantiles`): per unit the r rows with
  the smallest salted hash of (unit, value, index among the unit's equal values)
  (:func:`bound_rows_per_unit`), then a dyadic sketch whose noise is calibrated once for a unit of
  r rows (ℓ1 = r·S, ℓ2² = r²·S).

Bounding (the exact route) runs in C++ (cpp/include/dpsketch/privacy_unit/bound_contributions.hpp)
over dictionary codes of the two columns: besides the columns themselves, ~12 bytes a row (two
4-byte codes and the rows' keys grouped by unit) and 30-100 bytes per distinct unit or key (the
code tables); :class:`ContributionBounder` takes the columns in batches and keeps only the two
codes a row (8 bytes) and the code tables; the bounded-memory route keeps one exact row counter per
unit seen (9 bytes per int id, measured).
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Optional

import numpy as np

from .. import _core, _seeds
from ..accounting.budget import Budget, charging
from ..accounting.calibration import (check_privacy_params, dgauss_tail_gt, unit_cell_sensitivities, unit_group_guarantee, unit_group_privacy, used_value, zcdp_epsilon, zcdp_rho_for)
from ..errors import InternalError, ParameterError, ParameterTypeError
from ..release import Release, quantiles_release, with_intervals
from ..sketches.counters import MisraGries, SpaceSaving
from .top_k import gumbel_top_k
from ..intervals import noise_log_tail
from ._planning import RELEASE_PROBABILITIES, _smallest
from .._validation import check_int, validate_params

__all__ = ["PRIVACY_UNIT_ID", "BoundedContributions", "ContributionBounder", "UnitRowLimiter", "UnitStream", "bound_contributions",
           "bound_rows_per_unit", "release_bounded_counts", "release_unit_quantiles", "unit_calibration",
           "unit_dyadic_sensitivities", "unit_heavy_hitters", "unit_quantiles", "unit_quantiles_cost",
           "unit_release_cost"]

PRIVACY_UNIT_ID = "privacy_id"  # metadata['privacy_unit'] of every unit-level release
_MAX_BOUND = 1 << 20


# -- missing values: a row without a key or a privacy id is dropped --------------------------------

def _missing_mask(col) -> Optional[np.ndarray]:
    """Where ``col`` (numpy, list, pandas/polars Series, Arrow array) has no value: None, NaN,
    pandas NA, an Arrow or polars null. None when every row has one (docs/privacy.md §Privacy unit:
    such a row is dropped, row by row, as the command line and Spark drop it)."""
    mod = type(col).__module__
    if mod.startswith("pyarrow"):
        if not col.null_count:
            return None
        m = col.is_null()
        m = m.combine_chunks() if hasattr(m, "combine_chunks") else m
        return m.to_numpy(zero_copy_only=False)
    if mod.startswith("polars"):
        m = col.is_null()
        if col.dtype.is_float():
            m = m | col.is_nan()
        out = m.to_numpy()
    elif mod.startswith("pandas"):
        out = col.isna().to_numpy()
    else:
        arr = col if isinstance(col, np.ndarray) else np.array(col, dtype=object) if isinstance(col, list) else None
        if arr is None or arr.ndim != 1:
            return None
        if arr.dtype.kind == "f":
            out = np.isnan(arr)
        elif arr.dtype.kind == "O":
            out = np.fromiter((_is_missing(x) for x in arr.tolist()), dtype=bool, count=len(arr))
        else:
            return None
    return out if out.any() else None


def _to_numpy(values) -> np.ndarray:
    """A Series or an Arrow array as numpy (Arrow strings and nulls need a copy)."""
    if type(values).__module__.startswith("pyarrow"):
        return values.to_numpy(zero_copy_only=False)
    return values.to_numpy()


def _is_missing(x) -> bool:
    if x is None:
        return True
    if isinstance(x, (float, np.floating)):
        return bool(x != x)
    return type(x).__name__ in ("NAType", "NaTType")  # pandas' missing markers


def _take(col, keep: np.ndarray, labels: bool = True):
    """The rows of ``col`` where ``keep`` is True, in ``col``'s own kind. ``labels`` (keys and
    ids): a float array whose remaining values are all integers becomes int64 -- the integers a
    missing value had turned into floats (pandas)."""
    mod = type(col).__module__
    if mod.startswith("pyarrow"):
        import pyarrow as pa

        return col.filter(pa.array(keep))
    if mod.startswith(("polars", "pandas")):
        col = col.to_numpy()
    arr = np.array(col, dtype=object) if isinstance(col, list) else np.asarray(col)
    out = arr[keep]
    if labels and out.dtype.kind == "f" and len(out) and np.all(np.isfinite(out)) and np.all(out == np.floor(out)) \
            and np.all(np.abs(out) < 2.0**63):
        out = out.astype(np.int64)  # integers that a missing value had made float (pandas): their own values
    return out


def _present_rows(*columns):
    """``columns`` (aligned) without the rows where any of them has no value."""
    masks = [m for m in (_missing_mask(c) for c in columns) if m is not None]
    if not masks:
        return columns
    lengths = {len(c) for c in columns}
    if len(lengths) != 1 or any(len(m) != len(columns[0]) for m in masks):
        return columns  # unequal lengths: the caller's own check names them
    keep = ~np.logical_or.reduce(masks)
    return tuple(_take(c, keep) for c in columns)


def _check_bounds(m, c):
    return (check_int("max_keys_per_unit", m, 1, _MAX_BOUND), check_int("max_rows_per_key", c, 1, _MAX_BOUND))


# -- contribution bounding ----------------------------------------------------------------------

def _column(values, name: str) -> np.ndarray:
    """An int64 or str column as a numpy array; floats and mixed types are refused (rows without a
    value are dropped before, by :func:`_present_rows`)."""
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = _to_numpy(values)
    arr = np.asarray(values) if not isinstance(values, list) else np.array(values, dtype=object)
    if arr.ndim != 1:
        raise ParameterError(f"{name} must be one-dimensional")
    if arr.dtype.kind in "iu":
        if arr.dtype.kind == "u" and arr.size and int(arr.max()) > 2**63 - 1:
            raise ParameterError(f"{name} holds integers above 2**63 - 1; pass int64 values or strings")
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind in "US":
        return arr.astype(str, copy=False)
    if arr.dtype.kind == "O":
        kinds = {type(v) for v in arr.tolist()}
        if kinds <= {str}:
            return arr.astype(str)
        if kinds <= {int} or kinds <= {int, np.int64}:
            return np.array(arr.tolist(), dtype=np.int64)
        raise ParameterTypeError(f"{name} must hold ints or strs (one type, no None/NaN), got {sorted(k.__name__ for k in kinds)}")
    raise ParameterTypeError(f"{name} must hold ints or strs, got dtype {arr.dtype}; drop or map nulls and floats first")


def _exact_column(values, name: str) -> np.ndarray:
    """:func:`_column`, except that a column of str objects stays an object array of those very
    strs. numpy's ``U`` and ``S`` dtypes drop trailing NULs, so ``"a"`` and ``"a\\0"`` would become
    one value there: ids and keys are told apart by their exact bytes (docs/privacy.md §Privacy
    unit). A numpy 2 ``StringDType`` column (which keeps them) is read the same way."""
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = _to_numpy(values)
    arr = np.asarray(values) if not isinstance(values, list) else np.array(values, dtype=object)
    if arr.ndim == 1 and arr.dtype.kind == "T":
        return arr.astype(object)
    if arr.ndim == 1 and arr.dtype.kind == "O" and len(arr) and set(map(type, arr.tolist())) == {str}:
        return arr
    return _column(arr, name)


def _exact_strs(arr: np.ndarray) -> np.ndarray:
    """A 1-D array of str (object, ``U`` or ``StringDType``) in a dtype that sorts and compares the
    exact strings: numpy 2's ``StringDType`` (keeps trailing NULs, sorts natively), else the object
    array itself."""
    string_dtype = getattr(getattr(np, "dtypes", None), "StringDType", None)
    if string_dtype is not None:
        return arr.astype(string_dtype(), copy=False)
    return arr.astype(object, copy=False)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, vectorised (uint64 arithmetic wraps); the C++ coder's int hash is
    ``_mix(value ^ salt)`` (cpp/include/dpsketch/privacy_unit/bound_contributions.hpp)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


_KEY_SALT_TWEAK = 0x5A5A5A5A5A5A5A5A  # keys are hashed with salt ^ this, units with salt


def _bounding_column(values, name: str) -> np.ndarray:
    """The column as the coder reads it: what :func:`_column` returns, except that an object array
    (or a list) starting with a str is passed on as it is: the C++ coder checks every element as it
    reads it, and :func:`_codes` falls back to :func:`_column` for the error when one is not a str."""
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = _to_numpy(values)
    if isinstance(values, list):
        values = np.array(values, dtype=object)
        if values.ndim != 1:  # a list of equal-length lists: let _column name the problem
            return _column(values, name)
    if isinstance(values, np.ndarray) and values.dtype.kind == "O" and values.ndim == 1 and len(values) \
            and isinstance(values[0], str):
        return values
    return _column(values, name)


def _codes(col: np.ndarray, name: str, salt: int, values: bool = True):
    """``(codes, distinct values or None, their salted hashes)`` of a column (code i: the i-th
    distinct value in order of first appearance). Codes only name groups of equal values; the
    hashes are functions of the values alone."""
    if col.dtype.kind == "i":
        return _core.privacy_unit.encode_ints(col, salt)
    try:
        codes, first, hashes = _core.privacy_unit.encode_strs(col, salt)
    except (TypeError, ValueError):
        if col.dtype.kind != "O":
            raise
        # the documented error for mixed types, None, NaN; an object array of ints is coded as ints
        return _codes(_column(col, name), name, salt, values)
    if not values:
        return codes, None, hashes
    distinct = col[first]
    return codes, (distinct.astype(str) if distinct.dtype.kind == "O" else distinct), hashes


def _rank(values: np.ndarray) -> np.ndarray:
    """Each value's rank in value order (the tie-break of equal pair hashes)."""
    rank = np.empty(len(values), dtype=np.uint64)
    rank[np.argsort(values, kind="stable")] = np.arange(len(values), dtype=np.uint64)
    return rank


class BoundedContributions:
    """Per-key counts after contribution bounding, with the bounds they hold for.

    Produced only by :func:`bound_contributions` (and the bounding front ends): there is no public
    constructor, the object is immutable, ``dataclasses.replace`` does not apply, a copy is the
    object itself, and it does not pickle, so counts can never be paired with bounds they were
    not bounded by. The arrays are read-only views. The bounds describe these keys: a
    transformation of the keys (merging, truncating or re-mapping them) can put more than c rows of
    one unit on a key or more than m keys in one unit, so bound the transformed keys again instead
    of re-using these counts (docs/privacy.md §Privacy unit).

    :ivar keys: distinct keys with a positive bounded count (int64 or str array), in key order
    :ivar counts: the bounded count of each key (int64)
    :ivar max_keys_per_unit: m
    :ivar max_rows_per_key: c
    """

    __slots__ = ("_keys", "_counts", "_m", "_c")

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise ParameterTypeError("BoundedContributions come from dpsketch.bound_contributions(keys, privacy_id, ...)")

    @classmethod
    def _sealed(cls, keys: np.ndarray, counts: np.ndarray, m: int, c: int) -> "BoundedContributions":
        """The only way in: counts bounded by this module's rule with (m, c)."""
        obj = object.__new__(cls)
        keys.setflags(write=False)  # fresh arrays of the bounding: frozen where they are owned
        counts.setflags(write=False)
        for name, value in (("_keys", _read_only(keys)), ("_counts", _read_only(counts)), ("_m", int(m)),
                            ("_c", int(c))):
            object.__setattr__(obj, name, value)
        return obj

    keys = property(lambda self: _read_only(self._keys), doc="Distinct keys with a positive bounded count.")
    counts = property(lambda self: _read_only(self._counts), doc="The bounded count of each key (int64).")
    max_keys_per_unit = property(lambda self: self._m, doc="m: the most distinct keys one unit contributes to.")
    max_rows_per_key = property(lambda self: self._c, doc="c: the most rows one unit contributes to one key.")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("BoundedContributions are read-only: bound the data again for other bounds")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("BoundedContributions are read-only")

    def __copy__(self) -> "BoundedContributions":
        return self  # immutable: a copy is the same counts under the same bounds

    def __deepcopy__(self, memo: dict) -> "BoundedContributions":
        return self

    def __reduce_ex__(self, protocol: object) -> object:
        # A pickle could be edited to pair these counts with other bounds; bound where you release.
        raise ParameterTypeError("BoundedContributions are not pickled: their bounds could not be checked after "
                        "the round trip; pass the rows (keys, privacy ids) and call bound_contributions "
                        "in the process that releases")

    def __repr__(self) -> str:  # no keys, no counts: they are data
        return f"BoundedContributions(max_keys_per_unit={self._m}, max_rows_per_key={self._c})"


def _read_only(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.setflags(write=False)
    return v




def _bounded_from_aggregates(keys: np.ndarray, counts: np.ndarray, m: int, c: int) -> BoundedContributions:
    """Per-key counts that a front end bounded by this module's rule elsewhere (the Spark route runs
    it in the JVM: the m smallest xxhash64(salt, unit, key) per unit, <= c rows each)."""
    keep = counts > 0
    k, n = np.asarray(keys)[keep], np.asarray(counts, dtype=np.int64)[keep]
    order = np.argsort(k, kind="stable")
    k, n = k[order], n[order]
    k.setflags(write=False)
    n.setflags(write=False)
    return BoundedContributions._sealed(k, n, m, c)


@validate_params(["max_keys_per_unit", "max_rows_per_key", "seed"])
def bound_contributions(keys, privacy_id, *, max_keys_per_unit: int, max_rows_per_key: int = 1,
                        seed: int | None = None) -> BoundedContributions:
    """Bound each privacy unit's contribution (docs/privacy.md §Privacy unit): per unit, the m
    distinct keys with the smallest h(salt, unit, key) and at most c rows of each. The rule reads
    only the unit's own rows and not their order, so removing one unit leaves every other unit's
    kept rows unchanged. The salt is drawn from the secure generator (``seed``: reproducible, NOT
    secret, derived by the seed rule). ``keys`` and ``privacy_id``: aligned 1-D int or str columns.

    :param max_keys_per_unit: m: the most distinct keys one privacy unit contributes (more: m kept, chosen
        by a salted hash)
    :param max_rows_per_key: c: the most rows one privacy unit contributes to one key
    """
    m, c = _check_bounds(max_keys_per_unit, max_rows_per_key)
    keys, privacy_id = _present_rows(keys, privacy_id)  # a row without a key or an id is dropped
    k = _bounding_column(keys, "keys")
    u = _bounding_column(privacy_id, "privacy_id")
    if len(k) != len(u):
        raise ParameterError("keys and privacy_id must have the same length (one privacy id per row)")
    salt = _seeds.rng(seed, "salt")[0].next_u64()
    if len(k) == 0:
        k = _column(k, "keys")
        return BoundedContributions._sealed(k[:0], np.zeros(0, np.int64), m, c)
    key_codes, key_values, key_hashes = _codes(k, "keys", salt ^ _KEY_SALT_TWEAK)
    unit_codes, _, unit_hashes = _codes(u, "privacy_id", salt, values=False)
    # Per unit: the m keys with the smallest pair hash of the two value hashes, <= c rows each.
    # Equal pair hashes in one unit are ties of the key hashes (impossible for int keys, whose
    # hash is a bijection); the kernel breaks them by code and says when that decided what a unit
    # kept, and then the rule's tie-break, the key's value order, is applied instead.
    counts, tie = _core.privacy_unit.bound_counts(unit_codes, key_codes, unit_hashes, key_hashes, m, c)
    if tie:
        counts, _ = _core.privacy_unit.bound_counts(unit_codes, key_codes, unit_hashes, key_hashes, m, c,
                                                    _rank(key_values))
    del unit_codes, key_codes
    nz = np.flatnonzero(counts)
    out_keys, out_counts = key_values[nz], counts[nz]
    order = np.argsort(out_keys, kind="stable")
    out_keys, out_counts = out_keys[order], out_counts[order]
    out_keys.setflags(write=False)
    out_counts.setflags(write=False)
    return BoundedContributions._sealed(out_keys, out_counts, m, c)


def _arrow_batch(values, name: str):
    """A pyarrow array as :class:`ContributionBounder` hands it to the C++ coder: (offsets, data)
    views of a (large_)string array's buffers (no copy; a sliced array's offset applied), or an
    int64 numpy array of an integer array. Nulls are refused, as None is in a column."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if values.null_count:
        raise ParameterError(f"{name} holds nulls; drop or map them first")
    typ = values.type
    if pa.types.is_integer(typ):
        return _column(values.to_numpy(), name)
    if hasattr(pa.types, "is_string_view") and pa.types.is_string_view(typ):
        values, typ = values.cast(pa.large_string()), pa.large_string()
    if not (pa.types.is_string(typ) or pa.types.is_large_string(typ)):
        raise ParameterTypeError(f"{name} must hold ints or strs, got Arrow type {typ}")
    _validity, offsets_buf, data_buf = values.buffers()
    width = np.int64 if pa.types.is_large_string(typ) else np.int32
    offsets = np.frombuffer(offsets_buf, dtype=width)[values.offset : values.offset + len(values) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return offsets, data


def _coder_batch(values, name: str):
    """One batch of a column as PairCoder.add reads it: Arrow arrays through :func:`_arrow_batch`,
    anything else as :func:`_bounding_column` reads a column (int64, or str values)."""
    if type(values).__module__.startswith("pyarrow"):
        return _arrow_batch(values, name)
    return _bounding_column(values, name)


@contextlib.contextmanager
def _named_errors(*columns):
    """A coder's TypeError/ValueError on an object array starting with a str becomes _column's
    error, which names what else the column holds."""
    try:
        yield
    except (TypeError, ValueError):
        for col, name in columns:
            if isinstance(col, np.ndarray) and col.dtype.kind == "O":
                _column(col, name)
        raise


class ContributionBounder:
    """:func:`bound_contributions` over columns that arrive in batches: ``add(keys, privacy_id)``
    per batch of aligned rows, then :meth:`bounded`. Each batch is dictionary-coded in C++ as it
    is added (the GIL released, so a reader thread can produce the next batch meanwhile) and only
    the two codes of each row (4 bytes each) and the code tables are kept; key values are looked
    up only for the keys with a positive bounded count. The result equals
    ``bound_contributions(all keys, all ids, ...)`` with the same seed: codes only group equal
    values, and the rule reads the values' salted hashes (docs/privacy.md §Privacy unit).

    Batches: pyarrow string, large_string or integer arrays (read from their buffers, no
    conversion), numpy int or str arrays, lists, pandas Series. A column's batches must all hold
    ints or all strs; nulls, NaN and mixed types are refused.

    :param max_keys_per_unit: m: the most distinct keys one privacy unit contributes (more: m kept, chosen
        by a salted hash)
    :param max_rows_per_key: c: the most rows one privacy unit contributes to one key
    :param seed: a user seed for the salt of the hash that picks the kept keys (reproducible, NOT secret)
    """

    @validate_params(["max_keys_per_unit", "max_rows_per_key", "seed"])
    def __init__(self, *, max_keys_per_unit: int, max_rows_per_key: int = 1, seed: int | None = None):
        self._m, self._c = _check_bounds(max_keys_per_unit, max_rows_per_key)
        salt = _seeds.rng(seed, "salt")[0].next_u64()
        self._coder = _core.privacy_unit.PairCoder(salt ^ _KEY_SALT_TWEAK, salt)

    def add(self, keys, privacy_id) -> None:
        """Code one batch of aligned rows (one privacy id per key). A batch refused for its
        types or lengths leaves the bounder as it was. A row without a key or an id is dropped.

        :param keys: one batch of keys
        :param privacy_id: the privacy id of each key in the batch
        """
        keys, privacy_id = _present_rows(keys, privacy_id)
        k = _coder_batch(keys, "keys")
        u = _coder_batch(privacy_id, "privacy_id")
        with _named_errors((k, "keys"), (u, "privacy_id")):
            self._coder.add(k, u)

    def add_keys(self, keys) -> None:
        """The key half of :meth:`add`: with :meth:`add_ids` the two columns can be coded in two
        threads (one per column), each column's batches in row order; :meth:`bounded` refuses
        columns of unequal length.

        :param keys: the keys of the batch whose ids :meth:`add_ids` takes
        """
        k = _coder_batch(keys, "keys")
        with _named_errors((k, "keys")):
            self._coder.add_keys(k)

    def add_ids(self, privacy_id) -> None:
        """The privacy-id half of :meth:`add` (see :meth:`add_keys`).

        :param privacy_id: the privacy ids of the batch whose keys :meth:`add_keys` takes
        """
        u = _coder_batch(privacy_id, "privacy_id")
        with _named_errors((u, "privacy_id")):
            self._coder.add_ids(u)

    def bounded(self) -> BoundedContributions:
        """The bounded count of every key with a positive one (as :func:`bound_contributions`)."""
        m, c = self._m, self._c
        if self._coder.rows == 0:
            keys = np.zeros(0, dtype=np.int64 if self._coder.key_kind == "int" else str)
            return BoundedContributions._sealed(keys, np.zeros(0, np.int64), m, c)
        # Ties of the pair hash, as in bound_contributions: broken by code, and where that decided
        # what a unit kept, rerun with each key's rank in value order.
        counts, tie = self._coder.bound(m, c)
        if tie:
            every = np.arange(self._coder.distinct_keys, dtype=np.int64)
            counts, _ = self._coder.bound(m, c, _rank(self._key_values(every)))
        codes = self._coder.positive_codes(counts)  # in value order, as bound_contributions sorts
        out_keys, out_counts = self._key_values(codes), counts[codes]
        out_keys.setflags(write=False)
        out_counts.setflags(write=False)
        return BoundedContributions._sealed(out_keys, out_counts, m, c)

    def _key_values(self, codes: np.ndarray) -> np.ndarray:
        codes = codes.astype(np.int64, copy=False)
        values = self._coder.key_array(codes) if len(codes) else None
        if values is not None:
            return values
        values = self._coder.key_values(codes)  # raises for a value that is not UTF-8
        if isinstance(values, np.ndarray):
            return values
        return np.array(values, dtype=str) if values else np.zeros(0, dtype=str)


# -- the exact route ------------------------------------------------------------------------------

def _exact_plan(epsilon, delta, m, c, noise, selection, k):
    """The noise and threshold of the exact route (docs/privacy.md §Privacy unit): every number
    comes from calibration.py / the C++ core, and what is spent where is recorded."""
    eps, dlt = check_privacy_params(epsilon, delta)
    if noise not in ("gaussian", "laplace"):
        raise ParameterError(f"noise must be 'gaussian' or 'laplace', got {noise!r}")
    if selection not in (None, "gumbel"):
        raise ParameterError(f"selection must be None or 'gumbel', got {selection!r}")
    if (selection is None) != (k is None):
        raise ParameterError("selection='gumbel' needs k= (how many ranked keys), and k= needs selection='gumbel'")
    eps_sel = eps / 2 if selection else 0.0  # half of ε ranks, half counts and thresholds
    eps_cnt = eps - eps_sel
    plan: dict[str, Any] = {"noise": "discrete_gaussian" if noise == "gaussian" else "discrete_laplace"}
    if noise == "gaussian":
        d_noise, d_tau = dlt / 2, dlt / 2
        l2sq = c * c * m  # ℓ2 = c·√m
        rho = zcdp_rho_for(eps_cnt, d_noise)
        num, den = _core.release.gaussian_sigma2(l2sq, rho)
        rho_used = l2sq * den / (2 * num)
        sigma2 = num / den
        tail = lambda t: dgauss_tail_gt(sigma2, t)  # noqa: E731
        eps_noise = zcdp_epsilon(rho_used, d_noise)
        plan.update(sigma=math.sqrt(sigma2), sigma2=sigma2, sigma2_rational=[num, den], rho=rho_used,
                    l2_sensitivity=math.sqrt(l2sq), delta_noise=d_noise)
    else:
        d_noise, d_tau = 0.0, dlt
        l1 = m * c
        num, den = _core.release.laplace_scale(l1, eps_cnt)
        e1 = den / num  # DLap(num/den): P(Z > t) = e^{-t den/num}/(1 + e^{den/num}) (§1)
        tail = lambda t: math.exp(-e1 * t) / (1 + math.exp(e1))  # noqa: E731
        eps_noise = l1 * den / num
        plan.update(laplace_scale=num / den, laplace_scale_rational=[num, den], rho=None, l1_sensitivity=l1,
                    delta_noise=0.0)
    # τ: the smallest integer with 1 − (1 − P[noise > τ − c])^m <= δ_τ (a key held only by the
    # removed unit has bounded count <= c; at most m such keys)
    p_max = -math.expm1(math.log1p(-d_tau) / m)
    hi = 1
    while tail(hi) > p_max:
        hi *= 2
    lo = 0
    while lo < hi:  # tail is decreasing in t
        mid = (lo + hi) // 2
        if tail(mid) <= p_max:
            hi = mid
        else:
            lo = mid + 1
    t = lo
    tau = t + c
    d_tau_used = -math.expm1(m * math.log1p(-tail(t)))
    plan.update(threshold=tau, delta_threshold=d_tau_used, epsilon_counts=eps_noise, epsilon_selection=None,
                epsilon=eps_noise, delta=plan["delta_noise"] + d_tau_used, noise_param=[num, den])
    if selection:
        eps_sel_used = float(used_value(eps_sel))
        plan.update(epsilon_selection=eps_sel_used, epsilon=eps_noise + eps_sel_used,
                    gumbel_scale=c * k / eps_sel_used, k=k)
    return plan


@validate_params(["epsilon", "delta", "max_keys_per_unit", "max_rows_per_key", "max_rows_per_unit", "noise"])
def unit_release_cost(*, epsilon: float, delta: float, max_keys_per_unit: int, max_rows_per_key: int = 1,
                      max_rows_per_unit: int | None = None, noise: str = "gaussian") -> dict:
    """What (ε, δ, m, c) buys, before any data is read: for the exact route the threshold τ and the
    noise (σ or the Laplace scale); for the bounded-memory route the per-row (ε', δ') that any
    element-level mechanism runs at, with r = ``max_rows_per_unit`` (default m·c) rows per unit.

    :param epsilon: ε of the release's (ε, δ)-DP guarantee
    :param delta: δ of the release's (ε, δ)-DP guarantee, in (0, 1)
    :param max_keys_per_unit: m: the most distinct keys one privacy unit contributes (more: m kept, chosen
        by a salted hash)
    :param max_rows_per_key: c: the most rows one privacy unit contributes to one key
    :param noise: ``'gaussian'`` (discrete Gaussian, the default) or ``'laplace'`` (discrete Laplace)
        noise on the bounded counts
    """
    m, c = _check_bounds(max_keys_per_unit, max_rows_per_key)
    plan = _exact_plan(epsilon, delta, m, c, noise, None, None)
    r = m * c if max_rows_per_unit is None else check_int("max_rows_per_unit", max_rows_per_unit, 1, _MAX_BOUND**2)
    e1, d1 = unit_calibration(epsilon, delta, r)
    exact = {k: plan[k] for k in ("noise", "threshold", "delta_threshold", "epsilon", "delta") if k in plan}
    exact.update({k: plan[k] for k in ("sigma", "rho", "laplace_scale") if k in plan and plan[k] is not None})
    return {"exact": exact, "bounded_memory": {"rows_per_unit": r, "epsilon_per_row": e1, "delta_per_row": d1}}


@validate_params(["epsilon", "delta", "noise", "seed"])
def release_bounded_counts(bounded: BoundedContributions, *, epsilon: float, delta: float, noise: str = "gaussian",
                           selection: str | None = None, k: int | None = None, seed: int | None = None,
                           budget: Budget | None = None) -> Release:
    """The exact route's release of bounded per-key counts (docs/privacy.md §Privacy unit). Every key
    with a positive bounded count gets independent discrete Gaussian (ℓ2 = c·√m, δ/2 for the zCDP
    conversion) or discrete Laplace (ℓ1 = m·c) noise and is released iff count + noise > τ. With
    ``selection="gumbel"`` half of ε ranks the keys that passed by one-shot Gumbel on their bounded
    counts (scale c·k/ε_sel: k peels of a monotone exponential mechanism with score sensitivity c)
    and exactly min(k, passed) keys are released in that order; otherwise items are sorted by noisy
    value. ``budget`` is charged the reported (ε, δ) before any noise is drawn.

    :param bounded: the :class:`BoundedContributions` of :func:`bound_contributions` or
        :class:`ContributionBounder`
    :param epsilon: ε of the release's (ε, δ)-DP guarantee
    :param delta: δ of the release's (ε, δ)-DP guarantee, in (0, 1)
    :param noise: ``'gaussian'`` (discrete Gaussian, the default) or ``'laplace'`` (discrete Laplace)
        noise on the bounded counts
    :param selection: ``'gumbel'`` with ``k``: the k passing keys a one-shot Gumbel selection ranks first
        (half of ε pays for it)
    :param k: with ``selection='gumbel'``: how many keys to release
    :param seed: a user seed: reproducible noise (and hash functions), NOT secret; None: the secure
        generator
    """
    if not isinstance(bounded, BoundedContributions):
        raise ParameterTypeError("release_bounded_counts takes the BoundedContributions of dpsketch.bound_contributions")
    m, c = bounded.max_keys_per_unit, bounded.max_rows_per_key
    kk = None if k is None else check_int("k", k, 1, 2**31)
    plan = _exact_plan(epsilon, delta, m, c, noise, selection, kk)
    mechanism = f"unit.exact[{plan['noise']}{'+gumbel' if selection else ''}]"
    with charging(budget, mechanism, epsilon=plan["epsilon"], delta=plan["delta"]):
        pass  # nothing drawn yet: a refusal spends nothing
    rng, seeded = _seeds.rng(seed, "noise")
    items = _draw_release(bounded, plan, rng)
    meta = {
        "privacy_unit": PRIVACY_UNIT_ID,
        "neighbours": "add_remove_unit",
        "route": "exact",
        "max_keys_per_unit": m,
        "max_rows_per_key": c,
        "bounding": "per unit: the m distinct keys with the smallest h(salt, unit, key), <= c rows each",
        "length": "unused",
        "epsilon_requested": float(epsilon),
        "delta_requested": float(delta),
        "selection": selection,
        "reproducible_not_secret": bool(seeded),
        "reference": "docs/privacy.md §Privacy unit",
        **{kk_: v for kk_, v in plan.items() if kk_ not in ("epsilon", "delta")},
    }
    intervals, level = with_intervals(mechanism, items, meta)
    return Release(items=items, threshold=float(plan["threshold"]), epsilon=plan["epsilon"], delta=plan["delta"],
                   mechanism=mechanism, n=None, metadata=meta, rho=plan.get("rho"), intervals=intervals,
                   interval_level=level)


def _draw_release(bounded: BoundedContributions, plan: dict, rng) -> list[tuple]:
    """The random part of the exact route, from a plan of :func:`_exact_plan`: noise of the plan's
    ``noise_param`` on every bounded count, the items above τ, ranked by one-shot Gumbel of
    ``gumbel_scale`` when the plan has a selection and by noisy value otherwise. The audit
    (dpsketch.audit) draws its runs with this function."""
    num, den = plan["noise_param"]
    n = len(bounded.counts)
    z = (_core.noise.discrete_gaussian(rng, num, den, n) if plan["noise"] == "discrete_gaussian"
         else _core.noise.discrete_laplace(rng, num, den, n))
    noisy = bounded.counts + z
    passed = np.flatnonzero(noisy > plan["threshold"])
    if "gumbel_scale" in plan:
        keys = bounded.keys[passed].tolist()
        vals = noisy[passed].tolist()
        order = gumbel_top_k(bounded.counts[passed], plan["gumbel_scale"], plan["k"], rng)
        return [(keys[i], vals[i]) for i in order]
    # noisy value descending, ties by key (the keys are distinct, so the order is total)
    order = passed[np.lexsort((bounded.keys[passed], -noisy[passed]))]
    return list(zip(bounded.keys[order].tolist(), noisy[order].tolist()))


@validate_params(["epsilon", "delta", "max_keys_per_unit", "max_rows_per_key", "noise", "seed"])
def unit_heavy_hitters(keys, privacy_id, *, epsilon: float, delta: float, max_keys_per_unit: int,
                       max_rows_per_key: int = 1, noise: str = "gaussian", selection: str | None = None,
                       k: int | None = None, seed: int | None = None, budget: Budget | None = None) -> Release:
    """(ε, δ)-DP heavy hitters where the privacy unit is one ``privacy_id`` (all of a user's rows):
    :func:`bound_contributions` then :func:`release_bounded_counts` (the exact route). ``keys``
    and ``privacy_id``: aligned 1-D columns (numpy, list, pandas/polars Series) of ints or strs.

    :param epsilon: ε of the release's (ε, δ)-DP guarantee
    :param delta: δ of the release's (ε, δ)-DP guarantee, in (0, 1)
    :param max_keys_per_unit: m: the most distinct keys one privacy unit contributes (more: m kept, chosen
        by a salted hash)
    :param max_rows_per_key: c: the most rows one privacy unit contributes to one key
    :param noise: ``'gaussian'`` (discrete Gaussian, the default) or ``'laplace'`` (discrete Laplace)
        noise on the bounded counts
    :param selection: ``'gumbel'`` with ``k``: the k passing keys a one-shot Gumbel selection ranks first
        (half of ε pays for it)
    :param k: with ``selection='gumbel'``: how many keys to release
    :param seed: a user seed: reproducible noise (and hash functions), NOT secret; None: the secure
        generator
    :param budget: a :class:`dpsketch.Budget` charged before any noise is drawn
    """
    bounded = bound_contributions(keys, privacy_id, max_keys_per_unit=max_keys_per_unit,
                                  max_rows_per_key=max_rows_per_key, seed=seed)
    return release_bounded_counts(bounded, epsilon=epsilon, delta=delta, noise=noise, selection=selection, k=k,
                                  seed=seed, budget=budget)


# -- the bounded-memory route ---------------------------------------------------------------------

@validate_params({"epsilon": None, "delta": None, "rows_per_unit": "max_rows_per_unit"})
def unit_calibration(epsilon: float, delta: float, rows_per_unit: int) -> tuple[float, float]:
    """The per-row (ε', δ') at which an element-level mechanism is (ε, δ)-DP for a unit of at most
    ``rows_per_unit`` rows: group privacy, ε' = ε/r, δ' = δ(e^{ε/r} − 1)/(e^ε − 1) (docs/privacy.md
    §Privacy unit).

    :param epsilon: ε of the unit-level guarantee
    :param delta: δ of the unit-level guarantee
    """
    eps, dlt = check_privacy_params(epsilon, delta)
    r = check_int("rows_per_unit", rows_per_unit, 1, _MAX_BOUND**2)
    return unit_group_privacy(eps, dlt, r)


class _SortedRuns:
    """Exact counters for ids (int64, or byte strings for str ids) in a few sorted numpy runs:
    each id in exactly one run; runs merge when the older is at most twice the newer, so there are
    O(log n) of them. Lookups and updates are vectorised. State per id: the id's width (8 bytes,
    or the longest encoded str id of its run) plus the count dtype. No hashing into shared cells:
    each unit's counter is its own (docs/privacy.md §Privacy unit)."""

    def __init__(self, dtype):
        self._dtype = dtype
        self._keys: list[np.ndarray] = []
        self._vals: list[np.ndarray] = []

    def get(self, ids: np.ndarray):
        """(counts of the distinct ``ids``, 0 for unseen ones; where each was found)."""
        out = np.zeros(len(ids), dtype=np.int64)
        where = []
        for k, v in zip(self._keys, self._vals):
            idx = np.minimum(np.searchsorted(k, ids), len(k) - 1)
            found = k[idx] == ids
            out[found] = v[idx[found]]
            where.append((found, idx))
        return out, where

    def put(self, ids: np.ndarray, counts: np.ndarray, where) -> None:
        new = np.ones(len(ids), dtype=bool)
        for (found, idx), v in zip(where, self._vals):
            v[idx[found]] = counts[found]
            new &= ~found
        if not new.any():
            return
        order = np.argsort(ids[new], kind="stable")
        self._keys.append(ids[new][order])
        self._vals.append(counts[new][order].astype(self._dtype))
        while len(self._keys) > 1 and len(self._keys[-2]) <= 2 * len(self._keys[-1]):
            k2, v2, k1, v1 = self._keys.pop(), self._vals.pop(), self._keys.pop(), self._vals.pop()
            k = np.concatenate([k1, k2])
            order = np.argsort(k, kind="stable")
            self._keys.append(k[order])
            self._vals.append(np.concatenate([v1, v2])[order])

    def nbytes(self) -> int:
        return sum(a.nbytes for a in self._keys) + sum(a.nbytes for a in self._vals)


def _utf8_keys(u: np.ndarray) -> np.ndarray:
    """A str array as UTF-8 bytes (numpy ``S``: width = the longest id). ``U`` and ``S`` both drop
    trailing NULs, so this is one-to-one only on ids that do not end in NUL (the limiter keeps
    those apart, :func:`_nul_tailed`). ASCII ids (the usual case) are converted without per-item
    Python."""
    width = u.dtype.itemsize // 4
    if width == 0:
        return np.zeros(len(u), dtype="S1")
    codes = np.ascontiguousarray(u).view(np.uint32).reshape(len(u), width)
    if codes.size == 0 or int(codes.max()) < 128:
        return np.ascontiguousarray(codes.astype(np.uint8)).view(f"S{width}").ravel()
    return np.char.encode(u, "utf-8")


def _sentinel_keys(ids) -> np.ndarray:
    """Str ids as numpy ``S`` keys: each id's UTF-8 bytes and one 0x01 byte after them, which
    ``S`` keeps, so ids that differ only by trailing NULs get distinct keys."""
    return np.array([x.encode("utf-8") + b"\x01" for x in ids])


def _nul_tailed(u: np.ndarray) -> np.ndarray | None:
    """Mask of the str ids that end in NUL, or None when none does. A numpy ``U`` array cannot hold
    one (numpy drops them); an object array is scanned once in C (one join) and item by item only
    when that finds a NUL followed by the separator."""
    if u.dtype.kind != "O":
        return None
    ids = u.tolist()
    if "\x00\x01" not in "\x01".join(ids) + "\x01":
        return None
    mask = np.fromiter((x.endswith("\x00") for x in ids), dtype=bool, count=len(ids))
    return mask if mask.any() else None


class UnitRowLimiter:
    """Keeps the first ``max_rows_per_unit`` rows of each privacy unit, in stream order, chunk by
    chunk (the bounded-memory route). What it keeps of a unit depends only on that unit's own rows
    and their order. State: one exact row counter per unit seen, in sorted numpy arrays (9 bytes
    per unit for int ids and r < 256; str ids take their UTF-8 length + 1; measured in
    docs/privacy.md §Privacy unit). Str ids are told apart by their exact strings: ids ending in
    NUL, which numpy's ``U`` and ``S`` would fold onto the id without them, are counted in a
    store of their own under their UTF-8 bytes and a 0x01 byte."""

    @validate_params(["max_rows_per_unit"])
    def __init__(self, max_rows_per_unit: int):
        self.max_rows_per_unit = check_int("max_rows_per_unit", max_rows_per_unit, 1, _MAX_BOUND**2)
        count = np.min_scalar_type(self.max_rows_per_unit)
        self._runs = _SortedRuns(count)
        self._nul_runs = _SortedRuns(count)  # str ids ending in NUL
        self._kind: str | None = None

    def keep(self, privacy_id) -> np.ndarray:
        """A boolean mask over this chunk's rows: True for the rows still within their unit's bound.

        :param privacy_id: the privacy id of each row of the chunk
        """
        u = _exact_column(privacy_id, "privacy_id")
        if len(u) == 0:
            return np.zeros(0, dtype=bool)
        kind = "int" if u.dtype.kind == "i" else "str"
        if self._kind is not None and kind != self._kind:
            raise ParameterTypeError(f"privacy_id holds {kind}s in this chunk and {self._kind}s before; keep one type")
        self._kind = kind
        if kind == "int":
            return self._count(self._runs, u, None)
        tail = _nul_tailed(u)
        if tail is None:
            return self._count(self._runs, u.astype(str, copy=False), _utf8_keys)
        # the two stores hold disjoint sets of ids, each keyed one-to-one
        mask = np.empty(len(u), dtype=bool)
        mask[~tail] = self._count(self._runs, u[~tail].astype(str), _utf8_keys)
        mask[tail] = self._count(self._nul_runs, u[tail], _sentinel_keys)
        return mask

    def _count(self, runs: _SortedRuns, u: np.ndarray, to_keys) -> np.ndarray:
        if len(u) == 0:
            return np.zeros(0, dtype=bool)
        uniq, inv = np.unique(u, return_inverse=True)
        # position of each row among its unit's rows in this chunk (stable: stream order)
        order = np.argsort(inv, kind="stable")
        start = np.r_[0, np.flatnonzero(np.diff(inv[order])) + 1]
        pos = np.empty(len(u), dtype=np.int64)
        pos[order] = np.arange(len(u)) - np.repeat(start, np.diff(np.r_[start, len(u)]))
        if to_keys is not None:
            uniq = to_keys(uniq)
        r = self.max_rows_per_unit
        before, where = runs.get(uniq)
        mask = before[inv] + pos < r
        runs.put(uniq, np.minimum(before + np.bincount(inv, minlength=len(uniq)), r), where)
        return mask

    def state_bytes(self) -> int:
        """Bytes held by the per-unit counters (their numpy buffers)."""
        return self._runs.nbytes() + self._nul_runs.nbytes()

    def __repr__(self) -> str:
        return f"UnitRowLimiter(max_rows_per_unit={self.max_rows_per_unit})"


def _bounded_memory_plan(epsilon, delta, r: int) -> dict:
    """The per-row (ε', δ') of the bounded-memory route and the unit-level (ε, δ) it gives back
    (docs/privacy.md §Privacy unit): ε' = ε/r rounded down to a multiple of 2^-32 (what the
    element-level release uses, §1; lowered by one step if r·ε' would exceed ε), δ' chosen from ε'
    so that the group-privacy chain δ'·Σ_{i<r} e^{iε'} = δ·(e^{rε'} − 1)/(e^ε − 1) <= δ."""
    from fractions import Fraction

    eps, dlt = check_privacy_params(epsilon, delta)
    if eps / r < 2**-32:
        raise ParameterError(f"epsilon/max_rows_per_unit is below 2**-32 (epsilon={epsilon!r}, r={r}); "
                             "lower max_rows_per_unit or raise epsilon")
    e_row = used_value(eps / r)
    if r * e_row > Fraction(eps):
        e_row -= Fraction(1, 2**32)
    if e_row <= 0:
        raise ParameterError(f"epsilon/max_rows_per_unit rounds down to 0 (epsilon={epsilon!r}, r={r}); "
                             "lower max_rows_per_unit or raise epsilon")
    e1 = float(e_row)
    d1 = dlt * math.expm1(e1) / math.expm1(eps)
    eps_unit, delta_unit = unit_group_guarantee(e1, d1, r)
    # r·ε' is exact in Fraction arithmetic and <= ε; the chain sum is <= δ exactly, and its
    # floating-point evaluation may exceed δ by an ulp only
    return {"epsilon_row": e1, "delta_row": d1, "epsilon": min(eps_unit, eps), "delta": min(delta_unit, dlt)}


# Keys of an element-level release's metadata that state a per-row guarantee: a unit-level release
# moves them under "per_row_calibration", so no top-level field states a per-row figure. Besides
# these names, every key that names an ε or δ share (epsilon_*, delta_*, *_epsilon, *_delta) is
# per row: the δ of PMG's unstable labels, the envelope's δ parts, the length shares.
_ROW_LEVEL_KEYS = ("epsilon_requested", "delta_requested", "epsilon_mechanism", "delta_mechanism", "epsilon_used",
                   "length_epsilon", "length_delta", "assumes_public_length")


def _is_row_level(key: str) -> bool:
    return (key in _ROW_LEVEL_KEYS or key in ("epsilon", "delta") or key.startswith(("epsilon_", "delta_"))
            or key.endswith(("_epsilon", "_delta")))


def _split_row_level(meta: dict) -> tuple[dict, dict]:
    """An element-level release's metadata as (the fields that hold at unit level, the per-row ones)."""
    return ({k: v for k, v in meta.items() if not _is_row_level(k)},
            {k: v for k, v in meta.items() if _is_row_level(k)})


class UnitStream:
    """User-level heavy hitters of a stream too big for memory: the bounded-memory route
    (docs/privacy.md §Privacy unit). Feed aligned ``(keys, privacy_id)`` chunks with
    :meth:`update`; the first ``max_rows_per_unit`` (r) rows of each unit, in stream order
    (:class:`UnitRowLimiter`), reach a SpaceSaving (``summary="spacesaving"``, released by DPSS) or
    MisraGries (``"misragries"``, PMG) of ``capacity`` counters. :meth:`release` runs that
    element-level release at the per-row (ε', δ') of :func:`unit_calibration` and reports the
    unit-level (ε, δ) group privacy gives back; the summary is never handed out, so its per-row
    figures cannot be published as the unit's.

    Memory: the summary plus one exact counter per unit seen (9 bytes per unit for int ids, the
    UTF-8 length + 1 for str ids; measured in docs/privacy.md §Privacy unit). Units with
    more than r rows lose their later rows, not their first ones: choose r from the data's public
    description, never from the data.

    :param summary: ``'spacesaving'`` (released by DPSS, default) or ``'misragries'`` (PMG)
    :param key_type: ``'int'`` or ``'str'`` to fix the key type now (default: the first batch decides)
    """

    @validate_params(["capacity", "max_rows_per_unit"])
    def __init__(self, summary: str = "spacesaving", *, capacity: int, max_rows_per_unit: int,
                 key_type: str | None = None):
        if summary not in ("spacesaving", "misragries"):
            raise ParameterError(f"summary must be 'spacesaving' (DPSS) or 'misragries' (PMG), got {summary!r}")
        cls = SpaceSaving if summary == "spacesaving" else MisraGries
        self._summary = cls(capacity, key_type=key_type)
        self._limiter = UnitRowLimiter(max_rows_per_unit)
        self._key_kind: str | None = key_type

    max_rows_per_unit = property(lambda self: self._limiter.max_rows_per_unit, doc="r: rows kept per unit.")
    capacity = property(lambda self: self._summary.capacity, doc="Counters of the summary.")
    summary = property(lambda self: "spacesaving" if isinstance(self._summary, SpaceSaving) else "misragries",
                       doc="'spacesaving' (released by DPSS) or 'misragries' (PMG).")

    def update(self, keys, privacy_id) -> None:
        """Add a chunk: ``keys`` and ``privacy_id`` are aligned 1-D columns (numpy, list, pandas or
        polars Series) of ints or strs. Rows beyond their unit's first r are dropped, and so is a
        row without a key or an id."""
        keys, privacy_id = _present_rows(keys, privacy_id)
        k = _exact_column(keys, "keys")
        u = _exact_column(privacy_id, "privacy_id")
        if len(k) != len(u):
            raise ParameterError("keys and privacy_id must have the same length (one privacy id per row)")
        if len(k) == 0:
            return
        kind = "int" if k.dtype.kind == "i" else "str"
        if self._key_kind is not None and kind != self._key_kind:  # checked before the limiter moves
            raise ParameterTypeError(f"keys hold {kind}s in this chunk and {self._key_kind}s before; keep one key type")
        self._key_kind = kind
        self._summary.update_many(k[self._limiter.keep(u)])

    @validate_params(["epsilon", "delta", "k", "length_epsilon", "length_delta", "seed"])
    def release(self, *, epsilon: float, delta: float, k: int | None = None, length_epsilon: float | None = None,
                length_delta: float | None = None, seed: int | None = None, budget: Budget | None = None,
                allow_repeat: bool = False) -> Release:
        """(ε, δ)-DP heavy hitters where the privacy unit is one ``privacy_id``. The summary's
        element-level release (DPSS needs ``k``; PMG takes an optional ``k``) runs at ε' = ε/r
        (rounded down) and δ' = δ(e^{ε'} − 1)/(e^ε − 1) (``length_epsilon``/``length_delta`` are
        per-row shares of it, as in that release); the reported (ε, δ) are the unit-level
        (r·ε', δ'·Σ_{i<r} e^{iε'}) <= the request, and ``budget`` is charged them before any
        noise is drawn. The stream length stays private (a public length would not survive removing
        a unit). Released once unless ``allow_repeat=True``.

        :param epsilon: ε of the unit-level guarantee
        :param delta: δ of the unit-level guarantee
        :param seed: a user seed: reproducible noise (and hash functions), NOT secret; None: the
            secure generator
        :param allow_repeat: release again although this object was released before (the privacy loss
            composes)
        """
        r = self.max_rows_per_unit
        plan = _bounded_memory_plan(epsilon, delta, r)
        row_mechanism = "DPSS" if self.summary == "spacesaving" else "PMG"
        mechanism = f"unit.bounded_memory[{row_mechanism}]"
        summary = self._summary
        if isinstance(summary, SpaceSaving) and k is None:
            raise ParameterError("DPSS (summary='spacesaving') needs k= (the heavy-hitter cut n/k)")
        with charging(budget, mechanism, epsilon=plan["epsilon"], delta=plan["delta"]):
            row = summary.release(epsilon=plan["epsilon_row"], delta=plan["delta_row"], k=k,  # type: ignore[arg-type]
                                  length_epsilon=length_epsilon, length_delta=length_delta, seed=seed,
                                  allow_repeat=allow_repeat)
            if row.epsilon > plan["epsilon_row"] or row.delta > plan["delta_row"]:  # the charge covers the release
                raise InternalError("the element-level release exceeded its per-row calibration")
        meta, per_row = _split_row_level(row.metadata)
        per_row.update(mechanism=row_mechanism, epsilon_per_row=row.epsilon, delta_per_row=row.delta,
                       privacy_unit_of_these_figures="one stream element")
        meta.update(
            privacy_unit=PRIVACY_UNIT_ID,
            neighbours="add_remove_unit",
            route="bounded_memory",
            max_rows_per_unit=r,
            bounding="per unit: the first r rows in stream order",
            epsilon_requested=float(epsilon),
            delta_requested=float(delta),
            epsilon=plan["epsilon"],
            delta=plan["delta"],
            group_privacy="(r·ε', δ'·Σ_{i<r} e^{iε'}) from the per-row (ε', δ')",
            per_row_calibration=per_row,
            reference="docs/privacy.md §Privacy unit",
        )
        intervals, level = with_intervals(mechanism, row.items, meta)  # the row release's, for the kept rows
        return Release(items=row.items, threshold=row.threshold, epsilon=plan["epsilon"], delta=plan["delta"],
                       mechanism=mechanism, n=row.n, metadata=meta, intervals=intervals, interval_level=level)

    def __repr__(self) -> str:
        return (f"UnitStream(summary={self.summary!r}, capacity={self.capacity}, "
                f"max_rows_per_unit={self.max_rows_per_unit})")


# -- quantiles: r rows per unit -------------------------------------------------------------------

def _number_column(values, name: str = "values", universe_bits: int | None = None):
    """``(column, kept)``: the values as an int64, uint64 or float64 column, and None or the bool
    mask of the rows that have a value. Each row is read on its own (docs/privacy.md §Privacy
    unit, quantiles): NaN and None are no value (their rows are dropped), and with
    ``universe_bits`` L integers are clamped into [0, 2^L − 1] (a uint64 column), as ``bounds=``
    clamps real values, so no single row decides between an error and a release. Booleans,
    strings and multi-dimensional input are refused: that is the column's type, not a value."""
    import numbers

    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = _to_numpy(values)
    arr = np.asarray(values) if not isinstance(values, list) else np.array(values, dtype=object)
    if arr.ndim != 1:
        raise ParameterError(f"{name} must be one-dimensional")
    top = None if universe_bits is None else (1 << universe_bits) - 1
    kept = None
    if arr.dtype.kind == "O":
        items = arr.tolist()
        if not all(x is None or (isinstance(x, numbers.Real) and not isinstance(x, bool)) for x in items):
            raise ParameterTypeError(f"{name} must hold numbers (no booleans or strings)")
        has = np.array([x is not None for x in items], dtype=bool)
        if not has.all():
            kept = has
            items = [x for x in items if x is not None]
        if not all(isinstance(x, numbers.Integral) for x in items):
            out = np.array(items, dtype=np.float64)
            nan = np.isnan(out)
            if nan.any():
                kept = ~nan if kept is None else _within(kept, ~nan)
                out = out[~nan]
            return out, kept
        ints = [int(x) for x in items]
        if top is not None:  # clamped exactly, before any fixed-width type
            return np.array([min(max(x, 0), top) for x in ints], dtype=np.uint64), kept
        if all(-2**63 <= x < 2**63 for x in ints):
            return np.array(ints, dtype=np.int64), kept
        if all(0 <= x < 2**64 for x in ints):
            return np.array(ints, dtype=np.uint64), kept
        # beyond both: only their order against the bounds matters, so the nearest float serves
        return np.array([float(min(max(x, -2**64), 2**64)) for x in ints], dtype=np.float64), kept
    if arr.dtype.kind == "b":
        raise ParameterTypeError(f"{name} must be numbers, not booleans")
    if arr.dtype.kind in "iu":
        if top is None:
            return (arr if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 else
                    arr.astype(np.int64, copy=False)), kept
        if arr.dtype.kind == "i":
            arr = np.maximum(arr.astype(np.int64, copy=False), 0)
        return np.minimum(arr.astype(np.uint64), np.uint64(top)), kept
    if arr.dtype.kind == "f":
        out = arr.astype(np.float64, copy=False)
        nan = np.isnan(out)
        if nan.any():
            out, kept = out[~nan], ~nan
        return out, kept
    raise ParameterTypeError(f"{name} must hold numbers, got dtype {arr.dtype}")


def _within(kept: np.ndarray, sub: np.ndarray) -> np.ndarray:
    """The rows of ``kept`` that ``sub`` (a mask over the kept rows) keeps too."""
    out = kept.copy()
    out[np.flatnonzero(kept)[~sub]] = False
    return out


def _row_bound_mask(v: np.ndarray, u: np.ndarray, r: int, salt: int) -> np.ndarray:
    """The rows kept by the quantile bound (docs/privacy.md §Privacy unit): per unit, the r rows
    with the smallest h(salt, unit, value, j), j the row's index among the unit's rows of equal
    value, ties by (value, j). Equal rows of a unit are interchangeable, so which of them gets which
    j does not change the kept multiset; h and the tie order read only the unit's own values."""
    n = len(v)
    keep = np.zeros(n, dtype=bool)
    if n == 0:
        return keep
    ui, _, unit_hash = _codes(u, "privacy_id", salt, values=False)  # codes only group a unit's rows
    ident = (v + 0.0).view(np.uint64) if v.dtype.kind == "f" else v.view(np.uint64)  # −0.0 is 0.0
    vu, vi = np.unique(ident, return_inverse=True)  # vi orders rows by value identity
    ui, vi = ui.astype(np.int64), vi.astype(np.int64)
    order = np.lexsort((vi, ui))
    su, sv = ui[order], vi[order]
    start = np.flatnonzero(np.r_[True, (su[1:] != su[:-1]) | (sv[1:] != sv[:-1])])
    occ = np.empty(n, dtype=np.uint64)
    occ[order] = (np.arange(n) - np.repeat(start, np.diff(np.r_[start, n]))).astype(np.uint64)
    hv = _mix(vu ^ np.uint64(salt ^ 0x5A5A5A5A5A5A5A5A))
    h = _mix(unit_hash[ui] ^ _mix(hv[vi] ^ _mix(occ ^ np.uint64(salt ^ 0x3C3C3C3C3C3C3C3C))))
    order = np.lexsort((occ, vi, h, ui))
    su = ui[order]
    start = np.flatnonzero(np.r_[True, su[1:] != su[:-1]])
    rank = np.arange(n) - np.repeat(start, np.diff(np.r_[start, n]))
    keep[order[rank < r]] = True
    return keep


@validate_params(["max_rows_per_unit", "seed"])
def bound_rows_per_unit(values, privacy_id, *, max_rows_per_unit: int, seed: int | None = None) -> np.ndarray:
    """A boolean mask of the rows kept when each privacy unit contributes at most r =
    ``max_rows_per_unit`` rows (docs/privacy.md §Privacy unit): per unit, the r rows with the
    smallest salted hash of (unit, value, index among the unit's equal values). The rule reads only
    the unit's own rows and not their order: removing a unit leaves every other unit's kept rows
    unchanged, and permuting the rows permutes the mask. ``values``: int or float column; a row
    whose value is NaN or None is never kept (each row on its own); ``privacy_id``: aligned int or
    str column. The salt comes from the secure generator (``seed``: reproducible, NOT secret)."""
    r = check_int("max_rows_per_unit", max_rows_per_unit, 1, _MAX_BOUND**2)
    no_id = _missing_mask(privacy_id)
    if no_id is not None and len(no_id) == len(values):  # a row without an id is never kept
        keep = np.zeros(len(no_id), dtype=bool)
        keep[~no_id] = bound_rows_per_unit(_take(values, ~no_id, labels=False), _take(privacy_id, ~no_id),
                                           max_rows_per_unit=r, seed=seed)
        return keep
    v, has = _number_column(values)
    u = _exact_column(privacy_id, "privacy_id")
    if (len(v) if has is None else len(has)) != len(u):
        raise ParameterError("values and privacy_id must have the same length (one privacy id per row)")
    salt = _seeds.rng(seed, "salt")[0].next_u64()
    if has is None:
        return _row_bound_mask(v, u, r, salt)
    keep = np.zeros(len(has), dtype=bool)
    keep[has] = _row_bound_mask(v, u[has], r, salt)
    return keep


def _quantile_noise(rho, epsilon, delta):
    """(kind, ρ or ε to calibrate for, conversion δ or None, what was requested)."""
    if (rho is None) == (epsilon is None):
        raise ParameterError("pass exactly one of rho= (zCDP, discrete Gaussian; delta= adds the (ε, δ) conversion), "
                             "epsilon= (pure ε-DP, discrete Laplace) or epsilon= with delta= (discrete Gaussian "
                             "calibrated to (ε, δ))")
    if rho is not None:
        rr, _ = check_privacy_params(rho, 0.5, name="rho")
        dl = None if delta is None else check_privacy_params(1.0, delta)[1]
        return "gaussian", rr, dl, {"rho_requested": rr, "delta_requested": dl}
    if delta is None:
        e, _ = check_privacy_params(epsilon, 0.5)
        return "laplace", e, None, {"epsilon_requested": e}
    e, dl = check_privacy_params(epsilon, delta)
    return "gaussian", zcdp_rho_for(e, dl), dl, {"epsilon_requested": e, "delta_requested": dl}


def _check_qs(qs) -> np.ndarray:
    q = np.atleast_1d(np.asarray(qs, dtype=np.float64))
    if q.ndim != 1 or q.size == 0:
        raise ParameterError("qs must be a number or a non-empty 1-D sequence of quantile levels")
    if np.isnan(q).any() or (q < 0).any() or (q > 1).any():
        raise ParameterError("quantile levels must be in [0, 1]")
    return q


def unit_dyadic_sensitivities(universe_bits: int, exact_levels: int, depth: int, rows_per_unit: int) -> list:
    """Per-level (ℓ1, ℓ2²) of a dyadic sketch's cells when neighbours add or remove one unit of at
    most r rows (docs/privacy.md §Privacy unit): exact levels (r, r²), CountSketch levels
    (d·r, d·r²); all attained at once by r equal values.

    :param universe_bits: L: the levels of the sketch
    :param exact_levels: how many top levels are exact counters
    :param depth: rows of each CountSketch level
    :param rows_per_unit: r: the most rows one unit contributes
    """
    return [unit_cell_sensitivities(1 if j <= exact_levels else depth, rows_per_unit)
            for j in range(1, universe_bits + 1)]


def _quantile_calibration(bits: int, exact: int, depth: int, r: int, rho, epsilon, delta) -> dict:
    """The noise of a dyadic sketch of L = ``bits`` levels (E = ``exact`` exact ones, CountSketch
    levels of ``depth`` rows) for a unit of at most r rows (docs/privacy.md §Privacy unit,
    quantiles): the sensitivity totals S1 = r·Σ d_ℓ and S2 = r²·Σ d_ℓ, the rational noise parameter,
    the guarantee it gives and what a budget is charged."""
    kind, target, dl, requested = _quantile_noise(rho, epsilon, delta)
    sens = unit_dyadic_sensitivities(bits, exact, depth, r)
    s1, s2 = sum(a for a, _ in sens), sum(b for _, b in sens)
    eps_used: float | None
    rho_used: float | None
    if kind == "laplace":  # DLap(S1/ε) in every cell, S1 = r·Σ_ℓ d_ℓ
        num, den = _core.release.laplace_scale(s1, target)
        eps_used, rho_used, dlt = s1 * den / num, None, 0.0  # ε = ℓ1/b (calibration.noise_guarantee)
        charge = {"epsilon": eps_used}
    else:  # DGauss(σ²) in every cell, σ² >= S2/(2ρ), S2 = r²·Σ_ℓ d_ℓ
        num, den = _core.release.gaussian_sigma2(s2, target)
        rho_used = s2 * den / (2 * num)  # ρ = ℓ2²/(2σ²) (calibration.noise_guarantee)
        eps_used = None if dl is None else zcdp_epsilon(rho_used, dl)
        dlt = dl
        charge = ({"rho": rho_used} if rho is not None or eps_used is None or dl is None
                  else {"epsilon": eps_used, "delta": dl})
    return {"kind": kind, "num": num, "den": den, "s1": s1, "s2": s2, "epsilon": eps_used, "delta": dlt,
            "rho": rho_used, "charge": charge, "requested": requested}


@validate_params(["max_rows_per_unit", "bounds", "universe_bits", "rho", "epsilon", "delta"])
def unit_quantiles_cost(*, max_rows_per_unit: int, bounds=None, universe_bits: int | None = None,
                        gamma: float = 0.01, rho: float | None = None, epsilon: float | None = None,
                        delta: float | None = None) -> dict:
    """What :func:`unit_quantiles` with these parameters releases at, before any data is read: the
    sketch's shape, the unit-level sensitivity totals, the noise (σ² or the Laplace scale) and the
    unit-level ε/δ/ρ it reports and charges (docs/privacy.md §Privacy unit, quantiles). Raises on
    every parameter :func:`unit_quantiles` refuses, so a caller can check them all first.

    :param max_rows_per_unit: r: the most rows one privacy unit contributes
    :param bounds: ``(lo, hi)``: a public value range (never read off the data); values outside are
        clamped
    :param universe_bits: L: the values are integers in [0, 2^L) (or ``bounds`` mapped onto 2^L buckets)
    :param gamma: the target rank error γ of Zhao's shape, in (0, 1) (ignored when both width and depth
        are given)
    :param rho: ρ of a ρ-zCDP guarantee (discrete Gaussian noise) instead of ε
    :param epsilon: ε: pure DP with discrete Laplace noise, or with ``delta`` discrete Gaussian noise at
        (ε, δ)
    :param delta: with ``rho``: the δ of the (ε, δ) conversion; with ``epsilon``: Gaussian noise at (ε, δ)
    """
    from ..sketches.dyadic import _MAX_BOUNDED_BITS, _check_bounds, _shape

    r = check_int("max_rows_per_unit", max_rows_per_unit, 1, _MAX_BOUND**2)
    _quantile_noise(rho, epsilon, delta)
    if bounds is None and universe_bits is None:
        raise ParameterError("pass bounds=(lo, hi) (public value range) or universe_bits=L (integers in [0, 2^L))")
    bits, width, depth, _gamma = _shape(16 if universe_bits is None else universe_bits, gamma, None, None)
    b = _check_bounds(bounds)
    if b is not None and bits > _MAX_BOUNDED_BITS:
        raise ParameterError(f"with bounds, universe_bits must be at most {_MAX_BOUNDED_BITS} (float64 resolution)")
    exact = _core.dyadic.exact_levels(bits, width, depth)
    cal = _quantile_calibration(bits, exact, depth, r, rho, epsilon, delta)
    noise = "discrete_gaussian" if cal["kind"] == "gaussian" else "discrete_laplace"
    return {"noise": noise, "max_rows_per_unit": r, "universe_bits": bits, "width": width, "depth": depth,
            "exact_levels": exact, "resolution": 1.0 if b is None else (b[1] - b[0]) / 2.0**bits,
            "l1_sensitivity_total": cal["s1"], "l2_sensitivity_squared_total": cal["s2"],
            ("sigma2" if cal["kind"] == "gaussian" else "laplace_scale"): cal["num"] / cal["den"],
            "epsilon": cal["epsilon"], "delta": cal["delta"], "rho": cal["rho"]}


@validate_params(["max_rows_per_unit", "rho", "epsilon", "delta", "seed"])
def release_unit_quantiles(sketch, qs, *, max_rows_per_unit: int, rho=None, epsilon=None, delta=None,
                           seed: int | None = None, budget: Budget | None = None, bounding: str,
                           front_end: str = "python") -> Release:
    """Noise a non-private DyadicCountSketch of row-bounded data once, calibrated for a unit of at
    most r rows, and answer ``qs`` (docs/privacy.md §Privacy unit, quantiles). The caller bounded
    the rows (``bounding`` says how; every front end uses the rule of
    :func:`bound_rows_per_unit`). The noisy hierarchy stays inside: only the quantiles and the
    unit-level guarantee are released.

    :param sketch: the non-private DyadicCountSketch of the row-bounded data
    :param max_rows_per_unit: r: the most rows a unit contributed (the bound the caller applied)
    :param rho: ρ of a ρ-zCDP guarantee (discrete Gaussian noise) instead of ε
    :param epsilon: ε of the release's (ε, δ)-DP guarantee
    :param delta: δ of the release's (ε, δ)-DP guarantee, in (0, 1)
    :param seed: a user seed: reproducible noise (and hash functions), NOT secret; None: the secure
        generator
    :param budget: a :class:`dpsketch.Budget` charged before any noise is drawn
    :param front_end: the front end that bounded the rows, recorded in the metadata (``'python'``,
        ``'spark'``, ``'cli'``)
    """
    from ..sketches.dyadic import DyadicCountSketch, PrivateDyadicCountSketch

    if type(sketch) is not DyadicCountSketch:
        raise ParameterTypeError("release_unit_quantiles takes the DyadicCountSketch of the row-bounded data")
    r = check_int("max_rows_per_unit", max_rows_per_unit, 1, _MAX_BOUND**2)
    q = _check_qs(qs)
    bits, exact, depth = sketch.universe_bits, sketch.exact_levels, sketch.depth
    cal = _quantile_calibration(bits, exact, depth, r, rho, epsilon, delta)
    kind, num, den, s1, s2 = cal["kind"], cal["num"], cal["den"], cal["s1"], cal["s2"]
    eps_used, rho_used, dlt, charge, requested = (cal["epsilon"], cal["rho"], cal["delta"], cal["charge"],
                                                  cal["requested"])
    noise = "discrete_gaussian" if kind == "gaussian" else "discrete_laplace"
    mechanism = f"unit.quantiles[{noise}]"
    with charging(budget, mechanism, **charge):  # before the noise is drawn; a refusal spends nothing
        rng, seeded = _seeds.rng(seed, "noise")
        native = _core.dyadic.PrivateDyadicCountSketch.from_sketch(sketch._impl, kind, "joint", "add_remove",
                                                                   [(num, den)] * bits, rng)
    # Query object only: its own guarantee fields are never set nor read, and it is not returned.
    noisy = PrivateDyadicCountSketch.__new__(PrivateDyadicCountSketch)
    noisy._impl = native
    meta = {
        "privacy_unit": PRIVACY_UNIT_ID,
        "neighbours": "add_remove_unit",
        "route": "row_bounded_sketch",
        "max_rows_per_unit": r,
        "bounding": bounding,
        "front_end": front_end,
        "length": "unused",
        "noise": noise,
        "noise_allocation": "joint",
        "l1_sensitivity_total": s1,
        "l2_sensitivity_squared_total": s2,
        "noise_param": [num, den],
        ("sigma2" if kind == "gaussian" else "laplace_scale"): num / den,
        "universe_bits": bits, "width": sketch.width, "depth": depth, "exact_levels": exact,
        "bounds": sketch.bounds,
        "qs": q.tolist(),
        "quantile_targets": "q times the noisy total clamped at 0 (post-processing; no public n needed)",
        "epsilon": eps_used, "delta": dlt, "rho": rho_used,
        **requested,
        "reproducible_not_secret": bool(seeded),
        "reference": "docs/privacy.md §Privacy unit",
    }
    # the values and their rank intervals (exact levels only) from the noisy hierarchy, which stays inside
    return quantiles_release(noisy, q.tolist(), mechanism=mechanism, epsilon=eps_used, delta=dlt, rho=rho_used,
                             metadata=meta)


@validate_params(["max_rows_per_unit", "bounds", "universe_bits", "rho", "epsilon", "delta", "seed"])
def unit_quantiles(values, privacy_id, qs, *, max_rows_per_unit: int, bounds=None, universe_bits: int | None = None,
                   gamma: float = 0.01, rho: float | None = None, epsilon: float | None = None,
                   delta: float | None = None, seed: int | None = None, budget: Budget | None = None) -> Release:
    """Private quantiles where the privacy unit is one ``privacy_id`` (all of a user's rows)
    (docs/privacy.md §Privacy unit). Each unit keeps at most r = ``max_rows_per_unit`` rows
    (:func:`bound_rows_per_unit`); the kept values go into a dyadic sketch (docs/algorithms.md §6)
    whose noise is calibrated once for a unit of r rows (ℓ1 = r·Σ d_ℓ, ℓ2² = r²·Σ d_ℓ).

    ``values``: numbers, integers in [0, 2^universe_bits) or real values mapped with public
    ``bounds=(lo, hi)`` (default 16 bits); ``privacy_id``: aligned int or str column. Each row is
    read on its own, so no row decides between an error and a release: real values outside the
    bounds (±inf included) are clamped to them, integers outside [0, 2^universe_bits) to
    0 or 2^universe_bits − 1, and a row whose value is NaN or None is dropped before the bound.
    Privacy: ``rho`` (ρ-zCDP, discrete Gaussian; with ``delta`` the (ε, δ) conversion is
    reported too), ``epsilon`` alone (pure ε-DP, discrete Laplace) or ``epsilon`` with ``delta``
    (discrete Gaussian at the largest ρ whose conversion fits (ε, δ)). Returns a :class:`Release`
    whose ``items`` are ``(q, value)`` in the order of ``qs`` and whose guarantee is the unit's.
    ``budget`` is charged what the release reports, before any noise is drawn; ``seed`` makes the
    salt, the hashes and the noise reproducible and NOT secret.

    :param bounds: ``(lo, hi)``: a public value range (never read off the data); values outside are
        clamped
    :param universe_bits: L: the values are integers in [0, 2^L) (or ``bounds`` mapped onto 2^L buckets)
    :param gamma: the target rank error γ of Zhao's shape, in (0, 1) (ignored when both width and depth
        are given)
    """
    from ..sketches.dyadic import DyadicCountSketch

    r = check_int("max_rows_per_unit", max_rows_per_unit, 1, _MAX_BOUND**2)
    _quantile_noise(rho, epsilon, delta)  # every parameter is checked before the data are read
    _check_qs(qs)
    if bounds is None and universe_bits is None:
        raise ParameterError("pass bounds=(lo, hi) (public value range) or universe_bits=L (integers in [0, 2^L))")
    sketch = DyadicCountSketch(16 if universe_bits is None else universe_bits, gamma=gamma, bounds=bounds, seed=seed)
    no_id = _missing_mask(privacy_id)
    if no_id is not None and len(no_id) == len(values):  # a row without an id is dropped
        values, privacy_id = _take(values, ~no_id, labels=False), _take(privacy_id, ~no_id)
    v, has = _number_column(values, universe_bits=sketch.universe_bits if bounds is None else None)
    u = _exact_column(privacy_id, "privacy_id")
    if (len(v) if has is None else len(has)) != len(u):
        raise ParameterError("values and privacy_id must have the same length (one privacy id per row)")
    if bounds is None and v.dtype.kind == "f":
        raise ParameterTypeError("float values need bounds=(lo, hi); or pass integers in [0, 2^universe_bits)")
    if has is not None:  # rows without a value: dropped before the bound, as on Spark and in the CLI
        u = u[has]
    keep = _row_bound_mask(v, u, r, _seeds.rng(seed, "salt")[0].next_u64())
    sketch.update_many(v[keep])
    return release_unit_quantiles(sketch, qs, max_rows_per_unit=r, rho=rho, epsilon=epsilon, delta=delta, seed=seed,
                                  budget=budget, bounding=_QUANTILE_BOUNDING)


_QUANTILE_BOUNDING = "per unit: the r rows with the smallest h(salt, unit, value, index among the unit's equal values)"


# -- the plans of the person-level routes (docs/routes.md, Plans) -----------------------------------

def plan_exact(u: Any, epsilon, delta, *, top_k, noise) -> dict:
    """The person-level exact route (docs/privacy.md §Privacy unit): _exact_plan is
    the release's own calibration; released iff bounded count + Z > τ."""
    selection = None if top_k is None else "gumbel"
    kk = None if top_k is None else check_int("k", top_k, 1, 2**31)
    p = _exact_plan(epsilon, delta, u.max_keys, u.max_rows_per_key, noise, selection, kk)
    num, den = p["noise_param"]
    log_tail = noise_log_tail(p["noise"], num / den)
    tau = int(p["threshold"])

    def prob(c: int) -> float:  # P(c + Z > τ)
        return math.exp(log_tail(tau - c))

    if p["noise"] == "discrete_gaussian":
        law = {"law": "discrete_gaussian", "sigma": p["sigma"], "sigma2": p["sigma2"],
               "sensitivity": f"l2 = {p['l2_sensitivity']:.6g} (max_rows_per_key*sqrt(max_keys))"}
    else:
        law = {"law": "discrete_laplace", "scale": p["laplace_scale"],
               "sensitivity": f"l1 = {p['l1_sensitivity']} (max_keys*max_rows_per_key)"}
    notes = []
    if selection:
        law["gumbel_scale"] = p["gumbel_scale"]
        notes.append(f"top_k={kk}: half of epsilon ranks the keys above the threshold by Gumbel noise on their "
                     "bounded counts; the counts below are for passing the threshold")
    return dict(mechanism=f"unit.exact[{p['noise']}{'+gumbel' if selection else ''}]", epsilon=p["epsilon"],
                delta=p["delta"], rho=p.get("rho"), neighbours="add_remove_unit", threshold=float(tau),
                threshold_rule="noisy bounded count > threshold", noise=law, interval_half_width=None,
                interval="this route's intervals are conditional on the released set (they depend on the released "
                         "value and on how many keys are released, docs/privacy.md §Intervals): no data-free "
                         "half-width",
                smallest_count_released={q: _smallest(prob, q) for q in RELEASE_PROBABILITIES},
                released_count_means="the key's bounded count (each person's at most max_keys keys and "
                                     "max_rows_per_key rows of each)",
                notes=tuple(notes), _probability=prob)


def plan_bounded_memory(u: Any, epsilon, delta, *, k, capacity, n, level) -> dict:
    """The person-level bounded-memory route (docs/privacy.md §Privacy unit): DPSS at the per-row
    (ε', δ') of _bounded_memory_plan, reported at the unit-level (ε, δ)."""
    from .dpss import plan_figures as dpss_plan

    bm = _bounded_memory_plan(epsilon, delta, int(u.max_rows))
    out = dpss_plan(bm["epsilon_row"], bm["delta_row"], k=k, top_k=None, capacity=capacity, cut="n/k",
                public_length=False, length_epsilon=None, length_delta=None, two_pass=False, n=n, level=level)
    out.update(mechanism="unit.bounded_memory[DPSS]", epsilon=bm["epsilon"], delta=bm["delta"],
               neighbours="add_remove_unit")
    out["noise"] = {**out["noise"], "epsilon_per_row": bm["epsilon_row"], "delta_per_row": bm["delta_row"]}
    out["notes"] = out["notes"] + (f"each person's first {u.max_rows} rows reach SpaceSaving; n and the counts are "
                                   "those of the kept rows",)
    return out


def plan_quantiles(u: Any, qs, *, bounds, universe_bits, gamma, rho, epsilon, delta) -> dict:
    """The figures of a :class:`dpsketch.Plan` of person-level quantiles (the dyadic sketch of each
    person's first ``max_rows`` values), without data.

    :param u: the privacy unit (a :class:`dpsketch.Person` with ``max_rows``)
    :param qs: the quantile levels
    :param bounds: the public value range (lo, hi), or None for integers in [0, 2^universe_bits)
    :param universe_bits: L of the dyadic sketch
    :param gamma: the target rank error of the sketch's shape
    :param rho: ρ of a ρ-zCDP guarantee
    :param epsilon: ε of the guarantee (pure DP, or (ε, δ) with ``delta``)
    :param delta: δ of an (ε, δ) guarantee
    """
    _check_qs(qs)
    cost = unit_quantiles_cost(max_rows_per_unit=int(u.max_rows), bounds=bounds, universe_bits=universe_bits,
                               gamma=gamma, rho=rho, epsilon=epsilon, delta=delta)
    gaussian = cost["noise"] == "discrete_gaussian"
    law = ({"law": "discrete_gaussian", "sigma": math.sqrt(cost["sigma2"]), "sigma2": cost["sigma2"],
            "sensitivity": f"l2^2 = {cost['l2_sensitivity_squared_total']} over all levels"} if gaussian else
           {"law": "discrete_laplace", "scale": cost["laplace_scale"],
            "sensitivity": f"l1 = {cost['l1_sensitivity_total']} over all levels"})
    law.update(universe_bits=cost["universe_bits"], exact_levels=cost["exact_levels"], width=cost["width"],
               depth=cost["depth"])
    return dict(mechanism=f"unit.quantiles[{cost['noise']}]", epsilon=cost["epsilon"], delta=cost["delta"],
               rho=cost["rho"], neighbours="add_remove_unit", noise=law,
               interval=("each value carries a rank interval: the true rank range among the kept rows meets "
                         "q·n̂ ± s, s uniform over all positions (exact levels only; docs/privacy.md §Intervals)"
                         if cost["exact_levels"] >= cost["universe_bits"] else
                         f"none at this shape: {cost['universe_bits'] - cost['exact_levels']} CountSketch levels add "
                         "a collision error no published quantity bounds (universe_bits <= "
                         f"{cost['exact_levels']} for rank intervals; docs/privacy.md §Intervals)"),
               notes=(f"each person's first {u.max_rows} values enter the sketch; resolution "
                      f"{cost['resolution']:.6g}",))
