"""The release steps PMG and DPSS share (docs/mechanisms/pmg.md, docs/mechanisms/dpss.md): refuse
a merged summary, calibrate (ε, δ) with the private or public length (docs/privacy.md §Stream
length), charge the budget and the summary's release-once guard before any noise is drawn, draw
the noisy length and run the native release (cpp/include/dpsketch/release/counter_release.hpp),
then the post-processing cuts."""

from __future__ import annotations

from typing import Any, Callable

from .. import _seeds
from ..accounting.budget import charging
from ..accounting.calibration import calibrate, make_length, used_value
from ..accounting.profile import Profile, profile_record
from ..errors import ParameterError
from ..release import Release, build_release
from .top_k import select_top_k


def release_counters(summary: Any, native_fn: Callable, mechanism: str, *, epsilon, delta, k, need: str, seed,
                     public_length: bool, length_epsilon, length_delta, allow_repeat: bool, budget=None,
                     cut: Callable | None = None, top_k: int | None = None) -> Release:
    """``native_fn(impl, ε', δ', k, length, rng)`` is PMG's or DPSS's native release; ``need`` is
    what it reads of the length ("none", "estimate" or "bounds"); ``cut(raw)`` is a mechanism's
    post-processing before ``top_k``."""
    with summary._lock:
        if summary._impl.merged:  # before the budget guard: a refused release spends nothing
            raise ParameterError(
                f"{mechanism} cannot release a merged {type(summary).__name__}: the per-stream sensitivity argument "
                "does not hold after merge() (docs/privacy.md §Merged counter summaries). Sound distributed routes: "
                "partition the data by key and release each partition's own summary "
                "(dpsketch.spark.heavy_hitters(route='counters')), or merge non-private linear sketches and add "
                "noise once (PrivateCountSketch.from_sketch, or route='sketch')"
            )
        cal = calibrate(epsilon, delta, need, public_length=public_length, length_epsilon=length_epsilon,
                        length_delta=length_delta)
        # The budget is charged the totals the release reports (ε as used, rounded down, §1).
        # DLap counts with thresholds: an (ε, δ) spend whose δ is additive (docs/accounting.md)
        profile = Profile.discrete_laplace(used_value(cal["epsilon_total"]), cal["delta_total"])
        with charging(budget, mechanism, profile=profile):
            extra = summary._guard.next(type(summary).__name__, allow_repeat)  # before any noise is drawn
        extra["privacy_profile"] = profile_record(profile)
        rng, seeded = _seeds.rng(seed, "noise")
        length = make_length(cal, summary._impl.n, rng)
        raw = native_fn(summary._impl, cal["epsilon_mechanism"], cal["delta_mechanism"], k, length, rng)
        if cut is not None:
            raw = cut(raw)
        if top_k is not None:
            raw = select_top_k(raw, top_k)  # post-processing (docs/mechanisms/top-k.md)
        return build_release(raw, mechanism=mechanism, cal=cal, epsilon=float(epsilon), delta=float(delta),
                             seeded=seeded, extra=extra)
