"""Zhao et al. §5, Figure 2: average rank error of m evenly spaced quantiles for the private dyadic
CountSketch (DP DCS) at ρ ∈ {0.1, 1, 10} against the non-private DCS, γ = 1 %, N = 10^5, 5 runs.

Data: (a) Zipf a = 1.0 on [1, 2^16) (universe_bits = 16); (b) in place of the paper's CAIDA source
IPs (2^32 universe, not redistributable) the GCIDE word tokens hashed to 32 bits in stream order
(``realdata``; universe_bits = 32; repeat r uses tokens [r·N, (r+1)·N)), skipped when absent.

Both noise allocations of docs/algorithms.md §6 run ("joint": one Gaussian over the whole
hierarchy; "zhao": ρ split evenly over the L levels, the paper's), with Zhao's neighbour model
(``neighbours="replace"``: one item changed, so sensitivities are those of docs/privacy.md for
replacement). One sketch per (run, variant) answers every m. Within a run all variants share the
seed, hence the hash functions (common random numbers, as in ``zhao-frequency``).

Metrics, for the m quantile levels q_i = i/(m+1), i = 1..m:
- ``rank_error`` (the paper's): x_i is the true q_i-quantile item (the item at sorted position
  ⌊q_i·N⌋); error |rank_est(x_i) − rank(x_i)| with rank(x) = #items < x; averaged over i.
- ``quantile_error``: the rank distance of the returned quantile ``quantile(q_i)`` from the target
  q_i·N: 0 when q_i·N lies in [#items < x̂, #items ≤ x̂], else the distance to that interval
  (ties of repeated items count as exact); averaged over i.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from dpsketch import datasets
from . import realdata
from ._common import Progress, derive_seed, log
from dpsketch.errors import ParameterError

METRICS = ("update_us", "memory_bytes", "rank_error", "quantile_error", "query_us")
COLUMNS = ["experiment", "dataset", "sweep", "x", "algorithm", "allocation", "rho", "repeat", "n", "universe_bits",
           "gamma", "width", "depth", "seed", "update_us", "memory_bytes", "rank_error", "quantile_error",
           "query_us", "sigma2"]
REAL_DATASET = realdata.REAL_DATASET


@dataclass(frozen=True)
class QuantileConfig:
    n: int = 100_000
    zipf_bits: int = 16
    real_bits: int = 32
    skew: float = 1.0
    rhos: tuple = (0.1, 1.0, 10.0)
    allocations: tuple = ("joint", "zhao")
    gamma: float = 0.01
    ms: tuple = (1, 2, 5, 10, 20, 50, 100)
    repeats: int = 5
    real: bool = True
    neighbours: str = "replace"


CONFIGS = {
    "full": QuantileConfig(),
    "quick": QuantileConfig(repeats=2),
    "tiny": QuantileConfig(n=5_000, zipf_bits=10, rhos=(1.0,), ms=(1, 5), repeats=1, real=False),
}


def levels(m: int) -> np.ndarray:
    """The m evenly spaced quantile levels i/(m+1), i = 1..m (m = 1: the median)."""
    return np.arange(1, m + 1, dtype=np.float64) / (m + 1)


def true_quantile_items(sorted_stream: np.ndarray, qs: np.ndarray) -> np.ndarray:
    pos = np.minimum((qs * len(sorted_stream)).astype(np.int64), len(sorted_stream) - 1)
    return sorted_stream[pos]


def rank_lt(sorted_stream: np.ndarray, xs) -> np.ndarray:
    return np.searchsorted(sorted_stream, np.asarray(xs, dtype=sorted_stream.dtype), side="left").astype(np.int64)


def rank_le(sorted_stream: np.ndarray, xs) -> np.ndarray:
    return np.searchsorted(sorted_stream, np.asarray(xs, dtype=sorted_stream.dtype), side="right").astype(np.int64)


def quantile_rank_distance(sorted_stream: np.ndarray, returned, targets: np.ndarray) -> np.ndarray:
    """Distance of each target rank from [#items < x, #items ≤ x] of the returned value x."""
    lo, hi = rank_lt(sorted_stream, returned), rank_le(sorted_stream, returned)
    return np.maximum(0.0, np.maximum(lo - targets, targets - hi))


def _variants(cfg: QuantileConfig):
    yield "DCS", "", math.nan
    for rho in cfg.rhos:
        for alloc in cfg.allocations:
            yield "PrivateDCS", alloc, rho


def _make(alg, alloc, rho, bits, gamma, neighbours, seed):
    import dpsketch

    if alg == "DCS":
        return dpsketch.DyadicCountSketch(bits, gamma=gamma, seed=seed)
    return dpsketch.PrivateDyadicCountSketch(bits, gamma=gamma, rho=rho, noise_allocation=alloc,
                                            neighbours=neighbours, seed=seed)


def _streams(cfg: QuantileConfig, seed: int, data):
    out = []
    for rep in range(cfg.repeats):
        s = datasets.zipf(cfg.n, cfg.skew, universe=(1 << cfg.zipf_bits) - 1, seed=derive_seed(seed, "zipf-q", rep), offset=1)
        out.append((f"zipf{cfg.skew}", cfg.zipf_bits, rep, s))
    if cfg.real:
        for rep, window in enumerate(realdata.gcide_windows(cfg.n, cfg.repeats, data, "zhao-quantiles")):
            out.append((REAL_DATASET, cfg.real_bits, rep, window))
    return out


def _sigma2(sk) -> float:
    """The largest per-cell noise variance of the sketch's levels (NaN when not private)."""
    privacy = getattr(sk, "privacy", None)
    if privacy is None:
        return math.nan
    levels = privacy().get("levels", [])
    vals = [lv["sigma2"] for lv in levels if "sigma2" in lv]
    return float(max(vals)) if vals else math.nan


def quantiles(cfg: QuantileConfig, *, seed: int, writer, progress: bool = True, data=None) -> list[str]:
    """Runs every variant on every stream; writes one row per (run, variant, m). Returns the data
    sets used."""
    try:
        import dpsketch

        dpsketch.DyadicCountSketch, dpsketch.PrivateDyadicCountSketch  # noqa: B018
    except AttributeError:
        raise ParameterError("zhao-quantiles needs dpsketch.DyadicCountSketch and PrivateDyadicCountSketch "
                         "(not in this build)") from None
    variants = list(_variants(cfg))
    streams = _streams(cfg, seed, data)
    bar = Progress(len(streams) * len(variants), "zhao-quantiles", progress)
    try:
        for dataset, bits, rep, stream in streams:
            srt = np.sort(stream)
            for alg, alloc, rho in variants:
                # One seed per (data set, repeat): every variant shares the hash functions (and the
                # noise generator's stream), so the curves differ by the noise level alone.
                s = derive_seed(seed, "zhao-quantiles", dataset, rep)
                sk = _make(alg, alloc, rho, bits, cfg.gamma, cfg.neighbours, s)
                t0 = time.perf_counter()
                sk.update_many(stream)
                update_us = (time.perf_counter() - t0) / len(stream) * 1e6
                for m in cfg.ms:
                    qs = levels(m)
                    items = true_quantile_items(srt, qs)
                    t0 = time.perf_counter()
                    est = np.array([sk.rank(int(x)) for x in items], dtype=np.float64)
                    got = np.asarray(sk.quantiles(qs)).astype(np.int64)
                    query_us = (time.perf_counter() - t0) * 1e6
                    rank_err = float(np.mean(np.abs(est - rank_lt(srt, items))))
                    q_err = float(np.mean(quantile_rank_distance(srt, got, qs * len(srt))))
                    writer({"experiment": "zhao-quantiles", "dataset": dataset, "sweep": "m", "x": m,
                            "algorithm": alg, "allocation": alloc, "rho": rho, "repeat": rep, "n": len(stream),
                            "universe_bits": bits, "gamma": cfg.gamma, "width": sk.width, "depth": sk.depth,
                            "seed": s, "update_us": update_us, "memory_bytes": sk.memory_bytes(),
                            "rank_error": rank_err, "quantile_error": q_err, "query_us": query_us,
                            "sigma2": _sigma2(sk)})
                bar.update(f"{dataset} {alg} {alloc} rho={rho}")
    finally:
        bar.close()
    return sorted({d for d, _, _, _ in streams}, key=lambda d: not d.startswith("zipf"))


def with_repeats(cfg: QuantileConfig, repeats) -> QuantileConfig:
    return cfg if repeats is None else replace(cfg, repeats=int(repeats))
