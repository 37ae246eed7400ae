"""Person-level key selection: the uniform threshold against the weighted Gaussian selection, and
PipelineDP's weighted Gaussian partition selection, on one generated log (docs/benchmarks.md,
"Person-level key selection: uniform and weighted"; issue #41).

The log: ``--users`` people; each keeps a lognormal number of distinct keys (a heavy tail), keys
drawn from Zipf(``--zipf``); about a third of the (person, key) pairs are repeated rows; ``--bots``
people hold 2,000-5,000 distinct keys drawn uniformly from a large range (none of them heavy).

Per run: keys released, recall of the 1,000 keys held by the most people (distinct holders,
unbounded), wall seconds from the in-memory columns to the release (bounding included). dpsketch:
``heavy_hitters(keys, unit=Person(ids, max_keys=m))`` (uniform threshold) at m in ``--uniform-m``,
and ``selection="weighted_gaussian"`` (keys only at the full budget, and with counts at half of ρ
each) at m in ``--weighted-m``. PipelineDP (``DPEngine.select_partitions`` with
``PartitionSelectionStrategy.WEIGHTED_GAUSSIAN_THRESHOLDING``, LocalBackend) runs in its own venv
(``--pipelinedp-python``) on the same rows as a list of (person, key) tuples, keys only, with one
patch: its selector constructor is memoised (unpatched it rebuilds the selector, an analytic-Gaussian
σ search of ~8 ms, for every key: 95 s for 12,000 keys). Each
configuration is run ``--repeats`` times; medians are reported. Run::

    python3 -m venv /tmp/pdp && /tmp/pdp/bin/pip install pipeline-dp
    PYTHONPATH=python python bench/weighted_selection.py --users 1000000 --pipelinedp-python /tmp/pdp/bin/python
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PDP_SCRIPT = r"""
import json, sys, time
import numpy as np
import functools
import pipeline_dp
from pipeline_dp import partition_selection as ps

if sys.argv[6] == "memo":
    # PipelineDP builds the selector (an analytic-Gaussian σ search) once per partition, ~8 ms each:
    # at 10^6 keys that is hours. Memoised: the same selector object for the same (ε, δ, m).
    ps.create_weighted_gaussian_thresholding = functools.lru_cache(maxsize=None)(ps.create_weighted_gaussian_thresholding)
users = np.load(sys.argv[1]); keys = np.load(sys.argv[2])
eps, delta, m = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
rows = list(zip(users.tolist(), keys.tolist()))
t0 = time.perf_counter()
acc = pipeline_dp.NaiveBudgetAccountant(total_epsilon=eps, total_delta=delta)
eng = pipeline_dp.DPEngine(acc, pipeline_dp.LocalBackend())
params = pipeline_dp.SelectPartitionsParams(
    max_partitions_contributed=m,
    partition_selection_strategy=pipeline_dp.PartitionSelectionStrategy.WEIGHTED_GAUSSIAN_THRESHOLDING)
ext = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: r[1])
res = eng.select_partitions(rows, params, ext)
acc.compute_budgets()
out = list(res)
print(json.dumps({"seconds": time.perf_counter() - t0, "keys": [int(k) for k in out]}))
"""


def make_log(users: int, zipf: float, bots: int, seed: int):
    rng = np.random.default_rng(seed)
    sizes = np.clip(rng.lognormal(1.7, 0.95, users).astype(np.int64), 1, 5000)
    ids = np.repeat(np.arange(users, dtype=np.int64), sizes)
    keys = rng.zipf(zipf, len(ids)).astype(np.int64)
    bot_sizes = rng.integers(2000, 5001, bots)
    bot_ids = np.repeat(np.arange(users, users + bots, dtype=np.int64), bot_sizes)
    bot_keys = rng.integers(10**9, 2 * 10**9, len(bot_ids))
    ids, keys = np.concatenate([ids, bot_ids]), np.concatenate([keys, bot_keys])
    dup = rng.random(len(ids)) < 0.3  # repeated rows of a (person, key) pair
    ids, keys = np.concatenate([ids, ids[dup]]), np.concatenate([keys, keys[dup]])
    perm = rng.permutation(len(ids))
    return ids[perm], keys[perm]


def top_keys(ids, keys, n=1000):
    pair = np.unique(np.stack([keys, ids], axis=1), axis=0)
    k, holders = np.unique(pair[:, 0], return_counts=True)
    order = np.lexsort((k, -holders))
    return set(k[order[:n]].tolist()), int(holders[order[n - 1]])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--bots", type=int, default=1000)
    ap.add_argument("--zipf", type=float, default=1.1)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--uniform-m", default="1,4,16,64")
    ap.add_argument("--weighted-m", default="16,64,256")
    ap.add_argument("--pdp-m", default="16,64,256")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pipelinedp-python", default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    import dpsketch as d

    ids, keys = make_log(a.users, a.zipf, a.bots, a.seed)
    top, cut = top_keys(ids, keys)
    per_user = np.bincount(np.unique(np.stack([ids, keys], 1), axis=0)[:, 0])
    print(f"rows {len(ids):,}; people {a.users + a.bots:,} ({a.bots} bots); distinct keys per person: mean "
          f"{per_user.mean():.1f}, median {np.median(per_user):.0f}, max {per_user.max()}; "
          f"the 1000th key has {cut} holders", flush=True)
    results = []

    def run(name, m, fn):
        got = []
        for r in range(a.repeats):
            t0 = time.perf_counter()
            rel = fn(r)
            dt = time.perf_counter() - t0
            released = {k for k, _ in rel.items}
            got.append((dt, len(released), len(released & top) / 1000))
        row = {"route": name, "m": m, "seconds": statistics.median(g[0] for g in got),
               "keys": statistics.median(g[1] for g in got), "recall": statistics.median(g[2] for g in got),
               "epsilon": rel.epsilon, "delta": rel.delta}
        results.append(row)
        print(json.dumps(row), flush=True)

    for m in [int(x) for x in a.uniform_m.split(",") if x]:
        run("uniform", m, lambda r, m=m: d.heavy_hitters(keys, epsilon=a.epsilon, delta=a.delta,
                                                         unit=d.Person(ids, max_keys=m), seed=100 + r))
    for m in [int(x) for x in a.weighted_m.split(",") if x]:
        for counts in (False, True):
            run("weighted" + ("+counts" if counts else ""), m,
                lambda r, m=m, counts=counts: d.heavy_hitters(keys, epsilon=a.epsilon, delta=a.delta,
                                                              unit=d.Person(ids, max_keys=m), seed=100 + r,
                                                              selection="weighted_gaussian", counts=counts))
    if a.pipelinedp_python:
        with tempfile.TemporaryDirectory() as tmp:
            up, kp, script = Path(tmp, "u.npy"), Path(tmp, "k.npy"), Path(tmp, "pdp.py")
            np.save(up, ids)
            np.save(kp, keys)
            script.write_text(PDP_SCRIPT)
            for m in [int(x) for x in a.pdp_m.split(",") if x]:
                out = subprocess.run([a.pipelinedp_python, str(script), str(up), str(kp), str(a.epsilon), str(a.delta),
                                      str(m), "memo"], capture_output=True, text=True, check=True)
                res = json.loads(out.stdout.strip().splitlines()[-1])
                released = set(res["keys"])
                row = {"route": "pipelinedp_weighted", "m": m, "seconds": res["seconds"], "keys": len(released),
                       "recall": len(released & top) / 1000, "epsilon": a.epsilon, "delta": a.delta}
                results.append(row)
                print(json.dumps(row), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps({"args": vars(a), "results": results}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
