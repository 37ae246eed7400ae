"""Neighbouring pairs of the windowed release (docs/privacy.md §Windows; docs/audit.md "The
neighbouring pairs"): one DPSS release per tumbling event-time window.

The events are assigned to windows by :func:`dpsketch.windows.assign`, the rule ``Windowed`` routes
with, so a boundary handled wrongly (an event counted in two windows, or in the wrong one) shows up
here; each window's summary is then released as ``Windowed`` releases it: DPSS with its own noisy
length, each window's noise drawn on its own.
"""

from __future__ import annotations

import math

import numpy as np

from ..time.windows import NS, assign
from ._pairs import _dpss, _dpss_margins, _space_saving, _structure, _value_of, pair

_PERIOD = 10 * NS  # windows [0, 10 s) and [10 s, 20 s)


def _window_summaries(items, times):
    """One SpaceSaving(4) per window of the two, fed with the events ``assign`` puts there."""
    w = assign(np.asarray(times, dtype=np.int64), _PERIOD)
    _structure(bool(((w == 0) | (w == 1)).all()), "window pair: every event in window 0 or 1")
    items = np.asarray(items, dtype=np.int64)
    return [_space_saving(4, items[w == i].tolist()) for i in (0, 1)]


@pair("Windowed[DPSS]", "an event moved across a window boundary")
def _moved_across(ctx):
    # Each window holds item 1 far above τ (as in the DPSS "+1" pair) and a little of items 2, 3.
    # X has one more event of item 1 at the last instant of window 0, X' has it at the first
    # instant of window 1: a move is a removal and an addition, each touching one window, so the
    # claim is group privacy over two add/remove steps, (2ε, (1 + e^ε)·δ).
    rng = ctx.rng("window-moved")
    gamma, t_n = _dpss_margins(ctx.epsilon, ctx.delta)
    c = math.ceil(4 / 3 * (gamma + 3 + t_n / 2 + 20 / ctx.eps_used)) + 10
    base = [1] * c + [2] * 3 + [3] * 2
    items = base + base
    times = [NS] * len(base) + [11 * NS] * len(base)
    sides = [_window_summaries(items + [1], times + [_PERIOD - 1]),
             _window_summaries(items + [1], times + [_PERIOD])]
    _structure(sides[0][0].estimate(1) == sides[1][1].estimate(1) == c + 1, "window pair: the moved event")
    eps = ctx.eps(ctx.epsilon)

    def one(windows):
        return _value_of(_dpss(windows[0], eps, ctx.delta, 2, rng), 1) - _value_of(
            _dpss(windows[1], eps, ctx.delta, 2, rng), 1)

    def sample(m):
        return tuple(np.array([one(w) for _ in range(m)]) for w in sides)

    return ctx.samplers(sample, epsilon=2 * ctx.eps_used, delta=(1 + math.exp(ctx.eps_used)) * ctx.delta)
