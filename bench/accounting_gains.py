"""What tight accounting buys (docs/accounting.md; docs/benchmarks.md §Tight accounting): the noise
each rule allows for the same total guarantee, on the series of issue #39.

The adaptive rules convert with ``Budget(1, 1e-6)``'s default conversion share zcdp_delta = δ/2
(before and after); a declared plan spends all of δ = 10⁻⁶ on its PLD.

* 24 Gaussian releases (sensitivity 1) at (ε, δ) = (1, 10⁻⁶): the ρ per release allowed by the
  classic conversion ρ + 2√(ρ ln 1/δ), by CKS20, and by a declared plan composed with discrete
  Gaussian PLDs (``dp_accounting``). The variance ratio is the ρ ratio.
* 24 Gaussian + 3 discrete Laplace releases at (1, 10⁻⁶), one noise multiplier m for both (σ = m,
  Laplace scale m): the smallest m each rule allows; variance ratio (m_old/m_new)².
* 168 hourly thresholded (0.05, 10⁻⁹) releases: basic composition against the PLD of the generic
  (ε, δ) mechanism at δ = 10⁻⁶.

    python3 bench/accounting_gains.py     # prints the Markdown table (a few seconds)
"""

from __future__ import annotations

import math

from dpsketch.accounting.declared import PlannedRelease, calibrate_plan, plan_epsilon
from dpsketch.accounting.zcdp import classic_epsilon, cks20_epsilon, cks20_rho_for, dlaplace_zcdp

EPS, DELTA = 1.0, 1e-6
ZD = DELTA / 2  # the adaptive Budget(1, 1e-6)'s default zcdp_delta, before and after


def classic_rho_for(e: float, d: float) -> float:
    L = math.log(1 / d)
    return (math.sqrt(L + e) - math.sqrt(L)) ** 2


def smallest_m(eps_of_m) -> float:
    lo, hi = 1e-3, 1e4
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if eps_of_m(mid) <= EPS:
            hi = mid
        else:
            lo = mid
    return hi


def gaussian_series():
    old = classic_rho_for(EPS, ZD)
    cks = cks20_rho_for(EPS, ZD)
    plan = calibrate_plan([PlannedRelease("discrete_gaussian", count=24)], EPS, DELTA)
    pld = 24 / (2 * plan.sigma ** 2)
    return old, cks, pld


def mixed_series():
    """24 DGauss(σ = m) + 3 DLap(scale m), sensitivity 1: the smallest m under each rule."""
    def old(m):  # Laplace by basic composition, Gaussian in ρ, classic conversion
        return 3 / m + classic_epsilon(24 / (2 * m * m), ZD)

    def cks(m):  # the adaptive Budget now, Laplace kept basic (a few large pure spends), CKS20
        return 3 / m + cks20_epsilon(24 / (2 * m * m), ZD)

    def cks_all_zcdp(m):  # the adaptive Budget now, Laplace routed to zCDP at its exact ρ
        return cks20_epsilon(24 / (2 * m * m) + 3 * dlaplace_zcdp(1 / m), ZD)

    m_old, m_cks, m_z = smallest_m(old), smallest_m(cks), smallest_m(cks_all_zcdp)
    plan = calibrate_plan([PlannedRelease("discrete_gaussian", count=24), PlannedRelease("discrete_laplace", count=3)],
                          EPS, DELTA)
    return m_old, min(m_cks, m_z), plan.sigma


def thresholded_series():
    basic = 168 * 0.05
    pld = plan_epsilon([PlannedRelease("approx", count=168, epsilon=0.05, delta=1e-9)], DELTA)
    return basic, pld


def main() -> None:
    old, cks, pld = gaussian_series()
    m_old, m_cks, m_plan = mixed_series()
    basic, tight = thresholded_series()
    print("| series | before (ρ + 2√(ρ ln 1/δ), basic) | adaptive Budget now (CKS20, routed) | declared plan (PLD) |")
    print("| --- | --- | --- | --- |")
    print(f"| 24 Gaussian at (1, 1e-6): ρ per release | {old / 24:.3e} | {cks / 24:.3e} ({cks / old:.2f}× less variance) "
          f"| {pld / 24:.3e} ({pld / old:.2f}×) |")
    print(f"| 24 Gaussian + 3 Laplace at (1, 1e-6): noise multiplier m | {m_old:.3f} | {m_cks:.3f} "
          f"({(m_old / m_cks) ** 2:.2f}× less variance) | {m_plan:.3f} ({(m_old / m_plan) ** 2:.2f}×) |")
    print(f"| 168 thresholded (0.05, 1e-9): composed ε | {basic:.2f} (δ = 1.7e-7) | {basic:.2f} (basic: no profile to "
          f"route) | {tight:.2f} at δ = 1e-6 |")


if __name__ == "__main__":
    main()
