"""The seeded release corpus: one named case per release route, shared by the recorder
(tools/record_release_corpus.py) and the check (tests/api/test_release_corpus.py), so that the two
cannot drift (docs/testing.md, "Release corpus").

Every case is a function ``case(dp) -> record`` of the ``dpsketch`` module: it makes one (or a few)
seeded releases on the small deterministic inputs below and returns what they released -- items
and values, threshold, ε/δ/ρ, mechanism, the noisy length, quantile values, a published sketch's
answers and bytes -- as plain JSON data. The metadata is NOT recorded (it may gain fields); only the
privacy-relevant, stable pairs of :data:`STABLE_METADATA` are, under ``metadata``, which the check
reads as a subset of the fresh release's metadata.

When the API changes, map the old call of a case onto the new API here, in the case's body, and the
check must still pass unchanged: same seeds, same inputs, same items and values.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import math
import os
import tempfile
from typing import Any, Callable

import numpy as np

CORPUS_VERSION = 1
SEED = 20261207  # the user seed of every case (a few cases add a second one)

# Metadata pairs recorded next to the values: privacy-relevant and expected to keep their meaning.
STABLE_METADATA = ("privacy_unit", "neighbours", "length", "route", "noise", "selection", "reproducible_not_secret",
                   "threshold_inclusive", "qualified", "max_keys_per_unit", "max_rows_per_key", "max_rows_per_unit")


# -- inputs: small and deterministic ------------------------------------------------------------

def _lcg(n: int, seed: int) -> list[float]:
    """n uniforms in [0, 1) from a 64-bit LCG (Knuth's MMIX constants): independent of numpy."""
    x, out = seed, []
    for _ in range(n):
        x = (6364136223846793005 * x + 1442695040888963407) % 2**64
        out.append((x >> 11) / 2.0**53)
    return out


def int_stream(dp) -> np.ndarray:
    """20 000 int keys, Zipf(1.1) over 2 000 values starting at -50 (negative keys included)."""
    return dp.datasets.zipf(20_000, 1.1, universe=2_000, seed=11, offset=-50)


def str_stream(dp) -> list[str]:
    """20 000 str keys, Zipf(1.2) over 1 500 labels, non-ASCII ones among them."""
    words = ("héllo", "naïve", "日本", "key", "x")
    return [f"{words[int(x) % 5]}-{int(x)}" for x in dp.datasets.zipf(20_000, 1.2, universe=1_500, seed=12)]


def events(dp) -> tuple[np.ndarray, np.ndarray]:
    """(user, key) of a 30 000-row event log with 6 heavy users (dpsketch.datasets.event_log)."""
    return dp.datasets.event_log(30_000, skew=1.1, universe=3_000, mean_rows_per_user=4.0, heavy_users=6,
                                 heavy_rows=600, seed=13)


def floats(n: int = 3_000) -> np.ndarray:
    """Positive, heavy-tailed floats (a latency-like sample), from the LCG."""
    u = _lcg(n, 14)
    return np.array([math.exp(6.0 * a) * (1.0 + b) for a, b in zip(u[::2], u[1::2])] * 2, dtype=np.float64)


def small_ints(n: int = 6_000) -> np.ndarray:
    """Integers in [0, 2^12), skewed towards 0, from the LCG."""
    return np.array([int(4096 * a * a) for a in _lcg(n, 15)], dtype=np.int64)


def skewed(dp) -> np.ndarray:
    """40 000 int keys, Zipf(2) over 200 values: heavy enough for the sketch envelope's threshold."""
    return dp.datasets.zipf(40_000, 2.0, universe=200, seed=17)


HOUR = 3600


def _times(n: int) -> np.ndarray:
    """Event times in seconds over four hours of 2026-01-01 (a public range), from the LCG."""
    return np.array([1_767_225_600 + int(4 * HOUR * a) for a in _lcg(n, 16)], dtype=np.int64)


HAND_INT = [7] * 60 + [3] * 45 + [-2] * 30 + [11] * 12 + [1, 2, 4, 5, 6, 8, 9, 10] * 3
HAND_STR = ["héllo"] * 70 + ["a"] * 40 + ["日本"] * 25 + ["b"] * 9 + list("cdefgh") * 2
HAND_FLOATS = [0.5, 1.25, 2.0, 2.0, 3.5, 10.0, 12.75, 40.0, 99.5, 100.0, 250.0, 1000.0] * 20


def input_digests(dp) -> dict:
    """SHA-256 of every generated input: a mismatch here means the inputs moved (a numpy or
    dataset-generator change), not the releases."""
    u, k = events(dp)
    return {name: _sha(np.ascontiguousarray(a)) for name, a in (
        ("int_stream", int_stream(dp)), ("str_stream", np.array(str_stream(dp))), ("events.user", u),
        ("events.key", k), ("skewed", skewed(dp)), ("floats", floats()), ("small_ints", small_ints()),
        ("times", _times(1_000)))}


# -- records ------------------------------------------------------------------------------------

def _sha(a: Any) -> str:
    if isinstance(a, np.ndarray):
        a = a.dtype.str.encode() + str(a.shape).encode() + a.tobytes()
    return hashlib.sha256(a).hexdigest()


def plain(x: Any) -> Any:
    """JSON-ready: numpy scalars and arrays to Python, tuples to lists; floats are kept as floats
    (JSON writes them by repr, so they read back exactly)."""
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return [plain(v) for v in x.tolist()]
    if isinstance(x, np.generic):
        return x.item()
    return x


def stable_metadata(meta: dict) -> dict:
    return {k: meta[k] for k in STABLE_METADATA if k in meta}


def release(r) -> dict:
    """A heavy-hitter or quantile Release: what it released, no metadata beyond the stable pairs."""
    return plain({"mechanism": r.mechanism, "epsilon": r.epsilon, "delta": r.delta, "rho": r.rho,
                  "threshold": r.threshold, "n": r.n, "items": [list(kv) for kv in r.items],
                  "metadata": stable_metadata(r.metadata)})


def linear_sketch(s, probes) -> dict:
    """A published (or live) private Count-Min/CountSketch: estimates, cells and bytes."""
    return plain({"estimates": [[p, s.estimate(p)] for p in probes], "cells_sha256": _sha(np.asarray(s.cells())),
                  "bytes_sha256": _sha(s.to_bytes())})


def dyadic_sketch(s, qs, points, threshold) -> dict:
    return plain({"quantiles": s.quantiles(qs), "ranks": [[x, s.rank(x)] for x in points],
                  "noisy_total": s.noisy_total(), "heavy_hitters": s.heavy_hitters(threshold),
                  "bytes_sha256": _sha(s.to_bytes())})


def sketch_release(r, sketch: dict) -> dict:
    out = release(r)
    del out["items"], out["threshold"], out["n"]
    out["sketch"] = sketch
    return out


# Where a module of the flat layout (the corpus was recorded on it) lives in the layout by role.
_MOVED_MODULES = {"dpss": "mechanisms.dpss", "privacy_unit": "mechanisms.unit_level", "windows": "time.windows",
                  "cumulative": "time.cumulative", "dyadic": "sketches.dyadic", "summaries": "sketches.counters",
                  "top_k": "mechanisms.top_k", "inmemory": "mechanisms.quantiles", "private": "mechanisms.private_sketches",
                  "budget": "accounting.budget", "calibration": "accounting.calibration"}


def _mod(dp, name: str):
    try:
        return importlib.import_module(f"{dp.__name__}.{_MOVED_MODULES.get(name, name)}")
    except ModuleNotFoundError:  # a checkout of the flat layout
        return importlib.import_module(f"{dp.__name__}.{name}")


# -- the cases ----------------------------------------------------------------------------------

CASES: dict[str, Callable[[Any], Any]] = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def _spacesaving(dp, data, capacity, key_type=None):
    s = dp.SpaceSaving(capacity, key_type=key_type)
    s.update_many(data)
    return s


@case
def dpss_int_private_length(dp):
    return release(_spacesaving(dp, int_stream(dp), 200).release(epsilon=1.0, delta=1e-6, k=100, seed=SEED))


@case
def dpss_str_private_length(dp):
    return release(_spacesaving(dp, str_stream(dp), 128).release(epsilon=0.5, delta=1e-5, k=64, seed=SEED))


@case
def dpss_public_length(dp):
    return release(_spacesaving(dp, int_stream(dp), 200).release(epsilon=1.0, delta=1e-6, k=100, seed=SEED,
                                                                 public_length=True))


@case
def dpss_cut_none(dp):
    return release(_spacesaving(dp, int_stream(dp), 200).release(epsilon=1.0, delta=1e-6, k=100, cut=None, seed=SEED))


@case
def dpss_length_shares(dp):
    return release(_spacesaving(dp, str_stream(dp), 100).release(epsilon=2.0, delta=1e-6, k=50, seed=SEED,
                                                                 length_epsilon=0.5, length_delta=2e-7))


@case
def dpss_top_k(dp):
    return release(_spacesaving(dp, int_stream(dp), 640).release(epsilon=1.0, delta=1e-6, top_k=10, seed=SEED))


@case
def dpss_hand_str(dp):
    return release(_spacesaving(dp, HAND_STR, 8).release(epsilon=2.0, delta=1e-4, k=4, cut=None, seed=SEED))


def _misragries(dp, data, capacity):
    s = dp.MisraGries(capacity)
    s.update_many(data)
    return s


@case
def pmg_no_k(dp):
    return release(_misragries(dp, int_stream(dp), 100).release(epsilon=1.0, delta=1e-6, seed=SEED))


@case
def pmg_k(dp):
    return release(_misragries(dp, str_stream(dp), 100).release(epsilon=1.0, delta=1e-6, k=50, seed=SEED))


@case
def pmg_k_public_length(dp):
    return release(_misragries(dp, int_stream(dp), 100).release(epsilon=1.0, delta=1e-6, k=50, seed=SEED,
                                                                public_length=True))


@case
def pmg_top_k(dp):
    return release(_misragries(dp, int_stream(dp), 100).release(epsilon=1.0, delta=1e-6, top_k=8, seed=SEED))


@case
def pmg_hand_int(dp):
    return release(_misragries(dp, HAND_INT, 6).release(epsilon=2.0, delta=1e-4, seed=SEED))


@case
def heavy_hitters_one_pass(dp):
    return release(dp.heavy_hitters(int_stream(dp), k=100, epsilon=1.0, delta=1e-6, seed=SEED))


@case
def heavy_hitters_two_passes(dp):
    return release(dp.heavy_hitters(str_stream(dp), k=100, epsilon=1.0, delta=1e-6, passes=2, seed=SEED))


@case
def heavy_hitters_two_passes_cut_none_public(dp):
    return release(dp.heavy_hitters(int_stream(dp), k=100, epsilon=1.0, delta=1e-6, passes=2, cut=None,
                                    public_length=True, seed=SEED))


@case
def heavy_hitters_top_k(dp):
    return release(dp.heavy_hitters(str_stream(dp), top_k=12, epsilon=1.0, delta=1e-6, seed=SEED))


@case
def heavy_hitters_top_k_two_passes(dp):
    return release(dp.heavy_hitters(int_stream(dp), top_k=12, capacity=300, epsilon=1.0, delta=1e-6, passes=2,
                                    seed=SEED))


@case
def heavy_hitters_file_two_passes(dp):
    with tempfile.TemporaryDirectory(prefix="dpsketch-corpus-") as d:
        path = os.path.join(d, "items.txt")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(str_stream(dp)) + "\n")
        return release(dp.heavy_hitters(path, k=100, epsilon=1.0, delta=1e-6, passes=2, seed=SEED))


@case
def heavy_hitters_dataframe(dp):
    import pandas as pd

    users, keys = events(dp)
    df = pd.DataFrame({"user": users, "page": [f"p{k}" for k in keys.tolist()]})
    return release(dp.heavy_hitters(df, column="page", k=50, epsilon=1.0, delta=1e-6, seed=SEED))


@case
def dpss_two_pass_release_exact_counts(dp):
    dpss = _mod(dp, "dpss")
    data = int_stream(dp)
    s = _spacesaving(dp, data, 120)
    tracked = [key for key, _ in s.items()]
    counts = [int(np.count_nonzero(data == key)) for key in tracked]
    return release(dpss.release_exact_counts(s, counts, epsilon=1.0, delta=1e-6, k=60, seed=SEED))


def _sketch_hh(dp, sketch, data, seed, release_seed=None, **kw):
    s = dp.SketchHeavyHitters(sketch, k=10, capacity=40, epsilon=2.0, delta=1e-6, max_stream_length=50_000,
                              seed=seed, **kw)
    s.update_many(data)
    return release(s.release(seed=release_seed))


@case
def sketch_heavy_hitters_countmin(dp):
    return _sketch_hh(dp, "countmin", skewed(dp), SEED)


@case
def sketch_heavy_hitters_countsketch(dp):
    return _sketch_hh(dp, "countsketch", [f"s{x}" for x in skewed(dp).tolist()], SEED, width=2048)


@case
def sketch_heavy_hitters_release_seed_public_length(dp):
    return _sketch_hh(dp, "countmin", skewed(dp), SEED, release_seed=SEED + 1, public_length=True, width=512,
                      depth=48)


INT_PROBES = [-50, -49, -48, 0, 7, 10_000]
STR_PROBES = ["héllo-0", "naïve-1", "日本-2", "x-4", "absent"]


@case
def private_countmin_laplace(dp):
    s = dp.PrivateCountMin(256, 4, epsilon=1.0, seed=SEED)
    s.update_many(int_stream(dp))
    r = s.release()
    return sketch_release(r, linear_sketch(r.sketch, INT_PROBES))


@case
def private_countmin_gaussian(dp):
    s = dp.PrivateCountMin(256, 4, rho=0.5, seed=SEED)
    s.update_many(str_stream(dp))
    r = s.release(delta=1e-6)
    return sketch_release(r, linear_sketch(r.sketch, STR_PROBES) | {"noisy_total": r.sketch.noisy_total()})


@case
def private_countsketch_laplace_replace(dp):
    s = dp.PrivateCountSketch(256, 5, epsilon=1.0, neighbours="replace", seed=SEED)
    s.update_many(int_stream(dp))
    r = s.release()
    return sketch_release(r, linear_sketch(r.sketch, INT_PROBES))


@case
def private_countsketch_gaussian(dp):
    s = dp.PrivateCountSketch(256, 5, rho=0.5, seed=SEED)
    s.update_many(str_stream(dp))
    r = s.release()
    return sketch_release(r, linear_sketch(r.sketch, STR_PROBES))


@case
def private_countmin_from_sketch(dp):
    parts = [dp.CountMin(256, 4, seed=SEED), dp.CountMin(256, 4, seed=SEED)]
    data = int_stream(dp)
    parts[0].update_many(data[: len(data) // 2])
    parts[1].update_many(data[len(data) // 2:])
    parts[0].merge(parts[1])
    r = dp.PrivateCountMin.from_sketch(parts[0], rho=0.25, seed=SEED + 1).release()
    return sketch_release(r, linear_sketch(r.sketch, INT_PROBES))


@case
def private_countsketch_from_sketch(dp):
    src = dp.CountSketch(128, 5, seed=SEED)
    src.update_many(str_stream(dp))
    r = dp.PrivateCountSketch.from_sketch(src, epsilon=0.5, seed=SEED + 1).release()
    return sketch_release(r, linear_sketch(r.sketch, STR_PROBES))


QS = [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99]
POINTS = [0, 1, 17, 100, 1000, 4095]


@case
def private_dyadic_gaussian_zhao(dp):
    s = dp.PrivateDyadicCountSketch(12, rho=0.5, seed=SEED)
    s.update_many(small_ints())
    r = s.release(delta=1e-6)
    return sketch_release(r, dyadic_sketch(r.sketch, QS, POINTS, 300.0))


@case
def private_dyadic_laplace_joint(dp):
    s = dp.PrivateDyadicCountSketch(12, epsilon=1.0, noise_allocation="joint", seed=SEED)
    s.update_many(small_ints())
    r = s.release()
    return sketch_release(r, dyadic_sketch(r.sketch, QS, POINTS, 300.0))


@case
def private_dyadic_bounds_replace(dp):
    s = dp.PrivateDyadicCountSketch(14, bounds=(0.0, 500.0), rho=1.0, neighbours="replace", seed=SEED)
    s.update_many(floats())
    r = s.release()
    return sketch_release(r, dyadic_sketch(r.sketch, QS, [0.0, 1.0, 20.0, 100.0, 400.0], 200.0))


@case
def private_dyadic_from_sketch(dp):
    parts = [dp.DyadicCountSketch(12, seed=SEED), dp.DyadicCountSketch(12, seed=SEED)]
    data = small_ints()
    parts[0].update_many(data[::2])
    parts[1].update_many(data[1::2])
    parts[0].merge(parts[1])
    r = dp.PrivateDyadicCountSketch.from_sketch(parts[0], rho=0.5, seed=SEED).release()
    return sketch_release(r, dyadic_sketch(r.sketch, QS, POINTS, 300.0))


def _quantiles(dp, values, **kw):
    return release(dp.quantiles(values, kw.pop("qs", QS), seed=SEED, **kw))


@case
def quantiles_exponential(dp):
    return _quantiles(dp, floats(), qs=[0.5], bounds=(0.0, 500.0), epsilon=1.0, method="exp")


@case
def quantiles_exponential_several(dp):
    return _quantiles(dp, floats(), qs=[0.9, 0.1, 0.5], bounds=(0.0, 500.0), epsilon=1.0, method="exp")


@case
def quantiles_jointexp(dp):
    return _quantiles(dp, floats(), bounds=(0.0, 500.0), epsilon=1.0, method="joint")


@case
def quantiles_recursive(dp):
    return _quantiles(dp, floats(), bounds=(0.0, 500.0), epsilon=1.0, method="recursive")


@case
def quantiles_auto(dp):
    return _quantiles(dp, HAND_FLOATS, qs=[0.25, 0.5, 0.5, 0.75], bounds=(0.0, 1000.0), epsilon=2.0)


@case
def quantiles_log_scale(dp):
    return _quantiles(dp, floats(), bounds=(1.0, 1000.0), epsilon=1.0, scale="log", relative_accuracy=0.02)


@case
def quantiles_integer(dp):
    return _quantiles(dp, small_ints(), bounds=(0, 4096), epsilon=1.0, integer=True)


def _unit_hh(dp, **kw):
    users, keys = events(dp)
    return release(dp.mechanisms.unit_level.unit_heavy_hitters(keys, users, epsilon=1.0, delta=1e-6, seed=SEED, **kw))


@case
def unit_heavy_hitters_gaussian(dp):
    return _unit_hh(dp, max_keys_per_unit=4)


@case
def unit_heavy_hitters_laplace(dp):
    return _unit_hh(dp, max_keys_per_unit=3, max_rows_per_key=2, noise="laplace")


@case
def unit_heavy_hitters_gumbel(dp):
    return _unit_hh(dp, max_keys_per_unit=4, selection="gumbel", k=10)


@case
def unit_heavy_hitters_str_keys(dp):
    users, keys = events(dp)
    labels = np.array([f"p{int(k)}" for k in keys])
    ids = np.array([f"u{int(u)}" for u in users])
    return release(dp.mechanisms.unit_level.unit_heavy_hitters(labels, ids, epsilon=1.0, delta=1e-6, max_keys_per_unit=4, seed=SEED))


def _bounded(b) -> dict:
    return plain({"keys_sha256": _sha(np.ascontiguousarray(b.keys)), "counts_sha256": _sha(np.asarray(b.counts)),
                  "keys": len(b.keys), "total": int(np.sum(b.counts)), "head": [[k, c] for k, c in
                                                                                 zip(b.keys[:10], b.counts[:10])]})


@case
def bound_contributions_and_release(dp):
    pu = _mod(dp, "privacy_unit")
    users, keys = events(dp)
    b = dp.mechanisms.unit_level.bound_contributions(keys, users, max_keys_per_unit=3, max_rows_per_key=2, seed=SEED)
    return {"bounded": _bounded(b),
            "gaussian": release(pu.release_bounded_counts(b, epsilon=1.0, delta=1e-6, seed=SEED + 1)),
            "laplace": release(pu.release_bounded_counts(b, epsilon=1.0, delta=1e-6, noise="laplace", seed=SEED + 2)),
            "gumbel": release(pu.release_bounded_counts(b, epsilon=1.0, delta=1e-6, selection="gumbel", k=5,
                                                        seed=SEED + 3))}


@case
def contribution_bounder(dp):
    users, keys = events(dp)
    labels = [f"p{int(k)}" for k in keys]
    b = dp.mechanisms.unit_level.ContributionBounder(max_keys_per_unit=4, seed=SEED)
    for i in range(0, len(labels), 7_000):
        b.add(labels[i:i + 7_000], users[i:i + 7_000])
    return _bounded(b.bounded())


@case
def bound_rows_per_unit(dp):
    users, _ = events(dp)
    mask = dp.mechanisms.unit_level.bound_rows_per_unit(floats(len(users) // 2 * 2)[: len(users)], users, max_rows_per_unit=3, seed=SEED)
    return {"kept": int(mask.sum()), "mask_sha256": _sha(np.packbits(mask))}


def _unit_stream(dp, summary, **kw):
    users, keys = events(dp)
    s = dp.mechanisms.unit_level.UnitStream(summary, capacity=200, max_rows_per_unit=5)
    for i in range(0, len(keys), 4_000):
        s.update(keys[i:i + 4_000], users[i:i + 4_000])
    return release(s.release(epsilon=2.0, delta=1e-5, seed=SEED, **kw))


@case
def unit_stream_spacesaving(dp):
    return _unit_stream(dp, "spacesaving", k=100)


@case
def unit_stream_misragries(dp):
    return _unit_stream(dp, "misragries")


@case
def unit_quantiles_rho(dp):
    users, _ = events(dp)
    values = floats(len(users) // 2 * 2)[: len(users)]
    return release(dp.mechanisms.unit_level.unit_quantiles(values, users, QS, max_rows_per_unit=4, bounds=(0.0, 500.0), rho=0.5,
                                     delta=1e-6, seed=SEED))


@case
def unit_quantiles_epsilon(dp):
    users, keys = events(dp)
    return release(dp.mechanisms.unit_level.unit_quantiles(keys % 4096, users, QS, max_rows_per_unit=3, universe_bits=12, epsilon=1.0,
                                     seed=SEED))


@case
def unit_quantiles_epsilon_delta(dp):
    users, keys = events(dp)
    return release(dp.mechanisms.unit_level.unit_quantiles(keys % 4096, users, [0.5], max_rows_per_unit=3, universe_bits=12, epsilon=1.0,
                                     delta=1e-6, seed=SEED))


@case
def release_unit_quantiles(dp):
    pu = _mod(dp, "privacy_unit")
    sk = dp.DyadicCountSketch(12, seed=SEED)
    sk.update_many(small_ints())
    return release(pu.release_unit_quantiles(sk, QS, max_rows_per_unit=2, rho=0.5, seed=SEED,
                                             bounding="rows bounded by the corpus"))


def _windowed(dp, make, **kw):
    data = kw.pop("data")
    t = _times(len(data))
    w = dp.Windowed(period="1h", make=make, epsilon=1.0, delta=1e-6, start=1_767_225_600,
                    end=1_767_225_600 + 4 * HOUR, seed=SEED, **kw)
    step = 5_000
    out = []
    for rel in w.releases((data[i:i + step], t[i:i + step]) for i in range(0, len(data), step)):
        rec = release(rel)
        rec["window"] = rel.metadata["window"]["index"]
        out.append(rec)
    return out


@case
def windowed_dpss(dp):
    return _windowed(dp, lambda: dp.SpaceSaving(100), k=50, data=int_stream(dp))


@case
def windowed_pmg(dp):
    return _windowed(dp, lambda: dp.MisraGries(100), data=str_stream(dp))


@case
def windowed_unit(dp):
    users, keys = events(dp)
    t = _times(len(keys))
    w = dp.Windowed(period="1h", make=lambda: dp.SpaceSaving(100), epsilon=2.0, delta=1e-5, k=50,
                    start=1_767_225_600, end=1_767_225_600 + 4 * HOUR, seed=SEED, max_rows_per_unit=4)
    step = 6_000
    out = []
    for rel in w.releases((keys[i:i + step], t[i:i + step], users[i:i + step]) for i in range(0, len(keys), step)):
        rec = release(rel)
        rec["window"] = rel.metadata["window"]["index"]
        out.append(rec)
    return out


@case
def cumulative_binary_countmin(dp):
    c = dp.Cumulative(horizon=4, make=lambda: dp.CountMin(128, 4, seed=SEED), rho=0.5, schedule="binary", seed=SEED)
    data = int_stream(dp)
    out = []
    for i in range(4):
        nodes = c.step(data[i * 5_000:(i + 1) * 5_000])
        p = c.prefix()
        out.append(plain({"step": i + 1,
                          "nodes": [sketch_release(n, linear_sketch(n.sketch, INT_PROBES)) for n in nodes],
                          "prefix": {"estimates": [[x, p.estimate(x)] for x in INT_PROBES],
                                     "noisy_total": p.noisy_total(),
                                     "top": p.top(list(range(-50, 0)), k=5)}}))
    return out


@case
def cumulative_smooth_countsketch_laplace(dp):
    c = dp.Cumulative(horizon=8, make=lambda: dp.CountSketch(128, 5, seed=SEED), epsilon=1.0, schedule="smooth",
                      seed=SEED)
    data = str_stream(dp)
    out = []
    for i in range(8):
        nodes = c.step(data[i * 2_500:(i + 1) * 2_500])
        p = c.prefix()
        out.append(plain({"step": i + 1,
                          "nodes": [sketch_release(n, linear_sketch(n.sketch, STR_PROBES)) for n in nodes],
                          "prefix": {"estimates": [[x, p.estimate(x)] for x in STR_PROBES]}}))
    return out


@case
def cumulative_dyadic_by_time(dp):
    c = dp.Cumulative(horizon=4, make=lambda: dp.DyadicCountSketch(12, seed=SEED), rho=1.0, delta=1e-6, seed=SEED)
    data = small_ints()
    t = _times(len(data))
    out = []
    for st in c.releases(((data[i:i + 2_000], t[i:i + 2_000]) for i in range(0, len(data), 2_000)), period="1h",
                         start=1_767_225_600):
        p = st.prefix
        out.append(plain({"step": st.step, "window": st.window["index"],
                          "nodes": [sketch_release(n, {"bytes_sha256": _sha(n.sketch.to_bytes()),
                                                       "noisy_total": n.sketch.noisy_total()}) for n in st.nodes],
                          "prefix": {"quantiles": [p.quantile(q) for q in QS], "ranks": [p.rank(x) for x in POINTS],
                                     "noisy_total": p.noisy_total(), "heavy_hitters": p.heavy_hitters(400.0)}}))
    return out


def _partitions(dp, cls, data, parts, capacity):
    """Key partitions by a public function of the key alone, each fed in key order."""
    groups: list[list] = [[] for _ in range(parts)]
    for x in sorted(data.tolist() if isinstance(data, np.ndarray) else data):
        groups[int(hashlib.sha256(str(x).encode()).digest()[0]) % parts].append(x)
    out = []
    for g in groups:
        s = cls(capacity)
        if g:
            s.update_many(g)
        out.append(s)
    return out


@case
def distributed_release_partitions_dpss(dp):
    d = _mod(dp, "distributed")
    parts = _partitions(dp, dp.SpaceSaving, int_stream(dp), 3, 100)
    return release(d.release_partitions(parts, k=50, epsilon=1.0, delta=1e-6, seed=SEED))


@case
def distributed_release_partitions_pmg(dp):
    d = _mod(dp, "distributed")
    parts = _partitions(dp, dp.MisraGries, str_stream(dp), 4, 80)
    return release(d.release_partitions(parts, k=40, epsilon=1.0, delta=1e-6, seed=SEED, partition_ids=[3, 5, 7, 9]))


@case
def distributed_release_partitions_top_k_public(dp):
    d = _mod(dp, "distributed")
    parts = _partitions(dp, dp.SpaceSaving, str_stream(dp), 2, 400)
    return release(d.release_partitions(parts, k=400, top_k=6, epsilon=1.0, delta=1e-6, seed=SEED,
                                        public_length=True))


@case
def distributed_release_windows(dp):
    d = _mod(dp, "distributed")
    data = int_stream(dp)
    t = _times(len(data))
    idx = (t - 1_767_225_600) // HOUR + 10
    parts = {}
    for i in range(10, 14):
        sub = data[idx == i]
        if i == 12:
            continue  # a window with no rows is released too
        parts[i] = list(enumerate(_partitions(dp, dp.SpaceSaving, sub, 2, 60)))
    rels = d.release_windows(parts, first=10, last=14, period_ns=HOUR * 10**9, origin_ns=0, partitions=2,
                             empty=lambda: dp.SpaceSaving(60), k=30, epsilon=1.0, delta=1e-6, seed=SEED)
    return [release(r) | {"window": r.metadata["window"]["index"]} for r in rels]


@case
def distributed_release_exact_counts(dp):
    d = _mod(dp, "distributed")
    keys, counts = np.unique(int_stream(dp), return_counts=True)
    return {"gaussian": release(d.release_exact_counts(keys, counts, k=100, epsilon=1.0, delta=1e-6, seed=SEED)),
            "laplace_cut_none": release(d.release_exact_counts(keys, counts, k=None, cut=None, noise="laplace",
                                                               epsilon=1.0, delta=1e-6, seed=SEED))}


@case
def distributed_release_exact_counts_str(dp):
    d = _mod(dp, "distributed")
    keys, counts = np.unique(np.array(str_stream(dp)), return_counts=True)
    return release(d.release_exact_counts(keys, counts, k=50, epsilon=0.5, delta=1e-6, seed=SEED))


@case
def distributed_sketch_route_int(dp):
    d = _mod(dp, "distributed")
    route = d.SketchRoute(k=30, epsilon=1.0, delta=1e-6, strings=False, seed=SEED)
    data = int_stream(dp)
    parts = [route.prototype(gamma=0.05), route.prototype(gamma=0.05)]
    parts[0].update_many(data[::2].view(np.uint64))  # int64 keys as [0, 2^64), two's complement
    parts[1].update_many(data[1::2].view(np.uint64))
    parts[0].merge(parts[1])
    cands = route.candidates(parts[0])
    return {"candidates": plain(cands), "release": release(route.release())}


def _fingerprint(salt: int, label: str) -> int:
    """A salted 64-bit fingerprint (signed, as Spark's xxhash64 returns it). A stand-in: Spark
    computes xxhash64 in the JVM; the route's mechanism reads only the fingerprints' values."""
    return int.from_bytes(hashlib.sha256(salt.to_bytes(8, "little") + label.encode()).digest()[:8], "little",
                          signed=True)


@case
def distributed_sketch_route_str(dp):
    d = _mod(dp, "distributed")
    route = d.SketchRoute(k=20, epsilon=1.0, delta=1e-6, strings=True, seed=SEED)
    labels = str_stream(dp)
    fp1 = np.array([_fingerprint(route.salt, x) for x in labels], dtype=np.int64)
    merged = route.prototype(gamma=0.05)
    merged.update_many(fp1.view(np.uint64))
    cands = route.candidates(merged)
    rows: dict = {}  # (φ1, φ2) -> the labels of its rows, for the candidates' φ1 only
    wanted = set(cands)
    for f, x in zip(fp1.tolist(), labels):
        if f in wanted:
            rows.setdefault((f, _fingerprint(route.salt2, x)), []).append(x)
    found = {fp: (len(xs), len(set(xs)), min(xs)) for fp, xs in rows.items()}
    return {"salts": [route.salt, route.salt2], "candidates": cands, "release": release(route.release(found))}


# -- the command line ---------------------------------------------------------------------------

def cli(dp, *argv) -> list:
    """Run ``dpsketch`` in this process; its JSON lines, parsed."""
    main = _mod(dp, "cli").main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    if code != 0:
        raise AssertionError(f"dpsketch {' '.join(map(str, argv))} exited {code}: {err.getvalue()}")
    text = out.getvalue()
    try:
        return [json.loads(text)]  # one release, possibly indented
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]  # one JSON line per window


def cli_record(obj: dict) -> dict:
    """A CLI JSON release: its values and guarantee (a fixed list of fields, so that fields the
    output gains later are not read) and the stable pairs of its ``metadata`` (``top``) or
    ``privacy`` (``quantiles``) record; not the ``cli`` block."""
    rec = {k: obj[k] for k in ("step", "mechanism", "epsilon", "delta", "rho", "threshold", "n", "items", "quantiles",
                               "noisy_total", "resolution") if k in obj}
    meta = obj.get("metadata") or obj.get("privacy") or {}
    if "privacy" in obj:  # quantiles: the guarantee is in the privacy record
        rec["guarantee"] = {k: meta[k] for k in ("epsilon", "delta", "rho") if k in meta}
    rec["metadata"] = stable_metadata(meta)
    window = meta.get("window") or obj.get("window")  # --window: in the metadata; --cumulative: beside it
    if isinstance(window, dict):
        rec["window"] = window["index"]
    return plain(rec)


@contextlib.contextmanager
def _files(dp):
    """The CLI's inputs, written into a temporary folder: text items, int items, skewed text items,
    and a CSV of (user, page, item, value, time)."""
    users, keys = events(dp)
    vals = floats(len(keys) // 2 * 2)[: len(keys)]
    t = _times(len(keys))
    with tempfile.TemporaryDirectory(prefix="dpsketch-corpus-") as d:
        with open(os.path.join(d, "items.txt"), "w", encoding="utf-8") as fh:
            fh.write("\n".join(str_stream(dp)) + "\n")
        with open(os.path.join(d, "ints.txt"), "w", encoding="utf-8") as fh:
            fh.write("\n".join(map(str, int_stream(dp).tolist())) + "\n")
        with open(os.path.join(d, "skewed.txt"), "w", encoding="utf-8") as fh:
            fh.write("\n".join(f"s{x}" for x in skewed(dp).tolist()) + "\n")
        with open(os.path.join(d, "events.csv"), "w", encoding="utf-8") as fh:
            fh.write("user,page,item,value,time\n")
            fh.writelines(f"{u},p{k},{k},{v!r},{tt}\n" for u, k, v, tt in zip(users.tolist(), keys.tolist(),
                                                                               vals.tolist(), t.tolist()))
        yield d


_CLI_TOP = {
    "default": ("items.txt",),
    "int_keys_cut_none": ("ints.txt", "--int-keys", "--cut", "none", "--k", "200"),
    "public_length": ("items.txt", "--public-length", "--k", "100"),
    "top_k": ("items.txt", "--top-k", "10"),
    "passes_2": ("items.txt", "--passes", "2", "--k", "100"),
    "misragries": ("ints.txt", "--int-keys", "--algorithm", "misragries", "--k", "50"),
    "countmin": ("skewed.txt", "--algorithm", "countmin", "--k", "10", "--oversample", "4", "--epsilon", "2",
                 "--max-stream-length", "50000"),
    "countsketch_public": ("skewed.txt", "--algorithm", "countsketch", "--k", "10", "--oversample", "16",
                           "--epsilon", "2", "--public-length", "--max-stream-length", "auto"),
    "csv_column": ("events.csv", "--column", "page", "--epsilon", "0.5", "--delta", "1e-5"),
    "privacy_id": ("events.csv", "--column", "page", "--privacy-id", "user", "--max-keys-per-unit", "4"),
    "privacy_id_laplace": ("events.csv", "--column", "page", "--privacy-id", "user", "--max-keys-per-unit", "3",
                           "--max-rows-per-key", "2", "--noise", "laplace"),
    "privacy_id_gumbel": ("events.csv", "--column", "page", "--privacy-id", "user", "--max-keys-per-unit", "4",
                          "--top-k", "5", "--selection", "gumbel"),
    "privacy_id_bounded_memory": ("events.csv", "--column", "page", "--privacy-id", "user", "--max-keys-per-unit",
                                  "4", "--max-rows-per-unit", "5", "--k", "50"),
    "window": ("events.csv", "--column", "page", "--time-column", "time", "--window", "1h", "--start",
               "2026-01-01T00:00:00Z", "--end", "2026-01-01T04:00:00Z", "--k", "50"),
    "window_privacy_id": ("events.csv", "--column", "page", "--time-column", "time", "--window", "1h", "--start",
                          "2026-01-01T00:00:00Z", "--end", "2026-01-01T04:00:00Z", "--k", "50", "--privacy-id",
                          "user", "--max-keys-per-unit", "4", "--max-rows-per-unit", "4"),
    "cumulative": ("events.csv", "--column", "item", "--int-keys", "--time-column", "time", "--window", "1h",
                   "--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T04:00:00Z", "--cumulative", "--k", "20",
                   "--schedule", "binary"),
}

_CLI_QUANTILES = {
    "dyadic_rho": ("events.csv", "--column", "value", "--bounds", "0,500", "--rho", "0.5"),
    "dyadic_epsilon_int": ("events.csv", "--column", "user", "--universe-bits", "14", "--epsilon", "1"),
    "exp": ("events.csv", "--column", "value", "--bounds", "0,500", "--epsilon", "1", "--method", "exp", "--q", "0.5"),
    "joint_log": ("events.csv", "--column", "value", "--bounds", "1,1000", "--epsilon", "1", "--method", "joint",
                  "--scale", "log"),
    "recursive": ("events.csv", "--column", "value", "--bounds", "0,500", "--epsilon", "1", "--method", "recursive",
                  "--q", "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9"),
    "privacy_id": ("events.csv", "--column", "value", "--bounds", "0,500", "--rho", "0.5", "--privacy-id", "user",
                   "--max-rows-per-unit", "4"),
}


@case
def cli_top(dp):
    with _files(dp) as d:
        return {name: [cli_record(o) for o in cli(dp, "top", os.path.join(d, args[0]), *args[1:], "--seed", SEED,
                                                  "--json", "--quiet", *(() if "--cumulative" in args else
                                                                         ("--show", "0")))]
                for name, args in _CLI_TOP.items()}


@case
def cli_quantiles(dp):
    with _files(dp) as d:
        return {name: [cli_record(o) for o in cli(dp, "quantiles", os.path.join(d, args[0]), *args[1:], "--seed",
                                                  SEED, "--json", "--quiet")]
                for name, args in _CLI_QUANTILES.items()}


# -- running ------------------------------------------------------------------------------------

def run_case(dp, name: str) -> Any:
    """The case's record as the corpus stores it (through JSON, so that tuples, ints and floats
    compare as they read back)."""
    return json.loads(json.dumps(plain(CASES[name](dp)), ensure_ascii=False))


def record_corpus(dp) -> dict:
    return {"version": CORPUS_VERSION, "seed": SEED, "dpsketch_version": dp.__version__,
            "stable_metadata": list(STABLE_METADATA), "inputs": input_digests(dp),
            "cases": {name: run_case(dp, name) for name in CASES}}


def _scalar_list(x) -> bool:
    return isinstance(x, list) and not any(isinstance(v, (dict, list)) for v in x)


def dumps(obj: Any, pad: str = "") -> str:
    """The corpus file's text: JSON (floats by repr, so exact), a dict per line per key, a list of
    scalars (an item, a quantile list) on one line, so that a moved value shows as a one-line diff."""
    if isinstance(obj, dict) and obj:
        inner = pad + " "
        return "{\n" + ",\n".join(f"{inner}{json.dumps(k, ensure_ascii=False)}: {dumps(v, inner)}"
                                   for k, v in obj.items()) + "\n" + pad + "}"
    if isinstance(obj, list) and obj and not _scalar_list(obj):
        inner = pad + " "
        return "[\n" + ",\n".join(inner + dumps(v, inner) for v in obj) + "\n" + pad + "]"
    return json.dumps(obj, ensure_ascii=False)


def differences(stored: Any, fresh: Any, path: str = "", *, metadata: bool = False) -> list[str]:
    """Where ``fresh`` differs from ``stored``: exact equality of every value (NaN equals NaN;
    1 and 1.0 are equal, as the releases compare numerically), except under a ``metadata`` key,
    where ``stored`` need only be a subset of ``fresh`` (metadata may gain fields)."""
    out: list[str] = []
    if isinstance(stored, dict) and isinstance(fresh, dict):
        for k, v in stored.items():
            if k not in fresh:
                out.append(f"{path}/{k}: missing")
            else:
                out += differences(v, fresh[k], f"{path}/{k}", metadata=k == "metadata")
        if not metadata:
            out += [f"{path}/{k}: new field" for k in fresh if k not in stored]
        return out
    if isinstance(stored, list) and isinstance(fresh, list):
        if len(stored) != len(fresh):
            return [f"{path}: length {len(stored)} -> {len(fresh)}"]
        for i, (a, b) in enumerate(zip(stored, fresh)):
            out += differences(a, b, f"{path}[{i}]")
        return out
    if isinstance(stored, float) and isinstance(fresh, float) and math.isnan(stored) and math.isnan(fresh):
        return out
    if isinstance(stored, bool) != isinstance(fresh, bool) or isinstance(stored, str) != isinstance(fresh, str) \
            or stored != fresh:
        return [f"{path}: {stored!r} -> {fresh!r}"]
    return out
