"""Exact-k releases (docs/privacy.md §Exact-k): the one-shot Gumbel selection against the exact
peeling probabilities, the row-level top_k=N releases (exactly N whenever N qualify; the selection is
post-processing of the DPSS/PMG release), and ``dpsketch top --top-k`` on the row-level routes."""

from __future__ import annotations

import itertools
import json
import random
import re

import numpy as np
import pytest

import dpsketch as d
from dpsketch import _core
from dpsketch.mechanisms.top_k import COUNTERS_PER_ITEM, gumbel_top_k, select_top_k, top_k_capacity

from conftest import one_error_line, run_cli as run


# -- one-shot Gumbel = peeling ----------------------------------------------------------------------

def peeling_probabilities(scores, scale, k) -> dict:
    """P(ordered k-tuple) of k sequential exponential mechanisms ∝ exp(score/scale) without
    replacement, by brute force over every ordered k-tuple."""
    w = np.exp(np.asarray(scores, dtype=float) / scale)
    out = {}
    for tup in itertools.permutations(range(len(scores)), k):
        p, left = 1.0, w.sum()
        for i in tup:
            p *= w[i] / left
            left -= w[i]
        out[tup] = p
    return out


def _draw(scores, scale, k, trials, seed) -> dict:
    rng = _core.noise.SecureRng(seed)
    seen: dict = {}
    for _ in range(trials):
        t = tuple(gumbel_top_k(np.asarray(scores), scale, k, rng))
        seen[t] = seen.get(t, 0) + 1
    return seen


def _chi2_pvalue(seen: dict, probs: dict, trials: int) -> float:
    """χ² goodness of fit, the tuples of expected count < 5 pooled into one cell."""
    from scipy import stats

    assert set(seen) <= set(probs)  # every drawn tuple is an ordered k-tuple of distinct indices
    obs, exp, pooled_o, pooled_e = [], [], 0, 0.0
    for tup, p in probs.items():
        if p * trials >= 5:
            obs.append(seen.get(tup, 0))
            exp.append(p * trials)
        else:
            pooled_o += seen.get(tup, 0)
            pooled_e += p * trials
    if pooled_e > 0:
        obs.append(pooled_o)
        exp.append(pooled_e)
    return float(stats.chisquare(obs, exp).pvalue)


def test_peeling_probabilities_by_hand():
    p = peeling_probabilities([1.0, 0.0, 0.0], 1.0, 2)
    assert sum(p.values()) == pytest.approx(1.0)
    e = np.e
    assert p[(0, 1)] == pytest.approx(e / (e + 2) * 0.5)
    assert p[(1, 0)] == pytest.approx(1 / (e + 2) * e / (e + 1))
    assert sum(v for t, v in p.items() if t[0] == 0) == pytest.approx(e / (e + 2))  # k = 1: softmax


CASES = [([6, 4, 3, 0, 5], 2.0, 3), ([10, 10, 9, 2], 1.5, 2), ([3, 1, 0, 0, 2, 7], 4.0, 4)]


@pytest.mark.parametrize("scores,scale,k", CASES)
def test_one_shot_gumbel_has_the_peeling_distribution(scores, scale, k):
    trials = 30_000
    seen = _draw(scores, scale, k, trials, seed=len(scores) * 7 + k)
    assert sum(seen.values()) == trials
    assert _chi2_pvalue(seen, peeling_probabilities(scores, scale, k), trials) > 1e-4


@pytest.mark.parametrize("wrong", [0.5, 2.0])
def test_the_chi2_test_rejects_a_wrong_scale(wrong):
    # the same draws against the peeling probabilities of another scale: a selection whose scale
    # were off by this factor would fail the test above
    scores, scale, k = CASES[0]
    trials = 30_000
    seen = _draw(scores, scale, k, trials, seed=99)
    assert _chi2_pvalue(seen, peeling_probabilities(scores, scale * wrong, k), trials) < 1e-6


def test_gumbel_top_k_edges():
    rng = _core.noise.SecureRng(1)
    assert gumbel_top_k(np.array([], dtype=np.int64), 1.0, 3, rng) == []
    assert sorted(gumbel_top_k(np.array([1, 2]), 1.0, 5, rng)) == [0, 1]  # min(k, candidates)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(d.ParameterError, match="Gumbel scale"):
            gumbel_top_k(np.array([1, 2]), bad, 1, rng)


# -- the row-level selection: post-processing of the release ----------------------------------------

def test_select_top_k_keeps_the_n_largest_noisy_values_and_counts_the_qualified():
    raw = ([("a", 5), ("b", 9), ("c", 7), ("d", 9)], 3.0, False, {"x": 1})
    items, thr, inc, meta = select_top_k(raw, 3)
    assert items == [("b", 9), ("d", 9), ("c", 7)] and thr == 3.0 and inc is False
    assert meta == {"x": 1, "top_k": 3, "qualified": 4, "selection": "top_k_by_noisy_value"}
    assert select_top_k(raw, 10)[0] == [("b", 9), ("d", 9), ("c", 7), ("a", 5)]


def _zipf_stream(n=60_000, seed=3):
    r = np.random.default_rng(seed)
    return (r.zipf(1.2, size=n) % 20_000).astype(np.int64)


def test_top_k_is_the_first_n_of_dpss_at_k_equal_capacity():
    # same seed, same noise: the exact-k release is DPSS at k = capacity, cut=None, then cut to N
    data = _zipf_stream()
    ss = d.SpaceSaving(640)
    ss.update_many(data)
    full = ss.release(epsilon=1.0, delta=1e-6, k=640, cut=None, seed=11)
    top = ss.release(epsilon=1.0, delta=1e-6, top_k=10, seed=11, allow_repeat=True)
    assert len(full) > 10 and top.items == full.items[:10]
    assert top.metadata["qualified"] == len(full) and top.metadata["top_k"] == 10
    assert (top.epsilon, top.delta, top.threshold) == (full.epsilon, full.delta, full.threshold)
    assert top.metadata["k"] == 640 and top.metadata["cut"] == "none"


def test_misragries_top_k_is_the_first_n_of_pmg():
    data = _zipf_stream()
    mg = d.MisraGries(640)
    mg.update_many(data)
    full = mg.release(epsilon=1.0, delta=1e-6, seed=4)
    top = mg.release(epsilon=1.0, delta=1e-6, top_k=25, seed=4, allow_repeat=True)
    assert len(full) > 25 and top.items == full.items[:25] and top.metadata["qualified"] == len(full)
    assert top.epsilon == full.epsilon and top.n is None  # PMG without k reads no length


def test_exactly_n_whenever_n_qualify_and_fewer_otherwise():
    data = _zipf_stream()
    rel = d.heavy_hitters(data, top_k=30, epsilon=1.0, delta=1e-6, seed=2)
    assert len(rel) == 30 and rel.metadata["qualified"] >= 30
    assert rel.metadata["capacity"] == COUNTERS_PER_ITEM * 30
    # 3 keys only: fewer than N can qualify, and the release says how many did
    few = d.heavy_hitters([1] * 500 + [2] * 400 + [3] * 300, top_k=10, epsilon=1.0, delta=1e-6, seed=2)
    assert len(few) == few.metadata["qualified"] == 3


def test_two_passes_top_k_and_budget():
    data = _zipf_stream()
    budget = d.Budget(2.0, 1e-5)
    rel = d.heavy_hitters(data, top_k=15, epsilon=1.0, delta=1e-6, passes=2, seed=5, budget=budget)
    assert rel.mechanism == "DPSS[two-pass]" and len(rel) == 15
    assert budget.spent().epsilon == pytest.approx(rel.epsilon) and rel.epsilon <= 1.0 and rel.delta <= 1e-6
    vals = [v for _, v in rel.items]
    assert vals == sorted(vals, reverse=True)


def test_retail_top_20_at_epsilon_1():
    try:
        stream = d.datasets.retail()
    except (FileNotFoundError, OSError):  # pragma: no cover - the package ships the retail stream
        pytest.skip("the bundled retail stream is missing")
    keys, counts = np.unique(stream, return_counts=True)
    truth = set(keys[np.argsort(-counts, kind="stable")[:20]].tolist())
    for passes in (1, 2):
        rel = d.heavy_hitters(stream, top_k=20, epsilon=1.0, delta=1e-6, passes=passes)
        assert len(rel) == 20 and rel.metadata["qualified"] >= 20
        # the 20th and 21st counts differ by 45, the noise scale is 1/0.9; one pass may swap in an
        # item SpaceSaving overestimates
        assert len(truth & set(rel.keys())) >= (20 if passes == 2 else 18)


@pytest.mark.parametrize("kwargs,err,match", [
    ({"top_k": 0}, d.ParameterError, "top_k"),
    ({"top_k": -3}, d.ParameterError, "top_k"),
    ({"top_k": 2.5}, d.ParameterError, "top_k"),
    ({"top_k": "5"}, TypeError, "top_k"),
    ({"top_k": True}, TypeError, "top_k"),
    ({"top_k": 5, "k": 10}, d.ParameterError, "not both"),
    ({"top_k": 50, "capacity": 20}, d.ParameterError, "capacity >= 50"),
    ({}, d.ParameterError, "top_k="),
])
def test_bad_top_k_is_a_clear_typed_error(kwargs, err, match):
    with pytest.raises(err, match=match):
        d.heavy_hitters([1, 2, 3], epsilon=1.0, delta=1e-6, **kwargs)


def test_release_methods_refuse_bad_top_k_before_spending():
    ss, mg = d.SpaceSaving(8), d.MisraGries(8)
    ss.update_many([1, 2, 3])
    mg.update_many([1, 2, 3])
    for s in (ss, mg):
        with pytest.raises(d.ParameterError, match="capacity >= 9"):
            s.release(epsilon=1.0, delta=1e-6, top_k=9)
        with pytest.raises(d.ParameterError, match="not both"):
            s.release(epsilon=1.0, delta=1e-6, top_k=2, k=2)
        s.release(epsilon=1.0, delta=1e-6, top_k=2)  # the refusals spent nothing
    with pytest.raises(d.ParameterError, match="k= .* or top_k="):
        d.SpaceSaving(4).release(epsilon=1.0, delta=1e-6)


def test_top_k_capacity():
    assert top_k_capacity(10) == 640 and top_k_capacity(10, 10) == 10
    assert top_k_capacity(_core.MAX_CAPACITY) == _core.MAX_CAPACITY


# -- dpsketch top --top-k on the row-level routes ----------------------------------------------------

@pytest.fixture(scope="module")
def stream_file(tmp_path_factory):
    # 40 keys k0..k39 with counts 600, 590, ...: far above the threshold, 10 apart (≫ the noise)
    items = [f"k{i}" for i in range(40) for _ in range(600 - 10 * i)]
    items += [f"x{i}" for i in range(5000)]
    random.Random(1).shuffle(items)
    p = tmp_path_factory.mktemp("topk") / "items.txt"
    p.write_text("\n".join(items) + "\n")
    return p


@pytest.mark.parametrize("algorithm,passes", [("spacesaving", 1), ("spacesaving", 2), ("misragries", 1)])
def test_cli_top_k_releases_exactly_n_and_prints_them_all(capsys, stream_file, algorithm, passes):
    extra = ["--passes", passes] if passes == 2 else []
    code, out, err = run(capsys, "top", stream_file, "-a", algorithm, "--top-k", 30, "--json", "--seed", 1, *extra)
    assert code == 0, err
    rel = json.loads(out)
    assert len(rel["items"]) == 30  # all 30 printed, not --show's default 25
    assert rel["cli"]["top_k"] == 30 and rel["cli"]["capacity"] == 30 * COUNTERS_PER_ITEM and rel["cli"]["k"] is None
    assert rel["metadata"]["top_k"] == 30 and rel["metadata"]["qualified"] >= 30
    assert {k for k, _ in rel["items"]} == {f"k{i}" for i in range(30)}
    assert "qualified ->" in err and "exact-k" in err and rel["epsilon"] <= 1.0


def test_cli_top_k_header_says_how_many_qualified_and_hints_when_fewer(capsys, stream_file):
    code, out, err = run(capsys, "top", stream_file, "--top-k", 100, "--oversample", 1, "--seed", 1)
    assert code == 0
    assert "item(s) qualified ->" in err and "fewer than --top-k 100" in err and "--oversample" in err


def test_cli_show_and_its_older_spellings(capsys, stream_file):
    for opt in ("--show", "--top", "-n"):
        code, out, err = run(capsys, "top", stream_file, "--top-k", 20, opt, 5, "--seed", 1)
        assert code == 0 and len(out.strip().splitlines()) == 1 + 5  # the table's header and 5 rows
        code, out, err = run(capsys, "top", stream_file, "--top-k", 20, opt, 5, "--json", "--seed", 1)
        rel = json.loads(out)  # the JSON is the whole release whatever --show says
        assert code == 0 and len(rel["items"]) == 20 and rel["cli"]["released"] == 20
    for opt in ("--frequency-k", "--k", "-k"):
        code, out, _ = run(capsys, "top", stream_file, opt, 20, "--json", "--seed", 1, "--show", 0)
        assert code == 0 and json.loads(out)["cli"]["k"] == 20


@pytest.mark.parametrize("argv,match", [
    (["--top-k", 0], "top-k"),
    (["--top-k", "x"], "top-k"),
    (["--top-k", 5, "--k", 10], "--k is a frequency cut"),
    (["--top-k", 5, "--cut", "none"], "--cut does not apply with --top-k"),
    (["--top-k", 5, "-a", "countmin", "--max-stream-length", 10**6], "spacesaving .* and misragries"),
    (["--top-k", 5, "--selection", "gumbel"], "--privacy-id"),
])
def test_cli_top_k_usage_errors(capsys, stream_file, argv, match):
    code, out, err = run(capsys, "top", stream_file, *argv)
    assert code == 2 and out == ""
    assert re.search(match, one_error_line(err))


def test_cli_help_separates_frequency_k_show_and_top_k(capsys):
    code, out, _ = run(capsys, "top", "--help-all")
    text = " ".join(out.split())
    assert code == 0
    assert "--frequency-k K, --k K, -k K" in text and "NOT 'the top K'" in text
    assert "--show N, --top N, -n N" in text and "selects nothing privately" in text
    assert "--top-k N" in text and "exactly N items" in text


def test_cli_top_k_is_refused_where_it_does_not_apply(capsys, tmp_path):
    p = tmp_path / "events.csv"
    p.write_text("t,x\n1,a\n2,b\n")
    code, out, err = run(capsys, "top", p, "--column", "x", "--time-column", "t", "--window", "1h", "--start", 0,
                         "--end", 3600, "--top-k", 3)
    assert code == 2 and "--top-k does not apply to windowed releases" in one_error_line(err)
    code, out, err = run(capsys, "top", p, "--column", "x", "--privacy-id", "t", "--max-rows-per-unit", 2,
                         "--top-k", 3, "--selection", "gumbel")
    assert code == 2 and "--top-k does not apply to the bounded-memory" in one_error_line(err)
    code, out, err = run(capsys, "top", p, "--column", "x", "--privacy-id", "t", "--max-keys-per-unit", 2,
                         "--top-k", 3)
    assert code == 2 and "--selection gumbel" in one_error_line(err)
