"""Accuracy intervals of releases (docs/privacy.md §Intervals).

Coverage is checked empirically, per mechanism: many seeded releases of a small stream whose true
counts are known; the fraction of releases in which EVERY released interval holds its item's true
count must not be significantly below the level (a one-sided exact binomial test at 10^-4, so the
test fails only on a real shortfall). The same runs with the noise half-width halved must be caught
by that test: it can fail. The noise tails are checked against brute-force sums of the exact pmfs.
"""

import json
import math
from collections import Counter

import numpy as np
import pytest

import dpsketch
from dpsketch import intervals as I
from dpsketch import _core
from dpsketch.errors import ParameterError
from dpsketch.mechanisms.unit_level import release_bounded_counts

from coverage_checks import covered, halved, significantly_below

LEVEL = 0.95
RUNS = 300


def _check(releases, truth, *, narrowing=True):
    rels = list(releases)
    hits = sum(covered(r, truth) for r in rels)
    assert sum(len(r.items) for r in rels) >= len(rels), "too few items released to test anything"
    assert not significantly_below(hits, len(rels), LEVEL), f"coverage {hits}/{len(rels)} is below {LEVEL}"
    if narrowing:
        narrow = sum(covered(r, truth, halved(r)) for r in rels)
        assert significantly_below(narrow, len(rels), LEVEL), f"halved intervals not caught: {narrow}/{len(rels)}"
    return hits


# -- streams --------------------------------------------------------------------------------------

def exact_stream():
    """32 distinct keys with counts 2000 + 10i: a summary of >= 32 counters holds them exactly, so
    the intervals' noise part is what is tested (and the halved width is caught)."""
    keys = np.repeat(np.arange(32), 2000 + 10 * np.arange(32))
    np.random.default_rng(5).shuffle(keys)
    return keys, Counter(keys.tolist())


def zipf_stream():
    """A Zipf stream over many keys: SpaceSaving and Misra-Gries err, the summary error is tested."""
    keys = np.random.default_rng(6).zipf(1.3, 20000) % 3000
    return keys, Counter(keys.tolist())


# -- element-level counter releases ---------------------------------------------------------------

@pytest.mark.parametrize("stream, narrowing", [(exact_stream, True), (zipf_stream, False)])
def test_dpss_coverage(stream, narrowing):
    keys, truth = stream()
    ss = dpsketch.SpaceSaving(64)
    ss.update_many(keys)
    rels = (ss.release(epsilon=0.5, delta=1e-4, k=64, cut=None, seed=s, allow_repeat=True) for s in range(RUNS))
    _check(rels, truth, narrowing=narrowing)


def test_dpss_public_length_and_top_k_coverage():
    keys, truth = exact_stream()
    ss = dpsketch.SpaceSaving(64)
    ss.update_many(keys)
    rels = [ss.release(epsilon=0.5, delta=1e-4, top_k=20, seed=s, allow_repeat=True, public_length=s % 2 == 0)
            for s in range(RUNS)]
    assert {r.metadata["length"] for r in rels} == {"public", "private"}
    _check(rels, truth)


@pytest.mark.parametrize("stream", [exact_stream, zipf_stream])
def test_two_pass_coverage(stream):
    keys, truth = stream()
    ss = dpsketch.SpaceSaving(64)
    ss.update_many(keys)
    counts = [truth[k] for k, _ in ss.items()]
    rels = (dpsketch.mechanisms.dpss.release_exact_counts(ss, counts, epsilon=0.5, delta=1e-4, k=64, cut=None, seed=s,
                                               allow_repeat=True) for s in range(RUNS))
    _check(rels, truth)


def test_two_pass_through_heavy_hitters():
    keys, truth = zipf_stream()
    r = dpsketch.heavy_hitters(keys, k=16, epsilon=1.0, delta=1e-4, passes=2, seed=3)
    assert r.mechanism == "DPSS[two-pass]" and r.intervals and covered(r, truth)
    assert r.metadata["interval"]["summary_error"].startswith("none")


@pytest.mark.parametrize("stream, k, narrowing", [(exact_stream, 64, True), (zipf_stream, 64, False),
                                                  (exact_stream, None, True)])
def test_pmg_coverage(stream, k, narrowing):
    keys, truth = stream()
    mg = dpsketch.MisraGries(64)
    mg.update_many(keys)
    rels = [mg.release(epsilon=0.5, delta=1e-4, k=k, seed=s, allow_repeat=True) for s in range(RUNS)]
    if k is None:  # no length published: Misra-Gries' underestimate has no bound, the high side is open
        assert all(hi == math.inf for r in rels for _, hi in r.intervals)
        assert json.loads(rels[0].to_json())["intervals"][0][1] is None
    _check(rels, truth, narrowing=narrowing)


def test_pmg_public_length_coverage():
    keys, truth = zipf_stream()
    mg = dpsketch.MisraGries(64)
    mg.update_many(keys)
    rels = [mg.release(epsilon=0.5, delta=1e-4, k=64, seed=s, allow_repeat=True, public_length=True)
            for s in range(RUNS)]
    _check(rels, truth, narrowing=False)


def test_sketch_heavy_hitters_coverage():
    rng = np.random.default_rng(7)
    keys = np.concatenate([np.zeros(4000, np.int64), np.ones(600, np.int64), rng.integers(2, 500, 400)])
    rng.shuffle(keys)
    truth = Counter(keys.tolist())
    rels = []
    for s in range(30):
        for sketch, cap in (("countmin", 16), ("countsketch", 128)):
            hh = dpsketch.SketchHeavyHitters(sketch, k=4, capacity=cap, epsilon=8.0, delta=1e-3,
                                             max_stream_length=5000, seed=s)
            hh.update_many(keys)
            rels.append(hh.release())
    assert sum(len(r.items) for r in rels) >= len(rels)
    hits = sum(covered(r, truth) for r in rels)
    assert not significantly_below(hits, len(rels), LEVEL)
    r = rels[0]
    assert r.intervals_at(1 - r.metadata["delta_envelope"] / 2) is None  # beyond what the envelope holds


def test_unit_stream_bounds_the_kept_rows():
    rng = np.random.default_rng(8)
    keys = np.repeat(np.arange(20), 300)
    ids = rng.integers(0, 2000, len(keys))
    order = rng.permutation(len(keys))
    keys, ids = keys[order], ids[order]
    r = 3
    seen: Counter = Counter()
    kept = []
    for key, u in zip(keys.tolist(), ids.tolist()):
        seen[u] += 1
        if seen[u] <= r:
            kept.append(key)
    truth = Counter(kept)
    rels = []
    for summary in ("spacesaving", "misragries"):
        us = dpsketch.mechanisms.unit_level.UnitStream(summary, capacity=32, max_rows_per_unit=r)
        us.update(keys, ids)
        rels += [us.release(epsilon=6.0, delta=1e-4, k=32, seed=s, allow_repeat=True) for s in range(RUNS // 2)]
    assert "per-unit bound" in rels[0].metadata["interval"]["bounds"]
    _check(rels, truth, narrowing=False)


@pytest.mark.parametrize("noise, selection", [("gaussian", None), ("laplace", None), ("laplace", "gumbel")])
def test_unit_exact_route_coverage(noise, selection):
    rng = np.random.default_rng(9)
    keys = np.concatenate([np.repeat(np.arange(12), 40 + 25 * np.arange(12)), rng.integers(100, 400, 2000)])
    ids = rng.integers(0, 3000, len(keys))
    bounded = dpsketch.mechanisms.unit_level.bound_contributions(keys, ids, max_keys_per_unit=2, seed=1)
    truth = dict(zip(bounded.keys.tolist(), bounded.counts.tolist()))
    rels = [release_bounded_counts(bounded, epsilon=1.0, delta=1e-5, noise=noise, selection=selection,
                                            k=None if selection is None else 6, seed=s) for s in range(RUNS)]
    assert rels[0].metadata["interval"]["bounds"].startswith("the item's bounded count")
    hits = sum(covered(r, truth) for r in rels)
    assert not significantly_below(hits, len(rels), LEVEL), f"coverage {hits}/{len(rels)}"
    narrow = sum(covered(r, truth, [(v - (v - lo) // 2, v + (hi - v) // 2) for (_, v), (lo, hi) in
                                    zip(r.items, r.intervals)]) for r in rels)
    assert significantly_below(narrow, len(rels), LEVEL), f"halved intervals not caught: {narrow}/{len(rels)}"


def test_wide_gaussian_tails_match_the_sum():
    s2 = 1.1e6  # past the switch to the midpoint rule
    x = np.arange(-50_000, 50_001, dtype=np.float64)
    logp = -x * x / (2 * s2)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    log_tail = I.noise_log_tail("discrete_gaussian", s2)
    for t in (-2000, -1, 0, 1, 500, 3000, 6000, 8000):
        assert math.exp(log_tail(t)) == pytest.approx(p[x > t].sum(), rel=1e-10)


@pytest.mark.parametrize("noise, param", [("discrete_laplace", 2.0), ("discrete_gaussian", 9.0)])
def test_selected_intervals_against_the_pmf(noise, param):
    """The conditional intervals of the exact route against tests built from the explicit pmf."""
    x = np.arange(-400, 401)
    p = np.exp(-np.abs(x) / param) if noise == "discrete_laplace" else np.exp(-x * x / (2 * param))
    p /= p.sum()
    tau = 20
    items = [(0, 21), (1, 25), (2, 40), (3, 90)]
    ivs, _ = I._selected(items, {"noise": noise, "noise_param": [param, 1], "threshold": tau}, 0.1)
    half = 0.1 / len(items) / 2
    for (_, v), (lo, hi) in zip(items, ivs):
        accepted = []
        for f in range(1, 300):
            law = p * (x + f > tau)  # f + Z given f + Z > τ
            law /= law.sum()
            if law[x + f >= v].sum() > half and law[x + f <= v].sum() > half:
                accepted.append(f)
        assert (lo, hi) == (accepted[0], accepted[-1]) and accepted == list(range(lo, hi + 1))


def test_windows_pass_the_intervals_through():
    w = dpsketch.Windowed(period=10, make=lambda: dpsketch.SpaceSaving(16), epsilon=1.0, delta=1e-4, k=4,
                          start=0, end=20, seed=1)
    rels = w.update(np.array([1] * 500 + [2] * 300), np.arange(800) % 20) + w.close()
    assert rels and all(r.intervals is not None and len(r.intervals) == len(r.items) for r in rels)


# -- published sketches: Count-Min point queries, dyadic ranks ------------------------------------

@pytest.mark.parametrize("noise", [{"epsilon": 1.0}, {"rho": 0.5}])
def test_count_min_point_query_coverage(noise):
    keys, truth = zipf_stream()
    probes = [0, 1, 2, 7, 40, 2999, 10**6]  # heavy, light and absent keys
    runs = []
    for s in range(150):
        sk = dpsketch.PrivateCountMin(64, 3, seed=s, **noise)
        sk.update_many(keys)
        rel = sk.release()
        ivs = rel.sketch.estimate_intervals(probes)
        assert [e for e, _, _ in ivs] == [rel.sketch.estimate(p) for p in probes]
        runs.append(all(lo <= truth.get(p, 0) <= hi for p, (_, lo, hi) in zip(probes, ivs)))
        assert rel.interval(probes[0]) == rel.sketch.estimate_interval(probes[0])
    assert not significantly_below(sum(runs), len(runs), LEVEL)


def test_count_min_interval_narrows_with_the_level_and_needs_items():
    keys, truth = zipf_stream()
    sk = dpsketch.PrivateCountMin(256, 4, epsilon=1.0, seed=1)
    sk.update_many(keys)
    (e, lo, hi), (e2, lo2, hi2) = sk.estimate_interval(0, level=0.99), sk.estimate_interval(0, level=0.5)
    assert e == e2 and lo <= lo2 <= hi2 <= hi
    assert sk.estimate_intervals([]) == []
    with pytest.raises(ParameterError):
        dpsketch.PrivateCountSketch(64, 3, epsilon=1.0, seed=1).release().interval(0)


@pytest.mark.parametrize("noise", [{"epsilon": 1.0}, {"rho": 0.3}])
def test_dyadic_rank_coverage(noise):
    rng = np.random.default_rng(4)
    data = rng.integers(0, 1024, 3000)
    positions = [1, 100, 512, 1000, 1024]
    truth = [int((data < x).sum()) for x in positions]
    hits = narrow = 0
    for s in range(RUNS):
        sk = dpsketch.PrivateDyadicCountSketch(10, seed=s, **noise)
        sk.update_many(data)
        ivs = sk.release().sketch.rank_intervals(positions)
        hits += all(lo <= t <= hi for t, (_, lo, hi) in zip(truth, ivs))
        narrow += all(abs(t - e) <= (hi - e) / 2 for t, (e, _, hi) in zip(truth, ivs))
    assert not significantly_below(hits, RUNS, LEVEL), f"coverage {hits}/{RUNS}"
    assert significantly_below(narrow, RUNS, LEVEL), f"halved intervals not caught: {narrow}/{RUNS}"


@pytest.mark.parametrize("noise", [{"epsilon": 1.0}, {"rho": 0.3}])
def test_dyadic_quantile_coverage(noise):
    rng = np.random.default_rng(4)
    data = np.sort(rng.integers(0, 1024, 3000))
    qs = [0.0, 0.1, 0.5, 0.9, 1.0]
    hits = 0
    for s in range(150):
        sk = dpsketch.PrivateDyadicCountSketch(10, seed=s, **noise)
        sk.update_many(data)
        ivs = sk.release().sketch.quantile_intervals(qs)
        assert [v for v, _, _ in ivs] == sk.quantiles(qs).tolist()
        below = np.searchsorted(data, [v for v, _, _ in ivs], side="left")  # items < value
        upto = np.searchsorted(data, [v for v, _, _ in ivs], side="right")  # items <= value
        hits += all(b <= hi and u >= lo for b, u, (_, lo, hi) in zip(below, upto, ivs))
    assert not significantly_below(hits, 150, LEVEL), f"coverage {hits}/150"
    with pytest.raises(ParameterError, match="every level exact"):
        dpsketch.PrivateDyadicCountSketch(24, rho=1.0, seed=1).quantile_intervals([0.5])


@pytest.mark.parametrize("kind, param", [("laplace", 1.5), ("gaussian", 3.0)])
def test_uniform_rank_halfwidth_against_the_convolved_pmf(kind, param):
    bits = 3
    x = np.arange(-200, 201)
    pmf = np.exp(-np.abs(x) / param) if kind == "laplace" else np.exp(-x * x / (2 * param))
    pmf /= pmf.sum()
    laws = {1: pmf}
    for k in range(2, bits + 1):
        laws[k] = np.convolve(laws[k - 1], pmf)

    def union_tail(s):
        out = 0.0
        for k in range(1, bits + 1):
            z = np.arange(len(laws[k])) - (len(laws[k]) - 1) // 2
            out += math.comb(bits, k) * laws[k][np.abs(z) > s].sum()
        z = np.arange(len(laws[2])) - (len(laws[2]) - 1) // 2
        return out + laws[2][np.abs(z) > s].sum()  # the total

    for alpha in (0.2, 0.05, 0.01):
        s = I.uniform_rank_halfwidth(kind, param, bits, alpha)
        assert union_tail(s) <= alpha < union_tail(s - 1) * 1.001


def test_dyadic_rank_refuses_countsketch_levels():
    sk = dpsketch.PrivateDyadicCountSketch(24, rho=1.0, seed=1)
    sk.update_many(np.arange(1000))
    low_bits = sk.universe_bits - sk.exact_levels
    assert sk.rank_interval(5 << low_bits)[0] == sk.rank(5 << low_bits)
    with pytest.raises(ParameterError, match="exact levels"):
        sk.rank_interval(3)


@pytest.mark.parametrize("laws", [[("laplace", 2.0)] * 3, [("gaussian", 4.0)] * 5,
                                  [("gaussian", 2.5), ("laplace", 1.5)]])
def test_sum_halfwidth_against_the_convolved_pmf(laws):
    x = np.arange(-300, 301)
    law = np.array([1.0])
    for kind, p in laws:
        pmf = np.exp(-np.abs(x) / p) if kind == "laplace" else np.exp(-x * x / (2 * p))
        law = np.convolve(law, pmf / pmf.sum())
    z = np.arange(len(law)) - (len(law) - 1) // 2
    for alpha in (0.2, 0.05, 0.001):
        s = I.sum_halfwidth(laws, alpha)
        assert law[np.abs(z) > s].sum() <= alpha
        assert law[np.abs(z) > s - 2].sum() > alpha * 0.999  # within rounding of the smallest width


# -- what a release without a rule says -----------------------------------------------------------

def test_no_rule_means_none_not_a_made_up_value():
    r = dpsketch.quantiles(np.arange(1000), [0.5], epsilon=1.0, bounds=(0, 1000), seed=1)
    assert r.intervals is None and r.interval_level is None and r.intervals_at(0.9) is None
    assert r.metadata["interval"]["coverage"] == "none"
    with pytest.raises(ParameterError):
        r.interval(0.5)


# -- levels, outputs ------------------------------------------------------------------------------

def test_intervals_at_another_level_nest():
    keys, truth = exact_stream()
    ss = dpsketch.SpaceSaving(64)
    ss.update_many(keys)
    r = ss.release(epsilon=0.5, delta=1e-4, k=64, seed=1)
    wide, default, narrow = r.intervals_at(0.999), r.intervals, r.intervals_at(0.5)
    for (a, b), (c, d), (e, f) in zip(wide, default, narrow):
        assert a <= c <= e and f <= d <= b
    assert r.intervals_at(0.95) == default
    key, v = r.items[0]
    assert r.interval(key) == (v, *default[0])
    for bad in (0, 1, 1.5, -0.1):
        with pytest.raises(ParameterError):
            r.intervals_at(bad)
    with pytest.raises(ParameterError):
        r.interval("not a released key")


def test_outputs_carry_the_intervals():
    keys, _ = exact_stream()
    mg = dpsketch.MisraGries(64)
    mg.update_many(keys)
    r = mg.release(epsilon=0.5, delta=1e-4, k=64, seed=2)
    lows, highs = [lo for lo, _ in r.intervals], [hi for _, hi in r.intervals]
    d = json.loads(r.to_json())
    assert d["interval_level"] == 0.95 and d["intervals"] == [list(iv) for iv in r.intervals]
    df = r.to_pandas()
    assert list(df.columns) == ["key", "noisy_value", "low", "high"]
    assert df["low"].tolist() == lows and df["high"].tolist() == highs
    pl = r.to_polars()
    assert pl.columns == ["key", "noisy_value", "low", "high"] and pl["high"].to_list() == highs
    tb = r.to_arrow()
    assert tb.column("low").to_pylist() == lows
    assert json.loads(tb.schema.metadata[b"dpsketch.release"])["interval_level"] == 0.95
    html = r._repr_html_()
    assert "0.95" in html and "<table>" in html and str(r.items[0][0]) in html


@pytest.mark.parametrize("module, method", [("pandas", "to_pandas"), ("pyarrow", "to_arrow"),
                                            ("polars", "to_polars")])
def test_a_missing_frame_library_is_named(monkeypatch, module, method):
    from dpsketch.errors import MissingDependencyError

    r = dpsketch.heavy_hitters(["a"] * 500, k=2, epsilon=2.0, delta=1e-4, seed=1)
    monkeypatch.setitem(__import__("sys").modules, module, None)  # `import module` raises ImportError
    with pytest.raises(MissingDependencyError, match=module):
        getattr(r, method)()


def test_cli_json_keeps_intervals_aligned_with_the_items(tmp_path):
    import os
    import subprocess
    import sys

    path = tmp_path / "items.txt"
    path.write_text("\n".join(["a"] * 2400 + ["b"] * 1800 + ["c"] * 1200 + [f"x{i}" for i in range(600)]) + "\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(dpsketch.__file__)))
    run = lambda *extra: json.loads(subprocess.run(  # noqa: E731
        [sys.executable, "-m", "dpsketch", "top", str(path), "-k", "8", "--epsilon", "1", "--delta", "1e-4",
         "--seed", "1", "--json", *extra], capture_output=True, env=env, timeout=300, check=True).stdout)
    full, top = run(), run("--top", "2")
    assert len(full["items"]) == 3 and full["interval_level"] == 0.95
    # --show cuts the table only: the JSON is the whole release, intervals aligned with its items
    assert top["items"] == full["items"] and top["intervals"] == full["intervals"]
    assert len(full["intervals"]) == len(full["items"])


def test_html_escapes_keys():
    r = dpsketch.heavy_hitters(["<b>x</b>"] * 500 + ["y"] * 3, k=2, epsilon=2.0, delta=1e-4, seed=1)
    assert "<b>x</b>" not in r._repr_html_() and "&lt;b&gt;x&lt;/b&gt;" in r._repr_html_()


# -- the noise tails against brute-force sums of the exact pmfs ------------------------------------

def _dlap_pmf(eps, span):
    z = np.arange(-span, span + 1)
    q = math.exp(-eps)
    return z, (1 - q) / (1 + q) * q ** np.abs(z)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 3.0])
def test_dlap_tails_match_the_pmf(eps):
    span = int(60 / eps)
    z, p = _dlap_pmf(eps, span)
    for t in (0, 1, 2, 5, int(3 / eps)):
        assert I.dlap_abs_tail_gt(eps, t) == pytest.approx(p[np.abs(z) > t].sum(), rel=1e-9)
        assert I.dlap_tail_gt(eps, t) == pytest.approx(p[z > t].sum(), rel=1e-9)
    conv = np.convolve(p, p)  # the law of eta + Z on [-2 span, 2 span]
    zz = np.arange(-2 * span, 2 * span + 1)
    for s in (0, 1, 3, int(2 / eps), int(5 / eps)):
        assert I.dlap_sum_abs_tail_gt(eps, s) == pytest.approx(conv[np.abs(zz) > s].sum(), rel=1e-8)
    for t in (1, 4):  # the core's closed form of P(eta + Z >= 2t) (docs/privacy.md §PMG)
        assert I.dlap_sum_abs_tail_gt(eps, 2 * t - 1) / 2 == pytest.approx(
            _core.release.dlap_sum_tail_ge_2t(eps, t), rel=1e-9)


def test_dgauss_abs_tail_bounds_the_pmf():
    for s2 in (0.5, 4.0, 50.0):
        x = np.arange(-400, 401)
        p = np.exp(-x * x / (2 * s2))
        p /= p.sum()
        for t in (0, 1, 3, 10):
            exact = p[np.abs(x) > t].sum()
            assert exact <= I.dgauss_abs_tail_gt(s2, t) <= exact * (1 + 1e-6) + 1e-300


@pytest.mark.parametrize("alpha", [0.5, 0.05, 1e-3, 1e-9])
def test_smallest_width_is_the_smallest(alpha):
    for eps in (0.01, 0.3, 2.0):
        f = lambda t: I.dlap_abs_tail_gt(eps, t)  # noqa: E731
        s = I.smallest_width(f, alpha)
        assert f(s) <= alpha and (s == 0 or f(s - 1) > alpha)
