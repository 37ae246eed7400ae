"""DPSS options (docs/privacy.md §DPSS, "The n/k cut" and "Two passes"): the exhaustive check of
the structural facts the two-pass proof uses, and the behaviour of ``cut``, ``passes=2`` and their
front ends on real data and real files."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

import dpsketch
from dpsketch import ParameterError, SpaceSaving
from dpsketch.mechanisms.dpss import CandidateCounts, heavy_hitters, release_exact_counts
from experiments.metrics import Truth, heavy_hitter_scores


# ----------------------------------------------------------------- exhaustive structural search
def _tracked(cap, stream):
    s = SpaceSaving(cap, key_type="int")
    s.update_many(np.asarray(stream, dtype=np.int64))
    return dict(s.items()), s.min_count()


def two_pass_facts(cap, x, x_removed, state, state_removed):
    """The facts docs/privacy.md §DPSS "Two passes" uses, for X and X' = X minus one element (both
    directions of the add/remove relation are this pair read either way). Returns the number of
    labels tracked on one side only (for the search's report)."""
    (c, m), (c2, m2) = state, state_removed
    t, t2 = set(c), set(c2)
    f, f2 = Counter(x), Counter(x_removed)
    n = len(x)  # the longer stream: n_up bounds it, and so bounds both
    # (1) at most 2 labels per side are tracked on that side only
    assert len(t - t2) <= 2 and len(t2 - t) <= 2
    # (2) such a label's exact count is at most its structure's minimum + 1 <= n/k̃ + 1
    for y in t - t2:
        assert f[y] <= m + 1 and m * cap <= n and f[y] * cap <= n + cap
    for y in t2 - t:
        assert f2[y] <= m2 + 1 and m2 * cap <= n - 1 and f2[y] * cap <= n + cap
    # (3) the exact counts of the shared labels differ in l1 by at most 1
    assert sum(abs(f[y] - f2[y]) for y in t & t2) <= 1
    return max(len(t - t2), len(t2 - t))


def exhaustive_search(max_len, symbols, caps):
    """Every stream of length <= max_len over ``symbols`` symbols, every capacity in ``caps``, every
    single-element removal. Returns {cap: (streams, pairs, max labels tracked on one side only)}."""
    out = {}
    for cap in caps:
        states = {}
        for length in range(max_len + 1):
            for x in itertools.product(range(symbols), repeat=length):
                states[x] = _tracked(cap, x)
        pairs, widest = 0, 0
        for x, st in states.items():
            for i in range(len(x)):
                xr = x[:i] + x[i + 1:]
                try:
                    widest = max(widest, two_pass_facts(cap, x, xr, st, states[xr]))
                except AssertionError as e:
                    raise AssertionError(f"two-pass facts fail: capacity={cap}, X={list(x)}, X'={list(xr)}") from e
                pairs += 1
        out[cap] = (len(states), pairs, widest)
    return out


def test_two_pass_facts_exhaustive():
    # all streams of length <= 7 over 4 symbols (21,845) and their 131,072 removals, capacities 1-3;
    # DPSSKETCH_EXHAUSTIVE=1 runs length <= 8 (87,381 streams) with capacities 1-4
    big = os.environ.get("DPSSKETCH_EXHAUSTIVE") == "1"
    found = exhaustive_search(8 if big else 7, 4, (1, 2, 3, 4) if big else (1, 2, 3))
    assert max(w for _, _, w in found.values()) >= 1  # the search does meet labels tracked on one side


# Two labels tracked on one side only do occur (longer streams): the proof's per-side count of 2
# is needed. Capacity 4; X' is X without its 23rd element (a 3).
_TWO_ONE_SIDED = [4, 8, 8, 7, 1, 8, 7, 8, 3, 6, 7, 2, 7, 5, 8, 3, 3, 7, 0, 1, 1, 4, 3, 7, 8, 4, 5, 5, 3, 0, 7, 2, 6,
                  8, 5]


def test_two_pass_facts_with_two_labels_on_one_side():
    x = _TWO_ONE_SIDED
    xr = x[:22] + x[23:]
    assert two_pass_facts(4, x, xr, _tracked(4, x), _tracked(4, xr)) == 2


def test_two_pass_facts_random_longer_streams():
    rng = np.random.default_rng(20)
    for _ in range(20_000):
        cap, alphabet, length = int(rng.integers(1, 7)), int(rng.integers(2, 10)), int(rng.integers(1, 60))
        x = rng.integers(0, alphabet, length).tolist()
        i = int(rng.integers(0, length))
        xr = x[:i] + x[i + 1:]
        try:
            two_pass_facts(cap, x, xr, _tracked(cap, x), _tracked(cap, xr))
        except AssertionError as e:
            raise AssertionError(f"two-pass facts fail: capacity={cap}, X={x}, X'={xr}") from e


def test_two_pass_facts_reject_violations():
    state = ({0: 3, 1: 1}, 1)
    state_removed = ({0: 2, 2: 1}, 1)
    with pytest.raises(AssertionError):  # label 1 tracked on one side with f = 5 > min + 1
        two_pass_facts(2, [0, 0, 0, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1, 1], state, state_removed)
    with pytest.raises(AssertionError):  # shared label 0 whose exact counts differ by 2
        two_pass_facts(2, [0, 0, 0, 1], [0, 1], ({0: 3, 1: 1}, 1), ({0: 1, 1: 1}, 1))


# ----------------------------------------------------------------- the n/k cut
def _zipf(n=200_000, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.zipf(1.2, n)
    return x[x < 1 << 30].astype(np.int64)


def test_cut_drops_exactly_the_values_below_n_hat_over_k():
    x = _zipf()
    s = SpaceSaving(64)
    s.update_many(x)
    plain = s.release(epsilon=0.5, delta=1e-6, k=32, cut=None, seed=11, allow_repeat=True)
    cut = s.release(epsilon=0.5, delta=1e-6, k=32, cut="n/k", seed=11, allow_repeat=True)
    hh = cut.metadata["heavy_hitter_cut"]
    assert hh == pytest.approx(cut.metadata["n_used"] / 32)
    assert cut.metadata["tau"] == plain.threshold and cut.metadata["cut"] == "n/k"
    assert plain.metadata["cut"] == "none"
    assert cut.items == [(k, v) for k, v in plain.items if v >= hh]  # same seed: same noise
    assert cut.threshold == max(plain.threshold, hh)
    assert cut.metadata["threshold_inclusive"] == (hh > plain.threshold)


def test_cut_is_the_default_and_validated():
    s = SpaceSaving(8)
    s.update_many([1, 2, 3] * 50)
    assert s.release(epsilon=1, delta=1e-6, k=4, seed=1).metadata["cut"] == "n/k"
    with pytest.raises(ParameterError, match="cut"):
        SpaceSaving(8).release(epsilon=1, delta=1e-6, k=4, cut="n/2k")


def _retail():
    return np.asarray(dpsketch.datasets.retail(), dtype=np.int64)


def test_cut_raises_precision_on_retail():
    # k = 512, ε = 0.1: items with f in [n/k - γ, n/k) pass τ = n/k - γ (docs/privacy.md §DPSS)
    x = _retail()
    truth = Truth.of(x)
    prec = {None: [], "n/k": []}
    for seed in range(6):
        s = SpaceSaving(1024)
        s.update_many(x)
        for c in prec:
            rel = s.release(epsilon=0.1, delta=1e-3, k=512, cut=c, seed=seed, allow_repeat=True)
            prec[c].append(heavy_hitter_scores(rel.items, truth, 512)["precision"])
    assert np.mean(prec["n/k"]) > np.mean(prec[None]) + 0.02


# ----------------------------------------------------------------- two passes
def test_two_pass_releases_exact_counts_plus_noise():
    # ε huge: the noise is 0 with overwhelming probability, so the values are the exact counts
    x = _retail()
    truth = Truth.of(x)
    rel = heavy_hitters(x, k=512, epsilon=2000.0, delta=1e-6, passes=2, seed=5)
    assert rel.mechanism == "DPSS[two-pass]" and rel.items
    keys = np.array([k for k, _ in rel.items])
    assert [v for _, v in rel.items] == truth.freq(keys).tolist()
    one = heavy_hitters(x, k=512, epsilon=2000.0, delta=1e-6, passes=1, seed=5)
    assert one.mechanism == "DPSS"
    # SpaceSaving overestimates some released counts; the second pass removes that
    assert any(v > f for (_, v), f in zip(one.items, truth.freq(np.array([k for k, _ in one.items]))))


def test_two_pass_threshold_and_guarantee_match_dpss():
    x = _zipf()
    one = heavy_hitters(x, k=32, epsilon=1.0, delta=1e-6, passes=1, cut=None, seed=2)
    two = heavy_hitters(x, k=32, epsilon=1.0, delta=1e-6, passes=2, cut=None, seed=2)
    for key in ("gamma", "n_used", "n_upper", "n_lower", "epsilon_mechanism", "delta_mechanism", "length"):
        assert one.metadata[key] == two.metadata[key]
    assert one.threshold == two.threshold
    assert (one.epsilon, one.delta) == (two.epsilon, two.delta) == (1.0, 1e-6)


def test_two_pass_on_every_input_kind(tmp_path):
    words = [w for w in "the cat and the dog and the bird the end".split()] * 300
    path = tmp_path / "words.txt"
    path.write_text("\n".join(words) + "\n")
    import pandas as pd

    df = pd.DataFrame({"w": words, "other": range(len(words))})
    releases = [
        heavy_hitters(words, k=4, epsilon=50.0, delta=1e-6, passes=2, seed=1),
        heavy_hitters(np.array(words), k=4, epsilon=50.0, delta=1e-6, passes=2, seed=1),
        heavy_hitters(pd.Series(words), k=4, epsilon=50.0, delta=1e-6, passes=2, seed=1),
        heavy_hitters(df, column="w", k=4, epsilon=50.0, delta=1e-6, passes=2, seed=1),
        heavy_hitters(str(path), k=4, epsilon=50.0, delta=1e-6, passes=2, seed=1),
    ]
    f = Counter(words)
    for rel in releases:
        assert {k for k, _ in rel.items} == {"the"}  # 1200 of 3000 >= n/4; "and" (600) is not
        assert abs(rel.items[0][1] - f["the"]) < 5


def test_two_pass_refuses_one_shot_iterators_and_bad_parameters():
    with pytest.raises(ParameterError, match="one-shot"):
        heavy_hitters(iter([1, 2, 3]), k=2, epsilon=1, delta=1e-6, passes=2)
    with pytest.raises(ParameterError, match="passes"):
        heavy_hitters([1, 2], k=2, epsilon=1, delta=1e-6, passes=3)
    with pytest.raises(ParameterError, match="capacity"):
        heavy_hitters([1, 2], k=4, capacity=2, epsilon=1, delta=1e-6)
    import pandas as pd

    with pytest.raises(ParameterError, match="column"):
        heavy_hitters(pd.DataFrame({"a": [1]}), k=2, epsilon=1, delta=1e-6, passes=2)
    # a generator is fine for one pass
    assert heavy_hitters((i % 3 for i in range(3000)), k=2, epsilon=5, delta=1e-6, seed=1).mechanism == "DPSS"


def test_exact_count_release_spends_the_summary_once():
    s = SpaceSaving(8)
    s.update_many([1, 2, 3] * 50)
    counts = [50] * len(s.items())
    release_exact_counts(s, counts, epsilon=1, delta=1e-6, k=4, seed=1)
    with pytest.raises(dpsketch.errors.ReleaseBudgetError):
        s.release(epsilon=1, delta=1e-6, k=4)
    b = dpsketch.Budget(1.0, 1e-6)
    s2 = SpaceSaving(8)
    s2.update_many([1, 2, 3] * 50)
    release_exact_counts(s2, counts, epsilon=1, delta=1e-6, k=4, budget=b)
    with pytest.raises(dpsketch.errors.BudgetExceededError):
        release_exact_counts(s2, counts, epsilon=1, delta=1e-6, k=4, budget=b, allow_repeat=True)


def test_candidate_counts_match_exact_counts_on_every_batch_kind():
    import pyarrow as pa

    x = _zipf(50_000)
    keys = [int(v) for v in np.unique(x)[:40]] + [-5]
    cc = CandidateCounts(keys, "int")
    for part in np.array_split(x, 7):
        cc.update_many(part)
    f = Counter(x.tolist())
    assert cc.counts() == [f.get(k, 0) for k in keys] and cc.n == len(x)
    words = [str(v) for v in x[:20_000].tolist()]
    skeys = sorted(set(words))[:30] + ["absent"]
    fw = Counter(words)
    for batch in (words, np.array(words), pa.array(words, type=pa.large_string())):
        cs = CandidateCounts(skeys, "str")
        cs.update_many(batch)
        assert cs.counts() == [fw.get(k, 0) for k in skeys]
    with pytest.raises(TypeError, match="changed"):
        CandidateCounts(skeys, "str").update_many(x[:10])


# ----------------------------------------------------------------- CLI
def _cli(*args):
    return subprocess.run([sys.executable, "-m", "dpsketch", *args], capture_output=True, text=True, timeout=120)


def test_cli_top_two_passes_and_cut(tmp_path):
    words = ("alpha " * 500 + "beta " * 300 + "gamma " * 10 + "delta " * 5).split()
    path = tmp_path / "w.txt"
    path.write_text("\n".join(words) + "\n")
    r = _cli("top", str(path), "--passes", "2", "--k", "4", "--epsilon", "20", "--seed", "3", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["mechanism"] == "DPSS[two-pass]" and obj["metadata"]["cut"] == "n/k"
    assert [k for k, _ in obj["items"]] == ["alpha", "beta"]
    r = _cli("top", str(path), "--cut", "none", "--k", "4", "--epsilon", "20", "--seed", "3", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["metadata"]["cut"] == "none"
    r = _cli("top", "-", "--passes", "2", "--k", "4")
    assert r.returncode == 2 and "stdin" in r.stderr
    r = _cli("top", str(path), "--passes", "2", "--algorithm", "misragries")
    assert r.returncode == 2 and "--passes" in r.stderr
