"""Holland §6 sweeps: DP Misra-Gries (PMG), DP SpaceSaving (DPSS) and the error-envelope heavy
hitters over Count-Min and CountSketch, on Zipf streams (``holland-synthetic``) and on real data
(``holland-real``).

Setup (docs/algorithms.md §7): delta = 1e-3; counter-based summaries get k~ = factor * k counters
(factor 2 by default); the sketches get a candidate set of capacity 2 * factor * k (= 4k at the
default factor, as in the paper) and ``max_stream_length = n``. Every run builds a fresh structure,
feeds the whole stream with one ``update_many`` (timed), releases once with a run-specific seed
and scores the release against the exact counts.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from dpsketch import datasets
from ._common import Progress, derive_seed, log, timed_update
from .metrics import Truth, heavy_hitter_scores
from dpsketch.errors import ParameterError

ALGORITHMS = ("MisraGries", "SpaceSaving", "CountMinSketch", "CountSketch")
METRICS = ("update_us", "memory_bytes", "recall", "precision", "are", "n_reported", "n_heavy")
COLUMNS = [
    "experiment", "dataset", "sweep", "x", "algorithm", "repeat", "n", "k", "factor", "capacity",
    "epsilon", "delta", "skew", "seed", "update_us", "memory_bytes", "recall", "precision", "are",
    "n_heavy", "n_reported", "true_positives", "threshold", "mechanism", "epsilon_used",
    "release_s", "meta",
]


@dataclass(frozen=True)
class HollandConfig:
    n: int = 1 << 24
    universe: int = 100_000
    ks: tuple = (32, 64, 128, 256, 512, 1024)
    epsilons: tuple = (0.001, 0.01, 0.1, 1.0, 10.0)
    skews: tuple = (1.1, 1.4, 1.7, 2.0, 2.3, 2.6)
    factors: tuple = (1, 2, 4, 8, 16)
    k: int = 128
    epsilon: float = 0.1
    skew: float = 1.1
    factor: int = 2
    delta: float = 1e-3
    sketch_capacity_ratio: int = 2  # sketch candidate capacity = ratio * factor * k (4k by default)
    repeats: int = 20
    algorithms: tuple = ALGORITHMS
    real_limit: dict = field(default_factory=dict)  # dataset -> prefix length (None = whole stream)


SYNTHETIC = {
    "full": HollandConfig(),
    "quick": HollandConfig(n=1 << 20, repeats=3),
    # Tests: a few seconds. Steep skews keep every non-heavy item's frequency far below n/k (by
    # more than SpaceSaving's overestimate plus the noise margin), so DPSS precision is 1.0 here.
    "tiny": HollandConfig(n=1 << 16, ks=(16, 32), epsilons=(0.1, 1.0), skews=(2.0, 2.6), k=32, skew=2.0, repeats=2),
}

REAL = {
    "full": HollandConfig(repeats=10),
    "quick": HollandConfig(repeats=2, real_limit={"gcide": 1 << 20}),
    "tiny": HollandConfig(
        ks=(32, 64), epsilons=(0.1, 1.0), factors=(1, 2), repeats=2,
        real_limit={"retail": 1 << 15, "gcide": 1 << 15},
    ),
}


# ------------------------------------------------------------------------------- one run
def _scalar_meta(meta) -> str:
    if not meta:
        return ""
    parts = []
    for key in sorted(meta):
        v = meta[key]
        if isinstance(v, (bool, int, float, np.integer, np.floating)) or (isinstance(v, str) and len(v) < 40):
            parts.append(f"{key}={v}")
    return ";".join(parts)


def run_one(algorithm: str, stream, truth: Truth, *, k: int, factor: int, epsilon: float, delta: float,
            seed: int, sketch_capacity_ratio: int = 2, public_length: bool = True) -> dict:
    """Build, feed, release and score one structure. Returns the measured fields of a CSV row.

    ``public_length=True`` is the papers' model (n public; the guarantee then holds for replace-one
    neighbours, docs/privacy.md §Stream length); False is the library default (private n)."""
    import dpsketch

    n = len(stream)
    k_tilde = factor * k
    if algorithm == "MisraGries":
        obj = dpsketch.MisraGries(k_tilde)
        capacity = k_tilde
    elif algorithm == "SpaceSaving":
        obj = dpsketch.SpaceSaving(k_tilde)
        capacity = k_tilde
    elif algorithm in ("CountMinSketch", "CountSketch"):
        capacity = sketch_capacity_ratio * k_tilde
        obj = dpsketch.SketchHeavyHitters(
            sketch="countmin" if algorithm == "CountMinSketch" else "countsketch",
            k=k, capacity=capacity, epsilon=epsilon, delta=delta, max_stream_length=n, seed=seed,
            public_length=public_length,
        )
    else:
        raise ParameterError(f"unknown algorithm {algorithm!r}; use one of {ALGORITHMS}")
    update_us = timed_update(obj, stream)
    memory = obj.memory_bytes()
    t0 = time.perf_counter()
    if algorithm == "MisraGries":
        rel = obj.release(epsilon=epsilon, delta=delta, k=k, seed=seed, public_length=public_length)
    elif algorithm == "SpaceSaving":  # Holland's release as published: no n/k cut
        rel = obj.release(epsilon=epsilon, delta=delta, k=k, cut=None, seed=seed, public_length=public_length)
    else:
        rel = obj.release()
    release_s = time.perf_counter() - t0
    scores = heavy_hitter_scores(rel.items, truth, k)
    meta = dict(getattr(rel, "metadata", {}) or {})
    return {
        "capacity": capacity,
        "update_us": update_us,
        "memory_bytes": memory,
        **scores,
        "threshold": float(rel.threshold),
        "mechanism": getattr(rel, "mechanism", ""),
        "epsilon_used": float(getattr(rel, "epsilon", math.nan)),
        "release_s": release_s,
        "meta": _scalar_meta(meta),
    }


def meta_field(row: dict, key: str):
    """One ``key=value`` field of a run's ``meta`` column (e.g. the sketch's ``depth``), or None."""
    meta = row.get("meta") or ""
    if not isinstance(meta, str):
        return None
    for part in meta.split(";"):
        k, _, v = part.partition("=")
        if k == key:
            return v
    return None


# Per-point parameters written into summary.csv (ranges over the repeats): the sketches' depth and
# width come from the release metadata, so they are what the library chose, not what the text says.
SPANS = {
    "capacity": lambda r: r.get("capacity"),
    "depth": lambda r: meta_field(r, "depth"),
    "width": lambda r: meta_field(r, "width"),
    "true_heavy_hitters": lambda r: r.get("n_heavy"),
}


# ------------------------------------------------------------------------------- sweeps
def _points(cfg: HollandConfig, sweeps: tuple) -> list[dict]:
    pts = []
    base = {"k": cfg.k, "epsilon": cfg.epsilon, "skew": cfg.skew, "factor": cfg.factor}
    for sweep in sweeps:
        values = {"k": cfg.ks, "epsilon": cfg.epsilons, "skew": cfg.skews, "factor": cfg.factors}[sweep]
        for v in values:
            p = dict(base, sweep=sweep, x=v)
            p[sweep] = v
            pts.append(p)
    return pts


def synthetic(cfg: HollandConfig, *, seed: int, writer, progress: bool = True) -> None:
    """Sweeps over k, epsilon and skew on Zipf streams; one stream per (repeat, skew), shared by all
    algorithms and points of that repeat. ``writer(row)`` receives each finished run."""
    points = _points(cfg, ("k", "epsilon", "skew"))
    by_skew: dict[float, list[dict]] = {}
    for p in points:
        by_skew.setdefault(p["skew"], []).append(p)
    bar = Progress(cfg.repeats * len(points) * len(cfg.algorithms), "holland-synthetic", progress)
    try:
        for rep in range(cfg.repeats):
            for skew, pts in by_skew.items():
                stream = datasets.zipf(cfg.n, skew, universe=cfg.universe, seed=derive_seed(seed, "zipf", rep, skew))
                truth = Truth.of(stream)
                for p in pts:
                    for alg in cfg.algorithms:
                        s = derive_seed(seed, "holland-synthetic", p["sweep"], p["x"], rep, alg)
                        row = run_one(alg, stream, truth, k=p["k"], factor=p["factor"], epsilon=p["epsilon"],
                                      delta=cfg.delta, seed=s, sketch_capacity_ratio=cfg.sketch_capacity_ratio)
                        writer({"experiment": "holland-synthetic", "dataset": f"zipf{skew}", "sweep": p["sweep"],
                                "x": p["x"], "algorithm": alg, "repeat": rep, "n": cfg.n, "k": p["k"],
                                "factor": p["factor"], "epsilon": p["epsilon"], "delta": cfg.delta,
                                "skew": skew, "seed": s, **row})
                        bar.update(f"{p['sweep']}={p['x']} {alg}")
                del stream, truth
    finally:
        bar.close()


def load_real(name: str, data=None, limit=None):
    """A real stream by name: 'retail' (bundled, int64) or 'gcide' (numpy str array). ``data`` is a
    folder or a file path for gcide. Returns None when gcide is absent."""
    if name == "retail":
        s = np.asarray(datasets.retail())
    elif name == "gcide":
        path = None
        if data is not None:
            p = Path(data)
            path = p / "gcide_words.txt.gz" if p.is_dir() else p
        try:
            words = datasets.gcide_words(path)
        except FileNotFoundError:
            return None
        if limit is not None:
            words = words[:limit]
        s = np.array(words)
        del words
    else:
        raise ParameterError(f"unknown data set {name!r}")
    if limit is not None:
        s = s[:limit]
    return s


def real(cfg: HollandConfig, *, seed: int, writer, data=None, progress: bool = True) -> list[str]:
    """Sweeps over k, epsilon and the oversampling factor on retail and (if found) gcide. The stream
    is fixed (file order); repeats vary the noise and hash seeds. Returns the data sets used."""
    points = _points(cfg, ("k", "epsilon", "factor"))
    names = ["retail", "gcide"]
    streams = {}
    for name in names:
        s = load_real(name, data, cfg.real_limit.get(name))
        if s is None:
            log("holland-real: gcide_words.txt.gz not found (pass --data DIR or set DPSKETCH_DATA); skipping it")
            continue
        streams[name] = s
    bar = Progress(cfg.repeats * len(points) * len(cfg.algorithms) * len(streams), "holland-real", progress)
    try:
        for name, stream in streams.items():
            truth = Truth.of(stream)
            for rep in range(cfg.repeats):
                for p in points:
                    for alg in cfg.algorithms:
                        s = derive_seed(seed, "holland-real", name, p["sweep"], p["x"], rep, alg)
                        row = run_one(alg, stream, truth, k=p["k"], factor=p["factor"], epsilon=p["epsilon"],
                                      delta=cfg.delta, seed=s, sketch_capacity_ratio=cfg.sketch_capacity_ratio)
                        writer({"experiment": "holland-real", "dataset": name, "sweep": p["sweep"], "x": p["x"],
                                "algorithm": alg, "repeat": rep, "n": len(stream), "k": p["k"],
                                "factor": p["factor"], "epsilon": p["epsilon"], "delta": cfg.delta,
                                "skew": math.nan, "seed": s, **row})
                        bar.update(f"{name} {p['sweep']}={p['x']} {alg}")
    finally:
        bar.close()
    return list(streams)


def with_repeats(cfg: HollandConfig, repeats) -> HollandConfig:
    return cfg if repeats is None else replace(cfg, repeats=int(repeats))
