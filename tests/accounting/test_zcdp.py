"""The zCDP arithmetic of tight accounting (dpsketch.accounting.zcdp; docs/accounting.md):
CKS20 against Google's dp_accounting and an independent high-precision evaluation of the paper's
formula, the exact discrete-Laplace zCDP against mpmath and the continuous limit."""

import math

import numpy as np
import pytest

from dpsketch.accounting import zcdp

RHOS = [1e-4, 1e-3, 0.01, 0.05, 0.1, 0.5, 1.0, 3.0]
DELTAS = [1e-3, 1e-6, 1e-9, 1e-12]


def _sig3(a, b):
    return abs(a - b) <= 5e-4 * max(abs(a), abs(b))


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("rho", RHOS)
def test_cks20_epsilon_matches_dp_accounting(rho, delta):
    dp_event = pytest.importorskip("dp_accounting.dp_event")
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    acc = rdp.RdpAccountant(list(1 + np.exp(np.linspace(-10, 12, 6000))))
    acc.compose(dp_event.ZCDpEvent(rho))
    theirs = acc.get_epsilon(delta)
    ours = zcdp.cks20_epsilon(rho, delta)
    assert _sig3(ours, theirs)
    assert ours >= theirs * (1 - 1e-5)  # never meaningfully tighter (theirs searches a grid of orders)


def _cks20_reference(rho, delta):
    """The paper's formula (CKS20 Prop. 12) minimised over α with mpmath at 40 digits."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    rho, L = mp.mpf(rho), -mp.log(mp.mpf(delta))

    def eps(x):  # α = 1 + e^x
        a = 1 + mp.e ** x
        return a * rho + mp.log(1 - 1 / a) + (L - mp.log(a)) / (a - 1)

    xs = [mp.mpf(-12) + i * mp.mpf(26) / 2000 for i in range(2001)]
    best = min(xs, key=eps)
    x = mp.findroot(lambda t: mp.diff(eps, t), best)
    return float(min(eps(x), eps(best)))


@pytest.mark.parametrize("delta", [1e-6, 1e-9])
@pytest.mark.parametrize("rho", [1e-3, 0.05, 1.0])
def test_cks20_epsilon_matches_the_paper_formula(rho, delta):
    ref = _cks20_reference(rho, delta)
    ours = zcdp.cks20_epsilon(rho, delta)
    assert ref <= ours <= ref * (1 + 1e-8)


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("rho", RHOS)
def test_cks20_is_never_looser_than_the_classic_conversion(rho, delta):
    assert zcdp.cks20_epsilon(rho, delta) <= zcdp.classic_epsilon(rho, delta)


@pytest.mark.parametrize("rho", [1e-3, 0.1, 1.0])
@pytest.mark.parametrize("delta", [1e-6, 1e-9])
def test_cks20_delta_and_rho_for_invert_epsilon(rho, delta):
    e = zcdp.cks20_epsilon(rho, delta)
    assert zcdp.cks20_delta(rho, e) <= delta * (1 + 1e-6)
    assert zcdp.cks20_delta(rho, e * 0.99) > delta
    r = zcdp.cks20_rho_for(e, delta)
    assert zcdp.cks20_epsilon(r, delta) <= e
    assert r == pytest.approx(rho, rel=1e-6)


def test_cks20_delta_matches_dp_accounting():
    dp_event = pytest.importorskip("dp_accounting.dp_event")
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    for rho, eps in [(0.01, 0.5), (0.1, 2.0), (1.0, 6.0)]:
        acc = rdp.RdpAccountant(list(1 + np.exp(np.linspace(-10, 12, 6000))))
        acc.compose(dp_event.ZCDpEvent(rho))
        assert _sig3(zcdp.cks20_delta(rho, eps), acc.get_delta(eps))


def test_measured_gain_24_gaussian_releases():
    """The issue's figure: 24 Gaussian releases at (1, 1e-6) take 1.4x less noise variance with
    CKS20 than with ρ + 2√(ρ ln 1/δ)."""
    classic_rho = (math.sqrt(math.log(1e6) + 1) - math.sqrt(math.log(1e6))) ** 2
    ratio = zcdp.cks20_rho_for(1.0, 1e-6) / classic_rho
    assert 1.35 <= ratio <= 1.45


# -- discrete Laplace ---------------------------------------------------------------------------------

def _dlap_renyi_mp(alpha, epsilon, s):
    """D_α of DLap(t = ε/s) against its shift by s, summed term by term with mpmath (60 digits)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 60
    a, t = mp.mpf(alpha), mp.mpf(epsilon) / s
    c = mp.tanh(t / 2)
    total = mp.mpf(0)
    span = int(80 / float(t)) + 10
    for z in range(-span, span + s):
        p = c * mp.e ** (-t * abs(z))
        q = c * mp.e ** (-t * abs(z - s))
        total += p ** a * q ** (1 - a)
    return total, a


@pytest.mark.parametrize("epsilon,s", [(1.0, 1), (0.3, 2), (2.0, 3)])
def test_dlaplace_renyi_matches_mpmath(epsilon, s):
    mp = pytest.importorskip("mpmath")
    for alpha in [1.01, 1.5, 3.0, 20.0]:
        total, a = _dlap_renyi_mp(alpha, epsilon, s)
        ref = float(mp.log(total) / (a - 1))
        assert zcdp.dlaplace_renyi(alpha, epsilon, s) == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("epsilon", [0.05, 1 / 3, 1.0, 3.0])
def test_dlaplace_zcdp_bounds_the_supremum_tightly(epsilon):
    """The returned ρ is >= D_α/α at every order (a dense high-precision scan never beats it) and
    within the tolerance of the best order found; between ε + e^{−ε} − 1 and ε²/2 at Δ1 = 1. At
    Δ1 = 1 and ε >= 1 the supremum is the limit α -> 1, the KL divergence ε·tanh(ε/2)."""
    mp = pytest.importorskip("mpmath")
    rho = zcdp.dlaplace_zcdp(epsilon, 1)
    scan = []
    for x in [-30.0, *np.linspace(-6, 6, 25)]:  # the supremum can sit at α -> 1 (KL)
        alpha = 1 + math.exp(x)
        total, a = _dlap_renyi_mp(alpha, epsilon, 1)
        scan.append(float(mp.log(total) / (a - 1) / a))
    assert max(scan) <= rho
    assert rho <= max(scan) * (1 + 2e-4)
    assert epsilon + math.exp(-epsilon) - 1 < rho <= epsilon ** 2 / 2
    assert rho >= epsilon * math.tanh(epsilon / 2) * (1 - 1e-9)  # the KL divergence, D_α at α -> 1


@pytest.mark.parametrize("epsilon", [0.05, 1.0, 3.0])
def test_dlaplace_zcdp_tends_to_the_continuous_laplace(epsilon):
    """At fixed ε the discrete law with a growing sensitivity (finer grid) approaches the
    continuous Laplace, whose zCDP is exactly ε + e^{−ε} − 1 (Harrison & Manurangsi), from above."""
    cont = epsilon + math.exp(-epsilon) - 1
    values = [zcdp.dlaplace_zcdp(epsilon, s) for s in (1, 4, 32, 2048)]
    assert all(b <= a * (1 + 1e-5) for a, b in zip(values, values[1:]))
    assert values[-1] == pytest.approx(cont, rel=1e-4)
    assert all(v >= cont * (1 - 1e-5) for v in values)


def test_laplace_three_releases_cost_more_in_zcdp_than_basic():
    """§11: 3 Laplace releases at ε = 1/3 composed in zCDP then converted at δ = 1e-6 cost far more
    than basic composition's ε = 1 (the reason pure spends are routed, not always converted)."""
    rho = 3 * zcdp.dlaplace_zcdp(1 / 3)
    assert zcdp.cks20_epsilon(rho, 1e-6) > 1.0


def test_bounded_range_and_pure():
    assert zcdp.bounded_range_zcdp(1.0) == 0.125
    assert zcdp.pure_zcdp(1.0) == 0.5
    assert zcdp.gaussian_zcdp(1, 4.0) == 0.125
