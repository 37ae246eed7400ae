"""``dpsketch top --privacy-id ... --selection weighted_gaussian`` (docs/mechanisms/person-weighted.md):
the CLI releases what the library releases on the same columns, states the unit, and refuses the
options that do not go with the weighted selection."""

from __future__ import annotations

import json

import numpy as np
import pytest

import dpsketch as d
from dpsketch.datasets import event_log

from conftest import one_error_line, run_cli as run, write_event_log

pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    users, keys = event_log(100_000, universe=3_000, heavy_users=10, heavy_rows=1_000, seed=5)
    return write_event_log(tmp_path_factory.mktemp("wevents"), users, keys), users, keys


@pytest.mark.parametrize("counts", [True, False])
def test_cli_equals_the_library(capsys, log, counts):
    path, users, keys = log
    extra = () if counts else ("--no-counts",)
    code, out, err = run(capsys, "top", path / "events.parquet", "--column", "query", "--privacy-id", "user_id",
                         "--max-keys-per-unit", 16, "--selection", "weighted_gaussian", "--json", "--seed", 3,
                         "--epsilon", 1, "--delta", 1e-6, *extra)
    assert code == 0, err
    rel = json.loads(out)
    lib = d.heavy_hitters(np.asarray(keys), epsilon=1.0, delta=1e-6, unit=d.Person(np.asarray(users), max_keys=16),
                          selection="weighted_gaussian", counts=counts, seed=3)
    assert [tuple(x) for x in rel["items"]] == [tuple(x) for x in lib.items] and len(lib.items) > 10
    assert rel["mechanism"] == lib.mechanism and rel["metadata"]["selection"] == "weighted_gaussian"
    assert "weighted Gaussian selection" in err and "privacy unit: privacy_id" in err


@pytest.mark.parametrize("extra, msg", [
    (("--selection", "weighted_gaussian", "--top-k", 5), "--top-k"),
    (("--selection", "weighted_gaussian", "--noise", "laplace"), "--noise"),
    (("--no-counts",), "--no-counts goes with"),
])
def test_cli_refusals(capsys, log, extra, msg):
    path, _, _ = log
    code, _, err = run(capsys, "top", path / "events.parquet", "--column", "query", "--privacy-id", "user_id",
                       "--max-keys-per-unit", 16, *extra)
    assert code != 0 and msg in one_error_line(err)


def test_dry_run_states_both_costs(capsys, log):
    path, _, _ = log
    code, out, _ = run(capsys, "top", path / "events.parquet", "--column", "query", "--privacy-id", "user_id",
                       "--max-keys-per-unit", 64, "--selection", "weighted_gaussian", "--dry-run")
    assert code == 0 and "unit.weighted[discrete_gaussian+counts]" in out and "count_sigma" in out
