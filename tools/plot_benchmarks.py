#!/usr/bin/env python3
"""Draw the figures of docs/benchmarks.md and docs/distributed.md from the recorded figures in
docs/data/*.json.

    python tools/plot_benchmarks.py            # writes docs/results/bench/*.png
    python tools/plot_benchmarks.py --out DIR

Nothing is measured here: every bar and marker is a number of the JSON files, which record the
benchmark runs the page reports (command, machine and conditions are in each file). Needs
matplotlib. The PNGs carry no timestamp or version metadata, so a rebuild from unchanged data
leaves them unchanged with the same matplotlib.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "data"
DEFAULT_OUT = ROOT / "docs" / "results" / "bench"
PNG_METADATA = {"Software": None}  # no matplotlib version in the file: rebuilds stay byte-identical


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def save(fig, out: Path, name: str) -> Path:
    path = out / name
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata=PNG_METADATA)
    plt.close(fig)
    return path


def point_labels(rows) -> list[str]:
    return [f"{r['stream']}\nk~={r['k']}" for r in rows]


def grouped_bars(ax, labels, series: dict[str, list[float]], ylabel: str) -> None:
    n = len(series)
    width = 0.8 / n
    for i, (name, values) in enumerate(series.items()):
        xs = [j + (i - (n - 1) / 2) * width for j in range(len(labels))]
        ax.bar(xs, values, width, label=name)
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def run_markers(ax, labels, series: dict[str, list[list[float]]], line: float, line_label: str, ylabel: str):
    """One marker per run and point; the series are offset sideways so that they do not overlap."""
    n = len(series)
    for i, (name, runs) in enumerate(series.items()):
        dx = (i - (n - 1) / 2) * 0.2
        xs = [j + dx for j, rs in enumerate(runs) for _ in rs]
        ys = [v for rs in runs for v in rs]
        ax.plot(xs, ys, "o", label=name, alpha=0.8)
    ax.axhline(line, color="k", ls="--", lw=1, label=line_label)
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def plot_linear_sketches(out: Path) -> Path:
    d = load("bench_linear_sketches.json")
    order = ["CountMin_d5", "CountSketch_d5", "CountMin_d32", "CountSketch_d32", "SHH_CountMin_d32",
             "SHH_CountSketch_d32"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, key in zip(axes, ("int", "str")):
        rows = [r for r in d["rows"] if r["key"] == key]
        exact = next(r["ns_per_update"] for r in rows if r["structure"] == "Exact")
        by = {(r["structure"], r["k"]): r["ns_per_update"] for r in rows}
        labels = [s.replace("SHH_", "SHH\n").replace("CountMin", "Count-Min").replace("_d", "\nd=") for s in order]
        grouped_bars(ax, labels,
                     {f"k={k}": [by[(s, k)] for s in order] for k in (256, 4096)}, "ns per update")
        ax.axhline(exact, color="k", ls="--", lw=1, label=f"exact counter ({exact} ns)")
        ax.legend(fontsize=8)
        ax.set_title(f"{key} keys, Zipf 1.1 ({d['machine']})")
    return save(fig, out, "linear_sketches.png")


def plot_counter_floors(out: Path) -> Path:
    d = load("bench_counter_floors.json")
    rows = d["rows"]
    labels = point_labels(rows)
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.2))
    grouped_bars(left, labels, {
        "probe floor": [r["floor_ns"] for r in rows],
        "eviction floor": [r["eviction_floor_ns"] for r in rows],
        "SpaceSaving": [r["spacesaving_ns"] for r in rows],
        "Misra-Gries": [r["misragries_ns"] for r in rows],
    }, "ns per update (run 1)")
    left.set_title(f"int keys ({d['machine']})")
    run_markers(right, labels, {
        "SpaceSaving / probe floor": [r["spacesaving_over_floor"] for r in rows],
        "Misra-Gries / probe floor": [r["misragries_over_floor"] for r in rows],
        "eviction floor / probe floor": [r["eviction_floor_over_floor"] for r in rows],
    }, 2.0, "2x", "same-run ratio (runs 1 and 2)")
    right.set_ylim(bottom=0)
    right.set_title("ratios to the probe floor")
    return save(fig, out, "counter_floors.png")


def plot_vs_datasketches(out: Path) -> Path:
    d = load("bench_vs_datasketches.json")
    rows = d["rows"]
    labels = point_labels(rows)
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.2))
    grouped_bars(left, labels, {
        "probe floor": [r["floor_ns"] for r in rows],
        "SpaceSaving": [r["spacesaving_ns"] for r in rows],
        "Misra-Gries": [r["misragries_ns"] for r in rows],
        "DataSketches": [r["datasketches_ns"] for r in rows],
    }, "ns per update (run 2)")
    left.set_title(f"same error bound, n = 2^22 ({d['machine'].split(',')[0]})")
    run_markers(right, labels, {
        "DataSketches / SpaceSaving": [r["ds_over_spacesaving"] for r in rows],
        "DataSketches / Misra-Gries": [r["ds_over_misragries"] for r in rows],
    }, 1.25, "1.25x", "same-round ratio (runs 1-3)")
    right.set_ylim(bottom=0)
    right.set_title("DataSketches time / dpsketch time")
    return save(fig, out, "vs_datasketches.png")


def plot_python_update(out: Path) -> Path:
    d = load("bench_python_update.json")
    fig, (calls, left, right) = plt.subplots(1, 3, figsize=(17, 5), gridspec_kw={"width_ratios": [2, 3, 2]})
    rows = d["per_item"]
    overhead = rows[0]["ns"]
    names = [r["call"].replace("datasketches ", "datasketches\n") for r in rows[1:]]
    colors = ["tab:red" if r["call"].startswith("datasketches") else "tab:blue" for r in rows[1:]]
    calls.barh(names, [r["ns"] for r in rows[1:]], color=colors)
    for i, r in enumerate(rows[1:]):
        calls.text(r["ns"], i, f" {r['ns']}", va="center", fontsize=8)
    calls.axvline(overhead, color="k", ls="--", lw=1, label=f"empty Python call ({overhead} ns)")
    calls.invert_yaxis()
    calls.tick_params(axis="y", labelsize=8)
    calls.set_xlabel("ns per item, loop included")
    calls.set_title("per-item update(), 200,000 keys")
    calls.legend(fontsize=8)
    calls.grid(axis="x", alpha=0.3)
    rows = sorted(d["containers"], key=lambda r: r["ns_per_key"])
    left.barh([r["container"] for r in rows], [r["ns_per_key"] for r in rows])
    for i, r in enumerate(rows):
        left.text(r["ns_per_key"], i, f" {r['ns_per_key']}", va="center", fontsize=8)
    left.set_xlabel("ns per key")
    left.set_title("SpaceSaving(1000).update_many, 10^6 keys")
    left.grid(axis="x", alpha=0.3)
    rows = sorted(d["stringdtype_run"], key=lambda r: r["ns_per_key"][0])
    for run, dy in ((0, -0.2), (1, 0.2)):
        right.barh([i + dy for i in range(len(rows))], [r["ns_per_key"][run] for r in rows], 0.4,
                   label=f"run {run + 1}")
    right.set_yticks(range(len(rows)), [r["container"] for r in rows])
    right.set_xlabel("ns per key")
    right.set_title("separate runs, with StringDType")
    right.legend(fontsize=8)
    right.grid(axis="x", alpha=0.3)
    return save(fig, out, "python_update.png")


def plot_user_level_peers(out: Path) -> Path:
    """dpsketch against PipelineDP at the user level (docs/distributed.md): wall time and recall,
    in memory and on Spark local[2], from bench/user_level_peers.py's JSON."""
    local, spark = load("user_level_peers_5m.json"), load("user_level_peers_spark_2m.json")
    labels = [f"in memory\n{local['rows']:,} rows", f"Spark local[2]\n{spark['rows']:,} rows"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    grouped_bars(left, labels, {"dpsketch": [local["dpsketch"]["seconds"], spark["dpsketch_spark"]["seconds"]],
                                "PipelineDP": [local["pipelinedp"]["seconds"], spark["pipelinedp_spark"]["seconds"]],
                                "Spark groupBy count (exact)": [0.0, spark["spark_groupby_count"]["seconds"]]},
                 "wall time, s (median)")
    left.set_title("time (lower is better)")
    key = "recall_ge_150_users"
    grouped_bars(right, labels, {"dpsketch": [local["dpsketch"][key], spark["dpsketch_spark"][key]],
                                 "PipelineDP": [local["pipelinedp"][key], spark["pipelinedp_spark"][key]]},
                 "recall of keys with >= 150 users")
    right.set_ylim(0, 1.05)
    right.set_title(f"recall at ε = {local['epsilon']:g}, δ = {local['delta']:g}, m = {local['m']}")
    return save(fig, out, "user_level_peers.png")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="directory for the PNGs")
    args = ap.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    for plot in (plot_linear_sketches, plot_counter_floors, plot_vs_datasketches, plot_python_update,
                 plot_user_level_peers):
        print(plot(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
