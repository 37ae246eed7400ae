"""PMG's corrected privacy bound (docs/privacy.md §PMG "Why δ/6"): the unstable labels cost
δ_U(t) = 2(1 + e^ε)·P(η + Z ≥ 2t), the closed form of that tail is exact, and the spec's t (from
P(Z ≥ t) ≤ δ/6) already keeps δ_U(t) below δ."""

import math

import numpy as np
import pytest

import dpsketch as d
from dpsketch import _core

R = _core.release


def _dlap_sum_tail(eps, s0, half_width=4000):
    """P(η + Z ≥ s0) by numerical convolution of two DLap(1/ε) pmfs (independent of the closed form)."""
    q = math.exp(-eps)
    z = np.arange(-half_width, half_width + 1)
    pmf = (1 - q) / (1 + q) * q ** np.abs(z)
    conv = np.convolve(pmf, pmf)
    s = np.arange(-2 * half_width, 2 * half_width + 1)
    return conv[s >= s0].sum()


@pytest.mark.parametrize("eps", [0.05, 0.3, 1.0, 3.0])
@pytest.mark.parametrize("t", [1, 2, 5, 17])
def test_sum_tail_closed_form_equals_convolution(eps, t):
    exact = _dlap_sum_tail(eps, 2 * t)
    assert R.dlap_sum_tail_ge_2t(eps, t) == pytest.approx(exact, rel=1e-9, abs=1e-300)


def _h(q, t):
    return q ** (t - 1) * ((1 + q) + 2 * t * (1 - q) - q * (1 - q) / (1 + q))


@pytest.mark.parametrize("q", [1e-9, 0.01, 0.3, 0.9, 0.999999])
def test_h_is_decreasing_and_below_three(q):
    # Step 4 of the derivation: h(1) < 3 and h decreasing, so 2·P(Z≥t)·h(t) < 6·P(Z≥t) <= δ.
    hs = [_h(q, t) for t in range(1, 400)]
    assert hs[0] < 3
    assert all(b < a for a, b in zip(hs, hs[1:]) if a > 1e-300)


@pytest.mark.parametrize("eps", [0.001, 0.01, 0.1, 0.5, 1.0, 2.0, 10.0, 40.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 1e-3, 0.1, 0.49])
def test_spec_t_keeps_unstable_delta_below_delta(eps, delta):
    e = R.epsilon_used(eps)
    t = R.pmg_t(eps, delta)
    # t is exactly the spec's δ/6 rule (the numerical guard never had to raise it) ...
    t_spec = 1
    while math.exp(-e * t_spec) / (1 + math.exp(-e)) > delta / 6:
        t_spec += 1
    assert t == t_spec
    # ... and the corrected bound holds for it, with the identity of step 4.
    du = R.pmg_unstable_delta(e, t)
    assert du < delta
    p_ge_t = math.exp(-e * t) / (1 + math.exp(-e))
    assert du == pytest.approx(2 * p_ge_t * _h(math.exp(-e), t), rel=1e-9, abs=1e-300)


def test_the_old_union_bound_would_exceed_delta_with_the_e_eps_weight():
    # Why the correction matters: budgeting δ/2 per side with the e^ε weight on the other side gives
    # δ/2·(1 + e^ε) > δ; the exact tail is what brings the true cost under δ.
    eps, delta = 1.0, 1e-3
    t = R.pmg_t(eps, delta)
    per_side_union = 3 * math.exp(-eps * t) / (1 + math.exp(-eps))  # P(η ≥ t) + 2 P(Z ≥ t)
    assert per_side_union * (1 + math.exp(eps)) > delta
    assert R.pmg_unstable_delta(eps, t) < delta / 100


def test_pmg_release_records_the_unstable_label_delta():
    mg = d.MisraGries(8)
    mg.update_many(np.arange(100) % 5)
    rel = mg.release(epsilon=1.0, delta=1e-3, seed=3)
    t = rel.metadata["t"]
    assert rel.metadata["delta_unstable_labels"] == pytest.approx(R.pmg_unstable_delta(R.epsilon_used(1.0), t))
    assert rel.metadata["delta_unstable_labels"] < rel.delta
