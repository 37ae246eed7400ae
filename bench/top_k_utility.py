"""Exact-k on the bundled retail stream: the noisy-value selection that ships (docs/privacy.md
§Exact-k) against a Gumbel ranking that buys its own share of ε.

(A) ``top_k=N``: DPSS at (ε, δ), capacity 64·N, k = capacity; the N largest released noisy values.
(B) DPSS at (ε/2, δ) with the same capacity and k gives the qualified set S; one-shot Gumbel of
    scale N/(ε/2) on the counts of S (SpaceSaving's counts, or the exact ones with two passes)
    picks N (score sensitivity 1, N peels).

Prints, per N and passes, the mean overlap with the true top N and how often the released set is
exactly the true top N, over ``--runs`` releases of one summary (``allow_repeat``: the runs are
independent draws of the same mechanism). Usage: python bench/top_k_utility.py [--runs 200]
"""

from __future__ import annotations

import argparse

import numpy as np

import dpsketch as d
from dpsketch import _seeds
from dpsketch.mechanisms.dpss import CandidateCounts, release_exact_counts
from dpsketch.mechanisms.top_k import gumbel_top_k, top_k_capacity


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    args = ap.parse_args()
    stream = d.datasets.retail()
    keys, counts = np.unique(stream, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    rng, _ = _seeds.rng(None, "noise")
    print(f"retail: {len(stream):,} items; epsilon={args.epsilon}, delta={args.delta}, {args.runs} runs each")
    print(f"{'N':>5} {'passes':>6} | {'(A) noisy values: overlap, exact set':>38} | {'(B) eps/2 + Gumbel: overlap, exact set':>40}")
    for n_top in (10, 20, 50, 100):
        truth = set(keys[order[:n_top]].tolist())
        cap = top_k_capacity(n_top)
        ss = d.SpaceSaving(cap)
        ss.update_many(stream)
        tracked = [k for k, _ in ss.items()]
        ss_counts = dict(ss.items())
        cc = CandidateCounts(tracked, "int")
        cc.update_many(stream)
        exact = dict(zip(tracked, cc.counts()))
        for passes in (1, 2):
            a_ov, a_ex, b_ov, b_ex = [], [], [], []
            for _ in range(args.runs):
                kw = dict(allow_repeat=True)
                if passes == 1:
                    a = ss.release(epsilon=args.epsilon, delta=args.delta, top_k=n_top, **kw)
                    cand = ss.release(epsilon=args.epsilon / 2, delta=args.delta, top_k=cap, **kw)
                    score = ss_counts
                else:
                    a = release_exact_counts(ss, cc.counts(), epsilon=args.epsilon, delta=args.delta, top_k=n_top, **kw)
                    cand = release_exact_counts(ss, cc.counts(), epsilon=args.epsilon / 2, delta=args.delta,
                                                top_k=cap, **kw)
                    score = exact
                got = set(a.keys())
                a_ov.append(len(got & truth))
                a_ex.append(got == truth)
                ck = cand.keys()
                pick = gumbel_top_k(np.array([score[k] for k in ck]), n_top / (args.epsilon / 2), n_top, rng)
                gb = {ck[i] for i in pick}
                b_ov.append(len(gb & truth))
                b_ex.append(gb == truth)
            print(f"{n_top:>5} {passes:>6} | {np.mean(a_ov):>22.2f} {np.mean(a_ex):>15.2f} | "
                  f"{np.mean(b_ov):>24.2f} {np.mean(b_ex):>15.2f}")


if __name__ == "__main__":
    main()
