"""PMG: the private release of a Misra–Gries summary (docs/algorithms.md §2,
docs/mechanisms/pmg.md). Every stored key, zero counts included, gets ``c(x) + η + Z_x`` with a
shared η and independent Z_x, all DLap(1/ε); keys at or above ``1 + 2t`` are released (the
threshold and the noise are drawn in cpp/include/dpsketch/release/counter_release.hpp)."""

from __future__ import annotations

from typing import Any

from .. import _core
from .._validation import check_int
from ..errors import ParameterError
from ..release import Release
from ._counter_release import release_counters
from .top_k import check_top_k, top_k_capacity

__all__ = ["release"]


def release(summary: Any, *, epsilon: float, delta: float, k: int | None = None, top_k: int | None = None,
            seed: int | None = None, public_length: bool = False, length_epsilon: float | None = None,
            length_delta: float | None = None, allow_repeat: bool = False, budget=None) -> Release:
    """PMG of ``summary`` (a :class:`dpsketch.MisraGries`); the parameters are
    :meth:`dpsketch.MisraGries.release`'s.

    :param summary: the summary to release (it holds its own lock during the release)
    :param epsilon: ε of the release's (ε, δ)-DP guarantee
    :param delta: δ of the release's (ε, δ)-DP guarantee, in (0, 1)
    :param k: also keep only noisy values >= n̂/k (heavy hitters; reads a noisy length)
    :param top_k: release exactly N items (the N largest noisy values) whenever N pass the threshold
    :param seed: reproducible noise, NOT secret (experiments only)
    :param public_length: treat the exact stream length as public (replace-one neighbours)
    :param length_epsilon: ε spent on the noisy length (default ε/10)
    :param length_delta: δ spent on the noisy length's bound: unused by PMG, an error without ``k``
    :param allow_repeat: release again although the summary was released before (the loss composes)
    :param budget: a :class:`dpsketch.Budget` charged (ε, δ) before any noise is drawn
    """
    kk = None if k is None else check_int("k", k, 1, 2**63 - 1)
    n_top = None if top_k is None else check_top_k(top_k)
    if kk is not None and n_top is not None:
        raise ParameterError("pass k= (keep noisy values >= n/k) or top_k= (exactly N items), not both")
    if n_top is not None:
        top_k_capacity(n_top, summary.capacity)  # capacity >= top_k
    if kk is None and length_delta is not None:
        raise ParameterError("length_delta has no use here: PMG reads the length only for the k cut, which needs no delta")
    return release_counters(
        summary, _core.release.pmg, "PMG", epsilon=epsilon, delta=delta, k=kk,
        need="none" if kk is None else "estimate", seed=seed, public_length=public_length,
        length_epsilon=length_epsilon, length_delta=None, allow_repeat=allow_repeat, budget=budget, top_k=n_top,
    )
