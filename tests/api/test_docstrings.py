"""Every public parameter is described in its docstring.

The walk: every public callable reachable from ``dpsketch.__all__`` and the subpackages' public
names (``dpsketch.accounting``, ``dpsketch.sketches``, ``dpsketch.time``, the public functions of
each ``dpsketch.mechanisms`` module, ``dpsketch.spark``, the ``dpsketch.errors`` classes), and the
public methods of each public class. Every parameter but self/cls/*args/**kwargs (and a
dataclass's private ``_field``) must be described, for a class in the class or ``__init__``
docstring.

The convention (how the docstrings are written): a parameter is described by a field line
``:param name: text`` (``:ivar name: text`` for a dataclass field) with non-empty text, or in
prose as ````name```` on a line that says something about it (not the name alone).
"""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

import dpsketch

MODULES = ["dpsketch.accounting", "dpsketch.sketches", "dpsketch.time", "dpsketch.errors",
           *(f"dpsketch.mechanisms.{m}" for m in dir(dpsketch.mechanisms)), "dpsketch.spark"]


def _public_objects() -> dict:
    out: dict = {}
    ids: set = set()

    def add(qual, obj):
        if id(obj) not in ids:
            ids.add(id(obj))
            out[qual] = obj

    for name in dpsketch.__all__:
        if not name.startswith("__"):
            add(f"dpsketch.{name}", getattr(dpsketch, name))
    for modname in MODULES:
        try:
            module = importlib.import_module(modname)
        except ImportError:  # dpsketch.spark without pyspark
            continue
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if callable(obj):
                add(f"{modname}.{name}", obj)
    return out


def _ours(fn) -> bool:
    return (getattr(fn, "__module__", None) or "").startswith("dpsketch")


def _callables():
    """(qualified name, callable whose signature is checked, the docstring that must describe it)."""
    for qual, obj in _public_objects().items():
        if not inspect.isclass(obj):
            if _ours(obj):
                yield qual, obj, obj.__doc__ or ""
            continue
        if issubclass(obj, BaseException):
            continue  # exceptions take a message only
        init = next((k.__dict__["__init__"] for k in obj.__mro__ if "__init__" in k.__dict__), None)
        if init is not None and _ours(init):
            yield qual, init, (obj.__doc__ or "") + "\n" + (init.__doc__ or "")
        elif "__dataclass_fields__" in obj.__dict__:
            yield qual, obj, obj.__doc__ or ""
        for name in dir(obj):
            if name.startswith("_"):
                continue
            raw = inspect.getattr_static(obj, name)
            fn = raw.__func__ if isinstance(raw, (classmethod, staticmethod)) else raw
            if isinstance(fn, property) or not callable(fn) or not _ours(fn):
                continue
            yield f"{qual}.{name}", fn, fn.__doc__ or ""


def _parameters(fn) -> list[str]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values()
            if p.name not in ("self", "cls") and not p.name.startswith("_")
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def described(name: str, doc: str) -> bool:
    m = re.search(rf":(?:param|ivar) {re.escape(name)}:[ \t]*(\S.*)?", doc)
    if m and m.group(1):
        return True
    for m in re.finditer(rf"``{re.escape(name)}``", doc):
        start = doc.rfind("\n", 0, m.start()) + 1
        end = doc.find("\n", m.end())
        rest = doc[start:m.start()] + doc[m.end():len(doc) if end < 0 else end]
        if re.search(r"\w{2,}", re.sub(r"``[^`]*``", "", rest)):
            return True
    return False


def test_the_convention():
    assert described("k", ":param k: the frequency cut")
    assert not described("k", ":param k:\n:param top_k: exactly N")
    assert described("seed", "``seed`` makes the noise reproducible")
    assert not described("seed", "Arguments:\n    ``seed``\n")
    assert not described("seed", "a ``seed_value`` here")


def test_the_walk_reaches_the_public_api():
    names = {q for q, _, _ in _callables()}
    for q in ("dpsketch.heavy_hitters", "dpsketch.SpaceSaving.release", "dpsketch.Budget", "dpsketch.plan",
              "dpsketch.mechanisms.unit_level.unit_heavy_hitters", "dpsketch.Windowed", "dpsketch.Cumulative.step"):
        assert q in names, q
    assert len(names) > 100


def test_every_public_parameter_is_described():
    missing = [f"{qual}({name})" for qual, fn, doc in _callables() for name in _parameters(fn)
               if not described(name, doc)]
    assert not missing, "describe these parameters in the docstring (:param name: ...):\n" + "\n".join(missing)


@pytest.mark.parametrize("qual", ["dpsketch.heavy_hitters", "dpsketch.quantiles"])
def test_the_front_doors_describe_every_parameter_with_a_field_line(qual):
    fn = dict((q, f) for q, f, _ in _callables())[qual]
    for name in _parameters(fn):
        assert re.search(rf":param {name}: \S", fn.__doc__), name
