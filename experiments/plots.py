"""Figures from the summary CSVs, one panel per panel of the papers' figures (Holland Figures
10-12, Zhao Figure 1). Lines are means over repeats; shaded bands span the 5th to 95th percentile
over repeats. Every figure states its repeats and structure sizes (counter capacity, sketch depth
and width, read from summary.csv) and the recall panels the number of true heavy hitters per point. matplotlib is imported lazily: ``available()`` says whether plots can be drawn."""

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


class FigureLayoutWarning(UserWarning):
    """A figure's legend overlaps one of its panels (a layout defect, reported when saving)."""


_TITLE_IN = 0.3  # height of the suptitle strip, inches
_LEGEND_ROW_IN = 0.2  # height of one legend row at fontsize 7, inches


def _legend_entries(axes) -> dict:
    """label -> handle over all panels, each label once, in order of first appearance."""
    seen: dict = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    return seen


def _layout(fig, axes, *, ncol: int = 4, fontsize: float = 7, bottom: float = 0.0) -> None:
    """One legend for the whole figure, in a strip of its own under the title, then the panels
    below it: a legend inside a panel covers curves wherever the data happen to run."""
    entries = _legend_entries(axes)
    height = fig.get_figheight()
    rows = math.ceil(len(entries) / ncol) if entries else 0
    if entries:
        fig.legend(list(entries.values()), list(entries), loc="upper center", ncol=min(ncol, len(entries)),
                   fontsize=fontsize, frameon=False, bbox_to_anchor=(0.5, 1 - _TITLE_IN / height))
    top = 1 - (_TITLE_IN + rows * _LEGEND_ROW_IN * fontsize / 7) / height
    fig.tight_layout(rect=(0, bottom, 1, top))


def _overlaps(fig) -> list[str]:
    """Titles of the panels whose area (labels and titles included) a figure legend overlaps."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    for legend in fig.legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            if ax.get_visible() and box.overlaps(ax.get_tightbbox(renderer)):
                out.append(ax.get_title() or "(untitled panel)")
    return out


def _save(fig, path: Path) -> Path:
    import warnings

    bad = _overlaps(fig)
    if bad:
        warnings.warn(f"{path.name}: the legend overlaps {', '.join(bad)}", FigureLayoutWarning, stacklevel=2)
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return path


def _series(rows, sweep, algorithm, metric, dataset=None, extra=None):
    sel = [r for r in rows if r["sweep"] == sweep and r["algorithm"] == algorithm
           and (dataset is None or r["dataset"] == dataset) and (extra is None or extra(r))]
    sel.sort(key=lambda r: float(r["x"]))
    x = np.array([float(r["x"]) for r in sel])
    m = np.array([float(r[f"{metric}_mean"]) for r in sel])
    lo = np.array([float(r[f"{metric}_p5"]) for r in sel])
    hi = np.array([float(r[f"{metric}_p95"]) for r in sel])
    return x, m, lo, hi


def _band(ax, x, m, lo, hi, label, color, marker=None, ls="-"):
    """Mean line with a 5th-95th percentile band."""
    ax.fill_between(x, lo, hi, color=color, alpha=0.15, lw=0)
    ax.plot(x, m, color=color, marker=marker, ls=ls, lw=1.2, ms=4, label=label)


def _heavy_counts(ax, rows, sweep, dataset):
    """Labels a top x axis with the number of true heavy hitters (f >= n/k) of each point."""
    sel = {}
    for r in rows:
        if r["sweep"] == sweep and (dataset is None or r["dataset"] == dataset) and "true_heavy_hitters" in r:
            v = r["true_heavy_hitters"]
            sel[float(r["x"])] = v if isinstance(v, str) else ("" if math.isnan(v) else f"{v:g}")
    if not sel:
        return False
    top = ax.secondary_xaxis("top")
    xs = sorted(sel)
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

    top.xaxis.set_major_locator(FixedLocator(xs))
    top.xaxis.set_major_formatter(FixedFormatter([sel[x] for x in xs]))
    top.xaxis.set_minor_locator(NullLocator())
    top.tick_params(labelsize=6)
    top.set_xlabel("true heavy hitters", fontsize=6, labelpad=1)
    return True


def _panel(ax, rows, sweep, metric, letter, title, algorithms, dataset=None):
    any_line = False
    undefined = []
    for alg in algorithms:
        x, m, lo, hi = _series(rows, sweep, alg, metric, dataset)
        ok = ~np.isnan(m)
        if not ok.any():
            if len(x):  # the metric is undefined (nothing released): said under the axis
                undefined.append(alg)
            continue
        any_line = True
        st = HOLLAND_STYLE.get(alg, {})
        _band(ax, x[ok], m[ok], lo[ok], hi[ok], alg, st.get("color"), st.get("marker"))
    ax.set_xlabel(XLABEL[sweep] + (f"\nundefined (nothing released): {', '.join(undefined)}" if undefined else ""))
    ax.set_ylabel(YLABEL[metric])
    ax.set_title(f"({letter}) {title}", fontsize=9)
    if sweep in ("k", "epsilon", "factor"):
        ax.set_xscale("log", base=10 if sweep == "epsilon" else 2)
    if metric == "recall" and _heavy_counts(ax, rows, sweep, dataset):
        ax.set_title(f"({letter}) {title}", fontsize=9, pad=18)
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


def _span_of(rows, col, **filters) -> str:
    """The overall span of a summary column ("a" or "lo-hi" strings, or numbers) over rows."""
    vals = []
    for r in rows:
        if any(r.get(k) not in (v if isinstance(v, tuple) else (v,)) for k, v in filters.items()):
            continue
        v = r.get(col)
        if v is None or (isinstance(v, float) and math.isnan(v)) or v == "":
            continue
        vals += [float(p) for p in str(v).split("-")] if isinstance(v, str) else [float(v)]
    if not vals:
        return "?"
    lo, hi = min(vals), max(vals)
    f = lambda v: f"{v:,.0f}" if v == int(v) else f"{v:g}"  # noqa: E731
    return f(lo) if lo == hi else f"{f(lo)}-{f(hi)}"


def holland_footer(rows, repeats, dataset=None) -> str:
    """Repeats and structure sizes of a Holland figure, read from summary.csv."""
    flt = {} if dataset is None else {"dataset": dataset}
    return (f"{repeats} repeats per point; bands: 5th-95th percentile over repeats. "
            f"MG/DPSS: k~ = factor*k counters ({_span_of(rows, 'capacity', algorithm=('MisraGries', 'SpaceSaving'), **flt)}). "
            f"Sketches: candidate capacity 2*factor*k ({_span_of(rows, 'capacity', algorithm=('CountMinSketch', 'CountSketch'), **flt)}), "
            f"depth {_span_of(rows, 'depth', algorithm=('CountMinSketch', 'CountSketch'), **flt)}, "
            f"width Count-Min {_span_of(rows, 'width', algorithm='CountMinSketch', **flt)}, "
            f"CountSketch {_span_of(rows, 'width', algorithm='CountSketch', **flt)}. "
            "Top axis of the recall panels: true heavy hitters (f >= n/k) per point (range over repeats).")


def _figure(panels, rows, path: Path, suptitle: str, algorithms, ncols=3, dataset=None, footer=""):
    plt = _plt()
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.3 * nrows + 0.4), squeeze=False)
    for ax, (letter, sweep, metric, title) in zip(axes.flat, panels):
        _panel(ax, rows, sweep, metric, letter, title, algorithms, dataset)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(suptitle, fontsize=10)
    if footer:
        import textwrap

        fig.text(0.5, 0.005, "\n".join(textwrap.wrap(footer, 190)), ha="center", va="bottom", fontsize=7)
    _layout(fig, [ax for ax in axes.flat if ax.get_visible()], bottom=0.05 if footer else 0)
    return _save(fig, path)


_AXIS = {"k": "k", "skew": "skew", "epsilon": "ε", "factor": "factor"}
_METRIC = {"memory_bytes": "Memory", "update_us": "Update time", "recall": "Recall", "precision": "Precision", "are": "ARE"}


def _panels(spec: str) -> list[tuple]:
    """'sweep metric, ...' -> the (letter, sweep, metric, title) panels of a Holland figure, in order."""
    out = []
    for letter, item in zip("abcdefghi", spec.split(",")):
        sweep, metric = item.split()
        out.append((letter, sweep, metric, f"{_METRIC[metric]} vs {_AXIS[sweep]}"))
    return out


def holland_synthetic(rows, out: Path, algorithms, info: dict) -> list[Path]:
    n = info["n"]
    sub = f"Zipf over [0, {info.get('universe', 100000)}), n = {n:,}; defaults k = 128, ε = 0.1, skew 1.1, δ = 10⁻³, k̃ = 2k"
    foot = holland_footer(rows, info.get("repeats", "?"))
    fig10 = _panels("k memory_bytes, k update_us, k recall, k precision, k are, skew update_us")
    fig11 = _panels("skew precision, skew are, skew recall, epsilon precision, epsilon are, epsilon recall")
    return [
        _figure(fig10, rows, out / "fig10_synthetic.png", "Holland Figure 10 (synthetic). " + sub, algorithms, footer=foot),
        _figure(fig11, rows, out / "fig11_synthetic.png", "Holland Figure 11 (synthetic). " + sub, algorithms, footer=foot),
    ]


def holland_real(rows, out: Path, algorithms, info: dict) -> list[Path]:
    datasets_used, n_by_dataset = info["datasets"], info["n"]
    fig12 = _panels("k precision, k are, k recall, epsilon precision, epsilon are, epsilon recall, "
                    "factor update_us, factor are, factor recall")
    paths = []
    for ds in datasets_used:
        title = (f"Holland Figure 12 on {ds} (n = {n_by_dataset[ds]:,}); defaults k = 128, ε = 0.1, "
                 f"k̃ = 2k, δ = 10⁻³")
        paths.append(_figure(fig12, rows, out / f"fig12_{ds}.png", title, algorithms, dataset=ds,
                             footer=holland_footer(rows, info.get("repeats", "?"), ds)))
    return paths


ZHAO_STYLE = {"CountMin": ("tab:green", "-"), "CountSketch": ("tab:red", "-"),
              "PrivateCountMin": ("tab:green", "--"), "PrivateCountSketch": ("tab:red", "--")}
ZHAO_MARK = {0.1: "v", 1.0: "o", 10.0: "^"}


def _zhao_label(alg, rho):
    name = {"CountMin": "Count-Min", "CountSketch": "CountSketch", "PrivateCountMin": "Private Count-Min",
            "PrivateCountSketch": "Private CountSketch"}[alg]
    return name if math.isnan(rho) else f"{name} (ρ={rho:g})"


def zhao(rows, out: Path, info: dict) -> list[Path]:
    """Zhao Figure 1: (a) ARE and (c) F1 on Zipf; (b) ARE and (d) F1 on the real stream when run."""
    plt = _plt()
    names = sorted({r["dataset"] for r in rows}, key=lambda d: (not str(d).startswith("zipf"), str(d)))
    ncols = len(names)
    fig, axes = plt.subplots(2, ncols, figsize=(5.2 * ncols, 7.4), squeeze=False)
    letters = {0: ("a", "c"), 1: ("b", "d")}
    for col, ds in enumerate(names):
        dsrows = [r for r in rows if r["dataset"] == ds]
        label = "Zipf" if str(ds).startswith("zipf") else "GCIDE tokens hashed to 32 bits (CAIDA stand-in)"
        keys = sorted({(r["algorithm"], r["rho"]) for r in dsrows}, key=lambda t: (t[0], -1 if math.isnan(t[1]) else t[1]))
        for row, (metric, title) in enumerate((("are", "ARE vs space"), ("f1", "F1 (top-10) vs space"))):
            ax = axes[row][col]
            for alg, rho in keys:
                sel = [r for r in dsrows if r["algorithm"] == alg and (r["rho"] == rho or (math.isnan(rho) and math.isnan(r["rho"])))]
                sel.sort(key=lambda r: r["memory_bytes_mean"])
                x = np.array([r["memory_bytes_mean"] / 1000 for r in sel])
                m = np.array([r[f"{metric}_mean"] for r in sel])
                lo = np.array([r[f"{metric}_p5"] for r in sel])
                hi = np.array([r[f"{metric}_p95"] for r in sel])
                color, ls = ZHAO_STYLE[alg]
                _band(ax, x, m, lo, hi, _zhao_label(alg, rho), color, ZHAO_MARK.get(rho, "s"), ls)
            ax.set_xscale("log", base=2)
            ticks = sorted({round(r["memory_bytes_mean"] / 1000, 1) for r in dsrows if r["algorithm"] == "CountMin"})
            ax.set_xticks(ticks)
            ax.set_xticklabels([f"{t:g}" for t in ticks])
            ax.minorticks_off()
            ax.set_xlabel("Space (KB)")
            ax.set_ylabel(YLABEL[metric])
            if metric == "are":
                ax.set_yscale("log")
            else:
                ax.set_ylim(-0.05, 1.05)
            ax.set_title(f"({letters.get(col, ('', ''))[row]}) {label}: {title}", fontsize=9)
            ax.grid(alpha=0.3)
    widths = _span_of(rows, "width")
    distinct = "; ".join(f"{ds}: {_span_of(rows, 'distinct_items', dataset=ds)}" for ds in names)
    fig.suptitle(f"Zhao et al. Figure 1 (n = {info['n']:,} per run, β = {info.get('beta', 0.01)}, depth {info.get('depth', 5)}, "
                 f"width {widths}, {info.get('repeats', '?')} repeats)", fontsize=10)
    fig.text(0.5, 0.005, f"Bands: 5th-95th percentile over repeats. Distinct items per run: {distinct}. "
             "Zipf a = 1.0 on [1, 2^16).", ha="center", va="bottom", fontsize=7)
    _layout(fig, list(axes.flat), bottom=0.03)
    return [_save(fig, out / "fig1_zhao.png")]


QUANT_STYLE = {"joint": "-", "zhao": "--"}
QUANT_COLOR = {0.1: "tab:red", 1.0: "tab:orange", 10.0: "tab:green"}


def zhao_quantiles(rows, out: Path, info: dict) -> list[Path]:
    """Zhao Figure 2: average rank error vs the number m of evenly spaced quantiles, one panel per
    data set; DCS and DP DCS at each ρ for both noise allocations; γ·N and γ·N/10 marked."""
    plt = _plt()
    names = sorted({r["dataset"] for r in rows}, key=lambda d: (not str(d).startswith("zipf"), str(d)))
    fig, axes = plt.subplots(1, len(names), figsize=(5.6 * len(names), 4.2), squeeze=False)
    for col, ds in enumerate(names):
        ax = axes[0][col]
        dsr = [r for r in rows if r["dataset"] == ds]
        keys = sorted({(r["algorithm"], r["allocation"] if isinstance(r["allocation"], str) else "", r["rho"]) for r in dsr},
                      key=lambda t: (t[0], t[1], -1 if math.isnan(t[2]) else t[2]))
        for alg, alloc, rho in keys:
            sel = sorted((r for r in dsr if r["algorithm"] == alg
                          and (r["allocation"] if isinstance(r["allocation"], str) else "") == alloc
                          and (r["rho"] == rho or (math.isnan(rho) and math.isnan(r["rho"])))), key=lambda r: r["x"])
            x = np.array([r["x"] for r in sel])
            m = np.array([r["rank_error_mean"] for r in sel])
            lo = np.array([r["rank_error_p5"] for r in sel])
            hi = np.array([r["rank_error_p95"] for r in sel])
            if math.isnan(rho):
                _band(ax, x, m, lo, hi, "DCS (non-private)", "black", "s")
            else:
                _band(ax, x, m, lo, hi, f"DP DCS ρ={rho:g} ({alloc})", QUANT_COLOR.get(rho, "tab:blue"),
                      "o" if alloc == "joint" else "^", QUANT_STYLE.get(alloc, ":"))
        gn = float(dsr[0]["gamma"]) * float(dsr[0]["n"])
        ax.axhline(gn / 10, color="0.4", ls=":", lw=1)
        # the line's label right of the panel, where no curve runs
        ax.text(1.01, gn / 10, "γ·N/10", transform=ax.get_yaxis_transform(), fontsize=7, ha="left", va="center",
                color="0.3")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("number of evenly spaced quantiles m")
        ax.set_ylabel("average rank error")
        bits = int(float(dsr[0]["universe_bits"]))
        name = "Zipf a = 1.0" if str(ds).startswith("zipf") else "GCIDE tokens hashed to 32 bits (CAIDA stand-in)"
        ax.set_title(f"({'ab'[col] if col < 2 else col}) {name}, universe 2^{bits}; "
                     f"depth {_span_of(dsr, 'depth')}, width {_span_of(dsr, 'width')}", fontsize=8)
        ax.grid(alpha=0.3)
    fig.suptitle(f"Zhao et al. Figure 2: N = {info['n']:,}, γ = {info.get('gamma')}, {info.get('repeats')} repeats, "
                 f"neighbours = {info.get('neighbours')}; bands: 5th-95th percentile over repeats", fontsize=9)
    _layout(fig, list(axes.flat))
    return [_save(fig, out / "fig2_zhao_quantiles.png")]


PRECISION_STYLE = {"DPSS": ("tab:orange", "-", "s"), "DPSS+cut": ("tab:orange", "--", "o"),
                   "DPSS-2pass": ("tab:purple", "-", "^"), "DPSS-2pass+cut": ("tab:purple", "--", "v")}


def dpss_precision(rows, out: Path, info: dict) -> list[Path]:
    """One row of panels per data set: precision and recall against k at each ε, one line per
    variant (DPSS as published, the n/k cut, two passes, both), 5th-95th percentile bands."""
    plt = _plt()
    datasets = [d for d in info.get("datasets", []) if any(r["dataset"] == d for r in rows)]
    epsilons = sorted({float(r["epsilon"]) for r in rows})
    if not datasets:
        return []
    ncols = 2 * len(epsilons)
    fig, axes = plt.subplots(len(datasets), ncols, figsize=(3.2 * ncols, 2.6 * len(datasets)), squeeze=False)
    for i, ds in enumerate(datasets):
        for j, (eps, metric) in enumerate((e, m) for e in epsilons for m in ("precision", "recall")):
            ax = axes[i][j]
            for alg, (color, ls, marker) in PRECISION_STYLE.items():
                sel = sorted((r for r in rows if r["dataset"] == ds and r["algorithm"] == alg
                              and float(r["epsilon"]) == eps), key=lambda r: float(r["k"]))
                if not sel:
                    continue
                x = np.array([float(r["k"]) for r in sel])
                m, lo, hi = (np.array([float(r[f"{metric}_{s}"]) for r in sel]) for s in ("mean", "p5", "p95"))
                _band(ax, x, m, lo, hi, alg, color, marker, ls)
            ax.set_xscale("log", base=2)
            ax.set_title(f"{ds}: {YLABEL[metric]}, ε = {eps:g}", fontsize=8)
            ax.set_xlabel("k (k̃ = 2k)", fontsize=7)
            ax.tick_params(labelsize=6)
    fig.suptitle(f"DPSS options at equal memory: δ = {info.get('delta', 1e-3):g}, private length; "
                 f"bands: 5th-95th percentile over {info.get('repeats_desc', 'repeats')}", fontsize=9)
    _layout(fig, list(axes.flat))
    return [_save(fig, out / "fig_dpss_precision.png")]
