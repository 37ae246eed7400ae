"""Lazy attribute access for the subpackages (PEP 562): ``dpsketch.mechanisms.unit_level`` and
``dpsketch.accounting.Budget`` work without an explicit import, and importing a subpackage loads
none of its modules until one is used."""

import importlib


def attach(package: str, submodules: tuple, names: dict):
    """The ``__getattr__`` and ``__dir__`` of ``package``: ``submodules`` load on first use, and
    ``names`` maps an exported name to the submodule that defines it."""

    def __getattr__(name):
        if name in submodules:
            return importlib.import_module(f".{name}", package)
        if name in names:
            return getattr(importlib.import_module(f".{names[name]}", package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(submodules) | set(names))

    return __getattr__, __dir__
