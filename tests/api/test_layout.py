"""The package layout shows the architecture: modules grouped by role, each layer importing only
layers below it (docs/architecture.md), no import cycles, about twenty top-level names, and the
names and module paths of the flat layout still working, with a DeprecationWarning, for one
release."""

from __future__ import annotations

import ast
import importlib
import pathlib
import warnings

import pytest

import dpsketch

PACKAGE = pathlib.Path(dpsketch.__file__).resolve().parent

# Layers, lowest first: a module may import (at module level) modules of its own layer and below.
LAYERS = [
    ("foundation", ("errors", "_core", "_validation", "_seeds", "_prefetch", "_lazy", "_compat", "datasets")),
    ("accounting", ("accounting",)),
    ("release", ("release", "intervals")),
    ("sketches", ("sketches",)),
    ("mechanisms", ("mechanisms",)),
    ("front doors", ("units", "front", "plans", "routes")),
    ("time", ("time",)),
    ("distributed", ("distributed", "spark")),
    ("audit", ("audit",)),
    ("io", ("io",)),
    ("cli", ("cli",)),
    ("package", ("__init__", "__main__")),
]
RANK = {prefix: i for i, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes}

# Imports inside a function that reach a layer above: the summaries' and sketches' own ``release``
# methods hand their state to their mechanism, and a one-shot release over a file path reads it
# through the input layer. Nothing else may reach up.
UPWARD_DELEGATIONS = {
    ("sketches.counters", "mechanisms.dpss"),
    ("sketches.counters", "mechanisms.pmg"),
    ("mechanisms.dpss", "io.input"),
    ("front", "io.input"),
}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        yield ".".join(parts), path


def _rank(module: str) -> int:
    return RANK[module.split(".")[0]]


def _imports(module: str, path: pathlib.Path):
    """(target module, at module level?) of every import of a dpsketch module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    base = module.split(".") if is_pkg and module != "__init__" else module.split(".")[:-1]

    def targets(node):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                stem = base[: len(base) - (node.level - 1)]
                src = ".".join(stem + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == "dpsketch":
                src = node.module.partition(".")[2]
            else:
                return
            for alias in node.names:
                sub = f"{src}.{alias.name}" if src else alias.name
                yield sub if (PACKAGE / sub.replace(".", "/")).exists() or \
                    (PACKAGE / (sub.replace(".", "/") + ".py")).exists() else src
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "dpsketch" and "." in alias.name:
                    yield alias.name.partition(".")[2]

    def walk(node, top):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and isinstance(child.test, ast.Name) and child.test.id == "TYPE_CHECKING":
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for t in targets(child):
                    if t:
                        yield t, top
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from walk(child, inner)

    yield from walk(tree, True)


def _graph():
    edges = []
    for module, path in _modules():
        for target, top in _imports(module, path):
            if target.split(".")[0] not in RANK:
                raise AssertionError(f"{module} imports {target}, which no layer of LAYERS holds")
            if target != module:
                edges.append((module, target, top))
    return edges


def test_every_module_is_in_a_layer():
    missing = [m for m, _ in _modules() if m.split(".")[0] not in RANK]
    assert not missing, f"add these modules to a layer of tests/api/test_layout.py and docs/architecture.md: {missing}"


def test_module_level_imports_point_down_or_sideways():
    up = [f"{m} -> {t}" for m, t, top in _graph() if top and _rank(t) > _rank(m)]
    assert not up, "a module imports a layer above it:\n" + "\n".join(up)


def test_function_level_imports_reach_up_only_to_delegate_a_release():
    up = sorted({(m, t) for m, t, top in _graph() if not top and _rank(t) > _rank(m)} - UPWARD_DELEGATIONS)
    assert not up, f"imports from a layer above (delegations are listed in UPWARD_DELEGATIONS): {up}"
    unused = UPWARD_DELEGATIONS - {(m, t) for m, t, top in _graph() if not top}
    assert not unused, f"UPWARD_DELEGATIONS lists imports that no longer exist: {sorted(unused)}"


def test_no_import_cycles_at_module_level():
    graph: dict[str, set[str]] = {}
    for m, t, top in _graph():
        if top:
            graph.setdefault(m, set()).add(t)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_the_paper_reproductions_are_not_in_the_package():
    assert not (PACKAGE / "experiments").exists()
    for m, path in _modules():
        assert "experiments" not in {t.split(".")[0] for t, _ in _imports(m, path)}
        assert "import experiments" not in path.read_text(encoding="utf-8"), m


def test_about_twenty_top_level_names_all_resolving():
    assert len(dpsketch.__all__) <= 22
    for name in dpsketch.__all__:
        assert getattr(dpsketch, name) is not None


@pytest.mark.parametrize("name, where", sorted(dpsketch._MOVED.items()))
def test_moved_names_still_resolve_with_a_deprecation_warning(name, where):
    with pytest.warns(DeprecationWarning, match=f"use {where}.{name}"):
        value = getattr(dpsketch, name)
    assert value is getattr(importlib.import_module(where), name)
    assert name not in dpsketch.__all__ and name not in dir(dpsketch)


@pytest.mark.parametrize("old, new", sorted(dpsketch._compat.OLD_MODULES.items()))
def test_old_module_paths_are_the_new_modules(old, new):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(f"dpsketch.{old}")
    assert module is importlib.import_module(f"dpsketch.{new}")
    assert any(issubclass(w.category, DeprecationWarning) and f"dpsketch.{new}" in str(w.message) for w in caught)


def test_the_summary_release_default_is_the_mechanism_default():
    import inspect

    from dpsketch.mechanisms.dpss import DEFAULT_CUT

    assert inspect.signature(dpsketch.SpaceSaving.release).parameters["cut"].default == DEFAULT_CUT


def test_at_most_two_python_levels_over_each_native_class():
    """A public summary or sketch is ``Name(Summary + mixins)`` or ``Name(_Family)`` with
    ``_Family(mixins..., Summary)`` (dpsketch/sketches/_base.py): its chain of bases to
    ``Summary`` is at most two classes long."""
    from dpsketch.sketches._base import Summary

    def depth(cls):
        if cls is Summary:
            return 0
        return 1 + min(depth(b) for b in cls.__bases__ if issubclass(b, Summary))

    classes = [getattr(dpsketch, n) for n in dpsketch.__all__ if isinstance(getattr(dpsketch, n), type)
               and issubclass(getattr(dpsketch, n), Summary)]
    assert len(classes) == 9
    assert {c.__name__: depth(c) for c in classes if depth(c) > 2} == {}
