"""The empirical privacy audit (dpsketch.audit, `dpsketch audit`; docs/audit.md): exact
Clopper–Pearson bounds, the estimator catches broken mechanisms, and the real ones pass."""

import functools
import json
import math

import numpy as np
import pytest

import dpsketch.audit as A
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


@pytest.mark.parametrize("name", ["PrivateCountMin-laplace", "PrivateCountSketch-laplace"])
def test_audit_catches_halved_sketch_noise(name):
    broken = A.audit([name], trials=4000, seed=5, _noise_scale=0.5)
    assert [r.verdict for r in broken] == ["FAIL"] and broken[0].epsilon_hat > 1.0
    real = A.audit([name], trials=4000, seed=5)
    assert [r.verdict for r in real] == ["pass"] and real[0].epsilon_hat <= 1.0


def test_label_rate_above_delta_fails():
    r = A._label_result("m", "c", hits=300, trials=1000, delta=0.2, epsilon=1.0, confidence=0.999,
                        t0=0.0, notes={})
    assert r.verdict == "FAIL" and r.label_rate_lower > 0.2
    r = A._label_result("m", "c", hits=30, trials=1000, delta=0.2, epsilon=1.0, confidence=0.999, t0=0.0, notes={})
    assert r.verdict == "pass" and r.label_rate_upper < 0.2


def test_every_real_mechanism_passes_a_small_audit():
    results = A.audit(trials=3000, seed=2024)
    names = {r.mechanism for r in results}
    assert {"DPSS", "PMG", "PrivateCountMin-laplace", "PrivateCountMin-gaussian", "PrivateCountSketch-laplace",
            "PrivateCountSketch-gaussian", "SketchHeavyHitters-countmin", "SketchHeavyHitters-countsketch"} <= names
    for r in results:
        assert r.verdict == "pass", r
        assert r.epsilon_hat is None or r.epsilon_hat <= r.epsilon
    labels = [r for r in results if r.label_rate is not None]
    assert len(labels) == 2 and all(0 < r.label_rate_upper < r.delta for r in labels)
    # the +1 pairs on pure-DP noise see most of ε even at 3,000 trials (the audit has power)
    tight = [r for r in results if r.mechanism in ("DPSS", "PrivateCountMin-laplace") and r.label_rate is None]
    assert all(r.epsilon_hat > 0.6 for r in tight)


def test_cli_audit(capsys, monkeypatch):
    code = main(["audit", "DPSS", "PMG", "--trials", "2000", "--seed", "3", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    d = json.loads(out)
    assert d["passed"] is True and len(d["results"]) == 5
    code = main(["audit", "NoSuchMechanism", "--trials", "100"])
    out, err = capsys.readouterr()
    assert code == 2 and "unknown mechanism" in err and "Traceback" not in err
    # a broken mechanism makes the command fail (exit 1) and say FAIL
    monkeypatch.setattr(A, "audit", functools.partial(A.audit, _noise_scale=0.5))
    code = main(["audit", "PrivateCountMin-laplace", "--trials", "4000", "--seed", "3", "-q"])
    out, err = capsys.readouterr()
    assert code == 1 and "FAIL" in out
