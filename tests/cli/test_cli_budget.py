"""`--budget FILE` and `dpsketch budget new/show` (docs/cli.md): every route of `top` and
`quantiles` charges its request to the file before it reads its input; runs on one file stay
within its cap; a run that does not fit is refused with exit status 2 before the input is opened
(shown with an input file that does not exist); a damaged file stops the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

import dpsketch
from dpsketch.accounting import FileBudget
from dpsketch.datasets import event_log

from conftest import one_error_line, run_cli as run, write_event_log

pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def events(tmp_path_factory):
    users, keys = event_log(20_000, universe=2_000, heavy_users=5, heavy_rows=200, seed=3)
    return write_event_log(tmp_path_factory.mktemp("events"), users, keys) / "events.csv"


# (arguments after the input file, the request charged: epsilon, delta, rho)
ROUTES = {
    "top": (["--column", "query"], (1.0, 1e-6, 0.0)),
    "top countmin": (["--column", "query", "--algorithm", "countmin", "--max-stream-length", 100_000,
                      "--epsilon", 0.5], (0.5, 1e-6, 0.0)),
    "top --privacy-id exact": (["--column", "query", "--privacy-id", "user_id", "--max-keys-per-unit", 3],
                               (1.0, 1e-6, 0.0)),
    "top --privacy-id bounded": (["--column", "query", "--privacy-id", "user_id", "--max-rows-per-unit", 5,
                                  "--delta", 1e-7], (1.0, 1e-7, 0.0)),
    "quantiles --rho": (["--column", "ts", "--universe-bits", 16, "--rho", 0.25], (0.0, 0.0, 0.25)),
    "quantiles --epsilon": (["--column", "ts", "--universe-bits", 16, "--epsilon", 0.5], (0.5, 0.0, 0.0)),
    "quantiles --privacy-id": (["--column", "ts", "--universe-bits", 16, "--epsilon", 0.5, "--delta", 1e-6,
                                "--privacy-id", "user_id", "--max-rows-per-unit", 5], (0.5, 1e-6, 0.0)),
}


def _new_file(path, request):
    """A budget file whose cap fits the request exactly twice: ρ for a zCDP run, else (ε, δ)."""
    eps, delta, rho = request
    if rho:
        return FileBudget.create(path, rho=2 * rho)
    return FileBudget.create(path, epsilon=2 * eps, delta=2 * delta)


@pytest.mark.parametrize("route", list(ROUTES))
def test_every_route_charges_its_request_before_reading(capsys, tmp_path, events, route):
    extra, request = ROUTES[route]
    command = route.split()[0]
    path = tmp_path / "budget.json"
    _new_file(path, request)
    for _ in range(2):
        code, _, err = run(capsys, command, events, *extra, "--seed", 1, "--budget", path)
        assert code == 0, err
    assert f"budget file {str(path)!r}: " in err and "spent of the cap" in err
    want = tuple(Fraction(v) for v in request)
    entries = FileBudget.open(path).exact_ledger()
    assert [tuple(e[1:]) for e in entries] == [want, want]
    assert all(e[0].startswith(f"dpsketch {command}") for e in entries)
    before = path.read_bytes()
    # the third run does not fit: refused on the budget, before the (missing) input is opened
    code, out, err = run(capsys, command, tmp_path / "no-such-input.csv", *extra, "--budget", path)
    assert code == 2 and out == ""
    line = one_error_line(err)
    assert f"--budget {str(path)!r} has " in line and "this run needs" in line and "no input was read" in line
    assert "no such file" not in line
    assert path.read_bytes() == before


def test_a_run_that_fits_but_cannot_open_its_input_charges_nothing(capsys, tmp_path):
    path = tmp_path / "budget.json"
    FileBudget.create(path, epsilon=3.0, delta=1e-5)
    before = path.read_bytes()
    code, _, err = run(capsys, "top", tmp_path / "missing.txt", "--budget", path)
    assert code == 1 and "no such file" in one_error_line(err)
    assert path.read_bytes() == before


def _cli(*argv):
    """``python -m dpsketch`` in a new process (the dpsketch this test imports)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(dpsketch.__file__).resolve().parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "dpsketch", *map(str, argv)], capture_output=True, text=True,
                          env=env, timeout=300)


def test_runs_in_separate_processes_draw_from_one_cap(tmp_path, events):
    path = tmp_path / "shared-budget.json"
    made = _cli("budget", "new", path, "--epsilon", 2.5, "--delta", 3e-6)
    assert made.returncode == 0 and "epsilon=2.5, delta=3e-06" in made.stdout, made.stderr
    first = _cli("top", events, "--column", "query", "--seed", 1, "--budget", path)
    second = _cli("quantiles", events, "--column", "ts", "--universe-bits", 16, "--epsilon", 1, "--seed", 1,
                  "--budget", path)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "epsilon=1, delta=1e-06 spent of the cap epsilon=2.5, delta=3e-06" in first.stderr
    assert "epsilon=2, delta=1e-06 spent of the cap epsilon=2.5, delta=3e-06" in second.stderr
    third = _cli("top", tmp_path / "never-read.csv", "--column", "query", "--budget", path)
    assert third.returncode == 2 and third.stdout == ""
    assert third.stderr.strip() == (
        f"dpsketch: error: --budget {str(path)!r} has epsilon=0.5, delta=2e-06 left of its cap epsilon=2.5, "
        "delta=3e-06, and this run needs epsilon=1, delta=1e-06: nothing was charged and no input was read "
        "(lower the run's privacy parameters, or use another budget file for other data)")
    shown = _cli("budget", "show", path, "--json")
    assert shown.returncode == 0, shown.stderr
    state = json.loads(shown.stdout)
    assert [(e["mechanism"], e["epsilon"], e["delta"]) for e in state["ledger"]] == [
        ("dpsketch top (spacesaving)", 1.0, 1e-6), ("dpsketch quantiles", 1.0, 0.0)]
    assert state["spent"]["epsilon"] == 2.0 and state["remaining"]["epsilon"] == 0.5


def test_damaged_or_missing_budget_files_stop_the_run(capsys, tmp_path, events):
    path = tmp_path / "budget.json"
    FileBudget.create(path, epsilon=3.0, delta=1e-5).spend("earlier", epsilon=1.0)
    path.write_text(path.read_text().replace('"epsilon": "1/1"', '"epsilon": "1/2"', 1))  # still valid JSON
    edited = path.read_bytes()
    for argv in (["top", events, "--column", "query", "--budget", path], ["budget", "show", path]):
        code, out, err = run(capsys, *argv)
        assert code == 1 and out == ""
        line = one_error_line(err)
        assert str(path) in line and "integrity check" in line
    assert path.read_bytes() == edited
    code, _, err = run(capsys, "top", events, "--column", "query", "--budget", tmp_path / "absent.json")
    assert code == 2 and "dpsketch budget new FILE" in one_error_line(err)


def test_zcdp_file_refuses_runs_with_delta(capsys, tmp_path, events):
    path = tmp_path / "zcdp.json"
    assert run(capsys, "budget", "new", path, "--rho", 1)[0] == 0
    code, _, err = run(capsys, "top", events, "--column", "query", "--budget", path)
    assert code == 2 and "caps rho-zCDP" in one_error_line(err)
    code, _, err = run(capsys, "quantiles", events, "--column", "ts", "--universe-bits", 16, "--epsilon", 1,
                       "--seed", 1, "--budget", path)
    assert code == 0, err
    assert "rho=0.5 spent of the cap rho=1 (left: rho=0.5)" in err  # a pure ε run counts ε²/2


def test_budget_new_and_show(capsys, tmp_path):
    path = tmp_path / "b.json"
    code, out, _ = run(capsys, "budget", "new", path, "--epsilon", 2, "--delta", 1e-6, "--zcdp-delta", 2e-7)
    assert code == 0 and "zcdp_delta=2e-07" in out and "0 charge(s)" in out
    FileBudget.open(path).spend("by hand", epsilon=0.5)
    code, out, _ = run(capsys, "budget", "show", path)
    assert code == 0
    assert "spent  epsilon=0.5, delta=0" in out and "left   epsilon=1.5, delta=1e-06" in out
    assert "1 charge(s)" in out and "by hand  epsilon=0.5" in out
    for argv, message in (
        (["budget", "new", path, "--epsilon", 1], "exists already"),
        (["budget", "new", tmp_path / "z.json", "--rho", 1, "--delta", 1e-6], "has no --delta"),
        (["budget", "new", tmp_path / "c.json", "--epsilon", 1, "--delta", 1e-6, "--zcdp-delta", 1e-5],
         "zcdp_delta must be in (0, delta]"),
        (["budget", "new", tmp_path / "d.json"], "one of the arguments --epsilon/-e --rho is required"),
        (["budget", "show", tmp_path / "nothing.json"], "no budget file there"),
    ):
        code, _, err = run(capsys, *argv)
        assert code == 2 and message in one_error_line(err), err
    assert not (tmp_path / "z.json").exists() and not (tmp_path / "c.json").exists()


def test_budget_reached_through_links(capsys, tmp_path, events):
    """--budget through a symbolic link charges the file itself; a hard-linked file is refused
    before anything is read or written (docs/privacy.md §Budget files)."""
    path = tmp_path / "budget.json"
    FileBudget.create(path, epsilon=1.5, delta=2e-6)
    link = tmp_path / "link.json"
    link.symlink_to(path)
    code, _, err = run(capsys, "top", events, "--column", "query", "--seed", 1, "--budget", link)
    assert code == 0, err
    assert link.is_symlink() and len(FileBudget.open(path).exact_ledger()) == 1
    code, out, err = run(capsys, "top", events, "--column", "query", "--budget", path)
    assert code == 2 and out == "" and "this run needs" in one_error_line(err)  # 1 + 1 > 1.5
    os.link(path, tmp_path / "hard.json")
    before = path.read_bytes()
    for name in (path, tmp_path / "hard.json", link):
        code, out, err = run(capsys, "top", events, "--column", "query", "--budget", name)
        assert code == 1 and out == "" and "hard link" in one_error_line(err)
    assert path.read_bytes() == before
