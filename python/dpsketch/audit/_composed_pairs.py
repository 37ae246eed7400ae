"""A composed pair (docs/accounting.md; docs/audit.md "The neighbouring pairs"): k Gaussian
releases of private Count-Min sketches, each at the per-release ρ that the adaptive Budget's tight
rule allows for the claimed total (ε, δ) -- the CKS20 inverse R = ρ(ε, δ) split evenly, R/k each --
audited together against the claimed total.

X′ holds _M copies of one item, X one more; each of the k releases draws its own noise. The
statistic is the Gaussian likelihood-ratio sum over the k·d touched cells, μ-tested against
√(2R) (the composed ρ is the sum of the releases' ρ) and ε-tested against the claimed (ε, δ).
A copy whose noise is calibrated to a larger total than claimed (the audit's miscalibrated mode,
or noise for 2R) shows a μ above √(2R) and FAILS.
"""

from __future__ import annotations

import numpy as np

from ..accounting.calibration import used_value, zcdp_rho_for
from ._pairs import _D, _ITEM, _M, _W, _cells_result, _ints, _twin_cells, pair

COMPOSED_RELEASES = 6


def composed_pair(k: int = COMPOSED_RELEASES):
    def fn(ctx):
        from ..mechanisms.private_sketches import PrivateCountMin

        total = zcdp_rho_for(ctx.epsilon, ctx.delta)  # the tight rule's ρ for the claimed (ε, δ)
        per = float(used_value(total / k))
        claimed = PrivateCountMin(_W, _D, rho=per)
        mech = PrivateCountMin(_W, _D, rho=ctx.rho(per))  # the audited copy: noise for total/noise²
        hash_seed = mech.hash_seed
        x, xp = [_ITEM] * (_M + 1), [_ITEM] * _M
        cx, cxp = _twin_cells(True, hash_seed, x), _twin_cells(True, hash_seed, xp)
        touched = np.nonzero((cx - cxp) != 0)
        diff1, base1 = (cx - cxp)[touched], cxp[touched]
        diff, base = np.tile(diff1, k), np.tile(base1, k)
        num, den = mech._impl.noise_param
        cnum, cden = claimed._impl.noise_param
        sigma2 = np.full(diff.shape, cnum / cden)  # the LR weights and the μ bound use the claimed σ
        impl = mech._impl
        native = type(impl)
        rng = ctx.rng(ctx.mechanism)
        c = diff1.size

        def sample_cells(m):
            ox, oxp = np.empty((m, k * c)), np.empty((m, k * c))
            for i in range(m):
                for j in range(k):  # k releases, each with its own noise draw
                    s = native(width=_W, depth=_D, hash_seed=hash_seed, kind=impl.noise_kind, num=num, den=den,
                               shift=impl.shift, f2_row=False, rng=rng, neighbours=impl.neighbours)
                    s.update_many(_ints(xp))
                    oxp[i, j * c:(j + 1) * c] = s.cells()[touched]
                    s.update(_ITEM)
                    ox[i, j * c:(j + 1) * c] = s.cells()[touched]
            return ox, oxp

        res = _cells_result(ctx, sample_cells, diff, base, "gaussian", sigma2, k * per)
        res.notes.update(releases=k, rho_total=k * per, rho_per_release=per, conversion="CKS20")
        return res
    return fn


pair(f"Budget[{COMPOSED_RELEASES}x PrivateCountMin-gaussian]",
     f"{COMPOSED_RELEASES} releases at the tight per-release ρ, +1 element (w={_W}, d={_D})", tests=2)(composed_pair())
