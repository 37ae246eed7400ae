"""The wiring modules contain no privacy arithmetic (issue #37, point 1; docs/architecture.md).

Every threshold, sensitivity, tail bound, noise scale and calibration lives in a mechanism module
(``dpsketch/mechanisms/*.py``, ``accounting/calibration.py``) or the C++ ``release/`` layer; the
modules of :data:`WIRING_MODULES` only partition, collect and call a mechanism's plan and release.
:func:`privacy_arithmetic` parses one module (AST) and lists every place that breaks this:

- a call of a math/numpy function used for tails and calibration (``log``, ``exp``, ``sqrt``,
  ``erf``, ``erfc``, ``ceil``, ...), whatever its arguments;
- arithmetic (a binary or augmented operation, or a unary minus) one of whose operands names a
  privacy quantity: a name, attribute or string subscript key whose ``_``-separated words include
  epsilon/eps/delta/dlt/rho/sigma/sigma2/tau/threshold/n_hat/n_lo/n_up/noise_bound/... (for
  example ``cal["epsilon_mechanism"] / 2`` or ``length.n_hat / k``);
- a call of the ``Release`` constructor (releases come from the builders of ``release.py``, which
  a mechanism calls);
- a dict literal or a subscript store whose string key is a guarantee field (``epsilon``,
  ``privacy_unit``, ``neighbours``, ...): a hand-built metadata record;
- an import from ``accounting.calibration`` other than :data:`CALIBRATION_ALLOWLIST`, and any use
  of the C++ core's ``_core.release`` (thresholds, calibration) or ``_core.noise`` (draws).

The rule is checked on the modules themselves and, so that it cannot pass vacuously, on snippets
of the privacy arithmetic these modules held before it moved (each must be caught).
Other branches extend :data:`WIRING_MODULES` (the CLI, windows, cumulative) with the same checker.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "dpsketch"

WIRING_MODULES = ["spark.py", "distributed.py"]

# What a wiring module may import from accounting.calibration, and why it is not arithmetic.
CALIBRATION_ALLOWLIST = {
    "check_privacy_params": "validates (epsilon, delta) and returns them unchanged, before any data is read",
}

TAIL_FUNCTIONS = {"log", "log1p", "log2", "log10", "exp", "expm1", "sqrt", "erf", "erfc", "erfinv", "ceil", "floor",
                  "pow", "power", "lgamma", "gamma", "comb", "cbrt", "exp2", "logaddexp", "hypot"}
MATH_MODULES = {"math", "np", "numpy", "scipy", "special", "cmath"}

PRIVACY_WORDS = {"epsilon", "eps", "delta", "dlt", "rho", "sigma", "sigma2", "tau", "threshold", "noise", "gamma",
                 "hat", "lo", "up", "sensitivity", "scale", "alpha", "beta", "t"}
# words that only count together with another (n_hat, n_lo, n_up, noise_bound, length_t, ...)
_PAIRED = {"hat": "n", "lo": "n", "up": "n", "t": "length", "bound": "noise"}

GUARANTEE_KEYS = {"epsilon", "delta", "rho", "privacy_unit", "neighbours", "epsilon_requested", "delta_requested",
                  "epsilon_used", "epsilon_mechanism", "delta_mechanism", "epsilon_total", "delta_total", "threshold",
                  "threshold_inclusive", "reproducible_not_secret", "length", "assumes_public_length", "mechanism"}


def _privacy_word(name: str) -> bool:
    """True if ``name`` names a privacy quantity: one of its words is epsilon/delta/rho/sigma/tau/
    threshold/... (``eps_used``, ``delta_total``, ``self.epsilon_lookup``), or a pair n_hat/n_lo/
    n_up/noise_bound/length_t."""
    words = [w for w in name.lower().split("_") if w]
    strong = {"epsilon", "eps", "delta", "dlt", "rho", "sigma", "sigma2", "tau", "threshold", "sensitivity"}
    if any(w in strong for w in words):
        return True
    return any(w in _PAIRED and _PAIRED[w] in words for w in words) or "noise_bound" in name.lower()


def _names_privacy(node: ast.AST) -> str | None:
    """The privacy quantity an operand names (itself or inside it, not inside a call's arguments)."""
    if isinstance(node, ast.Name) and _privacy_word(node.id):
        return node.id
    if isinstance(node, ast.Attribute):
        if _privacy_word(node.attr):
            return node.attr
        return _names_privacy(node.value)
    if isinstance(node, ast.Subscript):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and _privacy_word(key.value):
            return f"[{key.value!r}]"
        return _names_privacy(node.value)
    if isinstance(node, (ast.BinOp,)):
        return _names_privacy(node.left) or _names_privacy(node.right)
    if isinstance(node, ast.UnaryOp):
        return _names_privacy(node.operand)
    if isinstance(node, ast.Call):
        return _names_privacy(node.func) if isinstance(node.func, ast.Attribute) else None
    return None


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def privacy_arithmetic(path) -> list[str]:
    """Every place in the module at ``path`` that computes privacy arithmetic, builds a Release or a
    guarantee record by hand, or imports calibration internals (module docstring), as
    ``"file:line: what"``; empty when the module only wires."""
    path = Path(path)
    src = path.read_text(encoding="utf-8")
    tree = ast.parse(src, filename=str(path))
    found: list[str] = []
    math_names: set[str] = set()  # functions imported from a math module under their own name
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[-1] in MATH_MODULES:
            math_names |= {a.asname or a.name for a in node.names if a.name in TAIL_FUNCTIONS}

    def flag(node, what):
        found.append(f"{path.name}:{getattr(node, 'lineno', '?')}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in TAIL_FUNCTIONS and _dotted(f.value).split(".")[0] in MATH_MODULES:
                flag(node, f"calls {_dotted(f)} (a tail or calibration function)")
            elif isinstance(f, ast.Name) and f.id in math_names:
                flag(node, f"calls {f.id} (a tail or calibration function)")
            if (isinstance(f, ast.Name) and f.id == "Release") or (isinstance(f, ast.Attribute) and f.attr == "Release"):
                flag(node, "builds a Release by hand (use a builder of release.py through the mechanism)")
        elif isinstance(node, (ast.BinOp, ast.AugAssign)):
            operands = [node.left, node.right] if isinstance(node, ast.BinOp) else [node.target, node.value]
            for op in operands:
                named = _names_privacy(op)
                if named:
                    flag(node, f"arithmetic on {named}")
                    break
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            named = _names_privacy(node.operand)
            if named:
                flag(node, f"arithmetic on {named}")
        elif isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            if keys & GUARANTEE_KEYS:
                flag(node, f"builds a guarantee record by hand (keys {sorted(keys & GUARANTEE_KEYS)})")
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            key = node.slice
            if isinstance(key, ast.Constant) and key.value in GUARANTEE_KEYS:
                flag(node, f"sets the guarantee field {key.value!r} by hand")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("calibration"):
            for a in node.names:
                if a.name not in CALIBRATION_ALLOWLIST:
                    flag(node, f"imports {a.name} from accounting.calibration (not in CALIBRATION_ALLOWLIST)")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.endswith("calibration"):
                    flag(node, f"imports {a.name}")
        elif isinstance(node, ast.Attribute) and node.attr in ("release", "noise") and _dotted(node.value) == "_core":
            flag(node, f"uses _core.{node.attr} (the C++ thresholds, calibration and noise belong to a mechanism)")
    return found


@pytest.mark.parametrize("module", WIRING_MODULES)
def test_wiring_module_has_no_privacy_arithmetic(module):
    path = PACKAGE / module
    assert path.is_file(), path
    found = privacy_arithmetic(path)
    assert not found, "move these into a mechanism module (docs/architecture.md):\n" + "\n".join(found)


@pytest.mark.parametrize("module", WIRING_MODULES)
def test_wiring_module_calls_mechanisms(module):
    """Not vacuous: the module parses to real code that calls into the mechanisms' modules."""
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    sources = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert any(m and m.startswith("mechanisms") for m in sources), sources
    assert sum(isinstance(n, ast.Call) for n in ast.walk(tree)) > 50


# Snippets of what these modules computed before the move: each must be caught.
CAUGHT = {
    "the brief's example": "import math\ntau = 2 * math.log(1/delta) / epsilon\n",
    "a tail from a from-import": "from math import sqrt\nx = sqrt(v)\n",
    "numpy tails": "import numpy as np\ny = np.exp(-x)\n",
    "ceil on a privacy parameter": "import math\nt = math.ceil(z)\n",
    "DPSS's union threshold": "threshold = length.n_lo / kk - g\n",
    "the n/k cut": "cut = length.n_hat / kk\n",
    "the sketch route's length bound": "n_up = n_hat + 2.0 * s\n",
    "the budget split": "self.epsilon_sketch = eps * frac\n",
    "a delta share": "d = self.delta / 3\n",
    "a subscripted calibration": "x = cal['epsilon_mechanism'] / 2\n",
    "an augmented assignment": "eps_total += eps_lookup\n",
    "a negated threshold": "key = -threshold\n",
    "the C++ thresholds": "from . import _core\ng = _core.release.dpss_gamma(e, d)\n",
    "a noise draw": "z = _core.noise.discrete_laplace(rng, 1, 1, 5)\n",
    "a hand-built Release": "from .release import Release\nr = Release(items=[], threshold=None, epsilon=1, delta=0, mechanism='x', n=None)\n",
    "a hand-built record": "meta = {'route': 'counters', 'epsilon_requested': 1.0}\n",
    "a guarantee field set by hand": "meta['neighbours'] = 'add_remove'\n",
    "calibration internals": "from .accounting.calibration import zcdp_rho_for\n",
    "calibration by module": "from .accounting import calibration\nimport dpsketch.accounting.calibration\n",
}

CLEAN = {
    "wiring arithmetic": "parts_n = max(1, min(shuffle, last + 1))\nkt = 2 * k\nsalt = x & ((1 << 63) - 1)\n",
    "the allowlisted check": "from .accounting.calibration import check_privacy_params\neps, dlt = check_privacy_params(e, d)\n",
    "calling a mechanism": "from .mechanisms.partitioned import release_union\nrel = release_union(s, items, cal=cal)\n",
    "a numpy array": "import numpy as np\nidx = np.repeat(np.arange(5), counts)\n",
}


@pytest.mark.parametrize("name", list(CAUGHT))
def test_the_rule_catches(tmp_path, name):
    f = tmp_path / "snippet.py"
    f.write_text(CAUGHT[name], encoding="utf-8")
    assert privacy_arithmetic(f), f"{name} was not caught: {CAUGHT[name]!r}"


def test_the_brief_example_is_caught_on_every_count(tmp_path):
    f = tmp_path / "snippet.py"
    f.write_text("import math\ntau = 2 * math.log(1/delta) / epsilon\n", encoding="utf-8")
    found = privacy_arithmetic(f)
    assert any("math.log" in x for x in found) and any("epsilon" in x or "delta" in x for x in found), found


@pytest.mark.parametrize("name", list(CLEAN))
def test_the_rule_lets_wiring_pass(tmp_path, name):
    f = tmp_path / "snippet.py"
    f.write_text(CLEAN[name], encoding="utf-8")
    assert privacy_arithmetic(f) == []


@pytest.mark.parametrize("module", ["mechanisms/partitioned.py", "mechanisms/sketch_route.py"])
def test_the_rule_finds_the_arithmetic_where_it_moved(module):
    """The distributed mechanisms' thresholds, tails and records moved to these modules: the same
    rule finds them there (a mechanism module may compute them; a wiring module may not)."""
    assert len(privacy_arithmetic(PACKAGE / module)) >= 10
