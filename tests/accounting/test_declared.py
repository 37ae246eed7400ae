"""Declared plans (docs/accounting.md §Declared plans): composed exactly with PLDs, calibrated to
the declared total, charged once, and refusing every release outside the plan."""

import math

import pytest

import dpsketch
from dpsketch import Budget
from dpsketch.accounting.declared import PlannedRelease, calibrate_plan, plan_epsilon
from dpsketch.accounting.zcdp import cks20_rho_for
from dpsketch.errors import BudgetExceededError

pytest.importorskip("dp_accounting")


def test_gaussian_plan_needs_less_noise_than_the_adaptive_rule():
    """24 Gaussian releases at (1, 1e-6): the PLD plan allows 1.7x less noise variance than
    the adaptive Budget(1, 1e-6) did (ρ + 2√(ρ ln 1/δ) at its default zcdp_delta = δ/2; the issue's
    measurement), and more than CKS20 at the full δ."""
    plan = calibrate_plan([PlannedRelease("discrete_gaussian", count=24)], 1.0, 1e-6)
    assert plan.epsilon <= 1.0
    rho_plan = 24 / (2 * plan.sigma ** 2)
    L = math.log(2e6)
    rho_classic = (math.sqrt(L + 1) - math.sqrt(L)) ** 2
    assert 1.65 <= rho_plan / rho_classic <= 1.75
    assert rho_plan > cks20_rho_for(1.0, 1e-6)


def test_thresholded_series_composes_to_2_99():
    """168 hourly (0.05, 1e-9) thresholded releases: ε = 2.99 at δ = 1e-6 (basic: 8.4)."""
    e = plan_epsilon([PlannedRelease("approx", count=168, epsilon=0.05, delta=1e-9)], 1e-6)
    assert e == pytest.approx(2.99, abs=0.01)


def test_series_runs_in_order_and_refuses_releases_outside_the_plan():
    b = Budget(2.0, 1e-6)
    series = b.declare("hourly", [PlannedRelease("discrete_gaussian", count=3, coordinates=4)], epsilon=1.0, delta=1e-6)
    assert b.spent().epsilon == 1.0 and len(b.ledger) == 1  # charged once, at declaration
    rho = float(series.next().rho)
    with pytest.raises(BudgetExceededError, match="not the next release"):
        dpsketch.PrivateCountMin(256, 4, rho=rho * 2, budget=series)  # less noise than declared
    with pytest.raises(BudgetExceededError, match="not the next release"):
        dpsketch.PrivateCountMin(256, 4, epsilon=0.1, budget=series)  # another law
    for i in range(3):
        dpsketch.PrivateCountMin(256, 4, rho=rho, seed=i, budget=series)
    assert series.remaining == 0
    with pytest.raises(BudgetExceededError, match="not in the declared plan"):
        dpsketch.PrivateCountMin(256, 4, rho=rho, budget=series)
    assert len(b.ledger) == 1  # the plan's releases never run through the adaptive filter


def test_declaring_a_plan_that_does_not_fit_charges_nothing():
    b = Budget(0.5, 1e-6)
    with pytest.raises(BudgetExceededError):
        b.declare("too big", [PlannedRelease("discrete_gaussian", count=2)], epsilon=1.0, delta=1e-6)
    assert b.ledger == []


def test_adaptive_parameters_cannot_use_a_plan():
    """Adaptivity: the next release's parameters depend on an earlier output. Through the adaptive
    Budget only the filter's rules apply; a plan refuses the undeclared parameters."""
    b = Budget(4.0, 3e-6)
    series = b.declare("fixed", [PlannedRelease("discrete_gaussian", count=2, coordinates=3)], epsilon=1.0, delta=1e-6)
    rho = float(series.next().rho)
    first = dpsketch.PrivateCountMin(64, 3, rho=rho, seed=1, budget=series)
    first.update_many([1, 2, 3]) if hasattr(first, "update_many") else [first.update(x) for x in (1, 2, 3)]
    adaptive_rho = rho * (2 if first.estimate(1) > 0 else 3)  # chosen from an output
    with pytest.raises(BudgetExceededError):
        dpsketch.PrivateCountMin(64, 3, rho=adaptive_rho, budget=series)
    before = b.spent().epsilon
    # the adaptive filter: the plan was charged as one (ε, δ) spend, so this budget composes by
    # basic composition and refuses a zCDP spend; an ε-DP one is admitted
    with pytest.raises(BudgetExceededError, match="basic composition"):
        dpsketch.PrivateCountMin(64, 3, rho=adaptive_rho, budget=b)
    dpsketch.PrivateCountMin(64, 3, epsilon=adaptive_rho * 10, budget=b)
    assert b.ledger[-1].charged[0] > 0 and b.spent().epsilon > before
