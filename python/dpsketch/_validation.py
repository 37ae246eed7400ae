"""Argument checks shared by the public classes: one clear message that says what to pass."""

from __future__ import annotations

import math
import numbers

from .errors import ParameterError, ParameterTypeError

__all__ = ["check_int"]


def check_int(name: str, value, lo: int, hi: int) -> int:
    """Return ``value`` as an int in [lo, hi] or raise ParameterError (a ValueError)/TypeError saying what to pass."""
    if isinstance(value, bool):
        raise ParameterTypeError(f"{name} must be an integer, got bool {value!r}")
    if isinstance(value, numbers.Integral):
        v = int(value)
    elif isinstance(value, numbers.Real):
        f = float(value)
        if math.isnan(f) or math.isinf(f):
            raise ParameterError(f"{name} must be an integer between {lo} and {hi}, got {f!r}")
        if not f.is_integer():
            raise ParameterError(f"{name} must be an integer between {lo} and {hi}, got {f!r}")
        v = int(f)
    else:
        raise ParameterTypeError(f"{name} must be an integer, got {type(value).__name__}")
    if not lo <= v <= hi:
        raise ParameterError(f"{name} must be between {lo} and {hi}, got {v}")
    return v
