"""The mechanisms, one module each with its plan (guarantee and accuracy, before data) and its
release: ``dpss`` (private SpaceSaving, one and two passes, and the exact-count release),
``pmg`` (private Misra–Gries),
``top_k`` (exactly N items), ``private_sketches`` (noisy Count-Min and CountSketch,
SketchHeavyHitters), ``quantiles`` (in-memory quantiles), ``unit_level`` (the person as the
privacy unit: contribution bounding and its releases), ``correlated`` (correlated noise for cumulative
releases: the square-root factorization with an integer encoder)."""

from .._lazy import attach

__getattr__, __dir__ = attach(__name__, ("dpss", "pmg", "top_k", "private_sketches", "quantiles", "unit_level", "partitioned", "sketch_route", "correlated"), {})
