"""Neighbouring pairs of the correlated-noise cumulative releases
(docs/mechanisms/cumulative-correlated.md; docs/audit.md "The neighbouring pairs"): the whole
released series of ``Cumulative(schedule="sqrt" | "banded")``.

X′ is a short series of steps; X adds one element to step 1, the worst step (every encoder
coefficient lies inside the horizon), so the pair attains Δ2²: the element moves its d CountSketch
cells by ±C_W[t − 1] at every step t. The statistic is the Gaussian likelihood-ratio sum over those
T·d released cells, μ-tested against √(2ρ): a σ calibrated to a sensitivity that forgot the later
steps (or the rows), or noise shared between steps, shows up here.
"""

from __future__ import annotations

import numpy as np

from .._seeds import derive_seed
from ._pairs import _D, _ITEM, _M, _W, _leaves, _privacy_kw, pair

_T = 6
_BANDS = 3
_OTHER = [11, 12, 13]


def _large_sigma_result(ctx, sample_cells, diff, base, sigma2, claim):
    """The Gaussian branch of ``_pairs._cells_result`` (likelihood-ratio statistic
    Σ_c diff_c·cell_c/σ², μ-tested against √(2ρ), ε-tested against the conversion of ρ) without its
    exact discrete-Gaussian μ, whose support (±14σ per cell) is out of reach at the σ ≈ 10^5 of a
    scaled encoder. At such σ the discrete Gaussian's likelihood ratios are the continuous ones up
    to terms of order e^{−2π²σ²} (Poisson summation), so its event-μ is √(2ρ) for all practical
    purposes: the bound tested is √(2ρ) itself."""
    import math

    from ..accounting.calibration import zcdp_epsilon

    weight = np.asarray(diff, float) / np.asarray(sigma2, float)
    base = np.asarray(base, float)

    def sample(m):
        cx, cxp = sample_cells(m)
        return (cx - base) @ weight, (cxp - base) @ weight

    mu = math.sqrt(2 * claim)
    res = ctx.samplers(sample, epsilon=zcdp_epsilon(claim, ctx.delta), delta=ctx.delta, mu=mu)
    res.notes.update(mu_sqrt_2rho=mu, sigma=float(math.sqrt(float(np.min(sigma2)))))
    return res


def _correlated_pair(schedule: str):
    def fn(ctx):
        from ..mechanisms.correlated import Encoder
        from ..sketches.linear import CountSketch
        from ..time.correlated import CorrelatedCumulative

        bands = _BANDS if schedule == "banded" else None
        hash_seed = derive_seed(ctx.run_seed(ctx.mechanism), "hash")

        def make():
            return CountSketch(_W, _D, hash_seed=hash_seed)

        rho = _privacy_kw(ctx, "gaussian", factor=False)["rho"]
        claimed = CorrelatedCumulative(horizon=_T, make=make, rho=rho, schedule=schedule, bands=bands)
        steps_xp = [[_ITEM] * _M + _OTHER if s == 1 else _OTHER for s in range(1, _T + 1)]
        steps_x = [xs + [_ITEM] if s == 1 else xs for s, xs in enumerate(steps_xp, start=1)]

        leaves_x, leaves_xp = _leaves(make, steps_x), _leaves(make, steps_xp)  # read, never changed, by add()

        def exact(ls):
            enc = Encoder(claimed.plan.encoder)
            return np.concatenate([enc.push(s.cells()).astype(float).ravel() for s in ls])

        cx, cxp = exact(leaves_x), exact(leaves_xp)
        touched = np.nonzero(cx != cxp)[0]
        diff, base = (cx - cxp)[touched], cxp[touched]
        sigma2 = np.full(diff.shape, claimed.plan.sigma2)  # the claimed σ² at the claimed ρ
        mech_rho = _privacy_kw(ctx, "gaussian")["rho"]  # the audited copy (4ρ when miscalibrated)
        base_seed = ctx.run_seed(ctx.mechanism)

        def run(ls, seed):
            c = CorrelatedCumulative(horizon=_T, make=make, rho=mech_rho, schedule=schedule, bands=bands, seed=seed,
                                     keep=1)
            return np.concatenate([c.add(leaf).sketch.astype(float).ravel() for leaf in ls])[touched]

        def sample_cells(m):
            ox, oxp = np.empty((m, diff.size)), np.empty((m, diff.size))
            for i in range(m):
                s = derive_seed(base_seed, str(i))  # one noise seed for both sides
                ox[i], oxp[i] = run(leaves_x, s), run(leaves_xp, s)
            return ox, oxp

        res = _large_sigma_result(ctx, sample_cells, diff, base, sigma2, claimed.rho)
        res.notes.update(horizon=_T, bands=claimed.plan.bands, encoder_scale=claimed.plan.scale,
                         cells_moved=int(diff.size))
        return res
    return fn


pair("Cumulative[sqrt]", f"+1 in step 1 (sqrt, T={_T}, CountSketch w={_W}, d={_D}): every released step moves",
     tests=2)(_correlated_pair("sqrt"))
pair("Cumulative[banded]", f"+1 in step 1 (banded p={_BANDS}, T={_T}, CountSketch w={_W}, d={_D})",
     tests=2)(_correlated_pair("banded"))
