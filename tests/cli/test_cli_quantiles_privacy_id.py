"""`dpsketch quantiles --privacy-id`: the user-level quantiles (docs/privacy.md §Privacy unit,
docs/cli.md) on CSV and Parquet files written here from dpsketch.datasets.event_log, whose "bots"
put thousands of rows each on keys above everyone else's. Checked: the bots' keys reach the top
quantiles of the row-level release but not of the user-level one, which tracks the row-bounded
data; the metadata and header state the unit-level guarantee and the spent budget; CSV and
Parquet give the same release; dropped rows stay unreported; nothing exact about the data is
printed; every parameter is checked before any input is read."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest

import dpsketch
from dpsketch.io import input as _input
from dpsketch.datasets import event_log
from conftest import one_error_line, run_cli as run, write_event_log

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ROWS = 200_000
UNIVERSE = 5_000  # ordinary keys are < UNIVERSE, bot i's own key is UNIVERSE + i
HEAVY_USERS, HEAVY_ROWS = 10, 2_000  # 10% of the rows, half of them on the bots' own keys
R = 5
QS = [0.1, 0.25, 0.5, 0.75, 0.9, 0.99]


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    """The same event log as events.csv (text cells, an extra column) and events.parquet (int64)."""
    users, keys = event_log(ROWS, universe=UNIVERSE, heavy_users=HEAVY_USERS, heavy_rows=HEAVY_ROWS, seed=11)
    d = write_event_log(tmp_path_factory.mktemp("events"), users, keys)
    return d, users, keys


def _release(capsys, path, *extra, privacy=("--epsilon", 1, "--delta", 1e-6)):
    code, out, err = run(capsys, "quantiles", path, "--column", "query", "--privacy-id", "user_id",
                         "--max-rows-per-unit", R, "--universe-bits", 14, "--q", ",".join(map(str, QS)),
                         "--json", "--seed", 1, *privacy, *extra)
    assert code == 0, err
    return json.loads(out), err


def _rank_range(sorted_values, v):
    return (np.searchsorted(sorted_values, v, side="left") / len(sorted_values),
            np.searchsorted(sorted_values, v, side="right") / len(sorted_values))


@pytest.mark.parametrize("name", ["events.csv", "events.parquet"])
def test_user_level_release(capsys, log, name):
    d, users, keys = log
    rel, err = _release(capsys, d / name)
    meta = rel["metadata"]
    assert meta["privacy_unit"] == "privacy_id" and meta["neighbours"] == "add_remove_unit"
    assert meta["route"] == "row_bounded_sketch" and meta["max_rows_per_unit"] == R
    assert meta["reproducible_not_secret"] is True and rel["mechanism"] == "unit.quantiles[discrete_gaussian]"
    assert 0.99 < rel["epsilon"] <= 1.0 and rel["delta"] == 1e-6 and 0 < rel["rho"] and rel["n"] is None
    assert [q["q"] for q in rel["quantiles"]] == QS and [q for q, _ in rel["items"]] == QS
    assert rel["cli"]["privacy_id_column"] == "user_id" and rel["cli"]["exact_counts_withheld"] is True
    spent = re.search(r"spent: epsilon=([0-9.e+-]+), delta=([0-9.e+-]+) ", err)
    assert spent is not None and float(spent.group(1)) == pytest.approx(rel["epsilon"], rel=1e-9)
    assert float(spent.group(2)) == pytest.approx(rel["delta"], rel=1e-9)
    for needle in ("privacy unit: privacy_id = column 'user_id'", "neighbours: add_remove_unit", f"r={R} rows",
                   "row_bounded_sketch route", "for one privacy unit", f"sigma^2={meta['sigma2']:.10g}",
                   f"epsilon={rel['epsilon']:.10g} delta=1e-06 rho={rel['rho']:.10g}"):
        assert needle in err, (needle, err)
    # unit-level figures only: the per-row ρ of the same noise (ρ/r²) appears nowhere
    per_row_rho = rel["rho"] / R**2
    text = err.replace(str(d), "") + json.dumps({k: v for k, v in rel.items() if k not in ("items", "quantiles")})
    assert "per_row" not in text and f"{per_row_rho:.10g}" not in text
    # nothing exact about the data: rows, units, the rows of a bot, the noisy total
    exact = [ROWS, len(np.unique(users)), HEAVY_ROWS, HEAVY_USERS * HEAVY_ROWS]
    assert "noisy_total" not in rel and "noisy total" not in err.replace("use the noisy total", "")
    assert not any(re.search(rf"\b{x}\b|\b{x:,}\b", text) for x in exact)


def test_heavy_users_do_not_dominate_the_top_quantile(capsys, log):
    d, users, keys = log
    # measured on the generated log: the bots' own keys (>= UNIVERSE) hold the top 5% of the rows,
    # so the row-level 0.99 quantile is a bot's key
    assert np.quantile(keys, 0.99) >= UNIVERSE and np.mean(keys >= UNIVERSE) == pytest.approx(0.05)
    code, out, err = run(capsys, "quantiles", d / "events.parquet", "--column", "query", "--universe-bits", 14,
                         "--epsilon", 1, "--q", ",".join(map(str, QS)), "--json", "--seed", 1)
    assert code == 0, err
    row_level = dict((r["q"], r["value"]) for r in json.loads(out)["quantiles"])
    assert row_level[0.99] >= UNIVERSE  # the row-level release shows it too
    rel, _ = _release(capsys, d / "events.parquet")
    unit_level = dict(rel["items"])
    assert unit_level[0.99] < UNIVERSE  # r rows per bot: at most 10·r of the ~120,000 kept rows
    # and the release tracks the row-bounded data (same seed, so the same salt: int ids as in the file)
    kept = np.sort(keys[dpsketch.mechanisms.unit_level.bound_rows_per_unit(keys, users, max_rows_per_unit=R, seed=1)])
    assert np.mean(kept >= UNIVERSE) < 0.01
    for q, v in rel["items"]:
        below, upto = _rank_range(kept, v)
        assert below - 0.02 <= q <= upto + 0.02, (q, v, below, upto)


def test_csv_and_parquet_give_the_same_release(capsys, log):
    d = log[0]
    parquet, _ = _release(capsys, d / "events.parquet")
    typed, _ = _release(capsys, d / "events.csv", "--int-ids", "--chunk-size", 7_777)
    assert typed["items"] == parquet["items"] and typed["metadata"] == parquet["metadata"]
    assert typed["cli"]["privacy_ids"].startswith("int") and parquet["cli"]["privacy_ids"].startswith("int")
    text, _ = _release(capsys, d / "events.csv")  # text ids: other salted hashes, the same guarantee
    assert text["cli"]["privacy_ids"].startswith("str") and text["metadata"]["sigma2"] == parquet["metadata"]["sigma2"]
    assert text["items"][-1][1] < UNIVERSE


def test_laplace_rho_bounds_and_the_printed_formats(capsys, log):
    d = log[0]
    rel, err = _release(capsys, d / "events.parquet", privacy=("--epsilon", 1))
    assert rel["metadata"]["noise"] == "discrete_laplace" and rel["rho"] is None and rel["delta"] == 0
    assert "rho=" not in err and "discrete Laplace, scale=" in err and "spent: epsilon=1, delta=0" in err
    rel, err = _release(capsys, d / "events.parquet", privacy=("--rho", 0.5))
    assert rel["rho"] <= 0.5 and rel["epsilon"] is None and re.search(r"spent: rho=[0-9.e-]+ ", err)
    assert "epsilon=" not in err
    rel, err = _release(capsys, d / "events.parquet", "--bounds", "0,8192", privacy=("--rho", 0.5, "--delta", 1e-6))
    assert rel["metadata"]["bounds"] == [0.0, 8192.0] and rel["resolution"] == 8192 / 2**14
    assert rel["epsilon"] is not None and all(isinstance(v, float) for _, v in rel["items"])
    base = ["quantiles", d / "events.parquet", "--column", "query", "--privacy-id", "user_id", "--max-rows-per-unit",
            R, "--universe-bits", 14, "--epsilon", 1, "--q", "0.5,0.9", "--seed", 1]
    code, out, err = run(capsys, *base, "--csv")
    assert code == 0 and out.splitlines()[0] == "q,value" and len(out.splitlines()) == 3
    code, out, err = run(capsys, *base, "--quiet")
    assert code == 0 and out.split()[:2] == ["q", "value"] and len(out.strip().splitlines()) == 3
    assert "privacy unit" not in err


def test_dropped_rows_leave_no_trace(capsys, tmp_path):
    # a row whose value is not a number (or NaN, or empty) or whose id is empty or (with --int-ids)
    # not an integer is dropped as if absent, and how many is not reported
    users, keys = event_log(20_000, universe=300, heavy_users=2, heavy_rows=500, seed=5)
    rows = [[str(k), str(u)] for k, u in zip(keys.tolist(), users.tolist())]
    junk = [["", "17"], ["9", ""], ["x-secret", "3"], ["nan", "4"], ["1.5", "5"], ["9", "x-id"], [" ", "6"]]
    dirty = rows[:5_000] + junk * 13 + rows[5_000:]
    for name, body in (("clean.csv", rows), ("dirty.csv", dirty)):
        with open(tmp_path / name, "w", newline="") as fh:
            csv.writer(fh).writerows([["query", "user_id"], *body])
    want, _ = _release(capsys, tmp_path / "clean.csv", "--int-ids")
    got, err = _release(capsys, tmp_path / "dirty.csv", "--int-ids")
    assert got["items"] == want["items"] and got["metadata"] == want["metadata"]
    err = err.replace(str(tmp_path), "")
    assert "x-secret" not in err and "skipped" not in err and "dropped" not in err and not re.search(r"\b91\b", err)
    src = _input.Source(tmp_path / "dirty.csv", column="query", privacy_id="user_id", ids="int", chunk_size=1_000)
    pairs = list(src.number_pairs(integer=True, bits=14))
    assert sum(len(v) for v, _ in pairs) == len(rows) == sum(len(i) for _, i in pairs)
    assert sorted(np.concatenate([v for v, _ in pairs]).tolist()) == sorted(keys.tolist())
    # with text ids the values read are those of the row-level reader, less the rows with an empty id
    paired = _input.Source(tmp_path / "dirty.csv", column="query", privacy_id="user_id", chunk_size=1_000)
    alone = _input.Source(tmp_path / "dirty.csv", column="query", chunk_size=1_000)
    got_values = np.concatenate([v for v, _ in paired.number_pairs(integer=True, bits=14)]).tolist()
    want_values = np.concatenate(list(alone.values(integer=True, bits=14))).tolist()
    assert sorted(got_values + [9] * 13) == sorted(want_values) and len(got_values) == len(rows) + 13
    # Parquet: null values, null ids and NaN values are dropped the same way
    vals = keys.astype(np.float64)
    pq.write_table(pa.table({"query": vals, "user_id": users}), tmp_path / "clean.parquet")
    pq.write_table(pa.table({
        "query": pa.array(np.concatenate([vals, [np.nan, 3.0]]).tolist() + [None], pa.float64()),
        "user_id": pa.array(np.concatenate([users, [7]]).tolist() + [None, 8], pa.int64()),
    }), tmp_path / "dirty.parquet")
    args = ("--bounds", "0,512")
    want, _ = _release(capsys, tmp_path / "clean.parquet", *args)
    got, _ = _release(capsys, tmp_path / "dirty.parquet", *args)
    assert got["items"] == want["items"]


def test_text_input_and_a_missing_id_column_are_usage_errors(capsys, log, tmp_path):
    d = log[0]
    p = tmp_path / "values.txt"
    p.write_text("1\n2\n")
    code, out, err = run(capsys, "quantiles", p, "--privacy-id", "user_id", "--max-rows-per-unit", 3,
                         "--universe-bits", 8, "--rho", 1)
    assert code == 2 and out == ""
    assert "CSV, Parquet or Arrow" in one_error_line(err)
    for name in ("events.csv", "events.parquet"):
        code, out, err = run(capsys, "quantiles", d / name, "--column", "query", "--privacy-id", "uid",
                             "--max-rows-per-unit", 3, "--universe-bits", 14, "--rho", 1)
        assert code == 2 and out == ""
        line = one_error_line(err).replace(str(d / name), "")
        assert "no column 'uid'" in line and "--privacy-id" in line and "'user_id'" in line and "'query'" in line
        assert not re.search(r"\d", line)  # the column names, never a value of the data


BASE = ["--universe-bits", "14", "--epsilon", "1"]


@pytest.mark.parametrize("argv,needle", [
    (["--privacy-id", "user_id", *BASE], "--max-rows-per-unit"),
    (["--privacy-id", "user_id", "--max-rows-per-unit", "5", *BASE, "--noise-allocation", "zhao"],
     "--noise-allocation does not apply"),
    (["--privacy-id", "user_id", "--max-rows-per-unit", "5", "--universe-bits", "14"], "exactly one of --rho"),
    (["--privacy-id", "user_id", "--max-rows-per-unit", "5", "--epsilon", "1"], "--bounds LO,HI"),
    (["--privacy-id", "user_id", "--max-rows-per-unit", "5", "--universe-bits", "64", "--rho", "1"], "at most 63"),
    (["--privacy-id", "user_id", "--max-rows-per-unit", "5", "--bounds", "0,1", "--universe-bits", "60",
      "--rho", "1"], "52"),
    (["--privacy-id", "user_id", "--max-rows-per-unit", "5", "--bounds", "1,0", "--rho", "1"], "LO < HI"),
    (["--privacy-id", "user_id", "--max-rows-per-unit", "5", *BASE, "--q", "0.5,1.5"], "[0, 1]"),
    (["--privacy-id", "user_id", "--max-rows-per-unit", "0", *BASE], "max-rows-per-unit"),
    (["--privacy-id", "user_id", "--max-rows-per-unit", str(2**41), *BASE], "max_rows_per_unit"),
    (["--privacy-id", "user_id", "--max-rows-per-unit", "5", "--universe-bits", "14", "--epsilon", "1e-12"],
     "epsilon"),
    (["--privacy-id", "user_id", "--max-rows-per-unit", "5", *BASE, "--delta", "2"], "delta"),
    (["--privacy-id", "user_id", "--max-rows-per-unit", "5", *BASE, "--gamma", "0"], "gamma"),
    (["--privacy-id", "query", "--max-rows-per-unit", "5", *BASE], "another column"),
    (["--max-rows-per-unit", "5", *BASE], "--privacy-id"),
    ([*BASE, "--delta", "1e-6"], "--delta goes with --rho"),
    ([*BASE, "--int-ids"], "--privacy-id"),
])
def test_parameters_are_checked_before_any_input_is_read(capsys, monkeypatch, log, argv, needle):
    def no_reading(self, *args, **kwargs):
        raise AssertionError("input was read before the parameters were checked")
        yield  # pragma: no cover

    for reader in ("number_pairs", "values", "pairs", "chunks"):
        monkeypatch.setattr(_input.Source, reader, no_reading)
    code, out, err = run(capsys, "quantiles", log[0] / "events.csv", "--column", "query", *argv)
    assert code == 2 and out == ""
    assert needle in one_error_line(err)


def test_row_level_noise_allocation_default_and_choice(capsys, log):
    d = log[0]
    base = ["quantiles", d / "events.parquet", "--column", "query", "--universe-bits", 14, "--rho", 1,
            "--json", "--seed", 2]
    for extra, allocation in (([], "zhao"), (["--noise-allocation", "joint"], "joint")):
        code, out, err = run(capsys, *base, *extra)
        assert code == 0, err
        assert json.loads(out)["privacy"]["noise_allocation"] == allocation and f"{allocation} allocation" in err
