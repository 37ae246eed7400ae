"""In-memory private quantiles (docs/privacy.md §In-memory quantiles): the exponential mechanism
against its exact interval distribution, JointExp against brute force over every interval vector,
the recursive split's budget, monotonicity, errors and the log-bucket path."""

import itertools
import math

import numpy as np
import pytest

import dpsketch as dp
from dpsketch.mechanisms import quantiles as Q
from dpsketch._core.noise import SecureRng

st = pytest.importorskip("scipy.stats")


def _chi2_pvalue(counts, probs):
    counts, probs = np.asarray(counts, dtype=float), np.asarray(probs, dtype=float)
    keep = probs > 0
    assert counts[~keep].sum() == 0, "an outcome of probability 0 was drawn"
    return st.chisquare(counts[keep], probs[keep] * counts.sum()).pvalue


# -- the exponential mechanism --------------------------------------------------------------------


@pytest.mark.parametrize("q", [0.5, 0.2, 1.0])
def test_exp_sampler_matches_exact_interval_distribution(q):
    xs = np.array([1.0, 2.0, 2.0, 5.0, 9.0])
    lo, hi, eps = 0.0, 10.0, 1.5
    edges = np.concatenate(([lo], xs, [hi]))
    lengths = np.diff(edges)
    sens = max(q, 1 - q)
    w = lengths * np.exp(-eps / (2 * sens) * np.abs(np.arange(len(xs) + 1) - q * len(xs)))
    probs = w / w.sum()
    rng = SecureRng(7)
    draws = np.array([Q._exp_quantile(rng, xs, lo, hi, q, eps) for _ in range(20_000)])
    assert ((draws >= lo) & (draws <= hi)).all()
    # the interval each draw lies in (empty intervals between the two 2.0s have probability 0)
    idx = np.searchsorted(edges, draws, side="right") - 1
    counts = np.bincount(np.minimum(idx, len(xs)), minlength=len(xs) + 1)
    assert _chi2_pvalue(counts, probs) > 1e-4
    # uniform within the interval: the position inside the longest interval is flat
    k = int(np.argmax(probs))
    inside = (draws[idx == k] - edges[k]) / lengths[k]
    assert st.kstest(inside, "uniform").pvalue > 1e-4


def test_exp_sampler_detects_a_wrong_scale():
    """The χ² comparison above has power: a sampler at twice the ε fails it."""
    xs = np.array([1.0, 2.0, 2.0, 5.0, 9.0])
    edges = np.concatenate(([0.0], xs, [10.0]))
    w = np.diff(edges) * np.exp(-1.5 / 2 * np.abs(np.arange(6) - 2.5))
    rng = SecureRng(8)
    draws = np.array([Q._exp_quantile(rng, xs, 0.0, 10.0, 0.5, 3.0) for _ in range(20_000)])
    counts = np.bincount(np.searchsorted(edges, draws, side="right") - 1, minlength=6)[:6]
    assert _chi2_pvalue(counts, w / w.sum()) < 1e-6


# -- JointExp against brute force -----------------------------------------------------------------


def _brute_joint(xs, lo, hi, qs, eps):
    """Every non-decreasing interval vector with its exact probability: weight
    exp(−ε/4·Σ_j |n_j − (q_j − q_{j−1})n|)·Π_runs ℓ^r/r!."""
    n, m = len(xs), len(qs)
    edges = np.concatenate(([lo], xs, [hi]))
    lengths = np.diff(edges)
    levels = [0.0, *qs, 1.0]
    out = {}
    for idx in itertools.combinations_with_replacement(range(n + 1), m):
        pos = [0, *idx, n]
        u = -sum(abs((pos[j + 1] - pos[j]) - (levels[j + 1] - levels[j]) * n) for j in range(m + 1))
        vol = 1.0
        for b, grp in itertools.groupby(idx):
            r = len(list(grp))
            vol *= lengths[b] ** r / math.factorial(r)
        out[idx] = math.exp(eps / 4 * u) * vol
    return out


@pytest.mark.parametrize("xs,qs", [
    ([1.0, 2.0, 4.0, 7.0], [0.25, 0.5, 0.75]),
    ([1.0, 1.0, 3.0, 8.0, 8.5], [0.1, 0.9]),
    ([2.0, 6.0], [0.3, 0.4, 0.5, 0.95]),  # more levels than values: runs in one interval
    ([], [0.5, 0.6]),
])
def test_joint_exp_normaliser_and_sampler_match_brute_force(xs, qs):
    xs, lo, hi, eps = np.array(xs), 0.0, 10.0, 2.0
    exact = _brute_joint(xs, lo, hi, qs, eps)
    tables = Q._JointTables(xs, lo, hi, np.array(qs), eps)
    assert tables.log_normalizer() == pytest.approx(math.log(sum(exact.values())), rel=1e-9, abs=1e-9)
    rng = SecureRng(11)
    draws = 20_000
    seen = {}
    for _ in range(draws):
        key = tuple(tables.sample_intervals(rng))
        seen[key] = seen.get(key, 0) + 1
    assert set(seen) <= {k for k, v in exact.items() if v > 0}
    if sum(v > 0 for v in exact.values()) == 1:
        return
    keys = sorted(exact)
    total = sum(exact.values())
    probs = np.array([exact[k] / total for k in keys])
    counts = np.array([seen.get(k, 0) for k in keys])
    # pool the rare outcomes so that every expected count is at least 5
    rare = probs * draws < 5
    p = np.append(probs[~rare], probs[rare].sum())
    c = np.append(counts[~rare], counts[rare].sum())
    assert _chi2_pvalue(c, p) > 1e-4


def test_joint_exp_values_lie_in_their_intervals_sorted():
    xs = np.array([1.0, 2.0, 4.0, 7.0])
    tables = Q._JointTables(xs, 0.0, 10.0, np.array([0.2, 0.21, 0.22, 0.8]), 0.5)
    rng = SecureRng(3)
    for _ in range(200):
        v = tables.sample(rng)
        assert (np.diff(v) >= 0).all() and v[0] >= 0 and v[-1] <= 10


def test_window_logsumexp_against_direct_sums():
    x = np.log(np.random.default_rng(0).uniform(0, 1, 37))
    x[5] = -np.inf
    for width in (1, 2, 3, 7, 37, 50):
        got = Q._window_logsumexp(x, width)
        want = [np.logaddexp.reduce(x[max(0, e - width + 1): e + 1]) for e in range(len(x))]
        np.testing.assert_allclose(got, want, rtol=1e-12)


# -- the recursive split --------------------------------------------------------------------------


@pytest.mark.parametrize("m,levels", [(1, 1), (2, 2), (3, 2), (4, 3), (7, 3), (8, 4), (100, 7)])
def test_recursion_levels(m, levels):
    assert Q.recursion_levels(m) == levels
    # the split actually nests that deep: count the sub-problems on the path to each level
    depth = {}

    def walk(i0, i1, d):
        if i0 >= i1:
            return
        mid = (i0 + i1) // 2
        depth[mid] = d
        walk(i0, mid, d + 1)
        walk(mid + 1, i1, d + 1)

    walk(0, m, 1)
    assert max(depth.values()) == levels


def test_recursive_metadata_charges_epsilon_per_level():
    rel = dp.quantiles(np.arange(100.0), np.linspace(0.05, 0.95, 19), bounds=(0, 100), epsilon=1.0,
                       method="recursive", seed=1)
    assert rel.metadata["recursion_levels"] == 5
    assert rel.metadata["epsilon_per_recursion_level"] * 5 == pytest.approx(rel.epsilon)


# -- the front end ---------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["exp", "joint", "recursive", "auto"])
def test_accurate_at_large_epsilon_and_monotone(method):
    x = np.random.default_rng(5).normal(0, 1, 2000)
    qs = [0.9, 0.1, 0.5, 0.25, 0.5]
    rel = dp.quantiles(x, qs, bounds=(-5, 5), epsilon=50.0, method=method, seed=2)
    assert [q for q, _ in rel.items] == qs
    got = dict(rel.items)
    s = np.sort(x)
    for q in qs:
        assert abs(np.searchsorted(s, got[q]) - q * len(x)) < 30
    order = sorted(set(qs))
    assert all(got[a] <= got[b] for a, b in zip(order, order[1:]))
    assert rel.values() == [v for _, v in rel.items]


@pytest.mark.parametrize("method", ["exp", "joint", "recursive"])
@pytest.mark.parametrize("n", [0, 1, 4])
def test_monotone_in_q_at_tiny_n(method, n):
    qs = np.linspace(0, 1, 9)
    for seed in range(40):
        x = np.random.default_rng(seed).uniform(0, 1, n)
        vals = dp.quantiles(x, qs, bounds=(0, 1), epsilon=0.1, method=method, seed=seed).values()
        assert all(a <= b for a, b in zip(vals, vals[1:]))
        assert all(0 <= v <= 1 for v in vals)


def test_auto_choice_and_guarantee():
    x = np.arange(50.0)
    pick = {m: dp.quantiles(x, np.linspace(0.1, 0.9, m), bounds=(0, 50), epsilon=1, seed=1).metadata["method"]
            for m in (1, Q.JOINT_MAX_LEVELS, Q.JOINT_MAX_LEVELS + 1)}
    assert pick == {1: "exp", Q.JOINT_MAX_LEVELS: "joint", Q.JOINT_MAX_LEVELS + 1: "recursive"}
    rel = dp.quantiles(x, 0.5, bounds=(0, 50), epsilon=0.3, seed=1)
    g = rel.guarantee
    assert (g.epsilon, g.delta, g.rho, g.neighbours, g.reproducible_not_secret) == (rel.epsilon, 0.0, None, "add_remove", True)
    assert rel.epsilon <= 0.3 and rel.n is None
    assert rel.metadata["bounds"] == [0.0, 50.0] and rel.metadata["out_of_bounds"] == "clamped"
    assert "n" not in rel.metadata and rel.to_dict()["n"] is None  # the count is never released


def test_seeded_runs_reproduce_and_differ_by_seed():
    x = np.random.default_rng(0).uniform(0, 1, 300)
    a = dp.quantiles(x, [0.1, 0.5], bounds=(0, 1), epsilon=1, seed=4).values()
    assert a == dp.quantiles(x, [0.1, 0.5], bounds=(0, 1), epsilon=1, seed=4).values()
    assert a != dp.quantiles(x, [0.1, 0.5], bounds=(0, 1), epsilon=1, seed=5).values()
    assert dp.quantiles(x, [0.5], bounds=(0, 1), epsilon=1).metadata["reproducible_not_secret"] is False


def test_values_outside_bounds_are_clamped():
    # half the values far above the range count as sitting at its top: the 0.25-quantile is the
    # median of the rest, the 0.75-quantile the top
    x = np.concatenate((np.random.default_rng(1).uniform(0, 10, 2000), np.full(2000, 1e9)))
    lo, hi = dp.quantiles(x, [0.25, 0.75], bounds=(0, 10), epsilon=5, method="exp", seed=1).values()
    assert 4.5 < lo < 5.5 and hi > 9.9


def test_nan_is_dropped_and_inf_clamped_value_by_value():
    # No value decides between an error and a release: NaN (and None) drop out, ±inf sit at the
    # bounds. Same seed, same draws: the answers equal those of the cleaned data.
    x = np.random.default_rng(2).uniform(0, 10, 500)
    dirty = np.concatenate((x, [np.nan, np.inf, -np.inf, np.nan]))
    clean = np.concatenate((x, [10.0, 0.0]))
    for method in ("exp", "joint", "recursive"):
        got = dp.quantiles(dirty, [0.1, 0.5, 0.9], bounds=(0, 10), epsilon=1, method=method, seed=3)
        want = dp.quantiles(clean, [0.1, 0.5, 0.9], bounds=(0, 10), epsilon=1, method=method, seed=3)
        assert got.values() == want.values()
    assert dp.quantiles([1.0, None, 2.0], 0.5, bounds=(0, 10), epsilon=1, seed=4).values() == \
        dp.quantiles([1.0, 2.0], 0.5, bounds=(0, 10), epsilon=1, seed=4).values()
    log = dp.quantiles([np.inf, np.nan, 5.0], 0.5, bounds=(1, 100), epsilon=1, scale="log", seed=5)
    assert log.values() == dp.quantiles([100.0, 5.0], 0.5, bounds=(1, 100), epsilon=1, scale="log", seed=5).values()
    ints = dp.quantiles([np.inf, -np.inf, np.nan, 3], 0.5, bounds=(0, 9), epsilon=1, integer=True, seed=6)
    assert ints.values() == dp.quantiles([9, 0, 3], 0.5, bounds=(0, 9), epsilon=1, integer=True, seed=6).values()
    only_nan = dp.quantiles([np.nan, np.nan], [0.5], bounds=(0, 1), epsilon=1, seed=7)  # released like no data
    assert only_nan.values() == dp.quantiles([], [0.5], bounds=(0, 1), epsilon=1, seed=7).values()


@pytest.mark.parametrize("bad,err", [
    ([[1.0, 2.0]], dp.ParameterError),
    (["a", "b"], TypeError),
    ([True, False], TypeError),
])
def test_bad_values(bad, err):
    with pytest.raises(err):
        dp.quantiles(bad, 0.5, bounds=(0, 1), epsilon=1)


def test_bad_parameters():
    x = [0.5]
    with pytest.raises(dp.ParameterError, match="bounds"):
        dp.quantiles(x, 0.5, bounds=None, epsilon=1)
    with pytest.raises(dp.ParameterError, match="lo < hi"):
        dp.quantiles(x, 0.5, bounds=(1, 1), epsilon=1)
    with pytest.raises(dp.ParameterError, match="levels"):
        dp.quantiles(x, [0.5, 1.5], bounds=(0, 1), epsilon=1)
    with pytest.raises(dp.ParameterError):
        dp.quantiles(x, [], bounds=(0, 1), epsilon=1)
    with pytest.raises(dp.ParameterError, match="method"):
        dp.quantiles(x, 0.5, bounds=(0, 1), epsilon=1, method="dyadic")
    with pytest.raises(dp.ParameterError, match="epsilon"):
        dp.quantiles(x, 0.5, bounds=(0, 1), epsilon=0)
    with pytest.raises(dp.ParameterError, match="min_positive"):
        dp.quantiles(x, 0.5, bounds=(0, 1), epsilon=1, scale="log")
    with pytest.raises(dp.ParameterError, match="relative_accuracy"):
        dp.quantiles(x, 0.5, bounds=(0.1, 1), epsilon=1, scale="log", relative_accuracy=1.0)


def test_budget_is_charged_and_refuses_overspend():
    b = dp.Budget(1.0)
    dp.quantiles([0.2, 0.4], [0.5], bounds=(0, 1), epsilon=0.75, budget=b, seed=1)
    assert float(b.spent().epsilon) == pytest.approx(0.75)
    with pytest.raises(dp.errors.BudgetExceededError):
        dp.quantiles([0.2, 0.4], [0.5], bounds=(0, 1), epsilon=0.5, budget=b, seed=1)


# -- the log-bucket path ---------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_log_scale_relative_accuracy_at_the_tails(alpha):
    """Heavy-tailed latencies: each released value is a bucket representative, within relative
    error α of a value whose rank is close to the target, from the 1st to the 99.9th percentile."""
    x = np.exp(np.random.default_rng(3).normal(0, 2.5, 50_000))
    qs = [0.001, 0.01, 0.5, 0.99, 0.999]
    rel = dp.quantiles(x, qs, bounds=(1e-6, 1e6), epsilon=5.0, scale="log", relative_accuracy=alpha, seed=9)
    gamma = (1 + alpha) / (1 - alpha)
    s = np.sort(x)
    for q, v in rel.items:
        k = math.log(v * (gamma + 1) / 2) / math.log(gamma)
        assert k == pytest.approx(round(k), abs=1e-6)  # a representative 2γ^k/(γ+1)
        r = int(q * len(x))
        near = s[max(0, r - 25): r + 25]
        assert np.min(np.abs(v - near) / near) <= alpha


def test_integer_mode_answers_inside_heavy_ties():
    """Values with heavy ties: the continuous mechanism can only answer between distinct values, so
    a target inside a pile of copies costs about half the pile; with integer=True the copies are
    spread over [v, v + 1) and the answer is the tied value itself."""
    x = np.concatenate((np.full(3000, 7), np.full(3000, 20), np.arange(100)))
    s = np.sort(x)

    def rank_err(vals, qs):
        lo, hi = np.searchsorted(s, vals, "left"), np.searchsorted(s, vals, "right")
        t = np.asarray(qs) * len(s)
        return np.maximum(0, np.maximum(lo - t, t - hi))

    qs = [0.25, 0.75]
    plain = dp.quantiles(x, qs, bounds=(0, 1000), epsilon=1, method="joint", seed=1).values()
    whole = dp.quantiles(x, qs, bounds=(0, 1000), epsilon=1, method="joint", integer=True, seed=1)
    assert whole.values() == [7.0, 20.0] and whole.metadata["integer"] is True
    assert rank_err(whole.values(), qs).max() == 0 and rank_err(plain, qs).min() > 500
    with pytest.raises(dp.ParameterError, match="integer bounds"):
        dp.quantiles(x, qs, bounds=(0, 10.5), epsilon=1, integer=True)


@pytest.mark.parametrize("method, qs", [("exp", [0.5]), ("joint", [0.25, 0.5, 0.75]),
                                        ("recursive", [0.1 * i for i in range(1, 10)])])
def test_no_data_free_rank_bound(method, qs):
    """docs/mechanisms/quantiles.md §Accuracy: with n copies of one value the intervals between the
    copies have length 0, so every answer of every method has rank 0 or n -- a rank error of
    min(q, 1 - q)·n with probability 1, at any ε. n is not published, so no half-width computed from
    public parameters covers it; the release states no interval and says why (never a made-up one)."""
    n, v = 400, 5.0
    data = np.full(n, v)
    for seed in range(150):
        r = Q.quantiles(data, qs, bounds=(0.0, 10.0), epsilon=50.0, method=method, seed=seed)
        for q, y in r.items:
            assert y != v
            rank = int(np.sum(data < y))
            assert rank in (0, n)
            assert abs(rank - q * n) >= min(q, 1 - q) * n - 1e-9
        assert r.intervals is None and r.interval_level is None
        assert r.metadata["interval"]["coverage"] == "none"
        assert "rank 0 or n" in r.metadata["interval"]["reason"]
        assert "|G_w|" in r.metadata["interval"]["data_dependent_bound"]


@pytest.mark.parametrize("method", ["exp", "joint", "recursive"])
def test_data_dependent_tail_holds_on_spread_data(method):
    """The data-dependent tail of §Accuracy for one level: on n evenly spaced values the gap |G_w|
    is known, and the rank error of the median stays within w + ln((hi - lo)/(α·|G_w|))/c in at
    least 1 - α of 150 seeded runs (c from ε as the method spends it on that level)."""
    n, lo, hi = 200, 0.0, 1.0
    data = (np.arange(n) + 0.5) / n  # gaps 1/n
    eps, alpha, w = 1.0, 0.05, 2
    qs = [0.5]
    # one level: exp and recursive spend ε on it with Δ = 1/2 (c = ε); joint has Δ = 2 (c = ε/4) and
    # its summed error over the two gaps is twice the median's rank error
    c = eps if method != "joint" else eps / 4
    g = 2 * w / n if method != "joint" else w / n  # outputs within summed error w: rank within w/2
    u = w + math.log((hi - lo) / (alpha * g)) / c
    bound = u if method != "joint" else u / 2
    misses = 0
    for seed in range(150):
        r = Q.quantiles(data, qs, bounds=(lo, hi), epsilon=eps, method=method, seed=seed)
        rank = int(np.sum(data < r.items[0][1]))
        misses += abs(rank - 0.5 * n) > bound
    assert misses <= 150 * alpha + 3 * math.sqrt(150 * alpha), misses
