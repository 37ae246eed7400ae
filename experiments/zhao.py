"""Zhao et al. §5, Figure 1: private Count-Min and private CountSketch (discrete
Gaussian noise, rho-zCDP, beta = 0.01) against their non-private versions, ARE over all distinct
items and F1 of the top-10 against the memory of the sketch.

Stream: n = 10^5 items, Zipf with a = 1.0 on [1, 2^16). Sketch shape: depth d = ceil(ln(1/beta))
= 5 rows (the usual Count-Min depth for failure probability beta), and the width chosen so that
d * w 8-byte counters fill each memory budget; budgets double from 9.2 KB to 147.2 KB (the
paper's axis runs from 9.2 KB to 147.3 KB). The x value of every row is the measured
``memory_bytes()``. Within a repeat and space budget all variants share the stream and the hash
functions, so private and non-private curves differ by the privacy noise alone. The estimated top-10 is taken over the whole universe [1, 2^16), not only over
the items that occur.

Panels (b)/(d), the paper's CAIDA source IPs (2^32 universe, not redistributable), run on a real
stream in its place: the GCIDE word tokens hashed to 32 bits in stream order (``realdata``); repeat
r uses tokens [r·n, (r+1)·n), so the 5 runs see 5 disjoint windows of the stream. There the
estimated top-10 is taken over the items that occur in the window (the 2^32 universe cannot be
enumerated). The real panels are skipped, with a message, when the GCIDE file is absent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from dpsketch import datasets
from . import realdata
from ._common import Progress, derive_seed, log, timed_update
from .metrics import Truth, top_k_f1, zhao_are
from dpsketch.errors import ParameterError

METRICS = ("update_us", "memory_bytes", "are", "f1")
COLUMNS = [
    "experiment", "dataset", "sweep", "x", "algorithm", "rho", "repeat", "n", "width", "depth",
    "target_bytes", "seed", "update_us", "memory_bytes", "are", "f1", "n_distinct",
]


@dataclass(frozen=True)
class ZhaoConfig:
    n: int = 100_000
    lo: int = 1
    hi: int = 1 << 16  # universe [lo, hi)
    skew: float = 1.0
    rhos: tuple = (0.1, 1.0, 10.0)
    beta: float = 0.01
    target_kb: tuple = (9.2, 18.4, 36.8, 73.6, 147.2)
    top: int = 10
    repeats: int = 5
    real: bool = True  # also run on the GCIDE stream hashed to 32 bits (panels (b), (d))

    @property
    def depth(self) -> int:
        return int(math.ceil(math.log(1 / self.beta)))


CONFIGS = {
    "full": ZhaoConfig(),
    "quick": ZhaoConfig(),  # already small: the paper's own size
    "tiny": ZhaoConfig(n=10_000, rhos=(1.0,), target_kb=(9.2, 36.8), repeats=2, real=False),
}


def _variants(cfg: ZhaoConfig):
    yield "CountMin", math.nan
    yield "CountSketch", math.nan
    for rho in cfg.rhos:
        yield "PrivateCountMin", rho
        yield "PrivateCountSketch", rho


def _make(alg: str, rho: float, width: int, depth: int, beta: float, seed: int):
    import dpsketch

    if alg == "CountMin":
        return dpsketch.CountMin(width, depth, seed=seed)  # the private sketch's hash functions: one seed rule
    if alg == "CountSketch":
        return dpsketch.CountSketch(width, depth, seed=seed)
    if alg == "PrivateCountMin":
        return dpsketch.PrivateCountMin(width, depth, rho=rho, beta=beta, seed=seed)
    if alg == "PrivateCountSketch":
        return dpsketch.PrivateCountSketch(width, depth, rho=rho, beta=beta, seed=seed)
    raise ParameterError(f"unknown sketch {alg!r}")


REAL_DATASET = realdata.REAL_DATASET


def _streams(cfg: ZhaoConfig, seed: int, data):
    """(dataset, repeat, stream, candidate universe or None) for every repeat of every data set."""
    streams = []
    for rep in range(cfg.repeats):
        s = datasets.zipf(cfg.n, cfg.skew, universe=cfg.hi - cfg.lo, seed=derive_seed(seed, "zipf", rep), offset=cfg.lo)
        streams.append((f"zipf{cfg.skew}", rep, s))
    if cfg.real:
        for rep, window in enumerate(realdata.gcide_windows(cfg.n, cfg.repeats, data, "zhao")):
            streams.append((REAL_DATASET, rep, window))
    return streams


def frequency(cfg: ZhaoConfig, *, seed: int, writer, progress: bool = True, data=None) -> list[str]:
    """Fig. 1 panels: every sketch variant at every space budget on every stream. Returns the data
    sets used."""
    variants = list(_variants(cfg))
    streams = _streams(cfg, seed, data)
    bar = Progress(len(streams) * len(cfg.target_kb) * len(variants), "zhao-frequency", progress)
    zipf_universe = np.arange(cfg.lo, cfg.hi, dtype=np.int64)
    depth = cfg.depth
    try:
        for dataset, rep, stream in streams:
            truth = Truth.of(stream)
            true_top = truth.top(cfg.top)
            # Zipf: the top-10 is estimated over the whole universe; real stream: over the items that
            # occur (a 2^32 universe cannot be enumerated).
            universe = truth.keys if dataset == REAL_DATASET else zipf_universe
            for kb in cfg.target_kb:
                width = max(1, int(round(kb * 1000 / (8 * depth))))
                for alg, rho in variants:
                    # One seed per (data set, space, repeat): every variant of a repeat uses the same
                    # hash functions (common random numbers), so the curves differ by the noise alone.
                    s = derive_seed(seed, "zhao-frequency", kb, rep) if dataset != REAL_DATASET else \
                        derive_seed(seed, "zhao-frequency", dataset, kb, rep)
                    sk = _make(alg, rho, width, depth, cfg.beta, s)
                    update_us = timed_update(sk, stream)
                    est_all = np.asarray(sk.estimate_many(universe), dtype=np.float64)
                    est = est_all[np.searchsorted(universe, truth.keys)]
                    order = np.lexsort((universe, -est_all))
                    writer({
                        "experiment": "zhao-frequency", "dataset": dataset, "sweep": "memory",
                        "x": kb, "algorithm": alg, "rho": rho, "repeat": rep, "n": cfg.n, "width": width,
                        "depth": depth, "target_bytes": int(round(kb * 1000)), "seed": s,
                        "update_us": update_us, "memory_bytes": sk.memory_bytes(),
                        "are": zhao_are(est, truth), "f1": top_k_f1(universe[order[: cfg.top]], true_top),
                        "n_distinct": len(truth.keys),
                    })
                    bar.update(f"{dataset} {kb}KB {alg} rho={rho}")
    finally:
        bar.close()
    return sorted({d for d, _, _ in streams}, key=lambda d: d != f"zipf{cfg.skew}")


def with_repeats(cfg: ZhaoConfig, repeats) -> ZhaoConfig:
    return cfg if repeats is None else replace(cfg, repeats=int(repeats))
