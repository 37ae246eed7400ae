"""dpsketch.plan (docs/routes.md, Plans): the plan of a release before any data. Every figure a
plan states equals what the release with the same parameters reports or uses (routing, guarantee, noise,
threshold, interval half-width), and the smallest true count released at probability p agrees
with many seeded runs of the real release."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import dpsketch as d
from dpsketch import Person, Row
from dpsketch.datasets import event_log
from dpsketch.plans import RELEASE_PROBABILITIES


@pytest.fixture(scope="module")
def keys():
    rng = np.random.default_rng(7)
    return (rng.zipf(1.3, 40_000) % 5_000).astype(np.int64)


@pytest.fixture(scope="module")
def log():
    return event_log(20_000, universe=2_000, heavy_users=5, heavy_rows=300, seed=4)


def _same_guarantee(plan, rel):
    assert plan.mechanism == rel.mechanism
    assert plan.method == rel.metadata["method"]
    assert plan.unit == rel.metadata["unit"]
    assert (plan.epsilon, plan.delta, plan.rho) == (rel.epsilon, rel.delta, rel.rho)
    assert plan.neighbours == rel.metadata["neighbours"]


def _same_interval(plan, rel):
    assert plan.interval_half_width == rel.metadata["interval"]["noise_halfwidth"]
    assert plan.level == rel.interval_level


# -- every figure equals the release's ------------------------------------------------------------------


@pytest.mark.parametrize("method", ["dpss", "dpss_two_pass"])
@pytest.mark.parametrize("options", [dict(k=40), dict(k=40, cut=None), dict(k=40, capacity=150),
                                     dict(top_k=5), dict(k=40, public_length=True),
                                     dict(k=40, length_epsilon=0.3, length_delta=1e-7)])
def test_dpss_plan_is_the_release(keys, method, options):
    rel = d.heavy_hitters(keys, epsilon=1.0, delta=1e-6, method=method, seed=11, **options)
    meta = rel.metadata
    # the planning n: the length the release read (the public n, or the n̂ it drew and published)
    n = len(keys) if options.get("public_length") else int(meta["n_used"])
    plan = d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, method=method, n=n, **options)
    _same_guarantee(plan, rel)
    _same_interval(plan, rel)
    assert plan.threshold == rel.threshold
    assert plan.noise["epsilon_used"] == meta["epsilon_used"]
    assert plan.noise["gamma"] == meta["gamma"] and plan.noise["capacity"] == meta["capacity"]
    assert plan.noise["scale"] == pytest.approx(1 / meta["epsilon_used"], rel=1e-12)
    if "top_k" not in options:  # v > τ, or v >= n̂/k when the cut is higher: the plan says which
        assert ("(the n/k cut)" in plan.threshold_rule) == meta["threshold_inclusive"]
    # the released values all pass the plan's threshold
    assert all(v >= plan.threshold if meta["threshold_inclusive"] else v > plan.threshold for _, v in rel.items)


def test_dpss_threshold_without_n_is_a_formula():
    plan = d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, k=40)
    assert isinstance(plan.threshold, str) and "n̂" in plan.threshold
    assert plan.smallest_count_released is None and plan.interval_half_width is not None
    with pytest.raises(d.ParameterError, match="n="):
        plan.release_probability(100)
    public = d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, k=40, unit=Row(public_length=True))
    assert "n/40" in public.threshold and "n̂" not in public.threshold


@pytest.mark.parametrize("options", [dict(k=40), dict(k=40, public_length=True), dict(top_k=5), dict(capacity=60)])
def test_pmg_plan_is_the_release(keys, options):
    rel = d.heavy_hitters(keys, epsilon=1.0, delta=1e-6, method="pmg", seed=5, **options)
    meta = rel.metadata
    n = None if meta.get("n_used") is None else (len(keys) if options.get("public_length") else int(meta["n_used"]))
    plan = d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, method="pmg", n=n, **options)
    _same_guarantee(plan, rel)
    _same_interval(plan, rel)
    assert plan.threshold == rel.threshold
    assert plan.noise["epsilon_used"] == meta["epsilon_used"] and plan.noise["t"] == meta["t"]
    assert plan.noise["capacity"] == meta["capacity"]


@pytest.mark.parametrize("epsilon, delta, k", [(1.0, 1e-6, None), (0.1, 1e-9, 20), (0.5, 1e-4, 5),
                                             (3.0, 1e-12, None), (0.013, 0.2, 50)])
def test_pmg_plan_tau_is_the_release_threshold(keys, epsilon, delta, k):
    """The plan's τ = 1 + 2t is the core's pmg_threshold, the same function the release uses: it
    equals the release's metadata threshold τ for any (ε, δ, k)."""
    from dpsketch._core import release as R

    options = dict(k=k) if k is not None else dict(capacity=64)
    rel = d.heavy_hitters(keys, epsilon=epsilon, delta=delta, method="pmg", seed=3, **options)
    plan = d.plan("heavy_hitters", epsilon=epsilon, delta=delta, method="pmg", **options)
    meta = rel.metadata
    assert plan.noise["tau"] == meta["tau"] == 1 + 2 * meta["t"]
    assert plan.noise["tau"] == R.pmg_threshold(meta["epsilon_used"], meta["delta_mechanism"])
    if k is None:
        assert plan.threshold == rel.threshold == meta["tau"]
    else:
        assert rel.threshold == max(meta["tau"], meta["heavy_hitter_cut"])


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
@pytest.mark.parametrize("top_k", [None, 4])
def test_exact_unit_plan_is_the_release(log, noise, top_k):
    users, items = log
    unit = Person(users, max_keys=3, max_rows_per_key=2)
    rel = d.heavy_hitters(items, epsilon=1.0, delta=1e-6, unit=unit, noise=noise, top_k=top_k, seed=2)
    plan = d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, unit=unit, noise=noise, top_k=top_k)
    _same_guarantee(plan, rel)
    meta = rel.metadata
    assert plan.threshold == rel.threshold == meta["threshold"]
    if noise == "gaussian":
        assert plan.noise["sigma2"] == meta["sigma2"] and plan.noise["sigma"] == meta["sigma"]
    else:
        assert plan.noise["scale"] == meta["laplace_scale"]
    if top_k:
        assert plan.noise["gumbel_scale"] == meta["gumbel_scale"]
    assert plan.interval_half_width is None and "conditional on the released set" in plan.interval
    assert set(plan.smallest_count_released) == set(RELEASE_PROBABILITIES)


def test_bounded_memory_unit_plan_is_the_release(log):
    users, items = log
    unit = Person(users, max_rows=4)
    rel = d.heavy_hitters(items, epsilon=1.0, delta=1e-6, unit=unit, k=20, seed=8)
    meta = rel.metadata
    plan = d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, unit=unit, k=20, n=int(meta["n_used"]))
    _same_guarantee(plan, rel)
    _same_interval(plan, rel)
    assert plan.threshold == rel.threshold
    per_row = meta["per_row_calibration"]
    assert plan.noise["epsilon_used"] == per_row["epsilon_used"] and plan.noise["gamma"] == meta["gamma"]
    assert (plan.noise["epsilon_per_row"], plan.noise["delta_per_row"]) == (per_row["epsilon_per_row"],
                                                                            per_row["delta_per_row"])


@pytest.mark.parametrize("qs,method", [([0.5], "auto"), ([0.25, 0.5, 0.75], "auto"),
                                       (list(np.linspace(0, 1, 21)), "auto"), ([0.1, 0.9], "exp"),
                                       ([0.1, 0.9], "recursive"), ([0.5, 0.5, 0.2], "joint")])
def test_row_quantile_plan_is_the_release(qs, method):
    values = np.random.default_rng(1).normal(50, 10, 2_000)
    rel = d.quantiles(values, qs, bounds=(0, 100), epsilon=0.7, method=method, seed=3)
    plan = d.plan("quantiles", qs=qs, bounds=(0, 100), epsilon=0.7, method=method)
    _same_guarantee(plan, rel)
    meta = rel.metadata
    assert plan.noise["epsilon_used"] == meta["epsilon_used"]
    for key in ("epsilon_per_level", "epsilon_per_recursion_level", "recursion_levels", "utility_sensitivity"):
        assert plan.noise.get(key) == meta.get(key)
    # no accuracy figure is made up where no data-free bound exists
    assert plan.interval_half_width is None and plan.smallest_count_released is None and plan.threshold is None


@pytest.mark.parametrize("privacy", [dict(epsilon=1.0, delta=1e-6), dict(epsilon=1.0), dict(rho=0.05),
                                     dict(rho=0.05, delta=1e-7)])
@pytest.mark.parametrize("space", [dict(bounds=(0.0, 100.0)), dict(universe_bits=10)])
def test_dyadic_unit_quantile_plan_is_the_release(privacy, space):
    rng = np.random.default_rng(4)
    ids = rng.integers(0, 300, 3_000)
    values = rng.integers(0, 100, 3_000)
    unit = Person(ids, max_rows=3)
    rel = d.quantiles(values, [0.1, 0.5], unit=unit, seed=6, **privacy, **space)
    plan = d.plan("quantiles", qs=[0.1, 0.5], unit=unit, **privacy, **space)
    _same_guarantee(plan, rel)
    meta = rel.metadata
    if "sigma2" in meta:
        assert plan.noise["law"] == "discrete_gaussian" and plan.noise["sigma2"] == meta["sigma2"]
    else:
        assert plan.noise["law"] == "discrete_laplace" and plan.noise["scale"] == meta["laplace_scale"]
    for key in ("universe_bits", "exact_levels", "width", "depth"):
        assert plan.noise[key] == meta[key]


# -- routing: the plan and the release never disagree -------------------------------------------------


@pytest.mark.parametrize("unit,options,expected", [
    (Row(), {}, "dpss"), (Row(), {"passes": 2}, "dpss_two_pass"), (Row(), {"method": "pmg"}, "pmg"),
    (Person("u", max_keys=2), {}, "exact"), (Person("u", max_rows=5), {}, "bounded_memory"),
])
def test_auto_resolves_as_the_front_door(unit, options, expected):
    plan = d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, unit=unit, k=10, **options) \
        if expected != "exact" else d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, unit=unit, **options)
    assert plan.method == expected


@pytest.mark.parametrize("call", [
    dict(unit=Person("u", max_keys=2), k=10),  # the exact route takes no k
    dict(unit=Person("u", max_keys=2), capacity=10),
    dict(unit=Person("u", max_rows=2)),  # bounded memory needs k
    dict(unit=Person("u", max_rows=2), k=5, top_k=3),
    dict(k=10, capacity=5),  # DPSS needs capacity >= k
    dict(k=10, passes=3),
    dict(k=10, method="exact"),
    dict(method="pmg"),  # no capacity, no k
    dict(k=10, epsilon=-1.0),
    dict(k=10, level=1.5),
    dict(k=10, n=-1),
])
def test_bad_parameters_are_refused_as_by_the_release(keys, call):
    call = {"epsilon": 1.0, "delta": 1e-6, **call}
    with pytest.raises(d.DPSketchError):
        d.plan("heavy_hitters", **call)
    release_call = {k: v for k, v in call.items() if k not in ("level", "n")}
    if release_call != call:
        return  # level and n are the plan's own options
    if isinstance(call.get("unit"), Person):
        release_call["unit"] = Person(np.arange(len(keys)), **{k: v for k, v in vars(call["unit"]).items()
                                                               if k != "id"})
    with pytest.raises(d.DPSketchError):
        d.heavy_hitters(keys, **release_call)


def test_plan_refuses_unknown_questions():
    with pytest.raises(d.ParameterError, match="heavy_hitters"):
        d.plan("counts", epsilon=1.0, delta=1e-6)
    with pytest.raises(d.ParameterError, match="qs="):
        d.plan("quantiles", bounds=(0, 1), epsilon=1.0)
    with pytest.raises(d.ParameterError):
        d.plan("quantiles", qs=[0.5], bounds=(0, 1), epsilon=1.0, unit=Row(public_length=True))


# -- the table and the dict --------------------------------------------------------------------------


def test_plan_prints_a_short_table_and_serializes():
    for plan in (d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, k=100, n=10**6),
                 d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, unit=Person("user", max_keys=3), top_k=5),
                 d.plan("quantiles", qs=[0.5], bounds=(0, 1), epsilon=1.0)):
        text = str(plan)
        assert len(text.splitlines()) <= 15
        assert plan.mechanism in text and "epsilon=1" in text
        out = json.loads(json.dumps(plan.to_dict()))
        assert out["epsilon"] == plan.epsilon and out["method"] == plan.method
    plan = d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, k=100, n=10**6)
    assert f"p>=0.5 from count {plan.smallest_count_released[0.5]}" in str(plan)
    assert plan.to_dict()["smallest_count_released"] == {"0.5": plan.smallest_count_released[0.5],
                                                         "0.95": plan.smallest_count_released[0.95]}


# -- the smallest count released, against the real release -------------------------------------------

RUNS = 3000


def _release_rate(make_release, count, runs=RUNS):
    hits = 0
    for seed in range(runs):
        rel = make_release(count, seed)
        hits += any(key == 0 for key, _ in rel.items)
    return hits / runs


def _check_against_runs(plan, make_release):
    """For p in 1/2 and 0.95, c = the plan's smallest count: the release's empirical rate of a key
    of true count c and c − 1 matches the plan's probability, and is >= p at c and < p at c − 1,
    within 4.5 standard errors."""
    for p in RELEASE_PROBABILITIES:
        c = plan.smallest_count_released[p]
        assert plan.release_probability(c) >= p > plan.release_probability(c - 1)
        for x in (c - 1, c):
            want = plan.release_probability(x)
            tol = 4.5 * math.sqrt(max(want * (1 - want), 1e-4) / RUNS)
            got = _release_rate(make_release, x)
            assert abs(got - want) <= tol, (p, x, got, want)
            assert (got >= p - tol) if x == c else (got < p + tol)


def _stream(count, n):
    """Key 0 held ``count`` times and key 1 the rest: n rows, two keys (summaries are exact)."""
    return np.concatenate([np.zeros(count, np.int64), np.ones(n - count, np.int64)])


def test_pmg_smallest_count_matches_the_release():
    n = 400
    plan = d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, method="pmg", k=10, capacity=4, n=n)
    _check_against_runs(plan, lambda c, s: d.heavy_hitters(_stream(c, n), epsilon=1.0, delta=1e-6, method="pmg",
                                                           k=10, capacity=4, seed=s))


@pytest.mark.parametrize("method", ["dpss_two_pass", "dpss"])
def test_dpss_smallest_count_matches_the_release(method):
    n = 400
    plan = d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, method=method, k=10, n=n)
    _check_against_runs(plan, lambda c, s: d.heavy_hitters(_stream(c, n), epsilon=1.0, delta=1e-6, method=method,
                                                           k=10, seed=s))


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_exact_unit_smallest_count_matches_the_release(noise):
    def release(c, seed):  # key 0 held by c persons, one row each; key 1 by 50 others
        ids = np.arange(c + 50)
        return d.heavy_hitters(_stream(c, c + 50), epsilon=1.0, delta=1e-6, unit=Person(ids, max_keys=1),
                               noise=noise, seed=seed)

    plan = d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, unit=Person("u", max_keys=1), noise=noise)
    _check_against_runs(plan, release)


def test_release_probability_is_monotone_and_reaches_one():
    plan = d.plan("heavy_hitters", epsilon=0.5, delta=1e-6, k=50, n=50_000)
    probs = [plan.release_probability(c) for c in range(900, 1100, 5)]
    assert probs == sorted(probs) and probs[0] < 0.01 and probs[-1] > 0.99


def test_the_tables_in_docs_are_what_plan_prints():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "routes.md").read_text(encoding="utf-8")
    for plan in (d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, k=100, n=1_000_000),
                 d.plan("heavy_hitters", epsilon=1.0, delta=1e-6, unit=Person("user_id", max_keys=4))):
        assert f"```text\n{plan}\n```" in text
