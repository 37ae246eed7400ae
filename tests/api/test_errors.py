"""One error contract (dpsketch.errors): every exception dpsketch raises is a DPSketchError that
also derives from the built-in a caller would catch; the compiled core's exceptions arrive as the
same classes; the source holds no bare built-in raise; and the public API, called with wrong
types and values, fails with a DPSketchError (or accepts the value), never with a bare built-in."""

from __future__ import annotations

import ast
import builtins
import math
import pathlib

import numpy as np
import pytest

import dpsketch
from dpsketch import _core, errors

PACKAGE = pathlib.Path(dpsketch.__file__).resolve().parent

# Raises of built-ins that a Python protocol requires, and one internal signal caught in its module.
ALLOWED = {
    ("AttributeError", "__getattr__"), ("AttributeError", "__setattr__"), ("AttributeError", "__delattr__"),
    ("NotImplementedError", None),  # abstract methods
    ("SystemExit", "<module>"),  # a script's `raise SystemExit(main())`
}
# io/streams.py's inflater signals a truncated or corrupt gzip stream with EOFError/OSError, which
# Source._guard turns into the command line's InputError before anything leaves the module.
ALLOWED_IN_FILE = {("io/streams.py", "EOFError"), ("io/streams.py", "OSError")}


def _builtin_exception(name: str) -> bool:
    obj = getattr(builtins, name, None)
    return isinstance(obj, type) and issubclass(obj, BaseException)


def _bare_raises(tree: ast.AST):
    """(exception name, enclosing function, line) of every `raise Builtin(...)` / `raise Builtin`."""
    def walk(node, func):
        for child in ast.iter_child_nodes(node):
            f = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if isinstance(child, ast.Raise) and child.exc is not None:
                exc = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                if isinstance(exc, ast.Name) and _builtin_exception(exc.id):
                    yield exc.id, func, child.lineno
            yield from walk(child, f)
    yield from walk(tree, "<module>")


def test_the_source_has_no_bare_builtin_raise():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for name, func, line in _bare_raises(tree):
            if (name, func) in ALLOWED or (name, None) in ALLOWED or (path.relative_to(PACKAGE).as_posix(), name) in ALLOWED_IN_FILE:
                continue
            found.append(f"{path.relative_to(PACKAGE)}:{line}: raise {name} (in {func})")
    assert not found, "raise a dpsketch.errors class instead:\n" + "\n".join(found)


def test_the_walk_finds_bare_raises():
    src = "def f(x):\n    if x:\n        raise ValueError('no')\n    raise TypeError\nclass A:\n" \
          "    def __getattr__(self, n):\n        raise AttributeError(n)\n"
    assert sorted((n, f) for n, f, _ in _bare_raises(ast.parse(src))) == [
        ("AttributeError", "__getattr__"), ("TypeError", "f"), ("ValueError", "f")]


def test_every_class_is_a_dpsketch_error_named_in_dpsketch_errors():
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.DPSketchError), name
        assert cls.__module__ == "dpsketch.errors", (name, cls.__module__)
        assert f"dpsketch.errors.{name}" in repr(cls)
        if name in dpsketch.__all__:
            assert getattr(dpsketch, name) is cls  # the top-level names are the same classes
    assert issubclass(errors.ParameterTypeError, errors.ParameterError)
    assert issubclass(errors.ParameterTypeError, TypeError) and issubclass(errors.ParameterError, ValueError)
    assert issubclass(errors.IntegerRangeError, OverflowError)


def test_the_core_translates_every_exception_kind():
    rng = _core.noise.SecureRng.from_seed(1) if hasattr(_core.noise.SecureRng, "from_seed") else None
    # a pybind11 value_error and type_error of the bindings
    with pytest.raises(errors.ParameterError):
        dpsketch.SpaceSaving(8).update_many(np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(errors.ParameterTypeError):
        dpsketch.SpaceSaving(8).update_many(["a", 3])
    with pytest.raises(errors.ParameterTypeError):
        dpsketch.SpaceSaving(8).update_many("abc")
    del rng


def test_a_budget_charge_inside_a_charge_is_a_state_error(tmp_path):
    b = dpsketch.Budget.open(tmp_path / "b.json", epsilon=1.0, delta=1e-6)
    with pytest.raises(errors.StateError):
        with b.charging("outer", epsilon=0.1):
            b.spend("inner", epsilon=0.1)


# -- wrong types and values through the public API ------------------------------------------------------

BAD = {"None": None, "str": "x", "object": object(), "-1": -1, "0": 0, "1.5": 1.5, "nan": math.nan,
       "inf": math.inf, "-inf": -math.inf, "1e30": 10**30, "list": [], "dict": {}, "True": True, "bytes": b"\xff"}


def _stream():
    return dpsketch.datasets.zipf(2_000, skew=1.1, seed=1)


def _summary(cls, *args):
    s = cls(*args)
    s.update_many(_stream())
    return s


# (name, callable taking keyword arguments, valid keyword arguments)
CALLS = [
    ("SpaceSaving", lambda **kw: dpsketch.SpaceSaving(**kw), {"capacity": 64}),
    ("MisraGries", lambda **kw: dpsketch.MisraGries(**kw), {"capacity": 64}),
    ("CountMin", lambda **kw: dpsketch.CountMin(**kw), {"width": 64, "depth": 3}),
    ("CountSketch", lambda **kw: dpsketch.CountSketch(**kw), {"width": 64, "depth": 3}),
    ("SpaceSaving.release", lambda **kw: _summary(dpsketch.SpaceSaving, 64).release(**kw),
     {"epsilon": 1.0, "delta": 1e-6, "k": 16, "seed": 1}),
    ("MisraGries.release", lambda **kw: _summary(dpsketch.MisraGries, 64).release(**kw),
     {"epsilon": 1.0, "delta": 1e-6, "seed": 1}),
    ("heavy_hitters", lambda **kw: dpsketch.heavy_hitters(_stream(), **kw),
     {"k": 16, "epsilon": 1.0, "delta": 1e-6, "seed": 1}),
    ("quantiles", lambda **kw: dpsketch.quantiles(np.linspace(0, 1, 500), **kw),
     {"qs": [0.5], "bounds": (0.0, 1.0), "epsilon": 1.0, "seed": 1}),
    ("PrivateCountMin", lambda **kw: dpsketch.PrivateCountMin(**kw), {"width": 64, "depth": 3, "rho": 1.0}),
    ("PrivateDyadicCountSketch", lambda **kw: dpsketch.PrivateDyadicCountSketch(**kw),
     {"universe_bits": 8, "rho": 1.0}),
    ("unit_heavy_hitters", lambda **kw: dpsketch.mechanisms.unit_level.unit_heavy_hitters([1, 2, 2, 3], [0, 0, 1, 2], **kw),
     {"epsilon": 1.0, "delta": 1e-6, "max_keys_per_unit": 2, "seed": 1}),
    ("bound_contributions", lambda **kw: dpsketch.mechanisms.unit_level.bound_contributions([1, 2, 2], [0, 0, 1], **kw),
     {"max_keys_per_unit": 1, "seed": 1}),
    ("Budget", lambda **kw: dpsketch.Budget(**kw), {"epsilon": 1.0, "delta": 1e-6}),
]


def _calls():
    for name, fn, valid in CALLS:
        for param in valid:
            for label, bad in BAD.items():
                yield pytest.param(fn, {**valid, param: bad}, id=f"{name}-{param}-{label}")


@pytest.mark.parametrize("fn,kwargs", list(_calls()))
def test_wrong_values_fail_with_a_dpsketch_error(fn, kwargs):
    try:
        fn(**kwargs)
    except errors.DPSketchError:
        pass
    except Exception as exc:  # noqa: BLE001 - the contract under test
        pytest.fail(f"{type(exc).__module__}.{type(exc).__name__}: {exc}")
