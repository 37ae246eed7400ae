"""Neighbouring pairs of the cumulative releases (docs/privacy.md §Cumulative; docs/audit.md "The
neighbouring pairs"): every node a tree schedule publishes, through :class:`dpsketch.Cumulative`.

X′ is a short series of steps; X adds one element to the step whose leaf lies in the most
published nodes (L of them), so the pair attains the series' sensitivity: the element moves its d
CountSketch cells in each of those L nodes. The statistic is the Gaussian likelihood-ratio sum over
those L·d cells, tested against the series' ρ (L times the node ρ): a node ρ that forgot a level, or
noise shared between nodes, or a node holding a leaf twice, shows up here.
"""

from __future__ import annotations

import numpy as np

from ..errors import InternalError
from .._seeds import derive_seed
from ._pairs import _W, _D, _ITEM, _M, _cells_result, _ints, _leaves, _privacy_kw, pair

_STEPS = {"binary": 4, "smooth": 8}  # horizons: binary L = 3 (leaf 0), smooth (h, k) = (5, 2), L = 4
_OTHER = [11, 12, 13]  # a few other elements in every step


def _worst_step(schedule) -> int:
    """The step whose leaf lies in the most published nodes (the first such)."""
    used = {n for t in range(1, schedule.horizon + 1) for n in schedule.prefix_nodes(t)}
    cover = [sum(1 for b in range(schedule.height) if (b, x >> b) in used) for x in schedule.leaves]
    return cover.index(max(cover)) + 1


def _cumulative_pair(name: str):
    def fn(ctx):
        from ..time.cumulative import Cumulative
        from ..mechanisms.private_sketches import PrivateCountSketch
        from ..sketches.linear import CountSketch

        T = _STEPS[name]
        hash_seed = derive_seed(ctx.run_seed(ctx.mechanism), "hash")

        def make():
            return CountSketch(_W, _D, hash_seed=hash_seed)

        rho = _privacy_kw(ctx, "gaussian", factor=False)["rho"]
        claimed = Cumulative(horizon=T, make=make, rho=rho, schedule=name)
        schedule = claimed.schedule
        worst = _worst_step(schedule)
        steps_xp = [[_ITEM] * _M + _OTHER if s == worst else _OTHER for s in range(1, T + 1)]
        steps_x = [xs + [_ITEM] if s == worst else xs for s, xs in enumerate(steps_xp, start=1)]
        nodes = sorted({n for t in range(1, T + 1) for n in schedule.prefix_nodes(t)
                        if schedule.steps_of(n)[0] <= worst <= schedule.steps_of(n)[1]})
        if len(nodes) != schedule.nodes_per_element:
            raise InternalError("audit pair no longer has the intended structure (the worst leaf's nodes)")

        def exact(steps, node):
            first, last = schedule.steps_of(node)
            tw = make()
            for xs in steps[first - 1:last]:
                tw.update_many(_ints(xs))
            return tw.cells().astype(float).ravel()

        cx = np.concatenate([exact(steps_x, n) for n in nodes])
        cxp = np.concatenate([exact(steps_xp, n) for n in nodes])
        touched = np.nonzero(cx != cxp)[0]
        diff, base = (cx - cxp)[touched], cxp[touched]
        # the claimed node σ²: a private CountSketch of this shape at the claimed node ρ
        num, den = PrivateCountSketch(_W, _D, rho=claimed.node_rho)._impl.noise_param
        sigma2 = np.full(diff.shape, num / den)
        mech_rho = _privacy_kw(ctx, "gaussian")["rho"]  # the audited copy (4ρ when miscalibrated)
        base_seed = ctx.run_seed(ctx.mechanism)

        leaves_x, leaves_xp = _leaves(make, steps_x), _leaves(make, steps_xp)  # read, never changed, by add()

        def run(steps, seed):
            c = Cumulative(horizon=T, make=make, rho=mech_rho, schedule=name, seed=seed)
            for leaf in steps:
                c.add(leaf)
            return np.concatenate([c.node(*n).cells().astype(float).ravel() for n in nodes])[touched]

        def sample_cells(m):
            ox, oxp = np.empty((m, diff.size)), np.empty((m, diff.size))
            for i in range(m):
                s = derive_seed(base_seed, str(i))  # one noise seed for both sides
                ox[i], oxp[i] = run(leaves_x, s), run(leaves_xp, s)
            return ox, oxp

        res = _cells_result(ctx, sample_cells, diff, base, "gaussian", sigma2, claimed.rho)
        res.notes.update(horizon=T, nodes_per_element=schedule.nodes_per_element, worst_step=worst,
                         nodes=[list(n) for n in nodes])
        return res
    return fn


for _name, _T in _STEPS.items():
    pair(f"Cumulative[{_name}]", f"+1 in the step of most nodes ({_name}, T={_T}, CountSketch w={_W}, d={_D})",
         tests=2)(_cumulative_pair(_name))
