"""What the private-length default costs: recall, precision and ARE of PMG, DPSS and the two
envelope wrappers with the library default (n private, a share of (ε, δ) spent on n̂) against
the public-length opt-in (``public_length=True``, replace-one neighbours at the same (ε, δ)) and,
for PMG/DPSS, against the papers' calibration (the exact n read at the full (ε, δ); NOT a valid
guarantee under add/remove), on Holland's
settings (docs/algorithms.md §7: Zipf 1.1 over 10^5 items, k = 128, k̃ = 2k, δ = 10^-3) and on the
real streams. Same seeds for both modes; prints a Markdown table (docs/results.md §Length modes).

    python3 bench/length_cost.py                 # n = 2^24, 5 repeats, ε ∈ {0.1, 1}
    python3 bench/length_cost.py --n-log2 20 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

import dpsketch
from dpsketch import _core, datasets
from experiments.holland import ALGORITHMS, load_real, run_one
from experiments.metrics import Truth, heavy_hitter_scores


def papers_calibration(alg, stream, truth, *, k, eps, delta, seed):
    """PMG/DPSS thresholds read the exact n at the full (ε, δ) (the papers' model)."""
    R = _core.release
    obj = (dpsketch.MisraGries if alg == "MisraGries" else dpsketch.SpaceSaving)(2 * k)
    obj.update_many(stream)
    rng = _core.noise.SecureRng(seed)
    if alg == "MisraGries":
        raw = R.pmg(obj._impl, eps, delta, k, R.Length.fixed(len(stream)), rng)
    else:
        raw = R.dpss(obj._impl, eps, delta, k, R.Length.fixed(len(stream)), rng)
    return heavy_hitter_scores(raw[0], truth, k)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-log2", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--epsilons", default="0.1,1")
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"),
                    help="folder with gcide_words.txt.gz (skipped when absent)")
    args = ap.parse_args(argv)
    eps_list = [float(e) for e in args.epsilons.split(",")]
    streams = {"zipf1.1": datasets.zipf(1 << args.n_log2, skew=1.1, universe=100_000, seed=1)}
    streams["retail"] = np.asarray(datasets.retail())
    gcide = load_real("gcide", args.data, limit=1 << 20)
    if gcide is not None:
        streams["gcide-2^20"] = gcide
    print("| stream | n | algorithm | ε | recall: default / public / papers | precision: default / public / papers "
          "| ARE: default / public / papers |")
    print("|---|---|---|---|---|---|---|")
    for name, stream in streams.items():
        truth = Truth.of(stream)
        for eps in eps_list:
            for alg in ALGORITHMS:
                res = {"default": [], "public": [], "papers": []}
                for rep in range(args.repeats):
                    for mode in ("default", "public"):
                        res[mode].append(run_one(alg, stream, truth, k=128, factor=2, epsilon=eps, delta=1e-3,
                                                 seed=1000 + rep, public_length=mode == "public"))
                    if alg in ("MisraGries", "SpaceSaving"):
                        res["papers"].append(papers_calibration(alg, stream, truth, k=128, eps=eps, delta=1e-3,
                                                                seed=1000 + rep))

                def med(key, fmt):
                    return " / ".join(fmt.format(statistics.median(r[key] for r in res[m])) if res[m] else "–"
                                      for m in ("default", "public", "papers"))
                print(f"| {name} | {len(stream):,} | {alg} | {eps:g} | {med('recall', '{:.3f}')} "
                      f"| {med('precision', '{:.3f}')} | {med('are', '{:.4f}')} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
