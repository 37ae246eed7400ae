"""The empirical privacy audit (dpsketch.audit, `dpsketch audit`; docs/audit.md): exact
Clopper–Pearson bounds, the ε̂ and μ̂ estimators, the real mechanisms pass and their halved-noise
copies are all caught."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import dpsketch.audit as A
import dpsketch.audit._pairs as P
from dpsketch.audit._stats import _PHI_INV

pytestmark = pytest.mark.audit  # CI stage 'audit tests' (pyproject.toml)
from dpsketch.cli import main


@pytest.mark.parametrize("k,n", [(0, 10), (1, 10), (5, 10), (10, 10), (3, 1000), (500, 1000), (99_000, 100_000)])
@pytest.mark.parametrize("alpha", [0.025, 1e-4])
def test_clopper_pearson_matches_the_beta_quantiles(k, n, alpha):
    st = pytest.importorskip("scipy.stats")
    lo, up = A.clopper_pearson(k, n, alpha)
    want_lo = 0.0 if k == 0 else st.beta.ppf(alpha, k, n - k + 1)
    want_up = 1.0 if k == n else st.beta.ppf(1 - alpha, k + 1, n - k)
    assert lo == pytest.approx(want_lo, rel=1e-9, abs=1e-14)
    assert up == pytest.approx(want_up, rel=1e-9, abs=1e-14)


def test_clopper_pearson_coverage_by_simulation():
    rng = np.random.default_rng(1)
    n, p, alpha = 200, 0.07, 0.05
    ks = rng.binomial(n, p, size=2000)
    bounds = {int(k): A.clopper_pearson(int(k), n, alpha) for k in np.unique(ks)}
    misses_lo = sum(bounds[int(k)][0] > p for k in ks)
    misses_up = sum(bounds[int(k)][1] < p for k in ks)
    assert misses_lo <= 2000 * alpha * 1.3 and misses_up <= 2000 * alpha * 1.3  # exact CP is conservative


def test_epsilon_lower_bound_by_hand():
    eh, lo, up = A.epsilon_lower_bound(7000, 2000, 10_000, 1e-6, 0.01)
    assert eh == pytest.approx(math.log((lo - 1e-6) / up))
    assert 0.68 < lo < 0.7 and 0.2 < up < 0.22 and eh < math.log(0.7 / 0.2)
    assert A.epsilon_lower_bound(10, 10, 10_000, 0.01, 0.01)[0] is None  # p_lower(X) <= δ: no evidence


def test_lower_bounds_are_never_negative():
    # the event is rarer on X than on X': the raw logarithm and Φ⁻¹ difference are negative, and
    # a privacy loss (or μ) is never below 0, so 0 is the bound reported
    eh, lo, up = A.epsilon_lower_bound(3000, 5000, 10_000, 1e-6, 0.01)
    assert math.log((lo - 1e-6) / up) < 0 and eh == 0.0
    mh, tpr, fpr = A.mu_lower_bound(3000, 5000, 10_000, 0.01)
    assert _PHI_INV(tpr) - _PHI_INV(fpr) < 0 and mh == 0.0


def _laplace_pair(scale, seed):
    rng = np.random.default_rng(seed)

    def sample(m):  # a counting query (sensitivity 1) released with Laplace(scale)
        return 1 + rng.laplace(0, scale, m), 0 + rng.laplace(0, scale, m)

    return sample


def test_estimator_catches_a_hand_made_non_private_function():
    # Laplace(1/(2ε)) on a sensitivity-1 query is 2ε-DP, not ε-DP: the audit must say so.
    broken = A.audit_samplers("half-scale Laplace", "+1", _laplace_pair(0.5, 1), epsilon=1.0, delta=1e-6,
                              trials=20_000)
    assert broken.verdict == "FAIL" and 1.0 < broken.epsilon_hat < 2.0
    sound = A.audit_samplers("Laplace", "+1", _laplace_pair(1.0, 2), epsilon=1.0, delta=1e-6, trials=20_000)
    assert sound.verdict == "pass" and 0.5 < sound.epsilon_hat <= 1.0


def _gaussian_pair(shift, seed):
    rng = np.random.default_rng(seed)

    def sample(m):  # a Gaussian mechanism with sensitivity `shift` and σ = 1: μ = shift
        return shift + rng.standard_normal(m), rng.standard_normal(m)

    return sample


@pytest.mark.parametrize("kx,kxp,n,alpha", [(6000, 4000, 10_000, 1e-3), (700, 90, 1000, 1e-5), (20, 3, 50, 0.01)])
def test_mu_lower_bound_matches_scipy(kx, kxp, n, alpha):
    st = pytest.importorskip("scipy.stats")
    mh, tpr, fpr = A.mu_lower_bound(kx, kxp, n, alpha)
    want_tpr = st.beta.ppf(alpha, kx, n - kx + 1)
    want_fpr = st.beta.ppf(1 - alpha, kxp + 1, n - kxp)
    assert tpr == pytest.approx(want_tpr, rel=1e-9) and fpr == pytest.approx(want_fpr, rel=1e-9)
    assert mh == pytest.approx(st.norm.ppf(want_tpr) - st.norm.ppf(want_fpr), rel=1e-9, abs=1e-12)
    assert A.mu_lower_bound(0, 5, 100, 0.01)[0] is None  # TPR lower bound 0: no evidence


def test_mu_test_on_a_synthetic_gaussian_pair():
    from statistics import NormalDist

    sound = A.audit_samplers("Gaussian", "+1", _gaussian_pair(1.0, 3), epsilon=1e9, delta=1e-6, trials=20_000,
                             mu=1.0, test_epsilon=False)
    # the bound is Φ⁻¹(TPR_lower) − Φ⁻¹(FPR_upper) of the selected event, below the true μ = 1
    inv = NormalDist().inv_cdf
    assert sound.mu_hat == pytest.approx(inv(sound.tpr_lower) - inv(sound.fpr_upper))
    assert sound.verdict == "pass" and 0.85 < sound.mu_hat <= 1.0 and sound.epsilon_hat is None
    broken = A.audit_samplers("Gaussian σ/2", "+1", _gaussian_pair(2.0, 4), epsilon=1e9, delta=1e-6,
                              trials=20_000, mu=1.0, test_epsilon=False)
    assert broken.verdict == "FAIL" and 1.0 < broken.mu_hat <= 2.0


def test_discrete_gaussian_event_mu():
    # large σ: the continuous value √(Σ diff²/σ²); small σ: the discrete Gaussian is above it in
    # the tails, which is why the μ-test bound is the larger of the two
    big = A.discrete_gaussian_mu([(2, 50.0, 1.0)])
    assert big == pytest.approx(math.sqrt(2 / 50.0), rel=1e-3) and big >= math.sqrt(2 / 50.0) - 1e-9
    small = A.discrete_gaussian_mu([(2, 0.5, 1.0)])
    assert small > 2.0 + 0.05
    two = A.discrete_gaussian_mu([(2, 40.0, 1.0), (2, 80.0, 1.0)])  # the Zhao-allocation shape
    assert two == pytest.approx(math.sqrt(2 / 40 + 2 / 80), rel=1e-3)


def test_label_rate_above_delta_fails():
    r = A.label_result("m", "c", hits=300, trials=1000, delta=0.2, epsilon=1.0, confidence=0.999, t0=0.0, notes={})
    assert r.verdict == "FAIL" and r.label_rate_lower > 0.2
    r = A.label_result("m", "c", hits=30, trials=1000, delta=0.2, epsilon=1.0, confidence=0.999, t0=0.0, notes={})
    assert r.verdict == "pass" and r.label_rate_upper < 0.2


def test_every_real_mechanism_passes_a_small_audit():
    results = A.audit(trials=3000, seed=2024)
    names = {r.mechanism for r in results}
    assert set(A.available_mechanisms()) == names
    assert {"DPSS", "PMG", "PrivateCountMin-laplace", "PrivateCountMin-gaussian-replace",
            "PrivateCountSketch-gaussian-from_sketch", "SketchHeavyHitters-countmin",
            "SketchHeavyHitters-countsketch"} <= names
    for r in results:
        assert r.verdict == "pass", r
        assert r.epsilon_hat is None or r.epsilon_hat <= r.epsilon
        assert r.mu_hat is None or r.mu_hat <= r.mu
    labels = [r for r in results if r.label_rate is not None]
    # DPSS, DPSS[two-pass], DPSS[top-k], PMG, lookup, the unit-level and row-level exact routes (2 noises),
    # the weighted selection (keys only, and with counts)
    assert len(labels) == 11
    # below δ where the proof's bound is loose; the exact routes' and the weighted selection's δ_τ
    # is the exact release probability
    assert all(0 < r.label_rate_upper < r.delta for r in labels
               if "exact[" not in r.mechanism and "weighted[" not in r.mechanism)
    # every pair on Gaussian values is μ-tested (the label pairs and the Gumbel ranking are not values)
    assert all(r.mu is not None for r in results
               if "gaussian" in r.mechanism and r.label_rate is None and "+gumbel" not in r.mechanism)
    # the +1 pairs on pure-DP noise see most of ε even at 3,000 trials (the audit has power)
    tight = [r for r in results if r.mechanism in ("DPSS", "PrivateCountMin-laplace") and r.case.startswith("+1")
             or r.mechanism == "PrivateCountMin-laplace"]
    assert all(r.epsilon_hat > 0.6 for r in tight)


# One mechanism of each family, and the user-level family in full (four code paths: each noise,
# the Gumbel ranking, the bounded-memory route); CI's stage "audit, miscalibrated copies" runs
# `dpsketch audit --quick --miscalibrated` over every mechanism.
_UNIT = ["unit.exact[discrete_gaussian]", "unit.exact[discrete_laplace]", "unit.exact[discrete_gaussian+gumbel]",
         "unit.bounded_memory[DPSS]"]
_ONE_PER_FAMILY = ["DPSS", "DPSS[two-pass]", "DPSS[top-k]", "PMG", "PrivateCountMin-laplace", "PrivateCountSketch-gaussian",
                   "PrivateDyadicCountSketch-laplace-zhao", "SketchHeavyHitters-countsketch",
                   "spark.counters[DPSS]", "spark.sketch[lookup]", "Windowed[DPSS]", "Cumulative[binary]", "Cumulative[sqrt]",
                   "quantiles[exp]",
                   "exact[discrete_gaussian]", *_UNIT]


def test_quick_miscalibrated_audit_catches_each_family_and_every_user_level_mechanism(capsys):
    # seeded: exit 0 iff every listed mechanism with halved noise FAILs at least one pair
    code = main(["audit", *_ONE_PER_FAMILY, "--quick", "--miscalibrated", "--seed", "11", "-q", "--json"])
    out, err = capsys.readouterr()
    d = json.loads(out)
    assert code == 0, d["uncaught"]
    assert d["miscalibrated"] is True and d["uncaught"] == []
    assert {r["mechanism"] for r in d["results"]} == set(_ONE_PER_FAMILY)
    assert all(r["noise_factor"] == 0.5 for r in d["results"])


# -- the privacy unit: one person's rows (docs/privacy.md §Privacy unit) ----------------------------

def test_unit_pairs_pass_with_real_noise_and_see_most_of_the_claim():
    results = A.audit(_UNIT, trials=10_000, seed=5)
    assert {r.mechanism for r in results} == set(_UNIT) and len(results) == 6
    assert all(r.verdict == "pass" and r.noise_factor == 1.0 for r in results), results
    by = {(r.mechanism, r.label_rate is not None): r for r in results}
    # pure-DP noise on m keys moved by c each: the all-keys-up event sees most of ε
    assert by["unit.exact[discrete_laplace]", False].epsilon_hat > 0.5
    assert by["unit.bounded_memory[DPSS]", False].epsilon_hat > 0.5
    g = by["unit.exact[discrete_gaussian]", False]  # μ = c·√m/σ
    assert g.mu == pytest.approx(g.notes["mu_sqrt_2rho"], rel=1e-3) and g.mu_hat is not None and g.mu_hat <= g.mu
    # δ_τ = 1 − (1 − P[noise > τ − c])^m is the exact probability that one of the removed unit's
    # m keys is released (the tail bound is tight): the confidence interval of the rate covers it
    for noise in ("gaussian", "laplace"):
        lab = by[f"unit.exact[discrete_{noise}]", True]
        assert lab.label_rate_lower <= lab.delta <= lab.label_rate_upper, lab
        assert lab.delta < 0.2 and lab.notes["label_delta"] == 0.2


def test_row_exact_pairs_pass_and_see_the_threshold_probability():
    # docs/privacy.md §Exact route, one row: the unit route at m = c = 1
    names = ["exact[discrete_gaussian]", "exact[discrete_laplace]"]
    results = A.audit(names, trials=10_000, seed=6)
    assert {r.mechanism for r in results} == set(names) and len(results) == 4
    assert all(r.verdict == "pass" for r in results), results
    by = {(r.mechanism, r.label_rate is not None): r for r in results}
    assert by["exact[discrete_laplace]", False].epsilon_hat > 0.5
    g = by["exact[discrete_gaussian]", False]  # μ bound: √(2ρ), or the discrete Gaussian's slightly larger one
    assert g.notes["mu_sqrt_2rho"] <= g.mu <= 1.01 * g.notes["mu_sqrt_2rho"] and g.mu_hat is not None
    assert g.mu_hat <= g.mu
    for noise in ("gaussian", "laplace"):  # δ_τ = P[noise > τ − 1] is the exact release probability
        lab = by[f"exact[discrete_{noise}]", True]
        assert lab.label_rate_lower <= lab.delta <= lab.label_rate_upper, lab


def test_row_exact_label_pair_fails_a_threshold_for_count_zero(monkeypatch):
    # τ − 1: as if the added row's key had count 0 (the unit threshold t + c with c forgotten)
    _break_plan(monkeypatch, lambda real, *a, **k: {**(p := real(*a, **k)), "threshold": p["threshold"] - a[3]})
    res = [r for r in A.audit(["exact[discrete_laplace]"], trials=10_000, seed=3) if r.label_rate is not None]
    assert res and res[0].verdict == "FAIL"


def _break_plan(monkeypatch, breakage):
    import dpsketch.mechanisms.unit_level as U

    real = U._exact_plan
    monkeypatch.setattr(U, "_exact_plan", lambda *a, **k: breakage(real, *a, **k))


def test_unit_label_pair_fails_a_threshold_that_forgets_the_units_count(monkeypatch):
    # τ = t instead of t + c: as if a key held by the removed unit alone had count 0, not c
    _break_plan(monkeypatch, lambda real, *a, **k: {**(p := real(*a, **k)), "threshold": p["threshold"] - a[3]})
    res = [r for r in A.audit(["unit.exact[discrete_gaussian]"], trials=10_000, seed=3) if r.label_rate is not None]
    assert res and res[0].verdict == "FAIL"


def test_unit_values_pair_fails_noise_calibrated_for_one_key(monkeypatch):
    # ℓ2 = c instead of c·√m: σ and the claimed ρ as if the unit moved one key. The μ-test bound
    # stays √(2ρ) of the claim (plus the discrete Gaussian's small excess), not the move seen.
    _break_plan(monkeypatch, lambda real, eps, delta, m, c, *a, **k: real(eps, delta, 1, c, *a, **k))
    res = [r for r in A.audit(["unit.exact[discrete_gaussian]"], trials=30_000, seed=3) if r.label_rate is None]
    assert res and res[0].verdict == "FAIL" and res[0].mu_hat > res[0].mu


def test_cli_audit(capsys, monkeypatch):
    code = main(["audit", "DPSS", "PMG", "--trials", "2000", "--seed", "3", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    d = json.loads(out)
    assert d["passed"] is True and len(d["results"]) == 6
    code = main(["audit", "NoSuchMechanism", "--trials", "100"])
    out, err = capsys.readouterr()
    assert code == 2 and "unknown mechanism" in err and "Traceback" not in err
    # the miscalibrated mode: a caught mechanism exits 0 and says so ...
    code = main(["audit", "PrivateCountMin-laplace", "--trials", "4000", "--seed", "3", "-q", "--miscalibrated"])
    out, err = capsys.readouterr()
    assert code == 0 and "FAIL" in out and "caught all 1 mechanisms" in out
    # a broken mechanism in the normal mode makes the command fail (exit 1) and say FAIL
    real = A._run.audit
    monkeypatch.setattr(A._run, "audit", lambda *a, **k: real(*a, **{**k, "miscalibrated": True}))
    code = main(["audit", "PrivateCountMin-laplace", "--trials", "4000", "--seed", "3", "-q"])
    out, err = capsys.readouterr()
    assert code == 1 and "FAIL" in out


def test_uncaught_names_the_mechanisms_without_a_failing_pair():
    mk = A.AuditResult
    rs = [mk("a", "1", 1.0, 0.0, 10, verdict="FAIL"), mk("a", "2", 1.0, 0.0, 10), mk("b", "1", 1.0, 0.0, 10)]
    assert A.uncaught(rs) == ["b"]


def test_a_registered_pair_runs_with_the_noise_factor(capsys):
    seen = []

    @A.pair("Test-Laplace", "+1 on a counting query")
    def _p(ctx):
        seen.append(ctx.noise)
        return ctx.samplers(_laplace_pair(1.0 * ctx.noise, 9), epsilon=1.0, delta=0.0)

    @A.pair("Test-blind", "a pair that ignores the noise factor")
    def _q(ctx):
        return ctx.samplers(_laplace_pair(1.0, 10), epsilon=1.0, delta=0.0)

    try:
        (ok,) = A.audit(["Test-Laplace"], trials=4000, seed=1)
        (bad,) = A.audit(["Test-Laplace"], trials=4000, seed=1, miscalibrated=True)
        # the miscalibrated command names a mechanism it did not catch and exits 1
        code = main(["audit", "Test-Laplace", "Test-blind", "--trials", "4000", "--seed", "1", "-q",
                     "--miscalibrated"])
        out, _ = capsys.readouterr()
    finally:
        A.PAIRS[:] = [p for p in A.PAIRS if not p.mechanism.startswith("Test-")]
    assert seen[:2] == [1.0, 0.5] and ok.verdict == "pass" and bad.verdict == "FAIL"
    assert code == 1 and "NOT caught" in out and "Test-blind" in out.splitlines()[-1]
    assert "Test-Laplace" not in out.splitlines()[-1]


def test_import_dpsketch_does_not_load_the_audit():
    code = "import sys, dpsketch; print(any(m.startswith('dpsketch.audit.') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# -- the length pairs catch a threshold that reads an exact length --------------------------------

def _exact_length_dpss(summary, eps, delta, k, rng):
    return P._R.dpss(summary, eps, delta, k, P._R.Length.fixed(summary.n), rng)


def _per_partition_lengths(parts, *, k, epsilon, delta, seed=None, **_):
    """The counters route with every partition released on its own exact n_p."""
    from dpsketch import _core
    from dpsketch.release import Release

    R, rng = _core.release, _core.noise.SecureRng(seed)
    items = []
    for s in parts:
        items += R.dpss(s._impl, epsilon, delta, k, R.Length.fixed(s.n), rng)[0]
    return Release(items=items, threshold=0.0, epsilon=epsilon, delta=delta, mechanism="old", n=None)


def test_length_pair_fails_a_threshold_reading_the_exact_n(monkeypatch):
    monkeypatch.setattr(P, "_dpss", _exact_length_dpss)
    res = [r for r in A.audit(["DPSS"], trials=2000, seed=3) if "crosses" in r.case]
    assert res and res[0].verdict == "FAIL"


def test_route_pair_fails_per_partition_lengths(monkeypatch):
    import dpsketch.distributed as dd

    monkeypatch.setattr(dd, "release_partitions", _per_partition_lengths)
    res = [r for r in A.audit(["spark.counters[DPSS]"], trials=4000, seed=3) if "removed" in r.case]
    assert res and res[0].verdict == "FAIL"
