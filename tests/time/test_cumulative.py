"""Cumulative releases over a series of windows (docs/privacy.md §Cumulative): dpsketch.Cumulative
and its public schedules.

C1: the variance of a prefix is (nodes in it)·σ_node², checked with a chi-square interval on the
sample variance over seeded runs (binary tree at t = 2^j − 1: popcount(t) = j nodes). C2: the
Budget is charged once, L·(node ρ) for a tree and ρ for the disjoint windows. C3: no published node
is a deterministic function of another published node plus exact data (every difference of two
nodes, and of two prefixes, carries fresh noise)."""

from __future__ import annotations

import csv
import io
import json
import math
import re

import numpy as np
import pytest

import dpsketch
from dpsketch import Budget, Cumulative, ParameterError
from dpsketch.errors import BudgetExceededError
from dpsketch.time.cumulative import MAX_HORIZON, node_seed, schedule_for

W, D, HASH = 16, 1, 12345


def _make_cs():
    return dpsketch.CountSketch(W, D, hash_seed=HASH)


def _steps(T, seed=0, n=300):
    rng = np.random.default_rng(seed)
    return [np.minimum(rng.zipf(1.3, n), 200).astype(np.int64) for _ in range(T)]


def _exact_cells(steps, first, last, make=_make_cs):
    tw = make()
    for xs in steps[first - 1:last]:
        tw.update_many(xs)
    return tw.cells().astype(float)


def _feed(c, steps):
    out = []
    for xs in steps:
        out.extend(c.step(xs))
    return out


# -- the schedules ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["binary", "smooth", "windows"])
@pytest.mark.parametrize("T", [1, 2, 3, 5, 8, 13, 16, 33, 100])
def test_prefixes_tile_the_steps_and_no_leaf_is_in_more_than_L_published_nodes(name, T):
    s = schedule_for(name, T)
    assert list(s.leaves) == sorted(set(s.leaves)) and len(s.leaves) == T
    published = []
    for t in range(1, T + 1):
        new = s.new_nodes(t)
        assert not set(new) & set(published)
        published.extend(new)
        nodes = s.prefix_nodes(t)
        assert set(nodes) <= set(published)  # every node of a prefix is published by step t
        steps = [st for n in nodes for st in range(s.steps_of(n)[0], s.steps_of(n)[1] + 1)]
        assert sorted(steps) == list(range(1, t + 1))  # each step through t exactly once
    cover = [sum(1 for (b, m) in published if m << b <= x < (m + 1) << b) for x in s.leaves]
    assert max(cover) == s.nodes_per_element
    if name == "binary":
        assert s.nodes_per_element == T.bit_length()  # ⌊log₂T⌋ + 1 (the spec's ⌈log₂T⌉ + 1 at powers of 2)
        assert s.worst_variance_factor == max(bin(t).count("1") for t in range(1, T + 1)) * T.bit_length()
    if name == "windows":
        assert s.nodes_per_element == 1 and s.worst_variance_factor == T
    if name == "smooth" and T > 1:
        assert max(len(s.prefix_nodes(t)) for t in range(1, T + 1)) <= s.ones


def test_auto_takes_the_windows_for_short_horizons_and_a_tree_past_the_crossover():
    assert schedule_for("auto", 8).name == "windows" and schedule_for("auto", 9).name == "smooth"
    for T in (16, 64, 1000, 8760):
        s = schedule_for("auto", T)
        assert s.name in ("binary", "smooth")
        assert s.worst_variance_factor < T
    # windows against the binary tree alone: the tree's worst prefix is (max popcount)·L ≤ L² window
    # variances, so it wins whenever T > L², and from T = 21 on at every horizon
    def binary_factor(T):  # (max popcount over 1..T)·L, as schedule_for("binary", T) computes it
        return ((T + 1).bit_length() - 1) * T.bit_length()

    assert all(binary_factor(T) == schedule_for("binary", T).worst_variance_factor for T in (1, 7, 13, 20, 21, 100))
    wins = [T for T in range(1, 2000) if binary_factor(T) < T]
    assert all(T in wins for T in range(1, 2000) if T > T.bit_length() ** 2)
    assert max(set(range(1, 2000)) - set(wins)) == 20 and min(wins) == 13


def test_horizon_and_schedule_are_checked():
    with pytest.raises(ValueError):
        schedule_for("binary", 0)
    with pytest.raises(ValueError):
        schedule_for("binary", MAX_HORIZON + 1)
    with pytest.raises(ParameterError, match="schedule must be one of"):
        schedule_for("quadtree", 8)


# -- C1: the prefix variance ---------------------------------------------------------------------

def _chi2_interval(n, alpha):
    st = pytest.importorskip("scipy.stats")
    return st.chi2.ppf(alpha / 2, n - 1) / (n - 1), st.chi2.ppf(1 - alpha / 2, n - 1) / (n - 1)


@pytest.mark.parametrize("name,T,ts", [("binary", 16, [1, 3, 7, 15]), ("smooth", 16, [1, 6, 11, 16])])
def test_prefix_variance_is_nodes_times_the_node_variance(name, T, ts):
    runs, rho = 250, 0.02
    steps = _steps(T, seed=3, n=200)
    residuals = {t: [] for t in ts}
    sigma2 = None
    for seed in range(runs):
        c = Cumulative(horizon=T, make=_make_cs, rho=rho, schedule=name, seed=seed)
        rels = _feed(c, steps)
        if sigma2 is None:
            sigma2 = rels[0].metadata["noise_param"]  # σ_node² of the discrete Gaussian (D·L/(2ρ) rounded)
            assert sigma2 == pytest.approx(D * c.nodes_per_element / (2 * rho), rel=1e-6)
        for t in ts:
            p = c.prefix(t)
            noisy = sum(s.cells().astype(float) for s in p.sketches)
            residuals[t].append((noisy - _exact_cells(steps, 1, t)).ravel())
    lo, hi = _chi2_interval(runs * W * D, 1e-4)
    for t in ts:
        r = np.concatenate(residuals[t])
        nodes = len(c.schedule.prefix_nodes(t))
        if name == "binary":
            assert nodes == bin(t).count("1")
        ratio = np.var(r, ddof=1) / (nodes * sigma2)
        assert lo < ratio < hi, (t, nodes, ratio)
        # the interval has power: one node more or fewer is outside it
        assert not lo < np.var(r, ddof=1) / ((nodes + 1) * sigma2) < hi
        if nodes > 1:
            assert not lo < np.var(r, ddof=1) / ((nodes - 1) * sigma2) < hi
        assert abs(r.mean()) < 5 * math.sqrt(nodes * sigma2 / len(r))  # unbiased


def test_smooth_prefixes_have_the_same_variance_at_every_step():
    s = schedule_for("smooth", 100)
    sizes = {len(s.prefix_nodes(t)) for t in range(1, 101)}
    assert sizes <= set(range(1, s.ones + 1)) and max(sizes) == s.ones
    assert s.worst_variance_factor < schedule_for("binary", 100).worst_variance_factor


# -- C2: the budget ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["binary", "smooth"])
def test_budget_is_charged_L_times_the_node_rho_once(name):
    b = Budget(rho=1.0)
    c = Cumulative(horizon=16, make=_make_cs, rho=0.9, schedule=name, budget=b)
    assert len(b.ledger) == 1 and b.ledger[0].mechanism == c.mechanism
    L = c.nodes_per_element
    assert b.ledger[0].rho == pytest.approx(L * c.node_rho, rel=1e-12) and b.ledger[0].rho <= 0.9
    rels = _feed(c, _steps(16))
    assert len(b.ledger) == 1  # publishing the nodes charges nothing more
    assert all(r.rho <= c.node_rho * (1 + 1e-12) for r in rels)
    assert {r.metadata["composition"]["nodes_per_element"] for r in rels} == {L}
    # the charge covers a leaf's L nodes: their ρ adds up to at most the series' ρ
    first = [r for r in rels if r.metadata["node"]["first_step"] == 1]
    assert len(first) == L and sum(r.rho for r in first) <= b.ledger[0].rho * (1 + 1e-12)
    with pytest.raises(BudgetExceededError):
        Cumulative(horizon=16, make=_make_cs, rho=0.2, schedule=name, budget=b)
    assert len(b.ledger) == 1


def test_budget_is_charged_once_for_disjoint_windows():
    b = Budget(rho=1.0)
    c = Cumulative(horizon=8, make=_make_cs, rho=1.0, schedule="windows", budget=b)
    rels = _feed(c, _steps(8))
    assert len(rels) == 8 and len(b.ledger) == 1 and b.ledger[0].rho == 1.0
    assert all(r.rho == pytest.approx(1.0) for r in rels)  # each window at the full ρ: parallel composition
    # the same eight windows charged one by one do not fit
    b2 = Budget(rho=1.0)
    dpsketch.PrivateCountSketch(W, D, rho=1.0, budget=b2)
    with pytest.raises(BudgetExceededError):
        dpsketch.PrivateCountSketch(W, D, rho=1.0, budget=b2)


def test_pure_dp_nodes_at_epsilon_over_L():
    b = Budget(2.0)
    c = Cumulative(horizon=16, make=_make_cs, epsilon=1.0, schedule="binary", budget=b)
    assert c.node_epsilon == pytest.approx(1.0 / 5) and c.epsilon <= 1.0
    assert b.ledger[0].epsilon == pytest.approx(5 * c.node_epsilon) and b.ledger[0].rho == 0
    rels = _feed(c, _steps(4))
    assert all(r.metadata["noise"] == "discrete_laplace" and r.epsilon <= c.node_epsilon * (1 + 1e-12) for r in rels)


def test_rho_with_delta_reports_the_conversion():
    c = Cumulative(horizon=4, make=_make_cs, rho=0.5, delta=1e-6, schedule="binary")
    assert c.epsilon == pytest.approx(dpsketch.mechanisms.private_sketches.zcdp_to_dp(c.rho, 1e-6))
    rel = c.step(_steps(1)[0])[0]
    assert rel.metadata["composition"]["series_delta"] == 1e-6


# -- C3: fresh noise in every difference -----------------------------------------------------------

@pytest.mark.parametrize("name", ["binary", "smooth", "windows"])
def test_every_difference_of_published_nodes_carries_fresh_noise(name):
    T = 8
    steps = _steps(T, seed=5)
    runs = []
    for seed in range(12):
        c = Cumulative(horizon=T, make=_make_cs, rho=0.5, schedule=name, seed=seed)
        _feed(c, steps)
        runs.append(c)
    nodes = runs[0].published_nodes
    assert all(r.published_nodes == nodes for r in runs)
    noise = {}
    for n in nodes:
        first, last = runs[0].schedule.steps_of(n)
        exact = _exact_cells(steps, first, last)
        noise[n] = np.stack([r.node(*n).cells() - exact for r in runs])  # (runs, D, W)
        assert np.all(noise[n].var(axis=0) > 0)  # each node is its exact sum plus noise
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            # (node a − node b) − (exact a − exact b): varies across seeds in every cell
            assert np.all((noise[a] - noise[b]).var(axis=0) > 0), (a, b)
    for t in range(2, T + 1):  # consecutive prefixes: their difference is never exact data
        dif = [sum(r.node(*n).cells() for n in r.schedule.prefix_nodes(t)) -
               sum(r.node(*n).cells() for n in r.schedule.prefix_nodes(t - 1)) for r in runs]
        assert np.all(np.stack(dif).var(axis=0) > 0)


def test_nodes_are_reproducible_with_a_seed_and_independent_streams():
    steps = _steps(6)
    a = Cumulative(horizon=6, make=_make_cs, rho=0.5, schedule="binary", seed=9)
    b = Cumulative(horizon=6, make=_make_cs, rho=0.5, schedule="binary", seed=9)
    ra, rb = _feed(a, steps), _feed(b, steps)
    assert all(np.array_equal(x.sketch.cells(), y.sketch.cells()) for x, y in zip(ra, rb))
    assert all(r.metadata["reproducible_not_secret"] for r in ra)
    assert len({node_seed(9, *n) for n in a.published_nodes}) == len(a.published_nodes)
    assert node_seed(None, 0, 0) is None


# -- answers ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["binary", "smooth", "windows"])
def test_prefix_sums_the_exact_steps(name):
    # with (nearly) no noise the published prefix cells are the exact cells of steps 1..t
    steps = _steps(11, seed=2)
    c = Cumulative(horizon=11, make=_make_cs, rho=1e7, schedule=name, seed=1)
    for t, xs in enumerate(steps, start=1):
        c.step(xs)
        p = c.prefix()
        assert p.t == t
        got = sum(s.cells() for s in p.sketches)
        assert np.array_equal(got, _exact_cells(steps, 1, t))
    # the estimate is the sum of the nodes' estimates; top ranks public candidates by it
    p = c.prefix(7)
    keys = np.arange(1, 30)
    assert np.allclose(p.estimate_many(keys), [sum(float(s.estimate(int(k))) for s in p.sketches) for k in keys])
    top = p.top(keys.tolist(), k=3)
    assert [v for _, v in top] == sorted((v for _, v in top), reverse=True) and len(top) == 3


def test_count_min_prefix_never_underestimates_and_its_noisy_total_is_close():
    make = lambda: dpsketch.CountMin(64, 4, hash_seed=7)  # noqa: E731
    steps = _steps(10, seed=4, n=500)
    c = Cumulative(horizon=10, make=make, rho=2.0, schedule="binary", seed=3)
    _feed(c, steps)
    p = c.prefix(10)
    truth = np.bincount(np.concatenate(steps), minlength=201)
    est = p.estimate_many(np.arange(1, 201))
    assert np.all(est >= truth[1:201])
    assert abs(p.noisy_total() - 5000) < 200
    cs = Cumulative(horizon=2, make=_make_cs, rho=1.0, seed=1)
    cs.step(np.array([1, 2]))
    with pytest.raises(TypeError, match="no noisy total"):
        cs.prefix().noisy_total()


def test_dyadic_prefix_answers_by_descent_over_the_summed_nodes():
    make = lambda: dpsketch.DyadicCountSketch(10, width=64, depth=3, hash_seed=5)  # noqa: E731
    rng = np.random.default_rng(8)
    c = Cumulative(horizon=12, make=make, rho=4.0, schedule="binary", seed=2)
    data = []
    for _ in range(12):
        x = rng.integers(0, 1024, 400)
        x[:80] = 77
        data.append(x)
        c.step(x)
    allx = np.concatenate(data)
    # one node: the prefix's descent is the node's own quantile and heavy hitters
    one = c.prefix(1)
    assert len(one) == 1
    for q in (0.1, 0.5, 0.9):
        assert one.quantile(q) == one.sketches[0].quantile(q)
    assert one.heavy_hitters(40) == one.sketches[0].heavy_hitters(40)
    p = c.prefix(12)
    assert len(p) == 2 and p.rank(512) == pytest.approx(sum(s.rank(512) for s in p.sketches))
    assert abs(p.noisy_total() - len(allx)) < 50
    assert abs(p.quantile(0.5) - np.quantile(allx, 0.5)) < 40
    assert [k for k, _ in p.heavy_hitters(len(allx) / 20)] == [77]
    with pytest.raises(TypeError):
        p.estimate(77)


def test_nothing_exact_is_published():
    c = Cumulative(horizon=4, make=_make_cs, rho=1.0, schedule="binary")
    rels = _feed(c, _steps(4))
    assert all(r.sketch.n is None and r.n is None for r in rels)
    assert not re.search(r"\bn=", repr(c)) and not any(re.search(r"\bn=", repr(r.sketch)) for r in rels)
    assert all(not r.metadata["reproducible_not_secret"] for r in rels)


def test_parameters_are_checked():
    with pytest.raises(TypeError, match="non-private"):
        Cumulative(horizon=4, make=lambda: dpsketch.SpaceSaving(4), rho=1.0)
    with pytest.raises(ParameterError, match="exactly one"):
        Cumulative(horizon=4, make=_make_cs, rho=1.0, epsilon=1.0)
    with pytest.raises(ParameterError, match="node_options"):
        Cumulative(horizon=4, make=_make_cs, rho=1.0, node_options={"noise_allocation": "joint"})
    def nonempty():
        s = _make_cs()
        s.update(1)
        return s
    with pytest.raises(ValueError, match="empty"):
        Cumulative(horizon=4, make=nonempty, rho=1.0)
    c = Cumulative(horizon=2, make=_make_cs, rho=1.0)
    with pytest.raises(ValueError, match="shape and hash seed"):
        c.add(dpsketch.CountSketch(W, D, hash_seed=HASH + 1))
    with pytest.raises(ValueError, match="not fed yet"):
        c.prefix(1)
    c.step(None)
    c.add(_make_cs())
    with pytest.raises(ValueError, match="horizon"):
        c.step([1])


def test_time_driven_series_routes_events_into_public_windows():
    rng = np.random.default_rng(6)
    hours = 6
    times = rng.uniform(-3600, (hours + 1) * 3600, 5000)  # some before the first window, some after the last
    items = np.minimum(rng.zipf(1.3, 5000), 200).astype(np.int64)
    c = Cumulative(horizon=hours, make=_make_cs, rho=1e7, schedule="binary", seed=4)
    half = len(items) // 2
    steps = list(c.releases([(items[:half], times[:half]), (items[half:], times[half:])], period="1h", start=0))
    assert [s.step for s in steps] == list(range(1, hours + 1))
    assert [s.window["start_ns"] for s in steps] == [i * 3600 * 10**9 for i in range(hours)]
    for s in steps:  # (nearly) no noise: the prefix is the exact sketch of the events in windows 0..s-1
        inside = (times >= 0) & (times < s.step * 3600)
        want = _make_cs()
        want.update_many(items[inside])
        assert np.array_equal(sum(n.cells() for n in s.prefix.sketches), want.cells())
    assert sum(len(s.nodes) for s in steps) == len(c.published_nodes)
    with pytest.raises(ValueError, match="fresh series"):
        list(c.releases([], period="1h", start=0))


# -- CLI: top --window --cumulative ------------------------------------------------------------------

@pytest.fixture(scope="module")
def int_event_csv(tmp_path_factory):
    rng = np.random.default_rng(11)
    n = 40_000
    t = rng.uniform(0, 6 * 3600, n)
    q = np.minimum(rng.zipf(1.3, n), 10**6).astype(np.int64)
    q[q == 3] = -7  # a negative key: the universe maps int64 to [0, 2^64) and back
    path = tmp_path_factory.mktemp("cum") / "events.csv"
    with open(path, "w") as f:
        f.write("item,ts\n")
        for qi, ti in zip(q.tolist(), t.tolist()):
            f.write(f"{qi},{ti:.3f}\n")
    return path, q, t


CUM_ARGS = ["--column", "item", "--int-keys", "--time-column", "ts", "--window", "1h", "--start", "0",
            "--end", "21600", "--cumulative", "--k", "40"]


def test_cli_cumulative_json_lines_one_per_window(capsys, int_event_csv):
    from conftest import run_cli

    path, q, t = int_event_csv
    code, out, err = run_cli(capsys, "top", path, *CUM_ARGS, "--schedule", "binary", "--seed", 2, "--json")
    assert code == 0, err
    objs = [json.loads(line) for line in out.splitlines()]
    assert [o["step"] for o in objs] == list(range(1, 7))
    for o in objs:
        end = o["window"]["end_ns"] / 1e9
        truth = {int(k): int(c) for k, c in zip(*np.unique(q[t < end], return_counts=True))}
        keys = [k for k, _ in o["items"]]
        assert keys[:2] == [1, 2]  # the heaviest keys since the start
        if o["step"] >= 3:  # counts since the start grow past the noise: the negative key is found
            assert keys[2] == -7
        assert all(abs(v - truth[k]) < 0.1 * truth[k] + 100 for k, v in o["items"])
        assert o["cli"]["exact_counts_withheld"] and o["mechanism"] == "Cumulative[binary, PrivateDyadicCountSketch]"
        assert abs(o["noisy_total"] - (t < end).sum()) < 300
        assert o["composition"] is None or o["composition"]["nodes_per_element"] == 3
    spent = re.search(r"spent: epsilon=([0-9.]+), delta=([0-9.e-]+)", err)
    assert 0.99 < float(spent.group(1)) <= 1.0 and float(spent.group(2)) <= 1e-6  # charged once, within (ε, δ)
    code, out2, _ = run_cli(capsys, "top", path, *CUM_ARGS, "--schedule", "binary", "--seed", 2, "--csv")
    rows = list(csv.DictReader(io.StringIO(out2)))
    assert rows[0]["item"] == "1" and float(rows[0]["noisy_count"]) == objs[0]["items"][0][1]


def test_cli_cumulative_refusals(capsys, int_event_csv):
    from conftest import one_error_line, run_cli

    path = int_event_csv[0]
    no_int = [a for a in CUM_ARGS if a != "--int-keys"]
    for extra, needle in (
        (no_int, "--cumulative needs --int-keys"),
        ([*CUM_ARGS, "--algorithm", "countmin"], "needs --algorithm countsketch"),
        ([*CUM_ARGS, "--follow"], "--follow does not apply with --cumulative"),
        ([a for a in CUM_ARGS if a != "--cumulative"] + ["--schedule", "binary"], "--schedule applies with --cumulative"),
        (["--column", "item", "--cumulative"], "--cumulative applies to windowed releases"),
    ):
        code, out, err = run_cli(capsys, "top", path, *extra)
        assert code == 2 and out == "" and needle in one_error_line(err), (extra, err)
