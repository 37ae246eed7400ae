"""Private releases (docs/algorithms.md §0-§5): utility at the paper's setting, suppression of unstable
labels at rate <= δ, threshold formulas against independently computed values, noise on the
sketches, single-release bookkeeping, and no key leaking through reprs or errors."""

import math

import numpy as np
import pytest

import dpsketch as d
from dpsketch import _core
from dpsketch.datasets import zipf

R = _core.release


# ---------------------------------------------------------------- utility (Holland §6 setting) --
@pytest.fixture(scope="module")
def paper_stream():
    s = zipf(2**22, 1.1, universe=100_001, seed=7)  # Zipf 1.1 over [0, 100000]
    vals, counts = np.unique(s, return_counts=True)
    freq = dict(zip(vals.tolist(), counts.tolist()))
    truth = {x for x, c in freq.items() if c >= len(s) / 128}
    return s, freq, truth


def _scores(release, freq, truth):
    got = set(release.keys())
    recall = len(got & truth) / len(truth)
    precision = len(got & truth) / len(got) if got else 1.0
    are = np.mean([abs(v - freq[x]) / freq[x] for x, v in release.items]) if release.items else 0.0
    return recall, precision, are


def test_dpss_and_pmg_utility_at_paper_setting(paper_stream):
    s, freq, truth = paper_stream
    k, eps, delta = 128, 0.1, 1e-3
    ss, mg = d.SpaceSaving(2 * k), d.MisraGries(2 * k)
    ss.update_many(s)
    mg.update_many(s)
    dpss_are, pmg_are = [], []
    for run in range(5):
        r = ss.release(epsilon=eps, delta=delta, k=k, seed=run, allow_repeat=True)
        recall, precision, are = _scores(r, freq, truth)
        assert recall == 1.0 and precision == 1.0, (run, recall, precision)
        dpss_are.append(are)
        p = mg.release(epsilon=eps, delta=delta, k=k, seed=run, allow_repeat=True)
        _, precision, are = _scores(p, freq, truth)
        assert precision == 1.0
        pmg_are.append(are)
    assert np.mean(dpss_are) < np.mean(pmg_are)


@pytest.mark.parametrize("sketch", ["countmin", "countsketch"])
def test_envelope_wrapper_precision_at_paper_setting(paper_stream, sketch):
    s, freq, truth = paper_stream
    h = d.SketchHeavyHitters(sketch, k=128, capacity=512, epsilon=0.1, delta=1e-3, max_stream_length=len(s), seed=11)
    h.update_many(s)
    r = h.release()
    _, precision, _ = _scores(r, freq, truth)
    assert precision == 1.0
    assert r.metadata["depth"] >= 32 and r.metadata["width"] == (2 if sketch == "countmin" else 3) * 512
    if sketch == "countmin":  # §5: with w = 2k̃, τ = 3n/k̃ + 1 + 3γ_N
        g = r.metadata["gamma_noise"]
        assert r.metadata["tau"] == pytest.approx(3 * r.metadata["n_upper"] / 512 + 1 + 3 * g)
    values = [v for _, v in r.items]
    assert values == sorted(values, reverse=True)
    assert all(v > r.threshold for v in values)


# ------------------------------------------------------- unstable labels released at rate <= δ --
def _dlap_pmf(eps, lo=-200, hi=200):
    z = np.arange(lo, hi + 1)
    q = math.exp(-eps)
    return z, (1 - q) / (1 + q) * q ** np.abs(z)


def test_dpss_suppresses_the_unstable_label():
    # capacity 2: X = a b c evicts b (newest minimum) for c -> c has count 2 = c_min + 1 in X, and
    # is absent from X' = a b. Its release probability is P(Z > τ - 2) = P(Z > γ) <= δ/4 (§3).
    eps, delta, trials = 1.0, 0.2, 20_000
    hits = 0
    for seed in range(trials):
        ss = d.SpaceSaving(2)
        ss.update_many(["a", "b", "c"])
        hits += "c" in ss.release(epsilon=eps, delta=delta, k=1, seed=seed, public_length=True).keys()
    # public length: the mechanism runs at (ε/2, δ/(1 + e^{ε/2})) (docs/privacy.md §Stream length)
    e = R.epsilon_used(eps / 2)
    gamma = R.dpss_gamma(e, delta / (1 + math.exp(eps / 2)))
    exact = math.exp(-e * gamma) / (1 + math.exp(e))
    assert exact <= delta / (1 + math.exp(eps / 2)) / 4
    sd = math.sqrt(exact * (1 - exact) / trials)
    assert abs(hits / trials - exact) < 5 * sd  # the check can see the leak rate, and it is the bound


def test_pmg_suppresses_unstable_labels():
    # From the lemma search: label 1 has count 1 in MG(X) and is absent from MG(X'), label 5 is a
    # zero-count key of MG(X) only. Release needs 1 + η + Z >= 1 + 2t (§2).
    x = [2, 5, 6, 4, 3, 0, 4, 2, 4, 2, 1, 2, 7]
    eps, delta, trials = 1.0, 0.3, 20_000
    hits_1 = hits_5 = 0
    for seed in range(trials):
        mg = d.MisraGries(5)
        mg.update_many(x)
        keys = mg.release(epsilon=eps, delta=delta, seed=seed).keys()
        hits_1 += 1 in keys
        hits_5 += 5 in keys
    t = R.pmg_t(eps, delta)
    z, pmf = _dlap_pmf(R.epsilon_used(eps))
    conv = np.convolve(pmf, pmf)  # η + Z on [-400, 400]
    s = np.arange(-400, 401)
    p1 = conv[s >= 2 * t].sum()
    p5 = conv[s >= 2 * t + 1].sum()
    assert p1 <= delta / 3  # P(η >= t) + P(Z >= t) <= 2·δ/6
    for hits, p in ((hits_1, p1), (hits_5, p5)):
        sd = math.sqrt(p * (1 - p) / trials)
        assert abs(hits / trials - p) < 5 * sd + 1e-4


# ------------------------------------------------------------ thresholds vs independent values --
def _search(pred, start):
    t = start
    while not pred(t):
        t += 1
    return t


@pytest.mark.parametrize("eps", [0.001, 0.01, 0.1, 0.5, 1.0, 10.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-6, 1e-3, 0.1])
def test_thresholds_equal_direct_search(eps, delta):
    e = math.floor(eps * 2**32) / 2**32  # ε rounded down to a multiple of 2^-32 (§1)
    assert R.epsilon_used(eps) == e
    # §2: smallest t >= 1 with e^{-εt}/(1+e^{-ε}) <= δ/6
    t = _search(lambda t: math.exp(-e * t) / (1 + math.exp(-e)) <= delta / 6, 1)
    assert R.pmg_t(eps, delta) == t
    # §3: smallest γ >= 0 with e^{-εγ}/(1+e^{ε}) <= δ/4
    g = _search(lambda g: math.exp(-e * g) / (1 + math.exp(e)) <= delta / 4, 0)
    assert R.dpss_gamma(eps, delta) == g
    # §0: smallest t_n >= 1 with P(Z >= t_n) = e^{-ε t}/(1+e^{-ε}) <= δ_n (n_up >= n + 1)
    assert R.length_t(eps, delta) == _search(lambda t: math.exp(-e * t) / (1 + math.exp(-e)) <= delta, 1)
    # §5: smallest integer γ_N with cells · 2e^{-εγ/Δ}/(1+e^{ε/Δ}) <= δ_N (Δ = 3, 96 cells)
    a = e / 3
    assert R.envelope_noise(3, eps, 96, delta) == _search(
        lambda g: 96 * 2 * math.exp(-a * g) / (1 + math.exp(a)) <= delta, 0)


def test_threshold_table_by_hand():
    # Worked by hand (docs/privacy.md): ε = 0.1, δ = 1e-3 -> γ = ceil(10·(ln 4000 − ln(1+e^0.1))) = 76,
    # t = ceil(10·(ln 6000 − ln(1+e^-0.1))) = 81.
    assert R.dpss_gamma(0.1, 1e-3) == 76
    assert R.pmg_t(0.1, 1e-3) == 81
    rows = [  # (n, k, k̃, γ) -> τ = max(n/k − γ, n/k̃ + 1 + γ)
        (2**22, 128, 256, 76, 2**22 / 128 - 76),
        (1000, 10, 20, 76, 1000 / 20 + 1 + 76),
        (10**6, 100, 100, 5, 10**6 / 100 + 1 + 5),
    ]
    for n, k, kt, g, tau in rows:
        assert R.dpss_threshold(n, n, k, kt, g) == pytest.approx(tau)
    # §5 depth: log2((n_max + k̃)/δ_C), n_max = 2^22, k̃ = 512, δ_C = 5e-4 -> ceil(32.99...) = 33
    assert R.envelope_min_depth(2**22, 512, 5e-4) == math.ceil(math.log2((2**22 + 512) / 5e-4))
    a = R.epsilon_used(0.1) / 33
    assert R.envelope_noise(33, 0.1, 33 * 1024, 5e-4) == math.ceil(math.log(2 * 33 * 1024 / (5e-4 * (1 + math.exp(a)))) / a)


def test_dpss_release_uses_documented_threshold():
    ss = d.SpaceSaving(20)
    ss.update_many(zipf(5000, 1.5, 1000, seed=1))
    r = ss.release(epsilon=0.5, delta=1e-4, k=10, cut=None, seed=3, public_length=True, allow_repeat=True)
    g = R.dpss_gamma(0.25, 1e-4 / (1 + math.exp(0.25)))
    assert r.metadata["gamma"] == g
    assert r.threshold == pytest.approx(max(5000 / 10 - g, 5000 / 20 + 1 + g))
    assert all(v > r.threshold for _, v in r.items)
    # the default n/k cut (public length: the exact n) keeps the values >= n/k = 500 of the same draw
    c = ss.release(epsilon=0.5, delta=1e-4, k=10, seed=3, public_length=True, allow_repeat=True)
    assert c.metadata["tau"] == r.threshold and c.threshold == 500 and c.metadata["threshold_inclusive"]
    assert c.items == [(key, v) for key, v in r.items if v >= 500]
    assert r.metadata["assumes_public_length"] is True and r.metadata["neighbours"] == "replace"
    assert r.epsilon == pytest.approx(0.5) and r.delta == pytest.approx(1e-4)


def test_private_length_mode():
    ss = d.SpaceSaving(20)
    ss.update_many(zipf(5000, 1.5, 1000, seed=1))
    r = ss.release(epsilon=0.5, delta=1e-4, k=10, seed=3, length_epsilon=0.2, length_delta=1e-5)
    m = r.metadata
    assert m["assumes_public_length"] is False and m["length"] == "private" and m["neighbours"] == "add_remove"
    assert m["length_t"] == R.length_t(0.2, 1e-5)
    assert m["n_upper"] - m["n_used"] == m["length_t"] and m["n_used"] - m["n_lower"] == m["length_t"]
    # the length's share is carved out of (ε, δ): the totals are what was asked for
    assert r.epsilon == pytest.approx(R.epsilon_used(0.3) + R.epsilon_used(0.2)) and r.epsilon <= 0.5
    assert r.delta == pytest.approx(1e-4)
    g = m["gamma"]
    assert g == R.dpss_gamma(0.3, 1e-4 - 1e-5)
    assert m["tau"] == pytest.approx(max(m["n_lower"] / 10 - g, m["n_upper"] / 20 + 1 + g))
    assert m["heavy_hitter_cut"] == m["n_used"] / 10 and r.threshold == max(m["tau"], m["heavy_hitter_cut"])


# ---------------------------------------------------------------------- noise on the sketches --
@pytest.mark.parametrize("cls", [d.PrivateCountMin, d.PrivateCountSketch])
def test_laplace_cell_noise_has_the_stated_scale(cls):
    depth, width, eps = 4, 4096, 2.0
    p = cls(width, depth, epsilon=eps, seed=5)
    stream = zipf(20_000, 1.2, 500, seed=2)
    p.update_many(stream)
    base = (d.CountMin if cls is d.PrivateCountMin else d.CountSketch)(width, depth, hash_seed=p.hash_seed)
    base.update_many(stream)
    noise = (p.cells() - base.cells()).ravel().astype(float)
    q = math.exp(-R.epsilon_used(eps) / depth)  # DLap(d/ε): P(z) ∝ q^|z|
    var = 2 * q / (1 - q) ** 2
    assert abs(noise.mean()) < 5 * math.sqrt(var / noise.size)
    assert noise.var() == pytest.approx(var, rel=0.08)


def test_gaussian_count_min_shift_and_variance():
    depth, width, rho, beta = 5, 4096, 0.5, 0.01
    p = d.PrivateCountMin(width, depth, rho=rho, beta=beta, seed=9)
    cells = p.cells().ravel().astype(float)  # empty stream: noise + shift
    sigma2 = depth / (2 * rho)
    shift = math.ceil(math.sqrt(sigma2) * math.sqrt(2 * math.log(2 * depth * width / beta))) + 1
    assert p.privacy()["shift"] == shift
    assert cells.mean() == pytest.approx(shift, abs=5 * math.sqrt(sigma2 / cells.size))
    assert cells.var() == pytest.approx(sigma2, rel=0.08)
    assert cells.min() > 0  # never underestimates an absent item (w.p. 1 − β)


def test_private_sketch_release_is_published_copy():
    p = d.PrivateCountSketch(256, 5, epsilon=1.0, seed=1)
    p.update_many(["a"] * 50 + ["b"] * 5)
    pub = p.release().sketch
    assert pub.estimate("a") == p.estimate("a")
    back = d.PrivateCountSketch.from_bytes(pub.to_bytes())
    assert np.array_equal(back.cells(), p.cells()) and back.epsilon == pytest.approx(R.epsilon_used(1.0))
    with pytest.raises(RuntimeError):
        pub.update("c")
    with pytest.raises(d.errors.ReleaseBudgetError):
        p.release()
    p.release(allow_repeat=True)


# -------------------------------------------------------------------- validation and leakage --
def test_double_release_is_refused_and_recorded():
    ss = d.SpaceSaving(8)
    ss.update_many([1, 2, 3, 1])
    r1 = ss.release(epsilon=1.0, delta=1e-3, k=2, seed=1)
    assert r1.metadata["release_index"] == 1 and not r1.metadata["composed_with_previous_releases"]
    with pytest.raises(d.errors.ReleaseBudgetError, match="allow_repeat=True"):
        ss.release(epsilon=1.0, delta=1e-3, k=2, seed=1)
    r2 = ss.release(epsilon=1.0, delta=1e-3, k=2, seed=1, allow_repeat=True)
    assert r2.metadata["release_index"] == 2 and r2.metadata["composed_with_previous_releases"]


@pytest.mark.parametrize("eps,delta", [(0, 1e-3), (-1, 1e-3), (float("nan"), 1e-3), (float("inf"), 1e-3),
                                       (1, 0), (1, 1), (1, 1.5), (1, float("nan"))])
def test_bad_privacy_parameters(eps, delta):
    ss = d.SpaceSaving(8)
    with pytest.raises(ValueError):
        ss.release(epsilon=eps, delta=delta, k=2)
    with pytest.raises(ValueError):
        d.SketchHeavyHitters(k=2, capacity=8, epsilon=eps, delta=delta, max_stream_length=10)


def test_structural_parameter_errors():
    with pytest.raises(ValueError, match="capacity >= k"):
        d.SpaceSaving(4).release(epsilon=1, delta=1e-3, k=8)
    with pytest.raises(ValueError, match="capacity must exceed k"):
        d.SketchHeavyHitters(k=8, capacity=8, epsilon=1, delta=1e-3, max_stream_length=10)
    with pytest.raises(ValueError, match="need depth >="):
        d.SketchHeavyHitters(k=2, capacity=8, epsilon=1, delta=1e-3, max_stream_length=10**6, depth=5)
    h = d.SketchHeavyHitters(k=2, capacity=8, epsilon=1, delta=1e-3, max_stream_length=10)
    with pytest.raises(ValueError, match="max_stream_length"):
        h.update_many(list(range(11)))
    with pytest.raises(ValueError, match="exactly one"):
        d.PrivateCountMin(16, 3)
    with pytest.raises(ValueError, match="exactly one"):
        d.PrivateCountMin(16, 3, epsilon=1, rho=1)


def test_no_key_in_reprs_or_errors():
    secret = "SECRETKEY123"
    objs = [d.SpaceSaving(4), d.MisraGries(4), d.PrivateCountMin(16, 3, epsilon=1),
            d.SketchHeavyHitters(k=1, capacity=4, epsilon=1, delta=1e-3, max_stream_length=100)]
    messages = []
    for o in objs:
        o.update(secret)
        messages += [repr(o), str(o)]
        with pytest.raises(TypeError) as ei:
            o.update(5)
        messages.append(str(ei.value))
    r = objs[0].release(epsilon=0.01, delta=1e-9, k=1, seed=0)  # far too little signal: nothing passes
    assert secret not in r.keys()
    messages += [repr(r), str(r), r.to_json()]
    with pytest.raises(d.errors.ReleaseBudgetError) as ei:
        objs[0].release(epsilon=0.01, delta=1e-9, k=1)
    messages.append(str(ei.value))
    assert not any(secret in m for m in messages)


def test_release_export(paper_stream):
    s, _, _ = paper_stream
    ss = d.SpaceSaving(256)
    ss.update_many(s[:100_000])
    r = ss.release(epsilon=1.0, delta=1e-6, k=64, seed=1)
    import json

    back = json.loads(r.to_json())
    assert back["mechanism"] == "DPSS" and back["items"] == [list(kv) for kv in r.items]
    assert back["metadata"]["reproducible_not_secret"] is True
    pd = pytest.importorskip("pandas")
    df = r.to_pandas()
    assert list(df.columns) == ["key", "noisy_value", "low", "high"] and len(df) == len(r)
