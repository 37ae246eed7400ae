"""``--dry-run`` (docs/cli.md): the plan of the release the options ask for, from the library's
:func:`dpsketch.plan`, printed before any input is opened (a path that does not exist is fine) or
any budget is charged; the routes it does not cover say so."""

from __future__ import annotations

import json

import pytest

import dpsketch
from dpsketch import Person, Row
from dpsketch.accounting import FileBudget

from conftest import one_error_line, run_cli as run

MISSING = "does-not-exist.csv"

# (command line, the same plan from the library)
CASES = {
    "dpss": (["top", MISSING, "--k", 100, "--plan-rows", 10**6],
             dict(epsilon=1.0, delta=1e-6, k=100, method="dpss", capacity=200, unit=Row(), n=10**6)),
    "dpss top-k": (["top", MISSING, "--top-k", 20, "--epsilon", 0.5],
                   dict(epsilon=0.5, delta=1e-6, top_k=20, method="dpss", capacity=1280, unit=Row())),
    "dpss two passes": (["top", MISSING, "--k", 50, "--passes", 2, "--public-length"],
                        dict(epsilon=1.0, delta=1e-6, k=50, method="dpss_two_pass", capacity=100,
                             unit=Row(public_length=True))),
    "pmg": (["top", MISSING, "--algorithm", "misragries", "--k", 30, "--plan-rows", 5000],
            dict(epsilon=1.0, delta=1e-6, k=30, method="pmg", capacity=60, unit=Row(), n=5000)),
    "person exact": (["top", MISSING, "--column", "q", "--privacy-id", "user", "--max-keys-per-unit", 4,
                      "--noise", "laplace"],
                     dict(epsilon=1.0, delta=1e-6, method="exact", noise="laplace",
                          unit=Person("user", max_keys=4, max_rows_per_key=1))),
    "person bounded": (["top", "-", "--column", "q", "--privacy-id", "user", "--max-rows-per-unit", 6,
                        "--k", 40, "--plan-rows", 10**5],
                       dict(epsilon=1.0, delta=1e-6, k=40, capacity=80, method="bounded_memory",
                            unit=Person("user", max_rows=6), n=10**5)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_dry_run_prints_the_library_plan_and_reads_nothing(capsys, tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    argv, params = CASES[name]
    code, out, err = run(capsys, *argv, "--dry-run", "--json")
    assert code == 0, err
    want = dpsketch.plan("heavy_hitters", **params).to_dict()
    assert json.loads(out) == json.loads(json.dumps(want, default=str))
    code, out, _ = run(capsys, *argv, "--dry-run")
    assert code == 0 and out.startswith("plan ") and "guarantee" in out and "threshold" in out
    assert not (tmp_path / MISSING).exists()


def test_the_quantile_dry_runs_are_the_library_plans(capsys):
    code, out, err = run(capsys, "quantiles", MISSING, "--method", "auto", "--bounds", "0,100", "--q", "0.5,0.9",
                         "--epsilon", 0.5, "--dry-run", "--json")
    assert code == 0, err
    want = dpsketch.plan("quantiles", qs=[0.5, 0.9], bounds=(0.0, 100.0), epsilon=0.5, method="auto").to_dict()
    assert json.loads(out) == json.loads(json.dumps(want, default=str))
    code, out, err = run(capsys, "quantiles", MISSING, "--column", "v", "--privacy-id", "u", "--max-rows-per-unit",
                         3, "--bounds", "0,100", "--rho", 0.5, "--dry-run", "--json")
    assert code == 0, err
    want = dpsketch.plan("quantiles", qs=[0.5, 0.9, 0.99], bounds=(0.0, 100.0), rho=0.5, universe_bits=32,
                         unit=Person("u", max_rows=3)).to_dict()
    assert json.loads(out) == json.loads(json.dumps(want, default=str))


def test_a_dry_run_charges_no_budget(capsys, tmp_path):
    ledger = tmp_path / "budget.json"
    assert run(capsys, "budget", "new", ledger, "--epsilon", 1, "--delta", 1e-5)[0] == 0
    before = ledger.read_bytes()
    code, _, err = run(capsys, "top", tmp_path / MISSING, "--budget", ledger, "--dry-run")
    assert code == 0, err
    assert ledger.read_bytes() == before
    assert FileBudget.open(ledger).spent().epsilon == 0


@pytest.mark.parametrize("argv, says", [
    (["top", MISSING, "--time-column", "t", "--window", "1h", "--dry-run"], "once per window"),
    (["quantiles", MISSING, "--bounds", "0,100", "--rho", 1, "--dry-run"], "--method auto|exp|joint|recursive"),
    (["top", MISSING, "--algorithm", "countmin", "--max-stream-length", 1000, "--dry-run"], "DPSS and PMG"),
    (["top", MISSING, "--plan-rows", 10], "goes with --dry-run"),
    (["top", MISSING, "--top-k", 5, "--plan-rows", 10, "--dry-run", "--privacy-id", "u", "--max-keys-per-unit", 2,
      "--selection", "gumbel"], "--plan-rows applies"),
])
def test_what_the_dry_run_does_not_cover_is_a_usage_error(capsys, argv, says):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert says in one_error_line(err)
