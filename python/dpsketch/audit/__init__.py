"""Empirical privacy audit: statistical LOWER bounds on the privacy loss each mechanism actually
has, on built-in worst-case neighbouring inputs (docs/audit.md).

For a neighbouring pair (X, X') and an output event S, (ε, δ)-DP requires
P[M(X) ∈ S] ≤ e^ε · P[M(X') ∈ S] + δ. Running the mechanism many times on X and on X' and
bounding both probabilities with exact Clopper–Pearson intervals gives, with the stated
confidence, ε̂ = ln((p_lower(X) − δ) / p_upper(X')) ≤ the true privacy loss; ε̂ > ε proves a
violation (the DP-Sniper / Jagielski et al. recipe). For the Gaussian mechanisms the same events
also give μ̂ = Φ⁻¹(TPR_lower) − Φ⁻¹(FPR_upper), a lower bound on the Gaussian-DP μ (Dong–Roth–Su),
tested against μ = √(2ρ). The event is a threshold on one released statistic, chosen on a separate
selection sample so that choosing it does not bias the bounds.

For unstable labels (a label stored for X but absent for X'; docs/privacy.md §2 and §3) the
release probability under X' is 0, so the proofs charge that event to δ: the audit reports its
release rate with a confidence interval and fails if the rate is significantly above δ.

``audit(miscalibrated=True)`` (``dpsketch audit --miscalibrated``) runs every pair against a copy
of each mechanism with its noise scale halved and the same claimed guarantee: the audit must catch
every one of them.

This is a test harness: it calls the native mechanisms directly where that saves per-run Python
overhead, and reuses one generator per pair (ChaCha20 keyed from a fresh random 64-bit seed, or
from ``seed=`` for a reproducible run, through the one-way derivation of docs/privacy.md §Seeds).
That changes nothing about the output distributions.

The submodules load on first use, so ``import dpsketch`` does not pay for them.
"""

from __future__ import annotations

import importlib

__all__ = ["AuditResult", "MECHANISMS", "PAIRS", "audit", "audit_samplers", "available_mechanisms",
           "clopper_pearson", "discrete_gaussian_mu", "epsilon_lower_bound", "mu_lower_bound", "pair", "uncaught"]

_WHERE = {
    "AuditResult": "_stats", "audit_samplers": "_stats", "clopper_pearson": "_stats",
    "epsilon_lower_bound": "_stats", "mu_lower_bound": "_stats", "label_result": "_stats",
    "discrete_gaussian_mu": "_stats",
    "PAIRS": "_registry", "Ctx": "_pairs", "pair": "_pairs", 
    "WRAPPER_DELTA": "_pairs",
    "audit": "_run", "available_mechanisms": "_run", "uncaught": "_run", "format_table": "_run",
    "run_command": "_run", "DEFAULT_TRIALS": "_run", "QUICK_TRIALS": "_run", "MISCALIBRATED_NOISE": "_run",
}


def __getattr__(name):
    if name == "MECHANISMS":  # mechanism name -> its registered pairs
        pairs = importlib.import_module("._registry", __name__).PAIRS
        run = importlib.import_module("._run", __name__)
        return {m: [p for p in pairs if p.mechanism == m] for m in run.available_mechanisms()}
    if name in _WHERE:
        value = getattr(importlib.import_module("." + _WHERE[name], __name__), name)
        if name != "MECHANISMS":
            globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_WHERE) | {"MECHANISMS"})
