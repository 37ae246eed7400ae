"""Privacy profiles and the adaptive filter's routing (docs/accounting.md): each spend's profile
is recorded, composed by the tightest valid rule, stored in the ledger file, and never gives a
looser guarantee than the pre-profile accountant (basic ε + ρ + 2√(ρ ln 1/δ))."""

from __future__ import annotations

import math
import shutil
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsketch import Budget
from dpsketch.accounting.profile import Profile, part_rho
from dpsketch.accounting.zcdp import classic_epsilon, cks20_epsilon, dlaplace_zcdp
from dpsketch.errors import BudgetExceededError, BudgetFileError, ParameterError

GOLDEN = Path(__file__).resolve().parent.parent / "data" / "budget"


def _old_spent(cap_rho, zd, spends):
    """The pre-profile accountant's composed guarantee of a series of (ε, δ, ρ) spends."""
    E = D = R = 0.0
    for e, d, r in spends:
        E, D, R = E + e, D + d, R + r + (e * e / 2 if cap_rho else 0)
    if cap_rho:
        return None, None, R
    if R == 0:
        return E, D, R
    return E + classic_epsilon(R, zd), D + zd, R


def test_profile_zcdp_values():
    assert part_rho(Profile.discrete_gaussian(0.1, 1e-9)) == Fraction(0.1)
    assert part_rho(Profile.bounded_range(1.0)) == Fraction(1, 8)
    assert part_rho(Profile("pure", epsilon=1.0)) == Fraction(1, 2)
    assert float(part_rho(Profile.discrete_laplace(1.0, sensitivity=1))) == pytest.approx(dlaplace_zcdp(1.0), rel=1e-12)
    assert part_rho(Profile.discrete_laplace(1.0)) == Fraction(1, 2)  # multi-coordinate: ε²/2
    assert part_rho(Profile.discrete_laplace(1.0, 1e-6, sensitivity=1)) is None  # thresholded: basic only
    assert part_rho(Profile("approx", epsilon=1.0, delta=1e-6)) is None
    with pytest.raises(ParameterError):
        Profile("pure", epsilon=1.0, delta=1e-6)
    with pytest.raises(ParameterError):
        Profile("gaussian", rho=1.0)


def test_rho_budget_charges_pure_spends_at_their_exact_zcdp():
    b = Budget(rho=1.0)
    b.spend("dlap", profile=Profile.discrete_laplace(1.0, sensitivity=1))
    b.spend("br", profile=Profile.bounded_range(1.0))
    assert b.spent().rho == pytest.approx(dlaplace_zcdp(1.0) + 1 / 8, rel=1e-12)
    assert b.spent().rho < 0.5 + 0.5  # today: ε²/2 each
    assert [s.profile[0].law for s in b.ledger] == ["discrete_laplace", "bounded_range"]


def test_gaussian_series_converts_with_cks20():
    b = Budget(1.0, 1e-6, zcdp_delta=1e-6)
    for _ in range(24):
        b.spend("hourly", profile=Profile.discrete_gaussian(0.0008))
    s = b.spent()
    assert s.epsilon == pytest.approx(cks20_epsilon(24 * 0.0008, 1e-6), rel=1e-9)
    assert s.epsilon < classic_epsilon(24 * 0.0008, 1e-6)


def test_after_a_zcdp_first_spend_pure_spends_enter_at_their_zcdp():
    b = Budget(10.0, 1e-6)
    b.spend("gauss", profile=Profile.discrete_gaussian(0.5))
    b.spend("small laplace", profile=Profile.discrete_laplace(0.01, sensitivity=1))
    b.spend("large laplace", profile=Profile.discrete_laplace(1.0, sensitivity=1))
    charged = [s.charged for s in b.ledger]
    assert charged[1][0] == 0 and 0 < charged[1][2] <= 0.01 ** 2 / 2  # in ρ, at its zCDP
    assert charged[2][0] == 0 and 0 < charged[2][2] < 0.5  # in ρ too: the accumulator is fixed
    view = b.composition()
    assert view["basic_epsilon"] == 0.0 and view["conversion"].startswith("CKS20")
    assert view["spends"][1]["profile"][0]["law"] == "discrete_laplace"


def test_pure_spend_never_opens_the_zcdp_reserve():
    """A pure spend enters the zCDP total only once a zCDP spend has reserved the conversion δ:
    routing it there earlier would spend δ that today's accountant does not."""
    b = Budget(10.0, 1e-6)
    b.spend("tiny", profile=Profile.discrete_laplace(0.001, sensitivity=1))
    assert b.spent().delta == 0 and b.spent().rho == 0


def test_profile_and_numbers_must_agree():
    b = Budget(1.0, 1e-6)
    with pytest.raises(ParameterError, match="profile"):
        b.spend("x", epsilon=0.5, profile=Profile("pure", epsilon=0.25))
    b.spend("x", epsilon=0.25, profile=Profile("pure", epsilon=0.25))


def test_file_stores_profiles_and_routes(tmp_path):
    path = tmp_path / "b.json"
    b = Budget.open(path, epsilon=10.0, delta=1e-6)
    b.spend("gauss", profile=Profile.discrete_gaussian(0.5, 1e-9))
    b.spend("small laplace", profile=Profile.discrete_laplace(0.01, sensitivity=1))
    again = Budget.open(path)
    assert again.spent() == b.spent()
    assert [s.profile for s in again.ledger] == [s.profile for s in b.ledger]
    assert again.spent().rho == pytest.approx(0.5 + dlaplace_zcdp(0.01), rel=1e-12)


def test_file_refuses_a_part_charged_below_its_zcdp(tmp_path):
    import json

    from dpsketch.accounting.ledger import _digest

    path = tmp_path / "b.json"
    b = Budget.open(path, epsilon=10.0, delta=1e-6)
    b.spend("gauss", profile=Profile.discrete_gaussian(0.5))
    b.spend("small laplace", profile=Profile.discrete_laplace(0.01, sensitivity=1))
    doc = json.loads(path.read_text())
    part = doc["ledger"][1]["profile"][0]
    assert part["route"] == "zcdp"
    part["charged_rho"] = "0/1"
    doc["spent"]["rho"] = doc["ledger"][0]["rho"]
    del doc["sha256"]
    doc["sha256"] = _digest(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(BudgetFileError, match="less than its zCDP"):
        Budget.open(path)


@pytest.mark.parametrize("name, spent", [
    ("v1_epsilon_delta.json", (0.75, 1e-7 + 5e-7, 0.05)),
    ("v1_rho.json", (None, None, 0.1 + 0.125)),
])
def test_reads_version_1_files(tmp_path, name, spent):
    """Files written by the pre-profile dpsketch (format version 1) load, report the tight totals
    of the same spends, and are upgraded to version 2 on the next charge."""
    path = tmp_path / name
    shutil.copy(GOLDEN / name, path)
    b = Budget.open(path)
    s = b.spent()
    e, d, r = spent
    assert s.rho == pytest.approx(r, rel=1e-9)
    if e is not None:
        assert s.delta == pytest.approx(d, rel=1e-12)
        assert s.epsilon == pytest.approx(e + cks20_epsilon(0.05, 5e-7), rel=1e-9)
        assert s.epsilon < e + classic_epsilon(0.05, 5e-7)
        b.spend("next", epsilon=0.01)
    else:
        b.spend("next", rho=0.01)
    import json

    doc = json.loads(path.read_text())
    assert doc["version"] == 2 and all("profile" in entry for entry in doc["ledger"])
    assert Budget.open(path).spent() == b.spent()


# -- never looser than today --------------------------------------------------------------------

_spend = st.one_of(
    st.tuples(st.just("pure"), st.floats(1e-4, 1.0)),
    st.tuples(st.just("approx"), st.floats(1e-4, 1.0), st.floats(1e-10, 1e-7)),
    st.tuples(st.just("rho"), st.floats(1e-5, 0.5)),
    st.tuples(st.just("rho_delta"), st.floats(1e-5, 0.5), st.floats(1e-10, 1e-7)),
    st.tuples(st.just("dlap"), st.floats(1e-3, 1.0), st.integers(1, 5)),
    st.tuples(st.just("br"), st.floats(1e-3, 1.0)),
)


def _as_old_and_new(kind):
    """(the (ε, δ, ρ) today's accountant was told, the profile the new one is told)."""
    if kind[0] == "pure":
        return (kind[1], 0.0, 0.0), None
    if kind[0] == "approx":
        return (kind[1], kind[2], 0.0), None
    if kind[0] == "rho":
        return (0.0, 0.0, kind[1]), None
    if kind[0] == "rho_delta":
        return (0.0, kind[2], kind[1]), Profile.discrete_gaussian(kind[1], kind[2])
    if kind[0] == "dlap":
        return (kind[1], 0.0, 0.0), Profile.discrete_laplace(kind[1], sensitivity=kind[2])
    return (kind[1], 0.0, 0.0), Profile.bounded_range(kind[1])


@settings(max_examples=150, deadline=None)
@given(st.lists(_spend, min_size=1, max_size=30), st.booleans())
def test_no_series_gets_a_looser_guarantee_than_today(series, rho_cap):
    """Random series of spends (generic and profiled): after every spend, the composed guarantee
    is at most what the pre-profile accountant reported for the same spends, as long as the series
    keeps to the accumulator its first spend fixed. Past that point an (ε, δ) budget refuses a
    spend of the other kind (a zCDP spend after an (ε, δ) one, a generic (ε, δ) spend after a zCDP
    one) and takes a pure one at its zCDP: the earlier rule, which split the two totals spend by
    spend, is not valid when the analyst picks the next kind from the outputs
    (docs/accounting.md §The adaptive filter)."""
    b = Budget(rho=1e9) if rho_cap else Budget(1e9, 1e-3, zcdp_delta=1e-6)
    told = []
    zcdp_first = None
    comparable = True
    for kind in series:
        (e, d, r), profile = _as_old_and_new(kind)
        e, d, r = (float(Fraction(x)) for x in (e, d, r))
        if rho_cap and d > 0:
            continue
        gaussian = kind[0] in ("rho", "rho_delta")
        if zcdp_first is None:
            zcdp_first = gaussian
        refused = not rho_cap and ((gaussian and not zcdp_first) or (zcdp_first and kind[0] == "approx"))
        if refused:
            with pytest.raises(BudgetExceededError):
                b.spend("s", profile=profile) if profile is not None else b.spend("s", epsilon=e, delta=d, rho=r)
            continue
        if profile is not None:
            b.spend("s", profile=profile)
        else:
            b.spend("s", epsilon=e, delta=d, rho=r)
        told.append((e, d, r))
        comparable = comparable and (rho_cap or gaussian == zcdp_first)
        if not comparable:
            continue
        old = _old_spent(rho_cap, 1e-6, told)
        new = b.spent()
        assert new.rho <= old[2] * (1 + 1e-9) + 1e-15 or not rho_cap
        if not rho_cap:
            assert new.delta <= old[1] * (1 + 1e-12) + 1e-18
            assert new.epsilon <= old[0] * (1 + 1e-9) + 1e-12
