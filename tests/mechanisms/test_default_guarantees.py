"""The guarantees a release prints hold by default (docs/privacy.md §Stream length, §Error
envelope): the length is private, the totals are what was asked for, and the envelope's δ is sized
for the noise it shares with the released values."""

from __future__ import annotations

import math

import pytest

import dpsketch as d
from dpsketch import _core

R = _core.release

# One SpaceSaving(10) partition of the Spark counters-route reproduction: n = 40 and, one `4`
# removed, n = 39. With a public n the DPSS threshold moves from 17 to 16.9 (k = 5, ε = 1,
# δ = 1e-5, γ = 12), so key 2 (count 17 on both sides) can be released with value 17 on one side
# only: P ≈ 0.46 against 0.
_X = [2] * 17 + [4, 5, 8, 12, 14] * 3 + [15, 16, 17, 18] * 2
_XP = list(_X)
_XP.remove(4)


def _rate_of_value_17(stream, runs, **kw):
    hits = 0
    for seed in range(runs):
        ss = d.SpaceSaving(10)
        ss.update_many(sorted(stream))
        hits += (2, 17) in ss.release(epsilon=1.0, delta=1e-5, k=5, seed=seed, **kw).items
    return hits / runs


def test_default_dpss_threshold_does_not_read_the_exact_length():
    runs = 1500
    px, pxp = _rate_of_value_17(_X, runs), _rate_of_value_17(_XP, runs)
    slack = 5 * math.sqrt(0.25 / runs)
    assert px <= math.e * pxp + 1e-5 + slack and pxp <= math.e * px + 1e-5 + slack


def test_public_length_is_calibrated_for_replace_one():
    # the same pair under the opt-in: X and X' are not replace-one neighbours (n differs), and the
    # mechanism runs at ε/2, δ/(1 + e^{ε/2}); the release says which relation holds
    ss = d.SpaceSaving(10)
    ss.update_many(sorted(_X))
    r = ss.release(epsilon=1.0, delta=1e-5, k=5, seed=1, public_length=True)
    m = r.metadata
    assert m["neighbours"] == "replace" and m["length"] == "public" and r.n == len(_X)
    assert m["epsilon_used"] == R.epsilon_used(0.5)
    assert m["gamma"] == R.dpss_gamma(0.5, 1e-5 / (1 + math.exp(0.5)))
    assert r.epsilon <= 1.0 and r.delta <= 1e-5 and r.epsilon == pytest.approx(1.0)


@pytest.mark.parametrize("make", [
    lambda: d.SpaceSaving(16).release(epsilon=0.3, delta=1e-4, k=4, seed=1),
    lambda: d.MisraGries(16).release(epsilon=0.3, delta=1e-4, k=4, seed=1),
    lambda: d.MisraGries(16).release(epsilon=0.3, delta=1e-4, seed=1),
    lambda: d.SketchHeavyHitters(k=2, capacity=8, epsilon=0.3, delta=1e-4, max_stream_length=100, seed=1).release(),
])
def test_every_release_reports_what_was_asked_and_states_its_model(make):
    r = make()
    m = r.metadata
    assert r.epsilon <= 0.3 and r.epsilon == pytest.approx(0.3, rel=1e-8)
    assert r.delta <= 1e-4 and r.delta == pytest.approx(1e-4, rel=1e-12)
    assert m["privacy_unit"] == "one stream element" and m["neighbours"] == "add_remove"
    assert m["length"] in ("private", "unused") and m["assumes_public_length"] is False
    if m["length"] == "unused":
        assert r.n is None and "n_used" not in m


def test_envelope_delta_is_sized_for_the_shared_noise():
    h = d.SketchHeavyHitters(k=2, capacity=8, epsilon=1.0, delta=1e-4, max_stream_length=1000, seed=2)
    h.update_many([1] * 500 + [2] * 100)
    m = h.release().metadata
    e, dm = m["epsilon_used"], m["delta_mechanism"]
    assert m["delta_envelope"] == pytest.approx(dm / (1 + math.exp(e)))
    assert m["delta_noise"] == m["delta_hash"] == pytest.approx(m["delta_envelope"] / 2)
    # γ_N is an integer whose integer tail meets δ_N over every noisy cell
    g, cells, sens = m["gamma_noise"], m["noisy_cells"], m["l1_sensitivity"]
    a = e / sens
    tail = lambda t: cells * 2 * math.exp(-a * t) / (1 + math.exp(a))  # noqa: E731
    assert float(g).is_integer() and tail(g) <= m["delta_noise"] < tail(g - 1)


def test_length_bound_covers_the_longer_neighbour():
    # t_n is sized for P(Z >= t_n) <= δ_n, so n̂ + t_n >= n + 1 except with probability δ_n
    for eps, dn in ((0.1, 1e-6), (1.0, 1e-3), (0.01, 0.1)):
        t = R.length_t(eps, dn)
        e = R.epsilon_used(eps)
        assert math.exp(-e * t) / (1 + math.exp(-e)) <= dn < math.exp(-e * (t - 1)) / (1 + math.exp(-e))


def test_release_guarantee_is_a_typed_record():
    ss = d.SpaceSaving(8)
    ss.update_many([1] * 50 + [2] * 3)
    g = ss.release(epsilon=1.0, delta=1e-6, k=2, seed=1).guarantee
    assert (g.mechanism, g.privacy_unit, g.neighbours, g.length) == ("DPSS", "one stream element", "add_remove", "private")
    assert g.epsilon == 1.0 and g.delta == pytest.approx(1e-6) and g.rho is None
    assert g.reproducible_not_secret is True and g.release_index == 1
    mg = d.MisraGries(8)
    mg.update_many([1] * 50)
    g = mg.release(epsilon=1.0, delta=1e-6, k=2, public_length=True).guarantee
    assert (g.neighbours, g.length) == ("replace", "public") and g.reproducible_not_secret is False
