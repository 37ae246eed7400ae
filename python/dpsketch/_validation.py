"""Parameter checks, declared once and shared by the library, the command line and Spark.

A parameter is checked against a *constraint* (:class:`Interval`, :class:`Options`,
:class:`Instance`, :class:`Pair`, :class:`NoneOr`). The constraints of the parameters every route
shares (``epsilon``, ``delta``, ``rho``, ``k``, ``top_k``, ``capacity``, ``seed``, ``level``, the
contribution bounds, ``universe_bits``, ``bounds``, ...) are declared once in :data:`SPECS`;
:func:`check` checks one value, :func:`validate_params` checks a function's arguments when it is
called, and :func:`parse_text` reads a command-line option's text and checks it the same way, so
the same value gets the same limits and the same message everywhere. Every failure has one form::

    <name> must be <what is allowed>, got <type>                  (ParameterTypeError)
    <name> must be <what is allowed>, got a <type> that is not    (ParameterError)

The message names the parameter, what it accepts and the *type* given, never the value (a value
may come from the data).
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from typing import Any, Callable, Iterable, Mapping, TypeVar, cast

from . import _core
from .errors import ParameterError, ParameterTypeError

__all__ = ["Constraint", "Interval", "Options", "Instance", "Pair", "NoneOr", "SPECS", "check", "check_int",
           "validate_params", "parse_text", "describe", "message"]


def _number(x: float) -> str:
    """A limit as the messages print it: 2**n (- 1) for the large powers of two, else the number."""
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 2**70):
        v = int(x)
        for off, tail in ((0, ""), (1, " - 1")):
            a = abs(v) + off
            if a >= 2**30 and a & (a - 1) == 0:
                return f"{'-' if v < 0 else ''}2**{a.bit_length() - 1}{tail}"
        return str(v)
    m, e = math.frexp(x)
    if m == 0.5 and e <= -9:
        return f"2**{e - 1}"
    return f"{x:g}"


def _a(word: str) -> str:
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


def message(name: str, allowed: str, value: Any, wrong_type: bool) -> str:
    """The one message form: the name, what is allowed, and the type given (never the value)."""
    t = type(value).__name__
    return f"{name} must be {allowed}, got {t}" if wrong_type else f"{name} must be {allowed}, got {_a(t)} that is not"


class Constraint:
    """What a parameter accepts. ``accepts_type(v)``: whether the type fits (else a
    ParameterTypeError); ``convert(v)``: the value as the library uses it, or ``None`` when the
    value is out of range (a ParameterError); ``describe()``: a noun phrase for the messages."""

    def accepts_type(self, value: Any) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def convert(self, value: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def check(self, name: str, value: Any) -> Any:
        if not self.accepts_type(value):
            raise ParameterTypeError(message(name, self.describe(), value, True))
        out = self.convert(value)
        if out is _REJECT:
            raise ParameterError(message(name, self.describe(), value, False))
        return out


_REJECT = object()


class Interval(Constraint):
    """A number in [low, high] (``closed``: "both", "left", "right" or "neither"; ``None`` for an
    open end). ``kind=int``: an integer (an integral float such as 3.0 counts, bool does not);
    ``kind=float``: any finite real number (anything with ``__float__`` but bool and str)."""

    def __init__(self, kind: type, low: float | None, high: float | None, closed: str = "both"):
        if kind not in (int, float) or closed not in ("both", "left", "right", "neither"):
            raise ParameterError("Interval(kind, low, high, closed): kind is int or float, closed is both, left, "
                                 "right or neither")
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def accepts_type(self, value: Any) -> bool:
        if isinstance(value, (bool, str, bytes)):
            return False
        if self.kind is int:
            return isinstance(value, numbers.Real)
        return isinstance(value, (int, float)) or hasattr(value, "__float__")

    def convert(self, value: Any) -> Any:
        if self.kind is int:
            if isinstance(value, numbers.Integral):
                v: Any = int(value)
            else:
                f = float(value)
                if not (math.isfinite(f) and f.is_integer()):
                    return _REJECT
                v = int(f)
        else:
            try:
                v = float(value)
            except (TypeError, ValueError, OverflowError):
                return _REJECT
            if not math.isfinite(v):
                return _REJECT
        lo_ok = self.low is None or (v >= self.low if self.closed in ("both", "left") else v > self.low)
        hi_ok = self.high is None or (v <= self.high if self.closed in ("both", "right") else v < self.high)
        return v if lo_ok and hi_ok else _REJECT

    def describe(self) -> str:
        what = "an integer" if self.kind is int else "a number"
        lo, hi = self.low, self.high
        if lo is not None and hi is not None:
            left = "[" if self.closed in ("both", "left") else "("
            right = "]" if self.closed in ("both", "right") else ")"
            return f"{what} in {left}{_number(lo)}, {_number(hi)}{right}"
        if lo is not None:
            return f"{what} {'>=' if self.closed in ('both', 'left') else '>'} {_number(lo)}"
        if hi is not None:
            return f"{what} {'<=' if self.closed in ('both', 'right') else '<'} {_number(hi)}"
        return what


class Options(Constraint):
    """One of a fixed set of values (compared with ``==``; True/False only match themselves). When
    every option but None is a str, a value of another type is a ParameterTypeError."""

    def __init__(self, values: Iterable[Any]):
        self.values = tuple(values)
        self._text = all(v is None or isinstance(v, str) for v in self.values)

    def accepts_type(self, value: Any) -> bool:
        return not self._text or value is None or isinstance(value, str)

    def convert(self, value: Any) -> Any:
        for v in self.values:
            try:
                if (v is None and value is None) or (v is not None and isinstance(value, bool) == isinstance(v, bool)
                                                     and bool(value == v)):
                    return value
            except Exception:  # noqa: BLE001 - an odd __eq__ (an array) is just not one of the options
                pass
        return _REJECT

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


class Instance(Constraint):
    """An instance of one of ``types`` (``bool``: exactly True or False)."""

    def __init__(self, *types: type, description: str | None = None):
        self.types, self._description = types, description

    def accepts_type(self, value: Any) -> bool:
        if bool not in self.types and isinstance(value, bool) and any(t in (int, float) for t in self.types):
            return False
        return isinstance(value, self.types)

    def convert(self, value: Any) -> Any:
        return value

    def describe(self) -> str:
        if self._description:
            return self._description
        if self.types == (bool,):
            return "True or False"
        return " or ".join(_a(t.__name__) for t in self.types)


class Pair(Constraint):
    """A pair ``(lo, hi)`` of finite numbers with lo < hi (a public value range)."""

    def accepts_type(self, value: Any) -> bool:
        try:
            lo, hi = value
            float(lo), float(hi)
        except (TypeError, ValueError, OverflowError):
            return False
        return True

    def convert(self, value: Any) -> Any:
        lo, hi = (float(x) for x in value)
        return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) and lo < hi else _REJECT

    def describe(self) -> str:
        return "a pair (lo, hi) of finite numbers with lo < hi"


class NoneOr(Constraint):
    """``None`` or a value ``inner`` accepts."""

    def __init__(self, inner: Constraint):
        self.inner = inner

    def accepts_type(self, value: Any) -> bool:
        return value is None or self.inner.accepts_type(value)

    def convert(self, value: Any) -> Any:
        return None if value is None else self.inner.convert(value)

    def describe(self) -> str:
        return f"None or {self.inner.describe()}"


_EPSILON = Interval(float, 2**-32, 2**31 - 1)  # used values are multiples of 2^-32, below 2^31
_DELTA = Interval(float, 0, 1, closed="neither")
_BOUND = 1 << 20  # a person's distinct keys, rows per key

#: The parameters every route shares, declared once: the library's entry points, the command
#: line (``dpsketch top --epsilon ...``) and ``dpsketch.spark`` check them against these.
SPECS: dict[str, Constraint] = {
    "epsilon": _EPSILON,
    "length_epsilon": _EPSILON,
    "rho": _EPSILON,
    "delta": _DELTA,
    "length_delta": _DELTA,
    "label_delta": _DELTA,
    "zcdp_delta": _DELTA,
    "level": Interval(float, 0, 1, closed="neither"),
    "k": Interval(int, 1, 2**63 - 1),
    "top_k": Interval(int, 1, 2**31),
    "capacity": Interval(int, 1, _core.MAX_CAPACITY),
    "width": Interval(int, 1, 2**31),
    "depth": Interval(int, 1, _core.MAX_DEPTH),
    "seed": Interval(int, 0, 2**64 - 1),
    "hash_seed": Interval(int, 0, 2**64 - 1),
    "universe_bits": Interval(int, 1, 64),
    "max_keys_per_unit": Interval(int, 1, _BOUND),
    "max_keys": Interval(int, 1, _BOUND),
    "max_rows_per_key": Interval(int, 1, _BOUND),
    "max_rows_per_unit": Interval(int, 1, _BOUND * _BOUND),
    "max_rows": Interval(int, 1, _BOUND * _BOUND),
    "bounds": Pair(),
    "gamma": Interval(float, 0, 1, closed="neither"),
    "relative_accuracy": Interval(float, 0, 1, closed="neither"),
    "noise": Options(("gaussian", "laplace")),
    "cut": Options(("n/k", None)),
    "public_length": Instance(bool),
    "allow_repeat": Instance(bool),
    "passes": Options((1, 2)),
}


def _spec(name: str, spec: Constraint | str | None) -> Constraint:
    if isinstance(spec, Constraint):
        return spec
    key = name if spec is None else spec
    try:
        return SPECS[key]
    except KeyError:
        raise ParameterError(f"no shared parameter spec named {key!r}") from None


def describe(name: str) -> str:
    """What the shared parameter ``name`` accepts, as the messages say it."""
    return _spec(name, None).describe()


def check(name: str, value: Any, spec: Constraint | str | None = None) -> Any:
    """``value`` checked and converted (an int for an integer interval, a float for a real one),
    else a ParameterTypeError (wrong type) or ParameterError (out of range) in the one message
    form. ``spec``: a :class:`Constraint`, or the :data:`SPECS` name to use (default ``name``)."""
    return _spec(name, spec).check(name, value)


def check_int(name: str, value: Any, lo: int, hi: int) -> int:
    """``value`` as an int in [lo, hi] (:func:`check` with ``Interval(int, lo, hi)``)."""
    return int(Interval(int, lo, hi).check(name, value))


_F = TypeVar("_F", bound=Callable[..., Any])


def validate_params(specs: Mapping[str, Constraint | str | None] | Iterable[str]) -> Callable[[_F], _F]:
    """Decorator: check the named arguments of every call before the function runs.

    ``specs`` maps a parameter name to a :class:`Constraint`, to a :data:`SPECS` name, or to
    ``None`` (the :data:`SPECS` entry of the same name); a list of names takes each one's
    :data:`SPECS` entry. An argument that is ``None`` is not checked (it means "not given"; the
    function decides whether it may be left out). The function receives its arguments unchanged,
    so its own narrower checks (a route's smaller limit) still apply after these."""
    pairs = list(specs.items()) if isinstance(specs, Mapping) else [(name, None) for name in specs]

    def wrap(fn: _F) -> _F:
        sig = inspect.signature(fn)
        resolved = {name: _spec(name, spec) for name, spec in pairs}
        missing = set(resolved) - set(sig.parameters)
        if missing:
            raise ParameterError(f"validate_params: {fn.__qualname__} has no parameter {sorted(missing)}")
        positions = {name: i for i, name in enumerate(sig.parameters)}
        kinds = {name: p.kind for name, p in sig.parameters.items()}

        @functools.wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> Any:
            for name, con in resolved.items():
                if name in kwargs:
                    value = kwargs[name]
                elif (kinds[name] in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                      and positions[name] < len(args)):
                    value = args[positions[name]]
                else:
                    continue
                if value is None:
                    continue
                con.check(name, value)
            return fn(*args, **kwargs)

        checked.__validated__ = dict(resolved)  # type: ignore[attr-defined]
        return cast(_F, checked)

    return wrap


def parse_text(name: str, text: str, spec: Constraint | str | None = None) -> Any:
    """A command-line option's ``text`` read as the value :func:`check` takes (an integer when the
    text is one, else a float for a number spec) and checked against the same spec: a wrong value
    gets the message the library gives for it."""
    con = _spec(name, spec)
    inner = con.inner if isinstance(con, NoneOr) else con
    value: Any = text
    if isinstance(inner, Interval):
        try:
            value = int(text)
        except ValueError:
            if inner.kind is float:
                try:
                    value = float(text)
                except ValueError:
                    pass
    return con.check(name, value)
