"""No privacy arithmetic in the wiring (issue 37, point 1): the CLI, windows and cumulative call
plans and releases; every threshold, sensitivity, tail bound, noise scale and calibration lives in
the mechanism modules (python/dpsketch/mechanisms/, accounting/calibration.py, intervals.py, the
C++ release/ layer). This test parses each wiring module (AST) and fails on privacy arithmetic.

A second rule (``privacy_internals``, below) flags what wiring must not reach for at all: imports
of ``accounting.calibration`` other than ``CALIBRATION_ALLOWLIST``, the C++ core's thresholds and
noise (``_core.release``, ``_core.noise``), and guarantee records built by hand (a dict literal or a
subscript store with a guarantee key such as ``epsilon`` or ``privacy_unit``).

The rule (``privacy_arithmetic``) flags, in a module's code (docstrings and strings are not code):

1. a call of a transcendental or rounding function a calibration needs -- ``sqrt``, ``log*``,
   ``exp*``, ``pow``, ``erf*``, ``ceil`` (integer thresholds), ``lgamma``, ``isqrt`` -- by plain
   name or as an attribute of anything (``math.sqrt``, ``np.log``, ``mp.exp``, ``_math.ceil``);
   ``floor`` is left out: the windows floor event times to nanoseconds;
2. the ``**`` operator, except a power of two (``2**64``: a size, not a tail);
3. any arithmetic (``+ - * / // % **``, unary minus) with an operand that names a privacy quantity:
   a name or attribute matching ``PRIVACY_NAME`` (epsilon, eps, delta, rho, zcdp, sigma, tau,
   threshold, gamma, sensitivity, noise, scale, tail, alpha, beta, budget, ...; not ``level``,
   which names a dyadic level as often as a confidence level), e.g.
   ``args.epsilon / 2``, ``self._rho / L`` or ``-eps``;
4. an assignment, keyword argument or dict entry whose name or key names a privacy quantity and
   whose value is arithmetic (``threshold = total / k``, ``threshold=n / k``,
   ``{"threshold": n / k}``), whatever the operands are called;
5. ``max``/``min`` over a quotient or a MATH_FUNCTIONS call (``max(total / k, 4 * s)``: the shape
   of a threshold);
6. ``sum``/``fsum`` over privacy-named quantities (``sum(m.get("sigma2") for m in nodes)``: a
   composed variance or budget).

Comparisons are not arithmetic (``e > threshold`` filters by a threshold the mechanism computed).
Counting and sizing that is not privacy (``2 * capacity`` counters, ``last - first + 1`` windows)
passes. The self-tests below show that the rule catches the shapes of real thresholds and is not
vacuous: each wiring module parses to a non-empty tree and is really checked.
"""

from __future__ import annotations

import ast
import pathlib
import re
import textwrap

import pytest

import dpsketch

PACKAGE = pathlib.Path(dpsketch.__file__).resolve().parent

# The modules that wire mechanisms together and must hold no privacy arithmetic (paths under
# python/dpsketch/): Spark and the distributed routes, the command line, windows and cumulative.
WIRING_MODULES = ["spark.py", "distributed.py", "cli/__init__.py", "cli/commands.py", "time/windows.py",
                  "time/cumulative.py", "time/correlated.py"]

MATH_FUNCTIONS = {"sqrt", "isqrt", "cbrt", "log", "log1p", "log2", "log10", "exp", "exp2", "expm1", "pow",
                  "erf", "erfc", "erfinv", "erfcinv", "ceil", "lgamma", "gamma", "logsumexp",
                  "power", "float_power", "hypot"}
# A name (variable, attribute, argument, dict key) that names a privacy quantity.
PRIVACY_NAME = re.compile(
    r"(^|_)(eps|epsilon|epsilons|delta|deltas|rho|rhos|zcdp|sigma|sigma2|sigmas|tau|taus|threshold|thresholds|"
    r"thr|gamma|sensitivity|sens|noise|scale|tail|tails|alpha|beta|confidence|budget|half_width|halfwidth|"
    r"variance|var|std|stddev|calibration|privacy)($|_|\d)", re.IGNORECASE)
ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)


def _names(node: ast.AST):
    """The identifiers an expression reads: names, attribute names (``args.epsilon`` gives
    ``args`` and ``epsilon``) and string subscript keys (``meta["sigma2"]``)."""
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            yield n.id
        elif isinstance(n, ast.Attribute):
            yield n.attr
        elif isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str):
            yield n.slice.value
        elif (isinstance(n, ast.Call) and _callee(n) == "get" and n.args and isinstance(n.args[0], ast.Constant)
              and isinstance(n.args[0].value, str)):
            yield n.args[0].value  # meta.get("sigma2", 0.0)


def _privacy_named(node: ast.AST) -> list[str]:
    return [n for n in _names(node) if PRIVACY_NAME.search(n)]


def _is_arith(node: ast.AST) -> bool:
    """The expression computes: it holds a binary arithmetic operator or a unary minus (outside
    a string), or a call of a MATH_FUNCTIONS function."""
    for n in ast.walk(node):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ARITH) and not _string_expr(n):
            return True
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and not isinstance(n.operand, ast.Constant):
            return True
        if isinstance(n, ast.Call) and _callee(n) in MATH_FUNCTIONS:
            return True
    return False


def _divides(node: ast.AST) -> bool:
    """The expression divides, or calls a MATH_FUNCTIONS function."""
    return any((isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Div, ast.FloorDiv)))
               or (isinstance(n, ast.Call) and _callee(n) in MATH_FUNCTIONS) for n in ast.walk(node))


def _callee(call: ast.Call) -> str | None:
    f = call.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


def _target_names(target: ast.AST):
    for n in ast.walk(target):
        if isinstance(n, ast.Name):
            yield n.id
        elif isinstance(n, ast.Attribute):
            yield n.attr
        elif isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str):
            yield n.slice.value


def _string_expr(node: ast.AST) -> bool:
    """A ``"..." + "..."`` or ``"..." % x`` string: text, not arithmetic."""
    if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return _string_expr(node.left)
    return False


def privacy_arithmetic_in_source(source: str, name: str = "<string>") -> list[str]:
    """The privacy arithmetic in ``source`` (Python), one line each: ``name:line: what``."""
    tree = ast.parse(source, filename=name)
    found: list[str] = []

    def flag(node: ast.AST, what: str) -> None:
        seg = ast.get_source_segment(source, node) or ast.dump(node)[:60]
        found.append(f"{name}:{node.lineno}: {what}: {' '.join(seg.split())[:100]}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            callee = _callee(node)
            if callee in MATH_FUNCTIONS:
                flag(node, f"calls {callee}")
            elif callee in ("max", "min") and any(_divides(a) for a in node.args):
                flag(node, f"{callee} over a quotient (a threshold's shape)")
            elif callee in ("sum", "fsum") and any(_privacy_named(a) for a in node.args):
                flag(node, f"{callee} of {', '.join(sorted(set(n for a in node.args for n in _privacy_named(a))))} "
                           "(composing variances or budgets)")
            for kw in node.keywords:
                if kw.arg and PRIVACY_NAME.search(kw.arg) and _is_arith(kw.value):
                    flag(kw.value, f"computes keyword {kw.arg}=")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ARITH):
            if _string_expr(node):
                continue
            if isinstance(node.op, ast.Pow) and not (isinstance(node.left, ast.Constant) and node.left.value == 2):
                flag(node, "** (a power other than a power of two)")
                continue
            named = _privacy_named(node.left) + _privacy_named(node.right)
            if named:
                flag(node, f"arithmetic on {', '.join(sorted(set(named)))}")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _privacy_named(node.operand):
            flag(node, f"negates {', '.join(sorted(set(_privacy_named(node.operand))))}")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is None:
                continue
            for t in targets:
                hit = [n for n in _target_names(t) if PRIVACY_NAME.search(n)]
                if hit and (isinstance(node, ast.AugAssign) or _is_arith(node.value)):
                    flag(node, f"computes {', '.join(hit)}")
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if (isinstance(k, ast.Constant) and isinstance(k.value, str) and PRIVACY_NAME.search(k.value)
                        and _is_arith(v)):
                    flag(v, f"computes entry {k.value!r}")
    # one report per (line, what) even when nested nodes match twice
    return sorted(set(found), key=lambda s: (int(s.split(":")[1]), s))


def privacy_arithmetic(path) -> list[str]:
    """The privacy arithmetic in the module at ``path`` (absolute, or relative to the package)."""
    p = pathlib.Path(path)
    if not p.is_absolute():
        p = PACKAGE / p
    name = str(p.relative_to(PACKAGE)) if p.is_relative_to(PACKAGE) else str(p)
    return privacy_arithmetic_in_source(p.read_text(encoding="utf-8"), name)


def hand_built_releases(path) -> list[str]:
    """``Release(...)`` constructed by hand, or a release's metadata replaced by hand
    (``replace(rel, metadata=...)``), in the module at ``path``: the builders in release.py do it."""
    p = pathlib.Path(path)
    if not p.is_absolute():
        p = PACKAGE / p
    tree = ast.parse(p.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            callee = _callee(node)
            if callee == "Release":
                out.append(f"{path}:{node.lineno}: Release(...) built by hand")
            elif callee == "replace" and any(kw.arg == "metadata" for kw in node.keywords):
                out.append(f"{path}:{node.lineno}: replace(..., metadata=...) edits a release's metadata by hand")
    return out


@pytest.mark.parametrize("module", WIRING_MODULES)
def test_no_privacy_arithmetic(module):
    path = PACKAGE / module
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert len(tree.body) > 3, f"{module} parsed to (almost) nothing: the check would be vacuous"
    found = privacy_arithmetic(module)
    assert not found, ("privacy arithmetic in a wiring module; move it to the mechanism's module "
                       "(mechanisms/, accounting/calibration.py, intervals.py or C++ release/) and call it:\n"
                       + "\n".join(found))


@pytest.mark.parametrize("module", WIRING_MODULES)
def test_no_hand_built_release(module):
    found = hand_built_releases(module)
    assert not found, "use the builders in dpsketch/release.py:\n" + "\n".join(found)


CAUGHT = [
    "tau = 2 * math.log(1/delta) / epsilon",
    "threshold = max(total / k, 4 * math.sqrt(sigma2))",
    "print(max(total / k, 4 * math.sqrt(sigma2)))",
    "t = max(total / k, 4 * s)",  # max over a quotient
    "x = self._rho / L",
    "cut = args.epsilon * 0.5",
    "node = used_value(self._rho / L)",
    "f(threshold=n / k)",
    "obj = {'threshold': n / k}",
    "threshold = n / k",
    "w = np.sqrt(v)",
    "c = _m.ceil(x)",
    "p = x ** 0.5",
    "p = e ** -x",
    "s = meta['sigma2'] * 2",
    "threshold += 1",
    "half = -eps",
    "scale = 1.0 / e",
    "q = exp(-e * u)",
    "v = sum(max(lv.get('sigma2', 0.0) for lv in s.metadata['levels']) for s in sketches)",
    "total = math.fsum(r.epsilon for r in releases)",
]
PASSES = [
    "width, depth = max(16, 2 * capacity), 3",
    "wait = min(self._max_wait, max(0.0, due - now))",
    "big = 2**64",
    "bad = set(opts) - {'beta', 'noise_allocation'}",
    "text = ('sigma^2=' + num(s) if a else 'scale=' + num(b))",
    "horizon = last - first + 1",
    "found = prefix.heavy_hitters(threshold)",
    "keep = [x for x in xs if x > threshold]",
    "msg = 'threshold ' + str(t)",
    "s = f'tau={tau:.3g}'",
    "'''threshold = max(total / k, 4 * math.sqrt(sigma2))'''",
    "rel = calibration.threshold_for(epsilon, delta, k)",
]


@pytest.mark.parametrize("snippet", CAUGHT)
def test_rule_catches(snippet):
    assert privacy_arithmetic_in_source(textwrap.dedent(snippet)), f"not caught: {snippet}"


@pytest.mark.parametrize("snippet", PASSES)
def test_rule_passes_wiring(snippet):
    assert not privacy_arithmetic_in_source(snippet), privacy_arithmetic_in_source(snippet)


def test_rule_catches_the_old_cli_threshold(tmp_path):
    """The CLI's cumulative printer before the move (a function as it stood) is caught."""
    old = textwrap.dedent('''
        def _print_cumulative(out, writer, step, cumulative, top_n, k, source_desc):
            prefix, window = step.prefix, step.window
            total = prefix.noisy_total()
            sigma2 = sum(max(lv.get("sigma2", 0.0) for lv in s.metadata["levels"]) for s in prefix.sketches)
            threshold = max(total / k, 4 * math.sqrt(sigma2))
            return prefix.heavy_hitters(threshold)
    ''')
    p = tmp_path / "old.py"
    p.write_text(old)
    found = privacy_arithmetic(p)
    assert any("sqrt" in f for f in found) and any("max over a quotient" in f for f in found), found
    assert any("sum of sigma2" in f for f in found), found


def test_wiring_modules_exist_and_are_checked():
    for module in WIRING_MODULES:
        assert (PACKAGE / module).is_file(), module


# -- what wiring must not reach for: calibration internals, the core's thresholds, records --------

# What a wiring module may import from accounting.calibration, and why it is not arithmetic.
CALIBRATION_ALLOWLIST = {
    "check_privacy_params": "validates (epsilon, delta) and returns them unchanged, before any data is read",
}
GUARANTEE_KEYS = {"epsilon", "delta", "rho", "privacy_unit", "neighbours", "epsilon_requested", "delta_requested",
                  "epsilon_used", "epsilon_mechanism", "delta_mechanism", "epsilon_total", "delta_total", "threshold",
                  "threshold_inclusive", "reproducible_not_secret", "length", "assumes_public_length", "mechanism"}


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def privacy_internals(path) -> list[str]:
    """Imports of calibration internals (not in CALIBRATION_ALLOWLIST), uses of ``_core.release`` /
    ``_core.noise``, and guarantee records built by hand, in the module at ``path``."""
    p = pathlib.Path(path)
    if not p.is_absolute():
        p = PACKAGE / p
    tree = ast.parse(p.read_text(encoding="utf-8"))
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("calibration"):
            out += [f"{p.name}:{node.lineno}: imports {a.name} from accounting.calibration (not allowlisted)"
                    for a in node.names if a.name not in CALIBRATION_ALLOWLIST]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("accounting"):
            out += [f"{p.name}:{node.lineno}: imports accounting.calibration" for a in node.names
                    if a.name == "calibration"]
        elif isinstance(node, ast.Import):
            out += [f"{p.name}:{node.lineno}: imports {a.name}" for a in node.names if a.name.endswith("calibration")]
        elif isinstance(node, ast.Attribute) and node.attr in ("release", "noise") and _dotted(node.value) == "_core":
            out.append(f"{p.name}:{node.lineno}: uses _core.{node.attr} (the core's thresholds, calibration, noise)")
        elif isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            if keys & GUARANTEE_KEYS:
                out.append(f"{p.name}:{node.lineno}: a guarantee record built by hand {sorted(keys & GUARANTEE_KEYS)}")
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            key = node.slice
            if isinstance(key, ast.Constant) and key.value in GUARANTEE_KEYS:
                out.append(f"{p.name}:{node.lineno}: sets the guarantee field {key.value!r} by hand")
    return out


# The stricter rule holds for every wiring module: the series' composition records come from
# dpsketch.mechanisms.series, the command line's JSON documents from io.output.document.
INTERNALS_CHECKED = WIRING_MODULES


@pytest.mark.parametrize("module", INTERNALS_CHECKED)
def test_no_privacy_internals(module):
    found = privacy_internals(module)
    assert not found, "call the mechanism module instead:\n" + "\n".join(found)


INTERNALS_CAUGHT = [
    "from .accounting.calibration import zcdp_rho_for",
    "from .accounting.calibration import calibrate, check_privacy_params",
    "from .accounting import calibration",
    "import dpsketch.accounting.calibration",
    "g = _core.release.dpss_gamma(e, d)",
    "z = _core.noise.discrete_laplace(rng, 1, 1, 5)",
    "meta = {'route': 'counters', 'epsilon_requested': 1.0}",
    "meta['neighbours'] = 'add_remove'",
]
INTERNALS_PASS = [
    "from .accounting.calibration import check_privacy_params",
    "from .mechanisms.partitioned import release_union",
    "cap = _core.MAX_CAPACITY",
    "parts = {'pid': 1, 'part': b''}",
]


@pytest.mark.parametrize("snippet", INTERNALS_CAUGHT)
def test_internals_rule_catches(tmp_path, snippet):
    f = tmp_path / "snippet.py"
    f.write_text(snippet + "\n", encoding="utf-8")
    assert privacy_internals(f), f"not caught: {snippet}"


@pytest.mark.parametrize("snippet", INTERNALS_PASS)
def test_internals_rule_passes_wiring(tmp_path, snippet):
    f = tmp_path / "snippet.py"
    f.write_text(snippet + "\n", encoding="utf-8")
    assert privacy_internals(f) == []


def test_rule_catches_the_old_distributed_thresholds():
    """The counters route's union threshold and the sketch route's length bound as they stood in
    distributed.py before the move are caught."""
    old = textwrap.dedent('''
        def release(length, kk, g, cal, sigma2, n_hat, delta):
            threshold = length.n_lo / kk - g
            n_up = n_hat + 2.0 * math.sqrt(sigma2 * math.log(3.0 / delta))
            eps_lookup = _core.release.epsilon_used(cal["epsilon"] - cal["epsilon_sketch"])
            return Release(items=[], threshold=threshold, epsilon=1, delta=0, mechanism="x", n=None)
    ''')
    found = privacy_arithmetic_in_source(old)
    assert any("sqrt" in f for f in found) and any("threshold" in f for f in found), found
    assert any("epsilon" in f for f in found), found


@pytest.mark.parametrize("module", ["mechanisms/partitioned.py", "mechanisms/sketch_route.py"])
def test_the_rules_find_the_arithmetic_where_it_moved(module):
    """The distributed mechanisms' thresholds, tails and records moved to these modules: the same
    rules find them there (a mechanism module may compute them; a wiring module may not)."""
    assert privacy_arithmetic(module) and privacy_internals(module)

