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
- the **bounded-memory route** (:func:`unit_calibration`, :class:`UnitRowLimiter`): any
  element-level mechanism run on the first r rows of each unit, at the per-row (ε/r, δ') that
  group privacy turns into (ε, δ) for the unit.

Bounding (the exact route) runs in C++ (cpp/include/dpsketch/privacy_unit/bound_contributions.hpp)
over dictionary codes of the two columns: besides the columns themselves, ~12 bytes a row (two
4-byte codes and the rows' keys grouped by unit) and 30-100 bytes per distinct unit or key (the
code tables); the bounded-memory route keeps one row counter per unit seen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _core, _seeds
from .budget import Budget, charging
from .calibration import (check_privacy_params, dgauss_tail_gt, unit_group_privacy, used_value, zcdp_epsilon,
                          zcdp_rho_for)
from .errors import ParameterError
from .release import Release
from ._validation import check_int

__all__ = ["PRIVACY_UNIT_ID", "BoundedContributions", "UnitRowLimiter", "bound_contributions", "release_bounded_counts",
           "unit_calibration", "unit_heavy_hitters", "unit_release_cost"]

PRIVACY_UNIT_ID = "privacy_id"  # metadata['privacy_unit'] of every unit-level release
_MAX_BOUND = 1 << 20


def _check_bounds(m, c):
    return (check_int("max_keys_per_unit", m, 1, _MAX_BOUND), check_int("max_rows_per_key", c, 1, _MAX_BOUND))


# -- contribution bounding ----------------------------------------------------------------------

def _column(values, name: str) -> np.ndarray:
    """An int64 or str column as a numpy array; NaN/None, floats and mixed types are refused."""
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy()
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
        raise TypeError(f"{name} must hold ints or strs (one type, no None/NaN), got {sorted(k.__name__ for k in kinds)}")
    raise TypeError(f"{name} must hold ints or strs, got dtype {arr.dtype}; drop or map nulls and floats first")


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
        values = values.to_numpy()
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


@dataclass(frozen=True)
class BoundedContributions:
    """Per-key counts after contribution bounding, with the bounds they hold for.

    Produced only by :func:`bound_contributions`; the arrays are read-only. The bounds describe
    these keys: a transformation of the keys (merging, truncating or re-mapping them) can put more
    than c rows of one unit on a key or more than m keys in one unit, so bound the transformed
    keys again instead of re-using these counts (docs/privacy.md §Privacy unit).

    :ivar keys: distinct keys with a positive bounded count (int64 or str array), in key order
    :ivar counts: the bounded count of each key (int64)
    :ivar max_keys_per_unit: m
    :ivar max_rows_per_key: c
    """

    keys: np.ndarray
    counts: np.ndarray
    max_keys_per_unit: int
    max_rows_per_key: int
    _token: object = None

    def __post_init__(self):
        if self._token is not _TOKEN:
            raise TypeError("BoundedContributions come from dpsketch.bound_contributions(keys, privacy_id, ...)")

    def __repr__(self) -> str:  # no keys, no counts: they are data
        return f"BoundedContributions(max_keys_per_unit={self.max_keys_per_unit}, max_rows_per_key={self.max_rows_per_key})"


_TOKEN = object()


def _bounded_from_aggregates(keys: np.ndarray, counts: np.ndarray, m: int, c: int) -> BoundedContributions:
    """Per-key counts that a front end bounded by this module's rule elsewhere (the Spark route runs
    it in the JVM: the m smallest xxhash64(salt, unit, key) per unit, <= c rows each)."""
    keep = counts > 0
    k, n = np.asarray(keys)[keep], np.asarray(counts, dtype=np.int64)[keep]
    order = np.argsort(k, kind="stable")
    k, n = k[order], n[order]
    k.setflags(write=False)
    n.setflags(write=False)
    return BoundedContributions(k, n, m, c, _TOKEN)


def bound_contributions(keys, privacy_id, *, max_keys_per_unit: int, max_rows_per_key: int = 1,
                        seed: int | None = None) -> BoundedContributions:
    """Bound each privacy unit's contribution (docs/privacy.md §Privacy unit): per unit, the m
    distinct keys with the smallest h(salt, unit, key) and at most c rows of each. The rule reads
    only the unit's own rows and not their order, so removing one unit leaves every other unit's
    kept rows unchanged. The salt is drawn from the secure generator (``seed``: reproducible, NOT
    secret, derived by the seed rule). ``keys`` and ``privacy_id``: aligned 1-D int or str columns."""
    m, c = _check_bounds(max_keys_per_unit, max_rows_per_key)
    k = _bounding_column(keys, "keys")
    u = _bounding_column(privacy_id, "privacy_id")
    if len(k) != len(u):
        raise ParameterError("keys and privacy_id must have the same length (one privacy id per row)")
    salt = _seeds.rng(seed, "salt")[0].next_u64()
    if len(k) == 0:
        k = _column(k, "keys")
        return BoundedContributions(k[:0], np.zeros(0, np.int64), m, c, _TOKEN)
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
    return BoundedContributions(out_keys, out_counts, m, c, _TOKEN)


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


def unit_release_cost(*, epsilon: float, delta: float, max_keys_per_unit: int, max_rows_per_key: int = 1,
                      max_rows_per_unit: int | None = None, noise: str = "gaussian") -> dict:
    """What (ε, δ, m, c) buys, before any data is read: for the exact route the threshold τ and the
    noise (σ or the Laplace scale); for the bounded-memory route the per-row (ε', δ') that any
    element-level mechanism runs at, with r = ``max_rows_per_unit`` (default m·c) rows per unit."""
    m, c = _check_bounds(max_keys_per_unit, max_rows_per_key)
    plan = _exact_plan(epsilon, delta, m, c, noise, None, None)
    r = m * c if max_rows_per_unit is None else check_int("max_rows_per_unit", max_rows_per_unit, 1, _MAX_BOUND**2)
    e1, d1 = unit_calibration(epsilon, delta, r)
    exact = {k: plan[k] for k in ("noise", "threshold", "delta_threshold", "epsilon", "delta") if k in plan}
    exact.update({k: plan[k] for k in ("sigma", "rho", "laplace_scale") if k in plan and plan[k] is not None})
    return {"exact": exact, "bounded_memory": {"rows_per_unit": r, "epsilon_per_row": e1, "delta_per_row": d1}}


def release_bounded_counts(bounded: BoundedContributions, *, epsilon: float, delta: float, noise: str = "gaussian",
                           selection: str | None = None, k: int | None = None, seed: int | None = None,
                           budget: Budget | None = None) -> Release:
    """The exact route's release of bounded per-key counts (docs/privacy.md §Privacy unit). Every key
    with a positive bounded count gets independent discrete Gaussian (ℓ2 = c·√m, δ/2 for the zCDP
    conversion) or discrete Laplace (ℓ1 = m·c) noise and is released iff count + noise > τ. With
    ``selection="gumbel"`` half of ε ranks the keys that passed by one-shot Gumbel on their bounded
    counts (scale c·k/ε_sel: k peels of a monotone exponential mechanism with score sensitivity c)
    and exactly min(k, passed) keys are released in that order; otherwise items are sorted by noisy
    value. ``budget`` is charged the reported (ε, δ) before any noise is drawn."""
    if not isinstance(bounded, BoundedContributions):
        raise TypeError("release_bounded_counts takes the BoundedContributions of dpsketch.bound_contributions")
    m, c = bounded.max_keys_per_unit, bounded.max_rows_per_key
    kk = None if k is None else check_int("k", k, 1, 2**31)
    plan = _exact_plan(epsilon, delta, m, c, noise, selection, kk)
    mechanism = f"unit.exact[{plan['noise']}{'+gumbel' if selection else ''}]"
    with charging(budget, mechanism, epsilon=plan["epsilon"], delta=plan["delta"]):
        pass  # nothing drawn yet: a refusal spends nothing
    rng, seeded = _seeds.rng(seed, "noise")
    num, den = plan["noise_param"]
    n = len(bounded.counts)
    z = (_core.noise.discrete_gaussian(rng, num, den, n) if noise == "gaussian"
         else _core.noise.discrete_laplace(rng, num, den, n))
    noisy = bounded.counts + z
    passed = np.flatnonzero(noisy > plan["threshold"])
    keys = bounded.keys[passed].tolist()
    vals = noisy[passed].tolist()
    if selection:
        order = _gumbel_top_k(bounded.counts[passed], plan["gumbel_scale"], kk, rng)
        items = [(keys[i], vals[i]) for i in order]
    else:
        items = sorted(zip(keys, vals), key=lambda kv: (-kv[1], kv[0]))
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
    return Release(items=items, threshold=float(plan["threshold"]), epsilon=plan["epsilon"], delta=plan["delta"],
                   mechanism=mechanism, n=None, metadata=meta, rho=plan.get("rho"))


def _gumbel_top_k(scores: np.ndarray, scale: float, k: int, rng) -> list[int]:
    """Indices of the k largest score + Gumbel(scale) (one shot; the same distribution as k peels of
    the exponential mechanism ∝ exp(score/scale), Durfee & Rogers 2019). Uniforms come from the
    secure generator (53-bit, never 0)."""
    if len(scores) == 0:
        return []
    raw = np.array([rng.next_u64() for _ in range(len(scores))], dtype=np.uint64)
    uni = ((raw >> np.uint64(11)).astype(np.float64) + 0.5) / 2.0**53
    g = -np.log(-np.log(uni))
    noisy = scores.astype(np.float64) / scale + g
    return np.argsort(-noisy, kind="stable")[: min(k, len(scores))].tolist()


def unit_heavy_hitters(keys, privacy_id, *, epsilon: float, delta: float, max_keys_per_unit: int,
                       max_rows_per_key: int = 1, noise: str = "gaussian", selection: str | None = None,
                       k: int | None = None, seed: int | None = None, budget: Budget | None = None) -> Release:
    """(ε, δ)-DP heavy hitters where the privacy unit is one ``privacy_id`` (all of a user's rows):
    :func:`bound_contributions` then :func:`release_bounded_counts` (the exact route). ``keys``
    and ``privacy_id``: aligned 1-D columns (numpy, list, pandas/polars Series) of ints or strs."""
    bounded = bound_contributions(keys, privacy_id, max_keys_per_unit=max_keys_per_unit,
                                  max_rows_per_key=max_rows_per_key, seed=seed)
    return release_bounded_counts(bounded, epsilon=epsilon, delta=delta, noise=noise, selection=selection, k=k,
                                  seed=seed, budget=budget)


# -- the bounded-memory route ---------------------------------------------------------------------

def unit_calibration(epsilon: float, delta: float, rows_per_unit: int) -> tuple[float, float]:
    """The per-row (ε', δ') at which an element-level mechanism is (ε, δ)-DP for a unit of at most
    ``rows_per_unit`` rows: group privacy, ε' = ε/r, δ' = δ(e^{ε/r} − 1)/(e^ε − 1) (docs/privacy.md
    §Privacy unit)."""
    eps, dlt = check_privacy_params(epsilon, delta)
    r = check_int("rows_per_unit", rows_per_unit, 1, _MAX_BOUND**2)
    return unit_group_privacy(eps, dlt, r)


class UnitRowLimiter:
    """Keeps the first ``max_rows_per_unit`` rows of each privacy unit, in stream order, chunk by
    chunk (the bounded-memory route). What it keeps of a unit depends only on that unit's own rows
    and their order. State: one row counter per unit seen (a dict entry, ~100–200 bytes per unit in
    CPython; measured in docs/privacy.md §Privacy unit)."""

    def __init__(self, max_rows_per_unit: int):
        self.max_rows_per_unit = check_int("max_rows_per_unit", max_rows_per_unit, 1, _MAX_BOUND**2)
        self._seen: dict = {}

    def keep(self, privacy_id) -> np.ndarray:
        """A boolean mask over this chunk's rows: True for the rows still within their unit's bound."""
        u = _column(privacy_id, "privacy_id")
        if len(u) == 0:
            return np.zeros(0, dtype=bool)
        uniq, inv = np.unique(u, return_inverse=True)
        # position of each row among its unit's rows in this chunk (stable: stream order)
        order = np.argsort(inv, kind="stable")
        start = np.r_[0, np.flatnonzero(np.diff(inv[order])) + 1]
        pos = np.empty(len(u), dtype=np.int64)
        pos[order] = np.arange(len(u)) - np.repeat(start, np.diff(np.r_[start, len(u)]))
        before = np.fromiter((self._seen.get(x, 0) for x in uniq.tolist()), dtype=np.int64, count=len(uniq))
        mask = before[inv] + pos < self.max_rows_per_unit
        totals = before + np.bincount(inv, minlength=len(uniq))
        r = self.max_rows_per_unit
        for x, t in zip(uniq.tolist(), totals.tolist()):
            self._seen[x] = min(t, r)
        return mask

    def __repr__(self) -> str:
        return f"UnitRowLimiter(max_rows_per_unit={self.max_rows_per_unit})"
