"""``dpss-precision``: DPSS as published against its two options at equal memory (docs/privacy.md
§DPSS): the n/k cut (``cut='n/k'``) and the two-pass release (``passes=2``), each with and without
the other. Precision, recall and ARE of the released set against {x : f(x) >= n/k}, Holland's k
grid, k̃ = 2k, ε in {0.1, 1}, δ = 10^-3, the library's default private length.

Streams: ``gcide-1e5`` (disjoint 10^5-token windows of the GCIDE word stream hashed to 32 bits,
``window_draws`` noise draws per window), ``gcide-2^20`` (disjoint 2^20-token windows, as many draws
each), ``retail`` (the whole bundled stream; repeats vary the noise) and ``code`` (:func:`code_tokens`: identifier tokens of the
running Python's standard library sources; repeats vary the noise). One SpaceSaving per (stream,
k) is shared by all variants: the one-pass variants release it, the two-pass ones release the exact
counts of its tracked items (the second pass), so every variant uses the same memory.

Two variants are not library options: ``DPSS-2pass+cut+zb`` keeps, of the two-pass release with
the same noise as ``DPSS-2pass+cut``, the items whose noisy value is >= n̂/k + z·b (b = 1/ε the
counts' DLap scale, z in ``MARGINS``), to measure what a cut above n̂/k trades.
"""

from __future__ import annotations

import re
import sysconfig
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ._common import Progress, derive_seed, log
from .metrics import Truth, heavy_hitter_scores
from .realdata import gcide_windows

VARIANTS = (("DPSS", 1, None), ("DPSS+cut", 1, "n/k"), ("DPSS-2pass", 2, None), ("DPSS-2pass+cut", 2, "n/k"))
MARGINS = (0.25, 0.5)  # cuts at n̂/k + z·b measured against the n/k cut (post-processing, same noise)
METRICS = ("recall", "precision", "are", "n_reported", "n_heavy")
COLUMNS = ["experiment", "dataset", "algorithm", "passes", "cut", "repeat", "n", "k", "capacity", "epsilon",
           "delta", "seed", "recall", "precision", "are", "n_heavy", "n_reported", "true_positives", "threshold",
           "release_s"]
GROUP = ["experiment", "dataset", "algorithm", "k", "epsilon"]
_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class PrecisionConfig:
    ks: tuple = (32, 64, 128, 256, 512, 1024)
    epsilons: tuple = (0.1, 1.0)
    delta: float = 1e-3
    factor: int = 2
    windows_1e5: int = 20
    windows_2_20: int = 4
    repeats: int = 5  # noise repeats on the whole-stream data sets (retail, code)
    # Noise draws per GCIDE window: with one draw, the noise alone moves a cell's mean precision by a
    # few thousandths, as much as the effects compared.
    window_draws: int = 5
    code_limit: int = 1 << 22
    datasets: tuple = ("gcide-1e5", "gcide-2^20", "retail", "code")


CONFIGS = {
    "full": PrecisionConfig(),
    "quick": PrecisionConfig(windows_1e5=8, windows_2_20=2, repeats=2, window_draws=2, code_limit=1 << 21),
    "tiny": PrecisionConfig(ks=(32, 64), windows_1e5=1, windows_2_20=0, repeats=1, window_draws=1, code_limit=1 << 15,
                            datasets=("gcide-1e5", "retail", "code")),
}


def with_repeats(cfg: PrecisionConfig, repeats) -> PrecisionConfig:
    return cfg if repeats is None else replace(cfg, repeats=int(repeats), windows_1e5=int(repeats),
                                               windows_2_20=min(int(repeats), cfg.windows_2_20),
                                               window_draws=min(int(repeats), cfg.window_draws))


def code_tokens(limit: int, root: Path | None = None) -> np.ndarray:
    """A source-code token stream: every identifier ``[A-Za-z_][A-Za-z0-9_]*`` of the ``.py`` files
    under ``root`` (default: the running Python's standard library, ``sysconfig`` path 'stdlib'),
    files in sorted path order, tokens in file order, the first ``limit`` tokens, hashed to 32 bits
    as the GCIDE stream is (realdata.hash32). Licence headers, imports and ``self`` make it bursty."""
    from .realdata import hash32

    base = Path(root or sysconfig.get_paths()["stdlib"])
    out = np.empty(int(limit), dtype=np.int64)
    cache: dict[bytes, int] = {}
    i = 0
    for path in sorted(base.rglob("*.py")):
        if "site-packages" in path.parts:
            continue
        try:
            text = path.read_bytes()
        except OSError:
            continue
        for m in _IDENT.finditer(text):
            tok = m.group()
            v = cache.get(tok)
            if v is None:
                v = cache[tok] = hash32(tok.decode("ascii"))
            out[i] = v
            i += 1
            if i == limit:
                return out
    return out[:i]


def margin_name(z: float) -> str:
    return f"DPSS-2pass+cut+{z:g}b"


def margin_cut(rel, k: int, z: float) -> tuple[list, float]:
    """The items of a two-pass Release made with ``cut=None`` whose noisy value is >= n̂/k + z·b, b = 1/ε the
    DLap scale of the counts (ε as used), and the threshold max(τ, n̂/k + z·b): a function of the
    release and of n̂ only, like the n/k cut (docs/privacy.md §DPSS, "The n/k cut")."""
    cut = float(rel.metadata["n_used"]) / k + z / float(rel.metadata["epsilon_used"])
    return [(key, v) for key, v in rel.items if v >= cut], max(cut, float(rel.threshold))


def _streams(cfg: PrecisionConfig, data):
    """(dataset, window, stream, noise draws) in order."""
    from dpsketch import datasets

    if "gcide-1e5" in cfg.datasets and cfg.windows_1e5:
        for r, w in enumerate(gcide_windows(100_000, cfg.windows_1e5, data, "dpss-precision")):
            yield "gcide-1e5", r, w, cfg.window_draws
    if "gcide-2^20" in cfg.datasets and cfg.windows_2_20:
        for r, w in enumerate(gcide_windows(1 << 20, cfg.windows_2_20, data, "dpss-precision")):
            yield "gcide-2^20", r, w, cfg.window_draws
    if "retail" in cfg.datasets:
        yield "retail", 0, np.asarray(datasets.retail(), dtype=np.int64), cfg.repeats
    if "code" in cfg.datasets:
        yield "code", 0, code_tokens(cfg.code_limit), cfg.repeats


def precision(cfg: PrecisionConfig, *, seed: int, writer, data=None, progress: bool = True) -> list[str]:
    """Run the sweep; ``writer(row)`` receives each finished run. Returns the data sets used."""
    import dpsketch
    from dpsketch.mechanisms.dpss import release_exact_counts

    used: list[str] = []
    n_streams = sum(w for d, w in (("gcide-1e5", cfg.windows_1e5), ("gcide-2^20", cfg.windows_2_20),
                                   ("retail", 1), ("code", 1)) if d in cfg.datasets)
    bar = Progress(n_streams * len(cfg.ks), "dpss-precision", progress)
    try:
        for name, window, stream, noise_repeats in _streams(cfg, data):
            if name not in used:
                used.append(name)
            truth = Truth.of(stream)
            n = len(stream)
            for k in cfg.ks:
                ss = dpsketch.SpaceSaving(cfg.factor * k)
                ss.update_many(stream)
                tracked = [key for key, _ in ss.items()]
                exact = truth.freq(np.asarray(tracked, dtype=np.int64)).tolist()  # the second pass
                for eps in cfg.epsilons:
                    for rep in range(noise_repeats):
                        repeat = window * noise_repeats + rep
                        for alg, passes, cut in VARIANTS:
                            s = derive_seed(seed, "dpss-precision", name, window, rep, k, eps, alg)
                            t0 = time.perf_counter()
                            if passes == 1:
                                rel = ss.release(epsilon=eps, delta=cfg.delta, k=k, cut=cut, seed=s, allow_repeat=True)
                            else:
                                rel = release_exact_counts(ss, exact, epsilon=eps, delta=cfg.delta, k=k, cut=cut,
                                                           seed=s, allow_repeat=True)
                            release_s = time.perf_counter() - t0
                            writer({"experiment": "dpss-precision", "dataset": name, "algorithm": alg,
                                    "passes": passes, "cut": cut or "none", "repeat": repeat, "n": n, "k": k,
                                    "capacity": cfg.factor * k, "epsilon": eps, "delta": cfg.delta, "seed": s,
                                    **heavy_hitter_scores(rel.items, truth, k), "threshold": float(rel.threshold),
                                    "release_s": release_s})
                            if alg != "DPSS-2pass+cut":
                                continue
                            # the same noise draw (same seed) without the cut, then the margin cuts
                            rel = release_exact_counts(ss, exact, epsilon=eps, delta=cfg.delta, k=k, cut=None,
                                                       seed=s, allow_repeat=True)
                            for z in MARGINS:
                                items, threshold = margin_cut(rel, k, z)
                                writer({"experiment": "dpss-precision", "dataset": name, "algorithm": margin_name(z),
                                        "passes": passes, "cut": f"n/k+{z:g}b", "repeat": repeat, "n": n, "k": k,
                                        "capacity": cfg.factor * k, "epsilon": eps, "delta": cfg.delta, "seed": s,
                                        **heavy_hitter_scores(items, truth, k), "threshold": threshold,
                                        "release_s": release_s})
                bar.update(f"{name} #{window} k={k}")
            del stream, truth
    finally:
        bar.close()
    if not used:
        log("dpss-precision: no data set ran")
    return used


def _mean_over_k(summary, dataset, epsilon, algorithm, metric):
    vals = [float(r[f"{metric}_mean"]) for r in summary
            if r["dataset"] == dataset and float(r["epsilon"]) == epsilon and r["algorithm"] == algorithm]
    vals = [v for v in vals if v == v]
    return sum(vals) / len(vals) if vals else float("nan")


def claims(summary: list[dict]) -> list[dict]:
    """The targets of the two options, per (data set, ε), from summary.csv (means over the k grid of
    the per-point means): two passes with the cut reach mean precision >= 0.99 with recall within
    0.01 of DPSS as published; the cut alone never lowers precision."""
    out = []
    for ds in sorted({r["dataset"] for r in summary}):
        for eps in sorted({float(r["epsilon"]) for r in summary if r["dataset"] == ds}):
            p0, r0 = (_mean_over_k(summary, ds, eps, "DPSS", m) for m in ("precision", "recall"))
            p1 = _mean_over_k(summary, ds, eps, "DPSS+cut", "precision")
            p2, r2 = (_mean_over_k(summary, ds, eps, "DPSS-2pass+cut", m) for m in ("precision", "recall"))
            base = {"experiment": "dpss-precision", "paper": "(library target)", "undefined_points": 0,
                    "backing": f"summary.csv, {ds}, ε = {eps:g}, mean over k"}

            def verdict(ok, *vals):
                return "n/a" if any(v != v for v in vals) else ("yes" if ok else "no")

            out.append({**base, "id": f"two-pass-cut-precision/{ds}/eps{eps:g}",
                        "claim": "two passes + n/k cut: mean precision >= 0.99", "test": "mean precision >= 0.99",
                        "measured": f"{p2:.4f} (DPSS {p0:.3f})", "holds": verdict(p2 >= 0.99, p2)})
            out.append({**base, "id": f"two-pass-cut-recall/{ds}/eps{eps:g}",
                        "claim": "two passes + n/k cut: recall within 0.01 of DPSS", "test": "recall >= DPSS recall - 0.01",
                        "measured": f"{r2:.3f} (DPSS {r0:.3f})", "holds": verdict(r2 >= r0 - 0.01, r2, r0)})
            out.append({**base, "id": f"cut-precision/{ds}/eps{eps:g}",
                        "claim": "the n/k cut does not lower precision", "test": "precision(cut) >= precision(DPSS)",
                        "measured": f"{p1:.3f} (DPSS {p0:.3f})", "holds": verdict(p1 >= p0, p1, p0)})
    return out


def table(summary: list[dict]) -> str:
    """Markdown table of mean precision / recall per (dataset, ε, variant), averaged over k."""
    from collections import defaultdict

    acc: dict = defaultdict(lambda: {"precision": [], "recall": [], "are": [], "min_precision": []})
    for r in summary:
        key = (r["dataset"], float(r["epsilon"]), r["algorithm"])
        for m in ("precision", "recall", "are"):
            v = float(r[f"{m}_mean"])
            if v == v:
                acc[key][m].append(v)
        p5 = float(r["precision_p5"])
        if p5 == p5:
            acc[key]["min_precision"].append(p5)
    lines = ["| data set | ε | variant | precision (mean over k) | worst k's p5 precision | recall | ARE |",
             "|---|---|---|---|---|---|---|"]
    names = [v[0] for v in VARIANTS] + [margin_name(z) for z in MARGINS]
    for key in sorted(acc, key=lambda t: (t[0], t[1], names.index(t[2]) if t[2] in names else 99)):
        a = acc[key]
        mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731
        lines.append(f"| {key[0]} | {key[1]:g} | {key[2]} | {mean(a['precision']):.3f} | "
                     f"{min(a['min_precision'], default=float('nan')):.3f} | {mean(a['recall']):.3f} | "
                     f"{mean(a['are']):.4f} |")
    return "\n".join(lines) + "\n"


WIDE_COLUMNS = (("DPSS", "DPSS"), ("DPSS+cut", "DPSS + cut"), ("DPSS-2pass", "two passes"),
                ("DPSS-2pass+cut", "two passes + cut"), (margin_name(0.25), "two passes, cut n̂/k + 0.25b"),
                (margin_name(0.5), "two passes, cut n̂/k + 0.5b"))


def wide_table(summary: list[dict]) -> str:
    """Markdown table, one row per (data set, ε): each variant's precision / recall (means over the
    k grid of the per-point means, as the claims read them)."""
    head = "| data set | ε | " + " | ".join(label for _, label in WIDE_COLUMNS) + " |"
    lines = [head, "|---|---|" + "---|" * len(WIDE_COLUMNS)]
    cells = sorted({(r["dataset"], float(r["epsilon"])) for r in summary})
    for ds, eps in cells:
        vals = []
        for alg, _ in WIDE_COLUMNS:
            p, r = (_mean_over_k(summary, ds, eps, alg, m) for m in ("precision", "recall"))
            vals.append("-" if p != p and r != r else f"{p:.4f} / {r:.3f}")
        lines.append(f"| {ds} | {eps:g} | " + " | ".join(vals) + " |")
    return "\n".join(lines) + "\n"
