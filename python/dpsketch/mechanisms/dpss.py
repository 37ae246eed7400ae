"""DPSS options beyond Holland's one-pass release (docs/privacy.md §DPSS, "The n/k cut" and
"Two passes"):

- ``cut="n/k"``: drop released items whose noisy value is below n̂/k (post-processing of the release
  and of the noisy length);
- ``passes=2``: the first pass over a re-iterable input fixes SpaceSaving's tracked set, the second
  counts those candidates exactly, and the release adds DLap noise to the exact counts against
  DPSS's threshold τ.

:func:`heavy_hitters` is the front end for both; :meth:`dpsketch.SpaceSaving.release` takes ``cut``.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from typing import Any

import numpy as np

from .. import _core, _seeds
from ..accounting.budget import Budget, charging
from ..accounting.calibration import calibrate, make_length, used_value
from ..errors import ParameterError, ParameterTypeError
from ..sketches._keys import Utf8Lines, batch_key_type, int_batch, normalize_batch
from .._validation import Options, check, check_int
from ..release import Release, build_release
from .top_k import check_top_k, select_top_k, top_k_capacity
from ..intervals import dlap_tail_gt, for_release
from ._planning import RELEASE_PROBABILITIES, _length_law, _mixture_probability, _smallest

__all__ = ["CUTS", "DEFAULT_CUT", "CandidateCounts", "apply_cut", "frequency_cut", "heavy_hitters",
           "plan_figures", "release_exact_counts", "release_space_saving",
           "two_pass_release"]

_R = _core.release

CUTS = ("n/k", None)
DEFAULT_CUT = "n/k"
TWO_PASS_MECHANISM = "DPSS[two-pass]"


def frequency_cut(n: int, k: int) -> float:
    """n/k: the frequency a heavy hitter reaches by definition (f(x) >= n/k, the k of ``k=``;
    docs/mechanisms/dpss.md). The command line's ``--evaluate`` reports it beside the exact counts.

    :param n: the stream length
    :param k: the k of ``k=``
    """
    return n / k


def check_cut(cut: str | None) -> str | None:
    return check("cut", cut, Options(CUTS))


def apply_cut(raw: tuple, k: int, cut: str | None) -> tuple:
    """The release tuple (items, threshold, inclusive, metadata) with the n/k cut applied:
    items whose noisy value is below n̂/k are dropped (docs/privacy.md §DPSS, "The n/k cut": a
    function of the released values and of n̂ only, so post-processing). n̂ is the length the
    release used (the public n with a public length).

    :param raw: the release tuple (items, threshold, inclusive, metadata) a native release returns
    :param k: the frequency cut n̂/k
    :param cut: ``'n/k'`` to apply the cut, None to return ``raw`` unchanged
    """
    items, threshold, inclusive, meta = raw
    meta = dict(meta)
    meta["cut"] = "none" if cut is None else cut
    if cut is None:
        return items, threshold, inclusive, meta
    hh = float(meta["n_used"]) / k
    meta["tau"] = threshold
    meta["heavy_hitter_cut"] = hh
    kept = [(key, v) for key, v in items if v >= hh]
    if hh > threshold:
        threshold, inclusive = hh, True  # every kept value is >= hh, and hh > τ
    return kept, threshold, inclusive, meta


class CandidateCounts:
    """Exact counts of a fixed candidate set over batches of keys (the second pass): a key outside
    the set is ignored. Batches are what ``update_many`` takes (numpy, pyarrow, pandas, sequences).

    :param candidates: the fixed candidate keys (SpaceSaving's tracked set after the first pass)
    :param key_type: ``'int'`` or ``'str'``: the type of the candidates
    """

    def __init__(self, candidates: list, key_type: str):
        self.key_type = key_type
        self._keys = list(candidates)
        if key_type == "int":
            self._arr = np.asarray(self._keys, dtype=np.int64)
            self._counts = np.zeros(len(self._keys), dtype=np.int64)
            self._order = np.argsort(self._arr, kind="stable")
            self._sorted = self._arr[self._order]
        else:
            self._set = set(self._keys)
            self._str_counts: Counter = Counter()
        self.n = 0

    def update_many(self, batch: Any) -> None:
        """Count the candidates among one batch of keys.

        :param batch: one batch of keys
        """
        items = normalize_batch(batch)
        if not isinstance(items, np.ndarray) and not hasattr(items, "__len__"):
            items = list(items)
        if len(items) == 0:
            return
        kt = batch_key_type(items)
        if kt != self.key_type:
            raise ParameterTypeError(f"the second pass read {kt} keys where the first read {self.key_type} keys; "
                            "the input changed between the passes")
        self.n += len(items)
        if kt == "int":
            arr = int_batch(items)
            if len(self._sorted) == 0:
                return
            pos = np.searchsorted(self._sorted, arr)
            pos[pos == len(self._sorted)] = 0
            hit = self._sorted[pos] == arr
            np.add.at(self._counts, self._order[pos[hit]], 1)
        elif type(items).__module__.startswith("pyarrow") or isinstance(items, Utf8Lines):
            import pyarrow as pa
            import pyarrow.compute as pc

            if not self._keys:
                return
            if isinstance(items, Utf8Lines):
                items = items.to_arrow()
            arr = items.cast(pa.large_string()) if isinstance(items, (pa.Array, pa.ChunkedArray)) else items
            picked = arr.filter(pc.is_in(arr, value_set=pa.array(self._keys, type=pa.large_string())))
            for entry in pc.value_counts(picked).to_pylist():
                self._str_counts[entry["values"]] += entry["counts"]
        else:
            s = self._set
            self._str_counts.update(x for x in (items.tolist() if isinstance(items, np.ndarray) else items) if x in s)

    def counts(self) -> list[int]:
        """Exact counts, in the order of the candidates."""
        if self.key_type == "int":
            return self._counts.tolist()
        return [self._str_counts.get(x, 0) for x in self._keys]


def two_pass_release(keys: list, counts: list[int], *, epsilon: float, delta: float, k: int, capacity: int,
                     length: Any, rng: Any) -> tuple:
    """The release of the two-pass mechanism, as the tuple (items, threshold, inclusive, metadata)
    the native releases return. ``keys``: SpaceSaving's tracked set after the first pass;
    ``counts``: their exact counts; (ε, δ): the mechanism's share (``calibrate``); ``length``: the
    Length the threshold reads (the same n̂ for both passes).

    docs/privacy.md §DPSS, "Two passes": v_x = f(x) + Z_x, Z_x ~ DLap(1/ε) independent; release
    v_x > τ = max(n_lo/k − γ, n_up/k̃ + 1 + γ), γ as for DPSS. A label tracked after the first pass
    on one neighbour only has f ≤ c_min + 1 ≤ n/k̃ + 1, so τ suppresses it except with probability
    ≤ δ/4; the exact counts of the shared labels have ℓ1 sensitivity 1.

    :param epsilon: the mechanism's ε share (after the length's)
    :param delta: the mechanism's δ share (after the length's)
    :param k: the frequency cut n/k
    :param capacity: k̃: the first pass's SpaceSaving capacity
    :param rng: the noise generator (a ``SecureRng``)
    """
    if len(keys) != len(counts):
        raise ParameterError("keys and counts must have the same length")
    eps_used = float(_R.epsilon_used(epsilon))
    gamma = int(_R.dpss_gamma(eps_used, delta))
    tau = float(_R.dpss_threshold(length.n_lo, length.n_up, k, capacity, gamma))
    num, den = _R.laplace_scale(1, epsilon)  # scale 1/ε as used (rounded down, §1): sensitivity 1
    z = _core.noise.discrete_laplace(rng, num, den, len(keys))
    noisy = np.asarray(counts, dtype=np.int64) + z
    items = [(key, int(v)) for key, v in zip(keys, noisy.tolist()) if v > tau]
    items.sort(key=lambda kv: (-kv[1], kv[0]))
    meta: dict = {"epsilon_used": eps_used, "gamma": gamma, "k": k, "capacity": capacity, "passes": 2}
    meta["assumes_public_length"] = 1 if length.kind == "public" else 0
    meta["n_used"] = float(length.n_hat)
    if length.kind == "private":
        meta.update(length_epsilon=float(length.epsilon), length_delta=float(length.delta), length_t=int(length.t),
                    n_lower=float(length.n_lo), n_upper=float(length.n_up))
    return items, tau, False, meta


def _check_reiterable(data: Any, passes: int) -> None:
    if passes == 2 and not isinstance(data, (str, os.PathLike)) and iter(data) is data:
        raise ParameterError(
            "passes=2 reads the data twice and got a one-shot iterator; pass a list, an array, a Series, a "
            "DataFrame with column=, or a file path (or use passes=1)"
        )


def _batches(data, *, column, format, keys, chunk_size, table_hashes=False):
    """Batches of keys from ``data``: a file path (read with the CLI's reader; ``table_hashes``: text
    lines carry their slot-table hashes, for a counter summary), a DataFrame column, or one
    in-memory container (a single batch)."""
    if isinstance(data, (str, os.PathLike)):
        from ..io import input as _input

        src = _input.Source(data, format=format, column=column, keys=keys, chunk_size=chunk_size)
        yield from src.chunks(table_hashes=table_hashes)
        return
    if type(data).__name__ in ("DataFrame", "Table", "RecordBatch"):
        if column is None:
            raise ParameterError(f"a {type(data).__name__} holds several columns; pass column= to name the items")
        yield data[column]
        return
    if column is not None or format is not None:
        raise ParameterError("column= and format= apply to a file path or a DataFrame only")
    if isinstance(data, np.ndarray) or hasattr(data, "__len__"):
        yield data
        return
    batch: list = []
    for x in data:  # a one-shot iterable (passes=1 only)
        batch.append(x)
        if len(batch) >= chunk_size:
            yield batch
            batch = []
    if batch:
        yield batch


def heavy_hitters(
    data: Any, *, k: int | None = None, epsilon: float, delta: float, top_k: int | None = None,
    capacity: int | None = None, passes: int = 1, cut: str | None = DEFAULT_CUT, column: str | None = None,
    format: str | None = None, keys: str = "auto", seed: int | None = None, public_length: bool = False,
    length_epsilon: float | None = None, length_delta: float | None = None, budget: Budget | None = None,
    chunk_size: int = 1_000_000,
) -> Release:
    """(ε, δ)-DP heavy hitters of ``data`` by DPSS (docs/algorithms.md §3, docs/privacy.md §DPSS).

    ``data``: a list, numpy array or Series of int or str keys; a DataFrame (pandas, polars, pyarrow)
    with ``column=``; or a file path (text: one item per line; CSV/Parquet with ``column=``;
    ``format`` and ``keys`` as for ``dpsketch top``). ``capacity``: SpaceSaving's counters (default
    2k). ``passes=1`` releases the SpaceSaving summary (Holland's DPSS); ``passes=2`` reads the data
    again and releases the exact counts of the summary's tracked items, which removes SpaceSaving's
    overestimates (same memory, same threshold, same (ε, δ); the data must not change between the
    passes, so it must be re-iterable: a one-shot iterator is refused). ``cut='n/k'`` (the default)
    keeps only noisy values >= n̂/k; ``cut=None`` keeps everything above DPSS's τ. The length is
    private by default (a share of (ε, δ) buys n̂, as for ``SpaceSaving.release``); ``public_length``,
    ``length_epsilon``, ``length_delta``, ``seed`` and ``budget`` as there.

    ``k`` is a frequency cut (items of frequency about n/k or more), NOT a count of items.
    ``top_k=N`` (instead of ``k``) asks for the N most frequent items: exactly N are released
    whenever N pass DPSS's threshold, the N largest noisy values (docs/privacy.md §Exact-k: the
    selection is post-processing, the (ε, δ) are DPSS's). The capacity defaults to 64·N, the
    threshold is DPSS's lowest (k = capacity), ``cut`` does not apply, and
    ``metadata['qualified']`` says how many items passed (a function of the release).

    :param epsilon: ε of the release's (ε, δ)-DP guarantee
    :param delta: δ of the release's (ε, δ)-DP guarantee, in (0, 1)
    :param top_k: release exactly N items (the N largest noisy values) whenever N pass the threshold
    :param passes: 1, or 2 to count the first pass's candidates exactly in a second pass (re-iterable
        data)
    :param column: the item column of a DataFrame, table or CSV/Parquet/Arrow file
    :param chunk_size: items per batch when reading a file or an iterator
    """
    kk, n_top, cut = _k_or_top_k(k, top_k, capacity, cut)
    cap = kk if n_top is not None else 2 * kk if capacity is None else check_int("capacity", capacity, 1,
                                                                                  _core.MAX_CAPACITY)
    if cap < kk:
        raise ParameterError(f"DPSS needs capacity >= k, got capacity={cap} < k={kk}")
    if passes not in (1, 2) or isinstance(passes, bool):
        raise ParameterError(f"passes must be 1 or 2, got {passes!r}")
    check_cut(cut)
    _check_reiterable(data, passes)
    calibrate(epsilon, delta, "bounds", public_length=public_length, length_epsilon=length_epsilon,
              length_delta=length_delta)  # parameter errors before any reading
    from ..sketches.counters import SpaceSaving

    summary = SpaceSaving(cap)
    for batch in _batches(data, column=column, format=format, keys=keys, chunk_size=chunk_size, table_hashes=True):
        summary.update_many(batch)
    if passes == 1:
        return summary.release(epsilon=epsilon, delta=delta, **({"top_k": n_top} if n_top else {"k": kk, "cut": cut}),
                               seed=seed, public_length=public_length, length_epsilon=length_epsilon,
                               length_delta=length_delta, budget=budget)
    tracked = [key for key, _ in summary.items()]
    counter = CandidateCounts(tracked, summary.key_type or "int")
    for batch in _batches(data, column=column, format=format, keys=keys, chunk_size=chunk_size):
        counter.update_many(batch)
    if counter.n != summary.n:
        raise ParameterError("the second pass read a different number of items than the first; the input "
                             "changed between the passes")
    return release_exact_counts(summary, counter.counts(), epsilon=epsilon, delta=delta,
                                **({"top_k": n_top} if n_top else {"k": kk, "cut": cut}), seed=seed,
                                public_length=public_length, length_epsilon=length_epsilon,
                                length_delta=length_delta, budget=budget)


def _k_or_top_k(k, top_k, capacity, cut) -> tuple:
    """(k, top_k or None, cut) of a DPSS release asked for either k (the frequency cut n/k) or
    top_k (exactly N items, docs/privacy.md §Exact-k: k = capacity, the lowest threshold DPSS
    allows, chosen from N when capacity is None; the n/k cut does not apply)."""
    check_cut(cut)
    if top_k is None:
        if k is None:
            raise ParameterError("pass k= (keep items of frequency about n/k or more) or top_k= (exactly N items)")
        return check_int("k", k, 1, 2**63 - 1), None, cut
    if k is not None:
        raise ParameterError("pass k= (the frequency cut n/k) or top_k= (exactly N items), not both; top_k sets "
                             "k = capacity, the lowest threshold DPSS allows")
    n_top = check_top_k(top_k)
    return top_k_capacity(n_top, capacity), n_top, None


def release_space_saving(summary: Any, *, epsilon: float, delta: float, k: int | None = None,
                         cut: str | None = DEFAULT_CUT, top_k: int | None = None, seed: int | None = None,
                         public_length: bool = False, length_epsilon: float | None = None,
                         length_delta: float | None = None, allow_repeat: bool = False, budget=None) -> Release:
    """DPSS of ``summary`` (a :class:`dpsketch.SpaceSaving`; docs/algorithms.md §3,
    docs/mechanisms/dpss.md): the parameters are :meth:`dpsketch.SpaceSaving.release`'s. The
    threshold τ = max(n_lo/k − γ, n_up/capacity + 1 + γ) and the noise are the native release's
    (cpp/include/dpsketch/release/counter_release.hpp); the n/k cut is :func:`apply_cut`.

    :param summary: the summary to release (it holds its own lock during the release)
    :param epsilon: ε of the release's (ε, δ)-DP guarantee
    :param delta: δ of the release's (ε, δ)-DP guarantee, in (0, 1)
    :param k: keep the items of frequency about n/k or more (the threshold's k)
    :param cut: "n/k" (default) drops released values below n̂/k; None is Holland's release
    :param top_k: release exactly N items (the N largest noisy values) whenever N pass the threshold
    :param seed: reproducible noise, NOT secret (experiments only)
    :param public_length: treat the exact stream length as public (replace-one neighbours)
    :param length_epsilon: ε spent on the noisy length (default ε/10)
    :param length_delta: δ spent on the noisy length's bound (default δ/10)
    :param allow_repeat: release again although the summary was released before (the loss composes)
    :param budget: a :class:`dpsketch.Budget` charged (ε, δ) before any noise is drawn
    """
    from ._counter_release import release_counters

    check_cut(cut)
    capacity = summary.capacity
    if top_k is not None:
        if k is not None:
            raise ParameterError("pass k= (the frequency cut n/k) or top_k= (exactly N items), not both; top_k "
                                 "sets k = capacity, the lowest threshold DPSS allows")
        n_top = check_top_k(top_k)
        top_k_capacity(n_top, capacity)  # capacity >= top_k
        return release_counters(
            summary, _core.release.dpss, "DPSS", epsilon=epsilon, delta=delta, k=capacity, need="bounds", seed=seed,
            public_length=public_length, length_epsilon=length_epsilon, length_delta=length_delta,
            allow_repeat=allow_repeat, budget=budget, cut=lambda raw: apply_cut(raw, capacity, None), top_k=n_top,
        )
    if k is None:
        raise ParameterError("SpaceSaving.release needs k= (keep items of frequency about n/k or more) or "
                             "top_k= (exactly N items)")
    kk = check_int("k", k, 1, 2**63 - 1)
    if kk > capacity:
        raise ParameterError(
            f"DPSS needs capacity >= k, got capacity={capacity} < k={kk}; "
            f"use SpaceSaving({2 * kk}) (capacity = 2k) for full recall"
        )
    return release_counters(
        summary, _core.release.dpss, "DPSS", epsilon=epsilon, delta=delta, k=kk, need="bounds", seed=seed,
        public_length=public_length, length_epsilon=length_epsilon, length_delta=length_delta,
        allow_repeat=allow_repeat, budget=budget, cut=lambda raw: apply_cut(raw, kk, cut),
    )


def release_exact_counts(summary: Any, counts: list[int], *, epsilon: float, delta: float, k: int | None = None,
                         cut: str | None = DEFAULT_CUT, top_k: int | None = None, seed: int | None = None,
                         public_length: bool = False, length_epsilon: float | None = None,
                         length_delta: float | None = None, allow_repeat: bool = False,
                         budget: Budget | None = None) -> Release:
    """The two-pass release: ``summary`` is the SpaceSaving of the first pass, ``counts`` the exact
    counts of its tracked items in the order of ``summary.items()`` (the second pass). Spends (ε, δ)
    as ``SpaceSaving.release`` does (the length share included) and counts as a release of
    ``summary`` (release once; ``allow_repeat=True`` composes). ``k`` or ``top_k`` as for
    ``SpaceSaving.release``.

    :param epsilon: ε of the release's (ε, δ)-DP guarantee
    :param delta: δ of the release's (ε, δ)-DP guarantee, in (0, 1)
    :param cut: ``'n/k'`` (default) also drops released values below n̂/k; None keeps all above the
        threshold
    :param seed: a user seed: reproducible noise (and hash functions), NOT secret; None: the secure
        generator
    :param public_length: treat the exact stream length as public (replace-one neighbours) instead of
        paying for a noisy one
    :param length_epsilon: the ε share spent on the noisy stream length (default ε/10)
    :param length_delta: the δ share spent on the length bound (default δ/10)
    :param allow_repeat: release again although this object was released before (the privacy loss
        composes)
    :param budget: a :class:`dpsketch.Budget` charged before any noise is drawn
    """
    kk, n_top, cut = _k_or_top_k(k, top_k, summary.capacity, cut)
    cap = summary.capacity
    if cap < kk:
        raise ParameterError(f"DPSS needs capacity >= k, got capacity={cap} < k={kk}")
    tracked = [key for key, _ in summary.items()]
    cal = calibrate(epsilon, delta, "bounds", public_length=public_length, length_epsilon=length_epsilon,
                    length_delta=length_delta)
    with charging(budget, TWO_PASS_MECHANISM, epsilon=used_value(cal["epsilon_total"]), delta=cal["delta_total"]):
        extra = summary._guard.next(type(summary).__name__, allow_repeat)  # before any noise is drawn
    rng, seeded = _seeds.rng(seed, "noise")
    length = make_length(cal, summary.n, rng)
    raw = two_pass_release(tracked, list(counts), epsilon=cal["epsilon_mechanism"], delta=cal["delta_mechanism"],
                           k=kk, capacity=cap, length=length, rng=rng)
    raw = apply_cut(raw, kk, cut)
    if n_top is not None:
        raw = select_top_k(raw, n_top)  # post-processing (docs/privacy.md §Exact-k)
    return build_release(raw, mechanism=TWO_PASS_MECHANISM, cal=cal, epsilon=float(epsilon), delta=float(delta),
                         seeded=seeded, extra=extra)


# -- the plan: the guarantee and the accuracy before any data (docs/routes.md, Plans) ---------------

def plan_figures(epsilon, delta, *, k, top_k, capacity, cut, public_length, length_epsilon, length_delta, two_pass,
          n, level) -> dict:
    """DPSS in one or two passes (docs/privacy.md §DPSS): the checks of dpss.heavy_hitters, the
    calibration of the release, τ at the planning n by the core's ``dpss_threshold``, the n/k cut
    by ``dpss.apply_cut`` and the interval rule of intervals.py.

    :param epsilon: ε of the (ε, δ)-DP guarantee asked for
    :param delta: δ of the guarantee asked for
    :param k: the frequency cut's k (None with ``top_k``)
    :param top_k: exactly N items (None with ``k``)
    :param capacity: the summary's counters (None: the front door's default)
    :param cut: "n/k" or None, as the release takes it
    :param public_length: the exact stream length is public (replace-one neighbours)
    :param length_epsilon: ε of the noisy length (default ε/10)
    :param length_delta: δ of the noisy length's bound
    :param two_pass: the two-pass release (exact counts of the candidates)
    :param n: the number of rows to assume (a public planning figure), or None
    :param level: the level of the interval half-width
    """

    kk, n_top, cut = _k_or_top_k(k, top_k, capacity, cut)
    cap = kk if n_top is not None else 2 * kk if capacity is None else check_int("capacity", capacity, 1,
                                                                                   _core.MAX_CAPACITY)
    if cap < kk:
        raise ParameterError(f"DPSS needs capacity >= k, got capacity={cap} < k={kk}")
    check_cut(cut)
    cal = calibrate(epsilon, delta, "bounds", public_length=public_length, length_epsilon=length_epsilon,
                    length_delta=length_delta)
    eps_used = float(_R.epsilon_used(cal["epsilon_mechanism"]))
    gamma = int(_R.dpss_gamma(eps_used, cal["delta_mechanism"]))
    num, den = _R.laplace_scale(1, cal["epsilon_mechanism"])
    private = cal["length"] == "private"
    eps_n = float(_R.epsilon_used(cal["length_epsilon"])) if private else 0.0
    t_n = int(_R.length_t(eps_n, cal["length_delta"])) if private else 0

    def threshold_at(nh: int) -> tuple[float, bool]:
        length = (_R.Length.from_bounds(float(nh), t_n, eps_n, cal["length_delta"]) if private
                  else _R.Length.fixed(nh))
        tau = float(_R.dpss_threshold(length.n_lo, length.n_up, kk, cap, gamma))
        _, thr, inclusive, _ = apply_cut(([], tau, False, {"n_used": float(nh)}), kk, cut)
        return thr, inclusive

    def smallest_value(nh: int) -> int:  # the smallest noisy value released at n̂
        thr, inclusive = threshold_at(nh)
        return math.ceil(thr) if inclusive else math.floor(thr) + 1

    nn = "n̂" if private else "n"
    lo_term = f"({nn} - {t_n})/{kk} - {gamma}" if private else f"{nn}/{kk} - {gamma}"
    hi_term = f"({nn} + {t_n})/{cap} + 1 + {gamma}" if private else f"{nn}/{cap} + 1 + {gamma}"
    formula = f"max({lo_term}, {hi_term})" + (f", and noisy value >= {nn}/{kk} (the n/k cut)" if cut else "")
    notes = []
    threshold: Any
    if n is None:
        threshold, rule = f"tau = {formula}", "noisy value > tau"
        notes.append("the threshold depends on the stream length: give n= (a public planning assumption) for "
                     "figures")
    else:
        threshold, inclusive = threshold_at(n)
        rule = ("noisy value >= threshold (the n/k cut)" if inclusive else "noisy value > threshold") + (
            f"; at n̂ = n (the release reads n̂ = n + DLap(1/{eps_n:.4g}))" if private else "")
    if n_top is not None:
        notes.append(f"top_k={n_top}: of the keys above the threshold the {n_top} largest noisy values are "
                     "released; the counts below are for passing the threshold")
    mechanism = "DPSS[two-pass]" if two_pass else "DPSS"
    meta = {"epsilon_used": eps_used, "capacity": cap, "length": cal["length"], "n_used": float(n or 0),
            "length_epsilon": eps_n}
    _, rule_iv = for_release(mechanism, [], meta, level)
    s = int(rule_iv["noise_halfwidth"])
    interval = f"DLap(1/epsilon_used) on each of the {cap} counters, all at once"
    if not two_pass:
        err = f" = {math.floor(rule_iv['n_bound'] / cap)} at n" if n is not None else ""
        interval += f"; one pass: the low end also subtracts SpaceSaving's overestimate floor(n_bound/{cap}){err}"
    counts = prob = None
    if n is not None:
        prob = _mixture_probability(n, _length_law(cal["length"], n, eps_n), smallest_value,
                                    lambda u: dlap_tail_gt(eps_used, u - 1))
        counts = {p: _smallest(prob, p) for p in RELEASE_PROBABILITIES}
    means = ("the exact count (two passes: the release noises the exact counts of the candidates)" if two_pass else
             "the key's SpaceSaving count; it is >= the true count for a tracked key, and every key of true count "
             f"> n/{cap} is tracked, so a true count at these figures (when above n/{cap}) is released at least as "
             "often")
    if n is not None and private:
        means += "; over the noise of the counts and of n̂"
    return dict(mechanism=mechanism, epsilon=cal["epsilon_total"], delta=cal["delta_total"], rho=None,
                neighbours=cal["neighbours"], threshold=threshold, threshold_rule=rule,
                noise={"law": "discrete_laplace", "scale": num / den, "epsilon_used": eps_used,
                       "sensitivity": "l1 = 1 (one count)", "gamma": gamma, "capacity": cap},
                interval_half_width=s, interval=interval, smallest_count_released=counts,
                released_count_means=means if n is not None else "give n= (the threshold depends on it)",
                notes=tuple(notes), _probability=prob)
