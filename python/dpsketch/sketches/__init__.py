"""The summaries and sketches, non-private: the counter summaries (``counters``: Misra–Gries,
SpaceSaving), the linear sketches (``linear``: Count-Min, CountSketch) and the dyadic sketches
(``dyadic``: ranks, quantiles, range counts). Each updates, merges, serialises and hands its state
to its mechanism's release (:mod:`dpsketch.mechanisms`)."""

from .._lazy import attach

__all__ = ["MisraGries", "SpaceSaving", "CountMin", "CountSketch", "DyadicCountSketch"]
__getattr__, __dir__ = attach(__name__, ("counters", "linear", "dyadic"), {
    "MisraGries": "counters", "SpaceSaving": "counters", "CountMin": "linear", "CountSketch": "linear",
    "DyadicCountSketch": "dyadic"})
