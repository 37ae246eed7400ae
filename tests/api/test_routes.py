"""The route of a request and the parameters that apply to it are the library's (dpsketch.routes);
the command line only spells them (issue 38: the CLI holds no route selection)."""

from __future__ import annotations

import ast
import pathlib

import pytest

import dpsketch
from dpsketch import routes
from dpsketch.errors import ParameterError

from conftest import one_error_line, run_cli as run

PACKAGE = pathlib.Path(dpsketch.__file__).resolve().parent


@pytest.mark.parametrize("kwargs, route", [
    (dict(person=False, series=False), "row"),
    (dict(person=True, series=False), "person.exact"),
    (dict(person=True, series=False, bounded_rows=True), "person.bounded_memory"),
    (dict(person=True, series=False, one_pass_input=True), "person.bounded_memory"),
    (dict(person=True, series=True), "windowed"),
    (dict(person=False, series=True, cumulative=True), "windowed.cumulative"),
])
def test_heavy_hitters_route(kwargs, route):
    assert routes.heavy_hitters_route(**kwargs) == route
    assert route in routes.HEAVY_HITTER_ROUTES


def test_quantiles_route():
    assert routes.quantiles_route(person=True, method="dyadic") == "person.dyadic"
    assert routes.quantiles_route(person=False, method="dyadic") == "row.dyadic"
    assert routes.quantiles_route(person=False, method="joint") == "row.in_memory"


def test_refusals_name_the_parameter_and_spell_the_others():
    (r,) = routes.refusals("row", ["max_keys_per_unit", "k"])
    assert r.name == "max_keys_per_unit" and "give privacy_id COLUMN" in r.why
    (r,) = routes.refusals("row", ["max_keys_per_unit"], spell=lambda p: "--" + p.replace("_", "-"))
    assert "--privacy-id" in r.why
    assert routes.refusals("person.exact", ["max_keys_per_unit", "top_k", "noise"]) == []
    assert [r.name for r in routes.refusals("person.bounded_memory", ["top_k", "k"])] == ["top_k"]
    assert [r.name for r in routes.refusals("windowed", ["noise"], person=True)] == ["noise"]
    assert [r.name for r in routes.refusals("windowed", ["noise"], person=False)] == ["noise"]
    assert routes.refusals("windowed", ["max_rows_per_unit"], person=True) == []
    with pytest.raises(ParameterError):
        routes.refusals("nowhere", [])


def test_every_rule_names_known_parameters():
    for route, rules in routes._REFUSED.items():
        for params, why in rules:
            assert params and all(p in routes.PARAMETERS for p in params), route
            why.format_map(routes._Spelled(str))  # every {name} is fillable


@pytest.mark.parametrize("argv, route, given", [
    (["top", "-", "--max-keys-per-unit", "3"], "row", ["max_keys_per_unit"]),
    (["top", "f.csv", "--column", "q", "--privacy-id", "u", "--max-keys-per-unit", "3", "--passes", "2"],
     "person.exact", ["passes"]),
    (["top", "f.csv", "--column", "q", "--privacy-id", "u", "--max-rows-per-unit", "3", "--top-k", "5"],
     "person.bounded_memory", ["top_k"]),
    (["quantiles", "f.csv", "--column", "v", "--privacy-id", "u", "--max-rows-per-unit", "3", "--rho", "1",
      "--bounds", "0,1", "--noise-allocation", "joint"], "person.dyadic", ["noise_allocation"]),
])
def test_the_cli_refuses_with_the_library_rule(capsys, argv, route, given):
    code, _, err = run(capsys, *argv)
    (r,) = routes.refusals(route, given, spell=lambda p: "--" + p.replace("_", "-"))
    assert code == 2 and f"--{r.name.replace('_', '-')} {r.why}" in one_error_line(err)


def test_the_cli_holds_no_option_tables():
    """No module-level tuple of option names in the command line: which options apply to which
    route is dpsketch.routes'."""
    tree = ast.parse((PACKAGE / "cli" / "commands.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):
            elts = node.value.elts
            assert not (elts and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in elts)
                        and set(e.value for e in elts) & routes.PARAMETERS), ast.unparse(node)
