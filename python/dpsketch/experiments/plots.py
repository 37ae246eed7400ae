"""Figures from the summary CSVs, one panel per panel of the papers' figures (Holland Figures
10-12, Zhao Figure 1 Zipf panels). Lines are means over repeats; error bars span the 5th to 95th
percentile. matplotlib is imported lazily: ``available()`` says whether plots can be drawn."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

HOLLAND_STYLE = {
    "MisraGries": dict(color="tab:blue", marker="o"),
    "SpaceSaving": dict(color="tab:orange", marker="s"),
    "CountMinSketch": dict(color="tab:green", marker="^"),
    "CountSketch": dict(color="tab:red", marker="v"),
}
YLABEL = {
    "memory_bytes": "Memory (bytes)",
    "update_us": "Update time (µs)",
    "recall": "Recall",
    "precision": "Precision",
    "are": "ARE",
    "f1": "F1 score",
}
XLABEL = {"k": "k", "epsilon": "ε", "skew": "Skew", "factor": "Factor (k̃ / k)", "memory": "Space (KB)"}


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _series(rows, sweep, algorithm, metric, dataset=None, extra=None):
    sel = [r for r in rows if r["sweep"] == sweep and r["algorithm"] == algorithm
           and (dataset is None or r["dataset"] == dataset) and (extra is None or extra(r))]
    sel.sort(key=lambda r: float(r["x"]))
    x = np.array([float(r["x"]) for r in sel])
    m = np.array([float(r[f"{metric}_mean"]) for r in sel])
    lo = np.array([float(r[f"{metric}_p5"]) for r in sel])
    hi = np.array([float(r[f"{metric}_p95"]) for r in sel])
    return x, m, lo, hi


def _panel(ax, rows, sweep, metric, letter, title, algorithms, dataset=None):
    any_line = False
    for alg in algorithms:
        x, m, lo, hi = _series(rows, sweep, alg, metric, dataset)
        ok = ~np.isnan(m)
        if not ok.any():
            if len(x):  # keep the legend entry: the metric is undefined (nothing released)
                ax.plot([], [], label=f"{alg} (undefined: nothing released)", **HOLLAND_STYLE.get(alg, {}))
            continue
        any_line = True
        yerr = np.vstack([np.clip(m - lo, 0, None), np.clip(hi - m, 0, None)])[:, ok]
        ax.errorbar(x[ok], m[ok], yerr=yerr, label=alg, capsize=2, lw=1.2, ms=4, **HOLLAND_STYLE.get(alg, {}))
    ax.set_xlabel(XLABEL[sweep])
    ax.set_ylabel(YLABEL[metric])
    ax.set_title(f"({letter}) {title}", fontsize=9)
    if sweep in ("k", "epsilon", "factor"):
        ax.set_xscale("log", base=10 if sweep == "epsilon" else 2)
    if metric in ("memory_bytes",):
        ax.set_yscale("log")
    if metric in ("recall", "precision"):
        ax.set_ylim(-0.05, 1.05)
    if metric in ("update_us", "are") and any_line:
        vals = [v for alg in algorithms for v in _series(rows, sweep, alg, metric, dataset)[1] if v > 0]
        if vals and max(vals) / min(vals) > 50:
            ax.set_yscale("log")
    if not any_line:
        ax.text(0.5, 0.5, "no defined values", ha="center", va="center", transform=ax.transAxes)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def _figure(panels, rows, path: Path, suptitle: str, algorithms, ncols=3, dataset=None):
    plt = _plt()
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.3 * nrows), squeeze=False)
    for ax, (letter, sweep, metric, title) in zip(axes.flat, panels):
        _panel(ax, rows, sweep, metric, letter, title, algorithms, dataset)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def holland_synthetic(rows, out: Path, algorithms, n: int) -> list[Path]:
    sub = f"Zipf over [0, 100000], n = {n:,}; defaults k = 128, ε = 0.1, skew 1.1, δ = 10⁻³, k̃ = 2k"
    fig10 = [
        ("a", "k", "memory_bytes", "Memory vs k"),
        ("b", "k", "update_us", "Update time vs k"),
        ("c", "k", "recall", "Recall vs k"),
        ("d", "k", "precision", "Precision vs k"),
        ("e", "k", "are", "ARE vs k"),
        ("f", "skew", "update_us", "Update time vs skew"),
    ]
    fig11 = [
        ("a", "skew", "precision", "Precision vs skew"),
        ("b", "skew", "are", "ARE vs skew"),
        ("c", "skew", "recall", "Recall vs skew"),
        ("d", "epsilon", "precision", "Precision vs ε"),
        ("e", "epsilon", "are", "ARE vs ε"),
        ("f", "epsilon", "recall", "Recall vs ε"),
    ]
    return [
        _figure(fig10, rows, out / "fig10_synthetic.png", "Holland Figure 10 (synthetic). " + sub, algorithms),
        _figure(fig11, rows, out / "fig11_synthetic.png", "Holland Figure 11 (synthetic). " + sub, algorithms),
    ]


def holland_real(rows, out: Path, algorithms, datasets_used, n_by_dataset) -> list[Path]:
    fig12 = [
        ("a", "k", "precision", "Precision vs k"),
        ("b", "k", "are", "ARE vs k"),
        ("c", "k", "recall", "Recall vs k"),
        ("d", "epsilon", "precision", "Precision vs ε"),
        ("e", "epsilon", "are", "ARE vs ε"),
        ("f", "epsilon", "recall", "Recall vs ε"),
        ("g", "factor", "update_us", "Update time vs factor"),
        ("h", "factor", "are", "ARE vs factor"),
        ("i", "factor", "recall", "Recall vs factor"),
    ]
    paths = []
    for ds in datasets_used:
        title = (f"Holland Figure 12 on {ds} (n = {n_by_dataset[ds]:,}); defaults k = 128, ε = 0.1, "
                 f"k̃ = 2k, δ = 10⁻³")
        paths.append(_figure(fig12, rows, out / f"fig12_{ds}.png", title, algorithms, dataset=ds))
    return paths


ZHAO_STYLE = {"CountMin": ("tab:green", "-"), "CountSketch": ("tab:red", "-"),
              "PrivateCountMin": ("tab:green", "--"), "PrivateCountSketch": ("tab:red", "--")}
ZHAO_MARK = {0.1: "v", 1.0: "o", 10.0: "^"}


def _zhao_label(alg, rho):
    name = {"CountMin": "Count-Min", "CountSketch": "CountSketch", "PrivateCountMin": "Private Count-Min",
            "PrivateCountSketch": "Private CountSketch"}[alg]
    return name if math.isnan(rho) else f"{name} (ρ={rho:g})"


def zhao(rows, out: Path, n: int) -> list[Path]:
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    keys = sorted({(r["algorithm"], r["rho"]) for r in rows}, key=lambda t: (t[0], -1 if math.isnan(t[1]) else t[1]))
    for ax, metric, letter, title in ((axes[0], "are", "a", "Zipf: ARE vs space"), (axes[1], "f1", "c", "Zipf: F1 (top-10) vs space")):
        for alg, rho in keys:
            sel = [r for r in rows if r["algorithm"] == alg and (r["rho"] == rho or (math.isnan(rho) and math.isnan(r["rho"])))]
            sel.sort(key=lambda r: r["memory_bytes_mean"])
            x = np.array([r["memory_bytes_mean"] / 1000 for r in sel])
            m = np.array([r[f"{metric}_mean"] for r in sel])
            lo = np.array([r[f"{metric}_p5"] for r in sel])
            hi = np.array([r[f"{metric}_p95"] for r in sel])
            color, ls = ZHAO_STYLE[alg]
            ax.errorbar(x, m, yerr=np.vstack([np.clip(m - lo, 0, None), np.clip(hi - m, 0, None)]), color=color,
                        ls=ls, marker=ZHAO_MARK.get(rho, "s"), ms=4, capsize=2, lw=1.2, label=_zhao_label(alg, rho))
        ax.set_xscale("log", base=2)
        ticks = sorted({round(r["memory_bytes_mean"] / 1000, 1) for r in rows if r["algorithm"] == "CountMin"})
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{t:g}" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("Space (KB)")
        ax.set_ylabel(YLABEL[metric])
        if metric == "are":
            ax.set_yscale("log")
        else:
            ax.set_ylim(-0.05, 1.05)
        ax.set_title(f"({letter}) {title}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5)
    fig.suptitle(f"Zhao et al. Figure 1 (Zipf a = 1.0 on [1, 2¹⁶), n = {n:,}, β = 0.01, depth 5)", fontsize=10)
    fig.tight_layout()
    path = out / "fig1_zhao_zipf.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]
