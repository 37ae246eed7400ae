"""Statistical and API tests for the exact noise samplers (docs/algorithms.md §1).

All generators are seeded, so every test is deterministic; statistical checks use
significance level 1e-4 (or 5 standard errors) and are paired with power checks showing the
same harness rejects a slightly wrong distribution.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpsketch._core import noise

ALPHA = 1e-4
N = 500_000  # samples per distribution checked


def make_rng(seed):
    return noise.SecureRng(seed)


def frac_args(x):
    f = Fraction(x)
    return f.numerator, f.denominator


# ---------------------------------------------------------------------------------------------
# Exact reference pmfs on a finite grid wide enough that the mass outside is negligible.


def dlap_pmf(scale, grid):
    """P(Z=z) = (1-e^{-1/s})/(1+e^{-1/s}) e^{-|z|/s} (docs/algorithms.md §1)."""
    q = math.exp(-1.0 / scale)
    return (1 - q) / (1 + q) * np.exp(-np.abs(grid) / scale)


def dlap_grid(scale):
    k = int(60 * scale) + 60
    return np.arange(-k, k + 1)


def dgauss_pmf(sigma2, grid):
    w = np.exp(-(grid.astype(float) ** 2) / (2 * sigma2))
    return w / w.sum()


def dgauss_grid(sigma2):
    k = int(40 * math.sqrt(sigma2)) + 20
    return np.arange(-k, k + 1)


def chisq_pvalue(samples, grid, pmf):
    """Chi-square goodness of fit; cells with expected count < 5 are pooled into the tails."""
    n = len(samples)
    expected = n * pmf
    inner = np.nonzero(expected >= 5)[0]
    lo, hi = grid[inner[0]], grid[inner[-1]]
    counts = np.bincount(np.clip(samples, lo - 1, hi + 1) - (lo - 1), minlength=hi - lo + 3)
    exp_cells = np.concatenate(
        ([expected[grid < lo].sum()], expected[(grid >= lo) & (grid <= hi)], [expected[grid > hi].sum()])
    )
    keep = exp_cells > 0
    obs, ex = counts[keep], exp_cells[keep]
    # Pool tail cells with tiny expectation into their neighbour to keep the test valid.
    if ex[0] < 5:
        obs, ex = np.concatenate(([obs[0] + obs[1]], obs[2:])), np.concatenate(([ex[0] + ex[1]], ex[2:]))
    if ex[-1] < 5:
        obs, ex = np.concatenate((obs[:-2], [obs[-2] + obs[-1]])), np.concatenate((ex[:-2], [ex[-2] + ex[-1]]))
    assert obs.sum() == n
    ex = ex * (n / ex.sum())  # grid truncation leaves < 1e-20 of mass out
    return stats.chisquare(obs, ex).pvalue


def moments(grid, pmf):
    mean = float((grid * pmf).sum())
    var = float(((grid - mean) ** 2 * pmf).sum())
    mu4 = float(((grid - mean) ** 4 * pmf).sum())
    return mean, var, mu4


def assert_mean_var(samples, grid, pmf, z=5.0):
    n = len(samples)
    mean, var, mu4 = moments(grid, pmf)
    x = samples.astype(np.float64)
    assert abs(x.mean() - mean) < z * math.sqrt(var / n)
    assert abs(x.var() - var) < z * math.sqrt((mu4 - var * var) / n)


# ---------------------------------------------------------------------------------------------
# ChaCha20 and the generator


def test_chacha20_rfc8439_block_vector():
    # RFC 8439 §2.3.2.
    key = bytes(range(32))
    nonce = bytes.fromhex("000000090000004a00000000")
    expected = bytes.fromhex(
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"
    )
    assert noise.chacha20_block(key, 1, nonce) == expected


def test_chacha20_rfc8439_appendix_a1_vectors():
    # RFC 8439 Appendix A.1, test vectors #1 and #2 (all-zero key and nonce).
    assert noise.chacha20_block(bytes(32), 0, bytes(12)) == bytes.fromhex(
        "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
        "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"
    )
    assert noise.chacha20_block(bytes(32), 1, bytes(12)) == bytes.fromhex(
        "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
        "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f"
    )


def test_chacha20_matches_cryptography_package():
    algorithms = pytest.importorskip("cryptography.hazmat.primitives.ciphers.algorithms")
    from cryptography.hazmat.primitives.ciphers import Cipher

    g = np.random.default_rng(1)
    for _ in range(50):
        key, nonce = g.bytes(32), g.bytes(12)
        counter = int(g.integers(0, 2**32 - 16))
        enc = Cipher(algorithms.ChaCha20(key, counter.to_bytes(4, "little") + nonce), mode=None).encryptor()
        assert noise.chacha20_block(key, counter, nonce) == enc.update(bytes(64))


def splitmix64_key(seed):
    mask = 2**64 - 1
    out = b""
    for _ in range(4):
        seed = (seed + 0x9E3779B97F4A7C15) & mask
        z = seed
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        out += (z ^ (z >> 31)).to_bytes(8, "little")
    return out


@pytest.mark.parametrize("seed", [0, 42, 2**64 - 1])
def test_seeded_stream_is_chacha20_keystream(seed):
    # SecureRng(seed) = ChaCha20 keystream (key = splitmix64 expansion, zero nonce, counter 0..)
    # read as little-endian u64s; 100 words cross several 4-block refills.
    key = splitmix64_key(seed)
    stream = b"".join(noise.chacha20_block(key, b, bytes(12)) for b in range(13))
    want = [int.from_bytes(stream[8 * i : 8 * i + 8], "little") for i in range(100)]
    r = make_rng(seed)
    assert [r.next_u64() for _ in range(100)] == want


def test_seeded_reproducible_and_unseeded_differ():
    a, b = make_rng(123), make_rng(123)
    assert a.seeded and b.seeded
    assert [a.next_u64() for _ in range(50)] == [b.next_u64() for _ in range(50)]
    assert np.array_equal(noise.discrete_laplace(a, 7, 2, 1000), noise.discrete_laplace(b, 7, 2, 1000))
    assert np.array_equal(noise.discrete_gaussian(a, 9, 1, 1000), noise.discrete_gaussian(b, 9, 1, 1000))
    assert [make_rng(1).next_u64() for _ in range(4)] != [make_rng(2).next_u64() for _ in range(4)]

    u, v = noise.SecureRng(), noise.SecureRng(seed=None)
    assert not u.seeded and not v.seeded
    assert [u.next_u64() for _ in range(4)] != [v.next_u64() for _ in range(4)]
    assert "seeded" in repr(a) and "os-keyed" in repr(u)


def test_uniform_below_is_uniform_and_in_range():
    r = make_rng(7)
    draws = np.array([r.uniform_below(7) for _ in range(70_000)])
    assert draws.min() == 0 and draws.max() == 6
    assert stats.chisquare(np.bincount(draws, minlength=7)).pvalue > ALPHA
    # n = 3·2^62 rejects a quarter of the raw draws; the top two bits must be uniform on {0,1,2}.
    n = 3 * 2**62
    big = [r.uniform_below(n) for _ in range(30_000)]
    assert max(big) < n
    assert stats.chisquare(np.bincount([x >> 62 for x in big], minlength=3)).pvalue > ALPHA
    assert r.uniform_below(1) == 0
    with pytest.raises(ValueError):
        r.uniform_below(0)


# ---------------------------------------------------------------------------------------------
# Discrete Laplace

LAPLACE_SCALES = [Fraction(1, 2), Fraction(1), Fraction(37, 10), Fraction(10), Fraction(100)]


def dyadic_laplace_scale():
    # scale = 1/ε with ε = dyadic_down(0.3): a large num/den, as the privacy code produces.
    num, den = noise.dyadic_down(0.3)
    return Fraction(den, num)


@pytest.mark.parametrize("scale", LAPLACE_SCALES + [dyadic_laplace_scale()], ids=str)
def test_discrete_laplace_chisquare_and_moments(scale):
    grid = dlap_grid(float(scale))
    pmf = dlap_pmf(float(scale), grid)
    assert abs(pmf.sum() - 1) < 1e-12  # the normalising constant of §1 is right
    x = noise.discrete_laplace(make_rng(1000 + scale.numerator), *frac_args(scale), N)
    assert x.dtype == np.int64 and x.shape == (N,)
    assert chisq_pvalue(x, grid, pmf) > ALPHA
    q = math.exp(-1 / float(scale))
    _, var, _ = moments(grid, pmf)
    assert var == pytest.approx(2 * q / (1 - q) ** 2, rel=1e-9)
    assert_mean_var(x, grid, pmf)


@pytest.mark.parametrize("scale", [Fraction(1), Fraction(37, 10), Fraction(10)], ids=str)
def test_discrete_laplace_tails(scale):
    s = float(scale)
    x = noise.discrete_laplace(make_rng(77), *frac_args(scale), N)
    for t in [0, 1, 2, math.ceil(2 * s), math.ceil(5 * s)]:
        gt = math.exp(-t / s) / (1 + math.exp(1 / s))  # P(Z > t)
        ge = math.exp(-t / s) / (1 + math.exp(-1 / s))  # P(Z >= t), t >= 1
        abs_gt = 2 * math.exp(-t / s) / (1 + math.exp(1 / s))  # P(|Z| > t)
        for p, hits in [(gt, (x > t).sum()), (abs_gt, (np.abs(x) > t).sum())] + (
            [(ge, (x >= t).sum())] if t >= 1 else []
        ):
            assert abs(hits / N - p) < 5 * math.sqrt(p * (1 - p) / N) + 1e-9, (t, p, hits)


def test_discrete_laplace_harness_has_power():
    # Samples at scale 1 must be rejected against the pmf for scale 1.05.
    x = noise.discrete_laplace(make_rng(5), 1, 1, N)
    grid = dlap_grid(1.05)
    assert chisq_pvalue(x, grid, dlap_pmf(1.05, grid)) < ALPHA


def test_discrete_laplace_large_scale_near_limit():
    scale = 2**48 - 1
    x = noise.discrete_laplace(make_rng(9), scale, 1, 2000)
    assert np.abs(x).max() < 40 * scale
    assert np.median(np.abs(x)) > scale / 4  # median of |Z| is about s·ln 2


# ---------------------------------------------------------------------------------------------
# Discrete Gaussian

GAUSS_SIGMA2 = [Fraction(1, 4), Fraction(1), Fraction(5, 2), Fraction(30), Fraction(1000)]


def dyadic_sigma2():
    # σ² = Δ²/(2ρ) with ρ = dyadic_down(0.01), Δ² = 32 (a 32-row sketch).
    num, den = noise.dyadic_down(0.01)
    return Fraction(32 * den, 2 * num)


@pytest.mark.parametrize("sigma2", GAUSS_SIGMA2 + [dyadic_sigma2()], ids=str)
def test_discrete_gaussian_chisquare_and_moments(sigma2):
    grid = dgauss_grid(float(sigma2))
    pmf = dgauss_pmf(float(sigma2), grid)
    x = noise.discrete_gaussian(make_rng(2000 + sigma2.numerator % 1000), *frac_args(sigma2), N)
    assert x.dtype == np.int64 and x.shape == (N,)
    assert chisq_pvalue(x, grid, pmf) > ALPHA
    assert_mean_var(x, grid, pmf)
    if sigma2 >= 1:  # CKS20: σ²(1 − 4π²σ²/(e^{4π²σ²} − 1)) ≤ Var ≤ σ², so Var ≈ σ² here
        assert moments(grid, pmf)[1] == pytest.approx(float(sigma2), rel=1e-6)


def test_discrete_gaussian_harness_has_power():
    x = noise.discrete_gaussian(make_rng(6), 1, 1, N)
    grid = dgauss_grid(1.05)
    assert chisq_pvalue(x, grid, dgauss_pmf(1.05, grid)) < ALPHA


def test_discrete_gaussian_large_sigma2():
    sigma2 = 2**57  # close to the documented exact-arithmetic limit
    x = noise.discrete_gaussian(make_rng(8), sigma2, 1, 4000).astype(np.float64)
    assert x.var() / sigma2 == pytest.approx(1.0, abs=5 * math.sqrt(2 / 4000))


# ---------------------------------------------------------------------------------------------
# Bernoulli(exp(-γ))


@pytest.mark.parametrize("gamma", [Fraction(3, 10), Fraction(1), Fraction(5, 2), Fraction(7)], ids=str)
def test_bernoulli_exp_frequency(gamma):
    n = 1_000_000
    b = noise.bernoulli_exp(make_rng(300 + gamma.numerator), *frac_args(gamma), n)
    assert b.dtype == np.bool_ and b.shape == (n,)
    p = math.exp(-float(gamma))
    assert stats.binomtest(int(b.sum()), n, p).pvalue > ALPHA


def test_bernoulli_exp_extremes():
    r = make_rng(11)
    assert noise.bernoulli_exp(r, 0, 1, 10_000).all()  # exp(0) = 1
    assert noise.bernoulli_exp(r, 0, 5, 10_000).all()
    assert not noise.bernoulli_exp(r, 10**6, 1, 10_000).any()  # exp(-10^6) ≈ 0, and fast
    b = noise.bernoulli_exp(r, 1, 2**40, 100_000)  # γ ≈ 0: P(False) ≈ 9e-13
    assert b.all()


def test_bernoulli_exp_harness_has_power():
    b = noise.bernoulli_exp(make_rng(12), 3, 10, 1_000_000)
    assert stats.binomtest(int(b.sum()), len(b), math.exp(-0.31)).pvalue < ALPHA


# ---------------------------------------------------------------------------------------------
# dyadic_down


@pytest.mark.parametrize("x", [0.1, 0.3, 1 / 3, 1.0, 2.5, 1e-9, 12345.678, 2**31 - 1e-3, math.pi])
@pytest.mark.parametrize("frac_bits", [32, 10, 0])
def test_dyadic_down_rounds_down(x, frac_bits):
    if x < 2.0**-frac_bits:
        with pytest.raises(ValueError):
            noise.dyadic_down(x, frac_bits)
        return
    num, den = noise.dyadic_down(x, frac_bits)
    q, step = Fraction(num, den), Fraction(1, 2**frac_bits)
    assert q <= Fraction(x) < q + step  # largest multiple of 2^-frac_bits that is <= x
    assert (2**frac_bits) % den == 0 and math.gcd(num, den) == 1


def test_dyadic_down_exact_values_and_default():
    assert noise.dyadic_down(0.5) == (1, 2)
    assert noise.dyadic_down(3.0) == (3, 1)
    assert noise.dyadic_down(0.1) == (429496729, 2**32)  # floor(0.1·2^32) = 429496729.6 ↓
    assert noise.dyadic_down(0.75, frac_bits=1) == (1, 2)


@pytest.mark.parametrize(
    "x, frac_bits",
    [
        (float("nan"), 32),
        (float("inf"), 32),
        (float("-inf"), 32),
        (0.0, 32),
        (-0.0, 32),
        (-1.0, 32),
        (2.0**31, 32),  # limit: x < 2^(63 - frac_bits)
        (1e-11, 32),  # below 2^-32: would round to 0
        (1.0, -1),
        (1.0, 63),
    ],
)
def test_dyadic_down_rejects(x, frac_bits):
    with pytest.raises(ValueError):
        noise.dyadic_down(x, frac_bits)


# ---------------------------------------------------------------------------------------------
# Argument validation


@pytest.mark.parametrize("sampler", ["discrete_laplace", "discrete_gaussian", "bernoulli_exp"])
def test_invalid_arguments(sampler):
    f = getattr(noise, sampler)
    r = make_rng(0)
    with pytest.raises(ValueError, match="_den"):
        f(r, 1, 0, 10)
    with pytest.raises(ValueError, match="_den"):
        f(r, 1, 0, 0)  # parameters are checked even when no sample is drawn
    with pytest.raises(ValueError, match="non-negative"):
        f(r, -1, 1, 10)
    with pytest.raises(ValueError, match="size"):
        f(r, 1, 1, -1)
    with pytest.raises(OverflowError):
        f(r, 2**64, 1, 1)
    with pytest.raises(TypeError):
        f(r, 1.5, 1, 1)
    assert f(r, 1, 1, 0).shape == (0,)
    assert f(r, np.int64(3), np.uint32(2), 3).shape == (3,)  # numpy integers are accepted


def test_invalid_scales():
    r = make_rng(0)
    with pytest.raises(ValueError, match="scale must be > 0"):
        noise.discrete_laplace(r, 0, 1, 1)
    with pytest.raises(ValueError, match="sigma2 must be > 0"):
        noise.discrete_gaussian(r, 0, 3, 1)
    with pytest.raises(OverflowError, match="2\\^48"):
        noise.discrete_laplace(r, 2**48, 1, 1)
    with pytest.raises(OverflowError, match="sigma2"):
        noise.discrete_gaussian(r, 2**64 - 1, 1, 1)
    with pytest.raises(OverflowError, match="sigma2"):
        noise.discrete_gaussian(r, 2**62, 1, 1)


def test_invalid_rng_and_block_arguments():
    with pytest.raises(ValueError):
        noise.SecureRng(-1)
    with pytest.raises(OverflowError):
        noise.SecureRng(2**64)
    with pytest.raises(TypeError):
        noise.SecureRng(1.0)
    with pytest.raises(ValueError, match="key"):
        noise.chacha20_block(bytes(31), 0, bytes(12))
    with pytest.raises(ValueError, match="nonce"):
        noise.chacha20_block(bytes(32), 0, bytes(8))
    with pytest.raises(ValueError, match="counter"):
        noise.chacha20_block(bytes(32), 2**32, bytes(12))
