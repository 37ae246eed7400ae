"""dpsketch: differentially private heavy hitters on data streams.

Summaries and sketches (non-private): :class:`MisraGries`, :class:`SpaceSaving`,
:class:`CountMin`, :class:`CountSketch`. See ALGORITHMS.md / docs/ for what each computes.
"""

from ._core import __version__
from .sketches import CountMin, CountSketch
from .summaries import MisraGries, SpaceSaving

__all__ = ["MisraGries", "SpaceSaving", "CountMin", "CountSketch", "__version__"]
