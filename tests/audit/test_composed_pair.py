"""The composed audit pair (dpsketch/audit/_composed_pairs.py; docs/accounting.md): k Gaussian
releases at the per-release ρ the tight rule allows pass against the claimed total, and a copy
whose noise is calibrated to a total 2x larger than claimed FAILS the μ-test."""

import math

import pytest

from dpsketch.audit._composed_pairs import COMPOSED_RELEASES
from dpsketch.audit._pairs import PAIRS, Ctx

pytestmark = pytest.mark.audit

NAME = f"Budget[{COMPOSED_RELEASES}x PrivateCountMin-gaussian]"


def _run(noise):
    (p,) = [p for p in PAIRS if p.mechanism == NAME]
    ctx = Ctx(1.0, 1e-6, 0.2, 20_000, 1 - 1e-3 / p.tests, 5, noise)
    ctx.mechanism, ctx.case = p.mechanism, p.case
    return p.fn(ctx)


def test_composed_pair_passes_at_the_tight_noise():
    import dpsketch.audit  # noqa: F401  (registers the pairs)

    r = _run(1.0)
    assert r.verdict == "pass" and r.mu_hat <= r.mu
    assert r.notes["conversion"] == "CKS20"


def test_composed_pair_fails_noise_for_twice_the_claimed_total():
    import dpsketch.audit  # noqa: F401

    r = _run(1 / math.sqrt(2))  # σ/√2: the k releases compose to 2R, the claim stays R
    assert r.verdict == "FAIL" and r.mu_hat > r.mu
