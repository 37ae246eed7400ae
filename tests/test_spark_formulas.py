"""The constants of the Spark routes (docs/privacy.md §Distributed releases), checked against their
defining inequalities; no Spark needed."""

import math

import pytest

from dpsketch import spark as dps
from dpsketch.private import zcdp_to_dp


@pytest.mark.parametrize("eps, delta", [(0.1, 1e-6), (1.0, 1e-5), (5.0, 1e-9), (1e-3, 0.3)])
def test_rho_for_is_the_largest_rho_within_epsilon(eps, delta):
    rho = dps._rho_for(eps, delta)
    assert zcdp_to_dp(rho, delta) <= eps
    assert zcdp_to_dp(rho * (1 + 1e-9), delta) > eps * (1 - 1e-6)


def _p_ge(eps, t):  # P(DLap(1/eps) >= t), t >= 1 (docs/algorithms.md §1)
    return math.exp(-eps * t) / (1 + math.exp(-eps))


@pytest.mark.parametrize("eps, delta", [(0.1, 1e-6), (0.5, 1e-3), (2.0, 1e-9), (0.01, 0.4)])
def test_lookup_t_is_the_smallest_valid_integer(eps, delta):
    t = dps._lookup_t(eps, delta)
    assert t >= 1 and _p_ge(eps, t) <= delta
    assert t == 1 or _p_ge(eps, t - 1) > delta


def test_partition_seeds_are_distinct_and_reproducible():
    seeds = {dps._partition_seed(5, p) for p in range(-5, 100)}
    assert len(seeds) == 105
    assert dps._partition_seed(5, 3) == dps._partition_seed(5, 3)
    assert dps._partition_seed(None, 3) is None
