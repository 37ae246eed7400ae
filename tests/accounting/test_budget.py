"""dpsketch.Budget (docs/privacy.md §Budget): composition arithmetic (ε adds, δ adds, ρ adds, the
zCDP conversion), the mixing rule, and exhaustion raising before any noise is drawn (no generator
made, release guard not advanced, nothing recorded)."""

from __future__ import annotations

import copy
import math
import pickle
from fractions import Fraction

import numpy as np
import pytest

import dpsketch
from dpsketch import Budget
from dpsketch.accounting.zcdp import cks20_epsilon, cks20_rho_for, dlaplace_zcdp
from dpsketch.errors import BudgetExceededError, ReleaseBudgetError
from dpsketch import _seeds as seeds_mod


def _used(x: float) -> Fraction:
    """ε rounded down to a multiple of 2^-32 (docs/algorithms.md §1), computed independently."""
    return Fraction(math.floor(x * 2**32), 2**32)


def _stream():
    rng = np.random.default_rng(7)
    heavy = np.repeat(np.arange(5, dtype=np.int64), 2000)
    return np.concatenate([heavy, rng.integers(100, 10_000, 5000)])


def _ss(stream=None):
    ss = dpsketch.SpaceSaving(64)
    ss.update_many(_stream() if stream is None else stream)
    return ss


def _mg():
    mg = dpsketch.MisraGries(64)
    mg.update_many(_stream())
    return mg


@pytest.fixture
def rng_calls(monkeypatch):
    """Counts generator construction in the release paths (every noise draw needs one)."""
    calls = []
    real = seeds_mod.rng

    def spy(seed, label="noise"):
        calls.append(seed)
        return real(seed, label)

    monkeypatch.setattr(seeds_mod, "rng", spy)
    return calls


# ------------------------------------------------------------------- composition arithmetic --


def test_epsilon_and_delta_add_exactly_and_match_the_releases():
    b = Budget(1.0, 1e-5)
    r1 = _ss().release(epsilon=0.25, delta=1e-6, k=10, seed=1, budget=b)
    r2 = _mg().release(epsilon=0.1, delta=2e-6, k=10, seed=2, budget=b)
    r3 = _ss().release(epsilon=0.125, delta=3e-6, k=10, seed=3, length_epsilon=0.0625, length_delta=1e-7, budget=b)
    # the length's share is carved out of each release's (ε, δ): the totals are the requests
    eps = Fraction(0.25) + _used(0.1) + Fraction(0.125)
    dlt = Fraction(1e-6) + Fraction(2e-6) + Fraction(3e-6)
    s = b.spent()
    assert s.epsilon == float(eps) and s.delta == float(dlt) and s.rho == 0.0
    # every ledger entry is what its release reports
    assert [(e.mechanism, e.epsilon, e.delta, e.rho) for e in b.ledger] == [
        (r.mechanism, r.epsilon, r.delta, 0.0) for r in (r1, r2, r3)
    ]
    assert b.remaining().epsilon == float(Fraction(1) - eps)
    assert b.remaining().delta <= float(Fraction(1e-5) - dlt)


def test_rho_adds_and_converts_with_the_reserved_delta():
    b = Budget(10.0, 1e-6, zcdp_delta=1e-7)
    dpsketch.PrivateCountMin(256, 4, rho=0.5, seed=1, budget=b)
    dpsketch.PrivateCountSketch(256, 4, rho=0.25, seed=2, budget=b)
    s = b.spent()
    assert s.rho == 0.75
    conv = cks20_epsilon(0.75, 1e-7)  # CKS20 (docs/accounting.md), below ρ + 2√(ρ ln(1/δ))
    assert conv < 0.75 + 2 * math.sqrt(0.75 * math.log(1e7))
    assert s.epsilon == pytest.approx(conv, rel=1e-12) and s.epsilon >= conv
    assert s.delta == 1e-7  # the reserve, charged once
    # the first spend was zCDP, so the budget composes in zCDP: a pure spend enters at its zCDP
    b.spend("external", epsilon=0.5)  # a generic pure ε-DP spend: ε²/2
    assert b.spent().rho == 0.75 + 0.125
    assert [(e.mechanism, e.epsilon, e.rho) for e in b.ledger] == [
        ("PrivateCountMin", 0.0, 0.5), ("PrivateCountSketch", 0.0, 0.25), ("external", 0.5, 0.0)
    ]
    # a Laplace sketch states its profile (depth cells moved by 1): charged at its exact zCDP
    dpsketch.PrivateCountMin(256, 4, epsilon=0.5, seed=3, budget=b)
    last = b.ledger[-1]
    assert last.profile[0].law == "discrete_laplace" and last.charged[0] == 0 and 0 < last.charged[2] < 0.5 ** 2 / 2
    # a generic (ε, δ) spend has no zCDP value: refused, nothing spent
    before = b.spent()
    with pytest.raises(BudgetExceededError, match="composes its spends in zCDP"):
        b.spend("thresholded", epsilon=0.1, delta=1e-9)
    assert b.spent() == before


def test_rho_is_charged_as_used_rounded_down():
    b = Budget(100.0, 1e-6)
    dpsketch.PrivateCountMin(64, 3, rho=0.1, seed=1, budget=b)
    assert b.ledger[0].rho == float(_used(0.1)) < 0.1


# ----------------------------------------------------------------------------- mixing rule --


def test_the_first_spend_fixes_the_accumulator():
    """An (ε, δ) budget composes by basic composition or in zCDP, whichever its first spend needs,
    and refuses the other kind afterwards: a split chosen spend by spend could follow the outputs
    (docs/accounting.md §The adaptive filter)."""
    b = Budget(2.0, 1e-6)  # zcdp_delta defaults to δ/2
    assert b.zcdp_delta == 5e-7
    L = math.log(1 / 5e-7)
    r_all = b.remaining().rho  # nothing spent: the whole cap as a zCDP total
    assert r_all == pytest.approx(cks20_rho_for(2.0, 5e-7), rel=1e-9)
    assert r_all > (math.sqrt(L + 2) - math.sqrt(L)) ** 2  # above the classic inverse
    b.spend("external", epsilon=1.0, delta=5e-7)
    assert b.remaining().rho == 0.0
    with pytest.raises(BudgetExceededError, match="basic composition"):
        b.spend("zcdp", rho=1e-6)
    b.spend("more", epsilon=1.0, delta=5e-7)
    s = b.spent()
    assert s.epsilon == 2.0 and s.delta == pytest.approx(1e-6, rel=1e-15) and s.rho == 0
    z = Budget(2.0, 1e-6)
    z.spend("zcdp", rho=0.05)
    left = z.remaining().rho
    assert left == pytest.approx(cks20_rho_for(2.0, 5e-7) - 0.05, rel=1e-9)
    with pytest.raises(BudgetExceededError):
        z.spend("too much", rho=left * 1.0001)
    z.spend("fits", rho=left)
    assert z.spent().epsilon <= 2.0


def test_rho_spend_needs_the_reserve_still_free():
    b = Budget(5.0, 1e-6)
    b.spend("uses all of delta", epsilon=0.5, delta=1e-6)
    assert b.remaining().rho == 0.0
    with pytest.raises(BudgetExceededError):
        b.spend("zcdp", rho=1e-6)
    assert len(b.ledger) == 1


def test_pure_budget_refuses_rho_and_delta():
    b = Budget(1.0)  # δ = 0: pure ε-DP only
    with pytest.raises(BudgetExceededError, match="delta share"):
        dpsketch.PrivateCountMin(64, 3, rho=0.01, budget=b)
    with pytest.raises(BudgetExceededError):
        _ss().release(epsilon=0.5, delta=1e-9, k=10, budget=b)
    dpsketch.PrivateCountMin(64, 3, epsilon=1.0, budget=b)  # exactly the cap
    assert b.spent().epsilon == 1.0 and b.remaining().epsilon == 0.0


def test_zcdp_budget_counts_pure_epsilon_as_half_epsilon_squared():
    b = Budget(rho=1.0)
    b.spend("external", epsilon=1.0)  # a generic ε-DP spend ⇒ ε²/2-zCDP
    assert b.spent().rho == 0.5 and b.spent().epsilon is None
    c = Budget(rho=1.0)
    dpsketch.PrivateCountSketch(64, 3, epsilon=1.0, budget=c)  # its profile: 3 cells moved by 1 each
    assert c.spent().rho == pytest.approx(3 * dlaplace_zcdp(1 / 3), rel=1e-9) and c.spent().rho < 0.5
    with pytest.raises(ValueError, match="delta"):
        _ss().release(epsilon=0.1, delta=1e-6, k=10, budget=b)
    dpsketch.PrivateCountMin(64, 3, rho=0.5, budget=b)
    assert b.remaining().rho == 0.0
    with pytest.raises(BudgetExceededError):
        b.spend("one more", rho=2**-40)


def test_fractions_not_floats():
    # 0.1 + 0.2 > 0.3 in exact arithmetic of the doubles: the third share of a split cap is refused
    # unless taken from remaining(), which is rounded down.
    b = Budget(0.3)
    b.spend("a", epsilon=0.1)
    with pytest.raises(BudgetExceededError):
        b.spend("b", epsilon=0.2)
    b.spend("b", epsilon=b.remaining().epsilon)
    assert Fraction(b.spent().epsilon) <= Fraction(0.3)


# ---------------------------------------------------------------- exhaustion before noise --


@pytest.mark.parametrize("make", [_ss, _mg])
def test_exhaustion_raises_before_noise_and_keeps_the_guard(make, rng_calls):
    summary = make()
    b = Budget(0.5, 1e-6)
    before = summary.to_bytes()
    with pytest.raises(BudgetExceededError) as exc:
        summary.release(epsilon=0.75, delta=1e-7, k=10, budget=b)
    assert isinstance(exc.value, ReleaseBudgetError)
    assert "nothing was spent" in str(exc.value)
    assert rng_calls == []  # no generator made: no noise drawn
    assert summary.to_bytes() == before
    assert b.ledger == [] and b.spent().epsilon == 0.0
    # the release guard did not advance: a release that fits is the first one (no allow_repeat)
    rel = summary.release(epsilon=0.5, delta=1e-7, k=10, seed=4, budget=b)
    assert rel.metadata["release_index"] == 1 and len(rng_calls) == 1
    assert b.spent().epsilon == 0.5


def test_exhaustion_by_length_epsilon_counts():
    b = Budget(1.0, 1e-5)
    with pytest.raises(BudgetExceededError):  # ε 1.5 > 1, whatever its length share
        _ss().release(epsilon=1.5, delta=1e-6, k=10, length_epsilon=0.5, budget=b)
    with pytest.raises(BudgetExceededError):  # δ 2e-5 > 1e-5
        _ss().release(epsilon=0.5, delta=2e-5, k=10, length_epsilon=0.25, budget=b)
    assert b.ledger == []
    r = _ss().release(epsilon=1.0, delta=1e-5, k=10, length_epsilon=0.5, budget=b)  # exactly the cap fits
    assert (r.epsilon, r.delta) == (1.0, 1e-5) and b.remaining().epsilon == 0.0


def test_private_sketch_charged_at_construction_before_noise(rng_calls):
    b = Budget(1.0, 1e-6)
    with pytest.raises(BudgetExceededError):
        dpsketch.PrivateCountMin(128, 4, epsilon=2.0, budget=b)
    with pytest.raises(BudgetExceededError):
        dpsketch.PrivateCountSketch(128, 4, rho=100.0, budget=b)
    assert rng_calls == [] and b.ledger == []
    dpsketch.PrivateCountMin(128, 4, epsilon=1.0, budget=b)
    assert len(rng_calls) == 1 and b.remaining().epsilon == 0.0


def test_bad_construction_is_not_charged():
    b = Budget(1.0, 1e-6)
    with pytest.raises(ValueError):
        dpsketch.PrivateCountMin(128, 4, epsilon=0.5, key_type="float", budget=b)
    assert b.ledger == []


def test_sketch_heavy_hitters_release_charged_before_noise(rng_calls):
    hh = dpsketch.SketchHeavyHitters("countmin", k=8, capacity=32, epsilon=0.5, delta=1e-4,
                                     max_stream_length=20_000, seed=3)
    hh.update_many(_stream())
    rng_calls.clear()
    small = Budget(0.4, 1e-3)
    with pytest.raises(BudgetExceededError):
        hh.release(budget=small)
    assert rng_calls == [] and small.ledger == []
    b = Budget(1.0, 1e-3)
    rel = hh.release(budget=b)  # first release: the guard did not advance
    assert rel.metadata["release_index"] == 1
    assert (b.ledger[0].epsilon, b.ledger[0].delta) == (rel.epsilon, rel.delta)
    assert b.ledger[0].mechanism == "SketchHeavyHitters[countmin]"


def test_shared_budget_across_summaries_runs_out():
    b = Budget(1.0, 1e-5)
    released = 0
    with pytest.raises(BudgetExceededError):
        for _ in range(10):
            _ss().release(epsilon=0.3, delta=1e-6, k=10, budget=b)
            released += 1
    assert released == 3 and len(b.ledger) == 3


# ------------------------------------------------------------------------------ validation --


@pytest.mark.parametrize(
    "kwargs, err",
    [
        ({}, ValueError),
        ({"epsilon": 1.0, "rho": 1.0}, ValueError),
        ({"epsilon": 0.0}, ValueError),
        ({"epsilon": float("inf")}, ValueError),
        ({"epsilon": 1.0, "delta": 1.0}, ValueError),
        ({"epsilon": 1.0, "delta": -1e-9}, ValueError),
        ({"epsilon": 1.0, "delta": 1e-6, "zcdp_delta": 2e-6}, ValueError),
        ({"rho": -1.0}, ValueError),
        ({"rho": 1.0, "delta": 1e-6}, ValueError),
        ({"epsilon": "1"}, TypeError),
        ({"epsilon": True}, TypeError),
    ],
)
def test_bad_budgets(kwargs, err):
    with pytest.raises(err):
        Budget(**kwargs)


def test_bad_spends_and_budget_argument():
    b = Budget(1.0, 1e-6)
    with pytest.raises(ValueError):
        b.spend("neg", epsilon=-0.1)
    with pytest.raises(TypeError):
        b.spend("nan type", epsilon="0.1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="dpsketch.Budget"):
        _ss().release(epsilon=0.1, delta=1e-6, k=10, budget=1.0)  # type: ignore[arg-type]
    assert b.ledger == []
    assert "spent epsilon=0" in repr(b)


# ------------------------------------------------------------------------------------ copies --


@pytest.mark.parametrize("dup", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
def test_copies_share_the_one_ledger(dup):
    b = Budget(1.0)
    c = dup(b)
    b.spend("first", epsilon=0.75)
    with pytest.raises(BudgetExceededError):
        c.spend("second", epsilon=0.75)  # a copy may not spend what the original already spent
    assert c.spent().epsilon == b.spent().epsilon == 0.75
    assert [s.mechanism for s in c.ledger] == ["first"]


def test_a_deep_copied_container_charges_the_same_budget():
    b = Budget(rho=0.5)
    held = {"budget": b, "params": [1, 2]}
    dup = copy.deepcopy(held)
    dup["budget"].spend("via copy", rho=0.5)
    with pytest.raises(BudgetExceededError):
        b.spend("original", rho=0.1)
    assert dup["params"] == [1, 2] and dup["params"] is not held["params"]


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickling_is_refused_with_what_to_do(protocol):
    b = Budget(1.0, 1e-6)
    with pytest.raises(TypeError, match=r"cannot be pickled.*budget\.spend\("):
        pickle.dumps(b, protocol=protocol)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps([b], protocol=protocol)


# ------------------------------------------------------------------------------ command line --


@pytest.mark.parametrize("extra", [[], ["--length-epsilon", "0.05"], ["--public-length"]])
def test_cli_prints_what_was_spent(capsys, extra):
    import json
    import re

    from dpsketch.cli import main

    code = main(["top", "--demo", "--seed", "1", "--epsilon", "0.1", "--delta", "1e-6", "--json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    rel = json.loads(out)
    m = re.search(r"spent: epsilon=([0-9.e+-]+), delta=([0-9.e+-]+)", err)
    assert m is not None, err
    assert float(m.group(1)) == pytest.approx(rel["epsilon"], rel=1e-9)
    assert float(m.group(2)) == pytest.approx(1e-6, rel=1e-9) == pytest.approx(rel["delta"], rel=1e-12)
    assert rel["delta"] <= 1e-6
    assert rel["epsilon"] <= float(_used(0.1)) and rel["epsilon"] == pytest.approx(0.1, rel=1e-8)


def test_check_asks_without_recording():
    b = Budget(1.0, 1e-6)
    b.check("fits", epsilon=1.0, delta=1e-6)
    assert b.ledger == [] and b.spent().epsilon == 0
    b.spend("half", epsilon=0.5)
    with pytest.raises(BudgetExceededError, match="left"):
        b.check("too much", epsilon=0.75)
    assert [s.mechanism for s in b.ledger] == ["half"]
