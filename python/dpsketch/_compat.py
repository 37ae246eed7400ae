"""The module paths of the flat layout (``dpsketch.windows``, ``dpsketch.privacy_unit``, ...) as
deprecated aliases of their modules in the layout by role, for one release. CHANGELOG.md lists
them."""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

OLD_MODULES = {
    "budget": "accounting.budget", "budget_file": "accounting.ledger", "calibration": "accounting.calibration",
    "summaries": "sketches.counters", "dyadic": "sketches.dyadic",
    "dpss": "mechanisms.dpss", "top_k": "mechanisms.top_k", "private": "mechanisms.private_sketches",
    "inmemory": "mechanisms.quantiles", "privacy_unit": "mechanisms.unit_level",
    "windows": "time.windows", "cumulative": "time.cumulative",
}


def old_module(name: str, stacklevel: int = 2):
    new = f"{__package__}.{OLD_MODULES[name]}"
    warnings.warn(f"dpsketch.{name} is deprecated: use {new}", DeprecationWarning, stacklevel=stacklevel)
    return importlib.import_module(new)


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import dpsketch.windows`` gives the module ``dpsketch.time.windows`` itself."""

    def find_spec(self, fullname, path=None, target=None):
        pkg, _, leaf = fullname.rpartition(".")
        if pkg != __package__ or leaf not in OLD_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return old_module(spec.name.rpartition(".")[2], stacklevel=8)

    def exec_module(self, module):
        sys.modules[f"{__package__}.{module.__name__.rpartition('.')[2]}"] = module


if not any(isinstance(f, _OldPaths) for f in sys.meta_path):
    sys.meta_path.append(_OldPaths())
